/* SPDX-License-Identifier: MIT */
/* TCP and Unix stream sockets on the runtime: listen, accept, connect, echo, EOF, errors,
 * deadlines, cancellation, and the cooperative budget. */
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vega/dns.h>
#include <vega/io.h>
#include <vega/rt.h>

#include "vtest.h"

#define MIB (1024 * 1024)

/* ---- harness --------------------------------------------------------------------------------- */

static vega_sock *listen_local(vega_addr *bound)
{
    vega_addr a;
    vega_sock *l;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_tcp_listen(&l, &a, 0, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(l, bound), 0);
    VCHECK(vega_addr_port(bound) != 0);
    return l;
}

/* A connected pair over 127.0.0.1. */
static void tcp_pair(vega_sock **client, vega_sock **server)
{
    vega_addr a;
    vega_sock *l = listen_local(&a);
    VCHECK_EQ(vega_tcp_connect(client, &a, vega_deadline_in_ms(5000)), 0);
    vega_addr peer;
    VCHECK_EQ(vega_tcp_accept(l, server, &peer, vega_deadline_in_ms(5000)), 0);
    vega_addr local;
    VCHECK_EQ(vega_sock_local_addr(*client, &local), 0);
    VCHECK(vega_addr_equal(&local, &peer));
    VCHECK_EQ(vega_sock_close(l), 0);
}

static void fill_pattern(unsigned char *p, size_t n, size_t off)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)((off + i) * 131u + ((off + i) >> 13));
}

/* Reads exactly n bytes (or fails the test). */
static void read_exact(vega_sock *s, void *buf, size_t n, vega_deadline dl)
{
    size_t got = 0;
    while (got < n) {
        vega_ssize r = vega_sock_read(s, (char *)buf + got, n - got, dl);
        if (r <= 0)
            vtest_fail(__FILE__, __LINE__, "read_exact: %zd after %zu of %zu", r, got, n);
        got += (size_t)r;
    }
}

/* ---- echo ------------------------------------------------------------------------------------ */

static void *echo_conn(void *arg)
{
    vega_sock *s = arg;
    char buf[16384];
    for (;;) {
        vega_ssize n = vega_sock_read(s, buf, sizeof(buf), vega_deadline_in_ms(10000));
        if (n == -ECANCELED) {
            /* The test finished and the runtime is going away. */
            vega_sock_close(s);
            return NULL;
        }
        if (n <= 0) {
            VCHECK_EQ(n, 0);
            break;
        }
        VCHECK_EQ(vega_sock_write(s, buf, (size_t)n, NULL, vega_deadline_in_ms(10000)), n);
    }
    VCHECK_EQ(vega_sock_shutdown(s, SHUT_WR), 0);
    vega_sock_close(s);
    return NULL;
}

struct sender {
    vega_sock *s;
    size_t total;
};

static void *send_pattern(void *arg)
{
    struct sender *sd = arg;
    unsigned char buf[8192];
    for (size_t off = 0; off < sd->total;) {
        size_t n = sd->total - off < sizeof(buf) ? sd->total - off : sizeof(buf);
        fill_pattern(buf, n, off);
        size_t w = 0;
        VCHECK_EQ(vega_sock_write(sd->s, buf, n, &w, vega_deadline_in_ms(10000)), n);
        VCHECK_EQ(w, n);
        off += n;
    }
    VCHECK_EQ(vega_sock_shutdown(sd->s, SHUT_WR), 0);
    return NULL;
}

/* Sends `total` bytes through an echo task and checks every byte and the final EOF. */
static void echo_through(vega_sock *c, vega_sock *srv, size_t total)
{
    VCHECK_EQ(vega_task_spawn(NULL, echo_conn, srv), 0);
    struct sender sd = {.s = c, .total = total};
    vega_task *w;
    VCHECK_EQ(vega_task_spawn(&w, send_pattern, &sd), 0);
    unsigned char buf[10000], want[10000];
    size_t got = 0;
    for (;;) {
        vega_ssize n = vega_sock_read(c, buf, sizeof(buf), vega_deadline_in_ms(10000));
        VCHECK(n >= 0);
        if (n == 0)
            break;
        fill_pattern(want, (size_t)n, got);
        if (memcmp(buf, want, (size_t)n) != 0)
            vtest_fail(__FILE__, __LINE__, "echo differs near offset %zu", got);
        got += (size_t)n;
    }
    VCHECK_EQ(got, total);
    VCHECK_EQ(vega_task_join(w, NULL, vega_deadline_in_ms(10000)), 0);
    /* After EOF, reads keep returning 0. */
    VCHECK_EQ(vega_sock_read(c, buf, sizeof(buf), vega_deadline_in_ms(1000)), 0);
    vega_sock_close(c);
}

static void body_echo_1mib(void)
{
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    echo_through(c, s, MIB);
}

VTEST(echo_1mib)
{
    vtest_run(body_echo_1mib, 2);
}

VTEST(echo_1mib_current_thread)
{
    vtest_run(body_echo_1mib, 0);
}

static void body_listen_accept_many(void)
{
    /* Several clients at once, each echoing its own pattern. */
    enum {
        N = 16
    };
    vega_addr a;
    vega_sock *l = listen_local(&a);
    vega_sock *c[N];
    for (int i = 0; i < N; i++) {
        VCHECK_EQ(vega_tcp_connect(&c[i], &a, vega_deadline_in_ms(5000)), 0);
        vega_sock *s;
        VCHECK_EQ(vega_tcp_accept(l, &s, NULL, vega_deadline_in_ms(5000)), 0);
        VCHECK_EQ(vega_task_spawn(NULL, echo_conn, s), 0);
    }
    for (int i = 0; i < N; i++) {
        char msg[32], back[32];
        int n = snprintf(msg, sizeof(msg), "hello %d", i);
        VCHECK_EQ(vega_sock_write(c[i], msg, (size_t)n, NULL, vega_deadline_in_ms(5000)), n);
        read_exact(c[i], back, (size_t)n, vega_deadline_in_ms(5000));
        VCHECK(memcmp(msg, back, (size_t)n) == 0);
    }
    for (int i = 0; i < N; i++)
        vega_sock_close(c[i]);
    vega_sock_close(l);
}

VTEST(accept_many)
{
    vtest_run(body_listen_accept_many, 2);
}

/* ---- EOF, errors --------------------------------------------------------------------------- */

static void body_eof(void)
{
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    VCHECK_EQ(vega_sock_write(c, "abc", 3, NULL, vega_deadline_in_ms(1000)), 3);
    VCHECK_EQ(vega_sock_shutdown(c, SHUT_WR), 0);
    char buf[8];
    read_exact(s, buf, 3, vega_deadline_in_ms(1000));
    VCHECK_EQ(vega_sock_read(s, buf, sizeof(buf), vega_deadline_in_ms(1000)), 0);
    /* Half-closed: the other direction still works. */
    VCHECK_EQ(vega_sock_write(s, "xy", 2, NULL, vega_deadline_in_ms(1000)), 2);
    read_exact(c, buf, 2, vega_deadline_in_ms(1000));
    VCHECK(memcmp(buf, "xy", 2) == 0);
    vega_sock_close(s);
    VCHECK_EQ(vega_sock_read(c, buf, sizeof(buf), vega_deadline_in_ms(1000)), 0);
    vega_sock_close(c);
}

VTEST(eof_and_half_close)
{
    vtest_run(body_eof, 0);
}

static void body_refused(void)
{
    vega_addr a;
    vega_sock *l = listen_local(&a);
    vega_sock_close(l); /* the port is free again, and nobody listens */
    vega_sock *c = (vega_sock *)1;
    VCHECK_EQ(vega_tcp_connect(&c, &a, vega_deadline_in_ms(5000)), -ECONNREFUSED);
    VCHECK(c == NULL);
}

VTEST(connect_refused)
{
    vtest_run(body_refused, 0);
}

static void body_write_peer_gone(void)
{
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    vega_sock_close(s);
    /* The first writes may still be accepted; then the peer's RST ends it (no SIGPIPE). */
    static char buf[65536];
    vega_ssize r = 0;
    for (int i = 0; i < 1000 && r >= 0; i++)
        r = vega_sock_write(c, buf, sizeof(buf), NULL, vega_deadline_in_ms(2000));
    VCHECK(r == -EPIPE || r == -ECONNRESET);
    vega_sock_close(c);
}

VTEST(write_peer_gone)
{
    vtest_run(body_write_peer_gone, 0);
}

static void body_abort(void)
{
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    VCHECK_EQ(vega_sock_write(c, "unread", 6, NULL, vega_deadline_in_ms(1000)), 6);
    VCHECK_EQ(vega_sock_abort(s), 0);
    char buf[8];
    VCHECK_EQ(vega_sock_read(c, buf, sizeof(buf), vega_deadline_in_ms(2000)), -ECONNRESET);
    vega_sock_close(c);
}

VTEST(abort_resets_peer)
{
    vtest_run(body_abort, 0);
}

static void body_addr_in_use(void)
{
    vega_addr a;
    vega_sock *l = listen_local(&a), *l2 = (vega_sock *)1;
    VCHECK_EQ(vega_tcp_listen(&l2, &a, 0, 0), -EADDRINUSE);
    VCHECK(l2 == NULL);
    /* With SO_REUSEPORT on both, two listeners share the port. */
    vega_sock *r1, *r2;
    vega_addr any;
    VCHECK_EQ(vega_addr_parse(&any, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_tcp_listen(&r1, &any, 0, VEGA_LISTEN_REUSEPORT), 0);
    VCHECK_EQ(vega_sock_local_addr(r1, &any), 0);
    VCHECK_EQ(vega_tcp_listen(&r2, &any, 0, VEGA_LISTEN_REUSEPORT), 0);
    vega_sock_close(r1);
    vega_sock_close(r2);
    vega_sock_close(l);
}

VTEST(listen_addr_in_use_and_reuseport)
{
    vtest_run(body_addr_in_use, 0);
}

/* ---- deadlines and cancellation -------------------------------------------------------------- */

static void body_read_deadline(void)
{
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    char buf[16];
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_sock_read(c, buf, sizeof(buf), vega_deadline_in_ms(50)), -ETIMEDOUT);
    VCHECK_WAITED(t0, 50); /* never early; on the paused clock, exactly 50 ms */
    /* Deadline 0: do not wait. */
    VCHECK_EQ(vega_sock_read(c, buf, sizeof(buf), 0), -ETIMEDOUT);
    /* The socket is still fine: data sent now arrives, also with deadline 0 once it is there. */
    VCHECK_EQ(vega_sock_write(s, "ping", 4, NULL, vega_deadline_in_ms(1000)), 4);
    read_exact(c, buf, 4, vega_deadline_in_ms(1000));
    VCHECK(memcmp(buf, "ping", 4) == 0);
    VCHECK_EQ(vega_sock_write(s, "z", 1, NULL, vega_deadline_in_ms(1000)), 1);
    VCHECK_EQ(vega_sleep_ms(20), 0);
    VCHECK_EQ(vega_sock_read(c, buf, sizeof(buf), 0), 1);
    vega_sock_close(c);
    vega_sock_close(s);
}

VTEST(read_deadline)
{
    vtest_run(body_read_deadline, 2);
}

/* The same on the paused clock, where the deadline is also not late. */
VTEST(read_deadline_paused)
{
    vtest_run_paused(body_read_deadline);
}

static void body_accept_deadline(void)
{
    vega_addr a;
    vega_sock *l = listen_local(&a), *s = (vega_sock *)1;
    VCHECK_EQ(vega_tcp_accept(l, &s, NULL, vega_deadline_in_ms(30)), -ETIMEDOUT);
    VCHECK(s == NULL);
    vega_sock_close(l);
}

VTEST(accept_deadline)
{
    vtest_run(body_accept_deadline, 0);
}

static void body_write_deadline_partial(void)
{
    /* The peer never reads: the write fills the buffers, times out, and says how far it got. */
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    VCHECK_EQ(vega_sock_set_buffers(c, 0, 65536), 0);
    size_t len = 64 * MIB;
    char *big = calloc(1, len);
    VCHECK(big != NULL);
    size_t written = 12345;
    VCHECK_EQ(vega_sock_write(c, big, len, &written, vega_deadline_in_ms(100)), -ETIMEDOUT);
    VCHECK(written > 0 && written < len);
    /* The bytes reported written are exactly what the peer can read. */
    size_t got = 0;
    char *buf = malloc(MIB);
    VCHECK(buf != NULL);
    while (got < written) {
        vega_ssize n = vega_sock_read(s, buf, MIB, vega_deadline_in_ms(2000));
        VCHECK(n > 0);
        got += (size_t)n;
    }
    VCHECK_EQ(got, written);
    VCHECK_EQ(vega_sock_read(s, buf, MIB, vega_deadline_in_ms(50)), -ETIMEDOUT);
    free(buf);
    free(big);
    vega_sock_close(c);
    vega_sock_close(s);
}

VTEST(write_deadline_reports_written)
{
    vtest_run(body_write_deadline_partial, 2);
}

struct blocked_reader {
    vega_sock *s;
    vega_ssize res;
    atomic_bool started;
};

static void *blocked_read(void *arg)
{
    struct blocked_reader *b = arg;
    char buf[16];
    atomic_store(&b->started, true);
    b->res = vega_sock_read(b->s, buf, sizeof(buf), VEGA_DEADLINE_NEVER);
    return NULL;
}

static void body_cancel_read(void)
{
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    struct blocked_reader b = {.s = c, .res = 1};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, blocked_read, &b), 0);
    while (!atomic_load(&b.started))
        VCHECK_EQ(vega_sleep_ms(1), 0);
    VCHECK_EQ(vega_sleep_ms(20), 0); /* let it park in the driver */
    vega_task_cancel(t);
    VCHECK_EQ(vega_task_join(t, NULL, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(b.res, -ECANCELED);

    /* Nothing was consumed or broken: the next read gets the bytes. */
    VCHECK_EQ(vega_sock_write(s, "after", 5, NULL, vega_deadline_in_ms(1000)), 5);
    char buf[8];
    read_exact(c, buf, 5, vega_deadline_in_ms(1000));
    VCHECK(memcmp(buf, "after", 5) == 0);

    /* And another task can block on it again and be woken by data. */
    b.res = 0;
    atomic_store(&b.started, false);
    VCHECK_EQ(vega_task_spawn(&t, blocked_read, &b), 0);
    while (!atomic_load(&b.started))
        VCHECK_EQ(vega_sleep_ms(1), 0);
    VCHECK_EQ(vega_sleep_ms(10), 0);
    VCHECK_EQ(vega_sock_write(s, "again", 5, NULL, vega_deadline_in_ms(1000)), 5);
    VCHECK_EQ(vega_task_join(t, NULL, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(b.res, 5);
    vega_sock_close(c);
    vega_sock_close(s);
}

VTEST(cancel_blocked_read)
{
    vtest_run(body_cancel_read, 2);
}

VTEST(cancel_blocked_read_current_thread)
{
    vtest_run(body_cancel_read, 0);
}

/* ---- full duplex, writev, options ------------------------------------------------------------ */

struct collector {
    vega_sock *s;
    unsigned char *p;
    size_t n;
};

static void *collect(void *arg)
{
    struct collector *co = arg;
    read_exact(co->s, co->p, co->n, vega_deadline_in_ms(10000));
    return NULL;
}

static void body_writev(void)
{
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    /* 200 entries (more than one sendmsg window), some empty, about 2 MiB in all. */
    enum {
        N = 200
    };
    struct iovec iov[N];
    size_t total = 0;
    unsigned char *data = malloc(2 * MIB);
    VCHECK(data != NULL);
    fill_pattern(data, 2 * MIB, 0);
    for (int i = 0; i < N; i++) {
        size_t len = i % 7 == 3 ? 0 : (2 * MIB) / N;
        iov[i].iov_base = data + total;
        iov[i].iov_len = len;
        total += len;
    }
    VCHECK_EQ(vega_task_spawn(NULL, echo_conn, s), 0);
    /* The echo comes back while we write: one task writes, another reads the same socket. */
    struct collector co = {.s = c, .p = malloc(total), .n = total};
    VCHECK(co.p != NULL);
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, collect, &co), 0);
    size_t written = 0;
    VCHECK_EQ(vega_sock_writev(c, iov, N, &written, vega_deadline_in_ms(10000)), total);
    VCHECK_EQ(written, total);
    VCHECK_EQ(vega_task_join(t, NULL, vega_deadline_in_ms(10000)), 0);
    VCHECK(memcmp(co.p, data, total) == 0);
    /* An empty gather list writes nothing and succeeds. */
    VCHECK_EQ(vega_sock_writev(c, iov, 0, &written, 0), 0);
    VCHECK_EQ(written, 0);
    free(co.p);
    free(data);
    vega_sock_close(c);
}

VTEST(writev_full_duplex)
{
    vtest_run(body_writev, 2);
}

static void body_options(void)
{
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    VCHECK_EQ(vega_sock_set_nodelay(c, true), 0);
    VCHECK_EQ(vega_sock_set_nodelay(c, false), 0);
    VCHECK_EQ(vega_sock_set_keepalive(c, true, 30, 5, 3), 0);
    VCHECK_EQ(vega_sock_set_keepalive(c, false, 0, 0, 0), 0);
    VCHECK_EQ(vega_sock_set_buffers(s, 131072, 131072), 0);
    VCHECK(vega_sock_fd(c) >= 0);
    vega_addr p;
    VCHECK_EQ(vega_sock_peer_addr(s, &p), 0);
    VCHECK_EQ(vega_addr_family(&p), AF_INET);
    vega_sock_close(c);
    vega_sock_close(s);
}

VTEST(socket_options)
{
    vtest_run(body_options, 0);
}

/* ---- the cooperative budget ---------------------------------------------------------------- */

static atomic_bool other_ran;

static void *set_flag(void *arg)
{
    atomic_store(&other_ran, true);
    return NULL;
}

static void body_coop(void)
{
    /* On one worker, a task reading a socket that always has data must still let others run. */
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    static char buf[65536];
    VCHECK_EQ(vega_sock_write(s, buf, sizeof(buf), NULL, vega_deadline_in_ms(1000)), sizeof(buf));
    VCHECK_EQ(vega_sleep_ms(20), 0); /* all of it is in c's receive queue */
    atomic_store(&other_ran, false);
    VCHECK_EQ(vega_task_spawn(NULL, set_flag, NULL), 0);
    int reads = 0;
    char one;
    while (!atomic_load(&other_ran) && reads < 20000) {
        VCHECK_EQ(vega_sock_read(c, &one, 1, 0), 1); /* deadline 0: never waits */
        reads++;
    }
    VCHECK(atomic_load(&other_ran));
    VCHECK(reads <= 1024);
    vega_sock_close(c);
    vega_sock_close(s);
}

VTEST(coop_budget_lets_others_run)
{
    vtest_run(body_coop, 0);
}

/* ---- Unix sockets ---------------------------------------------------------------------------- */

static void tmp_path(char *buf, size_t cap, const char *tag)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, cap, "%s/vega-io-test-%s-%d.sock", dir && *dir ? dir : "/tmp", tag,
             (int)getpid());
}

static void body_unix_echo(void)
{
    char path[200];
    tmp_path(path, sizeof(path), "echo");
    unlink(path);
    vega_sock *l, *c, *s;
    VCHECK_EQ(vega_unix_listen(&l, path, 0, VEGA_LISTEN_UNLINK_STALE), 0);
    vega_addr la;
    VCHECK_EQ(vega_sock_local_addr(l, &la), 0);
    char text[VEGA_ADDR_STRLEN], want[256];
    VCHECK(vega_addr_format(&la, text, sizeof(text)) > 0);
    snprintf(want, sizeof(want), "unix:%s", path);
    VCHECK_STR(text, want);

    VCHECK_EQ(vega_unix_connect(&c, path, vega_deadline_in_ms(5000)), 0);
    vega_addr peer;
    VCHECK_EQ(vega_tcp_accept(l, &s, &peer, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_addr_family(&peer), AF_UNIX);
    VCHECK_EQ(vega_sock_set_nodelay(s, true), -EOPNOTSUPP);
    echo_through(c, s, MIB);

    VCHECK_EQ(vega_sock_close(l), 0);
    struct stat st;
    VCHECK(stat(path, &st) < 0); /* UNLINK_STALE removed it at close */
    VCHECK_EQ(vega_unix_connect(&c, path, vega_deadline_in_ms(1000)), -ENOENT);
}

VTEST(unix_echo)
{
    vtest_run(body_unix_echo, 2);
}

static void body_unix_stale(void)
{
    char path[200];
    tmp_path(path, sizeof(path), "stale");
    unlink(path);
    /* A listener that goes away without removing its file leaves a stale socket behind. */
    vega_sock *l, *l2;
    VCHECK_EQ(vega_unix_listen(&l, path, 0, 0), 0);
    VCHECK_EQ(vega_unix_listen(&l2, path, 0, VEGA_LISTEN_UNLINK_STALE), -EADDRINUSE); /* alive */
    vega_sock_close(l);
    struct stat st;
    VCHECK_EQ(stat(path, &st), 0);
    VCHECK_EQ(vega_unix_connect(&l2, path, vega_deadline_in_ms(1000)), -ECONNREFUSED);
    VCHECK_EQ(vega_unix_listen(&l2, path, 0, 0), -EADDRINUSE);
    VCHECK_EQ(vega_unix_listen(&l2, path, 0, VEGA_LISTEN_UNLINK_STALE), 0);
    vega_sock_close(l2);
    VCHECK(stat(path, &st) < 0);

    /* Abstract names leave no file at all. */
    char name[64];
    snprintf(name, sizeof(name), "@vega-io-test-%d", (int)getpid());
    VCHECK_EQ(vega_unix_listen(&l, name, 0, 0), 0);
    vega_sock *c, *s;
    VCHECK_EQ(vega_unix_connect(&c, name, vega_deadline_in_ms(1000)), 0);
    VCHECK_EQ(vega_tcp_accept(l, &s, NULL, vega_deadline_in_ms(1000)), 0);
    VCHECK_EQ(vega_sock_write(c, "hi", 2, NULL, vega_deadline_in_ms(1000)), 2);
    char buf[2];
    read_exact(s, buf, 2, vega_deadline_in_ms(1000));
    vega_sock_close(c);
    vega_sock_close(s);
    vega_sock_close(l);
}

VTEST(unix_stale_and_abstract)
{
    vtest_run(body_unix_stale, 0);
}

/* ---- vega_tcp_connect_bound: the local side bound first (curl's --interface, --local-port) -- */

/* Connects to l's address with local, accepts, and returns the peer address the server saw. */
static vega_addr bound_peer(vega_sock *l, const vega_addr *to, const vega_tcp_local *local)
{
    vega_sock *c, *s;
    vega_addr peer;
    VCHECK_EQ(vega_tcp_connect_bound(&c, to, local, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_tcp_accept(l, &s, &peer, vega_deadline_in_ms(5000)), 0);
    vega_sock_close(c);
    vega_sock_close(s);
    return peer;
}

static void body_connect_bound(void)
{
    vega_addr a, peer;
    vega_sock *l = listen_local(&a);
    char text[VEGA_ADDR_STRLEN];

    /* an address: the server sees it as the source */
    vega_tcp_local loc = {0};
    VCHECK_EQ(vega_addr_parse(&loc.addr, "127.0.0.2:0", NULL), 0);
    peer = bound_peer(l, &a, &loc);
    VCHECK(vega_addr_format(&peer, text, sizeof text) > 0);
    VCHECK(strncmp(text, "127.0.0.2:", 10) == 0);

    /* a port: a free one is taken; the same port held by a listener: -EADDRINUSE */
    vega_addr p;
    vega_sock *hold = listen_local(&p);
    memset(&loc, 0, sizeof loc);
    loc.port_min = vega_addr_port(&p);
    vega_sock *c = (vega_sock *)1;
    VCHECK_EQ(vega_tcp_connect_bound(&c, &a, &loc, vega_deadline_in_ms(5000)), -EADDRINUSE);
    VCHECK(c == NULL);
    vega_sock_close(hold); /* free again: now it is the one */
    peer = bound_peer(l, &a, &loc);
    VCHECK_EQ(vega_addr_port(&peer), vega_addr_port(&p));

    /* a range whose first port is taken: the next free one of it */
    hold = listen_local(&p);
    loc.port_min = vega_addr_port(&p);
    loc.port_max = (uint16_t)(loc.port_min + 64 < 65535 ? loc.port_min + 64 : 65535);
    VCHECK(loc.port_max > loc.port_min);
    peer = bound_peer(l, &a, &loc);
    VCHECK(vega_addr_port(&peer) > loc.port_min);
    VCHECK(vega_addr_port(&peer) <= loc.port_max);
    vega_sock_close(hold);

    /* an interface by name (SO_BINDTODEVICE) */
    memset(&loc, 0, sizeof loc);
    strcpy(loc.device, "lo");
    peer = bound_peer(l, &a, &loc);
    VCHECK(vega_addr_port(&peer) != 0);
    strcpy(loc.device, "nosuchif0");
    VCHECK_EQ(vega_tcp_connect_bound(&c, &a, &loc, vega_deadline_in_ms(5000)), -ENODEV);

    /* an address that is not this host's, one of the other family, bad arguments */
    memset(&loc, 0, sizeof loc);
    VCHECK_EQ(vega_addr_parse(&loc.addr, "192.0.2.1:0", NULL), 0); /* TEST-NET-1 */
    VCHECK_EQ(vega_tcp_connect_bound(&c, &a, &loc, vega_deadline_in_ms(5000)), -EADDRNOTAVAIL);
    VCHECK_EQ(vega_addr_parse(&loc.addr, "[::1]:0", NULL), 0);
    VCHECK_EQ(vega_tcp_connect_bound(&c, &a, &loc, vega_deadline_in_ms(5000)), -EAFNOSUPPORT);
    memset(&loc, 0, sizeof loc);
    loc.port_min = 2000;
    loc.port_max = 1999;
    VCHECK_EQ(vega_tcp_connect_bound(&c, &a, &loc, vega_deadline_in_ms(5000)), -EINVAL);
    memset(&loc, 0, sizeof loc);
    memset(loc.device, 'x', sizeof loc.device); /* no NUL */
    VCHECK_EQ(vega_tcp_connect_bound(&c, &a, &loc, vega_deadline_in_ms(5000)), -EINVAL);

    /* all zero: a plain connect */
    memset(&loc, 0, sizeof loc);
    peer = bound_peer(l, &a, &loc);
    VCHECK(vega_addr_port(&peer) != 0);
    vega_sock_close(l);
}

VTEST(connect_bound)
{
    vtest_run(body_connect_bound, 0);
}

/* Happy Eyeballs binds each attempt as vega_tcp_connect_opts.local says. */
static void body_connect_host_bound(void)
{
    vega_addr a, peer;
    vega_sock *l = listen_local(&a);
    vega_tcp_local loc = {0};
    VCHECK_EQ(vega_addr_parse(&loc.addr, "127.0.0.3:0", NULL), 0);
    vega_tcp_connect_opts o;
    vega_tcp_connect_opts_init(&o);
    o.local = &loc;
    vega_sock *c, *s;
    VCHECK_EQ(vega_tcp_connect_host(&c, NULL, "127.0.0.1", vega_addr_port(&a), &o,
                                    vega_deadline_in_ms(5000)),
              0);
    VCHECK_EQ(vega_tcp_accept(l, &s, &peer, vega_deadline_in_ms(5000)), 0);
    char text[VEGA_ADDR_STRLEN];
    VCHECK(vega_addr_format(&peer, text, sizeof text) > 0);
    VCHECK(strncmp(text, "127.0.0.3:", 10) == 0);
    vega_sock_close(c);
    vega_sock_close(s);
    /* a device that does not exist fails every attempt */
    memset(&loc, 0, sizeof loc);
    strcpy(loc.device, "nosuchif0");
    VCHECK_EQ(vega_tcp_connect_host(&c, NULL, "127.0.0.1", vega_addr_port(&a), &o,
                                    vega_deadline_in_ms(5000)),
              -ENODEV);
    vega_sock_close(l);
}

VTEST(connect_host_bound)
{
    vtest_run(body_connect_host_bound, 0);
}

/* A program built with vega_tcp_connect_opts layout 1 (before local): its init writes the
 * prefix only, and its options connect unbound. */
struct tcp_connect_opts_v1 {
    int family;
    unsigned attempt_delay_ms;
    unsigned resolution_delay_ms;
    size_t max_per_family;
};

static void body_connect_opts_v1(void)
{
    VCHECK_EQ(sizeof(struct tcp_connect_opts_v1), offsetof(vega_tcp_connect_opts, local));
    struct {
        struct tcp_connect_opts_v1 o;
    } v;
    memset(&v, 0xa5, sizeof v);
    vega_tcp_connect_opts_init_versioned((vega_tcp_connect_opts *)&v.o, 1);
    VCHECK_EQ(v.o.family, AF_UNSPEC);
    vega_addr a, peer;
    vega_sock *l = listen_local(&a), *c, *s;
    VCHECK_EQ(vega_tcp_connect_host_versioned(&c, NULL, "127.0.0.1", vega_addr_port(&a),
                                              (const vega_tcp_connect_opts *)&v.o,
                                              vega_deadline_in_ms(5000), 1),
              0);
    VCHECK_EQ(vega_tcp_accept(l, &s, &peer, vega_deadline_in_ms(5000)), 0);
    vega_sock_close(c);
    vega_sock_close(s);
    vega_sock_close(l);
}

VTEST(connect_opts_v1)
{
    vtest_run(body_connect_opts_v1, 0);
}
