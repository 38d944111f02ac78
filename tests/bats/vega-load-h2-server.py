#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# A cleartext HTTP/2 server (prior knowledge) on Python's h2 library (Debian's python3-h2) that
# misbehaves on purpose, for vega-load's HTTP/2 tests: it answers every request with 200 and a
# small body, and in some modes refuses, resets or stops. One connection at a time, loopback,
# port 0: it prints "listening on PORT" on stderr.
#
# usage: vega-load-h2-server.py MODE [FILE]
#   record  append each request's header fields (name: value lines, then a blank line) to FILE
#   refuse  RST_STREAM REFUSED_STREAM on every third stream (§8.7: not processed)
#   reset   RST_STREAM INTERNAL_ERROR on every fourth stream
#   goaway  GOAWAY NO_ERROR after five responses on each connection, then close it
#   limit   SETTINGS_MAX_CONCURRENT_STREAMS 2
import socket
import sys

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings

mode = sys.argv[1]
out = sys.argv[2] if len(sys.argv) > 2 else None
BODY = b"hello from h2\n"


def serve(c):
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    if mode == "limit":
        conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 2})
    c.sendall(conn.data_to_send())
    seen = answered = 0
    while True:
        data = c.recv(65536)
        if not data:
            return
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.RequestReceived):
                seen += 1
                sid = ev.stream_id
                if out:
                    with open(out, "a") as f:
                        for k, v in ev.headers:
                            f.write("%s: %s\n" % (k.decode(), v.decode()))
                        f.write("\n")
                if mode == "refuse" and seen % 3 == 0:
                    conn.reset_stream(sid, h2.errors.ErrorCodes.REFUSED_STREAM)
                    continue
                if mode == "reset" and seen % 4 == 0:
                    conn.reset_stream(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
                    continue
                conn.send_headers(sid, [(":status", "200"), ("content-length", str(len(BODY)))])
                conn.send_data(sid, BODY, end_stream=True)
                answered += 1
                if mode == "goaway" and answered == 5:
                    conn.close_connection(last_stream_id=sid)
                    c.sendall(conn.data_to_send())
                    return
            elif isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.ConnectionTerminated):
                c.sendall(conn.data_to_send())
                return
        c.sendall(conn.data_to_send())


s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
print("listening on", s.getsockname()[1], file=sys.stderr, flush=True)
while True:
    c, _ = s.accept()
    try:
        serve(c)
    except Exception as e:  # a client that went away mid-frame: on to the next one
        print("connection ended:", repr(e), file=sys.stderr, flush=True)
    finally:
        c.close()
