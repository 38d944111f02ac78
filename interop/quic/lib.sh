# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers for the QUIC interop scripts: build vega-quic-probe (a UDP driver of the sans-I/O QUIC
# core) against the build folder's libvega.a, make a certificate, start peers on free loopback
# UDP ports under `timeout`, report TAP lines.
#
# Source it from a script; it sets IOP_BUILD, WORK (a temporary folder, removed at exit) and
# PROBE (the built probe), and defines the functions below. The build folder is $1 of the
# script, else $VEGA_BUILD_DIR, else build/ (relative paths are taken from the repository root).
# VEGA_INTEROP_STRICT=1 counts the known failures (check_todo) as failures; VEGA_PROBE_CFLAGS
# adds compiler flags for the probe (e.g. -fsanitize=address,undefined); CC picks the compiler.

# ../common.sh sets IOP_ROOT, IOP_BUILD, WORK, IOP_PIDS and defines vega_tool, iop_cleanup,
# skip_all.
IOP_AREA=quic
# shellcheck source=interop/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
IOP_TODO=0
trap 'exit 130' INT TERM

# iop_run NAME CMD...: runs CMD in this shell (the peers it starts are killed after it) with
# its output in $WORK/check.out; sets IOP_N and IOP_RC.
iop_run() {
    IOP_N=$((IOP_N + 1))
    "${@:2}" >"$WORK/check.out" 2>&1 </dev/null
    IOP_RC=$?
    iop_cleanup
}

# check NAME CMD...: "ok N - NAME" or "not ok N - NAME" followed by its output.
check() {
    iop_run "$@"
    if [ "$IOP_RC" -eq 0 ]; then
        echo "ok $IOP_N - $1"
    else
        echo "not ok $IOP_N - $1 (exit $IOP_RC)"
        sed 's/^/#   /' "$WORK/check.out" | tail -n 40
        IOP_FAILED=$((IOP_FAILED + 1))
    fi
}

# check_todo WHY NAME CMD...: a case that fails because of a known bug (WHY): TAP's TODO
# directive, so it does not fail the script unless VEGA_INTEROP_STRICT=1. When it passes, the
# line says so: drop the TODO.
check_todo() {
    local why="$1"
    shift
    iop_run "$@"
    if [ "$IOP_RC" -eq 0 ]; then
        echo "ok $IOP_N - $1 # TODO $why (passes now: make it a plain check)"
    else
        echo "not ok $IOP_N - $1 (exit $IOP_RC) # TODO $why"
        sed 's/^/#   /' "$WORK/check.out" | tail -n 20
        IOP_TODO=$((IOP_TODO + 1))
        [ "${VEGA_INTEROP_STRICT:-0}" = 1 ] && IOP_FAILED=$((IOP_FAILED + 1))
    fi
}

# finish: the plan, a summary and the exit status.
finish() {
    echo "1..$IOP_N"
    echo "# $((IOP_N - IOP_FAILED - IOP_TODO)) passed, $IOP_FAILED failed, $IOP_TODO known failures (TODO)"
    [ "$IOP_FAILED" -eq 0 ]
}

# expect_in FILE TEXT: FILE contains TEXT (a fixed string), else prints FILE's end and fails.
expect_in() {
    if ! grep -qF -- "$2" "$1"; then
        echo "expected '$2' in $(basename "$1"), which ends with:"
        tail -n 30 "$1"
        return 1
    fi
}

# expect_re FILE REGEX: as expect_in with an extended regular expression.
expect_re() {
    if ! grep -qE -- "$2" "$1"; then
        echo "expected /$2/ in $(basename "$1"), which ends with:"
        tail -n 30 "$1"
        return 1
    fi
}

# ---- the probe -----------------------------------------------------------------------------------

# build_probe: compiles interop/quic/vega-quic-probe.c against $IOP_BUILD/lib/libvega.a (public
# headers only) into $WORK/vega-quic-probe; sets PROBE. Exits 2 when libvega.a is missing.
build_probe() {
    local lib="$IOP_BUILD/lib/libvega.a" reqs libs cc="${CC:-cc}"
    if [ ! -f "$lib" ]; then
        echo "interop: no $lib (build the vega_static target first, or pass the build folder)" >&2
        exit 2
    fi
    # The static library's dependencies, as its pkg-config file lists them.
    reqs="$(sed -n 's/^Requires.private: *//p' "$IOP_BUILD/vega.pc" 2>/dev/null)"
    libs=""
    if [ -n "$reqs" ] && command -v pkg-config >/dev/null 2>&1; then
        # shellcheck disable=SC2086
        libs="$(pkg-config --libs $reqs 2>/dev/null)"
    fi
    [ -n "$libs" ] || libs="-lssl -lcrypto -lz -lbrotlienc -lbrotlidec -lzstd -luring"
    # A sanitizer build's library needs the same runtime in the program.
    case "$(sed -n 's/^VEGA_SANITIZE:[A-Z]*=//p' "$IOP_BUILD/CMakeCache.txt" 2>/dev/null)" in
    address) libs="$libs -fsanitize=address,undefined" ;;
    thread) libs="$libs -fsanitize=thread" ;;
    esac
    PROBE="$WORK/vega-quic-probe"
    # shellcheck disable=SC2086
    if ! "$cc" -std=c17 -O1 -g -Wall -Wextra ${VEGA_PROBE_CFLAGS:-} -I "$IOP_ROOT/lib/include" \
        "$IOP_ROOT/interop/quic/vega-quic-probe.c" "$lib" $libs -lpthread -lm \
        -o "$PROBE" >"$WORK/cc.log" 2>&1; then
        echo "interop: vega-quic-probe does not build:" >&2
        cat "$WORK/cc.log" >&2
        exit 1
    fi
}

# ---- certificates, files, ports ------------------------------------------------------------------

# make_cert: a self-signed ECDSA P-256 certificate for localhost / 127.0.0.1 in $WORK/cert.pem
# and $WORK/key.pem (one day).
make_cert() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
        -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$WORK/key.pem" -out "$WORK/cert.pem" >/dev/null 2>&1 || {
        echo "interop: could not make a certificate with openssl" >&2
        exit 1
    }
}

# body FILE SIZE: the body vega-quic-probe's server sends ("vega-quic-probe\n" repeated).
body() {
    yes vega-quic-probe | head -c "$2" >"$1"
}

# free_udp_port: a UDP port that was free a moment ago on 127.0.0.1.
free_udp_port() {
    command -p python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_udp PORT [SECS]: waits until something is bound to UDP 127.0.0.1:PORT.
wait_udp() {
    local i
    for ((i = 0; i < ${2:-5} * 20; i++)); do
        if ss -Hlun "sport = :$1" 2>/dev/null | grep -q .; then
            return 0
        fi
        sleep 0.05
    done
    echo "nothing bound to UDP 127.0.0.1:$1 after ${2:-5}s"
    return 1
}

# udp_noise PORT COUNT: COUNT malformed or unauthenticated datagrams to UDP 127.0.0.1:PORT
# (random bytes, v1 Initials of 1200+ bytes that do not decrypt, short headers, Retry-shaped
# and unknown-version long headers), from a fixed seed.
udp_noise() {
    command -p python3 - "$1" "$2" <<'PY'
import random, socket, sys
port, count = int(sys.argv[1]), int(sys.argv[2])
r = random.Random(7)
rb = lambda n: bytes(r.getrandbits(8) for _ in range(n))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(count):
    cids = bytes([8]) + rb(8) + bytes([8]) + rb(8)
    k = i % 6
    if k == 0:
        d = rb(r.randrange(1, 1500))
    elif k == 1:
        d = b"\xc0\x00\x00\x00\x01" + cids + b"\x00\x44\xd0" + rb(1300)
    elif k == 2:
        d = b"\xc3\x00\x00\x00\x01" + cids + rb(r.randrange(0, 1400))
    elif k == 3:
        d = b"\x40" + rb(r.randrange(1, 60))
    elif k == 4:
        d = b"\xf0\x00\x00\x00\x01" + cids + rb(40)
    else:
        d = b"\xc0\x1a\x2a\x3a\x4a" + cids + rb(1200)
    s.sendto(d, ("127.0.0.1", port))
PY
}

# ---- peers ---------------------------------------------------------------------------------------

# gtls_server LOG ARGS...: gtlsserver (ngtcp2's HTTP/3 example server, GnuTLS) with ARGS on a
# free port under `timeout 30`, serving $WORK/www; sets GPORT. Its log is verbose (frames,
# packets): the checks read it.
gtls_server() {
    local log="$1" _
    shift
    mkdir -p "$WORK/www"
    for _ in 1 2 3; do
        GPORT="$(free_udp_port)"
        timeout 30 gtlsserver "$@" -d "$WORK/www" 127.0.0.1 "$GPORT" "$WORK/key.pem" \
            "$WORK/cert.pem" >"$log" 2>&1 </dev/null &
        IOP_PIDS+=($!)
        wait_udp "$GPORT" 5 >/dev/null && return 0
        iop_cleanup
    done
    echo "gtlsserver did not start:"
    cat "$log"
    return 1
}

# vega_client OUT ARGS...: the probe's client against 127.0.0.1:GPORT under `timeout 20`;
# stdout and stderr both to OUT.
vega_client() {
    local out="$1"
    shift
    timeout 20 "$PROBE" client 127.0.0.1 "$GPORT" --sni localhost "$@" >"$out" 2>&1 </dev/null
}

# vega_server LOG ARGS...: the probe's server on a free port under `timeout 30` (it exits by
# itself after --count connections); sets VPORT and VSERVER_PID.
vega_server() {
    local log="$1" i
    shift
    : >"$log"
    timeout 30 "$PROBE" server 127.0.0.1 0 --cert "$WORK/cert.pem" --key "$WORK/key.pem" \
        --timeout-ms 25000 "$@" >"$log" 2>&1 </dev/null &
    VSERVER_PID=$!
    IOP_PIDS+=("$VSERVER_PID")
    for ((i = 0; i < 100; i++)); do
        VPORT="$(sed -nE 's/^listening on [0-9.]+:([0-9]+) .*/\1/p' "$log" | head -n1)"
        [ -n "$VPORT" ] && return 0
        kill -0 "$VSERVER_PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "vega-quic-probe server did not start:"
    cat "$log"
    return 1
}

# vega_server_wait LOG: waits for the probe's server to finish its --count connections; fails
# (with its log) if it exits non-zero.
vega_server_wait() {
    local rc
    wait "$VSERVER_PID"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "vega-quic-probe server exited $rc:"
        cat "$1"
        return 1
    fi
}

# gtls_client OUT ARGS... -- URL PATHS...: gtlsclient against 127.0.0.1:VPORT under
# `timeout 20`, downloading https://localhost:VPORT/PATH for each PATH into $WORK/dl (emptied
# first).
gtls_client() {
    local out="$1" args=() urls=() p
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        args+=("$1")
        shift
    done
    shift
    for p in "$@"; do
        urls+=("https://localhost:$VPORT/$p")
    done
    rm -rf "$WORK/dl"
    mkdir -p "$WORK/dl"
    timeout 20 gtlsclient --exit-on-all-streams-close --download "$WORK/dl" "${args[@]}" \
        127.0.0.1 "$VPORT" "${urls[@]}" >"$out" 2>&1 </dev/null
}
