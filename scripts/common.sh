# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers shared by scripts/*.sh. Source it; it sets ROOT (the repository root) and cds there.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# The packages a fresh Debian 12 machine needs to build libvega and run every test.
VEGA_APT_PACKAGES=(
    build-essential cmake pkg-config       # compiler, CMake, pkg-config
    liburing-dev                            # io_uring driver
    libssl-dev zlib1g-dev libbrotli-dev libzstd-dev   # TLS and compression
    clang libclang-rt-14-dev                # clang + its sanitizer runtimes (TSan run)
    clang-format                            # the format stage (.clang-format)
    bats                                    # CLI tests (tests/bats)
    curl python3                            # CLI tests: peers to talk to
    dnsmasq-base                            # DNS resolver tests: a real server on loopback
    brotli zstd gzip unzip                  # compression tests: the reference CLIs (unzip: vega-serve --zip)
    openssl gnutls-bin                      # TLS interop tests: real peers
    nginx-light caddy wrk                   # HTTP interop tests and benchmarks: real peers
    chromium fonts-dejavu-core              # HTTP interop: a real browser, headless
    python3-websockets python3-autobahn node-ws   # WebSocket interop: real clients and servers (tests/bats/vega-serve-ws.bats)
    nghttp2-client python3-h2               # HTTP/2 interop and load: h2load, nghttp, a Python peer
    nghttp2-server                          # HTTP/2: nghttpd, a real peer for vega-curl's tests
    python3-prometheus-client               # vega-serve --metrics: the real exposition parser
    default-jre-headless libhdrhistogram-java   # vega-load --latency-log: HdrHistogram's own HistogramLogProcessor reads it
    ngtcp2-client ngtcp2-server iproute2    # QUIC interop: real peers (interop/quic)
    libngtcp2-dev libngtcp2-crypto-gnutls-dev libgnutls28-dev   # QUIC bench peer (bench/quic-ngtcp2)
    golang-go golang-github-lucas-clemente-quic-go-dev golang-github-marten-seemann-qtls-go1-19-dev   # HTTP/3 interop: quic-go 0.29 peers built offline (interop/h3)
    dante-server tinyproxy ncat             # proxy clients (lib/proxy, vega-curl -x): real SOCKS5 and HTTP proxies
    stunnel4                                # bench/run-proxy-bulk.sh: TLS in front of tinyproxy, the peer of vega-proxy -l tls://
    dante-client                            # vega-proxy BIND: socksify (libdsocks) as a real BIND client
    fuse3 libfuse3-dev                      # bench/slowfs: a slow or stalled disk (tests/bats/vega-serve-slowfs.bats)
)

JOBS=${VEGA_JOBS:-2}

log() { printf '\n==> %s\n' "$*"; }
die() { printf '%s: %s\n' "${0##*/}" "$*" >&2; exit 1; }

# Runs "$@" as root: directly when we are root, through sudo otherwise.
as_root() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root (or sudo) to run: $*"
    fi
}

# Installs the packages from VEGA_APT_PACKAGES that are missing. Idempotent: it runs
# `apt-get update` (once) only when something is missing, and installs only what is.
# VEGA_SKIP_DEPS=1 skips the check (for machines that are not Debian).
ensure_deps() {
    if [ "${VEGA_SKIP_DEPS:-0}" = 1 ]; then
        return 0
    fi
    if ! command -v dpkg >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
        echo "not a Debian system: install by hand: ${VEGA_APT_PACKAGES[*]}" >&2
        return 0
    fi
    local missing=() p
    for p in "${VEGA_APT_PACKAGES[@]}"; do
        # dpkg -s succeeds for removed-but-configured packages too; check the status line.
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    if [ ${#missing[@]} -eq 0 ]; then
        echo "deps: all ${#VEGA_APT_PACKAGES[@]} packages present"
        return 0
    fi
    log "installing missing packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -q
    as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# configure_build DIR [cmake args...]: configures DIR (idempotent) and builds it with $JOBS jobs.
configure_build() {
    local dir=$1
    shift
    cmake -S "$ROOT" -B "$ROOT/$dir" "$@"
    cmake --build "$ROOT/$dir" -j"$JOBS"
}
