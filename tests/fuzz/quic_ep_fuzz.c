/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the QUIC endpoint (lib/quic_ep): datagrams in, whatever comes out (RFC
 * 9000 §5.2 routing, §6 Version Negotiation, §8 Retry and tokens, §10.3 stateless resets, the
 * endpoint's bounds). Each input gets a fresh listening server endpoint on loopback whose
 * connections draw their randomness from a PRNG seeded the same for every input (and an Ed25519
 * certificate, whose signatures are deterministic), so a recorded client flight completes the
 * handshake again on replay. Byte 0 picks the settings (Retry mode, max_conns, max_handshakes,
 * retry_threshold, NEW_TOKEN); the rest is records [source][len hi][len lo][bytes]: the datagram
 * goes down the receive task's path (vega__ep_fuzz_input) as if from one of four loopback
 * addresses whose sockets nobody reads (where the endpoint's answers go). After each datagram
 * the endpoint's tasks run; its counters must stay consistent, its connections within
 * max_conns, and when it is freed every byte it allocated must have come back.
 * VEGA_QUIC_EP_FUZZ_SEEDS=<dir> writes the seed corpus (real client flights) and exits.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/quic_ep.h>
#include <vega/rt.h>

#include "ep_int.h"
#include "fuzz_target.h"
#include "qtls_certs.h"

#define SOURCES   4
#define MAX_DGRAM 4096
#define MAX_RECS  64

/* ---- a counting allocator (the endpoint's and its connections' memory) --------------------- */

static size_t live_blocks;

static void *cm_malloc(void *ud, size_t n)
{
    (void)ud;
    void *p = malloc(n ? n : 1);
    if (p)
        __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    return p;
}

static void *cm_calloc(void *ud, size_t n, size_t size)
{
    (void)ud;
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p)
        __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    return p;
}

static void *cm_realloc(void *ud, void *p, size_t n)
{
    (void)ud;
    return realloc(p, n ? n : 1);
}

static void cm_free(void *ud, void *p)
{
    (void)ud;
    __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    free(p);
}

static const vega_mem cmem = {cm_malloc, cm_calloc, cm_realloc, cm_free, NULL};

/* ---- what stays for the process ------------------------------------------------------------ */

static struct {
    vega_rt *rt;
    vega_crypto_cert_chain *chain;
    vega_crypto_key *key;
    vega_crypto_cert_store *ca;
    vega_sock *sink[SOURCES]; /* bound, never read: the addresses datagrams come "from" */
    vega_addr from[SOURCES];
    uint64_t rng;
} g;

static void fail(const char *what)
{
    fprintf(stderr, "quic_ep_fuzz: %s\n", what);
    abort();
}

/* The connections' randomness: the same sequence for every input. */
static int det_rand(void *ud, void *buf, size_t len)
{
    (void)ud;
    uint8_t *b = buf;
    for (size_t i = 0; i < len; i++) {
        g.rng ^= g.rng << 13;
        g.rng ^= g.rng >> 7;
        g.rng ^= g.rng << 17;
        b[i] = (uint8_t)(g.rng >> 24);
    }
    return 0;
}

static void *setup_main(void *arg)
{
    (void)arg;
    for (int i = 0; i < SOURCES; i++) {
        vega_addr a;
        if (vega_addr_from_ip(&a, "127.0.0.1", 0) < 0 || vega_udp_bind(&g.sink[i], &a, 0) < 0 ||
            vega_sock_local_addr(g.sink[i], &g.from[i]) < 0)
            fail("no loopback socket");
    }
    return NULL;
}

static void setup(void)
{
#ifdef M_MMAP_THRESHOLD
    /* each input's endpoint allocates ~1.5 MB of socket buffers: from the heap, not a fresh
     * mapping each time (munmap's TLB shootdowns made a run ten times slower) */
    mallopt(M_MMAP_THRESHOLD, 16 * 1024 * 1024);
#endif
    vega_rt_opts ro;
    vega_rt_opts_init(&ro);
    ro.flavor = VEGA_RT_CURRENT_THREAD;
    if (vega_rt_new(&g.rt, &ro) < 0 || vega_crypto_cert_chain_new(&g.chain) < 0 ||
        vega_crypto_cert_chain_add(g.chain, QT_SRV_ED_PEM, strlen(QT_SRV_ED_PEM)) < 0 ||
        vega_crypto_key_load_private(&g.key, QT_SRV_ED_KEY, strlen(QT_SRV_ED_KEY)) < 0 ||
        vega_crypto_cert_store_new(&g.ca, NULL, NULL) < 0 ||
        vega_crypto_cert_store_add_pem(g.ca, QT_CA_PEM, strlen(QT_CA_PEM)) < 0 ||
        vega_rt_block_on(g.rt, setup_main, NULL, NULL) < 0)
        fail("setup");
}

/* ---- one input ------------------------------------------------------------------------------ */

static const uint8_t static_key[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                       12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                       23, 24, 25, 26, 27, 28, 29, 30, 31};

static void ep_opts(vega_quic_endpoint_opts *o, uint8_t cfg)
{
    vega_quic_endpoint_opts_init(o);
    o->quic.tls.chain = g.chain;
    o->quic.tls.key = g.key;
    o->quic.tls.alpn[0] = "vega-fuzz";
    o->quic.tls.n_alpn = 1;
    o->quic.rand = det_rand;
    o->quic.idle_timeout_ms = 5000;
    o->sockets = 1;
    static const vega_quic_retry_mode modes[4] = {VEGA_QUIC_RETRY_NEVER, VEGA_QUIC_RETRY_ALWAYS,
                                                  VEGA_QUIC_RETRY_AUTO, VEGA_QUIC_RETRY_NEVER};
    o->retry = modes[cfg & 3];
    o->max_conns = 1 + ((cfg >> 2) & 3);
    o->max_handshakes = 1 + (size_t)((cfg >> 4) & 1) * 2;
    o->retry_threshold = 1 + (size_t)((cfg >> 5) & 1);
    o->no_new_tokens = cfg & 0x40;
    o->token_lifetime_s = UINT32_MAX; /* NEW_TOKEN tokens of the seeds stay good */
    o->static_key = static_key;
    o->max_resets_per_s = 4;
    o->mem = &cmem;
}

static void check_stats(const vega_quic_endpoint *ep, const vega_quic_endpoint_opts *o,
                        uint64_t fed)
{
    vega_quic_endpoint_stats st;
    vega_quic_endpoint_get_stats(ep, &st);
    if (st.dgrams_in != fed)
        fail("dgrams_in is not what was fed");
    if (st.conns_open > o->max_conns)
        fail("more connections than max_conns");
    if (st.handshakes > st.conns_open)
        fail("more handshakes than connections");
    if (st.conns_accepted > fed || st.dgrams_dropped > fed)
        fail("more connections or drops than datagrams");
    /* each datagram is answered at most once without a connection */
    if (st.retries_sent + st.vn_sent + st.resets_sent > fed)
        fail("more stateless answers than datagrams");
    if (st.conns_open > st.conns_accepted)
        fail("open connections that were never accepted");
}

struct input {
    const uint8_t *data;
    size_t size;
};

/* Lets the endpoint's tasks run what the last datagram started (flushes, timers due). */
static void settle(void)
{
    for (int i = 0; i < 4; i++)
        (void)vega_yield();
}

static void *input_main(void *arg)
{
    const struct input *in = arg;
    vega_quic_endpoint_opts o;
    ep_opts(&o, in->data[0]);
    g.rng = 0x2545f4914f6cdd1dull;
    vega_quic_endpoint *ep;
    vega_addr any, bound;
    if (vega_quic_endpoint_new(&ep, &o) < 0 || vega_addr_from_ip(&any, "127.0.0.1", 0) < 0 ||
        vega_quic_endpoint_listen(ep, &any, 0, &bound) < 0)
        fail("no endpoint");
    struct ep_sock *s = ep->socks[0];
    static uint8_t dgram[MAX_DGRAM];
    const uint8_t *p = in->data + 1;
    size_t left = in->size - 1;
    uint64_t fed = 0;
    for (int r = 0; r < MAX_RECS && left >= 3; r++) {
        uint8_t src = p[0];
        size_t len = (size_t)p[1] << 8 | p[2];
        p += 3;
        left -= 3;
        if (len > left)
            len = left;
        if (len > MAX_DGRAM)
            len = MAX_DGRAM;
        memcpy(dgram, p, len); /* decrypted in place */
        p += len;
        left -= len;
        vega__ep_fuzz_input(s, dgram, len, &g.from[src % SOURCES], vega_now());
        fed++;
        settle();
        check_stats(ep, &o, fed);
    }
    vega_quic_endpoint_free(ep);
    if (__atomic_load_n(&live_blocks, __ATOMIC_RELAXED) != 0)
        fail("the endpoint did not give back every block");
    return NULL;
}

/* ---- the seed corpus --------------------------------------------------------------------------
 */

struct seed {
    uint8_t buf[64 * 1024];
    size_t len;
};

static void seed_add(struct seed *sd, uint8_t src, const uint8_t *d, size_t n)
{
    if (sd->len + 3 + n > sizeof sd->buf)
        fail("seed too large");
    sd->buf[sd->len++] = src;
    sd->buf[sd->len++] = (uint8_t)(n >> 8);
    sd->buf[sd->len++] = (uint8_t)n;
    memcpy(sd->buf + sd->len, d, n);
    sd->len += n;
}

static void seed_write(const char *dir, const char *name, const struct seed *sd)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(sd->buf, 1, sd->len, f) != sd->len)
        fail("cannot write a seed");
    fclose(f);
}

static uint64_t client_rng;

static int client_rand(void *ud, void *buf, size_t len)
{
    (void)ud;
    uint8_t *b = buf;
    for (size_t i = 0; i < len; i++) {
        client_rng = client_rng * 6364136223846793005ull + 1442695040888963407ull;
        b[i] = (uint8_t)(client_rng >> 56);
    }
    return 0;
}

/* A client core (seeded with client_seed) talking to an endpoint fed as the fuzz input would
 * be: every client datagram is recorded into sd; the endpoint's answers come back through sink
 * 0. `rounds` exchanges; once the handshake is done the client sends a request on a stream.
 * With token, the client presents it. Returns the NEW_TOKEN token it got (length), if any. */
static size_t converse(struct seed *sd, uint8_t cfg, int rounds, uint64_t client_seed,
                       const uint8_t *token, size_t token_len, uint8_t *tok_out)
{
    /* what an earlier conversation left in the sink must not reach this client */
    uint8_t junk[MAX_DGRAM];
    while (vega_udp_recv_from(g.sink[0], junk, sizeof junk, NULL, 0) > 0)
        ;
    vega_quic_endpoint_opts o;
    ep_opts(&o, cfg);
    g.rng = 0x2545f4914f6cdd1dull;
    client_rng = client_seed;
    vega_quic_endpoint *ep;
    vega_addr any, bound;
    if (vega_quic_endpoint_new(&ep, &o) < 0 || vega_addr_from_ip(&any, "127.0.0.1", 0) < 0 ||
        vega_quic_endpoint_listen(ep, &any, 0, &bound) < 0)
        fail("no endpoint");
    struct ep_sock *s = ep->socks[0];
    vega_quic_opts co;
    vega_quic_opts_init(&co);
    co.tls.ca = g.ca;
    co.tls.server_name = "localhost";
    co.tls.alpn[0] = "vega-fuzz";
    co.tls.n_alpn = 1;
    co.rand = client_rand;
    co.token = token;
    co.token_len = token_len;
    vega_quic_path path;
    memset(&path, 0, sizeof path);
    memcpy(&path.local, &g.from[0].ss, g.from[0].len);
    path.local_len = g.from[0].len;
    memcpy(&path.remote, &bound.ss, bound.len);
    path.remote_len = bound.len;
    vega_quic_conn *qc;
    if (vega_quic_conn_client_new(&qc, &co, &path, vega_now()) < 0)
        fail("no client");
    size_t tok_len = 0;
    bool asked = false;
    uint64_t sid = 0;
    for (int r = 0; r < rounds; r++) {
        uint8_t out[1500];
        vega_ssize n;
        while ((n = vega_quic_conn_write(qc, NULL, NULL, out, sizeof out, vega_now())) > 0) {
            seed_add(sd, 0, out, (size_t)n);
            vega__ep_fuzz_input(s, out, (size_t)n, &g.from[0], vega_now());
        }
        settle();
        uint8_t in[MAX_DGRAM];
        vega_ssize k;
        while ((k = vega_udp_recv_from(g.sink[0], in, sizeof in, NULL, vega_deadline_in_ms(50))) >
               0)
            (void)vega_quic_conn_read(qc, &path, 0, in, (size_t)k, vega_now());
        vega_quic_event ev;
        while (vega_quic_conn_next_event(qc, &ev)) {
            if (ev.type == VEGA_QUIC_EV_NEW_TOKEN && ev.len <= 512) {
                memcpy(tok_out, ev.data, ev.len);
                tok_len = ev.len;
            }
            if (ev.type == VEGA_QUIC_EV_HANDSHAKE_DONE && !asked &&
                vega_quic_stream_open(qc, true, &sid) == 0) {
                asked = true;
                (void)vega_quic_stream_write(qc, sid, "hello, endpoint", 15, true);
            }
        }
        if (vega_quic_conn_expiry(qc) <= vega_now())
            (void)vega_quic_conn_handle_expiry(qc, vega_now());
    }
    vega_quic_conn_free(qc);
    vega_quic_endpoint_free(ep);
    return tok_len;
}

static void *seeds_main(void *arg)
{
    const char *dir = arg;
    static struct seed sd;
    static uint8_t tok[512];
    /* a whole connection, and the token it got for the next one */
    sd.len = 0;
    sd.buf[sd.len++] = 0x03; /* Retry NEVER, max_conns 1 */
    size_t tl = converse(&sd, 0x03, 6, 1, NULL, 0, tok);
    seed_write(dir, "handshake_stream", &sd);
    /* the next connection with the NEW_TOKEN token, under Retry ALWAYS */
    if (tl) {
        sd.len = 0;
        sd.buf[sd.len++] = 0x01;
        converse(&sd, 0x01, 4, 2, tok, tl, tok);
        seed_write(dir, "new_token", &sd);
    }
    /* Retry ALWAYS: the Initial, then the client's answer to the Retry (its token is bound to
     * the time: on replay it is stale, so INVALID_TOKEN) */
    sd.len = 0;
    sd.buf[sd.len++] = 0x01;
    converse(&sd, 0x01, 3, 3, NULL, 0, tok);
    seed_write(dir, "retry_flow", &sd);
    /* two clients' Initials from two addresses, max_conns 1: one refused */
    sd.len = 0;
    sd.buf[sd.len++] = 0x03;
    converse(&sd, 0x03, 1, 4, NULL, 0, tok);
    size_t first = sd.len;
    converse(&sd, 0x03, 1, 5, NULL, 0, tok);
    sd.buf[first] = 1; /* the second one's source */
    seed_write(dir, "two_initials", &sd);
    /* junk: an unknown version (Version Negotiation), a short header (stateless reset), a
     * runt, a long header that is no Initial */
    sd.len = 0;
    sd.buf[sd.len++] = 0x02;
    uint8_t d[1200];
    memset(d, 0x5a, sizeof d);
    d[0] = 0xc0;
    d[1] = 0x1a, d[2] = 0x2a, d[3] = 0x3a, d[4] = 0x4a;
    d[5] = 8;
    d[14] = 4;
    seed_add(&sd, 0, d, sizeof d);
    d[0] = 0x45;
    seed_add(&sd, 1, d, 60);
    seed_add(&sd, 2, d, 3);
    d[0] = 0xe0;
    d[1] = d[2] = d[3] = 0;
    d[4] = 1;
    seed_add(&sd, 3, d, 200);
    seed_write(dir, "junk", &sd);
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g.rt) {
        setup();
        const char *dir = getenv("VEGA_QUIC_EP_FUZZ_SEEDS");
        if (dir) {
            if (vega_rt_block_on(g.rt, seeds_main, (void *)dir, NULL) < 0)
                fail("seeds");
            exit(0);
        }
    }
    if (size < 1)
        return 0;
    struct input in = {data, size};
    if (vega_rt_block_on(g.rt, input_main, &in, NULL) < 0)
        fail("block_on");
    return 0;
}
