# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers the benchmark scripts share: the usage text, the temporary folder and the background
# processes killed at exit, starting and stopping a server, reading vega-load's JSON, and a
# process's CPU time and memory.
#
# Source it after `set -u -o pipefail`. A script's usage text is its header comment: line 2 to
# the `set -u` line. stop_server works on the tpid and spid a script's start_server sets.

# usage: prints the script's header comment to stderr and exits 2.
usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

# bench_tmp: makes the temporary folder $tmp and the empty list pids (the timeout wrappers of
# background processes); at exit cleanup kills them and removes $tmp; INT and TERM exit 130.
bench_tmp() {
  tmp=$(mktemp -d)
  pids=()
  trap cleanup EXIT
  trap 'exit 130' INT TERM
}

# shellcheck disable=SC2317  # called by the trap
cleanup() {
  local p
  # only those still our own children (a pid that has been reused is not ours), and what each
  # (a timeout wrapper) runs
  for p in "${pids[@]}"; do
    if [ "$(awk '{ sub(/.*\) /, ""); print $2 }' "/proc/$p/stat" 2>/dev/null)" = $$ ]; then
      # shellcheck disable=SC2046
      kill -9 $(cat "/proc/$p/task/$p/children" 2>/dev/null) "$p" 2>/dev/null
    fi
  done
  rm -rf "$tmp"
}

# next_port: moves port on to the next TCP port no socket uses, in any state (a stopped server's
# shards or workers may hold theirs a moment longer; connections closed by the thousand leave
# TIME_WAIT ones) and sets sport to it.
next_port() {
  port=$((port + 1))
  while ss -Htan "sport = :$port" 2>/dev/null | grep -q .; do port=$((port + 1)); done
  sport=$port
}

# launch_server ERRFILE CMD...: runs CMD (a server, or a wrapper such as taskset or env that
# execs it) in the background under timeout, stderr to ERRFILE, and waits (20 s at most) until
# it listens on TCP port $sport. Sets tpid (the timeout wrapper, added to pids) and spid (its
# child: the server). Returns 1 when it exits or never listens.
launch_server() {
  local err=$1 i
  shift
  timeout -k 2 3000 "$@" >/dev/null 2>"$err" &
  tpid=$!
  pids+=("$tpid")
  spid=
  for ((i = 0; i < 400; i++)); do
    [ -z "$spid" ] && spid=$(awk '{ print $1 }' "/proc/$tpid/task/$tpid/children" 2>/dev/null)
    if [ -n "$spid" ] && ss -Hltn "sport = :$sport" 2>/dev/null | grep -q .; then return 0; fi
    kill -0 "$tpid" 2>/dev/null || break
    sleep 0.05
  done
  return 1
}

# vega_load_summary: reads `vega-load --json` on stdin and prints "requests seconds errors"
# (errors: failed requests and answers that are not 2xx).
vega_load_summary() {
  command -p python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
errs = j.get("errors", 0)
if isinstance(errs, dict): errs = errs.get("total", 0)
bad = sum(v for k, v in j.get("status", {}).items() if not k.startswith("2"))
print(j["requests"], j.get("duration_s", 0), errs + bad)'
}

# stop_server: SIGTERM to tpid, then SIGKILL to it and spid after 3 s. Sets src (the server's
# exit status; 0, or 143/-15 for the SIGTERM, are normal).
# shellcheck disable=SC2154  # tpid and spid come from the script's start_server
stop_server() {
  kill "$tpid" 2>/dev/null
  local i
  for ((i = 0; i < 60; i++)); do
    kill -0 "$tpid" 2>/dev/null || break
    sleep 0.05
  done
  kill -9 "$tpid" "$spid" 2>/dev/null
  wait "$tpid" 2>/dev/null
  # shellcheck disable=SC2034  # not every script reads it
  src=$?
}

# cpu_ticks PID: utime + stime (all threads, in clock ticks); fields 14 and 15 of /proc/PID/stat,
# counted after the ") " that ends the command name.
cpu_ticks() {
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  awk '{ print $12 + $13 }' <<<"$s"
}

# rss_kb PID: the process's resident memory (VmRSS) in KiB.
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# anon_kb PID: its resident anonymous memory (RssAnon) in KiB: the heap, stacks and pools, what
# grows when something leaks (VmRSS adds the program's and libraries' file pages, which grow as
# more of their code runs).
anon_kb() { awk '/^RssAnon:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
