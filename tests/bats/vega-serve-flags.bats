#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-serve's miniserve/Caddy-like flags with the real curl as the client: Basic auth (-a,
# --auth-file, --realm) on files, listings and --ws-echo; --spa, --index, --cors, --no-etag,
# --no-last-modified, --random-route; and the bad inputs around them. Loopback only, port 0.

load helpers

# started: LOG -> the port of its first listener (after waiting for the serving line).
port_of() {
    wait_for_line "$1" 'serving' 10
    sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$1" | head -n1
}

# Three servers on one tree serve every test but the usage ones.
setup_file() {
    SERVE="$(vega_bin vega-serve)"
    export SERVE
    export ROOT="$BATS_FILE_TMPDIR/root"
    mkdir -p "$ROOT/app/assets" "$ROOT/docs" "$ROOT/plain" "$ROOT/w"
    export UROOT="$BATS_FILE_TMPDIR/uroot" OUTSIDE="$BATS_FILE_TMPDIR/outside"
    mkdir -p "$UROOT/d" "$OUTSIDE"
    ln -s "$OUTSIDE" "$UROOT/out"
    printf 'not to be archived\n' >"$OUTSIDE/secret.txt"
    # a tree for --tar: a path past ustar's 255 bytes (pax), a file over a block, a dotfile,
    # symlinks out of DIR and inside it
    local long
    long="$(printf 'segment-%.0s' {1..12})"
    mkdir -p "$UROOT/t/sub/$long/$long"
    printf 'top\n' >"$UROOT/t/a.txt"
    printf 'deep\n' >"$UROOT/t/sub/$long/$long/$long.txt"
    head -c 70001 /dev/urandom >"$UROOT/t/sub/blob.bin"
    printf 'hidden\n' >"$UROOT/t/.dot"
    ln -s "$OUTSIDE" "$UROOT/t/sub/escape"
    ln -s ../a.txt "$UROOT/t/sub/inside"
    printf 'hello world\n' >"$ROOT/hello.txt"
    printf '<h1>root index</h1>\n' >"$ROOT/index.html"
    printf 'main page\n' >"$ROOT/docs/main.htm"
    printf 'docs index\n' >"$ROOT/docs/index.html"
    printf 'only index\n' >"$ROOT/app/index.html"
    printf 'js\n' >"$ROOT/app/assets/app.js"
    printf 'x\n' >"$ROOT/plain/a.txt"

    local hash
    hash="$(printf %s 'carol pw' | sha256sum | cut -d' ' -f1)"
    export USERS="$BATS_FILE_TMPDIR/users"
    printf '# users\n\ncarol:sha256:%s\n' "$hash" >"$USERS"
    local bobhash
    bobhash="$(printf %s 'bob-pw' | sha256sum | cut -d' ' -f1)"

    local d="$BATS_FILE_TMPDIR"
    ("$SERVE" -p 0 --workers 1 -a alice:secret -a "bob:sha256:$bobhash" --auth-file "$USERS" \
        --realm 'Private files' --ws-echo /ws "$ROOT" 2>"$d/auth.log" 3>&- </dev/null &
        echo $! >"$d/auth.pid")
    ("$SERVE" -p 0 --workers 1 --spa --index main.htm --index index.html --cors --no-etag \
        --no-last-modified --upload --overwrite "$ROOT" 2>"$d/spa.log" 3>&- </dev/null &
        echo $! >"$d/spa.pid")
    ("$SERVE" -p 0 --workers 1 --random-route "$ROOT" 2>"$d/route.log" 3>&- </dev/null &
        echo $! >"$d/route.pid")
    ("$SERVE" -p 0 --workers 1 --upload --mkdir --tar --upload-max 100K --access-log "$d/up.access" \
        "$UROOT" 2>"$d/up.log" 3>&- \
        </dev/null &
        echo $! >"$d/up.pid")
    local p
    p="$(port_of "$d/up.log")"
    [ -n "$p" ] || return 1
    export UP="http://127.0.0.1:$p"
    p="$(port_of "$d/auth.log")"
    [ -n "$p" ] || return 1
    export A="http://127.0.0.1:$p"
    p="$(port_of "$d/spa.log")"
    [ -n "$p" ] || return 1
    export S="http://127.0.0.1:$p"
    p="$(port_of "$d/route.log")"
    [ -n "$p" ] || return 1
    export R="http://127.0.0.1:$p"
    export ROUTE
    ROUTE="$(sed -nE 's|.*random route (/[a-z0-9]+)/ .*|\1|p' "$d/route.log")"
    [ -n "$ROUTE" ] || return 1
}

teardown_file() {
    local f pid
    for f in auth spa route up; do
        pid="$(cat "$BATS_FILE_TMPDIR/$f.pid" 2>/dev/null)" || continue
        kill -KILL "$pid" 2>/dev/null || true
    done
}

setup() {
    T="$BATS_TEST_TMPDIR"
}

teardown() {
    stop_bg_all
}

c() {
    curl -sS --max-time 20 "$@"
}

# status URL [CURL ARGS...]: prints the status code.
status() {
    local u="$1"
    shift
    curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "$@" "$u"
}

# codes URL [CURL ARGS...] [:: URL [CURL ARGS...]]...: the status codes, one a line, of
# several requests made by one curl (--next), for speed.
codes() {
    local args=(-sS --max-time 20 -o /dev/null -w '%{http_code}\n') a
    for a in "$@"; do
        if [ "$a" = "::" ]; then
            args+=(--next -sS --max-time 20 -o /dev/null -w '%{http_code}\n')
        else
            args+=("$a")
        fi
    done
    curl "${args[@]}"
}

@test "--help lists every new flag, and its auth-file recipe has no printf escapes left" {
    run "$SERVE" --help
    [ "$status" -eq 0 ]
    local f
    for f in '-a, --auth USER:PASS' '--auth-file FILE' '--realm TEXT' '--index NAME' \
        '--spa, --try-files' '--cors' '--no-etag' '--no-last-modified' '--random-route' \
        '--tar' '--tar-gz' '--zip' '--upload ' '--upload-max SIZE' '--overwrite' '--mkdir' \
        '--hash-password USER' '--hash-scheme S' '--auth-cache N' '--keepalive-timeout SECS'; do
        grep -qF -- "$f" <<<"$output"
    done
    refute_grep -F '%%' <<<"$output"
}

# ---- Basic auth ----------------------------------------------------------------------------

@test "auth: without credentials, 401 with the realm's challenge" {
    run curl -sS --max-time 20 -D - -o /dev/null "$A/hello.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == "HTTP/1.1 401"* ]]
    grep -qiF 'WWW-Authenticate: Basic realm="Private files", charset="UTF-8"' <<<"$output"
}

@test "auth: each way of giving a user lets it in" {
    [ "$(c -u alice:secret "$A/hello.txt")" = "hello world" ]
    [ "$(c -u bob:bob-pw "$A/hello.txt")" = "hello world" ]
    [ "$(c -u 'carol:carol pw' "$A/hello.txt")" = "hello world" ]
}

@test "auth: a wrong password, an unknown user, another user's password: 401" {
    got=($(codes "$A/hello.txt" -u alice:secreT \
        :: "$A/hello.txt" -u alice:secret2 \
        :: "$A/hello.txt" -u mallory:secret \
        :: "$A/hello.txt" -u alice:bob-pw \
        :: "$A/hello.txt" -u bob:sha256:x))
    [ "${got[0]}" = 401 ]
    [ "${got[1]}" = 401 ]
    [ "${got[2]}" = 401 ]
    [ "${got[3]}" = 401 ]
    [ "${got[4]}" = 401 ]
}

@test "auth: listings, directories, errors and the WebSocket path are behind it too" {
    got=($(codes "$A/plain/" :: "$A/missing" :: "$A/../etc/passwd" --path-as-is))
    [ "${got[0]}" = 401 ]
    [ "${got[1]}" = 401 ]
    [ "${got[2]}" = 401 ]
    c -u alice:secret "$A/plain/" | grep -qF 'a.txt'
    [ "$(status "$A/missing" -u alice:secret)" = 404 ]
}

# ws_head URL AUTH: the status line of a WebSocket handshake (python3: curl 7.88 has no ws://).
ws_head() {
    command -p python3 - "$1" "$2" <<'PY'
import socket, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
s = socket.create_connection((u.hostname, u.port), timeout=10)
auth = "Authorization: Basic %s\r\n" % sys.argv[2] if sys.argv[2] else ""
s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
           "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n%s\r\n"
           % (u.path, auth)).encode())
buf = b""
while b"\r\n" not in buf:
    d = s.recv(4096)
    if not d:
        break
    buf += d
print(buf.split(b"\r\n")[0].decode())
PY
}

@test "auth: the WebSocket echo needs credentials, and answers 101 with them" {
    [ "$(ws_head "$A/ws" '')" = "HTTP/1.1 401 Unauthorized" ]
    # base64 of alice:secret
    [ "$(ws_head "$A/ws" 'YWxpY2U6c2VjcmV0')" = "HTTP/1.1 101 Switching Protocols" ]
}

@test "auth: malformed Authorization fields get 401, never a crash" {
    got=($(codes "$A/hello.txt" -H 'Authorization: Basic' \
        :: "$A/hello.txt" -H 'Authorization: Basic !!!!' \
        :: "$A/hello.txt" -H 'Authorization: Basic YWxpY2U=' \
        :: "$A/hello.txt" -H 'Authorization: Basic Ym9iOmJvYi1wdw==' \
        :: "$A/hello.txt" -H 'Authorization: Basic Ym9iOmJvYi1wdw' \
        :: "$A/hello.txt" -H 'Authorization: Basic Ym9iOmJvYi1wdw=a' \
        :: "$A/hello.txt" -H 'Authorization: Basic YW=jZTpzZWNyZXQ=' \
        :: "$A/hello.txt" -H 'Authorization: Bearer YWxpY2U6c2VjcmV0'))
    [ "${got[0]}" = 401 ]
    [ "${got[1]}" = 401 ]
    [ "${got[2]}" = 401 ]         # no ':'
    [ "${got[3]}" = 200 ] # bob:bob-pw
    [ "${got[4]}" = 401 ]   # unpadded
    [ "${got[5]}" = 401 ]
    [ "${got[6]}" = 401 ]
    [ "${got[7]}" = 401 ]
    # the scheme is case-insensitive (RFC 9110 §11.1)
    [ "$(status "$A/hello.txt" -H 'Authorization: basic YWxpY2U6c2VjcmV0')" = 200 ]
    # longer than any user:password could be (files: no long words through bash)
    { printf 'Authorization: Basic '; head -c 3000 /dev/zero | tr '\0' 'A'; echo; } >"$T/h1"
    [ "$(status "$A/hello.txt" -H "@$T/h1")" = 401 ]
    # a field line beyond the server's limit (8 KiB): 431, and the server goes on
    { printf 'Authorization: Basic '; head -c 10000 /dev/zero | tr '\0' 'A'; echo; } >"$T/h2"
    got=($(codes "$A/hello.txt" -H "@$T/h2" :: "$A/hello.txt" -u alice:secret))
    [ "${got[0]}" = 431 ]
    [ "${got[1]}" = 200 ]
}

@test "auth: a plain-HTTP start warns about clear-text passwords" {
    grep -qF 'warning: Basic auth over plain HTTP' "$BATS_FILE_TMPDIR/auth.log"
}

@test "auth: plain passwords and cut-short hashes in --auth-file are refused, with the line" {
    printf 'dave:hunter2\n' >"$T/plain"
    run "$SERVE" --auth-file "$T/plain" -p 0 "$ROOT"
    [ "$status" -eq 2 ]
    [[ "$output" == *"plain:1:"*"plain password is refused"* ]]
    printf '# c\ndave:$2y$10$abcdefghijklmnopqrstuu\n' >"$T/bcrypt"
    run "$SERVE" --auth-file "$T/bcrypt" -p 0 "$ROOT"
    [ "$status" -eq 2 ]
    [[ "$output" == *"bcrypt:2:"*"setting without its hash"* ]]
    printf 'dave:sha256:abcd\n' >"$T/short"
    run "$SERVE" --auth-file "$T/short" -p 0 "$ROOT"
    [ "$status" -eq 2 ]
    [[ "$output" == *"64 hex digits"* ]]
    printf '# nobody\n' >"$T/empty"
    run "$SERVE" --auth-file "$T/empty" -p 0 "$ROOT"
    [ "$status" -eq 2 ]
    [[ "$output" == *"no user"* ]]
    head -c 2000 /dev/zero | tr '\0' 'a' >"$T/longline"
    run "$SERVE" --auth-file "$T/longline" -p 0 "$ROOT"
    [ "$status" -eq 2 ]
    [[ "$output" == *"longer than 1024 bytes"* ]]
    run "$SERVE" --auth-file "$T/nonexistent" -p 0 "$ROOT"
    [ "$status" -eq 2 ]
}

@test "auth: bad -a and --realm values are usage errors" {
    run "$SERVE" -a nocolon -p 0 "$ROOT"
    [ "$status" -eq 2 ]
    run "$SERVE" -a ':pw' -p 0 "$ROOT"
    [ "$status" -eq 2 ]
    run "$SERVE" -a 'u:' -p 0 "$ROOT"
    [ "$status" -eq 2 ]
    run "$SERVE" -a u:a -a u:b -p 0 "$ROOT"
    [ "$status" -eq 2 ]
    [[ "$output" == *"given twice"* ]]
    run "$SERVE" --realm 'a"b' -p 0 "$ROOT"
    [ "$status" -eq 2 ]
}

# ---- --spa, --index, --cors, --no-etag, --no-last-modified --------------------------------

@test "--spa: a missing route answers the root's index with 200; a missing asset stays 404" {
    run curl -sS --max-time 20 -w '\n%{http_code}' "$S/users/42/edit"
    [ "${lines[0]}" = "<h1>root index</h1>" ]
    [ "${lines[1]}" = 200 ]
    [ "$(status "$S/app/assets/missing.js")" = 404 ]
    [ "$(c "$S/app/assets/app.js")" = "js" ]
    got=($(codes "$S/hello.txt/x.y" :: "$S/.hidden"))
    [ "${got[0]}" = 404 ]
    [ "${got[1]}" = 404 ]
}

@test "--index: the names are tried in order, then the listing" {
    [ "$(c "$S/docs/")" = "main page" ]
    [ "$(c "$S/app/")" = "only index" ]
    c "$S/plain/" | grep -qF 'a.txt'
}

@test "--index: bad names are usage errors" {
    run "$SERVE" --index a/b -p 0 "$ROOT"
    [ "$status" -eq 2 ]
    run "$SERVE" --index .. -p 0 "$ROOT"
    [ "$status" -eq 2 ]
    run "$SERVE" --index '' -p 0 "$ROOT"
    [ "$status" -eq 2 ]
}

@test "--cors: every answer allows any origin; a preflight gets 204 with methods and max-age" {
    run curl -sS --max-time 20 -D - -o /dev/null -H 'Origin: http://a.example' "$S/hello.txt"
    grep -qiF 'Access-Control-Allow-Origin: *' <<<"$output"
    run curl -sS --max-time 20 -D - -o /dev/null "$S/nothing.js"
    grep -qiF 'Access-Control-Allow-Origin: *' <<<"$output"
    run curl -sS --max-time 20 -D - -o /dev/null -X OPTIONS -H 'Origin: http://a.example' \
        -H 'Access-Control-Request-Method: GET' \
        -H 'Access-Control-Request-Headers: range, x-custom' "$S/hello.txt"
    [[ "$output" == "HTTP/1.1 204"* ]]
    grep -qiE '^Access-Control-Allow-Methods: GET, HEAD, OPTIONS, PUT, POST' <<<"$output"
    grep -qiE '^Access-Control-Allow-Headers: range, x-custom' <<<"$output"
    grep -qiE '^Access-Control-Max-Age: 86400' <<<"$output"
    grep -qiF 'Access-Control-Allow-Origin: *' <<<"$output"
}

@test "--cors with -H Access-Control-*: refused" {
    run "$SERVE" --cors -H 'Access-Control-Allow-Origin: x' -p 0 "$ROOT"
    [ "$status" -eq 2 ]
}

@test "--no-etag, --no-last-modified: no validators, and their conditions do not match" {
    run curl -sS --max-time 20 -D - -o /dev/null "$S/hello.txt"
    [[ "$output" == "HTTP/1.1 200"* ]]
    refute_grep -i '^ETag:' <<<"$output"
    refute_grep -i '^Last-Modified:' <<<"$output"
    got=($(codes "$S/hello.txt" -H 'If-None-Match: ""' \
        :: "$S/hello.txt" -H 'If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT' \
        :: "$S/hello.txt" -H 'If-None-Match: *'))
    [ "${got[0]}" = 200 ]
    [ "${got[1]}" = 200 ]
    [ "${got[2]}" = 304 ]
}

# refute_grep ARGS...: fails when grep finds a match in stdin.
refute_grep() {
    if grep -q "$@"; then
        echo "unexpected match: $*" >&2
        return 1
    fi
}

@test "validators are on by default (the other server has both)" {
    run curl -sS --max-time 20 -D - -o /dev/null -u alice:secret "$A/hello.txt"
    grep -qi '^ETag: "' <<<"$output"
    grep -qi '^Last-Modified: ' <<<"$output"
}

# ---- --random-route ------------------------------------------------------------------------

@test "--random-route: served only below the printed prefix" {
    grep -qF "serving $ROOT on $R$ROUTE/ " "$BATS_FILE_TMPDIR/route.log"
    [[ "$ROUTE" =~ ^/[a-z0-9]{6}$ ]]
    [ "$(c "$R$ROUTE/hello.txt")" = "hello world" ]
    got=($(codes "$R/hello.txt" :: "$R/" :: "$R${ROUTE}x/hello.txt"))
    [ "${got[0]}" = 404 ]
    [ "${got[1]}" = 404 ]
    [ "${got[2]}" = 404 ]
    run curl -sS --max-time 20 -D - -o /dev/null "$R$ROUTE"
    [[ "$output" == "HTTP/1.1 301"* ]]
    grep -qiE "^Location: $ROUTE/" <<<"$output"
    run curl -sS --max-time 20 -D - -o /dev/null "$R$ROUTE/plain"
    grep -qiE "^Location: $ROUTE/plain/" <<<"$output"
    c "$R$ROUTE/plain/" | grep -qF 'href="./a.txt"'
}

@test "--random-route: the prefix is printed even with -q, and differs per start" {
    start_bg "$T/q.log" "$SERVE" -q -p 0 --random-route "$ROOT"
    wait_for_line "$T/q.log" 'random route /[a-z0-9]{6}/' 10
    refute_grep -F "$ROUTE/" "$T/q.log"
    refute_grep 'listening' "$T/q.log"
}

@test "--random-route: a valid \$VEGA_SERVE_ROUTE (a binary upgrade's) is kept, another is not" {
    VEGA_SERVE_ROUTE=/zz9zz9 start_bg "$T/e1.log" "$SERVE" -p 0 --random-route "$ROOT"
    wait_for_line "$T/e1.log" 'random route ' 10
    grep -qF 'random route /zz9zz9/ ' "$T/e1.log"
    VEGA_SERVE_ROUTE=/../etc start_bg "$T/e2.log" "$SERVE" -p 0 --random-route "$ROOT"
    wait_for_line "$T/e2.log" 'random route ' 10
    grep -qE 'random route /[a-z0-9]{6}/ ' "$T/e2.log"
}

# ---- --upload, --mkdir ---------------------------------------------------------------------

# no_temp DIR: no temporary upload file is left in DIR.
no_temp() {
    local left
    left="$(find "$1" -name '.vega-upload-*')"
    [ -z "$left" ] || { echo "left: $left" >&2; return 1; }
}

@test "upload: PUT makes a file (201), never replaces one without --overwrite (409)" {
    printf 'first\n' >"$T/f1"
    printf 'second\n' >"$T/f2"
    [ "$(status "$UP/d/put.txt" -T "$T/f1")" = 201 ]
    [ "$(cat "$UROOT/d/put.txt")" = first ]
    [ "$(status "$UP/d/put.txt" -T "$T/f2")" = 409 ]
    [ "$(cat "$UROOT/d/put.txt")" = first ]
    # read back at once (the cache sees the new file)
    [ "$(c "$UP/d/put.txt")" = first ]
    no_temp "$UROOT"
}

@test "upload: --overwrite replaces (200), a folder is never replaced (409)" {
    printf 'one\n' >"$T/f1"
    printf 'two\n' >"$T/f2"
    [ "$(status "$S/w/o.txt" -T "$T/f1")" = 201 ]
    [ "$(c "$S/w/o.txt")" = one ]
    [ "$(status "$S/w/o.txt" -T "$T/f2")" = 200 ]
    [ "$(c "$S/w/o.txt")" = two ]
    [ "$(status "$S/w" -T "$T/f2")" = 409 ]
    no_temp "$ROOT"
}

@test "upload: over --upload-max is 413 with no file left, by length or chunked" {
    head -c 102401 /dev/zero >"$T/big"
    got=($(codes "$UP/d/big.bin" -T "$T/big" \
        :: "$UP/d/big2.bin" -T "$T/big" -H 'Transfer-Encoding: chunked' \
        :: "$UP/d/" -F "file=@$T/big;filename=big3.bin"))
    [ "${got[0]}" = 413 ]
    [ "${got[1]}" = 413 ]
    [ "${got[2]}" = 413 ]
    [ ! -e "$UROOT/d/big.bin" ]
    [ ! -e "$UROOT/d/big2.bin" ]
    [ ! -e "$UROOT/d/big3.bin" ]
    head -c 102400 /dev/zero >"$T/fits"
    [ "$(status "$UP/d/fits.bin" -T "$T/fits")" = 201 ]
    [ "$(stat -c %s "$UROOT/d/fits.bin")" = 102400 ]
    no_temp "$UROOT"
}

@test "upload: a dropped connection leaves no file and no temporary file" {
    command -p python3 - "$UP" <<'PY'
import socket, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
s = socket.create_connection((u.hostname, u.port), timeout=10)
s.sendall(b"PUT /d/dropped.bin HTTP/1.1\r\nHost: x\r\nContent-Length: 50000\r\n\r\n" + b"x" * 20000)
s.close()
PY
    # the exchange is logged once the server has seen the close and cleaned up
    wait_for_line "$BATS_FILE_TMPDIR/up.access" '"PUT /d/dropped.bin ' 10
    no_temp "$UROOT"
    [ ! -e "$UROOT/d/dropped.bin" ]
    [ "$(status "$UP/d/put.txt")" = 200 ]
}

@test "upload: names and paths as strict as for reads" {
    printf 'x\n' >"$T/f"
    got=($(codes "$UP/d/.hidden" -T "$T/f" \
        :: "$UP/%2e%2e/escape" -T "$T/f" --path-as-is \
        :: "$UP/d%2Fx" -T "$T/f" --path-as-is \
        :: "$UP/d/a%00b" -T "$T/f" --path-as-is \
        :: "$UP/d/a%5Cb" -T "$T/f" --path-as-is \
        :: "$UP/out/x" -T "$T/f" \
        :: "$UP/missing/x" -T "$T/f"))
    [ "${got[0]}" = 404 ]
    [ "${got[1]}" = 400 ]
    [ "${got[2]}" = 400 ]
    [ "${got[3]}" = 400 ]
    [ "${got[4]}" = 400 ]
    [ "${got[5]}" = 404 ]
    [ "${got[6]}" = 404 ]
    [ ! -e "$OUTSIDE/x" ]
    no_temp "$UROOT"
}

@test "upload: a multipart form from the listing saves each file and answers 303" {
    c "$UP/d/" | grep -qF 'enctype="multipart/form-data"'
    c "$UP/d/" | grep -qF 'name="mkdir"'
    printf 'A\n' >"$T/a"
    printf 'B\n' >"$T/b"
    run curl -sS --max-time 20 -D - -o /dev/null -F "file=@$T/a;filename=m1.txt" \
        -F "file=@$T/b;filename=m2.txt" -F 'note=not a file' "$UP/d/"
    [[ "$output" == "HTTP/1.1 303"* ]]
    grep -qiE '^Location: /d/' <<<"$output"
    [ "$(cat "$UROOT/d/m1.txt")" = A ]
    [ "$(cat "$UROOT/d/m2.txt")" = B ]
    # a client path is cut to its base name
    [ "$(status "$UP/d/" -F "file=@$T/a;filename=../../m3.txt")" = 303 ]
    [ "$(cat "$UROOT/d/m3.txt")" = A ]
    [ "$(status "$UP/d/" -F "file=@$T/a;filename=m1.txt")" = 409 ]
    no_temp "$UROOT"
}

@test "upload: bad multipart bodies get 400 or 415, never a crash" {
    printf 'x\n' >"$T/f"
    [ "$(status "$UP/d/" -F "file=@$T/f;filename=.dot")" = 400 ]
    [ "$(status "$UP/d/" -H 'Content-Type: multipart/form-data; boundary=zz' \
        --data-binary 'no delimiter at all')" = 400 ]
    [ "$(status "$UP/d/" -H 'Content-Type: multipart/form-data; boundary=zz' \
        --data-binary $'--zz\r\nContent-Disposition: form-data; name="f"; filename="t.txt"\r\n\r\nno end')" = 400 ]
    got=($(codes "$UP/d/" -H 'Content-Type: multipart/form-data' --data-binary 'x' \
        :: "$UP/d/" -H 'Content-Type: text/plain' --data-binary 'x'))
    [ "${got[0]}" = 415 ]
    [ "${got[1]}" = 415 ]
    [ ! -e "$UROOT/d/t.txt" ]
    [ ! -e "$UROOT/d/.dot" ]
    no_temp "$UROOT"
    [ "$(status "$UP/d/put.txt")" = 200 ]
}

@test "upload: the form's limits: part head 8 KiB, 1000 parts, a 70-byte boundary, 1 KiB mkdir" {
    command -p python3 - "$T" <<'PY'
import sys
d = sys.argv[1]
part = b'--zz\r\nContent-Disposition: form-data; name="a"\r\n\r\nx\r\n'
open(d + "/parts1000", "wb").write(part * 1000 + b"--zz--\r\n")
open(d + "/parts1001", "wb").write(part * 1001 + b"--zz--\r\n")
big = (b'--zz\r\nContent-Disposition: form-data; name="a"; filename="h.txt"\r\nX-Pad: '
       + b"p" * 8200 + b"\r\n\r\nx\r\n--zz--\r\n")
open(d + "/bighead", "wb").write(big)
PY
    local mp='Content-Type: multipart/form-data; boundary=zz'
    local b70 b71
    b70="$(printf 'b%.0s' {1..70})"
    b71="${b70}b"
    printf -- '--%s\r\nContent-Disposition: form-data; name="f"; filename="b70.txt"\r\n\r\nok\r\n--%s--\r\n' \
        "$b70" "$b70" >"$T/b70"
    got=($(codes "$UP/d/" -H "$mp" --data-binary "@$T/parts1000" \
        :: "$UP/d/" -H "$mp" --data-binary "@$T/parts1001" \
        :: "$UP/d/" -H "$mp" --data-binary "@$T/bighead" \
        :: "$UP/d/" -H "Content-Type: multipart/form-data; boundary=$b70" --data-binary "@$T/b70" \
        :: "$UP/d/" -H "Content-Type: multipart/form-data; boundary=$b71" --data-binary "@$T/b70" \
        :: "$UP/d/" -d "mkdir=$(printf 'm%.0s' {1..1100})"))
    [ "${got[0]}" = 303 ]
    [ "${got[1]}" = 400 ]
    [ "${got[2]}" = 400 ]
    [ "${got[3]}" = 303 ]
    [ "${got[4]}" = 415 ]
    [ "${got[5]}" = 413 ]
    [ "$(cat "$UROOT/d/b70.txt")" = ok ]
    [ ! -e "$UROOT/d/h.txt" ]
    no_temp "$UROOT"
}

@test "upload: another origin's form is refused (403)" {
    printf 'x\n' >"$T/f"
    got=($(codes "$UP/d/" -H 'Origin: http://evil.example' -F "file=@$T/f;filename=o.txt" \
        :: "$UP/d/o2.txt" -H 'Origin: http://evil.example' -T "$T/f"))
    [ "${got[0]}" = 403 ]
    [ "${got[1]}" = 403 ]
    [ ! -e "$UROOT/d/o.txt" ]
    [ ! -e "$UROOT/d/o2.txt" ]
    [ "$(status "$UP/d/" -H "Origin: $UP" -F "file=@$T/f;filename=o3.txt")" = 303 ]
}

@test "--mkdir: a POST makes a folder; bad names 400, an existing one 409" {
    [ "$(status "$UP/d/" -d 'mkdir=new+folder')" = 303 ]
    [ -d "$UROOT/d/new folder" ]
    got=($(codes "$UP/d/" -d 'mkdir=new+folder' \
        :: "$UP/d/" -d 'mkdir=..' \
        :: "$UP/d/" -d 'mkdir=a%2Fb' \
        :: "$UP/d/" -d 'mkdir=a%00b' \
        :: "$UP/d/" -d 'mkdir=.git' \
        :: "$UP/d/" -d 'mkdir=%zz' \
        :: "$UP/d/" -d 'mkdir=a&x=1'))
    [ "${got[0]}" = 409 ]
    [ "${got[1]}" = 400 ]
    [ "${got[2]}" = 400 ]
    [ "${got[3]}" = 400 ]
    [ "${got[4]}" = 400 ]
    [ "${got[5]}" = 400 ]
    [ "${got[6]}" = 400 ]
}

@test "without --upload, PUT and POST are 405 with Allow" {
    run curl -sS --max-time 20 -D - -o /dev/null -u alice:secret -T /dev/null "$A/x.txt"
    [[ "$output" == "HTTP/1.1 405"* ]]
    grep -qiE '^Allow: GET, HEAD' <<<"$output"
    [ ! -e "$ROOT/x.txt" ]
}

# ---- listing page --------------------------------------------------------------------------

@test "listing: breadcrumbs link each folder relatively, a parent link, dark mode" {
    mkdir -p "$UROOT/d/e"
    run c "$UP/d/e/"
    [ "$status" -eq 0 ]
    [[ "$output" == *'<h1>Index of <a href="../../">/</a><a href="../">d/</a>e/</h1>'* ]]
    [[ "$output" == *'<a href="../">../</a>'* ]]
    [[ "$output" == *'@media(prefers-color-scheme:dark)'* ]]
    run c "$UP/"
    [[ "$output" == *'<h1>Index of /</h1>'* ]]
}

# ---- --tar ---------------------------------------------------------------------------------

@test "--tar: a folder as a tar of its regular files and folders, no dotfiles, no symlinks" {
    run curl -sS --max-time 20 -D "$T/head" -o "$T/t.tar" "$UP/t/?download=tar"
    [ "$status" -eq 0 ]
    grep -qiF 'Content-Type: application/x-tar' "$T/head"
    grep -qiF 'Content-Disposition: attachment; filename="t.tar"' "$T/head"
    # python's tarfile reads the pax header and checks every header's checksum
    command -p python3 -c '
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    for m in t.getmembers():
        print(m.type.decode() if isinstance(m.type, bytes) else m.type, m.name)
' "$T/t.tar" | sort >"$T/names"
    grep -qxF '5 t' "$T/names"
    grep -qxF '0 t/a.txt' "$T/names"
    grep -qxF '0 t/sub/blob.bin' "$T/names"
    grep -qE '^0 t/sub/(segment-){12}/(segment-){12}/(segment-){12}\.txt$' "$T/names"
    refute_grep -F '.dot' "$T/names"
    refute_grep -F 'escape' "$T/names"
    refute_grep -F 'inside' "$T/names"
    refute_grep -F 'secret' "$T/names"
    mkdir "$T/x"
    tar -xf "$T/t.tar" -C "$T/x"
    cmp "$UROOT/t/sub/blob.bin" "$T/x/t/sub/blob.bin"
    [ "$(cat "$T/x/t/sub/"segment-*/segment-*/segment-*.txt)" = deep ]
    [ -z "$(ls -A "$T/x/t/sub/" | grep -E 'escape|inside' || true)" ]
}

@test "--tar: the listing links to it; the root is root.tar; without the query, a listing" {
    c "$UP/t/" | grep -qF 'href="?download=tar"'
    run curl -sS --max-time 20 -D - -o /dev/null "$UP/?download=tar"
    grep -qiF 'filename="root.tar"' <<<"$output"
    run curl -sS --max-time 20 -D - -o /dev/null "$UP/t/?download=tarx"
    grep -qiF 'Content-Type: text/html' <<<"$output"
    # the other servers have no --tar: a listing
    run curl -sS --max-time 20 -D - -o /dev/null "$S/plain/?download=tar"
    grep -qiF 'Content-Type: text/html' <<<"$output"
}

# ---- --keepalive-timeout ------------------------------------------------------------------------

@test "--keepalive-timeout: an idle keep-alive connection is closed after its answer; bad values are usage errors" {
    local d="$BATS_TEST_TMPDIR"
    start_bg "$d/ka.log" "$SERVE" -p 0 --workers 1 --no-http3 --keepalive-timeout 1 "$ROOT"
    local port
    port="$(port_of "$d/ka.log")"
    # one request answered in full on a kept-alive connection, then the server ends it (the
    # default, 60 s, would outlast the client's 20 s wait)
    run timeout 30 /usr/bin/python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n")
buf = b""
while not buf.endswith(b"hello world\n"):
    b = s.recv(4096)
    assert b, "closed before the answer"
    buf += b
assert b"connection: close" not in buf.lower(), buf
s.settimeout(20)
assert s.recv(1) == b"", "more bytes"
print("closed")' "$port"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = closed ]
    for v in 0 86401 x; do
        run "$SERVE" -p 0 --keepalive-timeout "$v" "$ROOT"
        [ "$status" -eq 2 ]
        [[ "$output" == *"--keepalive-timeout: expected 1..86400 seconds"* ]]
    done
}

@test "--blocking-threads and --blocking-queue: values out of range are usage errors" {
    local v
    for v in 0 1025 x; do
        run "$SERVE" -p 0 --blocking-threads "$v" "$ROOT"
        [ "$status" -eq 2 ]
        [[ "$output" == *"--blocking-threads: expected 1..1024"* ]]
    done
    for v in 0 1000001 x; do
        run "$SERVE" -p 0 --blocking-queue "$v" "$ROOT"
        [ "$status" -eq 2 ]
        [[ "$output" == *"--blocking-queue: expected 1..1000000"* ]]
    done
}

@test "--tls-ciphers for HTTP/3: a suite QUIC does not offer, or a fourth, is a usage error naming it" {
    local offers="QUIC offers TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384 and TLS_CHACHA20_POLY1305_SHA256"
    run timeout 20 "$SERVE" -b 127.0.0.1 -p 0 --tls --tls-ciphers TLS_AES_128_CCM_SHA256 "$ROOT"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--tls-ciphers: 'TLS_AES_128_CCM_SHA256': $offers"* ]]
    run timeout 20 "$SERVE" -b 127.0.0.1 -p 0 --tls --tls-ciphers \
        TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256:TLS_AES_128_GCM_SHA256 \
        "$ROOT"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--tls-ciphers: 'TLS_AES_128_GCM_SHA256': $offers"* ]]
}

@test "--metrics: ADDR:PORT or :PORT (loopback); anything else is a usage error with the value" {
    local v
    for v in nonsense :99999 : 127.0.0.1: ::1:80; do
        run timeout 20 "$SERVE" -p 0 --metrics "$v" "$ROOT"
        [ "$status" -eq 2 ]
        [[ "$output" == *"--metrics: expected ADDR:PORT, got '$v'"* ]]
    done
}
