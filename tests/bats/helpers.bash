# SPDX-License-Identifier: MIT
# Shared helpers for the tools' bats tests: find the binaries, start servers on ephemeral ports,
# clean up after each test.
#
# The binaries come from $VEGA_BUILD_DIR (default: build/ at the top of the repository; a
# relative path is taken from the repository root).

VEGA_REPO_ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"

vega_build_dir() {
    local d="${VEGA_BUILD_DIR:-build}"
    case "$d" in
    /*) printf '%s\n' "$d" ;;
    *) printf '%s\n' "$VEGA_REPO_ROOT/$d" ;;
    esac
}

# vega_bin NAME: the path of a tool, wherever CMake put it (cli/NAME or cli/NAME/NAME).
vega_bin() {
    local d
    d="$(vega_build_dir)"
    for p in "$d/cli/$1" "$d/cli/$1/$1" "$d/bin/$1" "$d/$1"; do
        if [ -f "$p" ] && [ -x "$p" ]; then
            printf '%s\n' "$p"
            return 0
        fi
    done
    printf 'missing binary %s under %s (build first, or set VEGA_BUILD_DIR)\n' "$1" "$d" >&2
    return 1
}

# Background processes started by a test, killed in teardown.
VEGA_BG_PIDS=()

# start_bg LOG CMD...: runs CMD in the background with stderr to LOG (fd 3 closed so that bats
# does not wait for it); sets BG_PID.
start_bg() {
    local log="$1"
    shift
    # The log is emptied here, before the job starts: its own redirection runs in the child,
    # after fork, so a wait_for_line right after this could still read a line an earlier
    # process wrote to the same file (a reused log name gave the old port).
    : >"$log"
    # <&0: an explicit stdin, or bash would give a background job /dev/null.
    "$@" 2>>"$log" 3>&- <&0 &
    BG_PID=$!
    VEGA_BG_PIDS+=("$BG_PID")
}

# wait_for_line FILE REGEX [SECONDS]: waits until FILE has a line matching REGEX.
wait_for_line() {
    local file="$1" re="$2" secs="${3:-10}" i
    for ((i = 0; i < secs * 20; i++)); do
        if [ -f "$file" ] && grep -qE "$re" "$file"; then
            return 0
        fi
        sleep 0.05
    done
    printf 'timed out waiting for /%s/ in %s; it has:\n' "$re" "$file" >&2
    cat "$file" >&2 || true
    return 1
}

# wait_pid_exit PID SECONDS: waits for PID to exit (it must be our child); sets BG_STATUS.
wait_pid_exit() {
    local pid="$1" secs="${2:-10}" i
    for ((i = 0; i < secs * 20; i++)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            BG_STATUS=0
            wait "$pid" || BG_STATUS=$?
            return 0
        fi
        sleep 0.05
    done
    printf 'process %s still running after %ss\n' "$pid" "$secs" >&2
    return 1
}

# stop_bg_all: kills whatever a test left running.
stop_bg_all() {
    local pid
    for pid in "${VEGA_BG_PIDS[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    VEGA_BG_PIDS=()
}

# now_ms: monotonic-enough wall clock in milliseconds.
now_ms() {
    echo $(($(date +%s%N) / 1000000))
}
