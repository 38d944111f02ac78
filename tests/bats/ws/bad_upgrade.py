# SPDX-License-Identifier: MIT
# A broken WebSocket server for vega-load's tests: answers every Upgrade with a valid 101
# (right Sec-WebSocket-Accept), then
#   ext:     the 101 also carries "Sec-WebSocket-Extensions: permessage-deflate" whether or not
#            the client offered it;
#   badutf8: answers the first message with a text frame that is not UTF-8 (0xc3 0x28);
# and holds the connection until the client goes. Listens on 127.0.0.1 (a free port, printed as
# "listening PORT"). usage: python3 bad_upgrade.py ext|badutf8
import base64
import hashlib
import socket
import sys
import threading

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MODE = sys.argv[1] if len(sys.argv) > 1 else "ext"


def serve(c):
    with c:
        c.settimeout(10)
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536:
            b = c.recv(4096)
            if not b:
                return
            head += b
        key = b""
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"sec-websocket-key:"):
                key = line.split(b":", 1)[1].strip()
        acc = base64.b64encode(hashlib.sha1(key + GUID).digest())
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + acc
                  + (b"\r\nSec-WebSocket-Extensions: permessage-deflate" if MODE == "ext" else b"")
                  + b"\r\n\r\n")
        try:
            first = True
            while c.recv(4096):
                if MODE == "badutf8" and first:
                    c.sendall(b"\x81\x02\xc3\x28")
                    first = False
        except OSError:
            pass


s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print("listening", s.getsockname()[1], flush=True)
while True:
    conn, _ = s.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
