/* SPDX-License-Identifier: MIT */
/* QUIC loss detection (RFC 9002 §5, §6, Appendix A): the RTT estimator against the RFC's
 * equations, ACK processing (unsent packet numbers, skipped ones, the RTT sample rule), packet-
 * and time-threshold loss, the PTO (backoff, reset, application space before confirmation,
 * the client's anti-deadlock PTO), discarding a space, persistent congestion, ECN validation
 * (RFC 9000 §13.4.2), spurious losses, callbacks exactly once per packet, and 10^5 packets in
 * flight. ACKs go through vega_quic_frame_encode and vega_quic_frame_decode, as on the wire. */
#include <time.h>

#include <vega/quic_wire.h>

#include "base.h"
#include "recovery.h"
#include "vtest.h"

#define MS  VEGA__QUIC_NS_PER_MS
#define S   (1000 * MS)
#define INI VEGA__QUIC_SPACE_INITIAL
#define HS  VEGA__QUIC_SPACE_HANDSHAKE
#define APP VEGA__QUIC_SPACE_APP

/* What the connection would hang on a packet: here, a record of its callbacks. */
struct tok {
    int acked, lost, discarded;
};

#define NTOK 512
struct env {
    struct vega__quic_recovery *r;
    struct tok toks[VEGA__QUIC_NSPACES][NTOK];
    bool used[VEGA__QUIC_NSPACES][NTOK];
    uint64_t nacked, nlost, ndiscarded;
    uint64_t acked_pn[64], lost_pn[64]; /* the first callbacks' packet numbers, in order */
};

static void cb_acked(void *ud, int space, struct vega__quic_sent *p)
{
    struct env *e = ud;
    if (e->nacked < 64)
        e->acked_pn[e->nacked] = p->pn;
    e->nacked++;
    if (p->frames)
        ((struct tok *)p->frames)->acked++;
}

static void cb_lost(void *ud, int space, struct vega__quic_sent *p, bool discarded)
{
    struct env *e = ud;
    if (discarded) {
        e->ndiscarded++;
    } else {
        if (e->nlost < 64)
            e->lost_pn[e->nlost] = p->pn;
        e->nlost++;
    }
    if (p->frames) {
        struct tok *t = p->frames;
        if (discarded)
            t->discarded++;
        else
            t->lost++;
    }
}

static struct env *env_new(vega__quic_cc_algo algo, uint64_t initial_rtt)
{
    struct env *e = calloc(1, sizeof(*e));
    VCHECK(e != NULL);
    struct vega__quic_recovery_cbs cbs = {.ud = e, .on_acked = cb_acked, .on_lost = cb_lost};
    VCHECK_EQ(vega__quic_recovery_new(&e->r, algo, 1200, initial_rtt, &cbs, NULL), 0);
    return e;
}

/* Frees the recovery state, then checks every packet's frames came back exactly once. */
static void env_done(struct env *e)
{
    VCHECK(vega__quic_recovery_check(e->r));
    vega__quic_recovery_free(e->r);
    for (int s = 0; s < VEGA__QUIC_NSPACES; s++)
        for (int i = 0; i < NTOK; i++) {
            struct tok *t = &e->toks[s][i];
            if (e->used[s][i] && t->acked + t->lost + t->discarded != 1)
                vtest_fail(__FILE__, __LINE__, "space %d pn %d: acked %d lost %d discarded %d", s,
                           i, t->acked, t->lost, t->discarded);
        }
    free(e);
}

static int snd_ex(struct env *e, int space, uint64_t pn, uint64_t t, uint32_t bytes, bool ae,
                  bool ecn)
{
    struct vega__quic_sent p = {
        .pn = pn, .time_sent = t, .bytes = bytes, .ack_eliciting = ae, .in_flight = ae, .ecn = ecn};
    bool tracked = pn < NTOK && space >= 0 && space < VEGA__QUIC_NSPACES;
    if (tracked)
        p.frames = &e->toks[space][pn];
    int rc = vega__quic_recovery_on_sent(e->r, space, &p);
    if (rc == 0 && tracked)
        e->used[space][pn] = true;
    VCHECK(vega__quic_recovery_check(e->r));
    return rc;
}

static void snd(struct env *e, int space, uint64_t pn, uint64_t t)
{
    VCHECK_EQ(snd_ex(e, space, pn, t, 1200, true, false), 0);
}

/* An ACK of the ranges rg (descending), encoded and decoded as on the wire; delay_us in
 * microseconds (exponent 3); ECN counts present when ecn. */
static int ack_ex(struct env *e, int space, const vega_quic_ack_range *rg, size_t n,
                  uint64_t delay_us, bool ecn, uint64_t ect0, uint64_t ce, uint64_t now,
                  uint64_t *wire_err)
{
    vega_quic_frame f = {.type = ecn ? VEGA_QUIC_FT_ACK_ECN : VEGA_QUIC_FT_ACK};
    f.u.ack.ranges = rg;
    f.u.ack.nranges = n;
    f.u.ack.ack_delay = delay_us >> 3;
    f.u.ack.ect0 = ect0;
    f.u.ack.ce = ce;
    uint8_t buf[4096];
    vega_ssize len = vega_quic_frame_encode(&f, buf, sizeof(buf));
    VCHECK(len > 0);
    vega_quic_frame g;
    uint64_t werr = 0;
    VCHECK_EQ(vega_quic_frame_decode(&g, buf, (size_t)len, &werr), len);
    int rc = vega__quic_recovery_on_ack_frame(e->r, space, &g, 3, now, wire_err ? wire_err : &werr);
    VCHECK(vega__quic_recovery_check(e->r));
    return rc;
}

static void ack(struct env *e, int space, uint64_t lo, uint64_t hi, uint64_t now)
{
    vega_quic_ack_range rg = {lo, hi};
    VCHECK_EQ(ack_ex(e, space, &rg, 1, 0, false, 0, 0, now, NULL), 0);
}

static const struct vega__quic_recovery_stats *stats(struct env *e)
{
    return vega__quic_recovery_stats(e->r);
}

/* ---- RTT ------------------------------------------------------------------------------------- */

VTEST(rtt_initial)
{
    struct vega__quic_rtt r;
    vega__quic_rtt_init(&r, 0);
    VCHECK_EQ(r.smoothed, 333 * MS);
    VCHECK_EQ(r.var, 333 * MS / 2);
    VCHECK(!r.has_sample);
    vega__quic_rtt_init(&r, 100 * MS);
    VCHECK_EQ(r.smoothed, 100 * MS);
    VCHECK_EQ(r.var, 50 * MS);
}

VTEST(rtt_equations)
{
    struct vega__quic_rtt r;
    vega__quic_rtt_init(&r, 0);
    /* First sample (§5.3): min = smoothed = latest, rttvar = latest / 2; ack_delay unused. */
    vega__quic_rtt_sample(&r, 100 * MS, 30 * MS, 25 * MS, false, 7 * S);
    VCHECK(r.has_sample);
    VCHECK_EQ(r.first_sample_time, 7 * S);
    VCHECK_EQ(r.min, 100 * MS);
    VCHECK_EQ(r.smoothed, 100 * MS);
    VCHECK_EQ(r.var, 50 * MS);
    /* latest 120, ack_delay 10: 120 >= min + 10, so adjusted = 110;
     * rttvar = 3/4 * 50 + 1/4 * |100 - 110| = 40; smoothed = 7/8 * 100 + 1/8 * 110 = 101.25. */
    vega__quic_rtt_sample(&r, 120 * MS, 10 * MS, 25 * MS, false, 8 * S);
    VCHECK_EQ(r.latest, 120 * MS);
    VCHECK_EQ(r.min, 100 * MS);
    VCHECK_EQ(r.var, 40 * MS);
    VCHECK_EQ(r.smoothed, 101250000);
    /* latest 105 < min + 10: the delay is not subtracted; rttvar = 30 + 0.9375,
     * smoothed = 88.59375 + 13.125. */
    vega__quic_rtt_sample(&r, 105 * MS, 10 * MS, 25 * MS, false, 9 * S);
    VCHECK_EQ(r.var, 30937500);
    VCHECK_EQ(r.smoothed, 101718750);
    /* A lower sample moves min_rtt. */
    vega__quic_rtt_sample(&r, 90 * MS, 0, 25 * MS, false, 10 * S);
    VCHECK_EQ(r.min, 90 * MS);
    VCHECK_EQ(r.first_sample_time, 7 * S);
}

VTEST(rtt_ack_delay_capped_once_confirmed)
{
    struct vega__quic_rtt a, b;
    vega__quic_rtt_init(&a, 0);
    vega__quic_rtt_sample(&a, 100 * MS, 0, 25 * MS, false, 1 * S);
    b = a;
    /* Before confirmation the peer's ack_delay counts in full (200 - 50 = 150)... */
    vega__quic_rtt_sample(&a, 200 * MS, 50 * MS, 25 * MS, false, 2 * S);
    VCHECK_EQ(a.smoothed, (7 * 100 * MS + 150 * MS) / 8);
    /* ...after it, at most max_ack_delay (200 - 25 = 175). */
    vega__quic_rtt_sample(&b, 200 * MS, 50 * MS, 25 * MS, true, 2 * S);
    VCHECK_EQ(b.smoothed, (7 * 100 * MS + 175 * MS) / 8);
}

VTEST(rtt_pto_period)
{
    struct vega__quic_rtt r;
    vega__quic_rtt_init(&r, 100 * MS);
    VCHECK_EQ(vega__quic_rtt_pto(&r, 0), 300 * MS);
    VCHECK_EQ(vega__quic_rtt_pto(&r, 25 * MS), 325 * MS);
    /* rttvar tiny: kGranularity (1 ms) instead of 4 * rttvar. */
    r.smoothed = 10 * MS;
    r.var = 1000;
    VCHECK_EQ(vega__quic_rtt_pto(&r, 0), 11 * MS);
    r.smoothed = UINT64_MAX - 5; /* saturates */
    VCHECK(vega__quic_rtt_pto(&r, 25 * MS) == UINT64_MAX);
}

/* ---- ACK processing -------------------------------------------------------------------------- */

VTEST(ack_of_unsent_pn_is_violation)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    uint64_t werr = 0;
    vega_quic_ack_range rg = {0, 0};
    /* Nothing sent in the space at all. */
    VCHECK_EQ(ack_ex(e, HS, &rg, 1, 0, false, 0, 0, 1 * S, &werr), VEGA_ERR_PROTO);
    VCHECK_EQ(werr, VEGA_QUIC_PROTOCOL_VIOLATION);
    for (uint64_t pn = 0; pn < 3; pn++)
        snd(e, APP, pn, 1 * S);
    /* Above the largest sent (2). */
    rg = (vega_quic_ack_range){1, 3};
    werr = 0;
    VCHECK_EQ(ack_ex(e, APP, &rg, 1, 0, false, 0, 0, 2 * S, &werr), VEGA_ERR_PROTO);
    VCHECK_EQ(werr, VEGA_QUIC_PROTOCOL_VIOLATION);
    /* Nothing changed. */
    VCHECK_EQ(e->nacked, 0);
    VCHECK_EQ(vega__quic_recovery_largest_acked(e->r, APP), -1);
    VCHECK_EQ(vega__quic_recovery_in_flight(e->r, APP), 3600);
    /* Hand-filled ranges that are not descending: FRAME_ENCODING_ERROR. */
    vega_quic_ack_range bad[2] = {{0, 1}, {1, 2}};
    vega_quic_frame_ack a = {.ranges = bad, .nranges = 2};
    VCHECK_EQ(vega__quic_recovery_on_ack(e->r, APP, &a, 3, 2 * S, &werr), VEGA_ERR_PROTO);
    VCHECK_EQ(werr, VEGA_QUIC_FRAME_ENCODING_ERROR);
    env_done(e);
}

VTEST(ack_of_skipped_pn_is_ignored)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    snd(e, APP, 0, 1 * S);
    snd(e, APP, 1, 1 * S);
    snd(e, APP, 3, 1 * S); /* 2 skipped */
    ack(e, APP, 2, 2, 1 * S + 50 * MS);
    VCHECK_EQ(e->nacked, 0);
    ack(e, APP, 0, 3, 1 * S + 60 * MS);
    VCHECK_EQ(e->nacked, 3);
    VCHECK_EQ(vega__quic_recovery_outstanding(e->r, APP), 0);
    env_done(e);
}

VTEST(on_sent_requires_increasing_pn)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    snd(e, APP, 5, 1 * S);
    VCHECK_EQ(snd_ex(e, APP, 5, 1 * S, 1200, true, false), -EINVAL);
    VCHECK_EQ(snd_ex(e, APP, 4, 1 * S, 1200, true, false), -EINVAL);
    VCHECK_EQ(snd_ex(e, 3, 6, 1 * S, 1200, true, false), -EINVAL);
    /* Another space has its own numbers. */
    snd(e, HS, 0, 1 * S);
    VCHECK_EQ(stats(e)->sent, 2);
    VCHECK_EQ(vega__quic_recovery_cc(e->r)->in_flight, 2400);
    env_done(e);
}

VTEST(callbacks_once_with_duplicate_acks)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    for (uint64_t pn = 0; pn < 20; pn++)
        snd(e, APP, pn, 1 * S + pn * MS);
    ack(e, APP, 0, 9, 1 * S + 100 * MS);
    VCHECK_EQ(e->nacked, 10);
    /* The same and overlapping ranges again: only the new packets. */
    ack(e, APP, 0, 9, 1 * S + 101 * MS);
    vega_quic_ack_range rg[2] = {{12, 19}, {0, 10}};
    VCHECK_EQ(ack_ex(e, APP, rg, 2, 0, false, 0, 0, 1 * S + 120 * MS, NULL), 0);
    VCHECK_EQ(e->nacked, 10 + 1 + 8);
    VCHECK_EQ(e->nlost, 1); /* 11: three later packets acknowledged */
    VCHECK_EQ(e->lost_pn[0], 11);
    VCHECK_EQ(stats(e)->acked, 19);
    VCHECK_EQ(stats(e)->lost, 1);
    VCHECK_EQ(vega__quic_recovery_in_flight(e->r, APP), 0);
    VCHECK_EQ(vega__quic_recovery_largest_acked(e->r, APP), 19);
    env_done(e);
}

VTEST(rtt_sample_rule)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    vega__quic_recovery_set_handshake_confirmed(e->r);
    snd(e, APP, 0, 1 * S);
    snd(e, APP, 1, 1 * S);
    snd_ex(e, APP, 2, 1 * S, 50, false, false); /* an ACK-only packet */
    /* Largest (1) newly acknowledged, ack-eliciting: a sample of 100 ms. */
    ack(e, APP, 1, 1, 1 * S + 100 * MS);
    const struct vega__quic_rtt *rtt = vega__quic_recovery_rtt(e->r);
    VCHECK(rtt->has_sample);
    VCHECK_EQ(rtt->latest, 100 * MS);
    /* Largest (1) not newly acknowledged: no sample, though 0 is new. */
    ack(e, APP, 0, 1, 1 * S + 300 * MS);
    VCHECK_EQ(rtt->latest, 100 * MS);
    /* Only a non-ack-eliciting packet newly acknowledged: no sample. */
    ack(e, APP, 2, 2, 1 * S + 400 * MS);
    VCHECK_EQ(rtt->latest, 100 * MS);
    VCHECK_EQ(e->nacked, 3);
    env_done(e);
}

VTEST(ack_delay_used_except_in_initial)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    vega_quic_ack_range rg = {0, 0};
    snd(e, INI, 0, 1 * S);
    VCHECK_EQ(ack_ex(e, INI, &rg, 1, 0, false, 0, 0, 1 * S + 100 * MS, NULL), 0);
    /* Initial: a 20 ms ack_delay is ignored, smoothed = 7/8 * 100 + 1/8 * 140. */
    snd(e, INI, 1, 2 * S);
    rg = (vega_quic_ack_range){1, 1};
    VCHECK_EQ(ack_ex(e, INI, &rg, 1, 20000, false, 0, 0, 2 * S + 140 * MS, NULL), 0);
    VCHECK_EQ(vega__quic_recovery_rtt(e->r)->smoothed, 105 * MS);
    /* Handshake: the same sample less 20 ms (ack_delay 20000 us = 2500 << 3). */
    snd(e, HS, 0, 3 * S);
    rg = (vega_quic_ack_range){0, 0};
    VCHECK_EQ(ack_ex(e, HS, &rg, 1, 20000, false, 0, 0, 3 * S + 140 * MS, NULL), 0);
    VCHECK_EQ(vega__quic_recovery_rtt(e->r)->smoothed, (7 * 105 * MS + 120 * MS) / 8);
    env_done(e);
}

/* ---- loss detection -------------------------------------------------------------------------- */

VTEST(packet_threshold_loss)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    for (uint64_t pn = 0; pn < 5; pn++)
        snd(e, APP, pn, 1 * S + pn * MS);
    /* 3 acknowledged: 0 is PACKET_THRESHOLD below, lost; 1 and 2 are not (yet). */
    ack(e, APP, 3, 3, 1 * S + 100 * MS);
    VCHECK_EQ(e->nlost, 1);
    VCHECK_EQ(e->lost_pn[0], 0);
    VCHECK_EQ(e->nacked, 1);
    VCHECK(e->toks[APP][0].lost == 1 && e->toks[APP][3].acked == 1);
    /* The loss is a congestion event: NewReno halves. */
    VCHECK_EQ(vega__quic_recovery_cc(e->r)->cwnd, 6000);
    VCHECK_EQ(vega__quic_recovery_in_flight(e->r, APP), 3 * 1200);
    VCHECK_EQ(vega__quic_recovery_cc(e->r)->in_flight, 3 * 1200);
    /* 4 acknowledged: 1 goes too. */
    ack(e, APP, 4, 4, 1 * S + 101 * MS);
    VCHECK_EQ(e->nlost, 2);
    VCHECK_EQ(e->lost_pn[1], 1);
    env_done(e);
}

VTEST(time_threshold_loss_via_timer)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    for (uint64_t pn = 0; pn < 5; pn++)
        snd(e, APP, pn, 1 * S + pn * MS);
    ack(e, APP, 3, 3, 1 * S + 100 * MS); /* latest_rtt = smoothed = 97 ms */
    /* loss_delay = 9/8 * 97 ms = 109.125 ms: 1 (sent at 1.001 s) is lost at 1.110125 s. */
    uint64_t t = vega__quic_recovery_timer(e->r);
    VCHECK_EQ(t, 1 * S + 1 * MS + 109125000);
    VCHECK_EQ(vega__quic_recovery_on_timeout(e->r, t - 1), -1); /* early: nothing */
    VCHECK_EQ(e->nlost, 1);
    VCHECK_EQ(vega__quic_recovery_on_timeout(e->r, t), -1);
    VCHECK_EQ(e->nlost, 2);
    VCHECK_EQ(e->lost_pn[1], 1);
    VCHECK(vega__quic_recovery_check(e->r));
    /* Then 2, one ms later. */
    VCHECK_EQ(vega__quic_recovery_timer(e->r), t + 1 * MS);
    VCHECK_EQ(vega__quic_recovery_on_timeout(e->r, t + 1 * MS), -1);
    VCHECK_EQ(e->nlost, 3);
    VCHECK_EQ(vega__quic_recovery_pto_count(e->r), 0);
    /* Only 4 left, above the largest acknowledged: the timer is the PTO now. Not confirmed,
     * so no PTO for the application space. */
    VCHECK(vega__quic_recovery_timer(e->r) == VEGA__QUIC_TIME_INF);
    vega__quic_recovery_set_handshake_confirmed(e->r);
    VCHECK(vega__quic_recovery_timer(e->r) != VEGA__QUIC_TIME_INF);
    env_done(e);
}

VTEST(loss_delay_at_least_granularity)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    snd(e, APP, 0, 1 * S);
    snd(e, APP, 1, 1 * S + 1000);
    ack(e, APP, 1, 1, 1 * S + 1000 + 100); /* a 100 ns RTT */
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 1 * S + VEGA__QUIC_GRANULARITY_NS);
    env_done(e);
}

/* ---- PTO ------------------------------------------------------------------------------------- */

VTEST(pto_backoff_doubles_and_resets)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 100 * MS);
    vega__quic_recovery_set_handshake_confirmed(e->r);
    VCHECK(vega__quic_recovery_timer(e->r) == VEGA__QUIC_TIME_INF);
    snd(e, APP, 0, 1 * S);
    /* smoothed 100 + 4 * 50 + max_ack_delay 25 */
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 1 * S + 325 * MS);
    VCHECK_EQ(vega__quic_recovery_on_timeout(e->r, 1 * S + 325 * MS), APP);
    VCHECK_EQ(vega__quic_recovery_pto_count(e->r), 1);
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 1 * S + 650 * MS);
    VCHECK_EQ(vega__quic_recovery_on_timeout(e->r, 1 * S + 650 * MS), APP);
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 1 * S + 1300 * MS);
    /* The probe goes out; the PTO counts from it. */
    snd(e, APP, 1, 2 * S);
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 2 * S + 1300 * MS);
    VCHECK_EQ(vega__quic_recovery_on_timeout(e->r, 3300 * MS), APP);
    VCHECK_EQ(vega__quic_recovery_pto_count(e->r), 3);
    VCHECK_EQ(stats(e)->pto_count_total, 3);
    /* A PTO declares nothing lost. */
    VCHECK_EQ(e->nlost, 0);
    /* An ACK resets the backoff. */
    ack(e, APP, 1, 1, 3400 * MS);
    VCHECK_EQ(vega__quic_recovery_pto_count(e->r), 0);
    env_done(e);
}

VTEST(pto_backoff_saturates)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 100 * MS);
    snd(e, HS, 0, 1 * S);
    uint64_t now = 1 * S;
    for (int i = 0; i < 100; i++) {
        uint64_t t = vega__quic_recovery_timer(e->r);
        if (t == VEGA__QUIC_TIME_INF)
            break;
        VCHECK(t >= now);
        now = t;
        VCHECK_EQ(vega__quic_recovery_on_timeout(e->r, now), HS);
    }
    VCHECK(vega__quic_recovery_timer(e->r) == VEGA__QUIC_TIME_INF);
    VCHECK(vega__quic_recovery_pto_count(e->r) < 100);
    env_done(e);
}

VTEST(pto_skips_app_before_confirmation)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 100 * MS);
    snd(e, APP, 0, 1 * S);
    VCHECK(vega__quic_recovery_timer(e->r) == VEGA__QUIC_TIME_INF);
    VCHECK_EQ(vega__quic_recovery_on_timeout(e->r, 10 * S), -1);
    /* A Handshake packet in flight: its PTO (no max_ack_delay outside the app space). */
    snd(e, HS, 0, 2 * S);
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 2 * S + 300 * MS);
    VCHECK_EQ(vega__quic_recovery_on_timeout(e->r, 2300 * MS), HS);
    /* Initial and Handshake both in flight: the earlier. */
    snd(e, INI, 0, 2100 * MS);
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 2 * S + 600 * MS);
    /* Once confirmed, the app space counts (its packet is the oldest): 1 s + 2 * 325 ms. */
    vega__quic_recovery_set_handshake_confirmed(e->r);
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 1 * S + 650 * MS);
    vega__quic_recovery_discard_space(e->r, INI);
    vega__quic_recovery_discard_space(e->r, HS);
    VCHECK_EQ(vega__quic_recovery_pto_count(e->r), 0);
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 1 * S + 325 * MS);
    env_done(e);
}

VTEST(client_anti_deadlock_pto)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 100 * MS);
    vega__quic_recovery_set_peer_validated(e->r, false);
    VCHECK(vega__quic_recovery_timer(e->r) == VEGA__QUIC_TIME_INF); /* nothing sent yet */
    snd(e, INI, 0, 1 * S);
    ack(e, INI, 0, 0, 1100 * MS); /* rtt 100 ms, var 50 ms */
    /* Nothing in flight, but the server may be blocked by its amplification limit: the
     * client arms a PTO from now (the ACK) and probes with an Initial. */
    VCHECK_EQ(vega__quic_recovery_ack_eliciting_in_flight(e->r, INI), 0);
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 1100 * MS + 300 * MS);
    VCHECK_EQ(vega__quic_recovery_on_timeout(e->r, 1400 * MS), INI);
    VCHECK_EQ(vega__quic_recovery_pto_count(e->r), 1);
    /* Backed off from the timeout; with Handshake keys the probe is a Handshake packet. */
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 1400 * MS + 600 * MS);
    vega__quic_recovery_set_has_handshake_keys(e->r);
    VCHECK_EQ(vega__quic_recovery_on_timeout(e->r, 2 * S), HS);
    VCHECK_EQ(vega__quic_recovery_pto_count(e->r), 2);
    /* An Initial ACK does not reset the backoff while the peer has not validated us... */
    snd(e, INI, 1, 2100 * MS);
    ack(e, INI, 1, 1, 2200 * MS);
    VCHECK_EQ(vega__quic_recovery_pto_count(e->r), 2);
    /* ...a Handshake ACK proves it did. */
    snd(e, HS, 0, 2300 * MS);
    ack(e, HS, 0, 0, 2400 * MS);
    VCHECK_EQ(vega__quic_recovery_pto_count(e->r), 0);
    VCHECK(vega__quic_recovery_timer(e->r) == VEGA__QUIC_TIME_INF);
    env_done(e);
}

VTEST(server_amplification_blocked)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 100 * MS);
    snd(e, INI, 0, 1 * S);
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 1300 * MS);
    vega__quic_recovery_set_amplification_blocked(e->r, true);
    VCHECK(vega__quic_recovery_timer(e->r) == VEGA__QUIC_TIME_INF);
    vega__quic_recovery_set_amplification_blocked(e->r, false);
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 1300 * MS);
    env_done(e);
}

/* ---- discarding a space ---------------------------------------------------------------------- */

VTEST(discard_space)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 100 * MS);
    for (uint64_t pn = 0; pn < 3; pn++)
        snd(e, INI, pn, 1 * S);
    snd(e, HS, 0, 1 * S);
    VCHECK_EQ(vega__quic_recovery_on_timeout(e->r, 1300 * MS), INI);
    VCHECK_EQ(vega__quic_recovery_cc(e->r)->in_flight, 4800);
    vega__quic_recovery_discard_space(e->r, INI);
    VCHECK_EQ(e->ndiscarded, 3);
    VCHECK(e->toks[INI][0].discarded == 1 && e->toks[INI][2].discarded == 1);
    VCHECK_EQ(stats(e)->lost, 0);
    VCHECK_EQ(vega__quic_recovery_in_flight(e->r, INI), 0);
    VCHECK_EQ(vega__quic_recovery_cc(e->r)->in_flight, 1200);
    VCHECK_EQ(vega__quic_recovery_pto_count(e->r), 0);
    /* The cwnd is untouched: discarding is not a loss. */
    VCHECK_EQ(vega__quic_recovery_cc(e->r)->cwnd, 12000);
    VCHECK_EQ(vega__quic_recovery_timer(e->r), 1300 * MS); /* the Handshake packet's PTO */
    /* The space is gone: no more packets, its ACKs are ignored. */
    VCHECK_EQ(snd_ex(e, INI, 3, 2 * S, 1200, true, false), -EINVAL);
    vega_quic_ack_range rg = {0, 2};
    VCHECK_EQ(ack_ex(e, INI, &rg, 1, 0, false, 0, 0, 2 * S, NULL), 0);
    VCHECK_EQ(e->nacked, 0);
    /* Freeing hands back the rest the same way. */
    env_done(e);
}

VTEST(free_discards_outstanding)
{
    struct env *e = env_new(VEGA__QUIC_CC_CUBIC, 0);
    for (uint64_t pn = 0; pn < 40; pn++)
        snd(e, APP, pn, 1 * S);
    ack(e, APP, 10, 20, 2 * S);
    uint64_t nacked = e->nacked, nlost = e->nlost;
    VCHECK_EQ(nacked, 11);
    VCHECK_EQ(nlost, 10); /* 0..9 */
    struct vega__quic_recovery *r = e->r;
    VCHECK(vega__quic_recovery_check(r));
    vega__quic_recovery_free(r);
    VCHECK_EQ(e->ndiscarded, 19);
    for (int i = 0; i < 40; i++) {
        struct tok *t = &e->toks[APP][i];
        VCHECK_EQ(t->acked + t->lost + t->discarded, 1);
    }
    free(e);
}

/* ---- persistent congestion ------------------------------------------------------------------- */

/* An RTT sample of 100 ms first (pn 0), then pn 1..10 every 200 ms from 1.2 s (1.8 s
 * apart in all, longer than (100 + 4 * 50 + 25) * 3 = 975 ms), then pn 11 at 3.2 s. */
static struct env *pc_setup(void)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    vega__quic_recovery_set_handshake_confirmed(e->r);
    snd(e, APP, 0, 1 * S);
    ack(e, APP, 0, 0, 1100 * MS);
    for (uint64_t pn = 1; pn <= 10; pn++)
        snd(e, APP, pn, 1200 * MS + (pn - 1) * 200 * MS);
    snd(e, APP, 11, 3200 * MS);
    return e;
}

VTEST(persistent_congestion)
{
    struct env *e = pc_setup();
    ack(e, APP, 11, 11, 3300 * MS);
    VCHECK_EQ(e->nlost, 10);
    VCHECK_EQ(stats(e)->persistent_congestion, 1);
    /* The minimum window, then (recovery ended with it, Appendix A.9) slow start on the ACK
     * of 11: 2400 + 1200. */
    VCHECK_EQ(vega__quic_recovery_cc(e->r)->cwnd, 3600);
    VCHECK_EQ(vega__quic_recovery_cc(e->r)->in_flight, 0);
    env_done(e);
}

VTEST(persistent_congestion_broken_by_an_ack)
{
    struct env *e = pc_setup();
    /* 5 acknowledged with 11: the runs 1..4 (600 ms) and 6..10 (800 ms) are too short. */
    vega_quic_ack_range rg[2] = {{11, 11}, {5, 5}};
    VCHECK_EQ(ack_ex(e, APP, rg, 2, 0, false, 0, 0, 3300 * MS, NULL), 0);
    VCHECK_EQ(e->nlost, 9);
    VCHECK_EQ(stats(e)->persistent_congestion, 0);
    VCHECK_EQ(vega__quic_recovery_cc(e->r)->cwnd, 6600); /* (12000 + 1200) / 2 */
    env_done(e);
}

VTEST(persistent_congestion_needs_rtt_sample_first)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    vega__quic_recovery_set_handshake_confirmed(e->r);
    /* Everything sent before the first RTT sample: not considered. */
    for (uint64_t pn = 0; pn <= 10; pn++)
        snd(e, APP, pn, 1 * S + pn * 300 * MS);
    ack(e, APP, 10, 10, 4100 * MS);
    VCHECK_EQ(e->nlost, 10);
    VCHECK_EQ(stats(e)->persistent_congestion, 0);
    VCHECK_EQ(vega__quic_recovery_cc(e->r)->cwnd, 6000);
    env_done(e);
}

/* ---- ECN ------------------------------------------------------------------------------------- */

static struct env *ecn_setup(int n)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    for (int pn = 0; pn < n; pn++)
        VCHECK_EQ(snd_ex(e, APP, (uint64_t)pn, 1 * S, 1200, true, true), 0);
    return e;
}

VTEST(ecn_validation_passes)
{
    struct env *e = ecn_setup(4);
    vega_quic_ack_range rg = {0, 2};
    VCHECK_EQ(ack_ex(e, APP, &rg, 1, 0, true, 3, 0, 1100 * MS, NULL), 0);
    VCHECK(vega__quic_recovery_ecn_ok(e->r));
    rg = (vega_quic_ack_range){3, 3};
    VCHECK_EQ(ack_ex(e, APP, &rg, 1, 0, true, 4, 0, 1200 * MS, NULL), 0);
    VCHECK(vega__quic_recovery_ecn_ok(e->r));
    VCHECK_EQ(stats(e)->ecn_ce, 0);
    VCHECK_EQ(vega__quic_recovery_cc(e->r)->cwnd, 12000 + 4 * 1200);
    env_done(e);
}

VTEST(ecn_fails_without_counts)
{
    struct env *e = ecn_setup(2);
    ack(e, APP, 0, 0, 1100 * MS); /* a plain ACK of an ECT(0) packet */
    VCHECK(!vega__quic_recovery_ecn_ok(e->r));
    env_done(e);
}

VTEST(ecn_fails_on_short_increase)
{
    struct env *e = ecn_setup(3);
    vega_quic_ack_range rg = {0, 2};
    VCHECK_EQ(ack_ex(e, APP, &rg, 1, 0, true, 1, 1, 1100 * MS, NULL), 0);
    VCHECK(!vega__quic_recovery_ecn_ok(e->r));
    /* A failed validation is no congestion signal. */
    VCHECK_EQ(stats(e)->ecn_ce, 0);
    env_done(e);
}

VTEST(ecn_fails_on_decrease)
{
    struct env *e = ecn_setup(4);
    vega_quic_ack_range rg = {0, 1};
    VCHECK_EQ(ack_ex(e, APP, &rg, 1, 0, true, 2, 0, 1100 * MS, NULL), 0);
    VCHECK(vega__quic_recovery_ecn_ok(e->r));
    rg = (vega_quic_ack_range){2, 3};
    VCHECK_EQ(ack_ex(e, APP, &rg, 1, 0, true, 1, 3, 1200 * MS, NULL), 0);
    VCHECK(!vega__quic_recovery_ecn_ok(e->r));
    env_done(e);
}

VTEST(ecn_not_validated_on_reordered_ack)
{
    struct env *e = ecn_setup(4);
    vega_quic_ack_range rg = {3, 3};
    VCHECK_EQ(ack_ex(e, APP, &rg, 1, 0, true, 1, 0, 1100 * MS, NULL), 0);
    /* An older ACK (not advancing the largest) with stale counts is not validated. */
    rg = (vega_quic_ack_range){2, 2};
    VCHECK_EQ(ack_ex(e, APP, &rg, 1, 0, true, 0, 0, 1150 * MS, NULL), 0);
    VCHECK(vega__quic_recovery_ecn_ok(e->r));
    env_done(e);
}

VTEST(ecn_ce_is_congestion)
{
    struct env *e = ecn_setup(3);
    vega_quic_ack_range rg = {0, 2};
    VCHECK_EQ(ack_ex(e, APP, &rg, 1, 0, true, 2, 1, 1100 * MS, NULL), 0);
    VCHECK(vega__quic_recovery_ecn_ok(e->r));
    VCHECK_EQ(stats(e)->ecn_ce, 1);
    struct vega__quic_cc *cc = vega__quic_recovery_cc(e->r);
    /* Halved, and the acknowledged packets (sent before recovery) do not grow it. */
    VCHECK_EQ(cc->cwnd, 6000);
    VCHECK(cc->recovery && cc->recovery_start == 1100 * MS);
    VCHECK_EQ(e->nlost, 0);
    env_done(e);
}

/* ---- spurious losses ------------------------------------------------------------------------- */

VTEST(spurious_loss_counted)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    for (uint64_t pn = 0; pn < 6; pn++)
        snd(e, APP, pn, 1 * S);
    ack(e, APP, 4, 5, 1100 * MS);
    VCHECK_EQ(e->nlost, 3); /* 0, 1, 2: at least 3 below the largest acknowledged */
    ack(e, APP, 0, 5, 1200 * MS);
    VCHECK_EQ(stats(e)->spurious, 3);
    VCHECK_EQ(e->nacked, 3); /* 3, 4, 5: the lost ones come back once only */
    ack(e, APP, 0, 5, 1300 * MS);
    VCHECK_EQ(stats(e)->spurious, 3);
    env_done(e);
}

/* ---- API edges ------------------------------------------------------------------------------- */

static struct vega__quic_recovery *reentrant_r;
static int reentrant_rc[3];
static void reenter_acked(void *ud, int space, struct vega__quic_sent *p)
{
    struct vega__quic_sent q = {
        .pn = 100, .time_sent = p->time_sent, .bytes = 1200, .ack_eliciting = true};
    vega_quic_frame_ack a = {.largest = 0};
    uint64_t werr;
    reentrant_rc[0] = vega__quic_recovery_on_sent(reentrant_r, space, &q);
    reentrant_rc[1] = vega__quic_recovery_on_ack(reentrant_r, space, &a, 3, 0, &werr);
    reentrant_rc[2] = vega__quic_recovery_on_timeout(reentrant_r, UINT64_MAX);
    vega__quic_recovery_discard_space(reentrant_r, space); /* ignored */
}

VTEST(callbacks_cannot_reenter)
{
    struct vega__quic_recovery_cbs cbs = {.on_acked = reenter_acked};
    VCHECK_EQ(vega__quic_recovery_new(&reentrant_r, VEGA__QUIC_CC_NEWRENO, 1200, 0, &cbs, NULL), 0);
    struct vega__quic_sent p = {.pn = 0, .time_sent = 1 * S, .bytes = 1200, .ack_eliciting = true};
    VCHECK_EQ(vega__quic_recovery_on_sent(reentrant_r, APP, &p), 0);
    vega_quic_ack_range rg = {0, 0};
    vega_quic_frame_ack a = {.ranges = &rg, .nranges = 1};
    uint64_t werr;
    VCHECK_EQ(vega__quic_recovery_on_ack(reentrant_r, APP, &a, 3, 2 * S, &werr), 0);
    VCHECK_EQ(reentrant_rc[0], -EINVAL);
    VCHECK_EQ(reentrant_rc[1], -EINVAL);
    VCHECK_EQ(reentrant_rc[2], -1);
    VCHECK_EQ(vega__quic_recovery_outstanding(reentrant_r, APP), 0);
    VCHECK(vega__quic_recovery_check(reentrant_r));
    /* Now outside the callback, the same calls work. */
    p.pn = 1;
    VCHECK_EQ(vega__quic_recovery_on_sent(reentrant_r, APP, &p), 0);
    vega__quic_recovery_free(reentrant_r);
}

VTEST(hand_made_ack_forms)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    for (uint64_t pn = 0; pn < 8; pn++)
        VCHECK_EQ(snd_ex(e, APP, pn, 1 * S, 1200, true, pn < 4), 0);
    /* A ranges list, with ECN counts taken as present because one is non-zero. */
    vega_quic_ack_range rg[2] = {{3, 3}, {0, 1}};
    vega_quic_frame_ack a = {.ranges = rg, .nranges = 2, .ect0 = 3};
    uint64_t werr = 0;
    VCHECK_EQ(vega__quic_recovery_on_ack(e->r, APP, &a, 3, 1100 * MS, &werr), 0);
    VCHECK_EQ(e->nacked, 3);
    VCHECK(vega__quic_recovery_ecn_ok(e->r));
    /* The decoded form filled by hand: largest and first_range. */
    vega_quic_frame_ack b = {.largest = 5, .first_range = 1};
    VCHECK_EQ(vega__quic_recovery_on_ack(e->r, APP, &b, 3, 1200 * MS, &werr), 0);
    VCHECK_EQ(e->nacked, 5);
    /* ...where a first range below 0 is malformed. */
    b = (vega_quic_frame_ack){.largest = 5, .first_range = 6};
    VCHECK_EQ(vega__quic_recovery_on_ack(e->r, APP, &b, 3, 1200 * MS, &werr), VEGA_ERR_PROTO);
    VCHECK_EQ(werr, VEGA_QUIC_FRAME_ENCODING_ERROR);
    /* on_ack_frame takes ACK frames only. */
    vega_quic_frame f = {.type = VEGA_QUIC_FT_PING};
    VCHECK_EQ(vega__quic_recovery_on_ack_frame(e->r, APP, &f, 3, 1200 * MS, &werr), -EINVAL);
    VCHECK_EQ(vega__quic_recovery_on_ack(e->r, 7, &b, 3, 1200 * MS, &werr), -EINVAL);
    env_done(e);
}

VTEST(huge_ack_delay_saturates)
{
    struct env *e = env_new(VEGA__QUIC_CC_NEWRENO, 0);
    snd(e, HS, 0, 1 * S);
    ack(e, HS, 0, 0, 1100 * MS);
    snd(e, HS, 1, 2 * S);
    vega_quic_frame_ack a = {.largest = 1, .ack_delay = (1ull << 62) - 1};
    uint64_t werr;
    VCHECK_EQ(vega__quic_recovery_on_ack(e->r, HS, &a, 20, 2100 * MS, &werr), 0);
    /* The delay would leave less than min_rtt: not subtracted. */
    VCHECK_EQ(vega__quic_recovery_rtt(e->r)->smoothed, 100 * MS);
    env_done(e);
}

/* ---- scale ----------------------------------------------------------------------------------- */

static uint64_t cb_count;
static void count_acked(void *ud, int space, struct vega__quic_sent *p)
{
    cb_count++;
}
static void count_lost(void *ud, int space, struct vega__quic_sent *p, bool discarded)
{
    cb_count++;
}

VTEST(stress_100k_in_flight)
{
    enum {
        N = 100000
    };
    struct vega__quic_recovery *r;
    struct vega__quic_recovery_cbs cbs = {.on_acked = count_acked, .on_lost = count_lost};
    VCHECK_EQ(vega__quic_recovery_new(&r, VEGA__QUIC_CC_CUBIC, 1200, 0, &cbs, NULL), 0);
    vega__quic_recovery_set_handshake_confirmed(r);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t now = 1 * S;
    for (uint64_t pn = 0; pn < N; pn++) {
        struct vega__quic_sent p = {.pn = pn,
                                    .time_sent = now + pn * 1000,
                                    .bytes = 1200,
                                    .ack_eliciting = true,
                                    .in_flight = true};
        VCHECK_EQ(vega__quic_recovery_on_sent(r, APP, &p), 0);
    }
    VCHECK_EQ(vega__quic_recovery_cc(r)->in_flight, (uint64_t)N * 1200);
    VCHECK(vega__quic_recovery_check(r));
    /* ACKs of 64 packets with every 16th missing, each repeating the previous ACK's ranges
     * (up to 8), as a peer does: the misses are lost by packet threshold. */
    now = 2 * S;
    vega_quic_ack_range rg[32];
    uint8_t buf[2048];
    for (uint64_t base = 0; base < N; base += 64) {
        size_t n = 0;
        uint64_t top = VEGA__MIN(base + 63, (uint64_t)N - 1);
        for (uint64_t hi = top; n < 12;) {
            uint64_t lo = hi >= 14 ? hi - 14 : 0;
            rg[n++] = (vega_quic_ack_range){lo, hi};
            if (lo < 2)
                break;
            hi = lo - 2;
        }
        vega_quic_frame f = {.type = VEGA_QUIC_FT_ACK};
        f.u.ack.ranges = rg;
        f.u.ack.nranges = n;
        vega_ssize len = vega_quic_frame_encode(&f, buf, sizeof(buf));
        VCHECK(len > 0);
        vega_quic_frame g;
        uint64_t werr;
        VCHECK_EQ(vega_quic_frame_decode(&g, buf, (size_t)len, &werr), len);
        VCHECK_EQ(vega__quic_recovery_on_ack_frame(r, APP, &g, 3, now, &werr), 0);
        now += 1000;
    }
    /* What is still outstanding goes on time. */
    for (int i = 0; i < 10 && vega__quic_recovery_outstanding(r, APP); i++) {
        uint64_t t = vega__quic_recovery_timer(r);
        VCHECK(t != VEGA__QUIC_TIME_INF);
        vega__quic_recovery_on_timeout(r, VEGA__MAX(t, now));
        now = VEGA__MAX(t, now);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const struct vega__quic_recovery_stats *st = vega__quic_recovery_stats(r);
    VCHECK_EQ(st->sent, N);
    VCHECK_EQ(st->acked + st->lost, N);
    VCHECK_EQ(cb_count, N);
    VCHECK(st->lost > N / 20);
    VCHECK_EQ(vega__quic_recovery_cc(r)->in_flight, 0);
    VCHECK_EQ(vega__quic_recovery_outstanding(r, APP), 0);
    VCHECK(vega__quic_recovery_check(r));
    /* The record gave its memory back; only the scratch space keeps its peak size. */
    size_t peak_scratch = 131072 * sizeof(struct vega__quic_sent);
    VCHECK(vega__quic_recovery_mem(r) < peak_scratch + 64 * 1024);
    vega__quic_recovery_free(r);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("100k packets: %.1f ms\n", ms);
}
