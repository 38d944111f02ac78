#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-proxy's splice relay: a direction's pipe grows to 1 MiB while it moves full pipes and is
# back at 64 KiB once the tunnel idles (proxy-pipes.py reads the sizes of the proxy's pipes
# through /proc/PID/fd with F_GETPIPE_SZ). Loopback only, ephemeral ports.

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
