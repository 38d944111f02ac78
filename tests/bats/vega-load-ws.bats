#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-load with ws:// URLs (WebSocket echo round trips) against vega-serve --ws-echo and
# python3-websockets' echo server on ephemeral loopback ports: exact -n counts, text and binary
# messages, --json, -R (corrected and uncorrected latency), wss, the close handshake, a wrong
# echo counted as mismatch, a refused handshake, usage errors; -H, --ws-protocol and
# --ws-compress checked from the server's side by node-ws (ws/load_peer.js) and
# python3-websockets, a subprotocol or an extension that was not offered, and SIGINT's close
# handshake (1001).
# Every run is bounded by -n or a -d of a second.

load helpers

setup() {
    LOAD="$(vega_bin vega-load)"
    SERVE="$(vega_bin vega-serve)"
    T="$BATS_TEST_TMPDIR"
}

teardown() {
    stop_bg_all
}

# start_serve [ARGS...]: vega-serve --ws-echo /ws on a free port; sets PORT, WS (the URL) and
# SERVE_LOG.
start_serve() {
    SERVE_LOG="$T/serve.log"
    mkdir -p "$T/root"
    start_bg "$SERVE_LOG" "$SERVE" -p 0 --no-http3 --ws-echo /ws "$@" "$T/root"
    wait_for_line "$SERVE_LOG" 'listening on' 10
    PORT="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$SERVE_LOG" | head -n1)"
    WS="ws://127.0.0.1:$PORT/ws"
}

# start_py [deflate] MODE...: python3-websockets' echo server (permessage-deflate with
# deflate; MODE: none; alter: a changed first byte; closes: "open ..." and "closed CODE" per
# connection on PY_OUT; proto=NAME: selects subprotocol NAME); sets PY (the URL).
start_py() {
    if ! command -p python3 -c 'import websockets' 2>/dev/null; then
        [ -z "${CI:-}" ] || { echo "python3-websockets missing" >&2; return 1; }
        skip "python3-websockets not installed (scripts/common.sh installs it)"
    fi
    local out="$T/py.$RANDOM.out"
    PY_OUT="$out"
    local comp=none
    if [ "${1:-}" = deflate ]; then
        comp=deflate
        shift
    fi
    command -p python3 "$BATS_TEST_DIRNAME/ws/echo_server.py" "$comp" "$@" >"$out" 2>"$out.err" 3>&- &
    VEGA_BG_PIDS+=("$!")
    wait_for_line "$out" '^listening [0-9]+$' 10
    PY="ws://127.0.0.1:$(awk '{print $2}' "$out")/"
}

# start_node ARGS...: node-ws (ws/load_peer.js ARGS); sets NODE (the URL) and NODE_OUT.
start_node() {
    export NODE_PATH=/usr/share/nodejs # Debian's node modules
    if ! node -e 'require("ws")' 2>/dev/null; then
        [ -z "${CI:-}" ] || { echo "node-ws missing" >&2; return 1; }
        skip "node-ws not installed (scripts/common.sh installs it)"
    fi
    NODE_OUT="$T/node.$RANDOM.out"
    node "$BATS_TEST_DIRNAME/ws/load_peer.js" "$@" >"$NODE_OUT" 2>"$NODE_OUT.err" 3>&- &
    VEGA_BG_PIDS+=("$!")
    wait_for_line "$NODE_OUT" '^listening [0-9]+$' 10
    NODE="ws://127.0.0.1:$(awk '/^listening/ {print $2}' "$NODE_OUT")/chat"
}

# wait_lines FILE REGEX N: until FILE has N lines matching REGEX (5 s at most); prints FILE.
wait_lines() {
    local i
    for ((i = 0; i < 100; i++)); do
        [ "$(grep -cE "$2" "$1")" -lt "$3" ] || break
        sleep 0.05
    done
    cat "$1"
}

load_run() {
    timeout 30 "$LOAD" --no-progress "$@"
}

json_check() {
    command -p python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
if not ok:
    print("failed:", sys.argv[2], "on", json.dumps(j))
sys.exit(0 if ok else 1)' "$1" "$2"
}

@test "ws: exactly -n text round trips against vega-serve --ws-echo" {
    start_serve
    run load_run -c 4 -n 1000 "$WS"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Running ws test of 1000 round trips @ $WS"* ]]
    [[ "$output" == *"1000 round trips in"* ]]
    [[ "$output" == *"Errors: connect 0, read 0, write 0, timeout 0, mismatch 0"* ]]
    [[ "$output" == *"Parse errors: 0"* ]]
}

@test "ws: --json, binary 100 KiB messages, exact counts and bytes" {
    start_serve
    load_run -c 2 -n 200 -s 100k --binary --json "$WS" >"$T/out.json"
    cat "$T/out.json"
    json_check "$T/out.json" 'j["mode"] == "ws"'
    json_check "$T/out.json" 'j["round_trips"] == 200'
    json_check "$T/out.json" 'j["bytes_sent"] == 200 * 102400'
    json_check "$T/out.json" 'j["errors"] == 0'
    json_check "$T/out.json" 'j["connects"] == 2'
    # --ws-compress, --ws-protocol and -H against vega-serve: deflate accepted (no
    # subprotocol: --ws-echo speaks none), both directions compressed on the wire.
    load_run -c 2 -n 100 --ws-compress --ws-protocol chat -H 'Origin: http://x' --json "$WS" \
        >"$T/z.json"
    cat "$T/z.json"
    json_check "$T/z.json" 'j["round_trips"] == 100'
    json_check "$T/z.json" 'j["errors"] == 0'
    json_check "$T/z.json" 'j["ws_extensions"] == "permessage-deflate"'
    json_check "$T/z.json" 'j["ws_subprotocol"] is None'
    json_check "$T/z.json" 'j["ws_wire_bytes_sent"] < j["ws_message_bytes_sent"]'
    json_check "$T/z.json" 'j["ws_wire_bytes_received"] < j["ws_message_bytes_received"]'
}

@test "ws: --body FILE is the message, text or binary, checked byte for byte" {
    start_serve
    # Random base64 text: 6 bits of entropy per byte, so deflate makes it smaller on the wire
    # whatever the bytes are; random binary does not compress, but echoes exactly.
    head -c 6000 /dev/urandom | base64 -w0 >"$T/msg.txt"
    head -c 20000 /dev/urandom >"$T/msg.bin"
    load_run -c 2 -n 20 --body "$T/msg.txt" --ws-compress --json "$WS" >"$T/t.json"
    cat "$T/t.json"
    json_check "$T/t.json" 'j["round_trips"] == 20'
    json_check "$T/t.json" 'j["errors"] == 0'
    json_check "$T/t.json" 'j["size"] == 8000'
    json_check "$T/t.json" 'j["ws_message_bytes_sent"] == 20 * 8000'
    json_check "$T/t.json" 'j["ws_wire_bytes_sent"] < j["ws_message_bytes_sent"]'
    json_check "$T/t.json" 'j["ws_wire_bytes_received"] < j["ws_message_bytes_received"]'
    load_run -c 2 -n 20 --body "$T/msg.bin" --binary --json "$WS" >"$T/b.json"
    cat "$T/b.json"
    json_check "$T/b.json" 'j["round_trips"] == 20'
    json_check "$T/b.json" 'j["errors"] == 0'
    json_check "$T/b.json" 'j["ws_message_bytes_received"] == 20 * 20000'
    # Not UTF-8 as a text message: refused before the run.
    run "$LOAD" --body "$T/msg.bin" "$WS"
    [ "$status" -eq 2 ]
    [[ "$output" == *"is not UTF-8, which a text message must be (RFC 6455 §8.1): send it with --binary"* ]]
    run "$LOAD" -s 10 --body "$T/msg.txt" "$WS"
    [ "$status" -eq 2 ]
    [[ "$output" == *"-s and --body contradict each other"* ]]
}

@test "ws: -d with -R paces the sends" {
    start_serve
    load_run -c 2 -d 1s -R 200 --json "$WS" >"$T/out.json"
    cat "$T/out.json"
    json_check "$T/out.json" 'j["errors"] == 0'
    # 200/s for a second: about 200, bounded both ways (the schedule, not the machine's speed).
    json_check "$T/out.json" 'j["round_trips"] >= 100'
    json_check "$T/out.json" 'j["round_trips"] <= 202'
    # Corrected latency in latency_us, uncorrected (from the actual send) beside it.
    json_check "$T/out.json" 'j["rate"] == 200'
    json_check "$T/out.json" 'j["latency_uncorrected_us"]["count"] == j["round_trips"]'
    run load_run -c 2 -n 20 -R 100 "$WS"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Constant rate: 100 round trips/s"* ]]
    [[ "$output" == *"uncorrected, from the actual send: p50"* ]]
}

@test "ws: exactly -n round trips against python3-websockets' echo server, text and binary" {
    start_py none
    load_run -c 3 -n 300 --json "$PY" >"$T/text.json"
    cat "$T/text.json"
    json_check "$T/text.json" 'j["round_trips"] == 300'
    json_check "$T/text.json" 'j["errors"] == 0'
    load_run -c 3 -n 300 -s 70000 --binary --json "$PY" >"$T/bin.json"
    cat "$T/bin.json"
    json_check "$T/bin.json" 'j["round_trips"] == 300'
    json_check "$T/bin.json" 'j["errors"] == 0'
}

# wait_closed N: until python3-websockets printed N "closed" lines (5 s at most).
wait_closed() {
    local i
    for ((i = 0; i < 100; i++)); do
        [ "$(grep -c '^closed' "$PY_OUT")" -lt "$1" ] || break
        sleep 0.05
    done
    cat "$PY_OUT"
}

@test "ws: every connection ends with the close handshake (python3-websockets sees 1000)" {
    start_py closes
    # -n: the connections close after the last round trip.
    load_run -c 3 -n 30 "$PY"
    wait_closed 3
    [ "$(grep -c '^closed 1000$' "$PY_OUT")" -eq 3 ]
    [ "$(grep -c '^closed' "$PY_OUT")" -eq 3 ]
    # -d: the run ends with round trips in flight; their echoes are dropped, the close is clean.
    load_run -c 2 -d 1s "$PY"
    wait_closed 5
    [ "$(grep -c '^closed 1000$' "$PY_OUT")" -eq 5 ]
    [ "$(grep -c '^closed' "$PY_OUT")" -eq 5 ]
}

@test "ws: an echo with a changed byte counts as mismatch, text and binary" {
    start_py alter
    run load_run -c 1 -d 1s --json "$PY"
    echo "$output"
    printf '%s\n' "$output" | grep '^{' >"$T/text.json"
    json_check "$T/text.json" 'j["round_trips"] == 0'
    json_check "$T/text.json" 'j["mismatch_errors"] >= 1'
    json_check "$T/text.json" 'j["errors"] == j["mismatch_errors"]'
    [ "$status" -eq 1 ]
    run load_run -c 1 -d 1s --binary --json "$PY"
    printf '%s\n' "$output" | grep '^{' >"$T/bin.json"
    json_check "$T/bin.json" 'j["mismatch_errors"] >= 1'
    json_check "$T/bin.json" 'j["round_trips"] == 0'
}

@test "ws: a path that is not a WebSocket endpoint is a refused handshake (parse error)" {
    start_serve
    run load_run -c 1 -n 10 "${WS%/ws}/nope"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"not 101"* ]]
    [[ "$output" == *"Parse errors: 1"* ]]
}

@test "wss: -k, --cacert, and a failed verification" {
    command -v openssl >/dev/null || skip "openssl (the command) is not installed"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$T/key.pem" -out "$T/cert.pem" -days 2 -subj /CN=localhost \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
    start_serve --cert "$T/cert.pem" --key "$T/key.pem"
    load_run -c 2 -n 50 -k --json "wss://127.0.0.1:$PORT/ws" >"$T/k.json"
    cat "$T/k.json"
    json_check "$T/k.json" 'j["round_trips"] == 50'
    json_check "$T/k.json" 'j["errors"] == 0'
    load_run -c 2 -n 50 --cacert "$T/cert.pem" --json "wss://localhost:$PORT/ws" >"$T/ca.json"
    json_check "$T/ca.json" 'j["round_trips"] == 50'
    json_check "$T/ca.json" 'j["errors"] == 0'
    run load_run -c 1 -n 5 "wss://localhost:$PORT/ws"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"certificate verify failed"* ]]
}

@test "ws: usage errors" {
    run "$LOAD" --tls ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"--tls is for echo mode: use a wss:// URL"* ]]
    run "$LOAD" -k ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"-k needs a wss:// URL"* ]]
    run "$LOAD" --h2 ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    run "$LOAD" --method POST ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"--method, --pipeline"*"are for HTTP mode"* ]]
    run "$LOAD" -H 'Sec-WebSocket-Protocol: x' ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"-H: Sec-WebSocket-Protocol is set by vega-load (use --ws-protocol)"* ]]
    run "$LOAD" -H 'upgrade: h2c' ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"-H: Upgrade is set by vega-load"* ]]
    run "$LOAD" -H 'Bad Name: x' ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"invalid Upgrade request"* ]]
    run "$LOAD" --ws-protocol 'a b' ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"is not a token"* ]]
    run "$LOAD" --ws-protocol a,b --ws-protocol a ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"'a' is offered twice"* ]]
    run "$LOAD" --ws-protocol 'a,,b' ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"an empty name"* ]]
    run "$LOAD" --ws-protocol "$(printf 'p%.0s' {1..129})" ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"a name over 128 bytes"* ]]
    run "$LOAD" --ws-protocol "$(seq -s, 1 17)" ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"at most 16 names"* ]]
    run "$LOAD" --ws-compress http://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"--ws-compress is for WebSocket"* ]]
    run "$LOAD" --ws-protocol chat http://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"--ws-protocol is for WebSocket"* ]]
    run "$LOAD" -c 1000 -s 16M ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"MiB of message buffers"* ]]
    run "$LOAD" --binary http://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"--binary is for WebSocket"* ]]
    run "$LOAD" --help
    [[ "$output" == *"ws://HOST:PORT/PATH"* ]]
}

@test "ws: -H, -H @FILE, --ws-protocol, --ws-compress as node-ws sees them; compressed wire bytes" {
    start_node deflate pick=chat
    printf 'X-File: from-file\r\n\r\nUser-Agent: k6-like\n' >"$T/h.txt"
    load_run -c 2 -n 50 -H 'X-Test: yes' -H @"$T/h.txt" --ws-protocol super,chat --ws-compress \
        --json "$NODE" >"$T/out.json"
    cat "$T/out.json"
    wait_lines "$NODE_OUT" '^closed' 2
    json_check "$T/out.json" 'j["round_trips"] == 50'
    json_check "$T/out.json" 'j["errors"] == 0'
    json_check "$T/out.json" 'j["ws_subprotocol"] == "chat"'
    json_check "$T/out.json" 'j["ws_extensions"] == "permessage-deflate"'
    json_check "$T/out.json" 'j["ws_deflate"]["server_max_window_bits"] == 15'
    json_check "$T/out.json" 'j["ws_deflate"]["client_no_context_takeover"] is False'
    json_check "$T/out.json" 'j["ws_message_bytes_sent"] == 50 * 64'
    json_check "$T/out.json" 'j["ws_message_bytes_received"] == 50 * 64'
    # The message repeats a 62-byte pattern and node compresses every message (threshold 0):
    # both directions are smaller on the wire than the messages, frame headers and masks
    # included.
    json_check "$T/out.json" 'j["ws_wire_bytes_sent"] < j["ws_message_bytes_sent"]'
    json_check "$T/out.json" 'j["ws_wire_bytes_received"] < j["ws_message_bytes_received"]'
    [ "$(grep -c '^open protocol=chat extensions=permessage-deflate offered=super, chat x-test=yes ua=k6-like file=from-file$' "$NODE_OUT")" -eq 2 ]
    [ "$(grep -c '^closed 1000$' "$NODE_OUT")" -eq 2 ]
    # Without --ws-compress nothing is offered: uncompressed; on the wire each message has a
    # 2-byte frame header (and the client's 4-byte mask), and the close handshake adds our
    # Close (2 + 4 + the code's 2) and the server's (2 + 2).
    load_run -c 1 -n 20 --ws-protocol other --json "$NODE" >"$T/plain.json"
    cat "$T/plain.json"
    json_check "$T/plain.json" 'j["errors"] == 0'
    json_check "$T/plain.json" 'j["ws_subprotocol"] is None'
    json_check "$T/plain.json" '"ws_extensions" not in j'
    json_check "$T/plain.json" 'j["ws_wire_bytes_sent"] == 20 * (64 + 2 + 4) + 8'
    json_check "$T/plain.json" 'j["ws_wire_bytes_received"] == 20 * (64 + 2) + 4'
    wait_lines "$NODE_OUT" '^closed' 3
    [ "$(grep -c '^open protocol= extensions= offered=other' "$NODE_OUT")" -eq 1 ]
    [ "$(grep -c '^closed 1000$' "$NODE_OUT")" -eq 3 ]
}

@test "ws: --ws-compress and --ws-protocol against python3-websockets (it asks for 12-bit windows)" {
    start_py deflate closes proto=chat
    load_run -c 2 -n 40 -s 4k --binary --ws-protocol chat --ws-compress --json "$PY" >"$T/out.json"
    cat "$T/out.json"
    wait_closed 2
    json_check "$T/out.json" 'j["round_trips"] == 40'
    json_check "$T/out.json" 'j["errors"] == 0'
    json_check "$T/out.json" 'j["ws_subprotocol"] == "chat"'
    json_check "$T/out.json" 'j["ws_deflate"]["server_max_window_bits"] == 12'
    json_check "$T/out.json" 'j["ws_deflate"]["client_max_window_bits"] == 12'
    json_check "$T/out.json" 'j["ws_wire_bytes_sent"] < j["ws_message_bytes_sent"]'
    json_check "$T/out.json" 'j["ws_wire_bytes_received"] < j["ws_message_bytes_received"]'
    [ "$(grep -c '^open subprotocol=chat extensions=permessage-deflate; server_max_window_bits=12; client_max_window_bits=12$' "$PY_OUT")" -eq 2 ]
    [ "$(grep -c '^closed 1000$' "$PY_OUT")" -eq 2 ]
    # Offered but declined: the server chose no subprotocol, which RFC 6455 allows. The text
    # report names what was negotiated once.
    run load_run -c 1 -n 5 --ws-protocol other --ws-compress "$PY"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"WebSocket: no subprotocol (the server chose none); permessage-deflate, the server answered 'permessage-deflate; server_max_window_bits=12; client_max_window_bits=12' (windows: server 12, client 12 bits; context takeover: server yes, client yes)"* ]]
    [[ "$output" == *"On the wire after the handshakes: "* ]]
}

@test "ws: a subprotocol or an extension that was not offered fails the handshake (parse error)" {
    start_node bogus=evil
    run load_run -c 1 -n 5 --ws-protocol chat "$NODE"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"handshake: the server chose subprotocol 'evil', which was not offered"* ]]
    [[ "$output" == *"Parse errors: 1"* ]]
    start_bad ext
    run load_run -c 1 -n 5 "$BAD"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"handshake: the server answered with extensions that were not offered ('permessage-deflate')"* ]]
    [[ "$output" != *"reconnecting"* ]]
    [[ "$output" == *"all 1 connection failed"* ]]
    [[ "$output" == *"Parse errors: 1"* ]]
}

# start_bad MODE: ws/bad_upgrade.py MODE; sets BAD (the URL).
start_bad() {
    local out="$T/bad.$1.out"
    command -p python3 "$BATS_TEST_DIRNAME/ws/bad_upgrade.py" "$1" >"$out" 2>"$out.err" 3>&- &
    VEGA_BG_PIDS+=("$!")
    wait_for_line "$out" '^listening [0-9]+$' 10
    BAD="ws://127.0.0.1:$(awk '{print $2}' "$out")/"
}

@test "ws: a server that breaks the protocol (a text echo not UTF-8) is a parse error that says why" {
    start_bad badutf8
    run load_run -c 1 -n 1 --timeout 1s "$BAD"
    echo "$output"
    [[ "$output" == *"WebSocket protocol error: "*"(we closed with 1007); reconnecting"* ]]
    # Without -d a connection gives up after 20 failures in a row (each one a reconnect that
    # got through the handshake and then the bad echo).
    [[ "$output" == *"Parse errors: 20"* ]]
    [ "$status" -eq 1 ]
}

# sigint_run URL ARGS...: vega-load -c 3 -d 20s in the background, SIGINT once the server
# printed 3 "open" lines into SERVER_OUT; sets status and output.
sigint_run() {
    local url="$1"
    shift
    timeout 30 "$LOAD" --no-progress -c 3 -d 20s "$@" "$url" >"$T/sig.out" 2>&1 &
    local pid=$!
    wait_lines "$SERVER_OUT" '^open' 3 >/dev/null
    kill -INT "$pid"
    status=0
    wait "$pid" || status=$?
    output="$(cat "$T/sig.out")"
}

@test "ws: SIGINT closes every connection with the close handshake, 1001 going away, then reports" {
    start_node deflate
    SERVER_OUT="$NODE_OUT"
    sigint_run "$NODE" --ws-compress
    echo "$output"
    [ "$status" -eq 130 ]
    [[ "$output" == *"Stopped early by SIGINT"* ]]
    wait_lines "$NODE_OUT" '^closed' 3
    [ "$(grep -c '^open protocol= extensions=permessage-deflate ' "$NODE_OUT")" -eq 3 ]
    [ "$(grep -c '^closed 1001$' "$NODE_OUT")" -eq 3 ]
    [ "$(grep -c '^closed' "$NODE_OUT")" -eq 3 ]
}
