#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# TLS interop with GnuTLS (Debian package gnutls-bin), both directions: gnutls-serv --echo
# against `vega-echo --tls`, and `vega-echo -l --tls` against gnutls-cli; TLS 1.3 and 1.2,
# ALPN, mutual TLS. Loopback traffic only (gnutls-serv cannot bind one address: it listens on
# all of them, on a port picked at random).
#
# Usage: interop/tls/gnutls.sh [BUILD_DIR]      (exit 0: all passed, 1: a case failed,
#                                                77: gnutls-bin or openssl is missing)
# shellcheck source=interop/tls/lib.sh
source "$(dirname "$0")/lib.sh"

command -v gnutls-cli >/dev/null 2>&1 && command -v gnutls-serv >/dev/null 2>&1 ||
    skip_all "gnutls-cli/gnutls-serv are not installed (Debian package gnutls-bin)"
command -v openssl >/dev/null 2>&1 || skip_all "openssl (the command, for certificates) is missing"
make_certs
C="$WORK"

# g_serv ARGS...: gnutls-serv --echo on a free port; sets GPORT.
g_serv() {
    local log="$WORK/gserv.$RANDOM.log" try
    for try in 1 2 3; do
        GPORT="$(free_port)"
        gnutls-serv --echo -p "$GPORT" --x509certfile "$C/server.pem" \
            --x509keyfile "$C/server.key" "$@" >"$log" 2>&1 </dev/null &
        IOP_PIDS+=($!)
        if wait_for "$log" 'listening on IPv4' 5 >/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$GPORT") 2>/dev/null; then
            return 0
        fi
        iop_cleanup
    done
    echo "gnutls-serv did not start:"
    cat "$log"
    return 1
}

# vega_client OUT ARGS...: vega-echo --tls -v ARGS localhost:GPORT, a line on stdin.
vega_client() {
    local out="$1"
    shift
    printf 'hello, gnutls\n' | timeout 10 "$VEGA_ECHO" --tls -v "$@" "localhost:$GPORT" \
        >"$out" 2>"$out.err"
}

# g_cli OUT ARGS...: gnutls-cli to the vega server with a line on stdin; at its end of input it
# says goodbye (close_notify) and waits for the server's.
g_cli() {
    local out="$1"
    shift
    (printf 'hello from gnutls-cli\n'; sleep 0.3) |
        timeout 10 gnutls-cli -p "$VPORT" localhost "$@" >"$out" 2>"$out.err"
}

# ---- vega-echo --tls against gnutls-serv --echo ------------------------------------------------

client_alpn() {
    g_serv --alpn=foo --alpn=bar || return 1
    vega_client "$WORK/o1" --cacert "$C/ca.pem" --alpn bar || { cat "$WORK/o1.err"; return 1; }
    expect_in "$WORK/o1" "hello, gnutls" && expect_in "$WORK/o1.err" "ALPN bar" &&
        expect_in "$WORK/o1.err" "TLSv1.3"
}
check "vega-echo client -> gnutls-serv: TLS 1.3, ALPN, verified" client_alpn

client_tls12() {
    g_serv --priority "NORMAL:-VERS-TLS1.3" || return 1
    vega_client "$WORK/o2" --cacert "$C/ca.pem" || { cat "$WORK/o2.err"; return 1; }
    expect_in "$WORK/o2" "hello, gnutls" && expect_in "$WORK/o2.err" "TLSv1.2"
}
check "vega-echo client -> gnutls-serv: TLS 1.2" client_tls12

client_mtls() {
    g_serv --require-client-cert --verify-client-cert --x509cafile "$C/ca.pem" || return 1
    vega_client "$WORK/o3" --cacert "$C/ca.pem" --cert "$C/client.pem" --key "$C/client.key" ||
        { cat "$WORK/o3.err"; return 1; }
    expect_in "$WORK/o3" "hello, gnutls"
}
check "vega-echo client -> gnutls-serv: mutual TLS" client_mtls

# ---- gnutls-cli against vega-echo -l --tls ----------------------------------------------------

server_alpn() {
    vega_server "$WORK/v1.log" --cert "$C/server.pem" --key "$C/server.key" --alpn h2,http/1.1 ||
        return 1
    g_cli "$WORK/c1" --x509cafile "$C/ca.pem" --alpn http/1.1 || { cat "$WORK/c1.err"; return 1; }
    expect_in "$WORK/c1" "hello from gnutls-cli" && expect_in "$WORK/v1.log" "ALPN http/1.1" &&
        expect_in "$WORK/v1.log" "SNI localhost"
}
check "gnutls-cli -> vega-echo server: TLS 1.3, ALPN, verified" server_alpn

server_tls12() {
    vega_server "$WORK/v2.log" --cert "$C/server.pem" --key "$C/server.key" || return 1
    g_cli "$WORK/c2" --x509cafile "$C/ca.pem" --priority "NORMAL:-VERS-TLS1.3" ||
        { cat "$WORK/c2.err"; return 1; }
    expect_in "$WORK/c2" "hello from gnutls-cli" && expect_in "$WORK/v2.log" "TLSv1.2"
}
check "gnutls-cli -> vega-echo server: TLS 1.2" server_tls12

server_mtls() {
    vega_server "$WORK/v3.log" --cert "$C/server.pem" --key "$C/server.key" --verify-client \
        --cacert "$C/ca.pem" || return 1
    g_cli "$WORK/c3" --x509cafile "$C/ca.pem" --x509certfile "$C/client.pem" \
        --x509keyfile "$C/client.key" || { cat "$WORK/c3.err"; return 1; }
    expect_in "$WORK/c3" "hello from gnutls-cli" &&
        expect_in "$WORK/v3.log" "peer certificate CN=interop-client"
}
check "gnutls-cli -> vega-echo server: mutual TLS" server_mtls

server_verify_fails() {
    vega_server "$WORK/v4.log" || return 1 # self-signed: gnutls-cli must refuse it
    if g_cli "$WORK/c4" --x509cafile "$C/ca.pem"; then
        echo "gnutls-cli accepted an unknown certificate"
        return 1
    fi
    wait_for "$WORK/v4.log" "TLS handshake failed: the peer sent alert" 5
}
check "gnutls-cli -> vega-echo server: unknown certificate refused, alert logged" \
    server_verify_fails

finish
