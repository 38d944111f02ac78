/* SPDX-License-Identifier: MIT */
/* Standard streams and output files for tasks: pipes, sockets and ttys waited on by the
 * runtime, regular files and devices as <vega/fs.h> operations (io_uring on the worker, the
 * blocking pool under epoll), /dev/null not touched at all, blocking ttys on the pool. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli.h"

/* /dev/null: Linux's memory device 1:3 (devices(7)); a bind mount or a mknod of it is too. */
static bool is_dev_null(const struct stat *st)
{
    return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

static int stdio_setup(cli_stdio *io, int fd, bool owned)
{
    struct stat st;
    io->fd = fd;
    io->kind = CLI_STDIO_BLOCKING;
    io->owned = owned;
    io->restore = false;
    io->saved_flags = 0;
    io->file = NULL;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || (S_ISCHR(st.st_mode) && isatty(fd))) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0)
            return -errno;
        io->saved_flags = fl;
        if (!(fl & O_NONBLOCK)) {
            if (fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return 0; /* keep blocking mode and use the pool */
            io->restore = true;
        }
        io->kind = CLI_STDIO_POLL;
        return 0;
    }
    if (is_dev_null(&st)) {
        io->kind = CLI_STDIO_NULL;
        return 0;
    }
    /* Regular files, block and other character devices: kernel operations. A borrowed fd is
     * duplicated (sharing its file position) so that closing the vega_file leaves it open. */
    int ffd = owned ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (ffd < 0)
        return 0; /* no descriptor to spare: the blocking pool reads and writes fd itself */
    if (vega_file_from_fd(&io->file, ffd) < 0) {
        io->file = NULL;
        if (!owned)
            close(ffd);
        return 0;
    }
    io->kind = CLI_STDIO_FILE;
    return 0;
}

int cli_stdio_init(cli_stdio *io, int fd)
{
    return stdio_setup(io, fd, false);
}

int cli_stdio_adopt(cli_stdio *io, int fd)
{
    return stdio_setup(io, fd, true);
}

void cli_stdio_use_pool(cli_stdio *io)
{
    if (io->kind != CLI_STDIO_POLL)
        return;
    if (io->restore) {
        fcntl(io->fd, F_SETFL, io->saved_flags);
        io->restore = false;
    }
    io->kind = CLI_STDIO_BLOCKING;
}

void cli_stdio_fini(cli_stdio *io)
{
    if (io->restore) {
        fcntl(io->fd, F_SETFL, io->saved_flags);
        io->restore = false;
    }
    if (io->file && !io->owned) {
        vega_file_close(io->file); /* the duplicate */
        io->file = NULL;
        if (io->kind == CLI_STDIO_FILE)
            io->kind = CLI_STDIO_BLOCKING;
    }
}

int cli_stdio_close(cli_stdio *io)
{
    cli_stdio_fini(io);
    if (!io->owned || io->fd < 0)
        return 0;
    int r;
    if (io->file)
        r = vega_file_close(io->file);
    else
        r = close(io->fd) < 0 ? -errno : 0;
    io->file = NULL;
    io->fd = -1;
    io->owned = false;
    return r;
}

struct job {
    int fd;
    void *buf;
    size_t len;
    ssize_t res;
};

static void *read_job(void *arg)
{
    struct job *j = arg;
    do
        j->res = read(j->fd, j->buf, j->len);
    while (j->res < 0 && errno == EINTR);
    if (j->res < 0)
        j->res = -errno;
    return NULL;
}

static void *write_job(void *arg)
{
    struct job *j = arg;
    size_t done = 0;
    while (done < j->len) {
        ssize_t n = write(j->fd, (char *)j->buf + done, j->len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            j->res = -errno;
            return NULL;
        }
        done += (size_t)n;
    }
    j->res = (ssize_t)j->len;
    return NULL;
}

vega_ssize cli_stdio_read(cli_stdio *io, void *buf, size_t len, vega_deadline dl)
{
    switch (io->kind) {
    case CLI_STDIO_POLL:
        return vega_fd_read(io->fd, buf, len, dl);
    case CLI_STDIO_FILE:
        return vega_file_read(io->file, buf, len, -1, dl);
    case CLI_STDIO_NULL:
        return 0; /* what read(2) on /dev/null answers */
    case CLI_STDIO_BLOCKING:
        break;
    }
    /* vega_blocking waits for the job even on cancel or timeout, so it may live here. */
    struct job j = {.fd = io->fd, .buf = buf, .len = len, .res = 0};
    int r = vega_blocking(read_job, &j, NULL, dl);
    return r < 0 ? r : j.res;
}

vega_ssize cli_stdio_write(cli_stdio *io, const void *buf, size_t len, vega_deadline dl)
{
    switch (io->kind) {
    case CLI_STDIO_POLL:
        return vega_fd_write(io->fd, buf, len, NULL, dl);
    case CLI_STDIO_FILE:
        return vega_file_write(io->file, buf, len, -1, NULL, dl);
    case CLI_STDIO_NULL:
        return (vega_ssize)len;
    case CLI_STDIO_BLOCKING:
        break;
    }
    struct job j = {.fd = io->fd, .buf = (void *)buf, .len = len, .res = 0};
    int r = vega_blocking(write_job, &j, NULL, dl);
    return r < 0 ? r : j.res;
}
