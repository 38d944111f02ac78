#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what is missing, builds vega-serve and runs it on a demo folder it prepares (an
# index.html, a text file, a 4 MiB file, a subfolder): it checks a few answers with curl, prints
# the URLs to try, and keeps serving until Ctrl-C. Without a terminal on stdin (scripts, CI) it
# stops after the check; --serve keeps it running anyway.
#
# Usage: scripts/demo.sh [--serve] [--check] [DIR]   Environment: VEGA_DEMO_PORT (default 8080)
# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

serve=auto
dir=
for a in "$@"; do
    case $a in
    --serve) serve=yes ;;
    --check) serve=no ;;
    -h | --help) sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown argument '$a'" ;;
    *) [ -z "$dir" ] || die "one DIR at most"; dir=$a ;;
    esac
done
if [ "$serve" = auto ]; then
    if [ -t 0 ]; then serve=yes; else serve=no; fi
fi

PORT=${VEGA_DEMO_PORT:-8080}
HOST=127.0.0.1

ensure_deps

log "building vega-serve and vega-curl in build/"
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$ROOT/build" -j"$JOBS" --target vega-serve vega-curl
SERVE_BIN=$ROOT/build/cli/vega-serve
[ -x "$SERVE_BIN" ] || die "no $SERVE_BIN after the build"

# A demo folder, unless one was given.
TMP=$(mktemp -d)
if [ -z "$dir" ]; then
    dir=$TMP/site
    mkdir -p "$dir/docs"
    cat >"$dir/index.html" <<'HTML'
<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>vega-serve demo</title></head>
<body><h1>Served by vega-serve</h1>
<ul><li><a href="hello.txt">hello.txt</a></li><li><a href="docs/">docs/ (a listing)</a></li>
<li><a href="big.bin">big.bin (4 MiB)</a></li></ul></body></html>
HTML
    printf 'hello from libvega\n' >"$dir/hello.txt"
    for i in $(seq 1 200); do echo "line $i: text files above 1 KiB are compressed on the fly"; done >"$dir/docs/notes.txt"
    cp "$ROOT/README.md" "$dir/docs/README.md"
    head -c $((4 << 20)) /dev/urandom >"$dir/big.bin"
fi

# A port already taken (an earlier demo still running, another service) is reported plainly.
if (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then
    rm -rf "$TMP"
    die "$HOST:$PORT is already in use; stop what listens there or set VEGA_DEMO_PORT"
fi

log "starting: vega-serve $dir $PORT"
"$SERVE_BIN" -b "$HOST" -p "$PORT" "$dir" &
PID=$!
cleanup() {
    kill "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Wait (up to 5 s) until it accepts connections.
for _ in $(seq 50); do
    if (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then break; fi
    kill -0 "$PID" 2>/dev/null || die "vega-serve exited before it listened"
    sleep 0.1
done

# Self-check: the index and a file come back as they are on disk.
URL=http://$HOST:$PORT
if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 5 -o /dev/null "$URL/" || die "self-check failed: GET $URL/"
    if [ -f "$dir/hello.txt" ]; then
        got=$(curl -fsS --max-time 5 "$URL/hello.txt") || die "self-check failed: GET /hello.txt"
        [ "$got" = "$(cat "$dir/hello.txt")" ] || die "self-check failed: /hello.txt differs"
    fi
    echo "self-check: GET / and /hello.txt answered as expected"
fi

CURL_BIN=$ROOT/build/cli/vega-curl
cat <<EOT

vega-serve is serving $dir on $URL/ (pid $PID).
Open $URL/ in a browser, or try from another shell:

    curl -i $URL/hello.txt                   # a file, with ETag and Last-Modified
    curl $URL/docs/                          # an HTML listing
    curl -H 'Accept: application/json' $URL/docs/
    curl -r 0-99 -o /dev/null -D - $URL/big.bin          # a range: 206
    curl --compressed -D - -o /dev/null $URL/docs/notes.txt   # br/zstd/gzip on the fly
    curl -I $URL/docs                        # 301 to docs/
    curl --path-as-is -i $URL/../etc/passwd  # refused: never outside the folder
EOT
if [ -x "$CURL_BIN" ]; then
    echo "    $CURL_BIN $URL/hello.txt   # libvega's own client"
else
    echo "    vega-curl $URL/hello.txt   # libvega's own client (cmake --build build --target vega-curl)"
fi
cat <<EOT
    $SERVE_BIN --help

EOT

if [ "$serve" = yes ]; then
    echo "Press Ctrl-C to stop."
    wait "$PID"
else
    echo "demo.sh: ok (not a terminal: stopping the server; run with --serve to keep it up)"
fi
