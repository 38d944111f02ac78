/* SPDX-License-Identifier: MIT */
/* The QUIC endpoint over real UDP sockets on loopback: servers and clients in one runtime,
 * streams as vega_streams, Retry, tokens, Version Negotiation, stateless resets, limits,
 * junk datagrams, resumption, and connections that hold no task while idle. */
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vega/crypto.h>
#include <vega/quic_ep.h>
#include <vega/quic_wire.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/sync.h>

#include "../quic/qtls_certs.h"
#include "vtest.h"

/* ---- fixtures ---------------------------------------------------------------------------- */

struct creds {
    vega_crypto_cert_chain *chain;
    vega_crypto_key *key;
    vega_crypto_cert_store *ca, *other_ca;
    uint8_t ticket_key[32];
};

static void creds_load(struct creds *k)
{
    memset(k, 0, sizeof *k);
    VCHECK_EQ(vega_crypto_cert_chain_new(&k->chain), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(k->chain, QT_SRV_P256_PEM, strlen(QT_SRV_P256_PEM)), 0);
    VCHECK_EQ(vega_crypto_key_load_private(&k->key, QT_SRV_P256_KEY, strlen(QT_SRV_P256_KEY)), 0);
    VCHECK_EQ(vega_crypto_cert_store_new(&k->ca, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(k->ca, QT_CA_PEM, strlen(QT_CA_PEM)), 0);
    VCHECK_EQ(vega_crypto_cert_store_new(&k->other_ca, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(k->other_ca, QT_OTHER_CA_PEM, strlen(QT_OTHER_CA_PEM)),
              0);
    for (int i = 0; i < 32; i++)
        k->ticket_key[i] = (uint8_t)(i * 5 + 3);
}

static void creds_free(struct creds *k)
{
    vega_crypto_cert_chain_free(k->chain);
    vega_crypto_key_free(k->key);
    vega_crypto_cert_store_free(k->ca);
    vega_crypto_cert_store_free(k->other_ca);
}

static void server_opts(vega_quic_endpoint_opts *o, struct creds *k)
{
    vega_quic_endpoint_opts_init(o);
    o->quic.tls.chain = k->chain;
    o->quic.tls.key = k->key;
    o->quic.tls.alpn[0] = "vega-test";
    o->quic.tls.n_alpn = 1;
    o->quic.tls.ticket_key = k->ticket_key;
    o->quic.tls.early_data = true;
    o->retry = VEGA_QUIC_RETRY_NEVER;
}

static void client_opts(vega_quic_endpoint_opts *o, struct creds *k)
{
    vega_quic_endpoint_opts_init(o);
    o->quic.tls.ca = k->ca;
    o->quic.tls.alpn[0] = "vega-test";
    o->quic.tls.n_alpn = 1;
    o->quic.tls.early_data = true;
}

static vega_addr loopback(uint16_t port)
{
    vega_addr a;
    VCHECK_EQ(vega_addr_from_ip(&a, "127.0.0.1", port), 0);
    return a;
}

/* A server that echoes every stream of every connection it accepts, until shut down. */
struct echo_srv {
    vega_quic_endpoint *ep;
    vega_addr addr;
    vega_task *acceptor;
    size_t conns, streams;
    vega_quic_ep_conn *first; /* the first connection accepted (retained) */
};

static void *echo_stream_task(void *arg)
{
    vega_stream *s = arg;
    uint8_t buf[16384];
    for (;;) {
        vega_ssize n = vega_stream_read(s, buf, sizeof buf, vega_deadline_in_ms(20000));
        if (n <= 0)
            break;
        if (vega_stream_write(s, buf, (size_t)n, NULL, vega_deadline_in_ms(20000)) < 0)
            break;
    }
    vega_stream_shutdown(s, SHUT_WR, 0);
    vega_stream_close(s, 0);
    return NULL;
}

static void *echo_conn_task(void *arg)
{
    vega_quic_ep_conn *c = arg;
    for (;;) {
        vega_stream *s;
        if (vega_quic_ep_stream_accept(c, &s, NULL, VEGA_DEADLINE_NEVER) < 0)
            break;
        VCHECK_EQ(vega_task_spawn(NULL, echo_stream_task, s), 0);
    }
    vega_quic_ep_conn_release(c);
    return NULL;
}

static void *echo_accept_task(void *arg)
{
    struct echo_srv *e = arg;
    for (;;) {
        vega_quic_ep_conn *c;
        if (vega_quic_endpoint_accept(e->ep, &c, VEGA_DEADLINE_NEVER) < 0)
            break;
        e->conns++;
        if (!e->first) {
            vega_quic_ep_conn_retain(c);
            e->first = c;
        }
        VCHECK_EQ(vega_task_spawn(NULL, echo_conn_task, c), 0);
    }
    return NULL;
}

static void echo_start(struct echo_srv *e, vega_quic_endpoint_opts *o)
{
    memset(e, 0, sizeof *e);
    VCHECK_EQ(vega_quic_endpoint_new(&e->ep, o), 0);
    vega_addr any = loopback(0);
    VCHECK_EQ(vega_quic_endpoint_listen(e->ep, &any, 0, &e->addr), 0);
    VCHECK(vega_addr_port(&e->addr) != 0);
    VCHECK_EQ(vega_task_spawn(&e->acceptor, echo_accept_task, e), 0);
}

static void echo_stop(struct echo_srv *e)
{
    vega_quic_endpoint_shutdown(e->ep, vega_deadline_in_ms(2000));
    VCHECK_EQ(vega_task_join(e->acceptor, NULL, vega_deadline_in_ms(10000)), 0);
    vega_quic_endpoint_free(e->ep);
    vega_quic_ep_conn_release(e->first);
}

/* Sends len pseudo-random bytes on a new stream of c and checks they come back; mid (may be
 * NULL) runs once when half of them went out. */
static void roundtrip_mid(vega_quic_ep_conn *c, size_t len, uint32_t seed,
                          void (*mid)(vega_quic_ep_conn *c, void *arg), void *arg)
{
    vega_stream *s;
    VCHECK_EQ(vega_quic_ep_stream_open(c, true, &s, NULL, vega_deadline_in_ms(10000)), 0);
    uint8_t *out = malloc(len), *in = malloc(len + 1);
    VCHECK(out && in);
    for (size_t i = 0; i < len; i++) {
        seed = seed * 1103515245u + 12345u;
        out[i] = (uint8_t)(seed >> 16);
    }
    /* Write and read in turns, never more than LEAD bytes ahead of what came back: the echo
     * can only hold what flow control lets it, and with both windows full (this task in a write
     * the echo does not read for, the echo in a write this task does not read for) neither
     * moves again. A read that polls found nothing while a busy machine delayed the echo, and
     * the writes went on until they stopped for good (a write timed out at 20 s, 1-2 runs in
     * 40 beside two busy loops). LEAD is far below the 256 KiB stream window. */
    enum {
        LEAD = 64 * 1024
    };
    size_t got = 0, sent = 0;
    while (sent < len || got < len) {
        bool may_write = sent < len && sent - got < LEAD;
        if (may_write) {
            size_t n = len - sent < 4096 ? len - sent : 4096;
            VCHECK_EQ(vega_stream_write(s, out + sent, n, NULL, vega_deadline_in_ms(20000)),
                      (vega_ssize)n);
            if (mid && sent < len / 2 && sent + n >= len / 2)
                mid(c, arg);
            sent += n;
            if (sent == len)
                VCHECK_EQ(vega_stream_shutdown(s, SHUT_WR, 0), 0);
        }
        vega_ssize r = vega_stream_read(s, in + got, len + 1 - got,
                                        may_write ? vega_now() : vega_deadline_in_ms(20000));
        if (r == -ETIMEDOUT && may_write)
            continue; /* nothing back yet: write on */
        VCHECK(r >= 0);
        if (r == 0)
            break;
        got += (size_t)r;
    }
    VCHECK_EQ(got, len);
    VCHECK(memcmp(in, out, len) == 0);
    VCHECK_EQ(vega_stream_read(s, in, 1, vega_deadline_in_ms(20000)), 0);
    vega_stream_close(s, 0);
    free(out);
    free(in);
}

static void roundtrip(vega_quic_ep_conn *c, size_t len, uint32_t seed)
{
    roundtrip_mid(c, len, seed, NULL, NULL);
}

/* ---- cases ------------------------------------------------------------------------------------
 */

static void echo_body(void)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so, co;
    server_opts(&so, &k);
    client_opts(&co, &k);
    struct echo_srv e;
    echo_start(&e, &so);
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    vega_quic_ep_conn *c;
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &e.addr, &cc, &c, vega_deadline_in_ms(10000)), 0);
    roundtrip(c, 1000, 1);
    roundtrip(c, 3 * 1024 * 1024, 2);
    vega_quic_conn_info info;
    vega_quic_ep_conn_get_info(c, &info);
    VCHECK(info.handshake_done);
    VCHECK_STR(info.alpn, "vega-test");
    VCHECK_EQ(vega_quic_ep_conn_close(c, VEGA_QUIC_CLOSE_APPLICATION, 0, "bye"), 0);
    VCHECK_EQ(vega_quic_ep_conn_wait_closed(c, vega_deadline_in_ms(10000)), 0);
    vega_quic_ep_close_info ci;
    vega_quic_ep_conn_get_close(c, &ci);
    VCHECK(ci.closed && ci.local && ci.app);
    vega_quic_ep_conn_release(c);
    vega_quic_endpoint_free(cep);
    echo_stop(&e);
    VCHECK_EQ(e.conns, 1);
    creds_free(&k);
}

VTEST_CT(echo_current_thread)
{
    echo_body();
}

VTEST_MT(echo_two_workers, 2)
{
    echo_body();
}

/* A client endpoint and one connection to addr; returns the connect code. */
static int dial(struct creds *k, const vega_addr *addr, const vega_quic_connect_opts *cc,
                vega_quic_endpoint **cep, vega_quic_ep_conn **c)
{
    vega_quic_endpoint_opts co;
    client_opts(&co, k);
    VCHECK_EQ(vega_quic_endpoint_new(cep, &co), 0);
    /* A bound, not an expectation: loopback UDP drops under load (a full receive buffer), and
     * three lost Initials cost 1 + 2 + 4 s of PTO before the fourth try. */
    return vega_quic_endpoint_connect(*cep, addr, cc, c, vega_deadline_in_ms(60000));
}

static void hangup(vega_quic_endpoint *cep, vega_quic_ep_conn *c)
{
    if (c) {
        vega_quic_ep_conn_close(c, VEGA_QUIC_CLOSE_APPLICATION, 0, NULL);
        vega_quic_ep_conn_release(c);
    }
    vega_quic_endpoint_free(cep);
}

/* Waits (bounded) until the endpoint has no connection left, then returns its stats. */
static void wait_no_conns(vega_quic_endpoint *ep, vega_quic_endpoint_stats *st)
{
    for (int i = 0; i < 5000; i++) {
        vega_quic_endpoint_get_stats(ep, st);
        if (st->conns_open == 0 && st->handshakes == 0)
            break;
        vega_sleep_ms(2);
    }
}

/* RFC 9000 §8.1.2: with Retry on, the client's first Initial gets a Retry and its second, with
 * the token, a connection. */
VTEST_MT(retry_always, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_opts(&so, &k);
    so.retry = VEGA_QUIC_RETRY_ALWAYS;
    struct echo_srv e;
    echo_start(&e, &so);
    vega_quic_endpoint *cep;
    vega_quic_ep_conn *c;
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    VCHECK_EQ(dial(&k, &e.addr, &cc, &cep, &c), 0);
    roundtrip(c, 100000, 3);
    vega_quic_endpoint_stats st;
    vega_quic_endpoint_get_stats(e.ep, &st);
    VCHECK_EQ(st.retries_sent, 1);
    VCHECK_EQ(st.conns_accepted, 1);
    hangup(cep, c);
    echo_stop(&e);
    creds_free(&k);
}

/* A UDP socket bound to 127.0.0.1 (port 0: a free one), or unbound. */
static int udp_fd(bool bound)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    VCHECK(fd >= 0);
    vega_addr a = loopback(0);
    if (bound)
        VCHECK_EQ(bind(fd, (const struct sockaddr *)&a.ss, a.len), 0);
    return fd;
}

/* vega_quic_endpoint_listen_fds serves a socket made by the caller (as vega-serve --shards'
 * supervisor makes them), on duplicates: the caller's descriptor stays open after the
 * endpoint is gone. With vega_quic_opts.scid_prefix every ID of the server's connection starts
 * with it, the Retry's too (the client's second Initial carries that one: Retry is always on
 * here, and the handshake completes). Sockets that are not bound UDP ones are refused. */
VTEST_CT(listen_fds_and_cid_prefix)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_opts(&so, &k);
    so.retry = VEGA_QUIC_RETRY_ALWAYS;
    so.quic.scid_prefix[0] = 0x42;
    so.quic.scid_prefix_len = 1;
    vega_quic_endpoint *sep;
    VCHECK_EQ(vega_quic_endpoint_new(&sep, &so), 0);
    int bad[3] = {socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), udp_fd(false), -1};
    for (int i = 0; i < 3; i++)
        VCHECK_EQ(vega_quic_endpoint_listen_fds(sep, &bad[i], 1, NULL), -EINVAL);
    close(bad[0]);
    close(bad[1]);
    int fd = udp_fd(true);
    VCHECK_EQ(vega_quic_endpoint_listen_fds(sep, &fd, 0, NULL), -EINVAL);
    vega_addr bound, mine = {.len = sizeof mine.ss};
    VCHECK_EQ(getsockname(fd, (struct sockaddr *)&mine.ss, &mine.len), 0);
    VCHECK_EQ(vega_quic_endpoint_listen_fds(sep, &fd, 1, &bound), 0);
    VCHECK_EQ(vega_quic_endpoint_listen_fds(sep, &fd, 1, NULL), -EBUSY);
    VCHECK_EQ(vega_addr_port(&bound), vega_addr_port(&mine));
    vega_quic_endpoint *cep;
    vega_quic_ep_conn *c, *sc;
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    VCHECK_EQ(dial(&k, &bound, &cc, &cep, &c), 0);
    VCHECK_EQ(vega_quic_endpoint_accept(sep, &sc, vega_deadline_in_ms(10000)), 0);
    vega_quic_endpoint_stats st;
    vega_quic_endpoint_get_stats(sep, &st);
    VCHECK_EQ(st.retries_sent, 1);
    vega_quic_conn *qc = vega_quic_ep_conn_lock(sc);
    VCHECK(qc != NULL);
    const uint8_t *ids[8];
    size_t lens[8];
    size_t n = qc ? vega_quic_conn_scids(qc, ids, lens, 8) : 0;
    VCHECK(n >= 1);
    for (size_t i = 0; i < n && i < 8; i++)
        VCHECK_EQ(ids[i][0], 0x42);
    vega_quic_ep_conn_unlock(sc);
    vega_quic_ep_conn_release(sc);
    hangup(cep, c);
    vega_quic_endpoint_shutdown(sep, vega_deadline_in_ms(1000));
    vega_quic_endpoint_free(sep);
    VCHECK(fcntl(fd, F_GETFD) >= 0); /* the caller's own descriptor */
    close(fd);
    so.quic.scid_prefix_len = VEGA_QUIC_MAX_SCID_PREFIX + 1;
    VCHECK_EQ(vega_quic_endpoint_new(&sep, &so), -EINVAL);
    creds_free(&k);
}

/* §8.1.3: a NEW_TOKEN token from the first connection validates the address of the second, so
 * even a server that always asks for Retry lets it in at once; resumption and 0-RTT with the
 * first connection's session. */
VTEST_MT(token_and_resumption, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_opts(&so, &k);
    so.retry = VEGA_QUIC_RETRY_ALWAYS;
    struct echo_srv e;
    echo_start(&e, &so);
    vega_quic_endpoint *cep;
    vega_quic_ep_conn *c;
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    VCHECK_EQ(dial(&k, &e.addr, &cc, &cep, &c), 0);
    roundtrip(c, 1000, 4);
    /* the ticket and the token come after the handshake: wait for both */
    uint8_t sess[4096], tok[512];
    vega_ssize sn = 0, tn = 0;
    for (int i = 0; i < 2000 && (sn <= 0 || tn <= 0); i++) {
        sn = vega_quic_ep_conn_get_session(c, sess, sizeof sess);
        tn = vega_quic_ep_conn_get_token(c, tok, sizeof tok);
        if (sn <= 0 || tn <= 0)
            vega_sleep_ms(1);
    }
    VCHECK(sn > 0 && tn > 0);
    hangup(cep, c);
    vega_quic_endpoint_stats st;
    vega_quic_endpoint_get_stats(e.ep, &st);
    VCHECK_EQ(st.retries_sent, 1);
    vega_quic_connect_opts cc2 = {.server_name = "localhost",
                                  .session = sess,
                                  .session_len = (size_t)sn,
                                  .token = tok,
                                  .token_len = (size_t)tn,
                                  .early = true};
    VCHECK_EQ(dial(&k, &e.addr, &cc2, &cep, &c), 0);
    roundtrip(c, 50000, 5);
    vega_quic_conn_info info;
    vega_quic_ep_conn_get_info(c, &info);
    VCHECK(info.resumed);
    VCHECK(info.early_data == VEGA_QUIC_EARLY_ACCEPTED);
    vega_quic_endpoint_get_stats(e.ep, &st);
    VCHECK_EQ(st.retries_sent, 1); /* the token spared the second one */
    hangup(cep, c);
    /* each connection's outcome, counted once it ended: both closed by the client */
    wait_no_conns(e.ep, &st);
    VCHECK_EQ(st.conns_open, 0);
    VCHECK_EQ(st.handshakes_ok, 2);
    VCHECK_EQ(st.handshakes_failed, 0);
    VCHECK_EQ(st.closed_peer, 2);
    VCHECK_EQ(st.closed_local, 0);
    VCHECK_EQ(st.closed_idle, 0);
    VCHECK_EQ(st.early_accepted, 1);
    VCHECK_EQ(st.early_rejected, 0);
    uint64_t hs = 0;
    for (size_t b = 0; b < VEGA_QUIC_EP_HS_BUCKETS; b++)
        hs += st.hs_duration[b];
    VCHECK_EQ(hs, 2);
    VCHECK(st.hs_duration_sum_ns > 0);
    VCHECK(st.pkts_sent >= 2 && st.pkts_recv >= 2);
    echo_stop(&e);
    creds_free(&k);
}

/* A client that does not trust the server's certificate fails the handshake with a reason. */
VTEST_CT(handshake_failure)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so, co;
    server_opts(&so, &k);
    struct echo_srv e;
    echo_start(&e, &so);
    client_opts(&co, &k);
    co.quic.tls.ca = k.other_ca;
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    vega_quic_ep_conn *c = NULL;
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &e.addr, &cc, &c, vega_deadline_in_ms(10000)),
              VEGA_ERR_QUIC_EP_HANDSHAKE);
    VCHECK(c == NULL);
    vega_quic_endpoint_free(cep);
    /* the server forgot it, and counted a failed handshake */
    vega_quic_endpoint_stats st;
    wait_no_conns(e.ep, &st);
    VCHECK_EQ(st.conns_open, 0);
    VCHECK_EQ(st.handshakes, 0);
    VCHECK_EQ(st.handshakes_ok, 0);
    VCHECK_EQ(st.handshakes_failed, 1);
    VCHECK_EQ(st.closed_peer + st.closed_local + st.closed_idle, 0);
    echo_stop(&e);
    creds_free(&k);
}

/* max_conns: the connection beyond the bound is refused with CONNECTION_REFUSED. */
VTEST_MT(max_conns_refuses, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_opts(&so, &k);
    so.max_conns = 1;
    struct echo_srv e;
    echo_start(&e, &so);
    vega_quic_endpoint *cep1, *cep2;
    vega_quic_ep_conn *c1, *c2 = NULL;
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    VCHECK_EQ(dial(&k, &e.addr, &cc, &cep1, &c1), 0);
    VCHECK_EQ(dial(&k, &e.addr, &cc, &cep2, &c2), VEGA_ERR_QUIC_EP_REFUSED);
    roundtrip(c1, 1000, 6);
    hangup(cep2, c2);
    hangup(cep1, c1);
    echo_stop(&e);
    creds_free(&k);
}

/* §6: a long header of a version we do not speak, in 1200 bytes, gets Version Negotiation with
 * v1 and v2; QUIC v2 (RFC 9369) connects. */
VTEST_CT(version_negotiation_and_v2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_opts(&so, &k);
    struct echo_srv e;
    echo_start(&e, &so);
    vega_sock *u;
    vega_addr any = loopback(0);
    VCHECK_EQ(vega_udp_bind(&u, &any, 0), 0);
    uint8_t d[1200];
    memset(d, 0, sizeof d);
    d[0] = 0xc0;
    d[1] = 0x1a, d[2] = 0x2a, d[3] = 0x3a, d[4] = 0x4a; /* a reserved version (§15) */
    d[5] = 8;
    memset(d + 6, 0x11, 8);
    d[14] = 4;
    memset(d + 15, 0x22, 4);
    VCHECK_EQ(vega_udp_send_to(u, d, sizeof d, &e.addr, vega_deadline_in_ms(1000)), 1200);
    uint8_t r[1500];
    vega_ssize n = vega_udp_recv_from(u, r, sizeof r, NULL, vega_deadline_in_ms(5000));
    VCHECK(n > 0);
    vega_quic_hdr h;
    VCHECK_EQ(vega_quic_hdr_parse(&h, r, (size_t)n, 8), 0);
    VCHECK_EQ(h.type, VEGA_QUIC_PKT_VN);
    VCHECK_EQ(h.nversions, 2);
    VCHECK_EQ(vega_quic_hdr_vn_version(&h, 0), VEGA_QUIC_V1);
    VCHECK_EQ(vega_quic_hdr_vn_version(&h, 1), VEGA_QUIC_V2);
    VCHECK_EQ(h.dcid_len, 4); /* the client's SCID echoed */
    vega_sock_close(u);
    vega_quic_endpoint *cep;
    vega_quic_ep_conn *c;
    vega_quic_connect_opts cc = {.server_name = "localhost", .version = VEGA_QUIC_V2};
    VCHECK_EQ(dial(&k, &e.addr, &cc, &cep, &c), 0);
    vega_quic_conn_info info;
    vega_quic_ep_conn_get_info(c, &info);
    VCHECK_EQ(info.version, VEGA_QUIC_V2);
    roundtrip(c, 20000, 7);
    hangup(cep, c);
    vega_quic_endpoint_stats st;
    vega_quic_endpoint_get_stats(e.ep, &st);
    VCHECK_EQ(st.vn_sent, 1);
    echo_stop(&e);
    creds_free(&k);
}

/* §10.3: a short-header datagram for no connection gets a Stateless Reset with the token of its
 * CID under the static key, one byte shorter than the trigger, at most max_resets_per_s a
 * second. */
VTEST_CT(stateless_reset)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_opts(&so, &k);
    uint8_t key[32];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(200 - i);
    so.static_key = key;
    so.max_resets_per_s = 3;
    struct echo_srv e;
    echo_start(&e, &so);
    uint8_t full[64], reset_key[32], token[16];
    VCHECK_EQ(vega_crypto_hmac_digest(VEGA_CRYPTO_SHA256, key, 32, "vega quic reset", 15, full), 0);
    memcpy(reset_key, full, 32);
    vega_sock *u;
    vega_addr any = loopback(0);
    VCHECK_EQ(vega_udp_bind(&u, &any, 0), 0);
    uint8_t d[100];
    memset(d, 0x5a, sizeof d);
    d[0] = 0x40; /* short header, fixed bit */
    VCHECK_EQ(vega_quic_reset_token(reset_key, d + 1, 8, token), 0);
    for (int i = 0; i < 10; i++)
        VCHECK_EQ(vega_udp_send_to(u, d, sizeof d, &e.addr, vega_deadline_in_ms(1000)), 100);
    uint8_t r[1500];
    int resets = 0;
    for (;;) {
        vega_ssize n = vega_udp_recv_from(u, r, sizeof r, NULL, vega_deadline_in_ms(300));
        if (n == -ETIMEDOUT)
            break;
        VCHECK(n >= 21 && n < 100);
        VCHECK((r[0] & 0xc0) == 0x40);
        VCHECK(memcmp(r + n - 16, token, 16) == 0);
        resets++;
    }
    VCHECK(resets >= 1 && resets <= 6); /* 3 per second: the window may turn once */
    vega_sock_close(u);
    echo_stop(&e);
    creds_free(&k);
}

/* 5,000 junk datagrams (random bytes and sizes, some with plausible headers) do not disturb the
 * server: a client still connects and transfers, and nothing is left behind. */
VTEST_MT(junk_datagrams, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_opts(&so, &k);
    struct echo_srv e;
    echo_start(&e, &so);
    vega_sock *u;
    vega_addr any = loopback(0);
    VCHECK_EQ(vega_udp_bind(&u, &any, 0), 0);
    uint32_t x = 12345;
    uint8_t d[1400];
    for (int i = 0; i < 5000; i++) {
        size_t len = 1 + (x % sizeof d);
        for (size_t j = 0; j < len; j++) {
            x = x * 1664525u + 1013904223u;
            d[j] = (uint8_t)(x >> 24);
        }
        if (i % 3 == 0) { /* a long header of v1 with random rest */
            d[0] = 0xc0;
            d[1] = d[2] = d[3] = 0;
            d[4] = 1;
            if (len > 6)
                d[5] = (uint8_t)(d[5] % 21);
        }
        vega_udp_send_to(u, d, len, &e.addr, vega_deadline_in_ms(1000));
        if (i % 200 == 0)
            vega_yield();
    }
    vega_sock_close(u);
    vega_quic_endpoint *cep;
    vega_quic_ep_conn *c;
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    VCHECK_EQ(dial(&k, &e.addr, &cc, &cep, &c), 0);
    roundtrip(c, 200000, 8);
    hangup(cep, c);
    vega_quic_endpoint_stats st;
    for (int i = 0; i < 5000; i++) {
        vega_quic_endpoint_get_stats(e.ep, &st);
        if (st.conns_open == 0)
            break;
        vega_sleep_ms(2);
    }
    VCHECK_EQ(st.conns_open, 0);
    VCHECK_EQ(st.handshakes, 0);
    VCHECK(st.dgrams_dropped > 0);
    echo_stop(&e);
    creds_free(&k);
}

/* Sixteen clients at once, three streams each. */
struct many_arg {
    struct creds *k;
    vega_addr addr;
    int idx;
};

static void *many_client(void *arg)
{
    struct many_arg *m = arg;
    vega_quic_endpoint *cep;
    vega_quic_ep_conn *c;
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    VCHECK_EQ(dial(m->k, &m->addr, &cc, &cep, &c), 0);
    for (int i = 0; i < 3; i++)
        roundtrip(c, 30000 + (size_t)i * 1000, (uint32_t)(m->idx * 10 + i));
    hangup(cep, c);
    return NULL;
}

VTEST_MT(many_clients, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_opts(&so, &k);
    struct echo_srv e;
    echo_start(&e, &so);
    struct many_arg args[16];
    vega_task *t[16];
    for (int i = 0; i < 16; i++) {
        args[i] = (struct many_arg){&k, e.addr, i};
        VCHECK_EQ(vega_task_spawn(&t[i], many_client, &args[i]), 0);
    }
    for (int i = 0; i < 16; i++)
        VCHECK_EQ(vega_task_join(t[i], NULL, vega_deadline_in_ms(60000)), 0);
    echo_stop(&e);
    VCHECK_EQ(e.conns, 16);
    creds_free(&k);
}

/* Idle server connections hold no task: with on_conn taking them (no task per connection), 20
 * open connections add exactly their client sides' two tasks each. */
static int take_conn(void *user, vega_quic_ep_conn *c, vega_quic_conn *qc)
{
    (void)c;
    (void)qc;
    atomic_fetch_add((_Atomic int *)user, 1);
    return 0;
}

VTEST_MT(idle_connections_hold_no_task, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_opts(&so, &k);
    _Atomic int taken = 0;
    so.cb.on_conn = take_conn;
    so.user = (void *)&taken;
    vega_quic_endpoint *sep;
    VCHECK_EQ(vega_quic_endpoint_new(&sep, &so), 0);
    vega_addr any = loopback(0), addr;
    VCHECK_EQ(vega_quic_endpoint_listen(sep, &any, 0, &addr), 0);
    vega_quic_endpoint_opts co;
    client_opts(&co, &k);
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_rt_metrics m0, m1;
    vega_rt_get_metrics(vega_rt_current(), &m0);
    vega_quic_ep_conn *c[20];
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    for (int i = 0; i < 20; i++)
        VCHECK_EQ(vega_quic_endpoint_connect(cep, &addr, &cc, &c[i], vega_deadline_in_ms(10000)),
                  0);
    vega_quic_endpoint_stats st;
    for (int i = 0; i < 5000; i++) {
        vega_quic_endpoint_get_stats(sep, &st);
        if (taken == 20 && st.handshakes == 0)
            break;
        vega_sleep_ms(2);
    }
    VCHECK_EQ(taken, 20);
    vega_rt_get_metrics(vega_rt_current(), &m1);
    VCHECK_EQ(m1.live_tasks - m0.live_tasks, 40);
    for (int i = 0; i < 20; i++) {
        vega_quic_ep_conn_close(c[i], VEGA_QUIC_CLOSE_APPLICATION, 0, NULL);
        vega_quic_ep_conn_release(c[i]);
    }
    vega_quic_endpoint_free(cep);
    vega_quic_endpoint_free(sep);
    creds_free(&k);
}

/* Nobody answers: the connect gives up at its deadline. */
VTEST_CT(connect_deadline)
{
    struct creds k;
    creds_load(&k);
    vega_sock *u;
    vega_addr any = loopback(0), silent;
    VCHECK_EQ(vega_udp_bind(&u, &any, 0), 0); /* bound, never read: no ICMP either */
    VCHECK_EQ(vega_sock_local_addr(u, &silent), 0);
    vega_quic_endpoint_opts co;
    client_opts(&co, &k);
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_quic_ep_conn *c = NULL;
    uint64_t t0 = vega_now();
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &silent, NULL, &c, vega_deadline_in_ms(300)),
              -ETIMEDOUT);
    VCHECK_WAITED(t0, 300);
    VCHECK(c == NULL);
    vega_quic_endpoint_free(cep);
    vega_sock_close(u);
    creds_free(&k);
}

/* Happy Eyeballs: "localhost" is ::1 and 127.0.0.1; the server listens on IPv4 only, so the
 * IPv6 attempt goes unanswered and the IPv4 one, started 250 ms later, wins. */
VTEST_MT(connect_host_happy_eyeballs, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_opts(&so, &k);
    struct echo_srv e;
    echo_start(&e, &so);
    vega_quic_endpoint_opts co;
    client_opts(&co, &k);
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_quic_ep_conn *c;
    VCHECK_EQ(vega_quic_endpoint_connect_host(cep, "localhost", vega_addr_port(&e.addr), NULL, &c,
                                              vega_deadline_in_ms(10000)),
              0);
    vega_addr peer;
    vega_quic_ep_conn_peer(c, &peer);
    VCHECK_EQ(vega_addr_family(&peer), AF_INET);
    roundtrip(c, 1000, 9);
    hangup(cep, c);
    echo_stop(&e);
    creds_free(&k);
}

/* The server's shutdown closes its connections: the client hears NO_ERROR. */
VTEST_MT(shutdown_closes_clients, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_opts(&so, &k);
    struct echo_srv e;
    echo_start(&e, &so);
    vega_quic_endpoint *cep;
    vega_quic_ep_conn *c;
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    VCHECK_EQ(dial(&k, &e.addr, &cc, &cep, &c), 0);
    roundtrip(c, 1000, 10);
    echo_stop(&e);
    VCHECK_EQ(vega_quic_ep_conn_wait_closed(c, vega_deadline_in_ms(10000)), 0);
    vega_quic_ep_close_info ci;
    vega_quic_ep_conn_get_close(c, &ci);
    VCHECK(ci.closed && !ci.local && !ci.app);
    VCHECK_EQ(ci.code, VEGA_QUIC_NO_ERROR);
    hangup(cep, c);
    creds_free(&k);
}

/* Nothing listens: the kernel's ICMP port unreachable ends the connect at once (RFC 9000
 * §14.2.1: only a connection that has not heard from its peer acts on it). */
VTEST_CT(connect_refused_by_icmp)
{
    struct creds k;
    creds_load(&k);
    vega_sock *u;
    vega_addr any = loopback(0), closed;
    VCHECK_EQ(vega_udp_bind(&u, &any, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(u, &closed), 0);
    vega_sock_close(u); /* the port is free again: nothing listens there */
    vega_quic_endpoint_opts co;
    client_opts(&co, &k);
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_quic_ep_conn *c = NULL;
    vega_quic_ep_close_info ci;
    memset(&ci, 0, sizeof ci);
    int user_mark = 0;
    vega_quic_connect_opts cc = {.close = &ci, .user = &user_mark};
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &closed, &cc, &c, vega_deadline_in_ms(20000)),
              -ECONNREFUSED);
    VCHECK(c == NULL);
    VCHECK(ci.closed && ci.local);
    vega_quic_endpoint_free(cep);
    creds_free(&k);
}

/* A handshake failure fills the close record the caller passed. */
VTEST_CT(handshake_failure_says_why)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so, co;
    server_opts(&so, &k);
    struct echo_srv e;
    echo_start(&e, &so);
    client_opts(&co, &k);
    co.quic.tls.ca = k.other_ca;
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_quic_ep_close_info ci;
    memset(&ci, 0, sizeof ci);
    vega_quic_connect_opts cc = {.server_name = "localhost", .close = &ci};
    vega_quic_ep_conn *c = NULL;
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &e.addr, &cc, &c, vega_deadline_in_ms(10000)),
              VEGA_ERR_QUIC_EP_HANDSHAKE);
    VCHECK(ci.closed && ci.local && !ci.app);
    VCHECK(ci.code >= VEGA_QUIC_CRYPTO_ERROR && ci.code <= 0x1ff); /* unknown_ca: 0x130 */
    vega_quic_endpoint_free(cep);
    echo_stop(&e);
    creds_free(&k);
}

/* ---- client migration (RFC 9000 §9) ------------------------------------------------------- */

struct mig {
    vega_notify wake;
    atomic_int outcome; /* 0 none yet; 1 validated; -1 failed */
    int rc, rc_again;   /* vega_quic_ep_conn_migrate's, then a second call's at once */
    const vega_addr *local;
};

static void mig_on_event(void *user, vega_quic_ep_conn *c, vega_quic_conn *qc,
                         const vega_quic_event *ev)
{
    (void)c;
    (void)qc;
    struct mig *m = user;
    if (m && ev->type == VEGA_QUIC_EV_PATH_CHANGED) {
        atomic_store(&m->outcome, ev->error_code ? 1 : -1);
        vega_notify_one(&m->wake);
    }
}

/* Half-way through a transfer: move to a new local address. */
static void mig_now(vega_quic_ep_conn *c, void *arg)
{
    struct mig *m = arg;
    VCHECK(vega_quic_ep_conn_lock(c) != NULL);
    m->rc = vega_quic_ep_conn_migrate(c, m->local);
    m->rc_again = vega_quic_ep_conn_migrate(c, m->local);
    vega_quic_ep_conn_unlock(c);
}

static void mig_wait(struct mig *m)
{
    vega_deadline dl = vega_deadline_in_ms(20000);
    while (atomic_load(&m->outcome) == 0)
        if (vega_notify_wait(&m->wake, dl) == -ETIMEDOUT)
            break;
}

static uint16_t path_local_port(vega_quic_ep_conn *c, vega_addr *local)
{
    vega_quic_conn *qc = vega_quic_ep_conn_lock(c);
    VCHECK(qc != NULL);
    vega_quic_path p;
    vega_quic_conn_get_path(qc, &p);
    vega_quic_ep_conn_unlock(c);
    memset(local, 0, sizeof *local);
    memcpy(&local->ss, &p.local, p.local_len);
    local->len = p.local_len;
    return vega_addr_port(local);
}

/* The old socket is closed once the new path is validated: its port can be bound again (waits
 * for it, the socket's tasks end on their own, at most 10 s). */
static bool port_freed(const vega_addr *a)
{
    vega_deadline dl = vega_deadline_in_ms(10000);
    for (;;) {
        vega_sock *u;
        if (vega_udp_bind(&u, a, 0) == 0) {
            vega_sock_close(u);
            return true;
        }
        if (vega_now() >= dl)
            return false;
        vega_sleep_ms(5);
    }
}

/* A client migrates twice in the middle of transfers, to a new port and then to another
 * address (127.0.0.2): each new path validates, the data comes back whole, the server follows
 * to the new address, and the old socket is closed. */
VTEST_MT(client_migrates_mid_transfer, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so, co;
    server_opts(&so, &k);
    struct echo_srv e;
    echo_start(&e, &so);
    client_opts(&co, &k);
    co.cb.on_event = mig_on_event;
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    struct mig m;
    memset(&m, 0, sizeof m);
    vega_notify_init(&m.wake);
    vega_quic_connect_opts cc = {.server_name = "localhost", .user = &m};
    vega_quic_ep_conn *c;
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &e.addr, &cc, &c, vega_deadline_in_ms(10000)), 0);
    roundtrip(c, 1000, 1); /* the handshake is confirmed (HANDSHAKE_DONE) by now */
    vega_addr before, after, seen;
    uint16_t port0 = path_local_port(c, &before);

    /* 1: a new ephemeral port, half-way through 2 MB */
    roundtrip_mid(c, 2 * 1024 * 1024, 7, mig_now, &m);
    VCHECK_EQ(m.rc, 0);
    VCHECK_EQ(m.rc_again, -EBUSY); /* one migration at a time */
    mig_wait(&m);
    VCHECK_EQ(atomic_load(&m.outcome), 1);
    uint16_t port1 = path_local_port(c, &after);
    VCHECK(port1 != 0 && port1 != port0);
    vega_quic_ep_conn_peer(e.first, &seen);
    VCHECK_EQ(vega_addr_port(&seen), port1); /* the server follows */
    VCHECK(port_freed(&before));
    roundtrip(c, 100000, 8); /* the new path carries on alone */
    /* a server connection cannot migrate */
    VCHECK(vega_quic_ep_conn_lock(e.first) != NULL);
    VCHECK_EQ(vega_quic_ep_conn_migrate(e.first, NULL), -EINVAL);
    vega_quic_ep_conn_unlock(e.first);

    /* 2: another local address of the same family, given */
    vega_addr two;
    VCHECK_EQ(vega_addr_from_ip(&two, "127.0.0.2", 0), 0);
    atomic_store(&m.outcome, 0);
    m.local = &two;
    roundtrip_mid(c, 1024 * 1024, 9, mig_now, &m);
    VCHECK_EQ(m.rc, 0);
    mig_wait(&m);
    VCHECK_EQ(atomic_load(&m.outcome), 1);
    vega_quic_ep_conn_peer(e.first, &seen);
    char ip[64];
    VCHECK(vega_addr_format(&seen, ip, sizeof ip) > 0);
    VCHECK(strncmp(ip, "127.0.0.2:", 10) == 0);
    VCHECK(port_freed(&after));
    roundtrip(c, 1000, 10);

    vega_quic_conn_info info;
    vega_quic_ep_conn_get_info(c, &info);
    VCHECK_EQ(info.migrations, 2);
    /* an address of the other family is refused */
    vega_addr six;
    VCHECK_EQ(vega_addr_from_ip(&six, "::1", 0), 0);
    VCHECK(vega_quic_ep_conn_lock(c) != NULL);
    VCHECK_EQ(vega_quic_ep_conn_migrate(c, &six), -EINVAL);
    vega_quic_ep_conn_unlock(c);

    hangup(cep, c);
    echo_stop(&e);
    vega_notify_fini(&m.wake);
    creds_free(&k);
}

/* API rules, ABI: vega_quic_endpoint_stats is versioned as options are. A layout this library
 * does not know is refused and the struct left as it was; the current one is filled to its
 * end and not past it. */
VTEST_CT(stats_layouts)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts co;
    client_opts(&co, &k);
    vega_quic_endpoint *ep;
    VCHECK_EQ(vega_quic_endpoint_new(&ep, &co), 0);
    struct {
        vega_quic_endpoint_stats st;
        unsigned char canary[64];
    } a;
    memset(&a, 0xa5, sizeof a);
    VCHECK_EQ(
        vega_quic_endpoint_get_stats_versioned(ep, &a.st, VEGA_QUIC_ENDPOINT_STATS_VERSION + 1),
        -EINVAL);
    VCHECK_EQ(vega_quic_endpoint_get_stats_versioned(ep, &a.st, 0), -EINVAL);
    VCHECK_EQ(vega_quic_endpoint_get_stats_versioned(NULL, &a.st, 1), -EINVAL);
    VCHECK_EQ(vega_quic_endpoint_get_stats_versioned(ep, NULL, 1), -EINVAL);
    VCHECK(a.st.conns_open == 0xa5a5a5a5a5a5a5a5ull &&
           a.st.hs_duration_sum_ns == 0xa5a5a5a5a5a5a5a5ull);
    VCHECK_EQ(vega_quic_endpoint_get_stats(ep, &a.st), 0);
    VCHECK_EQ(a.st.conns_open, 0);
    VCHECK_EQ(a.st.hs_duration_sum_ns, 0);
    for (size_t i = 0; i < sizeof a.canary; i++)
        VCHECK_EQ(a.canary[i], 0xa5);
    vega_quic_endpoint_free(ep);
    creds_free(&k);
}

/* Checks the vega_quic_conn_info layouts on c: one this library does not know is refused and
 * the struct left as it was; the current one is filled to its end and not past it. */
static void check_conn_info_layouts(vega_quic_ep_conn *c)
{
    struct {
        vega_quic_conn_info info;
        unsigned char canary[64];
    } a;
    memset(&a, 0xa5, sizeof a);
    VCHECK_EQ(vega_quic_ep_conn_get_info_versioned(c, &a.info, VEGA_QUIC_CONN_INFO_VERSION + 1),
              -EINVAL);
    VCHECK_EQ(vega_quic_ep_conn_get_info_versioned(c, &a.info, 0), -EINVAL);
    VCHECK_EQ(vega_quic_ep_conn_get_info_versioned(NULL, &a.info, 1), -EINVAL);
    VCHECK_EQ(vega_quic_ep_conn_get_info_versioned(c, NULL, 1), -EINVAL);
    for (size_t i = 0; i < sizeof a; i++)
        VCHECK_EQ(((unsigned char *)&a)[i], 0xa5);
    VCHECK_EQ(vega_quic_ep_conn_get_info(c, &a.info), 0);
    VCHECK(a.info.handshake_done);
    VCHECK_STR(a.info.alpn, "vega-test");
    for (size_t i = 0; i < sizeof a.canary; i++)
        VCHECK_EQ(a.canary[i], 0xa5);
}

/* Checks the vega_quic_ep_close_info layouts on c, which has ended, as above. */
static void check_close_info_layouts(vega_quic_ep_conn *c)
{
    struct {
        vega_quic_ep_close_info ci;
        unsigned char canary[64];
    } a;
    memset(&a, 0xa5, sizeof a);
    VCHECK_EQ(vega_quic_ep_conn_get_close_versioned(c, &a.ci, VEGA_QUIC_EP_CLOSE_INFO_VERSION + 1),
              -EINVAL);
    VCHECK_EQ(vega_quic_ep_conn_get_close_versioned(c, &a.ci, 0), -EINVAL);
    VCHECK_EQ(vega_quic_ep_conn_get_close_versioned(NULL, &a.ci, 1), -EINVAL);
    VCHECK_EQ(vega_quic_ep_conn_get_close_versioned(c, NULL, 1), -EINVAL);
    for (size_t i = 0; i < sizeof a; i++)
        VCHECK_EQ(((unsigned char *)&a)[i], 0xa5);
    VCHECK_EQ(vega_quic_ep_conn_get_close(c, &a.ci), 0);
    VCHECK(a.ci.closed && a.ci.local && a.ci.app);
    VCHECK_STR(a.ci.reason, "bye");
    for (size_t i = 0; i < sizeof a.canary; i++)
        VCHECK_EQ(a.canary[i], 0xa5);
}

/* API rules, ABI: vega_quic_conn_info through the endpoint, versioned as options are, on a live
 * connection (the core fills it) and on one that has ended (its last values); and
 * vega_quic_ep_close_info once it has ended. */
VTEST_CT(info_layouts)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_opts(&so, &k);
    struct echo_srv e;
    echo_start(&e, &so);
    vega_quic_endpoint *cep;
    vega_quic_ep_conn *c;
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    VCHECK_EQ(dial(&k, &e.addr, &cc, &cep, &c), 0);
    roundtrip(c, 1000, 1);
    check_conn_info_layouts(c);
    VCHECK_EQ(vega_quic_ep_conn_close(c, VEGA_QUIC_CLOSE_APPLICATION, 0, "bye"), 0);
    VCHECK_EQ(vega_quic_ep_conn_wait_closed(c, vega_deadline_in_ms(10000)), 0);
    check_conn_info_layouts(c);
    check_close_info_layouts(c);
    hangup(cep, c);
    echo_stop(&e);
    creds_free(&k);
}
