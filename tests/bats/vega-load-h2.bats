#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-load's HTTP/2 mode (--h2) as a user runs it, against real servers on loopback: vega-serve
# (h2c with --h2c, h2 over TLS with ALPN), nginx (http2 over TLS, h2c on a Unix socket), nghttpd;
# h2load (nghttp2-client) as the reference client over the same server; and a Python h2 server
# that refuses, resets, limits streams or sends GOAWAY on purpose. Exact -n counts over -c/-m/-t
# combinations, --json parsed by Python, status counts, the h2-specific lines, -R, bodies, TLS
# without h2, timeouts, SIGINT, usage errors. No timing thresholds: every run is bounded by -n or
# a short -d, and by timeout(1).

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
    command -p python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
if not ok:
    print("failed:", sys.argv[2], "on", json.dumps(j))
sys.exit(0 if ok else 1)' "$1" "$2"
}

load_run() {
    timeout 30 "$LOAD" "$@"
}

# load_json ARGS...: runs vega-load --json, stores the JSON line of its output in $T/out.json
# (stderr's messages are the other lines).
load_json() {
    run load_run --json "$@"
    echo "$output"
    printf '%s\n' "$output" | grep '^{' >"$T/out.json" || true
}

free_port() {
    command -p python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

make_cert() {
    [ -f "$T/cert.pem" ] && return 0
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$T/key.pem" -out "$T/cert.pem" >/dev/null 2>&1
}

# start_serve ARGS...: vega-serve on port 0 serving $T/www; sets PORT.
start_serve() {
    local serve
    serve="$(vega_bin vega-serve)"
    "$serve" --help 2>&1 | grep -q -- '--h2c' || skip "vega-serve does not serve HTTP/2"
    start_bg "$T/serve.log" "$serve" -p 0 --no-http3 "$@" "$T/www"
    wait_for_line "$T/serve.log" 'listening on' 10
    PORT="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$T/serve.log" | head -n1)"
    [ -n "$PORT" ]
}

start_h2c() {
    start_serve --h2c
    URL="http://127.0.0.1:$PORT"
}

start_h2tls() {
    make_cert
    start_serve --cert "$T/cert.pem" --key "$T/key.pem"
    URL="https://127.0.0.1:$PORT"
}

# start_nginx [nohttp2]: nginx over TLS with http2 (without: HTTP/1.1 only), and h2c on the Unix
# socket $T/ng/ng.sock; sets NG_URL.
start_nginx() {
    command -v nginx >/dev/null || skip "nginx is not installed"
    make_cert
    local p="$T/ng" h2="http2"
    [ "${1:-}" = nohttp2 ] && h2=""
    mkdir -p "$p"
    local port
    port="$(free_port)"
    cat >"$p/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
error_log stderr;
pid $p/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $p/body;
    proxy_temp_path $p/proxy;
    fastcgi_temp_path $p/fcgi;
    uwsgi_temp_path $p/uwsgi;
    scgi_temp_path $p/scgi;
    server {
        listen 127.0.0.1:$port ssl $h2;
        ssl_certificate $T/cert.pem;
        ssl_certificate_key $T/key.pem;
        root $T/www;
    }
    server {
        listen unix:$p/ng.sock $h2;
        root $T/www;
    }
}
EOF
    start_bg "$p/err.log" nginx -c "$p/nginx.conf" -p "$p"
    local i
    for ((i = 0; i < 200; i++)); do
        ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
        sleep 0.05
    done
    NG_URL="https://127.0.0.1:$port"
}

# start_pyh2 MODE [FILE]: the misbehaving h2c server (tests/bats/vega-load-h2-server.py); sets
# PY_URL.
start_pyh2() {
    command -p python3 -c 'import h2' 2>/dev/null || skip "python3-h2 is not installed"
    start_bg "$T/pyh2.log" command -p python3 -u "$BATS_TEST_DIRNAME/vega-load-h2-server.py" "$@"
    wait_for_line "$T/pyh2.log" 'listening on [0-9]+' 10
    PY_URL="http://127.0.0.1:$(sed -nE 's/listening on ([0-9]+)/\1/p' "$T/pyh2.log" | head -n1)"
}

# ---- vega-serve --------------------------------------------------------------------------------

@test "vega-load h2: h2c against vega-serve --h2c, -n 200 exact, all 200 OK, in --json" {
    start_h2c
    load_json h2 -c 4 -m 8 -n 200 "$URL/1k.bin"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["protocol"] == "h2c" and j["requests"] == 200'
    json_check "$T/out.json" 'j["status"] == {"200": 200} and j["status_classes"]["2xx"] == 200'
    json_check "$T/out.json" 'j["errors"] == 0 and j["connections"] == 4 and j["max_concurrent_streams"] == 8'
    json_check "$T/out.json" 'j["latency_us"]["count"] == 200 and 0 < j["latency_us"]["p50"] <= j["latency_us"]["max"]'
    # Bytes are the frames read: more than the 200 bodies; DATA is exactly them.
    json_check "$T/out.json" 'j["bytes"] > 200 * 1024 and j["h2"]["data_bytes"] == 200 * 1024'
    # h2c: a TCP connect per connection, no TLS; the first byte is the server's SETTINGS.
    json_check "$T/out.json" 'j["connects"] == 4 and j["connect_us"]["count"] == 4 and j["tls_us"]["count"] == 0'
    json_check "$T/out.json" 'j["first_byte_us"]["count"] == 4'
    # HPACK: the repeated request and responses compress.
    json_check "$T/out.json" '0 < j["h2"]["header_bytes"] < j["h2"]["header_bytes_decoded"]'
    json_check "$T/out.json" '0.5 < j["h2"]["request_header_space_savings"] < 1'
    json_check "$T/out.json" 'j["h2"]["streams_refused"] == 0 and j["h2"]["streams_reset"] == 0'
}

@test "vega-load --h2: TLS with ALPN h2 against vega-serve, --cacert and -k" {
    start_h2tls
    load_json --h2 -c 3 -m 4 -n 120 --cacert "$T/cert.pem" "$URL/index.html"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["protocol"] == "h2" and j["requests"] == 120 and j["status"] == {"200": 120}'
    json_check "$T/out.json" 'j["errors"] == 0 and j["tls_us"]["count"] == 3 and j["connect_us"]["count"] == 3'
    # As h2load: the TLS version, cipher and ALPN protocol of the handshake.
    json_check "$T/out.json" 'j["tls"].startswith("TLSv1.") and j["tls"].endswith(", ALPN h2")'
    load_json --h2 -c 2 -m 2 -n 40 -k "$URL/index.html"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] == 40 and j["errors"] == 0'
    # Without -k or --cacert the self-signed certificate is refused.
    run load_run --h2 -c 1 -n 5 "$URL/index.html"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"connect"* ]]
}

@test "vega-load --h2: exact -n over -c/-m combinations, and -t 2" {
    start_h2c
    for cm in "1 1" "1 16" "3 5" "8 2" "2 100"; do
        set -- $cm
        load_json --h2 -c "$1" -m "$2" -n 97 "$URL/index.html"
        [ "$status" -eq 0 ]
        json_check "$T/out.json" 'j["requests"] == 97 and j["status"] == {"200": 97} and j["errors"] == 0'
    done
    load_json --h2 -t 2 -c 6 -m 4 -n 301 "$URL/index.html"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["threads"] == 2 and j["requests"] == 301 and j["errors"] == 0'
}

@test "vega-load: --alpn-list h2, --alpn-list=h2,http/1.1, --http2 and the mode h2 are HTTP/2" {
    start_h2tls
    for a in "--alpn-list h2" "--alpn-list=h2,http/1.1" "--http2" "h2"; do
        # shellcheck disable=SC2086
        load_json $a -c 1 -m 2 -n 20 -k "$URL/index.html"
        [ "$status" -eq 0 ]
        json_check "$T/out.json" 'j["protocol"] == "h2" and j["requests"] == 20'
    done
}

@test "vega-load --h2: the text report names HTTP/2, the status, compression and streams" {
    start_h2c
    run load_run --h2 -c 2 -m 3 -n 30 "$URL/1k.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"HTTP/2 (h2c) with 3 streams per connection"* ]]
    [[ "$output" != *"TLS: "* ]]
    [[ "$output" == *"30 requests in"* ]]
    [[ "$output" == *"Status: 200 x 30"* ]]
    [[ "$output" == *"HTTP/2 headers: received "*" decoded (space savings "*"%), sent "*"; data received 30.00KB"* ]]
    [[ "$output" == *"HTTP/2 streams: 0 refused by the server (retried), 0 reset by the server; 0 GOAWAY received"* ]]
    [[ "$output" == *"Errors: connect 0, read 0, write 0, timeout 0, parse 0"* ]]
    [[ "$output" == *"Requests/sec:"* ]]
}

@test "vega-load --h2: status codes are counted by code (404), -d bounds a run" {
    start_h2c
    load_json --h2 -c 2 -m 4 -n 50 "$URL/missing"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] == 50 and j["status"] == {"404": 50} and j["status_classes"]["4xx"] == 50'
    load_json --h2 -c 2 -m 4 -d 300ms "$URL/index.html"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] > 0 and j["errors"] == 0 and set(j["status"]) == {"200"}'
}

@test "vega-load --h2 -R: a constant rate reports corrected and uncorrected latency" {
    start_h2c
    load_json --h2 -c 2 -m 4 -R 400 -d 500ms "$URL/index.html"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["rate"] == 400 and j["requests"] > 0 and j["errors"] == 0'
    json_check "$T/out.json" 'j["latency_uncorrected_us"]["count"] == j["latency_us"]["count"]'
}

@test "vega-load --h2: -R with -n is exact; SIGINT ends a -R run (its reader tasks too) with a report" {
    start_h2c
    load_json --h2 -c 2 -m 2 -R 1000 -n 100 "$URL/index.html"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] == 100 and j["latency_uncorrected_us"]["count"] == 100'
    # The header line is printed once the stop signals are blocked and the run starts.
    "$LOAD" --h2 -c 4 -m 2 -R 200 -d 30s "$URL/index.html" >"$T/out.txt" 2>"$T/err" &
    local pid=$! st=0
    VEGA_BG_PIDS+=("$pid")
    wait_for_line "$T/out.txt" '^Running 30s test' 10
    kill -INT "$pid"
    wait "$pid" || st=$?
    cat "$T/out.txt" "$T/err"
    [ "$st" -eq 130 ]
    grep -q 'Stopped early by SIGINT' "$T/out.txt"
}

# ---- nginx and h2load --------------------------------------------------------------------------

@test "vega-load --h2 against nginx (http2 over TLS): exact counts, and the same as h2load's" {
    start_nginx
    load_json --h2 -c 4 -m 10 -n 400 -k "$NG_URL/1k.bin"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["protocol"] == "h2" and j["requests"] == 400 and j["status"] == {"200": 400}'
    json_check "$T/out.json" 'j["errors"] == 0 and j["h2"]["data_bytes"] == 400 * 1024'
    # h2c over a Unix socket (-U), the URL giving the authority and path.
    load_json --h2 -U "$T/ng/ng.sock" -c 2 -m 4 -n 50 "http://localhost/1k.bin"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["protocol"] == "h2c" and j["requests"] == 50 and j["status"] == {"200": 50}'
    run load_run --h2 -c 1 -n 5 -k "$NG_URL/1k.bin"
    [[ "$output" == *"  TLS: TLSv1."*", ALPN h2"* ]]
    command -v h2load >/dev/null || skip "h2load is not installed (nghttp2-client)"
    run timeout 30 h2load -c 4 -m 10 -n 400 "$NG_URL/1k.bin"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"requests: 400 total, 400 started, 400 done, 400 succeeded, 0 failed, 0 errored"* ]]
    [[ "$output" == *"status codes: 400 2xx, 0 3xx, 0 4xx, 0 5xx"* ]]
    [[ "$output" == *"Application protocol: h2"* ]]
}

@test "vega-load --h2 and h2load agree on status counts against vega-serve (h2c, 404s)" {
    command -v h2load >/dev/null || skip "h2load is not installed (nghttp2-client)"
    start_h2c
    run timeout 30 h2load -c 2 -m 5 -n 60 "$URL/missing"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"requests: 60 total, 60 started, 60 done, 0 succeeded, 60 failed, 0 errored"* ]]
    [[ "$output" == *"status codes: 0 2xx, 0 3xx, 60 4xx, 0 5xx"* ]]
    load_json --h2 -c 2 -m 5 -n 60 "$URL/missing"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] == 60 and j["status_classes"] == {"2xx": 0, "3xx": 0, "4xx": 60, "5xx": 0}'
}

@test "vega-load --h2: a request body (--body, --method) over nginx" {
    start_nginx
    head -c 3000 /dev/zero >"$T/body.bin"
    # nginx answers a POST to a static file with 405; the body is sent whole either way.
    load_json --h2 -c 2 -m 3 -n 30 -k --body "$T/body.bin" "$NG_URL/index.html"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] == 30 and j["status"] == {"405": 30} and j["errors"] == 0'
    load_json --h2 -c 1 -m 2 -n 10 -k --method HEAD "$NG_URL/1k.bin"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] == 10 and j["status"] == {"200": 10} and j["h2"]["data_bytes"] == 0'
}

@test "vega-load --h2: a TLS server without HTTP/2 is a clear connect error" {
    start_nginx nohttp2
    run load_run --h2 -c 2 -n 10 -k "$NG_URL/index.html"
    echo "$output"
    [ "$status" -eq 1 ]
    # nginx refuses the handshake (no ALPN protocol in common); a server that completes it
    # without choosing h2 is told apart too.
    [[ "$output" == *"no ALPN protocol in common"* || "$output" == *"did not choose HTTP/2"* ]]
    [[ "$output" == *"all 2 connections failed"* ]]
    # openssl s_server completes the handshake without choosing a protocol.
    local port i
    port="$(free_port)"
    start_bg "$T/s_server.log" openssl s_server -quiet -accept "127.0.0.1:$port" \
        -cert "$T/cert.pem" -key "$T/key.pem"
    for ((i = 0; i < 200; i++)); do
        ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
        sleep 0.05
    done
    run load_run --h2 -c 1 -n 1 -k "https://127.0.0.1:$port/"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"did not choose HTTP/2 in the TLS handshake (ALPN: none)"* ]]
}

@test "vega-load --h2 against nghttpd (nghttp2's server): h2 over TLS and h2c" {
    command -v nghttpd >/dev/null || skip "nghttpd is not installed (nghttp2-server)"
    make_cert
    local port i
    for tls in yes no; do
        port="$(free_port)"
        if [ "$tls" = yes ]; then
            start_bg "$T/nghttpd.log" nghttpd -d "$T/www" "$port" "$T/key.pem" "$T/cert.pem"
        else
            start_bg "$T/nghttpd.log" nghttpd -d "$T/www" --no-tls "$port"
        fi
        for ((i = 0; i < 200; i++)); do
            ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
            sleep 0.05
        done
        if [ "$tls" = yes ]; then
            load_json --h2 -c 3 -m 6 -n 150 -k "https://127.0.0.1:$port/1k.bin"
            json_check "$T/out.json" 'j["protocol"] == "h2"'
        else
            load_json --h2 -c 3 -m 6 -n 150 "http://127.0.0.1:$port/1k.bin"
            json_check "$T/out.json" 'j["protocol"] == "h2c"'
        fi
        [ "$status" -eq 0 ]
        json_check "$T/out.json" 'j["requests"] == 150 and j["status"] == {"200": 150} and j["errors"] == 0'
        json_check "$T/out.json" 'j["h2"]["data_bytes"] == 150 * 1024'
    done
}

# ---- a misbehaving server ----------------------------------------------------------------------

@test "vega-load --h2: -H, --method and the URL's authority reach the server as HTTP/2 fields" {
    start_pyh2 record "$T/req.txt"
    load_json --h2 -c 1 -m 2 -n 4 -H 'X-Test: one two' -H 'Accept: */*' --method GET "$PY_URL/a/b?c=d"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] == 4 and j["status"] == {"200": 4}'
    cat "$T/req.txt"
    [ "$(grep -c '^:method: GET$' "$T/req.txt")" -eq 4 ]
    [ "$(grep -c '^:path: /a/b?c=d$' "$T/req.txt")" -eq 4 ]
    [ "$(grep -c '^:scheme: http$' "$T/req.txt")" -eq 4 ]
    [ "$(grep -c "^:authority: ${PY_URL#http://}$" "$T/req.txt")" -eq 4 ]
    [ "$(grep -c '^x-test: one two$' "$T/req.txt")" -eq 4 ]
    [ "$(grep -c '^accept: \*/\*$' "$T/req.txt")" -eq 4 ]
    # -H Host becomes :authority (RFC 9113 §8.3.1), not a host field; a body brings its length.
    : >"$T/req.txt"
    printf 'abc' >"$T/body.txt"
    load_json --h2 -c 1 -n 2 -H 'Host: example.test' --body "$T/body.txt" "$PY_URL/up"
    [ "$status" -eq 0 ]
    cat "$T/req.txt"
    [ "$(grep -c '^:authority: example.test$' "$T/req.txt")" -eq 2 ]
    [ "$(grep -c '^:method: POST$' "$T/req.txt")" -eq 2 ]
    [ "$(grep -c '^content-length: 3$' "$T/req.txt")" -eq 2 ]
    [ "$(grep -ci '^host:' "$T/req.txt")" -eq 0 ]
}

@test "vega-load --h2: refused streams are retried, so -n is still exact" {
    start_pyh2 refuse
    load_json --h2 -c 1 -m 4 -n 60 "$PY_URL/"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] == 60 and j["status"] == {"200": 60} and j["errors"] == 0'
    json_check "$T/out.json" 'j["h2"]["streams_refused"] >= 20'
}

@test "vega-load --h2: streams reset by the server are read errors, retried for -n" {
    start_pyh2 reset
    load_json --h2 -c 1 -m 2 -n 30 "$PY_URL/"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] == 30 and j["status"] == {"200": 30}'
    json_check "$T/out.json" 'j["h2"]["streams_reset"] >= 7 and j["read_errors"] == j["h2"]["streams_reset"]'
}

@test "vega-load --h2: GOAWAY moves on to a new connection without errors" {
    start_pyh2 goaway
    load_json --h2 -c 1 -m 3 -n 23 "$PY_URL/"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] == 23 and j["errors"] == 0'
    json_check "$T/out.json" 'j["h2"]["goaway_received"] >= 4 and j["reconnects"] >= 4'
}

@test "vega-load --h2: -m above the server's SETTINGS_MAX_CONCURRENT_STREAMS waits for streams" {
    start_pyh2 limit
    load_json --h2 -c 1 -m 16 -n 50 "$PY_URL/"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] == 50 and j["errors"] == 0 and j["status"] == {"200": 50}'
}

@test "vega-load --h2: -m 200 against vega-serve (100 streams) gets no stream refused" {
    start_h2c
    # At most 100 streams before the server's SETTINGS, as nghttp2 does; then its limit.
    load_json --h2 -c 2 -m 200 -n 2000 "$URL/index.html"
    [ "$status" -eq 0 ]
    json_check "$T/out.json" 'j["requests"] == 2000 and j["errors"] == 0 and j["h2"]["streams_refused"] == 0'
}

@test "vega-load --h2: a server that never answers is a timeout; a closed port a connect error" {
    cat >"$T/silent.py" <<'EOF'
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print("listening on", s.getsockname()[1], file=sys.stderr, flush=True)
held = []
while True:
    held.append(s.accept()[0])
EOF
    start_bg "$T/silent.log" command -p python3 -u "$T/silent.py"
    wait_for_line "$T/silent.log" 'listening on [0-9]+' 10
    local port
    port="$(sed -nE 's/listening on ([0-9]+)/\1/p' "$T/silent.log")"
    run load_run --h2 -c 1 -m 2 -d 600ms --timeout 200ms --json "http://127.0.0.1:$port/"
    echo "$output"
    [ "$status" -eq 1 ]
    printf '%s\n' "$output" | grep '^{' >"$T/out.json"
    json_check "$T/out.json" 'j["requests"] == 0 and j["timeout_errors"] >= 2'
    port="$(free_port)"
    run load_run --h2 -c 2 -n 10 "http://127.0.0.1:$port/"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"connect http://127.0.0.1:$port/"* ]]
}

# ---- usage -------------------------------------------------------------------------------------

@test "vega-load --h2: usage errors exit 2" {
    for args in "--h2 --h3 https://127.0.0.1:1/" "--h2 --pipeline 4 http://127.0.0.1:1/" \
        "--h2 -m 0 http://127.0.0.1:1/" "--h2 -m 1025 http://127.0.0.1:1/" \
        "--alpn-list h2 --h1 http://127.0.0.1:1/" "--alpn-list spdy/3 http://127.0.0.1:1/" \
        "--h2 -H Connection:close http://127.0.0.1:1/" "--h2 -H Content-Length:5 http://127.0.0.1:1/" \
        "--h2 --method G@T http://127.0.0.1:1/" "--h2 echo 127.0.0.1:1" "-m 4 http://127.0.0.1:1/"; do
        # shellcheck disable=SC2086
        run load_run $args
        echo "$args: $status $output"
        [ "$status" -eq 2 ]
    done
    run load_run --help
    [[ "$output" == *"--h2"*"h2c"* ]]
}

@test "vega-load --h2, --h3: -H Content-Length or Transfer-Encoding is a usage error naming the protocol" {
    local v h
    for v in 2 3; do
        for h in Content-Length:5 transfer-encoding:chunked; do
            run load_run "--h$v" -n 1 -H "$h" https://127.0.0.1:1/
            [ "$status" -eq 2 ]
            [[ "$output" == *"-H: Content-Length is set by vega-load (from --body), and HTTP/$v has no Transfer-Encoding"* ]]
        done
    done
}
