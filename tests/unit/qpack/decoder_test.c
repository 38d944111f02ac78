/* SPDX-License-Identifier: MIT */
/* The QPACK decoder (lib/qpack/decoder.c, blocked.c, decode_section.c): every error of the
 * encoder stream (QPACK_ENCODER_STREAM_ERROR) and of field sections (QPACK_DECOMPRESSION_FAILED)
 * the RFC names, the limits (lines, decoded size, blocked streams) including a QPACK bomb, the
 * N bit, increments and cancellations. Sections are tagged with the RFC 9204 section. */
#include "qp_test.h"

static vega_qpack_decoder *dec(uint64_t cap, uint64_t blocked, uint64_t section, size_t fields)
{
    vega_qpack_decoder_opts o;
    vega_qpack_decoder_opts_init(&o);
    o.max_table_capacity = cap;
    o.max_blocked_streams = blocked;
    o.max_field_section_size = section;
    o.max_fields = fields;
    vega_qpack_decoder *d;
    VCHECK_EQ(vega_qpack_decoder_new(&d, &qt_cbs, &o, NULL), 0);
    return d;
}

static int feed_hex(vega_qpack_decoder *d, const char *hex)
{
    uint8_t b[4096];
    size_t n = vtest_unhex(hex, b, sizeof b);
    return vega_qpack_decoder_read_encoder(d, b, n);
}

static int section_hex(vega_qpack_decoder *d, uint64_t id, const char *hex, vega_qpack_section *s)
{
    uint8_t b[4096];
    size_t n = vtest_unhex(hex, b, sizeof b);
    return vega_qpack_decoder_decode(d, id, b, n, s);
}

static void expect_enc_error(const char *hex, uint64_t cap)
{
    vega_qpack_decoder *d = dec(cap, 0, 0, 0);
    int rc = feed_hex(d, hex);
    if (rc != VEGA_ERR_PROTO)
        vtest_fail(__FILE__, __LINE__, "%s: %d", hex, rc);
    VCHECK_EQ(vega_qpack_decoder_get_error(d, NULL), VEGA_QPACK_ENCODER_STREAM_ERROR);
    /* Sticky. */
    VCHECK_EQ(feed_hex(d, "3f00"), VEGA_ERR_PROTO);
    vega_qpack_section s;
    VCHECK_EQ(section_hex(d, 0, "0000", &s), VEGA_ERR_PROTO);
    vega_qpack_decoder_free(d);
}

VTEST(encoder_stream_errors)
{
    /* §4.3.1: capacity above SETTINGS_QPACK_MAX_TABLE_CAPACITY (4097 > 4096). */
    expect_enc_error("3fe21f", 4096);
    /* §3.1: static index 99 on the encoder stream. */
    expect_enc_error("3fbd01 ff24 0161", 4096);
    /* §2.2.3: a dynamic name reference to nothing, a Duplicate of nothing. */
    expect_enc_error("3fbd01 8001 61", 4096);
    expect_enc_error("3fbd01 00", 4096);
    expect_enc_error("3fbd01 4161 0162 01", 4096); /* Duplicate of relative 1 with one entry */
    /* §3.2.2: an entry larger than the capacity (100: 32 + 1 + 70 > 100). */
    expect_enc_error(
        "3f45 4161 46 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaa",
        4096);
    /* No capacity set yet (it starts at zero, §3.2.2): any insert is too large. */
    expect_enc_error("4161 0162", 4096);
    /* A Huffman string with EOS in it. */
    expect_enc_error("3fbd01 c0 84 ffffffff", 4096);
    /* An integer longer than 62 bits. */
    expect_enc_error("3f ffffffffffffffffff7f", 4096);
}

/* An insert whose declared length cannot fit is refused as soon as the length is known: the
 * decoder never waits for (or buffers) megabytes. */
VTEST(oversized_insert_refused_early)
{
    vega_qpack_decoder *d = dec(4096, 0, 0, 0);
    VCHECK_EQ(feed_hex(d, "3fe11f"), 0); /* capacity 4096 */
    /* Insert With Literal Name, raw name of 2^20 bytes: 5-bit prefix 31 + continuation. */
    VCHECK_EQ(feed_hex(d, "5f e1ff3f"), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_qpack_decoder_get_error(d, NULL), VEGA_QPACK_ENCODER_STREAM_ERROR);
    VCHECK(d->in_cap <= 64);
    vega_qpack_decoder_free(d);
}

static void expect_section_error(vega_qpack_decoder *d, const char *hex)
{
    vega_qpack_section s;
    int rc = section_hex(d, 0, hex, &s);
    if (rc != VEGA_ERR_PROTO)
        vtest_fail(__FILE__, __LINE__, "%s: %d", hex, rc);
    VCHECK_EQ(vega_qpack_decoder_get_error(d, NULL), VEGA_QPACK_DECOMPRESSION_FAILED);
    vega_qpack_decoder_free(d);
}

/* A decoder with two entries: 0 = a: b, 1 = c: d (capacity 100, MaxEntries 3). */
static vega_qpack_decoder *two_entries(void)
{
    vega_qpack_decoder *d = dec(100, 4, 0, 0);
    VCHECK_EQ(feed_hex(d, "3f45 4161 0162 4163 0164"), 0);
    VCHECK_EQ(vega_qpack_decoder_insert_count(d), 2);
    return d;
}

VTEST(section_errors)
{
    /* §3.1: an invalid static index in a field line (indexed, literal with name ref). */
    expect_section_error(dec(0, 0, 0, 0), "0000 ff24");
    expect_section_error(dec(0, 0, 0, 0), "0000 5f54 0161");
    /* §4.5.1.1: an Encoded Insert Count that no encoder makes. */
    expect_section_error(dec(VEGA_QPACK_ZERO, 0, 0, 0), "0100"); /* no dynamic table */
    expect_section_error(dec(100, 4, 0, 0), "0700");             /* > 2 * MaxEntries (6) */
    expect_section_error(two_entries(), "0100");                 /* decodes to RIC 0 */
    /* §4.5.1.2: Sign 1 with Delta Base >= Required Insert Count. */
    expect_section_error(two_entries(), "0382 80");
    /* §2.2.3: references at or above the Required Insert Count, or below what is left. */
    expect_section_error(two_entries(), "0000 80");      /* RIC 0: no dynamic references */
    expect_section_error(two_entries(), "0200 81");      /* RIC 1, Base 1: relative 1 -> -1 */
    expect_section_error(two_entries(), "0280 11");      /* Base 0: post-Base 1 = abs 1 >= RIC 1 */
    expect_section_error(two_entries(), "0300 82");      /* relative 2 with Base 2 */
    expect_section_error(two_entries(), "0300 4201 61"); /* literal, dynamic name relative 2 */
    expect_section_error(two_entries(), "0280 0901 61"); /* post-Base name 1 = abs 1 >= RIC */
    /* Truncated lines, a bad Huffman string, an empty section. */
    expect_section_error(dec(0, 0, 0, 0), "0000 5105 6162");
    expect_section_error(dec(0, 0, 0, 0), "0000 51 84ffffffff");
    expect_section_error(dec(0, 0, 0, 0), "");
    expect_section_error(dec(0, 0, 0, 0), "00");
}

/* §2.2.3: "a dynamic table entry that has already been evicted". */
VTEST(evicted_reference)
{
    vega_qpack_decoder *d = dec(100, 4, 0, 0);
    /* Capacity 70 holds one 34-byte entry and a half: the third insert evicts the first. */
    VCHECK_EQ(feed_hex(d, "3f27 4161 0162 4163 0164 4165 0166"), 0);
    VCHECK_EQ(d->t.dropped, 1);
    vega_qpack_section s;
    VCHECK_EQ(section_hex(d, 0, "0400 81", &s), 0); /* RIC 3, Base 3, relative 1 = abs 1 */
    VCHECK_STR(qt_section(&s), "c: d\n");
    expect_section_error(d, "0400 82"); /* relative 2 = abs 0: evicted */
}

VTEST(line_forms_and_never_indexed)
{
    vega_qpack_decoder *d = two_entries();
    vega_qpack_section s;
    /* RIC 2, Base 1 (sign, delta 0): indexed relative 0 (abs 0), post-Base 0 (abs 1), literal
     * with static name (N), literal with dynamic name relative 0 (N), post-Base name 0 (N),
     * literal with literal name (N, Huffman name). */
    VCHECK_EQ(section_hex(d, 7, "0380 80 10 7101 78 6001 79 0801 7a 3967 0130", &s), 0);
    VCHECK_STR(qt_section(&s), "a: b\nc: d\n!:path: x\n!a: y\n!c: z\n!3: 0\n");
    VCHECK_EQ(s.size, 6 * 32 + 2 + 2 + 6 + 2 + 2 + 2);
    uint8_t ds[16];
    size_t n = qt_drain_dec(d, ds, sizeof ds);
    QT_BYTES(ds, n, "87"); /* acknowledged; RIC 2 = the Insert Count: no increment */
    vega_qpack_decoder_free(d);
}

VTEST(increments_coalesce)
{
    vega_qpack_decoder *d = dec(4096, 4, 0, 0);
    VCHECK(!vega_qpack_decoder_want_write(d));
    VCHECK_EQ(feed_hex(d, "3fe11f 4161 0162 00 00"), 0); /* an insert, two duplicates */
    VCHECK(vega_qpack_decoder_want_write(d));
    uint8_t ds[16];
    size_t n = qt_drain_dec(d, ds, sizeof ds);
    QT_BYTES(ds, n, "03");
    VCHECK(!vega_qpack_decoder_want_write(d));
    /* A section acknowledgment covering everything makes the increment unneeded. */
    VCHECK_EQ(feed_hex(d, "00"), 0);
    vega_qpack_section s;
    VCHECK_EQ(section_hex(d, 4, "0500 80", &s), 0); /* RIC 4, Base 4 */
    n = qt_drain_dec(d, ds, sizeof ds);
    QT_BYTES(ds, n, "84");
    vega_qpack_decoder_free(d);
}

VTEST(stream_cancellation)
{
    vega_qpack_decoder *d = dec(4096, 4, 0, 0);
    VCHECK_EQ(vega_qpack_decoder_cancel_stream(d, 300), 0);
    uint8_t ds[16];
    size_t n = qt_drain_dec(d, ds, sizeof ds);
    QT_BYTES(ds, n, "7f ed01"); /* 6-bit prefix: 63 + 237 */
    VCHECK_EQ(vega_qpack_decoder_cancel_stream(d, 1ull << 62), -EINVAL);
    vega_qpack_decoder_free(d);
    /* §2.2.2.2: "A decoder with a maximum dynamic table capacity equal to zero MAY omit sending
     * Stream Cancellations". */
    d = dec(VEGA_QPACK_ZERO, 0, 0, 0);
    VCHECK_EQ(vega_qpack_decoder_cancel_stream(d, 4), 0);
    VCHECK(!vega_qpack_decoder_want_write(d));
    vega_qpack_decoder_free(d);
}

/* §2.1.2: "If a decoder encounters more blocked streams than it promised to support, it MUST
 * treat this as a connection error of type QPACK_DECOMPRESSION_FAILED." */
VTEST(blocked_stream_limit)
{
    vega_qpack_decoder *d = dec(4096, 2, 0, 0);
    vega_qpack_section s;
    VCHECK_EQ(section_hex(d, 0, "0200 80", &s), VEGA_QPACK_BLOCKED);
    VCHECK_EQ(section_hex(d, 0, "0200 80", &s), -EINVAL); /* one per stream at a time */
    VCHECK_EQ(section_hex(d, 4, "0300 81", &s), VEGA_QPACK_BLOCKED);
    VCHECK_EQ(vega_qpack_decoder_blocked_count(d), 2);
    VCHECK_EQ(section_hex(d, 8, "0200 80", &s), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_qpack_decoder_get_error(d, NULL), VEGA_QPACK_DECOMPRESSION_FAILED);
    vega_qpack_decoder_free(d);
    /* No blocked streams allowed at all. */
    d = dec(4096, VEGA_QPACK_ZERO, 0, 0);
    VCHECK_EQ(section_hex(d, 0, "0200 80", &s), VEGA_ERR_PROTO);
    vega_qpack_decoder_free(d);
}

/* Two blocked sections unblocked by one piece of the encoder stream, reported in order. */
VTEST(unblocked_reports)
{
    qt_rec r = {0};
    vega_qpack_decoder_opts o;
    vega_qpack_decoder_opts_init(&o);
    vega_qpack_decoder *d;
    VCHECK_EQ(vega_qpack_decoder_new(&d, &qt_cbs, &o, &r), 0);
    vega_qpack_section s;
    VCHECK_EQ(section_hex(d, 8, "0300 81", &s), VEGA_QPACK_BLOCKED); /* needs 2 */
    VCHECK_EQ(section_hex(d, 4, "0200 80", &s), VEGA_QPACK_BLOCKED); /* needs 1 */
    VCHECK_EQ(feed_hex(d, "3fe11f 4161 0162"), 0);
    VCHECK_STR(r.log, "u4 ");
    VCHECK_EQ(feed_hex(d, "4163 0164"), 0);
    VCHECK_STR(r.log, "u4 u8 ");
    VCHECK_EQ(vega_qpack_decoder_resume(d, 8, &s), 0);
    VCHECK_STR(qt_section(&s), "a: b\n");
    VCHECK_EQ(vega_qpack_decoder_resume(d, 4, &s), 0);
    VCHECK_STR(qt_section(&s), "a: b\n");
    /* A callback that fails makes the call that fired it fail. */
    VCHECK_EQ(section_hex(d, 12, "0400 80", &s), VEGA_QPACK_BLOCKED);
    r.fail = 1;
    VCHECK_EQ(feed_hex(d, "4165 0166"), VEGA_ERR_CALLBACK);
    vega_qpack_decoder_free(d);
}

/* Limits: lines per section, decoded size, kept size. Each refusal leaves the decoder usable. */
VTEST(limits)
{
    vega_qpack_decoder *d = dec(4096, 4, 130, 3);
    vega_qpack_section s;
    VCHECK_EQ(section_hex(d, 0, "0000 d1 d1 d1", &s), 0);
    VCHECK_EQ(s.count, 3);
    VCHECK_EQ(section_hex(d, 0, "0000 d1 d1 d1 d1", &s), VEGA_ERR_QPACK_TOO_LARGE);
    /* :method GET is 7 + 3 + 32 = 42 bytes; twice is 84; a third line of 47 passes 130. */
    VCHECK_EQ(section_hex(d, 0, "0000 d1 d1 2161 0e 6868686868686868686868686868", &s),
              VEGA_ERR_QPACK_TOO_LARGE);
    VCHECK_EQ(section_hex(d, 0, "0000 d1 d1 2161 0d 68686868686868686868686868", &s), 0);
    VCHECK_EQ(s.size, 130);
    /* A Huffman value whose decoded form would pass the limit. */
    VCHECK_EQ(section_hex(d, 0, "0000 d1 d1 2161 8a 00000000000000000000", &s),
              VEGA_ERR_QPACK_TOO_LARGE);
    /* A blocked section larger than the limit is not kept. */
    uint8_t big[200] = {0x02, 0x00};
    memset(big + 2, 0x80, sizeof big - 2);
    VCHECK_EQ(vega_qpack_decoder_decode(d, 4, big, sizeof big, &s), VEGA_ERR_QPACK_TOO_LARGE);
    VCHECK_EQ(vega_qpack_decoder_blocked_count(d), 0);
    VCHECK_EQ(section_hex(d, 0, "0000 d1", &s), 0); /* still usable */
    vega_qpack_decoder_free(d);
}

/* ---- a counting allocator for the bomb ---------------------------------------------------- */

struct hdr {
    size_t size;
    size_t pad;
};
static size_t live, peak;

static void *c_malloc(void *ud, size_t n)
{
    (void)ud;
    struct hdr *h = malloc(sizeof *h + n);
    if (!h)
        return NULL;
    h->size = n;
    live += n;
    peak = live > peak ? live : peak;
    return h + 1;
}
static void *c_calloc(void *ud, size_t n, size_t k)
{
    void *p = c_malloc(ud, n * k);
    if (p)
        memset(p, 0, n * k);
    return p;
}
static void *c_realloc(void *ud, void *p, size_t n)
{
    struct hdr *h = (struct hdr *)p - 1;
    void *q = c_malloc(ud, n);
    if (!q)
        return NULL;
    memcpy(q, p, h->size < n ? h->size : n);
    live -= h->size;
    free(h);
    return q;
}
static void c_free(void *ud, void *p)
{
    (void)ud;
    struct hdr *h = (struct hdr *)p - 1;
    live -= h->size;
    free(h);
}
static const vega_mem counting = {c_malloc, c_calloc, c_realloc, c_free, NULL};

/* §7.3 / a QPACK bomb: one 4000-byte entry referenced 4000 times in 4002 bytes would decode to
 * 16 MB; the decoded-size limit (64 KiB) stops it with memory barely above the table's. */
VTEST(qpack_bomb)
{
    vega_qpack_decoder_opts o;
    vega_qpack_decoder_opts_init(&o);
    o.max_table_capacity = 8192;
    o.max_fields = 100000;
    o.mem = &counting;
    vega_qpack_decoder *d;
    VCHECK_EQ(vega_qpack_decoder_new(&d, NULL, &o, NULL), 0);
    static uint8_t ins[5000];
    size_t n = 0;
    n += vega__hc_int_encode(ins + n, sizeof ins - n, 0x20, 5, 8192);
    n += vega__hc_str_encode(ins + n, sizeof ins - n, 0x40, 5, (const uint8_t *)"x-bomb", 6, false);
    static uint8_t value[4000];
    memset(value, 'B', sizeof value);
    n += vega__hc_str_encode(ins + n, sizeof ins - n, 0x00, 7, value, sizeof value, false);
    VCHECK_EQ(vega_qpack_decoder_read_encoder(d, ins, n), 0);
    size_t table_peak = peak;
    static uint8_t sec[4002];
    sec[0] = 0x02;                         /* RIC 1 */
    sec[1] = 0x00;                         /* Base 1 */
    memset(sec + 2, 0x80, sizeof sec - 2); /* relative 0, 4000 times */
    vega_qpack_section s;
    VCHECK_EQ(vega_qpack_decoder_decode(d, 0, sec, sizeof sec, &s), VEGA_ERR_QPACK_TOO_LARGE);
    /* Only the field array (16 lines of 4038 bytes fit in 64 KiB) and scratch space came. */
    VCHECK(peak < table_peak + 8192);
    vega_qpack_decoder_free(d);
    VCHECK_EQ(live, 0);
}

VTEST(bad_options)
{
    vega_qpack_decoder_opts o;
    vega_qpack_decoder_opts_init(&o);
    vega_qpack_decoder *d;
    o.max_table_capacity = VEGA_QPACK_MAX_TABLE_CAPACITY + 1;
    VCHECK_EQ(vega_qpack_decoder_new(&d, NULL, &o, NULL), -EINVAL);
    vega_qpack_decoder_opts_init(&o);
    o.max_blocked_streams = VEGA_QPACK_MAX_BLOCKED + 1;
    VCHECK_EQ(vega_qpack_decoder_new(&d, NULL, &o, NULL), -EINVAL);
    vega_qpack_decoder_opts_init(&o);
    vega_mem half = {c_malloc, NULL, c_realloc, c_free, NULL};
    o.mem = &half;
    VCHECK_EQ(vega_qpack_decoder_new(&d, NULL, &o, NULL), -EINVAL);
    VCHECK_EQ(vega_qpack_decoder_new_versioned(&d, NULL, NULL, NULL, 99), -EINVAL);
    VCHECK_EQ(vega_qpack_decoder_new(&d, NULL, NULL, NULL), 0);
    VCHECK_EQ(d->max_capacity, 4096);
    VCHECK_EQ(d->max_blocked, 16);
    VCHECK_EQ(d->max_section, 65536);
    VCHECK_EQ(d->max_fields, 256);
    vega_qpack_decoder_free(d);
    vega_qpack_decoder_free(NULL);
}
