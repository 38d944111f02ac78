#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Headless Chromium (Debian's) against vega-serve over http and https: it loads a page and a
# directory listing; the DOM must hold the expected text and the screenshot the page's colour.
# Over https Chromium speaks HTTP/2 (ALPN h2): a page fetches files in parallel on the one
# connection and reports each one's SHA-256 and the protocol (nextHopProtocol must be h2).
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
head -c 300000 /dev/urandom >"$ROOT/files/r1.bin"
head -c 3000000 /dev/urandom >"$ROOT/files/r2.bin"
seq 1 20000 >"$ROOT/files/n.txt"
# The page fetches its files at once (streams on one connection) and writes what it got.
cat >"$ROOT/h2.html" <<'HTML'
<!doctype html><html><head><meta charset="utf-8"><title>h2</title></head>
<body><pre id="out">pending</pre><script>
async function hex(b) {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', b));
  return Array.from(d).map(x => x.toString(16).padStart(2, '0')).join('');
}
async function one(f) {
  try {
    const r = await fetch(f, {cache: 'no-store'});
    const b = await r.arrayBuffer();
    return 'file ' + f + ' ' + r.status + ' ' + b.byteLength + ' ' + await hex(b);
  } catch (e) { return 'file ' + f + ' error ' + e; }
}
(async () => {
  const files = ['files/r1.bin', 'files/r2.bin', 'files/n.txt', 'style.css'];
  const lines = await Promise.all(files.concat(files).map(one));
  lines.push('nav ' + performance.getEntriesByType('navigation')[0].nextHopProtocol);
  const protos = {};
  for (const e of performance.getEntriesByType('resource')) protos[e.nextHopProtocol] = 1;
  lines.push('resources ' + Object.keys(protos).join(','));
  lines.push('done');
  document.getElementById('out').textContent = lines.join('\n');
})();
</script></body></html>
HTML
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

# sorted_listing: files/sub dir/ sorted by size, largest first, with the archive links on: the
# DOM has the breadcrumbs, the parent link, the sort links (Size flips to ascending), the
# three archive links and the rows in size order; the screenshot is a 640x480 PNG (IHDR) with
# text on it (neither blank nor one colour).
sorted_listing() {
    local url="http://127.0.0.1:$SERVE_PORT/files/sub%20dir/?sort=size&order=desc"
    local dom shot="${VEGA_LISTING_SHOT:-$WORK/listing.png}" want white
    dom="$(chrome "$url" --dump-dom)" || return 1
    for want in '<h1>Index of <a href="../../">/</a><a href="../">files/</a>sub dir/</h1>' \
        '<a href="../">../</a>' 'href="?sort=name&amp;order=asc"' \
        'href="?sort=size&amp;order=asc"' 'href="?sort=mtime&amp;order=asc"' \
        'href="?download=tar"' 'href="?download=tar.gz"' 'href="?download=zip"'; do
        grep -qF -- "$want" <<<"$dom" || { echo "missing in the DOM: $want"; echo "$dom"; return 1; }
    done
    # the rows, largest first
    [ "$(grep -oE '(big|mid|small)\.txt</a>' <<<"$dom" | tr -d '\n')" = \
        'big.txt</a>mid.txt</a>small.txt</a>' ] || { echo "rows not by size: $dom"; return 1; }
    chrome "$url" --screenshot="$shot" >/dev/null || return 1
    command -p python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n" and d[12:16] == b"IHDR", "not a PNG"
w, h = struct.unpack(">II", d[16:24])
assert (w, h) == (640, 480), "size %dx%d" % (w, h)
print("PNG %dx%d" % (w, h))
' "$shot" || return 1
    white="$(command -p python3 "$PNG" "$shot" ffffff)" || return 1
    echo "share of white pixels: $white"
    awk -v s="$white" 'BEGIN { exit !(s > 0.5 && s < 0.995) }'
}

mkdir -p "$ROOT/files/sub dir"
head -c 5000 /dev/zero >"$ROOT/files/sub dir/big.txt"
head -c 100 /dev/zero >"$ROOT/files/sub dir/mid.txt"
printf 'x' >"$ROOT/files/sub dir/small.txt"
start_vega_serve "$ROOT" --tar --tar-gz --zip || exit 1
check "chromium: page over http (DOM + screenshot)" page http
check "chromium: listing over http" listing http
check "chromium: sorted listing with breadcrumbs and archive links (DOM + screenshot)" sorted_listing
iop_cleanup

# h2page: h2.html over https; every file whole (size and SHA-256) and everything over h2.
h2page() {
    local dom="$WORK/h2dom.$RANDOM"
    chrome "https://127.0.0.1:$SERVE_PORT/h2.html" --virtual-time-budget=30000 --dump-dom \
        >"$dom" || return 1
    command -p python3 - "$ROOT" "$dom" <<'PY'
import hashlib, html, os, re, sys
m = re.search(r'<pre id="out">(.*?)</pre>', open(sys.argv[2]).read(), re.S)
lines = html.unescape(m.group(1)).splitlines() if m else []
bad = [] if "done" in lines else ["the page did not finish: %r" % lines[:3]]
if "nav h2" not in lines:
    bad.append("navigation not over h2: %s" % [l for l in lines if l.startswith("nav")])
if "resources h2" not in lines:
    bad.append("resources not all over h2: %s" % [l for l in lines if l.startswith("resources")])
files = [l.split() for l in lines if l.startswith("file ")]
for f in files:
    data = open(os.path.join(sys.argv[1], f[1]), "rb").read()
    if f[2:] != ["200", str(len(data)), hashlib.sha256(data).hexdigest()]:
        bad.append("%s: %s" % (f[1], " ".join(f[2:])))
if len(files) != 8:
    bad.append("%d files reported, not 8" % len(files))
print("\n".join(bad) if bad else "8 fetches whole, navigation and resources over h2")
sys.exit(1 if bad else 0)
PY
}

# HTTP/3 off: Alt-Svc would move later loads to QUIC
start_vega_serve "$ROOT" --tls --no-http3 || exit 1
check "chromium: page over https (self-signed)" page https
check "chromium: listing over https" listing https
check "chromium: HTTP/2 (ALPN h2): parallel fetches byte-exact, nextHopProtocol h2" h2page
iop_cleanup

# --no-http2: the same page over http/1.1
start_vega_serve "$ROOT" --tls --no-http3 --no-http2 || exit 1
h1page() {
    local dom
    dom="$(chrome "https://127.0.0.1:$SERVE_PORT/h2.html" --virtual-time-budget=30000 --dump-dom)" ||
        return 1
    grep -q 'nav http/1.1' <<<"$dom" || { echo "not http/1.1: $(grep -o 'nav [^<]*' <<<"$dom")"; return 1; }
}
check "chromium: --no-http2 gives http/1.1" h1page
finish
