#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# wrk (Debian's) against vega-serve: a short keep-alive run and a pipelined one (wrk's Lua
# request hook sends 8 requests per write); no socket errors, no non-2xx answers.
# Usage: interop/http/wrk.sh [BUILD_DIR]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v wrk >/dev/null || skip_all "wrk is not installed"

ROOT="$WORK/site"
mkdir -p "$ROOT"
head -c 1024 /dev/urandom >"$ROOT/1k.bin"
cat >"$WORK/pipeline.lua" <<'LUA'
init = function(args)
   local r = {}
   for i = 1, 8 do r[i] = wrk.format(nil, "/1k.bin") end
   req = table.concat(r)
end
request = function() return req end
LUA

# run_wrk ARGS...: a 2 s run; fails on socket errors, non-2xx responses or no requests.
run_wrk() {
    local out
    out="$(timeout 30 wrk -t1 -c16 -d2s "$@" 2>&1)" || { echo "$out"; return 1; }
    echo "$out"
    grep -q 'Socket errors' <<<"$out" && return 1
    grep -q 'Non-2xx' <<<"$out" && return 1
    awk '/requests in/ { exit !($1 > 100) }' <<<"$out"
}

start_vega_serve "$ROOT" || exit 1
check "wrk: keep-alive, 16 connections" run_wrk "http://127.0.0.1:$SERVE_PORT/1k.bin"
check "wrk: pipelined, depth 8" run_wrk -s "$WORK/pipeline.lua" "http://127.0.0.1:$SERVE_PORT/1k.bin"
finish
