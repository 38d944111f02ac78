/* SPDX-License-Identifier: MIT */
/* Every malformed-message rule of RFC 9114 §4.1.2, §4.2 and §4.3 (lib/h3/validate.c), on a
 * server (requests), a client (responses) and trailers: each case is accepted, or answered with
 * the stream error H3_MESSAGE_ERROR while the connection goes on. */
#include "h3_test.h"

#define L(...) ((const char *const[]){__VA_ARGS__, NULL})

static vega_h3_conn *server_with(h3t_rec *r, bool connect_protocol)
{
    vega_h3_opts o;
    vega_h3_opts_init(&o);
    o.enable_connect_protocol = connect_protocol;
    vega_h3_conn *c;
    VCHECK_EQ(vega_h3_conn_server_new(&c, &h3t_cbs, &o, r), 0);
    return c;
}

/* Feeds one request (head + fin) and says whether it was accepted. */
static bool request(const char *const *lines, bool connect_protocol, const char **log)
{
    static h3t_rec r;
    memset(&r, 0, sizeof r);
    vega_h3_conn *c = server_with(&r, connect_protocol);
    static h3t_buf b;
    b.n = 0;
    h3t_headers_frame(&b, lines);
    vega_ssize k = vega_h3_conn_read_stream(c, 0, b.b, b.n, true);
    VCHECK_EQ(k, (long long)b.n); /* never a connection error */
    bool ok = r.nerrors == 0;
    if (!ok)
        VCHECK_EQ(r.err_code, VEGA_H3_MESSAGE_ERROR);
    else
        VCHECK(strstr(r.log, "E0\n") != NULL);
    *log = r.log;
    vega_h3_conn_free(c);
    return ok;
}

#define ACCEPT(...)                                                                                \
    do {                                                                                           \
        const char *log_;                                                                          \
        if (!request(L(__VA_ARGS__), false, &log_))                                                \
            vtest_fail(__FILE__, __LINE__, "refused: %s", log_);                                   \
    } while (0)
#define REFUSE(...)                                                                                \
    do {                                                                                           \
        const char *log_;                                                                          \
        if (request(L(__VA_ARGS__), false, &log_))                                                 \
            vtest_fail(__FILE__, __LINE__, "accepted: %s", log_);                                  \
    } while (0)

#define M ":method: GET"
#define S ":scheme: https"
#define A ":authority: example.com"
#define P ":path: /"

/* §4.3.1: the request pseudo-header fields. */
VTEST(request_pseudo_headers)
{
    ACCEPT(M, S, A, P);
    ACCEPT(P, A, S, M); /* any order among themselves */
    REFUSE(S, A, P);    /* "All HTTP/3 requests MUST include exactly one value for the :method, */
    REFUSE(M, A, P);    /* :scheme, and :path pseudo-header fields" */
    REFUSE(M, S, A);
    REFUSE(M, M, S, A, P);
    REFUSE(M, S, S, A, P);
    REFUSE(M, S, A, P, P);
    REFUSE(M, S, A, A, P);
    REFUSE(":method: G ET", S, A, P); /* a method is a token */
    REFUSE(M, S, A, ":path: ");       /* ":path ... MUST NOT be empty for http or https" */
    REFUSE(M, S, A, ":path: index.html");
    ACCEPT(":method: OPTIONS", S, A, ":path: *");
    REFUSE(M, S, A, ":path: *"); /* "*" only for OPTIONS */
    REFUSE(M, ":scheme: ", A, P);
    ACCEPT(M, ":scheme: foo", ":path: anything"); /* other schemes are theirs to define */
}

/* §4.3: undefined pseudo-header fields, the response's in a request, order. */
VTEST(request_unknown_and_misplaced_pseudo)
{
    REFUSE(M, S, A, P, ":foo: bar");
    REFUSE(M, S, A, P, ":status: 200"); /* "pseudo-header fields defined for responses MUST NOT
                                           appear in requests" */
    REFUSE(M, S, A, "accept: */*", P);  /* "a pseudo-header field that appears in a header
                                           section after a regular header field" */
    REFUSE(M, S, A, P, ":protocol: websocket"); /* RFC 9220: not enabled */
}

/* §4.3.1: :authority and host. */
VTEST(request_authority_and_host)
{
    ACCEPT(M, S, P, "host: example.com");
    ACCEPT(M, S, A, P, "host: example.com");
    REFUSE(M, S, P);                                       /* neither */
    REFUSE(M, S, ":authority: ", P);                       /* "MUST NOT be empty" */
    REFUSE(M, S, P, "host: ");                             /* idem */
    REFUSE(M, S, A, P, "host: example.org");               /* "MUST contain the same value" */
    REFUSE(M, S, P, "host: a.example", "host: a.example"); /* two hosts */
    REFUSE(M, S, ":authority: user@example.com", P);       /* no userinfo for http(s) */
}

/* §4.4 CONNECT and RFC 9220 extended CONNECT. */
VTEST(request_connect)
{
    ACCEPT(":method: CONNECT", ":authority: example.com:443");
    REFUSE(":method: CONNECT", ":authority: example.com:443", S);
    REFUSE(":method: CONNECT", ":authority: example.com:443", P);
    REFUSE(":method: CONNECT");
    REFUSE(":method: CONNECT", ":authority: ");
    const char *log;
    /* Extended CONNECT once enabled: :protocol with :scheme, :path and :authority. */
    VCHECK(
        request(L(":method: CONNECT", ":protocol: websocket", S, A, ":path: /chat"), true, &log));
    VCHECK(strstr(log, "pr=websocket") != NULL);
    VCHECK(!request(L(":method: CONNECT", ":protocol: websocket", S, A), true, &log));
    VCHECK(!request(L(":method: CONNECT", ":protocol: websocket", A, ":path: /chat"), true, &log));
    VCHECK(!request(L(M, ":protocol: websocket", S, A, P), true, &log)); /* only with CONNECT */
}

/* §4.2: names are lowercase tokens; values carry no CR, LF, NUL (nor other controls) and no
 * leading or trailing whitespace (RFC 9110 §5.5). */
VTEST(field_names_and_values)
{
    ACCEPT(M, S, A, P, "x-ok: a\tb c");
    ACCEPT(M, S, A, P, "x-empty: ");
    ACCEPT(M, S, A, P, "x-obs: caf\xc3\xa9");
    REFUSE(M, S, A, P, "Accept: */*"); /* "uppercase characters in field names MUST be treated
                                          as malformed" */
    REFUSE(M, S, A, P, "x bad: 1");    /* not a token */
    REFUSE(M, S, A, P, "x\"q: 1");
    REFUSE(M, S, A, P, "x-a:b: 1"); /* a colon inside a name */
    REFUSE(M, S, A, P, "x-cr: a\rb");
    REFUSE(M, S, A, P, "x-lf: a\nb");
    REFUSE(M, S, A, P, "x-lead:  a"); /* leading whitespace */
    REFUSE(M, S, A, P, "x-trail: a ");
    REFUSE(M, S, A, P, "x-tab: a\t");
    REFUSE(M, S, A, P, "x-del: a\x7f");
    REFUSE(M, S, A, P, "x-ctl: a\x01");
    REFUSE(M, S, A, ":path: /a b"); /* pseudo-header values too */
}

VTEST(field_value_nul)
{
    /* A NUL cannot be written with the C-string builder: a hand-made section. */
    static const uint8_t name[] = "x-nul", value[] = {'a', 0, 'b'};
    uint8_t sec[256];
    size_t n = h3t_section(sec, sizeof sec, L(M, S, A, P));
    n += vega__hc_str_encode(sec + n, sizeof sec - n, 0x20, 3, name, 5, false);
    n += vega__hc_str_encode(sec + n, sizeof sec - n, 0, 7, value, 3, false);
    h3t_rec r = {0};
    vega_h3_conn *c = server_with(&r, false);
    h3t_buf b = {0};
    h3t_frame(&b, VEGA__H3_FRAME_HEADERS, sec, n);
    VCHECK_EQ(vega_h3_conn_read_stream(c, 0, b.b, b.n, true), (long long)b.n);
    VCHECK_EQ(r.err_code, VEGA_H3_MESSAGE_ERROR);
    /* And an empty name (a literal with a zero-length name). */
    n = h3t_section(sec, sizeof sec, L(M, S, A, P));
    n += vega__hc_str_encode(sec + n, sizeof sec - n, 0x20, 3, name, 0, false);
    n += vega__hc_str_encode(sec + n, sizeof sec - n, 0, 7, value, 1, false);
    b.n = 0;
    h3t_frame(&b, VEGA__H3_FRAME_HEADERS, sec, n);
    r.nerrors = 0;
    VCHECK_EQ(vega_h3_conn_read_stream(c, 4, b.b, b.n, true), (long long)b.n);
    VCHECK_EQ(r.nerrors, 1);
    vega_h3_conn_free(c);
}

/* §4.2: connection-specific fields and TE. */
VTEST(connection_specific_fields)
{
    REFUSE(M, S, A, P, "connection: close");
    REFUSE(M, S, A, P, "keep-alive: timeout=5");
    REFUSE(M, S, A, P, "proxy-connection: keep-alive");
    REFUSE(M, S, A, P, "transfer-encoding: chunked");
    REFUSE(M, S, A, P, "upgrade: websocket");
    ACCEPT(M, S, A, P, "te: trailers");
    ACCEPT(M, S, A, P, "te: Trailers");
    REFUSE(M, S, A, P, "te: gzip");
    REFUSE(M, S, A, P, "te: trailers, gzip");
}

/* RFC 9110 §8.6 as §4.1.2 uses it: content-length must be digits, one value. */
VTEST(content_length_values)
{
    ACCEPT(M, S, A, P, "content-length: 0");
    ACCEPT(M, S, A, P, "content-length: 0, 0");
    ACCEPT(M, S, A, P, "content-length: 0", "content-length: 0");
    REFUSE(M, S, A, P, "content-length: abc");
    REFUSE(M, S, A, P, "content-length: -1");
    REFUSE(M, S, A, P, "content-length: 1, 2");
    REFUSE(M, S, A, P, "content-length: 0,");
    REFUSE(M, S, A, P, "content-length: 0 0");
    REFUSE(M, S, A, P, "content-length: 0", "content-length: 1");
    REFUSE(M, S, A, P, "content-length: 99999999999999999999");
    REFUSE(M, S, A, P, "content-length: ");
}

/* RFC 9218 §5: the Priority field of a request. */
VTEST(priority_field)
{
    const char *log;
    VCHECK(request(L(M, S, A, P, "priority: u=1, i"), false, &log));
    VCHECK(strstr(log, " u=1i ") != NULL);
    VCHECK(request(L(M, S, A, P, "priority: u=9"), false, &log)); /* out of range: ignored */
    VCHECK(strstr(log, "p=/ [priority") != NULL);
    VCHECK(request(L(M, S, A, P, "priority: u=1", "priority: i"), false, &log)); /* combined */
    VCHECK(strstr(log, " u=1i ") != NULL);
    VCHECK(request(L(M, S, A, P, "priority: u=1", "priority: ,,"), false, &log)); /* unparsable */
    VCHECK(strstr(log, "p=/ [priority") != NULL);
}

/* ---- responses (client side) --------------------------------------------------------------- */

static bool response(const char *method, const char *const *const *heads, const char *data,
                     const char **log)
{
    bool connect = strcmp(method, "CONNECT") == 0;
    static h3t_rec r;
    memset(&r, 0, sizeof r);
    vega_h3_conn *c;
    VCHECK_EQ(vega_h3_conn_client_new(&c, &h3t_cbs, NULL, &r), 0);
    vega_h3_request req = {.method = {method, strlen(method)},
                           .authority = VEGA_HTTP_LIT("example.com:443")};
    if (!connect) {
        req.scheme = (vega_http_str)VEGA_HTTP_LIT("https");
        req.path = (vega_http_str)VEGA_HTTP_LIT("/");
    }
    uint8_t out[512];
    VCHECK(vega_h3_conn_write_request_head(c, 0, &req, NULL, 0, out, sizeof out) > 0);
    static h3t_buf b;
    b.n = 0;
    for (size_t i = 0; heads[i]; i++)
        h3t_headers_frame(&b, heads[i]);
    if (data)
        h3t_data_frame(&b, data);
    VCHECK_EQ(vega_h3_conn_read_stream(c, 0, b.b, b.n, true), (long long)b.n);
    bool ok = r.nerrors == 0;
    if (!ok)
        VCHECK_EQ(r.err_code, VEGA_H3_MESSAGE_ERROR);
    *log = r.log;
    vega_h3_conn_free(c);
    return ok;
}

#define HEADS(...) ((const char *const *const[]){__VA_ARGS__, NULL})

/* §4.3.2 and RFC 9110 §15: :status is required, three digits, 100..599; no 101 (§4.5). */
VTEST(response_status)
{
    const char *log;
    VCHECK(response("GET", HEADS(L(":status: 200")), NULL, &log));
    VCHECK_STR(log, "H0 head st=200\nE0\n");
    VCHECK(!response("GET", HEADS(L("server: x")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 2000")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 20")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 2x0")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 099")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 600")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 101")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 200", ":status: 200")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 200", ":method: GET")), NULL, &log));
    VCHECK(!response("GET", HEADS(L("server: x", ":status: 200")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 200", "te: trailers")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 200", "Server: x")), NULL, &log));
}

/* §4.1: interim responses precede one final response. */
VTEST(response_interim)
{
    const char *log;
    VCHECK(
        response("GET", HEADS(L(":status: 103", "link: </a>"), L(":status: 200")), "body", &log));
    VCHECK_STR(log, "H0 info st=103 [link: </a>]\nH0 head st=200\nD0 body\nE0\n");
    /* DATA after an interim response only: an invalid sequence of messages (§4.1.2). */
    VCHECK(!response("GET", HEADS(L(":status: 100")), "body", &log));
    /* An interim response and then the end: no final response. */
    VCHECK(!response("GET", HEADS(L(":status: 100")), NULL, &log));
}

/* §4.1.2: "A response that is defined as never having content, even when a Content-Length is
 * present, can have a non-zero Content-Length header field even though no content is included
 * in DATA frames." Content in one is malformed. */
VTEST(response_without_content)
{
    const char *log;
    VCHECK(response("HEAD", HEADS(L(":status: 200", "content-length: 100")), NULL, &log));
    VCHECK(response("GET", HEADS(L(":status: 204", "content-length: 10")), NULL, &log));
    VCHECK(response("GET", HEADS(L(":status: 304", "content-length: 10")), NULL, &log));
    VCHECK(!response("HEAD", HEADS(L(":status: 200")), "x", &log));
    VCHECK(!response("GET", HEADS(L(":status: 204")), "x", &log));
    VCHECK(!response("GET", HEADS(L(":status: 200", "content-length: 10")), "short", &log));
    VCHECK(response("GET", HEADS(L(":status: 200", "content-length: 5")), "exact", &log));
    /* RFC 9110 §9.3.6: a client ignores content-length in a 2xx to CONNECT. */
    VCHECK(response("CONNECT", HEADS(L(":status: 200", "content-length: 1")), "tunnel data", &log));
}

/* §4.3: "Pseudo-header fields MUST NOT appear in trailer sections." */
VTEST(trailers)
{
    const char *log;
    VCHECK(response("GET", HEADS(L(":status: 200"), L("x-sum: 1")), NULL, &log));
    VCHECK_STR(log, "H0 head st=200\nH0 trailers [x-sum: 1]\nE0\n");
    VCHECK(!response("GET", HEADS(L(":status: 200"), L(":status: 200")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 200"), L("te: trailers")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 200"), L("X-Sum: 1")), NULL, &log));
    VCHECK(!response("GET", HEADS(L(":status: 200"), L("connection: close")), NULL, &log));
}
