/* SPDX-License-Identifier: MIT */
/* WebSockets over HTTP/2 (RFC 8441) in the server, against the HTTP/2 core as a client over
 * loopback: SETTINGS_ENABLE_CONNECT_PROTOCOL only when asked (§3); an extended CONNECT answered
 * 200 without Sec-WebSocket-Accept, subprotocol and permessage-deflate negotiated as over
 * HTTP/1.1 (§5); frames both ways as the stream's DATA while another stream of the connection
 * is served; the client's Close answered and the stream ended (END_STREAM); the client's
 * END_STREAM read as end of stream (1006) and its RST_STREAM as an abort; a CONNECT without
 * Sec-WebSocket-Version is not a WebSocket. The same handler serves HTTP/1.1 (ws_test.c). */
#include "h2_test_util.h"

#include <vega/websocket.h>

static const uint8_t mkey[4] = {0x0f, 0xa1, 0x5c, 0x33};

/* A masked client frame (RFC 6455 §5.2) of a small payload into out; returns its length. */
static size_t frame(uint8_t *out, uint8_t b0, const void *p, size_t len)
{
    VCHECK(len < 126);
    out[0] = b0;
    out[1] = (uint8_t)(0x80 | len);
    memcpy(out + 2, mkey, 4);
    for (size_t i = 0; i < len; i++)
        out[6 + i] = (uint8_t)(((const uint8_t *)p)[i] ^ mkey[i & 3]);
    return 6 + len;
}

/* ---- the handler: what vega-serve --ws-echo does ----------------------------------------- */

static atomic_int hw_accepted, hw_done, hw_echoed, hw_end_rc, hw_close_code;
static atomic_bool hw_compressed;

static int ws_handler(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *r = vega_http_exchange_request(x);
    if (!vega_http_str_eq(r->path, "/ws"))
        return vega_http_respond(x, 200, NULL, 0, "plain", 5, DL(5000));
    if (!vega_http_exchange_is_websocket(x))
        return vega_http_respond(x, 426, NULL, 0, "no", 2, DL(5000));
    vega_websocket_opts o;
    vega_websocket_opts_init(&o);
    o.deflate.enabled = true;
    static const char *const protos[] = {"superchat"};
    o.subprotocols = protos;
    o.nsubprotocols = 1;
    vega_websocket *ws;
    VCHECK_EQ(vega_http_exchange_accept_websocket(x, &o, &ws, DL(5000)), 0);
    atomic_fetch_add(&hw_accepted, 1);
    atomic_store(&hw_compressed, vega_websocket_is_compressed(ws));
    int rc;
    for (;;) {
        vega_websocket_msg m;
        rc = vega_websocket_recv(ws, &m, DL(10000));
        if (rc < 0)
            break;
        rc = vega_websocket_send(ws, m.type, m.data, m.len, DL(10000));
        if (rc < 0)
            break;
        atomic_fetch_add(&hw_echoed, 1);
    }
    atomic_store(&hw_end_rc, rc);
    atomic_store(&hw_close_code, (int)vega_websocket_get_close_code(ws));
    vega_websocket_free(ws);
    atomic_fetch_add(&hw_done, 1);
    return 0;
}

static void start(struct ts *t, bool websocket)
{
    atomic_store(&hw_accepted, 0);
    atomic_store(&hw_done, 0);
    atomic_store(&hw_echoed, 0);
    atomic_store(&hw_end_rc, 0);
    atomic_store(&hw_close_code, 0);
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = ws_handler;
    vega_http_server_h2_opts h = ts_h2c();
    h.websocket = websocket;
    ts_start(t, &o, &h);
}

static bool settings_in(struct tc *c, const void *arg)
{
    (void)arg;
    vega_h2_conn_info info;
    vega_h2_conn_get_info(c->h2, &info);
    return info.local_settings_acked;
}

/* Opens the WebSocket: an extended CONNECT (RFC 8441 §4) with the extra fields. */
static struct tc_stream *ws_open(struct tc *c, const char *const *extra)
{
    vega_hpack_field f[16];
    size_t n = 0;
    f[n++] = (vega_hpack_field){{":method", 7}, {"CONNECT", 7}, 0};
    f[n++] = (vega_hpack_field){{":protocol", 9}, {"websocket", 9}, 0};
    f[n++] = (vega_hpack_field){{":scheme", 7}, {"http", 4}, 0};
    f[n++] = (vega_hpack_field){{":authority", 10}, {"test", 4}, 0};
    f[n++] = (vega_hpack_field){{":path", 5}, {"/ws", 3}, 0};
    for (size_t i = 0; extra && extra[i] && n < 16; i += 2)
        f[n++] = (vega_hpack_field){
            {extra[i], strlen(extra[i])}, {extra[i + 1], strlen(extra[i + 1])}, 0};
    struct tc_stream *s = &c->st[c->n];
    memset(s, 0, sizeof *s);
    int32_t id;
    VCHECK_EQ(vega_h2_submit_request(c->h2, f, n, 0, NULL, &id), 0);
    s->id = id;
    c->n++;
    return s;
}

static bool has_status(struct tc *c, const void *arg)
{
    (void)c;
    const struct tc_stream *s = arg;
    return s->status != 0 || s->closed;
}

/* The body holds at least n bytes. */
struct want {
    const struct tc_stream *s;
    size_t n;
};
static bool body_has(struct tc *c, const void *arg)
{
    (void)c;
    const struct want *w = arg;
    return w->s->body_len >= w->n || w->s->closed;
}

static bool ended(struct tc *c, const void *arg)
{
    (void)c;
    const struct tc_stream *s = arg;
    return s->ended || s->closed;
}

static void send_frame(struct tc *c, struct tc_stream *s, uint8_t b0, const void *p, size_t len)
{
    uint8_t f[256];
    size_t n = frame(f, b0, p, len);
    VCHECK_EQ(vega_h2_stream_write(c->h2, s->id, f, n, 0), (vega_ssize)n);
}

/* Waits (5 s at most) until *v reaches n. */
static bool wait_for(atomic_int *v, int n)
{
    vega_deadline dl = DL(5000);
    while (atomic_load(v) < n) {
        if (vega_now() >= dl)
            return false;
        vega_sleep_ms(2);
    }
    return true;
}

/* RFC 8441 §3: the setting is sent only by a server that will take extended CONNECT. */
static void body_setting_only_when_asked(void)
{
    for (int on = 0; on < 2; on++) {
        struct ts t;
        start(&t, on);
        struct tc *c = tc_connect(&t.addr, NULL);
        VCHECK(tc_run(c, settings_in, NULL, 5000));
        vega_h2_conn_info info;
        vega_h2_conn_get_info(c->h2, &info);
        VCHECK_EQ(info.peer.enable_connect_protocol, (uint32_t)on);
        if (!on) {
            /* RFC 8441 §4: "A client MUST NOT send a CONNECT request with the :protocol
             * pseudo-header unless the server has sent SETTINGS_ENABLE_CONNECT_PROTOCOL" */
            vega_hpack_field f[] = {{{":method", 7}, {"CONNECT", 7}, 0},
                                    {{":protocol", 9}, {"websocket", 9}, 0},
                                    {{":scheme", 7}, {"http", 4}, 0},
                                    {{":authority", 10}, {"test", 4}, 0},
                                    {{":path", 5}, {"/ws", 3}, 0}};
            int32_t id;
            VCHECK_EQ(vega_h2_submit_request(c->h2, f, 5, 0, NULL, &id), -EOPNOTSUPP);
        }
        tc_free(c);
        ts_stop(&t, 1000);
    }
}
VTEST(setting_only_when_asked)
{
    vtest_run(body_setting_only_when_asked, 2);
}

/* RFC 8441 §5: 200, no Sec-WebSocket-Accept; frames as DATA; another stream served meanwhile;
 * the client's Close answered, then END_STREAM. */
static void body_echo_beside_other_streams(void)
{
    struct ts t;
    start(&t, true);
    struct tc *c = tc_connect(&t.addr, NULL);
    VCHECK(tc_run(c, settings_in, NULL, 5000));
    static const char *const extra[] = {"sec-websocket-version",
                                        "13",
                                        "sec-websocket-protocol",
                                        "chat, superchat",
                                        "sec-websocket-extensions",
                                        "permessage-deflate; client_max_window_bits",
                                        NULL};
    struct tc_stream *ws = ws_open(c, extra);
    VCHECK(tc_run(c, has_status, ws, 5000));
    VCHECK_EQ(ws->status, 200);
    VCHECK(!tc_head_has(ws, "sec-websocket-accept"));
    VCHECK(!tc_head_has(ws, "content-length"));
    VCHECK(tc_head_has(ws, "sec-websocket-protocol: superchat\n"));
    VCHECK(tc_head_has(ws, "sec-websocket-extensions: permessage-deflate"));

    /* an uncompressed text frame (RSV1 clear is allowed with permessage-deflate, RFC 7692 §6) */
    send_frame(c, ws, 0x81, "ping-pong", 9);
    struct want w = {ws, 2};
    VCHECK(tc_run(c, body_has, &w, 5000));
    /* a GET on the same connection while the WebSocket is open */
    struct tc_stream *get = tc_request(c, "GET", "/plain", NULL, NULL, 0);
    VCHECK(tc_run(c, tc_closed, get, 5000));
    VCHECK_EQ(get->status, 200);
    VCHECK_EQ(get->body_len, 5);
    VCHECK(!ws->ended && !ws->closed);
    /* the echo came back compressed (RSV1) as one frame */
    VCHECK(tc_run(c, body_has, &w, 5000));
    VCHECK_EQ(ws->body[0], 0xc1);
    size_t echo_len = 2 + (ws->body[1] & 0x7f);
    w.n = echo_len;
    VCHECK(tc_run(c, body_has, &w, 5000));
    /* the handler counts after its send returned, which may be after we have the echo */
    VCHECK(wait_for(&hw_echoed, 1));
    VCHECK(atomic_load(&hw_compressed)); /* stored before the handler's first recv */

    /* our Close (1000): echoed, then the server's side ends */
    uint8_t code[2] = {0x03, 0xe8};
    send_frame(c, ws, 0x88, code, 2);
    VCHECK(tc_run(c, ended, ws, 5000));
    VCHECK(ws->ended);
    VCHECK_EQ(ws->body_len, echo_len + 4);
    VCHECK_EQ(ws->body[echo_len], 0x88);
    VCHECK_EQ(ws->body[echo_len + 2], 0x03);
    VCHECK_EQ(ws->body[echo_len + 3], 0xe8);
    VCHECK(wait_for(&hw_done, 1));
    VCHECK_EQ(atomic_load(&hw_end_rc), VEGA_ERR_CLOSED);
    VCHECK_EQ(atomic_load(&hw_close_code), 1000);
    tc_free(c);
    ts_stop(&t, 1000);
}
VTEST(echo_beside_other_streams)
{
    vtest_run(body_echo_beside_other_streams, 2);
}

/* The client's END_STREAM without a Close is the TCP FIN of RFC 6455 (1006, RFC 8441 §5.2's
 * mapping); its RST_STREAM aborts (the handler's recv fails). Neither touches the connection. */
static void body_end_stream_and_reset(void)
{
    struct ts t;
    start(&t, true);
    struct tc *c = tc_connect(&t.addr, NULL);
    VCHECK(tc_run(c, settings_in, NULL, 5000));
    static const char *const extra[] = {"sec-websocket-version", "13", NULL};
    struct tc_stream *a = ws_open(c, extra);
    VCHECK(tc_run(c, has_status, a, 5000));
    VCHECK_EQ(a->status, 200);
    VCHECK(!tc_head_has(a, "sec-websocket-extensions"));
    VCHECK(!tc_head_has(a, "sec-websocket-protocol"));
    VCHECK_EQ(vega_h2_stream_write(c->h2, a->id, NULL, 0, VEGA_H2_FLAG_END_STREAM), 0);
    VCHECK(tc_run(c, ended, a, 5000));
    VCHECK(wait_for(&hw_done, 1));
    VCHECK_EQ(atomic_load(&hw_end_rc), VEGA_ERR_CLOSED);
    VCHECK_EQ(atomic_load(&hw_close_code), VEGA_WS_CLOSE_ABNORMAL);

    struct tc_stream *b = ws_open(c, extra);
    VCHECK(tc_run(c, has_status, b, 5000));
    VCHECK_EQ(b->status, 200);
    send_frame(c, b, 0x82, "\x01\x02", 2);
    struct want w = {b, 4};
    VCHECK(tc_run(c, body_has, &w, 5000));
    VCHECK_EQ(vega_h2_submit_rst_stream(c->h2, b->id, VEGA_H2_CANCEL), 0);
    VCHECK_EQ(tc_flush(c), 0);
    VCHECK(wait_for(&hw_done, 2));
    VCHECK_EQ(atomic_load(&hw_end_rc), -ECONNRESET);

    /* a CONNECT without Sec-WebSocket-Version is no WebSocket: the handler answers it */
    struct tc_stream *d = ws_open(c, NULL);
    VCHECK(tc_run(c, has_status, d, 5000));
    VCHECK_EQ(d->status, 426);
    struct tc_stream *get = tc_request(c, "GET", "/plain", NULL, NULL, 0);
    VCHECK(tc_run(c, tc_closed, get, 5000));
    VCHECK_EQ(get->status, 200);
    VCHECK_EQ(atomic_load(&hw_accepted), 2);
    tc_free(c);
    ts_stop(&t, 1000);
}
VTEST(end_stream_and_reset)
{
    vtest_run(body_end_stream_and_reset, 2);
}

/* API rules, ABI: a caller built against layout 1 (before websocket) has its prefix read and
 * websocket off; its init writes nothing past the prefix. */
static void body_layout_1(void)
{
    vega_http_server_h2_opts o;
    memset(&o, 0xab, sizeof o);
    vega_http_server_h2_opts_init_versioned(&o, 1);
    VCHECK_EQ(o.glitch_rate, 0);
    VCHECK_EQ(*(const uint8_t *)&o.websocket, 0xab);
    o.h2c = true;
    vega_http_server_opts so;
    vega_http_server_opts_init(&so);
    so.handler = ws_handler;
    vega_http_server *srv;
    VCHECK_EQ(vega_http_server_new(&srv, &so), 0);
    VCHECK_EQ(vega_http_server_set_h2_versioned(srv, &o, 1), 0);
    VCHECK_EQ(vega_http_server_set_h2_versioned(srv, &o, 3), -EINVAL);
    vega_addr a, bound;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_http_server_listen(srv, &a, 0, &bound), 0);
    struct ts t = {.srv = srv, .addr = bound};
    VCHECK_EQ(vega_task_spawn(&t.run, ts_run_task, srv), 0);
    struct tc *c = tc_connect(&t.addr, NULL);
    VCHECK(tc_run(c, settings_in, NULL, 5000));
    vega_h2_conn_info info;
    vega_h2_conn_get_info(c->h2, &info);
    VCHECK_EQ(info.peer.enable_connect_protocol, 0);
    tc_free(c);
    ts_stop(&t, 1000);
}
VTEST(layout_1)
{
    vtest_run(body_layout_1, 2);
}
