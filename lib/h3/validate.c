/* SPDX-License-Identifier: MIT */
/* What makes an HTTP/3 message malformed (RFC 9114 §4.1.2): field names (lowercase tokens,
 * §4.2 and RFC 9110 §5.1) and values (RFC 9110 §5.5), connection-specific fields and TE (§4.2),
 * pseudo-header fields (§4.3: defined ones only, once each, before regular fields, none in
 * trailers), request rules (§4.3.1, CONNECT §4.4, extended CONNECT RFC 9220 §4), :status
 * (§4.3.2), content-length (RFC 9110 §8.6), and the Priority field (RFC 9218 §5). */
#include <string.h>
#include <strings.h>

#include "h3_core_int.h"

static bool lower_tchar(unsigned char ch)
{
    if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z'))
        return true;
    return ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

bool vega__h3_name_ok(const char *p, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!lower_tchar((unsigned char)p[i]))
            return false;
    return true;
}

bool vega__h3_value_ok(const char *p, size_t n)
{
    return vega_http_field_value_is_valid(p, n);
}

static bool str_is(const char *p, size_t n, const char *s)
{
    size_t sl = strlen(s);
    return n == sl && memcmp(p, s, n) == 0;
}

/* §4.2: "An endpoint MUST NOT generate an HTTP/3 field section containing connection-specific
 * fields; any message containing connection-specific fields MUST be treated as malformed." */
static bool connection_specific(const char *n, size_t len)
{
    return str_is(n, len, "connection") || str_is(n, len, "keep-alive") ||
           str_is(n, len, "proxy-connection") || str_is(n, len, "transfer-encoding") ||
           str_is(n, len, "upgrade");
}

/* "The only exception to this is the TE header field, which MAY be present in an HTTP/3 request
 * header; when it is, it MUST NOT contain any value other than "trailers"." */
static bool te_ok(vega_http_str v, bool request)
{
    return request && v.len == 8 && strncasecmp(v.ptr, "trailers", 8) == 0;
}

bool vega__h3_field_ok(const vega_http_field *f, bool request)
{
    if (!f->name.ptr || (!f->value.ptr && f->value.len))
        return false;
    if (!vega__h3_name_ok(f->name.ptr, f->name.len) ||
        !vega__h3_value_ok(f->value.ptr ? f->value.ptr : "", f->value.len))
        return false;
    if (connection_specific(f->name.ptr, f->name.len))
        return false;
    return !str_is(f->name.ptr, f->name.len, "te") || te_ok(f->value, request);
}

/* RFC 9110 §8.6: digits; a list of identical values may be accepted as one. Returns false
 * when invalid or different from *cl (when *have). */
static bool content_length(vega_http_str v, bool *have, uint64_t *cl)
{
    if (v.len == 0)
        return false;
    for (size_t i = 0;; i++) { /* i is at the start of an element */
        while (i < v.len && (v.ptr[i] == ' ' || v.ptr[i] == '\t'))
            i++;
        uint64_t x = 0;
        size_t start = i;
        for (; i < v.len && v.ptr[i] >= '0' && v.ptr[i] <= '9'; i++) {
            if (x > (VEGA__H3_VARINT_MAX - 9) / 10)
                return false;
            x = x * 10 + (uint64_t)(v.ptr[i] - '0');
        }
        if (i == start || (*have && x != *cl))
            return false;
        *have = true;
        *cl = x;
        while (i < v.len && (v.ptr[i] == ' ' || v.ptr[i] == '\t'))
            i++;
        if (i == v.len)
            return true;
        if (v.ptr[i] != ',')
            return false;
    }
}

/* The pseudo-header field line i; returns NULL or the reason it is malformed. */
static const char *pseudo(vega__h3_role role, vega_http_field f, vega_h3_head *h,
                          vega_http_str *status, bool seen[6])
{
    static const char *const req[] = {":method", ":scheme", ":authority", ":path", ":protocol"};
    vega_http_str *slots[] = {&h->method, &h->scheme, &h->authority, &h->path, &h->protocol};
    /* §4.3: "Pseudo-header fields MUST NOT appear in trailer sections." */
    if (role == VEGA__H3_ROLE_TRAILERS)
        return "pseudo-header field in trailers";
    if (!vega__h3_value_ok(f.value.ptr, f.value.len))
        return "invalid pseudo-header field value";
    if (role == VEGA__H3_ROLE_RESPONSE) {
        /* §4.3: "pseudo-header fields defined for requests MUST NOT appear in responses". */
        if (!str_is(f.name.ptr, f.name.len, ":status"))
            return "unknown pseudo-header field in a response";
        if (seen[5])
            return "duplicate :status";
        seen[5] = true;
        *status = f.value;
        return NULL;
    }
    for (size_t k = 0; k < 5; k++) {
        if (!str_is(f.name.ptr, f.name.len, req[k]))
            continue;
        /* §4.3.1: "All HTTP/3 requests MUST include exactly one value for the :method,
         * :scheme, and :path pseudo-header fields" (and none is defined twice). */
        if (seen[k])
            return "duplicate pseudo-header field";
        seen[k] = true;
        *slots[k] = f.value;
        return NULL;
    }
    return "unknown pseudo-header field in a request";
}

static bool scheme_is(vega_http_str s, const char *name)
{
    return vega_http_str_eq_nocase(s, name);
}

/* Request-target parts carry no whitespace (RFC 3986 has none in a URI): a space in :path
 * would make a request line of two targets once forwarded over HTTP/1.1. */
static bool no_space(vega_http_str v)
{
    return !v.ptr || (!memchr(v.ptr, ' ', v.len) && !memchr(v.ptr, '\t', v.len));
}

/* RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) */
static bool scheme_ok(vega_http_str v)
{
    if (!v.ptr)
        return true;
    for (size_t i = 0; i < v.len; i++) {
        char ch = (char)(v.ptr[i] | 0x20);
        bool alpha = ch >= 'a' && ch <= 'z';
        if (!alpha &&
            (i == 0 || !((v.ptr[i] >= '0' && v.ptr[i] <= '9') || strchr("+-.", v.ptr[i]))))
            return false;
    }
    return v.len > 0;
}

static const char *check_request(const vega_h3_conn *c, const vega_h3_head *h, vega_http_str host,
                                 bool have_host)
{
    if (!h->method.ptr || !vega_http_token_is_valid(h->method.ptr, h->method.len))
        return "missing or invalid :method";
    /* §4.3.1: "An HTTP request that ... contains invalid values for those pseudo-header fields
     * is malformed." */
    if (!no_space(h->path) || !no_space(h->authority) || !no_space(h->protocol) ||
        !scheme_ok(h->scheme))
        return "invalid :path, :authority, :scheme or :protocol";
    bool connect = vega_http_str_eq(h->method, "CONNECT");
    if (h->protocol.ptr) {
        /* RFC 9220 §5: :protocol only after the server's SETTINGS_ENABLE_CONNECT_PROTOCOL, and
         * only with CONNECT, which then carries :scheme and :path. */
        if (!c->connect_protocol || !connect)
            return ":protocol not allowed";
        if (!h->scheme.ptr || !h->path.ptr || !h->authority.ptr)
            return "extended CONNECT without :scheme, :path or :authority";
    } else if (connect) {
        /* §4.4: "The :scheme and :path pseudo-header fields are omitted"; ":authority ...
         * contains the host and port to connect to". */
        if (h->scheme.ptr || h->path.ptr)
            return "CONNECT with :scheme or :path";
        if (!h->authority.ptr || h->authority.len == 0)
            return "CONNECT without :authority";
        return NULL;
    } else if (!h->scheme.ptr || !h->path.ptr) {
        return "missing :scheme or :path";
    }
    if (!scheme_is(h->scheme, "http") && !scheme_is(h->scheme, "https"))
        return NULL; /* other schemes: what their authority needs is theirs to say */
    /* §4.3.1: ":path ... MUST NOT be empty for "http" or "https" URIs"; path-absolute, or "*"
     * for OPTIONS. */
    if (h->path.len == 0 || (h->path.ptr[0] != '/' && !(vega_http_str_eq(h->method, "OPTIONS") &&
                                                        vega_http_str_eq(h->path, "*"))))
        return "bad :path";
    /* "the request MUST contain either an :authority pseudo-header field or a Host header field.
     * If these fields are present, they MUST NOT be empty. If both fields are present, they MUST
     * contain the same value." And no userinfo in the authority. */
    if (!h->authority.ptr && !have_host)
        return "no :authority and no host";
    if ((h->authority.ptr && h->authority.len == 0) || (have_host && host.len == 0))
        return "empty :authority or host";
    if (h->authority.ptr && have_host &&
        (host.len != h->authority.len || memcmp(host.ptr, h->authority.ptr, host.len) != 0))
        return ":authority and host differ";
    if (h->authority.ptr && memchr(h->authority.ptr, '@', h->authority.len))
        return "userinfo in :authority";
    return NULL;
}

/* §4.3.2 and RFC 9110 §15: three digits, 100..599; §4.5: no 101 in HTTP/3. */
static const char *check_status(vega_http_str st, bool seen, int *status)
{
    if (!seen)
        return "missing :status";
    if (st.len != 3)
        return "bad :status";
    int v = 0;
    for (size_t i = 0; i < 3; i++) {
        if (st.ptr[i] < '0' || st.ptr[i] > '9')
            return "bad :status";
        v = v * 10 + (st.ptr[i] - '0');
    }
    if (v < 100 || v > 599 || v == 101)
        return "bad :status";
    *status = v;
    return NULL;
}

/* A regular field line: its name, value and what it means. */
static const char *regular(vega__h3_role role, vega_http_field f, vega_h3_head *h,
                           vega_http_str *host, bool *have_host, bool *prio_bad)
{
    /* §4.2: "A request or response containing uppercase characters in field names MUST be
     * treated as malformed"; §4.1.2: invalid characters in names or values too. */
    if (!vega__h3_name_ok(f.name.ptr, f.name.len))
        return "invalid field name";
    if (!vega__h3_value_ok(f.value.ptr, f.value.len))
        return "invalid field value";
    if (connection_specific(f.name.ptr, f.name.len))
        return "connection-specific field";
    if (str_is(f.name.ptr, f.name.len, "te") && !te_ok(f.value, role == VEGA__H3_ROLE_REQUEST))
        return "te other than trailers";
    if (role == VEGA__H3_ROLE_TRAILERS)
        return NULL;
    if (str_is(f.name.ptr, f.name.len, "content-length") &&
        !content_length(f.value, &h->has_content_length, &h->content_length))
        return "bad content-length";
    if (role == VEGA__H3_ROLE_REQUEST && str_is(f.name.ptr, f.name.len, "host")) {
        if (*have_host)
            return "more than one host";
        *have_host = true;
        *host = f.value;
    }
    if (str_is(f.name.ptr, f.name.len, "priority") && !*prio_bad &&
        vega__h3_priority_merge(f.value.ptr, f.value.len, &h->priority) < 0)
        *prio_bad = true;
    return NULL;
}

const char *vega__h3_check_head(const vega_h3_conn *c, vega__h3_role role,
                                const vega_qpack_section *sec, vega_h3_head *h)
{
    memset(h, 0, sizeof *h);
    h->priority.urgency = 3;
    bool seen[6] = {false}, have_host = false, prio_bad = false;
    vega_http_str status = {0}, host = {0};
    size_t npseudo = 0;
    for (size_t i = 0; i < sec->count; i++) {
        vega_http_field f = sec->fields[i];
        if (f.name.len == 0)
            return "empty field name";
        const char *why;
        if (f.name.ptr[0] == ':') {
            /* §4.3: "Any request or response that contains a pseudo-header field that appears in
             * a header section after a regular header field MUST be treated as malformed." */
            if (npseudo != i)
                return "pseudo-header field after a regular field";
            why = pseudo(role, f, h, &status, seen);
            npseudo++;
        } else {
            why = regular(role, f, h, &host, &have_host, &prio_bad);
        }
        if (why)
            return why;
    }
    if (prio_bad) { /* RFC 8941 §4.2: a field that fails to parse is ignored as a whole */
        h->priority.urgency = 3;
        h->priority.incremental = false;
    }
    h->nfields = sec->count - npseudo;
    if (h->nfields) { /* an empty section may come with no arrays at all */
        h->fields = sec->fields + npseudo;
        h->never_indexed = sec->never_indexed + npseudo;
    }
    if (role == VEGA__H3_ROLE_REQUEST)
        return check_request(c, h, host, have_host);
    if (role == VEGA__H3_ROLE_RESPONSE)
        return check_status(status, seen[5], &h->status);
    return NULL;
}
