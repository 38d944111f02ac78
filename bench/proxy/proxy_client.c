/* SPDX-License-Identifier: MIT */
/* proxy-client: the one client bench/run-proxy-peers.sh drives every proxy with (vega-proxy,
 * danted, tinyproxy), so that the figures differ by the proxy alone. Blocking sockets, one
 * thread per connection; a SOCKS5 tunnel (no authentication, CONNECT to an IPv4 address) or
 * an HTTP CONNECT tunnel.
 *
 *   proxy-client bulk socks5|connect PROXY_PORT MIB
 *       tunnels to a sink of its own on 127.0.0.1, sends MIB MiB up, and the sink sends MIB
 *       MiB back once it had them all; both streams are checked byte for byte (a pattern of
 *       prime period, so a chunk lost, doubled or reordered shows). No half-close: tinyproxy
 *       closes both ways at the first end of stream. Prints
 *       {"bytes":B,"seconds":S,"mib_s":R} (B counts both ways).
 *   proxy-client rate socks5|connect PROXY_PORT ECHO_PORT SECS THREADS
 *       each thread, until SECS have passed: connects to the proxy, makes the tunnel to the
 *       echo server at ECHO_PORT, sends 16 bytes, reads them back, checks them and closes.
 *       Prints {"tunnels":N,"seconds":S,"tunnels_s":R,"errors":E}.
 *
 * Every read has a 10 s timeout; exit 1 when data came back wrong, the bulk failed, or no
 * tunnel in rate mode succeeded. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PERIOD      65521u       /* prime: the pattern's period */
#define CHUNK       (256u << 10) /* bytes a send or a receive moves at most */
#define MAX_THREADS 256

static unsigned char pat[PERIOD + CHUNK];
static int use_connect; /* HTTP CONNECT rather than SOCKS5 */
static int proxy_port;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t done = 0;
    while (done < n) {
        ssize_t k = send(fd, b + done, n - done, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        done += (size_t)k;
    }
    return 0;
}

static int recv_exact(int fd, void *p, size_t n)
{
    unsigned char *b = p;
    size_t got = 0;
    while (got < n) {
        ssize_t k = recv(fd, b + got, n - got, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

/* The tunnel to 127.0.0.1:dport through the proxy on fd; 0 when the proxy said yes. */
static int handshake(int fd, int dport)
{
    if (!use_connect) {
        unsigned char r[10];
        if (send_all(fd, "\x05\x01\x00", 3) != 0 || recv_exact(fd, r, 2) != 0 || r[0] != 5 ||
            r[1] != 0)
            return -1;
        unsigned char req[10] = {
            5, 1, 0, 1, 127, 0, 0, 1, (unsigned char)(dport >> 8), (unsigned char)dport};
        /* the reply for an IPv4 bound address is 10 bytes (all three proxies answer so) */
        if (send_all(fd, req, sizeof req) != 0 || recv_exact(fd, r, 10) != 0 || r[0] != 5 ||
            r[1] != 0 || r[3] != 1)
            return -1;
        return 0;
    }
    char req[128];
    int n = snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
                     dport, dport);
    if (send_all(fd, req, (size_t)n) != 0)
        return -1;
    /* the response head, a byte at a time so that nothing after it is taken */
    char head[1024];
    size_t used = 0;
    for (;;) {
        if (used + 1 >= sizeof head)
            return -1;
        if (recv_exact(fd, head + used, 1) != 0)
            return -1;
        used++;
        if (used >= 4 && memcmp(head + used - 4, "\r\n\r\n", 4) == 0)
            break;
    }
    head[used] = 0;
    return strncmp(head, "HTTP/1.", 7) == 0 && strncmp(head + 8, " 200", 4) == 0 ? 0 : -1;
}

/* Sends n pattern bytes from offset 0. */
static int send_pattern(int fd, uint64_t n)
{
    uint64_t off = 0;
    while (off < n) {
        size_t k = n - off < CHUNK ? (size_t)(n - off) : CHUNK;
        if (send_all(fd, pat + off % PERIOD, k) != 0)
            return -1;
        off += k;
    }
    return 0;
}

/* Reads n bytes (or to an early end of stream), checking them against the pattern; the bytes
 * read, or -1. */
static int64_t recv_pattern(int fd, unsigned char *buf, uint64_t n)
{
    uint64_t off = 0;
    while (off < n) {
        size_t want = n - off < CHUNK ? (size_t)(n - off) : CHUNK;
        ssize_t k = recv(fd, buf, want, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            return (int64_t)off;
        if (memcmp(buf, pat + off % PERIOD, (size_t)k) != 0) {
            fprintf(stderr, "proxy-client: wrong data at offset %llu\n", (unsigned long long)off);
            return -1;
        }
        off += (uint64_t)k;
    }
    return (int64_t)off;
}

struct sink {
    int lfd;
    uint64_t n;
    int64_t got;
};

static void *sink_main(void *arg)
{
    struct sink *s = arg;
    unsigned char *buf = malloc(CHUNK);
    int fd = accept(s->lfd, NULL, NULL);
    s->got = -1;
    if (fd >= 0 && buf) {
        struct timeval tv = {.tv_sec = 10};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        s->got = recv_pattern(fd, buf, s->n);
        if (s->got == (int64_t)s->n && send_pattern(fd, s->n) != 0)
            s->got = -1;
        /* the client closes once it had everything */
        recv(fd, buf, 1, 0);
        close(fd);
    }
    free(buf);
    return NULL;
}

static int bulk(uint64_t mib)
{
    struct sink s = {.n = mib << 20};
    s.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (s.lfd < 0 || bind(s.lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(s.lfd, 4) != 0 ||
        getsockname(s.lfd, (struct sockaddr *)&sa, &sl) != 0) {
        perror("proxy-client: sink");
        return 1;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, sink_main, &s) != 0)
        return 1;
    int fd = dial(proxy_port);
    unsigned char *buf = malloc(CHUNK);
    if (fd < 0 || !buf || handshake(fd, ntohs(sa.sin_port)) != 0) {
        fprintf(stderr, "proxy-client: no tunnel through port %d\n", proxy_port);
        return 1;
    }
    double t0 = now_s();
    int64_t down = -1;
    if (send_pattern(fd, s.n) == 0)
        down = recv_pattern(fd, buf, s.n);
    double secs = now_s() - t0;
    close(fd);
    pthread_join(th, NULL);
    if (s.got != (int64_t)s.n || down != (int64_t)s.n) {
        fprintf(stderr, "proxy-client: up %lld, down %lld of %llu bytes\n", (long long)s.got,
                (long long)down, (unsigned long long)s.n);
        return 1;
    }
    printf("{\"bytes\":%llu,\"seconds\":%.3f,\"mib_s\":%.1f}\n", (unsigned long long)(2 * s.n),
           secs, (double)(2 * s.n) / 1048576.0 / secs);
    return 0;
}

static int echo_port;
static double deadline;
static atomic_ullong tunnels, errors;

static void *rate_main(void *arg)
{
    (void)arg;
    static const char msg[16] = "0123456789abcdef";
    while (now_s() < deadline) {
        char got[16];
        int fd = dial(proxy_port);
        if (fd < 0 || handshake(fd, echo_port) != 0 || send_all(fd, msg, sizeof msg) != 0 ||
            recv_exact(fd, got, sizeof got) != 0 || memcmp(got, msg, sizeof msg) != 0)
            atomic_fetch_add(&errors, 1);
        else
            atomic_fetch_add(&tunnels, 1);
        if (fd >= 0)
            close(fd);
    }
    return NULL;
}

static int rate(double secs, int nthreads)
{
    pthread_t th[MAX_THREADS];
    double t0 = now_s();
    deadline = t0 + secs;
    int started = 0;
    for (; started < nthreads; started++)
        if (pthread_create(&th[started], NULL, rate_main, NULL) != 0)
            break;
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    double took = now_s() - t0;
    unsigned long long n = atomic_load(&tunnels);
    printf("{\"tunnels\":%llu,\"seconds\":%.3f,\"tunnels_s\":%.0f,\"errors\":%llu}\n", n, took,
           (double)n / took, atomic_load(&errors));
    return n > 0 ? 0 : 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: proxy-client bulk socks5|connect PROXY_PORT MIB\n"
                    "       proxy-client rate socks5|connect PROXY_PORT ECHO_PORT SECS "
                    "THREADS\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return usage();
    if (strcmp(argv[2], "connect") == 0)
        use_connect = 1;
    else if (strcmp(argv[2], "socks5") != 0)
        return usage();
    proxy_port = atoi(argv[3]);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof pat; i++) {
        if (i < PERIOD) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            pat[i] = (unsigned char)x;
        } else {
            pat[i] = pat[i - PERIOD];
        }
    }
    if (strcmp(argv[1], "bulk") == 0 && argc == 5) {
        long mib = atol(argv[4]);
        if (mib <= 0 || mib > (1L << 20))
            return usage();
        return bulk((uint64_t)mib);
    }
    if (strcmp(argv[1], "rate") == 0 && argc == 7) {
        double secs = atof(argv[5]);
        int n = atoi(argv[6]);
        echo_port = atoi(argv[4]);
        if (secs <= 0 || secs > 600 || n < 1 || n > MAX_THREADS)
            return usage();
        return rate(secs, n);
    }
    return usage();
}
