#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Scheduler benchmarks with many tasks alive at once (issue 17), libvega vs Tokio, in one run:
# 100,000 concurrent sleepers, a 17-level binary spawn tree, a ring of 100,000 tasks waiting on
# one another in turn, and a contended mutex, semaphore and channel (16 tasks), each on the
# current-thread runtime and on the multi-thread runtime with 2 workers. Runs are interleaved
# (the order of the sides rotates each repetition). Prints a markdown table with the median
# ns/op and peak RSS (ru_maxrss) of each side and the medians of the per-repetition ratios
# vega/tokio (lower is better; the goal is <= 1.00 for time and for memory).
# With -B a third side, "base" (libvega built before a change), runs in the same rotation, and
# the table gets the ratios vega/base: a change is measured before/after in one run.
#
# usage: bench/run-sched-live.sh [-r REPS] [-n SCALE] [-t SECS] [-T SECS] [-b BENCHES]
#                                [-f FLAVORS] [-B BASE_BIN] [VEGA_BIN]
#   VEGA_BIN  the C bench (default build/bench/sched/vega-sched-bench)
#   -r REPS   repetitions per (bench, flavour) and side (default 5)
#   -n SCALE  multiplies the task counts of sleep and ring (100,000) and the op count of mutex,
#             sem and chan (1,000,000); tree stays 17 levels (default 1; 0.1 for a quick look)
#   -t SECS   limit for one run (default 60); a run over it counts as failed
#   -T SECS   limit for the whole script (default 1800); later runs are skipped
#   -b LIST   benches, comma-separated (default sleep,tree,ring,mutex,sem,chan)
#   -f LIST   flavours, comma-separated (default current,multi)
#   -B BIN    a second libvega bench binary to compare against (the "base" side)
# Environment: TOKIO_BENCH=path skips the cargo build and uses that binary;
#              CARGO_TARGET_DIR (default: <dir of VEGA_BIN>/../tokio).
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

cmdline="bench/run-sched-live.sh $*"
reps=5 scale=1 run_limit=60 total_limit=1800 base_bin=
benches=sleep,tree,ring,mutex,sem,chan flavors=current,multi
while getopts "r:n:t:T:b:f:B:h" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    n) scale=$OPTARG ;;
    t) run_limit=$OPTARG ;;
    T) total_limit=$OPTARG ;;
    b) benches=$OPTARG ;;
    f) flavors=$OPTARG ;;
    B) base_bin=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
vega_bin=${1:-$root/build/bench/sched/vega-sched-bench}
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "run-sched-live.sh: -r wants a positive integer" >&2; exit 2; }
scaled() { awk -v s="$scale" -v b="$1" 'BEGIN { v = int(b * s + 0.5); if (v < 16) v = 16; print v }'; }
bench_n() {
  case $1 in
    sleep | ring) scaled 100000 ;;
    tree) echo 17 ;;
    mutex | sem | chan) scaled 1000000 ;;
    *) echo "run-sched-live.sh: unknown bench $1" >&2; exit 2 ;;
  esac
}
for b in ${benches//,/ }; do bench_n "$b" >/dev/null || exit 2; done

for v in "$vega_bin" ${base_bin:+"$base_bin"}; do
  if [ ! -x "$v" ]; then
    echo "run-sched-live.sh: $v not found; build it first:" >&2
    echo "  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build --target vega-sched-bench" >&2
    exit 1
  fi
done
vega_bin=$(cd "$(dirname "$vega_bin")" && pwd)/$(basename "$vega_bin")
[ -z "$base_bin" ] || base_bin=$(cd "$(dirname "$base_bin")" && pwd)/$(basename "$base_bin")

# ---- the Tokio side: built offline against Debian's vendored crates (bench/tokio/.cargo) ----
if [ -n "${TOKIO_BENCH:-}" ]; then
  tokio_bin=$TOKIO_BENCH
else
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$(dirname "$(dirname "$vega_bin")")/tokio}
  if ! (cd "$here/tokio" && timeout 900 cargo build --release --offline --quiet); then
    echo "run-sched-live.sh: building the Tokio bench failed (cargo build --release --offline" \
      "--manifest-path $here/tokio/Cargo.toml; needs Debian's librust-tokio-dev)" >&2
    exit 1
  fi
  tokio_bin=$CARGO_TARGET_DIR/release/vega-tokio-bench
fi
[ -x "$tokio_bin" ] || { echo "run-sched-live.sh: $tokio_bin missing" >&2; exit 1; }

start=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
raw=$(mktemp) errf=$(mktemp)
trap 'rm -f "$raw" "$errf"' EXIT

# run SIDE BIN BENCH FLAVOR REP: appends "side bench flavor rep ns rss_kib" (ns = FAIL:why)
run() {
  local side=$1 bin=$2 b=$3 f=$4 rep=$5 out rc n word
  n=$(bench_n "$b")
  word=$side
  [ "$side" = base ] && word=vega
  out=$(timeout -k 5 "$run_limit" "$bin" "$b" "$f" "$n" 2>"$errf")
  rc=$?
  if [ $rc -eq 0 ] && [[ $out =~ ^$word\ $b\ $f\ ([0-9.]+)\ ([0-9]+)$ ]]; then
    echo "$side $b $f $rep ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}" >>"$raw"
  else
    local why="rc=$rc"
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      why="timeout ${run_limit}s"
    elif [ $rc -gt 128 ]; then
      why="rc=$rc, SIG$(kill -l $((rc - 128)) 2>/dev/null)"
    fi
    echo "$side $b $f $rep FAIL:$why -" >>"$raw"
    {
      echo "run-sched-live.sh: FAILED ($why): $bin $b $f $n"
      [ -n "$out" ] && echo "  stdout: $out"
      sed 's/^/  stderr: /' "$errf" | tail -20
    } >&2
  fi
}

sides=(vega tokio)
[ -z "$base_bin" ] || sides+=(base)
bin_of() { case $1 in vega) echo "$vega_bin" ;; tokio) echo "$tokio_bin" ;; base) echo "$base_bin" ;; esac; }
skipped=0
for b in ${benches//,/ }; do
  for f in ${flavors//,/ }; do
    for ((rep = 1; rep <= reps; rep++)); do
      if (($(date +%s) - start > total_limit)); then
        skipped=$((skipped + 1))
        continue
      fi
      # rotate the order: rep 1 vega,tokio[,base]; rep 2 tokio,[base,]vega; ...
      k=${#sides[@]}
      for ((i = 0; i < k; i++)); do
        s=${sides[$(((i + rep - 1) % k))]}
        run "$s" "$(bin_of "$s")" "$b" "$f" "$rep"
      done
    done
  done
done
elapsed=$(($(date +%s) - start))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report ----------------------------------------------------------------------------------
base_head= base_sep=
if [ -n "$base_bin" ]; then
  base_head=" base ns/op | base RSS MiB | vega/base time | vega/base RSS |"
  base_sep="---:|---:|---:|---:|"
fi
cat <<EOT
## Scheduler benchmarks, many tasks alive at once: libvega vs Tokio

- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')
- kernel: $(uname -r) ($(uname -m)), nproc: $(nproc)$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: */, cpu: /')
- load average (1, 5, 15 min) at the start: $load_start; at the end: $load_end
- tokio: $(awk -F'"' '/^name = "tokio"$/ { getline; print $2 }' "$here/tokio/Cargo.lock" 2>/dev/null) (Debian librust-tokio-dev, built offline), $(rustc --version 2>/dev/null || echo rustc ?)
- n: sleep $(bench_n sleep) tasks, tree 17 levels ($((2 ** 17 - 1)) tasks), ring $(bench_n ring) tasks x 10 rounds, mutex/sem/chan $(bench_n mutex) ops over 16 tasks
- $reps repetitions per side, interleaved (the order rotates), ${elapsed}s
- commands: \`${vega_bin#"$root"/} <bench> <flavor> <n>\` and \`${tokio_bin#"$root"/} <bench> <flavor> <n>\`${base_bin:+ and \`${base_bin#"$root"/} <bench> <flavor> <n>\` (base)}
  (run by \`$cmdline\`)
- ns/op: per task (sleep, tree), per hop (ring), per lock/acquire/message (mutex, sem, chan);
  RSS: the process's peak resident set (getrusage ru_maxrss / VmHWM), runtime included

| bench | flavor | vega ns/op | tokio ns/op | vega/tokio time | vega RSS MiB | tokio RSS MiB | vega/tokio RSS | goal (<= 1.00) met? |${base_head}
|---|---|---:|---:|---:|---:|---:|---:|---|${base_sep}
EOT
for b in ${benches//,/ }; do
  for f in ${flavors//,/ }; do
    awk -v b="$b" -v f="$f" -v withbase="${base_bin:+1}" '
      function median(a, k,   i, j, t) {
        for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
        return k % 2 ? a[(k+1)/2] : (a[k/2] + a[k/2+1]) / 2
      }
      # med(SIDE, FIELD): median of side.field over the repetitions ("-" if none)
      function med(s, fld,   r, k, a) {
        k = 0
        for (r in reps) if (((s, r) in ns)) a[++k] = (fld == "ns" ? ns[s, r] : rss[s, r])
        return k ? median(a, k) : "-"
      }
      # ratio(A, B, FIELD): median over the repetitions of A.field / B.field
      function ratio(x, y, fld,   r, k, a) {
        k = 0
        for (r in reps)
          if (((x, r) in ns) && ((y, r) in ns))
            a[++k] = fld == "ns" ? ns[x, r] / ns[y, r] : rss[x, r] / rss[y, r]
        return k ? median(a, k) : "-"
      }
      function fmt(v, p) { return v == "-" ? "-" : sprintf(p, v) }
      $2 == b && $3 == f {
        if ($5 ~ /^FAIL/) { fail[$1]++; next }
        ns[$1, $4] = $5; rss[$1, $4] = $6 / 1024; reps[$4] = 1
      }
      END {
        tr = ratio("vega", "tokio", "ns"); mr = ratio("vega", "tokio", "rss")
        met = (tr == "-" || mr == "-") ? "n/a" : (tr <= 1.0 && mr <= 1.0 ? "yes" : (tr <= 1.0 ? "time only" : (mr <= 1.0 ? "RSS only" : "no")))
        if (b == "mutex" || b == "sem" || b == "chan") met = (tr == "-") ? "n/a" : (tr <= 1.0 ? "yes" : "no")
        line = sprintf("| %s | %s | %s%s | %s%s | %s | %s | %s | %s | %s |", b, f,
          fmt(med("vega", "ns"), "%.1f"), fail["vega"] ? " (" fail["vega"] " failed)" : "",
          fmt(med("tokio", "ns"), "%.1f"), fail["tokio"] ? " (" fail["tokio"] " failed)" : "",
          fmt(tr, "%.2f"), fmt(med("vega", "rss"), "%.1f"), fmt(med("tokio", "rss"), "%.1f"),
          fmt(mr, "%.2f"), met)
        if (withbase)
          line = line sprintf(" %s%s | %s | %s | %s |", fmt(med("base", "ns"), "%.1f"),
            fail["base"] ? " (" fail["base"] " failed)" : "", fmt(med("base", "rss"), "%.1f"),
            fmt(ratio("vega", "base", "ns"), "%.2f"), fmt(ratio("vega", "base", "rss"), "%.2f"))
        print line
      }' "$raw"
  done
done
echo
[ $skipped -eq 0 ] || echo "Skipped $skipped repetitions: the run passed -T ${total_limit}s."
echo "<details><summary>raw runs (side bench flavor rep ns/op rss_kib)</summary>"
echo
echo '```'
cat "$raw"
echo '```'
echo "</details>"
grep -q FAIL "$raw" && exit 1
exit 0
