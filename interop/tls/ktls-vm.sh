#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Kernel TLS for real, on a machine whose own kernel has no tls module: boots Debian's stock
# kernel (which has CONFIG_TLS=m) in qemu with an initramfs holding busybox, the kernel's
# modules, test_tls_ktls and vega-echo, then runs inside it the kTLS unit tests (offload of
# AES-128-GCM, AES-256-GCM and ChaCha20-Poly1305 under TLS 1.2 and 1.3, TX and RX, sendfile,
# close_notify) under both drivers, and a vega-echo --ktls txrx round trip of 4 MiB. Loopback
# inside the guest only; the guest has no network card.
#
# Needs: qemu-system-x86, busybox-static, kmod, cpio (Debian packages), and apt-get download of
# linux-image-amd64's kernel package (about 70 MB, cached in $VEGA_KTLS_VM_CACHE, default
# ~/.cache/vega-ktls-vm). KVM is used when it works, else TCG (a minute or two).
#
# Usage: interop/tls/ktls-vm.sh [BUILD_DIR]   (exit 0: all passed, 1: a failure, 77: cannot run
#                                             here: a tool or the kernel package is missing)
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-${VEGA_BUILD_DIR:-build}}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
TEST="$BUILD/tests/test_tls_ktls"
ECHO="$BUILD/cli/vega-echo"
[ -d "$ECHO" ] && ECHO="$ECHO/vega-echo"
for f in "$TEST" "$ECHO"; do
    [ -x "$f" ] || { echo "ktls-vm: missing $f (build first)" >&2; exit 2; }
done
for tool in qemu-system-x86_64 busybox depmod cpio apt-get; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "1..0 # SKIP $tool is missing (packages: qemu-system-x86 busybox-static kmod cpio)"
        exit 77
    }
done
if ! busybox --list 2>/dev/null | grep -qx modprobe; then
    echo "1..0 # SKIP busybox has no modprobe (install busybox-static)"
    exit 77
fi

CACHE="${VEGA_KTLS_VM_CACHE:-$HOME/.cache/vega-ktls-vm}"
mkdir -p "$CACHE"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/vega-ktls-vm.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# ---- the kernel ----------------------------------------------------------------------------------

PKG="$(apt-cache depends linux-image-amd64 2>/dev/null | sed -nE 's/.*Depends: (linux-image-[0-9].*-amd64)$/\1/p' | head -n1)"
[ -n "$PKG" ] || { echo "1..0 # SKIP apt knows no linux-image-amd64 (apt-get update?)"; exit 77; }
DEB="$(ls "$CACHE/${PKG}"_*.deb 2>/dev/null | head -n1)"
if [ -z "$DEB" ]; then
    (cd "$CACHE" && apt-get download "$PKG" >/dev/null 2>&1) ||
        { echo "1..0 # SKIP apt-get download $PKG failed"; exit 77; }
    DEB="$(ls "$CACHE/${PKG}"_*.deb | head -n1)"
fi
KVER="${PKG#linux-image-}"
dpkg-deb -x "$DEB" "$WORK/img"
KERNEL="$WORK/img/boot/vmlinuz-$KVER"
MODS="$WORK/img/lib/modules/$KVER"
[ -f "$MODS/kernel/net/tls/tls.ko" ] || { echo "1..0 # SKIP $PKG has no tls.ko"; exit 77; }

# ---- the initramfs --------------------------------------------------------------------------------

R="$WORK/root"
mkdir -p "$R"/{bin,sbin,proc,sys,dev,tmp,lib/modules/"$KVER"}
cp "$(command -v busybox)" "$R/bin/"
for c in sh mount ip modprobe cat echo poweroff sleep grep sync head sha256sum kill seq; do
    ln -sf busybox "$R/bin/$c"
done
ln -sf /bin/busybox "$R/sbin/modprobe"
# Only what TLS needs: the tls module and the crypto it asks the kernel for.
(cd "$MODS" && cp -a --parents kernel/net/tls kernel/crypto kernel/arch/x86/crypto kernel/lib \
    modules.builtin modules.builtin.modinfo modules.order "$R/lib/modules/$KVER/")
depmod -b "$R" "$KVER"
cp "$TEST" "$ECHO" "$R/bin/"
for f in "$TEST" "$ECHO"; do
    ldd "$f" | grep -oE '/[^ ]+'
done | sort -u | while read -r lib; do
    mkdir -p "$R$(dirname "$lib")"
    cp -L "$lib" "$R$lib"
done
cat >"$R/init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
ip link set lo up
modprobe tls && modprobe gcm && modprobe aesni-intel; modprobe chacha20poly1305
echo "GUEST kernel $(cat /proc/sys/kernel/osrelease), tcp_available_ulp: $(cat /proc/sys/net/ipv4/tcp_available_ulp)"
for d in epoll uring; do
    for t in offload_sendfile_when_kernel_has_tls fallback_to_user_space_reports_reason; do
        VEGA_DRIVER=$d /bin/test_tls_ktls $t
        echo "RESULT $t.$d $?"
    done
done
# vega-echo with the kernel holding the keys both ways.
head -c 4194304 /dev/urandom >/tmp/in.bin
/bin/vega-echo -l -v --tls --ktls txrx 127.0.0.1:7443 2>/tmp/srv.log &
for i in $(seq 50); do grep -q listening /tmp/srv.log && break; sleep 0.1; done
/bin/vega-echo --tls -k -v --ktls txrx 127.0.0.1:7443 </tmp/in.bin >/tmp/out.bin 2>/tmp/cli.log
rc=$?
cat /tmp/cli.log
a=$(sha256sum </tmp/in.bin); b=$(sha256sum </tmp/out.bin)
# (a TLS 1.3 client switches RX once the first data arrived: "rx at the next record")
grep -q "kTLS tx" /tmp/cli.log && [ "$rc" = 0 ] && [ "$a" = "$b" ] &&
    grep -q "kTLS tx+rx" /tmp/srv.log
echo "RESULT vega-echo_ktls_4MiB $?"
kill %1; sleep 0.2; cat /tmp/srv.log
sync
poweroff -f
EOF
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$WORK/initrd.gz")

# ---- boot ------------------------------------------------------------------------------------------

run_vm() {
    timeout "${VEGA_KTLS_VM_TIMEOUT:-400}" qemu-system-x86_64 "$@" -m 1024 -nographic -no-reboot \
        -kernel "$KERNEL" -initrd "$WORK/initrd.gz" \
        -append "console=ttyS0 panic=-1 loglevel=3" >"$WORK/vm.log" 2>&1 </dev/null
}
ok=false
if [ -w /dev/kvm ] && VEGA_KTLS_VM_TIMEOUT=60 run_vm -enable-kvm -cpu host -smp 2 &&
    grep -q '^RESULT vega-echo' "$WORK/vm.log"; then
    ok=true
fi
$ok || run_vm -cpu max -smp 1
tr -d '\r' <"$WORK/vm.log" | grep -E '^(GUEST|RESULT|TLSv|ok |FAIL|SKIP|vega-echo: )' | sed 's/^/# /'

n=0 failed=0
while read -r _ name rc; do
    n=$((n + 1))
    if [ "$rc" = 0 ]; then echo "ok $n - $name"; else echo "not ok $n - $name"; failed=$((failed + 1)); fi
done < <(tr -d '\r' <"$WORK/vm.log" | grep -E '^RESULT ')
if [ "$n" -eq 0 ]; then
    echo "not ok 1 - the guest ran no test; its console said:"
    tail -n 30 "$WORK/vm.log" | sed 's/^/# /'
    exit 1
fi
echo "1..$n"
echo "$((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
