/* SPDX-License-Identifier: MIT */
/* Streams over the OS: connected stream sockets (vega_sock) and pollable descriptors (pipes). */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vega/stream.h>

#include "io_int.h"

/* ---- sockets --------------------------------------------------------------------------------- */

struct sock_stream {
    vega_sock *sock;
    bool owned;
};

static vega_ssize sock_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    struct sock_stream *ss = user;
    return vega_sock_read(ss->sock, buf, len, dl);
}

static vega_ssize sock_write(void *user, const void *buf, size_t len, size_t *written,
                             vega_deadline dl)
{
    struct sock_stream *ss = user;
    return vega_sock_write(ss->sock, buf, len, written, dl);
}

static vega_ssize sock_writev(void *user, const struct iovec *iov, int iovcnt, size_t *written,
                              vega_deadline dl)
{
    struct sock_stream *ss = user;
    return vega_sock_writev(ss->sock, iov, iovcnt, written, dl);
}

static int sock_shutdown(void *user, int how, vega_deadline dl)
{
    struct sock_stream *ss = user;
    return vega_sock_shutdown(ss->sock, how);
}

static int sock_close(void *user, vega_deadline dl)
{
    struct sock_stream *ss = user;
    int r = ss->owned ? vega_sock_close(ss->sock) : 0;
    free(ss);
    return r;
}

/* vega_sock_sendfile does the work (and keeps SIGPIPE away). */
static vega_ssize sock_sendfile(void *user, int in_fd, off_t offset, size_t len, size_t *written,
                                vega_deadline dl)
{
    struct sock_stream *ss = user;
    if (offset < 0)
        return -EINVAL;
    return vega_sock_sendfile(ss->sock, in_fd, (uint64_t)offset, len, written, dl);
}

static const vega_stream_ops sock_ops = {
    .name = "sock",
    .read = sock_read,
    .write = sock_write,
    .writev = sock_writev,
    .shutdown = sock_shutdown,
    .close = sock_close,
    .sendfile = sock_sendfile,
};

int vega_stream_from_sock(vega_stream **out, vega_sock *sock, unsigned flags)
{
    if (!out || !sock || (flags & ~(unsigned)VEGA_STREAM_BORROW))
        return -EINVAL;
    struct sock_stream *ss = malloc(sizeof(*ss));
    if (!ss)
        return -ENOMEM;
    ss->sock = sock;
    ss->owned = !(flags & VEGA_STREAM_BORROW);
    int r = vega_stream_new(out, &sock_ops, ss);
    if (r < 0)
        free(ss);
    return r;
}

vega_sock *vega_stream_sock(const vega_stream *s)
{
    if (!s || vega_stream_get_ops(s) != &sock_ops)
        return NULL;
    const struct sock_stream *ss = vega_stream_user(s);
    return ss->sock;
}

int vega_stream_sock_rebind(vega_stream *s, vega_sock *sock)
{
    if (!s || !sock || vega_stream_get_ops(s) != &sock_ops)
        return -EINVAL;
    struct sock_stream *ss = vega_stream_user(s);
    if (ss->owned)
        return -EINVAL;
    ss->sock = sock;
    return 0;
}

/* ---- descriptors ----------------------------------------------------------------------------- */

struct fd_stream {
    int rfd, wfd; /* -1 once shut down (owned) or never given */
    bool owned;
    bool rd_shut, wr_shut;
};

static vega_ssize fd_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    struct fd_stream *fs = user;
    if (fs->rd_shut)
        return 0;
    if (fs->rfd < 0)
        return -EBADF;
    return vega_fd_read(fs->rfd, buf, len, dl);
}

static vega_ssize fd_write(void *user, const void *buf, size_t len, size_t *written,
                           vega_deadline dl)
{
    struct fd_stream *fs = user;
    *written = 0;
    if (fs->wr_shut)
        return -EPIPE;
    if (fs->wfd < 0)
        return -EBADF;
    return vega_fd_write(fs->wfd, buf, len, written, dl);
}

static bool is_socket(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

static void fd_drop(struct fd_stream *fs, int *fd)
{
    int other = fd == &fs->rfd ? fs->wfd : fs->rfd;
    if (fs->owned && *fd >= 0 && *fd != other)
        close(*fd);
    if (fs->owned)
        *fd = -1;
}

static int fd_shutdown(void *user, int how, vega_deadline dl)
{
    struct fd_stream *fs = user;
    if (fs->rfd >= 0 && fs->rfd == fs->wfd && is_socket(fs->rfd)) {
        if (shutdown(fs->rfd, how) < 0)
            return -errno;
    }
    if (how == SHUT_RD || how == SHUT_RDWR) {
        fs->rd_shut = true;
        fd_drop(fs, &fs->rfd);
    }
    if (how == SHUT_WR || how == SHUT_RDWR) {
        fs->wr_shut = true;
        fd_drop(fs, &fs->wfd);
    }
    return 0;
}

static int fd_close(void *user, vega_deadline dl)
{
    struct fd_stream *fs = user;
    int r = 0;
    if (fs->owned) {
        if (fs->rfd >= 0 && close(fs->rfd) < 0 && errno != EINTR)
            r = -errno;
        if (fs->wfd >= 0 && fs->wfd != fs->rfd && close(fs->wfd) < 0 && errno != EINTR && !r)
            r = -errno;
    }
    free(fs);
    return r;
}

static const vega_stream_ops fd_ops = {
    .name = "fd",
    .read = fd_read,
    .write = fd_write,
    .shutdown = fd_shutdown,
    .close = fd_close,
};

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -errno;
    if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

int vega_stream_from_fd(vega_stream **out, int rfd, int wfd, unsigned flags)
{
    if (!out || (rfd < 0 && wfd < 0) || (flags & ~(unsigned)VEGA_STREAM_BORROW))
        return -EINVAL;
    int r;
    if ((rfd >= 0 && (r = set_nonblock(rfd)) < 0) || (wfd >= 0 && (r = set_nonblock(wfd)) < 0))
        return r;
    struct fd_stream *fs = malloc(sizeof(*fs));
    if (!fs)
        return -ENOMEM;
    *fs = (struct fd_stream){.rfd = rfd < 0 ? -1 : rfd,
                             .wfd = wfd < 0 ? -1 : wfd,
                             .owned = !(flags & VEGA_STREAM_BORROW)};
    r = vega_stream_new(out, &fd_ops, fs);
    if (r < 0)
        free(fs);
    return r;
}
