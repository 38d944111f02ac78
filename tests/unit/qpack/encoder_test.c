/* SPDX-License-Identifier: MIT */
/* The QPACK encoder (lib/qpack/encoder.c, encode_section.c): no dynamic table before the
 * peer's settings (RFC 9204 §3.2.3), the blocked-stream budget (§2.1.2), entries referenced by
 * unacknowledged sections never evicted (§2.1.1), never-indexed literals (§7.1.3), the decoder
 * stream's errors (§4.4), NOBUF leaving nothing changed, and round trips against the decoder. */
#include "qp_test.h"

static vega_qpack_encoder *enc(uint64_t cap, uint64_t blocked)
{
    vega_qpack_encoder_opts o;
    vega_qpack_encoder_opts_init(&o);
    o.max_table_capacity = cap;
    o.max_blocked_streams = blocked;
    vega_qpack_encoder *e;
    VCHECK_EQ(vega_qpack_encoder_new(&e, &o), 0);
    return e;
}

static vega_qpack_decoder *dec(void)
{
    vega_qpack_decoder *d;
    VCHECK_EQ(vega_qpack_decoder_new(&d, NULL, NULL, NULL), 0);
    return d;
}

/* Encodes, moves the encoder stream to d, decodes and checks the fields came back. */
static size_t roundtrip(vega_qpack_encoder *e, vega_qpack_decoder *d, uint64_t id,
                        const vega_http_field *f, size_t n, uint8_t *out)
{
    vega_ssize k = vega_qpack_encoder_encode(e, id, f, n, out, 4096);
    VCHECK(k > 0);
    static uint8_t es[8192];
    size_t en = qt_drain_enc(e, es, sizeof es);
    VCHECK_EQ(vega_qpack_decoder_read_encoder(d, es, en), 0);
    vega_qpack_section s;
    VCHECK_EQ(vega_qpack_decoder_decode(d, id, out, (size_t)k, &s), 0);
    VCHECK_EQ(s.count, n);
    for (size_t i = 0; i < n; i++) {
        VCHECK(s.fields[i].name.len == f[i].name.len &&
               memcmp(s.fields[i].name.ptr, f[i].name.ptr, f[i].name.len) == 0);
        VCHECK(s.fields[i].value.len == f[i].value.len &&
               memcmp(s.fields[i].value.ptr, f[i].value.ptr, f[i].value.len) == 0);
    }
    return (size_t)k;
}

static void ack(vega_qpack_encoder *e, vega_qpack_decoder *d)
{
    uint8_t ds[256];
    size_t n = qt_drain_dec(d, ds, sizeof ds);
    VCHECK_EQ(vega_qpack_encoder_read_decoder(e, ds, n), 0);
}

static const vega_http_field req[] = {VEGA_HTTP_FIELD(":method", "GET"),
                                      VEGA_HTTP_FIELD(":scheme", "https"),
                                      VEGA_HTTP_FIELD(":authority", "example.com"),
                                      VEGA_HTTP_FIELD(":path", "/index.html"),
                                      VEGA_HTTP_FIELD("user-agent", "vega/0.1"),
                                      VEGA_HTTP_FIELD("accept-language", "fr")};

/* §3.2.3: "the maximum table capacity is 0 until the encoder processes a SETTINGS frame with a
 * non-zero value": static table and literals, no encoder instruction at all. */
VTEST(static_only_until_settings)
{
    vega_qpack_encoder *e = enc(0, 0);
    vega_qpack_decoder *d = dec();
    uint8_t out[4096];
    roundtrip(e, d, 0, req, 6, out);
    VCHECK_EQ(out[0], 0); /* Required Insert Count 0 */
    VCHECK(!vega_qpack_encoder_want_write(e));
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 0, 100), 0);
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 0, 100), -EINVAL);
    roundtrip(e, d, 4, req, 6, out);
    VCHECK(!vega_qpack_encoder_want_write(e));
    VCHECK_EQ(vega_qpack_encoder_insert(e, req[4].name, req[4].value), VEGA_ERR_FULL);
    vega_qpack_encoder_free(e);
    vega_qpack_decoder_free(d);
}

/* Inserted entries make the second request smaller; both decode the same. */
VTEST(dynamic_table_reuse)
{
    vega_qpack_encoder *e = enc(0, 0);
    vega_qpack_decoder *d = dec();
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 4096, 16), 0);
    uint8_t out[4096];
    size_t first = roundtrip(e, d, 0, req, 6, out);
    VCHECK(e->t.inserted >= 3);
    uint64_t inserted = e->t.inserted;
    ack(e, d);
    size_t second = roundtrip(e, d, 4, req, 6, out);
    VCHECK_EQ(e->t.inserted, inserted); /* nothing new */
    VCHECK(second <= first);
    VCHECK(second <= 2 + 6 * 2);
    /* Only acknowledged entries were referenced: the stream cannot block. */
    VCHECK(e->secs[e->nsecs - 1].ric <= e->known_received);
    ack(e, d);
    VCHECK_EQ(e->nsecs, 0);
    vega_qpack_encoder_free(e);
    vega_qpack_decoder_free(d);
}

/* §7.1.3: sensitive values are literals with the N bit, never inserted; long cookies are not
 * inserted either (they rarely repeat) but need no N bit. */
VTEST(sensitive_fields)
{
    vega_qpack_encoder *e = enc(0, 0);
    vega_qpack_decoder *d = dec();
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 4096, 16), 0);
    static const vega_http_field f[] = {
        VEGA_HTTP_FIELD("authorization", "Basic dXNlcjpwYXNz"),
        VEGA_HTTP_FIELD("proxy-authorization", "Bearer abc"),
        VEGA_HTTP_FIELD("cookie", "sid=1234"),
        VEGA_HTTP_FIELD("cookie", "tracking=0123456789abcdefghij"),
    };
    uint8_t out[4096];
    vega_ssize k = vega_qpack_encoder_encode(e, 0, f, 4, out, sizeof out);
    VCHECK(k > 0);
    VCHECK_EQ(e->t.inserted, 0);
    vega_qpack_section s;
    VCHECK_EQ(vega_qpack_decoder_decode(d, 0, out, (size_t)k, &s), 0);
    VCHECK_STR(qt_section(&s), "!authorization: Basic dXNlcjpwYXNz\n!proxy-authorization: Bearer "
                               "abc\n!cookie: sid=1234\ncookie: tracking=0123456789abcdefghij\n");
    vega_qpack_encoder_free(e);
    vega_qpack_decoder_free(d);
}

/* §2.1.2: with no blocked streams allowed, new entries are inserted but only referenced once
 * acknowledged. */
VTEST(no_blocking_allowed)
{
    vega_qpack_encoder *e = enc(0, 0);
    vega_qpack_decoder *d = dec();
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 4096, 0), 0);
    uint8_t out[4096];
    roundtrip(e, d, 0, req, 6, out);
    VCHECK_EQ(out[0], 0); /* RIC 0: no reference to the unacknowledged inserts */
    VCHECK(e->t.inserted > 0);
    ack(e, d); /* an Insert Count Increment */
    VCHECK_EQ(e->known_received, e->t.inserted);
    roundtrip(e, d, 4, req, 6, out);
    VCHECK(out[0] != 0); /* now referenced */
    vega_qpack_encoder_free(e);
    vega_qpack_decoder_free(d);
}

/* §2.1.2: "An encoder MUST limit the number of streams that could become blocked to the value of
 * SETTINGS_QPACK_BLOCKED_STREAMS at all times." With 1: the second stream stays literal. */
VTEST(blocked_stream_budget)
{
    vega_qpack_encoder *e = enc(0, 0);
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 4096, 1), 0);
    uint8_t out[4096];
    static const vega_http_field a[] = {VEGA_HTTP_FIELD("x-a", "1")};
    static const vega_http_field b[] = {VEGA_HTTP_FIELD("x-b", "2")};
    VCHECK(vega_qpack_encoder_encode(e, 0, a, 1, out, sizeof out) > 0);
    VCHECK(out[0] != 0); /* stream 0 may block */
    VCHECK(vega_qpack_encoder_encode(e, 0, b, 1, out, sizeof out) > 0);
    VCHECK(out[0] != 0); /* the same stream again: still one blocked stream */
    VCHECK(vega_qpack_encoder_encode(e, 4, a, 1, out, sizeof out) > 0);
    VCHECK_EQ(out[0], 0); /* a second stream would be a second: literal */
    bool mine;
    VCHECK_EQ(vega__qp_enc_blocking_streams(e, 4, &mine), 1);
    vega_qpack_encoder_free(e);
}

/* §2.1.1: an entry referenced by an unacknowledged section is never evicted: inserts that would
 * need it gone are not made (the line stays literal) until the acknowledgment. */
VTEST(no_eviction_of_referenced)
{
    vega_qpack_encoder_opts o;
    vega_qpack_encoder_opts_init(&o);
    o.max_table_capacity = 100;
    vega_qpack_encoder *e;
    VCHECK_EQ(vega_qpack_encoder_new(&e, &o), 0);
    vega_qpack_decoder_opts dopts;
    vega_qpack_decoder_opts_init(&dopts);
    dopts.max_table_capacity = 100;
    vega_qpack_decoder *d;
    VCHECK_EQ(vega_qpack_decoder_new(&d, NULL, &dopts, NULL), 0);
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 100, 16), 0);
    uint8_t out[4096];
    static const vega_http_field a[] = {VEGA_HTTP_FIELD("x-a", "aaaaaaaaaaaaa")}; /* 48 bytes */
    static const vega_http_field b[] = {VEGA_HTTP_FIELD("x-b", "bbbbbbbbbbbbb")};
    static const vega_http_field c[] = {VEGA_HTTP_FIELD("x-c", "ccccccccccccc")};
    roundtrip(e, d, 0, a, 1, out);
    roundtrip(e, d, 4, b, 1, out);
    VCHECK_EQ(e->t.inserted, 2);
    /* Table full (96 of 100), both referenced and unacknowledged: c cannot go in. */
    roundtrip(e, d, 8, c, 1, out);
    VCHECK_EQ(e->t.inserted, 2);
    VCHECK_EQ(e->t.dropped, 0);
    ack(e, d); /* all three sections acknowledged */
    roundtrip(e, d, 12, c, 1, out);
    VCHECK_EQ(e->t.inserted, 3);
    VCHECK_EQ(e->t.dropped, 1);
    VCHECK_EQ(d->t.dropped, 1);
    vega_qpack_encoder_free(e);
    vega_qpack_decoder_free(d);
}

/* §4.4: decoder-stream errors. */
VTEST(decoder_stream_errors)
{
    vega_qpack_encoder *e = enc(0, 0);
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 4096, 16), 0);
    /* §4.4.1: a Section Acknowledgment with nothing to acknowledge. */
    VCHECK_EQ(vega_qpack_encoder_read_decoder(e, (const uint8_t *)"\x80", 1), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_qpack_encoder_get_error(e, NULL), VEGA_QPACK_DECODER_STREAM_ERROR);
    VCHECK_EQ(vega_qpack_encoder_read_decoder(e, (const uint8_t *)"\x40", 1), VEGA_ERR_PROTO);
    vega_qpack_encoder_free(e);
    /* §4.4.3: an increment of zero, or past what was sent. */
    e = enc(0, 0);
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 4096, 16), 0);
    VCHECK_EQ(vega_qpack_encoder_read_decoder(e, (const uint8_t *)"\x00", 1), VEGA_ERR_PROTO);
    vega_qpack_encoder_free(e);
    e = enc(0, 0);
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 4096, 16), 0);
    VCHECK_EQ(vega_qpack_encoder_insert(e, req[4].name, req[4].value), 0);
    VCHECK_EQ(vega_qpack_encoder_read_decoder(e, (const uint8_t *)"\x02", 1), VEGA_ERR_PROTO);
    vega_qpack_encoder_free(e);
    /* Split anywhere: a Stream Cancellation of stream 300 (7f ed 01) a byte at a time, for a
     * stream the encoder does not know (fine), then an increment. */
    e = enc(0, 0);
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 4096, 16), 0);
    VCHECK_EQ(vega_qpack_encoder_insert(e, req[4].name, req[4].value), 0);
    const uint8_t in[] = {0x7f, 0xed, 0x01, 0x01};
    for (size_t i = 0; i < sizeof in; i++)
        VCHECK_EQ(vega_qpack_encoder_read_decoder(e, in + i, 1), 0);
    VCHECK_EQ(e->known_received, 1);
    vega_qpack_encoder_free(e);
}

/* VEGA_ERR_NOBUF below the bound, with nothing changed; the bound always suffices. */
VTEST(nobuf_changes_nothing)
{
    vega_qpack_encoder *e = enc(0, 0);
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 4096, 16), 0);
    size_t bound = vega_qpack_encode_bound(req, 6);
    uint8_t out[4096];
    VCHECK_EQ(vega_qpack_encoder_encode(e, 0, req, 6, out, bound - 1), VEGA_ERR_NOBUF);
    VCHECK_EQ(e->t.inserted, 0);
    VCHECK(!vega_qpack_encoder_want_write(e));
    VCHECK_EQ(e->nsecs, 0);
    vega_ssize k = vega_qpack_encoder_encode(e, 0, req, 6, out, bound);
    VCHECK(k > 0 && (size_t)k <= bound);
    VCHECK_EQ(vega_qpack_encoder_encode(e, 1ull << 62, req, 6, out, bound), -EINVAL);
    vega_http_field bad = {{NULL, 3}, {"x", 1}};
    VCHECK_EQ(vega_qpack_encoder_encode(e, 0, &bad, 1, out, sizeof out), -EINVAL);
    VCHECK_EQ(vega_qpack_encode_bound(NULL, 0), 20);
    vega_qpack_encoder_free(e);
}

/* Sections with dynamic references are remembered only up to max_unacked_sections. */
VTEST(unacked_section_limit)
{
    vega_qpack_encoder_opts o;
    vega_qpack_encoder_opts_init(&o);
    o.max_unacked_sections = 2;
    vega_qpack_encoder *e;
    VCHECK_EQ(vega_qpack_encoder_new(&e, &o), 0);
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 4096, 16), 0);
    uint8_t out[4096];
    for (uint64_t id = 0; id < 20; id += 4)
        VCHECK(vega_qpack_encoder_encode(e, id, req, 6, out, sizeof out) > 0);
    VCHECK_EQ(e->nsecs, 2);
    VCHECK_EQ(out[0], 0); /* the last one: static table and literals */
    vega_qpack_encoder_free(e);
}

/* The Required Insert Count wraps modulo 2 * MaxEntries (§4.5.1.1) on a long connection: a
 * small table (MaxEntries 3) and many inserts, each section referencing the newest entry. */
VTEST(required_insert_count_wraps)
{
    vega_qpack_encoder_opts eo;
    vega_qpack_encoder_opts_init(&eo);
    eo.max_table_capacity = 100;
    vega_qpack_encoder *e;
    VCHECK_EQ(vega_qpack_encoder_new(&e, &eo), 0);
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 100, 16), 0);
    vega_qpack_decoder_opts dopts;
    vega_qpack_decoder_opts_init(&dopts);
    dopts.max_table_capacity = 100;
    vega_qpack_decoder *d;
    VCHECK_EQ(vega_qpack_decoder_new(&d, NULL, &dopts, NULL), 0);
    uint8_t out[4096];
    for (int i = 0; i < 40; i++) {
        char v[8];
        snprintf(v, sizeof v, "%d", i);
        vega_http_field f[] = {{VEGA_HTTP_LIT("n"), {v, strlen(v)}}}; /* 34-35 bytes each */
        roundtrip(e, d, (uint64_t)i * 4, f, 1, out);
        ack(e, d);
    }
    VCHECK_EQ(e->t.inserted, 40); /* the wire value wrapped 6 times (MaxEntries 3) */
    VCHECK_EQ(d->t.inserted, e->t.inserted);
    vega_qpack_encoder_free(e);
    vega_qpack_decoder_free(d);
}

static void same(const vega_qpack_section *s, const vega_http_field *f, size_t n)
{
    VCHECK_EQ(s->count, n);
    for (size_t i = 0; i < n; i++)
        VCHECK(s->fields[i].name.len == f[i].name.len &&
               memcmp(s->fields[i].name.ptr, f[i].name.ptr, f[i].name.len) == 0 &&
               s->fields[i].value.len == f[i].value.len &&
               (!f[i].value.len ||
                memcmp(s->fields[i].value.ptr, f[i].value.ptr, f[i].value.len) == 0));
}

/* Random field lists through an encoder and a decoder whose encoder stream arrives late (the
 * sections block and resume), with random acknowledgments. */
VTEST(random_roundtrip)
{
    uint64_t rng = 99;
    vega_qpack_encoder *e = enc(0, 0);
    VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 4096, 100), 0);
    qt_rec r = {0};
    vega_qpack_decoder *d;
    VCHECK_EQ(vega_qpack_decoder_new(&d, &qt_cbs, NULL, &r), 0);
    static const char *const names[] = {"a", "bb", "accept", "x-long-name", ":path", "cookie"};
    static const char *const values[] = {"", "1", "text/html", "/", "a much longer value here"};
    for (int round = 0; round < 300; round++) {
        vega_http_field f[8];
        size_t n = vega__rand_below(&rng, 8);
        for (size_t i = 0; i < n; i++) {
            const char *nm = names[vega__rand_below(&rng, 6)];
            const char *vl = values[vega__rand_below(&rng, 5)];
            f[i] = (vega_http_field){{nm, strlen(nm)}, {vl, strlen(vl)}};
        }
        uint64_t id = (uint64_t)round * 4;
        static uint8_t out[4096], es[8192];
        vega_ssize k = vega_qpack_encoder_encode(e, id, f, n, out, sizeof out);
        VCHECK(k > 0);
        vega_qpack_section s;
        bool late = vega__rand_below(&rng, 2);
        size_t en = qt_drain_enc(e, es, sizeof es);
        if (!late)
            VCHECK_EQ(vega_qpack_decoder_read_encoder(d, es, en), 0);
        int rc = vega_qpack_decoder_decode(d, id, out, (size_t)k, &s);
        if (rc == 0)
            same(&s, f, n); /* a section is valid until the next call on the decoder */
        if (late) {
            r.len = 0;
            r.log[0] = 0;
            VCHECK_EQ(vega_qpack_decoder_read_encoder(d, es, en), 0);
            if (rc == VEGA_QPACK_BLOCKED) {
                VCHECK(r.len > 0);
                rc = vega_qpack_decoder_resume(d, id, &s);
                VCHECK_EQ(rc, 0);
                same(&s, f, n);
            }
        }
        VCHECK_EQ(rc, 0);
        if (vega__rand_below(&rng, 3) == 0)
            ack(e, d);
    }
    ack(e, d);
    VCHECK_EQ(e->nsecs, 0);
    vega_qpack_encoder_free(e);
    vega_qpack_decoder_free(d);
}
