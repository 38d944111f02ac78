#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Opens N SOCKS5 tunnels through vega-proxy to an echo server and leaves them idle, then
reports the proxy's resident memory per idle tunnel (VmRSS after minus before, over N), checks
that a sample of the tunnels still echoes, and closes them all.
Prints "tunnels=N rss_before_kib=A rss_after_kib=B per_tunnel_bytes=C".
Usage: proxy_idle.py PROXY_PID PROXY_PORT ECHO_PORT N [TIMEOUT_S]"""
import resource
import selectors
import socket
import struct
import sys
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit("no VmRSS")


def main():
    pid, port, eport, n = (int(a) for a in sys.argv[1:5])
    timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 120
    end = time.monotonic() + timeout
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < n + 64:
        raise SystemExit(f"RLIMIT_NOFILE {hard} is below {n + 64}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    # the greeting and the CONNECT in one write: the proxy reads them one after the other
    req = b"\x05\x01\x00" + b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", eport)
    before = rss_kib(pid)
    socks = []
    sel = selectors.DefaultSelector()
    pending = {}
    batch = 256
    opened = 0
    while opened < n or pending:
        while opened < n and len(pending) < batch:
            s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
            s.setblocking(False)
            s.send(req)
            pending[s] = b""
            sel.register(s, selectors.EVENT_READ)
            opened += 1
        if time.monotonic() > end:
            raise SystemExit(f"timed out with {len(socks)} tunnels open")
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            b = s.recv(64)
            if not b:
                raise SystemExit(f"the proxy closed a tunnel after {len(socks)}")
            pending[s] += b
            if len(pending[s]) >= 12:
                assert pending[s][:4] == b"\x05\x00\x05\x00", pending[s]
                sel.unregister(s)
                del pending[s]
                socks.append(s)
    # let the proxy finish parking them: its RSS settles once no handshake is left
    time.sleep(0.5)
    after = rss_kib(pid)
    for s in socks[:: max(1, n // 100)]:
        s.setblocking(True)
        s.sendall(b"ping")
        got = b""
        while len(got) < 4:
            b = s.recv(4)
            assert b, "a tunnel closed"
            got += b
        assert got == b"ping"
    for s in socks:
        s.close()
    per = (after - before) * 1024 / n
    print(f"tunnels={n} rss_before_kib={before} rss_after_kib={after} per_tunnel_bytes={per:.0f}")


main()
