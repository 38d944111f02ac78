#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hunts flaky tests: runs the CTest suites again and again while both CPUs are kept busy by
# another load, and lists every test that failed even once. A test that fails one run in fifty
# is a broken test: it asserts what the machine usually does, not what the code guarantees.
#
# usage: scripts/flake-hunt.sh [-n RUNS] [-s SUITES] [-L none|stress|build] [-p PREFIX]
#   -n RUNS    rounds (default 5); each round runs every suite once
#   -s SUITES  comma-separated, from ctest (build/), asan (build-asan/), tsan (build-tsan/)
#              (default ctest,asan,tsan); a missing build folder is built first by
#              scripts/test.sh's stage of the same name
#   -p PREFIX  build folders PREFIX, PREFIX-asan, PREFIX-tsan (default build; with another
#              prefix, missing folders are an error rather than built)
#   -L LOAD    stress: stress-ng on every CPU (installed with apt-get when missing; the
#              default), build: a parallel rebuild of a scratch copy of the library in a loop,
#              none: no load
# Exit status: 0 when nothing failed, 1 otherwise. The table of failures is also written to
# build-flake/failures.txt, and each failing run's log to build-flake/.
set -u -o pipefail
source "$(dirname "$0")/common.sh"
set +e # common.sh turns -e on: a failing round must be recorded, not end the hunt

runs=5 suites=ctest,asan,tsan load=stress prefix=build
while getopts "n:s:L:p:h" opt; do
    case $opt in
    n) runs=$OPTARG ;;
    s) suites=$OPTARG ;;
    L) load=$OPTARG ;;
    p) prefix=$OPTARG ;;
    *) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done

out=$ROOT/$prefix-flake
mkdir -p "$out"
: >"$out/failures.raw"

declare -A DIR=([ctest]=$prefix [asan]=$prefix-asan [tsan]=$prefix-tsan)
IFS=, read -r -a list <<<"$suites"
for s in "${list[@]}"; do
    [ -n "${DIR[$s]:-}" ] || die "unknown suite '$s' (ctest, asan, tsan)"
    if [ ! -f "$ROOT/${DIR[$s]}/CTestTestfile.cmake" ]; then
        [ "$prefix" = build ] || die "${DIR[$s]} is not built"
        stage=$s
        [ "$s" = ctest ] && stage=build
        log "building ${DIR[$s]} first"
        bash "$ROOT/scripts/test.sh" "$stage" >"$out/build-$s.log" 2>&1 || die "cannot build ${DIR[$s]} (see $out/build-$s.log)"
    fi
done

load_pids=()
start_load() {
    local n
    n=$(nproc)
    case $load in
    none) return ;;
    stress)
        if ! command -v stress-ng >/dev/null; then
            log "installing stress-ng"
            as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q stress-ng >/dev/null ||
                die "cannot install stress-ng; use -L build"
        fi
        # CPU spinners, a memory churner and an I/O writer: every kind of contention a CI
        # machine shares with other work.
        # Its own process group (setsid), so that stop_load ends exactly this load and its
        # workers, never another stress-ng on the machine.
        setsid stress-ng --cpu "$n" --vm 1 --vm-bytes 256M --hdd 1 --hdd-bytes 64M --timeout 24h \
            >/dev/null 2>&1 &
        load_pids+=($!)
        ;;
    build)
        local scratch
        scratch=$(mktemp -d)
        git -C "$ROOT" archive HEAD | tar -x -C "$scratch"
        # Its own process group (setsid): stop_load ends the loop and the compilers it started.
        setsid bash -c 'while :; do
            cmake -S "$1" -B "$1/b" -DVEGA_BUILD_TESTS=OFF -DVEGA_BUILD_CLI=OFF \
                -DVEGA_BUILD_BENCH=OFF >/dev/null 2>&1
            cmake --build "$1/b" -j"$2" --clean-first >/dev/null 2>&1
        done' build-load "$scratch" "$n" &
        load_pids+=($!)
        ;;
    *) die "unknown load '$load'" ;;
    esac
}
stop_load() {
    local p
    # Each load leads its own process group: signal that group, by id. (A `pkill -x stress-ng`
    # here used to end every stress-ng on the machine, other people's included.)
    for p in "${load_pids[@]}"; do
        kill -TERM -- "-$p" 2>/dev/null || true
    done
    load_pids=()
}
trap stop_load EXIT

SAN_ENV=(
    "ASAN_OPTIONS=detect_leaks=1"
    "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1"
    "LSAN_OPTIONS=suppressions=$ROOT/tests/lsan.supp:print_suppressions=0"
    "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1"
    "VEGA_TEST_SCALE=10"
)
start_load
log "load: $load; $runs rounds of: ${list[*]}"
for ((r = 1; r <= runs; r++)); do
    for s in "${list[@]}"; do
        envs=()
        pre=()
        [ "$s" != ctest ] && envs=("${SAN_ENV[@]}")
        # clang 14's TSan needs the address space unrandomised on newer kernels (test.sh)
        [ "$s" = tsan ] && pre=(setarch "$(uname -m)" -R)
        logf="$out/round$r-$s.log"
        t0=$SECONDS
        env "${envs[@]}" "${pre[@]}" ctest --test-dir "$ROOT/${DIR[$s]}" -j"$JOBS" \
            --output-on-failure >"$logf" 2>&1
        rc=$?
        summary=$(grep -E 'tests passed' "$logf" | tail -n 1)
        echo "round $r $s: ${summary:-no summary} ($((SECONDS - t0))s)"
        if [ $rc -ne 0 ]; then
            # "Not Run" too: a test whose program did not build is not a pass.
            names=$(sed -nE 's/^[[:space:]]*[0-9]+ - ([^ ]+) \((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|Not Run)\).*/\1/p' "$logf")
            [ -n "$names" ] || names="(ctest-exit-$rc:see-round$r-$s.log)"
            printf '%s\n' "$names" | sed "s/^/$s /" >>"$out/failures.raw"
        else
            rm -f "$logf"
        fi
    done
done
stop_load

sort "$out/failures.raw" | uniq -c | sort -rn >"$out/failures.txt"
if [ -s "$out/failures.txt" ]; then
    echo "flake-hunt: tests that failed (count, suite, test), logs in $out/:"
    cat "$out/failures.txt"
    exit 1
fi
echo "flake-hunt: no test failed in $runs rounds of ${list[*]} under load '$load'"
