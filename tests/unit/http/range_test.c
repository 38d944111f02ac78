/* SPDX-License-Identifier: MIT */
/* Tests for Range parsing and resolution and Content-Range formatting (RFC 9110 §14). */
#include <vega/http.h>

#include "vtest.h"

static vega_http_range r[VEGA_HTTP_RANGES_MAX];
static size_t n;

static int parse(const char *s, uint64_t length)
{
    n = 0;
    return vega_http_range_parse(s, strlen(s), length, r, VEGA_HTTP_RANGES_MAX, &n);
}

VTEST(rfc_examples) /* RFC 9110 §14.1.2, representation of 10000 bytes */
{
    VCHECK_EQ(parse("bytes=0-499", 10000), 0);
    VCHECK(n == 1 && r[0].first == 0 && r[0].last == 499);
    VCHECK_EQ(parse("bytes=500-999", 10000), 0);
    VCHECK(n == 1 && r[0].first == 500 && r[0].last == 999);
    VCHECK_EQ(parse("bytes=-500", 10000), 0);
    VCHECK(n == 1 && r[0].first == 9500 && r[0].last == 9999);
    VCHECK_EQ(parse("bytes=9500-", 10000), 0);
    VCHECK(n == 1 && r[0].first == 9500 && r[0].last == 9999);
    VCHECK_EQ(parse("bytes=0-0,-1", 10000), 0);
    VCHECK(n == 2 && r[0].first == 0 && r[0].last == 0 && r[1].first == 9999 && r[1].last == 9999);
    VCHECK_EQ(parse("bytes= 0-999, 4500-5499, -1000", 10000), 0);
    VCHECK_EQ(n, 3);
    VCHECK(r[1].first == 4500 && r[1].last == 5499 && r[2].first == 9000);
    VCHECK_EQ(parse("bytes=500-600,601-999", 10000), 0);
    VCHECK_EQ(n, 2);
}

VTEST(clamp_and_unsatisfiable)
{
    VCHECK_EQ(parse("bytes=0-99999", 100), 0);
    VCHECK(n == 1 && r[0].last == 99);
    VCHECK_EQ(parse("bytes=-200", 100), 0);
    VCHECK(n == 1 && r[0].first == 0 && r[0].last == 99);
    VCHECK_EQ(parse("bytes=0-99999999999999999999999", 100), 0); /* saturates */
    VCHECK(n == 1 && r[0].last == 99);
    VCHECK_EQ(parse("bytes=100-", 100), -ERANGE);
    VCHECK_EQ(parse("bytes=100-200", 100), -ERANGE);
    VCHECK_EQ(parse("bytes=-0", 100), -ERANGE);
    VCHECK_EQ(parse("bytes=0-0", 0), -ERANGE);
    VCHECK_EQ(parse("bytes=-5", 0), -ERANGE);
    VCHECK_EQ(parse("bytes=200-300,5-", 100), 0); /* unsatisfiable ones dropped */
    VCHECK(n == 1 && r[0].first == 5 && r[0].last == 99);
    VCHECK_EQ(parse("BYTES=1-1", 100), 0);
    VCHECK_EQ(parse("bytes=1-1,,", 100), 0);
}

VTEST(malformed)
{
    static const char *bad[] = {
        "",           "bytes",     "bytes=",      "=0-1",       "bytes=,",
        "bytes=1",    "bytes=a-b", "bytes=5-4",   "bytes=--1",  "bytes=1-2-3",
        "bytes=1 -2", "bytes=-",   "bytes=0-1;x", "bytes =0-1", "bytes=+1-2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (parse(bad[i], 100) != VEGA_ERR_PROTO)
            vtest_fail(__FILE__, __LINE__, "accepted: %s", bad[i]);
    VCHECK_EQ(parse("items=0-1", 100), -ENOTSUP);
}

VTEST(limit)
{
    char s[512] = "bytes=";
    for (int i = 0; i < VEGA_HTTP_RANGES_MAX; i++)
        snprintf(s + strlen(s), sizeof s - strlen(s), "%d-%d,", i * 10, i * 10 + 1);
    VCHECK_EQ(parse(s, 1000), 0);
    VCHECK_EQ(n, VEGA_HTTP_RANGES_MAX);
    strcat(s, "900-901");
    VCHECK_EQ(parse(s, 1000), -E2BIG);
    /* unsatisfiable specs count too */
    VCHECK_EQ(parse(s, 1), -E2BIG);
    size_t c;
    VCHECK_EQ(vega_http_range_parse("bytes=0-1", 9, 10, r, 0, &c), -E2BIG);
}

VTEST(content_range)
{
    char out[64];
    vega_http_range x = {0, 499};
    VCHECK_EQ(vega_http_content_range_format(&x, 1234, out, sizeof out), 16);
    VCHECK_STR(out, "bytes 0-499/1234");
    VCHECK_EQ(vega_http_content_range_format(NULL, 47022, out, sizeof out), 13);
    VCHECK_STR(out, "bytes */47022");
    VCHECK_EQ(vega_http_content_range_format(&x, 1234, out, 16), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_http_content_range_format(&x, 1234, out, 17), 16);
    char wide[80];
    vega_http_range big = {UINT64_MAX - 1, UINT64_MAX - 1};
    VCHECK_EQ(vega_http_content_range_format(&big, UINT64_MAX, wide, sizeof wide), 68);
    VCHECK_STR(wide, "bytes 18446744073709551614-18446744073709551614/18446744073709551615");
}
