# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers the benchmark scripts share: the usage text, the temporary folder and the background
# processes killed at exit, stopping a server, and a process's CPU time and memory.
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
