#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-load's HTTP/3 mode (--h3) as a user runs it, against real servers on loopback: ngtcp2's
# gtlsserver (HTTP/3 through nghttp3, Debian's ngtcp2-server) and vega-serve once it serves
# HTTP/3. Exact -n counts over -c/-m combinations, --json parsed by Python, status counts,
# -R, bodies, a wrong port, certificates (-k, --cacert, a self-signed one refused), --timeout
# against a stopped server, SIGINT. No timing thresholds: runs are bounded with timeout(1).

load helpers

setup() {
    LOAD="$(vega_bin vega-load)"
    T="$BATS_TEST_TMPDIR"
    mkdir -p "$T/www"
    printf 'hello\n' >"$T/www/index.html"
    head -c 1024 /dev/zero | tr '\0' 'x' >"$T/www/1k.bin"
}

teardown() {
    stop_bg_all
}

# json_check FILE EXPR: evaluates the Python expression EXPR with j = the parsed JSON in FILE.
json_check() {
    /usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
if not ok:
    print("failed:", sys.argv[2], "on", json.dumps(j))
sys.exit(0 if ok else 1)' "$1" "$2"
}

load_run() {
    timeout 60 "$LOAD" "$@"
}

# free_udp_port: a port of 127.0.0.1 nobody had bound a moment ago, for UDP and for TCP (a
# vega-serve started on it listens on both: a port free for UDP alone can be taken for TCP).
free_udp_port() {
    /usr/bin/python3 -c '
import socket
for _ in range(100):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 0))
    p = u.getsockname()[1]
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(p)
    break'
}

# wait_udp PORT: waits until something is bound to UDP port PORT (10 s at most).
wait_udp() {
    local i
    for ((i = 0; i < 200; i++)); do
        ss -Hlun "sport = :$1" 2>/dev/null | grep -q . && return 0
        sleep 0.05
    done
    echo "nothing bound to UDP port $1" >&2
    return 1
}

# make_cert: a P-256 certificate for localhost and 127.0.0.1 in $T/cert.pem, $T/key.pem.
make_cert() {
    [ -f "$T/cert.pem" ] && return 0
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$T/key.pem" -out "$T/cert.pem" >/dev/null 2>&1
}

# start_gtls: ngtcp2's HTTP/3 server on 127.0.0.1 serving $T/www; sets PORT and URL.
start_gtls() {
    command -v gtlsserver >/dev/null || skip "gtlsserver is not installed (Debian package ngtcp2-server)"
    make_cert
    PORT="$(free_udp_port)"
    start_bg "$T/gtls.log" gtlsserver --quiet --no-quic-dump --no-http-dump -d "$T/www" \
        127.0.0.1 "$PORT" "$T/key.pem" "$T/cert.pem"
    GTLS_PID="$BG_PID"
    wait_udp "$PORT"
    URL="https://127.0.0.1:$PORT"
}

# start_vega_h3 [ARG...]: vega-serve with HTTPS and HTTP/3 on one port (self-signed), the ARGs
# added to its command line; sets PORT and URL.
start_vega_h3() {
    local serve
    serve="$(vega_bin vega-serve 2>/dev/null)" || skip "vega-serve is not built"
    "$serve" --help 2>&1 | grep -q -- '--no-http3' ||
        skip "vega-serve does not serve HTTP/3 yet (no --no-http3 in its --help)"
    make_cert
    PORT="$(free_udp_port)"
    start_bg "$T/serve.log" "$serve" --cert "$T/cert.pem" --key "$T/key.pem" -p "$PORT" "$@" "$T/www"
    wait_udp "$PORT"
    URL="https://127.0.0.1:$PORT"
}

@test "vega-load --h3: -n 200 completes exactly 200, all 200 OK, in --json" {
    start_gtls
    run load_run --h3 -c 4 -m 8 -n 200 --cacert "$T/cert.pem" --json "$URL/1k.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/out.json"
    json_check "$T/out.json" 'j["protocol"] == "h3" and j["requests"] == 200'
    json_check "$T/out.json" 'j["status"] == {"200": 200} and j["status_classes"]["2xx"] == 200'
    json_check "$T/out.json" 'j["errors"] == 0 and j["connections"] == 4 and j["max_concurrent_streams"] == 8'
    json_check "$T/out.json" 'j["latency_us"]["count"] == 200 and 0 < j["latency_us"]["p50"] <= j["latency_us"]["max"]'
    # Bytes are the response streams' (HEADERS and DATA frames): more than the 200 bodies.
    json_check "$T/out.json" 'j["bytes"] > 200 * 1024'
    # QUIC's handshake is its connect: tls_us has one per connection, connect_us none.
    json_check "$T/out.json" 'j["connects"] == 4 and j["tls_us"]["count"] == 4 and j["connect_us"]["count"] == 0'
    json_check "$T/out.json" '1 <= j["first_byte_us"]["count"] <= 4 and j["rps"] > 0'
    json_check "$T/out.json" 'j["quic"]["packets_sent"] > 0 and j["quic"]["packets_received"] > 0'
}

@test "vega-load --h3: exact -n over -c/-m combinations" {
    start_gtls
    for cm in "1 1" "1 16" "3 5" "8 2" "2 64"; do
        set -- $cm
        run load_run --h3 -c "$1" -m "$2" -n 97 -k --json "$URL/index.html"
        echo "-c $1 -m $2: $output"
        [ "$status" -eq 0 ]
        printf '%s\n' "$output" >"$T/out.json"
        json_check "$T/out.json" 'j["requests"] == 97 and j["status"] == {"200": 97} and j["errors"] == 0'
    done
}

@test "vega-load --h3: -n with --warm-up still counts exactly -n" {
    start_gtls
    run load_run --h3 -c 2 -m 4 -n 150 --warm-up 200ms -k --json "$URL/1k.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/out.json"
    json_check "$T/out.json" 'j["requests"] == 150 and j["warm_up_s"] == 0.2'
}

@test "vega-load: --alpn-list h3, --alpn-list=h3,h2 and the mode h3 are --h3" {
    start_gtls
    for a in "--alpn-list h3" "--alpn-list=h3,h2" "h3"; do
        # shellcheck disable=SC2086
        run load_run $a -c 1 -m 2 -n 20 -k --json "$URL/index.html"
        echo "$a: $output"
        [ "$status" -eq 0 ]
        printf '%s\n' "$output" >"$T/out.json"
        json_check "$T/out.json" 'j["protocol"] == "h3" and j["requests"] == 20'
    done
}

@test "vega-load --h3: the text report names HTTP/3, the status and the QUIC handshake" {
    start_gtls
    run load_run --h3 -c 2 -m 3 -n 30 -k "$URL/1k.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"HTTP/3 with 3 streams per connection"* ]]
    [[ "$output" == *"30 requests in"* ]]
    [[ "$output" == *"Status: 200 x 30"* ]]
    [[ "$output" == *"QUIC handshake"* ]]
    [[ "$output" == *"QUIC packets: "*" sent, "*" received, "*" declared lost"* ]]
    [[ "$output" == *"Errors: connect 0, read 0, write 0, timeout 0, parse 0"* ]]
}

@test "vega-load --h3: status codes are counted (404)" {
    start_gtls
    run load_run --h3 -c 2 -m 2 -n 40 -k --json "$URL/no-such-file"
    echo "$output"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/out.json"
    json_check "$T/out.json" 'j["status"] == {"404": 40} and j["status_classes"]["4xx"] == 40 and j["errors"] == 0'
}

@test "vega-load --h3: -d runs for the duration with requests and no errors" {
    start_gtls
    run load_run --h3 -c 2 -m 4 -d 1s -k --json "$URL/1k.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/out.json"
    json_check "$T/out.json" 'j["requests"] > 0 and j["errors"] == 0 and j["duration_s"] > 0'
    json_check "$T/out.json" 'sum(j["status"].values()) == j["requests"] == j["latency_us"]["count"]'
}

@test "vega-load --h3: -R keeps a schedule and reports both latencies" {
    start_gtls
    run load_run --h3 -c 2 -m 2 -R 200 -d 1s -k --json "$URL/1k.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/out.json"
    json_check "$T/out.json" 'j["rate"] == 200 and j["requests"] > 0 and j["errors"] == 0'
    json_check "$T/out.json" 'j["latency_uncorrected_us"]["count"] == j["latency_us"]["count"] == j["requests"]'
    # At 200/s for 1 s, no more than the schedule allows (+1 per connection for rounding).
    json_check "$T/out.json" 'j["requests"] <= 202'
}

@test "vega-load --h3: --body, --method and -H go out (POST and HEAD)" {
    start_gtls
    head -c 100000 /dev/urandom >"$T/body.bin"
    run load_run --h3 -c 2 -m 2 -n 20 -k --body "$T/body.bin" -H 'X-Test: 1' --json "$URL/1k.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/out.json"
    json_check "$T/out.json" 'j["requests"] == 20 and j["errors"] == 0'
    run load_run --h3 -c 1 -m 4 -n 20 -k --method HEAD --json "$URL/1k.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/out.json"
    # HEAD: heads only, so far fewer bytes than 20 bodies of 1 KiB.
    json_check "$T/out.json" 'j["requests"] == 20 and j["status"] == {"200": 20} and j["bytes"] < 20 * 1024'
}

@test "vega-load --h3: usage errors (ALPN we do not speak, http://, -m without --h3 ...)" {
    run "$LOAD" --alpn-list spdy/3 -n 1 https://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"'spdy/3' is not supported"* ]]
    run "$LOAD" --alpn-list http/1.0,h3 -n 1 https://127.0.0.1:1/
    [ "$status" -eq 2 ]
    run "$LOAD" --h3 --h2 -n 1 https://127.0.0.1:1/
    [ "$status" -eq 2 ]
    run "$LOAD" --h3 -n 1 http://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"https://"* ]]
    run "$LOAD" -m 4 -n 1 https://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"-m is for HTTP/2 (--h2) and HTTP/3 (--h3)"* ]]
    run "$LOAD" --h3 -m 0 -n 1 https://127.0.0.1:1/
    [ "$status" -eq 2 ]
    run "$LOAD" --h3 --pipeline 4 -n 1 https://127.0.0.1:1/
    [ "$status" -eq 2 ]
    run "$LOAD" --h3 --alpn-list http/1.1 -n 1 https://127.0.0.1:1/
    [ "$status" -eq 2 ]
    run "$LOAD" --h3 -H 'Connection: close' -n 1 https://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"connection-specific"* ]]
    run "$LOAD" --h3 -c 5000 -n 1 https://127.0.0.1:1/
    [ "$status" -eq 2 ]
    run "$LOAD" --help
    [[ "$output" == *"--h3"* && "$output" == *"--max-concurrent-streams"* && "$output" == *"--alpn-list"* ]]
}

@test "vega-load --h3: a port nobody serves gives connect errors within --timeout" {
    local port
    port="$(free_udp_port)"
    run load_run --h3 -c 3 -n 10 -k --timeout 300ms --json "https://127.0.0.1:$port/"
    echo "$output"
    [ "$status" -eq 1 ]
    printf '%s\n' "$output" | grep '^{' >"$T/out.json"
    json_check "$T/out.json" 'j["requests"] == 0 and j["connect_errors"] == 3 and j["connections_failed"] == 3'
}

@test "vega-load --h3: a self-signed certificate is refused without -k (handshake error counted)" {
    start_gtls
    run load_run --h3 -c 2 -n 10 --json "$URL/index.html"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"QUIC handshake failed"* ]]
    printf '%s\n' "$output" | grep '^{' >"$T/out.json"
    json_check "$T/out.json" 'j["requests"] == 0 and j["connect_errors"] == 2 and j["connections_failed"] == 2'
    # The same with -k, and with --cacert naming the certificate, works.
    run load_run --h3 -c 2 -n 10 -k --json "$URL/index.html"
    [ "$status" -eq 0 ]
    run load_run --h3 -c 2 -n 10 --cacert "$T/cert.pem" --json "$URL/index.html"
    [ "$status" -eq 0 ]
    # --sni: the name the certificate is checked against.
    run load_run --h3 -c 1 -n 1 --cacert "$T/cert.pem" --sni other.example "$URL/index.html"
    [ "$status" -eq 1 ]
}

@test "vega-load --h3: requests to a stopped server time out and are counted" {
    start_gtls
    "$LOAD" --h3 -c 2 -m 2 -d 3s --timeout 300ms -k --json "$URL/1k.bin" >"$T/out.json" 2>"$T/err" &
    local pid=$!
    # Let requests complete for a second, then freeze the server (SIGSTOP): those in flight
    # time out, and the reconnects time out too until the end of -d.
    sleep 1
    kill -STOP "$GTLS_PID"
    wait "$pid" || true
    kill -CONT "$GTLS_PID"
    cat "$T/out.json" "$T/err"
    json_check "$T/out.json" 'j["requests"] > 0 and j["timeout_errors"] > 0'
    grep -q 'no complete response within' "$T/err"
}

@test "vega-load --h3: SIGINT stops the run early and reports what was measured" {
    start_gtls
    "$LOAD" --h3 -c 2 -m 2 -d 30s -k --json "$URL/1k.bin" >"$T/out.json" 2>"$T/err" &
    local pid=$! st=0
    sleep 1
    kill -INT "$pid"
    wait "$pid" || st=$?
    cat "$T/out.json" "$T/err"
    [ "$st" -eq 130 ]
    json_check "$T/out.json" 'j["interrupted"] is True and j["duration_s"] < 30'
}

@test "vega-load --h3 against vega-serve: exact -n, --json" {
    start_vega_h3
    run load_run --h3 -c 4 -m 8 -n 300 --cacert "$T/cert.pem" --json "$URL/1k.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/out.json"
    json_check "$T/out.json" 'j["requests"] == 300 and j["status"] == {"200": 300} and j["errors"] == 0'
}

@test "vega-load --h3 against vega-serve: -d with -c/-m and a 404" {
    start_vega_h3
    run load_run --h3 -c 2 -m 16 -d 1s -k --json "$URL/1k.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/out.json"
    json_check "$T/out.json" 'j["requests"] > 0 and j["errors"] == 0'
    run load_run --h3 -c 1 -m 4 -n 20 -k --json "$URL/missing"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/out.json"
    json_check "$T/out.json" 'j["status"] == {"404": 20}'
}

@test "vega-load --h3 against vega-serve: a server shutting down (GOAWAY) loses no request" {
    start_vega_h3
    "$LOAD" --h3 -c 2 -m 8 -d 4s -k --json "$URL/1k.bin" >"$T/out.json" 2>"$T/err" &
    local pid=$!
    sleep 1.5
    # SIGTERM: vega-serve sends GOAWAY (RFC 9114 §5.2) and finishes what it accepted; our
    # reconnects are refused or time out, which are connect errors, never lost requests.
    kill -TERM "$BG_PID"
    wait "$pid" || true
    cat "$T/out.json" "$T/err"
    json_check "$T/out.json" 'j["requests"] > 0 and j["read_errors"] == 0 and j["parse_errors"] == 0'
    json_check "$T/out.json" 'j["timeout_errors"] == 0 and j["write_errors"] == 0'
}

@test "vega-load --h3 -i FILE and --random-query: each request's path as the file and a fresh value give it" {
    start_vega_h3 --access-log "$T/access.log"
    printf 'x\n' >"$T/www/b.txt"
    printf '%s\n' "$URL/1k.bin" /b.txt >"$T/urls"
    run load_run --h3 -c 1 -m 1 -n 4 --cacert "$T/cert.pem" -i "$T/urls" --random-query v --json
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/out.json"
    json_check "$T/out.json" 'j["requests"] == 4 and j["status"] == {"200": 4}'
    wait_for_line "$T/access.log" 'b.txt.*HTTP/3' 10
    run grep -cE '"GET /1k.bin\?v=[0-9a-f]{16} HTTP/3' "$T/access.log"
    [ "$output" = 2 ]
    run grep -cE '"GET /b.txt\?v=[0-9a-f]{16} HTTP/3' "$T/access.log"
    [ "$output" = 2 ]
    run sh -c "grep -oE 'v=[0-9a-f]{16}' '$T/access.log' | sort -u | wc -l"
    [ "$output" = 4 ]
}
