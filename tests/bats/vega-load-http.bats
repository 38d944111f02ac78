#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-load's HTTP/1.1 mode as a user runs it, against real servers on loopback: Python's
# http.server, nginx when it is installed (plain, pipelined, TLS), and tiny raw servers that
# record the request, never answer, or answer garbage. Every run lasts a second at most.

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

# free_port: a TCP port nobody listens on right now.
free_port() {
    command -p python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_pyhttp: python3 -m http.server on an ephemeral port serving $T/www; sets PY_PORT.
start_pyhttp() {
    # One process (so that teardown kills it), its "Serving HTTP on ... port N" on stderr.
    start_bg "$T/py.log" command -p python3 -u -c '
import os, runpy, sys
os.dup2(2, 1)
sys.argv = ["http.server", "--bind", "127.0.0.1", "--directory", sys.argv[1], "0"]
runpy.run_module("http.server", run_name="__main__")' "$T/www"
    wait_for_line "$T/py.log" 'port [0-9]+' 10
    PY_PORT="$(sed -nE 's/.* port ([0-9]+) .*/\1/p' "$T/py.log" | head -n1)"
    [ -n "$PY_PORT" ]
}

# start_raw MODE [FILE]: a one-connection-at-a-time raw HTTP server; MODE record (append each
# request to FILE, answer 200 "ok"), silent (accept, never answer), garbage (a malformed
# response). Sets RAW_PORT.
start_raw() {
    cat >"$T/raw.py" <<'EOF'
import socket, sys
mode = sys.argv[1]
out = sys.argv[2] if len(sys.argv) > 2 else None
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
print("listening on", s.getsockname()[1], file=sys.stderr, flush=True)
held = []
while True:
    c, _ = s.accept()
    if mode == "silent":
        held.append(c)
        continue
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = c.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    cl = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            cl = int(value.strip())
    while len(body) < cl:
        chunk = c.recv(65536)
        if not chunk:
            break
        body += chunk
    if mode == "record":
        with open(out, "ab") as f:
            f.write(head + b"\r\n\r\n" + body + b"\n--end--\n")
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    else:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\n")
    c.close()
EOF
    start_bg "$T/raw.log" command -p python3 "$T/raw.py" "$@"
    wait_for_line "$T/raw.log" 'listening on' 10
    RAW_PORT="$(sed -nE 's/listening on ([0-9]+)/\1/p' "$T/raw.log" | head -n1)"
}

# start_nginx [tls]: nginx in the foreground on a free port serving $T/www (skips the test when
# nginx is not installed); with tls, over TLS with a fresh self-signed certificate. Sets NG_PORT.
start_nginx() {
    command -v nginx >/dev/null || skip "nginx is not installed"
    local p="$T/ng" listen
    mkdir -p "$p"
    NG_PORT="$(free_port)"
    listen="listen 127.0.0.1:$NG_PORT;"
    if [ "${1:-}" = tls ]; then
        command -v openssl >/dev/null || skip "openssl (the command) is not installed"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -keyout "$p/key.pem" -out "$p/cert.pem" -days 2 -subj /CN=localhost \
            -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
        listen="listen 127.0.0.1:$NG_PORT ssl; ssl_certificate $p/cert.pem; ssl_certificate_key $p/key.pem;"
    fi
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
        $listen
        listen unix:$p/ng.sock;
        root $T/www;
    }
}
EOF
    start_bg "$p/err.log" nginx -c "$p/nginx.conf" -p "$p"
    local i
    for ((i = 0; i < 100; i++)); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$NG_PORT") 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    cat "$p/err.log" >&2
    return 1
}

# ---- usage -----------------------------------------------------------------------------------

@test "usage errors exit 2 with a clear message" {
    local u="http://127.0.0.1:1/"
    run "$LOAD" -c 0 -n 1 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"-c: expected"* ]]
    run "$LOAD" --pipeline 0 -n 1 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--pipeline: expected 1..256"* ]]
    run "$LOAD" --pipeline 300 -n 1 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--pipeline: expected 1..256"* ]]
    run "$LOAD" -R 100 --pipeline 2 -n 1 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"-R and --pipeline cannot be combined"* ]]
    run "$LOAD" -R 0 -n 1 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"-R: expected"* ]]
    run "$LOAD" -H "NoColon" -n 1 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"-H: expected 'Name: value'"* ]]
    run "$LOAD" -H "Content-Length: 5" -n 1 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"Content-Length"* ]]
    run "$LOAD" --method "BAD METHOD" -n 1 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"invalid request"* ]]
    run "$LOAD" --body "$T/missing" -n 1 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--body: cannot open"* ]]
    run "$LOAD" -s 64 -n 1 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"-s is for echo mode"* ]]
    run "$LOAD" -k -n 1 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"-k needs an https:// URL"* ]]
    run "$LOAD" -n 1 ftp://127.0.0.1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"expected an http://, https://, ws:// or wss:// URL"* ]]
    run "$LOAD" -n 1 "http://user@127.0.0.1/"
    [ "$status" -eq 2 ]
    [[ "$output" == *"user names in URLs"* ]]
    run "$LOAD" -n 1 "http://127.0.0.1:99999/"
    [ "$status" -eq 2 ]
    [[ "$output" == *"invalid port"* ]]
    run "$LOAD" -n 1 http
    [ "$status" -eq 2 ]
    [[ "$output" == *"no URL"* ]]
    run "$LOAD" -n 1 h2 --pipeline 2 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--pipeline is for HTTP/1.1"* ]]
    run "$LOAD" -n 1 "$u" extra
    [ "$status" -eq 2 ]
    [[ "$output" == *"unexpected argument 'extra'"* ]]
    run "$LOAD" echo -n 1 "$u"
    [ "$status" -eq 2 ]
    [[ "$output" == *"'echo' takes HOST:PORT, not a URL"* ]]
    run "$LOAD" echo -H "A: b" -n 1 127.0.0.1:1
    [ "$status" -eq 2 ]
    [[ "$output" == *"are for HTTP mode"* ]]
    [[ "$output" == *"Try 'vega-load --help'"* ]]
}

@test "--help documents the HTTP mode" {
    run "$LOAD" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"vega-load [http] [options] URL"* ]]
    [[ "$output" == *"--pipeline N"* ]]
    [[ "$output" == *"-R, --rate N"* ]]
}

# ---- python http.server --------------------------------------------------------------------------

@test "python http.server: -n 200 gives exactly 200 requests, all status 200" {
    start_pyhttp
    run load_run -c 4 -n 200 "http://127.0.0.1:$PY_PORT/index.html"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Running test of 200 requests @ http://127.0.0.1:$PY_PORT/index.html"* ]]
    [[ "$output" == *"1 thread and 4 connections"* ]]
    [[ "$output" == *" 200 requests in "* ]]
    [[ "$output" == *"Status: 200 x 200 (2xx 200, 3xx 0, 4xx 0, 5xx 0)"* ]]
    [[ "$output" == *"Errors: connect 0, read 0, write 0, timeout 0, parse 0"* ]]
    [[ "$output" =~ 99\.99%\ +[0-9.]+(us|ms) ]]
    [[ "$output" =~ Requests/sec:\ +[0-9.]+ ]]
    [[ "$output" =~ Transfer/sec:\ +[0-9.]+(B|KB|MB) ]]
    # HTTP/1.0 answers close the connection: each request after the first reconnects.
    [[ "$output" == *"Connections: "*" connects, "*" reconnects"* ]]
}

@test "python http.server: --json has the keys; a 404 is a status, not an error" {
    start_pyhttp
    load_run -c 2 -n 50 --json "http://127.0.0.1:$PY_PORT/missing" >"$T/out.json"
    command -p python3 -c 'import json,sys; json.load(sys.stdin)' <"$T/out.json"
    [ "$(wc -l <"$T/out.json")" -eq 1 ]
    json_check "$T/out.json" 'j["requests"] == 50 and j["status"] == {"404": 50} and j["errors"] == 0'
    json_check "$T/out.json" 'j["status_classes"]["4xx"] == 50 and j["mode"] == "http"'
    json_check "$T/out.json" 'all(k in j["latency_us"] for k in ("p50","p90","p99","p999","p9999","max"))'
    json_check "$T/out.json" 'j["latency_us"]["p50"] <= j["latency_us"]["p99"] <= j["latency_us"]["max"]'
    json_check "$T/out.json" 'all(k in j for k in ("rps","bytes","duration_s","connect_us","tls_us","first_byte_us"))'
    json_check "$T/out.json" 'all(k in j["errors_by_kind"] for k in ("connect","read","write","timeout","parse"))'
    json_check "$T/out.json" 'j["rps"] > 0 and j["bytes"] > 0 and j["connect_us"]["count"] >= 2'
    json_check "$T/out.json" '"latency_uncorrected_us" not in j'
}

@test "python http.server: -R runs at the rate and prints corrected and uncorrected latency" {
    start_pyhttp
    run load_run -c 2 -R 100 -d 1s "http://127.0.0.1:$PY_PORT/index.html"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Constant rate: 100 requests/s"* ]]
    [[ "$output" == *"corrected  uncorrected"* ]]
    [[ "$output" == *"(uncorr.)"* ]]
    local n
    n="$(sed -nE 's/^ +([0-9]+) requests in .*/\1/p' <<<"$output")"
    [ "$n" -ge 80 ]
    [ "$n" -le 101 ]
    load_run -c 2 -R 100 -d 500ms --json "http://127.0.0.1:$PY_PORT/" >"$T/r.json"
    json_check "$T/r.json" 'j["rate"] == 100 and "latency_uncorrected_us" in j'
    json_check "$T/r.json" 'j["latency_uncorrected_us"]["p50"] <= j["latency_us"]["max"]'
}

# ---- raw servers -------------------------------------------------------------------------------

@test "-H, --method and --body are sent as given" {
    start_raw record "$T/req.txt"
    printf '{"k": 1}' >"$T/body.json"
    run load_run -c 1 -n 2 -H "X-Test: abc 123" -H "Accept:  */*  " --method PUT \
        --body "$T/body.json" "http://127.0.0.1:$RAW_PORT/up?x=1#frag"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Status: 200 x 2"* ]]
    run cat "$T/req.txt"
    [[ "$output" == *"PUT /up?x=1 HTTP/1.1"* ]]
    [[ "$output" == *"Host: 127.0.0.1:$RAW_PORT"* ]]
    [[ "$output" == *"X-Test: abc 123"* ]]
    [[ "$output" == *"Accept: */*"* ]]
    [[ "$output" == *"Content-Length: 8"* ]]
    [[ "$output" == *'{"k": 1}'* ]]
    [ "$(grep -c -- '--end--' "$T/req.txt")" -eq 2 ]
    # --body alone makes a POST; -H Host replaces the URL's.
    : >"$T/req.txt"
    load_run -c 1 -n 1 -H "Host: example.test" --body "$T/body.json" \
        "http://127.0.0.1:$RAW_PORT/" >/dev/null
    run cat "$T/req.txt"
    [[ "$output" == *"POST / HTTP/1.1"* ]]
    [[ "$output" == *"Host: example.test"* ]]
    [[ "$output" != *"Host: 127.0.0.1"* ]]
}

@test "-H @FILE reads a header per line (CRLF or LF, empty lines skipped), beside -H" {
    start_raw record "$T/req.txt"
    printf 'X-One: 1\r\n\r\nX-Two:  two words  \n' >"$T/h.txt"
    run load_run -c 1 -n 1 -H @"$T/h.txt" -H "X-Three: 3" "http://127.0.0.1:$RAW_PORT/"
    [ "$status" -eq 0 ]
    run cat "$T/req.txt"
    [[ "$output" == *$'X-One: 1\r\n'* ]]
    [[ "$output" == *$'X-Two: two words\r\n'* ]]
    [[ "$output" == *$'X-Three: 3\r\n'* ]]
    # a missing file, a line that is not a header, a file over the head limit: usage errors
    run "$LOAD" -n 1 -H @"$T/missing" "http://127.0.0.1:$RAW_PORT/"
    [ "$status" -eq 2 ]
    [[ "$output" == *"-H @$T/missing: No such file"* ]]
    printf 'X-A: 1\nnot a header\n' >"$T/bad.txt"
    run "$LOAD" -n 1 -H @"$T/bad.txt" "http://127.0.0.1:$RAW_PORT/"
    [ "$status" -eq 2 ]
    [[ "$output" == *"-H: expected 'Name: value', got 'not a header'"* ]]
    head -c 70000 /dev/zero | tr '\0' 'a' >"$T/big.txt"
    run "$LOAD" -n 1 -H @"$T/big.txt" "http://127.0.0.1:$RAW_PORT/"
    [ "$status" -eq 2 ]
    [[ "$output" == *"over 64 KiB"* ]]
}

@test "--connect-to HOST1:PORT1:HOST2:PORT2 connects elsewhere; Host stays the URL's; the first match wins" {
    start_raw record "$T/req.txt"
    run load_run -c 1 -n 2 --connect-to other.test:80:127.0.0.2:1 \
        --connect-to example.test:80:127.0.0.1:"$RAW_PORT" --connect-to ::127.0.0.1:1 \
        "http://example.test/p"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Status: 200 x 2"* ]]
    run cat "$T/req.txt"
    [[ "$output" == *$'Host: example.test\r\n'* ]]
    # empty parts: any host and port, the URL's host
    : >"$T/req.txt"
    run load_run -c 1 -n 1 --connect-to "::127.0.0.1:$RAW_PORT" "http://example.test:8/"
    [ "$status" -eq 0 ]
    grep -q $'Host: example.test:8\r' "$T/req.txt"
    run load_run -c 1 -n 1 --connect-to ":1:127.0.0.1:$RAW_PORT" "http://127.0.0.1:1/"
    [ "$status" -eq 0 ]
    # no match: the URL's own address (nothing listens on port 1)
    run load_run -c 1 -n 1 --connect-to "other.test::127.0.0.1:$RAW_PORT" "http://127.0.0.1:1/"
    [ "$status" -eq 1 ]
    [[ "$output" == *"refused"* ]]
    run "$LOAD" -n 1 --connect-to "a:b" "http://127.0.0.1:1/"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--connect-to: expected HOST1:PORT1:HOST2:PORT2, got 'a:b'"* ]]
    run "$LOAD" -n 1 --connect-to "a:1:b:99999" "http://127.0.0.1:1/"
    [ "$status" -eq 2 ]
    [[ "$output" == *"invalid port '99999'"* ]]
}

@test "--timeout: a server that never answers counts timeouts; exit 1 when nothing completed" {
    start_raw silent
    run load_run -c 2 -d 700ms --timeout 200ms --json "http://127.0.0.1:$RAW_PORT/"
    [ "$status" -eq 1 ]
    [[ "$output" == *"no complete response within 200.00ms (--timeout); reconnecting"* ]]
    [[ "$output" == *"no request completed"* ]]
    json_check <(grep '^{' <<<"$output") 'j["timeout_errors"] >= 2 and j["requests"] == 0 and j["reconnects"] >= 2'
}

@test "a malformed response counts as a parse error" {
    start_raw garbage
    run load_run -c 1 -d 300ms --json "http://127.0.0.1:$RAW_PORT/"
    [ "$status" -eq 1 ]
    [[ "$output" == *"malformed response (VEGA_HTTP1_E_CONTENT_LENGTH)"* ]]
    json_check <(grep '^{' <<<"$output") 'j["parse_errors"] >= 1 and j["errors_by_kind"]["parse"] == j["parse_errors"]'
}

@test "connection refused: exit 1 with a message" {
    local port
    port="$(free_port)"
    run load_run -c 3 -n 10 "http://127.0.0.1:$port/"
    [ "$status" -eq 1 ]
    [[ "$output" == *"connect http://127.0.0.1:$port/: Connection refused"* ]]
    [[ "$output" == *"all 3 connections failed"* ]]
}

# ---- nginx ------------------------------------------------------------------------------------

@test "nginx: -d with keep-alive, 2 threads, warm-up" {
    start_nginx
    run load_run -t 2 -c 8 --warm-up 200ms -d 500ms "http://127.0.0.1:$NG_PORT/1k.bin"
    [ "$status" -eq 0 ]
    [[ "$output" == *"2 threads and 8 connections"* ]]
    [[ "$output" == *"200ms warm-up first, not counted"* ]]
    # nginx closes a keep-alive connection after 1000 requests (keepalive_requests): reconnects,
    # not errors.
    [[ "$output" =~ Connections:\ [0-9]+\ connects,\ [0-9]+\ reconnects ]]
    [[ "$output" == *"Errors: connect 0, read 0, write 0, timeout 0, parse 0"* ]]
    [[ "$output" =~ Req/Sec\ +[0-9.]+k? ]]
    # The same over nginx's Unix socket: Host still comes from the URL.
    load_run -c 2 -n 100 -U "$T/ng/ng.sock" --json "http://localhost/index.html" >"$T/u.json"
    json_check "$T/u.json" 'j["requests"] == 100 and j["status"] == {"200": 100}'
}

@test "nginx: --pipeline 4 with -n 1000 gives exactly 1000 responses" {
    start_nginx
    load_run -c 3 --pipeline 4 -n 1000 --json "http://127.0.0.1:$NG_PORT/1k.bin" >"$T/p.json"
    json_check "$T/p.json" 'j["requests"] == 1000 and j["status"] == {"200": 1000} and j["errors"] == 0'
    json_check "$T/p.json" 'j["pipeline"] == 4 and j["bytes"] > 1000 * 1024'
    load_run -c 2 --pipeline 8 -d 300ms --method HEAD --json "http://127.0.0.1:$NG_PORT/1k.bin" >"$T/h.json"
    json_check "$T/h.json" 'j["requests"] > 0 and j["errors"] == 0 and list(j["status"]) == ["200"]'
    json_check "$T/h.json" 'j["bytes"] < j["requests"] * 1024'
}

@test "nginx over TLS: -k, --cacert, and a failed verification" {
    start_nginx tls
    run load_run -c 2 -n 100 -k "https://127.0.0.1:$NG_PORT/index.html"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Status: 200 x 100"* ]]
    [[ "$output" == *"TLS handshake"* ]]
    load_run -c 2 -n 20 --cacert "$T/ng/cert.pem" --json "https://localhost:$NG_PORT/" >"$T/t.json"
    json_check "$T/t.json" 'j["requests"] == 20 and j["tls_us"]["count"] >= 2'
    run load_run -c 2 -n 10 "https://127.0.0.1:$NG_PORT/"
    [ "$status" -eq 1 ]
    [[ "$output" == *"certificate verify failed"* ]]
}
