# SPDX-License-Identifier: MIT
# Clients of vega-proxy and scrapes of its --metrics, parsed by the real Prometheus parser
# (python3-prometheus-client), for tests/bats/vega-proxy-metrics.bats.
#
#   snapshot URL FILE          the samples, as JSON, into FILE
#   expect URL FILE KEY=N|KEY==N...
#       until every KEY=N moved by N since FILE and every KEY==N reads N (5 s at most), then:
#       each moved or reads exactly so, every other vega_proxy_ counter and the handshake
#       count did not move, histograms are well formed
#   socks5 PORT USER PASS DPORT N   a SOCKS5 tunnel (user/password auth; USER "-": none) to
#       127.0.0.1:DPORT, N bytes echoed; prints the reply code (0 ok, "auth" when refused)
#   connect PORT USER PASS DPORT N  the same through HTTP CONNECT; prints the status
#   socks4 PORT DPORT               a SOCKS4 request; prints the reply code (90 ok)
#   udp PORT USER PASS              a SOCKS5 UDP ASSOCIATE, closed at once; prints the code
#   hold PORT USER PASS DPORT FIFO  a SOCKS5 tunnel, 16 bytes echoed, then held open until
#       FIFO can be read; says "open" on stderr once held
#   from SRC PORT                   connects from address SRC; prints "closed" when the proxy
#       closed or reset it without a byte
# A KEY is a sample name with its labels sorted by name: 'vega_proxy_tunnels_total{kind="udp"}'.
import base64
import json
import socket
import struct
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

WANT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def fail(msg):
    print("vega-proxy-metrics.py: " + msg, file=sys.stderr)
    sys.exit(1)


def key(s):
    labels = ",".join('%s="%s"' % (k, v) for k, v in sorted(s.labels.items()))
    return s.name + ("{" + labels + "}" if labels else "")


def scrape(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        ctype = r.headers.get("Content-Type")
        text = r.read().decode("utf-8")
    if ctype != WANT_TYPE:
        fail("Content-Type %r, want %r" % (ctype, WANT_TYPE))
    samples = {}
    for fam in text_string_to_metric_families(text):
        if fam.type not in ("counter", "gauge", "histogram"):
            fail("family %s has type %s" % (fam.name, fam.type))
        if not fam.documentation:
            fail("family %s has no # HELP" % fam.name)
        for s in fam.samples:
            samples[key(s)] = s.value
        if fam.type == "histogram":
            buckets = [s.value for s in fam.samples if s.name.endswith("_bucket")]
            count = [s.value for s in fam.samples if s.name.endswith("_count")]
            if buckets != sorted(buckets) or len(count) != 1 or buckets[-1] != count[0]:
                fail("%s: buckets %s, count %s" % (fam.name, buckets, count))
    if not any(k.startswith("vega_proxy_") for k in samples):
        fail("no vega_proxy_ samples")
    return samples


def expect(url, path, args):
    with open(path) as f:
        before = json.load(f)
    moves, values = {}, {}
    for a in args:
        if "==" in a:
            k, n = a.rsplit("==", 1)
            values[k] = float(n)
        else:
            k, n = a.rsplit("=", 1)
            moves[k] = float(n)

    def moved(after, k):
        return after.get(k, 0) - before.get(k, 0)

    deadline = time.monotonic() + 5
    while True:
        # a tunnel is counted as it ends, which the client may see first
        after = scrape(url)
        if all(moved(after, k) == n for k, n in moves.items()) and all(
            after.get(k) == n for k, n in values.items()
        ):
            break
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    for k in list(moves) + list(values):
        if k not in after:
            fail("no sample %s" % k)
    for k, n in values.items():
        if after[k] != n:
            fail("%s is %s, want %s" % (k, after[k], n))
    for k in after:
        counted = k.startswith("vega_proxy_") and (
            "_total" in k or k.startswith("vega_proxy_handshake_seconds_count")
        )
        n = moved(after, k)
        if k in moves and n != moves[k]:
            fail("%s moved by %s, want %s" % (k, n, moves[k]))
        if k not in moves and counted and n != 0:
            fail("%s moved by %s, want 0" % (k, n))
    print("ok: %d samples" % len(after))


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise SystemExit("closed after %d of %d bytes" % (len(b), n))
        b += c
    return b


def echo(s, n):
    data = bytes(i % 251 for i in range(n))
    s.sendall(data)
    if recv_exact(s, n) != data:
        fail("the echo differs")


def socks5_open(port, user, pw, cmd, dport):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if user == "-":
        s.sendall(b"\x05\x01\x00")
        if recv_exact(s, 2) != b"\x05\x00":
            fail("method refused")
    else:
        s.sendall(b"\x05\x01\x02")
        if recv_exact(s, 2) != b"\x05\x02":
            fail("user/password not chosen")
        u, p = user.encode(), pw.encode()
        s.sendall(bytes([1, len(u)]) + u + bytes([len(p)]) + p)
        if recv_exact(s, 2)[1] != 0:
            return s, "auth"
    s.sendall(bytes([5, cmd, 0, 1]) + socket.inet_aton("127.0.0.1") + struct.pack("!H", dport))
    rep = recv_exact(s, 10)
    return s, str(rep[1])


def main():
    mode = sys.argv[1]
    a = sys.argv[2:]
    if mode == "snapshot":
        with open(a[1], "w") as f:
            json.dump(scrape(a[0]), f)
    elif mode == "expect":
        expect(a[0], a[1], a[2:])
    elif mode == "socks5":
        s, code = socks5_open(int(a[0]), a[1], a[2], 1, int(a[3]))
        if code == "0":
            echo(s, int(a[4]))
        s.close()
        print(code)
    elif mode == "connect":
        s = socket.create_connection(("127.0.0.1", int(a[0])), timeout=5)
        cred = base64.b64encode(("%s:%s" % (a[1], a[2])).encode()).decode()
        s.sendall(
            (
                "CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n"
                "Proxy-Authorization: Basic %s\r\n\r\n" % (a[3], a[3], cred)
            ).encode()
        )
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            head += recv_exact(s, 1)
        status = head.split(b" ")[1].decode()
        if status == "200":
            echo(s, int(a[4]))
        s.close()
        print(status)
    elif mode == "socks4":
        s = socket.create_connection(("127.0.0.1", int(a[0])), timeout=5)
        s.sendall(b"\x04\x01" + struct.pack("!H", int(a[1])) + socket.inet_aton("127.0.0.1") + b"x\x00")
        print(recv_exact(s, 8)[1])
        s.close()
    elif mode == "udp":
        s, code = socks5_open(int(a[0]), a[1], a[2], 3, 0)
        s.close()
        print(code)
    elif mode == "hold":
        s, code = socks5_open(int(a[0]), a[1], a[2], 1, int(a[3]))
        if code != "0":
            fail("hold: reply %s" % code)
        echo(s, 16)
        print("open", file=sys.stderr, flush=True)
        with open(a[4]) as f:
            f.read()
        s.close()
    elif mode == "from":
        s = socket.socket()
        s.settimeout(5)
        s.bind((a[0], 0))
        try:
            # the reset may come as soon as the connect returns
            s.connect(("127.0.0.1", int(a[1])))
            s.sendall(b"\x05\x01\x00")
            b = s.recv(2)
        except (ConnectionResetError, BrokenPipeError):
            b = b""
        print("closed" if not b else "answered")
    else:
        fail("unknown mode " + mode)


main()
