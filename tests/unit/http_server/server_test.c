/* SPDX-License-Identifier: MIT */
/* The HTTP/1.1 server against raw sockets, in-memory streams, TLS and curl: keep-alive,
 * pipelining, bodies both ways, errors, timeouts, limits, parking and graceful shutdown. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vega/http1.h>
#include <vega/http_server.h>
#include <vega/io.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/test.h>
#include <vega/tls.h>

#include "server_int.h"
#include "vtest.h"

#define DL(ms) vega_deadline_in_ms(ms)

/* ---- the handler ----------------------------------------------------------------------------- */

static _Atomic int file_fd = -1; /* atomics: the handler reads them on a worker thread */
static _Atomic size_t file_len;
static atomic_int slow_started;

static bool path_is(const vega_http_request *r, const char *p)
{
    return r->path.len == strlen(p) && memcmp(r->path.ptr, p, r->path.len) == 0;
}

static int handler(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *r = vega_http_exchange_request(x);
    static const vega_http_field ct[] = {{{"Content-Type", 12}, {"text/plain", 10}}};
    if (path_is(r, "/hello") || path_is(r, "/"))
        return vega_http_respond(x, 200, ct, 1, "hello", 5, DL(5000));
    if (path_is(r, "/info")) {
        char b[512];
        int n = snprintf(b, sizeof b, "%.*s %.*s q=%.*s a=%.*s seq=%u v=%d",
                         (int)r->method_name.len, r->method_name.ptr, (int)r->path.len, r->path.ptr,
                         r->query.ptr ? (int)r->query.len : 1, r->query.ptr ? r->query.ptr : "-",
                         r->authority.ptr ? (int)r->authority.len : 1,
                         r->authority.ptr ? r->authority.ptr : "-", r->conn_seq, r->version);
        return vega_http_respond(x, 200, NULL, 0, b, (size_t)n, DL(5000));
    }
    if (path_is(r, "/echo")) {
        /* (not thread-local: a task may move between threads at each suspension) */
        size_t cap = 1 << 20, got = 0;
        char *buf = malloc(cap);
        VCHECK(buf);
        for (;;) {
            vega_ssize n =
                vega_http_request_read(x, buf + got, cap - got > 1000 ? 1000 : cap - got, DL(5000));
            if (n < 0) {
                free(buf);
                return (int)n;
            }
            if (n == 0)
                break;
            got += (size_t)n;
        }
        int rc = vega_http_respond(x, 200, NULL, 0, buf, got, DL(5000));
        free(buf);
        return rc;
    }
    if (path_is(r, "/noread"))
        return vega_http_respond(x, 200, NULL, 0, "ignored", 7, DL(5000));
    if (path_is(r, "/chunked")) {
        VCHECK_EQ(vega_http_response_start(x, 200, ct, 1, VEGA_HTTP_LENGTH_UNKNOWN), 0);
        VCHECK_EQ(vega_http_response_write(x, "one,", 4, DL(5000)), 4);
        VCHECK_EQ(vega_http_response_write(x, "two,", 4, DL(5000)), 4);
        VCHECK_EQ(vega_http_response_write(x, "three", 5, DL(5000)), 5);
        return vega_http_response_finish(x, NULL, 0, DL(5000));
    }
    if (path_is(r, "/204"))
        return vega_http_respond(x, 204, NULL, 0, NULL, 0, DL(5000));
    if (path_is(r, "/304")) {
        VCHECK_EQ(vega_http_response_start(x, 304, NULL, 0, 0), 0);
        return vega_http_response_finish(x, NULL, 0, DL(5000));
    }
    if (path_is(r, "/file")) {
        int rc = vega_http_response_start(x, 200, NULL, 0, file_len);
        if (rc < 0)
            return rc;
        vega_ssize n = vega_http_response_sendfile(x, file_fd, 0, file_len, DL(5000));
        if (n < 0)
            return (int)n;
        return vega_http_response_finish(x, NULL, 0, DL(5000));
    }
    if (path_is(r, "/slow")) {
        atomic_fetch_add(&slow_started, 1);
        vega_sleep_ms(300);
        return vega_http_respond(x, 200, NULL, 0, "slow", 4, DL(5000));
    }
    if (path_is(r, "/early")) {
        static const vega_http_field link[] = {{{"Link", 4}, {"</a.css>; rel=preload", 21}}};
        VCHECK_EQ(vega_http_response_start(x, 103, link, 1, 0), 0);
        VCHECK(!vega_http_response_is_started(x));
        VCHECK_EQ(vega_http_response_start(x, 101, NULL, 0, 0), -EINVAL);
        static const vega_http_field bad[] = {{{"Content-Length", 14}, {"3", 1}}};
        VCHECK_EQ(vega_http_response_start(x, 200, bad, 1, 3), -EINVAL);
        static const vega_http_field inj[] = {{{"X-A", 3}, {"a\r\nX-B: b", 10}}};
        VCHECK_EQ(vega_http_response_start(x, 200, inj, 1, 3), -EINVAL);
        VCHECK_EQ(vega_http_response_start(x, 200, NULL, 0, 3), 0);
        VCHECK(vega_http_response_is_started(x));
        VCHECK_EQ(vega_http_response_start(x, 200, NULL, 0, 3), VEGA_ERR_CLOSED);
        VCHECK_EQ(vega_http_response_write(x, "abcd", 4, DL(1000)), -EINVAL);
        VCHECK_EQ(vega_http_response_write(x, "abc", 3, DL(1000)), 3);
        return vega_http_response_finish(x, NULL, 0, DL(1000));
    }
    if (path_is(r, "/fail"))
        return -EIO;
    if (path_is(r, "/big")) {
        static char big[200000];
        memset(big, 'b', sizeof big);
        return vega_http_respond(x, 200, NULL, 0, big, sizeof big, DL(5000));
    }
    return vega_http_respond(x, 404, NULL, 0, "nope", 4, DL(5000));
}

/* ---- a test server --------------------------------------------------------------------------- */

struct tsrv {
    vega_http_server *srv;
    vega_addr addr;
    vega_task *run;
};

static void *run_task(void *arg)
{
    return (void *)(intptr_t)vega_http_server_run(arg);
}

static void tsrv_start(struct tsrv *t, vega_http_server_opts *o)
{
    if (!o->handler)
        o->handler = handler;
    VCHECK_EQ(vega_http_server_new(&t->srv, o), 0);
    vega_addr a;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_http_server_listen(t->srv, &a, 0, &t->addr), 0);
    VCHECK_EQ(vega_task_spawn(&t->run, run_task, t->srv), 0);
}

static void tsrv_stop(struct tsrv *t, uint64_t grace_ms)
{
    vega_http_server_shutdown(t->srv, DL(grace_ms));
    void *res;
    VCHECK_EQ(vega_task_join(t->run, &res, DL(10000)), 0);
    VCHECK_EQ((intptr_t)res, 0);
    vega_http_server_stats st;
    vega_http_server_get_stats(t->srv, &st);
    VCHECK_EQ(st.conns_open, 0);
    VCHECK_EQ(st.conns_parked, 0);
    vega_http_server_free(t->srv);
}

static vega_http_server_stats tsrv_stats(struct tsrv *t)
{
    vega_http_server_stats st;
    vega_http_server_get_stats(t->srv, &st);
    return st;
}

/* ---- a client -------------------------------------------------------------------------------- */

struct resp {
    int status;
    char head[4096]; /* "name: value\n" lines, names lower-cased */
    size_t head_len;
    char *body;
    size_t body_len, body_cap;
    bool complete;
};

struct client {
    vega_stream *s;
    vega_http1_parser p;
    struct resp r[8];
    int n, done;
    bool eof;
    bool head_next[8]; /* the response answers a HEAD request */
};

static int c_status(void *ud, int version, int status, vega_http1_span reason)
{
    (void)version;
    (void)reason;
    struct client *c = ud;
    VCHECK(c->n < 8);
    struct resp *r = &c->r[c->n];
    free(r->body);
    memset(r, 0, sizeof *r);
    r->status = status;
    return 0;
}

static int c_header(void *ud, vega_http1_span n, vega_http1_span v)
{
    struct client *c = ud;
    struct resp *r = &c->r[c->n];
    for (size_t i = 0; i < n.len && r->head_len < sizeof r->head - 2; i++) {
        char ch = n.ptr[i];
        r->head[r->head_len++] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
    }
    int k = snprintf(r->head + r->head_len, sizeof r->head - r->head_len, ": %.*s\n", (int)v.len,
                     v.ptr);
    if (k > 0)
        r->head_len = (r->head_len + (size_t)k < sizeof r->head - 1 ? r->head_len + (size_t)k
                                                                    : sizeof r->head - 1);
    return 0;
}

static int c_body(void *ud, vega_http1_span d)
{
    struct client *c = ud;
    struct resp *r = &c->r[c->n];
    if (r->body_len + d.len + 1 > r->body_cap) {
        r->body_cap = (r->body_len + d.len + 1) * 2;
        r->body = realloc(r->body, r->body_cap);
        VCHECK(r->body);
    }
    memcpy(r->body + r->body_len, d.ptr, d.len);
    r->body_len += d.len;
    r->body[r->body_len] = 0;
    return 0;
}

static int c_complete(void *ud)
{
    struct client *c = ud;
    struct resp *r = &c->r[c->n];
    if (r->status < 200)
        return 0; /* an interim response: the final one follows */
    if (!r->body) {
        r->body = calloc(1, 1);
        r->body_cap = 1;
    }
    r->complete = true;
    c->n++;
    c->done++;
    if (c->n < 8 && c->head_next[c->n])
        vega_http1_parser_set_head(&c->p, true);
    return 0;
}

static const vega_http1_callbacks client_cb = {
    .on_status = c_status,
    .on_header = c_header,
    .on_body = c_body,
    .on_message_complete = c_complete,
};

static struct client *client_new(vega_stream *s)
{
    struct client *c = calloc(1, sizeof *c);
    VCHECK(c);
    c->s = s;
    VCHECK_EQ(vega_http1_parser_init(&c->p, VEGA_HTTP1_RESPONSE, NULL, &client_cb, c), 0);
    return c;
}

static struct client *client_connect(const vega_addr *a)
{
    vega_sock *s;
    VCHECK_EQ(vega_tcp_connect(&s, a, DL(5000)), 0);
    vega_stream *st;
    VCHECK_EQ(vega_stream_from_sock(&st, s, 0), 0);
    return client_new(st);
}

static void client_free(struct client *c)
{
    for (int i = 0; i < 8; i++)
        free(c->r[i].body);
    vega_stream_close(c->s, DL(1000));
    free(c);
}

static void client_send(struct client *c, const char *req)
{
    VCHECK_EQ(vega_stream_write(c->s, req, strlen(req), NULL, DL(5000)), (vega_ssize)strlen(req));
}

/* Reads until `want` responses in total are complete (or the stream ends: false). */
static bool client_wait(struct client *c, int want, uint64_t ms)
{
    vega_deadline dl = DL(ms);
    uint8_t buf[16384];
    while (c->done < want) {
        vega_ssize n = vega_stream_read(c->s, buf, sizeof buf, dl);
        if (n <= 0) {
            c->eof = n == 0 || n == -ECONNRESET;
            if (n == 0)
                vega_http1_parser_finish(&c->p);
            return c->done >= want;
        }
        size_t used;
        VCHECK_EQ(vega_http1_parser_read(&c->p, buf, (size_t)n, &used), 0);
    }
    return true;
}

/* True when the server closed the connection (read gives end of stream or a reset). */
static bool client_closed(struct client *c, uint64_t ms)
{
    uint8_t buf[4096];
    vega_deadline dl = DL(ms);
    for (;;) {
        vega_ssize n = vega_stream_read(c->s, buf, sizeof buf, dl);
        if (n == 0 || n == -ECONNRESET)
            return true;
        if (n < 0)
            return false;
    }
}

static bool has_field(const struct resp *r, const char *line)
{
    return strstr(r->head, line) != NULL;
}

static vega_http_server_opts default_opts(void)
{
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = handler;
    return o;
}

/* ---- tests ----------------------------------------------------------------------------------- */

static atomic_int log_count, log_status_sum;

static void on_log(void *user, const vega_http_request *req, const vega_http_log_entry *e)
{
    (void)user;
    (void)req;
    atomic_fetch_add(&log_count, 1);
    atomic_fetch_add(&log_status_sum, e->status);
    VCHECK_EQ(e->error, 0);
}

static void body_get_keepalive(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    o.server_header = "vega-test";
    o.on_log = on_log;
    atomic_store(&log_count, 0);
    atomic_store(&log_status_sum, 0);
    tsrv_start(&t, &o);
    struct client *c = client_connect(&t.addr);
    client_send(c, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 1, 5000));
    VCHECK_EQ(c->r[0].status, 200);
    VCHECK_STR(c->r[0].body, "hello");
    VCHECK(has_field(&c->r[0], "content-length: 5\n"));
    VCHECK(has_field(&c->r[0], "server: vega-test\n"));
    VCHECK(has_field(&c->r[0], "date: "));
    VCHECK(!has_field(&c->r[0], "connection:"));
    client_send(c, "GET /info?x=1 HTTP/1.1\r\nHost: example.org\r\n\r\n");
    VCHECK(client_wait(c, 2, 5000));
    VCHECK_STR(c->r[1].body, "GET /info q=x=1 a=example.org seq=1 v=11");
    vega_http_server_stats st = tsrv_stats(&t);
    VCHECK_EQ(st.conns_accepted, 1);
    VCHECK_EQ(st.requests, 2);
    /* a 103 before the final response, and the API's refusals */
    client_send(c, "GET /early HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 3, 5000));
    VCHECK_EQ(c->r[2].status, 200);
    VCHECK_STR(c->r[2].body, "abc");
    client_free(c);
    tsrv_stop(&t, 1000);
    VCHECK_EQ(atomic_load(&log_count), 3);
    VCHECK_EQ(atomic_load(&log_status_sum), 600);
}
VTEST(get_keepalive)
{
    vtest_run(body_get_keepalive, 2);
}

static void body_pipelining(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    struct client *c = client_connect(&t.addr);
    client_send(c, "GET /info?n=1 HTTP/1.1\r\nHost: a\r\n\r\n"
                   "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nabcde"
                   "GET /info?n=3 HTTP/1.1\r\nHost: a\r\n\r\n"
                   "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "3\r\nxyz\r\n0\r\n\r\n\r\n" /* a stray CRLF is ignored */
                   "GET /info?n=5 HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 5, 5000));
    VCHECK_STR(c->r[0].body, "GET /info q=n=1 a=a seq=0 v=11");
    VCHECK_STR(c->r[1].body, "abcde");
    VCHECK_STR(c->r[2].body, "GET /info q=n=3 a=a seq=2 v=11");
    VCHECK_STR(c->r[3].body, "xyz");
    VCHECK_STR(c->r[4].body, "GET /info q=n=5 a=a seq=4 v=11");
    client_free(c);
    tsrv_stop(&t, 1000);
}
VTEST(pipelining)
{
    vtest_run(body_pipelining, 2);
}

static void body_post_bodies(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    struct client *c = client_connect(&t.addr);
    /* a body larger than the buffers, in pieces */
    size_t big = 100000;
    char *data = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + i % 26);
    char head[128];
    snprintf(head, sizeof head, "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: %zu\r\n\r\n",
             big);
    client_send(c, head);
    VCHECK_EQ(vega_stream_write(c->s, data, big, NULL, DL(5000)), (vega_ssize)big);
    VCHECK(client_wait(c, 1, 5000));
    VCHECK_EQ(c->r[0].body_len, big);
    VCHECK(memcmp(c->r[0].body, data, big) == 0);
    /* chunked, with extensions and trailers, sent in small pieces */
    client_send(c, "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
    client_send(c, "5;ext=1\r\nhello\r\n");
    vega_sleep_ms(20);
    client_send(c, "1");
    vega_sleep_ms(20);
    client_send(c, "0\r\n0123456789abcdef\r\n");
    client_send(c, "0\r\nX-Trailer: yes\r\n\r\n");
    VCHECK(client_wait(c, 2, 5000));
    VCHECK_STR(c->r[1].body, "hello0123456789abcdef");
    /* a bad chunk size: the connection closes */
    client_send(c, "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
    VCHECK(client_wait(c, 3, 5000));
    VCHECK_EQ(c->r[2].status, 400);
    VCHECK(client_closed(c, 3000));
    client_free(c);
    free(data);
    tsrv_stop(&t, 1000);
}
VTEST(post_bodies)
{
    vtest_run(body_post_bodies, 2);
}

static void body_expect_continue(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    struct client *c = client_connect(&t.addr);
    client_send(
        c, "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
    char buf[64];
    vega_ssize n = vega_stream_read(c->s, buf, sizeof buf - 1, DL(3000));
    VCHECK(n > 0);
    buf[n] = 0;
    VCHECK_STR(buf, "HTTP/1.1 100 Continue\r\n\r\n");
    client_send(c, "body");
    VCHECK(client_wait(c, 1, 3000));
    VCHECK_STR(c->r[0].body, "body");
    /* answered without reading: no 100, and the connection closes */
    client_send(
        c, "POST /noread HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
    VCHECK(client_wait(c, 2, 3000));
    VCHECK_EQ(c->r[1].status, 200);
    VCHECK(has_field(&c->r[1], "connection: close\n"));
    VCHECK(client_closed(c, 3000));
    client_free(c);
    /* an unread small body without Expect is drained: the connection stays */
    c = client_connect(&t.addr);
    client_send(c, "POST /noread HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nabcd"
                   "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 2, 3000));
    VCHECK_STR(c->r[1].body, "hello");
    client_free(c);
    tsrv_stop(&t, 1000);
}
VTEST(expect_continue)
{
    vtest_run(body_expect_continue, 2);
}

static void body_head_and_no_body(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    struct client *c = client_connect(&t.addr);
    c->head_next[0] = true;
    vega_http1_parser_set_head(&c->p, true);
    client_send(c, "HEAD /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 1, 3000));
    VCHECK_EQ(c->r[0].status, 200);
    VCHECK(has_field(&c->r[0], "content-length: 5\n"));
    VCHECK_EQ(c->r[0].body_len, 0);
    /* HEAD of a response of unknown length: no body either */
    vega_http1_parser_set_head(&c->p, true);
    client_send(c, "HEAD /chunked HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 2, 3000));
    VCHECK(has_field(&c->r[1], "transfer-encoding: chunked\n"));
    VCHECK_EQ(c->r[1].body_len, 0);
    client_send(c, "GET /204 HTTP/1.1\r\nHost: a\r\n\r\nGET /304 HTTP/1.1\r\nHost: a\r\n\r\n"
                   "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 5, 3000));
    VCHECK_EQ(c->r[2].status, 204);
    VCHECK(!has_field(&c->r[2], "content-length"));
    VCHECK(!has_field(&c->r[2], "transfer-encoding"));
    VCHECK_EQ(c->r[3].status, 304);
    VCHECK(!has_field(&c->r[3], "transfer-encoding"));
    VCHECK_STR(c->r[4].body, "hello");
    client_free(c);
    tsrv_stop(&t, 1000);
}
VTEST(head_and_no_body)
{
    vtest_run(body_head_and_no_body, 2);
}

static void body_chunked_and_http10(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    struct client *c = client_connect(&t.addr);
    client_send(c, "GET /chunked HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 1, 3000));
    VCHECK(has_field(&c->r[0], "transfer-encoding: chunked\n"));
    VCHECK_STR(c->r[0].body, "one,two,three");
    client_free(c);
    /* HTTP/1.0: close-delimited */
    c = client_connect(&t.addr);
    client_send(c, "GET /chunked HTTP/1.0\r\n\r\n");
    VCHECK(client_wait(c, 1, 3000));
    VCHECK(!has_field(&c->r[0], "transfer-encoding"));
    VCHECK(has_field(&c->r[0], "connection: close\n"));
    VCHECK_STR(c->r[0].body, "one,two,three");
    client_free(c);
    /* HTTP/1.0 keep-alive with a known length */
    c = client_connect(&t.addr);
    client_send(c, "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    VCHECK(client_wait(c, 1, 3000));
    VCHECK(has_field(&c->r[0], "connection: keep-alive\n"));
    client_send(c, "GET /info HTTP/1.0\r\n\r\n");
    VCHECK(client_wait(c, 2, 3000));
    VCHECK_STR(c->r[1].body, "GET /info q=- a=- seq=1 v=10");
    VCHECK(client_closed(c, 3000));
    client_free(c);
    tsrv_stop(&t, 1000);
}
VTEST(chunked_and_http10)
{
    vtest_run(body_chunked_and_http10, 2);
}

static void make_file(size_t len)
{
    char path[] = "/tmp/vega-srv-XXXXXX";
    file_fd = mkstemp(path);
    VCHECK(file_fd >= 0);
    unlink(path);
    char *d = malloc(len);
    for (size_t i = 0; i < len; i++)
        d[i] = (char)(i * 7 + i / 251);
    VCHECK_EQ(write(file_fd, d, len), (ssize_t)len);
    free(d);
    file_len = len;
}

static void check_file_body(const struct resp *r)
{
    VCHECK_EQ(r->body_len, file_len);
    for (size_t i = 0; i < file_len; i++)
        if (r->body[i] != (char)(i * 7 + i / 251))
            VCHECK_EQ((int)r->body[i], (int)(char)(i * 7 + i / 251)); /* the file's bytes */
}

static void body_sendfile(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    size_t sizes[] = {1024, 300000};
    int fds[2];
    for (size_t k = 0; k < 2; k++) {
        make_file(sizes[k]);
        fds[k] = file_fd;
        struct client *c = client_connect(&t.addr);
        client_send(c,
                    "GET /file HTTP/1.1\r\nHost: a\r\n\r\nGET /file HTTP/1.1\r\nHost: a\r\n\r\n");
        VCHECK(client_wait(c, 2, 5000));
        check_file_body(&c->r[0]);
        check_file_body(&c->r[1]);
        client_free(c);
    }
    tsrv_stop(&t, 1000);
    /* Closed after the stop joined the server's tasks (see body_tls). */
    close(fds[0]);
    close(fds[1]);
}
VTEST(sendfile)
{
    vtest_run(body_sendfile, 2);
}

struct bad_case {
    const char *req;
    int status;
};

static void body_parse_errors(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    static char long_target[9200], many_fields[6000], long_field[9000];
    strcpy(long_target, "GET /");
    memset(long_target + 5, 'a', 9000);
    strcpy(long_target + 9005, " HTTP/1.1\r\nHost: a\r\n\r\n");
    strcpy(many_fields, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int i = 0; i < 150; i++)
        sprintf(many_fields + strlen(many_fields), "X-F%d: v\r\n", i);
    strcat(many_fields, "\r\n");
    strcpy(long_field, "GET / HTTP/1.1\r\nHost: a\r\nX-Long: ");
    memset(long_field + strlen(long_field), 'v', 8500);
    strcat(long_field, "\r\n\r\n");
    struct bad_case cases[] = {
        {"GET / HTTP/1.1\r\n\r\n", 400}, /* no Host */
        {"GET / HTTP/1.1\nHost: a\n\n", 400},
        {"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 501},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
         400},
        {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
        {long_target, 414},
        {many_fields, 431},
        {long_field, 431},
    };
    for (size_t i = 0; i < (sizeof cases / sizeof cases[0]); i++) {
        struct client *c = client_connect(&t.addr);
        client_send(c, cases[i].req);
        if (!client_wait(c, 1, 3000))
            vtest_fail(__FILE__, __LINE__, "case %zu: no response", i);
        if (c->r[0].status != cases[i].status)
            vtest_fail(__FILE__, __LINE__, "case %zu: %d != %d", i, c->r[0].status,
                       cases[i].status);
        VCHECK(has_field(&c->r[0], "connection: close\n"));
        VCHECK(client_closed(c, 3000));
        client_free(c);
    }
    VCHECK_EQ(tsrv_stats(&t).bad_requests, (sizeof cases / sizeof cases[0]));
    /* a failing handler: 500, and the connection carries on */
    struct client *c = client_connect(&t.addr);
    client_send(c, "GET /fail HTTP/1.1\r\nHost: a\r\n\r\nGET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 2, 3000));
    VCHECK_EQ(c->r[0].status, 500);
    VCHECK_STR(c->r[1].body, "hello");
    client_free(c);
    tsrv_stop(&t, 1000);
}
VTEST(parse_errors)
{
    vtest_run(body_parse_errors, 2);
}

static void body_header_timeout(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    o.header_timeout_ns = 200 * VEGA_NS_PER_MS;
    tsrv_start(&t, &o);
    /* slowloris: a byte every 30 ms never completes the head in time */
    struct client *c = client_connect(&t.addr);
    vega_tstamp t0 = vega_now();
    const char *req =
        "GET /hello HTTP/1.1\r\nHost: a\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    bool closed = false;
    for (size_t i = 0; req[i]; i++) {
        if (vega_stream_write(c->s, req + i, 1, NULL, DL(1000)) < 0) {
            closed = true;
            break;
        }
        char b[16];
        vega_ssize n = vega_stream_read(c->s, b, sizeof b, DL(30));
        if (n == 0 || n == -ECONNRESET) {
            closed = true;
            break;
        }
    }
    VCHECK(closed || client_closed(c, 2000));
    /* Paused clock: closed at the header timeout after the connection came, although a byte
     * arrived every 30 ms (a timeout restarted by each byte would never have ended it). */
    VCHECK_WAITED(t0, 200);
    client_free(c);
    /* a connection that sends nothing at all */
    c = client_connect(&t.addr);
    VCHECK(client_closed(c, 2000));
    client_free(c);
    VCHECK(tsrv_stats(&t).timeouts >= 2);
    tsrv_stop(&t, 1000);
}
VTEST(header_timeout)
{
    vtest_run_paused(body_header_timeout);
}

static bool wait_stat(struct tsrv *t, size_t off, uint64_t want, uint64_t ms)
{
    vega_deadline dl = DL(ms);
    for (;;) {
        vega_http_server_stats st = tsrv_stats(t);
        uint64_t v;
        memcpy(&v, (char *)&st + off, sizeof v);
        if (v == want)
            return true;
        if (vega_now() >= dl)
            return false;
        vega_sleep_ms(5);
    }
}

static void body_idle_timeout_and_parked(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    o.idle_timeout_ns = 300 * VEGA_NS_PER_MS;
    tsrv_start(&t, &o);
    struct client *c[3];
    for (int i = 0; i < 3; i++) {
        c[i] = client_connect(&t.addr);
        client_send(c[i], "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
        VCHECK(client_wait(c[i], 1, 3000));
    }
    VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, conns_parked), 3, 2000));
    VCHECK_EQ(tsrv_stats(&t).conns_open, 3);
    /* a parked connection wakes for its next request */
    client_send(c[0], "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c[0], 2, 3000));
    vega_tstamp t0 = vega_now();
    for (int i = 0; i < 3; i++)
        VCHECK(client_closed(c[i], 3000));
    VCHECK(vega_now() - t0 >= 150 * VEGA_NS_PER_MS);
    VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, conns_open), 0, 2000));
    VCHECK_EQ(tsrv_stats(&t).conns_parked, 0);
    VCHECK(tsrv_stats(&t).timeouts >= 3);
    for (int i = 0; i < 3; i++)
        client_free(c[i]);
    tsrv_stop(&t, 1000);
}
VTEST(idle_timeout_and_parked)
{
    vtest_run(body_idle_timeout_and_parked, 2);
}

static void body_max_conns(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    o.max_conns = 2;
    o.max_requests_per_conn = 2;
    tsrv_start(&t, &o);
    struct client *a = client_connect(&t.addr), *b = client_connect(&t.addr);
    VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, conns_open), 2, 2000));
    /* the third is accepted and closed at once (the connect itself may see the reset) */
    vega_sock *s3;
    int r = vega_tcp_connect(&s3, &t.addr, DL(5000));
    if (r == 0) {
        vega_stream *st;
        VCHECK_EQ(vega_stream_from_sock(&st, s3, 0), 0);
        struct client *c = client_new(st);
        VCHECK(client_closed(c, 2000));
        client_free(c);
    } else {
        VCHECK_EQ(r, -ECONNRESET);
    }
    VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, conns_refused), 1, 2000));
    struct client *c;
    /* max_requests_per_conn: the second response closes */
    client_send(a, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\nGET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(a, 2, 3000));
    VCHECK(!has_field(&a->r[0], "connection: close"));
    VCHECK(has_field(&a->r[1], "connection: close\n"));
    VCHECK(client_closed(a, 2000));
    client_free(a);
    client_free(b);
    VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, conns_open), 0, 2000));
    c = client_connect(&t.addr);
    client_send(c, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 1, 3000));
    client_free(c);
    tsrv_stop(&t, 1000);
}
VTEST(max_conns)
{
    vtest_run(body_max_conns, 2);
}

/* A plain connection's stream wrapper goes back to the worker's pool when it parks and is
 * pointed at the next socket that wakes (vega_stream_sock_rebind): two connections parked and
 * woken in turn share one wrapper, and each gets its own answers. One worker: one slot. */
static uint64_t total_parked_streams(const vega_http_server *srv)
{
    uint64_t n = 0;
    for (size_t i = 0; i < SRV_POOL_SLOTS; i++)
        n += srv->pools[i].nstreams;
    return n;
}

static void body_stream_wrapper_reused(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    struct client *a = client_connect(&t.addr), *b = client_connect(&t.addr);
    VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, conns_parked), 2, 2000));
    VCHECK_EQ(total_parked_streams(t.srv), 1);
    int answered[2] = {0, 0};
    for (int i = 0; i < 4; i++) {
        struct client *c = i % 2 ? b : a;
        int k = answered[i % 2]++;
        client_send(c, i % 2 ? "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nbb"
                             : "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\naa");
        VCHECK(client_wait(c, k + 1, 3000));
        VCHECK_STR(c->r[k].body, i % 2 ? "bb" : "aa");
        VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, conns_parked), 2, 2000));
        VCHECK_EQ(total_parked_streams(t.srv), 1);
    }
    client_free(a);
    client_free(b);
    VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, conns_open), 0, 2000));
    VCHECK(total_parked_streams(t.srv) <= SRV_POOL_STREAMS);
    tsrv_stop(&t, 1000);
}
VTEST(stream_wrapper_reused)
{
    vtest_run(body_stream_wrapper_reused, 0);
}

/* Paused clock: the active blocks that connections gave back are returned to the allocator by
 * vega_http_server_run within two decay windows of their last use, although the pool was empty
 * when run began to wait (the first block kept wakes it). */
static void body_pool_decays_under_run(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    VCHECK_EQ(vega__srv_pool_held(t.srv), 0);
    struct client *c[3];
    for (int i = 0; i < 3; i++) {
        c[i] = client_connect(&t.addr);
        client_send(c[i], "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    }
    for (int i = 0; i < 3; i++) {
        VCHECK(client_wait(c[i], 1, 3000));
        VCHECK_STR(c[i]->r[0].body, "hello");
    }
    VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, conns_parked), 3, 2000));
    VCHECK(vega__srv_pool_held(t.srv) >= 1);
    /* less than one window: still held */
    VCHECK_EQ(vega_sleep_ns(SRV_POOL_DECAY_NS / 2), 0);
    VCHECK(vega__srv_pool_held(t.srv) >= 1);
    /* past two windows: given back, the connections still parked and served after */
    VCHECK_EQ(vega_sleep_ns(2 * SRV_POOL_DECAY_NS), 0);
    VCHECK_EQ(vega__srv_pool_held(t.srv), 0);
    VCHECK_EQ(tsrv_stats(&t).conns_parked, 3);
    client_send(c[0], "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c[0], 2, 3000));
    VCHECK_STR(c[0]->r[1].body, "hello");
    for (int i = 0; i < 3; i++)
        client_free(c[i]);
    tsrv_stop(&t, 1000);
}
VTEST(pool_decays_under_run)
{
    vtest_run_paused(body_pool_decays_under_run);
}

static void *slow_client(void *arg)
{
    struct tsrv *t = arg;
    struct client *c = client_connect(&t->addr);
    client_send(c, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 1, 5000));
    VCHECK_STR(c->r[0].body, "slow");
    VCHECK(has_field(&c->r[0], "connection: close\n"));
    VCHECK(client_closed(c, 2000));
    client_free(c);
    return NULL;
}

static void body_graceful_shutdown(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    atomic_store(&slow_started, 0);
    tsrv_start(&t, &o);
    /* an idle parked connection, and one in the middle of a slow response */
    struct client *idle = client_connect(&t.addr);
    client_send(idle, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(idle, 1, 3000));
    vega_task *sc;
    VCHECK_EQ(vega_task_spawn(&sc, slow_client, &t), 0);
    while (atomic_load(&slow_started) == 0)
        vega_sleep_ms(5);
    vega_tstamp t0 = vega_now();
    vega_http_server_shutdown(t.srv, DL(5000));
    VCHECK(client_closed(idle, 2000));
    void *res;
    VCHECK_EQ(vega_task_join(t.run, &res, DL(5000)), 0);
    VCHECK_EQ((intptr_t)res, 0);
    /* The shutdown ended when the slow response did, not when the 5 s of grace ran out: on
     * the paused clock that is a time (its handler sleeps 300 ms, begun before t0); on the
     * real clock (the current_thread case) slow_client's whole "slow" body with
     * "connection: close" says it, and a time would only say how busy the machine was. */
    if (vtest_paused())
        VCHECK(vega_now() - t0 <= 300 * VEGA_NS_PER_MS);
    else
        (void)t0;
    VCHECK_EQ(vega_task_join(sc, NULL, DL(5000)), 0);
    VCHECK_EQ(tsrv_stats(&t).conns_open, 0);
    /* the listener is gone */
    vega_sock *s;
    VCHECK(vega_tcp_connect(&s, &t.addr, DL(1000)) < 0);
    client_free(idle);
    vega_http_server_free(t.srv);
}
VTEST(graceful_shutdown)
{
    vtest_run_paused(body_graceful_shutdown);
}

static void body_shutdown_grace_cancels(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    /* a connection stuck in a body read is cancelled when grace ends */
    struct client *c = client_connect(&t.addr);
    client_send(c, "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nabc");
    /* Paused clock: the nap ends once every task waits, so the handler is in its body read. */
    VCHECK_EQ(vega_sleep_ms(50), 0);
    vega_tstamp t0 = vega_now();
    tsrv_stop(&t, 200);
    VCHECK_WAITED(t0, 200); /* the grace, not the handler's 5 s read deadline */
    VCHECK(client_closed(c, 2000));
    client_free(c);
}
VTEST(shutdown_grace_cancels)
{
    vtest_run_paused(body_shutdown_grace_cancels);
}

static void body_tls(void)
{
    vega_tls_config *scfg, *ccfg;
    VCHECK_EQ(vega_tls_config_new(&scfg, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_use_selfsigned(scfg), 0);
    VCHECK_EQ(vega_tls_config_new(&ccfg, VEGA_TLS_CLIENT), 0);
    VCHECK_EQ(vega_tls_config_set_verify(ccfg, VEGA_TLS_VERIFY_NONE), 0);
    static const char *const alpn[] = {"http/1.1"};
    VCHECK_EQ(vega_tls_config_set_alpn(ccfg, alpn, 1), 0);
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    o.tls = scfg;
    tsrv_start(&t, &o);
    vega_tls_config_free(scfg);
    make_file(50000);
    vega_sock *s;
    VCHECK_EQ(vega_tcp_connect(&s, &t.addr, DL(5000)), 0);
    vega_stream *ts;
    VCHECK_EQ(vega_tls_stream_from_sock(&ts, s, 0, ccfg, NULL), 0);
    VCHECK_EQ(vega_tls_handshake(ts, DL(5000)), 0);
    VCHECK_STR(vega_tls_get_alpn(ts), "http/1.1");
    struct client *c = client_new(ts);
    client_send(c, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 1, 5000));
    VCHECK_STR(c->r[0].body, "hello");
    VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, conns_parked), 1, 2000));
    client_send(c, "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nxyz"
                   "GET /file HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 3, 5000));
    VCHECK_STR(c->r[1].body, "xyz");
    check_file_body(&c->r[2]);
    client_free(c);
    vega_tls_config_free(ccfg);
    tsrv_stop(&t, 1000);
    /* After the stop: the server's tasks are joined, so no read of the file can be in flight
     * (the client having the bytes is no ordering TSan can see). */
    close(file_fd);
}
VTEST(tls)
{
    vtest_run(body_tls, 2);
}

#define NCONN 200
static atomic_int many_ok;

static void *many_client(void *arg)
{
    struct tsrv *t = arg;
    struct client *c = client_connect(&t->addr);
    for (int i = 0; i < 3; i++) {
        client_send(c, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
        VCHECK(client_wait(c, i + 1, 10000));
        VCHECK_STR(c->r[i].body, "hello");
    }
    client_free(c);
    atomic_fetch_add(&many_ok, 1);
    return NULL;
}

static void body_many_connections(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    atomic_store(&many_ok, 0);
    vega_group *g;
    VCHECK_EQ(vega_group_new(&g), 0);
    for (int i = 0; i < NCONN; i++)
        VCHECK_EQ(vega_group_spawn(g, many_client, &t), 0);
    VCHECK_EQ(vega_group_wait(g, DL(20000)), 0);
    vega_group_free(g);
    VCHECK_EQ(atomic_load(&many_ok), NCONN);
    VCHECK_EQ(tsrv_stats(&t).requests, 3 * NCONN);
    tsrv_stop(&t, 1000);
}
VTEST(many_connections)
{
    vtest_run(body_many_connections, 2);
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

static void body_serve_stream(void)
{
    vega_http_server_opts o = default_opts();
    vega_http_server *srv;
    VCHECK_EQ(vega_http_server_new(&srv, &o), 0);
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    /* the server side through a faulty stream: short reads and writes everywhere */
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
    struct client *c = client_new(a);
    client_send(c, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n"
                   "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "a\r\n0123456789\r\n3;x=y\r\nabc\r\n0\r\n\r\n"
                   "GET /chunked HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(client_wait(c, 3, 5000));
    VCHECK_STR(c->r[0].body, "hello");
    VCHECK_STR(c->r[1].body, "0123456789abc");
    VCHECK_STR(c->r[2].body, "one,two,three");
    VCHECK_EQ(vega_stream_shutdown(a, SHUT_WR, DL(1000)), 0);
    VCHECK_EQ(vega_task_join(st, NULL, DL(5000)), 0);
    VCHECK_EQ(sa.rc, 0);
    client_free(c);
    vega_http_server_stats s;
    vega_http_server_get_stats(srv, &s);
    VCHECK_EQ(s.requests, 3);
    VCHECK_EQ(s.conns_open, 0);
    vega_http_server_free(srv);
}
VTEST(serve_stream)
{
    vtest_run(body_serve_stream, 2);
}

/* ---- curl, the real client ------------------------------------------------------------------- */

static char curl_cmd[1024];

static void *run_cmd(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)system(curl_cmd);
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(curl_cmd, sizeof curl_cmd, fmt, ap);
    va_end(ap);
    void *res;
    VCHECK_EQ(vega_blocking(run_cmd, NULL, &res, DL(20000)), 0);
    return (int)(intptr_t)res;
}

static void body_curl(void)
{
    if (system("command -v curl >/dev/null 2>&1") != 0)
        vtest_skip("no curl");
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    unsigned port = vega_addr_port(&t.addr);
    char dir[] = "/tmp/vega-srv-curl-XXXXXX";
    VCHECK(mkdtemp(dir));
    /* two requests on one connection (curl reuses it), a chunked upload, a 100-continue
     * upload, HEAD, and a large body */
    VCHECK_EQ(sh("curl -sS --max-time 10 -o %s/a http://127.0.0.1:%u/hello -o %s/b "
                 "http://127.0.0.1:%u/info",
                 dir, port, dir, port),
              0);
    VCHECK_EQ(sh("printf hello > %s/want && cmp -s %s/a %s/want", dir, dir, dir), 0);
    VCHECK_EQ(tsrv_stats(&t).conns_accepted, 1);
    VCHECK_EQ(sh("head -c 300000 /dev/urandom > %s/up && curl -sS --max-time 10 "
                 "-H 'Transfer-Encoding: chunked' --data-binary @%s/up -o %s/c "
                 "http://127.0.0.1:%u/echo && cmp -s %s/up %s/c",
                 dir, dir, dir, port, dir, dir),
              0);
    VCHECK_EQ(sh("curl -sS --max-time 10 -H 'Expect: 100-continue' --data-binary @%s/up "
                 "-o %s/d http://127.0.0.1:%u/echo && cmp -s %s/up %s/d",
                 dir, dir, port, dir, dir),
              0);
    VCHECK_EQ(sh("curl -sS --max-time 10 -I http://127.0.0.1:%u/hello | grep -qi "
                 "'^content-length: 5'",
                 port),
              0);
    VCHECK_EQ(sh("curl -sS --max-time 10 -o %s/e http://127.0.0.1:%u/big && test $(wc -c < %s/e) "
                 "-eq 200000",
                 dir, port, dir),
              0);
    VCHECK_EQ(sh("curl -sS --max-time 10 --http1.0 -o %s/f http://127.0.0.1:%u/chunked && "
                 "printf one,two,three > %s/want && cmp -s %s/f %s/want",
                 dir, port, dir, dir, dir),
              0);
    sh("rm -rf %s", dir);
    tsrv_stop(&t, 1000);
}
VTEST(curl)
{
    vtest_run(body_curl, 2);
}

static void body_body_and_write_timeouts(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    o.body_timeout_ns = 200 * VEGA_NS_PER_MS;
    o.write_timeout_ns = 300 * VEGA_NS_PER_MS;
    tsrv_start(&t, &o);
    /* a body that stalls: 408 and close */
    struct client *c = client_connect(&t.addr);
    client_send(c, "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc");
    VCHECK(client_wait(c, 1, 3000));
    VCHECK_EQ(c->r[0].status, 408);
    VCHECK(client_closed(c, 2000));
    client_free(c);
    VCHECK_EQ(tsrv_stats(&t).timeouts, 1);
    /* a client that never reads: the server's writes time out and it closes */
    vega_sock *s;
    VCHECK_EQ(vega_tcp_connect(&s, &t.addr, DL(5000)), 0);
    VCHECK_EQ(vega_sock_set_buffers(s, 4096, 0), 0);
    char req[64 * 40];
    req[0] = 0;
    for (int i = 0; i < 40; i++)
        strcat(req, "GET /big HTTP/1.1\r\nHost: a\r\n\r\n");
    VCHECK(vega_sock_write(s, req, strlen(req), NULL, DL(2000)) > 0);
    VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, timeouts), 2, 5000));
    VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, conns_open), 0, 2000));
    vega_sock_close(s);
    tsrv_stop(&t, 1000);
}
VTEST(body_and_write_timeouts)
{
    vtest_run(body_body_and_write_timeouts, 2);
}

/* Garbage and truncated requests on many connections never hurt the server or its other
 * clients. */
static void *garbage_client(void *arg)
{
    struct tsrv *t = arg;
    uint64_t seed = (uint64_t)(uintptr_t)vega_task_current() * 0x9E3779B97F4A7C15ull;
    vega_sock *s;
    if (vega_tcp_connect(&s, &t->addr, DL(5000)) < 0)
        return NULL;
    static const char *const prefixes[] = {
        "", "GET / HTTP/1.1\r\n",
        "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n",
        "GET /hello HTTP/1.1\r\nHost: a\r\n"};
    char buf[3000];
    seed ^= seed >> 29;
    const char *p = prefixes[seed % 5];
    size_t n = strlen(p);
    memcpy(buf, p, n);
    size_t extra = (size_t)(seed >> 8) % 2000;
    for (size_t i = 0; i < extra; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint8_t ch = (uint8_t)(seed >> 56);
        buf[n++] = (char)((seed >> 40) % 4 == 0 ? "\r\n:; 0a"[ch % 7] : ch);
    }
    vega_sock_write(s, buf, n, NULL, DL(2000));
    char rb[4096];
    while (vega_sock_read(s, rb, sizeof rb, DL(300)) > 0)
        ;
    vega_sock_close(s);
    return NULL;
}

static void body_garbage(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    /* Not short: the well-behaved client's first head must not be timed out because a busy
     * machine ran it late. The garbage clients end by themselves (they close after 300 ms of
     * silence), and the server sees each close. */
    o.header_timeout_ns = 10000 * VEGA_NS_PER_MS;
    o.body_timeout_ns = 10000 * VEGA_NS_PER_MS;
    tsrv_start(&t, &o);
    vega_group *g;
    VCHECK_EQ(vega_group_new(&g), 0);
    for (int i = 0; i < 100; i++)
        VCHECK_EQ(vega_group_spawn(g, garbage_client, &t), 0);
    /* a well-behaved client in the middle of it */
    struct client *c = client_connect(&t.addr);
    for (int i = 0; i < 5; i++) {
        client_send(c, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
        VCHECK(client_wait(c, i + 1, 5000));
    }
    VCHECK_EQ(vega_group_wait(g, DL(20000)), 0);
    vega_group_free(g);
    client_free(c);
    VCHECK(wait_stat(&t, offsetof(vega_http_server_stats, conns_open), 0, 20000));
    tsrv_stop(&t, 1000);
}
VTEST(garbage)
{
    vtest_run(body_garbage, 2);
}

/* Heads larger than the first read buffer (it grows), and one that leaves too little room
 * behind it for its body (it moves). */
static void body_large_heads(void)
{
    struct tsrv t;
    vega_http_server_opts o = default_opts();
    tsrv_start(&t, &o);
    static char req[80000];
    size_t sizes[] = {14000, 30000, 60000};
    for (size_t k = 0; k < 3; k++) {
        struct client *c = client_connect(&t.addr);
        strcpy(req, "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n");
        size_t n = strlen(req);
        while (n < sizes[k]) {
            n += (size_t)sprintf(req + n, "X-Pad-%zu: ", n);
            memset(req + n, 'p', 7000);
            n += 7000;
            memcpy(req + n, "\r\n", 2);
            n += 2;
        }
        memcpy(req + n, "\r\n", 2);
        n += 2;
        memset(req + n, 'b', 5000);
        n += 5000;
        n += (size_t)sprintf(req + n, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
        VCHECK_EQ(vega_stream_write(c->s, req, n, NULL, DL(5000)), (vega_ssize)n);
        if (!client_wait(c, 2, 5000))
            vtest_fail(__FILE__, __LINE__, "size %zu: %d responses, first %d", sizes[k], c->done,
                       c->r[0].status);
        VCHECK_EQ(c->r[0].status, 200);
        VCHECK_EQ(c->r[0].body_len, 5000);
        VCHECK_STR(c->r[1].body, "hello");
        client_free(c);
    }
    /* past the field section limit: 431 */
    vega_http_server_stats st = tsrv_stats(&t);
    VCHECK_EQ(st.bad_requests, 0);
    struct client *c = client_connect(&t.addr);
    strcpy(req, "GET / HTTP/1.1\r\nHost: a\r\n");
    size_t n = strlen(req);
    while (n < 75000) {
        n += (size_t)sprintf(req + n, "X-Pad-%zu: ", n);
        memset(req + n, 'p', 7000);
        n += 7000;
        memcpy(req + n, "\r\n", 2);
        n += 2;
    }
    vega_stream_write(c->s, req, n, NULL, DL(5000));
    VCHECK(client_wait(c, 1, 5000));
    VCHECK_EQ(c->r[0].status, 431);
    client_free(c);
    tsrv_stop(&t, 1000);
}
VTEST(large_heads)
{
    vtest_run(body_large_heads, 2);
}

/* The same on the current-thread flavour: one thread runs the server and its clients. */
VTEST(current_thread)
{
    vtest_run(body_pipelining, 0);
    vtest_run(body_graceful_shutdown, 0);
    vtest_run(body_idle_timeout_and_parked, 0);
    vtest_run(body_tls, 0);
}
