#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 1 GiB (or MIB) each way through one SOCKS5 tunnel of vega-proxy, both sha256 sums checked
# (tests/bats/proxy-bulk.py), with splice and with --no-splice, on io_uring and epoll; prints
# each run's seconds and the proxy's CPU seconds (utime + stime from /proc).
# usage: bench/run-proxy-bulk.sh [BUILD_DIR] [MIB]
set -u -o pipefail
source "$(dirname "$0")/lib.sh"
build="${1:-build}"
mib="${2:-1024}"
[ -x "$build/cli/vega-proxy" ] || usage
bench_tmp
py="$(command -p -v python3)"
bulk="$(dirname "$0")/../tests/bats/proxy-bulk.py"
for mode in "--driver uring" "--driver epoll" "--driver uring --no-splice" "--driver epoll --no-splice"; do
  # shellcheck disable=SC2086
  timeout 300 "$build/cli/vega-proxy" -l 127.0.0.1:0 $mode 2>"$tmp/proxy.log" &
  pids+=($!)
  ppid=""
  for _ in $(seq 100); do
    ppid=$(tr -d " " <"/proc/$!/task/$!/children" 2>/dev/null)
    grep -q 'listening on' "$tmp/proxy.log" && break
    sleep 0.1
  done
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/proxy.log" | head -1)
  out=$("$py" "$bulk" "$port" "$mib" 280)
  cpu=$(awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$ppid/stat")
  echo "vega-proxy $mode: ${mib} MiB each way: ${out%% *} in ${out##* } s, proxy CPU ${cpu} s"
  kill "${pids[@]}" 2>/dev/null
  wait 2>/dev/null
  pids=()
done
