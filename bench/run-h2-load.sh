#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTP/2 load benchmark, in one run: two servers -- vega-serve (HTTP/2 over TLS, one worker) and
# nginx (one worker process, `listen ... ssl http2`) -- each serving a file (1 KiB; -f) over TLS, and
# two clients -- h2load (nghttp2-client) and vega-load --h2 -- with the same settings
# (-t 1 -c 64 -m 10 by default). Every server/client pair is run: vega-serve vs nginx is judged
# with h2load as the client, vega-load vs h2load against the same server. The server is pinned
# to CPU 0, the load to CPU 1; runs are interleaved (the pair order rotates each repetition),
# each after a 1 s warm-up run of its own.
#
# On two cores the load saturates its own CPU, so requests per second measure client and
# server together; servers are also judged by their CPU time per request, clients by theirs
# (utime+stime over the requests counted: /proc/PID/stat for the server, wait4's rusage for the
# client). Ratios are medians of per-repetition ratios. TLS is 1.3 with TLS_AES_256_GCM_SHA384
# everywhere (nginx 1.22 offers TLS 1.2 alone by default, and h2load asks for AES-128 first):
# the same record work for every pair.
#
# usage: bench/run-h2-load.sh [-r REPS] [-d SECS] [-c CONNS] [-m STREAMS] [-S LIST] [-C LIST]
#                             [BUILD_DIR]
#   BUILD_DIR  CMake build directory (default build-bench-h2; configured Release if new)
#   -r REPS    repetitions (default 3)
#   -d SECS    measured load per run (default 5)
#   -c CONNS   connections (default 64)
#   -m STREAMS requests in flight per connection (default 10)
#   -S LIST    servers (default vega,nginx)
#   -C LIST    clients (default h2load,vega-load)
#   -f SIZE    the file's size: 1k (default) or 1m (with fewer requests in flight, e.g. -c 8
#              -m 2: 640 MiB in flight make each request take seconds here)
# vega-load runs with --timeout 60s (h2load has no request timeout): a slow request is counted,
# not failed.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
cmdline="bench/run-h2-load.sh $*"
reps=3 dur=5 conns=64 streams=10 servers=vega,nginx clients=h2load,vega-load fsize=1k
while getopts "r:d:c:m:S:C:f:h" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    d) dur=$OPTARG ;;
    c) conns=$OPTARG ;;
    m) streams=$OPTARG ;;
    S) servers=$OPTARG ;;
    C) clients=$OPTARG ;;
    f) fsize=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
for v in "$reps" "$dur" "$conns" "$streams"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "run-h2-load.sh: -r, -d, -c and -m want positive integers" >&2; exit 2; }
done
case $fsize in
  1k) fbytes=1024 flabel="1 KiB" ;;
  1m) fbytes=1048576 flabel="1 MiB" ;;
  *) echo "run-h2-load.sh: -f wants 1k or 1m" >&2; exit 2 ;;
esac
build=${1:-$root/build-bench-h2}
case $build in /*) ;; *) build=$PWD/$build ;; esac

for t in taskset ss openssl; do
  command -v "$t" >/dev/null || { echo "run-h2-load.sh: $t is not installed" >&2; exit 1; }
done

# ---- build -----------------------------------------------------------------------------------
blog=$(mktemp)
if [ ! -f "$build/CMakeCache.txt" ]; then
  timeout 600 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DVEGA_BUILD_BENCH=OFF >"$blog" 2>&1 ||
    { tail -30 "$blog" >&2; echo "run-h2-load.sh: cmake configure failed" >&2; exit 1; }
fi
timeout 1800 cmake --build "$build" -j "$(nproc)" --target vega-serve vega-load >"$blog" 2>&1 ||
  { tail -30 "$blog" >&2; echo "run-h2-load.sh: build failed" >&2; exit 1; }
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
py=$(command -pv python3) || { echo "run-h2-load.sh: python3 is not installed" >&2; exit 1; }
docroot=$tmp/www
mkdir -p "$docroot"
head -c "$fbytes" /dev/urandom >"$docroot/$fsize"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1 ||
  { echo "run-h2-load.sh: openssl could not make a certificate" >&2; exit 1; }

# Why a server or client cannot run here, or nothing when it can.
missing() {
  case $1 in
    # (grep reads the whole help: with -q it could stop early, and pipefail would see SIGPIPE)
    vega) "$vega_serve" --help 2>&1 | grep -- '--no-http2' >/dev/null || echo "vega-serve does not serve HTTP/2" ;;
    nginx) command -v nginx >/dev/null || echo "nginx is not installed" ;;
    h2load) command -v h2load >/dev/null || echo "h2load is not installed (nghttp2-client)" ;;
    vega-load) "$vega_load" --help 2>&1 | grep -- '--h2' >/dev/null || echo "vega-load does not speak HTTP/2" ;;
    *) echo "unknown server or client $1" ;;
  esac
}

nginx_conf() { # PORT
  local p=$tmp/nginx-$1
  mkdir -p "$p"
  # keepalive_requests: nginx ends an HTTP/2 connection after 1000 requests by default (a new
  # TLS handshake each time); raised so that both servers keep their connections.
  cat >"$p/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
error_log stderr;
pid $p/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 100000000;
    client_body_temp_path $p/body;
    proxy_temp_path $p/proxy;
    fastcgi_temp_path $p/fcgi;
    uwsgi_temp_path $p/uwsgi;
    scgi_temp_path $p/scgi;
    server {
        listen 127.0.0.1:$1 ssl http2;
        ssl_protocols TLSv1.3;
        ssl_certificate $tmp/cert.pem;
        ssl_certificate_key $tmp/key.pem;
        root $docroot;
    }
}
EOF
}

server_cmd() { # NAME PORT
  case $1 in
    vega) echo "$vega_serve -q --workers 1 --no-http3 --cert $tmp/cert.pem --key $tmp/key.pem -b 127.0.0.1 -p $2 $docroot" ;;
    nginx) echo "nginx -c $tmp/nginx-$2/nginx.conf -p $tmp/nginx-$2" ;;
    *) return 1 ;;
  esac
}

free_port() {
  command -p python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_server NAME: on CPU 0, a fresh TCP port; sets spid (the server), tpid (timeout wrapper),
# sport, serr.
start_server() {
  local name=$1 cmd i
  sport=$(free_port) serr=$tmp/server-$name-$sport.err
  [ "$name" = nginx ] && nginx_conf "$sport"
  cmd=$(server_cmd "$name" "$sport") || return 1
  # shellcheck disable=SC2086
  timeout -k 2 3000 taskset -c 0 $cmd >/dev/null 2>"$serr" &
  tpid=$!
  pids+=("$tpid")
  spid=
  for ((i = 0; i < 400; i++)); do
    [ -z "$spid" ] && spid=$(awk '{ print $1 }' "/proc/$tpid/task/$tpid/children" 2>/dev/null)
    if [ -n "$spid" ] && ss -Hltn "sport = :$sport" 2>/dev/null | grep -q .; then
      return 0
    fi
    kill -0 "$tpid" 2>/dev/null || break
    sleep 0.05
  done
  return 1
}

# load_run CLIENT URL SECS: prints "requests seconds errors client_cpu_s" for one run on CPU 1
# (errors: the client's own plus responses that were not 2xx); the TLS it negotiated goes to
# $tmp/tls.
load_run() {
  local client=$1 url=$2 secs=$3 out
  case $client in
    vega-load)
      out=$(timeout -k 2 $((secs * 3 + 30)) taskset -c 1 "$py" "$here/timed.py" "$tmp/load.time" \
        "$vega_load" --h2 -t1 -c"$conns" -m"$streams" -d"${secs}s" --timeout 60s -k --json "$url" 2>"$tmp/load.err") ||
        { cat "$tmp/load.err" >&2; return 1; }
      command -p python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
bad = sum(v for k, v in j.get("status", {}).items() if not k.startswith("2"))
cpu = open(sys.argv[1]).read().split()[1]
open(sys.argv[2], "w").write(j.get("tls", "?") + "\n")
print(j["requests"], j.get("duration_s", 0), j.get("errors", 0) + bad, cpu)' "$tmp/load.time" "$tmp/tls" <<<"$out"
      ;;
    h2load)
      out=$(timeout -k 2 $((secs * 3 + 30)) taskset -c 1 "$py" "$here/timed.py" "$tmp/load.time" \
        h2load -t1 -c"$conns" -m"$streams" -D"$secs" --tls13-ciphers=TLS_AES_256_GCM_SHA384 "$url" 2>"$tmp/load.err") ||
        { cat "$tmp/load.err" >&2; return 1; }
      # "finished in 5.00s, 1234.50 req/s, ..."; "requests: N total, N started, D done,
      # S succeeded, F failed, E errored, T timeout"
      command -p python3 -c '
import re, sys
t = sys.stdin.read()
m = re.search(r"finished in ([0-9.]+)(m?s), ([0-9.]+) req/s", t)
r = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", t)
secs = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
done, ok = int(r.group(3)), int(r.group(4))
cpu = open(sys.argv[1]).read().split()[1]
v = re.search(r"TLS Protocol: (\S+)", t)
c = re.search(r"Cipher: (\S+)", t)
a = re.search(r"Application protocol: (\S+)", t)
open(sys.argv[2], "w").write("%s, %s, ALPN %s\n" % (v and v.group(1), c and c.group(1), a and a.group(1)))
print(ok, secs, done - ok + int(r.group(6)), cpu)' "$tmp/load.time" "$tmp/tls" <<<"$out"
      ;;
    *) return 1 ;;
  esac
}

# one SERVER CLIENT REP: appends "server client rep rps server_cpu_us_per_req
# client_cpu_us_per_req" (or a FAIL line)
one() {
  local name=$1 client=$2 rep=$3 url c0 c1 res n s e lc
  if ! start_server "$name"; then
    echo "run-h2-load.sh: $name did not start: $(tail -5 "$serr" 2>/dev/null)" >&2
    echo "$name $client $rep FAIL start" >>"$raw"; stop_server; return
  fi
  url="https://127.0.0.1:$sport/$fsize"
  load_run "$client" "$url" 1 >/dev/null
  c0=$(cpu_ticks "$spid")
  res=$(load_run "$client" "$url" "$dur")
  c1=$(cpu_ticks "$spid")
  [ "$rep" = 1 ] && echo "$name $client: $(cat "$tmp/tls" 2>/dev/null)" >>"$tmp/tls-seen"
  stop_server
  read -r n s e lc <<<"$res"
  if [ -z "${n:-}" ] || [ "$n" = 0 ] || [ -z "$c0" ] || [ -z "$c1" ]; then
    echo "$name $client $rep FAIL load" >>"$raw"; return
  fi
  if [ "${e:-0}" != 0 ]; then echo "$name $client $rep FAIL ${e}errors" >>"$raw"; return; fi
  awk -v nm="$name" -v cl="$client" -v r="$rep" -v n="$n" -v s="$s" -v c0="$c0" -v c1="$c1" -v hz="$clk_tck" -v lc="$lc" \
    'BEGIN { if (s <= 0) s = 1; printf "%s %s %s %.0f %.3f %.3f\n", nm, cl, r, n / s, (c1 - c0) / hz * 1e6 / n, lc * 1e6 / n }' >>"$raw"
}

IFS=, read -r -a want_s <<<"$servers"
IFS=, read -r -a want_c <<<"$clients"
pairs=()
skipped=()
for name in "${want_s[@]}"; do
  why=$(missing "$name")
  [ -n "$why" ] && { skipped+=("$name: $why"); continue; }
  for cl in "${want_c[@]}"; do
    why=$(missing "$cl")
    if [ -n "$why" ]; then skipped+=("$cl: $why"); else pairs+=("$name:$cl"); fi
  done
done
[ ${#pairs[@]} -gt 0 ] || { echo "run-h2-load.sh: nothing can run (${skipped[*]})" >&2; exit 1; }
start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
np=${#pairs[@]}
for ((rep = 1; rep <= reps; rep++)); do
  for ((k = 0; k < np; k++)); do
    p=${pairs[$(((k + rep - 1) % np))]}
    one "${p%%:*}" "${p#*:}" "$rep"
  done
done
elapsed=$(( $(date +%s) - start ))

# ---- report ----------------------------------------------------------------------------------
echo "## HTTP/2 over TLS, static file ($flabel): $(date -u +%Y-%m-%d), $(nproc) CPUs, -t 1 -c $conns -m $streams, ${dur}s x ${reps}"
echo
echo "Command: \`$cmdline\` ($elapsed s). Server on CPU 0 (one worker/process), load on CPU 1."
echo "Load average before and after: $load0; $(cut -d' ' -f1-3 /proc/loadavg) (other work on the"
echo "machine takes CPU time from both pinned processes: judge by CPU per request)."
echo "Versions: $(nginx -v 2>&1 | sed 's/.*: //'), $(h2load --version 2>/dev/null | head -1)."
for s in "${skipped[@]}"; do echo "Not run: $s."; done
echo "TLS as negotiated (server client: version, cipher, ALPN):"
sed 's/^/    /' "$tmp/tls-seen" 2>/dev/null
echo
echo "| server | client | median req/s | median server CPU us/req | median client CPU us/req |"
echo "|---|---|---:|---:|---:|"
awk '
  $4 == "FAIL" { fail[$1" "$2]++; why[$1" "$2] = why[$1" "$2] " " $5; next }
  { k = $1" "$2; n[k]++; rps[k, n[k]] = $4; scpu[k, n[k]] = $5; ccpu[k, n[k]] = $6; sv[k] = 1 }
  function med(a, k, m,   i, j, t, v) { for (i = 1; i <= m; i++) v[i] = a[k, i]; for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
  END {
    for (k in sv) { split(k, p, " "); printf "| %s | %s | %.0f | %.2f | %.2f |\n", p[1], p[2], med(rps, k, n[k]), med(scpu, k, n[k]), med(ccpu, k, n[k]) }
    for (k in fail) { split(k, p, " "); printf "| %s | %s | FAILED runs: %d (%s) | | |\n", p[1], p[2], fail[k], why[k] }
  }' "$raw" | sort
echo
echo "Ratios (medians of per-repetition ratios):"
echo
echo "| comparison | req/s ratio | CPU/req ratio (other / ours) |"
echo "|---|---:|---:|"
awk '
  $4 == "FAIL" { next }
  { r[$1" "$2" "$3] = $4; sc[$1" "$2" "$3] = $5; cc[$1" "$2" "$3] = $6; reps[$3] = 1 }
  function med(v, m,   i, j, t) { for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
  # ratio A B: A over B by repetition; x: 0 req/s, 1 server CPU B/A, 2 client CPU B/A
  function ratio(a, b, x,   m, rp, q) {
    m = 0
    for (rp in reps) if ((a" "rp) in r && (b" "rp) in r)
      q[++m] = x == 1 ? sc[b" "rp] / sc[a" "rp] : x == 2 ? cc[b" "rp] / cc[a" "rp] : r[a" "rp] / r[b" "rp]
    return m ? sprintf("%.2f", med(q, m)) : "-" }
  END {
    printf "| server vega-serve vs nginx (client h2load) | %s | %s (server) |\n", ratio("vega h2load", "nginx h2load", 0), ratio("vega h2load", "nginx h2load", 1)
    printf "| server vega-serve vs nginx (client vega-load) | %s | %s (server) |\n", ratio("vega vega-load", "nginx vega-load", 0), ratio("vega vega-load", "nginx vega-load", 1)
    printf "| client vega-load vs h2load (server nginx) | %s | %s (client) |\n", ratio("nginx vega-load", "nginx h2load", 0), ratio("nginx vega-load", "nginx h2load", 2)
    printf "| client vega-load vs h2load (server vega-serve) | %s | %s (client) |\n", ratio("vega vega-load", "vega h2load", 0), ratio("vega vega-load", "vega h2load", 2)
  }' "$raw"
echo
echo "Per run (server, client, repetition, req/s, server CPU us/req, client CPU us/req):"
sed 's/^/    /' "$raw"
