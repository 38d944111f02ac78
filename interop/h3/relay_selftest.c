/* SPDX-License-Identifier: MIT */
/* `relay --self-test`: the relay's decisions and QUIC census checked without sockets or a clock
 * (time is an argument): same seed same fates, rates within binomial bounds, bursts, drop-first,
 * blackhole windows, the rate limiter's queue to the byte, order kept under jitter, corruption
 * inside the payload, option parsing, and long headers of v1 and v2 (RFC 9000 section 17.2,
 * RFC 9369 section 3.2) walked through coalescing without reading past the datagram. */
#include "relay.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ull

static int failures;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "self-test: %s:%d: %s\n", __FILE__, __LINE__, #cond);                  \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static void run(const relay_dir_cfg *cfg, uint64_t seed, relay_verdict *out, size_t n)
{
    relay_dir_state st;
    relay_dir_seed(&st, seed, DIR_TO_SERVER);
    for (size_t i = 0; i < n; i++) {
        relay_decide(cfg, &st, 1000 * MS + i * MS, i * MS, i, 1200, &out[i]);
    }
}

static void test_determinism(void)
{
    enum {
        N = 10000
    };
    relay_dir_cfg cfg[DIR_COUNT];
    relay_cfg_init(cfg);
    EXPECT(relay_parse_impairment(cfg, "loss", "30") == 1);
    EXPECT(relay_parse_impairment(cfg, "dup", "5") == 1);
    EXPECT(relay_parse_impairment(cfg, "corrupt", "5") == 1);
    EXPECT(relay_parse_impairment(cfg, "reorder", "10") == 1);
    EXPECT(relay_parse_impairment(cfg, "jitter-ms", "5") == 1);
    static relay_verdict a[N], b[N], c[N];
    run(&cfg[0], 42, a, N);
    run(&cfg[0], 42, b, N);
    run(&cfg[0], 43, c, N);
    EXPECT(memcmp(a, b, sizeof a) == 0);
    EXPECT(memcmp(a, c, sizeof a) != 0);
    size_t lost = 0, dup = 0, corrupt = 0, reordered = 0;
    for (size_t i = 0; i < N; i++) {
        lost += a[i].drop == DROP_LOSS;
        if (a[i].drop < 0) {
            dup += a[i].copies == 2;
            corrupt += a[i].corrupt;
            reordered += a[i].reordered;
            EXPECT(!a[i].corrupt || a[i].corrupt_bit < 1200 * 8);
            EXPECT(a[i].release_ns >= 1000 * MS + i * MS);
            EXPECT(a[i].release_ns <= 1000 * MS + i * MS + 5 * MS + (a[i].reordered ? 10 * MS : 0));
        }
    }
    /* Binomial: 30% of 10000 has a standard deviation of 46; the others are of the 7000 kept. */
    EXPECT(lost >= 2700 && lost <= 3300);
    EXPECT(dup >= 250 && dup <= 450);
    EXPECT(corrupt >= 250 && corrupt <= 450);
    EXPECT(reordered >= 560 && reordered <= 840);
}

static void test_burst_first_blackhole(void)
{
    enum {
        N = 5000
    };
    relay_dir_cfg cfg[DIR_COUNT];
    relay_cfg_init(cfg);
    EXPECT(relay_parse_impairment(cfg, "loss", "10") == 1);
    EXPECT(relay_parse_impairment(cfg, "loss-burst", "3") == 1);
    static relay_verdict v[N];
    run(&cfg[0], 7, v, N);
    size_t run_len = 0, runs = 0;
    for (size_t i = 0; i <= N; i++) {
        if (i < N && v[i].drop == DROP_LOSS) {
            run_len++;
        } else if (run_len > 0) {
            EXPECT(run_len % 3 == 0); /* events of three, possibly back to back */
            runs++;
            run_len = 0;
        }
    }
    EXPECT(runs > 100);

    relay_cfg_init(cfg);
    EXPECT(relay_parse_impairment(cfg, "drop-first", "5") == 1);
    EXPECT(relay_parse_impairment(cfg, "blackhole-after-ms", "100") == 1);
    EXPECT(relay_parse_impairment(cfg, "blackhole-for-ms", "50") == 1);
    EXPECT(relay_parse_impairment(cfg, "blackhole-every-ms", "200") == 1);
    run(&cfg[0], 7, v, 1000); /* datagram i arrives i ms after the first */
    for (size_t i = 0; i < 1000; i++) {
        int want = i < 5 ? DROP_FIRST : (i >= 100 && (i - 100) % 200 < 50) ? DROP_BLACKHOLE : -1;
        EXPECT(v[i].drop == want);
    }
}

static void test_rate_queue(void)
{
    relay_dir_cfg cfg[DIR_COUNT];
    relay_cfg_init(cfg);
    /* 1000 kbit/s: 1250 bytes take 10 ms; a 10000-byte queue holds eight of them. */
    EXPECT(relay_parse_impairment(cfg, "rate-kbps", "1000") == 1);
    cfg[0].queue_bytes = 10000;
    EXPECT(relay_parse_impairment(cfg, "to-server-delay-ms", "20") == 1);
    relay_dir_state st;
    relay_dir_seed(&st, 1, DIR_TO_SERVER);
    relay_verdict v;
    unsigned kept = 0;
    for (unsigned i = 0; i < 20; i++) {
        relay_decide(&cfg[0], &st, 500 * MS, 0, 100, 1250, &v);
        if (v.drop < 0) {
            EXPECT(v.release_ns == 500 * MS + (uint64_t)(kept + 1) * 10 * MS + 20 * MS);
            kept++;
        } else {
            EXPECT(v.drop == DROP_QUEUE);
        }
    }
    EXPECT(kept == 8);
    /* 80 ms later the link is idle again. */
    relay_decide(&cfg[0], &st, 580 * MS, 0, 100, 1250, &v);
    EXPECT(v.drop < 0 && v.release_ns == 610 * MS);
    EXPECT(cfg[1].delay_ns == 0 && cfg[1].rate_kbps == 1000);
}

static void test_keep_order(void)
{
    relay_dir_cfg cfg[DIR_COUNT];
    relay_cfg_init(cfg);
    EXPECT(relay_parse_impairment(cfg, "jitter-ms", "30") == 1);
    EXPECT(relay_parse_impairment(cfg, "jitter-keep-order", NULL) == 2);
    relay_dir_state st;
    relay_dir_seed(&st, 9, DIR_TO_CLIENT);
    relay_verdict v;
    uint64_t last = 0;
    unsigned held = 0;
    for (unsigned i = 0; i < 2000; i++) {
        relay_decide(&cfg[0], &st, (uint64_t)i * MS, 0, 0, 100, &v);
        EXPECT(v.drop < 0 && v.release_ns >= last);
        held += v.release_ns > (uint64_t)i * MS;
        last = v.release_ns;
    }
    EXPECT(held > 1000);
}

static void test_options(void)
{
    relay_quiet = true;
    relay_dir_cfg cfg[DIR_COUNT];
    relay_cfg_init(cfg);
    EXPECT(relay_parse_impairment(cfg, "to-client-loss", "2.5") == 1);
    EXPECT(cfg[1].loss_ppm == 25000 && cfg[0].loss_ppm == 0);
    EXPECT(relay_parse_impairment(cfg, "loss", "101") == -1);
    EXPECT(relay_parse_impairment(cfg, "loss", "") == -1);
    EXPECT(relay_parse_impairment(cfg, "delay-ms", "x") == -1);
    EXPECT(relay_parse_impairment(cfg, "delay-ms", "-1") == -1);
    EXPECT(relay_parse_impairment(cfg, "loss-burst", "0") == -1);
    EXPECT(relay_parse_impairment(cfg, "seed", "1") == 0);
    EXPECT(relay_parse_impairment(cfg, "to-server-nothing", "1") == 0);
    relay_quiet = false;
}

/* A long-header packet of `kind` bits with an empty token and `payload` bytes after Length. */
static size_t long_packet(uint8_t *p, uint32_t version, unsigned type, size_t payload)
{
    size_t n = 0;
    p[n++] = (uint8_t)(0xc0u | (type << 4));
    p[n++] = (uint8_t)(version >> 24);
    p[n++] = (uint8_t)(version >> 16);
    p[n++] = (uint8_t)(version >> 8);
    p[n++] = (uint8_t)version;
    p[n++] = 8;
    memset(p + n, 0xaa, 8);
    n += 8;
    p[n++] = 0;
    bool initial = version == 1 ? type == 0 : type == 1;
    if (initial) {
        p[n++] = 0; /* token length */
    }
    p[n++] = (uint8_t)(0x40u | (payload >> 8)); /* two-byte varint */
    p[n++] = (uint8_t)payload;
    memset(p + n, 0x55, payload);
    return n + payload;
}

static void test_census(void)
{
    uint8_t d[1500];
    relay_census c;
    memset(&c, 0, sizeof c);
    size_t n = long_packet(d, 1, 0, 300); /* Initial */
    EXPECT(!relay_census_add(&c, d, n));
    size_t m = long_packet(d + n, 1, 2, 200); /* + Handshake */
    EXPECT(relay_census_add(&c, d, n + m));
    EXPECT(c.pk[PK_INITIAL] == 2 && c.pk[PK_HANDSHAKE] == 1 && c.handshake_bytes == m);
    d[0] = 0x40; /* short header */
    EXPECT(relay_census_add(&c, d, 30) && c.pk[PK_SHORT] == 1);
    n = long_packet(d, 0x6b3343cfu, 1, 100); /* v2 Initial, then v2 0-RTT */
    n += long_packet(d + n, 0x6b3343cfu, 2, 100);
    EXPECT(!relay_census_add(&c, d, n));
    EXPECT(c.pk[PK_INITIAL] == 3 && c.pk[PK_0RTT] == 1);
    EXPECT(c.nversions == 2 && c.versions[1] == 0x6b3343cfu);
    d[0] = 0xf0; /* v1 Retry */
    d[1] = d[2] = d[3] = 0;
    d[4] = 1;
    EXPECT(!relay_census_add(&c, d, 60) && c.pk[PK_RETRY] == 1);
    d[4] = 0; /* Version Negotiation */
    EXPECT(!relay_census_add(&c, d, 60) && c.pk[PK_VN] == 1);
    /* Lengths past the end, truncated headers, random bytes: counted as other, never read past
     * the datagram (the buffer is exactly as long as the datagram). */
    n = long_packet(d, 1, 2, 300);
    uint8_t *exact = malloc(n);
    if (!exact) {
        failures++;
        return;
    }
    for (size_t cut = 1; cut < n; cut++) {
        memcpy(exact, d, cut);
        relay_census_add(&c, exact, cut);
    }
    uint64_t s = 5;
    for (int i = 0; i < 20000; i++) {
        size_t len = 1 + relay_rand(&s) % n;
        for (size_t j = 0; j < len; j++) {
            exact[j] = (uint8_t)relay_rand(&s);
        }
        exact[0] |= 0x80;
        relay_census_add(&c, exact, len);
    }
    free(exact);
    EXPECT(c.pk[PK_OTHER] > 0);
}

int relay_self_test(void)
{
    test_determinism();
    test_burst_first_blackhole();
    test_rate_queue();
    test_keep_order();
    test_options();
    test_census();
    if (failures) {
        fprintf(stderr, "self-test: %d failed\n", failures);
        return 1;
    }
    printf("relay: self-test passed\n");
    return 0;
}
