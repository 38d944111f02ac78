#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The HTTP interop scripts (interop/http/) against real peers from Debian's packages: curl and
# wrk against vega-serve, vega-curl and vega-load against nginx, vega-curl against Caddy, the
# tools against each other, and headless Chromium loading a page and a listing from vega-serve
# over http and https. Each script prints TAP lines; a peer that is not installed makes its
# script skip (exit 77).

load helpers

interop() {
    run timeout 300 "$VEGA_REPO_ROOT/interop/http/$1.sh" "$(vega_build_dir)"
    echo "$output"
    if [ "$status" -eq 77 ]; then
        skip "$(head -n1 <<<"$output")"
    fi
    [ "$status" -eq 0 ]
}

@test "interop: curl against vega-serve" {
    interop curl
}

@test "interop: wrk against vega-serve (keep-alive and pipelined)" {
    interop wrk
}

@test "interop: vega-curl and vega-load against nginx" {
    interop nginx
}

@test "interop: vega-curl against Caddy" {
    interop caddy
}

@test "interop: vega-curl and vega-load against vega-serve (http and https)" {
    interop vega
}

@test "interop: headless Chromium against vega-serve (http and https)" {
    interop chromium
}
