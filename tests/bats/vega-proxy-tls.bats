#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-proxy as an HTTPS proxy (-l tls://ADDR:PORT --tls-cert --tls-key): curl --proxy
# https:// and vega-curl -x https:// as clients, CONNECT and forwarding inside TLS (32 MiB
# sha256-checked), a wrong CA refused by curl, credentials inside TLS, half-closes both ways
# (close_notify in, FIN and close_notify out), SOCKS5 inside TLS, and the idle timeout closing a
# client that never closes. Certificates come from openssl (the command), made per file.

load helpers

setup_file() {
    command -v openssl >/dev/null || return 0
    W="$BATS_FILE_TMPDIR/www"
    C="$BATS_FILE_TMPDIR/certs"
    mkdir -p "$W" "$C"
    echo hello-tls-proxy >"$W/index.html"
    local mib=32
    [ "${VEGA_TEST_SCALE:-1}" -gt 1 ] && mib=3
    head -c $((mib * 1024 * 1024)) /dev/urandom >"$W/big.bin"
    printf '[server]\nsubjectAltName = DNS:localhost, IP:127.0.0.1\nextendedKeyUsage = serverAuth\n' \
        >"$C/ext.cnf"
    local ca
    for ca in ca other; do
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$C/$ca.key" \
            -out "$C/$ca.pem" -days 1 -subj "/CN=vega-proxy test $ca" 2>/dev/null
    done
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$C/px.key" \
        -out "$C/px.csr" -subj "/CN=proxy" 2>/dev/null
    openssl x509 -req -in "$C/px.csr" -CA "$C/ca.pem" -CAkey "$C/ca.key" -CAcreateserial \
        -out "$C/px.pem" -days 1 -extfile "$C/ext.cnf" -extensions server 2>/dev/null
    export W C
}

setup() {
    command -v openssl >/dev/null || skip "openssl (the command) is not installed"
    PROXY="$(vega_bin vega-proxy)"
    SERVE="$(vega_bin vega-serve)"
    T="$BATS_TEST_TMPDIR"
}

teardown() {
    stop_bg_all
}

# tproxy ARGS...: vega-proxy with a tls:// listener on a free loopback port; sets PX.
tproxy() {
    start_bg "$T/proxy.log" "$PROXY" -l tls://127.0.0.1:0 --tls-cert "$C/px.pem" \
        --tls-key "$C/px.key" "$@"
    wait_for_line "$T/proxy.log" 'listening on 127\.0\.0\.1:[0-9]+ \(TLS: ' 10
    PX="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/proxy.log" | head -1)"
}

# origin: vega-serve over $W on a free port; sets OP.
origin() {
    "$SERVE" -p 0 --no-http3 "$W" >"$T/serve.log" 2>&1 3>&- </dev/null &
    VEGA_BG_PIDS+=("$!")
    wait_for_line "$T/serve.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    OP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/serve.log" | head -1)"
}

# echo_server: vega-echo (answers everything, closes after the client's end of stream); sets EP.
echo_server() {
    start_bg "$T/echo.log" "$(vega_bin vega-echo)" -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
}

@test "tls:// listeners: --help, and the options checked at the start" {
    run "$PROXY" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"tls://ADDR:PORT"* ]]
    [[ "$output" == *"--tls-cert FILE"* ]]
    run "$PROXY" -l tls://127.0.0.1:0
    [ "$status" -eq 2 ]
    [[ "$output" == *"needs --tls-cert"* ]]
    run "$PROXY" -l 127.0.0.1:0 --tls-cert "$C/px.pem" --tls-key "$C/px.key"
    [ "$status" -eq 2 ]
    [[ "$output" == *"tls:// listener"* ]]
    # a key that does not match the certificate
    run "$PROXY" -l tls://127.0.0.1:0 --tls-cert "$C/px.pem" --tls-key "$C/ca.key"
    [ "$status" -eq 2 ]
    [[ "$output" == *"not a usable PEM certificate"* ]]
    run "$PROXY" -l tls://127.0.0.1:0 --tls-cert "$T/missing.pem"
    [ "$status" -eq 2 ]
}

@test "curl --proxy https://: CONNECT and forwarding inside TLS keep 32 MiB's sha256; the log says +tls" {
    origin
    tproxy
    local want
    want="$(sha256sum <"$W/big.bin" | cut -d' ' -f1)"
    run bash -c "curl -sS -p --proxy https://127.0.0.1:$PX --proxy-cacert $C/ca.pem http://127.0.0.1:$OP/big.bin | sha256sum"
    [ "${output%% *}" = "$want" ]
    run bash -c "curl -sS --proxy https://127.0.0.1:$PX --proxy-cacert $C/ca.pem http://127.0.0.1:$OP/big.bin | sha256sum"
    [ "${output%% *}" = "$want" ]
    # the name is verified too: localhost is in the certificate
    run curl -sS --proxy "https://localhost:$PX" --proxy-cacert "$C/ca.pem" "http://127.0.0.1:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = hello-tls-proxy ]
    wait_for_line "$T/proxy.log" "http\+tls CONNECT 127\.0\.0\.1:$OP up=[0-9]+ down=[0-9]{7,} .*result=ok" 10
    wait_for_line "$T/proxy.log" "http\+tls GET 127\.0\.0\.1:$OP up=[0-9]+ down=[0-9]{7,} .*result=ok" 10
}

@test "curl refuses a proxy certificate from another CA; the proxy logs tls-error" {
    origin
    tproxy -v
    run curl -sS -p --proxy "https://127.0.0.1:$PX" --proxy-cacert "$C/other.pem" "http://127.0.0.1:$OP/index.html"
    [ "$status" -eq 60 ]
    wait_for_line "$T/proxy.log" "127\.0\.0\.1:[0-9]+ user=- tls - - up=0 down=0 .*result=tls-error" 10
    grep -E 'TLS handshake: .*unknown_ca' "$T/proxy.log"
    # plain HTTP to a TLS listener is not a TLS handshake either
    run curl -sS -x "http://127.0.0.1:$PX" "http://127.0.0.1:$OP/index.html"
    [ "$status" -ne 0 ]
    # --proxy-insecure takes it
    run curl -sS --proxy-insecure --proxy "https://127.0.0.1:$PX" "http://127.0.0.1:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = hello-tls-proxy ]
}

@test "credentials inside TLS: Basic for CONNECT and forwarding; a wrong password gets 407" {
    origin
    tproxy -u alice -P s3cret
    run curl -sS -p --proxy "https://alice:s3cret@127.0.0.1:$PX" --proxy-cacert "$C/ca.pem" "http://127.0.0.1:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = hello-tls-proxy ]
    run curl -sS --proxy "https://alice:s3cret@127.0.0.1:$PX" --proxy-cacert "$C/ca.pem" "http://127.0.0.1:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = hello-tls-proxy ]
    run curl -sS -o /dev/null -w '%{http_code}' --proxy "https://alice:wrong@127.0.0.1:$PX" --proxy-cacert "$C/ca.pem" "http://127.0.0.1:$OP/index.html"
    [ "$output" = 407 ]
    run curl -sS -p --proxy "https://alice:wrong@127.0.0.1:$PX" --proxy-cacert "$C/ca.pem" "http://127.0.0.1:$OP/index.html"
    [ "$status" -eq 56 ]
    wait_for_line "$T/proxy.log" "user=alice http\+tls CONNECT 127\.0\.0\.1:$OP .*result=ok" 10
    wait_for_line "$T/proxy.log" "user=alice http\+tls CONNECT - .*result=auth-failed" 10
}

@test "vega-curl -x https:// through the TLS listener (forwarding and -p)" {
    origin
    tproxy
    local VC
    VC="$(vega_bin vega-curl)"
    run timeout 20 "$VC" -sS -x "https://127.0.0.1:$PX" --proxy-cacert "$C/ca.pem" "http://127.0.0.1:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = hello-tls-proxy ]
    run timeout 20 "$VC" -sS -p -x "https://127.0.0.1:$PX" --proxy-cacert "$C/ca.pem" "http://127.0.0.1:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = hello-tls-proxy ]
    run timeout 20 "$VC" -sS -x "https://127.0.0.1:$PX" --proxy-cacert "$C/other.pem" "http://127.0.0.1:$OP/index.html"
    [ "$status" -ne 0 ]
}

@test "half-closes inside TLS: close_notify reaches the destination as a FIN, its FIN comes back as close_notify (CONNECT and SOCKS5)" {
    local PY
    PY="$(command -p -v python3)"
    echo_server
    tproxy
    # the echo answers only after the client's end of stream reached it, then closes: the
    # client prints the answer, then "close_notify" once the proxy passed that close on
    run timeout 20 "$PY" "$BATS_TEST_DIRNAME/proxy-tls-halfclose.py" "$C/ca.pem" "$PX" "$EP"
    [ "$status" -eq 0 ]
    [ "$output" = $'half-close\nclose_notify' ]
    run timeout 20 "$PY" "$BATS_TEST_DIRNAME/proxy-tls-halfclose.py" "$C/ca.pem" "$PX" "$EP" socks5
    [ "$status" -eq 0 ]
    [ "$output" = $'half-close\nclose_notify' ]
    wait_for_line "$T/proxy.log" "http\+tls CONNECT 127\.0\.0\.1:$EP up=11 down=11 .*result=ok" 10
    wait_for_line "$T/proxy.log" "socks5\+tls CONNECT 127\.0\.0\.1:$EP up=11 down=11 .*result=ok" 10
}

@test "a TLS client that never closes: the idle timeout ends the tunnel and closes its connection" {
    local PY
    PY="$(command -p -v python3)"
    echo_server
    tproxy -i 300ms
    run timeout 20 "$PY" "$BATS_TEST_DIRNAME/proxy-tls-halfclose.py" "$C/ca.pem" "$PX" "$EP" idle
    [ "$status" -eq 0 ]
    [ "$output" = fin ]
    wait_for_line "$T/proxy.log" "http\+tls CONNECT 127\.0\.0\.1:$EP up=0 down=0 .*result=idle-timeout" 10
}
