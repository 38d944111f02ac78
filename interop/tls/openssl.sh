#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# TLS interop with OpenSSL's command-line tools, both directions: openssl s_server (-rev: it
# echoes each line reversed) against `vega-echo --tls`, and `vega-echo -l --tls` against
# openssl s_client; TLS 1.3 and 1.2, ALPN, mutual TLS, verification failures, resumption.
# Loopback only, ephemeral ports.
#
# Usage: interop/tls/openssl.sh [BUILD_DIR]      (exit 0: all passed, 1: a case failed,
#                                                 77: openssl is missing)
# shellcheck source=interop/tls/lib.sh
source "$(dirname "$0")/lib.sh"

command -v openssl >/dev/null 2>&1 || skip_all "openssl (the command) is not installed"
make_certs
C="$WORK"

# s_server ARGS...: openssl s_server on an ephemeral port, echoing lines reversed; sets OPORT.
s_server() {
    local log="$WORK/s_server.$RANDOM.log"
    openssl s_server -accept 127.0.0.1:0 -cert "$C/server.pem" -key "$C/server.key" -rev \
        -naccept 1 "$@" >"$log" 2>&1 </dev/null &
    IOP_PIDS+=($!)
    wait_for "$log" '^ACCEPT' || return 1
    OPORT="$(sed -nE 's/^ACCEPT .*:([0-9]+)$/\1/p' "$log" | head -n1)"
}

# vega_client OUT ARGS...: vega-echo --tls -v ARGS localhost:OPORT with "hello, interop" on
# stdin; stdout to OUT, stderr to OUT.err. Returns its status.
vega_client() {
    local out="$1"
    shift
    printf 'hello, interop\n' | timeout 10 "$VEGA_ECHO" --tls -v "$@" "localhost:$OPORT" \
        >"$out" 2>"$out.err"
}

# s_client OUT ARGS...: openssl s_client to the vega server with a line on stdin (then half a
# second for the echo before its end of input makes it close).
s_client() {
    local out="$1"
    shift
    (printf 'hello from s_client\n'; sleep 0.5) |
        timeout 10 openssl s_client -connect "127.0.0.1:$VPORT" -servername localhost -quiet \
            -no_ign_eof "$@" >"$out" 2>"$out.err"
}

# ---- vega-echo --tls against openssl s_server -------------------------------------------------

client_tls13_alpn() {
    s_server -tls1_3 -alpn foo,bar || return 1
    vega_client "$WORK/o1" --cacert "$C/ca.pem" --alpn bar || { cat "$WORK/o1.err"; return 1; }
    expect_in "$WORK/o1" "poretni ,olleh" && expect_in "$WORK/o1.err" "TLSv1.3" &&
        expect_in "$WORK/o1.err" "ALPN bar" && expect_in "$WORK/o1.err" "SNI localhost"
}
check "vega-echo client -> s_server: TLS 1.3, ALPN, verified" client_tls13_alpn

client_tls12() {
    s_server -tls1_2 || return 1
    vega_client "$WORK/o2" --cacert "$C/ca.pem" || { cat "$WORK/o2.err"; return 1; }
    expect_in "$WORK/o2" "poretni ,olleh" && expect_in "$WORK/o2.err" "TLSv1.2"
}
check "vega-echo client -> s_server: TLS 1.2" client_tls12

client_mtls() {
    s_server -Verify 1 -CAfile "$C/ca.pem" || return 1
    vega_client "$WORK/o3" --cacert "$C/ca.pem" --cert "$C/client.pem" --key "$C/client.key" ||
        { cat "$WORK/o3.err"; return 1; }
    expect_in "$WORK/o3" "poretni ,olleh"
}
check "vega-echo client -> s_server: mutual TLS" client_mtls

client_mtls_missing() {
    s_server -Verify 1 -CAfile "$C/ca.pem" || return 1
    if vega_client "$WORK/o4" --cacert "$C/ca.pem"; then
        echo "succeeded without a client certificate"
        return 1
    fi
    expect_in "$WORK/o4.err" "certificate_required"
}
check "vega-echo client -> s_server: mutual TLS without a certificate fails clearly" \
    client_mtls_missing

client_untrusted() {
    s_server || return 1
    if vega_client "$WORK/o5" --cacert "$C/other-ca.pem"; then
        echo "succeeded against an untrusted server"
        return 1
    fi
    expect_in "$WORK/o5.err" "certificate verify failed: unable to get local issuer certificate"
}
check "vega-echo client -> s_server: unknown CA is refused" client_untrusted

client_insecure() {
    s_server || return 1
    vega_client "$WORK/o6" -k || { cat "$WORK/o6.err"; return 1; }
    expect_in "$WORK/o6" "poretni ,olleh"
}
check "vega-echo client -> s_server: -k skips verification" client_insecure

# ---- openssl s_client against vega-echo -l --tls -----------------------------------------------

server_tls13_alpn() {
    vega_server "$WORK/v1.log" --cert "$C/server.pem" --key "$C/server.key" \
        --alpn h2,http/1.1 || return 1
    s_client "$WORK/c1" -CAfile "$C/ca.pem" -verify_return_error -alpn http/1.1 ||
        { cat "$WORK/c1.err"; return 1; }
    expect_in "$WORK/c1" "hello from s_client" && expect_in "$WORK/v1.log" "TLSv1.3" &&
        expect_in "$WORK/v1.log" "ALPN http/1.1" && expect_in "$WORK/v1.log" "SNI localhost"
}
check "s_client -> vega-echo server: TLS 1.3, ALPN, verified" server_tls13_alpn

server_tls12() {
    vega_server "$WORK/v2.log" --cert "$C/server.pem" --key "$C/server.key" || return 1
    s_client "$WORK/c2" -tls1_2 -CAfile "$C/ca.pem" -verify_return_error ||
        { cat "$WORK/c2.err"; return 1; }
    expect_in "$WORK/c2" "hello from s_client" && expect_in "$WORK/v2.log" "TLSv1.2"
}
check "s_client -> vega-echo server: TLS 1.2" server_tls12

server_mtls() {
    vega_server "$WORK/v3.log" --cert "$C/server.pem" --key "$C/server.key" \
        --verify-client --cacert "$C/ca.pem" || return 1
    s_client "$WORK/c3" -CAfile "$C/ca.pem" -cert "$C/client.pem" -key "$C/client.key" ||
        { cat "$WORK/c3.err"; return 1; }
    expect_in "$WORK/c3" "hello from s_client" &&
        expect_in "$WORK/v3.log" "peer certificate CN=interop-client"
}
check "s_client -> vega-echo server: mutual TLS" server_mtls

server_mtls_missing() {
    vega_server "$WORK/v4.log" --cert "$C/server.pem" --key "$C/server.key" \
        --verify-client --cacert "$C/ca.pem" || return 1
    s_client "$WORK/c4" -CAfile "$C/ca.pem"
    wait_for "$WORK/v4.log" "sent no certificate" 5 && ! grep -q "hello" "$WORK/c4"
}
check "s_client -> vega-echo server: mutual TLS without a certificate is refused" \
    server_mtls_missing

server_selfsigned_resume() {
    vega_server "$WORK/v5.log" || return 1
    s_client "$WORK/c5" -sess_out "$WORK/sess.pem" || { cat "$WORK/c5.err"; return 1; }
    s_client "$WORK/c6" -sess_in "$WORK/sess.pem" || { cat "$WORK/c6.err"; return 1; }
    expect_in "$WORK/c6" "hello from s_client" && expect_in "$WORK/v5.log" "resumed"
}
check "s_client -> vega-echo server: self-signed default, session resumption" \
    server_selfsigned_resume

finish
