/* SPDX-License-Identifier: MIT */
/* Zero-copy sends into a stream socket: sendfile(2) from a file, and splice(2) through a pipe
 * from any descriptor; both wait for the socket's writability like vega_sock_write. */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <time.h>
#include <unistd.h>

#include "io_int.h"

/* The most one sendfile or splice moves per call (Linux's MAX_RW_COUNT). */
#define MAX_CHUNK ((size_t)0x7ffff000)

/* The pipe of a splice: asked for this much, but the system may give less (pipe-max-size,
 * per-user pipe quotas), which is fine. */
#define SPLICE_PIPE_SIZE (256 * 1024)

/*
 * sendfile and splice into a socket take no MSG_NOSIGNAL: a gone peer raises SIGPIPE at the
 * calling thread. SIGPIPE is blocked on the thread around each call (never across a wait: the
 * task may resume on another thread) and a SIGPIPE the call raised is taken off the thread's
 * pending set before unblocking. The runtime's worker threads keep SIGPIPE blocked for life, so
 * there only a call that failed with EPIPE costs a system call (taking its signal off).
 */
struct sigpipe_guard {
    sigset_t old;
    bool was_blocked, pending_before;
};

static void sigpipe_block(struct sigpipe_guard *g)
{
    if (vega__sigpipe_blocked) {
        /* A worker thread: blocked for life, and every SIGPIPE a call raised was taken off. */
        g->was_blocked = true;
        g->pending_before = false;
        return;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &g->old);
    g->was_blocked = sigismember(&g->old, SIGPIPE) == 1;
    g->pending_before = false;
    if (g->was_blocked) {
        /* Only a thread that already blocked SIGPIPE can have one pending: leave that one. */
        sigset_t pend;
        if (sigpending(&pend) == 0)
            g->pending_before = sigismember(&pend, SIGPIPE) == 1;
    }
}

static void sigpipe_restore(struct sigpipe_guard *g, bool epipe)
{
    if (epipe && !g->pending_before) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGPIPE);
        struct timespec zero = {0, 0};
        while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR) {
        }
    }
    if (!g->was_blocked)
        pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

vega_ssize vega_sock_sendfile(vega_sock *s, int file_fd, uint64_t offset, size_t count,
                              size_t *sent, vega_deadline dl)
{
    size_t done = 0;
    if (sent)
        *sent = 0;
    if (!s || offset > INT64_MAX || count > SSIZE_MAX || count > INT64_MAX - offset)
        return -EINVAL;
    int r = vega__io_check_cancel();
    bool waited = false;
    while (r == 0 && done < count) {
        off_t off = (off_t)(offset + done);
        size_t chunk = count - done < MAX_CHUNK ? count - done : MAX_CHUNK;
        struct sigpipe_guard g;
        sigpipe_block(&g);
        ssize_t n = sendfile(s->fd, file_fd, &off, chunk);
        int e = n < 0 ? errno : 0;
        sigpipe_restore(&g, e == EPIPE);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n == 0) {
            r = -ENODATA; /* the file ended before offset + count */
            break;
        }
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK) {
            r = -e;
            break;
        }
        r = vega__io_wait(s->fd, POLLOUT, dl);
        if (r > 0) {
            r = 0;
            waited = true;
        }
    }
    if (sent)
        *sent = done;
    if (r < 0)
        return r;
    if (!waited)
        vega__io_done_ready();
    return (vega_ssize)count;
}

/* Where a splice stands: bytes read from the source into the pipe, and written out of it. */
struct splice_state {
    int pr, pw;         /* the pipe */
    size_t cap;         /* its size */
    size_t in, out;     /* bytes into the pipe, and from it into the socket */
    bool eof, src_busy; /* the source ended; the source had nothing (EAGAIN) */
};

/* Moves what the source has into the pipe. Returns 0 or -errno. */
static int splice_fill(struct splice_state *st, int fd, int64_t offset, size_t count)
{
    size_t held = st->in - st->out;
    if (st->eof || st->in >= count || held >= st->cap)
        return 0;
    size_t want = count - st->in;
    if (want > st->cap - held)
        want = st->cap - held;
    for (;;) {
        loff_t off = offset + (loff_t)st->in;
        ssize_t n = splice(fd, offset >= 0 ? &off : NULL, st->pw, NULL, want,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            st->in += (size_t)n;
            return 0;
        }
        if (n == 0) {
            st->eof = true;
            return 0;
        }
        int e = errno;
        if (e == EINTR)
            continue;
        if (e == EAGAIN || e == EWOULDBLOCK) {
            st->src_busy = true;
            return 0;
        }
        return -e;
    }
}

/* Moves what the pipe holds into the socket. Returns > 0 (progress), 0 (the socket is full:
 * EAGAIN), or -errno. */
static int splice_drain(struct splice_state *st, vega_sock *s, size_t count)
{
    size_t held = st->in - st->out;
    for (;;) {
        unsigned flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
        if (st->in < count && !st->eof)
            flags |= SPLICE_F_MORE;
        struct sigpipe_guard g;
        sigpipe_block(&g);
        ssize_t n = splice(st->pr, NULL, s->fd, NULL, held, flags);
        int e = n < 0 ? errno : 0;
        sigpipe_restore(&g, e == EPIPE);
        if (n > 0) {
            st->out += (size_t)n;
            return 1;
        }
        if (n == 0)
            return -EIO; /* cannot happen with bytes in the pipe */
        if (e == EINTR)
            continue;
        return e == EAGAIN || e == EWOULDBLOCK ? 0 : -e;
    }
}

vega_ssize vega_sock_splice_from(vega_sock *s, int fd, int64_t offset, size_t count, size_t *sent,
                                 vega_deadline dl)
{
    if (sent)
        *sent = 0;
    if (!s)
        return -EINVAL;
    if (count > SSIZE_MAX)
        count = SSIZE_MAX; /* "until end of file" */
    if (offset >= 0 && count > (uint64_t)(INT64_MAX - offset))
        count = (size_t)(INT64_MAX - offset);
    int r = vega__io_check_cancel();
    if (r < 0)
        return r;
    int p[2];
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
        return -errno;
    struct splice_state st = {.pr = p[0], .pw = p[1]};
    (void)fcntl(st.pw, F_SETPIPE_SZ, SPLICE_PIPE_SIZE);
    int sz = fcntl(st.pw, F_GETPIPE_SZ);
    st.cap = sz > 0 ? (size_t)sz : 65536;

    bool waited = false;
    for (;;) {
        st.src_busy = false;
        if ((r = splice_fill(&st, fd, offset, count)) < 0)
            break;
        if (st.in > st.out) {
            r = splice_drain(&st, s, count);
            if (r < 0)
                break;
            if (r == 0) {
                if ((r = vega__io_wait(s->fd, POLLOUT, dl)) < 0)
                    break;
                waited = true;
            }
            continue;
        }
        r = 0;
        if (st.eof || st.in >= count)
            break;
        if (st.src_busy) {
            if ((r = vega__io_wait(fd, POLLIN, dl)) < 0)
                break;
            waited = true;
        }
    }
    close(p[0]);
    close(p[1]);
    if (sent)
        *sent = st.out;
    if (r < 0)
        return r;
    if (!waited)
        vega__io_done_ready();
    return (vega_ssize)st.out;
}
