#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# An HTTP/2 client on Python's h2 library (Debian's python3-h2) for what curl and nghttp cannot
# do against vega-serve: Rapid Reset bursts, a reader that opens no window, priorities of both
# RFCs, request trailers, a graceful stop watched frame by frame. Each case prints "ok ..." and
# exits 0, or prints why and exits 1. Loopback only; every wait is bounded.
#
# usage: vega-serve-h2.py CASE HOST PORT [--tls] [--pid PID] [--sha256 HEX] [--path PATH]
import argparse
import hashlib
import os
import signal
import socket
import ssl
import struct
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

WAIT = 20.0  # seconds any single wait may take before the case fails


class Fail(Exception):
    pass


class Client:
    """One HTTP/2 connection with its events gathered per stream."""

    def __init__(self, a, window=None):
        self.a = a
        raw = socket.create_connection((a.host, a.port), timeout=WAIT)
        if a.tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            self.sock = ctx.wrap_socket(raw, server_hostname="localhost")
            if self.sock.selected_alpn_protocol() != "h2":
                raise Fail(f"ALPN chose {self.sock.selected_alpn_protocol()!r}, not h2")
        else:
            self.sock = raw
        cfg = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config=cfg)
        self.conn.initiate_connection()
        if window is not None:
            self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.wdead = False
        self.rbuf = bytearray()
        self.flush()
        self.status = {}  # stream id -> :status
        self.headers = {}
        self.body = {}
        self.ended = set()
        self.resets = {}  # stream id -> error code
        self.goaways = []  # (last stream id, error code), in order
        self.closed = False  # the peer closed the socket
        self.settings = {}
        self.auto_ack = True  # give the window back for every DATA frame
        self.wdead = False  # a write failed: nothing more is sent

    def flush(self):
        d = self.conn.data_to_send()
        if d and not self.wdead:
            try:
                self.sock.sendall(d)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                self.wdead = True  # the server hung up: what it said is still read

    def get(self, path, extra=(), end=True):
        sid = self.conn.get_next_available_stream_id()
        hdrs = [(":method", "GET"), (":path", path), (":scheme", "https" if self.a.tls else "http"),
                (":authority", f"{self.a.host}:{self.a.port}")] + list(extra)
        self.conn.send_headers(sid, hdrs, end_stream=end)
        self.body[sid] = bytearray()
        return sid

    def pump(self, timeout=WAIT):
        """Reads once (up to timeout) and handles the events. Returns False on EOF or timeout."""
        self.sock.settimeout(timeout)
        try:
            d = self.sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return False
        except (ConnectionResetError, ssl.SSLError):
            d = b""
        if not d:
            self.closed = True
            return False
        # Whole frames go to h2 until a GOAWAY; after one, h2 refuses everything (its state
        # machine is closed), so the frames of a graceful shutdown (PING, the last DATA, the
        # final GOAWAY) are handled here.
        self.rbuf += d
        while len(self.rbuf) >= 9:
            n = int.from_bytes(self.rbuf[:3], "big") + 9
            if len(self.rbuf) < n:
                break
            f, self.rbuf = bytes(self.rbuf[:n]), self.rbuf[n:]
            if self.goaways:
                self.raw_frame(f)
                continue
            try:
                evs = self.conn.receive_data(f)
            except h2.exceptions.ProtocolError as e:
                raise Fail(f"the server broke the protocol: {e!r}")
            for ev in evs:
                self.handle(ev)
        self.flush()
        return True

    def raw_frame(self, f):
        ftype, flags, sid = f[3], f[4], int.from_bytes(f[5:9], "big") & 0x7FFFFFFF
        p = f[9:]
        if ftype == 0x0:  # DATA
            pad = p[0] if flags & 0x8 else 0
            data = p[1 : len(p) - pad] if flags & 0x8 else p
            self.body.setdefault(sid, bytearray()).extend(data)
            if p and self.auto_ack:
                inc = struct.pack(">I", len(p))
                self.send_raw(frame(0x8, 0, 0, inc) + frame(0x8, 0, sid, inc))
            if flags & 0x1:
                self.ended.add(sid)
        elif ftype == 0x3:  # RST_STREAM
            self.resets[sid] = int.from_bytes(p[:4], "big")
        elif ftype == 0x6 and not flags & 0x1:  # PING: answer it
            self.send_raw(frame(0x6, 0x1, 0, p))
        elif ftype == 0x7:  # GOAWAY
            self.goaways.append((int.from_bytes(p[:4], "big") & 0x7FFFFFFF, int.from_bytes(p[4:8], "big")))
        elif ftype in (0x1, 0x9):
            raise Fail(f"a header block (type {ftype}) on stream {sid} after GOAWAY")

    def send_raw(self, b):
        if not self.wdead:
            try:
                self.sock.sendall(b)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                self.wdead = True

    def handle(self, ev):
        if isinstance(ev, h2.events.ResponseReceived):
            h = dict(ev.headers)
            self.status[ev.stream_id] = int(h[":status"])
            self.headers[ev.stream_id] = h
        elif isinstance(ev, h2.events.DataReceived):
            self.body.setdefault(ev.stream_id, bytearray()).extend(ev.data)
            if self.auto_ack:
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, h2.events.StreamEnded):
            self.ended.add(ev.stream_id)
        elif isinstance(ev, h2.events.StreamReset):
            self.resets[ev.stream_id] = int(ev.error_code)
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self.goaways.append((ev.last_stream_id, int(ev.error_code)))
        elif isinstance(ev, h2.events.RemoteSettingsChanged):
            for k, v in ev.changed_settings.items():
                self.settings[int(k)] = v.new_value

    def until(self, cond, what, timeout=WAIT):
        end = time.monotonic() + timeout
        while not cond():
            left = end - time.monotonic()
            if left <= 0 or not self.pump(left):
                if cond():
                    return
                raise Fail(f"{what}: not seen (closed={self.closed}, goaways={self.goaways}, "
                           f"resets={self.resets}, statuses={self.status})")

    def fetch(self, path, extra=()):
        sid = self.get(path, extra)
        self.flush()
        self.until(lambda: sid in self.ended or sid in self.resets, f"the answer to {path}")
        if sid in self.resets:
            raise Fail(f"{path}: stream reset with code {self.resets[sid]}")
        return sid

    def close(self):
        try:
            self.conn.close_connection()
            self.flush()
        except Exception:
            pass
        self.sock.close()


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def expect_hello(c, sid):
    if c.status.get(sid) != 200 or bytes(c.body[sid]) != b"hello world\n":
        raise Fail(f"stream {sid}: {c.status.get(sid)} {bytes(c.body[sid])[:40]!r}")


# ---- cases ---------------------------------------------------------------------------------------


def case_rapid_reset(a):
    """CVE-2023-44487: a burst of requests each reset at once. A small burst leaves the
    connection serving; a large one ends it with GOAWAY ENHANCE_YOUR_CALM (0xb); a new
    connection is served either way."""
    c = Client(a)
    for _ in range(200):
        sid = c.get("/hello.txt")
        c.conn.reset_stream(sid, error_code=8)  # CANCEL
    c.flush()
    sid = c.fetch("/hello.txt")
    expect_hello(c, sid)
    c.close()
    c = Client(a)
    c.conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 100})
    burst = bytearray()
    sent = 0
    try:
        for _ in range(5000):
            sid = c.get("/hello.txt")
            c.conn.reset_stream(sid, error_code=8)
            burst += c.conn.data_to_send()
            if len(burst) > 65536:
                c.sock.sendall(bytes(burst))
                sent += len(burst)
                burst.clear()
        c.sock.sendall(bytes(burst))
    except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
        c.wdead = True  # the server already hung up on us: what follows checks why
    c.until(lambda: c.goaways or c.closed, "GOAWAY after 5000 resets")
    if not c.goaways or c.goaways[-1][1] != 0xB:
        raise Fail(f"after 5000 resets: GOAWAY {c.goaways}, closed {c.closed} (want ENHANCE_YOUR_CALM)")
    c.sock.close()
    d = Client(a)
    sid = d.fetch("/hello.txt")
    expect_hello(d, sid)
    d.close()
    print(f"ok rapid reset: 200 resets then served; 5000 resets: GOAWAY {c.goaways}; new connection served")


def case_zero_window(a):
    """A reader that opens no stream window: the head comes, no DATA frame does (RFC 9113
    §6.9.1), other streams and connections are served meanwhile, and the whole body arrives
    once the window opens."""
    c = Client(a, window=0)
    # our SETTINGS go before the request, so the server applies them first (§6.5.3)
    sid = c.get(a.path)
    c.flush()
    c.until(lambda: sid in c.status, "the head on a zero window")
    # A PING round trip: everything the server sent before its PONG has been seen.
    c.conn.ping(b"zerowin1")
    c.flush()
    got_ack = []
    orig = c.handle

    def h(ev):
        if isinstance(ev, h2.events.PingAckReceived):
            got_ack.append(ev.ping_data)
        orig(ev)

    c.handle = h
    c.until(lambda: got_ack, "PING ACK")
    if c.body[sid]:
        raise Fail(f"{len(c.body[sid])} body bytes on a zero window")
    other = Client(a)
    s2 = other.fetch("/hello.txt")
    expect_hello(other, s2)
    other.close()
    s3 = c.get("/hello.txt")  # the same connection, also at a zero window: head only
    c.flush()
    c.until(lambda: s3 in c.status, "a second head on the stalled connection")
    c.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 20})
    c.flush()
    c.until(lambda: sid in c.ended and s3 in c.ended, "the bodies once the window opened", 60)
    digest = hashlib.sha256(c.body[sid]).hexdigest()
    if a.sha256 and digest != a.sha256:
        raise Fail(f"body sha256 {digest} != {a.sha256} ({len(c.body[sid])} bytes)")
    expect_hello(c, s3)
    c.close()
    print(f"ok zero window: head only until the window opened, then {len(c.body[sid])} bytes exact")


def case_priorities(a):
    """RFC 7540 PRIORITY frames and HEADERS with priority (parsed, ignored), RFC 9218
    PRIORITY_UPDATE frames (type 0x10) and the priority field: every stream is answered,
    the connection stays up."""
    c = Client(a)
    sids = []
    for i in range(12):
        extra = [("priority", f"u={i % 8}, i")] if i % 2 else []
        sid = c.get("/hello.txt", extra, end=False)
        sids.append(sid)
        if i % 3 == 0:
            c.conn.prioritize(sid, weight=1 + i * 20, depends_on=sids[0] if i else 0, exclusive=bool(i % 2))
    c.flush()
    # PRIORITY_UPDATE on stream 0 for each request, some before their END_STREAM
    raw = b"".join(frame(0x10, 0, 0, struct.pack(">I", s) + b"u=1") for s in sids)
    # and one for a stream not opened yet (RFC 9218 §7.1: allowed)
    raw += frame(0x10, 0, 0, struct.pack(">I", sids[-1] + 2) + b"u=7")
    c.flush()
    c.send_raw(raw)
    for sid in sids:
        c.conn.end_stream(sid)
    c.flush()
    c.until(lambda: all(s in c.ended or s in c.resets for s in sids), "every prioritised answer")
    for sid in sids:
        expect_hello(c, sid)
    sid = c.fetch("/hello.txt")
    expect_hello(c, sid)
    if c.goaways:
        raise Fail(f"GOAWAY {c.goaways}")
    c.close()
    print(f"ok priorities: {len(sids) + 1} streams answered with PRIORITY, PRIORITY_UPDATE, priority fields")


def case_trailers(a):
    """A request with a body and trailers (HEADERS, DATA, HEADERS with END_STREAM): the stream
    ends cleanly, and the connection serves the next request. TE: trailers is allowed
    (§8.2.2)."""
    c = Client(a)
    sid = c.get(a.path, [("te", "trailers"), ("content-type", "text/plain")], end=False)
    c.conn.send_data(sid, b"x" * 5000)
    c.conn.send_headers(sid, [("x-checksum", "abc"), ("x-more", "1")], end_stream=True)
    c.flush()
    c.until(lambda: sid in c.ended or sid in c.resets, "the answer to a request with trailers")
    if sid in c.resets and c.resets[sid] != 0:
        raise Fail(f"reset {c.resets[sid]}")
    if c.status.get(sid) is None:
        raise Fail("no response head")
    s2 = c.fetch("/hello.txt")
    expect_hello(c, s2)
    if c.goaways:
        raise Fail(f"GOAWAY {c.goaways}")
    c.close()
    print(f"ok trailers: status {c.status[sid]}, then the next request served")


def case_shutdown(a):
    """SIGTERM while a download is in flight (held so by our window): the server sends GOAWAY
    naming our stream (or above) as processed, the download completes byte for byte, and the
    server closes the connection after it."""
    c = Client(a, window=65535)
    c.auto_ack = False
    sid = c.get(a.path)
    c.flush()
    c.until(lambda: len(c.body[sid]) >= 65535, "the first window of the download")
    os.kill(a.pid, signal.SIGTERM)
    c.until(lambda: c.goaways, "GOAWAY after SIGTERM")
    first = c.goaways[0]
    if first[1] != 0:
        raise Fail(f"GOAWAY code {first[1]}")
    # read the rest, giving the window back as we go
    c.auto_ack = True
    inc = struct.pack(">I", len(c.body[sid]))
    c.send_raw(frame(0x8, 0, 0, inc) + frame(0x8, 0, sid, inc))
    c.until(lambda: sid in c.ended, "the end of the download after GOAWAY", 60)
    digest = hashlib.sha256(c.body[sid]).hexdigest()
    if a.sha256 and digest != a.sha256:
        raise Fail(f"sha256 {digest} != {a.sha256} ({len(c.body[sid])} bytes)")
    if max(g[0] for g in c.goaways) < sid:
        raise Fail(f"GOAWAY {c.goaways} does not cover stream {sid}")
    c.until(lambda: c.closed, "the server closing the connection")
    print(f"ok shutdown: GOAWAY {c.goaways}, {len(c.body[sid])} bytes exact, then closed")


def case_settings(a):
    """The server's SETTINGS as a client sees them."""
    c = Client(a)
    sid = c.fetch("/hello.txt")
    expect_hello(c, sid)
    s = c.settings
    if s.get(3, 0) < 1 or s.get(4, 0) < 65535 or s.get(2, 0) != 0:
        raise Fail(f"SETTINGS {s}")
    c.close()
    print(f"ok settings {s}")


CASES = {
    "rapid-reset": case_rapid_reset,
    "zero-window": case_zero_window,
    "priorities": case_priorities,
    "trailers": case_trailers,
    "shutdown": case_shutdown,
    "settings": case_settings,
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=sorted(CASES))
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--tls", action="store_true")
    p.add_argument("--pid", type=int)
    p.add_argument("--sha256")
    p.add_argument("--path", default="/hello.txt")
    a = p.parse_args()
    try:
        CASES[a.case](a)
    except Fail as e:
        print(f"FAIL {a.case}: {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()
