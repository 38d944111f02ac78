/* SPDX-License-Identifier: MIT */
/* HTTP content-coding names (lib/compress/names.c, RFC 9110 section 8.4.1). */
#include <vega/compress.h>

#include "vtest.h"

static int parse(const char *s, vega_compress_kind *k)
{
    return vega_compress_kind_parse(s, strlen(s), k);
}

VTEST(parse_known)
{
    const struct {
        const char *name;
        vega_compress_kind kind;
    } ok[] = {{"gzip", VEGA_COMPRESS_GZIP},
              {"x-gzip", VEGA_COMPRESS_GZIP},
              {"deflate", VEGA_COMPRESS_DEFLATE},
              {"br", VEGA_COMPRESS_BROTLI},
              {"zstd", VEGA_COMPRESS_ZSTD},
              {"identity", VEGA_COMPRESS_IDENTITY},
              /* RFC 9110 8.4.1: "All content codings are case-insensitive" */
              {"GZip", VEGA_COMPRESS_GZIP},
              {"X-GZIP", VEGA_COMPRESS_GZIP},
              {"BR", VEGA_COMPRESS_BROTLI},
              {"Deflate", VEGA_COMPRESS_DEFLATE},
              {" zstd\t", VEGA_COMPRESS_ZSTD},
              {"\t identity ", VEGA_COMPRESS_IDENTITY}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        vega_compress_kind k = 0;
        VCHECK_EQ(parse(ok[i].name, &k), 0);
        VCHECK_EQ(k, ok[i].kind);
    }
    /* Not NUL-terminated: only len bytes count. */
    vega_compress_kind k = 0;
    VCHECK_EQ(vega_compress_kind_parse("br, gzip", 2, &k), 0);
    VCHECK_EQ(k, VEGA_COMPRESS_BROTLI);
}

VTEST(parse_unknown)
{
    const char *bad[] = {"",         " ",   "compress", "x-compress", "gzip2",        "gzi",
                         "brotli",   "zst", "gzip,br",  "g zip",      "identity;q=1", "*",
                         "x-deflate"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vega_compress_kind k = 0;
        VCHECK_EQ(parse(bad[i], &k), -ENOTSUP);
        VCHECK_EQ(k, 0);
    }
    vega_compress_kind k;
    VCHECK_EQ(vega_compress_kind_parse(NULL, 3, &k), -EINVAL);
    VCHECK_EQ(vega_compress_kind_parse("gzip", 4, NULL), -EINVAL);
    VCHECK_EQ(vega_compress_kind_parse(NULL, 0, &k), -ENOTSUP);
}

VTEST(names_round_trip)
{
    for (int k = VEGA_COMPRESS_GZIP; k <= VEGA_COMPRESS_IDENTITY; k++) {
        const char *n = vega_compress_kind_name((vega_compress_kind)k);
        VCHECK(n != NULL);
        vega_compress_kind back = 0;
        VCHECK_EQ(parse(n, &back), 0);
        VCHECK_EQ(back, k);
    }
    VCHECK_STR(vega_compress_kind_name(VEGA_COMPRESS_BROTLI), "br");
    VCHECK_STR(vega_compress_kind_name(VEGA_COMPRESS_GZIP), "gzip");
    VCHECK(vega_compress_kind_name(0) == NULL);
    VCHECK(vega_compress_kind_name(42) == NULL);
}
