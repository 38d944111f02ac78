/* SPDX-License-Identifier: MIT */
/* The client's HTTP/2 connections (RFC 9113): made over TCP (+ TLS with ALPN h2, §3.2, or h2c by
 * prior knowledge, §3.3), one per origin shared by its requests (§9.1.1), with a writer task
 * (the core's output and timers) and a reader task (the socket's bytes into the core); the
 * pool, waiting for a connection being made, idle ones closed with GOAWAY (§6.8). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client_int.h"

/* ---- life ------------------------------------------------------------------------------------ */

static void h2_free(struct hc_h2 *h)
{
    const vega_mem *m = h->c->o.mem;
    vega_h2_conn_free(h->core);
    vega_stream_close(h->s, 0); /* only when the tasks never started */
    vega__hc_conn_close(h->h1);
    vega__mem_free(m, h->out);
    vega_notify_fini(&h->wake);
    pthread_mutex_destroy(&h->mu);
    vega__mem_free(m, h);
}

void vega__hc_h2_release(struct hc_h2 *h)
{
    if (h)
        vega__hc_mux_release(&h->mux);
}

void vega__hc_h2_kill(struct hc_h2 *h, int err)
{
    if (!h->dead) {
        h->dead = true;
        h->err = err;
    }
    atomic_store(&h->mux.usable, false);
    for (struct vega_http_client_response *r = h->reqs; r; r = r->h2_next)
        vega__hc_h2_wake(r);
}

/* A connection error the core reported (mu held): its wire code for the requests. */
static void core_failed(struct hc_h2 *h, int rc)
{
    vega_h2_error e;
    if (vega_h2_conn_get_error(h->core, &e) && !h->werr.kind) {
        h->werr.kind = VEGA_HTTP_CLIENT_WIRE_H2;
        h->werr.local = !e.remote;
        h->werr.code = e.code;
        snprintf(h->werr.reason, sizeof h->werr.reason, "%s", e.reason ? e.reason : "");
    }
    h->core_err = true;
    vega__hc_h2_kill(h, rc == -ENOMEM ? -ENOMEM : VEGA_ERR_PROTO);
}

/* ---- the frame tracer (vega_http_client_opts.h2_frame) -----------------------------------------
 */

static uint32_t be24(const uint8_t *p)
{
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | (uint32_t)p[2];
}

/* Hands each frame whose header and first payload bytes are in p (n bytes of one direction, in
 * order) to the tracer; the rest of a payload is skipped as it passes. */
static void tap_scan(const vega_http_client *c, struct hc_h2_tap *t, vega_http_frame_dir dir,
                     const uint8_t *p, size_t n)
{
    while (n) {
        size_t k;
        if (t->preface) {
            k = n < t->preface ? n : t->preface;
            t->preface = (uint8_t)(t->preface - k);
        } else if (t->skip) {
            k = n < t->skip ? n : t->skip;
            t->skip -= (uint32_t)k;
        } else {
            /* the 9-byte header, then up to 8 payload bytes (RFC 9113 §4.1: 24-bit length) */
            uint32_t len = t->have >= 3 ? be24(t->buf) : 0;
            size_t want = t->have < 9 ? 9 : 9 + (len < 8 ? len : 8);
            k = want - t->have < n ? want - t->have : n;
            memcpy(t->buf + t->have, p, k);
            t->have = (uint8_t)(t->have + k);
            if (t->have >= 9) {
                len = be24(t->buf);
                size_t head = len < 8 ? len : 8;
                if (t->have == 9 + head) {
                    vega_http_h2_frame f = {
                        .dir = dir,
                        .type = t->buf[3],
                        .flags = t->buf[4],
                        .stream_id = ((uint32_t)t->buf[5] << 24 | (uint32_t)t->buf[6] << 16 |
                                      (uint32_t)t->buf[7] << 8 | t->buf[8]) &
                                     0x7fffffffu,
                        .length = len,
                        .payload = t->buf + 9,
                        .payload_len = head,
                    };
                    c->o.h2_frame(c->o.h2_frame_user, &f);
                    t->skip = len - (uint32_t)head;
                    t->have = 0;
                }
            }
        }
        p += k;
        n -= k;
    }
}

/* ---- the tasks ------------------------------------------------------------------------------- */

static void *reader_main(void *arg)
{
    struct hc_h2 *h = arg;
    for (;;) {
        vega_ssize n = vega_stream_read(h->s, h->in, sizeof h->in, VEGA_DEADLINE_NEVER);
        pthread_mutex_lock(&h->mu);
        int rc = 0;
        if (n > 0 && !h->dead) {
            if (h->c->o.h2_frame)
                tap_scan(h->c, &h->tap_in, VEGA_HTTP_FRAME_IN, h->in, (size_t)n);
            rc = vega_h2_conn_read(h->core, h->in, (size_t)n, vega_now());
            if (rc < 0)
                core_failed(h, rc);
        } else {
            /* the server closed (a GOAWAY may have said why), the socket failed, or the
             * writer stopped us */
            h->rd_done = true;
            vega__hc_h2_kill(h, n == 0 || n == VEGA_ERR_TLS_TRUNCATED ? -ECONNRESET : (int)n);
        }
        pthread_mutex_unlock(&h->mu);
        vega_notify_one(&h->wake);
        if (n <= 0 || rc < 0)
            break;
    }
    return NULL;
}

/* What the writer keeps between turns. */
struct wstate {
    vega_tstamp closing_since; /* 0 until the pool dropped the connection */
    unsigned nomem;            /* writes in a row that found no memory */
};

/* One turn of the writer, mu held: GOAWAY when the pool dropped us, the timers, the bytes.
 * Returns the bytes to write, 0 with *dl the next look, or -1 when the connection is over. */
static vega_ssize writer_turn(struct hc_h2 *h, struct wstate *ws, vega_deadline *dl)
{
    vega_tstamp now = vega_now();
    /* the transport failed: nothing more goes out (spans of dropped requests may be gone) */
    if (h->dead && !h->core_err)
        return -1;
    if (atomic_load(&h->closing) && !ws->closing_since) {
        ws->closing_since = now;
        /* GOAWAY 0: we open no more streams (§6.8); without memory for it, just close */
        if (!h->dead && vega_h2_conn_shutdown(h->core, now) < 0)
            return -1;
    }
    /* streams of dropped responses the server does not end: not waited for long */
    if (ws->closing_since && now - ws->closing_since > HC_H2_CLOSE_WAIT_NS)
        return -1;
    if (!h->dead && vega_h2_conn_get_expiry(h->core) <= now) {
        int rc = vega_h2_conn_handle_expiry(h->core, now);
        if (rc < 0)
            core_failed(h, rc);
    }
    vega_ssize n = vega_h2_conn_write(h->core, h->out, HC_H2_OUT, now);
    /* no memory for a frame: the core keeps it for a later try; a connection that finds none
     * for a while is given up */
    ws->nomem = n == -ENOMEM ? ws->nomem + 1 : 0;
    if (ws->nomem > HC_H2_NOMEM_TRIES) {
        vega__hc_h2_kill(h, -ENOMEM);
        return -1;
    }
    if (n < 0 && n != -ENOMEM) {
        core_failed(h, (int)n);
        n = vega_h2_conn_write(h->core, h->out, HC_H2_OUT, now); /* its GOAWAY */
        if (n < 0)
            n = 0;
    }
    if (n > 0)
        return n;
    bool wr = vega_h2_conn_want_write(h->core), rd = vega_h2_conn_want_read(h->core);
    if ((h->dead || h->rd_done) && (!wr || n == -ENOMEM))
        return -1;
    if (!rd && !wr)
        return -1;
    /* no memory for a frame just now: look again soon */
    *dl = wr ? vega_deadline_in_ms(1) : (vega_deadline)vega_h2_conn_get_expiry(h->core);
    if (ws->closing_since)
        *dl = hc_dl_min(*dl, ws->closing_since + HC_H2_CLOSE_WAIT_NS + 1);
    return 0;
}

static void *writer_main(void *arg)
{
    struct hc_h2 *h = arg;
    vega_http_client *c = h->c;
    struct wstate ws = {0};
    for (;;) {
        vega_deadline dl = VEGA_DEADLINE_NEVER;
        pthread_mutex_lock(&h->mu);
        vega_ssize n = writer_turn(h, &ws, &dl);
        pthread_mutex_unlock(&h->mu);
        if (n < 0)
            break;
        if (n > 0) {
            /* a server that stops reading ends the connection after a while (its requests'
             * deadlines are theirs; this one guards the client's free) */
            vega_ssize w = vega_stream_write(
                h->s, h->out, (size_t)n, NULL,
                ws.closing_since ? vega_deadline_in_ns(HC_H2_CLOSE_WAIT_NS) : VEGA_DEADLINE_NEVER);
            if (w < 0) {
                pthread_mutex_lock(&h->mu);
                vega__hc_h2_kill(h, (int)w);
                pthread_mutex_unlock(&h->mu);
                break;
            }
            if (c->o.h2_frame)
                tap_scan(c, &h->tap_out, VEGA_HTTP_FRAME_OUT, h->out, (size_t)n);
            continue;
        }
        if (vega_notify_wait(&h->wake, dl) == -ECANCELED)
            break;
    }
    /* the reader ends (a read it had done is fed first), then every request hears it */
    vega_task_cancel(h->reader);
    while (vega_task_join(h->reader, NULL, VEGA_DEADLINE_NEVER) < 0)
        (void)vega_yield();
    pthread_mutex_lock(&h->mu);
    vega__hc_h2_kill(h, -ECONNRESET);
    pthread_mutex_unlock(&h->mu);
    vega_stream_close(h->s, 0);
    h->s = NULL;
    vega__hc_h2_release(h);
    atomic_fetch_sub_explicit(&c->h2_live, 1, memory_order_release); /* last touch of c */
    return NULL;
}

/* The core of a connection (upgraded: our HPACK encoder keeps no table, see adopt). */
static int core_make(vega_http_client *c, struct hc_h2 *h, bool upgraded)
{
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.mem = c->o.mem;
    o.stream_window_max = HC_H2_STREAM_WINDOW_MAX;
    o.max_local_streams = HC_H2_MAX_STREAMS;
    /* as many fields as a response keeps, and a header section no larger than HTTP/1.1's
     * (SETTINGS_MAX_HEADER_LIST_SIZE, RFC 9113 §6.5.2: the server learns it) */
    o.max_fields = (uint32_t)(c->o.limits.max_fields ? c->o.limits.max_fields : 100) + 1;
    if (c->o.limits.max_field_section && c->o.limits.max_field_section < UINT32_MAX)
        o.max_header_list_size = (uint32_t)c->o.limits.max_field_section;
    if (upgraded)
        o.encoder_table_size = VEGA_HPACK_TABLE_OFF;
    int rc = vega_h2_conn_client_new(&h->core, &vega__hc_h2_callbacks, &o, h);
    if (rc < 0)
        return rc;
    h->tap_out.preface = 24; /* the core writes the preface first (RFC 9113 §3.4): no frame */
    if (!(h->out = vega__mem_malloc(c->o.mem, HC_H2_OUT)))
        return -ENOMEM;
    return 0;
}

/* The two tasks of a connection whose transport is h->s and core is made. */
static int tasks_start(vega_http_client *c, struct hc_h2 *h)
{
    int rc;
    if ((rc = vega_task_spawn(&h->reader, reader_main, h)) < 0)
        return rc;
    atomic_fetch_add_explicit(&h->mux.refs, 1, memory_order_relaxed); /* the writer's */
    atomic_fetch_add_explicit(&c->h2_live, 1, memory_order_relaxed);
    rc = vega_task_spawn(&h->writer, writer_main, h);
    if (rc < 0) {
        atomic_fetch_sub_explicit(&c->h2_live, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&h->mux.refs, 1, memory_order_relaxed);
        vega_task_cancel(h->reader);
        while (vega_task_join(h->reader, NULL, VEGA_DEADLINE_NEVER) < 0)
            (void)vega_yield();
        return rc;
    }
    vega_task_detach(h->writer);
    return 0;
}

/* ---- the pool -------------------------------------------------------------------------------- */

/* The pool dropped h: it says GOAWAY and its tasks end. */
static void mux_close(struct hc_mux *m)
{
    struct hc_h2 *h = vega__hc_h2_of(m);
    atomic_store(&h->closing, true);
    vega_notify_one(&h->wake);
}

static void mux_free(struct hc_mux *m)
{
    h2_free(vega__hc_h2_of(m));
}

const struct hc_mux_ops vega__hc_h2_ops = {
    .max_conns = HC_H2_MAX_CONNS,
    .close = mux_close,
    .free = mux_free,
    .fresh_after_wait = true, /* the one waited for spoke HTTP/1.1 */
};

int vega__hc_h2_pool_take(vega_http_client *c, const struct hc_key *k, vega_deadline dl,
                          struct hc_h2 **out)
{
    /* RFC 9113 §9.1.1: one connection per origin; wait for the one being made (it may turn out
     * HTTP/1.1: then each goes its own way) */
    struct hc_mux *m;
    int rc = vega__hc_mux_take(c, &c->h2s, k, dl, &m);
    *out = vega__hc_h2_of(m);
    return rc;
}

/* h takes conn's transport (conn is freed) and starts: core and tasks. */
static int take_conn(vega_http_client *c, struct hc_h2 *h, struct hc_conn *conn,
                     const vega_http_client_info *info)
{
    h->s = conn->s;
    h->peer = conn->peer;
    memcpy(h->alpn, conn->alpn, sizeof h->alpn - 1);
    h->tls_version = conn->tls_version;
    vega__mem_free(conn->mem, conn);
    h->t_dns = info->t_dns;
    h->t_connect = info->t_connect;
    h->t_tls = info->t_tls;
    int rc = core_make(c, h, false);
    if (rc == 0)
        rc = tasks_start(c, h);
    return rc;
}

/* A new connection to k's origin, CONNECTING, with two references (the caller's and the
 * pool's). */
static struct hc_h2 *h2_new(vega_http_client *c, const struct hc_key *k)
{
    struct hc_h2 *h = vega__mem_calloc(c->o.mem, 1, sizeof *h);
    if (!h)
        return NULL;
    h->c = c;
    vega__hc_mux_init(&h->mux, &vega__hc_h2_ops, k, 2);
    pthread_mutex_init(&h->mu, NULL);
    vega_notify_init(&h->wake);
    atomic_init(&h->closing, false);
    return h;
}

int vega__hc_h2_from_conn(vega_http_client *c, struct hc_conn *conn,
                          const vega_http_client_info *info, struct hc_h2 **out)
{
    *out = NULL;
    struct hc_h2 *h = h2_new(c, &conn->key);
    if (!h) {
        vega__hc_conn_close(conn);
        return -ENOMEM;
    }
    int rc = take_conn(c, h, conn, info);
    if (rc < 0) {
        h2_free(h);
        return rc;
    }
    atomic_store(&h->mux.usable, true);
    vega__hc_mux_push_ready(c, &c->h2s, &h->mux);
    *out = h;
    return 0;
}

int vega__hc_h2_connect(vega_http_client *c, const struct hc_req *rq, bool fresh,
                        vega_http_client_info *info, vega_deadline dl, struct hc_h2 **hout,
                        struct hc_conn **h1)
{
    *hout = NULL;
    *h1 = NULL;
    struct hc_h2 *h = h2_new(c, &rq->key);
    if (!h)
        return -ENOMEM;
    /* joined, or gave up waiting; when the one being made spoke HTTP/1.1, ours is made */
    struct hc_mux *other;
    int rc = vega__hc_mux_join(c, &c->h2s, &h->mux, fresh, dl, &other);
    if (rc != 0) {
        h2_free(h);
        *hout = vega__hc_h2_of(other);
        return rc > 0 ? 2 : rc; /* 2: joined */
    }
    struct hc_conn *conn = NULL;
    rc = vega__hc_connect(c, &rq->key, rq->host_for_tls, false, info, dl, &conn);
    if (rc == 0 && rq->key.tls && strcmp(conn->alpn, "h2") != 0) {
        /* ALPN chose HTTP/1.1 (or nothing): the caller goes on with it (RFC 9113 §3.2) */
        *h1 = conn;
        vega__hc_mux_connect_done(c, &c->h2s, &h->mux, false, 0);
        vega__hc_h2_release(h);
        return 0;
    }
    if (rc == 0)
        rc = take_conn(c, h, conn, info);
    if (rc == 0)
        atomic_store(&h->mux.usable, true);
    vega__hc_mux_connect_done(c, &c->h2s, &h->mux, rc == 0, rc);
    if (rc < 0) {
        vega__hc_h2_release(h);
        return rc;
    }
    *hout = h;
    return 1;
}

void vega__hc_h2_shutdown(vega_http_client *c)
{
    vega__hc_mux_shutdown(c, &c->h2s);
    /* the writers send their GOAWAY and end; each one's last touch of c is its count */
    bool in_task = vega_task_current() != NULL;
    for (unsigned i = 0; atomic_load_explicit(&c->h2_live, memory_order_acquire) > 0; i++) {
        if (in_task) {
            if (vega_sleep_ms(1) < 0)
                (void)vega_yield();
            continue;
        }
        /* outside a task (the contract asks for one): the runtime's workers may still run
         * them; past 10 s they never will, and freeing c under them would be worse */
        if (i >= 10000)
            VEGA_PANIC("vega_http_client_free: HTTP/2 connections still running (call it inside "
                       "a task of the runtime)");
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* ---- h2c Upgrade (RFC 7540 §3.2) --------------------------------------------------------------
 * The request went as HTTP/1.1 with "Upgrade: h2c" and the server answered 101: the connection
 * now speaks HTTP/2 and its stream 1 carries that request's response (half-closed on our side).
 * The core has no way to open stream 1 without sending its HEADERS, so the request is submitted
 * again and its header block is taken out of the first bytes the core writes; our HPACK encoder
 * keeps no dynamic table on such a connection, so the block the server never sees leaves no
 * state behind (RFC 7541 §2.3.2). */

/* Whether out[0..n) (the preface's magic, then whole frames) holds stream 1's header block to
 * its end (END_HEADERS). */
static bool has_stream1_head(const uint8_t *out, size_t n)
{
    for (size_t at = 24; at <= n && vega__fits(at, 9, n);) {
        size_t len = (size_t)out[at] << 16 | (size_t)out[at + 1] << 8 | out[at + 2];
        uint8_t type = out[at + 3], flags = out[at + 4];
        uint32_t sid = ((uint32_t)out[at + 5] << 24 | (uint32_t)out[at + 6] << 16 |
                        (uint32_t)out[at + 7] << 8 | out[at + 8]) &
                       0x7fffffffu;
        if (!vega__fits(at + 9, len, n))
            return false;
        if (sid == 1 && (type == 0x1 || type == 0x9) && (flags & 0x4))
            return true;
        at += 9 + len;
    }
    return false;
}

/* Drops the HEADERS (and CONTINUATION) frames of stream 1 from out[0..n) after the connection
 * preface's magic (has_stream1_head holds). Returns the bytes left, or -1. */
static vega_ssize drop_stream1_head(uint8_t *out, size_t n)
{
    size_t at = 24, to = 24; /* "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" */
    bool dropped = false;
    if (n < at)
        return -1;
    while (at < n) {
        if (!vega__fits(at, 9, n))
            return -1;
        size_t len = (size_t)out[at] << 16 | (size_t)out[at + 1] << 8 | out[at + 2];
        uint8_t type = out[at + 3];
        uint32_t sid = ((uint32_t)out[at + 5] << 24 | (uint32_t)out[at + 6] << 16 |
                        (uint32_t)out[at + 7] << 8 | out[at + 8]) &
                       0x7fffffffu;
        if (!vega__fits(at + 9, len, n))
            return -1;
        bool drop = sid == 1 && (type == 0x1 || type == 0x9);
        if (!drop) {
            memmove(out + to, out + at, 9 + len);
            to += 9 + len;
        }
        dropped |= drop;
        at += 9 + len;
    }
    return dropped ? (vega_ssize)to : -1;
}

int vega__hc_h2_adopt(vega_http_client *c, const struct hc_req *rq, struct hc_conn *conn,
                      const vega_hpack_field *f, size_t nf, vega_http_client_response *r,
                      const uint8_t *rest, size_t rest_len, struct hc_h2 **out)
{
    *out = NULL;
    struct hc_h2 *h = h2_new(c, &rq->key); /* the request's reference and the pool's */
    if (!h)
        return -ENOMEM;
    h->s = conn->s; /* the connection is ours now (freed below, its stream kept) */
    h->peer = conn->peer;
    vega__mem_free(conn->mem, conn);
    r->conn = NULL;
    r->h2 = h;
    int32_t id = 0;
    int rc = core_make(c, h, true);
    /* usable from here: a GOAWAY or an end (the rest below, then the reader) clears it */
    atomic_store(&h->mux.usable, rc == 0);
    if (rc == 0)
        rc = vega_h2_submit_request(h->core, f, nf, VEGA_H2_FLAG_END_STREAM, r, &id);
    if (rc == 0 && id != 1)
        rc = VEGA_ERR_INTERNAL;
    vega_ssize n = 0;
    if (rc == 0) {
        r->h2_id = 1;
        r->info.stream_id = 1;
        /* the preface, our SETTINGS and WINDOW_UPDATE, then the block (a write that found no
         * memory for the block leaves it for the next) */
        size_t total = 0;
        while (rc == 0 && !has_stream1_head(h->out, total)) {
            vega_ssize k =
                vega_h2_conn_write(h->core, h->out + total, HC_H2_OUT - total, vega_now());
            rc = k == -ENOMEM ? -ENOMEM : k <= 0 ? VEGA_ERR_INTERNAL : 0;
            total += k > 0 ? (size_t)k : 0;
        }
        if (rc == 0 && (n = drop_stream1_head(h->out, total)) < 0)
            rc = VEGA_ERR_INTERNAL;
    }
    if (rc == 0) {
        vega_ssize w = vega_stream_write(h->s, h->out, (size_t)n, NULL, r->dl);
        if (w < 0)
            rc = (int)w;
        else if (c->o.h2_frame) /* (the tasks start later: the taps are ours here) */
            tap_scan(c, &h->tap_out, VEGA_HTTP_FRAME_OUT, h->out, (size_t)n);
    }
    if (rc == 0 && rest_len) {
        /* what came after the 101 (the server's SETTINGS, maybe the answer) */
        pthread_mutex_lock(&h->mu);
        r->h2_listed = true;
        r->h2_next = h->reqs;
        h->reqs = r;
        if (c->o.h2_frame)
            tap_scan(c, &h->tap_in, VEGA_HTTP_FRAME_IN, rest, rest_len);
        rc = vega_h2_conn_read(h->core, rest, rest_len, vega_now());
        pthread_mutex_unlock(&h->mu);
        if (rc < 0) {
            pthread_mutex_lock(&h->mu);
            core_failed(h, rc);
            pthread_mutex_unlock(&h->mu);
            rc = 0; /* the request learns it as its error; the writer sends the GOAWAY */
        }
    } else if (rc == 0) {
        pthread_mutex_lock(&h->mu);
        r->h2_listed = true;
        r->h2_next = h->reqs;
        h->reqs = r;
        pthread_mutex_unlock(&h->mu);
    }
    if (rc == 0)
        rc = tasks_start(c, h);
    if (rc == 0)
        vega__hc_mux_push_ready(c, &c->h2s, &h->mux);
    if (rc < 0) {
        /* r keeps its reference: vega_http_client_response_free drops it; the pool's goes */
        if (h->core && r->h2_id)
            (void)vega_h2_stream_set_user_data(h->core, r->h2_id, NULL);
        pthread_mutex_lock(&h->mu);
        for (vega_http_client_response **pp = &h->reqs; *pp; pp = &(*pp)->h2_next)
            if (*pp == r) {
                *pp = r->h2_next;
                break;
            }
        r->h2_listed = false;
        pthread_mutex_unlock(&h->mu);
        vega__hc_h2_release(h);
        return rc;
    }
    *out = h;
    return 0;
}
