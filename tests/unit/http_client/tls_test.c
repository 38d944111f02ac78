/* SPDX-License-Identifier: MIT */
/* The HTTP client over TLS: https against a raw TLS test server with a certificate made at test
 * time, ALPN and version reported, keep-alive over TLS, verification failures, and several
 * tasks on several workers sharing one client. */
#include <errno.h>

#include "hc_util.h"

struct pem {
    char *cert, *key;
};

static vega_tls_config *server_cfg(struct pem *p, bool alpn)
{
    VCHECK_EQ(vega_tls_selfsigned(&p->cert, &p->key), 0); /* localhost, 127.0.0.1, ::1 */
    vega_tls_config *cfg;
    VCHECK_EQ(vega_tls_config_new(&cfg, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_set_cert_pem(cfg, p->cert, strlen(p->cert), p->key, strlen(p->key)),
              0);
    if (alpn) {
        static const char *const protos[] = {"http/1.1"};
        VCHECK_EQ(vega_tls_config_set_alpn(cfg, protos, 1), 0);
    }
    return cfg;
}

static vega_http_client *client_trusting(const char *ca, vega_tls_config **ccfg, bool alpn)
{
    VCHECK_EQ(vega_tls_config_new(ccfg, VEGA_TLS_CLIENT), 0);
    VCHECK_EQ(vega_tls_config_set_ca_pem(*ccfg, ca, strlen(ca)), 0);
    if (alpn) {
        static const char *const protos[] = {"http/1.1"};
        VCHECK_EQ(vega_tls_config_set_alpn(*ccfg, protos, 1), 0);
    }
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.tls = *ccfg;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    return c;
}

#define OK_HELLO "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

static void body_https(void)
{
    struct pem p;
    vega_tls_config *scfg = server_cfg(&p, true), *ccfg;
    struct hs *h = hs_new(scfg);
    hs_step(h, (struct hs_step){.resp = OK_HELLO});
    hs_step(h, (struct hs_step){.resp = OK_HELLO});
    hs_start(h);
    vega_http_client *c = client_trusting(p.cert, &ccfg, true);
    char url[128], body[64];
    snprintf(url, sizeof url, "https://localhost:%u/secure", h->port);
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    vega_http_client_response *r;
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 5);
    VCHECK_STR(body, "hello");
    const vega_http_client_info *in = vega_http_client_response_info(r);
    VCHECK(in->alpn && strcmp(in->alpn, "http/1.1") == 0);
    VCHECK(in->tls_version && strncmp(in->tls_version, "TLSv1.", 6) == 0);
    VCHECK(in->t_connect && in->t_tls >= in->t_connect && in->t_sent >= in->t_tls);
    char host[64];
    snprintf(host, sizeof host, "\r\nHost: localhost:%u\r\n", h->port);
    VCHECK(strstr(h->last_req, host));
    vega_http_client_response_free(r);
    /* keep-alive over TLS */
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 5);
    VCHECK(vega_http_client_response_info(r)->reused);
    VCHECK(vega_http_client_response_info(r)->alpn);
    vega_http_client_response_free(r);
    VCHECK_EQ(h->accepts, 1);
    vega_http_client_free(c);
    vega_tls_config_free(ccfg);
    hs_free(h);
    vega_tls_config_free(scfg);
    free(p.cert);
    free(p.key);
}

VTEST(https_alpn_and_keepalive)
{
    vtest_run(body_https, 0);
}

static void body_tls_errors(void)
{
    struct pem p;
    vega_tls_config *scfg = server_cfg(&p, false), *ccfg;
    struct hs *h = hs_new(scfg);
    hs_step(h, (struct hs_step){.resp = OK_HELLO});
    hs_start(h);
    char url[128], body[64];
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.deadline =
        DL(20000); /* a bound for a hang, not a timing claim (sanitizers, busy machines) */
    vega_http_client_response *r;
    /* the default client verifies against the system store: a self-signed server fails */
    vega_http_client *c = hc_client();
    snprintf(url, sizeof url, "https://localhost:%u/", h->port);
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_TLS_ERR_CERT_UNTRUSTED);
    vega_http_client_free(c);
    /* trusted, but the name does not match the certificate */
    c = client_trusting(p.cert, &ccfg, false);
    VCHECK_EQ(vega_addr_parse(&h->addr, "127.0.0.1:0", NULL), 0);
    vega_addr a;
    VCHECK_EQ(vega_addr_from_ip(&a, "127.0.0.1", h->port), 0);
    VCHECK_EQ(vega_http_client_add_resolve(c, "wrong.example", 443, &a), 0);
    VCHECK_EQ(vega_http_client_add_resolve(c, "localhost", 443, &a), 0);
    rq.url = "https://wrong.example/";
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_TLS_ERR_CERT_NAME);
    /* and right: no ALPN offered, none reported */
    rq.url = "https://localhost/";
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 5);
    VCHECK(vega_http_client_response_info(r)->alpn == NULL);
    VCHECK(strstr(h->last_req, "\r\nHost: localhost\r\n"));
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    vega_tls_config_free(ccfg);
    hs_free(h);
    vega_tls_config_free(scfg);
    free(p.cert);
    free(p.key);
}

VTEST(tls_verification_errors)
{
    vtest_run(body_tls_errors, 0);
}

/* ---- one client, several tasks on several workers -------------------------------------------- */

#define NTASKS 8
#define NREQ   10

static vega_http_client *shared_client;
static char shared_url[128];

static void *worker(void *arg)
{
    (void)arg;
    char body[64];
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = shared_url;
    rq.deadline = DL(10000);
    for (int i = 0; i < NREQ; i++) {
        vega_http_client_response *r;
        vega_ssize n = hc_fetch(shared_client, &rq, &r, body, sizeof body);
        if (n != 5)
            vtest_fail(__FILE__, __LINE__, "fetch %d: %zd (%s)", i, n, vega_strerror((int)n));
        vega_http_client_response_free(r);
    }
    return NULL;
}

static void body_concurrent(void)
{
    struct hs *h = hs_new(NULL);
    for (int i = 0; i < NTASKS * NREQ; i++)
        hs_step(h, (struct hs_step){.resp = OK_HELLO});
    hs_start(h);
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.max_idle_per_origin = 3;
    VCHECK_EQ(vega_http_client_new(&shared_client, &o), 0);
    hs_url(h, shared_url, sizeof shared_url, "/c");
    vega_task *t[NTASKS];
    for (int i = 0; i < NTASKS; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], worker, NULL), 0);
    for (int i = 0; i < NTASKS; i++)
        VCHECK_EQ(vega_task_join(t[i], NULL, VEGA_DEADLINE_NEVER), 0);
    VCHECK(h->accepts >= 1 && h->accepts < NTASKS * NREQ);
    vega_http_client_free(shared_client);
    hs_free(h);
}

VTEST(shared_by_tasks_on_workers)
{
    vtest_run(body_concurrent, 2);
}

/* connect_timeout covers the TLS handshake: a server that accepts and never answers. */
static void body_connect_timeout(void)
{
    struct hs *h = hs_new(NULL);
    hs_step(h, (struct hs_step){.resp = OK_HELLO});
    hs_start(h);
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.connect_timeout_ns = 200 * VEGA_NS_PER_MS;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    char url[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%u/", h->port);
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    vega_http_client_response *r;
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), -ETIMEDOUT);
    VCHECK_WAITED(t0, 200); /* paused clock: exactly the connect timeout */
    vega_http_client_free(c);
    hs_free(h);
}

VTEST(connect_timeout_covers_tls)
{
    vtest_run_paused(body_connect_timeout);
}
