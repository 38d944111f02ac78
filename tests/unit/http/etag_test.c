/* SPDX-License-Identifier: MIT */
/* Tests for entity-tags: parsing, the §8.8.3.2 comparison table, If-Match lists. */
#include <vega/http.h>

#include "vtest.h"

static vega_http_etag tag(const char *s)
{
    vega_http_etag t;
    if (vega_http_etag_parse(s, strlen(s), &t) != 0)
        vtest_fail(__FILE__, __LINE__, "parse(%s) failed", s);
    return t;
}

VTEST(parse)
{
    vega_http_etag t = tag("\"xyzzy\"");
    VCHECK(!t.weak && t.opaque.len == 5 && memcmp(t.opaque.ptr, "xyzzy", 5) == 0);
    t = tag("W/\"xyzzy\"");
    VCHECK(t.weak && t.opaque.len == 5);
    t = tag("\"\"");
    VCHECK(t.opaque.len == 0);
    t = tag("\"caf\xc3\xa9!#\"");
    VCHECK(t.opaque.len == 7);
    static const char *bad[] = {"",        "xyzzy",  "\"xyzzy", "w/\"x\"", "W\"x\"",    "\"a\"b\"",
                                "\"a b\"", "\"a\" ", " \"a\"",  "W/",      "\"a\x7f\"", "*"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vega_http_etag x;
        if (vega_http_etag_parse(bad[i], strlen(bad[i]), &x) != VEGA_ERR_PROTO)
            vtest_fail(__FILE__, __LINE__, "accepted: %s", bad[i]);
    }
}

VTEST(compare_rfc_table) /* RFC 9110 §8.8.3.2 */
{
    vega_http_etag w1 = tag("W/\"1\""), w2 = tag("W/\"2\""), s1 = tag("\"1\"");
    VCHECK(!vega_http_etag_eq_strong(&w1, &w1));
    VCHECK(vega_http_etag_eq_weak(&w1, &w1));
    VCHECK(!vega_http_etag_eq_strong(&w1, &w2));
    VCHECK(!vega_http_etag_eq_weak(&w1, &w2));
    VCHECK(!vega_http_etag_eq_strong(&w1, &s1));
    VCHECK(vega_http_etag_eq_weak(&w1, &s1));
    VCHECK(vega_http_etag_eq_strong(&s1, &s1));
    VCHECK(vega_http_etag_eq_weak(&s1, &s1));
}

#define M(list, cur, has, strong) vega_http_etag_list_match(list, strlen(list), cur, has, strong)

VTEST(list_match)
{
    vega_http_etag s = tag("\"xyzzy\""), w = tag("W/\"xyzzy\"");
    const char *l = "\"xyzzy\", \"r2d2xxxx\", \"c3piozzzz\"";
    VCHECK_EQ(M(l, &s, true, true), 1);
    VCHECK_EQ(M(l, &w, true, true), 0);  /* If-Match: strong */
    VCHECK_EQ(M(l, &w, true, false), 1); /* If-None-Match: weak */
    VCHECK_EQ(M("W/\"xyzzy\"", &s, true, true), 0);
    VCHECK_EQ(M("W/\"xyzzy\"", &s, true, false), 1);
    VCHECK_EQ(M("\"other\"", &s, true, false), 0);
    VCHECK_EQ(M("*", &s, true, true), 1);
    VCHECK_EQ(M(" * ", NULL, true, false), 1);
    VCHECK_EQ(M("*", NULL, false, false), 0);
    VCHECK_EQ(M("\"xyzzy\"", &s, false, false), 0);
    VCHECK_EQ(M("\"a\",,\t\"xyzzy\" ,", &s, true, true), 1);
    VCHECK_EQ(M("", &s, true, true), VEGA_ERR_PROTO);
    VCHECK_EQ(M(",", &s, true, true), VEGA_ERR_PROTO);
    VCHECK_EQ(M("*, \"a\"", &s, true, true), VEGA_ERR_PROTO);
    VCHECK_EQ(M("\"a\" \"b\"", &s, true, true), VEGA_ERR_PROTO);
    VCHECK_EQ(M("xyzzy", &s, true, true), VEGA_ERR_PROTO);
    VCHECK_EQ(M("\"xyzzy\", bad", &s, true, true), VEGA_ERR_PROTO);
}
