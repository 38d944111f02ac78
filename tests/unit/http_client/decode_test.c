/* SPDX-License-Identifier: MIT */
/* The HTTP client's content decoding: Accept-Encoding, gzip/deflate/br/zstd bodies (also
 * chunked) with their coded size counted, unknown codings passed through, corrupt and
 * truncated streams, and a decompression bomb stopped by max_body. */
#include <errno.h>

#include <vega/compress.h>

#include "hc_util.h"

static const struct {
    vega_compress_kind kind;
    const char *name;
    vega_http_coding coding;
} kinds[] = {
    {VEGA_COMPRESS_GZIP, "gzip", VEGA_HTTP_CODING_GZIP},
    {VEGA_COMPRESS_DEFLATE, "deflate", VEGA_HTTP_CODING_DEFLATE},
    {VEGA_COMPRESS_BROTLI, "br", VEGA_HTTP_CODING_BR},
    {VEGA_COMPRESS_ZSTD, "zstd", VEGA_HTTP_CODING_ZSTD},
};

#define PLAIN_LEN 100000

static char *plain_text(void)
{
    char *p = malloc(PLAIN_LEN);
    VCHECK(p);
    for (size_t i = 0; i < PLAIN_LEN; i++)
        p[i] = (char)("the quick brown fox "[i % 20] + (char)((i / 997) % 3));
    return p;
}

/* A response with body as Content-Length or chunked, with a Content-Encoding. */
static char *make_resp(const char *coding, const uint8_t *body, size_t n, bool chunked, size_t *len)
{
    char *out = malloc(n + n / 100 + 512);
    VCHECK(out);
    size_t o = (size_t)sprintf(out, "HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\n", coding);
    if (!chunked) {
        o += (size_t)sprintf(out + o, "Content-Length: %zu\r\n\r\n", n);
        memcpy(out + o, body, n);
        o += n;
    } else {
        o += (size_t)sprintf(out + o, "Transfer-Encoding: chunked\r\n\r\n");
        for (size_t off = 0; off < n; off += 1000) {
            size_t k = n - off < 1000 ? n - off : 1000;
            o += (size_t)sprintf(out + o, "%zx\r\n", k);
            memcpy(out + o, body + off, k);
            o += k;
            memcpy(out + o, "\r\n", 2);
            o += 2;
        }
        memcpy(out + o, "0\r\n\r\n", 5);
        o += 5;
    }
    *len = o;
    return out;
}

static char *fetch_big(vega_http_client *c, const char *url, bool decompress,
                       vega_http_client_response **r, vega_ssize *n)
{
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.decompress = decompress;
    char *body = malloc(PLAIN_LEN * 2);
    VCHECK(body);
    *n = hc_fetch(c, &rq, r, body, PLAIN_LEN * 2);
    return body;
}

static void body_codings(void)
{
    char *plain = plain_text();
    struct hs *h = hs_new(NULL);
    char *resps[8];
    size_t zlen[4];
    for (size_t i = 0; i < 4; i++) {
        uint8_t *z;
        size_t zn;
        VCHECK_EQ(vega_compress_buffer(kinds[i].kind, VEGA_COMPRESS_LEVEL_DEFAULT, plain, PLAIN_LEN,
                                       0, &z, &zn),
                  0);
        zlen[i] = zn;
        for (int ch = 0; ch < 2; ch++) {
            size_t len;
            resps[i * 2 + (size_t)ch] = make_resp(kinds[i].name, z, zn, ch, &len);
            hs_step(h, (struct hs_step){.resp = resps[i * 2 + (size_t)ch], .len = len});
        }
        free(z);
    }
    hs_start(h);
    vega_http_client *c = hc_client();
    char url[128];
    hs_url(h, url, sizeof url, "/z");
    for (size_t i = 0; i < 8; i++) {
        vega_http_client_response *r;
        vega_ssize n;
        char *body = fetch_big(c, url, true, &r, &n);
        VCHECK_EQ(n, PLAIN_LEN);
        VCHECK(memcmp(body, plain, PLAIN_LEN) == 0);
        VCHECK_EQ(vega_http_client_response_info(r)->coding, kinds[i / 2].coding);
        /* the coded bytes as they came (curl's size_download), chunk framing not counted */
        VCHECK_EQ(vega_http_client_response_info(r)->body_wire_bytes, zlen[i / 2]);
        VCHECK(strstr(h->last_req, "\r\nAccept-Encoding: br, zstd, gzip, deflate\r\n"));
        vega_http_client_response_free(r);
        free(body);
    }
    VCHECK_EQ(h->accepts, 1);
    vega_http_client_free(c);
    hs_free(h);
    for (size_t i = 0; i < 8; i++)
        free(resps[i]);
    free(plain);
}

VTEST(gzip_deflate_br_zstd)
{
    vtest_run(body_codings, 0);
}

static void body_passthrough(void)
{
    struct hs *h = hs_new(NULL);
    /* unknown coding, a list of codings, and decompress not asked: bytes as they came */
    hs_step(h, (struct hs_step){.resp = "HTTP/1.1 200 OK\r\nContent-Encoding: compress\r\n"
                                        "Content-Length: 4\r\n\r\nLZW!"});
    hs_step(h, (struct hs_step){.resp = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip, br\r\n"
                                        "Content-Length: 4\r\n\r\nboth"});
    hs_step(h, (struct hs_step){.resp = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
                                        "Content-Length: 4\r\n\r\nnotz"});
    hs_step(h, (struct hs_step){.resp = "HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\n"
                                        "Content-Length: 4\r\n\r\nsame"});
    hs_start(h);
    vega_http_client *c = hc_client();
    char url[128], body[64];
    hs_url(h, url, sizeof url, "/");
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.decompress = true;
    vega_http_client_response *r;
    const char *want[] = {"LZW!", "both"};
    for (int i = 0; i < 2; i++) {
        VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 4);
        VCHECK_STR(body, want[i]);
        VCHECK_EQ(vega_http_client_response_info(r)->coding, VEGA_HTTP_CODING_IDENTITY);
        VCHECK_EQ(vega_http_client_response_info(r)->body_wire_bytes, 4u);
        vega_http_client_response_free(r);
    }
    rq.decompress = false;
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 4);
    VCHECK_STR(body, "notz");
    VCHECK(!strstr(h->last_req, "Accept-Encoding"));
    vega_http_client_response_free(r);
    rq.decompress = true;
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 4);
    VCHECK_STR(body, "same");
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    hs_free(h);
}

VTEST(unknown_coding_passes_through)
{
    vtest_run(body_passthrough, 0);
}

static void body_corrupt(void)
{
    uint8_t *z;
    size_t zn;
    const char *text = "some text that compresses, some text that compresses";
    VCHECK_EQ(vega_compress_buffer(VEGA_COMPRESS_GZIP, 6, text, strlen(text), 0, &z, &zn), 0);
    size_t l1, l2;
    char *trunc = make_resp("gzip", z, zn - 6, false, &l1); /* the stream is cut short */
    z[zn / 2] ^= 0x55;
    char *bad = make_resp("gzip", z, zn, false, &l2);
    free(z);
    struct hs *h = hs_new(NULL);
    hs_step(h, (struct hs_step){.resp = trunc, .len = l1});
    hs_step(h, (struct hs_step){.resp = bad, .len = l2});
    hs_start(h);
    vega_http_client *c = hc_client();
    char url[128], body[256];
    hs_url(h, url, sizeof url, "/");
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.decompress = true;
    vega_http_client_response *r;
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), -ENODATA);
    vega_http_client_response_free(r);
    vega_ssize n = hc_fetch(c, &rq, &r, body, sizeof body);
    VCHECK(n == VEGA_ERR_PROTO);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    hs_free(h);
    free(trunc);
    free(bad);
}

VTEST(corrupt_and_truncated_streams)
{
    vtest_run(body_corrupt, 0);
}

/* 64 MiB of zeros in about 64 KiB of gzip (chunked) against max_body 1 MiB. */
static void body_bomb(void)
{
    size_t big = 64u << 20;
    uint8_t *zeros = calloc(1, big);
    VCHECK(zeros);
    uint8_t *z;
    size_t zn;
    VCHECK_EQ(vega_compress_buffer(VEGA_COMPRESS_GZIP, 9, zeros, big, 0, &z, &zn), 0);
    free(zeros);
    VCHECK(zn < 200000);
    size_t len;
    char *resp = make_resp("gzip", z, zn, true, &len);
    free(z);
    struct hs *h = hs_new(NULL);
    hs_step(h, (struct hs_step){.resp = resp, .len = len});
    hs_start(h);
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.max_body = 1u << 20;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    char url[128];
    hs_url(h, url, sizeof url, "/bomb");
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.decompress = true;
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    uint8_t *buf = malloc(65536);
    uint64_t total = 0;
    vega_ssize n;
    while ((n = vega_http_client_response_read(r, buf, 65536, DL(5000))) > 0)
        total += (uint64_t)n;
    VCHECK_EQ(n, VEGA_HTTP_ERR_BODY_TOO_LARGE);
    VCHECK(total <= (1u << 20));
    free(buf);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    hs_free(h);
    free(resp);
}

VTEST(decompression_bomb_stopped)
{
    vtest_run(body_bomb, 0);
}
