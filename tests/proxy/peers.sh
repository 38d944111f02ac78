#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real proxies on free loopback ports for the proxy client tests (tests/bats/vega-curl-proxy.bats),
# each in its own directory, stopped by pid (no leftover processes):
#   peers.sh start KIND DIR   starts KIND, prints its port; KIND is
#       danted        dante-server, SOCKS5 (and 4/4a) without auth, forwarding to 127.0.0.0/8 only
#       danted-udp    the same with UDP ASSOCIATE allowed (datagrams to and from 127.0.0.0/8)
#       danted-bind   the same with BIND allowed (the peer connecting from 127.0.0.0/8)
#       tinyproxy     HTTP proxy (CONNECT and absolute-form), no auth
#       tinyproxy-auth  the same with BasicAuth user pass (407 without it)
#       ncat          ncat --proxy-type http with --proxy-auth user:pass
#   peers.sh stop DIR         stops what start put in DIR
# The packages are in VEGA_APT_PACKAGES (scripts/common.sh): dante-server tinyproxy ncat.
set -euo pipefail

free_port() {
    command -p python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() {
    local i
    for ((i = 0; i < 200; i++)); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    echo "peers.sh: nothing listens on port $1" >&2
    return 1
}

start() {
    local kind="$1" dir="$2" port
    mkdir -p "$dir"
    port="$(free_port)"
    case "$kind" in
    danted | danted-udp | danted-bind)
        command -v danted >/dev/null || { echo "peers.sh: danted missing (dante-server)" >&2; exit 3; }
        # protocols.md §5: each keyword on its own line inside rule braces
        cat >"$dir/danted.conf" <<CONF
logoutput: $dir/danted.log
internal: 127.0.0.1 port = $port
external: 127.0.0.1
clientmethod: none
socksmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {
  from: 127.0.0.0/8 to: 0.0.0.0/0
  log: error
}
socks pass {
  from: 127.0.0.0/8 to: 127.0.0.0/8
  command: connect
  log: error
}
$([ "$kind" = danted-bind ] && printf 'socks pass {\n  from: 127.0.0.0/8 to: 0.0.0.0/0\n  command: bind\n  log: connect disconnect error\n}\nsocks pass {\n  from: 127.0.0.0/8 to: 0.0.0.0/0\n  command: bindreply\n  log: connect disconnect error\n}\n')
$([ "$kind" = danted-udp ] && printf 'socks pass {\n  from: 127.0.0.0/8 to: 0.0.0.0/0\n  command: udpassociate\n  log: connect disconnect error\n}\nsocks pass {\n  from: 127.0.0.0/8 to: 127.0.0.0/8\n  command: udpreply\n  log: connect disconnect error\n}\n')
socks block {
  from: 0.0.0.0/0 to: 0.0.0.0/0
  log: connect error
}
CONF
        # -N 1: one child process; -p: its pid file (the parent's pid: stopping it stops all)
        danted -f "$dir/danted.conf" -p "$dir/danted.pid" -N 1 -D >/dev/null 2>"$dir/danted.err"
        local i
        for ((i = 0; i < 100; i++)); do [ -s "$dir/danted.pid" ] && break; sleep 0.05; done
        cat "$dir/danted.pid" >>"$dir/pids"
        ;;
    tinyproxy | tinyproxy-auth)
        command -v tinyproxy >/dev/null || { echo "peers.sh: tinyproxy missing" >&2; exit 3; }
        {
            printf 'Port %s\nListen 127.0.0.1\nAllow 127.0.0.1\nTimeout 30\n' "$port"
            printf 'LogFile "%s/tinyproxy.log"\nLogLevel Info\nMaxClients 20\n' "$dir"
            [ "$kind" = tinyproxy-auth ] && printf 'BasicAuth user pass\n'
        } >"$dir/tinyproxy.conf"
        tinyproxy -d -c "$dir/tinyproxy.conf" >/dev/null 2>&1 3>&- </dev/null &
        echo $! >>"$dir/pids"
        ;;
    ncat)
        command -v ncat >/dev/null || { echo "peers.sh: ncat missing" >&2; exit 3; }
        ncat -l 127.0.0.1 "$port" --proxy-type http --proxy-auth user:pass -k \
            >/dev/null 2>"$dir/ncat.log" 3>&- </dev/null &
        echo $! >>"$dir/pids"
        ;;
    *)
        echo "peers.sh: unknown kind $kind" >&2
        exit 2
        ;;
    esac
    wait_port "$port"
    echo "$port"
}

stop() {
    local dir="$1" pid
    [ -f "$dir/pids" ] || return 0
    while read -r pid; do
        kill "$pid" 2>/dev/null || true
    done <"$dir/pids"
    while read -r pid; do
        local i
        for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -9 "$pid" 2>/dev/null || true
    done <"$dir/pids"
    rm -f "$dir/pids"
}

case "${1:-}" in
start) start "$2" "$3" ;;
stop) stop "$2" ;;
*)
    echo "usage: peers.sh start KIND DIR | stop DIR" >&2
    exit 2
    ;;
esac
