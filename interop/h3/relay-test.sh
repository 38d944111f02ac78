#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tests of the impairment relay (relay.c): its self-test of the decisions, then seeded runs
# between udptool.py's sender and echo server on loopback. Counts are checked against the
# relay's own stats and binomial bounds; no check depends on how long anything took. A failed
# check is tried twice more (the kernel may drop at a socket on a loaded machine) and says so.
#
# Usage: interop/h3/relay-test.sh [BUILD_DIR]   (exit 0 all passed, 1 a failure, 2 no libvega.a)
# shellcheck source=interop/h3/lib.sh
source "$(dirname "$0")/lib.sh"

command -p python3 -c '' 2>/dev/null || skip_all "python3 is missing"
build_relay
UDPTOOL="$H3_DIR/udptool.py"
# shellcheck disable=SC2034 # read by start_relay (lib.sh)
RELAY_TIMEOUT=20

# echo_up [ARGS...]: the echo server on a free port (EPORT).
echo_up() {
    rm -f "$WORK/eport"
    command -p python3 "$UDPTOOL" echo "$WORK/eport" --secs 20 "$@" 2>"$WORK/echo.err" &
    IOP_PIDS+=($!)
    local i
    for ((i = 0; i < 100; i++)); do
        [ -s "$WORK/eport" ] && EPORT="$(cat "$WORK/eport")" && return 0
        sleep 0.05
    done
    echo "echo server did not start"
    return 1
}

# through ECHO_ARGS -- RELAY_ARGS -- SEND_ARGS: echo, relay, send; the relay's output in
# $WORK/relay.out and the sender's JSON in $WORK/send.json.
through() {
    local e=() r=() host=127.0.0.1
    while [ "$1" != -- ]; do e+=("$1"); shift; done
    shift
    while [ "$1" != -- ]; do r+=("$1"); shift; done
    shift
    [[ " ${e[*]} " == *" --family 6 "* ]] && host=::1
    echo_up "${e[@]}" || return 1
    local up="$host:$EPORT"
    [ "$host" = ::1 ] && up="[::1]:$EPORT"
    start_relay "$WORK/relay.out" --upstream "$up" "${r[@]}" || return 1
    command -p python3 "$UDPTOOL" send "$host" "$RELAY_PORT" "$@" >"$WORK/send.json" || return 1
    stop_relay
    iop_cleanup
}

# jq_py EXPR: evaluates a Python expression over the sender's JSON (d).
jq_py() {
    command -p python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
        "$WORK/send.json" "$1"
}

# check NAME FN: runs FN with its output captured. A failure is tried twice more: on a loaded
# machine the kernel may drop a datagram at a socket whose reader was not scheduled in time
# (the exact counts assume none was), and the line says when a retry was needed.
check() {
    local name="$1" try ok=0
    shift
    for try in 1 2 3; do
        if "$@" >"$WORK/check.out" 2>&1; then
            ok=1
            break
        fi
        iop_cleanup
    done
    if [ "$ok" = 1 ]; then
        [ "$try" -gt 1 ] && name="$name (passed on try $try)"
        tap_ok "$name"
    else
        { echo "--- relay:"; cat "$WORK/relay.out" 2>/dev/null; echo "--- sender:"; cut -c1-600 "$WORK/send.json" 2>/dev/null; } >>"$WORK/check.out"
        tap_fail "$name" "$WORK/check.out"
    fi
    iop_cleanup
}

# expect WHAT ACTUAL OP WANT: a numeric comparison that says what it compared.
expect() {
    if ! test "$2" "$3" "$4" 2>/dev/null; then
        echo "$1: $2, expected $3 $4"
        return 1
    fi
}

t_self() { "$RELAY" --self-test; }

t_clean() {
    through -- --seed 1 -- 300 || return 1
    expect received "$(jq_py 'd["received"]')" -eq 300 &&
        expect "in order" "$(jq_py 'int(d["seqs"] == list(range(300)))')" -eq 1 &&
        expect "to_server fwd" "$(relay_stat "$WORK/relay.out" to_server fwd)" -eq 300 &&
        expect "to_client fwd" "$(relay_stat "$WORK/relay.out" to_client fwd)" -eq 300 &&
        grep -q '^relay: flow 1 client=127.0.0.1:' "$WORK/relay.out"
}

# 20% loss each way over 500 datagrams: to_server drops 100 +- 40 (4.5 sd), what the echo got
# back is what the relay forwarded, and the same seed makes the same decisions.
t_loss_seeded() {
    local a b
    through -- --seed 11 --loss 20 -- 500 --gap-ms 1 || return 1
    a="$(grep '^relay: stats' "$WORK/relay.out")"
    expect "to_server loss" "$(relay_stat "$WORK/relay.out" to_server loss)" -ge 60 &&
        expect "to_server loss" "$(relay_stat "$WORK/relay.out" to_server loss)" -le 140 &&
        expect received "$(jq_py 'd["received"]')" -eq "$(relay_stat "$WORK/relay.out" to_client fwd)" || return 1
    through -- --seed 11 --loss 20 -- 500 --gap-ms 1 || return 1
    b="$(grep '^relay: stats' "$WORK/relay.out")"
    [ "$a" = "$b" ] || { printf 'same seed, different stats:\n%s\n%s\n' "$a" "$b"; return 1; }
    through -- --seed 12 --loss 20 -- 500 --gap-ms 1 || return 1
    b="$(grep '^relay: stats' "$WORK/relay.out")"
    [ "$a" != "$b" ] || { echo "seeds 11 and 12 made the same decisions"; return 1; }
}

t_drop_first() {
    through -- --seed 2 --to-server-drop-first 7 -- 100 || return 1
    expect "first seq back" "$(jq_py 'min(d["seqs"])')" -eq 7 &&
        expect received "$(jq_py 'd["received"]')" -eq 93 &&
        expect "to_server first" "$(relay_stat "$WORK/relay.out" to_server first)" -eq 7
}

# Every datagram to the server gets one bit flipped, within its payload; none going back.
t_corrupt() {
    through -- --seed 3 --to-server-corrupt 100 -- 200 || return 1
    expect received "$(jq_py 'd["received"]')" -eq 200 &&
        expect "replies with one bit flipped" "$(jq_py 'sum(1 for f in d["flipped"] if f == 1)')" -eq 200 &&
        expect "to_server corrupted" "$(relay_stat "$WORK/relay.out" to_server corrupted)" -eq 200 &&
        expect "to_client corrupted" "$(relay_stat "$WORK/relay.out" to_client corrupted)" -eq 0
}

t_dup() {
    through -- --seed 4 --to-client-dup 100 -- 150 || return 1
    expect received "$(jq_py 'd["received"]')" -eq 300 &&
        expect "distinct" "$(jq_py 'len(set(d["seqs"]))')" -eq 150 &&
        expect "to_client dup" "$(relay_stat "$WORK/relay.out" to_client dup)" -eq 150
}

# 30% held back 20 ms more: all arrive, some out of order.
t_reorder() {
    through -- --seed 5 --to-server-reorder 30 --reorder-ms 20 -- 300 --gap-ms 1 || return 1
    expect received "$(jq_py 'd["received"]')" -eq 300 &&
        expect "out of order" "$(jq_py 'sum(1 for a, b in zip(d["seqs"], d["seqs"][1:]) if b < a)')" -gt 0 &&
        expect reordered "$(relay_stat "$WORK/relay.out" to_server reordered)" -ge 50
}

t_jitter_keep_order() {
    through -- --seed 6 --jitter-ms 15 --jitter-keep-order -- 300 --gap-ms 1 || return 1
    expect received "$(jq_py 'd["received"]')" -eq 300 &&
        expect "in order" "$(jq_py 'int(d["seqs"] == list(range(300)))')" -eq 1 &&
        expect delayed "$(relay_stat "$WORK/relay.out" to_server delayed)" -gt 0
}

# The echo reports the source it saw: a second port (then a second address) after the rebind;
# what the server sends to the old binding is dropped as stale.
t_rebind_port() {
    through --addr -- --seed 7 --rebind-port-after-ms 150 -- 300 --gap-ms 2 --addr || return 1
    expect sources "$(jq_py 'len(d["sources"])')" -eq 2 &&
        expect "same address" "$(jq_py 'len(set(s.split()[0] for s in d["sources"]))')" -eq 1 &&
        grep -qE '^relay: flow 1 rebound 127\.0\.0\.1:[0-9]+ -> 127\.0\.0\.1:[0-9]+' "$WORK/relay.out"
}

t_rebind_addr() {
    through --addr -- --seed 8 --rebind-addr-after-ms 150 -- 300 --gap-ms 2 --addr || return 1
    expect sources "$(jq_py 'len(d["sources"])')" -eq 2 &&
        expect "new address" "$(jq_py 'int(d["sources"][-1].startswith("127.0.0.2 "))')" -eq 1
}

t_blackhole() {
    through -- --seed 9 --blackhole-after-ms 100 --blackhole-for-ms 200 -- 400 --gap-ms 2 || return 1
    expect blackholed "$(relay_stat "$WORK/relay.out" to_server blackhole)" -gt 0 &&
        expect "last seq back" "$(jq_py 'max(d["seqs"])')" -eq 399 &&
        expect "first seq back" "$(jq_py 'min(d["seqs"])')" -eq 0
}

# 1 Mbit/s with an 8 KiB queue, 200 datagrams of 1200 bytes at once: the queue overflows.
t_rate() {
    through -- --seed 10 --to-server-rate-kbps 1000 --to-server-queue-kb 8 -- 200 --size 1200 --gap-ms 0 --wait 3 || return 1
    expect "queue drops" "$(relay_stat "$WORK/relay.out" to_server queue)" -gt 100 &&
        expect delayed "$(relay_stat "$WORK/relay.out" to_server delayed)" -gt 0 &&
        expect received "$(jq_py 'd["received"]')" -eq "$(relay_stat "$WORK/relay.out" to_server fwd)"
}

# ECT(0) marks are counted and carried both ways (the echo reports the codepoint it got).
t_ecn() {
    through --ecn -- --seed 1 -- 100 --ecn || return 1
    expect "ect0 to server" "$(relay_stat "$WORK/relay.out" to_server ecn_ect0)" -eq 100 &&
        expect "ect0 to client" "$(relay_stat "$WORK/relay.out" to_client ecn_ect0)" -eq 100 &&
        expect "echo saw ECT(0)" "$(jq_py 'sum(1 for e in d["ecn"] if e == 2)')" -eq 100
}

t_ipv6() {
    if ! command -p python3 -c 'import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).bind(("::1", 0))' 2>/dev/null; then
        echo "no ::1 here"
        return 0
    fi
    through --family 6 -- --seed 1 --loss 10 -- 200 || return 1
    expect received "$(jq_py 'd["received"]')" -eq "$(relay_stat "$WORK/relay.out" to_client fwd)" &&
        grep -q '^relay: listening on \[::1\]:' "$WORK/relay.out"
}

# A "server" answering each Initial with 4x its size breaks the limit; 2x keeps it.
t_amp() {
    through --factor 4 -- --seed 1 --amp-check -- 3 --size 1200 --quic-initial || return 1
    grep -qE '^relay: flow 1 .* amp=exceeded' "$WORK/relay.out" || { echo "4x not flagged"; return 1; }
    expect initial "$(relay_stat "$WORK/relay.out" to_server initial)" -eq 3 || return 1
    through --factor 2 -- --seed 1 --amp-check -- 3 --size 1200 --quic-initial || return 1
    grep -qE '^relay: flow 1 .* amp=ok' "$WORK/relay.out" || { echo "2x flagged"; return 1; }
}

check "relay --self-test (decisions, census, options)" t_self
check "relay: clean path, 300 datagrams both ways, in order" t_clean
check "relay: 20% loss, seeded: counts within bounds, same seed same decisions" t_loss_seeded
check "relay: --to-server-drop-first 7 drops exactly the first seven" t_drop_first
check "relay: --to-server-corrupt 100 flips exactly one bit per datagram" t_corrupt
check "relay: --to-client-dup 100 doubles every reply" t_dup
check "relay: --reorder 30 --reorder-ms 20 reorders and loses nothing" t_reorder
check "relay: --jitter-ms with --jitter-keep-order keeps the order" t_jitter_keep_order
check "relay: --rebind-port-after-ms: the server sees a new port" t_rebind_port
check "relay: --rebind-addr-after-ms: the server sees 127.0.0.2" t_rebind_addr
check "relay: --blackhole-after-ms/--blackhole-for-ms: dark, then back" t_blackhole
check "relay: --rate-kbps with a small --queue-kb: tail drops and queueing" t_rate
check "relay: ECN codepoints counted and carried" t_ecn
check "relay: IPv6 on ::1" t_ipv6
check "relay: --amp-check flags a server sending over 3x before address validation" t_amp
echo "1..$IOP_N"
echo "# $((IOP_N - IOP_FAILED)) passed, $IOP_FAILED failed"
[ "$IOP_FAILED" -eq 0 ]
