/* SPDX-License-Identifier: MIT */
/* HTTP/2 request streams of the HTTP server (RFC 9113 §5, §8.1): the core's events under the
 * connection's lock -- a request head copied for the handler and its task started after the
 * feed (so a stream reset in the same read costs no task), body bytes handed straight to a
 * waiting reader or queued within the stream's window, spans given back, streams closed -- and
 * the connection task's checks: streams to reset once their response is out, stalled sends. */
#include <stdlib.h>

#include "h2_srv_int.h"
#include "http1_int.h"

static struct h2s_req *req_of(const struct h2s_conn *h, int32_t sid)
{
    return vega_h2_stream_get_user_data(h->core, sid);
}

/* ---- a request's life ------------------------------------------------------------------------ */

static void req_free(struct h2s_req *r)
{
    struct h2s_conn *h = r->h;
    const vega_mem *m = h->mem;
    if (r->prev)
        r->prev->next = r->next;
    else
        h->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    vega__mem_free(m, r->rx);
    vega__mem_free(m, r->small);
    vega__mem_free(m, r->chunk);
    vega_notify_fini(&r->rd);
    vega_notify_fini(&r->wr);
    vega__mem_free(m, r);
}

void vega__h2s_req_unref(struct h2s_req *r)
{
    VEGA_ASSERT(r->refs > 0);
    if (--r->refs == 0)
        req_free(r);
}

/* The head, copied into the block after r: field array, then the bytes. Every pointer borrows
 * the core only for the callback. */
static size_t head_bytes(const vega_h2_head *hd)
{
    size_t n =
        hd->method.len + hd->path.len + hd->authority.len + hd->scheme.len + hd->protocol.len;
    for (size_t i = 0; i < hd->nfields; i++)
        n += hd->fields[i].name.len + hd->fields[i].value.len;
    return n;
}

static vega_http_str copy_str(char **w, vega_http_str s)
{
    vega_http_str d = {s.len ? *w : s.ptr ? "" : NULL, s.len};
    if (s.len) {
        memcpy(*w, s.ptr, s.len);
        *w += s.len;
    }
    return d;
}

static bool has_token(vega_http_str v, const char *tok)
{
    size_t n = strlen(tok);
    for (size_t i = 0; i + n <= v.len; i++)
        if (vega__http1_ieq(v.ptr + i, n, tok))
            return true;
    return false;
}

static void fill_request(struct h2s_req *r, const vega_h2_head *hd, char *w)
{
    struct h2s_conn *h = r->h;
    struct srv_conn *c = h->c;
    struct vega_http_exchange *x = &r->x;
    vega_http_request *q = &x->req;
    x->ops = &vega__h2s_xops;
    x->impl = r;
    x->c = c;
    q->version = 20;
    q->method_name = copy_str(&w, hd->method);
    int m = vega_http_method_parse(q->method_name.ptr, q->method_name.len);
    q->method = m < 0 ? VEGA_HTTP_METHOD_OTHER : m;
    q->target = copy_str(&w, hd->path);
    q->authority = copy_str(&w, hd->authority);
    (void)copy_str(&w, hd->scheme);
    /* RFC 8441 §4: an extended CONNECT names its resource by :path, as a GET does */
    q->protocol = copy_str(&w, hd->protocol);
    q->path = q->target;
    if (q->method == VEGA_HTTP_METHOD_CONNECT && !q->protocol.ptr)
        q->path = (vega_http_str){q->target.ptr ? q->target.ptr : "", 0};
    for (size_t i = 0; i < q->target.len; i++)
        if (q->target.ptr[i] == '?') {
            q->path.len = i;
            q->query = (vega_http_str){q->target.ptr + i + 1, q->target.len - i - 1};
            break;
        }
    for (size_t i = 0; i < hd->nfields; i++) {
        r->fields[i].name = copy_str(&w, hd->fields[i].name);
        r->fields[i].value = copy_str(&w, hd->fields[i].value);
        const vega_http_field *f = &r->fields[i];
        /* §8.3.1: :authority, else Host */
        if (!q->authority.ptr && vega__http1_ieq(f->name.ptr, f->name.len, "host"))
            q->authority = f->value;
        if (vega__http1_ieq(f->name.ptr, f->name.len, "expect") &&
            has_token(f->value, "100-continue"))
            q->expect_continue = true;
    }
    r->nfields = hd->nfields;
    vega_http_fields_init(&x->fields, r->fields, r->nfields, 0);
    x->fields.count = r->nfields;
    for (size_t i = 0; i < r->nfields; i++)
        x->fields.size += r->fields[i].name.len + r->fields[i].value.len;
    q->fields = &x->fields;
    if (hd->end_stream) {
        q->content_length = 0;
        q->has_body = false;
    } else if (hd->content_length >= 0) {
        q->content_length = (uint64_t)hd->content_length;
        q->has_body = hd->content_length > 0;
    } else {
        q->content_length = VEGA_HTTP_LENGTH_UNKNOWN;
        q->has_body = true;
    }
    q->tls = c->tls;
    vega__srv_addr_get(&c->peer, &r->peer);
    vega__srv_addr_get(&c->local, &r->local);
    q->peer = &r->peer;
    q->local = &r->local;
    q->conn_id = c->id;
    q->conn_seq = h->nseq++;
    q->start = vega_now();
    x->length = VEGA_HTTP_LENGTH_UNKNOWN;
    x->keep_alive = true;
}

/* The request limit of a connection: tasks alive, those of reset streams included. */
static size_t task_limit(const struct h2s_conn *h)
{
    vega_h2_conn_info info;
    vega_h2_conn_get_info(h->core, &info);
    return (size_t)info.local.max_concurrent_streams * H2S_TASKS_PER_STREAM;
}

static int on_request(struct h2s_conn *h, int32_t sid, const vega_h2_head *hd)
{
    const vega_mem *m = h->mem;
    size_t queued = 0;
    for (struct h2s_req *q = h->spawn; q; q = q->spawn_next)
        queued++;
    if (h->dead || h->ntasks + queued >= task_limit(h)) {
        /* handlers of streams the peer reset are still running: refuse (retryable) rather
         * than let reset-and-reopen pile up work (MadeYouReset, Rapid Reset) */
        (void)vega_h2_submit_rst_stream(h->core, sid, VEGA_H2_REFUSED_STREAM);
        return 0;
    }
    size_t nf = hd->nfields ? hd->nfields : 1;
    struct h2s_req *r =
        vega__mem_calloc(m, 1, sizeof *r + nf * sizeof(vega_http_field) + head_bytes(hd) + 1);
    if (!r) {
        (void)vega_h2_submit_rst_stream(h->core, sid, VEGA_H2_REFUSED_STREAM);
        return 0;
    }
    r->h = h;
    r->sid = sid;
    r->refs = 1; /* the stream's */
    vega_notify_init(&r->rd);
    vega_notify_init(&r->wr);
    r->fields = (vega_http_field *)(r + 1);
    fill_request(r, hd, (char *)(r->fields + nf));
    r->fin_recv = hd->end_stream;
    r->next = h->reqs;
    if (h->reqs)
        h->reqs->prev = r;
    h->reqs = r;
    /* its task starts after the feed: FIFO */
    struct h2s_req **t = &h->spawn;
    while (*t)
        t = &(*t)->spawn_next;
    *t = r;
    (void)vega_h2_stream_set_user_data(h->core, sid, r);
    return 0;
}

static int cb_headers(void *ud, int32_t sid, const vega_h2_head *hd)
{
    struct h2s_conn *h = ud;
    if (hd->kind == VEGA_H2_HEAD_REQUEST)
        return on_request(h, sid, hd);
    /* trailers: they end the request; nothing in the exchange reads them */
    struct h2s_req *r = req_of(h, sid);
    if (r && hd->end_stream) {
        r->fin_recv = true;
        vega_notify_one(&r->rd);
    }
    return 0;
}

/* Appends d to the stream's queue (within its window: the core refuses more). */
static int rx_put(struct h2s_req *r, const uint8_t *d, size_t len)
{
    const vega_mem *m = r->h->srv->o.mem;
    if (r->rx_off && !vega__fits(r->rx_off + r->rx_len, len, r->rx_cap)) {
        memmove(r->rx, r->rx + r->rx_off, r->rx_len);
        r->rx_off = 0;
    }
    if (!vega__fits(r->rx_len, len, r->rx_cap)) {
        size_t cap = r->rx_cap ? r->rx_cap : 16384;
        while (!vega__fits(r->rx_len, len, cap))
            cap *= 2;
        uint8_t *b = vega__mem_realloc(m, r->rx, cap);
        if (!b)
            return -ENOMEM;
        r->rx = b;
        r->rx_cap = cap;
    }
    memcpy(r->rx + r->rx_off + r->rx_len, d, len);
    r->rx_len += len;
    return 0;
}

static int cb_data(void *ud, int32_t sid, const uint8_t *d, size_t len, unsigned flags)
{
    struct h2s_conn *h = ud;
    struct h2s_req *r = req_of(h, sid);
    if (!r || r->task_done) {
        /* nobody will read it: give the window back at once */
        (void)vega_h2_stream_consume(h->core, sid, len);
        if (r && (flags & VEGA_H2_FLAG_END_STREAM))
            r->fin_recv = true;
        return 0;
    }
    size_t k = 0;
    if (r->dst && r->rx_len == 0) {
        /* the handler waits in a read: straight into its buffer */
        k = VEGA__MIN(len, r->dst_len - r->dst_got);
        if (k) /* an empty DATA frame (END_STREAM alone) may come with no data pointer */
            memcpy(r->dst + r->dst_got, d, k);
        r->dst_got += k;
        (void)vega_h2_stream_consume(h->core, sid, k);
    }
    if (k < len && rx_put(r, d + k, len - k) < 0) {
        (void)vega_h2_stream_consume(h->core, sid, len - k);
        (void)vega_h2_submit_rst_stream(h->core, sid, VEGA_H2_INTERNAL_ERROR);
        return 0;
    }
    if (flags & VEGA_H2_FLAG_END_STREAM)
        r->fin_recv = true;
    vega_notify_one(&r->rd);
    return 0;
}

static void unlink_spawn(struct h2s_conn *h, struct h2s_req *r)
{
    for (struct h2s_req **p = &h->spawn; *p; p = &(*p)->spawn_next)
        if (*p == r) {
            *p = r->spawn_next;
            return;
        }
}

static int cb_stream_close(void *ud, int32_t sid, uint32_t code, vega_h2_close how)
{
    struct h2s_conn *h = ud;
    struct h2s_req *r = req_of(h, sid);
    if (!r)
        return 0;
    r->closed = true;
    r->close_code = code;
    r->close_how = how;
    if (r->busy) {
        r->busy = false; /* the span is released */
        r->small_sent = false;
        h->nbusy--;
    }
    if (r->rst_after) {
        r->rst_after = false;
        h->nrst_after--;
    }
    vega_notify_one(&r->rd);
    vega_notify_one(&r->wr);
    /* reset by the peer, or for its fault, or the connection is gone: the handler's work is
     * wanted no more (Rapid Reset, MadeYouReset); its exchange calls fail from now on */
    if (r->task && !r->task_done && !r->self_reset && how != VEGA_H2_CLOSE_DONE)
        vega_task_cancel(r->task);
    if (!r->has_task)
        unlink_spawn(h, r); /* reset in the same read as its head: no task ever */
    vega__h2s_req_unref(r);
    return 0;
}

static int cb_writable(void *ud, int32_t sid)
{
    struct h2s_conn *h = ud;
    struct h2s_req *r = req_of(h, sid);
    if (!r || !r->busy)
        return 0;
    r->busy = false;
    h->nbusy--;
    if (r->small_sent) {
        r->small_sent = false;
        r->small_len = 0;
    }
    vega_notify_one(&r->wr);
    return 0;
}

const vega_h2_callbacks vega__h2s_cb = {
    .on_headers = cb_headers,
    .on_data = cb_data,
    .on_stream_close = cb_stream_close,
    .on_stream_writable = cb_writable,
};

/* ---- what the connection task does for its requests -------------------------------------------
 */

void vega__h2s_spawn(struct h2s_conn *h)
{
    while (h->spawn) {
        struct h2s_req *r = h->spawn;
        h->spawn = r->spawn_next;
        r->spawn_next = NULL;
        vega_spawn_opts so;
        vega_spawn_opts_init(&so);
        so.name = "http2-request";
        r->has_task = true;
        r->refs++;
        h->ntasks++;
        atomic_fetch_add_explicit(&h->tasks_live, 1, memory_order_relaxed);
        if (vega_task_spawn_ex(&r->task, vega__h2s_req_task, r, &so) < 0) {
            r->task = NULL;
            r->task_done = true;
            h->ntasks--;
            atomic_fetch_sub_explicit(&h->tasks_live, 1, memory_order_relaxed);
            r->refs--; /* the stream still holds it: its close frees it */
            (void)vega_h2_submit_rst_stream(h->core, r->sid, VEGA_H2_REFUSED_STREAM);
        }
    }
}

void vega__h2s_wake_all(struct h2s_conn *h)
{
    for (struct h2s_req *r = h->reqs; r; r = r->next) {
        vega_notify_one(&r->rd);
        vega_notify_one(&r->wr);
    }
}

void vega__h2s_rst_after(struct h2s_conn *h)
{
    for (struct h2s_req *r = h->reqs, *next; r && h->nrst_after; r = next) {
        next = r->next;
        if (!r->rst_after || r->closed)
            continue;
        vega_h2_stream_info si;
        if (vega_h2_stream_get_info(h->core, r->sid, &si) < 0 ||
            si.state != VEGA_H2_STATE_HALF_CLOSED_LOCAL)
            continue;
        /* §8.1: the response is complete; the rest of the request is not wanted */
        r->rst_after = false;
        h->nrst_after--;
        (void)vega_h2_submit_rst_stream(h->core, r->sid, VEGA_H2_NO_ERROR);
    }
}

bool vega__h2s_check_stalls(struct h2s_conn *h, vega_tstamp now)
{
    uint64_t limit = h->srv->o.write_timeout_ns;
    vega_h2_conn_info info;
    vega_h2_conn_get_info(h->core, &info);
    if (info.send_stalled_since != VEGA_TSTAMP_MAX && now - info.send_stalled_since >= limit) {
        /* the peer has not opened the connection's window for write_timeout: it holds every
         * response still in flight */
        atomic_fetch_add_explicit(&h->srv->timeouts, 1, memory_order_relaxed);
        (void)vega_h2_submit_goaway(h->core, VEGA_H2_ENHANCE_YOUR_CALM, NULL, 0);
        return false;
    }
    if (!h->nbusy)
        return info.send_stalled_since != VEGA_TSTAMP_MAX;
    for (struct h2s_req *r = h->reqs, *next; r; r = next) {
        next = r->next;
        vega_h2_stream_info si;
        if (!r->busy || vega_h2_stream_get_info(h->core, r->sid, &si) < 0)
            continue;
        if (si.send_stalled_since != VEGA_TSTAMP_MAX && now - si.send_stalled_since >= limit) {
            atomic_fetch_add_explicit(&h->srv->timeouts, 1, memory_order_relaxed);
            (void)vega_h2_submit_rst_stream(h->core, r->sid, VEGA_H2_CANCEL);
        }
    }
    return h->nbusy > 0;
}

bool vega__h2s_blocked(struct h2s_conn *h)
{
    vega_h2_conn_info info;
    vega_h2_conn_get_info(h->core, &info);
    if (info.send_stalled_since != VEGA_TSTAMP_MAX)
        return true;
    for (struct h2s_req *r = h->reqs; r && h->nbusy; r = r->next) {
        vega_h2_stream_info si;
        if (r->busy && vega_h2_stream_get_info(h->core, r->sid, &si) == 0 &&
            si.send_stalled_since != VEGA_TSTAMP_MAX)
            return true;
    }
    return false;
}
