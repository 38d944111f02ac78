#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 1 GiB (or MIB) each way through one SOCKS5 tunnel of vega-proxy, both sha256 sums checked
# (tests/bats/proxy-bulk.py), with splice and with --no-splice, on io_uring and epoll; prints
# each run's seconds and the proxy's CPU seconds (utime + stime from /proc).
# Then HTTP CONNECT, on the plain listener and inside TLS on a tls:// listener (an https://
# proxy: proxy-bulk.py tls-connect, Python's ssl as the client, the payload counted rather than
# half-closed), against tinyproxy plain and behind stunnel4 (TLS in front of a plain proxy,
# the usual way to make one an https:// proxy), when they are installed: MiB/s (both ways'
# bytes over the wall time) and CPU per GiB moved (stunnel's and tinyproxy's added).
# The line "# load ..." before and after says how busy the machine was.
# usage: bench/run-proxy-bulk.sh [BUILD_DIR] [MIB]
set -u -o pipefail
source "$(dirname "$0")/lib.sh"
build="${1:-build}"
mib="${2:-1024}"
[ -x "$build/cli/vega-proxy" ] || usage
bench_tmp
py="$(command -p -v python3)"
bulk="$(dirname "$0")/../tests/bats/proxy-bulk.py"
hz=$(getconf CLK_TCK)
echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
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

# --- HTTP CONNECT, plain and inside TLS ---
command -v openssl >/dev/null || { echo "# openssl (the command) is not installed: no TLS rows"; exit 0; }
printf '[server]\nsubjectAltName = DNS:localhost, IP:127.0.0.1\nextendedKeyUsage = serverAuth\n' >"$tmp/ext.cnf"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/ca.key" \
  -out "$tmp/ca.pem" -days 1 -subj "/CN=bench CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/px.key" \
  -out "$tmp/px.csr" -subj "/CN=proxy" 2>/dev/null
openssl x509 -req -in "$tmp/px.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial \
  -out "$tmp/px.pem" -days 1 -extfile "$tmp/ext.cnf" -extensions server 2>/dev/null
chmod 755 "$tmp"
chmod 644 "$tmp/px.key"

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
# bg CMD...: runs CMD under timeout in the background; sets bgpid (the program, not timeout)
bg() {
  timeout 300 "$@" >>"$tmp/bg.log" 2>&1 &
  pids+=($!)
  bgpid=""
  for _ in $(seq 100); do
    bgpid=$(tr -d " " <"/proc/$!/task/$!/children" 2>/dev/null)
    [ -n "$bgpid" ] && break
    sleep 0.05
  done
}
ticks() { # PID...: their CPU ticks summed
  local p s=0 t
  for p in "$@"; do
    t=$(cpu_ticks "$p") || t=0
    s=$((s + t))
  done
  echo "$s"
}
# row LABEL PORT MODE PID...: one bulk through that proxy; CPU of the PIDs
row() {
  local label=$1 port=$2 mode=$3 c0 c1 out secs
  shift 3
  wait_port "$port" || exit 1
  c0=$(ticks "$@")
  out=$("$py" "$bulk" "$port" "$mib" 280 "$mode" "$tmp/ca.pem") || { echo "$label: failed: $out"; return; }
  c1=$(ticks "$@")
  secs=${out##* }
  awk -v l="$label" -v m="$mib" -v s="$secs" -v a="$c0" -v b="$c1" -v hz="$hz" -v ok="${out%% *}" 'BEGIN {
    cpu = (b - a) / hz; gib = 2 * m / 1024
    printf "%s: %d MiB each way: %s in %.2f s, %.0f MiB/s, CPU %.2f s, %.3f s per GiB\n", l, m, ok, s, 2 * m / s, cpu, cpu / gib }'
}
stop_all() {
  kill "${pids[@]}" 2>/dev/null
  wait 2>/dev/null
  pids=()
}

port=$(free_port)
bg "$build/cli/vega-proxy" -l "127.0.0.1:$port"
row "vega-proxy CONNECT, plain listener" "$port" connect "$bgpid"
stop_all
port=$(free_port)
bg "$build/cli/vega-proxy" -l "tls://127.0.0.1:$port" --tls-cert "$tmp/px.pem" --tls-key "$tmp/px.key"
row "vega-proxy CONNECT, tls:// listener" "$port" tls-connect "$bgpid"
stop_all

command -v tinyproxy >/dev/null || PATH="$PATH:/usr/sbin"
if command -v tinyproxy >/dev/null; then
  tport=$(free_port)
  cat >"$tmp/tinyproxy.conf" <<CONF
User nobody
Group nogroup
Port $tport
Listen 127.0.0.1
Timeout 600
DisableViaHeader Yes
CONF
  bg tinyproxy -d -c "$tmp/tinyproxy.conf"
  tpid=$bgpid
  row "tinyproxy CONNECT, plain" "$tport" connect "$tpid"
  if command -v stunnel4 >/dev/null; then
    sport=$(free_port)
    cat >"$tmp/stunnel.conf" <<CONF
foreground = yes
pid =
[proxy]
accept = 127.0.0.1:$sport
connect = 127.0.0.1:$tport
cert = $tmp/px.pem
key = $tmp/px.key
CONF
    bg stunnel4 "$tmp/stunnel.conf"
    row "stunnel4 + tinyproxy CONNECT, TLS" "$sport" tls-connect "$bgpid" "$tpid"
  else
    echo "# stunnel4 is not installed (apt-get install stunnel4): no TLS peer row"
  fi
  stop_all
else
  echo "# tinyproxy is not installed (apt-get install tinyproxy): no peer rows"
fi
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)"
