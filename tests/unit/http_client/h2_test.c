/* SPDX-License-Identifier: MIT */
/* The HTTP client over HTTP/2 against the library's own server (RFC 9113): h2c by prior
 * knowledge and h2 by ALPN, HTTP/1.1 when ALPN says so, one connection per origin carrying
 * concurrent requests (also when they start together), slots under the server's
 * SETTINGS_MAX_CONCURRENT_STREAMS, bodies both ways (memory, body_fn of unknown length, a file),
 * trailers, responses read slowly while others go on, a dropped response reset with CANCEL and
 * a deadline passing while the connection serves on. */
#include "../http_server/h2_test_util.h"

#include <pthread.h>

#include <vega/http_client.h>

static vega_tls_config *client_tls(const char *const *alpn, size_t n)
{
    vega_tls_config *cfg;
    VCHECK_EQ(vega_tls_config_new(&cfg, VEGA_TLS_CLIENT), 0);
    VCHECK_EQ(vega_tls_config_set_verify(cfg, VEGA_TLS_VERIFY_NONE), 0);
    VCHECK_EQ(vega_tls_config_set_alpn(cfg, alpn, n), 0);
    return cfg;
}

static vega_http_client *client_new(vega_tls_config *tls)
{
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.tls = tls;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    return c;
}

static void url_of(char *out, size_t cap, bool tls, const struct ts *t, const char *path)
{
    snprintf(out, cap, "%s://127.0.0.1:%u%s", tls ? "https" : "http", vega_addr_port(&t->addr),
             path);
}

/* One request: the response (for info), the body into *body (owned, NUL-terminated). */
static int fetch(vega_http_client *c, const char *url, int version, char **body, size_t *len,
                 vega_http_client_response **out)
{
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.version = version;
    rq.deadline = DL(10000);
    vega_http_client_response *r;
    int rc = vega_http_client_send(c, &rq, &r);
    if (rc < 0)
        return rc;
    void *b = NULL;
    vega_ssize n = vega_http_client_response_read_all(r, &b, 8 << 20, DL(10000));
    if (n < 0) {
        vega_http_client_response_free(r);
        return (int)n;
    }
    *body = b;
    *len = (size_t)n;
    *out = r;
    return 0;
}

static void start_h2c(struct ts *t, uint32_t max_streams)
{
    ts_make_file();
    vega_http_server_opts o = ts_opts();
    o.on_log = NULL; /* HTTP/1.1 requests come too */
    vega_http_server_h2_opts h = ts_h2c();
    h.max_concurrent_streams = max_streams;
    ts_start(t, &o, &h);
}

/* ---- h2c by prior knowledge ------------------------------------------------------------------ */

VTEST_CT(h2c_prior_knowledge)
{
    struct ts t;
    start_h2c(&t, 0);
    vega_http_client *c = client_new(NULL);
    char url[128], *body;
    size_t len;
    vega_http_client_response *r;
    url_of(url, sizeof url, false, &t, "/info?x=1");
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2_PRIOR, &body, &len, &r), 0);
    const vega_http_client_info *in = vega_http_client_response_info(r);
    VCHECK_EQ(in->status, 200);
    VCHECK_EQ(in->version, 20);
    VCHECK(in->alpn == NULL);
    VCHECK(!in->reused);
    VCHECK_EQ(in->stream_id, 1);
    VCHECK(strstr(body, "GET /info q=x=1") != NULL);
    VCHECK(strstr(body, " v=20 seq=0 tls=0") != NULL);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    /* the next one on the same connection: stream 3 */
    url_of(url, sizeof url, false, &t, "/hello");
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2_PRIOR, &body, &len, &r), 0);
    in = vega_http_client_response_info(r);
    VCHECK(in->reused);
    VCHECK_EQ(in->stream_id, 3);
    VCHECK_EQ(len, 8);
    VCHECK_STR(body, "hello h2");
    const vega_http_field *ct = vega_http_fields_get(in->fields, "content-type", 12);
    VCHECK(ct != NULL && ct->value.len == 10);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    /* version 20 on http:// takes the HTTP/2 connection the origin already has */
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2, &body, &len, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->version, 20);
    VCHECK_EQ(vega_http_client_response_info(r)->stream_id, 5);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    /* HTTP/1.1 asked for: a connection of its own */
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V11, &body, &len, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->version, 11);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    VCHECK_EQ(ts_stats(&t).conns_accepted, 2);
    vega_http_client_free(c);
    ts_stop(&t, 2000);
}

/* ---- h2c Upgrade ----------------------------------------------------------------------------- */

VTEST_CT(h2c_upgrade)
{
    struct ts t;
    start_h2c(&t, 0);
    vega_http_client *c = client_new(NULL);
    char url[128], *body;
    size_t len;
    vega_http_client_response *r;
    url_of(url, sizeof url, false, &t, "/big");
    /* RFC 7540 §3.2: the request goes as HTTP/1.1 with Upgrade: h2c, the answer on stream 1 */
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2, &body, &len, &r), 0);
    const vega_http_client_info *in = vega_http_client_response_info(r);
    VCHECK_EQ(in->status, 200);
    VCHECK_EQ(in->version, 20);
    VCHECK_EQ(in->stream_id, 1);
    VCHECK(!in->reused);
    VCHECK_EQ(len, 1 << 20);
    for (size_t i = 0; i < len; i++)
        VCHECK_EQ((uint8_t)body[i], ts_pattern(i));
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    /* then the connection is an HTTP/2 one like any other */
    url_of(url, sizeof url, false, &t, "/info");
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2, &body, &len, &r), 0);
    in = vega_http_client_response_info(r);
    VCHECK(in->reused);
    VCHECK_EQ(in->stream_id, 3);
    VCHECK(strstr(body, " v=20 ") != NULL);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    VCHECK_EQ(ts_stats(&t).conns_accepted, 1);
    vega_http_client_free(c);
    ts_stop(&t, 2000);

    /* a server that does not speak h2c answers the request as HTTP/1.1 */
    ts_make_file();
    vega_http_server_opts o = ts_opts();
    o.on_log = NULL;
    ts_start(&t, &o, NULL);
    c = client_new(NULL);
    url_of(url, sizeof url, false, &t, "/info");
    for (int i = 0; i < 2; i++) {
        VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2, &body, &len, &r), 0);
        VCHECK_EQ(vega_http_client_response_info(r)->version, 11);
        VCHECK_EQ(vega_http_client_response_info(r)->reused, i == 1);
        vega_http_client_body_free(c, body);
        vega_http_client_response_free(r);
    }
    vega_http_client_free(c);
    ts_stop(&t, 2000);
}

/* ---- h2 over TLS by ALPN --------------------------------------------------------------------- */

static void start_tls(struct ts *t, bool h2)
{
    vega_tls_config *scfg;
    VCHECK_EQ(vega_tls_config_new(&scfg, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_use_selfsigned(scfg), 0);
    vega_http_server_opts o = ts_opts();
    o.tls = scfg;
    o.on_log = NULL;
    vega_http_server_h2_opts ho;
    vega_http_server_h2_opts_init(&ho);
    ho.disable = !h2;
    ts_start(t, &o, &ho);
    vega_tls_config_free(scfg);
}

VTEST_CT(tls_alpn)
{
    static const char *const both[] = {"h2", "http/1.1"}, *const h1[] = {"http/1.1"};
    struct ts t;
    start_tls(&t, true);
    vega_tls_config *cb = client_tls(both, 2), *c1 = client_tls(h1, 1);
    vega_http_client *c = client_new(cb);
    char url[128], *body;
    size_t len;
    vega_http_client_response *r;
    url_of(url, sizeof url, true, &t, "/info");
    /* version 0 on https: h2 when the server takes it */
    VCHECK_EQ(fetch(c, url, 0, &body, &len, &r), 0);
    const vega_http_client_info *in = vega_http_client_response_info(r);
    VCHECK_EQ(in->version, 20);
    VCHECK_STR(in->alpn, "h2");
    VCHECK(in->tls_version != NULL);
    VCHECK(in->t_tls >= in->t_connect && in->t_connect > 0);
    VCHECK(strstr(body, " v=20 seq=0 tls=1") != NULL);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2, &body, &len, &r), 0);
    VCHECK(vega_http_client_response_info(r)->reused);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    /* HTTP/1.1 asked for, but this config offers h2 and the server takes it: h2 is spoken, on a
     * connection of its own that later requests share */
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V11, &body, &len, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->version, 20);
    VCHECK(!vega_http_client_response_info(r)->reused);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    /* a config that offers http/1.1 only */
    c = client_new(c1);
    VCHECK_EQ(fetch(c, url, 0, &body, &len, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->version, 11);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    ts_stop(&t, 2000);

    /* a server without HTTP/2: ALPN gives http/1.1, and the request goes over it */
    start_tls(&t, false);
    c = client_new(cb);
    url_of(url, sizeof url, true, &t, "/info");
    for (int i = 0; i < 2; i++) {
        VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2, &body, &len, &r), 0);
        in = vega_http_client_response_info(r);
        VCHECK_EQ(in->version, 11);
        VCHECK_STR(in->alpn, "http/1.1");
        VCHECK_EQ(in->reused, i == 1); /* the HTTP/1.1 connection was pooled */
        vega_http_client_body_free(c, body);
        vega_http_client_response_free(r);
    }
    vega_http_client_free(c);
    ts_stop(&t, 2000);
    vega_tls_config_free(cb);
    vega_tls_config_free(c1);
}

/* ---- many requests, one connection ----------------------------------------------------------- */

struct par {
    vega_http_client *c;
    const char *url;
    int rc;
    bool reused;
    char body[16];
};

static void *par_task(void *arg)
{
    struct par *p = arg;
    char *body;
    size_t len;
    vega_http_client_response *r;
    p->rc = fetch(p->c, p->url, VEGA_HTTP_CLIENT_V2_PRIOR, &body, &len, &r);
    if (p->rc == 0) {
        p->reused = vega_http_client_response_info(r)->reused;
        snprintf(p->body, sizeof p->body, "%s", body);
        vega_http_client_body_free(p->c, body);
        vega_http_client_response_free(r);
    }
    return NULL;
}

/* n requests started together to /slow, which answers only once `want` of them are inside at
 * once: they all end only if they ran concurrently. */
static void run_parallel(struct ts *t, vega_http_client *c, int n, int want, int want_fresh)
{
    char url[128];
    url_of(url, sizeof url, false, t, "/slow");
    atomic_store(&ts_entered, 0);
    atomic_store(&ts_slow_want, want);
    struct par p[32];
    vega_task *tk[32];
    VCHECK(n <= 32);
    for (int i = 0; i < n; i++) {
        p[i] = (struct par){.c = c, .url = url, .rc = 1};
        VCHECK_EQ(vega_task_spawn(&tk[i], par_task, &p[i]), 0);
    }
    int fresh = 0;
    for (int i = 0; i < n; i++) {
        VCHECK_EQ(vega_task_join(tk[i], NULL, DL(20000)), 0);
        VCHECK_EQ(p[i].rc, 0);
        VCHECK_STR(p[i].body, "slow");
        fresh += !p[i].reused;
    }
    VCHECK_EQ(fresh, want_fresh); /* one made the connection, the others joined it */
}

VTEST_MT(concurrent_one_connection, 2)
{
    struct ts t;
    start_h2c(&t, 0);
    vega_http_client *c = client_new(NULL);
    run_parallel(&t, c, 20, 20, 1);
    VCHECK_EQ(ts_stats(&t).conns_accepted, 1);
    vega_http_client_free(c);
    ts_stop(&t, 2000);
}

VTEST_CT(stream_limit_waits)
{
    /* the server allows 3 streams at once: 12 requests take turns on one connection */
    struct ts t;
    start_h2c(&t, 3);
    vega_http_client *c = client_new(NULL);
    char url[128], *body;
    size_t len;
    vega_http_client_response *r;
    url_of(url, sizeof url, false, &t, "/hello"); /* the SETTINGS arrive first */
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2_PRIOR, &body, &len, &r), 0);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    run_parallel(&t, c, 12, 3, 0);
    VCHECK_EQ(ts_stats(&t).conns_accepted, 1);
    vega_http_client_free(c);
    ts_stop(&t, 2000);
}

/* ---- bodies ---------------------------------------------------------------------------------- */

struct gen {
    size_t left, off;
};

static vega_ssize gen_fn(void *user, void *buf, size_t len)
{
    struct gen *g = user;
    size_t n = g->left < len ? g->left : len;
    if (n > 5000)
        n = 5000;
    for (size_t i = 0; i < n; i++)
        ((uint8_t *)buf)[i] = ts_pattern(g->off + i);
    g->off += n;
    g->left -= n;
    return (vega_ssize)n;
}

static void check_echo(vega_http_client *c, vega_http_client_request *rq, size_t n)
{
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, rq, &r), 0);
    const vega_http_client_info *in = vega_http_client_response_info(r);
    VCHECK_EQ(in->status, 200);
    VCHECK_EQ(in->trailers->count, 0); /* until the end */
    void *b;
    VCHECK_EQ(vega_http_client_response_read_all(r, &b, 4 << 20, DL(10000)), (vega_ssize)n);
    for (size_t i = 0; i < n; i++)
        VCHECK_EQ(((uint8_t *)b)[i], ts_pattern(i));
    const vega_http_field *x = vega_http_fields_get(in->trailers, "x-length", 8);
    char want[24];
    snprintf(want, sizeof want, "%zu", n);
    VCHECK(x != NULL && x->value.len == strlen(want) && !memcmp(x->value.ptr, want, x->value.len));
    vega_http_client_body_free(c, b);
    vega_http_client_response_free(r);
}

VTEST_CT(bodies_and_trailers)
{
    struct ts t;
    start_h2c(&t, 0);
    vega_http_client *c = client_new(NULL);
    char url[128];
    url_of(url, sizeof url, false, &t, "/echo");
    size_t n = 700000; /* past the initial windows both ways */
    uint8_t *mem = malloc(n);
    for (size_t i = 0; i < n; i++)
        mem[i] = ts_pattern(i);
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.version = VEGA_HTTP_CLIENT_V2_PRIOR;
    rq.deadline = DL(20000);
    rq.body = mem;
    rq.body_len = n;
    check_echo(c, &rq, n);
    /* body_fn of unknown length: END_STREAM on an empty DATA frame */
    struct gen g = {.left = 300000};
    rq.body = NULL;
    rq.body_fn = gen_fn;
    rq.body_user = &g;
    rq.body_length = VEGA_HTTP_LENGTH_UNKNOWN;
    check_echo(c, &rq, 300000);
    /* a known length */
    g = (struct gen){.left = 123457};
    rq.body_length = 123457;
    check_echo(c, &rq, 123457);
    /* a file */
    char path[] = "/tmp/vega-h2c-XXXXXX";
    int fd = mkstemp(path);
    VCHECK(fd >= 0);
    unlink(path);
    VCHECK_EQ(write(fd, mem, n), (ssize_t)n);
    rq.body_fn = NULL;
    rq.body_file = true;
    rq.body_fd = fd;
    rq.body_offset = 0;
    rq.body_length = 200000;
    check_echo(c, &rq, 200000);
    close(fd);
    free(mem);
    /* the chunked response's trailers */
    url_of(url, sizeof url, false, &t, "/chunked");
    char *body;
    size_t len;
    vega_http_client_response *r;
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2_PRIOR, &body, &len, &r), 0);
    VCHECK_STR(body, "one,two,three");
    const vega_http_field *x =
        vega_http_fields_get(vega_http_client_response_info(r)->trailers, "x-sum", 5);
    VCHECK(x != NULL && x->value.len == 2);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    VCHECK_EQ(ts_stats(&t).conns_accepted, 1);
    vega_http_client_free(c);
    ts_stop(&t, 2000);
}

/* ---- reading, dropping, deadlines ------------------------------------------------------------ */

static vega_http_client_response *open_get(vega_http_client *c, const char *url, vega_deadline dl)
{
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.version = VEGA_HTTP_CLIENT_V2_PRIOR;
    rq.deadline = dl;
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    return r;
}

VTEST_CT(slow_reader_cancel_and_deadline)
{
    struct ts t;
    start_h2c(&t, 0);
    vega_http_client *c = client_new(NULL);
    char big[128], hello[128], hang[128];
    url_of(big, sizeof big, false, &t, "/big");
    url_of(hello, sizeof hello, false, &t, "/hello");
    url_of(hang, sizeof hang, false, &t, "/hang");
    /* a 1 MiB response not read yet (its stream window fills) does not hold the others up */
    vega_http_client_response *slow = open_get(c, big, DL(20000));
    char *body;
    size_t len;
    vega_http_client_response *r;
    VCHECK_EQ(fetch(c, hello, VEGA_HTTP_CLIENT_V2_PRIOR, &body, &len, &r), 0);
    VCHECK_STR(body, "hello h2");
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    /* then it is read in small pieces, every byte in order */
    uint8_t buf[1000];
    size_t got = 0;
    for (;;) {
        vega_ssize n = vega_http_client_response_read(slow, buf, sizeof buf, DL(10000));
        VCHECK(n >= 0);
        if (n == 0)
            break;
        for (vega_ssize i = 0; i < n; i++)
            VCHECK_EQ(buf[i], ts_pattern(got + (size_t)i));
        got += (size_t)n;
    }
    VCHECK_EQ(got, 1 << 20);
    vega_http_client_response_free(slow);
    /* dropped after a few bytes: the stream is reset (CANCEL), the connection serves on */
    for (int i = 0; i < 3; i++) {
        r = open_get(c, big, DL(20000));
        VCHECK(vega_http_client_response_read(r, buf, 10, DL(10000)) > 0);
        vega_http_client_response_free(r);
    }
    /* a deadline passes while the server thinks: -ETIMEDOUT; the connection serves on */
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = hang;
    rq.version = VEGA_HTTP_CLIENT_V2_PRIOR;
    rq.deadline = DL(200);
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), -ETIMEDOUT);
    VCHECK_EQ(fetch(c, hello, VEGA_HTTP_CLIENT_V2_PRIOR, &body, &len, &r), 0);
    VCHECK(vega_http_client_response_info(r)->reused);
    VCHECK_STR(body, "hello h2");
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    VCHECK_EQ(ts_stats(&t).conns_accepted, 1);
    /* the reset /hang handler was cancelled */
    VCHECK(ts_wait_stat(&t, offsetof(vega_http_server_stats, conns_open), 1, 5000));
    vega_http_client_free(c);
    ts_stop(&t, 2000);
}

/* ---- HEAD, 204, 304, a failing handler ------------------------------------------------------- */

VTEST_CT(no_body_answers)
{
    struct ts t;
    start_h2c(&t, 0);
    vega_http_client *c = client_new(NULL);
    char url[128], *body;
    size_t len;
    vega_http_client_response *r;
    url_of(url, sizeof url, false, &t, "/204");
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2_PRIOR, &body, &len, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->status, 204);
    VCHECK_EQ(len, 0);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    url_of(url, sizeof url, false, &t, "/fail");
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2_PRIOR, &body, &len, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->status, 500);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    /* a body cut short: the server resets the stream */
    url_of(url, sizeof url, false, &t, "/short");
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.version = VEGA_HTTP_CLIENT_V2_PRIOR;
    vega_http_client_wire_error we;
    rq.wire_error = &we;
    /* (the head may not have gone out before the reset: then the send fails) */
    int rc = vega_http_client_send(c, &rq, &r);
    void *b;
    if (rc == 0) {
        VCHECK(vega_http_client_response_read_all(r, &b, 1000, DL(5000)) < 0);
        vega_http_client_response_get_error(r, &we);
        vega_http_client_response_free(r);
    } else {
        VCHECK_EQ(rc, -ECONNRESET);
    }
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_H2_STREAM);
    VCHECK(!we.local);
    url_of(url, sizeof url, false, &t, "/hello");
    rq.url = url;
    rq.method = "HEAD";
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->content_length, 8);
    VCHECK_EQ(vega_http_client_response_read_all(r, &b, 1000, DL(5000)), 0);
    vega_http_client_body_free(c, b);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    ts_stop(&t, 2000);
}

/* ---- a cancelled request task ---------------------------------------------------------------- */

struct hang {
    vega_http_client *c;
    const char *url;
    int rc;
};

static void *hang_task(void *arg)
{
    struct hang *h = arg;
    vega_http_client_response *r = NULL;
    h->rc = fetch(h->c, h->url, VEGA_HTTP_CLIENT_V2_PRIOR, &(char *){NULL}, &(size_t){0}, &r);
    return NULL;
}

VTEST_CT(cancelled_task_resets_its_stream)
{
    struct ts t;
    start_h2c(&t, 0);
    vega_http_client *c = client_new(NULL);
    char hang[128], hello[128];
    url_of(hang, sizeof hang, false, &t, "/hang");
    url_of(hello, sizeof hello, false, &t, "/hello");
    atomic_store(&ts_hang_live, 0);
    struct hang h = {c, hang, 1};
    vega_task *tk;
    VCHECK_EQ(vega_task_spawn(&tk, hang_task, &h), 0);
    /* once the server's handler runs, the request waits for its head: cancel it there */
    vega_deadline dl = DL(5000);
    while (atomic_load(&ts_hang_live) == 0 && vega_now() < dl)
        vega_sleep_ms(2);
    VCHECK_EQ(atomic_load(&ts_hang_live), 1);
    vega_task_cancel(tk);
    VCHECK_EQ(vega_task_join(tk, NULL, DL(5000)), 0);
    VCHECK_EQ(h.rc, -ECANCELED);
    /* the RST_STREAM (CANCEL) reaches the server, whose handler is cancelled in turn */
    dl = DL(5000);
    while (atomic_load(&ts_hang_live) != 0 && vega_now() < dl)
        vega_sleep_ms(2);
    VCHECK_EQ(atomic_load(&ts_hang_live), 0);
    char *body;
    size_t len;
    vega_http_client_response *r;
    VCHECK_EQ(fetch(c, hello, VEGA_HTTP_CLIENT_V2_PRIOR, &body, &len, &r), 0);
    VCHECK(vega_http_client_response_info(r)->reused);
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    VCHECK_EQ(ts_stats(&t).conns_accepted, 1);
    vega_http_client_free(c);
    ts_stop(&t, 2000);
}

/* ---- the frame tracer (vega_http_client_opts.h2_frame) -------------------------------------- */

struct frames {
    pthread_mutex_t mu;
    struct {
        vega_http_frame_dir dir;
        uint8_t type, flags;
        uint32_t stream, len, word; /* word: the first 4 payload bytes */
    } f[512];
    size_t n;
    bool bad; /* a frame whose payload bytes do not fit its length */
};

static void on_frame(void *user, const vega_http_h2_frame *fr)
{
    struct frames *fs = user;
    pthread_mutex_lock(&fs->mu);
    if (fr->payload_len != (fr->length < 8 ? fr->length : 8))
        fs->bad = true;
    if (fs->n < 512) {
        fs->f[fs->n].dir = fr->dir;
        fs->f[fs->n].type = fr->type;
        fs->f[fs->n].flags = fr->flags;
        fs->f[fs->n].stream = fr->stream_id;
        fs->f[fs->n].len = fr->length;
        fs->f[fs->n].word = fr->payload_len >= 4
                                ? (uint32_t)fr->payload[0] << 24 | (uint32_t)fr->payload[1] << 16 |
                                      (uint32_t)fr->payload[2] << 8 | fr->payload[3]
                                : 0;
        fs->n++;
    }
    pthread_mutex_unlock(&fs->mu);
}

/* Index of the first frame from `from` of this direction and type (and stream, unless ~0u). */
static size_t find_frame(struct frames *fs, size_t from, vega_http_frame_dir dir, uint8_t type,
                         uint32_t stream)
{
    for (size_t i = from; i < fs->n; i++)
        if (fs->f[i].dir == dir && fs->f[i].type == type &&
            (stream == ~0u || fs->f[i].stream == stream))
            return i;
    return SIZE_MAX;
}

/* Every frame both ways, in order, with its header read across the reads' boundaries: the
 * client's SETTINGS first (after the preface), its HEADERS on stream 1 (END_HEADERS and
 * END_STREAM), the server's SETTINGS and our ACK, the response's HEADERS and its DATA, whose
 * lengths add up to the body's; nothing is traced without the hook. */
VTEST_CT(h2_frames_traced_both_ways)
{
    struct ts t;
    start_h2c(&t, 0);
    static struct frames fs = {.mu = PTHREAD_MUTEX_INITIALIZER};
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.h2_frame = on_frame;
    o.h2_frame_user = &fs;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    char url[128], *body;
    size_t len;
    vega_http_client_response *r;
    url_of(url, sizeof url, false, &t, "/file");
    VCHECK_EQ(fetch(c, url, VEGA_HTTP_CLIENT_V2_PRIOR, &body, &len, &r), 0);
    VCHECK(len > 100000); /* several DATA frames, several reads */
    vega_http_client_body_free(c, body);
    vega_http_client_response_free(r);
    vega_http_client_free(c); /* the tasks end: every frame is in */
    pthread_mutex_lock(&fs.mu);
    VCHECK(!fs.bad);
    VCHECK(fs.n >= 6);
    VCHECK_EQ(fs.f[0].dir, VEGA_HTTP_FRAME_OUT);
    VCHECK_EQ(fs.f[0].type, 4); /* SETTINGS */
    VCHECK_EQ(fs.f[0].stream, 0);
    VCHECK_EQ(fs.f[0].flags & 1, 0);
    size_t h = find_frame(&fs, 0, VEGA_HTTP_FRAME_OUT, 1, 1);
    VCHECK(h != SIZE_MAX);
    VCHECK_EQ(fs.f[h].flags & 0x5, 0x5); /* END_HEADERS | END_STREAM */
    size_t ss = find_frame(&fs, 0, VEGA_HTTP_FRAME_IN, 4, 0);
    VCHECK(ss != SIZE_MAX);
    VCHECK_EQ(fs.f[ss].flags & 1, 0);
    bool acked = false;
    for (size_t i = 0; i < fs.n; i++)
        acked |= fs.f[i].dir == VEGA_HTTP_FRAME_OUT && fs.f[i].type == 4 && (fs.f[i].flags & 1) &&
                 fs.f[i].len == 0;
    VCHECK(acked);
    size_t rh = find_frame(&fs, 0, VEGA_HTTP_FRAME_IN, 1, 1);
    VCHECK(rh != SIZE_MAX);
    uint64_t data = 0;
    bool ended = false;
    for (size_t i = rh; i < fs.n; i++)
        if (fs.f[i].dir == VEGA_HTTP_FRAME_IN && fs.f[i].type == 0 && fs.f[i].stream == 1) {
            VCHECK(!ended);
            data += fs.f[i].len;
            ended = fs.f[i].flags & 1;
        }
    VCHECK(ended);
    VCHECK_EQ(data, (uint64_t)len);
    /* a WINDOW_UPDATE's increment is its first word */
    size_t wu = find_frame(&fs, 0, VEGA_HTTP_FRAME_OUT, 8, ~0u);
    VCHECK(wu != SIZE_MAX);
    VCHECK(fs.f[wu].word > 0 && fs.f[wu].len == 4);
    pthread_mutex_unlock(&fs.mu);
    ts_stop(&t, 2000);
}
