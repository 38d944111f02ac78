/* SPDX-License-Identifier: MIT */
/* raw-uring: a minimal single-thread liburing TCP echo server on 127.0.0.1:PORT. The floor of
 * what a runtime's io_uring path can cost (bench/run-echo.sh). Prints only errors.
 *
 * One ring (SINGLE_ISSUER + DEFER_TASKRUN where the kernel has them), a multishot accept
 * (re-armed when the kernel ends it), and per connection one operation at a time: recv into
 * the connection's fixed buffer, then send it back (resubmitting the rest of a short send),
 * then recv again. */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RING_ENTRIES 4096
#define CONN_BUF     4096

enum {
    OP_RECV = 1,
    OP_SEND = 2
};
#define ACCEPT_TAG 0 /* user_data of the accept; conns are 8-aligned pointers | op */

struct conn {
    int fd;
    unsigned off, len; /* while sending: buf[off, len) is still to go */
    char buf[CONN_BUF];
};

static struct io_uring ring;
static int lfd;

static void die(const char *what, int err)
{
    fprintf(stderr, "raw-uring: %s: %s\n", what, strerror(err));
    exit(1);
}

static struct io_uring_sqe *sqe_get(void)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    while (!sqe) {
        int r = io_uring_submit(&ring);
        if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
            die("io_uring_submit", -r);
        sqe = io_uring_get_sqe(&ring);
    }
    return sqe;
}

static void arm_accept(void)
{
    struct io_uring_sqe *sqe = sqe_get();
    io_uring_prep_multishot_accept(sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, ACCEPT_TAG);
}

static void arm_recv(struct conn *c)
{
    struct io_uring_sqe *sqe = sqe_get();
    io_uring_prep_recv(sqe, c->fd, c->buf, CONN_BUF, 0);
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_RECV);
}

static void arm_send(struct conn *c)
{
    struct io_uring_sqe *sqe = sqe_get();
    io_uring_prep_send(sqe, c->fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_SEND);
}

static void conn_close(struct conn *c)
{
    close(c->fd); /* nothing else is in flight for it: one operation at a time */
    free(c);
}

static void on_cqe(struct io_uring_cqe *cqe)
{
    uint64_t ud = io_uring_cqe_get_data64(cqe);
    int res = cqe->res;
    if (ud == ACCEPT_TAG) {
        if (!(cqe->flags & IORING_CQE_F_MORE))
            arm_accept();
        if (res < 0) {
            if (res != -EINTR && res != -ECONNABORTED && res != -EAGAIN)
                fprintf(stderr, "raw-uring: accept: %s\n", strerror(-res));
            return;
        }
        int one = 1;
        setsockopt(res, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct conn *c = malloc(sizeof(*c));
        if (!c) {
            close(res);
            return;
        }
        c->fd = res;
        c->off = c->len = 0;
        arm_recv(c);
        return;
    }
    struct conn *c = (struct conn *)(uintptr_t)(ud & ~(uint64_t)7);
    if ((ud & 7) == OP_RECV) {
        if (res == -EINTR || res == -EAGAIN) {
            arm_recv(c);
        } else if (res <= 0) {
            conn_close(c);
        } else {
            c->off = 0;
            c->len = (unsigned)res;
            arm_send(c);
        }
    } else {
        if (res == -EINTR || res == -EAGAIN) {
            arm_send(c);
        } else if (res < 0) {
            conn_close(c);
        } else {
            c->off += (unsigned)res;
            if (c->off < c->len)
                arm_send(c);
            else
                arm_recv(c);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: raw-uring PORT\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0)
        die("socket", errno);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((unsigned short)atoi(argv[1])),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0)
        die("bind", errno);
    if (listen(lfd, 4096) < 0)
        die("listen", errno);

    static const unsigned ladder[] = {
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
        IORING_SETUP_COOP_TASKRUN,
        0,
    };
    int r = -EINVAL;
    for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]) && r == -EINVAL; i++) {
        struct io_uring_params p;
        memset(&p, 0, sizeof(p));
        p.flags = ladder[i] | IORING_SETUP_CLAMP;
        r = io_uring_queue_init_params(RING_ENTRIES, &ring, &p);
    }
    if (r < 0)
        die("io_uring_queue_init", -r);

    arm_accept();
    for (;;) {
        r = io_uring_submit_and_wait(&ring, 1);
        if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ETIME)
            die("io_uring_submit_and_wait", -r);
        struct io_uring_cqe *cqe;
        unsigned head, n = 0;
        io_uring_for_each_cqe(&ring, head, cqe)
        {
            /* on_cqe may submit (sqe_get on a full SQ), which never touches the CQ head. */
            on_cqe(cqe);
            n++;
        }
        io_uring_cq_advance(&ring, n);
    }
}
