#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-curl's everyday curl flags (issue 18): -r, -u, --oauth2-bearer, --json, -4/-6, -C, -z,
# -R, --output-dir, --create-dirs, --retry and its companions, --fail-early, --limit-rate, the
# TCP flags, and %{size_download} with --compressed. Each is run with the real curl too, on the
# same server, where curl is installed: what the server got, the files and the exit codes must
# be the same. Servers: vega-serve (files, ranges, conditions, compression) and
# vega-curl-flags.py (echoes request heads, redirects, 503 then 200).

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
    command -p python3 -u "$BATS_TEST_DIRNAME/vega-curl-flags.py" >"$d/echo.log" 2>&1 3>&- \
        </dev/null &
    echo "$!" >>"$d/pids"
    disown
    wait_for_line "$d/serve.log" 'listening on 127\.0\.0\.1:[0-9]+' 10
    wait_for_line "$d/echo.log" 'port [0-9]+' 10
    SPORT="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$d/serve.log" | head -1)"
    EPORT="$(sed -n 's/^port \([0-9]*\)/\1/p' "$d/echo.log" | head -1)"
    export SPORT EPORT
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
