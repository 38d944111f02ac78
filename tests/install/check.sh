#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install check: installs a build tree into a temporary prefix and proves that the installed
# package is usable on its own:
#   1. the expected files are there and no build-tree path leaked into vega.pc or the CMake files;
#   2. every public header compiles alone (strict C17, gnu17, C++17) with -Werror;
#   3. libvega.so exports only vega_* symbols;
#   4. examples/ builds with pkg-config (shared and static) and with find_package(vega)
#      (vega::vega and vega::vega_static), and every program runs on both drivers.
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

export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
step "pkg-config: vega $(pkg-config --modversion vega): $(pkg-config --cflags --libs vega)"
if [ "$(pkg-config --variable=libdir vega)" -ef "$LIBDIR" ]; then
    ok "vega.pc points into the install prefix"
else
    bad "vega.pc libdir is $(pkg-config --variable=libdir vega), not $LIBDIR"
fi
for link in shared static; do
    out=$TMP/pc-$link
    if make -s -C "$ROOT/examples" LINK=$link OUT="$out" >"$TMP/make.log" 2>&1; then
        ok "make -C examples LINK=$link"
        for p in "$out"/*; do
            if [ $link = shared ]; then
                run_prog "$p" LD_LIBRARY_PATH="$LIBDIR"
            else
                if ldd "$p" | grep -q libvega; then bad "${p#"$TMP"/} links libvega.so"; fi
                run_prog "$p"
            fi
        done
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
        for p in hello_tasks timeouts; do
            run_prog "$out/$p"   # shared: found through the build RPATH CMake sets
        done
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
