#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Holds one SOCKS5 tunnel (username/password) to an echo server across something the test
does meanwhile: sends "one", reads it back, prints "held", waits (bounded) until GO_FILE
exists, sends "two", reads it back and prints "ok" (on stderr, which start_bg logs).
Usage: socks5-hold.py PROXY_PORT ECHO_PORT USER PASS GO_FILE"""
import os
import socket
import struct
import sys
import time

port, eport, user, pw, go = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
s = socket.create_connection(("127.0.0.1", int(port)), timeout=20)
s.sendall(b"\x05\x01\x02")
assert s.recv(2) == b"\x05\x02"
u, p = user.encode(), pw.encode()
s.sendall(bytes([1, len(u)]) + u + bytes([len(p)]) + p)
assert s.recv(2) == b"\x01\x00"
s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", eport))
assert s.recv(10)[:2] == b"\x05\x00"


def echo(msg):
    s.sendall(msg)
    got = b""
    while len(got) < len(msg):
        b = s.recv(64)
        assert b, "the tunnel closed"
        got += b
    assert got == msg, got


echo(b"one")
print("held", file=sys.stderr, flush=True)
end = time.monotonic() + 20
while not os.path.exists(go):
    assert time.monotonic() < end, "never told to go on"
    time.sleep(0.05)
echo(b"two")
print("ok", file=sys.stderr, flush=True)
