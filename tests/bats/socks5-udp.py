# SPDX-License-Identifier: MIT
# A SOCKS5 UDP ASSOCIATE client (RFC 1928 section 7) for vega-proxy.bats: stdlib only.
#   socks5-udp.py PROXY_PORT ECHO_PORT [USER:PASS]   the exchange checks below; exits 0 when all
#                                                    pass, else prints what failed and exits 1
#   socks5-udp.py --hold PROXY_PORT ECHO_PORT        one exchange, "held" on stderr, then waits for the
#                                                    proxy to close the control connection
#   socks5-udp.py --idle PROXY_PORT                  an association that sends nothing: prints
#                                                    "closed" once the proxy closed it
#   socks5-udp.py --deny PROXY_PORT ECHO_PORT IP     a datagram to IP:ECHO_PORT (refused by the
#                                                    proxy's rules, which its log shows), then one
#                                                    to the echo, whose answer must come back
#   socks5-udp.py --junk PROXY_PORT ECHO_PORT       a header cut short and two fragments (all
#                                                    dropped), then a datagram whose echo must
#                                                    be the first answer
#   socks5-udp.py --allocs PROXY_PORT ECHO_PORT N REQ RESP
#                                                    N datagrams echoed (half to "localhost",
#                                                    half to 127.0.0.1, sizes 1-1400, each one
#                                                    checked), between two readings of the
#                                                    proxy's allocation count (tests/bats/
#                                                    malloc-count.c: write REQ, read RESP); 200
#                                                    datagrams go first to warm up. Prints
#                                                    "allocs D" (D: allocations in between)
# Ordering, not time, proves a datagram was dropped: the relay handles the client's datagrams
# one by one in order, and the echo answers in order, so when a dropped datagram goes first and
# a good one second, the first answer the client gets must be the good one's.
import socket
import struct
import sys
import time

DEADLINE = 10.0


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            fail("control connection closed early")
        b += c
    return b


def handshake(pport, cred, declared_port):
    c = socket.create_connection(("127.0.0.1", pport), timeout=DEADLINE)
    if cred:
        c.sendall(b"\x05\x01\x02")
        if recv_exact(c, 2) != b"\x05\x02":
            fail("method not user/pass")
        u, p = cred.split(":", 1)
        c.sendall(bytes([1, len(u)]) + u.encode() + bytes([len(p)]) + p.encode())
        if recv_exact(c, 2) != b"\x01\x00":
            fail("auth refused")
    else:
        c.sendall(b"\x05\x01\x00")
        if recv_exact(c, 2) != b"\x05\x00":
            fail("method not 'no auth'")
    # UDP ASSOCIATE, DST = 0.0.0.0:declared_port (where our datagrams will come from)
    c.sendall(b"\x05\x03\x00\x01" + bytes(4) + struct.pack(">H", declared_port))
    head = recv_exact(c, 4)
    return c, head


def read_bnd(c, head):
    if head[1] != 0:
        fail("UDP ASSOCIATE refused: REP %d" % head[1])
    if head[3] == 1:
        ip = socket.inet_ntop(socket.AF_INET, recv_exact(c, 4))
    elif head[3] == 4:
        ip = socket.inet_ntop(socket.AF_INET6, recv_exact(c, 16))
    else:
        fail("BND ATYP %d" % head[3])
    (port,) = struct.unpack(">H", recv_exact(c, 2))
    return ip, port


def hdr_ip(ip, port, frag=0):
    return b"\x00\x00" + bytes([frag, 1]) + socket.inet_aton(ip) + struct.pack(">H", port)


def hdr_name(name, port):
    return b"\x00\x00\x00\x03" + bytes([len(name)]) + name.encode() + struct.pack(">H", port)


def expect(u, payload, eport, what):
    try:
        d = u.recv(70000)
    except socket.timeout:
        fail(what + ": no answer")
    want = hdr_ip("127.0.0.1", eport) + payload
    if d != want:
        fail("%s: got %r, want %r" % (what, d[:40], want[:40]))


def udp(ip="127.0.0.1"):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((ip, 0))
    u.settimeout(DEADLINE)
    return u


def exchange(pport, eport, cred):
    u = udp()
    c, head = handshake(pport, cred, u.getsockname()[1])
    relay = read_bnd(c, head)
    if relay[0] != "127.0.0.1":
        fail("relay on %s, not the control connection's address" % relay[0])
    # an IPv4 destination and a name the proxy resolves; a large datagram
    u.sendto(hdr_ip("127.0.0.1", eport) + b"one", relay)
    expect(u, b"one", eport, "IPv4 destination")
    u.sendto(hdr_name("localhost", eport) + b"two", relay)
    expect(u, b"two", eport, "named destination")
    big = bytes(range(256)) * 160  # 40 KiB
    u.sendto(hdr_ip("127.0.0.1", eport) + big, relay)
    expect(u, big, eport, "40 KiB datagram")
    # from another port of the client's IP, from another IP, a fragment: all dropped
    other = udp()
    other.sendto(hdr_ip("127.0.0.1", eport) + b"wrong-port", relay)
    other_ip = udp("127.0.0.2")
    other_ip.sendto(hdr_ip("127.0.0.1", eport) + b"wrong-ip", relay)
    u.sendto(hdr_ip("127.0.0.1", eport, frag=1) + b"fragment", relay)
    u.sendto(hdr_ip("127.0.0.1", eport) + b"three", relay)
    expect(u, b"three", eport, "after dropped datagrams")
    # closing the control connection ends the association
    c.close()
    # the relay's port stops answering: ICMP port unreachable shows on a connected socket
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.connect(relay)
    probe.settimeout(0.2)
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        try:
            probe.send(hdr_ip("127.0.0.1", eport) + b"late")
            probe.recv(100)
        except ConnectionRefusedError:
            print("ok")
            return
        except socket.timeout:
            pass
    fail("the relay still answers after the control connection closed")


def deny(pport, eport, ip):
    u = udp()
    c, head = handshake(pport, None, u.getsockname()[1])
    relay = read_bnd(c, head)
    u.sendto(hdr_ip(ip, eport) + b"denied", relay)
    u.sendto(hdr_ip("127.0.0.1", eport) + b"allowed", relay)
    expect(u, b"allowed", eport, "allowed after denied")
    c.close()
    print("ok")


def junk(pport, eport):
    u = udp()
    c, head = handshake(pport, None, u.getsockname()[1])
    relay = read_bnd(c, head)
    u.sendto(b"\x00\x00\x00\x01\x7f\x00", relay)
    u.sendto(hdr_ip("127.0.0.1", eport, frag=2) + b"frag-2", relay)
    u.sendto(hdr_ip("127.0.0.1", eport, frag=0x81) + b"frag-last", relay)
    u.sendto(hdr_ip("127.0.0.1", eport) + b"good", relay)
    expect(u, b"good", eport, "after junk")
    c.close()
    print("ok")


def allocs(pport, eport, n, req, resp):
    def count():
        with open(req, "w") as f:
            f.write("?")
        with open(resp) as f:
            return int(f.read())

    u = udp()
    c, head = handshake(pport, None, u.getsockname()[1])
    relay = read_bnd(c, head)

    def one(i):
        payload = struct.pack(">I", i) * (1 + i % 350)
        h = hdr_name("localhost", eport) if i % 2 else hdr_ip("127.0.0.1", eport)
        u.sendto(h + payload, relay)
        expect(u, payload, eport, "datagram %d" % i)

    for i in range(200):
        one(i)
    before = count()
    for i in range(n):
        one(i)
    after = count()
    c.close()
    print("allocs %d" % (after - before))


def hold(pport, eport):
    u = udp()
    c, head = handshake(pport, None, u.getsockname()[1])
    relay = read_bnd(c, head)
    u.sendto(hdr_ip("127.0.0.1", eport) + b"hold", relay)
    expect(u, b"hold", eport, "hold")
    print("held", file=sys.stderr, flush=True)
    c.settimeout(None)
    while c.recv(100):
        pass
    print("closed", file=sys.stderr, flush=True)


def idle(pport):
    u = udp()
    c, head = handshake(pport, None, u.getsockname()[1])
    read_bnd(c, head)
    c.settimeout(None)
    while c.recv(100):
        pass
    print("closed")


def main():
    if sys.argv[1] == "--idle":
        idle(int(sys.argv[2]))
        return
    if sys.argv[1] == "--hold":
        hold(int(sys.argv[2]), int(sys.argv[3]))
        return
    if sys.argv[1] == "--junk":
        junk(int(sys.argv[2]), int(sys.argv[3]))
        return
    if sys.argv[1] == "--allocs":
        a = sys.argv
        allocs(int(a[2]), int(a[3]), int(a[4]), a[5], a[6])
        return
    if sys.argv[1] == "--deny":
        deny(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
        return
    cred = sys.argv[3] if len(sys.argv) > 3 else None
    exchange(int(sys.argv[1]), int(sys.argv[2]), cred)


main()
