/* SPDX-License-Identifier: MIT */
/* RFC 9204 Appendix B, byte for byte, in both directions: an encoder configured as the
 * example's (capacity 220, raw strings) produces the encoder-stream bytes and field sections
 * shown (B.1-B.5; B.4's Duplicate through a speculative insert of an existing entry), a decoder
 * fed them produces the fields and the decoder-stream bytes shown, and both tables match the
 * example's states (absolute index, references, size) after every step. */
#include "qp_test.h"

static vega_qpack_encoder *new_encoder(void)
{
    vega_qpack_encoder_opts o;
    vega_qpack_encoder_opts_init(&o);
    o.max_table_capacity = 220;
    o.no_huffman = true;
    vega_qpack_encoder *e;
    VCHECK_EQ(vega_qpack_encoder_new(&e, &o), 0);
    return e;
}

static vega_qpack_decoder *new_decoder(qt_rec *r)
{
    vega_qpack_decoder_opts o;
    vega_qpack_decoder_opts_init(&o);
    o.max_table_capacity = 220;
    vega_qpack_decoder *d;
    VCHECK_EQ(vega_qpack_decoder_new(&d, &qt_cbs, &o, r), 0);
    return d;
}

static const vega_http_field b1[] = {VEGA_HTTP_FIELD(":path", "/index.html")};
static const vega_http_field b2[] = {VEGA_HTTP_FIELD(":authority", "www.example.com"),
                                     VEGA_HTTP_FIELD(":path", "/sample/path")};
static const vega_http_field b4[] = {VEGA_HTTP_FIELD(":authority", "www.example.com"),
                                     VEGA_HTTP_FIELD(":path", "/"),
                                     VEGA_HTTP_FIELD("custom-key", "custom-value")};

#define B1_SECTION "0000 510b 2f69 6e64 6578 2e68 746d 6c"
#define B2_ENCODER                                                                                 \
    "3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d c10c 2f73 616d 706c 652f 7061 7468"
#define B2_SECTION "0381 10 11"
#define B3_ENCODER "4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565"
#define B4_ENCODER "02"
#define B4_SECTION "0500 80 c1 81"
#define B5_ENCODER "810d 6375 7374 6f6d 2d76 616c 7565 32"

/* Table states of the example, oldest first ("abs ref name=value"). */
#define T_B2(r) "0 " r " :authority=www.example.com\n1 " r " :path=/sample/path\nsize=106"
#define T_B3    "0 0 :authority=www.example.com\n1 0 :path=/sample/path\n2 0 custom-key=custom-value\n"
#define T_B4(r) T_B3 "3 " r " :authority=www.example.com\nsize=217"
#define T_B5                                                                                       \
    "1 0 :path=/sample/path\n2 0 custom-key=custom-value\n3 0 :authority=www.example.com\n"        \
    "4 0 custom-key=custom-value2\nsize=215"

static size_t encode(vega_qpack_encoder *e, uint64_t id, const vega_http_field *f, size_t n,
                     uint8_t *out)
{
    vega_ssize k = vega_qpack_encoder_encode(e, id, f, n, out, 512);
    VCHECK(k > 0);
    return (size_t)k;
}

/* B.1: a literal with a static name reference, before any dynamic table exists. */
VTEST(b1_literal_name_reference)
{
    vega_qpack_encoder *e = new_encoder();
    uint8_t out[512];
    size_t n = encode(e, 0, b1, 1, out);
    QT_BYTES(out, n, B1_SECTION);
    VCHECK(!vega_qpack_encoder_want_write(e));
    VCHECK_STR(qt_table(&e->t), "size=0");

    qt_rec r = {0};
    vega_qpack_decoder *d = new_decoder(&r);
    vega_qpack_section s;
    uint8_t in[64];
    size_t len = vtest_unhex(B1_SECTION, in, sizeof in);
    VCHECK_EQ(vega_qpack_decoder_decode(d, 0, in, len, &s), 0);
    VCHECK_STR(qt_section(&s), ":path: /index.html\n");
    VCHECK_EQ(s.size, 5 + 11 + 32);
    VCHECK_EQ(qt_drain_dec(d, out, sizeof out), 0); /* RIC 0: no acknowledgment */
    vega_qpack_decoder_free(d);
    vega_qpack_encoder_free(e);
}

/* B.2-B.5 in sequence, the encoder and the decoder side by side. */
VTEST(b2_to_b5_encoder_and_decoder)
{
    vega_qpack_encoder *e = new_encoder();
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 220, 16), 0);
    qt_rec r = {0};
    vega_qpack_decoder *d = new_decoder(&r);
    uint8_t out[512], es[512], ds[64];
    vega_qpack_section s;

    /* B.2: capacity, two inserts with static name references, a section referencing both
     * post-Base, then the decoder's Section Acknowledgment. */
    size_t n = encode(e, 4, b2, 2, out);
    QT_BYTES(out, n, B2_SECTION);
    size_t en = qt_drain_enc(e, es, sizeof es);
    QT_BYTES(es, en, B2_ENCODER);
    VCHECK_STR(qt_table(&e->t), T_B2("1"));
    VCHECK_EQ(e->known_received, 0);
    VCHECK_EQ(vega_qpack_decoder_read_encoder(d, es, en), 0);
    VCHECK_STR(qt_table(&d->t), T_B2("0"));
    VCHECK_EQ(vega_qpack_decoder_decode(d, 4, out, n, &s), 0);
    VCHECK_STR(qt_section(&s), ":authority: www.example.com\n:path: /sample/path\n");
    size_t dn = qt_drain_dec(d, ds, sizeof ds);
    QT_BYTES(ds, dn, "84");
    VCHECK_EQ(vega_qpack_encoder_read_decoder(e, ds, dn), 0);
    VCHECK_STR(qt_table(&e->t), T_B2("0"));
    VCHECK_EQ(e->known_received, 2);

    /* B.3: a speculative insert with a literal name; the decoder's Insert Count Increment. */
    VCHECK_EQ(vega_qpack_encoder_insert(e, (vega_http_str)VEGA_HTTP_LIT("custom-key"),
                                        (vega_http_str)VEGA_HTTP_LIT("custom-value")),
              0);
    en = qt_drain_enc(e, es, sizeof es);
    QT_BYTES(es, en, B3_ENCODER);
    VCHECK_STR(qt_table(&e->t), T_B3 "size=160");
    VCHECK_EQ(vega_qpack_decoder_read_encoder(d, es, en), 0);
    VCHECK_STR(qt_table(&d->t), T_B3 "size=160");
    dn = qt_drain_dec(d, ds, sizeof ds);
    QT_BYTES(ds, dn, "01");
    VCHECK_EQ(vega_qpack_encoder_read_decoder(e, ds, dn), 0);
    VCHECK_EQ(e->known_received, 3);

    /* B.4: Duplicate of :authority, a section referencing it and custom-key; the encoder
     * stream is delayed, so the decoder blocks, then cancels the stream. */
    VCHECK_EQ(vega_qpack_encoder_insert(e, (vega_http_str)VEGA_HTTP_LIT(":authority"),
                                        (vega_http_str)VEGA_HTTP_LIT("www.example.com")),
              0);
    n = encode(e, 8, b4, 3, out);
    QT_BYTES(out, n, B4_SECTION);
    en = qt_drain_enc(e, es, sizeof es);
    QT_BYTES(es, en, B4_ENCODER);
    /* Entry 2 (custom-key) is referenced once too. */
    VCHECK_STR(qt_table(&e->t), "0 0 :authority=www.example.com\n1 0 :path=/sample/path\n"
                                "2 1 custom-key=custom-value\n3 1 :authority=www.example.com\n"
                                "size=217");
    VCHECK_EQ(vega_qpack_decoder_decode(d, 8, out, n, &s), VEGA_QPACK_BLOCKED);
    VCHECK_EQ(vega_qpack_decoder_blocked_count(d), 1);
    VCHECK_EQ(vega_qpack_decoder_cancel_stream(d, 8), 0);
    VCHECK_EQ(vega_qpack_decoder_blocked_count(d), 0);
    dn = qt_drain_dec(d, ds, sizeof ds);
    QT_BYTES(ds, dn, "48");
    VCHECK_EQ(vega_qpack_encoder_read_decoder(e, ds, dn), 0);
    VCHECK_STR(qt_table(&e->t), T_B4("0"));
    VCHECK_EQ(vega_qpack_decoder_read_encoder(d, es, en), 0);
    VCHECK_STR(qt_table(&d->t), T_B4("0"));
    VCHECK_STR(r.log, ""); /* the cancelled section is never reported */
    /* The Duplicate is then acknowledged by an increment (the example does not show it). */
    dn = qt_drain_dec(d, ds, sizeof ds);
    QT_BYTES(ds, dn, "01");

    /* B.5: an insert with a dynamic name reference evicts the oldest entry. */
    VCHECK_EQ(vega_qpack_encoder_insert(e, (vega_http_str)VEGA_HTTP_LIT("custom-key"),
                                        (vega_http_str)VEGA_HTTP_LIT("custom-value2")),
              0);
    en = qt_drain_enc(e, es, sizeof es);
    QT_BYTES(es, en, B5_ENCODER);
    VCHECK_STR(qt_table(&e->t), T_B5);
    VCHECK_EQ(vega_qpack_decoder_read_encoder(d, es, en), 0);
    VCHECK_STR(qt_table(&d->t), T_B5);
    vega_qpack_decoder_free(d);
    vega_qpack_encoder_free(e);
}

/* B.4's section decoded by a decoder that already has the Duplicate: not blocked, and it is
 * acknowledged. B.2's section arriving before its encoder stream: blocked, then reported. */
VTEST(b4_decoded_and_b2_unblocked)
{
    qt_rec r = {0};
    vega_qpack_decoder *d = new_decoder(&r);
    uint8_t in[512], ds[64];
    vega_qpack_section s;
    size_t n = vtest_unhex(B2_SECTION, in, sizeof in);
    VCHECK_EQ(vega_qpack_decoder_decode(d, 4, in, n, &s), VEGA_QPACK_BLOCKED);
    VCHECK(!vega_qpack_decoder_is_unblocked(d, 4));
    VCHECK_EQ(vega_qpack_decoder_resume(d, 4, &s), -EINVAL);
    /* The encoder stream in two pieces: the report comes once both entries are in. */
    size_t en = vtest_unhex(B2_ENCODER, in, sizeof in);
    VCHECK_EQ(vega_qpack_decoder_read_encoder(d, in, 20), 0);
    VCHECK_STR(r.log, "");
    VCHECK_EQ(vega_qpack_decoder_read_encoder(d, in + 20, en - 20), 0);
    VCHECK_STR(r.log, "u4 ");
    VCHECK(vega_qpack_decoder_is_unblocked(d, 4));
    VCHECK_EQ(vega_qpack_decoder_resume(d, 4, &s), 0);
    VCHECK_STR(qt_section(&s), ":authority: www.example.com\n:path: /sample/path\n");
    VCHECK_EQ(vega_qpack_decoder_resume(d, 4, &s), -EINVAL);
    size_t dn = qt_drain_dec(d, ds, sizeof ds);
    QT_BYTES(ds, dn, "84");

    n = vtest_unhex(B3_ENCODER B4_ENCODER, in, sizeof in);
    VCHECK_EQ(vega_qpack_decoder_read_encoder(d, in, n), 0);
    n = vtest_unhex(B4_SECTION, in, sizeof in);
    VCHECK_EQ(vega_qpack_decoder_decode(d, 8, in, n, &s), 0);
    VCHECK_STR(qt_section(&s), ":authority: www.example.com\n:path: /\ncustom-key: custom-value\n");
    dn = qt_drain_dec(d, ds, sizeof ds);
    QT_BYTES(ds, dn, "88"); /* RIC 4 = the Insert Count: no increment needed */
    n = vtest_unhex(B5_ENCODER, in, sizeof in);
    VCHECK_EQ(vega_qpack_decoder_read_encoder(d, in, n), 0);
    VCHECK_STR(qt_table(&d->t), T_B5);
    dn = qt_drain_dec(d, ds, sizeof ds);
    QT_BYTES(ds, dn, "01");
    vega_qpack_decoder_free(d);
}

/* The whole example's encoder stream fed one byte at a time gives the same tables. */
VTEST(encoder_stream_byte_by_byte)
{
    qt_rec r = {0};
    vega_qpack_decoder *d = new_decoder(&r);
    uint8_t in[512];
    size_t n = vtest_unhex(B2_ENCODER B3_ENCODER B4_ENCODER B5_ENCODER, in, sizeof in);
    for (size_t i = 0; i < n; i++)
        VCHECK_EQ(vega_qpack_decoder_read_encoder(d, in + i, 1), 0);
    VCHECK_STR(qt_table(&d->t), T_B5);
    vega_qpack_decoder_free(d);
    /* And split at every point. */
    for (size_t cut = 0; cut <= n; cut++) {
        d = new_decoder(&r);
        VCHECK_EQ(vega_qpack_decoder_read_encoder(d, in, cut), 0);
        VCHECK_EQ(vega_qpack_decoder_read_encoder(d, in + cut, n - cut), 0);
        VCHECK_STR(qt_table(&d->t), T_B5);
        vega_qpack_decoder_free(d);
    }
}

/* §4.5.1.1's example: a 100-byte table (MaxEntries 3) with 10 inserts: an encoded value of 4
 * is a Required Insert Count of 9. */
VTEST(required_insert_count_example)
{
    vega_qpack_decoder_opts o;
    vega_qpack_decoder_opts_init(&o);
    o.max_table_capacity = 100;
    vega_qpack_decoder *d;
    VCHECK_EQ(vega_qpack_decoder_new(&d, NULL, &o, NULL), 0);
    uint8_t in[4] = {0x3f, 100 - 31}; /* Set Dynamic Table Capacity = 100 */
    VCHECK_EQ(vega_qpack_decoder_read_encoder(d, in, 2), 0);
    for (int i = 0; i < 10; i++) {
        uint8_t ins[3] = {0x40, 0x00, 0x00}; /* empty name, empty value: 32 bytes */
        VCHECK_EQ(vega_qpack_decoder_read_encoder(d, ins, 2), 0);
    }
    VCHECK_EQ(vega_qpack_decoder_insert_count(d), 10);
    uint64_t ric, base;
    uint8_t pre[2] = {4, 0};
    VCHECK_EQ(vega__qp_decode_prefix(d, pre, 2, &ric, &base), 2);
    VCHECK_EQ(ric, 9);
    VCHECK_EQ(base, 9);
    /* §4.5.1.2's example: RIC 9, Sign 1, Delta Base 2: Base 6. */
    pre[1] = 0x82;
    VCHECK_EQ(vega__qp_decode_prefix(d, pre, 2, &ric, &base), 2);
    VCHECK_EQ(base, 6);
    /* The encoder side of the same wrap. */
    VCHECK_EQ(vega__qp_ric_encode(9, 3), 4);
    VCHECK_EQ(vega__qp_ric_encode(0, 3), 0);
    vega_qpack_decoder_free(d);
}
