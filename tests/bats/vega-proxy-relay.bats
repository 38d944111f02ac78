#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-proxy's splice relay: a direction's pipe grows to 1 MiB while it moves full pipes and is
# back at 64 KiB once the tunnel idles (proxy-pipes.py reads the sizes of the proxy's pipes
# through /proc/PID/fd with F_GETPIPE_SZ); grown pipes stay within their budget when more
# directions are active than it allows (proxy-pipe-budget.py, the budget lowered with
# VEGA_PROXY_PIPE_PAGES, --metrics read). Loopback only, ephemeral ports.

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
