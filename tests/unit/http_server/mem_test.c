/* SPDX-License-Identifier: MIT */
/* The server's allocator hook (vega_http_server_opts.mem) and a failing-allocator sweep: each
 * of the server's allocations in a scripted conversation fails in turn (alone, then with every
 * later one), and every run must end with documented codes, only whole and correct responses
 * (fewer of them, or the last one cut short by a close), and every block given back. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <vega/http1.h>
#include <vega/http_server.h>
#include <vega/mem.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/test.h>

#include "failmalloc.h"
#include "vtest.h"

#define DL(ms) vega_deadline_in_ms(ms)

/* ---- the conversation ------------------------------------------------------------------------ */

static int handler(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *r = vega_http_exchange_request(x);
    if (r->path.len == 5 && memcmp(r->path.ptr, "/echo", 5) == 0) {
        char buf[4096];
        size_t got = 0;
        vega_ssize n;
        while ((n = vega_http_request_read(x, buf + got, sizeof buf - got, DL(5000))) > 0)
            got += (size_t)n;
        if (n < 0)
            return (int)n;
        return vega_http_respond(x, 200, NULL, 0, buf, got, DL(5000));
    }
    if (r->path.len == 8 && memcmp(r->path.ptr, "/chunked", 8) == 0) {
        int e = vega_http_response_start(x, 200, NULL, 0, VEGA_HTTP_LENGTH_UNKNOWN);
        for (int i = 0; e == 0 && i < 3; i++)
            e = vega_http_response_write(x, "part", 4, DL(5000)) < 0 ? -EPIPE : 0;
        return e ? e : vega_http_response_finish(x, NULL, 0, DL(5000));
    }
    return vega_http_respond(x, 200, NULL, 0, r->path.ptr, r->path.len, DL(5000));
}

/* What the client sends: pipelined requests, a head larger than the first read buffer (so that
 * it grows), a body, a chunked response. What it must get back, in order. */
static char script[40000];
static size_t script_len;
static const char *const want[] = {"/a", "partpartpart", "/big", "hello body", "/z"};
#define NWANT (sizeof want / sizeof want[0])

static void make_script(void)
{
    size_t n = 0;
    n += (size_t)snprintf(script + n, sizeof script - n,
                          "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
                          "GET /chunked HTTP/1.1\r\nHost: x\r\n\r\n"
                          "GET /big HTTP/1.1\r\nHost: x\r\n");
    for (int i = 0; i < 40; i++) /* 40 fields of ~500 bytes: a 20 KiB head */
        n += (size_t)snprintf(script + n, sizeof script - n, "X-Pad-%d: %0490d\r\n", i, i);
    n += (size_t)snprintf(script + n, sizeof script - n,
                          "\r\nPOST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"
                          "hello body"
                          "GET /z HTTP/1.1\r\nHost: x\r\n\r\n");
    script_len = n;
}

struct resp {
    int done;
    char body[64];
    size_t len;
    bool overflow;
};

static int on_body(void *ud, vega_http1_span d)
{
    struct resp *r = ud;
    if (r->len + d.len > sizeof r->body) {
        r->overflow = true;
        return 0;
    }
    memcpy(r->body + r->len, d.ptr, d.len);
    r->len += d.len;
    return 0;
}

static struct resp got[NWANT + 1];
static int ngot;

static int on_complete(void *ud)
{
    (void)ud;
    VCHECK(ngot < (int)NWANT); /* never more answers than requests */
    got[ngot].done = 1;
    ngot++;
    return 0;
}

static int on_status(void *ud, int version, int status, vega_http1_span reason)
{
    (void)ud;
    (void)version;
    (void)reason;
    VCHECK_EQ(status, 200); /* no error answer: a failure closes instead */
    memset(&got[ngot], 0, sizeof got[ngot]);
    return 0;
}

static int on_body_cur(void *ud, vega_http1_span d)
{
    (void)ud;
    return on_body(&got[ngot], d);
}

struct serve_arg {
    vega_http_server *srv;
    vega_stream *s;
    int rc;
};

static void *serve_task(void *arg)
{
    struct serve_arg *a = arg;
    a->rc = vega_http_server_serve(a->srv, a->s, NULL, NULL);
    return NULL;
}

/* One run of the conversation with the allocator f. Returns how many responses came whole. */
static int run_once(struct vtest_fa *f)
{
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = handler;
    o.server_header = "vega-mem-test";
    vega_mem m = vtest_fa_mem(f);
    o.mem = &m;
    vega_http_server *srv;
    int r = vega_http_server_new(&srv, &o);
    if (r != 0) {
        VCHECK_EQ(r, -ENOMEM);
        return -1;
    }
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    struct serve_arg sa = {srv, b, 1};
    vega_task *st;
    VCHECK_EQ(vega_task_spawn(&st, serve_task, &sa), 0);
    VCHECK_EQ(vega_stream_write(a, script, script_len, NULL, DL(5000)), (vega_ssize)script_len);
    VCHECK_EQ(vega_stream_shutdown(a, SHUT_WR, DL(1000)), 0);

    vega_http1_parser p;
    static const vega_http1_callbacks cb = {
        .on_status = on_status, .on_body = on_body_cur, .on_message_complete = on_complete};
    VCHECK_EQ(vega_http1_parser_init(&p, VEGA_HTTP1_RESPONSE, NULL, &cb, NULL), 0);
    ngot = 0;
    char buf[8192];
    bool broken = false;
    for (;;) {
        vega_ssize n = vega_stream_read(a, buf, sizeof buf, DL(5000));
        VCHECK(n >= 0 || n == -ECONNRESET || n == -EPIPE);
        if (n <= 0)
            break;
        size_t used;
        if (!broken && vega_http1_parser_read(&p, (const uint8_t *)buf, (size_t)n, &used) != 0)
            broken = true;
    }
    VCHECK(!broken); /* whatever came is well-formed HTTP: only the last answer may be cut */
    VCHECK_EQ(vega_task_join(st, NULL, DL(10000)), 0);
    /* serve's documented codes: 0, or the failure that ended the connection */
    VCHECK(sa.rc == 0 || sa.rc == -ENOMEM || sa.rc == -EPIPE || sa.rc == VEGA_ERR_FULL);
    vega_stream_close(a, DL(1000));
    for (int i = 0; i < ngot; i++) {
        VCHECK(!got[i].overflow);
        VCHECK_EQ(got[i].len, strlen(want[i]));
        VCHECK(memcmp(got[i].body, want[i], got[i].len) == 0);
    }
    vega_http_server_stats stats;
    vega_http_server_get_stats(srv, &stats);
    VCHECK_EQ(stats.conns_open, 0);
    vega_http_server_free(srv);
    VCHECK_EQ(f->live, 0); /* every block came back */
    return ngot;
}

static void body_sweep(void)
{
    make_script();
    struct vtest_fa f = {0};
    VCHECK_EQ(run_once(&f), (int)NWANT);
    long total = f.calls;
    printf("the conversation makes %ld allocations through the hook\n", total);
    VCHECK(total >= 4); /* the server, its Server field, the connection, its block (and more) */
    long completed = 0;
    for (int after = 0; after < 2; after++) {
        for (long k = 1; k <= total; k++) {
            struct vtest_fa g = {.fail_at = k, .and_after = after};
            int n = run_once(&g);
            completed += n == (int)NWANT;
        }
    }
    printf("%ld runs with failures, %ld of them still answered everything\n", 2 * total, completed);
}

VTEST(failing_allocator_sweep)
{
    vtest_run(body_sweep, 0);
}

static void body_counts(void)
{
    /* Every block the server makes goes through the hook and comes back through it. */
    make_script();
    struct vtest_fa f = {0};
    VCHECK_EQ(run_once(&f), (int)NWANT);
    VCHECK(f.calls > 0);
    VCHECK_EQ(f.live, 0);
    /* An incomplete allocator is refused. */
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = handler;
    vega_mem bad = vtest_fa_mem(&f);
    bad.calloc = NULL;
    o.mem = &bad;
    vega_http_server *srv;
    VCHECK_EQ(vega_http_server_new(&srv, &o), -EINVAL);
}

VTEST(allocator_hook)
{
    vtest_run(body_counts, 0);
}
