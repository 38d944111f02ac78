/* SPDX-License-Identifier: MIT */
/* The QPACK static table (RFC 9204 Appendix A, 99 entries indexed from 0, §3.1) and its
 * lookup by name and value. */
#include <string.h>

#include "qpack_int.h"

#define E(n, v)                                                                                    \
    {                                                                                              \
        n, v, sizeof(n) - 1, sizeof(v) - 1                                                         \
    }

/* clang-format off */
const struct vega__qp_static vega__qp_static[VEGA_QPACK_STATIC_COUNT] = {
    E(":authority", ""), /* 0 */
    E(":path", "/"), /* 1 */
    E("age", "0"), /* 2 */
    E("content-disposition", ""), /* 3 */
    E("content-length", "0"), /* 4 */
    E("cookie", ""), /* 5 */
    E("date", ""), /* 6 */
    E("etag", ""), /* 7 */
    E("if-modified-since", ""), /* 8 */
    E("if-none-match", ""), /* 9 */
    E("last-modified", ""), /* 10 */
    E("link", ""), /* 11 */
    E("location", ""), /* 12 */
    E("referer", ""), /* 13 */
    E("set-cookie", ""), /* 14 */
    E(":method", "CONNECT"), /* 15 */
    E(":method", "DELETE"), /* 16 */
    E(":method", "GET"), /* 17 */
    E(":method", "HEAD"), /* 18 */
    E(":method", "OPTIONS"), /* 19 */
    E(":method", "POST"), /* 20 */
    E(":method", "PUT"), /* 21 */
    E(":scheme", "http"), /* 22 */
    E(":scheme", "https"), /* 23 */
    E(":status", "103"), /* 24 */
    E(":status", "200"), /* 25 */
    E(":status", "304"), /* 26 */
    E(":status", "404"), /* 27 */
    E(":status", "503"), /* 28 */
    E("accept", "*/*"), /* 29 */
    E("accept", "application/dns-message"), /* 30 */
    E("accept-encoding", "gzip, deflate, br"), /* 31 */
    E("accept-ranges", "bytes"), /* 32 */
    E("access-control-allow-headers", "cache-control"), /* 33 */
    E("access-control-allow-headers", "content-type"), /* 34 */
    E("access-control-allow-origin", "*"), /* 35 */
    E("cache-control", "max-age=0"), /* 36 */
    E("cache-control", "max-age=2592000"), /* 37 */
    E("cache-control", "max-age=604800"), /* 38 */
    E("cache-control", "no-cache"), /* 39 */
    E("cache-control", "no-store"), /* 40 */
    E("cache-control", "public, max-age=31536000"), /* 41 */
    E("content-encoding", "br"), /* 42 */
    E("content-encoding", "gzip"), /* 43 */
    E("content-type", "application/dns-message"), /* 44 */
    E("content-type", "application/javascript"), /* 45 */
    E("content-type", "application/json"), /* 46 */
    E("content-type", "application/x-www-form-urlencoded"), /* 47 */
    E("content-type", "image/gif"), /* 48 */
    E("content-type", "image/jpeg"), /* 49 */
    E("content-type", "image/png"), /* 50 */
    E("content-type", "text/css"), /* 51 */
    E("content-type", "text/html; charset=utf-8"), /* 52 */
    E("content-type", "text/plain"), /* 53 */
    E("content-type", "text/plain;charset=utf-8"), /* 54 */
    E("range", "bytes=0-"), /* 55 */
    E("strict-transport-security", "max-age=31536000"), /* 56 */
    E("strict-transport-security", "max-age=31536000; includesubdomains"), /* 57 */
    E("strict-transport-security", "max-age=31536000; includesubdomains; preload"), /* 58 */
    E("vary", "accept-encoding"), /* 59 */
    E("vary", "origin"), /* 60 */
    E("x-content-type-options", "nosniff"), /* 61 */
    E("x-xss-protection", "1; mode=block"), /* 62 */
    E(":status", "100"), /* 63 */
    E(":status", "204"), /* 64 */
    E(":status", "206"), /* 65 */
    E(":status", "302"), /* 66 */
    E(":status", "400"), /* 67 */
    E(":status", "403"), /* 68 */
    E(":status", "421"), /* 69 */
    E(":status", "425"), /* 70 */
    E(":status", "500"), /* 71 */
    E("accept-language", ""), /* 72 */
    E("access-control-allow-credentials", "FALSE"), /* 73 */
    E("access-control-allow-credentials", "TRUE"), /* 74 */
    E("access-control-allow-headers", "*"), /* 75 */
    E("access-control-allow-methods", "get"), /* 76 */
    E("access-control-allow-methods", "get, post, options"), /* 77 */
    E("access-control-allow-methods", "options"), /* 78 */
    E("access-control-expose-headers", "content-length"), /* 79 */
    E("access-control-request-headers", "content-type"), /* 80 */
    E("access-control-request-method", "get"), /* 81 */
    E("access-control-request-method", "post"), /* 82 */
    E("alt-svc", "clear"), /* 83 */
    E("authorization", ""), /* 84 */
    E("content-security-policy", "script-src 'none'; object-src 'none'; base-uri 'none'"), /* 85 */
    E("early-data", "1"), /* 86 */
    E("expect-ct", ""), /* 87 */
    E("forwarded", ""), /* 88 */
    E("if-range", ""), /* 89 */
    E("origin", ""), /* 90 */
    E("purpose", "prefetch"), /* 91 */
    E("server", ""), /* 92 */
    E("timing-allow-origin", "*"), /* 93 */
    E("upgrade-insecure-requests", "1"), /* 94 */
    E("user-agent", ""), /* 95 */
    E("x-forwarded-for", ""), /* 96 */
    E("x-frame-options", "deny"), /* 97 */
    E("x-frame-options", "sameorigin"), /* 98 */
};
/* clang-format on */

int vega__qp_static_find(const uint8_t *name, size_t name_len, const uint8_t *value,
                         size_t value_len, int *name_idx)
{
    *name_idx = -1;
    for (int i = 0; i < VEGA_QPACK_STATIC_COUNT; i++) {
        const struct vega__qp_static *s = &vega__qp_static[i];
        if (s->name_len != name_len || memcmp(s->name, name, name_len) != 0)
            continue;
        if (*name_idx < 0)
            *name_idx = i;
        if (s->value_len == value_len &&
            (value_len == 0 || memcmp(s->value, value, value_len) == 0))
            return i;
    }
    return -1;
}

int vega_qpack_static_entry(size_t index, vega_http_str *name, vega_http_str *value)
{
    if (index >= VEGA_QPACK_STATIC_COUNT || !name || !value)
        return -EINVAL;
    name->ptr = vega__qp_static[index].name;
    name->len = vega__qp_static[index].name_len;
    value->ptr = vega__qp_static[index].value;
    value->len = vega__qp_static[index].value_len;
    return 0;
}
