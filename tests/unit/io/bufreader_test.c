/* SPDX-License-Identifier: MIT */
/* The buffered reader: reads, exact reads (clean end vs truncation), delimiter search with a
 * hard limit, peek/consume, lossless timeouts, and random lines through a faulty duplex. */
#include <stdlib.h>
#include <string.h>

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

static void put(vega_stream *s, const char *str)
{
    size_t n = strlen(str);
    VCHECK_EQ(vega_stream_write(s, str, n, NULL, DL(1000)), (vega_ssize)n);
}

/* ---- basics ---------------------------------------------------------------------------------- */

static void body_read(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_bufreader br;
    unsigned char store[8];
    VCHECK_EQ(vega_bufreader_init(&br, NULL, store, 8), -EINVAL);
    VCHECK_EQ(vega_bufreader_init(&br, b, store, 0), -EINVAL);
    VCHECK_EQ(vega_bufreader_init(&br, b, store, sizeof(store)), 0);
    VCHECK_EQ(vega_bufreader_capacity(&br), 8);
    char buf[64];
    VCHECK_EQ(vega_bufreader_read(&br, buf, 0, DL(100)), -EINVAL);
    put(a, "abcdefghijkl");
    /* A small read fills the buffer once and serves from it. */
    VCHECK_EQ(vega_bufreader_read(&br, buf, 3, DL(1000)), 3);
    VCHECK(memcmp(buf, "abc", 3) == 0);
    VCHECK_EQ(vega_bufreader_buffered(&br), 5);
    VCHECK_EQ(vega_bufreader_read(&br, buf, sizeof(buf), DL(1000)), 5);
    VCHECK(memcmp(buf, "defgh", 5) == 0);
    /* A read of at least the capacity, with nothing buffered, bypasses the buffer. */
    VCHECK_EQ(vega_bufreader_read(&br, buf, sizeof(buf), DL(1000)), 4);
    VCHECK(memcmp(buf, "ijkl", 4) == 0);
    VCHECK_EQ(vega_bufreader_buffered(&br), 0);
    VCHECK_EQ(vega_bufreader_read(&br, buf, 2, 0), -ETIMEDOUT);
    VCHECK_EQ(vega_bufreader_read(&br, buf, 2, DL(20)), -ETIMEDOUT);
    vega_stream_shutdown(a, SHUT_WR, 0);
    VCHECK_EQ(vega_bufreader_read(&br, buf, 2, DL(1000)), 0);
    VCHECK_EQ(vega_bufreader_read(&br, buf, 64, DL(1000)), 0);
    vega_bufreader_fini(&br);

    /* Allocated storage, default capacity. */
    VCHECK_EQ(vega_bufreader_init(&br, b, NULL, 0), 0);
    VCHECK_EQ(vega_bufreader_capacity(&br), VEGA_BUFREADER_DEFAULT_CAP);
    VCHECK_EQ(vega_bufreader_read(&br, buf, 1, DL(1000)), 0);
    vega_bufreader_fini(&br);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);
}

VTEST(read_and_bypass)
{
    vtest_run(body_read, 0);
}

static void body_read_exact(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_bufreader br;
    VCHECK_EQ(vega_bufreader_init(&br, b, NULL, 16), 0);
    char buf[64];
    put(a, "0123456789");
    VCHECK_EQ(vega_bufreader_read_exact(&br, buf, 4, DL(1000)), 4);
    VCHECK(memcmp(buf, "0123", 4) == 0);

    /* Not enough yet: times out and keeps the bytes; completes once the rest arrives. */
    VCHECK_EQ(vega_bufreader_read_exact(&br, buf, 10, DL(20)), -ETIMEDOUT);
    VCHECK_EQ(vega_bufreader_buffered(&br), 6);
    VCHECK_EQ(vega_bufreader_read_exact(&br, buf, 10, 0), -ETIMEDOUT);
    put(a, "abcd");
    VCHECK_EQ(vega_bufreader_read_exact(&br, buf, 10, DL(1000)), 10);
    VCHECK(memcmp(buf, "456789abcd", 10) == 0);

    /* Larger than the capacity: streamed through. */
    char big[40];
    for (int i = 0; i < 40; i++)
        big[i] = (char)('A' + i % 26);
    VCHECK_EQ(vega_stream_write(a, big, 40, NULL, DL(1000)), 40);
    VCHECK_EQ(vega_bufreader_read_exact(&br, buf, 3, DL(1000)), 3);
    VCHECK_EQ(vega_bufreader_read_exact(&br, buf + 3, 37, DL(1000)), 37);
    VCHECK(memcmp(buf, big, 40) == 0);

    /* Truncated: the stream ends inside the read (small and large). */
    put(a, "xyz");
    vega_stream_shutdown(a, SHUT_WR, 0);
    VCHECK_EQ(vega_bufreader_read_exact(&br, buf, 5, DL(1000)), VEGA_ERR_PROTO);
    /* Clean end: nothing at all. */
    VCHECK_EQ(vega_bufreader_read_exact(&br, buf, 5, DL(1000)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_bufreader_read_exact(&br, buf, 50, DL(1000)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_bufreader_read_exact(&br, buf, 0, DL(1000)), -EINVAL);
    vega_bufreader_fini(&br);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);

    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    VCHECK_EQ(vega_bufreader_init(&br, b, NULL, 16), 0);
    put(a, "only twenty bytes...");
    vega_stream_close(a, 0);
    VCHECK_EQ(vega_bufreader_read_exact(&br, buf, 30, DL(1000)), VEGA_ERR_PROTO);
    vega_bufreader_fini(&br);
    vega_stream_close(b, 0);
}

VTEST(read_exact_eof_and_truncation)
{
    vtest_run(body_read_exact, 0);
}

static void body_read_until(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_bufreader br;
    VCHECK_EQ(vega_bufreader_init(&br, b, NULL, 16), 0);
    char buf[64];
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 17, DL(100)), -EINVAL);
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 0, DL(100)), -EINVAL);
    VCHECK_EQ(vega_bufreader_read_until(&br, 256, buf, 8, DL(100)), -EINVAL);

    put(a, "one\ntwo\nthree");
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 16, DL(1000)), 4);
    VCHECK(memcmp(buf, "one\n", 4) == 0);
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 16, DL(1000)), 4);
    VCHECK(memcmp(buf, "two\n", 4) == 0);
    /* No delimiter yet: times out, keeps everything; the delimiter arrives in another write. */
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 16, DL(20)), -ETIMEDOUT);
    VCHECK_EQ(vega_bufreader_buffered(&br), 5);
    put(a, "!\n");
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 16, DL(1000)), 7);
    VCHECK(memcmp(buf, "three!\n", 7) == 0);

    /* The limit: max bytes without the delimiter is -EMSGSIZE, and nothing is consumed. */
    put(a, "0123456789abcdefXYZ\n");
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 8, DL(1000)), -EMSGSIZE);
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 16, DL(1000)), -EMSGSIZE);
    VCHECK(vega_bufreader_buffered(&br) >= 16);
    VCHECK_EQ(vega_bufreader_read_until(&br, 'f', buf, 16, DL(1000)), 16); /* exactly max */
    VCHECK(memcmp(buf, "0123456789abcdef", 16) == 0);
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 16, DL(1000)), 4);
    VCHECK(memcmp(buf, "XYZ\n", 4) == 0);

    /* The delimiter found after a compaction (data wrapped the buffer's end). */
    put(a, "aaaaaaaaaaaa\nbbbbbbbbbbbbbb\n");
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 16, DL(1000)), 13);
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 16, DL(1000)), 15);
    VCHECK(memcmp(buf, "bbbbbbbbbbbbbb\n", 15) == 0);

    /* End of stream: the rest without a delimiter, then 0. */
    put(a, "tail");
    vega_stream_shutdown(a, SHUT_WR, 0);
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 16, DL(1000)), 4);
    VCHECK(memcmp(buf, "tail", 4) == 0);
    VCHECK_EQ(vega_bufreader_read_until(&br, '\n', buf, 16, DL(1000)), 0);
    vega_bufreader_fini(&br);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);
}

VTEST(read_until_limit)
{
    vtest_run(body_read_until, 0);
}

static void body_peek(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_bufreader br;
    char store[10];
    VCHECK_EQ(vega_bufreader_init(&br, b, store, sizeof(store)), 0);
    const void *p;
    VCHECK_EQ(vega_bufreader_peek(&br, &p, 11, DL(100)), -EINVAL);
    VCHECK_EQ(vega_bufreader_peek(&br, &p, 0, DL(100)), -EINVAL);
    VCHECK_EQ(vega_bufreader_peek(&br, &p, 1, DL(20)), -ETIMEDOUT);
    put(a, "hello");
    VCHECK_EQ(vega_bufreader_peek(&br, &p, 2, DL(1000)), 5);
    VCHECK(memcmp(p, "hello", 5) == 0);
    VCHECK_EQ(vega_bufreader_peek(&br, &p, 8, DL(20)), -ETIMEDOUT); /* nothing consumed */
    put(a, " world");
    VCHECK_EQ(vega_bufreader_peek(&br, &p, 8, DL(1000)), 10);
    VCHECK(memcmp(p, "hello worl", 10) == 0);
    VCHECK_EQ(vega_bufreader_consume(&br, 11), -EINVAL);
    VCHECK_EQ(vega_bufreader_consume(&br, 6), 0);
    VCHECK_EQ(vega_bufreader_peek(&br, &p, 5, DL(1000)), 5);
    VCHECK(memcmp(p, "world", 5) == 0);
    VCHECK_EQ(vega_bufreader_consume(&br, 5), 0);
    vega_stream_close(a, 0);
    VCHECK_EQ(vega_bufreader_peek(&br, &p, 3, DL(1000)), 0);
    vega_bufreader_fini(&br);
    vega_stream_close(b, 0);
}

VTEST(peek_consume)
{
    vtest_run(body_peek, 0);
}

/* ---- random lines through a faulty duplex ---------------------------------------------------- */

struct writer {
    vega_stream *s;
    uint64_t seed;
    long lines;
};

static size_t line_len(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return (size_t)(*x % 60);
}

static void make_line(char *buf, size_t n, long i)
{
    for (size_t k = 0; k < n; k++)
        buf[k] = (char)('a' + (i * 7 + (long)k) % 26);
    buf[n] = '\n';
}

static void *write_lines(void *arg)
{
    struct writer *w = arg;
    uint64_t x = w->seed;
    char buf[64];
    for (long i = 0; i < w->lines; i++) {
        size_t n = line_len(&x);
        make_line(buf, n, i);
        VCHECK_EQ(vega_stream_write(w->s, buf, n + 1, NULL, DL(10000)), (vega_ssize)n + 1);
    }
    VCHECK_EQ(vega_stream_shutdown(w->s, SHUT_WR, DL(1000)), 0);
    return NULL;
}

static void body_random_lines(void)
{
    long lines = scaled(10000);
    for (uint64_t seed = 11; seed <= 13; seed++) {
        vega_stream *a, *b, *fa, *fb;
        VCHECK_EQ(vega_duplex_new(&a, &b, 256), 0);
        vega_fault_opts o;
        vega_fault_opts_init(&o);
        o.seed = seed;
        o.short_read_pct = 40;
        o.short_write_pct = 40;
        o.short_max = 20;
        o.yield_pct = 10;
        VCHECK_EQ(vega_faulty_new(&fa, a, &o), 0);
        o.seed = ~seed;
        o.delay_pct = 1;
        o.delay_max_ms = 1;
        VCHECK_EQ(vega_faulty_new(&fb, b, &o), 0);
        struct writer w = {.s = fa, .seed = seed, .lines = lines};
        vega_task *t;
        VCHECK_EQ(vega_task_spawn(&t, write_lines, &w), 0);

        vega_bufreader br;
        VCHECK_EQ(vega_bufreader_init(&br, fb, NULL, 64), 0);
        uint64_t x = seed;
        char got[64], want[64];
        for (long i = 0; i < lines; i++) {
            size_t n = line_len(&x);
            make_line(want, n, i);
            vega_ssize r = vega_bufreader_read_until(&br, '\n', got, 64, DL(10000));
            if (r != (vega_ssize)n + 1 || memcmp(got, want, n + 1) != 0)
                vtest_fail(__FILE__, __LINE__, "seed %llu line %ld: got %zd want %zu",
                           (unsigned long long)seed, i, r, n + 1);
        }
        VCHECK_EQ(vega_bufreader_read_until(&br, '\n', got, 64, DL(1000)), 0);
        VCHECK_EQ(vega_task_join(t, NULL, DL(10000)), 0);
        vega_bufreader_fini(&br);
        vega_stream_close(fa, 0);
        vega_stream_close(fb, 0);
    }
}

VTEST(random_lines_faulty)
{
    vtest_run(body_random_lines, 0);
}

VTEST(random_lines_faulty_multi_thread)
{
    vtest_run(body_random_lines, 2);
}
