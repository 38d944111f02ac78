#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-serve --tar-gz and --zip (folder downloads beyond --tar, which vega-serve-flags.bats
# covers), checked with the real tools: gzip, tar, unzip, zipinfo and python's zipfile; the
# same path rules as --tar (no dotfiles, no symlinks, inside or out of the root); ZIP64 records
# (forced by $VEGA_SERVE_ZIP64=1, and, with VEGA_SLOW_TESTS=1, a real 4.4 GB sparse file and a
# folder of 65540 files).
# Loopback only, port 0.

load helpers

port_of() {
    wait_for_line "$1" 'serving' 10
    sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$1" | head -n1
}

setup_file() {
    SERVE="$(vega_bin vega-serve)"
    export SERVE
    export ROOT="$BATS_FILE_TMPDIR/root" OUTSIDE="$BATS_FILE_TMPDIR/outside"
    mkdir -p "$ROOT/t/sub/empty-dir" "$OUTSIDE"
    printf 'not to be archived\n' >"$OUTSIDE/secret.txt"
    local long
    long="$(printf 'segment-%.0s' {1..12})"
    mkdir -p "$ROOT/t/sub/$long/$long"
    printf 'deep\n' >"$ROOT/t/sub/$long/$long/$long.txt"
    printf 'top\n' >"$ROOT/t/a.txt"
    seq 1 50000 >"$ROOT/t/sub/numbers.txt"
    head -c 70001 /dev/urandom >"$ROOT/t/sub/blob.bin"
    head -c 3000 /dev/urandom >"$ROOT/t/photo.png"
    : >"$ROOT/t/empty.txt"
    printf 'utf-8 name\n' >"$ROOT/t/sub/$(printf 'caf\xc3\xa9.txt')"
    printf 'hidden\n' >"$ROOT/t/.dot"
    ln -s "$OUTSIDE" "$ROOT/t/sub/escape"
    ln -s "$OUTSIDE/secret.txt" "$ROOT/t/secret-link"
    ln -s ../a.txt "$ROOT/t/sub/inside"
    local d="$BATS_FILE_TMPDIR"
    ("$SERVE" -p 0 --workers 1 --tar --tar-gz --zip "$ROOT" 2>"$d/all.log" 3>&- </dev/null &
        echo $! >"$d/all.pid")
    ("$SERVE" -p 0 --workers 1 --zip "$ROOT" 2>"$d/zip.log" 3>&- </dev/null &
        echo $! >"$d/zip.pid")
    (VEGA_SERVE_ZIP64=1 "$SERVE" -p 0 --workers 1 --zip "$ROOT" 2>"$d/z64.log" 3>&- </dev/null &
        echo $! >"$d/z64.pid")
    local p
    p="$(port_of "$d/all.log")"
    [ -n "$p" ] || return 1
    export ALL="http://127.0.0.1:$p"
    p="$(port_of "$d/zip.log")"
    [ -n "$p" ] || return 1
    export ZIP="http://127.0.0.1:$p"
    p="$(port_of "$d/z64.log")"
    [ -n "$p" ] || return 1
    export Z64="http://127.0.0.1:$p"
}

teardown_file() {
    local f pid
    for f in all zip z64; do
        pid="$(cat "$BATS_FILE_TMPDIR/$f.pid" 2>/dev/null)" || continue
        kill -KILL "$pid" 2>/dev/null || true
    done
}

setup() {
    T="$BATS_TEST_TMPDIR"
}

teardown() {
    stop_bg_all
}

# what an archive of t/ must hold: the tree without the dotfile and the symlinks
expected_diff() {
    diff -r --no-dereference --exclude=.dot --exclude=escape --exclude=inside \
        --exclude=secret-link "$ROOT/t" "$1"
}

# the names an archive must not hold
no_forbidden_names() {
    if grep -E '\.dot|escape|inside|secret' "$1"; then
        echo "unexpected names in $1" >&2
        return 1
    fi
}

@test "--tar-gz: gzip and tar read it; extracted, it is the tree without dotfiles and symlinks" {
    run curl -sS --max-time 20 -D "$T/head" -o "$T/t.tar.gz" "$ALL/t/?download=tar.gz"
    [ "$status" -eq 0 ]
    grep -qiF 'Content-Type: application/gzip' "$T/head"
    grep -qiF 'Content-Disposition: attachment; filename="t.tar.gz"' "$T/head"
    gzip -t "$T/t.tar.gz"
    tar -tzf "$T/t.tar.gz" >"$T/names"
    grep -qxF 't/sub/numbers.txt' "$T/names"
    grep -qxF 't/sub/empty-dir/' "$T/names"
    no_forbidden_names "$T/names"
    mkdir "$T/x"
    tar -xzf "$T/t.tar.gz" -C "$T/x"
    expected_diff "$T/x/t"
    # compressed: the text file alone is 289 KB
    [ "$(stat -c %s "$T/t.tar.gz")" -lt 200000 ]
}

@test "--zip: unzip and python's zipfile check every CRC; extracted, it is the same tree" {
    run curl -sS --max-time 20 -D "$T/head" -o "$T/t.zip" "$ALL/t/?download=zip"
    [ "$status" -eq 0 ]
    grep -qiF 'Content-Type: application/zip' "$T/head"
    grep -qiF 'Content-Disposition: attachment; filename="t.zip"' "$T/head"
    unzip -t "$T/t.zip"
    unzip -Z1 "$T/t.zip" >"$T/names"
    grep -qxF 't/sub/numbers.txt' "$T/names"
    grep -qxF 't/sub/empty-dir/' "$T/names"
    no_forbidden_names "$T/names"
    mkdir "$T/x"
    (cd "$T/x" && unzip -q ../t.zip)
    expected_diff "$T/x/t"
    # testzip() reads every entry and checks its CRC; methods: text deflated, an empty file
    # and a .png stored; the UTF-8 flag (bit 11) on every name, the data-descriptor flag
    # (bit 3) on every entry with data
    run command -p python3 -c '
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
i = {e.filename: e for e in z.infolist()}
assert i["t/sub/numbers.txt"].compress_type == zipfile.ZIP_DEFLATED
assert i["t/sub/numbers.txt"].compress_size < i["t/sub/numbers.txt"].file_size // 2
assert i["t/photo.png"].compress_type == zipfile.ZIP_STORED
assert i["t/empty.txt"].compress_type == zipfile.ZIP_STORED
assert i["t/sub/caf\u00e9.txt"].flag_bits & 0x800
assert all(e.flag_bits & 0x800 for e in z.infolist())
assert all(e.flag_bits & 8 for e in z.infolist() if e.file_size)
assert i["t/sub/"].is_dir()
print("ok", len(i))
' "$T/t.zip"
    [ "$status" -eq 0 ]
    [[ "$output" == ok* ]]
}

@test "--zip: ZIP64 records (forced): unzip, zipinfo and zipfile read them" {
    run curl -sS --max-time 20 -o "$T/t.zip" "$Z64/t/?download=zip"
    [ "$status" -eq 0 ]
    unzip -t "$T/t.zip"
    zipinfo -v "$T/t.zip" >"$T/info"
    grep -qF 'minimum software version required to extract:   4.5' "$T/info"
    mkdir "$T/x"
    (cd "$T/x" && unzip -q ../t.zip)
    expected_diff "$T/x/t"
    # the end: a ZIP64 end record and locator before a classic end record whose fields are
    # all -1; every central record has a ZIP64 extra field (id 1)
    run command -p python3 -c '
import struct, sys, zipfile
b = open(sys.argv[1], "rb").read()
eocd = b[-22:]
assert eocd[:4] == b"PK\x05\x06"
assert struct.unpack("<HHII", eocd[8:20]) == (0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF)
loc = b[-42:-22]
assert loc[:4] == b"PK\x06\x07"
(end64,) = struct.unpack("<Q", loc[8:16])
assert b[end64:end64 + 4] == b"PK\x06\x06"
n, size, off = struct.unpack("<QQQ", b[end64 + 32:end64 + 56])
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
assert n == len(z.infolist())
assert off + size == end64
assert all(any(struct.unpack("<H", e.extra[k:k + 2])[0] == 1 for k in range(0, len(e.extra), 2))
           for e in z.infolist())
print("ok", n)
' "$T/t.zip"
    [ "$status" -eq 0 ]
    [[ "$output" == ok* ]]
}

@test "archives: listings link only the enabled formats; a format not enabled is a listing" {
    run curl -sS --max-time 20 "$ALL/t/"
    [[ "$output" == *'href="?download=tar"'* ]]
    [[ "$output" == *'href="?download=tar.gz"'* ]]
    [[ "$output" == *'href="?download=zip"'* ]]
    run curl -sS --max-time 20 "$ZIP/t/"
    [[ "$output" == *'href="?download=zip"'* ]]
    [[ "$output" != *'download=tar'* ]]
    run curl -sS --max-time 20 -D - -o /dev/null "$ZIP/t/?download=tar.gz"
    grep -qiF 'Content-Type: text/html' <<<"$output"
    run curl -sS --max-time 20 -D - -o /dev/null "$ZIP/?download=zip"
    grep -qiF 'filename="root.zip"' <<<"$output"
    # HEAD: the head alone
    run curl -sS --max-time 20 -I "$ALL/t/?download=zip"
    grep -qiF 'Content-Type: application/zip' <<<"$output"
}

@test "--zip: a file past 4 GiB (sparse, stored) gets ZIP64 sizes (VEGA_SLOW_TESTS=1)" {
    [ "${VEGA_SLOW_TESTS:-0}" = 1 ] || skip "streams 4.1 GiB (about 40 s under load): VEGA_SLOW_TESTS=1"
    mkdir -p "$T/big/b"
    truncate -s 4400000000 "$T/big/b/sparse.bin"
    printf 'small\n' >"$T/big/b/small.txt"
    start_bg "$T/big.log" "$SERVE" -p 0 --workers 1 --zip "$T/big"
    local p
    p="$(port_of "$T/big.log")"
    # the stream's end holds the central directory: its entry for sparse.bin must have the
    # ZIP64 sizes and the CRC-32 of 4.4e9 zero bytes
    curl -sS --max-time 300 "http://127.0.0.1:$p/b/?download=zip" | tail -c 65536 >"$T/tail"
    run command -p python3 -c '
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
assert b[-22:-18] == b"PK\x05\x06"
assert b[-42:-38] == b"PK\x06\x07"
i = b.index(b"PK\x01\x02")
found = False
while i >= 0:
    h = b[i:i + 46]
    crc, cs, us, nl, xl = struct.unpack("<IIIHH", h[16:32])
    name = b[i + 46:i + 46 + nl]
    x = b[i + 46 + nl:i + 46 + nl + xl]
    if name == b"b/sparse.bin":
        assert (cs, us) == (0xFFFFFFFF, 0xFFFFFFFF)
        xid, _, u, c = struct.unpack("<HHQQ", x[:20])
        assert xid == 1 and u == 4400000000 and c == 4400000000
        zc, z = 0, bytes(1 << 20)
        left = 4400000000
        while left:
            k = min(left, len(z))
            zc = zlib.crc32(z[:k], zc)
            left -= k
        assert crc == zc
        found = True
    i = b.find(b"PK\x01\x02", i + 46)
assert found
print("ok")
' "$T/tail"
    [ "$status" -eq 0 ]
    [ "$output" = ok ]
}

@test "--zip: 65541 entries get the ZIP64 end records (VEGA_SLOW_TESTS=1)" {
    [ "${VEGA_SLOW_TESTS:-0}" = 1 ] || skip "65540 files (about 5 s): VEGA_SLOW_TESTS=1"
    mkdir -p "$T/many/m"
    command -p python3 -c '
import sys
for i in range(65540):
    open("%s/f%05d" % (sys.argv[1], i), "w").close()
' "$T/many/m"
    start_bg "$T/many.log" "$SERVE" -p 0 --workers 1 --zip "$T/many"
    local p
    p="$(port_of "$T/many.log")"
    run curl -sS --max-time 60 -o "$T/m.zip" "http://127.0.0.1:$p/m/?download=zip"
    [ "$status" -eq 0 ]
    unzip -tq "$T/m.zip"
    run command -p python3 -c '
import struct, sys, zipfile
b = open(sys.argv[1], "rb").read()
assert struct.unpack("<HH", b[-14:-10]) == (0xFFFF, 0xFFFF)
assert b[-42:-38] == b"PK\x06\x07"
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
print(len(z.infolist()))
' "$T/m.zip"
    [ "$status" -eq 0 ]
    [ "$output" = 65541 ]
}
