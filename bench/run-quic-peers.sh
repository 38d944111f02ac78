#!/usr/bin/env bash
# QUIC bulk transfer in memory, vega against ngtcp2 (see bench/README.md, "QUIC"): the same
# client+server-in-one-thread transfer of one SIZE MiB stream over the same simulated 1 ms link
# (bench/quic/bench_link.h), run by vega-quic-bulk and by ngtcp2-bulk (ngtcp2 + GnuTLS) for
# each cipher suite, both sinks checking every byte; pinned to CPU 0, repetitions interleaved;
# prints every run, then the medians and the vega/ngtcp2 ratio.
set -u

usage() {
    cat <<EOF2
Usage: bench/run-quic-peers.sh [-r REPS] [-s MIB] [BUILD_DIR]
  -r  repetitions (default 3)   -s  stream size in MiB (default 1024)
  BUILD_DIR default build-bench-quic (Release); ngtcp2-bulk needs libngtcp2-dev,
  libngtcp2-crypto-gnutls-dev and libgnutls28-dev (pkg-config) when it is configured
EOF2
}
REPS=3 MIB=1024
while getopts "r:s:h" o; do
    case $o in
        r) REPS=$OPTARG ;; s) MIB=$OPTARG ;; *) usage; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
case $REPS$MIB in *[!0-9]*) usage; exit 2 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build-bench-quic}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
command -v taskset >/dev/null || { echo "run-quic-peers.sh: taskset not found" >&2; exit 1; }

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
cmake --build "$BUILD" --target vega-quic-bulk -j2 >/dev/null || exit 1
if ! cmake --build "$BUILD" --target ngtcp2-bulk -j2 >/dev/null 2>&1; then
    echo "run-quic-peers.sh: ngtcp2-bulk not built: cmake did not find libngtcp2," \
         "libngtcp2_crypto_gnutls and gnutls with pkg-config" >&2
    exit 1
fi
VEGA=$BUILD/bench/quic/vega-quic-bulk
NGTCP2=$BUILD/bench/quic-ngtcp2/ngtcp2-bulk
SUITES="aes128 chacha"
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT

echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) CPUs; $MIB MiB per run, $REPS reps," \
     "ngtcp2 $(pkg-config --modversion libngtcp2 2>/dev/null || echo '?')," \
     "gnutls $(pkg-config --modversion gnutls 2>/dev/null || echo '?')"
for r in $(seq 1 "$REPS"); do
    for suite in $SUITES; do
        for stack in vega ngtcp2; do
            if [ "$stack" = vega ]; then bin=$VEGA; else bin=$NGTCP2; fi
            line=$(timeout 600 taskset -c 0 "$bin" "$MIB" "$suite")
            rc=$?
            [ -n "$line" ] || line="suite=$suite ok=0"
            [ "$rc" -eq 0 ] || line="$line exit=$rc"
            echo "rep=$r stack=$stack $line" | tee -a "$OUT"
        done
    done
done

# A run counts only if it exited 0 and printed ok=1; the median is over those.
echo
awk -v suites="$SUITES" '
    function field(k,   i) {
        for (i = 1; i <= NF; i++)
            if (index($i, k "=") == 1)
                return substr($i, length(k) + 2)
        return ""
    }
    function median(key, n,   i, j, t, a) {
        for (i = 1; i <= n; i++)
            a[i] = v[key, i]
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
                t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
            }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    {
        key = field("stack") SUBSEP field("suite")
        runs[key]++
        if (field("ok") == "1" && field("exit") == "") {
            v[key, ++n[key]] = field("MB/s") + 0
        }
    }
    END {
        printf "%-8s %14s %6s %14s %6s %12s\n", "suite", "vega MB/s", "ok", "ngtcp2 MB/s",
               "ok", "vega/ngtcp2"
        ns = split(suites, s, " ")
        for (k = 1; k <= ns; k++) {
            kv = "vega" SUBSEP s[k]; kn = "ngtcp2" SUBSEP s[k]
            mv = n[kv] ? median(kv, n[kv]) : 0
            mn = n[kn] ? median(kn, n[kn]) : 0
            printf "%-8s %14s %3d/%-2d %14s %3d/%-2d %12s\n", s[k],
                   n[kv] ? sprintf("%.1f", mv) : "-", n[kv], runs[kv],
                   n[kn] ? sprintf("%.1f", mn) : "-", n[kn], runs[kn],
                   (mv && mn) ? sprintf("%.2f", mv / mn) : "-"
            if (n[kv] < runs[kv] || n[kn] < runs[kn])
                bad = 1
        }
        print "# MB/s: stream payload per CPU second, both endpoints on one core (median)"
        exit bad
    }' "$OUT"
