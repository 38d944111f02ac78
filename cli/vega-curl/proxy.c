/* SPDX-License-Identifier: MIT */
/* vega-curl through proxies: -x/--proxy, --socks5, --socks5-hostname, --socks4a, -U,
 * --noproxy, -p, --proxy-insecure and the environment variables as curl reads them
 * (curl(1), ENVIRONMENT: http_proxy in lowercase only, HTTPS_PROXY/https_proxy, ALL_PROXY/
 * all_proxy, NO_PROXY/no_proxy; lowercase first), -v lines of the handshake, and the
 * %{http_connect} status. One proxy serves a run: the one the first URL selects. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "curl.h"

static vega_proxy_url purl;
static vega_proxy_opts popts;
static char puser[VEGA_PROXY_MAX_CRED + 1], ppass[VEGA_PROXY_MAX_CRED + 1];
static vega_tls_config *ptls;
static atomic_int connect_status;  /* the last CONNECT reply's status, 0 = none */
static atomic_int socks_code = -1; /* the last SOCKS reply's code, -1 = none */
static bool verbose;

/* The environment variable that names a proxy for scheme, as curl reads it. */
static const char *env_proxy(const char *scheme)
{
    const char *v = NULL;
    if (!strcasecmp(scheme, "http")) {
        /* curl reads http_proxy in lowercase only (CGI's HTTP_PROXY is a request header) */
        v = getenv("http_proxy");
    } else if (!strcasecmp(scheme, "https")) {
        v = getenv("https_proxy");
        if (!v || !*v)
            v = getenv("HTTPS_PROXY");
    }
    if (!v || !*v) {
        v = getenv("all_proxy");
        if (!v || !*v)
            v = getenv("ALL_PROXY");
    }
    return v && *v ? v : NULL;
}

static void trace(void *user, vega_proxy_trace_kind k, const char *text, size_t len)
{
    (void)user;
    if (!verbose)
        return;
    const char *pre = k == VEGA_PROXY_TRACE_SENT ? "> " : k == VEGA_PROXY_TRACE_RECV ? "< " : "* ";
    fprintf(stderr, "%s%.*s\n", pre, (int)len, text);
}

static void on_reply(void *user, const vega_proxy_reply *r)
{
    (void)user;
    if (r->kind == VEGA_PROXY_HTTP || r->kind == VEGA_PROXY_HTTPS)
        atomic_store(&connect_status, r->code);
    else
        atomic_store(&socks_code, r->code);
}

int curl_proxy_http_connect(void)
{
    return atomic_load(&connect_status);
}

const vega_proxy_opts *curl_proxy_active(void)
{
    return popts.kind != VEGA_PROXY_NONE ? &popts : NULL;
}

/* Splits the URL's scheme and host (without brackets) out of url. */
static bool url_scheme_host(const char *url, char *scheme, size_t scap, char *host, size_t hcap)
{
    vega_http_url u;
    if (vega_http_url_parse(&u, url, strlen(url)) < 0 || !u.host.ptr)
        return false;
    snprintf(scheme, scap, "%.*s", (int)u.scheme.len, u.scheme.ptr);
    snprintf(host, hcap, "%.*s", (int)u.host.len, u.host.ptr);
    return true;
}

int curl_proxy_setup(const struct curl_opts *o, vega_http_client_opts *co)
{
    verbose = o->verbose;
    if (o->nurls == 0)
        return 0;
    char scheme[16], host[256];
    if (!url_scheme_host(o->urls[0], scheme, sizeof scheme, host, sizeof host))
        return 0; /* the transfer reports the bad URL */
    /* -x "" (or --noproxy "*") turns every proxy off, the environment's too */
    const char *spec = o->proxy;
    if (!spec)
        spec = env_proxy(scheme);
    if (!spec || !*spec)
        return 0;
    const char *np = o->noproxy;
    if (!np) {
        np = getenv("no_proxy");
        if (!np || !*np)
            np = getenv("NO_PROXY");
    }
    if (np && vega_proxy_noproxy_match(np, host))
        return 0;
    if (vega_proxy_url_parse(&purl, spec) < 0)
        return curl_fail(o, CE_COULDNT_RESOLVE_PROXY, "Unsupported proxy syntax in '%s'", spec);
    if (o->proxy_kind != VEGA_PROXY_NONE && o->proxy_kind_from_flag)
        purl.kind = o->proxy_kind; /* --socks5 HOST:PORT and friends name the kind */
    vega_proxy_opts_init(&popts);
    popts.kind = purl.kind;
    popts.host = purl.host;
    popts.port = purl.port;
    if (o->proxy_user) {
        /* -U user[:password] */
        const char *c = strchr(o->proxy_user, ':');
        size_t ul = c ? (size_t)(c - o->proxy_user) : strlen(o->proxy_user);
        if (ul > VEGA_PROXY_MAX_CRED || (c && strlen(c + 1) > VEGA_PROXY_MAX_CRED))
            return curl_fail(o, CE_FAILED_INIT, "--proxy-user: too long");
        memcpy(puser, o->proxy_user, ul);
        puser[ul] = '\0';
        snprintf(ppass, sizeof ppass, "%s", c ? c + 1 : "");
        popts.user = puser;
        popts.password = ppass;
    } else if (purl.has_user) {
        popts.user = purl.user;
        popts.password = purl.password;
    }
    popts.tunnel = o->proxytunnel;
    popts.user_agent = co->user_agent;
    popts.trace = trace;
    popts.on_reply = on_reply;
    if (popts.kind == VEGA_PROXY_HTTPS) {
        int r = vega_tls_config_new(&ptls, VEGA_TLS_CLIENT);
        static const char *const h1[] = {"http/1.1"};
        if (r == 0)
            r = vega_tls_config_set_alpn(ptls, h1, 1);
        if (r == 0 && o->proxy_insecure)
            r = vega_tls_config_set_verify(ptls, VEGA_TLS_VERIFY_NONE);
        if (r == 0 && o->proxy_cacert)
            r = vega_tls_config_set_ca_file(ptls, o->proxy_cacert);
        if (r < 0)
            return curl_fail(o, CE_FAILED_INIT, "proxy TLS: %s", vega_strerror(r));
        popts.tls = ptls;
    }
    co->proxy = &popts;
    return 0;
}

void curl_proxy_free(void)
{
    vega_tls_config_free(ptls);
    ptls = NULL;
}

/* curl's exit code and message for a failure to get through the proxy; 0 when e is not one. */
int curl_proxy_failed(int e, char *msg, size_t cap)
{
    const vega_proxy_opts *p = curl_proxy_active();
    if (!p)
        return 0;
    bool http = p->kind == VEGA_PROXY_HTTP || p->kind == VEGA_PROXY_HTTPS;
    int st = atomic_load(&connect_status);
    switch (e) {
    case VEGA_ERR_PROXY_RESOLVE:
        /* curl 7.88 says 5 for an HTTP proxy's name, 6 for a SOCKS proxy's (checked in
         * tests/bats/vega-curl-proxy.bats) */
        snprintf(msg, cap, "Could not resolve %s: %s", http ? "proxy" : "host", p->host);
        return http ? CE_COULDNT_RESOLVE_PROXY : CE_COULDNT_RESOLVE_HOST;
    case VEGA_ERR_PROXY_AUTH:
    case VEGA_ERR_PROXY_REFUSED:
        if (http) {
            /* curl: CURLE_RECV_ERROR for a CONNECT answered with anything but 2xx */
            snprintf(msg, cap, "CONNECT tunnel failed, response %d", st);
            return CE_RECV_ERROR;
        }
        if (e == VEGA_ERR_PROXY_AUTH) {
            snprintf(msg, cap, "proxy authentication failed (SOCKS)");
        } else {
            int sc = atomic_load(&socks_code);
            bool s5 = p->kind == VEGA_PROXY_SOCKS5 || p->kind == VEGA_PROXY_SOCKS5H;
            if (sc >= 0)
                snprintf(msg, cap,
                         "Can't complete SOCKS connection to the destination (reply %d: %s)", sc,
                         s5 ? vega_proxy_socks5_reply_str(sc) : vega_proxy_socks4_reply_str(sc));
            else
                snprintf(msg, cap, "Can't complete SOCKS connection to the destination");
        }
        return CE_PROXY;
    case VEGA_ERR_PROXY_HANDSHAKE:
        snprintf(msg, cap, "Proxy handshake failed: %s", vega_strerror(e));
        return CE_PROXY;
    case VEGA_ERR_PROXY_UNSUPPORTED:
        snprintf(msg, cap, "%s",
                 "HTTP/3 is not supported through an HTTP or SOCKS4 proxy (SOCKS5 carries it), "
                 "nor this destination in this proxy protocol");
        return CE_PROXY;
    case -ECONNREFUSED:
    case -EHOSTUNREACH:
    case -ENETUNREACH:
        snprintf(msg, cap, "Failed to connect to %s port %u: Couldn't connect to server (%s)",
                 p->host, (unsigned)p->port, vega_strerror(e));
        return CE_COULDNT_CONNECT;
    default:
        return 0;
    }
}
