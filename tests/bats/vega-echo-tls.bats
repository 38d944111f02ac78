#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-echo and vega-load over TLS as a user runs them: usage, round trips under both drivers
# (a 10 MiB binary sha256 check), verification and its failures, ALPN, SNI, mutual TLS, Unix
# sockets, idle timeouts, vega-load echo --tls, and the interop scripts against OpenSSL's and
# GnuTLS's tools (interop/tls/). Loopback only, ephemeral ports.

load helpers

setup() {
    ECHO="$(vega_bin vega-echo)"
    LOAD="$(vega_bin vega-load)"
    T="$BATS_TEST_TMPDIR"
}

teardown() {
    stop_bg_all
}

# start_server [ARGS...]: vega-echo -l -v --tls ARGS 0 in the background; sets SRV_PID, SRV_LOG,
# SRV_PORT.
start_server() {
    SRV_LOG="$T/server.$RANDOM.log"
    start_bg "$SRV_LOG" "$ECHO" -l -v --tls "$@"
    SRV_PID=$BG_PID
    wait_for_line "$SRV_LOG" 'listening on' 10
    SRV_PORT="$(sed -nE 's/.*listening on (\[[^]]*\]|[0-9.]+):([0-9]+) .*/\2/p' "$SRV_LOG" | head -n1)"
}

client() {
    timeout 60 "$ECHO" "$@"
}

# certs: a CA, a server certificate for localhost/127.0.0.1 and a client certificate, made with
# the openssl command into $T.
certs() {
    command -v openssl >/dev/null || skip "openssl (the command) is not installed"
    cat >"$T/ext.cnf" <<'EOF'
[server]
subjectAltName = DNS:localhost, IP:127.0.0.1
extendedKeyUsage = serverAuth
[client]
extendedKeyUsage = clientAuth
EOF
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/ca.key" \
        -out "$T/ca.pem" -days 1 -subj "/CN=Bats CA" 2>/dev/null
    local who cn
    for who in server client; do
        cn=localhost
        [ "$who" = client ] && cn=bats-client
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/$who.key" \
            -out "$T/$who.csr" -subj "/CN=$cn" 2>/dev/null
        openssl x509 -req -in "$T/$who.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" \
            -CAcreateserial -out "$T/$who.pem" -days 1 -extfile "$T/ext.cnf" \
            -extensions "$who" 2>/dev/null
    done
}

# ---- usage -----------------------------------------------------------------------------------

@test "--help documents the TLS options" {
    run "$ECHO" --help
    [ "$status" -eq 0 ]
    for opt in --tls --ssl --cert --key --cacert --insecure --verify-client --alpn --sni --ktls \
        SSLKEYLOGFILE; do
        [[ "$output" == *"$opt"* ]] || { echo "missing $opt"; return 1; }
    done
    run "$LOAD" --help
    [[ "$output" == *"--tls"* && "$output" == *"--insecure"* ]]
}

@test "bad TLS usage exits 2 with a message" {
    local args
    for args in "--tls -u -l 0" "--cert x.pem -l 0" "--tls --key k.pem -l 0" \
        "--tls --verify-client -l 0" "--tls --ktls maybe -l 0" "--tls --alpn , -l 0" \
        "--tls --alpn a,,b -l 0" "--tls --sni x -l 0" "--tls --insecure -l 0" \
        "--alpn h2 127.0.0.1 7000" "--tls --sni= 127.0.0.1 7000"; do
        # shellcheck disable=SC2086
        run "$ECHO" $args
        if [ "$status" -ne 2 ]; then
            echo "args '$args': status $status, output: $output"
            return 1
        fi
        [[ "$output" == vega-echo:* ]]
    done
    run "$LOAD" echo --tls -u 127.0.0.1:7000
    [ "$status" -eq 2 ]
    run "$LOAD" echo -k 127.0.0.1:7000
    [ "$status" -eq 2 ]
    [[ "$output" == *"-k needs --tls"* ]]
}

@test "unreadable certificate files exit 1 with a message" {
    run "$ECHO" -l --tls --cert "$T/none.pem" 0
    [ "$status" -eq 1 ]
    [[ "$output" == *"none.pem"*"No such file"* ]]
    echo "junk" >"$T/junk.pem"
    run "$ECHO" -l --tls --cert "$T/junk.pem" 0
    [ "$status" -eq 1 ]
    [[ "$output" == *"not a usable PEM certificate"* ]]
}

# ---- round trips -------------------------------------------------------------------------------

@test "self-signed server: listening line, -k round trip, verification refuses it by default" {
    start_server 0
    [[ "$(cat "$SRV_LOG")" == *"(TLS with a self-signed certificate, driver "*"try: vega-echo --tls -k 127.0.0.1 $SRV_PORT"* ]]
    run client --tls -k 127.0.0.1 "$SRV_PORT" <<<"hello, tls"
    [ "$status" -eq 0 ]
    [ "$output" = "hello, tls" ]
    run client --ssl -k "127.0.0.1:$SRV_PORT" <<<"ncat spelling"
    [ "$status" -eq 0 ]
    [ "$output" = "ncat spelling" ]
    run client --tls 127.0.0.1 "$SRV_PORT" <<<"verify me"
    [ "$status" -eq 1 ]
    [[ "$output" == *"certificate verify failed: self-signed certificate"* ]]
}

tls_binary_roundtrip() {
    local driver="$1"
    head -c 10M /dev/urandom >"$T/in.bin"
    start_server --driver "$driver" 0
    local sum
    sum="$(timeout 60 "$ECHO" --tls -k --driver "$driver" 127.0.0.1 "$SRV_PORT" <"$T/in.bin" | sha256sum)"
    [ "$sum" = "$(sha256sum <"$T/in.bin")" ]
    wait_for_line "$SRV_LOG" "closed by the peer after 10485760 bytes echoed" 10
}

@test "10 MiB binary round trip over TLS, driver uring" {
    tls_binary_roundtrip uring
}

@test "10 MiB binary round trip over TLS, driver epoll" {
    tls_binary_roundtrip epoll
}

@test "verified server: --cacert, host name and IP address, mismatch refused" {
    certs
    start_server --cert "$T/server.pem" --key "$T/server.key" 0
    [[ "$(cat "$SRV_LOG")" == *"try: vega-echo --tls 127.0.0.1 $SRV_PORT"* ]]
    run client --tls --cacert "$T/ca.pem" localhost "$SRV_PORT" <<<"by name"
    [ "$status" -eq 0 ]
    [ "$output" = "by name" ]
    run client --tls --cacert "$T/ca.pem" 127.0.0.1 "$SRV_PORT" <<<"by address"
    [ "$status" -eq 0 ]
    [ "$output" = "by address" ]
    run client --tls --cacert "$T/ca.pem" --sni wrong.example 127.0.0.1 "$SRV_PORT" </dev/null
    [ "$status" -eq 1 ]
    [[ "$output" == *"hostname mismatch: wanted wrong.example, the certificate is for DNS:localhost, IP:127.0.0.1"* ]]
    run client --tls --cacert "$T/server.pem" 127.0.0.1 "$SRV_PORT" </dev/null
    [ "$status" -eq 1 ]
    [[ "$output" == *"unable to get local issuer certificate"* ]]
}

@test "ALPN and SNI show in -v; no ALPN in common fails" {
    start_server --alpn h2,http/1.1 0
    run client --tls -k -v --alpn http/1.1,h2 --sni api.test 127.0.0.1 "$SRV_PORT" <<<"x"
    [ "$status" -eq 0 ]
    [[ "$output" == *"TLSv1.3"*"ALPN h2, SNI api.test, full handshake"* ]]
    wait_for_line "$SRV_LOG" "ALPN h2, SNI api.test" 5
    run client --tls -k --alpn spdy/1 127.0.0.1 "$SRV_PORT" </dev/null
    [ "$status" -eq 1 ]
    [[ "$output" == *"no_application_protocol"* ]]
}

@test "mutual TLS: required client certificate, present and missing" {
    certs
    start_server --cert "$T/server.pem" --key "$T/server.key" --verify-client --cacert "$T/ca.pem" 0
    run client --tls --cacert "$T/ca.pem" --cert "$T/client.pem" --key "$T/client.key" \
        localhost "$SRV_PORT" <<<"with a certificate"
    [ "$status" -eq 0 ]
    [ "$output" = "with a certificate" ]
    wait_for_line "$SRV_LOG" "peer certificate CN=bats-client" 5
    run client --tls --cacert "$T/ca.pem" localhost "$SRV_PORT" <<<"without"
    [ "$status" -eq 1 ]
    [[ "$output" == *"certificate_required"* ]]
    wait_for_line "$SRV_LOG" "the client sent no certificate, and one is required" 5
}

@test "TLS over a Unix socket" {
    local sock="$T/tls.sock"
    SRV_LOG="$T/unix.log"
    start_bg "$SRV_LOG" "$ECHO" -l -v --tls -U "$sock"
    wait_for_line "$SRV_LOG" 'listening on' 10
    [[ "$(cat "$SRV_LOG")" == *"try: vega-echo --tls -k -U $sock"* ]]
    run client --tls -k -U "$sock" <<<"over unix"
    [ "$status" -eq 0 ]
    [ "$output" = "over unix" ]
}

@test "idle TLS connections are parked and closed by -w; many at once" {
    start_server -w 1s 0
    local i pids=()
    for i in 1 2 3 4 5 6 7 8; do
        (sleep 3 | timeout 10 "$ECHO" --tls -k 127.0.0.1 "$SRV_PORT" >"$T/idle$i.out" 2>&1) &
        pids+=($!)
    done
    wait_for_line "$SRV_LOG" "(8 open)" 5
    run client --tls -k 127.0.0.1 "$SRV_PORT" <<<"while others idle"
    [ "$status" -eq 0 ]
    [ "$output" = "while others idle" ]
    wait_for_line "$SRV_LOG" "idle timeout after 0 bytes echoed" 5
    for i in "${pids[@]}"; do wait "$i" || true; done
}

@test "a client reports a server that closes without close_notify" {
    command -v python3 >/dev/null || skip "python3 is missing"
    # A TLS server that answers the handshake, then drops the TCP connection.
    certs
    python3 - "$T" >"$T/py.port" 2>"$T/py.err" <<'EOF' &
import os, socket, ssl, sys
d = sys.argv[1]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(d + "/server.pem", d + "/server.key")
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
raw = socket.socket(fileno=os.dup(c.fileno()))
t = ctx.wrap_socket(c, server_side=True)
t.recv(100)
t.sendall(b"partial\n")
raw.shutdown(socket.SHUT_RDWR)  # a FIN, and no close_notify
os._exit(0)
EOF
    VEGA_BG_PIDS+=($!)
    wait_for_line "$T/py.port" '^[0-9]+$' 10
    # More is sent than comes back, so the client keeps reading until the end.
    run client --tls --cacert "$T/ca.pem" localhost "$(cat "$T/py.port")" \
        <<<"a line longer than what the server sends back"
    [ "$status" -eq 1 ]
    [[ "$output" == *"partial"* ]]
    [[ "$output" == *"TLS stream truncated: the peer closed the connection without close_notify"* ]]
}

@test "SIGTERM stops a TLS server with exit 0" {
    start_server 0
    run client --tls -k 127.0.0.1 "$SRV_PORT" <<<"before"
    [ "$status" -eq 0 ]
    kill -TERM "$SRV_PID"
    wait_pid_exit "$SRV_PID" 10
    [ "$BG_STATUS" -eq 0 ]
}

@test "SSLKEYLOGFILE gets the secrets" {
    start_server 0
    SSLKEYLOGFILE="$T/keys.log" run client --tls -k 127.0.0.1 "$SRV_PORT" <<<"x"
    [ "$status" -eq 0 ]
    grep -q '^CLIENT_TRAFFIC_SECRET_0 [0-9a-f]\{64\} [0-9a-f]\+$' "$T/keys.log"
    [ "$(stat -c %a "$T/keys.log")" = 600 ]
}

@test "--ktls: the connection works, -v says whether the kernel took the keys" {
    start_server --ktls txrx 0
    run client --tls -k -v --ktls txrx 127.0.0.1 "$SRV_PORT" <<<"kernel or not"
    [ "$status" -eq 0 ]
    [[ "$output" == *"kernel or not"* ]]
    if grep -qw tls /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null; then
        [[ "$output" == *"kTLS tx+rx"* || "$output" == *"kTLS tx"* ]]
    else
        [[ "$output" == *"kTLS not offloaded (tx+rx asked: kernel TLS unavailable"* ]]
    fi
}

# ---- vega-load ---------------------------------------------------------------------------------

load_tls() {
    local driver="$1"
    start_server --driver "$driver" 0
    run timeout 30 "$LOAD" echo --tls -k -n 1000 --driver "$driver" --json "127.0.0.1:$SRV_PORT"
    [ "$status" -eq 0 ]
    [[ "$output" == *'"transport":"tls"'* ]]
    [[ "$output" == *'"round_trips":1000,'* ]]
    [[ "$output" == *'"errors":0'* ]]
}

@test "vega-load echo --tls -n 1000, driver uring" {
    load_tls uring
}

@test "vega-load echo --tls -n 1000, driver epoll" {
    load_tls epoll
}

@test "vega-load echo --tls verifies by default" {
    start_server 0
    run timeout 30 "$LOAD" echo --tls -n 10 "127.0.0.1:$SRV_PORT"
    [ "$status" -eq 1 ]
    [[ "$output" == *"certificate verify failed: self-signed certificate"* ]]
    certs
    start_server --cert "$T/server.pem" --key "$T/server.key" 0
    run timeout 30 "$LOAD" echo --tls --cacert "$T/ca.pem" -n 100 -c 4 "localhost:$SRV_PORT"
    [ "$status" -eq 0 ]
}

# ---- interop -----------------------------------------------------------------------------------

interop() {
    run timeout 120 "$VEGA_REPO_ROOT/interop/tls/$1.sh" "$(vega_build_dir)"
    if [ "$status" -eq 77 ]; then
        skip "${output##*SKIP }"
    fi
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "interop: openssl s_server / s_client, both directions" {
    interop openssl
}

@test "interop: gnutls-serv / gnutls-cli, both directions" {
    interop gnutls
}

@test "kernel TLS in a VM with the tls module (VEGA_KTLS_VM=1; about 80 s)" {
    if [ "${VEGA_KTLS_VM:-0}" != 1 ]; then
        skip "set VEGA_KTLS_VM=1 to boot Debian's kernel in qemu and run the kTLS tests there"
    fi
    run timeout 600 "$VEGA_REPO_ROOT/interop/tls/ktls-vm.sh" "$(vega_build_dir)"
    if [ "$status" -eq 77 ]; then
        skip "${output##*SKIP }"
    fi
    echo "$output"
    [ "$status" -eq 0 ]
}
