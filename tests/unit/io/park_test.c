/* SPDX-License-Identifier: MIT */
/* Parked sockets: idle connections hold no task; data, idle deadlines and shutdown each wake
 * a fresh task. */
#include <dirent.h>
#include <stdatomic.h>
#include <string.h>

#include <sys/socket.h>

#include <vega/io.h>
#include <vega/rt.h>

#include "vtest.h"

static atomic_int handled, timeouts, cancels, closed;

static void echo_ready(vega_sock *s, void *arg, int status);

/* Echoes what is there, then parks again; closes on EOF or error. */
static void echo_ready(vega_sock *s, void *arg, int status)
{
    vega_deadline idle = (vega_deadline)(uintptr_t)arg;
    if (status == -ETIMEDOUT)
        atomic_fetch_add(&timeouts, 1);
    if (status == -ECANCELED)
        atomic_fetch_add(&cancels, 1);
    if (status < 0) {
        vega_sock_close(s);
        atomic_fetch_add(&closed, 1);
        return;
    }
    atomic_fetch_add(&handled, 1);
    char buf[512];
    for (;;) {
        vega_ssize n = vega_sock_read(s, buf, sizeof buf, 0);
        if (n == -ETIMEDOUT) {
            vega_deadline dl = idle ? vega_deadline_in_ms(idle) : VEGA_DEADLINE_NEVER;
            if (vega_sock_park(s, echo_ready, arg, dl) == 0)
                return;
            break;
        }
        if (n <= 0)
            break;
        if (vega_sock_write(s, buf, (size_t)n, NULL, vega_deadline_in_ms(5000)) < 0)
            break;
    }
    vega_sock_close(s);
    atomic_fetch_add(&closed, 1);
}

struct server {
    vega_sock *l;
    uintptr_t idle_ms;
};

static void *acceptor(void *arg)
{
    struct server *srv = arg;
    for (;;) {
        vega_sock *c;
        int r = vega_tcp_accept(srv->l, &c, NULL, VEGA_DEADLINE_NEVER);
        if (r < 0)
            return NULL;
        vega_deadline dl = srv->idle_ms ? vega_deadline_in_ms(srv->idle_ms) : VEGA_DEADLINE_NEVER;
        VCHECK_EQ(vega_sock_park(c, echo_ready, (void *)srv->idle_ms, dl), 0);
    }
}

static vega_sock *listen_any(vega_addr *bound)
{
    vega_addr a;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", 0), 0);
    vega_sock *l;
    VCHECK_EQ(vega_tcp_listen(&l, &a, 1024, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(l, bound), 0);
    return l;
}

#define NCONN 200

static void *root_echo(void *arg)
{
    (void)arg;
    vega_addr addr;
    struct server srv = {.l = listen_any(&addr), .idle_ms = 0};
    vega_task *acc;
    VCHECK_EQ(vega_task_spawn(&acc, acceptor, &srv), 0);
    static vega_sock *c[NCONN];
    for (int i = 0; i < NCONN; i++)
        VCHECK_EQ(vega_tcp_connect(&c[i], &addr, vega_deadline_in_ms(5000)), 0);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < NCONN; i++) {
            char msg[32], back[32];
            int len = snprintf(msg, sizeof msg, "conn %d round %d", i, round);
            VCHECK_EQ(vega_sock_write(c[i], msg, (size_t)len, NULL, vega_deadline_in_ms(5000)),
                      len);
            size_t got = 0;
            while (got < (size_t)len) {
                vega_ssize n =
                    vega_sock_read(c[i], back + got, sizeof back - got, vega_deadline_in_ms(5000));
                VCHECK(n > 0);
                got += (size_t)n;
            }
            VCHECK(memcmp(msg, back, (size_t)len) == 0);
        }
    }
    /* Every connection is idle now: only this task and the acceptor are alive. */
    VCHECK_EQ(vega_sleep_ms(20), 0);
    vega_rt_metrics m;
    vega_rt_get_metrics(vega_rt_current(), &m);
    VCHECK(m.live_tasks <= 3);
    for (int i = 0; i < NCONN; i++)
        vega_sock_close(c[i]);
    /* EOF wakes each parked connection, which closes. */
    for (int i = 0; i < 500 && atomic_load(&closed) < NCONN; i++)
        VCHECK_EQ(vega_sleep_ms(10), 0);
    VCHECK_EQ(atomic_load(&closed), NCONN);
    VCHECK(atomic_load(&handled) >= NCONN * 3);
    vega_task_cancel(acc);
    VCHECK_EQ(vega_task_join(acc, NULL, VEGA_DEADLINE_NEVER), 0);
    vega_sock_close(srv.l);
    return NULL;
}

static vega_rt *make_rt(unsigned workers)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.driver = vtest_driver();
    o.workers = workers;
    vega_rt *rt;
    VCHECK_EQ(vega_rt_new(&rt, &o), 0);
    return rt;
}

VTEST(echo_parked)
{
    vega_rt *rt = make_rt(2);
    VCHECK_EQ(vega_rt_block_on(rt, root_echo, NULL, NULL), 0);
    vega_rt_free(rt);
}

static void *root_idle(void *arg)
{
    (void)arg;
    vega_addr addr;
    struct server srv = {.l = listen_any(&addr), .idle_ms = 30};
    vega_task *acc;
    VCHECK_EQ(vega_task_spawn(&acc, acceptor, &srv), 0);
    vega_sock *c;
    /* before the connect: the server's idle deadline starts at its accept, which may come
     * before connect returns here on a busy machine */
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_tcp_connect(&c, &addr, vega_deadline_in_ms(5000)), 0);
    /* The server closes the idle connection: we read EOF. */
    char b[8];
    VCHECK_EQ(vega_sock_read(c, b, sizeof b, vega_deadline_in_ms(5000)), 0);
    VCHECK(vega_now() - t0 >= 25 * VEGA_NS_PER_MS);
    VCHECK_EQ(atomic_load(&timeouts), 1);
    vega_sock_close(c);
    vega_task_cancel(acc);
    VCHECK_EQ(vega_task_join(acc, NULL, VEGA_DEADLINE_NEVER), 0);
    vega_sock_close(srv.l);
    return NULL;
}

VTEST(idle_deadline)
{
    vega_rt *rt = make_rt(2);
    VCHECK_EQ(vega_rt_block_on(rt, root_idle, NULL, NULL), 0);
    vega_rt_free(rt);
}

static vega_sock *keep[8];

static void *root_leave_parked(void *arg)
{
    (void)arg;
    vega_addr addr;
    struct server srv = {.l = listen_any(&addr), .idle_ms = 0};
    vega_task *acc;
    VCHECK_EQ(vega_task_spawn(&acc, acceptor, &srv), 0);
    for (int i = 0; i < 8; i++)
        VCHECK_EQ(vega_tcp_connect(&keep[i], &addr, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_sleep_ms(20), 0);
    vega_task_cancel(acc);
    VCHECK_EQ(vega_task_join(acc, NULL, VEGA_DEADLINE_NEVER), 0);
    vega_sock_close(srv.l);
    return NULL;
}

VTEST(shutdown_wakes_parked)
{
    for (unsigned workers = 1; workers <= 2; workers++) {
        atomic_store(&cancels, 0);
        vega_rt *rt = make_rt(workers);
        VCHECK_EQ(vega_rt_block_on(rt, root_leave_parked, NULL, NULL), 0);
        vega_rt_free(rt); /* the 8 parked server sides close with -ECANCELED */
        VCHECK_EQ(atomic_load(&cancels), 8);
        for (int i = 0; i < 8; i++)
            vega_sock_close(keep[i]);
    }
}

/* ---- hang-ups that come with the data, and closing parked sockets ------------------------ */

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* Reads once: a short read is taken to mean "drained" and the socket parks at once, as
 * vega-echo and the HTTP server do. The peer's FIN came with the data, so no new readiness
 * event will follow: the park must still wake for it. */
static void once_ready(vega_sock *s, void *arg, int status)
{
    (void)arg;
    char buf[512];
    vega_ssize n = status < 0 ? status : vega_sock_read(s, buf, sizeof buf, 0);
    if (n > 0 && vega_sock_write(s, buf, (size_t)n, NULL, vega_deadline_in_ms(5000)) == n &&
        vega_sock_park(s, once_ready, NULL, vega_deadline_in_ms(10000)) == 0)
        return;
    vega_sock_close(s);
    atomic_fetch_add(&closed, 1);
}

static void *once_acceptor(void *arg)
{
    vega_sock *l = arg;
    for (;;) {
        vega_sock *c;
        if (vega_tcp_accept(l, &c, NULL, VEGA_DEADLINE_NEVER) < 0)
            return NULL;
        VCHECK_EQ(vega_sock_park(c, once_ready, NULL, vega_deadline_in_ms(10000)), 0);
    }
}

#define NHUP 50

static void *root_hup(void *arg)
{
    (void)arg;
    vega_addr addr;
    vega_sock *l = listen_any(&addr);
    vega_task *acc;
    VCHECK_EQ(vega_task_spawn(&acc, once_acceptor, l), 0);
    int fds0 = count_fds();
    for (int i = 0; i < NHUP; i++) {
        vega_sock *c;
        VCHECK_EQ(vega_tcp_connect(&c, &addr, vega_deadline_in_ms(5000)), 0);
        VCHECK_EQ(vega_sock_write(c, "hi\n", 3, NULL, vega_deadline_in_ms(5000)), 3);
        VCHECK_EQ(vega_sock_shutdown(c, SHUT_WR), 0);
        char b[8];
        size_t got = 0;
        for (;;) {
            vega_ssize n = vega_sock_read(c, b + got, sizeof b - got, vega_deadline_in_ms(5000));
            VCHECK(n >= 0); /* a timeout here: the server never saw the hang-up */
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        VCHECK_EQ(got, 3u);
        vega_sock_close(c);
    }
    /* Every server side closed, and its descriptor with it (the close of a parked socket
     * waits for the driver to let go of its registration). */
    for (int i = 0; i < 500 && (atomic_load(&closed) < NHUP || count_fds() > fds0); i++)
        VCHECK_EQ(vega_sleep_ms(10), 0);
    VCHECK_EQ(atomic_load(&closed), NHUP);
    VCHECK_EQ(count_fds(), fds0);
    vega_task_cancel(acc);
    VCHECK_EQ(vega_task_join(acc, NULL, VEGA_DEADLINE_NEVER), 0);
    vega_sock_close(l);
    return NULL;
}

VTEST(hangup_with_data_closes)
{
    for (unsigned workers = 1; workers <= 2; workers++) {
        atomic_store(&closed, 0);
        vega_rt *rt = make_rt(workers);
        VCHECK_EQ(vega_rt_block_on(rt, root_hup, NULL, NULL), 0);
        vega_rt_free(rt);
    }
}
