/* SPDX-License-Identifier: MIT */
/* Tests for lib/rt/sync_{oneshot,mpsc,broadcast,watch}.c: semantics, try-variants, timeouts,
 * cancellation, close, and many tasks on the multi-thread runtime. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <vega/rt.h>
#include <vega/sync.h>

#include "sync_util.h"
#include "vtest.h"

#define DL20 vega_deadline_in_ms(20)
#define P(x) ((void *)(uintptr_t)(x))
#define U(p) ((uintptr_t)(p))

/* ================================ oneshot ================================================ */

static void *oneshot_basic_body(void *arg)
{
    vega_oneshot *o;
    void *v = NULL;
    VCHECK_EQ(vega_oneshot_new(&o), 0);
    VCHECK_EQ(vega_oneshot_try_recv(o, &v), VEGA_ERR_EMPTY);
    VCHECK_EQ(vega_oneshot_recv(o, &v, 0), -ETIMEDOUT);
    CHECK_TIMED_OUT_20MS(vega_oneshot_recv(o, &v, DL20));
    VCHECK_EQ(vega_oneshot_send(o, P(42)), 0);
    VCHECK_EQ(vega_oneshot_send(o, P(43)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_oneshot_recv(o, &v, 0), 0);
    VCHECK(v == P(42));
    VCHECK_EQ(vega_oneshot_recv(o, &v, VEGA_DEADLINE_NEVER), VEGA_ERR_CLOSED);
    vega_oneshot_free(o);

    /* the sender gives up */
    VCHECK_EQ(vega_oneshot_new(&o), 0);
    vega_oneshot_close(o);
    VCHECK_EQ(vega_oneshot_send(o, P(1)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_oneshot_recv(o, &v, VEGA_DEADLINE_NEVER), VEGA_ERR_CLOSED);
    vega_oneshot_free(o);

    /* the receiver gives up; a value sent before stays receivable */
    VCHECK_EQ(vega_oneshot_new(&o), 0);
    vega_oneshot_rx_close(o);
    VCHECK_EQ(vega_oneshot_send(o, P(1)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_oneshot_try_recv(o, &v), VEGA_ERR_CLOSED);
    vega_oneshot_free(o);
    VCHECK_EQ(vega_oneshot_new(&o), 0);
    VCHECK_EQ(vega_oneshot_send(o, P(7)), 0);
    vega_oneshot_rx_close(o);
    VCHECK_EQ(vega_oneshot_try_recv(o, &v), 0);
    VCHECK(v == P(7));
    vega_oneshot_free(o);
    vega_oneshot_free(NULL);
    return NULL;
}

VTEST(oneshot_basic)
{
    VCHECK(run_rt(CT, 1, oneshot_basic_body, NULL) == NULL);
}

struct os_s {
    vega_oneshot *o;
    atomic_int started;
};

static void *oneshot_receiver(void *arg)
{
    struct os_s *s = arg;
    void *v = NULL;
    atomic_fetch_add(&s->started, 1);
    int r = vega_oneshot_recv(s->o, &v, VEGA_DEADLINE_NEVER);
    if (r == 0)
        VCHECK(v == P(99));
    return RC(r);
}

/* A waiting receiver is woken by send, by close, or by cancellation. */
static void *oneshot_wait_body(void *arg)
{
    struct os_s s;
    vega_task *t;
    atomic_init(&s.started, 0);

    VCHECK_EQ(vega_oneshot_new(&s.o), 0);
    VCHECK_EQ(vega_task_spawn(&t, oneshot_receiver, &s), 0);
    await_count(&s.started, 1);
    VCHECK_EQ(vega_oneshot_send(s.o, P(99)), 0);
    VCHECK_EQ(join_rc(t), 0);
    vega_oneshot_free(s.o);

    VCHECK_EQ(vega_oneshot_new(&s.o), 0);
    VCHECK_EQ(vega_task_spawn(&t, oneshot_receiver, &s), 0);
    await_count(&s.started, 2);
    vega_oneshot_close(s.o);
    VCHECK_EQ(join_rc(t), VEGA_ERR_CLOSED);
    vega_oneshot_free(s.o);

    VCHECK_EQ(vega_oneshot_new(&s.o), 0);
    VCHECK_EQ(vega_task_spawn(&t, oneshot_receiver, &s), 0);
    await_count(&s.started, 3);
    vega_task_cancel(t);
    VCHECK_EQ(join_rc(t), -ECANCELED);
    VCHECK_EQ(vega_oneshot_send(s.o, P(99)), 0); /* still usable */
    void *v;
    VCHECK_EQ(vega_oneshot_recv(s.o, &v, 0), 0);
    VCHECK(v == P(99));
    vega_oneshot_free(s.o);
    return NULL;
}

VTEST(oneshot_wait_close_cancel)
{
    VCHECK(run_rt(CT, 1, oneshot_wait_body, NULL) == NULL);
}

VTEST(oneshot_wait_close_cancel_mt)
{
    VCHECK(run_rt(MT, 2, oneshot_wait_body, NULL) == NULL);
}

struct os_pair {
    vega_oneshot *o;
    uintptr_t val;
};

static void *oneshot_sender(void *arg)
{
    struct os_pair *p = arg;
    if ((p->val & 3) == 0)
        VCHECK_EQ(vega_yield(), 0); /* sometimes after the receiver parked */
    return RC(vega_oneshot_send(p->o, P(p->val)));
}

/* Many oneshots across workers; the receiver frees each one right after recv, while the sender
 * may still be returning from send (ASan/TSan check that send touches nothing after). */
static void *oneshot_many_body(void *arg)
{
    long n = scaled(5000);
    for (long i = 0; i < n; i++) {
        struct os_pair p = {.val = (uintptr_t)i + 1};
        vega_task *t;
        void *v = NULL;
        VCHECK_EQ(vega_oneshot_new(&p.o), 0);
        VCHECK_EQ(vega_task_spawn(&t, oneshot_sender, &p), 0);
        VCHECK_EQ(vega_oneshot_recv(p.o, &v, VEGA_DEADLINE_NEVER), 0);
        VCHECK(v == P(p.val));
        vega_oneshot_free(p.o);
        VCHECK_EQ(join_rc(t), 0);
    }
    return NULL;
}

VTEST(oneshot_many_mt2)
{
    VCHECK(run_rt(MT, 2, oneshot_many_body, NULL) == NULL);
}

VTEST(oneshot_many_mt4)
{
    VCHECK(run_rt(MT, 4, oneshot_many_body, NULL) == NULL);
}

/* ================================ mpsc =================================================== */

static void *mpsc_unbounded_body(void *arg)
{
    vega_mpsc *c;
    void *v = NULL;
    VCHECK_EQ(vega_mpsc_new(&c, 0), 0);
    VCHECK_EQ(vega_mpsc_try_recv(c, &v), VEGA_ERR_EMPTY);
    VCHECK_EQ(vega_mpsc_recv(c, &v, 0), -ETIMEDOUT);
    CHECK_TIMED_OUT_20MS(vega_mpsc_recv(c, &v, DL20));
    /* Several blocks' worth, drained and refilled: FIFO across block boundaries. */
    for (int round = 0; round < 3; round++) {
        for (uintptr_t i = 0; i < 1000; i++)
            VCHECK_EQ(i % 2 ? vega_mpsc_send(c, P(i), 0) : vega_mpsc_try_send(c, P(i)), 0);
        VCHECK_EQ(vega_mpsc_len(c), 1000);
        for (uintptr_t i = 0; i < 1000; i++) {
            VCHECK_EQ(
                i % 2 ? vega_mpsc_recv(c, &v, VEGA_DEADLINE_NEVER) : vega_mpsc_try_recv(c, &v), 0);
            VCHECK(v == P(i));
        }
        VCHECK_EQ(vega_mpsc_len(c), 0);
    }
    /* close: queued messages drain first */
    VCHECK_EQ(vega_mpsc_send(c, P(1), 0), 0);
    VCHECK_EQ(vega_mpsc_send(c, P(2), 0), 0);
    vega_mpsc_close(c);
    vega_mpsc_close(c);
    VCHECK_EQ(vega_mpsc_send(c, P(3), 0), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_mpsc_try_send(c, P(3)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_mpsc_recv(c, &v, VEGA_DEADLINE_NEVER), 0);
    VCHECK(v == P(1));
    VCHECK_EQ(vega_mpsc_try_recv(c, &v), 0);
    VCHECK(v == P(2));
    VCHECK_EQ(vega_mpsc_recv(c, &v, VEGA_DEADLINE_NEVER), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_mpsc_try_recv(c, &v), VEGA_ERR_CLOSED);
    vega_mpsc_free(c);

    /* freeing with messages still queued (several blocks) releases them */
    VCHECK_EQ(vega_mpsc_new(&c, 0), 0);
    for (uintptr_t i = 0; i < 500; i++)
        VCHECK_EQ(vega_mpsc_send(c, P(i), 0), 0);
    for (uintptr_t i = 0; i < 100; i++)
        VCHECK_EQ(vega_mpsc_try_recv(c, &v), 0);
    vega_mpsc_free(c);
    vega_mpsc_free(NULL);
    return NULL;
}

VTEST(mpsc_unbounded_basic)
{
    VCHECK(run_rt(CT, 1, mpsc_unbounded_body, NULL) == NULL);
}

static void *mpsc_bounded_body(void *arg)
{
    vega_mpsc *c;
    void *v = NULL;
    VCHECK_EQ(vega_mpsc_new(&c, 2), 0);
    VCHECK_EQ(vega_mpsc_try_send(c, P(1)), 0);
    VCHECK_EQ(vega_mpsc_send(c, P(2), 0), 0);
    VCHECK_EQ(vega_mpsc_try_send(c, P(3)), VEGA_ERR_FULL);
    VCHECK_EQ(vega_mpsc_send(c, P(3), 0), -ETIMEDOUT);
    CHECK_TIMED_OUT_20MS(vega_mpsc_send(c, P(3), DL20));
    VCHECK_EQ(vega_mpsc_len(c), 2);
    VCHECK_EQ(vega_mpsc_recv(c, &v, 0), 0);
    VCHECK(v == P(1));
    VCHECK_EQ(vega_mpsc_try_send(c, P(3)), 0);
    VCHECK_EQ(vega_mpsc_try_recv(c, &v), 0);
    VCHECK(v == P(2));
    VCHECK_EQ(vega_mpsc_try_recv(c, &v), 0);
    VCHECK(v == P(3));
    VCHECK_EQ(vega_mpsc_try_recv(c, &v), VEGA_ERR_EMPTY);
    /* wrap around the ring a few times */
    for (uintptr_t i = 0; i < 10; i++) {
        VCHECK_EQ(vega_mpsc_try_send(c, P(i)), 0);
        VCHECK_EQ(vega_mpsc_try_recv(c, &v), 0);
        VCHECK(v == P(i));
    }
    vega_mpsc_close(c);
    VCHECK_EQ(vega_mpsc_try_send(c, P(1)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_mpsc_recv(c, &v, VEGA_DEADLINE_NEVER), VEGA_ERR_CLOSED);
    vega_mpsc_free(c);
    return NULL;
}

VTEST(mpsc_bounded_basic)
{
    VCHECK(run_rt(CT, 1, mpsc_bounded_body, NULL) == NULL);
}

struct mpsc_s {
    vega_mpsc *c;
    atomic_int started;
    uintptr_t val;
};

static void *mpsc_sender(void *arg)
{
    struct mpsc_s *s = arg;
    uintptr_t v = s->val;
    atomic_fetch_add(&s->started, 1);
    return RC(vega_mpsc_send(s->c, P(v), VEGA_DEADLINE_NEVER));
}

static void *mpsc_receiver(void *arg)
{
    struct mpsc_s *s = arg;
    void *v = NULL;
    atomic_fetch_add(&s->started, 1);
    int r = vega_mpsc_recv(s->c, &v, VEGA_DEADLINE_NEVER);
    if (r == 0)
        VCHECK(v == P(s->val));
    return RC(r);
}

/* Senders on a full channel wait in FIFO order; each recv moves the next waiter's message in.
 * A cancelled sender's message is not sent, and the channel keeps working. */
static void *mpsc_wait_send_body(void *arg)
{
    struct mpsc_s s[3];
    vega_task *t[3];
    vega_mpsc *c;
    void *v;
    VCHECK_EQ(vega_mpsc_new(&c, 1), 0);
    VCHECK_EQ(vega_mpsc_send(c, P(100), VEGA_DEADLINE_NEVER), 0);
    for (int i = 0; i < 3; i++) {
        s[i].c = c;
        atomic_init(&s[i].started, 0);
        s[i].val = 101 + (uintptr_t)i;
        VCHECK_EQ(vega_task_spawn(&t[i], mpsc_sender, &s[i]), 0);
        await_count(&s[i].started, 1);
    }
    vega_task_cancel(t[1]);
    VCHECK_EQ(join_rc(t[1]), -ECANCELED);
    VCHECK_EQ(vega_mpsc_recv(c, &v, VEGA_DEADLINE_NEVER), 0);
    VCHECK(v == P(100));
    VCHECK_EQ(join_rc(t[0]), 0); /* its message moved into the ring */
    VCHECK_EQ(vega_mpsc_len(c), 1);
    VCHECK_EQ(vega_mpsc_recv(c, &v, VEGA_DEADLINE_NEVER), 0);
    VCHECK(v == P(101));
    VCHECK_EQ(join_rc(t[2]), 0);
    VCHECK_EQ(vega_mpsc_recv(c, &v, VEGA_DEADLINE_NEVER), 0);
    VCHECK(v == P(103));
    VCHECK_EQ(vega_mpsc_try_recv(c, &v), VEGA_ERR_EMPTY);
    vega_mpsc_free(c);
    return NULL;
}

VTEST(mpsc_bounded_wait_cancel)
{
    VCHECK(run_rt(CT, 1, mpsc_wait_send_body, NULL) == NULL);
}

/* close wakes waiting senders and a waiting receiver with VEGA_ERR_CLOSED; a cancelled
 * receiver leaves the channel usable. */
static void *mpsc_close_body(void *arg)
{
    vega_mpsc *c;
    vega_task *t[2], *r;
    struct mpsc_s s = {.val = 5};
    void *v;
    atomic_init(&s.started, 0);

    VCHECK_EQ(vega_mpsc_new(&c, 1), 0);
    s.c = c;
    VCHECK_EQ(vega_task_spawn(&r, mpsc_receiver, &s), 0);
    await_count(&s.started, 1);
    vega_task_cancel(r);
    VCHECK_EQ(join_rc(r), -ECANCELED);
    VCHECK_EQ(vega_task_spawn(&r, mpsc_receiver, &s), 0);
    await_count(&s.started, 2);
    VCHECK_EQ(vega_mpsc_send(c, P(5), VEGA_DEADLINE_NEVER), 0); /* handed to the waiter */
    VCHECK_EQ(join_rc(r), 0);
    VCHECK_EQ(vega_task_spawn(&r, mpsc_receiver, &s), 0);
    await_count(&s.started, 3);
    vega_mpsc_close(c);
    VCHECK_EQ(join_rc(r), VEGA_ERR_CLOSED);
    vega_mpsc_free(c);

    VCHECK_EQ(vega_mpsc_new(&c, 1), 0);
    s.c = c;
    VCHECK_EQ(vega_mpsc_send(c, P(5), VEGA_DEADLINE_NEVER), 0);
    spawn_n(t, 2, mpsc_sender, &s);
    await_count(&s.started, 5);
    vega_mpsc_close(c);
    VCHECK_EQ(join_rc(t[0]), VEGA_ERR_CLOSED);
    VCHECK_EQ(join_rc(t[1]), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_mpsc_recv(c, &v, VEGA_DEADLINE_NEVER), 0); /* drains */
    VCHECK(v == P(5));
    VCHECK_EQ(vega_mpsc_recv(c, &v, VEGA_DEADLINE_NEVER), VEGA_ERR_CLOSED);
    vega_mpsc_free(c);
    return NULL;
}

VTEST(mpsc_close_wakes)
{
    VCHECK(run_rt(CT, 1, mpsc_close_body, NULL) == NULL);
}

#define PRODUCERS 4

struct mpsc_stress {
    vega_mpsc *c;
    long per;
    atomic_int next_id;
};

/* Message = producer id in the top byte, sequence number below it. */
static void *mpsc_producer(void *arg)
{
    struct mpsc_stress *s = arg;
    uintptr_t id = (uintptr_t)atomic_fetch_add(&s->next_id, 1);
    for (long i = 0; i < s->per; i++)
        VCHECK_EQ(vega_mpsc_send(s->c, P((id << 56) | (uintptr_t)i), VEGA_DEADLINE_NEVER), 0);
    return NULL;
}

/* Every message is received exactly once, in per-producer order. */
static void mpsc_consume(struct mpsc_stress *s)
{
    long next[PRODUCERS] = {0};
    for (long n = 0; n < PRODUCERS * s->per; n++) {
        void *v;
        VCHECK_EQ(vega_mpsc_recv(s->c, &v, VEGA_DEADLINE_NEVER), 0);
        uintptr_t id = U(v) >> 56, seq = U(v) & ((1ull << 56) - 1);
        VCHECK(id < PRODUCERS);
        VCHECK_EQ(seq, next[id]);
        next[id]++;
    }
    for (int i = 0; i < PRODUCERS; i++)
        VCHECK_EQ(next[i], s->per);
    void *v;
    VCHECK_EQ(vega_mpsc_try_recv(s->c, &v), VEGA_ERR_EMPTY);
}

static void *mpsc_stress_body(void *arg)
{
    size_t cap = (size_t)(uintptr_t)arg;
    struct mpsc_stress s = {.per = scaled(cap == 0 ? 50000 : cap == 1 ? 10000 : 30000)};
    vega_task *t[PRODUCERS];
    atomic_init(&s.next_id, 0);
    VCHECK_EQ(vega_mpsc_new(&s.c, cap), 0);
    spawn_n(t, PRODUCERS, mpsc_producer, &s);
    mpsc_consume(&s);
    join_n(t, PRODUCERS);
    vega_mpsc_free(s.c);
    return NULL;
}

/* Sender counting: the consumer reads until VEGA_ERR_CLOSED, which comes once every producer
 * said it was done and everything they sent was received. */
static void *counted_producer(void *arg)
{
    struct mpsc_stress *s = arg;
    mpsc_producer(s);
    vega_mpsc_sender_done(s->c);
    return NULL;
}

static void *mpsc_senders_body(void *arg)
{
    size_t cap = (size_t)(uintptr_t)arg;
    struct mpsc_stress s = {.per = scaled(20000)};
    vega_task *t[PRODUCERS];
    atomic_init(&s.next_id, 0);
    VCHECK_EQ(vega_mpsc_new(&s.c, cap), 0);
    for (int i = 0; i < PRODUCERS; i++)
        vega_mpsc_sender_add(s.c); /* before any producer runs: none can close it early */
    spawn_n(t, PRODUCERS, counted_producer, &s);
    long got = 0;
    void *v;
    int r;
    while ((r = vega_mpsc_recv(s.c, &v, VEGA_DEADLINE_NEVER)) == 0)
        got++;
    VCHECK_EQ(r, VEGA_ERR_CLOSED);
    VCHECK_EQ(got, PRODUCERS * s.per);
    join_n(t, PRODUCERS);
    VCHECK_EQ(vega_mpsc_send(s.c, NULL, VEGA_DEADLINE_NEVER), VEGA_ERR_CLOSED);
    vega_mpsc_free(s.c);
    return NULL;
}

VTEST(mpsc_sender_count_closes)
{
    VCHECK(run_rt(MT, 2, mpsc_senders_body, P(0)) == NULL);
    VCHECK(run_rt(MT, 4, mpsc_senders_body, P(16)) == NULL);
    VCHECK(run_rt(CT, 1, mpsc_senders_body, P(1)) == NULL);
}

VTEST(mpsc_unbounded_mt2)
{
    VCHECK(run_rt(MT, 2, mpsc_stress_body, P(0)) == NULL);
}

VTEST(mpsc_unbounded_mt4)
{
    VCHECK(run_rt(MT, 4, mpsc_stress_body, P(0)) == NULL);
}

VTEST(mpsc_bounded_cap1_mt2)
{
    VCHECK(run_rt(MT, 2, mpsc_stress_body, P(1)) == NULL);
}

VTEST(mpsc_bounded_cap1_mt4)
{
    VCHECK(run_rt(MT, 4, mpsc_stress_body, P(1)) == NULL);
}

VTEST(mpsc_bounded_cap64_mt4)
{
    VCHECK(run_rt(MT, 4, mpsc_stress_body, P(64)) == NULL);
}

/* Several receivers on one channel (sync.h allows any number): every message reaches exactly
 * one of them, each sees a producer's messages in the order they were sent, and all of them
 * end with VEGA_ERR_CLOSED once the channel is closed and drained. NULL is a message too. */
#define CONSUMERS 3

struct mpmc {
    struct mpsc_stress s;
    atomic_uchar *seen; /* [producer * per + seq] */
    atomic_long total;
    atomic_int nulls;
};

static void *mpmc_consumer(void *arg)
{
    struct mpmc *m = arg;
    long last[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++)
        last[i] = -1;
    for (;;) {
        void *v;
        int r = vega_mpsc_recv(m->s.c, &v, VEGA_DEADLINE_NEVER);
        if (r == VEGA_ERR_CLOSED)
            break;
        VCHECK_EQ(r, 0);
        if (v == NULL) {
            atomic_fetch_add(&m->nulls, 1);
            continue;
        }
        uintptr_t id = (U(v) >> 56) - 1, seq = U(v) & ((1ull << 56) - 1);
        VCHECK(id < PRODUCERS && (long)seq < m->s.per);
        VCHECK((long)seq > last[id]);
        last[id] = (long)seq;
        VCHECK_EQ(atomic_fetch_add(&m->seen[id * (uintptr_t)m->s.per + seq], 1), 0);
        atomic_fetch_add(&m->total, 1);
    }
    return NULL;
}

/* Message = producer id + 1 in the top byte (so that none is NULL), sequence number below. */
static void *mpmc_producer(void *arg)
{
    struct mpmc *m = arg;
    uintptr_t id = (uintptr_t)atomic_fetch_add(&m->s.next_id, 1);
    for (long i = 0; i < m->s.per; i++)
        VCHECK_EQ(vega_mpsc_send(m->s.c, P(((id + 1) << 56) | (uintptr_t)i), VEGA_DEADLINE_NEVER),
                  0);
    VCHECK_EQ(vega_mpsc_send(m->s.c, NULL, VEGA_DEADLINE_NEVER), 0);
    return NULL;
}

static void *mpmc_body(void *arg)
{
    size_t cap = (size_t)(uintptr_t)arg;
    struct mpmc m = {.s = {.per = scaled(20000)}};
    atomic_init(&m.s.next_id, 0);
    atomic_init(&m.total, 0);
    atomic_init(&m.nulls, 0);
    m.seen = calloc((size_t)(PRODUCERS * m.s.per), sizeof *m.seen);
    VCHECK(m.seen != NULL);
    VCHECK_EQ(vega_mpsc_new(&m.s.c, cap), 0);
    vega_task *rx[CONSUMERS], *tx[PRODUCERS];
    spawn_n(rx, CONSUMERS, mpmc_consumer, &m);
    spawn_n(tx, PRODUCERS, mpmc_producer, &m);
    join_n(tx, PRODUCERS);
    vega_mpsc_close(m.s.c);
    join_n(rx, CONSUMERS);
    VCHECK_EQ(atomic_load(&m.total), PRODUCERS * m.s.per);
    VCHECK_EQ(atomic_load(&m.nulls), PRODUCERS);
    for (long i = 0; i < PRODUCERS * m.s.per; i++)
        VCHECK_EQ(atomic_load(&m.seen[i]), 1);
    vega_mpsc_free(m.s.c);
    free(m.seen);
    return NULL;
}

VTEST(mpsc_several_receivers_unbounded_mt4)
{
    VCHECK(run_rt(MT, 4, mpmc_body, P(0)) == NULL);
}

VTEST(mpsc_several_receivers_cap8_mt2)
{
    VCHECK(run_rt(MT, 2, mpmc_body, P(8)) == NULL);
}

VTEST(mpsc_several_receivers_cap1_ct)
{
    VCHECK(run_rt(CT, 1, mpmc_body, P(1)) == NULL);
}

VTEST(mpsc_bounded_cap1_ct)
{
    VCHECK(run_rt(CT, 1, mpsc_stress_body, P(1)) == NULL);
}

/* Timeouts and cancellation racing with the receiver moving a waiting sender's message in: a
 * producer resends a message only after -ETIMEDOUT and stops at -ECANCELED, so the consumer
 * must see each producer's messages exactly once, in order, and exactly as many as the sends
 * that returned 0. */
struct mpsc_race {
    vega_mpsc *c;
    atomic_int next_id;
    long sent[PRODUCERS];
};

static void *mpsc_race_producer(void *arg)
{
    struct mpsc_race *s = arg;
    int id = atomic_fetch_add(&s->next_id, 1);
    uintptr_t seq = 0;
    for (;;) {
        int r = vega_mpsc_send(s->c, P(((uintptr_t)id << 56) | seq), vega_deadline_in_ms(1));
        if (r == -ETIMEDOUT)
            continue;
        if (r == -ECANCELED)
            break;
        VCHECK_EQ(r, 0);
        seq++;
    }
    s->sent[id] = (long)seq;
    return NULL;
}

static void *mpsc_race_consumer(void *arg)
{
    struct mpsc_race *s = arg;
    long *next = calloc(PRODUCERS, sizeof(long));
    VCHECK(next != NULL);
    for (long n = 0;; n++) {
        void *v;
        int r = vega_mpsc_recv(s->c, &v, VEGA_DEADLINE_NEVER);
        if (r == VEGA_ERR_CLOSED)
            break;
        VCHECK_EQ(r, 0);
        uintptr_t id = U(v) >> 56, seq = U(v) & ((1ull << 56) - 1);
        VCHECK(id < PRODUCERS);
        VCHECK_EQ(seq, next[id]);
        next[id]++;
        if (n % 16 == 0)
            VCHECK_EQ(vega_sleep_ms(1), 0); /* let the senders time out */
    }
    return next;
}

static void *mpsc_race_body(void *arg)
{
    struct mpsc_race s = {.sent = {0}};
    vega_task *t[PRODUCERS], *cons;
    atomic_init(&s.next_id, 0);
    VCHECK_EQ(vega_mpsc_new(&s.c, (size_t)(uintptr_t)arg), 0);
    spawn_n(t, PRODUCERS, mpsc_race_producer, &s);
    VCHECK_EQ(vega_task_spawn(&cons, mpsc_race_consumer, &s), 0);
    VCHECK_EQ(vega_sleep_ms(50 + (uint64_t)scaled(150)), 0);
    for (int i = 0; i < PRODUCERS; i++)
        vega_task_cancel(t[i]);
    join_n(t, PRODUCERS);
    vega_mpsc_close(s.c);
    long *got = NULL;
    VCHECK_EQ(vega_task_join(cons, (void **)&got, VEGA_DEADLINE_NEVER), 0);
    long total = 0;
    for (int i = 0; i < PRODUCERS; i++) {
        VCHECK_EQ(got[i], s.sent[i]);
        total += got[i];
    }
    VCHECK(total > 0);
    free(got);
    vega_mpsc_free(s.c);
    return NULL;
}

VTEST(mpsc_timeout_cancel_race_cap1_mt4)
{
    VCHECK(run_rt(MT, 4, mpsc_race_body, P(1)) == NULL);
}

VTEST(mpsc_timeout_cancel_race_cap4_mt2)
{
    VCHECK(run_rt(MT, 2, mpsc_race_body, P(4)) == NULL);
}

/* Plain threads on both ends: a thread producer into a task consumer, and a task producer into
 * a thread consumer that blocks on the futex path. */
static void *mpsc_thread_producer(void *arg)
{
    struct mpsc_stress *s = arg;
    uintptr_t id = (uintptr_t)atomic_fetch_add(&s->next_id, 1);
    for (long i = 0; i < s->per; i++)
        VCHECK_EQ(vega_mpsc_send(s->c, P((id << 56) | (uintptr_t)i), VEGA_DEADLINE_NEVER), 0);
    return NULL;
}

static void *mpsc_thread_consumer(void *arg)
{
    mpsc_consume(arg);
    return NULL;
}

static void *mpsc_threads_body(void *arg)
{
    struct mpsc_stress s = {.per = scaled(5000)};
    pthread_t th[2];
    vega_task *t[PRODUCERS];
    atomic_init(&s.next_id, 0);
    VCHECK_EQ(vega_mpsc_new(&s.c, 2), 0);
    for (int i = 0; i < 2; i++)
        VCHECK_EQ(pthread_create(&th[i], NULL, mpsc_thread_producer, &s), 0);
    spawn_n(t, PRODUCERS - 2, mpsc_producer, &s);
    mpsc_consume(&s);
    for (int i = 0; i < 2; i++)
        VCHECK_EQ(pthread_join(th[i], NULL), 0);
    join_n(t, PRODUCERS - 2);
    vega_mpsc_free(s.c);

    pthread_t cons;
    s.per = scaled(5000);
    atomic_store(&s.next_id, 0);
    VCHECK_EQ(vega_mpsc_new(&s.c, 1), 0);
    VCHECK_EQ(pthread_create(&cons, NULL, mpsc_thread_consumer, &s), 0);
    spawn_n(t, PRODUCERS, mpsc_producer, &s);
    join_n(t, PRODUCERS);
    VCHECK_EQ(pthread_join(cons, NULL), 0);
    vega_mpsc_free(s.c);
    return NULL;
}

VTEST(mpsc_plain_threads)
{
    VCHECK(run_rt(MT, 2, mpsc_threads_body, NULL) == NULL);
}

/* Two runtimes: producers on one, the consumer on another (wakes cross runtimes). */
static void *mpsc_xrt_consumer(void *arg)
{
    mpsc_consume(arg);
    return NULL;
}

static void *mpsc_xrt_producers(void *arg)
{
    vega_task *t[PRODUCERS];
    spawn_n(t, PRODUCERS, mpsc_producer, arg);
    join_n(t, PRODUCERS);
    return NULL;
}

VTEST(mpsc_cross_runtime)
{
    struct mpsc_stress s = {.per = scaled(10000)};
    vega_rt_opts o;
    vega_rt *rt2;
    vega_task *cons;
    atomic_init(&s.next_id, 0);
    VCHECK_EQ(vega_mpsc_new(&s.c, 1), 0);
    vega_rt_opts_init(&o);
    o.driver = vtest_driver();
    o.workers = 2;
    VCHECK_EQ(vega_rt_new(&rt2, &o), 0);
    VCHECK_EQ(vega_rt_spawn(rt2, &cons, mpsc_xrt_consumer, &s), 0);
    VCHECK(run_rt(MT, 2, mpsc_xrt_producers, &s) == NULL);
    VCHECK_EQ(vega_task_join(cons, NULL, VEGA_DEADLINE_NEVER), 0);
    vega_rt_free(rt2);
    vega_mpsc_free(s.c);
}

/* ================================ broadcast ============================================== */

static void *broadcast_basic_body(void *arg)
{
    vega_broadcast *b;
    vega_broadcast_rx *r1, *r2, *late;
    void *v = NULL;
    uint64_t missed = 0;
    VCHECK_EQ(vega_broadcast_new(&b, 0), -EINVAL);
    VCHECK_EQ(vega_broadcast_new(&b, 4), 0);
    VCHECK_EQ(vega_broadcast_send(b, P(0)), 0); /* no receivers: not an error */
    VCHECK_EQ(vega_broadcast_subscribe(b, &r1), 0);
    VCHECK_EQ(vega_broadcast_subscribe(b, &r2), 0);
    VCHECK_EQ(vega_broadcast_recv(r1, &v, &missed, 0), -ETIMEDOUT);
    CHECK_TIMED_OUT_20MS(vega_broadcast_recv(r1, &v, &missed, DL20));
    for (uintptr_t i = 1; i <= 3; i++)
        VCHECK_EQ(vega_broadcast_send(b, P(i)), 2);
    VCHECK_EQ(vega_broadcast_subscribe(b, &late), 0); /* sees only what comes next */
    VCHECK_EQ(vega_broadcast_recv(late, &v, &missed, 0), -ETIMEDOUT);
    for (uintptr_t i = 1; i <= 3; i++) {
        VCHECK_EQ(vega_broadcast_recv(r1, &v, &missed, VEGA_DEADLINE_NEVER), 0);
        VCHECK(v == P(i));
        VCHECK_EQ(vega_broadcast_recv(r2, &v, &missed, 0), 0);
        VCHECK(v == P(i));
    }
    VCHECK_EQ(vega_broadcast_send(b, P(4)), 3);
    VCHECK_EQ(vega_broadcast_recv(late, &v, NULL, 0), 0);
    VCHECK(v == P(4));

    /* lag: r2 has not read 4..14 (11 messages), the ring keeps 4 */
    for (uintptr_t i = 5; i <= 14; i++)
        VCHECK_EQ(vega_broadcast_send(b, P(i)), 3);
    VCHECK_EQ(vega_broadcast_recv(r2, &v, &missed, VEGA_DEADLINE_NEVER), VEGA_ERR_LAGGED);
    VCHECK_EQ(missed, 7);
    for (uintptr_t i = 11; i <= 14; i++) {
        VCHECK_EQ(vega_broadcast_recv(r2, &v, &missed, VEGA_DEADLINE_NEVER), 0);
        VCHECK(v == P(i));
    }
    VCHECK_EQ(vega_broadcast_recv(r2, &v, &missed, 0), -ETIMEDOUT);

    /* close: drain, then VEGA_ERR_CLOSED */
    vega_broadcast_rx_free(late);
    VCHECK_EQ(vega_broadcast_send(b, P(15)), 2);
    vega_broadcast_close(b);
    VCHECK_EQ(vega_broadcast_send(b, P(16)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_broadcast_recv(r2, &v, &missed, VEGA_DEADLINE_NEVER), 0);
    VCHECK(v == P(15));
    VCHECK_EQ(vega_broadcast_recv(r2, &v, &missed, VEGA_DEADLINE_NEVER), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_broadcast_recv(r1, &v, &missed, VEGA_DEADLINE_NEVER), VEGA_ERR_LAGGED);
    VCHECK_EQ(missed, 8); /* 4..11 gone; 12..15 kept */
    for (uintptr_t i = 12; i <= 15; i++) {
        VCHECK_EQ(vega_broadcast_recv(r1, &v, &missed, VEGA_DEADLINE_NEVER), 0);
        VCHECK(v == P(i));
    }
    VCHECK_EQ(vega_broadcast_recv(r1, &v, &missed, 0), VEGA_ERR_CLOSED);
    vega_broadcast_rx_free(r1);
    vega_broadcast_rx_free(r2);
    vega_broadcast_rx_free(NULL);
    vega_broadcast_free(b);
    return NULL;
}

VTEST(broadcast_basic_lag_close)
{
    VCHECK(run_rt(CT, 1, broadcast_basic_body, NULL) == NULL);
}

struct bc_s {
    vega_broadcast *b;
    vega_broadcast_rx *rx;
    atomic_int *started;
};

static void *broadcast_waiter(void *arg)
{
    struct bc_s *s = arg;
    void *v = NULL;
    atomic_fetch_add(s->started, 1);
    int r = vega_broadcast_recv(s->rx, &v, NULL, VEGA_DEADLINE_NEVER);
    if (r == 0)
        VCHECK(v == P(77));
    return RC(r);
}

/* Waiting receivers are woken by send, close and cancellation. */
static void *broadcast_wait_body(void *arg)
{
    atomic_int started;
    vega_broadcast *b;
    struct bc_s s[3];
    vega_task *t[3];
    atomic_init(&started, 0);
    VCHECK_EQ(vega_broadcast_new(&b, 2), 0);
    for (int i = 0; i < 3; i++) {
        s[i] = (struct bc_s){b, NULL, &started};
        VCHECK_EQ(vega_broadcast_subscribe(b, &s[i].rx), 0);
        VCHECK_EQ(vega_task_spawn(&t[i], broadcast_waiter, &s[i]), 0);
    }
    await_count(&started, 3);
    vega_task_cancel(t[0]);
    VCHECK_EQ(join_rc(t[0]), -ECANCELED);
    VCHECK_EQ(vega_broadcast_send(b, P(77)), 3);
    VCHECK_EQ(join_rc(t[1]), 0);
    VCHECK_EQ(join_rc(t[2]), 0);
    /* the cancelled receiver still gets the message */
    void *v;
    VCHECK_EQ(vega_broadcast_recv(s[0].rx, &v, NULL, 0), 0);
    VCHECK(v == P(77));
    for (int i = 0; i < 3; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], broadcast_waiter, &s[i]), 0);
    await_count(&started, 6);
    vega_broadcast_close(b);
    for (int i = 0; i < 3; i++) {
        VCHECK_EQ(join_rc(t[i]), VEGA_ERR_CLOSED);
        vega_broadcast_rx_free(s[i].rx);
    }
    vega_broadcast_free(b);
    return NULL;
}

VTEST(broadcast_wait_close_cancel)
{
    VCHECK(run_rt(CT, 1, broadcast_wait_body, NULL) == NULL);
}

VTEST(broadcast_wait_close_cancel_mt)
{
    VCHECK(run_rt(MT, 2, broadcast_wait_body, NULL) == NULL);
}

#define BC_RX 4

struct bc_stress {
    vega_broadcast *b;
    vega_broadcast_rx *rx[BC_RX];
    long n;
    atomic_int next_id;
    long got[BC_RX], missed[BC_RX];
};

/* Messages are 1..n in order: without lag a receiver sees each once; with lag, what it sees
 * plus what it was told it missed adds up to n, and what it sees still increases. */
static void *bc_receiver(void *arg)
{
    struct bc_stress *s = arg;
    int id = atomic_fetch_add(&s->next_id, 1);
    uintptr_t last = 0;
    for (;;) {
        void *v;
        uint64_t missed = 0;
        int r = vega_broadcast_recv(s->rx[id], &v, &missed, VEGA_DEADLINE_NEVER);
        if (r == VEGA_ERR_CLOSED)
            break;
        if (r == VEGA_ERR_LAGGED) {
            VCHECK(missed > 0);
            s->missed[id] += (long)missed;
            continue;
        }
        VCHECK_EQ(r, 0);
        VCHECK(U(v) > last);
        VCHECK_EQ(U(v), s->got[id] + s->missed[id] + 1); /* nothing skipped silently */
        last = U(v);
        s->got[id]++;
    }
    VCHECK_EQ(s->got[id] + s->missed[id], s->n);
    return NULL;
}

static void *broadcast_stress_body(void *arg)
{
    size_t cap = (size_t)(uintptr_t)arg;
    struct bc_stress s = {.n = scaled(20000)};
    vega_task *t[BC_RX];
    atomic_init(&s.next_id, 0);
    if (cap == 0)
        cap = (size_t)s.n; /* room for everything: nobody can lag */
    VCHECK_EQ(vega_broadcast_new(&s.b, cap), 0);
    for (int i = 0; i < BC_RX; i++)
        VCHECK_EQ(vega_broadcast_subscribe(s.b, &s.rx[i]), 0);
    spawn_n(t, BC_RX, bc_receiver, &s);
    for (long i = 1; i <= s.n; i++) {
        VCHECK_EQ(vega_broadcast_send(s.b, P(i)), BC_RX);
        if (i % 128 == 0)
            VCHECK_EQ(vega_yield(), 0);
    }
    vega_broadcast_close(s.b);
    join_n(t, BC_RX);
    for (int i = 0; i < BC_RX; i++) {
        if (cap >= (size_t)s.n) {
            VCHECK_EQ(s.got[i], s.n);
            VCHECK_EQ(s.missed[i], 0);
        }
        vega_broadcast_rx_free(s.rx[i]);
    }
    vega_broadcast_free(s.b);
    return NULL;
}

VTEST(broadcast_all_see_all_mt2)
{
    VCHECK(run_rt(MT, 2, broadcast_stress_body, P(0)) == NULL);
}

VTEST(broadcast_all_see_all_mt4)
{
    VCHECK(run_rt(MT, 4, broadcast_stress_body, P(0)) == NULL);
}

VTEST(broadcast_lagging_mt4)
{
    VCHECK(run_rt(MT, 4, broadcast_stress_body, P(8)) == NULL);
}

VTEST(broadcast_lagging_ct)
{
    VCHECK(run_rt(CT, 1, broadcast_stress_body, P(8)) == NULL);
}

/* ================================ watch ================================================== */

static void *watch_basic_body(void *arg)
{
    vega_watch *w;
    uint64_t ver = 99, seen = 0;
    void *v = NULL;
    VCHECK_EQ(vega_watch_new(&w, P(10)), 0);
    VCHECK(vega_watch_get(w, &ver) == P(10));
    VCHECK_EQ(ver, 0);
    VCHECK_EQ(vega_watch_changed(w, &seen, &v, 0), -ETIMEDOUT);
    CHECK_TIMED_OUT_20MS(vega_watch_changed(w, &seen, &v, DL20));
    VCHECK_EQ(vega_watch_send(w, P(11)), 0);
    VCHECK_EQ(vega_watch_send(w, P(12)), 0); /* changes coalesce: the latest wins */
    VCHECK_EQ(vega_watch_changed(w, &seen, &v, VEGA_DEADLINE_NEVER), 0);
    VCHECK(v == P(12));
    VCHECK_EQ(seen, 2);
    VCHECK_EQ(vega_watch_changed(w, &seen, NULL, 0), -ETIMEDOUT);
    VCHECK(vega_watch_get(w, NULL) == P(12));
    /* a change made before close is still reported; then VEGA_ERR_CLOSED */
    VCHECK_EQ(vega_watch_send(w, P(13)), 0);
    vega_watch_close(w);
    VCHECK_EQ(vega_watch_send(w, P(14)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_watch_changed(w, &seen, &v, VEGA_DEADLINE_NEVER), 0);
    VCHECK(v == P(13));
    VCHECK_EQ(vega_watch_changed(w, &seen, &v, VEGA_DEADLINE_NEVER), VEGA_ERR_CLOSED);
    VCHECK(vega_watch_get(w, &ver) == P(13));
    VCHECK_EQ(ver, 3);
    vega_watch_free(w);
    vega_watch_free(NULL);
    return NULL;
}

VTEST(watch_basic)
{
    VCHECK(run_rt(CT, 1, watch_basic_body, NULL) == NULL);
}

struct watch_s {
    vega_watch *w;
    atomic_int started;
};

static void *watch_waiter(void *arg)
{
    struct watch_s *s = arg;
    uint64_t seen;
    void *v = NULL;
    vega_watch_get(s->w, &seen);
    atomic_fetch_add(&s->started, 1);
    int r = vega_watch_changed(s->w, &seen, &v, VEGA_DEADLINE_NEVER);
    if (r == 0)
        VCHECK(v == P(5));
    return RC(r);
}

static void *watch_wait_body(void *arg)
{
    struct watch_s s;
    vega_task *t[3];
    atomic_init(&s.started, 0);
    VCHECK_EQ(vega_watch_new(&s.w, NULL), 0);
    spawn_n(t, 3, watch_waiter, &s);
    await_count(&s.started, 3);
    vega_task_cancel(t[0]);
    VCHECK_EQ(join_rc(t[0]), -ECANCELED);
    VCHECK_EQ(vega_watch_send(s.w, P(5)), 0);
    VCHECK_EQ(join_rc(t[1]), 0);
    VCHECK_EQ(join_rc(t[2]), 0);
    spawn_n(t, 2, watch_waiter, &s);
    await_count(&s.started, 5);
    vega_watch_close(s.w);
    VCHECK_EQ(join_rc(t[0]), VEGA_ERR_CLOSED);
    VCHECK_EQ(join_rc(t[1]), VEGA_ERR_CLOSED);
    vega_watch_free(s.w);
    return NULL;
}

VTEST(watch_wait_close_cancel)
{
    VCHECK(run_rt(CT, 1, watch_wait_body, NULL) == NULL);
}

VTEST(watch_wait_close_cancel_mt)
{
    VCHECK(run_rt(MT, 2, watch_wait_body, NULL) == NULL);
}

struct watch_stress {
    vega_watch *w;
    long n;
};

/* Values are 1..n, sent in order with version == value: a receiver sees values increase, the
 * version always matches the value, and the last one it sees is n. */
static void *watch_receiver(void *arg)
{
    struct watch_stress *s = arg;
    uint64_t seen = 0;
    uintptr_t last = 0;
    for (;;) {
        void *v;
        int r = vega_watch_changed(s->w, &seen, &v, VEGA_DEADLINE_NEVER);
        if (r == VEGA_ERR_CLOSED)
            break;
        VCHECK_EQ(r, 0);
        VCHECK(U(v) > last);
        VCHECK_EQ(U(v), seen);
        last = U(v);
    }
    VCHECK_EQ(last, s->n);
    return NULL;
}

static void *watch_stress_body(void *arg)
{
    struct watch_stress s = {.n = scaled(20000)};
    vega_task *t[4];
    VCHECK_EQ(vega_watch_new(&s.w, P(0)), 0);
    spawn_n(t, 4, watch_receiver, &s);
    for (long i = 1; i <= s.n; i++) {
        VCHECK_EQ(vega_watch_send(s.w, P(i)), 0);
        if (i % 64 == 0)
            VCHECK_EQ(vega_yield(), 0);
    }
    vega_watch_close(s.w);
    join_n(t, 4);
    vega_watch_free(s.w);
    return NULL;
}

VTEST(watch_many_mt2)
{
    VCHECK(run_rt(MT, 2, watch_stress_body, NULL) == NULL);
}

VTEST(watch_many_mt4)
{
    VCHECK(run_rt(MT, 4, watch_stress_body, NULL) == NULL);
}
