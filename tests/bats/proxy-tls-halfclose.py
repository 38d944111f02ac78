#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# A client of an https:// proxy (vega-proxy -l tls://) that half-closes inside TLS, for
# vega-proxy-tls.bats: stdlib only (ssl.SSLObject over memory BIOs, so that close_notify can be
# sent while reading goes on).
#   proxy-tls-halfclose.py CA PROXY_PORT DEST_PORT [socks5|idle]
# Opens a CONNECT tunnel (or a SOCKS5 one inside TLS) to 127.0.0.1:DEST_PORT, sends a line,
# sends close_notify (its half-close), then reads until the proxy's close_notify: prints what
# came back, and "close_notify" when the proxy's arrived. An echo that closes after the
# client's end of stream answers only when the half-close crossed the proxy.
# idle: sends nothing in the CONNECT tunnel and never closes; prints "fin" once the proxy (its
# idle timeout) closed the TCP connection.
import socket
import ssl
import sys

ca, pport, dport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else ""
socks = mode == "socks5"
ctx = ssl.create_default_context(cafile=ca)
sock = socket.create_connection(("127.0.0.1", pport), timeout=10)
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(inc, out, server_hostname="localhost")


def flush():
    b = out.read()
    if b:
        sock.sendall(b)


def pump():
    b = sock.recv(65536)
    if not b:
        inc.write_eof()
    else:
        inc.write(b)


def run(fn, *a):
    while True:
        try:
            r = fn(*a)
            flush()
            return r
        except ssl.SSLWantReadError:
            flush()
            pump()


def read_exact(n):
    b = b""
    while len(b) < n:
        b += run(tls.read, n - len(b))
    return b


run(tls.do_handshake)
if socks:
    run(tls.write, b"\x05\x01\x00")
    assert read_exact(2) == b"\x05\x00"
    run(tls.write, b"\x05\x01\x00\x01\x7f\x00\x00\x01" + dport.to_bytes(2, "big"))
    rep = read_exact(10)
    assert rep[1] == 0, rep
else:
    run(tls.write, b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (dport, dport))
    head = b""
    while b"\r\n\r\n" not in head:
        head += run(tls.read, 1)
    assert head.startswith(b"HTTP/1.1 200"), head
if mode == "idle":
    try:
        run(tls.read, 1)
    except (ssl.SSLError, OSError):
        pass
    while sock.recv(65536):
        pass
    print("fin")
    sys.exit(0)
run(tls.write, b"half-close\n")
try:
    tls.unwrap()  # sends close_notify; the proxy's comes later
except ssl.SSLWantReadError:
    pass
flush()
got = b""
while True:
    try:
        b = run(tls.read, 65536)
    except ssl.SSLZeroReturnError:
        print(got.decode(), end="")
        print("close_notify")
        break
    if not b:
        print(got.decode(), end="")
        print("eof")
        break
    got += b
