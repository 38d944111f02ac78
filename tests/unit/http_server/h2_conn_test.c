/* SPDX-License-Identifier: MIT */
/* HTTP/2 connections of the HTTP server (RFC 9113 §5, §6.8, §6.9): streams that run at once,
 * responses that share the connection, an idle connection parked and woken, the idle timeout,
 * graceful shutdown with two GOAWAYs, grace running out, a caller's stream with short reads and
 * writes, a reset from the client, 100-continue, set_close, the body timeout, and a client
 * that never opens its window (write_timeout). */
#include <stddef.h>

#include "h2_test_util.h"

static bool n_closed(struct tc *c, const void *arg)
{
    int want = *(const int *)arg, n = 0;
    for (int i = 0; i < c->n; i++)
        n += c->st[i].closed;
    return n >= want;
}

/* ---- streams at once, and fairness ----------------------------------------------------------- */

static void body_concurrent(void)
{
    struct ts t;
    vega_http_server_opts o = ts_opts();
    vega_http_server_h2_opts h = ts_h2c();
    ts_start(&t, &o, &h);
    struct tc *c = tc_connect(&t.addr, NULL);
    /* 20 handlers that each wait until all 20 are inside: they must run at once */
    atomic_store(&ts_entered, 0);
    atomic_store(&ts_slow_want, 20);
    for (int i = 0; i < 20; i++)
        tc_request(c, "GET", "/slow", NULL, NULL, 0);
    vega_tstamp t0 = vega_now();
    VCHECK(tc_run(c, tc_all_closed, NULL, 10000));
    VCHECK(vega_now() - t0 < 3000 * VEGA_NS_PER_MS);
    for (int i = 0; i < 20; i++) {
        VCHECK_EQ(c->st[i].status, 200);
        VCHECK_STR((char *)c->st[i].body, "slow");
    }
    /* two large responses share the connection: DATA frames of both before either ends */
    c->norder = 0;
    struct tc_stream *a = tc_request(c, "GET", "/big", NULL, NULL, 0);
    struct tc_stream *b = tc_request(c, "GET", "/file", NULL, NULL, 0);
    VCHECK(tc_run(c, tc_all_closed, NULL, 10000));
    VCHECK(ts_body_is_pattern(a, 1 << 20));
    VCHECK(ts_body_is_pattern(b, FILE_LEN));
    /* where the shorter one ended, the other had had a fair share of the frames */
    size_t last_b = 0, a_before = 0;
    for (size_t i = 0; i < c->norder; i++)
        if (c->order[i] == b->id)
            last_b = i;
    for (size_t i = 0; i < last_b; i++)
        a_before += c->order[i] == a->id;
    VCHECK(a_before * 4 >= last_b); /* round robin: about half; a quarter at least */
    tc_free(c);
    ts_stop(&t, 1000);
}
VTEST(concurrent_and_fair)
{
    ts_make_file();
    vtest_run(body_concurrent, 2);
    close(ts_file_fd);
}

/* ---- parking ------------------------------------------------------------------------------- */

static void body_park(void)
{
    struct ts t;
    vega_http_server_opts o = ts_opts();
    o.idle_timeout_ns = 400 * VEGA_NS_PER_MS;
    vega_http_server_h2_opts h = ts_h2c();
    ts_start(&t, &o, &h);
    struct tc *c = tc_connect(&t.addr, NULL);
    for (int round = 0; round < 3; round++) {
        struct tc_stream *s = tc_request(c, "GET", "/hello", NULL, NULL, 0);
        VCHECK(tc_run(c, tc_closed, s, 5000));
        VCHECK_EQ(s->status, 200);
        /* idle: no task, no buffer (the connection parks after a short delay) */
        VCHECK(ts_wait_stat(&t, offsetof(vega_http_server_stats, conns_parked), 1, 2000));
        VCHECK_EQ(ts_stats(&t).conns_open, 1);
    }
    /* a PING wakes it and is answered */
    VCHECK_EQ(vega_h2_submit_ping(c->h2, 42), 0);
    VCHECK(tc_run(c, tc_eof, NULL, 150) == false);
    VCHECK_EQ(c->pings_acked, 1);
    /* idle too long: GOAWAY NO_ERROR, then the end */
    VCHECK(tc_run(c, tc_eof, NULL, 5000));
    VCHECK_EQ(c->ngoaway, 1);
    VCHECK_EQ(c->goaway_code, VEGA_H2_NO_ERROR);
    VCHECK_EQ(c->goaway_last, 5);
    VCHECK(ts_wait_stat(&t, offsetof(vega_http_server_stats, conns_open), 0, 2000));
    VCHECK(ts_stats(&t).timeouts >= 1);
    tc_free(c);
    ts_stop(&t, 1000);
}
VTEST(park_wake_idle)
{
    vtest_run(body_park, 2);
}
VTEST(park_wake_idle_current_thread)
{
    vtest_run(body_park, 0);
}

/* ---- shutdown ------------------------------------------------------------------------------ */

static void body_graceful(void)
{
    struct ts t;
    vega_http_server_opts o = ts_opts();
    vega_http_server_h2_opts h = ts_h2c();
    ts_start(&t, &o, &h);
    struct tc *c = tc_connect(&t.addr, NULL);
    struct tc *idle = tc_connect(&t.addr, NULL);
    struct tc_stream *w = tc_request(idle, "GET", "/hello", NULL, NULL, 0);
    VCHECK(tc_run(idle, tc_closed, w, 5000));
    /* one request in flight when the shutdown comes: it finishes, the GOAWAYs say so */
    atomic_store(&ts_entered, 0);
    atomic_store(&ts_slow_want, 1000); /* waits its 5 s unless let go */
    struct tc_stream *s = tc_request(c, "GET", "/slow", NULL, NULL, 0);
    VCHECK_EQ(tc_flush(c), 0);
    vega_deadline dl = DL(5000);
    while (atomic_load(&ts_entered) < 1 && vega_now() < dl)
        vega_sleep_ms(2);
    vega_http_server_shutdown(t.srv, DL(8000));
    /* §6.8: first 2^31 - 1 (and a PING); the final one names the last stream taken */
    VCHECK(!tc_run(c, tc_closed, s, 300));
    VCHECK_EQ(c->ngoaway >= 1, true);
    atomic_store(&ts_slow_want, 0);
    VCHECK(tc_run(c, tc_eof, NULL, 8000));
    VCHECK_EQ(s->status, 200);
    VCHECK_STR((char *)s->body, "slow");
    VCHECK_EQ(c->ngoaway, 2);
    VCHECK_EQ(c->goaway_last, 1);
    VCHECK_EQ(c->goaway_code, VEGA_H2_NO_ERROR);
    /* the idle connection got its GOAWAY at once and was closed */
    VCHECK(tc_run(idle, tc_eof, NULL, 5000));
    VCHECK_EQ(idle->ngoaway, 1);
    VCHECK_EQ(idle->goaway_last, 1);
    ts_stop(&t, 1000);
    tc_free(c);
    tc_free(idle);
}
VTEST(graceful_shutdown)
{
    vtest_run(body_graceful, 2);
}

static void body_grace_cancels(void)
{
    struct ts t;
    vega_http_server_opts o = ts_opts();
    o.on_log = NULL;
    vega_http_server_h2_opts h = ts_h2c();
    ts_start(&t, &o, &h);
    struct tc *c = tc_connect(&t.addr, NULL);
    atomic_store(&ts_hang_live, 0);
    for (int i = 0; i < 5; i++)
        tc_request(c, "GET", "/hang", NULL, NULL, 0);
    VCHECK_EQ(tc_flush(c), 0);
    vega_deadline dl = DL(5000);
    while (atomic_load(&ts_hang_live) < 5 && vega_now() < dl)
        vega_sleep_ms(2);
    vega_tstamp t0 = vega_now();
    ts_stop(&t, 200); /* the handlers never end: cancelled at grace */
    VCHECK(vega_now() - t0 < 3000 * VEGA_NS_PER_MS);
    VCHECK_EQ(atomic_load(&ts_hang_live), 0);
    tc_free(c);
}
VTEST(shutdown_grace_cancels)
{
    vtest_run(body_grace_cancels, 2);
}

/* ---- a caller's stream with short reads and writes ------------------------------------------ */

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

static void body_serve_faulty(void)
{
    vega_http_server_opts o = ts_opts();
    vega_http_server *srv;
    VCHECK_EQ(vega_http_server_new(&srv, &o), 0);
    vega_http_server_h2_opts h = ts_h2c();
    VCHECK_EQ(vega_http_server_set_h2(srv, &h), 0);
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_fault_opts fo;
    vega_fault_opts_init(&fo);
    fo.short_read_pct = 50;
    fo.short_write_pct = 50;
    fo.short_max = 7;
    vega_stream *f;
    VCHECK_EQ(vega_faulty_new(&f, b, &fo), 0);
    struct serve_arg sa = {srv, f, -1};
    vega_task *st;
    VCHECK_EQ(vega_task_spawn(&st, serve_task, &sa), 0);
    struct tc *c = tc_new(a, NULL);
    size_t n = 100000;
    uint8_t *up = malloc(n);
    for (size_t i = 0; i < n; i++)
        up[i] = ts_pattern(i);
    struct tc_stream *e = tc_request(c, "POST", "/echo", NULL, up, n);
    struct tc_stream *hi = tc_request(c, "GET", "/hello", NULL, NULL, 0);
    VCHECK(tc_run(c, tc_all_closed, NULL, 10000));
    VCHECK(ts_body_is_pattern(e, n));
    VCHECK_STR((char *)hi->body, "hello h2");
    /* the client goes away: the connection ends */
    VCHECK_EQ(vega_h2_submit_goaway(c->h2, VEGA_H2_NO_ERROR, NULL, 0), 0);
    VCHECK_EQ(tc_flush(c), 0);
    VCHECK(tc_run(c, tc_eof, NULL, 5000));
    VCHECK_EQ(vega_task_join(st, NULL, DL(5000)), 0);
    VCHECK_EQ(sa.rc, 0);
    tc_free(c);
    free(up);
    vega_http_server_stats s;
    vega_http_server_get_stats(srv, &s);
    VCHECK_EQ(s.conns_open, 0);
    vega_http_server_free(srv);
}
VTEST(serve_faulty_stream)
{
    vtest_run(body_serve_faulty, 2);
}

/* ---- streams that end early, 100-continue, set_close, timeouts ------------------------------- */

static void body_resets(void)
{
    struct ts t;
    vega_http_server_opts o = ts_opts();
    o.body_timeout_ns = 300 * VEGA_NS_PER_MS;
    vega_http_server_h2_opts h = ts_h2c();
    ts_start(&t, &o, &h);
    struct tc *c = tc_connect(&t.addr, NULL);
    atomic_store(&ts_errors, 0);
    atomic_store(&ts_read_err, 0);
    /* the client resets a large response midway: the handler's write fails, others go on */
    c->consume = false; /* the window closes after 64 KiB: the handler waits */
    struct tc_stream *big = tc_request(c, "GET", "/big", NULL, NULL, 0);
    int one = 1;
    (void)n_closed;
    VCHECK(!tc_run(c, n_closed, &one, 300));
    VCHECK(big->body_len > 0 && big->body_len < (1u << 20));
    VCHECK_EQ(vega_h2_submit_rst_stream(c->h2, big->id, VEGA_H2_CANCEL), 0);
    c->consume = true;
    vega_deadline dl = DL(5000);
    while (atomic_load(&ts_errors) < 1 && vega_now() < dl)
        (void)tc_run(c, tc_eof, NULL, 20);
    VCHECK_EQ(atomic_load(&ts_errors), 1);

    /* 100-continue: the client hears 100 before the final status */
    static const char *const ex[] = {"expect", "100-continue", NULL};
    struct tc_stream *e = tc_request(c, "POST", "/echo", ex, "12345", 5);
    /* a body that never comes: the handler's read times out (body_timeout), answered 500 */
    vega_hpack_field f[] = {{{":method", 7}, {"POST", 4}, 0},
                            {{":scheme", 7}, {"http", 4}, 0},
                            {{":authority", 10}, {"t", 1}, 0},
                            {{":path", 5}, {"/echo", 5}, 0}};
    int32_t stall_id;
    VCHECK_EQ(vega_h2_submit_request(c->h2, f, 4, 0, NULL, &stall_id), 0);
    struct tc_stream *stall = &c->st[c->n++];
    memset(stall, 0, sizeof *stall);
    stall->id = stall_id;
    VCHECK(tc_run(c, tc_closed, e, 5000));
    VCHECK_EQ(e->informational, 100);
    VCHECK_STR((char *)e->body, "12345");
    VCHECK(tc_run(c, tc_closed, stall, 5000));
    VCHECK_EQ(stall->status, 500);
    VCHECK_EQ(atomic_load(&ts_read_err), 1);
    /* the server does not want the rest of a request it answered: RST_STREAM NO_ERROR */
    int32_t open_id;
    f[3].value = (vega_http_str){"/hello", 6};
    VCHECK_EQ(vega_h2_submit_request(c->h2, f, 4, 0, NULL, &open_id), 0);
    struct tc_stream *op = &c->st[c->n++];
    memset(op, 0, sizeof *op);
    op->id = open_id;
    VCHECK(tc_run(c, tc_closed, op, 5000));
    VCHECK_EQ(op->status, 200);
    VCHECK_EQ(op->how, VEGA_H2_CLOSE_RESET_BY_PEER);
    VCHECK_EQ(op->code, VEGA_H2_NO_ERROR);

    /* set_close: the connection goes away once its streams are done */
    struct tc_stream *cl = tc_request(c, "GET", "/close", NULL, NULL, 0);
    VCHECK(tc_run(c, tc_eof, NULL, 5000));
    VCHECK_STR((char *)cl->body, "bye");
    VCHECK(c->ngoaway >= 1);
    VCHECK_EQ(c->goaway_code, VEGA_H2_NO_ERROR);
    tc_free(c);
    ts_stop(&t, 1000);
}
VTEST(resets_continue_close_timeouts)
{
    vtest_run(body_resets, 2);
}

/* A client that never opens its windows: every response waiting for it is reset after
 * write_timeout, and what the server held for them is given back. */
static void body_zero_window(void)
{
    struct ts t;
    vega_http_server_opts o = ts_opts();
    o.write_timeout_ns = 300 * VEGA_NS_PER_MS;
    o.on_log = NULL;
    vega_http_server_h2_opts h = ts_h2c();
    ts_start(&t, &o, &h);
    vega_h2_opts co;
    vega_h2_opts_init(&co);
    co.initial_window_size = 1; /* SETTINGS_INITIAL_WINDOW_SIZE: 1 byte per stream */
    struct tc *c = tc_connect(&t.addr, &co);
    c->consume = false;
    atomic_store(&ts_errors, 0);
    /* read before the requests go: the server's writes start after it, so the resets come at
     * least write_timeout after it however long this task waits between the lines below (read
     * after them, a busy machine made it fail) */
    vega_tstamp t0 = vega_now();
    struct tc_stream *big = tc_request(c, "GET", "/big", NULL, NULL, 0);
    struct tc_stream *hi = tc_request(c, "GET", "/hello", NULL, NULL, 0);
    VCHECK(tc_run(c, tc_all_closed, NULL, 5000));
    VCHECK(vega_now() - t0 >= 250 * VEGA_NS_PER_MS);
    VCHECK_EQ(big->how, VEGA_H2_CLOSE_RESET_BY_PEER);
    VCHECK_EQ(big->code, VEGA_H2_CANCEL);
    VCHECK_EQ(hi->how, VEGA_H2_CLOSE_RESET_BY_PEER);
    VCHECK_EQ(atomic_load(&ts_errors), 1); /* /big's write timed out */
    VCHECK(ts_stats(&t).timeouts >= 1);
    /* the connection still serves: a new stream with a window of 1 gets one byte */
    tc_free(c);
    ts_stop(&t, 1000);
}
VTEST(zero_window_stall)
{
    vtest_run(body_zero_window, 2);
}
