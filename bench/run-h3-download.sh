#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTP/3 bulk download benchmark, in one run (issue 13, "Performance"): one SIZE MiB file over
# loopback, the server pinned to CPU 0 (one worker/process) and the client to CPU 1:
#   vega-serve (HTTP/3)  -> vega-curl --http3-only
#   gtlsserver (ngtcp2)  -> vega-curl --http3-only
#   Caddy 2.6 (quic-go)  -> vega-curl --http3-only
#   vega-serve (HTTP/3)  -> gtlsclient (ngtcp2's client)
#   vega-serve (HTTPS/TCP) -> vega-curl   (the TCP+TLS baseline the issue compares against)
# Runs are interleaved (the order rotates each repetition). Reported per run: wall time,
# throughput, server CPU (utime+stime from /proc/PID/stat around the download) per GiB and the
# client's CPU per GiB; medians, and the goals: server CPU per GiB at most half of the best
# peer's, and HTTP/3 throughput at least 70% of vega's own HTTPS over TCP.
#
# usage: bench/run-h3-download.sh [-r REPS] [-s MIB] [BUILD_DIR]   (default 5 x 256 MiB,
#        BUILD_DIR build-bench-h3, configured Release if new)
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
cmdline="bench/run-h3-download.sh $*"
reps=5 mib=256
while getopts "r:s:h" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    s) mib=$OPTARG ;;
    *) echo "usage: $0 [-r REPS] [-s MIB] [BUILD_DIR]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
for v in "$reps" "$mib"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "run-h3-download.sh: -r and -s want positive integers" >&2; exit 2; }
done
build=${1:-$root/build-bench-h3}
case $build in /*) ;; *) build=$PWD/$build ;; esac
for t in taskset ss openssl caddy gtlsserver gtlsclient; do
  command -v "$t" >/dev/null || { echo "run-h3-download.sh: $t is not installed" >&2; exit 1; }
done

blog=$(mktemp)
if [ ! -f "$build/CMakeCache.txt" ]; then
  timeout 600 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DVEGA_BUILD_BENCH=OFF >"$blog" 2>&1 ||
    { tail -30 "$blog" >&2; echo "run-h3-download.sh: cmake configure failed" >&2; exit 1; }
fi
timeout 1800 cmake --build "$build" -j "$(nproc)" --target vega-serve vega-curl >"$blog" 2>&1 ||
  { tail -30 "$blog" >&2; echo "run-h3-download.sh: build failed" >&2; exit 1; }
rm -f "$blog"
vega_serve=$build/cli/vega-serve
vega_curl=$build/cli/vega-curl

bench_tmp
raw=$tmp/raw
: >"$raw"
clk_tck=$(getconf CLK_TCK)
py=$(command -pv python3) || { echo "run-h3-download.sh: python3 is not installed" >&2; exit 1; }
docroot=$tmp/www
mkdir -p "$docroot" "$tmp/dl"
head -c $((mib * 1048576)) /dev/urandom >"$docroot/big"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1 ||
  { echo "run-h3-download.sh: openssl could not make a certificate" >&2; exit 1; }

free_udp_port() {
  "$py" -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

caddy_conf() { # PORT
  mkdir -p "$tmp/caddy-$1"
  cat >"$tmp/caddy-$1/Caddyfile" <<EOF
{
  admin off
  auto_https off
  storage file_system $tmp/caddy-$1/data
  servers {
    protocols h1 h2 h3
  }
}
https://127.0.0.1:$1 {
  bind 127.0.0.1
  tls $tmp/cert.pem $tmp/key.pem
  root * $docroot
  file_server
}
EOF
}

server_cmd() { # NAME PORT
  case $1 in
    vega | vegatcp) echo "$vega_serve -q --workers 1 --no-cache --cert $tmp/cert.pem --key $tmp/key.pem -b 127.0.0.1 -p $2 $docroot" ;;
    caddy) echo "env GOMAXPROCS=1 HOME=$tmp/caddy-$2 caddy run --config $tmp/caddy-$2/Caddyfile --adapter caddyfile" ;;
    ngtcp2) echo "gtlsserver --quiet --no-quic-dump --no-http-dump -d $docroot 127.0.0.1 $2 $tmp/key.pem $tmp/cert.pem" ;;
  esac
}

# start_server NAME: on CPU 0; sets spid, sport, serr.
start_server() {
  local name=$1 cmd i proto=-lun
  sport=$(free_udp_port) serr=$tmp/server-$name-$sport.err
  [ "$name" = caddy ] && caddy_conf "$sport"
  [ "$name" = vegatcp ] && proto=-ltn
  cmd=$(server_cmd "$name" "$sport")
  # shellcheck disable=SC2086
  timeout -k 2 3000 taskset -c 0 $cmd >/dev/null 2>"$serr" &
  tpid=$!
  spid=
  for ((i = 0; i < 400; i++)); do
    [ -z "$spid" ] && spid=$(awk '{ print $1 }' "/proc/$tpid/task/$tpid/children" 2>/dev/null)
    if [ -n "$spid" ] && ss -H "$proto" "sport = :$sport" 2>/dev/null | grep -q .; then
      [ "$name" = caddy ] && sleep 0.3
      return 0
    fi
    kill -0 "$tpid" 2>/dev/null || break
    sleep 0.05
  done
  return 1
}

stop_server() {
  kill "$tpid" 2>/dev/null
  wait "$tpid" 2>/dev/null
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }

# client_cmd CLIENT PROTO PORT: the download command (its output in $tmp/dl/big).
client_cmd() {
  local url="https://127.0.0.1:$3/big"
  case $1 in
    vegacurl) if [ "$2" = h3 ]; then echo "$vega_curl --http3-only -k -sS -o $tmp/dl/big $url"
              else echo "$vega_curl -k -sS -o $tmp/dl/big $url"; fi ;;
    gtlsclient) echo "gtlsclient --exit-on-all-streams-close -q --download $tmp/dl 127.0.0.1 $3 $url" ;;
  esac
}

# one SERVER CLIENT PROTO REP: appends "label rep wall_s server_cpu_s client_cpu_s".
one() {
  local srvname=$1 cli=$2 proto=$3 rep=$4 label="$1->$2" c0 c1 cmd
  [ "$proto" = tcp ] && label="vega(tcp)->vegacurl"
  if ! start_server "$srvname"; then
    echo "$label $rep FAIL start" >>"$raw"; stop_server; return
  fi
  rm -f "$tmp/dl/big"
  cmd=$(client_cmd "$cli" "$proto" "$sport")
  c0=$(cpu_ticks "$spid")
  # shellcheck disable=SC2086
  if ! timeout -k 2 300 taskset -c 1 "$py" "$here/timed.py" "$tmp/cli.time" $cmd >/dev/null 2>"$tmp/cli.err"; then
    c1=$(cpu_ticks "$spid"); stop_server
    echo "$label $rep FAIL client: $(tail -1 "$tmp/cli.err")" >>"$raw"; return
  fi
  c1=$(cpu_ticks "$spid")
  stop_server
  if ! cmp -s "$tmp/dl/big" "$docroot/big"; then
    echo "$label $rep FAIL content" >>"$raw"; return
  fi
  read -r wall ccpu <"$tmp/cli.time"
  awk -v l="$label" -v r="$rep" -v w="$wall" -v c0="$c0" -v c1="$c1" -v hz="$clk_tck" -v cc="$ccpu" \
    'BEGIN { printf "%s %s %.4f %.3f %.3f\n", l, r, w, (c1 - c0) / hz, cc }' >>"$raw"
}

runs=("vega vegacurl h3" "ngtcp2 vegacurl h3" "caddy vegacurl h3" "vega gtlsclient h3" "vegatcp vegacurl tcp")
start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
n=${#runs[@]}
for ((rep = 1; rep <= reps; rep++)); do
  for ((k = 0; k < n; k++)); do
    # shellcheck disable=SC2086
    one ${runs[$(((k + rep - 1) % n))]} "$rep"
  done
done
elapsed=$(($(date +%s) - start))

gib=$(awk -v m="$mib" 'BEGIN { print m / 1024 }')
echo "## HTTP/3 download ($mib MiB): $(date -u +%Y-%m-%d), $(nproc) CPUs, ${reps} repetitions"
echo
echo "Command: \`$cmdline\` ($elapsed s). Server on CPU 0 (one worker/process), client on CPU 1."
echo "Load average before and after: $load0; $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| server -> client | median wall s | median MB/s | median server CPU s/GiB | median client CPU s/GiB | failed runs |"
echo "|---|---:|---:|---:|---:|---:|"
awk -v gib="$gib" -v mib="$mib" '
  $3 == "FAIL" { fail[$1]++; next }
  { k = $1; w[k, ++n[k]] = $3; s[k, n[k]] = $4; c[k, n[k]] = $5; seen[k] = 1 }
  function med(arr, key, m,   i, j, t, v) { for (i = 1; i <= m; i++) v[i] = arr[key, i]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
  END { for (k in seen) { mw = med(w, k, n[k]); printf "| %s | %.3f | %.0f | %.2f | %.2f | %d |\n", k, mw, mib * 1.048576 / mw, med(s, k, n[k]) / gib, med(c, k, n[k]) / gib, fail[k] }
        for (k in fail) if (!(k in seen)) printf "| %s | - | - | - | - | %d |\n", k, fail[k] }' "$raw" | sort
echo
echo "Per run (label, repetition, wall s, server CPU s, client CPU s):"
sed 's/^/    /' "$raw"
