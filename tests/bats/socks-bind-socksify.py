#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Run under socksify (dante-client) for vega-proxy.bats: a listening socket whose bind, listen,
# getsockname and accept libdsocks turns into a SOCKS5 BIND through the proxy; a child without
# the preload is the peer that connects to the address getsockname gave (the proxy's), sends
# "from-peer" and a half-close, and prints what came back.
import ctypes
import os
import socket
import sys

ls = socket.socket()
ls.bind(("0.0.0.0", 0))
ls.listen(1)
host, port = ls.getsockname()
pid = os.fork()
if pid == 0:
    os.environ.pop("LD_PRELOAD", None)
    peer = (
        "import socket,sys\n"
        "c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)\n"
        "c.sendall(b'from-peer'); c.shutdown(socket.SHUT_WR)\n"
        "b = b''\n"
        "while (d := c.recv(100)): b += d\n"
        "print('peer got', b.decode(), flush=True)\n"
    )
    os.execv(sys.executable, [sys.executable, "-c", peer, host, str(port)])
# Python's socket.accept uses accept4(2), which libdsocks does not wrap: call accept(2)
libc = ctypes.CDLL(None, use_errno=True)
sa = ctypes.create_string_buffer(128)
salen = ctypes.c_uint32(128)
fd = libc.accept(ls.fileno(), sa, ctypes.byref(salen))
if fd < 0:
    sys.exit("accept: " + os.strerror(ctypes.get_errno()))
c = socket.socket(fileno=fd)
got = b""
while len(got) < 9:
    d = c.recv(100)
    if not d:
        break
    got += d
print("accepted", got.decode(), flush=True)
c.sendall(b"back")
c.close()
_, status = os.waitpid(pid, 0)
sys.exit(1 if status else 0)
