/* SPDX-License-Identifier: MIT */
/* QUIC loss detection (RFC 9002 §6, Appendix A): the sent-packet record per packet number
 * space, ACK processing, packet- and time-threshold loss, the PTO, persistent congestion and
 * ECN validation (RFC 9000 §13.4.2), driving the congestion controller of cc.c. */
#include <errno.h>
#include <string.h>

#include "base.h"
#include "quic_int.h"
#include "recovery.h"

/*
 * The record of one space is a ring of entries in packet number order: on_sent appends, and
 * an entry that is acknowledged or lost stays as a hole until it reaches the front, where it
 * is dropped. Holes cannot pile up in the middle: loss detection runs after every ACK that
 * acknowledges something and declares lost every live packet PACKET_THRESHOLD below the
 * largest acknowledged, so past the first live entry only the two numbers just under the
 * largest acknowledged can be holes. An ACK range is found by binary search and walks only
 * the entries inside it. Holes keep their state so that persistent congestion can see
 * whether a packet between two lost ones was acknowledged.
 */
enum {
    ST_LIVE = 0,
    ST_ACKED,
    ST_LOST
};

struct ent {
    struct vega__quic_sent s;
    uint8_t st;
};

/* Packet numbers declared lost, kept to notice spurious losses (a few recent runs only). */
#define LOST_RUNS 16
struct pn_run {
    uint64_t lo, hi;
};

struct space {
    struct ent *e;
    size_t cap, head, len, live; /* cap: a power of two (or 0) */
    bool has_sent, discarded;
    uint64_t largest_sent;
    int64_t largest_acked; /* -1: none */
    uint64_t loss_time;    /* VEGA__QUIC_TIME_INF: none */
    uint64_t last_ae_time; /* time_of_last_ack_eliciting_packet */
    uint64_t bytes_in_flight, ae_in_flight;
    uint64_t ect0, ect1, ce; /* the peer's ECN counts as last validated */
    struct pn_run lost[LOST_RUNS];
    size_t nlost;
};

struct vega__quic_recovery {
    struct space sp[VEGA__QUIC_NSPACES];
    struct vega__quic_cc cc;
    struct vega__quic_rtt rtt;
    struct vega__quic_recovery_cbs cbs;
    struct vega__quic_recovery_stats stats;
    /* Copies of the packets one call acknowledges (from the bottom) and declares lost (from
     * the top), handed to the callbacks once the state is consistent: as large as the largest
     * ring, so ACK processing never allocates. */
    struct vega__quic_sent *scratch;
    size_t scratch_cap;
    const vega_quic_mem *mem; /* the allocator of this struct, the rings and scratch */
    uint64_t max_ack_delay;
    unsigned pto_count;
    bool confirmed, peer_validated, hs_keys, amp_blocked, ecn_ok;
    bool armed; /* arm_time is set */
    uint64_t arm_time;
    bool in_cb;
};

#define MIN_CAP 16

static inline struct ent *at(const struct space *s, size_t i)
{
    return &s->e[(s->head + i) & (s->cap - 1)];
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    if (a && b > UINT64_MAX / a)
        return UINT64_MAX;
    return a * b;
}

/* First index whose packet number is >= pn (len when none). Packet numbers are mostly dense
 * in the ring (one entry each, in order), so the entry pn - first is tried before a binary
 * search: an ACK then costs two probes, not a dozen cache misses across the ring. */
static size_t lower_bound(const struct space *s, uint64_t pn)
{
    size_t lo = 0, hi = s->len;
    if (hi == 0)
        return 0;
    uint64_t first = at(s, 0)->s.pn;
    if (pn <= first)
        return 0;
    if (pn - first < hi) {
        size_t g = (size_t)(pn - first);
        if (at(s, g)->s.pn == pn && at(s, g - 1)->s.pn < pn)
            return g;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (at(s, mid)->s.pn < pn)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Moves the ring into a new array of cap entries (>= len). */
static int ring_resize(const vega_quic_mem *m, struct space *s, size_t cap)
{
    struct ent *e = vega__quic_malloc(m, cap * sizeof(*e));
    if (!e)
        return -ENOMEM;
    for (size_t i = 0; i < s->len; i++)
        e[i] = *at(s, i);
    vega__quic_free(m, s->e);
    s->e = e;
    s->cap = cap;
    s->head = 0;
    return 0;
}

/* Drops holes from the front, and gives memory back once the ring is mostly empty. */
static void ring_trim(const vega_quic_mem *m, struct space *s)
{
    while (s->len && at(s, 0)->st != ST_LIVE) {
        s->head = (s->head + 1) & (s->cap - 1);
        s->len--;
    }
    if (s->len == 0)
        s->head = 0;
    size_t cap = s->cap;
    while (cap > 4 * MIN_CAP && s->len < cap / 4)
        cap /= 2;
    if (cap != s->cap)
        (void)ring_resize(m, s, cap); /* on failure the larger ring simply stays */
}

static void space_reset(const vega_quic_mem *m, struct space *s)
{
    vega__quic_free(m, s->e);
    *s = (struct space){.largest_acked = -1, .loss_time = VEGA__QUIC_TIME_INF};
}

/* ---- creation and settings ------------------------------------------------------------------- */

int vega__quic_recovery_new(struct vega__quic_recovery **out, vega__quic_cc_algo algo,
                            uint64_t max_datagram, uint64_t initial_rtt,
                            const struct vega__quic_recovery_cbs *cbs, const vega_quic_mem *mem)
{
    *out = NULL;
    struct vega__quic_recovery *r = vega__quic_calloc(mem, 1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->mem = mem;
    for (int i = 0; i < VEGA__QUIC_NSPACES; i++)
        space_reset(mem, &r->sp[i]);
    vega__quic_cc_init(&r->cc, algo, max_datagram);
    vega__quic_rtt_init(&r->rtt, initial_rtt);
    if (cbs)
        r->cbs = *cbs;
    r->max_ack_delay = 25 * VEGA__QUIC_NS_PER_MS;
    r->peer_validated = true;
    r->ecn_ok = true;
    *out = r;
    return 0;
}

void vega__quic_recovery_free(struct vega__quic_recovery *r)
{
    if (!r)
        return;
    r->in_cb = true;
    for (int i = 0; i < VEGA__QUIC_NSPACES; i++) {
        struct space *s = &r->sp[i];
        for (size_t j = 0; j < s->len; j++) {
            struct ent *e = at(s, j);
            if (e->st == ST_LIVE && r->cbs.on_lost)
                r->cbs.on_lost(r->cbs.ud, i, &e->s, true);
        }
        space_reset(r->mem, s);
    }
    vega__quic_free(r->mem, r->scratch);
    vega__quic_free(r->mem, r);
}

void vega__quic_recovery_set_max_ack_delay(struct vega__quic_recovery *r, uint64_t ns)
{
    r->max_ack_delay = ns;
}

void vega__quic_recovery_set_handshake_confirmed(struct vega__quic_recovery *r)
{
    r->confirmed = true;
    r->peer_validated = true;
}

void vega__quic_recovery_set_peer_validated(struct vega__quic_recovery *r, bool validated)
{
    r->peer_validated = validated;
}

void vega__quic_recovery_set_has_handshake_keys(struct vega__quic_recovery *r)
{
    r->hs_keys = true;
}

void vega__quic_recovery_set_amplification_blocked(struct vega__quic_recovery *r, bool blocked)
{
    r->amp_blocked = blocked;
}

/* SetLossDetectionTimer() is computed on demand (vega__quic_recovery_timer); what it needs of
 * "now" is kept here. */
static void arm(struct vega__quic_recovery *r, uint64_t now)
{
    r->armed = true;
    if (now > r->arm_time)
        r->arm_time = now;
}

/* ---- sending --------------------------------------------------------------------------------- */

/* Grows the ring of s (and the scratch with it) to hold need more records. */
static int reserve(struct vega__quic_recovery *r, struct space *s, size_t need)
{
    if (s->len + need <= s->cap)
        return 0;
    size_t cap = s->cap ? s->cap : MIN_CAP;
    while (cap < s->len + need) {
        if (cap >= VEGA__QUIC_MAX_SENT)
            return -ENOMEM;
        cap *= 2;
    }
    if (cap > r->scratch_cap) {
        struct vega__quic_sent *sc = vega__quic_realloc(r->mem, r->scratch, cap * sizeof(*sc));
        if (!sc)
            return -ENOMEM;
        r->scratch = sc;
        r->scratch_cap = cap;
    }
    return ring_resize(r->mem, s, cap);
}

int vega__quic_recovery_reserve(struct vega__quic_recovery *r, int space, size_t n)
{
    if (space < 0 || space >= VEGA__QUIC_NSPACES)
        return -EINVAL;
    return reserve(r, &r->sp[space], n);
}

int vega__quic_recovery_on_sent(struct vega__quic_recovery *r, int space,
                                const struct vega__quic_sent *p)
{
    if (space < 0 || space >= VEGA__QUIC_NSPACES || r->in_cb)
        return -EINVAL;
    struct space *s = &r->sp[space];
    if (s->discarded || p->pn > VEGA_QUIC_MAX_PN || (s->has_sent && p->pn <= s->largest_sent))
        return -EINVAL;
    if (reserve(r, s, 1) < 0)
        return -ENOMEM;
    struct ent *e = at(s, s->len);
    e->s = *p;
    e->st = ST_LIVE;
    if (e->s.ack_eliciting)
        e->s.in_flight = true;
    s->len++;
    s->live++;
    s->has_sent = true;
    s->largest_sent = p->pn;
    r->stats.sent++;
    if (e->s.in_flight) {
        if (e->s.ack_eliciting) {
            s->ae_in_flight++;
            s->last_ae_time = p->time_sent;
        }
        s->bytes_in_flight += e->s.bytes;
        vega__quic_cc_on_sent(&r->cc, e->s.bytes, p->time_sent);
        arm(r, p->time_sent);
    }
    return 0;
}

/* ---- removal, loss and its consequences ------------------------------------------------------ */

/* e leaves the live set of s as st (acknowledged or lost). */
static void take(struct space *s, struct ent *e, uint8_t st)
{
    e->st = st;
    s->live--;
    if (e->s.in_flight) {
        s->bytes_in_flight -= e->s.bytes;
        if (e->s.ack_eliciting)
            s->ae_in_flight--;
    }
}

/* Remembers pn as lost (ascending in practice: a packet is only declared lost with every live
 * packet below it; anything else is simply not tracked). */
static void lost_note(struct space *s, uint64_t pn)
{
    if (s->nlost && pn <= s->lost[s->nlost - 1].hi)
        return;
    if (s->nlost && s->lost[s->nlost - 1].hi + 1 == pn) {
        s->lost[s->nlost - 1].hi = pn;
        return;
    }
    if (s->nlost == LOST_RUNS) {
        memmove(&s->lost[0], &s->lost[1], (LOST_RUNS - 1) * sizeof(s->lost[0]));
        s->nlost--;
    }
    s->lost[s->nlost++] = (struct pn_run){pn, pn};
}

/* Counts (and forgets) the lost packet numbers an ACK range [lo, hi] acknowledges. */
static uint64_t lost_acked(struct space *s, uint64_t lo, uint64_t hi)
{
    uint64_t n = 0;
    for (size_t i = 0; i < s->nlost;) {
        struct pn_run *x = &s->lost[i];
        if (x->hi < lo || x->lo > hi) {
            i++;
            continue;
        }
        uint64_t a = VEGA__MAX(x->lo, lo), b = VEGA__MIN(x->hi, hi);
        n += b - a + 1;
        if (a == x->lo && b == x->hi) {
            memmove(x, x + 1, (s->nlost - i - 1) * sizeof(*x));
            s->nlost--;
            continue;
        }
        if (a == x->lo) {
            x->lo = b + 1;
        } else if (b == x->hi) {
            x->hi = a - 1;
        } else if (s->nlost < LOST_RUNS) {
            /* Split: [x->lo, a) stays, (b, x->hi] follows it. */
            memmove(x + 2, x + 1, (s->nlost - i - 1) * sizeof(*x));
            x[1] = (struct pn_run){b + 1, x->hi};
            x->hi = a - 1;
            s->nlost++;
            i++;
        } else {
            x->lo = b + 1; /* no room: the lower part is forgotten */
        }
        i++;
    }
    return n;
}

/*
 * DetectAndRemoveLostPackets (Appendix A.10) for one space: marks lost packets, copies them
 * to the top of scratch below *top (returning how many), sets the space's loss_time, and says
 * through *pc whether they show persistent congestion (§7.6.2, Appendix A.9: two ack-eliciting
 * packets sent after the first RTT sample, lost with no packet between them acknowledged,
 * sent more than the persistent congestion duration apart).
 */
static size_t detect_lost(struct vega__quic_recovery *r, int space, uint64_t now, size_t top,
                          bool *pc)
{
    struct space *s = &r->sp[space];
    const struct vega__quic_rtt *rtt = &r->rtt;
    size_t n = 0;
    *pc = false;
    s->loss_time = VEGA__QUIC_TIME_INF;
    if (s->largest_acked < 0)
        return 0;
    uint64_t la = (uint64_t)s->largest_acked;
    /* loss_delay = max(kTimeThreshold * max(smoothed_rtt, latest_rtt), kGranularity), with
     * kTimeThreshold = 9/8. */
    uint64_t base = VEGA__MAX(rtt->latest, rtt->smoothed);
    uint64_t loss_delay = base > UINT64_MAX / 9 ? base / 8 * 9 : base * 9 / 8;
    loss_delay = VEGA__MAX(loss_delay, VEGA__QUIC_GRANULARITY_NS);
    /* (smoothed_rtt + max(4 * rttvar, kGranularity) + max_ack_delay) * 3 */
    uint64_t pc_duration =
        sat_mul(vega__quic_rtt_pto(rtt, r->max_ack_delay), VEGA__QUIC_PERSISTENT_CONGESTION);
    bool run = false;
    uint64_t run_start = 0;

    for (size_t i = 0; i < s->len; i++) {
        struct ent *e = at(s, i);
        if (e->s.pn > la)
            break;
        if (e->st == ST_ACKED) {
            run = false;
            continue;
        }
        if (e->st != ST_LIVE)
            continue;
        uint64_t deadline = vega__sat_add(e->s.time_sent, loss_delay);
        if (deadline > now && e->s.pn + VEGA__QUIC_PACKET_THRESHOLD > la) {
            if (deadline < s->loss_time)
                s->loss_time = deadline;
            continue;
        }
        take(s, e, ST_LOST);
        lost_note(s, e->s.pn);
        r->scratch[top - 1 - n++] = e->s;
        if (rtt->has_sample && e->s.ack_eliciting && e->s.time_sent > rtt->first_sample_time) {
            if (!run) {
                run = true;
                run_start = e->s.time_sent;
            } else if (e->s.time_sent > vega__sat_add(run_start, pc_duration)) {
                *pc = true;
            }
        }
    }
    return n;
}

/* OnPacketsLost (Appendix A.10, B.8) for the n packets below top in scratch. */
static void packets_lost(struct vega__quic_recovery *r, size_t top, size_t n, bool pc, uint64_t now)
{
    bool congested = false;
    uint64_t last = 0;
    for (size_t k = 0; k < n; k++) {
        const struct vega__quic_sent *p = &r->scratch[top - 1 - k];
        r->stats.lost++;
        if (!p->in_flight)
            continue;
        vega__quic_cc_on_removed(&r->cc, p->bytes);
        if (p->pmtu_probe)
            continue;
        congested = true;
        last = VEGA__MAX(last, p->time_sent);
    }
    if (congested)
        vega__quic_cc_on_congestion(&r->cc, last, now);
    if (pc) {
        vega__quic_cc_on_persistent_congestion(&r->cc);
        r->stats.persistent_congestion++;
    }
}

static void call_lost(struct vega__quic_recovery *r, int space, size_t top, size_t n,
                      bool discarded)
{
    if (!r->cbs.on_lost)
        return;
    r->in_cb = true;
    /* Declared bottom-up, so walking down from the top gives packet number order. */
    for (size_t k = 0; k < n; k++)
        r->cbs.on_lost(r->cbs.ud, space, &r->scratch[top - 1 - k], discarded);
    r->in_cb = false;
}

/* ---- ACKs ------------------------------------------------------------------------------------ */

/* The ranges of an ACK, decoded (vega_quic_ack_iter) or as a hand-made list. */
struct ranges {
    vega_quic_ack_iter it;
    const vega_quic_ack_range *list;
    size_t i, n;
};

static bool ranges_next(struct ranges *g, vega_quic_ack_range *out)
{
    if (g->list) {
        if (g->i == g->n)
            return false;
        *out = g->list[g->i++];
        return true;
    }
    return vega_quic_ack_iter_next(&g->it, out);
}

/* The ACK Delay field in ns: ack_delay << exponent microseconds (RFC 9000 §19.3), saturating. */
static uint64_t ack_delay_ns(uint64_t v, uint64_t exponent)
{
    if (exponent > 20) /* RFC 9000 §18.2: larger values are invalid */
        exponent = 20;
    if (v > (UINT64_MAX / 1000) >> exponent)
        return UINT64_MAX;
    return (v << exponent) * 1000;
}

/*
 * ECN validation (RFC 9000 §13.4.2.1) and the congestion signal of CE marks (RFC 9002 §7.1,
 * Appendix A.7 ProcessECN). Only an ACK that advances the largest acknowledged is validated:
 * an older one may be reordered and carry older counts.
 */
static void process_ecn(struct vega__quic_recovery *r, struct space *s,
                        const vega_quic_frame_ack *ack, bool has_ecn, uint64_t newly_ect0,
                        uint64_t largest_time_sent, uint64_t now)
{
    if (!has_ecn) {
        /* "If an ACK frame newly acknowledges a packet that the endpoint sent with either the
         * ECT(0) or ECT(1) codepoint set, ECN validation fails if the corresponding ECN counts
         * are not present in the ACK frame." */
        if (newly_ect0)
            r->ecn_ok = false;
        return;
    }
    /* Counts are cumulative: one that goes down is bogus. "ECN validation also fails if the
     * sum of the increase in ECT(0) and ECN-CE counts is less than the number of newly
     * acknowledged packets that were originally sent with an ECT(0) marking." */
    if (ack->ect0 < s->ect0 || ack->ect1 < s->ect1 || ack->ce < s->ce ||
        vega__sat_add(ack->ect0 - s->ect0, ack->ce - s->ce) < newly_ect0) {
        r->ecn_ok = false;
        return;
    }
    uint64_t ce = ack->ce - s->ce;
    s->ect0 = ack->ect0;
    s->ect1 = ack->ect1;
    s->ce = ack->ce;
    if (ce) {
        r->stats.ecn_ce += ce;
        vega__quic_cc_on_congestion(&r->cc, largest_time_sent, now);
    }
}

static int ack_process(struct vega__quic_recovery *r, int space, const vega_quic_frame_ack *ack,
                       bool has_ecn, uint64_t exponent, uint64_t now, uint64_t *wire_err)
{
    uint64_t dummy;
    if (!wire_err)
        wire_err = &dummy;
    if (space < 0 || space >= VEGA__QUIC_NSPACES || r->in_cb || !ack)
        return -EINVAL;
    struct space *s = &r->sp[space];
    if (s->discarded)
        return 0;

    struct ranges g = {0};
    vega_quic_ack_range first;
    uint64_t largest;
    if (ack->ranges && ack->nranges) {
        /* A hand-made list: descending, disjoint, not adjacent. */
        for (size_t i = 0; i < ack->nranges; i++) {
            const vega_quic_ack_range *x = &ack->ranges[i];
            if (x->smallest > x->largest || (i && (x->largest >= ack->ranges[i - 1].smallest ||
                                                   ack->ranges[i - 1].smallest - x->largest < 2))) {
                *wire_err = VEGA_QUIC_FRAME_ENCODING_ERROR;
                return VEGA_ERR_PROTO;
            }
        }
        g.list = ack->ranges;
        g.n = ack->nranges;
        largest = ack->ranges[0].largest;
    } else {
        if (ack->first_range > ack->largest || (!ack->gaps && ack->range_count)) {
            *wire_err = VEGA_QUIC_FRAME_ENCODING_ERROR;
            return VEGA_ERR_PROTO;
        }
        largest = ack->largest;
        if (ack->gaps) {
            vega_quic_ack_iter_init(&g.it, ack);
        } else {
            /* Filled by hand with the first range only (no gaps blob to walk). */
            first = (vega_quic_ack_range){largest - ack->first_range, largest};
            g.list = &first;
            g.n = 1;
        }
    }
    /* RFC 9000 §13.1: "An endpoint SHOULD treat receipt of an acknowledgment for a packet it
     * did not send as a connection error of type PROTOCOL_VIOLATION". */
    if (!s->has_sent || largest > s->largest_sent) {
        *wire_err = VEGA_QUIC_PROTOCOL_VIOLATION;
        return VEGA_ERR_PROTO;
    }

    bool advanced = s->largest_acked < 0 || largest > (uint64_t)s->largest_acked;
    if (advanced)
        s->largest_acked = (int64_t)largest;

    /* DetectAndRemoveAckedPackets: only the entries inside each range are visited. */
    size_t nacked = 0;
    bool ae = false;
    uint64_t newly_ect0 = 0, top_pn = 0, top_time = 0;
    vega_quic_ack_range x;
    while (ranges_next(&g, &x)) {
        r->stats.spurious += lost_acked(s, x.smallest, x.largest);
        for (size_t i = lower_bound(s, x.smallest); i < s->len; i++) {
            struct ent *e = at(s, i);
            if (e->s.pn > x.largest)
                break;
            if (e->st != ST_LIVE)
                continue;
            take(s, e, ST_ACKED);
            /* Its frames are read by on_acked below, after the RTT, congestion and loss work:
             * start fetching them now (an old record is rarely in cache). */
            if (e->s.frames)
                __builtin_prefetch(e->s.frames);
            r->scratch[nacked++] = e->s;
            ae |= e->s.ack_eliciting;
            newly_ect0 += e->s.ecn;
            if (nacked == 1 || e->s.pn > top_pn) {
                top_pn = e->s.pn;
                top_time = e->s.time_sent;
            }
        }
    }
    if (nacked == 0)
        return 0;
    r->stats.acked += nacked;

    /* RFC 9002 §5.1: a sample only when the largest acknowledged is newly acknowledged and
     * something ack-eliciting was. §5.3: Initial ACKs are not delayed, so their ack_delay is
     * ignored. */
    if (top_pn == largest && ae) {
        uint64_t delay =
            space == VEGA__QUIC_SPACE_INITIAL ? 0 : ack_delay_ns(ack->ack_delay, exponent);
        vega__quic_rtt_sample(&r->rtt, now > top_time ? now - top_time : 0, delay, r->max_ack_delay,
                              r->confirmed, now);
    }
    if (r->ecn_ok && advanced)
        process_ecn(r, s, ack, has_ecn, newly_ect0, top_time, now);

    bool pc;
    size_t top = r->scratch_cap;
    size_t nlost = detect_lost(r, space, now, top, &pc);
    VEGA_ASSERT(nacked + nlost <= r->scratch_cap);
    packets_lost(r, top, nlost, pc, now);
    for (size_t k = 0; k < nacked; k++) {
        const struct vega__quic_sent *p = &r->scratch[k];
        if (p->in_flight)
            vega__quic_cc_on_acked(&r->cc, p->bytes, p->time_sent, &r->rtt, now);
    }
    /* A Handshake ACK proves the server validated the client's address (Appendix A.7
     * PeerCompletedAddressValidation); until then the backoff stays (§6.2.2.1). */
    if (space == VEGA__QUIC_SPACE_HANDSHAKE)
        r->peer_validated = true;
    if (r->peer_validated)
        r->pto_count = 0;
    arm(r, now);
    ring_trim(r->mem, s);

    call_lost(r, space, top, nlost, false);
    if (r->cbs.on_acked) {
        r->in_cb = true;
        for (size_t k = 0; k < nacked; k++)
            r->cbs.on_acked(r->cbs.ud, space, &r->scratch[k]);
        r->in_cb = false;
    }
    return 0;
}

int vega__quic_recovery_on_ack(struct vega__quic_recovery *r, int space,
                               const vega_quic_frame_ack *ack, uint64_t ack_delay_exponent,
                               uint64_t now, uint64_t *wire_err)
{
    bool has_ecn = ack && (ack->ect0 || ack->ect1 || ack->ce);
    return ack_process(r, space, ack, has_ecn, ack_delay_exponent, now, wire_err);
}

int vega__quic_recovery_on_ack_frame(struct vega__quic_recovery *r, int space,
                                     const vega_quic_frame *f, uint64_t ack_delay_exponent,
                                     uint64_t now, uint64_t *wire_err)
{
    if (!f || (f->type != VEGA_QUIC_FT_ACK && f->type != VEGA_QUIC_FT_ACK_ECN))
        return -EINVAL;
    return ack_process(r, space, &f->u.ack, f->type == VEGA_QUIC_FT_ACK_ECN, ack_delay_exponent,
                       now, wire_err);
}

/* ---- timer ----------------------------------------------------------------------------------- */

/* GetLossTimeAndSpace (Appendix A.8): the earliest loss_time, or INF. */
static uint64_t loss_time(const struct vega__quic_recovery *r, int *space)
{
    uint64_t t = VEGA__QUIC_TIME_INF;
    for (int i = 0; i < VEGA__QUIC_NSPACES; i++) {
        if (r->sp[i].loss_time < t) {
            t = r->sp[i].loss_time;
            *space = i;
        }
    }
    return t;
}

static uint64_t ae_in_flight(const struct vega__quic_recovery *r)
{
    uint64_t n = 0;
    for (int i = 0; i < VEGA__QUIC_NSPACES; i++)
        n += r->sp[i].ae_in_flight;
    return n;
}

/* GetPtoTimeAndSpace (Appendix A.8), with the backoff 2^pto_count saturating. */
static uint64_t pto_time(const struct vega__quic_recovery *r, int *space)
{
    uint64_t backoff = r->pto_count >= 63 ? UINT64_MAX : 1ull << r->pto_count;
    uint64_t duration = sat_mul(vega__quic_rtt_pto(&r->rtt, 0), backoff);
    if (ae_in_flight(r) == 0) {
        /* The client's anti-deadlock PTO: counted from when the timer was armed. */
        *space = r->hs_keys ? VEGA__QUIC_SPACE_HANDSHAKE : VEGA__QUIC_SPACE_INITIAL;
        return r->armed ? vega__sat_add(r->arm_time, duration) : VEGA__QUIC_TIME_INF;
    }
    uint64_t t = VEGA__QUIC_TIME_INF;
    *space = -1;
    for (int i = 0; i < VEGA__QUIC_NSPACES; i++) {
        const struct space *s = &r->sp[i];
        if (s->ae_in_flight == 0)
            continue;
        if (i == VEGA__QUIC_SPACE_APP) {
            /* "An endpoint MUST NOT set its PTO timer for the Application Data packet number
             * space until the handshake is confirmed" (§6.2.1). */
            if (!r->confirmed)
                break;
            duration = vega__sat_add(duration, sat_mul(r->max_ack_delay, backoff));
        }
        uint64_t ti = vega__sat_add(s->last_ae_time, duration);
        if (ti < t) {
            t = ti;
            *space = i;
        }
    }
    return t;
}

uint64_t vega__quic_recovery_timer(const struct vega__quic_recovery *r)
{
    int space;
    uint64_t t = loss_time(r, &space);
    if (t != VEGA__QUIC_TIME_INF)
        return t;
    if (r->amp_blocked)
        return VEGA__QUIC_TIME_INF; /* a server that could not send a probe anyway */
    if (ae_in_flight(r) == 0 && r->peer_validated)
        return VEGA__QUIC_TIME_INF;
    return pto_time(r, &space);
}

int vega__quic_recovery_on_timeout(struct vega__quic_recovery *r, uint64_t now)
{
    if (r->in_cb)
        return -1;
    uint64_t t = vega__quic_recovery_timer(r);
    if (t == VEGA__QUIC_TIME_INF || now < t)
        return -1; /* early or stale wake-up */
    int space;
    if (loss_time(r, &space) != VEGA__QUIC_TIME_INF) {
        bool pc;
        size_t top = r->scratch_cap;
        size_t n = detect_lost(r, space, now, top, &pc);
        packets_lost(r, top, n, pc, now);
        arm(r, now);
        ring_trim(r->mem, &r->sp[space]);
        call_lost(r, space, top, n, false);
        return -1;
    }
    pto_time(r, &space);
    if (space < 0)
        return -1;
    r->pto_count++;
    r->stats.pto_count_total++;
    arm(r, now);
    return space;
}

/* ---- discarding, getters --------------------------------------------------------------------- */

static void drop_space(struct vega__quic_recovery *r, int space, bool discard)
{
    if (space < 0 || space >= VEGA__QUIC_NSPACES || r->in_cb)
        return;
    struct space *s = &r->sp[space];
    size_t n = 0, top = r->scratch_cap;
    for (size_t i = 0; i < s->len; i++) {
        struct ent *e = at(s, i);
        if (e->st != ST_LIVE)
            continue;
        if (e->s.in_flight)
            vega__quic_cc_on_removed(&r->cc, e->s.bytes);
        r->scratch[top - 1 - n++] = e->s;
    }
    space_reset(r->mem, s);
    s->discarded = discard;
    r->pto_count = 0;
    call_lost(r, space, top, n, true);
}

void vega__quic_recovery_discard_space(struct vega__quic_recovery *r, int space)
{
    drop_space(r, space, true);
}

void vega__quic_recovery_reset_space(struct vega__quic_recovery *r, int space)
{
    drop_space(r, space, false);
}

int64_t vega__quic_recovery_largest_acked(const struct vega__quic_recovery *r, int space)
{
    if (space < 0 || space >= VEGA__QUIC_NSPACES)
        return -1;
    return r->sp[space].largest_acked;
}

uint64_t vega__quic_recovery_in_flight(const struct vega__quic_recovery *r, int space)
{
    if (space < 0 || space >= VEGA__QUIC_NSPACES)
        return 0;
    return r->sp[space].bytes_in_flight;
}

uint64_t vega__quic_recovery_ack_eliciting_in_flight(const struct vega__quic_recovery *r, int space)
{
    if (space < 0 || space >= VEGA__QUIC_NSPACES)
        return 0;
    return r->sp[space].ae_in_flight;
}

size_t vega__quic_recovery_outstanding(const struct vega__quic_recovery *r, int space)
{
    if (space < 0 || space >= VEGA__QUIC_NSPACES)
        return 0;
    return r->sp[space].live;
}

struct vega__quic_cc *vega__quic_recovery_cc(struct vega__quic_recovery *r)
{
    return &r->cc;
}

const struct vega__quic_rtt *vega__quic_recovery_rtt(const struct vega__quic_recovery *r)
{
    return &r->rtt;
}

unsigned vega__quic_recovery_pto_count(const struct vega__quic_recovery *r)
{
    return r->pto_count;
}

const struct vega__quic_recovery_stats *
vega__quic_recovery_stats(const struct vega__quic_recovery *r)
{
    return &r->stats;
}

bool vega__quic_recovery_ecn_ok(const struct vega__quic_recovery *r)
{
    return r->ecn_ok;
}

size_t vega__quic_recovery_mem(const struct vega__quic_recovery *r)
{
    size_t n = sizeof(*r) + r->scratch_cap * sizeof(*r->scratch);
    for (int i = 0; i < VEGA__QUIC_NSPACES; i++)
        n += r->sp[i].cap * sizeof(*r->sp[i].e);
    return n;
}

bool vega__quic_recovery_check(const struct vega__quic_recovery *r)
{
    uint64_t total = 0;
    for (int i = 0; i < VEGA__QUIC_NSPACES; i++) {
        const struct space *s = &r->sp[i];
        uint64_t bytes = 0, ae = 0;
        size_t live = 0;
        if (s->len > s->cap || (s->cap & (s->cap - 1)) || s->cap > r->scratch_cap)
            return false;
        for (size_t j = 0; j < s->len; j++) {
            const struct ent *e = at(s, j);
            if (j && e->s.pn <= at(s, j - 1)->s.pn)
                return false;
            if (!s->has_sent || e->s.pn > s->largest_sent)
                return false;
            if (e->st != ST_LIVE)
                continue;
            live++;
            if (e->s.in_flight) {
                bytes += e->s.bytes;
                ae += e->s.ack_eliciting;
            }
        }
        if (live != s->live || bytes != s->bytes_in_flight || ae != s->ae_in_flight)
            return false;
        /* Holes: none at the front, and at most PACKET_THRESHOLD - 1 past it. */
        if (s->len && at(s, 0)->st != ST_LIVE)
            return false;
        if (s->len - s->live >= VEGA__QUIC_PACKET_THRESHOLD)
            return false;
        if (s->discarded && (s->len || s->has_sent))
            return false;
        total += bytes;
    }
    return total == r->cc.in_flight;
}
