/* SPDX-License-Identifier: MIT */
/* Tasks: spawn/join/detach, yield, sleep, cancel, deadlines, groups, 1,000,000 tasks. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <vega/rt.h>
#include <vega/sync.h>
#include <vega/test.h>

#include "vtest.h"

static unsigned scale(void)
{
    const char *s = getenv("VEGA_TEST_SCALE");
    unsigned v = s ? (unsigned)atoi(s) : 1;
    return v ? v : 1;
}

/* Runs root as the root task of a current-thread runtime on the paused clock. */
static void run_paused(vega_task_fn root)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.flavor = VEGA_RT_CURRENT_THREAD;
    o.driver = vtest_driver();
    o.paused_clock = true;
    vega_rt *rt;
    VCHECK_EQ(vega_rt_new(&rt, &o), 0);
    VCHECK_EQ(vega_rt_block_on(rt, root, NULL, NULL), 0);
    vega_rt_free(rt);
}

static vega_rt *make_rt(vega_rt_flavor flavor, unsigned workers)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.flavor = flavor;
    o.workers = workers;
    o.driver = vtest_driver();
    vega_rt *rt = NULL;
    int r = vega_rt_new(&rt, &o);
    if (r < 0)
        vtest_fail(__FILE__, __LINE__, "vega_rt_new: %s", vega_strerror(r));
    return rt;
}

static void *ret_arg(void *arg)
{
    return arg;
}

static void *root_spawn_join(void *arg)
{
    (void)arg;
    vega_task *t[16];
    for (uintptr_t i = 0; i < 16; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], ret_arg, (void *)(i + 1)), 0);
    uintptr_t sum = 0;
    for (int i = 0; i < 16; i++) {
        void *res;
        VCHECK_EQ(vega_task_join(t[i], &res, VEGA_DEADLINE_NEVER), 0);
        sum += (uintptr_t)res;
    }
    return (void *)sum;
}

VTEST(spawn_join_current)
{
    vega_rt *rt = make_rt(VEGA_RT_CURRENT_THREAD, 1);
    void *res;
    VCHECK_EQ(vega_rt_block_on(rt, root_spawn_join, NULL, &res), 0);
    VCHECK_EQ((uintptr_t)res, 136);
    vega_rt_free(rt);
}

VTEST(spawn_join_multi)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 4);
    void *res;
    VCHECK_EQ(vega_rt_block_on(rt, root_spawn_join, NULL, &res), 0);
    VCHECK_EQ((uintptr_t)res, 136);
    VCHECK_EQ(vega_rt_block_on(rt, root_spawn_join, NULL, &res), 0);
    VCHECK_EQ((uintptr_t)res, 136);
    vega_rt_free(rt);
}

static void *nothing(void *arg)
{
    return arg;
}

static void *root_million(void *arg)
{
    size_t n = (size_t)(uintptr_t)arg;
    vega_task **ts = malloc(n * sizeof *ts);
    VCHECK(ts);
    for (size_t i = 0; i < n; i++)
        VCHECK_EQ(vega_task_spawn(&ts[i], nothing, (void *)(uintptr_t)i), 0);
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        void *res;
        VCHECK_EQ(vega_task_join(ts[i], &res, VEGA_DEADLINE_NEVER), 0);
        ok += (uintptr_t)res == i;
    }
    free(ts);
    return (void *)ok;
}

VTEST(million_tasks_multi)
{
    size_t n = 1000000 / scale();
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    void *res;
    VCHECK_EQ(vega_rt_block_on(rt, root_million, (void *)(uintptr_t)n, &res), 0);
    VCHECK_EQ((uintptr_t)res, n);
    vega_rt_metrics m;
    vega_rt_get_metrics(rt, &m);
    VCHECK_EQ(m.live_tasks, 0);
    vega_rt_free(rt);
}

VTEST(million_tasks_current)
{
    size_t n = 1000000 / scale();
    vega_rt *rt = make_rt(VEGA_RT_CURRENT_THREAD, 1);
    void *res;
    VCHECK_EQ(vega_rt_block_on(rt, root_million, (void *)(uintptr_t)n, &res), 0);
    VCHECK_EQ((uintptr_t)res, n);
    vega_rt_free(rt);
}

static atomic_int detached_ran;
static void *detached_body(void *arg)
{
    (void)arg;
    vega_yield();
    atomic_fetch_add(&detached_ran, 1);
    return NULL;
}

static void *root_detach(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++)
        VCHECK_EQ(vega_task_spawn(NULL, detached_body, NULL), 0);
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, detached_body, NULL), 0);
    vega_task_detach(t);
    while (atomic_load(&detached_ran) < 101)
        VCHECK_EQ(vega_sleep_ms(1), 0);
    return NULL;
}

VTEST(detach)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    VCHECK_EQ(vega_rt_block_on(rt, root_detach, NULL, NULL), 0);
    vega_rt_free(rt);
}

static void *root_sleep(void *arg)
{
    (void)arg;
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_sleep_ms(20), 0);
    vega_tstamp dt = vega_now() - t0;
    VCHECK(dt >= 20 * VEGA_NS_PER_MS);
    /* A deadline in the past: at once. */
    VCHECK_EQ(vega_sleep_until(vega_now() - 1), 0);
    return NULL;
}

VTEST(sleep)
{
    vega_rt *rt = make_rt(VEGA_RT_CURRENT_THREAD, 1);
    VCHECK_EQ(vega_rt_block_on(rt, root_sleep, NULL, NULL), 0);
    vega_rt_free(rt);
    rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    VCHECK_EQ(vega_rt_block_on(rt, root_sleep, NULL, NULL), 0);
    vega_rt_free(rt);
}

static void *long_sleeper_hour(void *arg)
{
    (void)arg;
    VCHECK_EQ(vega_sleep_ms(3600 * 1000), 0);
    return NULL;
}

/* Many sleepers with different deadlines wake in deadline order (timer wheel levels). On the
 * paused clock, so every deadline is taken at the same instant: on the real clock a slow spawn
 * loop (a sanitizer, a busy machine) can put the 1 ms sleeper's deadline after the 3 ms one's. */
static atomic_int order_pos;
static int order[64];
static void *sleeper(void *arg)
{
    uintptr_t ms = (uintptr_t)arg;
    VCHECK_EQ(vega_sleep_ms(ms), 0);
    order[atomic_fetch_add(&order_pos, 1)] = (int)ms;
    return NULL;
}

static void *root_sleep_order(void *arg)
{
    (void)arg;
    static const int ms[] = {90, 3, 70, 1, 150, 40, 5, 120, 66, 10};
    vega_task *t[10];
    for (int i = 0; i < 10; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], sleeper, (void *)(uintptr_t)ms[i]), 0);
    for (int i = 0; i < 10; i++)
        VCHECK_EQ(vega_task_join(t[i], NULL, VEGA_DEADLINE_NEVER), 0);
    for (int i = 1; i < 10; i++)
        VCHECK(order[i - 1] <= order[i]);
    return NULL;
}

VTEST(sleep_order)
{
    run_paused(root_sleep_order);
}

/* join_all hands back every result in order; on a timeout it says how many were joined and
 * the rest stay joinable. */
static void *root_join_all(void *arg)
{
    (void)arg;
    vega_task *t[8];
    void *res[8];
    for (uintptr_t i = 0; i < 8; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], ret_arg, (void *)(i * 3)), 0);
    size_t joined = 99;
    VCHECK_EQ(vega_task_join_all(t, 8, res, &joined, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(joined, 8);
    for (uintptr_t i = 0; i < 8; i++)
        VCHECK(res[i] == (void *)(i * 3));
    VCHECK_EQ(vega_task_join_all(t, 0, NULL, &joined, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(joined, 0);

    /* two quick tasks, then one that sleeps an hour (paused clock: no real time) */
    VCHECK_EQ(vega_task_spawn(&t[0], ret_arg, (void *)1), 0);
    VCHECK_EQ(vega_task_spawn(&t[1], ret_arg, (void *)2), 0);
    VCHECK_EQ(vega_task_spawn(&t[2], long_sleeper_hour, NULL), 0);
    VCHECK_EQ(vega_task_join_all(t, 3, res, &joined, vega_deadline_in_ms(10)), -ETIMEDOUT);
    VCHECK_EQ(joined, 2);
    VCHECK(res[0] == (void *)1 && res[1] == (void *)2);
    VCHECK_EQ(vega_task_join_all(t + 2, 1, NULL, NULL, VEGA_DEADLINE_NEVER), 0);
    return NULL;
}

VTEST(join_all)
{
    run_paused(root_join_all);
}

static void *long_sleeper(void *arg)
{
    (void)arg;
    int r = vega_sleep_ms(60000);
    return (void *)(intptr_t)r;
}

static void *root_cancel(void *arg)
{
    (void)arg;
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, long_sleeper, NULL), 0);
    VCHECK_EQ(vega_sleep_ms(5), 0);
    vega_task_cancel(t);
    void *res;
    VCHECK_EQ(vega_task_join(t, &res, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ((intptr_t)res, -ECANCELED); /* not 0: the minute of sleep was cut short */
    /* Cancel before it ever ran. */
    VCHECK_EQ(vega_task_spawn(&t, long_sleeper, NULL), 0);
    vega_task_cancel(t);
    VCHECK_EQ(vega_task_join(t, &res, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ((intptr_t)res, -ECANCELED);
    /* Cancel of a finished task is a no-op. */
    VCHECK_EQ(vega_task_spawn(&t, nothing, NULL), 0);
    while (!vega_task_is_finished(t))
        vega_yield();
    vega_task_cancel(t);
    VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
    return NULL;
}

VTEST(cancel)
{
    vega_rt *rt = make_rt(VEGA_RT_CURRENT_THREAD, 1);
    VCHECK_EQ(vega_rt_block_on(rt, root_cancel, NULL, NULL), 0);
    vega_rt_free(rt);
    rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    VCHECK_EQ(vega_rt_block_on(rt, root_cancel, NULL, NULL), 0);
    vega_rt_free(rt);
}

/* Cancel racing a deadline and a wake, many times, across workers. */
static void *short_sleeper(void *arg)
{
    int r = vega_sleep_ms((uintptr_t)arg);
    VCHECK(r == 0 || r == -ECANCELED);
    return NULL;
}

static void *root_cancel_race(void *arg)
{
    (void)arg;
    unsigned n = 2000 / scale();
    for (unsigned i = 0; i < n; i++) {
        vega_task *t;
        VCHECK_EQ(vega_task_spawn(&t, short_sleeper, (void *)(uintptr_t)(i % 3)), 0);
        if (i % 2)
            vega_yield();
        vega_task_cancel(t);
        VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
    }
    return NULL;
}

VTEST(cancel_deadline_race)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    VCHECK_EQ(vega_rt_block_on(rt, root_cancel_race, NULL, NULL), 0);
    vega_rt_free(rt);
}

static void *root_join_timeout(void *arg)
{
    (void)arg;
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, long_sleeper, NULL), 0);
    VCHECK_EQ(vega_task_join(t, NULL, vega_deadline_in_ms(10)), -ETIMEDOUT);
    VCHECK_EQ(vega_task_join(t, NULL, 0), -ETIMEDOUT);
    vega_task_cancel(t);
    VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
    return NULL;
}

VTEST(join_timeout)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    VCHECK_EQ(vega_rt_block_on(rt, root_join_timeout, NULL, NULL), 0);
    vega_rt_free(rt);
}

/* Every code rt.h's sleep documents, each on the path that gives it. */
static void *sleeper_cancelled(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)vega_sleep_ms(60000);
}

static void *root_sleep_codes(void *arg)
{
    (void)arg;
    VCHECK_EQ(vega_sleep_ms(1), 0);
    VCHECK_EQ(vega_sleep_until(0), 0); /* already passed: 0, not an error */
    vega_deadline saved = vega_deadline_push(vega_deadline_in_ms(5));
    VCHECK_EQ(vega_sleep_ms(1000), -ETIMEDOUT);
    vega_deadline_pop(saved);
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, sleeper_cancelled, NULL), 0);
    VCHECK_EQ(vega_sleep_ms(1), 0);
    vega_task_cancel(t);
    void *res;
    VCHECK_EQ(vega_task_join(t, &res, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ((intptr_t)res, -ECANCELED);
    return NULL;
}

VTEST(sleep_returns_its_documented_codes)
{
    VCHECK_EQ(vega_sleep_ms(1), VEGA_ERR_NOTASK);
    VCHECK_EQ(vega_sleep_until(0), VEGA_ERR_NOTASK);
    vega_rt *rt = NULL;
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.flavor = VEGA_RT_CURRENT_THREAD;
    o.paused_clock = true;
    VCHECK_EQ(vega_rt_new(&rt, &o), 0);
    VCHECK_EQ(vega_rt_block_on(rt, root_sleep_codes, NULL, NULL), 0);
    vega_rt_free(rt);
}

static void *root_scope(void *arg)
{
    (void)arg;
    vega_tstamp t0 = vega_now();
    vega_deadline saved = vega_deadline_push(vega_deadline_in_ms(20));
    VCHECK_EQ(vega_sleep_ms(10000), -ETIMEDOUT); /* not 0: the scope cut it short */
    VCHECK_WAITED(t0, 20);
    /* Nested: the earlier one wins, the later one does not extend it. */
    vega_deadline inner = vega_deadline_push(vega_deadline_in_ms(100000));
    VCHECK_EQ(vega_sleep_ms(10000), -ETIMEDOUT);
    vega_deadline_pop(inner);
    vega_deadline_pop(saved);
    VCHECK_EQ(vega_sleep_ms(1), 0);
    return NULL;
}

VTEST(deadline_scope)
{
    vega_rt *rt = make_rt(VEGA_RT_CURRENT_THREAD, 1);
    VCHECK_EQ(vega_rt_block_on(rt, root_scope, NULL, NULL), 0);
    vega_rt_free(rt);
}

static void *task_deadline_body(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)vega_sleep_ms(10000);
}

static void *root_task_deadline(void *arg)
{
    (void)arg;
    vega_spawn_opts so = {.name = "capped", .deadline = vega_deadline_in_ms(15)};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn_ex(&t, task_deadline_body, NULL, &so), 0);
    void *res;
    VCHECK_EQ(vega_task_join(t, &res, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ((intptr_t)res, -ETIMEDOUT);
    return NULL;
}

VTEST(task_deadline)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    VCHECK_EQ(vega_rt_block_on(rt, root_task_deadline, NULL, NULL), 0);
    vega_rt_free(rt);
}

/* A task that never waits cannot starve another one: the budget makes it yield. */
static atomic_bool stop_spinner;
static void *spinner(void *arg)
{
    (void)arg;
    uint64_t n = 0;
    while (!atomic_load(&stop_spinner)) {
        vega_coop(); /* what every non-suspending libvega op does */
        n++;
    }
    return (void *)(uintptr_t)n;
}

static void *root_budget(void *arg)
{
    (void)arg;
    vega_task *s;
    VCHECK_EQ(vega_task_spawn(&s, spinner, NULL), 0);
    /* The root yields to let the spinner start, then must get the CPU back. */
    VCHECK_EQ(vega_yield(), 0);
    VCHECK_EQ(vega_sleep_ms(5), 0);
    atomic_store(&stop_spinner, true);
    void *n;
    VCHECK_EQ(vega_task_join(s, &n, VEGA_DEADLINE_NEVER), 0);
    VCHECK((uintptr_t)n > 0);
    return NULL;
}

VTEST(budget_no_starvation)
{
    vega_rt *rt = make_rt(VEGA_RT_CURRENT_THREAD, 1);
    VCHECK_EQ(vega_rt_block_on(rt, root_budget, NULL, NULL), 0);
    vega_worker_metrics m;
    VCHECK_EQ(vega_rt_get_worker_metrics(rt, 0, &m), 0);
    VCHECK(m.budget_yields > 0);
    vega_rt_free(rt);
}

/* Work is stolen when one worker is flooded. The tasks run on the spawner's worker until one
 * of them has run elsewhere (each yields between pieces of work, so the queue stays full for
 * the idle worker to steal from), however late the OS lets the other worker run: the test
 * waits for a steal rather than betting that one happens while the work lasts. The bound (20 s)
 * is for a scheduler that never wakes an idle worker. */
static atomic_bool flood_stolen;
static int flood_home;
static vega_tstamp flood_until;

static void *busy(void *arg)
{
    (void)arg;
    volatile uint64_t x = 0;
    for (;;) {
        for (int i = 0; i < 20000; i++)
            x = x + (uint64_t)i;
        if (vega_worker_index() != flood_home)
            atomic_store(&flood_stolen, true);
        if (atomic_load(&flood_stolen) || vega_now() > flood_until)
            break;
        (void)vega_yield();
    }
    return (void *)(uintptr_t)vega_worker_index();
}

static void *root_flood(void *arg)
{
    (void)arg;
    enum {
        N = 200
    }; /* fits the 256-slot local queue: the idle worker can only steal */
    static vega_task *t[N];
    atomic_store(&flood_stolen, false);
    flood_home = vega_worker_index();
    flood_until = vega_now() + 20 * VEGA_NS_PER_S;
    for (int i = 0; i < N; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], busy, NULL), 0);
    int ran_elsewhere = 0, me = vega_worker_index();
    for (int i = 0; i < N; i++) {
        void *res;
        VCHECK_EQ(vega_task_join(t[i], &res, VEGA_DEADLINE_NEVER), 0);
        ran_elsewhere += (int)(intptr_t)res != me;
    }
    return (void *)(intptr_t)ran_elsewhere;
}

VTEST(work_stealing)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    void *res;
    VCHECK_EQ(vega_rt_block_on(rt, root_flood, NULL, &res), 0);
    uint64_t steals = 0;
    for (unsigned i = 0; i < 2; i++) {
        vega_worker_metrics m;
        VCHECK_EQ(vega_rt_get_worker_metrics(rt, i, &m), 0);
        steals += m.steals;
    }
    VCHECK(steals > 0);
    VCHECK((intptr_t)res > 0);
    vega_rt_free(rt);
}

/* Groups: wait for all; free cancels the rest. */
static atomic_int group_done, group_cancelled;
static void *member(void *arg)
{
    int r = vega_sleep_ms((uintptr_t)arg);
    atomic_fetch_add(&group_done, 1);
    if (r == -ECANCELED)
        atomic_fetch_add(&group_cancelled, 1);
    return (void *)(intptr_t)r;
}

static void *root_group(void *arg)
{
    (void)arg;
    vega_group *g;
    VCHECK_EQ(vega_group_new(&g), 0);
    for (int i = 0; i < 10; i++)
        VCHECK_EQ(vega_group_spawn(g, member, (void *)(uintptr_t)(i % 4)), 0);
    VCHECK_EQ(vega_group_wait(g, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(atomic_load(&group_done), 10);
    VCHECK_EQ(vega_group_live(g), 0);
    /* Members that would sleep for a minute: the wait times out, free cancels them. */
    for (int i = 0; i < 10; i++)
        VCHECK_EQ(vega_group_spawn(g, member, (void *)(uintptr_t)60000), 0);
    VCHECK_EQ(vega_group_wait(g, vega_deadline_in_ms(10)), -ETIMEDOUT);
    VCHECK_EQ(vega_group_live(g), 10);
    VCHECK_EQ(atomic_load(&group_cancelled), 0);
    vega_group_free(g);
    VCHECK_EQ(atomic_load(&group_done), 20);
    VCHECK_EQ(atomic_load(&group_cancelled), 10); /* cut short, not slept out */
    return NULL;
}

VTEST(group)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    VCHECK_EQ(vega_rt_block_on(rt, root_group, NULL, NULL), 0);
    vega_rt_free(rt);
}

/* Blocking pool. */
static void *blocking_sleep(void *arg)
{
    usleep((useconds_t)(uintptr_t)arg);
    return (void *)42;
}

static void *root_blocking(void *arg)
{
    (void)arg;
    void *res = NULL;
    VCHECK_EQ(vega_blocking(blocking_sleep, (void *)1000, &res, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ((uintptr_t)res, 42);
    /* Deadline passes while the job runs: the call waits for it, then reports the timeout. */
    VCHECK_EQ(vega_blocking(blocking_sleep, (void *)50000, &res, vega_deadline_in_ms(5)),
              -ETIMEDOUT);
    return NULL;
}

/* A job that holds its pool thread until the test opens the gate: "the pool is busy" is then
 * a state the test made, not a guess that a 100 ms job still runs after a 20 ms nap. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static atomic_int gate_held;

static void *gate_job(void *arg)
{
    (void)arg;
    atomic_fetch_add(&gate_held, 1);
    pthread_mutex_lock(&gate_mu);
    while (!gate_open)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    return (void *)42;
}

static void *hold_pool(void *arg)
{
    (void)arg;
    void *res = NULL;
    int r = vega_blocking(gate_job, NULL, &res, VEGA_DEADLINE_NEVER);
    return (void *)(intptr_t)(r == 0 && (uintptr_t)res == 42 ? 0 : r ? r : -1);
}

static uint64_t pool_queued(void)
{
    vega_rt_metrics m;
    vega_rt_get_metrics(vega_rt_current(), &m);
    return m.blocking_queue;
}

static void *root_blocking_full(void *arg)
{
    (void)arg;
    vega_task *t[2];
    for (int i = 0; i < 2; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], hold_pool, NULL), 0);
    while (atomic_load(&gate_held) < 2) /* both threads busy (blocking_threads = 2) */
        VCHECK_EQ(vega_sleep_ms(1), 0);
    VCHECK_EQ(vega_blocking_try(blocking_sleep, (void *)1, NULL, VEGA_DEADLINE_NEVER),
              VEGA_ERR_FULL);
    /* The queue takes one (blocking_queue = 1), the next is refused. */
    vega_task *q;
    VCHECK_EQ(vega_task_spawn(&q, hold_pool, NULL), 0);
    while (pool_queued() < 1)
        VCHECK_EQ(vega_sleep_ms(1), 0);
    VCHECK_EQ(vega_blocking(blocking_sleep, (void *)1, NULL, VEGA_DEADLINE_NEVER), VEGA_ERR_FULL);
    VCHECK_EQ(atomic_load(&gate_held), 2); /* the queued job waits for a thread */
    pthread_mutex_lock(&gate_mu);
    gate_open = true;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    void *res;
    for (int i = 0; i < 2; i++) {
        VCHECK_EQ(vega_task_join(t[i], &res, VEGA_DEADLINE_NEVER), 0);
        VCHECK_EQ((intptr_t)res, 0);
    }
    VCHECK_EQ(vega_task_join(q, &res, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ((intptr_t)res, 0);
    VCHECK_EQ(atomic_load(&gate_held), 3); /* and ran once one was free */
    return NULL;
}

VTEST(blocking_pool)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    VCHECK_EQ(vega_rt_block_on(rt, root_blocking, NULL, NULL), 0);
    vega_rt_free(rt);
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.driver = vtest_driver();
    o.workers = 2;
    o.blocking_threads = 2;
    o.blocking_queue = 1;
    VCHECK_EQ(vega_rt_new(&rt, &o), 0);
    VCHECK_EQ(vega_rt_block_on(rt, root_blocking_full, NULL, NULL), 0);
    vega_rt_free(rt);
}

/* Seeded runtime: the same seed gives the same schedule. */
static void *chatter(void *arg)
{
    for (int i = 0; i < 5; i++)
        vega_yield();
    return arg;
}

static void *root_seeded(void *arg)
{
    (void)arg;
    vega_task *t[20];
    for (int i = 0; i < 20; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], chatter, NULL), 0);
    for (int i = 0; i < 20; i++)
        VCHECK_EQ(vega_task_join(t[i], NULL, VEGA_DEADLINE_NEVER), 0);
    return NULL;
}

static uint64_t seeded_hash(uint64_t seed)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.flavor = VEGA_RT_CURRENT_THREAD;
    o.driver = vtest_driver();
    o.seeded = true;
    o.seed = seed;
    vega_rt *rt;
    VCHECK_EQ(vega_rt_new(&rt, &o), 0);
    VCHECK_EQ(vega_rt_block_on(rt, root_seeded, NULL, NULL), 0);
    uint64_t h = vega_test_schedule_hash(rt);
    vega_rt_free(rt);
    return h;
}

VTEST(seeded_schedule)
{
    uint64_t a = seeded_hash(7), b = seeded_hash(7), c = seeded_hash(8);
    VCHECK(a == b);
    VCHECK(a != c);
}

/* Paused clock: an hour of sleep takes no time. */
static void *root_paused(void *arg)
{
    (void)arg;
    VCHECK_EQ(vega_now(), 0);
    VCHECK_EQ(vega_sleep_ms(3600 * 1000), 0);
    VCHECK(vega_now() >= 3600 * VEGA_NS_PER_S);
    vega_tstamp before = vega_now();
    VCHECK_EQ(vega_test_advance(5 * VEGA_NS_PER_MS), 0);
    VCHECK_EQ(vega_now(), before + 5 * VEGA_NS_PER_MS);
    return NULL;
}

VTEST(paused_clock)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.flavor = VEGA_RT_CURRENT_THREAD;
    o.driver = vtest_driver();
    o.paused_clock = true;
    vega_rt *rt;
    VCHECK_EQ(vega_rt_new(&rt, &o), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    VCHECK_EQ(vega_rt_block_on(rt, root_paused, NULL, NULL), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    VCHECK(t1.tv_sec - t0.tv_sec < 3600); /* less wall time than the hour it slept */
    vega_rt_free(rt);
}

/* Signals reach a task through signalfd. */
static void *root_signal(void *arg)
{
    (void)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    kill(getpid(), SIGUSR1);
    int signo = 0;
    VCHECK_EQ(vega_signal_wait(&set, &signo, vega_deadline_in_ms(5000)), 0);
    VCHECK_EQ(signo, SIGUSR1);
    VCHECK_EQ(vega_signal_wait(&set, &signo, vega_deadline_in_ms(10)), -ETIMEDOUT);
    return NULL;
}

VTEST(signal_wait)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    VCHECK_EQ(vega_signal_block(&set), 0);
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    VCHECK_EQ(vega_rt_block_on(rt, root_signal, NULL, NULL), 0);
    vega_rt_free(rt);
}

VTEST(metrics_prometheus)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    VCHECK_EQ(vega_rt_block_on(rt, root_spawn_join, NULL, NULL), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    VCHECK_EQ(vega_rt_metrics_prometheus(rt, f), 0);
    fclose(f);
    VCHECK(strstr(buf, "vega_worker_spawned_total{worker=\"0\"}"));
    VCHECK(strstr(buf, "# TYPE vega_worker_polls_total counter"));
    free(buf);
    vega_rt_free(rt);
}

/* A task blocked forever is cancelled by vega_rt_free. */
static void *forever(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)vega_sleep_until(VEGA_DEADLINE_NEVER);
}

static void *root_leave_behind(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10; i++)
        VCHECK_EQ(vega_task_spawn(NULL, forever, NULL), 0);
    return NULL;
}

VTEST(free_cancels_live_tasks)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    VCHECK_EQ(vega_rt_block_on(rt, root_leave_behind, NULL, NULL), 0);
    vega_rt_free(rt);
    rt = make_rt(VEGA_RT_CURRENT_THREAD, 1);
    VCHECK_EQ(vega_rt_block_on(rt, root_leave_behind, NULL, NULL), 0);
    vega_rt_free(rt);
}

VTEST(spawn_outside_task)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, nothing, NULL), VEGA_ERR_NOTASK);
    VCHECK_EQ(vega_rt_spawn(rt, &t, ret_arg, (void *)7), 0);
    void *res;
    VCHECK_EQ(vega_task_join(t, &res, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ((uintptr_t)res, 7);
    vega_rt_free(rt);
}

VTEST(options_rejected)
{
    vega_rt_opts o;
    vega_rt *rt = NULL;
    vega_rt_opts_init(&o);
    o.seeded = true; /* a seeded schedule needs the current-thread flavour */
    VCHECK_EQ(vega_rt_new(&rt, &o), -EINVAL);
    vega_rt_opts_init(&o);
    o.paused_clock = true;
    VCHECK_EQ(vega_rt_new(&rt, &o), -EINVAL);
    vega_rt_opts_init(&o);
    o.workers = 100000;
    VCHECK_EQ(vega_rt_new(&rt, &o), -EINVAL);
    vega_rt_opts_init(&o);
    o.flavor = (vega_rt_flavor)42;
    VCHECK_EQ(vega_rt_new(&rt, &o), -EINVAL);
    VCHECK(rt == NULL);
}

static void *root_block_on_nested(void *arg)
{
    /* block_on from inside a task would deadlock the worker: refused. */
    return (void *)(intptr_t)vega_rt_block_on((vega_rt *)arg, nothing, NULL, NULL);
}

VTEST(block_on_from_task_refused)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    void *res;
    VCHECK_EQ(vega_rt_block_on(rt, root_block_on_nested, rt, &res), 0);
    VCHECK_EQ((intptr_t)res, -EDEADLK);
    vega_rt_free(rt);
}

/* ---- work-first join: a child joined before it ever ran runs inline on the joiner's stack ---- */

struct probe {
    uintptr_t frame; /* the child's frame address */
    vega_task *self; /* what the child saw as the current task */
    atomic_int ran;
};

static void *frame_probe(void *arg)
{
    struct probe *p = arg;
    p->frame = (uintptr_t)__builtin_frame_address(0);
    p->self = vega_task_current();
    atomic_store(&p->ran, 1);
    return (void *)7;
}

/* A frame within 16 KiB below `me` is on the same stack: another task's stack is a whole
 * stack (64 KiB by default, plus a guard) away. */
static bool on_my_stack(uintptr_t me, uintptr_t frame)
{
    return frame < me && frame + 16384 > me;
}

static void *root_inline(void *arg)
{
    (void)arg;
    uintptr_t me = (uintptr_t)__builtin_frame_address(0);
    struct probe a = {0}, b = {0};
    vega_task *ta, *tb;
    void *res = NULL;
    VCHECK_EQ(vega_task_spawn(&ta, frame_probe, &a), 0);
    VCHECK_EQ(vega_task_join(ta, &res, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ((uintptr_t)res, 7);
    VCHECK(a.self == ta); /* its own identity, not the joiner's */
    VCHECK(on_my_stack(me, a.frame));
    /* Started before the join: it ran on its own stack. */
    VCHECK_EQ(vega_task_spawn(&tb, frame_probe, &b), 0);
    while (!vega_task_is_finished(tb))
        vega_yield();
    VCHECK_EQ(vega_task_join(tb, &res, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ((uintptr_t)res, 7);
    VCHECK(b.self == tb);
    VCHECK(!on_my_stack(me, b.frame));
    return NULL;
}

VTEST(join_runs_unstarted_child_inline)
{
    vega_rt *rt = make_rt(VEGA_RT_CURRENT_THREAD, 1);
    VCHECK_EQ(vega_rt_block_on(rt, root_inline, NULL, NULL), 0);
    vega_rt_free(rt);
}

/* The struct of a child run inline is freed by its join while its stale queue entry still
 * points at it (the entry's count stays with the struct): the next spawn reuses the struct, so
 * two entries point at it and the second child runs inline too; 3,000 of them in a row fit in
 * the first chunk of task structs (1,169) only if each is freed. */
static void *root_inline_frees(void *arg)
{
    vega_rt *rt = arg;
    for (int i = 0; i < 3000; i++) {
        struct probe p = {0};
        vega_task *t;
        VCHECK_EQ(vega_task_spawn(&t, frame_probe, &p), 0);
        VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
        VCHECK(atomic_load(&p.ran));
        vega_yield(); /* the worker pops the stale entry */
    }
    vega_rt_metrics m;
    vega_rt_get_metrics(rt, &m);
    VCHECK_EQ(m.task_chunks, 1);
    return NULL;
}

VTEST(inline_children_are_freed)
{
    vega_rt *rt = make_rt(VEGA_RT_CURRENT_THREAD, 1);
    VCHECK_EQ(vega_rt_block_on(rt, root_inline_frees, rt, NULL), 0);
    vega_rt_free(rt);
}

/* An inline child that parks parks the joiner's stack with it; a cancel of the joiner while it
 * is parked takes effect after the child returned. */
static vega_notify inline_n;

static void *inline_parker(void *arg)
{
    struct probe *p = arg;
    p->frame = (uintptr_t)__builtin_frame_address(0);
    return (void *)(intptr_t)(vega_notify_wait(&inline_n, VEGA_DEADLINE_NEVER) == 0 ? 11 : -1);
}

static void *inline_canceller(void *arg)
{
    vega_task_cancel(arg); /* the joiner, inside its join */
    vega_notify_one(&inline_n);
    return NULL;
}

static void *root_inline_park(void *arg)
{
    (void)arg;
    uintptr_t me = (uintptr_t)__builtin_frame_address(0);
    vega_notify_init(&inline_n);
    struct probe p = {0};
    vega_task *c, *h;
    void *res = NULL;
    VCHECK_EQ(vega_task_spawn(&c, inline_parker, &p), 0);
    VCHECK_EQ(vega_task_spawn(&h, inline_canceller, vega_task_current()), 0);
    /* c runs inline, parks; h runs, cancels this task and wakes c; c returns. */
    VCHECK_EQ(vega_task_join(c, &res, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ((intptr_t)res, 11);
    VCHECK(on_my_stack(me, p.frame));
    VCHECK(vega_task_is_cancelled());
    VCHECK(vega_task_is_finished(h));
    VCHECK_EQ(vega_task_join(h, NULL, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(vega_yield(), -ECANCELED);
    vega_notify_fini(&inline_n);
    return NULL;
}

VTEST(inline_child_parks_and_cancel_waits_for_it)
{
    vega_rt *rt = make_rt(VEGA_RT_CURRENT_THREAD, 1);
    VCHECK_EQ(vega_rt_block_on(rt, root_inline_park, NULL, NULL), 0);
    vega_rt_free(rt);
}

/* A cancelled joiner does not run the child: its join returns -ECANCELED as before. */
static struct probe cancelled_probe; /* the child runs after this root returned */

static void *root_cancelled_joiner(void *arg)
{
    (void)arg;
    vega_task *c;
    vega_task_cancel(vega_task_current());
    VCHECK_EQ(vega_task_spawn(&c, frame_probe, &cancelled_probe), 0);
    VCHECK_EQ(vega_task_join(c, NULL, VEGA_DEADLINE_NEVER), -ECANCELED);
    VCHECK_EQ(atomic_load(&cancelled_probe.ran), 0);
    vega_task_detach(c);
    return NULL;
}

VTEST(cancelled_joiner_does_not_run_child)
{
    vega_rt *rt = make_rt(VEGA_RT_CURRENT_THREAD, 1);
    VCHECK_EQ(vega_rt_block_on(rt, root_cancelled_joiner, NULL, NULL), 0);
    vega_rt_free(rt);
}

/* A joiner that has used more than an eighth of its stack leaves the child its own stack. */
static __attribute__((noinline)) void join_probe(uintptr_t *me, struct probe *p)
{
    *me = (uintptr_t)__builtin_frame_address(0);
    vega_task *c;
    VCHECK_EQ(vega_task_spawn(&c, frame_probe, p), 0);
    VCHECK_EQ(vega_task_join(c, NULL, VEGA_DEADLINE_NEVER), 0);
}

static __attribute__((noinline)) void deep_join(uintptr_t *me, struct probe *p)
{
    /* 40 KiB on the task's real stack (alloca: never on a sanitizer's fake stack): more than
     * an eighth of the default 64 KiB, and of the sanitizers' 256 KiB. */
    volatile char *pad = __builtin_alloca(40 * 1024);
    __asm__ __volatile__("" : : "r"(pad) : "memory"); /* escapes: all 40 KiB are allocated */
    pad[0] = 1;
    pad[40 * 1024 - 1] = 1;
    join_probe(me, p);
    VCHECK(pad[0] == 1);
}

static void *root_deep_joiner(void *arg)
{
    (void)arg;
    uintptr_t me = 0;
    struct probe p = {0};
    deep_join(&me, &p);
    VCHECK(atomic_load(&p.ran));
    VCHECK(!on_my_stack(me, p.frame));
    return NULL;
}

VTEST(deep_joiner_leaves_child_its_own_stack)
{
    vega_rt *rt = make_rt(VEGA_RT_CURRENT_THREAD, 1);
    VCHECK_EQ(vega_rt_block_on(rt, root_deep_joiner, NULL, NULL), 0);
    vega_rt_free(rt);
}

/* Spawn trees on two workers: claims race the other worker's steals, and the leaves yield, so
 * inline children (and the joiners' stacks under them) move between workers. */
static void *yield_tree(void *arg)
{
    uintptr_t depth = (uintptr_t)arg;
    if (depth <= 1) {
        vega_yield();
        return (void *)(uintptr_t)1;
    }
    vega_task *l, *r;
    VCHECK_EQ(vega_task_spawn(&l, yield_tree, (void *)(depth - 1)), 0);
    VCHECK_EQ(vega_task_spawn(&r, yield_tree, (void *)(depth - 1)), 0);
    void *a = NULL, *b = NULL;
    VCHECK_EQ(vega_task_join(l, &a, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(vega_task_join(r, &b, VEGA_DEADLINE_NEVER), 0);
    return (void *)(1 + (uintptr_t)a + (uintptr_t)b);
}

static void *root_yield_trees(void *arg)
{
    vega_rt *rt = arg;
    for (int i = 0; i < 4; i++) {
        void *n = yield_tree((void *)(uintptr_t)12);
        VCHECK_EQ((uintptr_t)n, 4095);
    }
    vega_rt_metrics m;
    vega_rt_get_metrics(rt, &m);
    VCHECK_EQ(m.live_tasks, 1); /* this one */
    return NULL;
}

VTEST(inline_join_trees_multi)
{
    vega_rt *rt = make_rt(VEGA_RT_MULTI_THREAD, 2);
    VCHECK_EQ(vega_rt_block_on(rt, root_yield_trees, rt, NULL), 0);
    vega_rt_free(rt);
}
