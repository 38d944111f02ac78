/* SPDX-License-Identifier: MIT */
/* The cache of active blocks: a connection takes one when it wakes and gives it back when it
 * parks, so the per-request path allocates nothing and a burst leaves a bounded number of
 * blocks behind, given back to the allocator once they sit unused for a window. The slots
 * also keep the plain-TCP stream wrappers a parked connection lets go of. */
#include "server_int.h"

static void block_reset(struct srv_active *a, size_t fields)
{
    a->pool_next = NULL;
    a->in = (uint8_t *)a->field_store + fields;
    a->in_own = NULL;
    a->in_cap = SRV_IN_CAP;
    a->in_start = a->in_pos = a->in_end = a->scan = 0;
    a->out_len = 0;
    a->out_count = 0;
}

void vega__srv_pool_init(vega_http_server *srv)
{
    size_t fields = srv->o.limits.max_fields * sizeof(vega_http_field);
    srv->active_size = sizeof(struct srv_active) + fields + SRV_IN_CAP;
    atomic_init(&srv->pool_held, 0);
    for (size_t i = 0; i < SRV_POOL_SLOTS; i++) {
        pthread_mutex_init(&srv->pools[i].lock, NULL);
        srv->pools[i].free = NULL;
        srv->pools[i].n = srv->pools[i].low = 0;
        srv->pools[i].nstreams = 0;
    }
}

void vega__srv_pool_fini(vega_http_server *srv)
{
    for (size_t i = 0; i < SRV_POOL_SLOTS; i++) {
        struct srv_pool *p = &srv->pools[i];
        for (struct srv_active *a = p->free, *next; a; a = next) {
            next = a->pool_next;
            vega__mem_free(srv->o.mem, a);
        }
        p->free = NULL;
        p->n = p->low = 0;
        for (unsigned k = 0; k < p->nstreams; k++)
            vega_stream_close(p->streams[k], 0);
        p->nstreams = 0;
        pthread_mutex_destroy(&p->lock);
    }
    atomic_store_explicit(&srv->pool_held, 0, memory_order_relaxed);
}

/* The calling worker's slot (the first one outside a worker). The index is read once per
 * call, with no suspension before the slot is used. */
static struct srv_pool *slot(vega_http_server *srv)
{
    int w = vega_worker_index();
    return &srv->pools[w < 0 ? 0 : (unsigned)w % SRV_POOL_SLOTS];
}

struct srv_active *vega__srv_active_get(vega_http_server *srv)
{
    struct srv_pool *p = slot(srv);
    pthread_mutex_lock(&p->lock);
    struct srv_active *a = p->free;
    if (a) {
        p->free = a->pool_next;
        p->n--;
        if (p->n < p->low)
            p->low = p->n;
    }
    pthread_mutex_unlock(&p->lock);
    if (a)
        atomic_fetch_sub_explicit(&srv->pool_held, 1, memory_order_relaxed);
    else if (!(a = vega__mem_malloc(srv->o.mem, srv->active_size)))
        return NULL;
    block_reset(a, srv->o.limits.max_fields * sizeof(vega_http_field));
    return a;
}

void vega__srv_active_put(vega_http_server *srv, struct srv_active *a)
{
    if (!a)
        return;
    /* a grown read buffer goes: the pool keeps blocks of one size only */
    vega__mem_free(srv->o.mem, a->in_own);
    a->in_own = NULL;
    struct srv_pool *p = slot(srv);
    pthread_mutex_lock(&p->lock);
    bool kept = p->n < SRV_POOL_MAX;
    if (kept) {
        a->pool_next = p->free;
        p->free = a;
        p->n++;
    }
    pthread_mutex_unlock(&p->lock);
    if (!kept) {
        vega__mem_free(srv->o.mem, a);
    } else if (atomic_fetch_add_explicit(&srv->pool_held, 1, memory_order_relaxed) == 0) {
        /* the first block held: vega_http_server_run, waiting with no deadline while the
         * pools were empty, starts counting windows */
        vega_notify_one(&srv->wake);
    }
}

int vega__srv_stream_get(vega_http_server *srv, vega_sock *sock, vega_stream **out)
{
    struct srv_pool *p = slot(srv);
    pthread_mutex_lock(&p->lock);
    vega_stream *s = p->nstreams ? p->streams[--p->nstreams] : NULL;
    pthread_mutex_unlock(&p->lock);
    if (s && vega_stream_sock_rebind(s, sock) == 0) {
        *out = s;
        return 0;
    }
    if (s)
        vega_stream_close(s, 0);
    return vega_stream_from_sock(out, sock, VEGA_STREAM_BORROW);
}

void vega__srv_stream_put(vega_http_server *srv, vega_stream *s)
{
    struct srv_pool *p = slot(srv);
    pthread_mutex_lock(&p->lock);
    bool kept = p->nstreams < SRV_POOL_STREAMS;
    if (kept)
        p->streams[p->nstreams++] = s;
    pthread_mutex_unlock(&p->lock);
    if (!kept)
        vega_stream_close(s, 0);
}

size_t vega__srv_pool_decay(vega_http_server *srv)
{
    for (size_t i = 0; i < SRV_POOL_SLOTS; i++) {
        struct srv_pool *p = &srv->pools[i];
        pthread_mutex_lock(&p->lock);
        /* The oldest `low` blocks were not taken all window: cut them off the list's tail. */
        unsigned keep = p->n - p->low;
        struct srv_active **pp = &p->free;
        for (unsigned k = 0; k < keep; k++)
            pp = &(*pp)->pool_next;
        struct srv_active *cut = *pp;
        *pp = NULL;
        unsigned ncut = p->low;
        p->n = keep;
        p->low = keep;
        pthread_mutex_unlock(&p->lock);
        for (struct srv_active *next; cut; cut = next) {
            next = cut->pool_next;
            vega__mem_free(srv->o.mem, cut);
        }
        if (ncut)
            atomic_fetch_sub_explicit(&srv->pool_held, ncut, memory_order_relaxed);
    }
    return vega__srv_pool_held(srv);
}

size_t vega__srv_pool_held(const vega_http_server *srv)
{
    vega_http_server *s = (vega_http_server *)srv;
    return (size_t)atomic_load_explicit(&s->pool_held, memory_order_relaxed);
}
