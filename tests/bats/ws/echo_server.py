# SPDX-License-Identifier: MIT
# python3-websockets as an echo server for vega-curl's tests: listens on 127.0.0.1 (a free
# port, printed as "listening PORT"), echoes every message until killed.
# usage: python3 echo_server.py none|deflate
import asyncio
import sys

import websockets


async def echo(ws, path=None):
    async for m in ws:
        await ws.send(m)


async def main():
    comp = "deflate" if sys.argv[1] == "deflate" else None
    async with websockets.serve(echo, "127.0.0.1", 0, compression=comp, max_size=2**24) as srv:
        print("listening", srv.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()


asyncio.run(main())
