#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-curl's everyday curl flags (issue 18): -r, -u, --oauth2-bearer, --json, -4/-6, -C, -z,
# -R, --output-dir, --create-dirs, --retry and its companions, --fail-early, --limit-rate, the
# TCP flags, %{size_download} with --compressed, cookies (-b, -c, -j) and -J. Each is run with the real curl too, on the
# same server, where curl is installed: what the server got, the files and the exit codes must
# be the same. Servers: vega-serve (files, ranges, conditions, compression) and
# vega-curl-flags.py (echoes request heads, redirects, 503 then 200, sets cookies and echoes the
# Cookie fields, Content-Disposition). The cookie files are compared whole, comment lines too
# (vega-curl writes curl's three), except a Max-Age expiry, which depends on the second each
# tool ran in.

load helpers

# Both servers run for the whole file (each test starting its own cost a second of start-up).
setup_file() {
    local w="$BATS_FILE_TMPDIR/www" d="$BATS_FILE_TMPDIR"
    mkdir -p "$w"
    printf '0123456789abcdefghij' >"$w/f.txt"
    touch -d '2020-01-02 03:04:05 UTC' "$w/f.txt"
    seq -f 'line %g of some very repetitive text' 1 2000 >"$w/text.txt"
    # disown: their end in teardown_file is not a job's end to report
    "$(vega_bin vega-serve)" -p 0 --no-http3 --ws-echo /ws "$w" >"$d/serve.log" 2>&1 3>&- \
        </dev/null &
    echo "$!" >"$d/pids"
    disown
    ABSTRACT="vega-curl-flags-$$-$RANDOM"
    echo "$ABSTRACT" >"$d/abstract"
    command -p python3 -u "$BATS_TEST_DIRNAME/vega-curl-flags.py" "$d/echo.sock" "@$ABSTRACT" \
        >"$d/echo.log" 2>&1 3>&- \
        </dev/null &
    echo "$!" >>"$d/pids"
    disown
    wait_for_line "$d/serve.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    wait_for_line "$d/echo.log" 'port [0-9]+' 10
    SPORT="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$d/serve.log" | head -1)"
    EPORT="$(sed -n 's/^port \([0-9]*\)/\1/p' "$d/echo.log" | head -1)"
    wait_for_line "$d/echo.log" '^dns port [0-9]+' 10
    DPORT="$(sed -n 's/^dns port \([0-9]*\)/\1/p' "$d/echo.log" | head -1)"
    export SPORT EPORT DPORT
}

teardown_file() {
    local pid
    for pid in $(cat "$BATS_FILE_TMPDIR/pids"); do
        kill -KILL "$pid" 2>/dev/null || true
    done
}

setup() {
    CURL="$(vega_bin vega-curl)"
    T="$BATS_TEST_TMPDIR"
    W="$BATS_FILE_TMPDIR/www"
    cd "$T"
}

vc() {
    timeout 30 "$CURL" "$@"
}

# both NAME ARGS...: runs vega-curl, then curl when installed, with ARGS; each one's stdout in
# $T/NAME.vega / $T/NAME.curl and its exit code after it as "rc=N".
both() {
    local name="$1" rc
    shift
    vc "$@" >"$T/$name.vega" 2>/dev/null && rc=0 || rc=$?
    echo "rc=$rc" >>"$T/$name.vega"
    if command -v curl >/dev/null; then
        timeout 30 curl "$@" >"$T/$name.curl" 2>/dev/null && rc=0 || rc=$?
        echo "rc=$rc" >>"$T/$name.curl"
    else
        cp "$T/$name.vega" "$T/$name.curl"
    fi
}

# The request head lines that both send, without the User-Agent (the tools' names differ).
heads() {
    grep -v '^User-Agent:' "$1"
}

@test "-r, -u, --json and --oauth2-bearer send what curl sends" {
    local u="http://127.0.0.1:$EPORT/echo"
    vc -s -r 0-9 -u al:pw "$u" >"$T/a"
    grep -qx 'Range: bytes=0-9' "$T/a"
    grep -qx 'Authorization: Basic YWw6cHc=' "$T/a"
    vc -s -r -500 --oauth2-bearer tok "$u" >"$T/b"
    grep -qx 'Range: bytes=-500' "$T/b"
    grep -qx 'Authorization: Bearer tok' "$T/b"
    # --json twice: the pieces joined as they are, POST, the JSON Content-Type and Accept
    both json -s --json '{"a":1}' --json '[2]' "$u"
    grep -qx 'POST /echo' "$T/json.vega"
    grep -qx 'Content-Type: application/json' "$T/json.vega"
    grep -qx 'Accept: application/json' "$T/json.vega"
    grep -q '^{"a":1}\[2\]rc=0$' "$T/json.vega"
    diff <(heads "$T/json.curl" | sort) <(heads "$T/json.vega" | sort)
    # -H replaces what --json would add; @file is read as it is
    printf '{"b":\n2}' >"$T/body.json"
    vc -s -H 'Accept: text/plain' --json @"$T/body.json" "$u" >"$T/c"
    grep -qx 'Accept: text/plain' "$T/c"
    [ "$(tail -n 2 "$T/c")" = $'{"b":\n2}' ]
    run vc -r 'a-b' "$u"
    [ "$status" -eq 2 ] || echo "$output" | grep -q 'Invalid character'
    # with a body the range is its Content-Range; -C N -T sends the file from byte N
    both up -s -T "$W/f.txt" -C 4 "$u"
    grep -qx 'Content-Range: bytes 4-19/20' "$T/up.vega"
    grep -q '^456789abcdefghijrc=0$' "$T/up.vega"
    diff <(heads "$T/up.curl" | grep -v '^Expect:\|^Accept:' | sort) \
        <(heads "$T/up.vega" | grep -v '^Expect:\|^Accept:' | sort)
    both postr -s -d hello -r 0-3 "$u"
    grep -qx 'Content-Range: bytes 0-3/5' "$T/postr.vega"
    ! grep -q '^Range:' "$T/postr.vega"
    run vc -sS -T "$W/f.txt" -C 20 "$u"
    [ "$status" -eq 18 ]
}

@test "-u goes with a WebSocket upgrade too" {
    echo hi | vc -v -u a:b "ws://127.0.0.1:$SPORT/ws" >"$T/out" 2>"$T/err"
    grep -qx 'hi' "$T/out"
    grep -q '^> Authorization: Basic YTpi' "$T/err"
    # and cookies: the jar's for that host and path (ws: as http:), then -b's string
    printf '127.0.0.1\tFALSE\t/ws\tFALSE\t0\tj\t1\n127.0.0.1\tFALSE\t/x\tFALSE\t0\tno\t1\n' \
        >"$T/ws.jar"
    echo hi | vc -v -b "$T/ws.jar" -b 's=2' "ws://127.0.0.1:$SPORT/ws" >"$T/out" 2>"$T/err"
    grep -qx 'hi' "$T/out"
    grep -q '^> Cookie: j=1; s=2' "$T/err"
}

@test "-u without a password: read from stdin when there is no terminal, as curl" {
    command -v setsid >/dev/null || skip "setsid is not installed"
    local u="http://127.0.0.1:$EPORT/echo"
    # setsid: no controlling terminal, so /dev/tty cannot be opened
    echo secret | setsid -w "$CURL" -s -u bob "$u" >"$T/a" 2>"$T/a.err"
    grep -qx "Authorization: Basic $(printf 'bob:secret' | base64)" "$T/a"
    grep -q "Enter host password for user 'bob':" "$T/a.err"
    setsid -w "$CURL" -s -u bob "$u" </dev/null >"$T/b" 2>/dev/null
    grep -qx "Authorization: Basic $(printf 'bob:' | base64)" "$T/b"
    vc -s -u 'bob:' "$u" </dev/null >"$T/c"
    cmp "$T/b" "$T/c"
}

@test "-u credentials do not follow a redirect to another host unless --location-trusted" {
    # 127.0.0.1 redirects to localhost: another origin
    local u="http://127.0.0.1:$EPORT/away?to=http://localhost:$EPORT/echo"
    both plain -s -L -u al:pw "$u"
    grep -qx 'GET /echo' "$T/plain.vega"
    ! grep -qi '^Authorization' "$T/plain.vega"
    ! grep -qi '^Authorization' "$T/plain.curl"
    vc -s -L --oauth2-bearer tok "$u" >"$T/bearer"
    ! grep -qi '^Authorization' "$T/bearer"
    both trusted -s --location-trusted -u al:pw "$u"
    grep -qx 'Authorization: Basic YWw6cHc=' "$T/trusted.vega"
    grep -qx 'Authorization: Basic YWw6cHc=' "$T/trusted.curl"
    # the same origin keeps them
    vc -s -L -u al:pw "http://127.0.0.1:$EPORT/away?to=/echo" >"$T/same"
    grep -qx 'Authorization: Basic YWw6cHc=' "$T/same"
}

@test "-4 and -6 restrict the address family as curl (exit 7 for a literal, 6 for --resolve)" {
    run vc -s -4 "http://127.0.0.1:$EPORT/echo"
    [ "$status" -eq 0 ]
    both v6 -s -6 "http://127.0.0.1:$EPORT/echo"
    [ "$(tail -n1 "$T/v6.vega")" = rc=7 ]
    [ "$(tail -n1 "$T/v6.curl")" = rc=7 ]
    both res -s -6 --resolve "foo:$EPORT:127.0.0.1" "http://foo:$EPORT/echo"
    [ "$(tail -n1 "$T/res.vega")" = rc=6 ]
    [ "$(tail -n1 "$T/res.curl")" = rc=6 ]
}

@test "-C, -z, -R, --output-dir and --create-dirs behave as curl's on the same files" {
    local u="http://127.0.0.1:$SPORT/f.txt" tool
    for tool in vega curl; do
        if [ "$tool" = curl ]; then
            command -v curl >/dev/null || continue
            run_tool() { timeout 30 curl "$@"; }
        else
            run_tool() { vc "$@"; }
        fi
        mkdir "$T/$tool" && cd "$T/$tool"
        # -C -: the rest of a partial file (206, appended); a complete one gets 416, kept
        printf '0123' >part.txt
        run_tool -s -C - -o part.txt -w '%{http_code}\n' "$u" >>out
        cp "$W/f.txt" full.txt
        run_tool -s -C - -o full.txt -w '%{http_code}\n' "$u" >>out
        run_tool -s -C 5 -o /dev/null "http://127.0.0.1:$SPORT/nope" || echo "rc=$?" >>out
        # -z: not modified since (304, no file), an If-Unmodified-Since that fails
        run_tool -s -z 'Sat, 01 Jan 2022 00:00:00 GMT' -o z1.txt -w '%{http_code}\n' "$u" >>out
        run_tool -s -z '-Sat, 01 Jan 2022 00:00:00 GMT' -o z2.txt -w '%{http_code}\n' "$u" >>out
        touch -d '2019-01-01 UTC' old && run_tool -s -z old -o z3.txt "$u"
        # -R, --output-dir, --create-dirs
        run_tool -s -R --create-dirs --output-dir od -o a/b/c.txt -w '%{filename_effective}\n' \
            "$u" >>out
        stat -c %Y od/a/b/c.txt >>out
        run_tool -s --output-dir nodir -O "$u" || echo "rc=$?" >>out
        ls -R . >>out
        cat part.txt full.txt >>out
        cd "$T"
    done
    cat "$T/vega/out"
    grep -qx 'rc=33' "$T/vega/out"
    grep -qx 304 "$T/vega/out"
    grep -qx "$(stat -c %Y "$W/f.txt")" "$T/vega/out"
    [ ! -e "$T/vega/z1.txt" ]
    cmp "$W/f.txt" "$T/vega/z3.txt"
    cmp "$W/f.txt" "$T/vega/part.txt"
    if [ -d "$T/curl" ]; then
        diff "$T/curl/out" "$T/vega/out"
    fi
}

@test "-z against a server that ignores it: curl's own check keeps the old document out" {
    both lm -s -z 'Sat, 01 Jan 2022 00:00:00 GMT' -w '%{http_code}' "http://127.0.0.1:$EPORT/lm"
    [ "$(cat "$T/lm.vega")" = "304rc=0" ]
    diff "$T/lm.curl" "$T/lm.vega"
    # the document's own time: not modified since, and not unmodified since either (curl's >=)
    local d='Thu, 02 Jan 2020 03:04:05 GMT' w='%{http_code} '
    both edge -s -o /dev/null -w "$w" -z "$d" "http://127.0.0.1:$EPORT/lm"
    vc -s -o /dev/null -w "$w" -z "-$d" "http://127.0.0.1:$EPORT/lm" >>"$T/edge.vega"
    [ "$(cat "$T/edge.vega")" = $'304 rc=0\n304 ' ]
    [ "$(cat "$T/edge.curl")" = '304 rc=0' ]
    # -z =DATE sends it as Last-Modified, as curl does
    vc -s -z "=$d" "http://127.0.0.1:$EPORT/echo" | grep -qx "Last-Modified: $d"
}

@test "--retry: 503 is tried again, 404 is not, a refused connect only with --retry-connrefused" {
    local n=$RANDOM
    # one retry: curl's first backoff is 1 s (--retry-delay 0 means the default, as curl's)
    run vc -sS --retry 1 -o "$T/o" -w '%{http_code}' "http://127.0.0.1:$EPORT/flaky/1/$n"
    [ "$status" -eq 0 ]
    [ "$output" = 200 ]
    [ "$(cat "$T/o")" = ok ]
    # not transient: one request only
    run vc -s --retry 3 -w '%{http_code}' "http://127.0.0.1:$EPORT/nope"
    [ "$output" = $'no\n404' ]
    # a refused connection is not retried without --retry-connrefused
    run vc --retry 2 "http://127.0.0.1:1/"
    [ "$status" -eq 7 ]
    ! echo "$output" | grep -q 'Will retry'
    # Retry-After: 100 is honoured, and more than --retry-max-time allows: no retry at all;
    # -f's 22 is the exit code
    both later -f --retry 3 --retry-max-time 10 "http://127.0.0.1:$EPORT/later"
    [ "$(cat "$T/later.vega")" = rc=22 ]
    diff "$T/later.curl" "$T/later.vega"
    run vc -f --retry 3 --retry-max-time 10 "http://127.0.0.1:$EPORT/later"
    echo "$output" | grep -q 'The Retry-After: time would make this command line exceed'
}

@test "--retry-connrefused and --retry-all-errors retry what curl retries" {
    run vc -S --retry 1 --retry-connrefused "http://127.0.0.1:1/"
    [ "$status" -eq 7 ]
    echo "$output" | grep -q 'Problem : connection refused. Will retry in 1 seconds. 1 retries left.'
    [ "$(echo "$output" | grep -c '(7)')" -eq 2 ]
    # a 404 with -f is not transient, but --retry-all-errors retries anything
    run vc -S -f --retry 1 --retry-all-errors "http://127.0.0.1:$EPORT/nope"
    [ "$status" -eq 22 ]
    echo "$output" | grep -q 'Problem (retrying all errors). Will retry in 1 seconds. 1 retries left.'
    [ "$(echo "$output" | grep -c '(22)')" -eq 2 ]
}

@test "--fail-early stops at the first failed URL; --limit-rate, TCP flags keep the body intact" {
    local u="http://127.0.0.1:$SPORT"
    run vc -s -f --fail-early -o /dev/null -o "$T/x" "$u/nope" "$u/f.txt"
    [ "$status" -eq 22 ]
    [ ! -e "$T/x" ]
    run vc -s -f -o /dev/null -o "$T/x" "$u/nope" "$u/f.txt"
    [ "$status" -eq 0 ]
    vc -s --limit-rate 1M --no-keepalive --tcp-nodelay -o "$T/t" "$u/text.txt"
    cmp "$W/text.txt" "$T/t"
    vc -s --limit-rate 10M --keepalive-time 5 --no-tcp-nodelay -o "$T/t2" "$u/text.txt"
    cmp "$W/text.txt" "$T/t2"
    # an upload is paced too (read by the tool, not by sendfile): the echo server returns it
    vc -s --limit-rate 10M -T "$W/text.txt" "http://127.0.0.1:$EPORT/echo" >"$T/up"
    cmp "$W/text.txt" <(tail -c "$(stat -c %s "$W/text.txt")" "$T/up")
    run vc --limit-rate fast "$u/f.txt"
    [ "$status" -eq 2 ]
}

@test "--compressed: %{size_download} is the bytes on the wire, as curl's" {
    local w='%{size_download} %{http_code}\n' u="http://127.0.0.1:$SPORT/text.txt"
    both gz -s --compressed -o /dev/null -w "$w" "$u"
    both gzonly -s --compressed -H 'Accept-Encoding: gzip' -o /dev/null -w "$w" "$u"
    both plain -s -o /dev/null -w "$w" "$u"
    [ "$(cut -d' ' -f1 <"$T/plain.vega" | head -1)" -eq "$(stat -c %s "$W/text.txt")" ]
    [ "$(cut -d' ' -f1 <"$T/gz.vega" | head -1)" -lt "$(stat -c %s "$W/text.txt")" ]
    diff "$T/gz.curl" "$T/gz.vega"
    diff "$T/gzonly.curl" "$T/gzonly.vega"
    diff "$T/plain.curl" "$T/plain.vega"
}

# ---- cookies (-b, -c, -j) and -J ----------------------------------------------------------------

# bothjar NAME ARGS...: both, with each JAR in ARGS standing for that tool's own $T/NAME.jar.vega
# or $T/NAME.jar.curl (a missing curl: the vega jar is copied, as both copies the output).
bothjar() {
    local name="$1" rc a
    shift
    local va=() ca=()
    for a in "$@"; do
        va+=("${a//JAR/$T/$name.jar.vega}")
        ca+=("${a//JAR/$T/$name.jar.curl}")
    done
    vc "${va[@]}" >"$T/$name.vega" 2>/dev/null && rc=0 || rc=$?
    echo "rc=$rc" >>"$T/$name.vega"
    if command -v curl >/dev/null; then
        timeout 30 curl "${ca[@]}" >"$T/$name.curl" 2>/dev/null && rc=0 || rc=$?
        echo "rc=$rc" >>"$T/$name.curl"
    else
        cp "$T/$name.vega" "$T/$name.curl"
        [ ! -e "$T/$name.jar.vega" ] || cp "$T/$name.jar.vega" "$T/$name.jar.curl"
    fi
}

# A set= parameter for /c/: the Set-Cookie value (ASCII) percent-encoded, in the shell (a
# Python per call cost a second over a test).
sc() {
    local s="$1" o="" c i
    for ((i = 0; i < ${#s}; i++)); do
        c="${s:i:1}"
        case "$c" in
        [a-zA-Z0-9._~-]) o+="$c" ;;
        *)
            printf -v c '%%%02X' "'$c"
            o+="$c"
            ;;
        esac
    done
    printf 'set=%s' "$o"
}

# --resolve for the names the cookie tests use (domain matching needs names, not 127.0.0.1)
names() {
    local n
    for n in a.ex.com b.ex.com ex.com other.org; do
        printf -- '--resolve\n%s:%s:127.0.0.1\n' "$n" "$EPORT"
    done
}

@test "-c writes curl's cookie file: Domain, Path, Secure, Expires, Max-Age, HttpOnly, prefixes" {
    mapfile -t R < <(names)
    local far='Expires=Wed, 09 Jun 2100 10:18:14 GMT' past='Expires=Wed, 09 Jun 2001 10:18:14 GMT'
    local q
    q="$(sc 'host=1')&$(sc 'dom=2; Domain=ex.com')&$(sc 'dot=3; domain=.A.EX.com; path=/c/')"
    q+="&$(sc 'tld=4; Domain=com')&$(sc 'foreign=5; Domain=other.org')&$(sc 'sec=6; Secure')"
    q+="&$(sc "far=7; $far; HttpOnly")&$(sc "both=8; $far; Max-Age=0")&$(sc "old=9; $past")"
    q+="&$(sc 'bad=10; Max-Age=abc')&$(sc 'q=" quoted "; Path=/c/x')&$(sc 'novalue')&$(sc '=v')"
    bothjar set -s "${R[@]}" -c JAR "http://a.ex.com:$EPORT/c/dir/page?$q"
    grep -qx 'no cookie' "$T/set.vega"
    # host-only without Domain, the request's directory as Path, expiry 0 for a session cookie
    grep -qxF "$(printf 'a.ex.com\tFALSE\t/c/dir/\tFALSE\t0\thost\t1')" "$T/set.jar.vega"
    grep -qxF "$(printf '.ex.com\tTRUE\t/c/dir/\tFALSE\t0\tdom\t2')" "$T/set.jar.vega"
    grep -qxF "$(printf '.A.EX.com\tTRUE\t/c/\tFALSE\t0\tdot\t3')" "$T/set.jar.vega"
    grep -qxF "$(printf '#HttpOnly_a.ex.com\tFALSE\t/c/dir/\tFALSE\t4116219494\tfar\t7')" \
        "$T/set.jar.vega"
    # refused: a bare TLD, a domain the host is not in, Secure over http, expired, Max-Age=0
    # winning over a later Expires, an invalid Max-Age (curl expires it), no '=' or no name
    ! grep -qP '\t(tld|foreign|sec|both|old|bad|novalue)\t' "$T/set.jar.vega"
    ! grep -qP '\t\tv$' "$T/set.jar.vega"
    grep -qx '# Netscape HTTP Cookie File' "$T/set.jar.vega"
    diff "$T/set.curl" "$T/set.vega"
    diff "$T/set.jar.curl" "$T/set.jar.vega" # the same lines, comments and order
    # localhost counts as secure (curl's rule): Secure and the __Host-/__Secure- prefixes
    q="$(sc 's=1; Secure')&$(sc '__Host-ok=1; Secure; Path=/')&$(sc '__Host-no=1; Secure; Path=/c')"
    q+="&$(sc '__Secure-no=1')&$(sc '__Secure-ok=1; Secure')&$(sc 'ma=1; Max-Age=1000')"
    bothjar loc -s -c JAR "http://localhost:$EPORT/c/?$q"
    grep -qP '^localhost\tFALSE\t/c/\tTRUE\t0\ts\t1$' "$T/loc.jar.vega"
    grep -qP '\t__Host-ok\t' "$T/loc.jar.vega"
    grep -qP '\t__Secure-ok\t' "$T/loc.jar.vega"
    ! grep -qP '\t__(Host|Secure)-no\t' "$T/loc.jar.vega"
    # Max-Age is from now: only the expiry differs by the seconds between the two runs
    local exp now
    exp="$(awk -F'\t' '$6 == "ma" {print $5}' "$T/loc.jar.vega")"
    now="$(date +%s)"
    [ "$exp" -ge $((now + 990)) ]
    [ "$exp" -le $((now + 1000)) ]
    diff <(awk -F'\t' -v OFS='\t' '$6 == "ma" {$5 = "N"} 1' "$T/loc.jar.curl") \
        <(awk -F'\t' -v OFS='\t' '$6 == "ma" {$5 = "N"} 1' "$T/loc.jar.vega")
}

@test "-b FILE sends cookies by domain, path and Secure, and never to another host on -L" {
    mapfile -t R < <(names)
    {
        printf '.ex.com\tTRUE\t/\tFALSE\t0\tdom\t1\n'
        printf 'a.ex.com\tFALSE\t/c/\tFALSE\t4116219494\thost\t2\n'
        printf '#HttpOnly_a.ex.com\tFALSE\t/c/deep/\tFALSE\t0\tdeep\t3\n'
        printf 'a.ex.com\tFALSE\t/\tTRUE\t0\tsec\t4\n'
        printf 'a.ex.com\tFALSE\t/\tFALSE\t1000000000\texpired\t5\n'
        printf 'localhost\tFALSE\t/\tTRUE\t0\tlsec\t6\n'
    } >"$T/in.jar"
    bothjar a -s "${R[@]}" -b "$T/in.jar" "http://a.ex.com:$EPORT/c/deep/x"
    grep -qx 'cookie: deep=3; host=2; dom=1' "$T/a.vega" # the longest path first, as curl
    diff "$T/a.curl" "$T/a.vega"
    bothjar b -s "${R[@]}" -b "$T/in.jar" "http://b.ex.com:$EPORT/c/deepx"
    grep -qx 'cookie: dom=1' "$T/b.vega"
    diff "$T/b.curl" "$T/b.vega"
    bothjar o -s "${R[@]}" -b "$T/in.jar" "http://other.org:$EPORT/c/"
    grep -qx 'no cookie' "$T/o.vega"
    diff "$T/o.curl" "$T/o.vega"
    bothjar l -s -b "$T/in.jar" "http://localhost:$EPORT/c/"
    grep -qx 'cookie: lsec=6' "$T/l.vega"
    diff "$T/l.curl" "$T/l.vega"
    # -L from a.ex.com to other.org: the jar's cookies stay home; -b's string goes along
    # (curl sends it to every host); -H Cookie is dropped there (another origin), and as it
    # was given, -b's string is not sent either (curl's rule)
    local to="http%3A%2F%2Fother.org%3A$EPORT%2Fc%2F"
    bothjar r -s -L "${R[@]}" -b "$T/in.jar" "http://a.ex.com:$EPORT/c/deep/?to=$to"
    grep -qx 'no cookie' "$T/r.vega"
    diff "$T/r.curl" "$T/r.vega"
    bothjar rs -s -L "${R[@]}" -b 'str=1; s2=2' -b 's3=3' "http://a.ex.com:$EPORT/c/?to=$to"
    grep -qx 'cookie: str=1; s2=2;s3=3' "$T/rs.vega"
    diff "$T/rs.curl" "$T/rs.vega"
    bothjar rh -s -L "${R[@]}" -b 'str=1' -H 'Cookie: mine=1' "http://a.ex.com:$EPORT/c/?to=$to"
    grep -qx 'no cookie' "$T/rh.vega"
    diff "$T/rh.curl" "$T/rh.vega"
    # over http, no cookie may shadow a Secure one of the same name and domain (curl's rule:
    # the old path's first segment starting the new path)
    printf 'a.ex.com\tFALSE\t/login\tTRUE\t0\ts\told\n' >"$T/sec.jar"
    for p in %2Floginx %2Flogin%2Fen %2Flogi; do
        bothjar sec -s "${R[@]}" -b "$T/sec.jar" -c JAR "http://a.ex.com:$EPORT/c/?set=s%3Dn%3B%20path%3D$p"
        diff "$T/sec.jar.curl" "$T/sec.jar.vega"
        cp "$T/sec.jar.vega" "$T/sec.$p"
    done
    ! grep -qP '\t/login(x|/en)\t' "$T"/sec.%2Flogin*
    grep -qP '^a.ex.com\tFALSE\t/logi\tFALSE\t0\ts\tn$' "$T/sec.%2Flogi"
    # the jar's field comes first, -H's after it; -b's string is left out when -H gives Cookie
    bothjar h -s "${R[@]}" -b "$T/in.jar" -b 'str=1' -H 'Cookie: mine=1' \
        "http://a.ex.com:$EPORT/c/"
    [ "$(head -2 "$T/h.vega")" = $'cookie: host=2; dom=1\ncookie: mine=1' ]
    diff "$T/h.curl" "$T/h.vega"
}

@test "cookies of a redirect go with the next hop; -j; replacing and deleting" {
    local next="%2Fc%2Fnext"
    # -b with a file that is not there turns the engine on, as in curl
    bothjar hop -s -L -b "$T/none" -c JAR \
        "http://127.0.0.1:$EPORT/c/?$(sc 'r=1; Path=/')&$(sc 'n=2; Path=/nowhere')&to=$next"
    grep -qx 'cookie: r=1' "$T/hop.vega"
    diff "$T/hop.curl" "$T/hop.vega"
    diff "$T/hop.jar.curl" "$T/hop.jar.vega"
    # -v tells what was kept, in curl's words (after the response's head, where curl writes
    # them between its lines)
    vc -s -v -c "$T/v.jar" "http://127.0.0.1:$EPORT/c/?$(sc 'r=1; Path=/')&$(sc 'r=2; Path=/')" \
        2>"$T/v.err" >/dev/null
    grep -qx '\* Added cookie r="1" for domain 127.0.0.1, path /, expire 0' "$T/v.err"
    grep -qx '\* Replaced cookie r="2" for domain 127.0.0.1, path /, expire 0' "$T/v.err"
    # without -b FILE or -c the engine is off: nothing is kept, nothing sent
    bothjar off -s -L "http://127.0.0.1:$EPORT/c/?$(sc 'r=1; Path=/')&to=$next"
    grep -qx 'no cookie' "$T/off.vega"
    {
        printf '127.0.0.1\tFALSE\t/\tFALSE\t0\tsess\t1\n'
        printf '127.0.0.1\tFALSE\t/\tFALSE\t4116219494\tkeep\t2\n'
        printf '127.0.0.1\tFALSE\t/\tFALSE\t0\tgone\t3\n'
    } >"$T/in.jar"
    bothjar j -s -j -b "$T/in.jar" -c JAR "http://127.0.0.1:$EPORT/c/"
    grep -qx 'cookie: keep=2' "$T/j.vega"
    diff "$T/j.curl" "$T/j.vega"
    diff "$T/j.jar.curl" "$T/j.jar.vega"
    # curl reads Set-Cookie lines in a cookie file too (with a Domain: the cookie's host)
    printf 'Set-Cookie: hdr=1; Domain=127.0.0.1; Path=/c\n' >"$T/h.jar"
    bothjar hl -s -b "$T/h.jar" "http://127.0.0.1:$EPORT/c/"
    grep -qx 'cookie: hdr=1' "$T/hl.vega"
    diff "$T/hl.curl" "$T/hl.vega"
    # old and odd file lines as curl reads them: no path field ("/"), no value, a path
    # without '/' (sent as "/", written back as it was), #HttpOnly_ kept
    {
        printf '127.0.0.1\tFALSE\tFALSE\t0\tnp\t1\n127.0.0.1\tFALSE\t/\tFALSE\t0\tnov\n'
        printf '#HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t0\thttp\t1\n'
        printf '127.0.0.1\tFALSE\tc\tFALSE\t0\tbadpath\t1\n'
    } >"$T/old.jar"
    bothjar old -s -b "$T/old.jar" -c JAR "http://127.0.0.1:$EPORT/c/"
    grep -qx 'cookie: badpath=1; http=1; nov=; np=1' "$T/old.vega"
    grep -qP '^#HttpOnly_127.0.0.1\t' "$T/old.jar.vega"
    diff "$T/old.curl" "$T/old.vega"
    diff "$T/old.jar.curl" "$T/old.jar.vega"
    # one without Domain is refused (curl 7.88 keeps it with no domain and sends it to IP
    # hosts: a cookie bound to no origin, which vega-curl does not keep)
    printf 'Set-Cookie: nodomain=1\n' >"$T/nd.jar"
    vc -s -b "$T/nd.jar" "http://127.0.0.1:$EPORT/c/" >"$T/nd.out"
    grep -qx 'no cookie' "$T/nd.out"
    # a new value replaces (keeping its place), Max-Age=0 deletes; the newer first on a tie
    bothjar rep -s -b "$T/in.jar" -c JAR \
        "http://127.0.0.1:$EPORT/c/?$(sc 'sess=new; Path=/')&$(sc 'gone=; Max-Age=0; Path=/')"
    grep -qx 'cookie: gone=3; keep=2; sess=1' "$T/rep.vega"
    ! grep -qP '\tgone\t' "$T/rep.jar.vega"
    grep -qP '\tsess\tnew$' "$T/rep.jar.vega"
    diff "$T/rep.curl" "$T/rep.vega"
    diff "$T/rep.jar.curl" "$T/rep.jar.vega"
}

@test "cookie bounds: 4096 bytes, 50 per response, 150 per domain, 16 MiB of file" {
    # name + value: each under 4095 bytes, 4096 together (curl's); "@N@" is N bytes of v
    bothjar big -s -c JAR "http://127.0.0.1:$EPORT/c/?set=ok%3D@4094@&set=no%3D@4095@&set=n2%3D@4094@x&set=n3%3D@4093@"
    grep -qP '\tok\tv{4094}$' "$T/big.jar.vega"
    grep -qP '\tn3\tv{4093}$' "$T/big.jar.vega"
    ! grep -qP '\t(no|n2)\t' "$T/big.jar.vega"
    diff "$T/big.jar.curl" "$T/big.jar.vega"
    # at most 50 Set-Cookie fields of one response are read (curl's MAX_SET_COOKIE_AMOUNT)
    local q="" i u=()
    for i in $(seq 1 60); do q+="set=k$i%3D1&"; done
    bothjar many -s -c JAR "http://127.0.0.1:$EPORT/c/?$q"
    [ "$(grep -c $'\tk[0-9]*\t1$' "$T/many.jar.vega")" -eq 50 ]
    diff "$T/many.jar.curl" "$T/many.jar.vega"
    # 150 cookies per domain: vega-curl's own bound (curl 7.88 has none, so no comparison)
    for i in 1 2 3 4; do
        q=""
        for j in $(seq 1 50); do q+="set=d${i}x$j%3D1&"; done
        u+=("http://127.0.0.1:$EPORT/c/?$q")
    done
    vc -s -c "$T/dom.jar" "${u[@]}" >/dev/null
    [ "$(grep -c $'\td[0-9]*x[0-9]*\t1$' "$T/dom.jar")" -eq 150 ]
    # a cookie file is read up to 16 MiB: a cookie past that is not loaded
    {
        printf '127.0.0.1\tFALSE\t/\tFALSE\t0\tfirst\t1\n'
        head -c $((17 << 20)) /dev/zero | tr '\0' '#'
        printf '\n127.0.0.1\tFALSE\t/\tFALSE\t0\tlate\t1\n'
    } >"$T/huge.jar"
    vc -s -b "$T/huge.jar" "http://127.0.0.1:$EPORT/c/" >"$T/huge.out" 2>"$T/huge.err"
    grep -qx 'cookie: first=1' "$T/huge.out"
    grep -q 'over 16777216 bytes' "$T/huge.err"
    # 3000 cookies in all (vega-curl's bound; RFC 6265 §6.1's minimum): a file of 3100
    awk 'BEGIN { for (i = 0; i < 3100; i++) printf "h%d.ex.com\tFALSE\t/\tFALSE\t0\tn\t1\n", i }' \
        >"$T/wide.jar"
    vc -s -b "$T/wide.jar" -c "$T/wide.out.jar" "http://127.0.0.1:$EPORT/c/" >/dev/null
    [ "$(grep -c $'\tn\t1$' "$T/wide.out.jar")" -eq 3000 ]
    # a Cookie field of at most 8190 bytes (curl's): the cookies past it, and -b's string,
    # are not sent
    local v
    v="$(head -c 4000 /dev/zero | tr '\0' v)"
    for i in a b c; do printf '127.0.0.1\tFALSE\t/\tFALSE\t0\t%s\t%s\n' "$i" "$v"; done >"$T/cap.jar"
    printf '127.0.0.1\tFALSE\t/\tFALSE\t0\ts\t1\n' >>"$T/cap.jar"
    bothjar cap -s -b "$T/cap.jar" -b 'x=1' "http://127.0.0.1:$EPORT/c/"
    [ "$(head -1 "$T/cap.vega" | wc -c)" -le $((8 + 8190 + 1)) ]
    grep -q '^cookie: s=1; c=v*; b=v*$' "$T/cap.vega"
    diff "$T/cap.curl" "$T/cap.vega"
    # 8190 bytes of -b strings at most
    run vc -s -b "a=$(head -c 8200 /dev/zero | tr '\0' x)" "http://127.0.0.1:$EPORT/c/"
    [ "$status" -eq 2 ]
}

@test "-J names the file by Content-Disposition, safely, as curl" {
    local u="http://127.0.0.1:$EPORT/cd?v=" tool d
    for tool in vega curl; do
        command -v curl >/dev/null || [ "$tool" = vega ] || continue
        d="$T/J.$tool"
        mkdir "$d"
        (
            cd "$d"
            run1() {
                local rc
                if [ "$tool" = vega ]; then
                    vc -s "$@" && rc=0 || rc=$?
                else
                    timeout 30 curl -s "$@" && rc=0 || rc=$?
                fi
                echo "rc=$rc"
            }
            run1 -JO "${u}attachment%3B%20filename%3D%22a.txt%22"
            run1 -JO "${u}attachment%3B%20filename%3D%22a.txt%22" # exists: 23
            run1 -JO "${u}attachment%3B%20filename%3D%22..%2F..%2Fx%2Fb.txt%22"
            run1 -JO "${u}attachment%3B%20filename%3Dc.txt%3B%20size%3D3"
            run1 -JO "${u}attachment%3B%20filename%3Dg%5Ch.txt"
            run1 -JO "${u}attachment%3B%20filename%3D%22..%22"
            run1 -JO "${u}attachment%3B%20filename%3D%22%22"
            run1 -JO "${u}inline" # no filename: -O's name from the URL ("cd")
            run1 -JO --output-dir sub --create-dirs "${u}attachment%3B%20filename%3Do.txt"
            run1 -J "${u}attachment%3B%20filename%3Dstdout.txt" # no -O: ignored
            run1 -JOi "${u}attachment%3B%20filename%3Di.txt"
            run1 -JO -C - "${u}attachment%3B%20filename%3Dc.txt"
            find . -type f | sort | while read -r f; do echo "$f: $(cat "$f")"; done
        ) >"$T/J.$tool.out" 2>/dev/null
    done
    grep -qx './a.txt: cd body' "$T/J.vega.out"
    grep -qx './b.txt: cd body' "$T/J.vega.out"
    grep -qx './h.txt: cd body' "$T/J.vega.out"
    grep -qx './sub/o.txt: cd body' "$T/J.vega.out"
    [ "$(grep -c '^rc=23$' "$T/J.vega.out")" -eq 3 ]
    [ "$(grep -c '^rc=2$' "$T/J.vega.out")" -eq 2 ]
    ! grep -q 'stdout.txt:' "$T/J.vega.out"
    [ ! -e "$T/x" ]
    if command -v curl >/dev/null; then diff "$T/J.curl.out" "$T/J.vega.out"; fi
}

@test "-F and --form-string send the parts curl sends (parsed back by the server)" {
    local u="http://127.0.0.1:$EPORT/form"
    printf 'hello\nfile\n' >"$T/a.txt"
    printf '\000\001bin' >"$T/b.bin"
    printf 'x' >"$T/noext"
    both form -s "$u" -F a=1 -F "b=@$T/a.txt" -F "c=<$T/a.txt" \
        -F "d=@$T/b.bin;type=image/x-foo;filename=x\"y.dat" -F "n=@$T/noext" \
        --form-string 'e=@lit;type=x' -F 'f="q;u\"o";type=text/plain' \
        -F 'g=v;filename=n.txt' -F 'i=  sp  '
    diff "$T/form.curl" "$T/form.vega"
    grep -qx 'type multipart/form-data' "$T/form.vega"
    grep -qx 'ends-ok True' "$T/form.vega"
    grep -qxF "part cd='form-data; name=\"b\"; filename=\"a.txt\"' ct='text/plain' data=b'hello\\nfile\\n'" "$T/form.vega"
    grep -qxF "part cd='form-data; name=\"n\"; filename=\"noext\"' ct='application/octet-stream' data=b'x'" "$T/form.vega"
    grep -qxF "part cd='form-data; name=\"c\"' ct=None data=b'hello\\nfile\\n'" "$T/form.vega"
    grep -qxF "part cd='form-data; name=\"e\"' ct=None data=b'@lit;type=x'" "$T/form.vega"
    # stdin as a file ("-", no type) and as a value; -H Content-Type keeps the boundary; -G is
    # ignored with -F
    echo abc >"$T/in"
    local f
    for f in 'a=@-' 'b=<-'; do
        vc -s "$u" -F "$f" <"$T/in" >"$T/stdin.vega"
        if command -v curl >/dev/null; then
            timeout 10 curl -s "$u" -F "$f" <"$T/in" >"$T/stdin.curl"
            diff "$T/stdin.curl" "$T/stdin.vega"
        fi
        grep -qF "data=b'abc\\n'" "$T/stdin.vega"
    done
    vc -s "$u" -F 'a=@-' <"$T/in" >"$T/stdin.vega"
    grep -qxF "part cd='form-data; name=\"a\"; filename=\"-\"' ct=None data=b'abc\\n'" "$T/stdin.vega"
    both rel -s "$u" -F a=1 -H 'Content-Type: multipart/related'
    diff "$T/rel.curl" "$T/rel.vega"
    grep -qx 'type multipart/related' "$T/rel.vega"
    grep -qx 'ends-ok True' "$T/rel.vega"
    both g -s "http://127.0.0.1:$EPORT/echo" -F a=1 -G
    diff <(heads "$T/g.curl" | grep -v '^Content-Type\|^--' | sort) \
        <(heads "$T/g.vega" | grep -v '^Content-Type\|^--' | sort)
    grep -qx 'POST /echo' "$T/g.vega"
    # a random boundary: two runs differ
    vc -s "http://127.0.0.1:$EPORT/echo" -F a=1 | grep '^Content-Type:' >"$T/ct1"
    vc -s "http://127.0.0.1:$EPORT/echo" -F a=1 | grep '^Content-Type:' >"$T/ct2"
    grep -q 'multipart/form-data; boundary=-\{24\}[0-9a-f]\{16\}' "$T/ct1"
    run diff -q "$T/ct1" "$T/ct2"
    [ "$status" -eq 1 ]
    # failures as curl's: an unreadable file 26, -d with -F 2, no '=' 2
    both miss -s "$u" -F "a=@$T/none"
    grep -qx 'rc=26' "$T/miss.vega"
    diff "$T/miss.curl" "$T/miss.vega"
    both dF -s "$u" -F a=1 -d x
    grep -qx 'rc=2' "$T/dF.vega"
    diff "$T/dF.curl" "$T/dF.vega"
    run vc -s "$u" -F noeq
    [ "$status" -eq 2 ]
    # at most 1000 parts
    local args=()
    for i in $(seq 1001); do args+=(-F a=1); done
    run vc -s "$u" "${args[@]}"
    [ "$status" -eq 2 ]
    echo "$output" | grep -q 'too many -F parts'
    run vc -s -o /dev/null -w '%{http_code}' "$u" "${args[@]:2}"
    [ "$output" = 200 ]
}

@test "-n, --netrc-file, --netrc-optional: curl's .netrc rules, credentials only for their host" {
    local u="http://127.0.0.1:$EPORT/echo" l="http://localhost:$EPORT/echo"
    cat >"$T/netrc" <<'NETRC'
# a comment line
machine other.example login no password nope
machine 127.0.0.1
  login "al ice" password "p\"w\tx"
macdef init
  machine 127.0.0.1 login mac password mac

machine localhost login bob password b1
machine localhost login carol password c2
default login dflt password dpw
NETRC
    auth() { grep -i '^Authorization' "$1" || echo none; }
    # same_auth NAME: both tools sent the same Authorization (or none) and exited alike
    same_auth() { diff <(auth "$T/$1.curl"; tail -n 1 "$T/$1.curl") <(auth "$T/$1.vega"; tail -n 1 "$T/$1.vega"); }
    # quoted tokens with escapes; the first entry of the host; default for any other host
    both q -s --netrc-file "$T/netrc" "$u"
    same_auth q
    grep -qx 'Authorization: Basic YWwgaWNlOnAidwl4' "$T/q.vega"
    both l -s --netrc-file "$T/netrc" "$l"
    same_auth l
    grep -qx 'Authorization: Basic Ym9iOmIx' "$T/l.vega"
    # --netrc-optional: the URL's password wins; its user name picks that login's entry
    both o -s --netrc-optional --netrc-file "$T/netrc" "http://u:p@127.0.0.1:$EPORT/echo"
    same_auth o
    grep -qx 'Authorization: Basic dTpw' "$T/o.vega"
    both c -s --netrc-optional --netrc-file "$T/netrc" "http://carol@localhost:$EPORT/echo"
    same_auth c
    grep -qx 'Authorization: Basic Y2Fyb2w6YzI=' "$T/c.vega"
    # -u wins; a missing file is no credentials
    both uw -s -u x:y --netrc-file "$T/netrc" "$u"
    same_auth uw
    both none -s --netrc-file "$T/nonexistent" "$u"
    same_auth none
    [ "$(auth "$T/none.vega")" = none ]
    # ~/.netrc with -n, and not without it
    mkdir -p "$T/home"
    printf 'machine 127.0.0.1 login h password hp\n' >"$T/home/.netrc"
    HOME="$T/home" vc -s -n "$u" >"$T/h"
    grep -qx 'Authorization: Basic aDpocA==' "$T/h"
    HOME="$T/home" vc -s "$u" >"$T/h0"
    [ "$(auth "$T/h0")" = none ]
    # a redirect to another host gets that host's entry, never the first one's, as curl
    both r -s -L --netrc-file "$T/netrc" "http://127.0.0.1:$EPORT/away?to=$l"
    same_auth r
    grep -qx 'Authorization: Basic Ym9iOmIx' "$T/r.vega"
    # Differs from curl 7.88 on purpose: it gives the default entry's password to a URL user
    # (or to -n's URL user) that no entry has (a password for another login); vega-curl sends none of
    # it: -n ignores the URL's credentials, and a user without an entry gets no password.
    vc -s --netrc-file "$T/netrc" "http://u:p@127.0.0.1:$EPORT/echo" >"$T/req"
    grep -qx 'Authorization: Basic YWwgaWNlOnAidwl4' "$T/req"
    vc -s --netrc-optional --netrc-file "$T/netrc" "http://zed@localhost:$EPORT/echo" >"$T/z"
    grep -qx 'Authorization: Basic emVkOg==' "$T/z"
    # at most 64 KiB of file; not a directory
    head -c 65537 /dev/zero | tr '\0' ' ' >"$T/big"
    run vc -sS --netrc-file "$T/big" "$u"
    [ "$status" -eq 26 ]
    head -c 65536 /dev/zero | tr '\0' ' ' >"$T/big"
    run vc -sS --netrc-file "$T/big" -o /dev/null -w '%{http_code}' "$u"
    [ "$output" = 200 ]
    run vc -sS --netrc-file "$T" "$u"
    [ "$status" -eq 26 ]
}

@test "-K and ~/.curlrc: curl's config syntax, -q, nesting and size bounds" {
    local u="http://127.0.0.1:$EPORT/echo"
    printf '%s\n' 'silent fail' "url = \"$u\"" '-H "X-A: 1\tb"' 'header: X-B: 2' \
        '  header="X-C: 3"  # trailing' '# a comment' 'user-agent = "a \"q\" z"' \
        "--header X-D:\\ 4" >"$T/cfg"
    both k -K "$T/cfg"
    diff "$T/k.curl" "$T/k.vega"
    grep -qx 'User-Agent: a "q" z' "$T/k.vega"
    grep -qxF "$(printf 'X-A: 1\tb')" "$T/k.vega"
    grep -qx 'X-C: 3' "$T/k.vega"
    # the command line around it, nesting and -sK clusters; -K - reads stdin
    printf 'header = "X-N: nested"\n' >"$T/inner"
    printf 'header = "X-O: outer"\nconfig = "%s"\n' "$T/inner" >"$T/outer"
    both n -H "X-Before: 1" --config "$T/outer" -sK "$T/inner" "$u"
    diff "$T/n.curl" <(sed 's/^User-Agent: vega-curl.*/User-Agent: curl\/7.88.1/' "$T/n.vega")
    [ "$(grep -c '^X-N: nested$' "$T/n.vega")" -eq 2 ]
    grep -qx 'X-O: outer' "$T/n.vega"
    echo 'header = "X-S: stdin"' | vc -s -K - "$u" >"$T/s"
    grep -qx 'X-S: stdin' "$T/s"
    # an option whose value is optional takes one only as --opt=VALUE (no stray empty URL)
    printf 'quic-migrate\nsilent\n' >"$T/opt"
    run vc -K "$T/opt" -o /dev/null -w '%{http_code}\n' "$u"
    [ "$status" -eq 0 ]
    [ "$output" = 200 ]
    # ~/.curlrc is read first, and not when -q is the first argument
    mkdir -p "$T/home"
    printf 'header = "X-RC: 1"\n' >"$T/home/.curlrc"
    HOME="$T/home" both rc -s "$u"
    grep -qx 'X-RC: 1' "$T/rc.vega"
    grep -qx 'X-RC: 1' "$T/rc.curl"
    HOME="$T/home" both q -q -s "$u"
    run grep -c '^X-RC' "$T/q.vega" "$T/q.curl"
    [ "$output" = "$T/q.vega:0"$'\n'"$T/q.curl:0" ]
    # an unreadable file: 26, as curl
    both miss -s -K "$T/none" "$u"
    grep -qx 'rc=26' "$T/miss.vega"
    grep -qx 'rc=26' "$T/miss.curl"
    # bounds: a file including itself stops at 16 levels; 1 MiB of file
    printf 'config = "%s"\n' "$T/self" >"$T/self"
    run vc -s -K "$T/self" "$u"
    [ "$status" -eq 26 ]
    echo "$output" | grep -q 'nested more than 16 deep'
    { echo '-s'; head -c 1048577 /dev/zero | tr '\0' '#'; } >"$T/big"
    run vc -K "$T/big" "$u"
    [ "$status" -eq 26 ]
    echo "$output" | grep -q 'larger than 1048576 bytes'
    { head -c 1048573 /dev/zero | tr '\0' '#'; printf '\n-s'; } >"$T/big"
    run vc -K "$T/big" -o /dev/null -w '%{http_code}' "$u"
    [ "$output" = 200 ]
}

@test "--unix-socket and --abstract-unix-socket: HTTP over a Unix socket, as curl" {
    local sock="$BATS_FILE_TMPDIR/echo.sock" abs
    abs="$(cat "$BATS_FILE_TMPDIR/abstract")"
    both p -s --unix-socket "$sock" 'http://foo.example/echo?y'
    diff <(heads "$T/p.curl" | sort) <(heads "$T/p.vega" | sort)
    grep -qx 'GET /echo?y' "$T/p.vega"
    grep -qx 'Host: foo.example' "$T/p.vega"
    both a -s --abstract-unix-socket "$abs" 'http://bar:81/echo' -d hi
    diff <(heads "$T/a.curl" | sort) <(heads "$T/a.vega" | sort)
    grep -qx 'Host: bar:81' "$T/a.vega"
    grep -q '^hirc=0$' "$T/a.vega"
    # -L and several URLs: every connection goes to the socket
    both l -s -L --unix-socket "$sock" 'http://h1/away?to=http://h2/echo' 'http://h3/echo'
    diff <(heads "$T/l.curl" | sort) <(heads "$T/l.vega" | sort)
    grep -qx 'Host: h2' "$T/l.vega"
    grep -qx 'Host: h3' "$T/l.vega"
    # no such socket: 7, as curl
    both miss -s --unix-socket "$BATS_FILE_TMPDIR/none.sock" http://foo/
    grep -qx 'rc=7' "$T/miss.vega"
    diff "$T/miss.curl" "$T/miss.vega"
    run vc -s --unix-socket "$(printf 'x%.0s' $(seq 108))" http://foo/
    [ "$status" -eq 2 ]
}

@test "-H @FILE sends one field a line as curl; a file over 1 MiB exits 26" {
    local u="http://127.0.0.1:$EPORT/echo"
    printf 'X-A: 1\r\n\nX-B: two words\nX-C;' >"$T/h"
    both h -s -H @"$T/h" "$u"
    diff <(heads "$T/h.curl") <(heads "$T/h.vega")
    grep -qx 'X-B: two words' "$T/h.vega"
    grep -qx 'X-C: ' "$T/h.vega"
    head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' 'a' >"$T/big"
    run vc -s -H @"$T/big" "$u"
    [ "$status" -eq 26 ]
}

@test "--dns-servers: names go to the given name server (libvega's resolver); --happy-eyeballs-timeout-ms" {
    # web.vega-test exists only in vega-curl-flags.py's name server
    run vc -s --dns-servers "127.0.0.1:$DPORT" "http://web.vega-test:$EPORT/echo"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Host: web.vega-test:$EPORT"* ]]
    # the server's NXDOMAIN; a list whose first server answers; port 53 by default
    run vc -sS --dns-servers "127.0.0.1:$DPORT" "http://nope.example:$EPORT/echo"
    [ "$status" -eq 6 ]
    [[ "$output" == *"Could not resolve host: nope.example"* ]]
    run vc -s -o /dev/null -w '%{remote_ip} %{http_code}' \
        --dns-servers "127.0.0.1:$DPORT,[::1]:53,::1" "http://web.vega-test:$EPORT/echo"
    [ "$status" -eq 0 ]
    [ "$output" = "127.0.0.1 200" ]
    # a name server port nobody listens on: not resolved (6), as curl's c-ares build says
    run vc -sS --dns-servers 127.0.0.1:1 "http://web.vega-test:$EPORT/echo"
    [ "$status" -eq 6 ]
    # bad lists: usage (2)
    run vc -sS --dns-servers 'web.vega-test' "http://127.0.0.1:$EPORT/echo"
    [ "$status" -eq 2 ]
    [[ "$output" == *"is not an IP address"* ]]
    run vc -sS --dns-servers "127.0.0.1,,::1" "http://127.0.0.1:$EPORT/echo"
    [ "$status" -eq 2 ]
    run vc -sS --dns-servers "1.1.1.1,1.1.1.2,1.1.1.3,1.1.1.4,1.1.1.5,1.1.1.6,1.1.1.7,1.1.1.8,1.1.1.9" \
        "http://127.0.0.1:$EPORT/echo"
    [ "$status" -eq 2 ]
    [[ "$output" == *"more than 8 servers"* ]]
    # --happy-eyeballs-timeout-ms: curl's number checks; a name resolved through the server
    run vc -s -o /dev/null -w '%{http_code}' --happy-eyeballs-timeout-ms 50 \
        --dns-servers "127.0.0.1:$DPORT" "http://web.vega-test:$EPORT/echo"
    [ "$status" -eq 0 ]
    [ "$output" = "200" ]
    run vc -sS --happy-eyeballs-timeout-ms 1.5 "http://127.0.0.1:$EPORT/echo"
    [ "$status" -eq 2 ]
    [[ "$output" == *"expected a proper numerical parameter"* ]]
    run vc -sS --happy-eyeballs-timeout-ms -1 "http://127.0.0.1:$EPORT/echo"
    [ "$status" -eq 2 ]
    [[ "$output" == *"expected a positive numerical parameter"* ]]
}

@test "TLS flags: --sslv3/--sslv2 warn as curl 7.88; TLS 1.1 and older exit 35" {
    run vc --sslv3 -o /dev/null "http://127.0.0.1:$EPORT/echo"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Warning: Ignores instruction to use SSLv3"* ]]
    run vc -2 -o /dev/null "http://127.0.0.1:$EPORT/echo"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Warning: Ignores instruction to use SSLv2"* ]]
    run vc -s --sslv3 -o /dev/null "http://127.0.0.1:$EPORT/echo"
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    # (--pinnedpubkey over HTTP/3 is checked by QUIC's handshake: vega-curl-h3.bats)
    # versions below 1.2 cannot be spoken: said plainly, curl's 35
    run vc -sS --tls-max 1.1 "https://127.0.0.1:$EPORT/"
    [ "$status" -eq 35 ]
    [[ "$output" == *"TLS 1.1 and older are not supported"* ]]
}

@test "--trace, --trace-ascii, --trace-time: curl's records and dumps, - for stdout" {
    local f="http://127.0.0.1:$SPORT/f.txt"
    vc -s --trace - "$f" >"$T/hex" 2>"$T/hex.err"
    [ ! -s "$T/hex.err" ]
    grep -qx '=> Send header, [0-9]* bytes (0x[0-9a-f]*)' "$T/hex"
    grep -qx '0000: 47 45 54 20 2f 66 2e 74 78 74 20 48 54 54 50 2f GET /f.txt HTTP/' "$T/hex"
    # a received head goes a line a record, as curl's
    grep -qx '<= Recv header, 17 bytes (0x11)' "$T/hex"
    grep -qx '0000: 48 54 54 50 2f 31 2e 31 20 32 30 30 20 4f 4b 0d HTTP/1.1 200 OK.' "$T/hex"
    grep -qx '<= Recv header, 2 bytes (0x2)' "$T/hex"
    grep -qx '<= Recv data, 20 bytes (0x14)' "$T/hex"
    grep -qx '0000: 30 31 32 33 34 35 36 37 38 39 61 62 63 64 65 66 0123456789abcdef' "$T/hex"
    grep -q "^0010: 67 68 69 6a $(printf ' %.0s' $(seq 36))ghij" "$T/hex"
    grep -qx "== Info: Connected to 127.0.0.1 (127.0.0.1) port $SPORT" "$T/hex"
    # text only, a line per CR LF, 64 bytes a line; the request body as "=> Send data"
    vc -s --trace-ascii "$T/a.txt" -d "$(printf 'x%.0s' $(seq 70))" \
        "http://127.0.0.1:$EPORT/ct" >/dev/null
    grep -qx '0000: POST /ct HTTP/1.1' "$T/a.txt"
    grep -qx '=> Send data, 70 bytes (0x46)' "$T/a.txt"
    grep -qx "0000: $(printf 'x%.0s' $(seq 64))" "$T/a.txt"
    grep -qx '0040: xxxxxx' "$T/a.txt"
    grep -qx '0000: HTTP/1.1 200 OK' "$T/a.txt"
    # a -T file is traced as it is read (never by sendfile then)
    printf 'upload me\n' >"$T/up"
    vc -s --trace-ascii "$T/u.txt" -T "$T/up" "http://127.0.0.1:$EPORT/echo" >/dev/null
    grep -qx '=> Send data, 10 bytes (0xa)' "$T/u.txt"
    grep -qx '0000: upload me.' "$T/u.txt"
    # --trace-time: every record and -v line starts with the time of day
    vc -s --trace-ascii "$T/t.txt" --trace-time "$f" >/dev/null
    grep -Eq '^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} => Send header, ' "$T/t.txt"
    grep -Eq '^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} == Info: Connected to ' "$T/t.txt"
    ! grep -Eq '^(=>|<=|==) ' "$T/t.txt"
    vc -s -v --trace-time "$f" -o /dev/null 2>"$T/v.err"
    grep -Eq '^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} > GET /f.txt HTTP/1.1$' "$T/v.err"
    grep -Eq '^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} < HTTP/1.1 200 OK$' "$T/v.err"
    # a file that cannot be made: the trace goes to stderr, exit 0 (curl 7.88)
    run vc -s --trace "$T/no/such/dir" "$f"
    [ "$status" -eq 0 ]
    grep -q '^<= Recv data, 20 bytes' <<<"$output"
}

@test "-v and --trace*: the last one wins, with curl's warning" {
    local f="http://127.0.0.1:$SPORT/f.txt"
    vc --no-progress-meter -v --trace-ascii "$T/a.txt" "$f" -o /dev/null 2>"$T/a.err"
    grep -q 'Warning: --trace-ascii overrides an earlier trace/verbose option$' "$T/a.err"
    ! grep -q '^> ' "$T/a.err"
    grep -q '^=> Send header' "$T/a.txt"
    vc --no-progress-meter --trace "$T/b.txt" -v "$f" -o /dev/null 2>"$T/b.err"
    grep -q 'Warning: -v, --verbose overrides an earlier trace/verbose option$' "$T/b.err"
    grep -qx '> GET /f.txt HTTP/1.1' "$T/b.err"
    [ ! -e "$T/b.txt" ]
    if command -v curl >/dev/null; then
        curl --no-progress-meter -v --trace-ascii "$T/c.txt" "$f" -o /dev/null 2>"$T/c.err"
        grep -qx 'Warning: --trace-ascii overrides an earlier trace/verbose option' "$T/c.err"
    fi
}

@test "--etag-save and --etag-compare: curl 7.88's files, If-None-Match and exit codes" {
    local u="http://127.0.0.1:$EPORT"
    both s -s --etag-save "$T/e" "$u/etag?e=%22abc%22"
    [ "$(cat "$T/e")" = '"abc"' ]
    grep -qx 'rc=0' "$T/s.vega"
    # the saved tag comes back as If-None-Match: 304, no body
    both c -s --etag-compare "$T/e" -w '%{http_code}' "$u/etag?e=%22abc%22"
    grep -qx '304rc=0' "$T/c.vega"
    diff "$T/c.curl" "$T/c.vega"
    vc -s --etag-compare "$T/e" "$u/echo" >"$T/echo"
    grep -qx 'If-None-Match: "abc"' "$T/echo"
    # no ETag in the answer: the file is emptied
    vc -s --etag-save "$T/e" "$u/etag" >/dev/null
    [ -e "$T/e" ]
    [ ! -s "$T/e" ]
    # a missing compare file: 26, unless --etag-save names a file too (then If-None-Match: "")
    both m -s --etag-compare "$T/none" "$u/echo"
    grep -qx 'rc=26' "$T/m.vega"
    diff "$T/m.curl" "$T/m.vega"
    vc -s --etag-compare "$T/none" --etag-save "$T/none" "$u/echo" >"$T/ms"
    grep -qx 'If-None-Match: ""' "$T/ms"
    # a save file that cannot be made: 26
    run vc -s --etag-save "$T/no/dir/e" "$u/echo"
    [ "$status" -eq 26 ]
    # a compare file over the bound: 26
    head -c 2000 /dev/zero | tr '\0' 'a' >"$T/long"
    run vc -s --etag-compare "$T/long" "$u/echo"
    [ "$status" -eq 26 ]
}

@test "--interface and --local-port: the server sees the source asked for; curl's exit codes" {
    local u="http://127.0.0.1:$EPORT/peer"
    run vc -s --interface 127.0.0.2 "$u"
    [ "$status" -eq 0 ]
    [[ "$output" == "peer 127.0.0.2 "* ]]
    run vc -s --interface host!127.0.0.3 "$u"
    [ "$status" -eq 0 ]
    [[ "$output" == "peer 127.0.0.3 "* ]]
    # an interface by name (SO_BINDTODEVICE), with a port range
    run vc -s --interface 'if!lo' --local-port 45000-45999 "$u?in=45000-45999"
    [ "$status" -eq 0 ]
    [ "$output" = "peer 127.0.0.1, port in 45000-45999" ]
    run vc -s --interface 127.0.0.2 --local-port 46000-46999 "$u?in=46000-46999"
    [ "$status" -eq 0 ]
    [ "$output" = "peer 127.0.0.2, port in 46000-46999" ]
    # several URLs: every new connection is bound
    run vc -s -H 'Connection: close' --interface 127.0.0.4 "$u" "$u"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^peer 127\.0\.0\.4 ' <<<"$output")" -eq 2 ]
    # curl's 45: no such interface, an address not of this host, no free port
    run vc -s --interface nosuchif0 "$u"
    [ "$status" -eq 45 ]
    run vc -S -s --interface 'if!nosuchif0' "$u"
    [ "$status" -eq 45 ]
    grep -q "Couldn't bind to interface 'nosuchif0'" <<<"$output"
    run vc -s --interface 192.0.2.1 "$u"
    [ "$status" -eq 45 ]
    run vc -S -s --local-port "$EPORT-$EPORT" "$u"
    [ "$status" -eq 45 ]
    grep -q 'bind failed with errno 98' <<<"$output"
    # usage: a bad range (2); through a proxy or over HTTP/3 nothing would be bound (2)
    run vc -s --local-port 9-8 "$u"
    [ "$status" -eq 2 ]
    run vc -s --local-port 65536 "$u"
    [ "$status" -eq 2 ]
    run vc -S -s --interface lo -x "127.0.0.1:$EPORT" "$u"
    [ "$status" -eq 2 ]
    grep -q 'not supported through a proxy' <<<"$output"
    run vc -s --local-port 47000 --http3-only "https://127.0.0.1:$EPORT/"
    [ "$status" -eq 2 ]
}

@test "--tls13-ciphers over QUIC: a suite QUIC does not offer, or a fourth, exits 59 with the list" {
    local c
    for c in TLS_AES_128_CCM_SHA256 TLS_AES_128_GCM_SHA256:BOGUS \
        TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256:TLS_AES_128_GCM_SHA256; do
        run vc -S -s --http3-only --tls13-ciphers "$c" "https://127.0.0.1:9/"
        [ "$status" -eq 59 ]
        [[ "$output" == *"failed setting cipher list: $c (QUIC offers TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384 and TLS_CHACHA20_POLY1305_SHA256)"* ]]
    done
}
