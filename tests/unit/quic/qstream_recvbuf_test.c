/* SPDX-License-Identifier: MIT */
/* The receive buffer (lib/quic/recvbuf.c): in-order and out-of-order reassembly, duplicates and
 * every overlap shape, final size rules (RFC 9000 §4.5), the window limit, reset, reads with
 * the FIN flag, peek/consume across the ring's wrap, and the island cap. */
#include "base.h"
#include "qstream.h"
#include "vtest.h"

/* The reference stream: byte i of every test stream. */
static uint8_t ref(uint64_t i)
{
    return (uint8_t)(i * 131 + (i >> 8) + 7);
}

static uint8_t refbuf[1 << 20];
__attribute__((constructor)) static void fill_ref(void)
{
    for (size_t i = 0; i < sizeof refbuf; i++)
        refbuf[i] = ref(i);
}

/* Inserts [off, off + len) of the reference stream. */
static int put(struct vega__quic_recvbuf *b, uint64_t off, size_t len, bool fin, uint64_t *err)
{
    return vega__quic_recvbuf_insert(b, off, off < sizeof refbuf ? refbuf + off : NULL, len, fin,
                                     err);
}

/* Reads everything readable and checks it against the reference; returns the bytes read. */
static size_t drain(struct vega__quic_recvbuf *b, bool *fin)
{
    uint8_t out[4096];
    size_t total = 0;
    for (;;) {
        uint64_t at = b->read_off;
        size_t n = vega__quic_recvbuf_read(b, out, sizeof out, fin);
        for (size_t i = 0; i < n; i++)
            VCHECK_EQ(out[i], ref(at + i));
        total += n;
        if (n < sizeof out)
            return total;
    }
}

VTEST(in_order)
{
    struct vega__quic_recvbuf b;
    vega__quic_recvbuf_init(&b, 0, NULL);
    uint64_t err = 0;
    for (uint64_t off = 0; off < 100000; off += 1200)
        VCHECK_EQ(put(&b, off, 1200, false, &err), 0);
    VCHECK_EQ(vega__quic_recvbuf_readable(&b), 100800);
    VCHECK_EQ(b.highest, 100800);
    VCHECK_EQ(b.islands.n, 0);
    const uint8_t *p;
    size_t n = vega__quic_recvbuf_peek(&b, &p);
    VCHECK_EQ(n, 100800); /* one piece */
    VCHECK(memcmp(p, refbuf, n) == 0);
    bool fin = true;
    VCHECK_EQ(drain(&b, &fin), 100800);
    VCHECK(!fin);
    VCHECK_EQ(vega__quic_recvbuf_peek(&b, &p), 0);
    vega__quic_recvbuf_fini(&b);
}

VTEST(out_of_order_and_duplicates)
{
    struct vega__quic_recvbuf b;
    vega__quic_recvbuf_init(&b, 1 << 20, NULL);
    uint64_t err = 0;
    for (int i = 9; i >= 1; i--) /* 900 .. 100 first, each twice */
        for (int k = 0; k < 2; k++)
            VCHECK_EQ(put(&b, (uint64_t)i * 100, 100, i == 9, &err), 0);
    VCHECK_EQ(vega__quic_recvbuf_readable(&b), 0);
    VCHECK_EQ(b.islands.n, 1);
    VCHECK(!vega__quic_recvbuf_is_complete(&b));
    VCHECK_EQ(put(&b, 0, 100, false, &err), 0);
    VCHECK_EQ(b.islands.n, 0);
    VCHECK(vega__quic_recvbuf_is_complete(&b));
    VCHECK_EQ(vega__quic_recvbuf_readable(&b), 1000);
    VCHECK_EQ(put(&b, 0, 1000, true, &err), 0); /* a full duplicate with the same FIN */
    VCHECK_EQ(vega__quic_recvbuf_readable(&b), 1000);
    bool fin = false;
    VCHECK_EQ(drain(&b, &fin), 1000);
    VCHECK(fin);
    VCHECK_EQ(put(&b, 500, 100, false, &err), 0); /* below read_off: ignored */
    VCHECK_EQ(vega__quic_recvbuf_readable(&b), 0);
    vega__quic_recvbuf_fini(&b);
}

/* Every (start, end) inside a 64-byte stream against an island at [20, 40), with or without a
 * prefix at [0, 8) already there: readable matches the model, the bytes come out right. */
VTEST(overlaps_every_shape)
{
    for (int prefix = 0; prefix < 2; prefix++)
        for (uint64_t s = 0; s < 64; s++)
            for (uint64_t e = s; e <= 64; e++) {
                struct vega__quic_recvbuf b;
                vega__quic_recvbuf_init(&b, 64, NULL);
                uint64_t err = 0;
                bool have[64] = {0};
                if (prefix) {
                    VCHECK_EQ(put(&b, 0, 8, false, &err), 0);
                    for (int i = 0; i < 8; i++)
                        have[i] = true;
                }
                VCHECK_EQ(put(&b, 20, 20, false, &err), 0);
                VCHECK_EQ(put(&b, s, (size_t)(e - s), false, &err), 0);
                for (int i = 20; i < 40; i++)
                    have[i] = true;
                for (uint64_t i = s; i < e; i++)
                    have[i] = true;
                uint64_t c = 0;
                while (c < 64 && have[c])
                    c++;
                VCHECK_EQ(vega__quic_recvbuf_readable(&b), c);
                bool fin;
                VCHECK_EQ(drain(&b, &fin), c);
                VCHECK_EQ(put(&b, 0, 64, true, &err), 0);
                VCHECK_EQ(drain(&b, &fin), 64 - c);
                VCHECK(fin);
                vega__quic_recvbuf_fini(&b);
            }
}

/* RFC 9000 §4.5: the final size cannot change, no data at or beyond it, not below highest. */
VTEST(final_size_rules)
{
    struct vega__quic_recvbuf b;
    uint64_t err = 0;
    vega__quic_recvbuf_init(&b, 0, NULL);
    VCHECK_EQ(put(&b, 0, 10, true, &err), 0);
    VCHECK_EQ(b.final_size, 10);
    VCHECK_EQ(put(&b, 0, 10, true, &err), 0);  /* the same FIN again */
    VCHECK_EQ(put(&b, 5, 5, false, &err), 0);  /* data up to it */
    VCHECK_EQ(put(&b, 10, 0, false, &err), 0); /* empty, at the final size */
    err = 0;
    VCHECK_EQ(put(&b, 5, 6, false, &err), VEGA_ERR_PROTO); /* beyond */
    VCHECK_EQ(err, VEGA_QUIC_FINAL_SIZE_ERROR);
    err = 0;
    VCHECK_EQ(put(&b, 11, 0, false, &err), VEGA_ERR_PROTO); /* empty, beyond */
    VCHECK_EQ(err, VEGA_QUIC_FINAL_SIZE_ERROR);
    err = 0;
    VCHECK_EQ(put(&b, 0, 12, true, &err), VEGA_ERR_PROTO); /* moves it up */
    VCHECK_EQ(err, VEGA_QUIC_FINAL_SIZE_ERROR);
    err = 0;
    VCHECK_EQ(put(&b, 0, 8, true, &err), VEGA_ERR_PROTO); /* moves it down */
    VCHECK_EQ(err, VEGA_QUIC_FINAL_SIZE_ERROR);
    VCHECK_EQ(b.final_size, 10);
    VCHECK_EQ(b.highest, 10);
    vega__quic_recvbuf_fini(&b);

    vega__quic_recvbuf_init(&b, 0, NULL);
    VCHECK_EQ(put(&b, 10, 10, false, &err), 0);
    err = 0;
    VCHECK_EQ(put(&b, 0, 15, true, &err), VEGA_ERR_PROTO); /* FIN below highest */
    VCHECK_EQ(err, VEGA_QUIC_FINAL_SIZE_ERROR);
    VCHECK_EQ(b.final_size, UINT64_MAX);
    VCHECK_EQ(vega__quic_recvbuf_readable(&b), 0); /* the refused frame stored nothing */
    VCHECK_EQ(put(&b, 20, 0, true, &err), 0);      /* a lone FIN exactly at highest */
    VCHECK_EQ(b.final_size, 20);
    VCHECK(!vega__quic_recvbuf_is_complete(&b));
    VCHECK_EQ(put(&b, 0, 10, false, &err), 0);
    VCHECK(vega__quic_recvbuf_is_complete(&b));
    vega__quic_recvbuf_fini(&b);

    /* Offsets beyond 2^62 - 1. */
    vega__quic_recvbuf_init(&b, 0, NULL);
    err = 0;
    VCHECK_EQ(put(&b, VEGA_QUIC_MAX_VARINT, 1, false, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_FRAME_ENCODING_ERROR);
    err = 0;
    VCHECK_EQ(put(&b, UINT64_MAX, 0, false, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_FRAME_ENCODING_ERROR);
    VCHECK_EQ(put(&b, VEGA_QUIC_MAX_VARINT, 0, true, &err), 0); /* the largest final size */
    VCHECK_EQ(b.final_size, VEGA_QUIC_MAX_VARINT);
    vega__quic_recvbuf_fini(&b);
}

VTEST(flow_control_limit)
{
    struct vega__quic_recvbuf b;
    uint64_t err = 0;
    vega__quic_recvbuf_init(&b, 100, NULL);
    VCHECK_EQ(put(&b, 90, 10, false, &err), 0);
    VCHECK_EQ(put(&b, 100, 0, false, &err), 0);
    VCHECK_EQ(put(&b, 90, 11, false, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_FLOW_CONTROL_ERROR);
    err = 0;
    VCHECK_EQ(put(&b, 101, 0, true, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_FLOW_CONTROL_ERROR);
    VCHECK_EQ(put(&b, 0, 50, false, &err), 0);
    uint8_t out[50];
    bool fin;
    VCHECK_EQ(vega__quic_recvbuf_read(&b, out, sizeof out, &fin), 50);
    VCHECK_EQ(put(&b, 140, 10, false, &err), 0); /* the window moved with read_off */
    VCHECK_EQ(put(&b, 140, 11, false, &err), VEGA_ERR_PROTO);
    VCHECK(b.ring_cap <= 100); /* memory never above limit */
    b.limit = 1000;            /* the caller raised it */
    VCHECK_EQ(put(&b, 140, 11, false, &err), 0);
    vega__quic_recvbuf_fini(&b);
}

VTEST(reset)
{
    struct vega__quic_recvbuf b;
    uint64_t err = 0;
    vega__quic_recvbuf_init(&b, 1000, NULL);
    VCHECK_EQ(put(&b, 0, 100, false, &err), 0);
    VCHECK_EQ(put(&b, 200, 100, false, &err), 0);
    err = 0;
    VCHECK_EQ(vega__quic_recvbuf_reset(&b, 250, &err), VEGA_ERR_PROTO); /* below highest */
    VCHECK_EQ(err, VEGA_QUIC_FINAL_SIZE_ERROR);
    err = 0;
    VCHECK_EQ(vega__quic_recvbuf_reset(&b, 1001, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_FLOW_CONTROL_ERROR);
    VCHECK_EQ(vega__quic_recvbuf_readable(&b), 100); /* nothing changed */
    VCHECK_EQ(vega__quic_recvbuf_reset(&b, 400, &err), 0);
    VCHECK_EQ(b.final_size, 400);
    VCHECK_EQ(vega__quic_recvbuf_readable(&b), 0);
    VCHECK_EQ(vega__quic_recvbuf_reset(&b, 400, &err), 0); /* repeated */
    err = 0;
    VCHECK_EQ(vega__quic_recvbuf_reset(&b, 401, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_FINAL_SIZE_ERROR);
    VCHECK_EQ(put(&b, 300, 100, true, &err), 0); /* late data: checked, dropped */
    VCHECK_EQ(vega__quic_recvbuf_readable(&b), 0);
    err = 0;
    VCHECK_EQ(put(&b, 300, 101, false, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_FINAL_SIZE_ERROR);
    uint8_t out[16];
    bool fin = true;
    VCHECK_EQ(vega__quic_recvbuf_read(&b, out, sizeof out, &fin), 0);
    VCHECK(!fin);
    VCHECK(!vega__quic_recvbuf_is_complete(&b));
    vega__quic_recvbuf_fini(&b);

    /* A reset conflicting with an earlier FIN. */
    vega__quic_recvbuf_init(&b, 0, NULL);
    VCHECK_EQ(put(&b, 0, 10, true, &err), 0);
    err = 0;
    VCHECK_EQ(vega__quic_recvbuf_reset(&b, 11, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_FINAL_SIZE_ERROR);
    VCHECK_EQ(vega__quic_recvbuf_reset(&b, 10, &err), 0);
    vega__quic_recvbuf_fini(&b);
}

VTEST(read_reports_fin)
{
    struct vega__quic_recvbuf b;
    uint64_t err = 0;
    vega__quic_recvbuf_init(&b, 0, NULL);
    VCHECK_EQ(put(&b, 0, 100, true, &err), 0);
    uint8_t out[100];
    bool fin = true;
    VCHECK_EQ(vega__quic_recvbuf_read(&b, out, 60, &fin), 60);
    VCHECK(!fin);
    VCHECK_EQ(vega__quic_recvbuf_read(&b, out, sizeof out, &fin), 40);
    VCHECK(fin);
    VCHECK(memcmp(out, refbuf + 60, 40) == 0);
    VCHECK_EQ(vega__quic_recvbuf_read(&b, out, sizeof out, &fin), 0);
    VCHECK(fin);
    vega__quic_recvbuf_fini(&b);

    /* Data read first, then a lone FIN: a read of 0 bytes reports it. */
    vega__quic_recvbuf_init(&b, 0, NULL);
    VCHECK_EQ(put(&b, 0, 50, false, &err), 0);
    VCHECK_EQ(vega__quic_recvbuf_read(&b, out, sizeof out, &fin), 50);
    VCHECK(!fin);
    VCHECK_EQ(vega__quic_recvbuf_read(&b, out, sizeof out, &fin), 0);
    VCHECK(!fin);
    VCHECK_EQ(put(&b, 50, 0, true, &err), 0);
    VCHECK_EQ(vega__quic_recvbuf_read(&b, out, sizeof out, &fin), 0);
    VCHECK(fin);
    vega__quic_recvbuf_fini(&b);

    /* An empty stream. */
    vega__quic_recvbuf_init(&b, 0, NULL);
    VCHECK_EQ(put(&b, 0, 0, true, &err), 0);
    VCHECK(vega__quic_recvbuf_is_complete(&b));
    VCHECK_EQ(vega__quic_recvbuf_read(&b, out, sizeof out, &fin), 0);
    VCHECK(fin);
    vega__quic_recvbuf_fini(&b);
}

/* A ring of exactly limit bytes, read in odd amounts so data wraps: peek stops at the wrap,
 * every byte comes out right. */
VTEST(peek_consume_wraps)
{
    struct vega__quic_recvbuf b;
    uint64_t err = 0;
    const uint64_t limit = 5000;
    vega__quic_recvbuf_init(&b, limit, NULL);
    uint64_t rng = 7, sent = 0, wraps = 0;
    while (b.read_off < 300000) {
        /* Send up to the window in random pieces, some out of order. */
        uint64_t room = b.read_off + limit - sent;
        uint64_t want = vega__rand_below(&rng, 1500);
        size_t len = (size_t)VEGA__MIN(room, want);
        if (len > 0 && vega__rand_below(&rng, 4) == 0 && room >= 2 * (uint64_t)len) {
            VCHECK_EQ(put(&b, sent + len, len, false, &err), 0); /* the later piece first */
            VCHECK_EQ(put(&b, sent, len, false, &err), 0);
            sent += 2 * len;
        } else {
            VCHECK_EQ(put(&b, sent, len, false, &err), 0);
            sent += len;
        }
        VCHECK_EQ(vega__quic_recvbuf_readable(&b), sent - b.read_off);
        const uint8_t *p;
        size_t n = vega__quic_recvbuf_peek(&b, &p);
        if (n > 0) {
            if (n < sent - b.read_off)
                wraps++;
            size_t want_read = (size_t)vega__rand_below(&rng, 2000) + 1;
            size_t take = VEGA__MIN(n, want_read);
            for (size_t i = 0; i < take; i++)
                VCHECK_EQ(p[i], ref(b.read_off + i));
            vega__quic_recvbuf_consume(&b, take);
        }
    }
    VCHECK(wraps > 0);
    VCHECK_EQ(b.ring_cap, limit);
    vega__quic_recvbuf_fini(&b);
}

/* Tiny frames with holes between them: the island count is capped, what touches an island or
 * the contiguous data still goes in, and filling the holes makes everything readable. */
VTEST(island_cap)
{
    struct vega__quic_recvbuf b;
    uint64_t err = 0;
    vega__quic_recvbuf_init(&b, 1 << 20, NULL);
    uint64_t k;
    for (k = 0; k < VEGA__QUIC_RECVBUF_MAX_ISLANDS; k++)
        VCHECK_EQ(put(&b, 2 * k + 1, 1, false, &err), 0);
    VCHECK_EQ(b.islands.n, VEGA__QUIC_RECVBUF_MAX_ISLANDS);
    err = 0;
    VCHECK_EQ(put(&b, 2 * k + 1, 1, false, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_FLOW_CONTROL_ERROR);
    VCHECK_EQ(put(&b, 2 * k, 1, false, &err), 0);     /* adjacent to the last island */
    VCHECK_EQ(put(&b, 2 * k - 1, 3, false, &err), 0); /* overlapping it */
    VCHECK_EQ(b.islands.n, VEGA__QUIC_RECVBUF_MAX_ISLANDS);
    VCHECK_EQ(put(&b, 0, 1, false, &err), 0); /* at the contiguous end: absorbs one */
    VCHECK_EQ(b.islands.n, VEGA__QUIC_RECVBUF_MAX_ISLANDS - 1);
    VCHECK_EQ(vega__quic_recvbuf_readable(&b), 2);
    for (k = 1; k < VEGA__QUIC_RECVBUF_MAX_ISLANDS; k++)
        VCHECK_EQ(put(&b, 2 * k, 1, false, &err), 0);
    VCHECK_EQ(b.islands.n, 0);
    VCHECK_EQ(vega__quic_recvbuf_readable(&b), 2 * VEGA__QUIC_RECVBUF_MAX_ISLANDS + 2);
    bool fin;
    VCHECK_EQ(drain(&b, &fin), 2 * VEGA__QUIC_RECVBUF_MAX_ISLANDS + 2);
    vega__quic_recvbuf_fini(&b);
}

/* CRYPTO-style use: a limit, every piece arriving in reverse. */
VTEST(reverse_under_limit)
{
    struct vega__quic_recvbuf b;
    uint64_t err = 0;
    vega__quic_recvbuf_init(&b, 128 * 1024, NULL);
    for (int i = 127; i >= 0; i--)
        VCHECK_EQ(put(&b, (uint64_t)i * 1024, 1024, false, &err), 0);
    VCHECK_EQ(vega__quic_recvbuf_readable(&b), 128 * 1024);
    bool fin;
    VCHECK_EQ(drain(&b, &fin), 128 * 1024);
    vega__quic_recvbuf_fini(&b);
}

VTEST(trim_frees_when_empty)
{
    struct vega__quic_recvbuf b;
    uint64_t err = 0;
    vega__quic_recvbuf_init(&b, 0, NULL);
    VCHECK_EQ(put(&b, 0, 5000, false, &err), 0);
    VCHECK_EQ(put(&b, 6000, 10, false, &err), 0);
    vega__quic_recvbuf_trim(&b); /* data held: kept */
    VCHECK(b.ring != NULL);
    uint8_t out[5000];
    bool fin;
    VCHECK_EQ(vega__quic_recvbuf_read(&b, out, sizeof out, &fin), 5000);
    vega__quic_recvbuf_trim(&b); /* an island above: kept */
    VCHECK(b.ring != NULL);
    VCHECK_EQ(put(&b, 5000, 1000, false, &err), 0);
    VCHECK_EQ(drain(&b, &fin), 1010);
    vega__quic_recvbuf_trim(&b);
    VCHECK(b.ring == NULL && b.ring_cap == 0);
    VCHECK_EQ(put(&b, 6010, 100, true, &err), 0);
    VCHECK_EQ(drain(&b, &fin), 100);
    VCHECK(fin);
    vega__quic_recvbuf_fini(&b);
}

/* The ring grows while its bytes wrap around its end: both ways of putting them back in order
 * (the wrapped head follows the old end, or the old tail moves to the new end), then every byte
 * reads back right, before and after the new data. */
VTEST(grows_while_wrapped)
{
    for (int t = 0; t < 2; t++) {
        struct vega__quic_recvbuf b;
        uint64_t err = 0;
        bool fin = false;
        vega__quic_recvbuf_init(&b, 0, NULL);
        VCHECK_EQ(put(&b, 0, 4096, false, &err), 0);
        VCHECK_EQ(b.ring_cap, 4096);
        /* Read 1000 (t 0: a short wrap) or 3000 (t 1: a long one), then fill the ring again. */
        size_t first = t == 0 ? 1000 : 3000;
        uint8_t out[4096];
        VCHECK_EQ(vega__quic_recvbuf_read(&b, out, first, &fin), first);
        VCHECK_EQ(put(&b, 4096, first, false, &err), 0);
        VCHECK_EQ(b.ring_cap, 4096); /* full, and wrapped */
        /* A frame past the end grows it, out of order so an island is kept too. */
        VCHECK_EQ(put(&b, 4096 + first + 500, 700, false, &err), 0);
        VCHECK_EQ(b.ring_cap, 8192);
        VCHECK_EQ(put(&b, 4096 + first, 500, false, &err), 0);
        VCHECK_EQ(drain(&b, &fin), 4096 + 1200);
        VCHECK_EQ(b.read_off, 4096 + first + 1200);
        vega__quic_recvbuf_fini(&b);
    }
}
