#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# WebSocket echo servers under `vega-load ws://`: vega-serve --ws-echo (1 worker, then the
# default of one per CPU) against python3-websockets (tests/bats/ws/echo_server.py, one
# thread) and node-ws (tests/bats/ws/load_peer.js, one thread), without compression. For each
# server and message shape (64-byte text, 16 KiB binary) one run of -c CONNS for SECONDS; then
# 16 KiB binary with --ws-compress against each server with permessage-deflate on (node-ws with
# threshold 0, so that it compresses every message). Prints round trips per second, p50/p99
# latency, errors, the server's CPU time (utime + stime from /proc) per message, and the bytes
# on the wire per message each way (vega-load's count, after the handshakes).
# vega-load runs on the same machine (1 worker thread): on few cores the figures are the pair's.
# usage: bench/run-ws-echo.sh [BUILD_DIR] [SECONDS] [CONNS]
set -u -o pipefail
source "$(dirname "$0")/lib.sh"
build="${1:-build}"
secs="${2:-5}"
conns="${3:-16}"
[ -x "$build/cli/vega-load" ] && [ -x "$build/cli/vega-serve" ] || usage
py="$(command -p -v python3)"
"$py" -c 'import websockets' 2>/dev/null || { echo "python3-websockets is not installed" >&2; exit 1; }
export NODE_PATH="${NODE_PATH:-/usr/share/nodejs}" # Debian's node modules
node -e 'require("ws")' 2>/dev/null || { echo "node-ws is not installed" >&2; exit 1; }
peers="$(dirname "$0")/../tests/bats/ws"
bench_tmp
hz=$(getconf CLK_TCK)
mkdir -p "$tmp/root"

# start NAME CMD...: runs a server with a bound, waits for its port; sets tpid, spid, url.
start() {
  local name="$1"
  shift
  timeout 600 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  tpid=$!
  pids+=("$tpid")
  local i
  for ((i = 0; i < 100; i++)); do
    spid=$(cat "/proc/$tpid/task/$tpid/children" 2>/dev/null | tr -d " ")
    [ -n "$spid" ] && grep -qE 'listening' "$tmp/$name.out" "$tmp/$name.err" && break
    sleep 0.1
  done
  local port
  port=$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p; s/^listening ([0-9]+)$/\1/p' \
    "$tmp/$name.out" "$tmp/$name.err" | head -n1)
  [ -n "$port" ] || { echo "$name did not start" >&2; cat "$tmp/$name.err" >&2; exit 1; }
  url="ws://127.0.0.1:$port/ws"
}

# measure NAME ARGS...: one vega-load run against $url; prints a table row.
measure() {
  local name="$1"
  shift
  local c0 c1
  c0=$(cpu_ticks "$spid")
  timeout $((secs + 30)) "$build/cli/vega-load" --no-progress -c "$conns" -d "${secs}s" --json "$@" \
    "$url" >"$tmp/load.json" 2>"$tmp/load.err"
  c1=$(cpu_ticks "$spid")
  "$py" - "$tmp/load.json" "$name" "$*" "$c0" "$c1" "$hz" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
name, shape, c0, c1, hz = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
n = j["round_trips"]
cpu = (c1 - c0) / hz
per = cpu / n * 1e6 if n else float("nan")
l = j["latency_us"]
msgs = j["ws_message_bytes_sent"] / j["size"] if j["size"] else 0
wire = "%.0f / %.0f" % (j["ws_wire_bytes_sent"] / msgs, j["ws_wire_bytes_received"] / msgs) if msgs else "-"
print("| %s | %s | %.0f | %d | %d | %d | %.2f | %.1f | %s |"
      % (name, shape, j["rps"], l["p50"], l["p99"], j["errors"], cpu, per, wire))
PY
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) on $(nproc) CPUs; $conns connections, ${secs}s each"
echo "| server | messages | round trips/s | p50 (us) | p99 (us) | errors | server CPU (s) | server CPU per message (us) | wire bytes per message, sent / received |"
echo "|---|---|---|---|---|---|---|---|---|"
# start_server NAME [deflate]: vega-serve always accepts permessage-deflate when offered.
start_server() {
  case $1 in
  vega-1) start vega-1 "$build/cli/vega-serve" -l 127.0.0.1:0 --workers 1 --ws-echo /ws "$tmp/root" ;;
  vega) start vega "$build/cli/vega-serve" -l 127.0.0.1:0 --ws-echo /ws "$tmp/root" ;;
  python) start python "$py" "$peers/echo_server.py" "${2:-none}" ;;
  node) start node node "$peers/load_peer.js" quiet ${2:+"$2"} ;;
  esac
}
for server in vega-1 vega python node; do
  start_server "$server"
  measure "$server" -s 64
  measure "$server" -s 16k --binary
  stop_server
done
for server in vega-1 python node; do
  start_server "$server" deflate
  measure "$server" -s 16k --binary --ws-compress
  stop_server
done
