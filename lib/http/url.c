/* SPDX-License-Identifier: MIT */
/* URI and request-target parsing and recomposition (RFC 3986 §3, §5.3; RFC 9112 §3.2). */
#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

#include <vega/http.h>

#include "http_int.h"

enum {
    C_UNRES = 1,
    C_SUB = 2,
    C_HEX = 4,
    C_ALPHA = 8,
    C_DIGIT = 16
};

static unsigned cls(unsigned char c)
{
    unsigned r = 0;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        r |= C_ALPHA | C_UNRES;
    if (c >= '0' && c <= '9')
        r |= C_DIGIT | C_UNRES | C_HEX;
    if ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
        r |= C_HEX;
    if (c == '-' || c == '.' || c == '_' || c == '~')
        r |= C_UNRES;
    if (c && strchr("!$&'()*+,;=", c))
        r |= C_SUB;
    return r;
}

int vega__http_hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Checks s[0..n) against: unreserved / pct-encoded / sub-delims / the bytes in extra. */
static bool valid_run(const char *s, size_t n, const char *extra)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (cls(c) & (C_UNRES | C_SUB))
            continue;
        if (c == '%') {
            if (i + 2 >= n || !(cls((unsigned char)s[i + 1]) & C_HEX) ||
                !(cls((unsigned char)s[i + 2]) & C_HEX))
                return false;
            i += 2;
            continue;
        }
        if (c && strchr(extra, c))
            continue;
        return false;
    }
    return true;
}

static const char *memchr_any(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] && strchr(set, s[i]))
            return s + i;
    return NULL;
}

uint16_t vega_http_scheme_default_port(const char *scheme, size_t len)
{
    if (len == 4 && strncasecmp(scheme, "http", 4) == 0)
        return 80;
    if (len == 5 && strncasecmp(scheme, "https", 5) == 0)
        return 443;
    if (len == 2 && strncasecmp(scheme, "ws", 2) == 0)
        return 80;
    if (len == 3 && strncasecmp(scheme, "wss", 3) == 0)
        return 443;
    return 0;
}

static int parse_authority(vega_http_url *u, const char *a, size_t n)
{
    const char *at = memchr(a, '@', n);
    if (at) {
        u->userinfo = (vega_http_str){a, (size_t)(at - a)};
        if (!valid_run(a, (size_t)(at - a), ":"))
            return VEGA_ERR_PROTO;
        n -= (size_t)(at - a) + 1;
        a = at + 1;
    }
    const char *hend;
    if (n > 0 && a[0] == '[') {
        const char *rb = memchr(a, ']', n);
        if (!rb)
            return VEGA_ERR_PROTO;
        size_t hl = (size_t)(rb - a) - 1;
        char tmp[64];
        unsigned char bin[16];
        if (hl == 0 || hl >= sizeof tmp)
            return VEGA_ERR_PROTO; /* also IPvFuture beyond 63 bytes */
        memcpy(tmp, a + 1, hl);
        tmp[hl] = '\0';
        if (inet_pton(AF_INET6, tmp, bin) != 1)
            return VEGA_ERR_PROTO; /* IPvFuture and zone IDs are not supported */
        u->host = (vega_http_str){a + 1, hl};
        u->host_is_ip_literal = true;
        hend = rb + 1;
    } else {
        const char *colon = memchr(a, ':', n);
        hend = colon ? colon : a + n;
        if (!valid_run(a, (size_t)(hend - a), ""))
            return VEGA_ERR_PROTO;
        u->host = (vega_http_str){a, (size_t)(hend - a)};
    }
    const char *end = a + n;
    if (hend < end) {
        if (*hend != ':')
            return VEGA_ERR_PROTO;
        const char *p = hend + 1;
        if (p < end) {
            unsigned long v = 0;
            for (; p < end; p++) {
                if (*p < '0' || *p > '9')
                    return VEGA_ERR_PROTO;
                v = v * 10 + (unsigned long)(*p - '0');
                if (v > 65535)
                    return VEGA_ERR_PROTO;
            }
            u->port = (uint16_t)v;
            u->has_port = true;
        }
    }
    return 0;
}

/* Parses a URI reference; allow_rel = false requires a scheme. */
static int parse(vega_http_url *u, const char *s, size_t len, bool allow_rel, bool http_rules)
{
    memset(u, 0, sizeof *u);
    if (!s && len)
        return VEGA_ERR_PROTO;
    if (!s)
        s = "";
    const char *end = s + len;
    const char *p = s;

    /* scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
    const char *delim = memchr_any(s, len, ":/?#");
    if (delim && *delim == ':' && delim > s) {
        bool ok = cls((unsigned char)s[0]) & C_ALPHA;
        for (const char *q = s + 1; ok && q < delim; q++)
            ok = (cls((unsigned char)*q) & (C_ALPHA | C_DIGIT)) || *q == '+' || *q == '-' ||
                 *q == '.';
        if (!ok)
            return VEGA_ERR_PROTO; /* and "1a:b" is not a valid path-noscheme either */
        u->scheme = (vega_http_str){s, (size_t)(delim - s)};
        p = delim + 1;
    } else if (!allow_rel || (delim && *delim == ':')) {
        return VEGA_ERR_PROTO;
    }

    const char *hash = memchr(p, '#', (size_t)(end - p));
    if (hash) {
        u->fragment = (vega_http_str){hash + 1, (size_t)(end - hash - 1)};
        if (!valid_run(u->fragment.ptr, u->fragment.len, ":@/?"))
            return VEGA_ERR_PROTO;
        end = hash;
    }
    const char *qm = memchr(p, '?', (size_t)(end - p));
    if (qm) {
        u->query = (vega_http_str){qm + 1, (size_t)(end - qm - 1)};
        if (!valid_run(u->query.ptr, u->query.len, ":@/?"))
            return VEGA_ERR_PROTO;
        end = qm;
    }
    if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
        const char *a = p + 2;
        const char *slash = memchr(a, '/', (size_t)(end - a));
        const char *aend = slash ? slash : end;
        u->authority = (vega_http_str){a, (size_t)(aend - a)};
        int rc = parse_authority(u, a, (size_t)(aend - a));
        if (rc < 0)
            return rc;
        p = aend;
    }
    u->path = (vega_http_str){p, (size_t)(end - p)};
    if (!valid_run(p, (size_t)(end - p), ":@/"))
        return VEGA_ERR_PROTO;

    if (u->scheme.ptr) {
        uint16_t def = vega_http_scheme_default_port(u->scheme.ptr, u->scheme.len);
        if (def) {
            if (http_rules && (!u->host.ptr || u->host.len == 0))
                return VEGA_ERR_PROTO; /* RFC 9110 §4.2.1: empty host is invalid */
            if (!u->has_port)
                u->port = def;
        }
    }
    return 0;
}

int vega_http_url_parse(vega_http_url *u, const char *s, size_t len)
{
    return parse(u, s, len, false, true);
}

int vega_http_url_parse_ref(vega_http_url *u, const char *s, size_t len)
{
    return parse(u, s, len, true, false);
}

int vega_http_url_parse_target(vega_http_url *u, const char *s, size_t len)
{
    int rc;
    if (len > 0 && s[0] == '/') {
        if (len > 1 && s[1] == '/')
            return VEGA_ERR_PROTO; /* a network-path reference is not origin-form */
        rc = parse(u, s, len, true, true);
    } else {
        rc = parse(u, s, len, false, true);
        if (rc == 0 && !u->host.ptr)
            return VEGA_ERR_PROTO; /* absolute-form needs "//authority" */
    }
    if (rc < 0)
        return rc;
    if (u->fragment.ptr)
        return VEGA_ERR_PROTO;
    return 0;
}

static bool put(char *out, size_t cap, size_t *n, const char *s, size_t len)
{
    if (len > cap || *n > cap - len)
        return false;
    if (len)
        memcpy(out + *n, s, len);
    *n += len;
    return true;
}

vega_ssize vega_http_url_format(const vega_http_url *u, char *out, size_t cap)
{
    size_t n = 0;
    bool ok = true;
    if (u->scheme.ptr)
        ok = put(out, cap, &n, u->scheme.ptr, u->scheme.len) && put(out, cap, &n, ":", 1);
    if (ok && u->host.ptr) {
        ok = put(out, cap, &n, "//", 2);
        if (ok && u->userinfo.ptr)
            ok = put(out, cap, &n, u->userinfo.ptr, u->userinfo.len) && put(out, cap, &n, "@", 1);
        if (ok && u->host_is_ip_literal)
            ok = put(out, cap, &n, "[", 1) && put(out, cap, &n, u->host.ptr, u->host.len) &&
                 put(out, cap, &n, "]", 1);
        else if (ok)
            ok = put(out, cap, &n, u->host.ptr, u->host.len);
        if (ok && u->has_port) {
            char pb[8];
            int pl = 0;
            unsigned v = u->port;
            char rev[8];
            do {
                rev[pl++] = (char)('0' + v % 10);
                v /= 10;
            } while (v);
            pb[0] = ':';
            for (int i = 0; i < pl; i++)
                pb[1 + i] = rev[pl - 1 - i];
            ok = put(out, cap, &n, pb, (size_t)pl + 1);
        }
    }
    if (ok)
        ok = put(out, cap, &n, u->path.ptr, u->path.len);
    if (ok && u->query.ptr)
        ok = put(out, cap, &n, "?", 1) && put(out, cap, &n, u->query.ptr, u->query.len);
    if (ok && u->fragment.ptr)
        ok = put(out, cap, &n, "#", 1) && put(out, cap, &n, u->fragment.ptr, u->fragment.len);
    if (!ok || n >= cap)
        return VEGA_ERR_NOBUF;
    out[n] = '\0';
    return (vega_ssize)n;
}
