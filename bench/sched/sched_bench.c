/* SPDX-License-Identifier: MIT */
/*
 * Scheduler microbenchmarks; the Tokio side is bench/tokio/src/main.rs and bench/run-sched.sh
 * runs both, interleaved, and prints the ratios. Uses only the public API.
 *
 *   vega-sched-bench <bench> <current|multi> <n>
 *
 * Prints one line: `vega <bench> <flavor> <ns_per_op> <peak_rss_kib>` (getrusage ru_maxrss of
 * the whole process, runtime creation included).
 * Few tasks alive at once (bench/run-sched.sh):
 *   spawn     spawn and join n trivial tasks (in batches of SPAWN_BATCH): ns per task
 *   yield     YIELD_TASKS tasks each yield n/YIELD_TASKS times: ns per yield
 *   pingpong  two tasks hand a value back and forth through two mpsc channels of capacity 1:
 *             ns per round trip
 * Many tasks alive at once (issue 17, bench/run-sched-live.sh):
 *   sleep     n tasks are spawned, then joined; each sleeps to its own deadline, its start
 *             plus a distinct offset spread over 1..50 ms in scrambled order, and returns its
 *             index; the sum is checked: ns per task. (Deadlines from the spawner's clock
 *             would all have passed before the last tasks started on a loaded machine.)
 *   tree      a binary spawn tree n levels deep (2^n - 1 tasks): each task spawns two children
 *             and joins them; the node count is checked: ns per task
 *   ring      n tasks in a ring, each waiting on its own notify; a token goes RING_ROUNDS times
 *             round, each task adding one; the final value is checked: ns per hop (spawning
 *             the ring is inside the time)
 *   mutex     CONTENDERS tasks each lock an async mutex n/CONTENDERS times around a counter
 *             increment: ns per lock (the count is checked)
 *   sem       the same with a semaphore of SEM_PERMITS permits around an atomic increment
 *   chan      CONTENDERS producers send n/CONTENDERS values each into one mpsc channel of
 *             capacity CHAN_CAP; one consumer sums them (checked): ns per message
 * Flavours: current = VEGA_RT_CURRENT_THREAD, multi = VEGA_RT_MULTI_THREAD with 2 workers.
 * The time is taken inside the block_on task, so runtime creation and teardown are excluded.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <vega/rt.h>
#include <vega/sync.h>

#define YIELD_TASKS 10u
#define SPAWN_BATCH 100000u /* same as the Tokio side */
#define RING_ROUNDS 10u     /* ring: times the token goes round (same as the Tokio side) */
#define CONTENDERS  16u     /* mutex, sem, chan: contending tasks (same as the Tokio side) */
#define SEM_PERMITS 4u      /* sem: permits (same as the Tokio side) */
#define CHAN_CAP    128u    /* chan: channel capacity (same as the Tokio side) */

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

/* ---- sleep: n concurrent sleepers with distinct deadlines --------------------------------- */

typedef struct sleeper {
    uint64_t offset_ns;
    uint64_t idx;
} sleeper;

static void *sleeper_fn(void *arg)
{
    const sleeper *s = arg;
    int rc = vega_sleep_until(vega_now() + s->offset_ns);
    if (rc != 0)
        die("vega_sleep_until", rc);
    return (void *)(uintptr_t)s->idx;
}

/* Sleep i: 1 ms + a scrambled, distinct fraction of 49 ms (same as the Tokio side). */
static uint64_t sleep_offset_ns(uint64_t i, uint64_t n)
{
    uint64_t k = (i * 7919u) % n; /* 7919 is prime: a permutation unless n is a multiple */
    return 1000000u + k * 49000000u / n;
}

static void *bench_sleep(void *p)
{
    bench_arg *a = p;
    vega_task **h = malloc(a->n * sizeof *h);
    sleeper *s = malloc(a->n * sizeof *s);
    if (!h || !s)
        die("malloc", -ENOMEM);
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < a->n; i++) {
        s[i].offset_ns = sleep_offset_ns(i, a->n);
        s[i].idx = i;
        int rc = vega_task_spawn(&h[i], sleeper_fn, &s[i]);
        if (rc != 0)
            die("vega_task_spawn", rc);
    }
    uint64_t sum = 0;
    for (uint64_t i = 0; i < a->n; i++) {
        void *r;
        int rc = vega_task_join(h[i], &r, VEGA_DEADLINE_NEVER);
        if (rc != 0)
            die("vega_task_join", rc);
        sum += (uintptr_t)r;
    }
    a->ns = now_ns() - t0;
    if (sum != a->n * (a->n - 1) / 2) {
        fprintf(stderr, "vega-sched-bench: sleep: sum %" PRIu64 ", want %" PRIu64 "\n", sum,
                a->n * (a->n - 1) / 2);
        exit(1);
    }
    free(h);
    free(s);
    return NULL;
}

/* ---- tree: a binary spawn tree ------------------------------------------------------------ */

static void *tree_node(void *arg)
{
    uintptr_t depth = (uintptr_t)arg;
    if (depth <= 1)
        return (void *)(uintptr_t)1;
    vega_task *l, *r;
    int rc = vega_task_spawn(&l, tree_node, (void *)(depth - 1));
    if (rc == 0)
        rc = vega_task_spawn(&r, tree_node, (void *)(depth - 1));
    if (rc != 0)
        die("vega_task_spawn", rc);
    void *a, *b;
    if ((rc = vega_task_join(l, &a, VEGA_DEADLINE_NEVER)) != 0 ||
        (rc = vega_task_join(r, &b, VEGA_DEADLINE_NEVER)) != 0)
        die("vega_task_join", rc);
    return (void *)(1 + (uintptr_t)a + (uintptr_t)b);
}

static void *bench_tree(void *p)
{
    bench_arg *a = p;
    uint64_t t0 = now_ns();
    void *r = tree_node((void *)(uintptr_t)a->n);
    a->ns = now_ns() - t0;
    uint64_t want = (UINT64_C(1) << a->n) - 1;
    if ((uintptr_t)r != want) {
        fprintf(stderr, "vega-sched-bench: tree: %" PRIuPTR " nodes, want %" PRIu64 "\n",
                (uintptr_t)r, want);
        exit(1);
    }
    return NULL;
}

/* ---- ring: n tasks waiting on one another in turn ----------------------------------------- */

typedef struct ring_slot {
    vega_notify go;
    _Atomic uint64_t val;
} ring_slot;

typedef struct ring {
    ring_slot *slot;
    uint64_t n;
} ring;

typedef struct ring_member {
    ring *r;
    uint64_t i;
} ring_member;

static void *ring_fn(void *arg)
{
    const ring_member *m = arg;
    ring *r = m->r;
    ring_slot *me = &r->slot[m->i], *next = &r->slot[(m->i + 1) % r->n];
    for (unsigned k = 0; k < RING_ROUNDS; k++) {
        int rc = vega_notify_wait(&me->go, VEGA_DEADLINE_NEVER);
        if (rc != 0)
            die("vega_notify_wait", rc);
        uint64_t v = atomic_load_explicit(&me->val, memory_order_acquire);
        atomic_store_explicit(&next->val, v + 1, memory_order_release);
        vega_notify_one(&next->go);
    }
    return NULL;
}

static void *bench_ring(void *p)
{
    bench_arg *a = p;
    ring r = {.n = a->n};
    r.slot = calloc(a->n, sizeof *r.slot);
    ring_member *m = malloc(a->n * sizeof *m);
    vega_task **h = malloc(a->n * sizeof *h);
    if (!r.slot || !m || !h)
        die("malloc", -ENOMEM);
    for (uint64_t i = 0; i < a->n; i++)
        vega_notify_init(&r.slot[i].go);
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < a->n; i++) {
        m[i] = (ring_member){&r, i};
        int rc = vega_task_spawn(&h[i], ring_fn, &m[i]);
        if (rc != 0)
            die("vega_task_spawn", rc);
    }
    vega_notify_one(&r.slot[0].go); /* val 0 */
    for (uint64_t i = 0; i < a->n; i++) {
        int rc = vega_task_join(h[i], NULL, VEGA_DEADLINE_NEVER);
        if (rc != 0)
            die("vega_task_join", rc);
    }
    a->ns = now_ns() - t0;
    /* The last hop wrote into slot 0 after task 0 had finished. */
    uint64_t v = atomic_load_explicit(&r.slot[0].val, memory_order_acquire);
    if (v != a->n * RING_ROUNDS) {
        fprintf(stderr, "vega-sched-bench: ring: token %" PRIu64 ", want %" PRIu64 "\n", v,
                a->n * RING_ROUNDS);
        exit(1);
    }
    for (uint64_t i = 0; i < a->n; i++)
        vega_notify_fini(&r.slot[i].go);
    free(r.slot);
    free(m);
    free(h);
    return NULL;
}

/* ---- mutex, sem, chan: contended sync primitives ------------------------------------------ */

typedef struct contend {
    vega_mutex mu;
    vega_sem sem;
    vega_mpsc *ch;
    uint64_t counter; /* under mu */
    _Atomic uint64_t acounter;
    uint64_t per;
} contend;

static void *mutex_fn(void *arg)
{
    contend *c = arg;
    for (uint64_t i = 0; i < c->per; i++) {
        int rc = vega_mutex_lock(&c->mu, VEGA_DEADLINE_NEVER);
        if (rc != 0)
            die("vega_mutex_lock", rc);
        c->counter++;
        vega_mutex_unlock(&c->mu);
    }
    return NULL;
}

static void *sem_fn(void *arg)
{
    contend *c = arg;
    for (uint64_t i = 0; i < c->per; i++) {
        int rc = vega_sem_acquire(&c->sem, 1, VEGA_DEADLINE_NEVER);
        if (rc != 0)
            die("vega_sem_acquire", rc);
        atomic_fetch_add_explicit(&c->acounter, 1, memory_order_relaxed);
        vega_sem_release(&c->sem, 1);
    }
    return NULL;
}

static void *producer_fn(void *arg)
{
    contend *c = arg;
    for (uint64_t i = 1; i <= c->per; i++) {
        int rc = vega_mpsc_send(c->ch, (void *)(uintptr_t)i, VEGA_DEADLINE_NEVER);
        if (rc != 0)
            die("vega_mpsc_send", rc);
    }
    return NULL;
}

static void *bench_contend(void *p, vega_task_fn fn, bool chan)
{
    bench_arg *a = p;
    contend c = {.per = a->n / CONTENDERS};
    vega_mutex_init(&c.mu);
    vega_sem_init(&c.sem, SEM_PERMITS);
    int rc = vega_mpsc_new(&c.ch, CHAN_CAP);
    if (rc != 0)
        die("vega_mpsc_new", rc);
    vega_task *h[CONTENDERS];
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < CONTENDERS; i++) {
        rc = vega_task_spawn(&h[i], fn, &c);
        if (rc != 0)
            die("vega_task_spawn", rc);
    }
    uint64_t got = 0, want = c.per * CONTENDERS;
    if (chan) {
        uint64_t sum = 0;
        for (uint64_t i = 0; i < want; i++) {
            void *v;
            rc = vega_mpsc_recv(c.ch, &v, VEGA_DEADLINE_NEVER);
            if (rc != 0)
                die("vega_mpsc_recv", rc);
            sum += (uintptr_t)v;
        }
        got = sum;
        want = CONTENDERS * (c.per * (c.per + 1) / 2);
    }
    for (unsigned i = 0; i < CONTENDERS; i++) {
        rc = vega_task_join(h[i], NULL, VEGA_DEADLINE_NEVER);
        if (rc != 0)
            die("vega_task_join", rc);
    }
    a->ns = now_ns() - t0;
    if (!chan)
        got = c.counter + atomic_load_explicit(&c.acounter, memory_order_relaxed);
    if (got != want) {
        fprintf(stderr, "vega-sched-bench: contended: got %" PRIu64 ", want %" PRIu64 "\n", got,
                want);
        exit(1);
    }
    vega_mpsc_free(c.ch);
    vega_sem_fini(&c.sem);
    vega_mutex_fini(&c.mu);
    return NULL;
}

static void *bench_mutex(void *p)
{
    return bench_contend(p, mutex_fn, false);
}

static void *bench_sem(void *p)
{
    return bench_contend(p, sem_fn, false);
}

static void *bench_chan(void *p)
{
    return bench_contend(p, producer_fn, true);
}

/* ------------------------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: vega-sched-bench <spawn|yield|pingpong|sleep|tree|ring|mutex|sem|chan> "
                    "<current|multi> <n>\n");
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
    } else if (strcmp(bench, "sleep") == 0) {
        fn = bench_sleep;
    } else if (strcmp(bench, "tree") == 0) {
        if (n > 40)
            usage();
        fn = bench_tree;
        ops = (UINT64_C(1) << n) - 1;
    } else if (strcmp(bench, "ring") == 0) {
        fn = bench_ring;
        ops = n * RING_ROUNDS;
    } else if (strcmp(bench, "mutex") == 0 || strcmp(bench, "sem") == 0 ||
               strcmp(bench, "chan") == 0) {
        fn = bench[0] == 'm' ? bench_mutex : bench[0] == 's' ? bench_sem : bench_chan;
        ops = n / CONTENDERS * CONTENDERS;
        if (ops == 0)
            usage();
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
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("vega %s %s %.1f %ld\n", bench, flavor, (double)a.ns / (double)(ops ? ops : 1),
           ru.ru_maxrss);
    return 0;
}
