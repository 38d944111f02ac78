#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vega-curl and vega-load against nginx (Debian's nginx-light, started here on loopback with
# its own config): plain and TLS downloads, keep-alive reuse, gzip, redirects, HEAD, ranges,
# errors; vega-load -n with exact counts, pipelining. Usage: interop/http/nginx.sh [BUILD_DIR]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v nginx >/dev/null || skip_all "nginx is not installed"
VCURL="$(vega_tool vega-curl)" || exit 2
VLOAD="$(vega_tool vega-load)" || exit 2

ROOT="$WORK/site"
mkdir -p "$ROOT"
head -c 3000000 /dev/urandom >"$ROOT/big.bin"
seq 1 30000 >"$ROOT/numbers.txt"
printf 'hello nginx\n' >"$ROOT/hello.txt"

NGINX_EXTRA='gzip on; gzip_types text/plain; gzip_min_length 100;
        location = /moved { return 302 /hello.txt; }
        location = /teapot { return 418; }'

VC=("$VCURL" -sS -m 20)

download() {
    "${VC[@]}" -o "$WORK/big.out" "$URL/big.bin" && cmp "$WORK/big.out" "$ROOT/big.bin"
}
keepalive() {
    local err="$WORK/ka.err"
    "${VC[@]}" -v -o /dev/null -o /dev/null "$URL/hello.txt" "$URL/numbers.txt" 2>"$err" || return 1
    grep -qi 're-using' "$err" || { cat "$err"; return 1; }
}
gzip_decoded() {
    "${VC[@]}" --compressed -o "$WORK/n.txt" -w '%{http_code}' "$URL/numbers.txt" >/dev/null &&
        cmp "$WORK/n.txt" "$ROOT/numbers.txt"
}
redirect() {
    local out
    out="$("${VC[@]}" -L "$URL/moved")" || return 1
    [ "$out" = "hello nginx" ] || { echo "got: $out"; return 1; }
}
head_req() {
    # Read all before matching: grep -q would stop early and break vega-curl's pipe (exit 23).
    local head
    head="$("${VC[@]}" -I "$URL/big.bin")" || return 1
    grep -qi '^content-length: 3000000' <<<"$head"
}
range_req() {
    "${VC[@]}" -H 'Range: bytes=100-199' -o "$WORK/r.bin" "$URL/big.bin" &&
        cmp "$WORK/r.bin" <(head -c 200 "$ROOT/big.bin" | tail -c 100)
}
fail_code() {
    local rc=0
    "${VC[@]}" -f -o /dev/null "$URL/teapot" 2>/dev/null || rc=$?
    [ $rc = 22 ] || { echo "exit $rc, want 22"; return 1; }
}
https_get() {
    "${VC[@]}" --cacert "$WORK/cert.pem" -o "$WORK/s.bin" "https://localhost:$TLS_PORT/big.bin" \
        --resolve "localhost:$TLS_PORT:127.0.0.1" && cmp "$WORK/s.bin" "$ROOT/big.bin"
}
load_exact() {
    local out
    out="$(timeout 60 "$VLOAD" -c 8 -n 500 --json "$URL/hello.txt")" || return 1
    command -p python3 -c '
import json, sys
j = json.loads(sys.argv[1])
assert j["requests"] == 500, j["requests"]
assert j["status"].get("200") == 500, j["status"]' "$out"
}
load_pipelined() {
    local out
    out="$(timeout 60 "$VLOAD" -c 4 --pipeline 8 -d 2s --json "$URL/hello.txt")" || return 1
    command -p python3 -c '
import json, sys
j = json.loads(sys.argv[1])
errs = j["errors"]["total"] if isinstance(j["errors"], dict) else j["errors"]
assert j["requests"] > 100 and errs == 0, j' "$out"
}
load_tls() {
    timeout 60 "$VLOAD" -k -c 4 -n 200 "https://127.0.0.1:$TLS_PORT/hello.txt" >/dev/null
}

start_nginx "$ROOT" || exit 1
URL="http://127.0.0.1:$NGINX_PORT"
start_nginx "$ROOT" tls || exit 1
TLS_PORT="$NGINX_PORT"

check "vega-curl: 3 MB download identical" download
check "vega-curl: two URLs reuse one connection" keepalive
check "vega-curl: --compressed gzip decoded" gzip_decoded
check "vega-curl: -L follows 302" redirect
check "vega-curl: -I" head_req
check "vega-curl: Range header, 206 bytes" range_req
check "vega-curl: -f on 418 exits 22" fail_code
check "vega-curl: HTTPS with --cacert and --resolve" https_get
check "vega-load: -n 500 gives exactly 500 x 200" load_exact
check "vega-load: --pipeline 8" load_pipelined
check "vega-load: HTTPS" load_tls
finish
