/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the QUIC receive buffer (lib/quic/recvbuf.c), against a model: the
 * input is a window size and a list of operations (STREAM frames cut at random offsets and
 * lengths from one reference byte stream, some beyond the window, past 2^62 or with a FIN
 * that conflicts, reads, peek/consume, RESET_STREAM). Every byte read must equal the reference
 * and every call must fail exactly when the model (RFC 9000 §4.5, §4.1) says, with its wire
 * error, and leave the buffer unchanged when it fails. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "fuzz_target.h"
#include "qstream.h"

#define STREAM_MAX (1u << 17) /* offsets the model tracks (frames stay below) */
#define MAX_FRAME  4096

static uint8_t ref(uint64_t i)
{
    return (uint8_t)(i * 131 + (i >> 8) + 7);
}

static uint8_t refbuf[STREAM_MAX + MAX_FRAME];
static uint8_t have[2 * STREAM_MAX]; /* also covers a reset's final size past the frames */

struct model {
    uint64_t read_off, highest, final_size, limit, contig;
    bool reset;
};

static void check(bool ok)
{
    if (!ok)
        abort();
}

/* The wire error the model expects for a frame ending at end (fin) or a reset (fin). */
static uint64_t expect_err(const struct model *m, uint64_t off, uint64_t len, bool fin)
{
    if (off > VEGA_QUIC_MAX_VARINT || len > VEGA_QUIC_MAX_VARINT - off)
        return VEGA_QUIC_FRAME_ENCODING_ERROR;
    uint64_t end = off + len;
    if (m->final_size != UINT64_MAX) {
        if (end > m->final_size || (fin && end != m->final_size))
            return VEGA_QUIC_FINAL_SIZE_ERROR;
    } else if (fin && end < m->highest) {
        return VEGA_QUIC_FINAL_SIZE_ERROR;
    }
    if (!m->reset && end > m->read_off + m->limit)
        return VEGA_QUIC_FLOW_CONTROL_ERROR;
    return 0;
}

/* Islands above contig in the model, and whether [start, end) would start a new one. */
static bool island_cap_applies(const struct model *m, uint64_t start, uint64_t end)
{
    if (start <= m->contig)
        return false;
    size_t n = 0;
    for (uint64_t i = m->contig + 1; i < m->highest; i++)
        if (have[i] && !have[i - 1])
            n++;
    if (n < VEGA__QUIC_RECVBUF_MAX_ISLANDS)
        return false;
    for (uint64_t i = start ? start - 1 : 0; i <= end && i < m->highest; i++)
        if (have[i])
            return false; /* touches one */
    return true;
}

static void advance_contig(struct model *m)
{
    if (m->reset)
        return;
    while (m->contig < sizeof have && have[m->contig])
        m->contig++;
}

static void check_state(const struct vega__quic_recvbuf *b, const struct model *m)
{
    check(b->read_off == m->read_off && b->highest == m->highest && b->final_size == m->final_size);
    check(vega__quic_recvbuf_readable(b) == (m->reset ? 0 : m->contig - m->read_off));
    check(vega__quic_recvbuf_is_complete(b) ==
          (!m->reset && m->final_size != UINT64_MAX && m->contig == m->final_size));
    check(b->ring_cap <= m->limit);
}

static void do_insert(struct vega__quic_recvbuf *b, struct model *m, uint64_t off, uint64_t len,
                      bool fin)
{
    uint64_t want = expect_err(m, off, len, fin), err = 0;
    const uint8_t *data = off < STREAM_MAX ? refbuf + off : NULL;
    if (!data)
        len = VEGA__MIN(len, (uint64_t)SIZE_MAX); /* only reached for frames that fail */
    int rc = vega__quic_recvbuf_insert(b, off, data, (size_t)len, fin, &err);
    if (want == 0 && rc == VEGA_ERR_PROTO && err == VEGA_QUIC_FLOW_CONTROL_ERROR)
        check(island_cap_applies(m, VEGA__MAX(off, m->contig), off + len));
    else if (want)
        check(rc == VEGA_ERR_PROTO && err == want);
    else
        check(rc == 0);
    if (rc != 0)
        return;
    check(data != NULL || len == 0 || m->reset);
    if (!m->reset)
        for (uint64_t i = VEGA__MAX(off, m->read_off); i < off + len; i++)
            have[i] = 1;
    if (fin)
        m->final_size = off + len;
    m->highest = VEGA__MAX(m->highest, off + len);
    advance_contig(m);
}

static void do_read(struct vega__quic_recvbuf *b, struct model *m, size_t cap)
{
    static uint8_t out[STREAM_MAX];
    bool fin = false;
    uint64_t before = m->read_off;
    size_t n = vega__quic_recvbuf_read(b, out, cap, &fin);
    uint64_t avail = m->reset ? 0 : m->contig - m->read_off;
    check(n == VEGA__MIN((uint64_t)cap, avail));
    for (size_t i = 0; i < n; i++)
        check(out[i] == ref(before + i));
    m->read_off += n;
    check(fin == (!m->reset && m->read_off == m->final_size));
}

static void do_peek(struct vega__quic_recvbuf *b, struct model *m, size_t take)
{
    const uint8_t *p;
    size_t n = vega__quic_recvbuf_peek(b, &p);
    uint64_t avail = m->reset ? 0 : m->contig - m->read_off;
    check(n <= avail && (n > 0) == (avail > 0));
    for (size_t i = 0; i < n; i++)
        check(p[i] == ref(m->read_off + i));
    take = VEGA__MIN(take, n);
    vega__quic_recvbuf_consume(b, take);
    m->read_off += take;
}

static void do_reset(struct vega__quic_recvbuf *b, struct model *m, uint64_t fs)
{
    uint64_t want = expect_err(m, fs, 0, true), err = 0;
    int rc = vega__quic_recvbuf_reset(b, fs, &err);
    if (want) {
        check(rc == VEGA_ERR_PROTO && err == want);
        return;
    }
    check(rc == 0);
    m->final_size = fs;
    m->highest = fs;
    m->reset = true;
    m->contig = m->read_off;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (refbuf[1] == 0)
        for (size_t i = 0; i < sizeof refbuf; i++)
            refbuf[i] = ref(i);
    memset(have, 0, sizeof have);
    struct model m = {0, 0, UINT64_MAX, 0, 0, false};
    m.limit = data[0] < 32 ? (uint64_t)data[0] + 1 : (uint64_t)data[0] * 64;
    struct vega__quic_recvbuf b;
    vega__quic_recvbuf_init(&b, m.limit, NULL);
    for (size_t i = 1; i + 5 <= size; i += 5) {
        const uint8_t *o = data + i;
        uint16_t a = (uint16_t)(o[1] | o[2] << 8);
        uint64_t len = o[3] & 0x80 ? (uint64_t)(o[3] & 0x7f) * 33 % MAX_FRAME : o[3] & 0x3f;
        bool fin = o[4] & 1;
        switch (o[0] % 8) {
        case 0:
        case 1:
        case 2: { /* a frame around the window: some below read_off, some beyond the limit */
            uint64_t span = m.limit + 512;
            uint64_t off = m.read_off + a % span;
            off = off > 256 ? off - 256 : 0;
            if (off + len >= STREAM_MAX)
                break;
            if (o[4] & 2 && m.final_size != UINT64_MAX && !fin && o[4] & 4)
                off = m.final_size > len ? m.final_size - len : 0; /* right up to the end */
            do_insert(&b, &m, off, len, fin);
            break;
        }
        case 3: { /* a FIN at or near what was received */
            uint64_t end = m.highest + (o[4] >> 4) - 8;
            if (end > m.highest + 64) /* wrapped below zero */
                end = m.highest;
            if (end >= STREAM_MAX)
                break;
            uint64_t off = end > len ? end - len : 0;
            do_insert(&b, &m, off, end - off, true);
            break;
        }
        case 4: { /* offsets at the top of the range */
            static const uint64_t tops[] = {VEGA_QUIC_MAX_VARINT, VEGA_QUIC_MAX_VARINT + 1,
                                            UINT64_MAX, 1ull << 62, UINT64_MAX - 3};
            uint64_t off = tops[o[1] % 5] - (o[2] % 4);
            if (off < STREAM_MAX)
                break;
            do_insert(&b, &m, off, o[3] % 8, fin);
            break;
        }
        case 5:
            do_read(&b, &m, (size_t)a % (2 * MAX_FRAME));
            break;
        case 6:
            do_peek(&b, &m, (size_t)a % (2 * MAX_FRAME));
            break;
        case 7:
            if ((o[4] & 0xf0) == 0) {
                uint64_t fs = m.highest + (o[1] % 16) - 4;
                if (o[2] & 1)
                    fs = m.read_off + m.limit + (o[1] % 3);
                if (fs > m.highest + 64) /* wrapped below zero */
                    fs = 0;
                do_reset(&b, &m, fs);
            }
            break;
        }
        check_state(&b, &m);
    }
    /* Whatever is contiguous reads back whole. */
    do_read(&b, &m, STREAM_MAX);
    check_state(&b, &m);
    vega__quic_recvbuf_fini(&b);
    return 0;
}
