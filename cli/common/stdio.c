/* SPDX-License-Identifier: MIT */
/* stdin/stdout for tasks: poll pipes, sockets and ttys; use the blocking pool for the rest. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int cli_stdio_init(cli_stdio *io, int fd)
{
    struct stat st;
    io->fd = fd;
    io->pollable = false;
    io->restore = false;
    io->saved_flags = 0;
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
        io->pollable = true;
    }
    return 0;
}

void cli_stdio_fini(cli_stdio *io)
{
    if (io->restore) {
        fcntl(io->fd, F_SETFL, io->saved_flags);
        io->restore = false;
    }
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
    if (io->pollable)
        return vega_fd_read(io->fd, buf, len, dl);
    /* vega_blocking waits for the job even on cancel or timeout, so it may live here. */
    struct job j = {.fd = io->fd, .buf = buf, .len = len, .res = 0};
    int r = vega_blocking(read_job, &j, NULL, dl);
    return r < 0 ? r : j.res;
}

vega_ssize cli_stdio_write(cli_stdio *io, const void *buf, size_t len, vega_deadline dl)
{
    if (io->pollable)
        return vega_fd_write(io->fd, buf, len, NULL, dl);
    struct job j = {.fd = io->fd, .buf = (void *)buf, .len = len, .res = 0};
    int r = vega_blocking(write_job, &j, NULL, dl);
    return r < 0 ? r : j.res;
}
