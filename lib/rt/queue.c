/* SPDX-License-Identifier: MIT */
/* Run queues: the per-worker local queue (one producer, many stealers; Tokio's packed-head
 * design) and the global inject queue (a locked intrusive list). */
#include <string.h>

#include "sched_int.h"

static inline uint64_t pack(uint32_t steal, uint32_t real)
{
    return ((uint64_t)steal << 32) | real;
}
static inline uint32_t unpack_steal(uint64_t h)
{
    return (uint32_t)(h >> 32);
}
static inline uint32_t unpack_real(uint64_t h)
{
    return (uint32_t)h;
}

void vega__lqueue_init(struct vega__lqueue *q, bool single)
{
    q->single = single;
    atomic_init(&q->head, 0);
    atomic_init(&q->tail, 0);
    for (unsigned i = 0; i < VEGA__LQ_CAP; i++)
        atomic_init(&q->buf[i], NULL);
}

uint32_t vega__lqueue_len(struct vega__lqueue *q)
{
    uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
    uint32_t t = atomic_load_explicit(&q->tail, memory_order_acquire);
    return t - unpack_real(h);
}

/* Moves half of the queue plus t to the inject queue in one batch. Returns false when a
 * stealer raced us (the caller retries the push). */
static bool push_overflow(struct vega__worker *w, struct vega_task *t, uint32_t head)
{
    struct vega__lqueue *q = &w->q;
    const uint32_t n = VEGA__LQ_CAP / 2;
    uint64_t prev = pack(head, head);
    if (!atomic_compare_exchange_strong_explicit(&q->head, &prev, pack(head + n, head + n),
                                                 memory_order_release, memory_order_relaxed))
        return false;
    struct vega_task *batch[VEGA__LQ_CAP / 2 + 1];
    for (uint32_t i = 0; i < n; i++)
        batch[i] = atomic_load_explicit(&q->buf[(head + i) & VEGA__LQ_MASK], memory_order_relaxed);
    batch[n] = t;
    vega__inject_push(&w->rt->inject, batch, n + 1);
    atomic_store_explicit(&w->m.overflows,
                          atomic_load_explicit(&w->m.overflows, memory_order_relaxed) + n + 1,
                          memory_order_relaxed);
    return true;
}

bool vega__lqueue_push(struct vega__worker *w, struct vega_task *t)
{
    struct vega__lqueue *q = &w->q;
    for (;;) {
        uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
        uint32_t steal = unpack_steal(h), real = unpack_real(h);
        uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
        if (tail - steal < VEGA__LQ_CAP) {
            atomic_store_explicit(&q->buf[tail & VEGA__LQ_MASK], t, memory_order_relaxed);
            atomic_store_explicit(&q->tail, tail + 1, memory_order_release);
            return true;
        }
        if (steal != real) {
            /* A stealer is busy taking half of us: the queue is about to shrink. Send this one
             * to the inject queue rather than wait. */
            vega__inject_push(&w->rt->inject, &t, 1);
            return false;
        }
        if (push_overflow(w, t, real))
            return false;
    }
}

struct vega_task *vega__lqueue_pop(struct vega__lqueue *q)
{
    if (q->single) {
        /* No stealers (one worker): plain loads and stores. */
        uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
        uint32_t real = unpack_real(h);
        if (real == atomic_load_explicit(&q->tail, memory_order_relaxed))
            return NULL;
        atomic_store_explicit(&q->head, pack(real + 1, real + 1), memory_order_relaxed);
        return atomic_load_explicit(&q->buf[real & VEGA__LQ_MASK], memory_order_relaxed);
    }
    uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
    for (;;) {
        uint32_t steal = unpack_steal(h), real = unpack_real(h);
        uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
        if (real == tail)
            return NULL;
        uint32_t next_real = real + 1;
        uint64_t next = steal == real ? pack(next_real, next_real) : pack(steal, next_real);
        if (atomic_compare_exchange_weak_explicit(&q->head, &h, next, memory_order_acq_rel,
                                                  memory_order_acquire))
            return atomic_load_explicit(&q->buf[real & VEGA__LQ_MASK], memory_order_relaxed);
    }
}

struct vega_task *vega__lqueue_take_at(struct vega__lqueue *q, uint32_t i)
{
    uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
    uint32_t real = unpack_real(h);
    if (i) {
        struct vega_task *a =
            atomic_load_explicit(&q->buf[real & VEGA__LQ_MASK], memory_order_relaxed);
        struct vega_task *b =
            atomic_load_explicit(&q->buf[(real + i) & VEGA__LQ_MASK], memory_order_relaxed);
        atomic_store_explicit(&q->buf[real & VEGA__LQ_MASK], b, memory_order_relaxed);
        atomic_store_explicit(&q->buf[(real + i) & VEGA__LQ_MASK], a, memory_order_relaxed);
    }
    return vega__lqueue_pop(q);
}

/* Claims half of src's tasks and copies them into dst's buffer (not yet published). */
static uint32_t steal_into2(struct vega__lqueue *src, struct vega__lqueue *dst, uint32_t dst_tail)
{
    uint64_t prev = atomic_load_explicit(&src->head, memory_order_acquire);
    uint64_t next;
    uint32_t n;
    for (;;) {
        uint32_t src_steal = unpack_steal(prev), src_real = unpack_real(prev);
        if (src_steal != src_real)
            return 0; /* another stealer is at it */
        uint32_t src_tail = atomic_load_explicit(&src->tail, memory_order_acquire);
        n = src_tail - src_real;
        n -= n / 2;
        if (n == 0)
            return 0;
        next = pack(src_steal, src_real + n);
        if (atomic_compare_exchange_weak_explicit(&src->head, &prev, next, memory_order_acq_rel,
                                                  memory_order_acquire))
            break;
    }
    uint32_t first = unpack_steal(next);
    for (uint32_t i = 0; i < n; i++) {
        struct vega_task *t =
            atomic_load_explicit(&src->buf[(first + i) & VEGA__LQ_MASK], memory_order_relaxed);
        atomic_store_explicit(&dst->buf[(dst_tail + i) & VEGA__LQ_MASK], t, memory_order_relaxed);
    }
    /* Release our claim: steal catches up with real. */
    prev = next;
    for (;;) {
        uint32_t real = unpack_real(prev);
        if (atomic_compare_exchange_weak_explicit(&src->head, &prev, pack(real, real),
                                                  memory_order_acq_rel, memory_order_acquire))
            return n;
    }
}

struct vega_task *vega__lqueue_steal(struct vega__lqueue *src, struct vega__lqueue *dst,
                                     unsigned *stolen)
{
    uint32_t dst_tail = atomic_load_explicit(&dst->tail, memory_order_relaxed);
    uint32_t dst_steal = unpack_steal(atomic_load_explicit(&dst->head, memory_order_acquire));
    if (dst_tail - dst_steal > VEGA__LQ_CAP / 2)
        return NULL;
    uint32_t n = steal_into2(src, dst, dst_tail);
    *stolen = n;
    if (n == 0)
        return NULL;
    n--;
    struct vega_task *ret =
        atomic_load_explicit(&dst->buf[(dst_tail + n) & VEGA__LQ_MASK], memory_order_relaxed);
    if (n)
        atomic_store_explicit(&dst->tail, dst_tail + n, memory_order_release);
    return ret;
}

/* ---- inject queue ----------------------------------------------------------------------------
 * A locked queue of blocks of task pointers: overflow moves 129 pointers with one memcpy, and a
 * worker takes its share without chasing a linked list through cold task structs. */

struct vega__inject_block {
    struct vega__inject_block *next;
    uint32_t head, tail;
    struct vega_task *t[VEGA__INJECT_BLOCK];
};

void vega__inject_init(struct vega__inject *in)
{
    pthread_mutex_init(&in->mu, NULL);
    in->head = in->tail = in->spare = NULL;
    atomic_init(&in->len, 0);
}

void vega__inject_fini(struct vega__inject *in)
{
    struct vega__inject_block *b = in->head;
    while (b) {
        struct vega__inject_block *next = b->next;
        free(b);
        b = next;
    }
    free(in->spare);
    pthread_mutex_destroy(&in->mu);
}

void vega__inject_push(struct vega__inject *in, struct vega_task *const *tasks, size_t n)
{
    pthread_mutex_lock(&in->mu);
    size_t done = 0;
    while (done < n) {
        struct vega__inject_block *b = in->tail;
        if (!b || b->tail == VEGA__INJECT_BLOCK) {
            struct vega__inject_block *nb = in->spare;
            if (nb)
                in->spare = NULL;
            else if (!(nb = malloc(sizeof *nb)))
                VEGA_PANIC("out of memory for the inject queue");
            nb->next = NULL;
            nb->head = nb->tail = 0;
            if (b)
                b->next = nb;
            else
                in->head = nb;
            in->tail = nb;
            b = nb;
        }
        size_t k = VEGA__MIN(n - done, (size_t)(VEGA__INJECT_BLOCK - b->tail));
        memcpy(&b->t[b->tail], tasks + done, k * sizeof *tasks);
        b->tail += (uint32_t)k;
        done += k;
    }
    atomic_store_explicit(&in->len, atomic_load_explicit(&in->len, memory_order_relaxed) + n,
                          memory_order_release);
    pthread_mutex_unlock(&in->mu);
}

/* Takes up to `want` tasks into out[]. Caller holds the lock. */
static size_t take_locked(struct vega__inject *in, struct vega_task **out, size_t want)
{
    size_t got = 0;
    while (got < want && in->head) {
        struct vega__inject_block *b = in->head;
        size_t k = VEGA__MIN(want - got, (size_t)(b->tail - b->head));
        memcpy(out + got, &b->t[b->head], k * sizeof *out);
        b->head += (uint32_t)k;
        got += k;
        if (b->head == b->tail) {
            if (b->tail < VEGA__INJECT_BLOCK && b == in->tail) {
                b->head = b->tail = 0; /* keep the last block for the next push */
                break;
            }
            in->head = b->next;
            if (!in->head)
                in->tail = NULL;
            if (!in->spare)
                in->spare = b;
            else
                free(b);
        }
    }
    atomic_store_explicit(&in->len, atomic_load_explicit(&in->len, memory_order_relaxed) - got,
                          memory_order_release);
    return got;
}

struct vega_task *vega__inject_pop(struct vega__inject *in)
{
    if (atomic_load_explicit(&in->len, memory_order_acquire) == 0)
        return NULL;
    struct vega_task *t = NULL;
    pthread_mutex_lock(&in->mu);
    take_locked(in, &t, 1);
    pthread_mutex_unlock(&in->mu);
    return t;
}

struct vega_task *vega__inject_pop_batch(struct vega__worker *w, unsigned nworkers)
{
    struct vega__inject *in = &w->rt->inject;
    size_t len = atomic_load_explicit(&in->len, memory_order_acquire);
    if (len == 0)
        return NULL;
    struct vega__lqueue *q = &w->q;
    uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
    uint32_t steal = unpack_steal(atomic_load_explicit(&q->head, memory_order_acquire));
    uint32_t room = VEGA__LQ_CAP - (tail - steal);
    /* Tokio's share: len / workers + 1, at most half a queue, at most the free room + 1. */
    size_t want = len / nworkers + 1;
    if (want > VEGA__LQ_CAP / 2)
        want = VEGA__LQ_CAP / 2;
    if (want > (size_t)room + 1)
        want = (size_t)room + 1;
    struct vega_task *batch[VEGA__LQ_CAP / 2];
    pthread_mutex_lock(&in->mu);
    size_t got = take_locked(in, batch, want);
    pthread_mutex_unlock(&in->mu);
    if (!got)
        return NULL;
    for (size_t i = 1; i < got; i++)
        atomic_store_explicit(&q->buf[(tail + i - 1) & VEGA__LQ_MASK], batch[i],
                              memory_order_relaxed);
    if (got > 1)
        atomic_store_explicit(&q->tail, tail + (uint32_t)(got - 1), memory_order_release);
    return batch[0];
}

size_t vega__inject_len(struct vega__inject *in)
{
    return atomic_load_explicit(&in->len, memory_order_acquire);
}
