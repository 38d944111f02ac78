/* SPDX-License-Identifier: MIT */
/* The HPACK static table (RFC 7541 §2.3.1, Appendix A) and its lookup for the encoder. */
#include <string.h>

#include "hpack_int.h"

#define E(n, v)                                                                                    \
    {                                                                                              \
        n, v, sizeof(n) - 1, sizeof(v) - 1                                                         \
    }

const struct vega__hpack_static vega__hpack_static_table[VEGA__HPACK_STATIC_LEN] = {
    E(":authority", ""),
    E(":method", "GET"),
    E(":method", "POST"),
    E(":path", "/"),
    E(":path", "/index.html"),
    E(":scheme", "http"),
    E(":scheme", "https"),
    E(":status", "200"),
    E(":status", "204"),
    E(":status", "206"),
    E(":status", "304"),
    E(":status", "400"),
    E(":status", "404"),
    E(":status", "500"),
    E("accept-charset", ""),
    E("accept-encoding", "gzip, deflate"),
    E("accept-language", ""),
    E("accept-ranges", ""),
    E("accept", ""),
    E("access-control-allow-origin", ""),
    E("age", ""),
    E("allow", ""),
    E("authorization", ""),
    E("cache-control", ""),
    E("content-disposition", ""),
    E("content-encoding", ""),
    E("content-language", ""),
    E("content-length", ""),
    E("content-location", ""),
    E("content-range", ""),
    E("content-type", ""),
    E("cookie", ""),
    E("date", ""),
    E("etag", ""),
    E("expect", ""),
    E("expires", ""),
    E("from", ""),
    E("host", ""),
    E("if-match", ""),
    E("if-modified-since", ""),
    E("if-none-match", ""),
    E("if-range", ""),
    E("if-unmodified-since", ""),
    E("last-modified", ""),
    E("link", ""),
    E("location", ""),
    E("max-forwards", ""),
    E("proxy-authenticate", ""),
    E("proxy-authorization", ""),
    E("range", ""),
    E("referer", ""),
    E("refresh", ""),
    E("retry-after", ""),
    E("server", ""),
    E("set-cookie", ""),
    E("strict-transport-security", ""),
    E("transfer-encoding", ""),
    E("user-agent", ""),
    E("vary", ""),
    E("via", ""),
    E("www-authenticate", ""),
};

unsigned vega__hpack_static_find(const uint8_t *name, size_t name_len, const uint8_t *value,
                                 size_t value_len, unsigned *name_idx)
{
    *name_idx = 0;
    /* Entries with the same name are adjacent, so the scan stops at the first name that
     * differs after a match. */
    for (unsigned i = 0; i < VEGA__HPACK_STATIC_LEN; i++) {
        const struct vega__hpack_static *s = &vega__hpack_static_table[i];
        if (s->name_len != name_len || (name_len && memcmp(s->name, name, name_len) != 0)) {
            if (*name_idx)
                break;
            continue;
        }
        if (!*name_idx)
            *name_idx = i + 1;
        if (s->value_len == value_len && (!value_len || memcmp(s->value, value, value_len) == 0))
            return i + 1;
    }
    return 0;
}
