/* SPDX-License-Identifier: MIT */
/* Fixtures of the QUIC endpoint attack tests (attack_test.c): a server that echoes or sources
 * bytes on every stream and counts what it holds, a normal client that keeps doing byte-exact
 * round trips while an attack runs, and a "raw" client: a core connection (<vega/quic.h>)
 * driven by the test over its own UDP socket, so the test decides what it sends (forged
 * packets, nothing at all) and what it reads. */
#ifndef VEGA_TEST_ATTACK_UTIL_H
#define VEGA_TEST_ATTACK_UTIL_H

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <vega/crypto.h>
#include <vega/quic.h>
#include <vega/quic_ep.h>
#include <vega/quic_wire.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/sync.h>

#include "../quic/qtls_certs.h"
#include "count_mem.h"
#include "quic_pkt.h"
#include "vtest.h"

#define DL(ms) vega_deadline_in_ms(ms)
/* A closing connection waits 3 PTO (RFC 9000 §10.2) and the PTO follows the measured RTT, which
 * a loaded machine under a sanitizer stretches to seconds (a 10 s wait ran out in CI's ASan
 * stage after a stream-heavy test): the bound says "it ends", not how fast. */
#define CLOSE_WAIT_MS 60000

/* ---- certificates ------------------------------------------------------------------------- */

struct creds {
    vega_crypto_cert_chain *chain;
    vega_crypto_key *key;
    vega_crypto_cert_store *ca;
};

static inline void creds_load(struct creds *k)
{
    memset(k, 0, sizeof *k);
    VCHECK_EQ(vega_crypto_cert_chain_new(&k->chain), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(k->chain, QT_SRV_P256_PEM, strlen(QT_SRV_P256_PEM)), 0);
    VCHECK_EQ(vega_crypto_key_load_private(&k->key, QT_SRV_P256_KEY, strlen(QT_SRV_P256_KEY)), 0);
    VCHECK_EQ(vega_crypto_cert_store_new(&k->ca, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(k->ca, QT_CA_PEM, strlen(QT_CA_PEM)), 0);
}

static inline void creds_free(struct creds *k)
{
    vega_crypto_cert_chain_free(k->chain);
    vega_crypto_key_free(k->key);
    vega_crypto_cert_store_free(k->ca);
}

static inline vega_addr loopback(uint16_t port)
{
    vega_addr a;
    VCHECK_EQ(vega_addr_from_ip(&a, "127.0.0.1", port), 0);
    return a;
}

static inline void client_opts(vega_quic_endpoint_opts *o, struct creds *k)
{
    vega_quic_endpoint_opts_init(o);
    o->quic.tls.ca = k->ca;
    o->quic.tls.alpn[0] = "vega-test";
    o->quic.tls.n_alpn = 1;
}

static inline uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 7 + i / 251);
}

/* ---- the server ---------------------------------------------------------------------------- */

/* A stream whose first byte is 'S' asks for the 4-byte big-endian count after it of pattern()
 * bytes; any other stream is echoed. Everything the server allocates through the endpoint goes
 * to mem. */
struct asrv {
    vega_quic_endpoint *ep;
    vega_addr addr;
    vega_task *acceptor;
    struct cmem mem;
    size_t base; /* live bytes once listening */
    atomic_int conns, conns_ended, idle_closed, streams_live, streams_total;
    atomic_size_t written; /* bytes the source streams' writes took */
};

struct astream {
    struct asrv *v;
    vega_stream *s;
};

static inline void *srv_stream_task(void *arg)
{
    struct astream *a = arg;
    struct asrv *v = a->v;
    vega_stream *s = a->s;
    free(a);
    uint8_t buf[8192];
    vega_ssize n = vega_stream_read(s, buf, sizeof buf, DL(30000));
    if (n >= 5 && buf[0] == 'S') {
        size_t want = (size_t)buf[1] << 24 | (size_t)buf[2] << 16 | (size_t)buf[3] << 8 | buf[4];
        for (size_t off = 0; off < want;) {
            size_t k = want - off < sizeof buf ? want - off : sizeof buf;
            for (size_t i = 0; i < k; i++)
                buf[i] = pattern(off + i);
            if (vega_stream_write(s, buf, k, NULL, DL(30000)) < 0)
                break;
            off += k;
            atomic_fetch_add(&v->written, k);
        }
    } else {
        while (n > 0) {
            if (vega_stream_write(s, buf, (size_t)n, NULL, DL(30000)) < 0)
                break;
            n = vega_stream_read(s, buf, sizeof buf, DL(30000));
        }
    }
    vega_stream_shutdown(s, SHUT_WR, 0);
    vega_stream_close(s, 0);
    atomic_fetch_sub(&v->streams_live, 1);
    return NULL;
}

struct aconn {
    struct asrv *v;
    vega_quic_ep_conn *c;
};

static inline void *srv_conn_task(void *arg)
{
    struct aconn *a = arg;
    struct asrv *v = a->v;
    vega_quic_ep_conn *c = a->c;
    free(a);
    for (;;) {
        vega_stream *s;
        if (vega_quic_ep_stream_accept(c, &s, NULL, VEGA_DEADLINE_NEVER) < 0)
            break;
        struct astream *as = malloc(sizeof *as);
        VCHECK(as != NULL);
        *as = (struct astream){v, s};
        atomic_fetch_add(&v->streams_live, 1);
        atomic_fetch_add(&v->streams_total, 1);
        VCHECK_EQ(vega_task_spawn(NULL, srv_stream_task, as), 0);
    }
    VCHECK_EQ(vega_quic_ep_conn_wait_closed(c, DL(30000)), 0);
    vega_quic_ep_close_info ci;
    vega_quic_ep_conn_get_close(c, &ci);
    if (ci.idle_timeout)
        atomic_fetch_add(&v->idle_closed, 1);
    vega_quic_ep_conn_release(c);
    atomic_fetch_add(&v->conns_ended, 1);
    return NULL;
}

static inline void *srv_accept_task(void *arg)
{
    struct asrv *v = arg;
    for (;;) {
        vega_quic_ep_conn *c;
        if (vega_quic_endpoint_accept(v->ep, &c, VEGA_DEADLINE_NEVER) < 0)
            break;
        atomic_fetch_add(&v->conns, 1);
        struct aconn *a = malloc(sizeof *a);
        VCHECK(a != NULL);
        *a = (struct aconn){v, c};
        VCHECK_EQ(vega_task_spawn(NULL, srv_conn_task, a), 0);
    }
    return NULL;
}

/* The server's settings: o is filled with the defaults of these tests; change what a case
 * needs, then srv_start. */
static inline void srv_opts(vega_quic_endpoint_opts *o, struct creds *k)
{
    vega_quic_endpoint_opts_init(o);
    o->quic.tls.chain = k->chain;
    o->quic.tls.key = k->key;
    o->quic.tls.alpn[0] = "vega-test";
    o->quic.tls.n_alpn = 1;
    o->quic.idle_timeout_ms = 1000;
    o->retry = VEGA_QUIC_RETRY_NEVER;
}

static inline void srv_start(struct asrv *v, vega_quic_endpoint_opts *o)
{
    memset(v, 0, sizeof *v);
    cmem_init(&v->mem);
    o->mem = &v->mem.mem;
    VCHECK_EQ(vega_quic_endpoint_new(&v->ep, o), 0);
    vega_addr any = loopback(0);
    VCHECK_EQ(vega_quic_endpoint_listen(v->ep, &any, 0, &v->addr), 0);
    VCHECK_EQ(vega_task_spawn(&v->acceptor, srv_accept_task, v), 0);
    v->base = cmem_live(&v->mem);
    cmem_reset_peak(&v->mem);
}

static inline vega_quic_endpoint_stats srv_stats(struct asrv *v)
{
    vega_quic_endpoint_stats st;
    vega_quic_endpoint_get_stats(v->ep, &st);
    return st;
}

/* Waits until the server holds no connection and its memory is back where it was once
 * listening (plus its timer heaps, see ep_heap_bytes), and says so. */
static inline void srv_check_clean(struct asrv *v)
{
    vega_deadline dl = DL(20000);
    vega_quic_endpoint_stats st = srv_stats(v);
    while ((st.conns_open || st.handshakes || atomic_load(&v->streams_live) ||
            atomic_load(&v->conns_ended) != atomic_load(&v->conns)) &&
           vega_now() < dl) {
        vega_sleep_ms(5);
        st = srv_stats(v);
    }
    VCHECK_EQ(st.conns_open, 0);
    VCHECK_EQ(st.handshakes, 0);
    VCHECK_EQ(atomic_load(&v->streams_live), 0);
    VCHECK_EQ(atomic_load(&v->conns_ended), atomic_load(&v->conns));
    bool grown;
    size_t heaps = ep_heap_bytes(v->ep, &grown);
    VCHECK_EQ(cmem_wait_live(&v->mem, v->base + heaps, 10000), v->base + heaps);
    VCHECK(!grown); /* a flood's high water given back (finding 1, fixed) */
}

/* Stops the server; every block it allocated must have been given back. */
static inline void srv_stop(struct asrv *v)
{
    vega_quic_endpoint_shutdown(v->ep, DL(2000));
    VCHECK_EQ(vega_task_join(v->acceptor, NULL, DL(10000)), 0);
    vega_quic_endpoint_free(v->ep);
    VCHECK_EQ(cmem_wait_live(&v->mem, 0, 5000), 0);
    VCHECK_EQ(atomic_load(&v->mem.blocks), 0);
}

/* ---- the normal client ---------------------------------------------------------------------- */

/* A failed call of a round trip on c: allowed (its code returned) only when c ended by its idle
 * timeout; anything else fails the test. */
static inline int rt_failed(vega_quic_ep_conn *c, long rc)
{
    vega_quic_ep_close_info ci;
    vega_quic_ep_conn_get_close(c, &ci);
    if (!(ci.closed && ci.idle_timeout))
        fprintf(stderr, "roundtrip: %ld %s\n", rc, vega_strerror((int)rc));
    VCHECK(ci.closed && ci.idle_timeout);
    return (int)rc;
}

/* Sends len pseudo-random bytes on a new stream of c (echoed: the first byte is not 'S') and
 * checks they come back exactly. Returns 0, or a code when c ended by its idle timeout on the
 * way (any other failure fails the test). */
static inline int roundtrip_try(vega_quic_ep_conn *c, size_t len, uint32_t seed)
{
    vega_stream *s;
    int orc = vega_quic_ep_stream_open(c, true, &s, NULL, DL(20000));
    if (orc < 0)
        return rt_failed(c, orc);
    uint8_t *out = malloc(len), *in = malloc(len + 1);
    VCHECK(out && in);
    for (size_t i = 0; i < len; i++) {
        seed = seed * 1103515245u + 12345u;
        out[i] = (uint8_t)(seed >> 16);
    }
    out[0] = 'E';
    size_t got = 0, sent = 0;
    while (sent < len || got < len) {
        if (sent < len) {
            size_t n = len - sent < 4096 ? len - sent : 4096;
            vega_ssize w = vega_stream_write(s, out + sent, n, NULL, DL(20000));
            if (w < 0) {
                vega_stream_close(s, 0);
                free(out);
                free(in);
                return rt_failed(c, w);
            }
            VCHECK_EQ(w, (vega_ssize)n);
            sent += n;
            if (sent == len)
                VCHECK_EQ(vega_stream_shutdown(s, SHUT_WR, 0), 0);
        }
        vega_ssize r =
            vega_stream_read(s, in + got, len + 1 - got, sent < len ? vega_now() : DL(20000));
        if (r == -ETIMEDOUT)
            continue;
        if (r < 0) {
            vega_stream_close(s, 0);
            free(out);
            free(in);
            return rt_failed(c, r);
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    VCHECK_EQ(got, len);
    VCHECK(memcmp(in, out, len) == 0);
    VCHECK_EQ(vega_stream_read(s, in, 1, DL(20000)), 0);
    vega_stream_close(s, 0);
    free(out);
    free(in);
    return 0;
}

/* roundtrip_try where the connection must stay up. */
static inline void roundtrip(vega_quic_ep_conn *c, size_t len, uint32_t seed)
{
    VCHECK_EQ(roundtrip_try(c, len, seed), 0);
}

/* The idle timeout of a server under a flood: how long its half-open connections live, and how
 * long the victim's connection may go unanswered while the flood takes the receive task. A
 * sanitizer's build on a busy machine (VEGA_TEST_SCALE > 1) gets several times longer: the
 * timeout is a bound on the test's length, not a claim about speed. */
static inline uint64_t flood_idle_ms(void)
{
    const char *s = getenv("VEGA_TEST_SCALE");
    return s && atol(s) > 1 ? 8000 : 2500;
}

/* A client that connects and does round trips of len bytes until stopped: the server must keep
 * answering it through an attack. */
struct victim {
    struct creds *k;
    vega_addr addr;
    size_t len;
    vega_task *task;
    atomic_int rounds;
    atomic_bool stop, connected;
    atomic_bool pause, paused; /* between two round trips, while pause is set */
    atomic_bool idle_ok;       /* its connection may end by idle timeout: it connects again */
    atomic_int reconnects;     /* ... how many times it did */
};

static inline void *victim_task(void *arg)
{
    struct victim *m = arg;
    vega_quic_endpoint_opts co;
    client_opts(&co, m->k);
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    vega_quic_ep_conn *c;
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &m->addr, &cc, &c, DL(20000)), 0);
    atomic_store(&m->connected, true);
    for (uint32_t i = 0; !atomic_load(&m->stop); i++) {
        while (atomic_load(&m->pause) && !atomic_load(&m->stop)) {
            atomic_store(&m->paused, true);
            vega_sleep_ms(2);
        }
        atomic_store(&m->paused, false);
        if (roundtrip_try(c, m->len, i + 1) < 0) {
            VCHECK(atomic_load(&m->idle_ok));
            vega_quic_ep_conn_release(c);
            VCHECK_EQ(vega_quic_endpoint_connect(cep, &m->addr, &cc, &c, DL(30000)), 0);
            atomic_fetch_add(&m->reconnects, 1);
            continue;
        }
        atomic_fetch_add(&m->rounds, 1);
    }
    VCHECK_EQ(vega_quic_ep_conn_close(c, VEGA_QUIC_CLOSE_APPLICATION, 0, "done"), 0);
    VCHECK_EQ(vega_quic_ep_conn_wait_closed(c, DL(CLOSE_WAIT_MS)), 0);
    vega_quic_ep_conn_release(c);
    vega_quic_endpoint_free(cep);
    return NULL;
}

static inline void victim_start(struct victim *m, struct creds *k, const vega_addr *addr,
                                size_t len)
{
    memset(m, 0, sizeof *m);
    m->k = k;
    m->addr = *addr;
    m->len = len;
    VCHECK_EQ(vega_task_spawn(&m->task, victim_task, m), 0);
}

/* Waits until the victim completed n more round trips than it had at `from`. */
static inline void victim_wait(struct victim *m, int from, int n)
{
    vega_deadline dl = DL(30000);
    while (atomic_load(&m->rounds) < from + n && vega_now() < dl)
        vega_sleep_ms(2);
    VCHECK(atomic_load(&m->rounds) >= from + n);
}

/* Holds the victim between two round trips (so that what the server holds for it is the same
 * from one pause to the next), or lets it go on. */
static inline void victim_pause(struct victim *m, bool pause)
{
    atomic_store(&m->pause, pause);
    vega_deadline dl = DL(30000);
    while (pause && !atomic_load(&m->paused) && vega_now() < dl)
        vega_sleep_ms(2);
    VCHECK(!pause || atomic_load(&m->paused));
}

static inline void victim_stop(struct victim *m)
{
    atomic_store(&m->stop, true);
    VCHECK_EQ(vega_task_join(m->task, NULL, DL(30000)), 0);
}

/* ---- the raw client ------------------------------------------------------------------------ */

struct rawc {
    vega_sock *u;
    vega_addr srv;
    vega_quic_opts o;
    vega_quic_conn *qc;
    vega_mutex mu;
    vega_notify wake;
    vega_task *pump;
    atomic_bool stop;
    atomic_bool silent; /* send nothing the core writes */
    atomic_bool deaf;   /* count what arrives but do not feed it to the core */
    atomic_bool hs_done, closed;
    uint64_t close_code;
    bool close_app, close_local;
    atomic_size_t rx_dgrams, rx_bytes, stream_bytes;
};

static inline void rawc_events(struct rawc *r)
{
    vega_quic_event ev;
    while (vega_quic_conn_next_event(r->qc, &ev)) {
        if (ev.type == VEGA_QUIC_EV_HANDSHAKE_DONE) {
            atomic_store(&r->hs_done, true);
        } else if (ev.type == VEGA_QUIC_EV_CLOSED) {
            r->close_code = ev.error_code;
            r->close_app = ev.app;
            r->close_local = ev.local;
            atomic_store(&r->closed, true);
        } else if (ev.type == VEGA_QUIC_EV_STREAM_READABLE) {
            uint8_t buf[4096];
            bool fin = false;
            vega_ssize n;
            while ((n = vega_quic_stream_read(r->qc, ev.stream_id, buf, sizeof buf, &fin)) > 0)
                atomic_fetch_add(&r->stream_bytes, (size_t)n);
        }
    }
    vega_notify_all(&r->wake);
}

/* Writes what the core has (r locked); sent unless the client is silent. */
static inline void rawc_flush(struct rawc *r)
{
    uint8_t buf[1500];
    for (int i = 0; i < 256; i++) {
        vega_ssize n = vega_quic_conn_write(r->qc, NULL, NULL, buf, sizeof buf, vega_now());
        if (n <= 0)
            break;
        if (!atomic_load(&r->silent))
            (void)vega_udp_send_to(r->u, buf, (size_t)n, &r->srv, DL(1000));
    }
    rawc_events(r);
}

static inline void *rawc_pump(void *arg)
{
    struct rawc *r = arg;
    uint8_t buf[2048];
    while (!atomic_load(&r->stop)) {
        VCHECK_EQ(vega_mutex_lock(&r->mu, VEGA_DEADLINE_NEVER), 0);
        uint64_t now = vega_now();
        if (vega_quic_conn_expiry(r->qc) <= now)
            (void)vega_quic_conn_handle_expiry(r->qc, now);
        rawc_flush(r);
        vega_deadline dl = DL(5);
        if (vega_quic_conn_expiry(r->qc) < dl)
            dl = vega_quic_conn_expiry(r->qc);
        vega_mutex_unlock(&r->mu);
        vega_addr from;
        vega_ssize n = vega_udp_recv_from(r->u, buf, sizeof buf, &from, dl);
        if (n == -ECANCELED)
            break;
        if (n <= 0)
            continue;
        atomic_fetch_add(&r->rx_dgrams, 1);
        atomic_fetch_add(&r->rx_bytes, (size_t)n);
        if (atomic_load(&r->deaf))
            continue;
        VCHECK_EQ(vega_mutex_lock(&r->mu, VEGA_DEADLINE_NEVER), 0);
        vega_quic_path p;
        memset(&p, 0, sizeof p);
        memcpy(&p.remote, &from.ss, from.len);
        p.remote_len = from.len;
        (void)vega_quic_conn_read(r->qc, &p, 0, buf, (size_t)n, vega_now());
        rawc_flush(r);
        vega_mutex_unlock(&r->mu);
    }
    return NULL;
}

/* Connects a raw client to srv (with o: the core's settings, NULL for the defaults here) and
 * waits for its handshake. */
static inline void rawc_open(struct rawc *r, struct creds *k, const vega_addr *srv,
                             const vega_quic_opts *o)
{
    memset(r, 0, sizeof *r);
    vega_mutex_init(&r->mu);
    vega_notify_init(&r->wake);
    r->srv = *srv;
    if (o) {
        r->o = *o;
    } else {
        vega_quic_opts_init(&r->o);
        r->o.idle_timeout_ms = 20000;
    }
    r->o.tls.ca = k->ca;
    r->o.tls.server_name = "localhost";
    r->o.tls.alpn[0] = "vega-test";
    r->o.tls.n_alpn = 1;
    vega_addr any = loopback(0), local;
    VCHECK_EQ(vega_udp_bind(&r->u, &any, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(r->u, &local), 0);
    vega_quic_path p;
    memset(&p, 0, sizeof p);
    memcpy(&p.local, &local.ss, local.len);
    p.local_len = local.len;
    memcpy(&p.remote, &srv->ss, srv->len);
    p.remote_len = srv->len;
    VCHECK_EQ(vega_quic_conn_client_new(&r->qc, &r->o, &p, vega_now()), 0);
    VCHECK_EQ(vega_task_spawn(&r->pump, rawc_pump, r), 0);
    vega_deadline dl = DL(20000);
    while (!atomic_load(&r->hs_done) && !atomic_load(&r->closed) && vega_now() < dl)
        vega_notify_wait(&r->wake, DL(20));
    VCHECK(atomic_load(&r->hs_done));
}

/* The core, locked; rawc_unlock sends what the caller queued. */
static inline vega_quic_conn *rawc_lock(struct rawc *r)
{
    VCHECK_EQ(vega_mutex_lock(&r->mu, VEGA_DEADLINE_NEVER), 0);
    return r->qc;
}

static inline void rawc_unlock(struct rawc *r)
{
    rawc_flush(r);
    vega_mutex_unlock(&r->mu);
}

/* Sends frames as the raw client's next 1-RTT packet (a packet its core could have sent, with
 * frames its core would never send). */
static inline void rawc_forge(struct rawc *r, const vega_quic_frame *f, size_t n)
{
    vega_quic_conn *qc = rawc_lock(r);
    struct qpkt p;
    qpkt_from_conn(&p, qc);
    uint8_t out[1500];
    vega_ssize w = qpkt_build(&p, f, n, out, sizeof out);
    VCHECK(w > 0);
    VCHECK_EQ(vega_udp_send_to(r->u, out, (size_t)w, &r->srv, DL(1000)), w);
    rawc_unlock(r);
}

/* Waits until the raw client's connection closed (the server closed it). */
static inline void rawc_wait_closed(struct rawc *r)
{
    vega_deadline dl = DL(20000);
    while (!atomic_load(&r->closed) && vega_now() < dl)
        vega_notify_wait(&r->wake, DL(20));
    VCHECK(atomic_load(&r->closed));
}

static inline void rawc_close(struct rawc *r)
{
    atomic_store(&r->stop, true);
    VCHECK_EQ(vega_task_join(r->pump, NULL, DL(10000)), 0);
    vega_quic_conn_free(r->qc);
    vega_sock_close(r->u);
    vega_mutex_fini(&r->mu);
    vega_notify_fini(&r->wake);
}

/* A client's first datagram, as a real client core writes it (its Initial with the
 * ClientHello, padded to 1200 bytes, random connection IDs): returns its length. */
static inline size_t client_initial(struct creds *k, const vega_addr *srv, uint8_t *out, size_t cap)
{
    vega_quic_opts o;
    vega_quic_opts_init(&o);
    o.tls.ca = k->ca;
    o.tls.server_name = "localhost";
    o.tls.alpn[0] = "vega-test";
    o.tls.n_alpn = 1;
    vega_quic_path p;
    memset(&p, 0, sizeof p);
    memcpy(&p.remote, &srv->ss, srv->len);
    p.remote_len = srv->len;
    vega_quic_conn *qc;
    VCHECK_EQ(vega_quic_conn_client_new(&qc, &o, &p, vega_now()), 0);
    vega_ssize n = vega_quic_conn_write(qc, NULL, NULL, out, cap, vega_now());
    vega_quic_conn_free(qc);
    VCHECK(n >= 1200);
    return (size_t)n;
}

#endif
