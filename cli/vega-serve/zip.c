/* SPDX-License-Identifier: MIT */
/* vega-serve: --zip: the ZIP format of a folder download (PKWARE APPNOTE 6.3.10), streamed:
 * each entry is a local header with zero sizes and general-purpose bit 3, the data (deflated,
 * or stored when empty, already compressed or of 2 GiB and more) and a data descriptor with
 * the CRC-32 and sizes (§4.3.9); the central directory, spooled to an unlinked temporary file
 * while the walk goes, follows at the end. ZIP64 records (§4.3.14, §4.3.15, §4.5.3) where a
 * size, an offset or the entry count does not fit the classic fields. Names are flagged UTF-8
 * (bit 11) when they are. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <zlib.h>

#include "archive.h"

#define U32_MAX       0xffffffffu
#define STORE_FROM    ((uint64_t)1 << 31) /* files this large are stored, not deflated */
#define FLAG_DESC     0x0008u             /* sizes and CRC in a data descriptor */
#define FLAG_UTF8     0x0800u
#define MADE_BY       (3u << 8 | 45u) /* Unix, APPNOTE 4.5 */
#define LOCAL_SIG     0x04034b50u
#define CENTRAL_SIG   0x02014b50u
#define DESC_SIG      0x08074b50u
#define END64_SIG     0x06064b50u
#define LOCATOR64_SIG 0x07064b50u
#define END_SIG       0x06054b50u

struct zip {
    z_stream z;
    bool zinit;
    uint8_t *zbuf; /* ARCHIVE_BUF: deflate's output */
    FILE *cd;      /* the central directory so far */
    uint64_t entries, cd_size;
    bool force64; /* $VEGA_SERVE_ZIP64=1: ZIP64 records everywhere (tests) */
};

struct zentry {
    uint64_t off, csize, usize;
    uint32_t crc, attr;
    uint16_t flags, method, time, date;
    bool z64; /* the local header has a ZIP64 extra field: the descriptor's sizes are 8 bytes */
};

static uint8_t *le16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}

static uint8_t *le32(uint8_t *p, uint32_t v)
{
    p = le16(p, v & 0xffff);
    return le16(p, v >> 16);
}

static uint8_t *le64(uint8_t *p, uint64_t v)
{
    p = le32(p, (uint32_t)v);
    return le32(p, (uint32_t)(v >> 32));
}

static bool utf8_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80             ? 0
                   : (c & 0xe0) == 0xc0 ? 1
                   : (c & 0xf0) == 0xe0 ? 2
                   : (c & 0xf8) == 0xf0 ? 3
                                        : 9;
        if (k == 9 || (k == 1 && c < 0xc2) || i + 1 + k > n)
            return false;
        for (size_t j = 1; j <= k; j++)
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
        if ((k == 2 && c == 0xe0 && s[i + 1] < 0xa0) || (k == 3 && c == 0xf0 && s[i + 1] < 0x90) ||
            (k == 3 && c > 0xf4) || (k == 2 && c == 0xed && s[i + 1] >= 0xa0))
            return false; /* overlong, past U+10FFFF, or a surrogate */
        i += 1 + k;
    }
    return true;
}

/* MS-DOS date and time of the local time (APPNOTE 4.4.6), kept within 1980..2107. */
static void dos_time(int64_t mtime, uint16_t *t, uint16_t *d)
{
    time_t tt = (time_t)mtime;
    struct tm tm;
    if (!localtime_r(&tt, &tm) || tm.tm_year < 80) {
        *t = 0;
        *d = 1 << 5 | 1; /* 1980-01-01 */
        return;
    }
    if (tm.tm_year > 207) {
        *t = 23 << 11 | 59 << 5 | 29;
        *d = 127 << 9 | 12 << 5 | 31;
        return;
    }
    *t = (uint16_t)(tm.tm_hour << 11 | tm.tm_min << 5 | tm.tm_sec / 2);
    *d = (uint16_t)((tm.tm_year - 80) << 9 | (tm.tm_mon + 1) << 5 | tm.tm_mday);
}

/* Formats whose data is already compressed: stored, deflate would only spend time. */
static bool compressed_type(const char *name, size_t len)
{
    static const char *const ext[] = {"gz",   "tgz",   "bz2",  "xz",   "zst",  "br",   "zip",
                                      "7z",   "rar",   "jar",  "apk",  "png",  "jpg",  "jpeg",
                                      "gif",  "webp",  "avif", "heic", "mp3",  "mp4",  "m4a",
                                      "m4v",  "mkv",   "webm", "mov",  "ogg",  "opus", "flac",
                                      "woff", "woff2", "docx", "xlsx", "pptx", "odt",  "epub"};
    const char *dot = NULL;
    for (size_t i = len; i > 0 && name[i - 1] != '/'; i--)
        if (name[i - 1] == '.') {
            dot = name + i;
            break;
        }
    if (!dot)
        return false;
    size_t el = (size_t)(name + len - dot);
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        if (strlen(ext[i]) == el && strncasecmp(dot, ext[i], el) == 0)
            return true;
    return false;
}

static void entry_init(struct archive *a, struct zentry *e, size_t len, const struct stat *st)
{
    struct zip *z = a->state;
    memset(e, 0, sizeof *e);
    e->off = a->off;
    e->flags = utf8_valid((const unsigned char *)a->path, len) ? FLAG_UTF8 : 0;
    dos_time(st->st_mtim.tv_sec, &e->time, &e->date);
    e->z64 = z->force64;
}

/* The local header (§4.3.7): CRC and sizes are 0 (bit 3: in the descriptor; or truly 0). */
static int local_header(struct archive *a, const struct zentry *e, size_t len)
{
    uint8_t h[30 + 20], *p = h;
    p = le32(p, LOCAL_SIG);
    p = le16(p, e->z64 ? 45 : 20);
    p = le16(p, e->flags);
    p = le16(p, e->method);
    p = le16(p, e->time);
    p = le16(p, e->date);
    p = le32(p, 0);
    p = le32(p, e->z64 ? U32_MAX : 0);
    p = le32(p, e->z64 ? U32_MAX : 0);
    p = le16(p, (unsigned)len);
    p = le16(p, e->z64 ? 20 : 0);
    int r = archive_out(a, h, 30);
    if (r == 0)
        r = archive_out(a, a->path, len);
    if (r == 0 && e->z64) { /* ZIP64 extra (§4.5.3): both sizes, 0 until the descriptor */
        p = le16(h, 1);
        p = le16(p, 16);
        p = le64(p, 0);
        p = le64(p, 0);
        r = archive_out(a, h, 20);
    }
    return r;
}

/* The entry's central directory record (§4.3.12), to the spool. */
static int central(struct archive *a, const struct zentry *e, size_t len)
{
    struct zip *z = a->state;
    bool bu = z->force64 || e->usize >= U32_MAX, bc = z->force64 || e->csize >= U32_MAX;
    bool bo = z->force64 || e->off >= U32_MAX;
    uint8_t h[46], x[4 + 24], *p = x + 4;
    if (bu)
        p = le64(p, e->usize);
    if (bc)
        p = le64(p, e->csize);
    if (bo)
        p = le64(p, e->off);
    size_t xl = p == x + 4 ? 0 : (size_t)(p - x);
    le16(x, 1);
    le16(x + 2, (unsigned)(xl ? xl - 4 : 0));
    p = le32(h, CENTRAL_SIG);
    p = le16(p, MADE_BY);
    p = le16(p, xl || e->z64 ? 45 : 20);
    p = le16(p, e->flags);
    p = le16(p, e->method);
    p = le16(p, e->time);
    p = le16(p, e->date);
    p = le32(p, e->crc);
    p = le32(p, bc ? U32_MAX : (uint32_t)e->csize);
    p = le32(p, bu ? U32_MAX : (uint32_t)e->usize);
    p = le16(p, (unsigned)len);
    p = le16(p, (unsigned)xl);
    p = le16(p, 0); /* comment */
    p = le16(p, 0); /* disk */
    p = le16(p, 0); /* internal attributes */
    p = le32(p, e->attr);
    le32(p, bo ? U32_MAX : (uint32_t)e->off);
    if (fwrite(h, 1, sizeof h, z->cd) != sizeof h || fwrite(a->path, 1, len, z->cd) != len ||
        fwrite(x, 1, xl, z->cd) != xl)
        return -EIO;
    z->entries++;
    z->cd_size += sizeof h + len + xl;
    return 0;
}

static int add_dir(struct archive *a, size_t len, const struct stat *st)
{
    struct zentry e;
    entry_init(a, &e, len, st);
    e.attr = (uint32_t)(S_IFDIR | (st->st_mode & 07777)) << 16 | 0x10; /* MS-DOS directory */
    int r = local_header(a, &e, len);
    return r == 0 ? central(a, &e, len) : r;
}

/* Deflates n bytes of in (flush: Z_NO_FLUSH, or Z_FINISH with n 0) to the archive. */
static int deflate_out(struct archive *a, struct zentry *e, const uint8_t *in, size_t n, int flush)
{
    struct zip *z = a->state;
    z->z.next_in = (Bytef *)(uintptr_t)in;
    z->z.avail_in = (uInt)n;
    for (;;) {
        z->z.next_out = z->zbuf;
        z->z.avail_out = ARCHIVE_BUF;
        int d = deflate(&z->z, flush);
        if (d != Z_OK && d != Z_STREAM_END && d != Z_BUF_ERROR)
            return -EIO;
        size_t got = ARCHIVE_BUF - z->z.avail_out;
        e->csize += got;
        int r = archive_out(a, z->zbuf, got);
        if (r < 0)
            return r;
        if (flush == Z_FINISH ? d == Z_STREAM_END : z->z.avail_out != 0)
            return 0;
    }
}

static int add_file(struct archive *a, int fd, size_t len, const struct stat *st)
{
    struct zip *z = a->state;
    struct zentry e;
    entry_init(a, &e, len, st);
    e.attr = (uint32_t)(S_IFREG | (st->st_mode & 07777)) << 16;
    e.usize = (uint64_t)st->st_size;
    bool deflated = e.usize > 0 && e.usize < STORE_FROM && !compressed_type(a->path, len);
    e.method = deflated ? 8 : 0;
    if (e.usize > 0)
        e.flags |= FLAG_DESC;
    if (e.usize >= U32_MAX)
        e.z64 = true; /* stored: the compressed size is as large */
    int r = local_header(a, &e, len);
    if (r < 0)
        return r;
    if (deflated && deflateReset(&z->z) != Z_OK)
        return -EIO;
    uLong crc = crc32(0, Z_NULL, 0);
    for (uint64_t off = 0; off < e.usize;) {
        vega_ssize n = archive_read(a, fd, off, e.usize);
        if (n < 0)
            return (int)n;
        crc = crc32(crc, a->buf, (uInt)n);
        if (deflated) {
            r = deflate_out(a, &e, a->buf, (size_t)n, Z_NO_FLUSH);
        } else {
            r = archive_out(a, a->buf, (size_t)n);
            e.csize += (uint64_t)n;
        }
        if (r < 0)
            return r;
        off += (uint64_t)n;
    }
    if (deflated && (r = deflate_out(a, &e, NULL, 0, Z_FINISH)) < 0)
        return r;
    e.crc = (uint32_t)crc;
    if (e.flags & FLAG_DESC) { /* §4.3.9 */
        uint8_t d[24], *p = d;
        p = le32(p, DESC_SIG);
        p = le32(p, e.crc);
        if (e.z64) {
            p = le64(p, e.csize);
            p = le64(p, e.usize);
        } else {
            p = le32(p, (uint32_t)e.csize);
            p = le32(p, (uint32_t)e.usize);
        }
        if ((r = archive_out(a, d, (size_t)(p - d))) < 0)
            return r;
    }
    return central(a, &e, len);
}

static int end(struct archive *a)
{
    struct zip *z = a->state;
    uint64_t cd_off = a->off;
    if (fflush(z->cd) != 0 || fseek(z->cd, 0, SEEK_SET) != 0)
        return -EIO;
    for (uint64_t done = 0; done < z->cd_size;) {
        size_t want = done + ARCHIVE_BUF > z->cd_size ? (size_t)(z->cd_size - done) : ARCHIVE_BUF;
        if (fread(a->buf, 1, want, z->cd) != want)
            return -EIO;
        int r = archive_out(a, a->buf, want);
        if (r < 0)
            return r;
        done += want;
    }
    bool big = z->force64 || z->entries >= 0xffff || z->cd_size >= U32_MAX || cd_off >= U32_MAX;
    uint8_t h[56 + 20 + 22], *p = h;
    if (big) {
        uint64_t end64 = a->off;
        p = le32(p, END64_SIG); /* §4.3.14 */
        p = le64(p, 44);
        p = le16(p, MADE_BY);
        p = le16(p, 45);
        p = le32(p, 0);
        p = le32(p, 0);
        p = le64(p, z->entries);
        p = le64(p, z->entries);
        p = le64(p, z->cd_size);
        p = le64(p, cd_off);
        p = le32(p, LOCATOR64_SIG); /* §4.3.15 */
        p = le32(p, 0);
        p = le64(p, end64);
        p = le32(p, 1);
    }
    p = le32(p, END_SIG); /* §4.3.16: -1 where the ZIP64 record holds the value */
    p = le16(p, 0);
    p = le16(p, 0);
    p = le16(p, big ? 0xffff : (unsigned)z->entries);
    p = le16(p, big ? 0xffff : (unsigned)z->entries);
    p = le32(p, big ? U32_MAX : (uint32_t)z->cd_size);
    p = le32(p, big ? U32_MAX : (uint32_t)cd_off);
    p = le16(p, 0);
    return archive_out(a, h, (size_t)(p - h));
}

static int init(struct archive *a)
{
    struct zip *z = calloc(1, sizeof *z);
    if (!z)
        return -ENOMEM;
    a->state = z;
    const char *f = getenv("VEGA_SERVE_ZIP64");
    z->force64 = f && strcmp(f, "1") == 0;
    z->zbuf = malloc(ARCHIVE_BUF);
    if (!z->zbuf)
        return -ENOMEM;
    /* raw deflate (no zlib wrapper), as ZIP method 8 wants */
    if (deflateInit2(&z->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    z->zinit = true;
    z->cd = tmpfile();
    return z->cd ? 0 : errno ? -errno : -EIO;
}

static void fini(struct archive *a)
{
    struct zip *z = a->state;
    if (!z)
        return;
    if (z->zinit)
        deflateEnd(&z->z);
    if (z->cd)
        fclose(z->cd);
    free(z->zbuf);
    free(z);
    a->state = NULL;
}

const struct archive_format serve_zip_format = {
    .init = init,
    .dir = add_dir,
    .file = add_file,
    .end = end,
    .fini = fini,
};
