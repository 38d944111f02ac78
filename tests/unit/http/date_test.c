/* SPDX-License-Identifier: MIT */
/* Tests for HTTP-date formatting and the three parse forms (RFC 9110 §5.6.7). */
#include <vega/http.h>

#include "vtest.h"

#define NOW 1785000000LL /* 2026-07-25 */

static int64_t parse(const char *s)
{
    int64_t t = -1;
    int rc = vega_http_date_parse(s, strlen(s), NOW, &t);
    if (rc != 0)
        vtest_fail(__FILE__, __LINE__, "parse(%s) = %d", s, rc);
    return t;
}

static void bad(const char *s)
{
    int64_t t;
    if (vega_http_date_parse(s, strlen(s), NOW, &t) != VEGA_ERR_PROTO)
        vtest_fail(__FILE__, __LINE__, "accepted: %s", s);
}

VTEST(rfc_examples)
{
    VCHECK_EQ(parse("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
    VCHECK_EQ(parse("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777);
    VCHECK_EQ(parse("Sun Nov  6 08:49:37 1994"), 784111777);
    VCHECK_EQ(parse("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
    VCHECK_EQ(parse("Wed, 31 Dec 1969 23:59:59 GMT"), -1);
    VCHECK_EQ(parse("Tue, 29 Feb 2000 12:00:00 GMT"), 951825600);
    VCHECK_EQ(parse("Fri Dec 31 23:59:59 9999"), 253402300799LL);
    VCHECK_EQ(parse("Mon Jan 10 00:00:00 2000"), 947462400);
}

VTEST(format)
{
    char out[VEGA_HTTP_DATE_LEN + 1];
    VCHECK_EQ(vega_http_date_format(784111777, out, sizeof out), VEGA_HTTP_DATE_LEN);
    VCHECK_STR(out, "Sun, 06 Nov 1994 08:49:37 GMT");
    VCHECK_EQ(vega_http_date_format(0, out, sizeof out), 29);
    VCHECK_STR(out, "Thu, 01 Jan 1970 00:00:00 GMT");
    VCHECK_EQ(vega_http_date_format(-1, out, sizeof out), 29);
    VCHECK_STR(out, "Wed, 31 Dec 1969 23:59:59 GMT");
    VCHECK_EQ(vega_http_date_format(253402300799LL, out, sizeof out), 29);
    VCHECK_STR(out, "Fri, 31 Dec 9999 23:59:59 GMT");
    VCHECK_EQ(vega_http_date_format(-62135596800LL, out, sizeof out), 29);
    VCHECK_STR(out, "Mon, 01 Jan 0001 00:00:00 GMT");
    VCHECK_EQ(vega_http_date_format(253402300800LL, out, sizeof out), -EINVAL);
    VCHECK_EQ(vega_http_date_format(-62135596801LL, out, sizeof out), -EINVAL);
    VCHECK_EQ(vega_http_date_format(0, out, VEGA_HTTP_DATE_LEN), VEGA_ERR_NOBUF);
}

VTEST(round_trip)
{
    char out[VEGA_HTTP_DATE_LEN + 1];
    for (int64_t t = -62135596800LL; t < 253402300799LL; t += 86400LL * 97 + 3607) {
        VCHECK_EQ(vega_http_date_format(t, out, sizeof out), 29);
        int64_t back;
        VCHECK_EQ(vega_http_date_parse(out, 29, NOW, &back), 0);
        VCHECK_EQ(back, t);
    }
}

static int64_t parse_at(const char *s, int64_t now)
{
    int64_t t = -1;
    int rc = vega_http_date_parse(s, strlen(s), now, &t);
    if (rc != 0)
        vtest_fail(__FILE__, __LINE__, "parse(%s) = %d", s, rc);
    return t;
}

VTEST(rfc850_year_window)
{
    /* now in 2026: "70" is 2070, within 50 years ahead */
    VCHECK_EQ(parse_at("Wednesday, 01-Jan-70 00:00:00 GMT", NOW), 3155760000LL);
    /* "94" would be 2094, more than 50 years ahead, so 1994 */
    VCHECK_EQ(parse_at("Sunday, 06-Nov-94 08:49:37 GMT", NOW), 784111777);
    /* now in 1970: "69" would be 2069, so 1969 */
    VCHECK_EQ(parse_at("Wednesday, 31-Dec-69 23:59:59 GMT", 0), -1);
    /* now at the end of 2089: "10" is 2110 (21 years ahead), not 2010 */
    VCHECK_EQ(parse_at("Wednesday, 01-Jan-10 00:00:00 GMT", 3786825600LL), 4417977600LL);
}

VTEST(rejects)
{
    bad("");
    bad("Sun, 06 Nov 1994 08:49:37 UTC");
    bad("Sun, 06 Nov 1994 08:49:37 gmt");
    bad("sun, 06 Nov 1994 08:49:37 GMT");
    bad("Sun, 06 nov 1994 08:49:37 GMT");
    bad("Sun, 6 Nov 1994 08:49:37 GMT");
    bad("Sun, 06 Nov 1994 08:49:37 GMT ");
    bad("Sun,  06 Nov 1994 08:49:37 GMT");
    bad("Xyz, 06 Nov 1994 08:49:37 GMT");
    bad("Sun, 31 Nov 1994 08:49:37 GMT");
    bad("Sun, 29 Feb 1900 08:49:37 GMT");
    bad("Sun, 00 Nov 1994 08:49:37 GMT");
    bad("Sun, 06 Nov 1994 24:00:00 GMT");
    bad("Sun, 06 Nov 1994 23:60:00 GMT");
    bad("Sun, 06 Nov 1994 23:59:61 GMT");
    bad("Sun, 06 Nov 19x4 08:49:37 GMT");
    bad("Sun, 06 Nov 1994 08-49-37 GMT");
    bad("Sunday, 06-Nov-1994 08:49:37 GMT");
    bad("Sunday, 06 Nov 94 08:49:37 GMT");
    bad("Sun Nov 6 08:49:37 1994");
    bad("Sun Nov  6 08:49:37 1994 ");
    bad("Sun Nov 6  08:49:37 1994");
    bad("Funday, 06-Nov-94 08:49:37 GMT");
    bad("1994-11-06T08:49:37Z");
}
