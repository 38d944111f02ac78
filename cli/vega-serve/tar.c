/* SPDX-License-Identifier: MIT */
/* vega-serve: --tar: a folder downloaded as one streamed tar archive (POSIX.1-2001 pax/ustar,
 * pax headers for long paths, base-256 sizes past 8 GiB), written as the tree is walked: memory
 * is a 64 KiB buffer and one open directory per level, whatever the tree holds. Only regular
 * files and folders go in; symlinks are neither followed nor stored, dotfiles only with
 * --hidden, every entry is opened relative to its folder with O_NOFOLLOW. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve.h"

#define NEVER     VEGA_DEADLINE_NEVER
#define BLOCK     512
#define TAR_BUF   (64 * 1024)
#define DEPTH_MAX 64
#define TPATH_MAX 4096

struct tar {
    vega_http_exchange *x;
    uint8_t *buf;
    char path[TPATH_MAX + 2]; /* the entry's path in the archive */
};

static int out(struct tar *t, const void *p, size_t n)
{
    vega_ssize w = vega_http_response_write(t->x, p, n, NEVER);
    return w < 0 ? (int)w : 0;
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
static int header(struct tar *t, const char *name, size_t nl, const char *prefix, size_t pl,
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

static int pad(struct tar *t, uint64_t size)
{
    static const char zero[BLOCK];
    size_t r = (size_t)(size % BLOCK);
    return r ? out(t, zero, BLOCK - r) : 0;
}

/* The header of t->path (len bytes): ustar name/prefix when it fits, else a pax header with
 * the path first. */
static int entry_header(struct tar *t, size_t len, char type, const struct stat *st, uint64_t size)
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
    char rec[TPATH_MAX + 32];
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

static int add_file(struct tar *t, int fd, size_t len, const struct stat *st)
{
    uint64_t size = (uint64_t)st->st_size;
    int e = entry_header(t, len, '0', st, size);
    uint64_t off = 0;
    while (e == 0 && off < size) {
        size_t want = off + TAR_BUF > size ? (size_t)(size - off) : TAR_BUF; /* off < size */
        ssize_t r = pread(fd, t->buf, want, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno; /* the archive is cut: the connection closes */
        if (r == 0) {
            /* shrank since fstat: zeros to the announced size, as GNU tar does */
            cli_log(1, "--tar: %s shrank while read: padded with zeros", t->path);
            memset(t->buf, 0, want);
            r = (ssize_t)want;
        }
        e = out(t, t->buf, (size_t)r);
        off += (uint64_t)r;
    }
    return e == 0 ? pad(t, size) : e;
}

/* Adds the folder dfd (taken: closed here) whose archive path is t->path[0, len) ("NAME/"). */
static int add_dir(struct tar *t, int dfd, size_t len, unsigned depth)
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
        if (len + nl + 1 > TPATH_MAX)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        memcpy(t->path + len, n, nl);
        if (S_ISREG(st.st_mode)) {
            int fd = openat(dirfd(d), n, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            if (fd < 0)
                continue;
            if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
                t->path[len + nl] = '\0';
                e = add_file(t, fd, len + nl, &st);
            }
            close(fd);
        } else if (S_ISDIR(st.st_mode) && depth < DEPTH_MAX) {
            int sub = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                continue;
            t->path[len + nl] = '/';
            t->path[len + nl + 1] = '\0';
            e = entry_header(t, len + nl + 1, '5', &st, 0);
            if (e == 0)
                e = add_dir(t, sub, len + nl + 1, depth + 1);
            else
                close(sub);
        }
    }
    closedir(d);
    return e;
}

bool serve_tar_wanted(const vega_http_request *req)
{
    static const char q[] = "download=tar";
    if (!serve_o.tar || !req->query.ptr)
        return false;
    const char *s = req->query.ptr;
    size_t n = req->query.len;
    for (size_t i = 0; i + sizeof q - 1 <= n; i++)
        if ((i == 0 || s[i - 1] == '&') && memcmp(s + i, q, sizeof q - 1) == 0 &&
            (i + sizeof q - 1 == n || s[i + sizeof q - 1] == '&'))
            return true;
    return false;
}

int serve_tar(vega_http_exchange *x, int fd, const char *rel, size_t rel_len)
{
    const vega_http_request *req = vega_http_exchange_request(x);
    struct tar t = {.x = x};
    /* the archive's top folder: the folder's own name ("root" for DIR itself), kept to
     * letters, digits and "._-" for the file name */
    size_t e = rel_len, b;
    while (e > 1 && rel[e - 1] == '/')
        e--;
    b = e;
    while (b > 0 && rel[b - 1] != '/')
        b--;
    char top[256];
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
    char disp[300];
    snprintf(disp, sizeof disp, "attachment; filename=\"%.*s.tar\"", (int)tl, top);
    vega_http_field f[4 + SERVE_MAX_HEADERS];
    size_t nf = 0;
    f[nf++] = (vega_http_field){{"Content-Type", 12}, {"application/x-tar", 17}};
    f[nf++] = (vega_http_field){{"Content-Disposition", 19}, {disp, strlen(disp)}};
    f[nf++] = (vega_http_field){{"Cache-Control", 13}, {"no-cache", 8}};
    nf = serve_add_user_headers(f, nf, sizeof f / sizeof f[0]);
    int r = vega_http_response_start(x, 200, f, nf, VEGA_HTTP_LENGTH_UNKNOWN);
    if (r < 0 || req->method == VEGA_HTTP_METHOD_HEAD) {
        close(fd);
        return r < 0 ? r : vega_http_response_finish(x, NULL, 0, NEVER);
    }
    t.buf = malloc(TAR_BUF);
    if (!t.buf) {
        close(fd);
        return -ENOMEM;
    }
    memcpy(t.path, top, tl);
    t.path[tl] = '/';
    t.path[tl + 1] = '\0';
    struct stat st;
    r = fstat(fd, &st) < 0 ? -errno : entry_header(&t, tl + 1, '5', &st, 0);
    /* an O_PATH-free descriptor of the folder for readdir */
    int dfd = r == 0 ? openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    close(fd);
    if (r == 0 && dfd < 0)
        r = -errno;
    if (r == 0)
        r = add_dir(&t, dfd, tl + 1, 1);
    if (r == 0) {
        memset(t.buf, 0, 2 * BLOCK); /* the end: two zero blocks */
        r = out(&t, t.buf, 2 * BLOCK);
    }
    free(t.buf);
    if (r == 0)
        r = vega_http_response_finish(x, NULL, 0, NEVER);
    return r;
}
