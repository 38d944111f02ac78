# SPDX-License-Identifier: MIT
"""An HTTP/1.1 upload sink for bench/run-upload.sh: for each request, reads the head, then
exactly Content-Length body bytes into one reused buffer, and answers 200 with "got N".
usage: upload_sink.py http|https CERT KEY   (prints the port it listens on)"""
import socket, ssl, sys

proto, cert, key = sys.argv[1:4]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(16)
print(ls.getsockname()[1], flush=True)
ctx = None
if proto == "https":
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
buf = bytearray(1 << 20)
view = memoryview(buf)
while True:
    c, _ = ls.accept()
    try:
        if ctx:
            c = ctx.wrap_socket(c, server_side=True)
        head = b""
        while b"\r\n\r\n" not in head:
            d = c.recv(65536)
            if not d:
                raise EOFError
            head += d
        h, rest = head.split(b"\r\n\r\n", 1)
        length = 0
        for line in h.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
            if k.strip().lower() == b"expect" and b"100" in v:
                c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        got = len(rest)
        while got < length:
            n = c.recv_into(view, min(len(buf), length - got))
            if n == 0:
                break
            got += n
        body = b"got %d\n" % got
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" %
                  (len(body), body))
    except (EOFError, OSError, ssl.SSLError):
        pass
    finally:
        c.close()
