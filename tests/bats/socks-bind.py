#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# SOCKS BIND clients for vega-proxy.bats (RFC 1928 section 4 CMD X'02', and SOCKS4's CD 2):
# stdlib only, the bytes written by hand.
#   socks-bind.py socks5 PROXY_PORT   BIND expecting 127.0.0.2: a stranger from 127.0.0.1
#                                     connects first and is closed by the proxy, then the peer
#                                     from 127.0.0.2; the second reply names the peer; bytes
#                                     and half-closes cross both ways. Prints "ok".
#   socks-bind.py socks4 PROXY_PORT   the same over SOCKS4
#   ... nostranger                    (last) without the stranger: dante fails the BIND at a
#                                     stranger (REP 2) where vega-proxy waits past it
#   socks-bind.py gone PROXY_PORT     BIND, then the client closes after the first reply: prints
#                                     the bound port (which the proxy is to close)
#   socks-bind.py timeout PROXY_PORT  BIND and nobody connects: the second reply is a failure
#                                     (prints "failed REP"), once the proxy's idle timeout ends it
# Ordering, not time: the stranger's connection is complete (in the listener's queue) before
# the peer's starts, and the proxy accepts in order, so it judges the stranger first.
import socket
import struct
import sys

mode, pport = sys.argv[1], int(sys.argv[2])
c = socket.create_connection(("127.0.0.1", pport), timeout=10)


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            sys.exit("FAIL: closed early after %r" % b)
        b += d
    return b


def reply5():
    head = recv_exact(c, 4)
    assert head[0] == 5 and head[3] == 1, head
    body = recv_exact(c, 6)
    return head[1], socket.inet_ntoa(body[:4]), struct.unpack(">H", body[4:])[0]


def reply4():
    r = recv_exact(c, 8)
    return r[1], socket.inet_ntoa(r[4:]), struct.unpack(">H", r[2:4])[0]


if mode == "socks4":
    c.sendall(b"\x04\x02" + struct.pack(">H", 0) + socket.inet_aton("127.0.0.2") + b"bind\x00")
    reply, ok = reply4, 90
else:
    c.sendall(b"\x05\x01\x00")
    assert recv_exact(c, 2) == b"\x05\x00"
    c.sendall(b"\x05\x02\x00\x01" + socket.inet_aton("127.0.0.2") + struct.pack(">H", 0))
    reply, ok = reply5, 0
rep, host, port = reply()
assert rep == ok, "first reply %d" % rep
assert port != 0, "first reply without a port"
if mode == "gone":
    print(port)  # and close: the proxy is to give the port up
    sys.exit(0)
if mode == "timeout":
    rep, _, _ = reply()
    print("failed" if rep != ok else "granted", rep)
    sys.exit(0)
# the proxy may accept and reset the stranger before connect() reports it connected
stranger = None
try:
    if "nostranger" not in sys.argv[3:]:
        stranger = socket.create_connection((host, port), timeout=10, source_address=("127.0.0.1", 0))
except ConnectionResetError:
    pass
peer = socket.socket()
peer.settimeout(10)
peer.bind(("127.0.0.2", 0))
peer.connect((host, port))
try:
    assert stranger is None or stranger.recv(1) == b"", "the stranger got bytes"
except ConnectionResetError:
    pass
rep, phost, pport2 = reply()
assert rep == ok, "second reply %d" % rep
assert (phost, pport2) == peer.getsockname(), (phost, pport2, peer.getsockname())
peer.sendall(b"to-client")
assert recv_exact(c, 9) == b"to-client"
c.sendall(b"to-peer")
assert recv_exact(peer, 7) == b"to-peer"
peer.shutdown(socket.SHUT_WR)
assert c.recv(1) == b"", "the peer's half-close did not arrive"
c.sendall(b"after")
assert recv_exact(peer, 5) == b"after"
c.shutdown(socket.SHUT_WR)
assert peer.recv(1) == b"", "the client's half-close did not arrive"
print("ok")
