/* SPDX-License-Identifier: MIT */
/* The server side of an HTTP proxy: the request head (RFC 9112 §3, §5) with a CONNECT
 * authority-form target (§3.2.3) or an absolute-form http:// target (§3.2.2), Basic
 * credentials in Proxy-Authorization (RFC 9110 §11.7.2, RFC 7617), the head forwarded to an
 * origin (RFC 9110 §7.6.1 hop-by-hop fields dropped), and the proxy's own reply heads. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <vega/base64.h>

#include "proxy_int.h"

static bool is_tchar(unsigned char c)
{
    /* RFC 9110 §5.6.2 */
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Proxy-Authorization: Basic <token68> into req->cred (RFC 7617 §2: user-id ":" password,
 * the user-id holds no colon). */
static void parse_basic(vega_proxy_http_request *req, const char *v, size_t vl)
{
    if (vl < 6 || strncasecmp(v, "Basic", 5) != 0 || (v[5] != ' ' && v[5] != '\t'))
        return;
    const char *t = v + 6;
    while (t < v + vl && (*t == ' ' || *t == '\t'))
        t++;
    uint8_t raw[2 * VEGA_PROXY_MAX_CRED + 1];
    vega_ssize n = vega_base64_decode(t, (size_t)(v + vl - t), raw, sizeof raw, VEGA_BASE64_STD);
    if (n < 0 || memchr(raw, '\0', (size_t)n))
        return;
    const uint8_t *colon = memchr(raw, ':', (size_t)n);
    if (!colon)
        return;
    size_t ul = (size_t)(colon - raw), pl = (size_t)n - ul - 1;
    if (ul > VEGA_PROXY_MAX_CRED || pl > VEGA_PROXY_MAX_CRED)
        return;
    memcpy(req->cred.user, raw, ul);
    req->cred.user[ul] = '\0';
    memcpy(req->cred.password, colon + 1, pl);
    req->cred.password[pl] = '\0';
    req->auth_basic = true;
}

/* host[:port] (an IPv6 literal in brackets) into req; need_port for CONNECT. */
static int parse_authority(vega_proxy_http_request *req, const char *a, size_t al, bool need_port)
{
    const char *hs = a, *he;
    const char *rest;
    if (al > 0 && a[0] == '[') {
        const char *rb = memchr(a, ']', al);
        if (!rb)
            return VEGA_ERR_PROXY_HANDSHAKE;
        hs = a + 1;
        he = rb;
        rest = rb + 1;
        req->host_ipv6 = true;
    } else {
        const char *colon = memchr(a, ':', al);
        he = colon ? colon : a + al;
        rest = he;
    }
    size_t hl = (size_t)(he - hs);
    if (hl == 0 || hl > VEGA_PROXY_MAX_NAME)
        return VEGA_ERR_PROXY_HANDSHAKE;
    for (const char *c = hs; c < he; c++) {
        unsigned char ch = (unsigned char)*c;
        bool ok = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
                  (ch >= 'A' && ch <= 'Z') || ch == '-' || ch == '.' || ch == '_' ||
                  (req->host_ipv6 && ch == ':');
        if (!ok)
            return VEGA_ERR_PROXY_HANDSHAKE;
    }
    memcpy(req->host, hs, hl);
    req->host[hl] = '\0';
    if (req->host_ipv6) {
        vega_proxy_addr tmp;
        if (!vega__proxy_parse_ip(req->host, hl, &tmp) || tmp.type != VEGA_PROXY_ATYP_IPV6)
            return VEGA_ERR_PROXY_HANDSHAKE;
    }
    const char *end = a + al;
    if (rest == end) {
        if (need_port)
            return VEGA_ERR_PROXY_HANDSHAKE;
        req->port = 80;
        return 0;
    }
    if (*rest != ':' || rest + 1 == end || end - rest > 6)
        return VEGA_ERR_PROXY_HANDSHAKE;
    unsigned long port = 0;
    for (const char *c = rest + 1; c < end; c++) {
        if (*c < '0' || *c > '9')
            return VEGA_ERR_PROXY_HANDSHAKE;
        port = port * 10 + (unsigned long)(*c - '0');
    }
    if (port == 0 || port > 65535)
        return VEGA_ERR_PROXY_HANDSHAKE;
    req->port = (uint16_t)port;
    return 0;
}

/* The request target (RFC 9112 §3.2) at t[0..tl), an offset off into the head. */
static int parse_target(vega_proxy_http_request *req, const char *t, size_t tl, size_t off)
{
    if (req->connect)
        return parse_authority(req, t, tl, true);
    if (tl > 0 && t[0] == '/')
        return VEGA_ERR_PROXY_HANDSHAKE; /* origin-form: a request for us, not through us */
    const char *sep = tl >= 3 ? memmem(t, tl, "://", 3) : NULL;
    if (!sep)
        return VEGA_ERR_PROXY_HANDSHAKE;
    if ((size_t)(sep - t) != 4 || strncasecmp(t, "http", 4) != 0)
        return VEGA_ERR_PROXY_UNSUPPORTED;
    const char *a = sep + 3, *end = t + tl;
    const char *pe = a;
    while (pe < end && *pe != '/' && *pe != '?' && *pe != '#')
        pe++;
    if (memchr(a, '@', (size_t)(pe - a)))
        return VEGA_ERR_PROXY_HANDSHAKE; /* RFC 9110 §4.2.4: no userinfo in http URIs */
    int rc = parse_authority(req, a, (size_t)(pe - a), false);
    if (rc < 0)
        return rc;
    const char *frag = memchr(pe, '#', (size_t)(end - pe));
    const char *path_end = frag ? frag : end;
    req->path_off = off + (size_t)(pe - t);
    req->path_len = (size_t)(path_end - pe);
    return 0;
}

static int parse_request_line(vega_proxy_http_request *req, const char *p, size_t n)
{
    /* request-line = method SP request-target SP HTTP-version (RFC 9112 §3) */
    const char *sp1 = memchr(p, ' ', n);
    if (!sp1 || sp1 == p || (size_t)(sp1 - p) > VEGA_PROXY_HTTP_MAX_METHOD)
        return VEGA_ERR_PROXY_HANDSHAKE;
    for (const char *c = p; c < sp1; c++)
        if (!is_tchar((unsigned char)*c))
            return VEGA_ERR_PROXY_HANDSHAKE;
    memcpy(req->method, p, (size_t)(sp1 - p));
    req->method[sp1 - p] = '\0';
    req->connect = strcmp(req->method, "CONNECT") == 0;
    const char *t = sp1 + 1, *end = p + n;
    const char *sp2 = memchr(t, ' ', (size_t)(end - t));
    if (!sp2 || sp2 == t || end - sp2 != 9 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 || sp2[8] < '0' ||
        sp2[8] > '9')
        return VEGA_ERR_PROXY_HANDSHAKE;
    req->minor = sp2[8] - '0';
    for (const char *c = t; c < sp2; c++)
        if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
            return VEGA_ERR_PROXY_HANDSHAKE;
    return parse_target(req, t, (size_t)(sp2 - t), (size_t)(t - p));
}

/* Calls fn for every field line of head[0..n) (the request line skipped, the final CRLF not
 * included): name and value with OWS trimmed. Returns 0 or the first nonzero fn result, or
 * VEGA_ERR_PROXY_HANDSHAKE for a malformed line. */
typedef int (*field_fn)(void *u, const char *name, size_t nl, const char *v, size_t vl,
                        const char *line, size_t ll);
static int each_field(const char *head, size_t n, field_fn fn, void *u)
{
    const char *p = memchr(head, '\n', n);
    const char *end = head + n;
    p = p ? p + 1 : end;
    while (p < end) {
        const char *eol = memchr(p, '\r', (size_t)(end - p));
        if (!eol || eol + 1 >= end || eol[1] != '\n')
            return VEGA_ERR_PROXY_HANDSHAKE;
        if (eol == p)
            return 0;
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (!colon || colon == p)
            return VEGA_ERR_PROXY_HANDSHAKE;
        for (const char *c = p; c < colon; c++)
            if (!is_tchar((unsigned char)*c))
                return VEGA_ERR_PROXY_HANDSHAKE; /* also refuses obs-fold (RFC 9112 §5.2) */
        const char *v = colon + 1, *ve = eol;
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        for (const char *c = v; c < ve; c++)
            if (*c == '\0' || *c == '\n')
                return VEGA_ERR_PROXY_HANDSHAKE;
        int rc = fn(u, p, (size_t)(colon - p), v, (size_t)(ve - v), p, (size_t)(eol + 2 - p));
        if (rc)
            return rc;
        p = eol + 2;
    }
    return VEGA_ERR_PROXY_HANDSHAKE;
}

static bool name_is(const char *n, size_t nl, const char *want)
{
    return nl == strlen(want) && strncasecmp(n, want, nl) == 0;
}

struct scan {
    vega_proxy_http_request *req;
    bool cl, te;
};

static int scan_field(void *u, const char *n, size_t nl, const char *v, size_t vl, const char *line,
                      size_t ll)
{
    (void)line;
    (void)ll;
    struct scan *s = u;
    if (name_is(n, nl, "Proxy-Authorization")) {
        if (s->req->has_auth)
            return VEGA_ERR_PROXY_HANDSHAKE;
        s->req->has_auth = true;
        parse_basic(s->req, v, vl);
    } else if (name_is(n, nl, "Content-Length")) {
        s->cl = true;
    } else if (name_is(n, nl, "Transfer-Encoding")) {
        s->te = true;
    }
    return 0;
}

vega_ssize vega_proxy_http_request_parse(const char *in, size_t len, size_t max_head,
                                         vega_proxy_http_request *req)
{
    if ((!in && len) || !req)
        return -EINVAL;
    memset(req, 0, sizeof *req);
    if (max_head == 0)
        max_head = VEGA_PROXY_HTTP_DEFAULT_MAX_HEAD;
    size_t look = len < max_head ? len : max_head;
    const char *e = look >= 4 ? memmem(in, look, "\r\n\r\n", 4) : NULL;
    if (!e)
        return len >= max_head ? VEGA_ERR_NOBUF : 0;
    size_t head_len = (size_t)(e - in) + 4;
    /* RFC 9112 §2.2: a bare CR is invalid; NUL is never allowed in a head */
    for (size_t i = 0; i < head_len; i++)
        if (in[i] == '\0' || (in[i] == '\r' && in[i + 1] != '\n') ||
            (in[i] == '\n' && (i == 0 || in[i - 1] != '\r')))
            return VEGA_ERR_PROXY_HANDSHAKE;
    const char *eol = memchr(in, '\r', head_len);
    int rc = parse_request_line(req, in, (size_t)(eol - in));
    if (rc < 0)
        return rc;
    struct scan s = {.req = req};
    rc = each_field(in, head_len, scan_field, &s);
    if (rc < 0)
        return rc;
    /* RFC 9112 §6.1: a message with both may be an attempt at request smuggling */
    if (s.cl && s.te)
        return VEGA_ERR_PROXY_HANDSHAKE;
    req->head_len = head_len;
    return (vega_ssize)head_len;
}

/* The forwarded head being built. */
struct fwd {
    char *out;
    size_t cap, used;
    bool nobuf;
    const char *conn_v; /* the Connection field's value (the last one), to drop what it names */
    size_t conn_vl;
};

static void put(struct fwd *f, const char *s, size_t n)
{
    if (f->used + n > f->cap) {
        f->nobuf = true;
        return;
    }
    memcpy(f->out + f->used, s, n);
    f->used += n;
}

static int find_connection(void *u, const char *n, size_t nl, const char *v, size_t vl,
                           const char *line, size_t ll)
{
    (void)line;
    (void)ll;
    struct fwd *f = u;
    if (name_is(n, nl, "Connection")) {
        f->conn_v = v;
        f->conn_vl = vl;
    }
    return 0;
}

/* Whether the Connection value lists the field name n (comma-separated tokens). */
static bool connection_names(const struct fwd *f, const char *n, size_t nl)
{
    const char *p = f->conn_v, *end = f->conn_v ? f->conn_v + f->conn_vl : NULL;
    while (p && p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
            p++;
        const char *t = p;
        while (p < end && *p != ',' && *p != ' ' && *p != '\t')
            p++;
        if (p > t && (size_t)(p - t) == nl && strncasecmp(t, n, nl) == 0)
            return true;
    }
    return false;
}

static int copy_field_line(void *u, const char *n, size_t nl, const char *v, size_t vl,
                           const char *line, size_t ll)
{
    (void)v;
    (void)vl;
    struct fwd *f = u;
    static const char *const drop[] = {"Proxy-Authorization",
                                       "Proxy-Connection",
                                       "Connection",
                                       "Keep-Alive",
                                       "Host",
                                       "TE",
                                       "Upgrade"};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
        if (name_is(n, nl, drop[i]))
            return 0;
    if (connection_names(f, n, nl))
        return 0;
    put(f, line, ll);
    return 0;
}

vega_ssize vega_proxy_http_forward_head_write(char *out, size_t cap, const char *head,
                                              const vega_proxy_http_request *req)
{
    if ((!out && cap) || !head || !req || req->connect || req->head_len < 4)
        return -EINVAL;
    struct fwd f = {.out = out, .cap = cap};
    put(&f, req->method, strlen(req->method));
    put(&f, " ", 1);
    /* origin-form (RFC 9112 §3.2.1): an empty path is sent as "/", also before a query */
    if (!req->path_len || head[req->path_off] != '/')
        put(&f, "/", 1);
    if (req->path_len)
        put(&f, head + req->path_off, req->path_len);
    put(&f, " HTTP/1.1\r\nHost: ", 17);
    if (req->host_ipv6)
        put(&f, "[", 1);
    put(&f, req->host, strlen(req->host));
    if (req->host_ipv6)
        put(&f, "]", 1);
    if (req->port != 80) {
        char port[8];
        int pn = snprintf(port, sizeof port, ":%u", (unsigned)req->port);
        put(&f, port, (size_t)pn);
    }
    put(&f, "\r\n", 2);
    if (each_field(head, req->head_len, find_connection, &f) < 0 ||
        each_field(head, req->head_len, copy_field_line, &f) < 0)
        return -EINVAL;
    put(&f, "Connection: close\r\n\r\n", 21);
    if (f.nobuf)
        return VEGA_ERR_NOBUF;
    return (vega_ssize)f.used;
}

static const char *reason_for(int status)
{
    switch (status) {
    case 200:
        return "Connection established";
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 405:
        return "Method Not Allowed";
    case 407:
        return "Proxy Authentication Required";
    case 408:
        return "Request Timeout";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Unknown";
    }
}

vega_ssize vega_proxy_http_reply_write(char *out, size_t cap, int status, const char *realm)
{
    if ((!out && cap) || status < 100 || status > 599)
        return -EINVAL;
    if (!realm)
        realm = "proxy";
    for (const char *c = realm; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
            return -EINVAL;
    if (strlen(realm) > 128)
        return -EINVAL;
    int n;
    if (status >= 200 && status <= 299)
        n = snprintf(out, cap, "HTTP/1.1 %d %s\r\n\r\n", status, reason_for(status));
    else
        n = snprintf(
            out, cap, "HTTP/1.1 %d %s\r\n%s%s%sContent-Length: 0\r\nConnection: close\r\n\r\n",
            status, reason_for(status), status == 407 ? "Proxy-Authenticate: Basic realm=\"" : "",
            status == 407 ? realm : "", status == 407 ? "\"\r\n" : "");
    if (n < 0)
        return VEGA_ERR_INTERNAL;
    if ((size_t)n >= cap)
        return VEGA_ERR_NOBUF;
    return n;
}
