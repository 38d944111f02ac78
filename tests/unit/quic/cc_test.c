/* SPDX-License-Identifier: MIT */
/* QUIC congestion control (RFC 9002 §7, RFC 9438) and pacing (RFC 9002 §7.7): NewReno slow
 * start, avoidance and recovery, CUBIC's curve against hand-computed values of the RFC 9438
 * formula, its Reno-friendly region and fast convergence, and the pacer's intervals. */
#include "base.h"
#include "recovery.h"
#include "vtest.h"

#define MS VEGA__QUIC_NS_PER_MS
#define S  (1000 * MS)

static struct vega__quic_rtt rtt_of(uint64_t srtt)
{
    struct vega__quic_rtt r;
    vega__quic_rtt_init(&r, srtt);
    return r;
}

/* One packet of bytes sent at sent and acknowledged at now. */
static void ack_one(struct vega__quic_cc *cc, uint64_t bytes, uint64_t sent,
                    const struct vega__quic_rtt *rtt, uint64_t now)
{
    vega__quic_cc_on_sent(cc, bytes, sent);
    vega__quic_cc_on_acked(cc, bytes, sent, rtt, now);
}

VTEST(initial_window)
{
    struct vega__quic_cc cc;
    /* min(10 * max_datagram, max(14720, 2 * max_datagram)) (RFC 9002 §7.2) */
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1200);
    VCHECK_EQ(cc.cwnd, 12000);
    VCHECK(cc.ssthresh == UINT64_MAX);
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1500);
    VCHECK_EQ(cc.cwnd, 14720);
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_CUBIC, 9000);
    VCHECK_EQ(cc.cwnd, 18000);
    VCHECK_EQ(cc.algo, VEGA__QUIC_CC_CUBIC);
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 0); /* 0 = 1200 */
    VCHECK_EQ(cc.max_datagram, 1200);
    VCHECK_EQ(cc.cwnd, 12000);
}

VTEST(available)
{
    struct vega__quic_cc cc;
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1200);
    VCHECK_EQ(vega__quic_cc_available(&cc), 12000);
    vega__quic_cc_on_sent(&cc, 5000, 1 * S);
    VCHECK_EQ(cc.in_flight, 5000);
    VCHECK_EQ(vega__quic_cc_available(&cc), 7000);
    vega__quic_cc_on_sent(&cc, 8000, 1 * S);
    VCHECK_EQ(vega__quic_cc_available(&cc), 0);
    vega__quic_cc_on_removed(&cc, 13000);
    VCHECK_EQ(cc.in_flight, 0);
    VCHECK_EQ(vega__quic_cc_available(&cc), 12000);
}

VTEST(newreno_slow_start)
{
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt = rtt_of(100 * MS);
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1200);
    /* cwnd grows by the bytes acknowledged (§7.3.1). */
    ack_one(&cc, 1200, 1 * S, &rtt, 1 * S + 100 * MS);
    VCHECK_EQ(cc.cwnd, 13200);
    ack_one(&cc, 1000, 1 * S, &rtt, 1 * S + 100 * MS);
    VCHECK_EQ(cc.cwnd, 14200);
    VCHECK_EQ(cc.in_flight, 0);
}

VTEST(newreno_congestion_and_recovery)
{
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt = rtt_of(100 * MS);
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1200);
    vega__quic_cc_on_congestion(&cc, 1 * S, 2 * S);
    VCHECK_EQ(cc.ssthresh, 6000);
    VCHECK_EQ(cc.cwnd, 6000);
    VCHECK(cc.recovery && cc.recovery_start == 2 * S);
    /* A second loss of a packet sent before recovery started: same recovery period. */
    vega__quic_cc_on_congestion(&cc, 2 * S, 2 * S + 50 * MS);
    VCHECK_EQ(cc.cwnd, 6000);
    /* Acknowledging packets sent before recovery started does not grow the window. */
    ack_one(&cc, 1200, 2 * S - 10 * MS, &rtt, 2 * S + 100 * MS);
    VCHECK_EQ(cc.cwnd, 6000);
    /* A packet sent after the start ends recovery: avoidance, one datagram per window. */
    for (int i = 0; i < 4; i++)
        ack_one(&cc, 1200, 2 * S + 1, &rtt, 2 * S + 200 * MS);
    VCHECK_EQ(cc.cwnd, 6000); /* 4800 of 6000 bytes */
    ack_one(&cc, 1200, 2 * S + 1, &rtt, 2 * S + 200 * MS);
    VCHECK_EQ(cc.cwnd, 7200);
    VCHECK_EQ(cc.acked_bytes, 0);
    /* A loss sent after recovery started is a new congestion event. */
    vega__quic_cc_on_congestion(&cc, 2 * S + 1, 3 * S);
    VCHECK_EQ(cc.cwnd, 3600);
    /* Never below the minimum window (2 * max_datagram). */
    vega__quic_cc_on_congestion(&cc, 3 * S + 1, 4 * S);
    VCHECK_EQ(cc.cwnd, 2400);
    vega__quic_cc_on_congestion(&cc, 4 * S + 1, 5 * S);
    VCHECK_EQ(cc.cwnd, 2400);
}

VTEST(newreno_avoidance_by_bytes)
{
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt = rtt_of(100 * MS);
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1200);
    cc.ssthresh = 12000; /* at the threshold: congestion avoidance */
    /* 12000 bytes in small packets: exactly one max_datagram more. */
    for (int i = 0; i < 120; i++)
        ack_one(&cc, 100, 1 * S, &rtt, 2 * S);
    VCHECK_EQ(cc.cwnd, 13200);
    /* A big ACK counts whole windows. */
    ack_one(&cc, 3 * 13200, 1 * S, &rtt, 2 * S);
    VCHECK_EQ(cc.cwnd, 13200 + 3 * 1200);
}

VTEST(app_limited_no_growth)
{
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt = rtt_of(100 * MS);
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1200);
    cc.app_limited = true;
    ack_one(&cc, 1200, 1 * S, &rtt, 2 * S);
    VCHECK_EQ(cc.cwnd, 12000);
    VCHECK_EQ(cc.in_flight, 0);
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_CUBIC, 1200);
    cc.app_limited = true;
    ack_one(&cc, 1200, 1 * S, &rtt, 2 * S);
    VCHECK_EQ(cc.cwnd, 12000);
}

VTEST(persistent_congestion_min_window)
{
    struct vega__quic_cc cc;
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1200);
    vega__quic_cc_on_congestion(&cc, 1 * S, 2 * S);
    vega__quic_cc_on_persistent_congestion(&cc);
    VCHECK_EQ(cc.cwnd, 2400);
    VCHECK(!cc.recovery);
    VCHECK_EQ(cc.ssthresh, 6000); /* slow start back up to the reduced threshold */
    struct vega__quic_rtt rtt = rtt_of(100 * MS);
    ack_one(&cc, 1200, 1 * S, &rtt, 3 * S); /* sent before: not in recovery any more */
    VCHECK_EQ(cc.cwnd, 3600);
}

/* A CUBIC controller of 100 segments of 1200 bytes that has just seen a loss at 10 s. */
static void cubic_after_loss(struct vega__quic_cc *cc)
{
    vega__quic_cc_init(cc, VEGA__QUIC_CC_CUBIC, 1200);
    cc->cwnd = 120000;
    cc->ssthresh = 120000;
    vega__quic_cc_on_congestion(cc, 9 * S, 10 * S);
}

VTEST(cubic_reduction)
{
    struct vega__quic_cc cc;
    cubic_after_loss(&cc);
    /* beta_cubic = 0.7; W_max = cwnd at the loss (no earlier maximum). */
    VCHECK_EQ(cc.cwnd, 84000);
    VCHECK_EQ(cc.ssthresh, 84000);
    VCHECK_EQ(cc.w_max, 120000);
    VCHECK_EQ(cc.w_last_max, 120000);
    VCHECK(!cc.cubic_epoch);
    /* Fast convergence (§4.7): a loss below W_max remembers W_max = cwnd * (1 + beta) / 2. */
    cc.cwnd = 100000;
    vega__quic_cc_on_congestion(&cc, 11 * S, 12 * S);
    VCHECK_EQ(cc.w_max, 85000);
    VCHECK_EQ(cc.cwnd, 70000);
    /* A loss above W_max: W_max = cwnd. */
    cc.cwnd = 90000;
    vega__quic_cc_on_congestion(&cc, 13 * S, 14 * S);
    VCHECK_EQ(cc.w_max, 90000);
    VCHECK_EQ(cc.cwnd, 63000);
    /* Never below the minimum window. */
    cc.cwnd = 2400;
    vega__quic_cc_on_congestion(&cc, 15 * S, 16 * S);
    VCHECK_EQ(cc.cwnd, 2400);
}

VTEST(cubic_curve)
{
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt = rtt_of(100 * MS);
    cubic_after_loss(&cc);
    /* The first ACK after recovery starts the epoch: K = cbrt((W_max - cwnd_epoch) / C) =
     * cbrt(30 segments / 0.4) = cbrt(75) = 4.2171633 s. */
    ack_one(&cc, 1200, 10 * S + 1, &rtt, 10 * S + 100 * MS);
    VCHECK(cc.cubic_epoch);
    VCHECK_EQ(cc.epoch_start, 10 * S + 100 * MS);
    VCHECK_EQ(cc.cwnd_epoch_start, 84000);
    VCHECK(cc.k_ns >= 4217163000ull && cc.k_ns <= 4217164000ull);
    /* W_cubic(t) = C * (t - K)^3 + W_max, by hand (segments of 1200 bytes). */
    static const struct {
        uint64_t t;
        uint64_t w; /* bytes */
    } pts[] = {
        {0, 84000},              /* 0.4 * (-4.2171633)^3 * 1200 + 120000 */
        {1 * S, 104017},         /* 0.4 * (-3.2171633)^3 * 1200 + 120000 = 104016.9 */
        {2 * S, 114768},         /* 114768.4 */
        {4217163327ull, 120000}, /* t = K: the plateau */
        {6 * S, 122720},         /* 122720.0 */
        {10 * S, 212825},        /* 212824.8 */
    };
    for (size_t i = 0; i < sizeof(pts) / sizeof(pts[0]); i++) {
        uint64_t w = vega__quic_cc_cubic_window(&cc, pts[i].t);
        if (w + 2 < pts[i].w || w > pts[i].w + 2)
            vtest_fail(__FILE__, __LINE__, "W_cubic(%" PRIu64 ") = %" PRIu64 ", want %" PRIu64,
                       pts[i].t, w, pts[i].w);
    }
}

VTEST(cubic_reno_friendly)
{
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt = rtt_of(10 * MS);
    cubic_after_loss(&cc);
    /* A whole window acknowledged right at the epoch's start: W_cubic stays at 84000 while
     * W_est grows by alpha_cubic = 3 * 0.3 / 1.7 segments per window (§4.3), and cwnd
     * follows it. Per ACK of one segment, W_est += alpha * 1 / cwnd (segments), cwnd being
     * W_est itself here: about 633 bytes after 70 segments. */
    uint64_t t = 10 * S + 1;
    double w = 70; /* segments */
    for (int i = 0; i < 70; i++) {
        ack_one(&cc, 1200, t, &rtt, t);
        w += 0.9 / 1.7 / w;
    }
    uint64_t want = (uint64_t)(w * 1200);
    VCHECK(want > 84600 && want < 84640);
    VCHECK(cc.w_est + 1 >= want && cc.w_est <= want + 1);
    VCHECK_EQ(cc.cwnd, cc.w_est);
}

VTEST(cubic_grows_to_w_max_and_beyond)
{
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt = rtt_of(100 * MS);
    cubic_after_loss(&cc);
    /* Acknowledge a window every RTT for 8 s: the window climbs the concave part to about
     * W_max near K, then probes above it; it stays below W_cubic(t + RTT) throughout. */
    uint64_t start = 10 * S + 1, prev = cc.cwnd;
    for (uint64_t now = start; now < start + 8 * S; now += 100 * MS) {
        uint64_t segs = cc.cwnd / 1200;
        for (uint64_t i = 0; i < segs; i++)
            ack_one(&cc, 1200, now, &rtt, now);
        VCHECK(cc.cwnd >= prev);
        prev = cc.cwnd;
        uint64_t t = now - cc.epoch_start;
        VCHECK(cc.cwnd <=
               VEGA__MAX(vega__quic_cc_cubic_window(&cc, t + 100 * MS), cc.w_est) + 1200);
        if (now - start == 4 * S + 200 * MS) /* t ~ K */
            VCHECK(cc.cwnd > 115000 && cc.cwnd <= 121200);
    }
    VCHECK(cc.cwnd > 130000);
}

VTEST(cubic_slow_start_then_epoch)
{
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt = rtt_of(100 * MS);
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_CUBIC, 1200);
    ack_one(&cc, 1200, 1 * S, &rtt, 1 * S);
    VCHECK_EQ(cc.cwnd, 13200); /* slow start as NewReno */
    VCHECK(!cc.cubic_epoch);
    /* Persistent congestion: minimum window, slow start to ssthresh, then an epoch whose
     * W_max is the old one. */
    cc.cwnd = 120000;
    vega__quic_cc_on_congestion(&cc, 1 * S, 2 * S);
    vega__quic_cc_on_persistent_congestion(&cc);
    VCHECK_EQ(cc.cwnd, 2400);
    while (cc.cwnd < cc.ssthresh)
        ack_one(&cc, 1200, 3 * S, &rtt, 3 * S);
    VCHECK(!cc.cubic_epoch);
    ack_one(&cc, 1200, 3 * S, &rtt, 3 * S);
    VCHECK(cc.cubic_epoch);
    VCHECK_EQ(cc.w_max, 120000);
}

VTEST(pacer_intervals)
{
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt = rtt_of(100 * MS);
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1200);
    uint64_t now = 1 * S;
    /* A burst of 10 datagrams leaves at once. */
    for (int i = 0; i < 10; i++) {
        VCHECK_EQ(vega__quic_cc_pace(&cc, 1200, &rtt, now), now);
        vega__quic_cc_on_sent(&cc, 1200, now);
    }
    /* Then one per 1200 / (1.25 * 12000 / 100 ms) = 8 ms. */
    VCHECK_EQ(vega__quic_cc_pace(&cc, 1200, &rtt, now), now + 8 * MS);
    VCHECK_EQ(vega__quic_cc_pace(&cc, 1200, &rtt, now + 4 * MS), now + 8 * MS);
    now += 8 * MS;
    VCHECK_EQ(vega__quic_cc_pace(&cc, 1200, &rtt, now), now);
    vega__quic_cc_on_sent(&cc, 1200, now);
    VCHECK_EQ(vega__quic_cc_pace(&cc, 1200, &rtt, now), now + 8 * MS);
    /* Polling often (every 100 us) loses no credit. */
    uint64_t t = now;
    while (vega__quic_cc_pace(&cc, 1200, &rtt, t) > t)
        t += 100 * 1000;
    VCHECK_EQ(t, now + 8 * MS);
    /* After a long idle spell the bucket is full again, never fuller. */
    VCHECK_EQ(vega__quic_cc_pace(&cc, 1200, &rtt, 100 * S), 100 * S);
    VCHECK_EQ(cc.tokens, 12000);
}

VTEST(pacer_at_most_one_rtt_ahead)
{
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt = rtt_of(100 * MS);
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1200);
    cc.cwnd = 2400;
    VCHECK_EQ(vega__quic_cc_pace(&cc, 12000, &rtt, 1 * S), 1 * S); /* a full bucket */
    vega__quic_cc_on_sent(&cc, 12000, 1 * S);
    VCHECK_EQ(cc.tokens, 0);
    /* 12000 bytes at 1.25 * 2400 / 100 ms would take 400 ms: capped at one RTT. */
    VCHECK_EQ(vega__quic_cc_pace(&cc, 12000, &rtt, 1 * S), 1 * S + 100 * MS);
    /* A packet above the bucket waits for a full bucket only. */
    VCHECK(vega__quic_cc_pace(&cc, 65000, &rtt, 1 * S) <= 1 * S + 100 * MS);
}

VTEST(pacer_send_quantum_at_high_rates)
{
    /* 10 MB per 2 ms: 1.25 * 10e6 / 2 ms = 6.25 GB/s, 1 ms of which is more than the 64 KiB
     * quantum, so the bucket holds 64 KiB and a blocked sender waits for all of it. */
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt = rtt_of(2 * MS);
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1200);
    cc.cwnd = 10000000;
    uint64_t now = 1 * S;
    for (int round = 0; round < 3; round++) {
        int sent = 0;
        while (vega__quic_cc_pace(&cc, 1200, &rtt, now) <= now) {
            vega__quic_cc_on_sent(&cc, 1200, now);
            sent++;
        }
        VCHECK_EQ(sent, 54); /* 65536 / 1200: a whole quantum at once */
        VCHECK_EQ(cc.tokens, 65536 - 54 * 1200);
        /* (65536 - 736) bytes at 6.25 bytes/ns: 10368 ns, not the 75 ns one datagram needs */
        uint64_t t = vega__quic_cc_pace(&cc, 1200, &rtt, now);
        VCHECK_EQ(t, now + 10368);
        /* A sender that polls sooner (an ACK came) still waits for the whole quantum. */
        VCHECK_EQ(vega__quic_cc_pace(&cc, 1200, &rtt, now + 5000), now + 10368);
        now = t;
    }
    /* Between the two regimes: 1.25 * 240000 B / 10 ms = 30 MB/s, 30000 bytes per ms, above the
     * 12000-byte floor: bursts of 25 datagrams. */
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1200);
    cc.cwnd = 240000;
    rtt = rtt_of(10 * MS);
    int sent = 0;
    while (vega__quic_cc_pace(&cc, 1200, &rtt, now) <= now && sent < 100) {
        vega__quic_cc_on_sent(&cc, 1200, now);
        sent++;
    }
    VCHECK_EQ(sent, 25);
    VCHECK_EQ(vega__quic_cc_pace(&cc, 1200, &rtt, now), now + 1 * MS);
}

VTEST(pacer_initial_rtt_before_sample)
{
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt = rtt_of(0); /* 333 ms */
    vega__quic_cc_init(&cc, VEGA__QUIC_CC_NEWRENO, 1200);
    VCHECK_EQ(vega__quic_cc_pace(&cc, 12000, &rtt, 1 * S), 1 * S);
    vega__quic_cc_on_sent(&cc, 12000, 1 * S);
    /* 1200 * 333 ms / (1.25 * 12000) = 26.64 ms */
    VCHECK_EQ(vega__quic_cc_pace(&cc, 1200, &rtt, 1 * S), 1 * S + 26640000);
    /* No RTT at all (0): no pacing. */
    rtt.smoothed = 0;
    VCHECK_EQ(vega__quic_cc_pace(&cc, 1200, &rtt, 2 * S), 2 * S);
}
