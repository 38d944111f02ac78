/* SPDX-License-Identifier: MIT */
/* The server's cache of active blocks (lib/http_server/pool.c): its bound after a burst, in
 * exact counts of blocks held and allocated; blocks given back after a window of disuse; no
 * block shared by two connections at once; and a grown read buffer never kept in the pool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <vega/http1.h>
#include <vega/http_server.h>
#include <vega/mem.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/sync.h>
#include <vega/test.h>

#include "server_int.h"
#include "vtest.h"

#define DL(ms) vega_deadline_in_ms(ms)

/* ---- a counting allocator: live blocks, and how many active blocks were made ------------ */

struct ca {
    long live;
    long active_made; /* allocations of srv->active_size bytes */
    size_t active_size;
};

struct hdr {
    size_t n;
    uint64_t pad;
};

static void *ca_malloc(void *ud, size_t n)
{
    struct ca *c = ud;
    struct hdr *h = malloc(sizeof *h + n);
    VCHECK(h != NULL);
    h->n = n;
    c->live++;
    if (c->active_size && n == c->active_size)
        c->active_made++;
    return h + 1;
}

static void *ca_calloc(void *ud, size_t n, size_t size)
{
    void *p = ca_malloc(ud, n * size);
    memset(p, 0, n * size);
    return p;
}

static void ca_free(void *ud, void *p)
{
    struct ca *c = ud;
    c->live--;
    free((struct hdr *)p - 1);
}

static void *ca_realloc(void *ud, void *p, size_t n)
{
    struct ca *c = ud;
    if (!p)
        return ca_malloc(ud, n);
    struct hdr *h = realloc((struct hdr *)p - 1, sizeof *h + n);
    VCHECK(h != NULL);
    h->n = n;
    (void)c;
    return h + 1;
}

/* ---- a burst: K connections that are all inside the handler at once ---------------------- */

#define BURST (SRV_POOL_MAX + 5)

static vega_barrier in_handler;
static bool use_barrier;
static struct srv_active *seen[BURST];
static int nseen;
static size_t last_in_cap;
static bool last_in_own;

static int handler(vega_http_exchange *x, void *user)
{
    (void)user;
    struct srv_active *a = x->c->a;
    last_in_cap = a->in_cap;
    last_in_own = a->in_own != NULL;
    if (use_barrier) {
        VCHECK(nseen < BURST);
        seen[nseen++] = a;
        /* every connection of the burst holds its block here at the same time */
        VCHECK(vega_barrier_wait(&in_handler, DL(10000)) >= 0);
    }
    return vega_http_respond(x, 200, NULL, 0, "ok", 2, DL(5000));
}

struct serve_arg {
    vega_http_server *srv;
    vega_stream *s;
};

static void *serve_task(void *arg)
{
    struct serve_arg *a = arg;
    (void)vega_http_server_serve(a->srv, a->s, NULL, NULL);
    return NULL;
}

/* Sends req on n new connections at once, reads each answer to the end, waits for the serving
 * tasks. */
static void burst(vega_http_server *srv, int n, const char *req, size_t len)
{
    vega_stream *cl[BURST];
    vega_task *st[BURST];
    struct serve_arg sa[BURST];
    VCHECK(n <= BURST);
    for (int i = 0; i < n; i++) {
        vega_stream *b;
        VCHECK_EQ(vega_duplex_new(&cl[i], &b, 0), 0);
        sa[i] = (struct serve_arg){srv, b};
        VCHECK_EQ(vega_task_spawn(&st[i], serve_task, &sa[i]), 0);
        VCHECK_EQ(vega_stream_write(cl[i], req, len, NULL, DL(5000)), (vega_ssize)len);
        VCHECK_EQ(vega_stream_shutdown(cl[i], SHUT_WR, DL(1000)), 0);
    }
    for (int i = 0; i < n; i++) {
        char buf[512];
        size_t got = 0;
        vega_ssize r;
        while ((r = vega_stream_read(cl[i], buf + got, sizeof buf - 1 - got, DL(10000))) > 0)
            got += (size_t)r;
        buf[got] = 0;
        VCHECK(strncmp(buf, "HTTP/1.1 200", 12) == 0);
        VCHECK_EQ(vega_task_join(st[i], NULL, DL(10000)), 0);
        vega_stream_close(cl[i], DL(1000));
    }
}

static const char small_req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

static vega_http_server *new_server(struct ca *c, vega_mem *m)
{
    *m = (vega_mem){ca_malloc, ca_calloc, ca_realloc, ca_free, c};
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = handler;
    o.mem = m;
    vega_http_server *srv;
    VCHECK_EQ(vega_http_server_new(&srv, &o), 0);
    c->active_size = srv->active_size;
    return srv;
}

static void body_bound(void)
{
    struct ca c = {0};
    vega_mem m;
    vega_http_server *srv = new_server(&c, &m);
    long base = c.live;
    VCHECK_EQ(vega__srv_pool_held(srv), 0);

    vega_barrier_init(&in_handler, BURST);
    use_barrier = true;
    nseen = 0;
    burst(srv, BURST, small_req, sizeof small_req - 1);
    /* the BURST connections held BURST blocks at once, no two the same */
    VCHECK_EQ(nseen, BURST);
    for (int i = 0; i < BURST; i++)
        for (int j = i + 1; j < BURST; j++)
            VCHECK(seen[i] != seen[j]);
    VCHECK_EQ(c.active_made, BURST);
    /* the pool kept its bound, the rest went back to the allocator */
    VCHECK_EQ(vega__srv_pool_held(srv), SRV_POOL_MAX);
    VCHECK_EQ(c.live, base + SRV_POOL_MAX);

    /* a second burst takes the kept blocks first and allocates only the difference */
    nseen = 0;
    burst(srv, BURST, small_req, sizeof small_req - 1);
    VCHECK_EQ(c.active_made, BURST + (BURST - SRV_POOL_MAX));
    VCHECK_EQ(vega__srv_pool_held(srv), SRV_POOL_MAX);
    vega_barrier_fini(&in_handler);
    use_barrier = false;

    /* one by one: the same block goes round, nothing new is allocated */
    for (int i = 0; i < 5; i++)
        burst(srv, 1, small_req, sizeof small_req - 1);
    VCHECK_EQ(c.active_made, BURST + (BURST - SRV_POOL_MAX));
    VCHECK_EQ(vega__srv_pool_held(srv), SRV_POOL_MAX);

    vega_http_server_free(srv);
    VCHECK_EQ(c.live, 0);
}

VTEST(bound_after_burst)
{
    vtest_run(body_bound, 0);
}

/* Blocks unused for a whole window go back; blocks taken within it stay. */
static void body_decay(void)
{
    struct ca c = {0};
    vega_mem m;
    vega_http_server *srv = new_server(&c, &m);
    long base = c.live;
    vega_barrier_init(&in_handler, 8);
    use_barrier = true;
    nseen = 0;
    burst(srv, 8, small_req, sizeof small_req - 1);
    use_barrier = false;
    vega_barrier_fini(&in_handler);
    VCHECK_EQ(vega__srv_pool_held(srv), 8);
    /* the first window saw all 8 taken: none was unused through it */
    VCHECK_EQ(vega_sleep_ns(SRV_POOL_DECAY_NS), 0);
    VCHECK_EQ(vega__srv_pool_decay(srv), 8);
    /* in the second window three connections, one at a time, take one block */
    for (int i = 0; i < 3; i++)
        burst(srv, 1, small_req, sizeof small_req - 1);
    VCHECK_EQ(vega_sleep_ns(SRV_POOL_DECAY_NS), 0);
    VCHECK_EQ(vega__srv_pool_decay(srv), 1);
    VCHECK_EQ(c.live, base + 1);
    /* a window with nothing: the last one goes too */
    VCHECK_EQ(vega_sleep_ns(SRV_POOL_DECAY_NS), 0);
    VCHECK_EQ(vega__srv_pool_decay(srv), 0);
    VCHECK_EQ(c.live, base);
    vega_http_server_free(srv);
    VCHECK_EQ(c.live, 0);
}

VTEST_PAUSED(decay_gives_back)
{
    body_decay();
}

/* A head larger than the first read buffer grows it; the block goes back to the pool without
 * the grown buffer, and the next connection gets a block of the first size. */
static void body_grown(void)
{
    struct ca c = {0};
    vega_mem m;
    vega_http_server *srv = new_server(&c, &m);
    long base = c.live;
    static char big[SRV_IN_CAP + 8192];
    size_t n = (size_t)snprintf(big, sizeof big, "GET /big HTTP/1.1\r\nHost: x\r\n");
    for (int i = 0; n + 600 < sizeof big - 16; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "X-Pad-%d: %0490d\r\n", i, i);
    n += (size_t)snprintf(big + n, sizeof big - n, "\r\n");
    VCHECK(n > SRV_IN_CAP);
    burst(srv, 1, big, n);
    VCHECK(last_in_own);
    VCHECK(last_in_cap > SRV_IN_CAP);
    VCHECK_EQ(vega__srv_pool_held(srv), 1);
    VCHECK_EQ(c.live, base + 1); /* the block alone: its grown buffer was freed */
    VCHECK_EQ(c.active_made, 1);
    burst(srv, 1, small_req, sizeof small_req - 1);
    VCHECK(!last_in_own);
    VCHECK_EQ(last_in_cap, SRV_IN_CAP);
    VCHECK_EQ(c.active_made, 1);
    vega_http_server_free(srv);
    VCHECK_EQ(c.live, 0);
}

VTEST(grown_buffer_not_pooled)
{
    vtest_run(body_grown, 0);
}
