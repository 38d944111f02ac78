#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-curl over HTTP/3 through a SOCKS5 UDP ASSOCIATE relay (RFC 1928 section 7; curl cannot):
# vega-serve --tls (HTTP/3 on its UDP port) as the origin, vega-proxy and dante
# (tests/proxy/peers.sh danted-udp) as relays, all on loopback: a 5 MB download's sha256
# through socks5:// and socks5h://, -v naming the relay, WebSocket over HTTP/3 (wss://), RFC 1929
# credentials, the proxy killed mid-transfer (the control connection's close ends the
# association: 56 with its reason), a proxy that refuses UDP ASSOCIATE (exit 97), and HTTP or
# SOCKS4 proxies (--http3-only: 97; --http3: TCP through the proxy).

load helpers

PEERS="$BATS_TEST_DIRNAME/../proxy/peers.sh"

setup_file() {
    W="$BATS_FILE_TMPDIR/www"
    mkdir -p "$W"
    echo hello-h3-socks >"$W/index.html"
    head -c $((5 * 1024 * 1024 + 777)) /dev/urandom >"$W/big.bin"
    export W
}

setup() {
    CURL="$(vega_bin vega-curl)"
    SERVE="$(vega_bin vega-serve)"
    PROXY="$(vega_bin vega-proxy)"
    T="$BATS_TEST_TMPDIR"
}

teardown() {
    for d in "$T"/peer-*; do
        [ -d "$d" ] && "$PEERS" stop "$d"
    done
    stop_bg_all
}

vc() {
    timeout 60 "$CURL" "$@"
}

# origin [ARGS...]: vega-serve --tls over $W (HTTP/3 on the same port number over UDP); sets OP.
origin() {
    start_bg "$T/serve.log" "$SERVE" -p 0 --tls "$@" "$W"
    wait_for_line "$T/serve.log" 'HTTP/3 on udp 127\.0\.0\.1:[0-9]+' 10
    OP="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$T/serve.log" | head -n1)"
}

# vproxy ARGS...: vega-proxy on a free loopback port; sets PX and PX_PID.
vproxy() {
    start_bg "$T/proxy.log" "$PROXY" -l 127.0.0.1:0 "$@"
    PX_PID=$BG_PID
    wait_for_line "$T/proxy.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    PX="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/proxy.log" | head -1)"
}

# peer KIND: dante from peers.sh (danted: CONNECT only; danted-udp: UDP ASSOCIATE too); sets PX.
peer() {
    command -v danted >/dev/null || skip "danted is not installed (dante-server)"
    PX="$("$PEERS" start "$1" "$T/peer-$1")"
}

@test "--http3-only through vega-proxy, socks5:// and socks5h://: 5 MB sha256; -v shows the relay" {
    origin
    vproxy
    run vc -sS -k --http3-only -x "socks5://127.0.0.1:$PX" -o "$T/a.bin" \
        -w '%{http_version}' "https://localhost:$OP/big.bin"
    [ "$status" -eq 0 ]
    [ "$output" = 3 ]
    [ "$(sha256sum <"$T/a.bin")" = "$(sha256sum <"$W/big.bin")" ]
    run vc -sS -k --http3-only -x "socks5h://127.0.0.1:$PX" -o "$T/b.bin" \
        -w '%{http_version}' "https://localhost:$OP/big.bin"
    [ "$status" -eq 0 ]
    [ "$output" = 3 ]
    [ "$(sha256sum <"$T/b.bin")" = "$(sha256sum <"$W/big.bin")" ]
    run vc -sv -k --http3-only -x "socks5h://127.0.0.1:$PX" "https://localhost:$OP/index.html"
    [ "$status" -eq 0 ]
    [[ "$output" == *"hello-h3-socks"* ]]
    [[ "$output" == *"SOCKS5 UDP associate (datagrams to localhost)"* ]]
    [[ "$output" =~ \*\ UDP\ relay\ at\ 127\.0\.0\.1:[0-9]+ ]]
    [[ "$output" == *"QUIC: connected to localhost port $OP through the proxy's UDP relay"* ]]
    run vc -sv -k --http3-only -x "socks5://127.0.0.1:$PX" "https://localhost:$OP/index.html"
    [ "$status" -eq 0 ]
    [[ "$output" == *"QUIC: connected to localhost port $OP through the proxy's UDP relay"* ]]
    # %{remote_ip} is empty for HTTP/3 through the relay (a TCP connection through a proxy says
    # the proxy's, as curl does; curl has no HTTP/3 through proxies to compare with)
    run vc -s -k --http3-only -x "socks5h://127.0.0.1:$PX" -o /dev/null \
        -w '[%{remote_ip}] %{remote_port}' "https://localhost:$OP/index.html"
    [ "$output" = "[] 0" ]
    # the proxy saw one UDP association per run (its access log)
    wait_for_line "$T/proxy.log" 'socks5 UDP 127\.0\.0\.1:[0-9]+ .*result=ok' 5
}

@test "WebSocket over HTTP/3 (RFC 9220) through the relay: wss:// echoes" {
    origin --ws-echo /ws
    vproxy
    run timeout 20 bash -c 'echo hi-ws | "$0" -v -k --http3-only -x "socks5h://127.0.0.1:$1" \
        "wss://localhost:$2/ws" 2>&1' "$CURL" "$PX" "$OP"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"UDP relay at 127.0.0.1:"* ]]
    [[ "$output" == *"> CONNECT /ws HTTP/3"* && "$output" == *"< HTTP/3 200"* ]]
    [[ "$output" == *$'\nhi-ws\n'* ]]
    [[ "$output" == *"closed by the server: code 1000"* ]]
}

@test "credentials (RFC 1929) for the UDP ASSOCIATE: -U works, a wrong password is 97" {
    origin
    vproxy -u alice -P s3cret
    run vc -sS -k --http3-only -U alice:s3cret -x "socks5h://127.0.0.1:$PX" \
        -w ' %{http_version}' "https://localhost:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = "hello-h3-socks
 3" ]
    run vc -sS -k --http3-only -x "socks5://alice:wrong@127.0.0.1:$PX" \
        "https://localhost:$OP/index.html"
    [ "$status" -eq 97 ]
    [[ "$output" == *"proxy authentication failed (SOCKS)"* ]]
}

@test "--http3-only through dante's UDP relay (danted-udp): sha256 matches" {
    origin
    peer danted-udp
    run vc -sS -k --http3-only -x "socks5://127.0.0.1:$PX" -o "$T/d.bin" \
        -w '%{http_version}' "https://127.0.0.1:$OP/big.bin"
    [ "$status" -eq 0 ]
    [ "$output" = 3 ]
    [ "$(sha256sum <"$T/d.bin")" = "$(sha256sum <"$W/big.bin")" ]
}

@test "the association ends with its control connection: the transfer fails at once (56)" {
    origin
    vproxy
    # slow enough to be mid-transfer when the proxy dies (25 s at this rate)
    timeout 60 "$CURL" -sS -k --http3-only --limit-rate 200000 -x "socks5://127.0.0.1:$PX" \
        -o "$T/part.bin" "https://localhost:$OP/big.bin" >"$T/curl.log" 2>&1 3>&- &
    local cpid=$! i
    for ((i = 0; i < 400; i++)); do
        [ -s "$T/part.bin" ] && break
        sleep 0.05
    done
    [ -s "$T/part.bin" ]
    # the kernel closes the control connection (and the relay): the socket reports it, the QUIC
    # connection ends without waiting for its idle timeout
    kill -9 "$PX_PID"
    local rc=0
    wait "$cpid" || rc=$?
    cat "$T/curl.log"
    [ "$rc" -eq 56 ]
    grep -q 'vega-curl: (56) .*(SOCKS5 UDP association ended)' "$T/curl.log"
    [ "$(stat -c %s "$T/part.bin")" -lt $((5 * 1024 * 1024)) ]
}

@test "a SOCKS5 proxy that refuses UDP ASSOCIATE: exit 97, the reply named" {
    origin
    peer danted
    run vc -sS -k --http3-only -x "socks5://127.0.0.1:$PX" "https://127.0.0.1:$OP/index.html"
    [ "$status" -eq 97 ]
    [[ "$output" == *"vega-curl: "*"Can't complete SOCKS connection to the destination (reply "* ]]
}

@test "HTTP and SOCKS4 proxies cannot carry HTTP/3: --http3-only exit 97, --http3 falls back to TCP" {
    origin
    vproxy
    run vc -sS -k --http3-only -x "http://127.0.0.1:$PX" "https://127.0.0.1:$OP/index.html"
    [ "$status" -eq 97 ]
    [[ "$output" == *"HTTP/3 is not supported through an HTTP or SOCKS4 proxy"* ]]
    run vc -sS -k --http3-only -x "socks4://127.0.0.1:$PX" "https://127.0.0.1:$OP/index.html"
    [ "$status" -eq 97 ]
    run vc -sS -k --http3 -x "http://127.0.0.1:$PX" -w ' %{http_version}' \
        "https://127.0.0.1:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = "hello-h3-socks
 2" ]
}
