/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the HTTP client over HTTP/2 (lib/http_client h2_*.c: the connection's
 * reader and writer tasks, the core's callbacks filling responses, streams, slots, bodies both
 * ways, resets, GOAWAY and the retry on a new connection) whose server is the fuzzer. The
 * client's connect hook hands it in-memory duplexes (h2c by prior knowledge); behind each, a
 * "server" sends a SETTINGS frame and then its segment of the input, in pieces, while it drains
 * what the client writes.
 *
 * Input: byte 0 option bits (see struct opts), byte 1 seeds the split points; then the
 * server's bytes: the first connection's segment after a 2-byte big-endian length, the second's
 * (the rest). A connection beyond them is refused. The client sends 1..4 requests at once (each
 * in its own task, on the shared connection) and reads each body in pieces. Checks: no crash,
 * leak or hang; every call returns a code its contract lists; a response's version is 20; the
 * body never exceeds max_body; an end or an error is sticky. The runtime runs on the paused
 * clock (current thread), so deadlines cost no wall time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/h2.h>
#include <vega/http_client.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/test.h>

#include "fuzz_target.h"

#define MAX_SEGS   2
#define MAX_REQS   4
#define SILENCE_MS 3600000

_Noreturn static void fail(const char *why, long code)
{
    fprintf(stderr, "http_client_h2_fuzz: %s (%ld)\n", why, code);
    abort();
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

struct opts {
    unsigned nreqs;
    bool body, body_fn, head, small_reads, small_body, drop_early, decompress;
    uint64_t seed;
};

struct seg {
    const uint8_t *data;
    size_t len;
    vega_stream *end;
    vega_task *writer, *drain;
    uint64_t seed;
};

struct state {
    struct opts o;
    struct seg segs[MAX_SEGS];
    unsigned nsegs, next;
};

/* The server's SETTINGS (empty: the defaults) and an ACK of the client's, then the input. */
static void *writer_main(void *arg)
{
    struct seg *s = arg;
    static const uint8_t hello[] = {0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0};
    if (vega_stream_write(s->end, hello, sizeof hello, NULL, vega_deadline_in_ms(SILENCE_MS)) < 0)
        return NULL;
    size_t at = 0;
    while (at < s->len) {
        uint64_t r = rnd(&s->seed);
        size_t k = r & 1 ? s->len - at : 1 + (size_t)(r >> 8) % 300;
        k = k < s->len - at ? k : s->len - at;
        if (vega_stream_write(s->end, s->data + at, k, NULL, vega_deadline_in_ms(SILENCE_MS)) < 0)
            return NULL;
        at += k;
        if ((r >> 40) & 1)
            vega_yield();
    }
    vega_stream_shutdown(s->end, SHUT_WR, 0);
    return NULL;
}

static void *drain_main(void *arg)
{
    struct seg *s = arg;
    uint8_t buf[4096];
    for (;;) {
        vega_ssize n = vega_stream_read(s->end, buf, sizeof buf, vega_deadline_in_ms(SILENCE_MS));
        if (n == -ETIMEDOUT)
            fail("the client neither wrote nor closed", 0);
        if (n <= 0)
            break;
    }
    return NULL;
}

static int hook(void *user, const char *host, uint16_t port, bool tls, vega_stream **out,
                vega_deadline dl)
{
    struct state *st = user;
    (void)host, (void)port, (void)dl;
    if (tls)
        fail("h2c asked for TLS", 0);
    if (st->next == st->nsegs)
        return -ECONNREFUSED;
    struct seg *s = &st->segs[st->next++];
    vega_stream *cli;
    if (vega_duplex_new(&cli, &s->end, 0) < 0 || vega_task_spawn(&s->writer, writer_main, s) < 0 ||
        vega_task_spawn(&s->drain, drain_main, s) < 0)
        abort();
    *out = cli;
    return 0;
}

static void check_rc(long rc, const char *what)
{
    if (rc >= 0 || rc == VEGA_ERR_HTTP_EMPTY_REPLY || rc == VEGA_ERR_PROTO || rc == -ETIMEDOUT ||
        rc == -ECONNREFUSED || rc == -ECONNRESET || rc == -EPIPE || rc == VEGA_ERR_H2_GOING_AWAY ||
        rc == VEGA_ERR_HTTP_BODY_TOO_LARGE || rc == -ENOMEM || rc == -ENODATA)
        return;
    fprintf(stderr, "%s: %s\n", what, vega_err_name((int)rc));
    fail("an undocumented code", rc);
}

/* With HTTP_CLIENT_FUZZ_TRACE set: one line per request, to see what an input does. */
static void trace_line(unsigned k, int rc, int status, long body)
{
    static int on = -1;
    if (on < 0)
        on = getenv("HTTP_CLIENT_FUZZ_TRACE") != NULL;
    if (on)
        fprintf(stderr, "request %u: send %s, status %d, body %ld\n", k,
                rc ? vega_err_name(rc) : "ok", status, body);
}

static vega_ssize body_fn(void *user, void *buf, size_t len)
{
    unsigned *left = user;
    if (*left == 0)
        return 0;
    (*left)--;
    size_t n = len < 7000 ? len : 7000;
    memset(buf, 'b', n);
    return (vega_ssize)n;
}

struct one {
    vega_http_client *c;
    const struct opts *o;
    unsigned k;
};

static void *request_main(void *arg)
{
    struct one *q = arg;
    const struct opts *o = q->o;
    unsigned chunks = 3;
    char url[64];
    snprintf(url, sizeof url, "http://fuzz.example/r%u", q->k);
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.version = VEGA_HTTP_CLIENT_V2_PRIOR;
    rq.method = o->head ? "HEAD" : NULL;
    rq.decompress = o->decompress;
    if (o->body) {
        rq.body = "name=value";
        rq.body_len = 10;
    } else if (o->body_fn) {
        rq.body_fn = body_fn;
        rq.body_user = &chunks;
        rq.body_length = VEGA_HTTP_LENGTH_UNKNOWN;
    }
    rq.deadline = vega_deadline_in_ms(20000);
    vega_http_client_response *r = NULL;
    int rc = vega_http_client_send(q->c, &rq, &r);
    check_rc(rc, "send");
    if (rc < 0) {
        if (r)
            fail("a response with an error", rc);
        trace_line(q->k, rc, 0, 0);
        return NULL;
    }
    const vega_http_client_info *in = vega_http_client_response_info(r);
    if (in->version != 20 || in->status < 200 || in->status > 999)
        fail("a version or final status the core cannot give", in->status);
    static uint8_t buf[8192];
    uint64_t s = o->seed ^ q->k, total = 0;
    vega_ssize n;
    do {
        size_t want = o->small_reads ? 1 + (size_t)(rnd(&s) % 64) : sizeof buf;
        n = vega_http_client_response_read(r, buf, want, vega_deadline_in_ms(SILENCE_MS));
        check_rc(n, "read");
        if (n > (vega_ssize)want)
            fail("read more than asked", (long)n);
        if (n > 0)
            total += (uint64_t)n;
        if (o->drop_early && total > 0)
            break;
    } while (n > 0);
    trace_line(q->k, 0, in->status, n < 0 ? (long)n : (long)total);
    if (o->small_body && total > 300)
        fail("a body larger than max_body", (long)total);
    if (!o->drop_early && n != -ETIMEDOUT) {
        vega_ssize again = vega_http_client_response_read(r, buf, sizeof buf, 0);
        if (again != n && again != -ETIMEDOUT)
            fail("the end of the body (or its error) is not sticky", (long)again);
    }
    vega_http_client_response_free(r);
    return NULL;
}

static void *input_main(void *arg)
{
    struct state *st = arg;
    const struct opts *o = &st->o;
    vega_http_client_opts co;
    vega_http_client_opts_init(&co);
    co.connect = hook;
    co.connect_user = st;
    co.connect_timeout_ns = 5 * VEGA_NS_PER_S;
    if (o->small_body)
        co.max_body = 300;
    vega_http_client *c;
    if (vega_http_client_new(&c, &co) < 0)
        abort();
    struct one q[MAX_REQS];
    vega_task *t[MAX_REQS];
    for (unsigned i = 0; i < o->nreqs; i++) {
        q[i] = (struct one){c, o, i};
        if (vega_task_spawn(&t[i], request_main, &q[i]) < 0)
            abort();
    }
    for (unsigned i = 0; i < o->nreqs; i++)
        if (vega_task_join(t[i], NULL, vega_deadline_in_ms(SILENCE_MS)) < 0)
            fail("a request task did not end", i);
    vega_http_client_free(c);
    for (unsigned i = 0; i < st->next; i++) {
        struct seg *s = &st->segs[i];
        /* the client closed its end: the drain sees it; the writer may wait on a full pipe */
        vega_task_cancel(s->writer);
        if (vega_task_join(s->drain, NULL, vega_deadline_in_ms(SILENCE_MS)) < 0)
            fail("a server task did not end", i);
        (void)vega_task_join(s->writer, NULL, vega_deadline_in_ms(SILENCE_MS));
        vega_stream_close(s->end, 0);
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vega_rt *rt;
    if (!rt) {
        vega_rt_opts ro;
        vega_rt_opts_init(&ro);
        ro.flavor = VEGA_RT_CURRENT_THREAD;
        ro.paused_clock = true;
        ro.stack_guard = true;
#ifdef VEGA_ASAN
        ro.stack_size = 256 * 1024;
#endif
        if (vega_rt_new(&rt, &ro) < 0)
            abort();
    }
    if (size < 2)
        return 0;
    static struct state st;
    memset(&st, 0, sizeof st);
    st.o = (struct opts){
        .nreqs = 1 + (data[0] & 3),
        .body = data[0] & 4,
        .body_fn = data[0] & 8,
        .head = data[0] & 16,
        .small_reads = data[0] & 32,
        .small_body = data[0] & 64,
        .drop_early = data[0] & 128,
        .decompress = data[1] & 1,
        .seed = (uint64_t)data[1] * 0x9E3779B97F4A7C15ull + 1,
    };
    const uint8_t *d = data + 2;
    size_t n = size - 2;
    size_t first = n;
    if (n >= 2) {
        first = (size_t)d[0] << 8 | d[1];
        d += 2, n -= 2;
        first = first < n ? first : n;
    }
    st.segs[0] = (struct seg){.data = d, .len = first, .seed = st.o.seed};
    st.segs[1] = (struct seg){.data = d + first, .len = n - first, .seed = st.o.seed + 1};
    st.nsegs = 2;
    if (vega_rt_block_on(rt, input_main, &st, NULL) < 0)
        abort();
    return 0;
}
