/* SPDX-License-Identifier: MIT */
/* vega-serve: opening a request path without ever leaving the served directory. The kernel
 * does the walk (openat2 with RESOLVE_BENEATH: no ".." above the root, no absolute symlink, no
 * symlink leaving it); an absolute symlink that stays inside is then checked with realpath.
 * Where openat2 is missing, realpath and a prefix check do it all. The opens are io_uring
 * operations (IORING_OP_OPENAT2) or blocking-pool jobs (fsio.c); realpath, which walks the
 * disk too, runs on the blocking pool. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vega/rt.h>

#include "serve.h"

#define OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

static int do_openat2(const char *rel, unsigned extra_flags)
{
    unsigned long long resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    if (!serve_o.symlinks)
        resolve |= RESOLVE_NO_SYMLINKS;
    return serve_openat2_beneath(rel, OPEN_FLAGS | extra_flags, resolve);
}

struct realpath_job {
    const char *in;
    char *out;
    int err;
};

static void *realpath_fn(void *arg)
{
    struct realpath_job *j = arg;
    j->err = realpath(j->in, j->out) ? 0 : -errno;
    return NULL;
}

/* realpath(3) on the blocking pool (it walks the disk: lstat and readlink per segment). */
static int realpath_off(const char *in, char *out)
{
    struct realpath_job j = {in, out, -EIO};
    int r = vega_blocking(realpath_fn, &j, NULL, VEGA_DEADLINE_NEVER);
    return r < 0 ? r : j.err;
}

/* The realpath of root + rel when it stays inside the root; its part below the root goes to
 * out ("." for the root itself). */
static int resolve_inside(const char *rel, char *out, size_t cap)
{
    char full[PATH_MAX], real[PATH_MAX];
    int n = snprintf(full, sizeof(full), "%s/%s", serve_o.root, rel);
    if (n < 0 || (size_t)n >= sizeof(full))
        return -ENAMETOOLONG;
    int rr = realpath_off(full, real);
    if (rr < 0)
        return rr;
    size_t rl = serve_o.root_len;
    /* The root "/" is the one root whose realpath ends in "/". */
    if (rl == 1) {
        rl = 0;
    } else if (strncmp(real, serve_o.root, rl) != 0 || (real[rl] != '/' && real[rl] != '\0')) {
        return -ENOENT;
    }
    const char *below = real[rl] == '/' ? real + rl + 1 : real + rl;
    if (!*below)
        below = ".";
    if (strlen(below) >= cap)
        return -ENAMETOOLONG;
    strcpy(out, below);
    return 0;
}

int serve_open(const char *rel, size_t len)
{
    char path[SERVE_PATH_MAX + 16];
    /* rel starts with "/"; the walk is relative to the root descriptor. */
    while (len > 0 && rel[0] == '/')
        rel++, len--;
    if (len == 0) {
        path[0] = '.', path[1] = '\0';
    } else {
        if (len >= sizeof(path))
            return -ENAMETOOLONG;
        memcpy(path, rel, len);
        path[len] = '\0';
    }
    if (serve_o.use_openat2) {
        int fd = do_openat2(path, 0);
        if (fd != -EXDEV)
            return fd == -ELOOP ? -ENOENT : fd;
        /* EXDEV: an absolute symlink (or one leaving the root). Inside the root it is fine:
         * resolve it and open the symlink-free result, again beneath the root. */
        if (!serve_o.symlinks)
            return -ENOENT;
        char inside[PATH_MAX];
        int r = resolve_inside(path, inside, sizeof(inside));
        if (r < 0)
            return r == -ELOOP ? -ENOENT : r;
        fd = do_openat2(inside, 0);
        return fd == -EXDEV || fd == -ELOOP ? -ENOENT : fd;
    }
    char inside[PATH_MAX];
    int r = resolve_inside(path, inside, sizeof(inside));
    if (r < 0)
        return r == -ELOOP ? -ENOENT : r;
    /* Without symlinks the resolved path is the lexical one (realpath drops a trailing "/"). */
    size_t pl = strlen(path);
    while (pl > 1 && path[pl - 1] == '/')
        path[--pl] = '\0';
    if (!serve_o.symlinks && strcmp(inside, path) != 0)
        return -ENOENT;
    /* Without openat2 nothing beneath-checks the walk, so it stays one openat; the blocking
     * pool runs it (RESOLVE_* are zero: a plain openat2 is refused here as ENOSYS too). */
    return serve_openat_plain(inside, OPEN_FLAGS | (serve_o.symlinks ? 0 : O_NOFOLLOW));
}

int serve_open_plain(const char *rel, size_t len)
{
    char path[SERVE_PATH_MAX + 16];
    while (len > 0 && rel[0] == '/')
        rel++, len--;
    if (len == 0) {
        path[0] = '.', path[1] = '\0';
    } else {
        if (len >= sizeof(path))
            return -ENAMETOOLONG;
        memcpy(path, rel, len);
        path[len] = '\0';
    }
    if (!serve_o.use_openat2)
        return -ELOOP;
    int fd = serve_openat2_beneath(path, OPEN_FLAGS,
                                   RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS);
    return fd == -EXDEV ? -ELOOP : fd;
}

bool serve_path_is_hidden(const char *rel, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++)
        if (rel[i] == '/' && rel[i + 1] == '.')
            return true;
    return false;
}
