/* SPDX-License-Identifier: MIT */
/* A failing-allocator sweep over an HTTP/2 conversation: each of the server's allocations
 * (its connection, the HTTP/2 core's, the buffers, each request's block, body queues, a small
 * response's buffer) fails in turn, alone and then with every later one, and every run must end
 * with a documented code, only whole and correct responses (the others reset or never answered)
 * and every block given back to the allocator. */
#include <stdio.h>
#include <sys/socket.h>

#include "failmalloc.h"
#include "h2_test_util.h"

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

/* ts_handler's answers, without its checks (calls fail here by design) */
static int handler(vega_http_exchange *x, void *user)
{
    const vega_http_request *r = vega_http_exchange_request(x);
    if (vega_http_str_eq(r->path, "/chunked")) {
        int rc = vega_http_response_start(x, 200, NULL, 0, VEGA_HTTP_LENGTH_UNKNOWN);
        static const char *const parts[] = {"one,", "two,", "three"};
        for (int i = 0; rc == 0 && i < 3; i++)
            rc = vega_http_response_write(x, parts[i], strlen(parts[i]), DL(5000)) < 0 ? -1 : 0;
        return rc == 0 ? vega_http_response_finish(x, NULL, 0, DL(5000)) : rc;
    }
    return ts_handler(x, user);
}

static char pad[20000];

/* One run. Returns how many of the 5 responses came whole and right. */
static int run_once(struct vtest_fa *f)
{
    vega_http_server_opts o = ts_opts();
    o.on_log = NULL;
    o.handler = handler;
    f->realloc_null_ok = true; /* realloc takes NULL as libc's does; free does not */
    vega_mem m = vtest_fa_mem(f);
    o.mem = &m;
    vega_http_server *srv;
    int r = vega_http_server_new(&srv, &o);
    if (r != 0) {
        VCHECK_EQ(r, -ENOMEM);
        return -1;
    }
    vega_http_server_h2_opts h = ts_h2c();
    VCHECK_EQ(vega_http_server_set_h2(srv, &h), 0);
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    struct serve_arg sa = {srv, b, 1};
    vega_task *st;
    VCHECK_EQ(vega_task_spawn(&st, serve_task, &sa), 0);
    struct tc *c = tc_new(a, NULL);
    static const char *const big[] = {"x-pad", pad, NULL}; /* a 20 KB header block */
    static uint8_t up[70000];
    struct tc_stream *s[5];
    s[0] = tc_request(c, "GET", "/hello", NULL, NULL, 0);
    s[1] = tc_request(c, "GET", "/chunked", NULL, NULL, 0);
    s[2] = tc_request(c, "GET", "/hello", big, NULL, 0);
    s[3] = tc_request(c, "POST", "/echo", NULL, up, sizeof up);
    s[4] = tc_request(c, "GET", "/small-file", NULL, NULL, 0);
    vega_tstamp t0 = vega_now();
    (void)tc_run(c, tc_all_closed, NULL, 5000);
    if (vega_now() - t0 > 1000 * VEGA_NS_PER_MS)
        printf("slow run: fail_at %ld%s\n", f->fail_at, f->and_after ? " and after" : "");
    int whole = 0;
    for (int i = 0; i < 5; i++) {
        if (!s[i]->closed || s[i]->how != VEGA_H2_CLOSE_DONE)
            continue; /* reset, refused, or cut by the connection's end */
        if (s[i]->status == 500) {
            /* the handler's own call failed before its head was built: the server's 500 */
            VCHECK_STR((char *)s[i]->body, "internal server error\n");
            continue;
        }
        VCHECK_EQ(s[i]->status, 200);
        if (i == 0 || i == 2)
            VCHECK_STR((char *)s[i]->body, "hello h2");
        else if (i == 1)
            VCHECK_STR((char *)s[i]->body, "one,two,three");
        else if (i == 3)
            VCHECK(s[i]->body_len == sizeof up && memcmp(s[i]->body, up, sizeof up) == 0);
        else
            VCHECK(ts_body_is_pattern(s[i], 1000));
        whole++;
    }
    /* the client goes away: the connection ends */
    if (!c->eof) {
        /* and closes its side: a server that lingers after an error reads the end at once */
        (void)vega_h2_submit_goaway(c->h2, VEGA_H2_NO_ERROR, NULL, 0);
        (void)tc_flush(c);
        (void)vega_stream_shutdown(c->s, SHUT_WR, DL(1000));
        (void)tc_run(c, tc_eof, NULL, 5000);
    }
    VCHECK(c->eof);
    VCHECK_EQ(vega_task_join(st, NULL, DL(10000)), 0);
    VCHECK(sa.rc == 0 || sa.rc == -ENOMEM);
    tc_free(c);
    vega_http_server_stats stats;
    vega_http_server_get_stats(srv, &stats);
    VCHECK_EQ(stats.conns_open, 0);
    vega_http_server_free(srv);
    VCHECK_EQ(f->live, 0); /* every block came back */
    return whole;
}

static void body_sweep(void)
{
    ts_make_file();
    memset(pad, 'p', sizeof pad - 1);
    struct vtest_fa f = {0};
    VCHECK_EQ(run_once(&f), 5);
    long total = f.calls;
    printf("the conversation makes %ld allocations through the hook\n", total);
    VCHECK(total >= 10);
    long completed = 0;
    for (int after = 0; after < 2; after++)
        for (long k = 1; k <= total; k++) {
            struct vtest_fa g = {.fail_at = k, .and_after = after};
            vega_tstamp t1 = vega_now();
            completed += run_once(&g) == 5;
            printf("k=%ld after=%d %llu ms\n", k, after,
                   (unsigned long long)((vega_now() - t1) / VEGA_NS_PER_MS));
        }
    printf("%ld runs with failures, %ld of them still answered everything\n", 2 * total, completed);
    close(ts_file_fd);
}
VTEST(failing_allocator_sweep)
{
    vtest_run(body_sweep, 0);
}
