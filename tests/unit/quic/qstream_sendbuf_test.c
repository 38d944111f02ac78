/* SPDX-License-Identifier: MIT */
/* The send buffer (lib/quic/sendbuf.c): write/next/on_sent/on_acked/on_lost sequences, the FIN
 * alone, lost and acknowledged, retransmission order, flow control blocking, the limit, and the
 * ring wrapping under random traffic checked byte for byte. */
#include "base.h"
#include "qstream.h"
#include "vtest.h"

static uint8_t ref(uint64_t i)
{
    return (uint8_t)(i * 131 + (i >> 8) + 7);
}

/* Writes n reference bytes continuing the stream; returns what was taken. */
static vega_ssize wr(struct vega__quic_sendbuf *b, size_t n)
{
    uint8_t buf[65536];
    VCHECK(n <= sizeof buf);
    for (size_t i = 0; i < n; i++)
        buf[i] = ref(b->written + i);
    return vega__quic_sendbuf_write(b, buf, n);
}

struct chunk {
    uint64_t off;
    size_t len;
    bool fin, blocked;
};

/* next() with the bytes it names checked; false when nothing is handed out. */
static bool nx(struct vega__quic_sendbuf *b, uint64_t max_off, size_t max_len, struct chunk *c)
{
    if (!vega__quic_sendbuf_next(b, max_off, max_len, &c->off, &c->len, &c->fin, &c->blocked))
        return false;
    uint8_t out[65536];
    VCHECK(c->len <= sizeof out);
    vega__quic_sendbuf_copy(b, c->off, c->len, out);
    for (size_t i = 0; i < c->len; i++)
        VCHECK_EQ(out[i], ref(c->off + i));
    return true;
}

#define NEXT_IS(b, max_off, max_len, o, l, f)                                                      \
    do {                                                                                           \
        struct chunk c_;                                                                           \
        VCHECK(nx(b, max_off, max_len, &c_));                                                      \
        VCHECK_EQ(c_.off, o);                                                                      \
        VCHECK_EQ(c_.len, l);                                                                      \
        VCHECK_EQ(c_.fin, f);                                                                      \
    } while (0)

VTEST(write_send_ack)
{
    struct vega__quic_sendbuf b;
    vega__quic_sendbuf_init(&b, 0, NULL);
    struct chunk c;
    VCHECK(!vega__quic_sendbuf_has_pending(&b));
    VCHECK(!nx(&b, UINT64_MAX, 1200, &c));
    VCHECK(!c.blocked);
    VCHECK_EQ(wr(&b, 3000), 3000);
    VCHECK(vega__quic_sendbuf_has_pending(&b));
    NEXT_IS(&b, UINT64_MAX, 1200, 0, 1200, false);
    NEXT_IS(&b, UINT64_MAX, 1200, 0, 1200, false); /* nothing moves until on_sent */
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 1200, false), 0);
    NEXT_IS(&b, UINT64_MAX, 1200, 1200, 1200, false);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 1200, 1200, false), 0);
    NEXT_IS(&b, UINT64_MAX, 1200, 2400, 600, false);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 2400, 600, false), 0);
    VCHECK(!vega__quic_sendbuf_has_pending(&b));
    /* Acks out of order: the base moves only when contiguous. */
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 1200, 1200, false), 0);
    VCHECK_EQ(b.acked_base, 0);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 2400, 600, false), 0);
    VCHECK_EQ(b.acked_base, 0);
    VCHECK_EQ(b.acked.n, 1);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 0, 1200, false), 0);
    VCHECK_EQ(b.acked_base, 3000);
    VCHECK_EQ(b.acked.n, 0);
    VCHECK(!vega__quic_sendbuf_is_acked(&b)); /* no FIN yet */
    vega__quic_sendbuf_finish(&b);
    VCHECK_EQ(wr(&b, 10), 0); /* after finish: nothing taken */
    VCHECK(vega__quic_sendbuf_has_pending(&b));
    NEXT_IS(&b, UINT64_MAX, 1200, 3000, 0, true);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 3000, 0, true), 0);
    VCHECK(!vega__quic_sendbuf_has_pending(&b));
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 3000, 0, true), 0);
    VCHECK(vega__quic_sendbuf_is_acked(&b));
    vega__quic_sendbuf_fini(&b);
}

VTEST(fin_only_stream)
{
    struct vega__quic_sendbuf b;
    vega__quic_sendbuf_init(&b, 0, NULL);
    vega__quic_sendbuf_finish(&b);
    NEXT_IS(&b, 0, 0, 0, 0, true); /* a lone FIN needs neither credit nor room */
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 0, true), 0);
    VCHECK(!vega__quic_sendbuf_has_pending(&b));
    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, 0, 0, true), 0);
    VCHECK(b.fin_lost);
    NEXT_IS(&b, 0, 1200, 0, 0, true);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 0, true), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 0, 0, true), 0);
    VCHECK(vega__quic_sendbuf_is_acked(&b));
    /* A late loss of the first copy changes nothing. */
    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, 0, 0, true), 0);
    VCHECK(!vega__quic_sendbuf_has_pending(&b));
    VCHECK(vega__quic_sendbuf_is_acked(&b));
    vega__quic_sendbuf_fini(&b);
}

VTEST(fin_lost_with_data_and_alone)
{
    struct vega__quic_sendbuf b;
    vega__quic_sendbuf_init(&b, 0, NULL);
    VCHECK_EQ(wr(&b, 100), 100);
    vega__quic_sendbuf_finish(&b);
    NEXT_IS(&b, UINT64_MAX, 1200, 0, 100, true);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 100, true), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, 0, 100, true), 0);
    NEXT_IS(&b, 0, 60, 0, 60, false); /* retransmission ignores max_off; FIN on the last piece */
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 60, false), 0);
    NEXT_IS(&b, 0, 60, 60, 40, true);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 60, 40, true), 0);
    VCHECK(!vega__quic_sendbuf_has_pending(&b));
    /* The data is acknowledged, the FIN's packet lost: the FIN goes alone. */
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 0, 60, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 0, 100, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, 60, 40, true), 0);
    VCHECK_EQ(b.lost.n, 0);
    NEXT_IS(&b, UINT64_MAX, 1200, 100, 0, true);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 100, 0, true), 0);
    VCHECK(!vega__quic_sendbuf_is_acked(&b));
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 100, 0, true), 0);
    VCHECK(vega__quic_sendbuf_is_acked(&b));
    vega__quic_sendbuf_fini(&b);

    /* The FIN acknowledged first, the data later. */
    vega__quic_sendbuf_init(&b, 0, NULL);
    VCHECK_EQ(wr(&b, 100), 100);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 100, false), 0);
    vega__quic_sendbuf_finish(&b);
    NEXT_IS(&b, UINT64_MAX, 1200, 100, 0, true);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 100, 0, true), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 100, 0, true), 0);
    VCHECK(!vega__quic_sendbuf_is_acked(&b));
    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, 0, 100, false), 0);
    NEXT_IS(&b, UINT64_MAX, 1200, 0, 100, false); /* the FIN is done: not resent */
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 100, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 0, 100, false), 0);
    VCHECK(vega__quic_sendbuf_is_acked(&b));
    vega__quic_sendbuf_fini(&b);
}

VTEST(retransmission_order_and_acked_parts)
{
    struct vega__quic_sendbuf b;
    vega__quic_sendbuf_init(&b, 0, NULL);
    VCHECK_EQ(wr(&b, 1000), 1000);
    for (uint64_t o = 0; o < 500; o += 100)
        VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, o, 100, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, 300, 100, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, 100, 100, false), 0);
    NEXT_IS(&b, UINT64_MAX, 1200, 100, 100, false); /* lowest lost first */
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 100, 100, false), 0);
    NEXT_IS(&b, UINT64_MAX, 1200, 300, 100, false);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 300, 50, false), 0); /* partly resent */
    NEXT_IS(&b, UINT64_MAX, 1200, 350, 50, false);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 350, 50, false), 0);
    NEXT_IS(&b, UINT64_MAX, 1200, 500, 500, false); /* then fresh data */
    vega__quic_sendbuf_fini(&b);

    /* A packet with [0, 300) is lost after a probe carrying [100, 200) was acknowledged: only
     * the unacknowledged parts come back. */
    vega__quic_sendbuf_init(&b, 0, NULL);
    VCHECK_EQ(wr(&b, 300), 300);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 300, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 100, 100, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 100, 100, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, 0, 300, false), 0);
    VCHECK_EQ(b.lost.n, 2);
    NEXT_IS(&b, UINT64_MAX, 1200, 0, 100, false);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 100, false), 0);
    NEXT_IS(&b, UINT64_MAX, 1200, 200, 100, false);
    /* A spurious loss: [200, 300) is acknowledged after all and is not sent again. */
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 200, 100, false), 0);
    struct chunk c;
    VCHECK(!nx(&b, UINT64_MAX, 1200, &c));
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 0, 100, false), 0);
    VCHECK_EQ(b.acked_base, 300);
    vega__quic_sendbuf_fini(&b);
}

VTEST(flow_control_blocks_fresh_data)
{
    struct vega__quic_sendbuf b;
    vega__quic_sendbuf_init(&b, 0, NULL);
    VCHECK_EQ(wr(&b, 1000), 1000);
    vega__quic_sendbuf_finish(&b);
    NEXT_IS(&b, 500, 1200, 0, 500, false);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 500, false), 0);
    struct chunk c;
    VCHECK(!nx(&b, 500, 1200, &c));
    VCHECK(c.blocked);
    VCHECK(vega__quic_sendbuf_has_pending(&b));
    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, 0, 500, false), 0);
    NEXT_IS(&b, 500, 1200, 0, 500, false); /* lost data is not blocked */
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 500, false), 0);
    NEXT_IS(&b, 1000, 1200, 500, 500, true); /* credit arrives: the rest with the FIN */
    VCHECK(!c.blocked || true);
    bool blocked = true;
    uint64_t off;
    size_t len;
    bool fin;
    VCHECK(vega__quic_sendbuf_next(&b, 1000, 1200, &off, &len, &fin, &blocked));
    VCHECK(!blocked);
    VCHECK(vega__quic_sendbuf_next(&b, 700, 1200, &off, &len, &fin, NULL)); /* NULL is fine */
    VCHECK_EQ(len, 200);
    VCHECK(!fin);
    vega__quic_sendbuf_fini(&b);
}

VTEST(limit_and_room)
{
    struct vega__quic_sendbuf b;
    vega__quic_sendbuf_init(&b, 1000, NULL);
    VCHECK_EQ(vega__quic_sendbuf_room(&b), 1000);
    VCHECK_EQ(wr(&b, 1500), 1000);
    VCHECK_EQ(vega__quic_sendbuf_room(&b), 0);
    VCHECK_EQ(wr(&b, 1), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 1000, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 300, 100, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_room(&b), 0); /* not contiguous from the base */
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 0, 300, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_room(&b), 400);
    VCHECK_EQ(wr(&b, 1000), 400);
    VCHECK(b.cap <= 1024); /* the ring never outgrows the power of two covering the limit */
    vega__quic_sendbuf_fini(&b);

    vega__quic_sendbuf_init(&b, 0, NULL);
    VCHECK_EQ(vega__quic_sendbuf_room(&b), UINT64_MAX);
    vega__quic_sendbuf_fini(&b);
}

/* Random writes, sends, acks (in any order) and losses against a ring small enough to wrap
 * many times; every byte handed out is the byte written at that offset. */
VTEST(ring_wraps_random)
{
    uint64_t rng = 99;
    for (int round = 0; round < 20; round++) {
        struct vega__quic_sendbuf b;
        vega__quic_sendbuf_init(&b, 5000 + vega__rand_below(&rng, 5000), NULL);
        struct chunk inflight[64];
        size_t ninf = 0;
        uint64_t total = 100000 + vega__rand_below(&rng, 100000);
        for (int step = 0; step < 1000000; step++) {
            uint32_t op = vega__rand_below(&rng, 10);
            if (op < 3 && b.written < total) {
                uint32_t want = vega__rand_below(&rng, 3000);
                vega_ssize n = wr(&b, VEGA__MIN(want, (uint32_t)(total - b.written)));
                VCHECK(n >= 0);
                if (b.written == total)
                    vega__quic_sendbuf_finish(&b);
            } else if (op < 6 && ninf < 64) {
                struct chunk c;
                uint32_t ml = vega__rand_below(&rng, 1500) + 1;
                if (nx(&b, UINT64_MAX, ml, &c)) {
                    const uint8_t *p;
                    size_t n1 = vega__quic_sendbuf_peek(&b, c.off, c.len, &p);
                    for (size_t i = 0; i < n1; i++)
                        VCHECK_EQ(p[i], ref(c.off + i));
                    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, c.off, c.len, c.fin), 0);
                    inflight[ninf++] = c;
                }
            } else if (ninf > 0) {
                size_t k = vega__rand_below(&rng, (uint32_t)ninf);
                struct chunk c = inflight[k];
                inflight[k] = inflight[--ninf];
                if (op < 9)
                    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, c.off, c.len, c.fin), 0);
                else
                    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, c.off, c.len, c.fin), 0);
            }
            VCHECK(b.written - b.acked_base <= b.limit);
            if (vega__quic_sendbuf_is_acked(&b))
                break;
        }
        VCHECK(vega__quic_sendbuf_is_acked(&b));
        VCHECK_EQ(b.acked_base, total);
        vega__quic_sendbuf_fini(&b);
    }
}

/* Offsets near 2^62: the stream cannot grow past the largest final size. */
VTEST(offsets_62_bit)
{
    struct vega__quic_sendbuf b;
    vega__quic_sendbuf_init(&b, 0, NULL);
    const uint64_t base = VEGA_QUIC_MAX_VARINT - 100;
    b.acked_base = b.next_off = b.written = base; /* as if that much had gone by */
    VCHECK_EQ(wr(&b, 150), 100);
    VCHECK_EQ(b.written, VEGA_QUIC_MAX_VARINT);
    VCHECK_EQ(wr(&b, 1), 0);
    vega__quic_sendbuf_finish(&b);
    NEXT_IS(&b, UINT64_MAX, 1200, base, 100, true);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, base, 100, true), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, base, 100, true), 0);
    NEXT_IS(&b, UINT64_MAX, 1200, base, 100, true);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, base, 100, true), 0);
    VCHECK(vega__quic_sendbuf_is_acked(&b));
    vega__quic_sendbuf_fini(&b);
}

VTEST(trim_frees_when_all_acked)
{
    struct vega__quic_sendbuf b;
    vega__quic_sendbuf_init(&b, 0, NULL);
    VCHECK_EQ(wr(&b, 5000), 5000);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 5000, false), 0);
    vega__quic_sendbuf_trim(&b); /* unacknowledged bytes: kept */
    VCHECK(b.data != NULL);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 0, 5000, false), 0);
    vega__quic_sendbuf_trim(&b);
    VCHECK(b.data == NULL && b.cap == 0);
    VCHECK_EQ(wr(&b, 100), 100);
    NEXT_IS(&b, UINT64_MAX, 1200, 5000, 100, false);
    vega__quic_sendbuf_fini(&b);
}

/* The ring grows while its bytes wrap around its end, both ways of putting them back in order
 * (a short wrapped part follows the old end, or the old tail moves to the new end): every held
 * byte copies out right afterwards. */
VTEST(ring_grows_while_wrapped)
{
    for (int t = 0; t < 2; t++) {
        struct vega__quic_sendbuf b;
        vega__quic_sendbuf_init(&b, 0, NULL);
        VCHECK_EQ(wr(&b, 4096), 4096);
        VCHECK_EQ(b.cap, 4096);
        size_t acked = t == 0 ? 3000 : 1000; /* t 0: 3000 wrap, long; t 1: 1000, short */
        NEXT_IS(&b, UINT64_MAX, acked, 0, acked, false);
        VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, acked, false), 0);
        VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 0, acked, false), 0);
        VCHECK_EQ(wr(&b, acked), (vega_ssize)acked);
        VCHECK_EQ(b.cap, 4096); /* full, and wrapped */
        VCHECK_EQ(wr(&b, 100), 100);
        VCHECK_EQ(b.cap, 8192);
        struct chunk c;
        uint64_t off = acked;
        while (off < b.written) {
            VCHECK(nx(&b, UINT64_MAX, 1000, &c)); /* checks every byte */
            VCHECK_EQ(c.off, off);
            VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, c.off, c.len, false), 0);
            off += c.len;
        }
        VCHECK_EQ(off, 4096 + acked + 100);
        vega__quic_sendbuf_fini(&b);
    }
}

/* ---- referenced (zero-copy) writes -------------------------------------------------------- */

/* The whole reference stream in one array, so a referenced write can point into it. */
static uint8_t refbuf[1 << 20];
__attribute__((constructor)) static void fill_ref(void)
{
    for (size_t i = 0; i < sizeof refbuf; i++)
        refbuf[i] = ref(i);
}

/* Every release seen: the pointer and length must be a taken write's, each exactly once. */
struct rel_log {
    const void *data[4096];
    size_t len[4096];
    size_t n;
};

static void on_release(void *user, const void *data, size_t len)
{
    struct rel_log *l = user;
    VCHECK(l->n < 4096);
    l->data[l->n] = data;
    l->len[l->n] = len;
    l->n++;
}

/* The end of the newest referenced piece (0 when none is held). */
static uint64_t seg_end_last(const struct vega__quic_sendbuf *b)
{
    return b->nsegs ? b->segs[(b->sfirst + b->nsegs - 1) & (b->scap - 1)].end : 0;
}

/* Writes n reference bytes continuing the stream by reference; returns what was taken. */
static vega_ssize wr_ref(struct vega__quic_sendbuf *b, size_t n, struct rel_log *l)
{
    VCHECK(b->written + n <= sizeof refbuf);
    return vega__quic_sendbuf_write_ref(b, refbuf + b->written, n, on_release, l);
}

VTEST(ref_write_send_ack_release)
{
    struct vega__quic_sendbuf b;
    struct rel_log l = {0};
    vega__quic_sendbuf_init(&b, 0, NULL);
    VCHECK_EQ(wr(&b, 100), 100);           /* copied [0, 100) */
    VCHECK_EQ(wr_ref(&b, 1000, &l), 1000); /* referenced [100, 1100) */
    VCHECK_EQ(wr(&b, 50), 50);             /* copied [1100, 1150) */
    VCHECK_EQ(wr_ref(&b, 10, &l), 10);     /* referenced [1150, 1160) */
    VCHECK_EQ(b.nsegs, 2);
    VCHECK_EQ(b.rtail - b.rbase, 150); /* only copies take ring space */
    /* A packet's worth straddles copied and referenced bytes; peek stops where they change. */
    NEXT_IS(&b, UINT64_MAX, 1200, 0, 1160, false);
    const uint8_t *p;
    VCHECK_EQ(vega__quic_sendbuf_peek(&b, 0, 1160, &p), 100);
    VCHECK_EQ(vega__quic_sendbuf_peek(&b, 100, 1060, &p), 1000);
    VCHECK(p == refbuf + 100); /* zero-copy: the application's own bytes */
    VCHECK_EQ(vega__quic_sendbuf_peek(&b, 1100, 60, &p), 50);
    VCHECK_EQ(vega__quic_sendbuf_peek(&b, 1150, 10, &p), 10);
    VCHECK(p == refbuf + 1150);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 600, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 600, 560, false), 0);
    /* Acknowledged in pieces, out of order: a referenced piece goes back once it is all
     * acknowledged below, not before. */
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 600, 560, false), 0);
    VCHECK_EQ(l.n, 0);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 0, 300, false), 0);
    VCHECK_EQ(l.n, 0);
    VCHECK_EQ(b.acked_base, 300);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 300, 300, false), 0);
    VCHECK_EQ(b.acked_base, 1160);
    VCHECK_EQ(l.n, 2);
    VCHECK(l.data[0] == refbuf + 100 && l.len[0] == 1000);
    VCHECK(l.data[1] == refbuf + 1150 && l.len[1] == 10);
    VCHECK_EQ(b.nsegs, 0);
    VCHECK_EQ(b.rtail - b.rbase, 0);
    vega__quic_sendbuf_fini(&b);
    VCHECK_EQ(l.n, 2); /* nothing twice */
}

/* A referenced write takes what fits under the limit, and refuses (0) once
 * VEGA__QUIC_SENDBUF_MAX_REFS pieces are held; release covers the count taken. */
VTEST(ref_write_limit_and_piece_cap)
{
    struct vega__quic_sendbuf b;
    struct rel_log l = {0};
    vega__quic_sendbuf_init(&b, 1000, NULL);
    VCHECK_EQ(wr(&b, 300), 300);
    VCHECK_EQ(wr_ref(&b, 900, &l), 700);
    VCHECK_EQ(wr_ref(&b, 1, &l), 0);
    VCHECK_EQ(vega__quic_sendbuf_room(&b), 0);
    vega__quic_sendbuf_fini(&b); /* releases what is still held */
    VCHECK_EQ(l.n, 1);
    VCHECK(l.data[0] == refbuf + 300 && l.len[0] == 700);

    l.n = 0;
    vega__quic_sendbuf_init(&b, 0, NULL);
    for (int i = 0; i < VEGA__QUIC_SENDBUF_MAX_REFS; i++)
        VCHECK_EQ(wr_ref(&b, 1, &l), 1);
    VCHECK_EQ(wr_ref(&b, 1, &l), 0);
    VCHECK_EQ(wr(&b, 5), 5); /* copies still go */
    VCHECK_EQ(b.nsegs, VEGA__QUIC_SENDBUF_MAX_REFS);
    NEXT_IS(&b, UINT64_MAX, 1200, 0, VEGA__QUIC_SENDBUF_MAX_REFS + 5, false);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, VEGA__QUIC_SENDBUF_MAX_REFS + 5, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 0, 10, false), 0);
    VCHECK_EQ(l.n, 10);
    VCHECK_EQ(wr_ref(&b, 1, &l), 1); /* room for pieces again */
    vega__quic_sendbuf_fini(&b);
    VCHECK_EQ(l.n, VEGA__QUIC_SENDBUF_MAX_REFS + 1);
}

/* Dropping (a reset stream) releases every referenced piece at once and frees the ring; later
 * acknowledgements and losses only move offsets. */
VTEST(ref_drop_releases_everything)
{
    struct vega__quic_sendbuf b;
    struct rel_log l = {0};
    vega__quic_sendbuf_init(&b, 0, NULL);
    VCHECK_EQ(wr_ref(&b, 2000, &l), 2000);
    VCHECK_EQ(wr(&b, 100), 100);
    VCHECK_EQ(wr_ref(&b, 3000, &l), 3000);
    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, 0, 1200, false), 0);
    vega__quic_sendbuf_drop(&b);
    VCHECK_EQ(l.n, 2);
    VCHECK(b.data == NULL && b.nsegs == 0);
    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, 0, 600, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 600, 600, false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, 0, 600, false), 0);
    VCHECK_EQ(b.acked_base, 1200);
    vega__quic_sendbuf_fini(&b);
    VCHECK_EQ(l.n, 2);
}

/* Random traffic mixing copied and referenced writes, out-of-order acknowledgements and
 * losses: every byte handed out is right (peek and copy), every referenced piece is released
 * exactly once, only after everything up to its end was acknowledged. */
VTEST(ref_mixed_random)
{
    uint64_t rng = 4242;
    for (int round = 0; round < 20; round++) {
        struct vega__quic_sendbuf b;
        struct rel_log l = {0};
        vega__quic_sendbuf_init(&b, 5000 + vega__rand_below(&rng, 20000), NULL);
        struct chunk inflight[64];
        size_t ninf = 0, refs = 0;
        uint64_t total = 100000 + vega__rand_below(&rng, 300000);
        for (int step = 0; step < 1000000; step++) {
            uint32_t op = vega__rand_below(&rng, 10);
            if (op < 3 && b.written < total) {
                uint32_t want = vega__rand_below(&rng, 3000) + 1;
                size_t n = VEGA__MIN(want, (uint32_t)(total - b.written));
                vega_ssize got = vega__rand_below(&rng, 2) ? wr(&b, n) : wr_ref(&b, n, &l);
                VCHECK(got >= 0);
                if (got > 0 && b.nsegs > 0 && b.written == (uint64_t)seg_end_last(&b))
                    refs++;
                if (b.written == total)
                    vega__quic_sendbuf_finish(&b);
            } else if (op < 6 && ninf < 64) {
                struct chunk c;
                uint32_t ml = vega__rand_below(&rng, 1500) + 1;
                if (nx(&b, UINT64_MAX, ml, &c)) { /* copy checks every byte */
                    size_t at = 0;
                    while (at < c.len) {
                        const uint8_t *p;
                        size_t n = vega__quic_sendbuf_peek(&b, c.off + at, c.len - at, &p);
                        VCHECK(n > 0);
                        for (size_t i = 0; i < n; i++)
                            VCHECK_EQ(p[i], ref(c.off + at + i));
                        at += n;
                    }
                    VCHECK_EQ(vega__quic_sendbuf_on_sent(&b, c.off, c.len, c.fin), 0);
                    inflight[ninf++] = c;
                }
            } else if (ninf > 0) {
                size_t k = vega__rand_below(&rng, (uint32_t)ninf);
                struct chunk c = inflight[k];
                inflight[k] = inflight[--ninf];
                if (op < 9)
                    VCHECK_EQ(vega__quic_sendbuf_on_acked(&b, c.off, c.len, c.fin), 0);
                else
                    VCHECK_EQ(vega__quic_sendbuf_on_lost(&b, c.off, c.len, c.fin), 0);
            }
            /* Released pieces all lie below acked_base; held ones do not. */
            for (size_t i = 0; i < l.n; i++)
                VCHECK((uint64_t)((const uint8_t *)l.data[i] - refbuf) + l.len[i] <= b.acked_base);
            if (vega__quic_sendbuf_is_acked(&b))
                break;
        }
        VCHECK(vega__quic_sendbuf_is_acked(&b));
        VCHECK_EQ(l.n, refs);
        vega__quic_sendbuf_fini(&b);
        VCHECK_EQ(l.n, refs);
        /* Released pieces are distinct and, sorted, tile the referenced bytes. */
        for (size_t i = 1; i < l.n; i++)
            VCHECK(l.data[i] > l.data[i - 1]);
    }
}

/* Sends and acknowledges everything written so far up to end (in one piece). */
static void send_ack_to(struct vega__quic_sendbuf *b, uint64_t end)
{
    uint64_t from = b->next_off;
    VCHECK_EQ(vega__quic_sendbuf_on_sent(b, from, (size_t)(end - from), false), 0);
    VCHECK_EQ(vega__quic_sendbuf_on_acked(b, b->acked_base, (size_t)(end - b->acked_base), false),
              0);
}

/* A connection's send pool (vega_quic_conn_set_send_budget): what two buffers hold, copied or
 * referenced, is counted exactly as they write, are acknowledged and are dropped; a budget cuts
 * writes to what it has left, but a buffer under the floor may always fill up to it. */
VTEST(pool_counts_and_limits)
{
    struct vega__quic_sendpool p = {.budget = 64 * 1024};
    struct vega__quic_sendbuf a, b;
    struct rel_log l = {0};
    vega__quic_sendbuf_init(&a, 1 << 20, NULL);
    vega__quic_sendbuf_init(&b, 1 << 20, NULL);
    a.pool = b.pool = &p;
    VCHECK_EQ(wr(&a, 40000), 40000);
    VCHECK_EQ(wr_ref(&a, 10000, &l), 10000);
    VCHECK_EQ(p.held, 50000);
    VCHECK_EQ(vega__quic_sendbuf_room(&a), 64 * 1024 - 50000);
    VCHECK_EQ(wr(&a, 65536), 64 * 1024 - 50000); /* the budget, not the 1 MiB limit, cuts it */
    VCHECK_EQ(p.held, 64 * 1024);
    VCHECK_EQ(vega__quic_sendbuf_room(&a), 0);
    /* b holds nothing: the floor is its own whatever a holds */
    VCHECK_EQ(vega__quic_sendbuf_room(&b), VEGA_QUIC_SEND_BUDGET_FLOOR);
    VCHECK_EQ(wr(&b, 5000), 5000);
    VCHECK_EQ(wr(&b, 65536), VEGA_QUIC_SEND_BUDGET_FLOOR - 5000);
    VCHECK_EQ(wr(&b, 1), 0);
    VCHECK_EQ(p.held, 64 * 1024 + VEGA_QUIC_SEND_BUDGET_FLOOR);
    /* acknowledgements give back exactly what they free, the referenced piece with them */
    p.freed = false;
    send_ack_to(&a, 45000);
    VCHECK(p.freed);
    VCHECK_EQ(p.held, 64 * 1024 + VEGA_QUIC_SEND_BUDGET_FLOOR - 45000);
    VCHECK_EQ(l.n, 0); /* the piece ends at 50000 */
    send_ack_to(&a, 50000);
    VCHECK_EQ(l.n, 1);
    VCHECK_EQ(p.held, 64 * 1024 + VEGA_QUIC_SEND_BUDGET_FLOOR - 50000);
    /* a dropped buffer gives back all it holds, once (fini drops again) */
    vega__quic_sendbuf_drop(&b);
    VCHECK_EQ(p.held, 64 * 1024 - 50000);
    vega__quic_sendbuf_fini(&b);
    VCHECK_EQ(p.held, 64 * 1024 - 50000);
    vega__quic_sendbuf_fini(&a);
    VCHECK_EQ(p.held, 0);
    /* no budget: the pool counts but cuts nothing */
    p = (struct vega__quic_sendpool){0};
    vega__quic_sendbuf_init(&a, 1 << 20, NULL);
    a.pool = &p;
    VCHECK_EQ(wr(&a, 65536), 65536);
    VCHECK_EQ(p.held, 65536);
    vega__quic_sendbuf_fini(&a);
    VCHECK_EQ(p.held, 0);
}

/* Under a budget a ring that once held much gives its memory back when it holds little: empty,
 * it is freed; holding a quarter or less, it moves to a smaller power of two, bytes intact. */
VTEST(pool_ring_shrinks)
{
    struct vega__quic_sendpool p = {.budget = 1 << 20};
    struct vega__quic_sendbuf b;
    vega__quic_sendbuf_init(&b, 1 << 20, NULL);
    b.pool = &p;
    for (int i = 0; i < 4; i++)
        VCHECK_EQ(wr(&b, 65536), 65536);
    VCHECK_EQ(b.cap, 256 * 1024);
    send_ack_to(&b, 200000); /* 62144 held: under a quarter */
    VCHECK_EQ(b.cap, 128 * 1024);
    VCHECK_EQ(wr(&b, 1000), 1000);
    NEXT_IS(&b, UINT64_MAX, 70000, 200000, 63144, false); /* what is held, read back right */
    for (uint64_t off = 200000; off < b.written; off += 50000) {
        uint8_t out[50000];
        size_t n = (size_t)VEGA__MIN(50000, b.written - off);
        vega__quic_sendbuf_copy(&b, off, n, out);
        for (size_t i = 0; i < n; i++)
            VCHECK_EQ(out[i], ref(off + i));
    }
    send_ack_to(&b, b.written);
    VCHECK(b.data == NULL && b.cap == 0); /* empty: freed */
    VCHECK_EQ(p.held, 0);
    VCHECK_EQ(wr(&b, 3000), 3000); /* and it starts again */
    NEXT_IS(&b, UINT64_MAX, 60000, 263144, 3000, false);
    vega__quic_sendbuf_fini(&b);
    /* without a budget the ring keeps its size (steady bulk writes do not allocate) */
    p.budget = 0;
    vega__quic_sendbuf_init(&b, 1 << 20, NULL);
    b.pool = &p;
    for (int i = 0; i < 4; i++)
        VCHECK_EQ(wr(&b, 65536), 65536);
    send_ack_to(&b, b.written);
    VCHECK_EQ(b.cap, 256 * 1024);
    vega__quic_sendbuf_fini(&b);
}
