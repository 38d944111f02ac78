/* SPDX-License-Identifier: MIT */
/* Entity-tag parsing, comparison and If-Match / If-None-Match evaluation (RFC 9110 §8.8.3,
 * §13.1.1, §13.1.2). */
#include <string.h>

#include <vega/http.h>

/* etagc = %x21 / %x23-7E / obs-text */
static bool is_etagc(unsigned char c)
{
    return c == 0x21 || (c >= 0x23 && c != 0x7f);
}

/* Parses an entity-tag at s[*i]; advances *i past it. */
static int parse_at(const char *s, size_t len, size_t *i, vega_http_etag *tag)
{
    size_t p = *i;
    tag->weak = false;
    if (len - p >= 2 && s[p] == 'W' && s[p + 1] == '/') {
        tag->weak = true;
        p += 2;
    }
    if (p >= len || s[p] != '"')
        return VEGA_ERR_PROTO;
    size_t start = ++p;
    while (p < len && is_etagc((unsigned char)s[p]))
        p++;
    if (p >= len || s[p] != '"')
        return VEGA_ERR_PROTO;
    tag->opaque = (vega_http_str){s + start, p - start};
    *i = p + 1;
    return 0;
}

int vega_http_etag_parse(const char *s, size_t len, vega_http_etag *tag)
{
    size_t i = 0;
    vega_http_etag t;
    if (parse_at(s, len, &i, &t) < 0 || i != len)
        return VEGA_ERR_PROTO;
    *tag = t;
    return 0;
}

bool vega_http_etag_eq_weak(const vega_http_etag *a, const vega_http_etag *b)
{
    return a->opaque.len == b->opaque.len &&
           (a->opaque.len == 0 || memcmp(a->opaque.ptr, b->opaque.ptr, a->opaque.len) == 0);
}

bool vega_http_etag_eq_strong(const vega_http_etag *a, const vega_http_etag *b)
{
    return !a->weak && !b->weak && vega_http_etag_eq_weak(a, b);
}

static void skip_ows(const char *s, size_t len, size_t *i)
{
    while (*i < len && (s[*i] == ' ' || s[*i] == '\t'))
        (*i)++;
}

int vega_http_etag_list_match(const char *s, size_t len, const vega_http_etag *current,
                              bool has_current, bool strong)
{
    size_t i = 0;
    skip_ows(s, len, &i);
    if (i < len && s[i] == '*') {
        i++;
        skip_ows(s, len, &i);
        if (i != len)
            return VEGA_ERR_PROTO;
        return has_current ? 1 : 0;
    }
    bool match = false, any = false;
    while (i < len) {
        if (s[i] == ',') { /* empty list element */
            i++;
            skip_ows(s, len, &i);
            continue;
        }
        vega_http_etag t;
        if (parse_at(s, len, &i, &t) < 0)
            return VEGA_ERR_PROTO;
        any = true;
        if (current && has_current &&
            (strong ? vega_http_etag_eq_strong(&t, current) : vega_http_etag_eq_weak(&t, current)))
            match = true;
        skip_ows(s, len, &i);
        if (i < len && s[i] != ',')
            return VEGA_ERR_PROTO;
    }
    if (!any)
        return VEGA_ERR_PROTO;
    return match ? 1 : 0;
}
