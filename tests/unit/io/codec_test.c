/* SPDX-License-Identifier: MIT */
/* Framed codecs: sans-I/O encoding, round trips of 10,000 random frames and lines through a
 * faulty duplex under several seeds, limits, truncation, lossless timeouts and cancellation,
 * and real TCP sockets and pipes. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vega/codec.h>
#include <vega/io.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/test.h>

#include "vtest.h"

#define DL(ms) vega_deadline_in_ms(ms)

static long scaled(long n)
{
    const char *s = getenv("VEGA_TEST_SCALE");
    long div = s ? atol(s) : 1;
    if (div < 1)
        div = 1;
    return n / div > 0 ? n / div : 1;
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x * 0x2545F4914F6CDD1Dull;
}

static vega_codec_opts opts(vega_codec_kind kind, unsigned prefix, size_t max)
{
    vega_codec_opts o;
    memset(&o, 0, sizeof(o));
    o.kind = kind;
    o.prefix_len = prefix;
    o.max_frame = max;
    return o;
}

static void put(vega_stream *s, const void *p, size_t n)
{
    VCHECK_EQ(vega_stream_write(s, p, n, NULL, DL(1000)), (vega_ssize)n);
}

/* Reads one frame and compares it. */
static void expect(vega_decoder *d, const void *want, size_t n)
{
    const void *f = NULL;
    size_t len = 99;
    int r = vega_decoder_read(d, &f, &len, DL(2000));
    if (r != 0)
        vtest_fail(__FILE__, __LINE__, "decoder_read: %d (%s)", r, vega_err_name(r));
    VCHECK(f != NULL);
    VCHECK_EQ(len, n);
    VCHECK(n == 0 || memcmp(f, want, n) == 0);
}

static int next(vega_decoder *d, vega_deadline dl)
{
    const void *f;
    size_t len;
    return vega_decoder_read(d, &f, &len, dl);
}

/* ---- sans-I/O encoding ----------------------------------------------------------------------- */

VTEST(encode_sansio)
{
    unsigned char out[64];
    vega_codec_opts o = opts(VEGA_CODEC_LENGTH, 2, 0);
    VCHECK_EQ(vega_codec_encode(&o, "abc", 3, out, sizeof(out)), 5);
    VCHECK(memcmp(out,
                  "\x00\x03"
                  "abc",
                  5) == 0);
    o.prefix_len = 8;
    VCHECK_EQ(vega_codec_encode(&o, "abc", 3, out, sizeof(out)), 11);
    VCHECK(memcmp(out,
                  "\0\0\0\0\0\0\0\x03"
                  "abc",
                  11) == 0);
    o.prefix_len = 0; /* default: 4 */
    VCHECK_EQ(vega_codec_encode(&o, "", 0, out, sizeof(out)), 4);
    VCHECK(memcmp(out, "\0\0\0\0", 4) == 0);
    VCHECK_EQ(vega_codec_encode(&o, "abc", 3, out, 6), VEGA_ERR_NOBUF);
    o.prefix_len = 3;
    VCHECK_EQ(vega_codec_encode(&o, "abc", 3, out, sizeof(out)), -EINVAL);
    /* The prefix bounds the frame: 255 for one byte, even with a larger max_frame. */
    static unsigned char big[300], enc[300];
    o = opts(VEGA_CODEC_LENGTH, 1, 1000);
    VCHECK_EQ(vega_codec_encode(&o, big, 255, enc, sizeof(enc)), 256);
    VCHECK_EQ(enc[0], 255);
    VCHECK_EQ(vega_codec_encode(&o, big, 256, out, sizeof(out)), -EMSGSIZE);
    o = opts(VEGA_CODEC_LENGTH, 4, 10);
    VCHECK_EQ(vega_codec_encode(&o, big, 11, out, sizeof(out)), -EMSGSIZE);

    o = opts(VEGA_CODEC_LINES, 0, 5);
    VCHECK_EQ(vega_codec_encode(&o, "hello", 5, out, sizeof(out)), 6);
    VCHECK(memcmp(out, "hello\n", 6) == 0);
    o.crlf = true;
    VCHECK_EQ(vega_codec_encode(&o, "hi", 2, out, sizeof(out)), 4);
    VCHECK(memcmp(out, "hi\r\n", 4) == 0);
    VCHECK_EQ(vega_codec_encode(&o, "hello!", 6, out, sizeof(out)), -EMSGSIZE);
    VCHECK_EQ(vega_codec_encode(&o, "a\nb", 3, out, sizeof(out)), -EINVAL);

    o = opts(VEGA_CODEC_BYTES, 0, 2);
    VCHECK_EQ(vega_codec_encode(&o, "hello", 5, out, sizeof(out)), 5);
    o = opts((vega_codec_kind)42, 0, 0);
    VCHECK_EQ(vega_codec_encode(&o, "x", 1, out, sizeof(out)), -EINVAL);
}

/* ---- round trips through faulty(duplex) ------------------------------------------------------ */

struct trip {
    vega_codec_opts o;
    uint64_t seed;
    long frames;
    size_t max_len;
    vega_stream *s;
};

/* Frame i's length and contents, reproducible from (seed, i). Lengths are mostly small, with a
 * tail of large ones; LINES content has no '\n' (and may end in '\r' only when CRLF is used to
 * terminate it, which the encoder decides from i). */
static size_t frame_len(uint64_t *x, size_t max_len)
{
    uint64_t r = rnd(x);
    if (r % 16 == 0)
        return (size_t)(rnd(x) % (max_len + 1));
    return (size_t)(rnd(x) % (max_len / 16 + 1));
}

static void frame_fill(unsigned char *p, size_t n, uint64_t seed, long i, bool text)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i + 1;
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)rnd(&x);
        if (text)
            c = (unsigned char)(' ' + c % 95); /* printable: never '\n' or '\r' */
        p[k] = c;
    }
}

static void *encode_all(void *arg)
{
    struct trip *t = arg;
    vega_encoder e, ecrlf;
    vega_codec_opts o2 = t->o;
    o2.crlf = true;
    VCHECK_EQ(vega_encoder_init(&e, t->s, &t->o), 0);
    VCHECK_EQ(vega_encoder_init(&ecrlf, t->s, &o2), 0);
    unsigned char *buf = malloc(t->max_len + 1);
    uint64_t x = t->seed;
    bool text = t->o.kind == VEGA_CODEC_LINES;
    for (long i = 0; i < t->frames; i++) {
        size_t n = frame_len(&x, t->max_len);
        frame_fill(buf, n, t->seed, i, text);
        /* Lines alternate randomly between "\n" and "\r\n"; both decode the same. */
        vega_encoder *enc = text && (i * 7 + (long)t->seed) % 3 == 0 ? &ecrlf : &e;
        size_t w = 0;
        vega_ssize r = vega_encoder_write(enc, buf, n, &w, DL(20000));
        if (r < 0)
            vtest_fail(__FILE__, __LINE__, "frame %ld: %zd", i, r);
        VCHECK_EQ((size_t)r, w);
    }
    free(buf);
    VCHECK_EQ(vega_stream_shutdown(t->s, SHUT_WR, DL(1000)), 0);
    return NULL;
}

static void decode_all(struct trip *t, vega_stream *in, size_t bufcap)
{
    vega_bufreader br;
    vega_decoder d;
    VCHECK_EQ(vega_bufreader_init(&br, in, NULL, bufcap), 0);
    VCHECK_EQ(vega_decoder_init(&d, &br, &t->o), 0);
    unsigned char *want = malloc(t->max_len + 1);
    uint64_t x = t->seed;
    bool text = t->o.kind == VEGA_CODEC_LINES;
    for (long i = 0; i < t->frames; i++) {
        size_t n = frame_len(&x, t->max_len);
        frame_fill(want, n, t->seed, i, text);
        const void *f;
        size_t len;
        int r = vega_decoder_read(&d, &f, &len, DL(20000));
        if (r != 0 || len != n || memcmp(f, want, n) != 0)
            vtest_fail(__FILE__, __LINE__, "seed %llu frame %ld: r %d len %zu want %zu",
                       (unsigned long long)t->seed, i, r, r == 0 ? len : 0, n);
    }
    VCHECK_EQ(next(&d, DL(5000)), VEGA_ERR_CLOSED);
    free(want);
    vega_decoder_fini(&d);
    vega_bufreader_fini(&br);
}

/* Sends t->frames random frames from a task through faulty(a) and decodes them from
 * faulty(b): short reads and writes, yields, reader stalls, a small duplex and a small read
 * buffer. */
static void trip_faulty(struct trip *t)
{
    vega_stream *a, *b, *fa, *fb;
    VCHECK_EQ(vega_duplex_new(&a, &b, 1000), 0);
    vega_fault_opts fo;
    vega_fault_opts_init(&fo);
    fo.seed = t->seed;
    fo.short_read_pct = 30;
    fo.short_write_pct = 30;
    fo.short_max = 48;
    fo.yield_pct = 10;
    VCHECK_EQ(vega_faulty_new(&fa, a, &fo), 0);
    fo.seed = t->seed ^ 0xABCDEFu;
    fo.delay_pct = 1; /* stalls on the reading side make the writer wait for room */
    fo.delay_max_ms = 1;
    VCHECK_EQ(vega_faulty_new(&fb, b, &fo), 0);
    t->s = fa;
    vega_task *task;
    VCHECK_EQ(vega_task_spawn(&task, encode_all, t), 0);
    decode_all(t, fb, 512);
    VCHECK_EQ(vega_task_join(task, NULL, DL(20000)), 0);
    vega_fault_stats st;
    VCHECK_EQ(vega_faulty_get_stats(fa, &st), 0);
    VCHECK(st.short_writes > 0);
    VCHECK_EQ(vega_faulty_get_stats(fb, &st), 0);
    VCHECK(st.short_reads > 0);
    VCHECK_EQ(vega_stream_close(fa, 0), 0);
    VCHECK_EQ(vega_stream_close(fb, 0), 0);
}

static const uint64_t seeds[] = {1, 0xC0FFEE, 987654321};

static void body_length_faulty(void)
{
    static const unsigned prefixes[] = {4, 1, 2, 8};
    for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
        unsigned p = prefixes[s % 4];
        struct trip t = {.o = opts(VEGA_CODEC_LENGTH, p, 0),
                         .seed = seeds[s],
                         .frames = scaled(10000),
                         .max_len = p == 1 ? 255 : 4000};
        trip_faulty(&t);
    }
    /* The fourth prefix size, fewer frames. */
    struct trip t = {
        .o = opts(VEGA_CODEC_LENGTH, 8, 0), .seed = 77, .frames = scaled(2000), .max_len = 9000};
    trip_faulty(&t);
}

VTEST(length_random_frames_faulty)
{
    vtest_run(body_length_faulty, 0);
}

VTEST(length_random_frames_faulty_multi_thread)
{
    vtest_run(body_length_faulty, 2);
}

static void body_lines_faulty(void)
{
    for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
        struct trip t = {.o = opts(VEGA_CODEC_LINES, 0, 1500),
                         .seed = seeds[s],
                         .frames = scaled(10000),
                         .max_len = 1500};
        trip_faulty(&t);
    }
}

VTEST(lines_random_faulty)
{
    vtest_run(body_lines_faulty, 0);
}

VTEST(lines_random_faulty_multi_thread)
{
    vtest_run(body_lines_faulty, 2);
}

/* BYTES: chunks come as they arrive (never above the chunk size); the concatenation is exact. */
static void body_bytes_faulty(void)
{
    vega_stream *a, *b, *fa, *fb;
    VCHECK_EQ(vega_duplex_new(&a, &b, 700), 0);
    vega_fault_opts fo;
    vega_fault_opts_init(&fo);
    fo.seed = 5;
    fo.short_read_pct = 50;
    fo.short_write_pct = 50;
    fo.short_max = 100;
    VCHECK_EQ(vega_faulty_new(&fa, a, &fo), 0);
    VCHECK_EQ(vega_faulty_new(&fb, b, &fo), 0);
    struct trip t = {.o = opts(VEGA_CODEC_BYTES, 0, 0),
                     .seed = 3,
                     .frames = scaled(5000),
                     .max_len = 3000,
                     .s = fa};
    vega_task *task;
    VCHECK_EQ(vega_task_spawn(&task, encode_all, &t), 0);

    /* Rebuild the expected byte string. */
    size_t total = 0, cap = 1 << 16;
    unsigned char *want = malloc(cap);
    uint64_t x = t.seed;
    for (long i = 0; i < t.frames; i++) {
        size_t n = frame_len(&x, t.max_len);
        if (total + n > cap)
            want = realloc(want, cap *= 2);
        frame_fill(want + total, n, t.seed, i, false);
        total += n;
    }
    vega_bufreader br;
    vega_decoder d;
    vega_codec_opts o = opts(VEGA_CODEC_BYTES, 0, 1000);
    VCHECK_EQ(vega_bufreader_init(&br, fb, NULL, 256), 0);
    VCHECK_EQ(vega_decoder_init(&d, &br, &o), 0);
    size_t off = 0;
    for (;;) {
        const void *f;
        size_t len;
        int r = vega_decoder_read(&d, &f, &len, DL(10000));
        if (r == VEGA_ERR_CLOSED)
            break;
        VCHECK_EQ(r, 0);
        VCHECK(len > 0 && len <= 1000);
        VCHECK(off + len <= total);
        VCHECK(memcmp(f, want + off, len) == 0);
        off += len;
    }
    VCHECK_EQ(off, total);
    VCHECK_EQ(vega_task_join(task, NULL, DL(10000)), 0);
    free(want);
    vega_decoder_fini(&d);
    vega_bufreader_fini(&br);
    vega_stream_close(fa, 0);
    vega_stream_close(fb, 0);
}

VTEST(bytes_chunks_faulty)
{
    vtest_run(body_bytes_faulty, 0);
}

/* ---- limits ---------------------------------------------------------------------------------- */

static void body_length_limits(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 1 << 16), 0);
    vega_codec_opts o = opts(VEGA_CODEC_LENGTH, 2, 100);
    vega_encoder e;
    VCHECK_EQ(vega_encoder_init(&e, a, &o), 0);
    static unsigned char big[5000];
    memset(big, 'z', sizeof(big));
    size_t w = 7;
    /* The encoder refuses before writing anything. */
    VCHECK_EQ(vega_encoder_write(&e, big, 101, &w, DL(1000)), -EMSGSIZE);
    VCHECK_EQ(w, 0);
    VCHECK_EQ(vega_encoder_write(&e, "ok", 2, &w, DL(1000)), 4);
    VCHECK_EQ(w, 4);
    /* A peer announcing 5000 bytes: refused from the prefix alone, then skipped. */
    put(a, "\x13\x88", 2);
    put(a, big, 5000);
    VCHECK_EQ(vega_encoder_write(&e, "after", 5, NULL, DL(1000)), 7);
    VCHECK_EQ(vega_encoder_write(&e, "", 0, NULL, DL(1000)), 2);
    VCHECK_EQ(vega_encoder_write(&e, big, 100, NULL, DL(1000)), 102);

    vega_bufreader br;
    vega_decoder d;
    VCHECK_EQ(vega_bufreader_init(&br, b, NULL, 64), 0);
    VCHECK_EQ(vega_decoder_init(&d, &br, &o), 0);
    expect(&d, "ok", 2);
    VCHECK_EQ(next(&d, DL(1000)), -EMSGSIZE);
    VCHECK(d.frame_cap_ < 5000); /* nothing allocated for it */
    expect(&d, "after", 5);
    expect(&d, "", 0);
    expect(&d, big, 100);
    VCHECK_EQ(next(&d, 0), -ETIMEDOUT);

    /* A u8 prefix caps frames at 255 whatever max_frame says. */
    vega_codec_opts o1 = opts(VEGA_CODEC_LENGTH, 1, 1 << 20);
    vega_encoder e1;
    VCHECK_EQ(vega_encoder_init(&e1, a, &o1), 0);
    VCHECK_EQ(vega_encoder_write(&e1, big, 256, &w, DL(1000)), -EMSGSIZE);
    VCHECK_EQ(vega_encoder_write(&e1, big, 255, &w, DL(1000)), 256);
    vega_decoder d1;
    VCHECK_EQ(vega_decoder_init(&d1, &br, &o1), 0);
    expect(&d1, big, 255);
    vega_codec_opts bad = opts(VEGA_CODEC_LENGTH, 5, 0);
    vega_decoder d2;
    VCHECK_EQ(vega_decoder_init(&d2, &br, &bad), -EINVAL);
    VCHECK_EQ(vega_encoder_init(&e1, a, &bad), -EINVAL);

    vega_decoder_fini(&d1);
    vega_decoder_fini(&d);
    vega_bufreader_fini(&br);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);
}

VTEST(length_oversize)
{
    vtest_run(body_length_limits, 0);
}

static void body_line_limits(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 1 << 16), 0);
    vega_codec_opts o = opts(VEGA_CODEC_LINES, 0, 10);
    vega_encoder e;
    VCHECK_EQ(vega_encoder_init(&e, a, &o), 0);
    size_t w = 5;
    VCHECK_EQ(vega_encoder_write(&e, "0123456789X", 11, &w, DL(1000)), -EMSGSIZE);
    VCHECK_EQ(w, 0);
    VCHECK_EQ(vega_encoder_write(&e, "two\nlines", 9, &w, DL(1000)), -EINVAL);
    const char *in = "0123456789\r\n" /* exactly max, CRLF */
                     "0123456789\n"   /* exactly max, LF */
                     "0123456789X\n"  /* max + 1: refused */
                     "short\n"
                     "this one is far longer than ten bytes and spans reads\r\n"
                     "\n"                /* empty line */
                     "\r\n"              /* empty line, CRLF */
                     "a\rb\n"            /* a lone CR is content */
                     "0123456789\r\r\n"; /* max + '\r' content: refused */
    put(a, in, strlen(in));
    vega_stream_shutdown(a, SHUT_WR, 0);

    vega_bufreader br;
    vega_decoder d;
    VCHECK_EQ(vega_bufreader_init(&br, b, NULL, 16), 0);
    VCHECK_EQ(vega_decoder_init(&d, &br, &o), 0);
    expect(&d, "0123456789", 10);
    expect(&d, "0123456789", 10);
    VCHECK_EQ(next(&d, DL(1000)), -EMSGSIZE);
    expect(&d, "short", 5);
    VCHECK_EQ(next(&d, DL(1000)), -EMSGSIZE);
    VCHECK(d.frame_cap_ <= 11);
    expect(&d, "", 0);
    expect(&d, "", 0);
    expect(&d, "a\rb", 3);
    VCHECK_EQ(next(&d, DL(1000)), -EMSGSIZE);
    VCHECK_EQ(next(&d, DL(1000)), VEGA_ERR_CLOSED);
    VCHECK_EQ(next(&d, DL(1000)), VEGA_ERR_CLOSED);
    vega_decoder_fini(&d);
    vega_bufreader_fini(&br);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);

    /* An oversized line cut by the end of the stream. */
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    put(a, "way too long for the limit", 26);
    vega_stream_close(a, 0);
    VCHECK_EQ(vega_bufreader_init(&br, b, NULL, 8), 0);
    VCHECK_EQ(vega_decoder_init(&d, &br, &o), 0);
    VCHECK_EQ(next(&d, DL(1000)), -EMSGSIZE);
    VCHECK_EQ(next(&d, DL(1000)), VEGA_ERR_CLOSED);
    vega_decoder_fini(&d);
    vega_bufreader_fini(&br);
    vega_stream_close(b, 0);
}

VTEST(lines_oversize)
{
    vtest_run(body_line_limits, 0);
}

/* ---- truncation ------------------------------------------------------------------------------ */

static void body_truncation(void)
{
    static const struct {
        const char *bytes;
        size_t n;
        int want;
    } cases[] = {
        {"", 0, VEGA_ERR_CLOSED},    /* clean end */
        {"\x00", 1, VEGA_ERR_PROTO}, /* inside the prefix */
        {"\x00\x00\x00\x05"
         "ab",
         6, VEGA_ERR_PROTO},        /* inside the payload */
        {"\x00\x00\x00\x00", 4, 0}, /* an empty frame, then a clean end */
        {"\x00\x00\x01\x00"
         "ab",
         6, VEGA_ERR_PROTO}, /* oversized and truncated: limit first */
    };
    vega_codec_opts o = opts(VEGA_CODEC_LENGTH, 4, 100);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        vega_stream *a, *b;
        VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
        if (cases[i].n)
            put(a, cases[i].bytes, cases[i].n);
        vega_stream_close(a, 0);
        vega_bufreader br;
        vega_decoder d;
        VCHECK_EQ(vega_bufreader_init(&br, b, NULL, 0), 0);
        VCHECK_EQ(vega_decoder_init(&d, &br, &o), 0);
        if (i == 4)
            VCHECK_EQ(next(&d, DL(1000)), -EMSGSIZE);
        int r = next(&d, DL(1000));
        if (cases[i].want == 0) {
            VCHECK_EQ(r, 0);
            r = next(&d, DL(1000));
            VCHECK_EQ(r, VEGA_ERR_CLOSED);
        } else {
            VCHECK_EQ(r, cases[i].want);
        }
        VCHECK_EQ(next(&d, DL(1000)), VEGA_ERR_CLOSED); /* after the report: a clean end */
        vega_decoder_fini(&d);
        vega_bufreader_fini(&br);
        vega_stream_close(b, 0);
    }

    /* Lines: an unterminated last line is truncation, unless asked for. */
    for (int allow = 0; allow <= 1; allow++) {
        vega_stream *a, *b;
        VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
        put(a, "full\npartial", 12);
        vega_stream_close(a, 0);
        vega_codec_opts lo = opts(VEGA_CODEC_LINES, 0, 0);
        lo.allow_partial_last_line = allow;
        vega_bufreader br;
        vega_decoder d;
        VCHECK_EQ(vega_bufreader_init(&br, b, NULL, 0), 0);
        VCHECK_EQ(vega_decoder_init(&d, &br, &lo), 0);
        expect(&d, "full", 4);
        if (allow)
            expect(&d, "partial", 7);
        else
            VCHECK_EQ(next(&d, DL(1000)), VEGA_ERR_PROTO);
        VCHECK_EQ(next(&d, DL(1000)), VEGA_ERR_CLOSED);
        vega_decoder_fini(&d);
        vega_bufreader_fini(&br);
        vega_stream_close(b, 0);
    }
}

VTEST(truncated_frames)
{
    vtest_run(body_truncation, 0);
}

/* ---- deadlines and cancellation -------------------------------------------------------------- */

static void body_resume(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_codec_opts o = opts(VEGA_CODEC_LENGTH, 4, 0);
    vega_bufreader br;
    vega_decoder d;
    VCHECK_EQ(vega_bufreader_init(&br, b, NULL, 16), 0);
    VCHECK_EQ(vega_decoder_init(&d, &br, &o), 0);
    static unsigned char frame[100];
    frame_fill(frame, sizeof(frame), 1, 1, false);
    /* The prefix in two pieces, the payload in three, a timeout between each. */
    VCHECK_EQ(next(&d, 0), -ETIMEDOUT);
    put(a, "\x00\x00", 2);
    VCHECK_EQ(next(&d, DL(10)), -ETIMEDOUT);
    put(a, "\x00\x64", 2);
    VCHECK_EQ(next(&d, DL(10)), -ETIMEDOUT);
    put(a, frame, 10);
    VCHECK_EQ(next(&d, DL(10)), -ETIMEDOUT);
    put(a, frame + 10, 60);
    VCHECK_EQ(next(&d, 0), -ETIMEDOUT);
    put(a, frame + 70, 30);
    expect(&d, frame, 100);

    /* Lines too, across a buffer smaller than the line. */
    vega_codec_opts lo = opts(VEGA_CODEC_LINES, 0, 0);
    vega_decoder dl;
    VCHECK_EQ(vega_decoder_init(&dl, &br, &lo), 0);
    put(a, "a line longer", 13);
    VCHECK_EQ(next(&dl, DL(10)), -ETIMEDOUT);
    put(a, " than the buffer\r", 17);
    VCHECK_EQ(next(&dl, DL(10)), -ETIMEDOUT);
    put(a, "\nnext\n", 6);
    expect(&dl, "a line longer than the buffer", 29);
    expect(&dl, "next", 4);
    vega_decoder_fini(&dl);
    vega_decoder_fini(&d);
    vega_bufreader_fini(&br);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);
}

VTEST(timeout_resumes_inside_frame)
{
    vtest_run(body_resume, 0);
}

struct blocked_dec {
    vega_decoder *d;
    atomic_bool started;
    int res;
};

static void *blocked_decode(void *arg)
{
    struct blocked_dec *b = arg;
    atomic_store(&b->started, true);
    b->res = next(b->d, VEGA_DEADLINE_NEVER);
    return NULL;
}

static void body_cancel(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_codec_opts o = opts(VEGA_CODEC_LENGTH, 2, 0);
    vega_bufreader br;
    vega_decoder d;
    VCHECK_EQ(vega_bufreader_init(&br, b, NULL, 0), 0);
    VCHECK_EQ(vega_decoder_init(&d, &br, &o), 0);
    put(a,
        "\x00\x05"
        "ab",
        4); /* a frame cut in the middle */
    struct blocked_dec bd = {.d = &d, .res = 1};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, blocked_decode, &bd), 0);
    while (!atomic_load(&bd.started))
        VCHECK_EQ(vega_sleep_ms(1), 0);
    VCHECK_EQ(vega_sleep_ms(10), 0);
    vega_task_cancel(t);
    VCHECK_EQ(vega_task_join(t, NULL, DL(5000)), 0);
    VCHECK_EQ(bd.res, -ECANCELED);
    /* The rest arrives: the frame is whole. */
    put(a, "cde", 3);
    expect(&d, "abcde", 5);
    vega_decoder_fini(&d);
    vega_bufreader_fini(&br);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);
}

VTEST(cancel_blocked_decode)
{
    vtest_run(body_cancel, 2);
}

/* ---- real sockets and pipes ------------------------------------------------------------------ */

static void body_tcp(void)
{
    vega_addr addr;
    vega_sock *l, *c, *s;
    VCHECK_EQ(vega_addr_parse(&addr, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_tcp_listen(&l, &addr, 0, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(l, &addr), 0);
    VCHECK_EQ(vega_tcp_connect(&c, &addr, DL(5000)), 0);
    VCHECK_EQ(vega_tcp_accept(l, &s, NULL, DL(5000)), 0);
    vega_sock_close(l);
    vega_stream *sc, *ss;
    VCHECK_EQ(vega_stream_from_sock(&sc, c, 0), 0);
    VCHECK_EQ(vega_stream_from_sock(&ss, s, 0), 0);

    struct trip t = {.o = opts(VEGA_CODEC_LENGTH, 4, 0),
                     .seed = 4242,
                     .frames = scaled(10000),
                     .max_len = 20000,
                     .s = sc};
    vega_task *task;
    VCHECK_EQ(vega_task_spawn(&task, encode_all, &t), 0);
    decode_all(&t, ss, 0);
    VCHECK_EQ(vega_task_join(task, NULL, DL(10000)), 0);

    /* Lines the other way, through a faulty stream on top of the socket. */
    vega_stream *fs;
    vega_fault_opts fo;
    vega_fault_opts_init(&fo);
    fo.seed = 8;
    fo.short_write_pct = 50;
    fo.short_read_pct = 50;
    VCHECK_EQ(vega_faulty_new(&fs, ss, &fo), 0);
    struct trip tl = {.o = opts(VEGA_CODEC_LINES, 0, 0),
                      .seed = 99,
                      .frames = scaled(3000),
                      .max_len = 200,
                      .s = fs};
    VCHECK_EQ(vega_task_spawn(&task, encode_all, &tl), 0);
    decode_all(&tl, sc, 128);
    VCHECK_EQ(vega_task_join(task, NULL, DL(10000)), 0);
    VCHECK_EQ(vega_stream_close(fs, 0), 0);
    VCHECK_EQ(vega_stream_close(sc, 0), 0);
}

VTEST(tcp_frames)
{
    vtest_run(body_tcp, 2);
}

static void body_pipe(void)
{
    int p[2];
    VCHECK_EQ(pipe2(p, O_CLOEXEC), 0);
    vega_stream *r, *w;
    VCHECK_EQ(vega_stream_from_fd(&r, p[0], -1, 0), 0);
    VCHECK_EQ(vega_stream_from_fd(&w, -1, p[1], 0), 0);
    struct trip t = {.o = opts(VEGA_CODEC_LINES, 0, 4000),
                     .seed = 31337,
                     .frames = scaled(10000),
                     .max_len = 4000,
                     .s = w};
    vega_task *task;
    VCHECK_EQ(vega_task_spawn(&task, encode_all, &t), 0);
    decode_all(&t, r, 1024);
    VCHECK_EQ(vega_task_join(task, NULL, DL(10000)), 0);
    VCHECK_EQ(vega_stream_close(r, 0), 0);
    VCHECK_EQ(vega_stream_close(w, 0), 0);
}

VTEST(pipe_lines)
{
    vtest_run(body_pipe, 2);
}
