/* SPDX-License-Identifier: MIT */
/* libFuzzer target for QUIC loss detection and congestion control (lib/quic/recovery.c,
 * rtt.c, cc.c). The bytes drive a sequence of sent packets, ACKs (built from ranges, encoded
 * and decoded as on the wire, with or without ECN counts, sometimes naming packets never
 * sent), timer expiries, discarded spaces, setting changes and pacing calls on a monotonic
 * fake clock. After every step: the internal invariants hold, the bytes in flight equal the
 * sum of what the harness recorded for the packets not yet handed back, and the timer is sane.
 * Every packet's frames must come back exactly once (a second time is a use after free for
 * ASan; a missing one is caught after vega__quic_recovery_free). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/quic_wire.h>

#include "base.h"
#include "fuzz_target.h"
#include "recovery.h"

#define MAX_STEPS 1024
#define MAX_SENT  4096
#define MAGIC     0x5e17u
#define MS        VEGA__QUIC_NS_PER_MS

struct tok {
    uint32_t magic;
    int space;
    uint64_t pn;
    uint32_t bytes;
    bool in_flight;
};

struct harness {
    uint64_t live, in_flight;
};

struct in {
    const uint8_t *p, *end;
};

static uint8_t u8(struct in *in)
{
    return in->p < in->end ? *in->p++ : 0;
}

static void release(struct harness *h, int space, const struct vega__quic_sent *p)
{
    struct tok *t = p->frames;
    if (!t || t->magic != MAGIC || t->space != space || t->pn != p->pn || t->bytes != p->bytes)
        abort();
    if (t->in_flight) {
        if (h->in_flight < t->bytes)
            abort();
        h->in_flight -= t->bytes;
    }
    if (h->live == 0)
        abort();
    h->live--;
    t->magic = 0;
    free(t);
}

static void on_acked(void *ud, int space, struct vega__quic_sent *p)
{
    release(ud, space, p);
}

static void on_lost(void *ud, int space, struct vega__quic_sent *p, bool discarded)
{
    release(ud, space, p);
}

/* An ACK of ranges below (or, rarely, above) the largest sent, through encode and decode. */
static void do_ack(struct vega__quic_recovery *r, struct in *in, uint64_t now, const bool *has_sent,
                   const uint64_t *largest_sent, const bool *discarded)
{
    int space = u8(in) % VEGA__QUIC_NSPACES;
    uint8_t b = u8(in), shape = u8(in);
    uint64_t top = has_sent[space] ? largest_sent[space] : 0;
    uint64_t largest;
    if (b == 0xff)
        largest = top + 1 + u8(in); /* never sent */
    else
        largest = top - VEGA__MIN(top, (uint64_t)(b % 16));
    vega_quic_ack_range rg[8];
    size_t n = 0;
    uint64_t hi = largest;
    for (size_t i = 0; i < 1 + (size_t)(shape % 8); i++) {
        uint8_t x = u8(in);
        uint64_t len = x & 15, gap = x >> 4;
        uint64_t lo = hi - VEGA__MIN(hi, len);
        rg[n++] = (vega_quic_ack_range){lo, hi};
        if (lo < gap + 2)
            break;
        hi = lo - gap - 2;
    }
    vega_quic_frame f = {.type = (shape & 0x80) ? VEGA_QUIC_FT_ACK_ECN : VEGA_QUIC_FT_ACK};
    f.u.ack.ranges = rg;
    f.u.ack.nranges = n;
    f.u.ack.ack_delay = (uint64_t)u8(in) << (shape >> 4 & 7);
    f.u.ack.ect0 = u8(in);
    f.u.ack.ce = (shape & 0x40) ? u8(in) % 4 : 0;
    uint8_t buf[256];
    vega_ssize len = vega_quic_frame_encode(&f, buf, sizeof(buf));
    if (len <= 0)
        abort();
    vega_quic_frame g;
    uint64_t werr = 0;
    if (vega_quic_frame_decode(&g, buf, (size_t)len, &werr) != len)
        abort();
    werr = 0;
    int rc = vega__quic_recovery_on_ack_frame(r, space, &g, 3, now, &werr);
    bool unsent = !has_sent[space] || largest > largest_sent[space];
    if (discarded[space]) {
        if (rc != 0) /* a discarded space's ACKs are ignored */
            abort();
    } else if (unsent) {
        if (rc != VEGA_ERR_PROTO || werr != VEGA_QUIC_PROTOCOL_VIOLATION)
            abort();
    } else if (rc != 0) {
        abort();
    }
}

static void check(struct vega__quic_recovery *r, const struct harness *h, uint64_t now)
{
    struct vega__quic_cc *cc = vega__quic_recovery_cc(r);
    if (!vega__quic_recovery_check(r) || cc->in_flight != h->in_flight)
        abort();
    uint64_t sum = 0;
    for (int s = 0; s < VEGA__QUIC_NSPACES; s++)
        sum += vega__quic_recovery_in_flight(r, s);
    if (sum != cc->in_flight)
        abort();
    if (cc->cwnd < 2 * cc->max_datagram || cc->cwnd > VEGA__QUIC_CC_MAX_CWND)
        abort();
    if (vega__quic_cc_available(cc) != (cc->cwnd > cc->in_flight ? cc->cwnd - cc->in_flight : 0))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    struct in in = {data, data + size};
    struct harness h = {0};
    struct vega__quic_recovery_cbs cbs = {.ud = &h, .on_acked = on_acked, .on_lost = on_lost};
    struct vega__quic_recovery *r;
    uint8_t cfg = u8(&in);
    if (vega__quic_recovery_new(&r, (cfg & 1) ? VEGA__QUIC_CC_CUBIC : VEGA__QUIC_CC_NEWRENO,
                                1200 + (uint64_t)(cfg >> 5) * 100,
                                (uint64_t)(cfg >> 1 & 3) * 40 * MS, &cbs, NULL) < 0)
        return 0;
    if (cfg & 8)
        vega__quic_recovery_set_peer_validated(r, false);
    uint64_t now = 1000 * MS, next_pn[VEGA__QUIC_NSPACES] = {0};
    uint64_t largest_sent[VEGA__QUIC_NSPACES] = {0};
    bool has_sent[VEGA__QUIC_NSPACES] = {0}, discarded[VEGA__QUIC_NSPACES] = {0};
    unsigned sent = 0;

    for (int step = 0; step < MAX_STEPS && in.p < in.end; step++) {
        uint8_t op = u8(&in);
        now += (uint64_t)(op >> 4) * ((op & 8) ? 10 * MS : 250 * 1000);
        switch (op & 7) {
        case 0:
        case 1: {
            if (sent >= MAX_SENT)
                break;
            int space = u8(&in) % VEGA__QUIC_NSPACES;
            uint8_t fl = u8(&in);
            uint64_t pn = next_pn[space] + (fl & 3 ? 0 : u8(&in) % 4); /* skips some */
            struct vega__quic_sent p = {.pn = pn,
                                        .time_sent = now,
                                        .bytes = 1 + u8(&in) * 6u,
                                        .ack_eliciting = fl & 4,
                                        .in_flight = fl & 8,
                                        .ecn = fl & 16,
                                        .probe = fl & 32};
            struct tok *t = malloc(sizeof(*t));
            if (!t)
                break;
            bool inf = p.in_flight || p.ack_eliciting;
            *t = (struct tok){MAGIC, space, pn, p.bytes, inf};
            p.frames = t;
            int rc = vega__quic_recovery_on_sent(r, space, &p);
            if (rc == 0) {
                h.live++;
                h.in_flight += inf ? p.bytes : 0;
                next_pn[space] = pn + 1;
                largest_sent[space] = pn;
                has_sent[space] = true;
                sent++;
            } else {
                if (!discarded[space] && rc != -ENOMEM)
                    abort();
                free(t); /* the caller keeps its frames */
            }
            break;
        }
        case 2:
        case 3:
            do_ack(r, &in, now, has_sent, largest_sent, discarded);
            break;
        case 4: {
            uint64_t t = vega__quic_recovery_timer(r);
            if (t != VEGA__QUIC_TIME_INF && t > now && (op & 8) && t - now < 3600000 * MS)
                now = t;
            int sp = vega__quic_recovery_on_timeout(r, now);
            if (sp < -1 || sp >= VEGA__QUIC_NSPACES)
                abort();
            if (t == VEGA__QUIC_TIME_INF && sp != -1)
                abort();
            break;
        }
        case 5: {
            uint8_t x = u8(&in);
            int space = x == 0xff ? VEGA__QUIC_SPACE_APP : x % 2;
            vega__quic_recovery_discard_space(r, space);
            discarded[space] = true;
            break;
        }
        case 6: {
            uint8_t x = u8(&in);
            switch (x % 7) {
            case 0:
                vega__quic_recovery_set_handshake_confirmed(r);
                break;
            case 1:
                vega__quic_recovery_set_peer_validated(r, x & 8);
                break;
            case 2:
                vega__quic_recovery_set_has_handshake_keys(r);
                break;
            case 3:
                vega__quic_recovery_cc(r)->app_limited = x & 8;
                break;
            case 4:
                vega__quic_recovery_set_amplification_blocked(r, x & 8);
                break;
            case 5:
                vega__quic_recovery_set_max_ack_delay(r, (uint64_t)(x >> 3) * MS);
                break;
            default:
                break;
            }
            break;
        }
        case 7: {
            struct vega__quic_cc *cc = vega__quic_recovery_cc(r);
            const struct vega__quic_rtt *rtt = vega__quic_recovery_rtt(r);
            uint64_t t = vega__quic_cc_pace(cc, (uint64_t)u8(&in) * 300, rtt, now);
            if (t < now || t - now > rtt->smoothed)
                abort();
            break;
        }
        }
        check(r, &h, now);
    }
    vega__quic_recovery_free(r);
    if (h.live != 0 || h.in_flight != 0)
        abort();
    return 0;
}
