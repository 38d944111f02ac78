/* SPDX-License-Identifier: MIT */
/* The echo session: each connection sends -s bytes, waits for all of them to come back and
 * compares them, and repeats (ping-pong, a closed loop). TCP and Unix streams reconnect after
 * an error; UDP sends one datagram and waits for the one that carries the same bytes back. */
#include <stdlib.h>
#include <string.h>

#include "load.h"

struct conn {
    struct load_run *r;
    const struct load_opts *o;
    vega_sock *sock;
    vega_stream *tls;   /* --tls: over sock (borrowed) */
    unsigned char *buf; /* receive buffer */
    size_t cap;
    unsigned char *dgram; /* UDP: the datagram sent, with a sequence number in front */
    uint64_t seq;
    struct load_retry rt; /* ever: connected (UDP: a round trip completed) at least once */
    int last_err;         /* the code of the latest failure */
    enum load_kind last_kind;
};

/* A failed call: STOP when the run is over, else count the error. */
static enum load_step failed(struct conn *c, enum load_kind kind, int code, bool at_end)
{
    if (load_step_failed(code, at_end, &kind) == LOAD_STEP_STOP)
        return LOAD_STEP_STOP;
    c->last_err = code;
    c->last_kind = kind;
    load_error_msg(c->r, kind, code,
                   c->tls && code <= VEGA_ERR_TLS_BASE ? vega_tls_last_error(c->tls) : NULL);
    return LOAD_STEP_FAIL;
}

static void conn_close(struct conn *c);

/* The stream's I/O: TLS when there is a TLS stream, else the socket. */
static vega_ssize conn_read(struct conn *c, void *buf, size_t n, vega_deadline dl)
{
    return c->tls ? vega_stream_read(c->tls, buf, n, dl) : vega_sock_read(c->sock, buf, n, dl);
}

static vega_ssize conn_write(struct conn *c, const void *buf, size_t n, vega_deadline dl)
{
    return c->tls ? vega_stream_write(c->tls, buf, n, NULL, dl)
                  : vega_sock_write(c->sock, buf, n, NULL, dl);
}

/* --tls: the handshake over the connected socket, within the connect's deadline. */
static enum load_step tls_open(struct conn *c, vega_deadline dl, bool at_end)
{
    const struct load_opts *o = c->o;
    const char *name = o->sni ? o->sni : o->unix_path ? NULL : o->host;
    int e = load_tls_handshake(c->r, c->sock, name, &c->tls, dl);
    if (e == 0)
        return LOAD_STEP_OK;
    enum load_step s = load_tls_failed(c->r, e, c->tls, at_end);
    if (s == LOAD_STEP_FAIL) {
        c->last_err = e;
        c->last_kind = LOAD_ERR_CONNECT;
    }
    conn_close(c);
    return s;
}

static enum load_step conn_open(void *arg)
{
    struct conn *c = arg;
    struct load_run *r = c->r;
    bool at_end;
    vega_deadline dl = load_step_deadline(r, vega_now(), &at_end);
    if (c->o->udp) {
        unsigned i = atomic_load_explicit(&r->good_addr, memory_order_relaxed);
        int e = vega_udp_connect(&c->sock, &r->addrs[i]);
        return e < 0 ? failed(c, LOAD_ERR_CONNECT, e, false) : LOAD_STEP_OK;
    }
    int e = load_connect(r, &c->sock, c->rt.ever, dl);
    if (e < 0)
        return failed(c, LOAD_ERR_CONNECT, e, at_end);
    if (!c->o->unix_path)
        vega_sock_set_nodelay(c->sock, true);
    if (r->tls) {
        enum load_step s = tls_open(c, dl, at_end);
        if (s != LOAD_STEP_OK)
            return s;
    }
    c->rt.ever = true;
    load_bump(&load_worker_self(r)->connects, 1);
    return LOAD_STEP_OK;
}

/* Reads the echo of payload[0..size) in chunks of at most c->cap bytes, comparing as it goes. */
static enum load_step read_echo(struct conn *c, vega_deadline dl, bool at_end)
{
    const unsigned char *want = c->r->payload;
    size_t size = c->o->size, got = 0;
    while (got < size) {
        size_t n = size - got < c->cap ? size - got : c->cap;
        vega_ssize k = conn_read(c, c->buf, n, dl);
        if (k <= 0)
            return failed(c, LOAD_ERR_READ, (int)k, at_end);
        if (memcmp(c->buf, want + got, (size_t)k) != 0)
            return failed(c, LOAD_ERR_MISMATCH, 0, at_end);
        got += (size_t)k;
    }
    return LOAD_STEP_OK;
}

/* A message larger than the receive buffer is written by a helper task while this one reads:
 * writing it all before reading would stall once the socket buffers on both sides are full. */
struct writer {
    struct conn *c;
    vega_deadline dl;
    int err;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    vega_ssize n = conn_write(w->c, w->c->r->payload, w->c->o->size, w->dl);
    w->err = n < 0 ? (int)n : 0;
    return NULL;
}

static enum load_step stream_round_trip(struct conn *c, vega_deadline dl, bool at_end)
{
    if (c->o->size <= c->cap) {
        vega_ssize n = conn_write(c, c->r->payload, c->o->size, dl);
        if (n < 0)
            return failed(c, LOAD_ERR_WRITE, (int)n, at_end);
        return read_echo(c, dl, at_end);
    }
    struct writer w = {.c = c, .dl = dl};
    vega_task *t;
    int e = vega_task_spawn(&t, writer_main, &w);
    if (e < 0)
        return failed(c, LOAD_ERR_WRITE, e, at_end);
    enum load_step s = read_echo(c, dl, at_end);
    if (s != LOAD_STEP_OK)
        vega_task_cancel(t);
    /* The writer must be gone before the socket is closed: this join cannot be skipped. */
    while (vega_task_join(t, NULL, VEGA_DEADLINE_NEVER) < 0)
        vega_task_cancel(t);
    if (s == LOAD_STEP_OK && w.err < 0)
        return failed(c, LOAD_ERR_WRITE, w.err, at_end);
    return s;
}

static enum load_step udp_round_trip(struct conn *c, vega_deadline dl, bool at_end)
{
    size_t size = c->o->size;
    uint64_t seq = ++c->seq;
    memcpy(c->dgram, &seq, size < sizeof(seq) ? size : sizeof(seq));
    vega_ssize n = vega_udp_send_to(c->sock, c->dgram, size, NULL, dl);
    if (n < 0)
        return failed(c, LOAD_ERR_WRITE, (int)n, at_end);
    for (;;) {
        /* cap is size + 1: a longer datagram does not look like the right one. */
        n = vega_sock_read(c->sock, c->buf, c->cap, dl);
        if (n < 0)
            return failed(c, LOAD_ERR_READ, (int)n, at_end);
        if ((size_t)n == size && memcmp(c->buf, c->dgram, size) == 0)
            return LOAD_STEP_OK;
        /* A late echo of an earlier datagram, or garbage: keep waiting for ours. */
    }
}

static void conn_close(struct conn *c)
{
    if (c->tls) /* close_notify if it goes out at once: a load generator does not wait */
        vega_stream_close(c->tls, 0);
    c->tls = NULL;
    vega_sock_close(c->sock);
    c->sock = NULL;
}

static void conn_loop(struct conn *c)
{
    struct load_run *r = c->r;
    for (;;) {
        if (!c->sock && !load_conn_open_retry(r, &c->rt, conn_open, c))
            return;
        vega_tstamp t0 = vega_now();
        if (t0 >= r->end)
            return;
        bool measured = t0 >= r->measure_start;
        bool ticket = measured && c->o->round_trips;
        if (ticket && !load_ticket_take(r))
            return;
        bool at_end;
        vega_deadline dl = load_step_deadline(r, t0, &at_end);
        enum load_step s =
            c->o->udp ? udp_round_trip(c, dl, at_end) : stream_round_trip(c, dl, at_end);
        if (s == LOAD_STEP_OK) {
            vega_tstamp t1 = vega_now();
            c->rt.fails = 0;
            c->rt.ever = true;
            if (measured) {
                struct load_worker *w = load_worker_self(r);
                load_latency(w, (t1 - t0 + VEGA_NS_PER_US / 2) / VEGA_NS_PER_US);
                load_bump(&w->round_trips, 1);
            }
            continue;
        }
        if (ticket)
            load_ticket_return(r);
        if (s == LOAD_STEP_STOP)
            return;
        if (c->o->udp) {
            /* UDP has no connection to lose. A datagram refused before any came back means
             * nothing listens there: give up like a refused TCP connect. */
            if (!c->rt.ever && c->last_err == -ECONNREFUSED) {
                atomic_fetch_add(&r->gave_up, 1);
                atomic_fetch_add(&r->never_connected, 1);
                return;
            }
        } else {
            conn_close(c);
        }
        if (!load_conn_failed(r, &c->rt))
            return;
        /* A refused datagram comes back at once: pause before the next. A lost one already
         * waited for its timeout. */
        if (c->o->udp && c->last_kind != LOAD_ERR_TIMEOUT && !load_backoff(r, c->rt.fails))
            return;
    }
}

void *load_echo_conn(void *arg)
{
    struct conn c = {.r = arg, .o = ((struct load_run *)arg)->o};
    size_t size = c.o->size;
    c.cap = c.o->udp ? size + 1 : (size < LOAD_CHUNK ? size : LOAD_CHUNK);
    c.buf = malloc(c.cap);
    c.dgram = c.o->udp ? malloc(size) : NULL;
    if (!c.buf || (c.o->udp && !c.dgram)) {
        load_error(c.r, LOAD_ERR_CONNECT, -ENOMEM);
        atomic_fetch_add(&c.r->gave_up, 1);
        atomic_fetch_add(&c.r->never_connected, 1);
    } else {
        if (c.dgram)
            memcpy(c.dgram, c.r->payload, size);
        conn_loop(&c);
    }
    if (c.sock)
        conn_close(&c);
    free(c.buf);
    free(c.dgram);
    return NULL;
}
