/* SPDX-License-Identifier: MIT */
/* The HTTP client object and its options (layout versions 1 to 5), --resolve overrides, and
 * vega_http_client_send: the request prepared, then HTTP/3 (h3_race.c) or one HTTP/1.x request
 * over a pooled or fresh connection, with one retry when a reused connection turns out to have
 * been closed by the server (RFC 9112 §9.3.1). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <vega/version.h>

#include "client_int.h"

/* The layouts of version 1 end where version 2's appended fields start (both end on a
 * pointer or a uint64_t, so no tail padding differs). */
#define HC_OPTS_V1_SIZE offsetof(vega_http_client_opts, quic_ca)
#define HC_OPTS_V2_SIZE offsetof(vega_http_client_opts, proxy)
#define HC_OPTS_V3_SIZE offsetof(vega_http_client_opts, quic_qlog_dir)
#define HC_OPTS_V4_SIZE offsetof(vega_http_client_opts, quic_key_update)
#define HC_OPTS_V5_SIZE offsetof(vega_http_client_opts, ip_family)
#define HC_OPTS_V6_SIZE offsetof(vega_http_client_opts, quic_migrate)
#define HC_OPTS_V7_SIZE offsetof(vega_http_client_opts, dns_servers)
#define HC_OPTS_V8_SIZE offsetof(vega_http_client_opts, local)
#define HC_OPTS_V9_SIZE offsetof(vega_http_client_opts, h2_frame)
#define HC_REQ_V1_SIZE  offsetof(vega_http_client_request, h3_fallback)

static size_t hc_opts_size(int opts_version)
{
    return opts_version == 1   ? HC_OPTS_V1_SIZE
           : opts_version == 2 ? HC_OPTS_V2_SIZE
           : opts_version == 3 ? HC_OPTS_V3_SIZE
           : opts_version == 4 ? HC_OPTS_V4_SIZE
           : opts_version == 5 ? HC_OPTS_V5_SIZE
           : opts_version == 6 ? HC_OPTS_V6_SIZE
           : opts_version == 7 ? HC_OPTS_V7_SIZE
           : opts_version == 8 ? HC_OPTS_V8_SIZE
           : opts_version == 9 ? HC_OPTS_V9_SIZE
                               : sizeof(vega_http_client_opts);
}

static void opts_defaults(vega_http_client_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_idle_per_origin = 8;
    o->idle_timeout_ns = 60 * VEGA_NS_PER_S;
    o->connect_timeout_ns = 30 * VEGA_NS_PER_S;
    o->max_body = 1ull << 30;
    o->h3_head_start_ns = HC_H3_HEAD_START_NS;
}

void vega_http_client_opts_init_versioned(vega_http_client_opts *o, int opts_version)
{
    if (opts_version < 1 || opts_version > VEGA_HTTP_CLIENT_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_http_client_opts_init: options of another libvega (version %d)",
                    opts_version);
    vega_http_client_opts d;
    opts_defaults(&d);
    /* A caller built with an older layout has storage for that layout only. */
    memcpy(o, &d, hc_opts_size(opts_version));
}

void vega_http_client_request_init_versioned(vega_http_client_request *r, int opts_version)
{
    if (opts_version != 1 && opts_version != VEGA_HTTP_CLIENT_REQUEST_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_http_client_request_init: options of another libvega (version %d)",
                    opts_version);
    memset(r, 0, opts_version == 1 ? HC_REQ_V1_SIZE : sizeof *r);
    r->deadline = VEGA_DEADLINE_NEVER;
}

int vega_http_client_new_versioned(vega_http_client **out, const vega_http_client_opts *opts,
                                   int opts_version)
{
    if (opts_version < 1 || opts_version > VEGA_HTTP_CLIENT_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    if (!out)
        return -EINVAL;
    *out = NULL;
    /* API rules: ABI: a caller of layout 1 gives its prefix; the rest keeps the defaults. */
    vega_http_client_opts o;
    opts_defaults(&o);
    if (opts)
        memcpy(&o, opts, hc_opts_size(opts_version));
    if (o.proxy && (o.connect || o.proxy->kind <= VEGA_PROXY_NONE ||
                    o.proxy->kind > VEGA_PROXY_SOCKS5H || !o.proxy->host || !o.proxy->port))
        return -EINVAL;
    if (o.quic_n_suites > 3)
        return -EINVAL;
    if (o.dns_servers_len > VEGA_DNS_MAX_NAMESERVERS || (o.dns_servers_len && !o.dns_servers))
        return -EINVAL;
    if (o.ip_family != AF_UNSPEC && o.ip_family != AF_INET && o.ip_family != AF_INET6)
        return -EINVAL;
    if (o.quic_version && !vega_quic_version_is_supported(o.quic_version))
        return -EINVAL;
    if (!o.h3_head_start_ns)
        o.h3_head_start_ns = HC_H3_HEAD_START_NS;
    const vega_mem *m = o.mem;
    if (m && !(m->malloc && m->calloc && m->realloc && m->free))
        return -EINVAL;
    vega_http_client *c = vega__mem_calloc(m, 1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->o = o;
    const char *ua = c->o.user_agent ? c->o.user_agent : "vega/" VEGA_VERSION_STRING;
    size_t ualen = strlen(ua);
    if ((c->user_agent = vega__mem_malloc(m, ualen + 1)))
        memcpy(c->user_agent, ua, ualen + 1);
    c->o.user_agent = NULL;
    int rc = c->user_agent ? 0 : -ENOMEM;
    if (rc == 0 && c->o.tls) {
        c->tls = c->o.tls;
    } else if (rc == 0) {
        /* RFC 9113 §3.2: h2 offered first, as curl does; HTTP/1.x requests use a second
         * config that offers http/1.1 only (ALPN is the config's, not the connection's). */
        static const char *const alpn[] = {"h2", "http/1.1"};
        rc = vega_tls_config_new(&c->tls, VEGA_TLS_CLIENT);
        if (rc == 0)
            rc = vega_tls_config_set_alpn(c->tls, alpn, 2);
        if (rc == 0)
            rc = vega_tls_config_new(&c->tls_h1, VEGA_TLS_CLIENT);
        if (rc == 0)
            rc = vega_tls_config_set_alpn(c->tls_h1, alpn + 1, 1);
    }
    if (rc == 0) {
        vega_dns_opts dno;
        vega_dns_opts_init(&dno);
        dno.nameservers = o.dns_servers;
        dno.nameservers_len = o.dns_servers_len;
        rc = vega_dns_resolver_new(&c->dns, &dno);
    }
    c->o.dns_servers = NULL; /* borrowed for the call only: the resolver has its copy */
    if (rc < 0) {
        if (c->tls && !c->o.tls)
            vega_tls_config_free(c->tls);
        vega_tls_config_free(c->tls_h1);
        vega__mem_free(m, c->user_agent);
        vega__mem_free(m, c);
        return rc;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->h2s.ops = &vega__hc_h2_ops;
    c->h3s.ops = &vega__hc_h3_ops;
    *out = c;
    return 0;
}

void vega_http_client_free(vega_http_client *c)
{
    if (!c)
        return;
    vega__hc_h3_shutdown(c);
    vega__hc_h2_shutdown(c);
    while (c->idle) {
        struct hc_conn *x = c->idle;
        c->idle = x->next;
        vega__hc_conn_close(x);
    }
    vega__hc_altsvc_free(c);
    vega__hc_sess_free(c);
    vega_crypto_cert_store_free(c->own_ca);
    while (c->resolves) {
        struct hc_resolve *x = c->resolves;
        c->resolves = x->next;
        vega__mem_free(c->o.mem, x);
    }
    if (!c->o.tls)
        vega_tls_config_free(c->tls);
    vega_tls_config_free(c->tls_h1);
    vega_dns_resolver_free(c->dns);
    pthread_mutex_destroy(&c->mu);
    const vega_mem *m = c->o.mem;
    vega__mem_free(m, c->user_agent);
    vega__mem_free(m, c);
}

static int lower_copy(char *dst, const char *s, size_t n)
{
    if (n == 0 || n > HC_MAX_HOST)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        dst[i] = (char)tolower((unsigned char)s[i]);
    dst[n] = '\0';
    return 0;
}

int vega_http_client_add_resolve(vega_http_client *c, const char *host, uint16_t port,
                                 const vega_addr *addr)
{
    if (!c || !host || !addr)
        return -EINVAL;
    struct hc_resolve *e = vega__mem_calloc(c->o.mem, 1, sizeof *e);
    if (!e)
        return -ENOMEM;
    if (*host == '[' && strlen(host) > 2 && host[strlen(host) - 1] == ']') {
        if (lower_copy(e->host, host + 1, strlen(host) - 2) < 0) {
            vega__mem_free(c->o.mem, e);
            return -EINVAL;
        }
    } else if (lower_copy(e->host, host, strlen(host)) < 0) {
        vega__mem_free(c->o.mem, e);
        return -EINVAL;
    }
    e->port = port;
    e->addr = *addr;
    /* The newest entry for a host and port wins: it is found first. */
    pthread_mutex_lock(&c->mu);
    e->next = c->resolves;
    c->resolves = e;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

/* ---- the request head ------------------------------------------------------------------------ */

static bool ieq(const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);
    if (an != bn)
        return false;
    for (size_t i = 0; i < an; i++)
        if (tolower((unsigned char)a[i]) != b[i])
            return false;
    return true;
}

static bool user_has(const vega_http_client_request *req, const char *lname)
{
    for (size_t i = 0; i < req->nfields; i++)
        if (ieq(req->fields[i].name.ptr, req->fields[i].name.len, lname))
            return true;
    return false;
}

/* True when a Connection field of the request lists "close". */
static bool user_asks_close(const vega_http_client_request *req)
{
    for (size_t i = 0; i < req->nfields; i++) {
        const vega_http_field *f = &req->fields[i];
        if (!ieq(f->name.ptr, f->name.len, "connection"))
            continue;
        for (size_t j = 0; j + 5 <= f->value.len; j++)
            if (strncasecmp(f->value.ptr + j, "close", 5) == 0)
                return true;
    }
    return false;
}

/* The request target in origin-form (RFC 9112 §3.2.1; HTTP/3's :path) into rq->target
 * (owned), and the authority (Host, :authority) into rq->authority: without userinfo (RFC 9110
 * §7.2), the port only when not the scheme's default. The fragment never goes out; userinfo in
 * the URL is ignored: no credentials are sent. */
static int build_target(vega_http_client *c, struct hc_req *rq, const vega_http_url *u)
{
    size_t tlen = (u->path.len ? u->path.len : 1) + (u->query.ptr ? u->query.len + 1 : 0);
    char *target = vega__mem_malloc(c->o.mem, tlen + 1);
    if (!target)
        return -ENOMEM;
    size_t o = 0;
    if (u->path.len) {
        memcpy(target, u->path.ptr, u->path.len);
        o = u->path.len;
    } else {
        target[o++] = '/';
    }
    if (u->query.ptr) {
        target[o++] = '?';
        memcpy(target + o, u->query.ptr, u->query.len);
        o += u->query.len;
    }
    target[o] = '\0';
    rq->target = target;
    uint16_t defport = rq->key.tls ? 443 : 80;
    bool v6 = u->host_is_ip_literal;
    if (rq->key.port != defport)
        snprintf(rq->authority, sizeof rq->authority, "%s%.*s%s:%u", v6 ? "[" : "",
                 (int)u->host.len, u->host.ptr, v6 ? "]" : "", rq->key.port);
    else
        snprintf(rq->authority, sizeof rq->authority, "%s%.*s%s", v6 ? "[" : "", (int)u->host.len,
                 u->host.ptr, v6 ? "]" : "");
    if (vega__hc_forwarded(c, &rq->key)) {
        /* RFC 9112 §3.2.2: "When making a request to a proxy, other than a CONNECT or
         * server-wide OPTIONS request, a client MUST send the target URI in absolute-form". */
        size_t al = strlen(rq->authority), n = 7 + al + o + 1;
        char *abs = vega__mem_malloc(c->o.mem, n);
        if (!abs)
            return -ENOMEM;
        memcpy(abs, "http://", 7);
        memcpy(abs + 7, rq->authority, al);
        memcpy(abs + 7 + al, target, o + 1);
        vega__mem_free(c->o.mem, target);
        rq->target = abs;
    }
    return 0;
}

/* Builds the HTTP/1.x head into rq->head (owned). */
static int build_head(vega_http_client *c, struct hc_req *rq)
{
    const vega_http_client_request *req = rq->req;
    const vega_mem *m = c->o.mem;
    char cl[24];
    size_t nf = 0, cap = req->nfields + 8, total = strlen(rq->method) + strlen(rq->target) + 64;
    vega_http1_field *f = vega__mem_calloc(m, cap, sizeof *f);
    if (!f)
        return -ENOMEM;
#define ADD(n, v, vl) (f[nf++] = (vega_http1_field){(n), strlen(n), (v), (vl)})
    if (!user_has(req, "host"))
        ADD("Host", rq->authority, strlen(rq->authority));
    if (c->user_agent[0] && !user_has(req, "user-agent"))
        ADD("User-Agent", c->user_agent, strlen(c->user_agent));
    if (!user_has(req, "accept"))
        ADD("Accept", "*/*", 3);
    if (req->decompress && !user_has(req, "accept-encoding"))
        ADD("Accept-Encoding", "br, zstd, gzip, deflate", 23);
    for (size_t i = 0; i < req->nfields; i++) {
        const vega_http_field *uf = &req->fields[i];
        /* The framing is the client's to decide. */
        if (ieq(uf->name.ptr, uf->name.len, "content-length") ||
            ieq(uf->name.ptr, uf->name.len, "transfer-encoding"))
            continue;
        /* A field without a value only removes the client's own field of that name. */
        if (!uf->value.ptr)
            continue;
        f[nf++] = (vega_http1_field){uf->name.ptr, uf->name.len, uf->value.ptr, uf->value.len};
    }
    if (rq->chunked) {
        ADD("Transfer-Encoding", "chunked", 7);
    } else if (rq->has_body || !strcmp(rq->method, "POST") || !strcmp(rq->method, "PUT") ||
               !strcmp(rq->method, "PATCH")) {
        /* RFC 9110 §8.6: a user agent should send Content-Length for a method that defines a
         * meaning for content, even when it is 0. */
        uint64_t len = req->body                        ? req->body_len
                       : req->body_fn || req->body_file ? req->body_length
                                                        : 0;
        int n = snprintf(cl, sizeof cl, "%llu", (unsigned long long)len);
        ADD("Content-Length", cl, (size_t)n);
    }
    char pauth[2 * VEGA_PROXY_MAX_CRED + 16];
    if (vega__hc_forwarded(c, &rq->key) && c->o.proxy->user &&
        !user_has(req, "proxy-authorization")) {
        /* RFC 9110 §11.7.2; Basic (RFC 7617) */
        vega_ssize pl =
            vega_proxy_basic_auth(pauth, sizeof pauth, c->o.proxy->user, c->o.proxy->password);
        if (pl < 0) {
            vega__mem_free(m, f);
            return pl == VEGA_ERR_NOBUF ? VEGA_ERR_INTERNAL : (int)pl;
        }
        ADD("Proxy-Authorization", pauth, (size_t)pl);
    }
    if (req->expect_continue && rq->has_body && rq->version == 11)
        ADD("Expect", "100-continue", 12);
    if (rq->h2_upgrade && !user_has(req, "connection") && !user_has(req, "upgrade")) {
        /* RFC 7540 §3.2.1: our SETTINGS as base64url: SETTINGS_ENABLE_PUSH 0 */
        ADD("Connection", "Upgrade, HTTP2-Settings", 23);
        ADD("Upgrade", "h2c", 3);
        ADD("HTTP2-Settings", "AAIAAAAA", 8);
    }
#undef ADD
    for (size_t i = 0; i < nf; i++)
        total += f[i].name_len + f[i].value_len + 4;
    rq->head = vega__mem_malloc(m, total);
    vega_ssize n = rq->head ? vega_http1_write_request_head(rq->head, total, rq->method, rq->target,
                                                            rq->version, f, nf)
                            : -ENOMEM;
    vega__mem_free(m, f);
    if (n < 0) {
        vega__mem_free(m, rq->head);
        rq->head = NULL;
        return n == VEGA_ERR_NOBUF ? VEGA_ERR_INTERNAL : (int)n;
    }
    rq->head_len = (size_t)n;
    return 0;
}

/* Which protocol the request goes by: rq->version for HTTP/1.x, rq->h3 (and rq->fallback) for
 * HTTP/3, where QUIC goes (rq->alt_host:alt_port). */
static int pick_version(vega_http_client *c, const vega_http_client_request *req, struct hc_req *rq)
{
    rq->version = 11;
    memcpy(rq->alt_host, rq->key.host, sizeof rq->alt_host);
    rq->alt_port = rq->key.port;
    if (req->version == 10 || req->version == 11) {
        rq->version = req->version;
        return 0;
    }
    /* Forwarded through an HTTP proxy: HTTP/1.1 to the proxy, which speaks to the origin. */
    if (vega__hc_forwarded(c, &rq->key) && req->version != VEGA_HTTP_CLIENT_V3)
        return 0;
    if (req->version == VEGA_HTTP_CLIENT_V2 || req->version == VEGA_HTTP_CLIENT_V2_PRIOR) {
        /* https: ALPN h2 (HTTP/1.1 if the server picks it). http: h2c by prior knowledge
         * (RFC 9113 §3.3) when asked; else HTTP/1.1 (no Upgrade: RFC 9113 §3.1 deprecates
         * it, and it is not done here). */
        rq->h2 = rq->key.tls || req->version == VEGA_HTTP_CLIENT_V2_PRIOR;
        rq->h2_prior = !rq->key.tls && req->version == VEGA_HTTP_CLIENT_V2_PRIOR;
        /* http:// without prior knowledge: "Upgrade: h2c" on a request without a body (RFC
         * 7540 §3.2, as curl's --http2); one with a body stays HTTP/1.1 */
        if (!rq->key.tls && req->version == VEGA_HTTP_CLIENT_V2 && !req->body && !req->body_fn &&
            !req->body_file)
            rq->h2 = rq->h2_upgrade = true;
        return 0;
    }
    if (req->version == VEGA_HTTP_CLIENT_V3) {
        /* RFC 9114 §3.1: HTTP/3 is for "https" URIs; a fallback goes by TCP as asked. */
        if (!rq->key.tls)
            return req->h3_fallback ? 0 : VEGA_ERR_HTTP_SCHEME;
        /* QUIC needs UDP: a connect hook only gives streams, and so do HTTP and SOCKS4
         * proxies (curl: "HTTP/3 is not supported over a proxy"); a SOCKS5 proxy carries it
         * through its UDP relay (RFC 1928 §7, h3_conn.c). */
        if (c->o.connect)
            return req->h3_fallback ? 0 : -EINVAL;
        if (c->o.proxy && c->o.proxy->kind != VEGA_PROXY_SOCKS5 &&
            c->o.proxy->kind != VEGA_PROXY_SOCKS5H)
            return req->h3_fallback ? 0 : VEGA_ERR_PROXY_UNSUPPORTED;
        rq->h3 = true;
        rq->fallback = req->h3_fallback;
        return 0;
    }
    if (req->version != 0)
        return -EINVAL;
    /* RFC 7838 §2.1: a cached "h3" alternative of an https origin, with TCP to fall back to. */
    if (c->o.alt_svc && rq->key.tls && !c->o.connect && !c->o.proxy &&
        vega_http_client_altsvc_lookup(c, rq->key.host, rq->key.port, "h3", rq->alt_host,
                                       sizeof rq->alt_host, &rq->alt_port) == 0) {
        rq->h3 = true;
        rq->fallback = true;
    }
    /* RFC 9113 §3.2: https offers h2 by default (HTTP/1.1 when the server does not take it). */
    rq->h2 = rq->key.tls && !rq->h3;
    return 0;
}

/* Checks the request and fills rq: the origin, the method, the framing, the protocol, the
 * target and the HTTP/1.x head. u: storage for the parsed URL, which rq points into. */
static int prepare(vega_http_client *c, const vega_http_client_request *req, struct hc_req *rq,
                   vega_http_url *u, bool ws)
{
    memset(rq, 0, sizeof *rq);
    rq->req = req;
    rq->ws = rq->key.tunnel = ws;
    rq->url = u;
    size_t ulen = strlen(req->url);
    if (vega_http_url_parse(u, req->url, ulen) < 0)
        return VEGA_ERR_HTTP_URL;
    if (ieq(u->scheme.ptr, u->scheme.len, "https"))
        rq->key.tls = true;
    else if (!ieq(u->scheme.ptr, u->scheme.len, "http"))
        return VEGA_ERR_HTTP_SCHEME;
    /* A percent-encoded reg-name would need decoding (and IDNA) before any lookup. */
    if (!u->host.ptr || memchr(u->host.ptr, '%', u->host.len) || u->port == 0 ||
        lower_copy(rq->key.host, u->host.ptr, u->host.len) < 0)
        return VEGA_ERR_HTTP_URL;
    memcpy(rq->host_for_tls, rq->key.host, u->host.len + 1);
    rq->key.port = u->port;

    bool file = !req->body && !req->body_fn && req->body_file;
    bool has_body = req->body != NULL || req->body_fn != NULL || file;
    /* A file body has a known length that fits one sendfile call's count. */
    if (file && (req->body_fd < 0 || req->body_length == VEGA_HTTP_LENGTH_UNKNOWN ||
                 req->body_length > (uint64_t)SSIZE_MAX ||
                 req->body_offset > (uint64_t)INT64_MAX - req->body_length))
        return -EINVAL;
    rq->method = req->method ? req->method : has_body ? "POST" : "GET";
    if (!vega_http_token_is_valid(rq->method, strlen(rq->method)) || strlen(rq->method) > 20)
        return -EINVAL;
    int m = vega_http_method_parse(rq->method, strlen(rq->method));
    rq->idempotent = m > 0 && vega_http_method_is_idempotent((vega_http_method)m);
    rq->safe = m > 0 && vega_http_method_is_safe((vega_http_method)m) && !has_body;
    int rc = pick_version(c, req, rq);
    if (rc < 0)
        return rc;
    rq->has_body = has_body;
    rq->chunked = !req->body && req->body_fn && req->body_length == VEGA_HTTP_LENGTH_UNKNOWN;
    /* HTTP/1.0 has no chunked coding (RFC 9112 §6.1), so an unknown length cannot be sent. */
    if (rq->chunked && rq->version == 10)
        return -EINVAL;
    if ((rc = build_target(c, rq, u)) < 0)
        return rc;
    return build_head(c, rq);
}

/* ---- sending --------------------------------------------------------------------------------- */

/* Streams the body of body_fn. *used: set once body_fn was called (no retry after that). */
static int send_body_fn(vega_http_client_response *r, const struct hc_req *rq, bool *used,
                        vega_deadline dl)
{
    const vega_http_client_request *req = rq->req;
    const vega_mem *m = r->c->o.mem;
    size_t cap = !rq->chunked && req->body_length < HC_WBUF ? (size_t)req->body_length : HC_WBUF;
    uint8_t *buf = vega__mem_malloc(m, cap ? cap : 1);
    if (!buf)
        return -ENOMEM;
    uint64_t left = rq->chunked ? UINT64_MAX : req->body_length;
    int rc = 0;
    while (left > 0) {
        size_t want = left < cap ? (size_t)left : cap;
        *used = true;
        vega_ssize n = req->body_fn(req->body_user, buf, want);
        if (n < 0) {
            rc = (int)n;
            break;
        }
        if ((size_t)n > want || (n == 0 && !rq->chunked)) {
            rc = VEGA_ERR_CALLBACK; /* more than asked, or shorter than body_length */
            break;
        }
        if (n == 0)
            break;
        if (rq->chunked) {
            uint8_t hdr[24];
            vega_ssize hl = vega_http1_write_chunk_header(hdr, sizeof hdr, (uint64_t)n);
            struct iovec iov[3] = {{hdr, (size_t)hl}, {buf, (size_t)n}, {(void *)"\r\n", 2}};
            vega_ssize w = vega_stream_writev(r->conn->s, iov, 3, NULL, dl);
            if (w < 0) {
                rc = (int)w;
                break;
            }
        } else {
            vega_ssize w = vega_stream_write(r->conn->s, buf, (size_t)n, NULL, dl);
            if (w < 0) {
                rc = (int)w;
                break;
            }
            left -= (uint64_t)n;
        }
    }
    if (rc == 0 && rq->chunked) {
        uint8_t last[8];
        vega_ssize ll = vega_http1_write_last_chunk(last, sizeof last, NULL, 0);
        vega_ssize w = vega_stream_write(r->conn->s, last, (size_t)ll, NULL, dl);
        if (w < 0)
            rc = (int)w;
    }
    vega__mem_free(m, buf);
    return rc;
}

static int send_body(vega_http_client_response *r, const struct hc_req *rq, bool *used,
                     vega_deadline dl)
{
    const vega_http_client_request *req = rq->req;
    if (req->body) {
        if (req->body_len == 0)
            return 0;
        vega_ssize w = vega_stream_write(r->conn->s, req->body, req->body_len, NULL, dl);
        return w < 0 ? (int)w : 0;
    }
    if (!req->body_fn) { /* a file (prepare checked it) */
        if (req->body_length == 0)
            return 0;
        vega_ssize w = vega_stream_sendfile(r->conn->s, req->body_fd, (off_t)req->body_offset,
                                            (size_t)req->body_length, NULL, dl);
        return w < 0 ? (int)w : 0;
    }
    return send_body_fn(r, rq, used, dl);
}

/* Writes the request. Returns 0 or a code; a write error after the head went out is reported
 * only when no response can be read instead (a server may answer early and close). */
static int send_request(vega_http_client_response *r, const struct hc_req *rq, bool *used)
{
    const vega_http_client_request *req = rq->req;
    vega__hc_trace_request(r, rq->head, rq->head_len);
    vega_ssize w;
    bool wait_100 = req->expect_continue && rq->has_body && rq->version == 11;
    if (req->body && req->body_len && !wait_100) {
        struct iovec iov[2] = {{rq->head, rq->head_len}, {(void *)req->body, req->body_len}};
        w = vega_stream_writev(r->conn->s, iov, 2, NULL, r->dl);
        r->info.t_sent = vega_now();
        return w < 0 ? (int)w : 0;
    }
    w = vega_stream_write(r->conn->s, rq->head, rq->head_len, NULL, r->dl);
    if (w < 0)
        return (int)w;
    if (!rq->has_body) {
        r->info.t_sent = vega_now();
        return 0;
    }
    if (wait_100) {
        /* RFC 9110 §10.1.1: wait for 100 a while, but not forever (old servers never send it). */
        int rc = vega__hc_read_head(r, true, vega_deadline_in_ns(HC_EXPECT_WAIT_NS));
        if (rc == -ETIMEDOUT && vega_now() >= r->dl)
            return rc;
        if (rc < 0 && rc != -ETIMEDOUT)
            return rc;
        if (r->head_done) {
            /* A final answer without 100: the body stays here, and the connection cannot
             * carry another request (the server might still read the body as one). */
            r->body_unsent = true;
            r->info.t_sent = vega_now();
            return 0;
        }
    }
    int rc = send_body(r, rq, used, r->dl);
    if (rc < 0) {
        r->body_unsent = true;
        return rc;
    }
    r->info.t_sent = vega_now();
    return 0;
}

bool vega__hc_retryable(int rc)
{
    return rc == VEGA_ERR_HTTP_EMPTY_REPLY || rc == -ECONNRESET || rc == -EPIPE ||
           rc == -ECONNABORTED || rc == -ENOTCONN || rc == VEGA_ERR_TLS_TRUNCATED;
}

int vega__hc_exchange_h1(vega_http_client *c, const struct hc_req *rq, vega_http_client_response *r,
                         struct hc_conn *conn, bool *used, bool *got_bytes)
{
    const vega_http_client_request *req = rq->req;
    r->conn = conn;
    r->info.peer = conn->peer;
    r->info.alpn = conn->alpn[0] ? conn->alpn : NULL;
    r->info.tls_version = conn->tls_version;
    r->is_head = strcmp(rq->method, "HEAD") == 0;
    /* An HTTP/1.0 request did not ask for keep-alive, so the server will not keep it. */
    r->conn_close_asked = user_asks_close(req) || rq->version == 10;
    strcpy(r->method, rq->method);
    vega_http1_parser_set_head(&r->parser, r->is_head);
    int rc = send_request(r, rq, used);
    if (rc < 0 && !vega__hc_retryable(rc))
        return rc;
    int wrc = rc;
    /* After a failed write the server may still have answered (413 and close, say). */
    rc = vega__hc_read_head(r, false, wrc < 0 ? 0 : VEGA_DEADLINE_NEVER);
    if (rc < 0 && wrc < 0 && !r->any_byte)
        rc = wrc;
    if (rc == 0 && req->decompress)
        rc = vega__hc_set_decoder(r);
    if (rc == 0 && c->o.alt_svc && conn->key.tls)
        vega__hc_altsvc_learn(c, &conn->key, "h1", &r->fields);
    *got_bytes = r->any_byte;
    return rc;
}

int vega__hc_attempt_h1(vega_http_client *c, const struct hc_req *rq, vega_tstamp start,
                        vega_deadline dl, bool fresh, bool *reused, bool *used, bool *got_bytes,
                        vega_http_client_response **out)
{
    const vega_http_client_request *req = rq->req;
    vega_http_client_response *r;
    int rc = vega__hc_response_new(c, &r, req);
    if (rc < 0)
        return rc;
    r->dl = dl;
    r->info.t_start = start;
    r->upgrade_asked = r->ws_asked = rq->ws;
    *reused = false;
    struct hc_conn *conn = NULL;
    if (!fresh && vega__hc_pool_take(c, &rq->key, &conn) > 0) {
        *reused = true;
    } else {
        vega_deadline cdl = hc_dl_min(dl, vega_deadline_in_ns(c->o.connect_timeout_ns));
        rc = vega__hc_connect(c, &rq->key, rq->host_for_tls, true, &r->info, cdl, &conn);
        if (rc == 0 && !strcmp(conn->alpn, "h2")) {
            /* a caller's TLS config offered h2 to an HTTP/1.x request, and the server took it:
             * what ALPN chose is spoken (RFC 7301 §3.2); a WebSocket goes as RFC 8441's
             * extended CONNECT (-ENOTSUP when the server did not enable it) */
            vega_http_client_info tinfo = r->info;
            vega_http_client_response_free(r);
            struct hc_h2 *h;
            bool retry = false;
            struct hc_req rq2 = *rq;
            rq2.ws_h2 = rq->ws;
            rc = vega__hc_h2_from_conn(c, conn, &tinfo, &h);
            return rc < 0 ? rc
                          : vega__hc_attempt_h2(c, &rq2, h, false, start, dl, used, &retry,
                                                req->wire_error, out);
        }
        if (rc < 0) {
            vega_http_client_response_free(r);
            return rc;
        }
    }
    r->info.reused = *reused;
    rc = vega__hc_exchange_h1(c, rq, r, conn, used, got_bytes);
    if (rc < 0) {
        vega_http_client_response_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

int vega_http_client_send_versioned(vega_http_client *c, const vega_http_client_request *req,
                                    vega_http_client_response **out, int opts_version)
{
    if (opts_version != 1 && opts_version != VEGA_HTTP_CLIENT_REQUEST_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    if (!c || !req || !req->url || !out)
        return -EINVAL;
    *out = NULL;
    /* API rules: ABI: a caller of layout 1 gives its prefix; the rest keeps the defaults. */
    vega_http_client_request r2;
    if (opts_version == 1) {
        vega_http_client_request_init(&r2);
        memcpy(&r2, req, HC_REQ_V1_SIZE);
        req = &r2;
    }
    if (req->wire_error)
        memset(req->wire_error, 0, sizeof *req->wire_error);
    vega_tstamp start = vega_now();
    struct hc_req rq;
    vega_http_url u;
    int rc = prepare(c, req, &rq, &u, false);
    vega_deadline dl = req->deadline;
    if (rc == 0 && rq.h3) {
        rc = vega__hc_send_h3(c, &rq, start, dl, out);
    } else if (rc == 0 && rq.h2) {
        rc = vega__hc_send_h2(c, &rq, start, dl, out);
    } else if (rc == 0) {
        bool reused = false, used = false, got_bytes = false;
        rc = vega__hc_attempt_h1(c, &rq, start, dl, req->fresh_connection, &reused, &used,
                                 &got_bytes, out);
        /* RFC 9112 §9.3.1: a connection the server closed while it sat in the pool fails
         * before any response byte; then the request goes again, once, on a fresh connection,
         * unless a body_fn already gave bytes that cannot be given again. */
        if (rc < 0 && reused && vega__hc_retryable(rc) && !used && !got_bytes)
            rc = vega__hc_attempt_h1(c, &rq, start, dl, true, &reused, &used, &got_bytes, out);
    }
    vega__mem_free(c->o.mem, rq.head);
    vega__mem_free(c->o.mem, rq.target);
    return rc;
}

int vega__hc_send_ws(vega_http_client *c, const vega_http_client_request *req,
                     vega_http_client_response **out)
{
    *out = NULL;
    vega_tstamp start = vega_now();
    struct hc_req rq;
    vega_http_url u;
    int rc = prepare(c, req, &rq, &u, true);
    /* HTTP/3 asked, with a fallback, where QUIC cannot go (a connect hook, a proxy): the
     * caller's HTTP/1.1 Upgrade (the head here is an extended CONNECT's); ws:// stays refused */
    if (rc == 0 && req->version == VEGA_HTTP_CLIENT_V3 && !rq.h3)
        rc = rq.key.tls ? -ENOTSUP : VEGA_ERR_HTTP_SCHEME;
    if (rc == 0 && rq.h2) {
        /* RFC 8441: an extended CONNECT on a pooled or new HTTP/2 connection (ALPN h2 on
         * https, prior knowledge on http) */
        rq.ws_h2 = true;
        rc = vega__hc_send_h2(c, &rq, start, req->deadline, out);
    } else if (rc == 0 && rq.h3) {
        /* RFC 9220: the same on a pooled or new HTTP/3 connection; with the caller's
         * h1_fallback (req->h3_fallback) QUIC races TCP as a request's connection does, and a
         * QUIC connection that could not be made or lost is -ENOTSUP (vega__hc_send_h3): the
         * caller goes on with the HTTP/1.1 Upgrade, as browsers do */
        rq.ws_h3 = true;
        rq.fallback = req->h3_fallback;
        rc = vega__hc_send_h3(c, &rq, start, req->deadline, out);
    } else if (rc == 0) {
        bool reused = false, used = false, got_bytes = false;
        rc = vega__hc_attempt_h1(c, &rq, start, req->deadline, true, &reused, &used, &got_bytes,
                                 out);
    }
    vega__mem_free(c->o.mem, rq.head);
    vega__mem_free(c->o.mem, rq.target);
    return rc;
}
