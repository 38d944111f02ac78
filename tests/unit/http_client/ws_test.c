/* SPDX-License-Identifier: MIT */
/* vega_websocket_connect against our own server (vega_http_exchange_accept_websocket) over the
 * client's connect hook (an in-memory duplex, plain and TLS) and over loopback TCP: text,
 * binary, fragmented and compressed messages, pings both ways, the close handshake from either
 * side, subprotocols; and each way a handshake fails (a status other than 101, a wrong
 * Sec-WebSocket-Accept, no Upgrade, an extension or a subprotocol we did not offer) against a
 * scripted server. */
#include <errno.h>

#include <vega/http_server.h>
#include <vega/test.h>
#include <vega/websocket.h>

#include "hc_util.h"
#include "ws_util.h"

#define MAX_CONNS 8

/* The server's handler: echoes until the peer closes. Paths: /close4001 closes first with
 * 4001 after one echo; /ping pings before each echo; /refuse answers 403; /drop accepts and
 * ends at once without a Close; /flood sends 64 KiB messages until the peer goes. */
static int ws_handler(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *rq = vega_http_exchange_request(x);
    bool close_first = rq->path.len == 10 && memcmp(rq->path.ptr, "/close4001", 10) == 0;
    bool ping = rq->path.len == 5 && memcmp(rq->path.ptr, "/ping", 5) == 0;
    bool drop = rq->path.len == 5 && memcmp(rq->path.ptr, "/drop", 5) == 0;
    bool flood = rq->path.len == 6 && memcmp(rq->path.ptr, "/flood", 6) == 0;
    if (!vega_http_exchange_is_websocket(x) ||
        (rq->path.len == 7 && memcmp(rq->path.ptr, "/refuse", 7) == 0))
        return vega_http_respond(x, 403, NULL, 0, "no", 2, DL(5000));
    vega_websocket_opts o;
    vega_websocket_opts_init(&o);
    o.deflate.enabled = true;
    static const char *const protos[] = {"superchat", "chat"};
    o.subprotocols = protos;
    o.nsubprotocols = 2;
    vega_websocket *ws;
    VCHECK_EQ(vega_http_exchange_accept_websocket(x, &o, &ws, DL(5000)), 0);
    if (flood) {
        static uint8_t chunk[65536];
        while (vega_websocket_send(ws, VEGA_WS_BINARY, chunk, sizeof chunk, DL(10000)) == 0) {
        }
    }
    for (; !drop && !flood;) {
        vega_websocket_msg m;
        int rc = vega_websocket_recv(ws, &m, DL(10000));
        if (rc < 0) {
            VCHECK_EQ(rc, VEGA_ERR_CLOSED);
            break;
        }
        if (ping)
            VCHECK_EQ(vega_websocket_ping(ws, "srv", 3, DL(5000)), 0);
        VCHECK_EQ(vega_websocket_send(ws, m.type, m.data, m.len, DL(10000)), 0);
        if (close_first)
            VCHECK_EQ(vega_websocket_close(ws, 4001, "bye", 3, DL(5000)), 0);
    }
    vega_websocket_free(ws);
    return 0;
}

/* A scripted server instead: reads the request head, answers resp (with the right accept
 * key where it says %s), then holds the connection until the client closes it. */
struct script {
    const char *resp;
};

struct hook {
    vega_http_server *srv;
    vega_tls_config *server_tls;
    const struct script *script; /* non-NULL: the scripted server */
    unsigned calls;
    vega_task *tasks[MAX_CONNS];
    char last_req[4096];
};

struct serve_arg {
    struct hook *h;
    vega_stream *s;
};

static void scripted(struct hook *h, vega_stream *s)
{
    char buf[4096];
    size_t have = 0;
    while (have < sizeof buf - 1) {
        vega_ssize n = vega_stream_read(s, buf + have, sizeof buf - 1 - have, DL(5000));
        VCHECK(n > 0);
        have += (size_t)n;
        buf[have] = 0;
        if (strstr(buf, "\r\n\r\n"))
            break;
    }
    snprintf(h->last_req, sizeof h->last_req, "%s", buf);
    const char *k = strcasestr(buf, "\r\nSec-WebSocket-Key: ");
    VCHECK(k);
    char acc[VEGA_WS_ACCEPT_LEN + 1];
    VCHECK_EQ(vega_ws_handshake_accept(k + 21, VEGA_WS_KEY_LEN, acc), 0);
    /* "%s" in the script is where the right accept key goes */
    char out[1024];
    const char *at = strstr(h->script->resp, "%s");
    int n = at ? snprintf(out, sizeof out, "%.*s%s%s", (int)(at - h->script->resp), h->script->resp,
                          acc, at + 2)
               : snprintf(out, sizeof out, "%s", h->script->resp);
    VCHECK_EQ(vega_stream_write(s, out, (size_t)n, NULL, DL(5000)), n);
    while (vega_stream_read(s, buf, sizeof buf, DL(5000)) > 0) {
    }
    vega_stream_close(s, 0);
}

static void *serve_task(void *arg)
{
    struct serve_arg *a = arg;
    if (a->h->script)
        scripted(a->h, a->s);
    else
        vega_http_server_serve(a->h->srv, a->s, NULL, NULL);
    free(a);
    return NULL;
}

static int hook_fn(void *user, const char *host, uint16_t port, bool tls, vega_stream **out,
                   vega_deadline dl)
{
    (void)host, (void)port, (void)tls, (void)dl;
    struct hook *h = user;
    VCHECK(h->calls < MAX_CONNS);
    vega_stream *cli, *srv_end;
    VCHECK_EQ(vega_duplex_new(&cli, &srv_end, 0), 0);
    struct serve_arg *a = malloc(sizeof *a);
    VCHECK(a);
    a->h = h;
    a->s = srv_end;
    if (h->server_tls)
        VCHECK_EQ(vega_tls_stream_new(&a->s, srv_end, h->server_tls, NULL), 0);
    VCHECK_EQ(vega_task_spawn(&h->tasks[h->calls++], serve_task, a), 0);
    *out = cli;
    return 0;
}

/* h2ws: the server speaks HTTP/2 (h2c by prior knowledge, h2 by ALPN) with RFC 8441 on (1) or
 * off (0); -1: no vega_http_server_set_h2 call. */
static vega_http_client *hook_init_h2(struct hook *h, vega_tls_config *server_tls,
                                      vega_tls_config *client_tls, const struct script *script,
                                      int h2ws)
{
    memset(h, 0, sizeof *h);
    vega_http_server_opts so;
    vega_http_server_opts_init(&so);
    so.handler = ws_handler;
    VCHECK_EQ(vega_http_server_new(&h->srv, &so), 0);
    if (h2ws >= 0) {
        vega_http_server_h2_opts ho;
        vega_http_server_h2_opts_init(&ho);
        ho.h2c = true;
        ho.websocket = h2ws == 1;
        VCHECK_EQ(vega_http_server_set_h2(h->srv, &ho), 0);
    }
    h->server_tls = server_tls;
    h->script = script;
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.connect = hook_fn;
    o.connect_user = h;
    o.tls = client_tls;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    return c;
}

static vega_http_client *hook_init(struct hook *h, vega_tls_config *server_tls,
                                   vega_tls_config *client_tls, const struct script *script)
{
    return hook_init_h2(h, server_tls, client_tls, script, -1);
}

static void hook_fini(struct hook *h, vega_http_client *c)
{
    vega_http_client_free(c);
    for (unsigned i = 0; i < h->calls; i++)
        VCHECK_EQ(vega_task_join(h->tasks[i], NULL, DL(5000)), 0);
    vega_http_server_free(h->srv);
}

static void conversation_v(vega_http_client *c, const char *url, bool deflate, int version)
{
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    o.version = version;
    o.trace = trace_req;
    last_head[0] = '\0';
    o.ws.deflate.enabled = deflate;
    o.ws.deflate.client_no_context_takeover = deflate;
    static const char *const protos[] = {"chat", "other"};
    o.ws.subprotocols = protos;
    o.ws.nsubprotocols = 2;
    vega_websocket *ws;
    VCHECK_EQ(vega_websocket_connect(c, url, &o, &ws, DL(10000)), 0);
    /* RFC 8441 §4 over HTTP/2 (shown as HTTP/1.1 would write it), else RFC 6455 §4.1 */
    if (version == VEGA_HTTP_CLIENT_V2) {
        VCHECK(strncmp(last_head, "CONNECT /", 9) == 0);
        VCHECK(strstr(last_head, " HTTP/2\r\n"));
        VCHECK(strstr(last_head, "\r\n:protocol: websocket\r\n"));
        VCHECK(strstr(last_head, "\r\nsec-websocket-version: 13\r\n"));
        VCHECK(!strcasestr(last_head, "sec-websocket-key"));
    } else {
        VCHECK(strncmp(last_head, "GET /", 5) == 0);
        VCHECK(strcasestr(last_head, "\r\nSec-WebSocket-Key: "));
    }
    VCHECK_STR(vega_websocket_get_subprotocol(ws), "chat");
    VCHECK_EQ(vega_websocket_is_compressed(ws), deflate);
    echo_one(ws, VEGA_WS_TEXT, "hello", 5);
    echo_one(ws, VEGA_WS_TEXT, "", 0);
    echo_one(ws, VEGA_WS_BINARY, "\x00\xff\x01", 3);
    /* 200 KB: several 64 KiB fragments each way (inflated across them with deflate) */
    size_t big = 200 * 1000;
    char *p = malloc(big);
    VCHECK(p);
    for (size_t i = 0; i < big; i++)
        p[i] = (char)('a' + (i * 7 + i / 1000) % 26);
    echo_one(ws, VEGA_WS_TEXT, p, big);
    free(p);
    VCHECK_EQ(vega_websocket_ping(ws, "cli", 3, DL(5000)), 0);
    echo_one(ws, VEGA_WS_BINARY, "after ping", 10);
    close_normally(ws);
    vega_websocket_free(ws);
}

static void conversation(vega_http_client *c, const char *url, bool deflate)
{
    conversation_v(c, url, deflate, 0);
}

VTEST_MT(echo_plain_and_deflate, 2)
{
    struct hook h;
    vega_http_client *c = hook_init(&h, NULL, NULL, NULL);
    conversation(c, "ws://example.test/echo", false);
    conversation(c, "ws://example.test/echo", true);
    VCHECK_EQ(h.calls, 2); /* a fresh connection each */
    hook_fini(&h, c);
}

VTEST_MT(echo_over_tls, 2)
{
    vega_tls_config *st, *ct;
    VCHECK_EQ(vega_tls_config_new(&st, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_use_selfsigned(st), 0);
    VCHECK_EQ(vega_tls_config_new(&ct, VEGA_TLS_CLIENT), 0);
    VCHECK_EQ(vega_tls_config_set_verify(ct, VEGA_TLS_VERIFY_NONE), 0);
    struct hook h;
    vega_http_client *c = hook_init(&h, st, ct, NULL);
    conversation(c, "wss://example.test/echo", true);
    hook_fini(&h, c);
    vega_tls_config_free(st);
    vega_tls_config_free(ct);
}

/* The server pings before each echo and closes first with 4001: the client answers both. */
VTEST_MT(server_ping_and_close, 2)
{
    struct hook h;
    vega_http_client *c = hook_init(&h, NULL, NULL, NULL);
    vega_websocket *ws;
    VCHECK_EQ(vega_websocket_connect(c, "ws://example.test/ping", NULL, &ws, DL(5000)), 0);
    VCHECK_STR(vega_websocket_get_subprotocol(ws), "");
    VCHECK(!vega_websocket_is_compressed(ws));
    echo_one(ws, VEGA_WS_TEXT, "one", 3);
    echo_one(ws, VEGA_WS_TEXT, "two", 3);
    close_normally(ws);
    vega_websocket_free(ws);
    VCHECK_EQ(vega_websocket_connect(c, "http://example.test/close4001", NULL, &ws, DL(5000)), 0);
    echo_one(ws, VEGA_WS_TEXT, "x", 1);
    vega_websocket_msg m;
    VCHECK_EQ(vega_websocket_recv(ws, &m, DL(5000)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_websocket_get_close_code(ws), 4001);
    VCHECK_EQ(vega_websocket_send(ws, VEGA_WS_TEXT, "late", 4, DL(5000)), VEGA_ERR_CLOSED);
    vega_websocket_free(ws);
    hook_fini(&h, c);
}

/* Over loopback TCP with the server's own listener: the client's DNS-free path (an IP). */
VTEST_MT(echo_over_tcp, 2)
{
    vega_http_server_opts so;
    vega_http_server_opts_init(&so);
    so.handler = ws_handler;
    vega_http_server *srv;
    VCHECK_EQ(vega_http_server_new(&srv, &so), 0);
    vega_addr a, bound;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_http_server_listen(srv, &a, 0, &bound), 0);
    vega_task *run;
    VCHECK_EQ(vega_task_spawn(&run, (void *(*)(void *))(void *)vega_http_server_run, srv), 0);
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, NULL), 0);
    char url[64];
    snprintf(url, sizeof url, "ws://127.0.0.1:%u/echo", vega_addr_port(&bound));
    conversation(c, url, true);
    vega_http_client_free(c);
    vega_http_server_shutdown(srv, DL(2000));
    VCHECK_EQ(vega_task_join(run, NULL, DL(5000)), 0);
    vega_http_server_free(srv);
}

/* 403: VEGA_ERR_WS_STATUS, with the response for the caller. */
VTEST_MT(refused_status, 2)
{
    struct hook h;
    vega_http_client *c = hook_init(&h, NULL, NULL, NULL);
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    vega_http_client_response *r = NULL;
    o.refused = &r;
    vega_websocket *ws = (vega_websocket *)&o; /* must be cleared */
    VCHECK_EQ(vega_websocket_connect(c, "ws://example.test/refuse", &o, &ws, DL(5000)),
              VEGA_ERR_WS_STATUS);
    VCHECK(ws == NULL);
    VCHECK(r != NULL);
    VCHECK_EQ(vega_http_client_response_info(r)->status, 403);
    char body[8];
    VCHECK_EQ(vega_http_client_response_read(r, body, sizeof body, DL(5000)), 2);
    vega_http_client_response_free(r);
    /* without o.refused the response is dropped */
    VCHECK_EQ(vega_websocket_connect(c, "ws://example.test/refuse", NULL, &ws, DL(5000)),
              VEGA_ERR_WS_STATUS);
    hook_fini(&h, c);
}

static int scripted_connect(const char *resp, const vega_websocket_connect_opts *o, char *req_out,
                            size_t req_cap)
{
    struct script s = {resp};
    struct hook h;
    vega_http_client *c = hook_init(&h, NULL, NULL, &s);
    vega_websocket *ws = NULL;
    int rc = vega_websocket_connect(c, "ws://example.test/s", o, &ws, DL(5000));
    if (rc == 0)
        vega_websocket_free(ws);
    if (req_out)
        snprintf(req_out, req_cap, "%s", h.last_req);
    hook_fini(&h, c);
    return rc;
}

#define R101 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"

/* §4.1: each check of the 101 fails the connection. */
VTEST_MT(handshake_failures, 2)
{
    char req[4096];
    /* a valid one passes, and the request is as RFC 6455 §4.1 says */
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    o.ws.deflate.enabled = true;
    o.ws.deflate.server_no_context_takeover = true;
    o.ws.deflate.client_no_context_takeover = true;
    o.ws.deflate.server_max_window_bits = 10;
    o.ws.deflate.client_max_window_bits = 12;
    static const char *const protos[] = {"chat"};
    o.ws.subprotocols = protos;
    o.ws.nsubprotocols = 1;
    static const vega_http_field extra[] = {{{"Origin", 6}, {"http://example.test", 19}}};
    o.fields = extra;
    o.nfields = 1;
    VCHECK_EQ(scripted_connect(R101 "Sec-WebSocket-Accept: %s\r\n\r\n", &o, req, sizeof req), 0);
    VCHECK(strncmp(req, "GET /s HTTP/1.1\r\n", 17) == 0);
    VCHECK(strcasestr(req, "\r\nUpgrade: websocket\r\n"));
    VCHECK(strcasestr(req, "\r\nConnection: Upgrade\r\n"));
    VCHECK(strcasestr(req, "\r\nSec-WebSocket-Version: 13\r\n"));
    VCHECK(strcasestr(req, "\r\nSec-WebSocket-Protocol: chat\r\n"));
    VCHECK(strcasestr(req, "\r\nOrigin: http://example.test\r\n"));
    VCHECK(strcasestr(req, "\r\nHost: example.test\r\n"));
    const char *e = strcasestr(req, "\r\nSec-WebSocket-Extensions: permessage-deflate");
    VCHECK(e);
    VCHECK(strstr(e, "server_no_context_takeover") && strstr(e, "client_no_context_takeover") &&
           strstr(e, "server_max_window_bits=10") && strstr(e, "client_max_window_bits=12"));
    /* two connects send two different keys */
    char req2[4096];
    VCHECK_EQ(scripted_connect(R101 "Sec-WebSocket-Accept: %s\r\n\r\n", NULL, req2, sizeof req2),
              0);
    VCHECK(strcmp(strcasestr(req, "Sec-WebSocket-Key:"), strcasestr(req2, "Sec-WebSocket-Key:")));
    /* a wrong accept key */
    VCHECK_EQ(scripted_connect(R101 "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
                               NULL, NULL, 0),
              VEGA_ERR_WS_HANDSHAKE);
    /* none, or two */
    VCHECK_EQ(scripted_connect(R101 "\r\n", NULL, NULL, 0), VEGA_ERR_WS_HANDSHAKE);
    VCHECK_EQ(scripted_connect(R101 "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Accept: x\r\n\r\n",
                               NULL, NULL, 0),
              VEGA_ERR_WS_HANDSHAKE);
    /* no Upgrade, no Connection */
    VCHECK_EQ(scripted_connect("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                               "Sec-WebSocket-Accept: %s\r\n\r\n",
                               NULL, NULL, 0),
              VEGA_ERR_WS_HANDSHAKE);
    VCHECK_EQ(scripted_connect("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                               "Sec-WebSocket-Accept: %s\r\n\r\n",
                               NULL, NULL, 0),
              VEGA_ERR_WS_HANDSHAKE);
    /* an extension we did not offer (RFC 6455 §4.1 item 5) */
    VCHECK_EQ(scripted_connect(R101 "Sec-WebSocket-Accept: %s\r\n"
                                    "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
                               NULL, NULL, 0),
              VEGA_ERR_WS_HANDSHAKE);
    VCHECK_EQ(scripted_connect(R101 "Sec-WebSocket-Accept: %s\r\n"
                                    "Sec-WebSocket-Extensions: x-webkit-deflate-frame\r\n\r\n",
                               &o, NULL, 0),
              VEGA_ERR_WS_HANDSHAKE);
    /* parameters that fail RFC 7692 §7.1: an unknown one, a duplicate, a bad value */
    vega_websocket_connect_opts plain;
    vega_websocket_connect_opts_init(&plain);
    plain.ws.deflate.enabled = true;
    static const char *const bad_params[] = {"x_foo",
                                             "server_no_context_takeover; "
                                             "server_no_context_takeover",
                                             "client_max_window_bits=7"};
    for (size_t i = 0; i < 3; i++) {
        char resp[256];
        snprintf(resp, sizeof resp,
                 R101 "Sec-WebSocket-Accept: %%s\r\nSec-WebSocket-Extensions: "
                      "permessage-deflate; %s\r\n\r\n",
                 bad_params[i]);
        VCHECK_EQ(scripted_connect(resp, &plain, NULL, 0), VEGA_ERR_WS_HANDSHAKE);
    }
    /* and a valid answer to the same offer passes, with what it says */
    VCHECK_EQ(scripted_connect(R101 "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Extensions: "
                                    "permessage-deflate; client_max_window_bits=9\r\n\r\n",
                               &plain, NULL, 0),
              0);
    /* a subprotocol we did not offer, or one when we offered none (§4.1 item 6) */
    VCHECK_EQ(scripted_connect(R101
                               "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: soap\r\n\r\n",
                               &o, NULL, 0),
              VEGA_ERR_WS_HANDSHAKE);
    VCHECK_EQ(scripted_connect(R101
                               "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: chat\r\n\r\n",
                               NULL, NULL, 0),
              VEGA_ERR_WS_HANDSHAKE);
    /* a 101 when we asked for an upgrade is accepted; a 200 is a refusal */
    VCHECK_EQ(scripted_connect("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", NULL, NULL, 0),
              VEGA_ERR_WS_STATUS);
}

VTEST_CT(bad_arguments)
{
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, NULL), 0);
    vega_websocket *ws;
    VCHECK_EQ(vega_websocket_connect(NULL, "ws://x/", NULL, &ws, DL(100)), -EINVAL);
    VCHECK_EQ(vega_websocket_connect(c, NULL, NULL, &ws, DL(100)), -EINVAL);
    VCHECK_EQ(vega_websocket_connect(c, "ftp://x/", NULL, &ws, DL(100)), VEGA_ERR_HTTP_SCHEME);
    VCHECK_EQ(vega_websocket_connect(c, "nonsense", NULL, &ws, DL(100)), VEGA_ERR_HTTP_URL);
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    static const vega_http_field own[] = {{{"Sec-WebSocket-Key", 17}, {"x", 1}}};
    o.fields = own;
    o.nfields = 1;
    VCHECK_EQ(vega_websocket_connect(c, "ws://x/", &o, &ws, DL(100)), -EINVAL);
    vega_websocket_connect_opts_init(&o);
    static const char *const bad[] = {"a b"};
    o.ws.subprotocols = bad;
    o.ws.nsubprotocols = 1;
    VCHECK_EQ(vega_websocket_connect(c, "ws://x/", &o, &ws, DL(100)), -EINVAL);
    vega_websocket_connect_opts_init(&o);
    o.ws.deflate.enabled = true;
    o.ws.deflate.client_max_window_bits = 7;
    VCHECK_EQ(vega_websocket_connect(c, "ws://x/", &o, &ws, DL(100)), -EINVAL);
    VCHECK_EQ(vega_websocket_connect_versioned(c, "ws://x/", NULL, &ws, DL(100), 99), -EINVAL);
    vega_http_client_free(c);
}

/* ---- RFC 8441: WebSocket over HTTP/2 ------------------------------------------------------- */

/* Extended CONNECT over h2c (prior knowledge), plain and with permessage-deflate: both
 * WebSockets and a plain request share one connection (RFC 8441 §1: many WebSockets and
 * requests on one HTTP/2 connection). */
VTEST_MT(h2_echo_shares_the_connection, 2)
{
    struct hook h;
    vega_http_client *c = hook_init_h2(&h, NULL, NULL, NULL, 1);
    conversation_v(c, "ws://example.test/echo", false, VEGA_HTTP_CLIENT_V2);
    conversation_v(c, "ws://example.test/echo", true, VEGA_HTTP_CLIENT_V2);
    vega_http_client_request req;
    vega_http_client_request_init(&req);
    req.url = "http://example.test/plain";
    req.version = VEGA_HTTP_CLIENT_V2_PRIOR;
    req.deadline = DL(5000);
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &req, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->version, VEGA_HTTP_CLIENT_V2);
    VCHECK_EQ(vega_http_client_response_info(r)->status, 403);
    vega_http_client_response_free(r);
    VCHECK_EQ(h.calls, 1);
    hook_fini(&h, c);
}

/* Over TLS with ALPN h2; the server's ping and its Close (4001) come over the stream. */
VTEST_MT(h2_echo_over_tls, 2)
{
    vega_tls_config *st, *ct;
    VCHECK_EQ(vega_tls_config_new(&st, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_use_selfsigned(st), 0);
    static const char *const salpn[] = {"h2", "http/1.1"};
    VCHECK_EQ(vega_tls_config_set_alpn(st, salpn, 2), 0);
    VCHECK_EQ(vega_tls_config_new(&ct, VEGA_TLS_CLIENT), 0);
    VCHECK_EQ(vega_tls_config_set_verify(ct, VEGA_TLS_VERIFY_NONE), 0);
    /* a caller's config offers what it says (the client's own offers h2 and http/1.1) */
    static const char *const alpn[] = {"h2"};
    VCHECK_EQ(vega_tls_config_set_alpn(ct, alpn, 1), 0);
    struct hook h;
    vega_http_client *c = hook_init_h2(&h, st, ct, NULL, 1);
    conversation_v(c, "wss://example.test/echo", true, VEGA_HTTP_CLIENT_V2);
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    o.version = VEGA_HTTP_CLIENT_V2;
    vega_websocket *ws;
    VCHECK_EQ(vega_websocket_connect(c, "wss://example.test/close4001", &o, &ws, DL(5000)), 0);
    echo_one(ws, VEGA_WS_TEXT, "x", 1);
    vega_websocket_msg m;
    VCHECK_EQ(vega_websocket_recv(ws, &m, DL(5000)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_websocket_get_close_code(ws), 4001);
    vega_websocket_free(ws);
    VCHECK_EQ(h.calls, 1);
    hook_fini(&h, c);
    vega_tls_config_free(st);
    vega_tls_config_free(ct);
}

/* A caller's TLS config that offers h2 to the default (HTTP/1.1) handshake: ALPN picks h2, and
 * the WebSocket goes as an extended CONNECT on it (it used to be -ENOTSUP). */
VTEST_MT(h2_by_alpn_of_a_callers_config, 2)
{
    vega_tls_config *st, *ct;
    VCHECK_EQ(vega_tls_config_new(&st, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_use_selfsigned(st), 0);
    VCHECK_EQ(vega_tls_config_new(&ct, VEGA_TLS_CLIENT), 0);
    VCHECK_EQ(vega_tls_config_set_verify(ct, VEGA_TLS_VERIFY_NONE), 0);
    static const char *const alpn[] = {"h2", "http/1.1"};
    VCHECK_EQ(vega_tls_config_set_alpn(ct, alpn, 2), 0);
    VCHECK_EQ(vega_tls_config_set_alpn(st, alpn, 2), 0);
    struct hook h;
    vega_http_client *c = hook_init_h2(&h, st, ct, NULL, 1);
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    o.trace = trace_req;
    vega_websocket *ws;
    VCHECK_EQ(vega_websocket_connect(c, "wss://example.test/echo", &o, &ws, DL(5000)), 0);
    VCHECK(strncmp(last_head, "CONNECT /echo HTTP/2\r\n", 22) == 0);
    echo_one(ws, VEGA_WS_TEXT, "over h2", 7);
    close_normally(ws);
    vega_websocket_free(ws);
    hook_fini(&h, c);
    vega_tls_config_free(st);
    vega_tls_config_free(ct);
}

/* The server's handler ends without a Close: its END_STREAM is the end of the byte stream
 * (close code 1006); a 403 is a refusal with the response. */
VTEST_MT(h2_end_stream_and_refusal, 2)
{
    struct hook h;
    vega_http_client *c = hook_init_h2(&h, NULL, NULL, NULL, 1);
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    o.version = VEGA_HTTP_CLIENT_V2;
    vega_websocket *ws;
    VCHECK_EQ(vega_websocket_connect(c, "ws://example.test/drop", &o, &ws, DL(5000)), 0);
    vega_websocket_msg m;
    VCHECK_EQ(vega_websocket_recv(ws, &m, DL(5000)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_websocket_get_close_code(ws), 1006);
    vega_websocket_free(ws);
    vega_http_client_response *r = NULL;
    o.refused = &r;
    VCHECK_EQ(vega_websocket_connect(c, "ws://example.test/refuse", &o, &ws, DL(5000)),
              VEGA_ERR_WS_STATUS);
    VCHECK(ws == NULL && r != NULL);
    VCHECK_EQ(vega_http_client_response_info(r)->status, 403);
    VCHECK_EQ(vega_http_client_response_info(r)->version, VEGA_HTTP_CLIENT_V2);
    char body[8];
    VCHECK_EQ(vega_http_client_response_read(r, body, sizeof body, DL(5000)), 2);
    vega_http_client_response_free(r);
    VCHECK_EQ(h.calls, 1);
    hook_fini(&h, c);
}

/* A server without SETTINGS_ENABLE_CONNECT_PROTOCOL: -ENOTSUP (nothing was sent), or with
 * h1_fallback the HTTP/1.1 Upgrade on a connection of its own. */
VTEST_MT(h2_server_without_the_setting, 2)
{
    struct hook h;
    vega_http_client *c = hook_init_h2(&h, NULL, NULL, NULL, 0);
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    o.version = VEGA_HTTP_CLIENT_V2;
    vega_websocket *ws = NULL;
    VCHECK_EQ(vega_websocket_connect(c, "ws://example.test/echo", &o, &ws, DL(5000)), -ENOTSUP);
    VCHECK(ws == NULL);
    o.h1_fallback = true;
    VCHECK_EQ(vega_websocket_connect(c, "ws://example.test/echo", &o, &ws, DL(5000)), 0);
    echo_one(ws, VEGA_WS_TEXT, "fell back", 9);
    close_normally(ws);
    vega_websocket_free(ws);
    VCHECK_EQ(h.calls, 2); /* the HTTP/2 one (kept), then the HTTP/1.1 one */
    hook_fini(&h, c);
}

/* A WebSocket whose reader stalls holds only its own stream's window: the server's flood on it
 * stops there, and another WebSocket on the same connection echoes meanwhile. Then the stalled
 * one is dropped (its stream reset) and the connection still serves. */
VTEST_MT(h2_stalled_reader_stalls_only_its_stream, 2)
{
    struct hook h;
    vega_http_client *c = hook_init_h2(&h, NULL, NULL, NULL, 1);
    vega_websocket_connect_opts o;
    vega_websocket_connect_opts_init(&o);
    o.version = VEGA_HTTP_CLIENT_V2;
    vega_websocket *flood, *ws;
    VCHECK_EQ(vega_websocket_connect(c, "ws://example.test/flood", &o, &flood, DL(5000)), 0);
    VCHECK_EQ(vega_websocket_connect(c, "ws://example.test/echo", &o, &ws, DL(5000)), 0);
    /* a few MB through the echo while the flood's stream sits full */
    size_t big = 256 * 1024;
    char *p = malloc(big);
    VCHECK(p);
    memset(p, 'q', big);
    for (int i = 0; i < 12; i++)
        echo_one(ws, VEGA_WS_BINARY, p, big);
    free(p);
    /* the flood's first message is there to read */
    vega_websocket_msg m;
    VCHECK_EQ(vega_websocket_recv(flood, &m, DL(5000)), 0);
    VCHECK_EQ(m.len, 65536);
    vega_websocket_free(flood);
    echo_one(ws, VEGA_WS_TEXT, "still", 5);
    close_normally(ws);
    vega_websocket_free(ws);
    VCHECK_EQ(h.calls, 1);
    hook_fini(&h, c);
}

/* Layout 1 of vega_websocket_connect_opts (before version and h1_fallback) still works. */
VTEST_MT(connect_opts_layout_1, 2)
{
    struct hook h;
    vega_http_client *c = hook_init(&h, NULL, NULL, NULL);
    union {
        vega_websocket_connect_opts o;
        uint8_t raw[sizeof(vega_websocket_connect_opts)];
    } u;
    memset(&u, 0xa5, sizeof u); /* what a layout-1 caller never wrote */
    vega_websocket_connect_opts_init_versioned(&u.o, 1);
    vega_websocket *ws;
    VCHECK_EQ(vega_websocket_connect_versioned(c, "ws://example.test/echo", &u.o, &ws, DL(5000), 1),
              0);
    echo_one(ws, VEGA_WS_TEXT, "v1", 2);
    close_normally(ws);
    vega_websocket_free(ws);
    hook_fini(&h, c);
}
