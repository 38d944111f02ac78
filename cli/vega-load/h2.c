/* SPDX-License-Identifier: MIT */
/* The HTTP/2 session (RFC 9113): each connection -- TLS with ALPN h2 (§3.2), or cleartext with
 * prior knowledge (h2c, §3.3) -- keeps -m requests in flight, each on a stream of its own, with
 * the sans-I/O HTTP/2 core (<vega/h2.h>) driven by one task: write what the core has, read what
 * the server sent, feed it, start the next requests as responses end (with -R a second task
 * reads, so that the first can send each request on time). Windows are opened wide
 * (§6.9: 2^30 - 1 for the connection and each stream, as h2load's -w 30 -W 30) and every body
 * byte is consumed at once, so the load generator never holds the server back; HPACK's dynamic
 * table (RFC 7541) makes the repeated request a few bytes. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load.h"

#define H2_WINDOW      ((1u << 30) - 1) /* h2load's default window bits, 30 */
#define CLOSE_FLUSH_MS 100              /* a GOAWAY of ours gets this long to leave */
/* Streams in flight before the server's SETTINGS say how many it allows: RFC 9113 §5.1.2
 * recommends servers allow at least 100, and nghttp2 (h2load) assumes that many meanwhile, so
 * -m above it does not get streams refused on every connect. */
#define STREAMS_BEFORE_SETTINGS 100u
#define FRAME_HEADERS           0x1
#define FRAME_CONT              0x9
#define FLAG_PADDED             0x8
#define FLAG_PRIORITY           0x20

/* A request in flight: one of the -m slots; its stream's user data. */
struct h2req {
    int32_t sid;
    vega_tstamp t_sent, t_intended;
    int status;
    bool busy, measured, ticket;
    bool ended; /* the response ended (END_STREAM seen) */
};

/* Frame boundaries in one direction of the byte stream, to count header block bytes on the
 * wire (h2load's "headers" traffic: HEADERS and CONTINUATION payloads without padding and
 * priority fields). */
struct scan {
    uint8_t hdr[9];
    unsigned hlen;
    uint32_t left;  /* payload bytes of the current frame still to come */
    uint32_t skip;  /* bytes before the first frame (the client preface's magic) */
    bool pad_next;  /* the next payload byte is a HEADERS frame's pad length */
    int64_t frame;  /* the current header frame's block bytes so far known */
    uint64_t total; /* block bytes of the frames done */
};

struct h2conn {
    struct load_run *r;
    const struct load_opts *o;
    const struct load_h2_req *q;
    /* -i, --random-query: q's fields with this request's :path, kept in path */
    vega_hpack_field *fields;
    char *path;
    struct load_pathgen pg;
    struct load_worker *w;
    vega_sock *sock;
    vega_stream *tls;
    vega_h2_conn *h2;
    uint8_t *in, *out;
    size_t cap;
    vega_tstamp now;
    struct h2req *req; /* -m slots ... */
    unsigned *free_slots;
    unsigned nfree, busy; /* ... with a stack of the free ones */
    /* this attempt */
    vega_tstamp t_connect;
    bool first_byte;       /* the first byte from the server is still to come */
    bool goaway;           /* the server sent GOAWAY: no new request here */
    bool limited;          /* the server's stream limit is reached */
    bool settings;         /* the server's SETTINGS came */
    bool failed;           /* a request could not be submitted: an error was counted */
    uint64_t completed;    /* responses on it */
    vega_tstamp stalled;   /* since when no request could start for want of streams, or 0 */
    vega_tstamp expire_at; /* no request in flight times out before this */
    struct scan scan_in, scan_out;
    /* the whole run */
    struct load_retry rt; /* for the retry rules (conn.c) */
    /* -R, --stages: this connection's schedule (load_pace); its requests pend_seq .. due_seq - 1
     * are due and wait for a stream, the first at pend_first; the next is due at next_due */
    uint64_t pend_seq, due_seq;
    unsigned index;
    vega_tstamp next_due, pend_first;
    uint64_t npending;
    /* -R: a reader task per attempt, the lock it and this task share, and the timer this task
     * waits on (the reader fires it) */
    vega_task *reader;
    vega_mutex mu;
    enum load_step rstep; /* how the reader ended, LOAD_STEP_OK while it reads */
    int tfd;
    int64_t mono_offset;
};

static uint64_t us_between(vega_tstamp t0, vega_tstamp t1)
{
    return t1 > t0 ? (t1 - t0 + VEGA_NS_PER_US / 2) / VEGA_NS_PER_US : 0;
}

/* ---- header bytes on the wire -----------------------------------------------------------------
 */

static void scan_frame_done(struct scan *s)
{
    if (s->frame > 0)
        s->total += (uint64_t)s->frame;
    s->frame = 0;
}

static void scan_bytes(struct scan *s, const uint8_t *p, size_t n)
{
    while (n > 0) {
        if (s->skip) {
            size_t k = n < s->skip ? n : s->skip;
            s->skip -= (uint32_t)k;
            p += k;
            n -= k;
            continue;
        }
        if (s->left == 0) { /* a frame header */
            size_t k = 9 - s->hlen < n ? 9 - s->hlen : n;
            memcpy(s->hdr + s->hlen, p, k);
            s->hlen += (unsigned)k;
            p += k;
            n -= k;
            if (s->hlen < 9)
                return;
            s->hlen = 0;
            s->left = (uint32_t)s->hdr[0] << 16 | (uint32_t)s->hdr[1] << 8 | s->hdr[2];
            uint8_t type = s->hdr[3], flags = s->hdr[4];
            s->pad_next = false;
            s->frame = 0;
            if (type == FRAME_HEADERS || type == FRAME_CONT) {
                s->frame = s->left;
                if (type == FRAME_HEADERS && (flags & FLAG_PRIORITY))
                    s->frame -= 5;
                if (type == FRAME_HEADERS && (flags & FLAG_PADDED) && s->left > 0) {
                    s->pad_next = true;
                    s->frame -= 1;
                }
            }
            if (s->left == 0)
                scan_frame_done(s);
            continue;
        }
        if (s->pad_next) {
            s->frame -= p[0];
            s->pad_next = false;
        }
        size_t k = n < s->left ? n : s->left;
        s->left -= (uint32_t)k;
        p += k;
        n -= k;
        if (s->left == 0)
            scan_frame_done(s);
    }
}

/* Moves what the scanners counted into the worker's counters. */
static void scan_flush(struct h2conn *c)
{
    struct load_worker *w = c->w;
    if (c->scan_in.total) {
        load_bump(&w->h2_head_in, c->scan_in.total);
        c->scan_in.total = 0;
    }
    if (c->scan_out.total) {
        load_bump(&w->h2_head_out, c->scan_out.total);
        c->scan_out.total = 0;
    }
}

/* ---- requests ------------------------------------------------------------------------------- */

static void slot_free(struct h2conn *c, struct h2req *q)
{
    if (q->ticket)
        load_ticket_return(c->r);
    q->ticket = false;
    q->busy = false;
    c->free_slots[c->nfree++] = (unsigned)(q - c->req);
    c->busy--;
}

/* Records a complete response. */
static void completed(struct h2conn *c, struct h2req *q)
{
    struct load_run *r = c->r;
    c->completed++;
    if (!q->measured || c->now > r->end)
        return;
    struct load_worker *w = c->w;
    load_latency(w, us_between(c->o->rate ? q->t_intended : q->t_sent, c->now));
    if (c->o->rate)
        cli_hist_record(&w->hist_unc, us_between(q->t_sent, c->now));
    load_bump(&w->round_trips, 1);
    load_bump(&w->status[q->status > 0 && q->status < LOAD_STATUS_MAX ? q->status : 0], 1);
    q->ticket = false; /* used */
}

/* ---- HTTP/2 callbacks: inside vega_h2_conn_read and _write ------------------------------- */

static int cb_headers(void *ud, int32_t sid, const vega_h2_head *h)
{
    struct h2conn *c = ud;
    struct h2req *q = vega_h2_stream_get_user_data(c->h2, sid);
    /* h2load's decoded size: every field's name and value, :status included. */
    uint64_t dec = h->kind == VEGA_H2_HEAD_TRAILERS ? 0 : 7 + 3;
    for (size_t i = 0; i < h->nfields; i++)
        dec += h->fields[i].name.len + h->fields[i].value.len;
    load_bump(&c->w->h2_head_in_decoded, dec);
    if (!q)
        return 0;
    if (h->kind == VEGA_H2_HEAD_RESPONSE)
        q->status = h->status;
    if (h->end_stream)
        q->ended = true;
    return 0;
}

static int cb_data(void *ud, int32_t sid, const uint8_t *data, size_t len, unsigned flags)
{
    struct h2conn *c = ud;
    (void)data;
    if (len) {
        load_bump(&c->w->h2_data_in, len);
        (void)vega_h2_stream_consume(c->h2, sid, len); /* bodies are counted, not kept */
    }
    if (flags & VEGA_H2_FLAG_END_STREAM) {
        struct h2req *q = vega_h2_stream_get_user_data(c->h2, sid);
        if (q)
            q->ended = true;
    }
    return 0;
}

static int cb_close(void *ud, int32_t sid, uint32_t code, vega_h2_close how)
{
    struct h2conn *c = ud;
    struct h2req *q = vega_h2_stream_get_user_data(c->h2, sid);
    if (!q)
        return 0;
    char msg[128];
    switch (how) {
    case VEGA_H2_CLOSE_DONE:
        completed(c, q);
        break;
    case VEGA_H2_CLOSE_RESET_BY_PEER:
        if (code == VEGA_H2_NO_ERROR && q->ended && q->status) {
            /* §8.1: a complete response, then RST_STREAM NO_ERROR to stop our body. */
            completed(c, q);
        } else if (code == VEGA_H2_REFUSED_STREAM) {
            load_bump(&c->w->h2_refused, 1); /* §8.7: not processed; its ticket goes back */
        } else {
            load_bump(&c->w->h2_reset, 1);
            snprintf(msg, sizeof(msg), "the server reset a stream (%s)",
                     vega_h2_error_code_name(code));
            load_error_msg(c->r, LOAD_ERR_READ, VEGA_ERR_PROTO, msg);
        }
        break;
    case VEGA_H2_CLOSE_RESET_LOCAL:
        snprintf(msg, sizeof(msg), "malformed response (%s); the stream was reset",
                 vega_h2_error_code_name(code));
        load_error_msg(c->r, LOAD_ERR_PARSE, VEGA_ERR_PROTO, msg);
        break;
    case VEGA_H2_CLOSE_REFUSED: /* above the GOAWAY's last stream: never processed */
        load_bump(&c->w->h2_refused, 1);
        break;
    case VEGA_H2_CLOSE_CONNECTION: /* the connection's error is counted once, by the task */
        break;
    }
    slot_free(c, q);
    return 0;
}

static int cb_stream_writable(void *ud, int32_t sid)
{
    (void)ud;
    (void)sid; /* the body is one span that ended the stream: nothing more to offer */
    return 0;
}

static int cb_settings(void *ud, const vega_h2_settings *peer)
{
    struct h2conn *c = ud;
    (void)peer; /* the core applies its limit (VEGA_ERR_H2_STREAM_LIMIT) */
    c->settings = true;
    return 0;
}

static int cb_goaway(void *ud, uint32_t last, uint32_t code, const uint8_t *debug, size_t len)
{
    struct h2conn *c = ud;
    (void)last;
    (void)code;
    (void)debug;
    (void)len;
    c->goaway = true;
    load_bump(&c->w->h2_goaway, 1);
    return 0;
}

static const vega_h2_callbacks h2_callbacks = {
    .on_headers = cb_headers,
    .on_data = cb_data,
    .on_stream_close = cb_close,
    .on_stream_writable = cb_stream_writable,
    .on_goaway = cb_goaway,
    .on_settings = cb_settings,
};

/* ---- the transport -------------------------------------------------------------------------- */

static vega_ssize conn_read(struct h2conn *c, void *buf, size_t n, vega_deadline dl)
{
    return c->tls ? vega_stream_read(c->tls, buf, n, dl) : vega_sock_read(c->sock, buf, n, dl);
}

static vega_ssize conn_write(struct h2conn *c, const void *buf, size_t n, vega_deadline dl)
{
    return c->tls ? vega_stream_write(c->tls, buf, n, NULL, dl)
                  : vega_sock_write(c->sock, buf, n, NULL, dl);
}

/* Writes everything the core has to send now. Returns 0 or a negative code. */
static int flush(struct h2conn *c, vega_deadline dl)
{
    while (vega_h2_conn_want_write(c->h2)) {
        vega_ssize n = vega_h2_conn_write(c->h2, c->out, c->cap, c->now);
        if (n == -ENOMEM)
            return -ENOMEM;
        if (n < 0)
            return (int)n;
        if (n == 0)
            break;
        scan_bytes(&c->scan_out, c->out, (size_t)n);
        vega_ssize w = conn_write(c, c->out, (size_t)n, dl);
        if (w < 0)
            return (int)w;
    }
    return 0;
}

/* Ends the attempt: the core's last frames (a GOAWAY) get a moment, then the socket closes and
 * the requests still in flight give their tickets back. */
static void attempt_close(struct h2conn *c, bool polite)
{
    if (c->h2 && c->sock && polite) {
        /* §6.8: a client that is done says so (GOAWAY NO_ERROR). */
        c->now = vega_now();
        (void)vega_h2_submit_goaway(c->h2, VEGA_H2_NO_ERROR, NULL, 0);
        (void)flush(c, vega_deadline_in_ms(CLOSE_FLUSH_MS));
    }
    if (c->tls) /* close_notify if it goes out at once: a load generator does not wait */
        vega_stream_close(c->tls, 0);
    c->tls = NULL;
    vega_sock_close(c->sock);
    c->sock = NULL;
    vega_h2_conn_free(c->h2); /* no callback runs: the slots in flight are freed here */
    c->h2 = NULL;
    c->nfree = 0;
    for (unsigned i = 0; i < c->o->streams; i++) {
        struct h2req *q = &c->req[i];
        if (q->ticket)
            load_ticket_return(c->r);
        q->ticket = false;
        q->busy = false;
        c->free_slots[c->nfree++] = c->o->streams - 1 - i;
    }
    c->busy = 0;
    if (c->w)
        scan_flush(c);
}

/* Starts one request on a new stream; false when none may start now. */
static bool start_one(struct h2conn *c, vega_tstamp intended)
{
    struct load_run *r = c->r;
    const struct load_opts *o = c->o;
    bool measured = intended >= r->measure_start, ticket = false;
    if (measured && o->round_trips) {
        if (!load_ticket_take(r))
            return false;
        ticket = true;
    }
    struct h2req *q = &c->req[c->free_slots[c->nfree - 1]];
    bool body = o->body_len > 0;
    int32_t sid = 0;
    const vega_hpack_field *fields = c->q->fields;
    uint64_t decoded = c->q->decoded_bytes;
    if (c->fields) {
        const char *p = o->paths[load_paths_pick(&c->pg, o)];
        size_t len = strlen(p);
        memcpy(c->path, p, len);
        if (o->random_query)
            load_random_digits(&c->pg, c->path + len - LOAD_RANDOM_DIGITS);
        /* :path is field 3 (h2_req.c); random values are never sent twice: not indexed */
        c->fields[3].value = (vega_http_str){c->path, len};
        c->fields[3].index = o->random_query ? VEGA_HPACK_INDEX_NO : VEGA_HPACK_INDEX_AUTO;
        fields = c->fields;
        decoded = decoded - strlen(o->path_longest) + len; /* built with the longest */
    }
    int e = vega_h2_submit_request(c->h2, fields, c->q->nfields,
                                   body ? VEGA_H2_FLAG_NONE : VEGA_H2_FLAG_END_STREAM, q, &sid);
    if (e == 0 && body) {
        /* The body is one read-only span shared by every stream (retained by the core until the
         * stream is written out or closed). */
        vega_ssize w =
            vega_h2_stream_write(c->h2, sid, o->body, o->body_len, VEGA_H2_FLAG_END_STREAM);
        if (w < 0) {
            (void)vega_h2_stream_set_user_data(c->h2, sid, NULL); /* the slot stays free */
            (void)vega_h2_submit_rst_stream(c->h2, sid, VEGA_H2_CANCEL);
            e = (int)w;
        }
    }
    if (e < 0) {
        if (ticket)
            load_ticket_return(r);
        if (e == VEGA_ERR_H2_STREAM_LIMIT) { /* a stream closing frees one */
            c->limited = true;
            if (c->busy == 0 && !c->stalled)
                c->stalled = c->now;
        } else if (e == VEGA_ERR_H2_GOING_AWAY || e == VEGA_ERR_CLOSED) {
            c->goaway = true;
        } else { /* -ENOMEM, or a request the core refused: reconnect (backing off) */
            load_error(r, LOAD_ERR_WRITE, e);
            c->failed = true;
        }
        return false;
    }
    c->nfree--;
    c->busy++;
    c->stalled = 0;
    *q = (struct h2req){.sid = sid,
                        .t_sent = c->now,
                        .t_intended = intended,
                        .busy = true,
                        .measured = measured,
                        .ticket = ticket};
    if (c->now + c->o->timeout_ns < c->expire_at)
        c->expire_at = c->now + c->o->timeout_ns;
    load_bump(&c->w->h2_head_out_decoded, decoded);
    return true;
}

/* Fills the free slots: at once in a closed loop, with the requests due under -R. */
static void start_requests(struct h2conn *c)
{
    const struct load_opts *o = c->o;
    c->limited = false;
    unsigned cap =
        c->settings || o->streams < STREAMS_BEFORE_SETTINGS ? o->streams : STREAMS_BEFORE_SETTINGS;
    while (c->nfree > 0 && c->busy < cap && !c->goaway && !c->limited && !c->failed) {
        if (c->now >= c->r->end || (o->rate && c->npending == 0))
            return;
        if (!start_one(c, o->rate ? c->pend_first : c->now))
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
static bool more_to_do(const struct h2conn *c)
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

/* -R: the requests that fell due join the pending ones. */
static void schedule(struct h2conn *c)
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

/* --timeout: requests older than it count as timeouts, and end the connection. Returns true
 * when they did. */
static bool expire(struct h2conn *c)
{
    unsigned n = 0;
    if (c->now >= c->expire_at) {
        /* Requests start in time order, so a scan is needed only when the earliest known
         * deadline passed; it finds the next one. */
        c->expire_at = VEGA_DEADLINE_NEVER;
        for (unsigned i = 0; i < c->o->streams; i++) {
            const struct h2req *q = &c->req[i];
            if (!q->busy)
                continue;
            vega_tstamp at = q->t_sent + c->o->timeout_ns;
            if (c->now >= at)
                n++;
            else if (at < c->expire_at)
                c->expire_at = at;
        }
    }
    if (n == 0 && c->stalled && c->now - c->stalled >= c->o->timeout_ns) {
        /* A server that allows no stream at all (SETTINGS_MAX_CONCURRENT_STREAMS 0) is not
         * waited for. */
        load_error_msg(c->r, LOAD_ERR_TIMEOUT, -ETIMEDOUT,
                       "the server allowed no request stream within --timeout; reconnecting");
        return true;
    }
    for (unsigned i = 0; i < n; i++)
        load_error(c->r, LOAD_ERR_TIMEOUT, -ETIMEDOUT);
    return n > 0;
}

/* When the task must look again: the end, the oldest request's timeout, -R's next request, the
 * core's timer. */
static vega_deadline next_deadline(const struct h2conn *c)
{
    vega_deadline dl = c->r->end;
    if (c->busy && c->expire_at < dl)
        dl = c->expire_at;
    if (c->o->rate && c->next_due < dl)
        dl = c->next_due;
    if (c->stalled && c->stalled + c->o->timeout_ns < dl)
        dl = c->stalled + c->o->timeout_ns;
    vega_tstamp x = vega_h2_conn_get_expiry(c->h2);
    if (x < dl)
        dl = x;
    return dl;
}

/* The core ended the connection (a protocol error of the server's, or its GOAWAY with an error
 * code): counted once. */
static enum load_step conn_failed(struct h2conn *c, int rc)
{
    vega_h2_error he;
    char msg[192];
    if (rc == VEGA_ERR_PROTO || rc == VEGA_ERR_CLOSED) {
        if (!vega_h2_conn_get_error(c->h2, &he))
            he = (vega_h2_error){.code = VEGA_H2_INTERNAL_ERROR, .reason = "closed"};
        if (he.remote) {
            snprintf(msg, sizeof(msg), "the server ended the connection: GOAWAY %s%s%s",
                     vega_h2_error_code_name(he.code), he.reason ? ", " : "",
                     he.reason ? he.reason : "");
            load_error_msg(c->r, LOAD_ERR_READ, VEGA_ERR_PROTO, msg);
        } else {
            snprintf(msg, sizeof(msg), "HTTP/2 connection error %s (%s); reconnecting",
                     vega_h2_error_code_name(he.code), he.reason ? he.reason : "");
            load_error_msg(c->r, LOAD_ERR_PARSE, VEGA_ERR_PROTO, msg);
        }
    } else {
        load_error(c->r, LOAD_ERR_READ, rc);
    }
    /* Our GOAWAY (queued by the core) goes out if it can at once. */
    c->now = vega_now();
    (void)flush(c, vega_deadline_in_ms(CLOSE_FLUSH_MS));
    return LOAD_STEP_FAIL;
}

/* A failed transport call: STOP when the run is over, else count the error. */
static enum load_step io_failed(struct h2conn *c, enum load_kind kind, int code, bool at_end)
{
    if (load_step_failed(code, at_end, &kind) == LOAD_STEP_STOP)
        return LOAD_STEP_STOP;
    load_error_msg(c->r, kind, code,
                   c->tls && code <= VEGA_ERR_TLS_BASE ? vega_tls_last_error(c->tls) : NULL);
    return LOAD_STEP_FAIL;
}

/* The server closed the transport. */
static enum load_step end_of_stream(struct h2conn *c)
{
    /* An idle connection the server closed after serving (its idle timeout, a GOAWAY): not an
     * error; reconnect. */
    if (c->busy == 0 && (c->completed > 0 || c->goaway))
        return LOAD_STEP_CLOSE;
    char msg[128];
    if (c->busy)
        snprintf(msg, sizeof(msg), "connection closed by the server with %u request%s in flight",
                 c->busy, c->busy == 1 ? "" : "s");
    else
        snprintf(msg, sizeof(msg), "connection closed by the server before any response");
    load_error_msg(c->r, LOAD_ERR_READ, VEGA_ERR_CLOSED, msg);
    return LOAD_STEP_FAIL;
}

/* Everything but reading: the schedule, timeouts, the core's timer, new requests, our frames
 * out. Returns LOAD_STEP_OK while the connection goes on. (With -R, under c->mu.) */
static enum load_step tick(struct h2conn *c)
{
    struct load_run *r = c->r;
    c->now = vega_now();
    c->w = load_worker_self(r);
    if (c->now >= r->end)
        return LOAD_STEP_STOP;
    if (c->o->rate)
        schedule(c);
    if (expire(c))
        return LOAD_STEP_FAIL;
    if (vega_h2_conn_get_expiry(c->h2) <= c->now) {
        int e = vega_h2_conn_handle_expiry(c->h2, c->now);
        if (e < 0)
            return conn_failed(c, e);
    }
    start_requests(c);
    if (c->failed)
        return LOAD_STEP_FAIL;
    bool at_end;
    vega_deadline wdl = load_step_deadline(r, c->now, &at_end);
    int e = flush(c, wdl);
    if (e == VEGA_ERR_CALLBACK || e == -ENOMEM)
        return conn_failed(c, e);
    if (e < 0)
        return io_failed(c, LOAD_ERR_WRITE, e, at_end);
    scan_flush(c);
    if (c->busy == 0 && c->goaway)
        return LOAD_STEP_CLOSE; /* §6.8: done with this connection; on to a new one */
    if (c->busy == 0 && !more_to_do(c))
        return LOAD_STEP_STOP;
    if (!vega_h2_conn_want_read(c->h2))
        return LOAD_STEP_CLOSE;
    return LOAD_STEP_OK;
}

/* Feeds what a read of c->in returned (n: bytes, 0 at the end, or an error) to the core.
 * Returns LOAD_STEP_OK while the connection goes on. (With -R, under c->mu.) */
static enum load_step ingest(struct h2conn *c, vega_ssize n)
{
    struct load_run *r = c->r;
    if (n == 0 || n == VEGA_ERR_TLS_TRUNCATED) /* many servers skip close_notify */
        return end_of_stream(c);
    if (n < 0)
        return io_failed(c, LOAD_ERR_READ, (int)n, false);
    /* TLS hands out a record per read: the records already here come too, so that the
     * requests their responses free go out in one write (a later read reports an end or an
     * error). */
    while (c->tls && (size_t)n < c->cap && vega_tls_has_buffered(c->tls)) {
        vega_ssize k = conn_read(c, c->in + n, c->cap - (size_t)n, 0);
        if (k <= 0)
            break;
        n += k;
    }
    c->now = vega_now();
    c->w = load_worker_self(r); /* the task may have moved while it waited */
    if (c->first_byte) {
        c->first_byte = false;
        cli_hist_record(&c->w->first_byte_hist, us_between(c->t_connect, c->now));
    }
    if (c->now >= r->measure_start)
        load_bump(&c->w->bytes, (uint64_t)n);
    scan_bytes(&c->scan_in, c->in, (size_t)n);
    int e = vega_h2_conn_read(c->h2, c->in, (size_t)n, c->now);
    if (e < 0)
        return conn_failed(c, e);
    vega_h2_error he;
    if (vega_h2_conn_get_error(c->h2, &he) && he.remote)
        return conn_failed(c, VEGA_ERR_PROTO);
    return LOAD_STEP_OK;
}

/* Runs one connection until it must reconnect or the run is over: one task that writes, then
 * reads until the next deadline (the end, a request's --timeout, the core's timer). */
static enum load_step serve(struct h2conn *c)
{
    for (;;) {
        enum load_step s = tick(c);
        if (s != LOAD_STEP_OK)
            return s;
        vega_ssize n = conn_read(c, c->in, c->cap, next_deadline(c));
        if (n == -ETIMEDOUT)
            continue; /* tick looks at the end, timeouts and the schedule */
        s = ingest(c, n);
        if (s != LOAD_STEP_OK)
            return s;
    }
}

/* -R: the reader task of a connection. It reads without the lock (the only reader of c->in),
 * feeds the core under it, and wakes the connection's task through its timer. */
static void *reader_main(void *arg)
{
    struct h2conn *c = arg;
    for (;;) {
        vega_ssize n = conn_read(c, c->in, c->cap, c->r->end);
        if (n == -ECANCELED || vega_mutex_lock(&c->mu, VEGA_DEADLINE_NEVER) < 0)
            return NULL;
        enum load_step s = n == -ETIMEDOUT ? LOAD_STEP_STOP : ingest(c, n);
        if (s != LOAD_STEP_OK)
            c->rstep = s;
        (void)load_timer_fire(c->tfd);
        vega_mutex_unlock(&c->mu);
        if (s != LOAD_STEP_OK)
            return NULL;
    }
}

/* -R: a task that reads and this one, which sends each request when it falls due on a timer of
 * the kernel's resolution (waiting in a read, it would wake on the runtime's 1 ms timers: up to
 * 1 ms of send lateness in every corrected latency). */
static enum load_step serve_rated(struct h2conn *c)
{
    c->rstep = LOAD_STEP_OK;
    int e = vega_task_spawn(&c->reader, reader_main, c);
    if (e < 0) {
        load_error(c->r, LOAD_ERR_CONNECT, e);
        return LOAD_STEP_FAIL;
    }
    enum load_step s;
    for (;;) {
        if (vega_mutex_lock(&c->mu, VEGA_DEADLINE_NEVER) < 0) {
            s = LOAD_STEP_STOP;
            break;
        }
        s = c->rstep != LOAD_STEP_OK ? c->rstep : tick(c);
        vega_deadline dl = s == LOAD_STEP_OK ? next_deadline(c) : 0;
        bool armed = s == LOAD_STEP_OK && load_timer_arm(c->tfd, c->mono_offset, dl) == 0;
        vega_mutex_unlock(&c->mu);
        if (s != LOAD_STEP_OK)
            break;
        /* Armed under the lock: the reader's wake-up after that is never lost. The runtime's
         * deadline is a backstop only (or the wait itself when arming failed). */
        vega_deadline back = !armed                                      ? dl
                             : dl >= VEGA_DEADLINE_NEVER - VEGA_NS_PER_S ? VEGA_DEADLINE_NEVER
                                                                         : dl + VEGA_NS_PER_S;
        uint64_t ticks;
        if (vega_fd_read(c->tfd, &ticks, sizeof(ticks), back) == -ECANCELED) {
            s = LOAD_STEP_STOP;
            break;
        }
    }
    /* The reader ends before the connection does (it may be inside a read of c->in). */
    vega_task_cancel(c->reader);
    while (vega_task_join(c->reader, NULL, VEGA_DEADLINE_NEVER) < 0)
        (void)vega_yield();
    c->reader = NULL;
    return s;
}

/* ---- connecting ------------------------------------------------------------------------------ */

static enum load_step tls_open(struct h2conn *c, vega_deadline dl, bool at_end)
{
    const struct load_opts *o = c->o;
    vega_tstamp t0 = vega_now();
    int e = load_tls_handshake(c->r, c->sock, o->sni ? o->sni : o->host, &c->tls, dl);
    if (e == 0) {
        /* §3.2: "h2" must be what the server chose; a server without HTTP/2 picks http/1.1 or
         * nothing. */
        const char *alpn = vega_tls_get_alpn(c->tls);
        if (alpn && strcmp(alpn, "h2") == 0) {
            c->w = load_worker_self(c->r);
            cli_hist_record(&c->w->tls_hist, us_between(t0, vega_now()));
            load_tls_seen(c->r, c->tls);
            return LOAD_STEP_OK;
        }
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "the server did not choose HTTP/2 in the TLS handshake (ALPN: %s); it may "
                 "speak HTTP/1.1 only (try without --h2)",
                 alpn ? alpn : "none");
        load_error_msg(c->r, LOAD_ERR_CONNECT, VEGA_ERR_PROTO, msg);
        e = VEGA_ERR_PROTO;
    }
    enum load_step s =
        e == VEGA_ERR_PROTO ? LOAD_STEP_FAIL : load_tls_failed(c->r, e, c->tls, at_end);
    attempt_close(c, false);
    return s;
}

static enum load_step attempt_open(struct h2conn *c)
{
    struct load_run *r = c->r;
    const struct load_opts *o = c->o;
    bool at_end;
    vega_tstamp t0 = vega_now();
    vega_deadline dl = load_step_deadline(r, t0, &at_end);
    int e = load_connect(r, &c->sock, c->rt.ever, dl);
    if (e < 0) {
        if (e == -ECANCELED || (e == -ETIMEDOUT && at_end))
            return LOAD_STEP_STOP;
        load_error(r, LOAD_ERR_CONNECT, e);
        return LOAD_STEP_FAIL;
    }
    c->w = load_worker_self(r);
    cli_hist_record(&c->w->connect_hist, us_between(t0, vega_now()));
    if (!o->unix_path)
        vega_sock_set_nodelay(c->sock, true);
    if (r->tls) {
        enum load_step s = tls_open(c, dl, at_end);
        if (s != LOAD_STEP_OK)
            return s;
    }
    vega_h2_opts ho;
    vega_h2_opts_init(&ho);
    ho.initial_window_size = H2_WINDOW;
    ho.conn_window = H2_WINDOW;
    ho.conn_window_max = H2_WINDOW;
    ho.stream_window_max = H2_WINDOW;
    ho.max_local_streams = o->streams;
    e = vega_h2_conn_client_new(&c->h2, &h2_callbacks, &ho, c);
    if (e < 0) {
        load_error(r, LOAD_ERR_CONNECT, e);
        attempt_close(c, false);
        return LOAD_STEP_FAIL;
    }
    c->t_connect = t0;
    c->first_byte = true;
    c->goaway = c->limited = c->settings = c->failed = false;
    c->completed = 0;
    c->stalled = 0;
    c->expire_at = VEGA_DEADLINE_NEVER;
    c->scan_in = (struct scan){0};
    c->scan_out = (struct scan){.skip = 24}; /* the preface's magic (§3.4) is no frame */
    c->w = load_worker_self(r);
    load_bump(&c->w->connects, 1);
    if (c->rt.ever)
        load_bump(&c->w->reconnects, 1);
    c->rt.ever = true;
    return LOAD_STEP_OK;
}

/* ---- load_mux_loop's view of the connection ------------------------------------------------ */

static bool mux_is_open(const void *c)
{
    return ((const struct h2conn *)c)->h2 != NULL;
}

static enum load_step mux_open(void *c)
{
    return attempt_open(c);
}

static enum load_step mux_serve(void *arg)
{
    struct h2conn *c = arg;
    return c->tfd >= 0 ? serve_rated(c) : serve(c);
}

static void mux_close(void *c, bool ended)
{
    attempt_close(c, ended);
}

static uint64_t mux_responses(const void *c)
{
    return ((const struct h2conn *)c)->completed;
}

static const struct load_mux_ops mux_ops = {
    .is_open = mux_is_open,
    .open = mux_open,
    .serve = mux_serve,
    .close = mux_close,
    .responses = mux_responses,
};

static void conn_free(struct h2conn *c)
{
    if (c->tfd >= 0)
        close(c->tfd);
    vega_mutex_fini(&c->mu);
    free(c->req);
    free(c->free_slots);
    free(c->in);
    free(c->out);
    free(c->fields);
    free(c->path);
    free(c);
}

static struct h2conn *conn_new(struct load_run *r)
{
    const struct load_opts *o = r->o;
    struct h2conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->r = r;
    c->o = o;
    c->q = o->h2_req;
    c->tfd = -1;
    vega_mutex_init(&c->mu);
    c->cap = o->h2_buf;
    c->req = calloc(o->streams, sizeof(*c->req));
    c->free_slots = calloc(o->streams, sizeof(*c->free_slots));
    c->in = malloc(c->cap);
    c->out = malloc(c->cap);
    if (o->paths_vary) {
        c->fields = malloc(c->q->nfields * sizeof(*c->fields));
        c->path = malloc(LOAD_MAX_PATH);
        if (c->fields)
            memcpy(c->fields, c->q->fields, c->q->nfields * sizeof(*c->fields));
    }
    if (!c->req || !c->free_slots || !c->in || !c->out ||
        (o->paths_vary && (!c->fields || !c->path))) {
        conn_free(c);
        return NULL;
    }
    for (unsigned i = 0; i < o->streams; i++)
        c->free_slots[c->nfree++] = o->streams - 1 - i;
    return c;
}

void *load_h2_conn(void *arg)
{
    struct load_run *r = arg;
    const struct load_opts *o = r->o;
    unsigned index = atomic_fetch_add(&r->next_index, 1);
    struct h2conn *c = conn_new(r);
    if (!c) {
        load_conn_no_memory(r);
        return NULL;
    }
    c->w = load_worker_self(r);
    load_paths_start(&c->pg, o, index);
    if (o->rate) {
        /* This connection's share of the schedule (load_pace). */
        c->index = index;
        c->next_due = load_pace(r, 0, index);
        c->tfd = load_timer_open(&c->mono_offset); /* -1: the one-task loop, 1 ms timers */
    }
    load_mux_loop(r, &c->rt, &mux_ops, c);
    if (c->h2 || c->sock)
        attempt_close(c, false);
    conn_free(c);
    return NULL;
}
