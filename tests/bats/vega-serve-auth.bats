#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-serve's salted slow password hashes for -a and --auth-file, made by the tools people
# already use (openssl passwd, python's crypt and hashlib, htpasswd -B when installed) and by
# vega-serve --hash-password: the right password 200, a wrong one 401, for each scheme; the
# bounded cache of successes (--auth-cache); the forms refused at start. Loopback only, port 0.

load helpers

port_of() {
    wait_for_line "$1" 'serving' 10
    sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$1" | head -n1
}

py() {
    command -p python3 -W ignore "$@"
}

setup() {
    T="$BATS_TEST_TMPDIR"
    SERVE="$(vega_bin vega-serve)"
    mkdir -p "$T/root"
    printf 'ok\n' >"$T/root/f.txt"
}

teardown() {
    stop_bg_all
}

# code USER:PASS: the status of a GET with those credentials
code() {
    curl -sS --max-time 20 -o /dev/null -w '%{http_code}' -u "$1" "$U/f.txt"
}

@test "auth-file: each scheme, as other tools write it, lets the right password in, not a wrong one" {
    local f="$T/users"
    {
        # sha512-crypt by openssl passwd -6 (what mkpasswd also writes)
        printf 'sha512:%s\n' "$(openssl passwd -6 pw-sha512)"
        # sha256-crypt, yescrypt and bcrypt (cost 4) through python's crypt (libxcrypt); passlib's
        # pbkdf2-sha256 and scrypt forms computed by hashlib
        py -c '
import base64, crypt, hashlib, os
print("sha256:" + crypt.crypt("pw-sha256", crypt.mksalt(crypt.METHOD_SHA256)))
print("yes:" + crypt.crypt("pw-yes", "$y$j9T$F5Jx5fExrKuPp53xLKQ..1"))
print("bf:" + crypt.crypt("pw-bf", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))
ab64 = lambda b: base64.b64encode(b, b"./").decode().rstrip("=")
b64 = lambda b: base64.b64encode(b).decode().rstrip("=")
s = os.urandom(16)
print("pb:$pbkdf2-sha256$1000$%s$%s" % (ab64(s), ab64(hashlib.pbkdf2_hmac("sha256", b"pw-pb", s, 1000))))
print("sc:$scrypt$ln=10,r=8,p=1$%s$%s" % (b64(s), b64(hashlib.scrypt(b"pw-sc", salt=s, n=1024, r=8, p=1, dklen=32))))
'
        printf 'old:sha256:%s\n' "$(printf %s pw-old | sha256sum | cut -d' ' -f1)"
        if command -v htpasswd >/dev/null; then
            htpasswd -nbB -C 4 ht pw-ht | head -n1
        fi
        # vega-serve's own helper, both schemes
        printf 'pw-mine\n' | "$SERVE" --hash-password mine --hash-scheme pbkdf2
        printf 'pw-bc\n' | "$SERVE" --hash-password bc
    } >"$f"
    grep -qE '^mine:\$pbkdf2-sha256\$600000\$' "$f"
    grep -qE '^bc:\$2b\$10\$' "$f"
    start_bg "$T/s.log" "$SERVE" -p 0 --workers 1 --auth-file "$f" \
        -a "inline:$(openssl passwd -6 pw-inline)" "$T/root"
    U="http://127.0.0.1:$(port_of "$T/s.log")"
    # the helper's own hashes (600000 rounds, cost 10) are slow: the right password only
    [ "$(code mine:pw-mine)" = 200 ]
    [ "$(code bc:pw-bc)" = 200 ]
    local u users=(sha512 sha256 yes bf pb sc old inline)
    command -v htpasswd >/dev/null && users+=(ht)
    for u in "${users[@]}"; do
        [ "$(code "$u:pw-$u")" = 200 ] || {
            echo "user $u: right password refused" >&2
            return 1
        }
        [ "$(code "$u:pw-$u-wrong")" = 401 ] || {
            echo "user $u: wrong password accepted" >&2
            return 1
        }
    done
    # one user's password is not another's; an unknown user is 401
    [ "$(code "sha512:pw-sha256")" = 401 ]
    [ "$(code "nobody:pw-sha512")" = 401 ]
}

@test "--auth-cache: successes are cached, at most N, the least recently used replaced" {
    local f="$T/users" u
    py -c '
import crypt
for u in "abc":
    print(u + ":" + crypt.crypt("pw-" + u, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))
' >"$f"
    start_bg "$T/s.log" "$SERVE" -v -p 0 --workers 1 --auth-file "$f" --auth-cache 2 "$T/root"
    U="http://127.0.0.1:$(port_of "$T/s.log")"
    # a b: run; a: cached; c: run (replaces b, the least recently used); a: cached; b: run
    for u in a b a c a b; do
        [ "$(code "$u:pw-$u")" = 200 ]
    done
    grep -F 'hash run for' "$T/s.log" | sed -E "s/.*for '([a-z])'.*/\1/" | tr -d '\n' >"$T/runs"
    [ "$(cat "$T/runs")" = abcb ]
    # a wrong password is never cached: each one runs the hash
    [ "$(code "a:nope")" = 401 ]
    [ "$(code "a:nope")" = 401 ]
    [ "$(grep -c "hash run for 'a' (no match" "$T/s.log")" -eq 2 ]
}

@test "--auth-cache 0: every request runs the hash" {
    py -c "import crypt; print('a:' + crypt.crypt('pw-a', crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))" >"$T/users"
    start_bg "$T/s.log" "$SERVE" -v -p 0 --workers 1 --auth-file "$T/users" --auth-cache 0 "$T/root"
    U="http://127.0.0.1:$(port_of "$T/s.log")"
    [ "$(code a:pw-a)" = 200 ]
    [ "$(code a:pw-a)" = 200 ]
    [ "$(grep -c "hash run for 'a' (match" "$T/s.log")" -eq 2 ]
}

@test "auth-file: weak, unknown and malformed forms are refused at start, with the line" {
    local bad
    for bad in 'u:$apr1$abcdefgh$0123456789012345678901' 'u:$1$abcdefgh$0123456789012345678901' \
        'u:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=' 'u:plain-password' 'u:$pbkdf2-sha256$0$c2FsdA$aGFzaA' \
        'u:$scrypt$ln=24,r=8,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA' 'u:$2b$04$short' \
        'u:$6$saltsalt'; do
        printf '# users\n%s\n' "$bad" >"$T/users"
        # timeout: a form accepted by mistake would serve on
        run timeout 10 "$SERVE" -p 0 --auth-file "$T/users" "$T/root"
        [ "$status" -eq 2 ] || {
            echo "accepted: $bad" >&2
            return 1
        }
        [[ "$output" == *"users:2:"* ]]
    done
    # -a: a password that looks like a hash but is none is refused, saying how to give it
    run timeout 10 "$SERVE" -p 0 -a 'u:$ecret' "$T/root"
    [ "$status" -eq 2 ]
    [[ "$output" == *"read as a hash"* ]]
    run timeout 10 "$SERVE" --hash-password u </dev/null
    [ "$status" -eq 2 ]
    [[ "$output" == *'expected a password'* ]]
    run timeout 10 "$SERVE" --hash-password u --hash-scheme md5
    [ "$status" -eq 2 ]
}
