/* SPDX-License-Identifier: MIT */
/* The send task of an endpoint socket, its only waiting writer: it runs the timers of the
 * connections homed on the socket (a min-heap by expiry: loss detection, ACK delay, pacing,
 * idle, closing; RFC 9002) and flushes the connections queued as having something to send,
 * each in GSO trains (UDP_SEGMENT) batched with sendmmsg, a budget per turn so one bulk
 * transfer does not hold the others back. It also tears ended connections down. */
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>

#include "ep_int.h"

/* ---- the timer heap -------------------------------------------------------------------------- */

static void heap_swap(struct ep_sock *s, size_t a, size_t b)
{
    struct vega_quic_ep_conn *t = s->heap[a];
    s->heap[a] = s->heap[b];
    s->heap[b] = t;
    s->heap[a]->heap_idx = a;
    s->heap[b]->heap_idx = b;
}

static void heap_up(struct ep_sock *s, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (s->heap[p]->expiry <= s->heap[i]->expiry)
            break;
        heap_swap(s, i, p);
        i = p;
    }
}

static void heap_down(struct ep_sock *s, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->heap_len && s->heap[l]->expiry < s->heap[m]->expiry)
            m = l;
        if (r < s->heap_len && s->heap[r]->expiry < s->heap[m]->expiry)
            m = r;
        if (m == i)
            return;
        heap_swap(s, i, m);
        i = m;
    }
}

static void heap_remove(struct ep_sock *s, struct vega_quic_ep_conn *c)
{
    size_t i = c->heap_idx;
    if (i == SIZE_MAX)
        return;
    c->heap_idx = SIZE_MAX;
    s->heap_len--;
    if (i < s->heap_len) {
        s->heap[i] = s->heap[s->heap_len];
        s->heap[i]->heap_idx = i;
        heap_down(s, i);
        heap_up(s, i);
    }
    /* A flood's high water is given back: a quarter full halves (64 entries stay); a shrink
     * that fails keeps the larger array. */
    if (s->heap_cap > 64 && s->heap_len * 4 < s->heap_cap) {
        void *p = vega__mem_realloc(s->ep->mem, s->heap, s->heap_cap / 2 * sizeof *s->heap);
        if (p) {
            s->heap = p;
            s->heap_cap /= 2;
        }
    }
}

/* Sets c's expiry (UINT64_MAX: no timer). A heap that cannot grow leaves c out: it is then
 * run at its next wake-up only (datagrams or writes), never lost for good since the heap is
 * retried at every flush. */
static void heap_set(struct ep_sock *s, struct vega_quic_ep_conn *c, uint64_t expiry)
{
    c->expiry = expiry;
    if (expiry == UINT64_MAX) {
        heap_remove(s, c);
        return;
    }
    if (c->heap_idx != SIZE_MAX) {
        heap_down(s, c->heap_idx);
        heap_up(s, c->heap_idx);
        return;
    }
    if (s->heap_len == s->heap_cap) {
        size_t cap = s->heap_cap ? s->heap_cap * 2 : 64;
        void *p = vega__mem_realloc(s->ep->mem, s->heap, cap * sizeof *s->heap);
        if (!p)
            return;
        s->heap = p;
        s->heap_cap = cap;
    }
    c->heap_idx = s->heap_len;
    s->heap[s->heap_len++] = c;
    heap_up(s, c->heap_idx);
}

/* ---- sending -----------------------------------------------------------------------------------
 */

struct txq {
    struct ep_sock *s;
    size_t n; /* messages filled */
};

static void txq_send(struct txq *q)
{
    struct ep_sock *s = q->s;
    size_t done = 0;
    while (done < q->n) {
        /* a run of messages that leave by the same socket (two during a migration) */
        size_t run = 1;
        while (done + run < q->n && s->tx_via[done + run] == s->tx_via[done])
            run++;
        int r = vega_udp_send_batch(s->tx_via[done], s->tx_msgs + done, run, VEGA_DEADLINE_NEVER);
        if (r <= 0) {
            if (r == -ECANCELED)
                break;
            done++; /* this one cannot go (-EMSGSIZE, unreachable ...): lost, as UDP may be */
            continue;
        }
        for (size_t i = done; i < done + (size_t)r; i++) {
            vega_udp_msg *m = &s->tx_msgs[i];
            size_t dgrams = m->segment_size ? (m->len + m->segment_size - 1) / m->segment_size : 1;
            atomic_fetch_add_explicit(&s->ep->st_dgrams_out, dgrams, memory_order_relaxed);
            atomic_fetch_add_explicit(&s->ep->st_bytes_out, m->len, memory_order_relaxed);
        }
        done += (size_t)r;
    }
    q->n = 0;
}

/* Writes c's datagrams into the queue (c locked) until the core has nothing more now or the
 * budget is spent. Returns true when the budget ran out (c has more to send). */
static bool write_conn(struct txq *q, struct vega_quic_ep_conn *c, uint64_t now)
{
    struct ep_sock *s = q->s;
    size_t sent = 0;
    for (;;) {
        if (q->n == s->tx_n)
            return true; /* the batch is full: send it (unlocked) and come back */
        vega_udp_msg *m = &s->tx_msgs[q->n];
        uint8_t *buf = s->tx_buf + q->n * EP_TX_CAP;
        vega_quic_path p;
        uint8_t ecn = 0;
        size_t seg = 0;
        vega_ssize w =
            vega_quic_conn_write_gso(c->qc, &p, &ecn, buf, EP_TX_CAP, EP_TX_SEGS, &seg, now);
        if (w <= 0) {
            /* events the write raised (a close) may let the application write more */
            vega__ep_conn_after(c);
            if (w < 0 || c->ended)
                return false;
            w = vega_quic_conn_write_gso(c->qc, &p, &ecn, buf, EP_TX_CAP, EP_TX_SEGS, &seg, now);
            if (w <= 0)
                return false;
        }
        memset(m, 0, sizeof *m);
        s->tx_via[q->n] = c->mig ? vega__ep_migrate_via(s, c, &p) : s->sock;
        m->buf = buf;
        m->len = (size_t)w;
        memcpy(&m->addr.ss, &p.remote, p.remote_len);
        m->addr.len = p.remote_len;
        if (s->wildcard && p.local_len) {
            memcpy(&m->local.ss, &p.local, p.local_len);
            m->local.len = p.local_len;
        }
        m->ecn = ecn;
        m->segment_size = (size_t)w > seg ? (uint16_t)seg : 0;
        q->n++;
        sent += (size_t)w;
        if (sent >= EP_FLUSH_BUDGET)
            return true;
    }
}

/* The end of a connection homed here (c locked): out of the heap, torn down. */
static void end_conn(struct ep_sock *s, struct vega_quic_ep_conn *c)
{
    heap_remove(s, c);
    vega__ep_migrate_abort(c);
    vega__ep_conn_teardown(c);
    if (s->owner == c)
        atomic_store(&s->stop, true);
}

/* Takes c off s's dirty list if it is there (c locked; s's send task). */
static void dirty_unlink(struct ep_sock *s, struct vega_quic_ep_conn *c)
{
    bool found = false;
    vega__spin_lock(&s->dirty_lock);
    struct vega_quic_ep_conn **pp = &s->dirty_head, *prev = NULL;
    while (*pp && *pp != c) {
        prev = *pp;
        pp = &(*pp)->dirty_next;
    }
    if (*pp) {
        *pp = c->dirty_next;
        if (s->dirty_tail == c)
            s->dirty_tail = prev;
        found = true;
    }
    vega__spin_unlock(&s->dirty_lock);
    if (found) {
        atomic_store(&c->dirty, false);
        vega_quic_ep_conn_release(c); /* the list's: the caller holds another */
    }
}

/* Our migration's outcome is known (RFC 9000 §9): validated, c moves to the new socket, whose
 * send task runs it from now on, and this socket (the old path) closes as its tasks end;
 * failed, the core is back on the old path and the new socket closes. What was queued for c,
 * on either socket, goes first. Returns true when c moved. */
static bool settle_migration(struct txq *q, struct vega_quic_ep_conn *c)
{
    struct ep_sock *s = q->s, *m = c->mig;
    if (!m || c->mig_outcome == 0)
        return false;
    if (q->n > 0)
        txq_send(q);
    c->mig = NULL;
    if (c->mig_outcome < 0) {
        atomic_store(&m->stop, true);
        vega_notify_one(&m->tx_wake);
        return false;
    }
    heap_remove(s, c);
    dirty_unlink(s, c);
    c->home = m;
    atomic_store(&s->stop, true); /* this send task ends after this turn, then its receive task */
    vega__ep_conn_schedule(c);    /* on the new home: its send task re-arms c's timer */
    return true;
}

/* Runs c's timers if due, writes what it has, re-arms its timer. Returns true when c must be
 * flushed again (its budget ran out or the batch filled). */
static bool flush_conn(struct txq *q, struct vega_quic_ep_conn *c, bool *ended)
{
    struct ep_sock *s = q->s;
    *ended = false;
    if (vega__ep_conn_lock(c) < 0)
        return false;
    if (c->freed) {
        vega_mutex_unlock(&c->mu);
        return false;
    }
    uint64_t now = vega_now();
    bool more = false;
    if (!c->ended && c->qc) {
        if (atomic_exchange(&c->abandon, false)) {
            (void)vega_quic_conn_close(c->qc, VEGA_QUIC_CLOSE_TRANSPORT, VEGA_QUIC_NO_ERROR,
                                       atomic_load(&c->ep->shutting_down) ? "shutdown" : "");
            vega__ep_conn_after(c);
        }
        if (c->expiry <= now) {
            (void)vega_quic_conn_handle_expiry(c->qc, now);
            vega__ep_conn_after(c);
        }
        if (!c->ended && settle_migration(q, c)) {
            vega_mutex_unlock(&c->mu); /* c is its new home's now */
            return false;
        }
        if (!c->ended)
            more = write_conn(q, c, now);
        if (c->close.closed && !atomic_load(&c->close_flushed)) {
            atomic_store(&c->close_flushed,
                         true); /* vega_quic_endpoint_free waits for no more than this */
            vega_notify_all(&c->ep->idle_wake);
        }
    }
    if (c->ended) {
        end_conn(s, c);
        *ended = true;
        more = false;
    } else {
        heap_set(s, c, vega_quic_conn_expiry(c->qc));
    }
    vega_mutex_unlock(&c->mu);
    return more;
}

static struct vega_quic_ep_conn *take_dirty(struct ep_sock *s)
{
    vega__spin_lock(&s->dirty_lock);
    struct vega_quic_ep_conn *c = s->dirty_head;
    if (c) {
        s->dirty_head = c->dirty_next;
        if (!s->dirty_head)
            s->dirty_tail = NULL;
    }
    vega__spin_unlock(&s->dirty_lock);
    return c;
}

/* One flush of c: on ending, the endpoint's reference goes. */
static void service(struct txq *q, struct vega_quic_ep_conn *c)
{
    bool ended;
    bool more = flush_conn(q, c, &ended);
    if (q->n > 0 && (more || q->n == q->s->tx_n))
        txq_send(q);
    if (more)
        vega__ep_conn_schedule(c);
    if (ended)
        vega_quic_ep_conn_release(c); /* the endpoint's */
}

static void run_timers(struct txq *q)
{
    struct ep_sock *s = q->s;
    uint64_t now = vega_now();
    /* at most the connections due now: a connection re-armed in the past is run next turn */
    size_t todo = s->heap_len;
    while (todo-- > 0 && s->heap_len > 0 && s->heap[0]->expiry <= now) {
        struct vega_quic_ep_conn *c = s->heap[0];
        heap_remove(s, c);
        c->expiry = 0; /* due: flush_conn runs it */
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
        service(q, c);
        vega_quic_ep_conn_release(c);
    }
}

/* A client socket's last task out frees it (and ends its connection if the runtime's shutdown
 * cancelled the tasks before it ended). Server sockets are freed by vega_quic_endpoint_free. */
void vega__ep_sock_task_exit(struct ep_sock *s)
{
    if (!s->owner || atomic_fetch_sub_explicit(&s->live_tasks, 1, memory_order_acq_rel) != 1)
        return;
    struct vega_quic_endpoint *ep = s->ep;
    struct vega_quic_ep_conn *owner = s->owner, *c;
    if (vega_mutex_trylock(&owner->mu)) {
        /* not when the connection lives on another socket: this one was the old path or the
         * new one of a migration that failed */
        bool end = !owner->freed && owner->home == s;
        if (end)
            end_conn(s, owner);
        vega_mutex_unlock(&owner->mu);
        if (end)
            vega_quic_ep_conn_release(owner); /* the endpoint's */
    }
    while ((c = take_dirty(s))) {
        atomic_store(&c->dirty, false);
        vega_quic_ep_conn_release(c);
    }
    vega_task_detach(s->rx_task);
    vega_quic_ep_conn_release(owner); /* the socket's */
    vega__ep_sock_free(s);
    /* under conns_lock: vega_quic_endpoint_free takes it once the count is zero, so it cannot
     * free ep while this wake still touches it */
    vega__spin_lock(&ep->conns_lock);
    atomic_fetch_sub_explicit(&ep->client_socks, 1, memory_order_acq_rel);
    vega_notify_all(&ep->idle_wake);
    vega__spin_unlock(&ep->conns_lock);
}

/* The runtime's timers tick in milliseconds: a pacer that asks for its next burst in 300 us
 * would wait up to 2 ms, and a fast transfer would crawl at one burst per tick. A wait shorter
 * than this goes through the socket's timerfd instead (not cancelled by a wake-up: what a
 * wake-up brings waits that long at most, and the notify's stored permit is seen right after). */
#define EP_FINE_WAIT_NS (2 * VEGA_NS_PER_MS)

/* Waits until dl on the real monotonic clock. Returns false when it could not (the paused
 * clock of tests, no timerfd): the caller waits on the runtime's wheel. */
static bool fine_wait(struct ep_sock *s, uint64_t dl)
{
    struct timespec ts;
    if (s->timer_fd < 0 || clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
        return false;
    uint64_t mono = (uint64_t)ts.tv_sec * VEGA_NS_PER_S + (uint64_t)ts.tv_nsec;
    uint64_t now = vega_now();
    if (mono - now > VEGA_NS_PER_MS && now - mono > VEGA_NS_PER_MS)
        return false;                /* vega_now() is not this clock (paused) */
    uint64_t at = dl + (mono - now); /* dl on CLOCK_MONOTONIC */
    struct itimerspec its = {.it_value = {.tv_sec = (time_t)(at / VEGA_NS_PER_S),
                                          .tv_nsec = (long)(at % VEGA_NS_PER_S)}};
    if (timerfd_settime(s->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
        return false;
    uint64_t ticks;
    vega_ssize n = vega_fd_read(s->timer_fd, &ticks, sizeof ticks, vega_deadline_in_ms(100));
    return n == (vega_ssize)sizeof ticks || n == -ECANCELED;
}

void *vega__ep_tx_task(void *arg)
{
    struct ep_sock *s = arg;
    struct txq q = {.s = s, .n = 0};
    for (size_t i = 0; i < s->tx_n; i++)
        s->tx_msgs[i].buf = s->tx_buf + i * EP_TX_CAP;
    while (!atomic_load(&s->stop)) {
        vega_deadline dl = s->heap_len ? s->heap[0]->expiry : VEGA_DEADLINE_NEVER;
        uint64_t now = vega_now();
        if (dl > now && dl - now < EP_FINE_WAIT_NS && fine_wait(s, dl)) {
            if (vega_task_is_cancelled())
                break;
        } else if (vega_notify_wait(&s->tx_wake, dl) == -ECANCELED) {
            break;
        }
        run_timers(&q);
        struct vega_quic_ep_conn *c;
        /* what is queued now; what flushes re-queue waits for the next turn */
        size_t budget = 4096;
        while (budget-- > 0 && (c = take_dirty(s))) {
            atomic_store_explicit(&c->dirty, false, memory_order_release);
            service(&q, c);
            vega_quic_ep_conn_release(c); /* the dirty list's */
        }
        if (q.n > 0)
            txq_send(&q);
        vega__spin_lock(&s->dirty_lock);
        bool more = s->dirty_head != NULL;
        vega__spin_unlock(&s->dirty_lock);
        if (more)
            vega_notify_one(&s->tx_wake);
    }
    if (s->owner && atomic_load(&s->stop))
        vega_task_cancel(s->rx_task); /* its connection ended: the receive task goes too */
    vega__ep_sock_task_exit(s);
    return NULL;
}
