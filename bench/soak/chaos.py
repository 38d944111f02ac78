#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A hostile client for soak runs: attacks an HTTP server (plain and TLS ports) or an echo
server with the faults that real networks and real attackers make, for a bounded time, and
prints one JSON object: how many of each fault it made, and what went wrong ("problems": a
connection refused, i.e. the server is gone, or a server answer that breaks the protocol).

  chaos.py --http PORT [--tls-port PORT] [--big PATH] [--h2] -d SECS [-j THREADS] [--seed N]
  chaos.py --echo PORT [--tls-port PORT] -d SECS [-j THREADS] [--seed N]

Only loopback (127.0.0.1). Every socket has a timeout; every loop ends at the deadline.
Standard library only (run it with Debian's /usr/bin/python3)."""

import argparse
import json
import os
import random
import socket
import ssl
import struct
import sys
import threading
import time

HOST = "127.0.0.1"
IO_TIMEOUT = 5.0


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.problems = []
        self.refused = 0

    def count(self, name):
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + 1

    def problem(self, what):
        with self.lock:
            if len(self.problems) < 50:
                self.problems.append(what)


def connect(port, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(IO_TIMEOUT)
    s.connect((HOST, port))
    return s


def reset(s):
    """Closes with an RST (SO_LINGER 0) instead of a FIN."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    s.close()


def read_some(s, limit, deadline=None, timeout=1.0):
    """Reads up to limit bytes, until EOF, an error, or `timeout` seconds without a byte."""
    s.settimeout(timeout)
    got = b""
    while len(got) < limit:
        if deadline and time.monotonic() > deadline:
            break
        try:
            b = s.recv(min(65536, limit - len(got)))
        except (socket.timeout, ConnectionError, ssl.SSLError, OSError):
            break
        if not b:
            break
        got += b
    return got


def read_all(s, cap=1 << 26):
    """Reads to EOF: for answers the server must end by closing."""
    return read_some(s, cap, timeout=IO_TIMEOUT)


def tls_wrap(s):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx.wrap_socket(s, server_hostname="localhost")


def req(path, extra="", close=False):
    h = f"GET {path} HTTP/1.1\r\nHost: localhost\r\n{extra}"
    if close:
        h += "Connection: close\r\n"
    return (h + "\r\n").encode()


# ---- HTTP faults -----------------------------------------------------------------------------

def h_reset(a, rng, st):
    reset(connect(a.http))


def h_half_request_reset(a, rng, st):
    s = connect(a.http)
    full = req("/1k.bin")
    s.sendall(full[: rng.randrange(1, len(full) - 1)])
    time.sleep(rng.random() * 0.05)
    reset(s)


def h_abort_download(a, rng, st):
    s = connect(a.http)
    s.sendall(req(a.big))
    read_some(s, rng.randrange(1, 1 << 20))
    reset(s) if rng.random() < 0.5 else s.close()


def h_slow_reader(a, rng, st):
    s = connect(a.http, rcvbuf=4096)
    s.sendall(req(a.big))
    end = time.monotonic() + 0.5 + rng.random()
    while time.monotonic() < end:
        if not read_some(s, 2048):
            break
        time.sleep(0.02)
    s.close()


def h_half_close(a, rng, st):
    s = connect(a.http)
    s.sendall(req("/1k.bin"))
    s.shutdown(socket.SHUT_WR)
    r = read_all(s)
    s.close()
    if not r.startswith(b"HTTP/1.1 200 "):
        st.problem(f"half-close: answer {r[:40]!r}")


def h_pipeline_gone(a, rng, st):
    s = connect(a.http)
    s.sendall(req("/1k.bin") * rng.randrange(2, 40))
    reset(s) if rng.random() < 0.5 else s.close()


def h_garbage(a, rng, st):
    s = connect(a.http)
    s.sendall(os.urandom(rng.randrange(1, 8192)))
    if rng.random() < 0.5:
        s.shutdown(socket.SHUT_WR)
    r = read_some(s, 4096)
    s.close()
    if r and not r.startswith(b"HTTP/1.1 4") and not r.startswith(b"HTTP/1.1 5"):
        st.problem(f"garbage: answer {r[:40]!r}")


def h_multirange(a, rng, st):
    n = rng.randrange(2, 120)
    parts = []
    for _ in range(n):
        x = rng.randrange(0, a.big_size + 100)
        kind = rng.random()
        if kind < 0.2:
            parts.append(f"-{rng.randrange(1, 5000)}")
        elif kind < 0.3:
            parts.append(f"{x}-")
        else:
            parts.append(f"{x}-{x + rng.randrange(0, 20000)}")
    s = connect(a.http)
    s.sendall(req(a.big, f"Range: bytes={','.join(parts)}\r\n", close=True))
    r = read_some(s, 4 << 20, timeout=IO_TIMEOUT)
    s.close()
    if not r.startswith(b"HTTP/1.1 "):
        st.problem(f"multirange: answer {r[:40]!r}")


def h_smuggle(a, rng, st):
    bodies = [
        b"POST /1k.bin HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG",
        b"POST /1k.bin HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde",
        b"POST /1k.bin HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
        b"POST /1k.bin HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
        b"POST /1k.bin HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
        b"GET /1k.bin HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n",
        b"GET /1k.bin HTTP/1.1\r\nHost: x\nContent-Length: 0\r\n\r\n",
        b"POST /1k.bin HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n",
        b"GET /1k.bin HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
        b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
    ]
    s = connect(a.http)
    s.sendall(rng.choice(bodies))
    r = read_some(s, 1 << 16)
    s.close()
    if b"root:" in r:
        st.problem("smuggle: a path escape served /etc/passwd")


def h_slowloris(a, rng, st):
    s = connect(a.http)
    head = req("/1k.bin")
    end = time.monotonic() + rng.random() * 2
    i = 0
    try:
        while time.monotonic() < end and i < len(head) - 2:
            s.send(head[i:i + 1])
            i += 1
            time.sleep(0.05)
    except OSError:
        pass
    s.close()


def h_blank_lines(a, rng, st):
    s = connect(a.http)
    try:
        for _ in range(rng.randrange(1, 20)):
            s.send(b"\r\n")
            time.sleep(0.01)
    except OSError:
        pass
    s.close()


def h_plain_on_tls(a, rng, st):
    s = connect(a.tls_port)
    s.sendall(req("/1k.bin"))
    read_some(s, 4096)
    s.close()


def h_tls_abort(a, rng, st):
    s = connect(a.tls_port)
    if rng.random() < 0.5:
        # A ClientHello's record header and a few bytes of it, then gone.
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(rng.randrange(0, 200)))
        reset(s)
        return
    t = tls_wrap(s)
    t.sendall(req(a.big))
    read_some(t, rng.randrange(1, 1 << 20))
    reset(t) if rng.random() < 0.5 else t.close()


def h_tls_garbage(a, rng, st):
    t = tls_wrap(connect(a.tls_port))
    t.sendall(os.urandom(rng.randrange(1, 4096)))
    read_some(t, 4096)
    t.close()


# ---- HTTP/2 faults (--h2: h2c by prior knowledge on the plain port, ALPN h2 on the TLS port) --

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def h2_frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def h2_settings(pairs=()):
    return h2_frame(0x4, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def h2_get(sid, path, tls, end=True):
    """A HEADERS frame for GET path: static-table fields, literals without Huffman."""
    p = path.encode()
    block = (b"\x82" + (b"\x87" if tls else b"\x86") + b"\x04" + bytes([len(p)]) + p +
             b"\x01\x09localhost")
    return h2_frame(0x1, 0x4 | (0x1 if end else 0), sid, block)


def h2_open(a, rng, settings=()):
    """A connection that has sent the preface and SETTINGS: plain (h2c) or TLS with ALPN h2."""
    tls = a.tls_port and rng.random() < 0.5
    s = connect(a.tls_port if tls else a.http)
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2"])
        s = ctx.wrap_socket(s, server_hostname="localhost")
    s.sendall(H2_PREFACE + h2_settings(settings))
    return s, tls


def h2_frames(buf):
    """Splits whole frames off buf: returns ([(type, flags, sid, payload)], rest)."""
    out = []
    while len(buf) >= 9:
        n = int.from_bytes(buf[:3], "big")
        if len(buf) < 9 + n:
            break
        out.append((buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF, buf[9:9 + n]))
        buf = buf[9 + n:]
    return out, buf


def h2_good(a, rng, st):
    """A well-behaved request among the faults: 200 and the file's 1024 bytes, nothing else."""
    s, tls = h2_open(a, rng)
    s.sendall(h2_frame(0x4, 0x1, 0) + h2_get(1, "/1k.bin", tls))
    buf, body, status, done = b"", 0, None, False
    end = time.monotonic() + IO_TIMEOUT
    while not done and time.monotonic() < end:
        try:
            b = s.recv(65536)
        except (socket.timeout, ssl.SSLError, OSError):
            break
        if not b:
            break
        fs, buf = h2_frames(buf + b)
        for t, fl, sid, pl in fs:
            if t == 0x1 and sid == 1:
                status = pl[:1]  # 0x88: ":status 200", static index 8
            elif t == 0x0 and sid == 1:
                body += len(pl)
                done = bool(fl & 0x1)
            elif t == 0x3 and sid == 1 or t == 0x7:
                done = True
    s.close()
    if status != b"\x88" or body != 1024 or not done:
        st.problem(f"h2 good request: status byte {status!r}, {body} body bytes, ended {done}")


def h2_rapid_reset(a, rng, st):
    s, tls = h2_open(a, rng)
    burst = b"".join(h2_get(sid, "/1k.bin", tls) + h2_frame(0x3, 0, sid, struct.pack(">I", 8))
                     for sid in range(1, 2 * rng.randrange(10, 3000), 2))
    try:
        s.sendall(burst)
    except OSError:
        pass
    read_some(s, 1 << 20, timeout=0.5)
    reset(s) if rng.random() < 0.5 else s.close()


def h2_zero_window(a, rng, st):
    """Asks for the big file with no window, holds the connection a while, goes."""
    s, tls = h2_open(a, rng, [(4, 0)])
    s.sendall(b"".join(h2_get(sid, a.big, tls) for sid in range(1, 2 * rng.randrange(1, 50), 2)))
    read_some(s, 1 << 16, timeout=0.2 + rng.random())
    reset(s) if rng.random() < 0.5 else s.close()


def h2_abort_download(a, rng, st):
    s, tls = h2_open(a, rng)
    s.sendall(h2_frame(0x8, 0, 0, struct.pack(">I", 1 << 30)) +
              b"".join(h2_get(sid, a.big, tls) for sid in range(1, 2 * rng.randrange(1, 8), 2)))
    read_some(s, rng.randrange(1, 4 << 20))
    reset(s) if rng.random() < 0.5 else s.close()


def h2_continuation_flood(a, rng, st):
    s, tls = h2_open(a, rng)
    first = h2_get(1, "/1k.bin", tls)
    head = first[:4] + bytes([first[4] & ~0x4]) + first[5:]  # no END_HEADERS
    cont = h2_frame(0x9, 0, 1, b"\x40\x01x\x01y" * rng.randrange(0, 3000))
    try:
        s.sendall(head + cont * rng.randrange(1, 2000))
    except OSError:
        pass
    read_some(s, 1 << 16, timeout=0.5)
    s.close()


def h2_control_flood(a, rng, st):
    """PING, SETTINGS, empty DATA, WINDOW_UPDATE and PRIORITY floods, the answers not read."""
    s, tls = h2_open(a, rng)
    kinds = [h2_frame(0x6, 0, 0, os.urandom(8)), h2_settings([(4, 65535)]),
             h2_frame(0x2, 0, 1, struct.pack(">IB", 0, 15)),
             h2_frame(0x8, 0, 0, struct.pack(">I", 1))]
    one = rng.choice(kinds)
    try:
        s.sendall(h2_get(1, "/1k.bin", tls, end=False) + one * rng.randrange(100, 20000))
    except OSError:
        pass
    time.sleep(rng.random() * 0.2)
    reset(s) if rng.random() < 0.5 else s.close()


def h2_garbage(a, rng, st):
    s, tls = h2_open(a, rng)
    try:
        s.sendall(os.urandom(rng.randrange(1, 8192)))
    except OSError:
        pass
    r = read_some(s, 1 << 16, timeout=0.5)
    s.close()
    fs, _ = h2_frames(r)
    if any(t not in (0x0, 0x1, 0x3, 0x4, 0x6, 0x7, 0x8, 0x9) for t, _, _, _ in fs):
        st.problem(f"h2 garbage: a frame type the server should not send in {[f[0] for f in fs]}")


def h2_cut(a, rng, st):
    """Half a frame (or half a preface), then a half-close or a reset."""
    s = connect(a.http)
    whole = H2_PREFACE + h2_settings() + h2_get(1, "/1k.bin", False)
    s.sendall(whole[: rng.randrange(1, len(whole))])
    if rng.random() < 0.5:
        s.shutdown(socket.SHUT_WR)
        read_some(s, 1 << 16, timeout=0.5)
        s.close()
    else:
        reset(s)


H2_FAULTS = [h2_good, h2_rapid_reset, h2_zero_window, h2_abort_download, h2_continuation_flood,
             h2_control_flood, h2_garbage, h2_cut]

HTTP_FAULTS = [h_reset, h_half_request_reset, h_abort_download, h_slow_reader, h_half_close,
               h_pipeline_gone, h_garbage, h_multirange, h_smuggle, h_slowloris, h_blank_lines]
TLS_FAULTS = [h_plain_on_tls, h_tls_abort, h_tls_garbage]

# ---- echo faults ----------------------------------------------------------------------------


def e_port(a, rng):
    return a.tls_port if a.tls_port and rng.random() < 0.3 else a.echo


def e_open(a, rng, rcvbuf=None):
    port = e_port(a, rng)
    s = connect(port, rcvbuf)
    return (tls_wrap(s) if port == a.tls_port else s), port == a.tls_port


def e_reset(a, rng, st):
    reset(connect(e_port(a, rng)))


def e_garbage_reset(a, rng, st):
    s, _ = e_open(a, rng)
    s.sendall(os.urandom(rng.randrange(1, 65536)))
    read_some(s, rng.randrange(1, 4096))
    reset(s)


def e_half_close(a, rng, st):
    s, tls = e_open(a, rng)
    data = os.urandom(rng.randrange(1, 200000))
    if tls:
        s.sendall(data)
        got = read_some(s, len(data))
        s.close()
    else:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        got = read_all(s, len(data) + 1)
        s.close()
    if got != data:
        st.problem(f"echo half-close: sent {len(data)} bytes, got {len(got)} back (or other bytes)")


def e_slow_reader(a, rng, st):
    s, _ = e_open(a, rng, rcvbuf=4096)
    s.setblocking(False)
    sent = 0
    end = time.monotonic() + 0.5 + rng.random()
    chunk = os.urandom(65536)
    while time.monotonic() < end:
        try:
            sent += s.send(chunk)
        except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            time.sleep(0.02)
        except OSError:
            break
    reset(s) if rng.random() < 0.5 else s.close()


def e_partial_gone(a, rng, st):
    s, _ = e_open(a, rng)
    s.sendall(os.urandom(rng.randrange(1, 1 << 20)))
    read_some(s, rng.randrange(1, 1 << 16))
    s.close()


ECHO_FAULTS = [e_reset, e_garbage_reset, e_half_close, e_slow_reader, e_partial_gone]

# ---- driver ---------------------------------------------------------------------------------


def fault_name(f):
    """h_reset -> reset, e_reset -> reset; HTTP/2's keep their prefix: h2_garbage."""
    return f.__name__[2:] if f.__name__[1] == "_" else f.__name__


def worker(a, faults, seed, deadline, st):
    rng = random.Random(seed)
    while time.monotonic() < deadline:
        f = rng.choice(faults)
        try:
            f(a, rng, st)
            st.count(fault_name(f))
        except ConnectionRefusedError:
            with st.lock:
                st.refused += 1
            st.problem(f"{fault_name(f)}: connection refused (is the server gone?)")
            time.sleep(0.2)
        except (OSError, ssl.SSLError, socket.timeout):
            st.count(fault_name(f))  # a fault that the server ended its own way
        time.sleep(rng.random() * 0.01)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--http", type=int)
    p.add_argument("--echo", type=int)
    p.add_argument("--tls-port", type=int)
    p.add_argument("--big", default="/big.bin", help="path of a large file on the HTTP server")
    p.add_argument("--big-size", type=int, default=32 << 20)
    p.add_argument("-d", "--duration", type=float, required=True)
    p.add_argument("-j", "--threads", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--faults", help="comma-separated names: only these faults")
    p.add_argument("--h2", action="store_true",
                   help="HTTP/2 faults too: h2c on --http (served with --h2c), ALPN h2 on --tls-port")
    a = p.parse_args()
    if bool(a.http) == bool(a.echo):
        p.error("give exactly one of --http and --echo")
    if a.http:
        faults = HTTP_FAULTS + (TLS_FAULTS if a.tls_port else []) + (H2_FAULTS if a.h2 else [])
    else:
        faults = ECHO_FAULTS
    if a.faults:
        want = set(a.faults.split(","))
        faults = [f for f in faults if fault_name(f) in want]
        if not faults:
            p.error("--faults names none of this mode's faults")
    st = Stats()
    deadline = time.monotonic() + a.duration
    ts = [threading.Thread(target=worker, args=(a, faults, a.seed * 1000 + i, deadline, st),
                           daemon=True) for i in range(a.threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(a.duration + 3 * IO_TIMEOUT + 5)
    out = {"faults": dict(sorted(st.counts.items())), "total": sum(st.counts.values()),
           "refused": st.refused, "problems": st.problems}
    json.dump(out, sys.stdout)
    print()
    return 1 if st.problems else 0


if __name__ == "__main__":
    sys.exit(main())
