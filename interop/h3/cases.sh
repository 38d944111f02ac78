# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The cases of run.sh in the QUIC interop runner's terms (quic-interop-runner's testcases.py:
# the same names, network scenarios and file sizes, scaled down unless --full): what each peer
# cannot do (case_unsupported), the files, mode and relay impairments of a run (case_setup),
# and the checks after it (case_check), plus the Markdown matrix (matrix_md).
# The S_*, C_*, FAM, HOST_IP, CERT, KEY, T_CLIENT and MODE it sets are read by peers.sh.
# shellcheck disable=SC2034

KiB=1024
MiB=$((1024 * 1024))

# ---- what the peers can do ---------------------------------------------------------------------

# v2_of PEER: the QUIC v2 it speaks: "rfc" (RFC 9369, 0x6b3343cf), "draft" (draft-ietf-quic-v2-01,
# 0x709a50c4) or nothing.
v2_of() {
    case "$1" in
    ngtcp2 | quicgo | caddy) echo draft ;; # ngtcp2 0.12, quic-go 0.29 (Caddy 2.6 embeds it)
    chromium | vega) echo rfc ;;
    esac
}

# case_unsupported CLIENT SERVER CASE: why this run cannot be done, or nothing.
case_unsupported() {
    local cl="$1" sv="$2" cs="$3"
    case "$cs" in
    chacha20)
        # One side must be limited to ChaCha20-Poly1305, and one must say what was negotiated.
        case "$cl:$sv" in
        chromium:caddy) echo "neither Chromium nor Caddy can be limited to ChaCha20-Poly1305 for QUIC, and neither logs the suite" ;;
        esac
        ;;
    retry)
        [ "$sv" = caddy ] && echo "Caddy 2.6 has no setting for quic-go's RequireAddressValidation (Retry)"
        [ "$sv" = vega ] && ! vega_has vega-serve --quic-retry && echo "vega-serve has no --quic-retry"
        ;;
    resumption | zerortt)
        [ "$cl" = chromium ] && echo "headless Chromium makes one navigation per process and keeps TLS tickets in memory: no second connection to resume"
        ;;
    keyupdate)
        [ "$cl" = chromium ] && echo "Chromium cannot be told to initiate a key update"
        [ "$cl" = vega ] && ! vega_has vega-curl --quic-key-update && echo "vega-curl has no --quic-key-update"
        ;;
    ecn)
        local p
        for p in "$cl" "$sv"; do
            case "$p" in
            quicgo | caddy) echo "quic-go 0.29 sends no ECN marks (it reads them only)"; return ;;
            chromium) echo "Chromium sends no ECN marks (seen on the relay: every datagram Not-ECT)"; return ;;
            esac
        done
        ;;
    v2)
        local a b
        a="$(v2_of "$cl")"
        b="$(v2_of "$sv")"
        [ "$a" = "$b" ] ||
            echo "no common QUIC v2: $cl speaks ${a:-none} ($( [ "$a" = rfc ] && echo 'RFC 9369 0x6b3343cf' || echo 'draft-01 0x709a50c4')), $sv ${b:-none} ($( [ "$b" = rfc ] && echo 'RFC 9369 0x6b3343cf' || echo 'draft-01 0x709a50c4'))"
        ;;
    rebind-port | rebind-addr)
        case "$sv" in
        quicgo | caddy) echo "quic-go 0.29 servers do not migrate a connection: they keep sending to the client's first address" ;;
        esac
        ;;
    connectionmigration)
        case "$cl" in
        quicgo) echo "quic-go 0.29 clients cannot migrate" ; return ;;
        chromium) echo "Chromium cannot be told to migrate a connection" ; return ;;
        vega) vega_has vega-curl --quic-migrate || { echo "vega-curl has no --quic-migrate"; return; } ;;
        esac
        case "$sv" in
        quicgo | caddy) echo "quic-go 0.29 servers do not follow a client's migration" ;;
        esac
        ;;
    esac
}

# case_known CLIENT SERVER CASE: a failure between two peers that is understood (not the
# harness's): run.sh reports it as TAP "not ok ... # TODO <why>", which fails nothing.
case_known() {
    local cl="$1" sv="$2" cs="$3" qg=""
    case "$cl:$sv" in
    ngtcp2:quicgo | ngtcp2:caddy | quicgo:ngtcp2) qg=1 ;;
    esac
    case "$cs" in
    v2)
        [ -n "$qg" ] && echo "quic-go 0.29 carries transport parameters in TLS extension 0xffa5 (old drafts) for every version but v1 (internal/handshake/tls_extension_handler.go); ngtcp2 0.12 uses 0x39 for draft v2, so each finds none from the other"
        ;;
    amplificationlimit)
        case "$sv" in
        quicgo | caddy)
            case "$cl" in
            ngtcp2 | chromium | vega) echo "quic-go 0.29 checks the limit before a packet, not with it (isAmplificationLimited in internal/ackhandler/sent_packet_handler.go: bytesSent >= 3*bytesReceived), so its last datagram before validation goes over three times what it received (RFC 9000 section 8.1): 3615 bytes for one 1200-byte Initial of ngtcp2, 7549 for Chromium's 2500 (how far over depends on how the flight falls into packets, so a run may pass); quic-go's own 1252-byte Initials happen to leave room" ;;
            esac
            ;;
        esac
        ;;
    esac
}

# ---- setup -------------------------------------------------------------------------------------

# mkfile NAME SIZE: a file of random bytes in $WWW; FILES gets NAME.
mkfile() {
    head -c "$2" /dev/urandom >"$WWW/$1"
    FILES+=("$1")
}

# pick QUICK FULL: the value for this mode.
pick() {
    if [ "$FULL" = 1 ]; then echo "$2"; else echo "$1"; fi
}

# case_setup CASE CLIENT SERVER: FILES, MODE, RELAY_ARGS, the S_* and C_* switches, the address
# family, the certificate and the client's time limit.
case_setup() {
    local cs="$1" n i
    MODE=parallel FILES=() RELAY_ARGS=()
    S_RETRY=0 S_CHACHA=0 C_CHACHA=0 C_V2=0 C_KEYUPDATE=0 C_MIGRATE=0
    FAM=4 HOST_IP=127.0.0.1 CERT="$WORK/cert.pem" KEY="$WORK/key.pem" T_CLIENT=60
    # The runner's link for the network cases: 15 ms each way, 10 Mbit/s, a 25-packet queue.
    local net=(--delay-ms 15 --rate-kbps 10000 --queue-kb 37)
    case "$cs" in
    handshake) mkfile hs.bin $KiB ;;
    transfer)
        mkfile dc1.bin "$(pick $MiB $((2 * MiB)))"
        mkfile dc2.bin "$(pick $((2 * MiB)) $((3 * MiB)))"
        [ "$FULL" = 1 ] && mkfile dc3.bin $((5 * MiB))
        ;;
    multiplexing)
        n=$(pick 100 1000)
        for ((i = 0; i < n; i++)); do
            mkfile "m$i.bin" $((32 + (i * 37) % 1000))
        done
        ;;
    http3) mkfile h1.bin $((5 * KiB)); mkfile h2.bin $((10 * KiB)); mkfile h3.bin $((500 * KiB)) ;;
    chacha20) S_CHACHA=1 C_CHACHA=1; mkfile c20.bin $((100 * KiB)) ;;
    retry) S_RETRY=1; mkfile s.bin $KiB ;;
    resumption | zerortt)
        # The big certificate makes a full handshake's server flight over 10 KB and a resumed
        # one (no certificate) a few hundred bytes even with retransmissions: the relay tells
        # them apart for every peer, also those that do not log resumption.
        CERT="$WORK/bigcert.pem" KEY="$WORK/bigkey.pem"
        MODE=resume
        [ "$cs" = zerortt ] && MODE=zerortt
        n=$(pick 3 6)
        for ((i = 0; i < n; i++)); do
            mkfile "r$i.bin" $((i == 0 ? KiB : 2 * KiB))
        done
        ;;
    keyupdate) C_KEYUPDATE=1; mkfile u.bin "$(pick $((3 * MiB)) $((5 * MiB)))" ;;
    ecn) mkfile e.bin $MiB ;;
    v2) C_V2=1; mkfile v2.bin $KiB ;;
    ipv6) FAM=6 HOST_IP=::1; mkfile six1.bin $((5 * KiB)); mkfile six2.bin $((10 * KiB)) ;;
    amplificationlimit)
        CERT="$WORK/bigcert.pem" KEY="$WORK/bigkey.pem"
        RELAY_ARGS=(--amp-check --delay-ms 15)
        mkfile a.bin $((5 * KiB))
        ;;
    blackhole)
        RELAY_ARGS=("${net[@]}" --blackhole-after-ms 400 --blackhole-for-ms 1000)
        [ "$FULL" = 1 ] && RELAY_ARGS+=(--blackhole-every-ms 3000)
        mkfile b.bin "$(pick $((2 * MiB)) $((5 * MiB)))"
        ;;
    handshakeloss | handshakecorruption)
        MODE=multiconnect T_CLIENT=120
        RELAY_ARGS=("${net[@]}")
        [ "$cs" = handshakeloss ] && RELAY_ARGS+=(--loss 30) || RELAY_ARGS+=(--corrupt 30)
        n=$(pick 5 50)
        [ "$2" = chromium ] && [ "$FULL" = 0 ] && n=3
        for ((i = 0; i < n; i++)); do
            mkfile "l$i.bin" $KiB
        done
        ;;
    transferloss | transfercorruption)
        RELAY_ARGS=("${net[@]}")
        [ "$cs" = transferloss ] && RELAY_ARGS+=(--loss 2) || RELAY_ARGS+=(--corrupt 2)
        mkfile t.bin "$(pick $MiB $((2 * MiB)))"
        ;;
    longrtt)
        RELAY_ARGS=(--delay-ms 750) T_CLIENT=90
        mkfile lr1.bin $KiB
        mkfile lr2.bin $((10 * KiB))
        ;;
    rebind-port | rebind-addr)
        # The runner rebinds after 1 s and then every 5 s during 10 MiB; the default run packs
        # several rebindings into 2 MiB.
        RELAY_ARGS=("${net[@]}" "--rebind-${cs#rebind-}-after-ms" "$(pick 300 1000)"
            --rebind-every-ms "$(pick 700 5000)")
        mkfile bp.bin "$(pick $((2 * MiB)) $((10 * MiB)))"
        ;;
    connectionmigration)
        C_MIGRATE=1 RELAY_ARGS=("${net[@]}")
        mkfile cm.bin $((2 * MiB))
        ;;
    esac
    SPKI="$(spki "$CERT")"
}

# ---- checks ------------------------------------------------------------------------------------

# flow N KEY: a field of the relay's "relay: flow N" line.
flow() {
    sed -nE "s/^relay: flow $1 .*[ ]$2=([^ ]+).*/\\1/p" "$RUN_DIR/relay.out" | head -n1
}
nflows() {
    grep -c '^relay: flow [0-9]* client=' "$RUN_DIR/relay.out"
}
stat2() { # stat2 KEY: the sum of a relay counter over both directions
    echo $(($(relay_stat "$RUN_DIR/relay.out" to_server "$1") + $(relay_stat "$RUN_DIR/relay.out" to_client "$1")))
}

# want WHAT ACTUAL OP EXPECTED
want() {
    if ! test "${2:-x}" "$3" "$4" 2>/dev/null; then
        echo "$1: '${2:-}' (expected $3 $4)"
        return 1
    fi
}

# in_log FILE ERE: FILE has a line matching ERE.
in_log() {
    grep -qE -- "$2" "$1" 2>/dev/null || { echo "no /$2/ in $(basename "$1")"; return 1; }
}

# nhandshakes: the connections that completed a handshake, as the relay saw them: a client
# address to which the server sent Handshake packets and from which 1-RTT packets came. A
# client that moves to a new port (NAT rebinding, migration) adds a flow without a handshake.
nhandshakes() {
    grep '^relay: flow [0-9]* client=' "$RUN_DIR/relay.out" |
        grep -vE ' hs_bytes_to_client=0 | short_to_server=0 ' | grep -c .
}

# expect_flows N: N handshakes; and no other client address, except for Chromium, which moves
# a connection to a new port by itself when the path degrades (a blackhole, heavy loss) and may
# open a second connection while the first handshake is still lost.
expect_flows() {
    want "completed handshakes" "$(nhandshakes)" -eq "$1" || return 1
    if [ "$CLIENT" != chromium ]; then
        want "client addresses (relay flows)" "$(nflows)" -eq "$1"
    elif [ "$(nflows)" -ne "$1" ]; then
        echo "note: Chromium used $(nflows) client addresses for $1 connections"
    fi
}

# all_versions V: every flow's last long-header version from the server was V.
all_versions() {
    local n i v
    n="$(nflows)"
    for ((i = 1; i <= n; i++)); do
        v="$(flow "$i" version)"
        [ "$v" = "$1" ] || [ "$v" = 0x00000000 ] || { echo "flow $i: version $v, expected $1"; return 1; }
    done
}

# resumed_handshake: the second connection's server Handshake bytes are under a tenth of the
# first's, which carried a certificate of over 10 KB: no certificate, a resumed TLS session
# (RFC 8446 section 2.2).
resumed_handshake() {
    local a b
    a="$(flow 1 hs_bytes_to_client)"
    b="$(flow 2 hs_bytes_to_client)"
    echo "server Handshake bytes: first connection $a, second $b"
    want "first handshake bytes (the big certificate)" "${a:-0}" -gt 9000 &&
        want "second handshake bytes x10" $((${b:-0} * 10)) -lt "${a:-0}"
}

case_check() {
    local cs="$1" cl="$2" sv="$3" c="$RUN_DIR/client.log" s="$RUN_DIR/server.log"
    local files=${#FILES[@]} CLIENT="$2"
    case "$MODE" in
    parallel)
        case "$cs" in
        connectionmigration) want "completed handshakes" "$(nhandshakes)" -eq 1 || return 1 ;;
        *) expect_flows 1 || return 1 ;;
        esac
        ;;
    multiconnect) expect_flows "$files" || return 1 ;;
    resume | zerortt) expect_flows 2 || return 1 ;;
    esac
    [ "$cs" = v2 ] || all_versions 0x00000001 || return 1
    case "$cs" in
    chacha20)
        grep -qE 'Negotiated cipher suite is CHACHA20-POLY1305|^conn: .*cipher=0x1303|^\* QUIC: .*cipher TLS_CHACHA20_POLY1305_SHA256' "$c" "$s" ||
            { echo "no peer reported ChaCha20-Poly1305"; return 1; }
        ;;
    retry) want "Retry packets to the client" "$(flow 1 retry_to_client)" -ge 1 ;;
    resumption | zerortt)
        resumed_handshake || return 1
        if [ "$cs" = resumption ]; then
            want "0-RTT packets on the second connection" "$(flow 2 0rtt_to_server)" -eq 0 || return 1
        else
            want "0-RTT packets on the second connection" "$(flow 2 0rtt_to_server)" -gt 0 || return 1
            ! grep -q 'Early data was rejected' "$c" || { echo "the server rejected 0-RTT"; return 1; }
            [ "$cl" != quicgo ] || in_log "$c" '^conn: role=client resumed=true 0rtt=true' || return 1
            [ "$sv" != quicgo ] || in_log "$s" '^conn: role=server resumed=true 0rtt=true' || return 1
        fi
        [ "$cl" != quicgo ] || in_log "$c" '^conn: role=client resumed=true' || return 1
        [ "$sv" != quicgo ] || in_log "$s" '^conn: role=server resumed=true' || return 1
        ;;
    keyupdate)
        case "$cl" in
        ngtcp2) in_log "$c" 'Initiate key update' || return 1 ;;
        quicgo) in_log "$c" '^trace: role=client .*key_updates_local=[1-9]' || return 1 ;;
        esac
        case "$sv" in
        ngtcp2) in_log "$s" 'type=1RTT k=1' || return 1 ;;
        quicgo) in_log "$s" '^trace: role=server .*key_updates_remote=[1-9]' || return 1 ;;
        esac
        ;;
    ecn)
        local up down
        up=$(($(relay_stat "$RUN_DIR/relay.out" to_server ecn_ect0) + $(relay_stat "$RUN_DIR/relay.out" to_server ecn_ect1)))
        down=$(($(relay_stat "$RUN_DIR/relay.out" to_client ecn_ect0) + $(relay_stat "$RUN_DIR/relay.out" to_client ecn_ect1)))
        want "ECT-marked datagrams to the server" "$up" -gt 0 &&
            want "ECT-marked datagrams to the client" "$down" -gt 0 || return 1
        [ "$sv" != ngtcp2 ] || in_log "$s" 'ACK\(0x03\) .*ect0=[1-9]' || return 1
        [ "$cl" != ngtcp2 ] || in_log "$c" 'ACK\(0x03\) .*ect0=[1-9]' || return 1
        ;;
    v2)
        local v=0x709a50c4
        [ "$(v2_of "$cl")" = rfc ] && v=0x6b3343cf
        all_versions "$v" && want "version of connection 1" "$(flow 1 version)" = "$v"
        ;;
    ipv6) in_log "$RUN_DIR/relay.out" '^relay: flow 1 client=\[::1\]:' ;;
    amplificationlimit)
        in_log "$RUN_DIR/relay.out" '^relay: flow 1 .* amp=ok' || return 1
        # The certificate was sent in the end, so the limit did hold the server back.
        want "server Handshake bytes (the big certificate)" "$(flow 1 hs_bytes_to_client)" -gt 9000
        ;;
    blackhole)
        want "blackholed to the server" "$(relay_stat "$RUN_DIR/relay.out" to_server blackhole)" -gt 0 &&
            want "blackholed to the client" "$(relay_stat "$RUN_DIR/relay.out" to_client blackhole)" -gt 0
        ;;
    handshakeloss | transferloss) want "datagrams lost" "$(stat2 loss)" -gt 0 ;;
    handshakecorruption | transfercorruption) want "datagrams corrupted" "$(stat2 corrupted)" -gt 0 ;;
    longrtt) want "datagrams delayed" "$(stat2 delayed)" -gt 0 ;;
    rebind-port | rebind-addr)
        # The server followed: it sent to a binding after the first one (the old one is dead).
        local b answered
        b="$(flow 1 bindings)"
        echo "bindings (address/datagrams from the server): $b"
        answered="$(tr ',' '\n' <<<"$b" | tail -n +2 | awk -F/ '$2 > 5' | grep -c .)"
        want "rebindings" "$(tr ',' '\n' <<<"$b" | wc -l)" -ge 2 &&
            want "new bindings the server sent to" "$answered" -ge 1 || return 1
        if [ "$cs" = rebind-addr ]; then
            tr ',' '\n' <<<"$b" | tail -n +2 | awk -F/ '$2 > 5' | grep -q '^127\.0\.0\.2:' ||
                { echo "the server never sent to 127.0.0.2"; return 1; }
        fi
        [ "$sv" != ngtcp2 ] || in_log "$s" 'PATH_CHALLENGE' || return 1
        ;;
    connectionmigration)
        want "connections seen (client addresses)" "$(nflows)" -ge 2 &&
            want "datagrams to the client's new address" "$(flow "$(nflows)" to_client | cut -d/ -f2)" -gt 5
        ;;
    esac
}

# ---- the matrix --------------------------------------------------------------------------------

# matrix_md RESULTS: a Markdown table, one row per client -> server pair, one column per case
# (the runner's abbreviations), with the reasons for skips as numbered notes.
matrix_md() {
    command -p python3 - "$1" <<'PY'
import sys
abbr = [("handshake", "H"), ("transfer", "DC"), ("multiplexing", "M"), ("http3", "3"),
        ("chacha20", "C20"), ("retry", "S"), ("resumption", "R"), ("zerortt", "Z"),
        ("keyupdate", "U"), ("ecn", "E"), ("v2", "V2"), ("ipv6", "6"),
        ("amplificationlimit", "A"), ("blackhole", "B"), ("handshakeloss", "L1"),
        ("transferloss", "L2"), ("handshakecorruption", "C1"), ("transfercorruption", "C2"),
        ("longrtt", "LR"), ("rebind-port", "BP"), ("rebind-addr", "BA"),
        ("connectionmigration", "CM")]
rows, cases, notes = {}, set(), []
for line in open(sys.argv[1]):
    cl, sv, cs, res, why = (line.rstrip("\n").split("\t") + [""])[:5]
    cases.add(cs)
    cell = {"pass": "✓", "fail": "✗", "known": "✗"}.get(res, "–")
    if res != "pass":
        # "not built yet" reasons are one note; others are numbered by text.
        key = why if not why.startswith("not built yet") else "not built yet: vega's HTTP/3 (issue 13) is pending"
        if key not in notes:
            notes.append(key)
        cell += "<sup>%d</sup>" % (notes.index(key) + 1)
    rows.setdefault((cl, sv), {})[cs] = cell
cols = [(c, a) for c, a in abbr if c in cases]
print("| client → server | " + " | ".join(a for _, a in cols) + " |")
print("|---|" + "---|" * len(cols))
for (cl, sv), r in rows.items():
    print("| %s → %s | %s |" % (cl, sv, " | ".join(r.get(c, "") for c, _ in cols)))
print()
print("✓ passed, ✗ failed (with a note: understood, see below), – not run (the note says why). " + ", ".join("%s %s" % (a, c) for c, a in cols) + ".")
print()
for i, n in enumerate(notes, 1):
    print("%d. %s" % (i, n))
PY
}
