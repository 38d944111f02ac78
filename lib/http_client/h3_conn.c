/* SPDX-License-Identifier: MIT */
/* The client's HTTP/3 connections: the QUIC endpoint (made on first use), connecting across a
 * name's addresses (RFC 8305 §5 pacing, RFC 9114 §3.2), the HTTP/3 setup (our control and QPACK
 * streams, RFC 9114 §6.2.1, RFC 9204 §4.2), and the pool of connections per origin that
 * requests share (§3.3), with waiting for one being made and the idle ones' end. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <netinet/in.h>

#include <vega/crypto.h>

#include "client_int.h"

/* ---- the endpoint ---------------------------------------------------------------------------- */

static int ensure_endpoint(vega_http_client *c)
{
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    if (c->ep)
        goto out;
    const vega_crypto_cert_store *ca = c->o.quic_ca;
    if (!ca && !c->o.quic_insecure) {
        if (!c->own_ca && (rc = vega_crypto_cert_store_new(&c->own_ca, NULL, NULL)) < 0)
            goto out;
        ca = c->own_ca;
    }
    vega_quic_endpoint_opts eo;
    vega_quic_endpoint_opts_init(&eo);
    eo.quic.tls.alpn[0] = "h3";
    eo.quic.tls.n_alpn = 1;
    eo.quic.tls.ca = ca;
    eo.quic.tls.insecure = c->o.quic_insecure;
    eo.quic.tls.chain = c->o.quic_chain;
    eo.quic.tls.key = c->o.quic_key;
    eo.quic.tls.early_data = c->o.quic_early_data;
    if (c->o.quic_version)
        eo.quic.version = c->o.quic_version;
    memcpy(eo.quic.tls.suites, c->o.quic_suites, sizeof c->o.quic_suites);
    eo.quic.tls.n_suites = c->o.quic_n_suites;
    /* the TCP side's pins hold for HTTP/3 too: Alt-Svc must not be a way around them */
    c->n_quic_pins =
        vega_tls_config_get_pinned_keys(c->o.tls, c->quic_pins[0], VEGA_QUIC_MAX_PINNED_KEYS);
    if (c->n_quic_pins > VEGA_QUIC_MAX_PINNED_KEYS) {
        rc = -EINVAL; /* (the two bounds are the same 64) */
        goto out;
    }
    eo.quic.pinned_keys = c->quic_pins[0];
    eo.quic.n_pinned_keys = c->n_quic_pins;
    eo.quic.keylog = c->o.quic_keylog;
    eo.quic.keylog_user = c->o.quic_keylog_user;
    eo.cb.on_event = vega__hc_h3_on_event;
    eo.cb.on_closed = vega__hc_h3_on_closed;
    eo.mem = c->o.mem;
    eo.qlog_dir = c->o.quic_qlog_dir;
    rc = vega_quic_endpoint_new(&c->ep, &eo);
out:
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* ---- connections' life ------------------------------------------------------------------------
 */

static struct hc_h3 *h3_new(vega_http_client *c, const struct hc_req *rq)
{
    struct hc_h3 *h = vega__mem_calloc(c->o.mem, 1, sizeof *h);
    if (!h)
        return NULL;
    h->c = c;
    vega__hc_mux_init(&h->mux, &vega__hc_h3_ops, &rq->key, 1);
    memcpy(h->sni, rq->host_for_tls, sizeof h->sni);
    memcpy(h->dst_host, rq->alt_host, sizeof h->dst_host);
    h->dst_port = rq->alt_port;
    pthread_mutex_init(&h->kept_mu, NULL);
    return h;
}

static void h3_free(struct hc_h3 *h)
{
    const vega_mem *m = h->c->o.mem;
    if (h->qe) {
        /* No callback may find h after this: its user pointer goes under the lock (NULL: the
         * connection is gone and its callbacks have all run). */
        if (vega_quic_ep_conn_lock(h->qe)) {
            vega_quic_ep_conn_set_user(h->qe, NULL);
            vega_quic_ep_conn_unlock(h->qe);
        }
        vega_quic_ep_conn_release(h->qe);
    }
    vega_h3_conn_free(h->h3);
    for (int i = 0; i < 3; i++)
        vega__mem_free(m, h->pend[i].p);
    pthread_mutex_destroy(&h->kept_mu);
    vega__mem_free(m, h);
}

void vega__hc_h3_release(struct hc_h3 *h)
{
    if (h)
        vega__hc_mux_release(&h->mux);
}

/* Closes h's QUIC connection (H3_NO_ERROR: nothing wrong, RFC 9114 §5.2) unless it ended. */
static void h3_close(struct hc_h3 *h)
{
    if (h->qe)
        (void)vega_quic_ep_conn_close(h->qe, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_NO_ERROR, NULL);
}

/* ---- the pool ----------------------------------------------------------------------------------
 */

static void mux_close(struct hc_mux *m)
{
    h3_close(vega__hc_h3_of(m));
}

static void mux_free(struct hc_mux *m)
{
    h3_free(vega__hc_h3_of(m));
}

const struct hc_mux_ops vega__hc_h3_ops = {
    .max_conns = HC_H3_MAX_CONNS,
    .close = mux_close,
    .free = mux_free,
    .fresh_after_wait = false, /* another may be joinable: look again */
};

int vega__hc_h3_pool_take(vega_http_client *c, const struct hc_req *rq, vega_deadline dl,
                          struct hc_h3 **out)
{
    /* RFC 9114 §3.3: one connection per origin; wait for the one being made. */
    struct hc_mux *m;
    int rc = vega__hc_mux_take(c, &c->h3s, &rq->key, dl, &m);
    *out = vega__hc_h3_of(m);
    return rc;
}

void vega__hc_h3_shutdown(vega_http_client *c)
{
    vega__hc_mux_shutdown(c, &c->h3s);
    if (c->ep) {
        /* It waits until the closes above went out, not for their closing periods. */
        vega_quic_endpoint_free(c->ep);
        c->ep = NULL;
    }
}

/* ---- connecting --------------------------------------------------------------------------------
 */

/* QUIC attempts across addresses, a new one every HC_H3_ATTEMPT_DELAY_MS while none answered;
 * the first handshake wins. */
struct qrace {
    vega_quic_endpoint *ep;
    const vega_quic_connect_opts *o;
    vega_deadline dl;
    pthread_mutex_t mu;
    vega_notify wake;
    vega_quic_ep_conn *winner;
    int last_err;
    vega_quic_ep_close_info last_close; /* why the attempt of last_err ended, if it did */
    size_t running;
};

struct qatt {
    struct qrace *r;
    vega_addr addr;
    vega_task *task;
    vega_quic_connect_opts o; /* the race's, with a close record of its own */
    vega_quic_ep_close_info close;
};

static void *attempt_task(void *arg)
{
    struct qatt *a = arg;
    struct qrace *r = a->r;
    vega_quic_ep_conn *qe = NULL;
    a->o = *r->o;
    a->o.close = &a->close;
    int rc = vega_quic_endpoint_connect(r->ep, &a->addr, &a->o, &qe, r->dl);
    bool lost = false;
    pthread_mutex_lock(&r->mu);
    if (rc == 0 && !r->winner) {
        r->winner = qe;
    } else if (rc == 0) {
        lost = true;
    } else if (rc != -ECANCELED || r->last_err == 0) {
        r->last_err = rc;
        r->last_close = a->close;
    }
    r->running--;
    pthread_mutex_unlock(&r->mu);
    if (lost) {
        (void)vega_quic_ep_conn_close(qe, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_NO_ERROR, NULL);
        vega_quic_ep_conn_release(qe);
    }
    vega_notify_one(&r->wake);
    return NULL;
}

/* Joins t even when the calling task was cancelled (t was cancelled too and ends soon). */
static void join_hard(vega_task *t)
{
    if (vega_task_join(t, NULL, VEGA_DEADLINE_NEVER) == 0)
        return;
    while (!vega_task_is_finished(t))
        (void)vega_yield();
    (void)vega_task_join(t, NULL, VEGA_DEADLINE_NEVER);
}

/* Orders addresses IPv6, IPv4, IPv6 ... (RFC 8305 §4, First Address Family Count 1). */
static size_t interleave(const vega_addr *in, size_t n, vega_addr *out)
{
    size_t k = 0;
    bool used[HC_H3_MAX_ADDRS] = {false};
    int want = AF_INET6;
    while (k < n) {
        size_t i = 0;
        while (i < n && (used[i] || in[i].ss.ss_family != want))
            i++;
        if (i == n) /* that family ran out: any left */
            for (i = 0; i < n && used[i]; i++)
                ;
        used[i] = true;
        out[k++] = in[i];
        want = want == AF_INET6 ? AF_INET : AF_INET6;
    }
    return k;
}

static int race_addrs(struct qrace *r, const vega_addr *addrs, size_t n, vega_quic_ep_conn **out)
{
    struct qatt att[HC_H3_MAX_ADDRS];
    size_t started = 0;
    int rc = 0;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        bool won = r->winner != NULL;
        size_t running = r->running;
        pthread_mutex_unlock(&r->mu);
        if (won || (started == n && running == 0))
            break;
        if (started < n && (running == 0 || rc == -ETIMEDOUT)) {
            memset(&att[started], 0, sizeof att[started]);
            att[started].r = r;
            att[started].addr = addrs[started];
            pthread_mutex_lock(&r->mu);
            r->running++;
            pthread_mutex_unlock(&r->mu);
            if (vega_task_spawn(&att[started].task, attempt_task, &att[started]) < 0) {
                pthread_mutex_lock(&r->mu);
                r->running--;
                r->last_err = -ENOMEM;
                pthread_mutex_unlock(&r->mu);
                break;
            }
            started++;
        }
        vega_deadline next =
            started < n ? vega_deadline_in_ms(HC_H3_ATTEMPT_DELAY_MS) : VEGA_DEADLINE_NEVER;
        rc = vega_notify_wait(&r->wake, hc_dl_min(next, r->dl));
        if (rc == -ECANCELED || (rc == -ETIMEDOUT && next >= r->dl))
            break;
    }
    for (size_t i = 0; i < started; i++)
        vega_task_cancel(att[i].task);
    for (size_t i = 0; i < started; i++)
        join_hard(att[i].task);
    if (r->winner) {
        *out = r->winner;
        return 0;
    }
    if (rc == -ECANCELED)
        return rc;
    return r->last_err ? r->last_err : -ETIMEDOUT;
}

/* The addresses of h's destination: a --resolve entry, or the resolver's answers. */
static int addresses(vega_http_client *c, struct hc_h3 *h, vega_deadline dl, vega_addr *out,
                     size_t *n)
{
    struct hc_key k = {.tls = true, .port = h->dst_port};
    memcpy(k.host, h->dst_host, sizeof k.host);
    int fam = c->o.ip_family;
    if (vega__hc_resolve_override(c, &k, &out[0])) {
        *n = 1;
        return fam != AF_UNSPEC && out[0].ss.ss_family != fam ? VEGA_ERR_DNS_NO_ADDRESS : 0;
    }
    vega_addr found[HC_H3_MAX_ADDRS];
    int rc = vega_dns_lookup(c->dns, h->dst_host, fam, found, HC_H3_MAX_ADDRS, n, dl);
    if (rc < 0)
        return rc;
    *n = interleave(found, *n, out);
    for (size_t i = 0; i < *n; i++)
        vega_addr_set_port(&out[i], h->dst_port);
    return 0;
}

/*
 * Through a SOCKS5 proxy (RFC 1928 §7): one UDP ASSOCIATE per connection, whose relay socket the
 * connection takes (o->sock). socks5:// resolves here and the datagrams name the first address
 * (IPv4 first, as vega_proxy_connect picks); socks5h:// sends the name for the proxy to resolve,
 * and the connection's peer is a stand-in (0.0.0.0 or :: and the port): the relay's answers
 * from that port are that peer's. addrs[0] receives the peer; no race of addresses.
 */
static int socks_dial(vega_http_client *c, struct hc_h3 *h, vega_deadline dl, vega_addr *peer,
                      vega_quic_connect_opts *o)
{
    const vega_proxy_opts *p = c->o.proxy;
    vega_sock *sock = NULL;
    int rc;
    struct hc_key k = {.tls = true, .port = h->dst_port};
    memcpy(k.host, h->dst_host, sizeof k.host);
    bool literal = vega_addr_from_ip(peer, h->dst_host, h->dst_port) == 0;
    if (p->kind == VEGA_PROXY_SOCKS5H && !literal && !vega__hc_resolve_override(c, &k, peer)) {
        int fam = c->o.ip_family == AF_INET6 ? AF_INET6 : AF_INET;
        if ((rc = vega_addr_from_ip(peer, fam == AF_INET6 ? "::" : "0.0.0.0", h->dst_port)) < 0)
            return rc;
        rc = vega_proxy_udp_associate(&sock, p, h->dst_host, h->dst_port, peer, NULL, dl);
    } else {
        vega_addr addrs[HC_H3_MAX_ADDRS];
        size_t n = 0;
        if (!literal && (rc = addresses(c, h, dl, addrs, &n)) < 0)
            return rc;
        if (!literal) {
            size_t pick = 0;
            for (size_t i = 0; i < n; i++)
                if (addrs[i].ss.ss_family == AF_INET) {
                    pick = i;
                    break;
                }
            *peer = addrs[pick];
        }
        rc = vega_proxy_udp_associate(&sock, p, NULL, 0, NULL, NULL, dl);
    }
    if (rc < 0)
        return rc;
    o->sock = sock;
    return 0;
}

static int dial(vega_http_client *c, struct hc_h3 *h, const struct hc_req *rq, vega_deadline dl)
{
    vega_addr addrs[HC_H3_MAX_ADDRS];
    size_t n = 0;
    vega_quic_connect_opts so;
    memset(&so, 0, sizeof so);
    int rc = c->o.proxy ? socks_dial(c, h, dl, &addrs[0], &so) : addresses(c, h, dl, addrs, &n);
    if (rc < 0)
        return rc;
    if (c->o.proxy)
        n = 1;
    h->t_dns = vega_now();
    uint8_t *sess, *tok;
    size_t sess_len, tok_len;
    vega__hc_sess_get(c, h->sni, h->dst_port, &sess, &sess_len, &tok, &tok_len);
    vega_quic_connect_opts o = {
        .server_name = h->sni,
        .session = sess,
        .session_len = sess_len,
        .token = tok,
        .token_len = tok_len,
        .version = c->o.quic_version,
        /* RFC 8470: only a safe request goes in 0-RTT, which an attacker may replay. */
        .early = c->o.quic_early_data && sess_len && rq->safe,
        .sock = so.sock, /* taken by the connect */
    };
    struct qrace r = {.ep = c->ep, .o = &o, .dl = dl};
    pthread_mutex_init(&r.mu, NULL);
    vega_notify_init(&r.wake);
    vega_quic_ep_close_info ci;
    memset(&ci, 0, sizeof ci);
    if (n == 1) {
        /* One attempt: its events are h's from the first (a failed connect forgets h). */
        o.user = h;
        o.close = &ci;
        rc = vega_quic_endpoint_connect(c->ep, &addrs[0], &o, &h->qe, dl);
    } else {
        /* Several: only the winner becomes h's (setup); the others' events go nowhere. */
        rc = race_addrs(&r, addrs, n, &h->qe);
        ci = r.last_close;
    }
    if (rc < 0 && ci.closed) {
        /* why the handshake failed: a TLS alert (CRYPTO_ERROR), a refusal, an H3 close */
        h->werr.kind = ci.app ? VEGA_HTTP_CLIENT_WIRE_H3 : VEGA_HTTP_CLIENT_WIRE_QUIC;
        h->werr.local = ci.local;
        h->werr.code = ci.code;
        memcpy(h->werr.reason, ci.reason, sizeof h->werr.reason);
        /* our pin check refused the server's key: the error TCP's TLS gives for it */
        if (rc == VEGA_ERR_QUIC_EP_HANDSHAKE && ci.local && !ci.app &&
            ci.code == VEGA_QUIC_CRYPTO_ERROR + 42 &&
            strcmp(ci.reason, VEGA_QUIC_PIN_MISMATCH) == 0)
            rc = VEGA_ERR_TLS_PINNED;
    }
    vega_notify_fini(&r.wake);
    pthread_mutex_destroy(&r.mu);
    vega__mem_free(c->o.mem, sess);
    vega__mem_free(c->o.mem, tok);
    if (rc == 0)
        h->t_connect = vega_now();
    return rc;
}

/* Our three unidirectional streams (RFC 9114 §6.2.1: a peer allows at least three). */
static int open_uni(struct hc_h3 *h, vega_quic_conn *qc)
{
    for (int i = 0; i < 3; i++) {
        int rc = vega_quic_stream_open(qc, false, &h->uni[i]);
        if (rc == VEGA_ERR_FULL) {
            vega__hc_h3_conn_error(h, VEGA_H3_STREAM_CREATION_ERROR,
                                   "fewer than 3 unidirectional streams allowed");
            return VEGA_ERR_PROTO;
        }
        if (rc < 0)
            return rc == VEGA_ERR_CLOSED ? VEGA_ERR_QUIC_EP_CLOSED : rc;
    }
    return vega_h3_conn_bind_streams(h->h3, h->uni[0], h->uni[1], h->uni[2]);
}

/* The HTTP/3 side of a fresh connection, under its lock: the core, our streams and SETTINGS,
 * then the streams the server opened before we listened (their events went nowhere). */
/* The HTTP/3 core of a connection. */
static int core_new(vega_http_client *c, struct hc_h3 *h)
{
    vega_h3_opts ho;
    vega_h3_opts_init(&ho);
    ho.mem = c->o.mem;
    /* as many fields as a response keeps (vega__hc_response_new), and its :status (QPACK
     * counts every field line) */
    ho.max_fields = (c->o.limits.max_fields ? c->o.limits.max_fields : 100) + 1;
    if (c->o.limits.max_field_section)
        ho.max_field_section_size = c->o.limits.max_field_section;
    uint64_t seed = 0;
    if (vega_crypto_random(&seed, sizeof seed) == 0)
        ho.grease_seed = seed;
    return vega_h3_conn_client_new(&h->h3, &vega__hc_h3_callbacks, &ho, h);
}

static int setup(vega_http_client *c, struct hc_h3 *h)
{
    int rc;
    vega_quic_conn *qc = vega_quic_ep_conn_lock(h->qe);
    if (!qc)
        return VEGA_ERR_QUIC_EP_CLOSED;
    h->qc = qc;
    vega_quic_conn_info qi;
    vega_quic_conn_get_info(qc, &qi);
    h->quic_version = qi.version;
    h->suite = qi.suite;
    h->resumed = qi.resumed;
    h->early = qi.early_data;
    rc = open_uni(h, qc);
    if (rc == 0) {
        /* usable from here, under the connection's lock: an end or a GOAWAY clears it */
        atomic_store(&h->mux.usable, true);
        vega_quic_ep_conn_set_user(h->qe, h);
        vega__hc_h3_flush_uni(h);
        /* Peer streams 3, 7, 11 ... that came while the connection had no user: opening one
         * opens the lower ones (RFC 9000 §3.2), so the first unknown id ends them. */
        for (uint64_t id = 3; !h->dead; id += 4) {
            const uint8_t *d;
            size_t len;
            bool fin;
            if (vega_quic_stream_peek(qc, id, &d, &len, &fin) == -EINVAL)
                break;
            vega__hc_h3_drain_uni(h, id);
        }
        vega__hc_h3_flush_uni(h);
        if (h->dead)
            rc = h->err;
    }
    h->qc = NULL;
    vega_quic_ep_conn_unlock(h->qe);
    if (rc < 0)
        return rc;
    /* through a proxy the peer stays empty (a TCP tunnel says the proxy's): the relay's QUIC
     * peer may be a stand-in (socks5h) */
    if (!c->o.proxy)
        vega_quic_ep_conn_peer(h->qe, &h->peer);
    /* A ticket or token that came before we listened: the endpoint kept them. */
    for (int tok = 0; tok < 2; tok++) {
        vega_ssize n = tok ? vega_quic_ep_conn_get_token(h->qe, NULL, 0)
                           : vega_quic_ep_conn_get_session(h->qe, NULL, 0);
        uint8_t *buf = n > 0 && n <= HC_SESS_MAX_LEN ? vega__mem_malloc(c->o.mem, (size_t)n) : NULL;
        if (!buf)
            continue;
        n = tok ? vega_quic_ep_conn_get_token(h->qe, buf, (size_t)n)
                : vega_quic_ep_conn_get_session(h->qe, buf, (size_t)n);
        if (n > 0)
            vega__hc_sess_put(c, h->sni, h->dst_port, tok == 1, buf, (size_t)n);
        vega__mem_free(c->o.mem, buf);
    }
    return 0;
}

int vega__hc_h3_connect(vega_http_client *c, const struct hc_req *rq, bool fresh, vega_deadline dl,
                        struct hc_h3 **out, vega_http_client_wire_error *werr)
{
    *out = NULL;
    int rc = ensure_endpoint(c);
    if (rc < 0)
        return rc;
    struct hc_h3 *h = h3_new(c, rq);
    if (!h)
        return -ENOMEM;
    /* In the pool while connecting (its reference), so requests to the origin wait for it;
     * the look and the push in one hold of the lock, so that requests starting together make
     * one connection, not one each (RFC 9114 §3.3). */
    atomic_fetch_add_explicit(&h->mux.refs, 1, memory_order_relaxed);
    struct hc_mux *other;
    rc = vega__hc_mux_join(c, &c->h3s, &h->mux, fresh, dl, &other);
    if (rc != 0) { /* joined one (or gave up waiting): ours was never seen */
        h3_free(h);
        *out = rc > 0 ? vega__hc_h3_of(other) : NULL;
        return rc > 0 ? 0 : rc;
    }
    rc = core_new(c, h);
    if (rc == 0)
        rc = dial(c, h, rq, dl);
    if (rc == 0)
        rc = setup(c, h);
    if (rc < 0)
        h3_close(h);
    vega__hc_mux_connect_done(c, &c->h3s, &h->mux, rc == 0, rc);
    if (rc < 0) {
        if (werr)
            *werr = h->werr;
        vega__hc_h3_release(h);
        return rc;
    }
    *out = h;
    return 0;
}
