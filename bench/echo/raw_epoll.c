/* SPDX-License-Identifier: MIT */
/* raw-epoll: a minimal single-thread, edge-triggered epoll TCP echo server on 127.0.0.1:PORT.
 * The floor of what a runtime's epoll path can cost (bench/run-echo.sh). Prints only errors.
 *
 * One shared read buffer; per connection only the descriptor and, while a write is partial,
 * the bytes still to send (the connection then stops reading until they are out). */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define READ_BUF   (64 * 1024)
#define MAX_EVENTS 256

struct conn {
    int fd;
    unsigned pend_off, pend_len; /* unsent bytes in pend[pend_off, pend_len) */
    char *pend;
};

static char rbuf[READ_BUF];
static int ep;
static int listener_tag; /* its address marks the listener's events */

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void conn_close(struct conn *c)
{
    close(c->fd); /* also removes it from the epoll set */
    free(c->pend);
    free(c);
}

/* Sends what is pending. 1: all sent, 0: would block, -1: error. */
static int flush(struct conn *c)
{
    while (c->pend_off < c->pend_len) {
        ssize_t w = send(c->fd, c->pend + c->pend_off, c->pend_len - c->pend_off, MSG_NOSIGNAL);
        if (w > 0) {
            c->pend_off += (unsigned)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && errno == EAGAIN) {
            return 0;
        } else {
            return -1;
        }
    }
    free(c->pend);
    c->pend = NULL;
    c->pend_off = c->pend_len = 0;
    return 1;
}

static int set_events(struct conn *c, uint32_t ev)
{
    struct epoll_event e = {.events = ev | EPOLLET, .data.ptr = c};
    return epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
}

/* Reads until EAGAIN and echoes; on a partial write keeps the rest and waits for EPOLLOUT. */
static void on_readable(struct conn *c)
{
    for (;;) {
        ssize_t n = recv(c->fd, rbuf, sizeof(rbuf), 0);
        if (n == 0) {
            conn_close(c);
            return;
        }
        if (n < 0) {
            if (errno == EAGAIN)
                return;
            if (errno == EINTR)
                continue;
            conn_close(c);
            return;
        }
        size_t off = 0;
        while (off < (size_t)n) {
            ssize_t w = send(c->fd, rbuf + off, (size_t)n - off, MSG_NOSIGNAL);
            if (w > 0) {
                off += (size_t)w;
            } else if (w < 0 && errno == EINTR) {
                continue;
            } else if (w < 0 && errno == EAGAIN) {
                break;
            } else {
                conn_close(c);
                return;
            }
        }
        if (off < (size_t)n) {
            c->pend_len = (unsigned)((size_t)n - off);
            c->pend_off = 0;
            c->pend = malloc(c->pend_len);
            if (!c->pend) {
                conn_close(c);
                return;
            }
            memcpy(c->pend, rbuf + off, c->pend_len);
            /* Stop reading until it is out; MOD re-arms, so readiness is not lost. */
            if (set_events(c, EPOLLOUT) < 0)
                conn_close(c);
            return;
        }
    }
}

static void on_writable(struct conn *c)
{
    int r = flush(c);
    if (r < 0)
        conn_close(c);
    else if (r > 0 && set_events(c, EPOLLIN | EPOLLRDHUP) < 0)
        conn_close(c);
}

static void accept_all(int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN)
                return;
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                perror("accept4");
                return; /* edge-triggered: the next connection wakes us again */
            }
            die("accept4");
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct conn *c = calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = c};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) < 0) {
            perror("epoll_ctl");
            conn_close(c);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: raw-epoll PORT\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0)
        die("socket");
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((unsigned short)atoi(argv[1])),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0)
        die("bind");
    if (listen(lfd, 4096) < 0)
        die("listen");
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        die("epoll_create1");
    struct epoll_event le = {.events = EPOLLIN | EPOLLET, .data.ptr = &listener_tag};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &le) < 0)
        die("epoll_ctl");

    struct epoll_event evs[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(ep, evs, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &listener_tag) {
                accept_all(lfd);
                continue;
            }
            struct conn *c = evs[i].data.ptr;
            if (c->pend)
                on_writable(c); /* only EPOLLOUT (or an error) is armed while pending */
            else
                on_readable(c); /* EPOLLIN, RDHUP, HUP, ERR: recv tells which */
        }
    }
}
