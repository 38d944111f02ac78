#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTP/3 interop in the QUIC interop runner's terms: every (client, server, case) among ngtcp2
# 0.12 (gtlsclient, gtlsserver), quic-go 0.29 (our small client and server, interop/h3/quicgo),
# Caddy 2.6 (server), headless Chromium (client) and vega (vega-curl, vega-serve), with the
# impairment relay (relay.c, on libvega) between client and server in every run: it observes
# (QUIC versions, Retry, 0-RTT, Handshake bytes, ECN, the amplification limit) and, for the
# network cases, impairs with a seed named in the TAP line. Files of random bytes are served,
# downloaded and compared by SHA-256; each case adds checks of its own. One TAP line per run; a
# run a peer cannot do is "ok ... # SKIP <why>".
#
# Usage: interop/h3/run.sh [BUILD_DIR] [--client NAME]... [--server NAME]... [--case NAME]...
#                          [--full] [--quick] [--matrix-md] [--update-doc FILE] [--list] [--keep]
#                          [--unsupported]
#   NAME: ngtcp2, quicgo, chromium (client), caddy (server), vega; several of a kind are allowed.
#   --quick        the subset the test command runs (tests/bats/interop-h3.bats)
#   --full         the runner's sizes and counts (50 connections for handshakeloss, 10 MiB...)
#   --matrix-md    TAP on stderr, the Markdown matrix on stdout (for docs/INTEROP.md)
#   --update-doc F also write the matrix into F between its "<!-- matrix:begin -->" and
#                  "<!-- matrix:end -->" lines (docs/INTEROP.md), with the date and mode
#   --unsupported  also run what a peer is known not to support (to see how it fails)
#   --keep         keep the logs ($WORK) and print where
# Environment: H3_SEED (the relay's seed, default 42), VEGA_BUILD_DIR.
# Exit: 0 nothing failed, 1 a run failed, 2 usage or no libvega.a.
set -uo pipefail

ALL_CLIENTS=(ngtcp2 quicgo chromium vega)
ALL_SERVERS=(ngtcp2 quicgo caddy vega)
ALL_CASES=(handshake transfer multiplexing http3 chacha20 retry resumption zerortt keyupdate ecn
    v2 ipv6 amplificationlimit blackhole handshakeloss transferloss handshakecorruption
    transfercorruption longrtt rebind-port rebind-addr connectionmigration)

CLIENTS=() SERVERS=() CASES=() FULL=0 QUICK=0 MD=0 KEEP=0 UNSUPPORTED=0 BUILD="" DOC=""
usage() {
    sed -n '/^# Usage:/,/^# Exit:/p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-2}"
}
while [ $# -gt 0 ]; do
    case "$1" in
    --client) CLIENTS+=("${2:?}"); shift ;;
    --server) SERVERS+=("${2:?}"); shift ;;
    --case) CASES+=("${2:?}"); shift ;;
    --full) FULL=1 ;;
    --quick) QUICK=1 ;;
    --matrix-md) MD=1 ;;
    --update-doc) DOC="$(realpath -m "${2:?}")"; shift ;;
    --keep) KEEP=1 ;;
    --unsupported) UNSUPPORTED=1 ;;
    --list) printf '%s\n' "${ALL_CASES[@]}"; exit 0 ;;
    -h | --help) usage 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; usage ;;
    *) BUILD="$1" ;;
    esac
    shift
done
[ ${#CLIENTS[@]} -gt 0 ] || CLIENTS=("${ALL_CLIENTS[@]}")
[ ${#SERVERS[@]} -gt 0 ] || SERVERS=("${ALL_SERVERS[@]}")
[ ${#CASES[@]} -gt 0 ] || CASES=("${ALL_CASES[@]}")
for c in "${CASES[@]}"; do
    [[ " ${ALL_CASES[*]} " == *" $c "* ]] || { echo "run.sh: unknown case $c (see --list)" >&2; exit 2; }
done

set -- ${BUILD:+"$BUILD"}
# shellcheck source=interop/h3/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=interop/h3/peers.sh
source "$H3_DIR/peers.sh"
# shellcheck source=interop/h3/cases.sh
source "$H3_DIR/cases.sh"
if [ "$KEEP" = 1 ]; then
    trap 'iop_cleanup; echo "# logs kept in $WORK" >&2' EXIT
fi
if [ "$MD" = 1 ]; then
    exec 3>&1 1>&2
fi

for t in openssl ss timeout sha256sum; do
    command -v "$t" >/dev/null || skip_all "$t is missing"
done
command -p python3 -c '' 2>/dev/null || skip_all "python3 is missing"
build_relay
QUICGO_WHY="$(quicgo_missing)"
if [ -z "$QUICGO_WHY" ] && ! build_quicgo >"$WORK/quicgo-build.out" 2>&1; then
    QUICGO_WHY="the quic-go peers do not build: $(tail -n 3 "$WORK/quicgo-build.out" | tr '\n' ' ')"
fi
SEED="${H3_SEED:-42}"
T_SERVER=$((FULL ? 400 : 120))

# ---- certificates ------------------------------------------------------------------------------

# make_certs: an ECDSA P-256 certificate for localhost, 127.0.0.1 and ::1 (cert.pem, key.pem),
# and a big one (bigcert.pem: 400 more names, over 10 KB) that no server can send within three
# times a client's first datagram; with the SPKI hashes Chromium is told to trust.
make_certs() {
    local sans="DNS:localhost,IP:127.0.0.1,IP:::1" i
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 7 \
        -subj /CN=localhost -addext "subjectAltName=$sans" \
        -keyout "$WORK/key.pem" -out "$WORK/cert.pem" >/dev/null 2>&1 || return 1
    for ((i = 0; i < 400; i++)); do
        sans="$sans,DNS:name-$i.padding.interop.example"
    done
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 7 \
        -subj /CN=localhost -addext "subjectAltName=$sans" \
        -keyout "$WORK/bigkey.pem" -out "$WORK/bigcert.pem" >/dev/null 2>&1 || return 1
}
spki() {
    openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform der |
        openssl dgst -sha256 -binary | base64
}
make_certs || { echo "interop: could not make certificates with openssl" >&2; exit 1; }

# ---- one run -----------------------------------------------------------------------------------

RESULTS="$WORK/results.tsv"
: >"$RESULTS"

# record CLIENT SERVER CASE RESULT [WHY]
record() {
    printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" >>"$RESULTS"
}

# verify_files FILE...: each downloaded file in $DL is the served one (SHA-256).
verify_files() {
    local f bad=0
    for f in "$@"; do
        if [ ! -f "$DL/$f" ]; then
            echo "missing: $f"
            bad=1
        elif [ "$(sha256sum <"$DL/$f")" != "$(sha256sum <"$WWW/$f")" ]; then
            echo "differs: $f ($(stat -c %s "$DL/$f") bytes, served $(stat -c %s "$WWW/$f"))"
            bad=1
        fi
    done
    return $bad
}

# run_one CLIENT SERVER CASE: one TAP line.
run_one() {
    local cl="$1" sv="$2" cs="$3" why name rc=0 known
    name="$cl -> $sv: $cs"
    why="$(peer_missing client "$cl")"
    [ -n "$why" ] || why="$(peer_missing server "$sv")"
    if [ -z "$why" ] && [ "$UNSUPPORTED" = 0 ]; then
        why="$(case_unsupported "$cl" "$sv" "$cs")"
    fi
    if [ -n "$why" ]; then
        tap_skip "$name" "$why"
        record "$cl" "$sv" "$cs" skip "$why"
        return 0
    fi
    RUN_N=$((${RUN_N:-0} + 1))
    RUN_DIR="$WORK/run/$RUN_N-$cl-$sv-$cs"
    WWW="$RUN_DIR/www"
    DL="$RUN_DIR/dl"
    mkdir -p "$WWW" "$DL"
    case_setup "$cs" "$cl" "$sv"
    if [ ${#RELAY_ARGS[@]} -gt 0 ]; then
        name="$name (relay seed $SEED: ${RELAY_ARGS[*]})"
    fi
    (
        set +e
        server_start "$sv" || exit 1
        local up
        up="$(hostport "$HOST_IP" "$SRV_PORT")"
        start_relay "$RUN_DIR/relay.out" --seed "$SEED" --upstream "$up" \
            --listen "$(hostport "$HOST_IP" 0)" "${RELAY_ARGS[@]}" || exit 1
        CPORT="$RELAY_PORT"
        client_run "$cl" "${FILES[@]}"
        crc=$?
        sleep 0.2 # the last datagrams (CONNECTION_CLOSE) through the relay
        stop_relay
        iop_cleanup
        echo "client exit: $crc"
        verify_files "${FILES[@]}" || exit 1
        case_check "$cs" "$cl" "$sv"
    ) >"$RUN_DIR/check.out" 2>&1
    rc=$?
    known="$(case_known "$cl" "$sv" "$cs")"
    if [ $rc -eq 0 ] && [ -n "$known" ]; then
        tap_ok "$name # TODO passed this time, but known to fail: $known"
        record "$cl" "$sv" "$cs" pass
    elif [ $rc -eq 0 ]; then
        tap_ok "$name"
        record "$cl" "$sv" "$cs" pass
        [ "$KEEP" = 1 ] || rm -rf "$WWW" "$DL"
    elif [ -n "$known" ]; then
        IOP_N=$((IOP_N + 1))
        echo "not ok $IOP_N - $name # TODO $known"
        sed 's/^/#   /' "$RUN_DIR/check.out" | head -n 5
        record "$cl" "$sv" "$cs" known "$known"
        [ "$KEEP" = 1 ] || rm -rf "$WWW" "$DL"
    else
        {
            cat "$RUN_DIR/check.out"
            echo "--- relay"
            grep -v '^relay: stats' "$RUN_DIR/relay.out" 2>/dev/null | cut -c1-400
            echo "--- client log (end)"
            tail -n 12 "$RUN_DIR/client.log" 2>/dev/null
            echo "--- server log (end)"
            tail -n 12 "$RUN_DIR/server.log" 2>/dev/null
        } >"$RUN_DIR/fail.out"
        H3_TAIL=40 tap_fail "$name" "$RUN_DIR/fail.out"
        record "$cl" "$sv" "$cs" fail "$(head -n 3 "$RUN_DIR/check.out" | tr '\n\t' '  ' | cut -c1-160)"
        [ "$KEEP" = 1 ] || rm -rf "$WWW" "$DL"
    fi
    iop_cleanup
}

# The quick subset (tests/bats/interop-h3.bats, about two minutes on 2 cores): vega's client
# against each independent server and each independent client against vega's server, the
# mechanisms each pair is known to share once (the peers among themselves are the default and
# --full runs' business: docs/INTEROP.md).
quick_plan() {
    cat <<'PLAN'
vega ngtcp2 transfer resumption
vega quicgo transfer zerortt
vega caddy transfer
ngtcp2 vega handshake retry zerortt keyupdate transferloss
quicgo vega multiplexing resumption
chromium vega handshake
vega vega transferloss
PLAN
}

if [ "$QUICK" = 1 ]; then
    while read -r cl sv cases; do
        for cs in $cases; do
            run_one "$cl" "$sv" "$cs"
        done
    done < <(quick_plan)
else
    for cl in "${CLIENTS[@]}"; do
        for sv in "${SERVERS[@]}"; do
            [ "$cl" = chromium ] && [ "$sv" = chromium ] && continue
            [ "$cl" = caddy ] && continue
            [ "$sv" = chromium ] && continue
            for cs in "${CASES[@]}"; do
                run_one "$cl" "$sv" "$cs"
            done
        done
    done
fi

echo "1..$IOP_N"
echo "# $((IOP_N - IOP_FAILED)) passed or skipped, $IOP_FAILED failed ($(grep -c $'\tskip\t' "$RESULTS") skipped)"
if [ "$MD" = 1 ]; then
    matrix_md "$RESULTS" >&3
fi
if [ -n "$DOC" ]; then
    matrix_md "$RESULTS" >"$WORK/matrix.md"
    command -p python3 - "$DOC" "$WORK/matrix.md" "$(date -u +%Y-%m-%d) $( [ "$FULL" = 1 ] && echo --full || echo default) H3_SEED=$SEED" <<'PY'
import sys
doc, table, note = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
b, e = "<!-- matrix:begin -->", "<!-- matrix:end -->"
if b not in doc or e not in doc:
    sys.exit("run.sh: %s has no %s ... %s block" % (sys.argv[1], b, e))
head, rest = doc.split(b, 1)
tail = rest.split(e, 1)[1]
open(sys.argv[1], "w").write(head + b + "\n_Generated by `interop/h3/run.sh` (" + note + ")._\n\n" + table + e + tail)
PY
fi
[ "$IOP_FAILED" -eq 0 ]
