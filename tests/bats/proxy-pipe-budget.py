#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""More active relay directions than the grown-pipe budget allows. vega-proxy runs with
VEGA_PROXY_PIPE_PAGES lowered (its --metrics at METRICS_URL): K SOCKS5 tunnels to sinks of
our own, each client sending MIB MiB while its sink does not read yet, so that every upward
direction holds a full pipe at once. Then:
  - the grown pages reach the budget (as many 1 MiB pipes as it has room for) while the sinks
    wait: vega_proxy_pipe_grown_pages == budget, the other directions left at 64 KiB;
  - the sinks read and hash everything, then send MIB MiB back, which the clients hash: every
    tunnel's sha256 both ways must match;
  - vega_proxy_pipe_grown_pages_peak never went above vega_proxy_pipe_budget_pages, and once
    all tunnels closed the grown pages are 0 again.
Prints "ok grown=G refused=R peak=P budget=B" or "FAIL: ..." (exit 1).
Usage: proxy-pipe-budget.py PROXY_PORT METRICS_URL K MIB"""
import hashlib
import os
import socket
import struct
import sys
import threading
import time
import urllib.request

PORT, URL, K, MIB = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
N = MIB << 20
BLOCK = os.urandom((1 << 20) + 7)
DEADLINE = 60.0


def fail(msg):
    print("FAIL: " + msg, flush=True)
    os._exit(1)


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


def recv_hash(s, n):
    h = hashlib.sha256()
    got = 0
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    while got < n:
        k = s.recv_into(view, min(len(buf), n - got))
        if k == 0:
            break
        h.update(view[:k])
        got += k
    return got, h.hexdigest()


def metrics():
    out = {}
    with urllib.request.urlopen(URL, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("vega_proxy_pipe"):
                k, v = line.rsplit(" ", 1)
                out[k] = int(float(v))
    return out


def wait_metrics(cond, what):
    end = time.monotonic() + DEADLINE
    while True:
        m = metrics()
        if cond(m):
            return m
        if time.monotonic() > end:
            fail("%s: %r" % (what, m))
        time.sleep(0.05)  # polling a condition, not ordering


def socks5(dport):
    c = socket.create_connection(("127.0.0.1", PORT), timeout=DEADLINE)
    c.sendall(b"\x05\x01\x00")
    if c.recv(2) != b"\x05\x00":
        fail("SOCKS5 greeting")
    c.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", dport))
    r = b""
    while len(r) < 10:
        d = c.recv(10 - len(r))
        if not d:
            fail("SOCKS5 reply cut")
        r += d
    if r[1] != 0:
        fail("SOCKS5 CONNECT refused: REP %d" % r[1])
    return c


def main():
    want = expected(N)
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(K)
    dport = lst.getsockname()[1]
    go = threading.Event()
    results = {}

    def sink(c, i):
        go.wait()
        got, h = recv_hash(c, N)
        results[("up", i)] = (got, h)
        for b in stream(N):
            c.sendall(b)
        c.shutdown(socket.SHUT_WR)
        c.close()

    def client(c, i):
        for b in stream(N):
            c.sendall(b)
        got, h = recv_hash(c, N)
        results[("down", i)] = (got, h)
        c.close()

    before = metrics()
    budget = before["vega_proxy_pipe_budget_pages"]
    per = 240  # (1 MiB - 64 KiB) / 4 KiB: the extra pages of one grown pipe
    if budget // per >= K:
        fail("budget %d pages allows %d pipes: not fewer than %d directions" % (budget, budget // per, K))
    threads = []
    for i in range(K):
        c = socks5(dport)
        s, _ = lst.accept()
        s.settimeout(DEADLINE)
        threads.append(threading.Thread(target=sink, args=(s, i)))
        threads.append(threading.Thread(target=client, args=(c, i)))
    for t in threads:
        t.start()
    # every direction moving with its sink stalled: as many pipes grown as the budget holds
    full = budget // per * per
    stalled = wait_metrics(lambda m: m["vega_proxy_pipe_grown_pages"] == full,
                           "the grown pages never reached the budget's %d" % full)
    go.set()
    for t in threads:
        t.join(DEADLINE * 2)
        if t.is_alive():
            fail("a tunnel did not finish")
    for i in range(K):
        for d in ("up", "down"):
            got, h = results.get((d, i), (0, ""))
            if got != N or h != want:
                fail("tunnel %d %s: %d bytes, sha256 %s, want %d %s" % (i, d, got, h, N, want))
    after = wait_metrics(lambda m: m["vega_proxy_pipe_grown_pages"] == 0,
                         "grown pages not given back once the tunnels closed")
    peak = after["vega_proxy_pipe_grown_pages_peak"]
    if peak > budget:
        fail("peak %d pages above the budget %d" % (peak, budget))
    grown = after["vega_proxy_pipes_grown_total"] - before["vega_proxy_pipes_grown_total"]
    refused = after["vega_proxy_pipe_grow_refused_total"] - before["vega_proxy_pipe_grow_refused_total"]
    print("ok grown=%d refused=%d peak=%d budget=%d stalled=%d" %
          (grown, refused, peak, budget, stalled["vega_proxy_pipe_grown_pages"]), flush=True)


main()
