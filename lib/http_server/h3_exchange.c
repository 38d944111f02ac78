/* SPDX-License-Identifier: MIT */
/* HTTP/3 requests of the HTTP server (RFC 9114 §4): the head copied into the exchange the
 * handler sees, a task per request, the body read straight from the QUIC stream into the
 * handler's buffer, the response as HEADERS and DATA frames (§4.1, §7.2) with QUIC's flow
 * control as back-pressure, trailers, and the stream closed or reset at the end. */
#include <stdlib.h>
#include <unistd.h>

#include "h3_int.h"
#include "http1_int.h"

static const char body_500[] = "internal server error\n";

/* ---- the head ---------------------------------------------------------------------------- */

static bool has_token(vega_http_str v, const char *tok)
{
    size_t n = strlen(tok);
    for (size_t i = 0; i + n <= v.len; i++)
        if (vega__http1_ieq(v.ptr + i, n, tok))
            return true;
    return false;
}

/* Copies what the handler sees of head into one block (c locked): the head is borrowed only
 * for the callback. */
static int copy_head(struct h3s_req *r, const vega_h3_head *h)
{
    const vega_mem *m = r->hc->l->srv->o.mem;
    size_t need = h->method.len + h->path.len + h->authority.len + h->protocol.len + 4;
    for (size_t i = 0; i < h->nfields; i++)
        need += h->fields[i].name.len + h->fields[i].value.len + 2;
    size_t nf = h->nfields ? h->nfields : 1;
    /* one block: the fields, then their bytes */
    if (!(r->fields = vega__mem_malloc(m, nf * sizeof *r->fields + need)))
        return -ENOMEM;
    r->store = (char *)(r->fields + nf);
    char *w = r->store;
#define COPY(dst, src)                                                                             \
    do {                                                                                           \
        (dst).ptr = (src).len ? w : (src).ptr ? "" : NULL;                                         \
        (dst).len = (src).len;                                                                     \
        if ((src).len) {                                                                           \
            memcpy(w, (src).ptr, (src).len);                                                       \
            w += (src).len;                                                                        \
        }                                                                                          \
    } while (0)
    vega_http_request *q = &r->x.req;
    COPY(q->method_name, h->method);
    COPY(q->target, h->path);
    vega_http_str authority;
    COPY(authority, h->authority);
    q->authority = authority;
    /* RFC 9220 §3: an extended CONNECT (the core accepts one only when we advertised it) */
    COPY(q->protocol, h->protocol);
    for (size_t i = 0; i < h->nfields; i++) {
        COPY(r->fields[i].name, h->fields[i].name);
        COPY(r->fields[i].value, h->fields[i].value);
    }
#undef COPY
    r->nfields = h->nfields;
    return 0;
}

/* Fills the request of the exchange from the copied head. */
static void fill_request(struct h3s_req *r, const vega_h3_head *h)
{
    struct vega_http_exchange *x = &r->x;
    vega_http_request *q = &x->req;
    struct h3s_conn *hc = r->hc;
    q->version = 30;
    int m = vega_http_method_parse(q->method_name.ptr, q->method_name.len);
    q->method = m < 0 ? VEGA_HTTP_METHOD_OTHER : m;
    q->path = q->target;
    q->query.ptr = NULL;
    q->query.len = 0;
    for (size_t i = 0; i < q->target.len; i++)
        if (q->target.ptr[i] == '?') {
            q->path.len = i;
            q->query.ptr = q->target.ptr + i + 1;
            q->query.len = q->target.len - i - 1;
            break;
        }
    vega_http_fields_init(&x->fields, r->fields, r->nfields, 0);
    x->fields.count = r->nfields;
    for (size_t i = 0; i < r->nfields; i++) {
        x->fields.size += r->fields[i].name.len + r->fields[i].value.len;
        const vega_http_field *f = &r->fields[i];
        if (!q->authority.ptr && vega__http1_ieq(f->name.ptr, f->name.len, "host"))
            q->authority = f->value;
        if (vega__http1_ieq(f->name.ptr, f->name.len, "expect") &&
            has_token(f->value, "100-continue"))
            q->expect_continue = true;
    }
    q->fields = &x->fields;
    if (r->fin_recv) {
        q->content_length = 0;
        q->has_body = false;
    } else if (h->has_content_length) {
        q->content_length = h->content_length;
        q->has_body = h->content_length > 0;
    } else {
        q->content_length = VEGA_HTTP_LENGTH_UNKNOWN;
        q->has_body = true;
    }
    q->tls = true;
    vega_quic_ep_conn_peer(hc->qc, &r->peer);
    r->local = hc->l->local;
    q->peer = &r->peer;
    q->local = &r->local;
    q->conn_id = hc->id;
    q->conn_seq = hc->nseq++;
    q->start = vega_now();
    x->length = VEGA_HTTP_LENGTH_UNKNOWN;
    x->keep_alive = true;
}

static void *req_task(void *arg);

/* Spawns the request's task. */
static int spawn(struct h3s_req *r)
{
    struct h3s *l = r->hc->l;
    vega_spawn_opts so;
    vega_spawn_opts_init(&so);
    so.name = "http3-request";
    atomic_fetch_add(&l->nreqs, 1);
    atomic_fetch_add(&l->refs, 1);
    int rc = vega_task_spawn_ex(&r->task, req_task, r, &so);
    if (rc < 0) {
        r->task = NULL;
        atomic_fetch_sub(&l->nreqs, 1);
        atomic_fetch_sub(&l->refs, 1);
    }
    return rc;
}

int vega__h3s_req_start(struct h3s_req *r, const vega_h3_head *head)
{
    if (head) {
        memset(&r->x, 0, sizeof r->x);
        r->x.ops = &vega__h3s_xops;
        r->x.impl = r;
        int rc = copy_head(r, head);
        if (rc < 0)
            return rc;
        fill_request(r, head);
        /* RFC 8470 §5.1, RFC 9114 §10.9: requests in 0-RTT may be replayed; only safe ones run
         * before the handshake is done, the others wait for it */
        vega_quic_conn_info info;
        vega_quic_conn_get_info(r->hc->cur, &info);
        if (!info.handshake_done && !vega_http_method_is_safe((vega_http_method)r->x.req.method)) {
            r->early = true;
            return 0;
        }
    }
    r->head_done = true;
    return spawn(r);
}

void vega__h3s_req_free(struct h3s_req *r)
{
    struct h3s_conn *hc = r->hc;
    struct h3s *l = hc->l;
    const vega_mem *m = l->srv->o.mem;
    vega__mem_free(m, r->fields);
    vega_notify_fini(&r->rd);
    vega_notify_fini(&r->wr);
    bool kept = false;
    vega__spin_lock(&l->pool_lock);
    if (l->npool < H3S_POOL_MAX) {
        r->next = l->pool;
        l->pool = r;
        l->npool++;
        kept = true;
    }
    vega__spin_unlock(&l->pool_lock);
    if (!kept)
        vega__mem_free(m, r);
    vega__h3s_conn_unref(hc);
}

/* ---- talking to the stream ----------------------------------------------------------------- */

static int stream_error(struct h3s_req *r)
{
    if (r->reset || r->stop)
        return -ECONNRESET;
    if (r->failed)
        return VEGA_ERR_PROTO;
    return -EPIPE;
}

/* Writes p[0..n) (and then fin) to the request's stream, waiting for QUIC's flow control. */
static int send_all(struct h3s_req *r, const uint8_t *p, size_t n, bool fin, vega_deadline dl)
{
    struct h3s_conn *hc = r->hc;
    size_t off = 0;
    for (;;) {
        vega_quic_conn *qc = vega_quic_ep_conn_lock(hc->qc);
        if (!qc)
            return vega_task_is_cancelled() ? -ECANCELED : -EPIPE;
        int err = 0;
        if (hc->closed || r->stop || r->reset || r->failed) {
            err = stream_error(r);
        } else if (off < n || fin) {
            vega_ssize w = vega_quic_stream_write(qc, r->sid, p + off, n - off, fin);
            if (w < 0) {
                err = -EPIPE;
            } else {
                off += (size_t)w;
                if (off == n && fin) {
                    /* the stream's end is queued: a graceful close waits for its ack */
                    r->fin_sent = true;
                    hc->unacked++;
                }
            }
        }
        vega_quic_ep_conn_unlock(hc->qc);
        if (err)
            return err;
        if (off == n)
            return 0;
        int rc = vega_notify_wait(&r->wr, dl);
        if (rc < 0)
            return rc;
    }
}

/* What the handler held back (the head, a DATA frame header) goes out. */
static int flush_out(struct h3s_req *r, vega_deadline dl)
{
    if (!r->out_len)
        return 0;
    int rc = send_all(r, r->out, r->out_len, false, dl);
    r->out_len = 0;
    return rc;
}

int vega__h3s_flush(struct h3s_req *r, vega_deadline dl)
{
    int rc = flush_out(r, dl);
    if (rc < 0) {
        r->x.broken = true;
        r->x.error = rc;
    }
    return rc;
}

static vega_deadline dl_min(vega_deadline a, vega_deadline b)
{
    return a < b ? a : b;
}

static vega_deadline wdl(struct vega_http_exchange *x, vega_deadline dl)
{
    struct h3s_req *r = x->impl;
    return dl_min(dl, vega_deadline_in_ns(r->hc->l->srv->o.write_timeout_ns));
}

/* ---- the exchange operations --------------------------------------------------------------- */

static int h3_start(struct vega_http_exchange *x, int status, const vega_http_field *fields,
                    size_t n, uint64_t length);

static vega_ssize h3_read(struct vega_http_exchange *x, void *buf, size_t len, vega_deadline dl)
{
    struct h3s_req *r = x->impl;
    vega_http_server *srv = r->hc->l->srv;
    if (x->req.expect_continue && !x->continue_sent && !x->started) {
        x->continue_sent = true;
        int rc = h3_start(x, 100, NULL, 0, 0);
        if (rc < 0)
            return rc;
    }
    return vega__h3s_read(r, buf, len, dl_min(dl, vega_deadline_in_ns(srv->o.body_timeout_ns)));
}

vega_ssize vega__h3s_read(struct h3s_req *r, void *buf, size_t len, vega_deadline dl)
{
    struct h3s_conn *hc = r->hc;
    for (;;) {
        vega_quic_conn *qc = vega_quic_ep_conn_lock(hc->qc);
        if (!qc)
            return vega_task_is_cancelled() ? -ECANCELED : -ECONNRESET;
        hc->cur = qc;
        r->dst = buf;
        r->dst_len = len;
        r->dst_got = 0;
        while (r->dst_got < len && !r->fin_recv && !r->reset && !r->failed && !hc->closed) {
            const uint8_t *d;
            size_t dlen;
            bool fin;
            if (vega_quic_stream_peek(qc, r->sid, &d, &dlen, &fin) < 0 || (dlen == 0 && !fin))
                break;
            /* the DATA payload in what is fed is never more than what is fed */
            size_t feed = dlen < len - r->dst_got ? dlen : len - r->dst_got;
            bool f = fin && feed == dlen;
            vega_ssize k = vega_h3_conn_read_stream(hc->h3, r->sid, d, feed, f);
            if (k < 0) {
                const char *why = NULL;
                uint64_t code = vega_h3_conn_get_error(hc->h3, &why);
                (void)vega_quic_conn_close(qc, VEGA_QUIC_CLOSE_APPLICATION,
                                           code ? code : VEGA_H3_INTERNAL_ERROR, why);
                hc->closed = true;
                break;
            }
            (void)vega_quic_stream_consume(qc, r->sid, (size_t)k);
            if ((size_t)k < feed)
                break; /* trailers blocked on QPACK: the encoder stream will unblock them */
        }
        size_t got = r->dst_got;
        r->dst = NULL;
        bool end = r->fin_recv, bad = r->reset || r->failed || hc->closed;
        vega__h3s_actions(hc, qc);
        hc->cur = NULL;
        vega_quic_ep_conn_unlock(hc->qc); /* credit returned: MAX_STREAM_DATA may go out */
        if (got > 0)
            return (vega_ssize)got;
        if (end)
            return 0;
        if (bad)
            return r->failed ? VEGA_ERR_PROTO : -ECONNRESET;
        int rc = vega_notify_wait(&r->rd, dl);
        if (rc < 0)
            return rc;
    }
}

static bool lower_needed(vega_http_str n)
{
    for (size_t i = 0; i < n.len; i++)
        if (n.ptr[i] >= 'A' && n.ptr[i] <= 'Z')
            return true;
    return false;
}

static int h3_start(struct vega_http_exchange *x, int status, const vega_http_field *fields,
                    size_t n, uint64_t length)
{
    struct h3s_req *r = x->impl;
    struct h3s_conn *hc = r->hc;
    vega_http_server *srv = hc->l->srv;
    const vega_mem *m = srv->o.mem;
    if (x->broken)
        return x->error ? x->error : -EPIPE;
    bool informational = status < 200;
    size_t names = 0;
    bool user_date = false, user_server = false;
    for (size_t i = 0; i < n; i++) {
        const vega_http_field *f = &fields[i];
        if (!f->name.ptr || !vega_http_token_is_valid(f->name.ptr, f->name.len) ||
            (f->value.len && !f->value.ptr) ||
            !vega_http_field_value_is_valid(f->value.ptr ? f->value.ptr : "", f->value.len) ||
            vega__srv_is_framing(&f->name))
            return -EINVAL;
        user_date |= vega__http1_ieq(f->name.ptr, f->name.len, "date");
        user_server |= vega__http1_ieq(f->name.ptr, f->name.len, "server");
        names += f->name.len;
    }
    /* HTTP/3 field names are lowercase (RFC 9114 §4.2): copy, lowered, with what we add (on
     * the stack for the usual handful of fields) */
    _Alignas(vega_http_field) uint8_t small[32 * sizeof(vega_http_field) + 1024];
    size_t vbytes = (n + 3) * sizeof(vega_http_field) + names + 24;
    vega_http_field *v =
        vbytes <= sizeof small ? (vega_http_field *)small : vega__mem_malloc(m, vbytes);
    if (!v)
        return -ENOMEM;
    char *w = (char *)(v + n + 3);
    size_t k = 0;
    if (!informational && !user_date) {
        /* "Date: <IMF-fixdate>\r\n": the value between ": " and the CRLF */
        const char *dl = vega__srv_date_line();
        v[k++] = (vega_http_field){{"date", 4}, {dl + 6, SRV_DATE_LINE_LEN - 8}};
    }
    if (!informational && srv->server_header && !user_server)
        v[k++] = (vega_http_field){{"server", 6}, {srv->server_header, srv->server_header_len}};
    for (size_t i = 0; i < n; i++) {
        vega_http_field f = fields[i];
        if (lower_needed(f.name)) {
            for (size_t j = 0; j < f.name.len; j++) {
                char c = f.name.ptr[j];
                w[j] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
            }
            f.name.ptr = w;
            w += f.name.len;
        }
        v[k++] = f;
    }
    bool head = x->req.method == VEGA_HTTP_METHOD_HEAD;
    bool no_content = status == 204 || status == 304;
    char cl[24];
    if (!informational && !no_content && length != VEGA_HTTP_LENGTH_UNKNOWN) {
        size_t cn = vega__srv_fmt_u64(cl, length);
        v[k++] = (vega_http_field){{"content-length", 14}, {cl, cn}};
    }
    int rc = 0;
    vega_quic_conn *qc = vega_quic_ep_conn_lock(hc->qc);
    if (!rc && !qc)
        rc = -EPIPE;
    if (qc) {
        vega_ssize h = vega_h3_conn_write_response_head(
            hc->h3, r->sid, status, v, k, r->out + r->out_len, H3S_OUT_CAP - r->out_len);
        if (h < 0)
            rc = h == VEGA_ERR_NOBUF ? VEGA_ERR_NOBUF : (int)h;
        else
            r->out_len += (size_t)h;
        (void)vega__h3s_flush_uni(hc, qc); /* QPACK encoder instructions go first */
        vega_quic_ep_conn_unlock(hc->qc);
    }
    if (v != (vega_http_field *)small)
        vega__mem_free(m, v);
    if (rc < 0)
        return rc;
    if (informational)
        return flush_out(r, wdl(x, VEGA_DEADLINE_NEVER));
    x->started = true;
    x->status = status;
    x->no_body = head || no_content;
    x->length = no_content ? 0 : length;
    return 0;
}

/* Appends a DATA frame header for len bytes to the held output. */
static int data_header(struct h3s_req *r, uint64_t len)
{
    if (!vega__fits(r->out_len, VEGA_H3_DATA_HEADER_MAX, H3S_OUT_CAP)) {
        int rc = flush_out(r, VEGA_DEADLINE_NEVER);
        if (rc < 0)
            return rc;
    }
    vega_ssize k = vega_h3_write_data_header(r->out + r->out_len, H3S_OUT_CAP - r->out_len, len);
    if (k < 0)
        return (int)k;
    r->out_len += (size_t)k;
    return 0;
}

static vega_ssize h3_write(struct vega_http_exchange *x, const void *buf, size_t len,
                           vega_deadline dl)
{
    struct h3s_req *r = x->impl;
    x->written += len;
    if (x->no_body || len == 0)
        return (vega_ssize)len;
    dl = wdl(x, dl);
    int rc = data_header(r, len);
    /* small bodies travel with the head in one write */
    if (rc == 0 && len <= H3S_OUT_CAP / 2 && vega__fits(r->out_len, len, H3S_OUT_CAP)) {
        memcpy(r->out + r->out_len, buf, len);
        r->out_len += len;
        x->body_bytes += len;
        return (vega_ssize)len;
    }
    if (rc == 0)
        rc = flush_out(r, dl);
    if (rc == 0)
        rc = send_all(r, buf, len, false, dl);
    if (rc < 0) {
        x->broken = true;
        x->error = rc;
        return rc;
    }
    x->body_bytes += len;
    return (vega_ssize)len;
}

/* A piece of cap bytes at least: one from l's pool when it takes a whole H3S_CHUNK (a pooled
 * piece is never more than twice what is asked, see send_room), else a fresh one. */
static struct h3s_chunk *chunk_get(struct h3s *l, size_t want)
{
    struct h3s_chunk *k = NULL;
    bool pooled = want > H3S_CHUNK / 2 && want <= H3S_CHUNK;
    if (pooled) {
        vega__spin_lock(&l->chunk_lock);
        k = l->chunks;
        if (k) {
            l->chunks = k->next;
            l->nchunks--;
        }
        vega__spin_unlock(&l->chunk_lock);
    }
    if (!k) {
        size_t cap = pooled ? H3S_CHUNK : want;
        k = vega__mem_malloc(l->srv->o.mem, sizeof *k + cap);
        if (!k)
            return NULL;
        k->cap = cap;
    }
    k->l = l;
    k->next = NULL;
    k->refs = 1;
    return k;
}

static void chunk_release(void *user, const void *data, size_t len)
{
    (void)data;
    (void)len;
    struct h3s_chunk *k = user;
    if (--k->refs != 0)
        return;
    struct h3s *l = k->l;
    bool kept = false;
    if (k->cap == H3S_CHUNK) {
        vega__spin_lock(&l->chunk_lock);
        if (l->nchunks < H3S_CHUNK_POOL_MAX) {
            k->next = l->chunks;
            l->chunks = k;
            l->nchunks++;
            kept = true;
        }
        vega__spin_unlock(&l->chunk_lock);
    }
    if (!kept)
        vega__mem_free(l->srv->o.mem, k);
}

void vega__h3s_chunks_free(struct h3s *l)
{
    while (l->chunks) {
        struct h3s_chunk *k = l->chunks;
        l->chunks = k->next;
        vega__mem_free(l->srv->o.mem, k);
    }
    l->nchunks = 0;
}

/* Sends k->data[0..n) by reference, waiting for flow control. */
static int send_chunk(struct h3s_req *r, struct h3s_chunk *k, size_t n, vega_deadline dl)
{
    struct h3s_conn *hc = r->hc;
    size_t off = 0;
    int err = 0;
    while (!err) {
        vega_quic_conn *qc = vega_quic_ep_conn_lock(hc->qc);
        if (!qc)
            return -EPIPE;
        if (hc->closed || r->stop || r->reset || r->failed) {
            err = stream_error(r);
        } else if (off < n) {
            vega_ssize w = vega_quic_stream_write_ref(qc, r->sid, k->data + off, n - off, false,
                                                      chunk_release, k);
            if (w < 0) {
                err = -EPIPE;
            } else if (w > 0) {
                k->refs++;
                off += (size_t)w;
            }
        }
        vega_quic_ep_conn_unlock(hc->qc);
        if (err || off == n)
            break;
        int rc = vega_notify_wait(&r->wr, dl);
        if (rc < 0)
            err = rc;
    }
    return err;
}

static void chunk_drop(struct h3s_req *r, struct h3s_chunk *k)
{
    struct h3s_conn *hc = r->hc;
    if (vega_quic_ep_conn_lock(hc->qc)) {
        chunk_release(k, NULL, 0);
        vega_quic_ep_conn_unlock(hc->qc);
    } else {
        chunk_release(k, NULL, 0); /* the connection is gone: it released its references */
    }
}

/* How much of a file is worth reading now for r, at most cap: what its stream would take (the
 * connection's send budget included) and its share of the budget among the connection's
 * requests, and at least VEGA_QUIC_SEND_BUDGET_FLOOR (a stream may always hold that much). A
 * piece is held whole while any part of it is referenced, also once the rest is acknowledged
 * (and no longer counted by the budget): shares keep what all the pieces of a connection hold
 * near the budget. One download still reads 256 KiB pieces; a client that asks for a file on
 * each of 100 streams and reads nothing makes each hold ~40 KiB of it, not 256. */
static size_t send_room(struct h3s_req *r, size_t cap)
{
    struct h3s_conn *hc = r->hc;
    uint64_t room = VEGA_QUIC_SEND_BUDGET_FLOOR;
    vega_quic_conn *qc = vega_quic_ep_conn_lock(hc->qc);
    if (qc) {
        uint64_t share = hc->l->send_budget / (hc->nreqs ? hc->nreqs : 1);
        uint64_t take = vega_quic_stream_get_send_room(qc, r->sid);
        room = VEGA__MAX(room, VEGA__MIN(take, share));
        vega_quic_ep_conn_unlock(hc->qc);
    }
    return room < cap ? (size_t)room : cap;
}

static vega_ssize h3_sendfile(struct vega_http_exchange *x, int fd, uint64_t offset, size_t len,
                              vega_deadline dl)
{
    struct h3s_req *r = x->impl;
    x->written += len;
    if (x->no_body || len == 0)
        return (vega_ssize)len;
    dl = wdl(x, dl);
    int rc = data_header(r, len);
    size_t done = 0;
    /* a small file travels with the head in one write */
    if (rc == 0 && len <= H3S_OUT_CAP / 2 && vega__fits(r->out_len, len, H3S_OUT_CAP)) {
        while (done < len) {
            ssize_t k = pread(fd, r->out + r->out_len, len - done, (off_t)(offset + done));
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                rc = k < 0 ? -errno : -ENODATA;
                break;
            }
            r->out_len += (size_t)k;
            done += (size_t)k;
        }
    } else if (rc == 0) {
        rc = flush_out(r, dl);
    }
    while (rc == 0 && done < len) {
        size_t want = send_room(r, len - done < H3S_CHUNK ? len - done : H3S_CHUNK);
        struct h3s_chunk *k = chunk_get(r->hc->l, want);
        if (!k) {
            rc = -ENOMEM;
            break;
        }
        size_t got = 0;
        while (got < want) {
            ssize_t n = pread(fd, k->data + got, want - got, (off_t)(offset + done + got));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                rc = n < 0 ? -errno : -ENODATA;
                break;
            }
            got += (size_t)n;
        }
        if (rc == 0)
            rc = send_chunk(r, k, got, dl);
        chunk_drop(r, k);
        done += got;
    }
    x->body_bytes += done;
    if (rc < 0) {
        x->broken = true;
        x->error = rc;
        return rc;
    }
    return (vega_ssize)len;
}

/* Resets the response stream (a response that cannot end well). */
static void reset_stream(struct h3s_req *r, uint64_t code)
{
    struct h3s_conn *hc = r->hc;
    vega_quic_conn *qc = vega_quic_ep_conn_lock(hc->qc);
    if (qc) {
        if (!r->fin_sent)
            (void)vega_quic_stream_reset(qc, r->sid, code);
        r->fin_sent = true;
        vega_quic_ep_conn_unlock(hc->qc);
    }
}

static int h3_finish(struct vega_http_exchange *x, const vega_http_field *trailers, size_t n,
                     vega_deadline dl)
{
    struct h3s_req *r = x->impl;
    x->finished = true;
    if (x->broken)
        return x->error ? x->error : -EPIPE;
    dl = wdl(x, dl);
    if (!x->no_body && x->length != VEGA_HTTP_LENGTH_UNKNOWN && x->written != x->length) {
        x->broken = true;
        x->error = -EINVAL;
        reset_stream(r, VEGA_H3_INTERNAL_ERROR);
        return -EINVAL;
    }
    int rc = 0;
    if (n) {
        struct h3s_conn *hc = r->hc;
        vega_http_field lowered[32];
        char names[1024];
        size_t used = 0;
        if (n > 32)
            rc = VEGA_ERR_NOBUF;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            lowered[i] = trailers[i];
            if (!vega__fits(used, trailers[i].name.len, sizeof names)) {
                rc = VEGA_ERR_NOBUF;
                break;
            }
            for (size_t j = 0; j < trailers[i].name.len; j++) {
                char c = trailers[i].name.ptr[j];
                names[used + j] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
            }
            lowered[i].name.ptr = names + used;
            used += trailers[i].name.len;
        }
        if (rc == 0 && !vega__fits(r->out_len, 1024, H3S_OUT_CAP))
            rc = flush_out(r, dl);
        vega_quic_conn *qc = rc ? NULL : vega_quic_ep_conn_lock(hc->qc);
        if (qc) {
            vega_ssize k = vega_h3_conn_write_trailers(
                hc->h3, r->sid, lowered, n, r->out + r->out_len, H3S_OUT_CAP - r->out_len);
            if (k < 0)
                rc = (int)k;
            else
                r->out_len += (size_t)k;
            (void)vega__h3s_flush_uni(hc, qc);
            vega_quic_ep_conn_unlock(hc->qc);
        } else if (rc == 0) {
            rc = -EPIPE;
        }
    }
    if (rc == 0)
        rc = send_all(r, r->out, r->out_len, true, dl);
    r->out_len = 0;
    if (rc < 0) {
        x->broken = true;
        x->error = rc;
        reset_stream(r, VEGA_H3_INTERNAL_ERROR);
    }
    return rc;
}

const struct srv_xops vega__h3s_xops = {
    .read = h3_read,
    .start = h3_start,
    .write = h3_write,
    .sendfile = h3_sendfile,
    .finish = h3_finish,
};

vega_quic_ep_conn *vega_http_exchange_quic(const vega_http_exchange *x)
{
    if (!x || x->ops != &vega__h3s_xops)
        return NULL;
    const struct h3s_req *r = x->impl;
    return r->hc->qc;
}

/* ---- the request's task -------------------------------------------------------------------- */

/* The end of a request: its stream is done both ways (c locked). */
static void req_end(struct h3s_req *r)
{
    struct h3s_conn *hc = r->hc;
    /* NULL: the connection is gone, its callbacks have all run: the list is ours alone */
    vega_quic_conn *qc = vega_quic_ep_conn_lock(hc->qc);
    if (qc) {
        if (!r->fin_recv && !r->reset && !r->failed) {
            /* §4.1.1: the response is complete; the rest of the request is not needed */
            (void)vega_quic_stream_stop(qc, r->sid, VEGA_H3_NO_ERROR);
        }
        if (!r->fin_sent)
            (void)vega_quic_stream_reset(qc, r->sid, VEGA_H3_INTERNAL_ERROR);
        (void)vega_h3_conn_close_stream(hc->h3, r->sid);
    }
    vega__h3s_req_unlink(r);
    if (qc)
        vega_quic_ep_conn_unlock(hc->qc);
}

static void *req_task(void *arg)
{
    struct h3s_req *r = arg;
    struct vega_http_exchange *x = &r->x;
    struct h3s *l = r->hc->l;
    vega_http_server *srv = l->srv;
    atomic_fetch_add_explicit(&srv->requests, 1, memory_order_relaxed);
    int rc = srv->o.handler(x, srv->o.user);
    vega_deadline dl = vega_deadline_in_ns(srv->o.write_timeout_ns);
    if (!x->started && !x->broken) {
        x->error = rc < 0 ? rc : -EINVAL;
        static const vega_http_field ct[] = {
            {{"content-type", 12}, {"text/plain; charset=utf-8", 25}}};
        vega_http_respond(x, 500, ct, 1, body_500, sizeof body_500 - 1, dl);
    } else if (!x->finished && !x->broken) {
        if (rc < 0) {
            x->error = rc;
            x->broken = true;
        } else if (vega_http_response_finish(x, NULL, 0, dl) < 0) {
            x->broken = true;
        }
    } else if (rc < 0 && !x->error) {
        x->error = rc;
    }
    vega__srv_exchange_done(srv, x);
    req_end(r);
    vega_task *self = r->task;
    vega__h3s_req_free(r);
    vega_task_detach(self);
    atomic_fetch_sub(&l->nreqs, 1);
    vega_notify_all(&l->idle);
    atomic_fetch_sub(&l->refs, 1); /* last: l may be freed from here on */
    return NULL;
}
