#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-curl over HTTP/2 as a user runs it: against vega-serve (--tls: ALPN h2; --h2c: prior
# knowledge and Upgrade), nghttpd (nghttp2-server: TLS and cleartext, uploads echoed), nginx (http2
# over TLS) and Caddy (Go's HTTP/2), compared with the real curl where it is installed. Ephemeral ports only; the whole file
# stays well under a minute.

load helpers

setup_file() {
    local w="$BATS_FILE_TMPDIR/www"
    mkdir -p "$w"
    printf 'hello\n' >"$w/file.txt"
    head -c $((3 * 1024 * 1024)) /dev/urandom >"$w/big.bin"
    for i in 1 2 3 4 5 6 7 8; do printf 'part %s\n' "$i" >"$w/p$i.txt"; done
}

setup() {
    CURL="$(vega_bin vega-curl)"
    SERVE="$(vega_bin vega-serve)"
    T="$BATS_TEST_TMPDIR"
    W="$BATS_FILE_TMPDIR/www"
}

teardown() {
    stop_bg_all
}

vc() {
    timeout 30 "$CURL" "$@"
}

bg() {
    local log="$1"
    shift
    "$@" >"$log" 2>&1 3>&- </dev/null &
    VEGA_BG_PIDS+=("$!")
}

free_port() {
    command -p python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() {
    local i
    for ((i = 0; i < 200; i++)); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    echo "nothing listens on port $1" >&2
    return 1
}

# serve ARGS...: vega-serve on a free port over $W; sets SPORT.
serve() {
    bg "$T/serve.log" "$SERVE" -p 0 --no-http3 "$@" "$W"
    wait_for_line "$T/serve.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    SPORT="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/serve.log" | head -1)"
}

certs() {
    command -v openssl >/dev/null || skip "openssl (the command) is not installed"
    printf '[server]\nsubjectAltName = DNS:localhost, IP:127.0.0.1\nextendedKeyUsage = serverAuth\n' \
        >"$T/ext.cnf"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/ca.key" \
        -out "$T/ca.pem" -days 1 -subj "/CN=vega-curl h2 CA" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/server.key" \
        -out "$T/server.csr" -subj "/CN=server" 2>/dev/null
    openssl x509 -req -in "$T/server.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
        -out "$T/server.pem" -days 1 -extfile "$T/ext.cnf" -extensions server 2>/dev/null
}

# ---- vega-serve ------------------------------------------------------------------------------

@test "https is HTTP/2 by default: -v shows ALPN and the stream, -w says 2, -i writes HTTP/2 200" {
    serve --tls
    run vc -skv "https://127.0.0.1:$SPORT/file.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"* ALPN: server accepted h2"* ]]
    [[ "$output" == *"* using HTTP/2, stream 1"* ]]
    [[ "$output" == *"> GET /file.txt HTTP/2"* ]]
    [[ "$output" == *"< HTTP/2 200"* ]]
    [[ "$output" == *"hello"* ]]
    run vc -sk -o /dev/null -w '%{http_version} %{http_code}' "https://127.0.0.1:$SPORT/file.txt"
    [ "$output" = "2 200" ]
    run vc -sk --http2 -o "$T/big" "https://127.0.0.1:$SPORT/big.bin"
    [ "$status" -eq 0 ]
    cmp "$T/big" "$W/big.bin"
    # the status line byte for byte as curl writes it ("HTTP/2 200 ")
    vc -sk -i "https://127.0.0.1:$SPORT/file.txt" | head -1 >"$T/vh"
    grep -q $'^HTTP/2 200 \r$' "$T/vh"
    if command -v curl >/dev/null; then
        curl -sk -i "https://127.0.0.1:$SPORT/file.txt" | head -1 >"$T/ch"
        cmp "$T/vh" "$T/ch"
    fi
    # --http1.1 keeps to HTTP/1.1 (ALPN offers http/1.1 alone)
    run vc -skv --http1.1 -o /dev/null -w '%{http_version}' "https://127.0.0.1:$SPORT/file.txt"
    [[ "$output" == *"ALPN: server accepted http/1.1"* ]]
    [[ "$output" == *"1.1" ]]
}

@test "-v shows the TLS handshake's messages as curl -v does (TLS 1.3 and 1.2), --trace dumps their bytes" {
    certs
    serve --tls --cert "$T/server.pem" --key "$T/server.key"
    run vc -sv --cacert "$T/ca.pem" -o /dev/null "https://localhost:$SPORT/file.txt"
    [ "$status" -eq 0 ]
    grep -E '^\* TLSv1\.[23] ' <<<"$output" | grep -v 'close notify' >"$T/v13.txt"
    cat "$T/v13.txt"
    grep -qx '\* TLSv1.3 (OUT), TLS handshake, Client hello (1):' "$T/v13.txt"
    grep -qx '\* TLSv1.3 (IN), TLS handshake, CERT verify (15):' "$T/v13.txt"
    grep -qx '\* TLSv1.3 (OUT), TLS handshake, Finished (20):' "$T/v13.txt"
    # the handshake comes before the request is shown
    [ "$(grep -n 'Client hello' <<<"$output" | cut -d: -f1)" -lt "$(grep -n '^> GET' <<<"$output" | cut -d: -f1)" ]
    run vc -sv --tlsv1.2 --tls-max 1.2 --cacert "$T/ca.pem" -o /dev/null "https://localhost:$SPORT/file.txt"
    [ "$status" -eq 0 ]
    grep -qx '\* TLSv1.2 (IN), TLS handshake, Server key exchange (12):' <<<"$output"
    grep -qx '\* TLSv1.2 (OUT), TLS handshake, Client key exchange (16):' <<<"$output"
    # --trace: each message is a note and its bytes ("SSL data"); the ClientHello's header
    # (5 bytes, a handshake record: 16 03 01) goes first
    vc -s --cacert "$T/ca.pem" --trace "$T/t.txt" -o /dev/null "https://localhost:$SPORT/file.txt"
    [ "$(head -n1 "$T/t.txt")" = "=> Send SSL data, 5 bytes (0x5)" ]
    sed -n 2p "$T/t.txt" | grep -q '^0000: 16 03 01 '
    [ "$(sed -n 3p "$T/t.txt")" = "== Info: TLSv1.3 (OUT), TLS handshake, Client hello (1):" ]
    grep -q '^<= Recv SSL data, ' "$T/t.txt"
    # no TLS notes without -v or --trace
    run vc -s --cacert "$T/ca.pem" -o /dev/null "https://localhost:$SPORT/file.txt"
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    if command -v curl >/dev/null; then
        curl -sv --cacert "$T/ca.pem" -o /dev/null "https://localhost:$SPORT/file.txt" 2>&1 |
            grep -E '^\* TLSv1\.[23] ' | grep -v 'close notify' >"$T/curl13.txt"
        diff "$T/curl13.txt" "$T/v13.txt"
    fi
}

@test "--trace shows each HTTP/2 frame both ways as curl 8 does ([HTTP/2] [1] <- FRAME[HEADERS, ...]), over h2 and h2c" {
    serve --tls
    # two transfers on the connection: our SETTINGS ack is written when the writer task next
    # runs, which a one-transfer run may end before (then it goes at the connection's close,
    # not shown: curl 7.88 shows nothing after its transfers); the second request's HEADERS
    # go out after it, in the same writer, before the second transfer can end
    vc -sk --trace-ascii "$T/t.txt" -o /dev/null -o /dev/null \
        "https://127.0.0.1:$SPORT/file.txt" "https://127.0.0.1:$SPORT/file.txt"
    grep '\[HTTP/2\]' "$T/t.txt"
    local frames
    frames="$(sed -n 's/^== Info: \[HTTP\/2\] //p' "$T/t.txt")"
    # our SETTINGS goes first, then the request; the server's SETTINGS is acknowledged
    grep -qx '\[3\] -> FRAME\[HEADERS, len=[0-9]*, hend=1, eos=1\]' <<<"$frames"
    [ "$(head -n1 <<<"$frames")" = "[0] -> FRAME[SETTINGS, len=30]" ]
    grep -qx '\[1\] -> FRAME\[HEADERS, len=[0-9]*, hend=1, eos=1\]' <<<"$frames"
    grep -qx '\[0\] <- FRAME\[SETTINGS, len=[0-9]*\]' <<<"$frames"
    grep -qx '\[0\] -> FRAME\[SETTINGS, ack=1\]' <<<"$frames"
    grep -qx '\[0\] <- FRAME\[SETTINGS, ack=1\]' <<<"$frames"
    grep -qx '\[1\] <- FRAME\[HEADERS, len=[0-9]*, hend=1, eos=0\]' <<<"$frames"
    grep -qx '\[1\] <- FRAME\[DATA, len=6, eos=1, padlen=0\]' <<<"$frames"
    # HTTP/1.1 has no frames
    vc -sk --http1.1 --trace-ascii "$T/h1.txt" -o /dev/null "https://127.0.0.1:$SPORT/file.txt"
    run grep -c 'HTTP/2\]' "$T/h1.txt"
    [ "$output" = "0" ]
    # a body goes as DATA that ends the stream; h2c by prior knowledge too
    stop_bg_all
    serve --h2c
    vc -s --http2-prior-knowledge --trace-ascii "$T/p.txt" -d 'a=1&b=2' -o /dev/null \
        "http://127.0.0.1:$SPORT/file.txt" || true
    grep -q '^== Info: \[HTTP/2\] \[1\] -> FRAME\[HEADERS, len=[0-9]*, hend=1, eos=0\]$' "$T/p.txt"
    grep -q '^== Info: \[HTTP/2\] \[1\] -> FRAME\[DATA, len=7, eos=1, padlen=0\]$' "$T/p.txt"
    grep -q '^== Info: \[HTTP/2\] \[1\] <- FRAME\[HEADERS, ' "$T/p.txt"
}

@test "-D FILE and -D - write the HTTP/2 heads as curl does (status line and names)" {
    serve --tls
    run vc -sk -D "$T/d" "https://127.0.0.1:$SPORT/p1.txt" "https://127.0.0.1:$SPORT/p2.txt"
    [ "$status" -eq 0 ]
    [ "$output" = "$(printf 'part 1\npart 2')" ]
    [ "$(grep -c $'^HTTP/2 200 \r$' "$T/d")" -eq 2 ]
    run vc -sk -D - -o /dev/null "https://127.0.0.1:$SPORT/p1.txt"
    [[ "$output" == "HTTP/2 200 "* ]]
    [[ "$output" == *"content-length: 7"* ]]
    if command -v curl >/dev/null; then
        curl -sk -D "$T/c" -o /dev/null "https://127.0.0.1:$SPORT/p1.txt" "https://127.0.0.1:$SPORT/p2.txt"
        cmp <(cut -d: -f1 "$T/d") <(cut -d: -f1 "$T/c")
    fi
}

@test "a server without HTTP/2: ALPN falls back to HTTP/1.1" {
    serve --tls --no-http2
    run vc -skv -o /dev/null -w '%{http_version}' "https://127.0.0.1:$SPORT/file.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"ALPN: server accepted http/1.1"* ]]
    [[ "$output" == *"1.1" ]]
}

@test "h2c: --http2-prior-knowledge speaks HTTP/2 at once; --http2 on http:// upgrades (101), as curl" {
    serve --h2c
    run vc -sv --http2-prior-knowledge "http://127.0.0.1:$SPORT/file.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"* using HTTP/2, stream 1"* ]]
    [[ "$output" == *"< HTTP/2 200"* ]]
    [[ "$output" != *"ALPN"* ]]
    run vc -s --http2-prior-knowledge -o /dev/null -w '%{http_version}' "http://127.0.0.1:$SPORT/file.txt"
    [ "$output" = "2" ]
    run vc -sv --http2 -w '%{http_version}' "http://127.0.0.1:$SPORT/file.txt" "http://127.0.0.1:$SPORT/p1.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"> Upgrade: h2c"* ]]
    [[ "$output" == *"< HTTP/1.1 101 Switching Protocols"* ]]
    [[ "$output" == *"using HTTP/2, stream 3"* ]]
    [[ "$output" == *"hello"*"part 1"*"2" ]]
    # with a body: HTTP/1.1 (an upgrade would have to wait for the body)
    run vc -s --http2 -d x=1 -o /dev/null -w '%{http_version}' "http://127.0.0.1:$SPORT/file.txt"
    [ "$output" = "1.1" ]
    if command -v curl >/dev/null; then
        run curl -s --http2 -o /dev/null -w '%{http_version}' "http://127.0.0.1:$SPORT/file.txt"
        [ "$output" = "2" ]
    fi
    if command -v curl >/dev/null; then
        # the same header names as curl gets, in the same order
        curl -s -i --http2-prior-knowledge "http://127.0.0.1:$SPORT/file.txt" | sed '/^\r$/q' |
            cut -d: -f1 >"$T/cn"
        vc -s -i --http2-prior-knowledge "http://127.0.0.1:$SPORT/file.txt" | sed '/^\r$/q' |
            cut -d: -f1 >"$T/vn"
        cmp "$T/vn" "$T/cn"
    fi
}

@test "several URLs share one HTTP/2 connection (streams 1, 3, 5)" {
    serve --tls
    run vc -skv "https://127.0.0.1:$SPORT/p1.txt" "https://127.0.0.1:$SPORT/p2.txt" \
        "https://127.0.0.1:$SPORT/p3.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"using HTTP/2, stream 5"* ]]
    [ "$(grep -c '^\* Connected to' <<<"$output")" -eq 1 ]
    [ "$(grep -c '^\* Re-using existing connection' <<<"$output")" -eq 2 ]
    [[ "$output" == *"part 1"*"part 2"*"part 3"* ]]
}

@test "-Z fetches the URLs at once over one HTTP/2 connection; --parallel-max; -o per URL" {
    serve --tls
    local urls=() i
    for i in 1 2 3 4 5 6 7 8; do urls+=("https://127.0.0.1:$SPORT/p$i.txt"); done
    run vc -skZv "${urls[@]}"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^\* Connected to' <<<"$output")" -eq 1 ]
    [ "$(grep -c '^\* using HTTP/2, stream' <<<"$output")" -eq 8 ]
    vc -skZ --parallel-max 3 "${urls[@]}" | sort >"$T/got"
    cat "$W"/p?.txt | sort >"$T/want"
    cmp "$T/got" "$T/want"
    vc -skZ -o "$T/a" -o "$T/b" "https://127.0.0.1:$SPORT/big.bin" "https://127.0.0.1:$SPORT/big.bin"
    cmp "$T/a" "$W/big.bin"
    cmp "$T/b" "$W/big.bin"
    run vc --parallel-max 0 -Z "${urls[0]}"
    [ "$status" -eq 2 ]
}

@test "-Z against a server without HTTP/2: HTTP/1.1, a connection per transfer at a time" {
    serve --tls --no-http2
    local urls=() i
    for i in 1 2 3 4; do urls+=("https://127.0.0.1:$SPORT/p$i.txt"); done
    run vc -skZv "${urls[@]}"
    [ "$status" -eq 0 ]
    # each transfer connected (ALPN http/1.1) or took one that another had finished with
    [[ "$output" != *"accepted h2"* ]]
    [ "$(grep -cE 'ALPN: server accepted http/1.1|Re-using existing connection' <<<"$output")" -eq 4 ]
    [ "$(grep -c '^< HTTP/1.1 200' <<<"$output")" -eq 4 ]
    [[ "$output" == *"part 4"* ]]
}

# ---- nghttpd ---------------------------------------------------------------------------------

@test "nghttpd: GET over TLS and h2c, uploads echoed (-d, --data-binary @file, -T)" {
    command -v nghttpd >/dev/null || skip "nghttpd (nghttp2-server) is not installed"
    certs
    local p1 p2
    p1="$(free_port)"
    p2="$(free_port)"
    bg "$T/ng1.log" nghttpd -a 127.0.0.1 -d "$W" --echo-upload "$p1" "$T/server.key" "$T/server.pem"
    bg "$T/ng2.log" nghttpd -a 127.0.0.1 -d "$W" --echo-upload --no-tls "$p2"
    wait_port "$p1"
    wait_port "$p2"
    run vc -sS --cacert "$T/ca.pem" -w '%{http_version}' "https://localhost:$p1/file.txt"
    [ "$status" -eq 0 ]
    [ "$output" = "$(printf 'hello\n2')" ]
    vc -sS --cacert "$T/ca.pem" -o "$T/big" "https://127.0.0.1:$p1/big.bin"
    cmp "$T/big" "$W/big.bin"
    vc -sS --http2-prior-knowledge -o "$T/big2" "http://127.0.0.1:$p2/big.bin"
    cmp "$T/big2" "$W/big.bin"
    # uploads: nghttpd sends the body back
    run vc -sS --cacert "$T/ca.pem" -d a=1 -d b=2 "https://127.0.0.1:$p1/echo"
    [ "$output" = "a=1&b=2" ]
    vc -sS --cacert "$T/ca.pem" --data-binary "@$W/big.bin" -o "$T/up" "https://127.0.0.1:$p1/echo"
    cmp "$T/up" "$W/big.bin"
    vc -sS --http2-prior-knowledge -T "$W/big.bin" -o "$T/up2" "http://127.0.0.1:$p2/echo"
    cmp "$T/up2" "$W/big.bin"
    # from stdin: a body of unknown length (END_STREAM on the last DATA frame)
    vc -sS --http2-prior-knowledge -T - -o "$T/up3" "http://127.0.0.1:$p2/echo" <"$W/big.bin"
    cmp "$T/up3" "$W/big.bin"
}

# ---- nginx -----------------------------------------------------------------------------------

@test "nginx http2 over TLS: HTTP/2 by ALPN, the same body and -w as curl" {
    command -v nginx >/dev/null || skip "nginx is not installed"
    certs
    local port
    port="$(free_port)"
    mkdir -p "$T/nginx/tmp"
    cat >"$T/nginx/nginx.conf" <<EOF
daemon off;
master_process off;
error_log stderr;
pid $T/nginx/nginx.pid;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $T/nginx/tmp;
    proxy_temp_path $T/nginx/tmp;
    fastcgi_temp_path $T/nginx/tmp;
    uwsgi_temp_path $T/nginx/tmp;
    scgi_temp_path $T/nginx/tmp;
    types { text/plain txt; application/octet-stream bin; }
    gzip on;
    gzip_types text/plain;
    gzip_min_length 1;
    server {
        listen 127.0.0.1:$port ssl http2;
        ssl_certificate $T/server.pem;
        ssl_certificate_key $T/server.key;
        root $W;
        location /code { return 418; }
    }
}
EOF
    bg "$T/nginx.log" nginx -e stderr -p "$T/nginx" -c "$T/nginx/nginx.conf"
    wait_port "$port"
    run vc -sv --cacert "$T/ca.pem" "https://localhost:$port/file.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"ALPN: server accepted h2"* ]]
    [[ "$output" == *"< HTTP/2 200"* ]]
    vc -s --cacert "$T/ca.pem" -o "$T/big" "https://localhost:$port/big.bin"
    cmp "$T/big" "$W/big.bin"
    # --compressed: gzip decoded from the HTTP/2 body
    seq -f 'line %g of some repetitive text' 1 3000 >"$T/text.txt"
    cp "$T/text.txt" "$W/h2text-$port.txt"
    run vc -sv --compressed --cacert "$T/ca.pem" -o "$T/dec" "https://localhost:$port/h2text-$port.txt"
    rm -f "$W/h2text-$port.txt"
    [[ "$output" == *"< content-encoding: gzip"* ]]
    cmp "$T/dec" "$T/text.txt"
    run vc -s --cacert "$T/ca.pem" -o /dev/null -w '%{http_version} %{http_code}' "https://localhost:$port/code"
    [ "$output" = "2 418" ]
    run vc -sf --cacert "$T/ca.pem" "https://localhost:$port/code"
    [ "$status" -eq 22 ]
    if command -v curl >/dev/null; then
        run curl -s --cacert "$T/ca.pem" -o /dev/null -w '%{http_version} %{http_code}' "https://localhost:$port/code"
        [ "$output" = "2 418" ]
        curl -s --cacert "$T/ca.pem" -i "https://localhost:$port/file.txt" | head -1 >"$T/ch"
        vc -s --cacert "$T/ca.pem" -i "https://localhost:$port/file.txt" | head -1 >"$T/vh"
        cmp "$T/vh" "$T/ch"
    fi
}

# ---- Caddy -----------------------------------------------------------------------------------

@test "Caddy (Go's HTTP/2) over TLS: h2 by ALPN, bodies byte-exact, -Z on one connection, as curl" {
    command -v caddy >/dev/null || skip "caddy is not installed"
    certs
    local port
    port="$(free_port)"
    mkdir -p "$T/caddy"
    cat >"$T/caddy/Caddyfile" <<EOF
{
    admin off
    auto_https off
    storage file_system $T/caddy/data
    servers {
        protocols h1 h2
    }
}
https://:$port {
    bind 127.0.0.1
    tls $T/server.pem $T/server.key
    root * $W
    file_server
}
EOF
    HOME="$T/caddy" XDG_DATA_HOME="$T/caddy" XDG_CONFIG_HOME="$T/caddy" \
        bg "$T/caddy.log" caddy run --config "$T/caddy/Caddyfile" --adapter caddyfile
    wait_port "$port"
    run vc -sv --cacert "$T/ca.pem" "https://localhost:$port/file.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"ALPN: server accepted h2"* ]]
    [[ "$output" == *"< HTTP/2 200"* ]]
    [[ "$output" == *"hello"* ]]
    vc -s --cacert "$T/ca.pem" -o "$T/big" "https://localhost:$port/big.bin"
    cmp "$T/big" "$W/big.bin"
    run vc -s --cacert "$T/ca.pem" -o /dev/null -w '%{http_version} %{http_code}\n' \
        "https://localhost:$port/file.txt" -o /dev/null "https://localhost:$port/none"
    [ "$output" = "$(printf '2 200\n2 404')" ]
    # eight URLs at once over Caddy's one connection: every body right
    local urls=() i
    for i in 1 2 3 4 5 6 7 8; do urls+=(-o "$T/p$i" "https://localhost:$port/p$i.txt"); done
    run vc -sS -Z -v --cacert "$T/ca.pem" "${urls[@]}"
    [ "$status" -eq 0 ]
    for i in 1 2 3 4 5 6 7 8; do cmp "$T/p$i" "$W/p$i.txt"; done
    [ "$(grep -c 'ALPN: server accepted h2' <<<"$output")" -eq 1 ]
    if command -v curl >/dev/null; then
        curl -s --cacert "$T/ca.pem" -i "https://localhost:$port/file.txt" | head -1 >"$T/ch"
        vc -s --cacert "$T/ca.pem" -i "https://localhost:$port/file.txt" | head -1 >"$T/vh"
        cmp "$T/vh" "$T/ch"
    fi
}
