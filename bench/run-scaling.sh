#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Scaling benchmark (issue 16): vega-serve with 1 and 2 worker threads and with 1 and 2 shards
# (one worker each) against nginx with 1 and 2 worker processes, on a 1 KiB and a 1 MiB file,
# over HTTP/1.1 (vega-load, keep-alive) and HTTP/2 in cleartext with prior knowledge (h2load;
# vega-serve --h2c, nginx `listen ... http2`). Then the reload-under-load check: vega-serve
# --shards 2 under vega-load while the supervisor gets SIGHUP every half second; every request
# must succeed and every connection must be taken.
#
# The servers are not pinned. The load runs in a cgroup of its own (cgroup v1 cpu controller,
# or v2 cpu.max) limited to one CPU's worth of time, so the server always has at least one CPU
# of the machine; on a 2-core machine the server and the load still share the cores, so read
# requests/s as server and load together and judge the servers by their CPU per request
# (utime+stime of every process of the server, summed, over the requests counted). Runs are
# interleaved (the server order rotates each repetition); ratios are medians of per-repetition
# ratios against nginx with as many workers.
#
# usage: bench/run-scaling.sh [-r REPS] [-d SECS] [-c CONNS] [-f LIST] [-P LIST] [-S LIST]
#                             [-H RELOADS] [BUILD_DIR]
#   BUILD_DIR  CMake build directory (default build-bench-http; configured Release if new)
#   -r REPS    repetitions (default 3)
#   -d SECS    measured load per run (default 4; a 1 s warm-up run precedes each)
#   -c CONNS   connections (default 64; HTTP/2 runs 10 streams on each)
#   -f LIST    files (default 1k,1m)
#   -P LIST    protocols (default h1,h2; also h1close: HTTP/1.1 with "Connection: close", a new
#              connection per request, which is where the listening sockets matter)
#   -S LIST    servers (default vega-w1,vega-w2,vega-s1,vega-s2,nginx-1,nginx-2; also
#              nginx-2rp: nginx-2 with `listen ... reuseport`, a listening socket per worker,
#              and vega-s2rp: vega-s2 with VEGA_SERVE_SHARD_REUSEPORT=1, which only a build
#              with bench/patches/per-shard-reuseport.patch applied knows (a socket per shard);
#              without it vega-s2rp is vega-s2)
#   -H RELOADS SIGHUPs in the reload check (default 20; 0 skips it)
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
cmdline="bench/run-scaling.sh $*"
reps=3 dur=4 conns=64 files=1k,1m protos=h1,h2 reloads=20
servers=vega-w1,vega-w2,vega-s1,vega-s2,nginx-1,nginx-2
while getopts "r:d:c:f:P:S:H:h" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    d) dur=$OPTARG ;;
    c) conns=$OPTARG ;;
    f) files=$OPTARG ;;
    P) protos=$OPTARG ;;
    S) servers=$OPTARG ;;
    H) reloads=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
for v in "$reps" "$dur" "$conns"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "run-scaling.sh: -r, -d and -c want positive integers" >&2; exit 2; }
done
[[ $reloads =~ ^[0-9]+$ ]] || { echo "run-scaling.sh: -H wants a count" >&2; exit 2; }
build=${1:-$root/build-bench-http}
case $build in /*) ;; *) build=$PWD/$build ;; esac
for t in nginx h2load ss; do
  command -v "$t" >/dev/null || { echo "run-scaling.sh: $t is not installed (scripts/common.sh lists the packages)" >&2; exit 1; }
done

# ---- build -----------------------------------------------------------------------------------
blog=$(mktemp)
if [ ! -f "$build/CMakeCache.txt" ]; then
  timeout 600 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$blog" 2>&1 ||
    { tail -30 "$blog" >&2; echo "run-scaling.sh: cmake configure failed" >&2; exit 1; }
fi
timeout 1200 cmake --build "$build" -j "$(nproc)" --target vega-serve vega-load >"$blog" 2>&1 ||
  { tail -30 "$blog" >&2; echo "run-scaling.sh: build failed" >&2; exit 1; }
rm -f "$blog"
vega_serve=$build/cli/vega-serve
vega_load=$build/cli/vega-load

bench_tmp
raw=$tmp/raw
: >"$raw"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
clk_tck=$(getconf CLK_TCK)
port=${PORT_BASE:-23000} # below the ephemeral range (32768-60999): h1close fills it
docroot=$tmp/www
mkdir -p "$docroot"
head -c 1024 /dev/urandom >"$docroot/1k"
head -c 1048576 /dev/urandom >"$docroot/1m"
# nginx's workers run as nobody when it starts as root: they must reach the files
chmod 755 "$tmp" "$docroot" && chmod 644 "$docroot"/*

# ---- the load's cgroup: one CPU's worth of time ----------------------------------------------
cg=
if [ -d /sys/fs/cgroup/cpu ] && mkdir -p /sys/fs/cgroup/cpu/vega-bench-load 2>/dev/null &&
   echo 100000 >/sys/fs/cgroup/cpu/vega-bench-load/cpu.cfs_period_us 2>/dev/null &&
   echo 100000 >/sys/fs/cgroup/cpu/vega-bench-load/cpu.cfs_quota_us 2>/dev/null; then
  cg=/sys/fs/cgroup/cpu/vega-bench-load
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && mkdir -p /sys/fs/cgroup/vega-bench-load 2>/dev/null &&
   echo "100000 100000" >/sys/fs/cgroup/vega-bench-load/cpu.max 2>/dev/null; then
  cg=/sys/fs/cgroup/vega-bench-load
fi
cg_note="the load in cgroup ${cg:-(none: not root or no cpu controller)} with one CPU's worth of time"
# in_cg CMD...: runs CMD inside the load's cgroup (when there is one)
in_cg() {
  if [ -n "$cg" ]; then
    sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$@"
  else
    "$@"
  fi
}

nginx_conf() { # PORT WORKERS PROTO
  mkdir -p "$tmp/nginx-$1"
  local h2="" rp=""
  [ "$3" = h2 ] && h2=" http2"
  [ "${4:-}" = rp ] && rp=" reuseport"
  cat >"$tmp/nginx-$1.conf" <<EOF
worker_processes $2;
daemon off;
pid $tmp/nginx-$1/nginx.pid;
error_log $tmp/nginx-$1/error.log;
worker_rlimit_nofile 65536;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $tmp/nginx-$1; proxy_temp_path $tmp/nginx-$1;
  fastcgi_temp_path $tmp/nginx-$1; uwsgi_temp_path $tmp/nginx-$1; scgi_temp_path $tmp/nginx-$1;
  sendfile on; tcp_nopush on;
  keepalive_timeout 300s; keepalive_requests 10000000; http2_max_requests 10000000;
  default_type application/octet-stream;
  server { listen 127.0.0.1:$1$h2$rp; root $docroot; }
}
EOF
}

server_cmd() { # NAME PORT PROTO
  local h2c=
  [ "$3" = h2 ] && h2c=--h2c
  case $1 in
    vega-w1) echo "$vega_serve -q $h2c --workers 1 -l 127.0.0.1:$2 $docroot" ;;
    vega-w2) echo "$vega_serve -q $h2c --workers 2 -l 127.0.0.1:$2 $docroot" ;;
    vega-s1) echo "$vega_serve -q $h2c --shards 1 --workers 1 -l 127.0.0.1:$2 $docroot" ;;
    vega-s2) echo "$vega_serve -q $h2c --shards 2 --workers 1 -l 127.0.0.1:$2 $docroot" ;;
    vega-s2rp) echo "env VEGA_SERVE_SHARD_REUSEPORT=1 $vega_serve -q $h2c --shards 2 --workers 1 -l 127.0.0.1:$2 $docroot" ;;
    nginx-1|nginx-2|nginx-2rp) echo "nginx -c $tmp/nginx-$2.conf" ;;
    *) return 1 ;;
  esac
}

# start_server NAME PROTO: a fresh port; sets spid (the server), tpid, sport, serr.
start_server() {
  local name=$1 cmd
  next_port
  serr=$tmp/server-$name-$sport.err
  case $name in
    nginx-2rp) nginx_conf "$sport" 2 "$2" rp ;;
    nginx-*) nginx_conf "$sport" "${name#nginx-}" "$2" ;;
  esac
  cmd=$(server_cmd "$name" "$sport" "$2") || return 1
  # shellcheck disable=SC2086
  launch_server "$serr" $cmd
}

# tree_ticks PID: utime+stime of PID and of its children and grandchildren (shards, nginx
# workers), in clock ticks
tree_ticks() {
  local p sum=0 t kids
  for p in $1 $(cat "/proc/$1/task/"*/children 2>/dev/null); do
    t=$(cpu_ticks "$p") && sum=$((sum + t))
    kids=$(cat "/proc/$p/task/"*/children 2>/dev/null)
    [ "$p" != "$1" ] && for k in $kids; do t=$(cpu_ticks "$k") && sum=$((sum + t)); done
  done
  echo "$sum"
}

# load_run PROTO URL SECS: prints "requests seconds errors"
load_run() {
  local proto=$1 url=$2 secs=$3 out
  case $proto in
    h1|h1close)
      local close=()
      [ "$proto" = h1close ] && close=(-H 'Connection: close')
      out=$(in_cg timeout -k 2 $((secs * 3 + 20)) "$vega_load" -t1 -c"$conns" -d"${secs}s" "${close[@]}" --json "$url" 2>/dev/null) || return 1
      vega_load_summary <<<"$out"
      ;;
    h2)
      out=$(in_cg timeout -k 2 $((secs * 3 + 20)) h2load -t1 -c"$conns" -m10 -D"$secs" "$url" 2>&1) || return 1
      awk '/^finished in/ { s = $3; sub(/s,?$/, "", s) }
           /^requests:/ { n = $8; e = $10 + $12 + $14 }
           /^status codes:/ { bad = $5 + $7 + $9 }
           END { if (n == "") exit 1; printf "%d %s %d\n", n, s, e + bad }' <<<"$out"
      ;;
  esac
}

# one FILE PROTO SERVER REP: appends "file proto server rep rps cpu_us_per_req"
one() {
  local f=$1 proto=$2 name=$3 rep=$4 url c0 c1 res n s e
  if ! start_server "$name" "$proto"; then
    echo "run-scaling.sh: $name did not start: $(tail -5 "$serr" 2>/dev/null)" >&2
    echo "$f $proto $name $rep FAIL start" >>"$raw"; stop_server; return
  fi
  url="http://127.0.0.1:$sport/$f"
  load_run "$proto" "$url" 1 >/dev/null
  c0=$(tree_ticks "$spid")
  res=$(load_run "$proto" "$url" "$dur")
  c1=$(tree_ticks "$spid")
  stop_server
  read -r n s e <<<"$res"
  if [ -z "${n:-}" ] || [ "$n" = 0 ]; then echo "$f $proto $name $rep FAIL load" >>"$raw"; return; fi
  if [ "${e:-0}" != 0 ]; then echo "$f $proto $name $rep FAIL ${e}errors" >>"$raw"; return; fi
  awk -v f="$f" -v p="$proto" -v nm="$name" -v r="$rep" -v n="$n" -v s="$s" -v c0="$c0" -v c1="$c1" \
      -v hz="$clk_tck" 'BEGIN { if (s <= 0) s = 1; printf "%s %s %s %s %.0f %.3f\n", f, p, nm, r, n / s, (c1 - c0) / hz * 1e6 / n }' >>"$raw"
}

IFS=, read -r -a srv <<<"$servers"
IFS=, read -r -a fls <<<"$files"
IFS=, read -r -a prs <<<"$protos"
start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
ns=${#srv[@]}
for f in "${fls[@]}"; do
  for p in "${prs[@]}"; do
    for ((rep = 1; rep <= reps; rep++)); do
      for ((k = 0; k < ns; k++)); do
        one "$f" "$p" "${srv[$(((k + rep - 1) % ns))]}" "$rep"
      done
    done
  done
done

# ---- reload under load ------------------------------------------------------------------------
reload_line="reload check skipped (-H 0)"
if [ "$reloads" -gt 0 ]; then
  if start_server vega-s2 h1; then
    rdur=$((reloads / 2 + 4))
    in_cg timeout -k 2 $((rdur * 3 + 20)) "$vega_load" -t1 -c"$conns" -d"${rdur}s" --json \
      "http://127.0.0.1:$sport/1k" >"$tmp/reload.json" 2>"$tmp/reload.err" &
    lpid=$!
    sleep 1
    for ((i = 0; i < reloads; i++)); do kill -HUP "$spid"; sleep 0.5; done
    wait "$lpid"
    lrc=$?
    stop_server
    reload_line=$(command -p python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
errs = j.get("errors", 0)
if isinstance(errs, dict): errs = errs.get("total", 0)
bad = sum(v for k, v in j.get("status", {}).items() if not k.startswith("2"))
print("%d SIGHUPs to vega-serve --shards 2 under vega-load -c %s: %d requests, %d failed (errors %d, non-2xx %d), load exit %s"
      % (int(sys.argv[2]), sys.argv[3], j["requests"], errs + bad, errs, bad, sys.argv[4]))' \
      "$tmp/reload.json" "$reloads" "$conns" "$lrc" 2>&1) || reload_line="reload check: no report ($(head -c 300 "$tmp/reload.err"))"
  else
    reload_line="reload check: vega-serve --shards 2 did not start"
  fi
fi
elapsed=$(( $(date +%s) - start ))

# ---- report -----------------------------------------------------------------------------------
echo "## Scaling: vega-serve workers and shards vs nginx workers"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs; kernel $(uname -r); load average $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; ${elapsed} s"
echo "- command: \`$cmdline\`; $cg_note; servers not pinned; -c $conns (HTTP/2: 10 streams each), ${dur} s per run after a 1 s warm-up, $reps repetitions"
echo "- $(nginx -v 2>&1 | sed 's/.*: //'), $(h2load --version 2>/dev/null | head -1)"
echo
echo "| file | protocol | server | req/s (median) | server CPU us/req (median) | req/s vs nginx | CPU/req vs nginx |"
echo "|---|---|---|---|---|---|---|"
awk '
  $5 == "FAIL" { fail[$1" "$2" "$3] = fail[$1" "$2" "$3] " " $6; next }
  { k = $1" "$2" "$3; rps[k, $4] = $5; cpu[k, $4] = $6; seen[k] = 1; reps[$4] = 1 }
  function med(a, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function peer(name) { return name ~ /(w|s)1$/ ? "nginx-1" : name ~ /(w|s)2$/ ? "nginx-2" : name ~ /s2rp$/ ? "nginx-2rp" : name }
  END {
    for (k in seen) {
      split(k, p, " "); pk = p[1]" "p[2]" "peer(p[3])
      n = 0; m = 0; rn = 0; cn = 0
      for (r in reps) if ((k, r) in rps) {
        a[++n] = rps[k, r]; b[++m] = cpu[k, r]
        if ((pk, r) in rps) { ra[++rn] = rps[k, r] / rps[pk, r]; ca[++cn] = cpu[pk, r] / cpu[k, r] }
      }
      if (n == 0) continue
      line[k] = sprintf("| %s | %s | %s | %.0f | %.1f | %s | %s |", p[1], p[2], p[3], med(a, n), med(b, m),
        rn ? sprintf("%.2fx", med(ra, rn)) : "-", cn ? sprintf("%.2fx", med(ca, cn)) : "-")
      if (k in fail) line[k] = line[k] " failed:" fail[k]
    }
    for (k in fail) if (!(k in line)) { split(k, p, " "); line[k] = sprintf("| %s | %s | %s | FAIL%s | | | |", p[1], p[2], p[3], fail[k]) }
    n = 0; for (k in line) keys[++n] = k
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (keys[j] < keys[i]) { t = keys[i]; keys[i] = keys[j]; keys[j] = t }
    for (i = 1; i <= n; i++) print line[keys[i]]
  }' "$raw"
echo
echo "CPU/req vs nginx is nginx's CPU per request over vega's (above 1: vega uses less); vega-w1 and"
echo "vega-s1 are set against nginx-1, vega-w2 and vega-s2 against nginx-2, vega-s2rp against nginx-2rp."
echo
echo "Reload under load: $reload_line"
[ -n "$cg" ] && rmdir "$cg" 2>/dev/null
exit 0
