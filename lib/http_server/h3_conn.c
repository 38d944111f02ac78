/* SPDX-License-Identifier: MIT */
/* HTTP/3 connections of the HTTP server (RFC 9114 §3-§6): the QUIC endpoint's callbacks drive
 * each connection's HTTP/3 core under the connection's lock (so an idle connection holds no
 * task): the three unidirectional streams we open (§6.2), the peer's control and QPACK
 * streams, request streams read up to the end of their HEADERS frame (then a task runs the
 * handler and reads the body itself), resets and stop requests both ways, GOAWAY on shutdown
 * (§5.2). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "h3_int.h"

static const vega_h3_callbacks h3s_cb;

/* ---- requests ------------------------------------------------------------------------------ */

static struct h3s_req *find_req(const struct h3s_conn *hc, uint64_t sid)
{
    for (struct h3s_req *r = hc->reqs; r; r = r->next)
        if (r->sid == sid)
            return r;
    return NULL;
}

struct h3s_req *vega__h3s_req_alloc(struct h3s *l)
{
    vega__spin_lock(&l->pool_lock);
    struct h3s_req *r = l->pool;
    if (r) {
        l->pool = r->next;
        l->npool--;
    }
    vega__spin_unlock(&l->pool_lock);
    if (!r && !(r = vega__mem_malloc(l->srv->o.mem, sizeof *r + H3S_OUT_CAP)))
        return NULL;
    memset(r, 0, sizeof *r);
    r->out = (uint8_t *)(r + 1);
    return r;
}

void vega__h3s_pool_free(struct h3s *l)
{
    while (l->pool) {
        struct h3s_req *r = l->pool;
        l->pool = r->next;
        vega__mem_free(l->srv->o.mem, r);
    }
    l->npool = 0;
}

static struct h3s_req *req_new(struct h3s_conn *hc, uint64_t sid)
{
    struct h3s_req *r = vega__h3s_req_alloc(hc->l);
    if (!r)
        return NULL;
    r->hc = hc;
    r->sid = sid;
    vega_notify_init(&r->rd);
    vega_notify_init(&r->wr);
    r->next = hc->reqs;
    hc->reqs = r;
    hc->nreqs++;
    atomic_fetch_add_explicit(&hc->refs, 1, memory_order_relaxed);
    return r;
}

void vega__h3s_req_unlink(struct h3s_req *r)
{
    struct h3s_conn *hc = r->hc;
    for (struct h3s_req **p = &hc->reqs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            hc->nreqs--;
            return;
        }
}

/* A request whose task never started (still reading its head, or deferred): it goes with its
 * stream (c locked). */
static void drop_idle_req(struct h3s_req *r)
{
    if (r->task)
        return;
    vega__h3s_req_unlink(r);
    vega__h3s_req_free(r);
}

static void wake_req(struct h3s_req *r)
{
    vega_notify_one(&r->rd);
    vega_notify_one(&r->wr);
}

/* ---- the frame walk of the HEAD phase ------------------------------------------------------ */

static size_t varint_len(uint8_t first)
{
    return (size_t)1 << (first >> 6);
}

static uint64_t varint_val(const uint8_t *p, size_t n)
{
    uint64_t v = p[0] & 0x3f;
    for (size_t i = 1; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Length of the frame header in fh[0..len) once both varints are there, else 0; *payload
 * receives the frame's length. */
static size_t frame_header(const uint8_t *fh, size_t len, uint64_t *payload)
{
    if (len == 0)
        return 0;
    size_t t = varint_len(fh[0]);
    if (len < t + 1)
        return 0;
    size_t l = varint_len(fh[t]);
    if (len < t + l)
        return 0;
    *payload = varint_val(fh + t, l);
    return t + l;
}

/* How many of d[0..len) belong to the frame the stream is in (so that feeding them stops at its
 * end); with commit, moves past them. */
static size_t frame_walk(struct h3s_req *r, const uint8_t *d, size_t len, bool commit)
{
    size_t used = 0;
    uint8_t fh[16];
    size_t fh_len = r->fh_len;
    bool known = r->fknown;
    uint64_t left = r->fleft;
    memcpy(fh, r->fh, fh_len);
    while (!known && used < len && fh_len < sizeof fh) {
        fh[fh_len++] = d[used++];
        uint64_t payload;
        size_t hl = frame_header(fh, fh_len, &payload);
        if (hl) {
            known = true;
            left = payload;
        }
    }
    if (known) {
        size_t take = len - used < left ? len - used : (size_t)left;
        used += take;
        left -= take;
    }
    if (commit) {
        if (known && left == 0) {
            r->fknown = false;
            r->fh_len = 0;
            r->fleft = 0;
        } else {
            r->fknown = known;
            memcpy(r->fh, fh, fh_len);
            r->fh_len = fh_len;
            r->fleft = left;
        }
    }
    return used;
}

/* ---- feeding the h3 core -------------------------------------------------------------------- */

static void conn_error(struct h3s_conn *hc, vega_quic_conn *qc, vega_ssize rc)
{
    const char *reason = NULL;
    uint64_t code = vega_h3_conn_get_error(hc->h3, &reason);
    if (!code)
        code = rc == -ENOMEM ? VEGA_H3_EXCESSIVE_LOAD : VEGA_H3_INTERNAL_ERROR;
    (void)vega_quic_conn_close(qc, VEGA_QUIC_CLOSE_APPLICATION, code, reason);
    hc->closed = true;
}

/* Feeds what a peer's unidirectional stream holds. */
static void feed_uni(struct h3s_conn *hc, vega_quic_conn *qc, uint64_t sid)
{
    for (int i = 0; i < 256 && !hc->closed; i++) {
        const uint8_t *d;
        size_t len;
        bool fin;
        if (vega_quic_stream_peek(qc, sid, &d, &len, &fin) < 0 || (len == 0 && !fin))
            return;
        vega_ssize n = vega_h3_conn_read_stream(hc->h3, sid, d, len, fin);
        if (n < 0) {
            conn_error(hc, qc, n);
            return;
        }
        (void)vega_quic_stream_consume(qc, sid, (size_t)n);
        if ((size_t)n < len || fin)
            return;
    }
}

/* Feeds a request stream up to the end of its HEADERS frame (its head; the body is the task's). */
static void feed_head(struct h3s_conn *hc, vega_quic_conn *qc, struct h3s_req *r)
{
    while (r->phase == H3S_HEAD && !r->failed && !r->reset && !hc->closed) {
        const uint8_t *d;
        size_t len;
        bool fin;
        if (vega_quic_stream_peek(qc, r->sid, &d, &len, &fin) < 0 || (len == 0 && !fin))
            return;
        size_t span = frame_walk(r, d, len, false);
        bool f = fin && span == len;
        vega_ssize n = vega_h3_conn_read_stream(hc->h3, r->sid, d, span, f);
        if (n < 0) {
            conn_error(hc, qc, n);
            return;
        }
        frame_walk(r, d, (size_t)n, true);
        (void)vega_quic_stream_consume(qc, r->sid, (size_t)n);
        if ((size_t)n < span || f)
            return; /* blocked on QPACK (on_stream_unblocked will say), or the stream ended */
    }
}

static void on_readable(struct h3s_conn *hc, vega_quic_conn *qc, uint64_t sid)
{
    if (sid & 2) {
        feed_uni(hc, qc, sid);
        return;
    }
    if (sid & 1)
        return; /* a server-initiated bidirectional stream: we open none */
    struct h3s_req *r = find_req(hc, sid);
    if (!r) {
        if (!(r = req_new(hc, sid))) {
            (void)vega_quic_stream_stop(qc, sid, VEGA_H3_REQUEST_REJECTED);
            (void)vega_quic_stream_reset(qc, sid, VEGA_H3_REQUEST_REJECTED);
            return;
        }
    }
    if (r->phase == H3S_HEAD)
        feed_head(hc, qc, r);
    else
        vega_notify_one(&r->rd);
}

static void queue(struct h3s_conn *hc, enum h3s_action_kind kind, uint64_t sid, uint64_t code)
{
    if (hc->nact == H3S_ACTIONS_MAX) {
        hc->act_overflow = true;
        return;
    }
    hc->act[hc->nact++] = (struct h3s_action){sid, code, kind};
}

void vega__h3s_actions(struct h3s_conn *hc, vega_quic_conn *qc)
{
    /* an action may queue more (a fed stream's callbacks): a bounded number of rounds */
    for (int round = 0; round < 8 && hc->nact > 0; round++) {
        struct h3s_action act[H3S_ACTIONS_MAX];
        size_t n = hc->nact;
        memcpy(act, hc->act, n * sizeof act[0]);
        hc->nact = 0;
        for (size_t i = 0; i < n; i++) {
            struct h3s_action *a = &act[i];
            struct h3s_req *r = find_req(hc, a->sid);
            switch (a->kind) {
            case H3S_ACT_RESET:
                (void)vega_quic_stream_stop(qc, a->sid, a->code);
                (void)vega_quic_stream_reset(qc, a->sid, a->code);
                (void)vega_h3_conn_close_stream(hc->h3, a->sid);
                if (r) {
                    r->failed = true;
                    r->err_code = a->code;
                    wake_req(r);
                    drop_idle_req(r);
                }
                break;
            case H3S_ACT_STOP:
                (void)vega_quic_stream_stop(qc, a->sid, a->code);
                break;
            case H3S_ACT_FEED:
                if (a->sid & 2)
                    feed_uni(hc, qc, a->sid);
                else if (r && r->phase == H3S_HEAD)
                    feed_head(hc, qc, r);
                else if (r)
                    vega_notify_one(&r->rd);
                break;
            }
        }
    }
    if (hc->act_overflow && !hc->closed) {
        (void)vega_quic_conn_close(qc, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_EXCESSIVE_LOAD,
                                   "too many stream events at once");
        hc->closed = true;
    }
}

/* ---- our unidirectional streams ------------------------------------------------------------ */

static struct h3s_pending *pend_of(struct h3s_conn *hc, uint64_t sid)
{
    for (size_t i = 0; i < 3; i++)
        if (hc->pend[i].sid == sid)
            return &hc->pend[i];
    return NULL;
}

static int pend_add(struct h3s_conn *hc, struct h3s_pending *p, const uint8_t *d, size_t n)
{
    if (!vega__fits(p->len, n, H3S_UNI_PENDING_MAX))
        return -ENOBUFS;
    if (!vega__fits(p->len, n, p->cap)) {
        size_t cap = p->cap ? p->cap : 1024;
        while (!vega__fits(p->len, n, cap))
            cap *= 2;
        uint8_t *b = vega__mem_realloc(hc->l->srv->o.mem, p->buf, cap);
        if (!b)
            return -ENOMEM;
        p->buf = b;
        p->cap = cap;
    }
    memcpy(p->buf + p->len, d, n);
    p->len += n;
    return 0;
}

int vega__h3s_flush_uni(struct h3s_conn *hc, vega_quic_conn *qc)
{
    if (!hc->bound || hc->closed)
        return 0;
    for (size_t i = 0; i < 3; i++) {
        struct h3s_pending *p = &hc->pend[i];
        if (!p->len)
            continue;
        vega_ssize w = vega_quic_stream_write(qc, p->sid, p->buf, p->len, false);
        if (w > 0) {
            memmove(p->buf, p->buf + w, p->len - (size_t)w);
            p->len -= (size_t)w;
        }
    }
    for (int i = 0; i < 64; i++) {
        uint8_t tmp[4096];
        uint64_t sid;
        vega_ssize n = vega_h3_conn_write_uni(hc->h3, &sid, tmp, sizeof tmp);
        if (n <= 0)
            break;
        struct h3s_pending *p = pend_of(hc, sid);
        if (!p)
            break;
        size_t off = 0;
        if (!p->len) {
            vega_ssize w = vega_quic_stream_write(qc, sid, tmp, (size_t)n, false);
            off = w > 0 ? (size_t)w : 0;
        }
        if (off < (size_t)n && pend_add(hc, p, tmp + off, (size_t)n - off) < 0) {
            (void)vega_quic_conn_close(qc, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_EXCESSIVE_LOAD,
                                       "control streams blocked");
            hc->closed = true;
            return -ENOBUFS;
        }
    }
    return 0;
}

/* ---- the endpoint's callbacks ---------------------------------------------------------------- */

static int on_conn(void *ep_user, vega_quic_ep_conn *c, vega_quic_conn *qc)
{
    struct h3s *l = ep_user;
    vega_http_server *srv = l->srv;
    /* A handshake that ended after the stop began (vega__h3s_stop waits for those in progress,
     * but one may end after its quiet window) is refused (RFC 9000 §20.1 CONNECTION_REFUSED: none
     * of its requests was processed; lib/http_client and vega-load retry them once). Taking it
     * and sending GOAWAY 0 instead was tried: a connection taken after the stop's close phase
     * was closed before its GOAWAY reached the client (requests lost), and against a server
     * that stops for good a client reconnected in a loop without back-off. */
    if (atomic_load(&l->stopping))
        return -1;
    struct h3s_conn *hc = vega__mem_calloc(srv->o.mem, 1, sizeof *hc);
    if (!hc)
        return -1;
    hc->l = l;
    hc->qc = c;
    atomic_init(&hc->refs, 1);
    atomic_fetch_add(&l->refs, 1);
    hc->id = atomic_fetch_add(&srv->next_id, 1) + 1;
    uint64_t ids[3];
    int rc = vega_h3_conn_server_new(&hc->h3, &h3s_cb, &l->h3o, hc);
    for (size_t i = 0; rc == 0 && i < 3; i++)
        rc = vega_quic_stream_open(qc, false, &ids[i]);
    if (rc == 0)
        rc = vega_h3_conn_bind_streams(hc->h3, ids[0], ids[1], ids[2]);
    if (rc < 0) {
        vega_h3_conn_free(hc->h3);
        vega__mem_free(srv->o.mem, hc);
        atomic_fetch_sub(&l->refs, 1);
        return -1;
    }
    for (size_t i = 0; i < 3; i++)
        hc->pend[i].sid = ids[i];
    hc->bound = true;
    (void)vega_quic_conn_set_send_budget(qc, l->send_budget);
    vega_quic_ep_conn_retain(c);
    vega_quic_ep_conn_set_user(c, hc);
    pthread_mutex_lock(&l->lock);
    hc->next = l->conns;
    if (l->conns)
        l->conns->prev = hc;
    l->conns = hc;
    pthread_mutex_unlock(&l->lock);
    atomic_fetch_add(&l->nconns, 1);
    atomic_fetch_add_explicit(&srv->conns_accepted, 1, memory_order_relaxed);
    (void)vega__h3s_flush_uni(hc, qc);
    return 0;
}

/* The deferred 0-RTT requests may start once the handshake is done. */
static void start_deferred(struct h3s_conn *hc)
{
    for (struct h3s_req *r = hc->reqs; r; r = r->next)
        if (r->early && !r->task && !r->failed) {
            r->early = false;
            if (vega__h3s_req_start(r, NULL) < 0)
                queue(hc, H3S_ACT_RESET, r->sid, VEGA_H3_INTERNAL_ERROR);
        }
}

static void on_event(void *conn_user, vega_quic_ep_conn *c, vega_quic_conn *qc,
                     const vega_quic_event *ev)
{
    (void)c;
    struct h3s_conn *hc = conn_user;
    if (!hc)
        return;
    hc->cur = qc;
    uint64_t sid = ev->stream_id;
    struct h3s_req *r;
    switch (ev->type) {
    case VEGA_QUIC_EV_STREAM_OPENED:
    case VEGA_QUIC_EV_STREAM_READABLE:
        on_readable(hc, qc, sid);
        break;
    case VEGA_QUIC_EV_STREAM_WRITABLE:
        if (pend_of(hc, sid))
            (void)vega__h3s_flush_uni(hc, qc);
        else if ((r = find_req(hc, sid)))
            vega_notify_one(&r->wr);
        break;
    case VEGA_QUIC_EV_STREAM_RESET:
    case VEGA_QUIC_EV_STREAM_STOP:
        if ((sid & 2) || pend_of(hc, sid)) {
            /* §6.2.1: a control or QPACK stream must never end */
            if (vega_h3_conn_close_stream(hc->h3, sid) < 0 || pend_of(hc, sid))
                conn_error(hc, qc, VEGA_ERR_PROTO);
            break;
        }
        if ((r = find_req(hc, sid))) {
            if (ev->type == VEGA_QUIC_EV_STREAM_RESET) {
                r->reset = true;
                (void)vega_h3_conn_close_stream(hc->h3, sid);
            } else {
                r->stop = true;
            }
            r->err_code = ev->error_code;
            wake_req(r);
            if (ev->type == VEGA_QUIC_EV_STREAM_RESET)
                drop_idle_req(r);
        }
        break;
    case VEGA_QUIC_EV_STREAM_DONE:
        if ((sid & 2) == 0 && hc->unacked > 0)
            hc->unacked--;
        vega_notify_all(&hc->l->idle);
        break;
    case VEGA_QUIC_EV_HANDSHAKE_DONE:
        start_deferred(hc);
        break;
    case VEGA_QUIC_EV_CLOSED:
        hc->closed = true;
        for (r = hc->reqs; r; r = r->next)
            wake_req(r);
        break;
    default:
        break;
    }
    vega__h3s_actions(hc, qc);
    (void)vega__h3s_flush_uni(hc, qc);
    hc->cur = NULL;
}

static void on_closed(void *conn_user, vega_quic_ep_conn *c)
{
    (void)c;
    struct h3s_conn *hc = conn_user;
    if (!hc)
        return;
    struct h3s *l = hc->l;
    hc->closed = true;
    for (struct h3s_req *r = hc->reqs, *next; r; r = next) {
        next = r->next;
        wake_req(r);
        drop_idle_req(r);
    }
    pthread_mutex_lock(&l->lock);
    if (hc->prev)
        hc->prev->next = hc->next;
    else
        l->conns = hc->next;
    if (hc->next)
        hc->next->prev = hc->prev;
    pthread_mutex_unlock(&l->lock);
    atomic_fetch_sub(&l->nconns, 1);
    vega_notify_all(&l->idle);
    vega__h3s_conn_unref(hc);
}

void vega__h3s_conn_unref(struct h3s_conn *hc)
{
    if (atomic_fetch_sub_explicit(&hc->refs, 1, memory_order_acq_rel) != 1)
        return;
    struct h3s *l = hc->l;
    const vega_mem *m = l->srv->o.mem;
    for (size_t i = 0; i < 3; i++)
        vega__mem_free(m, hc->pend[i].buf);
    vega_h3_conn_free(hc->h3);
    vega_quic_ep_conn_release(hc->qc);
    vega__mem_free(m, hc);
    vega_notify_all(&l->idle);
    atomic_fetch_sub(&l->refs, 1); /* last: l may be freed from here on */
}

/* ---- the h3 core's callbacks (a peeked span is in use: QUIC calls are queued) --------------- */

static int cb_headers(void *ud, uint64_t sid, const vega_h3_head *head)
{
    struct h3s_conn *hc = ud;
    struct h3s_req *r = find_req(hc, sid);
    if (!r || head->kind != VEGA_H3_HEAD_INITIAL || r->phase != H3S_HEAD)
        return 0; /* trailers of a request: nothing in the exchange API reads them */
    r->phase = H3S_RUN;
    if (vega__h3s_req_start(r, head) < 0)
        queue(hc, H3S_ACT_RESET, sid, VEGA_H3_INTERNAL_ERROR);
    return 0;
}

static int cb_data(void *ud, uint64_t sid, const uint8_t *data, size_t len)
{
    struct h3s_conn *hc = ud;
    struct h3s_req *r = find_req(hc, sid);
    if (!r)
        return 0;
    /* the task fed at most the room it has, so the payload fits */
    if (!r->dst || !vega__fits(r->dst_got, len, r->dst_len)) {
        queue(hc, H3S_ACT_RESET, sid, VEGA_H3_INTERNAL_ERROR);
        return 0;
    }
    memcpy(r->dst + r->dst_got, data, len);
    r->dst_got += len;
    return 0;
}

static int cb_end_stream(void *ud, uint64_t sid)
{
    struct h3s_conn *hc = ud;
    struct h3s_req *r = find_req(hc, sid);
    if (r) {
        r->fin_recv = true;
        vega_notify_one(&r->rd);
    }
    return 0;
}

static int cb_stream_error(void *ud, uint64_t sid, uint64_t code)
{
    struct h3s_conn *hc = ud;
    struct vega_http_server *srv = hc->l->srv;
    atomic_fetch_add_explicit(&srv->bad_requests, 1, memory_order_relaxed);
    queue(hc, H3S_ACT_RESET, sid, code);
    return 0;
}

static int cb_unblocked(void *ud, uint64_t sid)
{
    queue(ud, H3S_ACT_FEED, sid, 0);
    return 0;
}

static int cb_stop_sending(void *ud, uint64_t sid, uint64_t code)
{
    queue(ud, H3S_ACT_STOP, sid, code);
    return 0;
}

static const vega_h3_callbacks h3s_cb = {
    .on_headers = cb_headers,
    .on_data = cb_data,
    .on_end_stream = cb_end_stream,
    .on_stream_error = cb_stream_error,
    .on_stream_unblocked = cb_unblocked,
    .on_stop_sending = cb_stop_sending,
};

/* ---- listening and stopping ---------------------------------------------------------------- */

/* Layout 1 ends where version 2's qlog_dir starts, layout 2 where version 3's budget does,
 * layout 3 where version 4's fds do, layout 4 where version 5's websocket does. */
#define H3S_OPTS_V1_SIZE offsetof(vega_http_server_h3_opts, qlog_dir)
#define H3S_OPTS_V2_SIZE offsetof(vega_http_server_h3_opts, conn_send_budget)
#define H3S_OPTS_V3_SIZE offsetof(vega_http_server_h3_opts, fds)
#define H3S_OPTS_V4_SIZE offsetof(vega_http_server_h3_opts, websocket)

/* The size of a layout (a known version). */
static size_t opts_size(int opts_version)
{
    return opts_version == 1   ? H3S_OPTS_V1_SIZE
           : opts_version == 2 ? H3S_OPTS_V2_SIZE
           : opts_version == 3 ? H3S_OPTS_V3_SIZE
           : opts_version == 4 ? H3S_OPTS_V4_SIZE
                               : sizeof(vega_http_server_h3_opts);
}

void vega_http_server_h3_opts_init_versioned(vega_http_server_h3_opts *o, int opts_version)
{
    if (opts_version < 1 || opts_version > VEGA_HTTP_SERVER_H3_OPTS_VERSION)
        VEGA_PANIC("vega_http_server_h3_opts_init: unknown layout version %d", opts_version);
    memset(o, 0, opts_size(opts_version));
}

int vega__h3s_listen(vega_http_server *srv, const vega_addr *addr, unsigned flags,
                     const vega_http_server_h3_opts *o, vega_addr *bound)
{
    struct h3s *l = vega__mem_calloc(srv->o.mem, 1, sizeof *l);
    if (!l)
        return -ENOMEM;
    l->srv = srv;
    l->o = *o;
    l->send_budget = o->conn_send_budget ? o->conn_send_budget : H3S_SEND_BUDGET;
    pthread_mutex_init(&l->lock, NULL);
    vega_notify_init(&l->idle);
    atomic_init(&l->refs, 1);
    vega__spin_init(&l->pool_lock);
    vega__spin_init(&l->chunk_lock);
    vega_h3_opts_init(&l->h3o);
    l->h3o.max_field_section_size = srv->o.limits.max_field_section;
    l->h3o.max_fields = srv->o.limits.max_fields;
    l->h3o.mem = srv->o.mem;
    l->h3o.enable_connect_protocol = o->websocket; /* RFC 9220 §3 */
    vega_quic_endpoint_opts eo;
    vega_quic_endpoint_opts_init(&eo);
    eo.quic.tls.chain = o->chain;
    eo.quic.tls.key = o->key;
    eo.quic.tls.ticket_key = o->ticket_key;
    eo.quic.tls.early_data = o->early_data && o->ticket_key;
    memcpy(eo.quic.tls.suites, o->suites, sizeof o->suites);
    eo.quic.tls.n_suites = o->n_suites;
    eo.quic.keylog = o->keylog;
    eo.quic.keylog_user = o->keylog_user;
    eo.quic.tls.alpn[0] = "h3";
    eo.quic.tls.n_alpn = 1;
    eo.quic.max_streams_bidi = o->max_streams ? o->max_streams : 100;
    eo.quic.max_streams_uni = 16;
    eo.quic.idle_timeout_ms =
        o->idle_timeout_ms ? o->idle_timeout_ms : srv->o.idle_timeout_ns / VEGA_NS_PER_MS;
    eo.cb.on_conn = on_conn;
    eo.cb.on_event = on_event;
    eo.cb.on_closed = on_closed;
    eo.user = l;
    eo.sockets = o->sockets;
    eo.max_conns = o->max_conns ? o->max_conns : srv->o.max_conns;
    eo.retry = o->retry;
    eo.static_key = o->static_key;
    eo.mem = srv->o.mem;
    eo.qlog_dir = o->qlog_dir;
    memcpy(eo.quic.scid_prefix, o->cid_prefix, sizeof o->cid_prefix);
    eo.quic.scid_prefix_len = o->cid_prefix_len;
    int rc = vega_quic_endpoint_new(&l->ep, &eo);
    if (rc == 0)
        rc = o->n_fds ? vega_quic_endpoint_listen_fds(l->ep, o->fds, o->n_fds, &l->local)
                      : vega_quic_endpoint_listen(l->ep, addr, flags, &l->local);
    if (rc < 0) {
        vega_quic_endpoint_free(l->ep);
        pthread_mutex_destroy(&l->lock);
        vega_notify_fini(&l->idle);
        vega__mem_free(srv->o.mem, l);
        return rc;
    }
    if (!o->no_alt_svc) {
        int k = snprintf(srv->alt_svc, sizeof srv->alt_svc, "Alt-Svc: h3=\":%u\"; ma=%u\r\n",
                         vega_addr_port(&l->local),
                         o->alt_svc_max_age_s ? o->alt_svc_max_age_s : 86400u);
        if (k > 0 && (size_t)k < sizeof srv->alt_svc)
            atomic_store_explicit(&srv->alt_svc_len, (size_t)k, memory_order_release);
    }
    srv->h3 = l;
    pthread_mutex_lock(&srv->lock);
    srv->quic_ep = l->ep;
    srv->quic_on = true;
    pthread_mutex_unlock(&srv->lock);
    if (bound)
        *bound = l->local;
    return 0;
}

int vega_http_server_listen_h3_versioned(vega_http_server *srv, const vega_addr *addr,
                                         unsigned flags, const vega_http_server_h3_opts *o,
                                         vega_addr *bound, int opts_version)
{
    if (!srv || !o || opts_version < 1 || opts_version > VEGA_HTTP_SERVER_H3_OPTS_VERSION)
        return -EINVAL;
    vega_http_server_h3_opts latest;
    /* API rules: ABI: an older layout's prefix, the rest zero */
    if (opts_version < VEGA_HTTP_SERVER_H3_OPTS_VERSION) {
        memset(&latest, 0, sizeof latest);
        memcpy(&latest, o, opts_size(opts_version));
        o = &latest;
    }
    if (!o->chain || !o->key || o->n_suites > 3 || (!addr && !o->n_fds) || (o->n_fds && !o->fds) ||
        o->cid_prefix_len > VEGA_QUIC_MAX_SCID_PREFIX)
        return -EINVAL;
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    if (srv->h3)
        return -EBUSY;
    return vega__h3s_listen(srv, addr, flags, o, bound);
}

/* Runs fn on every connection under its lock (the connection list may change meanwhile: each
 * connection is held by a reference while it is visited). */
static void each_conn(struct h3s *l, void (*fn)(struct h3s_conn *hc, vega_quic_conn *qc))
{
    size_t n = atomic_load(&l->nconns) + 16;
    struct h3s_conn **v = vega__mem_calloc(l->srv->o.mem, n, sizeof *v);
    if (!v)
        return;
    size_t k = 0;
    pthread_mutex_lock(&l->lock);
    for (struct h3s_conn *hc = l->conns; hc && k < n; hc = hc->next) {
        atomic_fetch_add(&hc->refs, 1);
        v[k++] = hc;
    }
    pthread_mutex_unlock(&l->lock);
    for (size_t i = 0; i < k; i++) {
        vega_quic_conn *qc = vega_quic_ep_conn_lock(v[i]->qc);
        if (qc) {
            fn(v[i], qc);
            vega_quic_ep_conn_unlock(v[i]->qc);
        }
        vega__h3s_conn_unref(v[i]);
    }
    vega__mem_free(l->srv->o.mem, v);
}

static void send_goaway(struct h3s_conn *hc, vega_quic_conn *qc)
{
    if (hc->closed || hc->goaway)
        return;
    hc->goaway = true;
    (void)vega_h3_conn_submit_goaway(hc->h3, vega_h3_conn_get_next_request_id(hc->h3));
    (void)vega__h3s_flush_uni(hc, qc);
}

/* RFC 9114 §5.2's first phase: "stop starting new requests" (the largest id), while the
 * requests a client sent before it saw this still arrive and are served. */
static void send_goaway_first(struct h3s_conn *hc, vega_quic_conn *qc)
{
    if (hc->closed || hc->goaway)
        return;
    (void)vega_h3_conn_submit_goaway(hc->h3, (1ull << 62) - 4);
    (void)vega__h3s_flush_uni(hc, qc);
}

/* The largest smoothed RTT of the connections (l->scan_rtt), for the GOAWAY phases. */
static void max_rtt(struct h3s_conn *hc, vega_quic_conn *qc)
{
    vega_quic_conn_info ci;
    vega_quic_conn_get_info(qc, &ci);
    if (!hc->closed && ci.smoothed_rtt_ns > hc->l->scan_rtt)
        hc->l->scan_rtt = ci.smoothed_rtt_ns;
}

/* Counts the connections that did not have all they sent acknowledged since the first GOAWAY
 * (l->scan_count); marks those that did. */
static void count_unseen(struct h3s_conn *hc, vega_quic_conn *qc)
{
    if (hc->closed || hc->goaway_seen)
        return;
    vega_quic_conn_info ci;
    vega_quic_conn_get_info(qc, &ci);
    if (ci.bytes_in_flight == 0)
        hc->goaway_seen = true;
    else
        hc->l->scan_count++;
}

static void close_conn(struct h3s_conn *hc, vega_quic_conn *qc)
{
    if (!hc->closed)
        (void)vega_quic_conn_close(qc, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_NO_ERROR, "shutdown");
    hc->closed = true;
}

static void cancel_reqs(struct h3s_conn *hc, vega_quic_conn *qc)
{
    (void)qc;
    for (struct h3s_req *r = hc->reqs; r; r = r->next)
        if (r->task)
            vega_task_cancel(r->task);
}

/* Counts the connections with responses not all acknowledged, or with requests that have no
 * task yet (c locked): one still reading its head, or a 0-RTT one deferred until the handshake
 * is done. Their ids are below the GOAWAY's, so the client rightly waits for their responses;
 * closing now would lose them (a client reconnecting as the stop began sends its first
 * requests in 0-RTT). */
static void count_unacked(struct h3s_conn *hc, vega_quic_conn *qc)
{
    /* ... or with stream bytes not acknowledged (held in the send buffers): the last GOAWAY
     * among them. A request the client sent before it saw the first GOAWAY but that reached us
     * late (a lost packet) was never processed; only the second GOAWAY tells the client so,
     * and a close that overtook it (written just after it, or lost with it) would fail the
     * request instead (the likely cause of the "closed with 1 request in flight" failures of
     * the --shards reload test under heavy load). */
    if (!hc->closed && (hc->unacked || hc->nreqs || vega_quic_conn_get_send_held(qc) > 0))
        hc->l->scan_count++;
}

/* Waits until no handshake was in progress for quiet_ms (0: until none is), at most max_ms,
 * never past grace. since (a vega_now() time; 0: none): nor any new connection's datagram that
 * reached the endpoint before then still waiting to be read or handled (Initials the kernel
 * queued on our socket before new connections were steered elsewhere: refused otherwise). */
static void wait_handshakes(struct h3s *l, unsigned quiet_ms, unsigned max_ms, uint64_t since)
{
    vega_deadline end = vega_deadline_in_ms(max_ms), quiet = 0;
    for (;;) {
        vega_quic_endpoint_stats st;
        vega_quic_endpoint_get_stats(l->ep, &st);
        vega_deadline g = atomic_load(&l->srv->grace);
        if (st.handshakes > 0 || (since && vega_quic_endpoint_new_pending(l->ep, since) > 0))
            quiet = 0;
        else if (!quiet)
            quiet = vega_deadline_in_ms(quiet_ms);
        if ((quiet && vega_now() >= quiet) || vega_now() >= end || vega_now() >= g ||
            vega_sleep_ms(5) == -ECANCELED)
            return;
    }
}

void vega__h3s_stop(struct h3s *l, bool cancelled)
{
    vega_http_server *srv = l->srv;
    atomic_store_explicit(&srv->alt_svc_len, 0, memory_order_release);
    /* Handshakes in progress first become connections (which then get the GOAWAY) rather than
     * being cut: a reloading shard whose new connections go to the new generation already
     * (vega-serve --shards) finishes those it began, the ones whose Initials still wait in its
     * socket too (those the kernel queued before the steering changed: read until the socket
     * was seen empty since the stop began, and those the endpoint read ahead into its queue):
     * until no handshake was in progress and nothing of that kind waited for 50 ms (a lost
     * Initial costs a 1 s PTO), at most 3 s, never past grace. */
    if (!cancelled)
        wait_handshakes(l, 50, 3000, vega_now());
    atomic_store(&l->stopping, true);
    /* §5.2, two GOAWAYs: the first stops new requests; requests already on their way are
     * still served (a client may have sent one as the first GOAWAY left: closing on it would
     * fail it); after a while (4 of the largest smoothed RTT, at least 100 ms, at most 2 s,
     * never past grace) the second names the first request not processed. */
    each_conn(l, send_goaway_first);
    l->scan_rtt = 0;
    each_conn(l, max_rtt);
    uint64_t wait_ns = 4 * l->scan_rtt;
    wait_ns = wait_ns < 100 * VEGA_NS_PER_MS    ? 100 * VEGA_NS_PER_MS
              : wait_ns > 2000 * VEGA_NS_PER_MS ? 2000 * VEGA_NS_PER_MS
                                                : wait_ns;
    /* ... and, beyond that, until each connection had nothing in flight once since (so the
     * client acknowledged the packet with the first GOAWAY: it saw it, and what it sent before
     * reached us first), at most 2 s: a client descheduled for a while must not send a
     * request into the close */
    vega_deadline phase = vega_deadline_in_ns(wait_ns), phase_max = vega_deadline_in_ms(2000);
    while (!cancelled) {
        vega_deadline g = atomic_load(&srv->grace);
        bool done = false;
        if (vega_now() >= phase) { /* the GOAWAY left long ago: in flight, or acknowledged */
            l->scan_count = 0;
            each_conn(l, count_unseen);
            done = l->scan_count == 0;
        }
        vega_deadline until = g < phase_max ? g : phase_max;
        if (done || vega_now() >= until || vega_sleep_ms(5) == -ECANCELED)
            break;
    }
    each_conn(l, send_goaway);
    /* in-flight requests finish until grace */
    while (!cancelled && atomic_load(&l->nreqs) > 0) {
        vega_deadline g = atomic_load(&srv->grace);
        if (vega_now() >= g || vega_notify_wait(&l->idle, g) == -ECANCELED)
            break;
    }
    /* §5.2: close once every request below the GOAWAY's id was answered and the responses
     * reached the client (their streams all acknowledged), or at grace */
    while (!cancelled) {
        l->scan_count = 0;
        each_conn(l, count_unacked);
        vega_deadline g = atomic_load(&srv->grace);
        if (l->scan_count == 0 || vega_now() >= g ||
            vega_notify_wait(&l->idle, g < vega_deadline_in_ms(50) ? g : vega_deadline_in_ms(50)) ==
                -ECANCELED)
            break;
    }
    each_conn(l, cancel_reqs);
    each_conn(l, close_conn);
    /* Handshakes still in progress end, refused (on_conn: CONNECTION_REFUSED, which clients
     * retry), rather than being cut by the shutdown (transport NO_ERROR): a client whose side
     * of the handshake was done may have sent a request already, and could not tell it was not
     * processed. At most 1 s, never past grace. */
    if (!cancelled)
        wait_handshakes(l, 0, 1000, 0);
    vega_quic_endpoint_shutdown(l->ep, vega_deadline_in_ms(1000));
    (void)vega_quic_endpoint_wait(l->ep, vega_deadline_in_ms(1000));
    /* the final counters, for a scrape after the stop */
    pthread_mutex_lock(&srv->lock);
    vega_quic_endpoint_get_stats(l->ep, &srv->quic_last);
    srv->quic_ep = NULL;
    pthread_mutex_unlock(&srv->lock);
    vega_quic_endpoint_free(l->ep); /* every connection ends: on_closed for each */
    l->ep = NULL;
    /* request tasks end at once once cancelled, but they hold the server: wait for them and
     * for the connections' last references (polled: a reference dropped is its holder's last
     * touch of l, so it cannot be followed by a wake-up) */
    while (atomic_load(&l->refs) > 1)
        if (vega_sleep_ms(2) == -ECANCELED)
            (void)vega_yield();
    srv->h3 = NULL;
    vega__h3s_pool_free(l);
    vega__h3s_chunks_free(l);
    pthread_mutex_destroy(&l->lock);
    vega_notify_fini(&l->idle);
    vega__mem_free(srv->o.mem, l);
}
