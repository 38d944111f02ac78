# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers for the HTTP interop scripts: find the vega tools, start real peers (nginx, Caddy,
# vega-serve) on ephemeral loopback ports with their own temporary config, report TAP lines.
#
# Source it from a script; it sets IOP_BUILD, WORK (a temporary folder, removed at exit) and
# the functions below. The build folder is $1 of the script, else $VEGA_BUILD_DIR, else build/
# (relative paths are taken from the repository root).

# ../common.sh sets IOP_ROOT, IOP_BUILD, WORK, IOP_PIDS and defines vega_tool, iop_cleanup,
# skip_all.
IOP_AREA=http
# shellcheck source=interop/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

# check NAME CMD...: runs CMD in this shell; "ok N - NAME" or "not ok N - NAME" with its output.
check() {
    local name="$1" out rc
    shift
    IOP_N=$((IOP_N + 1))
    out="$("$@" 2>&1)"
    rc=$?
    if [ $rc -eq 0 ]; then
        echo "ok $IOP_N - $name"
    else
        echo "not ok $IOP_N - $name (exit $rc)"
        printf '%s\n' "$out" | sed 's/^/#   /' | tail -n 40
        IOP_FAILED=1
    fi
}

# finish: the script's exit status.
finish() {
    echo "1..$IOP_N"
    exit "$IOP_FAILED"
}

# free_port: a TCP port nobody listens on now (the kernel's pick for a bound, unlistened socket).
free_port() {
    command -p python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_port PORT [SECS]: waits until 127.0.0.1:PORT accepts connections.
wait_port() {
    local port="$1" secs="${2:-10}" i
    for ((i = 0; i < secs * 20; i++)); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    echo "nothing listens on 127.0.0.1:$port after ${secs}s" >&2
    return 1
}

# make_cert: a self-signed certificate for localhost / 127.0.0.1 in $WORK/cert.pem, key.pem.
make_cert() {
    [ -f "$WORK/cert.pem" ] && return 0
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$WORK/key.pem" -out "$WORK/cert.pem" >/dev/null 2>&1
}

# start_nginx ROOT [tls]: nginx (one worker, access log off) serving ROOT on a free port; sets
# NGINX_PORT. With "tls" it serves HTTPS with make_cert's certificate. Extra server-block
# directives can be given in $NGINX_EXTRA.
start_nginx() {
    local root="$1" tls="${2:-}" dir listen
    command -v nginx >/dev/null || { echo "nginx is not installed" >&2; return 1; }
    dir="$(mktemp -d "$WORK/nginx.XXXXXX")"
    mkdir -p "$dir/tmp"
    NGINX_PORT="$(free_port)"
    listen="127.0.0.1:$NGINX_PORT"
    if [ "$tls" = tls ]; then
        make_cert
        listen="$listen ssl; ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem"
    fi
    cat >"$dir/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
error_log stderr warn;
pid $dir/nginx.pid;
events { worker_connections 20000; }
http {
    access_log off;
    client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
    uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
    include /etc/nginx/mime.types;
    sendfile on; tcp_nopush on; keepalive_requests 1000000;
    server {
        listen $listen;
        root $root;
        ${NGINX_EXTRA:-}
    }
}
CONF
    nginx -c "$dir/nginx.conf" -p "$dir" 2>"$dir/error.log" &
    NGINX_PID=$!
    IOP_PIDS+=("$NGINX_PID")
    wait_port "$NGINX_PORT" || { cat "$dir/error.log" >&2; return 1; }
}

# start_caddy ROOT: Caddy's file_server for ROOT on a free port (no admin API, no automatic
# HTTPS); sets CADDY_PORT.
start_caddy() {
    local root="$1" dir
    command -v caddy >/dev/null || { echo "caddy is not installed" >&2; return 1; }
    dir="$(mktemp -d "$WORK/caddy.XXXXXX")"
    CADDY_PORT="$(free_port)"
    cat >"$dir/Caddyfile" <<CONF
{
    admin off
    auto_https off
    storage file_system $dir/data
}
http://127.0.0.1:$CADDY_PORT {
    root * $root
    ${CADDY_EXTRA:-}
    file_server browse
}
CONF
    HOME="$dir" XDG_DATA_HOME="$dir" XDG_CONFIG_HOME="$dir" \
        caddy run --config "$dir/Caddyfile" --adapter caddyfile >"$dir/caddy.log" 2>&1 &
    CADDY_PID=$!
    IOP_PIDS+=("$CADDY_PID")
    wait_port "$CADDY_PORT" 20 || { cat "$dir/caddy.log" >&2; return 1; }
}

# start_vega_serve ROOT [ARGS...]: vega-serve on a free port; sets SERVE_PORT and SERVE_LOG.
start_vega_serve() {
    local root="$1"
    shift
    SERVE_LOG="$(mktemp "$WORK/serve.XXXXXX")"
    "$(vega_tool vega-serve)" "$@" -l 127.0.0.1:0 "$root" >"$SERVE_LOG" 2>&1 &
    SERVE_PID=$!
    IOP_PIDS+=("$SERVE_PID")
    local i
    for ((i = 0; i < 200; i++)); do
        SERVE_PORT="$(sed -nE 's/.*listening on (\[[^]]*\]|[0-9.]+):([0-9]+).*/\2/p' "$SERVE_LOG" | head -n1)"
        [ -n "$SERVE_PORT" ] && return 0
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "vega-serve did not start:" >&2
    cat "$SERVE_LOG" >&2
    return 1
}
