/* SPDX-License-Identifier: MIT */
/* Helpers for the server's HTTP/2 tests: a test handler and server, and a small HTTP/2 client
 * (the HTTP/2 core as a client over any stream, driven by the test's task: write what the core
 * has, read with a deadline, feed) that records each stream's head, body, trailers and end, the
 * DATA order across streams, and GOAWAYs. */
#ifndef VEGA_TEST_H2_UTIL_H
#define VEGA_TEST_H2_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/h2.h>
#include <vega/stream.h>

#include "vtest.h"

#define TC_STREAMS 256

struct tc_stream {
    int32_t id;
    int status, informational;
    char head[4096]; /* "name: value\n", the final head */
    size_t head_len;
    char trailers[1024];
    size_t trailers_len;
    uint8_t *body;
    size_t body_len, body_cap;
    bool ended, closed;
    uint32_t code;
    vega_h2_close how;
    const uint8_t *up; /* the request body being sent (borrowed), and what is left */
    size_t up_len;
    bool up_end;
};

struct tc {
    vega_stream *s;
    vega_h2_conn *h2;
    struct tc_stream st[TC_STREAMS];
    int n;
    bool eof, consume;
    int ngoaway;
    uint32_t goaway_code, goaway_last;
    int32_t order[8192]; /* the stream of each DATA callback, in order */
    size_t norder;
    uint8_t buf[65536];
    int pings_acked;
};

static inline struct tc_stream *tc_find(struct tc *c, int32_t id)
{
    for (int i = 0; i < c->n; i++)
        if (c->st[i].id == id)
            return &c->st[i];
    return NULL;
}

static inline int tc_on_headers(void *ud, int32_t id, const vega_h2_head *h)
{
    struct tc *c = ud;
    struct tc_stream *s = tc_find(c, id);
    VCHECK(s != NULL);
    if (h->kind == VEGA_H2_HEAD_INFORMATIONAL) {
        s->informational = h->status;
        return 0;
    }
    char *out = h->kind == VEGA_H2_HEAD_TRAILERS ? s->trailers : s->head;
    size_t cap = h->kind == VEGA_H2_HEAD_TRAILERS ? sizeof s->trailers : sizeof s->head;
    size_t *len = h->kind == VEGA_H2_HEAD_TRAILERS ? &s->trailers_len : &s->head_len;
    if (h->kind == VEGA_H2_HEAD_RESPONSE)
        s->status = h->status;
    for (size_t i = 0; i < h->nfields; i++) {
        int k = snprintf(out + *len, cap - *len, "%.*s: %.*s\n", (int)h->fields[i].name.len,
                         h->fields[i].name.ptr, (int)h->fields[i].value.len,
                         h->fields[i].value.ptr ? h->fields[i].value.ptr : "");
        if (k > 0 && (size_t)k < cap - *len)
            *len += (size_t)k;
    }
    if (h->end_stream)
        s->ended = true;
    return 0;
}

static inline int tc_on_data(void *ud, int32_t id, const uint8_t *d, size_t len, unsigned flags)
{
    struct tc *c = ud;
    struct tc_stream *s = tc_find(c, id);
    VCHECK(s != NULL);
    if (c->norder < sizeof c->order / sizeof c->order[0] && len)
        c->order[c->norder++] = id;
    if (len && s->body_len + len > s->body_cap) {
        size_t cap = s->body_cap ? s->body_cap * 2 : 4096;
        while (cap < s->body_len + len)
            cap *= 2;
        s->body = realloc(s->body, cap + 1);
        VCHECK(s->body != NULL);
        s->body_cap = cap;
    }
    if (len)
        memcpy(s->body + s->body_len, d, len);
    s->body_len += len;
    if (s->body) /* NULL while only empty DATA frames came */
        s->body[s->body_len] = 0;
    if (flags & VEGA_H2_FLAG_END_STREAM)
        s->ended = true;
    if (c->consume)
        (void)vega_h2_stream_consume(c->h2, id, len);
    return 0;
}

static inline int tc_on_close(void *ud, int32_t id, uint32_t code, vega_h2_close how)
{
    struct tc *c = ud;
    struct tc_stream *s = tc_find(c, id);
    if (s) {
        s->closed = true;
        s->code = code;
        s->how = how;
    }
    return 0;
}

static inline int tc_on_writable(void *ud, int32_t id)
{
    (void)ud;
    (void)id;
    return 0;
}

static inline int tc_on_goaway(void *ud, uint32_t last, uint32_t code, const uint8_t *d, size_t dl)
{
    (void)d;
    (void)dl;
    struct tc *c = ud;
    c->ngoaway++;
    c->goaway_code = code;
    c->goaway_last = last;
    return 0;
}

static inline int tc_on_ping_ack(void *ud, uint64_t opaque)
{
    (void)opaque;
    ((struct tc *)ud)->pings_acked++;
    return 0;
}

static const vega_h2_callbacks tc_cb = {
    .on_headers = tc_on_headers,
    .on_data = tc_on_data,
    .on_stream_close = tc_on_close,
    .on_stream_writable = tc_on_writable,
    .on_goaway = tc_on_goaway,
    .on_ping_ack = tc_on_ping_ack,
};

/* A client over s (taken). o: NULL = the core's defaults. */
static inline struct tc *tc_new(vega_stream *s, const vega_h2_opts *o)
{
    struct tc *c = calloc(1, sizeof *c);
    VCHECK(c != NULL);
    c->s = s;
    c->consume = true;
    VCHECK_EQ(vega_h2_conn_client_new(&c->h2, &tc_cb, o, c), 0);
    return c;
}

static inline void tc_free(struct tc *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->st[i].body);
    vega_h2_conn_free(c->h2);
    vega_stream_close(c->s, vega_deadline_in_ms(1000));
    free(c);
}

/* Writes what the core has. Returns 0 or a negative code. */
static inline int tc_flush(struct tc *c)
{
    for (;;) {
        vega_ssize n = vega_h2_conn_write(c->h2, c->buf, sizeof c->buf, vega_now());
        if (n <= 0)
            return (int)n;
        vega_ssize w = vega_stream_write(c->s, c->buf, (size_t)n, NULL, vega_deadline_in_ms(5000));
        if (w < 0)
            return (int)w;
    }
}

/* Opens a stream: method and path, more fields ("name", "value" pairs, NULL-ended), a body
 * (borrowed until sent; NULL: none). Returns the stream's slot. */
static inline struct tc_stream *tc_request(struct tc *c, const char *method, const char *path,
                                           const char *const *extra, const void *body,
                                           size_t body_len)
{
    vega_hpack_field f[32];
    size_t n = 0;
    f[n++] = (vega_hpack_field){{":method", 7}, {method, strlen(method)}, 0};
    f[n++] = (vega_hpack_field){{":scheme", 7}, {"http", 4}, 0};
    f[n++] = (vega_hpack_field){{":authority", 10}, {"test", 4}, 0};
    f[n++] = (vega_hpack_field){{":path", 5}, {path, strlen(path)}, 0};
    for (size_t i = 0; extra && extra[i] && n < 32; i += 2)
        f[n++] = (vega_hpack_field){
            {extra[i], strlen(extra[i])}, {extra[i + 1], strlen(extra[i + 1])}, 0};
    VCHECK(c->n < TC_STREAMS);
    struct tc_stream *s = &c->st[c->n];
    memset(s, 0, sizeof *s);
    int32_t id;
    int rc = vega_h2_submit_request(c->h2, f, n, body ? 0 : VEGA_H2_FLAG_END_STREAM, NULL, &id);
    VCHECK_EQ(rc, 0);
    s->id = id;
    c->n++;
    if (body) {
        vega_ssize k = vega_h2_stream_write(c->h2, id, body, body_len, VEGA_H2_FLAG_END_STREAM);
        VCHECK_EQ(k, (vega_ssize)body_len);
    }
    return s;
}

/* Reads once (until dl) and feeds. Returns the core's result, 0 on a timeout, or -1 at EOF. */
static inline int tc_read_once(struct tc *c, vega_deadline dl)
{
    vega_ssize n = vega_stream_read(c->s, c->buf, sizeof c->buf, dl);
    if (n == -ETIMEDOUT)
        return 0;
    if (n <= 0) {
        c->eof = true;
        return -1;
    }
    return vega_h2_conn_read(c->h2, c->buf, (size_t)n, vega_now());
}

/* Runs the connection until done(c, arg) holds or ms pass. Returns done's last answer. */
static inline bool tc_run(struct tc *c, bool (*done)(struct tc *, const void *), const void *arg,
                          uint64_t ms)
{
    vega_deadline dl = vega_deadline_in_ms(ms);
    for (;;) {
        if (tc_flush(c) < 0)
            c->eof = true;
        if (done(c, arg))
            return true;
        if (c->eof || vega_now() >= dl)
            return done(c, arg);
        vega_deadline step = vega_deadline_in_ms(50);
        int rc = tc_read_once(c, dl < step ? dl : step);
        if (rc < 0 && rc != -1) {
            (void)tc_flush(c);
            c->eof = true;
        }
    }
}

/* done() helpers */
static inline bool tc_closed(struct tc *c, const void *arg)
{
    const struct tc_stream *s = arg;
    (void)c;
    return s->closed;
}

static inline bool tc_all_closed(struct tc *c, const void *arg)
{
    (void)arg;
    for (int i = 0; i < c->n; i++)
        if (!c->st[i].closed)
            return false;
    return true;
}

static inline bool tc_eof(struct tc *c, const void *arg)
{
    (void)arg;
    return c->eof;
}

static inline bool tc_head_has(const struct tc_stream *s, const char *line)
{
    return strstr(s->head, line) != NULL;
}

/* ---- the server ---------------------------------------------------------------------------- */

#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

#include <vega/http_server.h>
#include <vega/io.h>
#include <vega/rt.h>
#include <vega/test.h>
#include <vega/tls.h>

#define DL(ms)   vega_deadline_in_ms(ms)
#define FILE_LEN 300000

static _Atomic int ts_file_fd = -1;
static atomic_int ts_entered, ts_slow_want, ts_errors, ts_logged, ts_read_err;
static atomic_int ts_hang_live, ts_stubborn_live;
static atomic_bool ts_stubborn_release;

static inline uint8_t ts_pattern(size_t i)
{
    return (uint8_t)(i * 7 + i / 251);
}

static inline bool ts_path(const vega_http_request *r, const char *p)
{
    return vega_http_str_eq(r->path, p);
}

static inline int ts_echo(vega_http_exchange *x)
{
    size_t cap = 2 << 20, got = 0;
    uint8_t *body = malloc(cap);
    VCHECK(body != NULL);
    for (;;) {
        vega_ssize k =
            vega_http_request_read(x, body + got, cap - got > 7000 ? 7000 : cap - got, DL(10000));
        if (k < 0) {
            atomic_fetch_add(&ts_read_err, 1);
            free(body);
            return (int)k;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    int rc = vega_http_response_start(x, 200, NULL, 0, VEGA_HTTP_LENGTH_UNKNOWN);
    if (rc == 0 && got)
        rc = vega_http_response_write(x, body, got, DL(10000)) < 0 ? -1 : 0;
    char sum[32];
    int sl = snprintf(sum, sizeof sum, "%zu", got);
    vega_http_field t[] = {{{"X-Length", 8}, {sum, (size_t)sl}}};
    free(body);
    return rc < 0 ? rc : vega_http_response_finish(x, t, 1, DL(5000));
}

static inline int ts_big(vega_http_exchange *x, size_t n, bool known)
{
    int rc = vega_http_response_start(x, 200, NULL, 0, known ? n : VEGA_HTTP_LENGTH_UNKNOWN);
    uint8_t buf[4096];
    for (size_t off = 0; rc == 0 && off < n; off += sizeof buf) {
        for (size_t i = 0; i < sizeof buf; i++)
            buf[i] = ts_pattern(off + i);
        vega_ssize w = vega_http_response_write(x, buf, sizeof buf, DL(10000));
        if (w < 0) {
            atomic_fetch_add(&ts_errors, 1);
            return (int)w;
        }
    }
    return rc == 0 ? vega_http_response_finish(x, NULL, 0, DL(5000)) : rc;
}

static inline int ts_handler(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *r = vega_http_exchange_request(x);
    static const vega_http_field ct[] = {{{"Content-Type", 12}, {"text/plain", 10}}};
    if (ts_path(r, "/hello"))
        return vega_http_respond(x, 200, ct, 1, "hello h2", 8, DL(5000));
    if (ts_path(r, "/info")) {
        char b[512];
        int n = snprintf(
            b, sizeof b, "%.*s %.*s q=%.*s a=%.*s v=%d seq=%u tls=%d body=%d len=%lld",
            (int)r->method_name.len, r->method_name.ptr, (int)r->path.len, r->path.ptr,
            r->query.ptr ? (int)r->query.len : 1, r->query.ptr ? r->query.ptr : "-",
            r->authority.ptr ? (int)r->authority.len : 1, r->authority.ptr ? r->authority.ptr : "-",
            r->version, r->conn_seq, (int)r->tls, (int)r->has_body,
            r->content_length == VEGA_HTTP_LENGTH_UNKNOWN ? -1LL : (long long)r->content_length);
        return vega_http_respond(x, 200, NULL, 0, b, (size_t)n, DL(5000));
    }
    if (ts_path(r, "/echo"))
        return ts_echo(x);
    if (ts_path(r, "/big"))
        return ts_big(x, 1 << 20, true);
    if (ts_path(r, "/chunked")) {
        VCHECK_EQ(vega_http_response_start(x, 200, ct, 1, VEGA_HTTP_LENGTH_UNKNOWN), 0);
        VCHECK_EQ(vega_http_response_write(x, "one,", 4, DL(5000)), 4);
        VCHECK_EQ(vega_http_response_write(x, "two,", 4, DL(5000)), 4);
        VCHECK_EQ(vega_http_response_write(x, "three", 5, DL(5000)), 5);
        static const vega_http_field t[] = {{{"X-Sum", 5}, {"13", 2}}};
        return vega_http_response_finish(x, t, 1, DL(5000));
    }
    if (ts_path(r, "/204"))
        return vega_http_respond(x, 204, NULL, 0, NULL, 0, DL(5000));
    if (ts_path(r, "/304")) {
        VCHECK_EQ(vega_http_response_start(x, 304, NULL, 0, 0), 0);
        return vega_http_response_finish(x, NULL, 0, DL(5000));
    }
    if (ts_path(r, "/file") || ts_path(r, "/small-file")) {
        size_t n = ts_path(r, "/file") ? FILE_LEN : 1000;
        int rc = vega_http_response_start(x, 200, NULL, 0, n);
        if (rc == 0 && vega_http_response_sendfile(x, ts_file_fd, 0, n, DL(10000)) < 0)
            rc = -1;
        return rc == 0 ? vega_http_response_finish(x, NULL, 0, DL(5000)) : rc;
    }
    if (ts_path(r, "/fail"))
        return -EIO;
    if (ts_path(r, "/short")) {
        VCHECK_EQ(vega_http_response_start(x, 200, NULL, 0, 10), 0);
        VCHECK_EQ(vega_http_response_write(x, "12345", 5, DL(5000)), 5);
        VCHECK_EQ(vega_http_response_finish(x, NULL, 0, DL(5000)), -EINVAL);
        return 0;
    }
    if (ts_path(r, "/fields")) {
        static const vega_http_field f[] = {{{"X-Upper", 7}, {"Yes", 3}},
                                            {{"Keep-Alive", 10}, {"timeout=5", 9}},
                                            {{"Set-Cookie", 10}, {"a=1", 3}}};
        VCHECK_EQ(vega_http_response_start(x, 101, NULL, 0, 0), -EINVAL);
        static const vega_http_field bad[] = {{{"Content-Length", 14}, {"3", 1}}};
        VCHECK_EQ(vega_http_response_start(x, 200, bad, 1, 3), -EINVAL);
        VCHECK(vega_http_exchange_tls(x) == NULL || r->tls);
        return vega_http_respond(x, 200, f, 3, "abc", 3, DL(5000));
    }
    if (ts_path(r, "/slow")) {
        /* waits until ts_slow_want requests are inside at once (they run concurrently) */
        atomic_fetch_add(&ts_entered, 1);
        vega_deadline dl = DL(5000);
        while (atomic_load(&ts_entered) < atomic_load(&ts_slow_want) && vega_now() < dl)
            if (vega_sleep_ms(2) < 0)
                break;
        return vega_http_respond(x, 200, NULL, 0, "slow", 4, DL(5000));
    }
    if (ts_path(r, "/hang")) {
        atomic_fetch_add(&ts_hang_live, 1);
        (void)vega_sleep_ms(30000); /* until cancelled */
        atomic_fetch_sub(&ts_hang_live, 1);
        return -ECANCELED;
    }
    if (ts_path(r, "/stubborn")) {
        /* a handler that ignores cancellation until let go */
        atomic_fetch_add(&ts_stubborn_live, 1);
        vega_deadline dl = DL(10000);
        while (!atomic_load(&ts_stubborn_release) && vega_now() < dl)
            if (vega_sleep_ms(2) < 0)
                (void)vega_yield();
        atomic_fetch_sub(&ts_stubborn_live, 1);
        return vega_http_respond(x, 200, NULL, 0, "late", 4, DL(100));
    }
    if (ts_path(r, "/close")) {
        vega_http_exchange_set_close(x);
        return vega_http_respond(x, 200, NULL, 0, "bye", 3, DL(5000));
    }
    return vega_http_respond(x, 404, NULL, 0, "nope", 4, DL(5000));
}

static inline void ts_on_log(void *user, const vega_http_request *req, const vega_http_log_entry *e)
{
    (void)user;
    (void)e;
    VCHECK_EQ(req->version, 20);
    atomic_fetch_add(&ts_logged, 1);
}

struct ts {
    vega_http_server *srv;
    vega_addr addr;
    vega_task *run;
};

static inline void *ts_run_task(void *arg)
{
    return (void *)(intptr_t)vega_http_server_run(arg);
}

static inline vega_http_server_opts ts_opts(void)
{
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = ts_handler;
    o.on_log = ts_on_log;
    o.server_header = "vega-test";
    return o;
}

static inline vega_http_server_h2_opts ts_h2c(void)
{
    vega_http_server_h2_opts h;
    vega_http_server_h2_opts_init(&h);
    h.h2c = true;
    return h;
}

/* Starts a server on loopback; h2: NULL = no vega_http_server_set_h2 call. */
static inline void ts_start(struct ts *t, vega_http_server_opts *o,
                            const vega_http_server_h2_opts *h2)
{
    VCHECK_EQ(vega_http_server_new(&t->srv, o), 0);
    if (h2)
        VCHECK_EQ(vega_http_server_set_h2(t->srv, h2), 0);
    vega_addr a;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_http_server_listen(t->srv, &a, 0, &t->addr), 0);
    VCHECK_EQ(vega_task_spawn(&t->run, ts_run_task, t->srv), 0);
}

static inline vega_http_server_stats ts_stats(struct ts *t)
{
    vega_http_server_stats st;
    vega_http_server_get_stats(t->srv, &st);
    return st;
}

static inline void ts_stop(struct ts *t, uint64_t grace_ms)
{
    vega_http_server_shutdown(t->srv, DL(grace_ms));
    void *res;
    VCHECK_EQ(vega_task_join(t->run, &res, DL(15000)), 0);
    VCHECK_EQ((intptr_t)res, 0);
    vega_http_server_stats st = ts_stats(t);
    VCHECK_EQ(st.conns_open, 0);
    VCHECK_EQ(st.conns_parked, 0);
    vega_http_server_free(t->srv);
}

/* Waits until a counter of the stats (by offset) reaches want. */
static inline bool ts_wait_stat(struct ts *t, size_t off, uint64_t want, uint64_t ms)
{
    vega_deadline dl = DL(ms);
    for (;;) {
        vega_http_server_stats st = ts_stats(t);
        uint64_t v;
        memcpy(&v, (const char *)&st + off, sizeof v);
        if (v == want)
            return true;
        if (vega_now() >= dl)
            return false;
        vega_sleep_ms(5);
    }
}

/* The file /file and /small-file send. */
static inline void ts_make_file(void)
{
    char path[] = "/tmp/vega-h2-XXXXXX";
    int fd = mkstemp(path);
    VCHECK(fd >= 0);
    unlink(path);
    uint8_t *b = malloc(FILE_LEN);
    for (size_t i = 0; i < FILE_LEN; i++)
        b[i] = ts_pattern(i);
    VCHECK_EQ(write(fd, b, FILE_LEN), (ssize_t)FILE_LEN);
    free(b);
    ts_file_fd = fd;
}

static inline bool ts_body_is_pattern(const struct tc_stream *s, size_t n)
{
    if (s->body_len != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s->body[i] != ts_pattern(i))
            return false;
    return true;
}

/* An h2c client over a fresh TCP connection to the server (prior knowledge). */
static inline struct tc *tc_connect(const vega_addr *a, const vega_h2_opts *o)
{
    vega_sock *sk;
    VCHECK_EQ(vega_tcp_connect(&sk, a, DL(5000)), 0);
    vega_stream *s;
    VCHECK_EQ(vega_stream_from_sock(&s, sk, 0), 0);
    return tc_new(s, o);
}

/* The same over TLS with ALPN h2 (the handshake done, h2 checked). */
static inline struct tc *tc_connect_tls(const vega_addr *a, vega_tls_config *ccfg)
{
    vega_sock *sk;
    VCHECK_EQ(vega_tcp_connect(&sk, a, DL(5000)), 0);
    vega_stream *s;
    VCHECK_EQ(vega_tls_stream_from_sock(&s, sk, 0, ccfg, NULL), 0);
    VCHECK_EQ(vega_tls_handshake(s, DL(5000)), 0);
    VCHECK_STR(vega_tls_get_alpn(s), "h2");
    return tc_new(s, NULL);
}

#endif
