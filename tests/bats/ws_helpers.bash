# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What vega-curl-ws.bats, vega-curl-ws-h2.bats and vega-curl-ws-h3.bats share: peers started
# once per file, the echo check each protocol runs with its own options, and the skip of a
# peer that is not installed. Load it after helpers.

# ws_setup_file: CURL_BIN and SERVE (exported), an empty document root $BATS_FILE_TMPDIR/root,
# and $BATS_FILE_TMPDIR/big, a 300 KB binary file without newlines (each echoed message is
# printed with one).
ws_setup_file() {
    CURL_BIN="$(vega_bin vega-curl)"
    SERVE="$(vega_bin vega-serve)"
    export CURL_BIN SERVE
    mkdir -p "$BATS_FILE_TMPDIR/root"
    head -c 300000 /dev/urandom | tr '\n' 'x' >"$BATS_FILE_TMPDIR/big"
}

# start_peer NAME CMD...: starts a server in the background (its pid in
# $BATS_FILE_TMPDIR/NAME.pid, its output in NAME.log), waits (10 s at most) for a line matching
# $PEER_READY (default "listening"; HTTP/3 files wait for "HTTP/3 on udp") and prints the port
# its "listening" line names.
start_peer() {
    local name="$1" log="$BATS_FILE_TMPDIR/$1.log"
    shift
    ("$@" >"$log" 2>&1 3>&- </dev/null & echo $! >"$BATS_FILE_TMPDIR/$name.pid")
    local i
    for ((i = 0; i < 200; i++)); do
        grep -q "${PEER_READY:-listening}" "$log" 2>/dev/null && break
        sleep 0.05
    done
    sed -nE 's/.*listening( on [0-9.]+:| )([0-9]+)$/\2/p' "$log" | head -n1
}

# stop_peers: kills every peer start_peer started (teardown_file).
stop_peers() {
    local f
    for f in "$BATS_FILE_TMPDIR"/*.pid; do
        [ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true
    done
}

# need_peer PORT WHAT: a peer from VEGA_APT_PACKAGES (scripts/common.sh) that did not start
# (PORT empty) skips the test, and fails it under CI.
need_peer() {
    if [ -z "$1" ]; then
        [ -z "${CI:-}" ] || { echo "$2 missing" >&2; return 1; }
        skip "$2 not installed (scripts/common.sh installs it)"
    fi
}

# echo_both_ways URL [OPTIONS...]: text lines, then the large binary file, through the echo
# server at URL with the protocol's options (--http2, --http3-only, -k, --compressed ...).
echo_both_ways() {
    local url="$1"
    shift
    run timeout 20 bash -c 'printf "hello\nκόσμε\n\nlast\n" | "$CURL_BIN" -s "$@"' _ "$@" "$url"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "$(printf 'hello\nκόσμε\n\nlast')" ]
    timeout 20 "$CURL_BIN" -s --binary "$@" "$url" <"$BATS_FILE_TMPDIR/big" >"$BATS_TEST_TMPDIR/echo"
    [ "$(tr -d '\n' <"$BATS_TEST_TMPDIR/echo" | sha256sum)" = "$(sha256sum <"$BATS_FILE_TMPDIR/big")" ]
}
