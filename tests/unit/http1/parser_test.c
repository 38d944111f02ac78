/* SPDX-License-Identifier: MIT */
/* HTTP/1.1 parser (lib/http1/parser.c): every case is fed one-shot, split at every point and
 * byte by byte, and must produce the same event log each way. */
#include <vega/http1.h>

#include <stdarg.h>

#include "vtest.h"

typedef struct rec {
    char log[32768];
    size_t len;
    bool in_body;
    int fail_on; /* event number that returns nonzero, 0 = none */
    int events;
    vega_http1_parser *p;
    bool head_next; /* set HEAD for the next response from on_message_complete */
} rec;

static void app(rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void app(rec *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(r->log + r->len, sizeof r->log - r->len, fmt, ap);
    va_end(ap);
    VCHECK(k >= 0 && (size_t)k < sizeof r->log - r->len);
    r->len += (size_t)k;
}

static int ev(rec *r, bool body)
{
    if (r->in_body && !body)
        app(r, "\n");
    r->in_body = body;
    return ++r->events == r->fail_on;
}

static int rl(void *ud, vega_http1_span m, vega_http1_span t, int v)
{
    rec *r = ud;
    int x = ev(r, false);
    app(r, "RL %.*s %.*s %d\n", (int)m.len, m.ptr, (int)t.len, t.ptr, v);
    return x;
}
static int st(void *ud, int v, int code, vega_http1_span reason)
{
    rec *r = ud;
    int x = ev(r, false);
    app(r, "ST %d %d [%.*s]\n", v, code, (int)reason.len, reason.ptr);
    return x;
}
static int hd(void *ud, vega_http1_span n, vega_http1_span v)
{
    rec *r = ud;
    int x = ev(r, false);
    app(r, "H %.*s=[%.*s]\n", (int)n.len, n.ptr, (int)v.len, v.ptr);
    return x;
}
static int hc(void *ud, const vega_http1_head *h)
{
    rec *r = ud;
    int x = ev(r, false);
    app(r, "HC f%d cl%llu ka%d up%d\n", (int)h->framing, (unsigned long long)h->content_length,
        h->keep_alive, h->upgrade);
    return x;
}
static int bd(void *ud, vega_http1_span d)
{
    rec *r = ud;
    bool was = r->in_body;
    int x = ev(r, true);
    if (!was)
        app(r, "B ");
    app(r, "%.*s", (int)d.len, d.ptr);
    return x;
}
static int tr(void *ud, vega_http1_span n, vega_http1_span v)
{
    rec *r = ud;
    int x = ev(r, false);
    app(r, "T %.*s=[%.*s]\n", (int)n.len, n.ptr, (int)v.len, v.ptr);
    return x;
}
static int mc(void *ud)
{
    rec *r = ud;
    int x = ev(r, false);
    app(r, "MC\n");
    if (r->head_next)
        vega_http1_parser_set_head(r->p, true);
    return x;
}

static const vega_http1_callbacks cbs = {rl, st, hd, hc, bd, tr, mc};

typedef struct opts {
    vega_http1_kind kind;
    const vega_http1_limits *lim;
    bool head, head_next;
    int fail_on;
} opts;

/* Feeds s cut at the given points (sorted, 0..n), then finish(); returns the log. */
static const char *feed(const opts *o, const char *s, size_t n, const size_t *cuts, size_t ncut)
{
    static rec r;
    static vega_http1_parser p;
    memset(&r, 0, sizeof r);
    r.fail_on = o->fail_on;
    r.p = &p;
    r.head_next = o->head_next;
    VCHECK_EQ(vega_http1_parser_init(&p, o->kind, o->lim, &cbs, &r), 0);
    vega_http1_parser_set_head(&p, o->head);
    size_t at = 0;
    int rc = 0;
    for (size_t i = 0; i <= ncut && rc == 0; i++) {
        size_t end = i < ncut ? cuts[i] : n, used = 0;
        rc = vega_http1_parser_read(&p, (const uint8_t *)s + at, end - at, &used);
        if (rc == 0 && used != end - at) {
            VCHECK(vega_http1_parser_is_upgraded(&p));
            ev(&r, false);
            app(&r, "UP@%zu\n", at + used);
            rc = 1;
            break;
        }
        VCHECK(used <= end - at);
        at = end;
    }
    if (rc == 0)
        rc = vega_http1_parser_finish(&p);
    if (rc < 0) {
        ev(&r, false);
        app(&r, "ERR %s\n", vega_http1_error_name(vega_http1_parser_get_error(&p)));
        VCHECK(rc == (vega_http1_parser_get_error(&p) == VEGA_HTTP1_E_CALLBACK ? VEGA_ERR_CALLBACK
                                                                               : VEGA_ERR_PROTO));
        size_t used = 1;
        VCHECK_EQ(vega_http1_parser_read(&p, (const uint8_t *)"x", 1, &used), rc);
    } else if (r.in_body) {
        app(&r, "\n");
    }
    return r.log;
}

/* The one-shot log must equal want, and so must every two-way split and byte-by-byte. */
static void check(const opts *o, const char *s, const char *want)
{
    size_t n = strlen(s);
    static char one[32768];
    snprintf(one, sizeof one, "%s", feed(o, s, n, NULL, 0));
    if (strcmp(one, want) != 0)
        vtest_fail(__FILE__, __LINE__, "one-shot log:\n%s\nwant:\n%s", one, want);
    for (size_t i = 0; i <= n; i++) {
        const char *got = feed(o, s, n, &i, 1);
        if (strcmp(got, want) != 0)
            vtest_fail(__FILE__, __LINE__, "split at %zu log:\n%s\nwant:\n%s", i, got, want);
    }
    size_t *cuts = malloc((n + 1) * sizeof *cuts);
    for (size_t i = 0; i <= n; i++)
        cuts[i] = i;
    const char *got = feed(o, s, n, cuts, n + 1);
    free(cuts);
    if (strcmp(got, want) != 0)
        vtest_fail(__FILE__, __LINE__, "byte-by-byte log:\n%s\nwant:\n%s", got, want);
}

static void req(const char *s, const char *want)
{
    opts o = {.kind = VEGA_HTTP1_REQUEST};
    check(&o, s, want);
}

static void resp(const char *s, const char *want)
{
    opts o = {.kind = VEGA_HTTP1_RESPONSE};
    check(&o, s, want);
}

static void req_err(const char *s, const char *err)
{
    opts o = {.kind = VEGA_HTTP1_REQUEST};
    const char *log = feed(&o, s, strlen(s), NULL, 0);
    const char *e = strstr(log, "ERR ");
    if (!e || strncmp(e + 4, err, strlen(err)) != 0 || e[4 + strlen(err)] != '\n')
        vtest_fail(__FILE__, __LINE__, "input [%s]: log:\n%s\nwant ERR %s", s, log, err);
    static char want[32768];
    snprintf(want, sizeof want, "%s", log);
    check(&o, s, want);
}

static void resp_err(const char *s, const char *err)
{
    opts o = {.kind = VEGA_HTTP1_RESPONSE};
    const char *log = feed(&o, s, strlen(s), NULL, 0);
    const char *e = strstr(log, "ERR ");
    if (!e || strncmp(e + 4, err, strlen(err)) != 0)
        vtest_fail(__FILE__, __LINE__, "input [%s]: log:\n%s\nwant ERR %s", s, log, err);
}

VTEST(simple_get)
{
    req("GET /a?b=c HTTP/1.1\r\nHost: x\r\nAccept:  */*  \r\nX-E:\r\n\r\n",
        "RL GET /a?b=c 11\nH Host=[x]\nH Accept=[*/*]\nH X-E=[]\nHC f0 cl0 ka1 up0\nMC\n");
}

VTEST(content_length_body)
{
    req("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
        "RL POST / 11\nH Host=[x]\nH Content-Length=[5]\nHC f1 cl5 ka1 up0\nB hello\nMC\n");
    /* identical repeated values are accepted as one (RFC 9110 §8.6) */
    req("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nhi",
        "RL POST / 11\nH Host=[x]\nH Content-Length=[2]\nH content-length=[2]\n"
        "HC f1 cl2 ka1 up0\nB hi\nMC\n");
    req("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        "RL POST / 11\nH Host=[x]\nH Content-Length=[0]\nHC f1 cl0 ka1 up0\nMC\n");
    /* truncated body */
    req("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhel",
        "RL POST / 11\nH Host=[x]\nH Content-Length=[5]\nHC f1 cl5 ka1 up0\nB hel\n"
        "ERR VEGA_HTTP1_E_TRUNCATED\n");
}

VTEST(pipelined)
{
    req("GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
        "POST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
        "PUT /3 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n"
        "GET /4 HTTP/1.0\r\n\r\n",
        "RL GET /1 11\nH Host=[x]\nHC f0 cl0 ka1 up0\nMC\n"
        "RL POST /2 11\nH Host=[x]\nH Content-Length=[3]\nHC f1 cl3 ka1 up0\nB abc\nMC\n"
        "RL PUT /3 11\nH Host=[x]\nH Transfer-Encoding=[chunked]\nHC f2 cl0 ka1 up0\nB de\nMC\n"
        "RL GET /4 10\nHC f0 cl0 ka0 up0\nMC\n");
}

VTEST(chunked_ext_trailers)
{
    req("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
        "5;a=b ; c = \"q\\\"x\" ;d\r\nhello\r\nA\r\n0123456789\r\n"
        "0;last\r\nExpires: never\r\nX-Sum:  1 2 \r\n\r\n",
        "RL POST / 11\nH Host=[x]\nH Transfer-Encoding=[gzip, chunked]\nHC f2 cl0 ka1 up0\n"
        "B hello0123456789\nT Expires=[never]\nT X-Sum=[1 2]\nMC\n");
}

VTEST(keep_alive)
{
    req("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        "RL GET / 10\nH Connection=[keep-alive]\nHC f0 cl0 ka1 up0\nMC\n");
    req("GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, Close\r\n\r\n",
        "RL GET / 11\nH Host=[x]\nH Connection=[foo, Close]\nHC f0 cl0 ka0 up0\nMC\n");
    resp("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
         "ST 10 200 [OK]\nH Content-Length=[1]\nHC f1 cl1 ka0 up0\nB x\nMC\n");
}

VTEST(informational_then_final)
{
    resp("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s>\r\n\r\n"
         "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
         "ST 11 100 [Continue]\nHC f0 cl0 ka1 up0\nMC\nST 11 103 [Early Hints]\nH Link=[</s>]\n"
         "HC f0 cl0 ka1 up0\nMC\nST 11 200 [OK]\nH Content-Length=[2]\nHC f1 cl2 ka1 up0\n"
         "B ok\nMC\n");
}

VTEST(no_body_responses)
{
    resp("HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n"
         "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\nHTTP/1.1 200\r\n\r\nrest",
         "ST 11 204 [No Content]\nH Content-Length=[7]\nHC f0 cl0 ka1 up0\nMC\n"
         "ST 11 304 [Not Modified]\nH Content-Length=[9]\nHC f0 cl0 ka1 up0\nMC\n"
         "ST 11 200 []\nHC f3 cl0 ka0 up0\nB rest\nMC\n");
    /* HEAD: no body for the final response; 1xx before it does not clear the flag, the final
     * response does (so the second response here has its body). */
    opts o = {.kind = VEGA_HTTP1_RESPONSE, .head = true};
    check(&o,
          "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n"
          "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
          "ST 11 100 [Continue]\nHC f0 cl0 ka1 up0\nMC\nST 11 200 [OK]\nH Content-Length=[3]\n"
          "HC f0 cl0 ka1 up0\nMC\nST 11 200 [OK]\nH Content-Length=[3]\nHC f1 cl3 ka1 up0\n"
          "B abc\nMC\n");
    /* pipelined HEADs: the flag is set again from on_message_complete */
    opts o2 = {.kind = VEGA_HTTP1_RESPONSE, .head = true, .head_next = true};
    check(&o2,
          "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: "
          "chunked\r\n\r\n",
          "ST 11 200 [OK]\nH Content-Length=[3]\nHC f0 cl0 ka1 up0\nMC\nST 11 200 [OK]\n"
          "H Transfer-Encoding=[chunked]\nHC f0 cl0 ka1 up0\nMC\n");
}

VTEST(until_close_and_te_in_response)
{
    resp("HTTP/1.1 200 OK\r\n\r\nabc", "ST 11 200 [OK]\nHC f3 cl0 ka0 up0\nB abc\nMC\n");
    resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz",
         "ST 11 200 [OK]\nH Transfer-Encoding=[gzip]\nHC f3 cl0 ka0 up0\nB zz\nMC\n");
    resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n",
         "ST 11 200 [OK]\nH Transfer-Encoding=[chunked]\nHC f2 cl0 ka1 up0\nB z\nMC\n");
}

VTEST(upgrade_stops)
{
    resp("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello",
         "ST 11 101 [Switching Protocols]\nH Upgrade=[websocket]\nHC f0 cl0 ka0 up1\nMC\n"
         "UP@56\n");
    req("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\nTLS",
        "RL CONNECT a:443 11\nH Host=[a:443]\nHC f0 cl0 ka0 up1\nMC\nUP@39\n");
}

VTEST(smuggling_framing)
{
    req_err("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            "VEGA_HTTP1_E_CL_AND_TE");
    req_err("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
            "VEGA_HTTP1_E_CL_AND_TE");
    resp_err("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
             "VEGA_HTTP1_E_CL_AND_TE");
    const char *bad_cl[] = {"1, 2",
                            "1,1",
                            "+1",
                            "-1",
                            "0x10",
                            "1 2",
                            "",
                            "18446744073709551616",
                            "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad_cl / sizeof bad_cl[0]; i++) {
        char m[256];
        snprintf(m, sizeof m, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %s\r\n\r\n",
                 bad_cl[i]);
        req_err(m, "VEGA_HTTP1_E_CONTENT_LENGTH");
    }
    req_err("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "VEGA_HTTP1_E_CONTENT_LENGTH");
    resp_err("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
             "VEGA_HTTP1_E_CONTENT_LENGTH");
    const char *bad_te[] = {"gzip",
                            "chunked, gzip",
                            "chunked, chunked",
                            "chunked;q=1",
                            "chunked\r\nTransfer-Encoding: gzip",
                            "identity",
                            ",",
                            "chunk\x7f"};
    for (size_t i = 0; i < sizeof bad_te / sizeof bad_te[0]; i++) {
        char m[256];
        snprintf(m, sizeof m, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: %s\r\n\r\n",
                 bad_te[i]);
        req_err(m, i == 7 ? "VEGA_HTTP1_E_FIELD_VALUE" : "VEGA_HTTP1_E_TRANSFER_ENCODING");
    }
    req_err("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
            "VEGA_HTTP1_E_TRANSFER_ENCODING");
    req("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: "
        "chunked\r\n\r\n0\r\n\r\n",
        "RL POST / 11\nH Host=[x]\nH Transfer-Encoding=[gzip]\nH Transfer-Encoding=[chunked]\n"
        "HC f2 cl0 ka1 up0\nMC\n");
    req_err("GET / HTTP/1.1\r\n\r\n", "VEGA_HTTP1_E_HOST");
    req_err("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "VEGA_HTTP1_E_HOST");
}

VTEST(smuggling_syntax)
{
    req_err("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", "VEGA_HTTP1_E_OBS_FOLD");
    req_err("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n\tb\r\n\r\n", "VEGA_HTTP1_E_OBS_FOLD");
    req_err("GET / HTTP/1.1\r\n Host: x\r\n\r\n", "VEGA_HTTP1_E_OBS_FOLD");
    req_err("GET / HTTP/1.1\nHost: x\r\n\r\n", "VEGA_HTTP1_E_BARE_LF");
    req_err("GET / HTTP/1.1\r\nHost: x\n\r\n", "VEGA_HTTP1_E_BARE_LF");
    req_err("GET / HTTP/1.1\r\nHost: x\r\n\n", "VEGA_HTTP1_E_BARE_LF");
    req_err("GET / HTTP/1.1\r\nHost: x\rY: z\r\n\r\n", "VEGA_HTTP1_E_BARE_CR");
    req_err("GET /\r HTTP/1.1\r\nHost: x\r\n\r\n", "VEGA_HTTP1_E_BARE_CR");
    req_err("GET / HTTP/1.1\r\r\nHost: x\r\n\r\n", "VEGA_HTTP1_E_BARE_CR");
    req_err("GET / HTTP/1.1\r\nX\r: y\r\nHost: x\r\n\r\n", "VEGA_HTTP1_E_BARE_CR");
    resp_err("HTTP/1.1 200 O\rK\r\n\r\n", "VEGA_HTTP1_E_BARE_CR");
    req_err("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", "VEGA_HTTP1_E_START_LINE");
    req_err("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", "VEGA_HTTP1_E_START_LINE");
    req_err("GET / HTTP/1.1 \r\nHost: x\r\n\r\n", "VEGA_HTTP1_E_START_LINE");
    req_err("GET / HTTP/2.0\r\nHost: x\r\n\r\n", "VEGA_HTTP1_E_VERSION");
    req_err("\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", "VEGA_HTTP1_E_START_LINE");
    req_err("GET / HTTP/1.1\r\nHost : x\r\n\r\n", "VEGA_HTTP1_E_FIELD_NAME");
    req_err("GET / HTTP/1.1\r\nHost\t: x\r\n\r\n", "VEGA_HTTP1_E_FIELD_NAME");
    req_err("GET / HTTP/1.1\r\nHo(st: x\r\n\r\n", "VEGA_HTTP1_E_FIELD_NAME");
    req_err("GET / HTTP/1.1\r\n: x\r\n\r\n", "VEGA_HTTP1_E_FIELD_NAME");
    req_err("GET / HTTP/1.1\r\nNoColon\r\n\r\n", "VEGA_HTTP1_E_FIELD_NAME");
    req_err("GET / HTTP/1.1\r\nHost: x\x01y\r\n\r\n", "VEGA_HTTP1_E_FIELD_VALUE");
    req_err("GET / HTTP/1.1\r\nHost: x\x7f\r\n\r\n", "VEGA_HTTP1_E_FIELD_VALUE");
    resp_err("HTTP/1.1 20 OK\r\n\r\n", "VEGA_HTTP1_E_START_LINE");
    resp_err("HTTP/1.1 099 OK\r\n\r\n", "VEGA_HTTP1_E_START_LINE");
    resp_err("HTTP/1.1 200OK\r\n\r\n", "VEGA_HTTP1_E_START_LINE");
}

VTEST(chunk_errors)
{
    const char *h = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    const struct {
        const char *body, *err;
    } cases[] = {
        {"10000000000000000\r\n", "VEGA_HTTP1_E_CHUNK_SIZE"},
        {"fffffffffffffffff\r\n", "VEGA_HTTP1_E_CHUNK_SIZE"},
        {"\r\n", "VEGA_HTTP1_E_CHUNK_SIZE"},
        {"-1\r\n", "VEGA_HTTP1_E_CHUNK_SIZE"},
        {"0x1\r\n", "VEGA_HTTP1_E_CHUNK_EXT"},
        {"1 1\r\n", "VEGA_HTTP1_E_CHUNK_EXT"},
        {"1;\r\n", "VEGA_HTTP1_E_CHUNK_EXT"},
        {"1;a=\r\n", "VEGA_HTTP1_E_CHUNK_EXT"},
        {"1;a=\"x\r\n", "VEGA_HTTP1_E_CHUNK_EXT"},
        {"1;a=b c\r\n", "VEGA_HTTP1_E_CHUNK_EXT"},
        {"1;a(=b\r\n", "VEGA_HTTP1_E_CHUNK_EXT"},
        {"1;a=\"\x01\"\r\n", "VEGA_HTTP1_E_CHUNK_EXT"},
        /* whitespace is only allowed around ";" and "=" (issue 11, finding 4) */
        {"5 \r\n", "VEGA_HTTP1_E_CHUNK_SIZE"},
        {"5\t\r\n", "VEGA_HTTP1_E_CHUNK_SIZE"},
        {"5;a=b \r\n", "VEGA_HTTP1_E_CHUNK_EXT"},
        {"5;a \r\n", "VEGA_HTTP1_E_CHUNK_EXT"},
        {"5;a=\"q\"\t\r\n", "VEGA_HTTP1_E_CHUNK_EXT"},
        {"1\r\nxx\r\n", "VEGA_HTTP1_E_CHUNK_DATA"},
        {"1\r\nx\n0\r\n\r\n", "VEGA_HTTP1_E_CHUNK_DATA"},
        {"1\n", "VEGA_HTTP1_E_BARE_LF"},
        {"0\r\nX : y\r\n\r\n", "VEGA_HTTP1_E_FIELD_NAME"},
        {"0\r\n y\r\n\r\n", "VEGA_HTTP1_E_OBS_FOLD"},
        {"1\r\nx\r\n0\r\n", "VEGA_HTTP1_E_TRUNCATED"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char m[512];
        snprintf(m, sizeof m, "%s%s", h, cases[i].body);
        req_err(m, cases[i].err);
    }
}

static void limit_case(const vega_http1_limits *lim, const char *s, const char *err)
{
    opts o = {.kind = VEGA_HTTP1_REQUEST, .lim = lim};
    const char *log = feed(&o, s, strlen(s), NULL, 0);
    const char *e = strstr(log, "ERR ");
    if (err ? (!e || strncmp(e + 4, err, strlen(err)) != 0) : e != NULL)
        vtest_fail(__FILE__, __LINE__, "input [%s]: log:\n%s\nwant %s", s, log,
                   err ? err : "no error");
    static char want[32768];
    snprintf(want, sizeof want, "%s", log);
    check(&o, s, want);
}

VTEST(limits)
{
    /* line limits count the CRLF: "GET /aaaa HTTP/1.1\r\n" is 20 bytes */
    vega_http1_limits l = {
        .max_start_line = 20, .max_field_line = 10, .max_field_section = 25, .max_fields = 3};
    limit_case(&l, "GET /aaaa HTTP/1.1\r\nHost: xx\r\n\r\n", NULL);
    limit_case(&l, "GET /aaaaa HTTP/1.1\r\nHost: x\r\n\r\n", "VEGA_HTTP1_E_START_LINE_TOO_LONG");
    limit_case(&l, "GET /aaaaaaaaaaaaaaaaaaaaaaaa", "VEGA_HTTP1_E_START_LINE_TOO_LONG");
    limit_case(&l, "GET / HTTP/1.1\r\nHost: xxxx\r\n\r\n", "VEGA_HTTP1_E_FIELD_LINE_TOO_LONG");
    limit_case(&l, "GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n",
               "VEGA_HTTP1_E_TOO_MANY_FIELDS");
    limit_case(&l, "GET / HTTP/1.1\r\nHost: x\r\nAA: 123\r\nBB: 123\r\n\r\n",
               "VEGA_HTTP1_E_SECTION_TOO_LARGE");
    /* trailers obey the same limits, counted afresh */
    const char *c = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    vega_http1_limits l2 = {.max_field_line = 40, .max_fields = 2};
    char m[512];
    snprintf(m, sizeof m, "%s0\r\nA: 1\r\nB: 2\r\n\r\n", c);
    limit_case(&l2, m, NULL);
    snprintf(m, sizeof m, "%s0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", c);
    limit_case(&l2, m, "VEGA_HTTP1_E_TOO_MANY_FIELDS");
    snprintf(m, sizeof m, "%s0\r\nA: 12345678901234567890123456789012345678\r\n\r\n", c);
    limit_case(&l2, m, "VEGA_HTTP1_E_FIELD_LINE_TOO_LONG");
    snprintf(m, sizeof m, "%s1;aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nx\r\n0\r\n\r\n", c);
    limit_case(&l2, m, "VEGA_HTTP1_E_CHUNK_LINE_TOO_LONG");
    /* defaults: 8 KiB field line, 100 fields */
    static char big[20000];
    int k = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nHost: x\r\nX: ");
    memset(big + k, 'a', 8192 - 5);
    snprintf(big + k + 8192 - 5, sizeof big - (size_t)k - 8192 + 5, "\r\n\r\n");
    opts o = {.kind = VEGA_HTTP1_REQUEST};
    VCHECK(strstr(feed(&o, big, strlen(big), NULL, 0), "ERR") == NULL);
    memset(big + k, 'a', 8192 - 4);
    snprintf(big + k + 8192 - 4, sizeof big - (size_t)k - 8192 + 4, "\r\n\r\n");
    VCHECK(strstr(feed(&o, big, strlen(big), NULL, 0), "ERR VEGA_HTTP1_E_FIELD_LINE_TOO_LONG"));
    k = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nHost: x\r\n");
    for (int i = 0; i < 100; i++)
        k += snprintf(big + k, sizeof big - (size_t)k, "A: b\r\n");
    snprintf(big + k, sizeof big - (size_t)k, "\r\n");
    VCHECK(strstr(feed(&o, big, strlen(big), NULL, 0), "ERR VEGA_HTTP1_E_TOO_MANY_FIELDS"));
}

VTEST(init_args)
{
    vega_http1_parser p;
    vega_http1_limits l = {.max_field_line = VEGA_HTTP1_LINE_BUF + 1};
    VCHECK_EQ(vega_http1_parser_init(&p, VEGA_HTTP1_REQUEST, &l, &cbs, NULL), -EINVAL);
    VCHECK_EQ(vega_http1_parser_init(&p, (vega_http1_kind)3, NULL, &cbs, NULL), -EINVAL);
    VCHECK_EQ(vega_http1_parser_init(&p, VEGA_HTTP1_REQUEST, NULL, NULL, NULL), -EINVAL);
    /* all callbacks NULL is fine */
    static const vega_http1_callbacks none = {0};
    VCHECK_EQ(vega_http1_parser_init(&p, VEGA_HTTP1_REQUEST, NULL, &none, NULL), 0);
    const char *s = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    size_t used = 0;
    VCHECK_EQ(vega_http1_parser_read(&p, (const uint8_t *)s, strlen(s), &used), 0);
    VCHECK_EQ(used, strlen(s));
    VCHECK_STR(vega_http1_error_name(VEGA_HTTP1_E_CALLBACK), "VEGA_HTTP1_E_CALLBACK");
    VCHECK_STR(vega_http1_error_name((vega_http1_error)999), "unknown");
}

VTEST(callback_error)
{
    for (int i = 1; i <= 5; i++) {
        opts o = {.kind = VEGA_HTTP1_REQUEST, .fail_on = i};
        const char *s = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nz";
        VCHECK(strstr(feed(&o, s, strlen(s), NULL, 0), "ERR VEGA_HTTP1_E_CALLBACK"));
    }
}

/* Spans point into the input when the line is whole there, into the parser's buffer when it
 * straddled two reads; body spans always point into the input. */
static const uint8_t *zc_in;
static size_t zc_len, zc_hits_in, zc_hits_buf;
static vega_http1_parser zc_p;
static void zc_where(const char *ptr, size_t len)
{
    const uint8_t *q = (const uint8_t *)ptr;
    if (q >= zc_in && q + len <= zc_in + zc_len)
        zc_hits_in++;
    else if (q >= zc_p.buf && q + len <= zc_p.buf + sizeof zc_p.buf)
        zc_hits_buf++;
    else
        vtest_fail(__FILE__, __LINE__, "span outside input and buffer");
}
static int zc_h(void *ud, vega_http1_span n, vega_http1_span v)
{
    (void)ud;
    zc_where(n.ptr, n.len);
    zc_where(v.ptr, v.len);
    return 0;
}
static int zc_b(void *ud, vega_http1_span d)
{
    (void)ud;
    const uint8_t *q = (const uint8_t *)d.ptr;
    VCHECK(q >= zc_in && q + d.len <= zc_in + zc_len);
    return 0;
}

VTEST(zero_copy)
{
    static const vega_http1_callbacks cb = {.on_header = zc_h, .on_body = zc_b};
    const char *s = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody";
    size_t n = strlen(s), cut = strlen("POST / HTTP/1.1\r\nHost: x\r\nConte"), used;
    VCHECK_EQ(vega_http1_parser_init(&zc_p, VEGA_HTTP1_REQUEST, NULL, &cb, NULL), 0);
    zc_in = (const uint8_t *)s;
    zc_len = cut;
    VCHECK_EQ(vega_http1_parser_read(&zc_p, zc_in, cut, &used), 0);
    VCHECK_EQ(used, cut);
    VCHECK_EQ(zc_hits_in, 2); /* Host: whole in the first read */
    zc_in = (const uint8_t *)s + cut;
    zc_len = n - cut;
    VCHECK_EQ(vega_http1_parser_read(&zc_p, zc_in, n - cut, &used), 0);
    VCHECK_EQ(used, n - cut);
    VCHECK_EQ(zc_hits_buf, 2); /* Content-Length straddled: buffered copy */
}
