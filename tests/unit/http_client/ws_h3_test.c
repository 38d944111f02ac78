/* SPDX-License-Identifier: MIT */
/* WebSockets over HTTP/3 (RFC 9220) end to end on loopback QUIC, our client
 * (vega_websocket_connect with VEGA_HTTP_CLIENT_V3) against our server (the h3 opts' websocket,
 * vega_http_exchange_accept_websocket): the extended CONNECT and its 200, subprotocol and
 * permessage-deflate negotiated, messages both ways (one larger than the stream's window), the
 * close handshake from either side, the server's FIN read as the end (1006), a refusal, a
 * server without SETTINGS_ENABLE_CONNECT_PROTOCOL (-ENOTSUP, or the HTTP/1.1 Upgrade with
 * h1_fallback), an origin without HTTP/3 (the Upgrade over TCP with h1_fallback), and a stalled
 * WebSocket each way beside a GET on the same QUIC connection, ended by an abort (the stream reset)
 * that the other side reads as -ECONNRESET. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/http_client.h>
#include <vega/http_server.h>
#include <vega/sync.h>
#include <vega/test.h>
#include <vega/websocket.h>

#include "../quic/qtls_certs.h"
#include "vtest.h"
#include "ws_util.h"

#define DLS(ms) vega_deadline_in_ms(ms)

/* /stall: accepted, then reads nothing until the test lets it go; its read's result here */
static vega_notify stall_in, stall_go, stall_done;
static atomic_int stall_rc;

/* Echoes until the peer closes. /close4001 closes first after one echo; /drop ends at once
 * without a Close; /flood sends 64 KiB messages until that fails; /refuse is answered 403;
 * /big is a plain 2 MB GET. */
static int handler(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *rq = vega_http_exchange_request(x);
    if (vega_http_str_eq(rq->path, "/big")) {
        size_t n = 2u << 20;
        uint8_t *b = malloc(n);
        VCHECK(b);
        for (size_t i = 0; i < n; i++)
            b[i] = (uint8_t)(i * 7);
        int rc = vega_http_respond(x, 200, NULL, 0, b, n, DLS(10000));
        free(b);
        return rc;
    }
    if (!vega_http_exchange_is_websocket(x) || vega_http_str_eq(rq->path, "/refuse"))
        return vega_http_respond(x, 403, NULL, 0, "no", 2, DLS(5000));
    vega_websocket_opts o;
    vega_websocket_opts_init(&o);
    o.deflate.enabled = true;
    static const char *const protos[] = {"superchat", "chat"};
    o.subprotocols = protos;
    o.nsubprotocols = 2;
    vega_websocket *ws;
    VCHECK_EQ(vega_http_exchange_accept_websocket(x, &o, &ws, DLS(5000)), 0);
    bool close_first = vega_http_str_eq(rq->path, "/close4001");
    bool drop = vega_http_str_eq(rq->path, "/drop");
    if (vega_http_str_eq(rq->path, "/flood")) {
        static uint8_t chunk[65536];
        while (vega_websocket_send(ws, VEGA_WS_BINARY, chunk, sizeof chunk, DLS(20000)) == 0) {
        }
        drop = true;
    }
    if (vega_http_str_eq(rq->path, "/stall")) {
        vega_notify_one(&stall_in);
        VCHECK_EQ(vega_notify_wait(&stall_go, DLS(20000)), 0);
        vega_websocket_msg m;
        int rc;
        while ((rc = vega_websocket_recv(ws, &m, DLS(10000))) == 0) {
        }
        atomic_store(&stall_rc, rc);
        vega_notify_one(&stall_done);
        drop = true;
    }
    for (; !drop;) {
        vega_websocket_msg m;
        int rc = vega_websocket_recv(ws, &m, DLS(10000));
        if (rc < 0) {
            VCHECK_EQ(rc, VEGA_ERR_CLOSED);
            break;
        }
        VCHECK_EQ(vega_websocket_send(ws, m.type, m.data, m.len, DLS(10000)), 0);
        if (close_first)
            VCHECK_EQ(vega_websocket_close(ws, 4001, "bye", 3, DLS(5000)), 0);
    }
    vega_websocket_free(ws);
    return 0;
}

struct srv {
    vega_http_server *s;
    vega_task *run;
    vega_addr addr;
    uint16_t port;
    vega_crypto_cert_chain *chain;
    vega_crypto_key *key;
    vega_crypto_cert_store *ca;
    vega_tls_config *tls;
    vega_tls_config *ctls; /* the client's (retained by it) */
};

static void *run_task(void *arg)
{
    struct srv *v = arg;
    VCHECK_EQ(vega_http_server_run(v->s), 0);
    return NULL;
}

/* websocket: the h3 opts' flag; tcp: also HTTPS on TCP at the same port (the fallback's) */
/* h3 false: TCP (with TLS) alone, nothing on the UDP port. */
static void srv_start_h3(struct srv *v, bool websocket, bool tcp, bool h3)
{
    memset(v, 0, sizeof *v);
    vega_notify_init(&stall_in);
    vega_notify_init(&stall_go);
    vega_notify_init(&stall_done);
    atomic_store(&stall_rc, 1);
    VCHECK_EQ(vega_crypto_cert_chain_new(&v->chain), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(v->chain, QT_SRV_P256_PEM, strlen(QT_SRV_P256_PEM)), 0);
    VCHECK_EQ(vega_crypto_key_load_private(&v->key, QT_SRV_P256_KEY, strlen(QT_SRV_P256_KEY)), 0);
    VCHECK_EQ(vega_crypto_cert_store_new(&v->ca, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(v->ca, QT_CA_PEM, strlen(QT_CA_PEM)), 0);
    vega_http_server_opts so;
    vega_http_server_opts_init(&so);
    so.handler = handler;
    if (tcp) {
        VCHECK_EQ(vega_tls_config_new(&v->tls, VEGA_TLS_SERVER), 0);
        VCHECK_EQ(vega_tls_config_set_cert_pem(v->tls, QT_SRV_P256_PEM, strlen(QT_SRV_P256_PEM),
                                               QT_SRV_P256_KEY, strlen(QT_SRV_P256_KEY)),
                  0);
        so.tls = v->tls;
    }
    vega_http_server_h3_opts ho;
    vega_http_server_h3_opts_init(&ho);
    ho.chain = v->chain;
    ho.key = v->key;
    ho.websocket = websocket;
    /* UDP on a free port, then TCP on the same one: another program may hold that TCP port
     * (or, on a busy machine, no ephemeral port is free at that moment): a new pair then */
    int rc = -EADDRINUSE;
    for (int tries = 0; rc == -EADDRINUSE && tries < 20; tries++) {
        VCHECK_EQ(vega_http_server_new(&v->s, &so), 0);
        vega_addr a;
        VCHECK_EQ(vega_addr_from_ip(&a, "127.0.0.1", 0), 0);
        if (!h3) {
            rc = vega_http_server_listen(v->s, &a, 0, &v->addr);
            break;
        }
        VCHECK_EQ(vega_http_server_listen_h3(v->s, &a, 0, &ho, &v->addr), 0);
        rc = tcp ? vega_http_server_listen(v->s, &v->addr, 0, NULL) : 0;
        if (rc == -EADDRINUSE)
            vega_http_server_free(v->s);
    }
    VCHECK_EQ(rc, 0);
    v->port = vega_addr_port(&v->addr);
    VCHECK_EQ(vega_task_spawn(&v->run, run_task, v), 0);
}

static void srv_start(struct srv *v, bool websocket, bool tcp)
{
    srv_start_h3(v, websocket, tcp, true);
}

static void srv_stop(struct srv *v)
{
    vega_http_server_shutdown(v->s, DLS(2000));
    VCHECK_EQ(vega_task_join(v->run, NULL, DLS(20000)), 0);
    vega_http_server_free(v->s);
    vega_crypto_cert_chain_free(v->chain);
    vega_crypto_key_free(v->key);
    vega_crypto_cert_store_free(v->ca);
    vega_tls_config_free(v->tls);
    vega_notify_fini(&stall_in);
    vega_notify_fini(&stall_go);
    vega_notify_fini(&stall_done);
    vega_tls_config_free(v->ctls);
}

static vega_http_client *client(struct srv *v)
{
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.quic_ca = v->ca;
    vega_tls_config *t;
    VCHECK_EQ(vega_tls_config_new(&t, VEGA_TLS_CLIENT), 0);
    VCHECK_EQ(vega_tls_config_set_ca_pem(t, QT_CA_PEM, strlen(QT_CA_PEM)), 0);
    static const char *const alpn[] = {"http/1.1"};
    VCHECK_EQ(vega_tls_config_set_alpn(t, alpn, 1), 0);
    o.tls = v->ctls = t;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    return c;
}

static void url(const struct srv *v, char *out, size_t cap, const char *scheme, const char *path)
{
    snprintf(out, cap, "%s://localhost:%u%s", scheme, v->port, path);
}

static vega_websocket *open_ws(vega_http_client *c, const struct srv *v, const char *path,
                               bool deflate)
{
    char u[128];
    url(v, u, sizeof u, "wss", path);
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    o.version = VEGA_HTTP_CLIENT_V3;
    o.trace = trace_req;
    o.ws.deflate.enabled = deflate;
    static const char *const protos[] = {"chat", "other"};
    o.ws.subprotocols = protos;
    o.ws.nsubprotocols = 2;
    last_head[0] = '\0';
    vega_websocket *ws = NULL;
    VCHECK_EQ(vega_websocket_connect(c, u, &o, &ws, DLS(10000)), 0);
    return ws;
}

/* A plain GET on the client's pooled HTTP/3 connection: the 2 MB body whole. */
static void get_big(vega_http_client *c, const struct srv *v)
{
    char u[128];
    url(v, u, sizeof u, "https", "/big");
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = u;
    rq.version = VEGA_HTTP_CLIENT_V3;
    rq.deadline = DLS(20000);
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->version, VEGA_HTTP_CLIENT_V3);
    VCHECK_EQ(vega_http_client_response_info(r)->status, 200);
    VCHECK(vega_http_client_response_info(r)->reused); /* the WebSocket's connection */
    static uint8_t buf[65536];
    size_t got = 0;
    for (;;) {
        vega_ssize n = vega_http_client_response_read(r, buf, sizeof buf, DLS(20000));
        VCHECK(n >= 0);
        if (n == 0)
            break;
        for (vega_ssize i = 0; i < n; i++)
            VCHECK_EQ(buf[i], (uint8_t)((got + (size_t)i) * 7));
        got += (size_t)n;
    }
    VCHECK_EQ(got, 2u << 20);
    vega_http_client_response_free(r);
}

/* Plain and with permessage-deflate: the extended CONNECT, the subprotocol, messages both
 * ways (1 MB: more than a stream's first window), pings, our close answered. */
VTEST_MT(echo_plain_and_deflate, 2)
{
    struct srv v;
    srv_start(&v, true, false);
    vega_http_client *c = client(&v);
    for (int deflate = 0; deflate < 2; deflate++) {
        vega_websocket *ws = open_ws(c, &v, "/echo", deflate);
        /* RFC 9220 §3 (RFC 8441 §4) as the trace writes it */
        VCHECK(strncmp(last_head, "CONNECT /echo HTTP/3\r\n", 22) == 0);
        VCHECK(strstr(last_head, "\r\n:protocol: websocket\r\n"));
        VCHECK(strstr(last_head, "\r\nsec-websocket-version: 13\r\n"));
        VCHECK(!strcasestr(last_head, "sec-websocket-key"));
        VCHECK_STR(vega_websocket_get_subprotocol(ws), "chat");
        VCHECK_EQ(vega_websocket_is_compressed(ws), deflate == 1);
        echo_one(ws, VEGA_WS_TEXT, "hello", 5);
        echo_one(ws, VEGA_WS_TEXT, "", 0);
        echo_one(ws, VEGA_WS_BINARY, "\x00\xff\x01", 3);
        size_t big = 1000 * 1000;
        char *p = malloc(big);
        VCHECK(p);
        for (size_t i = 0; i < big; i++)
            p[i] = (char)('a' + (i * 7 + i / 1000) % 26);
        echo_one(ws, VEGA_WS_TEXT, p, big);
        free(p);
        VCHECK_EQ(vega_websocket_ping(ws, "cli", 3, DLS(5000)), 0);
        echo_one(ws, VEGA_WS_BINARY, "after ping", 10);
        close_normally(ws);
        vega_websocket_free(ws);
    }
    vega_http_client_free(c);
    srv_stop(&v);
}

/* The server closes first (4001); the server's FIN without a Close is 1006; a 403 is a
 * refusal with the response; all on one connection with a GET between. */
VTEST_MT(server_close_end_and_refusal, 2)
{
    struct srv v;
    srv_start(&v, true, false);
    vega_http_client *c = client(&v);
    vega_websocket *ws = open_ws(c, &v, "/close4001", false);
    echo_one(ws, VEGA_WS_TEXT, "x", 1);
    vega_websocket_msg m;
    VCHECK_EQ(vega_websocket_recv(ws, &m, DLS(5000)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_websocket_get_close_code(ws), 4001);
    vega_websocket_free(ws);
    ws = open_ws(c, &v, "/drop", false);
    VCHECK_EQ(vega_websocket_recv(ws, &m, DLS(5000)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_websocket_get_close_code(ws), 1006);
    vega_websocket_free(ws);
    get_big(c, &v);
    char u[128];
    url(&v, u, sizeof u, "wss", "/refuse");
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    o.version = VEGA_HTTP_CLIENT_V3;
    vega_http_client_response *r = NULL;
    o.refused = &r;
    VCHECK_EQ(vega_websocket_connect(c, u, &o, &ws, DLS(5000)), VEGA_ERR_WS_STATUS);
    VCHECK(ws == NULL && r != NULL);
    VCHECK_EQ(vega_http_client_response_info(r)->status, 403);
    VCHECK_EQ(vega_http_client_response_info(r)->version, VEGA_HTTP_CLIENT_V3);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    srv_stop(&v);
}

/* A server without the setting: -ENOTSUP, nothing sent; with h1_fallback the HTTP/1.1 Upgrade
 * over TLS on TCP at the same port. ws:// is not HTTP/3 (RFC 9114 §3.1). */
VTEST_MT(server_without_the_setting, 2)
{
    struct srv v;
    srv_start(&v, false, true);
    vega_http_client *c = client(&v);
    char u[128];
    url(&v, u, sizeof u, "wss", "/echo");
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    o.version = VEGA_HTTP_CLIENT_V3;
    o.trace = trace_req;
    vega_websocket *ws = NULL;
    VCHECK_EQ(vega_websocket_connect(c, u, &o, &ws, DLS(10000)), -ENOTSUP);
    VCHECK(ws == NULL);
    get_big(c, &v); /* the connection is fine for requests */
    o.h1_fallback = true;
    VCHECK_EQ(vega_websocket_connect(c, u, &o, &ws, DLS(10000)), 0);
    VCHECK(strncmp(last_head, "GET /echo HTTP/1.1\r\n", 20) == 0);
    echo_one(ws, VEGA_WS_TEXT, "fell back", 9);
    close_normally(ws);
    vega_websocket_free(ws);
    url(&v, u, sizeof u, "ws", "/echo");
    o.h1_fallback = false;
    VCHECK_EQ(vega_websocket_connect(c, u, &o, &ws, DLS(10000)), VEGA_ERR_HTTP_SCHEME);
    vega_http_client_free(c);
    srv_stop(&v);
}

/* No HTTP/3 at the origin (nothing on the UDP port: QUIC cannot connect): an error without
 * h1_fallback, with it the HTTP/1.1 Upgrade over TLS on TCP, as browsers fall back. */
VTEST_MT(no_quic_falls_back, 2)
{
    struct srv v;
    srv_start_h3(&v, true, true, false);
    vega_http_client *c = client(&v);
    char u[128];
    url(&v, u, sizeof u, "wss", "/echo");
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    o.version = VEGA_HTTP_CLIENT_V3;
    o.trace = trace_req;
    vega_websocket *ws = NULL;
    int rc = vega_websocket_connect(c, u, &o, &ws, DLS(10000));
    VCHECK(rc < 0 && rc != -ENOTSUP);
    VCHECK(ws == NULL);
    o.h1_fallback = true;
    VCHECK_EQ(vega_websocket_connect(c, u, &o, &ws, DLS(10000)), 0);
    VCHECK(strncmp(last_head, "GET /echo HTTP/1.1\r\n", 20) == 0);
    echo_one(ws, VEGA_WS_TEXT, "over TCP", 8);
    close_normally(ws);
    vega_websocket_free(ws);
    vega_http_client_free(c);
    srv_stop(&v);
}

/* The server floods a WebSocket the client does not read: the flood stops at that stream's
 * window, and a 2 MB GET and another WebSocket on the same connection go on meanwhile. */
VTEST_MT(stalled_reader_beside_a_get, 2)
{
    struct srv v;
    srv_start(&v, true, false);
    vega_http_client *c = client(&v);
    vega_websocket *flood = open_ws(c, &v, "/flood", false);
    vega_websocket_msg m;
    VCHECK_EQ(vega_websocket_recv(flood, &m, DLS(5000)), 0); /* it is flowing */
    VCHECK_EQ(m.len, 65536);
    for (int i = 0; i < 3; i++)
        get_big(c, &v);
    vega_websocket *ws = open_ws(c, &v, "/echo", false);
    echo_one(ws, VEGA_WS_TEXT, "beside", 6);
    VCHECK_EQ(vega_websocket_recv(flood, &m, DLS(5000)), 0);
    vega_websocket_free(flood); /* cancelled: the server's send fails, its handler ends */
    echo_one(ws, VEGA_WS_TEXT, "still", 5);
    close_normally(ws);
    vega_websocket_free(ws);
    vega_http_client_free(c);
    srv_stop(&v);
}

/* The server's handler reads nothing: the client's 4 MB message stalls on that stream's
 * window (its send gives up at its deadline and the stream is reset, H3_REQUEST_CANCELLED)
 * while a 2 MB GET on the same connection completes; the handler then reads the abort as
 * -ECONNRESET. */
VTEST_MT(stalled_writer_beside_a_get_then_abort, 2)
{
    struct srv v;
    srv_start(&v, true, false);
    vega_http_client *c = client(&v);
    vega_websocket *ws = open_ws(c, &v, "/stall", false);
    VCHECK_EQ(vega_notify_wait(&stall_in, DLS(10000)), 0);
    size_t big = 4u << 20;
    uint8_t *p = calloc(1, big);
    VCHECK(p);
    /* nothing reads on the server: this cannot all go, whatever the timing */
    VCHECK_EQ(vega_websocket_send(ws, VEGA_WS_BINARY, p, big, DLS(1500)), -ETIMEDOUT);
    free(p);
    get_big(c, &v);
    vega_notify_one(&stall_go);
    vega_websocket_free(ws);
    /* the handler's read ends in the reset (or the bytes before it were a broken frame) */
    VCHECK_EQ(vega_notify_wait(&stall_done, DLS(10000)), 0);
    int rc = atomic_load(&stall_rc);
    VCHECK(rc == -ECONNRESET || rc == VEGA_ERR_PROTO);
    get_big(c, &v);
    vega_http_client_free(c);
    srv_stop(&v);
}

/* A second task sends 16 messages of 256 KiB while this one receives their echoes: the
 * reader and the writer wait on the stream at once (4 MiB each way: neither side's windows
 * hold it all, so each waits for the other's progress), and each must get its own wakes. */
struct sender {
    vega_websocket *ws;
    int rc;
};

static void *send_task(void *arg)
{
    struct sender *s = arg;
    size_t n = 256 * 1024;
    uint8_t *p = malloc(n);
    VCHECK(p);
    for (int i = 0; i < 16 && s->rc == 0; i++) {
        memset(p, 'a' + i, n);
        s->rc = vega_websocket_send(s->ws, VEGA_WS_BINARY, p, n, DLS(20000));
    }
    free(p);
    return NULL;
}

VTEST_MT(reader_and_writer_tasks_at_once, 2)
{
    struct srv v;
    srv_start(&v, true, false);
    vega_http_client *c = client(&v);
    vega_websocket *ws = open_ws(c, &v, "/echo", false);
    struct sender s = {ws, 0};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, send_task, &s), 0);
    for (int i = 0; i < 16; i++) {
        vega_websocket_msg m;
        VCHECK_EQ(vega_websocket_recv(ws, &m, DLS(20000)), 0);
        VCHECK_EQ(m.len, 256 * 1024);
        VCHECK_EQ(m.data[0], 'a' + i);
        VCHECK_EQ(m.data[m.len - 1], 'a' + i);
    }
    VCHECK_EQ(vega_task_join(t, NULL, DLS(20000)), 0);
    VCHECK_EQ(s.rc, 0);
    close_normally(ws);
    vega_websocket_free(ws);
    vega_http_client_free(c);
    srv_stop(&v);
}

/* Layout 4 of the h3 opts (before websocket) sets its defaults, the current one websocket off
 * (that layout 4's init leaves websocket alone: the layout table, tests/unit/base/compat_test.c).
 */
VTEST(opts_layout_4)
{
    vega_http_server_h3_opts o;
    memset(&o, 0xab, sizeof o);
    vega_http_server_h3_opts_init_versioned(&o, 4);
    VCHECK_EQ(o.cid_prefix_len, 0);
    vega_http_server_h3_opts_init(&o);
    VCHECK(!o.websocket);
}
