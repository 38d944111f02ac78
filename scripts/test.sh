#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what is missing, builds libvega and runs every test suite:
#
#   deps     apt-get install of the missing packages (scripts/common.sh has the list)
#   format   every tracked .c/.h file is as clang-format (.clang-format) writes it; the fix is
#            scripts/format.sh
#   build    build/       RelWithDebInfo, gcc; -DVEGA_WERROR=ON when CI=true
#   ctest    all CTest tests of build/ (every runtime test once per driver: uring, epoll)
#   asan     build-asan/  ASan+UBSan (gcc), then its CTest tests, then the range property test
#            (tests/property/ranges_prop.py) against its vega-serve on both drivers
#   tsan     build-tsan/  TSan (clang), then its CTest tests except those of the single-threaded
#            sans-I/O cores, their fuzz replays and the purity checks, and with the layers
#            above io on the default driver only (TSAN_SKIP: a race needs two threads; ASan
#            runs them all)
#   bats     tests/bats/*.bats against build/ (skipped when there are none)
#   soak     bench/soak/run.sh: vega-serve and vega-echo at their default worker count under
#            load and a hostile client for VEGA_SOAK_SECONDS each (default 60 for vega-serve,
#            30 for vega-echo), on both drivers
#   install  tests/install/check.sh: install build/ into a temporary prefix, build examples/
#            against it with pkg-config and with find_package(vega), run them
#   fuzz     build-fuzz/  clang + libFuzzer over an instrumented library: every target in
#            tests/fuzz runs for VEGA_FUZZ_SECONDS (default 15; 4 when CI=true, which must fit
#            the whole run in 40 minutes on two cores) on a copy of its corpus
#
# Usage: scripts/test.sh [STAGE...]     (no stage: all of them, in the order above)
# Every stage runs even when an earlier one failed (except those that need a failed build);
# the exit status is non-zero when any failed. The last line is "test.sh: all suites passed"
# or "test.sh: FAILED: <stages>".
#
# Environment: CI=true (adds -Werror), VEGA_JOBS (default 2), VEGA_SKIP_DEPS=1,
# VEGA_TEST_SCALE (sanitizer runs default to 10: heavy tests do a tenth of the work).
# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

ALL_STAGES=(deps format build ctest asan tsan bats soak install fuzz)
if [ $# -gt 0 ]; then
    STAGES=("$@")
    for s in "${STAGES[@]}"; do
        case " ${ALL_STAGES[*]} " in
        *" $s "*) ;;
        *) die "unknown stage '$s' (stages: ${ALL_STAGES[*]})" ;;
        esac
    done
else
    STAGES=("${ALL_STAGES[@]}")
fi

WERROR=OFF
if [ "${CI:-}" = true ]; then
    WERROR=ON
fi

# --no-tests=error: a build that registers no test at all is a broken build, not a pass.
CTEST_ARGS=(--output-on-failure --no-tests=error -j"$JOBS")

# Sanitizer settings (exported for the sanitizer stages only, see run_sanitized).
SAN_ENV=(
    "ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}"
    "UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
    "LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/tests/lsan.supp:print_suppressions=0}"
    "TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
    "VEGA_TEST_SCALE=${VEGA_TEST_SCALE:-10}"
)

declare -A RESULT DURATION
FAILED=()

# stage NAME CMD...: runs one stage, records its result and duration.
stage() {
    local name=$1
    shift
    log "stage $name"
    local t0=$SECONDS rc
    # Not `("$@") || rc=$?`: inside a `||` list bash ignores `set -e`, so a failed build step
    # would not stop the stage and a stale tree could be tested.
    set +e
    (
        set -e
        "$@"
    )
    rc=$?
    set -e
    DURATION[$name]=$((SECONDS - t0))
    if [ $rc -eq 0 ]; then
        RESULT[$name]=ok
    else
        RESULT[$name]="FAILED (exit $rc)"
        FAILED+=("$name")
    fi
    echo "--- stage $name: ${RESULT[$name]} in ${DURATION[$name]}s"
    return 0
}

skip() {
    RESULT[$1]="skipped ($2)"
    DURATION[$1]=0
    echo "--- stage $1: skipped ($2)"
}

failed() { case " ${FAILED[*]:-} " in *" $1 "*) return 0 ;; esac; return 1; }

do_format() {
    local bad
    bad=$(git ls-files -z '*.c' '*.h' | xargs -0 clang-format --dry-run 2>&1 |
        sed -nE 's/^([^:]+):[0-9]+:[0-9]+: (warning|error):.*/\1/p' | sort -u)
    if [ -n "$bad" ]; then
        printf 'not formatted (run scripts/format.sh):\n%s\n' "$bad"
        return 1
    fi
    echo "format: $(git ls-files '*.c' '*.h' | wc -l) files as clang-format $(clang-format --version | sed -nE 's/.*version ([0-9.]+).*/\1/p') writes them"
}

do_build() {
    configure_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVEGA_WERROR="$WERROR"
}

do_ctest() {
    ctest --test-dir build "${CTEST_ARGS[@]}"
}

do_asan() {
    configure_build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVEGA_SANITIZE=address \
        -DVEGA_BUILD_BENCH=OFF -DVEGA_BUILD_CLI=ON
    local rc=0 d
    # purity: the symbols of instrumented objects say nothing the plain build's did not
    env "${SAN_ENV[@]}" ctest --test-dir build-asan "${CTEST_ARGS[@]}" -E '^purity\.' || rc=1
    # Random files and Range headers against vega-serve under ASan: every multipart body must
    # parse back (Python's email package) into exactly the bytes asked for.
    for d in uring epoll; do
        env "${SAN_ENV[@]}" /usr/bin/python3 tests/property/ranges_prop.py \
            build-asan/cli/vega-serve --driver "$d" -n "${VEGA_RANGE_CASES:-1500}" || rc=1
    done
    return $rc
}

# clang 14's TSan cannot map its shadow memory when the kernel randomises mmap with more than
# 28 bits (vm.mmap_rnd_bits, newer kernels): it dies with "unexpected memory mapping". Running
# without address-space randomisation (setarch -R) avoids it; decide with a two-line probe.
tsan_wrapper() {
    local d
    d=$(mktemp -d)
    printf 'int main(void) { return 0; }\n' >"$d/p.c"
    TSAN_WRAP=()
    if clang -fsanitize=thread "$d/p.c" -o "$d/p" 2>/dev/null && ! "$d/p" >/dev/null 2>&1; then
        if setarch "$(uname -m)" -R "$d/p" >/dev/null 2>&1; then
            echo "tsan: ASLR breaks clang's TSan on this kernel; running tests under setarch -R"
            TSAN_WRAP=(setarch "$(uname -m)" -R)
        fi
    fi
    rm -rf "$d"
}

# The sans-I/O cores (tests/purity proves they use no thread, lock or runtime) and the checks
# of the build itself: TSan can find nothing there, and they are half of the tests. The layers
# above io (TLS, QUIC endpoint, HTTP server and client) run on the default driver only: their
# threads are the runtime's whichever driver runs under them, and the runtime and io tests,
# where the drivers differ, still run on both (the ctest and asan stages run everything twice).
TSAN_SKIP='^(purity|fuzz|quic|h2|h3|qpack|hpack|http1|http|compress|crypto|base|docs)\.'
TSAN_SKIP+='|^(tls|quic_ep|http_server|http_client)\..*\.epoll$'

do_tsan() {
    configure_build build-tsan -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DVEGA_SANITIZE=thread -DVEGA_BUILD_BENCH=OFF -DVEGA_BUILD_CLI=OFF
    tsan_wrapper
    env "${SAN_ENV[@]}" "${TSAN_WRAP[@]}" ctest --test-dir build-tsan "${CTEST_ARGS[@]}" \
        -E "$TSAN_SKIP"
}

do_bats() {
    VEGA_BUILD_DIR="$ROOT/build" bats --timing tests/bats
}

# A minute of steady load plus a hostile client per server and driver: zero errors for the
# well-behaved clients, byte-exact large transfers, memory and fds flat (bench/soak/run.sh).
do_soak() {
    local rc=0 srv d secs
    rm -f "$ROOT/build/soak-failed.txt"
    for srv in serve echo; do
        for d in uring epoll; do
            secs=${VEGA_SOAK_SECONDS:-60}
            # vega-echo (one protocol, no files) gets half: CI must fit in 40 minutes
            [ "$srv" = echo ] && [ -z "${VEGA_SOAK_SECONDS:-}" ] && secs=30
            bench/soak/run.sh -s "$srv" -r "$d" -d "$secs" -B build 2>&1 | tee "$ROOT/build/soak.log"
            if [ "${PIPESTATUS[0]}" != 0 ]; then
                rc=1
                { echo "vega-$srv on $d:"; grep -E 'FAIL|did not start' "$ROOT/build/soak.log"; } \
                    >>"$ROOT/build/soak-failed.txt"
            fi
        done
    done
    return $rc
}

do_install() {
    bash tests/install/check.sh "$ROOT/build"
}

# fuzz_one NAME SECS: a real fuzzing run of one target from a copy of its corpus.
fuzz_one() {
    local name=$1 secs=$2 work
    work=$(mktemp -d)
    if [ -d "tests/fuzz/corpus/$name" ]; then
        cp -r "tests/fuzz/corpus/$name/." "$work/"
    fi
    if ! "build-fuzz/tests/fuzz_$name" -max_total_time="$secs" -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$ROOT/build-fuzz/$name-" "$work" \
        >"build-fuzz/$name.log" 2>&1; then
        echo "$name" >>"$ROOT/build-fuzz/failed.txt"
    fi
    rm -rf "$work"
}

# A short real fuzzing run per target (the corpora are also replayed by ctest in every build).
do_fuzz() {
    cmake -S "$ROOT" -B "$ROOT/build-fuzz" -DCMAKE_C_COMPILER=clang \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVEGA_FUZZ=ON -DVEGA_BUILD_BENCH=OFF -DVEGA_BUILD_CLI=OFF
    local secs=${VEGA_FUZZ_SECONDS:-$([ "${CI:-}" = true ] && echo 4 || echo 15)} src name rc=0 targets=()
    for src in tests/fuzz/*_fuzz.c; do
        targets+=("fuzz_$(basename "$src" _fuzz.c)")
    done
    rm -f "$ROOT/build-fuzz/failed.txt"
    if ! cmake --build "$ROOT/build-fuzz" -j"$JOBS" --target "${targets[@]}" \
        >"$ROOT/build-fuzz/build.log" 2>&1; then
        grep -E 'error|Error' "$ROOT/build-fuzz/build.log" | head -n 40
        echo "build (see build-fuzz/build.log)" >>"$ROOT/build-fuzz/failed.txt"
        return 1
    fi
    # one target per core at a time, each with its own log; the results are printed in order
    for src in tests/fuzz/*_fuzz.c; do
        name=$(basename "$src" _fuzz.c)
        while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
            wait -n || true
        done
        fuzz_one "$name" "$secs" &
    done
    wait
    for src in tests/fuzz/*_fuzz.c; do
        name=$(basename "$src" _fuzz.c)
        if grep -qx "$name" "$ROOT/build-fuzz/failed.txt" 2>/dev/null; then
            tail -n 40 "build-fuzz/$name.log"
            echo "fuzz $name: FAILED (crash input in build-fuzz/, log build-fuzz/$name.log)"
            rc=1
        else
            echo "fuzz $name: ${secs}s, $(grep -E '^stat::number_of_executed_units' \
                "build-fuzz/$name.log" | sed 's/.*: //') runs"
        fi
    done
    return $rc
}

# The output of each test that failed in this run, from CTest's logs, shortened: printed again
# just before the summary, where a reader of only the log's end finds it.
print_failures() {
    local dir log name
    for dir in build build-asan build-tsan; do
        log="$ROOT/$dir/Testing/Temporary/LastTestsFailed.log"
        [ -s "$log" ] && [ "$log" -nt "$RUN_MARK" ] || continue
        while IFS= read -r name; do
            name=${name#*:}
            echo "--- $dir: $name (its last lines)"
            awk -v t="$name" '
                $0 ~ "^[0-9]+/[0-9]+ Test: " && $3 == t { on = 1; next }
                on && /^<end of output>/ { exit }
                on && out { print }
                on && /^Output:/ { getline; out = 1 }
            ' "$ROOT/$dir/Testing/Temporary/LastTest.log" | grep -v '^$' >"$RUN_MARK.out"
            # a sanitizer's report from its first line (its end is only the shadow-byte legend)
            if grep -q -E 'ERROR: (Address|Leak|Thread)Sanitizer|WARNING: ThreadSanitizer|runtime error' \
                "$RUN_MARK.out"; then
                grep -E -A30 -m1 'ERROR: (Address|Leak|Thread)Sanitizer|WARNING: ThreadSanitizer|runtime error' \
                    "$RUN_MARK.out" | head -n 31
            else
                tail -n 25 "$RUN_MARK.out"
            fi
        done <"$log"
    done
    log="$ROOT/build/soak-failed.txt"
    if [ -s "$log" ] && [ "$log" -nt "$RUN_MARK" ]; then
        echo "--- soak"
        cat "$log"
    fi
    log="$ROOT/build-fuzz/failed.txt"
    if [ -s "$log" ] && [ "$log" -nt "$RUN_MARK" ]; then
        while IFS= read -r name; do
            echo "--- fuzz: $name"
            if [ -f "$ROOT/build-fuzz/$name.log" ]; then
                grep -E -A14 -m1 'ERROR|deadly signal|Timeout|out-of-memory|runtime error' \
                    "$ROOT/build-fuzz/$name.log" | head -n 25 || true
            fi
        done <"$log"
    fi
}

RUN_MARK=$(mktemp)
trap 'rm -f "$RUN_MARK" "$RUN_MARK.out"' EXIT
T0=$SECONDS
for s in "${STAGES[@]}"; do
    case $s in
    deps) stage deps ensure_deps ;;
    format) stage format do_format ;;
    build) stage build do_build ;;
    ctest)
        if failed build; then skip ctest "build failed"; else stage ctest do_ctest; fi ;;
    asan) stage asan do_asan ;;
    tsan) stage tsan do_tsan ;;
    bats)
        if ! compgen -G "tests/bats/*.bats" >/dev/null; then
            skip bats "no tests/bats/*.bats yet"
        elif failed build; then
            skip bats "build failed"
        else
            stage bats do_bats
        fi ;;
    soak)
        if failed build; then skip soak "build failed"; else stage soak do_soak; fi ;;
    install)
        if failed build; then skip install "build failed"; else stage install do_install; fi ;;
    fuzz) stage fuzz do_fuzz ;;
    esac
done

print_failures
log "summary"
for s in "${STAGES[@]}"; do
    printf '  %-8s %6ss  %s\n' "$s" "${DURATION[$s]}" "${RESULT[$s]}"
done
printf '  %-8s %6ss\n' total $((SECONDS - T0))
if [ ${#FAILED[@]} -gt 0 ]; then
    echo "test.sh: FAILED: ${FAILED[*]}"
    exit 1
fi
echo "test.sh: all suites passed"
