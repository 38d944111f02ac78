/* SPDX-License-Identifier: MIT */
/* Accepting under load: a burst of connections, the multishot queue's high mark, deadlines and
 * cancellation of a waiting accept, and closing a listener with connections queued (io_uring
 * takes them with a multishot accept; epoll runs the same cases on accept4 and readiness). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vega/io.h>
#include <vega/rt.h>

#include "io_int.h"
#include "vtest.h"

static bool uring(void)
{
    return vtest_driver() == VEGA_DRIVER_URING;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    VCHECK(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own fd */
}

static vega_sock *listen_any(vega_addr *bound, int backlog)
{
    vega_addr a;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", 0), 0);
    vega_sock *l;
    VCHECK_EQ(vega_tcp_listen(&l, &a, backlog, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(l, bound), 0);
    return l;
}

/* Starts the listener's multishot (io_uring) with an accept that finds nobody. */
static void prime(vega_sock *l)
{
    vega_sock *c;
    VCHECK_EQ(vega_tcp_accept(l, &c, NULL, vega_deadline_in_ms(5)), -ETIMEDOUT);
}

#define BURST 500

static void body_burst(void)
{
    vega_addr addr;
    vega_sock *l = listen_any(&addr, 1024);
    prime(l);
    static vega_sock *cl[BURST];
    static char names[BURST][VEGA_ADDR_STRLEN];
    for (int i = 0; i < BURST; i++) {
        VCHECK_EQ(vega_tcp_connect(&cl[i], &addr, vega_deadline_in_ms(5000)), 0);
        vega_addr me;
        VCHECK_EQ(vega_sock_local_addr(cl[i], &me), 0);
        VCHECK(vega_addr_format(&me, names[i], sizeof names[i]) > 0);
    }
    /* Nobody accepted while they came: the queue reached its high mark and the rest waited in
     * the backlog. Each accepted connection names its real peer, and is that peer. */
    static bool seen[BURST];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < BURST; i++) {
        vega_sock *s;
        vega_addr peer;
        VCHECK_EQ(vega_tcp_accept(l, &s, &peer, vega_deadline_in_ms(5000)), 0);
        char name[VEGA_ADDR_STRLEN];
        VCHECK(vega_addr_format(&peer, name, sizeof name) > 0);
        int k = -1;
        for (int j = 0; j < BURST; j++)
            if (strcmp(names[j], name) == 0)
                k = j;
        VCHECK(k >= 0);
        VCHECK(!seen[k]);
        seen[k] = true;
        char b = (char)('a' + i % 26), back;
        VCHECK_EQ(vega_sock_write(s, &b, 1, NULL, vega_deadline_in_ms(5000)), 1);
        VCHECK_EQ(vega_sock_read(cl[k], &back, 1, vega_deadline_in_ms(5000)), 1);
        VCHECK_EQ(back, b);
        vega_sock_close(s);
    }
    struct vega__accept_ms_info info;
    vega__accept_ms_get_info(l, &info);
    if (getenv("VTEST_VERBOSE"))
        fprintf(stderr, "starts %llu stops %llu accepted %llu\n", (unsigned long long)info.starts,
                (unsigned long long)info.stops, (unsigned long long)info.accepted);
    if (uring()) {
        /* It was stopped at the high mark (the kernel may hand over what it accepted before
         * it saw the stop, so the queue may pass the mark; a restart comes only when the stop
         * ended before the queue drained). */
        VCHECK(info.starts >= 1);
        VCHECK(info.stops >= 1);
        VCHECK(info.accepted >= 64); /* through the multishot */
    } else {
        VCHECK_EQ(info.accepted, 0);
    }
    for (int i = 0; i < BURST; i++)
        vega_sock_close(cl[i]);
    VCHECK_EQ(vega_sock_close(l), 0);
}

VTEST(burst_and_high_mark)
{
    vtest_run(body_burst, 1);
}

VTEST(burst_two_workers)
{
    vtest_run(body_burst, 2);
}

struct waiter {
    vega_sock *l;
    int r;
};

static void *accept_forever(void *arg)
{
    struct waiter *w = arg;
    vega_sock *c = NULL;
    w->r = vega_tcp_accept(w->l, &c, NULL, VEGA_DEADLINE_NEVER);
    if (c)
        vega_sock_close(c);
    return NULL;
}

static void body_deadline_cancel(void)
{
    vega_addr addr;
    vega_sock *l = listen_any(&addr, 64);
    vega_sock *c, *s;
    /* A deadline ends a waiting accept, and the listener works on afterwards. */
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_tcp_accept(l, &s, NULL, vega_deadline_in_ms(30)), -ETIMEDOUT);
    VCHECK(vega_now() - t0 >= 25 * VEGA_NS_PER_MS);
    VCHECK(s == NULL);
    VCHECK_EQ(vega_tcp_accept(l, &s, NULL, 0), -ETIMEDOUT);
    VCHECK_EQ(vega_tcp_connect(&c, &addr, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_tcp_accept(l, &s, NULL, vega_deadline_in_ms(5000)), 0);
    vega_sock_close(s);
    vega_sock_close(c);

    /* So does cancellation, and a deadline scope. */
    struct waiter w = {.l = l, .r = 1};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, accept_forever, &w), 0);
    VCHECK_EQ(vega_sleep_ms(20), 0);
    vega_task_cancel(t);
    VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(w.r, -ECANCELED);

    /* A connection that comes now is not lost to the cancelled waiter. */
    VCHECK_EQ(vega_tcp_connect(&c, &addr, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_tcp_accept(l, &s, NULL, vega_deadline_in_ms(5000)), 0);
    vega_sock_close(s);
    vega_sock_close(c);

    VCHECK_EQ(vega_sock_close(l), 0);
}

/* Two tasks waiting in accept on one listener get one connection each (io_uring: the queue's
 * waiters; epoll allows one waiter per fd and direction and says -EBUSY to the second). */
static void body_two_waiters(void)
{
    if (!uring())
        vtest_skip("epoll: one waiter per fd");
    vega_addr addr;
    vega_sock *l = listen_any(&addr, 64);
    struct waiter w1 = {.l = l, .r = 1}, w2 = {.l = l, .r = 1};
    vega_task *t1, *t2;
    VCHECK_EQ(vega_task_spawn(&t1, accept_forever, &w1), 0);
    VCHECK_EQ(vega_task_spawn(&t2, accept_forever, &w2), 0);
    VCHECK_EQ(vega_sleep_ms(10), 0);
    vega_sock *c1, *c2;
    VCHECK_EQ(vega_tcp_connect(&c1, &addr, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_tcp_connect(&c2, &addr, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_task_join(t1, NULL, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_task_join(t2, NULL, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(w1.r, 0);
    VCHECK_EQ(w2.r, 0);
    vega_sock_close(c1);
    vega_sock_close(c2);
    VCHECK_EQ(vega_sock_close(l), 0);
}

VTEST(deadline_and_cancel)
{
    vtest_run(body_deadline_cancel, 1);
}

VTEST(deadline_and_cancel_two_workers)
{
    vtest_run(body_deadline_cancel, 2);
}

VTEST(two_waiters)
{
    vtest_run(body_two_waiters, 2);
}

#define QUEUED 10

static void body_close_queued(void)
{
    vega_addr addr;
    vega_sock *l = listen_any(&addr, 64);
    prime(l);
    int before = count_fds();
    vega_sock *cl[QUEUED];
    for (int i = 0; i < QUEUED; i++)
        VCHECK_EQ(vega_tcp_connect(&cl[i], &addr, vega_deadline_in_ms(5000)), 0);
    /* Let the multishot take them (io_uring): they become fds of this process. */
    struct vega__accept_ms_info info;
    for (int i = 0; i < 200; i++) {
        vega__accept_ms_get_info(l, &info);
        if (!uring() || info.queued == QUEUED)
            break;
        VCHECK_EQ(vega_sleep_ms(2), 0);
    }
    VCHECK_EQ(info.queued, uring() ? QUEUED : 0);
    VCHECK_EQ(count_fds(), before + QUEUED + (uring() ? QUEUED : 0));
    VCHECK_EQ(vega_sock_close(l), 0);
    /* The listener and every queued connection are closed when close returns, and the port is
     * free again. */
    VCHECK_EQ(count_fds(), before - 1 + QUEUED);
    vega_sock *l2;
    VCHECK_EQ(vega_tcp_listen(&l2, &addr, 64, 0), 0);
    for (int i = 0; i < QUEUED; i++) {
        char b;
        vega_ssize n = vega_sock_read(cl[i], &b, 1, vega_deadline_in_ms(5000));
        VCHECK(n == 0 || n == -ECONNRESET);
        vega_sock_close(cl[i]);
    }
    VCHECK_EQ(count_fds(), before);
    vega_sock_close(l2);
}

VTEST(close_with_queued)
{
    vtest_run(body_close_queued, 1);
}

VTEST(close_with_queued_two_workers)
{
    vtest_run(body_close_queued, 2);
}

/* A listener left open when the runtime ends is closed afterwards, from outside any task. */
static vega_sock *left;
static vega_addr left_addr;

static void body_leave_open(void)
{
    left = listen_any(&left_addr, 64);
    prime(left);
    vega_sock *c;
    VCHECK_EQ(vega_tcp_connect(&c, &left_addr, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(vega_sleep_ms(10), 0);
    vega_sock_close(c);
}

VTEST(close_after_runtime)
{
    int before = count_fds();
    vtest_run(body_leave_open, 1);
    VCHECK_EQ(vega_sock_close(left), 0);
    VCHECK_EQ(count_fds(), before);
}

/* A Unix listener with the multishot running: close removes its file and refuses at once. */
static void body_unix_close(void)
{
    char path[128];
    snprintf(path, sizeof path, "/tmp/vega-acc-ms-%d.sock", (int)getpid());
    unlink(path);
    vega_sock *l, *c, *s;
    VCHECK_EQ(vega_unix_listen(&l, path, 0, VEGA_LISTEN_UNLINK_STALE), 0);
    VCHECK_EQ(vega_tcp_accept(l, &s, NULL, vega_deadline_in_ms(5)), -ETIMEDOUT);
    VCHECK_EQ(vega_unix_connect(&c, path, vega_deadline_in_ms(1000)), 0);
    vega_addr peer;
    VCHECK_EQ(vega_tcp_accept(l, &s, &peer, vega_deadline_in_ms(1000)), 0);
    VCHECK_EQ(vega_addr_family(&peer), AF_UNIX);
    vega_sock_close(s);
    vega_sock_close(c);
    VCHECK_EQ(vega_sock_close(l), 0);
    VCHECK(access(path, F_OK) < 0);
    VCHECK_EQ(vega_unix_connect(&c, path, vega_deadline_in_ms(1000)), -ENOENT);
}

VTEST(unix_close)
{
    vtest_run(body_unix_close, 2);
}

VTEST(burst_current_thread)
{
    vtest_run(body_burst, 0);
}

VTEST(close_with_queued_current_thread)
{
    vtest_run(body_close_queued, 0);
}
