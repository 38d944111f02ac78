/* SPDX-License-Identifier: MIT */
/* The client's allocator hook (vega_http_client_opts.mem) and a failing-allocator sweep: a
 * scripted set of requests (keep-alive reuse, a chunked body with trailers, a request body
 * from a callback, many response fields, a redirect) runs once per allocation with that one
 * failing (alone, then with every later one); every call must return its answer or -ENOMEM,
 * every body that arrives must be right, and every block must come back. The server is the
 * library's own, behind the connect hook, over in-memory streams. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/http_client.h>
#include <vega/http_server.h>
#include <vega/mem.h>
#include <vega/rt.h>
#include <vega/test.h>

#include "failmalloc.h"
#include "vtest.h"

#define DL(ms) vega_deadline_in_ms(ms)

/* ---- the server behind the hook -------------------------------------------------------------- */

static int handler(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *r = vega_http_exchange_request(x);
#define IS(p) (r->path.len == strlen(p) && memcmp(r->path.ptr, p, r->path.len) == 0)
    if (IS("/chunked")) {
        int e = vega_http_response_start(x, 200, NULL, 0, VEGA_HTTP_LENGTH_UNKNOWN);
        for (int i = 0; e == 0 && i < 4; i++)
            e = vega_http_response_write(x, "chunk", 5, DL(5000)) < 0 ? -EPIPE : 0;
        static const vega_http_field tr[] = {{{"X-Sum", 5}, {"20", 2}}};
        return e ? e : vega_http_response_finish(x, tr, 1, DL(5000));
    }
    if (IS("/fields")) {
        static vega_http_field f[40];
        static char names[40][16];
        for (int i = 0; i < 40; i++) {
            int n = snprintf(names[i], sizeof names[i], "X-Field-%d", i);
            f[i] = (vega_http_field){{names[i], (size_t)n}, {"a value that is copied", 22}};
        }
        return vega_http_respond(x, 200, f, 40, "fields", 6, DL(5000));
    }
    if (IS("/upload")) {
        char buf[1024];
        size_t got = 0;
        vega_ssize n;
        while ((n = vega_http_request_read(x, buf, sizeof buf, DL(5000))) > 0)
            got += (size_t)n;
        char out[32];
        int k = snprintf(out, sizeof out, "got %zu", got);
        return vega_http_respond(x, 200, NULL, 0, out, (size_t)k, DL(5000));
    }
    if (IS("/moved")) {
        static const vega_http_field loc[] = {{{"Location", 8}, {"/a?from=moved", 13}}};
        return vega_http_respond(x, 301, loc, 1, NULL, 0, DL(5000));
    }
    return vega_http_respond(x, 200, NULL, 0, "hello", 5, DL(5000));
#undef IS
}

struct serve_arg {
    vega_http_server *srv;
    vega_stream *s;
};

static void *serve_task(void *arg)
{
    struct serve_arg *a = arg;
    vega_http_server_serve(a->srv, a->s, NULL, NULL);
    free(a);
    return NULL;
}

static vega_group *servers;

static int hook(void *user, const char *host, uint16_t port, bool tls, vega_stream **out,
                vega_deadline dl)
{
    (void)host;
    (void)port;
    (void)tls;
    (void)dl;
    vega_stream *cli, *srv_end;
    VCHECK_EQ(vega_duplex_new(&cli, &srv_end, 0), 0);
    struct serve_arg *a = malloc(sizeof *a);
    VCHECK(a != NULL);
    a->srv = user;
    a->s = srv_end;
    VCHECK_EQ(vega_group_spawn(servers, serve_task, a), 0);
    *out = cli;
    return 0;
}

/* ---- the requests
 * -------------------------------------------------------------------------------- */

static vega_ssize upload_fn(void *user, void *buf, size_t len)
{
    size_t *left = user;
    size_t n = *left < len ? *left : len;
    memset(buf, 'u', n);
    *left -= n;
    return (vega_ssize)n;
}

/* Sends one request and reads its body into out. Returns 0, or the code a call returned. */
static int fetch(vega_http_client *c, vega_http_client_request *rq, char *out, size_t cap,
                 size_t *len, vega_http_client_response **keep)
{
    vega_http_client_response *r;
    int e = vega_http_client_send(c, rq, &r);
    if (e < 0)
        return e;
    *len = 0;
    vega_ssize n;
    if (!keep) { /* read_all: its buffer comes from the failing allocator too */
        void *b;
        n = vega_http_client_response_read_all(r, &b, cap, DL(5000));
        if (n >= 0) {
            memcpy(out, b, (size_t)n);
            *len = (size_t)n;
            vega_http_client_body_free(c, b);
        } else {
            VCHECK(b == NULL);
        }
        vega_http_client_response_free(r);
        return (int)(n < 0 ? n : 0);
    }
    while ((n = vega_http_client_response_read(r, out + *len, cap - *len, DL(5000))) > 0)
        *len += (size_t)n;
    if (keep && n == 0)
        *keep = r;
    else
        vega_http_client_response_free(r);
    return (int)(n < 0 ? n : 0);
}

/* Every call's code must be a success or -ENOMEM. Returns how many requests were answered. */
static int conversation(vega_http_server *srv, struct vtest_fa *f)
{
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.connect = hook;
    o.connect_user = srv;
    vega_mem m = vtest_fa_mem(f);
    o.mem = &m;
    vega_http_client *c;
    int e = vega_http_client_new(&c, &o);
    if (e < 0) {
        VCHECK_EQ(e, -ENOMEM);
        return -1;
    }
    int answered = 0;
    char body[4096], url[256];
    size_t len;
    vega_http_client_request rq;
    static const char *const paths[] = {"/a", "/a", "/chunked", "/fields", "/upload", "/moved"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        vega_http_client_request_init(&rq);
        snprintf(url, sizeof url, "http://mem.test%s", paths[i]);
        rq.url = url;
        rq.deadline = DL(10000);
        size_t left = 3000;
        if (strcmp(paths[i], "/upload") == 0) {
            rq.method = "POST";
            rq.body_fn = upload_fn;
            rq.body_user = &left;
            rq.body_length = left;
        }
        vega_http_client_response *kept = NULL;
        e = fetch(c, &rq, body, sizeof body, &len, strcmp(paths[i], "/moved") == 0 ? &kept : NULL);
        if (e < 0) {
            VCHECK_EQ(e, -ENOMEM); /* nothing else can fail here */
            continue;
        }
        answered++;
        if (strcmp(paths[i], "/chunked") == 0)
            VCHECK(len == 20 && memcmp(body, "chunkchunkchunkchunk", 20) == 0);
        else if (strcmp(paths[i], "/fields") == 0)
            VCHECK(len == 6 && memcmp(body, "fields", 6) == 0);
        else if (strcmp(paths[i], "/upload") == 0)
            VCHECK(len == 8 && memcmp(body, "got 3000", 8) == 0);
        else if (strcmp(paths[i], "/moved") == 0) {
            VCHECK(kept != NULL);
            char next[256];
            bool to_get;
            VCHECK_EQ(vega_http_client_redirect(kept, url, next, sizeof next, &to_get), 28);
            VCHECK_STR(next, "http://mem.test/a?from=moved");
            vega_http_client_response_free(kept);
        } else
            VCHECK(len == 5 && memcmp(body, "hello", 5) == 0);
    }
    vega_http_client_free(c);
    VCHECK_EQ(f->live, 0); /* every block came back */
    return answered;
}

static void body_sweep(void)
{
    vega_http_server_opts so;
    vega_http_server_opts_init(&so);
    so.handler = handler;
    vega_http_server *srv;
    VCHECK_EQ(vega_http_server_new(&srv, &so), 0);
    VCHECK_EQ(vega_group_new(&servers), 0);

    struct vtest_fa f = {0};
    VCHECK_EQ(conversation(srv, &f), 6);
    long total = f.calls;
    printf("the requests make %ld allocations through the hook\n", total);
    VCHECK(total >= 10);
    long full = 0;
    for (int after = 0; after < 2; after++) {
        for (long k = 1; k <= total; k++) {
            struct vtest_fa g = {.fail_at = k, .and_after = after};
            full += conversation(srv, &g) == 6;
        }
    }
    printf("%ld runs with a failure, %ld still answered all six\n", 2 * total, full);
    VCHECK_EQ(vega_group_wait(servers, DL(10000)), 0);
    vega_group_free(servers);
    vega_http_server_free(srv);
}

VTEST(failing_allocator_sweep)
{
    vtest_run(body_sweep, 0);
}

static void body_hook_checked(void)
{
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    struct vtest_fa f = {0};
    vega_mem bad = vtest_fa_mem(&f);
    bad.realloc = NULL;
    o.mem = &bad;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), -EINVAL); /* all four functions are required */
}

VTEST(incomplete_allocator_refused)
{
    vtest_run(body_hook_checked, 0);
}
