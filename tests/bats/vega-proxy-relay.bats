#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-proxy's splice relay: a direction's pipe grows to 1 MiB while it moves full pipes and is
# back at 64 KiB once the tunnel idles (proxy-pipes.py reads the sizes of the proxy's pipes
# through /proc/PID/fd with F_GETPIPE_SZ); grown pipes stay within their budget when more
# directions are active than it allows (proxy-pipe-budget.py, the budget lowered with
# VEGA_PROXY_PIPE_PAGES, --metrics read); thousands of idle tunnels hold a bounded few KiB each
# (bench/proxy_idle.py). Loopback only, ephemeral ports.

load helpers

PY=/usr/bin/python3

setup() {
    PROXY="$(vega_bin vega-proxy)"
    T="$BATS_TEST_TMPDIR"
}

teardown() {
    stop_bg_all
}

# grows DRIVER: the test below through vega-proxy on that driver.
grows() {
    start_bg "$T/proxy.log" "$PROXY" -l 127.0.0.1:0 --driver "$1"
    pid=$BG_PID
    wait_for_line "$T/proxy.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    port="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/proxy.log" | head -1)"
    run timeout 60 "$PY" "$BATS_TEST_DIRNAME/proxy-pipes.py" "$pid" "$port"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = ok ]
    # twice through the same proxy: the pipe it gave back (shrunk, cached) grows again
    run timeout 60 "$PY" "$BATS_TEST_DIRNAME/proxy-pipes.py" "$pid" "$port"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = ok ]
}

@test "io_uring: a relay pipe grows to 1 MiB while 16 MiB flow (sha256 kept) and is back at 64 KiB when the tunnel idles" {
    grows uring
}

@test "epoll: a relay pipe grows to 1 MiB while 16 MiB flow (sha256 kept) and is back at 64 KiB when the tunnel idles" {
    grows epoll
}

# budget DRIVER: 4 tunnels whose sinks wait (4 upward directions with full pipes) through
# vega-proxy on that driver with a budget of 480 pages (two 1 MiB pipes).
budget() {
    start_bg "$T/proxy.log" env VEGA_PROXY_PIPE_PAGES=480 "$PROXY" -l 127.0.0.1:0 --driver "$1" \
        --metrics 127.0.0.1:0
    wait_for_line "$T/proxy.log" 'metrics on http://' 10
    wait_for_line "$T/proxy.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    port="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/proxy.log" | head -1)"
    murl="$(sed -nE 's|.*metrics on (http://[0-9.]+:[0-9]+/metrics)$|\1|p' "$T/proxy.log" | head -1)"
    run timeout 120 "$PY" "$BATS_TEST_DIRNAME/proxy-pipe-budget.py" "$port" "$murl" 4 48
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == "ok "*" budget=480 stalled=480" ]]
}

@test "io_uring: 4 directions with full pipes, a budget for 2 grown pipes: 2 grow, none beyond it, every tunnel's sha256 kept both ways" {
    budget uring
}

@test "epoll: 4 directions with full pipes, a budget for 2 grown pipes: 2 grow, none beyond it, every tunnel's sha256 kept both ways" {
    budget epoll
}

# idle DRIVER N: N SOCKS5 tunnels through vega-proxy on DRIVER to vega-echo, left idle
# (bench/proxy_idle.py: every tunnel's reply read, then the proxy's VmRSS, a sample echoed), then
# all closed: each idle tunnel may hold at most 8 KiB of the proxy's memory (measured at 10,000:
# 2.9 KiB on io_uring, 3.4 on epoll, docs/BENCHMARKS.md; at 4,000 the fixed costs weigh more),
# and once they are closed the proxy holds no more descriptors than before, but for the idle
# pipes it keeps for the next relay (the sample's echoes made some; PIPE_CACHE: at most 64
# pipes, two descriptors each).
idle() {
    local n="$2" echo_log="$T/echo.log"
    # the sanitizers' allocators hold far more per allocation: the bound is for release builds
    [ "${VEGA_TEST_SCALE:-1}" -gt 1 ] && skip "memory bound of a release build"
    ulimit -n "$(ulimit -Hn)"
    [ "$(ulimit -n)" -ge $((2 * n + 64)) ] || skip "open files limit $(ulimit -n) below $((2 * n + 64))"
    start_bg "$echo_log" "$(vega_bin vega-echo)" -l 127.0.0.1:0
    wait_for_line "$echo_log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    local eport
    eport="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$echo_log" | head -1)"
    start_bg "$T/proxy.log" "$PROXY" -l 127.0.0.1:0 -m $((n + 100)) --driver "$1"
    pid=$BG_PID
    wait_for_line "$T/proxy.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    port="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/proxy.log" | head -1)"
    local fds_before
    fds_before="$(ls "/proc/$pid/fd" | wc -l)"
    run timeout 120 "$PY" "$BATS_TEST_DIRNAME/../../bench/proxy_idle.py" "$pid" "$port" "$eport" "$n" 100
    echo "$output"
    [ "$status" -eq 0 ]
    local per
    per="$(sed -n 's/.*per_tunnel_bytes=\([0-9]*\).*/\1/p' <<<"$output")"
    [ -n "$per" ]
    [ "$per" -le 8192 ]
    # the client closed them all: the proxy gives back both descriptors of each
    local fds max=$((fds_before + 2 * 64))
    for _ in $(seq 200); do
        fds="$(ls "/proc/$pid/fd" | wc -l)"
        [ "$fds" -le "$max" ] && break
        sleep 0.05
    done
    echo "fds before $fds_before, after $fds (at most $max)"
    [ "$fds" -le "$max" ]
}

@test "io_uring: 4,000 idle tunnels hold at most 8 KiB each, and their descriptors are given back when they close" {
    idle uring 4000
}

@test "epoll: 4,000 idle tunnels hold at most 8 KiB each, and their descriptors are given back when they close" {
    idle epoll 4000
}
