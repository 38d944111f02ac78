/* SPDX-License-Identifier: MIT */
/* QUIC bulk transfer between a client and a server core in one thread, joined by an in-memory
 * link (bench_link.h, shared with ngtcp2-bulk; no sockets, no kernel): the ceiling a UDP
 * endpoint can approach. Prints MB/s of stream payload per CPU second for the pair, and the
 * raw AEAD seal+open rate of the same suite on 1150-byte payloads for comparison. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_link.h"
#include "qtls_certs.h"
#include "quic_pair.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define CHUNK (1u << 20) /* the stream repeats this pattern, as ngtcp2-bulk's does */
static uint8_t pattern[CHUNK];

/* The server's sink, like ngtcp2-bulk's callback: reads in place (peek + consume, nothing
 * copied out), compares the bytes against the pattern and gives the credit back at once. */
struct sink {
    uint64_t got;
    bool fin, bad;
};

static void check(struct sink *k, const uint8_t *p, size_t n)
{
    while (n) {
        size_t at = (size_t)(k->got % CHUNK), m = n < CHUNK - at ? n : CHUNK - at;
        if (memcmp(p, pattern + at, m) != 0)
            k->bad = true;
        k->got += m;
        p += m;
        n -= m;
    }
}

static void drain(vega_quic_conn *c, struct sink *k)
{
    vega_quic_event ev;
    while (vega_quic_conn_next_event(c, &ev)) {
        if (ev.type != VEGA_QUIC_EV_STREAM_READABLE)
            continue;
        for (;;) {
            const uint8_t *p;
            size_t n;
            bool fin;
            if (vega_quic_stream_peek(c, ev.stream_id, &p, &n, &fin) < 0)
                break;
            if (n == 0 && !fin)
                break;
            check(k, p, n);
            if (vega_quic_stream_consume(c, ev.stream_id, n) < 0)
                break;
            if (fin) {
                k->fin = true;
                break;
            }
        }
    }
}

/* Delivers every due datagram of l to c, each read (and decrypted) in its slot. */
static void deliver(vega_quic_conn *c, const vega_quic_path *path, struct bl_link *l, uint64_t now)
{
    struct bl_dgram *d;
    while ((d = bl_peek(l, now)) != NULL) {
        vega_quic_conn_read(c, path, 0, d->data, d->len, now);
        bl_pop(l);
    }
}

/* Writes every datagram c will send now straight into l's tail slots. */
static void send_all(vega_quic_conn *c, struct bl_link *l, uint64_t now)
{
    vega_ssize n;
    while ((n = vega_quic_conn_write(c, NULL, NULL, bl_reserve(l), BL_DGRAM_MAX, now)) > 0)
        bl_commit(l, (size_t)n, now);
}

static bool net_idle(struct qp *q)
{
    return vega_test_net_next(q->net, 0) == QP_TIME_INF &&
           vega_test_net_next(q->net, 1) == QP_TIME_INF;
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

/* The timed transfer: the client's stream id carries want bytes of the pattern to the
 * server's sink k. A function of its own, so a profiler can count it alone (valgrind
 * --tool=callgrind --collect-atstart=no --toggle-collect=transfer). */
static __attribute__((noinline)) void transfer(struct qp *q, struct bl_link *l, uint64_t id,
                                               uint64_t want, struct sink *k)
{
    vega_quic_conn *cl = q->side[0].c, *sv = q->side[1].c;
    uint64_t sim0 = q->now, written = 0;
    const char *copy_env = getenv("VQB_COPY");
    bool by_copy = copy_env && copy_env[0] == '1';
    while (!k->fin && !k->bad) {
        while (written < want) {
            size_t at = (size_t)(written % CHUNK);
            size_t n = want - written < CHUNK - at ? (size_t)(want - written) : CHUNK - at;
            /* By reference, as ngtcp2-bulk hands ngtcp2 pointers into the pattern (static: no
             * release callback); VQB_COPY=1 copies instead. */
            bool fin = written + n == want;
            vega_ssize w =
                by_copy ? vega_quic_stream_write(cl, id, pattern + at, n, fin)
                        : vega_quic_stream_write_ref(cl, id, pattern + at, n, fin, NULL, NULL);
            if (w <= 0)
                break;
            written += (uint64_t)w;
        }
        /* one harness step, as ngtcp2-bulk's: deliver, let the receiver drain, send */
        deliver(sv, &q->spath, &l[0], q->now);
        deliver(cl, &q->path, &l[1], q->now);
        drain(sv, k);
        vega_quic_event ev;
        while (vega_quic_conn_next_event(cl, &ev)) {
        }
        send_all(cl, &l[0], q->now);
        send_all(sv, &l[1], q->now);
        /* Each side's expiry once per step, as an event loop arms its timer once. */
        uint64_t exp[2] = {vega_quic_conn_expiry(cl), vega_quic_conn_expiry(sv)};
        uint64_t next = qp_min(qp_min(bl_next(&l[0]), bl_next(&l[1])), qp_min(exp[0], exp[1]));
        if (next == QP_TIME_INF)
            break;
        if (next > q->now)
            q->now = next;
        if (q->now - sim0 > 600ull * 1000000000)
            break;
        if (exp[0] <= q->now)
            vega_quic_conn_handle_expiry(cl, q->now);
        if (exp[1] <= q->now)
            vega_quic_conn_handle_expiry(sv, q->now);
    }
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
    } else if (strcmp(suite, "aes128") != 0 || mib == 0 || loss > 100) {
        fprintf(stderr, "usage: vega-quic-bulk [MIB] [aes128|aes256|chacha] [LOSS_PCT]\n");
        return 2;
    }
    for (size_t i = 0; i < CHUNK; i++)
        pattern[i] = (uint8_t)(i * 131u + (i >> 12));
    struct qp q;
    /* The handshake runs over libvega-test's network (1 ms one way, no loss), the transfer over
     * bench_link.h, the link ngtcp2-bulk uses for both. */
    vega_test_net_opts o = {.seed = 1, .delay_ns = BL_DELAY_NS};
    if (qp_init(&q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, &o, 1) < 0)
        return 1;
    q.ccfg.tls.suites[0] = code;
    q.ccfg.tls.n_suites = 1;
    /* Windows as ngtcp2-bulk's: 16 MiB stream and 32 MiB connection to start, auto-tuned up to
     * 32 and 64 MiB. */
    q.scfg.max_stream_data = 16u << 20;
    q.scfg.max_data = 32u << 20;
    q.scfg.max_data_max = 64u << 20;
    q.scfg.max_stream_data_max = 32u << 20;
    q.ccfg.stream_send_buffer = 16u << 20;
    if (qp_client_start(&q) < 0 || !qp_run(&q, qp_handshaken, 10ull * 1000000000) ||
        !qp_run(&q, net_idle, 10ull * 1000000000))
        return 1;
    struct bl_link l[2]; /* l[0]: client -> server, l[1]: server -> client */
    if (bl_init(&l[0], loss, 1) < 0 || bl_init(&l[1], loss, 2) < 0)
        return 1;
    vega_quic_conn *cl = q.side[0].c;
    uint64_t want = (uint64_t)mib << 20;
    struct sink k = {0};
    uint64_t id;
    if (vega_quic_stream_open(cl, false, &id) < 0)
        return 1;
    double t0 = cpu_now();
    uint64_t sim0 = q.now;
    transfer(&q, l, id, want, &k);
    double dt = cpu_now() - t0;
    vega_quic_conn_info ci;
    vega_quic_conn_get_info(cl, &ci);
    bool ok = k.fin && !k.bad && k.got == want;
    double mbs = (double)k.got / dt / 1e6;
    /* VQB_NO_RAW=1 skips the AEAD rate (under a profiler, or when only MB/s matters) */
    const char *no_raw = getenv("VQB_NO_RAW");
    double raw = no_raw && no_raw[0] == '1' ? 0 : aead_rate(alg);
    /* pkts/acks: datagrams the client/server sent during the transfer; dropped: client
     * datagrams the full queue dropped; lost: those the random loss took; detected: the
     * client's lost packets (RFC 9002) over the whole connection */
    const char *copy_env = getenv("VQB_COPY");
    printf("suite=%s loss=%u writes=%s bytes=%llu ok=%d cpu_s=%.3f MB/s=%.1f pkts=%llu acks=%llu "
           "dropped=%llu lost=%llu detected=%llu sim_s=%.3f aead_seal_open_MB/s=%.1f "
           "ratio_to_aead=%.2f\n",
           suite, loss, copy_env && copy_env[0] == '1' ? "copy" : "ref", (unsigned long long)k.got,
           ok, dt, mbs, (unsigned long long)l[0].sent, (unsigned long long)l[1].sent,
           (unsigned long long)l[0].dropped, (unsigned long long)l[0].lost,
           (unsigned long long)ci.pkts_lost, (double)(q.now - sim0) / 1e9, raw,
           raw > 0 ? mbs / raw : 0);
    if (k.bad)
        fprintf(stderr, "vega-quic-bulk: stream data differs from what was sent\n");
    bl_fini(&l[0]);
    bl_fini(&l[1]);
    qp_fini(&q);
    return ok ? 0 : 1;
}
