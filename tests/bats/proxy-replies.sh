#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs inside `unshare -n` (vega-proxy.bats): a network namespace with only loopback, where
# 192.0.2.1 has no route (ENETUNREACH), 198.51.100.0/24 an unreachable route (EHOSTUNREACH),
# 192.0.2.128/25 a route over lo with no host behind it (SYNs vanish: a connect timeout), and
# no name server answers. vega-proxy (path in $1) with --connect-timeout 300ms; the SOCKS5
# replies (socks5-replies.py) and curl's HTTP statuses for each are printed, one per line.
set -euo pipefail
PROXY="$1"
PY="$(command -p -v python3)"
DIR="$(cd "$(dirname "$0")" && pwd)"
ip link set lo up
ip route add unreachable 198.51.100.0/24
ip route add 192.0.2.128/25 dev lo
log="$(mktemp)"
"$PROXY" -l 127.0.0.1:0 --connect-timeout 300ms 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 100); do
    grep -q 'listening on' "$log" && break
    sleep 0.1
done
PX="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)"
"$PY" "$DIR/socks5-replies.py" "$PX" "1 1 192.0.2.1 80" "1 1 198.51.100.1 80" \
    "1 1 192.0.2.200 80" "1 3 nowhere.invalid 80" "1 5 x 80" "9 1 192.0.2.1 80"
for h in 192.0.2.1 198.51.100.1 192.0.2.200; do
    printf 'http %s %s\n' "$h" "$(curl -s -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$PX" "http://$h/")"
done
