#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Issue 18's differential test: every row of interop/curl-diff/table.txt is run with Debian's
# curl and with vega-curl against the same local servers (vega-serve over http and https,
# vega-curl-flags.py over TCP and a Unix socket), comparing exit codes, stdout (body and -w) and
# the files written. A row that differs must carry a written reason. Skipped without curl.

load helpers

diff_run() {
    local py
    py="$(command -pv python3)" # Debian's python3 (the system one), as the other tests use
    run timeout 240 "$py" "$VEGA_REPO_ROOT/interop/curl-diff/run.py" "$(vega_build_dir)" "$@"
    echo "$output"
    if [ "$status" -eq 77 ]; then
        skip "$(head -n1 <<<"$output")"
    fi
}

@test "curl-diff: every row agrees with curl 7.88 or says why not" {
    diff_run -v
    [ "$status" -eq 0 ]
    # the table keeps issue 18's size: at least 150 rows ran
    [ "$(grep -c '^ok ' <<<"$output")" -ge 150 ]
}

@test "curl-diff: the runner fails a difference without a reason and a reason without one" {
    local t="$BATS_TEST_TMPDIR/table.txt"
    # %{scheme} differs (HTTP against http), -s agrees
    printf '%s\n' 'differs | - | -s -o /dev/null -w %{scheme} {S}/f.txt' \
        'stale | - | -s {S}/f.txt | no real difference here' \
        'allowed | - | -s -o /dev/null -w %{scheme} {S}/f.txt | the scheme case' \
        'agrees | - | -s {S}/f.txt' >"$t"
    diff_run --table "$t"
    [ "$status" -eq 1 ]
    grep -q '^not ok 1 - differs (line 1): differs from curl without a reason' <<<"$output"
    grep -q '^not ok 2 - stale (line 2): agrees with curl but carries a reason' <<<"$output"
    grep -q '^ok 3 - allowed (line 3) # allowed: the scheme case' <<<"$output"
    grep -q '^ok 4 - agrees (line 4)$' <<<"$output"
}
