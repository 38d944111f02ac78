/* SPDX-License-Identifier: MIT */
/* The receive task of an endpoint socket: batches of datagrams (GRO trains split back into
 * datagrams) routed to their connection by Destination Connection ID (RFC 9000 §5.2); what
 * no connection takes is a new connection's first Initial (with Version Negotiation §6, Retry
 * §8.1.2, tokens §8.1.3 and the endpoint's bounds), or answered with a Stateless Reset (§10.3),
 * or dropped. */
#include <stdio.h>
#include <string.h>

#include <vega/crypto.h>

#include "ep_int.h"

struct dgram {
    uint8_t *p;
    size_t len;
    const vega_addr *from;
    const vega_addr *local; /* the address it came to (the socket's own without pktinfo) */
    uint8_t ecn;
};

static void drop(struct vega_quic_endpoint *ep)
{
    atomic_fetch_add_explicit(&ep->st_dropped, 1, memory_order_relaxed);
}

static void to_path(vega_quic_path *p, const struct dgram *d)
{
    memset(p, 0, sizeof *p);
    memcpy(&p->local, &d->local->ss, d->local->len);
    p->local_len = d->local->len;
    memcpy(&p->remote, &d->from->ss, d->from->len);
    p->remote_len = d->from->len;
}

/* Feeds d to the connection c leads to. */
static void conn_input(struct vega_quic_ep_conn *c, struct dgram *d, uint64_t now)
{
    if (vega__ep_conn_lock(c) < 0)
        return;
    if (c->qc && !c->ended) {
        vega_quic_path p;
        to_path(&p, d);
        (void)vega_quic_conn_read(c->qc, &p, d->ecn, d->p, d->len, now);
        vega__ep_conn_after(c);
    }
    vega__ep_conn_unlock(c, true);
}

/* The settings of a new connection: the template, with what the endpoint fixes. */
int vega__ep_conn_opts(const struct vega_quic_endpoint *ep, struct vega_quic_ep_conn *c,
                       vega_quic_opts *q)
{
    *q = ep->o.quic;
    q->scid_len = EP_CID_LEN;
    q->reset_key = ep->reset_key;
    q->wall_ms = vega__ep_wall_ms();
    if (!q->mem && ep->o.mem)
        q->mem = &ep->qmem;
    if (ep->o.qlog_dir) {
        q->qlog = NULL;
        q->qlog_user = NULL;
        if (c)
            return vega__ep_qlog_new(c, q);
    }
    return 0;
}

/* ---- answers without a connection ------------------------------------------------------------ */

/* Answers sent without a connection (stateless resets, Version Negotiation) share one budget of
 * max_resets_per_s a second: a flood of junk gets that many answers at most, whatever it holds.
 * Returns false (and counts a drop) when this second's budget is spent. */
static bool stateless_budget(struct vega_quic_endpoint *ep, uint64_t now)
{
    bool ok = false;
    vega__spin_lock(&ep->reset_lock);
    if (now - ep->reset_window_ns >= VEGA_NS_PER_S || now < ep->reset_window_ns) {
        ep->reset_window_ns = now;
        ep->resets_in_window = 0;
    }
    if (ep->resets_in_window < ep->o.max_resets_per_s) {
        ep->resets_in_window++;
        ok = true;
    }
    vega__spin_unlock(&ep->reset_lock);
    if (!ok)
        drop(ep);
    return ok;
}

static void send_vn(struct ep_sock *s, const vega_quic_hdr *h, const struct dgram *d, uint64_t now)
{
    static const uint32_t versions[] = {VEGA_QUIC_V1, VEGA_QUIC_V2};
    if (!stateless_budget(s->ep, now))
        return;
    uint8_t out[256], unused = 0;
    (void)vega_crypto_random(&unused, 1);
    vega_ssize w = vega_quic_vn_write(out, sizeof out, unused, h->scid, h->scid_len, h->dcid,
                                      h->dcid_len, versions, 2);
    if (w > 0) {
        vega__ep_sock_send_one(s, out, (size_t)w, d->from, d->local);
        atomic_fetch_add_explicit(&s->ep->st_vn, 1, memory_order_relaxed);
    }
}

static void send_retry(struct ep_sock *s, const vega_quic_hdr *h, const struct dgram *d)
{
    uint8_t rscid[EP_CID_LEN], tok[128], out[512];
    if (vega_crypto_random(rscid, sizeof rscid) < 0)
        return;
    /* the client's next Initial carries this ID: it must route as the connection's will
     * (vega_quic_opts.scid_prefix; the endpoint checked it is shorter than EP_CID_LEN) */
    memcpy(rscid, s->ep->o.quic.scid_prefix, s->ep->o.quic.scid_prefix_len);
    size_t n = vega__ep_retry_token(s->ep, d->from, h->dcid, h->dcid_len, rscid, sizeof rscid, tok,
                                    sizeof tok);
    if (!n)
        return;
    vega_quic_hdr r = {.type = VEGA_QUIC_PKT_RETRY,
                       .version = h->version,
                       .dcid = h->scid,
                       .dcid_len = h->scid_len,
                       .scid = rscid,
                       .scid_len = sizeof rscid,
                       .token = tok,
                       .token_len = n};
    vega_ssize w = vega_quic_retry_write(out, sizeof out, &r, 0, h->dcid, h->dcid_len);
    if (w > 0) {
        vega__ep_sock_send_one(s, out, (size_t)w, d->from, d->local);
        atomic_fetch_add_explicit(&s->ep->st_retries, 1, memory_order_relaxed);
    }
}

/* Answers an Initial with a CONNECTION_CLOSE in an Initial packet, from a connection made for
 * that alone (the close needs the client's Initial keys; nothing of the handshake is done). */
static void send_close(struct ep_sock *s, const vega_quic_hdr *h, const struct dgram *d,
                       uint64_t code, const char *why, uint64_t now)
{
    vega_quic_opts q;
    (void)vega__ep_conn_opts(s->ep, NULL, &q);
    /* validated: the close is one small packet for a 1200-byte Initial, within the 3x limit
     * (§8.1) that the core would otherwise apply to a connection that received nothing */
    vega_quic_server_params sp = {.version = h->version,
                                  .dcid = h->dcid,
                                  .dcid_len = h->dcid_len,
                                  .scid = h->scid,
                                  .scid_len = h->scid_len,
                                  .address_validated = true};
    vega_quic_path p;
    to_path(&p, d);
    vega_quic_conn *qc;
    if (vega_quic_conn_server_new(&qc, &q, &p, &sp, now) < 0)
        return;
    uint8_t out[1500];
    vega_ssize w = 0;
    if (vega_quic_conn_close(qc, VEGA_QUIC_CLOSE_TRANSPORT, code, why) == 0)
        w = vega_quic_conn_write(qc, NULL, NULL, out, sizeof out, now);
    vega_quic_conn_free(qc);
    if (w > 0)
        vega__ep_sock_send_one(s, out, (size_t)w, d->from, d->local);
}

/* A short-header datagram for no connection of ours: a Stateless Reset (§10.3), within the
 * stateless answers' budget. */
static void maybe_reset(struct ep_sock *s, const uint8_t *dcid, const struct dgram *d, uint64_t now)
{
    struct vega_quic_endpoint *ep = s->ep;
    if (!stateless_budget(ep, now))
        return;
    uint8_t token[VEGA_QUIC_RESET_TOKEN_LEN], out[1200];
    if (vega_quic_reset_token(ep->reset_key, dcid, EP_CID_LEN, token) < 0)
        return;
    vega_ssize w = vega_quic_reset_write(out, sizeof out, d->len, token);
    if (w > 0) {
        vega__ep_sock_send_one(s, out, (size_t)w, d->from, d->local);
        atomic_fetch_add_explicit(&ep->st_resets, 1, memory_order_relaxed);
    } else {
        drop(ep);
    }
}

/* ---- a new connection -------------------------------------------------------------------- */

static void accept_conn(struct ep_sock *s, const vega_quic_hdr *h, struct dgram *d,
                        const vega_quic_server_params *sp, uint64_t now)
{
    struct vega_quic_endpoint *ep = s->ep;
    struct vega_quic_ep_conn *c = vega__ep_conn_new(ep, s, true);
    if (!c) {
        drop(ep);
        return;
    }
    vega_quic_opts q;
    vega_quic_path p;
    to_path(&p, d);
    if (vega__ep_conn_opts(ep, c, &q) < 0 ||
        vega_quic_conn_server_new(&c->qc, &q, &p, sp, now) < 0) {
        c->qc = NULL;
        vega_quic_ep_conn_release(c);
        drop(ep);
        return;
    }
    /* No state for a datagram that does not open: only an Initial that decrypts makes a
     * connection (junk that looks like an Initial must not hold memory until an idle
     * timeout). Nobody else knows c yet, so no lock is needed for this first read. */
    (void)vega_quic_conn_read(c->qc, &p, d->ecn, d->p, d->len, now);
    vega_quic_conn_info info;
    vega_quic_conn_get_info(c->qc, &info);
    memcpy(c->odcid, h->dcid, h->dcid_len);
    c->odcid_len = h->dcid_len;
    if (info.pkts_recv == 0 || vega__ep_table_add(ep, c->odcid, c->odcid_len, c) < 0) {
        /* junk, or another socket made this connection a moment ago (or no memory) */
        vega_quic_conn_free(c->qc);
        c->qc = NULL;
        vega_quic_ep_conn_release(c);
        drop(ep);
        return;
    }
    c->peer = *d->from;
    c->odcid_registered = true;
    vega__ep_qlog_open(c);
    c->counted_hs = true;
    atomic_fetch_add_explicit(&ep->handshakes, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ep->st_accepted, 1, memory_order_relaxed);
    vega__ep_conn_list_add(ep, c);
    if (vega__ep_conn_lock(c) == 0) {
        vega__ep_conn_after(c);
        vega__ep_conn_unlock(c, true);
    }
}

/* Returns true when d reached the handshake (a connection was tried: the costly part). */
static bool server_initial(struct ep_sock *s, struct dgram *d, uint64_t now)
{
    struct vega_quic_endpoint *ep = s->ep;
    vega_quic_hdr h;
    if (!ep->listening || s->owner || vega_quic_hdr_parse(&h, d->p, d->len, EP_CID_LEN) < 0) {
        drop(ep);
        return false;
    }
    /* §6.1: a long header of a version we do not speak, in a datagram big enough to be a first
     * Initial, gets Version Negotiation; anything smaller is dropped (§5.2.2). */
    if (h.type == VEGA_QUIC_PKT_UNKNOWN) {
        if (d->len >= VEGA_QUIC_MIN_INITIAL_SIZE)
            send_vn(s, &h, d, now);
        else
            drop(ep);
        return false;
    }
    /* §14.1: a server MUST discard an Initial packet carried in a datagram below 1200 bytes. */
    if (h.type != VEGA_QUIC_PKT_INITIAL || d->len < VEGA_QUIC_MIN_INITIAL_SIZE || h.dcid_len < 8 ||
        atomic_load(&ep->shutting_down)) {
        drop(ep);
        return false;
    }
    vega_quic_server_params sp = {.version = h.version,
                                  .dcid = h.dcid,
                                  .dcid_len = h.dcid_len,
                                  .scid = h.scid,
                                  .scid_len = h.scid_len};
    uint8_t odcid[VEGA_QUIC_MAX_CID_LEN];
    size_t odcid_len = 0;
    if (h.token_len > 0) {
        int t = vega__ep_token_check(ep, d->from, h.token, h.token_len, h.dcid, h.dcid_len, odcid,
                                     &odcid_len);
        if (t < 0) {
            /* §8.1.2: a Retry token we cannot validate: close with INVALID_TOKEN */
            atomic_fetch_add_explicit(&ep->st_tokens_bad, 1, memory_order_relaxed);
            send_close(s, &h, d, VEGA_QUIC_INVALID_TOKEN, "invalid token", now);
            return false;
        }
        if (t == 1) {
            sp.original_dcid = odcid;
            sp.original_dcid_len = odcid_len;
        }
        sp.address_validated = t > 0;
    }
    size_t hs = atomic_load_explicit(&ep->handshakes, memory_order_relaxed);
    vega__spin_lock(&ep->conns_lock);
    bool full = ep->nconns >= ep->o.max_conns;
    vega__spin_unlock(&ep->conns_lock);
    if (full) {
        atomic_fetch_add_explicit(&ep->st_refused, 1, memory_order_relaxed);
        send_close(s, &h, d, VEGA_QUIC_CONNECTION_REFUSED, "too many connections", now);
        return false;
    }
    if (!sp.address_validated) {
        if (ep->o.retry == VEGA_QUIC_RETRY_ALWAYS ||
            (ep->o.retry == VEGA_QUIC_RETRY_AUTO && hs >= ep->o.retry_threshold)) {
            send_retry(s, &h, d);
            return false;
        }
        if (hs >= ep->o.max_handshakes) {
            drop(ep);
            return false;
        }
    }
    accept_conn(s, &h, d, &sp, now);
    return true;
}

/* ---- routing ------------------------------------------------------------------------------- */

/* Where d goes: the connection its Destination Connection ID leads to (retained: the caller
 * releases it), or NULL (*is_long: a long header, a new connection's perhaps). Returns false
 * for a datagram too short to say (dropped, counted). */
static bool route(struct vega_quic_endpoint *ep, const struct dgram *d,
                  struct vega_quic_ep_conn **c, bool *is_long)
{
    const uint8_t *dcid;
    size_t dcid_len;
    *c = NULL;
    *is_long = d->len > 0 && (d->p[0] & 0x80);
    if (*is_long) {
        if (d->len < 7 || (size_t)d->p[5] + 6 > d->len) {
            drop(ep);
            return false;
        }
        dcid_len = d->p[5];
        dcid = d->p + 6;
    } else {
        if (d->len < 1 + EP_CID_LEN) {
            drop(ep);
            return false;
        }
        dcid_len = EP_CID_LEN;
        dcid = d->p + 1;
    }
    *c = vega__ep_table_get(ep, dcid, dcid_len);
    return true;
}

/* d, for no connection of ours: a new one's (long header), or a Stateless Reset's. Returns
 * true when a connection was tried. */
static bool no_conn(struct ep_sock *s, struct dgram *d, bool is_long, uint64_t now)
{
    if (is_long)
        return server_initial(s, d, now);
    maybe_reset(s, d->p + 1, d, now);
    return false;
}

static void count_in(struct vega_quic_endpoint *ep, const struct dgram *d)
{
    atomic_fetch_add_explicit(&ep->st_dgrams_in, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ep->st_bytes_in, d->len, memory_order_relaxed);
}

static void handle(struct ep_sock *s, struct dgram *d, uint64_t now)
{
    struct vega_quic_endpoint *ep = s->ep;
    count_in(ep, d);
    struct vega_quic_ep_conn *c;
    bool is_long;
    if (!route(ep, d, &c, &is_long))
        return;
    if (c) {
        conn_input(c, d, now);
        vega_quic_ep_conn_release(c);
        return;
    }
    (void)no_conn(s, d, is_long, now);
}

/* ---- the queue of new connections' datagrams ----------------------------------------------- */

/* A datagram waiting for its turn, with where it came from and to. */
struct ep_deferred {
    vega_addr from, local;
    size_t len;
    uint8_t ecn;
    uint8_t p[];
};

/* Queues d (a long header for no connection yet); false when the queue is full (d dropped,
 * counted) or no memory. */
static bool defer(struct ep_sock *s, const struct dgram *d)
{
    struct vega_quic_endpoint *ep = s->ep;
    size_t size = sizeof(struct ep_deferred) + d->len;
    if (!s->defer)
        s->defer = vega__mem_calloc(ep->mem, EP_DEFER_MAX, sizeof *s->defer);
    if (!s->defer || s->defer_len >= EP_DEFER_MAX || s->defer_bytes + size > EP_DEFER_BYTES) {
        drop(ep);
        return false;
    }
    struct ep_deferred *e = vega__mem_malloc(ep->mem, size);
    if (!e) {
        drop(ep);
        return false;
    }
    e->from = *d->from;
    e->local = *d->local;
    e->len = d->len;
    e->ecn = d->ecn;
    memcpy(e->p, d->p, d->len);
    s->defer[(s->defer_head + s->defer_len) % EP_DEFER_MAX] = e;
    s->defer_len++;
    s->defer_bytes += size;
    return true;
}

static struct ep_deferred *defer_take(struct ep_sock *s)
{
    if (!s->defer_len)
        return NULL;
    struct ep_deferred *e = s->defer[s->defer_head];
    s->defer[s->defer_head] = NULL;
    s->defer_head = (s->defer_head + 1) % EP_DEFER_MAX;
    s->defer_len--;
    s->defer_bytes -= sizeof *e + e->len;
    return e;
}

void vega__ep_defer_free(struct ep_sock *s)
{
    struct ep_deferred *e;
    while ((e = defer_take(s)))
        vega__mem_free(s->ep->mem, e);
    if (s->defer)
        vega__mem_free(s->ep->mem, s->defer);
    s->defer = NULL;
    s->defer_head = 0;
}

size_t vega__ep_rx_turn(struct ep_sock *s, vega_udp_msg *msgs, int n, uint64_t now)
{
    struct vega_quic_endpoint *ep = s->ep;
    for (int i = 0; i < n; i++) {
        vega_udp_msg *m = &msgs[i];
        if (m->flags & VEGA_UDP_MSG_TRUNC) {
            drop(ep);
            continue;
        }
        vega_addr local = m->local.len ? m->local : s->local;
        if (m->local.len)
            vega_addr_set_port(&local, vega_addr_port(&s->local));
        size_t seg = m->segment_size ? m->segment_size : m->len;
        for (size_t off = 0; off < m->len && seg; off += seg) {
            struct dgram d = {.p = (uint8_t *)m->buf + off,
                              .len = m->len - off < seg ? m->len - off : seg,
                              .from = &m->addr,
                              .local = &local,
                              .ecn = m->ecn};
            count_in(ep, &d);
            struct vega_quic_ep_conn *c;
            bool is_long;
            if (!route(ep, &d, &c, &is_long))
                continue;
            if (c) {
                conn_input(c, &d, now);
                vega_quic_ep_conn_release(c);
            } else if (!is_long || s->owner) {
                (void)no_conn(s, &d, is_long, now); /* a reset, or a client socket's drop */
            } else {
                (void)defer(s, &d);
            }
        }
    }
    /* the connections' datagrams of this batch went first; now a few new connections, oldest
     * first (a queued datagram may belong to one opened since: it goes there) */
    size_t budget = (size_t)n >= s->rx_n ? EP_OPEN_PER_BUSY_TURN : EP_OPEN_PER_TURN, opened = 0;
    struct ep_deferred *e;
    while (opened < budget && (e = defer_take(s))) {
        struct dgram d = {
            .p = e->p, .len = e->len, .from = &e->from, .local = &e->local, .ecn = e->ecn};
        struct vega_quic_ep_conn *c;
        bool is_long;
        if (route(ep, &d, &c, &is_long)) {
            if (c) {
                conn_input(c, &d, now);
                vega_quic_ep_conn_release(c);
            } else if (no_conn(s, &d, is_long, now)) {
                opened++;
            }
        }
        vega__mem_free(ep->mem, e);
    }
    /* an idle socket holds nothing for the queue (one allocation per burst) */
    if (!s->defer_len && s->defer) {
        vega__mem_free(ep->mem, s->defer);
        s->defer = NULL;
        s->defer_head = 0;
    }
    return opened;
}

/* The fuzz target's way in (tests/fuzz/quic_ep_fuzz.c): one datagram down the path a
 * received one takes, from a server socket's receive task's point of view. Inside a task. */
void vega__ep_fuzz_input(struct ep_sock *s, uint8_t *dgram, size_t len, const vega_addr *from,
                         uint64_t now)
{
    struct dgram d = {.p = dgram, .len = len, .from = from, .local = &s->local, .ecn = 0};
    handle(s, &d, now);
}

/* A client's socket reported an ICMP error. It is not authenticated (RFC 9000 §14.2.1, §21.10):
 * only a connection that never heard from its peer acts on it, and ends at once instead of
 * waiting for its deadline (nothing listens there). always: the socket itself is gone (a SOCKS5
 * relay whose association ended, -ECONNABORTED): a connection that heard from its peer closes
 * too, with a reason the application sees. */
static void sock_error(struct vega_quic_ep_conn *c, int err, bool always)
{
    if (vega__ep_conn_lock(c) < 0)
        return;
    if (c->qc && !c->ended && !c->close.closed) {
        vega_quic_conn_info info;
        vega_quic_conn_get_info(c->qc, &info);
        if (info.pkts_recv == 0) {
            c->sock_err = err;
            c->close.closed = true;
            c->close.local = true;
            snprintf(c->close.reason, sizeof c->close.reason, "%s", vega_strerror(err));
            atomic_store(&c->close_flushed, true);
            c->ended = true;
            vega_notify_all(&c->hs_wake);
            vega__ep_stream_conn_ended(c);
        } else if (always) {
            /* an established connection closes as for any local error: the application sees
             * CLOSED with this reason (the CONNECTION_CLOSE itself cannot reach the peer) */
            (void)vega_quic_conn_close(c->qc, VEGA_QUIC_CLOSE_TRANSPORT, VEGA_QUIC_INTERNAL_ERROR,
                                       "SOCKS5 UDP association ended");
        }
    }
    vega__ep_conn_unlock(c, true);
}

void *vega__ep_rx_task(void *arg)
{
    struct ep_sock *s = arg;
    while (!atomic_load(&s->stop)) {
        /* with new connections waiting, only a look: they are opened when nothing else is */
        vega_deadline dl = s->defer_len ? 0 : VEGA_DEADLINE_NEVER;
        uint64_t began = vega_now();
        int n = vega_udp_recv_batch(s->sock, s->rx_msgs, s->rx_n, dl);
        if (n == -ETIMEDOUT || (n >= 0 && (size_t)n < s->rx_n))
            atomic_store_explicit(&s->drained_at, began, memory_order_release);
        if (n == -ECANCELED)
            break;
        if (n == -ETIMEDOUT) {
            n = 0;
        } else if (n < 0) {
            /* an ICMP error reported on the socket (-ECONNREFUSED ...) or a transient
             * shortage: the connections' timers deal with lost paths */
            if (n == -EBADF || n == -ENOTSOCK)
                break;
            if (s->owner && (n == -ECONNREFUSED || n == -EHOSTUNREACH || n == -ENETUNREACH))
                sock_error(s->owner, n, false);
            if (n == -ECONNABORTED && s->owner) {
                /* a relay socket's association ended: every later call fails the same way */
                sock_error(s->owner, n, true);
                break;
            }
            continue;
        }
        atomic_store_explicit(&s->pending, s->defer_len + 1, memory_order_release);
        (void)vega__ep_rx_turn(s, s->rx_msgs, n, vega_now());
        atomic_store_explicit(&s->pending, s->defer_len, memory_order_release);
        /* the send task (the handshakes' answers) and the rest of this worker get their turn
         * before the next handshakes */
        if (s->defer_len)
            (void)vega_yield();
    }
    vega__ep_sock_task_exit(s);
    return NULL;
}
