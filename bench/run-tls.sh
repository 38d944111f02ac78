#!/usr/bin/env bash
# TLS benchmarks (see bench/README.md, "TLS"): full TLS 1.3 handshakes per second (X25519,
# ECDSA P-256) for vega-echo (uring, epoll) against openssl s_server, and TLS echo throughput
# for vega-echo (uring, epoll) with kTLS off and tx. Server on CPU 0, client on CPU 1, only
# 127.0.0.1, every process under timeout and killed on exit; repetitions interleaved.
set -u

usage() {
    cat <<EOF
Usage: bench/run-tls.sh [-r REPS] [-d SECONDS] [-c CONNS] [-s SIZE] [-p PORT] [BUILD_DIR]
  -r  repetitions (default 3)          -d  seconds per measured run (default 3)
  -c  echo connections (default 16)    -s  echo message size (default 16384)
  -p  first port (default 19500)       BUILD_DIR default build-bench-tls (Release)
EOF
}
REPS=3 DUR=3 CONNS=16 SIZE=16384 PORT=19500
while getopts "r:d:c:s:p:h" o; do
    case $o in
        r) REPS=$OPTARG ;; d) DUR=$OPTARG ;; c) CONNS=$OPTARG ;; s) SIZE=$OPTARG ;;
        p) PORT=$OPTARG ;; *) usage; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build-bench-tls}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
for t in openssl taskset timeout python3; do
    command -v $t >/dev/null || { echo "run-tls.sh: $t not found" >&2; exit 1; }
done

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
fi
cmake --build "$BUILD" -j2 --target vega-echo vega-load >/dev/null || exit 1
ECHO=$BUILD/cli/vega-echo LOAD=$BUILD/cli/vega-load

TMP=$(mktemp -d /tmp/vega-bench-tls.XXXXXX)
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
FAIL=0
HZ=$(getconf CLK_TCK)

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout "$TMP/k.pem" \
    -out "$TMP/c.pem" -days 2 -nodes -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >/dev/null 2>&1 || exit 1

# server NAME ARGS...: start the server pinned to CPU 0 under timeout; sets SPID (the server
# itself, the child of timeout), TPID (timeout), SLOG.
server() {
    local name=$1; shift
    PORT=$((PORT + 1))
    SLOG=$TMP/$name.$PORT.log
    case $name in
        openssl) timeout 600 taskset -c 0 openssl s_server -accept "$PORT" -cert "$TMP/c.pem" \
                     -key "$TMP/k.pem" -tls1_3 -groups X25519 -quiet </dev/null >"$SLOG" 2>&1 & ;;
        *) timeout 600 taskset -c 0 "$ECHO" -l 127.0.0.1 "$PORT" --tls --cert "$TMP/c.pem" \
               --key "$TMP/k.pem" --workers 1 "$@" </dev/null >"$SLOG" 2>&1 & ;;
    esac
    TPID=$!
    PIDS+=("$TPID")
    local i
    for i in $(seq 50); do
        SPID=$(cat /proc/$TPID/task/$TPID/children 2>/dev/null | awk '{print $1}')
        [ -n "$SPID" ] && (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && return 0
        sleep 0.1
    done
    echo "run-tls.sh: $name did not start on $PORT:" >&2; cat "$SLOG" >&2
    return 1
}
stop() { kill "$TPID" 2>/dev/null; wait "$TPID" 2>/dev/null; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # utime + stime, all threads
now() { date +%s.%N; }

# Negotiated parameters, once per server (the handshake runs use the same client).
params() {
    echo Q | timeout 5 openssl s_client -connect 127.0.0.1:$PORT -tls1_3 -brief 2>&1 \
        | awk -F': ' '/Protocol version|Ciphersuite|Temp Key|Peer signature type/{printf "%s; ", $2}'
}

HS_SERVERS="vega-uring vega-epoll openssl"
declare -A PARAMS
hs_run() {   # NAME REP -> appends "name rep hs/s us_per_hs" to $TMP/hs
    local name=$1 rep=$2
    case $name in
        vega-uring) server vega --driver uring -q || { FAIL=1; return; } ;;
        vega-epoll) server vega --driver epoll -q || { FAIL=1; return; } ;;
        openssl) server openssl || { FAIL=1; return; } ;;
    esac
    [ -n "${PARAMS[$name]:-}" ] || PARAMS[$name]=$(params)
    local c0 c1 t0 t1 out n
    c0=$(cpu_ticks "$SPID"); t0=$(now)
    out=$(timeout $((DUR + 20)) taskset -c 1 openssl s_time -connect 127.0.0.1:$PORT -new \
        -tls1_3 -time "$DUR" 2>&1)
    t1=$(now); c1=$(cpu_ticks "$SPID")
    n=$(printf '%s\n' "$out" | sed -n 's/^\([0-9][0-9]*\) connections in [0-9.]*s;.*/\1/p' | head -1)
    if ! kill -0 "$SPID" 2>/dev/null || [ -z "$n" ] || [ "$n" -eq 0 ]; then
        echo "run-tls.sh: handshakes $name rep $rep failed:" >&2
        printf '%s\n' "$out" | tail -3 | cut -c1-300 >&2; tail -3 "$SLOG" >&2; FAIL=1
    else
        echo "$name $rep $(python3 -c "print($n/($t1-$t0), ($c1-$c0)*1e6/$HZ/$n)")" >>"$TMP/hs"
    fi
    stop
}

EC_SERVERS="uring-off epoll-off uring-tx epoll-tx"
ec_run() {   # NAME REP -> appends "name rep rps MB/s cpu_ms_per_MB" to $TMP/ec; kTLS line
    local name=$1 rep=$2 drv=${1%-*} k=${1#*-}
    server vega --driver "$drv" --ktls "$k" -v || { FAIL=1; return; }
    local c0 c1 out
    c0=$(cpu_ticks "$SPID")
    out=$(timeout $((DUR + 20)) taskset -c 1 "$LOAD" echo --tls -k -c "$CONNS" -s "$SIZE" \
        -d "${DUR}s" --json 127.0.0.1:$PORT 2>"$TMP/load.err")
    local rc=$?
    c1=$(cpu_ticks "$SPID")
    if ! kill -0 "$SPID" 2>/dev/null || [ $rc -ne 0 ]; then
        echo "run-tls.sh: echo $name rep $rep failed (rc $rc):" >&2
        cat "$TMP/load.err" >&2; tail -3 "$SLOG" >&2; FAIL=1
    else
        printf '%s\n' "$out" | python3 -c "
import json,sys; j=json.load(sys.stdin)
if j['errors']: sys.stderr.write('run-tls.sh: echo $name rep $rep: %d errors\n' % j['errors'])
mb=(j['bytes_sent']+j['bytes_received'])/1e6
print('$name $rep', j['rps'], j['bytes_per_sec']/1e6, ($c1-$c0)*1e3/$HZ/mb)" >>"$TMP/ec"
        grep -m1 -o 'kTLS .*' "$SLOG" | sed 's/^/'"$name"': /' >>"$TMP/ktls"
    fi
    stop
}

rotate() {  # LIST REP -> the list rotated by REP
    python3 -c "import sys; l=sys.argv[1].split(); r=int(sys.argv[2])%len(l); print(' '.join(l[r:]+l[:r]))" "$1" "$2"
}
: >"$TMP/hs"; : >"$TMP/ec"; : >"$TMP/ktls"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for rep in $(seq "$REPS"); do
    for s in $(rotate "$HS_SERVERS" "$rep"); do hs_run "$s" "$rep"; done
    for s in $(rotate "$EC_SERVERS" "$rep"); do ec_run "$s" "$rep"; done
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# Report.
{
echo "### TLS benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "Kernel $(uname -r), $(nproc) CPUs, load average $LOAD0 (start) / $LOAD1 (end), $(openssl version)," \
     "$REPS repetitions x ${DUR}s, interleaved; server \`taskset -c 0\`, client \`taskset -c 1\`."
echo
echo "Handshakes: server \`vega-echo -l 127.0.0.1 PORT --tls --cert c.pem --key k.pem --workers 1" \
     "--driver uring|epoll -q\` or \`openssl s_server -accept PORT -cert c.pem -key k.pem -tls1_3" \
     "-groups X25519 -quiet\`; client \`openssl s_time -connect 127.0.0.1:PORT -new -tls1_3 -time $DUR\`" \
     "(one connection at a time, full handshake, no resumption); handshakes/s = s_time's connections" \
     "/ wall time of the s_time run; server CPU = utime+stime from /proc/PID/stat (${HZ} Hz ticks)" \
     "/ connections. Certificate: self-signed ECDSA P-256 (\`openssl req -x509 -newkey ec" \
     "-pkeyopt ec_paramgen_curve:P-256\`), the same for all servers."
echo
for s in $HS_SERVERS; do echo "- negotiated, $s: ${PARAMS[$s]:-?}"; done
echo
python3 - "$TMP/hs" "$HS_SERVERS" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
d = {}
for n, r, h, c in rows: d.setdefault(n, {})[r] = (float(h), float(c))
print("| server | handshakes/s (median) | server CPU us/handshake (median) | hs/s ratio vs openssl | CPU ratio vs openssl | per-rep hs/s |")
print("|---|---:|---:|---:|---:|---|")
o = d.get("openssl", {})
for n in sys.argv[2].split():
    if n not in d: print(f"| {n} | failed | | | | |"); continue
    v = d[n]
    hr = [v[r][0] / o[r][0] for r in v if r in o]
    cr = [v[r][1] / o[r][1] for r in v if r in o and o[r][1] > 0]
    f = lambda x: f"{st.median(x):.2f}" if x else "-"
    print(f"| {n} | {st.median(x[0] for x in v.values()):.0f} | {st.median(x[1] for x in v.values()):.0f}"
          f" | {f(hr)} | {f(cr)} | {' '.join('%.0f' % v[r][0] for r in sorted(v))} |")
EOF
echo
echo "Echo over TLS: server \`vega-echo ... --tls --workers 1 --driver uring|epoll --ktls off|tx -v\`;" \
     "client \`vega-load echo --tls -k -c $CONNS -s $SIZE -d ${DUR}s --json 127.0.0.1:PORT\`." \
     "MB/s is one direction (vega-load's bytes_per_sec); server CPU per MB counts both directions" \
     "(bytes sent + received). openssl has no echo server to compare (s_server serves one" \
     "connection at a time and writes to stdout), and nginx is not installed, so there is no peer row."
echo
python3 - "$TMP/ec" "$EC_SERVERS" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
d = {}
for n, r, rps, mb, c in rows: d.setdefault(n, []).append((float(rps), float(mb), float(c)))
print("| vega-echo driver, kTLS asked | round trips/s (median) | MB/s one way (median) | server CPU ms/MB (median) | per-rep rps |")
print("|---|---:|---:|---:|---|")
for n in sys.argv[2].split():
    if n not in d: print(f"| {n} | failed | | | |"); continue
    v = d[n]
    print(f"| {n} | {st.median(x[0] for x in v):.0f} | {st.median(x[1] for x in v):.0f}"
          f" | {st.median(x[2] for x in v):.3f} | {' '.join('%.0f' % x[0] for x in v)} |")
EOF
echo
echo "kTLS as the server reported it (first connection of each configuration):"
echo
sort -u "$TMP/ktls" | sed 's/^/- /'
}
exit $FAIL
