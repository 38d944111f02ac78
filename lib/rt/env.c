/* SPDX-License-Identifier: MIT */
/* The environment switches of the library, read in one place, once per process (the table is
 * in docs/ARCHITECTURE.md, "Environment switches"). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rt_int.h"

/*
 * | variable                        | effect                                                    |
 * |---------------------------------|-----------------------------------------------------------|
 * | VEGA_DRIVER=uring|epoll         | the driver of a runtime whose options say DEFAULT; when  |
 * |                                 | set, a refused io_uring is an error, not a fallback      |
 * | VEGA_URING_NO_MULTISHOT_ACCEPT  | io_uring: accept with accept4 and readiness instead      |
 * | VEGA_URING_NO_BUF_RING          | io_uring: parked sockets wait on polls, no buffer ring   |
 * | VEGA_URING_NO_OP_RECV           | io_uring: a read that must wait polls, then recv         |
 * The three VEGA_URING_NO_* switches exist for comparisons and tests; any value counts.
 */
static struct vega__env env;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void read_env(void)
{
    const char *d = getenv("VEGA_DRIVER");
    if (d && strcmp(d, "uring") == 0)
        env.driver = VEGA_DRIVER_URING;
    else if (d && strcmp(d, "epoll") == 0)
        env.driver = VEGA_DRIVER_EPOLL;
    env.driver_set = d != NULL;
    env.uring_no_multishot_accept = getenv("VEGA_URING_NO_MULTISHOT_ACCEPT") != NULL;
    env.uring_no_buf_ring = getenv("VEGA_URING_NO_BUF_RING") != NULL;
    env.uring_no_op_recv = getenv("VEGA_URING_NO_OP_RECV") != NULL;
}

const struct vega__env *vega__env(void)
{
    pthread_once(&once, read_env);
    return &env;
}
