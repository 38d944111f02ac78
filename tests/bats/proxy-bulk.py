#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Moves N bytes each way through a SOCKS5 tunnel of vega-proxy to a loopback sink of its own
and checks both sha256 sums: the client sends N bytes, the destination hashes them and half-
closes back after sending N bytes of its own, which the client hashes. Prints
"ok UP_SHA DOWN_SHA SECONDS" or exits 1 with the mismatch.
MODE (default socks5): socks5; connect (an HTTP CONNECT tunnel); tls-connect CAFILE (HTTP
CONNECT inside TLS to the proxy, an https:// proxy, verified against CAFILE for 127.0.0.1).
connect and tls-connect count bytes rather than wait for half-closes (tinyproxy, a peer in
bench/, closes both ways at the first end of stream).
Usage: proxy-bulk.py PROXY_PORT MIB [TIMEOUT_S [MODE [CAFILE]]]"""
import hashlib
import os
import socket
import ssl
import struct
import sys
import threading
import time

# a block whose length is no power of two, so that a chunk lost, doubled or reordered by the
# relay (which moves 16 or 64 KiB at a time) changes the sum
BLOCK = os.urandom((1 << 20) + 7)


def stream(n):
    while n > 0:
        b = BLOCK if n >= len(BLOCK) else BLOCK[:n]
        n -= len(b)
        yield b


def expected(n):
    h = hashlib.sha256()
    for b in stream(n):
        h.update(b)
    return h.hexdigest()


def recv_all_hash(s, n, counted=False):
    """to the end of stream, or (counted) n bytes"""
    h = hashlib.sha256()
    got = 0
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    while not counted or got < n:
        k = s.recv_into(view, len(buf) if not counted else min(len(buf), n - got))
        if k == 0:
            break
        h.update(view[:k])
        got += k
    return got, h.hexdigest()


def main():
    port, mib = int(sys.argv[1]), int(sys.argv[2])
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 120
    mode = sys.argv[4] if len(sys.argv) > 4 else "socks5"
    counted = mode != "socks5"
    n = mib << 20
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(1)
    dport = lst.getsockname()[1]
    res = {}

    def sink():
        c, _ = lst.accept()
        c.settimeout(timeout)
        res["up"] = recv_all_hash(c, n, counted)
        for b in stream(n):
            c.sendall(b)
        if counted:
            c.recv(1)  # the client's close: ours would race the last bytes through the proxy
        else:
            c.shutdown(socket.SHUT_WR)
        c.close()

    th = threading.Thread(target=sink, daemon=True)
    th.start()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    if mode == "tls-connect":
        ctx = ssl.create_default_context(cafile=sys.argv[5])
        s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    if mode == "socks5":
        s.sendall(b"\x05\x01\x00")
        assert s.recv(2) == b"\x05\x00"
        s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", dport))
        rep = s.recv(10)
        assert rep[:2] == b"\x05\x00", rep
    else:
        s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (dport, dport))
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(1)
            assert d, head
            head += d
        assert head.split(b" ", 2)[1] == b"200", head
    t0 = time.monotonic()
    for b in stream(n):
        s.sendall(b)
    if not counted:
        s.shutdown(socket.SHUT_WR)
    down = recv_all_hash(s, n, counted)
    secs = time.monotonic() - t0
    s.close()
    th.join(timeout)
    want = expected(n)
    up = res.get("up")
    if up != (n, want) or down != (n, want):
        print(f"mismatch: want {n} {want}, up {up}, down {down}")
        return 1
    print(f"ok {up[1]} {down[1]} {secs:.2f}")
    return 0


sys.exit(main())
