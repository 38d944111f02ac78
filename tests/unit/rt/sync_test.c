/* SPDX-License-Identifier: MIT */
/* Tests for lib/rt/sync_{mutex,rwlock,sem,notify,barrier}.c: semantics, try-variants, timeouts,
 * cancellation, and contention on the multi-thread runtime. */
#include <pthread.h>
#include <stdatomic.h>

#include <vega/rt.h>
#include <vega/sync.h>

#include "sync_util.h"
#include "vtest.h"

#define DL20 vega_deadline_in_ms(20)

/* ================================ mutex ================================================== */

static vega_mutex g_static_mutex = VEGA_MUTEX_INIT;

static void *mutex_basic_body(void *arg)
{
    vega_mutex m;
    vega_mutex_init(&m);
    VCHECK_EQ(vega_mutex_lock(&m, VEGA_DEADLINE_NEVER), 0);
    VCHECK(!vega_mutex_trylock(&m));
    VCHECK_EQ(vega_mutex_lock(&m, 0), -ETIMEDOUT);
    CHECK_TIMED_OUT_20MS(vega_mutex_lock(&m, DL20));
    vega_mutex_unlock(&m);
    VCHECK(vega_mutex_trylock(&m));
    vega_mutex_unlock(&m);
    VCHECK_EQ(vega_mutex_lock(&m, 0), 0); /* free: dl 0 still succeeds */
    /* the task's deadline scope caps a wait without a deadline of its own */
    vega_deadline saved = vega_deadline_push(DL20);
    CHECK_TIMED_OUT_20MS(vega_mutex_lock(&m, VEGA_DEADLINE_NEVER));
    vega_deadline_pop(saved);
    vega_mutex_unlock(&m);
    vega_mutex_fini(&m);

    VCHECK(vega_mutex_trylock(&g_static_mutex));
    vega_mutex_unlock(&g_static_mutex);
    return NULL;
}

VTEST(mutex_basic)
{
    VCHECK(run_rt(CT, 1, mutex_basic_body, NULL) == NULL);
}

struct mtx_order {
    vega_mutex m;
    atomic_int started;
    int order[8];
    int n;
};

struct mtx_order_arg {
    struct mtx_order *s;
    int id;
};

static void *mutex_order_waiter(void *arg)
{
    struct mtx_order_arg *a = arg;
    atomic_fetch_add(&a->s->started, 1);
    VCHECK_EQ(vega_mutex_lock(&a->s->m, VEGA_DEADLINE_NEVER), 0);
    a->s->order[a->s->n++] = a->id;
    vega_mutex_unlock(&a->s->m);
    return NULL;
}

/* Waiters get the mutex in arrival order, and unlock hands it over: the unlocker cannot take it
 * back while someone waits. */
static void *mutex_fifo_body(void *arg)
{
    struct mtx_order s = {.n = 0};
    struct mtx_order_arg a[5];
    vega_task *t[5];
    vega_mutex_init(&s.m);
    atomic_init(&s.started, 0);
    VCHECK_EQ(vega_mutex_lock(&s.m, VEGA_DEADLINE_NEVER), 0);
    for (int i = 0; i < 5; i++) {
        a[i] = (struct mtx_order_arg){&s, i};
        VCHECK_EQ(vega_task_spawn(&t[i], mutex_order_waiter, &a[i]), 0);
        await_count(&s.started, i + 1);
    }
    vega_mutex_unlock(&s.m);
    VCHECK(!vega_mutex_trylock(&s.m)); /* handed to waiter 0 */
    join_n(t, 5);
    VCHECK_EQ(s.n, 5);
    for (int i = 0; i < 5; i++)
        VCHECK_EQ(s.order[i], i);
    vega_mutex_fini(&s.m);
    return NULL;
}

VTEST(mutex_fifo_handoff)
{
    VCHECK(run_rt(CT, 1, mutex_fifo_body, NULL) == NULL);
}

struct mtx_cancel {
    vega_mutex m;
    atomic_int started;
};

static void *mutex_cancel_waiter(void *arg)
{
    struct mtx_cancel *s = arg;
    atomic_fetch_add(&s->started, 1);
    int r = vega_mutex_lock(&s->m, VEGA_DEADLINE_NEVER);
    if (r == 0)
        vega_mutex_unlock(&s->m);
    return RC(r);
}

/* A cancelled waiter leaves the queue; the waiter behind it still gets the mutex. */
static void *mutex_cancel_body(void *arg)
{
    struct mtx_cancel s;
    vega_task *a, *b;
    vega_mutex_init(&s.m);
    atomic_init(&s.started, 0);
    VCHECK_EQ(vega_mutex_lock(&s.m, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(vega_task_spawn(&a, mutex_cancel_waiter, &s), 0);
    await_count(&s.started, 1);
    VCHECK_EQ(vega_task_spawn(&b, mutex_cancel_waiter, &s), 0);
    await_count(&s.started, 2);
    vega_task_cancel(a);
    VCHECK_EQ(join_rc(a), -ECANCELED);
    vega_mutex_unlock(&s.m);
    VCHECK_EQ(join_rc(b), 0);
    VCHECK(vega_mutex_trylock(&s.m));
    vega_mutex_unlock(&s.m);
    vega_mutex_fini(&s.m);
    return NULL;
}

VTEST(mutex_cancel)
{
    VCHECK(run_rt(CT, 1, mutex_cancel_body, NULL) == NULL);
}

VTEST(mutex_cancel_mt)
{
    VCHECK(run_rt(MT, 2, mutex_cancel_body, NULL) == NULL);
}

struct mtx_count {
    vega_mutex m;
    atomic_int inside;
    long counter; /* plain: protected by m (TSan checks it) */
    long iters;
};

static void *mutex_count_worker(void *arg)
{
    struct mtx_count *s = arg;
    for (long i = 0; i < s->iters; i++) {
        VCHECK_EQ(vega_mutex_lock(&s->m, VEGA_DEADLINE_NEVER), 0);
        VCHECK_EQ(atomic_fetch_add(&s->inside, 1), 0);
        s->counter++;
        if (i % 64 == 0)
            VCHECK_EQ(vega_yield(), 0); /* hold it across a reschedule now and then */
        atomic_fetch_sub(&s->inside, 1);
        vega_mutex_unlock(&s->m);
    }
    return NULL;
}

static void *mutex_count_body(void *arg)
{
    struct mtx_count s = {.counter = 0, .iters = scaled(10000)};
    vega_task *t[8];
    vega_mutex_init(&s.m);
    atomic_init(&s.inside, 0);
    spawn_n(t, 8, mutex_count_worker, &s);
    join_n(t, 8);
    VCHECK_EQ(s.counter, 8 * s.iters);
    vega_mutex_fini(&s.m);
    return NULL;
}

VTEST(mutex_contention_ct)
{
    VCHECK(run_rt(CT, 1, mutex_count_body, NULL) == NULL);
}

VTEST(mutex_contention_mt2)
{
    VCHECK(run_rt(MT, 2, mutex_count_body, NULL) == NULL);
}

VTEST(mutex_contention_mt4)
{
    VCHECK(run_rt(MT, 4, mutex_count_body, NULL) == NULL);
}

/* A plain thread (outside any task) contends with tasks: it blocks on a futex instead. */
static void *mutex_thread_main(void *arg)
{
    struct mtx_count *s = arg;
    for (long i = 0; i < s->iters; i++) {
        VCHECK_EQ(vega_mutex_lock(&s->m, VEGA_DEADLINE_NEVER), 0);
        VCHECK_EQ(atomic_fetch_add(&s->inside, 1), 0);
        s->counter++;
        atomic_fetch_sub(&s->inside, 1);
        vega_mutex_unlock(&s->m);
    }
    return NULL;
}

static void *mutex_thread_body(void *arg)
{
    struct mtx_count s = {.counter = 0, .iters = scaled(5000)};
    vega_task *t[4];
    pthread_t th;
    vega_mutex_init(&s.m);
    atomic_init(&s.inside, 0);
    VCHECK_EQ(pthread_create(&th, NULL, mutex_thread_main, &s), 0);
    spawn_n(t, 4, mutex_count_worker, &s);
    join_n(t, 4);
    VCHECK_EQ(pthread_join(th, NULL), 0);
    VCHECK_EQ(s.counter, 5 * s.iters);
    vega_mutex_fini(&s.m);
    return NULL;
}

VTEST(mutex_plain_thread)
{
    VCHECK(run_rt(MT, 2, mutex_thread_body, NULL) == NULL);
}

/* A plain thread's timed lock gives up on CLOCK_MONOTONIC. */
VTEST(mutex_plain_thread_timeout)
{
    vega_mutex m;
    vega_mutex_init(&m);
    VCHECK(vega_mutex_trylock(&m));
    VCHECK_EQ(vega_mutex_lock(&m, 0), -ETIMEDOUT);
    CHECK_TIMED_OUT_20MS(vega_mutex_lock(&m, DL20));
    vega_mutex_unlock(&m);
    VCHECK_EQ(vega_mutex_lock(&m, DL20), 0);
    vega_mutex_unlock(&m);
    vega_mutex_fini(&m);
}

/* Timeouts racing with hand-offs: a waiter whose deadline passes just as the mutex is handed to
 * it must report success (and then hold it), or the mutex would stay locked forever. */
static void *mutex_race_worker(void *arg)
{
    struct mtx_count *s = arg;
    long ok = 0;
    for (long i = 0; i < s->iters; i++) {
        int r = vega_mutex_lock(&s->m, vega_deadline_in_ms(1));
        if (r == -ETIMEDOUT)
            continue;
        VCHECK_EQ(r, 0);
        VCHECK_EQ(atomic_fetch_add(&s->inside, 1), 0);
        s->counter++;
        ok++;
        if (i % 8 == 0)
            VCHECK_EQ(vega_sleep_ms(1), 0); /* long enough for the others to time out */
        atomic_fetch_sub(&s->inside, 1);
        vega_mutex_unlock(&s->m);
    }
    return RC(ok);
}

static void *mutex_race_body(void *arg)
{
    struct mtx_count s = {.counter = 0, .iters = scaled(300)};
    vega_task *t[8];
    long ok = 0;
    vega_mutex_init(&s.m);
    atomic_init(&s.inside, 0);
    spawn_n(t, 8, mutex_race_worker, &s);
    for (int i = 0; i < 8; i++)
        ok += join_rc(t[i]);
    VCHECK_EQ(s.counter, ok);
    VCHECK(vega_mutex_trylock(&s.m)); /* nobody kept it by mistake */
    vega_mutex_unlock(&s.m);
    vega_mutex_fini(&s.m);
    return NULL;
}

VTEST(mutex_timeout_race_mt4)
{
    VCHECK(run_rt(MT, 4, mutex_race_body, NULL) == NULL);
}

/* ================================ rwlock ================================================= */

static void *rwlock_basic_body(void *arg)
{
    vega_rwlock l;
    vega_rwlock_init(&l);
    VCHECK(vega_rwlock_tryrdlock(&l));
    VCHECK(vega_rwlock_tryrdlock(&l));
    VCHECK_EQ(vega_rwlock_rdlock(&l, 0), 0);
    VCHECK(!vega_rwlock_trywrlock(&l));
    VCHECK_EQ(vega_rwlock_wrlock(&l, 0), -ETIMEDOUT);
    CHECK_TIMED_OUT_20MS(vega_rwlock_wrlock(&l, DL20));
    vega_rwlock_rdunlock(&l);
    vega_rwlock_rdunlock(&l);
    vega_rwlock_rdunlock(&l);
    VCHECK(vega_rwlock_trywrlock(&l));
    VCHECK(!vega_rwlock_tryrdlock(&l));
    VCHECK(!vega_rwlock_trywrlock(&l));
    CHECK_TIMED_OUT_20MS(vega_rwlock_rdlock(&l, DL20));
    vega_rwlock_wrunlock(&l);
    VCHECK_EQ(vega_rwlock_wrlock(&l, VEGA_DEADLINE_NEVER), 0);
    vega_rwlock_wrunlock(&l);
    vega_rwlock_fini(&l);
    return NULL;
}

VTEST(rwlock_basic)
{
    VCHECK(run_rt(CT, 1, rwlock_basic_body, NULL) == NULL);
}

struct rw_pref {
    vega_rwlock l;
    atomic_int started, got;
};

static void *rw_writer(void *arg)
{
    struct rw_pref *s = arg;
    atomic_fetch_add(&s->started, 1);
    int r = vega_rwlock_wrlock(&s->l, VEGA_DEADLINE_NEVER);
    if (r == 0) {
        atomic_fetch_add(&s->got, 1);
        vega_rwlock_wrunlock(&s->l);
    }
    return RC(r);
}

static void *rw_reader(void *arg)
{
    struct rw_pref *s = arg;
    atomic_fetch_add(&s->started, 1);
    int r = vega_rwlock_rdlock(&s->l, VEGA_DEADLINE_NEVER);
    if (r == 0) {
        atomic_fetch_add(&s->got, 1);
        vega_rwlock_rdunlock(&s->l);
    }
    return RC(r);
}

/* A waiting writer blocks new readers; when the readers leave, the writer goes first. */
static void *rwlock_writer_pref_body(void *arg)
{
    struct rw_pref s;
    vega_task *w, *r;
    vega_rwlock_init(&s.l);
    atomic_init(&s.started, 0);
    atomic_init(&s.got, 0);
    VCHECK_EQ(vega_rwlock_rdlock(&s.l, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(vega_task_spawn(&w, rw_writer, &s), 0);
    await_count(&s.started, 1);
    VCHECK(!vega_rwlock_tryrdlock(&s.l));
    CHECK_TIMED_OUT_20MS(vega_rwlock_rdlock(&s.l, DL20));
    VCHECK_EQ(vega_task_spawn(&r, rw_reader, &s), 0);
    await_count(&s.started, 2);
    VCHECK_EQ(atomic_load(&s.got), 0);
    vega_rwlock_rdunlock(&s.l);
    VCHECK_EQ(join_rc(w), 0);
    VCHECK_EQ(join_rc(r), 0);
    VCHECK_EQ(atomic_load(&s.got), 2);
    vega_rwlock_fini(&s.l);
    return NULL;
}

VTEST(rwlock_writer_preferring)
{
    VCHECK(run_rt(CT, 1, rwlock_writer_pref_body, NULL) == NULL);
}

/* Cancelling the writer at the head lets the readers queued behind it join the current ones. */
static void *rwlock_cancel_body(void *arg)
{
    struct rw_pref s;
    vega_task *w, *r;
    vega_rwlock_init(&s.l);
    atomic_init(&s.started, 0);
    atomic_init(&s.got, 0);
    VCHECK_EQ(vega_rwlock_rdlock(&s.l, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(vega_task_spawn(&w, rw_writer, &s), 0);
    await_count(&s.started, 1);
    VCHECK_EQ(vega_task_spawn(&r, rw_reader, &s), 0);
    await_count(&s.started, 2);
    vega_task_cancel(w);
    VCHECK_EQ(join_rc(w), -ECANCELED);
    VCHECK_EQ(join_rc(r), 0); /* entered while this task still reads */
    VCHECK_EQ(atomic_load(&s.got), 1);
    vega_rwlock_rdunlock(&s.l);
    VCHECK(vega_rwlock_trywrlock(&s.l));
    vega_rwlock_wrunlock(&s.l);
    vega_rwlock_fini(&s.l);
    return NULL;
}

VTEST(rwlock_cancel)
{
    VCHECK(run_rt(CT, 1, rwlock_cancel_body, NULL) == NULL);
}

VTEST(rwlock_cancel_mt)
{
    VCHECK(run_rt(MT, 2, rwlock_cancel_body, NULL) == NULL);
}

struct rw_stress {
    vega_rwlock l;
    atomic_int readers, writers, max_readers, started;
    long value; /* written only under the write lock */
    long iters;
    atomic_int next_id;
};

static void *rw_stress_worker(void *arg)
{
    struct rw_stress *s = arg;
    int id = atomic_fetch_add(&s->next_id, 1);
    /* Opening phase, before any writer exists: a reader holds the lock until a second one
     * is inside too (bounded), so sharing is shown whatever the schedule does later. */
    VCHECK_EQ(vega_rwlock_rdlock(&s->l, VEGA_DEADLINE_NEVER), 0);
    int inside = atomic_fetch_add(&s->readers, 1) + 1;
    int m0 = atomic_load(&s->max_readers);
    while (inside > m0 && !atomic_compare_exchange_weak(&s->max_readers, &m0, inside))
        ;
    for (int k = 0; k < 1000 && atomic_load(&s->max_readers) < 2; k++)
        VCHECK_EQ(vega_yield(), 0);
    atomic_fetch_sub(&s->readers, 1);
    vega_rwlock_rdunlock(&s->l);
    atomic_fetch_add(&s->started, 1);
    while (atomic_load(&s->started) < 8)
        VCHECK_EQ(vega_yield(), 0);
    for (long i = 0; i < s->iters; i++) {
        if ((i + id) % 4 == 0) {
            VCHECK_EQ(vega_rwlock_wrlock(&s->l, VEGA_DEADLINE_NEVER), 0);
            VCHECK_EQ(atomic_fetch_add(&s->writers, 1), 0);
            VCHECK_EQ(atomic_load(&s->readers), 0);
            s->value++;
            if (i % 32 == 0)
                VCHECK_EQ(vega_yield(), 0);
            atomic_fetch_sub(&s->writers, 1);
            vega_rwlock_wrunlock(&s->l);
        } else {
            VCHECK_EQ(vega_rwlock_rdlock(&s->l, VEGA_DEADLINE_NEVER), 0);
            int n = atomic_fetch_add(&s->readers, 1) + 1;
            VCHECK_EQ(atomic_load(&s->writers), 0);
            int m = atomic_load(&s->max_readers);
            while (n > m && !atomic_compare_exchange_weak(&s->max_readers, &m, n))
                ;
            volatile long seen = s->value; /* a read under the read lock */
            (void)seen;
            if (i % 16 == 0)
                VCHECK_EQ(vega_yield(), 0);
            atomic_fetch_sub(&s->readers, 1);
            vega_rwlock_rdunlock(&s->l);
        }
    }
    return NULL;
}

static void *rwlock_stress_body(void *arg)
{
    struct rw_stress s = {.value = 0, .iters = scaled(4000)};
    vega_task *t[8];
    vega_rwlock_init(&s.l);
    atomic_init(&s.readers, 0);
    atomic_init(&s.writers, 0);
    atomic_init(&s.max_readers, 0);
    atomic_init(&s.next_id, 0);
    atomic_init(&s.started, 0);
    spawn_n(t, 8, rw_stress_worker, &s);
    join_n(t, 8);
    long writes = 0;
    for (int id = 0; id < 8; id++)
        for (long i = 0; i < s.iters; i++)
            writes += (i + id) % 4 == 0;
    VCHECK_EQ(s.value, writes);
    /* Readers shared the lock (the opening phase makes sure the schedule allowed it). */
    VCHECK(atomic_load(&s.max_readers) > 1);
    vega_rwlock_fini(&s.l);
    return NULL;
}

VTEST(rwlock_contention_ct)
{
    VCHECK(run_rt(CT, 1, rwlock_stress_body, NULL) == NULL);
}

VTEST(rwlock_contention_mt2)
{
    VCHECK(run_rt(MT, 2, rwlock_stress_body, NULL) == NULL);
}

VTEST(rwlock_contention_mt4)
{
    VCHECK(run_rt(MT, 4, rwlock_stress_body, NULL) == NULL);
}

/* ================================ semaphore ============================================== */

static void *sem_basic_body(void *arg)
{
    vega_sem s;
    vega_sem_init(&s, 3);
    VCHECK_EQ(vega_sem_available(&s), 3);
    VCHECK(vega_sem_try_acquire(&s, 2));
    VCHECK_EQ(vega_sem_available(&s), 1);
    VCHECK(!vega_sem_try_acquire(&s, 2));
    VCHECK_EQ(vega_sem_acquire(&s, 2, 0), -ETIMEDOUT);
    CHECK_TIMED_OUT_20MS(vega_sem_acquire(&s, 2, DL20));
    VCHECK_EQ(vega_sem_acquire(&s, 0, 0), 0);
    VCHECK_EQ(vega_sem_acquire(&s, 1, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(vega_sem_available(&s), 0);
    vega_sem_release(&s, 3);
    VCHECK_EQ(vega_sem_available(&s), 3);
    vega_sem_release(&s, UINT64_MAX); /* saturates */
    VCHECK(vega_sem_available(&s) == UINT64_MAX);
    vega_sem_fini(&s);
    return NULL;
}

VTEST(sem_basic)
{
    VCHECK(run_rt(CT, 1, sem_basic_body, NULL) == NULL);
}

struct sem_arg {
    vega_sem *s;
    uint64_t n;
    atomic_int *started;
    atomic_int *done;
};

static void *sem_acquirer(void *arg)
{
    struct sem_arg *a = arg;
    atomic_fetch_add(a->started, 1);
    int r = vega_sem_acquire(a->s, a->n, VEGA_DEADLINE_NEVER);
    if (r == 0)
        atomic_fetch_add(a->done, 1);
    return RC(r);
}

/* A large waiting acquire is not starved by small ones: while it waits, small requests queue
 * behind it even when permits are free, and it is served first. */
static void *sem_fifo_body(void *arg)
{
    vega_sem s;
    atomic_int started, done;
    vega_task *big, *small;
    vega_sem_init(&s, 0);
    atomic_init(&started, 0);
    atomic_init(&done, 0);
    struct sem_arg a_big = {&s, 5, &started, &done}, a_small = {&s, 1, &started, &done};
    VCHECK_EQ(vega_task_spawn(&big, sem_acquirer, &a_big), 0);
    await_count(&started, 1);
    vega_sem_release(&s, 4);
    VCHECK(!vega_sem_try_acquire(&s, 1)); /* 4 free, but the big one waits first */
    VCHECK_EQ(vega_sem_acquire(&s, 1, 0), -ETIMEDOUT);
    VCHECK_EQ(vega_task_spawn(&small, sem_acquirer, &a_small), 0);
    await_count(&started, 2);
    VCHECK_EQ(atomic_load(&done), 0);
    vega_sem_release(&s, 2); /* 6: big takes 5, then small takes 1 */
    VCHECK_EQ(join_rc(big), 0);
    VCHECK_EQ(join_rc(small), 0);
    VCHECK_EQ(vega_sem_available(&s), 0);
    vega_sem_fini(&s);
    return NULL;
}

VTEST(sem_fifo_large_not_starved)
{
    VCHECK(run_rt(CT, 1, sem_fifo_body, NULL) == NULL);
}

/* Cancelling the waiter at the head lets the smaller one behind it take the free permits. */
static void *sem_cancel_body(void *arg)
{
    vega_sem s;
    atomic_int started, done;
    vega_task *big, *small;
    vega_sem_init(&s, 0);
    atomic_init(&started, 0);
    atomic_init(&done, 0);
    struct sem_arg a_big = {&s, 3, &started, &done}, a_small = {&s, 1, &started, &done};
    VCHECK_EQ(vega_task_spawn(&big, sem_acquirer, &a_big), 0);
    await_count(&started, 1);
    VCHECK_EQ(vega_task_spawn(&small, sem_acquirer, &a_small), 0);
    await_count(&started, 2);
    vega_sem_release(&s, 1);
    VCHECK_EQ(atomic_load(&done), 0);
    vega_task_cancel(big);
    VCHECK_EQ(join_rc(big), -ECANCELED);
    VCHECK_EQ(join_rc(small), 0);
    VCHECK_EQ(vega_sem_available(&s), 0);
    vega_sem_release(&s, 2);
    VCHECK(vega_sem_try_acquire(&s, 2));
    vega_sem_fini(&s);
    return NULL;
}

VTEST(sem_cancel)
{
    VCHECK(run_rt(CT, 1, sem_cancel_body, NULL) == NULL);
}

static void *sem_close_body(void *arg)
{
    vega_sem s;
    atomic_int started, done;
    vega_task *t[3];
    vega_sem_init(&s, 1);
    atomic_init(&started, 0);
    atomic_init(&done, 0);
    struct sem_arg a = {&s, 2, &started, &done};
    for (int i = 0; i < 3; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], sem_acquirer, &a), 0);
    await_count(&started, 3);
    vega_sem_close(&s);
    for (int i = 0; i < 3; i++)
        VCHECK_EQ(join_rc(t[i]), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_sem_acquire(&s, 1, VEGA_DEADLINE_NEVER), VEGA_ERR_CLOSED);
    VCHECK(!vega_sem_try_acquire(&s, 1));
    vega_sem_fini(&s);
    return NULL;
}

VTEST(sem_close)
{
    VCHECK(run_rt(CT, 1, sem_close_body, NULL) == NULL);
}

struct sem_stress {
    vega_sem s;
    atomic_int held, max_held;
    atomic_long acquired;
    long iters;
};

#define SEM_PERMITS 3

static void *sem_stress_worker(void *arg)
{
    struct sem_stress *s = arg;
    for (long i = 0; i < s->iters; i++) {
        uint64_t n = 1 + (uint64_t)(i % 2); /* mix of 1- and 2-permit requests */
        VCHECK_EQ(vega_sem_acquire(&s->s, n, VEGA_DEADLINE_NEVER), 0);
        int h = atomic_fetch_add(&s->held, (int)n) + (int)n;
        VCHECK(h <= SEM_PERMITS);
        int m = atomic_load(&s->max_held);
        while (h > m && !atomic_compare_exchange_weak(&s->max_held, &m, h))
            ;
        if (i % 8 == 0)
            VCHECK_EQ(vega_yield(), 0);
        atomic_fetch_sub(&s->held, (int)n);
        atomic_fetch_add(&s->acquired, 1);
        vega_sem_release(&s->s, n);
    }
    return NULL;
}

static void *sem_stress_body(void *arg)
{
    struct sem_stress s = {.iters = scaled(5000)};
    vega_task *t[8];
    vega_sem_init(&s.s, SEM_PERMITS);
    atomic_init(&s.held, 0);
    atomic_init(&s.max_held, 0);
    atomic_init(&s.acquired, 0);
    spawn_n(t, 8, sem_stress_worker, &s);
    join_n(t, 8);
    VCHECK_EQ(atomic_load(&s.acquired), 8 * s.iters);
    VCHECK(atomic_load(&s.max_held) <= SEM_PERMITS);
    VCHECK(atomic_load(&s.max_held) >= 2);
    VCHECK_EQ(vega_sem_available(&s.s), SEM_PERMITS);
    vega_sem_fini(&s.s);
    return NULL;
}

VTEST(sem_contention_ct)
{
    VCHECK(run_rt(CT, 1, sem_stress_body, NULL) == NULL);
}

VTEST(sem_contention_mt2)
{
    VCHECK(run_rt(MT, 2, sem_stress_body, NULL) == NULL);
}

VTEST(sem_contention_mt4)
{
    VCHECK(run_rt(MT, 4, sem_stress_body, NULL) == NULL);
}

/* Timeouts and cancellation racing with grants: permits are never lost or duplicated. */
static void *sem_race_worker(void *arg)
{
    struct sem_stress *s = arg;
    for (long i = 0;; i++) {
        uint64_t n = 1 + (uint64_t)(i % 2);
        int r = vega_sem_acquire(&s->s, n, vega_deadline_in_ms(1));
        if (r == -ETIMEDOUT)
            continue;
        if (r == -ECANCELED)
            return NULL;
        VCHECK_EQ(r, 0);
        int h = atomic_fetch_add(&s->held, (int)n) + (int)n;
        VCHECK(h <= SEM_PERMITS);
        atomic_fetch_add(&s->acquired, 1);
        if (i % 4 == 0)
            vega_sleep_ms(1); /* may return -ECANCELED: release anyway, exit on the next wait */
        atomic_fetch_sub(&s->held, (int)n);
        vega_sem_release(&s->s, n);
    }
}

static void *sem_race_body(void *arg)
{
    struct sem_stress s = {.iters = 0};
    vega_task *t[8];
    vega_sem_init(&s.s, SEM_PERMITS);
    atomic_init(&s.held, 0);
    atomic_init(&s.max_held, 0);
    atomic_init(&s.acquired, 0);
    spawn_n(t, 8, sem_race_worker, &s);
    VCHECK_EQ(vega_sleep_ms(50 + (uint64_t)scaled(150)), 0);
    for (int i = 0; i < 8; i++)
        vega_task_cancel(t[i]);
    join_n(t, 8);
    VCHECK(atomic_load(&s.acquired) > 0);
    VCHECK_EQ(atomic_load(&s.held), 0);
    VCHECK_EQ(vega_sem_available(&s.s), SEM_PERMITS);
    VCHECK(vega_sem_try_acquire(&s.s, SEM_PERMITS)); /* and nobody is left queued */
    vega_sem_fini(&s.s);
    return NULL;
}

VTEST(sem_timeout_cancel_race_mt4)
{
    VCHECK(run_rt(MT, 4, sem_race_body, NULL) == NULL);
}

/* ================================ notify ================================================= */

static void *notify_permit_body(void *arg)
{
    vega_notify n;
    vega_notify_init(&n);
    VCHECK_EQ(vega_notify_wait(&n, 0), -ETIMEDOUT);
    CHECK_TIMED_OUT_20MS(vega_notify_wait(&n, DL20));
    vega_notify_one(&n);
    vega_notify_one(&n); /* still one permit */
    VCHECK_EQ(vega_notify_wait(&n, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(vega_notify_wait(&n, 0), -ETIMEDOUT);
    vega_notify_all(&n); /* nobody waits: stores nothing */
    VCHECK_EQ(vega_notify_wait(&n, 0), -ETIMEDOUT);
    vega_notify_fini(&n);
    return NULL;
}

VTEST(notify_permit)
{
    VCHECK(run_rt(CT, 1, notify_permit_body, NULL) == NULL);
}

struct notify_s {
    vega_notify n;
    atomic_int started, woken;
};

static void *notify_waiter(void *arg)
{
    struct notify_s *s = arg;
    atomic_fetch_add(&s->started, 1);
    int r = vega_notify_wait(&s->n, VEGA_DEADLINE_NEVER);
    if (r == 0)
        atomic_fetch_add(&s->woken, 1);
    return RC(r);
}

/* notify_one wakes exactly one waiter; notify_all wakes the rest. */
static void *notify_wake_body(void *arg)
{
    struct notify_s s;
    vega_task *t[3];
    vega_notify_init(&s.n);
    atomic_init(&s.started, 0);
    atomic_init(&s.woken, 0);
    spawn_n(t, 3, notify_waiter, &s);
    /* All three queued (not just started: on two workers a late one would miss notify_all,
     * which stores nothing, and wait for ever). */
    await_waiters(&s.n.q_, 3);
    vega_notify_one(&s.n);
    await_count(&s.woken, 1);
    VCHECK_EQ(atomic_load(&s.woken), 1);
    VCHECK_EQ(waiters_queued(&s.n.q_), 2);
    vega_notify_all(&s.n);
    join_n(t, 3);
    VCHECK_EQ(atomic_load(&s.woken), 3);
    VCHECK_EQ(vega_notify_wait(&s.n, 0), -ETIMEDOUT); /* nothing stored */
    vega_notify_fini(&s.n);
    return NULL;
}

VTEST(notify_one_and_all)
{
    VCHECK(run_rt(CT, 1, notify_wake_body, NULL) == NULL);
}

VTEST(notify_one_and_all_mt)
{
    VCHECK(run_rt(MT, 2, notify_wake_body, NULL) == NULL);
}

/* A cancelled waiter is gone: the next notify_one finds nobody and stores a permit. */
static void *notify_cancel_body(void *arg)
{
    struct notify_s s;
    vega_task *t;
    vega_notify_init(&s.n);
    atomic_init(&s.started, 0);
    atomic_init(&s.woken, 0);
    VCHECK_EQ(vega_task_spawn(&t, notify_waiter, &s), 0);
    await_count(&s.started, 1);
    vega_task_cancel(t);
    VCHECK_EQ(join_rc(t), -ECANCELED);
    vega_notify_one(&s.n);
    VCHECK_EQ(vega_notify_wait(&s.n, 0), 0);
    vega_notify_fini(&s.n);
    return NULL;
}

VTEST(notify_cancel)
{
    VCHECK(run_rt(CT, 1, notify_cancel_body, NULL) == NULL);
}

struct ping {
    vega_notify to_a, to_b;
    long rounds;
    long a_count, b_count; /* each written by one task, read after join */
};

static void *notify_pong(void *arg)
{
    struct ping *p = arg;
    for (long i = 0; i < p->rounds; i++) {
        VCHECK_EQ(vega_notify_wait(&p->to_b, VEGA_DEADLINE_NEVER), 0);
        p->b_count++;
        vega_notify_one(&p->to_a);
    }
    return NULL;
}

/* Ping-pong across workers: a notification is never lost (the stored permit covers a notify
 * that lands before the wait). */
static void *notify_pingpong_body(void *arg)
{
    struct ping p = {.rounds = scaled(20000)};
    vega_task *t;
    vega_notify_init(&p.to_a);
    vega_notify_init(&p.to_b);
    VCHECK_EQ(vega_task_spawn(&t, notify_pong, &p), 0);
    for (long i = 0; i < p.rounds; i++) {
        vega_notify_one(&p.to_b);
        VCHECK_EQ(vega_notify_wait(&p.to_a, VEGA_DEADLINE_NEVER), 0);
        p.a_count++;
    }
    VCHECK_EQ(join_rc(t), 0);
    VCHECK_EQ(p.a_count, p.rounds);
    VCHECK_EQ(p.b_count, p.rounds);
    vega_notify_fini(&p.to_a);
    vega_notify_fini(&p.to_b);
    return NULL;
}

VTEST(notify_pingpong_mt2)
{
    VCHECK(run_rt(MT, 2, notify_pingpong_body, NULL) == NULL);
}

VTEST(notify_pingpong_mt4)
{
    VCHECK(run_rt(MT, 4, notify_pingpong_body, NULL) == NULL);
}

/* ================================ barrier ================================================ */

#define BAR_TASKS   4
#define BAR_MAX_GEN 2000

struct bar_s {
    vega_barrier b;
    long gens;
    atomic_int arrived[BAR_MAX_GEN];
    atomic_int leaders[BAR_MAX_GEN];
};

static void *barrier_worker(void *arg)
{
    struct bar_s *s = arg;
    for (long g = 0; g < s->gens; g++) {
        atomic_fetch_add(&s->arrived[g], 1);
        int r = vega_barrier_wait(&s->b, VEGA_DEADLINE_NEVER);
        VCHECK(r == 0 || r == 1);
        /* Nobody leaves generation g before everyone arrived at it. */
        VCHECK_EQ(atomic_load(&s->arrived[g]), BAR_TASKS);
        if (r == 1)
            atomic_fetch_add(&s->leaders[g], 1);
    }
    return NULL;
}

static void *barrier_gen_body(void *arg)
{
    struct bar_s *s = calloc(1, sizeof *s);
    vega_task *t[BAR_TASKS];
    VCHECK(s != NULL);
    s->gens = scaled(BAR_MAX_GEN);
    vega_barrier_init(&s->b, BAR_TASKS);
    spawn_n(t, BAR_TASKS, barrier_worker, s);
    join_n(t, BAR_TASKS);
    for (long g = 0; g < s->gens; g++)
        VCHECK_EQ(atomic_load(&s->leaders[g]), 1);
    vega_barrier_fini(&s->b);
    free(s);
    return NULL;
}

VTEST(barrier_generations_ct)
{
    VCHECK(run_rt(CT, 1, barrier_gen_body, NULL) == NULL);
}

VTEST(barrier_generations_mt2)
{
    VCHECK(run_rt(MT, 2, barrier_gen_body, NULL) == NULL);
}

VTEST(barrier_generations_mt4)
{
    VCHECK(run_rt(MT, 4, barrier_gen_body, NULL) == NULL);
}

struct bar_one {
    vega_barrier *b;
    atomic_int *started;
};

static void *barrier_waiter(void *arg)
{
    struct bar_one *a = arg;
    atomic_fetch_add(a->started, 1);
    return RC(vega_barrier_wait(a->b, VEGA_DEADLINE_NEVER));
}

/* A task that times out or is cancelled no longer counts as arrived. */
static void *barrier_leave_body(void *arg)
{
    vega_barrier b;
    atomic_int started;
    vega_task *t, *u;
    vega_barrier_init(&b, 2);
    atomic_init(&started, 0);
    VCHECK_EQ(vega_barrier_wait(&b, 0), -ETIMEDOUT);
    CHECK_TIMED_OUT_20MS(vega_barrier_wait(&b, DL20));
    struct bar_one a = {&b, &started};
    VCHECK_EQ(vega_task_spawn(&t, barrier_waiter, &a), 0);
    await_count(&started, 1);
    vega_task_cancel(t);
    VCHECK_EQ(join_rc(t), -ECANCELED);
    /* Had either counted, this task would pass alone now. */
    VCHECK_EQ(vega_barrier_wait(&b, 0), -ETIMEDOUT);
    VCHECK_EQ(vega_task_spawn(&u, barrier_waiter, &a), 0);
    await_count(&started, 2);
    int r = vega_barrier_wait(&b, VEGA_DEADLINE_NEVER);
    VCHECK_EQ(r, 1); /* the last to arrive leads */
    VCHECK_EQ(join_rc(u), 0);
    vega_barrier_fini(&b);

    vega_barrier_init(&b, 0); /* 0 behaves as 1 */
    VCHECK_EQ(vega_barrier_wait(&b, 0), 1);
    VCHECK_EQ(vega_barrier_wait(&b, 0), 1);
    vega_barrier_fini(&b);
    return NULL;
}

VTEST(barrier_timeout_cancel)
{
    VCHECK(run_rt(CT, 1, barrier_leave_body, NULL) == NULL);
}
