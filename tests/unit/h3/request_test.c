/* SPDX-License-Identifier: MIT */
/* Request streams on a server core (lib/h3/request.c, RFC 9114 §4.1, §7): table-driven, every
 * case fed whole, byte by byte and cut at every point of every step, with the same events and
 * result each way. Each case names the section it checks. */
#include "h3_test.h"

static vega_h3_conn *server(h3t_rec *r)
{
    vega_h3_opts o;
    vega_h3_opts_init(&o);
    o.max_field_section_size = 1024;
    vega_h3_conn *c;
    VCHECK_EQ(vega_h3_conn_server_new(&c, &h3t_cbs, &o, r), 0);
    return c;
}

static const char *const get_head[] = {":method: GET", ":scheme: https", ":authority: example.com",
                                       ":path: /", NULL};
static const char *const post_head[] = {":method: POST",           ":scheme: https",
                                        ":authority: example.com", ":path: /up",
                                        "content-length: 11",      NULL};
static const char *const trailer[] = {"x-checksum: 42", NULL};

#define GET_LOG   "H0 head m=GET s=https a=example.com p=/\n"
#define GET_LOG_4 "H4 head m=GET s=https a=example.com p=/\n"
#define POST_LOG  "H0 head m=POST s=https a=example.com p=/up cl=11 [content-length: 11]\n"

typedef void (*build_fn)(h3t_script *s);

static void b_get(h3t_script *s)
{
    h3t_headers_frame(h3t_step_add(s, 0, true), get_head);
}

static void b_post_body_trailers(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 0, false);
    h3t_headers_frame(b, post_head);
    h3t_data_frame(b, "hello ");
    b = h3t_step_add(s, 0, false);
    h3t_data_frame(b, "world");
    b = h3t_step_add(s, 0, true);
    h3t_headers_frame(b, trailer);
}

static void b_unknown_frames(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 0, true);
    h3t_frame(b, 0x21, "grease", 6); /* reserved 0x1f * 0 + 0x21 */
    h3t_headers_frame(b, post_head);
    h3t_frame(b, 0x1f * 1000 + 0x21, "", 0);
    h3t_data_frame(b, "hello world");
    h3t_frame(b, 0x3fff, "unknown type", 12); /* unknown, not reserved */
}

static void b_zero_length_data(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 0, true);
    h3t_headers_frame(b, post_head);
    h3t_frame(b, VEGA__H3_FRAME_DATA, "", 0);
    h3t_data_frame(b, "hello world");
    h3t_frame(b, VEGA__H3_FRAME_DATA, "", 0);
}

static void b_data_first(h3t_script *s)
{
    h3t_data_frame(h3t_step_add(s, 0, true), "x");
}

static void b_headers_after_trailers(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 0, true);
    h3t_headers_frame(b, get_head);
    h3t_headers_frame(b, trailer);
    h3t_headers_frame(b, trailer);
}

static void b_data_after_trailers(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 0, true);
    h3t_headers_frame(b, get_head);
    h3t_headers_frame(b, trailer);
    h3t_data_frame(b, "x");
}

static void b_cl_short(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 0, true);
    h3t_headers_frame(b, post_head);
    h3t_data_frame(b, "hello");
}

static void b_cl_long(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 0, false);
    h3t_headers_frame(b, post_head);
    h3t_data_frame(b, "hello world!");
    h3t_data_frame(h3t_step_add(s, 0, true), "ignored after the error");
}

static void frame_on_request(h3t_script *s, uint64_t type)
{
    h3t_buf *b = h3t_step_add(s, 0, false);
    h3t_headers_frame(b, get_head);
    h3t_frame(b, type, "\x00", 1);
}
static void b_settings(h3t_script *s)
{
    frame_on_request(s, VEGA__H3_FRAME_SETTINGS);
}
static void b_goaway(h3t_script *s)
{
    frame_on_request(s, VEGA__H3_FRAME_GOAWAY);
}
static void b_max_push_id(h3t_script *s)
{
    frame_on_request(s, VEGA__H3_FRAME_MAX_PUSH_ID);
}
static void b_cancel_push(h3t_script *s)
{
    frame_on_request(s, VEGA__H3_FRAME_CANCEL_PUSH);
}
static void b_priority_update(h3t_script *s)
{
    frame_on_request(s, VEGA__H3_FRAME_PRIORITY_UPDATE);
}
static void b_push_promise(h3t_script *s)
{
    frame_on_request(s, VEGA__H3_FRAME_PUSH_PROMISE);
}
static void b_h2_priority(h3t_script *s)
{
    frame_on_request(s, 0x02);
}
static void b_h2_ping(h3t_script *s)
{
    frame_on_request(s, 0x06);
}
static void b_h2_window_update(h3t_script *s)
{
    frame_on_request(s, 0x08);
}
static void b_h2_continuation(h3t_script *s)
{
    frame_on_request(s, 0x09);
}

static void b_truncated_frame(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 0, true);
    h3t_headers_frame(b, post_head);
    uint8_t part[] = {0x00, 0x05, 'a', 'b'}; /* DATA of 5, 2 bytes in */
    h3t_put(b, part, sizeof part);
}

static void b_truncated_header(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 0, true);
    h3t_headers_frame(b, get_head);
    uint8_t part[] = {0x40}; /* a two-byte frame type cut after its first byte */
    h3t_put(b, part, sizeof part);
}

static void b_no_headers(h3t_script *s)
{
    h3t_frame(h3t_step_add(s, 0, true), 0x21, "", 0);
}

static void b_empty_fin(h3t_script *s)
{
    h3t_step_add(s, 0, true);
}

static void b_headers_too_large(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 0, false);
    static char big[2000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    uint8_t payload[4096];
    size_t n = 2;
    payload[0] = payload[1] = 0;
    n += vega__hc_str_encode(payload + n, sizeof payload - n, 0x20, 3, (const uint8_t *)"x-big", 5,
                             false);
    n += vega__hc_str_encode(payload + n, sizeof payload - n, 0, 7, (const uint8_t *)big,
                             strlen(big), false);
    h3t_frame(b, VEGA__H3_FRAME_HEADERS, payload, n);
    h3t_data_frame(h3t_step_add(s, 0, true), "dropped");
}

static void b_bad_section(h3t_script *s)
{
    /* Required Insert Count 1 while we advertised a table: its entry never came, but 0xff is
     * simply out of range (more than 2 * MaxEntries). */
    uint8_t sec[] = {0xff, 0x01, 0x00};
    h3t_frame(h3t_step_add(s, 0, true), VEGA__H3_FRAME_HEADERS, sec, sizeof sec);
}

static void b_empty_headers(h3t_script *s)
{
    h3t_frame(h3t_step_add(s, 0, true), VEGA__H3_FRAME_HEADERS, "", 0);
}

static void b_connect_tunnel(h3t_script *s)
{
    static const char *const head[] = {":method: CONNECT", ":authority: example.com:443", NULL};
    h3t_buf *b = h3t_step_add(s, 0, false);
    h3t_headers_frame(b, head);
    h3t_data_frame(b, "tunnel bytes");
    h3t_frame(b, 0x21, "", 0); /* reserved frames stay fine */
    h3t_headers_frame(h3t_step_add(s, 0, true), trailer);
}

static void b_two_streams(h3t_script *s)
{
    h3t_buf *a = h3t_step_add(s, 0, false);
    h3t_headers_frame(a, post_head);
    h3t_buf *b = h3t_step_add(s, 4, true);
    h3t_headers_frame(b, get_head);
    h3t_data_frame(h3t_step_add(s, 0, true), "hello world");
}

static const struct {
    const char *name;
    build_fn build;
    const char *want;
} cases[] = {
    /* §4.1: a request is one HEADERS frame, optional DATA, optional trailing HEADERS. */
    {"get", b_get, GET_LOG "E0\nR ok\n"},
    {"post_body_trailers", b_post_body_trailers,
     POST_LOG "D0 hello world\nH0 trailers [x-checksum: 42]\nE0\nR ok\n"},
    /* §7.2.8, §9: reserved and unknown frame types are skipped wherever they are. */
    {"unknown_frames_skipped", b_unknown_frames, POST_LOG "D0 hello world\nE0\nR ok\n"},
    {"zero_length_data", b_zero_length_data, POST_LOG "D0 hello world\nE0\nR ok\n"},
    /* §4.1: "a DATA frame before any HEADERS frame, or a HEADERS or DATA frame after the
     * trailing HEADERS frame, is considered invalid" -> H3_FRAME_UNEXPECTED. */
    {"data_before_headers", b_data_first, "R VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"headers_after_trailers", b_headers_after_trailers,
     GET_LOG "H0 trailers [x-checksum: 42]\nR VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"data_after_trailers", b_data_after_trailers,
     GET_LOG "H0 trailers [x-checksum: 42]\nR VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    /* §4.1.2: content-length must equal the sum of the DATA frame lengths. */
    {"content_length_short", b_cl_short, POST_LOG "D0 hello\nX0 H3_MESSAGE_ERROR\nR ok\n"},
    {"content_length_long", b_cl_long, POST_LOG "X0 H3_MESSAGE_ERROR\nR ok\n"},
    /* §7.2: control-stream frames on a request stream -> H3_FRAME_UNEXPECTED. */
    {"settings_on_request", b_settings, GET_LOG "R VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"goaway_on_request", b_goaway, GET_LOG "R VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"max_push_id_on_request", b_max_push_id, GET_LOG "R VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"cancel_push_on_request", b_cancel_push, GET_LOG "R VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    /* RFC 9218 §7.2: PRIORITY_UPDATE only on the control stream. */
    {"priority_update_on_request", b_priority_update,
     GET_LOG "R VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    /* §7.2.5: "A server MUST treat the receipt of a PUSH_PROMISE frame as a connection error of
     * type H3_FRAME_UNEXPECTED." */
    {"push_promise_to_server", b_push_promise, GET_LOG "R VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    /* §7.2.8: HTTP/2-only frame types -> H3_FRAME_UNEXPECTED. */
    {"h2_priority", b_h2_priority, GET_LOG "R VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"h2_ping", b_h2_ping, GET_LOG "R VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"h2_window_update", b_h2_window_update, GET_LOG "R VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"h2_continuation", b_h2_continuation, GET_LOG "R VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    /* §7.1: a stream that ends inside a frame -> H3_FRAME_ERROR. */
    {"fin_inside_frame", b_truncated_frame, POST_LOG "D0 ab\nR VEGA_ERR_PROTO H3_FRAME_ERROR\n"},
    {"fin_inside_frame_header", b_truncated_header, GET_LOG "R VEGA_ERR_PROTO H3_FRAME_ERROR\n"},
    /* §4.1: a request stream that ends without a request -> H3_REQUEST_INCOMPLETE. */
    {"no_headers", b_no_headers, "X0 H3_REQUEST_INCOMPLETE\nR ok\n"},
    {"empty_stream", b_empty_fin, "X0 H3_REQUEST_INCOMPLETE\nR ok\n"},
    /* §4.2.2: a header section over our limit: refused (the stream only), nothing buffered. */
    {"headers_too_large", b_headers_too_large, "X0 H3_EXCESSIVE_LOAD\nR ok\n"},
    /* RFC 9204 §4.5.1.1 through HTTP/3: an impossible Required Insert Count. */
    {"bad_field_section", b_bad_section, "R VEGA_ERR_PROTO QPACK_DECOMPRESSION_FAILED\n"},
    {"empty_headers_frame", b_empty_headers, "R VEGA_ERR_PROTO QPACK_DECOMPRESSION_FAILED\n"},
    /* §4.4: after CONNECT only DATA (and extension frames); HEADERS -> H3_FRAME_UNEXPECTED. */
    {"connect_tunnel", b_connect_tunnel,
     "H0 head m=CONNECT a=example.com:443\nD0 tunnel bytes\nR VEGA_ERR_PROTO "
     "H3_FRAME_UNEXPECTED\n"},
    /* Streams are independent. */
    {"two_streams", b_two_streams, POST_LOG GET_LOG_4 "E4\nD0 hello world\nE0\nR ok\n"},
};

VTEST(table)
{
    static h3t_script s;
    for (size_t i = 0; i < VEGA__ARRAY_LEN(cases); i++) {
        memset(&s, 0, sizeof s);
        cases[i].build(&s);
        h3t_script_done(&s);
        h3t_check_script(cases[i].name, server, &s, cases[i].want);
    }
}

/* After our GOAWAY, new request streams at or above its id are rejected (§5.2). */
static vega_h3_conn *server_after_goaway(h3t_rec *r)
{
    vega_h3_conn *c = server(r);
    VCHECK_EQ(vega_h3_conn_submit_goaway(c, 4), 0);
    return c;
}

VTEST(rejected_after_goaway)
{
    static h3t_script s;
    memset(&s, 0, sizeof s);
    h3t_headers_frame(h3t_step_add(&s, 0, true), get_head);
    h3t_headers_frame(h3t_step_add(&s, 4, true), get_head);
    h3t_headers_frame(h3t_step_add(&s, 8, true), get_head);
    h3t_script_done(&s);
    h3t_check_script("goaway", server_after_goaway, &s,
                     GET_LOG "E0\nX4 H3_REQUEST_REJECTED\nX8 H3_REQUEST_REJECTED\nR ok\n");
}

/* Input for a stream after its stream error is dropped until the caller closes it; the
 * connection goes on. */
VTEST(stream_error_then_close)
{
    h3t_rec r = {0};
    vega_h3_conn *c = server(&r);
    h3t_buf b = {0};
    h3t_headers_frame(&b, post_head);
    h3t_data_frame(&b, "hello world!");
    VCHECK_EQ(vega_h3_conn_read_stream(c, 0, b.b, b.n, false), (long long)b.n);
    VCHECK_EQ(r.nerrors, 1);
    VCHECK_EQ(vega_h3_conn_read_stream(c, 0, (const uint8_t *)"junk", 4, false), 4);
    VCHECK_EQ(vega_h3_conn_close_stream(c, 0), 0);
    VCHECK(vega__h3_stream_find(c, 0) == NULL);
    VCHECK_EQ(vega_h3_conn_close_stream(c, 0), 0); /* unknown: fine */
    VCHECK_EQ(vega_h3_conn_get_next_request_id(c), 4);
    vega_h3_conn_free(c);
}

/* The limits of vega_h3_opts reach QPACK: max_fields (over it: H3_EXCESSIVE_LOAD on the stream)
 * and qpack_blocked_streams (one more blocked stream than announced is the connection error
 * QPACK_DECOMPRESSION_FAILED, RFC 9204 §2.1.2). */
VTEST(limits_fields_and_blocked_streams)
{
    vega_h3_opts o;
    vega_h3_opts_init(&o);
    o.max_fields = 4;
    o.qpack_blocked_streams = 1;
    h3t_rec r = {0};
    vega_h3_conn *c;
    VCHECK_EQ(vega_h3_conn_server_new(&c, &h3t_cbs, &o, &r), 0);
    h3t_buf b = {0};
    h3t_headers_frame(&b, get_head);
    VCHECK_EQ(vega_h3_conn_read_stream(c, 0, b.b, b.n, true), (long long)b.n);
    VCHECK_STR(r.log, GET_LOG "E0\n");
    static const char *const five[] = {":method: GET", ":scheme: https", ":authority: a",
                                       ":path: /",     "x: 1",           NULL};
    b.n = 0;
    h3t_headers_frame(&b, five);
    VCHECK_EQ(vega_h3_conn_read_stream(c, 4, b.b, b.n, true), (long long)b.n);
    VCHECK_EQ(r.err_code, VEGA_H3_EXCESSIVE_LOAD);
    /* Two heads that need one entry each from an encoder stream that has not come. */
    uint8_t blocked[] = {0x01, 0x03, 0x02, 0x00, 0x80}; /* HEADERS: RIC 1, Base 1, relative 0 */
    VCHECK_EQ(vega_h3_conn_read_stream(c, 8, blocked, sizeof blocked, false),
              (long long)sizeof blocked);
    VCHECK_EQ(vega_h3_conn_read_stream(c, 12, blocked, sizeof blocked, false), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_h3_conn_get_error(c, NULL), VEGA_QPACK_DECOMPRESSION_FAILED);
    vega_h3_conn_free(c);
}
