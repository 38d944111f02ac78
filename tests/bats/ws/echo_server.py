# SPDX-License-Identifier: MIT
# python3-websockets as an echo server for vega-curl's tests: listens on 127.0.0.1 (a free
# port, printed as "listening PORT"), echoes every message until killed. With "alter" it
# changes the first byte of every echo (vega-load's mismatch test); with "closes" it prints
# "closed CODE" as each connection ends (1000: the client closed with the close handshake).
# usage: python3 echo_server.py none|deflate [alter|closes]
import asyncio
import sys

import websockets


ALTER = len(sys.argv) > 2 and sys.argv[2] == "alter"


async def echo(ws, path=None):
    try:
        async for m in ws:
            if ALTER and m:
                m = ("#" + m[1:]) if isinstance(m, str) else (bytes([m[0] ^ 1]) + m[1:])
            await ws.send(m)
    finally:
        # Also when an echo's send meets the client's Close (ConnectionClosedOK): a run that
        # ends with a round trip in flight closes while the echo is being sent.
        if len(sys.argv) > 2 and sys.argv[2] == "closes":
            print("closed", ws.close_code, flush=True)


async def main():
    comp = "deflate" if sys.argv[1] == "deflate" else None
    async with websockets.serve(echo, "127.0.0.1", 0, compression=comp, max_size=2**24) as srv:
        print("listening", srv.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()


asyncio.run(main())
