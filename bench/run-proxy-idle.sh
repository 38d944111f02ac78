#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vega-proxy's memory per idle tunnel: N SOCKS5 tunnels (default 10000, fewer when the open
# files limit cannot hold 2 per tunnel) through vega-proxy to vega-echo, left idle; prints the
# proxy's VmRSS before and after and the bytes per tunnel (bench/proxy_idle.py), for each
# driver. A sample of the tunnels is checked to still echo.
# With "peers" last, then the same N idle tunnels through danted (SOCKS5) and tinyproxy (HTTP
# CONNECT) beside vega-proxy's, memory as Pss summed over each proxy's process tree
# (bench/run-proxy-peers.sh with no bulk and no rate rows).
# usage: bench/run-proxy-idle.sh [BUILD_DIR] [N] [peers]
set -u -o pipefail
source "$(dirname "$0")/lib.sh"
build="${1:-build}"
n="${2:-10000}"
[ -x "$build/cli/vega-proxy" ] || usage
ulimit -n "$(ulimit -Hn)" 2>/dev/null
lim=$(ulimit -n)
if [ $((2 * n + 64)) -gt "$lim" ]; then
  n=$(((lim - 64) / 2))
  echo "open files limit $lim: $n tunnels" >&2
fi
bench_tmp
py="$(command -p -v python3)"
for driver in uring epoll; do
  timeout 120 "$build/cli/vega-echo" -l 127.0.0.1:0 2>"$tmp/echo.log" &
  pids+=($!)
  timeout 120 "$build/cli/vega-proxy" -l 127.0.0.1:0 -m $((n + 100)) --driver "$driver" 2>"$tmp/proxy.log" &
  pids+=($!)
  ppid=$(cat "/proc/$!/task/$!/children")
  for _ in $(seq 100); do grep -q 'listening on' "$tmp/proxy.log" "$tmp/echo.log" 2>/dev/null &&
    [ "$(grep -l 'listening on' "$tmp/proxy.log" "$tmp/echo.log" | wc -l)" = 2 ] && break; sleep 0.1; done
  pport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/proxy.log" | head -1)
  eport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/echo.log" | head -1)
  echo -n "vega-proxy $driver: "
  "$py" "$(dirname "$0")/proxy_idle.py" "$ppid" "$pport" "$eport" "$n" 100
  kill "${pids[@]}" 2>/dev/null
  wait 2>/dev/null
  pids=()
done
if [ "${3:-}" = peers ]; then
  "$(dirname "$0")/run-proxy-peers.sh" "$build" 0 0 1 "$n"
fi
