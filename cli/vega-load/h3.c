/* SPDX-License-Identifier: MIT */
/* The HTTP/3 session (RFC 9114): QUIC connections on one endpoint (<vega/quic_ep.h>), each
 * keeping -m requests in flight on bidirectional streams (§4.1) with the sans-I/O HTTP/3 core
 * (<vega/h3.h>) driven from the endpoint's callbacks: a response's end records its latency and
 * starts the next request, so no task runs per stream. A connection's task only connects (the
 * control and QPACK streams, §6.2.1), keeps the -R schedule and --timeout, and reconnects. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vega/quic_ep.h>

#include "load.h"

/* Refusals (or closed handshakes) in a row, with no response in between, that are retried on a
 * new connection before the next one is an error. A stopping server refuses the handshakes it
 * completes after its quiet window (vega-serve: lib/http_server/h3_conn.c vega__h3s_stop); a
 * server reloaded back to back has up to three generations alive at once (serving, starting,
 * draining), so a client may meet one refusal from each. (The repeated refusals vega-serve
 * --shards' reload test once saw were a supervisor bug, fixed: docs/ARCHITECTURE.md "Reload".) */
#define LOAD_H3_MAX_REFUSED 3

#define UNI_CHUNK 4096 /* our control and QPACK streams' bytes are written in these */

/* ---- a connection ---------------------------------------------------------------------------- */

/* A request in flight: one of the -m slots. */
struct h3req {
    uint64_t sid;
    vega_tstamp t_sent, t_intended;
    size_t body_off; /* bytes of --body written so far */
    int status;
    bool busy, measured, ticket;
    bool sending; /* the body is not all written yet */
};

/* Work an HTTP/3 callback leaves for later: it may not call QUIC while the core reads a span
 * QUIC lent, nor feed the core (RFC 9114 §4.1.2 stream errors, QPACK unblocking). */
enum op_kind {
    OP_UNBLOCKED, /* feed the stream again */
    OP_CANCEL,    /* forget a request stream: STOP_SENDING and RESET_STREAM with code */
    OP_STOP,      /* a peer's unidirectional stream we do not read: STOP_SENDING with code */
};

struct h3op {
    enum op_kind kind;
    uint64_t sid, code;
};

struct h3conn {
    enum load_h3_user kind; /* LOAD_H3_USER_CONN; first, as in struct load_h3 */
    struct load_run *r;
    const struct load_opts *o;
    const struct load_h3_req *q;
    /* -i, --random-query: q's request with this one's path, kept in path */
    vega_h3_request rq;
    char *path;
    struct load_pathgen pg;
    struct load_h3 *g;
    vega_quic_ep_conn *qe; /* the connection now; NULL between attempts */
    vega_h3_conn *h3;
    /* set while a callback or the task holds the connection's lock */
    vega_quic_conn *qc;
    struct load_worker *w;
    vega_tstamp now;
    struct h3req *req; /* -m slots */
    unsigned busy;
    uint8_t *head; /* a HEADERS frame being written */
    struct h3op *ops;
    unsigned op_head, op_len, op_cap;
    /* this attempt */
    vega_tstamp t_connect;
    bool first_byte;     /* the first byte of the first response is still to come */
    bool closed;         /* the connection closed (the CLOSED event) */
    bool closing;        /* we closed it */
    bool failed;         /* an error that ends the attempt was counted */
    bool goaway;         /* the server sent GOAWAY: no new request here */
    uint64_t completed;  /* responses on it */
    vega_tstamp stalled; /* since when no request could start for want of stream credit, or 0 */
    /* the whole run */
    struct load_retry rt; /* for the retry rules (conn.c) */
    unsigned refused;     /* the server refused or closed connections with no response since, in a
                             row (each retried, up to LOAD_H3_MAX_REFUSED) */
    /* -R, --stages: this connection's schedule (load_pace); its requests pend_seq .. due_seq - 1
     * are due and wait for a stream, the first at pend_first; the next is due at next_due */
    uint64_t pend_seq, due_seq;
    unsigned index;
    vega_tstamp next_due, pend_first;
    uint64_t npending;
    int tfd; /* -R: the timer the task waits on (callbacks fire it to wake the task) */
    int64_t mono_offset;
    vega_notify wake; /* without -R */
};

static uint64_t us_between(vega_tstamp t0, vega_tstamp t1)
{
    return t1 > t0 ? (t1 - t0 + VEGA_NS_PER_US / 2) / VEGA_NS_PER_US : 0;
}

static void wake(struct h3conn *c)
{
    if (c->tfd >= 0 && load_timer_fire(c->tfd) == 0)
        return;
    vega_notify_one(&c->wake);
}

static struct h3req *find_req(struct h3conn *c, uint64_t sid)
{
    for (unsigned i = 0; i < c->o->streams; i++)
        if (c->req[i].busy && c->req[i].sid == sid)
            return &c->req[i];
    return NULL;
}

/* Frees a slot; a request that did not complete gives its -n ticket back. */
static void req_drop(struct h3conn *c, struct h3req *q)
{
    if (q->ticket)
        load_ticket_return(c->r);
    q->busy = false;
    q->ticket = false;
    c->busy--;
}

static void push_op(struct h3conn *c, enum op_kind kind, uint64_t sid, uint64_t code)
{
    /* Between two drains: one op per request stream at most, and one for the stream being fed. */
    if (c->op_len == c->op_cap)
        return;
    c->ops[(c->op_head + c->op_len) % c->op_cap] = (struct h3op){kind, sid, code};
    c->op_len++;
}

/* Closes the connection ourselves (the task notices and reconnects). */
static void close_now(struct h3conn *c, uint64_t code, const char *reason)
{
    c->closing = true;
    (void)vega_quic_conn_close(c->qc, VEGA_QUIC_CLOSE_APPLICATION, code, reason);
    wake(c);
}

/* ---- HTTP/3 callbacks: under the lock, inside vega_h3_conn_read_stream ----------------------- */

static int cb_headers(void *ud, uint64_t sid, const vega_h3_head *h)
{
    struct h3conn *c = ud;
    struct h3req *q = find_req(c, sid);
    if (q && h->kind == VEGA_H3_HEAD_INITIAL)
        q->status = h->status;
    return 0;
}

static int cb_end(void *ud, uint64_t sid)
{
    struct h3conn *c = ud;
    struct h3req *q = find_req(c, sid);
    if (!q)
        return 0;
    struct load_run *r = c->r;
    c->completed++;
    c->refused = 0;
    if (q->measured && c->now <= r->end) {
        struct load_worker *w = c->w;
        load_latency(w, us_between(c->o->rate ? q->t_intended : q->t_sent, c->now));
        if (c->o->rate)
            cli_hist_record(&w->hist_unc, us_between(q->t_sent, c->now));
        load_bump(&w->round_trips, 1);
        load_bump(&w->status[q->status > 0 && q->status < LOAD_STATUS_MAX ? q->status : 0], 1);
        q->ticket = false; /* used */
    }
    /* RFC 9114 §4.1: a server may answer before it read the whole request (asking us to stop
     * with H3_NO_ERROR): the rest of the body is not sent. */
    if (q->sending)
        push_op(c, OP_CANCEL, sid, VEGA_H3_NO_ERROR);
    req_drop(c, q);
    return 0;
}

static int cb_stream_error(void *ud, uint64_t sid, uint64_t code)
{
    struct h3conn *c = ud;
    struct h3req *q = find_req(c, sid);
    push_op(c, OP_CANCEL, sid, code);
    if (!q)
        return 0;
    char msg[128];
    snprintf(msg, sizeof(msg), "malformed response (%s); the stream was reset",
             vega_h3_error_name(code));
    load_error_msg(c->r, LOAD_ERR_PARSE, VEGA_ERR_PROTO, msg);
    req_drop(c, q);
    return 0;
}

static int cb_unblocked(void *ud, uint64_t sid)
{
    push_op(ud, OP_UNBLOCKED, sid, 0);
    return 0;
}

static int cb_stop_sending(void *ud, uint64_t sid, uint64_t code)
{
    push_op(ud, OP_STOP, sid, code);
    return 0;
}

/* A request the server provably did not process goes back: its -n ticket returns and a later
 * request takes its place (on a new connection when this one is done), counted as retried, not
 * as an error. */
static void req_retry(struct h3conn *c, struct h3req *q)
{
    load_bump(&c->w->h3_retried, 1);
    req_drop(c, q);
}

/* §5.2: requests at or above id were not processed: they go back (no error), nothing new starts
 * here, and the task reconnects once the others are done. */
static int cb_goaway(void *ud, uint64_t id)
{
    struct h3conn *c = ud;
    c->goaway = true;
    load_bump(&c->w->h3_goaway, 1);
    for (unsigned i = 0; i < c->o->streams; i++) {
        struct h3req *q = &c->req[i];
        if (q->busy && q->sid >= id) {
            push_op(c, OP_CANCEL, q->sid, VEGA_H3_REQUEST_CANCELLED);
            req_retry(c, q);
        }
    }
    return 0;
}

static const vega_h3_callbacks h3_callbacks = {
    .on_headers = cb_headers,
    .on_end_stream = cb_end,
    .on_stream_error = cb_stream_error,
    .on_stream_unblocked = cb_unblocked,
    .on_goaway = cb_goaway,
    .on_stop_sending = cb_stop_sending,
};

/* ---- streams: under the lock, outside the core's callbacks ----------------------------------- */

/* A connection error of the HTTP/3 core (§8: close with its code) or a failure of ours. */
static void h3_failed(struct h3conn *c, int rc)
{
    const char *reason = NULL;
    uint64_t code = vega_h3_conn_get_error(c->h3, &reason);
    char msg[192];
    if (rc == VEGA_ERR_PROTO) {
        snprintf(msg, sizeof(msg), "HTTP/3 connection error %s (%s); reconnecting",
                 vega_h3_error_name(code), reason ? reason : "");
        load_error_msg(c->r, LOAD_ERR_PARSE, rc, msg);
    } else {
        code = VEGA_H3_INTERNAL_ERROR;
        load_error(c->r, LOAD_ERR_READ, rc);
    }
    c->failed = true;
    close_now(c, code, reason);
}

/* Our control and QPACK streams' bytes (SETTINGS, encoder and decoder instructions). */
static void flush_uni(struct h3conn *c)
{
    uint8_t buf[UNI_CHUNK];
    uint64_t sid;
    vega_ssize n;
    while (!c->closing && (n = vega_h3_conn_write_uni(c->h3, &sid, buf, sizeof(buf))) > 0) {
        /* A stream's send buffer holds 1 MiB: these few bytes always fit unless it closed. */
        if (vega_quic_stream_write(c->qc, sid, buf, (size_t)n, false) != n) {
            h3_failed(c, VEGA_ERR_CLOSED);
            return;
        }
    }
}

/* Feeds what stream sid holds to the core, zero-copy: peek, read, consume. */
static void feed(struct h3conn *c, uint64_t sid)
{
    bool request = (sid & 3) == 0; /* ours, bidirectional */
    while (!c->closing) {
        const uint8_t *d;
        size_t len;
        bool fin;
        if (vega_quic_stream_peek(c->qc, sid, &d, &len, &fin) < 0 || (len == 0 && !fin))
            return;
        if (request && len && c->first_byte) {
            c->first_byte = false;
            cli_hist_record(&c->w->first_byte_hist, us_between(c->t_connect, c->now));
        }
        vega_ssize n = vega_h3_conn_read_stream(c->h3, sid, d, len, fin);
        if (n < 0) {
            h3_failed(c, (int)n);
            return;
        }
        if (vega_quic_stream_consume(c->qc, sid, (size_t)n) < 0)
            return;
        if (request && c->now >= c->r->measure_start)
            load_bump(&c->w->bytes, (uint64_t)n);
        if ((size_t)n < len || fin) /* blocked on QPACK (fed again when unblocked), or done */
            return;
    }
}

static void run_ops(struct h3conn *c)
{
    while (c->op_len && !c->closing) {
        struct h3op op = c->ops[c->op_head];
        c->op_head = (c->op_head + 1) % c->op_cap;
        c->op_len--;
        switch (op.kind) {
        case OP_UNBLOCKED:
            feed(c, op.sid);
            break;
        case OP_CANCEL:
            (void)vega_h3_conn_close_stream(c->h3, op.sid);
            (void)vega_quic_stream_stop(c->qc, op.sid, op.code);
            (void)vega_quic_stream_reset(c->qc, op.sid, op.code);
            break;
        case OP_STOP:
            (void)vega_quic_stream_stop(c->qc, op.sid, op.code);
            break;
        }
    }
}

/* Writes what the stream's send buffer takes of the body, ending the stream with its last
 * byte. */
static void write_body(struct h3conn *c, struct h3req *q)
{
    const struct load_opts *o = c->o;
    while (q->sending) {
        size_t left = o->body_len - q->body_off;
        vega_ssize w = vega_quic_stream_write(c->qc, q->sid, o->body + q->body_off, left, true);
        if (w < 0) { /* the server stopped the stream (its answer tells), or the end */
            q->sending = false;
            return;
        }
        q->body_off += (size_t)w;
        if ((size_t)w == left)
            q->sending = false;
        else if (w == 0)
            return; /* STREAM_WRITABLE comes */
    }
}

enum start {
    START_OK,
    START_NONE, /* nothing may start now (no -n ticket, the end, GOAWAY, stream credit) */
};

/* Starts a request on a new stream: HEADERS (and DATA with the body), §4.1. */
static enum start start_one(struct h3conn *c, struct h3req *q, vega_tstamp intended)
{
    struct load_run *r = c->r;
    const struct load_opts *o = c->o;
    bool measured = intended >= r->measure_start, ticket = false;
    if (measured && o->round_trips) {
        if (!load_ticket_take(r))
            return START_NONE;
        ticket = true;
    }
    uint64_t sid;
    int e = vega_quic_stream_open(c->qc, true, &sid);
    vega_ssize n = 0;
    if (e == 0) {
        const vega_h3_request *rq = &c->q->rq;
        if (c->path) {
            const char *p = o->paths[load_paths_pick(&c->pg, o)];
            size_t len = strlen(p);
            memcpy(c->path, p, len);
            if (o->random_query)
                load_random_digits(&c->pg, c->path + len - LOAD_RANDOM_DIGITS);
            c->rq = c->q->rq;
            c->rq.path = (vega_http_str){c->path, len};
            rq = &c->rq; /* head_cap was sized with the longest path */
        }
        n = vega_h3_conn_write_request_head(c->h3, sid, rq, c->q->fields, c->q->nfields, c->head,
                                            c->q->head_cap);
        if (n < 0)
            (void)vega_quic_stream_reset(c->qc, sid, VEGA_H3_REQUEST_CANCELLED);
    }
    if (e < 0 || n < 0) {
        if (ticket)
            load_ticket_return(r);
        if (e == VEGA_ERR_FULL) { /* STREAMS_AVAILABLE comes (--timeout bounds the wait) */
            if (c->busy == 0 && !c->stalled)
                c->stalled = c->now;
            return START_NONE;
        }
        if (n == VEGA_ERR_H3_GOAWAY) {
            c->goaway = true;
            return START_NONE;
        }
        load_error(r, LOAD_ERR_WRITE, e < 0 ? e : (int)n);
        c->failed = true;
        close_now(c, VEGA_H3_INTERNAL_ERROR, NULL);
        return START_NONE;
    }
    flush_uni(c); /* the encoder instructions the head refers to */
    bool body = o->body_len > 0;
    uint8_t dh[VEGA_H3_DATA_HEADER_MAX];
    vega_ssize k = body ? vega_h3_write_data_header(dh, sizeof(dh), o->body_len) : 0;
    if (vega_quic_stream_write(c->qc, sid, c->head, (size_t)n, !body) != n ||
        (k > 0 && vega_quic_stream_write(c->qc, sid, dh, (size_t)k, false) != k)) {
        if (ticket)
            load_ticket_return(r);
        if (!c->closing) {
            load_error(r, LOAD_ERR_WRITE, VEGA_ERR_CLOSED);
            c->failed = true;
            close_now(c, VEGA_H3_INTERNAL_ERROR, NULL);
        }
        return START_NONE;
    }
    *q = (struct h3req){.sid = sid,
                        .t_sent = c->now,
                        .t_intended = intended,
                        .busy = true,
                        .measured = measured,
                        .ticket = ticket,
                        .sending = body};
    c->busy++;
    c->stalled = 0;
    write_body(c, q);
    return START_OK;
}

/* Fills the free slots: at once in a closed loop, with the requests due under -R. */
static void start_requests(struct h3conn *c)
{
    const struct load_opts *o = c->o;
    for (unsigned i = 0; i < o->streams && !c->closing && !c->closed && !c->goaway; i++) {
        if (c->req[i].busy)
            continue;
        if (c->now >= c->r->end || (o->rate && c->npending == 0))
            return;
        if (start_one(c, &c->req[i], o->rate ? c->pend_first : c->now) != START_OK)
            return;
        if (o->rate) {
            c->pend_seq++;
            c->npending--;
            if (c->npending)
                c->pend_first = load_pace(c->r, c->pend_seq, c->index);
        }
    }
}

/* Whether this connection has more to do (false: it may stop once nothing is in flight). */
static bool more_to_do(const struct h3conn *c)
{
    const struct load_run *r = c->r;
    const struct load_opts *o = c->o;
    if (c->now >= r->end)
        return false;
    if (o->rate && c->npending == 0 && c->next_due >= r->end)
        return false;
    vega_tstamp next = o->rate ? (c->npending ? c->pend_first : c->next_due) : c->now;
    return !(o->round_trips && next >= r->measure_start &&
             atomic_load_explicit(&r->tickets, memory_order_relaxed) <= 0);
}

/* After each event: deferred work, new requests, our streams' bytes; wakes the task when the
 * connection is done for. */
static void pump(struct h3conn *c)
{
    run_ops(c);
    start_requests(c);
    flush_uni(c);
    if (c->closed || c->closing || (c->busy == 0 && (c->goaway || !more_to_do(c))))
        wake(c);
}

/* The server reset a request stream (RST_STREAM, §4.1.1). */
static void stream_reset(struct h3conn *c, uint64_t sid, uint64_t code)
{
    /* §6.2.1: closing a control or QPACK stream is a connection error. */
    int e = vega_h3_conn_close_stream(c->h3, sid);
    if (e < 0) {
        h3_failed(c, e);
        return;
    }
    struct h3req *q = find_req(c, sid);
    if (!q)
        return;
    if (q->sending)
        (void)vega_quic_stream_reset(c->qc, sid, VEGA_H3_REQUEST_CANCELLED);
    if (code == VEGA_H3_REQUEST_REJECTED) { /* §4.1.1: not processed (§8.1: a retry is safe) */
        req_retry(c, q);
        return;
    }
    char msg[128];
    snprintf(msg, sizeof(msg), "the server reset a request stream (%s)", vega_h3_error_name(code));
    load_error_msg(c->r, LOAD_ERR_READ, VEGA_ERR_QUIC_EP_RESET, msg);
    req_drop(c, q);
}

static void conn_closed(struct h3conn *c, const vega_quic_event *ev)
{
    c->closed = true;
    /* A close is an error when requests were lost with it, or when the connection never
     * answered one (as http.c: a server that closes every connection at once is not waited on
     * forever); the idle close of a server that served requests is not. */
    if (c->closing || (c->busy == 0 && c->completed > 0))
        return;
    bool refused = !ev->local && !ev->app && ev->error_code == VEGA_QUIC_CONNECTION_REFUSED;
    if (refused && c->refused < LOAD_H3_MAX_REFUSED) {
        /* RFC 9000 §10.2, §20.1: a server that stops may refuse a connection after its
         * handshake; it processed none of the requests sent on it: they go again on a new
         * connection (a few refusals in a row, LOAD_H3_MAX_REFUSED, then it is an error). */
        c->refused++;
        for (unsigned i = 0; i < c->o->streams; i++)
            if (c->req[i].busy)
                req_retry(c, &c->req[i]);
        return;
    }
    char why[160], msg[256];
    load_h3_describe_close(why, sizeof(why), ev->app, ev->error_code, ev->data, ev->len);
    enum load_kind kind = LOAD_ERR_READ;
    if (refused && c->completed == 0) {
        /* RFC 9000 §10.2: a server may refuse a connection after its handshake (a server
         * shutting down does): a connect error. */
        kind = LOAD_ERR_CONNECT;
        snprintf(msg, sizeof(msg), "the server refused the connection after the handshake (%s)",
                 why);
    } else if (c->busy == 0) {
        snprintf(msg, sizeof(msg), "the connection closed (%s%s) before any response",
                 ev->local ? "here: " : "by the server: ", why);
    } else {
        snprintf(msg, sizeof(msg), "the connection closed (%s%s) with %u request%s in flight",
                 ev->local ? "here: " : "by the server: ", why, c->busy, c->busy == 1 ? "" : "s");
    }
    load_error_msg(c->r, kind, VEGA_ERR_QUIC_EP_CLOSED, msg);
    c->failed = true;
}

void load_h3_on_event(void *user, vega_quic_ep_conn *qe, vega_quic_conn *qc,
                      const vega_quic_event *ev)
{
    (void)qe;
    if (!user)
        return; /* a connection between its handshake and its setup, or after its task left */
    if (*(const enum load_h3_user *)user == LOAD_H3_USER_RUN) {
        load_h3_run_event(user, ev);
        return;
    }
    struct h3conn *c = user;
    c->qc = qc;
    c->now = vega_now();
    c->w = load_worker_self(c->r);
    switch (ev->type) {
    case VEGA_QUIC_EV_STREAM_OPENED:
    case VEGA_QUIC_EV_STREAM_READABLE:
        feed(c, ev->stream_id);
        break;
    case VEGA_QUIC_EV_STREAM_WRITABLE: {
        struct h3req *q = find_req(c, ev->stream_id);
        if (q)
            write_body(c, q);
        break;
    }
    case VEGA_QUIC_EV_STREAM_STOP: { /* stop sending the body; the response may still come */
        struct h3req *q = find_req(c, ev->stream_id);
        if (q && q->sending) {
            q->sending = false;
            (void)vega_quic_stream_reset(qc, ev->stream_id, ev->error_code);
        }
        break;
    }
    case VEGA_QUIC_EV_STREAM_RESET:
        stream_reset(c, ev->stream_id, ev->error_code);
        break;
    case VEGA_QUIC_EV_CLOSED:
        conn_closed(c, ev);
        break;
    default: /* STREAMS_AVAILABLE: pump starts what waited for credit */
        break;
    }
    pump(c);
    c->qc = NULL;
}

/* ---- the connection's task ------------------------------------------------------------------- */

/* Connects to one of the target's addresses, as load_connect does over TCP: until one worked,
 * each in turn; then only the one that did. */
static int connect_any(struct h3conn *c, vega_quic_ep_conn **out, vega_deadline dl)
{
    struct load_run *r = c->r;
    const struct load_opts *o = c->o;
    /* The server's name is always checked (an IP literal against the certificate's addresses);
     * events before the setup go to the run's struct (see enum user_kind). */
    vega_quic_connect_opts co = {.server_name = o->sni ? o->sni : o->host, .user = c->g};
    unsigned first = atomic_load_explicit(&r->good_addr, memory_order_relaxed);
    unsigned tries = c->rt.ever ? 1 : r->naddrs;
    int e = 0;
    for (unsigned k = 0; k < tries; k++) {
        unsigned i = (first + k) % r->naddrs;
        e = vega_quic_endpoint_connect(c->g->ep, &r->addrs[i], &co, out, dl);
        if (e == 0) {
            if (i != first)
                atomic_store_explicit(&r->good_addr, i, memory_order_relaxed);
            break;
        }
        if (e == -ECANCELED || e == -ETIMEDOUT)
            break;
    }
    return e;
}

/* The HTTP/3 side of a fresh connection, under its lock: the core, our control and QPACK
 * streams with SETTINGS (§6.2.1, RFC 9204 §4.2), the streams the server opened before we
 * listened, and the first requests. */
static int setup(struct h3conn *c, vega_quic_ep_conn *qe)
{
    vega_h3_opts ho;
    vega_h3_opts_init(&ho);
    uint64_t seed = 0;
    if (vega_crypto_random(&seed, sizeof(seed)) == 0)
        ho.grease_seed = seed;
    int e = vega_h3_conn_client_new(&c->h3, &h3_callbacks, &ho, c);
    if (e < 0)
        return e;
    vega_quic_conn *qc = vega_quic_ep_conn_lock(qe);
    if (!qc)
        return VEGA_ERR_QUIC_EP_CLOSED;
    uint64_t uni[3];
    for (int i = 0; i < 3 && e == 0; i++)
        e = vega_quic_stream_open(qc, false, &uni[i]);
    if (e == 0)
        e = vega_h3_conn_bind_streams(c->h3, uni[0], uni[1], uni[2]);
    if (e == 0) {
        c->qe = qe;
        vega_quic_ep_conn_set_user(qe, c);
        c->qc = qc;
        c->now = vega_now();
        c->w = load_worker_self(c->r);
        flush_uni(c);
        /* Peer streams 3, 7, 11 ...: opening one opens the lower ones (RFC 9000 §3.2), so the
         * first unknown id ends them. */
        for (uint64_t id = 3; !c->closing; id += 4) {
            const uint8_t *d;
            size_t len;
            bool fin;
            if (vega_quic_stream_peek(qc, id, &d, &len, &fin) == -EINVAL)
                break;
            feed(c, id);
            run_ops(c);
        }
        pump(c);
        c->qc = NULL;
    }
    vega_quic_ep_conn_unlock(qe);
    return e;
}

static void attempt_reset(struct h3conn *c, vega_tstamp t0)
{
    c->t_connect = t0;
    c->first_byte = true;
    c->closed = c->closing = c->failed = c->goaway = false;
    c->busy = 0;
    c->completed = 0;
    c->stalled = 0;
    c->op_head = c->op_len = 0;
    for (unsigned i = 0; i < c->o->streams; i++)
        c->req[i].busy = false;
}

/* Ends the attempt: closes the connection unless it closed, takes our user pointer off it (no
 * callback finds c after that), and gives back the tickets of requests still in flight. */
static void attempt_close(struct h3conn *c)
{
    if (c->qe) {
        /* The connection's packet counts, for the report (the last values once it ended). */
        vega_quic_conn_info qi;
        vega_quic_ep_conn_get_info(c->qe, &qi);
        struct load_worker *w = load_worker_self(c->r);
        load_bump(&w->quic_sent, qi.pkts_sent);
        load_bump(&w->quic_recv, qi.pkts_recv);
        load_bump(&w->quic_lost, qi.pkts_lost);
    }
    vega_quic_conn *qc = c->qe ? vega_quic_ep_conn_lock(c->qe) : NULL;
    if (qc) {
        if (!c->closed && !c->closing)
            (void)vega_quic_conn_close(qc, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_NO_ERROR, NULL);
        vega_quic_ep_conn_set_user(c->qe, NULL);
        vega_quic_ep_conn_unlock(c->qe);
    }
    for (unsigned i = 0; i < c->o->streams; i++)
        if (c->req[i].busy)
            req_drop(c, &c->req[i]);
    vega_quic_ep_conn_release(c->qe);
    c->qe = NULL;
    vega_h3_conn_free(c->h3);
    c->h3 = NULL;
}

static enum load_step attempt_open(struct h3conn *c)
{
    struct load_run *r = c->r;
    bool at_end;
    vega_tstamp t0 = vega_now();
    vega_deadline dl = load_step_deadline(r, t0, &at_end);
    vega_quic_ep_conn *qe = NULL;
    int e = connect_any(c, &qe, dl);
    while ((e == VEGA_ERR_QUIC_EP_CLOSED || e == VEGA_ERR_QUIC_EP_REFUSED) &&
           c->refused < LOAD_H3_MAX_REFUSED) {
        /* A server that stops may close or refuse a handshake in progress (RFC 9000 §10.2):
         * nothing was sent on it. A few in a row are retries, not errors. */
        c->refused++;
        e = connect_any(c, &qe, dl);
    }
    if (e == -ECANCELED || (e == -ETIMEDOUT && at_end))
        return LOAD_STEP_STOP;
    char msg[256];
    if (e < 0) {
        load_error_msg(r, LOAD_ERR_CONNECT, e, load_h3_connect_msg(c->g, e, msg, sizeof(msg)));
        return LOAD_STEP_FAIL;
    }
    /* QUIC has no connect of its own: its handshake is the TLS handshake (RFC 9001 §4). */
    c->w = load_worker_self(r);
    cli_hist_record(&c->w->tls_hist, us_between(t0, vega_now()));
    attempt_reset(c, t0);
    e = setup(c, qe);
    if (e < 0) {
        if (e == VEGA_ERR_FULL)
            snprintf(msg, sizeof(msg),
                     "the server allows fewer than 3 unidirectional streams "
                     "(HTTP/3 needs a control and two QPACK streams)");
        load_error_msg(r, LOAD_ERR_CONNECT, e, e == VEGA_ERR_FULL ? msg : NULL);
        c->qe = qe;
        attempt_close(c);
        return LOAD_STEP_FAIL;
    }
    c->w = load_worker_self(r);
    load_bump(&c->w->connects, 1);
    if (c->rt.ever)
        load_bump(&c->w->reconnects, 1);
    c->rt.ever = true;
    return LOAD_STEP_OK;
}

/* -R: the requests that fell due join the pending ones. */
static void schedule(struct h3conn *c)
{
    while (c->next_due <= c->now && c->next_due < c->r->end) {
        if (c->npending == 0) {
            c->pend_first = c->next_due;
            c->pend_seq = c->due_seq;
        }
        c->npending++;
        c->next_due = load_pace(c->r, ++c->due_seq, c->index);
    }
}

/* --timeout: requests older than it count as timeouts; their connection is closed. */
static void expire(struct h3conn *c)
{
    unsigned n = 0;
    for (unsigned i = 0; i < c->o->streams; i++) {
        struct h3req *q = &c->req[i];
        if (q->busy && c->now - q->t_sent >= c->o->timeout_ns) {
            req_drop(c, q);
            n++;
        }
    }
    if (n == 0 && c->stalled && c->now - c->stalled >= c->o->timeout_ns) {
        /* A server that gives no stream credit at all (RFC 9000 §4.6) is not waited for. */
        load_error_msg(c->r, LOAD_ERR_TIMEOUT, -ETIMEDOUT,
                       "the server allowed no request stream within --timeout; reconnecting");
        c->failed = true;
        close_now(c, VEGA_H3_NO_ERROR, "no stream credit");
        return;
    }
    if (n == 0)
        return;
    for (unsigned i = 0; i < n; i++)
        load_error(c->r, LOAD_ERR_TIMEOUT, -ETIMEDOUT);
    c->failed = true;
    close_now(c, VEGA_H3_NO_ERROR, "request timed out");
}

/* When the task must look again: the end, the oldest request's timeout, -R's next request. */
static vega_deadline next_deadline(const struct h3conn *c)
{
    vega_deadline dl = c->r->end;
    for (unsigned i = 0; i < c->o->streams; i++) {
        const struct h3req *q = &c->req[i];
        if (q->busy && q->t_sent + c->o->timeout_ns < dl)
            dl = q->t_sent + c->o->timeout_ns;
    }
    if (c->o->rate && c->next_due < dl)
        dl = c->next_due;
    if (c->stalled && c->stalled + c->o->timeout_ns < dl)
        dl = c->stalled + c->o->timeout_ns;
    return dl;
}

/* Waits for dl or a callback's wake-up. Returns 0 or -ECANCELED. */
static int wait_wake(struct h3conn *c, vega_deadline dl)
{
    if (c->tfd >= 0) {
        uint64_t ticks;
        /* The timer was armed for dl; the deadline is a backstop only. */
        vega_deadline back =
            dl >= VEGA_DEADLINE_NEVER - VEGA_NS_PER_S ? VEGA_DEADLINE_NEVER : dl + VEGA_NS_PER_S;
        vega_ssize n = vega_fd_read(c->tfd, &ticks, sizeof(ticks), back);
        return n == -ECANCELED ? -ECANCELED : 0;
    }
    int e = vega_notify_wait(&c->wake, dl);
    return e == -ECANCELED ? -ECANCELED : 0;
}

/* Runs one connection until it must reconnect or the run is over. The callbacks do the
 * requests; the task looks in at each deadline and when a callback wakes it. */
static enum load_step serve(struct h3conn *c)
{
    struct load_run *r = c->r;
    for (;;) {
        vega_quic_conn *qc = vega_quic_ep_conn_lock(c->qe);
        if (!qc) /* it ended; its CLOSED event said how */
            return c->failed ? LOAD_STEP_FAIL : LOAD_STEP_CLOSE;
        c->qc = qc;
        c->now = vega_now();
        c->w = load_worker_self(r);
        enum load_step s = LOAD_STEP_OK;
        vega_deadline dl = r->end;
        if (c->now >= r->end) {
            s = LOAD_STEP_STOP;
        } else {
            if (c->o->rate)
                schedule(c);
            expire(c);
            if (!c->closing && !c->closed) {
                run_ops(c);
                start_requests(c);
                flush_uni(c);
            }
            if (c->closed || c->closing)
                s = c->failed ? LOAD_STEP_FAIL : LOAD_STEP_CLOSE;
            else if (c->busy == 0 && c->goaway)
                s = LOAD_STEP_CLOSE; /* §5.2: done with this connection; on to a new one */
            else if (c->busy == 0 && !more_to_do(c))
                s = LOAD_STEP_STOP;
            else
                dl = next_deadline(c);
        }
        /* Armed under the lock: a callback's wake-up after this point is never lost. */
        if (s == LOAD_STEP_OK && c->tfd >= 0 && load_timer_arm(c->tfd, c->mono_offset, dl) < 0) {
            close(c->tfd);
            c->tfd = -1;
        }
        c->qc = NULL;
        vega_quic_ep_conn_unlock(c->qe);
        if (s != LOAD_STEP_OK)
            return s;
        if (wait_wake(c, dl) < 0)
            return LOAD_STEP_STOP;
    }
}

/* ---- load_mux_loop's view of the connection ------------------------------------------------ */

static bool mux_is_open(const void *c)
{
    return ((const struct h3conn *)c)->qe != NULL;
}

static enum load_step mux_open(void *c)
{
    return attempt_open(c);
}

static enum load_step mux_serve(void *c)
{
    return serve(c);
}

/* Closed the same way after a failure as after the end: CONNECTION_CLOSE with H3_NO_ERROR unless
 * the connection closed already. */
static void mux_close(void *c, bool ended)
{
    (void)ended;
    attempt_close(c);
}

static uint64_t mux_responses(const void *c)
{
    return ((const struct h3conn *)c)->completed;
}

static const struct load_mux_ops mux_ops = {
    .is_open = mux_is_open,
    .open = mux_open,
    .serve = mux_serve,
    .close = mux_close,
    .responses = mux_responses,
};

static void conn_free(struct h3conn *c)
{
    if (c->tfd >= 0)
        close(c->tfd);
    vega_notify_fini(&c->wake);
    free(c->req);
    free(c->ops);
    free(c->head);
    free(c->path);
    free(c);
}

static struct h3conn *conn_new(struct load_run *r)
{
    const struct load_opts *o = r->o;
    struct h3conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->kind = LOAD_H3_USER_CONN;
    c->r = r;
    c->o = o;
    c->q = o->h3_req;
    c->g = r->h3;
    c->tfd = -1;
    vega_notify_init(&c->wake);
    c->op_cap = 2 * o->streams + 8;
    c->req = calloc(o->streams, sizeof(*c->req));
    c->ops = calloc(c->op_cap, sizeof(*c->ops));
    c->head = malloc(c->q->head_cap);
    if (o->paths_vary)
        c->path = malloc(LOAD_MAX_PATH);
    if (!c->req || !c->ops || !c->head || (o->paths_vary && !c->path)) {
        conn_free(c);
        return NULL;
    }
    return c;
}

void *load_h3_conn(void *arg)
{
    struct load_run *r = arg;
    const struct load_opts *o = r->o;
    unsigned index = atomic_fetch_add(&r->next_index, 1);
    struct h3conn *c = conn_new(r);
    if (!c) {
        load_conn_no_memory(r);
        return NULL;
    }
    load_paths_start(&c->pg, o, index);
    if (o->rate) {
        /* This connection's share of the schedule (load_pace). */
        c->index = index;
        c->next_due = load_pace(r, 0, index);
        c->tfd = load_timer_open(&c->mono_offset);
    }
    load_mux_loop(r, &c->rt, &mux_ops, c);
    if (c->qe)
        attempt_close(c);
    conn_free(c);
    return NULL;
}
