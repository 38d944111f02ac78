#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what is missing, builds vega-echo and runs it on loopback: it checks that the server
# echoes a line, prints how to try it, and keeps serving until Ctrl-C. Without a terminal on
# stdin (scripts, CI) it stops after the check; --serve keeps it running anyway.
#
# Usage: scripts/demo.sh [--serve] [--check]      Environment: VEGA_DEMO_PORT (default 7007)
# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

serve=auto
for a in "$@"; do
    case $a in
    --serve) serve=yes ;;
    --check) serve=no ;;
    -h | --help) sed -n '3,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$a'" ;;
    esac
done
if [ "$serve" = auto ]; then
    if [ -t 0 ]; then serve=yes; else serve=no; fi
fi

PORT=${VEGA_DEMO_PORT:-7007}
HOST=127.0.0.1

ensure_deps

log "building vega-echo in build/"
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$ROOT/build" -j"$JOBS" --target vega-echo
ECHO_BIN=$ROOT/build/cli/vega-echo
[ -x "$ECHO_BIN" ] || die "no $ECHO_BIN after the build"

# A port already taken (an earlier demo still running, another service) is reported plainly.
if (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then
    die "$HOST:$PORT is already in use; stop what listens there or set VEGA_DEMO_PORT"
fi

log "starting: vega-echo -l -k $HOST $PORT"
"$ECHO_BIN" -l -k "$HOST" "$PORT" &
PID=$!
cleanup() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# Wait (up to 5 s) until it accepts connections.
for _ in $(seq 50); do
    if (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then break; fi
    kill -0 "$PID" 2>/dev/null || die "vega-echo exited before it listened"
    sleep 0.1
done

# Self-check: one line out, the same line back.
msg="hello from libvega $$"
reply=$(
    exec 3<>"/dev/tcp/$HOST/$PORT"
    printf '%s\n' "$msg" >&3
    IFS= read -r -t 5 line <&3 && printf '%s' "$line"
) || true
if [ "$reply" != "$msg" ]; then
    die "self-check failed: sent '$msg', got '${reply}'"
fi
echo "self-check: sent a line to $HOST:$PORT and got it back"

cat <<EOT

vega-echo is serving on $HOST:$PORT (pid $PID). Try it from another shell:

    echo hello | $ECHO_BIN $HOST $PORT          # vega-echo's client mode
    exec 3<>/dev/tcp/$HOST/$PORT; echo hello >&3; head -n1 <&3; exec 3>&-
    python3 -c 'import socket; s=socket.create_connection(("$HOST",$PORT)); s.sendall(b"hi\\n"); print(s.recv(64))'
    $ECHO_BIN --help

EOT

if [ "$serve" = yes ]; then
    echo "Press Ctrl-C to stop."
    wait "$PID"
else
    echo "demo.sh: ok (not a terminal: stopping the server; run with --serve to keep it up)"
fi
