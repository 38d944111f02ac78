/* SPDX-License-Identifier: MIT */
/* Frames (RFC 9000 §19, RFC 9221 §4): a round trip of every frame type, malformed and
 * out-of-range input with the transport error it maps to, ACK ranges, and which packet types
 * may carry which frames (§12.4 Table 3). */
#include <string.h>

#include <vega/quic_wire.h>

#include "vtest.h"

static const uint8_t DATA[] = "hello, quic";

static bool span_eq(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* Field-by-field equality of two decoded frames (spans by content). */
static bool frame_eq(const vega_quic_frame *a, const vega_quic_frame *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case VEGA_QUIC_FT_PADDING:
        return a->u.padding.len == b->u.padding.len;
    case VEGA_QUIC_FT_ACK:
    case VEGA_QUIC_FT_ACK_ECN: {
        const vega_quic_frame_ack *x = &a->u.ack, *y = &b->u.ack;
        return x->largest == y->largest && x->ack_delay == y->ack_delay &&
               x->first_range == y->first_range && x->range_count == y->range_count &&
               span_eq(x->gaps, x->gaps_len, y->gaps, y->gaps_len) && x->ect0 == y->ect0 &&
               x->ect1 == y->ect1 && x->ce == y->ce;
    }
    case VEGA_QUIC_FT_CRYPTO:
        return a->u.crypto.offset == b->u.crypto.offset &&
               span_eq(a->u.crypto.data, a->u.crypto.len, b->u.crypto.data, b->u.crypto.len);
    case VEGA_QUIC_FT_NEW_TOKEN:
        return span_eq(a->u.new_token.token, a->u.new_token.len, b->u.new_token.token,
                       b->u.new_token.len);
    case VEGA_QUIC_FT_STREAM:
        return a->u.stream.stream_id == b->u.stream.stream_id &&
               a->u.stream.offset == b->u.stream.offset &&
               a->u.stream.has_len == b->u.stream.has_len && a->u.stream.fin == b->u.stream.fin &&
               span_eq(a->u.stream.data, a->u.stream.len, b->u.stream.data, b->u.stream.len);
    case VEGA_QUIC_FT_CONNECTION_CLOSE:
    case VEGA_QUIC_FT_CONNECTION_CLOSE_APP:
        return a->u.close.error_code == b->u.close.error_code &&
               a->u.close.frame_type == b->u.close.frame_type &&
               span_eq(a->u.close.reason, a->u.close.reason_len, b->u.close.reason,
                       b->u.close.reason_len);
    case VEGA_QUIC_FT_DATAGRAM:
    case VEGA_QUIC_FT_DATAGRAM_LEN:
        return span_eq(a->u.datagram.data, a->u.datagram.len, b->u.datagram.data,
                       b->u.datagram.len);
    default: /* the rest hold no pointers: compare the union bytes */
        return memcmp(&a->u, &b->u, sizeof(a->u)) == 0;
    }
}

/* Encodes f, decodes it back, compares, and checks every truncation fails to decode as the
 * same frame (length-delimited frames fail outright). */
static void roundtrip(const vega_quic_frame *f, size_t want_len, int line)
{
    uint8_t buf[256];
    vega_quic_frame g;
    uint64_t err = 0;
    vega_ssize n = vega_quic_frame_encode(f, buf, sizeof buf);
    if (n <= 0 || (want_len && (size_t)n != want_len))
        vtest_fail(__FILE__, line, "encode gave %zd", n);
    if (vega_quic_frame_decode(&g, buf, (size_t)n, &err) != n || !frame_eq(f, &g))
        vtest_fail(__FILE__, line, "decode differs (err 0x%llx)", (unsigned long long)err);
    if (vega_quic_frame_encode(f, buf, (size_t)n - 1) != VEGA_ERR_NOBUF)
        vtest_fail(__FILE__, line, "short buffer accepted");
    bool open_ended = f->type == VEGA_QUIC_FT_DATAGRAM || f->type == VEGA_QUIC_FT_PADDING ||
                      (f->type == VEGA_QUIC_FT_STREAM && !f->u.stream.has_len);
    if (!open_ended)
        for (size_t cut = 0; cut < (size_t)n; cut++) {
            err = 0;
            if (vega_quic_frame_decode(&g, buf, cut, &err) != VEGA_ERR_PROTO ||
                err != VEGA_QUIC_FRAME_ENCODING_ERROR)
                vtest_fail(__FILE__, line, "truncation at %zu accepted", cut);
        }
}
#define ROUNDTRIP(f, n) roundtrip(f, n, __LINE__)

VTEST(roundtrip_simple_frames)
{
    vega_quic_frame f = {.type = VEGA_QUIC_FT_PADDING, .u.padding.len = 7};
    ROUNDTRIP(&f, 7);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_PING};
    ROUNDTRIP(&f, 1);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_HANDSHAKE_DONE};
    ROUNDTRIP(&f, 1);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_RESET_STREAM,
                          .u.reset_stream = {4, 0x10c, VEGA_QUIC_MAX_VARINT}};
    ROUNDTRIP(&f, 1 + 1 + 2 + 8);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_STOP_SENDING, .u.stop_sending = {7, 0}};
    ROUNDTRIP(&f, 3);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_CRYPTO,
                          .u.crypto = {.offset = 1000, .data = DATA, .len = 11}};
    ROUNDTRIP(&f, 1 + 2 + 1 + 11);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_NEW_TOKEN, .u.new_token = {DATA, 5}};
    ROUNDTRIP(&f, 7);
    static const vega_quic_frame_type limits[] = {VEGA_QUIC_FT_MAX_DATA,
                                                  VEGA_QUIC_FT_MAX_STREAMS_BIDI,
                                                  VEGA_QUIC_FT_MAX_STREAMS_UNI,
                                                  VEGA_QUIC_FT_DATA_BLOCKED,
                                                  VEGA_QUIC_FT_STREAMS_BLOCKED_BIDI,
                                                  VEGA_QUIC_FT_STREAMS_BLOCKED_UNI};
    for (size_t i = 0; i < 6; i++) {
        f = (vega_quic_frame){.type = limits[i], .u.limit.max = 1ull << 60};
        ROUNDTRIP(&f, 9);
    }
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_MAX_STREAM_DATA, .u.stream_limit = {3, 65536}};
    ROUNDTRIP(&f, 1 + 1 + 4);
    f.type = VEGA_QUIC_FT_STREAM_DATA_BLOCKED;
    ROUNDTRIP(&f, 1 + 1 + 4);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_NEW_CONNECTION_ID,
                          .u.new_cid = {.seq = 5, .retire_prior_to = 5, .cid_len = 20}};
    memset(f.u.new_cid.cid, 0xcc, 20);
    memset(f.u.new_cid.reset_token, 0xdd, 16);
    ROUNDTRIP(&f, 1 + 1 + 1 + 1 + 20 + 16);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_RETIRE_CONNECTION_ID, .u.retire_cid = {300}};
    ROUNDTRIP(&f, 3);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_PATH_CHALLENGE,
                          .u.path = {{1, 2, 3, 4, 5, 6, 7, 8}}};
    ROUNDTRIP(&f, 9);
    f.type = VEGA_QUIC_FT_PATH_RESPONSE;
    ROUNDTRIP(&f, 9);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_CONNECTION_CLOSE, .u.close = {0x0a, 0x08, DATA, 11}};
    ROUNDTRIP(&f, 1 + 1 + 1 + 1 + 11);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_CONNECTION_CLOSE_APP,
                          .u.close = {0x100, 0, NULL, 0}};
    ROUNDTRIP(&f, 1 + 2 + 1);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_DATAGRAM, .u.datagram = {DATA, 11}};
    ROUNDTRIP(&f, 12);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_DATAGRAM_LEN, .u.datagram = {DATA, 11}};
    ROUNDTRIP(&f, 13);
    f.u.datagram.len = 0;
    ROUNDTRIP(&f, 2);
}

/* STREAM with every OFF/LEN/FIN combination (types 0x08..0x0f). */
VTEST(roundtrip_stream_bits)
{
    for (int bits = 0; bits < 8; bits++) {
        vega_quic_frame f = {.type = VEGA_QUIC_FT_STREAM};
        f.u.stream.stream_id = 0x3fff;
        f.u.stream.has_offset = bits & 4;
        f.u.stream.offset = (bits & 4) ? 77 : 0;
        f.u.stream.has_len = bits & 2;
        f.u.stream.fin = bits & 1;
        f.u.stream.data = DATA;
        f.u.stream.len = 11;
        uint8_t buf[64];
        vega_ssize n = vega_quic_frame_encode(&f, buf, sizeof buf);
        VCHECK(n > 0);
        VCHECK_EQ(buf[0], 0x08 | bits);
        ROUNDTRIP(&f, 0);
    }
    /* An offset without has_offset still sets OFF. */
    vega_quic_frame f = {.type = VEGA_QUIC_FT_STREAM, .u.stream = {.offset = 5, .has_len = true}};
    uint8_t buf[16];
    VCHECK(vega_quic_frame_encode(&f, buf, sizeof buf) > 0);
    VCHECK_EQ(buf[0], 0x0e);
}

/* ACK ranges: encode from a list, decode, walk back the same list; ACK_ECN counts. */
VTEST(ack_ranges)
{
    const vega_quic_ack_range r[4] = {{95, 100}, {80, 90}, {78, 78}, {0, 76}};
    vega_quic_frame f = {.type = VEGA_QUIC_FT_ACK_ECN};
    f.u.ack.ranges = r;
    f.u.ack.nranges = 4;
    f.u.ack.ack_delay = 1234;
    f.u.ack.ect0 = 1;
    f.u.ack.ect1 = 2;
    f.u.ack.ce = 3;
    uint8_t buf[64];
    vega_ssize n = vega_quic_frame_encode(&f, buf, sizeof buf);
    VCHECK(n > 0);
    vega_quic_frame g;
    VCHECK_EQ(vega_quic_frame_decode(&g, buf, (size_t)n, NULL), n);
    VCHECK_EQ(g.type, VEGA_QUIC_FT_ACK_ECN);
    VCHECK_EQ(g.u.ack.largest, 100);
    VCHECK_EQ(g.u.ack.first_range, 5);
    VCHECK_EQ(g.u.ack.range_count, 3);
    VCHECK_EQ(g.u.ack.ack_delay, 1234);
    VCHECK(g.u.ack.ect0 == 1 && g.u.ack.ect1 == 2 && g.u.ack.ce == 3);
    vega_quic_ack_iter it;
    vega_quic_ack_range x;
    size_t i = 0;
    vega_quic_ack_iter_init(&it, &g.u.ack);
    while (vega_quic_ack_iter_next(&it, &x)) {
        VCHECK(i < 4);
        VCHECK(x.smallest == r[i].smallest && x.largest == r[i].largest);
        i++;
    }
    VCHECK_EQ(i, 4);
    ROUNDTRIP(&g, (size_t)n); /* the decoded (wire) form re-encodes the same */
    /* Bad range lists: ascending, adjacent (no gap), overlapping, empty. */
    const vega_quic_ack_range adj[2] = {{10, 20}, {5, 9}}, asc[2] = {{0, 1}, {5, 9}};
    f.u.ack.ranges = adj;
    f.u.ack.nranges = 2;
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    f.u.ack.ranges = asc;
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    f.u.ack.nranges = 0;
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    /* A single range down to 0. */
    const vega_quic_ack_range one[1] = {{0, 0}};
    f.type = VEGA_QUIC_FT_ACK;
    f.u.ack.ranges = one;
    f.u.ack.nranges = 1;
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), 6);
    VCHECK_EQ(vega_quic_frame_decode(&g, buf, 6, NULL), 6);
    VCHECK(g.u.ack.largest == 0 && g.u.ack.first_range == 0);
}

/* A frame filled by hand with first_range > largest: the first range's smallest was computed
 * as largest - first_range, which wrapped to just below 2^64 (a range far above largest). */
VTEST(ack_iter_first_range_above_largest)
{
    vega_quic_frame_ack a = {.largest = 5, .first_range = 6};
    vega_quic_ack_iter it;
    vega_quic_ack_range x = {0, 0};
    vega_quic_ack_iter_init(&it, &a);
    bool got = vega_quic_ack_iter_next(&it, &x);
    VCHECK(!got || x.smallest <= x.largest);
    VCHECK(!got);
    VCHECK(!vega_quic_ack_iter_next(&it, &x));
    /* first_range == largest is a range down to 0. */
    a.first_range = 5;
    vega_quic_ack_iter_init(&it, &a);
    VCHECK(vega_quic_ack_iter_next(&it, &x));
    VCHECK(x.smallest == 0 && x.largest == 5);
    VCHECK(!vega_quic_ack_iter_next(&it, &x));
}

static void bad(const char *hex, uint64_t want_err, int line)
{
    uint8_t buf[128];
    size_t n = 0;
    for (; hex[0] && hex[1]; hex += 2) {
        unsigned v;
        sscanf(hex, "%2x", &v);
        buf[n++] = (uint8_t)v;
    }
    vega_quic_frame f;
    uint64_t err = 0;
    vega_ssize rc = vega_quic_frame_decode(&f, buf, n, &err);
    if (rc != VEGA_ERR_PROTO || err != want_err)
        vtest_fail(__FILE__, line, "rc %zd err 0x%llx", rc, (unsigned long long)err);
}
#define BAD(hex, err) bad(hex, err, __LINE__)
#define FEE           VEGA_QUIC_FRAME_ENCODING_ERROR

/* RFC 9000 §19: malformed frames and the transport error each maps to. */
VTEST(malformed)
{
    BAD("", FEE);
    BAD("1f", FEE);                            /* unknown type */
    BAD("4001", VEGA_QUIC_PROTOCOL_VIOLATION); /* PING in two bytes */
    BAD("4000", VEGA_QUIC_PROTOCOL_VIOLATION);
    BAD("7fff", FEE); /* unknown two-byte type */
    /* ACK: first range above largest; a gap below 0; a range length below 0; truncated ECN;
     * a huge range count. */
    BAD("0205000006", FEE);
    BAD("020a00010505", FEE);     /* smallest 5, gap 5: largest would be -2 */
    BAD("020a00010503", FEE);     /* truncated pair */
    BAD("020a000105000400", FEE); /* smallest 5, gap 0: largest 3, len 4 */
    BAD("030a0000000102", FEE);   /* ACK_ECN without CE */
    BAD("020a00bfffffffffffffff00", FEE);
    /* CRYPTO and STREAM whose end passes 2^62 - 1; lengths past the end. */
    BAD("06ffffffffffffffff0100", FEE);
    BAD("0e00ffffffffffffffff0100", FEE);
    BAD("060005abcd", FEE);
    BAD("0a0005abcd", FEE);
    BAD("0b00", FEE); /* LEN bit, no length */
    BAD("0c00", FEE); /* OFF bit, no offset */
    /* NEW_TOKEN empty; MAX_STREAMS / STREAMS_BLOCKED above 2^60. */
    BAD("0700", FEE);
    BAD("12d000000000000001", FEE);
    BAD("13d000000000000001", FEE);
    BAD("16d000000000000001", FEE);
    BAD("17d000000000000001", FEE);
    /* NEW_CONNECTION_ID: CID length 0 and 21, Retire Prior To above Sequence, short token. */
    BAD("18010000000102030405060708090a0b0c0d0e0f10", FEE);
    BAD("18010015", FEE);
    BAD("180102080102030405060708000102030405060708090a0b0c0d0e0f", FEE);
    BAD("1801010801020304050607080001020304050607", FEE);
    /* PATH_CHALLENGE short; CONNECTION_CLOSE reason past the end; DATAGRAM length past it. */
    BAD("1a01020304050607", FEE);
    BAD("1c0a0005616263", FEE);
    BAD("1d0a05616263", FEE);
    BAD("3105616263", FEE);
    BAD("12", FEE);
}

/* RFC 9000 §12.4 Table 3 and RFC 9221 §4: spot checks of each column. */
VTEST(allowed_table)
{
    const vega_quic_pkt_type I = VEGA_QUIC_PKT_INITIAL, Z = VEGA_QUIC_PKT_0RTT,
                             H = VEGA_QUIC_PKT_HANDSHAKE, O = VEGA_QUIC_PKT_1RTT;
    static const struct {
        vega_quic_frame_type t;
        bool i, z, h, o;
    } rows[] = {
        {VEGA_QUIC_FT_PADDING, 1, 1, 1, 1},
        {VEGA_QUIC_FT_PING, 1, 1, 1, 1},
        {VEGA_QUIC_FT_ACK, 1, 0, 1, 1},
        {VEGA_QUIC_FT_ACK_ECN, 1, 0, 1, 1},
        {VEGA_QUIC_FT_RESET_STREAM, 0, 1, 0, 1},
        {VEGA_QUIC_FT_STOP_SENDING, 0, 1, 0, 1},
        {VEGA_QUIC_FT_CRYPTO, 1, 0, 1, 1},
        {VEGA_QUIC_FT_NEW_TOKEN, 0, 0, 0, 1},
        {VEGA_QUIC_FT_STREAM, 0, 1, 0, 1},
        {VEGA_QUIC_FT_MAX_DATA, 0, 1, 0, 1},
        {VEGA_QUIC_FT_MAX_STREAM_DATA, 0, 1, 0, 1},
        {VEGA_QUIC_FT_MAX_STREAMS_UNI, 0, 1, 0, 1},
        {VEGA_QUIC_FT_DATA_BLOCKED, 0, 1, 0, 1},
        {VEGA_QUIC_FT_STREAMS_BLOCKED_BIDI, 0, 1, 0, 1},
        {VEGA_QUIC_FT_NEW_CONNECTION_ID, 0, 1, 0, 1},
        {VEGA_QUIC_FT_RETIRE_CONNECTION_ID, 0, 1, 0, 1},
        {VEGA_QUIC_FT_PATH_CHALLENGE, 0, 1, 0, 1},
        {VEGA_QUIC_FT_PATH_RESPONSE, 0, 0, 0, 1},
        {VEGA_QUIC_FT_CONNECTION_CLOSE, 1, 1, 1, 1},
        {VEGA_QUIC_FT_CONNECTION_CLOSE_APP, 0, 1, 0, 1},
        {VEGA_QUIC_FT_HANDSHAKE_DONE, 0, 0, 0, 1},
        {VEGA_QUIC_FT_DATAGRAM, 0, 1, 0, 1},
        {VEGA_QUIC_FT_DATAGRAM_LEN, 0, 1, 0, 1},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        VCHECK_EQ(vega_quic_frame_allowed(rows[i].t, I), rows[i].i);
        VCHECK_EQ(vega_quic_frame_allowed(rows[i].t, Z), rows[i].z);
        VCHECK_EQ(vega_quic_frame_allowed(rows[i].t, H), rows[i].h);
        VCHECK_EQ(vega_quic_frame_allowed(rows[i].t, O), rows[i].o);
        VCHECK(!vega_quic_frame_allowed(rows[i].t, VEGA_QUIC_PKT_RETRY));
    }
    VCHECK(!vega_quic_frame_is_ack_eliciting(VEGA_QUIC_FT_ACK));
    VCHECK(!vega_quic_frame_is_ack_eliciting(VEGA_QUIC_FT_PADDING));
    VCHECK(!vega_quic_frame_is_ack_eliciting(VEGA_QUIC_FT_CONNECTION_CLOSE));
    VCHECK(vega_quic_frame_is_ack_eliciting(VEGA_QUIC_FT_PING));
    VCHECK(vega_quic_frame_is_ack_eliciting(VEGA_QUIC_FT_DATAGRAM));
}

/* A whole payload: PADDING runs, frames in sequence, an empty payload, a forbidden frame. */
VTEST(payload_check)
{
    /* CRYPTO(0, "ab"), PING, 5 PADDING, ACK(3, 0, 0, 3). */
    const uint8_t p[] = {0x06, 0x00, 0x02, 'a', 'b', 0x01, 0, 0, 0, 0, 0, 0x02, 3, 0, 0, 3};
    uint64_t err = 0;
    VCHECK_EQ(vega_quic_payload_check(p, sizeof p, VEGA_QUIC_PKT_INITIAL, &err), 0);
    vega_quic_frame f;
    VCHECK_EQ(vega_quic_frame_decode(&f, p + 6, sizeof p - 6, NULL), 5);
    VCHECK_EQ(f.type, VEGA_QUIC_FT_PADDING);
    VCHECK_EQ(f.u.padding.len, 5);
    /* ACK and CRYPTO are not allowed in 0-RTT. */
    VCHECK_EQ(vega_quic_payload_check(p, sizeof p, VEGA_QUIC_PKT_0RTT, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_PROTOCOL_VIOLATION);
    err = 0;
    VCHECK_EQ(vega_quic_payload_check(p, 0, VEGA_QUIC_PKT_1RTT, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_PROTOCOL_VIOLATION);
    /* A STREAM frame in an Initial; a truncated last frame. */
    const uint8_t s[] = {0x08, 0x00, 'x'};
    VCHECK_EQ(vega_quic_payload_check(s, sizeof s, VEGA_QUIC_PKT_INITIAL, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_PROTOCOL_VIOLATION);
    VCHECK_EQ(vega_quic_payload_check(s, sizeof s, VEGA_QUIC_PKT_1RTT, &err), 0);
    VCHECK_EQ(vega_quic_payload_check(p, sizeof p - 1, VEGA_QUIC_PKT_INITIAL, &err),
              VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_FRAME_ENCODING_ERROR);
}

/* The encoder refuses what the decoder would reject. */
VTEST(encode_invalid)
{
    uint8_t buf[64];
    vega_quic_frame f = {.type = VEGA_QUIC_FT_PADDING};
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_NEW_TOKEN};
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_MAX_STREAMS_BIDI, .u.limit.max = (1ull << 60) + 1};
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_MAX_DATA, .u.limit.max = VEGA_QUIC_MAX_VARINT + 1};
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_NEW_CONNECTION_ID, .u.new_cid = {.cid_len = 0}};
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    f.u.new_cid.cid_len = 21;
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_NEW_CONNECTION_ID,
                          .u.new_cid = {.seq = 1, .retire_prior_to = 2, .cid_len = 4}};
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_CRYPTO,
                          .u.crypto = {.offset = VEGA_QUIC_MAX_VARINT, .data = DATA, .len = 1}};
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    f = (vega_quic_frame){.type = (vega_quic_frame_type)0x1f};
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    /* An ACK in wire form whose gaps do not match its range count. */
    const uint8_t gaps[2] = {0, 0};
    f = (vega_quic_frame){.type = VEGA_QUIC_FT_ACK};
    f.u.ack.largest = 10;
    f.u.ack.range_count = 2;
    f.u.ack.gaps = gaps;
    f.u.ack.gaps_len = 2;
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), -EINVAL);
    f.u.ack.range_count = 1;
    VCHECK_EQ(vega_quic_frame_encode(&f, buf, sizeof buf), 7);
}
