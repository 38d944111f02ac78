/* SPDX-License-Identifier: MIT */
/* vega-serve: --tar, --tar-gz, --zip: a folder downloaded as one archive streamed while the
 * tree is walked. The walk is the same for every format: only regular files and folders go in;
 * symlinks are neither followed nor stored, dotfiles only with --hidden, every entry is opened
 * relative to its folder with O_NOFOLLOW. Memory is three 64 KiB buffers (plus a gzip or
 * deflate state) and one open directory per level, whatever the tree holds. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive.h"

#define NEVER VEGA_DEADLINE_NEVER

static int send_raw(struct archive *a, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    if (!a->gz) {
        vega_ssize w = vega_http_response_write(a->x, p, n, NEVER);
        return w < 0 ? (int)w : 0;
    }
    /* through gzip: a result below the output's size means all input is consumed */
    size_t done = 0;
    for (;;) {
        size_t used = 0;
        vega_ssize w = vega_compressor_write(a->gz, (const uint8_t *)p + done, n - done, &used,
                                             a->zout, ARCHIVE_BUF, VEGA_COMPRESS_FLUSH_NONE);
        if (w < 0)
            return (int)w;
        done += used;
        if (w > 0) {
            vega_ssize s = vega_http_response_write(a->x, a->zout, (size_t)w, NEVER);
            if (s < 0)
                return (int)s;
        }
        if ((size_t)w < ARCHIVE_BUF)
            return 0;
    }
}

static int flush_out(struct archive *a)
{
    int e = send_raw(a, a->obuf, a->olen);
    a->olen = 0;
    return e;
}

int archive_out(struct archive *a, const void *p, size_t n)
{
    a->off += n;
    if (a->olen + n > ARCHIVE_BUF) {
        int e = flush_out(a);
        if (e < 0)
            return e;
    }
    if (n >= ARCHIVE_BUF) /* olen is 0 here */
        return send_raw(a, p, n);
    memcpy(a->obuf + a->olen, p, n);
    a->olen += n;
    return 0;
}

vega_ssize archive_read(struct archive *a, int fd, uint64_t off, uint64_t size)
{
    size_t want = off + ARCHIVE_BUF > size ? (size_t)(size - off) : ARCHIVE_BUF; /* off < size */
    for (;;) {
        vega_ssize r = serve_pread(fd, a->buf, want, off); /* off the worker: fsio.c */
        if (r < 0)
            return r; /* the archive is cut: the connection closes */
        if (r == 0) {
            /* shrank since fstat: zeros to the announced size, as GNU tar does */
            cli_log(1, "archive: %s shrank while read: padded with zeros", a->path);
            memset(a->buf, 0, want);
            r = (vega_ssize)want;
        }
        return r;
    }
}

/* Adds the folder dfd (taken: closed here) whose archive path is a->path[0, len) ("NAME/"). */
static int add_dir(struct archive *a, int dfd, size_t len, unsigned depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0; /* unreadable: left out */
    }
    int e = 0;
    struct dirent *de;
    while (e == 0 && (de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || (n[0] == '.' && !serve_o.hidden))
            continue;
        size_t nl = strlen(n);
        if (len + nl + 1 > ARCHIVE_PATH_MAX)
            continue;
        struct stat st;
        if (serve_lstat_at(dirfd(d), n, &st) < 0)
            continue;
        memcpy(a->path + len, n, nl);
        if (S_ISREG(st.st_mode)) {
            int fd = serve_open_at(dirfd(d), n, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
            if (fd < 0)
                continue;
            if (serve_fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
                a->path[len + nl] = '\0';
                e = a->fmt->file(a, fd, len + nl, &st);
            }
            close(fd);
        } else if (S_ISDIR(st.st_mode) && depth < ARCHIVE_DEPTH) {
            int sub = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                continue;
            a->path[len + nl] = '/';
            a->path[len + nl + 1] = '\0';
            e = a->fmt->dir(a, len + nl + 1, &st);
            if (e == 0)
                e = add_dir(a, sub, len + nl + 1, depth + 1);
            else
                close(sub);
        }
    }
    closedir(d);
    return e;
}

static bool enabled(enum serve_archive k)
{
    return (k == SERVE_ARCHIVE_TAR && serve_o.tar) ||
           (k == SERVE_ARCHIVE_TAR_GZ && serve_o.tar_gz) || (k == SERVE_ARCHIVE_ZIP && serve_o.zip);
}

enum serve_archive serve_archive_wanted(const vega_http_request *req)
{
    static const char q[] = "download=";
    if (!req->query.ptr)
        return SERVE_ARCHIVE_NONE;
    const char *s = req->query.ptr;
    size_t n = req->query.len;
    for (size_t i = 0; i + sizeof q - 1 <= n; i++) {
        if ((i != 0 && s[i - 1] != '&') || memcmp(s + i, q, sizeof q - 1) != 0)
            continue;
        const char *v = s + i + sizeof q - 1;
        const char *amp = memchr(v, '&', (size_t)(s + n - v));
        size_t vl = amp ? (size_t)(amp - v) : (size_t)(s + n - v);
        enum serve_archive k = SERVE_ARCHIVE_NONE;
        if (vl == 3 && memcmp(v, "tar", 3) == 0)
            k = SERVE_ARCHIVE_TAR;
        else if (vl == 6 && memcmp(v, "tar.gz", 6) == 0)
            k = SERVE_ARCHIVE_TAR_GZ;
        else if (vl == 3 && memcmp(v, "zip", 3) == 0)
            k = SERVE_ARCHIVE_ZIP;
        return enabled(k) ? k : SERVE_ARCHIVE_NONE;
    }
    return SERVE_ARCHIVE_NONE;
}

/* The archive's top folder: the folder's own name ("root" for DIR itself), kept to letters,
 * digits and "._-" for the file name. Returns its length (at most 200). */
static size_t top_name(const char *rel, size_t rel_len, char *top)
{
    size_t e = rel_len, b;
    while (e > 1 && rel[e - 1] == '/')
        e--;
    b = e;
    while (b > 0 && rel[b - 1] != '/')
        b--;
    size_t tl = 0;
    for (size_t i = b; i < e && tl < 200; i++) {
        char c = rel[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        top[tl++] = ok ? c : '_';
    }
    if (tl == 0 || top[0] == '.') {
        memcpy(top, "root", 4);
        tl = 4;
    }
    return tl;
}

static void archive_free(struct archive *a)
{
    if (a->fmt->fini)
        a->fmt->fini(a);
    vega_compressor_free(a->gz);
    free(a->buf);
    free(a->obuf);
    free(a->zout);
}

/* The walk from the folder fd (taken) and the format's end. */
static int archive_body(struct archive *a, int fd, size_t tl)
{
    struct stat st;
    int r = fstat(fd, &st) < 0 ? -errno : a->fmt->dir(a, tl + 1, &st);
    /* an O_PATH-free descriptor of the folder for readdir */
    int dfd = r == 0 ? openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    close(fd);
    if (r == 0 && dfd < 0)
        r = -errno;
    if (r == 0)
        r = add_dir(a, dfd, tl + 1, 1);
    if (r == 0)
        r = a->fmt->end(a);
    if (r == 0)
        r = flush_out(a);
    if (r == 0 && a->gz) {
        size_t used;
        vega_ssize w;
        do {
            w = vega_compressor_write(a->gz, NULL, 0, &used, a->zout, ARCHIVE_BUF,
                                      VEGA_COMPRESS_FLUSH_FINISH);
            if (w > 0) {
                vega_ssize s = vega_http_response_write(a->x, a->zout, (size_t)w, NEVER);
                if (s < 0)
                    w = s;
            }
        } while (w == ARCHIVE_BUF);
        r = w < 0 ? (int)w : 0;
    }
    return r;
}

int serve_archive(vega_http_exchange *x, int fd, const char *rel, size_t rel_len,
                  enum serve_archive kind)
{
    const vega_http_request *req = vega_http_exchange_request(x);
    static const char *const ext[] = {"", "tar", "tar.gz", "zip"};
    static const char *const type[] = {"", "application/x-tar", "application/gzip",
                                       "application/zip"};
    struct archive a = {.x = x};
    a.fmt = kind == SERVE_ARCHIVE_ZIP ? &serve_zip_format : &serve_tar_format;
    char top[256];
    size_t tl = top_name(rel, rel_len, top);
    a.buf = malloc(ARCHIVE_BUF);
    a.obuf = malloc(ARCHIVE_BUF);
    int r = a.buf && a.obuf ? 0 : -ENOMEM;
    if (r == 0 && kind == SERVE_ARCHIVE_TAR_GZ) {
        a.zout = malloc(ARCHIVE_BUF);
        r = a.zout
                ? vega_compressor_new(&a.gz, VEGA_COMPRESS_GZIP, VEGA_COMPRESS_LEVEL_DEFAULT, NULL)
                : -ENOMEM;
    }
    if (r == 0 && a.fmt->init)
        r = a.fmt->init(&a);
    if (r < 0) {
        cli_log(1, "archive: %s", strerror(-r));
        close(fd);
        archive_free(&a);
        return serve_simple(x, 500, NULL, 0);
    }
    char disp[300];
    snprintf(disp, sizeof disp, "attachment; filename=\"%.*s.%s\"", (int)tl, top, ext[kind]);
    vega_http_field f[4 + SERVE_MAX_HEADERS];
    size_t nf = 0;
    f[nf++] = (vega_http_field){{"Content-Type", 12}, {type[kind], strlen(type[kind])}};
    f[nf++] = (vega_http_field){{"Content-Disposition", 19}, {disp, strlen(disp)}};
    f[nf++] = (vega_http_field){{"Cache-Control", 13}, {"no-cache", 8}};
    nf = serve_add_user_headers(f, nf, sizeof f / sizeof f[0]);
    r = vega_http_response_start(x, 200, f, nf, VEGA_HTTP_LENGTH_UNKNOWN);
    if (r < 0 || req->method == VEGA_HTTP_METHOD_HEAD) {
        close(fd);
        archive_free(&a);
        return r < 0 ? r : vega_http_response_finish(x, NULL, 0, NEVER);
    }
    memcpy(a.path, top, tl);
    a.path[tl] = '/';
    a.path[tl + 1] = '\0';
    r = archive_body(&a, fd, tl);
    archive_free(&a);
    if (r == 0)
        r = vega_http_response_finish(x, NULL, 0, NEVER);
    return r;
}
