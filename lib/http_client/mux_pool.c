/* SPDX-License-Identifier: MIT */
/* The pool of the client's multiplexed connections, HTTP/2 and HTTP/3 alike: one per origin
 * shared by its requests (RFC 9113 §9.1.1, RFC 9114 §3.3), requests waiting for the one being
 * made rather than making their own, and idle ones that can serve no one any more closed. */
#include <string.h>

#include "client_int.h"

void vega__hc_mux_init(struct hc_mux *m, const struct hc_mux_ops *ops, const struct hc_key *k,
                       unsigned refs)
{
    m->ops = ops;
    m->key = *k;
    atomic_init(&m->refs, refs);
    atomic_init(&m->usable, false);
    m->state = HC_MUX_CONNECTING;
}

void vega__hc_mux_release(struct hc_mux *m)
{
    if (m && atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1)
        m->ops->free(m);
}

/* c->mu held */
static void list_unlink(struct hc_mux_pool *p, struct hc_mux *m)
{
    if (m->prev)
        m->prev->next = m->next;
    else if (p->head == m)
        p->head = m->next;
    if (m->next)
        m->next->prev = m->prev;
    m->prev = m->next = NULL;
    p->n--;
}

static void list_push(struct hc_mux_pool *p, struct hc_mux *m)
{
    m->prev = NULL;
    m->next = p->head;
    if (p->head)
        p->head->prev = m;
    p->head = m;
    p->n++;
}

static bool same_origin(const struct hc_mux *m, const struct hc_key *k)
{
    return m->key.port == k->port && m->key.tls == k->tls && strcmp(m->key.host, k->host) == 0;
}

/* c->mu held: idle connections that can serve no one any more (ended, after GOAWAY, idle too
 * long, beyond the caps) out of the list into *dead (linked by next). */
static void prune(vega_http_client *c, struct hc_mux_pool *p, vega_tstamp now, struct hc_mux **dead)
{
    size_t ready = 0;
    for (struct hc_mux *m = p->head, *nx; m; m = nx) {
        nx = m->next;
        if (m->state != HC_MUX_READY || m->active)
            continue;
        bool drop = !atomic_load(&m->usable) || now - m->idle_since > c->o.idle_timeout_ns ||
                    c->o.max_idle_per_origin == 0 || ++ready > p->ops->max_conns;
        if (!drop)
            continue;
        list_unlink(p, m);
        m->next = *dead;
        *dead = m;
    }
}

/* Drops the pool's references: each connection closes (HTTP/2's GOAWAY, HTTP/3's close). */
static void close_all(struct hc_mux *dead)
{
    while (dead) {
        struct hc_mux *m = dead;
        dead = m->next;
        m->ops->close(m);
        vega__hc_mux_release(m); /* the pool's reference */
    }
}

int vega__hc_mux_take(vega_http_client *c, struct hc_mux_pool *p, const struct hc_key *k,
                      vega_deadline dl, struct hc_mux **out)
{
    *out = NULL;
    for (;;) {
        struct hc_mux *found = NULL, *wait_on = NULL, *dead = NULL;
        struct hc_mux_waiter w;
        pthread_mutex_lock(&c->mu);
        prune(c, p, vega_now(), &dead);
        for (struct hc_mux *m = p->head; m; m = m->next) {
            if (!same_origin(m, k))
                continue;
            if (m->state == HC_MUX_READY && atomic_load(&m->usable)) {
                found = m;
                break;
            }
            if (m->state == HC_MUX_CONNECTING && !wait_on)
                wait_on = m;
        }
        if (found) {
            atomic_fetch_add_explicit(&found->refs, 1, memory_order_relaxed);
            found->active++;
        } else if (wait_on) {
            /* one connection per origin: wait for the one being made (an HTTP/2 one may turn
             * out HTTP/1.1: then each goes its own way) */
            atomic_fetch_add_explicit(&wait_on->refs, 1, memory_order_relaxed);
            vega_notify_init(&w.wake);
            w.next = wait_on->waiters;
            wait_on->waiters = &w;
        }
        pthread_mutex_unlock(&c->mu);
        close_all(dead);
        if (found) {
            *out = found;
            return 1;
        }
        if (!wait_on)
            return 0;
        int rc = vega_notify_wait(&w.wake, dl);
        pthread_mutex_lock(&c->mu);
        for (struct hc_mux_waiter **pp = &wait_on->waiters; *pp; pp = &(*pp)->next)
            if (*pp == &w) {
                *pp = w.next;
                break;
            }
        /* FAILED with no code: ALPN chose HTTP/1.1 (HTTP/2 only; an HTTP/3 one fails with one) */
        bool h1 = wait_on->state == HC_MUX_FAILED && wait_on->conn_err == 0;
        pthread_mutex_unlock(&c->mu);
        vega_notify_fini(&w.wake);
        vega__hc_mux_release(wait_on);
        if (rc < 0)
            return rc;
        if (h1)
            return 0; /* the origin speaks HTTP/1.1 */
    }
}

/* c->mu held: a connection to k's origin a request may join (usable, or being made). */
static bool joinable(struct hc_mux_pool *p, const struct hc_key *k)
{
    for (struct hc_mux *x = p->head; x; x = x->next)
        if (same_origin(x, k) && (x->state == HC_MUX_CONNECTING ||
                                  (x->state == HC_MUX_READY && atomic_load(&x->usable))))
            return true;
    return false;
}

int vega__hc_mux_join(vega_http_client *c, struct hc_mux_pool *p, struct hc_mux *m, bool fresh,
                      vega_deadline dl, struct hc_mux **other)
{
    *other = NULL;
    /* the look and the push in one hold of the lock: requests starting together make one
     * connection, not one each */
    for (;;) {
        pthread_mutex_lock(&c->mu);
        if (fresh || !joinable(p, &m->key)) {
            list_push(p, m);
            pthread_mutex_unlock(&c->mu);
            return 0;
        }
        pthread_mutex_unlock(&c->mu);
        int rc = vega__hc_mux_take(c, p, &m->key, dl, other);
        if (rc != 0)
            return rc;
        if (m->ops->fresh_after_wait)
            fresh = true;
    }
}

void vega__hc_mux_connect_done(vega_http_client *c, struct hc_mux_pool *p, struct hc_mux *m,
                               bool ready, int err)
{
    pthread_mutex_lock(&c->mu);
    if (ready) {
        m->state = HC_MUX_READY;
        m->active = 1; /* the request that made it */
    } else {
        m->state = HC_MUX_FAILED;
        m->conn_err = err;
        list_unlink(p, m);
        m->next = NULL;
    }
    for (struct hc_mux_waiter *w = m->waiters; w; w = w->next)
        vega_notify_one(&w->wake);
    m->waiters = NULL;
    pthread_mutex_unlock(&c->mu);
    if (!ready)
        vega__hc_mux_release(m); /* the pool's reference */
}

void vega__hc_mux_push_ready(vega_http_client *c, struct hc_mux_pool *p, struct hc_mux *m)
{
    pthread_mutex_lock(&c->mu);
    m->state = HC_MUX_READY;
    m->active = 1;
    list_push(p, m);
    pthread_mutex_unlock(&c->mu);
}

void vega__hc_mux_done(vega_http_client *c, struct hc_mux *m)
{
    pthread_mutex_lock(&c->mu);
    if (m->active)
        m->active--;
    m->idle_since = vega_now();
    pthread_mutex_unlock(&c->mu);
}

void vega__hc_mux_shutdown(vega_http_client *c, struct hc_mux_pool *p)
{
    struct hc_mux *all = NULL;
    pthread_mutex_lock(&c->mu);
    while (p->head) {
        struct hc_mux *m = p->head;
        list_unlink(p, m);
        m->next = all;
        all = m;
    }
    pthread_mutex_unlock(&c->mu);
    close_all(all);
}
