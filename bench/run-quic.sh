#!/usr/bin/env bash
# QUIC bulk transfer in memory (see bench/README.md, "QUIC"): a client and a server core in one
# thread, joined by libvega-test's in-memory network, move one stream of SIZE MiB; printed
# beside the raw AEAD seal+open rate of the same suite on 1200-byte packets. No sockets, no
# kernel: the ceiling the UDP endpoint can approach. Pinned to CPU 0; repetitions interleaved.
set -u

usage() {
    cat <<EOF2
Usage: bench/run-quic.sh [-r REPS] [-s MIB] [-l LOSS_PCT] [BUILD_DIR]
  -r  repetitions (default 3)   -s  stream size in MiB (default 1024)
  -l  loss in percent (default 0)   BUILD_DIR default build-bench-quic (Release)
EOF2
}
REPS=3 MIB=1024 LOSS=0
while getopts "r:s:l:h" o; do
    case $o in
        r) REPS=$OPTARG ;; s) MIB=$OPTARG ;; l) LOSS=$OPTARG ;; *) usage; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build-bench-quic}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
command -v taskset >/dev/null || { echo "run-quic.sh: taskset not found" >&2; exit 1; }

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null && \
    cmake --build "$BUILD" --target vega-quic-bulk -j2 >/dev/null || exit 1
BIN=$BUILD/bench/quic/vega-quic-bulk

echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) CPUs; $MIB MiB per run, loss $LOSS%"
for r in $(seq 1 "$REPS"); do
    for suite in aes128 chacha aes256; do
        printf 'rep=%s ' "$r"
        timeout 600 taskset -c 0 "$BIN" "$MIB" "$suite" "$LOSS" || echo "run failed: $suite"
    done
done
