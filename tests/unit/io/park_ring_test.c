/* SPDX-License-Identifier: MIT */
/* Parked sockets on io_uring receive into the worker's provided-buffer ring: the bytes that wake
 * a connection are read already. Bytes stay whole and in order (also across a ring buffer and
 * the socket), EOF comes after them, more busy connections than ring buffers fall back to
 * readiness, and closing with unread bytes gives the buffer back. Runs on epoll too (plain
 * readiness there). */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>

#include <vega/io.h>
#include <vega/rt.h>

#include "io_int.h"
#include "vtest.h"

static bool uring(void)
{
    return vtest_driver() == VEGA_DRIVER_URING;
}

static atomic_int fired, fired_holding, closed;

struct conn_opts {
    size_t rbuf;       /* the handler's read size */
    atomic_bool *gate; /* when set: each wake-up waits for it before reading (holds buffers) */
    int nap_ms;        /* sleep before the first read of each wake-up */
    bool close_unread; /* close at the first wake-up without reading */
};

static void on_ready(vega_sock *s, void *arg, int status)
{
    const struct conn_opts *o = arg;
    atomic_fetch_add(&fired, 1);
    if (status < 0)
        goto out;
    if (vega__sock_park_holds(s))
        atomic_fetch_add(&fired_holding, 1);
    if (o->close_unread)
        goto out;
    while (o->gate && !atomic_load(o->gate))
        if (vega_sleep_ms(1) < 0)
            goto out;
    if (o->nap_ms)
        vega_sleep_ms((uint64_t)o->nap_ms);
    char buf[8192];
    for (;;) {
        vega_ssize n = vega_sock_read(s, buf, o->rbuf, 0);
        if (n == -ETIMEDOUT) {
            if (vega_sock_park(s, on_ready, arg, VEGA_DEADLINE_NEVER) == 0)
                return;
            break;
        }
        if (n == 0) {
            vega_sock_shutdown(s, SHUT_WR);
            break;
        }
        if (n < 0)
            break;
        if (vega_sock_write(s, buf, (size_t)n, NULL, vega_deadline_in_ms(5000)) < 0)
            break;
    }
out:
    vega_sock_close(s);
    atomic_fetch_add(&closed, 1);
}

struct server {
    vega_sock *l;
    const struct conn_opts *o;
};

static void *acceptor(void *arg)
{
    struct server *srv = arg;
    for (;;) {
        vega_sock *c;
        if (vega_tcp_accept(srv->l, &c, NULL, VEGA_DEADLINE_NEVER) < 0)
            return NULL;
        vega_sock_set_nodelay(c, true); /* small echoes: no Nagle delay against delayed ACKs */
        VCHECK_EQ(vega_sock_park(c, on_ready, (void *)srv->o, VEGA_DEADLINE_NEVER), 0);
    }
}

static vega_task *serve(struct server *srv, vega_addr *addr)
{
    vega_addr a;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", 0), 0);
    VCHECK_EQ(vega_tcp_listen(&srv->l, &a, 1024, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(srv->l, addr), 0);
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, acceptor, srv), 0);
    return t;
}

static void stop(vega_task *acc, struct server *srv)
{
    vega_task_cancel(acc);
    VCHECK_EQ(vega_task_join(acc, NULL, VEGA_DEADLINE_NEVER), 0);
    vega_sock_close(srv->l);
}

static void reset_counts(void)
{
    atomic_store(&fired, 0);
    atomic_store(&fired_holding, 0);
    atomic_store(&closed, 0);
}

static uint8_t pattern(size_t i, int conn)
{
    return (uint8_t)((i * 131u + (size_t)conn * 7u) >> 3);
}

/* Writes total bytes in chunks of varying size, reading the echo back as it comes; checks every
 * byte, then half-closes and expects EOF after the last byte. */
static void stream_through(vega_sock *c, int conn, size_t total)
{
    static const size_t sizes[] = {1, 63, 64, 700, 4095, 4096, 4097, 9000, 30000};
    uint8_t out[30000], in[30000];
    size_t sent = 0, got = 0;
    for (unsigned k = 0; sent < total; k++) {
        size_t n = sizes[(k + (unsigned)conn) % VEGA__ARRAY_LEN(sizes)];
        if (n > total - sent)
            n = total - sent;
        for (size_t i = 0; i < n; i++)
            out[i] = pattern(sent + i, conn);
        VCHECK_EQ(vega_sock_write(c, out, n, NULL, vega_deadline_in_ms(5000)), (vega_ssize)n);
        sent += n;
        while (got < sent) {
            vega_ssize r = vega_sock_read(c, in, sizeof in, vega_deadline_in_ms(5000));
            VCHECK(r > 0);
            for (vega_ssize i = 0; i < r; i++)
                VCHECK_EQ(in[i], pattern(got + (size_t)i, conn));
            got += (size_t)r;
        }
    }
    VCHECK_EQ(vega_sock_shutdown(c, SHUT_WR), 0);
    VCHECK_EQ(vega_sock_read(c, in, sizeof in, vega_deadline_in_ms(5000)), 0);
}

static void wait_closed(int n)
{
    for (int i = 0; i < 1000 && atomic_load(&closed) < n; i++)
        VCHECK_EQ(vega_sleep_ms(5), 0);
    VCHECK_EQ(atomic_load(&closed), n);
}

static void body_order(void)
{
    for (size_t rbuf = 100; rbuf <= 8192; rbuf *= 9) { /* 100, then 900, 8100 */
        reset_counts();
        struct conn_opts o = {.rbuf = rbuf};
        struct server srv = {.o = &o};
        vega_addr addr;
        vega_task *acc = serve(&srv, &addr);
        for (int conn = 0; conn < 4; conn++) {
            vega_sock *c;
            VCHECK_EQ(vega_tcp_connect(&c, &addr, vega_deadline_in_ms(5000)), 0);
            VCHECK_EQ(vega_sock_set_nodelay(c, true), 0);
            stream_through(c, conn, 100000);
            vega_sock_close(c);
        }
        wait_closed(4);
        if (uring())
            VCHECK(atomic_load(&fired_holding) > 0); /* woken with the bytes in a ring buffer */
        else
            VCHECK_EQ(atomic_load(&fired_holding), 0);
        stop(acc, &srv);
    }
}

VTEST(bytes_in_order)
{
    vtest_run(body_order, 1);
}

VTEST(bytes_in_order_two_workers)
{
    vtest_run(body_order, 2);
}

#define MANY 400 /* more than the ring's 256 buffers */

static void body_exhaustion(void)
{
    reset_counts();
    /* Every handler waits at a gate before it reads, so the connections that woke first hold
     * their ring buffers while the others' bytes arrive: with more connections than the ring
     * has buffers, some must find it empty and wait for readiness instead. The gate opens only
     * once every connection has woken, so this does not depend on how fast anything runs. */
    atomic_bool gate = false;
    struct conn_opts o = {.rbuf = 4096, .gate = &gate};
    struct server srv = {.o = &o};
    vega_addr addr;
    vega_task *acc = serve(&srv, &addr);
    static vega_sock *c[MANY];
    for (int i = 0; i < MANY; i++)
        VCHECK_EQ(vega_tcp_connect(&c[i], &addr, vega_deadline_in_ms(5000)), 0);
    char msg[64];
    for (int i = 0; i < MANY; i++) {
        int len = snprintf(msg, sizeof msg, "connection %d says hello", i);
        VCHECK_EQ(vega_sock_write(c[i], msg, (size_t)len, NULL, vega_deadline_in_ms(5000)), len);
    }
    for (int i = 0; i < 20000 && atomic_load(&fired) < MANY; i++)
        VCHECK_EQ(vega_sleep_ms(1), 0);
    VCHECK_EQ(atomic_load(&fired), MANY); /* every connection woke, none has read yet */
    if (uring()) {
        VCHECK(atomic_load(&fired_holding) > 0);
        VCHECK(atomic_load(&fired_holding) <= 256); /* at most the ring's buffers, all held */
    }
    atomic_store(&gate, true);
    for (int i = 0; i < MANY; i++) {
        int len = snprintf(msg, sizeof msg, "connection %d says hello", i);
        char back[64];
        size_t got = 0;
        while (got < (size_t)len) {
            vega_ssize n =
                vega_sock_read(c[i], back + got, (size_t)len - got, vega_deadline_in_ms(10000));
            VCHECK(n > 0);
            got += (size_t)n;
        }
        VCHECK(memcmp(back, msg, (size_t)len) == 0);
    }
    for (int i = 0; i < MANY; i++)
        vega_sock_close(c[i]);
    wait_closed(MANY);
    stop(acc, &srv);
}

VTEST(ring_exhaustion)
{
    vtest_run(body_exhaustion, 1);
}

/* Closing connections that hold unread bytes in ring buffers, more of them than the ring has:
 * if a buffer were not given back, the ring would run dry and later wake-ups would not hold. */
static void body_close_pending(void)
{
    reset_counts();
    struct conn_opts o = {.close_unread = true};
    struct server srv = {.o = &o};
    vega_addr addr;
    vega_task *acc = serve(&srv, &addr);
    for (int i = 0; i < 600; i++) {
        vega_sock *c;
        VCHECK_EQ(vega_tcp_connect(&c, &addr, vega_deadline_in_ms(5000)), 0);
        VCHECK_EQ(vega_sock_write(c, "unread", 6, NULL, vega_deadline_in_ms(5000)), 6);
        char b;
        vega_ssize n = vega_sock_read(c, &b, 1, vega_deadline_in_ms(5000));
        VCHECK(n == 0 || n == -ECONNRESET);
        vega_sock_close(c);
    }
    wait_closed(600);
    if (uring())
        VCHECK(atomic_load(&fired_holding) >= 590); /* (a wake-up may beat its bytes) */
    stop(acc, &srv);
}

VTEST(close_with_pending)
{
    vtest_run(body_close_pending, 1);
}

/* A read after an idle deadline fired, while the parked receive is still in flight, waits for
 * that receive and gets its bytes (nothing overtakes it). */
static atomic_int late_result;
static char late_bytes[16];

static void on_idle(vega_sock *s, void *arg, int status)
{
    (void)arg;
    if (status == -ETIMEDOUT) {
        vega_ssize n = vega_sock_read(s, late_bytes, sizeof late_bytes, vega_deadline_in_ms(5000));
        atomic_store(&late_result, (int)n);
    } else {
        atomic_store(&late_result, -1000);
    }
    vega_sock_close(s);
    atomic_fetch_add(&closed, 1);
}

static void body_read_after_idle(void)
{
    reset_counts();
    vega_addr a;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", 0), 0);
    vega_sock *l, *c, *s;
    VCHECK_EQ(vega_tcp_listen(&l, &a, 16, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(l, &a), 0);
    VCHECK_EQ(vega_tcp_connect(&c, &a, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_tcp_accept(l, &s, NULL, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_sock_park(s, on_idle, NULL, vega_deadline_in_ms(10)), 0);
    VCHECK_EQ(vega_sleep_ms(40), 0);
    VCHECK_EQ(vega_sock_write(c, "late bytes", 10, NULL, vega_deadline_in_ms(5000)), 10);
    wait_closed(1);
    VCHECK_EQ(atomic_load(&late_result), 10);
    VCHECK(memcmp(late_bytes, "late bytes", 10) == 0);
    vega_sock_close(c);
    vega_sock_close(l);
}

VTEST(read_after_idle_deadline)
{
    vtest_run(body_read_after_idle, 1);
}

VTEST(read_after_idle_deadline_two_workers)
{
    vtest_run(body_read_after_idle, 2);
}

/* A flood to one connection whose handler naps before reading: the socket may hold only a few
 * ring buffers, so its multishot receive stops and the rest waits in the socket; the bytes come
 * back whole and in order. */
static void body_flood(void)
{
    reset_counts();
    struct conn_opts o = {.rbuf = 8192, .nap_ms = 30};
    struct server srv = {.o = &o};
    vega_addr addr;
    vega_task *acc = serve(&srv, &addr);
    vega_sock *c;
    VCHECK_EQ(vega_tcp_connect(&c, &addr, vega_deadline_in_ms(5000)), 0);
    enum {
        TOTAL = 300000
    };
    static uint8_t out[TOTAL], in[TOTAL + 1];
    for (size_t i = 0; i < TOTAL; i++)
        out[i] = pattern(i, 3);
    VCHECK_EQ(vega_sock_write(c, out, TOTAL, NULL, vega_deadline_in_ms(5000)), TOTAL);
    VCHECK_EQ(vega_sock_shutdown(c, SHUT_WR), 0);
    size_t got = 0;
    for (;;) {
        vega_ssize n =
            vega_sock_read(c, in + got, TOTAL - got + (got == TOTAL), vega_deadline_in_ms(5000));
        VCHECK(n >= 0);
        if (n == 0)
            break;
        got += (size_t)n;
        VCHECK(got <= TOTAL);
    }
    VCHECK_EQ(got, TOTAL);
    VCHECK(memcmp(in, out, TOTAL) == 0);
    vega_sock_close(c);
    wait_closed(1);
    stop(acc, &srv);
}

VTEST(flood_while_handler_naps)
{
    vtest_run(body_flood, 1);
}

VTEST(flood_while_handler_naps_two_workers)
{
    vtest_run(body_flood, 2);
}

VTEST(bytes_in_order_current_thread)
{
    vtest_run(body_order, 0);
}

/* vega_sock_set_direct_read: the park waits for readiness and receives nothing, so the bytes
 * that woke the socket are still in the kernel and recv(2) on its fd reads them (what
 * vega-proxy's splice relies on). Without the mark, io_uring would hold them in the ring. */
static atomic_int direct_result;
static char direct_bytes[16];

static void on_direct(vega_sock *s, void *arg, int status)
{
    (void)arg;
    int r = -1000;
    if (status > 0 && !vega__sock_park_holds(s)) {
        ssize_t n = recv(vega_sock_fd(s), direct_bytes, sizeof direct_bytes, MSG_DONTWAIT);
        r = n < 0 ? -errno : (int)n;
    }
    atomic_store(&direct_result, r);
    vega_sock_close(s);
    atomic_fetch_add(&closed, 1);
}

static void body_direct_read(void)
{
    reset_counts();
    vega_addr a;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", 0), 0);
    vega_sock *l, *c, *s;
    VCHECK_EQ(vega_tcp_listen(&l, &a, 16, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(l, &a), 0);
    VCHECK_EQ(vega_tcp_connect(&c, &a, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_tcp_accept(l, &s, NULL, vega_deadline_in_ms(5000)), 0);
    vega_sock_set_direct_read(s);
    VCHECK_EQ(vega_sock_park(s, on_direct, NULL, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_sock_write(c, "direct", 6, NULL, vega_deadline_in_ms(5000)), 6);
    wait_closed(1);
    VCHECK_EQ(atomic_load(&direct_result), 6);
    VCHECK(memcmp(direct_bytes, "direct", 6) == 0);
    vega_sock_close(c);
    vega_sock_close(l);
}

VTEST(direct_read_leaves_bytes_in_the_socket)
{
    vtest_run(body_direct_read, 1);
}

VTEST(direct_read_leaves_bytes_in_the_socket_two_workers)
{
    vtest_run(body_direct_read, 2);
}
