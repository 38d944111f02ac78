#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Opens N SOCKS5 tunnels through vega-proxy to an echo server and leaves them idle, then
reports the proxy's resident memory per idle tunnel (VmRSS after minus before, over N), checks
that a sample of the tunnels still echoes, and closes them all.
Prints "tunnels=N rss_before_kib=A rss_after_kib=B per_tunnel_bytes=C".
KIND connect makes HTTP CONNECT tunnels instead (tinyproxy speaks no SOCKS); MEM tree measures
the proportional set size (Pss, smaps_rollup) summed over the proxy and all its descendants
instead of one process's VmRSS (danted forks children that hold the tunnels; shared pages
counted once), printed with the same names.
Usage: proxy_idle.py PROXY_PID PROXY_PORT ECHO_PORT N [TIMEOUT_S [KIND [MEM]]]"""
import os
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


def tree_pss_kib(root):
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(") ", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    todo, total = [root], 0
    while todo:
        p = todo.pop()
        todo += kids.get(p, [])
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def main():
    pid, port, eport, n = (int(a) for a in sys.argv[1:5])
    timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 120
    connect = len(sys.argv) > 6 and sys.argv[6] == "connect"
    mem = tree_pss_kib if len(sys.argv) > 7 and sys.argv[7] == "tree" else rss_kib
    end = time.monotonic() + timeout
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < n + 64:
        raise SystemExit(f"RLIMIT_NOFILE {hard} is below {n + 64}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    # the greeting and the CONNECT in one write: the proxy reads them one after the other
    req = b"\x05\x01\x00" + b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", eport)
    if connect:
        req = f"CONNECT 127.0.0.1:{eport} HTTP/1.1\r\nHost: 127.0.0.1:{eport}\r\n\r\n".encode()
    before = mem(pid)
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
            if connect and pending[s].endswith(b"\r\n\r\n"):
                assert pending[s].split(b" ")[1] == b"200", pending[s]
                sel.unregister(s)
                del pending[s]
                socks.append(s)
            elif not connect and len(pending[s]) >= 12:
                assert pending[s][:4] == b"\x05\x00\x05\x00", pending[s]
                sel.unregister(s)
                del pending[s]
                socks.append(s)
    # let the proxy finish parking them: its RSS settles once no handshake is left
    time.sleep(0.5)
    after = mem(pid)
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
