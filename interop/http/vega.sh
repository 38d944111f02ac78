#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libvega against itself, as users would combine the tools: vega-curl and vega-load against
# vega-serve over http and https (keep-alive reuse, compressed, ranges, conditional, HEAD,
# redirects, uploads refused, exact request counts). Usage: interop/http/vega.sh [BUILD_DIR]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VCURL="$(vega_tool vega-curl)" || exit 2
VLOAD="$(vega_tool vega-load)" || exit 2

ROOT="$WORK/site"
mkdir -p "$ROOT/dir"
head -c 3000000 /dev/urandom >"$ROOT/big.bin"
seq 1 30000 >"$ROOT/numbers.txt"
printf 'in dir\n' >"$ROOT/dir/x.txt"
printf 'small\n' >"$ROOT/s.txt"

VC=("$VCURL" -sS -m 20)

download() {
    "${VC[@]}" -o "$WORK/big.out" "$URL/big.bin" && cmp "$WORK/big.out" "$ROOT/big.bin"
}
keepalive() {
    local err="$WORK/ka.err"
    "${VC[@]}" -v -o /dev/null -o /dev/null "$URL/s.txt" "$URL/numbers.txt" 2>"$err" || return 1
    grep -qi 're-using' "$err" || { cat "$err"; return 1; }
}
compressed() {
    "${VC[@]}" --compressed -o "$WORK/n.txt" "$URL/numbers.txt" && cmp "$WORK/n.txt" "$ROOT/numbers.txt"
}
ranged() {
    "${VC[@]}" -H 'Range: bytes=1000-1999' -o "$WORK/r.bin" -w '%{http_code}' "$URL/big.bin" |
        grep -qx 206 && cmp "$WORK/r.bin" <(head -c 2000 "$ROOT/big.bin" | tail -c 1000)
}
conditional() {
    local etag code
    etag="$("${VC[@]}" -I "$URL/numbers.txt" | tr -d '\r' | sed -n 's/^[Ee][Tt][Aa][Gg]: //p')"
    [ -n "$etag" ] || { echo "no ETag"; return 1; }
    code="$("${VC[@]}" -H "If-None-Match: $etag" -o /dev/null -w '%{http_code}' "$URL/numbers.txt")"
    [ "$code" = 304 ] || { echo "status $code"; return 1; }
}
redirect() {
    # Read all before matching: grep -q would stop early and break vega-curl's pipe (exit 23).
    local page
    page="$("${VC[@]}" -L "$URL/dir")" || return 1
    grep -q 'x.txt' <<<"$page"
}
put_refused() {
    local code
    code="$("${VC[@]}" -T "$ROOT/s.txt" -o /dev/null -w '%{http_code}' "$URL/up.txt")"
    [ "$code" = 405 ] || { echo "status $code"; return 1; }
}
load_exact() {
    local out
    out="$(timeout 60 "$VLOAD" "${LOAD_TLS[@]}" -c 8 -n 400 --json "$URL/s.txt")" || return 1
    command -p python3 -c '
import json, sys
j = json.loads(sys.argv[1])
assert j["requests"] == 400 and j["status"].get("200") == 400, j' "$out"
}
load_pipelined() {
    local out
    out="$(timeout 60 "$VLOAD" "${LOAD_TLS[@]}" -c 4 --pipeline 8 -n 2000 --json "$URL/s.txt")" || return 1
    command -p python3 -c '
import json, sys
j = json.loads(sys.argv[1])
assert j["requests"] == 2000 and j["errors"] == 0, j' "$out"
}

for scheme in http https; do
    iop_cleanup
    if [ $scheme = https ]; then
        start_vega_serve "$ROOT" --tls || exit 1
        VC=("$VCURL" -sS -m 20 -k)
        LOAD_TLS=(-k)
    else
        start_vega_serve "$ROOT" || exit 1
        LOAD_TLS=()
    fi
    URL="$scheme://127.0.0.1:$SERVE_PORT"
    check "$scheme: vega-curl 3 MB download identical" download
    check "$scheme: vega-curl reuses one connection for two URLs" keepalive
    check "$scheme: vega-curl --compressed decodes vega-serve's compression" compressed
    check "$scheme: vega-curl Range gives the bytes (206)" ranged
    check "$scheme: vega-curl If-None-Match gives 304" conditional
    check "$scheme: vega-curl -L follows the directory redirect" redirect
    check "$scheme: vega-curl -T is refused with 405" put_refused
    check "$scheme: vega-load -n 400 gives exactly 400 x 200" load_exact
    check "$scheme: vega-load --pipeline 8 -n 2000, no errors" load_pipelined
done
finish
