#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The SOCKS5 replies of vega-proxy for vega-proxy.bats (RFC 1928 section 6), stdlib only, the
# bytes written by hand: one request per line of the arguments after the proxy's port, each
# "CMD ATYP HOST PORT" (CMD 1 CONNECT, 9 unknown; ATYP 1 IPv4, 3 name, 4 IPv6, 5 unknown), on
# its own connection with no authentication. Prints "HOST REP" for each, REP the reply's byte.
#   socks5-replies.py PROXY_PORT "1 1 192.0.2.1 80" "1 3 nowhere.invalid 80" ...
import ipaddress
import socket
import struct
import sys


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise SystemExit("the proxy closed after %d of %d bytes" % (len(b), n))
        b += d
    return b


pport = int(sys.argv[1])
for spec in sys.argv[2:]:
    cmd, atyp, host, port = spec.split()
    cmd, atyp, port = int(cmd), int(atyp), int(port)
    if atyp == 1:
        addr = ipaddress.IPv4Address(host).packed
    elif atyp == 4:
        addr = ipaddress.IPv6Address(host).packed
    else:
        addr = bytes([len(host)]) + host.encode()
    c = socket.create_connection(("127.0.0.1", pport), timeout=20)
    c.sendall(b"\x05\x01\x00")
    if recv_exact(c, 2) != b"\x05\x00":
        raise SystemExit("no 'no authentication' method")
    c.sendall(bytes([5, cmd, 0, atyp]) + addr + struct.pack("!H", port))
    head = recv_exact(c, 2)
    if head[0] != 5:
        raise SystemExit("not a SOCKS5 reply: %r" % head)
    print(host, head[1], flush=True)
    c.close()
