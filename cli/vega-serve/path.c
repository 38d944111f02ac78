/* SPDX-License-Identifier: MIT */
/* vega-serve: opening a request path without ever leaving the served directory. The kernel
 * does the walk (openat2 with RESOLVE_BENEATH: no ".." above the root, no absolute symlink, no
 * symlink leaving it); an absolute symlink that stays inside is then checked with realpath.
 * Where openat2 is missing, realpath and a prefix check do it all. These are plain blocking
 * calls on the worker thread: cheap on a local file system, noted as a limit in the README. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "serve.h"

#define OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

static int do_openat2(const char *rel, unsigned extra_flags)
{
    struct open_how how;
    memset(&how, 0, sizeof(how));
    how.flags = OPEN_FLAGS | extra_flags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    if (!serve_o.symlinks)
        how.resolve |= RESOLVE_NO_SYMLINKS;
    long fd = syscall(SYS_openat2, serve_o.root_fd, rel, &how, sizeof(how));
    return fd < 0 ? -errno : (int)fd;
}

/* The realpath of root + rel when it stays inside the root; its part below the root goes to
 * out ("." for the root itself). */
static int resolve_inside(const char *rel, char *out, size_t cap)
{
    char full[PATH_MAX], real[PATH_MAX];
    int n = snprintf(full, sizeof(full), "%s/%s", serve_o.root, rel);
    if (n < 0 || (size_t)n >= sizeof(full))
        return -ENAMETOOLONG;
    if (!realpath(full, real))
        return -errno;
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
    int fd = openat(serve_o.root_fd, inside, OPEN_FLAGS | (serve_o.symlinks ? 0 : O_NOFOLLOW));
    return fd < 0 ? -errno : fd;
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
    struct open_how how;
    memset(&how, 0, sizeof(how));
    how.flags = OPEN_FLAGS;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS;
    long fd = syscall(SYS_openat2, serve_o.root_fd, path, &how, sizeof(how));
    if (fd >= 0)
        return (int)fd;
    return errno == EXDEV ? -ELOOP : -errno;
}

bool serve_path_is_hidden(const char *rel, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++)
        if (rel[i] == '/' && rel[i + 1] == '.')
            return true;
    return false;
}
