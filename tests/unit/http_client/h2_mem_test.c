/* SPDX-License-Identifier: MIT */
/* The client's allocator over HTTP/2: its vega_mem makes the client's own blocks, the HTTP/2
 * core's (connection, streams, HPACK tables, queues) and the connection's buffers (opts.mem). A
 * counting allocator sees every block come back after a conversation with the library's h2c
 * server (a GET by the h2c Upgrade, a file, a streamed POST, trailers, a response dropped early,
 * a GET on the same connection); a sweep then fails allocations in turn, alone and from a point on,
 * and checks that each run ends with clean codes, whole bodies, and nothing leaked. */
#include "../http_server/h2_test_util.h"
#include "failmalloc.h"

#include <vega/http_client.h>

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

/* Runs the conversation; returns the requests answered in full (and right), and in
 * *failed_before_last (unless NULL) the allocations refused before the last request started.
 * realloc and free take NULL as libc's do. */
static int conversation(const struct ts *t, struct vtest_fa *f, unsigned wait_ms,
                        long *failed_before_last)
{
    f->realloc_null_ok = f->free_null_ok = true;
    vega_mem m = vtest_fa_mem(f);
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
        if (i + 1 == NPATHS && failed_before_last)
            *failed_before_last = atomic_load(&f->failed);
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
    struct vtest_fa f = {0};
    VCHECK_EQ(conversation(&t, &f, 10000, NULL), NPATHS);
    long total = atomic_load(&f.calls);
    printf("the conversation makes %ld allocations through the hook\n", total);
    VCHECK(total >= 20);
    long stride = total / 300 + 1, full = 0, runs = 0;
    for (long k = 1 + (long)(vega_now() % (uint64_t)stride); k <= total; k += stride) {
        struct vtest_fa g = {0};
        atomic_store(&g.fail_at, k);
        full += conversation(&t, &g, 3000, NULL) == NPATHS;
        runs++;
    }
    printf("%ld runs with one failing allocation, %ld still answered all\n", runs, full);
    /* from a point on, everything fails: every call gives up cleanly, nothing leaks; where the
     * failures began only after the last request started, all may pass */
    for (long k = 1; k <= total; k += total / 10 + 1) {
        struct vtest_fa g = {.and_after = true};
        atomic_store(&g.fail_at, k);
        long before_last = 0;
        int n = conversation(&t, &g, 1000, &before_last);
        VCHECK(n < NPATHS || before_last == 0);
    }
    ts_stop(&t, 2000);
}

VTEST(failing_allocator_sweep)
{
    vtest_run(body_sweep, 2);
}
