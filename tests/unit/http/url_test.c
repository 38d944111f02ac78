/* SPDX-License-Identifier: MIT */
/* Tests for URL parsing, formatting, percent-decoding, dot removal and resolution
 * (RFC 3986 §5.4 examples). */
#include <vega/http.h>

#include "vtest.h"

static bool span_is(vega_http_str s, const char *want)
{
    if (!want)
        return s.ptr == NULL;
    return s.ptr && s.len == strlen(want) && memcmp(s.ptr, want, s.len) == 0;
}

static int parse(vega_http_url *u, const char *s)
{
    return vega_http_url_parse(u, s, strlen(s));
}

VTEST(parse_full)
{
    vega_http_url u;
    const char *s = "https://user:pw@Example.COM:8443/a/b%20c?x=1&y=/?#frag/?";
    VCHECK_EQ(parse(&u, s), 0);
    VCHECK(span_is(u.scheme, "https"));
    VCHECK(span_is(u.userinfo, "user:pw"));
    VCHECK(span_is(u.authority, "user:pw@Example.COM:8443"));
    VCHECK(span_is(u.host, "Example.COM"));
    VCHECK_EQ(u.port, 8443);
    VCHECK(u.has_port);
    VCHECK(span_is(u.path, "/a/b%20c"));
    VCHECK(span_is(u.query, "x=1&y=/?"));
    VCHECK(span_is(u.fragment, "frag/?"));
}

VTEST(parse_default_port_and_empty_parts)
{
    vega_http_url u;
    VCHECK_EQ(parse(&u, "http://a"), 0);
    VCHECK_EQ(u.port, 80);
    VCHECK(!u.has_port);
    VCHECK(span_is(u.path, ""));
    VCHECK(span_is(u.query, NULL));
    VCHECK(span_is(u.fragment, NULL));
    VCHECK(span_is(u.userinfo, NULL));
    VCHECK_EQ(parse(&u, "HTTPS://a:/?#"), 0); /* empty port: RFC 3986 allows it */
    VCHECK_EQ(u.port, 443);
    VCHECK(!u.has_port);
    VCHECK(span_is(u.query, ""));
    VCHECK(span_is(u.fragment, ""));
    VCHECK_EQ(parse(&u, "wss://a/"), 0);
    VCHECK_EQ(u.port, 443);
    VCHECK_EQ(parse(&u, "foo:bar"), 0);
    VCHECK_EQ(u.port, 0);
    VCHECK(span_is(u.host, NULL));
    VCHECK(span_is(u.path, "bar"));
    VCHECK_EQ(parse(&u, "urn:isbn:0451450523"), 0);
    VCHECK(span_is(u.path, "isbn:0451450523"));
}

VTEST(parse_ipv6)
{
    vega_http_url u;
    VCHECK_EQ(parse(&u, "http://[2001:db8::7]:8080/x"), 0);
    VCHECK(span_is(u.host, "2001:db8::7"));
    VCHECK(u.host_is_ip_literal);
    VCHECK_EQ(u.port, 8080);
    VCHECK_EQ(parse(&u, "http://[::1]"), 0);
    VCHECK(span_is(u.host, "::1"));
    VCHECK_EQ(u.port, 80);
    VCHECK_EQ(parse(&u, "http://[::ffff:1.2.3.4]/"), 0);
    VCHECK_EQ(parse(&u, "http://[::1"), VEGA_ERR_PROTO);
    VCHECK_EQ(parse(&u, "http://[]/"), VEGA_ERR_PROTO);
    VCHECK_EQ(parse(&u, "http://[zz::1]/"), VEGA_ERR_PROTO);
    VCHECK_EQ(parse(&u, "http://[fe80::1%25eth0]/"), VEGA_ERR_PROTO);
    VCHECK_EQ(parse(&u, "http://[v1.fe]/"), VEGA_ERR_PROTO);
    VCHECK_EQ(parse(&u, "http://[::1]x/"), VEGA_ERR_PROTO);
    VCHECK_EQ(parse(&u, "http://::1/"), VEGA_ERR_PROTO);
}

VTEST(parse_rejects)
{
    vega_http_url u;
    static const char *bad[] = {
        "http://a:65536/",
        "http://a:99999999999999999999/",
        "http://a:-1/",
        "http://a:8x/",
        "http:///p",
        "http:/p",
        "http:p",
        "https://",
        "http://a b/",
        "http://a/b c",
        "http://a/\x7f",
        "http://a/\x80",
        "http://a/%",
        "http://a/%4",
        "http://a/%zz",
        "http://a/?q=%g0",
        "http://a/#f#g",
        "http://a/<",
        "http://a/\"",
        "http://a/\\",
        "http://u@v@a/",
        "http://a^/",
        "1http://a/",
        "ht~tp://a/",
        ":foo",
        "/relative",
        "rel",
        "",
        "http://a/{}",
        "http://a/|",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (parse(&u, bad[i]) != VEGA_ERR_PROTO)
            vtest_fail(__FILE__, __LINE__, "accepted: %s", bad[i]);
    /* NUL in the middle */
    VCHECK_EQ(vega_http_url_parse(&u, "http://a/\0b", 11), VEGA_ERR_PROTO);
    VCHECK_EQ(parse(&u, "http://a:65535/"), 0);
    VCHECK_EQ(u.port, 65535);
    VCHECK_EQ(parse(&u, "http://a:0/"), 0);
    VCHECK_EQ(parse(&u, "http://a:00080/"), 0);
    VCHECK_EQ(u.port, 80);
}

VTEST(parse_ref)
{
    vega_http_url u;
    VCHECK_EQ(vega_http_url_parse_ref(&u, "//h:1/p?q#f", 11), 0);
    VCHECK(span_is(u.scheme, NULL));
    VCHECK(span_is(u.host, "h"));
    VCHECK_EQ(u.port, 1);
    VCHECK_EQ(vega_http_url_parse_ref(&u, "g;x=1/../y", 10), 0);
    VCHECK(span_is(u.path, "g;x=1/../y"));
    VCHECK_EQ(vega_http_url_parse_ref(&u, "#s", 2), 0);
    VCHECK(span_is(u.path, ""));
    VCHECK(span_is(u.fragment, "s"));
    VCHECK_EQ(vega_http_url_parse_ref(&u, "", 0), 0);
    VCHECK_EQ(vega_http_url_parse_ref(&u, "a:b", 3), 0);
    VCHECK(span_is(u.scheme, "a"));
    VCHECK_EQ(vega_http_url_parse_ref(&u, "1a:b", 4), VEGA_ERR_PROTO); /* path-noscheme */
    VCHECK_EQ(vega_http_url_parse_ref(&u, "./1a:b", 6), 0);
    VCHECK_EQ(vega_http_url_parse_ref(&u, "http:g", 6), 0); /* generic: no host needed */
}

VTEST(parse_target)
{
    vega_http_url u;
    VCHECK_EQ(vega_http_url_parse_target(&u, "/where?q=now", 12), 0);
    VCHECK(span_is(u.path, "/where"));
    VCHECK(span_is(u.query, "q=now"));
    VCHECK(span_is(u.host, NULL));
    VCHECK_EQ(vega_http_url_parse_target(&u, "/", 1), 0);
    const char *abs = "http://www.example.org/pub/WWW/TheProject.html";
    VCHECK_EQ(vega_http_url_parse_target(&u, abs, strlen(abs)), 0);
    VCHECK(span_is(u.host, "www.example.org"));
    VCHECK_EQ(vega_http_url_parse_target(&u, "*", 1), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_url_parse_target(&u, "foo:bar", 7), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_url_parse_target(&u, "www.example.com:80", 18), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_url_parse_target(&u, "/a#f", 4), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_url_parse_target(&u, "//a/b", 5), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_url_parse_target(&u, "a/b", 3), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_url_parse_target(&u, "", 0), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_url_parse_target(&u, "/a b", 4), VEGA_ERR_PROTO);
}

VTEST(format_round_trip)
{
    static const char *ok[] = {
        "http://a/b/c/d;p?q", "https://u:p@[2001:db8::1]:8443/x?#",
        "foo:bar#x",          "http://a:0/",
        "mailto:a@b.c",       "http://h?",
        "ws://h:1",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        vega_http_url u;
        char out[128];
        VCHECK_EQ(parse(&u, ok[i]), 0);
        VCHECK_EQ(vega_http_url_format(&u, out, sizeof out), (long long)strlen(ok[i]));
        VCHECK_STR(out, ok[i]);
    }
    vega_http_url u;
    char small[8];
    VCHECK_EQ(parse(&u, "http://a/b/c/d"), 0);
    VCHECK_EQ(vega_http_url_format(&u, small, sizeof small), VEGA_ERR_NOBUF);
    char exact[15];
    VCHECK_EQ(vega_http_url_format(&u, exact, sizeof exact), 14);
    VCHECK_EQ(vega_http_url_format(&u, exact, 14), VEGA_ERR_NOBUF);
}

VTEST(pct_decode)
{
    char out[64];
    VCHECK_EQ(vega_http_pct_decode("a%20b%2Fc", 9, out, sizeof out, 0), 5);
    VCHECK(memcmp(out, "a b/c", 5) == 0);
    VCHECK_EQ(vega_http_pct_decode("a+b", 3, out, sizeof out, VEGA_HTTP_PCT_PLUS_SPACE), 3);
    VCHECK(memcmp(out, "a b", 3) == 0);
    VCHECK_EQ(vega_http_pct_decode("a+b", 3, out, sizeof out, 0), 3);
    VCHECK(memcmp(out, "a+b", 3) == 0);
    VCHECK_EQ(vega_http_pct_decode("%00", 3, out, sizeof out, 0), 1);
    VCHECK_EQ(out[0], 0);
    VCHECK_EQ(vega_http_pct_decode("%00", 3, out, sizeof out, VEGA_HTTP_PCT_REJECT_NUL),
              VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_pct_decode("%2f", 3, out, sizeof out, VEGA_HTTP_PCT_REJECT_SLASH),
              VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_pct_decode("%5C", 3, out, sizeof out, VEGA_HTTP_PCT_REJECT_SLASH),
              VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_pct_decode("%", 1, out, sizeof out, 0), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_pct_decode("%a", 2, out, sizeof out, 0), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_pct_decode("%ag", 3, out, sizeof out, 0), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_pct_decode("abc", 3, out, 2, 0), VEGA_ERR_NOBUF);
    char buf[] = "x%41%42y";
    VCHECK_EQ(vega_http_pct_decode(buf, 8, buf, 8, 0), 4); /* in place */
    VCHECK(memcmp(buf, "xABy", 4) == 0);
}

static void dots(const char *in, const char *want)
{
    char out[128];
    vega_ssize n = vega_http_path_remove_dots(in, strlen(in), out, sizeof out);
    if (n < 0)
        vtest_fail(__FILE__, __LINE__, "remove_dots(%s) = %zd", in, n);
    out[n] = '\0';
    if (strcmp(out, want) != 0)
        vtest_fail(__FILE__, __LINE__, "remove_dots(%s) = %s, want %s", in, out, want);
    char inplace[128];
    strcpy(inplace, in);
    n = vega_http_path_remove_dots(inplace, strlen(in), inplace, sizeof inplace);
    inplace[n] = '\0';
    if (strcmp(inplace, want) != 0)
        vtest_fail(__FILE__, __LINE__, "in place remove_dots(%s) = %s", in, inplace);
}

VTEST(remove_dots)
{
    dots("/a/b/c/./../../g", "/a/g"); /* RFC 3986 §5.2.4 */
    dots("mid/content=5/../6", "mid/6");
    dots("/..", "/");
    dots("/../..", "/");
    dots("/.", "/");
    dots("/a/.", "/a/");
    dots("/a/..", "/");
    dots(".", "");
    dots("..", "");
    dots("../a", "a");
    dots("./a", "a");
    dots("/a/%2e%2e/b", "/a/%2e%2e/b"); /* escapes are not dots here */
    dots("", "");
    dots("/a//../b", "/a/b");
    dots("/.a/..b/...", "/.a/..b/...");
    char out[4];
    VCHECK_EQ(vega_http_path_remove_dots("/abcdef", 7, out, sizeof out), VEGA_ERR_NOBUF);
}

static void safe(const char *in, const char *want)
{
    char out[128];
    vega_ssize n = vega_http_path_normalize_safe(in, strlen(in), out, sizeof out);
    if (!want) {
        if (n != VEGA_ERR_PROTO)
            vtest_fail(__FILE__, __LINE__, "normalize_safe(%s) accepted", in);
        return;
    }
    if (n < 0)
        vtest_fail(__FILE__, __LINE__, "normalize_safe(%s) = %zd", in, n);
    out[n] = '\0';
    if (strcmp(out, want) != 0)
        vtest_fail(__FILE__, __LINE__, "normalize_safe(%s) = %s, want %s", in, out, want);
}

VTEST(normalize_safe)
{
    safe("/", "/");
    safe("/a/b", "/a/b");
    safe("/a/b/", "/a/b/");
    safe("//a///b", "/a/b");
    safe("/a/./b/../c", "/a/c");
    safe("/a/%2e%2E/c", "/c");
    safe("/a/.%2e/c", "/c");
    safe("/a/b/..", "/a");
    safe("/a/..", "/");
    safe("/a/%20b", "/a/ b");
    safe("/%7euser", "/~user");
    safe("/..", NULL);
    safe("/../etc/passwd", NULL);
    safe("/a/../../etc", NULL);
    safe("/%2e%2e/etc", NULL);
    safe("/%2E%2e", NULL);
    safe("/a/..%2f..%2fetc", NULL);
    safe("/a%2Fb", NULL);
    safe("/a%5cb", NULL);
    safe("/a\\..\\b", NULL);
    safe("/a%00b", NULL);
    safe("/a%0ab", NULL);
    safe("/a%", NULL);
    safe("/a%g1", NULL);
    safe("a/b", NULL);
    safe("", NULL);
    char buf[] = "/x/%2e/y/../z";
    VCHECK_EQ(vega_http_path_normalize_safe(buf, strlen(buf), buf, sizeof buf), 4);
    VCHECK(memcmp(buf, "/x/z", 4) == 0);
    char small[3];
    VCHECK_EQ(vega_http_path_normalize_safe("/abc", 4, small, sizeof small), VEGA_ERR_NOBUF);
}

static const char *base = "http://a/b/c/d;p?q";

static void res(const char *ref, const char *want)
{
    char out[128];
    vega_ssize n = vega_http_url_resolve(base, strlen(base), ref, strlen(ref), out, sizeof out);
    if (n < 0)
        vtest_fail(__FILE__, __LINE__, "resolve(%s) = %zd", ref, n);
    if (strcmp(out, want) != 0 || (size_t)n != strlen(want))
        vtest_fail(__FILE__, __LINE__, "resolve(%s) = %s, want %s", ref, out, want);
}

VTEST(resolve_normal) /* RFC 3986 §5.4.1 */
{
    res("g:h", "g:h");
    res("g", "http://a/b/c/g");
    res("./g", "http://a/b/c/g");
    res("g/", "http://a/b/c/g/");
    res("/g", "http://a/g");
    res("//g", "http://g");
    res("?y", "http://a/b/c/d;p?y");
    res("g?y", "http://a/b/c/g?y");
    res("#s", "http://a/b/c/d;p?q#s");
    res("g#s", "http://a/b/c/g#s");
    res("g?y#s", "http://a/b/c/g?y#s");
    res(";x", "http://a/b/c/;x");
    res("g;x", "http://a/b/c/g;x");
    res("g;x?y#s", "http://a/b/c/g;x?y#s");
    res("", "http://a/b/c/d;p?q");
    res(".", "http://a/b/c/");
    res("./", "http://a/b/c/");
    res("..", "http://a/b/");
    res("../", "http://a/b/");
    res("../g", "http://a/b/g");
    res("../..", "http://a/");
    res("../../", "http://a/");
    res("../../g", "http://a/g");
}

VTEST(resolve_abnormal) /* RFC 3986 §5.4.2 */
{
    res("../../../g", "http://a/g");
    res("../../../../g", "http://a/g");
    res("/./g", "http://a/g");
    res("/../g", "http://a/g");
    res("g.", "http://a/b/c/g.");
    res(".g", "http://a/b/c/.g");
    res("g..", "http://a/b/c/g..");
    res("..g", "http://a/b/c/..g");
    res("./../g", "http://a/b/g");
    res("./g/.", "http://a/b/c/g/");
    res("g/./h", "http://a/b/c/g/h");
    res("g/../h", "http://a/b/c/h");
    res("g;x=1/./y", "http://a/b/c/g;x=1/y");
    res("g;x=1/../y", "http://a/b/c/y");
    res("g?y/./x", "http://a/b/c/g?y/./x");
    res("g?y/../x", "http://a/b/c/g?y/../x");
    res("g#s/./x", "http://a/b/c/g#s/./x");
    res("g#s/../x", "http://a/b/c/g#s/../x");
    res("http:g", "http:g"); /* strict parsers */
}

VTEST(resolve_edges)
{
    char out[64];
    VCHECK_EQ(vega_http_url_resolve("http://h", 8, "x", 1, out, sizeof out), 10);
    VCHECK_STR(out, "http://h/x");
    VCHECK_EQ(vega_http_url_resolve("http://u@[::1]:81?q", 19, "#f", 2, out, sizeof out), 21);
    VCHECK_STR(out, "http://u@[::1]:81?q#f");
    VCHECK_EQ(vega_http_url_resolve("/rel", 4, "x", 1, out, sizeof out), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_url_resolve("http://a/", 9, "a b", 3, out, sizeof out), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_url_resolve(base, strlen(base), "g", 1, out, 14), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_http_url_resolve(base, strlen(base), "g", 1, out, 15), 14);
    VCHECK_EQ(vega_http_url_resolve(base, strlen(base), "g", 1, out, 3), VEGA_ERR_NOBUF);
    /* the authority is copied verbatim, empty port included */
    VCHECK_EQ(vega_http_url_resolve("http://a:/b", 11, "c", 1, out, sizeof out), 11);
    VCHECK_STR(out, "http://a:/c");
    /* a path starting "//" without an authority gets "/." so it cannot become one */
    VCHECK_EQ(vega_http_url_resolve("foo:bar/baz", 11, "..//x", 5, out, sizeof out), 9);
    VCHECK_STR(out, "foo:/.//x");
    VCHECK_EQ(vega_http_url_resolve("foo:bar/baz", 11, out, 9, out + 32, 32), 9);
    VCHECK_STR(out + 32, "foo:/.//x");
}
