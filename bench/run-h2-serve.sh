#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTP/2 static-file benchmark over TLS, in one run: vega-serve (one worker) against nginx
# (nginx-light, one worker, `http2` on, sendfile on, no access log) serving the same files with
# the same certificate, loaded by h2load (ALPN h2, one thread):
#   small: a 1 KiB file, h2load -c 64 -m 10 for -d seconds (after a 1 s warm-up run);
#   big:   a 128 MiB file, h2load -c 1 -m 1, -b downloads in a row;
#   idle:  memory per idle HTTP/2 connection: bench/h2_idle.py opens -i TLS connections, each
#          asks for the 1 KiB file once and then stays open without a byte; the server's RSS
#          growth (VmRSS, and RssAnon: heap and stacks) divided by their number (once per server).
# The server is pinned to CPU 0, h2load to CPU 1 (as bench/run-h3-load.sh does); runs are
# interleaved and the server order rotates each repetition.
#
# On two cores the load saturates its own CPU, so requests per second measure client and server
# together; servers are also judged by their CPU time (utime+stime from /proc/PID/stat) per
# request and per MiB. Ratios are medians of per-repetition ratios; "x nginx" above 1 means vega
# is better (more req/s or MB/s, less CPU). Every run is bounded by timeout.
#
# usage: bench/run-h2-serve.sh [-r REPS] [-d SECS] [-b DOWNLOADS] [-i CONNS] [-S LIST] [BUILD_DIR]
#   BUILD_DIR  CMake build directory (default build-bench-h2; configured Release if new)
#   -r REPS    repetitions (default 3)
#   -d SECS    measured small-file load per run (default 5)
#   -b N       128 MiB downloads per big run (default 4)
#   -i CONNS   idle connections for the memory measure (default 1000; 0: skip it)
#   -S LIST    servers (default vega,nginx; caddy adds Caddy 2.6, Go's HTTP/2, GOMAXPROCS=1)
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
cmdline="bench/run-h2-serve.sh $*"
reps=3 dur=5 downloads=4 idle=1000 servers=vega,nginx
while getopts "r:d:b:i:S:h" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    d) dur=$OPTARG ;;
    b) downloads=$OPTARG ;;
    i) idle=$OPTARG ;;
    S) servers=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
for v in "$reps" "$dur" "$downloads"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "run-h2-serve.sh: -r, -d and -b want positive integers" >&2; exit 2; }
done
build=${1:-$root/build-bench-h2}
case $build in /*) ;; *) build=$PWD/$build ;; esac

for t in taskset ss openssl h2load; do
  command -v "$t" >/dev/null || { echo "run-h2-serve.sh: $t is not installed" >&2; exit 1; }
done

# ---- build -----------------------------------------------------------------------------------
blog=$(mktemp)
if [ ! -f "$build/CMakeCache.txt" ]; then
  timeout 600 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DVEGA_BUILD_BENCH=OFF >"$blog" 2>&1 ||
    { tail -30 "$blog" >&2; echo "run-h2-serve.sh: cmake configure failed" >&2; exit 1; }
fi
timeout 1800 cmake --build "$build" -j "$(nproc)" --target vega-serve >"$blog" 2>&1 ||
  { tail -30 "$blog" >&2; echo "run-h2-serve.sh: build failed" >&2; exit 1; }
rm -f "$blog"
vega_serve=$build/cli/vega-serve
[ -x "$vega_serve" ] || vega_serve=$build/cli/vega-serve/vega-serve

# ---- processes -------------------------------------------------------------------------------
bench_tmp
raw=$tmp/raw
: >"$raw"
clk_tck=$(getconf CLK_TCK)
py=$(command -pv python3) || { echo "run-h2-serve.sh: python3 is not installed" >&2; exit 1; }
docroot=$tmp/www
mkdir -p "$docroot"
head -c 1024 /dev/urandom >"$docroot/1k"
head -c $((128 << 20)) /dev/urandom >"$docroot/128m"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1 ||
  { echo "run-h2-serve.sh: openssl could not make a certificate" >&2; exit 1; }

missing() {
  case $1 in
    vega) [ -x "$vega_serve" ] || echo "no vega-serve in $build" ;;
    nginx) command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || echo "nginx is not installed" ;;
    caddy) command -v caddy >/dev/null || echo "caddy is not installed" ;;
    *) echo "unknown server $1" ;;
  esac
}

nginx_conf() { # PORT
  local d=$tmp/nginx-$1
  mkdir -p "$d"
  cat >"$d/nginx.conf" <<EOF
worker_processes 1;
daemon off;
master_process off;
error_log $d/error.log;
pid $d/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  keepalive_requests 100000000;
  client_body_temp_path $d/body;
  proxy_temp_path $d/proxy;
  fastcgi_temp_path $d/fastcgi;
  uwsgi_temp_path $d/uwsgi;
  scgi_temp_path $d/scgi;
  types { application/octet-stream bin; }
  server {
    listen 127.0.0.1:$1 ssl http2;
    ssl_certificate $tmp/cert.pem;
    ssl_certificate_key $tmp/key.pem;
    ssl_protocols TLSv1.3;
    root $docroot;
  }
}
EOF
}

caddy_conf() { # PORT: h1 and h2 over TLS 1.3 (no HTTP/3, as the others), files as they are
  local d=$tmp/caddy-$1
  mkdir -p "$d"
  cat >"$d/Caddyfile" <<EOF
{
  admin off
  auto_https off
  storage file_system $d/data
  servers {
    protocols h1 h2
  }
}
https://127.0.0.1:$1 {
  bind 127.0.0.1
  tls $tmp/cert.pem $tmp/key.pem {
    protocols tls1.3
  }
  root * $docroot
  file_server
}
EOF
}

server_cmd() { # NAME PORT
  case $1 in
    vega) echo "$vega_serve -q --workers 1 --no-http3 --cert $tmp/cert.pem --key $tmp/key.pem -b 127.0.0.1 -p $2 $docroot" ;;
    nginx) echo "nginx -c $tmp/nginx-$2/nginx.conf -p $tmp/nginx-$2" ;;
    caddy) echo "env GOMAXPROCS=1 HOME=$tmp/caddy-$2 XDG_DATA_HOME=$tmp/caddy-$2 XDG_CONFIG_HOME=$tmp/caddy-$2 caddy run --config $tmp/caddy-$2/Caddyfile --adapter caddyfile" ;;
    *) return 1 ;;
  esac
}

free_tcp_port() {
  command -p python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_server NAME: on CPU 0, a fresh port; sets spid (the server), tpid (timeout wrapper),
# sport, serr.
start_server() {
  local name=$1 cmd i
  sport=$(free_tcp_port) serr=$tmp/server-$name-$sport.err
  [ "$name" = nginx ] && nginx_conf "$sport"
  [ "$name" = caddy ] && caddy_conf "$sport"
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

# h2 ARGS...: h2load on CPU 1; prints "requests seconds bad bytes" (bad: requests not
# succeeded plus answers that were not 2xx; bytes: the data bytes h2load counted).
h2() {
  local out
  out=$(timeout -k 2 300 taskset -c 1 h2load "$@" 2>&1) || { echo "$out" | tail -5 >&2; return 1; }
  awk '
    /^finished in/ { s = $3; sub(/,$/, "", s)
      if (s ~ /ms$/) { sub(/ms$/, "", s); s /= 1000 } else if (s ~ /us$/) { sub(/us$/, "", s); s /= 1e6 } else sub(/s$/, "", s) }
    /^requests:/ { n = $2; ok = $8 }
    /^status codes:/ { two = $3 }
    /^traffic:/ { for (i = 1; i <= NF; i++) if ($i == "data") { d = $(i - 1); gsub(/[()]/, "", d) } }
    END { if (n == "") exit 1; print ok, s, (n - ok) + (ok - two), d }' <<<"$out"
}

# one SERVER REP: appends "server rep kind rate cpu_per_unit" lines (kind small: req/s and
# CPU us/req; kind big: MB/s and CPU ms per GiB), or FAIL lines.
one() {
  local name=$1 rep=$2 url c0 c1 res n s bad bytes
  if ! start_server "$name"; then
    echo "run-h2-serve.sh: $name did not start: $(tail -5 "$serr" 2>/dev/null)" >&2
    echo "$name $rep small FAIL start" >>"$raw"; stop_server; return
  fi
  url="https://127.0.0.1:$sport"
  h2 -c 64 -m 10 -D 1 "$url/1k" >/dev/null
  c0=$(cpu_ticks "$spid")
  res=$(h2 -c 64 -m 10 -D "$dur" "$url/1k")
  c1=$(cpu_ticks "$spid")
  read -r n s bad bytes <<<"$res"
  if [ -z "${n:-}" ] || [ "$n" = 0 ] || [ "${bad:-1}" != 0 ] || [ "$bytes" != $((n * 1024)) ]; then
    echo "$name $rep small FAIL n=${n:-} bad=${bad:-} bytes=${bytes:-}" >>"$raw"
  else
    awk -v nm="$name" -v r="$rep" -v n="$n" -v s="$s" -v c0="$c0" -v c1="$c1" -v hz="$clk_tck" \
      'BEGIN { printf "%s %s small %.0f %.2f\n", nm, r, n / s, (c1 - c0) / hz * 1e6 / n }' >>"$raw"
  fi
  c0=$(cpu_ticks "$spid")
  res=$(h2 -c 1 -m 1 -n "$downloads" "$url/128m")
  c1=$(cpu_ticks "$spid")
  stop_server
  read -r n s bad bytes <<<"$res"
  if [ -z "${n:-}" ] || [ "$n" != "$downloads" ] || [ "${bad:-1}" != 0 ] ||
    [ "$bytes" != $((n * (128 << 20))) ]; then
    echo "$name $rep big FAIL n=${n:-} bad=${bad:-} bytes=${bytes:-}" >>"$raw"
  else
    awk -v nm="$name" -v r="$rep" -v b="$bytes" -v s="$s" -v c0="$c0" -v c1="$c1" -v hz="$clk_tck" \
      'BEGIN { printf "%s %s big %.1f %.1f\n", nm, r, b / s / 1e6, (c1 - c0) / hz * 1e3 / (b / 1073741824) }' >>"$raw"
  fi
}

IFS=, read -r -a want <<<"$servers"
srv=()
skipped=()
for name in "${want[@]}"; do
  why=$(missing "$name")
  if [ -n "$why" ]; then skipped+=("$name: $why"); else srv+=("$name"); fi
done
[ ${#srv[@]} -gt 0 ] || { echo "run-h2-serve.sh: no server can run (${skipped[*]})" >&2; exit 1; }
start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
ns=${#srv[@]}
for ((rep = 1; rep <= reps; rep++)); do
  for ((k = 0; k < ns; k++)); do
    one "${srv[$(((k + rep - 1) % ns))]}" "$rep"
  done
done

# idle SERVER: appends "server - idle rss_bytes_per_conn anon_bytes_per_conn" (or FAIL)
idle_one() {
  local name=$1 r0 a0 r1 a1 hp i
  start_server "$name" || { echo "$name - idle FAIL start" >>"$raw"; stop_server; return; }
  h2 -c 1 -n 1 "https://127.0.0.1:$sport/1k" >/dev/null
  sleep 1
  r0=$(rss_kb "$spid") a0=$(anon_kb "$spid")
  mkfifo "$tmp/idle.in"
  timeout 120 "$py" "$here/h2_idle.py" "$sport" "$idle" /1k <"$tmp/idle.in" >"$tmp/idle.out" 2>&1 &
  hp=$!
  pids+=("$hp")
  exec 3>"$tmp/idle.in"
  for ((i = 0; i < 1200; i++)); do
    grep -qE 'ready|failed' "$tmp/idle.out" 2>/dev/null && break
    kill -0 "$hp" 2>/dev/null || break
    sleep 0.1
  done
  sleep 2 # vega parks an idle connection after 20 ms; both settle
  r1=$(rss_kb "$spid") a1=$(anon_kb "$spid")
  exec 3>&-
  wait "$hp"
  rm -f "$tmp/idle.in"
  stop_server
  if grep -q "ready $idle" "$tmp/idle.out"; then
    echo "$name - idle $(((r1 - r0) * 1024 / idle)) $(((a1 - a0) * 1024 / idle))" >>"$raw"
  else
    echo "$name - idle FAIL $(tr ' ' _ <"$tmp/idle.out" | head -c 80)" >>"$raw"
  fi
}
if [ "$idle" -gt 0 ]; then
  # each connection costs this script one fd and the server one
  ulimit -n "$(ulimit -Hn)" 2>/dev/null
  [ "$(ulimit -n)" -gt $((idle + 100)) ] || idle=$(($(ulimit -n) - 100))
  for name in "${srv[@]}"; do idle_one "$name"; done
fi
elapsed=$(($(date +%s) - start))

# ---- report ----------------------------------------------------------------------------------
echo "## HTTP/2 over TLS, static files: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, h2load $(h2load --version 2>/dev/null | awk '{ print $2; exit }'), $(nginx -v 2>&1 | sed 's/.*: //')"
echo
echo "Command: \`$cmdline\` ($elapsed s). Server on CPU 0 (one worker/process), h2load on CPU 1:"
echo "small = \`h2load -c 64 -m 10 -D $dur https://.../1k\`, big = \`h2load -c 1 -m 1 -n $downloads https://.../128m\`."
echo "Load average before and after: $load0; $(cut -d' ' -f1-3 /proc/loadavg) (other work on the"
echo "machine takes CPU time from both pinned processes: judge by CPU per request)."
for s in "${skipped[@]}"; do echo "Not run: $s."; done
echo
echo "| server | 1 KiB req/s | 1 KiB server CPU us/req | req/s x nginx | CPU/req x nginx (nginx / server) | 128 MiB MB/s | 128 MiB server CPU ms/GiB | MB/s x nginx | CPU/GiB x nginx (nginx / server) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
awk '
  $4 == "FAIL" { fail[$1] = fail[$1] " " $3 ":" $5; next }
  $3 == "idle" { next }
  { k = $1 SUBSEP $3; v[k, ++n[k]] = $4; c[k, n[k]] = $5; R[$1, $3, $2] = $4; C[$1, $3, $2] = $5; sv[$1] = 1; reps[$2] = 1 }
  function med(a, m,   i, j, t, w) { for (i = 1; i <= m; i++) w[i] = a[i]; for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (w[j] < w[i]) { t = w[i]; w[i] = w[j]; w[j] = t }
    return m % 2 ? w[(m + 1) / 2] : (w[m / 2] + w[m / 2 + 1]) / 2 }
  function mv(s, kind, cpu,   k, m, i, a) { k = s SUBSEP kind; m = 0; for (i = 1; i <= n[k]; i++) a[++m] = cpu ? c[k, i] : v[k, i]; return m ? med(a, m) : -1 }
  function ratio(s, kind, cpu,   m, rp, q) {
    m = 0
    for (rp in reps) if ((s, kind, rp) in R && ("nginx", kind, rp) in R) q[++m] = cpu ? C["nginx", kind, rp] / C[s, kind, rp] : R[s, kind, rp] / R["nginx", kind, rp]
    return m ? sprintf("%.2f", med(q, m)) : "-" }
  function f(x, fmt) { return x < 0 ? "-" : sprintf(fmt, x) }
  END {
    for (s in sv)
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s, f(mv(s, "small", 0), "%.0f"), f(mv(s, "small", 1), "%.2f"),
        ratio(s, "small", 0), ratio(s, "small", 1), f(mv(s, "big", 0), "%.1f"), f(mv(s, "big", 1), "%.0f"), ratio(s, "big", 0), ratio(s, "big", 1)
    for (s in fail) printf "| %s | FAILED runs:%s | | | | | | | |\n", s, fail[s]
  }' "$raw" | sort
if grep -q ' idle [0-9-]' "$raw"; then
  echo
  echo "Memory per idle HTTP/2 connection over TLS ($idle connections, each after one request):"
  echo
  echo "| server | RSS bytes per connection | anonymous RSS bytes per connection |"
  echo "|---|---:|---:|"
  awk '$3 == "idle" && $4 != "FAIL" { printf "| %s | %d | %d |\n", $1, $4, $5 }' "$raw" | sort
fi
echo
echo "Per repetition (server, repetition, kind, req/s or MB/s, CPU us/req or ms/GiB; idle: bytes):"
sed 's/^/    /' "$raw"
grep -q FAIL "$raw" && exit 1
exit 0
