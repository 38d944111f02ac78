# SPDX-License-Identifier: MIT
# python3-websockets as an echo server for vega-curl's tests: listens on 127.0.0.1 (a free
# port, printed as "listening PORT"), echoes every message until killed. With "alter" it
# changes the first byte of every echo (vega-load's mismatch test); with "closes" it prints
# "closed CODE" as each connection ends (1000: the client closed with the close handshake),
# after "open subprotocol=P extensions=E" as it starts (P, E: what was negotiated, "" for none).
# proto=NAME selects subprotocol NAME when the client offers it.
# usage: python3 echo_server.py none|deflate [alter|closes] [proto=NAME]
import asyncio
import sys

import websockets


ALTER = "alter" in sys.argv[2:]
CLOSES = "closes" in sys.argv[2:]
PROTOS = [a[6:] for a in sys.argv[2:] if a.startswith("proto=")]


async def echo(ws, path=None):
    if CLOSES:
        print("open subprotocol=%s extensions=%s" % (ws.subprotocol or "",
              ws.response_headers.get("Sec-WebSocket-Extensions", "")), flush=True)
    try:
        async for m in ws:
            if ALTER and m:
                m = ("#" + m[1:]) if isinstance(m, str) else (bytes([m[0] ^ 1]) + m[1:])
            await ws.send(m)
    except websockets.ConnectionClosedOK:
        pass  # an echo's send met the client's Close: a run ends with a round trip in flight
    finally:
        if CLOSES:
            print("closed", ws.close_code, flush=True)


async def main():
    comp = "deflate" if sys.argv[1] == "deflate" else None
    async with websockets.serve(echo, "127.0.0.1", 0, compression=comp, max_size=2**24,
                                subprotocols=PROTOS or None) as srv:
        print("listening", srv.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()


asyncio.run(main())
