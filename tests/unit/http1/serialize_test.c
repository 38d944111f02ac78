/* SPDX-License-Identifier: MIT */
/* HTTP/1.1 serializer (lib/http1/serialize.c): exact bytes, injection refused, short buffers,
 * and output the parser reads back. */
#include <vega/http1.h>

#include "vtest.h"

static const vega_http1_field F[] = {
    {"Host", 4, "example.com", 11},
    {"X-Empty", 7, "", 0},
    {"X-Mid", 5, "a \tb\x80", 5},
};

VTEST(request_head)
{
    uint8_t b[256];
    vega_ssize n = vega_http1_write_request_head(b, sizeof b, "GET", "/x?y", 11, F, 3);
    const char *want = "GET /x?y HTTP/1.1\r\nHost: example.com\r\nX-Empty: \r\n"
                       "X-Mid: a \tb\x80\r\n\r\n";
    VCHECK_EQ(n, strlen(want));
    VCHECK(memcmp(b, want, (size_t)n) == 0);
    for (size_t cap = 0; cap < (size_t)n; cap++)
        VCHECK_EQ(vega_http1_write_request_head(b, cap, "GET", "/x?y", 11, F, 3), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_http1_write_request_head(b, sizeof b, "GET", "*", 10, NULL, 0), 18);
    VCHECK(memcmp(b, "GET * HTTP/1.0\r\n\r\n", 18) == 0);
}

VTEST(response_head)
{
    uint8_t b[256];
    vega_ssize n = vega_http1_write_response_head(b, sizeof b, 11, 200, "OK", F, 1);
    const char *want = "HTTP/1.1 200 OK\r\nHost: example.com\r\n\r\n";
    VCHECK_EQ(n, strlen(want));
    VCHECK(memcmp(b, want, (size_t)n) == 0);
    n = vega_http1_write_response_head(b, sizeof b, 10, 404, NULL, NULL, 0);
    VCHECK_EQ(n, 17);
    VCHECK(memcmp(b, "HTTP/1.0 404 \r\n\r\n", 17) == 0);
    for (size_t cap = 0; cap < 17; cap++)
        VCHECK_EQ(vega_http1_write_response_head(b, cap, 10, 404, NULL, NULL, 0), VEGA_ERR_NOBUF);
}

VTEST(injection_refused)
{
    uint8_t b[256];
    const vega_http1_field bad[] = {
        {"X", 1, "a\r\nEvil: 1", 10},
        {"X", 1, "a\nb", 3},
        {"X", 1, "a\rb", 3},
        {"X", 1, "a\0b", 3},
        {"X", 1, " a", 2},
        {"X", 1, "a\t", 2},
        {"X", 1, "\x7f", 1},
        {"X y", 3, "a", 1},
        {"X:", 2, "a", 1},
        {"", 0, "a", 1},
        {"X\r\n", 3, "a", 1},
        {NULL, 0, "a", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        VCHECK_EQ(vega_http1_write_request_head(b, sizeof b, "GET", "/", 11, &bad[i], 1), -EINVAL);
        VCHECK_EQ(vega_http1_write_response_head(b, sizeof b, 11, 200, "OK", &bad[i], 1), -EINVAL);
        VCHECK_EQ(vega_http1_write_last_chunk(b, sizeof b, &bad[i], 1), -EINVAL);
    }
    VCHECK_EQ(vega_http1_write_request_head(b, sizeof b, "G T", "/", 11, NULL, 0), -EINVAL);
    VCHECK_EQ(vega_http1_write_request_head(b, sizeof b, "", "/", 11, NULL, 0), -EINVAL);
    VCHECK_EQ(vega_http1_write_request_head(b, sizeof b, "GET", "/ HTTP/1.1\r\nX: y", 11, NULL, 0),
              -EINVAL);
    VCHECK_EQ(vega_http1_write_request_head(b, sizeof b, "GET", "", 11, NULL, 0), -EINVAL);
    VCHECK_EQ(vega_http1_write_request_head(b, sizeof b, "GET", "/", 20, NULL, 0), -EINVAL);
    VCHECK_EQ(vega_http1_write_response_head(b, sizeof b, 11, 200, "O\r\nK", NULL, 0), -EINVAL);
    VCHECK_EQ(vega_http1_write_response_head(b, sizeof b, 11, 99, "OK", NULL, 0), -EINVAL);
    VCHECK_EQ(vega_http1_write_response_head(b, sizeof b, 11, 1000, "OK", NULL, 0), -EINVAL);
}

VTEST(chunks)
{
    uint8_t b[64];
    VCHECK_EQ(vega_http1_write_chunk_header(b, sizeof b, 0x1a2b), 6);
    VCHECK(memcmp(b, "1a2b\r\n", 6) == 0);
    VCHECK_EQ(vega_http1_write_chunk_header(b, sizeof b, UINT64_MAX), 18);
    VCHECK(memcmp(b, "ffffffffffffffff\r\n", 18) == 0);
    VCHECK_EQ(vega_http1_write_chunk_header(b, 5, 0x1a2b), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_http1_write_chunk_header(b, sizeof b, 0), -EINVAL);
    VCHECK_EQ(vega_http1_write_chunk_end(b, 2), 2);
    VCHECK_EQ(vega_http1_write_chunk_end(b, 1), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_http1_write_last_chunk(b, sizeof b, NULL, 0), 5);
    VCHECK(memcmp(b, "0\r\n\r\n", 5) == 0);
    const vega_http1_field t = {"Digest", 6, "x=1", 3};
    VCHECK_EQ(vega_http1_write_last_chunk(b, sizeof b, &t, 1), 18);
    VCHECK(memcmp(b, "0\r\nDigest: x=1\r\n\r\n", 18) == 0);
    VCHECK_EQ(vega_http1_write_last_chunk(b, 17, &t, 1), VEGA_ERR_NOBUF);
}

/* What the serializer writes, the parser reads back field for field. */
static const vega_http1_field F4[] = {
    {"Host", 4, "example.com", 11},
    {"X-Empty", 7, "", 0},
    {"X-Mid", 5, "a \tb\x80", 5},
    {"Transfer-Encoding", 17, "chunked", 7},
};
static size_t nh, nt;
static char body[64];
static size_t blen;
static bool done;
static int on_h(void *ud, vega_http1_span n, vega_http1_span v)
{
    (void)ud;
    VCHECK(nh < 4 && n.len == F4[nh].name_len && memcmp(n.ptr, F4[nh].name, n.len) == 0 &&
           v.len == F4[nh].value_len && memcmp(v.ptr, F4[nh].value, v.len) == 0);
    nh++;
    return 0;
}
static int on_b(void *ud, vega_http1_span d)
{
    (void)ud;
    VCHECK(blen + d.len <= sizeof body);
    memcpy(body + blen, d.ptr, d.len);
    blen += d.len;
    return 0;
}
static int on_t(void *ud, vega_http1_span n, vega_http1_span v)
{
    (void)ud;
    VCHECK(n.len == 6 && memcmp(n.ptr, "Digest", 6) == 0 && v.len == 3);
    nt++;
    return 0;
}
static int on_mc(void *ud)
{
    (void)ud;
    done = true;
    return 0;
}

VTEST(round_trip)
{
    uint8_t b[512];
    size_t n = 0;
    vega_ssize k = vega_http1_write_request_head(b, sizeof b, "POST", "/up", 11, F4, 4);
    VCHECK(k > 0);
    n += (size_t)k;
    const char *data[] = {"hello ", "chunked ", "world"};
    for (size_t i = 0; i < 3; i++) {
        k = vega_http1_write_chunk_header(b + n, sizeof b - n, strlen(data[i]));
        VCHECK(k > 0);
        n += (size_t)k;
        memcpy(b + n, data[i], strlen(data[i]));
        n += strlen(data[i]);
        k = vega_http1_write_chunk_end(b + n, sizeof b - n);
        VCHECK(k == 2);
        n += 2;
    }
    const vega_http1_field t = {"Digest", 6, "x=1", 3};
    k = vega_http1_write_last_chunk(b + n, sizeof b - n, &t, 1);
    VCHECK(k > 0);
    n += (size_t)k;
    static const vega_http1_callbacks cb = {
        .on_header = on_h, .on_body = on_b, .on_trailer = on_t, .on_message_complete = on_mc};
    vega_http1_parser p;
    VCHECK_EQ(vega_http1_parser_init(&p, VEGA_HTTP1_REQUEST, NULL, &cb, NULL), 0);
    size_t used = 0;
    VCHECK_EQ(vega_http1_parser_read(&p, b, n, &used), 0);
    VCHECK_EQ(used, n);
    VCHECK(done);
    VCHECK_EQ(nh, 4);
    VCHECK_EQ(nt, 1);
    VCHECK_EQ(blen, 19);
    VCHECK(memcmp(body, "hello chunked world", 19) == 0);
}
