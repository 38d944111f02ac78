/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the QUIC send buffer (lib/quic/sendbuf.c), against a per-byte model: the
 * input is a limit and a list of operations (write, finish, send what next() hands out, raise
 * the flow control credit, acknowledge or lose a packet in flight). next() must hand out
 * exactly what the model says (the lowest lost range first, then fresh bytes under the credit,
 * the FIN on the last piece or alone), every byte copied out must be the byte written at that
 * offset, and once every packet is acknowledged and the rest sent and acknowledged, is_acked
 * must hold. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "fuzz_target.h"
#include "qstream.h"

#define STREAM_MAX   (1u << 16)
#define MAX_INFLIGHT 256

static uint8_t ref(uint64_t i)
{
    return (uint8_t)(i * 131 + (i >> 8) + 7);
}

struct pkt {
    uint64_t off;
    size_t len;
    bool fin;
};

static struct {
    uint8_t acked[STREAM_MAX], lost[STREAM_MAX];
    size_t nlost;
    uint64_t lost_lo; /* no lost byte below this: keeps the model's scans short */
    uint64_t base, next_off, written, credit, limit;
    bool fin, fin_sent, fin_acked, fin_lost;
    struct pkt inflight[MAX_INFLIGHT];
    size_t ninf;
} m;

static uint8_t refbuf[STREAM_MAX + 1], out[STREAM_MAX];

static void check(bool ok)
{
    if (!ok)
        abort();
}

static bool fin_pending(void)
{
    return m.fin && !m.fin_acked && (!m.fin_sent || m.fin_lost);
}

static void check_state(const struct vega__quic_sendbuf *b)
{
    check(b->acked_base == m.base && b->next_off == m.next_off && b->written == m.written);
    check(vega__quic_sendbuf_has_pending(b) ==
          (m.nlost > 0 || m.next_off < m.written || fin_pending()));
    check(vega__quic_sendbuf_is_acked(b) == (m.fin && m.fin_acked && m.base == m.written));
    if (m.limit)
        check(vega__quic_sendbuf_room(b) == m.limit - (m.written - m.base));
}

static void do_write(struct vega__quic_sendbuf *b, size_t n)
{
    n = VEGA__MIN(n, (size_t)(STREAM_MAX - m.written));
    size_t want = m.fin ? 0 : n;
    if (m.limit)
        want = VEGA__MIN(want, (size_t)(m.limit - (m.written - m.base)));
    vega_ssize got = vega__quic_sendbuf_write(b, refbuf + m.written, n);
    check(got == (vega_ssize)want);
    m.written += want;
}

/* What the model says next() returns. */
static bool model_next(uint64_t max_off, size_t max_len, uint64_t *off, size_t *len, bool *fin,
                       bool *blocked)
{
    *blocked = false;
    if (m.nlost > 0 && max_len > 0) {
        uint64_t i = VEGA__MAX(m.base, m.lost_lo);
        while (!m.lost[i])
            i++;
        m.lost_lo = i;
        uint64_t e = i;
        while (e < m.next_off && m.lost[e] && e - i < max_len)
            e++;
        *off = i;
        *len = (size_t)(e - i);
        *fin = fin_pending() && e == m.written;
        return true;
    }
    if (m.next_off < m.written) {
        if (m.next_off >= max_off) {
            *blocked = true;
            return false;
        }
        uint64_t e = VEGA__MIN(VEGA__MIN(m.written, max_off), m.next_off + max_len);
        if (e == m.next_off)
            return false;
        *off = m.next_off;
        *len = (size_t)(e - m.next_off);
        *fin = fin_pending() && e == m.written;
        return true;
    }
    if (fin_pending()) {
        *off = m.written;
        *len = 0;
        *fin = true;
        return true;
    }
    return false;
}

static void on_sent(struct vega__quic_sendbuf *b, uint64_t off, size_t len, bool fin)
{
    check(vega__quic_sendbuf_on_sent(b, off, len, fin) == 0);
    for (uint64_t i = off; i < off + len; i++)
        if (m.lost[i]) {
            m.lost[i] = 0;
            m.nlost--;
        }
    m.next_off = VEGA__MAX(m.next_off, off + len);
    if (fin) {
        m.fin_sent = true;
        m.fin_lost = false;
    }
}

/* Sends what next() hands out (when the model agrees); returns whether something went. */
static bool do_send(struct vega__quic_sendbuf *b, uint64_t max_off, size_t max_len, bool track)
{
    uint64_t off = 0, moff = 0;
    size_t len = 0, mlen = 0;
    bool fin = false, mfin = false, blocked = true, mblocked = false;
    bool r = vega__quic_sendbuf_next(b, max_off, max_len, &off, &len, &fin, &blocked);
    bool mr = model_next(max_off, max_len, &moff, &mlen, &mfin, &mblocked);
    check(r == mr && blocked == mblocked);
    if (!r)
        return false;
    check(off == moff && len == mlen && fin == mfin);
    check(off >= m.base && off + len <= m.written);
    vega__quic_sendbuf_copy(b, off, len, out);
    check(len == 0 || memcmp(out, refbuf + off, len) == 0);
    const uint8_t *p;
    size_t n1 = vega__quic_sendbuf_peek(b, off, len, &p);
    check(n1 <= len && (n1 > 0 || len == 0) && (n1 == 0 || memcmp(p, out, n1) == 0));
    on_sent(b, off, len, fin);
    if (track) {
        if (m.ninf == MAX_INFLIGHT) /* forget the oldest: it stays unacknowledged for now */
            memmove(m.inflight, m.inflight + 1, --m.ninf * sizeof m.inflight[0]);
        m.inflight[m.ninf++] = (struct pkt){off, len, fin};
    }
    return true;
}

static void do_ack(struct vega__quic_sendbuf *b, struct pkt p)
{
    check(vega__quic_sendbuf_on_acked(b, p.off, p.len, p.fin) == 0);
    for (uint64_t i = p.off; i < p.off + p.len; i++) {
        m.acked[i] = 1;
        if (m.lost[i]) {
            m.lost[i] = 0;
            m.nlost--;
        }
    }
    while (m.base < m.written && m.acked[m.base])
        m.base++;
    if (p.fin) {
        m.fin_acked = true;
        m.fin_lost = false;
    }
}

static void do_lose(struct vega__quic_sendbuf *b, struct pkt p)
{
    check(vega__quic_sendbuf_on_lost(b, p.off, p.len, p.fin) == 0);
    if (p.fin && m.fin_sent && !m.fin_acked)
        m.fin_lost = true;
    for (uint64_t i = p.off; i < p.off + p.len && i < m.next_off; i++)
        if (!m.acked[i] && !m.lost[i]) {
            m.lost[i] = 1;
            m.nlost++;
            m.lost_lo = VEGA__MIN(m.lost_lo, i);
        }
}

static struct pkt take_inflight(size_t k)
{
    struct pkt p = m.inflight[k];
    m.inflight[k] = m.inflight[--m.ninf];
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (refbuf[0] == 0)
        for (size_t i = 0; i < sizeof refbuf; i++)
            refbuf[i] = ref(i);
    /* Only the bytes the last input reached need clearing (cheap runs for libFuzzer). */
    memset(m.acked, 0, (size_t)m.written);
    memset(m.lost, 0, (size_t)m.written);
    memset(&m.nlost, 0, sizeof m - offsetof(__typeof__(m), nlost));
    m.limit = data[0] == 0 ? 0 : (uint64_t)data[0] * 97;
    m.credit = 1000;
    struct vega__quic_sendbuf b;
    vega__quic_sendbuf_init(&b, m.limit, NULL);
    for (size_t i = 1; i + 3 <= size; i += 3) {
        const uint8_t *o = data + i;
        uint16_t a = (uint16_t)(o[1] | o[2] << 8);
        switch (o[0] % 8) {
        case 0:
        case 1:
            do_write(&b, a % 5000);
            break;
        case 2:
            if (o[1] % 4 == 0) {
                vega__quic_sendbuf_finish(&b);
                m.fin = true;
            }
            break;
        case 3:
        case 4:
            do_send(&b, m.credit, 1 + (size_t)o[1] * 8 + (o[2] & 1 ? 0 : 5000), true);
            break;
        case 5:
            m.credit += (uint64_t)a % 4096;
            break;
        case 6:
            if (m.ninf)
                do_ack(&b, take_inflight(a % m.ninf));
            break;
        case 7:
            if (m.ninf)
                do_lose(&b, take_inflight(a % m.ninf));
            break;
        }
        check_state(&b);
    }
    /* Everything in flight arrives, then the rest goes out and is acknowledged. */
    while (m.ninf)
        do_ack(&b, take_inflight(m.ninf - 1));
    check_state(&b);
    if (!m.fin) {
        vega__quic_sendbuf_finish(&b);
        m.fin = true;
    }
    for (int guard = 0; guard < 100000 && vega__quic_sendbuf_has_pending(&b); guard++) {
        size_t before = m.ninf;
        check(do_send(&b, UINT64_MAX, 1200, true));
        check(m.ninf == before + 1);
        do_ack(&b, take_inflight(m.ninf - 1));
        check_state(&b);
    }
    check(vega__quic_sendbuf_is_acked(&b));
    check(b.acked_base == m.written && b.lost.n == 0 && b.acked.n == 0);
    vega__quic_sendbuf_fini(&b);
    return 0;
}
