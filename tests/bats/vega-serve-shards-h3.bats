#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-serve --shards with HTTP/3: one UDP socket per shard and generation in one SO_REUSEPORT
# group, steered by the first byte of the server's connection IDs (docs/ARCHITECTURE.md,
# "Sharded HTTP/3"). Many connections succeed and land on both shards; a shard killed under
# load is replaced and new connections succeed; SIGHUP reloads under load fail no request; a
# download started before a reload finishes after it, intact; a SIGUSR2 binary upgrade under
# load fails no request. Loopback, ephemeral ports.

load helpers

setup_file() {
    SERVE="$(vega_bin vega-serve)"
    LOAD="$(vega_bin vega-load)"
    CURL="$(vega_bin vega-curl)"
    export SERVE LOAD CURL
    export ROOT="$BATS_FILE_TMPDIR/root"
    mkdir -p "$ROOT"
    printf 'hello shards\n' >"$ROOT/index.html"
    head -c 3000000 /dev/urandom >"$ROOT/big.bin"
}

teardown() {
    stop_bg_all
}

# start_shards LOG ARGS...: vega-serve --shards 2 --tls (HTTP/3 on the same port), both shards
# ready; sets SUP (the supervisor's pid), PORT and U (the small file's URL).
start_shards() {
    local log="$1"
    shift
    start_bg "$log" "$SERVE" --shards 2 --tls -p 0 "$@" "$ROOT"
    SUP=$BG_PID
    wait_for_line "$log" 'shard 1 ready' 10
    wait_for_line "$log" 'shard 0 ready' 10
    PORT="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$log" | head -n1)"
    grep -q "HTTP/3 on udp 127.0.0.1:$PORT (6 sockets" "$log"
    U="https://127.0.0.1:$PORT/index.html"
}

children() {
    tr ' ' '\n' <"/proc/$1/task/$1/children" | sed '/^$/d'
}

json_num() {
    sed -nE "s/.*\"$2\":([0-9]+).*/\1/p" "$1" | head -n1
}

# start_load OUT SECONDS: vega-load --h3 -c 8 for SECONDS, JSON into OUT; sets LOAD_PID.
start_load() {
    "$LOAD" --h3 -k -c 8 -d "$2" --json "$U" >"$1" 2>"$1.err" 3>&- <&0 &
    LOAD_PID=$!
    VEGA_BG_PIDS+=("$LOAD_PID")
}

# cid_bytes DIR: the first byte (hex) of each server trace's first connection ID, one a line.
cid_bytes() {
    local f
    for f in "$1"/*_server.sqlog; do
        sed -nE 's/.*"initial_source_connection_id":"(..)[0-9a-f]*".*/\1/p' "$f" | head -n1
    done
}

@test "--shards 2 --tls: HTTP/3 connections all succeed and land on both shards" {
    local log="$BATS_TEST_TMPDIR/serve.log" out="$BATS_TEST_TMPDIR/load.json"
    local q="$BATS_TEST_TMPDIR/qlog"
    mkdir -p "$q"
    start_shards "$log" --qlog-dir "$q" --metrics 127.0.0.1:0
    run "$LOAD" --h3 -k -c 32 -n 640 --json "$U"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    echo "$output" >"$out"
    [ "$(json_num "$out" requests)" -eq 640 ]
    [ "$(json_num "$out" errors)" -eq 0 ]
    [ "$(json_num "$out" connect_errors)" -eq 0 ]
    # generation 1 serves sockets 2 and 3 (set 1 of 3): shard 0's IDs start with 02, shard 1's
    # with 03. Each trace is written by the shard that took the connection: both did (32
    # connections hashed over 2 shards all on one: 2^-31).
    cid_bytes "$q" | sort | uniq -c
    [ "$(cid_bytes "$q" | wc -l)" -eq 32 ]
    [ "$(cid_bytes "$q" | grep -vcE '^0[23]$')" -eq 0 ]
    cid_bytes "$q" | grep -qx 02
    cid_bytes "$q" | grep -qx 03
    # one HTTP/3 request with vega-curl, and the QUIC counters summed over the shards
    "$CURL" -sk --http3-only "$U" | grep -q 'hello shards'
    local m
    m="$(sed -nE 's|.*metrics on (http://[^ ]+/metrics).*|\1|p' "$log" | head -n1)"
    [ -n "$m" ]
    # (the other shard's counters are its copy of at most 100 ms ago: poll, bounded)
    local acc i
    for ((i = 0; i < 40; i++)); do
        "$CURL" -s "$m" >"$BATS_TEST_TMPDIR/metrics"
        acc="$(sed -nE 's/^vega_quic_connections_accepted_total ([0-9]+)$/\1/p' \
            "$BATS_TEST_TMPDIR/metrics")"
        [ "$acc" = 33 ] && break
        sleep 0.05
    done
    [ "$acc" -eq 33 ] || { grep vega_quic_conn "$BATS_TEST_TMPDIR/metrics"; false; }
}

@test "--shards 2 --tls: a shard killed under HTTP/3 load is replaced, new connections succeed" {
    local log="$BATS_TEST_TMPDIR/serve.log" out="$BATS_TEST_TMPDIR/load.json"
    start_shards "$log"
    local victim
    victim="$(sed -nE 's/.*shard 0 started: pid ([0-9]+).*/\1/p' "$log" | head -n1)"
    start_load "$out" 3
    sleep 0.5 # let the load reach both shards before the kill (not an ordering the test needs)
    kill -KILL "$victim"
    wait_for_line "$log" "shard 0 pid $victim killed by SIGKILL" 5
    local fresh i
    for ((i = 0; i < 100; i++)); do
        fresh="$(sed -nE 's/.*shard 0 started: pid ([0-9]+).*/\1/p' "$log" | tail -n1)"
        [ "$fresh" != "$victim" ] && grep -q "shard 0 ready: pid $fresh " "$log" && break
        sleep 0.05
    done
    [ "$fresh" != "$victim" ]
    grep -q "shard 0 ready: pid $fresh " "$log"
    wait_pid_exit "$LOAD_PID" 30
    [ "$BG_STATUS" -eq 0 ] || [ "$BG_STATUS" -eq 1 ] || { cat "$out" "$out.err"; false; }
    # the killed shard's connections are lost (their requests fail, at most the ones in
    # flight: 1 per connection); the load went on
    [ "$(json_num "$out" errors)" -le 8 ] || { cat "$out"; false; }
    [ "$(json_num "$out" requests)" -gt 0 ]
    # new connections, hashed over both shards, all succeed (the fresh shard serves socket 2)
    run "$LOAD" --h3 -k -c 16 -n 160 --json "$U"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    echo "$output" >"$out"
    [ "$(json_num "$out" errors)" -eq 0 ]
    [ "$(json_num "$out" connect_errors)" -eq 0 ]
    [ "$(json_num "$out" requests)" -eq 160 ]
}

@test "--shards 2 --tls: five SIGHUP reloads under HTTP/3 load fail no request" {
    local log="$BATS_TEST_TMPDIR/serve.log" out="$BATS_TEST_TMPDIR/load.json"
    start_shards "$log"
    start_load "$out" 5
    local g
    for g in 2 3 4 5 6; do
        kill -HUP "$SUP"
        wait_for_line "$log" "generation $g ready, older shards drain" 10
    done
    kill -0 "$LOAD_PID"
    wait_pid_exit "$LOAD_PID" 30
    [ "$BG_STATUS" -eq 0 ] || { cat "$out" "$out.err"; false; }
    [ "$(json_num "$out" errors)" -eq 0 ] || { cat "$out" "$out.err"; false; }
    [ "$(json_num "$out" connect_errors)" -eq 0 ]
    [ "$(json_num "$out" requests)" -gt 0 ]
    # each old shard told its connections (RFC 9114 §5.2); what it did not process was retried
    # (h3.requests_retried, any count), never an error
    [ "$(json_num "$out" goaway_received)" -gt 0 ]
    [ -n "$(json_num "$out" requests_retried)" ]
    # generation 6 (set 0) takes new connections
    "$CURL" -sk --http3-only "$U" | grep -q 'hello shards'
}

@test "--shards 2 --tls: an HTTP/3 download started before a SIGHUP goes on after it" {
    local log="$BATS_TEST_TMPDIR/serve.log" got="$BATS_TEST_TMPDIR/big.out"
    start_shards "$log" -v
    # 3 MB read at 1.5 MB/s: about 2 s. The client's flow control window (256 KiB at first)
    # keeps the server's handler from sending much ahead of what vega-curl read, so the
    # server can only finish the response if the client's acknowledgements and window updates
    # still reach the old shard's socket after the new generation took over.
    "$CURL" -sSk --http3-only --limit-rate 1500000 -o "$got" "https://127.0.0.1:$PORT/big.bin" \
        2>"$got.err" 3>&- <&0 &
    local pid=$!
    VEGA_BG_PIDS+=("$pid")
    local i
    for ((i = 0; i < 100; i++)); do
        [ -s "$got" ] && break
        sleep 0.02
    done
    [ -s "$got" ] # the download is under way
    kill -HUP "$SUP"
    wait_for_line "$log" 'generation 2 ready, older shards drain' 10
    local at_switch
    at_switch="$(stat -c %s "$got")"
    kill -0 "$pid" # still downloading after the switch
    [ "$at_switch" -lt 2000000 ]
    wait_pid_exit "$pid" 20
    # the old shard sent the whole response (its access log line), after the switch
    wait_for_line "$log" '"GET /big.bin HTTP/3" 200 3000000 ' 10
    [ "$(stat -c %s "$got")" -gt "$at_switch" ]
    # the old shard, its response acknowledged, closes the connection (H3_NO_ERROR) while
    # vega-curl still has the last window to read at its limited rate: what QUIC received is
    # still the response's (the client keeps it past the connection's end), so the download
    # completes, every byte the file's
    [ "$BG_STATUS" -eq 0 ] || { cat "$got.err"; false; }
    cmp "$got" "$ROOT/big.bin"
    # a new connection goes to generation 2
    "$CURL" -sk --http3-only "$U" | grep -q 'hello shards'
}

@test "--shards 2 --tls: SIGUSR2 upgrades the binary under HTTP/3 load: no failed request" {
    local log="$BATS_TEST_TMPDIR/serve.log" out="$BATS_TEST_TMPDIR/load.json"
    local q="$BATS_TEST_TMPDIR/qlog"
    mkdir -p "$q"
    start_shards "$log" --qlog-dir "$q"
    grep -q 'SIGUSR2 upgrades' "$log"
    local old_kids
    old_kids="$(children "$SUP")"
    start_load "$out" 4
    kill -USR2 "$SUP"
    wait_for_line "$log" 'upgrade: new supervisor pid [0-9]+ ready' 15
    local new
    new="$(sed -nE 's/.*upgrade: new supervisor pid ([0-9]+) ready.*/\1/p' "$log")"
    [ -n "$new" ]
    VEGA_BG_PIDS+=("$new") # killed by teardown if the test fails
    grep -q "HTTP/3 on udp 127.0.0.1:$PORT (6 sockets, inherited)" "$log"
    # the new supervisor's first generation is 2 (the old one served 1): it serves set 2
    grep -q 'shard 0 ready: pid [0-9]* (generation 2)' "$log"
    kill -0 "$LOAD_PID" # the upgrade happened under load
    wait_pid_exit "$SUP" 15
    [ "$BG_STATUS" -eq 0 ]
    wait_pid_exit "$LOAD_PID" 30
    [ "$BG_STATUS" -eq 0 ] || { cat "$out" "$out.err"; false; }
    # requests the old shards did not process are retried (any count), none fails
    [ "$(json_num "$out" errors)" -eq 0 ] || { cat "$out"; false; }
    [ "$(json_num "$out" connect_errors)" -eq 0 ] || { cat "$out"; false; }
    [ "$(json_num "$out" requests)" -gt 0 ]
    local k
    for k in $old_kids; do
        ! kill -0 "$k" 2>/dev/null
    done
    [ "$(children "$new" | wc -l)" -eq 2 ]
    # new connections reach the new shards: their IDs start with 04 or 05 (set 2 of 3)
    rm -f "$q"/*
    run "$LOAD" --h3 -k -c 8 -n 80 --json "$U"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    echo "$output" >"$out"
    [ "$(json_num "$out" errors)" -eq 0 ]
    [ "$(json_num "$out" requests)" -eq 80 ]
    [ "$(cid_bytes "$q" | wc -l)" -eq 8 ]
    [ "$(cid_bytes "$q" | grep -vcE '^0[45]$')" -eq 0 ] || { cid_bytes "$q"; false; }
    # a reload of the new supervisor (after the old one ended) moves on to generation 3
    kill -HUP "$new"
    wait_for_line "$log" 'generation 3 ready, older shards drain' 15
    "$CURL" -sk --http3-only "$U" | grep -q 'hello shards'
    kill -TERM "$new"
    local i
    for ((i = 0; i < 300; i++)); do
        kill -0 "$new" 2>/dev/null || break
        sleep 0.05
    done
    ! kill -0 "$new" 2>/dev/null
}

@test "--shards --tls: more shards than connection IDs can name with HTTP/3 is refused" {
    run "$SERVE" --shards 86 --tls -p 0 "$ROOT"
    [ "$status" -ne 0 ]
    [[ "$output" == *"at most 85 shards"* ]]
}
