/* SPDX-License-Identifier: MIT */
/* The impairment relay's decisions (interop/h3/relay.c): per-direction settings, a seeded PRNG,
 * the verdict for each datagram, the QUIC long-header census (RFC 8999 section 5.1, RFC 9000
 * section 17.2, RFC 9369 section 3.2) and the counters printed at exit. No sockets, no clock:
 * time comes in as arguments, so `relay --self-test` checks it without either. */
#ifndef VEGA_INTEROP_RELAY_H
#define VEGA_INTEROP_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    DIR_TO_SERVER = 0,
    DIR_TO_CLIENT = 1,
    DIR_COUNT = 2
};

/* Why a datagram was dropped. */
enum {
    DROP_LOSS = 0,  /* --loss / --loss-burst */
    DROP_FIRST,     /* --drop-first */
    DROP_BLACKHOLE, /* --blackhole-after-ms / --blackhole-for-ms */
    DROP_QUEUE,     /* --rate-kbps: the queue of --queue-kb was full */
    DROP_STALE,     /* arrived at an upstream socket the flow rebound away from */
    DROP_LIMIT,     /* --max-flows or --max-queued reached */
    DROP_REASONS
};

/* Per-direction impairments (percentages as parts per million of datagrams). */
typedef struct relay_dir_cfg {
    uint64_t delay_ns, jitter_ns, reorder_ns;
    bool jitter_keep_order; /* jitter without reordering: never released before an earlier one */
    uint32_t loss_ppm, reorder_ppm, dup_ppm, corrupt_ppm;
    uint32_t loss_burst; /* datagrams one loss event drops (>= 1) */
    uint64_t drop_first; /* the first N datagrams of each flow */
    uint64_t blackhole_after_ns, blackhole_for_ns, blackhole_every_ns; /* for 0 = none */
    uint64_t rate_kbps;                                                /* 0 = no rate limit */
    uint64_t queue_bytes; /* the rate limiter's queue */
} relay_dir_cfg;

/* The census of QUIC packets in datagrams (long headers walked through coalescing). */
enum {
    PK_INITIAL = 0,
    PK_0RTT,
    PK_HANDSHAKE,
    PK_RETRY,
    PK_VN,
    PK_SHORT,
    PK_OTHER,
    PK_KINDS
};

typedef struct relay_census {
    uint64_t pk[PK_KINDS];
    uint64_t handshake_bytes; /* bytes of Handshake packets */
    uint32_t versions[4];     /* distinct long-header versions seen (not 0), first four */
    unsigned nversions;
} relay_census;

/* Counters of one direction. */
typedef struct relay_dir_stats {
    uint64_t in, bytes_in, fwd, bytes_fwd, delayed, reordered, dup, corrupt;
    uint64_t drop[DROP_REASONS];
    uint64_t ecn[4]; /* codepoints received: Not-ECT, ECT(1), ECT(0), CE */
    relay_census census;
} relay_dir_stats;

/* The running state of one direction (shared by every flow). */
typedef struct relay_dir_state {
    uint64_t rng;
    uint32_t burst_left;
    uint64_t link_free_ns;    /* the rate limiter's link is busy until then */
    uint64_t last_release_ns; /* for jitter_keep_order */
} relay_dir_state;

/* What happens to one datagram. */
typedef struct relay_verdict {
    int drop;             /* -1 = forwarded, else DROP_* */
    unsigned copies;      /* 1, or 2 with --dup */
    uint64_t release_ns;  /* when it (and its copy) leave the relay */
    bool reordered;       /* held back by --reorder */
    bool corrupt;         /* flip bit corrupt_bit of the payload */
    uint64_t corrupt_bit; /* < 8 * len */
} relay_verdict;

/* splitmix64: the next 64 random bits of *s. */
uint64_t relay_rand(uint64_t *s);

/* Seeds direction d of seed: the same seed gives the same decisions. */
void relay_dir_seed(relay_dir_state *st, uint64_t seed, int d);

/*
 * Decides one datagram of len bytes (len > 0) arriving at now_ns; since_ns: time since the
 * relay's first datagram (blackhole windows); flow_seen: datagrams of this flow and direction
 * before it (--drop-first). Exactly five random draws per datagram whatever the settings and
 * outcome, so the n-th datagram's fate depends on the seed and n only (and on the time for
 * blackholes and the rate limiter).
 */
void relay_decide(const relay_dir_cfg *cfg, relay_dir_state *st, uint64_t now_ns, uint64_t since_ns,
                  uint64_t flow_seen, size_t len, relay_verdict *v);

/* Adds the QUIC packets of one datagram to c; returns true when it holds a Handshake or 1-RTT
 * packet (a client that sends one has proven its address, RFC 9000 section 8.1). */
bool relay_census_add(relay_census *c, const uint8_t *p, size_t len);

/* Parses "--[to-server-|to-client-]NAME VALUE" into cfg[]; returns 1 when it took NAME, 0 when
 * NAME is not an impairment, -1 (with a message on stderr) for a bad value. */
int relay_parse_impairment(relay_dir_cfg cfg[DIR_COUNT], const char *name, const char *value);

/* Defaults: no impairment, loss_burst 1, reorder hold 10 ms, queue 64 KiB. */
void relay_cfg_init(relay_dir_cfg cfg[DIR_COUNT]);

/* One "relay: stats DIR ..." line. */
void relay_stats_print(FILE *f, const char *dir, const relay_dir_stats *s);

/* When set, option errors are not printed (the self-test's negative cases). */
extern bool relay_quiet;

/* Self-test of the decisions and the census (no sockets, no clock): 0 = passed. */
int relay_self_test(void);

#endif
