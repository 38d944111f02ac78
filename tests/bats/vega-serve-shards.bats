#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-serve --shards under vega-load: a shard killed with SIGKILL is replaced and no connection
# is refused; ten SIGHUP reloads fail no request; a stopped (SIGSTOP) shard is found by the
# watchdog and replaced; SIGTERM exits 0 with every shard gone; SIGUSR2 hands the sockets to a
# new vega-serve with no failed request, and one that cannot start changes nothing. Loopback,
# ephemeral ports.

load helpers

setup_file() {
    SERVE="$(vega_bin vega-serve)"
    LOAD="$(vega_bin vega-load)"
    export SERVE LOAD
    export ROOT="$BATS_FILE_TMPDIR/root"
    mkdir -p "$ROOT"
    printf 'hello shards\n' >"$ROOT/index.html"
}

teardown() {
    stop_bg_all
}

# start_shards LOG ARGS...: starts vega-serve --shards 2 and waits until both shards are ready;
# sets SUP (the supervisor's pid) and U.
start_shards() {
    local log="$1"
    shift
    start_bg "$log" "$SERVE" --shards 2 -p 0 "$@" "$ROOT"
    SUP=$BG_PID
    wait_for_line "$log" 'shard 1 ready' 10
    wait_for_line "$log" 'shard 0 ready' 10
    local port
    port="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$log" | head -n1)"
    U="http://127.0.0.1:$port/index.html"
}

# children PID: the shard pids of the supervisor, one per line.
children() {
    tr ' ' '\n' <"/proc/$1/task/$1/children" | sed '/^$/d'
}

# json_num FILE KEY: a top-level number of vega-load's --json output.
json_num() {
    sed -nE "s/.*\"$2\":([0-9]+).*/\1/p" "$1" | head -n1
}

# start_load OUT SECONDS: vega-load -c 8 for SECONDS, JSON into OUT; sets LOAD_PID.
start_load() {
    "$LOAD" -c 8 -d "$2" --json "$U" >"$1" 2>"$1.err" 3>&- <&0 &
    LOAD_PID=$!
    VEGA_BG_PIDS+=("$LOAD_PID")
}

@test "--shards: a shard killed with SIGKILL under load is replaced, nothing is refused" {
    local log="$BATS_TEST_TMPDIR/serve.log" out="$BATS_TEST_TMPDIR/load.json"
    start_shards "$log"
    [ "$(children "$SUP" | wc -l)" -eq 2 ]
    local victim
    victim="$(sed -nE 's/.*shard 0 started: pid ([0-9]+).*/\1/p' "$log" | head -n1)"
    start_load "$out" 3
    kill -KILL "$victim"
    wait_for_line "$log" "shard 0 pid $victim killed by SIGKILL" 5
    wait_for_line "$log" 'shard 0 restarts in 100 ms' 5
    local fresh i
    for ((i = 0; i < 100; i++)); do
        fresh="$(sed -nE 's/.*shard 0 started: pid ([0-9]+).*/\1/p' "$log" | tail -n1)"
        [ "$fresh" != "$victim" ] && grep -q "shard 0 ready: pid $fresh " "$log" && break
        sleep 0.05
    done
    [ "$fresh" != "$victim" ]
    grep -q "shard 0 ready: pid $fresh " "$log"
    children "$SUP" | grep -qx "$fresh"
    wait_pid_exit "$LOAD_PID" 20
    [ "$BG_STATUS" -eq 0 ] || [ "$BG_STATUS" -eq 1 ] || { cat "$out.err"; false; }
    # requests on the killed shard's connections may fail (at most one per connection); no
    # connection is refused, and the load went on
    [ "$(json_num "$out" connect_errors)" -eq 0 ]
    [ "$(json_num "$out" errors)" -le 8 ]
    [ "$(json_num "$out" requests)" -gt 0 ]
}

@test "--shards: ten SIGHUP reloads under load fail no request" {
    local log="$BATS_TEST_TMPDIR/serve.log" out="$BATS_TEST_TMPDIR/load.json"
    start_shards "$log"
    start_load "$out" 6
    local g
    for g in 2 3 4 5 6 7 8 9 10 11; do
        kill -HUP "$SUP"
        wait_for_line "$log" "generation $g ready, older shards drain" 10
    done
    # the reloads happened while the load ran
    kill -0 "$LOAD_PID"
    wait_pid_exit "$LOAD_PID" 20
    [ "$BG_STATUS" -eq 0 ] || { cat "$out" "$out.err"; false; }
    [ "$(json_num "$out" errors)" -eq 0 ]
    [ "$(json_num "$out" connect_errors)" -eq 0 ]
    [ "$(json_num "$out" requests)" -gt 0 ]
    # the old generations are gone: two shards left
    wait_for_line "$log" 'shard 1 pid [0-9]+ \(generation 10\) stopped' 10
    wait_for_line "$log" 'shard 0 pid [0-9]+ \(generation 10\) stopped' 10
    [ "$(children "$SUP" | wc -l)" -eq 2 ]
}

@test "--shards: a shard that stops heartbeating (SIGSTOP) is killed and replaced" {
    local log="$BATS_TEST_TMPDIR/serve.log"
    start_shards "$log" --shard-watchdog 400
    local victim
    victim="$(sed -nE 's/.*shard 1 started: pid ([0-9]+).*/\1/p' "$log" | head -n1)"
    kill -STOP "$victim"
    wait_for_line "$log" "shard 1 pid $victim sent no heartbeat in time: SIGKILL" 10
    wait_for_line "$log" "shard 1 pid $victim killed by SIGKILL" 10
    wait_for_line "$log" 'shard 1 ready: pid' 10
    curl -sf "$U" | grep -q 'hello shards'
}

@test "--shards: SIGTERM drains every shard and exits 0" {
    local log="$BATS_TEST_TMPDIR/serve.log"
    start_shards "$log"
    local kids
    kids="$(children "$SUP")"
    curl -sf "$U" | grep -q 'hello shards'
    kill -TERM "$SUP"
    wait_pid_exit "$SUP" 15
    [ "$BG_STATUS" -eq 0 ]
    local k
    for k in $kids; do
        ! kill -0 "$k" 2>/dev/null
    done
    grep -q 'SIGTERM: stopping every shard' "$log"
}

@test "--shards: SIGUSR2 upgrades the binary under load: no failed request, the new one serves" {
    local log="$BATS_TEST_TMPDIR/serve.log" out="$BATS_TEST_TMPDIR/load.json"
    start_shards "$log"
    local old_kids
    old_kids="$(children "$SUP")"
    start_load "$out" 4
    kill -USR2 "$SUP"
    wait_for_line "$log" 'upgrade: new supervisor pid [0-9]+ ready' 15
    local new
    new="$(sed -nE 's/.*upgrade: new supervisor pid ([0-9]+) ready.*/\1/p' "$log")"
    [ -n "$new" ]
    VEGA_BG_PIDS+=("$new") # killed by teardown if the test fails
    # the upgrade happened while the load ran; the old supervisor drains and exits 0
    kill -0 "$LOAD_PID"
    wait_pid_exit "$SUP" 15
    [ "$BG_STATUS" -eq 0 ]
    wait_pid_exit "$LOAD_PID" 20
    [ "$BG_STATUS" -eq 0 ] || { cat "$out" "$out.err"; false; }
    [ "$(json_num "$out" errors)" -eq 0 ]
    [ "$(json_num "$out" connect_errors)" -eq 0 ]
    [ "$(json_num "$out" requests)" -gt 0 ]
    # the old shards are gone; the new supervisor serves on the same port with its own shards
    local k
    for k in $old_kids; do
        ! kill -0 "$k" 2>/dev/null
    done
    [ "$(children "$new" | wc -l)" -eq 2 ]
    grep -q "listening on .* (inherited)" "$log"
    curl -sf "$U" | grep -q 'hello shards'
    kill -TERM "$new"
    local i
    for ((i = 0; i < 300; i++)); do
        kill -0 "$new" 2>/dev/null || break
        sleep 0.05
    done
    ! kill -0 "$new" 2>/dev/null
}

@test "--shards: an upgrade whose new vega-serve cannot start changes nothing" {
    local log="$BATS_TEST_TMPDIR/serve.log" root="$BATS_TEST_TMPDIR/root"
    cp -r "$ROOT" "$root"
    start_bg "$log" "$SERVE" --shards 2 -p 0 "$root"
    SUP=$BG_PID
    wait_for_line "$log" 'shard 1 ready' 10
    wait_for_line "$log" 'shard 0 ready' 10
    local port kids
    port="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$log" | head -n1)"
    kids="$(children "$SUP" | sort)"
    # the new one will find no DIR (the running shards hold theirs open)
    mv "$root" "$root.moved"
    kill -USR2 "$SUP"
    wait_for_line "$log" 'upgrade failed: new supervisor pid [0-9]+ did not start' 15
    kill -0 "$SUP"
    [ "$(children "$SUP" | sort)" = "$kids" ]
    curl -sf "http://127.0.0.1:$port/index.html" | grep -q 'hello shards'
    kill -TERM "$SUP"
    wait_pid_exit "$SUP" 15
    [ "$BG_STATUS" -eq 0 ]
}

@test "--shards: a first generation that cannot start is reported, not retried" {
    run "$SERVE" --shards 2 -p 0 --tls --cert /nonexistent.pem --key /nonexistent.pem "$ROOT"
    [ "$status" -ne 0 ]
}
