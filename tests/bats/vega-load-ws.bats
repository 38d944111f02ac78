#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-load with ws:// URLs (WebSocket echo round trips) against vega-serve --ws-echo and
# python3-websockets' echo server on ephemeral loopback ports: exact -n counts, text and binary
# messages, --json, -R (corrected and uncorrected latency), wss, the close handshake, a wrong
# echo counted as mismatch, a refused handshake, usage errors.
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

# start_py MODE: python3-websockets' echo server (MODE: none; alter: a changed first byte;
# closes: "closed CODE" per connection on PY_OUT); sets PY (the URL).
start_py() {
    if ! command -p python3 -c 'import websockets' 2>/dev/null; then
        [ -z "${CI:-}" ] || { echo "python3-websockets missing" >&2; return 1; }
        skip "python3-websockets not installed (scripts/common.sh installs it)"
    fi
    local out="$T/py.$RANDOM.out"
    PY_OUT="$out"
    command -p python3 "$BATS_TEST_DIRNAME/ws/echo_server.py" none "$1" >"$out" 2>"$out.err" 3>&- &
    VEGA_BG_PIDS+=("$!")
    wait_for_line "$out" '^listening [0-9]+$' 10
    PY="ws://127.0.0.1:$(awk '{print $2}' "$out")/"
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
    run "$LOAD" -H 'A: b' ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    run "$LOAD" -c 1000 -s 16M ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"MiB of message buffers"* ]]
    run "$LOAD" --binary http://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"--binary is for WebSocket"* ]]
    run "$LOAD" --help
    [[ "$output" == *"ws://HOST:PORT/PATH"* ]]
}
