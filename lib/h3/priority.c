/* SPDX-License-Identifier: MIT */
/* Extensible priorities (RFC 9218 §4, §5): the Priority field value, an RFC 8941 dictionary
 * with u (urgency, an integer 0..7) and i (incremental, a boolean); unknown members, out-of-range
 * values and values of other types are ignored (§4). Also the names of HTTP/3 error codes. */
#include <string.h>

#include "h3_core_int.h"

struct sf {
    const char *p;
    size_t len, at;
};

static bool more(const struct sf *s)
{
    return s->at < s->len;
}

static char cur(const struct sf *s)
{
    return s->p[s->at];
}

static void skip_sp(struct sf *s)
{
    while (more(s) && cur(s) == ' ')
        s->at++;
}

static void skip_ows(struct sf *s)
{
    while (more(s) && (cur(s) == ' ' || cur(s) == '\t'))
        s->at++;
}

static bool lcalpha(char c)
{
    return c >= 'a' && c <= 'z';
}

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

/* key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ) */
static bool key(struct sf *s, const char **k, size_t *kl)
{
    if (!more(s) || !(lcalpha(cur(s)) || cur(s) == '*'))
        return false;
    size_t start = s->at;
    while (more(s) && (lcalpha(cur(s)) || digit(cur(s)) || strchr("_-.*", cur(s))))
        s->at++;
    *k = s->p + start;
    *kl = s->at - start;
    return true;
}

enum sf_type {
    SF_INT,
    SF_BOOL,
    SF_OTHER
};

/* bare-item: integer, decimal, string, token, byte sequence or boolean (RFC 8941 §3.3). */
static bool bare_item(struct sf *s, enum sf_type *t, int64_t *v)
{
    if (!more(s))
        return false;
    char c = cur(s);
    *t = SF_OTHER;
    if (c == '-' || digit(c)) {
        size_t start = s->at++, digits = c == '-' ? 0 : 1;
        int64_t x = c == '-' ? 0 : c - '0';
        while (more(s) && digit(cur(s)) && digits < 16)
            x = x * 10 + (cur(s) - '0'), digits++, s->at++;
        if (digits == 0 || digits > 15)
            return false;
        if (more(s) && cur(s) == '.') { /* a decimal: 1*12 DIGIT "." 1*3 DIGIT */
            size_t frac = 0;
            for (s->at++; more(s) && digit(cur(s)); s->at++)
                frac++;
            return digits <= 12 && frac >= 1 && frac <= 3;
        }
        *t = SF_INT;
        *v = s->p[start] == '-' ? -x : x;
        return true;
    }
    if (c == '"') {
        for (s->at++; more(s); s->at++) {
            char d = cur(s);
            if (d == '\\') {
                s->at++;
                if (!more(s) || (cur(s) != '"' && cur(s) != '\\'))
                    return false;
            } else if (d == '"') {
                s->at++;
                return true;
            } else if (d < 0x20 || d > 0x7e) {
                return false;
            }
        }
        return false;
    }
    if (c == ':') {
        for (s->at++; more(s) && cur(s) != ':'; s->at++)
            if (!(digit(cur(s)) || ((cur(s) | 0x20) >= 'a' && (cur(s) | 0x20) <= 'z') ||
                  strchr("+/=", cur(s))))
                return false;
        return more(s) && (s->at++, true);
    }
    if (c == '?') {
        s->at++;
        if (!more(s) || (cur(s) != '0' && cur(s) != '1'))
            return false;
        *t = SF_BOOL;
        *v = cur(s) == '1';
        s->at++;
        return true;
    }
    if (((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '*') {
        for (s->at++; more(s); s->at++) {
            char d = cur(s);
            if (!(digit(d) || ((d | 0x20) >= 'a' && (d | 0x20) <= 'z') ||
                  strchr("!#$%&'*+-.^_`|~:/", d)))
                break;
        }
        return true;
    }
    return false;
}

/* parameters = *( ";" *SP key [ "=" bare-item ] ) */
static bool parameters(struct sf *s)
{
    while (more(s) && cur(s) == ';') {
        s->at++;
        skip_sp(s);
        const char *k;
        size_t kl;
        enum sf_type t;
        int64_t v;
        if (!key(s, &k, &kl))
            return false;
        if (more(s) && cur(s) == '=') {
            s->at++;
            if (!bare_item(s, &t, &v))
                return false;
        }
    }
    return true;
}

/* inner-list = "(" *SP [ sf-item *( 1*SP sf-item ) *SP ] ")" parameters */
static bool inner_list(struct sf *s)
{
    s->at++;
    for (;;) {
        skip_sp(s);
        if (!more(s))
            return false;
        if (cur(s) == ')') {
            s->at++;
            return parameters(s);
        }
        enum sf_type t;
        int64_t v;
        if (!bare_item(s, &t, &v) || !parameters(s))
            return false;
        if (more(s) && cur(s) != ' ' && cur(s) != ')')
            return false;
    }
}

int vega__h3_priority_merge(const char *str, size_t len, vega_h3_priority *p)
{
    struct sf s = {str, len, 0};
    vega_h3_priority r = *p;
    skip_sp(&s);
    while (more(&s)) {
        const char *k;
        size_t kl;
        enum sf_type t = SF_BOOL;
        int64_t v = 1; /* a member without a value is the boolean true */
        if (!key(&s, &k, &kl))
            return VEGA_ERR_PROTO;
        if (more(&s) && cur(&s) == '=') {
            s.at++;
            if (more(&s) && cur(&s) == '(') {
                t = SF_OTHER;
                if (!inner_list(&s))
                    return VEGA_ERR_PROTO;
            } else if (!bare_item(&s, &t, &v) || !parameters(&s)) {
                return VEGA_ERR_PROTO;
            }
        } else if (!parameters(&s)) {
            return VEGA_ERR_PROTO;
        }
        /* RFC 9218 §4.1, §4.2; a later member of the same key overrides (RFC 8941 §3.2). */
        if (kl == 1 && k[0] == 'u' && t == SF_INT && v >= 0 && v <= 7)
            r.urgency = (uint8_t)v;
        if (kl == 1 && k[0] == 'i' && t == SF_BOOL)
            r.incremental = v != 0;
        skip_ows(&s);
        if (!more(&s))
            break;
        if (cur(&s) != ',')
            return VEGA_ERR_PROTO;
        s.at++;
        skip_ows(&s);
        if (!more(&s))
            return VEGA_ERR_PROTO; /* a trailing comma */
    }
    *p = r;
    return 0;
}

int vega_h3_priority_parse(const char *s, size_t len, vega_h3_priority *out)
{
    vega_h3_priority p = {3, false};
    int rc = s || !len ? vega__h3_priority_merge(s ? s : "", len, &p) : VEGA_ERR_PROTO;
    if (rc < 0) {
        p.urgency = 3;
        p.incremental = false;
    }
    *out = p;
    return rc;
}

vega_ssize vega_h3_priority_write(char *out, size_t cap, const vega_h3_priority *p)
{
    if (!p || p->urgency > 7 || (!out && cap))
        return -EINVAL;
    char tmp[8];
    size_t n = 0;
    if (p->urgency != 3) {
        memcpy(tmp, "u=", 2);
        tmp[2] = (char)('0' + p->urgency);
        n = 3;
    }
    if (p->incremental) {
        if (n) {
            memcpy(tmp + n, ", ", 2);
            n += 2;
        }
        tmp[n++] = 'i';
    }
    if (n > cap)
        return VEGA_ERR_NOBUF;
    if (n)
        memcpy(out, tmp, n);
    return (vega_ssize)n;
}

const char *vega_h3_error_name(uint64_t code)
{
    static const char *const h3[] = {"H3_NO_ERROR",
                                     "H3_GENERAL_PROTOCOL_ERROR",
                                     "H3_INTERNAL_ERROR",
                                     "H3_STREAM_CREATION_ERROR",
                                     "H3_CLOSED_CRITICAL_STREAM",
                                     "H3_FRAME_UNEXPECTED",
                                     "H3_FRAME_ERROR",
                                     "H3_EXCESSIVE_LOAD",
                                     "H3_ID_ERROR",
                                     "H3_SETTINGS_ERROR",
                                     "H3_MISSING_SETTINGS",
                                     "H3_REQUEST_REJECTED",
                                     "H3_REQUEST_CANCELLED",
                                     "H3_REQUEST_INCOMPLETE",
                                     "H3_MESSAGE_ERROR",
                                     "H3_CONNECT_ERROR",
                                     "H3_VERSION_FALLBACK"};
    if (code >= VEGA_H3_NO_ERROR && code <= VEGA_H3_VERSION_FALLBACK)
        return h3[code - VEGA_H3_NO_ERROR];
    switch (code) {
    case VEGA_QPACK_DECOMPRESSION_FAILED:
        return "QPACK_DECOMPRESSION_FAILED";
    case VEGA_QPACK_ENCODER_STREAM_ERROR:
        return "QPACK_ENCODER_STREAM_ERROR";
    case VEGA_QPACK_DECODER_STREAM_ERROR:
        return "QPACK_DECODER_STREAM_ERROR";
    case VEGA_H3_DATAGRAM_ERROR:
        return "H3_DATAGRAM_ERROR";
    default:
        return vega__h3_is_reserved(code) ? "H3_GREASE" : "unknown";
    }
}
