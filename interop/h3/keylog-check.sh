#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The SSLKEYLOGFILE of vega-curl and vega-serve over HTTP/3, checked without Wireshark: each
# run goes through a recording UDP relay (keylog-check.py record), and keylog-check.py then
# opens every captured QUIC packet with keys derived from the logged secrets and checks that
# every log holds the same line for each secret (so vega's lines match quic-go's, which qtls
# writes, where a quic-go peer takes part). One TAP line per run:
#
#   interop/h3/keylog-check.sh [BUILD_DIR]
#
# Runs: vega-curl -> vega-serve (AES-128, AES-256, ChaCha20; then a resumed connection with
# 0-RTT and a key update), vega-curl -> the quic-go server, the quic-go client -> vega-serve.
# shellcheck source=interop/h3/lib.sh
source "$(dirname "$0")/lib.sh"

for t in openssl ss timeout; do
    command -v "$t" >/dev/null || skip_all "$t is missing"
done
command -p python3 -c 'import cryptography' 2>/dev/null || skip_all "python3-cryptography is missing"
CURL="$(vega_tool vega-curl)" || exit 2
SERVE="$(vega_tool vega-serve)" || exit 2
QUICGO_WHY="$(quicgo_missing)"
if [ -z "$QUICGO_WHY" ] && ! build_quicgo >"$WORK/quicgo-build.out" 2>&1; then
    QUICGO_WHY="the quic-go peers do not build"
fi
CHECK="$H3_DIR/keylog-check.py"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 7 \
    -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" >/dev/null 2>&1 || skip_all "openssl cannot make a certificate"
mkdir -p "$WORK/www"
head -c 300000 /dev/urandom >"$WORK/www/x"
head -c 2000 /dev/urandom >"$WORK/www/y"

# start_pair SERVER: a new run folder (RUN), the server (vega or quicgo) on a free port (SP)
# and the recording relay in front of it (record_start).
start_pair() {
    RUN="$WORK/run$((IOP_N + 1))"
    mkdir -p "$RUN"
    SP="$(free_udp_port)"
    case "$1" in
    vega)
        SSLKEYLOGFILE="$RUN/server.keys" "$SERVE" --tls --cert "$WORK/cert.pem" --key "$WORK/key.pem" \
            -b 127.0.0.1 -p "$SP" -q "$WORK/www" >"$RUN/server.log" 2>&1 &
        ;;
    quicgo)
        "$QUICGO_SERVER" -listen "127.0.0.1:$SP" -root "$WORK/www" -cert "$WORK/cert.pem" \
            -key "$WORK/key.pem" -keylog "$RUN/server.keys" >"$RUN/server.log" 2>&1 &
        ;;
    esac
    IOP_PIDS+=($!)
    wait_udp "$SP" 10 >/dev/null && record_start
}

# record_start [PORT]: the recording relay on PORT or a free port (RP) to the server, writing
# $RUN/cap.bin.
record_start() {
    RP="${1:-$(free_udp_port)}"
    command -p python3 "$CHECK" record "$RP" 127.0.0.1 "$SP" "$RUN/cap.bin" 60 >"$RUN/record.log" 2>&1 &
    REC_PID=$!
    IOP_PIDS+=("$REC_PID")
    wait_udp "$RP" 10 >/dev/null
}

# finish NAME: stops the pair and checks the capture against both logs.
finish() {
    iop_cleanup
    if command -p python3 "$CHECK" check "$RUN/cap.bin" "$RUN"/*.keys >"$RUN/check.log" 2>&1; then
        tap_ok "$1"
        sed 's/^/# /' "$RUN/check.log"
    else
        tap_fail "$1" "$RUN/check.log"
    fi
}

curl_get() { # curl_get URL-PATH [OPTIONS...]
    local p="$1"
    shift
    SSLKEYLOGFILE="$RUN/client.keys" timeout 30 "$CURL" --http3-only -k -sS "$@" \
        --resolve "localhost:$RP:127.0.0.1" -o "$RUN/got" "https://localhost:$RP/$p" >>"$RUN/client.log" 2>&1 &&
        cmp -s "$RUN/got" "$WORK/www/$p"
}

echo "1..6"
for suite in TLS_AES_128_GCM_SHA256 TLS_AES_256_GCM_SHA384 TLS_CHACHA20_POLY1305_SHA256; do
    if start_pair vega && curl_get x --tls13-ciphers "$suite"; then
        finish "vega-curl -> vega-serve, $suite"
    else
        tap_fail "vega-curl -> vega-serve, $suite" "$RUN/client.log"
        iop_cleanup
    fi
done

# The second connection resumes with 0-RTT, and the client updates its keys (when vega-curl
# can): the early secret opens the 0-RTT packets, "quic ku" follows the update. The server keeps
# running (its ticket key is per process); only the second connection is in the capture.
ku=()
h="$("$CURL" --help 2>&1)"
grep -q -- --quic-key-update <<<"$h" && ku=(--quic-key-update)
name="vega-curl -> vega-serve, resumed with 0-RTT${ku:+ and a key update}"
if start_pair vega && curl_get y --tls-session-file "$RUN/session"; then
    kill "$REC_PID"
    wait "$REC_PID" 2>/dev/null
    mv "$RUN/cap.bin" "$RUN/cap1.bin"
    if record_start "$RP" && curl_get x --tls-session-file "$RUN/session" -v "${ku[@]}" &&
        grep -q "session resumed, 0-RTT accepted" "$RUN/client.log"; then
        finish "$name"
    else
        tap_fail "$name" "$RUN/client.log"
        iop_cleanup
    fi
else
    tap_fail "$name (the first connection)" "$RUN/client.log"
    iop_cleanup
fi

if [ -n "$QUICGO_WHY" ]; then
    tap_skip "vega-curl -> quic-go server (logs compared)" "$QUICGO_WHY"
    tap_skip "quic-go client -> vega-serve (logs compared)" "$QUICGO_WHY"
else
    if start_pair quicgo && curl_get x; then
        finish "vega-curl -> quic-go server (logs compared)"
    else
        tap_fail "vega-curl -> quic-go server" "$RUN/client.log"
        iop_cleanup
    fi
    if start_pair vega && mkdir -p "$RUN/dl" && timeout 30 "$QUICGO_CLIENT" -insecure -out "$RUN/dl" -timeout 20s \
        -keylog "$RUN/client.keys" "https://localhost:$RP/x" >"$RUN/client.log" 2>&1 &&
        cmp -s "$RUN/dl/x" "$WORK/www/x"; then
        finish "quic-go client -> vega-serve (logs compared)"
    else
        tap_fail "quic-go client -> vega-serve" "$RUN/client.log"
        iop_cleanup
    fi
fi
[ "$IOP_FAILED" = 0 ]
