#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# A WebSocket client over HTTP/2 (RFC 8441) built on python3-h2, for vega-serve --ws-echo
# over h2c (prior knowledge): checks the server's SETTINGS_ENABLE_CONNECT_PROTOCOL, sends the
# extended CONNECT, checks the 200 (no Sec-WebSocket-Accept), then writes masked frames by
# hand (RFC 6455 §5.2; permessage-deflate RFC 7692 when asked) and checks every echo, and the
# close handshake ending with END_STREAM. Modes:
#   echo [deflate]   text, binary, 100 KiB and (with deflate) compressed messages
#   slow             the WebSocket stream's window is left shut (its echoes unread) while a GET
#                    on another stream of the same connection must still complete
#   refused          a server without WebSocket routes: no setting, and no :protocol sent
# Prints what it saw; exits 0 only when every check passed.
import os
import socket
import struct
import sys
import time
import zlib

import h2.config
import h2.connection
import h2.events
import h2.settings

ENABLE_CONNECT_PROTOCOL = 0x8
DEADLINE = time.monotonic() + 20


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def frame(opcode, payload, rsv1=False):
    """A masked client frame (RFC 6455 §5.2, §5.3)."""
    head = bytes([0x80 | (0x40 if rsv1 else 0) | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    key = os.urandom(4)
    masked = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return head + key + masked


def parse(buf):
    """One unmasked server frame from buf: (fin, rsv1, opcode, payload, rest) or None."""
    if len(buf) < 2:
        return None
    b0, b1 = buf[0], buf[1]
    if b1 & 0x80:
        fail("a server frame was masked")
    n = b1 & 0x7F
    off = 2
    if n == 126:
        if len(buf) < 4:
            return None
        n = struct.unpack("!H", buf[2:4])[0]
        off = 4
    elif n == 127:
        if len(buf) < 10:
            return None
        n = struct.unpack("!Q", buf[2:10])[0]
        off = 10
    if len(buf) < off + n:
        return None
    return bool(b0 & 0x80), bool(b0 & 0x40), b0 & 0x0F, buf[off:off + n], buf[off + n:]


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if os.environ.get("H2_TLS"):
            # ALPN h2 over TLS to a self-signed vega-serve --tls (not verified: loopback)
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            self.sock = ctx.wrap_socket(self.sock, server_hostname="localhost")
            if self.sock.selected_alpn_protocol() != "h2":
                fail("ALPN chose %s" % self.sock.selected_alpn_protocol())
        cfg = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config=cfg)
        self.conn.initiate_connection()
        self.flush()
        self.peer_settings = None
        self.heads = {}
        self.data = {}
        self.ended = set()
        self.reset = {}
        self.hold = set()  # streams whose window we leave shut

    def flush(self):
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    def pump(self, until):
        while not until():
            if time.monotonic() > DEADLINE:
                fail("timed out")
            try:
                b = self.sock.recv(65536)
            except socket.timeout:
                fail("no answer from the server")
            if not b:
                fail("the server closed the connection")
            for ev in self.conn.receive_data(b):
                if isinstance(ev, h2.events.RemoteSettingsChanged):
                    self.peer_settings = {int(k): v.new_value for k, v in ev.changed_settings.items()}
                elif isinstance(ev, h2.events.ResponseReceived):
                    self.heads[ev.stream_id] = dict(ev.headers)
                elif isinstance(ev, h2.events.DataReceived):
                    self.data.setdefault(ev.stream_id, bytearray()).extend(ev.data)
                    if ev.stream_id in self.hold:
                        # the connection's window opens, the stream's stays shut
                        self.conn.increment_flow_control_window(ev.flow_controlled_length)
                    else:
                        self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    self.ended.add(ev.stream_id)
                elif isinstance(ev, h2.events.StreamReset):
                    self.reset[ev.stream_id] = ev.error_code
            self.flush()

    def open_ws(self, deflate):
        self.pump(lambda: self.peer_settings is not None)
        print("server ENABLE_CONNECT_PROTOCOL:", self.peer_settings.get(ENABLE_CONNECT_PROTOCOL, 0))
        hdrs = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http"),
                (":path", "/ws"), (":authority", "127.0.0.1"), ("sec-websocket-version", "13")]
        if deflate:
            hdrs.append(("sec-websocket-extensions", "permessage-deflate; client_max_window_bits"))
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, hdrs)
        self.flush()
        self.pump(lambda: sid in self.heads or sid in self.reset)
        if sid in self.reset:
            fail("the CONNECT was reset: %d" % self.reset[sid])
        h = self.heads[sid]
        print("status:", h.get(":status"), "extensions:", h.get("sec-websocket-extensions"),
              "accept:", h.get("sec-websocket-accept"))
        if h.get(":status") != "200":
            fail("status %s" % h.get(":status"))
        if "sec-websocket-accept" in h:
            fail("RFC 8441 §5: no Sec-WebSocket-Accept over HTTP/2")
        return sid, h

    def send(self, sid, data):
        # within the windows: the peer's may be smaller than our message
        while data:
            room = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            if room <= 0:
                self.pump(lambda: self.conn.local_flow_control_window(sid) > 0)
                continue
            self.conn.send_data(sid, data[:room])
            data = data[room:]
            self.flush()

    def recv_frame(self, sid):
        got = []

        def ready():
            r = parse(bytes(self.data.get(sid, b"")))
            if r:
                got.append(r)
                self.data[sid] = bytearray(r[4])
                return True
            if sid in self.ended or sid in self.reset:
                fail("the stream ended before a whole frame")
            return False

        self.pump(ready)
        return got[0][:4]

    def recv_message(self, sid):
        """A whole message (fragments joined, RFC 6455 §5.4): (rsv1, opcode, payload)."""
        fin, rsv1, op, body = self.recv_frame(sid)
        while not fin:
            fin, _, cont, more = self.recv_frame(sid)
            if cont != 0:
                fail("a fragment's opcode is %d, not continuation" % cont)
            body += more
        return rsv1, op, body


def compress(payload):
    c = zlib.compressobj(wbits=-15)
    out = c.compress(payload) + c.flush(zlib.Z_SYNC_FLUSH)
    return out[:-4] if out.endswith(b"\x00\x00\xff\xff") else out


def echo(port, deflate):
    cl = Client(port)
    sid, h = cl.open_ws(deflate)
    neg = h.get("sec-websocket-extensions") or ""
    if deflate and "permessage-deflate" not in neg:
        fail("permessage-deflate was not accepted")
    inflater = zlib.decompressobj(wbits=-15)
    msgs = [(1, "hello over h2".encode()), (1, "żółw ☃".encode()), (2, bytes(range(256))),
            (2, os.urandom(100 * 1024)), (1, b"")]
    for op, payload in msgs:
        if deflate:
            cl.send(sid, frame(op, compress(payload), rsv1=True))
        else:
            cl.send(sid, frame(op, payload))
        rsv1, rop, body = cl.recv_message(sid)
        fin = True
        if rsv1:
            # the context is kept across messages unless no_context_takeover was agreed
            body = inflater.decompress(body + b"\x00\x00\xff\xff")
        if not fin or rop != op or body != payload:
            fail("echo of %d bytes differs (op %d, rsv1 %s)" % (len(payload), rop, rsv1))
        if deflate and len(payload) > 100 and not rsv1:
            fail("the server did not compress its echo")
    print("echoed: %d" % len(msgs))
    cl.send(sid, frame(8, struct.pack("!H", 1000) + b"bye"))
    fin, rsv1, op, body = cl.recv_frame(sid)
    code = struct.unpack("!H", body[:2])[0] if len(body) >= 2 else 0
    # the server ends its side once its handler is done (RFC 8441 §5.2: its TCP FIN); it may
    # then reset ours with NO_ERROR (RFC 9113 §8.1) rather than wait for our END_STREAM
    cl.pump(lambda: sid in cl.ended or sid in cl.reset)
    if sid not in cl.reset and sid in cl.conn.streams and cl.conn.streams[sid].open:
        cl.conn.end_stream(sid)
        cl.flush()
    print("close: %d end_stream: %s reset: %s" % (code, sid in cl.ended, cl.reset.get(sid)))
    if op != 8 or code != 1000:
        fail("no close echo")
    if sid not in cl.ended:
        fail("the stream was reset, not ended: %s" % cl.reset.get(sid))


def slow(port):
    cl = Client(port)
    sid, _ = cl.open_ws(False)
    cl.hold.add(sid)
    # 1 MiB of messages whose echoes we never take: the server's send on this stream stalls on
    # our window (65535), then it stops reading, then our window to it shuts
    chunk = frame(2, b"x" * 16000)
    sent = 0
    while sent < 64 and cl.conn.local_flow_control_window(sid) >= len(chunk):
        cl.send(sid, chunk)
        sent += 1
    cl.pump(lambda: len(cl.data.get(sid, b"")) >= 60000)
    print("ws stream: %d messages sent, %d echo bytes held, its window %d" %
          (sent, len(cl.data.get(sid, b"")), cl.conn.remote_flow_control_window(sid)))
    get = cl.conn.get_next_available_stream_id()
    cl.conn.send_headers(get, [(":method", "GET"), (":scheme", "http"), (":path", "/big.bin"),
                               (":authority", "127.0.0.1")], end_stream=True)
    cl.flush()
    cl.pump(lambda: get in cl.ended or get in cl.reset)
    body = bytes(cl.data.get(get, b""))
    print("GET on stream %d: status %s, %d bytes" % (get, cl.heads[get].get(":status"), len(body)))
    want = open(sys.argv[3], "rb").read()
    if body != want:
        fail("the GET's body differs")
    if sid in cl.ended or sid in cl.reset:
        fail("the WebSocket stream did not stay open")
    print("ws stream still open")


def refused(port):
    cl = Client(port)
    cl.pump(lambda: cl.peer_settings is not None)
    v = cl.peer_settings.get(ENABLE_CONNECT_PROTOCOL, 0)
    print("server ENABLE_CONNECT_PROTOCOL:", v)
    if v:
        fail("advertised without a WebSocket route")


def main():
    port = int(sys.argv[1])
    mode = sys.argv[2]
    if mode == "echo":
        echo(port, False)
    elif mode == "deflate":
        echo(port, True)
    elif mode == "slow":
        slow(port)
    elif mode == "refused":
        refused(port)
    else:
        fail("unknown mode " + mode)
    print("OK")


main()
