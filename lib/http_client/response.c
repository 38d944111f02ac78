/* SPDX-License-Identifier: MIT */
/* The HTTP client's response side: the RFC 9112 parser's events turned into a response head,
 * interim (1xx) responses skipped, the body streamed (and decoded) to the caller, trailers,
 * and the connection's return to the pool; HTTP/3 responses share the head storage, the
 * decoder and the body accounting, and read through h3_read.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

/* ---- storage for copied names and values ----------------------------------------------------- */

char *vega__hc_arena_copy(vega_http_client_response *r, const char *s, size_t n)
{
    struct hc_arena_block *b = r->arena;
    if (!b || !vega__fits(b->used, n + 1, b->cap)) {
        size_t cap = n + 1 > 4096 ? n + 1 : 4096;
        b = vega__mem_malloc(r->c->o.mem, sizeof *b + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = r->arena;
        r->arena = b;
    }
    char *p = b->data + b->used;
    memcpy(p, s, n);
    p[n] = '\0';
    b->used += n + 1;
    VEGA_ASSERT(b->used <= b->cap);
    return p;
}

static void arena_free(vega_http_client_response *r)
{
    while (r->arena) {
        struct hc_arena_block *n = r->arena->next;
        vega__mem_free(r->c->o.mem, r->arena);
        r->arena = n;
    }
}

/* The incoming head rebuilt line by line for the trace hook (the parser does not keep the raw
 * bytes; what it accepted is exactly these lines). Bounded by the head limits. */
int vega__hc_trace_add(vega_http_client_response *r, const char *a, size_t an, const char *b,
                       size_t bn, const char *sep)
{
    if (!r->trace)
        return 0;
    size_t sn = strlen(sep), need = an + bn + sn + 2;
    if (r->trace_len + need > r->trace_cap) {
        size_t cap = r->trace_cap ? r->trace_cap * 2 : 1024;
        while (cap < r->trace_len + need)
            cap *= 2;
        char *nb = vega__mem_realloc(r->c->o.mem, r->trace_buf, cap);
        if (!nb)
            return -ENOMEM;
        r->trace_buf = nb;
        r->trace_cap = cap;
    }
    char *p = r->trace_buf + r->trace_len;
    memcpy(p, a, an);
    memcpy(p + an, sep, sn);
    memcpy(p + an + sn, b, bn);
    memcpy(p + an + sn + bn, "\r\n", 2);
    r->trace_len += need;
    return 0;
}

void vega__hc_trace_flush(vega_http_client_response *r)
{
    if (!r->trace)
        return;
    if (vega__hc_trace_add(r, "", 0, "", 0, "") == 0)
        r->trace(r->trace_user, false, r->trace_buf, r->trace_len);
    r->trace_len = 0;
}

/* ---- parser events --------------------------------------------------------------------------- */

static int on_status(void *ud, int version, int status, vega_http1_span reason)
{
    vega_http_client_response *r = ud;
    if (status == 101 && r->upgrade_asked) {
        r->upgraded = true; /* h2c (RFC 7540 §3.2): HTTP/2 follows the head */
    } else if (status == 101) {
        /* Nothing asked for an upgrade, so the connection cannot continue as HTTP/1.1. */
        r->cb_err = VEGA_ERR_PROTO;
        return 1;
    }
    /* A WebSocket's 101 is the final head: its fields are checked (RFC 6455 §4.1). */
    r->in_interim = status < 200 && !(r->upgraded && r->ws_asked);
    if (r->in_interim) {
        if (++r->interim > HC_MAX_INTERIM) {
            r->cb_err = VEGA_ERR_PROTO;
            return 1;
        }
        if (status == 100)
            r->got_100 = true;
    } else {
        r->info.status = status;
        r->info.version = version;
        const char *rs = vega__hc_arena_copy(r, reason.ptr ? reason.ptr : "", reason.len);
        if (!rs) {
            r->cb_err = -ENOMEM;
            return 1;
        }
        r->info.reason = (vega_http_str){rs, reason.len};
    }
    char line[32];
    int n = snprintf(line, sizeof line, "HTTP/1.%d %03d", version == 10 ? 0 : 1, status);
    if (vega__hc_trace_add(r, line, (size_t)n, reason.ptr, reason.len, reason.len ? " " : "") < 0) {
        r->cb_err = -ENOMEM;
        return 1;
    }
    return 0;
}

static int add_field(vega_http_client_response *r, vega_http_fields *f, vega_http1_span name,
                     vega_http1_span value)
{
    if (vega__hc_trace_add(r, name.ptr, name.len, value.ptr, value.len, ": ") < 0)
        return -ENOMEM;
    if (r->in_interim)
        return 0;
    const char *n = vega__hc_arena_copy(r, name.ptr, name.len);
    const char *v = vega__hc_arena_copy(r, value.ptr ? value.ptr : "", value.len);
    if (!n || !v)
        return -ENOMEM;
    int rc = vega_http_fields_add(f, n, name.len, v, value.len);
    /* The parser already enforces the count and size limits; a refusal here is malformed. */
    return rc == 0 ? 0 : rc == -E2BIG || rc == -EMSGSIZE ? VEGA_ERR_PROTO : rc;
}

static int on_header(void *ud, vega_http1_span name, vega_http1_span value)
{
    vega_http_client_response *r = ud;
    int rc = add_field(r, &r->fields, name, value);
    if (rc < 0) {
        r->cb_err = rc;
        return 1;
    }
    return 0;
}

static int on_trailer(void *ud, vega_http1_span name, vega_http1_span value)
{
    vega_http_client_response *r = ud;
    int rc = add_field(r, &r->trailers, name, value);
    if (rc < 0) {
        r->cb_err = rc;
        return 1;
    }
    return 0;
}

static int on_headers_complete(void *ud, const vega_http1_head *h)
{
    vega_http_client_response *r = ud;
    vega__hc_trace_flush(r);
    if (r->upgraded)
        return 1; /* stop here: the rest is HTTP/2 */
    if (r->in_interim)
        return 0;
    r->head_done = true;
    r->framing = h->framing;
    r->keep_alive = h->keep_alive;
    r->info.content_length =
        h->framing == VEGA_HTTP1_BODY_LENGTH ? h->content_length : VEGA_HTTP_LENGTH_UNKNOWN;
    return 0;
}

static int on_body(void *ud, vega_http1_span d)
{
    vega_http_client_response *r = ud;
    if (r->direct) {
        /* A direct read: the bytes are already where the caller wants them. */
        if ((const uint8_t *)d.ptr != r->direct + r->direct_len) {
            r->cb_err = VEGA_ERR_INTERNAL;
            return 1;
        }
        r->direct_len += d.len;
        return 0;
    }
    /* A parse is only started with an empty queue, and never yields more body than input. */
    if (d.len > sizeof r->bq - r->blen) {
        r->cb_err = VEGA_ERR_INTERNAL;
        return 1;
    }
    memcpy(r->bq + r->blen, d.ptr, d.len);
    r->blen += d.len;
    return 0;
}

static int on_message_complete(void *ud)
{
    vega_http_client_response *r = ud;
    if (r->in_interim) {
        r->in_interim = false;
        return 0;
    }
    r->msg_done = true;
    r->info.t_done = vega_now();
    /* Stop the parser here: whatever follows is not ours (nothing was pipelined). */
    return 1;
}

/* ---- reading --------------------------------------------------------------------------------- */

/* Feeds the unparsed bytes to the parser. The body queue must be empty. */
static int parse_some(vega_http_client_response *r)
{
    size_t consumed = 0, n = r->rend - r->rpos;
    r->bpos = r->blen = 0;
    int rc = vega_http1_parser_read(&r->parser, r->rbuf + r->rpos, n, &consumed);
    r->rpos += consumed;
    if (r->upgraded)
        return 0; /* rbuf[rpos..rend) is the first HTTP/2 input */
    if (r->msg_done) {
        /* Stopped by on_message_complete: bytes after the response spoil the connection. */
        if (r->rpos != r->rend)
            r->unusable = true;
        r->rpos = r->rend = 0;
        return 0;
    }
    if (rc == VEGA_ERR_CALLBACK)
        return r->cb_err ? r->cb_err : VEGA_ERR_INTERNAL;
    if (rc < 0)
        return rc;
    r->rpos = r->rend = 0;
    return 0;
}

/* Reads more bytes from the connection into rbuf (which must be empty). Returns > 0, 0 at the
 * end of the connection (then the parser is finished), or a code. */
static int fill(vega_http_client_response *r, vega_deadline dl)
{
    vega_ssize n = vega_stream_read(r->conn->s, r->rbuf, sizeof r->rbuf, hc_dl_min(dl, r->dl));
    if (n > 0) {
        if (!r->info.t_first_byte)
            r->info.t_first_byte = vega_now();
        r->rend = (size_t)n;
        r->rpos = 0;
        return 1;
    }
    bool tls_cut = n == VEGA_ERR_TLS_TRUNCATED;
    if (n < 0 && !tls_cut)
        return (int)n;
    /* A TLS stream cut without close_notify is an end like any other where the framing can
     * tell a complete message from a truncated one; a body delimited by the close cannot. */
    if (tls_cut && r->head_done && r->framing == VEGA_HTTP1_BODY_CLOSE)
        return (int)n;
    r->eof = true;
    r->unusable = true;
    int rc = vega_http1_parser_finish(&r->parser);
    if (rc == VEGA_ERR_CALLBACK && r->msg_done)
        return 0;
    return rc < 0 ? rc : 0;
}

int vega__hc_read_head(vega_http_client_response *r, bool stop_at_100, vega_deadline dl)
{
    while (!r->head_done && !r->upgraded) {
        if (stop_at_100 && r->got_100)
            return 0;
        if (r->rpos == r->rend) {
            if (r->eof)
                return r->any_byte ? VEGA_ERR_PROTO : VEGA_ERR_HTTP_EMPTY_REPLY;
            int rc = fill(r, dl);
            if (rc < 0)
                return rc;
            if (rc == 0)
                continue;
            r->any_byte = true;
        }
        int rc = parse_some(r);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The next undecoded body bytes into the queue: 1 when there are some, 0 at the end of the
 * message, or a code. */
static int next_body(vega_http_client_response *r, vega_deadline dl)
{
    if (r->h3)
        return vega__hc_h3_next_body(r, dl);
    if (r->h2)
        return vega__hc_h2_next_body(r, dl);
    while (r->bpos == r->blen) {
        if (r->msg_done)
            return 0;
        if (r->rpos == r->rend) {
            if (r->eof)
                return VEGA_ERR_PROTO;
            int rc = fill(r, dl);
            if (rc < 0)
                return rc;
            if (rc == 0 && !r->msg_done)
                return VEGA_ERR_PROTO;
            if (rc == 0)
                continue;
        }
        int rc = parse_some(r);
        if (rc < 0)
            return rc;
    }
    return 1;
}

vega_ssize vega__hc_deliver(vega_http_client_response *r, vega_ssize n)
{
    if ((uint64_t)n > r->max_body - r->delivered)
        return VEGA_ERR_HTTP_BODY_TOO_LARGE;
    r->delivered += (uint64_t)n;
    return n;
}

vega_ssize vega__hc_take_queued(vega_http_client_response *r, uint8_t *buf, size_t len)
{
    size_t left = vega__room(r->bpos, r->blen);
    size_t n = left < len ? left : len;
    memcpy(buf, r->bq + r->bpos, n);
    r->bpos += n;
    return vega__hc_deliver(r, (vega_ssize)n);
}

static vega_ssize read_decoded(vega_http_client_response *r, uint8_t *buf, size_t len,
                               vega_deadline dl)
{
    for (;;) {
        int rc = next_body(r, dl);
        if (rc < 0)
            return rc;
        size_t consumed = 0;
        vega_compress_flush fl = rc == 0 ? VEGA_COMPRESS_FLUSH_FINISH : VEGA_COMPRESS_FLUSH_NONE;
        vega_ssize n = vega_decompressor_write(r->dec, r->bq + r->bpos, r->blen - r->bpos,
                                               &consumed, buf, len, fl);
        if (n == -EFBIG)
            return VEGA_ERR_HTTP_BODY_TOO_LARGE;
        if (n < 0)
            return n;
        r->bpos += consumed;
        r->info.body_wire_bytes += consumed;
        if (n > 0)
            return vega__hc_deliver(r, n);
        if (rc == 0)
            return 0; /* finished, and nothing more came out */
    }
}

/* An identity Content-Length body with nothing buffered: reads straight into the caller's
 * buffer (no further than the body's end, so a next response's bytes never land there) and
 * lets the parser count the bytes in place: no copy through rbuf and bq, and one recv (or TLS
 * read) per caller buffer instead of per 16 KiB. */
static vega_ssize read_direct(vega_http_client_response *r, uint8_t *buf, size_t len,
                              vega_deadline dl)
{
    uint64_t left = r->info.content_length - r->delivered;
    if (len > left)
        len = (size_t)left;
    vega_ssize n = vega_stream_read(r->conn->s, buf, len, hc_dl_min(dl, r->dl));
    if (n <= 0) {
        if (n < 0 && n != VEGA_ERR_TLS_TRUNCATED)
            return n;
        /* the end came before the body's: as fill() and next_body() see it */
        r->eof = true;
        r->unusable = true;
        int rc = vega_http1_parser_finish(&r->parser);
        return rc < 0 && rc != VEGA_ERR_CALLBACK ? rc : VEGA_ERR_PROTO;
    }
    if (!r->info.t_first_byte)
        r->info.t_first_byte = vega_now();
    r->direct = buf;
    r->direct_len = 0;
    size_t consumed = 0;
    int rc = vega_http1_parser_read(&r->parser, buf, (size_t)n, &consumed);
    r->direct = NULL;
    if (!r->msg_done) {
        if (rc == VEGA_ERR_CALLBACK)
            return r->cb_err ? r->cb_err : VEGA_ERR_INTERNAL;
        if (rc < 0)
            return rc;
    }
    if (r->direct_len != (size_t)n || consumed != (size_t)n)
        return VEGA_ERR_INTERNAL;
    return vega__hc_deliver(r, n);
}

vega_ssize vega_http_client_response_read(vega_http_client_response *r, void *buf, size_t len,
                                          vega_deadline dl)
{
    if (!r || !buf || len == 0)
        return -EINVAL;
    if (r->err)
        return r->err;
    /* The request's deadline bounds the whole exchange, reads that find bytes waiting
     * included: a body that never stops coming cannot keep the caller past it. */
    if (r->dl != VEGA_DEADLINE_NEVER && vega_now() >= r->dl)
        return -ETIMEDOUT;
    vega_ssize n;
    if (r->h3 && !r->dec) {
        n = vega__hc_h3_read(r, buf, len, dl);
    } else if (r->h2 && !r->dec) {
        n = vega__hc_h2_read(r, buf, len, dl);
    } else if (!r->dec && r->bpos == r->blen && r->rpos == r->rend && r->head_done &&
               !r->msg_done && !r->eof && r->framing == VEGA_HTTP1_BODY_LENGTH && len >= HC_RBUF) {
        n = read_direct(r, buf, len, dl);
    } else if (r->dec) {
        n = read_decoded(r, buf, len, dl);
    } else {
        int rc = next_body(r, dl);
        if (rc <= 0) {
            n = rc;
        } else {
            n = vega__hc_take_queued(r, buf, len);
        }
    }
    if (n > 0 && !r->dec)
        r->info.body_wire_bytes += (uint64_t)n; /* read_decoded counts what it consumes */
    if (n == 0)
        r->info.trailers = &r->trailers; /* the body was read to the end */
    /* A timeout or a cancellation consumed nothing: the caller may read again. */
    if (n < 0 && n != -ETIMEDOUT && n != -ECANCELED) {
        r->err = (int)n;
        r->unusable = true;
    }
    return n;
}

vega_ssize vega_http_client_response_read_all(vega_http_client_response *r, void **out, size_t max,
                                              vega_deadline dl)
{
    if (out)
        *out = NULL;
    if (!r || !out)
        return -EINVAL;
    const vega_mem *m = r->c->o.mem;
    /* Room for max + 1 bytes (one more than allowed tells a body that is too large) and the
     * NUL: cap never exceeds max + 2, computed without overflow. */
    size_t limit = max <= SIZE_MAX - 2 ? max + 2 : SIZE_MAX;
    uint64_t cl = r->info.content_length;
    size_t cap = cl != VEGA_HTTP_LENGTH_UNKNOWN && cl < limit - 1 ? (size_t)cl + 2 : 16384;
    if (cap > limit)
        cap = limit;
    char *buf = vega__mem_malloc(m, cap);
    if (!buf)
        return -ENOMEM;
    size_t used = 0;
    for (;;) {
        if (used + 1 == cap) { /* full: grow, up to limit */
            if (cap == limit) {
                vega__mem_free(m, buf);
                return VEGA_ERR_HTTP_BODY_TOO_LARGE;
            }
            size_t ncap = cap <= limit / 2 ? cap * 2 : limit;
            char *nb = vega__mem_realloc(m, buf, ncap);
            if (!nb) {
                vega__mem_free(m, buf);
                return -ENOMEM;
            }
            buf = nb;
            cap = ncap;
        }
        vega_ssize n = vega_http_client_response_read(r, buf + used, vega__room(used + 1, cap), dl);
        if (n < 0) {
            vega__mem_free(m, buf);
            return n;
        }
        if (n == 0)
            break;
        used += (size_t)n;
        if (used > max) {
            vega__mem_free(m, buf);
            return VEGA_ERR_HTTP_BODY_TOO_LARGE;
        }
    }
    buf[used] = '\0';
    *out = buf;
    return (vega_ssize)used;
}

void vega_http_client_body_free(vega_http_client *c, void *body)
{
    if (c && body)
        vega__mem_free(c->o.mem, body);
}

/* ---- the response object --------------------------------------------------------------------- */

int vega__hc_response_new(vega_http_client *c, vega_http_client_response **out,
                          const vega_http_client_request *req)
{
    *out = NULL;
    const vega_mem *m = c->o.mem;
    vega_http_client_response *r = vega__mem_calloc(m, 1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->c = c;
    size_t maxf = c->o.limits.max_fields ? c->o.limits.max_fields : 100;
    r->field_items = vega__mem_calloc(m, maxf, sizeof *r->field_items);
    r->trailer_items = vega__mem_calloc(m, maxf, sizeof *r->trailer_items);
    if (!r->field_items || !r->trailer_items) {
        vega__mem_free(m, r->field_items);
        vega__mem_free(m, r->trailer_items);
        vega__mem_free(m, r);
        return -ENOMEM;
    }
    vega_http_fields_init(&r->fields, r->field_items, maxf, 0);
    vega_http_fields_init(&r->trailers, r->trailer_items, maxf, 0);
    r->info.fields = &r->fields;
    vega_http_fields_init(&r->no_trailers, NULL, 0, 0);
    r->info.trailers = &r->no_trailers;
    r->info.content_length = VEGA_HTTP_LENGTH_UNKNOWN;
    r->max_body = c->o.max_body;
    r->trace = req->trace;
    r->trace_user = req->trace_user;
    vega_notify_init(&r->h3_wake);
    vega_notify_init(&r->h2_wwake);
    r->cb = (vega_http1_callbacks){
        .on_status = on_status,
        .on_header = on_header,
        .on_headers_complete = on_headers_complete,
        .on_body = on_body,
        .on_trailer = on_trailer,
        .on_message_complete = on_message_complete,
    };
    int rc = vega_http1_parser_init(&r->parser, VEGA_HTTP1_RESPONSE, &c->o.limits, &r->cb, r);
    if (rc < 0) {
        vega__mem_free(m, r->field_items);
        vega__mem_free(m, r->trailer_items);
        vega__mem_free(m, r);
        return rc;
    }
    *out = r;
    return 0;
}

void vega__hc_trace_request(vega_http_client_response *r, const void *head, size_t len)
{
    if (r->trace)
        r->trace(r->trace_user, true, head, len);
}

void vega_http_client_response_free(vega_http_client_response *r)
{
    if (!r)
        return;
    if (r->h3)
        vega__hc_h3_response_done(r);
    if (r->h2)
        vega__hc_h2_response_done(r);
    if (r->conn) {
        bool reuse = r->msg_done && r->keep_alive && !r->unusable && !r->eof && !r->err &&
                     !r->conn_close_asked && !r->body_unsent;
        if (reuse) {
            r->conn->uses++;
            vega__hc_pool_put(r->c, r->conn);
        } else {
            vega__hc_conn_close(r->conn);
        }
    }
    vega_decompressor_free(r->dec);
    arena_free(r);
    const vega_mem *m = r->c->o.mem;
    vega__mem_free(m, r->trace_buf);
    vega__mem_free(m, r->field_items);
    vega__mem_free(m, r->trailer_items);
    vega_notify_fini(&r->h3_wake);
    vega_notify_fini(&r->h2_wwake);
    vega__mem_free(m, r);
}

const vega_http_client_info *vega_http_client_response_info(const vega_http_client_response *r)
{
    return &r->info;
}

void vega_http_client_response_get_error(const vega_http_client_response *r,
                                         vega_http_client_wire_error *out)
{
    if (!out)
        return;
    if (!r) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = r->werr;
}

int vega__hc_set_decoder(vega_http_client_response *r)
{
    if (r->is_head || (!r->h3 && !r->h2 && r->framing == VEGA_HTTP1_BODY_NONE))
        return 0;
    char v[64];
    vega_ssize n = vega_http_fields_get_combined(&r->fields, "content-encoding", 16, v, sizeof v);
    if (n < 0)
        return 0; /* none, or a list too long to be one coding we know: bytes pass through */
    vega_compress_kind k;
    /* One coding we know is decoded; an unknown one or a list passes through undecoded, as
     * curl does, with the coding reported as identity. */
    if (memchr(v, ',', (size_t)n) || vega_compress_kind_parse(v, (size_t)n, &k) < 0 ||
        k == VEGA_COMPRESS_IDENTITY)
        return 0;
    uint64_t limit = r->max_body ? r->max_body : 1;
    int rc = vega_decompressor_new(&r->dec, k, limit, NULL);
    if (rc < 0)
        return rc;
    r->info.coding = k == VEGA_COMPRESS_GZIP      ? VEGA_HTTP_CODING_GZIP
                     : k == VEGA_COMPRESS_DEFLATE ? VEGA_HTTP_CODING_DEFLATE
                     : k == VEGA_COMPRESS_BROTLI  ? VEGA_HTTP_CODING_BR
                                                  : VEGA_HTTP_CODING_ZSTD;
    return 0;
}

/* ---- redirects ------------------------------------------------------------------------------- */

vega_ssize vega_http_client_redirect(const vega_http_client_response *r, const char *url, char *out,
                                     size_t cap, bool *to_get)
{
    if (!r || !url || !out)
        return -EINVAL;
    int st = r->info.status;
    if (st != 301 && st != 302 && st != 303 && st != 307 && st != 308)
        return -ENOENT;
    const vega_http_field *loc = vega_http_fields_get(&r->fields, "location", 8);
    if (!loc)
        return -ENOENT;
    vega_ssize n =
        vega_http_url_resolve(url, strlen(url), loc->value.ptr, loc->value.len, out, cap);
    if (n == VEGA_ERR_PROTO)
        return VEGA_ERR_HTTP_URL;
    if (n < 0)
        return n;
    /* RFC 9110 §15.4.4: 303 means GET (HEAD stays HEAD); §15.4.2/§15.4.3: user agents change
     * POST to GET on 301 and 302, as browsers and curl do. 307 and 308 keep everything. */
    bool get = (st == 303 && strcmp(r->method, "HEAD") != 0) ||
               ((st == 301 || st == 302) && strcmp(r->method, "POST") == 0);
    if (to_get)
        *to_get = get;
    return n;
}
