#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-curl over HTTP/3 as a user runs it, against ngtcp2's HTTP/3 example server (gtlsserver,
# Debian package ngtcp2-server, with nghttp3) on loopback: downloads checked by sha256, many
# URLs on one connection, -v and -w, session files for resumption and 0-RTT, --http3 falling
# back to TCP (vega-serve, TLS only), Alt-Svc learned in one run and used in the next, and the
# exit codes of the failures. Without gtlsserver the file skips.

load helpers

setup_file() {
    local w="$BATS_FILE_TMPDIR/www"
    mkdir -p "$w"
    printf 'hello\n' >"$w/index.html"
    head -c $((7 * 1024 * 1024 + 4321)) /dev/urandom >"$w/big.bin"
    head -c 300000 /dev/urandom >"$w/mid.bin"
}

setup() {
    export PATH="$PATH:/usr/sbin:/sbin"
    command -v gtlsserver >/dev/null || skip "gtlsserver is not installed (Debian ngtcp2-server)"
    command -v openssl >/dev/null || skip "openssl (the command) is not installed"
    command -v ss >/dev/null || skip "ss (iproute2) is not installed"
    CURL="$(vega_bin vega-curl)"
    T="$BATS_TEST_TMPDIR"
    ln -s "$BATS_FILE_TMPDIR/www" "$T/www"
    # A CA and a certificate for localhost and 127.0.0.1 it signed.
    printf 'subjectAltName = DNS:localhost, IP:127.0.0.1\nextendedKeyUsage = serverAuth\n' \
        >"$T/ext.cnf"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/ca.key" \
        -out "$T/ca.pem" -days 1 -subj "/CN=vega-curl h3 bats CA" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/server.key" \
        -out "$T/server.csr" -subj "/CN=localhost" 2>/dev/null
    openssl x509 -req -in "$T/server.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
        -out "$T/server.pem" -days 1 -extfile "$T/ext.cnf" 2>/dev/null
}

teardown() {
    stop_bg_all
}

vc() {
    timeout 60 "$CURL" "$@"
}

bg() {
    local log="$1"
    shift
    "$@" >"$log" 2>&1 3>&- </dev/null &
    VEGA_BG_PIDS+=("$!")
}

free_udp_port() {
    command -p python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

free_port() {
    command -p python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_udp PORT: until something is bound to UDP 127.0.0.1:PORT.
wait_udp() {
    local i
    for ((i = 0; i < 200; i++)); do
        ss -Hlun "sport = :$1" 2>/dev/null | grep -q . && return 0
        sleep 0.05
    done
    echo "nothing bound to UDP port $1" >&2
    return 1
}

# start_gtls [ARGS...]: gtlsserver on $T/www, quiet; sets GPORT.
start_gtls() {
    GPORT="$(free_udp_port)"
    bg "$T/gtls.log" gtlsserver -q "$@" -d "$T/www" 127.0.0.1 "$GPORT" "$T/server.key" \
        "$T/server.pem"
    wait_udp "$GPORT"
}

# start_serve [ARGS...]: vega-serve with the same certificate over TCP + TLS only (without its
# own HTTP/3 where it has one); sets SPORT.
start_serve() {
    local log="$T/serve.$RANDOM.log" serve no_h3=()
    serve="$(vega_bin vega-serve)"
    if "$serve" --help 2>&1 | grep -q -- '--no-http3'; then
        no_h3=(--no-http3)
    fi
    bg "$log" "$serve" -p 0 "${no_h3[@]}" --cert "$T/server.pem" --key "$T/server.key" "$@" \
        "$T/www"
    wait_for_line "$log" 'listening on' 10
    SPORT="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$log" | head -n1)"
}

@test "--version lists HTTP3 and alt-svc; --help names the HTTP/3 options" {
    run "$CURL" --version
    [ "$status" -eq 0 ]
    [[ "$output" == *"HTTP3"* && "$output" == *"alt-svc"* ]]
    run "$CURL" --help
    [[ "$output" == *"--http3-only"* && "$output" == *"--tls-session-file"* ]]
    [[ "$output" == *"--alt-svc FILE"* && "$output" == *"--quic-version 1|2"* ]]
    run "$CURL" --quic-version 3 https://localhost/
    [ "$status" -eq 2 ]
}

@test "--http3-only: several-MB downloads byte-identical (sha256), to a file and to stdout" {
    start_gtls
    run vc -sS --http3-only --cacert "$T/ca.pem" -o "$T/big.out" "https://localhost:$GPORT/big.bin"
    [ "$status" -eq 0 ]
    [ "$(sha256sum <"$T/big.out")" = "$(sha256sum <"$T/www/big.bin")" ]
    [ "$(vc -s --http3-only --cacert "$T/ca.pem" "https://127.0.0.1:$GPORT/big.bin" | sha256sum)" = \
        "$(sha256sum <"$T/www/big.bin")" ]
}

@test "many URLs on one QUIC connection; -w %{http_version} is 3" {
    start_gtls
    local u="https://localhost:$GPORT"
    run vc -sSv --http3-only --cacert "$T/ca.pem" -o /dev/null -o /dev/null -o /dev/null \
        -o /dev/null -w '%{http_version} %{http_code} %{size_download} %{num_connects}\n' \
        "$u/mid.bin" "$u/index.html" "$u/big.bin" "$u/mid.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^\* QUIC: connected to' <<<"$output")" -eq 1 ]
    [ "$(grep -c '^\* Re-using existing HTTP/3 connection' <<<"$output")" -eq 3 ]
    [[ "$output" == *"3 200 300000 1"* ]]
    [[ "$output" == *"3 200 6 0"* ]]
    [[ "$output" == *"3 200 $((7 * 1024 * 1024 + 4321)) 0"* ]]
    grep -q '^\* using HTTP/3, stream 12$' <<<"$output"
}

@test "-v shows the QUIC handshake: address, version, ALPN, cipher; the heads as HTTP/3" {
    start_gtls
    run vc -sv --http3-only --cacert "$T/ca.pem" "https://localhost:$GPORT/index.html"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"* QUIC: connected to 127.0.0.1 port $GPORT (host localhost)"* ]]
    [[ "$output" == *"* QUIC: version 1 (0x00000001), ALPN h3, cipher TLS_AES_"* ]]
    [[ "$output" == *"* QUIC: full handshake, 0-RTT not offered"* ]]
    [[ "$output" == *"> GET /index.html HTTP/3"* ]]
    [[ "$output" == *"> host: localhost:$GPORT"* ]]
    [[ "$output" == *"< HTTP/3 200"* ]]
    [[ "$output" == *"hello"* ]]
    run vc -si --http3-only --cacert "$T/ca.pem" "https://localhost:$GPORT/index.html"
    [[ "${lines[0]}" == "HTTP/3 200"* ]]
}

@test "--tls-session-file: a private file; the next run resumes (and tries 0-RTT)" {
    start_gtls
    run vc -sv --http3-only --cacert "$T/ca.pem" --tls-session-file "$T/sess" \
        "https://localhost:$GPORT/index.html"
    [ "$status" -eq 0 ]
    [[ "$output" == *"full handshake"* ]]
    [ "$(stat -c %a "$T/sess")" = 600 ]
    [ "$(head -n1 "$T/sess")" = "vega-quic-session 1" ]
    grep -q "^localhost $GPORT [0-9]* [0-9a-f]* [0-9a-f]*$" "$T/sess"
    run vc -sv --http3-only --cacert "$T/ca.pem" --tls-session-file "$T/sess" \
        -w '%{http_code}\n' "https://localhost:$GPORT/index.html"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"* QUIC: session resumed, 0-RTT "* ]]
    [[ "$output" != *"0-RTT not offered"* ]]
    [[ "$output" == *"hello"* && "$output" == *"200"* ]]
    # a file that is not one is reported and ignored
    echo junk >"$T/junk"
    run vc -S --http3-only --cacert "$T/ca.pem" --tls-session-file "$T/junk" \
        "https://localhost:$GPORT/index.html"
    [ "$status" -eq 0 ]
    [[ "$output" == *"not a session file"* ]]
}

@test "SSLKEYLOGFILE: QUIC's secrets, the very lines GnuTLS logs on the server side; a 0600 file" {
    # GnuTLS (gtlsserver) writes the NSS key log of SSLKEYLOGFILE itself: both sides of the same
    # connection must log the same secret for each label and ClientHello random
    GPORT="$(free_udp_port)"
    SSLKEYLOGFILE="$T/server.keys" bg "$T/gtls.log" gtlsserver -q -d "$T/www" 127.0.0.1 \
        "$GPORT" "$T/server.key" "$T/server.pem"
    wait_udp "$GPORT"
    SSLKEYLOGFILE="$T/client.keys" run vc -sS --http3-only --cacert "$T/ca.pem" \
        -o /dev/null "https://localhost:$GPORT/mid.bin"
    [ "$status" -eq 0 ]
    [ "$(stat -c %a "$T/client.keys")" = 600 ]
    cat "$T/client.keys"
    [ "$(wc -l <"$T/client.keys")" -eq 4 ]
    local label
    for label in CLIENT_HANDSHAKE_TRAFFIC_SECRET SERVER_HANDSHAKE_TRAFFIC_SECRET \
        CLIENT_TRAFFIC_SECRET_0 SERVER_TRAFFIC_SECRET_0; do
        grep -Eq "^$label [0-9a-f]{64} [0-9a-f]{64}\$" "$T/client.keys"
        [ "$(grep "^$label " "$T/client.keys")" = "$(grep "^$label " "$T/server.keys" | sed 's/ *$//')" ]
    done
    # appended, never truncated: a second run adds its four lines
    SSLKEYLOGFILE="$T/client.keys" run vc -sS --http3-only --cacert "$T/ca.pem" \
        -o /dev/null "https://localhost:$GPORT/index.html"
    [ "$status" -eq 0 ]
    [ "$(wc -l <"$T/client.keys")" -eq 8 ]
    # a file that cannot be opened is reported, and the transfer goes on
    SSLKEYLOGFILE="$T/no/such/dir/keys" run vc -S --http3-only --cacert "$T/ca.pem" \
        -o /dev/null "https://localhost:$GPORT/index.html"
    [ "$status" -eq 0 ]
    [[ "$output" == *"SSLKEYLOGFILE"* ]]
}

@test "--http3 falls back to TCP where nothing answers on UDP, and uses QUIC where it can" {
    start_serve
    # the TCP side offers h2 and http/1.1, as curl's (vega-serve takes h2)
    run vc -sS --http3 --cacert "$T/ca.pem" -w ' %{http_version}' \
        "https://localhost:$SPORT/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = "hello
 2" ]
    start_gtls
    run vc -sS --http3 --cacert "$T/ca.pem" -w ' %{http_version}' \
        "https://localhost:$GPORT/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = "hello
 3" ]
    # http:// with --http3 goes by TCP, as curl's does
    run vc -sS --http3 -w ' %{http_version}' "http://127.0.0.1:1/"
    [ "$status" -eq 7 ]
}

@test "--alt-svc: one run learns h3 from an HTTP/2 response (curl's file format), the next uses it" {
    start_gtls
    start_serve -H "Alt-Svc: h3=\":$GPORT\"; ma=3600"
    run vc -sS --alt-svc "$T/altsvc.txt" --cacert "$T/ca.pem" -w ' %{http_version}' \
        "https://localhost:$SPORT/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = "hello
 2" ]
    cat "$T/altsvc.txt"
    grep -Eq "^h2 localhost $SPORT h3 localhost $GPORT \"[0-9]{8} [0-9:]{8}\" 0 0$" \
        "$T/altsvc.txt"
    run vc -sS --alt-svc "$T/altsvc.txt" --cacert "$T/ca.pem" -w ' %{http_version}' \
        "https://localhost:$SPORT/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = "hello
 3" ]
    # --http1.1 keeps to TCP whatever the cache says
    run vc -sS --http1.1 --alt-svc "$T/altsvc.txt" --cacert "$T/ca.pem" -w ' %{http_version}' \
        "https://localhost:$SPORT/index.html"
    [ "$output" = "hello
 1.1" ]
}

@test "exit codes: a certificate not trusted 60 (-k passes), a silent server 28, nothing listening 7, no common version 35" {
    start_gtls
    run vc -sS --http3-only "https://localhost:$GPORT/index.html"
    [ "$status" -eq 60 ]
    [[ "$output" == *"SSL certificate problem"* ]]
    run vc -sS -k --http3-only "https://localhost:$GPORT/index.html"
    [ "$status" -eq 0 ]
    # a UDP port that is bound and never read: the connect times out
    local silent
    silent="$(free_udp_port)"
    bg "$T/silent.log" command -p python3 -c "import socket,time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', $silent)); time.sleep(60)"
    wait_udp "$silent"
    run vc -sS --http3-only -m 1 "https://127.0.0.1:$silent/"
    [ "$status" -eq 28 ]
    # nothing bound: ICMP port unreachable, at once, as curl
    local none t0
    none="$(free_udp_port)"
    t0="$(now_ms)"
    run vc -sS --http3-only "https://127.0.0.1:$none/"
    [ "$status" -eq 7 ]
    [[ "$output" == *"Couldn't connect to server"* ]]
    [ $(($(now_ms) - t0)) -lt 5000 ]
    # QUIC v2 against a server without it (ngtcp2 0.12 knows only the v2 draft): Version
    # Negotiation finds no common version, a handshake failure
    run vc -sS --http3-only --quic-version 2 --cacert "$T/ca.pem" \
        "https://localhost:$GPORT/index.html"
    [ "$status" -eq 35 ]
    [[ "$output" == *"VERSION_NEGOTIATION_ERROR"* ]]
}

@test "--pinnedpubkey over HTTP/3: a matching key (sha256// or a PEM file) passes, another exits 90 (with -k too), gtlsserver and vega-serve" {
    local pin pub="$T/pub.pem"
    openssl x509 -in "$T/server.pem" -pubkey -noout >"$pub"
    pin="sha256//$(openssl pkey -pubin -in "$pub" -outform der | openssl dgst -sha256 -binary | base64)"
    local wrong="sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
    start_gtls
    local log="$T/serve-h3.log"
    bg "$log" "$(vega_bin vega-serve)" -p 0 --cert "$T/server.pem" --key "$T/server.key" "$T/www"
    wait_for_line "$log" 'HTTP/3 on udp' 10
    local vport
    vport="$(sed -nE 's/.*HTTP\/3 on udp [0-9.]+:([0-9]+)$/\1/p' "$log" | head -n1)"
    for port in "$GPORT" "$vport"; do
        run vc -s --http3-only --cacert "$T/ca.pem" --pinnedpubkey "$pin" \
            "https://localhost:$port/index.html"
        [ "$status" -eq 0 ]
        [ "$output" = "hello" ]
        run vc -s --http3-only -k --pinnedpubkey "$wrong;$pin" "https://localhost:$port/index.html"
        [ "$status" -eq 0 ]
        run vc -s --http3-only --cacert "$T/ca.pem" --pinnedpubkey "$pub" \
            "https://localhost:$port/index.html"
        [ "$status" -eq 0 ]
        run vc -sS --http3-only --cacert "$T/ca.pem" --pinnedpubkey "$wrong" \
            "https://localhost:$port/index.html"
        [ "$status" -eq 90 ]
        [[ "$output" == *"public key does not match pinned public key"* ]]
        run vc -sS --http3-only -k --pinnedpubkey "$wrong" "https://localhost:$port/index.html"
        [ "$status" -eq 90 ]
    done
    # --http3 races TCP (vega-serve answers on both): the pin holds on either path
    run vc -sS --http3 --cacert "$T/ca.pem" --pinnedpubkey "$wrong" \
        "https://localhost:$vport/index.html"
    [ "$status" -eq 90 ]
    run vc -s --http3 --cacert "$T/ca.pem" --pinnedpubkey "$pin" "https://localhost:$vport/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = "hello" ]
}

@test "--quic-migrate: the connection moves to a new local port mid-download and the new path validates (sha256 intact); a bad delay exits 2" {
    start_gtls
    run vc -sSv --http3-only --cacert "$T/ca.pem" --quic-migrate -o "$T/big.out" \
        "https://localhost:$GPORT/big.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(sha256sum <"$T/big.out")" = "$(sha256sum <"$T/www/big.bin")" ]
    grep -qE '^\* QUIC: migrated to local 127\.0\.0\.1:[0-9]+; the new path validated$' <<<"$output"
    run vc -sS --http3-only --cacert "$T/ca.pem" --quic-migrate=abc "https://localhost:$GPORT/"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--quic-migrate: expected milliseconds"* ]]
}
