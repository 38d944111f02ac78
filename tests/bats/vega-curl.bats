#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-curl as a user runs it, against real servers on loopback started here: Python's
# http.server, a raw Python server that echoes requests or misbehaves on purpose, nginx (plain,
# gzip, redirects, TLS) and Caddy when installed. Exit codes are checked against the real curl
# where that is easy. Ephemeral ports only.

load helpers

# The served files, made once for the whole file.
setup_file() {
    local w="$BATS_FILE_TMPDIR/www"
    mkdir -p "$w/dir"
    printf 'hello\n' >"$w/file.txt"
    head -c $((5 * 1024 * 1024)) /dev/urandom >"$w/big.bin"
    # Compressible text for gzip.
    seq -f 'line %g of some very repetitive text' 1 2000 >"$w/text.txt"
    printf 'inner\n' >"$w/dir/inner.txt"
}

setup() {
    CURL="$(vega_bin vega-curl)"
    T="$BATS_TEST_TMPDIR"
    ln -s "$BATS_FILE_TMPDIR/www" "$T/www"
}

teardown() {
    stop_bg_all
}

vc() {
    timeout 30 "$CURL" "$@"
}

# bg LOG CMD...: a background server with stdout and stderr in LOG.
bg() {
    local log="$1"
    shift
    "$@" >"$log" 2>&1 3>&- </dev/null &
    VEGA_BG_PIDS+=("$!")
}

free_port() {
    command -p python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT: until something accepts on 127.0.0.1:PORT.
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

# start_files: python3 -m http.server on $T/www (HTTP/1.0, closes every connection); sets WPORT.
start_files() {
    bg "$T/files.log" command -p python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$T/www"
    wait_for_line "$T/files.log" 'port [0-9]+' 10
    WPORT="$(sed -nE 's/.* port ([0-9]+) .*/\1/p' "$T/files.log" | head -n1)"
}

# start_raw MODE: a raw HTTP/1.1 server; sets RPORT. Modes: echo (answers with the request it
# got, head and decoded body), bodylen (answers "LENGTH SHA256" of the body), hang (reads and
# never answers), close (reads and closes), loop (302 to itself), badgzip (a body that claims
# to be gzip and is not), redirect307 (307 to /echo, then echo), away URL (302 to URL),
# endless (a chunked body that never ends, sent as fast as the client reads).
start_raw() {
    cat >"$T/raw.py" <<'EOF'
import hashlib, socket, sys, threading
mode = sys.argv[1]
arg = sys.argv[2].encode() if len(sys.argv) > 2 else b""
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(16)
print("port", ls.getsockname()[1], flush=True)

def read_req(c, buf):
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d:
            return None, b""
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    hdr = {}
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        hdr[k.strip().lower()] = v.strip()
    body = b""
    if b"content-length" in hdr:
        n = int(hdr[b"content-length"])
        while len(rest) < n:
            d = c.recv(65536)
            if not d:
                break
            rest += d
        body, rest = rest[:n], rest[n:]
    elif hdr.get(b"transfer-encoding", b"").lower() == b"chunked":
        while True:
            while b"\r\n" not in rest:
                rest += c.recv(65536)
            line, rest = rest.split(b"\r\n", 1)
            n = int(line.split(b";")[0], 16)
            while len(rest) < n + 2:
                rest += c.recv(65536)
            body += rest[:n]
            rest = rest[n + 2:]
            if n == 0:
                break
    return (head, body), rest

def reply(c, status, body, extra=b""):
    c.sendall(b"HTTP/1.1 %s\r\nContent-Length: %d\r\n%s\r\n" % (status, len(body), extra) + body)

def serve(c):
    buf = b""
    try:
        if mode == "hang":
            c.recv(65536)
            threading.Event().wait(60)
            return
        if mode == "close":
            c.recv(65536)
            return
        if mode == "endless":
            c.recv(65536)
            c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"4000\r\n" + b"x" * 16384 + b"\r\n"
            while True:
                c.sendall(chunk)
        while True:
            req, buf = read_req(c, buf)
            if req is None:
                return
            head, body = req
            target = head.split(b" ")[1]
            if mode == "echo" or (mode == "redirect307" and target == b"/echo"):
                reply(c, b"200 OK", head + b"\r\n\r\n" + body, b"Content-Type: text/plain\r\n")
            elif mode == "redirect307":
                reply(c, b"307 Temporary Redirect", b"", b"Location: /echo\r\n")
            elif mode == "bodylen":
                reply(c, b"200 OK", b"%d %s\n" % (len(body), hashlib.sha256(body).hexdigest().encode()))
            elif mode == "away":
                reply(c, b"302 Found", b"", b"Location: " + arg + b"\r\n")
            elif mode == "loop":
                reply(c, b"302 Found", b"", b"Location: /again\r\n")
            elif mode == "badgzip":
                reply(c, b"200 OK", b"this is not gzip", b"Content-Encoding: gzip\r\n")
    except OSError:
        pass
    finally:
        c.close()

while True:
    conn, _ = ls.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
EOF
    # A log of its own per server: a second server of the same mode must not be read from the
    # first one's log (its port line, or the file while the new server truncates it).
    RAW_N=$((${RAW_N:-0} + 1))
    local log="$T/raw-$1-$RAW_N.log"
    bg "$log" command -p python3 -u "$T/raw.py" "$@"
    wait_for_line "$log" '^port [0-9]+' 10
    RPORT="$(awk '/^port/ {print $2; exit}' "$log")"
}

# certs: a CA and a server certificate for localhost and 127.0.0.1, made with openssl.
certs() {
    command -v openssl >/dev/null || skip "openssl (the command) is not installed"
    printf '[server]\nsubjectAltName = DNS:localhost, IP:127.0.0.1\nextendedKeyUsage = serverAuth\n[client]\nextendedKeyUsage = clientAuth\n' \
        >"$T/ext.cnf"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/ca.key" \
        -out "$T/ca.pem" -days 1 -subj "/CN=vega-curl bats CA" 2>/dev/null
    local who
    for who in server client; do
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/$who.key" \
            -out "$T/$who.csr" -subj "/CN=$who" 2>/dev/null
        openssl x509 -req -in "$T/$who.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" \
            -CAcreateserial -out "$T/$who.pem" -days 1 -extfile "$T/ext.cnf" \
            -extensions "$who" 2>/dev/null
    done
}

# start_nginx: nginx on NPORT (plain), NTLS (TLS, with certs) and NMTLS (TLS that requires a
# client certificate); redirects, gzip, a 418.
start_nginx() {
    command -v nginx >/dev/null || skip "nginx is not installed"
    certs
    NPORT="$(free_port)"
    NTLS="$(free_port)"
    NMTLS="$(free_port)"
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
    default_type application/octet-stream;
    gzip on;
    gzip_types text/plain;
    gzip_min_length 1;
    server {
        listen 127.0.0.1:$NPORT;
        root $T/www;
        location /redir { return 302 /file.txt; }
        location /redir2 { return 301 /redir; }
        location /loop { return 302 /loop; }
        location /code { return 418; }
    }
    server {
        listen 127.0.0.1:$NTLS ssl;
        ssl_certificate $T/server.pem;
        ssl_certificate_key $T/server.key;
        root $T/www;
    }
    server {
        listen 127.0.0.1:$NMTLS ssl;
        ssl_certificate $T/server.pem;
        ssl_certificate_key $T/server.key;
        ssl_client_certificate $T/ca.pem;
        ssl_verify_client on;
        root $T/www;
    }
}
EOF
    bg "$T/nginx.log" nginx -e stderr -p "$T/nginx" -c "$T/nginx/nginx.conf"
    wait_port "$NPORT"
    wait_port "$NTLS"
    wait_port "$NMTLS"
}

start_caddy() {
    command -v caddy >/dev/null || skip "caddy is not installed"
    CPORT="$(free_port)"
    cat >"$T/Caddyfile" <<EOF
{
    admin off
    auto_https off
    storage file_system $T/caddy-data
}
http://127.0.0.1:$CPORT {
    root * $T/www
    file_server
}
EOF
    XDG_DATA_HOME="$T" XDG_CONFIG_HOME="$T" HOME="$T" \
        bg "$T/caddy.log" caddy run --config "$T/Caddyfile" --adapter caddyfile
    wait_port "$CPORT"
}

have_curl() {
    command -v curl >/dev/null
}

# ---- usage ------------------------------------------------------------------------------------

@test "usage: --help, --version, no URL and unknown options" {
    run vc --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"Usage: vega-curl"* ]]
    [[ "$output" == *"--write-out"* ]]
    run vc -V
    [ "$status" -eq 0 ]
    [[ "$output" == *"vega-curl"*"libvega"* ]]
    run vc
    [ "$status" -eq 2 ]
    [[ "$output" == *"no URL"* ]]
    run vc --no-such-option http://127.0.0.1/
    [ "$status" -eq 2 ]
    run vc -H 'bad header' http://127.0.0.1/
    [ "$status" -eq 2 ]
}

@test "--http2 and --http2-prior-knowledge are options (HTTP/2: vega-curl-h2.bats)" {
    run vc --http2 http://127.0.0.1:1/
    [ "$status" -eq 7 ]
    run vc --http2-prior-knowledge http://127.0.0.1:1/
    [ "$status" -eq 7 ]
}

# ---- GET and output --------------------------------------------------------------------------

@test "GET to stdout is byte-identical (5 MiB, sha256)" {
    start_files
    want="$(sha256sum <"$T/www/big.bin" | cut -d' ' -f1)"
    got="$(vc -sS "http://127.0.0.1:$WPORT/big.bin" | sha256sum | cut -d' ' -f1)"
    [ "$got" = "$want" ]
    run vc -s "127.0.0.1:$WPORT/file.txt" # no scheme: http:// as curl guesses
    [ "$status" -eq 0 ]
    [ "$output" = "hello" ]
}

@test "-o FILE and -O, in the order of the URLs" {
    start_files
    cd "$T"
    run vc -sS -o "$T/one.bin" "http://127.0.0.1:$WPORT/big.bin"
    [ "$status" -eq 0 ]
    cmp "$T/one.bin" "$T/www/big.bin"
    mkdir -p "$T/out" && cd "$T/out"
    run vc -sS -O "http://127.0.0.1:$WPORT/file.txt" -o second.txt "http://127.0.0.1:$WPORT/dir/inner.txt"
    [ "$status" -eq 0 ]
    [ "$(cat "$T/out/file.txt")" = hello ]
    [ "$(cat "$T/out/second.txt")" = inner ]
    # A URL without a file name cannot be saved with -O (curl: 23).
    run vc -sS -O "http://127.0.0.1:$WPORT/"
    [ "$status" -eq 23 ]
}

@test "-i writes the response head before the body; -I sends HEAD and writes the head only" {
    start_files
    run vc -s -i "http://127.0.0.1:$WPORT/file.txt"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "HTTP/1.0 200 OK"* ]]
    [[ "$output" == *"Content-Length: 6"* ]]
    [ "${lines[${#lines[@]} - 1]}" = hello ]
    run vc -s -I "http://127.0.0.1:$WPORT/file.txt"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "HTTP/1.0 200 OK"* ]]
    [[ "$output" != *hello* ]]
    grep -q '"HEAD /file.txt' "$T/files.log"
}

@test "-f exits 22 without the body on a 404; --fail-with-body keeps it" {
    start_files
    run vc -sf "http://127.0.0.1:$WPORT/missing"
    [ "$status" -eq 22 ]
    [ -z "$output" ]
    run vc -f "http://127.0.0.1:$WPORT/missing"
    [ "$status" -eq 22 ]
    [[ "$output" == *"(22) The requested URL returned error: 404"* ]]
    run vc -s -o "$T/nofile" -f "http://127.0.0.1:$WPORT/missing"
    [ "$status" -eq 22 ]
    [ ! -e "$T/nofile" ]
    run vc -s --fail-with-body "http://127.0.0.1:$WPORT/missing"
    [ "$status" -eq 22 ]
    [[ "$output" == *"404"* ]]
    # Without -f a 404 is a successful transfer.
    run vc -s -o /dev/null "http://127.0.0.1:$WPORT/missing"
    [ "$status" -eq 0 ]
    if have_curl; then
        run curl -sf "http://127.0.0.1:$WPORT/missing"
        [ "$status" -eq 22 ]
    fi
}

@test "the progress meter appears on a terminal's stderr for a download to a file, not with -s" {
    command -v script >/dev/null || skip "script (util-linux) is not installed"
    start_files
    run timeout 30 script -qec "'$CURL' -o '$T/meter.bin' http://127.0.0.1:$WPORT/big.bin" /dev/null
    [ "$status" -eq 0 ]
    [[ "$output" == *"% Total    % Received % Xferd"* ]]
    [[ "$output" == *"100 5120k  100 5120k"* ]]
    cmp "$T/meter.bin" "$T/www/big.bin"
    run timeout 30 script -qec "'$CURL' -# -o '$T/meter.bin' http://127.0.0.1:$WPORT/big.bin" /dev/null
    [[ "$output" == *"###"*"100.0%"* ]]
    run timeout 30 script -qec "'$CURL' -s -o '$T/meter.bin' http://127.0.0.1:$WPORT/big.bin" /dev/null
    [ -z "$output" ]
    # Binary data is not written to a terminal.
    run timeout 30 script -qec "'$CURL' http://127.0.0.1:$WPORT/big.bin" /dev/null
    [[ "$output" == *"Binary output can mess up your terminal"* ]]
}

# ---- request bodies --------------------------------------------------------------------------

@test "-d posts form data joined with &; @file loses its newlines; --data-binary keeps them" {
    start_raw echo
    run vc -s -d a=1 -d 'b=two words' "http://127.0.0.1:$RPORT/form"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "POST /form HTTP/1.1"* ]]
    [[ "$output" == *"Content-Type: application/x-www-form-urlencoded"* ]]
    [[ "$output" == *"Content-Length: 15"* ]]
    [ "${lines[${#lines[@]} - 1]}" = "a=1&b=two words" ]
    printf 'x=1\r\ny=2\n' >"$T/form.txt"
    vc -s -d "@$T/form.txt" "http://127.0.0.1:$RPORT/" >"$T/out1"
    [ "$(tail -c 6 "$T/out1")" = "x=1y=2" ]
    vc -s --data-binary "@$T/form.txt" "http://127.0.0.1:$RPORT/" >"$T/out2"
    tail -c 9 "$T/out2" | cmp - "$T/form.txt"
    # -X changes the method; -H replaces the Content-Type; 'Name;' sends an empty value.
    run vc -s -X PATCH -H 'Content-Type: application/json' -H 'X-Empty;' -d '{"k":1}' \
        "http://127.0.0.1:$RPORT/j"
    [[ "${lines[0]}" == "PATCH /j HTTP/1.1"* ]]
    [[ "$output" == *"Content-Type: application/json"* ]]
    [[ "$output" != *"x-www-form-urlencoded"* ]]
    [[ "$output" == *"X-Empty:"* ]]
    # -A and -e; -H 'User-Agent:' removes the field.
    run vc -s -A 'agent/1.0' -e 'http://ref.example/' "http://127.0.0.1:$RPORT/h"
    [[ "$output" == *"User-Agent: agent/1.0"* ]]
    [[ "$output" == *"Referer: http://ref.example/"* ]]
    run vc -s -H 'User-Agent:' "http://127.0.0.1:$RPORT/h"
    [[ "$output" != *"User-Agent"* ]]
    # 'Accept:' removes the client's own Accept, as in curl.
    run vc -s -H 'Accept:' "http://127.0.0.1:$RPORT/h"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Host: 127.0.0.1:$RPORT"* ]]
    [[ "$output" != *"Accept"* ]]
    # --data-urlencode encodes as curl does; -G moves the data into the query of a GET.
    run vc -s --data-urlencode 'a=b c&d' --data-urlencode '=x/y' "http://127.0.0.1:$RPORT/u"
    [ "${lines[${#lines[@]} - 1]}" = "a=b+c%26d&x%2Fy" ]
    run vc -s -G -d q=1 --data-urlencode 'w=a b' "http://127.0.0.1:$RPORT/s?x=0#frag"
    [[ "${lines[0]}" == "GET /s?x=0&q=1&w=a+b HTTP/1.1"* ]]
}

@test "-T uploads a file with its length (PUT), and stdin chunked" {
    start_raw bodylen
    want="$(sha256sum <"$T/www/big.bin" | cut -d' ' -f1)"
    run vc -sS -T "$T/www/big.bin" "http://127.0.0.1:$RPORT/up/"
    [ "$status" -eq 0 ]
    [ "$output" = "5242880 $want" ]
    run bash -c "cat '$T/www/big.bin' | timeout 30 '$CURL' -sS -T - http://127.0.0.1:$RPORT/up"
    [ "$status" -eq 0 ]
    [ "$output" = "5242880 $want" ]
    run vc -sS -T "$T/does-not-exist" "http://127.0.0.1:$RPORT/up"
    [ "$status" -eq 26 ]
}

@test "-T: the method is PUT, the file name goes after a trailing /, stdin is chunked" {
    start_raw echo
    run vc -s -T "$T/www/file.txt" "http://127.0.0.1:$RPORT/dir/"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "PUT /dir/file.txt HTTP/1.1"* ]]
    [[ "$output" == *"Content-Length: 6"* ]]
    run bash -c "printf abc | timeout 30 '$CURL' -s -T - http://127.0.0.1:$RPORT/in"
    [[ "$output" == *"Transfer-Encoding: chunked"* ]]
    [[ "$output" == *abc ]]
}

# CVE-2018-1000007 and CVE-2022-27776 in curl: credentials given with -H must not follow a
# redirect to another scheme, host or port.
@test "-L: Authorization, Cookie and Proxy-Authorization stay with the first origin (as curl)" {
    start_raw echo
    local echo_port=$RPORT
    local creds=(-H 'Authorization: Bearer s3cret-a' -H 'Cookie: session=s3cret-c'
        -H 'Proxy-Authorization: Basic s3cret-p' -H 'X-Other: kept')
    local to
    for to in "http://127.0.0.1:$echo_port/echo" "http://localhost:$echo_port/echo"; do
        start_raw away "$to"
        run vc -s -L "${creds[@]}" "http://127.0.0.1:$RPORT/start"
        [ "$status" -eq 0 ]
        [[ "$output" == *"GET /echo HTTP/1.1"* ]]
        [[ "$output" == *"X-Other: kept"* ]]
        [[ "$output" != *s3cret* ]]
        if command -v curl >/dev/null; then
            # curl drops these two (it still sends Proxy-Authorization to the new host;
            # vega-curl does not: a proxy credential has no business there either)
            run curl -s -L "${creds[@]}" "http://127.0.0.1:$RPORT/start"
            [[ "$output" == *"X-Other: kept"* ]]
            [[ "$output" != *s3cret-a* ]]
            [[ "$output" != *s3cret-c* ]]
        fi
    done
    # -v says what it left out
    run vc -s -v -L "${creds[@]}" "http://127.0.0.1:$RPORT/start"
    [[ "$output" == *"Not sending Authorization to http://localhost:$echo_port"* ]]
    # --location-trusted sends them everywhere, as curl does
    run vc -s --location-trusted "${creds[@]}" "http://127.0.0.1:$RPORT/start"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Authorization: Bearer s3cret-a"* ]]
    [[ "$output" == *"Cookie: session=s3cret-c"* ]]
    [[ "$output" == *"Proxy-Authorization: Basic s3cret-p"* ]]
}

@test "-L: a redirect within the same origin keeps Authorization and Cookie" {
    start_raw redirect307
    run vc -s -L -H 'Authorization: Bearer s3cret-a' -H 'Cookie: c=1' "http://127.0.0.1:$RPORT/start"
    [ "$status" -eq 0 ]
    [[ "$output" == *"GET /echo HTTP/1.1"* ]]
    [[ "$output" == *"Authorization: Bearer s3cret-a"* ]]
    [[ "$output" == *"Cookie: c=1"* ]]
}

@test "-L: a 307 repeats the method and body; -w num_redirects and url_effective" {
    start_raw redirect307
    run vc -s -L -d 'k=v' -w '\n%{num_redirects} %{url_effective}' "http://127.0.0.1:$RPORT/start"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "POST /echo HTTP/1.1"* ]]
    [[ "$output" == *"k=v"* ]]
    [ "${lines[${#lines[@]} - 1]}" = "1 http://127.0.0.1:$RPORT/echo" ]
}

# ---- errors and their exit codes -------------------------------------------------------------

@test "--max-redirs exceeded exits 47 as curl does" {
    start_raw loop
    run vc -sS -L --max-redirs 3 "http://127.0.0.1:$RPORT/"
    [ "$status" -eq 47 ]
    [[ "$output" == *"Maximum (3) redirects followed"* ]]
    run vc -sS -L "http://127.0.0.1:$RPORT/"
    [ "$status" -eq 47 ]
    # Without -L the 302 is the answer.
    run vc -s -w '%{http_code} %{redirect_url}' -o /dev/null "http://127.0.0.1:$RPORT/x"
    [ "$status" -eq 0 ]
    [ "$output" = "302 http://127.0.0.1:$RPORT/again" ]
    if have_curl; then
        run curl -sS -L --max-redirs 3 "http://127.0.0.1:$RPORT/"
        [ "$status" -eq 47 ]
    fi
}

@test "connection refused exits 7, unknown host 6, malformed URL 3, unsupported scheme 1" {
    port="$(free_port)" # nothing listens there now
    for args in "http://127.0.0.1:$port/" "http://no-such-host.invalid/" "http://exa mple.com/" \
        "http://" "http://127.0.0.1:99999/" "foo://127.0.0.1/"; do
        run vc -sS "$args"
        vstatus="$status"
        case "$args" in
        http://127.0.0.1:$port/) [ "$vstatus" -eq 7 ] ;;
        *invalid*) [ "$vstatus" -eq 6 ] ;;
        foo:*) [ "$vstatus" -eq 1 ] ;;
        *) [ "$vstatus" -eq 3 ] ;;
        esac
        if have_curl; then
            run curl -sS "$args"
            [ "$status" -eq "$vstatus" ] || {
                echo "vega-curl $vstatus, curl $status for $args"
                false
            }
        fi
    done
    run vc -sS ftp://127.0.0.1/
    [ "$status" -eq 1 ]
    [[ "$output" == *'Protocol "ftp" not supported'* ]]
    # -s hides the message, -S brings it back.
    run vc -s "http://127.0.0.1:$port/"
    [ "$status" -eq 7 ]
    [ -z "$output" ]
}

@test "-m: a server that never answers times out with 28" {
    start_raw hang
    t0="$(now_ms)"
    run vc -sS -m 1 "http://127.0.0.1:$RPORT/"
    t1="$(now_ms)"
    [ "$status" -eq 28 ]
    [[ "$output" == *"timed out"* ]]
    [ $((t1 - t0)) -lt 5000 ]
    if have_curl; then
        run curl -sS -m 1 "http://127.0.0.1:$RPORT/"
        [ "$status" -eq 28 ]
    fi
}

@test "-m bounds the whole transfer while a body keeps coming (28, as curl)" {
    start_raw endless
    t0="$(now_ms)"
    run vc -sS -m 1 -o /dev/null "http://127.0.0.1:$RPORT/"
    t1="$(now_ms)"
    [ "$status" -eq 28 ]
    [[ "$output" == *"timed out"* ]]
    [ $((t1 - t0)) -lt 5000 ]
    if have_curl; then
        run curl -sS -m 1 -o /dev/null "http://127.0.0.1:$RPORT/"
        [ "$status" -eq 28 ]
    fi
}

@test "an empty reply exits 52, a bad gzip body 61, --max-filesize 63, as curl does" {
    start_raw close
    run vc -sS "http://127.0.0.1:$RPORT/"
    [ "$status" -eq 52 ]
    if have_curl; then
        run curl -sS "http://127.0.0.1:$RPORT/"
        [ "$status" -eq 52 ]
    fi
    start_raw badgzip
    run vc -sS --compressed "http://127.0.0.1:$RPORT/"
    [ "$status" -eq 61 ]
    if have_curl; then
        run curl -sS --compressed "http://127.0.0.1:$RPORT/"
        [ "$status" -eq 61 ]
    fi
    start_files
    run vc -sS --max-filesize 1000 -o /dev/null "http://127.0.0.1:$WPORT/big.bin"
    [ "$status" -eq 63 ]
}

@test "-w: http_code, sizes, version, addresses, content type, times" {
    start_files
    run vc -s -o /dev/null -w '%{http_code} %{size_download} %{http_version} %{remote_ip} %{remote_port} %{content_type} %{num_redirects} %{exitcode}\n' \
        "http://127.0.0.1:$WPORT/big.bin"
    [ "$status" -eq 0 ]
    [ "$output" = "200 5242880 1.0 127.0.0.1 $WPORT application/octet-stream 0 0" ]
    run vc -s -o /dev/null -w '%{time_connect} %{time_starttransfer} %{time_total} %{speed_download}' \
        "http://127.0.0.1:$WPORT/big.bin"
    [[ "$output" =~ ^0\.[0-9]{6}\ [0-9]+\.[0-9]{6}\ [0-9]+\.[0-9]{6}\ [0-9]+$ ]]
    # A failed transfer still reports, with code 000.
    port="$(free_port)"
    run vc -s -w '%{http_code} %{exitcode}' "http://127.0.0.1:$port/"
    [ "$status" -eq 7 ]
    [ "$output" = "000 7" ]
}

@test "--resolve sends the name and connects to the address given" {
    start_files
    run vc -sS --resolve "example.test:$WPORT:127.0.0.1" "http://example.test:$WPORT/file.txt"
    [ "$status" -eq 0 ]
    [ "$output" = hello ]
    start_raw echo
    run vc -sS --resolve "example.test:$RPORT:127.0.0.1" "http://example.test:$RPORT/"
    [[ "$output" == *"Host: example.test:$RPORT"* ]]
}

# ---- nginx -----------------------------------------------------------------------------------

@test "nginx: -v shows the request and the response head, -L follows, 418 with -f is 22" {
    start_nginx
    run vc -sv -o /dev/null "http://127.0.0.1:$NPORT/file.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"> GET /file.txt HTTP/1.1"* ]]
    [[ "$output" == *"< HTTP/1.1 200 OK"* ]]
    [[ "$output" == *"* Connected to 127.0.0.1 (127.0.0.1) port $NPORT"* ]]
    run vc -sL -w ' %{num_redirects} %{url_effective}' "http://127.0.0.1:$NPORT/redir2"
    [ "$status" -eq 0 ]
    [ "$output" = "hello
 2 http://127.0.0.1:$NPORT/file.txt" ]
    run vc -s -i -L "http://127.0.0.1:$NPORT/redir"
    [[ "$output" == *"302 Moved Temporarily"*"200 OK"*hello* ]]
    run vc -sS -L --max-redirs 5 "http://127.0.0.1:$NPORT/loop"
    [ "$status" -eq 47 ]
    run vc -sf "http://127.0.0.1:$NPORT/code"
    [ "$status" -eq 22 ]
}

@test "nginx: several URLs reuse one connection (-v says Re-using)" {
    start_nginx
    run vc -v -o /dev/null -o /dev/null -o /dev/null "http://127.0.0.1:$NPORT/file.txt" \
        "http://127.0.0.1:$NPORT/big.bin" "http://127.0.0.1:$NPORT/dir/inner.txt"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^\* Re-using existing connection' <<<"$output")" -eq 2 ]
    [ "$(grep -c '^\* Connected to' <<<"$output")" -eq 1 ]
    run vc -s -w '%{num_connects}\n' -o /dev/null -o /dev/null "http://127.0.0.1:$NPORT/file.txt" \
        "http://127.0.0.1:$NPORT/file.txt"
    [ "$output" = "1
0" ]
}

@test "nginx: --compressed decodes gzip to the same bytes" {
    start_nginx
    run vc -sv --compressed -o "$T/text.out" "http://127.0.0.1:$NPORT/text.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"< Content-Encoding: gzip"* ]]
    cmp "$T/text.out" "$T/www/text.txt"
    # Without --compressed nginx sends it as it is.
    run vc -sv -o "$T/text2.out" "http://127.0.0.1:$NPORT/text.txt"
    [[ "$output" != *"Content-Encoding"* ]]
    cmp "$T/text2.out" "$T/www/text.txt"
}

@test "nginx TLS: --cacert and -k work, an untrusted certificate exits 60" {
    start_nginx
    run vc -sSv --cacert "$T/ca.pem" "https://127.0.0.1:$NTLS/file.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"* SSL connection using TLSv1."* ]]
    [[ "$output" == *"ALPN: server accepted http/1.1"* ]]
    [[ "${lines[${#lines[@]} - 1]}" == hello ]]
    run vc -sS --cacert "$T/ca.pem" --resolve "localhost:$NTLS:127.0.0.1" \
        "https://localhost:$NTLS/big.bin" -o "$T/tls.bin"
    [ "$status" -eq 0 ]
    cmp "$T/tls.bin" "$T/www/big.bin"
    run vc -sSk "https://127.0.0.1:$NTLS/file.txt"
    [ "$status" -eq 0 ]
    [ "$output" = hello ]
    run vc -sS "https://127.0.0.1:$NTLS/file.txt"
    [ "$status" -eq 60 ]
    [[ "$output" == *"(60)"* ]]
    if have_curl; then
        run curl -sS "https://127.0.0.1:$NTLS/file.txt"
        [ "$status" -eq 60 ]
    fi
    # TLS to a plain HTTP port fails the handshake (35), as with curl.
    run vc -sS "https://127.0.0.1:$NPORT/file.txt"
    [ "$status" -eq 35 ]
    if have_curl; then
        run curl -sS "https://127.0.0.1:$NPORT/file.txt"
        [ "$status" -eq 35 ]
    fi
}

@test "nginx mutual TLS: --cert and --key present a client certificate" {
    start_nginx
    run vc -sS --cacert "$T/ca.pem" --cert "$T/client.pem" --key "$T/client.key" \
        "https://127.0.0.1:$NMTLS/file.txt"
    [ "$status" -eq 0 ]
    [ "$output" = hello ]
    # Without one nginx answers 400; -f makes that 22.
    run vc -sSf --cacert "$T/ca.pem" "https://127.0.0.1:$NMTLS/file.txt"
    [ "$status" -eq 22 ]
    [[ "$output" == *"error: 400"* ]]
    # A certificate file that is not one: 58, as curl.
    run vc -sS --cacert "$T/ca.pem" --cert "$T/ext.cnf" "https://127.0.0.1:$NMTLS/file.txt"
    [ "$status" -eq 58 ]
    # A CA file that is not one: 77, as curl.
    run vc -sS --cacert "$T/ext.cnf" "https://127.0.0.1:$NTLS/file.txt"
    [ "$status" -eq 77 ]
}

# ---- Caddy -----------------------------------------------------------------------------------

@test "caddy: file_server over HTTP/1.1, byte-identical, connection reused" {
    start_caddy
    want="$(sha256sum <"$T/www/big.bin" | cut -d' ' -f1)"
    got="$(vc -sS "http://127.0.0.1:$CPORT/big.bin" | sha256sum | cut -d' ' -f1)"
    [ "$got" = "$want" ]
    run vc -v -o /dev/null -o /dev/null "http://127.0.0.1:$CPORT/file.txt" \
        "http://127.0.0.1:$CPORT/file.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"< HTTP/1.1 200 OK"* ]]
    [[ "$output" == *"Re-using existing connection"* ]]
}

# ---- where bodies go: files, /dev/null, pipes, full disks, on both drivers -----------------

# start_serve [ARGS...]: vega-serve (from the same build) on $T/www, port 0; sets SPORT.
start_serve() {
    local log="$T/serve.$RANDOM.log"
    bg "$log" "$(vega_bin vega-serve)" -p 0 "$@" "$T/www"
    wait_for_line "$log" 'listening on' 10
    SPORT="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$log" | head -n1)"
}

# A body of several write pieces (CURL_SINK_BUF is 256 KiB) that is not a multiple of them.
big_body() {
    [ -f "$BATS_FILE_TMPDIR/www/huge.bin" ] ||
        head -c $((24 * 1024 * 1024 + 12345)) /dev/urandom >"$BATS_FILE_TMPDIR/www/huge.bin"
    HUGE_SHA="$(sha256sum <"$T/www/huge.bin" | cut -d' ' -f1)"
    HUGE_LEN="$(stat -c %s "$T/www/huge.bin")"
}

@test "downloads to a file, to stdout as a file, to /dev/null and to a pipe (both drivers, http and https)" {
    big_body
    start_serve
    local hport="$SPORT"
    start_serve --tls
    local sport="$SPORT" d url
    for d in uring epoll; do
        for url in "http://127.0.0.1:$hport/huge.bin" "https://127.0.0.1:$sport/huge.bin"; do
            rm -f "$T/dl.bin" "$T/stdout.bin"
            # -o FILE: a regular file, written by kernel operations in large pieces
            VEGA_DRIVER=$d vc -sSk -o "$T/dl.bin" "$url"
            [ "$(sha256sum <"$T/dl.bin" | cut -d' ' -f1)" = "$HUGE_SHA" ]
            # stdout redirected to a file: the same path, at the file position
            VEGA_DRIVER=$d vc -sSk "$url" >"$T/stdout.bin"
            [ "$(sha256sum <"$T/stdout.bin" | cut -d' ' -f1)" = "$HUGE_SHA" ]
            # ... and appended to (O_APPEND): the body lands after what was there
            printf 'head\n' >"$T/stdout.bin"
            VEGA_DRIVER=$d vc -sSk "$url" >>"$T/stdout.bin"
            [ "$(head -c 5 "$T/stdout.bin")" = head ]
            [ "$(tail -c +6 "$T/stdout.bin" | sha256sum | cut -d' ' -f1)" = "$HUGE_SHA" ]
            # /dev/null: nothing is written, every byte is counted
            run env VEGA_DRIVER=$d "$CURL" -sSk -o /dev/null -w '%{size_download} %{http_code}' "$url"
            [ "$status" -eq 0 ]
            [ "$output" = "$HUGE_LEN 200" ]
            # stdout a pipe
            [ "$(VEGA_DRIVER=$d vc -sSk "$url" | sha256sum | cut -d' ' -f1)" = "$HUGE_SHA" ]
        done
    done
}

@test "-i and -w go out after the buffered body, in order, to a file and to a pipe" {
    start_serve
    local d
    for d in uring epoll; do
        VEGA_DRIVER=$d vc -sS -i -w 'END %{size_download}\n' \
            "http://127.0.0.1:$SPORT/file.txt" "http://127.0.0.1:$SPORT/big.bin" >"$T/both.out"
        [ "$(head -n1 "$T/both.out" | tr -d '\r')" = "HTTP/1.1 200 OK" ]
        # head, hello, END 6, the second head, 5 MiB of body, END 5242880
        grep -aq '^hello$' "$T/both.out"
        [ "$(grep -an '^hello$' "$T/both.out" | cut -d: -f1)" -lt "$(grep -an '^END 6$' "$T/both.out" | cut -d: -f1)" ]
        [ "$(tail -c 12 "$T/both.out")" = "END 5242880" ]
        head -c -12 "$T/both.out" | tail -c 5242880 | cmp - "$T/www/big.bin"
        [ "$(VEGA_DRIVER=$d vc -sS -w '%{size_download}' "http://127.0.0.1:$SPORT/big.bin" | tail -c 7)" = 5242880 ]
    done
}

@test "/dev/null is not written and a file is written in large pieces (strace, epoll)" {
    command -v strace >/dev/null || skip "strace is not installed"
    big_body
    start_serve
    # Under epoll file writes are write(2) on the blocking pool: count them. 24 MiB in 16 KiB
    # pieces would be over 1,500 writes (plus as many wake-ups).
    VEGA_DRIVER=epoll timeout 60 strace -f -qq -e trace=write -o "$T/null.trace" \
        "$CURL" -sS -o /dev/null "http://127.0.0.1:$SPORT/huge.bin"
    [ "$(wc -l <"$T/null.trace")" -lt 60 ]
    VEGA_DRIVER=epoll timeout 60 strace -f -qq -e trace=write -o "$T/file.trace" \
        "$CURL" -sS -o "$T/dl.bin" "http://127.0.0.1:$SPORT/huge.bin"
    [ "$(wc -l <"$T/file.trace")" -lt 400 ]
    [ "$(sha256sum <"$T/dl.bin" | cut -d' ' -f1)" = "$HUGE_SHA" ]
}

@test "a body that comes slowly is written as it comes, not held for a full buffer" {
    cat >"$T/slow.py" <<'PY'
import socket, time
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(4)
print("port", ls.getsockname()[1], flush=True)
while True:
    c, _ = ls.accept()
    c.recv(65536)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nfirst\n")
    time.sleep(3)
    c.sendall(b"second\n")
    c.close()
PY
    bg "$T/slow.log" command -p python3 -u "$T/slow.py"
    wait_for_line "$T/slow.log" '^port [0-9]+' 10
    local port d
    port="$(awk '/^port/ {print $2; exit}' "$T/slow.log")"
    for d in uring epoll; do
        # to a pipe: the first line is there long before the body ends
        local t0 t1
        t0=$(date +%s%N)
        VEGA_DRIVER=$d vc -sS "http://127.0.0.1:$port/" | {
            read -r line
            [ "$line" = first ]
            date +%s%N >"$T/t1"
            cat >/dev/null
        }
        t1=$(cat "$T/t1")
        [ $(((t1 - t0) / 1000000)) -lt 2500 ]
        # to a file: its first bytes are on disk while the transfer still runs
        rm -f "$T/slow.out"
        VEGA_DRIVER=$d vc -sS -o "$T/slow.out" "http://127.0.0.1:$port/" &
        local pid=$! i
        for ((i = 0; i < 40; i++)); do
            [ -s "$T/slow.out" ] && break
            sleep 0.05
        done
        [ "$(cat "$T/slow.out")" = first ]
        wait "$pid"
        [ "$(cat "$T/slow.out")" = "$(printf 'first\nsecond')" ]
    done
}

@test "a full disk, /dev/full and a closed pipe exit 23 with the reason (both drivers)" {
    big_body
    start_serve
    local d url="http://127.0.0.1:$SPORT/huge.bin" small="$T/small" mounted=0
    mkdir -p "$small"
    # A 1 MiB tmpfs (root only). Every result is gathered first and checked after the
    # unmount, so that a failed check leaves no mount behind.
    if mount -t tmpfs -o size=1m tmpfs "$small" 2>/dev/null; then
        mounted=1
        for d in uring epoll; do
            rm -f "$small/out.bin"
            local rc=0
            env VEGA_DRIVER=$d "$CURL" -sS -o "$small/out.bin" -w '%{exitcode}' "$url" \
                >"$T/full-$d.out" 2>"$T/full-$d.err" || rc=$?
            echo $rc >"$T/full-$d.rc"
            stat -c %s "$small/out.bin" >"$T/full-$d.size"
            # stdout redirected to the full file system
            rc=0
            env VEGA_DRIVER=$d "$CURL" -sS "$url" >"$small/out.bin" 2>"$T/full-$d.err2" || rc=$?
            echo $rc >"$T/full-$d.rc2"
        done
        umount "$small"
    fi
    for d in uring epoll; do
        if [ $mounted = 1 ]; then
            [ "$(cat "$T/full-$d.rc")" -eq 23 ]
            grep -q '(23) Failure writing output.*No space left on device' "$T/full-$d.err"
            [ "$(cat "$T/full-$d.out")" = 23 ]
            # what fitted is there, and not the whole body
            [ "$(cat "$T/full-$d.size")" -lt "$HUGE_LEN" ]
            [ "$(cat "$T/full-$d.rc2")" -eq 23 ]
            grep -q 'No space left on device' "$T/full-$d.err2"
        fi
        run env VEGA_DRIVER=$d "$CURL" -sS -o /dev/full "$url"
        [ "$status" -eq 23 ]
        [[ "$output" == *"Failure writing output to destination (/dev/full: No space left on device)"* ]]
        run env VEGA_DRIVER=$d sh -c "'$CURL' -sS '$url' >/dev/full"
        [ "$status" -eq 23 ]
        [[ "$output" == *"(stdout: No space left on device)"* ]]
        # a reader that goes away: EPIPE is a write error too
        run env VEGA_DRIVER=$d bash -c "'$CURL' -sS '$url' | head -c 10 >/dev/null; echo \"rc=\${PIPESTATUS[0]}\""
        [[ "$output" == *"rc=23"* ]]
    done
    [ $mounted = 1 ] || skip "no tmpfs mount (not root?): only /dev/full and the pipe were checked"
}

@test "a transfer that fails keeps what it received in the file (-m, both drivers)" {
    start_raw endless
    local d
    for d in uring epoll; do
        rm -f "$T/part.bin"
        run env VEGA_DRIVER=$d timeout 30 "$CURL" -sS -m 1 -o "$T/part.bin" "http://127.0.0.1:$RPORT/"
        [ "$status" -eq 28 ]
        [ "$(stat -c %s "$T/part.bin")" -gt 0 ]
        # only whole chunks' bytes: every byte is an x
        [ -z "$(tr -d x <"$T/part.bin" | head -c 1)" ]
    done
}

@test "-T of a regular file over plain HTTP goes by sendfile(2), never through reads (strace)" {
    command -v strace >/dev/null || skip "strace is not installed"
    big_body
    start_raw bodylen
    local d
    for d in uring epoll; do
        VEGA_DRIVER=$d timeout 300 strace -f -qq -e trace=sendfile,read,pread64 -o "$T/up-$d.trace" \
            "$CURL" -sS -o "$T/up-$d.out" -T "$T/www/huge.bin" "http://127.0.0.1:$RPORT/up"
        [ "$(cat "$T/up-$d.out")" = "$HUGE_LEN $HUGE_SHA" ]
        grep -q '^[0-9]* *sendfile(' "$T/up-$d.trace"
        # the file never passes through user space: all read(2)/pread64(2) together (the
        # loader's ELF headers, config files, the response) stay far below its 24 MiB
        local bytes
        bytes=$(awk '/^[0-9]+ +p?read(64)?\(/ { n = $NF; if (n > 0) s += n } END { print s + 0 }' \
            "$T/up-$d.trace")
        [ "$bytes" -lt 1048576 ]
    done
}

@test "-T streams a regular file (sendfile, and kernel reads for stdin) and stdin, byte-identical, on both drivers" {
    big_body
    start_raw bodylen
    local d
    for d in uring epoll; do
        run env VEGA_DRIVER=$d "$CURL" -sS -T "$T/www/huge.bin" "http://127.0.0.1:$RPORT/up"
        [ "$status" -eq 0 ]
        [ "$output" = "$HUGE_LEN $HUGE_SHA" ]
        run env VEGA_DRIVER=$d sh -c "'$CURL' -sS -T - 'http://127.0.0.1:$RPORT/up' <'$T/www/huge.bin'"
        [ "$status" -eq 0 ]
        [ "$output" = "$HUGE_LEN $HUGE_SHA" ]
        # stdin from a pipe: chunked
        run env VEGA_DRIVER=$d sh -c "cat '$T/www/big.bin' | '$CURL' -sS -T - 'http://127.0.0.1:$RPORT/up'"
        [ "$status" -eq 0 ]
        [ "$output" = "5242880 $(sha256sum <"$T/www/big.bin" | cut -d' ' -f1)" ]
    done
}
