/* SPDX-License-Identifier: MIT */
/* The socket object: reads, all-or-error writes, shutdown, close, options and addresses.
 * Every operation tries the non-blocking syscall first and waits for readiness only on EAGAIN. */
#include <fcntl.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_int.h"

#if defined(VEGA_HAVE_URING)
#include <liburing.h>
#endif

/* Gather entries handed to one sendmsg; a longer list is written in windows. */
#define WRITEV_WINDOW 64

int vega__io_wait(int fd, uint32_t events, vega_deadline dl)
{
    if (dl == 0)
        return -ETIMEDOUT;
    return vega__poll_fd(fd, events, dl);
}

int vega__sock_open(int family, int type)
{
    int fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    return fd < 0 ? -errno : fd;
}

struct vega_sock *vega__sock_wrap(int fd, int family, int type)
{
    return vega__sock_wrap_unlink(fd, family, type, NULL);
}

struct vega_sock *vega__sock_wrap_unlink(int fd, int family, int type, const char *path)
{
    /* The path goes after the struct, in the same allocation: a pointer to it would cost
     * every socket 8 bytes (and an idle connection a 16-byte larger malloc chunk). */
    size_t plen = path ? strlen(path) + 1 : 0;
    struct vega_sock *s = calloc(1, sizeof(*s) + plen);
    if (!s) {
        close(fd);
        return NULL;
    }
    if (path) {
        memcpy(s + 1, path, plen);
        s->flags |= VEGA__SOCK_UNLINK;
    }
    s->fd = fd;
    s->family = (uint8_t)family;
    s->type = (uint8_t)type;
    return s;
}

#if defined(VEGA_HAVE_URING)
struct recv_call {
    int fd;
    void *buf;
    unsigned len;
};

static void prep_recv(void *sqe, struct vega__op *op)
{
    struct recv_call *c = op->arg;
    io_uring_prep_recv(sqe, c->fd, c->buf, c->len, 0);
}

/* VEGA_URING_NO_OP_RECV=1 waits for readiness and then reads instead (for comparisons). */
static bool op_recv_enabled(void)
{
    return !vega__env()->uring_no_op_recv;
}
#endif

/* A read that found nothing and may wait: on io_uring one receive into the caller's buffer
 * (the kernel waits for the bytes and copies them, one syscall less than a poll and then a
 * recv); elsewhere -EAGAIN, and the caller waits for readiness. */
static vega_ssize recv_wait(vega_sock *s, void *buf, size_t len, vega_deadline dl)
{
#if defined(VEGA_HAVE_URING)
    if (dl != 0 && vega__driver_has_ops() && op_recv_enabled()) {
        struct recv_call c = {
            .fd = s->fd, .buf = buf, .len = len > (1u << 30) ? (1u << 30) : (unsigned)len};
        return vega__op_submit(prep_recv, &c, dl, "recv");
    }
#else
    (void)s, (void)buf, (void)len, (void)dl;
#endif
    return -EAGAIN;
}

vega_ssize vega_sock_read(vega_sock *s, void *buf, size_t len, vega_deadline dl)
{
    int r = vega__io_check_cancel();
    if (r < 0)
        return r;
    if ((s->flags & VEGA__SOCK_WATCHED) && len > 0) {
        /* Bytes a parked socket's receive already took come first (and nothing reads the
         * socket while a receive is in flight). */
        vega_ssize k = vega__sock_park_read(s, buf, len, dl);
        if (k != -EAGAIN) {
            if (k >= 0)
                vega__io_done_ready();
            return k;
        }
    }
    for (bool waited = false;;) {
        ssize_t n = recv(s->fd, buf, len, 0);
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
        if (len > 0) {
            vega_ssize k = recv_wait(s, buf, len, dl);
            if (k >= 0 || (k != -EAGAIN && k != -EINTR && k != -ENOTSUP))
                return k;
        }
        r = vega__io_wait(s->fd, POLLIN, dl);
        if (r < 0)
            return r;
        waited = true;
    }
}

vega_ssize vega_sock_write(vega_sock *s, const void *buf, size_t len, size_t *written,
                           vega_deadline dl)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return vega_sock_writev(s, &iov, 1, written, dl);
}

vega_ssize vega_sock_writev(vega_sock *s, const struct iovec *iov, int iovcnt, size_t *written,
                            vega_deadline dl)
{
    size_t total = 0, done = 0;
    if (written)
        *written = 0;
    if (iovcnt < 0)
        return -EINVAL;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > SSIZE_MAX - total)
            return -EINVAL;
        total += iov[i].iov_len;
    }
    int r = vega__io_check_cancel();
    if (r < 0)
        return r;

    int idx = 0;     /* first entry not fully written */
    size_t skip = 0; /* bytes of iov[idx] already written */
    bool waited = false;
    while (done < total) {
        struct iovec win[WRITEV_WINDOW];
        int n = 0;
        for (int i = idx; i < iovcnt && n < WRITEV_WINDOW; i++) {
            size_t off = i == idx ? skip : 0;
            if (iov[i].iov_len == off)
                continue;
            win[n].iov_base = (char *)iov[i].iov_base + off;
            win[n].iov_len = iov[i].iov_len - off;
            n++;
        }
        ssize_t w;
        if (n == 1) {
            /* One buffer (the common case): send(2) skips sendmsg's header copy-in. */
            w = send(s->fd, win[0].iov_base, win[0].iov_len, MSG_NOSIGNAL);
        } else {
            struct msghdr mh = {.msg_iov = win, .msg_iovlen = (size_t)n};
            w = sendmsg(s->fd, &mh, MSG_NOSIGNAL);
        }
        if (w < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            if (e != EAGAIN && e != EWOULDBLOCK) {
                r = -e;
                goto out;
            }
            r = vega__io_wait(s->fd, POLLOUT, dl);
            if (r < 0)
                goto out;
            waited = true;
            continue;
        }
        done += (size_t)w;
        /* Advance (idx, skip) by w bytes. */
        size_t adv = (size_t)w;
        while (adv > 0 && idx < iovcnt) {
            size_t left = iov[idx].iov_len - skip;
            if (adv < left) {
                skip += adv;
                adv = 0;
            } else {
                adv -= left;
                idx++;
                skip = 0;
            }
        }
    }
    if (!waited)
        vega__io_done_ready();
    r = 0;
out:
    if (written)
        *written = done;
    return r < 0 ? r : (vega_ssize)total;
}

static int set_int(vega_sock *s, int level, int name, int v)
{
    return setsockopt(s->fd, level, name, &v, sizeof(v)) < 0 ? -errno : 0;
}

static bool is_tcp(const vega_sock *s)
{
    return s->type == SOCK_STREAM && (s->family == AF_INET || s->family == AF_INET6);
}

int vega_sock_shutdown(vega_sock *s, int how)
{
    return shutdown(s->fd, how) < 0 ? -errno : 0;
}

/* Closes the fd and frees s (and its park state). */
int vega__sock_free(vega_sock *s)
{
    int r = 0;
    vega__udp_socks_free(s);
    if (close(s->fd) < 0 && errno != EINTR)
        r = -errno;
    if (s->flags & VEGA__SOCK_UNLINK)
        unlink((const char *)(s + 1));
    free(s->ams);
    free(s);
    return r;
}

int vega_sock_close(vega_sock *s)
{
    if (!s)
        return 0;
    vega__udp_socks_free(s); /* a relay socket's state shares the pointer vega__accept_ms_close
                                reads: gone (NULL) first */
    /* A socket that was ever parked is registered with its home worker's driver: that worker
     * unregisters it, then closes the fd (so the fd number is not reused under the
     * registration) and frees it, perhaps a moment after this returns. */
    if (vega__sock_park_close(s) || vega__accept_ms_close(s))
        return 0;
    return vega__sock_free(s);
}

int vega_sock_abort(vega_sock *s)
{
    if (!s)
        return 0;
    if (is_tcp(s)) {
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    }
    return vega_sock_close(s);
}

int vega_sock_set_nodelay(vega_sock *s, bool on)
{
    if (!is_tcp(s))
        return -EOPNOTSUPP;
    return set_int(s, IPPROTO_TCP, TCP_NODELAY, on);
}

int vega_sock_set_keepalive(vega_sock *s, bool on, unsigned idle_s, unsigned interval_s,
                            unsigned count)
{
    if (!is_tcp(s))
        return -EOPNOTSUPP;
    int r = set_int(s, SOL_SOCKET, SO_KEEPALIVE, on);
    if (r < 0 || !on)
        return r;
    if (idle_s && (r = set_int(s, IPPROTO_TCP, TCP_KEEPIDLE, (int)idle_s)) < 0)
        return r;
    if (interval_s && (r = set_int(s, IPPROTO_TCP, TCP_KEEPINTVL, (int)interval_s)) < 0)
        return r;
    if (count && (r = set_int(s, IPPROTO_TCP, TCP_KEEPCNT, (int)count)) < 0)
        return r;
    return 0;
}

int vega_sock_set_buffers(vega_sock *s, int rcvbuf, int sndbuf)
{
    int r = 0;
    if (rcvbuf > 0 && (r = set_int(s, SOL_SOCKET, SO_RCVBUF, rcvbuf)) < 0)
        return r;
    if (sndbuf > 0 && (r = set_int(s, SOL_SOCKET, SO_SNDBUF, sndbuf)) < 0)
        return r;
    return 0;
}

int vega_sock_fd(const vega_sock *s)
{
    return s->fd;
}

int vega_sock_local_addr(const vega_sock *s, vega_addr *out)
{
    memset(out, 0, sizeof(*out));
    out->len = sizeof(out->ss);
    if (getsockname(s->fd, (struct sockaddr *)&out->ss, &out->len) < 0) {
        out->len = 0;
        return -errno;
    }
    return 0;
}

int vega_sock_peer_addr(const vega_sock *s, vega_addr *out)
{
    memset(out, 0, sizeof(*out));
    out->len = sizeof(out->ss);
    if (getpeername(s->fd, (struct sockaddr *)&out->ss, &out->len) < 0) {
        out->len = 0;
        return -errno;
    }
    return 0;
}
