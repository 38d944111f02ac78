/* SPDX-License-Identifier: MIT */
/* Endpoint connections: the lock around a core connection, what the lock holder does before it
 * lets go (events to their takers, the connection ID table kept in step, the end noticed), the
 * hand-over to the home socket's send task, and the teardown. */
#include <string.h>
#include <time.h>

#include "ep_int.h"

uint64_t vega__ep_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct vega_quic_ep_conn *vega__ep_conn_new(struct vega_quic_endpoint *ep, struct ep_sock *home,
                                            bool server)
{
    struct vega_quic_ep_conn *c = vega__mem_calloc(ep->mem, 1, sizeof *c);
    if (!c)
        return NULL;
    c->ep = ep;
    c->mem = ep->mem;
    c->home = home;
    c->server = server;
    c->born = vega_now();
    vega_mutex_init(&c->mu);
    atomic_init(&c->refs, 1); /* the endpoint's, dropped at teardown */
    atomic_init(&c->dirty, false);
    atomic_init(&c->abandon, false);
    atomic_init(&c->close_flushed, false);
    c->heap_idx = SIZE_MAX;
    c->expiry = UINT64_MAX;
    vega_notify_init(&c->accept_wake);
    vega_notify_init(&c->credit_wake);
    vega_notify_init(&c->hs_wake);
    vega_notify_init(&c->end_wake);
    vega__spin_init(&c->peer_lock);
    return c;
}

void vega__ep_conn_list_add(struct vega_quic_endpoint *ep, struct vega_quic_ep_conn *c)
{
    vega__spin_lock(&ep->conns_lock);
    c->next = ep->conns;
    c->prev = NULL;
    if (ep->conns)
        ep->conns->prev = c;
    ep->conns = c;
    ep->nconns++;
    c->in_list = true;
    vega__spin_unlock(&ep->conns_lock);
}

static void list_del(struct vega_quic_endpoint *ep, struct vega_quic_ep_conn *c)
{
    vega__spin_lock(&ep->conns_lock);
    if (c->in_list) {
        if (c->prev)
            c->prev->next = c->next;
        else
            ep->conns = c->next;
        if (c->next)
            c->next->prev = c->prev;
        ep->nconns--;
        c->in_list = false;
    }
    vega__spin_unlock(&ep->conns_lock);
}

int vega__ep_conn_lock(struct vega_quic_ep_conn *c)
{
    /* Held only for core calls (never across a wait), so taking it is not a wait a task may
     * be cancelled out of: a cancelled task gets it too (by turns, yielding), and can then
     * finish what it was doing cleanly. */
    int rc = vega_mutex_lock(&c->mu, VEGA_DEADLINE_NEVER);
    while (rc == -ECANCELED) {
        (void)vega_yield();
        rc = vega_mutex_lock(&c->mu, 0) == 0 ? 0 : -ECANCELED;
    }
    return rc;
}

void vega__ep_conn_schedule(struct vega_quic_ep_conn *c)
{
    if (atomic_exchange_explicit(&c->dirty, true, memory_order_acq_rel))
        return; /* already queued */
    struct ep_sock *s = c->home;
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed); /* the dirty list's */
    vega__spin_lock(&s->dirty_lock);
    c->dirty_next = NULL;
    if (s->dirty_tail)
        s->dirty_tail->dirty_next = c;
    else
        s->dirty_head = c;
    s->dirty_tail = c;
    vega__spin_unlock(&s->dirty_lock);
    vega_notify_one(&s->tx_wake);
}

void vega__ep_conn_unlock(struct vega_quic_ep_conn *c, bool schedule)
{
    /* Decided and queued under the lock: once it is released, the home's send task may tear c
     * down and (a client's socket) free the home; a connection already torn down is never
     * queued (its home may be gone: a stream closed after its connection ended). */
    if (schedule && !c->freed)
        vega__ep_conn_schedule(c);
    vega_mutex_unlock(&c->mu);
}

/* ---- connection IDs ------------------------------------------------------------------------ */

static bool has_cid(const uint8_t *const *ids, const size_t *lens, size_t n, const uint8_t *cid,
                    size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (lens[i] == len && memcmp(ids[i], cid, len) == 0)
            return true;
    return false;
}

/* Keeps the table's entries for c equal to the CIDs the core says the peer may use now, kept in
 * the core's order so that the check after nearly every call (nothing changed) is one pass. */
static void sync_cids(struct vega_quic_ep_conn *c)
{
    const uint8_t *ids[EP_MAX_CIDS];
    size_t lens[EP_MAX_CIDS];
    size_t n = vega_quic_conn_scids(c->qc, ids, lens, EP_MAX_CIDS);
    if (n > EP_MAX_CIDS)
        n = EP_MAX_CIDS; /* more than we route: the peer uses the first ones (limit 4 today) */
    if (n == c->ncids) {
        size_t i = 0;
        while (i < n && lens[i] == c->cid_lens[i] && memcmp(ids[i], c->cids[i], lens[i]) == 0)
            i++;
        if (i == n)
            return;
    }
    /* drop the retired ones */
    for (size_t i = 0; i < c->ncids; i++)
        if (!has_cid(ids, lens, n, c->cids[i], c->cid_lens[i]))
            vega__ep_table_del(c->ep, c->cids[i], c->cid_lens[i], c);
    /* the new list, in the core's order: the ones we had, and the new ones that registered (a
     * collision of random CIDs, or no memory, leaves one out: it does not route) */
    uint8_t cids[EP_MAX_CIDS][VEGA_QUIC_MAX_CID_LEN];
    uint8_t cl[EP_MAX_CIDS];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool known = false;
        for (size_t j = 0; j < c->ncids && !known; j++)
            known = c->cid_lens[j] == lens[i] && memcmp(c->cids[j], ids[i], lens[i]) == 0;
        if (!known && vega__ep_table_add(c->ep, ids[i], lens[i], c) < 0)
            continue;
        memcpy(cids[k], ids[i], lens[i]);
        cl[k++] = (uint8_t)lens[i];
    }
    memcpy(c->cids, cids, sizeof cids);
    memcpy(c->cid_lens, cl, sizeof cl);
    c->ncids = k;
}

static void drop_odcid(struct vega_quic_ep_conn *c)
{
    if (c->odcid_registered) {
        vega__ep_table_del(c->ep, c->odcid, c->odcid_len, c);
        c->odcid_registered = false;
    }
}

/* ---- events ---------------------------------------------------------------------------------- */

static void hs_uncount(struct vega_quic_ep_conn *c)
{
    if (c->counted_hs) {
        c->counted_hs = false;
        atomic_fetch_sub_explicit(&c->ep->handshakes, 1, memory_order_relaxed);
    }
}

/* Server: the connection is ready for the application (handshake done, or a 0-RTT stream). */
static void take(struct vega_quic_ep_conn *c)
{
    struct vega_quic_endpoint *ep = c->ep;
    if (c->taken || !c->server)
        return;
    c->taken = true;
    if (ep->o.cb.on_conn) {
        if (ep->o.cb.on_conn(ep->o.user, c, c->qc) != 0) {
            atomic_fetch_add_explicit(&ep->st_refused, 1, memory_order_relaxed);
            vega_quic_conn_close(c->qc, VEGA_QUIC_CLOSE_TRANSPORT, VEGA_QUIC_CONNECTION_REFUSED,
                                 "refused");
            return;
        }
        c->app = ep->o.cb.on_event != NULL;
        return;
    }
    bool queued = false;
    vega__spin_lock(&ep->accept_lock);
    if (ep->accept_len < EP_ACCEPT_MAX && !atomic_load(&ep->shutting_down)) {
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed); /* the acceptor's */
        ep->accept_q[(ep->accept_head + ep->accept_len) % EP_ACCEPT_MAX] = c;
        ep->accept_len++;
        queued = true;
    }
    vega__spin_unlock(&ep->accept_lock);
    if (!queued) {
        atomic_fetch_add_explicit(&ep->st_refused, 1, memory_order_relaxed);
        vega_quic_conn_close(c->qc, VEGA_QUIC_CLOSE_TRANSPORT, VEGA_QUIC_CONNECTION_REFUSED,
                             "accept queue full");
        return;
    }
    vega_notify_one(&ep->accept_wake);
}

static void keep_copy(struct vega_quic_ep_conn *c, uint8_t **dst, size_t *dst_len,
                      const uint8_t *src, size_t len)
{
    uint8_t *p = len ? vega__mem_malloc(c->ep->mem, len) : NULL;
    if (len && !p)
        return; /* keep the old one */
    if (*dst)
        vega__mem_free(c->ep->mem, *dst);
    if (len)
        memcpy(p, src, len);
    *dst = p;
    *dst_len = len;
}

static void note_close(struct vega_quic_ep_conn *c, const vega_quic_event *ev)
{
    vega_quic_ep_close_info *ci = &c->close;
    if (ci->closed)
        return;
    ci->closed = true;
    ci->local = ev->local;
    ci->app = ev->app;
    ci->code = ev->error_code;
    size_t n = 0;
    for (size_t i = 0; i < ev->len && n + 1 < sizeof ci->reason; i++) {
        uint8_t b = ev->data[i];
        ci->reason[n++] = (char)(b >= 0x20 && b < 0x7f ? b : '?');
    }
    ci->reason[n] = 0;
    if (strstr(ci->reason, "idle timeout"))
        ci->idle_timeout = true;
    if (strstr(ci->reason, "stateless reset"))
        ci->reset = true;
}

#define ST_ADD(x, n) atomic_fetch_add_explicit(&(x), (n), memory_order_relaxed)

static void count_handshake(struct vega_quic_ep_conn *c)
{
    static const uint64_t bound_us[VEGA_QUIC_EP_HS_BUCKETS - 1] = VEGA_QUIC_EP_HS_BOUNDS_US;
    struct vega_quic_endpoint *ep = c->ep;
    uint64_t now = vega_now();
    uint64_t dur = now > c->born ? now - c->born : 0;
    size_t b = 0;
    while (b < VEGA_QUIC_EP_HS_BUCKETS - 1 && dur > bound_us[b] * VEGA_NS_PER_US)
        b++;
    ST_ADD(ep->st_hs_ok, 1);
    ST_ADD(ep->st_hs_hist[b], 1);
    ST_ADD(ep->st_hs_sum_ns, dur);
}

/* How the connection ended, from its last info and close, once (at teardown). */
static void count_end(struct vega_quic_ep_conn *c)
{
    struct vega_quic_endpoint *ep = c->ep;
    const vega_quic_conn_info *in = &c->last_info;
    if (!c->handshake_done)
        ST_ADD(ep->st_hs_failed, 1);
    else if (c->close.idle_timeout)
        ST_ADD(ep->st_closed_idle, 1);
    else if (!c->close.local)
        ST_ADD(ep->st_closed_peer, 1);
    else
        ST_ADD(ep->st_closed_local, 1);
    if (in->early_data == VEGA_QUIC_EARLY_ACCEPTED)
        ST_ADD(ep->st_early_acc, 1);
    else if (in->early_data == VEGA_QUIC_EARLY_REJECTED)
        ST_ADD(ep->st_early_rej, 1);
    ST_ADD(ep->st_pkts_sent, in->pkts_sent);
    ST_ADD(ep->st_pkts_recv, in->pkts_recv);
    ST_ADD(ep->st_pkts_lost, in->pkts_lost);
    ST_ADD(ep->st_ptos, in->ptos);
}

/* What the endpoint itself does with an event, before the application sees it. */
static void own_event(struct vega_quic_ep_conn *c, const vega_quic_event *ev)
{
    struct vega_quic_endpoint *ep = c->ep;
    switch (ev->type) {
    case VEGA_QUIC_EV_HANDSHAKE_DONE:
        if (!c->handshake_done)
            count_handshake(c);
        c->handshake_done = true;
        hs_uncount(c);
        drop_odcid(c);
        if (c->server && !ep->o.no_new_tokens && !c->token_sent) {
            uint8_t tok[64];
            vega_addr peer;
            vega_quic_ep_conn_peer(c, &peer);
            size_t n = vega__ep_new_token(ep, &peer, tok, sizeof tok);
            if (n && vega_quic_conn_new_token(c->qc, tok, n) == 0)
                c->token_sent = true;
        }
        take(c);
        vega_notify_all(&c->hs_wake);
        break;
    case VEGA_QUIC_EV_STREAM_OPENED:
        take(c);
        break;
    case VEGA_QUIC_EV_SESSION:
        keep_copy(c, &c->session, &c->session_len, ev->data, ev->len);
        break;
    case VEGA_QUIC_EV_NEW_TOKEN:
        keep_copy(c, &c->token, &c->token_len, ev->data, ev->len);
        break;
    case VEGA_QUIC_EV_PATH_CHANGED: {
        vega_quic_path p;
        vega_quic_conn_get_path(c->qc, &p);
        vega__spin_lock(&c->peer_lock);
        memcpy(&c->peer.ss, &p.remote, p.remote_len);
        c->peer.len = p.remote_len;
        vega__spin_unlock(&c->peer_lock);
        /* our migration's outcome: the home's send task acts on it (send.c) */
        if (!c->server && c->mig)
            c->mig_outcome = ev->error_code ? 1 : -1;
        break;
    }
    case VEGA_QUIC_EV_CLOSED:
        note_close(c, ev);
        hs_uncount(c);
        vega_notify_all(&c->hs_wake);
        vega__ep_stream_conn_ended(c);
        break;
    default:
        break;
    }
}

/* The default taker of events when the application has no on_event: peer streams queue for
 * vega_quic_ep_stream_accept. */
static void default_event(struct vega_quic_ep_conn *c, const vega_quic_event *ev)
{
    if (ev->type != VEGA_QUIC_EV_STREAM_OPENED)
        return;
    if (c->accept_len == EP_STREAM_ACCEPT_MAX) {
        /* nobody takes them: refuse rather than hold the peer's data */
        vega_quic_stream_stop(c->qc, ev->stream_id, 0);
        if ((ev->stream_id & 2) == 0)
            vega_quic_stream_reset(c->qc, ev->stream_id, 0);
        return;
    }
    c->accept_q[(c->accept_head + c->accept_len) % EP_STREAM_ACCEPT_MAX] = ev->stream_id;
    c->accept_len++;
    vega_notify_one(&c->accept_wake);
}

void vega__ep_conn_after(struct vega_quic_ep_conn *c)
{
    if (!c->qc)
        return;
    vega_quic_event ev;
    const vega_quic_ep_callbacks *cb = &c->ep->o.cb;
    while (vega_quic_conn_next_event(c->qc, &ev)) {
        own_event(c, &ev);
        if (vega__ep_stream_event(c, &ev))
            continue;
        if (c->app && cb->on_event)
            cb->on_event(c->user, c, c->qc, &ev);
        else
            default_event(c, &ev);
    }
    sync_cids(c);
    if (!c->ended && vega_quic_conn_is_closed(c->qc))
        c->ended = true; /* the send task tears it down */
}

void vega__ep_conn_teardown(struct vega_quic_ep_conn *c)
{
    struct vega_quic_endpoint *ep = c->ep;
    if (c->freed)
        return;
    for (size_t i = 0; i < c->ncids; i++)
        vega__ep_table_del(ep, c->cids[i], c->cid_lens[i], c);
    c->ncids = 0;
    drop_odcid(c);
    hs_uncount(c);
    if (c->qc) {
        vega_quic_conn_get_info(c->qc, &c->last_info);
        if (!c->close.closed) {
            c->close.closed = true;
            c->close.local = true;
        }
        vega_quic_conn_free(c->qc);
        c->qc = NULL;
        count_end(c);
    }
    vega__ep_qlog_close(c);
    vega__ep_stream_conn_ended(c);
    c->freed = true;
    if (c->app && ep->o.cb.on_closed)
        ep->o.cb.on_closed(c->user, c);
    vega_notify_all(&c->end_wake);
    vega_notify_all(&c->hs_wake);
    vega_notify_all(&c->accept_wake);
    list_del(ep, c);
    vega_notify_all(&ep->idle_wake);
}

/* ---- the public handle --------------------------------------------------------------------- */

vega_quic_conn *vega_quic_ep_conn_lock(vega_quic_ep_conn *c)
{
    if (!c || vega__ep_conn_lock(c) < 0)
        return NULL;
    if (!c->qc) {
        vega_mutex_unlock(&c->mu);
        return NULL;
    }
    return c->qc;
}

void vega_quic_ep_conn_unlock(vega_quic_ep_conn *c)
{
    vega__ep_conn_after(c);
    vega__ep_conn_unlock(c, true);
}

void *vega_quic_ep_conn_get_user(const vega_quic_ep_conn *c)
{
    return c ? c->user : NULL;
}

void vega_quic_ep_conn_set_user(vega_quic_ep_conn *c, void *user)
{
    if (c)
        c->user = user;
}

void vega_quic_ep_conn_retain(vega_quic_ep_conn *c)
{
    if (c)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

void vega_quic_ep_conn_release(vega_quic_ep_conn *c)
{
    if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    const vega_mem *mem = c->mem;
    if (c->cfg_session)
        vega__mem_free(mem, c->cfg_session);
    if (c->cfg_token)
        vega__mem_free(mem, c->cfg_token);
    if (c->session)
        vega__mem_free(mem, c->session);
    if (c->token)
        vega__mem_free(mem, c->token);
    vega__ep_qlog_free(c);
    vega_mutex_fini(&c->mu);
    vega__mem_free(mem, c);
}

int vega_quic_ep_conn_close(vega_quic_ep_conn *c, vega_quic_close_kind kind, uint64_t code,
                            const char *reason)
{
    if (!c || (kind != VEGA_QUIC_CLOSE_TRANSPORT && kind != VEGA_QUIC_CLOSE_APPLICATION))
        return -EINVAL;
    vega_quic_conn *qc = vega_quic_ep_conn_lock(c);
    if (!qc)
        return VEGA_ERR_CLOSED;
    int rc = vega_quic_conn_close(qc, kind, code, reason);
    vega_quic_ep_conn_unlock(c);
    return rc < 0 && rc != -EINVAL ? VEGA_ERR_CLOSED : rc;
}

int vega_quic_ep_conn_wait_closed(vega_quic_ep_conn *c, vega_deadline dl)
{
    if (!c)
        return -EINVAL;
    for (;;) {
        if (vega__ep_conn_lock(c) < 0)
            return -ECANCELED;
        bool done = c->freed;
        vega_mutex_unlock(&c->mu);
        if (done)
            return 0;
        int rc = vega_notify_wait(&c->end_wake, dl);
        if (rc < 0)
            return rc;
    }
}

/* Each vega_quic_ep_close_info layout's size (API rules: ABI): index = version. */
static const size_t close_info_layout[VEGA_QUIC_EP_CLOSE_INFO_VERSION + 1] = {
    [1] = sizeof(vega_quic_ep_close_info),
};

int vega_quic_ep_conn_get_close_versioned(const vega_quic_ep_conn *c, vega_quic_ep_close_info *out,
                                          int info_version)
{
    if (!c || !out || info_version < 1 || info_version > VEGA_QUIC_EP_CLOSE_INFO_VERSION)
        return -EINVAL;
    /* written under the lock by the lock holder; a reader racing with the close may see it half
     * made, so readers call this after the close showed (an error, wait_closed) */
    memcpy(out, &c->close, close_info_layout[info_version]);
    return 0;
}

/* Each vega_quic_conn_info layout's size (API rules: ABI): index = version. The core keeps the
 * same table (lib/quic/conn.c): a connection that has ended has only its last values here. */
static const size_t conn_info_layout[VEGA_QUIC_CONN_INFO_VERSION + 1] = {
    [1] = sizeof(vega_quic_conn_info),
};

int vega_quic_ep_conn_get_info_versioned(vega_quic_ep_conn *c, vega_quic_conn_info *info,
                                         int info_version)
{
    if (!c || !info || info_version < 1 || info_version > VEGA_QUIC_CONN_INFO_VERSION)
        return -EINVAL;
    vega_quic_conn_info all;
    if (vega__ep_conn_lock(c) < 0) {
        all = c->last_info;
    } else {
        if (c->qc)
            vega_quic_conn_get_info(c->qc, &all);
        else
            all = c->last_info;
        vega_mutex_unlock(&c->mu);
    }
    memcpy(info, &all, conn_info_layout[info_version]);
    return 0;
}

void vega_quic_ep_conn_peer(const vega_quic_ep_conn *c, vega_addr *out)
{
    vega__spin *l = (vega__spin *)&c->peer_lock;
    vega__spin_lock(l);
    *out = c->peer;
    vega__spin_unlock(l);
}

static vega_ssize copy_out(struct vega_quic_ep_conn *c, bool session, uint8_t *buf, size_t cap)
{
    if (!c || (!buf && cap))
        return -EINVAL;
    if (vega__ep_conn_lock(c) < 0)
        return -ECANCELED;
    const uint8_t *src = session ? c->session : c->token;
    size_t len = session ? c->session_len : c->token_len;
    vega_ssize n = (vega_ssize)len;
    if (buf && len > cap)
        n = VEGA_ERR_NOBUF;
    else if (buf && len)
        memcpy(buf, src, len);
    vega_mutex_unlock(&c->mu);
    return n;
}

vega_ssize vega_quic_ep_conn_get_session(vega_quic_ep_conn *c, uint8_t *buf, size_t cap)
{
    return copy_out(c, true, buf, cap);
}

vega_ssize vega_quic_ep_conn_get_token(vega_quic_ep_conn *c, uint8_t *buf, size_t cap)
{
    return copy_out(c, false, buf, cap);
}
