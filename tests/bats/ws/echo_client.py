# SPDX-License-Identifier: MIT
# python3-websockets as a client of vega-serve --ws-echo: messages of several kinds and sizes
# must come back unchanged; then a close with a code. usage: echo_client.py URL none|deflate
import asyncio
import sys

import websockets


async def main(url, compression):
    async with websockets.connect(url, compression=compression, max_size=2**24) as ws:
        print("extensions:", ws.response_headers.get("Sec-WebSocket-Extensions"))
        msgs = ["hello", "\u03ba\u1f79\u03c3\u03bc\u03b5", "", "x" * 200000,
                bytes(range(256)) * 300, b""]
        for m in msgs:
            await ws.send(m)
            r = await ws.recv()
            assert r == m, (type(m), len(r), len(m))
        # A message in fragments, with a ping answered between the round trips.
        await ws.send(iter(["frag", "men", "ted"]))
        assert await ws.recv() == "fragmented"
        pong = await ws.ping(b"abc")
        await asyncio.wait_for(pong, 5)
        await ws.close(code=4001, reason="done")
        print("close:", ws.close_code)


asyncio.run(main(sys.argv[1], None if sys.argv[2] == "none" else "deflate"))
