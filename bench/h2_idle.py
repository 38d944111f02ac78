#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Holds N idle HTTP/2 connections to a TLS server (ALPN h2), for measuring the server's memory
per idle connection: each connection sends the preface and SETTINGS, acknowledges the server's,
asks for PATH once and reads the whole answer; then all stay open without a byte, until stdin
closes. Prints "ready N" once every answer came (or "failed ..." and exits 1).

  h2_idle.py PORT N [PATH]

Loopback only; every wait is bounded. Standard library only."""

import selectors
import socket
import ssl
import struct
import sys
import time

DEADLINE = 60.0


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def main():
    port, n = int(sys.argv[1]), int(sys.argv[2])
    path = (sys.argv[3] if len(sys.argv) > 3 else "/1k").encode()
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    # GET path: static-table fields, literals without Huffman (RFC 7541 §6.1, §6.2.2)
    block = b"\x82\x87\x04" + bytes([len(path)]) + path + b"\x01\x09localhost"
    hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(0x4, 0, 0) + frame(0x1, 0x5, 1, block)
    sel = selectors.DefaultSelector()
    conns = []
    end = time.monotonic() + DEADLINE
    for _ in range(n):
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                            server_hostname="localhost")
        if s.selected_alpn_protocol() != "h2":
            print(f"failed: ALPN {s.selected_alpn_protocol()!r}")
            return 1
        s.sendall(hello)
        s.setblocking(False)
        st = {"buf": b"", "done": False, "s": s}
        conns.append(st)
        sel.register(s, selectors.EVENT_READ, st)
    left = n
    while left and time.monotonic() < end:
        for key, _ in sel.select(1.0):
            st = key.data
            try:
                d = st["s"].recv(65536)
            except (ssl.SSLWantReadError, BlockingIOError):
                continue
            if not d:
                print("failed: a connection closed")
                return 1
            st["buf"] += d
            b = st["buf"]
            while len(b) >= 9 and len(b) >= 9 + int.from_bytes(b[:3], "big"):
                ln = int.from_bytes(b[:3], "big")
                t, fl = b[3], b[4]
                if t == 0x4 and not fl & 0x1:
                    st["s"].setblocking(True)
                    st["s"].sendall(frame(0x4, 0x1, 0))
                    st["s"].setblocking(False)
                if t == 0x0 and fl & 0x1 and not st["done"]:
                    st["done"] = True
                    left -= 1
                    sel.unregister(st["s"])
                b = b[9 + ln:]
            st["buf"] = b
    if left:
        print(f"failed: {left} answers missing")
        return 1
    print(f"ready {n}", flush=True)
    sys.stdin.read()
    for st in conns:
        st["s"].close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
