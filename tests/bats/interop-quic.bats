#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The QUIC interop script (interop/quic/) against ngtcp2's HTTP/3 examples from Debian's
# packages (gtlsclient, gtlsserver), both directions, through vega-quic-probe, a UDP driver of
# the sans-I/O QUIC core built from the build folder's libvega.a. The script prints TAP lines;
# without the peers it skips (exit 77).

load helpers

interop() {
    run timeout 300 "$VEGA_REPO_ROOT/interop/quic/$1.sh" "$(vega_build_dir)"
    echo "$output"
    if [ "$status" -eq 77 ]; then
        skip "$(head -n1 <<<"$output")"
    fi
    [ "$status" -eq 0 ]
}

@test "interop: vega QUIC client and server against ngtcp2 (gtlsclient, gtlsserver)" {
    interop ngtcp2
}
