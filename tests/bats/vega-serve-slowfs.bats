#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-serve with a slow or stalled disk: a FUSE file system (bench/slowfs) whose opens of
# "stall*" files wait for a gate file. With one worker, a request stuck on that disk must not
# hold up the other connections (file I/O runs as io_uring operations or on the blocking pool,
# never on the worker thread); released, it completes. And the access log: buffered, written by
# a task, every line kept at a clean stop; a log file that stops accepting bytes makes lines
# drop and be counted, never requests wait. Loopback only, ephemeral ports.

load helpers

setup_file() {
    SERVE="$(vega_bin vega-serve)"
    SLOWFS="$(vega_build_dir)/bench/slowfs/slowfs"
    export SERVE SLOWFS
}

setup() {
    T="$BATS_TEST_TMPDIR"
    MNT=""
}

teardown() {
    stop_bg_all
    if [ -n "$MNT" ]; then
        fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
    fi
}

c() {
    curl -sS "$@"
}

# mount_slowfs BACKING MOUNTPOINT ARGS...: mounts slowfs (skips the test where FUSE cannot).
mount_slowfs() {
    local back="$1" mnt="$2" i
    shift 2
    [ -x "$SLOWFS" ] || skip "slowfs not built (libfuse3-dev missing at configure time)"
    [ -c /dev/fuse ] || skip "no /dev/fuse"
    command -v fusermount3 >/dev/null || skip "no fusermount3 (Debian: fuse3)"
    start_bg "$T/slowfs.log" "$SLOWFS" "$@" "$back" "$mnt"
    MNT="$mnt"
    for ((i = 0; i < 200; i++)); do
        grep -qs " $mnt fuse" /proc/mounts && return 0
        kill -0 "$BG_PID" 2>/dev/null || break
        sleep 0.05
    done
    skip "cannot mount FUSE here: $(cat "$T/slowfs.log")"
}

# start_serve ARGS...: vega-serve on port 0; sets SPID, SLOG, U.
start_serve() {
    SLOG="$T/serve.$RANDOM.log"
    start_bg "$SLOG" "$SERVE" -p 0 "$@"
    SPID=$BG_PID
    wait_for_line "$SLOG" 'listening on' 10
    local port
    port="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$SLOG" | head -n1)"
    U="http://127.0.0.1:$port"
}

# A tree with local files and a slowfs mount at www/slow: slow/stall-me.txt waits for the gate.
make_tree() {
    mkdir -p "$T/www/slow" "$T/back"
    printf 'hot file\n' >"$T/www/hot.txt"
    printf 'other file\n' >"$T/www/other.txt"
    head -c 200000 /dev/urandom >"$T/www/large.bin"
    printf 'stalled file\n' >"$T/back/stall-me.txt"
    printf 'fine file\n' >"$T/back/fine.txt"
    # larger than a send piece (256 KiB): on FUSE it is read by the ring, not sendfile
    head -c 600001 /dev/urandom >"$T/back/big.bin"
    mount_slowfs "$T/back" "$T/www/slow" --gate "$T/gate" --stall stall
}

stall_case() {
    local driver="$1"
    make_tree
    start_serve --workers 1 --driver "$driver" "$T/www"
    if grep -q 'unavailable\|not available' "$SLOG"; then
        skip "driver $driver unavailable here"
    fi
    [ "$(c --max-time 10 "$U/hot.txt")" = "hot file" ] # now in the cache
    # The stalled request, on its own connection.
    (curl -sS --max-time 60 -o "$T/stalled.out" "$U/slow/stall-me.txt" 2>"$T/stalled.err" 3>&- &
        echo $! >"$T/stalled.pid")
    local i
    for ((i = 0; i < 200; i++)); do
        [ -e "$T/gate.entered" ] && break
        sleep 0.05
    done
    [ -e "$T/gate.entered" ] # the request reached the disk and waits there
    # Meanwhile, on other connections: a cached file, a file read from the local disk, a
    # larger one (sendfile), a file of the same slow mount that is not held. The bound only
    # turns a hang into a failure: before, these waited for the gate.
    [ "$(c --max-time 10 "$U/hot.txt")" = "hot file" ]
    [ "$(c --max-time 10 "$U/other.txt")" = "other file" ]
    c --max-time 10 -o "$T/large.out" "$U/large.bin"
    cmp "$T/large.out" "$T/www/large.bin"
    [ "$(c --max-time 10 "$U/slow/fine.txt")" = "fine file" ]
    c --max-time 10 -o "$T/big.out" "$U/slow/big.bin"
    cmp "$T/big.out" "$T/back/big.bin"
    c --max-time 10 -r 300000-599999 -o "$T/part.out" "$U/slow/big.bin"
    cmp "$T/part.out" <(tail -c +300001 "$T/back/big.bin" | head -c 300000)
    [ "$(c --max-time 10 -o /dev/null -w '%{http_code}' "$U/missing")" = 404 ]
    # still held
    kill -0 "$(cat "$T/stalled.pid")"
    [ ! -s "$T/stalled.out" ]
    touch "$T/gate"
    wait_pid_exit "$(cat "$T/stalled.pid")" 30 || true
    for ((i = 0; i < 600; i++)); do
        kill -0 "$(cat "$T/stalled.pid")" 2>/dev/null || break
        sleep 0.05
    done
    [ "$(cat "$T/stalled.out")" = "stalled file" ] || { cat "$T/stalled.err" "$SLOG" >&2; return 1; }
}

@test "a request stalled on the disk holds up no other connection (--workers 1, io_uring)" {
    stall_case uring
}

@test "a request stalled on the disk holds up no other connection (--workers 1, epoll)" {
    stall_case epoll
}

# ---- the access log ----------------------------------------------------------------------------

log_stop_case() {
    mkdir -p "$T/www"
    printf 'x\n' >"$T/www/a.txt"
    start_serve --workers 2 --driver "$1" --access-log "$T/access.log" "$T/www"
    c --max-time 60 -o /dev/null "$U/a.txt?n=[1-500]"
    kill -TERM "$SPID"
    wait_pid_exit "$SPID" 20
    [ "$BG_STATUS" -eq 0 ]
    [ "$(grep -c '"GET /a.txt?n=[0-9]* HTTP/1.1" 200 2 ' "$T/access.log")" -eq 500 ]
    # in order, within the one connection
    [ "$(sed -nE 's/.*GET \/a\.txt\?n=([0-9]+) .*/\1/p' "$T/access.log" | sort -n -c && echo sorted)" = sorted ]
}

@test "access log: a clean stop right after the requests writes every line (io_uring)" {
    log_stop_case uring
}

@test "access log: a clean stop right after the requests writes every line (epoll)" {
    log_stop_case epoll
}

@test "access log: lines reach the file within the flush interval, without a stop" {
    mkdir -p "$T/www"
    printf 'x\n' >"$T/www/a.txt"
    start_serve --access-log "$T/access.log" "$T/www"
    c --max-time 10 -o /dev/null "$U/a.txt?first"
    wait_for_line "$T/access.log" '"GET /a.txt\?first HTTP/1.1" 200 2 ' 10
}

log_drop_case() {
    local driver="$1"
    mkdir -p "$T/www"
    printf 'x\n' >"$T/www/a.txt"
    mkfifo "$T/log.fifo"
    # Held open for reading and never read: the pipe fills (64 KiB), then every write waits.
    exec {hold}<>"$T/log.fifo"
    start_serve --workers 1 --driver "$driver" --access-log "$T/log.fifo" --metrics 127.0.0.1:0 "$T/www"
    local murl n=12000
    murl="$(sed -nE 's|.*metrics on (http://[0-9.]+:[0-9]+/metrics)$|\1|p' "$SLOG" | head -n1)"
    # About 1 MiB of lines: more than the pipe and the two buffers hold.
    [ "$(c --max-time 120 -o /dev/null -w '%{http_code}\n' "$U/a.txt?n=[1-$n]" | grep -c '^200$')" -eq "$n" ]
    local dropped
    dropped="$(c --max-time 10 "$murl" | sed -nE 's/^vega_serve_access_log_dropped_total ([0-9]+)$/\1/p')"
    [ -n "$dropped" ] && [ "$dropped" -gt 0 ]
    # io_uring: the held write is timed out each second to report; a blocking-pool write
    # (epoll) cannot be, so that report comes once the write ends
    [ "$driver" = epoll ] || wait_for_line "$SLOG" 'access log: [0-9]+ lines dropped' 10
    # Drain it, stop: the lines written and the lines dropped add up to the requests.
    (exec {hold}<&- 3>&- && exec cat <"$T/log.fifo" >"$T/got.log") &
    local cpid=$!
    exec {hold}<&-
    kill -TERM "$SPID"
    wait_pid_exit "$SPID" 30
    [ "$BG_STATUS" -eq 0 ]
    wait_pid_exit "$cpid" 30
    local total written
    total="$(sed -nE 's/.*lines dropped \(([0-9]+) in all\).*/\1/p' "$SLOG" | tail -n1)"
    written="$(grep -c '"GET /a.txt?n=' "$T/got.log")"
    echo "written $written dropped $total (metrics said $dropped before the stop)"
    [ $((written + total)) -eq "$n" ]
    [ "$total" -ge "$dropped" ]
}

@test "access log: a log that stops taking bytes drops lines and counts them; requests go on (io_uring)" {
    log_drop_case uring
}

@test "access log: a log that stops taking bytes drops lines and counts them; requests go on (epoll)" {
    log_drop_case epoll
}

# metric NAME: the value of the runtime gauge NAME from --metrics ($MURL).
metric() {
    c --max-time 10 "$MURL" | sed -nE "s/^$1 ([0-9]+)\$/\\1/p"
}

# wait_metric NAME VALUE: waits (10 s at most) until the gauge NAME reads VALUE.
wait_metric() {
    local i
    for ((i = 0; i < 200; i++)); do
        [ "$(metric "$1")" = "$2" ] && return 0
        sleep 0.05
    done
    echo "$1 never reached $2 (last: $(metric "$1"))" >&2
    return 1
}

@test "a full blocking pool answers 503 with Retry-After, and the server recovers (epoll)" {
    # Under epoll every open and stat is a blocking-pool job. One thread, one queued job: a
    # stalled open holds the thread, a second request's open waits in the queue, a third finds
    # the queue full.
    make_tree
    printf 'second stall\n' >"$T/back/stall-two.txt"
    start_serve --workers 1 --driver epoll --blocking-threads 1 --blocking-queue 1 \
        --metrics 127.0.0.1:0 "$T/www"
    MURL="$(sed -nE 's|.*metrics on (http://[0-9.]+:[0-9]+/metrics)$|\1|p' "$SLOG" | head -n1)"
    [ -n "$MURL" ]
    [ "$(c --max-time 10 "$U/hot.txt")" = "hot file" ] # now in the cache: needs no pool
    # The two held requests retry a 503 (curl honours Retry-After): once released they still
    # share one thread and one queue slot, so one's later fstat or read may find the slot
    # taken by the other's, and is refused the same way.
    (curl -sS --max-time 60 --retry 5 -o "$T/one.out" "$U/slow/stall-me.txt" 2>"$T/one.err" 3>&- &
        echo $! >"$T/one.pid")
    local i
    for ((i = 0; i < 200; i++)); do
        [ -e "$T/gate.entered" ] && break
        sleep 0.05
    done
    [ -e "$T/gate.entered" ] # the first open holds the pool's one thread
    [ "$(metric vega_rt_blocking_threads)" = 1 ]
    [ "$(metric vega_rt_blocking_queue_depth)" = 0 ]
    (curl -sS --max-time 60 --retry 5 -o "$T/two.out" "$U/slow/stall-two.txt" 2>"$T/two.err" 3>&- &
        echo $! >"$T/two.pid")
    wait_metric vega_rt_blocking_queue_depth 1 # the second open waits in the queue
    # The queue is full: a request that needs the pool is refused at once, with a hint.
    c --max-time 10 -D "$T/h3" -o "$T/three.out" "$U/other.txt"
    head -n1 "$T/h3" | grep -q '^HTTP/1.1 503'
    grep -qi '^Retry-After: 1' "$T/h3"
    grep -q '^503 Service Unavailable$' "$T/three.out"
    # So is a folder (its open is a job too); a cached file is not (no job at all).
    [ "$(c --max-time 10 -o /dev/null -w '%{http_code}' "$U/")" = 503 ]
    [ "$(c --max-time 10 "$U/hot.txt")" = "hot file" ]
    # Nothing was queued by the refusals, and the two held requests are still waiting.
    [ "$(metric vega_rt_blocking_queue_depth)" = 1 ]
    kill -0 "$(cat "$T/one.pid")"
    kill -0 "$(cat "$T/two.pid")"
    # Released: both held requests complete, in full (never a 500), and the pool takes work
    # again.
    touch "$T/gate"
    wait_pid_exit "$(cat "$T/one.pid")" 30 || true
    wait_pid_exit "$(cat "$T/two.pid")" 30 || true
    for ((i = 0; i < 600; i++)); do
        kill -0 "$(cat "$T/one.pid")" 2>/dev/null || kill -0 "$(cat "$T/two.pid")" 2>/dev/null ||
            break
        sleep 0.05
    done
    [ "$(cat "$T/one.out")" = "stalled file" ] || { cat "$T/one.out" "$T/one.err" "$SLOG" >&2; return 1; }
    [ "$(cat "$T/two.out")" = "second stall" ] || { cat "$T/two.out" "$T/two.err" "$SLOG" >&2; return 1; }
    [ "$(c --max-time 10 "$U/other.txt")" = "other file" ]
    [ "$(c --max-time 10 -o /dev/null -w '%{http_code}' "$U/")" = 200 ]
    [ "$(metric vega_rt_blocking_queue_depth)" = 0 ]
}
