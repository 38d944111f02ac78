#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One large download, vega-curl against curl, in one run: the same file from the same server
# (vega-serve, and nginx as a second server), over HTTP and HTTPS, written to a regular file,
# to /dev/null and to a pipe (`| wc -c`). Each pair of runs is interleaved (the order flips
# every repetition) so that drift hits both tools alike. The server runs on CPU 0, the client
# on CPU 1 (-U: unpinned). Reported per row: the median wall time, CPU time (user + system)
# and peak RSS of each tool, and the medians of the per-repetition ratios:
# speed = curl wall / vega-curl wall (above 1: vega-curl is faster) and
# cpu = vega-curl CPU / curl CPU (below 1: vega-curl spends less).
#
# usage: bench/run-download.sh [-r REPS] [-R REPS] [-s LIST] [-S LIST] [-p LIST] [-t LIST]
#                              [-o DIR] [-U] [-n] [BUILD_DIR]
#   BUILD_DIR  CMake build directory (default build-bench-download; configured Release if new)
#   -r REPS    repetitions for files of 64 MiB and more (default 5)
#   -R REPS    repetitions for smaller files (default 11)
#   -s LIST    file sizes (default 1G,16M; any size head -c takes: 256M, 4M ...)
#   -S LIST    servers (default vega,nginx)
#   -p LIST    protocols (default http,https)
#   -t LIST    targets (default file,null,pipe)
#   -o DIR     where the downloaded files go (default the script's temporary folder)
#   -U         do not pin the server and the client to CPUs
#   -n         do not build: run the binaries BUILD_DIR has
# VEGA_CURL=PATH runs that vega-curl instead of BUILD_DIR's (to compare two builds).
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
cmdline="bench/run-download.sh $*"
reps=5 sreps=11 sizes=1G,16M servers=vega,nginx protos=http,https targets=file,null,pipe
outdir='' pin=1 build_it=1
while getopts "r:R:s:S:p:t:o:Unh" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    R) sreps=$OPTARG ;;
    s) sizes=$OPTARG ;;
    S) servers=$OPTARG ;;
    p) protos=$OPTARG ;;
    t) targets=$OPTARG ;;
    o) outdir=$OPTARG ;;
    U) pin=0 ;;
    n) build_it=0 ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
[[ $reps =~ ^[1-9][0-9]*$ && $sreps =~ ^[1-9][0-9]*$ ]] ||
  { echo "run-download.sh: -r and -R want positive integers" >&2; exit 2; }
build=${1:-$root/build-bench-download}
case $build in /*) ;; *) build=$PWD/$build ;; esac

for t in curl nginx openssl taskset ss python3 /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "run-download.sh: $t is not installed" >&2; exit 1; }
done

# ---- build -----------------------------------------------------------------------------------
if [ $build_it = 1 ]; then
  blog=$(mktemp)
  if [ ! -f "$build/CMakeCache.txt" ]; then
    timeout 600 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$blog" 2>&1 ||
      { tail -30 "$blog" >&2; echo "run-download.sh: cmake configure failed" >&2; exit 1; }
  fi
  timeout 1200 cmake --build "$build" -j "$(nproc)" --target vega-serve vega-curl >"$blog" 2>&1 ||
    { tail -30 "$blog" >&2; echo "run-download.sh: build failed" >&2; exit 1; }
  rm -f "$blog"
fi
vega_serve=$build/cli/vega-serve
vega_curl=${VEGA_CURL:-$build/cli/vega-curl}
for b in "$vega_serve" "$vega_curl"; do
  [ -x "$b" ] || { echo "run-download.sh: $b is missing (build it, or drop -n)" >&2; exit 1; }
done

# ---- files and servers -----------------------------------------------------------------------
bench_tmp
raw=$tmp/raw
: >"$raw"
docroot=$tmp/www
mkdir -p "$docroot"
[ -n "$outdir" ] || outdir=$tmp/out
mkdir -p "$outdir"
IFS=, read -r -a szs <<<"$sizes"
declare -A bytes
for s in "${szs[@]}"; do
  head -c "$s" /dev/urandom >"$docroot/$s" || { echo "run-download.sh: bad size $s" >&2; exit 2; }
  bytes[$s]=$(stat -c %s "$docroot/$s")
done
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/key.pem" \
  -out "$tmp/cert.pem" -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 \
  >/dev/null 2>&1 || { echo "run-download.sh: openssl could not make a certificate" >&2; exit 1; }

srv_cpu=() cli_cpu=()
if [ $pin = 1 ]; then srv_cpu=(taskset -c 0) cli_cpu=(taskset -c 1); fi
port=${PORT_BASE:-33000}

# start_server NAME: vega-serve or nginx on two fresh ports (HTTP, HTTPS); sets hport, sport,
# tpid and tpid2 (the timeout wrappers; tpid2 empty for nginx, which serves both).
start_server() {
  local name=$1 i
  hport=$((port + 1)) sport=$((port + 2))
  port=$((port + 2))
  local serr=$tmp/server-$name.err
  case $name in
    vega)
      # A vega-serve serves HTTP or HTTPS: a second one takes the HTTPS port.
      timeout -k 2 3000 "${srv_cpu[@]}" "$vega_serve" -q --workers 1 -p "$hport" "$docroot" \
        >/dev/null 2>"$serr" &
      tpid=$!
      timeout -k 2 3000 "${srv_cpu[@]}" "$vega_serve" -q --workers 1 --cert "$tmp/cert.pem" \
        --key "$tmp/key.pem" -p "$sport" "$docroot" >/dev/null 2>>"$serr" &
      tpid2=$!
      ;;
    nginx)
      mkdir -p "$tmp/nginx"
      cat >"$tmp/nginx.conf" <<EOF
worker_processes 1;
master_process off;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $tmp/nginx; proxy_temp_path $tmp/nginx;
  fastcgi_temp_path $tmp/nginx; uwsgi_temp_path $tmp/nginx; scgi_temp_path $tmp/nginx;
  sendfile on; tcp_nopush on;
  default_type application/octet-stream;
  server { listen 127.0.0.1:$hport; root $docroot; }
  server {
    listen 127.0.0.1:$sport ssl;
    ssl_certificate $tmp/cert.pem; ssl_certificate_key $tmp/key.pem;
    root $docroot;
  }
}
EOF
      timeout -k 2 3000 "${srv_cpu[@]}" nginx -e stderr -c "$tmp/nginx.conf" >/dev/null 2>"$serr" &
      tpid=$!
      tpid2=
      ;;
    *) return 1 ;;
  esac
  pids+=("$tpid")
  [ -n "$tpid2" ] && pids+=("$tpid2")
  for ((i = 0; i < 400; i++)); do
    if ss -Hltn "sport = :$hport" 2>/dev/null | grep -q . &&
      ss -Hltn "sport = :$sport" 2>/dev/null | grep -q .; then
      return 0
    fi
    kill -0 "$tpid" 2>/dev/null || break
    sleep 0.05
  done
  echo "run-download.sh: $name did not start: $(tail -5 "$serr")" >&2
  return 1
}

stop_servers() {
  local p
  for p in "$tpid" "${tpid2:-}"; do
    [ -n "$p" ] || continue
    kill "$p" 2>/dev/null
  done
  for p in "$tpid" "${tpid2:-}"; do
    [ -n "$p" ] || continue
    wait "$p" 2>/dev/null
  done
}

# Times come from bench/timed.py (wait4's rusage, to the microsecond); the peak RSS from
# /usr/bin/time between it and the tool (a child forked from python would count python's own
# pages as its peak).

# one TOOL SIZE SERVER PROTO TARGET REP: appends
# "size server proto target tool rep wall cpu rss_kb" (or "... FAIL why") to raw.
one() {
  local tool=$1 size=$2 srv=$3 proto=$4 target=$5 rep=$6 bin url pt tf got rc
  case $tool in curl) bin=curl ;; vega-curl) bin=$vega_curl ;; esac
  if [ "$proto" = https ]; then pt=$sport; else pt=$hport; fi
  url="$proto://127.0.0.1:$pt/$size"
  tf=$tmp/time.$tool
  local limit=$((30 + bytes[$size] / 20000000))
  local cmd=(timeout -k 2 "$limit" python3 "$here/timed.py" "$tf" /usr/bin/time -f %M -o "$tf.rss"
             "${cli_cpu[@]}" "$bin" -s -k)
  case $target in
    file)
      rm -f "$outdir/dl"
      "${cmd[@]}" -o "$outdir/dl" "$url"
      rc=$?
      got=$(stat -c %s "$outdir/dl" 2>/dev/null)
      rm -f "$outdir/dl"
      ;;
    null)
      got=$("${cmd[@]}" -o /dev/null -w '%{size_download}' "$url")
      rc=$?
      ;;
    pipe)
      got=$("${cmd[@]}" "$url" | wc -c)
      rc=$?
      ;;
  esac
  if [ "$rc" != 0 ] || [ "${got:-x}" != "${bytes[$size]}" ]; then
    echo "$size $srv $proto $target $tool $rep FAIL exit=$rc bytes=${got:-none}" >>"$raw"
    return
  fi
  local rss
  rss=$(awk '/^[0-9]+$/ { print }' "$tf.rss")
  awk -v pre="$size $srv $proto $target $tool $rep" -v rss="${rss:-0}" \
    'NF == 2 { printf "%s %s %s %s\n", pre, $1, $2, rss }' "$tf" >>"$raw"
}

IFS=, read -r -a srvs <<<"$servers"
IFS=, read -r -a prs <<<"$protos"
IFS=, read -r -a tgs <<<"$targets"
start=$(date +%s)
for srv in "${srvs[@]}"; do
  start_server "$srv" || exit 1
  for size in "${szs[@]}"; do
    n=$reps
    [ "${bytes[$size]}" -lt $((64 << 20)) ] && n=$sreps
    for proto in "${prs[@]}"; do
      for target in "${tgs[@]}"; do
        # one untimed warm-up of each tool (page cache, TLS session setup paths)
        one curl "$size" "$srv" "$proto" "$target" 0
        one vega-curl "$size" "$srv" "$proto" "$target" 0
        for ((rep = 1; rep <= n; rep++)); do
          if ((rep % 2)); then
            one curl "$size" "$srv" "$proto" "$target" "$rep"
            one vega-curl "$size" "$srv" "$proto" "$target" "$rep"
          else
            one vega-curl "$size" "$srv" "$proto" "$target" "$rep"
            one curl "$size" "$srv" "$proto" "$target" "$rep"
          fi
        done
      done
    done
  done
  stop_servers
done
elapsed=$(($(date +%s) - start))

# ---- the table -------------------------------------------------------------------------------
echo "# $cmdline"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(uname -r), $(curl --version | head -1 | cut -d' ' -f1-2), $elapsed s"
echo "# pinned: $([ $pin = 1 ] && echo 'server CPU 0, client CPU 1' || echo no)"
command -p python3 - "$raw" <<'EOF'
import statistics as st, sys
rows, fails = {}, []
for line in open(sys.argv[1]):
    f = line.split()
    if f[6] == "FAIL":
        fails.append(line.strip()); continue
    if f[5] == "0":
        continue  # warm-up
    key = tuple(f[:4]); tool = f[4]; rep = f[5]
    rows.setdefault(key, {}).setdefault(rep, {})[tool] = (float(f[6]), float(f[7]), int(f[8]))
def med(v): return st.median(v) if v else float("nan")
print("| size | server | proto | to | curl wall s | vega wall s | speed | curl CPU s | vega CPU s | cpu | curl RSS MiB | vega RSS MiB | n |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for key, reps in rows.items():
    pairs = [r for r in reps.values() if "curl" in r and "vega-curl" in r]
    if not pairs: continue
    cw = [p["curl"][0] for p in pairs]; vw = [p["vega-curl"][0] for p in pairs]
    cc = [p["curl"][1] for p in pairs]; vc = [p["vega-curl"][1] for p in pairs]
    speed = [p["curl"][0] / p["vega-curl"][0] for p in pairs if p["vega-curl"][0] > 0]
    cpu = [p["vega-curl"][1] / p["curl"][1] for p in pairs if p["curl"][1] > 0]
    crss = max(p["curl"][2] for p in pairs) / 1024; vrss = max(p["vega-curl"][2] for p in pairs) / 1024
    print("| %s | %s | %s | %s | %.3f | %.3f | %.2fx | %.3f | %.3f | %.2fx | %.1f | %.1f | %d |" % (
        *key, med(cw), med(vw), med(speed), med(cc), med(vc), med(cpu), crss, vrss, len(pairs)))
for f in fails:
    print("FAILED:", f)
EOF
echo
echo "raw (size server proto to tool rep wall_s cpu_s rss_kb):"
cat "$raw"
grep -q FAIL "$raw" && exit 1
exit 0
