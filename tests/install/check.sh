#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install check: installs a build tree into a temporary prefix and proves that the installed
# package is usable on its own:
#   1. the expected files are there and no build-tree path leaked into vega.pc or the CMake files;
#   2. every public header compiles alone (strict C17, gnu17, C++17) with -Werror;
#   3. libvega.so exports only vega_* symbols;
#   4. examples/ builds with pkg-config (shared with LD_LIBRARY_PATH, shared with an rpath, and
#      static) and with find_package(vega) (vega::vega and vega::vega_static), and every program
#      runs on both drivers: the standalone ones alone; http_server on a free loopback port,
#      its routes fetched by http_client (each URL with its own deadline), then SIGTERM, which
#      must stop it with exit status 0.
#
# Usage: tests/install/check.sh [BUILD_DIR]   (default: build). Needs a finished build.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/vega-install.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PREFIX=$TMP/prefix
FAILS=0

ok() { echo "  ok    $*"; }
bad() { echo "  FAIL  $*"; FAILS=$((FAILS + 1)); }
step() { printf '\n-- %s\n' "$*"; }

step "cmake --install $BUILD --prefix $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" || {
    cat "$TMP/install.log"
    echo "install-check: cmake --install failed"
    exit 1
}

PC=$(find "$PREFIX" -name vega.pc -path '*/pkgconfig/*' | head -n1)
CFG=$(find "$PREFIX" -name vegaConfig.cmake | head -n1)
[ -n "$PC" ] || { echo "install-check: no vega.pc installed"; exit 1; }
[ -n "$CFG" ] || { echo "install-check: no vegaConfig.cmake installed"; exit 1; }
LIBDIR=$(dirname "$(dirname "$PC")")
INCDIR=$PREFIX/include

step "installed files"
for f in "$LIBDIR/libvega.a" "$LIBDIR/libvega.so" "$INCDIR/vega/vega.h" \
    "$(dirname "$CFG")/vegaConfigVersion.cmake" "$(dirname "$CFG")/vegaTargets.cmake"; do
    if [ -e "$f" ]; then ok "${f#"$PREFIX"/}"; else bad "missing ${f#"$PREFIX"/}"; fi
done
for h in "$ROOT"/lib/include/vega/*.h; do
    [ -e "$INCDIR/vega/${h##*/}" ] || bad "header ${h##*/} not installed"
done
if grep -rlF -e "$ROOT" -e "$BUILD" "$PC" "$(dirname "$CFG")" >/dev/null 2>&1; then
    bad "build-tree paths in the installed package files: $(grep -rlF -e "$ROOT" -e "$BUILD" "$PC" "$(dirname "$CFG")" | tr '\n' ' ')"
else
    ok "no build-tree paths in vega.pc and lib/cmake/vega"
fi

step "each public header compiles on its own"
hdr_fail=0
for h in "$INCDIR"/vega/*.h; do
    name=vega/${h##*/}
    for cc in "gcc -std=c17" "gcc -std=gnu17" "clang -std=c17" "g++ -std=c++17 -x c++"; do
        if ! printf '#include <%s>\nint main(void) { return 0; }\n' "$name" |
            $cc -Wall -Wextra -Werror -fsyntax-only -I"$INCDIR" $([[ $cc == *c++* ]] || echo -x c) - \
                >"$TMP/hdr.log" 2>&1; then
            bad "<$name> with $cc: $(grep -m1 -E 'error' "$TMP/hdr.log" || head -n1 "$TMP/hdr.log")"
            hdr_fail=1
        fi
    done
done
[ $hdr_fail = 1 ] || ok "$(ls "$INCDIR"/vega/*.h | wc -l) headers x (gcc c17, gcc gnu17, clang c17, g++ c++17)"

step "libvega.so exports only vega_* symbols"
others=$(nm -D --defined-only "$LIBDIR/libvega.so" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}' |
    grep -v -E '^(vega_|_init$|_fini$|_edata$|_end$|__bss_start$)' || true)
if [ -n "$others" ]; then
    bad "exported non-vega symbols: $(echo "$others" | head -n 10 | tr '\n' ' ')"
else
    ok "$(nm -D --defined-only "$LIBDIR/libvega.so" | grep -c ' T vega_') vega_* functions exported"
fi

# The examples that run on their own; http_server and http_client run together (run_http).
STANDALONE="hello_tasks timeouts http1_parse"

# run_prog PROG [ENV...]: runs PROG on each driver with a time limit.
run_prog() {
    local prog=$1 drv
    shift
    for drv in uring epoll; do
        if env "$@" VEGA_DRIVER=$drv timeout 60 "$prog" >"$TMP/run.log" 2>&1; then
            ok "$drv: ${prog#"$TMP"/}: $(tail -n1 "$TMP/run.log")"
        else
            bad "$drv: ${prog#"$TMP"/} (exit $?):"
            sed 's/^/        /' "$TMP/run.log"
        fi
    done
}

# expect_line LOG TEXT: true when LOG has a line that starts with TEXT.
expect_line() {
    awk -v t="$2" 'index($0, t) == 1 { found = 1 } END { exit !found }' "$1"
}

# run_http DIR [ENV...]: on each driver, starts DIR/http_server on 127.0.0.1:0 (a free port),
# fetches its routes with DIR/http_client, checks a deadline that expires, sends SIGTERM and
# checks that the server stops with exit status 0.
run_http() {
    local dir=$1 drv pid url rc n
    shift
    local where=${dir#"$TMP"/}
    for drv in uring epoll; do
        local slog=$TMP/server.log clog=$TMP/client.log
        : >"$slog" # emptied before the start: never read the last run's port
        env "$@" VEGA_DRIVER=$drv "$dir/http_server" 127.0.0.1:0 >"$slog" 2>&1 &
        pid=$!
        url=
        for n in $(seq 100); do # up to 10 s for "listening on http://127.0.0.1:PORT/"
            url=$(sed -n 's|^listening on \(http://[^ ]*/\)$|\1|p' "$slog")
            [ -n "$url" ] || ! kill -0 $pid 2>/dev/null || { sleep 0.1; continue; }
            break
        done
        if [ -z "$url" ]; then
            bad "$drv: $where/http_server did not start:"
            sed 's/^/        /' "$slog"
            kill -KILL $pid 2>/dev/null || true
            wait $pid 2>/dev/null || true
            continue
        fi
        # Every route at once, each with a 5 s deadline: all must answer.
        rc=0
        env "$@" VEGA_DRIVER=$drv timeout 60 "$dir/http_client" -t 5000 "$url" \
            "${url}api/status" "${url}static/notes.txt" "${url}slow" "${url}nope" \
            >"$clog" 2>&1 || rc=$?
        if [ $rc != 0 ]; then
            bad "$drv: $where/http_client against $where/http_server (exit $rc):"
            sed 's/^/        /' "$clog"
        elif expect_line "$clog" "$url -> 200 (19 bytes" &&
            expect_line "$clog" "${url}api/status -> 200 (" &&
            expect_line "$clog" "${url}static/notes.txt -> 200 (" &&
            expect_line "$clog" "${url}slow -> 200 (" &&
            expect_line "$clog" "${url}nope -> 404 (" &&
            grep -qF '"ok":true' "$clog" && grep -qF 'the file "notes.txt"' "$clog"; then
            ok "$drv: $where/http_client against $where/http_server on $url: 5 routes"
        else
            bad "$drv: $where/http_client: a route answered something else:"
            sed 's/^/        /' "$clog"
        fi
        # A 50 ms deadline on the route that takes 200 ms: that URL fails, the other does not.
        rc=0
        env "$@" VEGA_DRIVER=$drv timeout 60 "$dir/http_client" "$url" -t 50 "${url}slow" \
            >"$clog" 2>&1 || rc=$?
        if [ $rc = 1 ] && expect_line "$clog" "$url -> 200 (" &&
            expect_line "$clog" "${url}slow -> ETIMEDOUT after"; then
            ok "$drv: $where/http_client: a 50 ms deadline on /slow expires (exit 1)"
        else
            bad "$drv: $where/http_client with a 50 ms deadline (exit $rc, want 1):"
            sed 's/^/        /' "$clog"
        fi
        kill -TERM $pid 2>/dev/null || true
        rc=0
        for n in $(seq 100); do
            kill -0 $pid 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 $pid 2>/dev/null; then
            kill -KILL $pid 2>/dev/null || true
            bad "$drv: $where/http_server still running 10 s after SIGTERM"
        fi
        wait $pid || rc=$?
        if [ $rc = 0 ] && grep -qx stopped "$slog"; then
            ok "$drv: $where/http_server: SIGTERM, exit 0"
        else
            bad "$drv: $where/http_server after SIGTERM (exit $rc, want 0):"
            sed 's/^/        /' "$slog"
        fi
    done
}

export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
step "pkg-config: vega $(pkg-config --modversion vega): $(pkg-config --cflags --libs vega)"
if [ "$(pkg-config --variable=libdir vega)" -ef "$LIBDIR" ]; then
    ok "vega.pc points into the install prefix"
else
    bad "vega.pc libdir is $(pkg-config --variable=libdir vega), not $LIBDIR"
fi
flags=$(pkg-config --cflags --libs vega)
case " $flags" in
*/../* | */./* | *//* | *" -I"[!/]* | *" -L"[!/]*) bad "pkg-config paths are not clean: $flags" ;;
*) ok "pkg-config paths are absolute and normalized" ;;
esac
# A tree moved after installing: pkgconf's --define-prefix finds the prefix from vega.pc's place
# (<prefix>/lib/pkgconfig; a multiarch libdir such as lib/x86_64-linux-gnu is not relocatable so).
if [ "$LIBDIR" = "$PREFIX/lib" ]; then
    cp -a "$PREFIX" "$TMP/moved"
    moved=$(PKG_CONFIG_PATH=$TMP/moved/lib/pkgconfig pkg-config --define-prefix --variable=libdir vega)
    if [ "$moved" -ef "$TMP/moved/lib" ]; then
        ok "moved tree: pkg-config --define-prefix gives libdir $moved"
    else
        bad "moved tree: pkg-config --define-prefix gives libdir $moved"
    fi
    rm -rf "$TMP/moved"
fi
# shared: found through LD_LIBRARY_PATH; rpath: through the path recorded at link time
# (make RPATH=1), with no environment; static: libvega.a, no libvega.so at all.
for link in shared rpath static; do
    out=$TMP/pc-$link
    if make -s -C "$ROOT/examples" LINK=${link/rpath/shared} RPATH=$([ $link = rpath ] && echo 1) \
        OUT="$out" >"$TMP/make.log" 2>&1; then
        ok "make -C examples LINK=${link/rpath/shared RPATH=1}"
        runenv=()
        case $link in
        shared) runenv=(LD_LIBRARY_PATH="$LIBDIR") ;;
        static)
            for p in "$out"/*; do
                if ldd "$p" | grep -q libvega; then bad "${p#"$TMP"/} links libvega.so"; fi
            done
            ;;
        esac
        for p in $STANDALONE; do
            run_prog "$out/$p" "${runenv[@]}"
        done
        run_http "$out" "${runenv[@]}"
    else
        bad "make -C examples LINK=$link"
        cat "$TMP/make.log"
    fi
done

step "CMake: find_package(vega) with CMAKE_PREFIX_PATH=$PREFIX"
for link in shared static; do
    out=$TMP/cm-$link
    static=OFF
    [ $link = static ] && static=ON
    if cmake -S "$ROOT/examples" -B "$out" -DCMAKE_PREFIX_PATH="$PREFIX" \
        -DVEGA_EXAMPLES_STATIC=$static >"$TMP/cmake.log" 2>&1 &&
        cmake --build "$out" >>"$TMP/cmake.log" 2>&1; then
        ok "examples with vega::$([ $static = ON ] && echo vega_static || echo vega)"
        for p in $STANDALONE; do
            run_prog "$out/$p"   # shared: found through the build RPATH CMake sets
        done
        run_http "$out"
    else
        bad "examples with find_package, $link"
        cat "$TMP/cmake.log"
    fi
done

echo
if [ $FAILS -gt 0 ]; then
    echo "install-check: $FAILS check(s) failed"
    exit 1
fi
echo "install-check: passed"
