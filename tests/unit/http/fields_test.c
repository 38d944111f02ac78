/* SPDX-License-Identifier: MIT */
/* Tests for the header-field list: validation, lookup, combining, removal and limits. */
#include <vega/http.h>

#include "vtest.h"

#define ADD(f, n, v) vega_http_fields_add(f, n, strlen(n), v, strlen(v))

VTEST(token_and_value)
{
    VCHECK(vega_http_token_is_valid("Content-Type", 12));
    VCHECK(vega_http_token_is_valid("!#$%&'*+-.^_`|~09az", 19));
    VCHECK(!vega_http_token_is_valid("", 0));
    VCHECK(!vega_http_token_is_valid("a b", 3));
    VCHECK(!vega_http_token_is_valid("a:b", 3));
    VCHECK(!vega_http_token_is_valid("a\"", 2));
    VCHECK(!vega_http_token_is_valid("\xc3\xa9", 2));
    VCHECK(vega_http_field_value_is_valid("", 0));
    VCHECK(vega_http_field_value_is_valid("a \tb", 4));
    VCHECK(vega_http_field_value_is_valid("caf\xc3\xa9", 5)); /* obs-text */
    VCHECK(!vega_http_field_value_is_valid(" a", 2));
    VCHECK(!vega_http_field_value_is_valid("a\t", 2));
    VCHECK(!vega_http_field_value_is_valid("a\r\nb", 4));
    VCHECK(!vega_http_field_value_is_valid("a\nb", 3));
    VCHECK(!vega_http_field_value_is_valid("a\0b", 3));
    VCHECK(!vega_http_field_value_is_valid("a\x7f", 2));
}

VTEST(add_find_combine)
{
    vega_http_field st[8];
    vega_http_fields f;
    vega_http_fields_init(&f, st, 8, 0);
    VCHECK_EQ(ADD(&f, "Accept", " text/html "), 0);
    VCHECK_EQ(ADD(&f, "Host", "example.com"), 0);
    VCHECK_EQ(ADD(&f, "accept", "\tapplication/json"), 0);
    VCHECK_EQ(ADD(&f, "X-Empty", "   "), 0);
    VCHECK_EQ(f.count, 4);
    VCHECK_EQ(f.items[0].value.len, 9); /* trimmed */
    const vega_http_field *h = vega_http_fields_get(&f, "HOST", 4);
    VCHECK(h && h->value.len == 11 && memcmp(h->value.ptr, "example.com", 11) == 0);
    VCHECK(vega_http_fields_get(&f, "Hos", 3) == NULL);
    VCHECK_EQ(vega_http_fields_find(&f, "ACCEPT", 6, 0), 0);
    VCHECK_EQ(vega_http_fields_find(&f, "ACCEPT", 6, 1), 2);
    VCHECK_EQ(vega_http_fields_find(&f, "ACCEPT", 6, 3), -ENOENT);
    char out[64];
    VCHECK_EQ(vega_http_fields_get_combined(&f, "accept", 6, out, sizeof out), 27);
    VCHECK_STR(out, "text/html, application/json");
    VCHECK_EQ(vega_http_fields_get_combined(&f, "x-empty", 7, out, sizeof out), 0);
    VCHECK_STR(out, "");
    VCHECK_EQ(vega_http_fields_get_combined(&f, "nope", 4, out, sizeof out), -ENOENT);
    VCHECK_EQ(vega_http_fields_get_combined(&f, "accept", 6, out, 27), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_http_fields_get_combined(&f, "accept", 6, out, 28), 27);
    VCHECK_EQ(vega_http_fields_get_combined(&f, "accept", 6, out, 0), VEGA_ERR_NOBUF);
    size_t before = f.size;
    VCHECK_EQ(vega_http_fields_remove(&f, "Accept", 6), 2);
    VCHECK_EQ(f.count, 2);
    VCHECK_EQ(f.size, before - 6 - 9 - 6 - 16);
    VCHECK(f.items[0].name.len == 4 && memcmp(f.items[0].name.ptr, "Host", 4) == 0);
    VCHECK_EQ(vega_http_fields_remove(&f, "Accept", 6), 0);
}

VTEST(rejects_invalid)
{
    vega_http_field st[4];
    vega_http_fields f;
    vega_http_fields_init(&f, st, 4, 0);
    VCHECK_EQ(ADD(&f, "Bad Name", "x"), VEGA_ERR_PROTO);
    VCHECK_EQ(ADD(&f, "", "x"), VEGA_ERR_PROTO);
    VCHECK_EQ(ADD(&f, "Name:", "x"), VEGA_ERR_PROTO);
    VCHECK_EQ(ADD(&f, "X", "a\r\nInjected: 1"), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_fields_add(&f, "X", 1, "a\0b", 3), VEGA_ERR_PROTO);
    VCHECK_EQ(f.count, 0);
    VCHECK_EQ(f.size, 0);
}

VTEST(limits)
{
    vega_http_field st[2];
    vega_http_fields f;
    vega_http_fields_init(&f, st, 2, 10);
    VCHECK_EQ(ADD(&f, "abc", "12"), 0);           /* 5 */
    VCHECK_EQ(ADD(&f, "abc", "1234"), -EMSGSIZE); /* 12 > 10 */
    VCHECK_EQ(f.count, 1);
    VCHECK_EQ(f.size, 5);
    VCHECK_EQ(ADD(&f, "ab", "123"), 0); /* exactly 10 */
    VCHECK_EQ(ADD(&f, "a", ""), -E2BIG);
    VCHECK_EQ(f.count, 2);
    vega_http_fields_init(&f, st, 2, 4);
    VCHECK_EQ(ADD(&f, "abcdefgh", "x"), -EMSGSIZE);
    vega_http_fields_init(&f, st, 0, 0);
    VCHECK_EQ(ADD(&f, "a", "b"), -E2BIG);
}

/* The helpers for routes and literal fields (http.h). */
VTEST(span_helpers_and_literal_fields)
{
    vega_http_str path = {"/api/items?x=1", 10}; /* "/api/items", not NUL-terminated */
    VCHECK(vega_http_str_eq(path, "/api/items"));
    VCHECK(!vega_http_str_eq(path, "/api/item"));
    VCHECK(!vega_http_str_eq(path, "/api/items?"));
    VCHECK(!vega_http_str_eq(path, "/API/items"));
    VCHECK(vega_http_str_eq_nocase(path, "/API/Items"));
    VCHECK(vega_http_str_has_prefix(path, "/api/"));
    VCHECK(vega_http_str_has_prefix(path, ""));
    VCHECK(!vega_http_str_has_prefix(path, "/api/items/"));
    vega_http_str empty = {NULL, 0};
    VCHECK(vega_http_str_eq(empty, ""));
    VCHECK(!vega_http_str_eq(empty, "a"));
    vega_http_str nul = {"a\0b", 3};
    VCHECK(!vega_http_str_eq(nul, "a"));
    VCHECK(!vega_http_str_eq_nocase(nul, "a"));

    static const vega_http_field json[] = {VEGA_HTTP_FIELD("content-type", "application/json"),
                                           VEGA_HTTP_FIELD("x-empty", "")};
    VCHECK_EQ(json[0].name.len, 12);
    VCHECK(vega_http_str_eq(json[0].name, "content-type"));
    VCHECK(vega_http_str_eq(json[0].value, "application/json"));
    VCHECK_EQ(json[1].value.len, 0);
    vega_http_str m = VEGA_HTTP_LIT("GET");
    VCHECK_EQ(m.len, 3);
}
