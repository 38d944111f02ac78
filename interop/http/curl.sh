#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# curl (Debian's, the real one) against vega-serve: keep-alive reuse, ranges, conditional
# requests, compressed responses, HEAD, HTTPS; and raw pipelining (three requests in one
# write, answered in order). Usage: interop/http/curl.sh [BUILD_DIR]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v curl >/dev/null || skip_all "curl is not installed"

ROOT="$WORK/site"
mkdir -p "$ROOT"
head -c 200000 /dev/urandom >"$ROOT/rand.bin"
seq 1 20000 >"$ROOT/numbers.txt"
printf 'alpha\n' >"$ROOT/a.txt"
printf 'beta\n' >"$ROOT/b.txt"

C=(curl -sS --max-time 20)

keepalive() {
    local err="$WORK/ka.err"
    "${C[@]}" -v -o /dev/null -o /dev/null "$BASE/a.txt" "$BASE/b.txt" 2>"$err" || return 1
    grep -qi 're-using existing connection' "$err" || { cat "$err"; return 1; }
}

bytes_identical() {
    "${C[@]}" -o "$WORK/got.bin" "$BASE/rand.bin" && cmp "$WORK/got.bin" "$ROOT/rand.bin"
}

range_single() {
    local got code
    got="$("${C[@]}" -r 10-19 -w '%{http_code}' -o "$WORK/r.bin" "$BASE/rand.bin")" || return 1
    [ "$got" = 206 ] || { echo "status $got"; return 1; }
    cmp "$WORK/r.bin" <(head -c 20 "$ROOT/rand.bin" | tail -c 10)
}

range_multi() {
    local ct
    ct="$("${C[@]}" -r 0-4,100-104 -o "$WORK/m.bin" -w '%{content_type}' "$BASE/numbers.txt")" || return 1
    grep -q '^multipart/byteranges; boundary=' <<<"$ct" || { echo "content type: $ct"; return 1; }
    grep -q 'Content-Range: bytes 0-4/' "$WORK/m.bin" && grep -q 'Content-Range: bytes 100-104/' "$WORK/m.bin"
}

range_416() {
    local got
    got="$("${C[@]}" -r 999999999- -o /dev/null -w '%{http_code}' "$BASE/a.txt")"
    [ "$got" = 416 ] || { echo "status $got"; return 1; }
}

conditional_etag() {
    local got
    "${C[@]}" --etag-save "$WORK/etag" -o /dev/null "$BASE/a.txt" || return 1
    [ -s "$WORK/etag" ] || { echo "no ETag saved"; return 1; }
    got="$("${C[@]}" --etag-compare "$WORK/etag" -o /dev/null -w '%{http_code}' "$BASE/a.txt")"
    [ "$got" = 304 ] || { echo "status $got"; return 1; }
}

conditional_date() {
    local got
    got="$("${C[@]}" -z "$ROOT/a.txt" -o /dev/null -w '%{http_code}' "$BASE/a.txt")"
    [ "$got" = 304 ] || { echo "If-Modified-Since: status $got"; return 1; }
    got="$("${C[@]}" -H 'If-Unmodified-Since: Fri, 01 Jan 2100 00:00:00 GMT' -o /dev/null \
        -w '%{http_code}' "$BASE/a.txt")"
    [ "$got" = 200 ] || { echo "If-Unmodified-Since in the future: status $got"; return 1; }
    got="$("${C[@]}" -H 'If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT' -o /dev/null \
        -w '%{http_code}' "$BASE/a.txt")"
    [ "$got" = 412 ] || { echo "If-Unmodified-Since in the past: status $got"; return 1; }
}

compressed() {
    local hdr="$WORK/c.hdr"
    "${C[@]}" --compressed -D "$hdr" -o "$WORK/c.txt" "$BASE/numbers.txt" || return 1
    grep -qi '^content-encoding: ' "$hdr" || { cat "$hdr"; return 1; }
    grep -qi '^vary: .*accept-encoding' "$hdr" || { cat "$hdr"; return 1; }
    cmp "$WORK/c.txt" "$ROOT/numbers.txt"
}

head_request() {
    local hdr
    hdr="$("${C[@]}" -I "$BASE/rand.bin")" || return 1
    grep -qi '^content-length: 200000' <<<"$hdr" || { echo "$hdr"; return 1; }
}

# Three requests in one write; the three responses must come back in order on the connection.
pipelining() {
    command -p python3 - "$SERVE_PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
req = b"".join(b"GET /%s HTTP/1.1\r\nHost: x\r\n\r\n" % n for n in (b"a.txt", b"b.txt", b"a.txt"))
s.sendall(req + b"GET /b.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
bodies = [part.split(b"\r\n\r\n", 1)[1][:6] for part in data.split(b"HTTP/1.1 200")[1:]]
want = [b"alpha\n", b"beta\n", b"alpha\n", b"beta\n"]
got = [b[: len(w)] for b, w in zip(bodies, want)]
if got != want:
    sys.exit("responses out of order or missing: %r" % data[:2000])
PY
}

https_get() {
    "${C[@]}" -k -o "$WORK/s.bin" "https://127.0.0.1:$SERVE_PORT/rand.bin" && cmp "$WORK/s.bin" "$ROOT/rand.bin"
}

start_vega_serve "$ROOT" || exit 1
BASE="http://127.0.0.1:$SERVE_PORT"
check "curl: keep-alive reuses the connection" keepalive
check "curl: 200 KiB binary identical" bytes_identical
check "curl: single range (206)" range_single
check "curl: multiple ranges (multipart/byteranges)" range_multi
check "curl: unsatisfiable range (416)" range_416
check "curl: ETag revalidation (304)" conditional_etag
check "curl: If-Modified-Since / If-Unmodified-Since" conditional_date
check "curl: --compressed (Content-Encoding, Vary, identical bytes)" compressed
check "curl: HEAD" head_request
check "raw: pipelined requests answered in order" pipelining
iop_cleanup
start_vega_serve "$ROOT" --tls || exit 1
check "curl: HTTPS (self-signed, -k)" https_get
finish
