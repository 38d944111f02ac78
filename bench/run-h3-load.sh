#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTP/3 static-file benchmark, in one run: vega-serve (HTTP/3 on its HTTPS port; skipped until
# it serves HTTP/3), Caddy 2.6 (quic-go inside; GOMAXPROCS=1) and ngtcp2's gtlsserver (the
# nghttp3 example server), each serving a 1 KiB file, loaded by `vega-load --h3 -c 64 -m 10`
# (one thread). The server is pinned to CPU 0, the load to CPU 1; runs are interleaved (the
# server order rotates each repetition), each after a 1 s warm-up run of its own.
#
# On two cores the load saturates its own CPU, so requests per second measure client and
# server together; servers are also judged by their CPU time per request (utime+stime from
# /proc/PID/stat over the requests the load counted). Ratios are medians of per-repetition
# ratios. h2load is not a second load generator here: Debian's h2load is built without HTTP/3.
#
# usage: bench/run-h3-load.sh [-r REPS] [-d SECS] [-c CONNS] [-m STREAMS] [-S LIST] [BUILD_DIR]
#   BUILD_DIR  CMake build directory (default build-bench-h3; configured Release if new)
#   -r REPS    repetitions (default 5)
#   -d SECS    measured load per run (default 5)
#   -c CONNS   QUIC connections (default 64)
#   -m STREAMS requests in flight per connection (default 10)
#   -S LIST    servers (default vega,caddy,ngtcp2)
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
cmdline="bench/run-h3-load.sh $*"
reps=5 dur=5 conns=64 streams=10 servers=vega,caddy,ngtcp2
while getopts "r:d:c:m:S:h" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    d) dur=$OPTARG ;;
    c) conns=$OPTARG ;;
    m) streams=$OPTARG ;;
    S) servers=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
for v in "$reps" "$dur" "$conns" "$streams"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "run-h3-load.sh: -r, -d, -c and -m want positive integers" >&2; exit 2; }
done
build=${1:-$root/build-bench-h3}
case $build in /*) ;; *) build=$PWD/$build ;; esac

for t in taskset ss openssl; do
  command -v "$t" >/dev/null || { echo "run-h3-load.sh: $t is not installed" >&2; exit 1; }
done

# ---- build -----------------------------------------------------------------------------------
blog=$(mktemp)
if [ ! -f "$build/CMakeCache.txt" ]; then
  timeout 600 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DVEGA_BUILD_BENCH=OFF >"$blog" 2>&1 ||
    { tail -30 "$blog" >&2; echo "run-h3-load.sh: cmake configure failed" >&2; exit 1; }
fi
timeout 1800 cmake --build "$build" -j "$(nproc)" --target vega-serve vega-load >"$blog" 2>&1 ||
  { tail -30 "$blog" >&2; echo "run-h3-load.sh: build failed" >&2; exit 1; }
rm -f "$blog"
vega_serve=$build/cli/vega-serve
vega_load=$build/cli/vega-load
[ -x "$vega_serve" ] || vega_serve=$build/cli/vega-serve/vega-serve
[ -x "$vega_load" ] || vega_load=$build/cli/vega-load/vega-load

# ---- processes -------------------------------------------------------------------------------
bench_tmp
raw=$tmp/raw
: >"$raw"
clk_tck=$(getconf CLK_TCK)
py=$(command -pv python3) || { echo "run-h3-load.sh: python3 is not installed" >&2; exit 1; }
docroot=$tmp/www
mkdir -p "$docroot"
head -c 1024 /dev/urandom >"$docroot/1k"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1 ||
  { echo "run-h3-load.sh: openssl could not make a certificate" >&2; exit 1; }

# Why a server cannot run here, or nothing when it can.
missing() {
  case $1 in
    vega) "$vega_serve" --help 2>&1 | grep -q -- '--no-http3' || echo "vega-serve does not serve HTTP/3 yet" ;;
    caddy) command -v caddy >/dev/null || echo "caddy is not installed" ;;
    ngtcp2) command -v gtlsserver >/dev/null || echo "gtlsserver is not installed (ngtcp2-server)" ;;
    *) echo "unknown server $1" ;;
  esac
}

caddy_conf() { # PORT
  mkdir -p "$tmp/caddy-$1"
  cat >"$tmp/caddy-$1/Caddyfile" <<EOF
{
  admin off
  auto_https off
  storage file_system $tmp/caddy-$1/data
  servers {
    protocols h1 h2 h3
  }
}
https://127.0.0.1:$1 {
  bind 127.0.0.1
  tls $tmp/cert.pem $tmp/key.pem
  root * $docroot
  file_server
}
EOF
}

server_cmd() { # NAME PORT
  case $1 in
    vega) echo "$vega_serve -q --workers 1 --cert $tmp/cert.pem --key $tmp/key.pem -b 127.0.0.1 -p $2 $docroot" ;;
    caddy) echo "env GOMAXPROCS=1 HOME=$tmp/caddy-$2 caddy run --config $tmp/caddy-$2/Caddyfile --adapter caddyfile" ;;
    ngtcp2) echo "gtlsserver --quiet --no-quic-dump --no-http-dump -d $docroot 127.0.0.1 $2 $tmp/key.pem $tmp/cert.pem" ;;
    *) return 1 ;;
  esac
}

free_udp_port() {
  command -p python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_server NAME: on CPU 0, a fresh UDP port; sets spid (the server), tpid (timeout
# wrapper), sport, serr.
start_server() {
  local name=$1 cmd i
  sport=$(free_udp_port) serr=$tmp/server-$name-$sport.err
  [ "$name" = caddy ] && caddy_conf "$sport"
  cmd=$(server_cmd "$name" "$sport") || return 1
  # shellcheck disable=SC2086
  timeout -k 2 3000 taskset -c 0 $cmd >/dev/null 2>"$serr" &
  tpid=$!
  pids+=("$tpid")
  spid=
  for ((i = 0; i < 400; i++)); do
    [ -z "$spid" ] && spid=$(awk '{ print $1 }' "/proc/$tpid/task/$tpid/children" 2>/dev/null)
    if [ -n "$spid" ] && ss -Hlun "sport = :$sport" 2>/dev/null | grep -q .; then
      # Caddy binds its UDP socket a moment before it serves on it.
      [ "$name" = caddy ] && sleep 0.3
      return 0
    fi
    kill -0 "$tpid" 2>/dev/null || break
    sleep 0.05
  done
  return 1
}

# load_run URL SECS: prints "requests seconds errors client_cpu_s lost" for one run on CPU 1
# (errors: vega-load's plus responses that were not 2xx; lost: QUIC packets declared lost).
load_run() {
  local url=$1 secs=$2 out
  out=$(timeout -k 2 $((secs * 3 + 30)) taskset -c 1 "$py" "$here/timed.py" "$tmp/load.time" \
    "$vega_load" --h3 -t1 -c"$conns" -m"$streams" -d"${secs}s" -k --json "$url" 2>"$tmp/load.err") ||
    { cat "$tmp/load.err" >&2; return 1; }
  command -p python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
bad = sum(v for k, v in j.get("status", {}).items() if not k.startswith("2"))
cpu = open(sys.argv[1]).read().split()[1]
print(j["requests"], j.get("duration_s", 0), j.get("errors", 0) + bad, cpu, j["quic"]["packets_lost"])' "$tmp/load.time" <<<"$out"
}

# one SERVER REP: appends "server rep rps cpu_us_per_req client_cpu_us_per_req lost" (or a
# FAIL line)
one() {
  local name=$1 rep=$2 url c0 c1 res n s e lc lost
  if ! start_server "$name"; then
    echo "run-h3-load.sh: $name did not start: $(tail -5 "$serr" 2>/dev/null)" >&2
    echo "$name $rep FAIL start" >>"$raw"; stop_server; return
  fi
  url="https://127.0.0.1:$sport/1k"
  load_run "$url" 1 >/dev/null
  c0=$(cpu_ticks "$spid")
  res=$(load_run "$url" "$dur")
  c1=$(cpu_ticks "$spid")
  stop_server
  read -r n s e lc lost <<<"$res"
  if [ -z "${n:-}" ] || [ "$n" = 0 ] || [ -z "$c0" ] || [ -z "$c1" ]; then
    echo "$name $rep FAIL load" >>"$raw"; return
  fi
  if [ "${e:-0}" != 0 ]; then echo "$name $rep FAIL ${e}errors" >>"$raw"; return; fi
  awk -v nm="$name" -v r="$rep" -v n="$n" -v s="$s" -v c0="$c0" -v c1="$c1" -v hz="$clk_tck" -v lc="$lc" -v lost="$lost" \
    'BEGIN { if (s <= 0) s = 1; printf "%s %s %.0f %.3f %.3f %d\n", nm, r, n / s, (c1 - c0) / hz * 1e6 / n, lc * 1e6 / n, lost }' >>"$raw"
}

IFS=, read -r -a want <<<"$servers"
srv=()
skipped=()
for name in "${want[@]}"; do
  why=$(missing "$name")
  if [ -n "$why" ]; then skipped+=("$name: $why"); else srv+=("$name"); fi
done
[ ${#srv[@]} -gt 0 ] || { echo "run-h3-load.sh: no server can run (${skipped[*]})" >&2; exit 1; }
start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
ns=${#srv[@]}
for ((rep = 1; rep <= reps; rep++)); do
  for ((k = 0; k < ns; k++)); do
    one "${srv[$(((k + rep - 1) % ns))]}" "$rep"
  done
done
elapsed=$(( $(date +%s) - start ))

# ---- report ----------------------------------------------------------------------------------
echo "## HTTP/3 static file (1 KiB): $(date -u +%Y-%m-%d), $(nproc) CPUs, vega-load --h3 -c $conns -m $streams, ${dur}s x ${reps}"
echo
echo "Command: \`$cmdline\` ($elapsed s). Server on CPU 0 (one worker/process), load on CPU 1."
echo "Load average before and after: $load0; $(cut -d' ' -f1-3 /proc/loadavg) (other work on the"
echo "machine takes CPU time from both pinned processes: judge by CPU per request)."
for s in "${skipped[@]}"; do echo "Not run: $s."; done
if command -v h2load >/dev/null && h2load --help 2>&1 | grep -q 'h3'; then
  echo "h2load here knows h3, but is not run by this script."
else
  echo "h2load: not usable as a second load generator (Debian's h2load is built without HTTP/3)."
fi
echo
echo "| server | median req/s | median server CPU us/req | req/s vs caddy | CPU/req: caddy / server | req/s vs ngtcp2 | CPU/req: ngtcp2 / server | median vega-load CPU us/req | QUIC packets lost (all runs) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
awk '
  $3 == "FAIL" { fail[$1]++; why[$1] = why[$1] " " $4; next }
  { rps[$1, ++n[$1]] = $3; cpu[$1, n[$1]] = $4; lcpu[$1, n[$1]] = $5; lost[$1] += $6
    r[$1" "$2] = $3; c[$1" "$2] = $4; sv[$1] = 1; reps[$2] = 1 }
  function med(a, m,   i, j, t, v) { for (i = 1; i <= m; i++) v[i] = a[i]; for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
  function ratio(s, base, x,   m, rp, q) {
    m = 0
    for (rp in reps) if ((s" "rp) in r && (base" "rp) in r) q[++m] = x ? c[base" "rp] / c[s" "rp] : r[s" "rp] / r[base" "rp]
    return m ? sprintf("%.2f", med(q, m)) : "-" }
  END {
    for (s in sv) {
      m = 0; for (i = 1; i <= n[s]; i++) a[++m] = rps[s, i]; mr = med(a, m)
      m = 0; for (i = 1; i <= n[s]; i++) a[++m] = cpu[s, i]; mc = med(a, m)
      m = 0; for (i = 1; i <= n[s]; i++) a[++m] = lcpu[s, i]; ml = med(a, m)
      printf "| %s | %.0f | %.2f | %s | %s | %s | %s | %.2f | %d |\n", s, mr, mc, ratio(s, "caddy", 0), ratio(s, "caddy", 1), ratio(s, "ngtcp2", 0), ratio(s, "ngtcp2", 1), ml, lost[s]
    }
    for (s in fail) printf "| %s | FAILED runs: %d (%s) | | | | | | | |\n", s, fail[s], why[s]
  }' "$raw" | sort
echo
echo "Per repetition (server, repetition, req/s, server CPU us/req, vega-load CPU us/req, QUIC packets lost):"
sed 's/^/    /' "$raw"
