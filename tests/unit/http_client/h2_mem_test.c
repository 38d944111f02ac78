/* SPDX-License-Identifier: MIT */
/* The client's allocator over HTTP/2: its vega_mem makes the client's own blocks, the HTTP/2
 * core's (connection, streams, HPACK tables, queues) and the connection's buffers (opts.mem). A
 * counting allocator sees every block come back after a conversation with the library's h2c
 * server (a GET by the h2c Upgrade, a file, a streamed POST, trailers, a response dropped early,
 * a GET on the same connection); a sweep then fails allocations in turn, alone and from a point on,
 * and checks that each run ends with clean codes, whole bodies, and nothing leaked. */
#include "../http_server/h2_test_util.h"

#include <vega/http_client.h>

struct fa {
    atomic_long calls, fail_at, live;
    atomic_long failed;      /* allocations refused so far */
    long failed_before_last; /* refused before the last request started */
    bool and_after;          /* every allocation after fail_at fails too */
};

struct hdr {
    uint64_t magic, pad;
};
#define MAGIC 0xc11e47a110c8ull

static bool should_fail(struct fa *f)
{
    long k = atomic_fetch_add(&f->calls, 1) + 1, at = atomic_load(&f->fail_at);
    bool fail = at && (k == at || (f->and_after && k > at));
    if (fail)
        atomic_fetch_add(&f->failed, 1);
    return fail;
}

static void *fa_malloc(void *ud, size_t n)
{
    struct fa *f = ud;
    if (should_fail(f))
        return NULL;
    struct hdr *h = malloc(sizeof *h + n);
    VCHECK(h != NULL);
    h->magic = MAGIC;
    atomic_fetch_add(&f->live, 1);
    return h + 1;
}

static void *fa_calloc(void *ud, size_t n, size_t size)
{
    void *p = fa_malloc(ud, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

static void fa_free(void *ud, void *p)
{
    struct fa *f = ud;
    if (!p)
        return;
    struct hdr *h = (struct hdr *)p - 1;
    VCHECK(h->magic == MAGIC);
    h->magic = 0;
    atomic_fetch_sub(&f->live, 1);
    free(h);
}

static void *fa_realloc(void *ud, void *p, size_t n)
{
    struct fa *f = ud;
    if (!p)
        return fa_malloc(ud, n);
    if (should_fail(f))
        return NULL;
    struct hdr *h = (struct hdr *)p - 1;
    VCHECK(h->magic == MAGIC);
    struct hdr *g = realloc(h, sizeof *g + n);
    VCHECK(g != NULL);
    return g + 1;
}

static vega_ssize body3000(void *user, void *buf, size_t len)
{
    size_t *left = user;
    size_t n = *left < len ? *left : len;
    for (size_t i = 0; i < n; i++)
        ((uint8_t *)buf)[i] = ts_pattern(3000 - *left + i);
    *left -= n;
    return (vega_ssize)n;
}

/* A code a request may end with when an allocation failed somewhere below it: no memory, the
 * connection given up (a GOAWAY INTERNAL_ERROR of ours, or its close), the stream reset. */
static bool acceptable(int e)
{
    return e == -ENOMEM || e == VEGA_ERR_PROTO || e == -ECONNRESET ||
           e == VEGA_ERR_HTTP_EMPTY_REPLY || e == VEGA_ERR_H2_GOING_AWAY || e == -ETIMEDOUT;
}

#define NPATHS 6

/* Runs the conversation; returns the requests answered in full (and right). */
static int conversation(const struct ts *t, struct fa *f, unsigned wait_ms)
{
    vega_mem m = {fa_malloc, fa_calloc, fa_realloc, fa_free, f};
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.mem = &m;
    vega_http_client *c;
    int e = vega_http_client_new(&c, &o);
    if (e < 0) {
        VCHECK_EQ(e, -ENOMEM);
        return -1;
    }
    static const char *const paths[NPATHS] = {"/hello",   "/file", "/echo",
                                              "/chunked", "/big",  "/hello"};
    int answered = 0;
    for (size_t i = 0; i < NPATHS; i++) {
        char url[128];
        snprintf(url, sizeof url, "http://127.0.0.1:%u%s", vega_addr_port(&t->addr), paths[i]);
        vega_http_client_request rq;
        vega_http_client_request_init(&rq);
        rq.url = url;
        /* the first one by the h2c Upgrade, the others on the connection it made */
        rq.version = i == 0 ? VEGA_HTTP_CLIENT_V2 : VEGA_HTTP_CLIENT_V2_PRIOR;
        rq.deadline = DL(wait_ms);
        if (i + 1 == NPATHS)
            f->failed_before_last = atomic_load(&f->failed);
        size_t left = 3000;
        if (!strcmp(paths[i], "/echo")) {
            rq.body_fn = body3000;
            rq.body_user = &left;
            rq.body_length = left;
        }
        vega_http_client_response *r;
        e = vega_http_client_send(c, &rq, &r);
        if (e < 0) {
            if (!acceptable(e))
                fprintf(stderr, "send %s: %d\n", paths[i], e);
            VCHECK(acceptable(e));
            continue;
        }
        if (!strcmp(paths[i], "/big")) {
            /* dropped after the first bytes: the stream is reset, the connection goes on */
            uint8_t b[100];
            vega_ssize n = vega_http_client_response_read(r, b, sizeof b, DL(wait_ms));
            VCHECK(n > 0 || acceptable((int)n));
            answered += n > 0 && b[0] == ts_pattern(0);
            vega_http_client_response_free(r);
            continue;
        }
        void *b;
        vega_ssize n = vega_http_client_response_read_all(r, &b, 1 << 20, DL(wait_ms));
        if (n < 0) {
            if (!acceptable((int)n))
                fprintf(stderr, "read %s: %d\n", paths[i], (int)n);
            VCHECK(acceptable((int)n));
            VCHECK(b == NULL);
        } else {
            const char *p = paths[i];
            if (!strcmp(p, "/hello"))
                VCHECK(n == 8 && !memcmp(b, "hello h2", 8));
            else if (!strcmp(p, "/file")) {
                VCHECK_EQ(n, FILE_LEN);
                for (vega_ssize k = 0; k < n; k++)
                    VCHECK_EQ(((uint8_t *)b)[k], ts_pattern((size_t)k));
            } else if (!strcmp(p, "/echo"))
                VCHECK_EQ(n, 3000);
            else if (!strcmp(p, "/chunked"))
                VCHECK(n == 13 && vega_http_client_response_info(r)->trailers->count == 1);
            answered++;
            vega_http_client_body_free(c, b);
        }
        vega_http_client_response_free(r);
    }
    vega_http_client_free(c);
    VCHECK_EQ(atomic_load(&f->live), 0); /* every block came back */
    return answered;
}

static void body_sweep(void)
{
    struct ts t;
    ts_make_file();
    vega_http_server_opts so = ts_opts();
    so.on_log = NULL;
    vega_http_server_h2_opts h = ts_h2c();
    ts_start(&t, &so, &h);
    struct fa f = {0};
    VCHECK_EQ(conversation(&t, &f, 10000), NPATHS);
    long total = atomic_load(&f.calls);
    printf("the conversation makes %ld allocations through the hook\n", total);
    VCHECK(total >= 20);
    long stride = total / 300 + 1, full = 0, runs = 0;
    for (long k = 1 + (long)(vega_now() % (uint64_t)stride); k <= total; k += stride) {
        struct fa g = {0};
        atomic_store(&g.fail_at, k);
        full += conversation(&t, &g, 3000) == NPATHS;
        runs++;
    }
    printf("%ld runs with one failing allocation, %ld still answered all\n", runs, full);
    /* from a point on, everything fails: every call gives up cleanly, nothing leaks; where the
     * failures began only after the last request started, all may pass */
    for (long k = 1; k <= total; k += total / 10 + 1) {
        struct fa g = {.and_after = true};
        atomic_store(&g.fail_at, k);
        int n = conversation(&t, &g, 1000);
        VCHECK(n < NPATHS || g.failed_before_last == 0);
    }
    ts_stop(&t, 2000);
}

VTEST(failing_allocator_sweep)
{
    vtest_run(body_sweep, 2);
}
