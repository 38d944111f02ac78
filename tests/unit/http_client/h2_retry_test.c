/* SPDX-License-Identifier: MIT */
/* The client's retries over HTTP/2 against a scripted server built on the sans-I/O core: a
 * stream refused (RST_STREAM REFUSED_STREAM, RFC 9113 §8.7) and a GOAWAY whose last stream id
 * excludes the request (§6.8) both mean "not processed": the request goes again on a new
 * connection, a POST too when its body can be given again; one whose body_fn already gave
 * bytes is not sent twice. A stream reset with another code fails with its code. A response
 * header section over the client's limit (SETTINGS_MAX_HEADER_LIST_SIZE, §6.5.2) cancels that
 * stream only. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/h2.h>
#include <vega/http_client.h>
#include <vega/io.h>
#include <vega/rt.h>
#include <vega/stream.h>

#include "vtest.h"

#define DL(ms) vega_deadline_in_ms(ms)

/* What the server's n-th connection does with every request on it. */
enum mode {
    ANSWER = 0,  /* 200 "ok" once the request ended */
    REFUSE = 1,  /* RST_STREAM REFUSED_STREAM */
    GOAWAY = 2,  /* GOAWAY last-stream-id 0 at once: nothing will be processed */
    RESET = 3,   /* RST_STREAM INTERNAL_ERROR */
    BIGHEAD = 4, /* a header list over 1 KiB on the first stream, then as ANSWER */
};

struct srv {
    vega_sock *l;
    uint16_t port;
    enum mode modes[4]; /* per connection, in order; past them: ANSWER */
    atomic_int conns, requests;
    vega_task *task;
    vega_group *g;
};

struct sconn {
    struct srv *s;
    vega_stream *st;
    vega_h2_conn *h2;
    enum mode mode;
};

static int answer(struct sconn *c, int32_t id)
{
    /* BIGHEAD: eight fields of 200 bytes, each string well under the limit, the list over it */
    static char big[200];
    memset(big, 'v', sizeof big);
    vega_hpack_field f[9] = {{{":status", 7}, {"200", 3}, VEGA_HPACK_INDEX_AUTO}};
    static const char *const names[] = {"x-a", "x-b", "x-c", "x-d", "x-e", "x-f", "x-g", "x-h"};
    for (int i = 0; i < 8; i++)
        f[1 + i] = (vega_hpack_field){{names[i], 3}, {big, sizeof big}, VEGA_HPACK_INDEX_AUTO};
    int rc = vega_h2_submit_response(c->h2, id, f, c->mode == BIGHEAD && id == 1 ? 9 : 1, 0);
    if (rc == 0)
        rc = vega_h2_stream_write(c->h2, id, (const uint8_t *)"ok", 2, VEGA_H2_FLAG_END_STREAM) == 2
                 ? 0
                 : -1;
    return rc;
}

static int s_on_headers(void *ud, int32_t id, const vega_h2_head *h)
{
    struct sconn *c = ud;
    atomic_fetch_add(&c->s->requests, 1);
    switch (c->mode) {
    case REFUSE:
        return vega_h2_submit_rst_stream(c->h2, id, VEGA_H2_REFUSED_STREAM) < 0;
    case RESET:
        return vega_h2_submit_rst_stream(c->h2, id, VEGA_H2_INTERNAL_ERROR) < 0;
    case GOAWAY:
        return 0; /* above the GOAWAY's last stream id: the core ignores it */
    case ANSWER:
    case BIGHEAD:
        return h->end_stream ? answer(c, id) != 0 : 0;
    }
    return 0;
}

static int s_on_data(void *ud, int32_t id, const uint8_t *d, size_t len, unsigned flags)
{
    struct sconn *c = ud;
    (void)d;
    (void)vega_h2_stream_consume(c->h2, id, len);
    if ((flags & VEGA_H2_FLAG_END_STREAM) && (c->mode == ANSWER || c->mode == BIGHEAD))
        return answer(c, id) != 0;
    return 0;
}

static const vega_h2_callbacks s_cb = {.on_headers = s_on_headers, .on_data = s_on_data};

static void *conn_task(void *arg)
{
    struct sconn *c = arg;
    uint8_t buf[16384];
    VCHECK_EQ(vega_h2_conn_server_new(&c->h2, &s_cb, NULL, c), 0);
    if (c->mode == GOAWAY)
        VCHECK_EQ(vega_h2_submit_goaway(c->h2, VEGA_H2_NO_ERROR, NULL, 0), 0);
    for (;;) {
        vega_ssize n;
        while ((n = vega_h2_conn_write(c->h2, buf, sizeof buf, vega_now())) > 0)
            if (vega_stream_write(c->st, buf, (size_t)n, NULL, DL(5000)) < 0)
                goto out;
        if (!vega_h2_conn_want_read(c->h2))
            break;
        n = vega_stream_read(c->st, buf, sizeof buf, DL(10000));
        if (n <= 0 || vega_h2_conn_read(c->h2, buf, (size_t)n, vega_now()) < 0)
            break;
    }
    while (vega_h2_conn_write(c->h2, buf, sizeof buf, vega_now()) > 0)
        ;
out:
    vega_h2_conn_free(c->h2);
    vega_stream_close(c->st, 0);
    free(c);
    return NULL;
}

static void *accept_task(void *arg)
{
    struct srv *s = arg;
    for (;;) {
        vega_sock *cs;
        if (vega_tcp_accept(s->l, &cs, NULL, VEGA_DEADLINE_NEVER) < 0)
            break;
        int k = atomic_fetch_add(&s->conns, 1);
        struct sconn *c = calloc(1, sizeof *c);
        c->s = s;
        c->mode = k < 4 ? s->modes[k] : ANSWER;
        VCHECK_EQ(vega_stream_from_sock(&c->st, cs, 0), 0);
        VCHECK_EQ(vega_group_spawn(s->g, conn_task, c), 0);
    }
    return NULL;
}

static void srv_start(struct srv *s, enum mode m0, enum mode m1)
{
    memset(s, 0, sizeof *s);
    s->modes[0] = m0;
    s->modes[1] = m1;
    vega_addr a, bound;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_tcp_listen(&s->l, &a, 16, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(s->l, &bound), 0);
    s->port = vega_addr_port(&bound);
    VCHECK_EQ(vega_group_new(&s->g), 0);
    VCHECK_EQ(vega_task_spawn(&s->task, accept_task, s), 0);
}

static void srv_stop(struct srv *s)
{
    vega_task_cancel(s->task);
    (void)vega_task_join(s->task, NULL, DL(5000));
    vega_sock_close(s->l);
    VCHECK_EQ(vega_group_wait(s->g, DL(10000)), 0);
    vega_group_free(s->g);
}

static vega_ssize body_fn(void *user, void *buf, size_t len)
{
    int *left = user;
    if (*left == 0)
        return 0;
    (*left)--;
    memset(buf, 'x', len < 10 ? len : 10);
    return (vega_ssize)(len < 10 ? len : 10);
}

/* One request; returns send's code (the body read when 0). */
static int one(struct srv *s, const char *method, bool mem_body, bool fn_body, bool *reused,
               vega_http_client_wire_error *we)
{
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, NULL), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/x", s->port);
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.method = method;
    rq.version = VEGA_HTTP_CLIENT_V2_PRIOR;
    rq.deadline = DL(10000);
    rq.wire_error = we;
    int left = 3;
    if (mem_body) {
        rq.body = "payload";
        rq.body_len = 7;
    } else if (fn_body) {
        rq.body_fn = body_fn;
        rq.body_user = &left;
        rq.body_length = VEGA_HTTP_LENGTH_UNKNOWN;
    }
    vega_http_client_response *r;
    int rc = vega_http_client_send(c, &rq, &r);
    if (rc == 0) {
        void *b;
        VCHECK_EQ(vega_http_client_response_read_all(r, &b, 100, DL(5000)), 2);
        VCHECK(!memcmp(b, "ok", 2));
        *reused = vega_http_client_response_info(r)->reused;
        VCHECK_EQ(vega_http_client_response_info(r)->version, 20);
        vega_http_client_body_free(c, b);
        vega_http_client_response_free(r);
    }
    vega_http_client_free(c);
    return rc;
}

VTEST_CT(refused_stream_goes_again)
{
    struct srv s;
    bool reused = true;
    vega_http_client_wire_error we;
    srv_start(&s, REFUSE, ANSWER);
    VCHECK_EQ(one(&s, NULL, false, false, &reused, &we), 0);
    VCHECK(!reused);
    VCHECK_EQ(atomic_load(&s.conns), 2);
    VCHECK_EQ(atomic_load(&s.requests), 2);
    srv_stop(&s);
    /* a POST with a body in memory: not processed, so sent again */
    srv_start(&s, REFUSE, ANSWER);
    VCHECK_EQ(one(&s, "POST", true, false, &reused, &we), 0);
    VCHECK_EQ(atomic_load(&s.conns), 2);
    srv_stop(&s);
}

VTEST_CT(goaway_goes_again)
{
    struct srv s;
    bool reused = true;
    vega_http_client_wire_error we;
    srv_start(&s, GOAWAY, ANSWER);
    VCHECK_EQ(one(&s, NULL, false, false, &reused, &we), 0);
    VCHECK_EQ(atomic_load(&s.conns), 2);
    srv_stop(&s);
    /* twice in a row: one more try only, then VEGA_ERR_H2_GOING_AWAY */
    srv_start(&s, GOAWAY, GOAWAY);
    VCHECK_EQ(one(&s, NULL, false, false, &reused, &we), VEGA_ERR_H2_GOING_AWAY);
    VCHECK_EQ(atomic_load(&s.conns), 2);
    srv_stop(&s);
}

VTEST_CT(body_fn_used_is_not_sent_twice)
{
    struct srv s;
    bool reused;
    vega_http_client_wire_error we;
    srv_start(&s, REFUSE, ANSWER);
    int rc = one(&s, "POST", false, true, &reused, &we);
    /* the refusal may come before body_fn was asked (then it goes again) or after */
    VCHECK(rc == 0 || rc == VEGA_ERR_H2_GOING_AWAY);
    VCHECK_EQ(atomic_load(&s.conns), rc == 0 ? 2 : 1);
    srv_stop(&s);
}

VTEST_CT(reset_fails_with_its_code)
{
    struct srv s;
    bool reused;
    vega_http_client_wire_error we;
    srv_start(&s, RESET, ANSWER);
    VCHECK_EQ(one(&s, NULL, false, false, &reused, &we), -ECONNRESET);
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_H2_STREAM);
    VCHECK_EQ(we.code, VEGA_H2_INTERNAL_ERROR);
    VCHECK(!we.local);
    VCHECK_EQ(atomic_load(&s.conns), 1);
    srv_stop(&s);
}

VTEST_CT(header_list_limit)
{
    struct srv s;
    srv_start(&s, BIGHEAD, ANSWER);
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.limits.max_field_section = 1024; /* the server learns it from our SETTINGS */
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/x", s.port);
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.version = VEGA_HTTP_CLIENT_V2_PRIOR;
    rq.deadline = DL(10000);
    vega_http_client_wire_error we;
    rq.wire_error = &we;
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_ERR_PROTO);
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_H2_STREAM);
    VCHECK(we.local);
    VCHECK_EQ(we.code, VEGA_H2_CANCEL);
    /* the connection serves on: stream 3 gets its answer */
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    VCHECK(vega_http_client_response_info(r)->reused);
    VCHECK_EQ(vega_http_client_response_info(r)->stream_id, 3);
    void *b;
    VCHECK_EQ(vega_http_client_response_read_all(r, &b, 100, DL(5000)), 2);
    vega_http_client_body_free(c, b);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    VCHECK_EQ(atomic_load(&s.conns), 1);
    srv_stop(&s);
}
