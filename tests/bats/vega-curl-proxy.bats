#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-curl through real proxies (tests/proxy/peers.sh): dante (SOCKS5, SOCKS4), tinyproxy (HTTP
# CONNECT and forwarding, Basic auth and 407), ncat (a second HTTP proxy, with auth), and curl
# run with the same options as the reference: exit codes, bodies and -w output must match.
# The proxies are in VEGA_APT_PACKAGES: missing ones fail under CI, and skip by hand.

load helpers

PEERS="$BATS_TEST_DIRNAME/../proxy/peers.sh"

need() {
    if ! command -v "$1" >/dev/null; then
        [ -n "${CI:-}" ] && { echo "$1 missing (it is in VEGA_APT_PACKAGES)" >&2; return 1; }
        skip "$1 is not installed (apt-get install $2)"
    fi
}

setup_file() {
    W="$BATS_FILE_TMPDIR/www"
    mkdir -p "$W"
    echo hello-proxy >"$W/index.html"
    export W
}

setup() {
    CURL="$(vega_bin vega-curl)"
    SERVE="$(vega_bin vega-serve)"
    T="$BATS_TEST_TMPDIR"
}

teardown() {
    for d in "$T"/peer-*; do
        [ -d "$d" ] && "$PEERS" stop "$d"
    done
    stop_bg_all
}

# peer KIND: starts a proxy, sets PX to its port.
peer() {
    PX="$("$PEERS" start "$1" "$T/peer-$1")"
}

# origin [--tls]: vega-serve over $W on a free port; sets OP.
origin() {
    "$SERVE" -p 0 --no-http3 "$@" "$W" >"$T/serve.log" 2>&1 3>&- </dev/null &
    VEGA_BG_PIDS+=("$!")
    wait_for_line "$T/serve.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    OP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/serve.log" | head -1)"
}

# same ARGS...: vega-curl and curl with the same arguments give the same exit code and stdout.
same() {
    local a b ra rb
    a="$(timeout 20 "$CURL" "$@" 2>"$T/vc.err")" && ra=0 || ra=$?
    b="$(timeout 20 curl "$@" 2>"$T/curl.err")" && rb=0 || rb=$?
    echo "vega-curl: $ra [$a]; curl: $rb [$b]" >&2
    [ "$ra" = "$rb" ]
    [ "$a" = "$b" ]
    SAME_CODE=$ra
    SAME_OUT=$a
}

@test "socks5 and socks5h through dante: HTTP/2 over TLS inside the tunnel, as curl" {
    need danted dante-server
    origin --tls
    peer danted
    same -sk --socks5-hostname "127.0.0.1:$PX" -w ' %{http_code} %{http_version}' "https://localhost:$OP/index.html"
    [ "$SAME_OUT" = "hello-proxy
 200 2" ]
    # %{remote_ip} and %{remote_port} through a proxy are the proxy's, as curl says them
    same -sk -x "socks5://127.0.0.1:$PX" -w ' %{http_code} %{remote_ip} %{remote_port}' "https://localhost:$OP/index.html"
    [ "$SAME_OUT" = "hello-proxy
 200 127.0.0.1 $PX" ]
    same -sk --socks5 "127.0.0.1:$PX" -w ' %{http_code}' "https://localhost:$OP/index.html"
    same -sk -x "socks4://127.0.0.1:$PX" -w ' %{http_code}' "https://127.0.0.1:$OP/index.html"
}

@test "socks5: a refused destination is exit 97, as curl; -v shows the handshake" {
    need danted dante-server
    peer danted
    same -s -x "socks5h://127.0.0.1:$PX" http://127.0.0.1:1/
    [ "$SAME_CODE" = 97 ]
    run timeout 20 "$CURL" -sv -x "socks5://127.0.0.1:$PX" http://127.0.0.1:1/
    [ "$status" = 97 ]
    [[ "$output" == *"SOCKS5 connect to 127.0.0.1:1 (locally resolved)"* ]]
    [[ "$output" == *"SOCKS5 reply 5: Connection refused"* ]]
}

@test "tinyproxy: CONNECT and forwarding, %{http_connect}, as curl" {
    need tinyproxy tinyproxy
    origin
    peer tinyproxy
    same -s -x "127.0.0.1:$PX" -w ' %{http_code} %{http_connect}' "http://127.0.0.1:$OP/index.html"
    [ "$SAME_OUT" = "hello-proxy
 200 000" ]
    same -s -p -x "http://127.0.0.1:$PX" -w ' %{http_code} %{http_connect} %{remote_ip} %{remote_port}' "http://127.0.0.1:$OP/index.html"
    [ "$SAME_OUT" = "hello-proxy
 200 200 127.0.0.1 $PX" ]
    run timeout 20 "$CURL" -sv -p -x "127.0.0.1:$PX" "http://127.0.0.1:$OP/index.html"
    [ "$status" = 0 ]
    [[ "$output" == *"> CONNECT 127.0.0.1:$OP HTTP/1.1"* ]]
    [[ "$output" == *"< HTTP/1.0 200 Connection established"* ]]
    # tinyproxy answers 500 when the destination refuses: curl's 56
    same -s -p -x "127.0.0.1:$PX" -w ' %{http_connect}' http://127.0.0.1:1/
    [ "$SAME_CODE" = 56 ]
}

@test "tinyproxy with BasicAuth: 407 without credentials (56), 200 with -U or user@ in -x" {
    need tinyproxy tinyproxy
    origin --tls
    peer tinyproxy-auth
    same -sk -x "127.0.0.1:$PX" -w ' %{http_connect}' "https://localhost:$OP/index.html"
    [ "$SAME_CODE" = 56 ]
    [ "$SAME_OUT" = " 407" ]
    same -sk -U user:pass -x "127.0.0.1:$PX" -w ' %{http_connect} %{http_version}' "https://localhost:$OP/index.html"
    [ "$SAME_OUT" = "hello-proxy
 200 2" ]
    same -sk -x "http://user:pass@127.0.0.1:$PX" -w ' %{http_code}' "https://localhost:$OP/index.html"
    same -sk -x "http://user:wrong@127.0.0.1:$PX" -w ' %{http_connect}' "https://localhost:$OP/index.html"
    [ "$SAME_CODE" = 56 ]
}

@test "ncat as an HTTP proxy with auth: CONNECT and forwarding, as curl" {
    need ncat ncat
    origin
    peer ncat
    same -s -p -x "http://user:pass@127.0.0.1:$PX" -w ' %{http_connect}' "http://127.0.0.1:$OP/index.html"
    [ "$SAME_OUT" = "hello-proxy
 200" ]
    same -s -x "http://user:pass@127.0.0.1:$PX" -w ' %{http_code}' "http://127.0.0.1:$OP/index.html"
    same -s -p -x "http://127.0.0.1:$PX" -w ' %{http_connect}' "http://127.0.0.1:$OP/index.html"
    [ "$SAME_CODE" = 56 ]
}

@test "environment: http_proxy, not HTTP_PROXY; all_proxy; NO_PROXY and --noproxy; -x '' wins" {
    need tinyproxy tinyproxy
    origin
    peer tinyproxy
    local u="http://127.0.0.1:$OP/index.html"
    # a proxy that does not exist proves which one is used: exit 7 through it, 0 without
    export -n http_proxy HTTP_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
    HTTP_PROXY="http://127.0.0.1:1" same -s -w ' %{http_code}' "$u"
    [ "$SAME_CODE" = 0 ]
    http_proxy="http://127.0.0.1:1" same -s "$u"
    [ "$SAME_CODE" = 7 ]
    ALL_PROXY="http://127.0.0.1:1" same -s "$u"
    [ "$SAME_CODE" = 7 ]
    http_proxy="http://127.0.0.1:$PX" same -s -w ' %{http_code}' "$u"
    [ "$SAME_CODE" = 0 ]
    NO_PROXY="127.0.0.1" http_proxy="http://127.0.0.1:1" same -s "$u"
    [ "$SAME_CODE" = 0 ]
    http_proxy="http://127.0.0.1:1" same -s --noproxy 127.0.0.0/8 "$u"
    [ "$SAME_CODE" = 0 ]
    http_proxy="http://127.0.0.1:1" same -s -x "" "$u"
    [ "$SAME_CODE" = 0 ]
}

@test "a proxy name that does not resolve: 5 for HTTP, 6 for SOCKS, as curl" {
    same -s -x http://nosuch.invalid:1 http://127.0.0.1:1/
    [ "$SAME_CODE" = 5 ]
    same -s --socks5-hostname nosuch.invalid:1 http://127.0.0.1:1/
    [ "$SAME_CODE" = 6 ]
}
