/* SPDX-License-Identifier: MIT */
/* vega-serve: --tar and --tar-gz: the tar format of a folder download (POSIX.1-2001
 * pax/ustar, pax headers for long paths, base-256 sizes past 8 GiB), written entry by entry as
 * archive.c walks the tree; for --tar-gz archive.c sends it through gzip. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "archive.h"

#define BLOCK 512

static int out(struct archive *t, const void *p, size_t n)
{
    return archive_out(t, p, n);
}

static void octal(char *f, size_t width, uint64_t v)
{
    /* width - 1 digits and a NUL */
    for (size_t i = width - 1; i-- > 0;) {
        f[i] = (char)('0' + (v & 7));
        v >>= 3;
    }
    f[width - 1] = '\0';
}

/* One 512-byte header; name and prefix already split (or a pax header's own name). */
static int header(struct archive *t, const char *name, size_t nl, const char *prefix, size_t pl,
                  char type, unsigned mode, uint64_t size, int64_t mtime)
{
    char h[BLOCK];
    memset(h, 0, sizeof h);
    memcpy(h, name, nl);
    octal(h + 100, 8, mode & 07777);
    octal(h + 108, 8, 0);
    octal(h + 116, 8, 0);
    if (size < ((uint64_t)1 << 33)) {
        octal(h + 124, 12, size);
    } else { /* base-256 (GNU, read by every tar in use) */
        h[124] = (char)0x80;
        for (int i = 11; i >= 4; i--, size >>= 8)
            h[124 + i] = (char)(size & 0xff);
    }
    octal(h + 136, 12, mtime > 0 ? (uint64_t)mtime : 0);
    h[156] = type;
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memcpy(h + 345, prefix, pl);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < BLOCK; i++)
        sum += (unsigned char)h[i];
    octal(h + 148, 7, sum);
    h[155] = ' ';
    return out(t, h, sizeof h);
}

static int pad(struct archive *t, uint64_t size)
{
    static const char zero[BLOCK];
    size_t r = (size_t)(size % BLOCK);
    return r ? out(t, zero, BLOCK - r) : 0;
}

/* The header of t->path (len bytes): ustar name/prefix when it fits, else a pax header with
 * the path first. */
static int entry_header(struct archive *t, size_t len, char type, const struct stat *st,
                        uint64_t size)
{
    const char *p = t->path;
    if (len <= 100)
        return header(t, p, len, "", 0, type, st->st_mode, size, st->st_mtim.tv_sec);
    /* a split at a "/" with at most 155 bytes before it and 100 after */
    for (size_t i = len - 1; i > 0; i--) {
        if (p[i] != '/' || i > 155 || i + 1 + 100 < len || i == len - 1)
            continue;
        return header(t, p + i + 1, len - i - 1, p, i, type, st->st_mode, size, st->st_mtim.tv_sec);
    }
    /* pax: "LEN path=PATH\n", LEN counting itself */
    char rec[ARCHIVE_PATH_MAX + 32];
    size_t body = len + 7; /* " path=" and "\n" */
    size_t total = body + 1;
    while ((size_t)snprintf(NULL, 0, "%zu", total) + body != total)
        total++;
    int rl = snprintf(rec, sizeof rec, "%zu path=%.*s\n", total, (int)len, p);
    if (rl < 0 || (size_t)rl != total)
        return -EINVAL;
    int e = header(t, "PaxHeader", 9, "", 0, 'x', 0644, (uint64_t)rl, st->st_mtim.tv_sec);
    if (e == 0)
        e = out(t, rec, (size_t)rl);
    if (e == 0)
        e = pad(t, (uint64_t)rl);
    if (e == 0) /* the ustar name: the path's end, for readers without pax */
        e = header(t, p + len - 100, 100, "", 0, type, st->st_mode, size, st->st_mtim.tv_sec);
    return e;
}

static int add_file(struct archive *t, int fd, size_t len, const struct stat *st)
{
    uint64_t size = (uint64_t)st->st_size;
    int e = entry_header(t, len, '0', st, size);
    uint64_t off = 0;
    while (e == 0 && off < size) {
        vega_ssize r = archive_read(t, fd, off, size);
        if (r < 0)
            return (int)r;
        e = out(t, t->buf, (size_t)r);
        off += (uint64_t)r;
    }
    return e == 0 ? pad(t, size) : e;
}

static int add_dir(struct archive *t, size_t len, const struct stat *st)
{
    return entry_header(t, len, '5', st, 0);
}

static int end(struct archive *t)
{
    static const char zero[2 * BLOCK];
    return out(t, zero, sizeof zero); /* the end: two zero blocks */
}

const struct archive_format serve_tar_format = {
    .dir = add_dir,
    .file = add_file,
    .end = end,
};
