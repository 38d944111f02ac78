# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What the interop areas' lib.sh files share: the build folder, the temporary folder, the
# background processes killed at exit, the TAP skip, the lookup of a built vega tool.
#
# A lib.sh sets IOP_AREA (http, tls, quic: it names the temporary folder) and sources this file
# without arguments, so that $1 is still the script's. It sets IOP_ROOT (the repository),
# IOP_BUILD ($1 of the script, else $VEGA_BUILD_DIR, else build/; relative paths are taken from
# the repository root), WORK (a temporary folder, removed at exit), IOP_PIDS (killed by
# iop_cleanup and at exit), IOP_FAILED and IOP_N (0, for the area's check and finish).

set -uo pipefail

IOP_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IOP_BUILD="${1:-${VEGA_BUILD_DIR:-build}}"
case "$IOP_BUILD" in
/*) ;;
*) IOP_BUILD="$IOP_ROOT/$IOP_BUILD" ;;
esac

WORK="$(mktemp -d "${TMPDIR:-/tmp}/vega-$IOP_AREA-interop.XXXXXX")"
IOP_PIDS=()
# shellcheck disable=SC2034 # the area's check and finish use them
IOP_FAILED=0
# shellcheck disable=SC2034
IOP_N=0

# vega_tool NAME: the path of a built tool, or exit 2 (inside $(...) that exits the subshell
# only: add `|| exit 2` where the script must stop).
vega_tool() {
    local p
    for p in "$IOP_BUILD/cli/$1" "$IOP_BUILD/cli/$1/$1" "$IOP_BUILD/bin/$1"; do
        if [ -f "$p" ] && [ -x "$p" ]; then
            printf '%s\n' "$p"
            return 0
        fi
    done
    echo "interop: no $1 under $IOP_BUILD (build first, or pass the build folder)" >&2
    exit 2
}

# iop_cleanup: kills and reaps the processes in IOP_PIDS.
iop_cleanup() {
    local pid
    for pid in "${IOP_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    IOP_PIDS=()
}

iop_exit() {
    iop_cleanup
    rm -rf "$WORK"
}
trap iop_exit EXIT

# skip_all WHY: nothing can run here (exit 77, as the unit tests skip).
skip_all() {
    echo "1..0 # SKIP $*"
    exit 77
}
