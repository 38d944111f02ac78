/* SPDX-License-Identifier: MIT */
/* The Alt-Svc cache (RFC 7838): the field's grammar (§3) case by case, the replacement and
 * "clear" rules (§3.1), curl's alt-svc cache file (load, save, round trip), the bounds, an
 * "h3" alternative learned from an HTTP/1.1 response and used by the next request; and the
 * race of QUIC against TCP (curl's --http3) both ways. */
#include <errno.h>
#include <time.h>

#include "h3_util.h"
#include "hc_util.h"

struct field_case {
    const char *value;
    int n;             /* the return of vega_http_client_altsvc_add */
    const char *host;  /* the h3 alternative's host ("" = none expected) */
    uint16_t port;     /* and port */
    const char *saved; /* a line vega_http_client_altsvc_save must hold (NULL: none) */
};

/* Origin "origin.example":443 throughout. */
static const struct field_case cases[] = {
    /* §3 examples */
    {"h3=\":8000\"", 1, "origin.example", 8000, "h1 origin.example 443 h3 origin.example 8000"},
    {"h3=\"new.example.org:80\"", 1, "new.example.org", 80, NULL},
    {"h2=\"alt.example.com:8000\", h3=\":443\"", 2, "origin.example", 443,
     "h1 origin.example 443 h2 alt.example.com 8000"},
    /* §3.1 parameters: ma and persist; unknown ones ignored */
    {"h3=\":443\"; ma=3600; persist=1", 1, "origin.example", 443,
     "h1 origin.example 443 h3 origin.example 443"},
    {"h3=\":443\"; foo=\"b;a,r\"; ma=60", 1, "origin.example", 443, NULL},
    {"h3=\":443\";ma=60 , h2=\":444\"", 2, "origin.example", 443, NULL},
    /* protocol-ids we do not keep, percent-encoded ones, an http/1.1 alternative */
    {"h3-29=\":443\"", 0, "", 0, NULL},
    {"w%3Dx=\":80\"", 0, "", 0, NULL},
    {"http%2F1.1=\":8080\"", 1, "", 0, "h1 origin.example 443 h1 origin.example 8080"},
    {"h3=\"[2001:db8::1]:8443\"", 1, "2001:db8::1", 8443,
     "h1 origin.example 443 h3 [2001:db8::1] 8443"},
    /* a malformed element among good ones is skipped; empty list elements are fine */
    {"h3=:443, h2=\":444\"", 1, "", 0, NULL},
    {", ,h3=\":9443\",", 1, "origin.example", 9443, NULL},
    /* ALPN ids are bytes (RFC 7301 §3.1): "H3" is not "h3" */
    {"H3=\":443\"", 0, "", 0, NULL},
    /* malformed throughout: refused */
    {"h3=:443", -EINVAL, "", 0, NULL},
    {"h3 = \":443\"", -EINVAL, "", 0, NULL},
    {"h3=\":99999\"", -EINVAL, "", 0, NULL},
    {"h3=\"host.example\"", -EINVAL, "", 0, NULL},
    {"h3=\"a:b:443\"", -EINVAL, "", 0, NULL},
    {"h3=\":443\"; ma=soon", -EINVAL, "", 0, NULL},
    {"h3=\":443", -EINVAL, "", 0, NULL},
    {"", -EINVAL, "", 0, NULL},
};

static void check_case(const struct field_case *fc)
{
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, NULL), 0);
    int n = vega_http_client_altsvc_add(c, "origin.example", 443, fc->value, strlen(fc->value));
    if (n != fc->n)
        fprintf(stderr, "case '%s'\n", fc->value);
    VCHECK_EQ(n, fc->n);
    char host[300];
    uint16_t port = 0;
    int rc =
        vega_http_client_altsvc_lookup(c, "origin.example", 443, "h3", host, sizeof host, &port);
    if (fc->host[0]) {
        VCHECK_EQ(rc, 0);
        VCHECK_STR(host, fc->host);
        VCHECK_EQ(port, fc->port);
    } else {
        VCHECK_EQ(rc, -ENOENT);
    }
    if (fc->saved) {
        char out[4096];
        vega_ssize k = vega_http_client_altsvc_save(c, out, sizeof out - 1);
        VCHECK(k > 0);
        out[k] = 0;
        VCHECK(strstr(out, fc->saved) != NULL);
    }
    vega_http_client_free(c);
}

static int add(vega_http_client *c, const char *host, uint16_t port, const char *v)
{
    return vega_http_client_altsvc_add(c, host, port, v, strlen(v));
}

VTEST(field_grammar)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i]);
}

/* §3.1: a new field replaces what the origin had; "clear" drops it; ma=0 is expired at once;
 * other origins are untouched. */
VTEST(replace_clear_expire)
{
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, NULL), 0);
    char host[300];
    uint16_t port;
    VCHECK_EQ(add(c, "a.example", 443, "h3=\":1001\""), 1);
    VCHECK_EQ(add(c, "b.example", 443, "h3=\":2002\""), 1);
    VCHECK_EQ(add(c, "a.example", 443, "h2=\":1003\""), 1);
    VCHECK_EQ(vega_http_client_altsvc_lookup(c, "a.example", 443, "h3", host, sizeof host, &port),
              -ENOENT);
    VCHECK_EQ(vega_http_client_altsvc_lookup(c, "a.example", 443, "h2", host, sizeof host, &port),
              0);
    VCHECK_EQ(port, 1003);
    VCHECK_EQ(add(c, "a.example", 443, " clear "), 0);
    VCHECK_EQ(vega_http_client_altsvc_lookup(c, "a.example", 443, "h2", host, sizeof host, &port),
              -ENOENT);
    VCHECK_EQ(vega_http_client_altsvc_lookup(c, "B.EXAMPLE", 443, "h3", host, sizeof host, &port),
              0); /* hosts compare without case */
    VCHECK_EQ(port, 2002);
    VCHECK_EQ(vega_http_client_altsvc_lookup(c, "b.example", 8443, "h3", host, sizeof host, &port),
              -ENOENT);
    VCHECK_EQ(add(c, "b.example", 443, "h3=\":2002\"; ma=0"), 1);
    VCHECK_EQ(vega_http_client_altsvc_lookup(c, "b.example", 443, "h3", host, sizeof host, &port),
              -ENOENT);
    VCHECK_EQ(add(c, "c.example", 443, "h3=\":3\""), 1);
    VCHECK_EQ(vega_http_client_altsvc_lookup(c, "c.example", 443, "h3", host, 5, &port),
              VEGA_ERR_NOBUF);
    VCHECK_EQ(add(c, NULL, 443, "clear"), -EINVAL);
    VCHECK_EQ(add(c, "c.example", 0, "clear"), -EINVAL);
    vega_http_client_free(c);
}

/* The bounds: 8 alternatives per origin, fields up to 8 KiB, 1024 origins. */
VTEST(bounds)
{
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, NULL), 0);
    char v[9000] = "";
    size_t n = 0;
    for (int i = 0; i < 20; i++)
        n += (size_t)snprintf(v + n, sizeof v - n, "%sh3=\":%d\"", i ? ", " : "", 1000 + i);
    VCHECK_EQ(vega_http_client_altsvc_add(c, "o.example", 443, v, n), 8);
    memset(v, ' ', 8500);
    memcpy(v + 8490, "h3=\":1\"", 7);
    VCHECK_EQ(vega_http_client_altsvc_add(c, "o.example", 443, v, 8497), -EINVAL);
    for (int i = 0; i < 1100; i++) {
        char h[32];
        snprintf(h, sizeof h, "h%d.example", i);
        VCHECK_EQ(vega_http_client_altsvc_add(c, h, 443, "h3=\":443\"", 9), 1);
    }
    vega_ssize len = vega_http_client_altsvc_save(c, NULL, 0);
    VCHECK(len > 0);
    char *out = malloc((size_t)len + 1);
    VCHECK_EQ(vega_http_client_altsvc_save(c, out, (size_t)len), len);
    size_t lines = 0;
    for (vega_ssize i = 0; i < len; i++)
        lines += out[i] == '\n';
    VCHECK_EQ(lines, 1 + 1024); /* the comment, then the newest 1024 origins */
    VCHECK(strstr(out, " h1099.example ") && !strstr(out, " h0.example "));
    VCHECK_EQ(vega_http_client_altsvc_save(c, out, (size_t)len - 1), VEGA_ERR_NOBUF);
    free(out);
    vega_http_client_free(c);
}

/* curl's file: lines of nine fields; comments, expired entries and malformed lines skipped. */
VTEST(curl_file_format)
{
    char future[64], past[64];
    time_t t = time(NULL) + 86400;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(future, sizeof future, "%Y%m%d %H:%M:%S", &tm);
    t = time(NULL) - 60;
    gmtime_r(&t, &tm);
    strftime(past, sizeof past, "%Y%m%d %H:%M:%S", &tm);
    char text[2048];
    snprintf(text, sizeof text,
             "# Your alt-svc cache. https://curl.se/docs/alt-svc.html\n"
             "# This file was generated by libcurl! Edit at your own risk.\n"
             "h1 example.com 443 h3 example.com 443 \"%s\" 0 0\r\n"
             "h2 quic.tech 8443 h3 quic.tech 8443 \"%s\" 1 0\n"
             "h1 old.example 443 h3 old.example 443 \"%s\" 0 0\n"
             "h1 eight.example 443 h3 eight.example 443 \"%s\" 0\n"
             "h1 baddate.example 443 h3 baddate.example 443 \"20261340 00:00:00\" 0 0\n"
             "h1 badport.example 443 h3 badport.example 70000 \"%s\" 0 0\n"
             "h1 [::1] 8443 h3 [::1] 9443 \"%s\" 0 0\n"
             "h1 nine.example 443 h3-29 nine.example 443 \"%s\" 0 0\n"
             "h1 last.example 443 h3 other.example 4433 \"%s\" 0 0",
             future, future, past, future, future, future, future, future);
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, NULL), 0);
    VCHECK_EQ(vega_http_client_altsvc_load(c, text, strlen(text)), 4);
    char host[300];
    uint16_t port;
    VCHECK_EQ(vega_http_client_altsvc_lookup(c, "quic.tech", 8443, "h3", host, sizeof host, &port),
              0);
    VCHECK_EQ(vega_http_client_altsvc_lookup(c, "::1", 8443, "h3", host, sizeof host, &port), 0);
    VCHECK_STR(host, "::1");
    VCHECK_EQ(port, 9443);
    VCHECK_EQ(
        vega_http_client_altsvc_lookup(c, "last.example", 443, "h3", host, sizeof host, &port),
        0); /* a last line without its newline */
    VCHECK_STR(host, "other.example");
    VCHECK_EQ(vega_http_client_altsvc_lookup(c, "old.example", 443, "h3", host, sizeof host, &port),
              -ENOENT);
    /* save, load into another client, save again: the same text */
    char a[4096], b[4096];
    vega_ssize na = vega_http_client_altsvc_save(c, a, sizeof a);
    VCHECK(na > 0);
    vega_http_client *c2;
    VCHECK_EQ(vega_http_client_new(&c2, NULL), 0);
    VCHECK_EQ(vega_http_client_altsvc_load(c2, a, (size_t)na), 4);
    vega_ssize nb = vega_http_client_altsvc_save(c2, b, sizeof b);
    VCHECK_EQ(nb, na);
    /* the same lines, perhaps in another order */
    a[na] = b[nb] = 0;
    for (char *l = strtok(a, "\n"); l; l = strtok(NULL, "\n"))
        VCHECK(strstr(b, l) != NULL);
    char line[128];
    snprintf(line, sizeof line, "h2 quic.tech 8443 h3 quic.tech 8443 \"%s\" 1 0\n", future);
    VCHECK(strstr(b, line) != NULL);
    VCHECK_EQ(vega_http_client_altsvc_load(c2, NULL, 5), -EINVAL);
    vega_http_client_free(c2);
    vega_http_client_free(c);
}

/* ---- over the network --------------------------------------------------------------------- */

static vega_tls_config *tls_server_cfg(void)
{
    vega_tls_config *cfg;
    VCHECK_EQ(vega_tls_config_new(&cfg, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_set_cert_pem(cfg, QT_SRV_P256_PEM, strlen(QT_SRV_P256_PEM),
                                           QT_SRV_P256_KEY, strlen(QT_SRV_P256_KEY)),
              0);
    static const char *const protos[] = {"http/1.1"};
    VCHECK_EQ(vega_tls_config_set_alpn(cfg, protos, 1), 0);
    return cfg;
}

/* A client trusting the test CA over TCP and QUIC; "localhost" is 127.0.0.1 on the ports
 * given (the servers listen on IPv4 only: no attempt on ::1 to wait for). */
static vega_http_client *both_client(struct h3t_srv *s, vega_tls_config **tls, bool alt_svc,
                                     uint16_t p1, uint16_t p2)
{
    VCHECK_EQ(vega_tls_config_new(tls, VEGA_TLS_CLIENT), 0);
    VCHECK_EQ(vega_tls_config_set_ca_pem(*tls, QT_CA_PEM, strlen(QT_CA_PEM)), 0);
    static const char *const protos[] = {"http/1.1"};
    VCHECK_EQ(vega_tls_config_set_alpn(*tls, protos, 1), 0);
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.tls = *tls;
    o.quic_ca = s->ca;
    o.alt_svc = alt_svc;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    vega_addr a;
    VCHECK_EQ(vega_addr_from_ip(&a, "127.0.0.1", 0), 0);
    VCHECK_EQ(vega_http_client_add_resolve(c, "localhost", p1, &a), 0);
    VCHECK_EQ(vega_http_client_add_resolve(c, "localhost", p2, &a), 0);
    return c;
}

/* RFC 7838 §2: an HTTP/1.1 response names an "h3" alternative (another port); the next
 * request of version 0 goes there over HTTP/3, still for the origin's name. */
VTEST_MT(learned_alternative_is_used, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_tls_config *scfg = tls_server_cfg(), *ccfg;
    struct hs *h = hs_new(scfg);
    char resp[256];
    snprintf(resp, sizeof resp,
             "HTTP/1.1 200 OK\r\nAlt-Svc: h3=\":%u\"; ma=600\r\nContent-Length: 3\r\n\r\ntcp",
             s->port);
    hs_step(h, (struct hs_step){.resp = resp});
    hs_start(h);
    vega_http_client *c = both_client(s, &ccfg, true, s->port, h->port);
    char url[128], body[64];
    snprintf(url, sizeof url, "https://localhost:%u/hello", h->port);
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.deadline = vega_deadline_in_ms(20000);
    vega_http_client_response *r;
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 3);
    VCHECK_EQ(vega_http_client_response_info(r)->version, 11);
    vega_http_client_response_free(r);
    char host[300];
    uint16_t port;
    VCHECK_EQ(
        vega_http_client_altsvc_lookup(c, "localhost", h->port, "h3", host, sizeof host, &port), 0);
    VCHECK_EQ(port, s->port);
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 5);
    VCHECK_STR(body, "hello");
    const vega_http_client_info *in = vega_http_client_response_info(r);
    VCHECK_EQ(in->version, VEGA_HTTP_CLIENT_V3);
    VCHECK_EQ(vega_addr_port(&in->peer), s->port);
    vega_http_client_response_free(r);
    /* an explicit HTTP/1.1 request does not take the alternative */
    rq.version = 11;
    hs_step(h, (struct hs_step){.resp = resp});
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 3);
    vega_http_client_response_free(r);
    VCHECK_EQ(atomic_load(&s->conns), 1);
    vega_http_client_free(c);
    vega_tls_config_free(ccfg);
    hs_free(h);
    vega_tls_config_free(scfg);
    h3t_stop(s);
}

/* curl's --http3 where nobody answers on UDP: QUIC gets its head start, then TCP wins; a later
 * request reuses that TCP connection without a new race. */
VTEST_MT(fallback_to_tcp, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_tls_config *scfg = tls_server_cfg(), *ccfg;
    struct hs *h = hs_new(scfg);
    hs_step(h, (struct hs_step){.resp = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntcp"});
    hs_step(h, (struct hs_step){.resp = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntcp"});
    hs_start(h);
    /* the same port on UDP, bound and never read: QUIC hears nothing */
    vega_sock *u;
    vega_addr ua;
    VCHECK_EQ(vega_addr_from_ip(&ua, "127.0.0.1", h->port), 0);
    VCHECK_EQ(vega_udp_bind(&u, &ua, 0), 0);
    vega_http_client *c = both_client(s, &ccfg, false, h->port, h->port);
    char url[128], body[64];
    snprintf(url, sizeof url, "https://localhost:%u/x", h->port);
    vega_http_client_request rq;
    h3t_req(&rq, url);
    rq.h3_fallback = true;
    vega_http_client_response *r;
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 3);
    VCHECK_WAITED(t0, 200);
    const vega_http_client_info *in = vega_http_client_response_info(r);
    VCHECK_EQ(in->version, 11);
    VCHECK(in->t_connect - t0 >= 200 * VEGA_NS_PER_MS);
    vega_http_client_response_free(r);
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 3);
    VCHECK(vega_http_client_response_info(r)->reused);
    vega_http_client_response_free(r);
    VCHECK_EQ(h->accepts, 1);
    /* HTTP/3 only gives up at its deadline instead */
    rq.h3_fallback = false;
    rq.deadline = vega_deadline_in_ms(400);
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), -ETIMEDOUT);
    vega_http_client_free(c);
    vega_sock_close(u);
    vega_tls_config_free(ccfg);
    hs_free(h);
    vega_tls_config_free(scfg);
    h3t_stop(s);
}

/* The other way: QUIC answers within its head start, so TCP never starts; an http:// URL with
 * a fallback simply goes by TCP. */
VTEST_MT(fallback_not_needed, 2)
{
    struct h3t_srv *s = h3t_start(0);
    struct hs *h = hs_new(NULL);
    hs_step(h, (struct hs_step){.resp = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntcp"});
    hs_start(h);
    vega_tls_config *ccfg;
    vega_http_client *c = both_client(s, &ccfg, false, s->port, h->port);
    char url[128], body[64];
    h3t_url(s, url, sizeof url, "/hello");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    rq.h3_fallback = true;
    vega_http_client_response *r;
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 5);
    VCHECK_EQ(vega_http_client_response_info(r)->version, VEGA_HTTP_CLIENT_V3);
    vega_http_client_response_free(r);
    VCHECK_EQ(h->accepts, 0);
    hs_url(h, url, sizeof url, "/plain");
    h3t_req(&rq, url);
    rq.h3_fallback = true;
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 3);
    VCHECK_EQ(vega_http_client_response_info(r)->version, 11);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    vega_tls_config_free(ccfg);
    hs_free(h);
    h3t_stop(s);
}
