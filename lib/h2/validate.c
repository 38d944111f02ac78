/* SPDX-License-Identifier: MIT */
/* HTTP/2 message checks (RFC 9113 §8.1.1, §8.2, §8.3, RFC 8441 §4): field names and values,
 * connection-specific fields, TE, pseudo-header fields (defined, once, first, in their
 * context), the request and response rules, content-length. Used on what arrives (a failure
 * is a malformed message: a stream error PROTOCOL_ERROR) and on what we are asked to send. */
#include <string.h>

#include "h2_int.h"

/* §8.2.1: "A field name MUST NOT contain characters in the ranges 0x00-0x20, 0x41-0x5a, or
 * 0x7f-0xff (all ranges inclusive). ... With the exception of pseudo-header fields, ... field
 * names MUST NOT include a colon". Empty names are not tokens (RFC 9110 §5.1). */
static bool name_ok(vega_http_str n)
{
    if (n.len == 0)
        return false;
    for (size_t i = 0; i < n.len; i++) {
        uint8_t ch = (uint8_t)n.ptr[i];
        if (ch <= 0x20 || (ch >= 0x41 && ch <= 0x5a) || ch >= 0x7f || ch == ':')
            return false;
    }
    return true;
}

/* §8.2.1: "A field value MUST NOT contain the zero value (ASCII NUL, 0x00), line feed (ASCII
 * LF, 0x0a), or carriage return (ASCII CR, 0x0d) at any position. A field value MUST NOT start
 * or end with an ASCII whitespace character (ASCII SP or HTAB, 0x20 or 0x09)." */
static bool value_ok(vega_http_str v)
{
    if (v.len && (v.ptr[0] == ' ' || v.ptr[0] == '\t' || v.ptr[v.len - 1] == ' ' ||
                  v.ptr[v.len - 1] == '\t'))
        return false;
    for (size_t i = 0; i < v.len; i++)
        if (v.ptr[i] == 0 || v.ptr[i] == '\r' || v.ptr[i] == '\n')
            return false;
    return true;
}

static bool is(vega_http_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

/* Digits only, no overflow (RFC 9110 §8.6). */
static bool parse_cl(vega_http_str v, int64_t *out)
{
    if (v.len == 0 || v.len > 18)
        return false;
    int64_t x = 0;
    for (size_t i = 0; i < v.len; i++) {
        if (v.ptr[i] < '0' || v.ptr[i] > '9')
            return false;
        x = x * 10 + (v.ptr[i] - '0');
    }
    *out = x;
    return true;
}

enum {
    P_METHOD = 1,
    P_SCHEME = 2,
    P_AUTHORITY = 4,
    P_PATH = 8,
    P_PROTOCOL = 16,
    P_STATUS = 32
};

/* A pseudo-header field: defined for this kind of section, and not seen before. */
static bool pseudo(vega_h2_head_kind kind, const vega_hpack_field *f, unsigned *seen,
                   vega_h2_head *h, vega_http_str *status, bool allow_protocol)
{
    static const struct {
        const char *name;
        unsigned bit;
    } req[] = {{":method", P_METHOD},
               {":scheme", P_SCHEME},
               {":authority", P_AUTHORITY},
               {":path", P_PATH},
               {":protocol", P_PROTOCOL}};
    vega_http_str *slot[] = {&h->method, &h->scheme, &h->authority, &h->path, &h->protocol};
    /* §8.3: "Pseudo-header fields MUST NOT appear in a trailer section." "Endpoints MUST NOT
     * generate pseudo-header fields other than those defined in this document."
     * "pseudo-header fields defined for requests MUST NOT appear in responses;
     * pseudo-header fields defined for responses MUST NOT appear in requests." "The same
     * pseudo-header field name MUST NOT appear more than once in a field block." */
    unsigned bit = 0;
    vega_http_str *to = NULL;
    if (kind == VEGA_H2_HEAD_REQUEST) {
        for (size_t i = 0; i < 5; i++)
            if (is(f->name, req[i].name))
                bit = req[i].bit, to = slot[i];
        /* RFC 8441 §4: ":protocol" exists only where SETTINGS_ENABLE_CONNECT_PROTOCOL was
         * sent. */
        if (bit == P_PROTOCOL && !allow_protocol)
            return false;
    } else if (kind == VEGA_H2_HEAD_RESPONSE && is(f->name, ":status")) {
        bit = P_STATUS, to = status;
    }
    if (!bit || (*seen & bit))
        return false;
    *seen |= bit;
    *to = f->value;
    if (!to->ptr)
        to->ptr = "";
    return true;
}

/* A regular field: its name, connection-specific fields, TE, content-length, Host. */
static bool regular(vega_h2_head_kind kind, const vega_hpack_field *f, vega_h2_head *h,
                    vega_http_str *host)
{
    if (!name_ok(f->name))
        return false;
    /* §8.2.2: "An endpoint MUST NOT generate an HTTP/2 message containing connection-specific
     * header fields. This includes the Connection header field and those listed as having
     * connection-specific semantics in Section 7.6.1 of [HTTP] (that is, Proxy-Connection,
     * Keep-Alive, Transfer-Encoding, and Upgrade). Any message containing connection-specific
     * header fields MUST be treated as malformed". */
    if (is(f->name, "connection") || is(f->name, "proxy-connection") || is(f->name, "keep-alive") ||
        is(f->name, "transfer-encoding") || is(f->name, "upgrade"))
        return false;
    /* "The only exception to this is the TE header field, which MAY be present in an HTTP/2
     * request; when it is, it MUST NOT contain any value other than "trailers"." */
    if (is(f->name, "te") && !vega_http_str_eq_nocase(f->value, "trailers"))
        return false;
    if (is(f->name, "content-length") && kind != VEGA_H2_HEAD_TRAILERS) {
        int64_t v;
        if (!parse_cl(f->value, &v) || (h->content_length >= 0 && h->content_length != v))
            return false;
        h->content_length = v;
    }
    if (is(f->name, "host")) {
        if (host->ptr && (host->len != f->value.len ||
                          (f->value.len && memcmp(host->ptr, f->value.ptr, f->value.len))))
            return false;
        *host = f->value;
        if (!host->ptr)
            host->ptr = "";
    }
    return true;
}

static bool eq_nocase(vega_http_str a, vega_http_str b)
{
    if (a.len != b.len)
        return false;
    for (size_t i = 0; i < a.len; i++) {
        char x = a.ptr[i], y = b.ptr[i];
        if (x >= 'A' && x <= 'Z')
            x = (char)(x + 32);
        if (y >= 'A' && y <= 'Z')
            y = (char)(y + 32);
        if (x != y)
            return false;
    }
    return true;
}

/* §8.3.1, §8.5, RFC 8441 §4: the request pseudo-header fields. */
static bool request_ok(const vega_h2_head *h, unsigned seen, vega_http_str host)
{
    if (!(seen & P_METHOD))
        return false;
    bool connect = vega_http_str_eq(h->method, "CONNECT");
    if (seen & P_PROTOCOL) {
        /* RFC 8441 §4: ":method" CONNECT, and ":scheme" and ":path" MUST be included. */
        if (!connect || !(seen & P_SCHEME) || !(seen & P_PATH) || !(seen & P_AUTHORITY))
            return false;
    } else if (connect) {
        /* §8.5: "The ":scheme" and ":path" pseudo-header fields MUST be omitted." and
         * ":authority" contains the host and port to connect to. */
        return !(seen & (P_SCHEME | P_PATH)) && (seen & P_AUTHORITY) && h->authority.len;
    }
    /* §8.3.1: "All HTTP/2 requests MUST include exactly one valid value for the ":method",
     * ":scheme", and ":path" pseudo-header fields, unless they are CONNECT requests". */
    if (!(seen & P_SCHEME) || !(seen & P_PATH) || h->path.len == 0 || h->method.len == 0 ||
        h->scheme.len == 0)
        return false;
    bool web = vega_http_str_eq(h->scheme, "http") || vega_http_str_eq(h->scheme, "https");
    if (web) {
        /* ":path" for "http" or "https" is an absolute path, or '*' for OPTIONS. */
        bool star = h->path.len == 1 && h->path.ptr[0] == '*';
        if (h->path.ptr[0] != '/' && !(star && vega_http_str_eq(h->method, "OPTIONS")))
            return false;
        /* "the request MUST contain either an ":authority" pseudo-header field or a "Host"
         * header field" ... "The authority MUST NOT include the deprecated userinfo
         * subcomponent for "http" or "https" schemed URIs." */
        if (!(seen & P_AUTHORITY) && !host.ptr)
            return false;
        if (memchr(h->authority.ptr ? h->authority.ptr : "", '@', h->authority.len))
            return false;
    }
    /* "A server SHOULD treat a request as malformed if it contains a Host header field that
     * identifies an entity that differs from the entity in the ":authority" pseudo-header
     * field." */
    if ((seen & P_AUTHORITY) && host.ptr && !eq_nocase(host, h->authority))
        return false;
    return true;
}

/* §8.3.2: ":status" is required, three digits. */
static bool response_ok(vega_h2_head *h, unsigned seen, vega_http_str status)
{
    if (!(seen & P_STATUS) || status.len != 3)
        return false;
    int v = 0;
    for (size_t i = 0; i < 3; i++) {
        if (status.ptr[i] < '0' || status.ptr[i] > '9')
            return false;
        v = v * 10 + (status.ptr[i] - '0');
    }
    /* §8.6: 101 (Switching Protocols) has no meaning in HTTP/2. */
    if (!vega_http_status_is_valid(v) || v == 101)
        return false;
    h->status = v;
    if (v < 200)
        h->kind = VEGA_H2_HEAD_INFORMATIONAL;
    return true;
}

static bool check(vega_h2_head_kind kind, const vega_hpack_field *f, size_t n, vega_h2_head *h,
                  bool allow_protocol)
{
    memset(h, 0, sizeof *h);
    h->kind = kind;
    h->content_length = -1;
    unsigned seen = 0;
    size_t first = n;
    vega_http_str host = {0}, status = {0};
    for (size_t i = 0; i < n; i++) {
        if ((!f[i].name.ptr && f[i].name.len) || (!f[i].value.ptr && f[i].value.len) ||
            !value_ok(f[i].value))
            return false;
        if (f[i].name.len && f[i].name.ptr[0] == ':') {
            /* §8.3: "All pseudo-header fields MUST appear in a field block before all regular
             * field lines." */
            if (first < n || !pseudo(kind, &f[i], &seen, h, &status, allow_protocol))
                return false;
            continue;
        }
        if (first == n)
            first = i;
        if (!regular(kind, &f[i], h, &host))
            return false;
    }
    if (kind == VEGA_H2_HEAD_REQUEST && !request_ok(h, seen, host))
        return false;
    if (kind == VEGA_H2_HEAD_RESPONSE && !response_ok(h, seen, status))
        return false;
    h->fields = f + first;
    h->nfields = n - first;
    return true;
}

bool vega__h2_validate_in(vega_h2_conn *c, struct vega_h2_stream *s, vega_h2_head_kind kind,
                          vega_hpack_field *f, size_t n, vega_h2_head *h)
{
    (void)s;
    return check(kind, f, n, h, c->local.enable_connect_protocol);
}

int vega__h2_validate_out(const vega_h2_conn *c, vega_h2_head_kind kind, const vega_hpack_field *f,
                          size_t n, vega_h2_head *h)
{
    (void)c;
    for (size_t i = 0; i < n; i++)
        if ((unsigned)f[i].index > VEGA_HPACK_INDEX_NEVER)
            return -EINVAL;
    return check(kind, f, n, h, true) ? 0 : -EINVAL;
}
