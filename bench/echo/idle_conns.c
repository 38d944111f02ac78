/* SPDX-License-Identifier: MIT */
/* idle-conns: opens N TCP connections to HOST:PORT and holds them open, idle, for SECS
 * seconds (or until SIGTERM/SIGINT); bench/run-echo.sh measures the server's memory meanwhile.
 *
 *   idle-conns [-n N] [-t SECS] [-e | -H] [-T] [-b ADDR] [-c K] HOST:PORT
 *
 * -e: first echo one 64-byte message on every connection (waiting for it to come back), so
 *     the connections are idle keep-alive ones rather than never used.
 * -H: the same for an HTTP server (nginx): one HTTP/1.1 GET / per connection, the response
 *     read whole (it needs a Content-Length), the connection kept alive.
 * -T: over TLS (OpenSSL, certificate not verified, ALPN http/1.1 when with -H): each
 *     connection does its handshake (and its echo or request) before the next one opens.
 * -b: connect from source address ADDR (IPv4; the port is still picked at connect time,
 *     IP_BIND_ADDRESS_NO_PORT): one source address to one server port has about 28,000
 *     ephemeral ports, so several clients on 127.0.0.2, 127.0.0.3... open more than that.
 * -c: when the wait ends (SECS passed, or SIGUSR1), check the connections: every one must
 *     still be open (poll: nothing to read, no hang-up or error), and every K-th does one more
 *     echo or request (with -e or -H). Prints "check open O/N answered A/S" on stdout; exit 1
 *     if any is closed or does not answer. SIGTERM or SIGINT end the wait without a check.
 * Prints "connected N" on stdout once all are open (and echoed), then waits. Needs a file
 * limit above N (ulimit -n). Exit 1 if any connection failed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop, check_now;
static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        check_now = 1;
    else
        stop = 1;
}

static SSL_CTX *tls_ctx; /* -T */
static SSL **tls;        /* per connection, with -T */

static ssize_t xsend(int fd, SSL *ssl, const void *p, size_t n)
{
    if (!ssl)
        return send(fd, p, n, MSG_NOSIGNAL);
    int r = SSL_write(ssl, p, (int)n);
    return r > 0 ? r : -1;
}

static ssize_t xrecv(int fd, SSL *ssl, void *p, size_t n)
{
    if (!ssl)
        return recv(fd, p, n, 0);
    int r = SSL_read(ssl, p, (int)n);
    return r > 0 ? r : -1;
}

static int echo_once(int fd, SSL *ssl)
{
    char msg[64], back[64];
    memset(msg, 'x', sizeof(msg));
    if (xsend(fd, ssl, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
        return -1;
    size_t got = 0;
    while (got < sizeof(back)) {
        ssize_t r = xrecv(fd, ssl, back + got, sizeof(back) - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return memcmp(msg, back, sizeof(msg)) == 0 ? 0 : -1;
}

/* One keep-alive HTTP/1.1 request: reads the headers, then Content-Length bytes of body. */
static int http_once(int fd, SSL *ssl)
{
    static const char req[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (xsend(fd, ssl, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1)
        return -1;
    char buf[8192];
    size_t got = 0;
    for (;;) {
        if (got == sizeof(buf) - 1)
            return -1;
        ssize_t r = xrecv(fd, ssl, buf + got, sizeof(buf) - 1 - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
        buf[got] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        char *cl = strcasestr(buf, "\r\ncontent-length:");
        if (!cl || cl > end)
            return -1;
        size_t want = (size_t)(end + 4 - buf) + strtoul(cl + 17, NULL, 10);
        if (got >= want)
            return strncmp(buf, "HTTP/1.1 200", 12) == 0 ? 0 : -1;
    }
}

int main(int argc, char **argv)
{
    unsigned n = 10000;
    double secs = 30;
    unsigned check_every = 0; /* -c K; 0: no check */
    const char *bind_addr = NULL;
    int echo = 0, http = 0, use_tls = 0, opt;
    while ((opt = getopt(argc, argv, "n:t:eHTb:c:")) != -1) {
        switch (opt) {
        case 'n':
            n = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 't':
            secs = strtod(optarg, NULL);
            break;
        case 'e':
            echo = 1;
            break;
        case 'H':
            http = 1;
            break;
        case 'T':
            use_tls = 1;
            break;
        case 'b':
            bind_addr = optarg;
            break;
        case 'c':
            check_every = (unsigned)strtoul(optarg, NULL, 10);
            if (check_every == 0)
                goto usage;
            break;
        default:
            goto usage;
        }
    }
    if (optind != argc - 1) {
    usage:
        fprintf(stderr,
                "usage: idle-conns [-n N] [-t SECS] [-e | -H] [-T] [-b ADDR] [-c K] HOST:PORT\n");
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
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        goto usage;
    struct sockaddr_in src = {.sin_family = AF_INET};
    if (bind_addr && inet_pton(AF_INET, bind_addr, &src.sin_addr) != 1)
        goto usage;
    signal(SIGPIPE, SIG_IGN);
    struct sigaction act = {.sa_handler = on_signal};
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    sigaction(SIGUSR1, &act, NULL);

    int *fds = calloc(n, sizeof(int));
    if (!fds)
        return 1;
    if (use_tls) {
        tls_ctx = SSL_CTX_new(TLS_client_method());
        tls = calloc(n, sizeof(SSL *));
        if (!tls_ctx || !tls)
            return 1;
        SSL_CTX_set_mode(tls_ctx, SSL_MODE_RELEASE_BUFFERS);
        static const unsigned char alpn[] = "\x08http/1.1";
        if (http)
            SSL_CTX_set_alpn_protos(tls_ctx, alpn, sizeof(alpn) - 1);
    }
    for (unsigned i = 0; i < n && !stop; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        static const int one = 1;
        if (fds[i] >= 0 && bind_addr &&
            (setsockopt(fds[i], IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one)) < 0 ||
             bind(fds[i], (struct sockaddr *)&src, sizeof(src)) < 0)) {
            fprintf(stderr, "idle-conns: connection %u: bind %s: %s\n", i, bind_addr,
                    strerror(errno));
            return 1;
        }
        if (fds[i] < 0 || connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            fprintf(stderr, "idle-conns: connection %u: %s\n", i, strerror(errno));
            return 1;
        }
        SSL *ssl = NULL;
        if (use_tls) {
            ssl = tls[i] = SSL_new(tls_ctx);
            if (!ssl || SSL_set_fd(ssl, fds[i]) != 1 || SSL_connect(ssl) != 1) {
                fprintf(stderr, "idle-conns: connection %u: TLS handshake failed\n", i);
                return 1;
            }
        }
        if (echo && echo_once(fds[i], ssl) < 0) {
            fprintf(stderr, "idle-conns: connection %u: echo failed\n", i);
            return 1;
        }
        if (http && http_once(fds[i], ssl) < 0) {
            fprintf(stderr, "idle-conns: connection %u: HTTP request failed\n", i);
            return 1;
        }
    }
    printf("connected %u\n", n);
    fflush(stdout);
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
    for (double waited = 0; waited < secs && !stop && !check_now; waited += 0.05)
        nanosleep(&ts, NULL);
    if (!check_every || stop)
        return 0;
    /* An idle connection the server still holds has nothing to read and no hang-up. */
    unsigned open = 0, answered = 0;
    for (unsigned i = 0; i < n; i++) {
        struct pollfd p = {.fd = fds[i], .events = POLLIN | POLLRDHUP};
        if (poll(&p, 1, 0) != 0 || (tls && SSL_pending(tls[i]) > 0))
            continue;
        open++;
        if (i % check_every != 0 || !(echo || http))
            continue;
        SSL *ssl = tls ? tls[i] : NULL;
        if ((echo && echo_once(fds[i], ssl) == 0) || (http && http_once(fds[i], ssl) == 0))
            answered++;
    }
    unsigned want = echo || http ? (n + check_every - 1) / check_every : 0;
    printf("check open %u/%u answered %u/%u\n", open, n, answered, want);
    fflush(stdout);
    return open == n && answered == want ? 0 : 1;
}
