#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One large upload, vega-curl -T against curl -T, in one run: the same file PUT to the same
# sink over HTTP and HTTPS. The sink (bench/upload_sink.py) reads exactly Content-Length
# bytes into one reused buffer and answers 204; it runs on CPU 0, the client on CPU 1, so the
# client's CPU time (user + system, what this measures) is its own. Pairs are interleaved (the
# order flips every repetition). Reported per row: median wall and CPU time of each tool and
# the medians of the per-pair ratios, speed = curl wall / vega-curl wall (above 1: vega-curl
# is faster), cpu = vega-curl CPU / curl CPU (below 1: vega-curl spends less).
#
# usage: bench/run-upload.sh [-r REPS] [-s LIST] [-p LIST] [-n] [BUILD_DIR]
#   BUILD_DIR  CMake build directory (default build-bench-download; configured Release if new)
#   -r REPS    repetitions (default 5)
#   -s LIST    file sizes (default 1G,16M)
#   -p LIST    protocols (default http,https)
#   -n         do not build: run the binaries BUILD_DIR has
set -u -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
reps=5 sizes=1G,16M protos=http,https build_it=1
while getopts "r:s:p:nh" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    s) sizes=$OPTARG ;;
    p) protos=$OPTARG ;;
    n) build_it=0 ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
build=${1:-$root/build-bench-download}
case $build in /*) ;; *) build=$PWD/$build ;; esac
for t in curl openssl taskset python3; do
  command -v "$t" >/dev/null || { echo "run-upload.sh: $t is not installed" >&2; exit 1; }
done
if [ $build_it = 1 ]; then
  [ -f "$build/CMakeCache.txt" ] ||
    timeout 600 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
  timeout 1200 cmake --build "$build" -j "$(nproc)" --target vega-curl >/dev/null || exit 1
fi
vega_curl=${VEGA_CURL:-$build/cli/vega-curl}
[ -x "$vega_curl" ] || { echo "run-upload.sh: $vega_curl is missing" >&2; exit 1; }

bench_tmp
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/key.pem" \
  -out "$tmp/cert.pem" -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 \
  >/dev/null 2>&1 || exit 1
IFS=, read -r -a szs <<<"$sizes"
IFS=, read -r -a prs <<<"$protos"
for s in "${szs[@]}"; do head -c "$s" /dev/urandom >"$tmp/$s" || exit 2; done

# The sink: one process per protocol, on CPU 0, bounded in time.
declare -A port
for p in "${prs[@]}"; do
  timeout -k 2 3000 taskset -c 0 /usr/bin/python3 "$here/upload_sink.py" "$p" "$tmp/cert.pem" \
    "$tmp/key.pem" >"$tmp/sink-$p.port" 2>"$tmp/sink-$p.err" &
  pids+=($!)
  for ((i = 0; i < 200; i++)); do [ -s "$tmp/sink-$p.port" ] && break; sleep 0.05; done
  port[$p]=$(cat "$tmp/sink-$p.port")
  [ -n "${port[$p]}" ] || { echo "run-upload.sh: the $p sink did not start" >&2; exit 1; }
done

# one TOOL SIZE PROTO: prints "wall cpu", or fails.
one() {
  local bin=curl
  [ "$1" = vega-curl ] && bin=$vega_curl
  local url="$3://127.0.0.1:${port[$3]}/up"
  timeout -k 2 300 taskset -c 1 python3 "$here/timed.py" "$tmp/t" "$bin" -sS -k -o "$tmp/resp" \
    -T "$tmp/$2" "$url" || return 1
  grep -q "^got $(stat -c %s "$tmp/$2")\$" "$tmp/resp" || return 1
  cat "$tmp/t"
}

echo "# bench/run-upload.sh $*"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(uname -r), $(curl --version | head -1 | cut -d' ' -f1-2)"
echo "| size | proto | curl wall s | vega wall s | speed | curl CPU s | vega CPU s | cpu | n |"
echo "|---|---|---|---|---|---|---|---|---|"
for s in "${szs[@]}"; do
  for p in "${prs[@]}"; do
    one curl "$s" "$p" >/dev/null && one vega-curl "$s" "$p" >/dev/null || {
      echo "run-upload.sh: warm-up failed ($s $p)" >&2; exit 1; }
    : >"$tmp/rows"
    for ((r = 0; r < reps; r++)); do
      if ((r % 2)); then order=(vega-curl curl); else order=(curl vega-curl); fi
      declare -A res=()
      for tool in "${order[@]}"; do
        res[$tool]=$(one "$tool" "$s" "$p") || { echo "run-upload.sh: $tool failed" >&2; exit 1; }
      done
      echo "${res[curl]} ${res[vega-curl]}" >>"$tmp/rows"
    done
    python3 - "$s" "$p" "$tmp/rows" <<'PY'
import statistics as st, sys
s, p, f = sys.argv[1:]
rows = [list(map(float, l.split())) for l in open(f)]
m = lambda i: st.median(r[i] for r in rows)
speed = st.median(r[0] / r[2] for r in rows)
cpu = st.median(r[3] / r[1] for r in rows)
print("| %s | %s | %.3f | %.3f | %.2fx | %.3f | %.3f | %.2fx | %d |" %
      (s, p, m(0), m(2), speed, m(1), m(3), cpu, len(rows)))
PY
  done
done
