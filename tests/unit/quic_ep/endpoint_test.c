/* SPDX-License-Identifier: MIT */
/* The QUIC endpoint over real UDP sockets on loopback: servers and clients in one runtime,
 * streams as vega_streams, Retry, tokens, Version Negotiation, stateless resets, limits,
 * junk datagrams, resumption, and connections that hold no task while idle. */
#include <string.h>

#include <vega/crypto.h>
#include <vega/quic_ep.h>
#include <vega/quic_wire.h>
#include <vega/rt.h>
#include <vega/stream.h>

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
}

/* Sends len pseudo-random bytes on a new stream of c and checks they come back. */
static void roundtrip(vega_quic_ep_conn *c, size_t len, uint32_t seed)
{
    vega_stream *s;
    VCHECK_EQ(vega_quic_ep_stream_open(c, true, &s, NULL, vega_deadline_in_ms(10000)), 0);
    uint8_t *out = malloc(len), *in = malloc(len + 1);
    VCHECK(out && in);
    for (size_t i = 0; i < len; i++) {
        seed = seed * 1103515245u + 12345u;
        out[i] = (uint8_t)(seed >> 16);
    }
    /* write and read in turns (the echo can only hold what flow control lets it) */
    size_t got = 0, sent = 0;
    while (sent < len || got < len) {
        if (sent < len) {
            size_t n = len - sent < 4096 ? len - sent : 4096;
            VCHECK_EQ(vega_stream_write(s, out + sent, n, NULL, vega_deadline_in_ms(20000)),
                      (vega_ssize)n);
            sent += n;
            if (sent == len)
                VCHECK_EQ(vega_stream_shutdown(s, SHUT_WR, 0), 0);
        }
        vega_ssize r = vega_stream_read(s, in + got, len + 1 - got,
                                        sent < len ? vega_now() : vega_deadline_in_ms(20000));
        if (r == -ETIMEDOUT)
            continue;
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
