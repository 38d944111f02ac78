/* SPDX-License-Identifier: MIT */
/* What the stream sessions (echo.c, http.c, ws.c) share: the connect, fail and back-off loop of
 * a connection, and -R's per-connection schedule with its kernel timer. */
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
