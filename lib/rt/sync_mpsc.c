/* SPDX-License-Identifier: MIT */
/* Multi-producer channel of pointers, any number of consumers (everything is under one lock).
 * Bounded: a fixed ring, and senders that find it full wait in FIFO order; the receiver moves the
 * longest waiter's message into the slot it just freed. Unbounded: a list of fixed-size blocks,
 * freed as they are drained. A waiting receiver gets a message handed straight to it. */
#include <stdint.h>
#include <stdlib.h>

#include "sync_int.h"

#define BLOCK_SLOTS 63 /* a block is 512 bytes on LP64 */

struct block {
    struct block *next;
    void *slot[BLOCK_SLOTS];
};

struct vega_mpsc {
    unsigned lock;
    bool closed;
    atomic_size_t senders; /* vega_mpsc_sender_add minus _done */
    size_t cap;            /* 0 = unbounded */
    size_t len;
    vega_waitq rxq; /* receivers waiting for a message, FIFO (any number) */
    vega_waitq txq; /* bounded: senders waiting for room; each waiter's val is its message */

    /* bounded: ring[(head + i) % cap], i < len */
    void **ring;
    size_t head;

    /* unbounded: messages from hb->slot[hi] to tb->slot[ti - 1] */
    struct block *hb, *tb, *spare;
    unsigned hi, ti;
};

int vega_mpsc_new(vega_mpsc **out, size_t capacity)
{
    if (capacity > SIZE_MAX / sizeof(void *))
        return -ENOMEM;
    vega_mpsc *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->cap = capacity;
    if (capacity) {
        c->ring = malloc(capacity * sizeof(void *));
    } else {
        c->hb = c->tb = malloc(sizeof(struct block));
        if (c->hb)
            c->hb->next = NULL;
    }
    if (!c->ring && !c->hb) {
        free(c);
        return -ENOMEM;
    }
    *out = c;
    return 0;
}

/* ---- the queue (under the lock) ------------------------------------------------------------ */

/* Unbounded: true when a push needs a fresh block and there is no spare one. */
static bool needs_block(const vega_mpsc *c)
{
    return !c->cap && c->ti == BLOCK_SLOTS && !c->spare;
}

static void push(vega_mpsc *c, void *v)
{
    if (c->cap) {
        VEGA_ASSERT(c->len < c->cap);
        c->ring[(c->head + c->len) % c->cap] = v;
    } else {
        if (c->ti == BLOCK_SLOTS) {
            struct block *b = c->spare;
            VEGA_ASSERT(b != NULL);
            c->spare = NULL;
            b->next = NULL;
            c->tb->next = b;
            c->tb = b;
            c->ti = 0;
        }
        c->tb->slot[c->ti++] = v;
    }
    c->len++;
}

/* Takes the oldest message; a drained block goes to the spare slot or to *drop (freed by the
 * caller after unlocking). */
static void *pop(vega_mpsc *c, struct block **drop)
{
    void *v;
    VEGA_ASSERT(c->len > 0);
    if (c->cap) {
        v = c->ring[c->head];
        c->head = (c->head + 1) % c->cap;
    } else {
        if (c->hi == BLOCK_SLOTS) {
            struct block *old = c->hb;
            c->hb = old->next;
            c->hi = 0;
            if (!c->spare)
                c->spare = old;
            else
                *drop = old;
        }
        v = c->hb->slot[c->hi++];
    }
    if (--c->len == 0 && !c->cap) {
        VEGA_ASSERT(c->hb == c->tb);
        c->hi = c->ti = 0; /* empty again: reuse the block from its start */
    }
    return v;
}

/* ---- send ---------------------------------------------------------------------------------- */

static int send_impl(vega_mpsc *c, void *v, vega_deadline dl, bool try)
{
    struct block *fresh = NULL;
    int r;
    vega__sync_lock(&c->lock);
    for (;;) {
        struct vega__waiter *rx;
        if (c->closed) {
            r = VEGA_ERR_CLOSED;
        } else if ((rx = vega__waitq_head(&c->rxq)) != NULL) {
            rx->val = v; /* the queue is empty: hand over directly */
            vega__waitq_wake(&c->rxq, rx, 0);
            r = 0;
        } else if (c->cap && c->len == c->cap) {
            /* Full. Senders queue only while the ring is full, so FIFO order holds. */
            if (try || dl == 0) {
                r = try ? VEGA_ERR_FULL : -ETIMEDOUT;
            } else {
                struct vega__waiter w;
                w.val = v;
                vega__waitq_push(&c->txq, &w);
                r = vega__waitq_wait(&c->lock, &c->txq, &w, dl, "mpsc send");
            }
        } else if (needs_block(c) && !fresh) {
            vega__sync_unlock(&c->lock); /* never allocate under the spin lock */
            fresh = malloc(sizeof *fresh);
            if (!fresh)
                return -ENOMEM;
            vega__sync_lock(&c->lock);
            continue; /* the state may have changed meanwhile */
        } else {
            if (needs_block(c)) {
                c->spare = fresh;
                fresh = NULL;
            }
            push(c, v);
            r = 0;
        }
        break;
    }
    vega__sync_unlock(&c->lock);
    free(fresh);
    return r;
}

int vega_mpsc_send(vega_mpsc *c, void *v, vega_deadline dl)
{
    int r = vega__sync_coop(dl);
    if (r < 0)
        return r;
    return send_impl(c, v, dl, false);
}

int vega_mpsc_try_send(vega_mpsc *c, void *v)
{
    return send_impl(c, v, 0, true);
}

/* ---- receive ------------------------------------------------------------------------------- */

/* Under the lock: takes a message and refills the slot from the longest waiting sender. */
static void *take(vega_mpsc *c, struct block **drop)
{
    void *v = pop(c, drop);
    struct vega__waiter *tx = vega__waitq_head(&c->txq);
    if (tx) {
        push(c, tx->val);
        vega__waitq_wake(&c->txq, tx, 0);
    }
    return v;
}

static int recv_impl(vega_mpsc *c, void **v, vega_deadline dl, bool try)
{
    struct block *drop = NULL;
    int r;
    vega__sync_lock(&c->lock);
    if (c->len) {
        *v = take(c, &drop);
        r = 0;
    } else if (c->closed) {
        r = VEGA_ERR_CLOSED;
    } else if (try || dl == 0) {
        r = try ? VEGA_ERR_EMPTY : -ETIMEDOUT;
    } else {
        struct vega__waiter w;
        vega__waitq_push(&c->rxq, &w);
        r = vega__waitq_wait(&c->lock, &c->rxq, &w, dl, "mpsc recv");
        if (w.done && r == 0)
            *v = w.val;
    }
    vega__sync_unlock(&c->lock);
    free(drop);
    return r;
}

int vega_mpsc_recv(vega_mpsc *c, void **v, vega_deadline dl)
{
    int r = vega__sync_coop(dl);
    if (r < 0)
        return r;
    return recv_impl(c, v, dl, false);
}

int vega_mpsc_try_recv(vega_mpsc *c, void **v)
{
    return recv_impl(c, v, 0, true);
}

/* ---- the rest ------------------------------------------------------------------------------ */

void vega_mpsc_close(vega_mpsc *c)
{
    vega__sync_lock(&c->lock);
    c->closed = true;
    vega__waitq_wake_all(&c->txq, VEGA_ERR_CLOSED);
    vega__waitq_wake_all(&c->rxq, VEGA_ERR_CLOSED);
    vega__sync_unlock(&c->lock);
}

void vega_mpsc_sender_add(vega_mpsc *c)
{
    atomic_fetch_add_explicit(&c->senders, 1, memory_order_relaxed);
}

void vega_mpsc_sender_done(vega_mpsc *c)
{
    size_t before = atomic_fetch_sub_explicit(&c->senders, 1, memory_order_acq_rel);
    VEGA_ASSERT(before > 0);
    if (before == 1)
        vega_mpsc_close(c);
}

size_t vega_mpsc_len(vega_mpsc *c)
{
    vega__sync_lock(&c->lock);
    size_t n = c->len;
    vega__sync_unlock(&c->lock);
    return n;
}

void vega_mpsc_free(vega_mpsc *c)
{
    if (!c)
        return;
    VEGA_ASSERT(vega__waitq_empty(&c->rxq) && vega__waitq_empty(&c->txq));
    free(c->ring);
    for (struct block *b = c->hb, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    free(c->spare);
    free(c);
}
