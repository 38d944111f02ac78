#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Soak: a server at its default worker count (plain and TLS ports) under steady, well-behaved
# load from vega-load (keep-alive and connection churn) while bench/soak/chaos.py attacks the
# same ports, with large transfers checked byte for byte by sha256 all along. Bounded in time.
# vega-serve also speaks HTTP/2 all along (h2c on the plain port, ALPN h2 on the TLS port):
# h2load at a fixed request rate on both, chaos.py's HTTP/2 faults, and every fourth large
# transfer by curl over h2 -- in the same time, not after it.
# Exits non-zero when any check fails:
#   - the well-behaved clients saw zero errors (and only 2xx answers); h2load's every request
#     succeeded with a 2xx;
#   - every large transfer during the run was byte-exact;
#   - the chaos client found no protocol break and the server never refused a connection;
#   - the servers are alive at the end, answer, and stop with exit status 0 on SIGTERM;
#   - file descriptors are back to their baseline after the load;
#   - memory is flat: RSS (VmRSS) at the end of the load within 10% of its value at the end of
#     warm-up, and anonymous RSS (RssAnon: heap, stacks, pools: where a leak shows) within 10%
#     or 1 MiB, whichever is more (a few MiB of it move by hundreds of KiB with what is in
#     flight: a 64 KiB buffer per TLS download, 17 KiB per TLS connection);
#   - vega-serve (scraped from its --metrics every second): the bytes malloc has handed out and
#     not had back (vega_heap_inuse_bytes) within 10% or 1 MiB, the exact test of a heap leak;
#     anonymous RSS may then also grow by the bytes malloc holds free at the end (see below);
#   - RSS after the load is back near its idle baseline (within -m KiB).
#
# usage: bench/soak/run.sh [-s serve|echo] [-d SECS] [-w SECS] [-r DRIVER] [-B BUILD] [-o DIR]
#                          [-m KIB]
#   -s SERVER  serve (vega-serve, default) or echo (vega-echo)
#   -d SECS    length of the load, warm-up included (default 60)
#   -w SECS    warm-up (default: a quarter of -d, at least 15: the time the pools, caches
#              and allocator arenas take to reach the load's high-water mark)
#   -r DRIVER  uring or epoll (default: the library's default)
#   -B BUILD   build folder with cli/ (default build)
#   -o DIR     keep the traces and logs there (default: a temporary folder, removed)
#   -m KIB     how far above its idle baseline RSS may stay once the load is gone (default 8192:
#              the per-worker stack caches, allocator arenas and the file cache keep some)
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

server=serve dur=60 warm="" driver="" build=build keep="" after_slack=8192
while getopts "s:d:w:r:B:o:m:h" opt; do
  case $opt in
    s) server=$OPTARG ;;
    d) dur=$OPTARG ;;
    w) warm=$OPTARG ;;
    r) driver=$OPTARG ;;
    B) build=$OPTARG ;;
    o) keep=$OPTARG ;;
    m) after_slack=$OPTARG ;;
    *) usage ;;
  esac
done
case $server in serve | echo) ;; *) usage ;; esac
[ -n "$warm" ] || warm=$((dur / 4 < 15 ? 15 : dur / 4))
case $build in /*) ;; *) build=$root/$build ;; esac
py=/usr/bin/python3 # Debian's (the first python3 on PATH may be another build)
bin() { echo "$build/cli/$1"; }
for t in vega-serve vega-echo vega-load vega-curl; do
  [ -x "$(bin $t)" ] || { echo "soak: $(bin $t) missing: build first" >&2; exit 2; }
done
h2=""
[ $server = serve ] && command -v h2load >/dev/null && h2=1 # HTTP/2 phase (nghttp2-client)

bench_tmp
if [ -n "$keep" ]; then mkdir -p "$keep"; out=$keep; else out=$tmp; fi
drv_args=()
[ -n "$driver" ] && drv_args=(--driver "$driver")
fails=()
check() { # check NAME CONDITION-STATUS DETAIL
  if [ "$2" = 0 ]; then printf '  ok    %-34s %s\n' "$1" "$3"; else
    printf '  FAIL  %-34s %s\n' "$1" "$3"; fails+=("$1"); fi
}

# ---- servers ----------------------------------------------------------------------------------

# start NAME CMD...: starts a server that prints its port; sets port_NAME and pid_NAME.
start() {
  local name=$1 log="$out/$1.log" p i
  shift
  timeout $((dur + 120)) "$@" >"$log" 2>&1 &
  local tp=$!
  pids+=("$tp")
  for ((i = 0; i < 100; i++)); do
    p=$(grep -oE 'listening on 127\.0\.0\.1:[0-9]+' "$log" | head -n 1 | sed 's/.*://')
    [ -n "$p" ] && break
    sleep 0.05
  done
  [ -n "$p" ] || { echo "soak: $name did not start:"; cat "$log"; exit 1; }
  printf -v "port_$name" %s "$p"
  printf -v "tpid_$name" %s "$tp"
  printf -v "pid_$name" %s "$(pgrep -P "$tp" | head -n 1)"
  p=$(grep -oE 'metrics on http://127\.0\.0\.1:[0-9]+' "$log" | head -n 1 | sed 's/.*://')
  printf -v "mport_$name" %s "$p"
}

www=$tmp/www
if [ $server = serve ]; then
  mkdir -p "$www/sub"
  head -c 1024 /dev/urandom >"$www/1k.bin"
  head -c $((32 << 20)) /dev/urandom >"$www/big.bin"
  for i in $(seq 1 400); do echo "line $i of a text file that compresses well"; done >"$www/16k.txt"
  echo '<!doctype html><title>soak</title><p>soak</p>' >"$www/index.html"
  echo 'in a folder' >"$www/sub/a.txt"
  start plain "$(bin vega-serve)" "${drv_args[@]}" --h2c -p 0 --metrics 127.0.0.1:0 "$www"
  start tls "$(bin vega-serve)" "${drv_args[@]}" --tls -p 0 --metrics 127.0.0.1:0 "$www"
  big=$www/big.bin
else
  mkdir -p "$www"
  head -c $((8 << 20)) /dev/urandom >"$www/big.bin"
  start plain "$(bin vega-echo)" "${drv_args[@]}" -l 127.0.0.1 0
  start tls "$(bin vega-echo)" "${drv_args[@]}" --tls -l 127.0.0.1 0
  big=$www/big.bin
fi
# shellcheck disable=SC2154
{ P1=$port_plain P2=$port_tls; S1=$pid_plain S2=$pid_tls; M1=$mport_plain M2=$mport_tls; }
want=$(sha256sum "$big" | cut -d' ' -f1)

sleep 1
base_rss1=$(rss_kb "$S1") base_rss2=$(rss_kb "$S2")
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
base_fd1=$(fds "$S1") base_fd2=$(fds "$S2")
echo "soak: $server (driver ${driver:-default}), ${dur}s with ${warm}s warm-up; ports $P1 (plain) $P2 (TLS)"
echo "soak: baseline rss ${base_rss1}/${base_rss2} KiB, fds ${base_fd1}/${base_fd2}"

# ---- trace ------------------------------------------------------------------------------------
# heap_kb PORT: "IN-USE<tab>MAPPED" KiB from a --metrics listener (glibc's mallinfo2), or "-<tab>-"
heap_kb() {
  [ -n "$1" ] || { printf -- '-\t-'; return; }
  curl -s --max-time 2 "http://127.0.0.1:$1/metrics" | awk '
    /^vega_heap_inuse_bytes / { i = $2 } /^vega_heap_mapped_bytes / { m = $2 }
    END { if (i == "" || m == "") printf "-\t-"; else printf "%d\t%d", i / 1024, m / 1024 }'
}
trace=$out/trace.tsv
echo -e "t\trss_plain_kb\tanon_plain_kb\tfds_plain\trss_tls_kb\tanon_tls_kb\tfds_tls\theap_plain_kb\tmapped_plain_kb\theap_tls_kb\tmapped_tls_kb" >"$trace"
(
  t0=$SECONDS
  while :; do
    echo -e "$((SECONDS - t0))\t$(rss_kb "$S1")\t$(anon_kb "$S1")\t$(fds "$S1")\t$(rss_kb "$S2")\t$(anon_kb "$S2")\t$(fds "$S2")\t$(heap_kb "$M1")\t$(heap_kb "$M2")"
    sleep 1
  done
) >>"$trace" &
sampler=$!
pids+=("$sampler")

# ---- load, chaos and big transfers ------------------------------------------------------------
L=(timeout $((dur + 30)) "$(bin vega-load)" --no-progress --json --timeout 10s "${drv_args[@]}")
if [ $server = serve ]; then
  "${L[@]}" -c 16 -d "${dur}s" "http://127.0.0.1:$P1/1k.bin" >"$out/ka.json" 2>"$out/ka.err" &
  l1=$!
  "${L[@]}" -c 4 -d "${dur}s" -H 'Connection: close' "http://127.0.0.1:$P1/16k.txt" \
    >"$out/churn.json" 2>"$out/churn.err" &
  l2=$!
  "${L[@]}" -k -c 8 -d "${dur}s" "https://127.0.0.1:$P2/1k.bin" >"$out/tls_ka.json" 2>"$out/tls_ka.err" &
  l3=$!
  "${L[@]}" -k -c 2 -d "${dur}s" -H 'Connection: close' "https://127.0.0.1:$P2/16k.txt" \
    >"$out/tls_churn.json" 2>"$out/tls_churn.err" &
  l4=$!
  loads=("$l1:ka" "$l2:churn" "$l3:tls_ka" "$l4:tls_churn")
  chaos_args=(--http "$P1" --tls-port "$P2" --big /big.bin --big-size $((32 << 20)))
  if [ -n "$h2" ]; then
    # HTTP/2 at a fixed rate (--rps per connection), so that it shares the CPUs with the rest
    H=(timeout $((dur + 30)) h2load -m 10 --rps 50 -D "$dur" -N 15s)
    "${H[@]}" -c 8 "https://127.0.0.1:$P2/1k.bin" >"$out/h2_tls.txt" 2>&1 &
    h1=$!
    "${H[@]}" -c 4 "http://127.0.0.1:$P1/16k.txt" >"$out/h2c.txt" 2>&1 &
    h2c=$!
    pids+=("$h1" "$h2c")
    chaos_args+=(--h2)
  fi
else
  "${L[@]}" echo -c 16 -s 1K -d "${dur}s" "127.0.0.1:$P1" >"$out/ka.json" 2>"$out/ka.err" &
  l1=$!
  "${L[@]}" echo --tls -k -c 4 -s 16K -d "${dur}s" "127.0.0.1:$P2" >"$out/tls_ka.json" \
    2>"$out/tls_ka.err" &
  l2=$!
  loads=("$l1:ka" "$l2:tls_ka")
  chaos_args=(--echo "$P1" --tls-port "$P2")
fi
pids+=("$l1")
timeout $((dur + 60)) "$py" "$here/chaos.py" "${chaos_args[@]}" -d "$dur" >"$out/chaos.json" \
  2>"$out/chaos.err" &
chaos=$!
pids+=("$chaos")

# Large transfers, one after the other, until the load ends; each must be byte-exact.
(
  end=$((SECONDS + dur - 2)) ok=0 bad=0 i=0
  while [ $SECONDS -lt $end ]; do
    if [ $server = serve ]; then
      if [ -n "$h2" ] && [ $((i % 4)) = 3 ]; then
        got=$(timeout 60 curl -sSk --http2 "https://127.0.0.1:$P2/big.bin" | sha256sum | cut -d' ' -f1)
      elif [ $((i % 2)) = 0 ]; then
        got=$(timeout 60 curl -sS "http://127.0.0.1:$P1/big.bin" | sha256sum | cut -d' ' -f1)
      else
        got=$(timeout 60 "$(bin vega-curl)" -sSk "https://127.0.0.1:$P2/big.bin" | sha256sum | cut -d' ' -f1)
      fi
    else
      if [ $((i % 2)) = 0 ]; then
        got=$(timeout 60 "$(bin vega-echo)" 127.0.0.1 "$P1" <"$big" | sha256sum | cut -d' ' -f1)
      else
        got=$(timeout 60 "$(bin vega-echo)" --tls -k 127.0.0.1 "$P2" <"$big" | sha256sum | cut -d' ' -f1)
      fi
    fi
    if [ "$got" = "$want" ]; then ok=$((ok + 1)); else bad=$((bad + 1)); echo "transfer $i: $got" >&2; fi
    i=$((i + 1))
  done
  echo "$ok $bad"
) >"$out/transfers.txt" 2>"$out/transfers.err" &
xfer=$!
pids+=("$xfer")

# smaps at the end of warm-up and near the end of the load: which mappings grew, when one did
snap() { cat "/proc/$S1/smaps" >"$out/smaps-plain-$1" 2>/dev/null; cat "/proc/$S2/smaps" >"$out/smaps-tls-$1" 2>/dev/null; }
( sleep "$warm"; snap warm; sleep $((dur - warm > 3 ? dur - warm - 3 : 0)); snap end ) &
pids+=("$!")
sleep "$warm"
echo "soak: after warm-up rss $(rss_kb "$S1")/$(rss_kb "$S2") KiB (anonymous $(anon_kb "$S1")/$(anon_kb "$S2"))"
for l in "${loads[@]}"; do wait "${l%%:*}"; done
[ -n "$h2" ] && wait "$h1" "$h2c"
wait "$chaos"
chaos_rc=$?
wait "$xfer"

# ---- after the load ---------------------------------------------------------------------------
# Connections close on their own time (lingering closes, TLS close_notify): wait for the fds.
fd1="" fd2=""
for ((i = 0; i < 200; i++)); do
  fd1=$(fds "$S1") fd2=$(fds "$S2")
  [ "$fd1" -le "$base_fd1" ] && [ "$fd2" -le "$base_fd2" ] && break
  sleep 0.1
done
# vega-serve gives its allocator's free pages back after a second with nothing to do: wait for
# that tick (1 to 2 s after the last connection closed) and a little more
sleep 3
after_rss1=$(rss_kb "$S1") after_rss2=$(rss_kb "$S2")
kill "$sampler" 2>/dev/null
# The memory checks compare floors: the smallest sample of 9 s windows (bench/soak/floors.py).
read -r warm_rss1 warm_anon1 warm_rss2 warm_anon2 warm_heap1 warm_heap2 \
  end_rss1 end_anon1 end_rss2 end_anon2 end_heap1 end_heap2 free1 free2 \
  < <("$py" "$here/floors.py" "$trace" "$warm" "$dur")

echo "soak: results"
for l in "${loads[@]}"; do
  n=${l#*:}
  r=$("$py" - "$out/$n.json" <<'EOF'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"1 no result ({e})"); sys.exit()
n = j.get("requests", j.get("round_trips", 0))  # HTTP: requests; echo: round trips
ok = j["errors"] == 0 and n > 0 and j.get("status_classes", {"2xx": n})["2xx"] == n
what = "requests" if "requests" in j else "round trips"
print(0 if ok else 1, f'{n} {what}, {j["rps"]:.0f}/s, {j["errors"]} errors,',
      f'{j.get("connects", 0)} connects' + (f', status {j["status"]}' if "status" in j else ""))
EOF
)
  check "load $n" "${r%% *}" "${r#* }"
done
if [ -n "$h2" ]; then
  for n in h2_tls h2c; do
    # "requests: N total, N started, N done, S succeeded, F failed, E errored, T timeout" and
    # "status codes: 2xx 3xx 4xx 5xx"
    r=$(awk '/^requests:/ { n = $2; ok = $8 } /^status codes:/ { two = $3 }
      END { if (n == "") { print "1 no result"; exit }
            print (n > 0 && ok == n && two == n) ? 0 : 1, n " requests, " ok " succeeded, " two " 2xx" }' "$out/$n.txt")
    check "load $n (h2load)" "${r%% *}" "${r#* }"
  done
fi
read -r xok xbad <"$out/transfers.txt" || { xok=0 xbad=1; }
check "large transfers byte-exact" $([ "$xbad" = 0 ] && [ "$xok" -gt 0 ] && echo 0 || echo 1) \
  "$xok exact, $xbad wrong ($(du -h "$big" | cut -f1) each)"
c=$("$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["total"], j["refused"], len(j["problems"]), "; ".join(j["problems"][:3]))' "$out/chaos.json" 2>/dev/null || echo "0 0 1 no result")
read -r ctotal crefused cprob cdetail <<<"$c"
check "chaos: no protocol break" $([ "$chaos_rc" = 0 ] && [ "$cprob" = 0 ] && echo 0 || echo 1) \
  "$ctotal faults made, $crefused refused${cdetail:+; $cdetail}"
echo "        faults: $("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["faults"])' "$out/chaos.json" 2>/dev/null)"

alive=0
if [ $server = serve ]; then
  curl -sf -o /dev/null "http://127.0.0.1:$P1/1k.bin" || alive=1
  curl -sfk -o /dev/null "https://127.0.0.1:$P2/1k.bin" || alive=1
else
  [ "$(echo soak | timeout 10 "$(bin vega-echo)" 127.0.0.1 "$P1")" = soak ] || alive=1
  [ "$(echo soak | timeout 10 "$(bin vega-echo)" --tls -k 127.0.0.1 "$P2")" = soak ] || alive=1
fi
check "servers alive and answering" $alive "pids $S1 $S2"
check "fds back to baseline" $([ "$fd1" -le "$base_fd1" ] && [ "$fd2" -le "$base_fd2" ] && echo 0 || echo 1) \
  "plain $base_fd1 -> $fd1, tls $base_fd2 -> $fd2"
flat() { [ "$2" -le $(($1 + $1 / 10)) ] && echo 0 || echo 1; }
# anon_flat FROM TO [MORE]: TO within 10% or 1 MiB of FROM, plus MORE KiB
anon_flat() { local d=$(($1 / 10)); [ $d -ge 1024 ] || d=1024; [ "$2" -le $(($1 + d + ${3:-0})) ] && echo 0 || echo 1; }
echo "        memory: floors of the 9 s after warm-up (${warm}s) and of the last 9 s of the load (${dur}s)"
check "rss flat after warm-up (plain)" "$(flat "$warm_rss1" "$end_rss1")" "$warm_rss1 -> $end_rss1 KiB"
check "rss flat after warm-up (tls)" "$(flat "$warm_rss2" "$end_rss2")" "$warm_rss2 -> $end_rss2 KiB"
# Anonymous RSS counts the pages of chunks malloc has freed and keeps: glibc gives an arena's
# pages back only from its top, so under a steady load RSS creeps towards the arenas' size as
# the frees spread over them (measured: +1 MiB within 45 s in 2 CI runs of 10, the heap in use
# flat; gone after a second idle, when vega-serve calls malloc_trim). Where the server reports
# its heap, a heap leak is judged by the bytes in use, and anonymous RSS may also grow by what
# those bytes grew and by the bytes malloc holds free at the end (their smallest value in the
# last 9 s): growth beyond is outside malloc (stacks, rings, pools).
# mem_checks NAME WARM_ANON END_ANON WARM_HEAP END_HEAP FREE (KiB; the last three "-" if unknown)
mem_checks() {
  local name=$1 more=0 why="" r
  if [ "$4" != - ] && [ "$5" != - ] && [ "$6" != - ]; then
    check "heap in use flat ($name)" "$(anon_flat "$4" "$5")" "$4 -> $5 KiB"
    more=$(($5 > $4 ? $5 - $4 + $6 : $6))
    why=" (may grow $more more: malloc's $6 KiB free and its heap's growth)"
  fi
  r=$(anon_flat "$2" "$3" "$more")
  check "anonymous rss flat ($name)" "$r" "$2 -> $3 KiB$why"
  [ "$r" = 0 ] || "$py" "$here/smaps_diff.py" "$out/smaps-$name-warm" "$out/smaps-$name-end" 2>&1
}
mem_checks plain "$warm_anon1" "$end_anon1" "$warm_heap1" "$end_heap1" "$free1"
mem_checks tls "$warm_anon2" "$end_anon2" "$warm_heap2" "$end_heap2" "$free2"
near() { [ "$2" -le $(($1 + after_slack)) ] && echo 0 || echo 1; }
check "rss near baseline after (plain)" "$(near "$base_rss1" "$after_rss1")" \
  "baseline $base_rss1, after $after_rss1 KiB (slack $after_slack)"
check "rss near baseline after (tls)" "$(near "$base_rss2" "$after_rss2")" \
  "baseline $base_rss2, after $after_rss2 KiB (slack $after_slack)"

for s in plain tls; do
  tp_var=tpid_$s sp_var=pid_$s
  kill -TERM "${!sp_var}" 2>/dev/null
  wait "${!tp_var}"
  src=$?
  check "$s server exits 0 on SIGTERM" "$src" "exit status $src"
done
echo "soak: trace in $trace ($(($(wc -l <"$trace") - 1)) samples)"
if [ ${#fails[@]} -gt 0 ]; then
  echo "soak: FAILED: ${fails[*]} (logs in $out${keep:+}; rerun with -o DIR to keep them)"
  [ -z "$keep" ] && { for f in "$out"/*.err "$out"/*.log; do [ -s "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done; }
  exit 1
fi
echo "soak: all checks passed"
