#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-curl's WebSocket over HTTP/2 (RFC 8441; curl itself has none): --http2 on wss:// against
# vega-serve --tls --ws-echo (an extended CONNECT on ALPN h2, echoes, permessage-deflate, a
# 300 KB file through the stream's flow control), the fall back to the HTTP/1.1 Upgrade when
# the server offers no HTTP/2, and --http2-prior-knowledge ws:// against python3-h2 as the
# server (tests/bats/ws/h2_server.py: what the CONNECT carried, echoes, a reset stream, a
# server without SETTINGS_ENABLE_CONNECT_PROTOCOL). Loopback only.

load helpers
load ws_helpers

setup_file() {
    ws_setup_file
    TPORT="$(start_peer tls "$SERVE" --tls -p 0 --ws-echo /ws "$BATS_FILE_TMPDIR/root")"
    H1PORT="$(start_peer h1 "$SERVE" --tls --no-http2 -p 0 --ws-echo /ws "$BATS_FILE_TMPDIR/root")"
    CPORT="$(start_peer h2c "$SERVE" --h2c -p 0 --ws-echo /ws "$BATS_FILE_TMPDIR/root")"
    # HTTP/2 over TLS without RFC 8441 (no WebSocket route: no SETTINGS_ENABLE_CONNECT_PROTOCOL)
    NPORT="$(start_peer nows "$SERVE" --tls -p 0 "$BATS_FILE_TMPDIR/root")"
    export TPORT H1PORT CPORT NPORT
    if /usr/bin/python3 -c 'import h2' 2>/dev/null; then
        export PY_PORT="$(start_peer py /usr/bin/python3 "$BATS_TEST_DIRNAME/ws/h2_server.py" echo)"
        export PYR_PORT="$(start_peer pyr /usr/bin/python3 "$BATS_TEST_DIRNAME/ws/h2_server.py" reset)"
        export PYN_PORT="$(start_peer pyn /usr/bin/python3 "$BATS_TEST_DIRNAME/ws/h2_server.py" nosetting)"
    fi
}

teardown_file() {
    stop_peers
}

need_h2() {
    need_peer "${PY_PORT:-}" python3-h2
}

@test "vega-serve --tls: --http2 wss:// goes as an extended CONNECT on HTTP/2 and echoes" {
    [ -n "$TPORT" ] || { cat "$BATS_FILE_TMPDIR/tls.log" >&2; return 1; }
    echo_both_ways "wss://127.0.0.1:$TPORT/ws" -k --http2
    echo_both_ways "wss://127.0.0.1:$TPORT/ws" -k --http2 --compressed
    run timeout 20 bash -c 'echo hi | "$CURL_BIN" -v -k --http2 --compressed "wss://127.0.0.1:$TPORT/ws" 2>&1'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"> CONNECT /ws HTTP/2"* ]]
    [[ "$output" == *"> :protocol: websocket"* ]]
    [[ "$output" == *"> sec-websocket-version: 13"* ]]
    [[ "$output" != *"ec-websocket-key"* ]]
    [[ "$output" == *"< HTTP/2 200"* ]]
    [[ "$output" == *"WebSocket open (permessage-deflate)"* ]]
    [[ "$output" == *"closed by the server: code 1000"* ]]
}

@test "without --http2 a wss:// URL stays an HTTP/1.1 Upgrade" {
    run timeout 20 bash -c 'echo hi | "$CURL_BIN" -v -k "wss://127.0.0.1:$TPORT/ws" 2>&1'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"> GET /ws HTTP/1.1"* ]]
    [[ "$output" == *"< HTTP/1.1 101"* ]]
}

@test "--http2 wss:// to a server without HTTP/2 falls back to the HTTP/1.1 Upgrade" {
    [ -n "$H1PORT" ] || { cat "$BATS_FILE_TMPDIR/h1.log" >&2; return 1; }
    run timeout 20 bash -c 'echo hi | "$CURL_BIN" -v -k --http2 "wss://127.0.0.1:$H1PORT/ws" 2>&1'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"> GET /ws HTTP/1.1"* ]]
    [[ "$output" == *"< HTTP/1.1 101"* ]]
    [[ "$output" == *"hi"* ]]
}

@test "--http2 wss:// to an HTTP/2 server without RFC 8441 falls back with ALPN http/1.1 alone" {
    [ -n "$NPORT" ] || { cat "$BATS_FILE_TMPDIR/nows.log" >&2; return 1; }
    run timeout 20 bash -c 'echo hi | "$CURL_BIN" -v -k --http2 "wss://127.0.0.1:$NPORT/ws" 2>&1'
    echo "$output"
    # the server has no WebSocket route: its 404 to the HTTP/1.1 Upgrade is the refusal (22)
    [ "$status" -eq 22 ]
    [[ "$output" == *"no WebSocket over HTTP/2 there"* ]]
    [[ "$output" != *"> CONNECT"* ]]
    [[ "$output" == *"> GET /ws HTTP/1.1"* ]]
    [[ "$output" == *"< HTTP/1.1 404"* ]]
    [[ "$output" == *"Refused WebSocket upgrade: 404"* ]]
}

@test "--http2-prior-knowledge ws:// to vega-serve --h2c (cleartext HTTP/2)" {
    [ -n "$CPORT" ] || { cat "$BATS_FILE_TMPDIR/h2c.log" >&2; return 1; }
    echo_both_ways "ws://127.0.0.1:$CPORT/ws" --http2-prior-knowledge
}

@test "python3-h2 server: the CONNECT's fields, echoes, and our END_STREAM after the Close" {
    need_h2
    echo_both_ways "ws://127.0.0.1:$PY_PORT/chat?x=1" --http2-prior-knowledge
    cat "$BATS_FILE_TMPDIR/py.log"
    grep -q 'request :method=CONNECT :scheme=http :authority=127.0.0.1:[0-9]* :path=/chat?x=1 :protocol=websocket .*sec-websocket-version=13' "$BATS_FILE_TMPDIR/py.log"
    ! grep -q 'sec-websocket-key' "$BATS_FILE_TMPDIR/py.log"
    grep -q '^close 1000$' "$BATS_FILE_TMPDIR/py.log"
    grep -q '^stream ended by the client$' "$BATS_FILE_TMPDIR/py.log"
    ! grep -q 'h2 error' "$BATS_FILE_TMPDIR/py.log"
}

@test "python3-h2 server: a reset stream aborts the WebSocket" {
    need_h2
    run timeout 20 bash -c 'printf "one\n" | "$CURL_BIN" -sS --http2-prior-knowledge "ws://127.0.0.1:$PYR_PORT/r" 2>&1'
    echo "$output"
    # the reset reaches the receiver (56) or, when the Close was still going out, the sender (55)
    [ "$status" -eq 56 ] || [ "$status" -eq 55 ]
    [[ "$output" == "one"* ]]
    [[ "$output" == *"reset"* ]]
}

@test "python3-h2 server without SETTINGS_ENABLE_CONNECT_PROTOCOL: a clear error, nothing sent" {
    need_h2
    run timeout 20 bash -c 'echo x | "$CURL_BIN" -sS --http2-prior-knowledge "ws://127.0.0.1:$PYN_PORT/r" 2>&1'
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"does not do WebSocket over HTTP/2"* ]]
    ! grep -q '^request' "$BATS_FILE_TMPDIR/pyn.log"
}
