#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-proxy --metrics: the Prometheus listener. Python clients (vega-proxy-metrics.py) make
# SOCKS5, SOCKS4, HTTP CONNECT and UDP ASSOCIATE requests through vega-proxy to vega-echo,
# curl a forwarded request to a closed port; the scrape is parsed by the real Prometheus
# parser (Debian's python3-prometheus-client) and every proxy counter must move by exactly what
# was done (tunnels by kind, bytes each way, auth failures, rule denials, connect failures,
# handshakes), the active gauge must show a held tunnel and drop back. A metrics address that
# is not loopback is refused without --metrics-public. Loopback only, ephemeral ports.

load helpers

PY=/usr/bin/python3 # Debian's, with python3-prometheus-client (the first python3 on PATH may be another)

setup() {
    PROXY="$(vega_bin vega-proxy)"
    ECHO="$(vega_bin vega-echo)"
    T="$BATS_TEST_TMPDIR"
    C=("$PY" "$BATS_TEST_DIRNAME/vega-proxy-metrics.py")
}

teardown() {
    stop_bg_all
}

# proxy ARGS...: vega-proxy with --metrics on free ports; sets PX (its port), MURL and PX_PID.
proxy() {
    start_bg "$T/proxy.log" "$PROXY" -l 127.0.0.1:0 --metrics 127.0.0.1:0 "$@"
    PX_PID=$BG_PID
    wait_for_line "$T/proxy.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    PX="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/proxy.log" | head -1)"
    MURL="$(sed -nE 's|.*metrics on (http://[0-9.]+:[0-9]+/metrics)$|\1|p' "$T/proxy.log" | head -1)"
    [ -n "$PX" ]
    [ -n "$MURL" ]
}

# echo_server: vega-echo on a free port; sets EP.
echo_server() {
    start_bg "$T/echo.log" "$ECHO" -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
}

closed_port() {
    "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

need_parser() {
    "$PY" -c 'from prometheus_client.parser import text_string_to_metric_families' 2>/dev/null ||
        skip "python3-prometheus-client is not installed"
}

@test "counters move by exactly the tunnels made, failed and refused" {
    need_parser
    echo_server
    local cp
    cp="$(closed_port)"
    proxy -u alice -P secret --allow 127.0.0.1/32 --deny-dest "127.0.0.1:$cp"
    run "${C[@]}" snapshot "$MURL" "$T/before.json"
    [ "$status" -eq 0 ] || { echo "$output"; false; }

    run "${C[@]}" socks5 "$PX" alice secret "$EP" 1000
    [ "$output" = 0 ]
    run "${C[@]}" socks5 "$PX" alice secret "$EP" 3000
    [ "$output" = 0 ]
    run "${C[@]}" connect "$PX" alice secret "$EP" 500
    [ "$output" = 200 ]
    # credentials: a wrong password, and SOCKS4 (no password) while users are required
    run "${C[@]}" socks5 "$PX" alice wrong "$EP" 1
    [ "$output" = auth ]
    run "${C[@]}" socks4 "$PX" "$EP"
    [ "$output" = 91 ]
    # --deny-dest, and --allow refusing a client from 127.0.0.2
    run "${C[@]}" socks5 "$PX" alice secret "$cp" 1
    [ "$output" = 2 ]
    run "${C[@]}" from 127.0.0.2 "$PX"
    [ "$output" = closed ]
    # a forwarded request whose origin refuses the connection
    run curl -sS -o /dev/null -w '%{http_code}' -x "http://alice:secret@127.0.0.1:$PX" "http://127.0.0.2:$cp/x"
    [ "$output" = 502 ]
    run "${C[@]}" udp "$PX" alice secret
    [ "$output" = 0 ]

    run "${C[@]}" expect "$MURL" "$T/before.json" \
        'vega_proxy_tunnels_total{kind="socks5"}=3' \
        'vega_proxy_tunnels_total{kind="socks4"}=1' \
        'vega_proxy_tunnels_total{kind="connect"}=1' \
        'vega_proxy_tunnels_total{kind="forward"}=1' \
        'vega_proxy_tunnels_total{kind="udp"}=1' \
        'vega_proxy_tunnels_active{kind="socks5"}==0' \
        'vega_proxy_tunnels_active{kind="udp"}==0' \
        'vega_proxy_connections_total=8' \
        'vega_proxy_connections_active==0' \
        'vega_proxy_bytes_total{direction="up"}=4500' \
        'vega_proxy_bytes_total{direction="down"}=4500' \
        'vega_proxy_auth_failures_total=2' \
        'vega_proxy_denied_total{rule="destination"}=1' \
        'vega_proxy_denied_total{rule="client"}=1' \
        'vega_proxy_connect_failures_total{reason="refused"}=1' \
        'vega_proxy_handshake_seconds_count=3'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "a UDP datagram refused by --deny-dest counts as a destination denial" {
    need_parser
    start_bg "$T/echo.log" "$ECHO" -u -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on udp 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
    proxy --deny-dest 127.0.0.2
    run "${C[@]}" snapshot "$MURL" "$T/before.json"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    # one datagram to 127.0.0.2 (dropped), then one to the echo (answered)
    run timeout 30 "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" --deny "$PX" "$EP" 127.0.0.2
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    run "${C[@]}" expect "$MURL" "$T/before.json" \
        'vega_proxy_tunnels_total{kind="udp"}=1' \
        'vega_proxy_tunnels_active{kind="udp"}==0' \
        'vega_proxy_connections_total=1' \
        'vega_proxy_denied_total{rule="destination"}=1' \
        'vega_proxy_udp_dropped_total{reason="destination"}=1' \
        'vega_proxy_udp_dropped_total{reason="fragment"}=0' \
        'vega_proxy_bytes_total{direction="up"}=7' \
        'vega_proxy_bytes_total{direction="down"}=7'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "UDP datagrams dropped are counted by reason: a fragment (FRAG != 0, RFC 1928 section 7), a malformed header" {
    need_parser
    start_bg "$T/echo.log" "$ECHO" -u -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on udp 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
    proxy
    run "${C[@]}" snapshot "$MURL" "$T/before.json"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    # a malformed header (an IPv4 address cut short) and two fragments (FRAG 2, and 0x81: the
    # last of a sequence), then a good datagram whose echo, the first answer, proves the three
    # went first and were not relayed
    run timeout 30 "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" --junk "$PX" "$EP"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [ "$output" = ok ]
    run "${C[@]}" expect "$MURL" "$T/before.json" \
        'vega_proxy_udp_dropped_total{reason="fragment"}=2' \
        'vega_proxy_udp_dropped_total{reason="header"}=1' \
        'vega_proxy_udp_dropped_total{reason="source"}=0' \
        'vega_proxy_udp_dropped_total{reason="destination"}=0' \
        'vega_proxy_tunnels_total{kind="udp"}=1' \
        'vega_proxy_tunnels_active{kind="udp"}==0' \
        'vega_proxy_connections_total=1' \
        'vega_proxy_bytes_total{direction="up"}=4' \
        'vega_proxy_bytes_total{direction="down"}=4'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "the active gauge shows a held tunnel, and drops when it closes" {
    need_parser
    echo_server
    proxy
    run "${C[@]}" snapshot "$MURL" "$T/before.json"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    mkfifo "$T/go"
    start_bg "$T/hold.log" "${C[@]}" hold "$PX" - - "$EP" "$T/go"
    wait_for_line "$T/hold.log" '^open$' 10
    run "${C[@]}" expect "$MURL" "$T/before.json" \
        'vega_proxy_tunnels_total{kind="socks5"}=1' \
        'vega_proxy_tunnels_active{kind="socks5"}==1' \
        'vega_proxy_connections_active==1' \
        'vega_proxy_connections_total=1' \
        'vega_proxy_bytes_total{direction="up"}=16' \
        'vega_proxy_bytes_total{direction="down"}=16' \
        'vega_proxy_handshake_seconds_count=1'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    echo go >"$T/go"
    run "${C[@]}" expect "$MURL" "$T/before.json" \
        'vega_proxy_tunnels_total{kind="socks5"}=1' \
        'vega_proxy_tunnels_active{kind="socks5"}==0' \
        'vega_proxy_connections_active==0' \
        'vega_proxy_connections_total=1' \
        'vega_proxy_bytes_total{direction="up"}=16' \
        'vega_proxy_bytes_total{direction="down"}=16' \
        'vega_proxy_handshake_seconds_count=1'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "a metrics address beyond loopback needs --metrics-public; a bad one is a usage error" {
    run "$PROXY" -l 127.0.0.1:0 --metrics 0.0.0.0:0
    [ "$status" -eq 2 ]
    [[ "$output" == *"not a loopback address"* ]]
    run "$PROXY" -l 127.0.0.1:0 --metrics nonsense
    [ "$status" -eq 2 ]
    run "$PROXY" --metrics-public
    [ "$status" -eq 2 ]
    [[ "$output" == *"needs --metrics"* ]]
    start_bg "$T/p.log" "$PROXY" -l 127.0.0.1:0 --metrics 0.0.0.0:0 --metrics-public
    wait_for_line "$T/p.log" 'metrics on http://0\.0\.0\.0:[0-9]+/metrics' 10
    wait_for_line "$T/p.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    run curl -sS -o /dev/null -w '%{http_code}' "$(sed -nE 's|.*metrics on http://0\.0\.0\.0:([0-9]+)/metrics$|http://127.0.0.1:\1/nope|p' "$T/p.log" | head -1)"
    [ "$output" = 404 ]
}
