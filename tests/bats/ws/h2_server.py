#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A WebSocket-over-HTTP/2 echo server (RFC 8441) on python3-h2, cleartext (prior knowledge),
for vega-curl's RFC 8441 client. The WebSocket frames (RFC 6455 §5) are parsed and written by
hand. Prints "listening PORT", then one line per extended CONNECT with its header fields, so a
test can check what the client sent.

Modes (argv[1]):
  echo       SETTINGS_ENABLE_CONNECT_PROTOCOL = 1; 200, then each text/binary message echoed,
             a Close answered with a Close and END_STREAM
  reset      as echo, but after the first echo the stream is reset (RST_STREAM CANCEL)
  nosetting  the setting is not sent (RFC 8441 §3: the client must not send :protocol)
"""
import socket
import struct
import sys
import threading

import h2.config
import h2.connection
import h2.events
import h2.settings

MODE = sys.argv[1] if len(sys.argv) > 1 else "echo"
LOCK = threading.Lock()


def log(line):
    with LOCK:
        print(line, flush=True)


def ws_frame(opcode, payload):
    """An unmasked server frame (FIN set)."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return head + payload


def ws_parse(buf):
    """(fin, opcode, payload, rest) of the first whole frame in buf, or None."""
    if len(buf) < 2:
        return None
    b0, b1 = buf[0], buf[1]
    n, at = b1 & 0x7F, 2
    if n == 126:
        if len(buf) < 4:
            return None
        n, at = struct.unpack("!H", buf[2:4])[0], 4
    elif n == 127:
        if len(buf) < 10:
            return None
        n, at = struct.unpack("!Q", buf[2:10])[0], 10
    if not b1 & 0x80:
        raise ValueError("client frame without a mask (RFC 6455 §5.1)")
    if len(buf) < at + 4 + n:
        return None
    mask = buf[at:at + 4]
    data = bytes(c ^ mask[i % 4] for i, c in enumerate(buf[at + 4:at + 4 + n]))
    return bool(b0 & 0x80), b0 & 0x0F, data, buf[at + 4 + n:]


class Stream:
    def __init__(self):
        self.buf = b""
        self.msg = b""
        self.op = 0
        self.echoed = 0
        self.done = False
        self.out = b""  # waiting for the peer's flow-control window (RFC 9113 §6.9)
        self.end = False  # END_STREAM once out is sent


def flush(conn, streams):
    for sid, st in streams.items():
        while st.out:
            try:
                room = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size)
            except Exception:  # the stream is gone
                st.out = b""
                break
            if room <= 0:
                break
            conn.send_data(sid, st.out[:room])
            st.out = st.out[room:]
        if st.end and not st.out:
            st.end = False
            try:
                conn.end_stream(sid)
            except Exception:
                pass


def serve(sock):
    cfg = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
    conn = h2.connection.H2Connection(config=cfg)
    if MODE != "nosetting":
        conn.local_settings = h2.settings.Settings(
            client=False,
            initial_values={h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL: 1})
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    streams = {}
    while True:
        try:
            data = sock.recv(65536)
        except OSError:
            return
        if not data:
            return
        try:
            events = conn.receive_data(data)
        except Exception as e:  # a protocol error: h2 queued its GOAWAY
            log("h2 error: %r" % (e,))
            sock.sendall(conn.data_to_send())
            return
        for ev in events:
            if isinstance(ev, h2.events.RequestReceived):
                hdrs = dict(ev.headers)
                log("request " + " ".join("%s=%s" % (k, v) for k, v in ev.headers))
                ok = (hdrs.get(":method") == "CONNECT" and hdrs.get(":protocol") == "websocket"
                      and ":scheme" in hdrs and ":path" in hdrs and ":authority" in hdrs
                      and hdrs.get("sec-websocket-version") == "13"
                      and "sec-websocket-key" not in hdrs)
                if not ok:
                    conn.send_headers(ev.stream_id, [(":status", "400")], end_stream=True)
                    continue
                conn.send_headers(ev.stream_id, [(":status", "200")])
                streams[ev.stream_id] = Stream()
            elif isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                st = streams.get(ev.stream_id)
                if st is None or st.done:
                    continue
                st.buf += ev.data
                while True:
                    f = ws_parse(st.buf)
                    if f is None:
                        break
                    fin, op, payload, st.buf = f
                    if op == 0x8:  # Close: answered, then our END_STREAM (RFC 8441 §5)
                        st.out += ws_frame(0x8, payload[:2])
                        st.end = True
                        st.done = True
                        log("close %d" % (struct.unpack("!H", payload[:2])[0]
                                          if len(payload) >= 2 else 1005))
                        break
                    if op == 0x9:  # Ping
                        st.out += ws_frame(0xA, payload)
                        continue
                    if op in (0x1, 0x2):
                        st.op, st.msg = op, payload
                    elif op == 0x0:
                        st.msg += payload
                    else:
                        continue
                    if fin:
                        st.out += ws_frame(st.op, st.msg)
                        st.echoed += 1
                        if MODE == "reset":
                            flush(conn, {ev.stream_id: st})
                            st.out = b""
                            conn.reset_stream(ev.stream_id, h2.errors.ErrorCodes.CANCEL)
                            st.done = True
                            log("reset")
                            break
            elif isinstance(ev, h2.events.StreamEnded):
                st = streams.get(ev.stream_id)
                if st is not None and not st.done:
                    st.end = True
                    st.done = True
                log("stream ended by the client")
            elif isinstance(ev, h2.events.StreamReset):
                log("stream reset by the client: %s" % ev.error_code)
        flush(conn, streams)
        out = conn.data_to_send()
        if out:
            sock.sendall(out)


def main():
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    log("listening %d" % ls.getsockname()[1])
    while True:
        s, _ = ls.accept()
        threading.Thread(target=serve, args=(s,), daemon=True).start()


if __name__ == "__main__":
    import h2.errors  # noqa: F401 (reset mode)
    main()
