/* SPDX-License-Identifier: MIT */
/* The HTTP client's connect hook (vega_http_client_opts.connect): requests served over an
 * in-memory duplex by the real HTTP server, keep-alive reuse without a second call, what the
 * hook is told (lowercased host, port, TLS), https with TLS run by the client over the hook's
 * stream, and the hook's failures passed through. */
#include <errno.h>

#include <vega/http_server.h>
#include <vega/test.h>

#include "hc_util.h"

#define MAX_HOOK_CONNS 4

static int hello(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *r = vega_http_exchange_request(x);
    char b[256];
    int n = snprintf(b, sizeof b, "path=%.*s host=%.*s", (int)r->path.len, r->path.ptr,
                     r->authority.ptr ? (int)r->authority.len : 1,
                     r->authority.ptr ? r->authority.ptr : "-");
    return vega_http_respond(x, 200, NULL, 0, b, (size_t)n, DL(5000));
}

/* The hook's side: a server behind every duplex it makes, and what it was asked. */
struct hook {
    vega_http_server *srv;
    vega_tls_config *server_tls; /* NULL: plain */
    int result;                  /* returned instead of connecting when not 0 */
    bool no_stream;              /* return 0 without a stream (a broken hook) */
    unsigned calls;
    char host[64];
    uint16_t port;
    bool tls;
    vega_task *tasks[MAX_HOOK_CONNS];
};

struct serve_arg {
    vega_http_server *srv;
    vega_stream *s;
};

static void *serve_task(void *arg)
{
    struct serve_arg *a = arg;
    vega_http_server_serve(a->srv, a->s, NULL, NULL);
    free(a);
    return NULL;
}

static int hook_fn(void *user, const char *host, uint16_t port, bool tls, vega_stream **out,
                   vega_deadline dl)
{
    struct hook *h = user;
    VCHECK(dl > vega_now()); /* the connect deadline is passed on */
    h->calls++;
    snprintf(h->host, sizeof h->host, "%s", host);
    h->port = port;
    h->tls = tls;
    if (h->result)
        return h->result;
    if (h->no_stream)
        return 0;
    VCHECK(h->calls <= MAX_HOOK_CONNS);
    vega_stream *cli, *srv_end;
    VCHECK_EQ(vega_duplex_new(&cli, &srv_end, 0), 0);
    struct serve_arg *a = malloc(sizeof *a);
    VCHECK(a);
    a->srv = h->srv;
    a->s = srv_end;
    if (h->server_tls)
        VCHECK_EQ(vega_tls_stream_new(&a->s, srv_end, h->server_tls, NULL), 0);
    VCHECK_EQ(vega_task_spawn(&h->tasks[h->calls - 1], serve_task, a), 0);
    *out = cli;
    return 0;
}

static void hook_init(struct hook *h, vega_tls_config *server_tls)
{
    memset(h, 0, sizeof *h);
    vega_http_server_opts so;
    vega_http_server_opts_init(&so);
    so.handler = hello;
    VCHECK_EQ(vega_http_server_new(&h->srv, &so), 0);
    h->server_tls = server_tls;
}

/* After the client is freed (its connections closed), every served connection ends. */
static void hook_fini(struct hook *h)
{
    for (unsigned i = 0; i < MAX_HOOK_CONNS; i++)
        if (h->tasks[i])
            VCHECK_EQ(vega_task_join(h->tasks[i], NULL, DL(5000)), 0);
    vega_http_server_free(h->srv);
}

static vega_http_client *client_with(struct hook *h, vega_tls_config *tls)
{
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.connect = hook_fn;
    o.connect_user = h;
    o.tls = tls;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    return c;
}

static void body_plain(void)
{
    struct hook h;
    hook_init(&h, NULL);
    vega_http_client *c = client_with(&h, NULL);
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = "http://Example.TEST/a?x=1";
    vega_http_client_response *r;
    char body[256];
    VCHECK(hc_fetch(c, &rq, &r, body, sizeof body) > 0);
    VCHECK_STR(body, "path=/a host=Example.TEST"); /* Host as written in the URL */
    const vega_http_client_info *in = vega_http_client_response_info(r);
    VCHECK_EQ(in->status, 200);
    VCHECK(!in->reused);
    VCHECK_EQ(vega_addr_family(&in->peer), AF_UNSPEC); /* no address: the hook's stream */
    VCHECK(in->t_dns == 0 && in->t_connect >= in->t_start && in->t_sent >= in->t_connect);
    VCHECK_STR(h.host, "example.test"); /* lowercased, as the pool keys it */
    VCHECK_EQ(h.port, 80);
    VCHECK(!h.tls);
    vega_http_client_response_free(r);
    /* the connection went back to the pool: the next request does not call the hook */
    rq.url = "http://example.test/b";
    VCHECK(hc_fetch(c, &rq, &r, body, sizeof body) > 0);
    VCHECK_STR(body, "path=/b host=example.test");
    VCHECK(vega_http_client_response_info(r)->reused);
    VCHECK_EQ(h.calls, 1);
    vega_http_client_response_free(r);
    /* another origin is another connection */
    rq.url = "http://[::1]:8081/c";
    VCHECK(hc_fetch(c, &rq, &r, body, sizeof body) > 0);
    VCHECK_STR(body, "path=/c host=[::1]:8081");
    VCHECK_STR(h.host, "::1");
    VCHECK_EQ(h.port, 8081);
    VCHECK_EQ(h.calls, 2);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    hook_fini(&h);
}

VTEST(plain_keepalive_over_a_duplex)
{
    vtest_run(body_plain, 0);
}

static void body_failures(void)
{
    struct hook h;
    hook_init(&h, NULL);
    vega_http_client *c = client_with(&h, NULL);
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = "http://example.test/";
    vega_http_client_response *r = NULL;
    h.result = -ECONNREFUSED;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), -ECONNREFUSED);
    VCHECK(r == NULL);
    h.result = -ETIMEDOUT;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), -ETIMEDOUT);
    h.result = 1; /* outside the contract */
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_ERR_CALLBACK);
    h.result = 0;
    h.no_stream = true;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_ERR_CALLBACK);
    VCHECK_EQ(h.calls, 4);
    vega_http_client_free(c);
    hook_fini(&h);
}

VTEST(hook_failures_pass_through)
{
    vtest_run(body_failures, 0);
}

static void body_https(void)
{
    char *cert, *key;
    VCHECK_EQ(vega_tls_selfsigned(&cert, &key), 0); /* localhost */
    static const char *const alpn[] = {"http/1.1"};
    vega_tls_config *scfg, *ccfg;
    VCHECK_EQ(vega_tls_config_new(&scfg, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_set_cert_pem(scfg, cert, strlen(cert), key, strlen(key)), 0);
    VCHECK_EQ(vega_tls_config_set_alpn(scfg, alpn, 1), 0);
    VCHECK_EQ(vega_tls_config_new(&ccfg, VEGA_TLS_CLIENT), 0);
    VCHECK_EQ(vega_tls_config_set_ca_pem(ccfg, cert, strlen(cert)), 0);
    VCHECK_EQ(vega_tls_config_set_alpn(ccfg, alpn, 1), 0);
    struct hook h;
    hook_init(&h, scfg);
    vega_http_client *c = client_with(&h, ccfg);
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = "https://localhost:8443/secure";
    vega_http_client_response *r;
    char body[256];
    VCHECK(hc_fetch(c, &rq, &r, body, sizeof body) > 0);
    VCHECK_STR(body, "path=/secure host=localhost:8443");
    const vega_http_client_info *in = vega_http_client_response_info(r);
    VCHECK(in->alpn && strcmp(in->alpn, "http/1.1") == 0);
    VCHECK(in->tls_version != NULL);
    VCHECK(in->t_tls >= in->t_connect);
    VCHECK(h.tls); /* told, and handed back the plain transport: the client ran TLS */
    VCHECK_EQ(h.port, 8443);
    vega_http_client_response_free(r);
    /* a certificate for another name fails verification, over the hook as over TCP */
    rq.url = "https://other.example/";
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_TLS_ERR_CERT_NAME);
    vega_http_client_free(c);
    hook_fini(&h);
    vega_tls_config_free(ccfg);
    vega_tls_config_free(scfg);
    free(cert);
    free(key);
}

VTEST(https_over_the_hook_stream)
{
    vtest_run(body_https, 0);
}
