/* SPDX-License-Identifier: MIT */
/* Frame-level conformance, continued: RFC 9113 §6.6 to §7 (PUSH_PROMISE, PING, GOAWAY,
 * WINDOW_UPDATE and flow control, CONTINUATION, error codes), RFC 9218's PRIORITY_UPDATE, the
 * HPACK rules HTTP/2 enforces, and the rules a client core enforces on a server. */
#include "raw_frames.h"

static void srv(struct raw *r)
{
    raw_init(r, true, NULL);
}

static size_t resp_body = 5;

static int respond(struct rec *r, int32_t id, const vega_h2_head *h)
{
    (void)h;
    vega_hpack_field f[] = {FLD(":status", "200")};
    VCHECK_EQ(vega_h2_submit_response(r->conn, id, f, 1, 0), 0);
    static uint8_t body[100000];
    VCHECK_EQ(vega_h2_stream_write(r->conn, id, body, resp_body, VEGA_H2_FLAG_END_STREAM),
              (vega_ssize)resp_body);
    return 0;
}

/* Sums the DATA bytes the core sent on sid. */
static size_t data_on(struct raw *r, uint32_t sid, bool *end)
{
    size_t n = 0;
    struct rframe f;
    while (raw_next(r, &f))
        if (f.type == DATA && f.sid == sid) {
            n += f.len;
            if (end && (f.flags & END_STREAM))
                *end = true;
        }
    return n;
}

/* ---- §6.6 PUSH_PROMISE, §8.4 ---- */

/* §8.4: "A client cannot push. Thus, servers MUST treat the receipt of a PUSH_PROMISE frame as
 * a connection error of type PROTOCOL_ERROR." */
VTEST(s8_4_push_promise_to_server)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    uint8_t p[5] = {0, 0, 0, 2, 0x82};
    raw_frame(&r, PUSH, END_HEADERS, 1, p, 5);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* §6.6: our client sent SETTINGS_ENABLE_PUSH 0: "An endpoint that has set this setting and has
 * received acknowledgment MUST treat the receipt of a PUSH_PROMISE frame as a connection error
 * of type PROTOCOL_ERROR." */
VTEST(s6_6_push_promise_to_client)
{
    struct raw r;
    raw_init(&r, false, NULL);
    VCHECK_EQ(vega_h2_submit_request(r.c, get_root, 4, VEGA_H2_FLAG_END_STREAM, NULL, NULL), 0);
    raw_drain(&r);
    uint8_t p[5] = {0, 0, 0, 2, 0x82};
    raw_frame(&r, PUSH, END_HEADERS, 1, p, 5);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* §6.5.2: "A client MUST treat receipt of a SETTINGS frame with SETTINGS_ENABLE_PUSH set to 1 as
 * a connection error of type PROTOCOL_ERROR." */
VTEST(s6_5_2_client_refuses_enable_push)
{
    struct raw r;
    raw_init(&r, false, NULL);
    setting(&r, 2, 1);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* ---- §6.7 PING ---- */

/* §6.7: "Receivers of a PING frame that does not include an ACK flag MUST send a PING frame
 * with the ACK flag set in response, with an identical frame payload." An ACK is not
 * answered. */
VTEST(s6_7_ping_answered)
{
    struct raw r;
    srv(&r);
    uint8_t p[8] = {'h', '2', 's', 'p', 'e', 'c', 0, 1};
    raw_frame(&r, PING, 0, 0, p, 8);
    struct rframe f;
    VCHECK(raw_find(&r, PING, 0, &f) && f.flags == ACK && memcmp(f.p, p, 8) == 0);
    raw_frame(&r, PING, ACK, 0, p, 8);
    VCHECK(!raw_find(&r, PING, 0, &f));
    raw_expect_ok(&r);
    raw_fini(&r);
}

VTEST(s6_7_ping_on_stream)
{
    struct raw r;
    srv(&r);
    uint8_t p[8] = {0};
    raw_frame(&r, PING, 0, 1, p, 8);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s6_7_ping_bad_length)
{
    struct raw r;
    srv(&r);
    uint8_t p[6] = {0};
    raw_frame(&r, PING, 0, 0, p, 6);
    raw_expect_goaway(&r, VEGA_H2_FRAME_SIZE_ERROR);
    raw_fini(&r);
}

/* ---- §6.8 GOAWAY ---- */

VTEST(s6_8_goaway_on_stream)
{
    struct raw r;
    srv(&r);
    uint8_t p[8] = {0};
    raw_frame(&r, GOAWAY, 0, 1, p, 8);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s6_8_goaway_too_short)
{
    struct raw r;
    srv(&r);
    uint8_t p[7] = {0};
    raw_frame(&r, GOAWAY, 0, 0, p, 7);
    raw_expect_goaway(&r, VEGA_H2_FRAME_SIZE_ERROR);
    raw_fini(&r);
}

/* A peer's GOAWAY with an error is reported with its debug data; the connection winds down. */
VTEST(s6_8_goaway_received)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    uint8_t p[8 + 300];
    be32(p, 1);
    be32(p + 4, VEGA_H2_ENHANCE_YOUR_CALM);
    memset(p + 8, 'd', 300);
    raw_frame(&r, GOAWAY, 0, 0, p, sizeof p);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "G 1 ENHANCE_YOUR_CALM dddd"));
    vega_h2_error e;
    VCHECK(vega_h2_conn_get_error(r.c, &e) && e.remote && e.code == VEGA_H2_ENHANCE_YOUR_CALM);
    vega_h2_conn_info ci;
    vega_h2_conn_get_info(r.c, &ci);
    VCHECK(ci.goaway_received);
    VCHECK(vega_h2_conn_want_read(r.c)); /* stream 1 still open */
    VCHECK_EQ(vega_h2_submit_rst_stream(r.c, 1, VEGA_H2_CANCEL), 0);
    VCHECK(!vega_h2_conn_want_read(r.c));
    raw_fini(&r);
}

/* ---- §6.9 WINDOW_UPDATE, flow control ---- */

/* §6.9: "A receiver MUST treat the receipt of a WINDOW_UPDATE frame with a flow-control window
 * increment of 0 as a stream error (Section 5.4.2) of type PROTOCOL_ERROR; errors on the
 * connection flow-control window MUST be treated as a connection error". */
VTEST(s6_9_zero_increment_connection)
{
    struct raw r;
    srv(&r);
    window(&r, 0, 0);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s6_9_zero_increment_stream)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    window(&r, 1, 0);
    raw_expect_rst(&r, 1, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s6_9_bad_length)
{
    struct raw r;
    srv(&r);
    uint8_t p[3] = {0, 0, 1};
    raw_frame(&r, WINDOW, 0, 0, p, 3);
    raw_expect_goaway(&r, VEGA_H2_FRAME_SIZE_ERROR);
    raw_fini(&r);
}

/* §6.9.1: "If a sender receives a WINDOW_UPDATE that causes a flow-control window to exceed
 * this maximum, it MUST terminate either the stream or the connection, as appropriate. For
 * streams, the sender sends a RST_STREAM with an error code of FLOW_CONTROL_ERROR; for the
 * connection, a GOAWAY frame with an error code of FLOW_CONTROL_ERROR is sent." */
VTEST(s6_9_1_connection_window_overflow)
{
    struct raw r;
    srv(&r);
    window(&r, 0, 0x7fffffff - 65535);
    raw_expect_ok(&r);
    window(&r, 0, 1);
    raw_expect_goaway(&r, VEGA_H2_FLOW_CONTROL_ERROR);
    raw_fini(&r);
}

VTEST(s6_9_1_stream_window_overflow)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    window(&r, 1, 0x7fffffff - 65535);
    raw_expect_ok(&r);
    window(&r, 1, 1);
    raw_expect_rst(&r, 1, VEGA_H2_FLOW_CONTROL_ERROR);
    raw_fini(&r);
}

/* §6.9.1: DATA beyond the window the receiver advertised: a FLOW_CONTROL_ERROR, the stream's
 * or the connection's. */
VTEST(s6_9_1_data_beyond_stream_window)
{
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.initial_window_size = 100;
    struct raw r;
    raw_init(&r, true, &o); /* our SETTINGS was acknowledged in raw_init */
    r.r.consume = false;
    raw_get(&r, 1, false);
    static uint8_t d[101];
    raw_frame(&r, DATA, 0, 1, d, 100);
    raw_expect_ok(&r);
    raw_frame(&r, DATA, 0, 1, d, 1);
    raw_expect_rst(&r, 1, VEGA_H2_FLOW_CONTROL_ERROR);
    raw_fini(&r);
}

VTEST(s6_9_1_data_beyond_connection_window)
{
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.conn_window = 65535;
    struct raw r;
    raw_init(&r, true, &o);
    r.r.consume = false;
    static uint8_t d[16384];
    for (uint32_t sid = 1; sid <= 9; sid += 2) {
        raw_get(&r, sid, false);
        raw_frame(&r, DATA, 0, sid, d, 16384);
        if (r.rc)
            break;
    }
    raw_expect_goaway(&r, VEGA_H2_FLOW_CONTROL_ERROR);
    raw_fini(&r);
}

/* §6.9.1 with SETTINGS_INITIAL_WINDOW_SIZE 1: DATA goes out a byte at a time, as the peer
 * opens the window. */
VTEST(s6_9_1_initial_window_one)
{
    struct raw r;
    srv(&r);
    setting(&r, 4, 1);
    r.r.on_head = respond;
    raw_get(&r, 1, true);
    bool end = false;
    VCHECK_EQ(data_on(&r, 1, &end), 1);
    window(&r, 1, 2);
    VCHECK_EQ(data_on(&r, 1, &end), 2);
    VCHECK(!end);
    window(&r, 1, 10);
    VCHECK_EQ(data_on(&r, 1, &end), 2);
    VCHECK(end);
    raw_fini(&r);
}

/* §6.9.2: "When the value of SETTINGS_INITIAL_WINDOW_SIZE changes, a receiver MUST adjust the
 * size of all stream flow-control windows that it maintains by the difference between the new
 * value and the old value." -- down to a negative window, then up again. */
VTEST(s6_9_2_initial_window_change)
{
    struct raw r;
    srv(&r);
    setting(&r, 4, 3);
    resp_body = 10;
    r.r.on_head = respond;
    raw_get(&r, 1, true);
    VCHECK_EQ(data_on(&r, 1, NULL), 3);
    setting(&r, 4, 1); /* the window is now 1 - 3 = -2 */
    window(&r, 1, 2);  /* back to 0: still nothing */
    VCHECK_EQ(data_on(&r, 1, NULL), 0);
    setting(&r, 4, 5); /* +4 */
    VCHECK_EQ(data_on(&r, 1, NULL), 4);
    vega_h2_stream_info si;
    VCHECK_EQ(vega_h2_stream_get_info(r.c, 1, &si), 0);
    VCHECK_EQ(si.send_window, 0);
    VCHECK_EQ(si.pending, 3);
    resp_body = 5;
    raw_fini(&r);
}

/* §6.9.2: "An endpoint MUST treat a change to SETTINGS_INITIAL_WINDOW_SIZE that causes any
 * flow-control window to exceed the maximum size as a connection error of type
 * FLOW_CONTROL_ERROR." */
VTEST(s6_9_2_initial_window_change_overflow)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    window(&r, 1, 0x7fffffff - 65535);
    setting(&r, 4, 65536);
    raw_expect_goaway(&r, VEGA_H2_FLOW_CONTROL_ERROR);
    raw_fini(&r);
}

/* The connection window limits too: DATA waits for it, and the stall is visible. */
VTEST(s6_9_connection_window_stall)
{
    struct raw r;
    srv(&r);
    r.now = 77;
    resp_body = 70000;
    setting(&r, 4, 1000000); /* the streams' windows are not what limits */
    r.r.on_head = respond;
    raw_get(&r, 1, true);
    VCHECK_EQ(data_on(&r, 1, NULL), 65535);
    vega_h2_conn_info ci;
    vega_h2_conn_get_info(r.c, &ci);
    VCHECK_EQ(ci.send_window, 0);
    VCHECK_EQ(ci.send_stalled_since, 77);
    VCHECK(!vega_h2_conn_want_write(r.c));
    window(&r, 0, 10000);
    VCHECK(vega_h2_conn_want_write(r.c));
    VCHECK_EQ(data_on(&r, 1, NULL), 70000 - 65535);
    vega_h2_conn_get_info(r.c, &ci);
    VCHECK_EQ(ci.send_stalled_since, VEGA_TSTAMP_MAX);
    resp_body = 5;
    raw_fini(&r);
}

/* ---- §6.10 CONTINUATION ---- */

/* A header block over several CONTINUATION frames is taken whole. */
VTEST(s6_10_continuations)
{
    struct raw r;
    srv(&r);
    uint8_t blk[256];
    size_t n = raw_block(&r, get_root, 4, blk, sizeof blk);
    raw_frame(&r, HEADERS, END_STREAM, 1, blk, 3);
    raw_frame(&r, CONT, 0, 1, blk + 3, 3);
    raw_frame(&r, CONT, 0, 1, blk + 6, 0);
    raw_frame(&r, CONT, END_HEADERS, 1, blk + 6, n - 6);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "H1 req GET / END"));
    raw_fini(&r);
}

/* §6.10: "A receiver MUST treat the receipt of any other type of frame or a frame on a
 * different stream as a connection error of type PROTOCOL_ERROR." */
VTEST(s6_10_continuation_then_other_frame)
{
    struct raw r;
    srv(&r);
    uint8_t blk[256];
    size_t n = raw_block(&r, get_root, 4, blk, sizeof blk);
    raw_frame(&r, HEADERS, END_STREAM, 1, blk, 3);
    raw_frame(&r, CONT, 0, 1, blk + 3, n - 3);
    raw_frame(&r, DATA, 0, 1, "x", 1);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s6_10_continuation_other_stream)
{
    struct raw r;
    srv(&r);
    uint8_t blk[256];
    size_t n = raw_block(&r, get_root, 4, blk, sizeof blk);
    raw_frame(&r, HEADERS, END_STREAM, 1, blk, 3);
    raw_frame(&r, CONT, END_HEADERS, 3, blk + 3, n - 3);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* §6.10: "If the stream identifier field specifies the value 0x00, a recipient MUST respond
 * with a connection error of type PROTOCOL_ERROR." */
VTEST(s6_10_continuation_stream_zero)
{
    struct raw r;
    srv(&r);
    uint8_t blk[256];
    size_t n = raw_block(&r, get_root, 4, blk, sizeof blk);
    raw_frame(&r, HEADERS, END_STREAM, 1, blk, 3);
    raw_frame(&r, CONT, END_HEADERS, 0, blk + 3, n - 3);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* §6.10: a CONTINUATION not preceded by a HEADERS, PUSH_PROMISE or CONTINUATION without
 * END_HEADERS "MUST be treated as a connection error of type PROTOCOL_ERROR". */
VTEST(s6_10_continuation_after_end_headers)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    raw_frame(&r, CONT, END_HEADERS, 1, "\x82", 1);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s6_10_continuation_after_continuation_end_headers)
{
    struct raw r;
    srv(&r);
    uint8_t blk[256];
    size_t n = raw_block(&r, get_root, 4, blk, sizeof blk);
    raw_frame(&r, HEADERS, END_STREAM, 1, blk, 3);
    raw_frame(&r, CONT, END_HEADERS, 1, blk + 3, n - 3);
    raw_frame(&r, CONT, END_HEADERS, 1, "\x82", 1);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s6_10_continuation_after_data)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    raw_frame(&r, DATA, 0, 1, "x", 1);
    raw_frame(&r, CONT, END_HEADERS, 1, "\x82", 1);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* ---- §7 error codes ---- */

/* §7: "Unknown or unsupported error codes MUST NOT trigger any special behavior." */
VTEST(s7_unknown_error_codes)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    uint8_t p[4];
    be32(p, 0xdeadbeef);
    raw_frame(&r, RST, 0, 1, p, 4);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "C1 UNKNOWN how1"));
    uint8_t g[8] = {0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef};
    raw_frame(&r, GOAWAY, 0, 0, g, 8);
    raw_expect_ok(&r);
    raw_fini(&r);
}

/* ---- RFC 9218 PRIORITY_UPDATE ---- */

VTEST(rfc9218_priority_update_reported)
{
    struct raw r;
    srv(&r);
    uint8_t p[4 + 8];
    be32(p, 5);
    memcpy(p + 4, "u=1, i  ", 8);
    raw_frame(&r, 0x10, 0, 0, p, 10);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "PU 5 u=1, i\n"));
    raw_fini(&r);
}

/* RFC 9218 §7.1: stream 0 on the frame, prioritized id 0, a push id, and a client receiving
 * one are connection errors of type PROTOCOL_ERROR. */
VTEST(rfc9218_priority_update_errors)
{
    uint8_t p[8] = {0, 0, 0, 1, 'u', '=', '1', 0};
    struct raw r;
    srv(&r);
    raw_frame(&r, 0x10, 0, 1, p, 7);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
    srv(&r);
    p[3] = 0;
    raw_frame(&r, 0x10, 0, 0, p, 7);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
    srv(&r);
    p[3] = 2;
    raw_frame(&r, 0x10, 0, 0, p, 7);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
    raw_init(&r, false, NULL);
    p[3] = 1;
    raw_frame(&r, 0x10, 0, 0, p, 7);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* A client sends one; the server core reports it. */
VTEST(rfc9218_priority_update_sent)
{
    struct raw r;
    raw_init(&r, false, NULL);
    VCHECK_EQ(vega_h2_submit_priority_update(r.c, 1, "u=0", 3), 0);
    VCHECK_EQ(vega_h2_submit_priority_update(r.c, 2, "u=0", 3), -EINVAL);
    VCHECK_EQ(vega_h2_submit_priority_update(r.c, 1, "u=\r0", 4), -EINVAL);
    struct rframe f;
    VCHECK(raw_find(&r, 0x10, 0, &f) && f.len == 7 && memcmp(f.p + 4, "u=0", 3) == 0);
    raw_fini(&r);
}

/* ---- HPACK in HTTP/2 ---- */

/* RFC 7541 §4.2 over HTTP/2: our smaller SETTINGS_HEADER_TABLE_SIZE, once acknowledged,
 * requires the peer's next block to start with a table size update within it. */
VTEST(rfc7541_s4_2_table_size_update_required)
{
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.header_table_size = 100;
    struct raw r;
    raw_init(&r, true, &o);
    raw_get(&r, 1, true); /* no update: COMPRESSION_ERROR */
    raw_expect_goaway(&r, VEGA_H2_COMPRESSION_ERROR);
    raw_fini(&r);
    raw_init(&r, true, &o);
    VCHECK_EQ(vega_hpack_encoder_set_max_table_size(r.enc, 100), 0);
    raw_get(&r, 1, true);
    raw_expect_ok(&r);
    raw_fini(&r);
}

/* A table size update above SETTINGS_HEADER_TABLE_SIZE is a COMPRESSION_ERROR (RFC 7541
 * §6.3), as is one after a field (§4.2). */
VTEST(rfc7541_s6_3_table_size_update_too_large)
{
    struct raw r;
    srv(&r);
    uint8_t b[] = {0x3f, 0xe2, 0x1f, 0x82, 0x86, 0x84, 0x41, 0x01, 'a'};
    raw_frame(&r, HEADERS, END_STREAM | END_HEADERS, 1, b, sizeof b);
    raw_expect_goaway(&r, VEGA_H2_COMPRESSION_ERROR);
    raw_fini(&r);
    srv(&r);
    uint8_t c[] = {0x82, 0x20, 0x86, 0x84, 0x41, 0x01, 'a'};
    raw_frame(&r, HEADERS, END_STREAM | END_HEADERS, 1, c, sizeof c);
    raw_expect_goaway(&r, VEGA_H2_COMPRESSION_ERROR);
    raw_fini(&r);
}

/* The peer's SETTINGS_HEADER_TABLE_SIZE reaches our encoder: its next block announces 0. */
VTEST(s6_5_2_header_table_size_applied_to_encoder)
{
    struct raw r;
    srv(&r);
    setting(&r, 1, 0);
    raw_drain(&r);
    r.parsed = r.out_len;
    r.r.on_head = respond;
    raw_get(&r, 1, true);
    struct rframe f;
    VCHECK(raw_find(&r, HEADERS, 1, &f) && f.len >= 1 && f.p[0] == 0x20);
    raw_fini(&r);
}

/* ---- a client core's rules ---- */

static void cli_get(struct raw *r)
{
    VCHECK_EQ(vega_h2_submit_request(r->c, get_root, 4, VEGA_H2_FLAG_END_STREAM, NULL, NULL), 0);
    raw_drain(r);
    r->parsed = r->out_len;
}

/* A server cannot open streams: HEADERS on one the client never opened. */
VTEST(s5_1_client_headers_on_idle_stream)
{
    struct raw r;
    raw_init(&r, false, NULL);
    vega_hpack_field f[] = {FLD(":status", "200")};
    raw_headers(&r, 1, END_STREAM, f, 1);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s8_3_2_client_response_rules)
{
    static const struct {
        vega_hpack_field f[3];
        size_t n;
        bool end;
    } bad[] = {
        {{FLD("content-type", "x")}, 1, true}, /* no :status */
        {{FLD(":status", "20")}, 1, true},     /* not 3 digits */
        {{FLD(":status", "2x0")}, 1, true},
        {{FLD(":status", "099")}, 1, true}, /* out of range */
        {{FLD(":status", "101")}, 1, true}, /* §8.6 */
        {{FLD(":status", "200"), FLD(":status", "200")}, 2, true},
        {{FLD(":status", "200"), FLD(":path", "/")}, 2, true}, /* a request's */
        {{FLD(":status", "103")}, 1, true},                    /* 1xx with END_STREAM */
        {{FLD(":status", "200"), FLD("content-length", "3")}, 2, true},
        {{FLD(":status", "200"), FLD("Content-Type", "x")}, 2, true},
        {{FLD(":status", "200"), FLD("connection", "close")}, 2, true},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct raw r;
        raw_init(&r, false, NULL);
        cli_get(&r);
        raw_headers(&r, 1, bad[i].end ? END_STREAM : 0, bad[i].f, bad[i].n);
        raw_expect_rst(&r, 1, VEGA_H2_PROTOCOL_ERROR);
        VCHECK(rec_has(&r.r, "C1 PROTOCOL_ERROR how2"));
        raw_fini(&r);
    }
}

/* Content after the response to HEAD, 204 or 304 is malformed; DATA before the final
 * response too. */
VTEST(s8_1_1_client_no_content_responses)
{
    const char *status[] = {"204", "304"};
    for (int i = 0; i < 2; i++) {
        struct raw r;
        raw_init(&r, false, NULL);
        cli_get(&r);
        vega_hpack_field f[] = {{{":status", 7}, {status[i], 3}, VEGA_HPACK_INDEX_AUTO}};
        raw_headers(&r, 1, 0, f, 1);
        raw_frame(&r, DATA, END_STREAM, 1, "x", 1);
        raw_expect_rst(&r, 1, VEGA_H2_PROTOCOL_ERROR);
        raw_fini(&r);
    }
    struct raw r;
    raw_init(&r, false, NULL);
    cli_get(&r);
    vega_hpack_field f[] = {FLD(":status", "100")};
    raw_headers(&r, 1, 0, f, 1);
    raw_frame(&r, DATA, END_STREAM, 1, "x", 1);
    raw_expect_rst(&r, 1, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* A response's content-length against the DATA that came. */
VTEST(s8_1_1_client_content_length)
{
    struct raw r;
    raw_init(&r, false, NULL);
    cli_get(&r);
    vega_hpack_field f[] = {FLD(":status", "200"), FLD("content-length", "4")};
    raw_headers(&r, 1, 0, f, 2);
    raw_frame(&r, DATA, 0, 1, "ab", 2);
    raw_frame(&r, DATA, END_STREAM, 1, "cd", 2);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "D1 END") && rec_has(&r.r, "C1 NO_ERROR how0"));
    raw_fini(&r);
    raw_init(&r, false, NULL);
    cli_get(&r);
    raw_headers(&r, 1, 0, f, 2);
    raw_frame(&r, DATA, END_STREAM, 1, "abc", 3);
    raw_expect_rst(&r, 1, VEGA_H2_PROTOCOL_ERROR);
    VCHECK(!rec_has(&r.r, "D1 END"));
    raw_fini(&r);
    raw_init(&r, false, NULL);
    cli_get(&r);
    raw_headers(&r, 1, 0, f, 2);
    raw_frame(&r, DATA, 0, 1, "abcde", 5);
    raw_expect_rst(&r, 1, VEGA_H2_PROTOCOL_ERROR);
    VCHECK_EQ(r.r.data_bytes, 0); /* the excess is never handed out */
    raw_fini(&r);
}

/* Body bytes an application never consumed go back to the connection's window when their
 * stream closes: dropping a reset stream's buffer cannot starve the connection. */
VTEST(s6_9_unconsumed_given_back_on_close)
{
    struct raw r;
    srv(&r);
    r.r.consume = false;
    size_t from = r.parsed; /* past the preface's own WINDOW_UPDATE */
    static uint8_t d[16000];
    for (uint32_t sid = 1; sid <= 5; sid += 2) {
        raw_get(&r, sid, false);
        for (int i = 0; i < 15; i++)
            raw_frame(&r, DATA, 0, sid, d, sizeof d);
    }
    raw_expect_ok(&r);
    struct rframe f;
    r.parsed = from;
    VCHECK(!raw_find(&r, WINDOW, 0, &f));
    uint8_t p[4] = {0, 0, 0, VEGA_H2_CANCEL};
    for (uint32_t sid = 1; sid <= 5; sid += 2)
        raw_frame(&r, RST, 0, sid, p, 4);
    r.parsed = from;
    VCHECK(raw_find(&r, WINDOW, 0, &f) && raw_get32(f.p) >= 720000);
    VCHECK_EQ(vega_h2_stream_consume(r.c, 1, 100), 0); /* gone: nothing happens */
    raw_fini(&r);
}

#include "h2_int.h"

/* §5.1.1: "Stream identifiers cannot be reused. Long-lived connections can result in an
 * endpoint exhausting the available range of stream identifiers." The last id (2^31 - 1)
 * goes; after it, no new stream. */
VTEST(s5_1_1_stream_ids_exhausted)
{
    struct raw r;
    raw_init(&r, false, NULL);
    r.c->next_id = 0x7ffffffd;
    int32_t id;
    VCHECK_EQ(vega_h2_submit_request(r.c, get_root, 4, VEGA_H2_FLAG_END_STREAM, NULL, &id), 0);
    VCHECK_EQ(id, 0x7ffffffd);
    VCHECK_EQ(vega_h2_submit_request(r.c, get_root, 4, VEGA_H2_FLAG_END_STREAM, NULL, &id), 0);
    VCHECK_EQ(id, 0x7fffffff);
    VCHECK_EQ(vega_h2_submit_request(r.c, get_root, 4, VEGA_H2_FLAG_END_STREAM, NULL, &id),
              VEGA_ERR_H2_GOING_AWAY);
    struct rframe f;
    VCHECK(raw_find(&r, HEADERS, 0x7fffffff, &f));
    raw_fini(&r);
}

/* A client's shutdown: GOAWAY with last stream 0 (it takes no server streams), no new
 * request, the open one finishes. */
VTEST(s6_8_client_shutdown)
{
    struct raw r;
    raw_init(&r, false, NULL);
    VCHECK_EQ(vega_h2_submit_request(r.c, get_root, 4, VEGA_H2_FLAG_END_STREAM, NULL, NULL), 0);
    VCHECK_EQ(vega_h2_conn_shutdown(r.c, 0), 0);
    struct rframe f;
    VCHECK(raw_find(&r, GOAWAY, 0, &f) && raw_get32(f.p) == 0 && raw_get32(f.p + 4) == 0);
    VCHECK_EQ(vega_h2_submit_request(r.c, get_root, 4, VEGA_H2_FLAG_END_STREAM, NULL, NULL),
              VEGA_ERR_H2_GOING_AWAY);
    VCHECK(vega_h2_conn_want_read(r.c));
    vega_hpack_field s[] = {FLD(":status", "200")};
    raw_headers(&r, 1, END_STREAM, s, 1);
    raw_expect_ok(&r);
    VCHECK(!vega_h2_conn_want_read(r.c));
    raw_fini(&r);
}
