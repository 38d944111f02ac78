#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-curl ws:// and wss:// (RFC 6455, RFC 7692) against vega-serve --ws-echo (text lines, a
# large binary file checked by its sha256, --max-messages, --compressed, -v, a refused upgrade,
# TLS) and against python3-websockets and node-ws echo servers, with and without
# permessage-deflate. Loopback only.

load helpers
load ws_helpers

setup_file() {
    ws_setup_file
    PORT="$(start_peer serve "$SERVE" -p 0 --ws-echo /ws "$BATS_FILE_TMPDIR/root")"
    [ -n "$PORT" ] || { cat "$BATS_FILE_TMPDIR/serve.log" >&2; return 1; }
    export WS="ws://127.0.0.1:$PORT/ws" PORT
    TPORT="$(start_peer tls "$SERVE" --tls -p 0 --ws-echo /ws "$BATS_FILE_TMPDIR/root")"
    export TPORT
    export NODE_PATH=/usr/share/nodejs # Debian's node modules
    if /usr/bin/python3 -c 'import websockets' 2>/dev/null; then
        export PY_PORT="$(start_peer py /usr/bin/python3 "$BATS_TEST_DIRNAME/ws/echo_server.py" none)"
        export PYZ_PORT="$(start_peer pyz /usr/bin/python3 "$BATS_TEST_DIRNAME/ws/echo_server.py" deflate)"
    fi
    if node -e 'require("ws")' 2>/dev/null; then
        export NODE_PORT="$(start_peer node node "$BATS_TEST_DIRNAME/ws/echo_server.js" none)"
        export NODEZ_PORT="$(start_peer nodez node "$BATS_TEST_DIRNAME/ws/echo_server.js" deflate)"
    fi
}

teardown_file() {
    stop_peers
}

@test "vega-serve: text lines and a 300 KB binary file echo whole (the Close after them)" {
    echo_both_ways "$WS"
}

@test "vega-serve: --compressed negotiates permessage-deflate; -v shows the handshake and the close code" {
    echo_both_ways "$WS" --compressed
    run timeout 20 bash -c 'echo hi | "$CURL_BIN" -v --compressed "$WS" 2>&1'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"> GET /ws HTTP/1.1"* ]]
    [[ "$output" == *"< HTTP/1.1 101"* ]]
    [[ "$output" == *"WebSocket open (permessage-deflate)"* ]]
    [[ "$output" == *"closed by the server: code 1000"* ]]
}

@test "vega-serve: --max-messages 3 closes after three echoes" {
    run timeout 20 bash -c 'printf "a\nb\nc\nd\ne\n" | "$CURL_BIN" -s --max-messages 3 "$WS"'
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "$(printf 'a\nb\nc')" ]
}

@test "a refused upgrade exits 22" {
    run timeout 20 bash -c '"$CURL_BIN" -s "ws://127.0.0.1:$PORT/nothing-here" </dev/null'
    echo "$output"
    [ "$status" -eq 22 ]
}

@test "wss:// to vega-serve --tls (-k)" {
    [ -n "$TPORT" ] || { cat "$BATS_FILE_TMPDIR/tls.log" >&2; return 1; }
    echo_both_ways "wss://127.0.0.1:$TPORT/ws" -k
}

# python3-websockets answers a Close as soon as it reads it, and its application's later sends
# fail (RFC 6455 §1.4 allows it: "no guarantee that the endpoint that has already sent a Close
# frame will continue to process data"): echoes still in flight when our Close arrives are
# lost. So here stdin stays open (a FIFO held by fd 5) and --max-messages closes after the
# echoes: the text lines (4), then 4000 bytes of the binary file (one write of at most
# PIPE_BUF bytes, so one read and one message; the large file goes to the other servers).
echo_then_close() {
    local url="$1"
    shift
    run timeout 20 bash -c 'mkfifo "$1/in" && exec 5<>"$1/in" && printf "hello\nκόσμε\n\nlast\n" >&5 &&
        "$CURL_BIN" -s --max-messages 4 "${@:3}" "$2" <"$1/in"' _ "$BATS_TEST_TMPDIR" "$url" "$@"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "$(printf 'hello\nκόσμε\n\nlast')" ]
    rm -f "$BATS_TEST_TMPDIR/in"
    timeout 20 bash -c 'mkfifo "$1/in" && exec 5<>"$1/in" && cat "$1/small" >&5 &&
        "$CURL_BIN" -s --binary --max-messages 1 "${@:3}" "$2" <"$1/in"' _ "$BATS_TEST_TMPDIR" \
        "$url" "$@" >"$BATS_TEST_TMPDIR/echo"
    [ "$(tr -d '\n' <"$BATS_TEST_TMPDIR/echo" | sha256sum)" = "$(sha256sum <"$BATS_TEST_TMPDIR/small")" ]
    rm -f "$BATS_TEST_TMPDIR/in"
}

@test "python3-websockets echo server, with and without permessage-deflate" {
    need_peer "${PY_PORT:-}" python3-websockets
    head -c 4000 "$BATS_FILE_TMPDIR/big" >"$BATS_TEST_TMPDIR/small"
    echo_then_close "ws://127.0.0.1:$PY_PORT/"
    echo_then_close "ws://127.0.0.1:$PYZ_PORT/" --compressed
    run timeout 20 bash -c 'echo hi | "$CURL_BIN" -v --compressed "ws://127.0.0.1:$PYZ_PORT/" 2>&1'
    [[ "$output" == *"(permessage-deflate)"* ]]
}

@test "node-ws echo server, with and without permessage-deflate" {
    need_peer "${NODE_PORT:-}" node-ws
    echo_both_ways "ws://127.0.0.1:$NODE_PORT/"
    echo_both_ways "ws://127.0.0.1:$NODEZ_PORT/" --compressed
    run timeout 20 bash -c 'echo hi | "$CURL_BIN" -v --compressed "ws://127.0.0.1:$NODEZ_PORT/" 2>&1'
    [[ "$output" == *"(permessage-deflate)"* ]]
}
