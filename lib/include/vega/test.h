/* SPDX-License-Identifier: MIT */
/* libvega-test: support for testing programs built on libvega (link -lvega-test). */
#ifndef VEGA_TEST_H
#define VEGA_TEST_H

#include <stdint.h>

#include <vega/rt.h>
#include <vega/stream.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A hash of the order in which tasks ran so far (task ids, in poll order). Two runs of the same
 * program on a seeded current-thread runtime with the same seed give the same hash. */
VEGA_API uint64_t vega_test_schedule_hash(const vega_rt *rt);

/* Moves a paused clock forward by ns, firing the timers that fall due. Context: inside a task of
 * a paused-clock runtime; returns -EINVAL elsewhere. */
VEGA_API int vega_test_advance(uint64_t ns);

/* ---- in-memory streams --------------------------------------------------------------------- */

/* Capacity of each direction of a duplex made with capacity 0. */
#define VEGA_DUPLEX_DEFAULT_CAP 65536

/*
 * Creates two connected in-memory byte streams: what is written to *a is read from *b and the
 * other way round. Each direction is a bounded buffer of `capacity` bytes (0 = 64 KiB): reads
 * wait for data, writes wait for room (a write larger than the capacity goes in pieces, and
 * returns once the last piece was buffered). shutdown(SHUT_WR) gives the peer end of stream
 * after it drained what was buffered; shutdown(SHUT_RD) drops what is buffered for this end,
 * makes later reads return 0 and the peer's writes fail with -EPIPE. Closing an end does both:
 * the peer reads what was buffered, then 0, and its writes fail with -EPIPE. The shared state
 * is freed when both ends are closed.
 * Both ends may be used from tasks on any worker, and from plain threads (which then block);
 * one reader and one writer per end at a time. Deadlines and cancellation are honoured: a read
 * that timed out or was cancelled consumed nothing; a write reports the bytes it buffered.
 * Returns 0 or -ENOMEM; -EINVAL (a bad argument). Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_duplex_new(vega_stream **a, vega_stream **b, size_t capacity);

/* "No fault at an offset" for vega_fault_opts.read_fail_at / write_fail_at. */
#define VEGA_FAULT_NEVER UINT64_MAX

/* What a faulty stream injects. Initialise with vega_fault_opts_init (no faults), then set the
 * ones wanted. Percentages are per operation, 0..100. */
typedef struct vega_fault_opts {
    uint64_t seed;            /* drives every random choice; same seed, same faults */
    unsigned short_read_pct;  /* reads ask the inner stream for only 1..short_max bytes */
    unsigned short_write_pct; /* writes go to the inner stream in pieces of 1..short_max bytes,
                                 each written separately (the caller still sees all-or-error) */
    size_t short_max;         /* largest short piece (0 = 16) */
    unsigned delay_pct;       /* an operation (and each write piece) first sleeps 1..delay_max_ms,
                                 within its deadline: an EAGAIN-like stall */
    unsigned delay_max_ms;    /* 0 = 3 */
    unsigned yield_pct;       /* an operation (and each write piece) first lets other tasks run
                                 (vega_yield): reorders without costing wall time */
    uint64_t read_fail_at;    /* reads deliver bytes up to this stream offset, then fail with
                                 read_err (VEGA_FAULT_NEVER = never) */
    uint64_t write_fail_at;   /* writes accept bytes up to this offset, then fail with write_err,
                               *written telling exactly how many went through */
    unsigned fail_ppm;        /* chance per operation, in millionths, of failing with fail_err; a
                                 failing write first passes a random prefix of its bytes */
    int read_err, write_err, fail_err; /* negative codes; 0 = -ECONNRESET */
} vega_fault_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_FAULT_OPTS_VERSION 1

/* Fills o with "no faults" (seed 1). Since 0.1. */
VEGA_API void vega_fault_opts_init_versioned(vega_fault_opts *o, int opts_version);
#define vega_fault_opts_init(...)                                                                  \
    vega_fault_opts_init_versioned(__VA_ARGS__, VEGA_FAULT_OPTS_VERSION)

/*
 * Wraps inner in a stream that injects the faults of opts. inner: taken on success (closing
 * *out closes it). opts: borrowed (copied). Injected errors are sticky per direction: once a
 * read (write) failed, every later read (write) fails with the same code. Reads and writes
 * draw from separate seeded generators, so one reader and one writer may run concurrently and
 * each direction's faults depend only on the seed and that direction's calls.
 * shutdown and close pass through.
 * Returns 0, -ENOMEM, -EINVAL (inner or opts NULL, a percentage above 100, an error >= 0).
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_faulty_new_versioned(vega_stream **out, vega_stream *inner,
                                       const vega_fault_opts *opts, int opts_version);
#define vega_faulty_new(...) vega_faulty_new_versioned(__VA_ARGS__, VEGA_FAULT_OPTS_VERSION)

/* What a faulty stream did so far. */
typedef struct vega_fault_stats {
    uint64_t reads, writes;             /* calls */
    uint64_t short_reads, short_writes; /* calls cut short / cut in pieces */
    uint64_t delays;                    /* sleeps injected */
    uint64_t yields;                    /* yields injected */
    uint64_t errors;                    /* errors injected (offset or probability) */
    uint64_t bytes_read, bytes_written; /* through the stream */
} vega_fault_stats;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI): counters are only ever
 * appended, and a caller built against an older layout gets that layout's prefix filled,
 * nothing past it. */
#define VEGA_FAULT_STATS_VERSION 1

/* Reads s's counters into out, up to the end of layout stats_version (the macro
 * vega_faulty_get_stats passes VEGA_FAULT_STATS_VERSION). Returns 0; -EINVAL (s or out NULL, s
 * not from vega_faulty_new, or a layout this library does not know: out is left as it was).
 * Call it while no other task uses s. Since 0.1 (versioned since 0.2). */
VEGA_API int vega_faulty_get_stats_versioned(vega_stream *s, vega_fault_stats *out,
                                             int stats_version);
#define vega_faulty_get_stats(...)                                                                 \
    vega_faulty_get_stats_versioned(__VA_ARGS__, VEGA_FAULT_STATS_VERSION)

/* ---- in-memory datagram network ------------------------------------------------------------ */

/*
 * Two endpoints (0 and 1) joined by a simulated datagram link, sans I/O and clockless: the
 * caller passes the time, sends datagrams, and collects those due. Every impairment is drawn
 * from one seeded generator, so a run is reproducible from its seed and the order of calls.
 * Used to test sans-I/O protocol cores (the QUIC core) under delay, reordering, loss,
 * duplication, corruption and a rate limit.
 */
typedef struct vega_test_net vega_test_net;

typedef struct vega_test_net_opts {
    uint64_t seed;
    uint64_t delay_ns;    /* one-way delay of every datagram */
    uint64_t jitter_ns;   /* plus a uniform 0..jitter_ns each (order is kept) */
    unsigned loss_pct;    /* 0..100: dropped */
    unsigned dup_pct;     /* 0..100: delivered twice (the copy a little later) */
    unsigned corrupt_pct; /* 0..100: one random bit flipped */
    unsigned reorder_pct; /* 0..100: held back an extra delay_ns (or 1 ms), so later ones
                             overtake it */
    uint64_t rate_bps;    /* link rate in bits per second, each direction (0 = unlimited):
                             datagrams queue behind each other */
    size_t queue_max;     /* datagrams queued per direction beyond which new ones are
                             dropped (0 = 4096) */
    size_t mtu;           /* larger datagrams are dropped (0 = 65527) */
    unsigned ce_pct;      /* 0..100: an ECT(0)/ECT(1) datagram arrives marked CE instead */
    bool ecn_bleach;      /* ECN codepoints are cleared on the way (a broken middlebox) */
} vega_test_net_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_TEST_NET_OPTS_VERSION 1

/* Counters of one direction (from endpoint `from`). */
typedef struct vega_test_net_stats {
    uint64_t sent, delivered, lost, duplicated, corrupted, reordered, overflowed, bytes;
    uint64_t ce_marked;
} vega_test_net_stats;
/* This struct's layout version (API rules: ABI): counters are only ever appended, and a caller
 * built against an older layout gets that layout's prefix filled, nothing past it. */
#define VEGA_TEST_NET_STATS_VERSION 1

/* Creates a network. opts: copied (NULL = a perfect link). Returns 0, -ENOMEM, -EINVAL (a
 * percentage above 100). Since 0.1. */
VEGA_API int vega_test_net_new_versioned(vega_test_net **out, const vega_test_net_opts *opts,
                                         int opts_version);
#define vega_test_net_new(...) vega_test_net_new_versioned(__VA_ARGS__, VEGA_TEST_NET_OPTS_VERSION)

/* Frees n and what it still holds (NULL is fine). Since 0.1. */
VEGA_API void vega_test_net_free(vega_test_net *n);

/* Endpoint from (0 or 1) sends len bytes at time now (ns). data: copied. Returns 0 (also when
 * the network drops it), -ENOMEM, -EINVAL. Since 0.1. */
VEGA_API int vega_test_net_send(vega_test_net *n, int from, const void *data, size_t len,
                                uint64_t now);

/* As vega_test_net_send, with the datagram's ECN codepoint (0..3, as in the IP header) and a
 * tag the network carries unchanged (a test may put the sender's address in it). */
VEGA_API int vega_test_net_sendx(vega_test_net *n, int from, const void *data, size_t len,
                                 uint8_t ecn, uint64_t tag, uint64_t now);

/* As vega_test_net_recv; *ecn and *tag receive the codepoint the datagram arrived with and its
 * tag (either may be NULL). */
VEGA_API long vega_test_net_recvx(vega_test_net *n, int to, void *buf, size_t cap, uint8_t *ecn,
                                  uint64_t *tag, uint64_t now);

/* Takes the next datagram for endpoint to (0 or 1) due at or before now, in delivery-time
 * order, copying at most cap bytes into buf. Returns its length (truncated to cap), 0 when none
 * is due, -EINVAL. Since 0.1. */
VEGA_API long vega_test_net_recv(vega_test_net *n, int to, void *buf, size_t cap, uint64_t now);

/* As vega_test_net_recvx without the copy: *data points at the datagram itself, writable (a
 * core may decrypt it in place), valid until the next peek/recv call on n. Since 0.1. */
VEGA_API long vega_test_net_peek(vega_test_net *n, int to, uint8_t **data, uint8_t *ecn,
                                 uint64_t *tag, uint64_t now);

/* When the next datagram for endpoint to is due (UINT64_MAX: none queued). Since 0.1. */
VEGA_API uint64_t vega_test_net_next(const vega_test_net *n, int to);

/* Reads the counters of the direction from endpoint from (0 or 1) into out, up to the end of
 * layout stats_version (the macro vega_test_net_get_stats passes VEGA_TEST_NET_STATS_VERSION).
 * Returns 0; -EINVAL (n or out NULL, from not 0 or 1, or a layout this library does not know:
 * out is left as it was). Since 0.1 (versioned since 0.2; until then a bad from zeroed out). */
VEGA_API int vega_test_net_get_stats_versioned(const vega_test_net *n, int from,
                                               vega_test_net_stats *out, int stats_version);
#define vega_test_net_get_stats(...)                                                               \
    vega_test_net_get_stats_versioned(__VA_ARGS__, VEGA_TEST_NET_STATS_VERSION)

#ifdef __cplusplus
}
#endif
#endif
