/* SPDX-License-Identifier: MIT */
/* Kernel operations on the worker's io_uring: results, deadlines and cancellation that wait
 * for the kernel to let go of the buffer. */
#include <string.h>
#include <unistd.h>

#include <liburing.h>

#include <vega/rt.h>

#include "rt_int.h"
#include "vtest.h"

struct rw {
    int fd;
    char *buf;
    unsigned len;
};

static void prep_read(void *sqe, struct vega__op *op)
{
    struct rw *a = op->arg;
    io_uring_prep_read(sqe, a->fd, a->buf, a->len, (uint64_t)-1);
}

static void *root_read(void *arg)
{
    (void)arg;
    if (!vega__driver_has_ops()) {
        char b[4];
        struct rw a = {0, b, sizeof b};
        VCHECK_EQ(vega__op_submit(prep_read, &a, VEGA_DEADLINE_NEVER, "read"), -ENOTSUP);
        return (void *)1;
    }
    int p[2];
    VCHECK_EQ(pipe(p), 0);
    VCHECK_EQ(write(p[1], "hello", 5), 5);
    char buf[16] = {0};
    struct rw a = {p[0], buf, sizeof buf};
    VCHECK_EQ(vega__op_submit(prep_read, &a, VEGA_DEADLINE_NEVER, "read"), 5);
    VCHECK(memcmp(buf, "hello", 5) == 0);
    /* Nothing to read: the deadline cancels the read in the kernel. */
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega__op_submit(prep_read, &a, vega_deadline_in_ms(20), "read"), -ETIMEDOUT);
    VCHECK(vega_now() - t0 >= 20 * VEGA_NS_PER_MS);
    /* The pipe still works and the cancelled read consumed nothing. */
    VCHECK_EQ(write(p[1], "x", 1), 1);
    VCHECK_EQ(vega__op_submit(prep_read, &a, vega_deadline_in_ms(5000), "read"), 1);
    VCHECK_EQ(buf[0], 'x');
    close(p[0]);
    close(p[1]);
    return NULL;
}

VTEST(read_and_timeout)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.driver = vtest_driver();
    o.workers = 2;
    vega_rt *rt;
    VCHECK_EQ(vega_rt_new(&rt, &o), 0);
    VCHECK_EQ(vega_rt_block_on(rt, root_read, NULL, NULL), 0);
    vega_rt_free(rt);
}

static int cancel_pipe[2];
static void *blocked_reader(void *arg)
{
    (void)arg;
    char buf[8];
    struct rw a = {cancel_pipe[0], buf, sizeof buf};
    return (void *)(intptr_t)vega__op_submit(prep_read, &a, VEGA_DEADLINE_NEVER, "read");
}

static void *root_cancel(void *arg)
{
    (void)arg;
    if (!vega__driver_has_ops())
        return NULL;
    VCHECK_EQ(pipe(cancel_pipe), 0);
    for (int i = 0; i < 200; i++) {
        vega_task *t;
        VCHECK_EQ(vega_task_spawn(&t, blocked_reader, NULL), 0);
        if (i % 3)
            VCHECK_EQ(vega_sleep_ms((uint64_t)(i % 2)), 0);
        vega_task_cancel(t);
        void *res;
        VCHECK_EQ(vega_task_join(t, &res, VEGA_DEADLINE_NEVER), 0);
        VCHECK_EQ((intptr_t)res, -ECANCELED);
    }
    close(cancel_pipe[0]);
    close(cancel_pipe[1]);
    return NULL;
}

VTEST(cancel_from_other_worker)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.driver = vtest_driver();
    o.workers = 2;
    vega_rt *rt;
    VCHECK_EQ(vega_rt_new(&rt, &o), 0);
    VCHECK_EQ(vega_rt_block_on(rt, root_cancel, NULL, NULL), 0);
    vega_rt_free(rt);
}
