#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# QUIC interop with ngtcp2 0.12 (Debian packages ngtcp2-client, ngtcp2-server: the GnuTLS
# HTTP/3 examples gtlsclient and gtlsserver), both directions, through vega-quic-probe, a UDP
# driver of libvega's sans-I/O QUIC core. The peers speak HTTP/3 only and libvega has no HTTP/3
# layer yet, so this checks the QUIC layer: handshake, versions and Version Negotiation, cipher
# suites, Retry, key update, resumption and 0-RTT, migration, loss recovery, streams (the probe
# server answers GETs with a hand-encoded HTTP/3 response) and a clean CONNECTION_CLOSE with
# H3_NO_ERROR. Loopback only; every process runs under `timeout` and is killed at exit.
#
# Usage: interop/quic/ngtcp2.sh [BUILD_DIR]    (exit 0: all passed, 1: a case failed,
#                                              2: no libvega.a, 77: ngtcp2 or a tool missing)
# shellcheck source=interop/quic/lib.sh
source "$(dirname "$0")/lib.sh"

export PATH="$PATH:/usr/sbin:/sbin"
if ! command -v gtlsclient >/dev/null 2>&1 || ! command -v gtlsserver >/dev/null 2>&1; then
    skip_all "gtlsclient/gtlsserver are not installed (Debian packages ngtcp2-client, ngtcp2-server)"
fi
command -v openssl >/dev/null 2>&1 || skip_all "openssl (the command, for certificates) is missing"
command -v ss >/dev/null 2>&1 || skip_all "ss (iproute2, to see gtlsserver bound) is missing"
command -p python3 -c '' 2>/dev/null || skip_all "python3 (for free ports) is missing"
command -v "${CC:-cc}" >/dev/null 2>&1 || skip_all "no C compiler (${CC:-cc}) to build vega-quic-probe"

build_probe
make_cert
C="$WORK"
ONLY_CHACHA='NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+CHACHA20-POLY1305'
ONLY_AES256='NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-256-GCM'

# The close every probe client ends with, as gtlsserver logs it: application code 0x100.
H3_CLOSE_RX='frm rx [0-9]+ 1RTT CONNECTION_CLOSE\(0x1d\) error_code=\(unknown\)\(0x100\)'

# ---- vega-quic-probe client -> gtlsserver --------------------------------------------------------

client_v1() {
    gtls_server "$C/s1.log" || return 1
    vega_client "$C/c1" --ca "$C/cert.pem" || { cat "$C/c1"; return 1; }
    expect_in "$C/c1" "handshake ok: version=0x00000001 alpn=h3 suite=TLS_AES_128_GCM_SHA256" &&
        expect_in "$C/c1" "closed ok: H3_NO_ERROR" &&
        expect_in "$C/s1.log" "Negotiated cipher suite is AES-128-GCM" &&
        expect_re "$C/s1.log" "$H3_CLOSE_RX" &&
        expect_in "$C/s1.log" "path is ECN capable" &&
        expect_re "$C/s1.log" "frm tx [0-9]+ 1RTT ACK\(0x03\) ect0=[1-9]"
}
check "vega client -> gtlsserver: QUIC v1 handshake (certificate verified), AES-128-GCM, ECN, close H3_NO_ERROR" client_v1

client_chacha() {
    gtls_server "$C/s2.log" || return 1
    vega_client "$C/c2" --insecure --chacha || { cat "$C/c2"; return 1; }
    expect_in "$C/c2" "suite=TLS_CHACHA20_POLY1305_SHA256" &&
        expect_in "$C/s2.log" "Negotiated cipher suite is CHACHA20-POLY1305" &&
        expect_re "$C/s2.log" "$H3_CLOSE_RX"
}
check "vega client -> gtlsserver: ChaCha20-Poly1305 only" client_chacha

client_aes256() {
    gtls_server "$C/s3.log" || return 1
    vega_client "$C/c3" --ca "$C/cert.pem" --aes256 || { cat "$C/c3"; return 1; }
    expect_in "$C/c3" "suite=TLS_AES_256_GCM_SHA384" &&
        expect_in "$C/s3.log" "Negotiated cipher suite is AES-256-GCM"
}
check "vega client -> gtlsserver: AES-256-GCM only" client_aes256

client_retry() {
    gtls_server "$C/s4.log" -V || return 1
    vega_client "$C/c4" --ca "$C/cert.pem" || { cat "$C/c4"; return 1; }
    expect_in "$C/c4" "retry=yes" && expect_in "$C/c4" "closed ok" &&
        expect_in "$C/s4.log" "Sending Retry packet" &&
        expect_in "$C/s4.log" "Token was successfully validated"
}
check "vega client -> gtlsserver -V: handshake after a Retry" client_retry

client_key_update() {
    gtls_server "$C/s5.log" || return 1
    vega_client "$C/c5" --ca "$C/cert.pem" --key-update || { cat "$C/c5"; return 1; }
    # Acknowledged under the new keys, and the peer answers in the new phase (k=1).
    expect_in "$C/c5" "key update ok: key_updates=1 acknowledged" &&
        expect_re "$C/s5.log" "pkt rx pkn=[0-9]+ dcid=0x[0-9a-f]+ type=1RTT k=1" &&
        expect_re "$C/s5.log" "pkt tx pkn=[0-9]+ dcid=0x[0-9a-f]+ type=1RTT k=1" &&
        expect_re "$C/s5.log" "$H3_CLOSE_RX"
}
check "vega client -> gtlsserver: key update initiated by us" client_key_update

client_get() {
    mkdir -p "$C/www"
    head -c 5000000 /dev/urandom >"$C/www/5M.bin"
    gtls_server "$C/s10.log" || return 1
    vega_client "$C/c10" --ca "$C/cert.pem" --get /5M.bin --out "$C/got5M" --key-update ||
        { cat "$C/c10"; return 1; }
    expect_in "$C/c10" "get ok: status=200 body_bytes=5000000" && cmp "$C/www/5M.bin" "$C/got5M" &&
        expect_in "$C/c10" "key update ok"
}
check "vega client -> gtlsserver: 5 MB GET (hand-encoded HTTP/3) with a key update during it" client_get

client_get_loss() {
    mkdir -p "$C/www"
    head -c 1000000 /dev/urandom >"$C/www/1M.bin"
    gtls_server "$C/s11.log" -q -t 0.05 -r 0.05 || return 1
    vega_client "$C/c11" --ca "$C/cert.pem" --get /1M.bin --out "$C/got1M" --timeout-ms 15000 ||
        { cat "$C/c11"; return 1; }
    expect_in "$C/c11" "get ok: status=200 body_bytes=1000000" && cmp "$C/www/1M.bin" "$C/got1M"
}
check "vega client -> gtlsserver with 5% loss each way: 1 MB GET intact" client_get_loss

client_resume() {
    gtls_server "$C/s6.log" || return 1
    vega_client "$C/c6" --ca "$C/cert.pem" --resume --early-data || { cat "$C/c6"; return 1; }
    expect_in "$C/c6" "resumed=yes early_data=accepted" &&
        expect_re "$C/s6.log" "frm rx [0-9]+ 0RTT STREAM"
}
check "vega client -> gtlsserver: resumption with a ticket, 0-RTT accepted" client_resume

client_vn() {
    gtls_server "$C/s7.log" || return 1
    vega_client "$C/c7" --ca "$C/cert.pem" --version v2 || { cat "$C/c7"; return 1; }
    # ngtcp2 0.12 has only the v2 draft, so it answers RFC 9369 v2 with Version Negotiation.
    expect_in "$C/c7" "version negotiation: 0x6b3343cf refused, server offers 0x00000001" &&
        expect_in "$C/c7" "handshake ok: version=0x00000001"
}
check "vega client -> gtlsserver: v2 offered, Version Negotiation, v1 handshake" client_vn

client_migrate() {
    gtls_server "$C/s8.log" || return 1
    vega_client "$C/c8" --ca "$C/cert.pem" --migrate --key-update || { cat "$C/c8"; return 1; }
    expect_in "$C/c8" "migration ok" && expect_in "$C/c8" "key update ok" &&
        expect_in "$C/s8.log" "path has been validated" && expect_re "$C/s8.log" "$H3_CLOSE_RX"
}
check "vega client -> gtlsserver: client migration to a new port (path validation), then a key update" client_migrate

client_refusals() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
        -subj /CN=other -keyout "$C/other.key" -out "$C/other.pem" >/dev/null 2>&1 || return 1
    gtls_server "$C/s12.log" -q || return 1
    # Each must fail, and say why: our alerts for a bad chain or name, the server's for ALPN.
    if vega_client "$C/c12a" --ca "$C/other.pem"; then echo "unknown CA accepted"; return 1; fi
    if vega_client "$C/c12b" --ca "$C/cert.pem" --sni wrong.example; then
        echo "wrong name accepted"
        return 1
    fi
    if vega_client "$C/c12c" --insecure --alpn foo; then echo "ALPN foo accepted"; return 1; fi
    expect_in "$C/c12a" "CRYPTO_ERROR 0x130 (alert unknown_ca) by us" &&
        expect_in "$C/c12b" "CRYPTO_ERROR 0x12a (alert bad_certificate) by us" &&
        expect_in "$C/c12c" "CRYPTO_ERROR 0x178 (alert no_application_protocol) by the peer"
}
check "vega client -> gtlsserver: unknown CA, wrong name and unknown ALPN fail with the right alerts" client_refusals

client_loss() {
    gtls_server "$C/s9.log" -t 0.1 -r 0.1 || return 1
    vega_client "$C/c9" --ca "$C/cert.pem" --key-update --timeout-ms 15000 ||
        { cat "$C/c9"; return 1; }
    expect_in "$C/c9" "key update ok" && expect_in "$C/c9" "closed ok"
}
check "vega client -> gtlsserver with 10% loss each way: handshake and key update" client_loss

# ---- gtlsclient -> vega-quic-probe server --------------------------------------------------------

server_get() {
    body "$C/b1000" 1000
    vega_server "$C/v1.log" --count 1 --body-size 1000 || return 1
    gtls_client "$C/g1" -- index.html || { tail -n 30 "$C/g1"; return 1; }
    vega_server_wait "$C/v1.log" || return 1
    expect_in "$C/g1" "Negotiated ALPN is h3" && expect_in "$C/g1" "[:status: 200]" &&
        cmp "$C/b1000" "$C/dl/index.html" &&
        expect_re "$C/v1.log" "connection done: version=0x00000001 alpn=h3 suite=TLS_AES_128_GCM_SHA256 .*requests=1 .*close=application error 0x100 by the peer"
}
check "gtlsclient -> vega server: handshake, GET answered (:status 200, body), peer's H3_NO_ERROR close" server_get

server_ecn() {
    body "$C/b100k" 100000
    vega_server "$C/v1e.log" --count 1 --body-size 100000 || return 1
    gtls_client "$C/g1e" -- ecn.bin || { tail -n 30 "$C/g1e"; return 1; }
    vega_server_wait "$C/v1e.log" || return 1
    # ngtcp2 validates our ECT(0) marks against its ACK_ECN counts, and we keep marking full
    # packets after validating its counts of ours.
    cmp "$C/b100k" "$C/dl/ecn.bin" && expect_in "$C/g1e" "path is ECN capable" &&
        expect_re "$C/g1e" "Received packet: .* ecn=0x2 1[0-9]{3} bytes" &&
        expect_re "$C/g1e" "frm rx [0-9]+ 1RTT ACK\(0x03\) ect0=[1-9]"
}
check "gtlsclient -> vega server: ECN validated both ways (ECT(0) marks, ACK_ECN counts)" server_ecn

server_retry() {
    body "$C/b1000" 1000
    vega_server "$C/v2.log" --count 1 --body-size 1000 --retry || return 1
    gtls_client "$C/g2" -- r.bin || { tail -n 30 "$C/g2"; return 1; }
    vega_server_wait "$C/v2.log" || return 1
    expect_re "$C/g2" "type=Retry" && expect_in "$C/g2" "[:status: 200]" &&
        cmp "$C/b1000" "$C/dl/r.bin" && expect_in "$C/v2.log" "retry=yes" &&
        expect_in "$C/v2.log" "retries_sent=1"
}
check "gtlsclient -> vega server --retry: Retry with an authenticated token, then the GET" server_retry

server_key_update() {
    body "$C/b1m" 1000000
    vega_server "$C/v3.log" --count 1 --body-size 1000000 || return 1
    gtls_client "$C/g3" --key-update=5ms --delay-stream=30ms -- big.bin ||
        { tail -n 30 "$C/g3"; return 1; }
    vega_server_wait "$C/v3.log" || return 1
    expect_in "$C/g3" "key update confirmed" && cmp "$C/b1m" "$C/dl/big.bin" &&
        expect_in "$C/v3.log" "key_updates=1"
}
check "gtlsclient --key-update -> vega server: key update by the peer during a 1 MB download" server_key_update

server_ciphers() {
    body "$C/b1000" 1000
    vega_server "$C/v4.log" --count 2 --body-size 1000 || return 1
    gtls_client "$C/g4a" --ciphers="$ONLY_CHACHA" -- a.bin || { tail -n 30 "$C/g4a"; return 1; }
    cmp "$C/b1000" "$C/dl/a.bin" || return 1
    gtls_client "$C/g4b" --ciphers="$ONLY_AES256" -- b.bin || { tail -n 30 "$C/g4b"; return 1; }
    cmp "$C/b1000" "$C/dl/b.bin" || return 1
    vega_server_wait "$C/v4.log" || return 1
    expect_in "$C/g4a" "Negotiated cipher suite is CHACHA20-POLY1305" &&
        expect_in "$C/g4b" "Negotiated cipher suite is AES-256-GCM" &&
        expect_in "$C/v4.log" "suite=TLS_CHACHA20_POLY1305_SHA256" &&
        expect_in "$C/v4.log" "suite=TLS_AES_256_GCM_SHA384"
}
check "gtlsclient --ciphers (ChaCha20, then AES-256-GCM only) -> vega server" server_ciphers

server_resume() {
    body "$C/b1000" 1000
    vega_server "$C/v5.log" --count 2 --body-size 1000 --early-data || return 1
    local sess=(--session-file="$C/sess.pem" --tp-file="$C/tp.txt")
    gtls_client "$C/g5a" "${sess[@]}" -- one.bin || { tail -n 30 "$C/g5a"; return 1; }
    gtls_client "$C/g5b" "${sess[@]}" -- two.bin || { tail -n 30 "$C/g5b"; return 1; }
    vega_server_wait "$C/v5.log" || return 1
    cmp "$C/b1000" "$C/dl/two.bin" && expect_re "$C/g5b" "frm tx [0-9]+ 0RTT STREAM" &&
        expect_in "$C/v5.log" "resumed=yes early_data=accepted requests=1"
}
check "gtlsclient resumption + 0-RTT request -> vega server (tickets, early data accepted)" server_resume

server_streams() {
    body "$C/b1000" 1000
    vega_server "$C/v6.log" --count 1 --body-size 1000 || return 1
    gtls_client "$C/g6" -- x.bin y.bin z.bin || { tail -n 30 "$C/g6"; return 1; }
    vega_server_wait "$C/v6.log" || return 1
    cmp "$C/b1000" "$C/dl/x.bin" && cmp "$C/b1000" "$C/dl/y.bin" &&
        cmp "$C/b1000" "$C/dl/z.bin" && expect_in "$C/v6.log" "requests=3"
}
check "gtlsclient with 3 requests (3 bidirectional streams) -> vega server" server_streams

server_vn() {
    body "$C/b1000" 1000
    vega_server "$C/v7.log" --count 1 --body-size 1000 || return 1
    gtls_client "$C/g7" -v 0x1a2a3a4a --preferred-versions v1 -- vn.bin ||
        { tail -n 30 "$C/g7"; return 1; }
    vega_server_wait "$C/v7.log" || return 1
    cmp "$C/b1000" "$C/dl/vn.bin" && expect_in "$C/v7.log" "vn_sent=1" &&
        expect_in "$C/g7" "the negotiated version is 0x00000001"
}
check "gtlsclient with an unknown version -> vega server: Version Negotiation, then v1" server_vn

server_loss() {
    body "$C/b300k" 300000
    # A short idle timeout: the client's CONNECTION_CLOSE may be one of the packets it drops.
    vega_server "$C/v8.log" --count 1 --body-size 300000 --idle-ms 2000 || return 1
    gtls_client "$C/g8" -t 0.1 -r 0.1 -- lossy.bin || { tail -n 30 "$C/g8"; return 1; }
    vega_server_wait "$C/v8.log" || return 1
    cmp "$C/b300k" "$C/dl/lossy.bin"
}
check "gtlsclient with 10% loss each way -> vega server: 300 kB download intact" server_loss

server_rebind() {
    body "$C/b100k" 100000
    vega_server "$C/v9.log" --count 1 --body-size 100000 || return 1
    gtls_client "$C/g9" --change-local-addr=50ms --nat-rebinding --delay-stream=100ms -- nat.bin ||
        { tail -n 30 "$C/g9"; return 1; }
    vega_server_wait "$C/v9.log" || return 1
    cmp "$C/b100k" "$C/dl/nat.bin" && expect_in "$C/v9.log" "migrations=1 paths_validated=1"
}
check "gtlsclient NAT rebinding (same CID, new port) -> vega server: path validated, download intact" server_rebind

server_upload() {
    head -c 3000000 /dev/urandom >"$C/up.bin"
    vega_server "$C/v11.log" --count 1 --body-size 1000 || return 1
    gtls_client "$C/g11" -q -m POST -d "$C/up.bin" -- up || { tail -n 30 "$C/g11"; return 1; }
    vega_server_wait "$C/v11.log" || return 1
    # The request stream: HEADERS, then the 3,000,000 bytes in DATA frames.
    local n
    n="$(sed -nE 's/.* req_bytes=([0-9]+) .*/\1/p' "$C/v11.log")"
    if [ -z "$n" ] || [ "$n" -lt 3000000 ] || [ "$n" -ge 3001000 ]; then
        echo "req_bytes=$n, expected 3000000 plus framing"
        cat "$C/v11.log"
        return 1
    fi
}
check "gtlsclient POST of 3 MB -> vega server: receive flow control (window updates)" server_upload

server_flow() {
    body "$C/b1m" 1000000
    vega_server "$C/v13.log" --count 1 --body-size 1000000 || return 1
    gtls_client "$C/g13" -q --max-data=30000 --max-stream-data-bidi-local=10000 \
        --max-window=30000 --max-stream-window=10000 -- fc.bin || { tail -n 30 "$C/g13"; return 1; }
    vega_server_wait "$C/v13.log" || return 1
    cmp "$C/b1m" "$C/dl/fc.bin"
}
check "gtlsclient with 30 kB connection / 10 kB stream windows -> vega server: 1 MB, flow-control blocked" server_flow

server_alpn() {
    vega_server "$C/v14.log" --count 1 --alpn hq-interop || return 1
    gtls_client "$C/g14" -q -- alpn.bin
    vega_server_wait "$C/v14.log" || return 1
    expect_in "$C/v14.log" "close=CRYPTO_ERROR 0x178 (alert no_application_protocol) by us"
}
check "gtlsclient (h3) -> vega server (hq-interop only): no_application_protocol alert" server_alpn

server_noise() {
    body "$C/b1000" 1000
    vega_server "$C/v12.log" --count 1 --body-size 1000 || return 1
    udp_noise "$VPORT" 1200 || return 1
    gtls_client "$C/g12" -q -- after-noise.bin || { tail -n 30 "$C/g12"; return 1; }
    vega_server_wait "$C/v12.log" || return 1
    # No state for Initials that do not decrypt; Version Negotiation for unknown versions.
    cmp "$C/b1000" "$C/dl/after-noise.bin" && expect_re "$C/v12.log" "dropped_initials=[1-9]" &&
        expect_re "$C/v12.log" "vn_sent=[1-9]"
}
check "vega server after 1200 malformed datagrams: no state kept, then a normal GET" server_noise

# Active migration: gtlsclient moves to a new port with a new connection ID and validates the
# path. Our server answers its PATH_CHALLENGE on the new path in a packet of its own, which
# gtlsclient acknowledges at once (with -q it is fast enough to do so before the server sends
# anything else): this once closed the connection, as that packet was unrecorded in recovery.
server_migrate() {
    body "$C/b100k" 100000
    vega_server "$C/v10.log" --count 1 --body-size 100000 || return 1
    # -q: without its log gtlsclient is fast enough to acknowledge the PATH_RESPONSE packet
    # before the server sends another one.
    gtls_client "$C/g10" -q --change-local-addr=50ms --delay-stream=100ms -- mig.bin ||
        { tail -n 30 "$C/g10"; cat "$C/v10.log"; return 1; }
    vega_server_wait "$C/v10.log" || return 1
    cmp "$C/b100k" "$C/dl/mig.bin" || { cat "$C/v10.log"; return 1; }
    expect_in "$C/v10.log" "paths_validated=1" &&
        expect_re "$C/v10.log" "close=application error 0x100 by the peer"
}
check "gtlsclient active migration (new CID, new port) -> vega server" server_migrate

finish
