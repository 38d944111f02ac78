/* SPDX-License-Identifier: MIT */
/* vega-serve: the file system calls of a request, off the worker thread. Each is one io_uring
 * operation on the worker's ring (openat2, statx, read: <vega/fs.h>), or a blocking-pool job
 * under epoll, so a slow disk (or a stalled network or FUSE file system) holds up the request
 * that needs it and no other connection on the worker. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <vega/fs.h>
#include <vega/rt.h>

#include "serve.h"

static struct timespec ts_of(int64_t ns)
{
    const int64_t s = 1000000000;
    int64_t sec = ns / s, rem = ns % s;
    if (rem < 0)
        sec--, rem += s;
    return (struct timespec){.tv_sec = (time_t)sec, .tv_nsec = (long)rem};
}

static void to_stat(const vega_file_info *in, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_dev = (dev_t)in->dev;
    st->st_ino = (ino_t)in->ino;
    st->st_mode = (mode_t)in->mode;
    st->st_nlink = (nlink_t)in->nlink;
    st->st_uid = in->uid;
    st->st_gid = in->gid;
    st->st_rdev = (dev_t)in->rdev;
    st->st_size = (off_t)in->size;
    st->st_blksize = (blksize_t)in->blksize;
    st->st_blocks = (blkcnt_t)in->blocks;
    st->st_atim = ts_of(in->atime_ns);
    st->st_mtim = ts_of(in->mtime_ns);
    st->st_ctim = ts_of(in->ctime_ns);
}

int serve_fstat(int fd, struct stat *st)
{
    vega_file_info info;
    int r = vega_fs_statat(fd, "", 0, &info, VEGA_DEADLINE_NEVER);
    if (r == 0)
        to_stat(&info, st);
    return r;
}

int serve_lstat_at(int dirfd, const char *name, struct stat *st)
{
    vega_file_info info;
    int r = vega_fs_statat(dirfd, name, VEGA_STAT_NOFOLLOW, &info, VEGA_DEADLINE_NEVER);
    if (r == 0)
        to_stat(&info, st);
    return r;
}

int serve_lstat_below(const char *rel, struct stat *st)
{
    return serve_lstat_at(serve_o.root_fd, rel, st);
}

static int openat_off(int dirfd, const char *rel, int flags);

int serve_open_at(int dirfd, const char *name, int flags)
{
    if (!serve_o.use_openat2) /* a kernel before 5.6 */
        return openat_off(dirfd, name, flags);
    vega_open_how how = {.flags = (uint64_t)(unsigned)flags};
    return vega_fs_openat2(dirfd, name, &how, VEGA_DEADLINE_NEVER);
}

vega_ssize serve_pread(int fd, void *buf, size_t len, uint64_t off)
{
    for (;;) {
        vega_ssize r = vega_fs_pread(fd, buf, len, (int64_t)off, VEGA_DEADLINE_NEVER);
        if (r != -EINTR)
            return r;
    }
}

vega_ssize serve_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        vega_ssize r = serve_pread(fd, (char *)buf + got, len - got, off + got);
        if (r < 0)
            return r;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (vega_ssize)got;
}

int serve_openat2_beneath(const char *rel, unsigned flags, unsigned long long resolve)
{
    vega_open_how how = {.flags = flags, .resolve = resolve};
    return vega_fs_openat2(serve_o.root_fd, rel, &how, VEGA_DEADLINE_NEVER);
}

struct openat_job {
    int dirfd;
    const char *rel;
    int flags;
    int res;
};

static void *openat_fn(void *arg)
{
    struct openat_job *j = arg;
    j->res = openat(j->dirfd, j->rel, j->flags | O_CLOEXEC);
    if (j->res < 0)
        j->res = -errno;
    return NULL;
}

static int openat_off(int dirfd, const char *rel, int flags)
{
    struct openat_job j = {dirfd, rel, flags, -EIO};
    int r = vega_blocking(openat_fn, &j, NULL, VEGA_DEADLINE_NEVER);
    if (r < 0) {
        /* Cancelled or timed out after the job ran: its descriptor must not leak. */
        if (j.res >= 0)
            close(j.res);
        return r;
    }
    return j.res;
}

int serve_openat_plain(const char *rel, int flags)
{
    return openat_off(serve_o.root_fd, rel, flags);
}
