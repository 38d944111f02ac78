#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-serve --ws-echo against real WebSocket clients (RFC 6455, RFC 7692): python3-websockets
# and node-ws, with and without permessage-deflate, and headless Chromium (a page served by
# vega-serve: text, non-ASCII text and binary up to 1 MiB); a plain HTTP request gets 426.
# Loopback.

load helpers

setup_file() {
    SERVE="$(vega_bin vega-serve)"
    export SERVE
    export SLOG="$BATS_FILE_TMPDIR/server.log"
    mkdir -p "$BATS_FILE_TMPDIR/root"
    ("$SERVE" -p 0 --ws-echo /ws "$BATS_FILE_TMPDIR/root" 2>"$SLOG" 3>&- </dev/null &
        echo $! >"$BATS_FILE_TMPDIR/pid")
    local i
    for ((i = 0; i < 200; i++)); do
        grep -q 'listening on' "$SLOG" 2>/dev/null && break
        sleep 0.05
    done
    PORT="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$SLOG" | head -n1)"
    [ -n "$PORT" ] || { cat "$SLOG" >&2; return 1; }
    export WS="ws://127.0.0.1:$PORT/ws"
}

teardown_file() {
    local pid
    pid="$(cat "$BATS_FILE_TMPDIR/pid" 2>/dev/null)" || return 0
    kill -KILL "$pid" 2>/dev/null || true
}

# The peers are in VEGA_APT_PACKAGES (python3-websockets, node-ws): missing, CI fails here.
need_python_websockets() {
    if ! /usr/bin/python3 -c 'import websockets' 2>/dev/null; then
        [ -z "${CI:-}" ] || { echo "python3-websockets missing" >&2; return 1; }
        skip "python3-websockets not installed (scripts/common.sh installs it)"
    fi
}

# Debian's node modules live in /usr/share/nodejs, which node does not search by itself.
export NODE_PATH=/usr/share/nodejs

need_node_ws() {
    if ! node -e 'require("ws")' 2>/dev/null; then
        [ -z "${CI:-}" ] || { echo "node-ws missing" >&2; return 1; }
        skip "node-ws not installed (scripts/common.sh installs it)"
    fi
}

@test "python3-websockets echoes through vega-serve --ws-echo" {
    need_python_websockets
    run timeout 30 /usr/bin/python3 "$BATS_TEST_DIRNAME/ws/echo_client.py" "$WS" none
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"extensions: None"* ]]
    [[ "$output" == *"close: 4001"* ]]
}

@test "python3-websockets with permessage-deflate" {
    need_python_websockets
    run timeout 30 /usr/bin/python3 "$BATS_TEST_DIRNAME/ws/echo_client.py" "$WS" deflate
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"extensions: permessage-deflate"* ]]
    [[ "$output" == *"close: 4001"* ]]
}

@test "node-ws echoes through vega-serve --ws-echo, with and without permessage-deflate" {
    need_node_ws
    run timeout 30 node "$BATS_TEST_DIRNAME/ws/echo_client.js" "$WS" none
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"close: 1000 echoed: 4"* ]]
    run timeout 30 node "$BATS_TEST_DIRNAME/ws/echo_client.js" "$WS" deflate
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"permessage-deflate"* ]]
    [[ "$output" == *"close: 1000 echoed: 4"* ]]
}

@test "a plain request to the endpoint gets 426 with the version" {
    run curl -s -i "http://127.0.0.1:${WS#ws://127.0.0.1:}"
    echo "$output"
    [[ "$output" == *"426 Upgrade Required"* ]]
    [[ "$output" == *"Sec-WebSocket-Version: 13"* ]]
}

@test "a bad Sec-WebSocket-Key is refused" {
    run curl -s -i -H 'Upgrade: websocket' -H 'Connection: Upgrade' \
        -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: short' \
        "http://127.0.0.1:${WS#ws://127.0.0.1:}"
    echo "$output"
    [[ "$output" == *"426"* ]]
    [[ "$output" != *"101"* ]]
}

@test "headless Chromium echoes text and binary messages (one of 1 MiB) through --ws-echo" {
    need_python_websockets
    if ! command -v chromium >/dev/null; then
        [ -z "${CI:-}" ] || { echo "chromium missing" >&2; return 1; }
        skip "chromium is not installed"
    fi
    cp "$BATS_TEST_DIRNAME/ws/chromium_page.html" "$BATS_FILE_TMPDIR/root/ws.html"
    # The page (ws/chromium_page.html) opens ws://HOST/ws itself, checks every echo and writes
    # its verdict into #result, which chromium_result.py reads over the DevTools protocol.
    run timeout 60 /usr/bin/python3 "$BATS_TEST_DIRNAME/ws/chromium_result.py" \
        "http://127.0.0.1:${WS#ws://127.0.0.1:}.html" "$BATS_TEST_TMPDIR/profile"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"RESULT: ok echoed 6/6 bad [] close 1000 clean true"* ]]
    # Chromium offers permessage-deflate and --ws-echo accepts it: the messages were compressed.
    [[ "$output" == *"extensions [permessage-deflate"* ]]
}
