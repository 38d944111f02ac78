#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTP/3 requests per second of vega-serve with 1 and with 2 shards (--shards N --workers 1,
# one UDP socket per shard steered by connection ID), vega-load --h3 on the same machine,
# interleaved, REPS rounds; prints each run and the 2-shard / 1-shard ratio of the medians.
# Usage: bench/run-h3-shards.sh [BUILD_DIR] [SECONDS] [REPS] [CONNECTIONS]
set -euo pipefail
B="${1:-build}"
SECS="${2:-3}"
REPS="${3:-3}"
CONNS="${4:-32}"
SERVE="$B/cli/vega-serve"
LOAD="$B/cli/vega-load"
T="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$T"' EXIT
mkdir -p "$T/root"
printf 'hello shards\n' >"$T/root/index.html"

run_one() { # SHARDS -> prints requests/s
    local n="$1" log="$T/serve.log" sup port rps
    "$SERVE" --shards "$n" --workers 1 --tls -p 0 "$T/root" >"$log" 2>&1 &
    sup=$!
    for _ in $(seq 200); do
        [ "$(grep -c ' ready: pid' "$log")" -ge "$n" ] && break
        sleep 0.05
    done
    port="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$log" | head -n1)"
    rps="$("$LOAD" --h3 -k -c "$CONNS" -d "${SECS}s" --json \
        "https://127.0.0.1:$port/index.html" | sed -nE 's/.*"rps":([0-9.]+).*/\1/p')"
    kill -TERM "$sup"
    wait "$sup" || true
    echo "$rps"
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
one=() two=()
for r in $(seq "$REPS"); do
    a="$(run_one 1)"
    b="$(run_one 2)"
    one+=("$a")
    two+=("$b")
    echo "round $r: 1 shard $a req/s, 2 shards $b req/s"
done
med() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
m1="$(med "${one[@]}")"
m2="$(med "${two[@]}")"
echo "median: 1 shard $m1, 2 shards $m2, ratio $(awk -v a="$m1" -v b="$m2" 'BEGIN {printf "%.2f", b / a}')"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
