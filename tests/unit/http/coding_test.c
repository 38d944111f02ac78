/* SPDX-License-Identifier: MIT */
/* Tests for Accept-Encoding negotiation (RFC 9110 §12.5.3 examples and q=0 / "*" rules). */
#include <vega/http.h>

#include "vtest.h"

static const vega_http_coding all[] = {VEGA_HTTP_CODING_ZSTD, VEGA_HTTP_CODING_BR,
                                       VEGA_HTTP_CODING_GZIP, VEGA_HTTP_CODING_DEFLATE,
                                       VEGA_HTTP_CODING_IDENTITY};
#define NALL (sizeof all / sizeof all[0])

static int choose(const char *ae)
{
    return vega_http_coding_choose(ae, strlen(ae), all, NALL);
}

VTEST(rfc_examples)
{
    VCHECK_EQ(choose("compress, gzip"), VEGA_HTTP_CODING_GZIP);
    VCHECK_EQ(choose(""), VEGA_HTTP_CODING_IDENTITY);
    VCHECK_EQ(choose("*"), VEGA_HTTP_CODING_ZSTD);
    VCHECK_EQ(choose("compress;q=0.5, gzip;q=1.0"), VEGA_HTTP_CODING_GZIP);
    VCHECK_EQ(choose("gzip;q=1.0, identity; q=0.5, *;q=0"), VEGA_HTTP_CODING_GZIP);
}

VTEST(q_values)
{
    VCHECK_EQ(choose("gzip;q=0.5, br;q=0.8"), VEGA_HTTP_CODING_BR);
    VCHECK_EQ(choose("gzip, br, zstd"), VEGA_HTTP_CODING_ZSTD); /* tie: server order */
    VCHECK_EQ(choose("gzip;q=1, zstd;q=0.999"), VEGA_HTTP_CODING_GZIP);
    VCHECK_EQ(choose("GZIP ; Q=0.3 ,x-gzip;q=0.9, deflate;q=0.5"), VEGA_HTTP_CODING_GZIP);
    VCHECK_EQ(choose("br;q=0, gzip;q=0"), VEGA_HTTP_CODING_IDENTITY);
    VCHECK_EQ(choose("identity;q=0"), -ENOENT);
    VCHECK_EQ(choose("*;q=0"), -ENOENT);
    VCHECK_EQ(choose("*;q=0, identity"), VEGA_HTTP_CODING_IDENTITY);
    VCHECK_EQ(choose("*;q=0, deflate;q=0.1"), VEGA_HTTP_CODING_DEFLATE);
    VCHECK_EQ(choose("*;q=0.1, br;q=0"), VEGA_HTTP_CODING_ZSTD);
    VCHECK_EQ(choose("unknown, br;q=0.001"), VEGA_HTTP_CODING_BR);
    VCHECK_EQ(choose(" ,, gzip ,"), VEGA_HTTP_CODING_GZIP);
    VCHECK_EQ(choose("gzip;q=0.000"), VEGA_HTTP_CODING_IDENTITY);
}

VTEST(server_prefs)
{
    const vega_http_coding gz[] = {VEGA_HTTP_CODING_GZIP};
    VCHECK_EQ(vega_http_coding_choose("br", 2, gz, 1), -ENOENT); /* identity not offered */
    VCHECK_EQ(vega_http_coding_choose("br, gzip;q=0.1", 14, gz, 1), VEGA_HTTP_CODING_GZIP);
    VCHECK_EQ(vega_http_coding_choose(NULL, 0, all, NALL), VEGA_HTTP_CODING_ZSTD);
    VCHECK_EQ(vega_http_coding_choose(NULL, 0, gz, 0), -ENOENT);
    VCHECK_EQ(vega_http_coding_choose("gzip", 4, gz, 0), -ENOENT);
    VCHECK_STR(vega_http_coding_name(VEGA_HTTP_CODING_BR), "br");
    VCHECK_STR(vega_http_coding_name(VEGA_HTTP_CODING_IDENTITY), "identity");
    VCHECK_STR(vega_http_coding_name((vega_http_coding)99), "");
}

VTEST(malformed)
{
    static const char *bad[] = {
        "gzip;q=2",      "gzip;q=1.001", "gzip;q=0.1234", "gzip;q=", "gzip;q=.5",  "gzip;x=1",
        "gzip;q=0.5 br", "gz ip",        "gzip;q=0.5;",   "g(z)ip",  "gzip;q=1.5", "gzip;;q=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (choose(bad[i]) != VEGA_ERR_PROTO)
            vtest_fail(__FILE__, __LINE__, "accepted: %s", bad[i]);
    VCHECK_EQ(choose("gzip;q=1.000"), VEGA_HTTP_CODING_GZIP);
    VCHECK_EQ(choose("gzip;q=1."), VEGA_HTTP_CODING_GZIP);
}
