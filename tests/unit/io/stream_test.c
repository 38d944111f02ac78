/* SPDX-License-Identifier: MIT */
/* The stream interface: the in-memory duplex (EOF, back-pressure, deadlines, cancellation,
 * workers, threads), the faulty stream, the vtable fallbacks, sockets, pipes and sendfile. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vega/io.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/test.h>

#include "vtest.h"

#define DL(ms) vega_deadline_in_ms(ms)

/* ---- harness --------------------------------------------------------------------------------- */

/* Loop counts are divided by $VEGA_TEST_SCALE (sanitizer runs set it), never below 1. */
static long scaled(long n)
{
    const char *s = getenv("VEGA_TEST_SCALE");
    long div = s ? atol(s) : 1;
    if (div < 1)
        div = 1;
    return n / div > 0 ? n / div : 1;
}

static unsigned char pat(size_t i)
{
    return (unsigned char)(i * 131u + (i >> 11));
}

static void fill_pattern(unsigned char *p, size_t n, size_t off)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pat(off + i);
}

/* Reads exactly n bytes from s (or fails the test). */
static void read_all(vega_stream *s, void *buf, size_t n, vega_deadline dl)
{
    size_t got = 0;
    while (got < n) {
        vega_ssize r = vega_stream_read(s, (char *)buf + got, n - got, dl);
        if (r <= 0)
            vtest_fail(__FILE__, __LINE__, "read_all: %zd after %zu of %zu", r, got, n);
        got += (size_t)r;
    }
}

/* A task that streams `total` pattern bytes in writes of 1..max bytes, then shuts down. */
struct pump {
    vega_stream *s;
    size_t total, max;
    uint64_t seed;
    bool shutdown;
    vega_ssize res;
};

static void *pump_out(void *arg)
{
    struct pump *p = arg;
    unsigned char buf[4096];
    size_t off = 0;
    uint64_t x = p->seed | 1;
    p->res = 0;
    while (off < p->total) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = 1 + (size_t)(x % (p->max < sizeof(buf) ? p->max : sizeof(buf)));
        if (n > p->total - off)
            n = p->total - off;
        fill_pattern(buf, n, off);
        size_t w = 0;
        vega_ssize r = vega_stream_write(p->s, buf, n, &w, DL(10000));
        if (r != (vega_ssize)n) {
            p->res = r < 0 ? r : -EIO;
            return NULL;
        }
        VCHECK_EQ(w, n);
        off += n;
    }
    if (p->shutdown)
        VCHECK_EQ(vega_stream_shutdown(p->s, SHUT_WR, DL(1000)), 0);
    p->res = (vega_ssize)off;
    return NULL;
}

/* Reads until EOF and checks every byte against the pattern; res = bytes read or error. */
static void *pump_in(void *arg)
{
    struct pump *p = arg;
    unsigned char buf[3000];
    size_t off = 0;
    for (;;) {
        vega_ssize r = vega_stream_read(p->s, buf, 1 + off % sizeof(buf), DL(10000));
        if (r < 0) {
            p->res = r;
            return NULL;
        }
        if (r == 0)
            break;
        for (vega_ssize i = 0; i < r; i++)
            if (buf[i] != pat(off + (size_t)i))
                vtest_fail(__FILE__, __LINE__, "byte %zu differs", off + (size_t)i);
        off += (size_t)r;
    }
    p->res = (vega_ssize)off;
    return NULL;
}

static void join(vega_task *t)
{
    VCHECK_EQ(vega_task_join(t, NULL, DL(20000)), 0);
}

/* ---- duplex: semantics ----------------------------------------------------------------------- */

static void body_duplex_basic(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 64), 0);
    char buf[128];
    size_t w = 99;
    VCHECK_EQ(vega_stream_write(a, "hello", 5, &w, DL(1000)), 5);
    VCHECK_EQ(w, 5);
    VCHECK_EQ(vega_stream_write(b, "world!", 6, NULL, DL(1000)), 6);
    VCHECK_EQ(vega_stream_read(b, buf, 3, DL(1000)), 3); /* partial read */
    VCHECK(memcmp(buf, "hel", 3) == 0);
    VCHECK_EQ(vega_stream_read(b, buf, sizeof(buf), DL(1000)), 2);
    VCHECK(memcmp(buf, "lo", 2) == 0);
    VCHECK_EQ(vega_stream_read(a, buf, sizeof(buf), DL(1000)), 6);
    VCHECK(memcmp(buf, "world!", 6) == 0);
    VCHECK_EQ(vega_stream_read(a, buf, 0, DL(1000)), -EINVAL);

    /* writev gathers into the ring, wrapping around its end. */
    struct iovec iov[3] = {{"ab", 2}, {"", 0}, {"cdefg", 5}};
    for (int i = 0; i < 20; i++) {
        VCHECK_EQ(vega_stream_writev(a, iov, 3, &w, DL(1000)), 7);
        VCHECK_EQ(w, 7);
        read_all(b, buf, 7, DL(1000));
        VCHECK(memcmp(buf, "abcdefg", 7) == 0);
    }

    /* shutdown(SHUT_WR): the peer drains, then reads EOF (every time); our writes fail. */
    VCHECK_EQ(vega_stream_write(a, "tail", 4, NULL, DL(1000)), 4);
    VCHECK_EQ(vega_stream_shutdown(a, SHUT_WR, DL(1000)), 0);
    VCHECK_EQ(vega_stream_write(a, "x", 1, &w, DL(1000)), -EPIPE);
    VCHECK_EQ(w, 0);
    read_all(b, buf, 4, DL(1000));
    VCHECK(memcmp(buf, "tail", 4) == 0);
    VCHECK_EQ(vega_stream_read(b, buf, sizeof(buf), DL(1000)), 0);
    VCHECK_EQ(vega_stream_read(b, buf, sizeof(buf), 0), 0);
    /* The other direction still works. */
    VCHECK_EQ(vega_stream_write(b, "back", 4, NULL, DL(1000)), 4);
    read_all(a, buf, 4, DL(1000));
    VCHECK_EQ(vega_stream_shutdown(a, 42, DL(1000)), -EINVAL);

    /* Closing b: a's writes fail with EPIPE; a reads what b wrote before closing, then EOF. */
    VCHECK_EQ(vega_stream_write(b, "bye", 3, NULL, DL(1000)), 3);
    VCHECK_EQ(vega_stream_close(b, DL(1000)), 0);
    read_all(a, buf, 3, DL(1000));
    VCHECK(memcmp(buf, "bye", 3) == 0);
    VCHECK_EQ(vega_stream_read(a, buf, sizeof(buf), DL(1000)), 0);
    VCHECK_EQ(vega_stream_close(a, DL(1000)), 0);
    VCHECK_EQ(vega_stream_close(NULL, 0), 0);

    /* shutdown(SHUT_RD): buffered bytes are dropped, reads give 0, the peer's writes EPIPE. */
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    VCHECK_EQ(vega_stream_write(b, "dropped", 7, NULL, DL(1000)), 7);
    VCHECK_EQ(vega_stream_shutdown(a, SHUT_RD, DL(1000)), 0);
    VCHECK_EQ(vega_stream_read(a, buf, sizeof(buf), DL(1000)), 0);
    VCHECK_EQ(vega_stream_write(b, "more", 4, &w, DL(1000)), -EPIPE);
    VCHECK_EQ(w, 0);
    VCHECK_EQ(vega_stream_write(a, "still", 5, NULL, DL(1000)), 5);
    read_all(b, buf, 5, DL(1000));
    VCHECK_STR(vega_stream_get_ops(a)->name, "duplex");
    VCHECK_EQ(vega_stream_close(a, 0), 0);
    VCHECK_EQ(vega_stream_close(b, 0), 0);
}

VTEST(duplex_basic)
{
    vtest_run(body_duplex_basic, 0);
}

/* A write larger than the capacity goes in pieces while the reader drains; with dl == 0 a write
 * to a full buffer stops at once and reports what it buffered. */
static void body_duplex_backpressure(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 16), 0);
    unsigned char big[1000], got[1000];
    fill_pattern(big, sizeof(big), 0);
    size_t w = 0;
    VCHECK_EQ(vega_stream_write(a, big, 40, &w, 0), -ETIMEDOUT);
    VCHECK_EQ(w, 16);
    read_all(b, got, 16, DL(1000));
    VCHECK(memcmp(got, big, 16) == 0);

    struct pump in = {.s = b, .total = 0};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, pump_in, &in), 0);
    VCHECK_EQ(vega_stream_write(a, big, sizeof(big), &w, DL(5000)), (vega_ssize)sizeof(big));
    VCHECK_EQ(w, sizeof(big));
    VCHECK_EQ(vega_stream_shutdown(a, SHUT_WR, DL(1000)), 0);
    join(t);
    VCHECK_EQ(in.res, (vega_ssize)sizeof(big));

    /* A blocked writer times out with the bytes it buffered reported. */
    vega_stream_close(b, 0);
    vega_stream_close(a, 0);
    VCHECK_EQ(vega_duplex_new(&a, &b, 16), 0);
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_stream_write(a, big, 100, &w, DL(30)), -ETIMEDOUT);
    VCHECK(vega_now() - t0 >= 25 * VEGA_NS_PER_MS);
    VCHECK_EQ(w, 16);
    read_all(b, got, 16, DL(1000));
    VCHECK(memcmp(got, big, 16) == 0);
    VCHECK_EQ(vega_stream_read(b, got, 1, 0), -ETIMEDOUT);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);
}

VTEST(duplex_backpressure)
{
    vtest_run(body_duplex_backpressure, 0);
}

VTEST(duplex_backpressure_multi_thread)
{
    vtest_run(body_duplex_backpressure, 2);
}

/* ---- duplex: deadlines and cancellation ------------------------------------------------------ */

struct blocked {
    vega_stream *s;
    atomic_bool started;
    vega_ssize res;
    char buf[16];
};

static void *blocked_read(void *arg)
{
    struct blocked *b = arg;
    atomic_store(&b->started, true);
    b->res = vega_stream_read(b->s, b->buf, sizeof(b->buf), VEGA_DEADLINE_NEVER);
    return NULL;
}

static void wait_started(struct blocked *b)
{
    while (!atomic_load(&b->started))
        VCHECK_EQ(vega_sleep_ms(1), 0);
    VCHECK_EQ(vega_sleep_ms(10), 0); /* let it park */
}

static void body_duplex_read_deadline(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    char buf[8];
    VCHECK_EQ(vega_stream_read(b, buf, sizeof(buf), 0), -ETIMEDOUT);
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_stream_read(b, buf, sizeof(buf), DL(30)), -ETIMEDOUT);
    VCHECK_WAITED(t0, 30); /* never early; on the paused clock, exactly 30 ms */

    /* A deadline scope caps a NEVER read too. */
    t0 = vega_now();
    vega_deadline saved = vega_deadline_push(DL(20));
    VCHECK_EQ(vega_stream_read(b, buf, sizeof(buf), VEGA_DEADLINE_NEVER), -ETIMEDOUT);
    vega_deadline_pop(saved);
    VCHECK_WAITED(t0, 20);

    /* Still usable after timing out. */
    VCHECK_EQ(vega_stream_write(a, "ok", 2, NULL, DL(1000)), 2);
    VCHECK_EQ(vega_stream_read(b, buf, sizeof(buf), DL(1000)), 2);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);
}

VTEST(duplex_read_deadline)
{
    vtest_run_paused(body_duplex_read_deadline);
}

VTEST(duplex_read_deadline_multi_thread)
{
    vtest_run(body_duplex_read_deadline, 2);
}

static void body_duplex_read_cancel(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    struct blocked bl = {.s = b, .res = 1};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, blocked_read, &bl), 0);
    wait_started(&bl);
    vega_task_cancel(t);
    join(t);
    VCHECK_EQ(bl.res, -ECANCELED);

    /* Nothing consumed or broken: another reader blocks and is woken by data. */
    bl.res = 0;
    atomic_store(&bl.started, false);
    VCHECK_EQ(vega_task_spawn(&t, blocked_read, &bl), 0);
    wait_started(&bl);
    VCHECK_EQ(vega_stream_write(a, "again", 5, NULL, DL(1000)), 5);
    join(t);
    VCHECK_EQ(bl.res, 5);
    VCHECK(memcmp(bl.buf, "again", 5) == 0);

    /* A reader blocked while the peer closes wakes with EOF. */
    atomic_store(&bl.started, false);
    VCHECK_EQ(vega_task_spawn(&t, blocked_read, &bl), 0);
    wait_started(&bl);
    vega_stream_close(a, 0);
    join(t);
    VCHECK_EQ(bl.res, 0);
    vega_stream_close(b, 0);
}

VTEST(duplex_read_cancel)
{
    vtest_run(body_duplex_read_cancel, 0);
}

VTEST(duplex_read_cancel_multi_thread)
{
    vtest_run(body_duplex_read_cancel, 3);
}

struct blocked_writer {
    vega_stream *s;
    atomic_bool started;
    vega_ssize res;
    size_t written;
};

static void *blocked_write(void *arg)
{
    struct blocked_writer *b = arg;
    static unsigned char big[100];
    atomic_store(&b->started, true);
    b->res = vega_stream_write(b->s, big, sizeof(big), &b->written, VEGA_DEADLINE_NEVER);
    return NULL;
}

/* On the current-thread runtime: the writer runs from its start to its first suspension before
 * this task runs again, so once `started` is seen the writer has buffered its 32 bytes and waits
 * for room. (On several workers a nap would only make that likely: a write cancelled before it
 * began buffers nothing.) */
static void body_duplex_write_cancel(void)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 32), 0);
    struct blocked_writer bw = {.s = a};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, blocked_write, &bw), 0);
    while (!atomic_load(&bw.started))
        VCHECK_EQ(vega_yield(), 0);
    vega_task_cancel(t);
    join(t);
    VCHECK_EQ(bw.res, -ECANCELED);
    VCHECK_EQ(bw.written, 32);

    /* A writer blocked on a full buffer gets EPIPE when the reader closes. */
    unsigned char got[32];
    read_all(b, got, 32, DL(1000));
    bw = (struct blocked_writer){.s = a};
    VCHECK_EQ(vega_task_spawn(&t, blocked_write, &bw), 0);
    while (!atomic_load(&bw.started))
        VCHECK_EQ(vega_yield(), 0);
    vega_stream_close(b, 0);
    join(t);
    VCHECK_EQ(bw.res, -EPIPE);
    VCHECK_EQ(bw.written, 32);
    vega_stream_close(a, 0);
}

VTEST(duplex_write_cancel_and_epipe)
{
    vtest_run(body_duplex_write_cancel, 0);
}

/* ---- duplex: across workers and threads ------------------------------------------------------ */

static void body_duplex_workers(void)
{
    size_t total = (size_t)scaled(4L << 20);
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 4096), 0);
    struct pump p[4] = {
        {.s = a, .total = total, .max = 4096, .seed = 1, .shutdown = true},
        {.s = b, .total = total, .max = 777, .seed = 2, .shutdown = true},
        {.s = b},
        {.s = a},
    };
    vega_task *t[4];
    VCHECK_EQ(vega_task_spawn(&t[0], pump_out, &p[0]), 0);
    VCHECK_EQ(vega_task_spawn(&t[1], pump_out, &p[1]), 0);
    VCHECK_EQ(vega_task_spawn(&t[2], pump_in, &p[2]), 0);
    VCHECK_EQ(vega_task_spawn(&t[3], pump_in, &p[3]), 0);
    for (int i = 0; i < 4; i++)
        join(t[i]);
    for (int i = 0; i < 4; i++)
        VCHECK_EQ(p[i].res, (vega_ssize)total);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);
}

VTEST(duplex_across_workers)
{
    vtest_run(body_duplex_workers, 4);
}

static void *thread_reader(void *arg)
{
    pump_in(arg);
    return NULL;
}

static void *join_thread(void *arg)
{
    pthread_join(*(pthread_t *)arg, NULL);
    return NULL;
}

/* A plain thread reads (blocking on a futex) what a task writes. */
static void body_duplex_thread(void)
{
    size_t total = (size_t)scaled(1L << 20);
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 1000), 0);
    struct pump in = {.s = b},
                out = {.s = a, .total = total, .max = 3000, .seed = 5, .shutdown = true};
    pthread_t th;
    VCHECK_EQ(pthread_create(&th, NULL, thread_reader, &in), 0);
    pump_out(&out);
    VCHECK_EQ(out.res, (vega_ssize)total);
    VCHECK_EQ(vega_blocking(join_thread, &th, NULL, DL(10000)), 0);
    VCHECK_EQ(in.res, (vega_ssize)total);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);
}

VTEST(duplex_plain_thread)
{
    vtest_run(body_duplex_thread, 2);
}

/* ---- vtable fallbacks ------------------------------------------------------------------------ */

/* A stream with write only (no writev): records each write. */
struct rec {
    unsigned char data[8192];
    size_t len, calls;
    int closed;
};

static vega_ssize rec_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    return 0;
}

static vega_ssize rec_write(void *user, const void *buf, size_t len, size_t *written,
                            vega_deadline dl)
{
    struct rec *r = user;
    size_t n = len;
    if (r->len + n > sizeof(r->data))
        n = sizeof(r->data) - r->len; /* "disk full" after 8 KiB */
    memcpy(r->data + r->len, buf, n);
    r->len += n;
    r->calls++;
    *written = n;
    return n == len ? (vega_ssize)len : -ENOSPC;
}

static int rec_close(void *user, vega_deadline dl)
{
    ((struct rec *)user)->closed++;
    return -EIO; /* a failed flush is reported */
}

static const vega_stream_ops rec_ops = {
    .name = "rec", .read = rec_read, .write = rec_write, .close = rec_close};

static vega_ssize rv_writev(void *user, const struct iovec *iov, int iovcnt, size_t *written,
                            vega_deadline dl)
{
    struct rec *r = user;
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        memcpy(r->data + r->len, iov[i].iov_base, iov[i].iov_len);
        r->len += iov[i].iov_len;
        total += iov[i].iov_len;
    }
    r->calls++;
    *written = total;
    return (vega_ssize)total;
}

static const vega_stream_ops rv_ops = {.name = "rv", .read = rec_read, .writev = rv_writev};

static void body_fallbacks(void)
{
    vega_stream *s;
    static const vega_stream_ops no_read = {.write = rec_write};
    static const vega_stream_ops no_write = {.read = rec_read};
    VCHECK_EQ(vega_stream_new(&s, &no_read, NULL), -EINVAL);
    VCHECK_EQ(vega_stream_new(&s, &no_write, NULL), -EINVAL);

    /* writev over write: small entries are gathered, big ones written as they are. */
    static struct rec r;
    VCHECK_EQ(vega_stream_new(&s, &rec_ops, &r), 0);
    VCHECK(vega_stream_user(s) == &r);
    static unsigned char big[3000];
    fill_pattern(big, sizeof(big), 0);
    struct iovec iov[5] = {{"ab", 2}, {"cd", 2}, {big, 1000}, {"ef", 2}, {"", 0}};
    size_t w;
    VCHECK_EQ(vega_stream_writev(s, iov, 5, &w, DL(1000)), 1006);
    VCHECK_EQ(w, 1006);
    VCHECK_EQ(r.calls, 3);
    VCHECK(memcmp(r.data, "abcd", 4) == 0 && memcmp(r.data + 4, big, 1000) == 0 &&
           memcmp(r.data + 1004, "ef", 2) == 0);
    /* Many small entries: gathered in batches of the staging buffer. */
    struct iovec many[100];
    for (int i = 0; i < 100; i++)
        many[i] = (struct iovec){big + 30 * i, 30};
    r.len = r.calls = 0;
    VCHECK_EQ(vega_stream_writev(s, many, 100, &w, DL(1000)), 3000);
    VCHECK(r.calls >= 2 && r.calls <= 3);
    VCHECK(memcmp(r.data, big, 3000) == 0);
    /* An error says how many bytes went out. */
    r.len = 8000;
    VCHECK_EQ(vega_stream_writev(s, iov, 5, &w, DL(1000)), -ENOSPC);
    VCHECK_EQ(w, 192);
    VCHECK_EQ(vega_stream_writev(s, iov, -1, &w, DL(1000)), -EINVAL);
    VCHECK_EQ(vega_stream_shutdown(s, SHUT_WR, DL(1000)), -EOPNOTSUPP);
    VCHECK_EQ(vega_stream_close(s, DL(1000)), -EIO);
    VCHECK_EQ(r.closed, 1);

    /* write over writev. */
    static struct rec r2;
    VCHECK_EQ(vega_stream_new(&s, &rv_ops, &r2), 0);
    VCHECK_EQ(vega_stream_write(s, "xyz", 3, &w, DL(1000)), 3);
    VCHECK_EQ(w, 3);
    VCHECK(memcmp(r2.data, "xyz", 3) == 0);
    VCHECK_EQ(vega_stream_close(s, DL(1000)), 0);
}

VTEST(vtable_fallbacks)
{
    vtest_run(body_fallbacks, 0);
}

/* ---- faulty ---------------------------------------------------------------------------------- */

static void body_faulty_pump(void)
{
    size_t total = (size_t)scaled(512 * 1024);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        vega_stream *a, *b, *fa, *fb;
        VCHECK_EQ(vega_duplex_new(&a, &b, 1024), 0);
        vega_fault_opts o;
        vega_fault_opts_init(&o);
        o.seed = seed;
        o.short_read_pct = 50;
        o.short_write_pct = 50;
        o.short_max = 64;
        o.delay_pct = 1;
        o.delay_max_ms = 2;
        VCHECK_EQ(vega_faulty_new(&fa, a, &o), 0);
        o.seed = seed * 7919;
        VCHECK_EQ(vega_faulty_new(&fb, b, &o), 0);
        struct pump out = {.s = fa, .total = total, .max = 2000, .seed = seed, .shutdown = true};
        struct pump in = {.s = fb};
        vega_task *t;
        VCHECK_EQ(vega_task_spawn(&t, pump_in, &in), 0);
        pump_out(&out);
        join(t);
        VCHECK_EQ(out.res, (vega_ssize)total);
        VCHECK_EQ(in.res, (vega_ssize)total);
        vega_fault_stats sa, sb;
        VCHECK_EQ(vega_faulty_get_stats(fa, &sa), 0);
        VCHECK_EQ(vega_faulty_get_stats(fb, &sb), 0);
        VCHECK_EQ(vega_faulty_get_stats(b, &sa), -EINVAL); /* not a faulty stream */
        VCHECK(sa.short_writes > 0);
        VCHECK(sb.short_reads > 0);
        VCHECK(sa.delays + sb.delays > 0 || total < 100000);
        VCHECK_EQ(sa.bytes_written, total);
        VCHECK_EQ(sb.bytes_read, total);
        VCHECK_EQ(sa.errors + sb.errors, 0);
        VCHECK_EQ(vega_stream_close(fa, 0), 0);
        VCHECK_EQ(vega_stream_close(fb, 0), 0);
    }
}

VTEST(faulty_short_and_delays)
{
    vtest_run(body_faulty_pump, 0);
}

VTEST(faulty_short_and_delays_multi_thread)
{
    vtest_run(body_faulty_pump, 2);
}

static void body_faulty_offsets(void)
{
    vega_stream *a, *b, *fa, *fb;
    VCHECK_EQ(vega_duplex_new(&a, &b, 4096), 0);
    vega_fault_opts o;
    vega_fault_opts_init(&o);
    o.write_fail_at = 1000;
    VCHECK_EQ(vega_faulty_new(&fa, a, &o), 0);
    vega_fault_opts_init(&o);
    o.read_fail_at = 700;
    o.read_err = -EIO;
    VCHECK_EQ(vega_faulty_new(&fb, b, &o), 0);
    static unsigned char buf[1200], got[1200];
    fill_pattern(buf, sizeof(buf), 0);
    size_t w;
    VCHECK_EQ(vega_stream_write(fa, buf, 600, &w, DL(1000)), 600);
    VCHECK_EQ(vega_stream_write(fa, buf + 600, 600, &w, DL(1000)), -ECONNRESET);
    VCHECK_EQ(w, 400);
    VCHECK_EQ(vega_stream_write(fa, buf, 1, &w, DL(1000)), -ECONNRESET); /* sticky */
    VCHECK_EQ(w, 0);
    /* The reader sees exactly 700 bytes, then its own injected error, sticky too. */
    size_t off = 0;
    vega_ssize r;
    while ((r = vega_stream_read(fb, got + off, sizeof(got) - off, DL(1000))) > 0)
        off += (size_t)r;
    VCHECK_EQ(r, -EIO);
    VCHECK_EQ(off, 700);
    VCHECK(memcmp(got, buf, 700) == 0);
    VCHECK_EQ(vega_stream_read(fb, got, 1, DL(1000)), -EIO);
    /* The inner stream still holds the remaining 300 bytes that passed the writer's fault. */
    read_all(b, got, 300, DL(1000));
    VCHECK(memcmp(got, buf + 700, 300) == 0);
    vega_fault_stats st;
    VCHECK_EQ(vega_faulty_get_stats(fa, &st), 0);
    VCHECK_EQ(st.errors, 1);
    VCHECK_EQ(st.bytes_written, 1000);
    VCHECK_EQ(vega_stream_close(fa, 0), 0);
    VCHECK_EQ(vega_stream_close(fb, 0), 0);

    /* Offset 0: the first operation fails. */
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_fault_opts_init(&o);
    o.write_fail_at = 0;
    o.write_err = -EPIPE;
    VCHECK_EQ(vega_faulty_new(&fa, a, &o), 0);
    VCHECK_EQ(vega_stream_write(fa, "x", 1, &w, DL(1000)), -EPIPE);
    VCHECK_EQ(w, 0);
    o.write_err = 5;
    VCHECK_EQ(vega_faulty_new(&fb, b, &o), -EINVAL);
    vega_stream_close(fa, 0);
    vega_stream_close(b, 0);
}

VTEST(faulty_error_at_offset)
{
    vtest_run(body_faulty_offsets, 0);
}

/* Random errors: whatever happens, *written tells exactly what the peer received. */
static void body_faulty_random_errors(void)
{
    for (uint64_t seed = 1; seed <= (uint64_t)scaled(40); seed++) {
        vega_stream *a, *b, *fa;
        VCHECK_EQ(vega_duplex_new(&a, &b, 1 << 16), 0);
        vega_fault_opts o;
        vega_fault_opts_init(&o);
        o.seed = seed;
        o.fail_ppm = 50000; /* 5% */
        o.short_write_pct = 30;
        VCHECK_EQ(vega_faulty_new(&fa, a, &o), 0);
        unsigned char buf[200];
        size_t sent = 0;
        vega_ssize r = 0;
        for (int i = 0; i < 200 && r >= 0; i++) {
            size_t n = 1 + (size_t)((uint64_t)i * 37 + seed) % sizeof(buf);
            fill_pattern(buf, n, sent);
            size_t w = 0;
            r = vega_stream_write(fa, buf, n, &w, DL(1000));
            VCHECK(r < 0 ? w <= n : (w == n && r == (vega_ssize)n));
            if (r < 0)
                VCHECK_EQ(r, -ECONNRESET);
            sent += w;
        }
        VCHECK(r < 0); /* 200 writes at 5%: a failure is all but certain for these seeds */
        vega_stream_shutdown(a, SHUT_WR, 0);
        struct pump in = {.s = b};
        pump_in(&in);
        VCHECK_EQ(in.res, (vega_ssize)sent);
        vega_stream_close(fa, 0);
        vega_stream_close(b, 0);
    }
}

VTEST(faulty_random_errors)
{
    vtest_run(body_faulty_random_errors, 0);
}

/* The same seed gives the same cuts. */
static void read_sizes(uint64_t seed, size_t *sizes, int n)
{
    vega_stream *a, *b, *fb;
    VCHECK_EQ(vega_duplex_new(&a, &b, 1 << 16), 0);
    vega_fault_opts o;
    vega_fault_opts_init(&o);
    o.seed = seed;
    o.short_read_pct = 70;
    o.short_max = 100;
    VCHECK_EQ(vega_faulty_new(&fb, b, &o), 0);
    static unsigned char buf[1 << 15];
    VCHECK_EQ(vega_stream_write(a, buf, sizeof(buf), NULL, DL(1000)), (vega_ssize)sizeof(buf));
    for (int i = 0; i < n; i++) {
        vega_ssize r = vega_stream_read(fb, buf, 200, DL(1000));
        VCHECK(r > 0);
        sizes[i] = (size_t)r;
    }
    vega_stream_close(a, 0);
    vega_stream_close(fb, 0);
}

static void body_faulty_seed(void)
{
    size_t s1[64], s2[64], s3[64];
    read_sizes(42, s1, 64);
    read_sizes(42, s2, 64);
    read_sizes(43, s3, 64);
    VCHECK(memcmp(s1, s2, sizeof(s1)) == 0);
    VCHECK(memcmp(s1, s3, sizeof(s1)) != 0);
    int cut = 0;
    for (int i = 0; i < 64; i++)
        cut += s1[i] < 200;
    VCHECK(cut > 20 && cut < 64);
}

VTEST(faulty_seed_reproducible)
{
    vtest_run(body_faulty_seed, 0);
}

static void body_faulty_delay_deadline(void)
{
    vega_stream *a, *b, *fb;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_fault_opts o;
    vega_fault_opts_init(&o);
    o.delay_pct = 100;
    o.delay_max_ms = 50;
    VCHECK_EQ(vega_faulty_new(&fb, b, &o), 0);
    VCHECK_EQ(vega_stream_write(a, "abc", 3, NULL, DL(1000)), 3);
    char buf[8];
    /* With dl == 0 a stall is a would-block. */
    VCHECK_EQ(vega_stream_read(fb, buf, sizeof(buf), 0), -ETIMEDOUT);
    VCHECK_EQ(vega_stream_read(fb, buf, sizeof(buf), DL(1000)), 3);
    vega_fault_stats st;
    VCHECK_EQ(vega_faulty_get_stats(fb, &st), 0);
    VCHECK_EQ(st.delays, 2);
    vega_stream_close(a, 0);
    vega_stream_close(fb, 0);
}

VTEST(faulty_delay_within_deadline)
{
    vtest_run(body_faulty_delay_deadline, 0);
}

/* API rules, ABI: vega_fault_stats is versioned as options are. A layout this library does not
 * know is refused and the struct left as it was; the current one is filled to its end and not
 * past it. */
static void body_faulty_stats_layouts(void)
{
    vega_stream *a, *b, *fa;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_fault_opts o;
    vega_fault_opts_init(&o);
    VCHECK_EQ(vega_faulty_new(&fa, a, &o), 0);
    VCHECK_EQ(vega_stream_write(fa, "abc", 3, NULL, DL(1000)), 3);
    struct {
        vega_fault_stats st;
        unsigned char canary[64];
    } x;
    memset(&x, 0xa5, sizeof x);
    VCHECK_EQ(vega_faulty_get_stats_versioned(fa, &x.st, VEGA_FAULT_STATS_VERSION + 1), -EINVAL);
    VCHECK_EQ(vega_faulty_get_stats_versioned(fa, &x.st, 0), -EINVAL);
    VCHECK_EQ(vega_faulty_get_stats_versioned(NULL, &x.st, 1), -EINVAL);
    VCHECK_EQ(vega_faulty_get_stats_versioned(fa, NULL, 1), -EINVAL);
    VCHECK_EQ(vega_faulty_get_stats(b, &x.st), -EINVAL); /* not a faulty stream */
    for (size_t i = 0; i < sizeof x; i++)
        VCHECK_EQ(((unsigned char *)&x)[i], 0xa5);
    VCHECK_EQ(vega_faulty_get_stats(fa, &x.st), 0);
    VCHECK_EQ(x.st.writes, 1);
    VCHECK_EQ(x.st.bytes_written, 3);
    VCHECK_EQ(x.st.reads, 0);
    for (size_t i = 0; i < sizeof x.canary; i++)
        VCHECK_EQ(x.canary[i], 0xa5);
    VCHECK_EQ(vega_stream_close(fa, 0), 0);
    VCHECK_EQ(vega_stream_close(b, 0), 0);
}

VTEST(faulty_stats_layouts)
{
    vtest_run(body_faulty_stats_layouts, 0);
}

/* ---- OS streams: TCP, pipes, socketpairs, sendfile ------------------------------------------- */

static void tcp_pair(vega_sock **client, vega_sock **server)
{
    vega_addr a;
    vega_sock *l;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_tcp_listen(&l, &a, 0, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(l, &a), 0);
    VCHECK_EQ(vega_tcp_connect(client, &a, DL(5000)), 0);
    VCHECK_EQ(vega_tcp_accept(l, server, NULL, DL(5000)), 0);
    VCHECK_EQ(vega_sock_close(l), 0);
}

/* vega_stream_sock_rebind: a borrowing sock stream moved from one socket to another reads and
 * writes the new one; the old one is left alone; owning and other streams are refused. */
static void body_sock_rebind(void)
{
    vega_sock *c1, *s1, *c2, *s2;
    tcp_pair(&c1, &s1);
    tcp_pair(&c2, &s2);
    vega_stream *w, *own, *a, *b;
    VCHECK_EQ(vega_stream_from_sock(&w, s1, VEGA_STREAM_BORROW), 0);
    VCHECK_EQ(vega_stream_write(w, "one", 3, NULL, DL(5000)), 3);
    char buf[8];
    VCHECK_EQ(vega_sock_read(c1, buf, sizeof buf, DL(5000)), 3);
    VCHECK(memcmp(buf, "one", 3) == 0);
    VCHECK_EQ(vega_stream_sock_rebind(w, s2), 0);
    VCHECK(vega_stream_sock(w) == s2);
    VCHECK_EQ(vega_stream_write(w, "two", 3, NULL, DL(5000)), 3);
    VCHECK_EQ(vega_sock_read(c2, buf, sizeof buf, DL(5000)), 3);
    VCHECK(memcmp(buf, "two", 3) == 0);
    VCHECK_EQ(vega_sock_write(c2, "back", 4, NULL, DL(5000)), 4);
    VCHECK_EQ(vega_stream_read(w, buf, sizeof buf, DL(5000)), 4);
    VCHECK(memcmp(buf, "back", 4) == 0);
    /* the first socket is still open and untouched by the wrapper */
    VCHECK_EQ(vega_sock_write(s1, "x", 1, NULL, DL(5000)), 1);
    VCHECK_EQ(vega_sock_read(c1, buf, sizeof buf, DL(5000)), 1);
    /* refused: NULLs, an owning wrapper, another kind of stream */
    VCHECK_EQ(vega_stream_sock_rebind(NULL, s1), -EINVAL);
    VCHECK_EQ(vega_stream_sock_rebind(w, NULL), -EINVAL);
    VCHECK_EQ(vega_stream_from_sock(&own, c1, 0), 0); /* takes c1 */
    VCHECK_EQ(vega_stream_sock_rebind(own, c2), -EINVAL);
    VCHECK(vega_stream_sock(own) == c1);
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    VCHECK_EQ(vega_stream_sock_rebind(a, s1), -EINVAL);
    vega_stream_close(a, DL(1000));
    vega_stream_close(b, DL(1000));
    vega_stream_close(own, DL(1000));
    vega_stream_close(w, DL(1000)); /* borrowed: s2 stays open */
    VCHECK_EQ(vega_sock_close(s1), 0);
    VCHECK_EQ(vega_sock_close(s2), 0);
    VCHECK_EQ(vega_sock_close(c2), 0);
}

VTEST(sock_rebind)
{
    vtest_run(body_sock_rebind, 0);
}

static void body_tcp(void)
{
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    vega_stream *sc, *ss;
    VCHECK_EQ(vega_stream_from_sock(&sc, NULL, 0), -EINVAL);
    VCHECK_EQ(vega_stream_from_sock(&sc, c, 8), -EINVAL);
    VCHECK_EQ(vega_stream_from_sock(&sc, c, 0), 0); /* takes c */
    VCHECK_EQ(vega_stream_from_sock(&ss, s, VEGA_STREAM_BORROW), 0);
    VCHECK_STR(vega_stream_get_ops(sc)->name, "sock");
    /* the socket under a sock stream, owned or borrowed; none under other streams */
    VCHECK(vega_stream_sock(sc) == c);
    VCHECK(vega_stream_sock(ss) == s);
    VCHECK(vega_stream_sock(NULL) == NULL);

    size_t total = (size_t)scaled(4L << 20);
    struct pump out = {.s = sc, .total = total, .max = 4096, .seed = 3, .shutdown = true};
    struct pump in = {.s = ss};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, pump_in, &in), 0);
    pump_out(&out);
    join(t);
    VCHECK_EQ(in.res, (vega_ssize)total);

    /* sendfile(2) of a temporary file, from an offset. */
    char path[] = "/tmp/vega_stream_XXXXXX";
    int fd = mkstemp(path);
    VCHECK(fd >= 0);
    unlink(path);
    static unsigned char file[100000], got[100000];
    fill_pattern(file, sizeof(file), 0);
    VCHECK_EQ(write(fd, file, sizeof(file)), (ssize_t)sizeof(file));
    size_t w;
    VCHECK_EQ(vega_stream_sendfile(ss, fd, 1000, 50000, &w, DL(5000)), 50000);
    VCHECK_EQ(w, 50000);
    read_all(sc, got, 50000, DL(5000));
    VCHECK(memcmp(got, file + 1000, 50000) == 0);
    /* The file ends first: -ENODATA, with what was sent. */
    VCHECK_EQ(vega_stream_sendfile(ss, fd, 99000, 5000, &w, DL(5000)), -ENODATA);
    VCHECK_EQ(w, 1000);
    read_all(sc, got, 1000, DL(5000));
    VCHECK(memcmp(got, file + 99000, 1000) == 0);

    /* The fallback through a buffer, over a duplex. */
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 1 << 17), 0);
    VCHECK(vega_stream_sock(a) == NULL);
    VCHECK_EQ(vega_stream_sendfile(a, fd, 10, 70000, &w, DL(5000)), 70000);
    read_all(b, got, 70000, DL(5000));
    VCHECK(memcmp(got, file + 10, 70000) == 0);
    VCHECK_EQ(vega_stream_sendfile(a, fd, 99990, 20, &w, DL(5000)), -ENODATA);
    VCHECK_EQ(w, 10);
    read_all(b, got, 10, DL(5000));
    VCHECK(memcmp(got, file + 99990, 10) == 0);
    VCHECK_EQ(vega_stream_sendfile(a, fd, -1, 10, &w, DL(5000)), -EINVAL);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);
    close(fd);

    /* The borrowed socket outlives its stream. */
    VCHECK_EQ(vega_stream_close(ss, 0), 0);
    VCHECK_EQ(vega_sock_write(s, "x", 1, NULL, DL(1000)), 1);
    char ch;
    VCHECK_EQ(vega_stream_read(sc, &ch, 1, DL(1000)), 1);
    VCHECK_EQ(vega_sock_shutdown(s, SHUT_WR), 0);
    VCHECK_EQ(vega_stream_read(sc, &ch, 1, DL(1000)), 0);
    VCHECK_EQ(vega_sock_close(s), 0);
    VCHECK_EQ(vega_stream_close(sc, 0), 0);
}

VTEST(tcp_stream)
{
    vtest_run(body_tcp, 2);
}

VTEST(tcp_stream_current_thread)
{
    vtest_run(body_tcp, 0);
}

static void body_pipe(void)
{
    int p[2];
    VCHECK_EQ(pipe2(p, O_CLOEXEC), 0);
    vega_stream *r, *w;
    VCHECK_EQ(vega_stream_from_fd(&r, -1, -1, 0), -EINVAL);
    VCHECK_EQ(vega_stream_from_fd(&r, p[0], -1, 0), 0);
    VCHECK_EQ(vega_stream_from_fd(&w, -1, p[1], 0), 0);
    char ch;
    VCHECK_EQ(vega_stream_write(r, "x", 1, NULL, DL(100)), -EBADF);
    VCHECK_EQ(vega_stream_read(w, &ch, 1, DL(100)), -EBADF);
    VCHECK_EQ(vega_stream_read(r, &ch, 1, DL(20)), -ETIMEDOUT);

    size_t total = (size_t)scaled(2L << 20);
    struct pump out = {.s = w, .total = total, .max = 5000, .seed = 9, .shutdown = true};
    struct pump in = {.s = r};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, pump_in, &in), 0);
    pump_out(&out); /* shutdown(SHUT_WR) closes the write end: the reader sees EOF */
    join(t);
    VCHECK_EQ(out.res, (vega_ssize)total);
    VCHECK_EQ(in.res, (vega_ssize)total);
    VCHECK_EQ(vega_stream_write(w, "x", 1, NULL, DL(100)), -EPIPE);
    VCHECK_EQ(vega_stream_close(w, 0), 0);
    VCHECK_EQ(vega_stream_close(r, 0), 0);

    /* A socketpair as one descriptor for both directions; shutdown is shutdown(2). */
    int sp[2];
    VCHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
    vega_stream *x, *y;
    VCHECK_EQ(vega_stream_from_fd(&x, sp[0], sp[0], 0), 0);
    VCHECK_EQ(vega_stream_from_fd(&y, sp[1], sp[1], VEGA_STREAM_BORROW), 0);
    VCHECK_EQ(vega_stream_write(x, "ping", 4, NULL, DL(1000)), 4);
    char buf[8];
    read_all(y, buf, 4, DL(1000));
    VCHECK_EQ(vega_stream_write(y, "pong", 4, NULL, DL(1000)), 4);
    VCHECK_EQ(vega_stream_shutdown(y, SHUT_WR, DL(1000)), 0);
    read_all(x, buf, 4, DL(1000));
    VCHECK(memcmp(buf, "pong", 4) == 0);
    VCHECK_EQ(vega_stream_read(x, buf, sizeof(buf), DL(1000)), 0);
    VCHECK_EQ(vega_stream_close(x, 0), 0);
    VCHECK_EQ(vega_stream_close(y, 0), 0);
    VCHECK_EQ(fcntl(sp[1], F_GETFD) >= 0, 1); /* borrowed: still open */
    close(sp[1]);
}

VTEST(pipe_stream)
{
    vtest_run(body_pipe, 2);
}
