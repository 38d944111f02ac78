/* SPDX-License-Identifier: MIT */
/*
 * Scheduler microbenchmarks; the Tokio side is bench/tokio/src/main.rs and bench/run-sched.sh
 * runs both, interleaved, and prints the ratios. Uses only the public API.
 *
 *   vega-sched-bench <spawn|yield|pingpong> <current|multi> <n>
 *
 * Prints one line: `vega <bench> <flavor> <ns_per_op>`.
 *   spawn     spawn and join n trivial tasks (in batches of SPAWN_BATCH): ns per task
 *   yield     YIELD_TASKS tasks each yield n/YIELD_TASKS times: ns per yield
 *   pingpong  two tasks hand a value back and forth through two mpsc channels of capacity 1:
 *             ns per round trip
 * Flavours: current = VEGA_RT_CURRENT_THREAD, multi = VEGA_RT_MULTI_THREAD with 2 workers.
 * The time is taken inside the block_on task, so runtime creation and teardown are excluded.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vega/rt.h>
#include <vega/sync.h>

#define YIELD_TASKS 10u
#define SPAWN_BATCH 100000u /* same as the Tokio side */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int err)
{
    fprintf(stderr, "vega-sched-bench: %s: %s (%d)\n", what, vega_strerror(err), err);
    exit(1);
}

typedef struct bench_arg {
    uint64_t n;
    uint64_t ns; /* out */
} bench_arg;

/* ---- spawn ------------------------------------------------------------------------------- */

static void *trivial(void *arg)
{
    return arg;
}

static void *bench_spawn(void *p)
{
    bench_arg *a = p;
    size_t cap = a->n < SPAWN_BATCH ? (size_t)a->n : SPAWN_BATCH;
    vega_task **h = malloc(cap * sizeof *h);
    if (!h)
        die("malloc", -ENOMEM);
    uint64_t t0 = now_ns();
    uint64_t left = a->n, sum = 0;
    while (left > 0) {
        size_t k = left < cap ? (size_t)left : cap;
        for (size_t i = 0; i < k; i++) {
            int rc = vega_task_spawn(&h[i], trivial, (void *)(uintptr_t)i);
            if (rc != 0)
                die("vega_task_spawn", rc);
        }
        for (size_t i = 0; i < k; i++) {
            void *r;
            int rc = vega_task_join(h[i], &r, VEGA_DEADLINE_NEVER);
            if (rc != 0)
                die("vega_task_join", rc);
            sum += (uintptr_t)r;
        }
        left -= k;
    }
    a->ns = now_ns() - t0;
    free(h);
    __asm__ volatile("" : : "r"(sum)); /* keep the results alive */
    return NULL;
}

/* ---- yield ------------------------------------------------------------------------------- */

static void *yielder(void *arg)
{
    uint64_t per = *(const uint64_t *)arg;
    for (uint64_t i = 0; i < per; i++) {
        int rc = vega_yield();
        if (rc != 0)
            die("vega_yield", rc);
    }
    return NULL;
}

static void *bench_yield(void *p)
{
    bench_arg *a = p;
    uint64_t per = a->n / YIELD_TASKS;
    vega_task *h[YIELD_TASKS];
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < YIELD_TASKS; i++) {
        int rc = vega_task_spawn(&h[i], yielder, &per);
        if (rc != 0)
            die("vega_task_spawn", rc);
    }
    for (unsigned i = 0; i < YIELD_TASKS; i++) {
        int rc = vega_task_join(h[i], NULL, VEGA_DEADLINE_NEVER);
        if (rc != 0)
            die("vega_task_join", rc);
    }
    a->ns = now_ns() - t0;
    return NULL;
}

/* ---- ping-pong --------------------------------------------------------------------------- */

typedef struct pp {
    vega_mpsc *to_pong, *to_ping;
    uint64_t n;
} pp;

static void *pong(void *arg)
{
    pp *s = arg;
    for (;;) {
        void *v;
        int rc = vega_mpsc_recv(s->to_pong, &v, VEGA_DEADLINE_NEVER);
        if (rc == VEGA_ERR_CLOSED)
            return NULL;
        if (rc != 0)
            die("pong: vega_mpsc_recv", rc);
        rc = vega_mpsc_send(s->to_ping, (void *)((uintptr_t)v + 1), VEGA_DEADLINE_NEVER);
        if (rc != 0)
            die("pong: vega_mpsc_send", rc);
    }
}

static void *ping(void *arg)
{
    pp *s = arg;
    uintptr_t v = 1; /* never a NULL message */
    for (uint64_t i = 0; i < s->n; i++) {
        int rc = vega_mpsc_send(s->to_pong, (void *)v, VEGA_DEADLINE_NEVER);
        if (rc != 0)
            die("ping: vega_mpsc_send", rc);
        void *r;
        rc = vega_mpsc_recv(s->to_ping, &r, VEGA_DEADLINE_NEVER);
        if (rc != 0)
            die("ping: vega_mpsc_recv", rc);
        v = (uintptr_t)r;
    }
    vega_mpsc_close(s->to_pong); /* pong drains and returns */
    return (void *)v;
}

static void *bench_pingpong(void *p)
{
    bench_arg *a = p;
    pp s = {.n = a->n};
    int rc = vega_mpsc_new(&s.to_pong, 1);
    if (rc == 0)
        rc = vega_mpsc_new(&s.to_ping, 1);
    if (rc != 0)
        die("vega_mpsc_new", rc);
    vega_task *hp = NULL, *hq = NULL;
    uint64_t t0 = now_ns();
    if ((rc = vega_task_spawn(&hq, pong, &s)) != 0 || (rc = vega_task_spawn(&hp, ping, &s)) != 0)
        die("vega_task_spawn", rc);
    void *v;
    if ((rc = vega_task_join(hp, &v, VEGA_DEADLINE_NEVER)) != 0)
        die("join ping", rc);
    if ((rc = vega_task_join(hq, NULL, VEGA_DEADLINE_NEVER)) != 0)
        die("join pong", rc);
    a->ns = now_ns() - t0;
    if ((uintptr_t)v != 1 + a->n) {
        fprintf(stderr, "vega-sched-bench: pingpong: got %" PRIuPTR ", want %" PRIu64 "\n",
                (uintptr_t)v, 1 + a->n);
        exit(1);
    }
    vega_mpsc_free(s.to_pong);
    vega_mpsc_free(s.to_ping);
    return NULL;
}

/* ------------------------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: vega-sched-bench <spawn|yield|pingpong> <current|multi> <n>\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc != 4)
        usage();
    const char *bench = argv[1], *flavor = argv[2];
    char *end;
    unsigned long long n = strtoull(argv[3], &end, 10);
    if (*argv[3] == '\0' || *end != '\0' || n == 0)
        usage();

    vega_task_fn fn = NULL;
    uint64_t ops = n;
    if (strcmp(bench, "spawn") == 0) {
        fn = bench_spawn;
    } else if (strcmp(bench, "yield") == 0) {
        fn = bench_yield;
        ops = n / YIELD_TASKS * YIELD_TASKS;
    } else if (strcmp(bench, "pingpong") == 0) {
        fn = bench_pingpong;
    } else {
        usage();
    }

    vega_rt_opts o;
    vega_rt_opts_init(&o);
    if (strcmp(flavor, "current") == 0) {
        o.flavor = VEGA_RT_CURRENT_THREAD;
    } else if (strcmp(flavor, "multi") == 0) {
        o.flavor = VEGA_RT_MULTI_THREAD;
        o.workers = 2;
    } else {
        usage();
    }

    vega_rt *rt;
    int rc = vega_rt_new(&rt, &o);
    if (rc != 0)
        die("vega_rt_new", rc);
    bench_arg a = {.n = n};
    rc = vega_rt_block_on(rt, fn, &a, NULL);
    if (rc != 0)
        die("vega_rt_block_on", rc);
    vega_rt_free(rt);
    printf("vega %s %s %.1f\n", bench, flavor, (double)a.ns / (double)(ops ? ops : 1));
    return 0;
}
