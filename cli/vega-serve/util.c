/* SPDX-License-Identifier: MIT */
/* vega-serve: a bounded growing buffer with the escapes listings need (HTML, URL, JSON). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

void sbuf_init(struct sbuf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void sbuf_free(struct sbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

static bool sbuf_reserve(struct sbuf *b, size_t n)
{
    if (b->failed)
        return false;
    if (n > b->max - b->len) {
        b->failed = true;
        return false;
    }
    if (b->len + n <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n)
        cap *= 2;
    if (cap > b->max)
        cap = b->max;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void sbuf_add(struct sbuf *b, const void *s, size_t n)
{
    if (n && sbuf_reserve(b, n)) {
        memcpy(b->p + b->len, s, n);
        b->len += n;
    }
}

void sbuf_adds(struct sbuf *b, const char *s)
{
    sbuf_add(b, s, strlen(s));
}

void sbuf_addf(struct sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        b->failed = true;
        return;
    }
    sbuf_add(b, tmp, (size_t)n);
}

void sbuf_html(struct sbuf *b, const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep = NULL;
        switch (s[i]) {
        case '&':
            rep = "&amp;";
            break;
        case '<':
            rep = "&lt;";
            break;
        case '>':
            rep = "&gt;";
            break;
        case '"':
            rep = "&quot;";
            break;
        case '\'':
            rep = "&#39;";
            break;
        default:
            continue;
        }
        sbuf_add(b, s + start, i - start);
        sbuf_adds(b, rep);
        start = i + 1;
    }
    sbuf_add(b, s + start, n - start);
}

void sbuf_url(struct sbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        /* Unreserved characters and "/" go as they are; everything else is escaped, ":" too,
         * so that a name like "a:b" is never read as a scheme in a relative link. */
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
            sbuf_add(b, &s[i], 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            sbuf_add(b, e, 3);
        }
    }
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, min = 0x80;
        c &= 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, min = 0x800;
        c &= 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, min = 0x10000;
        c &= 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    return len;
}

void sbuf_json(struct sbuf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sbuf_add(b, e, 2);
            i++;
        } else if (c < 0x20 || c == 0x7F) {
            sbuf_addf(b, "\\u%04x", c);
            i++;
        } else {
            /* File names are bytes; JSON is UTF-8: a byte that starts no valid sequence
             * becomes U+FFFD. */
            size_t l = utf8_len(u + i, n - i);
            if (l == 0) {
                sbuf_adds(b, "\\ufffd");
                i++;
            } else {
                sbuf_add(b, s + i, l);
                i += l;
            }
        }
    }
}

const char *serve_req_field(const vega_http_request *req, const char *name, size_t *len)
{
    const vega_http_field *f = vega_http_fields_get(req->fields, name, strlen(name));
    if (!f) {
        *len = 0;
        return NULL;
    }
    *len = f->value.len;
    return f->value.ptr;
}

const char *serve_req_list(const vega_http_request *req, const char *name, char *buf, size_t cap,
                           size_t *len)
{
    size_t nl = strlen(name);
    vega_ssize first = vega_http_fields_find(req->fields, name, nl, 0);
    if (first < 0) {
        *len = 0;
        return NULL;
    }
    /* The usual case, one line, needs no copy. */
    if (vega_http_fields_find(req->fields, name, nl, (size_t)first + 1) < 0) {
        *len = req->fields->items[first].value.len;
        return req->fields->items[first].value.ptr;
    }
    vega_ssize n = vega_http_fields_get_combined(req->fields, name, nl, buf, cap);
    if (n < 0) {
        /* Too long to combine: the first line alone (a list cut at a line is still a list). */
        *len = req->fields->items[first].value.len;
        return req->fields->items[first].value.ptr;
    }
    *len = (size_t)n;
    return buf;
}
