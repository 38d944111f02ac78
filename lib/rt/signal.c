/* SPDX-License-Identifier: MIT */
/* Signals delivered to tasks through a signalfd. */
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "sched_int.h"

int vega_signal_block(const sigset_t *set)
{
    int r = pthread_sigmask(SIG_BLOCK, set, NULL);
    return -r;
}

int vega_signal_wait(const sigset_t *set, int *signo, vega_deadline dl)
{
    if (!vega__task_self())
        return VEGA_ERR_NOTASK;
    /* Blocked signals stay pending for the process until a signalfd reads them, so none is
     * lost between two waits. */
    pthread_sigmask(SIG_BLOCK, set, NULL);
    int fd = signalfd(-1, set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    int r;
    for (;;) {
        struct signalfd_siginfo si;
        ssize_t n = read(fd, &si, sizeof si);
        if (n == (ssize_t)sizeof si) {
            if (signo)
                *signo = (int)si.ssi_signo;
            r = 0;
            break;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            r = -errno;
            break;
        }
        r = vega__poll_fd(fd, POLLIN, dl);
        if (r < 0)
            break;
    }
    close(fd);
    return r;
}
