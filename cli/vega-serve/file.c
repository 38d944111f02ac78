/* SPDX-License-Identifier: MIT */
/* vega-serve: answering for one regular file: the representation (the file, a precompressed
 * sibling FILE.br/.zst/.gz, or compression on the fly), validators and conditional requests
 * (RFC 9110 §13), byte ranges (§14, multipart/byteranges for several), and the body by
 * sendfile, or read with the head into one write for small files. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

#define NEVER      VEGA_DEADLINE_NEVER
#define FIELDS_MAX (16 + SERVE_MAX_HEADERS)
/* Compression on the fly reads and writes in pieces of this size. */
#define ZCHUNK (64 * 1024)
/* A file body is sent in pieces: up to SEND_PIECE by sendfile when its two ends are in the
 * page cache, else up to READ_PIECE read by the ring into a buffer and written. */
#define SEND_PIECE (2u << 20)
#define READ_PIECE (256 * 1024)
/* Files up to this size are compressed whole in memory and sent with a Content-Length. */
#define FLY_SMALL (256 * 1024)

/* The chosen representation of the resource. */
struct rep {
    int fd;             /* the file to send (the original or a sibling); -1 with mem */
    const uint8_t *mem; /* or its content, from the cache */
    struct stat st;
    vega_http_coding coding; /* its content coding (identity, or a sibling's) */
    vega_http_coding fly;    /* compress on the fly with this (identity: no) */
    char etag[80];
    size_t etag_len;
    char lastmod[VEGA_HTTP_DATE_LEN + 1];
};

static const char *suffix_of(vega_http_coding c)
{
    switch (c) {
    case VEGA_HTTP_CODING_BR:
        return ".br";
    case VEGA_HTTP_CODING_ZSTD:
        return ".zst";
    case VEGA_HTTP_CODING_GZIP:
        return ".gz";
    default:
        return NULL;
    }
}

static vega_compress_kind kind_of(vega_http_coding c)
{
    return c == VEGA_HTTP_CODING_BR     ? VEGA_COMPRESS_BROTLI
           : c == VEGA_HTTP_CODING_ZSTD ? VEGA_COMPRESS_ZSTD
                                        : VEGA_COMPRESS_GZIP;
}

size_t serve_add_user_headers(vega_http_field *f, size_t n, size_t cap)
{
    for (size_t i = 0; i < serve_o.nheaders && n < cap; i++)
        f[n++] = serve_o.headers[i];
    return n;
}

static void field(vega_http_field *f, size_t *n, const char *name, const char *value, size_t vlen)
{
    f[*n].name.ptr = name;
    f[*n].name.len = strlen(name);
    f[*n].value.ptr = value;
    f[*n].value.len = vlen;
    (*n)++;
}

#define FIELD_S(f, n, name, value) field(f, n, name, value, strlen(value))

int serve_simple(vega_http_exchange *x, int status, const vega_http_field *extra, size_t n)
{
    vega_http_field f[FIELDS_MAX];
    size_t nf = 0;
    char body[128];
    int blen = 0;
    if (!vega_http_status_has_no_content(status))
        blen = snprintf(body, sizeof(body), "%d %s\n", status, vega_http_status_reason(status));
    if (blen < 0)
        blen = 0;
    if (blen > 0)
        FIELD_S(f, &nf, "Content-Type", "text/plain; charset=utf-8");
    for (size_t i = 0; i < n && nf < 16; i++)
        f[nf++] = extra[i];
    nf = serve_add_user_headers(f, nf, FIELDS_MAX);
    return vega_http_respond(x, status, f, nf, body, (size_t)blen, NEVER);
}

int serve_unavailable(vega_http_exchange *x)
{
    vega_http_field ra = {{"Retry-After", 11}, {"1", 1}};
    return serve_simple(x, 503, &ra, 1);
}

/* Opens rel + suffix when it is a regular file; -1 otherwise. */
static int open_sibling(const char *rel, size_t len, const char *suffix, struct stat *st)
{
    char path[SERVE_PATH_MAX + 16];
    size_t sl = strlen(suffix);
    if (len + sl >= sizeof(path))
        return -1;
    memcpy(path, rel, len);
    memcpy(path + len, suffix, sl);
    int fd = serve_open(path, len + sl);
    if (fd < 0)
        return -1;
    if (serve_fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Picks the coding: a precompressed sibling the client accepts (ranges then apply to it), else
 * compression on the fly for text, else the file itself. Returns whether the answer may vary
 * with Accept-Encoding. */
static bool choose_rep(const vega_http_request *req, struct rep *r, const char *rel, size_t rel_len,
                       bool text, bool siblings)
{
    size_t ae_len;
    char aebuf[1024];
    const char *ae = serve_req_list(req, "Accept-Encoding", aebuf, sizeof(aebuf), &ae_len);
    bool fly_ok = serve_o.compress && text && (uint64_t)r->st.st_size >= serve_o.compress_min;
    bool vary = fly_ok;
    if (!ae)
        return vary;
    vega_http_coding prefs[4] = {VEGA_HTTP_CODING_BR, VEGA_HTTP_CODING_ZSTD, VEGA_HTTP_CODING_GZIP,
                                 VEGA_HTTP_CODING_IDENTITY};
    size_t np = 4;
    while (siblings && np > 1) {
        int c = vega_http_coding_choose(ae, ae_len, prefs, np);
        if (c < 0 || c == VEGA_HTTP_CODING_IDENTITY)
            break;
        struct stat sst;
        int sfd = open_sibling(rel, rel_len, suffix_of((vega_http_coding)c), &sst);
        if (sfd >= 0) {
            close(r->fd);
            r->fd = sfd;
            r->st = sst;
            r->coding = (vega_http_coding)c;
            return true;
        }
        size_t k = 0;
        for (size_t i = 0; i < np; i++)
            if (prefs[i] != (vega_http_coding)c)
                prefs[k++] = prefs[i];
        np = k;
    }
    /* Ranges of a compressed stream made on the fly would need the whole stream each time:
     * a Range request gets the file itself. */
    if (fly_ok && !serve_req_field(req, "Range", &(size_t){0})) {
        vega_http_coding zp[4] = {VEGA_HTTP_CODING_BR, VEGA_HTTP_CODING_ZSTD, VEGA_HTTP_CODING_GZIP,
                                  VEGA_HTTP_CODING_IDENTITY};
        int c = vega_http_coding_choose(ae, ae_len, zp, 4);
        if (c > 0)
            r->fly = (vega_http_coding)c;
    }
    return vary;
}

static void make_validators(struct rep *r)
{
    vega_http_coding c = r->fly != VEGA_HTTP_CODING_IDENTITY ? r->fly : r->coding;
    /* Strong: inode, size and modification time (ns) change when the bytes do; the coding
     * tells the representations of one file apart. */
    int n = snprintf(r->etag, sizeof(r->etag), "\"%" PRIx64 "-%" PRIx64 "-%" PRIx64 "%s%s\"",
                     (uint64_t)r->st.st_ino, (uint64_t)r->st.st_size,
                     (uint64_t)r->st.st_mtim.tv_sec * 1000000000u + (uint64_t)r->st.st_mtim.tv_nsec,
                     c ? "-" : "", c ? vega_http_coding_name(c) : "");
    r->etag_len = n > 0 && (size_t)n < sizeof(r->etag) && serve_o.etag ? (size_t)n : 0;
    if (!serve_o.last_modified ||
        vega_http_date_format(r->st.st_mtim.tv_sec, r->lastmod, sizeof(r->lastmod)) < 0)
        r->lastmod[0] = '\0';
}

static vega_http_etag current_tag(const struct rep *r)
{
    vega_http_etag t = {{r->etag + 1, r->etag_len >= 2 ? r->etag_len - 2 : 0}, false};
    /* --no-etag: a tag no request can hold (a control byte), so that only "*" matches */
    if (r->etag_len == 0)
        t.opaque.ptr = "\x01", t.opaque.len = 1;
    return t;
}

/* A date condition, ignored with --no-last-modified (the client cannot know the date). */
static bool date_field(const vega_http_request *req, const char *name, int64_t *t)
{
    if (!serve_o.last_modified)
        return false;
    size_t len;
    const char *v = serve_req_field(req, name, &len);
    return v && vega_http_date_parse(v, len, (int64_t)time(NULL), t) == 0;
}

/* RFC 9110 §13.2.2: the preconditions in their order. Returns 0 (go on), 304 or 412. */
static int preconditions(const vega_http_request *req, const struct rep *r)
{
    vega_http_etag cur = current_tag(r);
    size_t len;
    int64_t t;
    char buf[1024];
    const char *v = serve_req_list(req, "If-Match", buf, sizeof(buf), &len);
    if (v) {
        if (vega_http_etag_list_match(v, len, &cur, true, true) != 1)
            return 412;
    } else if (date_field(req, "If-Unmodified-Since", &t) && r->st.st_mtim.tv_sec > t) {
        return 412;
    }
    v = serve_req_list(req, "If-None-Match", buf, sizeof(buf), &len);
    if (v) {
        int m = vega_http_etag_list_match(v, len, &cur, true, false);
        if (m == 1)
            return 304;
    } else if (date_field(req, "If-Modified-Since", &t) && r->st.st_mtim.tv_sec <= t) {
        return 304;
    }
    return 0;
}

/* If-Range (§13.1.5): the range is served only when the validator still matches. */
static bool if_range_ok(const vega_http_request *req, const struct rep *r)
{
    size_t len;
    const char *v = serve_req_field(req, "If-Range", &len);
    if (!v)
        return true;
    if (len > 0 && (v[0] == '"' || v[0] == 'W')) {
        vega_http_etag tag, cur = current_tag(r);
        return vega_http_etag_parse(v, len, &tag) == 0 && vega_http_etag_eq_strong(&tag, &cur);
    }
    int64_t t;
    return serve_o.last_modified && vega_http_date_parse(v, len, (int64_t)time(NULL), &t) == 0 &&
           t == r->st.st_mtim.tv_sec;
}

/* The fields every answer about this representation carries. */
static size_t rep_fields(vega_http_field *f, const struct rep *r, const char *type, bool vary,
                         bool ranges)
{
    size_t n = 0;
    if (type)
        FIELD_S(f, &n, "Content-Type", type);
    if (r->etag_len)
        field(f, &n, "ETag", r->etag, r->etag_len);
    if (r->lastmod[0])
        field(f, &n, "Last-Modified", r->lastmod, VEGA_HTTP_DATE_LEN);
    vega_http_coding c = r->fly != VEGA_HTTP_CODING_IDENTITY ? r->fly : r->coding;
    if (c != VEGA_HTTP_CODING_IDENTITY)
        FIELD_S(f, &n, "Content-Encoding", vega_http_coding_name(c));
    if (vary)
        FIELD_S(f, &n, "Vary", "Accept-Encoding");
    if (ranges)
        FIELD_S(f, &n, "Accept-Ranges", "bytes");
    return n;
}

/* A read off the worker thread (fsio.c), or a copy from the cached content: the count or
 * -errno. */
static vega_ssize rep_read(const struct rep *r, void *buf, size_t len, uint64_t off)
{
    if (!r->mem)
        return serve_pread(r->fd, buf, len, off);
    uint64_t size = (uint64_t)r->st.st_size;
    size_t n = off >= size ? 0 : (size_t)(size - off < len ? size - off : len);
    memcpy(buf, r->mem + off, n);
    return (vega_ssize)n;
}

/* Whether the piece [off, off + len) of fd looks resident in the page cache: its first and
 * last byte read with RWF_NOWAIT, which fails (EAGAIN) rather than wait for the disk. A file
 * system that cannot tell (EOPNOTSUPP: FUSE, some network file systems) counts as cold. Two
 * probes, not every page: a piece evicted in its middle can still make sendfile block. */
static bool looks_cached(int fd, uint64_t off, size_t len)
{
    char b;
    struct iovec iov = {&b, 1};
    if (preadv2(fd, &iov, 1, (off_t)off, RWF_NOWAIT) != 1)
        return false;
    return len <= 1 || preadv2(fd, &iov, 1, (off_t)(off + len - 1), RWF_NOWAIT) == 1;
}

static int send_range(vega_http_exchange *x, const struct rep *r, uint64_t off, uint64_t len)
{
    if (r->mem) {
        vega_ssize w = vega_http_response_write(x, r->mem + off, (size_t)len, NEVER);
        return w < 0 ? (int)w : 0;
    }
    int fd = r->fd;
    uint8_t *buf = NULL;
    int e = 0;
    while (len > 0 && e == 0) {
        size_t piece = len > SEND_PIECE ? SEND_PIECE : (size_t)len;
        if (looks_cached(fd, off, piece)) {
            vega_ssize w = vega_http_response_sendfile(x, fd, off, piece, NEVER);
            if (w < 0) {
                e = (int)w;
                break;
            }
            off += (uint64_t)w;
            len -= (uint64_t)w;
            continue;
        }
        /* Not in the page cache: sendfile would read the disk on the worker thread. The
         * ring reads it (or the blocking pool), then it is written from memory. */
        if (piece > READ_PIECE)
            piece = READ_PIECE;
        if (!buf && !(buf = malloc(READ_PIECE))) {
            e = -ENOMEM;
            break;
        }
        vega_ssize got = serve_pread_full(fd, buf, piece, off);
        if (got < 0) {
            e = (int)got;
        } else if ((size_t)got < piece) {
            e = -ENODATA; /* shrank since fstat: the promised length cannot be sent */
        } else {
            vega_ssize w = vega_http_response_write(x, buf, piece, NEVER);
            e = w < 0 ? (int)w : 0;
            off += piece;
            len -= piece;
        }
    }
    free(buf);
    return e;
}

/* A small body is read first and sent with the head in one write. Returns 0 or a code. */
static int respond_small(vega_http_exchange *x, int status, const vega_http_field *f, size_t n,
                         int fd, uint64_t off, size_t len)
{
    char buf[SERVE_SMALL_FILE];
    vega_ssize got = serve_pread_full(fd, buf, len, off);
    if (got < 0)
        return (int)got;
    if ((size_t)got < len)
        return -ENODATA; /* the file shrank since fstat: nothing was sent yet */
    return vega_http_respond(x, status, f, n, buf, len, NEVER);
}

static int respond_body(vega_http_exchange *x, bool head, int status, const vega_http_field *f,
                        size_t n, const struct rep *rp, uint64_t off, uint64_t len)
{
    /* Cached content goes with the head in one write whatever its size. */
    if (!head && rp->mem)
        return vega_http_respond(x, status, f, n, rp->mem + off, (size_t)len, NEVER);
    if (!head && len < SERVE_SMALL_FILE)
        return respond_small(x, status, f, n, rp->fd, off, (size_t)len);
    int r = vega_http_response_start(x, status, f, n, len);
    if (r == 0 && !head)
        r = send_range(x, rp, off, len);
    if (r == 0)
        r = vega_http_response_finish(x, NULL, 0, NEVER);
    return r;
}

static int respond_multipart(vega_http_exchange *x, bool head, vega_http_field *f, size_t n,
                             const struct rep *r, const char *type, const vega_http_range *rg,
                             size_t count)
{
    const vega_http_request *req = vega_http_exchange_request(x);
    uint64_t size = (uint64_t)r->st.st_size;
    char boundary[48], ctype[96];
    snprintf(boundary, sizeof(boundary), "vega-%016" PRIx64 "-%" PRIx64 "-%x", (uint64_t)req->start,
             req->conn_id, req->conn_seq);
    snprintf(ctype, sizeof(ctype), "multipart/byteranges; boundary=%s", boundary);
    f[n].name.ptr = "Content-Type", f[n].name.len = 12;
    f[n].value.ptr = ctype, f[n].value.len = strlen(ctype);
    n++;
    /* The part heads are formatted twice (for the length, then to send): cheaper than holding
     * up to VEGA_HTTP_RANGES_MAX of them. */
    char part[256];
    uint64_t total = 0;
    for (size_t i = 0; i < count; i++) {
        char cr[64];
        vega_http_content_range_format(&rg[i], size, cr, sizeof(cr));
        int pl =
            snprintf(part, sizeof(part), "%s--%s\r\nContent-Type: %s\r\nContent-Range: %s\r\n\r\n",
                     i ? "\r\n" : "", boundary, type, cr);
        total += (uint64_t)pl + (rg[i].last - rg[i].first + 1);
    }
    int el = snprintf(part, sizeof(part), "\r\n--%s--\r\n", boundary);
    total += (uint64_t)el;
    int e = vega_http_response_start(x, 206, f, n, total);
    for (size_t i = 0; e == 0 && !head && i < count; i++) {
        char cr[64];
        vega_http_content_range_format(&rg[i], size, cr, sizeof(cr));
        int pl =
            snprintf(part, sizeof(part), "%s--%s\r\nContent-Type: %s\r\nContent-Range: %s\r\n\r\n",
                     i ? "\r\n" : "", boundary, type, cr);
        vega_ssize w = vega_http_response_write(x, part, (size_t)pl, NEVER);
        e = w < 0 ? (int)w : send_range(x, r, rg[i].first, rg[i].last - rg[i].first + 1);
    }
    if (e == 0 && !head) {
        el = snprintf(part, sizeof(part), "\r\n--%s--\r\n", boundary);
        vega_ssize w = vega_http_response_write(x, part, (size_t)el, NEVER);
        e = w < 0 ? (int)w : 0;
    }
    if (e == 0)
        e = vega_http_response_finish(x, NULL, 0, NEVER);
    return e;
}

/* A small file is compressed whole, so that the answer has a Content-Length and goes out in
 * one write. */
static int respond_fly_small(vega_http_exchange *x, const vega_http_field *f, size_t n,
                             const struct rep *r)
{
    size_t size = (size_t)r->st.st_size, got = 0;
    uint8_t *out = NULL;
    size_t out_len = 0;
    if (r->mem) {
        int e = vega_compress_buffer(kind_of(r->fly), VEGA_COMPRESS_LEVEL_DEFAULT, r->mem, size, 0,
                                     &out, &out_len);
        if (e == 0)
            e = vega_http_respond(x, 200, f, n, out, out_len, NEVER);
        free(out);
        return e;
    }
    uint8_t *in = malloc(size ? size : 1);
    if (!in)
        return -ENOMEM;
    vega_ssize k = serve_pread_full(r->fd, in, size, 0);
    if (k < 0) {
        free(in);
        return (int)k;
    }
    got = (size_t)k; /* short: the file shrank, compress what is there */
    /* No output limit: the input is at most FLY_SMALL, and the codecs' worst case is a few
     * bytes per block above it. */
    int e = vega_compress_buffer(kind_of(r->fly), VEGA_COMPRESS_LEVEL_DEFAULT, in, got, 0, &out,
                                 &out_len);
    free(in);
    if (e == 0)
        e = vega_http_respond(x, 200, f, n, out, out_len, NEVER);
    free(out);
    return e;
}

/* Compresses the file as it is read; the length is unknown, so the body goes chunked. */
static int respond_fly(vega_http_exchange *x, bool head, const vega_http_field *f, size_t n,
                       const struct rep *r)
{
    if (!head && (uint64_t)r->st.st_size <= FLY_SMALL)
        return respond_fly_small(x, f, n, r);
    vega_compressor *c = NULL;
    uint8_t *in = NULL, *out = NULL;
    int e = 0;
    if (!head) {
        e = vega_compressor_new(&c, kind_of(r->fly), VEGA_COMPRESS_LEVEL_DEFAULT, NULL);
        if (e == 0) {
            in = malloc(ZCHUNK);
            out = malloc(ZCHUNK);
            if (!in || !out)
                e = -ENOMEM;
        }
    }
    if (e == 0)
        e = vega_http_response_start(x, 200, f, n, VEGA_HTTP_LENGTH_UNKNOWN);
    uint64_t off = 0, size = (uint64_t)r->st.st_size;
    while (e == 0 && !head) {
        size_t want = size - off > ZCHUNK ? ZCHUNK : (size_t)(size - off);
        vega_ssize got = want ? rep_read(r, in, want, off) : 0;
        if (got < 0) {
            e = (int)got;
            break;
        }
        off += (uint64_t)got;
        /* A file that shrank ends the stream early; one that grew is cut at the old size. */
        vega_compress_flush fl =
            got == 0 || off >= size ? VEGA_COMPRESS_FLUSH_FINISH : VEGA_COMPRESS_FLUSH_NONE;
        size_t pos = 0;
        vega_ssize w;
        do {
            size_t used = 0;
            w = vega_compressor_write(c, in + pos, (size_t)got - pos, &used, out, ZCHUNK, fl);
            if (w < 0)
                break;
            pos += used;
            if (w > 0) {
                vega_ssize s = vega_http_response_write(x, out, (size_t)w, NEVER);
                if (s < 0) {
                    w = s;
                    break;
                }
            }
        } while (w == ZCHUNK);
        if (w < 0)
            e = (int)w;
        if (fl == VEGA_COMPRESS_FLUSH_FINISH)
            break;
    }
    if (e == 0)
        e = vega_http_response_finish(x, NULL, 0, NEVER);
    vega_compressor_free(c);
    free(in);
    free(out);
    return e;
}

static void rep_close(struct rep *r)
{
    if (r->fd >= 0)
        close(r->fd);
}

static int serve_rep(vega_http_exchange *x, struct rep *rp, const char *rel, size_t rel_len,
                     bool siblings);

int serve_file(vega_http_exchange *x, int fd, const struct stat *st, const char *rel,
               size_t rel_len)
{
    struct rep r;
    memset(&r, 0, sizeof(r));
    r.fd = fd;
    r.st = *st;
    return serve_rep(x, &r, rel, rel_len, true);
}

int serve_file_cached(vega_http_exchange *x, const struct serve_cache_entry *e)
{
    struct rep r;
    memset(&r, 0, sizeof(r));
    r.fd = -1;
    r.mem = e->data;
    r.st = e->st;
    return serve_rep(x, &r, e->name, e->name_len, false);
}

static int serve_rep(vega_http_exchange *x, struct rep *rp, const char *rel, size_t rel_len,
                     bool siblings)
{
    const vega_http_request *req = vega_http_exchange_request(x);
    bool head = req->method == VEGA_HTTP_METHOD_HEAD;
    bool text;
    const char *type = serve_mime_type(rel, rel_len, &text);
    struct rep r = *rp;
    bool vary = choose_rep(req, &r, rel, rel_len, text, siblings);
    make_validators(&r);

    vega_http_field f[FIELDS_MAX];
    int e;
    int pre = preconditions(req, &r);
    if (pre) {
        size_t n = rep_fields(f, &r, NULL, vary, false);
        /* A 304 carries the validators; a 412 is an error and says nothing more. */
        e = pre == 304 ? serve_simple(x, 304, f, n) : serve_simple(x, 412, NULL, 0);
        rep_close(&r);
        return e;
    }
    uint64_t size = (uint64_t)r.st.st_size;
    if (r.fly != VEGA_HTTP_CODING_IDENTITY) {
        size_t n = rep_fields(f, &r, type, vary, false);
        n = serve_add_user_headers(f, n, FIELDS_MAX);
        e = respond_fly(x, head, f, n, &r);
        rep_close(&r);
        return e;
    }
    size_t rlen;
    const char *range =
        req->method == VEGA_HTTP_METHOD_GET ? serve_req_field(req, "Range", &rlen) : NULL;
    vega_http_range rg[VEGA_HTTP_RANGES_MAX];
    size_t count = 0;
    int pr = -ENOENT;
    if (range && if_range_ok(req, &r))
        pr = vega_http_range_parse(range, rlen, size, rg, VEGA_HTTP_RANGES_MAX, &count);
    if (pr == 0 && count > 1) {
        /* Many overlapping ranges ask for more than the file: a denial-of-service smell
         * (§17.15); the whole file is the cheaper answer. */
        uint64_t sum = 0;
        for (size_t i = 0; i < count; i++)
            sum += rg[i].last - rg[i].first + 1;
        if (sum > size)
            pr = -E2BIG;
    }
    if (pr == -ERANGE) {
        char cr[64];
        vega_http_content_range_format(NULL, size, cr, sizeof(cr));
        size_t n = rep_fields(f, &r, NULL, vary, true);
        field(f, &n, "Content-Range", cr, strlen(cr));
        e = serve_simple(x, 416, f, n);
    } else if (pr == 0 && count == 1) {
        char cr[64];
        vega_http_content_range_format(&rg[0], size, cr, sizeof(cr));
        size_t n = rep_fields(f, &r, type, vary, true);
        field(f, &n, "Content-Range", cr, strlen(cr));
        n = serve_add_user_headers(f, n, FIELDS_MAX);
        e = respond_body(x, head, 206, f, n, &r, rg[0].first, rg[0].last - rg[0].first + 1);
    } else if (pr == 0) {
        size_t n = rep_fields(f, &r, NULL, vary, true);
        n = serve_add_user_headers(f, n, FIELDS_MAX - 1);
        e = respond_multipart(x, head, f, n, &r, type, rg, count);
    } else {
        size_t n = rep_fields(f, &r, type, vary, true);
        n = serve_add_user_headers(f, n, FIELDS_MAX);
        e = respond_body(x, head, 200, f, n, &r, 0, size);
    }
    rep_close(&r);
    return e;
}
