/* SPDX-License-Identifier: MIT */
/* The HTTP server object: options, listeners and their accept tasks, the registry of open
 * connections, graceful shutdown from any thread, and counters. */
#include <stdlib.h>
#include <sys/socket.h>

#include "h2_srv_int.h"
#include "h3_int.h"
#include "server_int.h"
#include "tls_int.h"

void vega_http_server_opts_init_versioned(vega_http_server_opts *o, int opts_version)
{
    if (opts_version != VEGA_HTTP_SERVER_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_http_server_opts_init: options of another libvega (version %d)",
                    opts_version);
    memset(o, 0, sizeof *o);
    o->max_conns = 10000;
    o->max_pipelined = 32;
    o->header_timeout_ns = 10 * VEGA_NS_PER_S;
    o->body_timeout_ns = 30 * VEGA_NS_PER_S;
    o->idle_timeout_ns = 60 * VEGA_NS_PER_S;
    o->write_timeout_ns = 30 * VEGA_NS_PER_S;
}

int vega_http_server_new_versioned(vega_http_server **out, const vega_http_server_opts *opts,
                                   int opts_version)
{
    if (opts_version != VEGA_HTTP_SERVER_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    if (!out || !opts || !opts->handler)
        return -EINVAL;
    vega_http1_limits l = opts->limits;
    l.max_start_line = l.max_start_line ? l.max_start_line : 8192;
    l.max_field_line = l.max_field_line ? l.max_field_line : 8192;
    l.max_field_section = l.max_field_section ? l.max_field_section : 65536;
    l.max_fields = l.max_fields ? l.max_fields : 100;
    if (l.max_start_line > VEGA_HTTP1_LINE_BUF || l.max_field_line > VEGA_HTTP1_LINE_BUF ||
        l.max_start_line < 16 || l.max_field_line < 4 || l.max_fields > 100000 ||
        l.max_field_section > (64u << 20))
        return -EINVAL;
    if (opts->server_header &&
        !vega_http_field_value_is_valid(opts->server_header, strlen(opts->server_header)))
        return -EINVAL;
    if (opts->server_header && strlen(opts->server_header) > 1024)
        return -EINVAL;
    if (opts->tls && vega_tls_config_role(opts->tls) != VEGA_TLS_SERVER)
        return -EINVAL;
    if (opts->mem &&
        !(opts->mem->malloc && opts->mem->calloc && opts->mem->realloc && opts->mem->free))
        return -EINVAL;
    void *base;
    vega_http_server *s = vega__mem_calloc_aligned(opts->mem, 64, sizeof *s, &base);
    if (!s)
        return -ENOMEM;
    s->alloc_base = base;
    s->o = *opts;
    s->o.limits = l;
    if (!s->o.max_conns)
        s->o.max_conns = 10000;
    if (!s->o.max_pipelined)
        s->o.max_pipelined = 32;
    if (!s->o.header_timeout_ns)
        s->o.header_timeout_ns = 10 * VEGA_NS_PER_S;
    if (!s->o.body_timeout_ns)
        s->o.body_timeout_ns = 30 * VEGA_NS_PER_S;
    if (!s->o.idle_timeout_ns)
        s->o.idle_timeout_ns = 60 * VEGA_NS_PER_S;
    if (!s->o.write_timeout_ns)
        s->o.write_timeout_ns = 30 * VEGA_NS_PER_S;
    s->max_head = l.max_start_line + l.max_field_section + 2;
    if (opts->server_header) {
        s->server_header_len = strlen(opts->server_header);
        s->server_header = vega__mem_malloc(opts->mem, s->server_header_len + 1);
        if (!s->server_header) {
            vega__mem_free(opts->mem, base);
            return -ENOMEM;
        }
        memcpy(s->server_header, opts->server_header, s->server_header_len + 1);
    }
    s->o.server_header = s->server_header;
    if (opts->tls) {
        if (opts->tls->alpn_len == 0) {
            /* h2 first, then http/1.1 (HTTP/2 is on unless vega_http_server_set_h2 says no) */
            s->o.tls = opts->tls;
            s->alpn_own = true;
            int r = vega__h2s_alpn(s);
            if (r < 0) {
                vega__mem_free(opts->mem, s->server_header);
                vega__mem_free(opts->mem, base);
                return r;
            }
        }
        s->o.tls = vega__tls_config_ref(opts->tls);
    }
    pthread_mutex_init(&s->lock, NULL);
    for (size_t i = 0; i < SRV_SHARDS; i++)
        pthread_mutex_init(&s->shards[i].lock, NULL);
    vega_notify_init(&s->wake);
    vega__srv_pool_init(s);
    atomic_init(&s->next_id, 1);
    atomic_init(&s->grace, VEGA_DEADLINE_NEVER);
    *out = s;
    return 0;
}

static int add_listener(vega_http_server *srv, vega_sock *l, vega_addr *bound);

/* Whether another listener may be added: VEGA_ERR_FULL, -EBUSY once running, or 0. */
static int may_listen(vega_http_server *srv)
{
    pthread_mutex_lock(&srv->lock);
    bool full = srv->nlisteners >= SRV_MAX_LISTENERS;
    bool busy = atomic_load(&srv->running);
    pthread_mutex_unlock(&srv->lock);
    return full ? VEGA_ERR_FULL : busy ? -EBUSY : 0;
}

int vega_http_server_listen(vega_http_server *srv, const vega_addr *addr, unsigned flags,
                            vega_addr *bound)
{
    if (!srv || !addr)
        return -EINVAL;
    int r = may_listen(srv);
    if (r < 0)
        return r;
    vega_sock *l;
    r = vega_tcp_listen(&l, addr, 0, flags);
    if (r < 0)
        return r;
    return add_listener(srv, l, bound);
}

int vega_http_server_listen_fd(vega_http_server *srv, int fd, unsigned flags, vega_addr *bound)
{
    if (!srv || fd < 0)
        return -EINVAL;
    int r = may_listen(srv);
    if (r < 0)
        return r;
    vega_sock *l;
    r = vega_tcp_listen_fd(&l, fd, flags);
    if (r < 0)
        return r;
    return add_listener(srv, l, bound);
}

/* Adds listener l (taken: closed on failure). */
static int add_listener(vega_http_server *srv, vega_sock *l, vega_addr *bound)
{
    int r;
    if (bound && (r = vega_sock_local_addr(l, bound)) < 0) {
        vega_sock_close(l);
        return r;
    }
    pthread_mutex_lock(&srv->lock);
    if (srv->nlisteners >= SRV_MAX_LISTENERS) {
        pthread_mutex_unlock(&srv->lock);
        vega_sock_close(l);
        return VEGA_ERR_FULL;
    }
    srv->listeners[srv->nlisteners++] = (struct srv_listener){.srv = srv, .sock = l};
    pthread_mutex_unlock(&srv->lock);
    return 0;
}

int vega__srv_register(vega_http_server *srv, struct srv_conn *c)
{
    if (atomic_fetch_add_explicit(&srv->conns_open, 1, memory_order_relaxed) >= srv->o.max_conns) {
        atomic_fetch_sub_explicit(&srv->conns_open, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&srv->conns_refused, 1, memory_order_relaxed);
        return VEGA_ERR_FULL;
    }
    c->srv = srv;
    c->id = atomic_fetch_add_explicit(&srv->next_id, 1, memory_order_relaxed);
    c->state = SRV_ACTIVE;
    c->task = NULL;
    c->prev = NULL;
    pthread_mutex_lock(&vega__srv_shard(c)->lock);
    c->next = vega__srv_shard(c)->conns;
    if (c->next)
        c->next->prev = c;
    vega__srv_shard(c)->conns = c;
    pthread_mutex_unlock(&vega__srv_shard(c)->lock);
    atomic_fetch_add_explicit(&srv->conns_accepted, 1, memory_order_relaxed);
    return 0;
}

void vega__srv_unregister(struct srv_conn *c)
{
    vega_http_server *srv = c->srv;
    struct srv_shard *sh = vega__srv_shard(c);
    pthread_mutex_lock(&sh->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        sh->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = c->prev = NULL;
    c->task = NULL;
    pthread_mutex_unlock(&sh->lock);
    uint64_t n = atomic_load_explicit(&srv->conns_open, memory_order_relaxed);
    while (n > 1 && !atomic_compare_exchange_weak_explicit(
                        &srv->conns_open, &n, n - 1, memory_order_acq_rel, memory_order_relaxed))
        ;
    if (n > 1)
        return;
    /* Perhaps the last one out: the count reaches zero under srv->lock, and vega_http_server_run
     * takes that lock before it returns, so the server cannot be freed while this wake is still
     * touching it. */
    pthread_mutex_lock(&srv->lock);
    if (atomic_fetch_sub_explicit(&srv->conns_open, 1, memory_order_acq_rel) == 1 &&
        atomic_load(&srv->stopping))
        vega_notify_one(&srv->wake);
    pthread_mutex_unlock(&srv->lock);
}

/* One park callback per connection wake: the connection's task from here on. */
static void on_ready(vega_sock *s, void *arg, int status)
{
    (void)s;
    struct srv_conn *c = arg;
    vega_http_server *srv = c->srv;
    pthread_mutex_lock(&vega__srv_shard(c)->lock);
    c->state = SRV_ACTIVE;
    c->task = vega_task_current();
    pthread_mutex_unlock(&vega__srv_shard(c)->lock);
    atomic_fetch_sub_explicit(&srv->conns_parked, 1, memory_order_relaxed);
    if (c->h2) {
        vega__h2s_ready(c, status);
        return;
    }
    if (status < 0) {
        if (status == -ETIMEDOUT)
            atomic_fetch_add_explicit(&srv->timeouts, 1, memory_order_relaxed);
        vega__srv_conn_free(c);
        return;
    }
    vega__srv_conn_run(c, true);
}

bool vega__srv_park(struct srv_conn *c, vega_deadline idle_dl)
{
    vega_http_server *srv = c->srv;
    pthread_mutex_lock(&vega__srv_shard(c)->lock);
    if (atomic_load(&srv->stopping) && c->nreq > 0) {
        pthread_mutex_unlock(&vega__srv_shard(c)->lock);
        return false;
    }
    c->state = SRV_PARKED;
    c->task = NULL;
    pthread_mutex_unlock(&vega__srv_shard(c)->lock);
    atomic_fetch_add_explicit(&srv->conns_parked, 1, memory_order_relaxed);
    /* A plain connection's stream is a small wrapper over the socket: it is made again when the
     * connection wakes, so a parked connection holds only its socket and this struct. */
    if (!c->tls && c->stream) {
        vega__srv_stream_put(srv, c->stream);
        c->stream = NULL;
    }
    int r = vega_sock_park(c->sock, on_ready, c, idle_dl);
    if (r == 0)
        return true;
    atomic_fetch_sub_explicit(&srv->conns_parked, 1, memory_order_relaxed);
    if (!c->stream && vega__srv_stream_get(srv, c->sock, &c->stream) < 0)
        c->stream = NULL; /* the caller closes the connection; every close path allows it */
    pthread_mutex_lock(&vega__srv_shard(c)->lock);
    c->state = SRV_ACTIVE;
    c->task = vega_task_current();
    pthread_mutex_unlock(&vega__srv_shard(c)->lock);
    return false;
}

static void *accept_task(void *arg)
{
    struct srv_listener *l = arg;
    vega_http_server *srv = l->srv;
    while (!atomic_load(&srv->stopping)) {
        vega_sock *cs;
        vega_addr peer;
        int r = vega_tcp_accept(l->sock, &cs, &peer, VEGA_DEADLINE_NEVER);
        if (r == -ECANCELED)
            break;
        if (r == -EMFILE || r == -ENFILE || r == -ENOBUFS || r == -ENOMEM) {
            /* out of descriptors or memory: back off instead of spinning */
            if (vega_sleep_ms(10) < 0)
                break;
            continue;
        }
        if (r < 0)
            break;
        /* Accepted as the stop began: served (its response says Connection: close), not
         * dropped, since on a listener shared with other processes (a shard draining in a
         * reload) the client could not have known. */
        bool last = atomic_load(&srv->stopping);
        struct srv_conn *c = vega__mem_calloc(srv->o.mem, 1, sizeof *c);
        if (!c) {
            vega_sock_abort(cs);
            continue;
        }
        c->srv = srv;
        if (vega__srv_register(srv, c) < 0) {
            vega__mem_free(srv->o.mem, c);
            vega_sock_abort(cs);
            continue;
        }
        c->sock = cs;
        vega_addr local;
        if (vega_sock_local_addr(cs, &local) < 0)
            memset(&local, 0, sizeof local);
        if (vega__srv_addr_set(srv->o.mem, &c->peer, &peer) < 0 ||
            vega__srv_addr_set(srv->o.mem, &c->local, &local) < 0) {
            c->sock = NULL;
            vega__srv_conn_free(c);
            vega_sock_abort(cs);
            continue;
        }
        (void)vega_sock_set_nodelay(cs, true);
        if (srv->o.tls) {
            c->tls = true;
            r = vega_tls_stream_from_sock(&c->stream, cs, VEGA_STREAM_BORROW, srv->o.tls, NULL);
        } else {
            r = vega__srv_stream_get(srv, cs, &c->stream);
        }
        if (r < 0) {
            c->stream = NULL;
            vega__srv_conn_free(c);
            continue;
        }
        /* The connection waits for its first byte parked: header_timeout from the accept. */
        c->idle_dl = vega_deadline_in_ns(srv->o.header_timeout_ns);
        if (!vega__srv_park(c, c->idle_dl))
            vega__srv_conn_free(c);
        if (last)
            break;
    }
    return NULL;
}

/* Wakes every parked connection: shutdown(SHUT_RD) makes its socket readable, and its task then
 * sees the stopping flag. Under its shard's lock, a PARKED connection's socket is still open. */
static void wake_parked(vega_http_server *srv)
{
    for (size_t i = 0; i < SRV_SHARDS; i++) {
        struct srv_shard *sh = &srv->shards[i];
        pthread_mutex_lock(&sh->lock);
        for (struct srv_conn *c = sh->conns; c; c = c->next) {
            if (c->state == SRV_PARKED && c->sock && (c->nreq > 0 || c->h2 || c->tls))
                shutdown(vega_sock_fd(c->sock), SHUT_RD);
            else if (c->state == SRV_PARKED)
                continue; /* accepted, first request not here yet: the client has sent it or
                           * is about to and cannot know we stop; it is served (with
                           * Connection: close) when it comes, or the grace ends it */
            else if (c->h2)
                vega__h2s_kick(c); /* an active HTTP/2 connection: GOAWAY */
        }
        pthread_mutex_unlock(&sh->lock);
    }
}

/* After grace: cancels the tasks of active connections (a task's handle stays valid while its
 * connection is registered and active) and wakes parked ones. */
static void cancel_active(vega_http_server *srv)
{
    for (size_t i = 0; i < SRV_SHARDS; i++) {
        struct srv_shard *sh = &srv->shards[i];
        pthread_mutex_lock(&sh->lock);
        for (struct srv_conn *c = sh->conns; c; c = c->next) {
            if (c->state == SRV_ACTIVE && c->task)
                vega_task_cancel(c->task);
            else if (c->state == SRV_PARKED && c->sock)
                shutdown(vega_sock_fd(c->sock), SHUT_RDWR);
        }
        pthread_mutex_unlock(&sh->lock);
    }
}

int vega_http_server_run(vega_http_server *srv)
{
    if (!srv)
        return -EINVAL;
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    pthread_mutex_lock(&srv->lock);
    size_t n = srv->nlisteners;
    bool was = atomic_exchange(&srv->running, true);
    pthread_mutex_unlock(&srv->lock);
    if (was)
        return -EBUSY;
    if (n == 0 && !srv->h3) {
        atomic_store(&srv->running, false);
        return -EINVAL;
    }
    int rc = 0;
    size_t started = 0;
    for (; started < n; started++) {
        struct srv_listener *l = &srv->listeners[started];
        vega_spawn_opts so;
        vega_spawn_opts_init(&so);
        so.name = "http-accept";
        int r = vega_task_spawn_ex(&l->task, accept_task, l, &so);
        if (r < 0) {
            rc = r;
            vega_http_server_shutdown(srv, 0);
            break;
        }
    }
    /* Wait for shutdown. A cancelled run still shuts down (with no grace). */
    bool self_cancelled = false;
    /* While the pools hold blocks, wake once a window to give back what went unused. */
    bool pooled = false;
    while (!atomic_load(&srv->stopping)) {
        pooled = pooled || vega__srv_pool_held(srv) > 0;
        int r = vega_notify_wait(&srv->wake, pooled ? vega_deadline_in_ns(SRV_POOL_DECAY_NS)
                                                    : VEGA_DEADLINE_NEVER);
        if (r == -ETIMEDOUT)
            pooled = vega__srv_pool_decay(srv) > 0;
        if (r == -ECANCELED) {
            self_cancelled = true;
            vega_http_server_shutdown(srv, 0);
        }
    }
    /* Stop the accept loops: a handle leaves the table under the lock before it is joined. */
    for (size_t i = 0; i < started; i++) {
        pthread_mutex_lock(&srv->lock);
        vega_task *t = srv->listeners[i].task;
        srv->listeners[i].task = NULL;
        pthread_mutex_unlock(&srv->lock);
        vega_task_cancel(t);
        while (vega_task_join(t, NULL, VEGA_DEADLINE_NEVER) < 0)
            vega_yield();
    }
    pthread_mutex_lock(&srv->lock);
    size_t nl = srv->nlisteners;
    srv->nlisteners = 0;
    pthread_mutex_unlock(&srv->lock);
    for (size_t i = 0; i < nl; i++) {
        vega_sock_close(srv->listeners[i].sock);
        srv->listeners[i].sock = NULL;
    }
    wake_parked(srv);
    /* HTTP/3: GOAWAY, in-flight requests until grace, then the endpoint stops */
    if (srv->h3)
        vega__h3s_stop(srv->h3, self_cancelled);
    /* Let in-flight exchanges finish until grace, then cancel what is left (again every 50 ms:
     * a connection woken from its park after the first round has a new task). */
    bool cancelled = false;
    while (atomic_load(&srv->conns_open) > 0) {
        if (self_cancelled) {
            cancel_active(srv);
            vega_yield();
            continue;
        }
        vega_deadline g = atomic_load(&srv->grace);
        if (vega_now() >= g) {
            cancel_active(srv);
            cancelled = true;
        }
        int r = vega_notify_wait(&srv->wake, cancelled ? vega_deadline_in_ms(50) : g);
        if (r == -ECANCELED)
            self_cancelled = true;
    }
    /* the last connection's vega__srv_unregister may still be inside its wake */
    pthread_mutex_lock(&srv->lock);
    pthread_mutex_unlock(&srv->lock);
    atomic_store(&srv->running, false);
    return rc;
}

void vega_http_server_shutdown(vega_http_server *srv, vega_deadline grace)
{
    if (!srv)
        return;
    vega_deadline g = atomic_load(&srv->grace);
    while (grace < g && !atomic_compare_exchange_weak(&srv->grace, &g, grace))
        ;
    if (!atomic_exchange(&srv->stopping, true))
        wake_parked(srv);
    vega_notify_one(&srv->wake);
}

/* Each stats layout's size (API rules: ABI): index = version. */
static const size_t stats_layout[VEGA_HTTP_SERVER_STATS_VERSION + 1] = {
    [1] = sizeof(vega_http_server_stats),
};

static void fill_stats(const vega_http_server *srv, vega_http_server_stats *st)
{
    vega_http_server *s = (vega_http_server *)srv;
    st->conns_accepted = atomic_load_explicit(&s->conns_accepted, memory_order_relaxed);
    st->conns_refused = atomic_load_explicit(&s->conns_refused, memory_order_relaxed);
    st->conns_open = atomic_load_explicit(&s->conns_open, memory_order_relaxed);
    st->conns_parked = atomic_load_explicit(&s->conns_parked, memory_order_relaxed);
    st->requests = atomic_load_explicit(&s->requests, memory_order_relaxed);
    st->bad_requests = atomic_load_explicit(&s->bad_requests, memory_order_relaxed);
    st->timeouts = atomic_load_explicit(&s->timeouts, memory_order_relaxed);
}

int vega_http_server_get_stats_versioned(const vega_http_server *srv, vega_http_server_stats *st,
                                         int stats_version)
{
    if (!srv || !st || stats_version < 1 || stats_version > VEGA_HTTP_SERVER_STATS_VERSION)
        return -EINVAL;
    vega_http_server_stats all;
    fill_stats(srv, &all);
    memcpy(st, &all, stats_layout[stats_version]);
    return 0;
}

void vega_http_server_free(vega_http_server *srv)
{
    if (!srv)
        return;
    if (srv->h3 && vega_task_current()) /* HTTP/3 started, but the server never ran */
        vega__h3s_stop(srv->h3, true);
    for (size_t i = 0; i < srv->nlisteners; i++)
        vega_sock_close(srv->listeners[i].sock);
    vega_tls_config_free(srv->o.tls);
    vega_notify_fini(&srv->wake);
    vega__srv_pool_fini(srv);
    pthread_mutex_destroy(&srv->lock);
    for (size_t i = 0; i < SRV_SHARDS; i++)
        pthread_mutex_destroy(&srv->shards[i].lock);
    const vega_mem *m = srv->o.mem;
    vega__mem_free(m, srv->server_header);
    vega__mem_free(m, srv->alloc_base); /* srv is aligned inside it */
}
