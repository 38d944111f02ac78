#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vega-curl against Caddy's file_server (Debian's caddy, started here on loopback): downloads,
# keep-alive reuse, HEAD, conditional revalidation, redirects of a directory, listings, and
# compressed responses (Caddy's encode directive). Usage: interop/http/caddy.sh [BUILD_DIR]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v caddy >/dev/null || skip_all "caddy is not installed"
VCURL="$(vega_tool vega-curl)" || exit 2

ROOT="$WORK/site"
mkdir -p "$ROOT/dir"
head -c 2000000 /dev/urandom >"$ROOT/big.bin"
seq 1 30000 >"$ROOT/numbers.txt"
printf 'in dir\n' >"$ROOT/dir/x.txt"
CADDY_EXTRA='encode zstd gzip'

VC=("$VCURL" -sS -m 20)

download() {
    "${VC[@]}" -o "$WORK/big.out" "$URL/big.bin" && cmp "$WORK/big.out" "$ROOT/big.bin"
}
keepalive() {
    local err="$WORK/ka.err"
    "${VC[@]}" -v -o /dev/null -o /dev/null "$URL/big.bin" "$URL/numbers.txt" 2>"$err" || return 1
    grep -qi 're-using' "$err" || { cat "$err"; return 1; }
}
compressed() {
    "${VC[@]}" --compressed -o "$WORK/n.txt" "$URL/numbers.txt" && cmp "$WORK/n.txt" "$ROOT/numbers.txt"
}
dir_redirect() {
    local code
    code="$("${VC[@]}" -o /dev/null -w '%{http_code}' "$URL/dir")" || return 1
    [ "$code" = 308 ] || [ "$code" = 301 ] || { echo "status $code"; return 1; }
    # Read all before matching: grep -q would stop early and break vega-curl's pipe (exit 23).
    local page
    page="$("${VC[@]}" -L "$URL/dir")" || return 1
    grep -q 'x.txt' <<<"$page"
}
revalidate() {
    local etag code
    etag="$("${VC[@]}" -I "$URL/numbers.txt" | tr -d '\r' | sed -n 's/^[Ee][Tt][Aa][Gg]: //p')"
    [ -n "$etag" ] || { echo "no ETag"; return 1; }
    code="$("${VC[@]}" -H "If-None-Match: $etag" -o /dev/null -w '%{http_code}' "$URL/numbers.txt")"
    [ "$code" = 304 ] || { echo "status $code"; return 1; }
}
write_out() {
    local out
    out="$("${VC[@]}" -o /dev/null -w '%{http_code} %{size_download} %{http_version}' "$URL/big.bin")"
    [ "$out" = "200 2000000 1.1" ] || { echo "got: $out"; return 1; }
}

start_caddy "$ROOT" || exit 1
URL="http://127.0.0.1:$CADDY_PORT"
check "vega-curl: 2 MB download identical" download
check "vega-curl: two URLs reuse one connection" keepalive
check "vega-curl: --compressed (zstd or gzip) decoded" compressed
check "vega-curl: directory redirect and listing" dir_redirect
check "vega-curl: ETag revalidation gives 304" revalidate
check "vega-curl: -w http_code size_download http_version" write_out
finish
