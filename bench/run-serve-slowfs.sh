#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vega-serve with a slow disk: hot requests while other clients read cold files. vega-load
# keeps -c connections busy on a small cached file (hot.txt) for -d seconds, while -j curl
# loops fetch distinct files from a FUSE mount (bench/slowfs) whose every open and read
# sleeps -D ms. The server runs with --workers 1 pinned to CPU 0 (the load on CPU 1): a
# blocking open or read on the worker thread stalls every connection on it, an io_uring one
# (or a blocking-pool job) only its own request. Each server is measured without and with the
# cold readers (interleaved, -r repetitions); printed: hot requests/s, p99, cold files fetched,
# and the ratio with/without. Servers: vega-serve from BUILD_DIR ("after"), another vega-serve
# binary given with -B ("before", e.g. one built from main), and nginx 1.22 (-n; one worker,
# sendfile on, "aio threads" so that nginx reads files on its thread pool too, access log off).
# With -C, a second part: the same with the cold files on the real disk after
# `echo 3 > /proc/sys/vm/drop_caches` (root) instead of the FUSE delay.
#
# usage: bench/run-serve-slowfs.sh [-r REPS] [-d SECS] [-c CONNS] [-j COLD] [-D MS]
#                                  [-B BEFORE_BIN] [-n] [-C] [BUILD_DIR]
#   BUILD_DIR  CMake build directory holding cli/vega-serve and bench/slowfs/slowfs
#              (default build)
#   -r REPS    repetitions (default 3)
#   -d SECS    measured hot load per run (default 5)
#   -c CONNS   hot keep-alive connections (default 8)
#   -j COLD    concurrent cold readers (default 4)
#   -D MS      slowfs delay per open and per read (default 20)
#   -B BIN     the "before" vega-serve binary
#   -n         also nginx
#   -C         also the dropped-page-cache part (root; the cold tree on the real disk)
set -u -o pipefail
# tmp and pids come from bench/lib.sh, spid is read by its stop_server, cold_loop runs through
# bash -c
# shellcheck disable=SC2154,SC2034,SC2317

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
cmdline="bench/run-serve-slowfs.sh $*"
reps=3 dur=5 conns=8 cold_j=4 delay=20 before="" with_nginx=0 dropcache=0
while getopts "r:d:c:j:D:B:nCh" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    d) dur=$OPTARG ;;
    c) conns=$OPTARG ;;
    j) cold_j=$OPTARG ;;
    D) delay=$OPTARG ;;
    B) before=$OPTARG ;;
    n) with_nginx=1 ;;
    C) dropcache=1 ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
serve=$build/cli/vega-serve
load=$build/cli/vega-load
slowfs=$build/bench/slowfs/slowfs
for b in "$serve" "$load" "$slowfs"; do
  [ -x "$b" ] || { echo "missing $b (build it first)" >&2; exit 2; }
done
[ -z "$before" ] || [ -x "$before" ] || { echo "missing $before" >&2; exit 2; }
command -v fusermount3 >/dev/null || { echo "needs fusermount3 (Debian: fuse3)" >&2; exit 2; }

bench_tmp
mnt=""
# unmounted before cleanup kills slowfs and removes $tmp
trap '[ -z "$mnt" ] || fusermount3 -u "$mnt" 2>/dev/null; cleanup' EXIT

# The tree: www/hot.txt (1 KiB), www/cold -> slowfs over back/ (N files of 16 KiB and 256 KiB),
# www/disk/ the same files on the real disk for -C.
mkdir -p "$tmp/www/cold" "$tmp/www/disk" "$tmp/back"
head -c 1024 /dev/urandom >"$tmp/www/hot.txt"
nfiles=600
for ((i = 0; i < nfiles; i++)); do
  if ((i % 4 == 0)); then sz=262144; else sz=16384; fi
  head -c $sz /dev/urandom >"$tmp/back/f$i.bin"
done
cp -r "$tmp/back/." "$tmp/www/disk/"
mnt=$tmp/www/cold
"$slowfs" --delay-ms "$delay" "$tmp/back" "$mnt" 2>"$tmp/slowfs.log" &
pids+=($!)
for ((i = 0; i < 100; i++)); do
  grep -qs " $mnt fuse" /proc/mounts && break
  sleep 0.05
done
grep -qs " $mnt fuse" /proc/mounts || { cat "$tmp/slowfs.log" >&2; exit 1; }

port=18480
start_server() { # NAME
  case $1 in
    after | before)
      local bin=$serve
      [ "$1" = before ] && bin=$before
      timeout -k 2 600 taskset -c 0 "$bin" -q --workers 1 -l "127.0.0.1:$port" "$tmp/www" &
      ;;
    nginx)
      cat >"$tmp/nginx.conf" <<NGX
worker_processes 1;
daemon off;
error_log $tmp/nginx.err;
pid $tmp/nginx.pid;
thread_pool default threads=32 max_queue=65536;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  aio threads;
  disable_symlinks off;
  server { listen 127.0.0.1:$port; root $tmp/www; }
}
NGX
      timeout -k 2 600 taskset -c 0 nginx -c "$tmp/nginx.conf" -p "$tmp" &
      ;;
  esac
  tpid=$!
  pids+=("$tpid")
  local i
  for ((i = 0; i < 100; i++)); do
    curl -s -o /dev/null "http://127.0.0.1:$port/hot.txt" && break
    sleep 0.05
  done
  spid=$(awk '{print $1}' "/proc/$tpid/task/$tpid/children" 2>/dev/null)
}

# cold readers: each fetches its own files in turn until the stop file appears
cold_loop() { # INDEX DIR
  local k=$1 n=0
  while [ ! -e "$tmp/stop" ]; do
    curl -s -o /dev/null --max-time 30 "http://127.0.0.1:$port/$2/f$(((k + n * cold_j) % nfiles)).bin" &&
      echo >>"$tmp/cold.$k"
    n=$((n + 1))
  done
}

# run NAME COLD(0/1) DIR: prints "rps p99_us cold_files"
run() {
  start_server "$1"
  rm -f "$tmp"/stop "$tmp"/cold.*
  local cp=()
  if [ "$2" = 1 ]; then
    for ((k = 0; k < cold_j; k++)); do
      taskset -c 1 bash -c "$(declare -f cold_loop); tmp=$tmp port=$port cold_j=$cold_j nfiles=$nfiles cold_loop $k $3" &
      cp+=($!)
    done
    sleep 0.5
  fi
  local out
  out=$(taskset -c 1 "$load" --json -c "$conns" -d "${dur}s" "http://127.0.0.1:$port/hot.txt" 2>/dev/null)
  touch "$tmp/stop"
  [ ${#cp[@]} -eq 0 ] || wait "${cp[@]}" 2>/dev/null
  stop_server
  local cold
  cold=$(cat "$tmp"/cold.* 2>/dev/null | wc -l)
  /usr/bin/python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print("%.0f %d %s" % (j["rps"], j["latency_us"]["p99"], sys.argv[2]))' "$out" "$cold"
}

servers=(after)
[ -n "$before" ] && servers+=(before)
[ "$with_nginx" = 1 ] && servers+=(nginx)
part() { # DIR LABEL
  echo "== $2 =="
  printf '%-8s %5s %12s %10s %12s %10s %10s %12s\n' server rep hot_rps p99_us hot_rps_cold p99_cold cold_files ratio_rps
  for ((r = 1; r <= reps; r++)); do
    for s in "${servers[@]}"; do
      [ "$1" = disk ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
      read -r a ap _ < <(run "$s" 0 "$1")
      [ "$1" = disk ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
      read -r b bp cf < <(run "$s" 1 "$1")
      printf '%-8s %5d %12s %10s %12s %10s %10s %12s\n' "$s" "$r" "$a" "$ap" "$b" "$bp" "$cf" \
        "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')"
    done
  done
}
echo "# $cmdline; $(date -u +%FT%TZ); load: $(cut -d' ' -f1-3 /proc/loadavg)"
part cold "cold files on slowfs, ${delay} ms per open and read"
[ "$dropcache" = 1 ] && part disk "cold files on the real disk, page cache dropped before each run"
exit 0
