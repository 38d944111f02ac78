# SPDX-License-Identifier: MIT
# Headless Chromium opens URL and this script reads the page's #result text over the DevTools
# protocol (a WebSocket, python3-websockets) until it no longer says "pending", then prints it.
# --dump-dom cannot wait for a WebSocket page: it dumps at the load event, and with
# --virtual-time-budget virtual time runs ahead of the network. Bounded: 45 s in all.
# usage: python3 chromium_result.py URL PROFILE_DIR [CHROMIUM_FLAG...]
import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request

import websockets

URL, PROFILE, FLAGS = sys.argv[1], sys.argv[2], sys.argv[3:]
EXPR = "(document.getElementById('result') || {}).textContent || ''"


async def main():
    proc = subprocess.Popen(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--user-data-dir=" + PROFILE, "--remote-debugging-port=0"] + FLAGS + [URL],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(PROFILE + ".log"), "w"))
    end = time.monotonic() + 45
    try:
        port_file = os.path.join(PROFILE, "DevToolsActivePort")
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if time.monotonic() > end or proc.poll() is not None:
                sys.exit("chromium did not start its DevTools endpoint")
            await asyncio.sleep(0.05)
        port = open(port_file).read().split()[0]
        page = None
        while page is None:
            if time.monotonic() > end:
                sys.exit("no page target")
            with urllib.request.urlopen("http://127.0.0.1:%s/json/list" % port) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            page = next((t for t in pages if t.get("url", "").startswith(URL)), None)
            await asyncio.sleep(0.05)
        async with websockets.connect(page["webSocketDebuggerUrl"], max_size=2**24) as ws:
            n = 0
            text = ""
            while time.monotonic() < end:
                n += 1
                await ws.send(json.dumps({"id": n, "method": "Runtime.evaluate",
                                          "params": {"expression": EXPR}}))
                while True:
                    m = json.loads(await asyncio.wait_for(ws.recv(), end - time.monotonic()))
                    if m.get("id") == n:
                        break
                text = m.get("result", {}).get("result", {}).get("value", "")
                if text.startswith("RESULT:") and "pending" not in text:
                    break
                await asyncio.sleep(0.1)
            print(text)
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


asyncio.run(main())
