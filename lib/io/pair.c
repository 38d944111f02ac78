/* SPDX-License-Identifier: MIT */
/* Connected Unix socket pairs and pipes, opened non-blocking and close-on-exec for the
 * runtime's readiness waits. */
#include <fcntl.h>
#include <unistd.h>

#include "io_int.h"

int vega_sock_pair(int type, vega_sock **a, vega_sock **b)
{
    if (!a || !b)
        return -EINVAL;
    *a = *b = NULL;
    if (type != SOCK_STREAM && type != SOCK_DGRAM && type != SOCK_SEQPACKET)
        return -EINVAL;
    int fds[2];
    if (socketpair(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) < 0)
        return -errno;
    vega_sock *sa = vega__sock_wrap(fds[0], AF_UNIX, type);
    if (!sa) {
        close(fds[1]);
        return -ENOMEM;
    }
    vega_sock *sb = vega__sock_wrap(fds[1], AF_UNIX, type);
    if (!sb) {
        vega_sock_close(sa);
        return -ENOMEM;
    }
    *a = sa;
    *b = sb;
    return 0;
}

int vega_pipe(int *rfd, int *wfd)
{
    if (!rfd || !wfd)
        return -EINVAL;
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
        return -errno;
    *rfd = fds[0];
    *wfd = fds[1];
    return 0;
}
