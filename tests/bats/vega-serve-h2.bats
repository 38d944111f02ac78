#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-serve over HTTP/2 against real, independent peers: curl (ALPN h2 over TLS, prior
# knowledge and Upgrade over cleartext), nghttp (the frames on the wire), h2load (many streams
# per connection) and a Python client on Debian's python3-h2 (vega-serve-h2.py: Rapid Reset,
# a zero-window reader, priorities, trailers, a graceful stop watched frame by frame). Ranges,
# conditional requests, HEAD and a 64 MiB download over h2; the access log; --no-http2; both
# drivers. Loopback only, ephemeral ports. Peers that are not installed skip their tests
# (scripts/deps.sh installs them all).

load helpers

PY=/usr/bin/python3 # Debian's, with python3-h2 (the first python3 on PATH may be another)

setup_file() {
    SERVE="$(vega_bin vega-serve)"
    export SERVE
    export ROOT="$BATS_FILE_TMPDIR/root"
    mkdir -p "$ROOT"
    printf 'hello world\n' >"$ROOT/hello.txt"
    printf '0123456789abcdefghij' >"$ROOT/digits.txt"
    head -c 1024 /dev/urandom >"$ROOT/1k.bin"
    head -c $((1 << 20)) /dev/urandom >"$ROOT/1m.bin"
    head -c $((4 << 20)) /dev/urandom >"$ROOT/4m.bin"
    head -c $((64 << 20)) /dev/urandom >"$ROOT/64m.bin"
    export LOG_TLS="$BATS_FILE_TMPDIR/access-tls.log" LOG_C="$BATS_FILE_TMPDIR/access-h2c.log"
    serve_file tls "$LOG_TLS" --tls --no-http3
    serve_file h2c "$LOG_C" --h2c
    # shellcheck disable=SC2154  # set by serve_file
    export UT="https://127.0.0.1:$PORT_tls" UC="http://127.0.0.1:$PORT_h2c"
}

# serve_file NAME LOG ARGS...: a server for the whole file; sets PORT_NAME.
serve_file() {
    local name="$1" log="$2" slog="$BATS_FILE_TMPDIR/$1.log" i p=""
    shift 2
    # From a subshell, so that it is no job of this shell.
    ("$SERVE" -p 0 --access-log "$log" "$@" "$ROOT" 2>"$slog" 3>&- </dev/null &
        echo $! >"$BATS_FILE_TMPDIR/$name.pid")
    for ((i = 0; i < 200; i++)); do
        p="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$slog" 2>/dev/null | head -n1)"
        [ -n "$p" ] && break
        sleep 0.05
    done
    [ -n "$p" ] || { cat "$slog" >&2; return 1; }
    export "PORT_$name=$p"
}

teardown_file() {
    local n pid
    for n in tls h2c; do
        pid="$(cat "$BATS_FILE_TMPDIR/$n.pid" 2>/dev/null)" || continue
        kill -KILL "$pid" 2>/dev/null || true
    done
}

setup() {
    T="$BATS_TEST_TMPDIR"
}

teardown() {
    stop_bg_all
}

c() {
    curl -sS --max-time 30 "$@"
}

# ct ARGS...: curl over TLS, HTTP/2 asked for (ALPN h2 first).
ct() {
    c -k --http2 "$@"
}

# cc ARGS...: curl over cleartext HTTP/2 with prior knowledge.
cc() {
    c --http2-prior-knowledge "$@"
}

sha() {
    sha256sum "$@" | cut -d' ' -f1
}

h2py() {
    timeout 60 "$PY" "$BATS_TEST_DIRNAME/vega-serve-h2.py" "$@"
}

need_h2py() {
    "$PY" -c 'import h2' 2>/dev/null || skip "python3-h2 is not installed"
}

need() {
    command -v "$1" >/dev/null || skip "$1 is not installed (${2:-nghttp2-client})"
}

# start_own ARGS...: a server of this test's own; sets OWN_PID, OWN_LOG, OWN_PORT.
start_own() {
    OWN_LOG="$T/own.log"
    start_bg "$OWN_LOG" "$SERVE" -p 0 "$@" "$ROOT"
    OWN_PID=$BG_PID
    wait_for_line "$OWN_LOG" 'listening on' 10
    OWN_PORT="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$OWN_LOG" | head -n1)"
}

# ---- curl ----------------------------------------------------------------------------------------

@test "curl: ALPN h2 over TLS, prior knowledge and Upgrade over cleartext" {
    run ct -v -o "$T/b" -w '%{http_version} %{http_code}\n' "$UT/hello.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"ALPN: server accepted h2"* ]]
    [[ "${lines[-1]}" == "2 200" ]]
    cmp "$T/b" "$ROOT/hello.txt"
    [ "$(cc -w ' %{http_version}' "$UC/hello.txt")" = "hello world
 2" ]
    # Upgrade: h2c on the first request, then HTTP/2 on the same connection
    run c --http2 -v -o /dev/null -o /dev/null -w '%{http_version}\n' "$UC/hello.txt" "$UC/digits.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"HTTP/1.1 101"* ]]
    [[ "$output" == *"Re-using existing connection"* ]]
    [ "$(printf '%s\n' "${lines[@]}" | grep -cx 2)" -eq 2 ]
}

@test "curl: many URLs multiplexed on one connection, each byte-exact" {
    local args=() i
    for i in $(seq 1 20); do args+=(-o "$T/s$i" "$UT/1k.bin"); done
    ct --parallel --parallel-max 20 "${args[@]}"
    for i in $(seq 1 20); do cmp "$T/s$i" "$ROOT/1k.bin"; done
}

@test "a 64 MiB file over h2: same sha256 (TLS and h2c)" {
    local want
    want="$(sha "$ROOT/64m.bin")"
    [ "$(ct "$UT/64m.bin" | sha)" = "$want" ]
    [ "$(cc "$UC/64m.bin" | sha)" = "$want" ]
}

@test "ranges over h2: one range, several, unsatisfiable" {
    ct -D "$T/h" -o "$T/b" -r 2-5 "$UT/digits.txt"
    grep -q '^HTTP/2 206' "$T/h"
    grep -qi '^content-range: bytes 2-5/20' "$T/h"
    [ "$(cat "$T/b")" = "2345" ]
    cc -o "$T/b" -r 1000000-1999999 "$UC/4m.bin"
    cmp "$T/b" <(tail -c +1000001 "$ROOT/4m.bin" | head -c 1000000)
    ct -D "$T/h" -o "$T/b" -r 0-1,5-6 "$UT/digits.txt"
    grep -q '^HTTP/2 206' "$T/h"
    grep -qi '^content-type: multipart/byteranges; boundary=' "$T/h"
    grep -qx $'01\r' "$T/b"
    grep -qx $'56\r' "$T/b"
    local len
    len="$(sed -nE 's/^content-length: ([0-9]+).*/\1/p' "$T/h" | tr -d '\r')"
    [ "$len" -eq "$(stat -c %s "$T/b")" ]
    ct -D "$T/h" -o /dev/null -r 100-200 "$UT/digits.txt"
    grep -q '^HTTP/2 416' "$T/h"
}

@test "conditional requests and HEAD over h2" {
    need nghttp
    ct -D "$T/h" -o /dev/null "$UT/hello.txt"
    local etag lm
    etag="$(sed -nE 's/^etag: (.*)\r$/\1/p' "$T/h")"
    lm="$(sed -nE 's/^last-modified: (.*)\r$/\1/p' "$T/h")"
    [ -n "$etag" ]
    [ -n "$lm" ]
    [ "$(ct -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "$UT/hello.txt")" = 304 ]
    [ "$(cc -o /dev/null -w '%{http_code}' -H "If-Modified-Since: $lm" "$UC/hello.txt")" = 304 ]
    [ "$(ct -o /dev/null -w '%{http_code}' -H 'If-Match: "other"' "$UT/hello.txt")" = 412 ]
    [ "$(ct -o /dev/null -w '%{http_code}' -r 0-3 -H 'If-Range: "stale"' "$UT/digits.txt")" = 200 ]
    # HEAD: the head of a GET, no DATA (curl counts body bytes apart from the head's)
    [ "$(ct -I -D "$T/h" -o /dev/null -w '%{size_download}' "$UT/64m.bin")" = 0 ]
    grep -q '^HTTP/2 200' "$T/h"
    grep -qi "^content-length: $((64 << 20))" "$T/h"
    run timeout 20 nghttp -nv -H ':method: HEAD' "$UC/64m.bin"
    [ "$status" -eq 0 ]
    [[ "$output" == *"flags=0x05, stream_id=13"* ]] # HEADERS with END_STREAM | END_HEADERS
    [[ "$output" != *"recv DATA frame"* ]]
}

@test "the access log says HTTP/2.0" {
    ct -o /dev/null -A bats-h2 "$UT/digits.txt"
    cc -o /dev/null -A bats-h2c "$UC/digits.txt"
    wait_for_line "$LOG_TLS" '"GET /digits.txt HTTP/2.0" 200 20 .*"bats-h2"' 5
    wait_for_line "$LOG_C" '"GET /digits.txt HTTP/2.0" 200 20 .*"bats-h2c"' 5
}

@test "--no-http2: ALPN offers http/1.1 only; without --h2c no cleartext HTTP/2" {
    start_own --tls --no-http3 --no-http2
    run c -k --http2 -v -o /dev/null -w '%{http_version}\n' "https://127.0.0.1:$OWN_PORT/hello.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"ALPN: server accepted http/1.1"* ]]
    [ "${lines[-1]}" = 1.1 ]
    run bash -c "openssl s_client -connect 127.0.0.1:$OWN_PORT -alpn h2 </dev/null 2>&1"
    [[ "$output" == *"No ALPN negotiated"* ]]
    stop_bg_all
    start_own
    run c --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$OWN_PORT/hello.txt"
    [ "$status" -ne 0 ]
    # curl --http2 asks for the Upgrade, gets HTTP/1.1 without it
    [ "$(c --http2 -o /dev/null -w '%{http_version}' "http://127.0.0.1:$OWN_PORT/hello.txt")" = 1.1 ]
}

# ---- nghttp and h2load ---------------------------------------------------------------------------

@test "nghttp: the server's SETTINGS, the answer's frames, several streams on one connection" {
    need nghttp
    run timeout 20 nghttp -nv "$UT/hello.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"recv SETTINGS frame <length="*"[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):"* ]]
    [[ "$output" == *"[SETTINGS_NO_RFC7540_PRIORITIES(0x09):1]"* ]]
    [[ "$output" == *"recv SETTINGS frame <length=0, flags=0x01, stream_id=0>"* ]] # our ACK
    [[ "$output" == *"recv (stream_id=13) :status: 200"* ]]
    [[ "$output" == *"recv DATA frame <length=12, flags=0x01, stream_id=13>"* ]]
    run timeout 20 nghttp -ns "$UC/hello.txt" "$UC/digits.txt" "$UC/1m.bin" "$UC/4m.bin"
    [ "$status" -eq 0 ]
    # the statistics table: one line per stream, "id responseEnd requestStart process code size path"
    [ "$(printf '%s\n' "${lines[@]}" | grep -cE '^ *[0-9]+ +\+[0-9.]+[mu]?s .* 200 ')" -eq 4 ]
    # the body as nghttp writes it out
    [ "$(timeout 20 nghttp "$UT/4m.bin" | sha)" = "$(sha "$ROOT/4m.bin")" ]
}

@test "h2load: 4 connections x 32 streams, 2000 requests, every one 200, bytes exact" {
    need h2load
    local u
    for u in "$UT/1k.bin" "$UC/1k.bin"; do
        run timeout 60 h2load -c 4 -m 32 -n 2000 "$u"
        [ "$status" -eq 0 ]
        [[ "$output" == *"requests: 2000 total, 2000 started, 2000 done, 2000 succeeded, 0 failed, 0 errored, 0 timeout"* ]]
        [[ "$output" == *"status codes: 2000 2xx, 0 3xx, 0 4xx, 0 5xx"* ]]
        [[ "$output" =~ \(([0-9]+)\)\ data ]]
        [ "${BASH_REMATCH[1]}" -eq $((2000 * 1024)) ]
    done
    [[ "$output" != *"Application protocol"* ]] || [[ "$output" == *"Application protocol: h2"* ]]
}

# ---- python3-h2 ----------------------------------------------------------------------------------

@test "python-h2: SETTINGS, trailers and priorities (TLS and h2c)" {
    need_h2py
    local t
    for t in "127.0.0.1 $PORT_tls --tls" "127.0.0.1 $PORT_h2c"; do
        # shellcheck disable=SC2086
        h2py settings $t
        # shellcheck disable=SC2086
        h2py trailers $t --path /digits.txt
        # shellcheck disable=SC2086
        h2py priorities $t
    done
}

@test "python-h2: Rapid Reset bursts, then a normal request is still served" {
    need_h2py
    h2py rapid-reset 127.0.0.1 "$PORT_tls" --tls
    h2py rapid-reset 127.0.0.1 "$PORT_h2c"
    [ "$(ct "$UT/hello.txt")" = "hello world" ]
}

@test "python-h2: a zero-window reader gets heads only, others are served, then all of it" {
    need_h2py
    h2py zero-window 127.0.0.1 "$PORT_tls" --tls --path /1m.bin --sha256 "$(sha "$ROOT/1m.bin")"
    h2py zero-window 127.0.0.1 "$PORT_h2c" --path /1m.bin --sha256 "$(sha "$ROOT/1m.bin")"
}

@test "SIGTERM: GOAWAY, the download in flight completes, exit 0 (TLS and h2c)" {
    need_h2py
    local mode
    for mode in "--tls --no-http3" "--h2c"; do
        # shellcheck disable=SC2086
        start_own $mode
        local tls=()
        [[ "$mode" == --tls* ]] && tls=(--tls)
        h2py shutdown 127.0.0.1 "$OWN_PORT" "${tls[@]}" --pid "$OWN_PID" --path /4m.bin \
            --sha256 "$(sha "$ROOT/4m.bin")"
        wait_pid_exit "$OWN_PID" 10
        [ "$BG_STATUS" -eq 0 ]
    done
}

@test "both drivers serve HTTP/2 (curl, h2load)" {
    need h2load
    local d
    for d in uring epoll; do
        OWN_LOG="$T/own.$d.log"
        start_bg "$OWN_LOG" "$SERVE" -p 0 --driver "$d" --tls --no-http3 "$ROOT"
        wait_for_line "$OWN_LOG" 'listening on|runtime' 10
        if grep -q 'runtime' "$OWN_LOG"; then
            skip "driver $d unavailable here: $(cat "$OWN_LOG")"
        fi
        OWN_PORT="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$OWN_LOG" | head -n1)"
        [ "$(ct -w ' %{http_version}' "https://127.0.0.1:$OWN_PORT/hello.txt")" = "hello world
 2" ]
        [ "$(ct "https://127.0.0.1:$OWN_PORT/4m.bin" | sha)" = "$(sha "$ROOT/4m.bin")" ]
        run timeout 60 h2load -c 2 -m 16 -n 500 "https://127.0.0.1:$OWN_PORT/1k.bin"
        [[ "$output" == *"500 succeeded, 0 failed"* ]]
        stop_bg_all
    done
}
