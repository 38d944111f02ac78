/* SPDX-License-Identifier: MIT */
/* The in-memory link both QUIC bulk benchmarks (vega-quic-bulk and ngtcp2-bulk) time their
 * transfer over, so the harness costs the two stacks the same: one FIFO ring per direction of
 * QUEUE_MAX fixed slots, faulted in before the clock starts, every datagram due DELAY_NS after
 * it was sent, a full queue (or a datagram above BL_DGRAM_MAX, an MTU) drops it, and an
 * optional seeded random loss. A stack writes its datagram straight into the tail slot
 * (bl_reserve/bl_commit) and reads it in place from the head slot (bl_peek/bl_pop), as an
 * endpoint does with a ring of receive and send buffers. Header-only, plain C17. */
#ifndef VEGA_BENCH_QUIC_LINK_H
#define VEGA_BENCH_QUIC_LINK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BL_DGRAM_MAX 1452       /* IPv6 over a 1500-byte MTU: what both stacks send */
#define BL_QUEUE_MAX 4096       /* datagrams queued per direction (libvega-test's default cap) */
#define BL_DELAY_NS  1000000ull /* 1 ms one way */

struct bl_dgram {
    uint64_t due;
    size_t len;
    uint8_t data[BL_DGRAM_MAX];
};

struct bl_link {
    struct bl_dgram *q; /* BL_QUEUE_MAX slots, a ring */
    size_t head, n;
    unsigned loss_pct; /* random loss, after the queue (on the wire) */
    uint64_t rng;
    uint64_t sent, dropped, lost;  /* dropped: the queue was full (or too big); lost: at random */
    uint8_t scratch[BL_DGRAM_MAX]; /* where a datagram goes when no slot is free */
};

static inline int bl_init(struct bl_link *l, unsigned loss_pct, uint64_t seed)
{
    memset(l, 0, sizeof *l);
    l->loss_pct = loss_pct;
    l->rng = seed;
    l->q = malloc(BL_QUEUE_MAX * sizeof *l->q);
    if (!l->q)
        return -1;
    /* Fault the ring in now so the timed transfer does not pay for it; not with zeros, which
     * a kernel may reclaim again from a transparent huge page as unused (thp_low_util and
     * similar shrinkers), to fault them back in during the transfer. */
    memset(l->q, 0xa5, BL_QUEUE_MAX * sizeof *l->q);
    for (size_t i = 0; i < BL_QUEUE_MAX; i++)
        l->q[i].due = l->q[i].len = 0;
    return 0;
}

static inline void bl_fini(struct bl_link *l)
{
    free(l->q);
    l->q = NULL;
}

static inline bool bl_chance(struct bl_link *l)
{
    if (!l->loss_pct)
        return false;
    /* splitmix64, as libvega-test's network decides its impairments */
    uint64_t z = (l->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) % 100 < l->loss_pct;
}

/* Where the next datagram (at most BL_DGRAM_MAX bytes) is to be written: the tail slot, or a
 * scratch buffer when the queue is full (bl_commit then drops it). */
static inline uint8_t *bl_reserve(struct bl_link *l)
{
    if (l->n == BL_QUEUE_MAX)
        return l->scratch;
    return l->q[(l->head + l->n) % BL_QUEUE_MAX].data;
}

/* Sends the len bytes written at bl_reserve's pointer, due BL_DELAY_NS after now. */
static inline void bl_commit(struct bl_link *l, size_t len, uint64_t now)
{
    l->sent++;
    if (l->n == BL_QUEUE_MAX || len > BL_DGRAM_MAX) {
        l->dropped++;
        return;
    }
    if (bl_chance(l)) {
        l->lost++;
        return;
    }
    struct bl_dgram *d = &l->q[(l->head + l->n) % BL_QUEUE_MAX];
    d->due = now + BL_DELAY_NS;
    d->len = len;
    l->n++;
}

/* Copies a datagram in (for one written elsewhere). */
static inline void bl_send(struct bl_link *l, const uint8_t *data, size_t len, uint64_t now)
{
    uint8_t *p = bl_reserve(l);
    if (len <= BL_DGRAM_MAX)
        memcpy(p, data, len);
    bl_commit(l, len, now);
}

/* The head datagram when it is due (read, and even decrypt, it in place), else NULL. */
static inline struct bl_dgram *bl_peek(struct bl_link *l, uint64_t now)
{
    return l->n && l->q[l->head].due <= now ? &l->q[l->head] : NULL;
}

static inline void bl_pop(struct bl_link *l)
{
    l->head = (l->head + 1) % BL_QUEUE_MAX;
    l->n--;
}

/* When the head datagram is due; UINT64_MAX when the direction is empty. The clock never goes
 * back and every datagram waits the same delay, so FIFO order is due order. */
static inline uint64_t bl_next(const struct bl_link *l)
{
    return l->n ? l->q[l->head].due : UINT64_MAX;
}

#endif
