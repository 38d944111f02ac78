#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTP/1.1 static-file benchmark, in one run: vega-serve against nginx (1 worker, access log
# off, sendfile on) and Caddy's file_server (GOMAXPROCS=1), for a 1 KiB and a 1 MiB file over
# keep-alive, loaded by wrk and by vega-load (one thread each); then vega-load against wrk
# driving nginx; then the memory of idle keep-alive connections. The server is pinned to CPU 0,
# the load to CPU 1. Runs are interleaved (the server order rotates each repetition).
#
# On two cores the load saturates its own CPU, so requests per second measure client and
# server together; servers are also judged by their CPU time per request (utime+stime from
# /proc/PID/stat over the requests the load counted). Ratios are medians of per-repetition
# ratios against nginx.
#
# usage: bench/run-http.sh [-r REPS] [-d SECS] [-c CONNS] [-S LIST] [-L LIST] [-f LIST]
#                          [-n IDLE] [-M] [BUILD_DIR]
#   BUILD_DIR  CMake build directory (default build-bench-http; configured Release if new)
#   -r REPS    repetitions (default 5)
#   -d SECS    measured load per run (default 5; a 1 s warm-up run precedes each)
#   -c CONNS   keep-alive connections (default 64)
#   -S LIST    servers (default vega,nginx,caddy; also vega-epoll, vega-nocache (vega-serve
#              --no-cache) and nginx-cache (nginx with open_file_cache, entries trusted 60 s))
#   -L LIST    load generators (default wrk,vega-load)
#   -f LIST    files (default 1k,1m)
#   -n IDLE    idle keep-alive connections for the memory test (default 10000)
#   -M         skip the memory test
#   -m LIST    servers of the memory test (default vega,vega-epoll,nginx); also vega-w2 and
#              vega-epoll-w2 (two workers instead of one), vega-tls,
#              vega-tls-epoll and nginx-tls: the same over TLS 1.3 (one self-signed ECDSA
#              P-256 certificate; vega-serve --no-http3), the idle connections done with
#              idle-conns -T
# VEGA_SERVE_BEFORE=PATH adds the server vega-before: that vega-serve binary (io_uring), to
# compare a change with the build before it in the same run (vega-tls-before in -m: the same
# over TLS).
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
cmdline="bench/run-http.sh $*"
reps=5 dur=5 conns=64 servers=vega,nginx,caddy loads=wrk,vega-load files=1k,1m idle_n=10000 mem=1 memservers=vega,vega-epoll,nginx
while getopts "r:d:c:S:L:f:n:m:Mh" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    d) dur=$OPTARG ;;
    c) conns=$OPTARG ;;
    S) servers=$OPTARG ;;
    L) loads=$OPTARG ;;
    f) files=$OPTARG ;;
    n) idle_n=$OPTARG ;;
    M) mem=0 ;;
    m) memservers=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "run-http.sh: -r wants a positive integer" >&2; exit 2; }
[[ $dur =~ ^[1-9][0-9]*$ ]] || { echo "run-http.sh: -d wants whole seconds" >&2; exit 2; }
[[ $conns =~ ^[1-9][0-9]*$ ]] || { echo "run-http.sh: -c wants a positive integer" >&2; exit 2; }
build=${1:-$root/build-bench-http}
case $build in /*) ;; *) build=$PWD/$build ;; esac

for t in nginx caddy wrk taskset ss; do
  command -v "$t" >/dev/null || { echo "run-http.sh: $t is not installed (scripts/common.sh lists the packages)" >&2; exit 1; }
done

# ---- build -----------------------------------------------------------------------------------
blog=$(mktemp)
if [ ! -f "$build/CMakeCache.txt" ]; then
  timeout 600 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$blog" 2>&1 ||
    { tail -30 "$blog" >&2; echo "run-http.sh: cmake configure failed" >&2; exit 1; }
fi
timeout 1200 cmake --build "$build" -j "$(nproc)" --target vega-serve vega-load idle-conns >"$blog" 2>&1 ||
  { tail -30 "$blog" >&2; echo "run-http.sh: build failed" >&2; exit 1; }
rm -f "$blog"
vega_serve=$build/cli/vega-serve
vega_load=$build/cli/vega-load
idle_conns=$build/bench/echo/idle-conns

# ---- processes -------------------------------------------------------------------------------
bench_tmp
raw=$tmp/raw memraw=$tmp/mem
: >"$raw"; : >"$memraw"

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
nofile=$(ulimit -n)
clk_tck=$(getconf CLK_TCK)
port=${PORT_BASE:-32000}

docroot=$tmp/www
mkdir -p "$docroot"
head -c 1024 /dev/urandom >"$docroot/1k"
head -c 1048576 /dev/urandom >"$docroot/1m"
printf '<!doctype html><title>bench</title><p>ok</p>\n' >"$docroot/index.html"
case ,$memservers, in
  *-tls*) openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
            -subj /CN=localhost -keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1 ||
            { echo "run-http.sh: openssl could not make a certificate" >&2; exit 1; } ;;
esac

# worker_connections at twice the idle connections: with fewer than a sixteenth of its
# connections free nginx closes idle keep-alive ones (ngx_drain_connections); at idle_n + 200
# it held 9,552 of 10,000 and its per-connection figure read 9% low (2026-12-03).
nginx_conf() { # PORT [EXTRA [LISTEN-EXTRA]]
  mkdir -p "$tmp/nginx-$1"
  cat >"$tmp/nginx-$1.conf" <<EOF
worker_processes 1;
master_process off;
daemon off;
pid $tmp/nginx-$1/nginx.pid;
error_log $tmp/nginx-$1/error.log;
worker_rlimit_nofile $nofile;
events { worker_connections $((idle_n * 2 + 200)); }
http {
  access_log off;
  client_body_temp_path $tmp/nginx-$1; proxy_temp_path $tmp/nginx-$1;
  fastcgi_temp_path $tmp/nginx-$1; uwsgi_temp_path $tmp/nginx-$1; scgi_temp_path $tmp/nginx-$1;
  sendfile on; tcp_nopush on;
  keepalive_timeout 300s; keepalive_requests 10000000; client_header_timeout 300s;
  default_type application/octet-stream;
  ${2:-}
  server { listen 127.0.0.1:$1 ${3:-}; root $docroot; }
}
EOF
}

caddy_conf() { # PORT
  mkdir -p "$tmp/caddy-$1"
  cat >"$tmp/caddy-$1/Caddyfile" <<EOF
{
  admin off
  auto_https off
  storage file_system $tmp/caddy-$1/data
}
http://127.0.0.1:$1 {
  root * $docroot
  file_server
}
EOF
}

server_cmd() { # NAME PORT
  case $1 in
    vega) echo "$vega_serve -q --workers 1 --driver uring -l 127.0.0.1:$2 $docroot" ;;
    vega-epoll) echo "$vega_serve -q --workers 1 --driver epoll -l 127.0.0.1:$2 $docroot" ;;
    vega-nocache) echo "$vega_serve -q --workers 1 --driver uring --no-cache -l 127.0.0.1:$2 $docroot" ;;
    # two workers (each shard's default in bench/run-idle-100k.sh), for the memory test
    vega-w2) echo "$vega_serve -q --workers 2 --driver uring -l 127.0.0.1:$2 $docroot" ;;
    vega-epoll-w2) echo "$vega_serve -q --workers 2 --driver epoll -l 127.0.0.1:$2 $docroot" ;;
    # another vega-serve binary (VEGA_SERVE_BEFORE, e.g. one built before a change), io_uring
    vega-before) [ -x "${VEGA_SERVE_BEFORE:-}" ] || return 1
      echo "$VEGA_SERVE_BEFORE -q --workers 1 --driver uring -l 127.0.0.1:$2 $docroot" ;;
    vega-tls-before) [ -x "${VEGA_SERVE_BEFORE:-}" ] || return 1
      echo "$VEGA_SERVE_BEFORE -q --workers 1 --driver uring --cert $tmp/cert.pem --key $tmp/key.pem --no-http3 -l 127.0.0.1:$2 $docroot" ;;
    vega-tls) echo "$vega_serve -q --workers 1 --driver uring --cert $tmp/cert.pem --key $tmp/key.pem --no-http3 -l 127.0.0.1:$2 $docroot" ;;
    vega-tls-epoll) echo "$vega_serve -q --workers 1 --driver epoll --cert $tmp/cert.pem --key $tmp/key.pem --no-http3 -l 127.0.0.1:$2 $docroot" ;;
    nginx|nginx-cache|nginx-tls) echo "nginx -c $tmp/nginx-$2.conf" ;;
    caddy) echo "env GOMAXPROCS=1 HOME=$tmp/caddy-$2 caddy run --config $tmp/caddy-$2/Caddyfile --adapter caddyfile" ;;
    *) return 1 ;;
  esac
}

# start_server NAME: on CPU 0, a fresh port; sets spid (the server), tpid (timeout wrapper),
# sport, serr.
start_server() {
  local name=$1 cmd
  next_port
  serr=$tmp/server-$name-$sport.err
  case $name in
    nginx) nginx_conf "$sport" ;;
    nginx-cache) nginx_conf "$sport" "open_file_cache max=1000; open_file_cache_valid 60s;" ;;
    nginx-tls) nginx_conf "$sport" "" "ssl; ssl_certificate $tmp/cert.pem; ssl_certificate_key $tmp/key.pem; ssl_protocols TLSv1.3" ;;
    caddy) caddy_conf "$sport" ;;
  esac
  cmd=$(server_cmd "$name" "$sport") || return 1
  # `env` execs caddy; taskset execs the server: the child of timeout is the server itself.
  # shellcheck disable=SC2086
  launch_server "$serr" taskset -c 0 $cmd
}

# load_run LOAD URL SECS: prints "requests seconds errors" for one run on CPU 1.
load_run() {
  local load=$1 url=$2 secs=$3 out
  case $load in
    wrk)
      out=$(timeout -k 2 $((secs * 3 + 20)) taskset -c 1 wrk -t1 -c"$conns" -d"${secs}s" "$url" 2>&1) || return 1
      awk '/requests in/ { n = $1; s = $4; sub(/s,?$/, "", s) }
           /Socket errors/ { e = 0; for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) e += $i + 0 }
           /Non-2xx/ { e += $NF }
           END { if (n == "") exit 1; printf "%d %s %d\n", n, s, e }' <<<"$out"
      ;;
    vega-load)
      out=$(timeout -k 2 $((secs * 3 + 20)) taskset -c 1 "$vega_load" -t1 -c"$conns" -d"${secs}s" --json "$url" 2>/dev/null) || return 1
      vega_load_summary <<<"$out"
      ;;
  esac
}

# one FILE LOAD SERVER REP: appends "file load server rep rps cpu_us_per_req"
one() {
  local f=$1 load=$2 name=$3 rep=$4 url c0 c1 res n s e
  if ! start_server "$name"; then
    echo "run-http.sh: $name did not start: $(tail -5 "$serr" 2>/dev/null)" >&2
    echo "$f $load $name $rep FAIL start" >>"$raw"; stop_server; return
  fi
  url="http://127.0.0.1:$sport/$f"
  load_run "$load" "$url" 1 >/dev/null
  c0=$(cpu_ticks "$spid")
  res=$(load_run "$load" "$url" "$dur")
  c1=$(cpu_ticks "$spid")
  stop_server
  read -r n s e <<<"$res"
  if [ -z "${n:-}" ] || [ "$n" = 0 ] || [ -z "$c0" ] || [ -z "$c1" ]; then
    echo "$f $load $name $rep FAIL load" >>"$raw"; return
  fi
  if [ "${e:-0}" != 0 ]; then echo "$f $load $name $rep FAIL ${e}errors" >>"$raw"; return; fi
  awk -v f="$f" -v l="$load" -v nm="$name" -v r="$rep" -v n="$n" -v s="$s" -v c0="$c0" -v c1="$c1" \
      -v hz="$clk_tck" 'BEGIN { if (s <= 0) s = 1; printf "%s %s %s %s %.0f %.3f\n", f, l, nm, r, n / s, (c1 - c0) / hz * 1e6 / n }' >>"$raw"
}

IFS=, read -r -a srv <<<"$servers"
IFS=, read -r -a lds <<<"$loads"
IFS=, read -r -a fls <<<"$files"
start=$(date +%s)
ns=${#srv[@]}
for f in "${fls[@]}"; do
  for load in "${lds[@]}"; do
    for ((rep = 1; rep <= reps; rep++)); do
      for ((k = 0; k < ns; k++)); do
        one "$f" "$load" "${srv[$(((k + rep - 1) % ns))]}" "$rep"
      done
    done
  done
done

# ---- loaders against nginx: vega-load vs wrk, interleaved -------------------------------------
for ((rep = 1; rep <= reps; rep++)); do
  for load in wrk vega-load; do
    start_server nginx || continue
    res=$(load_run "$load" "http://127.0.0.1:$sport/1k" "$dur")
    stop_server
    read -r n s e <<<"$res"
    [ -n "${n:-}" ] && awk -v l="$load" -v r="$rep" -v n="$n" -v s="$s" -v e="$e" \
      'BEGIN { printf "loader %s %s %.0f %s\n", l, r, n / s, e }' >>"$raw"
  done
done
elapsed=$(( $(date +%s) - start ))

# ---- idle keep-alive connections: RSS growth per connection ----------------------------------
if [ $mem = 1 ]; then
  half=$((idle_n / 2))
  # idle_batch OUT: opens half of the idle connections (one GET / each) and waits until they
  # are all up; sets ipid.
  idle_batch() {
    local tflag=
    case $name in *-tls*) tflag=-T ;; esac
    timeout -k 2 120 "$idle_conns" -n "$half" -t 90 -H $tflag "127.0.0.1:$sport" >"$1" 2>"$1.err" &
    ipid=$!
    pids+=("$ipid")
    for ((i = 0; i < 600; i++)); do grep -q connected "$1" 2>/dev/null && break; sleep 0.1; done
    grep -q connected "$1"
  }
  for name in ${memservers//,/ }; do
    start_server "$name" || continue
    sleep 0.5
    r0=$(rss_kb "$spid")
    if idle_batch "$tmp/idle1.out"; then
      ip1=$ipid
      sleep 2
      r1=$(rss_kb "$spid")
      if idle_batch "$tmp/idle2.out"; then
        sleep 2
        r2=$(rss_kb "$spid")
        # a server that closed some of them would look cheaper than it is
        held=$(ss -Htn state established "( sport = :$sport )" | wc -l)
        if [ "$held" -lt $((half * 2)) ]; then
          echo "$name FAIL holds_only_${held}_of_$((half * 2))_connections" >>"$memraw"
        else
          echo "$name $r0 $r1 $r2" >>"$memraw"
        fi
      else
        echo "$name FAIL $(head -c 200 "$tmp/idle2.out.err" | tr '\n ' '__')" >>"$memraw"
      fi
      kill "$ip1" "$ipid" 2>/dev/null; wait "$ip1" "$ipid" 2>/dev/null
    else
      echo "$name FAIL $(head -c 200 "$tmp/idle1.out.err" | tr '\n ' '__')" >>"$memraw"
      kill "$ipid" 2>/dev/null; wait "$ipid" 2>/dev/null
    fi
    stop_server
  done
fi

# ---- report ----------------------------------------------------------------------------------
echo "## HTTP/1.1 static files: $(date -u +%Y-%m-%d), $(nproc) CPUs, ${conns} connections, ${dur}s x ${reps}"
echo
echo "Command: \`$cmdline\` ($elapsed s). Server on CPU 0 (one worker/process), load on CPU 1."
echo
echo "| file | load | server | median req/s | median server CPU us/req | req/s vs nginx | CPU/req: nginx / server |"
echo "|---|---|---|---:|---:|---:|---:|"
awk '
  $5 == "FAIL" { fail[$1" "$2" "$3]++; next }
  $1 == "loader" { next }
  { k = $1" "$2" "$3; rps[k, ++n[k]] = $5; cpu[k, n[k]] = $6; r[$1" "$2" "$3" "$4] = $5; c[$1" "$2" "$3" "$4] = $6
    keys[k] = 1; reps[$4] = 1; fl[$1" "$2] = 1; sv[$3] = 1 }
  function med(a, m,   i, j, t, v) { for (i = 1; i <= m; i++) v[i] = a[i]; for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
  END {
    for (fk in fl) for (s in sv) {
      k = fk" "s; if (!(k in keys)) continue
      m = 0; for (i = 1; i <= n[k]; i++) { a[++m] = rps[k, i] } ; mr = med(a, m)
      m = 0; for (i = 1; i <= n[k]; i++) { a[++m] = cpu[k, i] } ; mc = med(a, m)
      m = 0; for (rp in reps) if ((fk" "s" "rp) in r && (fk" nginx "rp) in r) { q[++m] = r[fk" "s" "rp] / r[fk" nginx "rp] }
      rr = m ? sprintf("%.2f", med(q, m)) : "-"
      m = 0; for (rp in reps) if ((fk" "s" "rp) in c && (fk" nginx "rp) in c) { q[++m] = c[fk" nginx "rp] / c[fk" "s" "rp] }
      cr = m ? sprintf("%.2f", med(q, m)) : "-"
      split(fk, p, " ")
      printf "| %s | %s | %s | %.0f | %.2f | %s | %s |\n", p[1], p[2], s, mr, mc, rr, cr
    }
    for (k in fail) printf "| %s | FAILED runs: %d | | | | | |\n", k, fail[k]
  }' "$raw" | sort
echo
echo "Loaders against nginx (1 KiB file, one thread each): median requests/s"
awk '$1 == "loader" { v[$2] = v[$2] " " $4; s[$2 " " $3] = $4 }
  END { for (l in v) printf "- %s:%s\n", l, v[l]
        m = 0; for (k in s) { split(k, p, " "); if (p[1] == "vega-load" && ("wrk " p[2]) in s) q[++m] = s[k] / s["wrk " p[2]] }
        if (m) { for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (q[j] < q[i]) { t = q[i]; q[i] = q[j]; q[j] = t }
          printf "- vega-load / wrk, median of per-repetition ratios: %.2f\n", m % 2 ? q[(m + 1) / 2] : (q[m / 2] + q[m / 2 + 1]) / 2 } }' "$raw"
if [ $mem = 1 ]; then
  echo
  echo "Idle keep-alive connections (each after one GET /): server RSS growth. *per connection*:"
  echo "growth over all $idle_n divided by $idle_n (fixed costs included); *marginal*: growth"
  echo "from $half to $idle_n connections divided by $half (fixed costs excluded)."
  awk -v n="$idle_n" -v h="$half" '$2 == "FAIL" { printf "- %s: FAILED %s\n", $1, $3; next }
    { printf "- %s: %.0f bytes per connection, %.0f bytes marginal\n", $1, ($4 - $2) * 1024 / n, ($4 - $3) * 1024 / h }' "$memraw"
fi
