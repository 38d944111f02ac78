# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers for the HTTP/3 interop harness (run.sh) and the relay's tests (relay-test.sh): build
# the impairment relay against the build folder's libvega.a and the quic-go peers offline from
# Debian's Go packages (both cached in $IOP_BUILD/interop-h3, rebuilt when their sources
# change), free UDP ports, the relay started and stopped, TAP lines.
#
# Source it from a script whose $1 (if any) is the build folder; it sets IOP_ROOT, IOP_BUILD,
# WORK (removed at exit), H3_DIR (this folder) and H3_CACHE.

IOP_AREA=h3
# shellcheck source=interop/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
H3_DIR="$IOP_ROOT/interop/h3"
H3_CACHE="$IOP_BUILD/interop-h3"
trap 'exit 130' INT TERM
export PATH="$PATH:/usr/sbin:/sbin"

# ---- TAP -----------------------------------------------------------------------------------------

# tap_ok NAME / tap_fail NAME WHY-FILE / tap_skip NAME WHY: one TAP line each.
tap_ok() {
    IOP_N=$((IOP_N + 1))
    echo "ok $IOP_N - $1"
}
tap_fail() {
    IOP_N=$((IOP_N + 1))
    IOP_FAILED=$((IOP_FAILED + 1))
    echo "not ok $IOP_N - $1"
    [ -n "${2:-}" ] && [ -f "$2" ] && sed 's/^/#   /' "$2" | tail -n "${H3_TAIL:-25}"
    return 0
}
tap_skip() {
    IOP_N=$((IOP_N + 1))
    echo "ok $IOP_N - $1 # SKIP $2"
}

# ---- builds --------------------------------------------------------------------------------------

# src_hash FILES...: one hash over the files' contents (and names).
src_hash() {
    cat "$@" | sha256sum | cut -c1-16
}

# build_relay: $H3_CACHE/relay from relay*.c against $IOP_BUILD/lib/libvega.a (public headers
# only); sets RELAY. Rebuilt when a source or the library changed. Exits 2 without libvega.a.
build_relay() {
    local lib="$IOP_BUILD/lib/libvega.a" reqs libs cc="${CC:-cc}" stamp want
    if [ ! -f "$lib" ]; then
        echo "interop: no $lib (build the vega_static target first, or pass the build folder)" >&2
        exit 2
    fi
    mkdir -p "$H3_CACHE"
    RELAY="$H3_CACHE/relay"
    want="$(src_hash "$H3_DIR"/relay*.c "$H3_DIR/relay.h" "$lib")"
    stamp="$H3_CACHE/relay.stamp"
    if [ -x "$RELAY" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    reqs="$(sed -n 's/^Requires.private: *//p' "$IOP_BUILD/vega.pc" 2>/dev/null)"
    libs=""
    if [ -n "$reqs" ] && command -v pkg-config >/dev/null 2>&1; then
        # shellcheck disable=SC2086
        libs="$(pkg-config --libs $reqs 2>/dev/null)"
    fi
    [ -n "$libs" ] || libs="-lssl -lcrypto -lz -lbrotlienc -lbrotlidec -lzstd -luring"
    case "$(sed -n 's/^VEGA_SANITIZE:[A-Z]*=//p' "$IOP_BUILD/CMakeCache.txt" 2>/dev/null)" in
    address) libs="$libs -fsanitize=address,undefined" ;;
    thread) libs="$libs -fsanitize=thread" ;;
    esac
    # shellcheck disable=SC2086
    if ! "$cc" -std=c17 -O2 -g -Wall -Wextra ${VEGA_PROBE_CFLAGS:-} -I "$IOP_ROOT/lib/include" \
        "$H3_DIR"/relay*.c "$lib" $libs -lpthread -lm -o "$RELAY.tmp" >"$WORK/cc.log" 2>&1; then
        echo "interop: the relay does not build:" >&2
        cat "$WORK/cc.log" >&2
        exit 1
    fi
    mv "$RELAY.tmp" "$RELAY"
    echo "$want" >"$stamp"
}

# quicgo_missing: why the quic-go peers cannot be built here, or nothing.
quicgo_missing() {
    command -v go >/dev/null 2>&1 || { echo "no go (Debian package golang-go)"; return; }
    [ -d /usr/share/gocode/src/github.com/lucas-clemente/quic-go/http3 ] ||
        echo "no quic-go sources (Debian package golang-github-lucas-clemente-quic-go-dev)"
}

# build_quicgo: $H3_CACHE/quicgo-server and quicgo-client, built offline in GOPATH mode from
# Debian's /usr/share/gocode. The sources sit in a GOPATH of symlinks under quic-go's own
# import path, so the client may set quic-go's internal key-update interval (as quic-go's own
# interop client does). Sets QUICGO_SERVER, QUICGO_CLIENT; returns 1 (with the log) on failure.
build_quicgo() {
    local gp="$H3_CACHE/gopath" q want stamp="$H3_CACHE/quicgo.stamp" e
    QUICGO_SERVER="$H3_CACHE/quicgo-server"
    QUICGO_CLIENT="$H3_CACHE/quicgo-client"
    want="$(src_hash "$H3_DIR"/quicgo/*.go /usr/share/gocode/src/github.com/lucas-clemente/quic-go/go.mod)"
    if [ -x "$QUICGO_SERVER" ] && [ -x "$QUICGO_CLIENT" ] &&
        [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    mkdir -p "$H3_CACHE"
    rm -rf "$gp"
    q="$gp/src/github.com/lucas-clemente/quic-go"
    mkdir -p "$q/vega-h3/server" "$q/vega-h3/client"
    for e in /usr/share/gocode/src/github.com/lucas-clemente/quic-go/*; do
        ln -s "$e" "$q/"
    done
    cp "$H3_DIR/quicgo/common.go" "$H3_DIR/quicgo/server.go" "$q/vega-h3/server/"
    cp "$H3_DIR/quicgo/common.go" "$H3_DIR/quicgo/client.go" "$q/vega-h3/client/"
    if ! (cd "$q/vega-h3" &&
        export GO111MODULE=off GOPATH="$gp:/usr/share/gocode" GOCACHE="$H3_CACHE/gocache" \
            GOFLAGS='' GOPROXY=off CGO_ENABLED=0 &&
        go build -o "$QUICGO_SERVER" ./server && go build -o "$QUICGO_CLIENT" ./client) \
        >"$WORK/go.log" 2>&1; then
        echo "interop: the quic-go peers do not build:"
        cat "$WORK/go.log"
        return 1
    fi
    echo "$want" >"$stamp"
}

# ---- ports, certificates, files ------------------------------------------------------------------

# free_udp_port [6]: a UDP port that was free a moment ago on 127.0.0.1 (or ::1).
free_udp_port() {
    command -p python3 -c 'import socket,sys
v6 = len(sys.argv) > 1 and sys.argv[1] == "6"
s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("::1" if v6 else "127.0.0.1", 0)); print(s.getsockname()[1])' "$@"
}

# wait_udp PORT [SECS]: waits until something is bound to UDP port PORT.
wait_udp() {
    local i
    for ((i = 0; i < ${2:-5} * 20; i++)); do
        if ss -Hlun "sport = :$1" 2>/dev/null | grep -q .; then
            return 0
        fi
        sleep 0.05
    done
    echo "nothing bound to UDP port $1 after ${2:-5}s"
    return 1
}

# ---- the relay -----------------------------------------------------------------------------------

# start_relay OUT ARGS...: the relay (--stats, bounded by --timeout-s, default 120) with ARGS,
# its stdout in OUT; sets RELAY_PORT and RELAY_PID once it listens.
start_relay() {
    local out="$1" i
    shift
    "$RELAY" --stats --timeout-s "${RELAY_TIMEOUT:-120}" "$@" >"$out" 2>&1 </dev/null &
    RELAY_PID=$!
    IOP_PIDS+=("$RELAY_PID")
    for ((i = 0; i < 100; i++)); do
        RELAY_PORT="$(sed -nE 's/^relay: listening on .*:([0-9]+) upstream .*/\1/p' "$out")"
        [ -n "$RELAY_PORT" ] && return 0
        kill -0 "$RELAY_PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "the relay did not start:"
    cat "$out"
    return 1
}

# stop_relay: SIGTERM to the relay and wait for its stats lines.
stop_relay() {
    [ -n "${RELAY_PID:-}" ] || return 0
    kill -TERM "$RELAY_PID" 2>/dev/null
    wait "$RELAY_PID" 2>/dev/null
    RELAY_PID=
}

# relay_stat OUT DIR KEY: a counter of the relay's "relay: stats DIR" line (DIR: to_server,
# to_client).
relay_stat() {
    sed -nE "s/^relay: stats $2 .*[ ]$3=([^ ]+).*/\\1/p" "$1" | head -n1
}
