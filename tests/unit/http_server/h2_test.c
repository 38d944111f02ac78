/* SPDX-License-Identifier: MIT */
/* The HTTP server over HTTP/2 (RFC 9113), end to end on loopback with the HTTP/2 core as the
 * client: the same handler as for HTTP/1.1 answers through the same exchange (heads, bodies both
 * ways, trailers, files, HEAD/204/304, a failing handler, a cut-short body); ALPN h2 over TLS,
 * prior knowledge and "Upgrade: h2c" in cleartext; the options. */
#include <stddef.h>
#include <sys/socket.h>

#include "h2_test_util.h"

/* Every response a GET-style test wants, over one connection c. */
static void check_basics(struct tc *c, bool tls)
{
    static const char *const ua[] = {"user-agent", "vtest", NULL};
    struct tc_stream *hello = tc_request(c, "GET", "/hello", ua, NULL, 0);
    struct tc_stream *info = tc_request(c, "GET", "/info?x=1", NULL, NULL, 0);
    struct tc_stream *head = tc_request(c, "HEAD", "/hello", NULL, NULL, 0);
    struct tc_stream *s204 = tc_request(c, "GET", "/204", NULL, NULL, 0);
    struct tc_stream *s304 = tc_request(c, "GET", "/304", NULL, NULL, 0);
    struct tc_stream *fail = tc_request(c, "GET", "/fail", NULL, NULL, 0);
    struct tc_stream *fields = tc_request(c, "GET", "/fields", NULL, NULL, 0);
    struct tc_stream *chunked = tc_request(c, "GET", "/chunked", NULL, NULL, 0);
    struct tc_stream *file = tc_request(c, "GET", "/file", NULL, NULL, 0);
    struct tc_stream *small = tc_request(c, "GET", "/small-file", NULL, NULL, 0);
    struct tc_stream *shrt = tc_request(c, "GET", "/short", NULL, NULL, 0);
    struct tc_stream *none = tc_request(c, "GET", "/nothing", NULL, NULL, 0);
    VCHECK(tc_run(c, tc_all_closed, NULL, 10000));

    VCHECK_EQ(hello->status, 200);
    VCHECK_STR((char *)hello->body, "hello h2");
    VCHECK(tc_head_has(hello, "content-type: text/plain\n"));
    VCHECK(tc_head_has(hello, "content-length: 8\n"));
    VCHECK(tc_head_has(hello, "server: vega-test\n"));
    VCHECK(tc_head_has(hello, "date: "));
    VCHECK_EQ(hello->how, VEGA_H2_CLOSE_DONE);

    char want[256];
    snprintf(want, sizeof want, "GET /info q=x=1 a=test v=20 seq=1 tls=%d body=0 len=0", tls);
    VCHECK_STR((char *)info->body, want);

    VCHECK_EQ(head->status, 200);
    VCHECK_EQ(head->body_len, 0);
    VCHECK(tc_head_has(head, "content-length: 8\n"));
    VCHECK_EQ(s204->status, 204);
    VCHECK(!tc_head_has(s204, "content-length"));
    VCHECK_EQ(s304->status, 304);
    VCHECK_EQ(fail->status, 500);
    VCHECK_STR((char *)fail->body, "internal server error\n");

    /* names lowered; connection-specific fields dropped (RFC 9113 §8.2) */
    VCHECK_EQ(fields->status, 200);
    VCHECK(tc_head_has(fields, "x-upper: Yes\n"));
    VCHECK(tc_head_has(fields, "set-cookie: a=1\n"));
    VCHECK(!tc_head_has(fields, "keep-alive"));
    VCHECK_STR((char *)fields->body, "abc");

    VCHECK_EQ(chunked->status, 200);
    VCHECK_STR((char *)chunked->body, "one,two,three");
    VCHECK(!tc_head_has(chunked, "content-length"));
    VCHECK_STR(chunked->trailers, "x-sum: 13\n");
    VCHECK_EQ(chunked->how, VEGA_H2_CLOSE_DONE);

    VCHECK(ts_body_is_pattern(file, FILE_LEN));
    VCHECK(ts_body_is_pattern(small, 1000));

    /* a body cut short cannot end well: the stream is reset (RFC 9113 §8.1.1); its head went
     * out or not, depending on whether the connection wrote before the reset */
    VCHECK(shrt->status == 0 || shrt->status == 200);
    VCHECK_EQ(shrt->how, VEGA_H2_CLOSE_RESET_BY_PEER);
    VCHECK_EQ(shrt->code, VEGA_H2_INTERNAL_ERROR);
    VCHECK_EQ(none->status, 404);
}

static void body_prior_knowledge(void)
{
    ts_make_file();
    atomic_store(&ts_logged, 0);
    struct ts t;
    vega_http_server_opts o = ts_opts();
    vega_http_server_h2_opts h = ts_h2c();
    ts_start(&t, &o, &h);
    struct tc *c = tc_connect(&t.addr, NULL);
    check_basics(c, false);

    /* a request body both ways, larger than every initial window */
    size_t n = 300000;
    uint8_t *up = malloc(n);
    for (size_t i = 0; i < n; i++)
        up[i] = ts_pattern(i);
    static const char *const ct[] = {"content-type", "application/octet-stream", NULL};
    struct tc_stream *echo = tc_request(c, "POST", "/echo", ct, up, n);
    struct tc_stream *info = tc_request(c, "POST", "/info", NULL, "abc", 3);
    /* an empty body: a DATA frame of its own that carries END_STREAM alone */
    struct tc_stream *empty = tc_request(c, "POST", "/echo", ct, "", 0);
    VCHECK(tc_run(c, tc_all_closed, NULL, 10000));
    VCHECK_EQ(echo->status, 200);
    VCHECK(ts_body_is_pattern(echo, n));
    VCHECK_STR(echo->trailers, "x-length: 300000\n");
    VCHECK(strstr((char *)info->body, "POST /info") != NULL);
    VCHECK(strstr((char *)info->body, "body=1 len=-1") != NULL);
    VCHECK_EQ(empty->status, 200);
    VCHECK_EQ(empty->body_len, 0);
    VCHECK_STR(empty->trailers, "x-length: 0\n");
    free(up);
    tc_free(c);
    VCHECK(ts_wait_stat(&t, offsetof(vega_http_server_stats, requests), 15, 2000));
    ts_stop(&t, 1000);
    VCHECK_EQ(atomic_load(&ts_logged), 15);
    close(ts_file_fd);
}
VTEST(prior_knowledge)
{
    vtest_run(body_prior_knowledge, 2);
}
VTEST(prior_knowledge_current_thread)
{
    vtest_run(body_prior_knowledge, 0);
}

/* ---- TLS ------------------------------------------------------------------------------------- */

static vega_tls_config *client_cfg(const char *const *alpn, size_t n)
{
    vega_tls_config *ccfg;
    VCHECK_EQ(vega_tls_config_new(&ccfg, VEGA_TLS_CLIENT), 0);
    VCHECK_EQ(vega_tls_config_set_verify(ccfg, VEGA_TLS_VERIFY_NONE), 0);
    VCHECK_EQ(vega_tls_config_set_alpn(ccfg, alpn, n), 0);
    return ccfg;
}

/* An HTTP/1.1 GET over s; returns the first line of the answer (static). */
static const char *h1_get(vega_stream *s)
{
    static char buf[4096];
    static const char req[] = "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n";
    VCHECK_EQ(vega_stream_write(s, req, sizeof req - 1, NULL, DL(5000)),
              (vega_ssize)sizeof req - 1);
    size_t got = 0;
    while (got < sizeof buf - 1 && !memmem(buf, got, "hello h2", 8)) {
        vega_ssize k = vega_stream_read(s, buf + got, sizeof buf - 1 - got, DL(5000));
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    buf[got] = 0;
    char *eol = strstr(buf, "\r\n");
    if (eol)
        *eol = 0;
    return buf;
}

static void body_tls(void)
{
    ts_make_file();
    vega_tls_config *scfg;
    VCHECK_EQ(vega_tls_config_new(&scfg, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_use_selfsigned(scfg), 0);
    struct ts t;
    vega_http_server_opts o = ts_opts();
    o.tls = scfg;
    o.on_log = NULL;        /* HTTP/1.1 too */
    ts_start(&t, &o, NULL); /* HTTP/2 over TLS is the default */
    vega_tls_config_free(scfg);
    static const char *const both[] = {"h2", "http/1.1"};
    vega_tls_config *c2 = client_cfg(both, 2);
    struct tc *c = tc_connect_tls(&t.addr, c2);
    check_basics(c, true);
    tc_free(c);

    /* a client that offers http/1.1 alone still gets HTTP/1.1 */
    static const char *const h1[] = {"http/1.1"};
    vega_tls_config *c1 = client_cfg(h1, 1);
    vega_sock *sk;
    VCHECK_EQ(vega_tcp_connect(&sk, &t.addr, DL(5000)), 0);
    vega_stream *s;
    VCHECK_EQ(vega_tls_stream_from_sock(&s, sk, 0, c1, NULL), 0);
    VCHECK_STR(h1_get(s), "HTTP/1.1 200 OK");
    VCHECK_STR(vega_tls_get_alpn(s), "http/1.1");
    vega_stream_close(s, DL(1000));
    ts_stop(&t, 1000);

    /* HTTP/2 off: ALPN offers http/1.1 alone */
    VCHECK_EQ(vega_tls_config_new(&scfg, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_use_selfsigned(scfg), 0);
    o.tls = scfg;
    vega_http_server_h2_opts off;
    vega_http_server_h2_opts_init(&off);
    off.disable = true;
    ts_start(&t, &o, &off);
    vega_tls_config_free(scfg);
    VCHECK_EQ(vega_tcp_connect(&sk, &t.addr, DL(5000)), 0);
    VCHECK_EQ(vega_tls_stream_from_sock(&s, sk, 0, c2, NULL), 0);
    VCHECK_STR(h1_get(s), "HTTP/1.1 200 OK");
    VCHECK_STR(vega_tls_get_alpn(s), "http/1.1");
    vega_stream_close(s, DL(1000));
    ts_stop(&t, 1000);
    vega_tls_config_free(c1);
    vega_tls_config_free(c2);
    close(ts_file_fd);
}
VTEST(tls)
{
    vtest_run(body_tls, 2);
}

/* ---- cleartext without h2c, and Upgrade: h2c ------------------------------------------------- */

static vega_stream *raw_connect(const vega_addr *a)
{
    vega_sock *sk;
    VCHECK_EQ(vega_tcp_connect(&sk, a, DL(5000)), 0);
    vega_stream *s;
    VCHECK_EQ(vega_stream_from_sock(&s, sk, 0), 0);
    return s;
}

static size_t read_until(vega_stream *s, char *buf, size_t cap, const char *needle)
{
    size_t got = 0;
    buf[0] = 0;
    while (got < cap - 1 && !strstr(buf, needle)) {
        vega_ssize k = vega_stream_read(s, buf + got, cap - 1 - got, DL(5000));
        if (k <= 0)
            break;
        got += (size_t)k;
        buf[got] = 0;
    }
    return got;
}

/* Upgrade's stream 1 as the frames that come back, read by hand: the client core knows no
 * stream it did not open. Returns the DATA payload of stream 1 (static). */
struct up_frames {
    char head[1024];
    char body[256];
    size_t body_len;
    bool end;
};

static int up_field(void *ud, const vega_hpack_field *f)
{
    struct up_frames *u = ud;
    size_t l = strlen(u->head);
    snprintf(u->head + l, sizeof u->head - l, "%.*s: %.*s\n", (int)f->name.len, f->name.ptr,
             (int)f->value.len, f->value.ptr ? f->value.ptr : "");
    return 0;
}

static void read_stream1(vega_stream *s, struct up_frames *u, const char *first, size_t nfirst)
{
    vega_hpack_decoder *d;
    VCHECK_EQ(vega_hpack_decoder_new(&d, NULL), 0);
    size_t cap = 65536;
    uint8_t *buf = malloc(cap); /* not on the task's stack */
    memcpy(buf, first, nfirst);
    size_t have = nfirst;
    vega_deadline dl = DL(5000);
    while (!u->end && vega_now() < dl) {
        while (have >= 9) {
            size_t len = (size_t)buf[0] << 16 | (size_t)buf[1] << 8 | buf[2];
            if (have < 9 + len)
                break;
            uint8_t type = buf[3], flags = buf[4];
            uint32_t sid =
                (uint32_t)buf[5] << 24 | (uint32_t)buf[6] << 16 | (uint32_t)buf[7] << 8 | buf[8];
            if (type == 0x1) /* HEADERS (our server sends neither padding nor priority) */
                VCHECK_EQ(vega_hpack_decode(d, buf + 9, len, up_field, u), 0);
            if (type == 0x0 && sid == 1 && len < sizeof u->body - u->body_len) {
                memcpy(u->body + u->body_len, buf + 9, len);
                u->body_len += len;
            }
            if (sid == 1 && (flags & 0x1) && (type == 0x0 || type == 0x1))
                u->end = true;
            memmove(buf, buf + 9 + len, have - 9 - len);
            have -= 9 + len;
        }
        if (u->end)
            break;
        vega_ssize k = vega_stream_read(s, buf + have, cap - have, dl);
        if (k <= 0)
            break;
        have += (size_t)k;
    }
    free(buf);
    vega_hpack_decoder_free(d);
}

static void body_cleartext(void)
{
    struct ts t;
    vega_http_server_opts o = ts_opts();
    o.on_log = NULL;
    ts_start(&t, &o, NULL);
    /* no h2c: the preface is an HTTP/1.1 request with version 2.0, answered 505 */
    vega_stream *s = raw_connect(&t.addr);
    VCHECK_EQ(vega_stream_write(s, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24, NULL, DL(5000)), 24);
    char buf[4096];
    read_until(s, buf, sizeof buf, "\r\n\r\n");
    VCHECK(strncmp(buf, "HTTP/1.1 505 ", 13) == 0);
    vega_stream_close(s, DL(1000));
    /* nor an Upgrade */
    s = raw_connect(&t.addr);
    static const char up[] =
        "GET /hello HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\n"
        "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n";
    VCHECK_EQ(vega_stream_write(s, up, sizeof up - 1, NULL, DL(5000)), (vega_ssize)sizeof up - 1);
    read_until(s, buf, sizeof buf, "hello h2");
    VCHECK(strncmp(buf, "HTTP/1.1 200 OK", 15) == 0);
    vega_stream_close(s, DL(1000));
    ts_stop(&t, 1000);

    vega_http_server_h2_opts h = ts_h2c();
    ts_start(&t, &o, &h);
    /* Upgrade: h2c (RFC 7540 §3.2): 101, our SETTINGS, then stream 1's response */
    s = raw_connect(&t.addr);
    VCHECK_EQ(vega_stream_write(s, up, sizeof up - 1, NULL, DL(5000)), (vega_ssize)sizeof up - 1);
    size_t got = read_until(s, buf, sizeof buf, "\r\n\r\n");
    VCHECK(strncmp(buf, "HTTP/1.1 101 Switching Protocols\r\n", 34) == 0);
    VCHECK(strstr(buf, "Upgrade: h2c\r\n") != NULL);
    size_t hend = (size_t)(strstr(buf, "\r\n\r\n") + 4 - buf); /* then our SETTINGS */
    vega_h2_conn *cl;
    VCHECK_EQ(vega_h2_conn_client_new(&cl, &tc_cb, NULL, NULL), 0);
    uint8_t pre[256];
    vega_ssize pn = vega_h2_conn_write(cl, pre, sizeof pre, vega_now());
    VCHECK(pn > 24);
    VCHECK_EQ(vega_stream_write(s, pre, (size_t)pn, NULL, DL(5000)), pn);
    vega_h2_conn_free(cl);
    struct up_frames u;
    memset(&u, 0, sizeof u);
    read_stream1(s, &u, buf + hend, got - hend);
    VCHECK(u.end);
    VCHECK(strstr(u.head, ":status: 200\n") != NULL);
    VCHECK_EQ(u.body_len, 8);
    VCHECK(memcmp(u.body, "hello h2", 8) == 0);
    vega_stream_close(s, DL(1000));
    /* with a body, or without HTTP2-Settings: served as HTTP/1.1 */
    static const char *const plain[] = {
        "POST /info HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
        "HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\nContent-Length: 3\r\n\r\nabc",
        "GET /info HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
        "GET /info HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
        "HTTP2-Settings: A!\r\n\r\n",
    };
    for (size_t i = 0; i < 3; i++) {
        s = raw_connect(&t.addr);
        size_t l = strlen(plain[i]);
        VCHECK_EQ(vega_stream_write(s, plain[i], l, NULL, DL(5000)), (vega_ssize)l);
        read_until(s, buf, sizeof buf, " v=11 ");
        VCHECK(strncmp(buf, "HTTP/1.1 200 OK", 15) == 0);
        vega_stream_close(s, DL(1000));
    }
    ts_stop(&t, 1000);
}
VTEST(cleartext_and_upgrade)
{
    vtest_run(body_cleartext, 2);
}

/* ---- options --------------------------------------------------------------------------------- */

static void body_options(void)
{
    vega_http_server_opts o = ts_opts();
    vega_http_server *srv;
    VCHECK_EQ(vega_http_server_new(&srv, &o), 0);
    vega_http_server_h2_opts h;
    vega_http_server_h2_opts_init(&h);
    VCHECK_EQ(vega_http_server_set_h2_versioned(srv, &h, 99), -EINVAL);
    VCHECK_EQ(vega_http_server_set_h2(NULL, &h), -EINVAL);
    VCHECK_EQ(vega_http_server_set_h2(srv, NULL), -EINVAL);
    h.initial_window_size = 0x80000000u;
    VCHECK_EQ(vega_http_server_set_h2(srv, &h), -EINVAL);
    h.initial_window_size = 0;
    h.conn_window_max = 0x80000000u;
    VCHECK_EQ(vega_http_server_set_h2(srv, &h), -EINVAL);
    h.conn_window_max = 65535;
    VCHECK_EQ(vega_http_server_set_h2(srv, &h), 0);
    vega_http_server_free(srv);

    /* while running: -EBUSY */
    struct ts t;
    vega_http_server_h2_opts c = ts_h2c();
    ts_start(&t, &o, &c);
    vega_sleep_ms(20);
    VCHECK_EQ(vega_http_server_set_h2(t.srv, &c), -EBUSY);
    ts_stop(&t, 1000);

    /* a TLS config with its own ALPN list is left alone */
    vega_tls_config *scfg;
    VCHECK_EQ(vega_tls_config_new(&scfg, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_use_selfsigned(scfg), 0);
    static const char *const mine[] = {"http/1.1"};
    VCHECK_EQ(vega_tls_config_set_alpn(scfg, mine, 1), 0);
    o.tls = scfg;
    VCHECK_EQ(vega_http_server_new(&srv, &o), 0);
    vega_tls_config_free(scfg);
    vega_http_server_h2_opts off;
    vega_http_server_h2_opts_init(&off);
    off.disable = true;
    VCHECK_EQ(vega_http_server_set_h2(srv, &off), 0);
    vega_http_server_free(srv);
}
VTEST(options)
{
    vtest_run(body_options, 0);
}
