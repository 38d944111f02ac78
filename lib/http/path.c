/* SPDX-License-Identifier: MIT */
/* Percent-decoding, dot-segment removal (RFC 3986 §5.2.4), a root-confined path normaliser
 * for file servers, and reference resolution (RFC 3986 §5.2.2). */
#include <string.h>

#include <vega/http.h>

#include "base.h"
#include "http_int.h"

vega_ssize vega_http_pct_decode(const char *in, size_t len, char *out, size_t cap, unsigned flags)
{
    size_t w = 0;
    for (size_t r = 0; r < len; r++) {
        unsigned char c = (unsigned char)in[r];
        if (c == '%') {
            if (r + 2 >= len)
                return VEGA_ERR_PROTO;
            int hi = vega__http_hexval((unsigned char)in[r + 1]);
            int lo = vega__http_hexval((unsigned char)in[r + 2]);
            if (hi < 0 || lo < 0)
                return VEGA_ERR_PROTO;
            c = (unsigned char)(hi * 16 + lo);
            if (c == 0 && (flags & VEGA_HTTP_PCT_REJECT_NUL))
                return VEGA_ERR_PROTO;
            if ((c == '/' || c == '\\') && (flags & VEGA_HTTP_PCT_REJECT_SLASH))
                return VEGA_ERR_PROTO;
            r += 2;
        } else if (c == '+' && (flags & VEGA_HTTP_PCT_PLUS_SPACE)) {
            c = ' ';
        }
        if (w >= cap)
            return VEGA_ERR_NOBUF;
        out[w++] = (char)c;
    }
    return (vega_ssize)w;
}

static bool at(const char *s, size_t n, size_t r, const char *lit)
{
    size_t l = strlen(lit);
    return n - r >= l && memcmp(s + r, lit, l) == 0;
}

/* In place safe: every step writes no more than it consumes, so w <= r throughout. */
vega_ssize vega_http_path_remove_dots(const char *in, size_t len, char *out, size_t cap)
{
    size_t r = 0, w = 0;
    while (r < len) {
        size_t rest = len - r;
        if (at(in, len, r, "../")) { /* A */
            r += 3;
        } else if (at(in, len, r, "./")) {
            r += 2;
        } else if (at(in, len, r, "/./")) { /* B: leave the "/" in the input */
            r += 2;
        } else if (rest == 2 && at(in, len, r, "/.")) {
            if (w >= cap)
                return VEGA_ERR_NOBUF;
            out[w++] = '/';
            r = len;
        } else if (at(in, len, r, "/../") || (rest == 3 && at(in, len, r, "/.."))) { /* C */
            while (w > 0 && out[w - 1] != '/')
                w--;
            if (w > 0)
                w--;
            if (rest == 3) {
                if (w >= cap)
                    return VEGA_ERR_NOBUF;
                out[w++] = '/';
                r = len;
            } else {
                r += 3;
            }
        } else if ((rest == 1 && in[r] == '.') || (rest == 2 && at(in, len, r, ".."))) { /* D */
            r = len;
        } else { /* E: move the first segment, with its leading "/" */
            size_t e = r + (in[r] == '/');
            while (e < len && in[e] != '/')
                e++;
            if (!vega__fits(w, e - r, cap))
                return VEGA_ERR_NOBUF;
            memmove(out + w, in + r, e - r);
            w += e - r;
            VEGA_ASSERT(w <= cap);
            r = e;
        }
    }
    return (vega_ssize)w;
}

vega_ssize vega_http_path_normalize_safe(const char *in, size_t len, char *out, size_t cap)
{
    if (len == 0 || in[0] != '/')
        return VEGA_ERR_PROTO;
    /* Decode segment by segment into out; w <= r holds since escapes only shrink. */
    size_t r = 0, w = 0;
    while (r < len) {
        /* in[r] == '/' here: skip runs of slashes */
        while (r < len && in[r] == '/')
            r++;
        size_t seg = w; /* where this segment's "/" goes */
        if (w >= cap)
            return VEGA_ERR_NOBUF;
        out[w++] = '/';
        size_t start = w;
        while (r < len && in[r] != '/') {
            unsigned char c = (unsigned char)in[r];
            if (c == '%') {
                if (r + 2 >= len)
                    return VEGA_ERR_PROTO;
                int hi = vega__http_hexval((unsigned char)in[r + 1]);
                int lo = vega__http_hexval((unsigned char)in[r + 2]);
                if (hi < 0 || lo < 0)
                    return VEGA_ERR_PROTO;
                c = (unsigned char)(hi * 16 + lo);
                r += 3;
            } else {
                r++;
            }
            if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f)
                return VEGA_ERR_PROTO;
            if (w >= cap)
                return VEGA_ERR_NOBUF;
            out[w++] = (char)c;
        }
        size_t sl = w - start;
        if (sl == 1 && out[start] == '.') {
            w = seg; /* drop "/." */
        } else if (sl == 2 && out[start] == '.' && out[start + 1] == '.') {
            if (seg == 0)
                return VEGA_ERR_PROTO; /* would climb above the root */
            w = seg;
            while (w > 0 && out[w - 1] != '/')
                w--;
            w--; /* the previous segment's "/" */
        }
    }
    if (w == 0) {
        if (cap < 1)
            return VEGA_ERR_NOBUF;
        out[w++] = '/';
    } else if (len > 0 && in[len - 1] == '/' && out[w - 1] != '/') {
        /* keep a trailing slash ("/a/" stays a directory) */
        if (w >= cap)
            return VEGA_ERR_NOBUF;
        out[w++] = '/';
    }
    return (vega_ssize)w;
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

vega_ssize vega_http_url_resolve(const char *base, size_t base_len, const char *ref, size_t ref_len,
                                 char *out, size_t cap)
{
    vega_http_url b, r, t;
    if (vega_http_url_parse(&b, base, base_len) < 0 ||
        vega_http_url_parse_ref(&r, ref, ref_len) < 0)
        return VEGA_ERR_PROTO;
    /* §5.2.2: pick each component; the path is built in out and normalised in place. */
    size_t n = 0;
    bool ok = true;
    const vega_http_url *auth; /* whose authority T gets */
    const vega_http_str *query;
    t = r;
    if (r.scheme.ptr) {
        auth = &r;
        query = &r.query;
    } else if (r.host.ptr) {
        t.scheme = b.scheme;
        auth = &r;
        query = &r.query;
    } else {
        t.scheme = b.scheme;
        auth = &b;
        if (r.path.len == 0)
            query = r.query.ptr ? &r.query : &b.query;
        else
            query = &r.query;
    }
    ok = put(out, cap, &n, t.scheme.ptr, t.scheme.len) && put(out, cap, &n, ":", 1);
    if (ok && auth->authority.ptr)
        ok = put(out, cap, &n, "//", 2) &&
             put(out, cap, &n, auth->authority.ptr, auth->authority.len);
    if (!ok)
        return VEGA_ERR_NOBUF;
    size_t pstart = n;
    if (auth == &r || (r.path.len > 0 && r.path.ptr[0] == '/')) {
        ok = put(out, cap, &n, r.path.ptr, r.path.len);
    } else if (r.path.len == 0) {
        ok = put(out, cap, &n, b.path.ptr, b.path.len);
    } else { /* §5.2.3 merge */
        if (b.host.ptr && b.path.len == 0) {
            ok = put(out, cap, &n, "/", 1);
        } else {
            size_t keep = b.path.len;
            while (keep > 0 && b.path.ptr[keep - 1] != '/')
                keep--;
            ok = put(out, cap, &n, b.path.ptr, keep);
        }
        ok = ok && put(out, cap, &n, r.path.ptr, r.path.len);
    }
    if (!ok)
        return VEGA_ERR_NOBUF;
    if (!(auth == &b && r.path.len == 0)) {
        vega_ssize pl =
            vega_http_path_remove_dots(out + pstart, n - pstart, out + pstart, n - pstart);
        if (pl < 0)
            return pl;
        n = pstart + (size_t)pl;
    }
    if (!auth->authority.ptr && n - pstart >= 2 && out[pstart] == '/' && out[pstart + 1] == '/') {
        /* "//" would read as an authority: keep the meaning with "/." (RFC 3986 errata) */
        if (!put(out, cap, &n, "..", 2))
            return VEGA_ERR_NOBUF;
        memmove(out + pstart + 2, out + pstart, n - pstart - 2);
        memcpy(out + pstart, "/.", 2);
    }
    if (query->ptr)
        ok = put(out, cap, &n, "?", 1) && put(out, cap, &n, query->ptr, query->len);
    if (ok && r.fragment.ptr)
        ok = put(out, cap, &n, "#", 1) && put(out, cap, &n, r.fragment.ptr, r.fragment.len);
    if (!ok || n >= cap)
        return VEGA_ERR_NOBUF;
    out[n] = '\0';
    return (vega_ssize)n;
}
