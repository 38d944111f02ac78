#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Prints the share of pixels of a PNG screenshot that have a given colour (within a tolerance).

Usage: png_color.py FILE RRGGBB [TOLERANCE]. Reads 8-bit RGB/RGBA, non-interlaced PNGs (what
headless Chromium writes) with only the standard library, so the browser test needs no imaging
package.
"""
import struct
import sys
import zlib


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, head = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, ctype, _, _, interlace = head
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("unsupported PNG layout (depth %d, colour type %d)" % (depth, ctype))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        ftype, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 255
            elif ftype == 2:
                line[x] = (line[x] + b) & 255
            elif ftype == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def main():
    path, colour = sys.argv[1], sys.argv[2]
    tol = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    want = tuple(int(colour[k:k + 2], 16) for k in (0, 2, 4))
    width, height, bpp, rows = read_png(path)
    hits = 0
    for line in rows:
        for x in range(0, width * bpp, bpp):
            if all(abs(line[x + k] - want[k]) <= tol for k in range(3)):
                hits += 1
    print("%.3f" % (hits / float(width * height)))


if __name__ == "__main__":
    main()
