/* SPDX-License-Identifier: MIT */
/* What the sessions share: the connect, fail and back-off rules of a connection (echo.c, http.c,
 * ws.c), the whole loop of a multiplexed one (h2.c, h3.c), and -R's per-connection schedule with
 * its kernel timer. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "load.h"

/* Without -d nothing else bounds a connection that keeps failing: it stops after this many
 * failures in a row. */
#define GIVE_UP_AFTER 20
/* Pause after a failed connect, doubling up to the maximum. */
#define BACKOFF_MIN_MS 10
#define BACKOFF_MAX_MS 1000

bool load_backoff(struct load_run *r, unsigned fails)
{
    unsigned shift = fails < 8 ? fails : 7;
    uint64_t ms = (uint64_t)BACKOFF_MIN_MS << shift;
    if (ms > BACKOFF_MAX_MS)
        ms = BACKOFF_MAX_MS;
    vega_deadline dl = vega_deadline_in_ms(ms);
    if (dl > r->end)
        return false;
    return vega_sleep_until(dl) == 0;
}

bool load_conn_failed(struct load_run *r, struct load_retry *rt)
{
    rt->fails++;
    if (r->end == VEGA_DEADLINE_NEVER && rt->fails >= GIVE_UP_AFTER) {
        atomic_fetch_add(&r->gave_up, 1);
        return false;
    }
    return true;
}

bool load_conn_open_retry(struct load_run *r, struct load_retry *rt,
                          enum load_step (*open)(void *conn), void *conn)
{
    for (;;) {
        enum load_step s = open(conn);
        if (s == LOAD_STEP_OK)
            return true;
        if (s == LOAD_STEP_STOP)
            return false;
        rt->fails++;
        /* A connection that never connected gives up at once: the target is wrong or down,
         * and every other connection will say the same. */
        if (!rt->ever || (r->end == VEGA_DEADLINE_NEVER && rt->fails >= GIVE_UP_AFTER)) {
            atomic_fetch_add(&r->gave_up, 1);
            if (!rt->ever)
                atomic_fetch_add(&r->never_connected, 1);
            return false;
        }
        if (!load_backoff(r, rt->fails))
            return false;
    }
}

void load_mux_loop(struct load_run *r, struct load_retry *rt, const struct load_mux_ops *ops,
                   void *conn)
{
    for (;;) {
        if (!ops->is_open(conn) && !load_conn_open_retry(r, rt, ops->open, conn))
            return;
        enum load_step s = ops->serve(conn);
        ops->close(conn, s == LOAD_STEP_STOP || s == LOAD_STEP_CLOSE);
        bool answered = ops->responses(conn) > 0;
        if (answered) /* as http.c: failures in a row */
            rt->fails = 0;
        if (s == LOAD_STEP_STOP)
            return;
        if (s == LOAD_STEP_CLOSE) {
            rt->fails = 0;
            continue;
        }
        if (!load_conn_failed(r, rt))
            return;
        /* A connection that failed before any response: do not hammer the server. */
        if (!answered && !load_backoff(r, rt->fails))
            return;
    }
}

void load_conn_no_memory(struct load_run *r)
{
    load_error(r, LOAD_ERR_CONNECT, -ENOMEM);
    atomic_fetch_add(&r->gave_up, 1);
    atomic_fetch_add(&r->never_connected, 1);
}

int load_tls_handshake(struct load_run *r, vega_sock *sock, const char *server_name,
                       vega_stream **tls, vega_deadline dl)
{
    const struct load_opts *o = r->o;
    vega_tls_opts to;
    vega_tls_opts_init(&to);
    to.server_name = server_name;
    to.port = o->port ? (uint16_t)atoi(o->port) : 0;
    int e = vega_tls_stream_from_sock(tls, sock, VEGA_STREAM_BORROW, r->tls, &to);
    return e == 0 ? vega_tls_handshake(*tls, dl) : e;
}

enum load_step load_step_failed(int code, bool at_end, enum load_kind *kind)
{
    if (code == -ECANCELED || (code == -ETIMEDOUT && at_end))
        return LOAD_STEP_STOP;
    if (code == -ETIMEDOUT && *kind != LOAD_ERR_CONNECT)
        *kind = LOAD_ERR_TIMEOUT;
    return LOAD_STEP_FAIL;
}

enum load_step load_tls_failed(struct load_run *r, int e, vega_stream *tls, bool at_end)
{
    enum load_kind kind = LOAD_ERR_CONNECT;
    if (load_step_failed(e, at_end, &kind) == LOAD_STEP_STOP)
        return LOAD_STEP_STOP;
    load_error_msg(r, kind, e, tls ? vega_tls_last_error(tls) : NULL);
    return LOAD_STEP_FAIL;
}

void load_pacer_init(struct load_pacer *p, struct load_run *r, unsigned index)
{
    *p = (struct load_pacer){.r = r, .index = index, .tfd = -1};
    if (r->o->rate) {
        p->tfd = load_timer_open(&p->mono_offset);
        p->next = load_pace(r, 0, index);
    }
}

/* Waits until t (a vega_now() time): 0, or -ECANCELED. */
static int wait_until(struct load_pacer *p, vega_tstamp t)
{
    if (p->tfd < 0 || load_timer_arm(p->tfd, p->mono_offset, t) < 0)
        return vega_sleep_until(t);
    uint64_t ticks;
    vega_ssize n = vega_fd_read(p->tfd, &ticks, sizeof(ticks), p->r->end);
    if (n == -ECANCELED)
        return -ECANCELED;
    /* Past the end of the run, or a failed read: the runtime's timer instead. */
    return n == (vega_ssize)sizeof(ticks) ? 0 : vega_sleep_until(t);
}

bool load_pacer_wait(struct load_pacer *p, vega_tstamp *intended)
{
    if (p->next >= p->r->end)
        return false;
    if (vega_now() < p->next && wait_until(p, p->next) < 0)
        return false;
    *intended = p->next;
    p->next = load_pace(p->r, ++p->sent, p->index);
    return true;
}

void load_pacer_fini(struct load_pacer *p)
{
    if (p->tfd >= 0)
        close(p->tfd);
    p->tfd = -1;
}
