#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Headless Chromium (Debian's) against vega-serve over http and https: it loads a page and a
# directory listing; the DOM must hold the expected text and the screenshot the page's colour.
# Usage: interop/http/chromium.sh [BUILD_DIR]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v chromium >/dev/null || skip_all "chromium is not installed"
PNG="$IOP_ROOT/interop/http/png_color.py"

ROOT="$WORK/site"
mkdir -p "$ROOT/files/sub dir"
cat >"$ROOT/index.html" <<'HTML'
<!doctype html>
<html><head><meta charset="utf-8"><title>vega interop</title>
<link rel="stylesheet" href="style.css"></head>
<body><h1 id="t">Served by vega</h1><p>caf&eacute; &#x2615;</p></body></html>
HTML
# The colour comes from a second request (the stylesheet), so the screenshot proves both loads.
printf 'body { margin: 0; background: #12ab34; }\n' >"$ROOT/style.css"
printf 'hello\n' >"$ROOT/files/a&b <i>.txt"
head -c 5000 /dev/zero >"$ROOT/files/zeros.bin"

# chrome URL ARGS...: runs headless Chromium once (its own profile, no sandbox: we are root in CI).
chrome() {
    local url="$1"
    shift
    timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$WORK/profile.$RANDOM" --ignore-certificate-errors \
        --window-size=640,480 "$@" "$url" 2>>"$WORK/chromium.log"
}

# page SCHEME: the page's DOM and its screenshot colour.
page() {
    local url="$1://127.0.0.1:$SERVE_PORT/" shot="$WORK/shot.$RANDOM.png" dom share
    dom="$(chrome "$url" --dump-dom)" || return 1
    grep -q 'Served by vega' <<<"$dom" || { echo "page text missing: $dom"; return 1; }
    grep -q 'café' <<<"$dom" || { echo "UTF-8 text mangled: $dom"; return 1; }
    chrome "$url" --screenshot="$shot" >/dev/null || return 1
    share="$(command -p python3 "$PNG" "$shot" 12ab34)" || return 1
    echo "share of #12ab34 pixels: $share"
    # The stylesheet paints the whole viewport but the heading's text.
    awk -v s="$share" 'BEGIN { exit !(s > 0.8) }'
}

# listing SCHEME: the listing of files/ shows both entries, names escaped (the DOM has the
# literal "<i>" as text, not as an element).
listing() {
    local url="$1://127.0.0.1:$SERVE_PORT/files/" dom
    dom="$(chrome "$url" --dump-dom)" || return 1
    grep -q 'a&amp;b &lt;i&gt;.txt' <<<"$dom" || { echo "escaped name missing: $dom"; return 1; }
    grep -q 'zeros.bin' <<<"$dom" || { echo "zeros.bin missing"; return 1; }
    grep -q 'sub dir' <<<"$dom" || { echo "sub dir missing"; return 1; }
}

start_vega_serve "$ROOT" || exit 1
check "chromium: page over http (DOM + screenshot)" page http
check "chromium: listing over http" listing http
iop_cleanup

start_vega_serve "$ROOT" --tls || exit 1
check "chromium: page over https (self-signed)" page https
check "chromium: listing over https" listing https
finish
