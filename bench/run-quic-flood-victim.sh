#!/usr/bin/env bash
# An established QUIC connection through an Initial flood, on a starved machine: COPIES copies
# at once (default 14) of the attack test initial_flood_default_limits (1,500 Initials against
# the default 1,000 handshakes while a victim connection does round trips). Prints how many
# runs had the victim lose its connection to the server's idle timeout ("victim reconnected
# N") and how the runs ended. A measurement, not a test: the count depends on the machine.
# Usage: bench/run-quic-flood-victim.sh [BUILD_DIR] [COPIES] [BINARY]
set -euo pipefail
build="${1:-build}"
copies="${2:-14}"
bin="${3:-$build/tests/test_quic_ep_attack}"
bin="$(realpath "$bin")"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$copies"); do
    (cd "$build/tests" && VEGA_DRIVER=uring timeout 300 "$bin" initial_flood_default_limits \
        >"$out/$i.log" 2>&1; echo "rc $?" >>"$out/$i.log") &
done
wait
grep -ho "victim reconnected [0-9]*" "$out"/*.log | sort | uniq -c
grep -h "^rc" "$out"/*.log | sort | uniq -c
