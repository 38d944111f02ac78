/* SPDX-License-Identifier: MIT */
/* The endpoint object: options, keys, listening (a server's sockets), accepting, shutting down,
 * freeing, statistics. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <sys/ioctl.h>

#include <vega/crypto.h>

#include "ep_int.h"

/* Layouts 1 and 2 of vega_quic_endpoint_opts, as 0.1 shipped them: the same fields after a
 * vega_quic_opts of layout 1 (which ends where layout 2's key log starts) or 2 (which ends where
 * layout 3's qlog hook starts), without the qlog fields appended in 3 (API rules: ABI). */
#define EP_OPTS_OLD(name, quic_size)                                                               \
    struct name {                                                                                  \
        _Alignas(vega_quic_opts) unsigned char quic[quic_size];                                    \
        vega_quic_ep_callbacks cb;                                                                 \
        void *user;                                                                                \
        unsigned sockets;                                                                          \
        size_t max_conns;                                                                          \
        size_t max_handshakes;                                                                     \
        vega_quic_retry_mode retry;                                                                \
        size_t retry_threshold;                                                                    \
        uint32_t token_lifetime_s;                                                                 \
        bool no_new_tokens;                                                                        \
        const uint8_t *static_key;                                                                 \
        size_t max_resets_per_s;                                                                   \
        const vega_mem *mem;                                                                       \
    }
EP_OPTS_OLD(ep_opts_v1, offsetof(vega_quic_opts, keylog));
EP_OPTS_OLD(ep_opts_v2, offsetof(vega_quic_opts, qlog));

/* Layouts 3 and 4: a vega_quic_opts of layout 3 (which ends where layout 4's pinned keys start)
 * or 4 (which ends where layout 5's connection ID prefix starts), the same fields, and the
 * qlog fields layout 3 appended. */
#define EP_OPTS_QLOG(name, quic_size)                                                              \
    struct name {                                                                                  \
        struct {                                                                                   \
            _Alignas(vega_quic_opts) unsigned char quic[quic_size];                                \
            vega_quic_ep_callbacks cb;                                                             \
            void *user;                                                                            \
            unsigned sockets;                                                                      \
            size_t max_conns;                                                                      \
            size_t max_handshakes;                                                                 \
            vega_quic_retry_mode retry;                                                            \
            size_t retry_threshold;                                                                \
            uint32_t token_lifetime_s;                                                             \
            bool no_new_tokens;                                                                    \
            const uint8_t *static_key;                                                             \
            size_t max_resets_per_s;                                                               \
            const vega_mem *mem;                                                                   \
        } h;                                                                                       \
        const char *qlog_dir;                                                                      \
        uint64_t qlog_max_bytes;                                                                   \
    }
EP_OPTS_QLOG(ep_opts_v3, offsetof(vega_quic_opts, pinned_keys));
EP_OPTS_QLOG(ep_opts_v4, offsetof(vega_quic_opts, scid_prefix));

#define EP_OPTS_FROM_OLD(o, v)                                                                     \
    do {                                                                                           \
        memset((o), 0, sizeof *(o));                                                               \
        memcpy(&(o)->quic, (v)->quic, sizeof(v)->quic);                                            \
        (o)->cb = (v)->cb;                                                                         \
        (o)->user = (v)->user;                                                                     \
        (o)->sockets = (v)->sockets;                                                               \
        (o)->max_conns = (v)->max_conns;                                                           \
        (o)->max_handshakes = (v)->max_handshakes;                                                 \
        (o)->retry = (v)->retry;                                                                   \
        (o)->retry_threshold = (v)->retry_threshold;                                               \
        (o)->token_lifetime_s = (v)->token_lifetime_s;                                             \
        (o)->no_new_tokens = (v)->no_new_tokens;                                                   \
        (o)->static_key = (v)->static_key;                                                         \
        (o)->max_resets_per_s = (v)->max_resets_per_s;                                             \
        (o)->mem = (v)->mem;                                                                       \
    } while (0)

#define EP_OPTS_TO_OLD(v, o)                                                                       \
    do {                                                                                           \
        memset((v), 0, sizeof *(v));                                                               \
        memcpy((v)->quic, &(o)->quic, sizeof(v)->quic);                                            \
        (v)->cb = (o)->cb;                                                                         \
        (v)->user = (o)->user;                                                                     \
        (v)->sockets = (o)->sockets;                                                               \
        (v)->max_conns = (o)->max_conns;                                                           \
        (v)->max_handshakes = (o)->max_handshakes;                                                 \
        (v)->retry = (o)->retry;                                                                   \
        (v)->retry_threshold = (o)->retry_threshold;                                               \
        (v)->token_lifetime_s = (o)->token_lifetime_s;                                             \
        (v)->no_new_tokens = (o)->no_new_tokens;                                                   \
        (v)->static_key = (o)->static_key;                                                         \
        (v)->max_resets_per_s = (o)->max_resets_per_s;                                             \
        (v)->mem = (o)->mem;                                                                       \
    } while (0)

/* The fields of layouts 3 and 4 to and from the latest. */
#define EP_OPTS_FROM_QLOG(o, v)                                                                    \
    do {                                                                                           \
        EP_OPTS_FROM_OLD(o, &(v)->h);                                                              \
        (o)->qlog_dir = (v)->qlog_dir;                                                             \
        (o)->qlog_max_bytes = (v)->qlog_max_bytes;                                                 \
    } while (0)

#define EP_OPTS_TO_QLOG(v, o)                                                                      \
    do {                                                                                           \
        memset((v), 0, sizeof *(v));                                                               \
        EP_OPTS_TO_OLD(&(v)->h, o);                                                                \
        (v)->qlog_dir = (o)->qlog_dir;                                                             \
        (v)->qlog_max_bytes = (o)->qlog_max_bytes;                                                 \
    } while (0)

void vega_quic_endpoint_opts_init_versioned(vega_quic_endpoint_opts *o, int opts_version)
{
    if (opts_version < 1 || opts_version > VEGA_QUIC_ENDPOINT_OPTS_VERSION)
        VEGA_PANIC("vega_quic_endpoint_opts_init: unknown layout version %d", opts_version);
    vega_quic_endpoint_opts d;
    memset(&d, 0, sizeof d);
    vega_quic_opts_init(&d.quic);
    /* A caller built with an older layout has storage for that layout only. */
    if (opts_version == 1) {
        struct ep_opts_v1 v;
        EP_OPTS_TO_OLD(&v, &d);
        memcpy(o, &v, sizeof v);
        return;
    }
    if (opts_version == 2) {
        struct ep_opts_v2 v;
        EP_OPTS_TO_OLD(&v, &d);
        memcpy(o, &v, sizeof v);
        return;
    }
    if (opts_version == 3) {
        struct ep_opts_v3 v;
        EP_OPTS_TO_QLOG(&v, &d);
        memcpy(o, &v, sizeof v);
        return;
    }
    if (opts_version == 4) {
        struct ep_opts_v4 v;
        EP_OPTS_TO_QLOG(&v, &d);
        memcpy(o, &v, sizeof v);
        return;
    }
    *o = d;
}

static void *qm_malloc(void *ud, size_t n)
{
    const vega_mem *m = ud;
    return m->malloc(m->ud, n);
}
static void *qm_calloc(void *ud, size_t n, size_t size)
{
    const vega_mem *m = ud;
    return m->calloc(m->ud, n, size);
}
static void *qm_realloc(void *ud, void *p, size_t n)
{
    const vega_mem *m = ud;
    return m->realloc(m->ud, p, n);
}
static void qm_free(void *ud, void *p)
{
    const vega_mem *m = ud;
    m->free(m->ud, p);
}

/* key' = HMAC-SHA256(key, label): the endpoint's separate keys from its one static key. */
static int derive(const uint8_t *key, const char *label, uint8_t *out)
{
    uint8_t full[64];
    int rc = vega_crypto_hmac_digest(VEGA_CRYPTO_SHA256, key, 32, label, strlen(label), full);
    if (rc < 0)
        return rc;
    memcpy(out, full, 32);
    return 0;
}

int vega_quic_endpoint_new_versioned(vega_quic_endpoint **out, const vega_quic_endpoint_opts *opts,
                                     int opts_version)
{
    if (!out || !opts || opts_version < 1 || opts_version > VEGA_QUIC_ENDPOINT_OPTS_VERSION)
        return -EINVAL;
    *out = NULL;
    vega_quic_endpoint_opts latest;
    if (opts_version == 1) {
        EP_OPTS_FROM_OLD(&latest, (const struct ep_opts_v1 *)(const void *)opts);
        opts = &latest;
    } else if (opts_version == 2) {
        EP_OPTS_FROM_OLD(&latest, (const struct ep_opts_v2 *)(const void *)opts);
        opts = &latest;
    } else if (opts_version == 3) {
        EP_OPTS_FROM_QLOG(&latest, (const struct ep_opts_v3 *)(const void *)opts);
        opts = &latest;
    } else if (opts_version == 4) {
        EP_OPTS_FROM_QLOG(&latest, (const struct ep_opts_v4 *)(const void *)opts);
        opts = &latest;
    }
    const vega_mem *mem = opts->mem;
    if (mem && (!mem->malloc || !mem->calloc || !mem->realloc || !mem->free))
        return -EINVAL;
    if (opts->retry > VEGA_QUIC_RETRY_NEVER ||
        opts->quic.scid_prefix_len > VEGA_QUIC_MAX_SCID_PREFIX)
        return -EINVAL;
    struct vega_quic_endpoint *ep = vega__mem_calloc(mem, 1, sizeof *ep);
    if (!ep)
        return -ENOMEM;
    ep->o = *opts;
    ep->mem = mem;
    if (mem) {
        ep->qmem = (vega_quic_mem){qm_malloc, qm_calloc, qm_realloc, qm_free, (void *)mem};
    }
    if (!ep->o.max_conns)
        ep->o.max_conns = 10000;
    if (!ep->o.max_handshakes)
        ep->o.max_handshakes = 1000;
    if (!ep->o.retry_threshold)
        ep->o.retry_threshold = 100;
    if (!ep->o.token_lifetime_s)
        ep->o.token_lifetime_s = 86400;
    if (!ep->o.max_resets_per_s)
        ep->o.max_resets_per_s = 1000;
    int rc;
    if (opts->static_key)
        memcpy(ep->key, opts->static_key, sizeof ep->key);
    else if ((rc = vega_crypto_random(ep->key, sizeof ep->key)) < 0)
        goto fail;
    ep->o.static_key = NULL;
    if ((rc = derive(ep->key, "vega quic reset", ep->reset_key)) < 0 ||
        (rc = derive(ep->key, "vega quic token", ep->token_key)) < 0)
        goto fail;
    if ((rc = vega__ep_table_init(ep)) < 0)
        goto fail;
    vega__spin_init(&ep->conns_lock);
    vega__spin_init(&ep->accept_lock);
    vega__spin_init(&ep->reset_lock);
    vega_notify_init(&ep->idle_wake);
    vega_notify_init(&ep->accept_wake);
    atomic_init(&ep->shutting_down, false);
    atomic_init(&ep->handshakes, 0);
    atomic_init(&ep->client_socks, 0);
    *out = ep;
    return 0;
fail:
    vega__mem_free(mem, ep);
    return rc;
}

/* Opens the server's sockets: n bound to addr, or (fds) wraps duplicates of fds[0..n-1]. */
static int listen_open(vega_quic_endpoint *ep, const vega_addr *addr, unsigned flags,
                       const int *fds, size_t n)
{
    ep->socks = vega__mem_calloc(ep->mem, n, sizeof *ep->socks);
    if (!ep->socks)
        return -ENOMEM;
    vega_addr a;
    if (addr)
        a = *addr;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        int fd = -1;
        if (fds && (fd = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) < 0) {
            rc = -errno;
            break;
        }
        rc = vega__ep_sock_open(ep, &a, flags, true, fd, &ep->socks[i]); /* takes fd */
        if (rc < 0)
            break;
        ep->nsocks++;
        if (i == 0)
            a = ep->socks[0]->local; /* the others share the port the first one got */
    }
    return rc;
}

static int listen_start(vega_quic_endpoint *ep, const vega_addr *addr, unsigned flags,
                        const int *fds, size_t n, vega_addr *bound)
{
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    if (ep->listening)
        return -EBUSY;
    if (!ep->o.quic.tls.chain || !ep->o.quic.tls.key || ep->o.quic.tls.n_alpn == 0)
        return -EINVAL;
    int rc = listen_open(ep, addr, flags, fds, n);
    if (rc < 0)
        goto fail;
    ep->listening = true;
    for (size_t i = 0; i < ep->nsocks; i++)
        if ((rc = vega__ep_sock_start(ep->socks[i])) < 0)
            goto fail_started;
    if (bound)
        *bound = ep->socks[0]->local;
    return 0;
fail_started:
    ep->listening = false;
    for (size_t i = 0; i < ep->nsocks; i++) {
        struct ep_sock *s = ep->socks[i];
        atomic_store(&s->stop, true);
        if (s->rx_task) {
            vega_task_cancel(s->rx_task);
            vega_task_join(s->rx_task, NULL, VEGA_DEADLINE_NEVER);
        }
        if (s->tx_task) {
            vega_task_cancel(s->tx_task);
            vega_task_join(s->tx_task, NULL, VEGA_DEADLINE_NEVER);
        }
    }
fail:
    for (size_t i = 0; i < ep->nsocks; i++)
        vega__ep_sock_free(ep->socks[i]);
    vega__mem_free(ep->mem, ep->socks);
    ep->socks = NULL;
    ep->nsocks = 0;
    return rc;
}

int vega_quic_endpoint_listen(vega_quic_endpoint *ep, const vega_addr *addr, unsigned flags,
                              vega_addr *bound)
{
    if (!ep || !addr)
        return -EINVAL;
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    size_t n = ep->o.sockets ? ep->o.sockets : vega_rt_workers(vega_rt_current());
    return listen_start(ep, addr, flags, NULL, n ? n : 1, bound);
}

int vega_quic_endpoint_listen_fds(vega_quic_endpoint *ep, const int *fds, size_t n,
                                  vega_addr *bound)
{
    if (!ep || !fds || n == 0 || n > VEGA_QUIC_EP_MAX_FDS)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (fds[i] < 0)
            return -EINVAL;
    return listen_start(ep, NULL, 0, fds, n, bound);
}

int vega_quic_endpoint_accept(vega_quic_endpoint *ep, vega_quic_ep_conn **out, vega_deadline dl)
{
    if (!ep || !out)
        return -EINVAL;
    *out = NULL;
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    if (!ep->listening || ep->o.cb.on_conn)
        return -EINVAL;
    for (;;) {
        vega__spin_lock(&ep->accept_lock);
        if (ep->accept_len) {
            *out = ep->accept_q[ep->accept_head];
            ep->accept_head = (ep->accept_head + 1) % EP_ACCEPT_MAX;
            ep->accept_len--;
        }
        vega__spin_unlock(&ep->accept_lock);
        if (*out)
            return 0;
        if (atomic_load(&ep->shutting_down))
            return VEGA_ERR_CLOSED;
        int rc = vega_notify_wait(&ep->accept_wake, dl);
        if (rc < 0)
            return rc;
    }
}

void vega_quic_endpoint_shutdown(vega_quic_endpoint *ep, vega_deadline grace)
{
    if (!ep || atomic_exchange(&ep->shutting_down, true))
        return;
    ep->grace = grace;
    vega_notify_all(&ep->accept_wake);
    vega_notify_all(&ep->idle_wake);
    /* Close every connection: each under its own lock, taken without waiting (this may run
     * outside a task); a busy one is asked through its home's send task, which closes every
     * connection it flushes once the endpoint is shutting down. */
    vega__spin_lock(&ep->conns_lock);
    for (struct vega_quic_ep_conn *c = ep->conns; c; c = c->next) {
        if (vega_mutex_trylock(&c->mu)) {
            if (c->qc && !c->ended)
                (void)vega_quic_conn_close(c->qc, VEGA_QUIC_CLOSE_TRANSPORT, VEGA_QUIC_NO_ERROR,
                                           "shutdown");
            vega_mutex_unlock(&c->mu);
        }
        atomic_store(&c->abandon, true);
        if (c->home)
            vega__ep_conn_schedule(c);
    }
    vega__spin_unlock(&ep->conns_lock);
}

static bool all_gone(vega_quic_endpoint *ep)
{
    vega__spin_lock(&ep->conns_lock);
    bool gone = ep->nconns == 0;
    vega__spin_unlock(&ep->conns_lock);
    return gone && atomic_load(&ep->client_socks) == 0;
}

int vega_quic_endpoint_wait(vega_quic_endpoint *ep, vega_deadline dl)
{
    if (!ep)
        return -EINVAL;
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    while (!all_gone(ep)) {
        int rc = vega_notify_wait(&ep->idle_wake, dl);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static bool closes_sent(vega_quic_endpoint *ep)
{
    bool all = true;
    vega__spin_lock(&ep->conns_lock);
    for (struct vega_quic_ep_conn *c = ep->conns; c && all; c = c->next)
        all = atomic_load(&c->close_flushed);
    vega__spin_unlock(&ep->conns_lock);
    return all;
}

static void stop_server_socks(vega_quic_endpoint *ep)
{
    /* Every socket's tasks first: a datagram that reaches another socket than its connection's
     * home (the client migrated, or a NAT rebound it, to a 4-tuple the kernel hashes to another
     * SO_REUSEPORT socket) queues the connection on its home's dirty list, which must not have
     * been emptied already (its reference would be lost). */
    for (size_t i = 0; i < ep->nsocks; i++) {
        struct ep_sock *s = ep->socks[i];
        atomic_store(&s->stop, true);
        vega_task_cancel(s->rx_task);
        vega_task_cancel(s->tx_task);
    }
    for (size_t i = 0; i < ep->nsocks; i++) {
        struct ep_sock *s = ep->socks[i];
        vega__ep_join(s->rx_task);
        vega__ep_join(s->tx_task);
        s->rx_task = s->tx_task = NULL;
    }
    for (size_t i = 0; i < ep->nsocks; i++) {
        struct ep_sock *s = ep->socks[i];
        /* connections queued for a flush that will not come: the list's references */
        vega__spin_lock(&s->dirty_lock);
        struct vega_quic_ep_conn *c = s->dirty_head;
        s->dirty_head = s->dirty_tail = NULL;
        vega__spin_unlock(&s->dirty_lock);
        while (c) {
            struct vega_quic_ep_conn *next = c->dirty_next;
            atomic_store(&c->dirty, false);
            vega_quic_ep_conn_release(c);
            c = next;
        }
    }
}

/* After the tasks stopped: what is still open is dropped without a word (grace is over). */
static void drop_rest(vega_quic_endpoint *ep)
{
    for (;;) {
        vega__spin_lock(&ep->conns_lock);
        struct vega_quic_ep_conn *c = ep->conns;
        vega__spin_unlock(&ep->conns_lock);
        if (!c)
            return;
        (void)vega_mutex_lock(&c->mu, VEGA_DEADLINE_NEVER);
        if (c->home && c->heap_idx != SIZE_MAX) {
            /* the heap goes with the socket; the index must not dangle */
            c->heap_idx = SIZE_MAX;
        }
        vega__ep_conn_teardown(c);
        vega_mutex_unlock(&c->mu);
        vega_quic_ep_conn_release(c);
    }
}

void vega_quic_endpoint_free(vega_quic_endpoint *ep)
{
    if (!ep)
        return;
    vega_quic_endpoint_shutdown(ep, ep->grace ? ep->grace : vega_deadline_in_ms(1000));
    if (vega_task_current()) {
        /* until every connection's CONNECTION_CLOSE went out (or it ended): the closing periods
         * (3 PTO, RFC 9000 §10.2) are not sat out, nothing is left to answer after a free */
        while (!closes_sent(ep) && vega_now() < ep->grace)
            if (vega_notify_wait(&ep->idle_wake, vega_deadline_in_ms(10)) == -ECANCELED)
                break;
        /* client sockets end with their connections: wait for them a little longer */
        while (atomic_load(&ep->client_socks) > 0) {
            vega__spin_lock(&ep->conns_lock);
            for (struct vega_quic_ep_conn *c = ep->conns; c; c = c->next)
                if (c->home && c->home->owner == c)
                    atomic_store(&c->home->stop, true), vega__ep_conn_schedule(c);
            vega__spin_unlock(&ep->conns_lock);
            if (vega_notify_wait(&ep->idle_wake, vega_deadline_in_ms(100)) == -ECANCELED)
                break;
        }
        vega__spin_lock(&ep->conns_lock); /* the last client socket's wake is over (send.c) */
        vega__spin_unlock(&ep->conns_lock);
        stop_server_socks(ep);
    }
    drop_rest(ep);
    /* queued, never accepted */
    while (ep->accept_len) {
        vega_quic_ep_conn_release(ep->accept_q[ep->accept_head]);
        ep->accept_head = (ep->accept_head + 1) % EP_ACCEPT_MAX;
        ep->accept_len--;
    }
    for (size_t i = 0; i < ep->nsocks; i++)
        vega__ep_sock_free(ep->socks[i]);
    if (ep->socks)
        vega__mem_free(ep->mem, ep->socks);
    vega__ep_table_fini(ep);
    vega_notify_fini(&ep->idle_wake);
    vega_notify_fini(&ep->accept_wake);
    vega_crypto_cleanse(ep->key, sizeof ep->key);
    vega__mem_free(ep->mem, ep);
}

/* Each stats layout's size (API rules: ABI): index = version. */
static const size_t stats_layout[VEGA_QUIC_ENDPOINT_STATS_VERSION + 1] = {
    [1] = sizeof(vega_quic_endpoint_stats),
};

static void fill_stats(const vega_quic_endpoint *ep, vega_quic_endpoint_stats *st)
{
    vega_quic_endpoint *e = (vega_quic_endpoint *)ep;
    memset(st, 0, sizeof *st);
    vega__spin_lock(&e->conns_lock);
    st->conns_open = e->nconns;
    vega__spin_unlock(&e->conns_lock);
    st->handshakes = atomic_load(&e->handshakes);
    st->conns_accepted = atomic_load(&e->st_accepted);
    st->conns_refused = atomic_load(&e->st_refused);
    st->retries_sent = atomic_load(&e->st_retries);
    st->vn_sent = atomic_load(&e->st_vn);
    st->resets_sent = atomic_load(&e->st_resets);
    st->tokens_invalid = atomic_load(&e->st_tokens_bad);
    st->dgrams_in = atomic_load(&e->st_dgrams_in);
    st->dgrams_out = atomic_load(&e->st_dgrams_out);
    st->bytes_in = atomic_load(&e->st_bytes_in);
    st->bytes_out = atomic_load(&e->st_bytes_out);
    st->dgrams_dropped = atomic_load(&e->st_dropped);
    st->handshakes_ok = atomic_load(&e->st_hs_ok);
    st->handshakes_failed = atomic_load(&e->st_hs_failed);
    st->closed_idle = atomic_load(&e->st_closed_idle);
    st->closed_peer = atomic_load(&e->st_closed_peer);
    st->closed_local = atomic_load(&e->st_closed_local);
    st->early_accepted = atomic_load(&e->st_early_acc);
    st->early_rejected = atomic_load(&e->st_early_rej);
    st->pkts_sent = atomic_load(&e->st_pkts_sent);
    st->pkts_recv = atomic_load(&e->st_pkts_recv);
    st->pkts_lost = atomic_load(&e->st_pkts_lost);
    st->ptos = atomic_load(&e->st_ptos);
    for (size_t i = 0; i < VEGA_QUIC_EP_HS_BUCKETS; i++)
        st->hs_duration[i] = atomic_load(&e->st_hs_hist[i]);
    st->hs_duration_sum_ns = atomic_load(&e->st_hs_sum_ns);
}

int vega_quic_endpoint_get_stats_versioned(const vega_quic_endpoint *ep,
                                           vega_quic_endpoint_stats *st, int stats_version)
{
    if (!ep || !st || stats_version < 1 || stats_version > VEGA_QUIC_ENDPOINT_STATS_VERSION)
        return -EINVAL;
    vega_quic_endpoint_stats all;
    fill_stats(ep, &all);
    memcpy(st, &all, stats_layout[stats_version]);
    return 0;
}

size_t vega_quic_endpoint_new_pending(const vega_quic_endpoint *ep, uint64_t since)
{
    size_t n = 0;
    if (!ep)
        return 0;
    for (size_t i = 0; i < ep->nsocks; i++) {
        struct ep_sock *s = ep->socks[i];
        n += atomic_load_explicit(&s->pending, memory_order_acquire);
        if (atomic_load_explicit(&s->drained_at, memory_order_acquire) >= since)
            continue;
        /* not seen empty by its receive task since: is it now? (FIONREAD on a UDP socket is
         * the next datagram's size: 0 when none waits) */
        int fd = vega_sock_fd(s->sock), q = 0;
        if (fd < 0 || ioctl(fd, FIONREAD, &q) < 0 || q > 0)
            n++;
    }
    return n;
}

int vega_quic_endpoint_local_addr(const vega_quic_endpoint *ep, vega_addr *out)
{
    if (!ep || !out)
        return -EINVAL;
    if (ep->nsocks == 0)
        return -ENOTCONN;
    *out = ep->socks[0]->local;
    return 0;
}
