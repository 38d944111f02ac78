/* SPDX-License-Identifier: MIT */
/* HTTP content-coding names (RFC 9110 section 8.4.1) to and from vega_compress_kind. */
#include <string.h>
#include <strings.h>

#include "compress_int.h"

static const struct {
    const char *name;
    vega_compress_kind kind;
} names[] = {
    {"gzip", VEGA_COMPRESS_GZIP},
    /* RFC 9110 section 8.4.1.3: "A recipient SHOULD consider "x-gzip" to be equivalent to
     * "gzip"." */
    {"x-gzip", VEGA_COMPRESS_GZIP},
    {"deflate", VEGA_COMPRESS_DEFLATE},
    {"br", VEGA_COMPRESS_BROTLI},
    {"zstd", VEGA_COMPRESS_ZSTD},
    {"identity", VEGA_COMPRESS_IDENTITY},
};

int vega_compress_kind_parse(const char *name, size_t len, vega_compress_kind *kind)
{
    if ((!name && len) || !kind)
        return -EINVAL;
    /* RFC 9110 section 8.4.1: "All content codings are case-insensitive". */
    while (len && (name[0] == ' ' || name[0] == '\t')) {
        name++;
        len--;
    }
    while (len && (name[len - 1] == ' ' || name[len - 1] == '\t'))
        len--;
    for (size_t i = 0; i < VEGA__ARRAY_LEN(names); i++) {
        if (strlen(names[i].name) == len && strncasecmp(names[i].name, name, len) == 0) {
            *kind = names[i].kind;
            return 0;
        }
    }
    return -ENOTSUP;
}

const char *vega_compress_kind_name(vega_compress_kind kind)
{
    switch (kind) {
    case VEGA_COMPRESS_GZIP:
        return "gzip";
    case VEGA_COMPRESS_DEFLATE:
        return "deflate";
    case VEGA_COMPRESS_BROTLI:
        return "br";
    case VEGA_COMPRESS_ZSTD:
        return "zstd";
    case VEGA_COMPRESS_IDENTITY:
        return "identity";
    }
    return NULL;
}
