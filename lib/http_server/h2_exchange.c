/* SPDX-License-Identifier: MIT */
/* HTTP/2 exchanges of the HTTP server (RFC 9113 §8.1): the request body read from the stream's
 * queue (or straight into the handler's buffer), the response as a HEADERS frame (§8.3.2) and
 * DATA frames the core copies from the handler's own buffer (zero copy until the output; a
 * write returns once its bytes are out), small writes gathered so that a small response is one
 * DATA frame with END_STREAM, trailers, and the request's task. */
#include <stdlib.h>
#include <unistd.h>

#include "h2_srv_int.h"
#include "http1_int.h"

static const char body_500[] = "internal server error\n";

static vega_deadline dl_min(vega_deadline a, vega_deadline b)
{
    return a < b ? a : b;
}

static vega_deadline wdl(const struct h2s_req *r, vega_deadline dl)
{
    return dl_min(dl, vega_deadline_in_ns(r->h->srv->o.write_timeout_ns));
}

/* The connection task writes what the core has. */
static void kick(struct h2s_conn *h)
{
    vega_notify_one(&h->wake);
}

/* Why the stream cannot be used (h locked). */
static int stream_error(const struct h2s_req *r)
{
    if (r->closed && r->close_how == VEGA_H2_CLOSE_RESET_LOCAL &&
        r->close_code == VEGA_H2_PROTOCOL_ERROR)
        return VEGA_ERR_PROTO; /* a malformed body (§8.1.1) */
    return r->closed && r->close_how == VEGA_H2_CLOSE_CONNECTION ? -EPIPE : -ECONNRESET;
}

/* ---- the body -------------------------------------------------------------------------------- */

static vega_ssize h2_read(struct vega_http_exchange *x, void *buf, size_t len, vega_deadline dl);
static int h2_start(struct vega_http_exchange *x, int status, const vega_http_field *fields,
                    size_t n, uint64_t length);

/* Takes up to len queued body bytes (h locked): the window opens again for them. */
static size_t rx_take(struct h2s_req *r, void *buf, size_t len)
{
    size_t n = VEGA__MIN(len, r->rx_len);
    memcpy(buf, r->rx + r->rx_off, n);
    r->rx_off += n;
    r->rx_len -= n;
    if (!r->rx_len)
        r->rx_off = 0;
    (void)vega_h2_stream_consume(r->h->core, r->sid, n);
    return n;
}

static vega_ssize h2_read(struct vega_http_exchange *x, void *buf, size_t len, vega_deadline dl)
{
    struct h2s_req *r = x->impl;
    struct h2s_conn *h = r->h;
    if (x->req.expect_continue && !x->continue_sent && !x->started) {
        /* RFC 9110 §10.1.1: the client waits for this before it sends the body */
        x->continue_sent = true;
        int rc = h2_start(x, 100, NULL, 0, 0);
        if (rc < 0)
            return rc;
    }
    return vega__h2s_read(r, buf, len, dl_min(dl, vega_deadline_in_ns(h->srv->o.body_timeout_ns)));
}

vega_ssize vega__h2s_read(struct h2s_req *r, void *buf, size_t len, vega_deadline dl)
{
    struct h2s_conn *h = r->h;
    vega__h2s_lock(h);
    for (;;) {
        vega_ssize got = 0;
        bool ready = true;
        if (r->rx_len)
            got = (vega_ssize)rx_take(r, buf, len);
        else if (r->closed || h->dead)
            got = r->fin_recv ? 0 : stream_error(r);
        else if (!r->fin_recv)
            ready = false;
        if (!ready) {
            /* wait: what arrives meanwhile goes straight into buf */
            r->dst = buf;
            r->dst_len = len;
            r->dst_got = 0;
            vega__h2s_unlock(h);
            int rc = vega_notify_wait(&r->rd, dl);
            vega__h2s_lock(h);
            got = (vega_ssize)r->dst_got;
            r->dst = NULL;
            if (got == 0 && rc == 0)
                continue;
            if (got == 0) {
                vega__h2s_unlock(h);
                return rc;
            }
        }
        bool w = got > 0 && vega_h2_conn_want_write(h->core);
        vega__h2s_unlock(h);
        if (w)
            kick(h); /* a WINDOW_UPDATE */
        return got;
    }
}

/* ---- the head -------------------------------------------------------------------------------- */

/* §8.2.2: connection-specific fields an HTTP/1.1 handler may add have no meaning here. */
static bool is_h1_only(vega_http_str n)
{
    return vega__http1_ieq(n.ptr, n.len, "keep-alive") ||
           vega__http1_ieq(n.ptr, n.len, "proxy-connection") ||
           vega__http1_ieq(n.ptr, n.len, "upgrade");
}

/* Field names are lowercase in HTTP/2 (§8.2.1): copied lowered into *w. */
static vega_http_str lowered(char **w, vega_http_str n)
{
    bool upper = false;
    for (size_t i = 0; i < n.len; i++)
        upper |= n.ptr[i] >= 'A' && n.ptr[i] <= 'Z';
    if (!upper)
        return n;
    char *d = *w;
    for (size_t i = 0; i < n.len; i++)
        d[i] = n.ptr[i] >= 'A' && n.ptr[i] <= 'Z' ? (char)(n.ptr[i] + 32) : n.ptr[i];
    *w += n.len;
    return (vega_http_str){d, n.len};
}

/* The response's fields for the core: :status, what the server adds, the handler's (lowered),
 * content-length. Returns the count, or -EINVAL for a field the exchange refuses. */
static int build_head(const struct h2s_req *r, int status, const vega_http_field *fields, size_t n,
                      uint64_t length, vega_hpack_field *v, char *names, char *num)
{
    vega_http_server *srv = r->h->srv;
    bool informational = status < 200, no_content = status == 204 || status == 304;
    bool user_date = false, user_server = false, user_alt = false;
    for (size_t i = 0; i < n; i++) {
        const vega_http_field *f = &fields[i];
        if (!f->name.ptr || !vega_http_token_is_valid(f->name.ptr, f->name.len) ||
            (f->value.len && !f->value.ptr) ||
            !vega_http_field_value_is_valid(f->value.ptr ? f->value.ptr : "", f->value.len) ||
            vega__srv_is_framing(&f->name))
            return -EINVAL;
        user_date |= vega__http1_ieq(f->name.ptr, f->name.len, "date");
        user_server |= vega__http1_ieq(f->name.ptr, f->name.len, "server");
        user_alt |= vega__http1_ieq(f->name.ptr, f->name.len, "alt-svc");
    }
    size_t k = 0;
    num[0] = (char)('0' + status / 100);
    num[1] = (char)('0' + status / 10 % 10);
    num[2] = (char)('0' + status % 10);
    v[k++] = (vega_hpack_field){{":status", 7}, {num, 3}, VEGA_HPACK_INDEX_AUTO};
    if (!informational) {
        if (!user_date) {
            /* "Date: <IMF-fixdate>\r\n": the value between ": " and the CRLF */
            const char *dl = vega__srv_date_line();
            v[k++] = (vega_hpack_field){
                {"date", 4}, {dl + 6, SRV_DATE_LINE_LEN - 8}, VEGA_HPACK_INDEX_AUTO};
        }
        if (srv->server_header && !user_server)
            v[k++] = (vega_hpack_field){
                {"server", 6}, {srv->server_header, srv->server_header_len}, VEGA_HPACK_INDEX_AUTO};
        /* HTTP/3 on the same port: say so to TLS clients (RFC 7838) */
        size_t alen = atomic_load_explicit(&srv->alt_svc_len, memory_order_acquire);
        if (alen > 11 && r->h->c->tls && !user_alt)
            v[k++] = (vega_hpack_field){
                {"alt-svc", 7}, {srv->alt_svc + 9, alen - 11}, VEGA_HPACK_INDEX_AUTO};
    }
    char *w = names;
    for (size_t i = 0; i < n; i++) {
        if (is_h1_only(fields[i].name))
            continue;
        vega_http_str value = fields[i].value;
        if (!value.ptr)
            value.ptr = "";
        v[k++] = (vega_hpack_field){lowered(&w, fields[i].name), value, VEGA_HPACK_INDEX_AUTO};
    }
    if (!informational && !no_content && length != VEGA_HTTP_LENGTH_UNKNOWN) {
        size_t cn = vega__srv_fmt_u64(num + 4, length);
        v[k++] = (vega_hpack_field){{"content-length", 14}, {num + 4, cn}, VEGA_HPACK_INDEX_AUTO};
    }
    return (int)k;
}

static int h2_start(struct vega_http_exchange *x, int status, const vega_http_field *fields,
                    size_t n, uint64_t length)
{
    struct h2s_req *r = x->impl;
    struct h2s_conn *h = r->h;
    const vega_mem *m = h->srv->o.mem;
    if (x->broken)
        return x->error ? x->error : -EPIPE;
    size_t names = 0;
    for (size_t i = 0; i < n; i++)
        names += fields[i].name.len;
    vega_hpack_field *v = vega__mem_malloc(m, (n + 5) * sizeof *v + names + 1);
    if (!v)
        return -ENOMEM;
    char num[32];
    int k = build_head(r, status, fields, n, length, v, (char *)(v + n + 5), num);
    if (k < 0) {
        vega__mem_free(m, v);
        return k;
    }
    bool informational = status < 200;
    bool head = x->req.method == VEGA_HTTP_METHOD_HEAD;
    bool no_content = status == 204 || status == 304;
    /* a response without a body ends with its HEADERS frame */
    bool end = !informational && (head || no_content || length == 0);
    vega__h2s_lock(h);
    int rc;
    if (r->closed || h->dead)
        rc = stream_error(r);
    else
        rc = vega_h2_submit_response(h->core, r->sid, v, (size_t)k,
                                     end ? VEGA_H2_FLAG_END_STREAM : 0);
    if (rc == VEGA_ERR_H2_STREAM_CLOSED || rc == VEGA_ERR_CLOSED)
        rc = stream_error(r);
    if (rc == 0 && end)
        r->end_given = true;
    vega__h2s_unlock(h);
    vega__mem_free(m, v);
    if (rc < 0)
        return rc;
    if (informational) {
        kick(h); /* 1xx goes out now */
        if (status == 100)
            x->continue_sent = true;
        return 0;
    }
    x->started = true;
    x->status = status;
    x->no_body = head || no_content;
    x->length = no_content ? 0 : length;
    if (end)
        kick(h);
    return 0;
}

/* ---- response bytes -------------------------------------------------------------------------- */

/* Takes the span back from the core (the stream is reset: the caller's buffer is free at once).
 * h locked. */
static void reclaim(struct h2s_req *r)
{
    struct h2s_conn *h = r->h;
    if (!r->busy || r->closed)
        return;
    r->self_reset = true;
    if (vega_h2_submit_rst_stream(h->core, r->sid, VEGA_H2_CANCEL) == -ENOMEM)
        (void)vega_h2_submit_goaway(h->core, VEGA_H2_INTERNAL_ERROR, NULL, 0); /* closes all */
    VEGA_ASSERT(!r->busy);
}

/* Waits until the core is done with the stream's span (h locked; unlocked while waiting).
 * Returns 0, or a code after which the span is no longer the core's either. */
static int wait_span(struct h2s_req *r, vega_deadline dl)
{
    struct h2s_conn *h = r->h;
    while (r->busy) {
        vega__h2s_unlock(h);
        int rc = vega_notify_wait(&r->wr, dl);
        vega__h2s_lock(h);
        if (rc < 0 && r->busy) {
            reclaim(r);
            return rc;
        }
    }
    return 0;
}

/* Gives p[0..n) to the core (end: it ends our side) once the last span is out; small: the
 * span is what small holds (read once that span is out). With wait, also waits until the core
 * copied it (p is the caller's). Returns 0 or a negative code. */
static int offer(struct h2s_req *r, const uint8_t *p, size_t n, bool end, bool small, bool wait,
                 vega_deadline dl)
{
    struct h2s_conn *h = r->h;
    vega__h2s_lock(h);
    int rc = wait_span(r, dl);
    if (small) {
        p = r->small;
        n = r->small_len;
    }
    if (rc == 0 && n == 0 && !end) {
        vega__h2s_unlock(h);
        return 0;
    }
    if (rc == 0 && (r->closed || h->dead))
        rc = stream_error(r);
    if (rc == 0) {
        vega_ssize k =
            vega_h2_stream_write(h->core, r->sid, p, n, end ? VEGA_H2_FLAG_END_STREAM : 0);
        if (k < 0)
            rc = k == VEGA_ERR_H2_STREAM_CLOSED || k == VEGA_ERR_CLOSED ? stream_error(r) : (int)k;
        else if ((size_t)k != n)
            rc = -EIO; /* cannot happen: no span was pending */
    }
    if (rc == 0) {
        r->busy = true;
        r->small_sent = small;
        h->nbusy++;
        r->end_given |= end;
    }
    vega__h2s_unlock(h);
    if (rc < 0)
        return rc;
    kick(h);
    if (!wait)
        return 0;
    vega__h2s_lock(h);
    rc = wait_span(r, dl);
    if (rc == 0 && r->closed && !r->end_given)
        rc = stream_error(r);
    vega__h2s_unlock(h);
    return rc;
}

/* Sends what small holds (its span stays the core's until written: small writes that follow
 * wait for it). */
static int flush_small(struct h2s_req *r, bool end, vega_deadline dl)
{
    return offer(r, NULL, 0, end, true, false, dl);
}

/* Room for len more bytes in small (allocated at the first small write: the response's length
 * when it is smaller). Returns the buffer's write position or NULL. */
static uint8_t *small_room(struct h2s_req *r, size_t len, bool *ok)
{
    struct vega_http_exchange *x = &r->x;
    *ok = true;
    if (len > H2S_SMALL_CAP / 2 || r->small_sent)
        return NULL;
    if (!r->small) {
        size_t cap = H2S_SMALL_CAP;
        if (x->length != VEGA_HTTP_LENGTH_UNKNOWN && x->length < cap)
            cap = (size_t)x->length;
        if (len > cap)
            return NULL;
        if (!(r->small = vega__mem_malloc(r->h->srv->o.mem, cap ? cap : 1))) {
            *ok = false;
            return NULL;
        }
        r->small_cap = cap;
    }
    if (!vega__fits(r->small_len, len, r->small_cap))
        return NULL;
    return r->small + r->small_len;
}

int vega__h2s_send(struct h2s_req *r, const void *p, size_t n, bool end, vega_deadline dl)
{
    dl = wdl(r, dl);
    int rc = flush_small(r, false, dl);
    if (rc == 0 && (n || end))
        rc = offer(r, p, n, end, false, true, dl);
    return rc;
}

static int fail(struct vega_http_exchange *x, int rc)
{
    x->broken = true;
    if (!x->error)
        x->error = rc;
    return rc;
}

static vega_ssize h2_write(struct vega_http_exchange *x, const void *buf, size_t len,
                           vega_deadline dl)
{
    struct h2s_req *r = x->impl;
    x->written += len;
    if (x->no_body || len == 0)
        return (vega_ssize)len;
    dl = wdl(r, dl);
    bool last = x->length != VEGA_HTTP_LENGTH_UNKNOWN && x->written == x->length;
    bool ok;
    uint8_t *w = small_room(r, len, &ok);
    if (!ok)
        return fail(x, -ENOMEM);
    int rc;
    if (w) {
        /* gathered: sent with the head (and END_STREAM) when the response ends */
        memcpy(w, buf, len);
        r->small_len += len;
        rc = last ? flush_small(r, true, dl) : 0;
    } else {
        rc = flush_small(r, false, dl);
        if (rc == 0)
            rc = offer(r, buf, len, last, false, true, dl);
    }
    if (rc < 0)
        return fail(x, rc);
    x->body_bytes += len;
    return (vega_ssize)len;
}

/* Reads len bytes of fd at off into p. Returns 0 or a negative code. */
static int pread_all(int fd, uint8_t *p, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t k = pread(fd, p + got, len - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? -errno : -ENODATA;
        got += (size_t)k;
    }
    return 0;
}

/* How much of a file is worth reading now for r, at most cap: what both flow-control windows
 * let go, and at least H2S_FILE_MIN (the span must be there when a window opens). A peer that
 * opens no window -- a slow reader, or a hostile one asking for a large file on each of its
 * hundred streams -- then makes each stream hold 16 KiB of the file, not 64. */
static size_t window_room(struct h2s_req *r, size_t cap)
{
    struct h2s_conn *h = r->h;
    vega_h2_conn_info ci;
    vega_h2_stream_info si;
    vega__h2s_lock(h);
    vega_h2_conn_get_info(h->core, &ci);
    int rc = vega_h2_stream_get_info(h->core, r->sid, &si);
    vega__h2s_unlock(h);
    if (rc < 0)
        return cap; /* the stream is gone: the offer says so */
    int64_t w = VEGA__MIN(ci.send_window, si.send_window);
    if (w <= (int64_t)H2S_FILE_MIN)
        return VEGA__MIN(cap, (size_t)H2S_FILE_MIN);
    return (uint64_t)w < cap ? (size_t)w : cap;
}

static vega_ssize h2_sendfile(struct vega_http_exchange *x, int fd, uint64_t offset, size_t len,
                              vega_deadline dl)
{
    struct h2s_req *r = x->impl;
    const vega_mem *m = r->h->srv->o.mem;
    x->written += len;
    if (x->no_body || len == 0)
        return (vega_ssize)len;
    dl = wdl(r, dl);
    bool last = x->length != VEGA_HTTP_LENGTH_UNKNOWN && x->written == x->length;
    bool ok;
    uint8_t *w = small_room(r, len, &ok);
    if (!ok)
        return fail(x, -ENOMEM);
    int rc = 0;
    if (w) {
        rc = pread_all(fd, w, len, offset);
        if (rc == 0) {
            r->small_len += len;
            x->body_bytes += len;
            if (last)
                rc = flush_small(r, true, dl);
        }
        return rc < 0 ? fail(x, rc) : (vega_ssize)len;
    }
    /* A file goes in pieces through one buffer: read, handed to the core, which copies it into
     * its output (the copy user-space TLS needs anyway; see docs/arch-h2-server.md) */
    rc = flush_small(r, false, dl);
    size_t cap = VEGA__MIN(len, (size_t)H2S_FILE_CHUNK);
    size_t done = 0;
    while (rc == 0 && done < len) {
        size_t k = VEGA__MIN(len - done, window_room(r, cap));
        if (k > r->chunk_cap) {
            size_t want = k <= H2S_FILE_MIN ? VEGA__MIN(cap, (size_t)H2S_FILE_MIN) : cap;
            uint8_t *b = vega__mem_realloc(m, r->chunk, want);
            if (!b) {
                rc = -ENOMEM;
                break;
            }
            r->chunk = b;
            r->chunk_cap = want;
        }
        rc = pread_all(fd, r->chunk, k, offset + done);
        if (rc == 0)
            rc = offer(r, r->chunk, k, last && done + k == len, false, true, dl);
        if (rc == 0)
            done += k;
    }
    x->body_bytes += done;
    vega__mem_free(m, r->chunk);
    r->chunk = NULL;
    r->chunk_cap = 0;
    return rc < 0 ? fail(x, rc) : (vega_ssize)len;
}

/* Resets the stream: a response that cannot end well (h unlocked). */
static void reset_stream(struct h2s_req *r)
{
    struct h2s_conn *h = r->h;
    vega__h2s_lock(h);
    r->self_reset = true;
    if (!r->closed)
        (void)vega_h2_submit_rst_stream(h->core, r->sid, VEGA_H2_INTERNAL_ERROR);
    r->end_given = true;
    vega__h2s_unlock(h);
    kick(h);
}

static int send_trailers(struct h2s_req *r, const vega_http_field *t, size_t n, vega_deadline dl)
{
    struct h2s_conn *h = r->h;
    vega_hpack_field v[32];
    char names[1024];
    size_t used = 0;
    if (n > VEGA__ARRAY_LEN(v))
        return VEGA_ERR_NOBUF;
    for (size_t i = 0; i < n; i++) {
        if (!t[i].name.ptr || !vega__fits(used, t[i].name.len, sizeof names))
            return t[i].name.ptr ? VEGA_ERR_NOBUF : -EINVAL;
        char *w = names + used;
        v[i] = (vega_hpack_field){lowered(&w, t[i].name),
                                  {t[i].value.ptr ? t[i].value.ptr : "", t[i].value.len},
                                  VEGA_HPACK_INDEX_AUTO};
        used = (size_t)(w - names);
    }
    int rc = flush_small(r, false, dl);
    vega__h2s_lock(h);
    if (rc == 0)
        rc = wait_span(r, dl); /* the trailers follow every body byte */
    if (rc == 0 && (r->closed || h->dead))
        rc = stream_error(r);
    if (rc == 0)
        rc = vega_h2_submit_trailers(h->core, r->sid, v, n);
    if (rc == 0)
        r->end_given = true;
    vega__h2s_unlock(h);
    if (rc == 0)
        kick(h);
    return rc;
}

static int h2_finish(struct vega_http_exchange *x, const vega_http_field *trailers, size_t n,
                     vega_deadline dl)
{
    struct h2s_req *r = x->impl;
    x->finished = true;
    if (x->broken)
        return x->error ? x->error : -EPIPE;
    dl = wdl(r, dl);
    if (!x->no_body && x->length != VEGA_HTTP_LENGTH_UNKNOWN && x->written != x->length) {
        reset_stream(r); /* the client could not tell the body was cut short otherwise */
        return fail(x, -EINVAL);
    }
    if (r->end_given)
        return 0;
    int rc = n ? send_trailers(r, trailers, n, dl) : flush_small(r, true, dl);
    if (rc < 0) {
        reset_stream(r);
        return fail(x, rc);
    }
    return 0;
}

const struct srv_xops vega__h2s_xops = {
    .read = h2_read,
    .start = h2_start,
    .write = h2_write,
    .sendfile = h2_sendfile,
    .finish = h2_finish,
};

/* ---- the request's task ---------------------------------------------------------------------- */

/* The handler is done with the stream (h locked). */
static void req_end(struct h2s_req *r)
{
    struct h2s_conn *h = r->h;
    r->task_done = true;
    if (!r->closed) {
        if (!r->end_given) {
            (void)vega_h2_submit_rst_stream(h->core, r->sid, VEGA_H2_INTERNAL_ERROR);
        } else if (!r->fin_recv) {
            /* the body is not wanted: reset NO_ERROR once our END_STREAM is out (§8.1) */
            r->rst_after = true;
            h->nrst_after++;
        }
    }
    /* what waits in the queue goes back to the window now */
    if (!r->closed && r->rx_len)
        (void)vega_h2_stream_consume(h->core, r->sid, r->rx_len);
    r->rx_len = r->rx_off = 0;
    if (r->x.want_close && !h->shut && !h->dead) {
        /* set_close: the connection goes away once its streams are done */
        h->shut = true;
        (void)vega_h2_conn_shutdown(h->core, vega_now());
    }
}

void *vega__h2s_req_task(void *arg)
{
    struct h2s_req *r = arg;
    struct vega_http_exchange *x = &r->x;
    struct h2s_conn *h = r->h;
    vega_http_server *srv = h->srv;
    atomic_fetch_add_explicit(&srv->requests, 1, memory_order_relaxed);
    int rc = srv->o.handler(x, srv->o.user);
    vega_deadline dl = vega_deadline_in_ns(srv->o.write_timeout_ns);
    if (!x->started && !x->broken) {
        x->error = rc < 0 ? rc : -EINVAL;
        static const vega_http_field ct[] = {
            {{"content-type", 12}, {"text/plain; charset=utf-8", 25}}};
        (void)vega_http_respond(x, 500, ct, 1, body_500, sizeof body_500 - 1, dl);
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
    vega__h2s_lock(h);
    req_end(r);
    vega_task *self = r->task;
    r->task = NULL;
    h->ntasks--;
    vega__h2s_req_unref(r);
    vega_notify_one(&h->wake);
    vega__h2s_unlock(h);
    vega_task_detach(self);
    atomic_fetch_sub_explicit(&h->tasks_live, 1, memory_order_release); /* last touch of h */
    return NULL;
}
