/* SPDX-License-Identifier: MIT */
/* A seeded, clockless datagram link between two endpoints for testing sans-I/O protocol cores:
 * each direction is a min-heap of datagrams ordered by delivery time. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <vega/test.h>

struct item {
    uint64_t due, seq; /* seq keeps equal due times in send order */
    uint8_t *data;
    size_t len;
    uint8_t ecn;
    uint64_t tag;
};

/* Datagrams that keep their order (the common case: no reordering, no duplicate) queue in a
 * FIFO ring; only those that overtake or fall behind go through the heap. */
struct dir {
    struct item *heap;
    size_t n, cap;
    struct item *fifo;
    size_t fhead, fn, fcap;
    uint64_t link_free; /* when the rate-limited link finishes its queued datagrams */
    uint64_t last_due;  /* jitter keeps the order: nothing overtakes the previous datagram */
    vega_test_net_stats st;
};

/* Datagram buffers of up to POOL_BLOCK bytes are recycled through a free list, so a long
 * transfer allocates nothing in its steady state (larger ones use malloc). */
#define POOL_BLOCK 2048
#define POOL_MAX   8192

struct vega_test_net {
    vega_test_net_opts o;
    uint64_t rng, seq;
    struct dir d[2]; /* d[to] */
    void **pool;
    size_t npool;
    uint8_t *held; /* the datagram vega_test_net_peek handed out, until the next call */
    size_t held_len;
};

static uint8_t *buf_get(vega_test_net *n, size_t len)
{
    if (len > POOL_BLOCK)
        return malloc(len);
    if (n->npool)
        return n->pool[--n->npool];
    return malloc(POOL_BLOCK);
}

static void buf_put(vega_test_net *n, uint8_t *b, size_t len)
{
    if (!b)
        return;
    if (len <= POOL_BLOCK && n->npool < POOL_MAX) {
        if (!n->pool && !(n->pool = malloc(POOL_MAX * sizeof *n->pool))) {
            free(b);
            return;
        }
        n->pool[n->npool++] = b;
        return;
    }
    free(b);
}

static uint64_t next_rand(vega_test_net *n)
{
    /* splitmix64: tiny, and good enough to decide impairments */
    uint64_t z = (n->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static bool chance(vega_test_net *n, unsigned pct)
{
    return pct && next_rand(n) % 100 < pct;
}

int vega_test_net_new_versioned(vega_test_net **out, const vega_test_net_opts *opts,
                                int opts_version)
{
    if (opts_version != VEGA_TEST_NET_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    vega_test_net_opts o = {0};
    if (opts)
        o = *opts;
    if (o.loss_pct > 100 || o.dup_pct > 100 || o.corrupt_pct > 100 || o.reorder_pct > 100 ||
        o.ce_pct > 100)
        return -EINVAL;
    if (!o.queue_max)
        o.queue_max = 4096;
    if (!o.mtu)
        o.mtu = 65527;
    vega_test_net *n = calloc(1, sizeof *n);
    if (!n)
        return -ENOMEM;
    n->o = o;
    n->rng = o.seed;
    *out = n;
    return 0;
}

void vega_test_net_free(vega_test_net *n)
{
    if (!n)
        return;
    for (int i = 0; i < 2; i++) {
        for (size_t j = 0; j < n->d[i].n; j++)
            free(n->d[i].heap[j].data);
        free(n->d[i].heap);
        for (size_t j = 0; j < n->d[i].fn; j++)
            free(n->d[i].fifo[(n->d[i].fhead + j) % n->d[i].fcap].data);
        free(n->d[i].fifo);
    }
    for (size_t i = 0; i < n->npool; i++)
        free(n->pool[i]);
    free(n->pool);
    free(n->held);
    free(n);
}

static bool before(const struct item *a, const struct item *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static int push(struct dir *d, struct item it)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        struct item *h = realloc(d->heap, cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        d->heap = h;
        d->cap = cap;
    }
    size_t i = d->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&it, &d->heap[p]))
            break;
        d->heap[i] = d->heap[p];
        i = p;
    }
    d->heap[i] = it;
    return 0;
}

static int fifo_push(struct dir *d, struct item it)
{
    if (d->fn == d->fcap) {
        size_t cap = d->fcap ? d->fcap * 2 : 64;
        struct item *f = malloc(cap * sizeof *f);
        if (!f)
            return -ENOMEM;
        for (size_t i = 0; i < d->fn; i++)
            f[i] = d->fifo[(d->fhead + i) % d->fcap];
        free(d->fifo);
        d->fifo = f;
        d->fcap = cap;
        d->fhead = 0;
    }
    d->fifo[(d->fhead + d->fn++) % d->fcap] = it;
    return 0;
}

/* The earliest item of the direction, from the FIFO or the heap; NULL when both are empty. */
static const struct item *first(const struct dir *d, bool *from_fifo)
{
    const struct item *f = d->fn ? &d->fifo[d->fhead] : NULL;
    const struct item *h = d->n ? &d->heap[0] : NULL;
    *from_fifo = f && (!h || before(f, h));
    return *from_fifo ? f : h;
}

static struct item pop(struct dir *d)
{
    struct item top = d->heap[0], last = d->heap[--d->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const struct item *best = &last;
        if (l < d->n && before(&d->heap[l], best)) {
            m = l;
            best = &d->heap[l];
        }
        if (r < d->n && before(&d->heap[r], best))
            m = r;
        if (m == i)
            break;
        d->heap[i] = d->heap[m];
        i = m;
    }
    if (d->n)
        d->heap[i] = last;
    return top;
}

static int enqueue(vega_test_net *n, struct dir *d, const void *data, size_t len, uint64_t due,
                   bool corrupt, uint8_t ecn, uint64_t tag)
{
    struct item it = {.due = due, .seq = n->seq++, .len = len, .ecn = ecn, .tag = tag};
    it.data = buf_get(n, len ? len : 1);
    if (!it.data)
        return -ENOMEM;
    if (len)
        memcpy(it.data, data, len);
    if (corrupt && len) {
        uint64_t r = next_rand(n);
        it.data[r % len] ^= (uint8_t)(1u << ((r >> 32) % 8));
    }
    /* In order behind the FIFO's tail: the cheap path. */
    const struct item *tail = d->fn ? &d->fifo[(d->fhead + d->fn - 1) % d->fcap] : NULL;
    int rc = !tail || !before(&it, tail) ? fifo_push(d, it) : push(d, it);
    if (rc < 0)
        buf_put(n, it.data, len);
    return rc;
}

int vega_test_net_send(vega_test_net *n, int from, const void *data, size_t len, uint64_t now)
{
    return vega_test_net_sendx(n, from, data, len, 0, 0, now);
}

int vega_test_net_sendx(vega_test_net *n, int from, const void *data, size_t len, uint8_t ecn,
                        uint64_t tag, uint64_t now)
{
    if (from < 0 || from > 1 || (!data && len) || ecn > 3)
        return -EINVAL;
    struct dir *d = &n->d[!from];
    vega_test_net_stats *st = &n->d[from].st;
    st->sent++;
    st->bytes += len;
    if (len > n->o.mtu || d->n + d->fn >= n->o.queue_max) {
        st->overflowed++;
        return 0;
    }
    /* The link serialises datagrams at its rate; loss happens after, on the wire. */
    uint64_t start = now;
    if (n->o.rate_bps) {
        if (d->link_free > start)
            start = d->link_free;
        start += (uint64_t)len * 8 * 1000000000ull / n->o.rate_bps;
        d->link_free = start;
    }
    if (chance(n, n->o.loss_pct)) {
        st->lost++;
        return 0;
    }
    uint64_t due = start + n->o.delay_ns;
    if (n->o.jitter_ns)
        due += next_rand(n) % (n->o.jitter_ns + 1);
    if (due < d->last_due)
        due = d->last_due;
    d->last_due = due;
    if (chance(n, n->o.reorder_pct)) {
        due += n->o.delay_ns ? n->o.delay_ns : 1000000;
        st->reordered++;
    }
    bool corrupt = chance(n, n->o.corrupt_pct);
    st->corrupted += corrupt;
    if (n->o.ecn_bleach)
        ecn = 0;
    else if ((ecn == 1 || ecn == 2) && chance(n, n->o.ce_pct)) {
        ecn = 3;
        st->ce_marked++;
    }
    int rc = enqueue(n, d, data, len, due, corrupt, ecn, tag);
    if (rc == 0 && chance(n, n->o.dup_pct)) {
        st->duplicated++;
        rc = enqueue(n, d, data, len, due + 1 + next_rand(n) % (n->o.delay_ns / 4 + 1), false, ecn,
                     tag);
    }
    return rc;
}

long vega_test_net_recv(vega_test_net *n, int to, void *buf, size_t cap, uint64_t now)
{
    return vega_test_net_recvx(n, to, buf, cap, NULL, NULL, now);
}

long vega_test_net_recvx(vega_test_net *n, int to, void *buf, size_t cap, uint8_t *ecn,
                         uint64_t *tag, uint64_t now)
{
    uint8_t *p;
    long len = vega_test_net_peek(n, to, &p, ecn, tag, now);
    if (len <= 0)
        return len;
    if ((size_t)len > cap)
        len = (long)cap;
    memcpy(buf, p, (size_t)len);
    return len;
}

long vega_test_net_peek(vega_test_net *n, int to, uint8_t **data, uint8_t *ecn, uint64_t *tag,
                        uint64_t now)
{
    if (to < 0 || to > 1)
        return -EINVAL;
    if (n->held) {
        buf_put(n, n->held, n->held_len);
        n->held = NULL;
    }
    struct dir *d = &n->d[to];
    bool from_fifo;
    const struct item *top = first(d, &from_fifo);
    if (!top || top->due > now)
        return 0;
    struct item it;
    if (from_fifo) {
        it = d->fifo[d->fhead];
        d->fhead = (d->fhead + 1) % d->fcap;
        d->fn--;
    } else {
        it = pop(d);
    }
    n->d[!to].st.delivered++;
    if (ecn)
        *ecn = it.ecn;
    if (tag)
        *tag = it.tag;
    /* Held until the next call, so the caller may work on it in place. */
    n->held = it.data;
    n->held_len = it.len;
    *data = it.data;
    return (long)it.len;
}

uint64_t vega_test_net_next(const vega_test_net *n, int to)
{
    if (to < 0 || to > 1)
        return UINT64_MAX;
    bool from_fifo;
    const struct item *top = first(&n->d[to], &from_fifo);
    return top ? top->due : UINT64_MAX;
}

/* Each vega_test_net_stats layout's size (API rules: ABI): index = version. */
static const size_t stats_layout[VEGA_TEST_NET_STATS_VERSION + 1] = {
    [1] = sizeof(vega_test_net_stats),
};

int vega_test_net_get_stats_versioned(const vega_test_net *n, int from, vega_test_net_stats *out,
                                      int stats_version)
{
    if (!n || !out || (from != 0 && from != 1) || stats_version < 1 ||
        stats_version > VEGA_TEST_NET_STATS_VERSION)
        return -EINVAL;
    memcpy(out, &n->d[from].st, stats_layout[stats_version]);
    return 0;
}
