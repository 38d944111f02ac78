#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Memory of 100,000 idle keep-alive connections (issue 16) where one process may not hold them:
# the hard open-files limit here is 20,000, so the server runs as several processes, as one
# would deploy it (vega-serve --shards S; nginx with S worker processes, each its own
# SO_REUSEPORT listener, as vega-serve's shards), and the connections come from several
# bench/echo/idle-conns clients of at most -p connections each, each from its own source
# address (127.0.0.2, 127.0.0.3...: one source address to one server port has only ~28,000
# ephemeral ports). Each connection does one GET / and then stays idle, as run-http.sh's 10,000
# measure.
#
# The server's memory is summed over all its processes (supervisor or master, and the shards or
# workers): Pss (proportional: a page shared by k processes counts 1/k in each, so shared code
# and shared memory count once) and Rss (shared pages counted in every process), from
# /proc/PID/smaps_rollup; before any connection, at TOTAL/2 and at TOTAL connections. At the end
# every client checks that all its connections are still open and every K-th one does one more
# GET; a failed check marks the row FAILED (and the script exits 1).
#
# usage: bench/run-idle-100k.sh [-n TOTAL] [-s SHARDS] [-p PER] [-k K] [-S LIST] [BUILD_DIR]
#   BUILD_DIR  CMake build directory (default build-bench-http; configured Release if new)
#   -n TOTAL   idle connections at the end (default 100000), in two halves
#   -s SHARDS  server processes: vega-serve --shards, nginx worker_processes (default 6)
#   -p PER     connections per client process, under its file limit (default 12500)
#   -k K       at the end every K-th connection does one more GET (default 50)
#   -S LIST    servers (default vega,vega-epoll,nginx)
# Needs the open-files limit above PER and above TOTAL/SHARDS plus a margin (the kernel's
# SO_REUSEPORT hash does not split the connections exactly evenly).
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
cmdline="bench/run-idle-100k.sh $*"
total=100000 shards=6 per=12500 every=50 servers=vega,vega-epoll,nginx
while getopts "n:s:p:k:S:h" opt; do
  case $opt in
    n) total=$OPTARG ;;
    s) shards=$OPTARG ;;
    p) per=$OPTARG ;;
    k) every=$OPTARG ;;
    S) servers=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
for v in "$total" "$shards" "$per" "$every"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "run-idle-100k.sh: -n, -s, -p and -k want positive integers" >&2; exit 2; }
done
build=${1:-$root/build-bench-http}
case $build in /*) ;; *) build=$PWD/$build ;; esac
for t in nginx ss; do
  command -v "$t" >/dev/null || { echo "run-idle-100k.sh: $t is not installed (scripts/common.sh lists the packages)" >&2; exit 1; }
done

half=$((total / 2))
nclients=$(((half + per - 1) / per)) # per half
per=$(((half + nclients - 1) / nclients))
half=$((nclients * per)) total=$((2 * nclients * per)) # whole clients: TOTAL rounded up
ulimit -n "$(ulimit -Hn)" 2>/dev/null
nofile=$(ulimit -n)
per_shard=$((total / shards + total / shards / 10 + 100)) # 10% above an even split
if [ "$nofile" -le $((per + 16)) ] || [ "$nofile" -le "$per_shard" ]; then
  echo "run-idle-100k.sh: open-files limit $nofile: too low for $per per client or ~$per_shard per shard (raise -s or lower -p)" >&2
  exit 1
fi
if [ $((2 * nclients + 1)) -gt 254 ]; then
  echo "run-idle-100k.sh: $((2 * nclients)) clients need more source addresses than 127.0.0.2-254 (raise -p)" >&2
  exit 1
fi
read -r plo phi </proc/sys/net/ipv4/ip_local_port_range
if [ $((phi - plo + 1)) -le "$per" ]; then
  echo "run-idle-100k.sh: ephemeral port range $plo-$phi is smaller than $per per client" >&2
  exit 1
fi

# ---- build -----------------------------------------------------------------------------------
blog=$(mktemp)
if [ ! -f "$build/CMakeCache.txt" ]; then
  timeout 600 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$blog" 2>&1 ||
    { tail -30 "$blog" >&2; echo "run-idle-100k.sh: cmake configure failed" >&2; exit 1; }
fi
timeout 1200 cmake --build "$build" -j "$(nproc)" --target vega-serve idle-conns >"$blog" 2>&1 ||
  { tail -30 "$blog" >&2; echo "run-idle-100k.sh: build failed" >&2; exit 1; }
rm -f "$blog"
vega_serve=$build/cli/vega-serve
idle_conns=$build/bench/echo/idle-conns

# ---- processes -------------------------------------------------------------------------------
bench_tmp
memraw=$tmp/mem
: >"$memraw"
port=${PORT_BASE:-33000}
docroot=$tmp/www
mkdir -p "$docroot"
chmod 755 "$tmp" "$docroot" # nginx's workers run as nobody
printf '<!doctype html><title>bench</title><p>ok</p>\n' >"$docroot/index.html"

# nginx: as run-http.sh's (same keep-alive settings), with SHARDS workers under a master, each
# worker its own reuseport listener and a file limit within the hard one.
nginx_conf() { # PORT
  mkdir -p "$tmp/nginx-$1"
  cat >"$tmp/nginx-$1.conf" <<EOF
worker_processes $shards;
daemon off;
pid $tmp/nginx-$1/nginx.pid;
error_log $tmp/nginx-$1/error.log;
worker_rlimit_nofile $nofile;
events { worker_connections $((nofile - 100)); }
http {
  access_log off;
  client_body_temp_path $tmp/nginx-$1; proxy_temp_path $tmp/nginx-$1;
  fastcgi_temp_path $tmp/nginx-$1; uwsgi_temp_path $tmp/nginx-$1; scgi_temp_path $tmp/nginx-$1;
  sendfile on; tcp_nopush on;
  keepalive_timeout 300s; keepalive_requests 10000000; client_header_timeout 300s;
  default_type application/octet-stream;
  server { listen 127.0.0.1:$1 reuseport; root $docroot; }
}
EOF
}

start_server() { # NAME; sets spid, tpid, sport, serr
  local name=$1 cmd
  next_port
  serr=$tmp/server-$name-$sport.err
  case $name in
    vega) cmd="$vega_serve -q --shards $shards --max-conns $((nofile - 100)) --keepalive-timeout 300 --driver uring -l 127.0.0.1:$sport $docroot" ;;
    vega-epoll) cmd="$vega_serve -q --shards $shards --max-conns $((nofile - 100)) --keepalive-timeout 300 --driver epoll -l 127.0.0.1:$sport $docroot" ;;
    nginx) nginx_conf "$sport"; cmd="nginx -c $tmp/nginx-$sport.conf" ;;
    *) return 1 ;;
  esac
  # shellcheck disable=SC2086
  launch_server "$serr" $cmd || return 1
  # wait (20 s at most) until the supervisor or master has its SHARDS children
  local i
  for ((i = 0; i < 400; i++)); do
    [ "$(wc -w <"/proc/$spid/task/$spid/children" 2>/dev/null)" -ge "$shards" ] 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# tree PID: PID and its descendants, one a line.
tree() {
  local p kids
  echo "$1"
  kids=$(cat /proc/"$1"/task/*/children 2>/dev/null)
  for p in $kids; do tree "$p"; done
}

# mem_kb: "PSS RSS PROCS" of the server's process tree, in KiB.
mem_kb() {
  local p
  for p in $(tree "$spid"); do cat "/proc/$p/smaps_rollup" 2>/dev/null; done |
    awk '/^Rss:/ { r += $2; n++ } /^Pss:/ { p += $2 } END { print p + 0, r + 0, n + 0 }'
}

# fds: the open descriptors of each of the server's processes, comma-separated.
fds() {
  local p out=
  for p in $(tree "$spid"); do out+=$(find "/proc/$p/fd" -mindepth 1 2>/dev/null | wc -l),; done
  echo "${out%,}"
}

# batch FIRST: starts nclients clients (source addresses 127.0.0.FIRST...) of per connections
# each, and waits (300 s at most) until every one is connected; appends the timeout wrappers to
# cpids. Returns 1 if one failed.
batch() {
  local j a out ok t
  for ((j = 0; j < nclients; j++)); do
    a=127.0.0.$(($1 + j))
    out=$tmp/idle-$a.out
    timeout -k 2 900 "$idle_conns" -n "$per" -t 600 -H -b "$a" -c "$every" "127.0.0.1:$sport" >"$out" 2>"$out.err" &
    pids+=("$!")
    cpids+=("$!")
    couts+=("$out")
  done
  for ((t = 0; t < 3000; t++)); do
    ok=0
    for out in "${couts[@]}"; do grep -q connected "$out" 2>/dev/null && ok=$((ok + 1)); done
    [ $ok = ${#couts[@]} ] && return 0
    for j in "${cpids[@]}"; do kill -0 "$j" 2>/dev/null || return 1; done
    sleep 0.1
  done
  return 1
}

# check: SIGUSR1 to every client (not to its timeout wrapper, which would die of it), then
# waits for them (in this shell: a subshell cannot wait for them); sets res to "OPEN/N
# ANSWERED/ASKED" summed over the clients, and returns 1 if a client failed.
check() {
  local p c rc=0
  for p in "${cpids[@]}"; do
    c=$(cat "/proc/$p/task/$p/children" 2>/dev/null)
    [ -n "$c" ] && kill -USR1 "$c"
  done
  for p in "${cpids[@]}"; do wait "$p" || rc=1; done
  percl=$(for c in "${couts[@]}"; do awk '/^check/ { printf "%s ", $3 }' "$c"; done)
  percl=${percl% }
  res=$(cat "${couts[@]}" | awk '/^check/ { split($3, o, "/"); split($5, a, "/"); on += o[1]; n += o[2]; an += a[1]; as += a[2] }
    END { printf "%d/%d %d/%d\n", on, n, an, as }')
  return $rc
}

stop_clients() {
  local p
  for p in "${cpids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${cpids[@]}"; do wait "$p" 2>/dev/null; done
}

start=$(date +%s)
for name in ${servers//,/ }; do
  cpids=() couts=()
  if ! start_server "$name"; then
    echo "$name FAIL start:$(tail -c 200 "$serr" | tr '\n ' '__')" >>"$memraw"; stop_server; continue
  fi
  sleep 1
  read -r p0 r0 np <<<"$(mem_kb)"
  t0=$(date +%s.%N)
  if ! batch 2; then
    echo "$name FAIL first-half:$(cat "$tmp"/idle-*.err | head -c 200 | tr '\n ' '__')" >>"$memraw"
    stop_clients; stop_server; rm -f "$tmp"/idle-*; continue
  fi
  t1=$(date +%s.%N)
  sleep 2
  read -r p1 r1 _ <<<"$(mem_kb)"
  if ! batch $((2 + nclients)); then
    echo "$name FAIL second-half:$(cat "$tmp"/idle-*.err | head -c 200 | tr '\n ' '__')" >>"$memraw"
    stop_clients; stop_server; rm -f "$tmp"/idle-*; continue
  fi
  t2=$(date +%s.%N)
  sleep 2
  read -r p2 r2 _ <<<"$(mem_kb)"
  f=$(fds)
  if check; then verdict=ok; else verdict=FAILED; fi
  t3=$(date +%s.%N)
  stop_clients
  stop_server
  rm -f "$tmp"/idle-*
  [ -s "$serr" ] && { echo "$name's stderr:"; tail -5 "$serr"; } >>"$tmp/serr"
  echo "$name $p0 $r0 $p1 $r1 $p2 $r2 $np $t0 $t1 $t2 $t3 $verdict ${res:-none} $f ${percl// /,}" >>"$memraw"
done
elapsed=$(($(date +%s) - start))

# ---- report ----------------------------------------------------------------------------------
echo "## Idle keep-alive connections, $total in $shards server processes: $(date -u +%Y-%m-%d), $(nproc) CPUs"
echo
echo "Command: \`$cmdline\` ($elapsed s). $((2 * nclients)) idle-conns clients of $per connections"
echo "(one GET / each, then idle), from 127.0.0.2-127.0.0.$((1 + 2 * nclients)); at the end every"
echo "${every}th connection does one more GET. Memory summed over all the server's processes."
echo
echo "| server | processes | Pss before, MiB | Pss at $half, MiB | Pss at $total, MiB | Pss marginal B/conn ($half -> $total) | Pss growth / $total, B/conn | Rss marginal B/conn | Rss growth / $total, B/conn | open / answered at the end | s: first half up, second half up, then to the check's end |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
awk -v n="$total" -v h="$half" '$2 == "FAIL" { printf "| %s | FAILED %s | | | | | | | | | |\n", $1, $3; next }
  { printf "| %s | %d | %.1f | %.1f | %.1f | **%.0f** | %.0f | %.0f | %.0f | %s %s (%s) | %.1f, %.1f, %.1f |\n",
      $1, $8, $2 / 1024, $4 / 1024, $6 / 1024, ($6 - $4) * 1024 / (n - h), ($6 - $2) * 1024 / n,
      ($7 - $5) * 1024 / (n - h), ($7 - $3) * 1024 / n, $14, $15, $13, $10 - $9, $11 - $10, $12 - $11 }' "$memraw"
echo
echo "Open descriptors per server process at $total (supervisor or master first); connections"
echo "still open at the end, per client (first half's clients first):"
awk '$2 != "FAIL" { printf "- %s: %s; open: %s\n", $1, $16, $17 }' "$memraw"
if [ -s "$tmp/serr" ]; then echo; cat "$tmp/serr"; fi
awk '$13 != "ok" { bad = 1 } END { exit bad }' "$memraw"
