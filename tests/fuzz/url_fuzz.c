/* SPDX-License-Identifier: MIT */
/* libFuzzer target for lib/http/url.c and path.c: whatever parses must format and parse back
 * to the same text; dot removal and the safe normaliser never leave "." or ".." segments and
 * are idempotent; resolution yields a URI that resolves to itself. The first byte picks the
 * base for resolution. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/http.h>

#include "fuzz_target.h"

#define MAXN 1024

static const char *bases[] = {
    "http://a/b/c/d;p?q",
    "https://u@[::1]:8443",
    "http://h/",
    "foo:bar/baz",
};

/* True when the path has a "." or ".." segment (only meaningful for "/"-rooted paths). */
static int has_dot_segment(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t s = i;
        while (i < n && p[i] != '/')
            i++;
        size_t l = i - s;
        if ((l == 1 && p[s] == '.') || (l == 2 && p[s] == '.' && p[s + 1] == '.'))
            return 1;
        i++;
    }
    return 0;
}

static void check_round_trip(int (*parse)(vega_http_url *, const char *, size_t), const char *text,
                             size_t size)
{
    vega_http_url u, v;
    char out[MAXN + 64], out2[MAXN + 64];
    if (parse(&u, text, size) != 0)
        return;
    vega_ssize n = vega_http_url_format(&u, out, sizeof out);
    if (n < 0 || (size_t)n > size)
        abort(); /* only an empty ":" port is ever dropped */
    if (parse(&v, out, (size_t)n) != 0)
        abort();
    vega_ssize m = vega_http_url_format(&v, out2, sizeof out2);
    if (m != n || memcmp(out, out2, (size_t)n) != 0)
        abort();
    if (u.port != v.port || u.has_port != v.has_port ||
        u.host_is_ip_literal != v.host_is_ip_literal)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *base = bases[data[0] % 4];
    data++;
    size--;
    if (size > MAXN)
        size = MAXN;
    const char *text = (const char *)data;

    check_round_trip(vega_http_url_parse, text, size);
    check_round_trip(vega_http_url_parse_ref, text, size);
    check_round_trip(vega_http_url_parse_target, text, size);

    char p1[MAXN], p2[MAXN];
    vega_ssize n = vega_http_path_remove_dots(text, size, p1, sizeof p1);
    if (n < 0 || (size_t)n > size)
        abort();
    if (size > 0 && text[0] == '/') {
        if (n == 0 || p1[0] != '/' || has_dot_segment(p1 + 1, (size_t)n - 1))
            abort();
        vega_ssize m = vega_http_path_remove_dots(p1, (size_t)n, p2, sizeof p2);
        if (m != n || memcmp(p1, p2, (size_t)n) != 0)
            abort();
    }

    n = vega_http_path_normalize_safe(text, size, p1, sizeof p1);
    if (n >= 0) {
        if (n == 0 || p1[0] != '/' || has_dot_segment(p1 + 1, (size_t)n - 1) ||
            memchr(p1, '\0', (size_t)n) || memchr(p1, '\\', (size_t)n))
            abort();
        for (vega_ssize i = 1; i < n; i++)
            if (p1[i] == '/' && p1[i - 1] == '/')
                abort();
        if (!memchr(p1, '%', (size_t)n)) { /* re-normalising decoded text is only safe then */
            vega_ssize m = vega_http_path_normalize_safe(p1, (size_t)n, p2, sizeof p2);
            if (m != n || memcmp(p1, p2, (size_t)n) != 0)
                abort();
        }
    }

    char r1[2 * MAXN + 64], r2[2 * MAXN + 64];
    vega_ssize rn = vega_http_url_resolve(base, strlen(base), text, size, r1, sizeof r1);
    if (rn == VEGA_ERR_NOBUF)
        abort(); /* r1 is always big enough */
    if (rn >= 0) {
        vega_http_url t;
        if (vega_http_url_parse_ref(&t, r1, (size_t)rn) != 0 || !t.scheme.ptr)
            abort();
        { /* resolving the result again changes nothing */
            vega_ssize rm =
                vega_http_url_resolve(base, strlen(base), r1, (size_t)rn, r2, sizeof r2);
            if (rm != rn || memcmp(r1, r2, (size_t)rn) != 0)
                abort();
        }
    }
    return 0;
}
