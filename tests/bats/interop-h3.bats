#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# HTTP/3 interop (interop/h3/): the impairment relay's own tests, then run.sh's quick subset of
# the QUIC interop runner's cases between vega (vega-curl, vega-serve) and ngtcp2 0.12,
# quic-go 0.29 (built offline from Debian's sources into the build folder), Caddy 2.6 and
# headless Chromium. The full matrix is `interop/h3/run.sh --full` by hand (docs/INTEROP.md).
# Scripts print TAP; 77 means skipped.

load helpers

h3() {
    local secs="$1" script="$2"
    shift 2
    run timeout "$secs" "$VEGA_REPO_ROOT/interop/h3/$script" "$(vega_build_dir)" "$@"
    echo "$output"
    if [ "$status" -eq 77 ]; then
        skip "$(head -n1 <<<"$output")"
    fi
    [ "$status" -eq 0 ]
}

@test "interop h3: the impairment relay (self-test, seeded runs against a UDP echo)" {
    h3 180 relay-test.sh
}

@test "interop h3: vega-curl and vega-serve against ngtcp2, quic-go, Caddy and Chromium (quick subset)" {
    h3 600 run.sh --quick
}
