#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-load echo as a user runs it, against vega-echo on an ephemeral loopback port: usage,
# text and JSON reports, exact -n runs, refused connections, timeouts, both drivers, UDP and
# Unix sockets, large messages, SIGINT. Each run lasts a second at most.

load helpers

setup() {
    LOAD="$(vega_bin vega-load)"
    ECHO="$(vega_bin vega-echo)"
    T="$BATS_TEST_TMPDIR"
}

teardown() {
    stop_bg_all
}

# start_echo [ARGS...]: vega-echo -l ARGS in the background; sets ECHO_PORT (TCP/UDP).
start_echo() {
    local log="$T/echo.$RANDOM.log"
    start_bg "$log" "$ECHO" -l "$@"
    ECHO_PID=$BG_PID
    wait_for_line "$log" 'listening on' 10
    ECHO_PORT="$(sed -nE 's/.*listening on (udp )?[0-9.]+:([0-9]+) .*/\2/p' "$log" | head -n1)"
}

# load ARGS...: vega-load, bounded by timeout.
load_run() {
    timeout 30 "$LOAD" "$@"
}

# json_check FILE EXPR: evaluates the Python expression EXPR with j = the parsed JSON in FILE.
json_check() {
    command -p python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
if not ok:
    print("failed:", sys.argv[2], "on", json.dumps(j))
sys.exit(0 if ok else 1)' "$1" "$2"
}

# ---- usage -----------------------------------------------------------------------------------

@test "--help and --version exit 0" {
    run "$LOAD" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"Usage: vega-load echo"* ]]
    [[ "$output" == *"Examples:"* ]]
    [[ "$output" == *"--warm-up"* ]]
    run "$LOAD" echo -h
    [ "$status" -eq 0 ]
    run "$LOAD" --version
    [ "$status" -eq 0 ]
    [[ "$output" =~ ^vega-load\ [0-9]+\.[0-9]+\.[0-9]+ ]]
}

@test "bad usage exits 2 with a message" {
    local args
    for args in "" "--bogus" "-x" "echo" "nope 127.0.0.1:1" "127.0.0.1:7000" "echo 127.0.0.1" \
        "echo 127.0.0.1:0" "echo 127.0.0.1:70000" "echo a b c" "echo -c 0 127.0.0.1:1" \
        "echo -c x 127.0.0.1:1" "echo -d abc 127.0.0.1:1" "echo -d 0 127.0.0.1:1" \
        "echo -n 0 127.0.0.1:1" "echo -s 0 127.0.0.1:1" "echo -s 17M 127.0.0.1:1" \
        "echo -u -s 65508 127.0.0.1:1" "echo --timeout 0 127.0.0.1:1" "echo -t 0 127.0.0.1:1" \
        "echo --workers 2000 127.0.0.1:1" "echo --driver nope 127.0.0.1:1" \
        "echo -U /tmp/x 127.0.0.1:1" "echo -u -U /tmp/x" "echo -c" \
        "echo -c 100000 -s 64K 127.0.0.1:1"; do
        # shellcheck disable=SC2086
        run "$LOAD" $args
        if [ "$status" -ne 2 ]; then
            echo "args '$args': status $status, output: $output"
            return 1
        fi
        [[ "$output" == vega-load:* ]]
    done
    run "$LOAD" echo -s 17M 127.0.0.1:1
    [[ "$output" == *"at most 16M"* ]]
    run "$LOAD" --bogus
    [[ "$output" == *"Try 'vega-load --help'"* ]]
}

@test "h2 wants a URL; echo rejects a URL (exit 2)" {
    run "$LOAD" -c 1 -d 1s h2
    [ "$status" -eq 2 ]
    [[ "$output" == *"no URL"* ]]
    run "$LOAD" -c 1 -d 1s echo http://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"'echo' takes HOST:PORT, not a URL"* ]]
}

# ---- runs ------------------------------------------------------------------------------------

@test "echo -c 4 -d 1s: wrk-like summary, rps > 0, exit 0" {
    start_echo 127.0.0.1 0
    run load_run echo -c 4 -d 1s "127.0.0.1:$ECHO_PORT"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Running 1s echo test @ 127.0.0.1:$ECHO_PORT"* ]]
    [[ "$output" == *"1 worker and 4 connections, 64-byte messages over tcp"* ]]
    [[ "$output" == *"Latency Distribution (HdrHistogram)"* ]]
    [[ "$output" =~ 99\.9%\ +[0-9.]+(us|ms) ]]
    [[ "$output" == *"Errors: connect 0, read 0, write 0, timeout 0, mismatch 0"* ]]
    local rps
    rps="$(sed -nE 's/^Round trips\/sec: +([0-9.]+)$/\1/p' <<<"$output")"
    [ -n "$rps" ]
    [ "${rps%.*}" -gt 0 ]
    [[ "$output" =~ Transfer/sec:\ +[0-9.]+(B|KB|MB|GB) ]]
}

@test "--json: one object with rps, latency_us and errors, sane values" {
    start_echo 127.0.0.1 0
    load_run echo -c 4 -d 1s --json "127.0.0.1:$ECHO_PORT" >"$T/out.json" 2>"$T/err"
    [ ! -s "$T/err" ]
    command -p python3 -c 'import json,sys; json.load(sys.stdin)' <"$T/out.json"
    [ "$(wc -l <"$T/out.json")" -eq 1 ]
    json_check "$T/out.json" 'j["rps"] > 0 and j["round_trips"] > 0 and j["errors"] == 0'
    json_check "$T/out.json" 'all(k in j["latency_us"] for k in ("p50","p90","p99","p999","max"))'
    json_check "$T/out.json" '0 < j["latency_us"]["p50"] <= j["latency_us"]["p90"] <= j["latency_us"]["p99"] <= j["latency_us"]["p999"] <= j["latency_us"]["max"]'
    json_check "$T/out.json" 'j["latency_us"]["min"] <= j["latency_us"]["p50"] <= j["latency_us"]["max"]'
    json_check "$T/out.json" 'j["connections"] == 4 and j["size"] == 64 and j["mode"] == "echo"'
    json_check "$T/out.json" '0.9 < j["duration_s"] < 1.5 and j["connects"] == 4'
    json_check "$T/out.json" 'abs(j["bytes_per_sec"] - j["rps"] * 64) < 1 + j["rps"]'
}

@test "-n N does exactly N round trips (4 connections on 2 workers)" {
    start_echo 127.0.0.1 0
    load_run echo -c 4 -t 2 -n 1000 --json "127.0.0.1:$ECHO_PORT" >"$T/out.json"
    json_check "$T/out.json" 'j["round_trips"] == 1000 and j["workers"] == 2 and j["errors"] == 0'
    run load_run echo -c 7 -n 1k "127.0.0.1:$ECHO_PORT"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Running echo test of 1000 round trips"* ]]
    [[ "$output" == *" 1000 round trips in "* ]]
    # More connections than round trips.
    load_run echo -c 20 -n 5 --json "127.0.0.1:$ECHO_PORT" >"$T/few.json"
    json_check "$T/few.json" 'j["round_trips"] == 5'
}

@test "connection refused: exit 1 and a clear message" {
    # A port nobody listens on: start a server, note its port, stop it.
    start_echo 127.0.0.1 0
    kill "$ECHO_PID"
    wait_pid_exit "$ECHO_PID" 5
    local start end
    start=$(now_ms)
    run load_run echo -c 4 -d 5s "127.0.0.1:$ECHO_PORT"
    end=$(now_ms)
    [ "$status" -eq 1 ]
    [[ "$output" == *"vega-load: connect 127.0.0.1:$ECHO_PORT: Connection refused"* ]]
    [[ "$output" == *"all 4 connections failed"* ]]
    [ "$(grep -c 'Connection refused' <<<"$output")" -eq 1 ]
    [ $((end - start)) -lt 3000 ] # fails at once, not after -d
    load_run echo -c 2 -d 1s --json "127.0.0.1:$ECHO_PORT" >"$T/out.json" 2>/dev/null || true
    json_check "$T/out.json" 'j["round_trips"] == 0 and j["connect_errors"] == 2 and j["connections_failed"] == 2'
}

@test "a server that never echoes: timeouts counted, exit 1, bounded" {
    # Listens but never accepts: connects succeed (backlog), echoes never come.
    command -p python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True); time.sleep(30)' >"$T/port" 3>&- &
    VEGA_BG_PIDS+=("$!")
    wait_for_line "$T/port" '^[0-9]+$' 5
    local port
    port="$(cat "$T/port")"
    run load_run echo -c 2 -d 1s --timeout 200ms "127.0.0.1:$port"
    [ "$status" -eq 1 ]
    [[ "$output" == *"no complete echo within 200.00ms (--timeout); reconnecting"* ]]
    [[ "$output" =~ timeout\ [1-9] ]]
    # -n alone: connections give up after repeated failures instead of running forever.
    run load_run echo -c 2 -n 10 --timeout 20ms --json "127.0.0.1:$port"
    [ "$status" -eq 1 ]
    [[ "$output" == *'"connections_gave_up":2'* ]]
}

@test "both drivers, several workers" {
    start_echo 127.0.0.1 0
    local driver
    for driver in uring epoll; do
        run load_run echo -c 8 -t 2 -d 500ms --driver "$driver" --json "127.0.0.1:$ECHO_PORT"
        if [ "$driver" = uring ] && [[ "$output" == *"io_uring"* ]]; then
            continue # io_uring not allowed here
        fi
        [ "$status" -eq 0 ]
        echo "$output" >"$T/$driver.json"
        json_check "$T/$driver.json" "j['driver'] == '$driver' and j['rps'] > 0 and j['errors'] == 0"
    done
}

@test "UDP and Unix sockets" {
    start_echo -u 127.0.0.1 0
    load_run echo -u -c 4 -d 500ms --json "127.0.0.1:$ECHO_PORT" >"$T/udp.json"
    json_check "$T/udp.json" 'j["transport"] == "udp" and j["rps"] > 0'
    start_echo -U "$T/echo.sock"
    load_run echo -U "$T/echo.sock" -c 4 -n 500 --json >"$T/unix.json"
    json_check "$T/unix.json" 'j["transport"] == "unix" and j["round_trips"] == 500 and j["errors"] == 0'
    run load_run echo -U "$T/missing.sock" -c 2 -d 1s
    [ "$status" -eq 1 ]
    [[ "$output" == *"vega-load: connect $T/missing.sock: "* ]]
}

@test "large messages are checked byte for byte" {
    start_echo 127.0.0.1 0
    load_run echo -c 2 -n 20 -s 1M --json "127.0.0.1:$ECHO_PORT" >"$T/out.json"
    json_check "$T/out.json" 'j["round_trips"] == 20 and j["size"] == 1048576 and j["errors"] == 0'
    json_check "$T/out.json" 'j["bytes_sent"] == 20 * 1048576'
}

@test "--warm-up is not counted" {
    start_echo 127.0.0.1 0
    load_run echo -c 2 -d 500ms --warm-up 300ms --json "127.0.0.1:$ECHO_PORT" >"$T/out.json"
    json_check "$T/out.json" 'j["warm_up_s"] == 0.3 and 0.45 < j["duration_s"] < 0.8 and j["rps"] > 0'
}

@test "SIGINT stops early, reports, exits 130" {
    start_echo 127.0.0.1 0
    start_bg "$T/err" "$LOAD" echo -c 2 -d 30s "127.0.0.1:$ECHO_PORT" >"$T/out"
    local pid=$BG_PID
    sleep 0.5
    kill -INT "$pid"
    wait_pid_exit "$pid" 5
    [ "$BG_STATUS" -eq 130 ]
    grep -q 'Stopped early by SIGINT' "$T/out"
    grep -qE '^Round trips/sec: +[1-9]' "$T/out"
}
