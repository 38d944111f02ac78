#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-echo as a user runs it: usage, TCP/Unix/UDP round trips, big binary transfers under both
# drivers, idle timeouts, max-conns, signals, concurrent clients. Loopback only, ephemeral ports.

load helpers

setup() {
    ECHO="$(vega_bin vega-echo)"
    T="$BATS_TEST_TMPDIR"
}

teardown() {
    stop_bg_all
}

# start_server [ARGS...]: vega-echo -l -v ARGS (port 0 unless ARGS name one) in the background;
# sets SRV_PID, SRV_LOG, SRV_PORT (TCP/UDP) from the listening line.
start_server() {
    SRV_LOG="$T/server.$RANDOM.log"
    start_bg "$SRV_LOG" "$ECHO" -l -v "$@"
    SRV_PID=$BG_PID
    wait_for_line "$SRV_LOG" 'listening on' 10
    SRV_PORT="$(sed -nE 's/.*listening on (udp )?(\[[^]]*\]|[0-9.]+):([0-9]+) .*/\3/p' "$SRV_LOG" | head -n1)"
}

# Client shorthand: bounded by timeout.
client() {
    timeout 60 "$ECHO" "$@"
}

# ---- usage ---------------------------------------------------------------------------------

@test "--help prints usage with examples and exits 0" {
    run "$ECHO" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"Usage: vega-echo"* ]]
    [[ "$output" == *"Examples:"* ]]
    [[ "$output" == *"--driver"* ]]
    run "$ECHO" -h
    [ "$status" -eq 0 ]
}

@test "--version prints the version and exits 0" {
    run "$ECHO" --version
    [ "$status" -eq 0 ]
    [[ "$output" =~ ^vega-echo\ [0-9]+\.[0-9]+\.[0-9]+ ]]
}

@test "bad usage exits 2 with a message" {
    local args
    for args in "--bogus" "-x" "" "-l" "-l 1 2 3" "-l 70000" "127.0.0.1" "127.0.0.1 port" \
        "-p 7000 127.0.0.1 7000" "--driver nope -l 0" "-w abc 127.0.0.1 7000" \
        "--workers 0 -l 0" "-m 0 -l 0" "-U" "-U /tmp/x 127.0.0.1" "-u -U /tmp/x -l" \
        "-m 5 127.0.0.1 7000" "127.0.0.1 0"; do
        # shellcheck disable=SC2086
        run "$ECHO" $args
        if [ "$status" -ne 2 ]; then
            echo "args '$args': status $status, output: $output"
            return 1
        fi
        [[ "$output" == vega-echo:* ]]
    done
    run "$ECHO" --bogus
    [[ "$output" == *"Try 'vega-echo --help'"* ]]
}

@test "--driver: a value other than uring, io_uring or epoll is a usage error naming it (echo, load, serve)" {
    run "$ECHO" --driver nope -l 0
    [ "$status" -eq 2 ]
    [[ "$output" == *"vega-echo: --driver: expected uring or epoll, got 'nope'"* ]]
    # the same words from the tools that share the parser (cli_driver_arg)
    run "$(vega_bin vega-load)" --driver nope 127.0.0.1:1
    [ "$status" -eq 2 ]
    [[ "$output" == *"vega-load: --driver: expected uring or epoll, got 'nope'"* ]]
    run "$(vega_bin vega-serve)" --driver nope -p 0 .
    [ "$status" -eq 2 ]
    [[ "$output" == *"vega-serve: --driver: expected uring or epoll, got 'nope'"* ]]
}

# ---- TCP -------------------------------------------------------------------------------------

@test "server prints the bound port and a hint; text round trip" {
    start_server 0
    [[ "$(cat "$SRV_LOG")" =~ listening\ on\ 127\.0\.0\.1:[1-9][0-9]*\ \(driver\ (uring|epoll),\ [0-9]+\ workers?\)\;\ try:\ vega-echo\ 127\.0\.0\.1\ [0-9]+ ]]
    run client 127.0.0.1 "$SRV_PORT" <<<"hello, echo"
    [ "$status" -eq 0 ]
    [ "$output" = "hello, echo" ]
    run client "127.0.0.1:$SRV_PORT" <<<"host:port form"
    [ "$status" -eq 0 ]
    [ "$output" = "host:port form" ]
    run client localhost "$SRV_PORT" <<<"by name"
    [ "$status" -eq 0 ]
    [ "$output" = "by name" ]
    wait_for_line "$SRV_LOG" 'connection from 127\.0\.0\.1:' 5
}

@test "listen forms: ADDR PORT, ADDR:PORT, -p PORT, -q" {
    start_server 127.0.0.1 0
    run client 127.0.0.1 "$SRV_PORT" <<<"a"
    [ "$output" = "a" ]
    start_server 127.0.0.1:0
    run client 127.0.0.1 "$SRV_PORT" <<<"b"
    [ "$output" = "b" ]
    start_server -p 0
    run client 127.0.0.1 "$SRV_PORT" <<<"c"
    [ "$output" = "c" ]
    # -q: no listening line
    start_bg "$T/quiet.log" "$ECHO" -l -q 0
    sleep 0.3
    kill -0 "$BG_PID"
    [ ! -s "$T/quiet.log" ]
}

@test "empty stdin: no output, exit 0" {
    start_server 0
    run client 127.0.0.1 "$SRV_PORT" </dev/null
    [ "$status" -eq 0 ]
    [ -z "$output" ]
}

roundtrip_100m() {
    local driver="$1"
    head -c 100M /dev/urandom >"$T/in.bin"
    start_bg "$T/srv.log" "$ECHO" -l -v --driver "$driver" 0
    SRV_PID=$BG_PID
    if ! wait_for_line "$T/srv.log" 'listening on' 10; then
        if grep -q runtime "$T/srv.log" && [ "$driver" = uring ]; then
            skip "io_uring not available: $(cat "$T/srv.log")"
        fi
        return 1
    fi
    grep -q "driver $driver" "$T/srv.log"
    SRV_PORT="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+) .*/\1/p' "$T/srv.log")"
    # File to file (blocking pool for stdin/stdout)...
    timeout 120 "$ECHO" --driver "$driver" 127.0.0.1 "$SRV_PORT" <"$T/in.bin" >"$T/out.bin"
    [ "$(sha256sum <"$T/in.bin")" = "$(sha256sum <"$T/out.bin")" ]
    # ... and pipe to pipe (stdin/stdout polled by the runtime), with 2 client workers.
    local sum
    sum="$(cat "$T/in.bin" | timeout 120 "$ECHO" --workers 2 --driver "$driver" 127.0.0.1 "$SRV_PORT" | sha256sum)"
    [ "$sum" = "$(sha256sum <"$T/in.bin")" ]
    wait_for_line "$T/srv.log" '104857600 bytes echoed' 5
}

@test "100 MiB binary round trip, driver uring" {
    roundtrip_100m uring
}

@test "100 MiB binary round trip, driver epoll" {
    roundtrip_100m epoll
}

@test "several concurrent clients" {
    start_server --workers 2 0
    local i pids=()
    for i in $(seq 1 8); do
        head -c $((i * 300000)) /dev/urandom >"$T/c$i.in"
        timeout 60 "$ECHO" 127.0.0.1 "$SRV_PORT" <"$T/c$i.in" >"$T/c$i.out" 2>"$T/c$i.err" 3>&- &
        pids+=($!)
    done
    for i in $(seq 1 8); do
        wait "${pids[$((i - 1))]}"
        cmp "$T/c$i.in" "$T/c$i.out"
    done
}

@test "connection refused: exit 1 with a clear message" {
    start_server 0
    local port="$SRV_PORT"
    kill -TERM "$SRV_PID"
    wait_pid_exit "$SRV_PID" 10
    run client 127.0.0.1 "$port" <<<"x"
    [ "$status" -eq 1 ]
    [[ "$output" == *"vega-echo: 127.0.0.1:$port: connect: Connection refused"* ]]
}

@test "unknown host: exit 1" {
    run client no-such-host.invalid 7 <<<"x"
    [ "$status" -eq 1 ]
    [[ "$output" == *"vega-echo: no-such-host.invalid:7:"* ]]
}

@test "IPv6 loopback with -6" {
    start_bg "$T/v6.log" "$ECHO" -l -6 0
    if ! wait_for_line "$T/v6.log" 'listening on' 5; then
        skip "no IPv6 loopback here: $(cat "$T/v6.log")"
    fi
    grep -q 'listening on \[::1\]:' "$T/v6.log"
    local port
    port="$(sed -nE 's/.*listening on \[::1\]:([0-9]+) .*/\1/p' "$T/v6.log")"
    run client -6 ::1 "$port" <<<"six"
    [ "$status" -eq 0 ]
    [ "$output" = "six" ]
    run client "[::1]:$port" <<<"bracketed"
    [ "$output" = "bracketed" ]
}

# ---- Unix sockets -------------------------------------------------------------------------

@test "Unix socket server and client" {
    local sock="$T/echo.sock"
    start_server -U "$sock"
    grep -q "listening on unix:$sock" "$SRV_LOG"
    grep -q "try: vega-echo -U $sock" "$SRV_LOG"
    [ -S "$sock" ]
    run client -U "$sock" <<<"over unix"
    [ "$status" -eq 0 ]
    [ "$output" = "over unix" ]
    head -c 5M /dev/urandom >"$T/u.in"
    client -U "$sock" <"$T/u.in" >"$T/u.out"
    cmp "$T/u.in" "$T/u.out"
    kill -TERM "$SRV_PID"
    wait_pid_exit "$SRV_PID" 10
    [ "$BG_STATUS" -eq 0 ]
    [ ! -e "$sock" ] # removed on exit
}

@test "Unix socket: a stale socket file is replaced, a live one is not" {
    local sock="$T/stale.sock"
    start_server -U "$sock"
    local first=$SRV_PID
    # A second server on a live socket fails.
    run timeout 10 "$ECHO" -l -U "$sock"
    [ "$status" -eq 1 ]
    [[ "$output" == *"Address already in use"* ]]
    # SIGKILL leaves the file behind; the next server replaces it.
    kill -KILL "$first"
    wait "$first" || true
    [ -S "$sock" ]
    # With io_uring the kernel tears a dead process's ring down asynchronously, and a poll in
    # flight keeps the listening socket alive a little longer: wait until it refuses.
    local i
    for i in $(seq 1 50); do
        run timeout 5 "$ECHO" -i 0.2 -U "$sock" </dev/null
        [[ "$output" == *"Connection refused"* ]] && break
        sleep 0.1
    done
    start_server -U "$sock"
    run client -U "$sock" <<<"fresh"
    [ "$output" = "fresh" ]
}

# ---- timeouts, limits, signals -----------------------------------------------------------

@test "-w closes an idle connection on the server" {
    start_server -w 1 0
    local t0 t1
    t0=$(now_ms)
    # stdin stays open (no EOF) for 10 s; the server's idle timeout ends the session first.
    run timeout 20 "$ECHO" 127.0.0.1 "$SRV_PORT" < <(sleep 10)
    t1=$(now_ms)
    [ "$status" -eq 0 ]
    [ $((t1 - t0)) -ge 800 ]
    [ $((t1 - t0)) -lt 6000 ]
    wait_for_line "$SRV_LOG" 'idle timeout' 5
}

@test "-i on the client gives up when nothing comes back" {
    # stdin stays open and sends nothing, so nothing comes back either.
    start_server 0
    run timeout 20 "$ECHO" -i 0.5 127.0.0.1 "$SRV_PORT" < <(sleep 10)
    [ "$status" -eq 1 ]
    [[ "$output" == *"idle timeout"* ]]
}

@test "-m limits concurrent connections" {
    start_server -m 1 0
    # The first client holds the only slot (stdin open, nothing sent). Its stdin is a pipe
    # from sleep inside the background job itself: a process substitution's fd may be gone
    # once start_bg returns, which let the holder leave early and freed the slot.
    start_bg "$T/holder.err" sh -c 'sleep 10 | timeout 30 "$1" 127.0.0.1 "$2"' sh "$ECHO" "$SRV_PORT"
    wait_for_line "$SRV_LOG" 'connection from' 5
    # The second is reset at once.
    run client 127.0.0.1 "$SRV_PORT" <<<"second"
    [ "$status" -eq 1 ]
    [[ "$output" == *"Connection reset by peer"* ]]
    wait_for_line "$SRV_LOG" 'refused, 1 connections open' 5
}

@test "SIGTERM and SIGINT stop the server with exit 0" {
    start_server 0
    kill -TERM "$SRV_PID"
    wait_pid_exit "$SRV_PID" 10
    [ "$BG_STATUS" -eq 0 ]
    grep -q 'SIGTERM, stopping' "$SRV_LOG"

    start_server 0
    # With a connection open, too: the client sees the close and exits 0 (nothing was lost).
    start_bg "$T/open.err" timeout 30 "$ECHO" 127.0.0.1 "$SRV_PORT" < <(sleep 10)
    local cpid=$BG_PID
    wait_for_line "$SRV_LOG" 'connection from' 5
    kill -INT "$SRV_PID"
    wait_pid_exit "$SRV_PID" 10
    [ "$BG_STATUS" -eq 0 ]
    wait_pid_exit "$cpid" 10
    [ "$BG_STATUS" -eq 0 ]
}

@test "SIGTERM stops a client waiting on stdin" {
    start_server 0
    start_bg "$T/c.err" "$ECHO" 127.0.0.1 "$SRV_PORT" < <(sleep 10)
    local cpid=$BG_PID
    wait_for_line "$SRV_LOG" 'connection from' 5
    kill -TERM "$cpid"
    wait_pid_exit "$cpid" 10
    [ "$BG_STATUS" -eq 143 ]
}

# ---- UDP -----------------------------------------------------------------------------------

@test "UDP echo" {
    start_server -u 0
    grep -q 'listening on udp 127\.0\.0\.1:' "$SRV_LOG"
    grep -q 'try: vega-echo -u 127\.0\.0\.1 ' "$SRV_LOG"
    run client -u 127.0.0.1 "$SRV_PORT" <<<"datagram"
    [ "$status" -eq 0 ]
    [ "$output" = "datagram" ]
    head -c 1M /dev/urandom >"$T/d.in"
    client -u 127.0.0.1 "$SRV_PORT" <"$T/d.in" >"$T/d.out"
    cmp "$T/d.in" "$T/d.out"
}

@test "UDP client without a server: exit 1" {
    start_server -u 0
    local port="$SRV_PORT"
    kill -TERM "$SRV_PID"
    wait_pid_exit "$SRV_PID" 10
    run client -u -w 1 127.0.0.1 "$port" <<<"lost"
    [ "$status" -eq 1 ]
    [[ "$output" == vega-echo:* ]]
}
