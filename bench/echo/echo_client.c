/* SPDX-License-Identifier: MIT */
/* echo-client: a small TCP echo load generator for bench/run-echo.sh (its fallback when
 * vega-load is not built). CONNS connections, each ping-pongs one SIZE-byte message at a time
 * (the next goes out when the whole previous one came back, checked byte for byte) for SECS
 * seconds, all on one thread with level-triggered epoll.
 *
 *   echo-client [-c CONNS] [-d SECS] [-s SIZE] HOST:PORT
 *
 * Prints one JSON line: {"round_trips":N,"seconds":S,"rps":R,"conns":C,"size":B,"errors":E}.
 * Exit 1 if a connection failed or data came back wrong (described on stderr). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZE 65536

struct conn {
    int fd;
    unsigned got; /* bytes of the current message received back */
    uint64_t seq; /* the current message's number (its first 8 bytes) */
    unsigned char *msg;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fill(struct conn *c, unsigned idx, unsigned size)
{
    memcpy(c->msg, &c->seq, size < 8 ? size : 8);
    for (unsigned i = 8; i < size; i++)
        c->msg[i] = (unsigned char)(idx * 31 + i + c->seq);
}

static int send_msg(struct conn *c, unsigned size)
{
    unsigned off = 0;
    while (off < size) {
        ssize_t w = send(c->fd, c->msg + off, size - off, MSG_NOSIGNAL);
        if (w > 0)
            off += (unsigned)w;
        else if (w < 0 && (errno == EINTR || errno == EAGAIN))
            continue; /* 64 B into an empty send buffer: never in practice */
        else
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned conns = 64, size = 64;
    double secs = 5;
    int opt;
    while ((opt = getopt(argc, argv, "c:d:s:")) != -1) {
        switch (opt) {
        case 'c':
            conns = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'd':
            secs = strtod(optarg, NULL);
            break;
        case 's':
            size = (unsigned)strtoul(optarg, NULL, 10);
            break;
        default:
            goto usage;
        }
    }
    if (optind != argc - 1 || conns < 1 || size < 1 || size > MAX_SIZE || !(secs > 0)) {
    usage:
        fprintf(stderr, "usage: echo-client [-c CONNS] [-d SECS] [-s SIZE] HOST:PORT\n");
        return 2;
    }
    char host[256];
    snprintf(host, sizeof(host), "%s", argv[optind]);
    char *colon = strrchr(host, ':');
    if (!colon)
        goto usage;
    *colon = '\0';
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((unsigned short)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr, "echo-client: '%s': want an IPv4 address\n", host);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);

    struct conn *cs = calloc(conns, sizeof(*cs));
    unsigned char *msgs = malloc((size_t)conns * size);
    unsigned char *rbuf = malloc(MAX_SIZE);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (!cs || !msgs || !rbuf || ep < 0) {
        perror("echo-client: setup");
        return 1;
    }
    for (unsigned i = 0; i < conns; i++) {
        struct conn *c = &cs[i];
        c->msg = msgs + (size_t)i * size;
        c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            fprintf(stderr, "echo-client: connection %u: %s\n", i, strerror(errno));
            return 1;
        }
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e) < 0) {
            perror("echo-client: epoll_ctl");
            return 1;
        }
    }

    uint64_t rts = 0, errors = 0;
    double start = now_s(), end = start + secs, t = start;
    for (unsigned i = 0; i < conns; i++) {
        fill(&cs[i], i, size);
        if (send_msg(&cs[i], size) < 0) {
            fprintf(stderr, "echo-client: connection %u: send: %s\n", i, strerror(errno));
            return 1;
        }
    }
    struct epoll_event evs[256];
    while (t < end) {
        int timeout_ms = (int)((end - t) * 1000) + 1;
        int n = epoll_wait(ep, evs, 256, timeout_ms > 100 ? 100 : timeout_ms);
        if (n < 0 && errno != EINTR) {
            perror("echo-client: epoll_wait");
            return 1;
        }
        for (int k = 0; k < n; k++) {
            unsigned i = evs[k].data.u32;
            struct conn *c = &cs[i];
            ssize_t r = recv(c->fd, rbuf, size - c->got, 0);
            if (r < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (r <= 0) {
                fprintf(stderr, "echo-client: connection %u: %s after %llu round trips\n", i,
                        r == 0 ? "closed by the server" : strerror(errno),
                        (unsigned long long)c->seq);
                errors++;
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                continue;
            }
            if (memcmp(rbuf, c->msg + c->got, (size_t)r) != 0) {
                fprintf(stderr,
                        "echo-client: connection %u: wrong data in round trip %llu "
                        "(bytes %u..%zd)\n",
                        i, (unsigned long long)c->seq, c->got, c->got + r - 1);
                errors++;
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                continue;
            }
            c->got += (unsigned)r;
            if (c->got == size) {
                rts++;
                c->got = 0;
                c->seq++;
                fill(c, i, size);
                if (send_msg(c, size) < 0) {
                    fprintf(stderr, "echo-client: connection %u: send: %s\n", i, strerror(errno));
                    errors++;
                    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                }
            }
        }
        t = now_s();
    }
    double took = t - start;
    for (unsigned i = 0; i < conns; i++)
        close(cs[i].fd);
    printf("{\"round_trips\":%llu,\"seconds\":%.3f,\"rps\":%.0f,\"conns\":%u,\"size\":%u,"
           "\"errors\":%llu}\n",
           (unsigned long long)rts, took, (double)rts / took, conns, size,
           (unsigned long long)errors);
    return errors ? 1 : 0;
}
