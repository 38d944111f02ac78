#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# A TLS front for an HTTP proxy, so that it can be an https:// proxy: Python's ssl module
# (OpenSSL) terminates TLS on a free port and each connection is piped to the plain proxy.
# Prints "listening on 127.0.0.1:PORT" once ready; logs "tls ALPN" per connection.
# usage: proxy-tls-front.py CERT KEY BACKEND_PORT
import socket
import ssl
import sys
import threading

cert, key, backend = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ctx.set_alpn_protocols(["http/1.1"])
lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(64)
print(f"listening on 127.0.0.1:{lsock.getsockname()[1]}", file=sys.stderr, flush=True)


def pipe(src, dst, tls_dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
        # pass the half-close on: close_notify towards the TLS side, FIN towards the proxy
        if tls_dst:
            dst.unwrap()
        else:
            dst.shutdown(socket.SHUT_WR)
    except (OSError, ssl.SSLError):
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(raw):
    try:
        tls = ctx.wrap_socket(raw, server_side=True)
    except (OSError, ssl.SSLError) as e:
        print(f"handshake failed: {e}", file=sys.stderr, flush=True)
        raw.close()
        return
    print(f"tls {tls.selected_alpn_protocol()} {tls.version()}", file=sys.stderr, flush=True)
    back = socket.create_connection(("127.0.0.1", backend))
    t = threading.Thread(target=pipe, args=(back, tls, True), daemon=True)
    t.start()
    pipe(tls, back, False)
    t.join(timeout=60)
    back.close()
    tls.close()


while True:
    c, _ = lsock.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
