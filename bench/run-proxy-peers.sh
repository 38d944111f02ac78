#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vega-proxy against the Debian proxies on the same machine in one run: tinyproxy for HTTP
# CONNECT tunnels, dante (danted) for SOCKS5 tunnels. One client for all of them
# (bench/proxy/proxy_client.c, built as proxy-client) and one echo server (vega-echo):
#   bulk: MIB MiB up then MIB MiB down through one tunnel, checked byte for byte; throughput,
#         and the proxy's CPU (utime + stime of its whole process tree: danted forks) per GiB
#   rate: THREADS client threads for SECS seconds, each a loop of short tunnels (connect,
#         handshake, 16 bytes echoed, close); tunnels per second, and CPU per 1000 tunnels
#   idle: IDLE_N tunnels (default 1000; 0: none) opened and left idle (bench/proxy_idle.py), the
#         proxy's memory before and after as Pss summed over its process tree; bytes per tunnel
# Each proxy logs one line per tunnel (vega-proxy's access log, tinyproxy LogLevel Connect,
# danted "log: disconnect") to a file, and is started afresh for each row. Ratios are
# peer CPU / vega CPU and vega rate / peer rate (above 1: vega-proxy is better).
# MIB 0 skips the bulk rows, SECS 0 the rate rows (and then the table): 0 0 1 N measures only
# idle tunnels (bench/run-proxy-idle.sh BUILD N peers does that).
# usage: bench/run-proxy-peers.sh [BUILD_DIR] [MIB] [SECS] [THREADS] [IDLE_N]
set -u -o pipefail
source "$(dirname "$0")/lib.sh"
build="${1:-build}"
mib="${2:-1024}"
secs="${3:-5}"
threads="${4:-8}"
idle_n="${5:-1000}"
client="$build/bench/proxy/proxy-client"
if [ ! -x "$build/cli/vega-proxy" ] || [ ! -x "$build/cli/vega-echo" ] || [ ! -x "$client" ]; then usage; fi
for p in tinyproxy danted; do
  command -v "$p" >/dev/null || PATH="$PATH:/usr/sbin"
  command -v "$p" >/dev/null || { echo "$p is not installed (apt-get install tinyproxy dante-server)" >&2; exit 2; }
done
ulimit -n "$(ulimit -Hn)" 2>/dev/null
bench_tmp
chmod 755 "$tmp"
py="$(command -p -v python3)"

# tree_ticks PID: utime + stime + cutime + cstime over PID and all its descendants (children
# reaped count in their parent's cutime/cstime)
tree_ticks() {
  "$py" - "$1" <<'PY'
import os, sys
root = int(sys.argv[1]); kids = {}; ticks = {}
for d in os.listdir("/proc"):
    if not d.isdigit():
        continue
    try:
        f = open(f"/proc/{d}/stat").read().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        continue
    kids.setdefault(int(f[1]), []).append(int(d))
    ticks[int(d)] = sum(int(x) for x in f[11:15])
todo, total = [root], 0
while todo:
    p = todo.pop()
    total += ticks.get(p, 0)
    todo += kids.get(p, [])
print(total)
PY
}

free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_port() { # PORT: until something listens there (10 s at most)
  local i
  for ((i = 0; i < 100; i++)); do
    "$py" -c 'import socket,sys; socket.create_connection(("127.0.0.1",int(sys.argv[1])),1).close()' "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}

timeout 900 "$build/cli/vega-echo" -l 127.0.0.1:0 2>"$tmp/echo.log" &
pids+=($!)
for _ in $(seq 100); do grep -q 'listening on' "$tmp/echo.log" && break; sleep 0.1; done
eport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/echo.log" | head -1)

# start NAME: starts that proxy; sets port and root (the proxy's pid)
start() {
  port=$(free_port)
  case "$1" in
  vega-proxy)
    timeout 900 "$build/cli/vega-proxy" -l "127.0.0.1:$port" -m 20000 2>"$tmp/vega.log" &
    ;;
  tinyproxy)
    cat >"$tmp/tinyproxy.conf" <<CONF
User nobody
Group nogroup
Port $port
Listen 127.0.0.1
Timeout 600
LogFile "$tmp/tinyproxy.log"
LogLevel Connect
MaxClients $((idle_n + 1024))
DisableViaHeader Yes
CONF
    touch "$tmp/tinyproxy.log"
    chown nobody "$tmp/tinyproxy.log"
    timeout 900 tinyproxy -d -c "$tmp/tinyproxy.conf" 2>"$tmp/tinyproxy.err" &
    ;;
  danted)
    cat >"$tmp/danted.conf" <<CONF
logoutput: $tmp/danted.log
internal: 127.0.0.1 port = $port
external: 127.0.0.1
clientmethod: none
socksmethod: none
user.privileged: root
user.unprivileged: nobody
client pass { from: 127.0.0.0/8 to: 0.0.0.0/0 log: error }
socks pass { from: 127.0.0.0/8 to: 0.0.0.0/0 log: disconnect error }
CONF
    timeout 900 danted -f "$tmp/danted.conf" -p "$tmp/danted.pid" 2>"$tmp/danted.err" &
    ;;
  esac
  pids+=($!)
  wait_port "$port" || exit 1
  root=$(cat "/proc/$!/task/$!/children")
}

stop() {
  kill "${pids[-1]}" 2>/dev/null
  wait "${pids[-1]}" 2>/dev/null
  unset 'pids[-1]'
}

# row MODE KIND NAME: one measured row; appends "NAME KIND MODE figure cpu_s" to $tmp/rows
row() {
  local mode=$1 kind=$2 name=$3 c0 c1 out
  start "$name"
  c0=$(tree_ticks "$root")
  if [ "$mode" = bulk ]; then
    out=$("$client" bulk "$kind" "$port" "$mib") || { echo "$name $kind bulk failed" >&2; exit 1; }
  else
    out=$("$client" rate "$kind" "$port" "$eport" "$secs" "$threads") ||
      { echo "$name $kind rate failed" >&2; exit 1; }
  fi
  c1=$(tree_ticks "$root")
  stop
  local cpu
  cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz }')
  echo "$name $kind $mode: $out proxy CPU ${cpu} s"
  echo "$name $kind $mode $out $cpu" >>"$tmp/rows"
}

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# vega-proxy $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null), $(tinyproxy -v 2>&1 | head -1), $(danted -v 2>&1 | head -1)"
if [ "$mib" -gt 0 ]; then
  row bulk connect vega-proxy
  row bulk connect tinyproxy
  row bulk socks5 vega-proxy
  row bulk socks5 danted
fi
if [ "$secs" -gt 0 ]; then
  row rate connect vega-proxy
  row rate connect tinyproxy
  row rate socks5 vega-proxy
  row rate socks5 danted
fi
if [ "$idle_n" -gt 0 ]; then
  for pk in "vega-proxy socks5" "danted socks5" "vega-proxy connect" "tinyproxy connect"; do
    start "${pk% *}"
    echo -n "${pk% *} ${pk#* } idle: "
    "$py" "$(dirname "$0")/proxy_idle.py" "$root" "$port" "$eport" "$idle_n" 120 "${pk#* }" tree ||
      echo "failed"
    stop
  done
fi
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)"

# the table: CPU per GiB for bulk rows, tunnels/s and CPU per 1000 tunnels for rate rows
[ "$mib" -gt 0 ] && [ "$secs" -gt 0 ] || exit 0
"$py" - "$tmp/rows" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    name, kind, mode, js, cpu = line.split(" ", 4)
    rows[(name, kind, mode)] = (json.loads(js), float(cpu))
print("| proxy | tunnel | test | figure | proxy CPU (s) | CPU per GiB or per 1000 tunnels (s) |")
print("|---|---|---|---|---|---|")
per = {}
for (name, kind, mode), (js, cpu) in rows.items():
    if mode == "bulk":
        gib = js["bytes"] / (1 << 30)
        fig, p = f'{js["mib_s"]:.0f} MiB/s', cpu / gib
    else:
        fig, p = f'{js["tunnels_s"]:.0f} tunnels/s ({js["errors"]} errors)', cpu * 1000 / max(js["tunnels"], 1)
    per[(name, kind, mode)] = (js, p)
    print(f"| {name} | {kind} | {mode} | {fig} | {cpu:.2f} | {p:.3f} |")
print()
for kind, peer in (("connect", "tinyproxy"), ("socks5", "danted")):
    v, q = per[("vega-proxy", kind, "bulk")], per[(peer, kind, "bulk")]
    print(f"{kind} bulk: {peer} CPU per GiB / vega-proxy's = {q[1] / v[1]:.2f}x, "
          f"throughput vega/{peer} = {v[0]['mib_s'] / q[0]['mib_s']:.2f}x")
    v, q = per[("vega-proxy", kind, "rate")], per[(peer, kind, "rate")]
    print(f"{kind} rate: tunnels/s vega/{peer} = {v[0]['tunnels_s'] / q[0]['tunnels_s']:.2f}x, "
          f"{peer} CPU per tunnel / vega-proxy's = {q[1] / v[1]:.2f}x")
PY
