#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The relay's pipes grow while bytes flow and shrink when the tunnel idles. A SOCKS5 tunnel
through vega-proxy (pid PID, port PORT) to a sink of its own: the client sends 16 MiB, the sink
reads them slowly, and a pipe of the proxy must reach 1 MiB before they have all arrived
(F_GETPIPE_SZ through /proc/PID/fd; sha256 checked); once the tunnel idles no pipe of the
proxy may be larger than 64 KiB; 16 bytes still cross the tunnel back. Prints "ok" or exits 1
saying what failed.
Usage: proxy-pipes.py PID PORT"""
import fcntl
import hashlib
import os
import socket
import struct
import sys
import termios
import threading
import time

PID, PORT = int(sys.argv[1]), int(sys.argv[2])
N = 16 << 20
BLOCK = os.urandom((1 << 20) + 7)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def pipes():
    """(size, bytes held) of each pipe the proxy has open now."""
    out = []
    d = f"/proc/{PID}/fd"
    for fd in os.listdir(d):
        try:
            if not os.readlink(f"{d}/{fd}").startswith("pipe:"):
                continue
            f = os.open(f"{d}/{fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue  # closed meanwhile
        try:
            size = fcntl.fcntl(f, fcntl.F_GETPIPE_SZ)
            held = struct.unpack("i", fcntl.ioctl(f, termios.FIONREAD, b"\0" * 4))[0]
            out.append((size, held))
        finally:
            os.close(f)
    return out


def wait_for(what, cond, secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.02)
    fail(f"{what}: not within {secs} s; pipes (size, held): {pipes()}")


lst = socket.create_server(("127.0.0.1", 0))
c = socket.create_connection(("127.0.0.1", PORT), timeout=30)
c.sendall(b"\x05\x01\x00")
if c.recv(2) != b"\x05\x00":
    fail("greeting")
c.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", lst.getsockname()[1]))
rep = b""
while len(rep) < 10:
    b = c.recv(10 - len(rep))
    if not b:
        fail("no reply")
    rep += b
if rep[1] != 0:
    fail(f"REP {rep[1]}")
s, _ = lst.accept()
s.settimeout(30)

want = hashlib.sha256()
left = N
while left > 0:
    b = BLOCK[: min(left, len(BLOCK))]
    want.update(b)
    left -= len(b)


def send():
    left = N
    while left > 0:
        b = BLOCK[: min(left, len(BLOCK))]
        c.sendall(b)
        left -= len(b)


th = threading.Thread(target=send, daemon=True)
th.start()
# The sink reads slowly (64 KiB, then a look at the proxy's pipes): the client sends far faster,
# so bytes queue at the proxy's source socket while the relay waits for the destination, and
# the first splice after each wait fills the 64 KiB pipe: it must grow to 1 MiB before the
# 16 MiB have all arrived.
got, h, grown = 0, hashlib.sha256(), False
while got < N:
    b = s.recv(64 << 10 if not grown else 1 << 20)
    if not b:
        fail(f"end of stream after {got} bytes")
    h.update(b)
    got += len(b)
    if not grown:
        grown = any(sz == 1 << 20 for sz, _ in pipes())
if not grown:
    fail("no pipe of the proxy reached 1 MiB while 16 MiB moved")
th.join(30)
if h.digest() != want.digest():
    fail("sha256 of the 16 MiB differs")
# every byte arrived: the direction finds its source empty and parks, giving its pipe back
wait_for("no pipe above 64 KiB once idle", lambda: all(sz <= 64 << 10 for sz, _ in pipes()), 10)
s.sendall(b"0123456789abcdef")
back = b""
while len(back) < 16:
    b = c.recv(16 - len(back))
    if not b:
        fail("no bytes back")
    back += b
if back != b"0123456789abcdef":
    fail("bytes back differ")
print("ok")
