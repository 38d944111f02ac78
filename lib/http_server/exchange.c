/* SPDX-License-Identifier: MIT */
/* The exchange: the request body (Content-Length or chunked, RFC 9112 §6-§7, with
 * "100 Continue", RFC 9110 §10.1.1) and the response (RFC 9112 §4, §6), built straight into
 * the connection's output buffer so that a head and a small body leave in one write. */
#include <stdlib.h>
#include <unistd.h>

#include "http1_int.h"
#include "server_int.h"

static vega_deadline dl_min(vega_deadline a, vega_deadline b)
{
    return a < b ? a : b;
}

static vega_deadline write_dl(const struct srv_conn *c, vega_deadline dl)
{
    return dl_min(dl, vega_deadline_in_ns(c->srv->o.write_timeout_ns));
}

int vega__srv_flush(struct srv_conn *c, vega_deadline dl)
{
    struct srv_active *a = c->a;
    if (!a->out_len)
        return 0;
    vega_ssize r = vega_stream_write(c->stream, a->out, a->out_len, NULL, write_dl(c, dl));
    a->out_len = 0;
    a->out_count = 0;
    if (r < 0) {
        a->x.broken = true;
        if (!a->x.error)
            a->x.error = (int)r;
        return (int)r;
    }
    return 0;
}

/* Appends n bytes, flushing first when they do not fit; data larger than the buffer goes out
 * with what is buffered in one writev. */
static int emit(struct srv_conn *c, const void *p, size_t n, vega_deadline dl)
{
    struct srv_active *a = c->a;
    if (vega__fits(a->out_len, n, SRV_OUT_CAP)) {
        memcpy(a->out + a->out_len, p, n);
        a->out_len += n;
        VEGA_ASSERT(a->out_len <= SRV_OUT_CAP);
        return 0;
    }
    if (n < SRV_OUT_CAP / 2) {
        int r = vega__srv_flush(c, dl);
        if (r < 0)
            return r;
        memcpy(a->out, p, n);
        a->out_len = n;
        return 0;
    }
    struct iovec iov[2] = {{a->out, a->out_len}, {(void *)p, n}};
    vega_ssize r = vega_stream_writev(c->stream, a->out_len ? iov : iov + 1, a->out_len ? 2 : 1,
                                      NULL, write_dl(c, dl));
    a->out_len = 0;
    a->out_count = 0;
    if (r < 0) {
        a->x.broken = true;
        if (!a->x.error)
            a->x.error = (int)r;
        return (int)r;
    }
    return 0;
}

size_t vega__srv_fmt_u64(char *out, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

#define PUT(lit)                                                                                   \
    do {                                                                                           \
        memcpy(w, lit, sizeof lit - 1);                                                            \
        w += sizeof lit - 1;                                                                       \
    } while (0)

/* Writes "HTTP/1.1 NNN reason\r\n" at w; returns the new end. */
static char *status_line(char *w, int status, const char *reason, size_t rlen)
{
    PUT("HTTP/1.1 ");
    w[0] = (char)('0' + status / 100);
    w[1] = (char)('0' + status / 10 % 10);
    w[2] = (char)('0' + status % 10);
    w[3] = ' ';
    w += 4;
    memcpy(w, reason, rlen);
    w += rlen;
    PUT("\r\n");
    return w;
}

int vega__srv_write_error(struct srv_conn *c, int status)
{
    vega_http_server *srv = c->srv;
    struct srv_active *a = c->a;
    atomic_fetch_add_explicit(&srv->bad_requests, 1, memory_order_relaxed);
    const char *reason = vega_http_status_reason(status);
    size_t rlen = strlen(reason);
    char body[96];
    int blen = snprintf(body, sizeof body, "%d %s\n", status, reason);
    size_t need =
        20 + rlen + SRV_DATE_LINE_LEN + 10 + srv->server_header_len + 64 + 40 + 24 + (size_t)blen;
    if (!vega__fits(a->out_len, need, SRV_OUT_CAP) && vega__srv_flush(c, VEGA_DEADLINE_NEVER) < 0)
        return -EPIPE;
    char *w0 = (char *)a->out + a->out_len, *w = w0;
    w = status_line(w, status, reason, rlen);
    memcpy(w, vega__srv_date_line(), SRV_DATE_LINE_LEN);
    w += SRV_DATE_LINE_LEN;
    if (srv->server_header) {
        PUT("Server: ");
        memcpy(w, srv->server_header, srv->server_header_len);
        w += srv->server_header_len;
        PUT("\r\n");
    }
    PUT("Content-Type: text/plain; charset=utf-8\r\nContent-Length: ");
    w += vega__srv_fmt_u64(w, (uint64_t)blen);
    PUT("\r\nConnection: close\r\n\r\n");
    memcpy(w, body, (size_t)blen);
    w += blen;
    a->out_len += (size_t)(w - w0);
    VEGA_ASSERT(a->out_len <= SRV_OUT_CAP);
    return vega__srv_flush(c, VEGA_DEADLINE_NEVER);
}

/* ---- request body -------------------------------------------------------------------------- */

static int chunk_on_body(void *ud, vega_http1_span d)
{
    struct vega_http_exchange *x = ud;
    memcpy(x->body.dst + x->body.dst_len, d.ptr, d.len);
    x->body.dst_len += d.len;
    return 0;
}

static int chunk_on_complete(void *ud)
{
    struct vega_http_exchange *x = ud;
    x->body.done = true;
    return 1; /* stop at the end of the body: what follows is the next request */
}

static const vega_http1_callbacks chunk_cb = {
    .on_body = chunk_on_body,
    .on_message_complete = chunk_on_complete,
};

/* Reads into the buffer's tail; the head before in_pos stays in place (the handler borrows
 * it), and once every buffered byte is consumed the tail restarts right after the head. */
static vega_ssize fill(struct srv_conn *c, vega_deadline dl)
{
    struct srv_active *a = c->a;
    if (a->in_pos == a->in_end)
        a->in_pos = a->in_end = a->head_end;
    if (a->out_len && vega__srv_flush(c, dl) < 0)
        return a->x.error;
    vega_ssize n = vega__srv_read(c, a->in + a->in_end, a->in_cap - a->in_end, dl);
    if (n > 0)
        a->in_end += (size_t)n;
    return n;
}

vega_ssize vega__srv_body_read(struct vega_http_exchange *x, void *buf, size_t len,
                               vega_deadline dl)
{
    struct srv_conn *c = x->c;
    struct srv_active *a = c->a;
    struct srv_body *b = &x->body;
    if (b->done)
        return 0;
    if (b->failed)
        return VEGA_ERR_PROTO;
    if (b->framing == VEGA_HTTP1_BODY_LENGTH) {
        size_t avail = a->in_end - a->in_pos;
        size_t want = (size_t)VEGA__MIN((uint64_t)len, b->remaining);
        vega_ssize n;
        if (avail) {
            n = (vega_ssize)VEGA__MIN(avail, want);
            memcpy(buf, a->in + a->in_pos, (size_t)n);
            a->in_pos += (size_t)n;
        } else {
            /* straight into the caller's buffer, never past this body; answers held back
             * for earlier requests leave first */
            if (a->out_len && vega__srv_flush(c, dl) < 0)
                return x->error;
            n = vega__srv_read(c, buf, want, dl);
            if (n == 0)
                n = VEGA_ERR_PROTO; /* the client closed inside the body */
            if (n < 0) {
                b->failed = true;
                if (!x->error)
                    x->error = (int)n;
                return n;
            }
        }
        b->remaining -= (uint64_t)n;
        if (!b->remaining)
            b->done = true;
        return n;
    }
    /* chunked: the parser decodes from the buffer; feeding at most len bytes bounds the output */
    if (!b->chunked_init) {
        static const char head[] =
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
        size_t consumed;
        vega_http1_parser_init(&a->parser, VEGA_HTTP1_REQUEST, &c->srv->o.limits, &chunk_cb, x);
        if (vega_http1_parser_read(&a->parser, (const uint8_t *)head, sizeof head - 1, &consumed) <
            0) {
            b->failed = true;
            return VEGA_ERR_PROTO;
        }
        b->chunked_init = true;
    }
    for (;;) {
        size_t avail = a->in_end - a->in_pos;
        if (!avail) {
            vega_ssize n = fill(c, dl);
            if (n == 0)
                n = VEGA_ERR_PROTO;
            if (n < 0) {
                b->failed = true;
                if (!x->error)
                    x->error = (int)n;
                return n;
            }
            continue;
        }
        size_t feed = VEGA__MIN(avail, len), consumed = 0;
        b->dst = buf;
        b->dst_len = 0;
        int rc = vega_http1_parser_read(&a->parser, a->in + a->in_pos, feed, &consumed);
        a->in_pos += consumed;
        if (rc < 0 && !(rc == VEGA_ERR_CALLBACK && b->done)) {
            b->failed = true;
            if (!x->error)
                x->error = VEGA_ERR_PROTO;
            return VEGA_ERR_PROTO;
        }
        if (b->dst_len || b->done)
            return (vega_ssize)b->dst_len;
    }
}

static vega_ssize request_read(vega_http_exchange *x, void *buf, size_t len, vega_deadline dl)
{
    if (x->ops)
        return len ? x->ops->read(x, buf, len, dl) : -EINVAL;
    if (x->body.done)
        return 0;
    if (len == 0)
        return -EINVAL;
    struct srv_conn *c = x->c;
    if (x->req.expect_continue && !x->continue_sent && !x->started) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        x->continue_sent = true;
        if (emit(c, cont, sizeof cont - 1, dl) < 0 || vega__srv_flush(c, dl) < 0)
            return x->error ? x->error : -EPIPE;
    }
    return vega__srv_body_read(x, buf, len,
                               dl_min(dl, vega_deadline_in_ns(c->srv->o.body_timeout_ns)));
}

vega_ssize vega_http_request_read(vega_http_exchange *x, void *buf, size_t len, vega_deadline dl)
{
    if (!x || (!buf && len))
        return -EINVAL;
    vega_ssize n = request_read(x, buf, len, dl);
    if (n > 0)
        x->rx_bytes += (uint64_t)n; /* for the metrics, once the exchange is done */
    return n;
}

/* ---- response ------------------------------------------------------------------------------ */

bool vega__srv_is_framing(const vega_http_str *n)
{
    return vega__http1_ieq(n->ptr, n->len, "content-length") ||
           vega__http1_ieq(n->ptr, n->len, "transfer-encoding") ||
           vega__http1_ieq(n->ptr, n->len, "connection");
}

int vega_http_response_start(vega_http_exchange *x, int status, const vega_http_field *fields,
                             size_t n, uint64_t length)
{
    if (!x || (n && !fields) || status < 100 || status > 999 || status == 101)
        return -EINVAL;
    if (x->started)
        return VEGA_ERR_CLOSED;
    if (x->ops)
        return x->ops->start(x, status, fields, n, length);
    struct srv_conn *c = x->c;
    vega_http_server *srv = c->srv;
    struct srv_active *a = c->a;
    if (x->broken)
        return x->error ? x->error : -EPIPE;
    bool informational = status < 200;
    bool user_date = false, user_server = false, user_alt_svc = false;
    size_t fsize = 0;
    for (size_t i = 0; i < n; i++) {
        const vega_http_field *f = &fields[i];
        if (!f->name.ptr || !vega_http_token_is_valid(f->name.ptr, f->name.len) ||
            (f->value.len && !f->value.ptr) ||
            !vega_http_field_value_is_valid(f->value.ptr ? f->value.ptr : "", f->value.len) ||
            vega__srv_is_framing(&f->name))
            return -EINVAL;
        if (vega__http1_ieq(f->name.ptr, f->name.len, "date"))
            user_date = true;
        else if (vega__http1_ieq(f->name.ptr, f->name.len, "server"))
            user_server = true;
        else if (vega__http1_ieq(f->name.ptr, f->name.len, "alt-svc"))
            user_alt_svc = true;
        fsize += f->name.len + f->value.len + 4;
    }
    const char *reason = vega_http_status_reason(status);
    size_t rlen = strlen(reason);
    size_t need = 16 + rlen + fsize + SRV_DATE_LINE_LEN + 12 + srv->server_header_len + 80 +
                  sizeof srv->alt_svc;
    if (!vega__fits(a->out_len, need, SRV_OUT_CAP)) {
        if (need > SRV_OUT_CAP)
            return VEGA_ERR_NOBUF;
        int r = vega__srv_flush(c, VEGA_DEADLINE_NEVER);
        if (r < 0)
            return r;
    }
    if (informational && x->req.version < 11)
        return 0; /* HTTP/1.0 clients do not expect 1xx (RFC 9110 §15.2) */
    char *w0 = (char *)a->out + a->out_len, *w = w0;
    w = status_line(w, status, reason, rlen);
    if (!informational) {
        if (!user_date) {
            memcpy(w, vega__srv_date_line(), SRV_DATE_LINE_LEN);
            w += SRV_DATE_LINE_LEN;
        }
        if (srv->server_header && !user_server) {
            PUT("Server: ");
            memcpy(w, srv->server_header, srv->server_header_len);
            w += srv->server_header_len;
            PUT("\r\n");
        }
        /* HTTP/3 on the same port: say so to TLS clients (RFC 7838, RFC 9114 §3.1.1) */
        size_t alen = atomic_load_explicit(&srv->alt_svc_len, memory_order_acquire);
        if (alen && c->tls && !user_alt_svc) {
            memcpy(w, srv->alt_svc, alen);
            w += alen;
        }
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(w, fields[i].name.ptr, fields[i].name.len);
        w += fields[i].name.len;
        PUT(": ");
        if (fields[i].value.len)
            memcpy(w, fields[i].value.ptr, fields[i].value.len);
        w += fields[i].value.len;
        PUT("\r\n");
    }
    if (informational) {
        PUT("\r\n");
        a->out_len += (size_t)(w - w0);
        VEGA_ASSERT(a->out_len <= SRV_OUT_CAP);
        if (status == 100)
            x->continue_sent = true;
        return vega__srv_flush(c, VEGA_DEADLINE_NEVER);
    }
    x->started = true;
    x->status = status;
    bool head = x->req.method == VEGA_HTTP_METHOD_HEAD;
    bool no_content = status == 204 || status == 304;
    x->no_body = head || no_content;
    x->length = no_content ? 0 : length;
    /* Decide now whether the connection survives this response: the head says so. */
    if (atomic_load_explicit(&srv->stopping, memory_order_relaxed) || !x->keep_alive)
        x->want_close = true;
    if (!x->body.done && !x->body.failed) {
        if (x->req.expect_continue && !x->continue_sent)
            x->want_close = true; /* the client may or may not send it now: cannot tell */
        else if (x->body.framing == VEGA_HTTP1_BODY_LENGTH && x->body.remaining > SRV_DRAIN_MAX)
            x->want_close = true;
    }
    if (x->body.failed)
        x->want_close = true;
    if (!no_content) {
        if (length != VEGA_HTTP_LENGTH_UNKNOWN) {
            PUT("Content-Length: ");
            w += vega__srv_fmt_u64(w, length);
            PUT("\r\n");
        } else if (x->req.version >= 11) {
            PUT("Transfer-Encoding: chunked\r\n");
            x->chunked = !head;
        } else if (!head) {
            x->close_delimited = true;
            x->want_close = true;
        }
    }
    if (x->want_close)
        PUT("Connection: close\r\n");
    else if (x->req.version < 11)
        PUT("Connection: keep-alive\r\n");
    PUT("\r\n");
    a->out_len += (size_t)(w - w0);
    VEGA_ASSERT(a->out_len <= SRV_OUT_CAP);
    return 0;
}

static int check_write(vega_http_exchange *x, size_t len)
{
    if (!x->started)
        return -EINVAL;
    if (x->finished)
        return VEGA_ERR_CLOSED;
    if (x->broken)
        return x->error ? x->error : -EPIPE;
    if (x->length != VEGA_HTTP_LENGTH_UNKNOWN && len > x->length - x->written)
        return -EINVAL;
    return 0;
}

static int chunk_header(struct srv_conn *c, uint64_t len, vega_deadline dl)
{
    char h[24];
    vega_ssize k = vega_http1_write_chunk_header((uint8_t *)h, sizeof h, len);
    if (k < 0)
        return (int)k;
    return emit(c, h, (size_t)k, dl);
}

vega_ssize vega_http_response_write(vega_http_exchange *x, const void *buf, size_t len,
                                    vega_deadline dl)
{
    if (!x || (!buf && len))
        return -EINVAL;
    int r = check_write(x, len);
    if (r < 0)
        return r;
    if (x->ops)
        return x->ops->write(x, buf, len, dl);
    x->written += len;
    if (x->no_body || len == 0)
        return (vega_ssize)len;
    struct srv_conn *c = x->c;
    if (x->chunked && (r = chunk_header(c, len, dl)) < 0)
        return r;
    if ((r = emit(c, buf, len, dl)) < 0)
        return r;
    if (x->chunked && (r = emit(c, "\r\n", 2, dl)) < 0)
        return r;
    x->body_bytes += len;
    return (vega_ssize)len;
}

vega_ssize vega_http_response_sendfile(vega_http_exchange *x, int fd, uint64_t offset, size_t len,
                                       vega_deadline dl)
{
    if (!x || fd < 0 || offset > (uint64_t)INT64_MAX || len > (size_t)INT64_MAX - offset)
        return -EINVAL;
    int r = check_write(x, len);
    if (r < 0)
        return r;
    if (x->ops)
        return x->ops->sendfile(x, fd, offset, len, dl);
    x->written += len;
    if (x->no_body || len == 0)
        return (vega_ssize)len;
    struct srv_conn *c = x->c;
    struct srv_active *a = c->a;
    const size_t total = len;
    if (x->chunked && (r = chunk_header(c, len, dl)) < 0)
        return r;
    /* Room for the bytes and the chunk's CRLF: checked by adding, as `CAP - out_len - 2` wraps
     * when the buffer is (nearly) full, and pread then writes past it. */
    if (len <= SRV_OUT_CAP / 2 && vega__fits(a->out_len, len + 2, SRV_OUT_CAP)) {
        /* small: copy it next to the head, one write for both */
        size_t got = 0;
        while (got < len) {
            ssize_t k = pread(fd, a->out + a->out_len + got, len - got, (off_t)(offset + got));
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                x->broken = true; /* the announced length can no longer be met */
                x->error = k < 0 ? -errno : -ENODATA;
                return x->error;
            }
            got += (size_t)k;
        }
        a->out_len += len;
        VEGA_ASSERT(a->out_len <= SRV_OUT_CAP);
    } else {
        /* A head still waiting in the output buffer goes out with the first bytes of the file
         * in one send, so the client's first segment is full rather than a lone head (what
         * TCP_CORK gives nginx), then sendfile takes the rest. */
        size_t room = vega__room(a->out_len, SRV_OUT_CAP);
        size_t lead = a->out_len > 0 && !x->chunked && room > 4096 ? room : 0;
        if (lead > len)
            lead = len;
        while (lead > 0) {
            ssize_t k = pread(fd, a->out + a->out_len, lead, (off_t)offset);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                x->broken = true;
                x->error = k < 0 ? -errno : -ENODATA;
                return x->error;
            }
            a->out_len += (size_t)k;
            VEGA_ASSERT(a->out_len <= SRV_OUT_CAP);
            offset += (uint64_t)k;
            len -= (size_t)k;
            x->body_bytes += (uint64_t)k;
            lead -= (size_t)k;
        }
        if ((r = vega__srv_flush(c, dl)) < 0)
            return r;
        size_t sent = 0;
        vega_ssize k =
            len ? vega_stream_sendfile(c->stream, fd, (off_t)offset, len, &sent, write_dl(c, dl))
                : 0;
        if (k < 0) {
            x->broken = true;
            x->error = (int)k;
            x->body_bytes += sent;
            return k;
        }
    }
    if (x->chunked && (r = emit(c, "\r\n", 2, dl)) < 0)
        return r;
    x->body_bytes += len;
    return (vega_ssize)total;
}

int vega_http_response_finish(vega_http_exchange *x, const vega_http_field *trailers, size_t n,
                              vega_deadline dl)
{
    if (!x || (n && !trailers))
        return -EINVAL;
    if (!x->started)
        return -EINVAL;
    if (x->finished)
        return VEGA_ERR_CLOSED;
    if (x->ops)
        return x->ops->finish(x, trailers, n, dl);
    struct srv_conn *c = x->c;
    vega_http_server *srv = c->srv;
    struct srv_active *a = c->a;
    x->finished = true;
    if (x->broken)
        return x->error ? x->error : -EPIPE;
    if (x->chunked) {
        vega_http1_field tf[16];
        uint8_t tmp[1024];
        size_t m = VEGA__MIN(n, VEGA__ARRAY_LEN(tf));
        if (n > m)
            return VEGA_ERR_NOBUF;
        for (size_t i = 0; i < m; i++)
            tf[i] = (vega_http1_field){trailers[i].name.ptr, trailers[i].name.len,
                                       trailers[i].value.ptr, trailers[i].value.len};
        vega_ssize k = vega_http1_write_last_chunk(tmp, sizeof tmp, tf, m);
        if (k < 0) {
            /* the response cannot end well any more: close so the client sees it cut short */
            x->broken = true;
            x->want_close = true;
            return (int)k;
        }
        int r = emit(c, tmp, (size_t)k, dl);
        if (r < 0)
            return r;
    } else if (!x->no_body && x->length != VEGA_HTTP_LENGTH_UNKNOWN && x->written != x->length) {
        x->broken = true;
        x->want_close = true;
        if (!x->error)
            x->error = -EINVAL;
        return -EINVAL;
    }
    a->out_count++;
    /* Hold the response back only while the next pipelined request is already here to answer. */
    if (!x->want_close && !x->close_delimited && x->body.done &&
        a->out_count < srv->o.max_pipelined && a->out_len < SRV_OUT_CAP / 2 &&
        vega__srv_head_complete(a->in + a->in_pos, a->in_end - a->in_pos))
        return 0;
    return vega__srv_flush(c, dl);
}

int vega_http_respond(vega_http_exchange *x, int status, const vega_http_field *fields, size_t n,
                      const void *body, size_t len, vega_deadline dl)
{
    int r = vega_http_response_start(x, status, fields, n, len);
    if (r < 0)
        return r;
    if (len) {
        vega_ssize k = vega_http_response_write(x, body, len, dl);
        if (k < 0)
            return (int)k;
    }
    return vega_http_response_finish(x, NULL, 0, dl);
}

void vega_http_exchange_set_close(vega_http_exchange *x)
{
    if (x)
        x->want_close = true;
}

bool vega_http_response_is_started(const vega_http_exchange *x)
{
    return x && x->started;
}

const vega_http_request *vega_http_exchange_request(const vega_http_exchange *x)
{
    return x ? &x->req : NULL;
}

vega_stream *vega_http_exchange_tls(const vega_http_exchange *x)
{
    return x && x->c && x->c->tls ? x->c->stream : NULL; /* HTTP/1.1 and HTTP/2 (not 3) */
}
