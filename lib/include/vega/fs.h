/* SPDX-License-Identifier: MIT */
/* Files on the runtime: open, read, write, fsync, stat and close as io_uring operations, or on
 * the blocking pool under the epoll driver (regular files cannot be polled). */
#ifndef VEGA_FS_H
#define VEGA_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An open file descriptor (regular file, FIFO, device, ...). Owned by whoever opened it. Calls
 * on one file from several tasks at once are allowed for positioned reads and writes (offset
 * >= 0); calls that use the file position (offset -1) must not overlap.
 *
 * How operations run: on a worker whose driver is io_uring each call is one kernel operation
 * (IORING_OP_OPENAT, READ, WRITE, FSYNC, STATX, CLOSE) that a deadline or a cancellation
 * cancels in the kernel; under epoll each call runs on the blocking pool (vega_blocking), where
 * a call already running cannot be interrupted: the task waits for it, then returns
 * -ETIMEDOUT/-ECANCELED. Either way a result the kernel produced before it let go wins over
 * the timeout (an open that succeeded returns the file, a read returns its bytes), so nothing
 * is lost or leaked. On a non-blocking pollable descriptor (a FIFO opened O_NONBLOCK) a read or
 * write that would block waits for readiness, within the deadline.
 *
 * Errors common to every suspending call: -ETIMEDOUT (the deadline passed; a deadline of 0
 * fails at once, since every file operation suspends), -ECANCELED (the task was cancelled),
 * VEGA_ERR_NOTASK (not inside a task), and under epoll VEGA_ERR_FULL (the blocking pool's queue
 * is full) and VEGA_ERR_CLOSED (the runtime is stopping).
 */
typedef struct vega_file vega_file;

/* What vega_file_stat and vega_fs_stat report (from statx(2), STATX_BASIC_STATS). */
typedef struct vega_file_info {
    uint64_t size; /* bytes */
    uint32_t mode; /* file type and permissions as st_mode: S_ISREG(info.mode) works */
    uint32_t nlink;
    uint32_t uid, gid;
    uint64_t ino;
    uint64_t dev;                         /* device holding the file, makedev(major, minor) */
    uint64_t rdev;                        /* the device a device file stands for */
    uint64_t blocks;                      /* 512-byte blocks allocated */
    uint32_t blksize;                     /* preferred I/O size */
    int64_t atime_ns, mtime_ns, ctime_ns; /* nanoseconds since the Unix epoch */
} vega_file_info;

/* Flags for vega_fs_stat. */
enum {
    VEGA_STAT_NOFOLLOW = 1u << 0, /* describe a symbolic link itself, not its target */
};

/*
 * Opens path (relative paths resolve against the current directory) with open(2) flags
 * (O_RDONLY, O_WRONLY|O_CREAT|O_TRUNC, ...; O_CLOEXEC is always added) and mode for a created
 * file. path: borrowed for the call. *out receives the file only on success.
 * Returns 0, -ENOENT, -EACCES, -EEXIST, -EISDIR, -EMFILE, other -errno of open(2), -ENOMEM,
 * and the common errors above; -EINVAL (a bad argument). Context: inside a task. Since 0.1.
 */
VEGA_API int vega_file_open(vega_file **out, const char *path, int flags, unsigned mode,
                            vega_deadline dl);

/* How vega_fs_openat2 opens: the fields of openat2(2)'s struct open_how, same meaning. */
typedef struct vega_open_how {
    uint64_t flags;   /* open(2) flags (O_CLOEXEC is always added) */
    uint64_t mode;    /* for a created file; 0 otherwise */
    uint64_t resolve; /* RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS, ... of <linux/openat2.h> */
} vega_open_how;

/*
 * Opens path relative to the directory descriptor dirfd (or AT_FDCWD) with openat2(2), so the
 * kernel confines the walk as how->resolve says (RESOLVE_BENEATH: never above dirfd). On
 * io_uring this is IORING_OP_OPENAT2 (the kernel tries the walk from its caches inline and
 * hands a walk that must touch the disk to its own workers, so the worker thread never blocks
 * on it); where the ring lacks that opcode (probed once per process) and under epoll it is a
 * blocking-pool job. path and how: borrowed for the call.
 * Returns the new descriptor (>= 0, owned by the caller), -ENOENT, -EXDEV (the walk would leave
 * dirfd's tree, or an absolute symlink, with RESOLVE_BENEATH), -ELOOP (a symlink with
 * RESOLVE_NO_SYMLINKS), -EACCES, -ENOTDIR, -EMFILE, -E2BIG/-EINVAL (bad flags or resolve), -ENOSYS
 * (a kernel without openat2, before 5.6), other -errno, and the common errors; -EINVAL (a NULL
 * argument). Context: inside a task. Since 0.1.
 */
VEGA_API int vega_fs_openat2(int dirfd, const char *path, const vega_open_how *how,
                             vega_deadline dl);

/*
 * vega_file_read on a descriptor the caller owns (borrowed for the call): a positioned read
 * (offset >= 0) or one at the file position (-1). Returns as vega_file_read; -EINVAL (fd < 0 or
 * offset below -1). Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_fs_pread(int fd, void *buf, size_t len, int64_t offset, vega_deadline dl);

/*
 * Wraps an open descriptor. fd: taken on success (vega_file_close closes it); on failure the
 * caller still owns it. Returns 0, -EINVAL (fd < 0), -ENOMEM. Does not suspend. Since 0.1.
 */
VEGA_API int vega_file_from_fd(vega_file **out, int fd);

/*
 * Reads up to len bytes at offset (>= 0: pread, the file position is untouched), or at the
 * file position when offset is -1 (read, the position advances). A count above 0x7ffff000 is
 * cut to it. buf: borrowed, written until the call returns.
 * Returns the count (> 0), 0 at end of file (or len == 0), -EINVAL (offset below -1), -EISDIR,
 * -EBADF, -EIO, other -errno, and the common errors. A timed-out or cancelled read under
 * io_uring consumed nothing. Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_file_read(vega_file *f, void *buf, size_t len, int64_t offset,
                                   vega_deadline dl);

/*
 * Reads exactly len bytes, looping over short reads; offset as for vega_file_read (and
 * advanced between the pieces). got (may be NULL) receives the bytes stored, on success and on
 * error. Returns len, -ENODATA (end of file came first: *got bytes were read), or any error of
 * vega_file_read. Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_file_read_exact(vega_file *f, void *buf, size_t len, int64_t offset,
                                         size_t *got, vega_deadline dl);

/*
 * Reads from the file position to end of file into a new buffer. *out: returns owned (free()),
 * NUL-terminated after the data for convenience; set only on success. max: the most bytes
 * accepted. Returns the length, VEGA_ERR_NOBUF (the file holds more than max bytes; nothing is
 * returned and the position is past what was read), -ENOMEM, or any error of vega_file_read.
 * Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_file_read_all(vega_file *f, void **out, size_t max, vega_deadline dl);

/*
 * Writes all len bytes at offset (>= 0) or at the file position (-1; with O_APPEND, at the
 * end), looping over short writes. written (may be NULL) receives the bytes the kernel
 * accepted, on success and on error, so a caller that retries knows where to resume.
 * Returns len, -EINVAL, -ENOSPC, -EFBIG, -EDQUOT, -EBADF, -EIO, -EPIPE (a FIFO without a
 * reader), other -errno, and the common errors. Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_file_write(vega_file *f, const void *buf, size_t len, int64_t offset,
                                    size_t *written, vega_deadline dl);

/*
 * Flushes the file's data (and with datasync == false its metadata too) to stable storage:
 * fsync(2) or fdatasync(2). Returns 0, -EIO, -ENOSPC, -EINVAL (the file cannot be synced),
 * other -errno, and the common errors. Context: inside a task. Since 0.1.
 */
VEGA_API int vega_file_fsync(vega_file *f, bool datasync, vega_deadline dl);

/* Describes the open file into *info. Returns 0, -errno, the common errors. Since 0.1. */
VEGA_API int vega_file_stat(vega_file *f, vega_file_info *info, vega_deadline dl);

/*
 * Describes the file at path into *info; flags: VEGA_STAT_NOFOLLOW or 0. path: borrowed.
 * Returns 0, -ENOENT, -ENOTDIR, -EACCES, -ELOOP, other -errno, the common errors; -EINVAL (a bad
 * argument). Context: inside a task. Since 0.1.
 */
VEGA_API int vega_fs_stat(const char *path, unsigned flags, vega_file_info *info, vega_deadline dl);

/*
 * Describes path relative to the directory descriptor dirfd (or AT_FDCWD) into *info, as
 * fstatat(2); an empty path describes dirfd itself (any descriptor: AT_EMPTY_PATH), which is
 * fstat on a descriptor the caller owns. flags: VEGA_STAT_NOFOLLOW or 0. path: borrowed.
 * Returns as vega_fs_stat: 0, -ENOENT, -ENOTDIR, -EACCES, -ELOOP, other -errno, the common
 * errors; -EINVAL (a NULL argument, an unknown flag). Context: inside a task. Since 0.1.
 */
VEGA_API int vega_fs_statat(int dirfd, const char *path, unsigned flags, vega_file_info *info,
                            vega_deadline dl);

/*
 * Closes the descriptor and frees f (NULL is a no-op). No task may be inside a call on f.
 * Inside a task on io_uring this is an IORING_OP_CLOSE, under epoll a blocking-pool job; when
 * that cannot run (outside a task, the task is cancelled, the pool is full) it is a plain
 * close(2). The descriptor is gone either way. Returns 0 or the -errno of close (-EIO: data
 * written earlier may be lost). Context: any thread; may suspend until the close is done (no
 * deadline, not cancellable). Since 0.1.
 */
VEGA_API int vega_file_close(vega_file *f);

/* The descriptor, still owned by f. Since 0.1. */
VEGA_API int vega_file_fd(const vega_file *f);

#ifdef __cplusplus
}
#endif
#endif
