#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# TCP echo benchmark, in one run: vega-echo (io_uring and epoll drivers, 1 worker), a Tokio echo
# server (current_thread, and multi_thread with 1 worker) and minimal hand-written single-thread
# echo loops on raw epoll and raw liburing (the floor any runtime is compared with). 64-byte
# ping-pong at 64 and 1,024 connections; the server is pinned to CPU 0, the load to CPU 1.
# Runs are interleaved (the server order rotates each repetition, so drift hits all alike).
#
# On two cores the load saturates its own CPU, so round trips per second measure client and
# server together; the server is judged by its CPU time per round trip (utime+stime of the
# server process from /proc/PID/stat, before and after the load, over the round trips the load
# counted). Ratios are medians of per-repetition ratios. Then the idle-connection memory test:
# the VmRSS growth of each server holding N idle connections, per connection.
#
# usage: bench/run-echo.sh [-r REPS] [-d SECS] [-w SECS] [-c LIST] [-S LIST] [-L LOAD]
#                          [-n IDLE] [-m LIST] [-M] [-t SECS] [-T SECS] [BUILD_DIR]
#   BUILD_DIR  CMake build directory (default build-bench-echo; configured Release if new)
#   -r REPS    repetitions per (conns, server) (default 5)
#   -d SECS    measured load per run (default 5)
#   -w SECS    warm-up load before each measured run, not counted (default 1; 0 = none)
#   -c LIST    connection counts, comma-separated (default 64,1024)
#   -S LIST    servers (default vega-uring,vega-epoll,tokio-current,tokio-multi1,raw-epoll,
#              raw-uring; also vega-uring-poll: io_uring without buffer-ring receives and
#              multishot accept)
#   -L LOAD    load generator: vega-load, echo-client (bench/echo/echo_client.c) or auto
#              (default: vega-load when cli/vega-load has sources, else echo-client)
#   -n IDLE    idle connections for the memory test (default 10000)
#   -m LIST    servers for the memory test (default vega-uring,vega-epoll,tokio-current,
#              raw-epoll, plus nginx when installed)
#   -M         skip the memory test
#   -t SECS    limit for one load run (default: 4 x (SECS + warm-up) + 20)
#   -T SECS    limit for the whole throughput part (default 3600); later runs are skipped
# Environment: TOKIO_ECHO=path skips the cargo build and uses that binary;
#              CARGO_TARGET_DIR (default BUILD_DIR/bench/tokio-echo); PORT_BASE (default 31000).
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

cmdline="bench/run-echo.sh $*"
reps=5 dur=5 warm=1 conns_list=64,1024 load=auto idle_n=10000 mem=1 run_limit='' total_limit=3600
servers=vega-uring,vega-epoll,tokio-current,tokio-multi1,raw-epoll,raw-uring
mem_servers=
while getopts "r:d:w:c:S:L:n:m:Mt:T:h" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    d) dur=$OPTARG ;;
    w) warm=$OPTARG ;;
    c) conns_list=$OPTARG ;;
    S) servers=$OPTARG ;;
    L) load=$OPTARG ;;
    n) idle_n=$OPTARG ;;
    m) mem_servers=$OPTARG ;;
    M) mem=0 ;;
    t) run_limit=$OPTARG ;;
    T) total_limit=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "run-echo.sh: -r wants a positive integer" >&2; exit 2; }
[[ $dur =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "run-echo.sh: -d wants seconds" >&2; exit 2; }
[[ $warm =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "run-echo.sh: -w wants seconds" >&2; exit 2; }
[[ $idle_n =~ ^[1-9][0-9]*$ ]] || { echo "run-echo.sh: -n wants a positive integer" >&2; exit 2; }
run_limit=${run_limit:-$(awk -v d="$dur" -v w="$warm" 'BEGIN { printf "%d", 4 * (d + w) + 20 }')}
build=${1:-$root/build-bench-echo}
case $build in /*) ;; *) build=$PWD/$build ;; esac

# ---- build -----------------------------------------------------------------------------------
have_vega_load=0
ls "$root"/cli/vega-load/*.c >/dev/null 2>&1 && have_vega_load=1
case $load in
  auto) [ $have_vega_load = 1 ] && load=vega-load || load=echo-client ;;
  vega-load|echo-client) ;;
  *) echo "run-echo.sh: -L wants vega-load, echo-client or auto" >&2; exit 2 ;;
esac
targets="vega-echo raw-epoll raw-uring echo-client idle-conns"
[ "$load" = vega-load ] && targets="$targets vega-load"
blog=$(mktemp)
if [ ! -f "$build/CMakeCache.txt" ]; then
  if ! timeout 600 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$blog" 2>&1; then
    tail -30 "$blog" >&2; rm -f "$blog"
    echo "run-echo.sh: cmake configure of $build failed" >&2; exit 1
  fi
fi
# shellcheck disable=SC2086
if ! timeout 1200 cmake --build "$build" -j "$(nproc)" --target $targets >"$blog" 2>&1; then
  tail -30 "$blog" >&2; rm -f "$blog"
  echo "run-echo.sh: build failed: cmake --build $build --target $targets" >&2
  exit 1
fi
rm -f "$blog"
vega_echo=$build/cli/vega-echo
raw_epoll=$build/bench/echo/raw-epoll
raw_uring=$build/bench/echo/raw-uring
idle_conns=$build/bench/echo/idle-conns
if [ "$load" = vega-load ]; then load_bin=$build/cli/vega-load; else load_bin=$build/bench/echo/echo-client; fi
if [ -n "${TOKIO_ECHO:-}" ]; then
  tokio_echo=$TOKIO_ECHO
else
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$build/bench/tokio-echo}
  if ! (cd "$here/tokio-echo" && timeout 900 cargo build --release --offline --quiet); then
    echo "run-echo.sh: building the Tokio echo server failed" \
         "(cargo build --release --offline in bench/tokio-echo)" >&2
    exit 1
  fi
  tokio_echo=$CARGO_TARGET_DIR/release/vega-tokio-echo
fi
for b in "$vega_echo" "$raw_epoll" "$idle_conns" "$load_bin" "$tokio_echo"; do
  [ -x "$b" ] || { echo "run-echo.sh: $b missing" >&2; exit 1; }
done

# ---- processes: every server and helper is bounded by timeout and killed on exit -------------
bench_tmp
raw=$tmp/raw memraw=$tmp/mem
: >"$raw"; : >"$memraw"

# Descriptors for the idle-connection test (servers and idle-conns inherit the limit).
want_fds=$((idle_n + 1000))
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
nofile=$(ulimit -n)

port=${PORT_BASE:-31000}
clk_tck=$(getconf CLK_TCK)

# server_cmd NAME PORT: the command line of a server
server_cmd() {
  case $1 in
    vega-uring) echo "$vega_echo -l 127.0.0.1 $2 --workers 1 --driver uring -q" ;;
    vega-epoll) echo "$vega_echo -l 127.0.0.1 $2 --workers 1 --driver epoll -q" ;;
    # io_uring with parked sockets on multishot polls and accept4 (what it did before the
    # provided-buffer receives and multishot accept), for an A/B in one run
    vega-uring-poll) echo "env VEGA_URING_NO_BUF_RING=1 VEGA_URING_NO_MULTISHOT_ACCEPT=1 $vega_echo -l 127.0.0.1 $2 --workers 1 --driver uring -q" ;;
    tokio-current) echo "$tokio_echo current $2" ;;
    tokio-multi1) echo "$tokio_echo multi1 $2" ;;
    raw-epoll) echo "$raw_epoll $2" ;;
    raw-uring) echo "$raw_uring $2" ;;
    nginx) echo "nginx -c $tmp/nginx-$2.conf" ;;
    *) return 1 ;;
  esac
}

nginx_conf() {
  mkdir -p "$tmp/nginx-$1"
  cat >"$tmp/nginx-$1.conf" <<EOF
worker_processes 1;
master_process off;
daemon off;
pid $tmp/nginx-$1/nginx.pid;
error_log $tmp/nginx-$1/error.log;
worker_rlimit_nofile $nofile;
events { worker_connections $((idle_n + 100)); }
http {
  access_log off;
  client_body_temp_path $tmp/nginx-$1;
  proxy_temp_path $tmp/nginx-$1;
  fastcgi_temp_path $tmp/nginx-$1;
  uwsgi_temp_path $tmp/nginx-$1;
  scgi_temp_path $tmp/nginx-$1;
  keepalive_timeout 300s;
  keepalive_requests 100000;
  client_header_timeout 300s;
  server {
    listen 127.0.0.1:$1;
    location / { return 200 "ok\n"; }
  }
}
EOF
}

# start_server NAME LIMIT: starts it on CPU 0 on a fresh port; sets spid (the server itself),
# tpid (its timeout wrapper), sport, serr. Returns 1 if it does not listen within 10 s.
start_server() {
  local name=$1 lim=$2 cmd i
  port=$((port + 1))
  sport=$port serr=$tmp/server-$name-$sport.err
  [ "$name" = nginx ] && nginx_conf "$sport"
  cmd=$(server_cmd "$name" "$sport") || return 1
  # shellcheck disable=SC2086
  timeout -k 2 "$lim" taskset -c 0 $cmd 2>"$serr" &
  tpid=$!
  pids+=("$tpid")
  spid=
  for ((i = 0; i < 200; i++)); do
    [ -z "$spid" ] && spid=$(cat "/proc/$tpid/task/$tpid/children" 2>/dev/null | awk '{ print $1 }')
    if [ -n "$spid" ] && ss -Hltn "sport = :$sport" 2>/dev/null | grep -q .; then
      return 0
    fi
    kill -0 "$tpid" 2>/dev/null || break
    sleep 0.05
  done
  return 1
}

# run_load CONNS SECS: runs the load generator on CPU 1; prints its JSON line. Its own CPU time
# (user+system seconds) goes to $tmp/load.time when /usr/bin/time is there.
run_load() {
  local t=()
  rm -f "$tmp/load.time"
  [ -x /usr/bin/time ] && t=(/usr/bin/time -f '%U %S' -o "$tmp/load.time")
  if [ "$load" = vega-load ]; then
    timeout -k 2 "$run_limit" taskset -c 1 "${t[@]}" "$load_bin" echo -c "$1" -d "$2" -s 64 \
      --json "127.0.0.1:$sport"
  else
    timeout -k 2 "$run_limit" taskset -c 1 "${t[@]}" "$load_bin" -c "$1" -d "$2" -s 64 \
      "127.0.0.1:$sport"
  fi
}

# json_num KEY...: the first of these numeric keys found in the JSON on stdin
json_num() {
  local j k v
  j=$(cat)
  for k in "$@"; do
    v=$(grep -oE "\"$k\"[[:space:]]*:[[:space:]]*[0-9.eE+-]+" <<<"$j" | head -1 | sed 's/.*:[[:space:]]*//')
    [ -n "$v" ] && { echo "$v"; return 0; }
  done
  return 1
}

fail() { # CONNS NAME REP WHY
  echo "$1 $2 $3 FAIL $4" >>"$raw"
  {
    echo "run-echo.sh: FAILED ($4): $2 at $1 connections, repetition $3"
    echo "  server: $(server_cmd "$2" "$sport")"
    sed 's/^/  server stderr: /' "$serr" 2>/dev/null | tail -20
    [ -s "$tmp/load.err" ] && sed 's/^/  load stderr: /' "$tmp/load.err" | tail -20
  } >&2
}

# one CONNS NAME REP: one measured run; appends
# "conns server rep rps server_cpu_us_per_rt rts server_cpu_s load_cpu_us_per_rt"
one() {
  local c=$1 name=$2 rep=$3 out rc c0 c1 rts secs errs lcpu
  : >"$tmp/load.err"
  if ! start_server "$name" $((run_limit * 2 + 30)); then
    fail "$c" "$name" "$rep" "did not start"; stop_server; return
  fi
  if [ "$warm" != 0 ] && [ "$warm" != 0.0 ]; then
    run_load "$c" "$warm" >/dev/null 2>"$tmp/load.err"
    rc=$?
    if [ $rc -ne 0 ]; then fail "$c" "$name" "$rep" "warm-up load rc=$rc"; stop_server; return; fi
  fi
  c0=$(cpu_ticks "$spid")
  out=$(run_load "$c" "$dur" 2>"$tmp/load.err")
  rc=$?
  c1=$(cpu_ticks "$spid")
  if ! kill -0 "$spid" 2>/dev/null; then
    stop_server
    fail "$c" "$name" "$rep" "server died (status $src)"; return
  fi
  stop_server
  if [ $rc -ne 0 ]; then
    local why="load rc=$rc"
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && why="load timeout ${run_limit}s"
    fail "$c" "$name" "$rep" "$why"; return
  fi
  rts=$(json_num round_trips requests completed <<<"$out")
  secs=$(json_num seconds elapsed_s elapsed duration_s duration <<<"$out") || secs=$dur
  errs=$(json_num errors <<<"$out") || errs=0
  if [ -z "$rts" ] || [ -z "$c0" ] || [ -z "$c1" ] || [ "$rts" = 0 ]; then
    echo "  load output: $out" >>"$tmp/load.err"
    fail "$c" "$name" "$rep" "no round trips"; return
  fi
  if [ "$errs" != 0 ]; then
    echo "  load output: $out" >>"$tmp/load.err"
    fail "$c" "$name" "$rep" "$errs load errors"; return
  fi
  lcpu=$(awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { print $1 + $2 }' "$tmp/load.time" 2>/dev/null)
  awk -v c="$c" -v n="$name" -v r="$rep" -v rts="$rts" -v s="$secs" -v c0="$c0" -v c1="$c1" \
      -v hz="$clk_tck" -v l="${lcpu:-NA}" 'BEGIN {
        cpu = (c1 - c0) / hz
        printf "%s %s %s %.0f %.4f %d %.2f %s\n", c, n, r, rts / s, cpu * 1e6 / rts, rts, cpu,
          l == "NA" ? "NA" : sprintf("%.4f", l * 1e6 / rts)
      }' >>"$raw"
}

# ---- throughput and CPU per round trip -------------------------------------------------------
IFS=, read -r -a srv <<<"$servers"
for s in "${srv[@]}"; do server_cmd "$s" 0 >/dev/null || { echo "run-echo.sh: unknown server $s" >&2; exit 2; }; done
[ -x "$raw_uring" ] || srv=("${srv[@]/raw-uring}")
start=$(date +%s)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
skipped=0
ns=${#srv[@]}
for c in ${conns_list//,/ }; do
  for ((rep = 1; rep <= reps; rep++)); do
    for ((k = 0; k < ns; k++)); do
      name=${srv[$(((k + rep - 1) % ns))]}
      [ -z "$name" ] && continue
      if (( $(date +%s) - start > total_limit )); then skipped=$((skipped + 1)); continue; fi
      one "$c" "$name" "$rep"
    done
  done
done
elapsed=$(( $(date +%s) - start ))
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- idle-connection memory ------------------------------------------------------------------
nfds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# mem_one NAME MODE (idle: never used; echo: one 64-byte echo (HTTP request for nginx) first)
mem_one() {
  local name=$1 mode=$2 r0 r1 f0 f1 ic i flag=
  if ! start_server "$name" 120; then
    echo "$name $mode FAIL did-not-start" >>"$memraw"; stop_server; return
  fi
  [ "$mode" = echo ] && flag=-e
  [ "$mode" = echo ] && [ "$name" = nginx ] && flag=-H
  sleep 0.5
  r0=$(rss_kb "$spid") f0=$(nfds "$spid")
  # shellcheck disable=SC2086
  timeout -k 2 90 "$idle_conns" -n "$idle_n" -t 80 $flag "127.0.0.1:$sport" >"$tmp/idle.out" \
    2>"$tmp/idle.err" &
  ic=$!
  pids+=("$ic")
  for ((i = 0; i < 600; i++)); do
    grep -q connected "$tmp/idle.out" 2>/dev/null && break
    kill -0 "$ic" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q connected "$tmp/idle.out"; then
    echo "$name $mode FAIL $(head -c 200 "$tmp/idle.err" | tr '\n ' '__')" >>"$memraw"
    kill "$ic" 2>/dev/null; wait "$ic" 2>/dev/null; stop_server; return
  fi
  # Wait until the server has accepted them all (its descriptor count), then let it settle.
  for ((i = 0; i < 150; i++)); do
    f1=$(nfds "$spid")
    (( f1 >= f0 + idle_n )) && break
    sleep 0.1
  done
  sleep 2
  r1=$(rss_kb "$spid") f1=$(nfds "$spid")
  kill "$ic" 2>/dev/null; wait "$ic" 2>/dev/null
  stop_server
  echo "$name $mode $r0 $r1 $((f1 - f0))" >>"$memraw"
}

nginx_note=
if [ $mem = 1 ]; then
  if [ -z "$mem_servers" ]; then
    mem_servers=vega-uring,vega-epoll,tokio-current,raw-epoll
    if command -v nginx >/dev/null; then
      mem_servers=$mem_servers,nginx
    else
      nginx_note="nginx is not installed here (not installed by this script): no nginx row; nginx's own figure is ~570 bytes per idle keep-alive connection."
    fi
  fi
  if (( nofile < want_fds )); then
    echo "run-echo.sh: the file limit is $nofile (< $want_fds): memory test skipped; raise it (ulimit -n) or lower -n" >&2
    mem=0
    nginx_note="memory test skipped: file limit $nofile < $want_fds"
  else
    for s in ${mem_servers//,/ }; do
      for mode in idle echo; do mem_one "$s" "$mode"; done
    done
  fi
fi

# ---- report ----------------------------------------------------------------------------------
commit=$(git -C "$root" --no-optional-locks rev-parse --short HEAD 2>/dev/null || echo '?')
dirty=$(git -C "$root" --no-optional-locks status --porcelain -- lib cli 2>/dev/null | wc -l)
[ "$dirty" != 0 ] && commit="$commit + uncommitted changes in lib/ or cli/"
if [ "$load" = vega-load ]; then
  load_cmd="taskset -c 1 ${load_bin#"$root"/} echo -c CONNS -d $dur -s 64 --json 127.0.0.1:PORT"
else
  load_cmd="taskset -c 1 ${load_bin#"$root"/} -c CONNS -d $dur -s 64 127.0.0.1:PORT"
fi
cat <<EOT
## TCP echo: vega-echo vs Tokio vs raw loops

- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $commit
- kernel: $(uname -r) ($(uname -m)), nproc: $(nproc)$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: */, cpu: /')
- load average (1/5/15 min): $load_before at the start, $load_after after the throughput runs
- tokio: $(awk -F'"' '/^name = "tokio"$/ { getline; print $2 }' "$here/tokio-echo/Cargo.lock" 2>/dev/null) (Debian librust-tokio-dev, built offline), $(rustc --version 2>/dev/null || echo rustc ?)
- 64-byte ping-pong, $reps repetitions x ${dur}s (after a ${warm}s warm-up run each), server order rotating; ${elapsed}s$( ((skipped)) && echo ", $skipped runs skipped (-T)")
- server: \`taskset -c 0 SERVER\` (a fresh process per run); load: \`$load_cmd\`
- servers: \`$(server_cmd vega-uring PORT | sed "s|$root/||")\` (and \`--driver epoll\`),
  \`$(server_cmd tokio-current PORT | sed "s|$root/||")\` (and \`multi1\`), \`$(server_cmd raw-epoll PORT | sed "s|$root/||")\`, \`$(server_cmd raw-uring PORT | sed "s|$root/||")\`
- CPU = utime+stime of the server process (/proc/PID/stat, ${clk_tck} Hz ticks) over the measured load run
  (its connects and closes included), divided by the round trips the load counted
- run by \`$cmdline\`

| conns | server | rps (median) | server CPU µs/round trip (median) | CPU ratio to tokio-current | CPU ratio to tokio-multi1 | CPU ratio to best raw loop | rps ratio to tokio-current | rps ratio to tokio-multi1 | rps ratio to best raw loop | load CPU µs/round trip (median) |
|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
EOT
goals=$tmp/goals
: >"$goals"
for c in ${conns_list//,/ }; do
  for s in "${srv[@]}"; do
    [ -z "$s" ] && continue
    awk -v c="$c" -v s="$s" -v goals="$goals" '
      function median(a, k,   i, j, t) {
        for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
        return k % 2 ? a[(k+1)/2] : (a[k/2] + a[k/2+1]) / 2
      }
      function fmt(x, d) { return x == "" ? "-" : sprintf("%." d "f", x) }
      function na(x) { return x == "" ? "NA" : sprintf("%.3f", x) }
      # mratio(num_kind, ref): median over repetitions of this server / ref (ref "raw": best raw)
      function mratio(kind, ref,   r, k, v, a, x, y) {
        k = 0
        for (r in reps) {
          if (!((s, r) in cpu)) continue
          if (ref == "raw") {
            x = ""
            if (("raw-epoll", r) in cpu) x = kind == "cpu" ? cpu["raw-epoll", r] : rps["raw-epoll", r]
            if (("raw-uring", r) in cpu) {
              y = kind == "cpu" ? cpu["raw-uring", r] : rps["raw-uring", r]
              if (x == "" || (kind == "cpu" ? y < x : y > x)) x = y
            }
            if (x == "") continue
          } else {
            if (!((ref, r) in cpu)) continue
            x = kind == "cpu" ? cpu[ref, r] : rps[ref, r]
          }
          v = kind == "cpu" ? cpu[s, r] : rps[s, r]
          if (x > 0) a[++k] = v / x
        }
        return k ? median(a, k) : ""
      }
      $1 != c { next }
      $4 == "FAIL" { if ($2 == s) failed++; next }
      { cpu[$2, $3] = $5; rps[$2, $3] = $4; reps[$3] = 1; if ($2 == s && $8 != "NA") lc[++nl] = $8 }
      END {
        k = 0; for (r in reps) if ((s, r) in cpu) { cc[++k] = cpu[s, r]; pp[k] = rps[s, r] }
        mc = k ? median(cc, k) : ""; mp = k ? median(pp, k) : ""; ml = nl ? median(lc, nl) : ""
        tc = mratio("cpu", "tokio-current"); tm = mratio("cpu", "tokio-multi1"); rr = mratio("cpu", "raw")
        pc = mratio("rps", "tokio-current"); pm = mratio("rps", "tokio-multi1"); pr = mratio("rps", "raw")
        note = failed ? sprintf(" (%d failed)", failed) : ""
        printf "| %s | %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c, s, note, fmt(mp, 0), fmt(mc, 3),
          fmt(tc, 2), fmt(tm, 2), fmt(rr, 2), fmt(pc, 2), fmt(pm, 2), fmt(pr, 2), fmt(ml, 3)
        if (s ~ /^vega-/)
          printf "%s %s %s %s %s %s %s %s\n", c, s, na(tc), na(tm), na(rr), na(pc), na(pm), na(pr) >> goals
      }' "$raw"
  done
done

echo
echo "Goals (vega-echo; ratios are medians of per-repetition ratios; run-to-run noise is a few %):"
echo
awk '
  function chk(x, ok) { return x ~ /NA/ ? "n/a" : (ok ? "met" : "NOT met") }
  {
    c = $1; s = $2; tc = $3; tm = $4; rr = $5; pc = $6; pm = $7; pr = $8
    printf "- %s, %s conns: CPU/round trip <= 1/1.2 of Tokio (ratios %s, %s <= 0.833): %s; within 5%% of the best raw loop (ratio %s <= 1.05): %s; rps >= Tokio (ratios %s, %s >= 1): %s; rps >= best raw loop (ratio %s >= 1): %s\n",
      s, c, tc, tm, chk(tc tm, tc + 0 <= 1 / 1.2 && tm + 0 <= 1 / 1.2), rr, chk(rr, rr + 0 <= 1.05),
      pc, pm, chk(pc pm, pc + 0 >= 1 && pm + 0 >= 1), pr, chk(pr, pr + 0 >= 1)
  }' "$goals"

if [ $mem = 1 ] || [ -n "$nginx_note" ]; then
  echo
  echo "### Idle connections: RSS growth per connection ($idle_n connections)"
  echo
  echo "\`${idle_conns#"$root"/} -n $idle_n 127.0.0.1:PORT\` holds them open; VmRSS of the server"
  echo "(/proc/PID/status) 0.5 s after it listens and 2 s after it accepted them all. *idle*: never"
  echo "used; *after one echo*: each first echoed one 64-byte message (\`-e\`; for nginx one HTTP"
  echo "request, \`-H\`), i.e. an idle keep-alive connection. Goal: at most 1 KiB per connection."
  echo
  if [ $mem = 1 ]; then
    echo "| server | mode | RSS before (KiB) | RSS after (KiB) | accepted | bytes per connection | goal (<= 1024) |"
    echo "|---|---|---:|---:|---:|---:|---|"
    awk -v n="$idle_n" '
      $3 == "FAIL" { printf "| %s | %s | - | - | - | failed: %s | - |\n", $1, $2, $4; next }
      {
        b = ($4 - $3) * 1024 / n
        g = $1 ~ /^vega-/ ? (b <= 1024 ? "met" : "NOT met") : ""
        printf "| %s | %s | %d | %d | %d | %.0f | %s |\n", $1, $2 == "idle" ? "idle" : "after one echo", $3, $4, $5, b, g
      }' "$memraw"
  fi
  [ -n "$nginx_note" ] && { echo; echo "$nginx_note"; }
fi

echo
echo "<details><summary>raw runs (conns server rep rps server_cpu_us_per_rt round_trips server_cpu_s load_cpu_us_per_rt)</summary>"
echo
echo '```'
cat "$raw"
echo '```'
echo "</details>"
grep -q FAIL "$raw" "$memraw" && exit 1
exit 0
