/* SPDX-License-Identifier: MIT */
/* The HTTP server over HTTP/3 (RFC 9114), end to end on loopback UDP: the same handler as for
 * HTTP/1.1 answers requests that a small HTTP/3 client of this test makes with the QUIC
 * endpoint and the HTTP/3 core: heads, bodies both ways, trailers, files, many requests at
 * once on one connection, a handler that fails, resets, GOAWAY on shutdown, the access log; the
 * stop's wait for the client to acknowledge the last GOAWAY, through a relay that holds back
 * the client's datagrams. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vega/h3.h>
#include <vega/http_server.h>
#include <vega/quic_ep.h>
#include <vega/sync.h>

#include "../quic/qtls_certs.h"
#include "vtest.h"

/* ---- the server -------------------------------------------------------------------------- */

static int file_fd = -1;
/* /slow: says it started, then waits to be let go (the shutdown case orders on these) */
static vega_notify slow_entered, slow_release;
#define FILE_LEN 300000

static uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 7 + i / 251);
}

static int handler(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *r = vega_http_exchange_request(x);
    VCHECK_EQ(r->version, 30);
    VCHECK(r->tls);
    if (vega_http_str_eq(r->path, "/hello")) {
        static const vega_http_field f[] = {{{"Content-Type", 12}, {"text/plain", 10}}};
        return vega_http_respond(x, 200, f, 1, "hello h3", 8, vega_deadline_in_ms(5000));
    }
    if (vega_http_str_eq(r->path, "/big")) {
        size_t n = 1 << 20;
        int rc = vega_http_response_start(x, 200, NULL, 0, n);
        uint8_t buf[4096];
        for (size_t off = 0; rc == 0 && off < n; off += sizeof buf) {
            for (size_t i = 0; i < sizeof buf; i++)
                buf[i] = pattern(off + i);
            if (vega_http_response_write(x, buf, sizeof buf, vega_deadline_in_ms(10000)) < 0)
                rc = -1;
        }
        return rc == 0 ? vega_http_response_finish(x, NULL, 0, vega_deadline_in_ms(5000)) : rc;
    }
    if (vega_http_str_eq(r->path, "/echo")) {
        uint8_t *body = malloc(1 << 20);
        size_t got = 0;
        for (;;) {
            vega_ssize k =
                vega_http_request_read(x, body + got, (1 << 20) - got, vega_deadline_in_ms(10000));
            VCHECK(k >= 0);
            if (k == 0)
                break;
            got += (size_t)k;
        }
        int rc = vega_http_response_start(x, 200, NULL, 0, VEGA_HTTP_LENGTH_UNKNOWN);
        if (rc == 0 && got)
            rc = (int)vega_http_response_write(x, body, got, vega_deadline_in_ms(10000));
        char sum[32];
        int sl = snprintf(sum, sizeof sum, "%zu", got);
        vega_http_field t[] = {{{"X-Length", 8}, {sum, (size_t)sl}}};
        free(body);
        return rc < 0 ? rc : vega_http_response_finish(x, t, 1, vega_deadline_in_ms(5000));
    }
    if (vega_http_str_eq(r->path, "/file")) {
        int rc = vega_http_response_start(x, 200, NULL, 0, FILE_LEN);
        if (rc == 0 &&
            vega_http_response_sendfile(x, file_fd, 0, FILE_LEN, vega_deadline_in_ms(10000)) < 0)
            rc = -1;
        return rc == 0 ? vega_http_response_finish(x, NULL, 0, vega_deadline_in_ms(5000)) : rc;
    }
    if (vega_http_str_eq(r->path, "/slow")) {
        vega_notify_one(&slow_entered);
        VCHECK_EQ(vega_notify_wait(&slow_release, vega_deadline_in_ms(20000)), 0);
        return vega_http_respond(x, 200, NULL, 0, "late", 4, vega_deadline_in_ms(5000));
    }
    if (vega_http_str_eq(r->path, "/fail"))
        return -EIO; /* nothing sent: the server answers 500 */
    return vega_http_respond(x, 404, NULL, 0, NULL, 0, vega_deadline_in_ms(5000));
}

static _Atomic int logged_h3;

static void on_log(void *user, const vega_http_request *req, const vega_http_log_entry *e)
{
    (void)user;
    (void)e;
    if (req->version == 30)
        logged_h3++;
}

struct srv {
    vega_http_server *s;
    vega_task *run;
    vega_addr addr;
    vega_crypto_cert_chain *chain;
    vega_crypto_key *key;
    vega_crypto_cert_store *ca;
    _Atomic bool ended; /* vega_http_server_run returned */
};

static void *run_task(void *arg)
{
    struct srv *v = arg;
    VCHECK_EQ(vega_http_server_run(v->s), 0);
    atomic_store(&v->ended, true);
    return NULL;
}

static void srv_start(struct srv *v)
{
    memset(v, 0, sizeof *v);
    VCHECK_EQ(vega_crypto_cert_chain_new(&v->chain), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(v->chain, QT_SRV_P256_PEM, strlen(QT_SRV_P256_PEM)), 0);
    VCHECK_EQ(vega_crypto_key_load_private(&v->key, QT_SRV_P256_KEY, strlen(QT_SRV_P256_KEY)), 0);
    VCHECK_EQ(vega_crypto_cert_store_new(&v->ca, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(v->ca, QT_CA_PEM, strlen(QT_CA_PEM)), 0);
    if (file_fd < 0) {
        char path[] = "/tmp/vega-h3-file-XXXXXX";
        file_fd = mkstemp(path);
        VCHECK(file_fd >= 0);
        unlink(path);
        uint8_t *buf = malloc(FILE_LEN); /* not on a task's stack */
        VCHECK(buf != NULL);
        for (size_t i = 0; i < FILE_LEN; i++)
            buf[i] = pattern(i);
        VCHECK_EQ(write(file_fd, buf, FILE_LEN), FILE_LEN);
        free(buf);
    }
    vega_http_server_opts so;
    vega_http_server_opts_init(&so);
    so.handler = handler;
    so.on_log = on_log;
    so.server_header = "vega-test";
    VCHECK_EQ(vega_http_server_new(&v->s, &so), 0);
    vega_http_server_h3_opts ho;
    vega_http_server_h3_opts_init(&ho);
    ho.chain = v->chain;
    ho.key = v->key;
    vega_addr a;
    VCHECK_EQ(vega_addr_from_ip(&a, "127.0.0.1", 0), 0);
    VCHECK_EQ(vega_http_server_listen_h3(v->s, &a, 0, &ho, &v->addr), 0);
    VCHECK_EQ(vega_task_spawn(&v->run, run_task, v), 0);
}

static void srv_stop(struct srv *v)
{
    vega_http_server_shutdown(v->s, vega_deadline_in_ms(2000));
    VCHECK_EQ(vega_task_join(v->run, NULL, vega_deadline_in_ms(20000)), 0);
    vega_http_server_free(v->s);
    vega_crypto_cert_chain_free(v->chain);
    vega_crypto_key_free(v->key);
    vega_crypto_cert_store_free(v->ca);
}

/* ---- a small HTTP/3 client on the endpoint and the core ---------------------------------- */

struct resp {
    uint64_t sid;
    int status;
    char ctype[64], server[64], trailer[64];
    uint8_t *body;
    size_t len, cap;
    bool done, reset;
};

struct cli {
    vega_quic_endpoint *ep;
    vega_quic_ep_conn *c;
    vega_h3_conn *h3;
    struct resp resp[64];
    size_t nresp;
    vega_notify wake;
    bool goaway, closed;
    unsigned ngoaway;  /* GOAWAY frames received */
    uint64_t ctrl_sid; /* our control stream */
};

static struct resp *resp_of(struct cli *t, uint64_t sid)
{
    for (size_t i = 0; i < t->nresp; i++)
        if (t->resp[i].sid == sid)
            return &t->resp[i];
    return NULL;
}

static void copy_field(const vega_h3_head *h, const char *name, char *out, size_t cap)
{
    for (size_t i = 0; i < h->nfields; i++)
        if (vega_http_str_eq(h->fields[i].name, name) && h->fields[i].value.len < cap) {
            memcpy(out, h->fields[i].value.ptr, h->fields[i].value.len);
            out[h->fields[i].value.len] = 0;
        }
}

static int c_headers(void *ud, uint64_t sid, const vega_h3_head *h)
{
    struct resp *r = resp_of(ud, sid);
    VCHECK(r != NULL);
    if (h->kind == VEGA_H3_HEAD_INITIAL) {
        r->status = h->status;
        copy_field(h, "content-type", r->ctype, sizeof r->ctype);
        copy_field(h, "server", r->server, sizeof r->server);
    } else if (h->kind == VEGA_H3_HEAD_TRAILERS) {
        copy_field(h, "x-length", r->trailer, sizeof r->trailer);
    }
    return 0;
}

static int c_data(void *ud, uint64_t sid, const uint8_t *d, size_t len)
{
    struct resp *r = resp_of(ud, sid);
    VCHECK(r != NULL);
    if (r->len + len > r->cap) {
        r->cap = (r->len + len) * 2;
        r->body = realloc(r->body, r->cap);
        VCHECK(r->body != NULL);
    }
    memcpy(r->body + r->len, d, len);
    r->len += len;
    return 0;
}

static int c_end(void *ud, uint64_t sid)
{
    struct resp *r = resp_of(ud, sid);
    VCHECK(r != NULL);
    r->done = true;
    return 0;
}

static int c_goaway(void *ud, uint64_t id)
{
    (void)id;
    ((struct cli *)ud)->goaway = true;
    ((struct cli *)ud)->ngoaway++;
    return 0;
}

static const vega_h3_callbacks c_cb = {
    .on_headers = c_headers, .on_data = c_data, .on_end_stream = c_end, .on_goaway = c_goaway};

static void c_flush(struct cli *t, vega_quic_conn *qc)
{
    for (;;) {
        uint8_t buf[4096];
        uint64_t sid;
        vega_ssize n = vega_h3_conn_write_uni(t->h3, &sid, buf, sizeof buf);
        if (n <= 0)
            break;
        VCHECK_EQ(vega_quic_stream_write(qc, sid, buf, (size_t)n, false), n);
    }
}

static void c_event(void *user, vega_quic_ep_conn *c, vega_quic_conn *qc, const vega_quic_event *ev)
{
    (void)c;
    struct cli *t = user;
    if (!t || !t->h3)
        return;
    if (ev->type == VEGA_QUIC_EV_STREAM_READABLE || ev->type == VEGA_QUIC_EV_STREAM_OPENED) {
        for (;;) {
            const uint8_t *d;
            size_t len;
            bool fin;
            if (vega_quic_stream_peek(qc, ev->stream_id, &d, &len, &fin) < 0 || (len == 0 && !fin))
                break;
            vega_ssize n = vega_h3_conn_read_stream(t->h3, ev->stream_id, d, len, fin);
            VCHECK(n >= 0);
            VCHECK_EQ(vega_quic_stream_consume(qc, ev->stream_id, (size_t)n), 0);
            if ((size_t)n < len || fin)
                break;
        }
    } else if (ev->type == VEGA_QUIC_EV_STREAM_RESET) {
        struct resp *r = resp_of(t, ev->stream_id);
        if (r)
            r->reset = true;
    } else if (ev->type == VEGA_QUIC_EV_CLOSED) {
        t->closed = true;
    }
    c_flush(t, qc);
    vega_notify_all(&t->wake);
}

static void cli_open(struct cli *t, struct srv *v)
{
    memset(t, 0, sizeof *t);
    vega_notify_init(&t->wake);
    vega_quic_endpoint_opts o;
    vega_quic_endpoint_opts_init(&o);
    o.quic.tls.ca = v->ca;
    o.quic.tls.alpn[0] = "h3";
    o.quic.tls.n_alpn = 1;
    o.cb.on_event = c_event;
    VCHECK_EQ(vega_quic_endpoint_new(&t->ep, &o), 0);
    VCHECK_EQ(vega_h3_conn_client_new(&t->h3, &c_cb, NULL, t), 0);
    vega_quic_connect_opts co = {.server_name = "localhost", .user = t};
    VCHECK_EQ(vega_quic_endpoint_connect(t->ep, &v->addr, &co, &t->c, vega_deadline_in_ms(10000)),
              0);
    vega_quic_conn *qc = vega_quic_ep_conn_lock(t->c);
    VCHECK(qc != NULL);
    uint64_t ids[3];
    for (int i = 0; i < 3; i++)
        VCHECK_EQ(vega_quic_stream_open(qc, false, &ids[i]), 0);
    VCHECK_EQ(vega_h3_conn_bind_streams(t->h3, ids[0], ids[1], ids[2]), 0);
    t->ctrl_sid = ids[0];
    c_flush(t, qc);
    vega_quic_ep_conn_unlock(t->c);
}

static void cli_close(struct cli *t)
{
    vega_quic_ep_conn_close(t->c, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_NO_ERROR, NULL);
    vega_quic_ep_conn_wait_closed(t->c, vega_deadline_in_ms(10000));
    vega_quic_ep_conn_release(t->c);
    vega_quic_endpoint_free(t->ep);
    vega_h3_conn_free(t->h3);
    for (size_t i = 0; i < t->nresp; i++)
        free(t->resp[i].body);
    vega_notify_fini(&t->wake);
}

/* Sends a request (body: all of it, waiting for flow control) and returns its response slot. */
static struct resp *cli_send(struct cli *t, const char *method, const char *path,
                             const uint8_t *body, size_t len)
{
    vega_quic_conn *qc = vega_quic_ep_conn_lock(t->c);
    VCHECK(qc != NULL);
    uint64_t sid;
    VCHECK_EQ(vega_quic_stream_open(qc, true, &sid), 0);
    VCHECK(t->nresp < 64);
    struct resp *r = &t->resp[t->nresp++];
    memset(r, 0, sizeof *r);
    r->sid = sid;
    vega_h3_request rq = {.method = {method, strlen(method)},
                          .scheme = {"https", 5},
                          .authority = {"localhost", 9},
                          .path = {path, strlen(path)}};
    uint8_t head[1024];
    vega_ssize h = vega_h3_conn_write_request_head(t->h3, sid, &rq, NULL, 0, head, sizeof head);
    VCHECK(h > 0);
    c_flush(t, qc);
    VCHECK_EQ(vega_quic_stream_write(qc, sid, head, (size_t)h, len == 0), h);
    if (len) {
        uint8_t dh[VEGA_H3_DATA_HEADER_MAX];
        vega_ssize k = vega_h3_write_data_header(dh, sizeof dh, len);
        VCHECK_EQ(vega_quic_stream_write(qc, sid, dh, (size_t)k, false), k);
    }
    vega_quic_ep_conn_unlock(t->c);
    size_t off = 0;
    while (off < len) {
        qc = vega_quic_ep_conn_lock(t->c);
        VCHECK(qc != NULL);
        vega_ssize w = vega_quic_stream_write(qc, sid, body + off, len - off, true);
        VCHECK(w >= 0);
        off += (size_t)w;
        vega_quic_ep_conn_unlock(t->c);
        if (off < len)
            vega_notify_wait(&t->wake, vega_deadline_in_ms(100));
    }
    return r;
}

static void cli_wait(struct cli *t, struct resp *r)
{
    vega_deadline dl = vega_deadline_in_ms(20000);
    for (;;) {
        vega_quic_ep_conn_lock(t->c);
        bool done = r->done || r->reset || t->closed;
        vega_quic_ep_conn_unlock(t->c);
        if (done)
            return;
        VCHECK(vega_notify_wait(&t->wake, dl) != -ECANCELED);
        VCHECK(vega_now() < dl);
    }
}

/* ---- cases ---------------------------------------------------------------------------------- */

static void requests_body(void)
{
    struct srv v;
    srv_start(&v);
    struct cli t;
    cli_open(&t, &v);
    struct resp *r = cli_send(&t, "GET", "/hello", NULL, 0);
    cli_wait(&t, r);
    VCHECK_EQ(r->status, 200);
    VCHECK_EQ(r->len, 8);
    VCHECK(memcmp(r->body, "hello h3", 8) == 0);
    VCHECK_STR(r->ctype, "text/plain");
    VCHECK_STR(r->server, "vega-test");
    r = cli_send(&t, "GET", "/big", NULL, 0);
    cli_wait(&t, r);
    VCHECK_EQ(r->status, 200);
    VCHECK_EQ(r->len, 1 << 20);
    for (size_t i = 0; i < r->len; i++)
        VCHECK_EQ(r->body[i], pattern(i));
    r = cli_send(&t, "GET", "/file", NULL, 0);
    cli_wait(&t, r);
    VCHECK_EQ(r->len, FILE_LEN);
    for (size_t i = 0; i < r->len; i++)
        VCHECK_EQ(r->body[i], pattern(i));
    static uint8_t up[200000];
    for (size_t i = 0; i < sizeof up; i++)
        up[i] = (uint8_t)(i % 253);
    r = cli_send(&t, "POST", "/echo", up, sizeof up);
    cli_wait(&t, r);
    VCHECK_EQ(r->status, 200);
    VCHECK_EQ(r->len, sizeof up);
    VCHECK(memcmp(r->body, up, sizeof up) == 0);
    VCHECK_STR(r->trailer, "200000");
    r = cli_send(&t, "GET", "/fail", NULL, 0);
    cli_wait(&t, r);
    VCHECK_EQ(r->status, 500);
    r = cli_send(&t, "GET", "/nope", NULL, 0);
    cli_wait(&t, r);
    VCHECK_EQ(r->status, 404);
    /* many at once on the one connection */
    struct resp *many[40];
    for (int i = 0; i < 40; i++)
        many[i] = cli_send(&t, "GET", i % 2 ? "/hello" : "/file", NULL, 0);
    for (int i = 0; i < 40; i++) {
        cli_wait(&t, many[i]);
        VCHECK_EQ(many[i]->status, 200);
        VCHECK_EQ(many[i]->len, i % 2 ? 8 : FILE_LEN);
    }
    cli_close(&t);
    srv_stop(&v);
    VCHECK(logged_h3 >= 46);
}

VTEST_CT(requests_current_thread)
{
    requests_body();
}

VTEST_MT(requests_two_workers, 2)
{
    requests_body();
}

/* Shutdown: GOAWAY reaches the client, the request in flight still completes. */
VTEST_MT(shutdown_sends_goaway, 2)
{
    struct srv v;
    srv_start(&v);
    struct cli t;
    cli_open(&t, &v);
    vega_notify_init(&slow_entered);
    vega_notify_init(&slow_release);
    struct resp *r = cli_send(&t, "GET", "/slow", NULL, 0);
    VCHECK_EQ(vega_notify_wait(&slow_entered, vega_deadline_in_ms(20000)), 0);
    vega_http_server_shutdown(v.s, vega_deadline_in_ms(20000));
    /* the GOAWAY comes while the request is still in the handler */
    vega_deadline dl = vega_deadline_in_ms(20000);
    for (;;) {
        vega_quic_ep_conn_lock(t.c);
        bool seen = t.goaway;
        vega_quic_ep_conn_unlock(t.c);
        if (seen)
            break;
        VCHECK(vega_notify_wait(&t.wake, dl) == 0);
    }
    vega_notify_one(&slow_release);
    cli_wait(&t, r);
    VCHECK_EQ(r->status, 200);
    VCHECK_EQ(r->len, 4);
    VCHECK_EQ(vega_task_join(v.run, NULL, vega_deadline_in_ms(20000)), 0);
    vega_http_server_free(v.s);
    cli_close(&t);
    vega_crypto_cert_chain_free(v.chain);
    vega_crypto_key_free(v.key);
    vega_crypto_cert_store_free(v.ca);
}

/* API rules, ABI: vega_http_server_h3_opts grew conn_send_budget at layout version 3. An _init
 * of version 2 sets what it has (that it writes nothing past it: the layout table,
 * tests/unit/base/compat_test.c), and the current one sets the budget to 0, its default
 * (4 MiB). */
VTEST(opts_layout_versions)
{
    vega_http_server_h3_opts o;
    memset(&o, 0xab, sizeof o);
    vega_http_server_h3_opts_init_versioned(&o, 2);
    VCHECK(o.qlog_dir == NULL);
    vega_http_server_h3_opts_init(&o);
    VCHECK_EQ(o.conn_send_budget, 0);
}

/* ---- the stop waits for the last GOAWAY's acknowledgement ------------------------------------ */

/* A UDP relay between the client and the server: the client talks to front, the relay to the
 * server through back. While hold is set, the client's datagrams (its ACKs among them) are
 * dropped (and counted); the server's always pass. */
struct relay {
    vega_sock *front, *back;
    vega_addr addr, client;
    _Atomic bool hold, have_client;
    _Atomic unsigned long dropped;
    vega_task *up_task, *down_task;
};

static void *relay_up(void *arg)
{
    struct relay *r = arg;
    uint8_t buf[2048];
    for (;;) {
        vega_addr from;
        vega_ssize n = vega_udp_recv_from(r->front, buf, sizeof buf, &from, VEGA_DEADLINE_NEVER);
        if (n == -ECANCELED)
            return NULL;
        if (n < 0)
            continue;
        if (!atomic_load(&r->have_client)) {
            r->client = from;
            atomic_store(&r->have_client, true);
        }
        if (atomic_load(&r->hold)) {
            atomic_fetch_add(&r->dropped, 1);
            continue;
        }
        if (vega_udp_send_to(r->back, buf, (size_t)n, NULL, VEGA_DEADLINE_NEVER) == -ECANCELED)
            return NULL;
    }
}

static void *relay_down(void *arg)
{
    struct relay *r = arg;
    uint8_t buf[2048];
    for (;;) {
        vega_ssize n = vega_udp_recv_from(r->back, buf, sizeof buf, NULL, VEGA_DEADLINE_NEVER);
        if (n == -ECANCELED)
            return NULL;
        if (n < 0 || !atomic_load(&r->have_client))
            continue;
        if (vega_udp_send_to(r->front, buf, (size_t)n, &r->client, VEGA_DEADLINE_NEVER) ==
            -ECANCELED)
            return NULL;
    }
}

static void relay_start(struct relay *r, const vega_addr *server)
{
    memset(r, 0, sizeof *r);
    vega_addr a;
    VCHECK_EQ(vega_addr_from_ip(&a, "127.0.0.1", 0), 0);
    VCHECK_EQ(vega_udp_bind(&r->front, &a, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(r->front, &r->addr), 0);
    VCHECK_EQ(vega_udp_connect(&r->back, server), 0);
    VCHECK_EQ(vega_task_spawn(&r->up_task, relay_up, r), 0);
    VCHECK_EQ(vega_task_spawn(&r->down_task, relay_down, r), 0);
}

static void relay_stop(struct relay *r)
{
    vega_task_cancel(r->up_task);
    vega_task_cancel(r->down_task);
    VCHECK_EQ(vega_task_join(r->up_task, NULL, vega_deadline_in_ms(10000)), 0);
    VCHECK_EQ(vega_task_join(r->down_task, NULL, vega_deadline_in_ms(10000)), 0);
    vega_sock_close(r->front);
    vega_sock_close(r->back);
}

/* The client's view, read under its connection's lock: the packets it processed and the
 * events they gave are read together (the endpoint delivers a datagram's events before it lets
 * go of the lock). */
struct cli_view {
    unsigned ngoaway;
    bool closed;
    bool confirmed; /* the server's HANDSHAKE_DONE came: its side of the handshake is over */
    uint64_t pkts_recv;
};

static struct cli_view cli_state(struct cli *t)
{
    struct cli_view w = {0};
    vega_quic_conn *qc = vega_quic_ep_conn_lock(t->c);
    w.ngoaway = t->ngoaway;
    w.closed = t->closed || !qc;
    if (qc) {
        vega_quic_conn_info ci;
        vega_quic_conn_get_info(qc, &ci);
        w.pkts_recv = ci.pkts_recv;
        w.confirmed = ci.handshake_confirmed;
    }
    vega_quic_ep_conn_unlock(t->c);
    return w;
}

/* Waits (20 s at most) until the client got n GOAWAYs, or was closed. */
static void wait_goaways(struct cli *t, unsigned n)
{
    vega_deadline dl = vega_deadline_in_ms(20000);
    for (;;) {
        struct cli_view w = cli_state(t);
        if (w.ngoaway >= n || w.closed)
            return;
        VCHECK(vega_now() < dl);
        (void)vega_notify_wait(&t->wake, vega_deadline_in_ms(50));
    }
}

/* Waits (20 s at most) until the server's run returned: it closed its connections (after
 * the stop's phases) and freed its endpoint. What is checked on the server's side: its
 * CONNECTION_CLOSE is one datagram, sent once, which a client may never see (RFC 9000 §10.2:
 * the peer then idles out); this client did not see it within 20 s in 2 of about 100 runs, a
 * cause not found yet (the relay counts no send error). */
static void wait_ended(struct srv *v, struct cli *t)
{
    vega_deadline dl = vega_deadline_in_ms(20000);
    while (!atomic_load(&v->ended)) {
        VCHECK(vega_now() < dl);
        (void)vega_notify_wait(&t->wake, vega_deadline_in_ms(20));
    }
}

/* A connection through the relay, its handshake over on both sides, then the client's
 * datagrams held back and the server told to stop with the given grace. No request: a response
 * is counted until acknowledged on its own (h3s_conn.unacked), and the client's ACK of it may
 * or may not have passed before the hold; what is left unacknowledged here is stream data
 * alone (the control stream's SETTINGS, then the GOAWAYs). */
static void held_stop_begin(struct srv *v, struct relay *r, struct cli *t, vega_deadline grace)
{
    srv_start(v);
    relay_start(r, &v->addr);
    struct srv via = *v;
    via.addr = r->addr;
    cli_open(t, &via);
    vega_deadline dl = vega_deadline_in_ms(20000);
    while (!cli_state(t).confirmed) {
        VCHECK(vega_now() < dl);
        (void)vega_notify_wait(&t->wake, vega_deadline_in_ms(50));
    }
    atomic_store(&r->hold, true);
    vega_http_server_shutdown(v->s, grace);
}

static void held_stop_end(struct srv *v, struct relay *r, struct cli *t)
{
    VCHECK_EQ(vega_task_join(v->run, NULL, vega_deadline_in_ms(20000)), 0);
    vega_http_server_free(v->s);
    cli_close(t);
    relay_stop(r);
    vega_crypto_cert_chain_free(v->chain);
    vega_crypto_key_free(v->key);
    vega_crypto_cert_store_free(v->ca);
}

/* RFC 9114 §5.2 as lib/http_server/h3_conn.c does it: the connection is closed only once the
 * client acknowledged what it was sent, the last GOAWAY included. With the client's ACKs held
 * back, both GOAWAYs arrive, the server goes on sending (retransmissions: it is waiting) and
 * neither closes nor ends its run; let through, the client's next ACK ends it, long before
 * grace.
 * (Fails if count_unacked ignores vega_quic_conn_get_send_held: the close then follows the
 * second GOAWAY.) */
VTEST_MT(stop_closes_after_the_last_goaway_is_acked, 2)
{
    struct srv v;
    struct relay r;
    struct cli t;
    vega_deadline grace = vega_deadline_in_ms(60000);
    held_stop_begin(&v, &r, &t, grace);
    wait_goaways(&t, 2);
    struct cli_view w = cli_state(&t);
    VCHECK_EQ(w.ngoaway, 2);
    VCHECK(!w.closed);
    /* a later packet from the server, processed: no CONNECTION_CLOSE came with it (the server
     * is still waiting, and retransmits what was not acknowledged) */
    uint64_t seen = w.pkts_recv;
    vega_deadline dl = vega_deadline_in_ms(20000);
    for (;;) {
        w = cli_state(&t);
        VCHECK(!w.closed);
        if (w.closed || w.pkts_recv > seen)
            break;
        VCHECK(vega_now() < dl);
        (void)vega_notify_wait(&t.wake, vega_deadline_in_ms(50));
    }
    VCHECK(!atomic_load(&v.ended));
    VCHECK(atomic_load(&r.dropped) > 0);
    atomic_store(&r.hold, false);
    /* Something ack-eliciting from the client, so that its ACK goes out now rather than with
     * its answer to the server's next probe (backed off for seconds by then): a frame of a
     * reserved type on our control stream, which the server ignores (RFC 9114 §7.2.8). */
    static const uint8_t grease[] = {0x21, 0x00};
    vega_quic_conn *qc = vega_quic_ep_conn_lock(t.c);
    VCHECK(qc != NULL);
    VCHECK_EQ(vega_quic_stream_write(qc, t.ctrl_sid, grease, sizeof grease, false), 2);
    vega_quic_ep_conn_unlock(t.c);
    wait_ended(&v, &t);
    VCHECK(vega_now() < grace);
    held_stop_end(&v, &r, &t);
}

/* ... and a client that never acknowledges is closed at the grace deadline, not before. */
VTEST_MT(stop_closes_at_grace_without_the_ack, 2)
{
    struct srv v;
    struct relay r;
    struct cli t;
    vega_deadline grace = vega_deadline_in_ms(1500);
    held_stop_begin(&v, &r, &t, grace);
    wait_ended(&v, &t);
    VCHECK(vega_now() >= grace);
    VCHECK(atomic_load(&r.dropped) > 0);
    held_stop_end(&v, &r, &t);
}
