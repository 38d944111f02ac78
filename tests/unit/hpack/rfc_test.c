/* SPDX-License-Identifier: MIT */
/* HPACK against every example of RFC 7541 Appendix C: each block decoded (whole, and with the
 * dynamic table checked after it) and encoded byte for byte by an encoder told to make the
 * same choices (C.2 single representations, C.3/C.4 requests, C.5/C.6 responses with a
 * 256-byte table and its evictions). */
#include <vega/hpack.h>

#include "vtest.h"

#define F(n, v, i)                                                                                 \
    {                                                                                              \
        {n, sizeof(n) - 1}, {v, sizeof(v) - 1}, i                                                  \
    }
#define Y VEGA_HPACK_INDEX_YES

struct ex {
    const char *hex;            /* the block */
    vega_hpack_field fields[8]; /* the list */
    size_t n;
    const char *table[8]; /* "name: value" newest first, as the RFC prints it */
    size_t table_size;
};

struct log {
    char s[8][256];
    vega_hpack_index idx[8];
    size_t n;
};

static int on_field(void *ud, const vega_hpack_field *f)
{
    struct log *l = ud;
    VCHECK(l->n < 8);
    snprintf(l->s[l->n], sizeof l->s[0], "%.*s: %.*s", (int)f->name.len, f->name.ptr,
             (int)f->value.len, f->value.ptr);
    l->idx[l->n++] = f->index;
    return 0;
}

static void decode_seq(const struct ex *seq, size_t n, size_t table)
{
    vega_hpack_decoder_opts o = {.max_table_size = table};
    vega_hpack_decoder *d;
    VCHECK_EQ(vega_hpack_decoder_new(&d, &o), 0);
    for (size_t i = 0; i < n; i++) {
        const struct ex *x = &seq[i];
        uint8_t in[512];
        size_t len = vtest_unhex(x->hex, in, sizeof in);
        struct log l = {0};
        VCHECK_EQ(vega_hpack_decode(d, in, len, on_field, &l), 0);
        VCHECK_EQ(l.n, x->n);
        for (size_t k = 0; k < x->n; k++) {
            char want[256];
            snprintf(want, sizeof want, "%s: %s", x->fields[k].name.ptr, x->fields[k].value.ptr);
            VCHECK_STR(l.s[k], want);
            if (x->fields[k].index != Y)
                VCHECK_EQ(l.idx[k], x->fields[k].index);
        }
        VCHECK_EQ(vega_hpack_decoder_table_size(d), x->table_size);
        size_t tl = 0;
        while (tl < 8 && x->table[tl])
            tl++;
        VCHECK_EQ(vega_hpack_decoder_table_len(d), tl);
        for (size_t k = 0; k < tl; k++) {
            vega_hpack_field f;
            VCHECK_EQ(vega_hpack_decoder_table_get(d, k, &f), 0);
            char got[256];
            snprintf(got, sizeof got, "%.*s: %.*s", (int)f.name.len, f.name.ptr, (int)f.value.len,
                     f.value.ptr);
            VCHECK_STR(got, x->table[k]);
        }
        vega_hpack_field f;
        VCHECK_EQ(vega_hpack_decoder_table_get(d, tl, &f), -ENOENT);
    }
    vega_hpack_decoder_free(d);
}

static void encode_seq(const struct ex *seq, size_t n, size_t table, vega_hpack_huffman huff)
{
    vega_hpack_encoder_opts o = {.max_table_size = table, .huffman = huff};
    vega_hpack_encoder *e;
    VCHECK_EQ(vega_hpack_encoder_new(&e, &o), 0);
    for (size_t i = 0; i < n; i++) {
        const struct ex *x = &seq[i];
        uint8_t want[512], out[1024];
        size_t wl = vtest_unhex(x->hex, want, sizeof want);
        size_t bound = vega_hpack_encode_bound(e, x->fields, x->n);
        VCHECK(bound <= sizeof out);
        /* One byte short of the bound: refused, nothing changes. */
        VCHECK_EQ(vega_hpack_encode(e, out, bound - 1, x->fields, x->n), VEGA_ERR_NOBUF);
        vega_ssize k = vega_hpack_encode(e, out, sizeof out, x->fields, x->n);
        VCHECK_EQ(k, (vega_ssize)wl);
        VCHECK(memcmp(out, want, wl) == 0);
        VCHECK_EQ(vega_hpack_encoder_table_size(e), x->table_size);
        for (size_t t = 0; t < 8 && x->table[t]; t++) {
            vega_hpack_field f;
            VCHECK_EQ(vega_hpack_encoder_table_get(e, t, &f), 0);
            char got[256];
            snprintf(got, sizeof got, "%.*s: %.*s", (int)f.name.len, f.name.ptr, (int)f.value.len,
                     f.value.ptr);
            VCHECK_STR(got, x->table[t]);
        }
    }
    vega_hpack_encoder_free(e);
}

/* ---- C.2: one representation each, on a fresh table ---- */

static const struct ex c2[] = {
    /* C.2.1 Literal Header Field with Indexing */
    {"400a637573746f6d2d6b65790d637573746f6d2d686561646572",
     {F("custom-key", "custom-header", Y)},
     1,
     {"custom-key: custom-header"},
     55},
    /* C.2.2 Literal Header Field without Indexing */
    {"040c2f73616d706c652f70617468", {F(":path", "/sample/path", VEGA_HPACK_INDEX_NO)}, 1, {0}, 0},
    /* C.2.3 Literal Header Field Never Indexed */
    {"100870617373776f726406736563726574",
     {F("password", "secret", VEGA_HPACK_INDEX_NEVER)},
     1,
     {0},
     0},
    /* C.2.4 Indexed Header Field */
    {"82", {F(":method", "GET", Y)}, 1, {0}, 0},
};

VTEST(c2_decode)
{
    for (size_t i = 0; i < sizeof c2 / sizeof c2[0]; i++)
        decode_seq(&c2[i], 1, 0);
}

VTEST(c2_encode)
{
    for (size_t i = 0; i < sizeof c2 / sizeof c2[0]; i++)
        encode_seq(&c2[i], 1, 0, VEGA_HPACK_HUFFMAN_NEVER);
}

/* ---- C.3 / C.4: requests ---- */

#define REQ1                                                                                       \
    {F(":method", "GET", Y), F(":scheme", "http", Y), F(":path", "/", Y),                          \
     F(":authority", "www.example.com", Y)},                                                       \
        4, {":authority: www.example.com"}, 57
#define REQ2                                                                                       \
    {F(":method", "GET", Y), F(":scheme", "http", Y), F(":path", "/", Y),                          \
     F(":authority", "www.example.com", Y), F("cache-control", "no-cache", Y)},                    \
        5, {"cache-control: no-cache", ":authority: www.example.com"}, 110
#define REQ3                                                                                       \
    {F(":method", "GET", Y), F(":scheme", "https", Y), F(":path", "/index.html", Y),               \
     F(":authority", "www.example.com", Y), F("custom-key", "custom-value", Y)},                   \
        5, {"custom-key: custom-value", "cache-control: no-cache", ":authority: www.example.com"}, \
        164

static const struct ex c3[] = {
    {"828684410f7777772e6578616d706c652e636f6d", REQ1},
    {"828684be58086e6f2d6361636865", REQ2},
    {"828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565", REQ3},
};

static const struct ex c4[] = {
    {"828684418cf1e3c2e5f23a6ba0ab90f4ff", REQ1},
    {"828684be5886a8eb10649cbf", REQ2},
    {"828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf", REQ3},
};

VTEST(c3_requests_decode)
{
    decode_seq(c3, 3, 0);
}

VTEST(c3_requests_encode)
{
    encode_seq(c3, 3, 0, VEGA_HPACK_HUFFMAN_NEVER);
}

VTEST(c4_requests_huffman_decode)
{
    decode_seq(c4, 3, 0);
}

VTEST(c4_requests_huffman_encode)
{
    encode_seq(c4, 3, 0, VEGA_HPACK_HUFFMAN_ALWAYS);
    /* Every Huffman string there is shorter than its raw form: AUTO makes the same bytes. */
    encode_seq(c4, 3, 0, VEGA_HPACK_HUFFMAN_AUTO);
}

/* ---- C.5 / C.6: responses, SETTINGS_HEADER_TABLE_SIZE 256 ---- */

#define D1     "Mon, 21 Oct 2013 20:13:21 GMT"
#define D2     "Mon, 21 Oct 2013 20:13:22 GMT"
#define LOC    "https://www.example.com"
#define COOKIE "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
#define RESP1                                                                                      \
    {F(":status", "302", Y), F("cache-control", "private", Y), F("date", D1, Y),                   \
     F("location", LOC, Y)},                                                                       \
        4, {"location: " LOC, "date: " D1, "cache-control: private", ":status: 302"}, 222
#define RESP2                                                                                      \
    {F(":status", "307", Y), F("cache-control", "private", Y), F("date", D1, Y),                   \
     F("location", LOC, Y)},                                                                       \
        4, {":status: 307", "location: " LOC, "date: " D1, "cache-control: private"}, 222
#define RESP3                                                                                      \
    {F(":status", "200", Y), F("cache-control", "private", Y), F("date", D2, Y),                   \
     F("location", LOC, Y),  F("content-encoding", "gzip", Y), F("set-cookie", COOKIE, Y)},        \
        6, {"set-cookie: " COOKIE, "content-encoding: gzip", "date: " D2}, 215

static const struct ex c5[] = {
    {"4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d"
     "546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
     RESP1},
    {"4803333037c1c0bf", RESP2},
    {"88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f"
     "6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b"
     "2076657273696f6e3d31",
     RESP3},
};

static const struct ex c6[] = {
    {"488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c7"
     "8f0b97c8e9ae82ae43d3",
     RESP1},
    {"4883640effc1c0bf", RESP2},
    {"88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335"
     "dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
     RESP3},
};

VTEST(c5_responses_decode)
{
    decode_seq(c5, 3, 256);
}

VTEST(c5_responses_encode)
{
    encode_seq(c5, 3, 256, VEGA_HPACK_HUFFMAN_NEVER);
}

VTEST(c6_responses_huffman_decode)
{
    decode_seq(c6, 3, 256);
}

VTEST(c6_responses_huffman_encode)
{
    encode_seq(c6, 3, 256, VEGA_HPACK_HUFFMAN_ALWAYS);
}

/* AUTO differs from the RFC only where Huffman is not shorter: "307" is 3 bytes either way
 * (640eff), so it goes raw (4803333037) and the rest of C.6.2 is the same. */
VTEST(c6_auto_huffman_only_when_shorter)
{
    vega_hpack_encoder_opts o = {.max_table_size = 256, .huffman = VEGA_HPACK_HUFFMAN_AUTO};
    vega_hpack_encoder *e;
    VCHECK_EQ(vega_hpack_encoder_new(&e, &o), 0);
    uint8_t out[1024], want[512];
    size_t wl = vtest_unhex(c6[0].hex, want, sizeof want);
    VCHECK_EQ(vega_hpack_encode(e, out, sizeof out, c6[0].fields, c6[0].n), (vega_ssize)wl);
    VCHECK(memcmp(out, want, wl) == 0);
    wl = vtest_unhex("4803333037c1c0bf", want, sizeof want);
    VCHECK_EQ(vega_hpack_encode(e, out, sizeof out, c6[1].fields, c6[1].n), (vega_ssize)wl);
    VCHECK(memcmp(out, want, wl) == 0);
    vega_hpack_encoder_free(e);
}

/* Each block fed to a fresh decoder in every prefix: a cut block is malformed, never read
 * past its end (ASan watches), and the decoder refuses everything after. */
VTEST(truncated_blocks_are_malformed)
{
    const struct ex *all[] = {c3, c4, c5, c6};
    for (size_t s = 0; s < 4; s++) {
        for (size_t i = 0; i < 3; i++) {
            uint8_t in[512];
            size_t len = vtest_unhex(all[s][i].hex, in, sizeof in);
            for (size_t cut = 1; cut < len; cut++) {
                vega_hpack_decoder_opts o = {.max_table_size = s >= 2 ? 256 : 0};
                vega_hpack_decoder *d;
                VCHECK_EQ(vega_hpack_decoder_new(&d, &o), 0);
                /* Replay the earlier blocks so indices into the table resolve. */
                for (size_t j = 0; j < i; j++) {
                    uint8_t p[512];
                    size_t pl = vtest_unhex(all[s][j].hex, p, sizeof p);
                    VCHECK_EQ(vega_hpack_decode(d, p, pl, NULL, NULL), 0);
                }
                uint8_t *cp = malloc(cut);
                memcpy(cp, in, cut);
                int rc = vega_hpack_decode(d, cp, cut, NULL, NULL);
                free(cp);
                /* A cut exactly between two representations is a valid shorter block. */
                if (rc != 0) {
                    VCHECK_EQ(rc, VEGA_ERR_HPACK_DECODE);
                    VCHECK_EQ(vega_hpack_decode(d, in, len, NULL, NULL), VEGA_ERR_HPACK_DECODE);
                }
                vega_hpack_decoder_free(d);
            }
        }
    }
}
