/* SPDX-License-Identifier: MIT */
/* The QUIC connection's event queue (vega_quic_conn_next_event): a ring that grows, events that
 * own a copy of their data, and the one event that must not be lost (HANDSHAKE_DONE). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

int vega__quic_ev_push(vega_quic_conn *c, const vega_quic_event *ev)
{
    if (c->ev.n == c->ev.cap) {
        size_t cap = c->ev.cap ? c->ev.cap * 2 : 16;
        vega_quic_event *n = vega__quic_malloc(c->cfg.mem, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        for (size_t i = 0; i < c->ev.n; i++)
            n[i] = c->ev.q[(c->ev.head + i) % c->ev.cap];
        vega__quic_free(c->cfg.mem, c->ev.q);
        c->ev.q = n;
        c->ev.cap = cap;
        c->ev.head = 0;
    }
    c->ev.q[(c->ev.head + c->ev.n) % c->ev.cap] = *ev;
    c->ev.n++;
    return 0;
}

/* Queues an event that owns its data, replacing the data of a queued event of the same type
 * instead of adding another: only the latest token or session matters, and a peer repeating
 * NEW_TOKEN or NewSessionTicket must not grow the queue (each copy is ours to free). */
int vega__quic_ev_push_latest(vega_quic_conn *c, const vega_quic_event *ev)
{
    for (size_t i = 0; i < c->ev.n; i++) {
        vega_quic_event *q = &c->ev.q[(c->ev.head + i) % c->ev.cap];
        if (q->type == ev->type) {
            vega__quic_free(c->cfg.mem, (void *)q->data);
            q->data = ev->data;
            q->len = ev->len;
            return 0;
        }
    }
    return vega__quic_ev_push(c, ev);
}

bool vega_quic_conn_next_event(vega_quic_conn *c, vega_quic_event *ev)
{
    vega__quic_free(c->cfg.mem, c->ev.data);
    c->ev.data = NULL;
    if (c->hs.ev_owed) {
        vega_quic_event hs = {.type = VEGA_QUIC_EV_HANDSHAKE_DONE};
        c->hs.ev_owed = vega__quic_ev_push(c, &hs) < 0;
    }
    while (c->ev.n) {
        *ev = c->ev.q[c->ev.head];
        c->ev.head = (c->ev.head + 1) % c->ev.cap;
        c->ev.n--;
        switch (ev->type) {
        case VEGA_QUIC_EV_DATAGRAM: {
            if (!c->dgram.recv_n)
                continue;
            struct vega__quic_dgram *d = &c->dgram.recv[c->dgram.recv_head];
            c->dgram.recv_head = (c->dgram.recv_head + 1) % c->cfg.max_datagram_queue;
            c->dgram.recv_n--;
            c->ev.data = d->data;
            ev->data = d->data;
            ev->len = d->len;
            break;
        }
        case VEGA_QUIC_EV_STREAM_READABLE: {
            struct vega__quic_stream *s = vega__quic_stream_get(c, ev->stream_id);
            if (!s)
                continue;
            s->readable_ev = false;
            break;
        }
        case VEGA_QUIC_EV_SESSION:
        case VEGA_QUIC_EV_NEW_TOKEN:
        case VEGA_QUIC_EV_CLOSED:
            c->ev.data = (uint8_t *)ev->data; /* owned copies, freed on the next call */
            break;
        default:
            break;
        }
        return true;
    }
    return false;
}

int vega__quic_ev_simple(vega_quic_conn *c, vega_quic_event_type t, uint64_t id, uint64_t code)
{
    vega_quic_event ev = {.type = t, .stream_id = id, .error_code = code};
    return vega__quic_ev_push(c, &ev);
}

int vega__quic_ev_copy(vega_quic_conn *c, vega_quic_event_type t, const uint8_t *d, size_t len)
{
    uint8_t *copy = vega__quic_malloc(c->cfg.mem, len ? len : 1);
    if (!copy)
        return -ENOMEM;
    if (len)
        memcpy(copy, d, len);
    vega_quic_event ev = {.type = t, .data = copy, .len = len};
    int rc = vega__quic_ev_push_latest(c, &ev);
    if (rc < 0)
        vega__quic_free(c->cfg.mem, copy);
    return rc;
}

void vega__quic_ev_closed(vega_quic_conn *c, uint64_t code, bool app, bool local, const char *why)
{
    size_t n = why ? strlen(why) : 0;
    uint8_t *copy = vega__quic_malloc(c->cfg.mem, n + 1);
    vega_quic_event ev = {
        .type = VEGA_QUIC_EV_CLOSED, .error_code = code, .app = app, .local = local};
    if (copy) {
        memcpy(copy, why ? why : "", n + 1);
        ev.data = copy;
        ev.len = n;
    }
    if (vega__quic_ev_push(c, &ev) < 0)
        vega__quic_free(c->cfg.mem, copy);
}

/* Frees the queue and the data its events own (vega_quic_conn_free). */
void vega__quic_ev_fini(vega_quic_conn *c)
{
    const vega_quic_mem *mem = c->cfg.mem;
    while (c->ev.n) {
        vega_quic_event *e = &c->ev.q[c->ev.head];
        if (e->type == VEGA_QUIC_EV_SESSION || e->type == VEGA_QUIC_EV_NEW_TOKEN ||
            e->type == VEGA_QUIC_EV_CLOSED)
            vega__quic_free(mem, (void *)e->data);
        c->ev.head = (c->ev.head + 1) % c->ev.cap;
        c->ev.n--;
    }
    vega__quic_free(mem, c->ev.q);
    vega__quic_free(mem, c->ev.data);
}
