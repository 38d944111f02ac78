/* SPDX-License-Identifier: MIT */
/* The client's allocator over HTTP/3: its vega_mem makes the client's own blocks, the HTTP/3
 * core's and the QUIC endpoint's and connections' (opts.mem). A counting allocator sees every
 * block come back after a conversation (a GET, a body read with read_all, a streamed POST,
 * trailers, a second connection after GOAWAY); a sweep then fails allocations in turn, alone,
 * and checks that each run ends with clean codes, whole bodies, and nothing leaked. An
 * allocation the QUIC layer could not make costs a packet (sent again) or the connection, so
 * besides -ENOMEM a request may end with the connection's codes, or its deadline. */
#include <errno.h>

#include "failmalloc.h"
#include "h3_util.h"

#define DL(ms) vega_deadline_in_ms(ms)

static vega_ssize body3000(void *user, void *buf, size_t len)
{
    size_t *left = user;
    size_t n = *left < len ? *left : len;
    memset(buf, 'u', n);
    *left -= n;
    return (vega_ssize)n;
}

/* A code a request may end with when an allocation failed somewhere below it. */
static bool acceptable(int e)
{
    return e == -ENOMEM || e == VEGA_ERR_QUIC_EP_CLOSED || e == VEGA_ERR_QUIC_EP_HANDSHAKE ||
           e == VEGA_ERR_QUIC_EP_RESET || e == VEGA_ERR_PROTO || e == -ETIMEDOUT;
}

/* Runs the conversation; returns the requests answered in full (and right), and in
 * *failed_before_last (unless NULL) the allocations refused before the last request started.
 * realloc and free take NULL as libc's do. */
static int conversation(struct h3t_srv *s, struct vtest_fa *f, unsigned wait_ms,
                        long *failed_before_last)
{
    f->realloc_null_ok = f->free_null_ok = true;
    vega_mem m = vtest_fa_mem(f);
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.quic_ca = s->ca;
    o.mem = &m;
    vega_http_client *c;
    int e = vega_http_client_new(&c, &o);
    if (e < 0) {
        VCHECK_EQ(e, -ENOMEM);
        return -1;
    }
    static const char *const paths[] = {"/hello",    "/big/100000", "/echo",
                                        "/trailers", "/goaway",     "/conn"};
    int answered = 0;
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        char url[128];
        h3t_url(s, url, sizeof url, paths[i]);
        vega_http_client_request rq;
        h3t_req(&rq, url);
        rq.deadline = DL(wait_ms);
        if (i + 1 == sizeof paths / sizeof *paths && failed_before_last)
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
        void *b;
        vega_ssize n = vega_http_client_response_read_all(r, &b, 1 << 20, DL(wait_ms));
        if (n < 0) {
            VCHECK(acceptable((int)n));
            VCHECK(b == NULL);
        } else {
            const char *p = paths[i];
            if (!strcmp(p, "/hello"))
                VCHECK(n == 5 && !memcmp(b, "hello", 5));
            else if (!strcmp(p, "/big/100000"))
                for (vega_ssize k = 0; k < n; k++)
                    VCHECK_EQ(((uint8_t *)b)[k], h3t_byte((uint64_t)k));
            else if (!strcmp(p, "/echo"))
                VCHECK_EQ(n, 3000);
            else if (!strcmp(p, "/trailers"))
                VCHECK(n == 4 && vega_http_client_response_info(r)->trailers->count == 1);
            answered++;
            vega_http_client_body_free(c, b);
        }
        vega_http_client_response_free(r);
        if (!strcmp(paths[i], "/goaway"))
            vega_sleep_ms(20); /* the GOAWAY arrives */
    }
    vega_http_client_free(c);
    VCHECK_EQ(atomic_load(&f->live), 0); /* every block came back */
    return answered;
}

static void body_sweep(void)
{
    struct h3t_srv *s = h3t_start(0);
    struct vtest_fa f = {0};
    VCHECK_EQ(conversation(s, &f, 10000, NULL), 6);
    long total = atomic_load(&f.calls);
    printf("the conversation makes %ld allocations through the hook\n", total);
    VCHECK(total >= 50);
    /* Every allocation fails once in its run (a stride keeps the runs near 400 should there be
     * more, starting at a different place each time; sanitizer runs, VEGA_TEST_SCALE=10, do a
     * tenth of them). */
    const char *scale_env = getenv("VEGA_TEST_SCALE");
    long scale = scale_env && atol(scale_env) > 1 ? atol(scale_env) : 1;
    long stride = total / (400 / scale) + 1, full = 0, runs = 0;
    for (long k = 1 + (long)(vega_now() % (uint64_t)stride); k <= total; k += stride) {
        struct vtest_fa g = {0};
        atomic_store(&g.fail_at, k);
        full += conversation(s, &g, 2000, NULL) == 6;
        runs++;
    }
    printf("%ld runs with one failing allocation, %ld still answered all six\n", runs, full);
    /* Then from a point on, everything fails: every call gives up cleanly, nothing leaks (ten
     * points across the conversation; each request waits at most 300 ms). A run makes more or
     * fewer allocations than the first one did (packets lost and sent again on a busy machine):
     * where the failures began only after the last request had started, all six may pass. */
    for (long k = 1; k <= total; k += total / 10 + 1) {
        struct vtest_fa g = {.and_after = true};
        atomic_store(&g.fail_at, k);
        long before_last = 0;
        int n = conversation(s, &g, 300, &before_last);
        if (n == 6)
            fprintf(stderr,
                    "failing from allocation %ld of %ld: all six answered, %ld refused "
                    "before the last request\n",
                    k, total, before_last);
        VCHECK(n < 6 || before_last == 0);
    }
    h3t_stop(s);
}

VTEST(failing_allocator_sweep)
{
    vtest_run(body_sweep, 2);
}
