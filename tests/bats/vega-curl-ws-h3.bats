#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-curl's WebSocket over HTTP/3 (RFC 9220; curl itself has none): --http3-only and --http3
# on wss:// against vega-serve --tls --ws-echo (an extended CONNECT on a QUIC request stream,
# echoes, permessage-deflate, a 300 KB file through the stream's flow control), a server
# without SETTINGS_ENABLE_CONNECT_PROTOCOL (--http3-only: a clear error; --http3: the HTTP/1.1
# Upgrade instead), a server without HTTP/3 (--http3: QUIC cannot connect, the HTTP/1.1 Upgrade
# over TCP instead, as browsers do), and ws:// (HTTP/3 is https only). No other HTTP/3 WebSocket
# peer is in Debian 12 (python3-aioquic is not packaged). Loopback only.

load helpers
load ws_helpers

setup_file() {
    ws_setup_file
    export PEER_READY='HTTP/3 on udp' # the QUIC listener is up too
    TPORT="$(start_peer tls "$SERVE" --tls -p 0 --ws-echo /ws "$BATS_FILE_TMPDIR/root")"
    # HTTP/3 without RFC 9220 (no WebSocket route: no SETTINGS_ENABLE_CONNECT_PROTOCOL)
    NPORT="$(start_peer nows "$SERVE" --tls -p 0 "$BATS_FILE_TMPDIR/root")"
    # no HTTP/3 at all (nothing on the UDP port): QUIC cannot connect
    UPORT="$(PEER_READY=listening start_peer noh3 "$SERVE" --tls --no-http3 -p 0 --ws-echo /ws \
        "$BATS_FILE_TMPDIR/root")"
    export TPORT NPORT UPORT
}

teardown_file() {
    stop_peers
}

@test "vega-serve --tls --ws-echo: --http3-only wss:// is an extended CONNECT on HTTP/3 and echoes" {
    [ -n "$TPORT" ] || { cat "$BATS_FILE_TMPDIR/tls.log" >&2; return 1; }
    echo_both_ways "wss://127.0.0.1:$TPORT/ws" -k --http3-only
    echo_both_ways "wss://127.0.0.1:$TPORT/ws" -k --http3-only --compressed
    run timeout 20 bash -c 'echo hi | "$CURL_BIN" -v -k --http3-only --compressed "wss://127.0.0.1:$TPORT/ws" 2>&1'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"> CONNECT /ws HTTP/3"* ]]
    [[ "$output" == *"> :protocol: websocket"* ]]
    [[ "$output" == *"> sec-websocket-version: 13"* ]]
    [[ "$output" != *"ec-websocket-key"* ]]
    [[ "$output" == *"< HTTP/3 200"* ]]
    [[ "$output" == *"WebSocket open (permessage-deflate)"* ]]
    [[ "$output" == *"closed by the server: code 1000"* ]]
}

@test "--http3 wss:// goes over HTTP/3 too" {
    run timeout 20 bash -c 'echo hi | "$CURL_BIN" -v -k --http3 "wss://127.0.0.1:$TPORT/ws" 2>&1'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"> CONNECT /ws HTTP/3"* ]]
    [[ "$output" == *"hi"* ]]
}

@test "--http3-only to an HTTP/3 server without RFC 9220: a clear error, nothing sent" {
    [ -n "$NPORT" ] || { cat "$BATS_FILE_TMPDIR/nows.log" >&2; return 1; }
    run timeout 20 bash -c 'echo x | "$CURL_BIN" -v -k --http3-only "wss://127.0.0.1:$NPORT/ws" 2>&1'
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"does not do WebSocket over HTTP/3"* ]]
    [[ "$output" != *"> CONNECT"* ]]
}

@test "--http3 to an HTTP/3 server without RFC 9220 falls back to the HTTP/1.1 Upgrade" {
    run timeout 20 bash -c 'echo x | "$CURL_BIN" -v -k --http3 "wss://127.0.0.1:$NPORT/ws" 2>&1'
    echo "$output"
    # the server has no WebSocket route: its 404 to the HTTP/1.1 Upgrade is the refusal (22)
    [ "$status" -eq 22 ]
    [[ "$output" != *"> CONNECT"* ]]
    [[ "$output" == *"> GET /ws HTTP/1.1"* ]]
    [[ "$output" == *"< HTTP/1.1 404"* ]]
}

@test "--http3 wss:// to a server without HTTP/3 falls back to TCP (the HTTP/1.1 Upgrade) and echoes" {
    [ -n "$UPORT" ] || { cat "$BATS_FILE_TMPDIR/noh3.log" >&2; return 1; }
    echo_both_ways "wss://127.0.0.1:$UPORT/ws" -k --http3
    run timeout 20 bash -c 'echo hi | "$CURL_BIN" -v -k --http3 "wss://127.0.0.1:$UPORT/ws" 2>&1'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"no WebSocket over HTTP/3 there"*"HTTP/1.1 Upgrade over TCP instead"* ]]
    [[ "$output" != *"> CONNECT"* ]]
    [[ "$output" == *"> GET /ws HTTP/1.1"* ]]
    [[ "$output" == *"< HTTP/1.1 101"* ]]
    [[ "$output" == *"hi"* ]]
    # UDP that swallows datagrams (no ICMP error, as a firewall's drop): QUIC never answers,
    # TCP takes over after QUIC's head start
    /usr/bin/python3 -c 'import socket,sys,time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(sys.argv[1])))
print("bound", flush=True)
time.sleep(30)' "$UPORT" >"$BATS_TEST_TMPDIR/udp.log" 3>&- &
    local sink=$!
    local i
    for ((i = 0; i < 100; i++)); do
        grep -q bound "$BATS_TEST_TMPDIR/udp.log" && break
        sleep 0.05
    done
    run timeout 20 bash -c 'echo hi | "$CURL_BIN" -v -k --http3 "wss://127.0.0.1:$UPORT/ws" 2>&1'
    kill "$sink" 2>/dev/null || true
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"HTTP/1.1 Upgrade over TCP instead"* ]]
    [[ "$output" == *"hi"* ]]
    # --http3-only does not fall back
    run timeout 20 bash -c 'echo hi | "$CURL_BIN" -sS -k --http3-only "wss://127.0.0.1:$UPORT/ws" 2>&1'
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" != *"hi"* ]]
}

@test "--http3-only ws:// is refused (HTTP/3 is for https)" {
    run timeout 20 bash -c 'echo x | "$CURL_BIN" -sS --http3-only "ws://127.0.0.1:$TPORT/ws" 2>&1'
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"HTTP/3 is for wss:// only"* ]]
}
