/* SPDX-License-Identifier: MIT */
/* QUIC bulk transfer between a client and a server core in one thread, joined by the in-memory
 * network (no sockets, no kernel): the ceiling a UDP endpoint can approach. Prints MB/s of
 * stream payload per CPU second for the pair, and the raw AEAD seal+open rate of the same
 * suite on 1200-byte packets for comparison. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qtls_certs.h"
#include "quic_pair.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t want;
static bool done(struct qp *q)
{
    return q->side[1].nst && q->side[1].st[0].fin;
}

/* A sink that only counts, reading in place (peek + consume): like ngtcp2's callback, which
 * hands the application the decrypted packet's bytes, nothing is copied out. */
static void drain(struct qp *q, size_t *got)
{
    struct qp_side *s = &q->side[1];
    vega_quic_event ev;
    while (vega_quic_conn_next_event(s->c, &ev)) {
        if (ev.type != VEGA_QUIC_EV_STREAM_READABLE)
            continue;
        for (;;) {
            const uint8_t *p;
            size_t n;
            bool fin;
            if (vega_quic_stream_peek(s->c, ev.stream_id, &p, &n, &fin) < 0)
                break;
            if (n == 0 && !fin)
                break;
            *got += n;
            if (vega_quic_stream_consume(s->c, ev.stream_id, n) < 0)
                break;
            if (fin) {
                struct qp_stream *st = qp_stream(s, ev.stream_id);
                st->fin = true;
                break;
            }
        }
    }
}

static double aead_rate(vega_crypto_aead_alg alg)
{
    uint8_t key[32] = {1}, iv[12] = {2}, nonce[12], pkt[1200 + 16], aad[20] = {3};
    vega_crypto_aead *a;
    if (vega_crypto_aead_new(&a, alg, key, vega_crypto_aead_key_len(alg)) < 0)
        return 0;
    memset(pkt, 0x5a, sizeof pkt);
    size_t n = 200000;
    double t0 = cpu_now();
    for (size_t i = 0; i < n; i++) {
        vega_crypto_aead_nonce(iv, i, nonce);
        vega_crypto_aead_seal(a, nonce, aad, sizeof aad, pkt, 1150, sizeof pkt);
        vega_crypto_aead_open(a, nonce, aad, sizeof aad, pkt, 1150 + 16);
    }
    double dt = cpu_now() - t0;
    vega_crypto_aead_free(a);
    return (double)n * 1150 / dt / 1e6;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1024;
    const char *suite = argc > 2 ? argv[2] : "aes128";
    unsigned loss = argc > 3 ? (unsigned)atoi(argv[3]) : 0;
    uint16_t code = VEGA_QUIC_TLS_AES_128_GCM_SHA256;
    vega_crypto_aead_alg alg = VEGA_CRYPTO_AES_128_GCM;
    if (strcmp(suite, "chacha") == 0) {
        code = VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256;
        alg = VEGA_CRYPTO_CHACHA20_POLY1305;
    } else if (strcmp(suite, "aes256") == 0) {
        code = VEGA_QUIC_TLS_AES_256_GCM_SHA384;
        alg = VEGA_CRYPTO_AES_256_GCM;
    } else if (strcmp(suite, "aes128") != 0) {
        fprintf(stderr, "usage: vega-quic-bulk [MIB] [aes128|aes256|chacha] [LOSS_PCT]\n");
        return 2;
    }
    struct qp q;
    /* 1 ms one-way, no rate limit: the window opens quickly and CPU is the only limit. */
    vega_test_net_opts o = {.seed = 1, .delay_ns = 1000000, .loss_pct = loss};
    if (qp_init(&q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, &o, 1) < 0)
        return 1;
    q.ccfg.tls.suites[0] = code;
    q.ccfg.tls.n_suites = 1;
    q.scfg.max_data_max = 64u << 20;
    q.scfg.max_stream_data_max = 32u << 20;
    q.ccfg.stream_send_buffer = 16u << 20;
    if (qp_client_start(&q) < 0 || !qp_run(&q, qp_handshaken, 10ull * 1000000000))
        return 1;
    want = mib << 20;
    static uint8_t chunk[1 << 20];
    memset(chunk, 0xa5, sizeof chunk);
    uint64_t id;
    if (vega_quic_stream_open(q.side[0].c, false, &id) < 0)
        return 1;
    size_t written = 0, got = 0;
    double t0 = cpu_now();
    uint64_t sim0 = q.now;
    while (!done(&q)) {
        while (written < want) {
            size_t n = want - written < sizeof chunk ? want - written : sizeof chunk;
            long w = vega_quic_stream_write(q.side[0].c, id, chunk, n, written + n == want);
            if (w <= 0)
                break;
            written += (size_t)w;
        }
        /* one harness step: deliver, let the receiver drain, send */
        uint8_t buf[2048], *d;
        long n;
        while ((n = vega_test_net_peek(q.net, 1, &d, NULL, NULL, q.now)) > 0)
            vega_quic_conn_read(q.side[1].c, &q.spath, 0, d, (size_t)n, q.now);
        while ((n = vega_test_net_peek(q.net, 0, &d, NULL, NULL, q.now)) > 0)
            vega_quic_conn_read(q.side[0].c, &q.path, 0, d, (size_t)n, q.now);
        drain(&q, &got);
        vega_quic_event ev;
        while (vega_quic_conn_next_event(q.side[0].c, &ev)) {
        }
        for (int i = 0; i < 2; i++)
            while ((n = vega_quic_conn_write(q.side[i].c, NULL, NULL, buf, sizeof buf, q.now)) > 0)
                vega_test_net_send(q.net, i, buf, (size_t)n, q.now);
        /* Each side's expiry once per step, as an event loop arms its timer once. */
        uint64_t exp[2], next = qp_min(vega_test_net_next(q.net, 0), vega_test_net_next(q.net, 1));
        for (int i = 0; i < 2; i++) {
            exp[i] = vega_quic_conn_expiry(q.side[i].c);
            next = qp_min(next, exp[i]);
        }
        if (next == QP_TIME_INF) {
            if (written < want)
                continue;
            break;
        }
        if (next > q.now)
            q.now = next;
        for (int i = 0; i < 2; i++)
            if (exp[i] <= q.now)
                vega_quic_conn_handle_expiry(q.side[i].c, q.now);
    }
    double dt = cpu_now() - t0;
    vega_quic_conn_info ci;
    vega_quic_conn_get_info(q.side[0].c, &ci);
    double mbs = (double)got / dt / 1e6;
    double raw = aead_rate(alg);
    printf("suite=%s loss=%u bytes=%zu ok=%d cpu_s=%.3f MB/s=%.1f pkts=%llu lost=%llu "
           "sim_s=%.3f aead_seal_open_MB/s=%.1f ratio_to_aead=%.2f\n",
           suite, loss, got, got == want, dt, mbs, (unsigned long long)ci.pkts_sent,
           (unsigned long long)ci.pkts_lost, (double)(q.now - sim0) / 1e9, raw, mbs / raw);
    qp_fini(&q);
    return got == want ? 0 : 1;
}
