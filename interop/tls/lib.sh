# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers for the TLS interop scripts: find vega-echo, make a CA with server and client
# certificates (openssl CLI), start servers on ephemeral loopback ports, report TAP-like lines.
#
# Source it from a script; it sets VEGA_ECHO, WORK (a temporary folder, removed at exit) and
# defines the functions below. The build folder is $1 of the script, else $VEGA_BUILD_DIR, else
# build/ (relative paths are taken from the repository root).

# ../common.sh sets IOP_ROOT, IOP_BUILD, WORK, IOP_PIDS and defines vega_tool, iop_cleanup,
# skip_all.
IOP_AREA=tls
# shellcheck source=interop/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
VEGA_ECHO="$(vega_tool vega-echo)" || exit 2

# check NAME CMD...: runs CMD in this shell (so that the servers it starts are killed after
# it); "ok N - NAME" or "not ok N - NAME" followed by its output.
check() {
    local name="$1"
    shift
    IOP_N=$((IOP_N + 1))
    if "$@" >"$WORK/check.out" 2>&1 </dev/null; then
        echo "ok $IOP_N - $name"
    else
        echo "not ok $IOP_N - $name"
        sed 's/^/#   /' "$WORK/check.out"
        IOP_FAILED=$((IOP_FAILED + 1))
    fi
    iop_cleanup
}

# finish: the summary line and the exit status.
finish() {
    echo "1..$IOP_N"
    echo "$((IOP_N - IOP_FAILED)) passed, $IOP_FAILED failed"
    [ "$IOP_FAILED" -eq 0 ]
}

# expect_in FILE TEXT: FILE contains TEXT (else prints FILE and fails).
expect_in() {
    if ! grep -qF -- "$2" "$1"; then
        echo "expected '$2' in $1, which has:"
        cat "$1"
        return 1
    fi
}

# ---- certificates ------------------------------------------------------------------------------

# make_certs: $WORK/ca.pem, server.pem + server.key (localhost, 127.0.0.1), client.pem +
# client.key (CN interop-client), other-ca.pem (a CA nobody used). ECDSA P-256, one day.
make_certs() {
    local d="$WORK"
    (
        set -e
        cd "$d"
        cat >ext.cnf <<'EOF'
[server]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
[client]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
EOF
        for ca in ca other-ca; do
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
                -keyout "$ca.key" -out "$ca.pem" -days 1 -subj "/CN=Interop $ca" \
                -addext "basicConstraints=critical,CA:TRUE" \
                -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
        done
        for who in server client; do
            local cn=localhost
            [ "$who" = client ] && cn=interop-client
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$who.key" \
                -out "$who.csr" -subj "/CN=$cn" 2>/dev/null
            openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
                -out "$who.pem" -days 1 -extfile ext.cnf -extensions "$who" 2>/dev/null
        done
    ) || {
        echo "interop: could not make certificates with openssl" >&2
        exit 1
    }
}

# ---- servers ------------------------------------------------------------------------------------

# wait_for FILE REGEX [SECONDS]
wait_for() {
    local i
    for ((i = 0; i < ${3:-10} * 20; i++)); do
        if grep -qE "$2" "$1" 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    echo "timed out waiting for /$2/ in $1:"
    cat "$1"
    return 1
}

# vega_server LOG ARGS...: vega-echo -l -v --tls ARGS 0 in the background; sets VPORT.
vega_server() {
    local log="$1"
    shift
    "$VEGA_ECHO" -l -v --tls "$@" 127.0.0.1:0 >/dev/null 2>"$log" </dev/null &
    IOP_PIDS+=($!)
    wait_for "$log" 'listening on' || return 1
    VPORT="$(sed -nE 's/.*listening on 127\.0\.0\.1:([0-9]+) .*/\1/p' "$log" | head -n1)"
}

# free_port: a port that was free a moment ago (for servers that cannot report theirs).
free_port() {
    local p i
    for ((i = 0; i < 50; i++)); do
        p=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    echo 0
}
