/* SPDX-License-Identifier: MIT */
/* HTTP/2 connections of the HTTP server (RFC 9113 §3-§6): the connection task writes what the
 * core produces and keeps the timers, a reader task feeds the core what the socket brings, each
 * request runs in a task of its own; with no request and nothing to write the connection parks
 * like an HTTP/1.1 one (no task, no buffer), and shutdown sends GOAWAY (§6.8). */
#include <stdlib.h>
#include <sys/socket.h>

#include "h2_srv_int.h"

void vega__h2s_lock(struct h2s_conn *h)
{
    /* Held only around core calls, never across a wait: a cancelled task gets it too (by
     * turns), so it can still finish what it does cleanly. */
    if (vega_mutex_lock(&h->mu, 0) == 0)
        return;
    int rc = vega_mutex_lock(&h->mu, VEGA_DEADLINE_NEVER);
    while (rc != 0) {
        (void)vega_yield();
        rc = vega_mutex_lock(&h->mu, 0);
    }
}

static const vega_mem *mem_of(const struct h2s_conn *h)
{
    return h->mem;
}

static bool stopping(const struct h2s_conn *h)
{
    return atomic_load_explicit(&h->srv->stopping, memory_order_relaxed) ||
           atomic_load_explicit(&h->kicked, memory_order_relaxed);
}

/* ---- life ------------------------------------------------------------------------------------ */

static struct h2s_conn *conn_new(struct srv_conn *c)
{
    vega_http_server *srv = c->srv;
    struct h2s_conn *h = vega__mem_calloc(srv->o.mem, 1, sizeof *h);
    if (!h)
        return NULL;
    h->c = c;
    h->srv = srv;
    h->mem = srv->o.mem;
    vega_mutex_init(&h->mu);
    vega_notify_init(&h->wake);
    atomic_init(&h->tasks_live, 0);
    atomic_init(&h->kicked, false);
    vega_h2_opts o;
    vega__h2s_core_opts(srv, &o);
    if (vega_h2_conn_server_new(&h->core, &vega__h2s_cb, &o, h) < 0) {
        vega__mem_free(srv->o.mem, h);
        return NULL;
    }
    return h;
}

void vega__h2s_free(struct srv_conn *c)
{
    struct h2s_conn *h = c->h2;
    if (!h)
        return;
    const vega_mem *m = mem_of(h);
    /* every task is gone: what is left are requests whose stream the core still had */
    while (h->reqs) {
        struct h2s_req *r = h->reqs;
        r->refs = 1;
        vega__h2s_req_unref(r);
    }
    vega_h2_conn_free(h->core);
    vega__mem_free(m, h->up_frame);
    vega__mem_free(m, h->in);
    vega__mem_free(m, h->out);
    vega_mutex_fini(&h->mu);
    vega_notify_fini(&h->wake);
    vega__mem_free(m, h);
    c->h2 = NULL;
}

static int buffers_get(struct h2s_conn *h)
{
    const vega_mem *m = mem_of(h);
    if (!h->in && !(h->in = vega__mem_malloc(m, H2S_IN_CAP)))
        return -ENOMEM;
    if (!h->out && !(h->out = vega__mem_malloc(m, H2S_OUT_CAP)))
        return -ENOMEM;
    return 0;
}

static void buffers_put(struct h2s_conn *h)
{
    const vega_mem *m = mem_of(h);
    VEGA_ASSERT(h->in_len == 0);
    vega__mem_free(m, h->in);
    vega__mem_free(m, h->out);
    h->in = h->out = NULL;
}

void vega__h2s_kick(struct srv_conn *c)
{
    struct h2s_conn *h = c->h2;
    if (h) {
        atomic_store_explicit(&h->kicked, true, memory_order_relaxed);
        vega_notify_one(&h->wake);
    }
}

/* ---- input ----------------------------------------------------------------------------------- */

/* h2c Upgrade: the client's preface and SETTINGS go to the core first, then stream 1's request
 * as the HEADERS frame it would have sent (RFC 7540 §3.2: the request is stream 1, half-closed
 * from the client), then the rest. Until the SETTINGS frame is whole, bytes wait in h->in. */
static int feed_upgrade(struct h2s_conn *h, vega_tstamp now)
{
    const uint8_t *p = h->in;
    size_t have = h->in_len, need = H2S_PREFACE_LEN + 9;
    bool whole = have >= need;
    if (whole) {
        need += (size_t)p[H2S_PREFACE_LEN] << 16 | (size_t)p[H2S_PREFACE_LEN + 1] << 8 |
                p[H2S_PREFACE_LEN + 2];
        whole = have >= need;
    }
    bool bad = memcmp(p, H2S_PREFACE, VEGA__MIN(have, (size_t)H2S_PREFACE_LEN)) != 0 ||
               (have > H2S_PREFACE_LEN + 3 && p[H2S_PREFACE_LEN + 3] != 0x4) || need > H2S_IN_CAP;
    if (!whole && !bad && have < H2S_IN_CAP)
        return 0; /* wait for the rest of the SETTINGS frame */
    int rc = 0;
    if (bad) {
        /* not the preface: the core says so (PROTOCOL_ERROR); stream 1 is never answered */
        rc = vega_h2_conn_read(h->core, p, have, now);
    } else {
        rc = vega_h2_conn_read(h->core, p, need, now);
        if (rc == 0)
            rc = vega_h2_conn_read(h->core, h->up_frame, h->up_len, now);
        if (rc == 0)
            rc = vega_h2_conn_read(h->core, p + need, have - need, now);
    }
    vega__mem_free(mem_of(h), h->up_frame);
    h->up_frame = NULL;
    h->up_len = 0;
    h->in_len = 0;
    return rc;
}

/* Feeds the n bytes just read into h->in + h->in_len. Returns 0 or the core's error (the
 * connection is then over for input; a GOAWAY is queued). */
static int feed(struct h2s_conn *h, size_t n)
{
    vega__h2s_lock(h);
    int rc = VEGA_ERR_CLOSED;
    if (!h->dead) {
        vega_tstamp now = vega_now();
        if (h->up_frame) {
            h->in_len += n;
            rc = feed_upgrade(h, now);
        } else {
            rc = vega_h2_conn_read(h->core, h->in, n, now);
        }
        vega__h2s_spawn(h);
    }
    /* the connection task looks when there is something to write, when the core wants no
     * more input, or when no request is left (it may park) */
    bool kick =
        rc < 0 || vega_h2_conn_want_write(h->core) || !vega_h2_conn_want_read(h->core) || !h->reqs;
    vega__h2s_unlock(h);
    if (kick)
        vega_notify_one(&h->wake);
    return rc;
}

/* Feeds bytes from elsewhere (the HTTP/1.1 block's) through h->in. */
static int feed_from(struct h2s_conn *h, const uint8_t *p, size_t len)
{
    while (len > 0) {
        size_t k = VEGA__MIN(len, vega__room(h->in_len, H2S_IN_CAP));
        if (k == 0)
            return VEGA_ERR_PROTO; /* cannot happen: feed_upgrade empties a full buffer */
        memcpy(h->in + h->in_len, p, k);
        int rc = feed(h, k);
        if (rc < 0)
            return rc;
        p += k;
        len -= k;
    }
    return 0;
}

static void *reader_main(void *arg)
{
    struct h2s_conn *h = arg;
    for (;;) {
        vega_ssize n = vega_stream_read(h->c->stream, h->in + h->in_len,
                                        vega__room(h->in_len, H2S_IN_CAP), VEGA_DEADLINE_NEVER);
        int rc = n > 0 ? feed(h, (size_t)n) : (int)n;
        if (n <= 0 || rc < 0) {
            /* the end of input: the peer closed (0), the socket failed, we were cancelled,
             * or the core refused what came (its GOAWAY is queued) */
            vega__h2s_lock(h);
            h->rd_done = true;
            h->rd_rc = rc;
            vega_notify_one(&h->wake);
            vega__h2s_unlock(h);
            break;
        }
    }
    atomic_fetch_sub_explicit(&h->tasks_live, 1, memory_order_release); /* last touch of h */
    return NULL;
}

static int reader_start(struct h2s_conn *h)
{
    vega_spawn_opts so;
    vega_spawn_opts_init(&so);
    so.name = "http2-read";
    h->rd_done = false;
    h->rd_rc = 0;
    atomic_fetch_add_explicit(&h->tasks_live, 1, memory_order_relaxed);
    int rc = vega_task_spawn_ex(&h->reader, reader_main, h, &so);
    if (rc < 0) {
        h->reader = NULL;
        atomic_fetch_sub_explicit(&h->tasks_live, 1, memory_order_relaxed);
    }
    return rc;
}

/* Cancels the reader and waits for it (a read it had done is fed first). */
static void reader_stop(struct h2s_conn *h)
{
    if (!h->reader)
        return;
    vega_task_cancel(h->reader);
    while (vega_task_join(h->reader, NULL, VEGA_DEADLINE_NEVER) < 0)
        (void)vega_yield();
    h->reader = NULL;
}

/* ---- one turn of the connection task --------------------------------------------------------- */

enum step {
    STEP_MORE = 0, /* look again at once */
    STEP_WAIT = 1, /* wait for news until *dl */
    STEP_IDLE = 2, /* no request, nothing to write: park once idle long enough */
    STEP_END = 3,  /* the connection is over */
};

/* The core's part of a turn, h locked: shutdown, timers, what waits on the peer. Returns the
 * deadline of the next look (VEGA_DEADLINE_NEVER: only news). */
static vega_deadline core_turn(struct h2s_conn *h, vega_tstamp now)
{
    if (!h->shut && !h->dead && stopping(h)) {
        h->shut = true;
        vega_h2_conn_info info;
        vega_h2_conn_get_info(h->core, &info);
        /* §6.8: with nothing in flight a final GOAWAY at once; else first 2^31 - 1 and a
         * PING, so that requests already on their way are still served */
        if (info.streams_open == 0 && !h->reqs)
            (void)vega_h2_submit_goaway(h->core, VEGA_H2_NO_ERROR, NULL, 0);
        else
            (void)vega_h2_conn_shutdown(h->core, now);
    }
    if (vega_h2_conn_get_expiry(h->core) <= now)
        (void)vega_h2_conn_handle_expiry(h->core, now);
    if (h->nrst_after)
        vega__h2s_rst_after(h);
    vega_deadline dl = vega_h2_conn_get_expiry(h->core);
    if (vega__h2s_check_stalls(h, now))
        dl = VEGA__MIN(dl, now + H2S_STALL_TICK_NS);
    return dl;
}

static enum step step(struct h2s_conn *h, vega_deadline *dl)
{
    struct srv_conn *c = h->c;
    vega__h2s_lock(h);
    if (h->ntasks > h->nbusy && !h->broken) {
        /* Request tasks that can run now (those the last feed started, usually) would each
         * have their response written on its own, since the first one's kick brings us back
         * before the others ran: let them run first, so that one write -- one TLS record, one
         * send -- carries what they all produce (h2load -m 10: a send per ten answers, not per
         * answer). A yield with nothing else to run returns at once. */
        vega__h2s_unlock(h);
        (void)vega_yield();
        vega__h2s_lock(h);
    }
    vega_tstamp now = vega_now();
    *dl = core_turn(h, now);
    vega_ssize n = 0;
    if (!h->broken) {
        n = vega_h2_conn_write(h->core, h->out, H2S_OUT_CAP, now);
        if (n < 0 && n != -ENOMEM)
            h->dead = true; /* a callback failed: GOAWAY INTERNAL_ERROR queued */
        /* no memory for a frame: the core keeps it for a later try; a connection that cannot
         * get any for a while is given up (its requests then end) */
        h->nomem = n == -ENOMEM ? h->nomem + 1 : 0;
        if (h->nomem > H2S_NOMEM_TRIES)
            h->broken = true;
        if (n < 0)
            n = 0;
    }
    bool wr = vega_h2_conn_want_write(h->core), rd = vega_h2_conn_want_read(h->core);
    bool idle = !h->reqs && !h->spawn && !h->up_frame;
    bool rd_done = h->rd_done;
    /* the peer sends nothing more, so no WINDOW_UPDATE either: a response waiting for one
     * would wait until write_timeout for nothing (a client that only half-closed gets what
     * fits its windows) */
    bool stuck = rd_done && h->nbusy && vega__h2s_blocked(h);
    if (!idle) {
        h->idle_since = 0;
    } else if (!h->idle_since) {
        h->idle_since = now;
        h->idle_dl = now + h->srv->o.idle_timeout_ns;
    }
    vega__h2s_unlock(h);
    if (n > 0) {
        vega_ssize w = vega_stream_write(c->stream, h->out, (size_t)n, NULL,
                                         vega_deadline_in_ns(h->srv->o.write_timeout_ns));
        if (w < 0) {
            vega__h2s_lock(h);
            h->broken = true;
            vega__h2s_unlock(h);
            if (w == -ETIMEDOUT)
                atomic_fetch_add_explicit(&h->srv->timeouts, 1, memory_order_relaxed);
            return STEP_END;
        }
        return STEP_MORE;
    }
    if (h->broken || (!rd && !wr) || stuck)
        return STEP_END;
    if (wr) {
        /* the core has more but wrote nothing: no memory for a frame just now */
        *dl = VEGA__MIN(*dl, now + VEGA_NS_PER_MS);
        return STEP_WAIT;
    }
    if (idle)
        return rd_done ? STEP_END : STEP_IDLE;
    return STEP_WAIT;
}

/* ---- parking --------------------------------------------------------------------------------- */

enum park {
    PARK_DONE = 0,  /* parked: c is the park callback's now */
    PARK_AGAIN = 1, /* not idle after all: go on */
    PARK_END = 2,   /* close */
};

static enum park try_park(struct h2s_conn *h)
{
    struct srv_conn *c = h->c;
    reader_stop(h);
    vega__h2s_lock(h);
    bool idle = !h->reqs && !h->spawn && !h->up_frame && !vega_h2_conn_want_write(h->core);
    bool ended = h->rd_done && h->rd_rc != -ECANCELED;
    vega_tstamp expiry = vega_h2_conn_get_expiry(h->core);
    vega__h2s_unlock(h);
    if (ended)
        return PARK_END;
    if (idle) {
        /* what the socket has, without waiting: parking is safe only after a read that found
         * it empty (a park's wake is an edge) */
        vega_ssize n = vega_stream_read(c->stream, h->in, H2S_IN_CAP, 0);
        if (n == 0 || (n < 0 && n != -ETIMEDOUT))
            return PARK_END;
        if (n > 0) {
            if (feed(h, (size_t)n) < 0)
                return reader_start(h) < 0 ? PARK_END : PARK_AGAIN;
            idle = false;
        } else if (c->tls && vega_tls_has_buffered(c->stream)) {
            idle = false;
        }
    }
    if (!idle) {
        h->idle_since = 0;
        return reader_start(h) < 0 ? PARK_END : PARK_AGAIN;
    }
    /* parked, the connection holds its state alone: no task, no buffer of ours or the core's */
    vega__h2s_lock(h);
    vega_h2_conn_shrink(h->core);
    vega__h2s_unlock(h);
    buffers_put(h);
    vega_deadline dl = VEGA__MIN(h->idle_dl, (vega_deadline)expiry);
    return vega__srv_park(c, dl) ? PARK_DONE : PARK_END;
}

/* ---- the end --------------------------------------------------------------------------------- */

/* Reads and drops what the peer still sends for a while after our last frames, so that a reset
 * does not throw our GOAWAY away at the peer (as HTTP/1.1's lingering close). */
static void linger(struct h2s_conn *h)
{
    struct srv_conn *c = h->c;
    if (!c->stream || !h->in ||
        vega_stream_shutdown(c->stream, SHUT_WR, vega_deadline_in_ms(200)) < 0)
        return;
    size_t total = 0;
    vega_deadline dl = vega_deadline_in_ns(SRV_LINGER_NS);
    while (total < SRV_LINGER_MAX) {
        vega_ssize n = vega_stream_read(c->stream, h->in, H2S_IN_CAP, dl);
        if (n <= 0)
            break;
        total += (size_t)n;
    }
}

/* Sends a last GOAWAY when none went out yet and the socket still works. */
static void goodbye(struct h2s_conn *h)
{
    if (h->broken || !h->out || vega_task_is_cancelled())
        return;
    vega__h2s_lock(h);
    vega_h2_conn_info info;
    vega_h2_conn_get_info(h->core, &info);
    if (!info.goaway_sent)
        (void)vega_h2_submit_goaway(h->core, VEGA_H2_NO_ERROR, NULL, 0);
    vega_ssize n = vega_h2_conn_write(h->core, h->out, H2S_OUT_CAP, vega_now());
    vega__h2s_unlock(h);
    if (n > 0 &&
        vega_stream_write(h->c->stream, h->out, (size_t)n, NULL, vega_deadline_in_ms(1000)) < 0)
        h->broken = true;
}

static void close_conn(struct h2s_conn *h, int err)
{
    struct srv_conn *c = h->c;
    bool cancelled = err == -ECANCELED || vega_task_is_cancelled();
    reader_stop(h);
    vega__h2s_lock(h);
    bool peer_gone = h->broken || (h->rd_done && h->rd_rc < 0 && h->rd_rc != -ECANCELED &&
                                   h->rd_rc != VEGA_ERR_PROTO);
    vega_h2_error e;
    bool failed = vega_h2_conn_get_error(h->core, &e) && !e.remote;
    vega__h2s_unlock(h);
    if (!cancelled && !peer_gone)
        goodbye(h);
    vega__h2s_lock(h);
    h->dead = true;
    /* every stream ends (spans released, tasks woken) */
    vega_h2_conn_info info;
    vega_h2_conn_get_info(h->core, &info);
    if (info.streams_open)
        (void)vega_h2_submit_goaway(h->core, VEGA_H2_CANCEL, NULL, 0);
    vega__h2s_wake_all(h);
    if (cancelled || peer_gone)
        for (struct h2s_req *r = h->reqs; r; r = r->next)
            if (r->task)
                vega_task_cancel(r->task);
    vega__h2s_unlock(h);
    if (!cancelled && !peer_gone && failed)
        linger(h);
    /* the request tasks end by themselves (their exchange calls fail now); each one's last
     * touch of h is its count going down */
    while (atomic_load_explicit(&h->tasks_live, memory_order_acquire) > 0)
        if (vega_sleep_ms(1) < 0)
            (void)vega_yield();
    vega__srv_conn_free(c); /* frees h too, once unregistered */
}

/* ---- the connection task --------------------------------------------------------------------- */

static int run(struct h2s_conn *h)
{
    vega_http_server *srv = h->srv;
    int err = reader_start(h);
    while (err == 0) {
        vega_deadline dl;
        enum step st = step(h, &dl);
        if (st == STEP_MORE)
            continue;
        if (st == STEP_END)
            break;
        if (st == STEP_IDLE) {
            if (!h->c->sock) {
                dl = h->idle_dl; /* a caller's stream cannot park: wait in place */
            } else {
                vega_deadline at = h->idle_since + H2S_PARK_DELAY_NS;
                if (vega_now() >= at) {
                    enum park p = try_park(h);
                    if (p == PARK_DONE)
                        return 0;
                    if (p == PARK_END)
                        break;
                    continue;
                }
                dl = VEGA__MIN(dl, at);
            }
            dl = VEGA__MIN(dl, h->idle_dl);
            if (vega_now() >= h->idle_dl) {
                atomic_fetch_add_explicit(&srv->timeouts, 1, memory_order_relaxed);
                break;
            }
        }
        int rc = vega_notify_wait(&h->wake, dl);
        if (rc == -ECANCELED)
            err = rc;
    }
    close_conn(h, err);
    return err == -ECANCELED ? err : 0;
}

/* The idle deadline from now. */
static void idle_from_now(struct h2s_conn *h)
{
    h->idle_dl = vega_deadline_in_ns(h->srv->o.idle_timeout_ns);
}

int vega__h2s_start(struct srv_conn *c, uint8_t *up_frame, size_t up_len)
{
    vega_http_server *srv = c->srv;
    const vega_mem *m = srv->o.mem;
    struct h2s_conn *h = conn_new(c);
    struct srv_active *a = c->a;
    if (!h || buffers_get(h) < 0) {
        if (h) {
            c->h2 = h;
            vega__h2s_free(c);
        }
        vega__mem_free(m, up_frame);
        vega__srv_conn_free(c);
        return -ENOMEM;
    }
    pthread_mutex_lock(&vega__srv_shard(c)->lock); /* shutdown looks at c->h2 under it */
    c->h2 = h;
    pthread_mutex_unlock(&vega__srv_shard(c)->lock);
    h->up_frame = up_frame;
    h->up_len = up_len;
    idle_from_now(h);
    /* the bytes the HTTP/1.1 side read past what it used are the first input (the preface);
     * then its block goes back to the pool (pool.c; a grown buffer is freed) */
    int rc = feed_from(h, a->in + a->in_pos, a->in_end - a->in_pos);
    vega__srv_active_put(srv, a);
    c->a = NULL;
    (void)rc; /* an error queued a GOAWAY: the run writes it and ends */
    return run(h);
}

void vega__h2s_ready(struct srv_conn *c, int status)
{
    struct h2s_conn *h = c->h2;
    vega_http_server *srv = c->srv;
    if (!c->stream && vega__srv_stream_get(srv, c->sock, &c->stream) < 0) {
        c->stream = NULL;
        vega__srv_conn_free(c);
        return;
    }
    if (buffers_get(h) < 0) {
        close_conn(h, -ENOMEM);
        return;
    }
    if (status == -ECANCELED) {
        close_conn(h, -ECANCELED);
        return;
    }
    if (status == -ETIMEDOUT && vega_now() >= h->idle_dl) {
        /* idle too long: GOAWAY and close */
        atomic_fetch_add_explicit(&srv->timeouts, 1, memory_order_relaxed);
        close_conn(h, 0);
        return;
    }
    h->idle_since = 0;
    (void)run(h);
}
