#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Scheduler microbenchmarks, libvega vs Tokio, in one run: spawn, yield and ping-pong on the
# current-thread runtime and on the multi-thread runtime with 2 workers. Runs of the two sides
# are interleaved (the order alternates each repetition, so drift hits both alike); prints a
# markdown table with the median ns/op of each side and the median of the per-repetition
# ratios vega/tokio (lower is better; the goal is <= 0.50). Compare numbers only within one run.
#
# usage: bench/run-sched.sh [-r REPS] [-n SCALE] [-t SECS] [-T SECS] [-b BENCHES] [-f FLAVORS]
#                           [VEGA_BIN]
#   VEGA_BIN  the C bench (default build/bench/sched/vega-sched-bench)
#   -r REPS   repetitions per (bench, flavour) and side (default 5)
#   -n SCALE  multiplies the op count 1,000,000 (default 1; e.g. 0.1 for a quick look)
#   -t SECS   limit for one run (default 60); a run over it counts as failed
#   -T SECS   limit for the whole script (default 1800); later runs are skipped
#   -b LIST   benches, comma-separated (default spawn,yield,pingpong)
#   -f LIST   flavours, comma-separated (default current,multi)
# Environment: TOKIO_BENCH=path skips the cargo build and uses that binary;
#              CARGO_TARGET_DIR (default: <dir of VEGA_BIN>/../tokio, i.e. build/bench/tokio).
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

cmdline="bench/run-sched.sh $*"
reps=5 scale=1 run_limit=60 total_limit=1800
benches=spawn,yield,pingpong flavors=current,multi
while getopts "r:n:t:T:b:f:h" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    n) scale=$OPTARG ;;
    t) run_limit=$OPTARG ;;
    T) total_limit=$OPTARG ;;
    b) benches=$OPTARG ;;
    f) flavors=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
vega_bin=${1:-$root/build/bench/sched/vega-sched-bench}
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "run-sched.sh: -r wants a positive integer" >&2; exit 2; }
n=$(awk -v s="$scale" 'BEGIN { v = int(1000000 * s + 0.5); if (v < 10) v = 10; print v }')

if [ ! -x "$vega_bin" ]; then
  echo "run-sched.sh: $vega_bin not found; build it first:" >&2
  echo "  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build --target vega-sched-bench" >&2
  exit 1
fi
vega_bin=$(cd "$(dirname "$vega_bin")" && pwd)/$(basename "$vega_bin")

# ---- the Tokio side: built offline against Debian's vendored crates (bench/tokio/.cargo) ----
if [ -n "${TOKIO_BENCH:-}" ]; then
  tokio_bin=$TOKIO_BENCH
else
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$(dirname "$(dirname "$vega_bin")")/tokio}
  tokio_build="cargo build --release --offline --manifest-path $here/tokio/Cargo.toml"
  if ! (cd "$here/tokio" && timeout 900 cargo build --release --offline --quiet); then
    echo "run-sched.sh: building the Tokio bench failed ($tokio_build)" >&2
    exit 1
  fi
  tokio_bin=$CARGO_TARGET_DIR/release/vega-tokio-bench
fi
[ -x "$tokio_bin" ] || { echo "run-sched.sh: $tokio_bin missing" >&2; exit 1; }

start=$(date +%s)
raw=$(mktemp) errf=$(mktemp)
trap 'rm -f "$raw" "$errf"' EXIT

# run SIDE BIN BENCH FLAVOR REP: appends "side bench flavor rep ns" (ns = FAIL:why) to $raw
run() {
  local side=$1 bin=$2 b=$3 f=$4 rep=$5 out rc
  out=$(timeout -k 5 "$run_limit" "$bin" "$b" "$f" "$n" 2>"$errf")
  rc=$?
  if [ $rc -eq 0 ] && [[ $out =~ ^$side\ $b\ $f\ ([0-9.]+)(\ -?[0-9]+)?$ ]]; then
    echo "$side $b $f $rep ${BASH_REMATCH[1]}" >>"$raw"
  else
    local why="rc=$rc"
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      why="timeout ${run_limit}s"
    elif [ $rc -gt 128 ]; then
      why="rc=$rc, SIG$(kill -l $((rc - 128)) 2>/dev/null)"
    fi
    echo "$side $b $f $rep FAIL:$why" >>"$raw"
    {
      echo "run-sched.sh: FAILED ($why): $bin $b $f $n"
      [ -n "$out" ] && echo "  stdout: $out"
      sed 's/^/  stderr: /' "$errf" | tail -20
    } >&2
  fi
}

skipped=0
for b in ${benches//,/ }; do
  for f in ${flavors//,/ }; do
    for ((rep = 1; rep <= reps; rep++)); do
      if (( $(date +%s) - start > total_limit )); then
        skipped=$((skipped + 1))
        continue
      fi
      if (( rep % 2 )); then
        run vega "$vega_bin" "$b" "$f" "$rep"; run tokio "$tokio_bin" "$b" "$f" "$rep"
      else
        run tokio "$tokio_bin" "$b" "$f" "$rep"; run vega "$vega_bin" "$b" "$f" "$rep"
      fi
    done
  done
done
elapsed=$(( $(date +%s) - start ))

# ---- report ----------------------------------------------------------------------------------
cat <<EOT
## Scheduler microbenchmarks: libvega vs Tokio

- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')
- kernel: $(uname -r) ($(uname -m)), nproc: $(nproc)$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: */, cpu: /')
- tokio: $(awk -F'"' '/^name = "tokio"$/ { getline; print $2 }' "$here/tokio/Cargo.lock" 2>/dev/null) (Debian librust-tokio-dev, built offline), $(rustc --version 2>/dev/null || echo rustc ?)
- n = $n ops per run, $reps repetitions per side, interleaved (vega/tokio order alternates), ${elapsed}s
- commands: \`${vega_bin#"$root"/} <bench> <flavor> $n\` and \`${tokio_bin#"$root"/} <bench> <flavor> $n\`
  (run by \`$cmdline\`)

| bench | flavor | vega ns/op | tokio ns/op | ratio vega/tokio (median) | goal (<= 0.50) met? |
|---|---|---:|---:|---:|---|
EOT
for b in ${benches//,/ }; do
  for f in ${flavors//,/ }; do
    awk -v b="$b" -v f="$f" '
      function median(a, k,   i, j, t) {
        for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
        return k % 2 ? a[(k+1)/2] : (a[k/2] + a[k/2+1]) / 2
      }
      $2 == b && $3 == f {
        if ($5 ~ /^FAIL/) { fail[$1]++; next }
        v[$1, $4] = $5; reps[$4] = 1
      }
      END {
        nv = nt = nr = 0
        for (r in reps) {
          if ((("vega", r) in v)) vv[++nv] = v["vega", r]
          if ((("tokio", r) in v)) tt[++nt] = v["tokio", r]
          if ((("vega", r) in v) && (("tokio", r) in v) && v["tokio", r] > 0) rr[++nr] = v["vega", r] / v["tokio", r]
        }
        mv = nv ? sprintf("%.1f", median(vv, nv)) : "-"
        mt = nt ? sprintf("%.1f", median(tt, nt)) : "-"
        if (fail["vega"]) mv = mv " (" fail["vega"] " failed)"
        if (fail["tokio"]) mt = mt " (" fail["tokio"] " failed)"
        if (nr) { m = median(rr, nr); ratio = sprintf("%.2f", m); met = m <= 0.50 ? "yes" : "no" }
        else { ratio = "-"; met = "n/a" }
        printf "| %s | %s | %s | %s | %s | %s |\n", b, f, mv, mt, ratio, met
      }' "$raw"
  done
done
echo
[ $skipped -eq 0 ] || echo "Skipped $skipped repetitions: the run passed -T ${total_limit}s."
echo "<details><summary>raw runs (side bench flavor rep ns/op)</summary>"
echo
echo '```'
cat "$raw"
echo '```'
echo "</details>"
grep -q FAIL "$raw" && exit 1
exit 0
