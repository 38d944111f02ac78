#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-proxy as users run it: curl (--socks5-hostname, --socks5, --socks4a, -x http:// with and
# without -p), vega-curl -x and ncat --proxy as clients, vega-serve and vega-echo as
# destinations, all on loopback: bodies, credentials (SOCKS auth failure exit 97, 407), the
# reply for a refused destination, a large body's sha256, half-closes, the access log, the no
# open proxy rule and SIGTERM.

load helpers

setup_file() {
    W="$BATS_FILE_TMPDIR/www"
    mkdir -p "$W"
    echo hello-proxy >"$W/index.html"
    # the large download: 32 MiB (3 MiB under the sanitizers)
    local mib=32
    [ "${VEGA_TEST_SCALE:-1}" -gt 1 ] && mib=3
    head -c $((mib * 1024 * 1024)) /dev/urandom >"$W/big.bin"
    export W
}

setup() {
    PROXY="$(vega_bin vega-proxy)"
    SERVE="$(vega_bin vega-serve)"
    T="$BATS_TEST_TMPDIR"
}

teardown() {
    stop_bg_all
}

# proxy ARGS...: vega-proxy on a free loopback port; sets PX (its port) and PX_PID.
proxy() {
    start_bg "$T/proxy.log" "$PROXY" -l 127.0.0.1:0 "$@"
    PX_PID=$BG_PID
    wait_for_line "$T/proxy.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    PX="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/proxy.log" | head -1)"
}

# origin: vega-serve over $W on a free port; sets OP.
origin() {
    "$SERVE" -p 0 --no-http3 "$W" >"$T/serve.log" 2>&1 3>&- </dev/null &
    VEGA_BG_PIDS+=("$!")
    wait_for_line "$T/serve.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    OP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/serve.log" | head -1)"
}

# A loopback port nothing listens on: one the kernel gave a listener that is gone.
closed_port() {
    command -p python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

@test "--help and --version" {
    run "$PROXY" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"--allow CIDR"* ]]
    [[ "$output" == *"--deny-dest CIDR[:PORTS]"* ]]
    [[ "$output" == *"--users FILE"* ]]
    [[ "$output" == *"--rules FILE"* ]]
    [[ "$output" == *"--upstream URL"* ]]
    [[ "$output" == *"UDP ASSOCIATE"* ]]
    [[ "$output" == *"Examples:"* ]]
    run "$PROXY" --version
    [ "$status" -eq 0 ]
    [[ "$output" == "vega-proxy "* ]]
    run "$PROXY" --bogus
    [ "$status" -eq 2 ]
}

@test "no open proxy: listening beyond loopback needs --allow or credentials" {
    run "$PROXY" -l 0.0.0.0:0
    [ "$status" -eq 2 ]
    [[ "$output" == *"open proxy"* ]]
    start_bg "$T/p.log" "$PROXY" -l 0.0.0.0:0 --allow 127.0.0.0/8
    wait_for_line "$T/p.log" 'listening on 0\.0\.0\.0:[0-9]+' 10
}

@test "curl through SOCKS5 (both name modes), SOCKS4a and HTTP (CONNECT and forwarding)" {
    origin
    proxy
    local u="http://127.0.0.1:$OP/index.html"
    run curl -sS --socks5-hostname "127.0.0.1:$PX" "http://localhost:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run curl -sS --socks5 "127.0.0.1:$PX" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run curl -sS --socks4a "127.0.0.1:$PX" "http://localhost:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run curl -sS --socks4 "127.0.0.1:$PX" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run curl -sS -p -x "http://127.0.0.1:$PX" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run curl -sS -x "http://127.0.0.1:$PX" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    # one access log line per tunnel, with what each moved
    wait_for_line "$T/proxy.log" 'http GET 127\.0\.0\.1:[0-9]+ up=[1-9][0-9]* down=[1-9][0-9]* .*result=ok' 5
    grep -E 'socks5 CONNECT localhost:[0-9]+ up=[1-9][0-9]* down=[1-9][0-9]* .*result=ok' "$T/proxy.log"
    grep -E 'socks4a CONNECT localhost:' "$T/proxy.log"
    grep -E 'http CONNECT 127\.0\.0\.1:' "$T/proxy.log"
}

@test "credentials: SOCKS5 username/password and HTTP Basic; failures give 97 and 407" {
    origin
    proxy -u alice -P s3cret
    local u="http://127.0.0.1:$OP/index.html"
    run curl -sS --socks5-hostname "alice:s3cret@127.0.0.1:$PX" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run curl -sS --socks5-hostname "alice:wrong@127.0.0.1:$PX" "$u"
    [ "$status" -eq 97 ]
    run curl -sS --socks5-hostname "127.0.0.1:$PX" "$u"
    [ "$status" -eq 97 ]
    run curl -sS -x "http://127.0.0.1:$PX" -U alice:s3cret "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run curl -sS -p -x "http://127.0.0.1:$PX" -U alice:s3cret "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run curl -s -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$PX" -U alice:nope "$u"
    [ "$output" = 407 ]
    run curl -s -o /dev/null -w '%{http_connect}' -p -x "http://127.0.0.1:$PX" "$u"
    [ "$output" = 407 ]
    run curl -sSI -x "http://127.0.0.1:$PX" "$u"
    [[ "$output" == *'Proxy-Authenticate: Basic realm="vega-proxy"'* ]]
    grep -E 'user=alice socks5 .*result=auth-failed' "$T/proxy.log"
    # SOCKS4 carries no password: refused when credentials are required
    run curl -sS --socks4a "127.0.0.1:$PX" "$u"
    [ "$status" -eq 97 ]
}

@test "a refused destination: SOCKS5 REP 5, SOCKS4 91, HTTP 502" {
    proxy -v
    local p
    p="$(closed_port)"
    run curl -sS --socks5 "127.0.0.1:$PX" "http://127.0.0.1:$p/"
    [ "$status" -eq 97 ]
    [[ "$output" == *"SOCKS5 connection to 127.0.0.1. (5)"* ]] # REP X'05' Connection refused
    run curl -sS --socks4 "127.0.0.1:$PX" "http://127.0.0.1:$p/"
    [ "$status" -eq 97 ]
    run curl -s -o /dev/null -w '%{http_connect}' -p -x "http://127.0.0.1:$PX" "http://127.0.0.1:$p/"
    [ "$status" -eq 56 ]
    [ "$output" = 502 ]
    run curl -s -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$PX" "http://127.0.0.1:$p/"
    [ "$output" = 502 ]
    grep -E "socks5 CONNECT 127\.0\.0\.1:$p .*result=refused" "$T/proxy.log"
}

@test "a malformed HTTP request gets 400, an https:// target 501, an oversized head 431" {
    proxy --max-head 1K
    run bash -c "printf 'GET /x HTTP/1.1\r\nHost: a\r\n\r\n' | timeout 10 ncat 127.0.0.1 $PX"
    [[ "$output" == "HTTP/1.1 400 "* ]]
    run bash -c "printf 'GET https://a/ HTTP/1.1\r\n\r\n' | timeout 10 ncat 127.0.0.1 $PX"
    [[ "$output" == "HTTP/1.1 501 "* ]]
    run bash -c "{ printf 'GET http://a/ HTTP/1.1\r\nX: '; head -c 2000 /dev/zero | tr '\\0' x; } | timeout 10 ncat 127.0.0.1 $PX"
    [[ "$output" == "HTTP/1.1 431 "* ]]
}

@test "a large download through SOCKS5 and CONNECT tunnels keeps its sha256" {
    origin
    proxy
    local want
    want="$(sha256sum <"$W/big.bin" | cut -d' ' -f1)"
    run bash -c "curl -sS --socks5-hostname 127.0.0.1:$PX http://127.0.0.1:$OP/big.bin | sha256sum"
    [ "${output%% *}" = "$want" ]
    run bash -c "curl -sS -p -x http://127.0.0.1:$PX http://127.0.0.1:$OP/big.bin | sha256sum"
    [ "${output%% *}" = "$want" ]
}

@test "vega-curl -x and ncat --proxy as clients; half-closes reach the other side" {
    origin
    proxy
    local VC ECHO
    VC="$(vega_bin vega-curl)"
    ECHO="$(vega_bin vega-echo)"
    run timeout 20 "$VC" -sS -x "socks5h://127.0.0.1:$PX" "http://127.0.0.1:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run timeout 20 "$VC" -sS -x "http://127.0.0.1:$PX" "http://127.0.0.1:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run timeout 20 "$VC" -sS -p -x "http://127.0.0.1:$PX" "http://127.0.0.1:$OP/index.html"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    command -v ncat >/dev/null || skip "ncat is not installed (apt-get install ncat)"
    # vega-echo answers everything, then closes once the client's EOF reached it: ncat only
    # exits with the echo when its half-close crossed the proxy and the echo's came back
    start_bg "$T/echo.log" "$ECHO" -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    local EP
    EP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
    run bash -c "echo half-close | timeout 10 ncat --proxy 127.0.0.1:$PX --proxy-type socks5 127.0.0.1 $EP"
    [ "$status" -eq 0 ]
    [ "$output" = half-close ]
    run bash -c "echo via-http | timeout 10 ncat --proxy 127.0.0.1:$PX --proxy-type http 127.0.0.1 $EP"
    [ "$status" -eq 0 ]
    [ "$output" = via-http ]
    grep -E 'socks5 CONNECT 127\.0\.0\.1:[0-9]+ up=11 down=11 .*result=ok' "$T/proxy.log"
}

@test "SOCKS5 UDP ASSOCIATE relays datagrams to a UDP echo; strangers and fragments dropped" {
    local ECHO PY EP
    ECHO="$(vega_bin vega-echo)"
    PY="$(command -p -v python3)"
    start_bg "$T/echo.log" "$ECHO" -u -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on udp 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
    proxy -v -u alice -P s3cret
    # the client: by IP and by name, 40 KiB, then a datagram from another port, one from
    # another IP and a fragment (all dropped), then the control connection's close ends it
    run timeout 30 "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" "$PX" "$EP" alice:s3cret
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = ok ]
    wait_for_line "$T/proxy.log" 'user=alice socks5 UDP 127\.0\.0\.1:[0-9]+ up=40971 down=40971 .*result=ok' 5
    # three dropped, and the probes for the closed relay may add more
    grep -E 'udp: ([3-9]|[1-9][0-9]+) datagrams dropped' "$T/proxy.log"
}

@test "an idle UDP association ends after --idle-timeout" {
    local PY
    PY="$(command -p -v python3)"
    proxy -i 200ms
    run timeout 20 "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" --idle "$PX"
    [ "$status" -eq 0 ]
    [ "$output" = closed ]
    wait_for_line "$T/proxy.log" 'socks5 UDP 127\.0\.0\.1:[0-9]+ up=0 down=0 .*result=idle-timeout' 5
}

@test "--deny-dest: SOCKS5 REP 2, SOCKS4 91, HTTP 403, UDP datagrams dropped; other ports pass" {
    local ECHO PY EP
    ECHO="$(vega_bin vega-echo)"
    PY="$(command -p -v python3)"
    local bad
    for bad in 10.0.0.0/8:0 10.0.0.0/8:9-1 10.0.0.0/8:80, '[::1]:' fd00::/8:53 10.0.0.0/33 \
        10.0.0.256 'ho st:80' -host.example a..example '[host.example]:80' 0 70000 ':'; do
        run "$PROXY" --deny-dest "$bad"
        [ "$status" -eq 2 ]
        [[ "$output" == *"not CIDR[:PORTS], HOST[:PORTS] or PORTS"* ]]
    done
    origin
    start_bg "$T/echo.log" "$ECHO" -u -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on udp 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
    proxy -vv --deny-dest "127.0.0.0/8:1-2,$OP" --deny-dest 127.0.0.2 --deny-dest '[::1]'
    local u="http://127.0.0.1:$OP/index.html"
    run curl -sS --socks5 "127.0.0.1:$PX" "$u"
    [ "$status" -eq 97 ]
    [[ "$output" == *"(2)"* ]] # REP X'02' connection not allowed by ruleset
    # a name is refused when one of its addresses is
    run curl -sS --socks5-hostname "127.0.0.1:$PX" "http://localhost:$OP/index.html"
    [ "$status" -eq 97 ]
    run curl -sS --socks4 "127.0.0.1:$PX" "$u"
    [ "$status" -eq 97 ]
    run curl -s -o /dev/null -w '%{http_connect}' -p -x "http://127.0.0.1:$PX" "$u"
    [ "$output" = 403 ]
    run curl -s -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$PX" "$u"
    [ "$output" = 403 ]
    grep -E "socks5 CONNECT 127\.0\.0\.1:$OP .*result=denied" "$T/proxy.log"
    grep -E "http GET 127\.0\.0\.1:$OP .*result=denied" "$T/proxy.log"
    # UDP: 127.0.0.2 is refused, 127.0.0.1 on the echo's port is not
    run timeout 30 "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" --deny "$PX" "$EP" 127.0.0.2
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = ok ]
    grep -E "udp: datagram to 127\.0\.0\.2 port $EP dropped: " "$T/proxy.log"
}

@test "--users FILE: each listed user gets through SOCKS5 and HTTP; bad files stop the start" {
    printf 'alice:x\n# a comment\nbob\n' >"$T/bad.users"
    chmod 600 "$T/bad.users"
    run "$PROXY" --users "$T/bad.users"
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad.users: line 3: not user:password"* ]]
    printf 'alice:x\nalice:y\n' >"$T/dup.users"
    run "$PROXY" --users "$T/dup.users"
    [ "$status" -eq 2 ]
    [[ "$output" == *"line 2: this user is listed twice"* ]]
    run "$PROXY" --users "$T/dup.users" -u alice -P x
    [ "$status" -eq 2 ]
    origin
    printf '# who may use the proxy\nalice:s3cret\n\nbob:pa:ss\n' >"$T/users"
    chmod 644 "$T/users"
    proxy --users "$T/users"
    grep -E 'users: warning: readable by everyone \(mode 0644\)' "$T/proxy.log"
    local u="http://127.0.0.1:$OP/index.html"
    run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user alice:s3cret "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    # the password is what follows the first ':'
    run curl -sS --socks5-hostname "127.0.0.1:$PX" --proxy-user bob:pa:ss "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run curl -sS -x "http://127.0.0.1:$PX" --proxy-user bob:pa:ss "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    # one user's password does not open another's account
    run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user bob:s3cret "$u"
    [ "$status" -eq 97 ]
    run curl -s -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$PX" --proxy-user alice:pa:ss "$u"
    [ "$output" = 407 ]
    grep -E 'user=bob socks5 .*result=auth-failed' "$T/proxy.log"
}

@test "--users with stored hashes (bcrypt, yescrypt, pbkdf2, sha512-crypt, sha256:HEX) and -P HASH: right passwords in, wrong ones out; a slow check runs once, then is cached" {
    local u h
    for s in bcrypt yescrypt pbkdf2 sha512-crypt; do
        printf 'pw-%s\n' "$s" | "$PROXY" --hash-password "u-$s" --hash-scheme "$s" >>"$T/users"
    done
    printf 'u-openssl:%s\n' "$(openssl passwd -6 pw-openssl)" >>"$T/users"
    printf 'u-sha:sha256:%s\n' "$(printf pw-sha | sha256sum | cut -d' ' -f1)" >>"$T/users"
    grep -E '^u-bcrypt:\$2b\$10\$' "$T/users"
    grep -E '^u-yescrypt:\$y\$' "$T/users"
    grep -E '^u-pbkdf2:\$pbkdf2-sha256\$600000\$' "$T/users"
    grep -E '^u-sha512-crypt:\$6\$' "$T/users"
    # hashes only: no warning for a file others may read
    chmod 644 "$T/users"
    origin
    proxy -v --users "$T/users"
    ! grep -q 'warning: readable' "$T/proxy.log"
    u="http://127.0.0.1:$OP/index.html"
    for s in bcrypt yescrypt pbkdf2 sha512-crypt openssl sha; do
        run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user "u-$s:pw-$s" "$u"
        [ "$status" -eq 0 ]
        [ "$output" = hello-proxy ]
        run curl -sS -x "http://127.0.0.1:$PX" --proxy-user "u-$s:pw-$s" "$u"
        [ "$status" -eq 0 ]
        [ "$output" = hello-proxy ]
        run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user "u-$s:pw-wrong" "$u"
        [ "$status" -eq 97 ]
        run curl -s -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$PX" --proxy-user "u-$s:pw-x" "$u"
        [ "$output" = 407 ]
    done
    # two good tunnels of u-bcrypt, one bcrypt run: the second came from the cache; each
    # wrong password ran it again
    [ "$(grep -c "auth: bcrypt hash run for 'u-bcrypt' (match" "$T/proxy.log")" -eq 1 ]
    [ "$(grep -c "auth: bcrypt hash run for 'u-bcrypt' (no match" "$T/proxy.log")" -eq 2 ]
    # an unknown user costs a slow hash too (the time does not tell which names exist)
    run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user "nobody:pw" "$u"
    [ "$status" -eq 97 ]
    grep -E 'auth: [a-z0-9-]+ hash run for an unknown user' "$T/proxy.log"
    kill -TERM "$PX_PID"
    wait_pid_exit "$PX_PID" 15
    # -P takes a stored hash too; a malformed one stops the start
    h="$(printf 'pw-p\n' | "$PROXY" --hash-password carol --hash-scheme pbkdf2 | cut -d: -f2-)"
    proxy -u carol -P "$h"
    run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user carol:pw-p "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user "carol:$h" "$u"
    [ "$status" -eq 97 ]
    run "$PROXY" -u carol -P '$apr1$abcdefgh$0123456789012345678901'
    [ "$status" -eq 2 ]
    [[ "$output" == *"apr1"*"not supported"* ]]
    printf 'dave:$2b$10$short\n' >"$T/bad.users"
    run "$PROXY" --users "$T/bad.users"
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad.users: line 1: "* ]]
    # a NUL byte inside a line is refused, not read as the end of the line
    printf 'dave:pw\0more\n' >"$T/bad.users"
    run "$PROXY" --users "$T/bad.users"
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad.users: line 1: a NUL byte in the line"* ]]
    run "$PROXY" --hash-password eve --hash-scheme md5 </dev/null
    [ "$status" -eq 2 ]
}

@test "--max-conns-per-user: a user's next tunnel is refused (SOCKS5 REP 2, HTTP 429) while it holds N, other users pass; a closed tunnel gives its place back" {
    local ECHO PY EP u
    ECHO="$(vega_bin vega-echo)"
    PY="$(command -p -v python3)"
    run "$PROXY" --max-conns-per-user 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"needs users"* ]]
    run "$PROXY" -u a -P b --max-conns-per-user 0
    [ "$status" -eq 2 ]
    [[ "$output" == *"--max-conns-per-user: a number from 1"* ]]
    origin
    u="http://127.0.0.1:$OP/index.html"
    start_bg "$T/echo.log" "$ECHO" -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
    printf 'alice:one\nbob:two\n' >"$T/users"
    chmod 600 "$T/users"
    proxy --users "$T/users" --max-conns-per-user 1 --metrics 127.0.0.1:0
    local MP
    MP="$(sed -n 's/.*metrics on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/proxy.log" | head -1)"
    start_bg "$T/hold.log" "$PY" "$BATS_TEST_DIRNAME/socks5-hold.py" "$PX" "$EP" alice one "$T/go"
    wait_for_line "$T/hold.log" '^held$' 10
    run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user alice:one "$u"
    [ "$status" -eq 97 ]
    run curl -s -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$PX" --proxy-user alice:one "$u"
    [ "$output" = 429 ]
    grep -E 'user=alice socks5 CONNECT .*result=user-limit' "$T/proxy.log"
    grep -E 'user=alice http GET .*result=user-limit' "$T/proxy.log"
    run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user bob:two "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    [ -n "$MP" ]
    run curl -sS "http://127.0.0.1:$MP/metrics"
    [[ "$output" == *"vega_proxy_user_limit_rejected_total 2"* ]]
    # a reload keeps the count: alice still holds her tunnel
    kill -HUP "$PX_PID"
    wait_for_line "$T/proxy.log" 'users: reloaded, 2 users' 10
    run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user alice:one "$u"
    [ "$status" -eq 97 ]
    # the held tunnel ends (its log line is written after its place is given back)
    touch "$T/go"
    wait_for_line "$T/hold.log" '^ok$' 10
    wait_for_line "$T/proxy.log" 'user=alice socks5 CONNECT 127\.0\.0\.1:[0-9]+ .*result=ok' 10
    run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user alice:one "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
}

@test "--deny-dest HOST and PORTS: a name and the names below it are refused as the client gives them (SOCKS5h, SOCKS4a, HTTP), addresses and other names pass; a port is refused everywhere; a --rules file takes both" {
    origin
    proxy -v --deny-dest '*.LocalHost.' --deny-dest 'blocked.example:1-100'
    local u="http://127.0.0.1:$OP/index.html"
    run curl -sS --socks5-hostname "127.0.0.1:$PX" "http://localhost:$OP/index.html"
    [ "$status" -eq 97 ]
    # refused before any lookup: a name below it that does not resolve is refused, not unknown
    run curl -sS --socks5-hostname "127.0.0.1:$PX" "http://a.b.localhost:$OP/index.html"
    [ "$status" -eq 97 ]
    grep -E 'user=- socks5 CONNECT a\.b\.localhost:[0-9]+ .*result=denied' "$T/proxy.log"
    run curl -sS --socks4a "127.0.0.1:$PX" "http://localhost:$OP/index.html"
    [ "$status" -eq 97 ]
    run curl -s -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$PX" "http://LOCALHOST:$OP/index.html"
    [ "$output" = 403 ]
    # the address itself, and a name the rule does not cover (a port outside its range)
    run curl -sS --socks5 "127.0.0.1:$PX" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run curl -sS --socks5-hostname "127.0.0.1:$PX" "http://blocked.example:$OP/"
    [ "$status" -eq 97 ]
    grep -E 'blocked\.example:[0-9]+ .*result=' "$T/proxy.log"
    ! grep -E 'blocked\.example:[0-9]+ .*result=denied' "$T/proxy.log"
    kill -TERM "$PX_PID"
    wait_pid_exit "$PX_PID" 15
    # PORTS alone: every destination on the origin's port, by address and by name
    proxy --deny-dest ":$OP"
    run curl -sS --socks5 "127.0.0.1:$PX" "$u"
    [ "$status" -eq 97 ]
    run curl -s -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$PX" "http://localhost:$OP/index.html"
    [ "$output" = 403 ]
    kill -TERM "$PX_PID"
    wait_pid_exit "$PX_PID" 15
    printf 'deny-dest localhost:%s\ndeny-dest 1-1023\n' "$OP" >"$T/rules"
    proxy --rules "$T/rules"
    run curl -sS --socks5-hostname "127.0.0.1:$PX" "http://localhost:$OP/index.html"
    [ "$status" -eq 97 ]
    run curl -sS --socks5-hostname "127.0.0.1:$PX" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
}

@test "SSRF guard: listening beyond loopback, private and local destinations are refused (SOCKS5 REP 2, HTTP 403) unless --allow-private-dest; a loopback listener is not guarded" {
    local BP
    origin
    local u="http://127.0.0.1:$OP/index.html"
    start_bg "$T/open.log" "$PROXY" -l 0.0.0.0:0 --allow 127.0.0.0/8
    wait_for_line "$T/open.log" 'listening on 0\.0\.0\.0:[0-9]+ .*private destinations refused' 10
    BP="$(sed -n 's/.*listening on 0\.0\.0\.0:\([0-9]*\).*/\1/p' "$T/open.log" | head -1)"
    run curl -sS --socks5 "127.0.0.1:$BP" "$u"
    [ "$status" -eq 97 ]
    run curl -sS --socks5-hostname "127.0.0.1:$BP" "http://localhost:$OP/index.html"
    [ "$status" -eq 97 ]
    run curl -s -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$BP" "$u"
    [ "$output" = 403 ]
    run curl -s -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$BP" "http://[::ffff:127.0.0.1]:$OP/"
    [ "$output" = 403 ]
    [ "$(grep -c 'result=denied' "$T/open.log")" -eq 4 ]
    start_bg "$T/open2.log" "$PROXY" -l 0.0.0.0:0 --allow 127.0.0.0/8 --allow-private-dest
    wait_for_line "$T/open2.log" 'listening on 0\.0\.0\.0:[0-9]+' 10
    ! grep -q 'private destinations refused' "$T/open2.log"
    BP="$(sed -n 's/.*listening on 0\.0\.0\.0:\([0-9]*\).*/\1/p' "$T/open2.log" | head -1)"
    run curl -sS --socks5 "127.0.0.1:$BP" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    proxy
    ! grep -q 'private destinations refused' "$T/proxy.log"
    run curl -sS --socks5 "127.0.0.1:$PX" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
}

@test "every SOCKS5 reply a connect can get (REP 3, 4 for no route, a timeout and an unknown name, 7, 8) and HTTP 502 and 504, in a network namespace of our own" {
    unshare -n true 2>/dev/null || skip "no network namespaces here (unshare -n)"
    run timeout 60 unshare -n bash "$BATS_TEST_DIRNAME/proxy-replies.sh" "$PROXY"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "192.0.2.1 3" ]     # network unreachable (no route)
    [ "${lines[1]}" = "198.51.100.1 4" ]  # host unreachable (an unreachable route)
    [ "${lines[2]}" = "192.0.2.200 4" ]   # the connect timed out
    [ "${lines[3]}" = "nowhere.invalid 4" ]
    [ "${lines[4]}" = "x 8" ]             # address type not supported
    [ "${lines[5]}" = "192.0.2.1 7" ]     # command not supported
    [ "${lines[6]}" = "http 192.0.2.1 502" ]
    [ "${lines[7]}" = "http 198.51.100.1 502" ]
    [ "${lines[8]}" = "http 192.0.2.200 504" ]
}

@test "SIGTERM stops accepting and exits 0; --grace 0 stops an open UDP association" {
    local ECHO PY EP
    ECHO="$(vega_bin vega-echo)"
    PY="$(command -p -v python3)"
    start_bg "$T/echo.log" "$ECHO" -u -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on udp 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
    proxy --grace 0
    start_bg "$T/hold.log" "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" --hold "$PX" "$EP"
    wait_for_line "$T/hold.log" '^held$' 10
    kill -TERM "$PX_PID"
    wait_pid_exit "$PX_PID" 15
    [ "$BG_STATUS" -eq 0 ]
    run curl -sS --socks5 "127.0.0.1:$PX" http://127.0.0.1:1/
    [ "$status" -eq 7 ]
    grep -E 'socks5 UDP 127\.0\.0\.1:[0-9]+ up=4 down=4 .*result=stopped' "$T/proxy.log"
    wait_for_line "$T/hold.log" '^closed$' 10
}

@test "256 MiB each way through a SOCKS5 tunnel keeps its sha256 (splice; copy with --no-splice); JSON access log" {
    # 1 GiB each way took 27 s here under load: bench/run-proxy-bulk.sh moves 1 GiB
    local PY mib=256 small=64
    PY="$(command -p -v python3)"
    # the sanitizers are slow: a smaller load there
    [ "${VEGA_TEST_SCALE:-1}" -gt 1 ] && mib=64 small=16
    proxy --log-format json
    run timeout 120 "$PY" "$BATS_TEST_DIRNAME/proxy-bulk.py" "$PX" "$mib" 100
    [ "$status" -eq 0 ]
    [[ "$output" == ok* ]]
    kill -TERM "$PX_PID"
    wait_pid_exit "$PX_PID" 15
    # one valid JSON object per tunnel, with the bytes each way
    run "$PY" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert len(lines) == 1, lines
t = lines[0]
assert t["proto"] == "socks5" and t["method"] == "CONNECT" and t["result"] == "ok", t
assert t["up"] == t["down"] == int(sys.argv[2]) << 20, t
assert t["user"] is None and t["client"].startswith("127.0.0.1:") and t["duration"] > 0, t
print("json ok")' "$T/proxy.log" "$mib"
    [ "$status" -eq 0 ]
    [ "$output" = "json ok" ]
    rm -f "$T/proxy.log"
    proxy --no-splice --driver epoll
    run timeout 60 "$PY" "$BATS_TEST_DIRNAME/proxy-bulk.py" "$PX" "$small" 50
    [ "$status" -eq 0 ]
    [[ "$output" == ok* ]]
    run "$PROXY" --log-format xml
    [ "$status" -eq 2 ]
}

@test "SIGHUP reloads --users: an open tunnel keeps working, an added user gets in, a removed one not" {
    local ECHO PY EP u
    ECHO="$(vega_bin vega-echo)"
    PY="$(command -p -v python3)"
    origin
    u="http://127.0.0.1:$OP/index.html"
    start_bg "$T/echo.log" "$ECHO" -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
    printf 'alice:one\n' >"$T/users"
    chmod 600 "$T/users"
    proxy --users "$T/users"
    start_bg "$T/hold.log" "$PY" "$BATS_TEST_DIRNAME/socks5-hold.py" "$PX" "$EP" alice one "$T/go"
    wait_for_line "$T/hold.log" '^held$' 10
    printf 'bob:two\n' >"$T/users"
    kill -HUP "$PX_PID"
    wait_for_line "$T/proxy.log" 'users: reloaded, 1 users' 10
    touch "$T/go"
    wait_for_line "$T/hold.log" '^ok$' 10
    run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user bob:two "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    run curl -sS --socks5 "127.0.0.1:$PX" --proxy-user alice:one "$u"
    [ "$status" -eq 97 ]
    # a bad file keeps the users there were, and says why
    printf 'carol\n' >"$T/users"
    kill -HUP "$PX_PID"
    wait_for_line "$T/proxy.log" 'not reloaded' 10
    grep -E 'users: line 1: not user:password' "$T/proxy.log"
    run curl -sS -x "http://127.0.0.1:$PX" -U bob:two "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    kill -0 "$PX_PID"
}

@test "a relaying tunnel: idle both ways for --idle-timeout it ends; SIGTERM with --grace 0 stops an open one" {
    local ECHO PY EP
    ECHO="$(vega_bin vega-echo)"
    PY="$(command -p -v python3)"
    start_bg "$T/echo.log" "$ECHO" -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
    printf 'alice:one\n' >"$T/users"
    chmod 600 "$T/users"
    proxy --users "$T/users" -i 1s --grace 0
    # the tunnel has no task while idle: its parked sockets' deadlines end it
    start_bg "$T/hold.log" "$PY" "$BATS_TEST_DIRNAME/socks5-hold.py" "$PX" "$EP" alice one "$T/never"
    wait_for_line "$T/hold.log" '^held$' 10
    wait_for_line "$T/proxy.log" 'user=alice socks5 CONNECT .* up=3 down=3 .*result=idle-timeout' 10
    start_bg "$T/hold2.log" "$PY" "$BATS_TEST_DIRNAME/socks5-hold.py" "$PX" "$EP" alice one "$T/never"
    wait_for_line "$T/hold2.log" '^held$' 10
    kill -TERM "$PX_PID"
    wait_pid_exit "$PX_PID" 15
    [ "$BG_STATUS" -eq 0 ]
    grep -E 'user=alice socks5 CONNECT .*result=stopped' "$T/proxy.log"
}

# proxy_at LOG ARGS...: another vega-proxy on a free loopback port; sets AT (its port).
proxy_at() {
    local log="$1"
    shift
    start_bg "$log" "$PROXY" -l 127.0.0.1:0 "$@"
    wait_for_line "$log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    AT="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)"
}

@test "--upstream: socks4, socks4a and https:// chains; an https:// upstream is verified unless told not to" {
    local P1 P2 FP u want
    command -v openssl >/dev/null || skip "openssl (the command) is not installed"
    origin
    u="http://localhost:$OP/index.html"
    proxy_at "$T/up.log"
    P2=$AT
    # socks4a: the name goes to the upstream; socks4: resolved here, an IPv4 address goes
    proxy_at "$T/p4a.log" --upstream "socks4a://127.0.0.1:$P2"
    P1=$AT
    run curl -sS --socks5-hostname "127.0.0.1:$P1" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    wait_for_line "$T/up.log" "socks4a CONNECT localhost:$OP .*result=ok" 10
    proxy_at "$T/p4.log" --upstream "socks4://127.0.0.1:$P2"
    P1=$AT
    run curl -sS --socks5-hostname "127.0.0.1:$P1" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    wait_for_line "$T/up.log" "socks4 CONNECT 127\.0\.0\.1:$OP .*result=ok" 10
    # https: Python's ssl terminates TLS in front of the upstream's HTTP side
    printf '[server]\nsubjectAltName = DNS:localhost, IP:127.0.0.1\nextendedKeyUsage = serverAuth\n' \
        >"$T/ext.cnf"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/ca.key" \
        -out "$T/ca.pem" -days 1 -subj "/CN=vega-proxy upstream CA" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/front.key" \
        -out "$T/front.csr" -subj "/CN=front" 2>/dev/null
    openssl x509 -req -in "$T/front.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
        -out "$T/front.pem" -days 1 -extfile "$T/ext.cnf" -extensions server 2>/dev/null
    start_bg "$T/front.log" command -p python3 "$BATS_TEST_DIRNAME/proxy-tls-front.py" \
        "$T/front.pem" "$T/front.key" "$P2"
    wait_for_line "$T/front.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    FP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/front.log" | head -1)"
    proxy_at "$T/ph.log" --upstream "https://localhost:$FP" --upstream-cacert "$T/ca.pem"
    P1=$AT
    run curl -sS --socks5-hostname "127.0.0.1:$P1" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    wait_for_line "$T/front.log" "tls http/1.1 TLSv1.3" 10
    wait_for_line "$T/up.log" "http CONNECT localhost:$OP .*result=ok" 10
    # 32 MiB keep their sha256 through the TLS bridge, and the tunnel ends cleanly
    want="$(sha256sum <"$W/big.bin" | cut -d' ' -f1)"
    run bash -c "curl -sS --socks5-hostname 127.0.0.1:$P1 http://localhost:$OP/big.bin | sha256sum"
    [ "${output%% *}" = "$want" ]
    wait_for_line "$T/ph.log" "socks5 CONNECT localhost:$OP up=[0-9]+ down=[0-9]{7,} .*result=ok" 10
    # half-closes cross the bridge both ways (close_notify towards the upstream, FIN back):
    # ncat exits with the echo only when vega-echo saw its EOF and closed
    if command -v ncat >/dev/null; then
        local ECHO EP
        ECHO="$(vega_bin vega-echo)"
        start_bg "$T/echo.log" "$ECHO" -l 127.0.0.1:0
        wait_for_line "$T/echo.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
        EP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
        run bash -c "echo via-tls | timeout 10 ncat --proxy 127.0.0.1:$P1 --proxy-type socks5 127.0.0.1 $EP"
        [ "$status" -eq 0 ]
        [ "$output" = via-tls ]
        wait_for_line "$T/ph.log" "socks5 CONNECT 127\.0\.0\.1:$EP up=8 down=8 .*result=ok" 10
    fi
    # without the CA the upstream's certificate is refused: REP 1 to the client
    proxy_at "$T/pv.log" --upstream "https://localhost:$FP"
    P1=$AT
    run curl -sS --socks5-hostname "127.0.0.1:$P1" "$u"
    [ "$status" -eq 97 ]
    [[ "$output" == *"(1)"* ]]
    # --upstream-insecure takes it
    proxy_at "$T/pi.log" --upstream "https://localhost:$FP" --upstream-insecure
    P1=$AT
    run curl -sS --socks5-hostname "127.0.0.1:$P1" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    # the TLS options need an https:// upstream
    run "$PROXY" -l 127.0.0.1:0 --upstream "socks5://127.0.0.1:$P2" --upstream-insecure
    [ "$status" -eq 2 ]
    [[ "$output" == *"https:// upstream"* ]]
}

@test "--rules FILE: SIGHUP replaces its rules (an open tunnel stays, new ones are refused); a bad file keeps them" {
    local ECHO PY EP u i
    ECHO="$(vega_bin vega-echo)"
    PY="$(command -p -v python3)"
    # bad files stop the start with the line's number; the count of rules is bounded
    printf 'allow 127.0.0.0/8\ndeny-dest 10.0.0.0/8:0\n' >"$T/bad"
    run "$PROXY" --rules "$T/bad"
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad: line 2: not CIDR[:PORTS]"* ]]
    printf '# c\n\nallow\n' >"$T/bad"
    run "$PROXY" --rules "$T/bad"
    [ "$status" -eq 2 ]
    [[ "$output" == *"line 3: not an address"* ]]
    printf 'permit 10.0.0.1\n' >"$T/bad"
    run "$PROXY" --rules "$T/bad"
    [ "$status" -eq 2 ]
    [[ "$output" == *"line 1: not a rule"* ]]
    printf 'deny 10.0.0.1 10.0.0.2\n' >"$T/bad"
    run "$PROXY" --rules "$T/bad"
    [ "$status" -eq 2 ]
    [[ "$output" == *"line 1: one rule per line"* ]]
    for ((i = 0; i < 4097; i++)); do echo "deny 10.0.0.1"; done >"$T/bad"
    run "$PROXY" --rules "$T/bad"
    [ "$status" -eq 2 ]
    [[ "$output" == *"line 4097: too many rules (at most 4096)"* ]]
    head -c 600 /dev/zero | tr '\0' ' ' >"$T/bad"
    run "$PROXY" --rules "$T/bad"
    [ "$status" -eq 2 ]
    [[ "$output" == *"line 1: line too long"* ]]
    # beyond loopback the file's allow rules close the proxy, and a reload must keep one
    printf 'allow 127.0.0.0/8 # loopback\n' >"$T/open"
    start_bg "$T/open.log" "$PROXY" -l 0.0.0.0:0 --rules "$T/open"
    wait_for_line "$T/open.log" 'listening on 0\.0\.0\.0:[0-9]+' 10
    printf 'deny 10.0.0.1\n' >"$T/open"
    kill -HUP "$BG_PID"
    wait_for_line "$T/open.log" 'not reloaded' 10
    grep -q 'no allow rule' "$T/open.log"

    origin
    u="http://127.0.0.1:$OP/index.html"
    start_bg "$T/echo.log" "$ECHO" -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
    printf '# nothing refused yet\nallow 127.0.0.0/8\n' >"$T/rules"
    proxy -u alice -P one --rules "$T/rules"
    run curl -sS --socks5 "127.0.0.1:$PX" -U alice:one "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    start_bg "$T/hold.log" "$PY" "$BATS_TEST_DIRNAME/socks5-hold.py" "$PX" "$EP" alice one "$T/go"
    wait_for_line "$T/hold.log" '^held$' 10
    printf 'allow 127.0.0.0/8\ndeny-dest 127.0.0.1:%s,%s\n' "$OP" "$EP" >"$T/rules"
    kill -HUP "$PX_PID"
    wait_for_line "$T/proxy.log" 'rules: reloaded, 2 rules' 10
    # the tunnel to the echo was open before: it stays; new connections see the new rules
    touch "$T/go"
    wait_for_line "$T/hold.log" '^ok$' 10
    run curl -sS --socks5 "127.0.0.1:$PX" -U alice:one "$u"
    [ "$status" -eq 97 ]
    [[ "$output" == *"(2)"* ]]
    run curl -s -o /dev/null -w '%{http_connect}' -p -x "http://127.0.0.1:$PX" -U alice:one "$u"
    [ "$status" -eq 56 ]
    [ "$output" = 403 ]
    # a bad file keeps the rules there were, and says why
    printf 'allow 127.0.0.0/8\nallow 300.1.1.1\n' >"$T/rules"
    kill -HUP "$PX_PID"
    wait_for_line "$T/proxy.log" 'not reloaded: the rules stay' 10
    grep -q 'rules: line 2: not an address or CIDR range' "$T/proxy.log"
    run curl -sS --socks5 "127.0.0.1:$PX" -U alice:one "$u"
    [ "$status" -eq 97 ]
    # a client deny rule: the connection is dropped at accept and logged as denied
    printf 'deny 127.0.0.1\n' >"$T/rules"
    kill -HUP "$PX_PID"
    wait_for_line "$T/proxy.log" 'rules: reloaded, 1 rules' 10
    run curl -sS --socks5 "127.0.0.1:$PX" -U alice:one "$u"
    [ "$status" -ne 0 ]
    grep -qE 'user=- - - - up=0 down=0 time=0\.000s result=denied' "$T/proxy.log"
}

@test "--upstream: SOCKS5h and HTTP chains reach the origin, the upstream logs the tunnel; its refusals reach the client" {
    local P1 P2 P3 P4 u
    origin
    u="http://localhost:$OP/index.html"
    proxy_at "$T/up.log" -u bob -P two
    P2=$AT
    # socks5h upstream: the client's name goes through both proxies
    proxy_at "$T/p1.log" --upstream "socks5h://bob:two@127.0.0.1:$P2"
    P1=$AT
    run curl -sS --socks5-hostname "127.0.0.1:$P1" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    wait_for_line "$T/up.log" "user=bob socks5 CONNECT localhost:$OP up=[1-9][0-9]* down=[1-9][0-9]* .*result=ok" 10
    # the relay splices over the upstream's socket: 32 MiB keep their sha256 through both
    local want
    want="$(sha256sum <"$W/big.bin" | cut -d' ' -f1)"
    run bash -c "curl -sS --socks5-hostname 127.0.0.1:$P1 http://localhost:$OP/big.bin | sha256sum"
    [ "${output%% *}" = "$want" ]
    run curl -sS -p -x "http://127.0.0.1:$P1" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    # forwarding (absolute-form) goes through the upstream's tunnel too
    run curl -sS -x "http://127.0.0.1:$P1" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    # http upstream: CONNECT with Basic credentials
    proxy_at "$T/p3.log" --upstream "http://bob:two@127.0.0.1:$P2"
    P3=$AT
    run curl -sS --socks5-hostname "127.0.0.1:$P3" "$u"
    [ "$status" -eq 0 ]
    [ "$output" = hello-proxy ]
    wait_for_line "$T/up.log" "user=bob http CONNECT localhost:$OP .*result=ok" 10
    # --deny-dest applies before the upstream: refused here, nothing reaches it
    proxy_at "$T/p4.log" --deny-dest "127.0.0.1:$OP" --upstream "socks5://bob:two@127.0.0.1:$P2"
    P4=$AT
    run curl -sS --socks5-hostname "127.0.0.1:$P4" "$u"
    [ "$status" -eq 97 ]
    [[ "$output" == *"(2)"* ]]
    wait_for_line "$T/p4.log" "socks5 CONNECT localhost:$OP .*result=denied" 10
    wait_for_line "$T/up.log" "CONNECT localhost:$OP up=[0-9]+ down=[0-9]{7,} " 10
    # the upstream's own refusal (REP 5 for a closed port) reaches the client as such
    run curl -sS --socks5-hostname "127.0.0.1:$P1" "http://127.0.0.1:$(closed_port)/"
    [ "$status" -eq 97 ]
    [[ "$output" == *"(5)"* ]]
    wait_for_line "$T/up.log" 'result=refused' 10
    # five tunnels and the refused one: the denied request never reached the upstream
    [ "$(grep -c 'result=' "$T/up.log")" -eq 6 ]
    # bad credentials at the upstream: SOCKS5 REP 1, HTTP 502
    stop_bg_all
    origin
    proxy_at "$T/up2.log" -u bob -P two
    P2=$AT
    proxy_at "$T/s.log" --upstream "socks5h://bob:wrong@127.0.0.1:$P2"
    P1=$AT
    proxy_at "$T/h.log" --upstream "http://bob:wrong@127.0.0.1:$P2"
    P3=$AT
    run curl -sS --socks5-hostname "127.0.0.1:$P1" "http://localhost:$OP/index.html"
    [ "$status" -eq 97 ]
    [[ "$output" == *"(1)"* ]]
    run curl -s -o /dev/null -w '%{http_connect}' -p -x "http://127.0.0.1:$P3" "http://localhost:$OP/"
    [ "$status" -eq 56 ]
    [ "$output" = 502 ]
    wait_for_line "$T/s.log" 'result=upstream-auth' 10
    wait_for_line "$T/h.log" 'result=upstream-auth' 10
    # an upstream that is not there: REP 1, 502
    proxy_at "$T/d.log" --upstream "socks5://127.0.0.1:$(closed_port)"
    P1=$AT
    run curl -s -o /dev/null -w '%{http_connect}' -p -x "http://127.0.0.1:$P1" "http://localhost:$OP/"
    [ "$status" -eq 56 ]
    [ "$output" = 502 ]
    wait_for_line "$T/d.log" 'result=upstream-unreachable' 10
    # UDP ASSOCIATE through an http:// upstream would bypass it: REP 7; through a socks5://
    # upstream that is not there: REP 1
    local udp_req='
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"\x05\x01\x00")
assert s.recv(2) == b"\x05\x00"
s.sendall(b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00")
print(s.recv(10)[1])'
    run timeout 20 "$(command -p -v python3)" -c "$udp_req" "$P3"
    [ "$status" -eq 0 ]
    [ "$output" = 7 ]
    run timeout 20 "$(command -p -v python3)" -c "$udp_req" "$P1"
    [ "$status" -eq 0 ]
    [ "$output" = 1 ]
    wait_for_line "$T/d.log" 'socks5 UDP .*result=upstream-unreachable' 10
    # only proxy URLs: the kinds are named
    run timeout 10 "$PROXY" --upstream "ftp://127.0.0.1:1"
    [ "$status" -eq 2 ]
    [[ "$output" == *"socks4a://, http://, https://"* ]]
    run timeout 10 "$PROXY" --upstream "127.0.0.1:1"
    [ "$status" -eq 2 ]
}

@test "out of descriptors for a splice pipe, the relay copies: 32 MiB keep their sha256" {
    local want free lim fd
    origin
    proxy -vv --workers 1 --driver epoll
    # the soft limit where exactly two descriptor numbers stay free: the client's and the
    # destination's sockets fit, a pipe (two more) does not
    free=0
    for ((lim = 0; lim < 1024 && free < 2; lim++)); do
        [ -e "/proc/$PX_PID/fd/$lim" ] || free=$((free + 1))
    done
    prlimit --pid "$PX_PID" --nofile="$lim":
    want="$(sha256sum <"$W/big.bin" | cut -d' ' -f1)"
    run bash -c "curl -sS --socks5 127.0.0.1:$PX http://127.0.0.1:$OP/big.bin | sha256sum"
    [ "${output%% *}" = "$want" ]
    grep -q 'no pipe for splice (Too many open files): copying' "$T/proxy.log"
    wait_for_line "$T/proxy.log" "CONNECT 127\.0\.0\.1:$OP up=[0-9]+ down=[0-9]{7,} .*result=ok" 10
}

@test "SOCKS5 and SOCKS4 BIND: the first reply's port takes one connection from DST's IP (a stranger is closed), the second names the peer, bytes and half-closes cross" {
    local PY
    PY="$(command -p -v python3)"
    proxy -v
    run timeout 20 "$PY" "$BATS_TEST_DIRNAME/socks-bind.py" socks5 "$PX"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = ok ]
    run timeout 20 "$PY" "$BATS_TEST_DIRNAME/socks-bind.py" socks4 "$PX"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = ok ]
    wait_for_line "$T/proxy.log" 'user=- socks5 BIND 127\.0\.0\.2:[0-9]+ up=12 down=9 .*result=ok' 10
    wait_for_line "$T/proxy.log" 'user=bind socks4 BIND 127\.0\.0\.2:[0-9]+ up=12 down=9 .*result=ok' 10
    [ "$(grep -c 'bind: a connection from 127\.0\.0\.1:[0-9]*, not 127\.0\.0\.2: closed' "$T/proxy.log")" -eq 2 ]
}

@test "BIND: nobody connects within --idle-timeout (a failure as the second reply); a client that leaves ends it; refused through an http:// upstream (REP 7)" {
    local PY
    PY="$(command -p -v python3)"
    proxy -i 300ms
    run timeout 20 "$PY" "$BATS_TEST_DIRNAME/socks-bind.py" timeout "$PX"
    [ "$status" -eq 0 ]
    [ "$output" = "failed 4" ]
    wait_for_line "$T/proxy.log" 'socks5 BIND 127\.0\.0\.2:0 up=0 down=0 .*result=timeout' 10
    # a client that closes while the proxy waits for the peer ends the wait and the port
    local BP
    stop_bg_all
    proxy
    BP="$(timeout 20 "$PY" "$BATS_TEST_DIRNAME/socks-bind.py" gone "$PX")"
    wait_for_line "$T/proxy.log" 'socks5 BIND 127\.0\.0\.2:0 up=0 down=0 .*result=closed' 10
    run "$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)' "$BP"
    [ "$status" -ne 0 ]
    [[ "$output" == *"Connection refused"* ]]
    local UP=$PX
    proxy_at "$T/chain.log" --upstream "http://127.0.0.1:$UP"
    run "$PY" -c 'import socket,sys; c=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); c.sendall(b"\x05\x01\x00"); assert c.recv(2)==b"\x05\x00"; c.sendall(b"\x05\x02\x00\x01\x7f\x00\x00\x02\x00\x00"); print(c.recv(2)[1])' "$AT"
    [ "$output" = 7 ]
    wait_for_line "$T/chain.log" 'socks5 BIND 127\.0\.0\.2:0 up=0 down=0 .*result=unsupported' 10
}

@test "BIND with a real client: socksify (dante's libdsocks) routes a program's bind, listen and accept through the proxy" {
    command -v socksify >/dev/null || skip "socksify is not installed (apt-get install dante-client)"
    local PY
    PY="$(command -p -v python3)"
    proxy
    printf 'route {\n    from: 0.0.0.0/0 to: 0.0.0.0/0 via: 127.0.0.1 port = %s\n    proxyprotocol: socks_v5\n    command: bind connect\n    method: none\n}\n' \
        "$PX" >"$T/socks.conf"
    # Python's accept() calls accept4(), which libdsocks does not wrap: the script calls libc's
    # accept through ctypes, as a C program would
    run env SOCKS_CONF="$T/socks.conf" timeout 20 socksify "$PY" "$BATS_TEST_DIRNAME/socks-bind-socksify.py"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"accepted from-peer"* ]]
    [[ "$output" == *"peer got back"* ]]
    wait_for_line "$T/proxy.log" 'socks5 BIND 127\.0\.0\.1:[0-9]+ up=4 down=9 .*result=ok' 10
}

@test "UDP ASSOCIATE through a SOCKS5 upstream: chained to danted and to a second vega-proxy (with credentials), datagrams echo through both" {
    local ECHO PY EP UP D
    ECHO="$(vega_bin vega-echo)"
    PY="$(command -p -v python3)"
    start_bg "$T/echo.log" "$ECHO" -u -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on udp 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
    # a second vega-proxy as the upstream, with credentials: by IP and by name (socks5h:
    # the name goes to the upstream), strangers and fragments still dropped at the first
    proxy_at "$T/up.log" -u bob -P two
    UP=$AT
    proxy_at "$T/p1.log" -v --upstream "socks5h://bob:two@127.0.0.1:$UP" -u alice -P s3cret
    run timeout 30 "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" "$AT" "$EP" alice:s3cret
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = ok ]
    wait_for_line "$T/p1.log" 'user=alice socks5 UDP 127\.0\.0\.1:[0-9]+ up=40971 down=40971 .*result=ok' 10
    wait_for_line "$T/up.log" 'user=bob socks5 UDP 127\.0\.0\.1:[0-9]+ up=40971 down=40971 .*result=ok' 10
    # socks5://: names resolved here, the upstream gets addresses
    proxy_at "$T/p2.log" --upstream "socks5://bob:two@127.0.0.1:$UP"
    run timeout 30 "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" "$AT" "$EP"
    [ "$status" -eq 0 ]
    [ "$output" = ok ]
    wait_for_line "$T/up.log" 'user=bob socks5 UDP .* up=40971 down=40971 .*result=ok' 10
    [ "$(grep -c 'user=bob socks5 UDP .*result=ok' "$T/up.log")" -eq 2 ]
    # the upstream refusing our credentials: the client gets a general failure (REP 1), the
    # log names the upstream
    proxy_at "$T/pw.log" --upstream "socks5://bob:wrong@127.0.0.1:$UP"
    run timeout 30 "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" "$AT" "$EP"
    [ "$status" -eq 1 ]
    [ "$output" = "FAIL: UDP ASSOCIATE refused: REP 1" ]
    wait_for_line "$T/pw.log" 'socks5 UDP .*result=upstream-' 10
    # the upstream's control connection closing ends the association (and the client's)
    local UP3_PID
    proxy_at "$T/up3.log" --grace 0
    UP3_PID=$BG_PID
    proxy_at "$T/p3.log" --upstream "socks5://127.0.0.1:$AT"
    start_bg "$T/hold.log" "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" --hold "$AT" "$EP"
    wait_for_line "$T/hold.log" '^held$' 10
    kill -TERM "$UP3_PID"
    wait_for_line "$T/hold.log" '^closed$' 10
    wait_for_line "$T/p3.log" 'socks5 UDP 127\.0\.0\.1:[0-9]+ up=4 down=4 .*result=upstream-closed' 10
    # danted: its own relay carries the datagrams (its log counts them)
    command -v danted >/dev/null || PATH="$PATH:/usr/sbin"
    command -v danted >/dev/null || skip "danted is not installed (apt-get install dante-server)"
    D="$("$BATS_TEST_DIRNAME/../proxy/peers.sh" start danted-udp "$T/dante")"
    proxy_at "$T/pd.log" --upstream "socks5://127.0.0.1:$D"
    run timeout 30 "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" "$AT" "$EP"
    local rc=$status out=$output
    "$BATS_TEST_DIRNAME/../proxy/peers.sh" stop "$T/dante"
    echo "$out"
    [ "$rc" -eq 0 ]
    [ "$out" = ok ]
    wait_for_line "$T/pd.log" 'socks5 UDP 127\.0\.0\.1:[0-9]+ up=40971 down=40971 .*result=ok' 10
    grep -E 'pass\(2\): udp/udpassociate \]: 4[0-9]+/4 -> .* -> 4[0-9]+/4' "$T/dante/danted.log"
}

@test "UDP ASSOCIATE: 10,000 datagrams make no allocation in the proxy, chained (names rewritten to addresses for a socks5:// upstream) and direct" {
    command -v cc >/dev/null || skip "no C compiler for the allocation counter"
    grep -qaE "__asan_init|__tsan_init" "$PROXY" && skip "a sanitizer build: its allocator cannot be counted this way"
    local ECHO PY EP UP
    ECHO="$(vega_bin vega-echo)"
    PY="$(command -p -v python3)"
    cc -shared -fPIC -O2 -o "$T/malloc-count.so" "$BATS_TEST_DIRNAME/malloc-count.c" -lpthread
    start_bg "$T/echo.log" "$ECHO" -u -l 127.0.0.1:0
    wait_for_line "$T/echo.log" 'listening on udp 127\.0\.0\.1:[0-9]+' 10
    EP="$(sed -n 's/.*listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/echo.log" | head -1)"
    mkfifo "$T/req" "$T/resp" "$T/req2" "$T/resp2"
    # the upstream, counted too: its associations are direct ones
    start_bg "$T/up.log" env LD_PRELOAD="$T/malloc-count.so" MALLOC_COUNT_REQ="$T/req2" \
        MALLOC_COUNT_RESP="$T/resp2" "$PROXY" -l 127.0.0.1:0
    wait_for_line "$T/up.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    UP="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/up.log" | head -1)"
    # the counted proxy: socks5:// resolves "localhost" here (the hosts file) and rewrites each
    # such datagram's header to the address in front of the payload
    start_bg "$T/p1.log" env LD_PRELOAD="$T/malloc-count.so" MALLOC_COUNT_REQ="$T/req" \
        MALLOC_COUNT_RESP="$T/resp" "$PROXY" -l 127.0.0.1:0 --upstream "socks5://127.0.0.1:$UP"
    wait_for_line "$T/p1.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    AT="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/p1.log" | head -1)"
    run timeout 120 "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" --allocs "$AT" "$EP" 10000 "$T/req" "$T/resp"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "allocs 0" ]
    wait_for_line "$T/p1.log" 'socks5 UDP 127\.0\.0\.1:[0-9]+ up=[0-9]+ down=[0-9]+ .*result=ok' 10
    [ -z "$(grep 'datagrams dropped' "$T/p1.log")" ]
    # a direct association (the upstream's own relay): no allocation either
    run timeout 120 "$PY" "$BATS_TEST_DIRNAME/socks5-udp.py" --allocs "$UP" "$EP" 10000 "$T/req2" "$T/resp2"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "allocs 0" ]
}

@test "UDP ASSOCIATE through an http:// or https:// upstream is refused with REP 7 (command not supported), and the log says why" {
    local PY
    PY="$(command -p -v python3)"
    proxy
    local UP=$PX scheme
    for scheme in http https; do
        proxy_at "$T/$scheme.log" -v --upstream "$scheme://127.0.0.1:$UP"
        run "$PY" -c 'import socket,sys; c=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); c.sendall(b"\x05\x01\x00"); assert c.recv(2)==b"\x05\x00"; c.sendall(b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00"); r=c.recv(10); print(r[0], r[1])' "$AT"
        [ "$output" = "5 7" ]
        wait_for_line "$T/$scheme.log" "udp associate refused \(REP 7\): the $scheme:// upstream cannot carry datagrams" 10
        wait_for_line "$T/$scheme.log" 'socks5 UDP - up=0 down=0 .*result=unsupported' 10
    done
    # BIND through http:// says why too (its REP 7 is checked above)
    run "$PY" -c 'import socket,sys; c=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); c.sendall(b"\x05\x01\x00"); assert c.recv(2)==b"\x05\x00"; c.sendall(b"\x05\x02\x00\x01\x7f\x00\x00\x02\x00\x00"); print(c.recv(2)[1])' "$AT"
    [ "$output" = 7 ]
    wait_for_line "$T/https.log" 'bind for 127\.0\.0\.2:0 refused \(REP 7\): the https:// upstream cannot accept a connection for it' 10
}

@test "BIND through a SOCKS upstream (vega_proxy_bind): chained to a second vega-proxy (socks5, socks5h, socks4, socks4a) and to danted" {
    local PY UP k m
    PY="$(command -p -v python3)"
    proxy_at "$T/up.log" -v
    UP=$AT
    for k in socks5 socks5h socks4 socks4a; do
        proxy_at "$T/p-$k.log" --upstream "$k://127.0.0.1:$UP"
        for m in socks5 socks4; do
            # the upstream listens and judges (its log closes the stranger); both replies cross
            run timeout 20 "$PY" "$BATS_TEST_DIRNAME/socks-bind.py" "$m" "$AT"
            echo "$k $m: $output"
            [ "$status" -eq 0 ]
            [ "$output" = ok ]
        done
        wait_for_line "$T/p-$k.log" 'socks5 BIND 127\.0\.0\.2:[0-9]+ up=12 down=9 .*result=ok' 10
        wait_for_line "$T/p-$k.log" 'socks4 BIND 127\.0\.0\.2:[0-9]+ up=12 down=9 .*result=ok' 10
    done
    [ "$(grep -c 'BIND 127\.0\.0\.2:[0-9]* up=12 down=9 .*result=ok' "$T/up.log")" -eq 8 ]
    [ "$(grep -c 'bind: a connection from 127\.0\.0\.1:[0-9]*, not 127\.0\.0\.2: closed' "$T/up.log")" -eq 8 ]
    # danted as the upstream (it fails a BIND at a stranger, REP 2, where vega-proxy waits
    # past it: no stranger here)
    command -v danted >/dev/null || PATH="$PATH:/usr/sbin"
    command -v danted >/dev/null || skip "danted is not installed (apt-get install dante-server)"
    local D out rc=0
    D="$("$BATS_TEST_DIRNAME/../proxy/peers.sh" start danted-bind "$T/dante")"
    proxy_at "$T/pd.log" --upstream "socks5://127.0.0.1:$D"
    out="$(timeout 20 "$PY" "$BATS_TEST_DIRNAME/socks-bind.py" socks5 "$AT" nostranger 2>&1)" || rc=$?
    "$BATS_TEST_DIRNAME/../proxy/peers.sh" stop "$T/dante"
    echo "$out"
    [ "$rc" -eq 0 ]
    [ "$out" = ok ]
    wait_for_line "$T/pd.log" 'socks5 BIND 127\.0\.0\.2:[0-9]+ up=12 down=9 .*result=ok' 10
    grep -E 'pass\([0-9]+\): tcp/bindreply \]: 12 -> 127\.0\.0\.2' "$T/dante/danted.log"
}
