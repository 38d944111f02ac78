/* SPDX-License-Identifier: MIT */
/* HTTP message rules a server core enforces, RFC 9113 §8 (and RFC 8441 §4): each malformed
 * request is a stream error of type PROTOCOL_ERROR (§8.1.1: "Malformed requests or responses
 * that are detected MUST be treated as a stream error (Section 5.4.2) of type
 * PROTOCOL_ERROR."), never seen by the application; each well-formed one passes. Every case
 * also goes through the submit side, which refuses to send what the peer would refuse. */
#include "raw_frames.h"

#define MAXF 8
struct req {
    const char *why;
    vega_hpack_field f[MAXF];
    bool end;         /* END_STREAM on HEADERS */
    const char *body; /* DATA (with END_STREAM) after HEADERS, or NULL */
};

#define REQ(...) __VA_ARGS__
#define M(v)     FLD(":method", v)
#define S(v)     FLD(":scheme", v)
#define A(v)     FLD(":authority", v)
#define P(v)     FLD(":path", v)

static size_t nf(const struct req *q)
{
    size_t n = 0;
    while (n < MAXF && q->f[n].name.ptr)
        n++;
    return n;
}

/* Sends q to a fresh server core (extended CONNECT enabled when connect). Returns true when
 * the application saw the request (and its body), false when the stream was reset with
 * PROTOCOL_ERROR. Fails the test on anything else. */
static bool serve(const struct req *q, bool connect)
{
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.enable_connect_protocol = connect;
    struct raw r;
    raw_init(&r, true, &o);
    raw_headers(&r, 1, q->end ? END_STREAM : 0, q->f, nf(q));
    if (q->body && r.rc == 0)
        raw_frame(&r, DATA, END_STREAM, 1, q->body, strlen(q->body));
    struct rframe f;
    bool rst = false;
    while (raw_next(&r, &f)) {
        if (f.type == 7)
            vtest_fail(__FILE__, __LINE__, "%s: GOAWAY", q->why);
        if (f.type == 3 && f.sid == 1) {
            if (raw_get32(f.p) != VEGA_H2_PROTOCOL_ERROR)
                vtest_fail(__FILE__, __LINE__, "%s: RST_STREAM %s", q->why,
                           vega_h2_error_code_name(raw_get32(f.p)));
            rst = true;
        }
    }
    if (r.rc != 0)
        vtest_fail(__FILE__, __LINE__, "%s: read %d", q->why, r.rc);
    bool seen = rec_has(&r.r, "H1 req");
    bool ended = q->end || rec_has(&r.r, "D1 END");
    if (rst == (seen && ended))
        vtest_fail(__FILE__, __LINE__, "%s: reset %d, delivered %d (%s)", q->why, rst, seen,
                   r.r.log);
    raw_fini(&r);
    return !rst;
}

/* The same request through a client core's submit: -EINVAL for what a server would reject. */
static int submit(const struct req *q)
{
    vega_h2_conn *c;
    struct rec rc = {0};
    VCHECK_EQ(vega_h2_conn_client_new(&c, &rec_cbs, NULL, &rc), 0);
    int r =
        vega_h2_submit_request(c, q->f, nf(q), q->end ? VEGA_H2_FLAG_END_STREAM : 0, NULL, NULL);
    vega_h2_conn_free(c);
    return r;
}

static const struct req good[] = {
    {"plain GET", {M("GET"), S("https"), A("a.example"), P("/")}, true, NULL},
    {"POST with body and length",
     {M("POST"), S("https"), A("a.example"), P("/x"), FLD("content-length", "5")},
     false,
     "hello"},
    {"POST without length", {M("POST"), S("http"), A("a"), P("/x?y=1")}, false, "abc"},
    {"Host instead of :authority",
     {M("GET"), S("https"), P("/"), FLD("host", "a.example")},
     true,
     NULL},
    {"Host equal to :authority, any case",
     {M("GET"), S("https"), A("A.example"), P("/"), FLD("host", "a.EXAMPLE")},
     true,
     NULL},
    {"OPTIONS *", {M("OPTIONS"), S("https"), A("a"), P("*")}, true, NULL},
    {"CONNECT", {M("CONNECT"), A("a.example:443")}, false, "tunnel"},
    {"te: trailers", {M("GET"), S("https"), A("a"), P("/"), FLD("te", "trailers")}, true, NULL},
    {"empty value, odd bytes",
     {M("GET"), S("https"), A("a"), P("/"), FLD("x-e", ""), FLD("x-b", "\x80\xff ok")},
     true,
     NULL},
    {"other scheme, path not absolute", {M("GET"), S("foo"), P("bar")}, true, NULL},
    {"cookie crumbs",
     {M("GET"), S("https"), A("a"), P("/"), FLD("cookie", "a=1"), FLD("cookie", "b=2")},
     true,
     NULL},
};

static const struct req bad[] = {
    /* §8.2.1 field names and values */
    {"uppercase name", {M("GET"), S("https"), A("a"), P("/"), FLD("X-Up", "1")}, true, NULL},
    {"space in name", {M("GET"), S("https"), A("a"), P("/"), FLD("x y", "1")}, true, NULL},
    {"colon in name", {M("GET"), S("https"), A("a"), P("/"), FLD("x:y", "1")}, true, NULL},
    {"DEL in name", {M("GET"), S("https"), A("a"), P("/"), FLD("x\x7f", "1")}, true, NULL},
    {"empty name", {M("GET"), S("https"), A("a"), P("/"), FLD("", "1")}, true, NULL},
    {"NUL in value", {M("GET"), S("https"), A("a"), P("/"), FLD("x", "a\0b")}, true, NULL},
    {"LF in value", {M("GET"), S("https"), A("a"), P("/"), FLD("x", "a\nb")}, true, NULL},
    {"CR in value", {M("GET"), S("https"), A("a"), P("/"), FLD("x", "a\rb")}, true, NULL},
    {"leading space", {M("GET"), S("https"), A("a"), P("/"), FLD("x", " a")}, true, NULL},
    {"trailing tab", {M("GET"), S("https"), A("a"), P("/"), FLD("x", "a\t")}, true, NULL},
    /* §8.2.2 connection-specific fields, TE */
    {"connection", {M("GET"), S("https"), A("a"), P("/"), FLD("connection", "close")}, true, NULL},
    {"keep-alive", {M("GET"), S("https"), A("a"), P("/"), FLD("keep-alive", "5")}, true, NULL},
    {"proxy-connection",
     {M("GET"), S("https"), A("a"), P("/"), FLD("proxy-connection", "x")},
     true,
     NULL},
    {"transfer-encoding",
     {M("POST"), S("https"), A("a"), P("/"), FLD("transfer-encoding", "chunked")},
     false,
     "x"},
    {"upgrade", {M("GET"), S("https"), A("a"), P("/"), FLD("upgrade", "h2c")}, true, NULL},
    {"te: gzip", {M("GET"), S("https"), A("a"), P("/"), FLD("te", "gzip")}, true, NULL},
    /* §8.3 pseudo-header fields */
    {"unknown pseudo", {M("GET"), S("https"), A("a"), P("/"), FLD(":foo", "x")}, true, NULL},
    {"response pseudo in a request",
     {M("GET"), S("https"), A("a"), P("/"), FLD(":status", "200")},
     true,
     NULL},
    {"pseudo after regular", {M("GET"), S("https"), A("a"), FLD("x", "1"), P("/")}, true, NULL},
    {"duplicate :method", {M("GET"), M("GET"), S("https"), A("a"), P("/")}, true, NULL},
    {"duplicate :scheme", {M("GET"), S("https"), S("https"), A("a"), P("/")}, true, NULL},
    {"duplicate :path", {M("GET"), S("https"), A("a"), P("/"), P("/")}, true, NULL},
    {"duplicate :authority", {M("GET"), S("https"), A("a"), A("a"), P("/")}, true, NULL},
    /* §8.3.1 request pseudo-header fields */
    {"missing :method", {S("https"), A("a"), P("/")}, true, NULL},
    {"missing :scheme", {M("GET"), A("a"), P("/")}, true, NULL},
    {"missing :path", {M("GET"), S("https"), A("a")}, true, NULL},
    {"empty :path", {M("GET"), S("https"), A("a"), P("")}, true, NULL},
    {"relative :path for https", {M("GET"), S("https"), A("a"), P("x")}, true, NULL},
    {"* without OPTIONS", {M("GET"), S("https"), A("a"), P("*")}, true, NULL},
    {"no authority at all", {M("GET"), S("https"), P("/")}, true, NULL},
    {"userinfo in :authority", {M("GET"), S("https"), A("u@a"), P("/")}, true, NULL},
    {"Host differs from :authority",
     {M("GET"), S("https"), A("a"), P("/"), FLD("host", "b")},
     true,
     NULL},
    {"two Hosts", {M("GET"), S("https"), P("/"), FLD("host", "a"), FLD("host", "b")}, true, NULL},
    /* §8.5 CONNECT */
    {"CONNECT with :path", {M("CONNECT"), A("a:443"), P("/")}, false, "x"},
    {"CONNECT with :scheme", {M("CONNECT"), S("https"), A("a:443")}, false, "x"},
    {"CONNECT without :authority", {M("CONNECT")}, false, "x"},
    /* RFC 8441 §4: :protocol without SETTINGS_ENABLE_CONNECT_PROTOCOL */
    {":protocol not enabled",
     {M("CONNECT"), FLD(":protocol", "websocket"), S("https"), A("a"), P("/chat")},
     false,
     "x"},
    /* §8.1.1 content-length */
    {"content-length above the DATA",
     {M("POST"), S("https"), A("a"), P("/"), FLD("content-length", "6")},
     false,
     "hello"},
    {"content-length below the DATA",
     {M("POST"), S("https"), A("a"), P("/"), FLD("content-length", "4")},
     false,
     "hello"},
    {"content-length with END_STREAM on HEADERS",
     {M("POST"), S("https"), A("a"), P("/"), FLD("content-length", "1")},
     true,
     NULL},
    {"content-length not a number",
     {M("POST"), S("https"), A("a"), P("/"), FLD("content-length", "5x")},
     false,
     "hello"},
    {"two content-lengths",
     {M("POST"), S("https"), A("a"), P("/"), FLD("content-length", "5"),
      FLD("content-length", "6")},
     false,
     "hello"},
};

VTEST(s8_well_formed_requests)
{
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        if (!serve(&good[i], false))
            vtest_fail(__FILE__, __LINE__, "%s: refused", good[i].why);
        if (submit(&good[i]) != 0)
            vtest_fail(__FILE__, __LINE__, "%s: submit refused", good[i].why);
    }
}

VTEST(s8_malformed_requests)
{
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (serve(&bad[i], false))
            vtest_fail(__FILE__, __LINE__, "%s: accepted", bad[i].why);
        /* The submit side refuses the field rules; content-length against the body and the
         * peer's settings are checked as the stream goes. */
        bool field_rule = !strstr(bad[i].why, "content-length above") &&
                          !strstr(bad[i].why, "content-length below") &&
                          !strstr(bad[i].why, "END_STREAM on HEADERS") &&
                          !strstr(bad[i].why, ":protocol not enabled");
        int rc = submit(&bad[i]);
        if (field_rule && rc != -EINVAL)
            vtest_fail(__FILE__, __LINE__, "%s: submit returned %d", bad[i].why, rc);
    }
}

/* RFC 8441 §4: with SETTINGS_ENABLE_CONNECT_PROTOCOL sent, :protocol is part of a CONNECT that
 * also has :scheme, :path and :authority. */
VTEST(rfc8441_extended_connect_rules)
{
    const struct req ok = {
        "extended CONNECT",
        {M("CONNECT"), FLD(":protocol", "websocket"), S("https"), A("a"), P("/chat")},
        false,
        "x"};
    VCHECK(serve(&ok, true));
    const struct req no_path = {
        "no :path", {M("CONNECT"), FLD(":protocol", "websocket"), S("https"), A("a")}, false, "x"};
    VCHECK(!serve(&no_path, true));
    const struct req not_connect = {
        ":protocol with GET",
        {M("GET"), FLD(":protocol", "websocket"), S("https"), A("a"), P("/")},
        true,
        NULL};
    VCHECK(!serve(&not_connect, true));
}

/* §8.1: "An endpoint that receives a HEADERS frame without the END_STREAM flag set after
 * receiving the HEADERS frame that opens a request ... MUST treat the corresponding request
 * ... as malformed"; trailers carry no pseudo-header fields (§8.3). */
VTEST(s8_1_trailer_rules)
{
    struct raw r;
    raw_init(&r, true, NULL);
    raw_get(&r, 1, false);
    vega_hpack_field t[] = {FLD("x-t", "1")};
    raw_headers(&r, 1, 0, t, 1); /* no END_STREAM */
    raw_expect_rst(&r, 1, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);

    raw_init(&r, true, NULL);
    raw_get(&r, 1, false);
    vega_hpack_field tp[] = {FLD(":path", "/"), FLD("x-t", "1")};
    raw_headers(&r, 1, END_STREAM, tp, 2);
    raw_expect_rst(&r, 1, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);

    /* Good trailers: delivered, ending the stream; content-length counted before them. */
    raw_init(&r, true, NULL);
    vega_hpack_field h[] = {M("POST"), S("https"), A("a"), P("/"), FLD("content-length", "2")};
    raw_headers(&r, 1, 0, h, 5);
    raw_frame(&r, DATA, 0, 1, "ab", 2);
    raw_headers(&r, 1, END_STREAM, t, 1);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "H1 k4 s0 n1 END"));
    raw_fini(&r);

    raw_init(&r, true, NULL);
    raw_headers(&r, 1, 0, h, 5);
    raw_frame(&r, DATA, 0, 1, "a", 1);
    raw_headers(&r, 1, END_STREAM, t, 1);
    raw_expect_rst(&r, 1, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* The submit side's rules for responses and trailers. */
VTEST(s8_submit_response_rules)
{
    struct raw r;
    raw_init(&r, true, NULL);
    raw_get(&r, 1, false);
    vega_hpack_field ok[] = {FLD(":status", "200"), FLD("content-type", "text/plain")};
    vega_hpack_field no_status[] = {FLD("content-type", "text/plain")};
    vega_hpack_field s101[] = {FLD(":status", "101")};
    vega_hpack_field s103[] = {FLD(":status", "103")};
    vega_hpack_field late[] = {FLD("x", "1"), FLD(":status", "200")};
    vega_hpack_field upper[] = {FLD(":status", "200"), FLD("Server", "x")};
    VCHECK_EQ(vega_h2_submit_response(r.c, 1, no_status, 1, 0), -EINVAL);
    VCHECK_EQ(vega_h2_submit_response(r.c, 1, s101, 1, 0), -EINVAL);
    VCHECK_EQ(vega_h2_submit_response(r.c, 1, s103, 1, VEGA_H2_FLAG_END_STREAM), -EINVAL);
    VCHECK_EQ(vega_h2_submit_response(r.c, 1, late, 2, 0), -EINVAL);
    VCHECK_EQ(vega_h2_submit_response(r.c, 1, upper, 2, 0), -EINVAL);
    VCHECK_EQ(vega_h2_submit_response(r.c, 1, ok, 2, 2), -EINVAL);
    VCHECK_EQ(vega_h2_submit_response(r.c, 3, ok, 2, 0), VEGA_ERR_H2_STREAM_CLOSED);
    VCHECK_EQ(vega_h2_stream_write(r.c, 1, (const uint8_t *)"x", 1, 0), VEGA_ERR_H2_STREAM_CLOSED);
    VCHECK_EQ(vega_h2_submit_trailers(r.c, 1, ok + 1, 1), VEGA_ERR_H2_STREAM_CLOSED);
    VCHECK_EQ(vega_h2_submit_response(r.c, 1, s103, 1, 0), 0);
    VCHECK_EQ(vega_h2_submit_response(r.c, 1, ok, 2, 0), 0);
    VCHECK_EQ(vega_h2_submit_response(r.c, 1, ok, 2, 0), VEGA_ERR_H2_STREAM_CLOSED);
    VCHECK_EQ(vega_h2_submit_trailers(r.c, 1, ok, 2), -EINVAL); /* :status in trailers */
    VCHECK_EQ(vega_h2_stream_write(r.c, 1, (const uint8_t *)"abc", 3, 0), 3);
    VCHECK_EQ(vega_h2_stream_write(r.c, 1, (const uint8_t *)"def", 3, 0), 0); /* pending */
    VCHECK_EQ(vega_h2_submit_trailers(r.c, 1, ok + 1, 1), 0);
    VCHECK_EQ(vega_h2_stream_write(r.c, 1, (const uint8_t *)"x", 1, 0), VEGA_ERR_H2_STREAM_CLOSED);
    VCHECK_EQ(vega_h2_submit_request(r.c, get_root, 4, 0, NULL, NULL), -EINVAL); /* a server */
    /* Out: 103, 200, DATA "abc", trailers with END_STREAM -- in that order. */
    struct rframe f;
    int seq = 0;
    while (raw_next(&r, &f)) {
        if (f.sid != 1)
            continue;
        VCHECK(seq < 4);
        static const uint8_t want[] = {1, 1, 0, 1};
        VCHECK_EQ(f.type, want[seq]);
        if (seq == 3)
            VCHECK(f.flags & END_STREAM);
        seq++;
    }
    VCHECK_EQ(seq, 4);
    raw_fini(&r);
}
