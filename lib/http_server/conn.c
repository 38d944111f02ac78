/* SPDX-License-Identifier: MIT */
/* An HTTP/1.1 server connection (RFC 9112): reads request heads zero-copy into its buffer,
 * runs the handler for each request in order, coalesces the responses of pipelined requests,
 * answers malformed input with 400/414/431/501/505 and closes, and parks when idle. */
#include <stdlib.h>
#include <sys/socket.h>

#include "h2_srv_int.h"
#include "http1_int.h"
#include "server_int.h"

enum {
    HEAD_READY = 1,
    HEAD_CLOSE = 0,
    HEAD_PARKED = 2,
    HEAD_H2 = 5 /* the connection speaks HTTP/2 (h2_setup.c): its bytes are in the buffer */
};
/* Inner answers of next_head's steps (never returned by it). */
enum {
    HEAD_MORE = 3,
    HEAD_WAIT = 4
};

/* ---- the active block ---------------------------------------------------------------------- */

/* One allocation: the block, then the field array, then the first read buffer (a larger one,
 * for a head that does not fit, is allocated apart). Blocks come from the worker's pool
 * (pool.c) and go back to it when the connection parks or closes. */
static struct srv_active *active_new(vega_http_server *srv)
{
    return vega__srv_active_get(srv);
}

/* Resizes the read buffer to cap bytes, keeping its content. */
static int in_resize(const vega_mem *m, struct srv_active *a, size_t cap)
{
    uint8_t *n = vega__mem_realloc(m, a->in_own, cap);
    if (!n)
        return -ENOMEM;
    if (!a->in_own)
        memcpy(n, a->in, VEGA__MIN(a->in_end, cap));
    a->in = a->in_own = n;
    a->in_cap = cap;
    return 0;
}

static void active_free(vega_http_server *srv, struct srv_active *a)
{
    vega__srv_active_put(srv, a);
}

void vega__srv_conn_free(struct srv_conn *c)
{
    const vega_mem *m = c->srv->o.mem;
    active_free(c->srv, c->a);
    c->a = NULL;
    if (c->stream && c->sock && !c->tls)
        vega__srv_stream_put(c->srv, c->stream); /* a wrapper from the pool: nothing to flush */
    else if (c->stream)
        vega_stream_close(c->stream, vega_deadline_in_ms(1000));
    if (c->sock) {
        /* The peer sees the end now: once parked, a socket's close(2) is left to the worker
         * that watched it, which may come later. */
        vega_sock_shutdown(c->sock, SHUT_RDWR);
        vega_sock_close(c->sock);
    }
    vega__srv_unregister(c);
    vega__h2s_free(c); /* after unregistering: shutdown reaches registered ones only */
    vega__srv_addr_fini(m, &c->peer);
    vega__srv_addr_fini(m, &c->local);
    vega__mem_free(m, c);
}

enum {
    SRV_ADDR_NONE = 0,
    SRV_ADDR_V4,
    SRV_ADDR_V6,
    SRV_ADDR_HEAP,
    SRV_ADDR_RAW, /* a short address of another family (an unnamed Unix socket's): its bytes in
                     a, its length in port */
};

/* A heap address keeps its pointer in a's first bytes. */
static vega_addr *addr_big(const struct srv_addr *sa)
{
    vega_addr *p = NULL;
    if (sa->kind == SRV_ADDR_HEAP)
        memcpy(&p, sa->a, sizeof p);
    return p;
}

int vega__srv_addr_set(const vega_mem *m, struct srv_addr *sa, const vega_addr *a)
{
    vega__srv_addr_fini(m, sa);
    const struct sockaddr *s = (const struct sockaddr *)&a->ss;
    if (a->len == sizeof(struct sockaddr_in) && s->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)&a->ss;
        sa->kind = SRV_ADDR_V4;
        sa->port = v4->sin_port;
        memcpy(sa->a, &v4->sin_addr, sizeof v4->sin_addr);
        return 0;
    }
    if (a->len == sizeof(struct sockaddr_in6) && s->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&a->ss;
        if (v6->sin6_flowinfo == 0) {
            sa->kind = SRV_ADDR_V6;
            sa->port = v6->sin6_port;
            sa->scope = v6->sin6_scope_id;
            memcpy(sa->a, &v6->sin6_addr, sizeof v6->sin6_addr);
            return 0;
        }
    }
    if (a->len == 0)
        return 0;
    if (a->len <= sizeof sa->a) {
        sa->kind = SRV_ADDR_RAW;
        sa->port = (uint16_t)a->len;
        memcpy(sa->a, &a->ss, a->len);
        return 0;
    }
    vega_addr *big = vega__mem_malloc(m, sizeof *big);
    if (!big)
        return -ENOMEM;
    *big = *a;
    memcpy(sa->a, &big, sizeof big);
    sa->kind = SRV_ADDR_HEAP;
    return 0;
}

void vega__srv_addr_get(const struct srv_addr *sa, vega_addr *out)
{
    vega_addr *big = addr_big(sa);
    if (big) {
        *out = *big;
        return;
    }
    memset(&out->ss, 0, sizeof out->ss);
    out->len = 0;
    if (sa->kind == SRV_ADDR_V4) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)&out->ss;
        v4->sin_family = AF_INET;
        v4->sin_port = sa->port;
        memcpy(&v4->sin_addr, sa->a, sizeof v4->sin_addr);
        out->len = sizeof *v4;
    } else if (sa->kind == SRV_ADDR_V6) {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&out->ss;
        v6->sin6_family = AF_INET6;
        v6->sin6_port = sa->port;
        v6->sin6_scope_id = sa->scope;
        memcpy(&v6->sin6_addr, sa->a, sizeof v6->sin6_addr);
        out->len = sizeof *v6;
    } else if (sa->kind == SRV_ADDR_RAW) {
        memcpy(&out->ss, sa->a, sa->port);
        out->len = sa->port;
    }
}

void vega__srv_addr_fini(const vega_mem *m, struct srv_addr *sa)
{
    vega__mem_free(m, addr_big(sa));
    sa->kind = SRV_ADDR_NONE;
}

/* ---- the request head ---------------------------------------------------------------------- */

static int on_request_line(void *ud, vega_http1_span method, vega_http1_span target, int version)
{
    struct vega_http_exchange *x = ud;
    vega_http_request *r = &x->req;
    r->version = version;
    r->method_name = (vega_http_str){method.ptr, method.len};
    int m = vega_http_method_parse(method.ptr, method.len);
    r->method = m < 0 ? VEGA_HTTP_METHOD_OTHER : m;
    r->target = (vega_http_str){target.ptr, target.len};
    if (target.ptr[0] == '/') {
        const char *q = memchr(target.ptr, '?', target.len);
        if (q) {
            r->path = (vega_http_str){target.ptr, (size_t)(q - target.ptr)};
            r->query = (vega_http_str){q + 1, target.len - (size_t)(q - target.ptr) - 1};
        } else {
            r->path = r->target;
        }
    } else if (r->method == VEGA_HTTP_METHOD_CONNECT) {
        r->authority = r->target; /* authority-form (RFC 9112 §3.2.3) */
        r->path = (vega_http_str){target.ptr, 0};
    } else if (target.len == 1 && target.ptr[0] == '*') {
        r->path = r->target; /* asterisk-form (§3.2.4) */
    } else {
        vega_http_url u;
        if (vega_http_url_parse_target(&u, target.ptr, target.len) < 0)
            return 1;
        r->authority = u.authority;
        r->path = u.path;
        r->query = u.query;
    }
    return 0;
}

static int on_header(void *ud, vega_http1_span name, vega_http1_span value)
{
    struct vega_http_exchange *x = ud;
    vega_http_fields *f = &x->fields;
    if (f->count >= f->cap)
        return 1;
    f->items[f->count++] = (vega_http_field){{name.ptr, name.len}, {value.ptr, value.len}};
    f->size += name.len + value.len;
    switch (name.len) {
    case 4:
        if (vega__http1_ieq(name.ptr, 4, "host") && !x->req.authority.ptr)
            x->req.authority = (vega_http_str){value.ptr, value.len};
        break;
    case 6:
        if (vega__http1_ieq(name.ptr, 6, "expect") &&
            vega__http1_ieq(value.ptr, value.len, "100-continue"))
            x->req.expect_continue = true;
        break;
    case 17:
        if (vega__http1_ieq(name.ptr, 17, "transfer-encoding")) {
            /* which codings: 501 for one we do not know, 400 for a misplaced chunked */
            const char *s = value.ptr, *e = value.ptr + value.len;
            while (s < e) {
                while (s < e && (*s == ' ' || *s == '\t' || *s == ','))
                    s++;
                const char *b = s;
                while (s < e && *s != ',' && *s != ';' && *s != ' ' && *s != '\t')
                    s++;
                if (s > b && !vega__http1_ieq(b, (size_t)(s - b), "chunked"))
                    x->te_unknown = true;
                while (s < e && *s != ',')
                    s++;
            }
        }
        break;
    default:
        break;
    }
    return 0;
}

static int on_headers_complete(void *ud, const vega_http1_head *h)
{
    struct vega_http_exchange *x = ud;
    x->body.framing = h->framing;
    if (h->framing == VEGA_HTTP1_BODY_LENGTH) {
        x->req.content_length = h->content_length;
        x->req.has_body = h->content_length > 0;
    } else if (h->framing == VEGA_HTTP1_BODY_CHUNKED) {
        x->req.content_length = VEGA_HTTP_LENGTH_UNKNOWN;
        x->req.has_body = true;
    }
    x->body.remaining = x->req.content_length;
    x->body.done = !x->req.has_body;
    x->keep_alive = h->keep_alive && !h->upgrade;
    if (x->req.version < 11)
        x->req.expect_continue = false;
    x->head_stop = true;
    return 1; /* stop here: the body is read on demand */
}

static const vega_http1_callbacks head_cb = {
    .on_request_line = on_request_line,
    .on_header = on_header,
    .on_headers_complete = on_headers_complete,
};

/* Finds the end of a head: the first "\n\r\n" or "\n\n" (the latter a bare LF the parser then
 * rejects). Scans [*scan, len); returns the end offset, or 0 with *scan where to resume. */
static size_t find_head_end(const uint8_t *p, size_t len, size_t *scan)
{
    size_t i = *scan;
    while (i < len) {
        const uint8_t *lf = memchr(p + i, '\n', len - i);
        if (!lf)
            break;
        size_t k = (size_t)(lf - p);
        if (k + 1 >= len) {
            *scan = k;
            return 0;
        }
        if (p[k + 1] == '\n')
            return k + 2;
        if (p[k + 1] == '\r') {
            if (k + 2 >= len) {
                *scan = k;
                return 0;
            }
            if (p[k + 2] == '\n')
                return k + 3;
        }
        i = k + 1;
    }
    *scan = len;
    return 0;
}

bool vega__srv_head_complete(const uint8_t *p, size_t len)
{
    size_t scan = 0;
    return len && find_head_end(p, len, &scan) != 0;
}

/* The status that answers a parse failure (RFC 9112 §3, §6; RFC 9110 §15). */
static int error_status(const struct vega_http_exchange *x, vega_http1_error e)
{
    switch (e) {
    case VEGA_HTTP1_E_START_LINE_TOO_LONG:
        return 414;
    case VEGA_HTTP1_E_FIELD_LINE_TOO_LONG:
    case VEGA_HTTP1_E_SECTION_TOO_LARGE:
    case VEGA_HTTP1_E_TOO_MANY_FIELDS:
        return 431;
    case VEGA_HTTP1_E_TRANSFER_ENCODING:
        return x->te_unknown ? 501 : 400;
    case VEGA_HTTP1_E_VERSION:
        return 505;
    default:
        return 400;
    }
}

static void exchange_reset(struct srv_conn *c, struct srv_active *a)
{
    struct vega_http_exchange *x = &a->x;
    memset(x, 0, sizeof *x);
    x->c = c;
    vega_http_fields_init(&x->fields, a->field_store, c->srv->o.limits.max_fields, 0);
    x->req.fields = &x->fields;
    x->req.tls = c->tls;
    x->req.peer = &a->peer;
    x->req.local = &a->local;
    x->req.conn_id = c->id;
    x->req.conn_seq = c->nreq;
    x->length = VEGA_HTTP_LENGTH_UNKNOWN;
}

/* Parses the head in in[in_start, end) (or, with end 0, whatever is there, to name the limit
 * it breaks). Returns HEAD_READY, or HEAD_CLOSE after answering an error. */
static int parse_head(struct srv_conn *c, struct srv_active *a, size_t end)
{
    vega_http_server *srv = c->srv;
    exchange_reset(c, a);
    vega_http1_parser_init(&a->parser, VEGA_HTTP1_REQUEST, &srv->o.limits, &head_cb, &a->x);
    size_t to = end ? end : a->in_end, consumed = 0;
    int rc = vega_http1_parser_read(&a->parser, a->in + a->in_start, to - a->in_start, &consumed);
    if (rc == VEGA_ERR_CALLBACK && a->x.head_stop && end && a->in_start + consumed == end) {
        a->in_pos = end;
        a->head_end = end;
        a->x.req.start = vega_now();
        return HEAD_READY;
    }
    int status = 400;
    if (rc == VEGA_ERR_PROTO)
        status = error_status(&a->x, vega_http1_parser_get_error(&a->parser));
    else if (rc == 0 && !end)
        status = 431; /* within every line limit, yet larger than a head may be */
    vega__srv_write_error(c, status);
    return HEAD_CLOSE;
}

/* A request head's clock. Before its first byte the connection may idle (idle_timeout; the
 * first request: header_timeout). From its first byte, blank lines before the request line
 * included, the whole head must arrive within header_timeout. Both deadlines live in the
 * connection, so neither a park nor a trickle of blank lines restarts them. */
static void head_byte_seen(struct srv_conn *c)
{
    if (!c->head_started) {
        c->head_started = true;
        c->idle_dl = vega_deadline_in_ns(c->srv->o.header_timeout_ns);
    }
}

static void head_done(struct srv_conn *c)
{
    c->head_started = false;
    c->idle_dl = 0;
    c->blank_lines = 0;
}

/* Skips the empty lines before a request line: RFC 9112 §2.2 says a server SHOULD ignore at
 * least one (some clients send CRLF after a body); past SRV_MAX_BLANK_BYTES (eight CRLFs) the
 * rest is left to the parser, which refuses it. */
static void skip_blank_lines(struct srv_conn *c, struct srv_active *a)
{
    while (a->in_start < a->in_end && c->blank_lines < SRV_MAX_BLANK_BYTES &&
           (a->in[a->in_start] == '\r' || a->in[a->in_start] == '\n')) {
        a->in_start++;
        a->in_pos = a->in_start;
        c->blank_lines++;
    }
    if (a->scan < a->in_start)
        a->scan = a->in_start;
}

/* Makes room to read more of a head: moves it to the front, or grows the buffer up to the
 * limit. Returns HEAD_WAIT (room made), HEAD_CLOSE (too large: answered), or -ENOMEM. */
static int head_room(struct srv_conn *c, struct srv_active *a)
{
    if (a->in_end < a->in_cap)
        return HEAD_WAIT;
    if (a->in_start > 0) {
        /* skip_blank_lines and next_head keep the scan at or past the head's start */
        VEGA_ASSERT(a->in_start <= a->scan && a->scan <= a->in_end);
        size_t have = a->in_end - a->in_start;
        memmove(a->in, a->in + a->in_start, have);
        a->scan -= a->in_start;
        a->in_start = 0;
        a->in_pos = 0;
        a->in_end = have;
        return HEAD_WAIT;
    }
    size_t cap = VEGA__MIN(a->in_cap * 2, c->srv->max_head + SRV_IN_RESERVE);
    if (cap <= a->in_cap)
        return parse_head(c, a, 0);
    return in_resize(c->srv->o.mem, a, cap) < 0 ? -ENOMEM : HEAD_WAIT;
}

/* Idle, with no byte of the next head: answers held back go out, then what the socket has is
 * taken without waiting, or the connection parks (no task, no buffer) until bytes come.
 * Returns HEAD_MORE (bytes read: look again), HEAD_WAIT (wait for them in place: TLS holds
 * some, or a caller's stream), HEAD_PARKED, HEAD_CLOSE, or a negative code. */
static int wait_idle(struct srv_conn *c, struct srv_active *a, bool *woke)
{
    vega_http_server *srv = c->srv;
    if (a->out_len) {
        int r = vega__srv_flush(c, VEGA_DEADLINE_NEVER);
        if (r < 0)
            return r;
    }
    /* Stopping: a keep-alive connection closes between requests; a fresh one still gets its
     * first request read and answered (the client sent it before it could know). */
    if (atomic_load_explicit(&srv->stopping, memory_order_relaxed) && c->nreq > 0)
        return HEAD_CLOSE;
    if (!c->idle_dl)
        c->idle_dl =
            vega_deadline_in_ns(c->nreq ? srv->o.idle_timeout_ns : srv->o.header_timeout_ns);
    if (!c->sock)
        return HEAD_WAIT;
    if (c->tls || *woke || !c->drained) {
        /* what is there, without waiting; for TLS, a read that finds nothing also lets the
         * stream drop its buffers */
        *woke = false;
        vega_ssize n = vega__srv_read(c, a->in + a->in_end, vega__room(a->in_end, a->in_cap), 0);
        if (n > 0) {
            a->in_end += (size_t)n;
            VEGA_ASSERT(a->in_end <= a->in_cap);
            head_byte_seen(c);
            return HEAD_MORE;
        }
        if (n == 0)
            return HEAD_CLOSE;
        if (n != -ETIMEDOUT)
            return (int)n;
        if (vega_now() >= c->idle_dl)
            return -ETIMEDOUT;
    }
    if (c->tls && vega_tls_has_buffered(c->stream))
        return HEAD_WAIT;
    active_free(srv, a);
    c->a = NULL;
    return vega__srv_park(c, c->idle_dl) ? HEAD_PARKED : HEAD_CLOSE;
}

/* Reads until a complete head is buffered, parking when idle. Returns HEAD_READY (x filled),
 * HEAD_PARKED (c is no longer ours), HEAD_CLOSE (quietly or after an error response), or a
 * negative code that ends the connection. */
static int next_head(struct srv_conn *c, bool woke)
{
    vega_http_server *srv = c->srv;
    struct srv_active *a = c->a;
    if (a->in_pos == a->in_end) {
        a->in_start = a->in_pos = a->in_end = a->scan = 0;
    } else {
        a->in_start = a->in_pos;
        if (a->scan < a->in_start)
            a->scan = a->in_start;
        head_byte_seen(c); /* a pipelined request already began */
    }
    for (;;) {
        skip_blank_lines(c, a);
        /* HTTP/2 (ALPN h2, or the preface in cleartext), before the first head is parsed */
        enum h2s_detect h2 = H2S_NOT_H2;
        if (c->nreq == 0 && a->in_end > a->in_start) {
            h2 = vega__h2s_detect(c, a->in + a->in_start, a->in_end - a->in_start);
            if (h2 == H2S_IS_H2)
                return HEAD_H2;
        }
        if (a->in_end > a->in_start && h2 != H2S_NEED_MORE) {
            size_t end = find_head_end(a->in, a->in_end, &a->scan);
            if (end) {
                /* keep room after the head for reading its body through the buffer */
                if (!vega__fits(end, SRV_IN_RESERVE, a->in_cap) &&
                    in_resize(srv->o.mem, a, end + SRV_IN_RESERVE) < 0)
                    return -ENOMEM;
                head_done(c);
                return parse_head(c, a, end);
            }
            size_t have = a->in_end - a->in_start;
            /* a start line longer than allowed, or a head larger than allowed: say which */
            if ((have > srv->o.limits.max_start_line &&
                 !memchr(a->in + a->in_start, '\n', srv->o.limits.max_start_line)) ||
                have >= srv->max_head)
                return parse_head(c, a, 0);
        }
        int r = head_room(c, a);
        if (r != HEAD_WAIT)
            return r;
        if (a->in_end == a->in_start) {
            r = wait_idle(c, a, &woke);
            if (r == HEAD_MORE)
                continue;
            if (r != HEAD_WAIT)
                return r;
        } else if (a->out_len) {
            /* answers held back for this request go out before we wait for the rest of it */
            if ((r = vega__srv_flush(c, VEGA_DEADLINE_NEVER)) < 0)
                return r;
        }
        vega_ssize n =
            vega__srv_read(c, a->in + a->in_end, vega__room(a->in_end, a->in_cap), c->idle_dl);
        if (n == 0)
            return HEAD_CLOSE;
        if (n < 0)
            return (int)n;
        a->in_end += (size_t)n;
        VEGA_ASSERT(a->in_end <= a->in_cap);
        head_byte_seen(c);
    }
}

/* ---- one exchange -------------------------------------------------------------------------- */

static void drain_body(struct vega_http_exchange *x)
{
    vega_http_server *srv = x->c->srv;
    uint8_t tmp[2048];
    uint64_t total = 0;
    vega_deadline dl = vega_deadline_in_ns(srv->o.body_timeout_ns);
    while (!x->body.done && !x->body.failed) {
        if (total > SRV_DRAIN_MAX) {
            x->want_close = true;
            return;
        }
        vega_ssize n = vega__srv_body_read(x, tmp, sizeof tmp, dl);
        if (n < 0) {
            x->error = x->error ? x->error : (int)n;
            return;
        }
        total += (uint64_t)n;
    }
}

static const char body_500[] = "500 Internal Server Error\n";

/* Runs the handler for the parsed request. Returns 0 to go on, or a negative code (or 1) to
 * close the connection. */
static int exchange(struct srv_conn *c)
{
    vega_http_server *srv = c->srv;
    struct srv_active *a = c->a;
    struct vega_http_exchange *x = &a->x;
    if (srv->o.max_requests_per_conn && c->nreq + 1 >= srv->o.max_requests_per_conn)
        x->want_close = true;
    if (x->req.method == VEGA_HTTP_METHOD_CONNECT)
        x->keep_alive = false; /* no tunnels: whatever follows is not HTTP/1.1 */
    atomic_fetch_add_explicit(&srv->requests, 1, memory_order_relaxed);
    int rc = srv->o.handler(x, srv->o.user);
    c->nreq++;
    vega_deadline wdl = vega_deadline_in_ns(srv->o.write_timeout_ns);
    if (!x->started && !x->broken) {
        if (rc >= 0)
            x->error = -EINVAL; /* the handler returned without answering */
        else
            x->error = rc;
        if (x->body.failed && (x->error == VEGA_ERR_PROTO || x->error == -ETIMEDOUT)) {
            /* a malformed or stalled body: the client's fault, and the connection cannot go
             * on (RFC 9110 §15.5.9 for 408) */
            int st = x->error == -ETIMEDOUT ? 408 : 400;
            vega__srv_write_error(c, st);
            x->started = true;
            x->status = st;
            x->want_close = true;
            if (st == 408)
                atomic_fetch_add_explicit(&srv->timeouts, 1, memory_order_relaxed);
        } else {
            static const vega_http_field ct[] = {
                {{"Content-Type", 12}, {"text/plain; charset=utf-8", 25}}};
            vega_http_respond(x, 500, ct, 1, body_500, sizeof body_500 - 1, wdl);
        }
    } else if (!x->finished && !x->broken) {
        if (rc < 0) {
            x->error = rc;
            x->want_close = true; /* the response is cut short */
            x->broken = true;
        } else if (vega_http_response_finish(x, NULL, 0, wdl) < 0) {
            x->broken = true;
        }
    } else if (rc < 0 && !x->error) {
        x->error = rc;
    }
    if (!x->body.done && !x->broken && !x->want_close && x->keep_alive)
        drain_body(x);
    vega__srv_exchange_done(srv, x);
    if (x->broken)
        return x->error ? x->error : -EPIPE;
    if (!x->keep_alive || x->want_close || x->close_delimited || !x->body.done)
        return 1;
    return 0;
}

/* Closes after an answer that the client may still be sending a request to: shut our side,
 * then read (and drop) for a while, so that our response is not lost to a reset. */
static void linger(struct srv_conn *c)
{
    if (!c->stream || vega_stream_shutdown(c->stream, SHUT_WR, vega_deadline_in_ms(200)) < 0)
        return;
    uint8_t tmp[2048];
    size_t total = 0;
    vega_deadline dl = vega_deadline_in_ns(SRV_LINGER_NS);
    while (total < SRV_LINGER_MAX) {
        vega_ssize n = vega__srv_read(c, tmp, sizeof tmp, dl);
        if (n <= 0)
            break;
        total += (size_t)n;
    }
}

int vega__srv_conn_run(struct srv_conn *c, bool woke)
{
    vega_http_server *srv = c->srv;
    if (!c->stream && (!c->sock || vega__srv_stream_get(srv, c->sock, &c->stream) < 0)) {
        c->stream = NULL;
        vega__srv_conn_free(c);
        return -ENOMEM;
    }
    if (!c->a) {
        if (!(c->a = active_new(srv))) {
            vega__srv_conn_free(c);
            return -ENOMEM;
        }
        vega__srv_addr_get(&c->peer, &c->a->peer);
        vega__srv_addr_get(&c->local, &c->a->local);
    }
    int err = 0;
    bool unread = false;
    for (;;) {
        int r = next_head(c, woke);
        woke = false;
        if (r == HEAD_PARKED)
            return 0;
        if (r == HEAD_H2)
            return vega__h2s_start(c, NULL, 0);
        if (r == HEAD_READY && srv->h2o.h2c) {
            /* "Upgrade: h2c" (RFC 7540 §3.2): answered 101, the request becomes stream 1 */
            uint8_t *frame = NULL;
            size_t flen = 0;
            int up = vega__h2s_upgrade(c, &frame, &flen);
            if (up > 0)
                return vega__h2s_start(c, frame, flen);
            if (up < 0) {
                err = up;
                break;
            }
        }
        if (r != HEAD_READY) {
            if (r < 0)
                err = r;
            else if (c->a && c->a->in_end > c->a->in_start)
                unread = true; /* an error response, or a partial head */
            break;
        }
        r = exchange(c);
        if (r != 0) {
            if (r < 0)
                err = r;
            struct srv_active *a = c->a;
            unread = !a->x.body.done || a->in_pos < a->in_end;
            if (a->out_len && vega__srv_flush(c, VEGA_DEADLINE_NEVER) < 0)
                unread = false;
            else if (a->x.broken)
                unread = false;
            break;
        }
        if (atomic_load_explicit(&srv->stopping, memory_order_relaxed) &&
            !vega__srv_head_complete(c->a->in + c->a->in_pos, c->a->in_end - c->a->in_pos))
            break;
    }
    if (c->a && c->a->out_len)
        vega__srv_flush(c, VEGA_DEADLINE_NEVER);
    if (err == -ETIMEDOUT)
        atomic_fetch_add_explicit(&srv->timeouts, 1, memory_order_relaxed);
    if (unread && err != -ETIMEDOUT && err != -ECANCELED)
        linger(c);
    vega__srv_conn_free(c);
    return err == -ECANCELED || err == -ETIMEDOUT ? err : (err < 0 ? err : 0);
}

int vega_http_server_serve(vega_http_server *srv, vega_stream *s, const vega_addr *peer,
                           const vega_addr *local)
{
    if (!srv || !s)
        return -EINVAL;
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    struct srv_conn *c = vega__mem_calloc(srv->o.mem, 1, sizeof *c);
    if (!c) {
        vega_stream_close(s, vega_deadline_in_ms(1000));
        return -ENOMEM;
    }
    c->srv = srv;
    if (vega__srv_register(srv, c) < 0) {
        vega__mem_free(srv->o.mem, c);
        vega_stream_close(s, vega_deadline_in_ms(1000));
        return VEGA_ERR_FULL;
    }
    c->stream = s;
    c->tls = vega_tls_is_tls(s);
    if ((peer && vega__srv_addr_set(srv->o.mem, &c->peer, peer) < 0) ||
        (local && vega__srv_addr_set(srv->o.mem, &c->local, local) < 0)) {
        vega__srv_conn_free(c);
        vega_stream_close(s, vega_deadline_in_ms(1000));
        return -ENOMEM;
    }
    pthread_mutex_lock(&vega__srv_shard(c)->lock);
    c->task = vega_task_current();
    pthread_mutex_unlock(&vega__srv_shard(c)->lock);
    return vega__srv_conn_run(c, false);
}

/* Every idle connection keeps one (the idle-memory benchmark in docs/BENCHMARKS.md): growing
 * it is a decision, not an accident. */
_Static_assert(sizeof(void *) != 8 || sizeof(struct srv_conn) <= 136,
               "struct srv_conn grew: every parked connection pays for it");
