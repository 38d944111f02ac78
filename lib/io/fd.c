/* SPDX-License-Identifier: MIT */
/* Readiness waits, reads and all-or-error writes on plain pollable file descriptors. */
#include <unistd.h>

#include "io_int.h"

int vega_fd_poll(int fd, unsigned events, vega_deadline dl)
{
    int r = vega__io_check_cancel();
    if (r < 0)
        return r;
    return vega__io_wait(fd, events, dl);
}

vega_ssize vega_fd_read(int fd, void *buf, size_t len, vega_deadline dl)
{
    int r = vega__io_check_cancel();
    if (r < 0)
        return r;
    for (bool waited = false;;) {
        ssize_t n = read(fd, buf, len);
        if (n >= 0) {
            if (!waited)
                vega__io_done_ready();
            return n;
        }
        int e = errno;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return -e;
        r = vega__io_wait(fd, POLLIN, dl);
        if (r < 0)
            return r;
        waited = true;
    }
}

vega_ssize vega_fd_write(int fd, const void *buf, size_t len, size_t *written, vega_deadline dl)
{
    size_t done = 0;
    int r = vega__io_check_cancel();
    bool waited = false;
    while (r == 0 && done < len) {
        ssize_t n = write(fd, (const char *)buf + done, len - done);
        if (n >= 0) {
            done += (size_t)n;
            continue;
        }
        int e = errno;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK) {
            r = -e;
            break;
        }
        r = vega__io_wait(fd, POLLOUT, dl);
        if (r > 0) {
            r = 0;
            waited = true;
        }
    }
    if (written)
        *written = done;
    if (r < 0)
        return r;
    if (!waited)
        vega__io_done_ready();
    return (vega_ssize)len;
}
