/* SPDX-License-Identifier: MIT */
/* QUIC congestion control: NewReno (RFC 9002 §7, Appendix B), CUBIC (RFC 9438 §4) and a
 * token-bucket pacer (RFC 9002 §7.7). Windows are in bytes, times in ns. */
#include "base.h"
#include "recovery.h"

#define MIN_DATAGRAM 1200u
#define MAX_DATAGRAM 65527u
/* RFC 9438 §4.6, §4.2: beta_cubic = 0.7, C = 0.4 (segments per s^3). */
#define CUBIC_BETA_NUM 7
#define CUBIC_BETA_DEN 10
#define CUBIC_C        0.4
/* alpha_cubic = 3 * (1 - beta) / (1 + beta) = 0.9 / 1.7 = 9/17 (§4.3). */
#define ALPHA_NUM 9
#define ALPHA_DEN 17
#define NS_PER_S  1e9

static uint64_t min_window(const struct vega__quic_cc *cc)
{
    return 2 * cc->max_datagram; /* kMinimumWindow (§7.2) */
}

static uint64_t clamp_cwnd(const struct vega__quic_cc *cc, uint64_t w)
{
    if (w > VEGA__QUIC_CC_MAX_CWND)
        return VEGA__QUIC_CC_MAX_CWND;
    return w < min_window(cc) ? min_window(cc) : w;
}

/* The send quantum: 1 ms of the pacing rate (1.25 * cwnd / srtt), at most
 * VEGA__QUIC_PACER_QUANTUM_MAX bytes; 0 without an RTT. */
static uint64_t quantum(const struct vega__quic_cc *cc, uint64_t srtt)
{
    if (srtt == 0)
        return 0;
    unsigned __int128 q = (unsigned __int128)cc->cwnd * 5 * 1000000 / (4 * (unsigned __int128)srtt);
    return (uint64_t)VEGA__MIN(q, (unsigned __int128)VEGA__QUIC_PACER_QUANTUM_MAX);
}

/* The bucket: the initial window's worth of datagrams, or a send quantum when that is more. */
static uint64_t burst(const struct vega__quic_cc *cc, uint64_t srtt)
{
    return VEGA__MAX(VEGA__QUIC_PACER_BURST_PKTS * cc->max_datagram, quantum(cc, srtt));
}

void vega__quic_cc_init(struct vega__quic_cc *cc, vega__quic_cc_algo algo, uint64_t max_datagram)
{
    if (max_datagram == 0 || max_datagram < MIN_DATAGRAM)
        max_datagram = MIN_DATAGRAM;
    if (max_datagram > MAX_DATAGRAM)
        max_datagram = MAX_DATAGRAM;
    *cc = (struct vega__quic_cc){.algo = algo == VEGA__QUIC_CC_CUBIC ? VEGA__QUIC_CC_CUBIC
                                                                     : VEGA__QUIC_CC_NEWRENO,
                                 .max_datagram = max_datagram,
                                 .ssthresh = UINT64_MAX};
    uint64_t w = VEGA__MAX(14720u, 2 * max_datagram);
    cc->cwnd = VEGA__MIN(10 * max_datagram, w);
    cc->tokens = burst(cc, 0);
}

uint64_t vega__quic_cc_available(const struct vega__quic_cc *cc)
{
    return cc->cwnd > cc->in_flight ? cc->cwnd - cc->in_flight : 0;
}

void vega__quic_cc_on_sent(struct vega__quic_cc *cc, uint64_t bytes, uint64_t now)
{
    cc->in_flight = vega__sat_add(cc->in_flight, bytes);
    cc->tokens = cc->tokens > bytes ? cc->tokens - bytes : 0;
}

void vega__quic_cc_on_removed(struct vega__quic_cc *cc, uint64_t bytes)
{
    VEGA_ASSERT(cc->in_flight >= bytes);
    cc->in_flight = cc->in_flight > bytes ? cc->in_flight - bytes : 0;
}

/* ---- CUBIC ----------------------------------------------------------------------------------- */

/* Cube root of x >= 0 by Newton's method from above (the iteration then falls monotonically to
 * the root, so it stops when it stops falling): no libm needed. */
static double cube_root(double x)
{
    if (!(x > 0))
        return 0;
    double y = 1;
    while (y * y * y < x)
        y *= 2;
    for (int i = 0; i < 200; i++) {
        double n = y - (y * y * y - x) / (3 * y * y);
        if (!(n < y))
            break;
        y = n;
    }
    return y;
}

uint64_t vega__quic_cc_cubic_window(const struct vega__quic_cc *cc, uint64_t t)
{
    double dt = ((double)t - (double)cc->k_ns) / NS_PER_S;
    double w = CUBIC_C * dt * dt * dt * (double)cc->max_datagram + (double)cc->w_max;
    if (!(w > 0))
        return 0;
    if (w >= (double)VEGA__QUIC_CC_MAX_CWND)
        return VEGA__QUIC_CC_MAX_CWND;
    return (uint64_t)w;
}

/* A congestion avoidance epoch starts (§4.2): t counts from here, from cwnd_epoch = cwnd. */
static void cubic_epoch_start(struct vega__quic_cc *cc, uint64_t now)
{
    cc->cubic_epoch = true;
    cc->epoch_start = now;
    cc->cwnd_epoch_start = cc->cwnd;
    cc->w_est = cc->cwnd;
    cc->w_est_acc = cc->cwnd_acc = 0;
    if (cc->w_max <= cc->cwnd) {
        /* Above the old maximum already (slow start overshoot, or no reduction yet): the
         * plateau is here, and the curve starts convex (as §4.10 does on slow start exit). */
        cc->w_max = cc->cwnd;
        cc->k_ns = 0;
        return;
    }
    /* K = cubic_root((W_max - cwnd_epoch) / C), in seconds with windows in segments. */
    double segs = (double)(cc->w_max - cc->cwnd) / (double)cc->max_datagram;
    cc->k_ns = (uint64_t)(cube_root(segs / CUBIC_C) * NS_PER_S);
}

static void cubic_on_acked(struct vega__quic_cc *cc, uint64_t bytes,
                           const struct vega__quic_rtt *rtt, uint64_t now)
{
    if (!cc->cubic_epoch)
        cubic_epoch_start(cc, now);
    uint64_t t = now > cc->epoch_start ? now - cc->epoch_start : 0;
    uint64_t cwnd = cc->cwnd;

    /* Reno-friendly estimate (§4.3): W_est += alpha_cubic * segments_acked / cwnd (segments),
     * alpha_cubic becoming 1 once W_est reaches cwnd_prior. In bytes:
     * W_est += alpha * max_datagram * bytes / cwnd, keeping the remainder. */
    unsigned alpha = cc->w_est >= cc->w_last_max ? ALPHA_DEN : ALPHA_NUM;
    unsigned __int128 num = (unsigned __int128)alpha * cc->max_datagram * bytes + cc->w_est_acc;
    unsigned __int128 den = (unsigned __int128)ALPHA_DEN * cwnd;
    cc->w_est =
        (uint64_t)VEGA__MIN((unsigned __int128)VEGA__QUIC_CC_MAX_CWND, cc->w_est + num / den);
    cc->w_est_acc = (uint64_t)(num % den);

    if (vega__quic_cc_cubic_window(cc, t) < cc->w_est) {
        /* Reno-friendly region: cwnd follows W_est. */
        if (cc->w_est > cwnd)
            cc->cwnd = clamp_cwnd(cc, cc->w_est);
        return;
    }
    /* Concave and convex regions (§4.4, §4.5): target = W_cubic(t + RTT), kept within
     * [cwnd, 1.5 * cwnd]; cwnd grows by (target - cwnd) / cwnd per segment acknowledged, i.e.
     * (target - cwnd) * bytes / cwnd in bytes. */
    uint64_t target = vega__quic_cc_cubic_window(cc, vega__sat_add(t, rtt->smoothed));
    if (target < cwnd)
        target = cwnd;
    if (target > cwnd + cwnd / 2)
        target = cwnd + cwnd / 2;
    unsigned __int128 inc = (unsigned __int128)(target - cwnd) * bytes + cc->cwnd_acc;
    cc->cwnd = clamp_cwnd(cc, cwnd + (uint64_t)(inc / cwnd));
    cc->cwnd_acc = (uint64_t)(inc % cwnd);
}

/* ---- the controller -------------------------------------------------------------------------- */

void vega__quic_cc_on_acked(struct vega__quic_cc *cc, uint64_t bytes, uint64_t time_sent,
                            const struct vega__quic_rtt *rtt, uint64_t now)
{
    vega__quic_cc_on_removed(cc, bytes);
    if (cc->app_limited) {
        /* RFC 9438 §5.8: the time spent application-limited must not count in t, so the next
         * growth starts a fresh epoch from the window as it is. */
        cc->cubic_epoch = false;
        return;
    }
    if (cc->recovery && time_sent <= cc->recovery_start)
        return; /* InCongestionRecovery (Appendix B.5) */
    if (cc->cwnd < cc->ssthresh) {
        /* Slow start, both algorithms (RFC 9438 §4.10). */
        cc->cwnd = clamp_cwnd(cc, vega__sat_add(cc->cwnd, bytes));
        return;
    }
    if (cc->algo == VEGA__QUIC_CC_CUBIC) {
        cubic_on_acked(cc, bytes, rtt, now);
        return;
    }
    /* NewReno congestion avoidance (§7.3.3): one max_datagram per window of bytes acked. */
    cc->acked_bytes = vega__sat_add(cc->acked_bytes, bytes);
    if (cc->acked_bytes >= cc->cwnd) {
        uint64_t n = cc->acked_bytes / cc->cwnd;
        cc->acked_bytes -= n * cc->cwnd;
        cc->cwnd = clamp_cwnd(cc, vega__sat_add(cc->cwnd, n * cc->max_datagram));
    }
}

void vega__quic_cc_on_congestion(struct vega__quic_cc *cc, uint64_t time_sent, uint64_t now)
{
    if (cc->recovery && time_sent <= cc->recovery_start)
        return; /* one reduction per recovery period (Appendix B.6) */
    cc->recovery = true;
    cc->recovery_start = now;
    cc->acked_bytes = 0;
    if (cc->algo == VEGA__QUIC_CC_CUBIC) {
        /* §4.7 fast convergence: a window that did not get back to W_max releases bandwidth
         * by remembering less of it. */
        if (cc->cwnd < cc->w_max)
            cc->w_max = cc->cwnd * (CUBIC_BETA_DEN + CUBIC_BETA_NUM) / (2 * CUBIC_BETA_DEN);
        else
            cc->w_max = cc->cwnd;
        cc->w_last_max = cc->cwnd; /* cwnd_prior */
        cc->ssthresh = cc->cwnd * CUBIC_BETA_NUM / CUBIC_BETA_DEN;
        cc->cubic_epoch = false;
    } else {
        cc->ssthresh = cc->cwnd / 2; /* kLossReductionFactor */
    }
    cc->cwnd = VEGA__MAX(cc->ssthresh, min_window(cc));
}

void vega__quic_cc_on_persistent_congestion(struct vega__quic_cc *cc)
{
    cc->cwnd = min_window(cc);
    cc->recovery = false; /* Appendix A.9: congestion_recovery_start_time = 0 */
    cc->recovery_start = 0;
    cc->acked_bytes = 0;
    cc->cubic_epoch = false;
}

/* ---- pacer ----------------------------------------------------------------------------------- */

uint64_t vega__quic_cc_pace(struct vega__quic_cc *cc, uint64_t bytes,
                            const struct vega__quic_rtt *rtt, uint64_t now)
{
    uint64_t srtt = rtt->smoothed, cap = burst(cc, srtt);
    if (srtt == 0) {
        cc->tokens = cap;
        cc->pacer_last = now;
        return now;
    }
    if (now > cc->pacer_last) {
        /* Refill at 1.25 * cwnd / srtt bytes per ns. Eight RTTs refill a full bucket at any
         * window of at least one datagram, so a longer idle spell counts as eight. The clock
         * only moves on when a whole byte was earned, so frequent calls lose nothing. */
        uint64_t elapsed = now - cc->pacer_last;
        if (elapsed / 8 > srtt)
            elapsed = 8 * srtt;
        unsigned __int128 add =
            (unsigned __int128)elapsed * 5 * cc->cwnd / (4 * (unsigned __int128)srtt);
        if (add > 0 || cc->tokens >= cap)
            cc->pacer_last = now;
        cc->tokens = (uint64_t)VEGA__MIN((unsigned __int128)cap, cc->tokens + add);
    }
    /* Once the tokens ran short, the sender waits for a whole send quantum (or the packet's
     * bytes, if more), not for the next datagram's worth, as ngtcp2's send quantum and TCP's
     * TSO autosizing do: the same rate in fewer, larger bursts, so a fast connection costs a
     * timer per quantum and its peer an ACK per quantum instead of one per two datagrams. It
     * keeps waiting when it is called sooner (an ACK came): what was earned by then goes out
     * with the rest of the quantum. */
    uint64_t need = VEGA__MIN(bytes, cap);
    uint64_t target = VEGA__MAX(need, VEGA__MIN(quantum(cc, srtt), cap));
    if (cc->tokens >= (cc->refill ? target : need)) {
        cc->refill = false;
        return now;
    }
    cc->refill = true;
    unsigned __int128 wait = ((unsigned __int128)(target - cc->tokens) * 4 * srtt +
                              5 * (unsigned __int128)cc->cwnd - 1) /
                             (5 * (unsigned __int128)cc->cwnd);
    return vega__sat_add(now, (uint64_t)VEGA__MIN((unsigned __int128)srtt, wait));
}
