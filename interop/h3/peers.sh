# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The HTTP/3 peers of run.sh, each started the same way: servers (ngtcp2's gtlsserver, the
# quic-go server, Caddy, vega-serve) serve $WWW on UDP $HOST_IP:$SRV_PORT; clients (ngtcp2's
# gtlsclient, the quic-go client, headless Chromium, vega-curl) fetch files from
# https://localhost:$CPORT/ (the relay's port) into $DL. Per-run settings come in as globals
# set by the case (S_RETRY, S_CHACHA, C_CHACHA, C_V2, C_KEYUPDATE, C_MIGRATE, MODE) and the
# run (RUN_DIR, WWW, DL, HOST_IP, CERT, KEY, T_CLIENT).

ONLY_CHACHA='NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+CHACHA20-POLY1305'

# ---- availability ----------------------------------------------------------------------------------

# peer_missing ROLE NAME: why NAME cannot play ROLE (client, server) here, or nothing.
peer_missing() {
    case "$1:$2" in
    client:ngtcp2) command -v gtlsclient >/dev/null || echo "gtlsclient missing (Debian package ngtcp2-client)" ;;
    server:ngtcp2) command -v gtlsserver >/dev/null || echo "gtlsserver missing (Debian package ngtcp2-server)" ;;
    client:quicgo | server:quicgo) [ -n "${QUICGO_WHY:-}" ] && echo "$QUICGO_WHY" ;;
    server:caddy) command -v caddy >/dev/null || echo "caddy missing (Debian package caddy)" ;;
    client:chromium) command -v chromium >/dev/null || echo "chromium missing (Debian package chromium)" ;;
    client:vega) vega_client_missing ;;
    server:vega) vega_server_missing ;;
    client:caddy) echo "Caddy is a server only" ;;
    server:chromium) echo "Chromium is a client only" ;;
    *) echo "unknown peer $2" ;;
    esac
}

# vega_client_missing / vega_server_missing: "not built yet" until vega-curl and vega-serve
# speak HTTP/3 (issue 13): vega-curl --help lists --http3-only, vega-serve --help --http3-port.
vega_client_missing() {
    local t
    t="$(vega_tool vega-curl 2>/dev/null)" || { echo "not built yet: no vega-curl under $IOP_BUILD"; return; }
    # the help text is read whole first: `grep -q` on a pipe may close it early, and the tool's
    # SIGPIPE then fails the pipeline under pipefail (an intermittent "not built yet")
    local h
    h="$("$t" --help 2>&1)"
    grep -q -- '--http3-only' <<<"$h" ||
        echo "not built yet: vega-curl has no --http3-only (HTTP/3 client pending, issue 13)"
}
vega_server_missing() {
    local t
    t="$(vega_tool vega-serve 2>/dev/null)" || { echo "not built yet: no vega-serve under $IOP_BUILD"; return; }
    local h
    h="$("$t" --help 2>&1)"
    grep -q -- '--http3-port' <<<"$h" ||
        echo "not built yet: vega-serve has no --http3-port (HTTP/3 server pending, issue 13)"
}

# vega_has TOOL FLAG: TOOL's --help mentions FLAG (optional features of the vega side).
vega_has() {
    local h
    h="$("$(vega_tool "$1")" --help 2>&1)"
    grep -q -- "$2" <<<"$h"
}

# ---- servers ---------------------------------------------------------------------------------------

# server_start NAME: starts server NAME on a free UDP port of $HOST_IP; sets SRV_PORT and
# SRV_LOG. Fails (printing the log) when it does not bind within 10 s.
server_start() {
    local name="$1"
    SRV_LOG="$RUN_DIR/server.log"
    for _ in 1 2 3; do
        SRV_PORT="$(free_udp_port "$FAM")"
        : >"$SRV_LOG"
        "server_$name" >>"$SRV_LOG" 2>&1 </dev/null &
        IOP_PIDS+=($!)
        if wait_udp "$SRV_PORT" 10 >/dev/null; then
            # Caddy binds its UDP socket a moment before it serves; let it settle.
            [ "$name" = caddy ] && sleep 0.3
            return 0
        fi
        iop_cleanup
    done
    echo "server $name did not bind UDP port $SRV_PORT:"
    tail -n 20 "$SRV_LOG"
    return 1
}

server_ngtcp2() {
    local a=(--no-quic-dump --no-http-dump --timeout=30s -d "$WWW")
    [ "${S_RETRY:-0}" = 1 ] && a+=(-V)
    [ "${S_CHACHA:-0}" = 1 ] && a+=(--ciphers="$ONLY_CHACHA")
    exec timeout "$T_SERVER" gtlsserver "${a[@]}" "$HOST_IP" "$SRV_PORT" "$KEY" "$CERT"
}

server_quicgo() {
    local a=(-listen "$(hostport "$HOST_IP" "$SRV_PORT")" -root "$WWW" -cert "$CERT" -key "$KEY"
        -keylog "$RUN_DIR/server.keys")
    [ "${S_RETRY:-0}" = 1 ] && a+=(-retry)
    [ "${S_CHACHA:-0}" = 1 ] && a+=(-ciphers chacha20)
    exec timeout "$T_SERVER" "$QUICGO_SERVER" "${a[@]}"
}

# Caddy 2.6 (quic-go 0.29 inside) with our certificate, HTTP/3 next to h1/h2 on the same port,
# bound to $HOST_IP only, no admin endpoint, no automatic HTTPS.
server_caddy() {
    local d="$RUN_DIR/caddy" ciphers=""
    mkdir -p "$d"
    [ "${S_CHACHA:-0}" = 1 ] && ciphers="ciphers TLS_CHACHA20_POLY1305_SHA256"
    cat >"$d/Caddyfile" <<CONF
{
    admin off
    auto_https off
    storage file_system $d/data
    servers {
        protocols h1 h2 h3
    }
}
https://:$SRV_PORT {
    bind $HOST_IP
    tls $CERT $KEY {
        $ciphers
    }
    root * $WWW
    file_server
}
CONF
    HOME="$d" XDG_DATA_HOME="$d" XDG_CONFIG_HOME="$d" exec timeout "$T_SERVER" \
        caddy run --config "$d/Caddyfile" --adapter caddyfile
}

# vega-serve, once it serves HTTP/3 (issue 13): HTTPS on TCP and HTTP/3 on UDP, same port.
server_vega() {
    local a=(--tls --cert "$CERT" --key "$KEY" -b "$HOST_IP" -p "$SRV_PORT" -v)
    [ "${S_RETRY:-0}" = 1 ] && a+=(--quic-retry)
    # vega-serve offers all three suites; the client is the side limited to ChaCha20 there
    [ "${S_CHACHA:-0}" = 1 ] && vega_has vega-serve --tls-ciphers &&
        a+=(--tls-ciphers TLS_CHACHA20_POLY1305_SHA256)
    SSLKEYLOGFILE="$RUN_DIR/server.keys" exec timeout "$T_SERVER" "$(vega_tool vega-serve)" \
        "${a[@]}" "$WWW"
}

# ---- clients ---------------------------------------------------------------------------------------

# hostport IP PORT: "IP:PORT", bracketed for IPv6.
hostport() {
    case "$1" in
    *:*) echo "[$1]:$2" ;;
    *) echo "$1:$2" ;;
    esac
}

# client_run NAME FILE...: fetches the files from the relay's port as MODE says (parallel: one
# connection; multiconnect: one connection per file; resume, zerortt: the first file on one
# connection, the rest on a second that resumes, in 0-RTT for zerortt). Output in $CLI_LOG.
client_run() {
    local name="$1"
    shift
    CLI_LOG="$RUN_DIR/client.log"
    : >"$CLI_LOG"
    mkdir -p "$DL"
    "client_$name" "$@" >>"$CLI_LOG" 2>&1 </dev/null
}

client_ngtcp2() {
    local a=(--exit-on-all-streams-close --no-quic-dump --no-http-dump --sni=localhost
        --download "$DL" --timeout=15s --handshake-timeout=60s) urls=() f rc=0
    [ "${C_CHACHA:-0}" = 1 ] && a+=(--ciphers="$ONLY_CHACHA")
    [ "${C_V2:-0}" = 1 ] && a+=(-v v2draft)
    [ "${C_KEYUPDATE:-0}" = 1 ] && a+=(--key-update=10ms --delay-stream=40ms)
    [ "${C_MIGRATE:-0}" = 1 ] && a+=(--change-local-addr=300ms)
    for f in "$@"; do
        urls+=("https://localhost:$CPORT/$f")
    done
    # getopt permutes the options, but the URIs must follow HOST and PORT.
    g() { timeout "$T_CLIENT" gtlsclient "${a[@]}" "$HOST_IP" "$CPORT" "$@"; }
    case "$MODE" in
    parallel) g "${urls[@]}" ;;
    multiconnect)
        for f in "${urls[@]}"; do
            g "$f" || rc=1
        done
        return $rc
        ;;
    resume | zerortt)
        local s=(--session-file="$RUN_DIR/session" --tp-file="$RUN_DIR/tp")
        [ "$MODE" = resume ] && s+=(--disable-early-data)
        echo "--- connection 1"
        g "${s[@]}" "${urls[0]}" || return 1
        echo "--- connection 2"
        g "${s[@]}" "${urls[@]:1}"
        ;;
    esac
}

client_quicgo() {
    local a=(-insecure -out "$DL" -timeout 20s -keylog "$RUN_DIR/client.keys") urls=() f
    local base="https://localhost:$CPORT"
    [ "$FAM" = 6 ] && base="https://[::1]:$CPORT"
    [ "${C_CHACHA:-0}" = 1 ] && a+=(-ciphers chacha20)
    [ "${C_V2:-0}" = 1 ] && a+=(-versions v2) # http3 dials with one version only
    [ "${C_KEYUPDATE:-0}" = 1 ] && a+=(-keyupdate)
    case "$MODE" in
    multiconnect) a+=(-multiconnect) ;;
    resume) a+=(-resume) ;;
    zerortt) a+=(-resume -0rtt) ;;
    esac
    for f in "$@"; do
        urls+=("$base/$f")
    done
    timeout "$T_CLIENT" "$QUICGO_CLIENT" "${a[@]}" "${urls[@]}"
}

# chromium_page NAME FILE...: $WWW/NAME, a page whose script fetches the files in parallel and
# writes, for each, "file NAME STATUS BYTES SHA256" (Web Crypto), then the protocol of the
# navigation and of each resource (performance.nextHopProtocol), then "done".
chromium_page() {
    local page="$1" list="" f
    shift
    for f in "$@"; do
        list="$list'$f',"
    done
    cat >"$WWW/$page" <<HTML
<!doctype html><html><head><meta charset="utf-8"><title>h3 interop</title></head>
<body><pre id="out">pending</pre><script>
async function hex(b) {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', b));
  return Array.from(d).map(x => x.toString(16).padStart(2, '0')).join('');
}
async function one(f) {
  try {
    const r = await fetch(f, {cache: 'no-store'});
    const b = await r.arrayBuffer();
    return 'file ' + f + ' ' + r.status + ' ' + b.byteLength + ' ' + await hex(b);
  } catch (e) { return 'file ' + f + ' error ' + e; }
}
(async () => {
  const lines = await Promise.all([$list].map(one));
  lines.push('nav ' + performance.getEntriesByType('navigation')[0].nextHopProtocol);
  const protos = {};
  for (const e of performance.getEntriesByType('resource')) protos[e.nextHopProtocol] = 1;
  lines.push('resources ' + Object.keys(protos).join(','));
  lines.push('done');
  document.getElementById('out').textContent = lines.join('\n');
})();
</script></body></html>
HTML
}

# chromium_load PAGE: one headless Chromium (its own profile) loads PAGE over QUIC only
# (--origin-to-force-quic-on), trusting our certificate by its SPKI hash; the DOM is written
# to $RUN_DIR/dom.PAGE and checked against the files in $WWW.
chromium_load() {
    local page="$1" dom="$RUN_DIR/dom.$1" a map="MAP localhost 127.0.0.1"
    [ "$FAM" = 6 ] && map="MAP localhost [::1]"
    a=(--headless --no-sandbox --disable-gpu --no-first-run --disable-extensions
        --user-data-dir="$RUN_DIR/profile.$page" --enable-quic
        --origin-to-force-quic-on="localhost:$CPORT" --host-resolver-rules="$map"
        --ignore-certificate-errors-spki-list="$SPKI" --virtual-time-budget=60000
        --log-net-log="$RUN_DIR/netlog.$page.json")
    [ "${C_V2:-0}" = 1 ] && a+=(--quic-version=RFCv2)
    echo "--- chromium $page"
    SSLKEYLOGFILE="$RUN_DIR/client.keys" timeout "$T_CLIENT" chromium "${a[@]}" --dump-dom \
        "https://localhost:$CPORT/$page" >"$dom" 2>"$RUN_DIR/chromium.$page.err"
    grep -A200 '<pre id="out">' "$dom" | sed -n '1,/^done/p' | sed 's/<pre id="out">//'
    command -p python3 - "$dom" "$WWW" <<'PY'
import hashlib, html, os, re, sys
dom, www = open(sys.argv[1]).read(), sys.argv[2]
m = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
lines = html.unescape(m.group(1)).splitlines() if m else []
bad = []
if "done" not in lines:
    bad.append("the page did not finish (no 'done')")
if "nav h3" not in lines:
    bad.append("navigation was not over h3: %s" % [l for l in lines if l.startswith("nav")])
for l in lines:
    p = l.split()
    if p[:1] != ["file"]:
        continue
    if len(p) != 5 or p[2] != "200":
        bad.append(l)
        continue
    data = open(os.path.join(www, p[1]), "rb").read()
    if int(p[3]) != len(data) or p[4] != hashlib.sha256(data).hexdigest():
        bad.append("%s: %s bytes sha256 %s, served %d bytes" % (p[1], p[3], p[4], len(data)))
    else:
        open(os.path.join(sys.argv[1] + ".ok"), "a").write(p[1] + "\n")
if bad:
    print("chromium: " + "; ".join(bad[:5]))
    sys.exit(1)
PY
}

# Chromium saves nothing: the DOM's hashes are checked instead, and the checked files are
# copied into $DL so that the harness's comparison sees them.
client_chromium() {
    local f rc=0 i=0
    case "$MODE" in
    parallel)
        chromium_page index.html "$@"
        chromium_load index.html || rc=1
        ;;
    multiconnect)
        for f in "$@"; do
            i=$((i + 1))
            chromium_page "p$i.html" "$f"
            chromium_load "p$i.html" || rc=1
        done
        ;;
    *)
        echo "chromium: mode $MODE is not supported"
        return 1
        ;;
    esac
    cat "$RUN_DIR"/dom.*.ok 2>/dev/null | while read -r f; do
        cp "$WWW/$f" "$DL/$f"
    done
    return $rc
}

# vega-curl, once it speaks HTTP/3 (issue 13): curl's spellings.
client_vega() {
    local a=(--http3-only -k -sS -m 30) f rc=0 base="https://localhost:$CPORT"
    local t
    t="$(vega_tool vega-curl)" || return 1
    [ "$FAM" = 6 ] && a+=(--resolve "localhost:$CPORT:[::1]") || a+=(--resolve "localhost:$CPORT:127.0.0.1")
    [ "${C_V2:-0}" = 1 ] && a+=(--quic-version 2)
    [ "${C_KEYUPDATE:-0}" = 1 ] && a+=(--quic-key-update)
    # as ngtcp2's client is told (--change-local-addr=300ms); -v says whether the path validated
    [ "${C_MIGRATE:-0}" = 1 ] && a+=(-v --quic-migrate=300)
    # -v: vega-curl then says which suite it negotiated ("* QUIC: ... cipher ...")
    [ "${C_CHACHA:-0}" = 1 ] && a+=(-v --tls13-ciphers TLS_CHACHA20_POLY1305_SHA256)
    export SSLKEYLOGFILE="$RUN_DIR/client.keys"
    out_args() {
        local x
        for x in "$@"; do
            printf '%s\0' -o "$DL/$x" "$base/$x"
        done
    }
    case "$MODE" in
    parallel) xargs -0 timeout "$T_CLIENT" "$t" "${a[@]}" < <(out_args "$@") ;;
    multiconnect)
        for f in "$@"; do
            timeout "$T_CLIENT" "$t" "${a[@]}" -o "$DL/$f" "$base/$f" || rc=1
        done
        return $rc
        ;;
    resume | zerortt)
        a+=(--tls-session-file "$RUN_DIR/session")
        [ "$MODE" = resume ] && a+=(--no-tls-earlydata)
        timeout "$T_CLIENT" "$t" "${a[@]}" -o "$DL/$1" "$base/$1" || return 1
        shift
        xargs -0 timeout "$T_CLIENT" "$t" "${a[@]}" < <(out_args "$@")
        ;;
    esac
}
