/* SPDX-License-Identifier: MIT */
/* Files: each call is one io_uring operation on the worker's ring, or a blocking-pool job under
 * epoll; a result the kernel produced before a timeout or cancel wins, so nothing leaks. */
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <vega/fs.h>

#include "io_int.h"

#if defined(VEGA_HAVE_URING)
#include <liburing.h>
#define VEGA__FS_URING 1
#endif

/* Linux moves at most this many bytes in one read or write (MAX_RW_COUNT). */
#define RW_MAX 0x7ffff000u

struct vega_file {
    int fd;
};

enum fs_kind {
    FS_OPEN,
    FS_OPEN2,
    FS_READ,
    FS_WRITE,
    FS_FSYNC,
    FS_STATX,
    FS_CLOSE
};

/* One file operation, described once for both ways of running it. Lives on the task's stack. */
struct fs_call {
    enum fs_kind kind;
    int fd;           /* AT_FDCWD for FS_OPEN and path stats */
    const char *path; /* FS_OPEN, FS_STATX ("" with AT_EMPTY_PATH for a descriptor) */
    int flags;        /* open flags, statx AT_* flags, fsync: datasync */
    unsigned mode;    /* FS_OPEN */
    void *buf;        /* FS_READ, FS_WRITE */
    unsigned len;
    int64_t off;                /* -1: the file position */
    struct statx *stx;          /* FS_STATX */
    const struct open_how *how; /* FS_OPEN2 */
    /* Blocking-pool path: written by the pool thread, read after vega_blocking returned
     * (ordered by the pool's lock). */
    int res;
    bool ran;
};

#if defined(VEGA__FS_URING)
static void fs_prep(void *p, struct vega__op *op)
{
    struct io_uring_sqe *sqe = p;
    struct fs_call *c = op->arg;
    switch (c->kind) {
    case FS_OPEN:
        io_uring_prep_openat(sqe, c->fd, c->path, c->flags, c->mode);
        break;
    case FS_OPEN2:
        io_uring_prep_openat2(sqe, c->fd, c->path, (struct open_how *)(uintptr_t)c->how);
        break;
    case FS_READ:
        io_uring_prep_read(sqe, c->fd, c->buf, c->len, (uint64_t)c->off);
        break;
    case FS_WRITE:
        io_uring_prep_write(sqe, c->fd, c->buf, c->len, (uint64_t)c->off);
        break;
    case FS_FSYNC:
        io_uring_prep_fsync(sqe, c->fd, c->flags ? IORING_FSYNC_DATASYNC : 0);
        break;
    case FS_STATX:
        io_uring_prep_statx(sqe, c->fd, c->path, c->flags, STATX_BASIC_STATS, c->stx);
        break;
    case FS_CLOSE:
        io_uring_prep_close(sqe, c->fd);
        break;
    }
}
#endif

static void *fs_job(void *arg)
{
    struct fs_call *c = arg;
    long r = -1;
    switch (c->kind) {
    case FS_OPEN:
        r = openat(c->fd, c->path, c->flags, (mode_t)c->mode);
        break;
    case FS_OPEN2:
        r = syscall(SYS_openat2, c->fd, c->path, c->how, sizeof(*c->how));
        break;
    case FS_READ:
        r = c->off < 0 ? read(c->fd, c->buf, c->len) : pread(c->fd, c->buf, c->len, c->off);
        break;
    case FS_WRITE:
        r = c->off < 0 ? write(c->fd, c->buf, c->len) : pwrite(c->fd, c->buf, c->len, c->off);
        break;
    case FS_FSYNC:
        r = c->flags ? fdatasync(c->fd) : fsync(c->fd);
        break;
    case FS_STATX:
        r = statx(c->fd, c->path, c->flags, STATX_BASIC_STATS, c->stx);
        break;
    case FS_CLOSE:
        r = close(c->fd);
        break;
    }
    c->res = r < 0 ? -errno : (int)r;
    c->ran = true;
    return NULL;
}

#if defined(VEGA__FS_URING)
/* Whether the kernel's io_uring has IORING_OP_OPENAT2 (5.6): probed once per process (a
 * throwaway ring), since an unknown opcode and a bad open_how both complete with -EINVAL. */
static bool uring_has_openat2(void)
{
    static atomic_int known; /* 0: not probed, 1: yes, -1: no */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (k == 0) {
        struct io_uring_probe *p = io_uring_get_probe();
        k = p && io_uring_opcode_supported(p, IORING_OP_OPENAT2) ? 1 : -1;
        if (p)
            io_uring_free_probe(p);
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k > 0;
}
#endif

/* Runs c on the worker's io_uring, or on the blocking pool where the driver has no kernel
 * operations. Returns the syscall's result (>= 0) or a negative code. */
static int fs_run(struct fs_call *c, vega_deadline dl, const char *reason)
{
    int r = vega__io_check_cancel();
    if (r < 0)
        return r;
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    if (vega__deadline_eff(dl) == 0)
        return -ETIMEDOUT;
#if defined(VEGA__FS_URING)
    if (vega__driver_has_ops() && (c->kind != FS_OPEN2 || uring_has_openat2())) {
        r = vega__op_submit_disk(fs_prep, c, dl, reason);
        if (r != -ENOTSUP)
            return r;
    }
#endif
    c->ran = false;
    r = vega_blocking(fs_job, c, NULL, dl);
    /* A job that ran is done in the kernel: its result stands even if the wait timed out. */
    return c->ran ? c->res : r;
}

/* fs_run for a read or write: on a non-blocking pollable descriptor a would-block answer waits
 * for readiness and tries again. */
static int fs_run_rw(struct fs_call *c, vega_deadline dl)
{
    const char *reason = c->kind == FS_READ ? "file read" : "file write";
    for (;;) {
        int r = fs_run(c, dl, reason);
        if (r != -EAGAIN)
            return r;
        r = vega__io_wait(c->fd, c->kind == FS_READ ? POLLIN : POLLOUT, dl);
        if (r < 0)
            return r;
    }
}

int vega_file_from_fd(vega_file **out, int fd)
{
    if (fd < 0)
        return -EINVAL;
    struct vega_file *f = malloc(sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->fd = fd;
    *out = f;
    return 0;
}

int vega_file_open(vega_file **out, const char *path, int flags, unsigned mode, vega_deadline dl)
{
    if (!path)
        return -EINVAL;
    struct vega_file *f = malloc(sizeof(*f));
    if (!f)
        return -ENOMEM;
    struct fs_call c = {
        .kind = FS_OPEN, .fd = AT_FDCWD, .path = path, .flags = flags | O_CLOEXEC, .mode = mode};
    int r = fs_run(&c, dl, "file open");
    if (r < 0) {
        free(f);
        return r;
    }
    f->fd = r;
    *out = f;
    return 0;
}

int vega_fs_openat2(int dirfd, const char *path, const vega_open_how *how, vega_deadline dl)
{
    if (!path || !how)
        return -EINVAL;
    struct open_how h;
    memset(&h, 0, sizeof(h));
    h.flags = how->flags | O_CLOEXEC;
    h.mode = how->mode;
    h.resolve = how->resolve;
    struct fs_call c = {.kind = FS_OPEN2, .fd = dirfd, .path = path, .how = &h};
    return fs_run(&c, dl, "file open");
}

vega_ssize vega_fs_pread(int fd, void *buf, size_t len, int64_t offset, vega_deadline dl)
{
    if (fd < 0 || offset < -1)
        return -EINVAL;
    struct fs_call c = {.kind = FS_READ,
                        .fd = fd,
                        .buf = buf,
                        .len = len > RW_MAX ? RW_MAX : (unsigned)len,
                        .off = offset};
    return fs_run_rw(&c, dl);
}

vega_ssize vega_file_read(vega_file *f, void *buf, size_t len, int64_t offset, vega_deadline dl)
{
    if (offset < -1)
        return -EINVAL;
    struct fs_call c = {.kind = FS_READ,
                        .fd = f->fd,
                        .buf = buf,
                        .len = len > RW_MAX ? RW_MAX : (unsigned)len,
                        .off = offset};
    return fs_run_rw(&c, dl);
}

vega_ssize vega_file_read_exact(vega_file *f, void *buf, size_t len, int64_t offset, size_t *got,
                                vega_deadline dl)
{
    size_t done = 0;
    vega_ssize r = offset < -1 ? -EINVAL : 0;
    while (r >= 0 && done < len) {
        r = vega_file_read(f, (char *)buf + done, len - done,
                           offset < 0 ? -1 : offset + (int64_t)done, dl);
        if (r == 0)
            r = -ENODATA;
        else if (r > 0)
            done += (size_t)r;
    }
    if (got)
        *got = done;
    return r < 0 ? r : (vega_ssize)len;
}

vega_ssize vega_file_read_all(vega_file *f, void **out, size_t max, vega_deadline dl)
{
    /* Start from the size stat reports (plus one byte to see end of file without a second
     * read), then grow: files that report no size (procfs, FIFOs) still read whole. */
    if (max > SIZE_MAX / 4)
        max = SIZE_MAX / 4;
    vega_file_info info;
    int r = vega_file_stat(f, &info, dl);
    if (r < 0)
        return r;
    size_t cap = info.size < max ? (size_t)info.size + 1 : max + 1;
    if (cap < 4096)
        cap = max + 1 < 4096 ? max + 1 : 4096;
    char *buf = malloc(cap + 1);
    if (!buf)
        return -ENOMEM;
    size_t len = 0;
    for (;;) {
        if (len == cap) {
            if (cap > max) {
                free(buf);
                return VEGA_ERR_NOBUF;
            }
            size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                return -ENOMEM;
            }
            buf = nb;
            cap = ncap;
        }
        vega_ssize n = vega_file_read(f, buf + len, cap - len, -1, dl);
        if (n < 0) {
            free(buf);
            return n;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (len > max) {
        free(buf);
        return VEGA_ERR_NOBUF;
    }
    buf[len] = '\0';
    *out = buf;
    return (vega_ssize)len;
}

vega_ssize vega_file_write(vega_file *f, const void *buf, size_t len, int64_t offset,
                           size_t *written, vega_deadline dl)
{
    size_t done = 0;
    int r = offset < -1 ? -EINVAL : 0;
    while (r >= 0 && done < len) {
        size_t n = len - done;
        struct fs_call c = {.kind = FS_WRITE,
                            .fd = f->fd,
                            .buf = (char *)buf + done,
                            .len = n > RW_MAX ? RW_MAX : (unsigned)n,
                            .off = offset < 0 ? -1 : offset + (int64_t)done};
        r = fs_run_rw(&c, dl);
        if (r == 0)
            r = -EIO; /* a write that accepts nothing would loop forever */
        else if (r > 0)
            done += (size_t)r;
    }
    if (written)
        *written = done;
    return r < 0 ? r : (vega_ssize)len;
}

int vega_file_fsync(vega_file *f, bool datasync, vega_deadline dl)
{
    struct fs_call c = {.kind = FS_FSYNC, .fd = f->fd, .flags = datasync};
    return fs_run(&c, dl, "file fsync");
}

static int64_t ts_ns(const struct statx_timestamp *t)
{
    return t->tv_sec * (int64_t)VEGA_NS_PER_S + t->tv_nsec;
}

static int stat_run(int fd, const char *path, int flags, vega_file_info *info, vega_deadline dl)
{
    struct statx stx;
    memset(&stx, 0, sizeof stx);
    struct fs_call c = {.kind = FS_STATX, .fd = fd, .path = path, .flags = flags, .stx = &stx};
    int r = fs_run(&c, dl, "file stat");
    if (r < 0)
        return r;
    memset(info, 0, sizeof(*info));
    info->size = stx.stx_size;
    info->mode = stx.stx_mode;
    info->nlink = stx.stx_nlink;
    info->uid = stx.stx_uid;
    info->gid = stx.stx_gid;
    info->ino = stx.stx_ino;
    info->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
    info->rdev = makedev(stx.stx_rdev_major, stx.stx_rdev_minor);
    info->blocks = stx.stx_blocks;
    info->blksize = stx.stx_blksize;
    info->atime_ns = ts_ns(&stx.stx_atime);
    info->mtime_ns = ts_ns(&stx.stx_mtime);
    info->ctime_ns = ts_ns(&stx.stx_ctime);
    return 0;
}

int vega_file_stat(vega_file *f, vega_file_info *info, vega_deadline dl)
{
    return stat_run(f->fd, "", AT_EMPTY_PATH, info, dl);
}

int vega_fs_stat(const char *path, unsigned flags, vega_file_info *info, vega_deadline dl)
{
    if (!path)
        return -EINVAL;
    if (flags & ~(unsigned)VEGA_STAT_NOFOLLOW)
        return -EINVAL;
    return stat_run(AT_FDCWD, path, (flags & VEGA_STAT_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0, info,
                    dl);
}

int vega_fs_statat(int dirfd, const char *path, unsigned flags, vega_file_info *info,
                   vega_deadline dl)
{
    if (!path || !info || (flags & ~(unsigned)VEGA_STAT_NOFOLLOW))
        return -EINVAL;
    int at = (flags & VEGA_STAT_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0;
    if (!*path)
        at |= AT_EMPTY_PATH;
    return stat_run(dirfd, path, at, info, dl);
}

int vega_file_close(vega_file *f)
{
    if (!f)
        return 0;
    int fd = f->fd;
    free(f);
    if (vega_task_current() && !vega_task_is_cancelled()) {
        struct fs_call c = {.kind = FS_CLOSE, .fd = fd};
        int r = fs_run(&c, VEGA_DEADLINE_NEVER, "file close");
        /* Library codes and a cancel that beat the operation mean it never ran. */
        if (r >= 0 || (r > VEGA_ERR_BASE && r != -ECANCELED && r != -ETIMEDOUT))
            return r < 0 ? r : 0;
    }
    return close(fd) < 0 ? -errno : 0;
}

int vega_file_fd(const vega_file *f)
{
    return f->fd;
}
