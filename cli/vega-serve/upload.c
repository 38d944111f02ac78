/* SPDX-License-Identifier: MIT */
/* vega-serve: --upload and --mkdir: a PUT of one file, a multipart/form-data POST (RFC 7578)
 * from the listing's form, a folder made by a POST. Every file is written to a hidden temporary
 * file in its own directory and renamed into place once complete (RENAME_NOREPLACE unless
 * --overwrite), so that no partial file is ever seen under the name, whatever ends the upload. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <vega/crypto.h>

#include "serve.h"

#define NEVER VEGA_DEADLINE_NEVER
/* Body reads go through a buffer of this size. */
#define UP_BUF (64 * 1024)
/* A part's header block at most, and the parts of one form. */
#define PART_HEAD_MAX 8192
#define PARTS_MAX     1000
/* A multipart boundary is at most 70 characters (RFC 2046 §5.1.1). */
#define BOUNDARY_MAX 70

/* A file being received: the directory, the temporary name, the final name. */
struct upfile {
    int dirfd;
    int fd;
    char tmp[48];
    char name[256];
};

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 255 || s[0] == '.')
        return false; /* empty, too long, hidden, "." or ".." */
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == '/' || s[i] == '\\')
            return false;
    return true;
}

/* Opens the directory norm (a normalised path, "/" for the root) under the root with the read
 * path's rules. Returns an fd or -errno (-ENOTDIR: not a directory). */
static int open_dir(const char *norm, size_t n)
{
    int fd = serve_open(norm, n);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
        close(fd);
        return -ENOTDIR;
    }
    return fd;
}

static int up_open(struct upfile *u, int dirfd, const char *name, size_t n)
{
    u->dirfd = dirfd;
    u->fd = -1;
    memcpy(u->name, name, n);
    u->name[n] = '\0';
    for (int tries = 0; tries < 8; tries++) {
        uint8_t r[8];
        if (vega_crypto_random(r, sizeof r) < 0)
            return -EIO;
        snprintf(u->tmp, sizeof u->tmp, ".vega-upload-%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1],
                 r[2], r[3], r[4], r[5], r[6], r[7]);
        u->fd = openat(dirfd, u->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (u->fd >= 0)
            return 0;
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

static int up_write(struct upfile *u, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(u->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Drops the temporary file (an upload that did not end well). */
static void up_abort(struct upfile *u)
{
    if (u->fd >= 0) {
        close(u->fd);
        u->fd = -1;
        unlinkat(u->dirfd, u->tmp, 0);
    }
}

/* Puts the complete file in place. Returns 0, -EEXIST (there is one, no --overwrite), -EISDIR,
 * or -errno; the temporary file is gone either way. *replaced: an existing file was replaced. */
static int up_commit(struct upfile *u, bool *replaced)
{
    *replaced = false;
    int r = fsync(u->fd) < 0 ? -errno : 0;
    if (close(u->fd) < 0 && r == 0)
        r = -errno;
    u->fd = -1;
    if (r == 0) {
        struct stat st;
        bool exists = fstatat(u->dirfd, u->name, &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (exists && S_ISDIR(st.st_mode)) {
            r = -EISDIR;
        } else if (serve_o.overwrite) {
            r = renameat(u->dirfd, u->tmp, u->dirfd, u->name) < 0 ? -errno : 0;
            *replaced = exists;
        } else {
            r = renameat2(u->dirfd, u->tmp, u->dirfd, u->name, RENAME_NOREPLACE) < 0 ? -errno : 0;
            if (r == -EINVAL) /* a file system without it: link(2) does not replace either */
                r = linkat(u->dirfd, u->tmp, u->dirfd, u->name, 0) < 0 ? -errno : 1;
        }
    }
    if (r != 0)
        unlinkat(u->dirfd, u->tmp, 0);
    return r > 0 ? 0 : r;
}

static int answer_errno(vega_http_exchange *x, int e)
{
    switch (e) {
    case -EEXIST:
    case -EISDIR:
    case -ENOTEMPTY:
        return serve_simple(x, 409, NULL, 0);
    case -EACCES:
    case -EPERM:
    case -EROFS:
        return serve_simple(x, 403, NULL, 0);
    case -ENOSPC:
    case -EDQUOT:
        return serve_simple(x, 507, NULL, 0);
    case -ENOENT:
    case -ENOTDIR:
        return serve_simple(x, 404, NULL, 0);
    default:
        return serve_simple(x, 500, NULL, 0);
    }
}

/* A cross-site form must not write here (a browser sends a simple POST to any origin, with the
 * Basic credentials it holds): an Origin, when sent, must name this host. */
static bool same_origin(const vega_http_request *req)
{
    size_t ol;
    const char *o = serve_req_field(req, "Origin", &ol);
    if (!o)
        return true;
    const char *h = memchr(o, ':', ol);
    if (!h || h + 3 > o + ol || h[1] != '/' || h[2] != '/')
        return false;
    h += 3;
    size_t hl = ol - (size_t)(h - o);
    return req->authority.ptr && req->authority.len == hl &&
           strncasecmp(req->authority.ptr, h, hl) == 0;
}

/* 413, and the connection closes (the rest of the body is not read). */
static int too_large(vega_http_exchange *x)
{
    vega_http_exchange_set_close(x);
    return serve_simple(x, 413, NULL, 0);
}

int serve_put(vega_http_exchange *x, const char *norm, size_t n)
{
    const vega_http_request *req = vega_http_exchange_request(x);
    if (!same_origin(req))
        return serve_simple(x, 403, NULL, 0);
    size_t slash = n;
    while (slash > 0 && norm[slash - 1] != '/')
        slash--;
    const char *name = norm + slash;
    size_t nl = n - slash;
    if (!name_ok(name, nl))
        return serve_simple(x, nl == 0 ? 405 : 400, NULL, 0);
    if (req->content_length != VEGA_HTTP_LENGTH_UNKNOWN && req->content_length > serve_o.upload_max)
        return too_large(x);
    int dirfd = open_dir(norm, slash);
    if (dirfd < 0)
        return answer_errno(x, dirfd);
    struct upfile u;
    int e = up_open(&u, dirfd, name, nl);
    if (e < 0) {
        close(dirfd);
        return answer_errno(x, e);
    }
    uint8_t *buf = malloc(UP_BUF);
    uint64_t total = 0;
    e = buf ? 0 : -ENOMEM;
    while (e == 0) {
        vega_ssize r = vega_http_request_read(x, buf, UP_BUF, NEVER);
        if (r == 0)
            break;
        if (r < 0) {
            e = (int)r;
            break;
        }
        if (total + (uint64_t)r > serve_o.upload_max) {
            e = -EFBIG;
            break;
        }
        total += (uint64_t)r;
        e = up_write(&u, buf, (size_t)r);
    }
    free(buf);
    bool replaced = false;
    if (e == 0) {
        e = up_commit(&u, &replaced);
    } else {
        up_abort(&u);
    }
    close(dirfd);
    if (e == -EFBIG)
        return too_large(x);
    if (e < 0 && (e == VEGA_ERR_PROTO || e == -ETIMEDOUT || e == -ECANCELED ||
                  vega_http_response_is_started(x)))
        return e; /* the body broke off: the connection closes */
    if (e < 0)
        return answer_errno(x, e);
    cli_log(1, "upload: %.*s (%" PRIu64 " bytes)", (int)n, norm, total);
    return serve_simple(x, replaced ? 200 : 201, NULL, 0);
}

/* ---- multipart/form-data ------------------------------------------------------------------ */

/* The boundary parameter of a multipart/form-data Content-Type, into out ("--" + boundary).
 * Returns its length or -1. */
static int get_boundary(const vega_http_request *req, char *out, size_t cap)
{
    size_t len;
    const char *ct = serve_req_field(req, "Content-Type", &len);
    static const char mf[] = "multipart/form-data";
    if (!ct || len < sizeof mf - 1 || strncasecmp(ct, mf, sizeof mf - 1) != 0)
        return -1;
    const char *end = ct + len;
    for (const char *p = ct + sizeof mf - 1; p < end; p++) {
        if (*p != ';')
            continue;
        p++;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if ((size_t)(end - p) < 9 || strncasecmp(p, "boundary=", 9) != 0)
            continue;
        p += 9;
        const char *b = p;
        size_t bl;
        if (p < end && *p == '"') {
            b = ++p;
            while (p < end && *p != '"')
                p++;
            if (p == end)
                return -1;
            bl = (size_t)(p - b);
        } else {
            while (p < end && *p != ';' && *p != ' ' && *p != '\t')
                p++;
            bl = (size_t)(p - b);
        }
        if (bl == 0 || bl > BOUNDARY_MAX || 2 + bl + 1 > cap)
            return -1;
        out[0] = '-', out[1] = '-';
        memcpy(out + 2, b, bl);
        out[2 + bl] = '\0';
        return (int)(2 + bl);
    }
    return -1;
}

/* The filename="..." (or name="...", with want_name) parameter of a Content-Disposition in a
 * part's head. Returns 1 (found, into out), 0 (absent), -1 (malformed). */
static int disposition_param(const char *head, size_t hl, const char *param, char *out, size_t cap)
{
    static const char cd[] = "content-disposition:";
    for (size_t i = 0; i + sizeof cd - 1 <= hl; i++) {
        if ((i != 0 && head[i - 1] != '\n') || strncasecmp(head + i, cd, sizeof cd - 1) != 0)
            continue;
        const char *p = head + i + sizeof cd - 1;
        const char *le = memchr(p, '\r', hl - (size_t)(p - head));
        if (!le)
            le = head + hl;
        size_t pl = strlen(param);
        for (; p + pl + 2 <= le; p++) {
            if ((p[-1] != ';' && p[-1] != ' ') || strncasecmp(p, param, pl) != 0 || p[pl] != '=')
                continue;
            const char *v = p + pl + 1;
            if (v >= le || *v != '"')
                return -1;
            v++;
            const char *q = memchr(v, '"', (size_t)(le - v));
            if (!q || (size_t)(q - v) >= cap)
                return -1;
            memcpy(out, v, (size_t)(q - v));
            out[q - v] = '\0';
            return 1;
        }
        return 0;
    }
    return 0;
}

/* The body reader of a multipart form: a window over the body, refilled as it is consumed. */
struct mp {
    vega_http_exchange *x;
    uint8_t *buf;
    size_t start, len; /* the unconsumed bytes are buf[start, start+len) */
    bool eof;
    uint64_t total;
    int err; /* -EFBIG beyond --upload-max, or the read's error */
};

/* Reads more of the body into the window. Returns 0 (maybe at eof) or -1 (m->err). */
static int mp_fill(struct mp *m)
{
    if (m->start > 0) {
        memmove(m->buf, m->buf + m->start, m->len);
        m->start = 0;
    }
    if (m->eof || m->len == UP_BUF)
        return 0;
    vega_ssize r = vega_http_request_read(m->x, m->buf + m->len, UP_BUF - m->len, NEVER);
    if (r < 0) {
        m->err = (int)r;
        return -1;
    }
    if (r == 0) {
        m->eof = true;
        return 0;
    }
    if (m->total + (uint64_t)r > serve_o.upload_max) {
        m->err = -EFBIG;
        return -1;
    }
    m->total += (uint64_t)r;
    m->len += (size_t)r;
    return 0;
}

static const uint8_t *find(const uint8_t *h, size_t hl, const char *n, size_t nl)
{
    return nl <= hl ? memmem(h, hl, n, nl) : NULL;
}

/* Streams a part's content up to the next "\r\n" + delimiter into u (or nowhere: u NULL).
 * Returns 0 with the window at the delimiter's end, -1 on a read error, -2 malformed. */
static int mp_body(struct mp *m, struct upfile *u, const char *delim, size_t dl, int *werr)
{
    char d[BOUNDARY_MAX + 8];
    d[0] = '\r', d[1] = '\n';
    memcpy(d + 2, delim, dl);
    size_t need = dl + 2;
    for (;;) {
        const uint8_t *w = m->buf + m->start;
        const uint8_t *hit = find(w, m->len, d, need);
        size_t safe = hit ? (size_t)(hit - w) : (m->len >= need ? m->len - (need - 1) : 0);
        if (safe && u && *werr == 0)
            *werr = up_write(u, w, safe);
        m->start += safe;
        m->len -= safe;
        if (hit) {
            m->start += need;
            m->len -= need;
            return 0;
        }
        if (m->eof)
            return -2;
        if (mp_fill(m) < 0)
            return -1;
    }
}

/* Parses the form; files go to dirfd, reported in *saved. Returns 0, -1 (m->err), -2
 * (malformed: 400), -3 (a bad file name: 400), or an upload error (< -3: errno). */
static int mp_parse(struct mp *m, int dirfd, const char *delim, size_t dl, unsigned *saved)
{
    /* the first delimiter (a preamble before it is ignored, RFC 2046 §5.1.1) */
    for (;;) {
        const uint8_t *hit = find(m->buf + m->start, m->len, delim, dl);
        if (hit) {
            size_t k = (size_t)(hit - (m->buf + m->start)) + dl;
            m->start += k, m->len -= k;
            break;
        }
        if (m->eof || m->len == UP_BUF)
            return -2;
        if (mp_fill(m) < 0)
            return -1;
    }
    for (unsigned parts = 0;; parts++) {
        while (m->len < 2 && !m->eof)
            if (mp_fill(m) < 0)
                return -1;
        if (m->len >= 2 && memcmp(m->buf + m->start, "--", 2) == 0)
            return 0; /* the close delimiter */
        if (m->len < 2 || memcmp(m->buf + m->start, "\r\n", 2) != 0 || parts == PARTS_MAX)
            return -2;
        m->start += 2, m->len -= 2;
        /* the part's head, up to an empty line */
        const uint8_t *he;
        for (;;) {
            he = find(m->buf + m->start, m->len < PART_HEAD_MAX ? m->len : PART_HEAD_MAX,
                      "\r\n\r\n", 4);
            if (he || m->len >= PART_HEAD_MAX || m->eof)
                break;
            if (mp_fill(m) < 0)
                return -1;
        }
        if (!he)
            return -2;
        const char *head = (const char *)(m->buf + m->start);
        size_t hl = (size_t)((const char *)he - head) + 2;
        if (memchr(head, '\0', hl))
            return -2;
        char fname[1024];
        int fr = disposition_param(head, hl, "filename", fname, sizeof fname);
        if (fr < 0)
            return -2;
        m->start += hl + 2, m->len -= hl + 2;
        struct upfile u;
        struct upfile *up = NULL;
        if (fr == 1 && fname[0] != '\0') {
            /* a browser sends the base name; an old one sent a whole client path */
            const char *base = fname;
            for (const char *p = fname; *p; p++)
                if (*p == '/' || *p == '\\')
                    base = p + 1;
            if (!name_ok(base, strlen(base)))
                return -3;
            int e = up_open(&u, dirfd, base, strlen(base));
            if (e < 0)
                return e < -3 ? e : -EIO;
            up = &u;
        }
        int werr = 0;
        int r = mp_body(m, up, delim, dl, &werr);
        if (up && (r < 0 || werr < 0)) {
            up_abort(up);
            return r < 0 ? r : (werr < -3 ? werr : -EIO);
        }
        if (up) {
            bool replaced;
            int e = up_commit(up, &replaced);
            if (e < 0)
                return e < -3 ? e : -EIO;
            (*saved)++;
        }
        if (r < 0)
            return r;
    }
}

/* 303 back to the listing (a browser then shows the new files). */
static int see_listing(vega_http_exchange *x, const char *norm, size_t n)
{
    struct sbuf b;
    sbuf_init(&b, 3 * SERVE_PATH_MAX + 32);
    sbuf_add(&b, serve_o.route, serve_o.route_len);
    sbuf_url(&b, norm, n);
    int e;
    if (b.failed) {
        e = serve_simple(x, 414, NULL, 0);
    } else {
        vega_http_field loc = {{"Location", 8}, {b.p, b.len}};
        e = serve_simple(x, 303, &loc, 1);
    }
    sbuf_free(&b);
    return e;
}

static int hexdig(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A form value's decoding ("+" is a space, %XX a byte). Returns its length or -1. */
static int url_decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = hexdig(s[i + 1]), lo = hexdig(s[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = (char)(hi << 4 | lo);
            i += 2;
        }
        if (o + 1 >= cap)
            return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return (int)o;
}

/* --mkdir: a form body "mkdir=NAME" (application/x-www-form-urlencoded). */
static int post_mkdir(vega_http_exchange *x, int dirfd, const char *norm, size_t n)
{
    char body[1024];
    size_t len = 0;
    for (;;) {
        if (len == sizeof body)
            return too_large(x);
        vega_ssize r = vega_http_request_read(x, body + len, sizeof body - len, NEVER);
        if (r < 0)
            return (int)r;
        if (r == 0)
            break;
        len += (size_t)r;
    }
    static const char key[] = "mkdir=";
    char name[768];
    int nl =
        len >= sizeof key - 1 && memcmp(body, key, sizeof key - 1) == 0 && !memchr(body, '&', len)
            ? url_decode(body + sizeof key - 1, len - (sizeof key - 1), name, sizeof name)
            : -1;
    /* a NUL byte (%00) would cut the name: its length must be the decoded one */
    if (nl < 0 || strlen(name) != (size_t)nl || !name_ok(name, (size_t)nl))
        return serve_simple(x, 400, NULL, 0);
    if (mkdirat(dirfd, name, 0755) < 0)
        return answer_errno(x, -errno);
    cli_log(1, "mkdir: %.*s%s", (int)n, norm, name);
    return see_listing(x, norm, n);
}

int serve_post(vega_http_exchange *x, const char *norm, size_t n)
{
    const vega_http_request *req = vega_http_exchange_request(x);
    if (!same_origin(req))
        return serve_simple(x, 403, NULL, 0);
    if (n == 0 || norm[n - 1] != '/')
        return serve_simple(x, 405, NULL, 0); /* forms post to a folder's listing */
    int dirfd = open_dir(norm, n);
    if (dirfd < 0)
        return answer_errno(x, dirfd);
    size_t ctl;
    const char *ct = serve_req_field(req, "Content-Type", &ctl);
    static const char urlenc[] = "application/x-www-form-urlencoded";
    int e;
    if (serve_o.mkdir && ct && ctl >= sizeof urlenc - 1 &&
        strncasecmp(ct, urlenc, sizeof urlenc - 1) == 0) {
        e = post_mkdir(x, dirfd, norm, n);
        close(dirfd);
        return e;
    }
    char delim[BOUNDARY_MAX + 4];
    int dl = serve_o.upload ? get_boundary(req, delim, sizeof delim) : -1;
    if (dl < 0) {
        close(dirfd);
        return serve_simple(x, 415, NULL, 0);
    }
    if (req->content_length != VEGA_HTTP_LENGTH_UNKNOWN &&
        req->content_length > serve_o.upload_max) {
        close(dirfd);
        return too_large(x);
    }
    struct mp m = {.x = x, .buf = malloc(UP_BUF)};
    unsigned saved = 0;
    e = m.buf ? mp_parse(&m, dirfd, delim, (size_t)dl, &saved) : -ENOMEM;
    free(m.buf);
    close(dirfd);
    if (e == -1 && m.err == -EFBIG)
        return too_large(x);
    if (e == -1)
        return m.err; /* the body broke off: the connection closes */
    if (e == -2 || e == -3) {
        vega_http_exchange_set_close(x); /* what is left of the body is not read */
        return serve_simple(x, 400, NULL, 0);
    }
    if (e < 0)
        return answer_errno(x, e);
    cli_log(1, "upload: %u file(s) into %.*s", saved, (int)n, norm);
    return see_listing(x, norm, n);
}
