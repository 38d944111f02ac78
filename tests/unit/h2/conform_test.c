/* SPDX-License-Identifier: MIT */
/* Frame-level conformance of a server core, RFC 9113 §3 to §6 (the ground h2spec covers): each
 * case sends hand-built frames and checks the exact connection error (GOAWAY) or stream error
 * (RST_STREAM) and its code. Each test name carries the section. §8 is in http_test.c. */
#include "raw_frames.h"

static void srv(struct raw *r)
{
    raw_init(r, true, NULL);
}

/* The server answers each request with 200 and a small body, ending the stream. */
static int respond(struct rec *r, int32_t id, const vega_h2_head *h)
{
    (void)h;
    vega_hpack_field f[] = {FLD(":status", "200")};
    VCHECK_EQ(vega_h2_submit_response(r->conn, id, f, 1, 0), 0);
    static const uint8_t body[] = "hello";
    VCHECK_EQ(vega_h2_stream_write(r->conn, id, body, 5, VEGA_H2_FLAG_END_STREAM), 5);
    return 0;
}

static int rst(struct raw *r, uint32_t sid, uint32_t code)
{
    uint8_t p[4];
    be32(p, code);
    return raw_frame(r, RST, 0, sid, p, 4);
}

/* ---- §3.4 the connection preface ---- */

/* §3.4: "Clients and servers MUST treat an invalid connection preface as a connection error of
 * type PROTOCOL_ERROR." The GOAWAY may be omitted for a peer that does not speak HTTP/2. */
VTEST(s3_4_invalid_preface)
{
    vega_h2_conn *c;
    struct rec rc = {0};
    VCHECK_EQ(vega_h2_conn_server_new(&c, &rec_cbs, NULL, &rc), 0);
    VCHECK_EQ(vega_h2_conn_read(c, (const uint8_t *)"PRI * HTTP/2.0\r\n", 16, 0), 0);
    VCHECK_EQ(vega_h2_conn_read(c, (const uint8_t *)"\r\nXM", 4, 0), VEGA_ERR_PROTO);
    vega_h2_error e;
    VCHECK(vega_h2_conn_get_error(c, &e) && e.code == VEGA_H2_PROTOCOL_ERROR);
    VCHECK(!vega_h2_conn_want_read(c));
    vega_h2_conn_free(c);
    /* An HTTP/1.1 request. */
    VCHECK_EQ(vega_h2_conn_server_new(&c, &rec_cbs, NULL, &rc), 0);
    VCHECK_EQ(vega_h2_conn_read(c, (const uint8_t *)"GET / HTTP/1.1\r\n", 16, 0), VEGA_ERR_PROTO);
    vega_h2_conn_free(c);
}

/* §3.4: the preface's SETTINGS "MUST be the first frame". */
VTEST(s3_4_first_frame_not_settings)
{
    struct raw r;
    memset(&r, 0, sizeof r);
    VCHECK_EQ(vega_h2_conn_server_new(&r.c, &rec_cbs, NULL, &r.r), 0);
    VCHECK_EQ(raw_send(&r, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24), 0);
    uint8_t ping[8] = {0};
    raw_frame(&r, PING, 0, 0, ping, 8);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    vega_h2_conn_free(r.c);
    /* A SETTINGS ACK is not the preface either. */
    memset(&r, 0, sizeof r);
    VCHECK_EQ(vega_h2_conn_server_new(&r.c, &rec_cbs, NULL, &r.r), 0);
    VCHECK_EQ(raw_send(&r, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24), 0);
    raw_frame(&r, SETTINGS, ACK, 0, NULL, 0);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    vega_h2_conn_free(r.c);
}

/* §3.4: a valid preface is answered with the server's SETTINGS (and an ACK of ours). */
VTEST(s3_4_valid_preface)
{
    struct raw r;
    srv(&r);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "S win65535 fs16384"));
    raw_fini(&r);
}

/* ---- §4.1 frame format, §5.5 extensions ---- */

/* §4.1: "Implementations MUST ignore and discard frames of unknown types", unknown flags and
 * the reserved bit. */
VTEST(s4_1_unknown_type_flags_reserved_bit)
{
    struct raw r;
    srv(&r);
    uint8_t junk[5] = {1, 2, 3, 4, 5};
    raw_frame(&r, 0x2a, 0xff, 0, junk, 5);
    raw_expect_ok(&r);
    uint8_t ping[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    raw_frame(&r, PING, 0xfe, 0, ping, 8); /* undefined flags */
    struct rframe f;
    VCHECK(raw_find(&r, PING, 0, &f) && f.flags == ACK && memcmp(f.p, ping, 8) == 0);
    /* The reserved bit of the stream id is ignored: stream 1 with the bit set. */
    raw_get(&r, 0x80000001u, true);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "H1 req GET / END"));
    raw_fini(&r);
}

/* §5.5: "Extension frames that appear in the middle of a field block (Section 4.3) are not
 * permitted; these MUST be treated as a connection error of type PROTOCOL_ERROR." */
VTEST(s5_5_unknown_frame_inside_header_block)
{
    struct raw r;
    srv(&r);
    uint8_t blk[256];
    size_t n = raw_block(&r, get_root, 4, blk, sizeof blk);
    raw_frame(&r, HEADERS, END_STREAM, 1, blk, n - 2);
    raw_frame(&r, 0x2a, 0, 0, NULL, 0);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* ---- §4.2 frame size ---- */

/* A DATA frame of exactly SETTINGS_MAX_FRAME_SIZE (2^14) is fine. */
VTEST(s4_2_max_size_data_is_fine)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    static uint8_t big[16384];
    raw_frame(&r, DATA, END_STREAM, 1, big, sizeof big);
    raw_expect_ok(&r);
    VCHECK_EQ(r.r.data_bytes, 16384);
    raw_fini(&r);
}

/* §4.2: "An endpoint MUST send an error code of FRAME_SIZE_ERROR if a frame exceeds the size
 * defined in SETTINGS_MAX_FRAME_SIZE". */
VTEST(s4_2_oversized_data)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    static uint8_t big[16385];
    raw_frame(&r, DATA, END_STREAM, 1, big, sizeof big);
    raw_expect_goaway(&r, VEGA_H2_FRAME_SIZE_ERROR);
    raw_fini(&r);
}

VTEST(s4_2_oversized_headers)
{
    struct raw r;
    srv(&r);
    static uint8_t big[16385];
    raw_frame(&r, HEADERS, END_STREAM | END_HEADERS, 1, big, sizeof big);
    raw_expect_goaway(&r, VEGA_H2_FRAME_SIZE_ERROR);
    raw_fini(&r);
}

/* A larger SETTINGS_MAX_FRAME_SIZE of ours lets larger frames in. */
VTEST(s4_2_our_max_frame_size)
{
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.max_frame_size = 32768;
    struct raw r;
    raw_init(&r, true, &o);
    raw_get(&r, 1, false);
    static uint8_t big[32768];
    raw_frame(&r, DATA, 0, 1, big, sizeof big);
    raw_expect_ok(&r);
    raw_frame(&r, DATA, 0, 1, big, sizeof big);
    raw_expect_ok(&r);
    raw_fini(&r);
}

/* ---- §4.3 header compression ---- */

/* §4.3: "A decoding error in a field block MUST be treated as a connection error (Section
 * 5.4.1) of type COMPRESSION_ERROR." */
VTEST(s4_3_invalid_header_block)
{
    struct raw r;
    srv(&r);
    uint8_t bad[] = {0x80}; /* index 0 */
    raw_frame(&r, HEADERS, END_STREAM | END_HEADERS, 1, bad, 1);
    raw_expect_goaway(&r, VEGA_H2_COMPRESSION_ERROR);
    raw_fini(&r);
}

/* §4.3: "Each field block is processed as a discrete unit. Field blocks MUST be transmitted as
 * a contiguous sequence of frames, with no interleaved frames of any other type or from any
 * other stream." */
VTEST(s4_3_priority_inside_header_block)
{
    struct raw r;
    srv(&r);
    uint8_t blk[256];
    size_t n = raw_block(&r, get_root, 4, blk, sizeof blk);
    raw_frame(&r, HEADERS, END_STREAM, 1, blk, n);
    uint8_t pr[5] = {0, 0, 0, 0, 15};
    raw_frame(&r, PRIORITY, 0, 1, pr, 5);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s4_3_headers_of_another_stream_inside_block)
{
    struct raw r;
    srv(&r);
    uint8_t blk[256];
    size_t n = raw_block(&r, get_root, 4, blk, sizeof blk);
    raw_frame(&r, HEADERS, END_STREAM, 1, blk, n);
    raw_frame(&r, HEADERS, END_STREAM | END_HEADERS, 3, blk, n);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* ---- §5.1 stream states ---- */

/* §5.1 idle: "Receiving any frame other than HEADERS or PRIORITY on a stream in this state
 * MUST be treated as a connection error of type PROTOCOL_ERROR." */
VTEST(s5_1_idle_data)
{
    struct raw r;
    srv(&r);
    raw_frame(&r, DATA, 0, 1, "x", 1);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s5_1_idle_rst_stream)
{
    struct raw r;
    srv(&r);
    rst(&r, 1, VEGA_H2_CANCEL);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s5_1_idle_window_update)
{
    struct raw r;
    srv(&r);
    window(&r, 1, 100);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s5_1_idle_continuation)
{
    struct raw r;
    srv(&r);
    uint8_t blk[256];
    size_t n = raw_block(&r, get_root, 4, blk, sizeof blk);
    raw_frame(&r, CONT, END_HEADERS, 1, blk, n);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* PRIORITY on an idle stream is fine, and opens nothing. */
VTEST(s5_1_idle_priority_allowed)
{
    struct raw r;
    srv(&r);
    uint8_t pr[5] = {0, 0, 0, 0, 15};
    raw_frame(&r, PRIORITY, 0, 7, pr, 5);
    raw_expect_ok(&r);
    raw_get(&r, 1, true); /* 1 < 7 is still idle: PRIORITY did not open 7 */
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "H1 req"));
    raw_fini(&r);
}

/* §5.1 half-closed (remote): "If an endpoint receives additional frames, other than
 * WINDOW_UPDATE, PRIORITY, or RST_STREAM, for a stream that is in this state, it MUST respond
 * with a stream error (Section 5.4.2) of type STREAM_CLOSED." */
VTEST(s5_1_half_closed_remote_data)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, true);
    raw_frame(&r, DATA, END_STREAM, 1, "x", 1);
    raw_expect_rst(&r, 1, VEGA_H2_STREAM_CLOSED);
    raw_fini(&r);
}

VTEST(s5_1_half_closed_remote_headers)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, true);
    raw_get(&r, 1, true);
    raw_expect_rst(&r, 1, VEGA_H2_STREAM_CLOSED);
    raw_fini(&r);
}

VTEST(s5_1_half_closed_remote_continuation)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, true);
    raw_frame(&r, CONT, END_HEADERS, 1, "\x82", 1);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR); /* no header block was open */
    raw_fini(&r);
}

/* WINDOW_UPDATE, PRIORITY and RST_STREAM stay allowed in half-closed (remote). */
VTEST(s5_1_half_closed_remote_allowed_frames)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, true);
    window(&r, 1, 10);
    uint8_t pr[5] = {0, 0, 0, 0, 15};
    raw_frame(&r, PRIORITY, 0, 1, pr, 5);
    raw_expect_ok(&r);
    rst(&r, 1, VEGA_H2_CANCEL);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "C1 CANCEL how1"));
    raw_fini(&r);
}

/* §5.1 closed: "An endpoint that receives any frame other than PRIORITY after receiving a
 * RST_STREAM MUST treat that as a stream error (Section 5.4.2) of type STREAM_CLOSED." */
VTEST(s5_1_closed_data_after_rst)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    rst(&r, 1, VEGA_H2_CANCEL);
    raw_frame(&r, DATA, 0, 1, "x", 1);
    raw_expect_rst(&r, 1, VEGA_H2_STREAM_CLOSED);
    raw_fini(&r);
}

VTEST(s5_1_closed_headers_after_rst)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    rst(&r, 1, VEGA_H2_CANCEL);
    raw_get(&r, 1, true);
    raw_expect_goaway(&r, VEGA_H2_STREAM_CLOSED);
    raw_fini(&r);
}

VTEST(s5_1_closed_continuation_after_rst)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    rst(&r, 1, VEGA_H2_CANCEL);
    raw_frame(&r, CONT, END_HEADERS, 1, "\x82", 1);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* Closed after END_STREAM both ways: "any frames after receiving a frame with the END_STREAM
 * flag set MUST [be treated] as a connection error (Section 5.4.1) of type STREAM_CLOSED" --
 * or the stream error for DATA (h2spec takes either). */
VTEST(s5_1_closed_data_after_end_stream)
{
    struct raw r;
    srv(&r);
    r.r.on_head = respond;
    raw_get(&r, 1, true);
    raw_drain(&r);
    VCHECK(rec_has(&r.r, "C1 NO_ERROR how0"));
    raw_frame(&r, DATA, 0, 1, "x", 1);
    raw_expect_rst(&r, 1, VEGA_H2_STREAM_CLOSED);
    raw_fini(&r);
}

VTEST(s5_1_closed_headers_after_end_stream)
{
    struct raw r;
    srv(&r);
    r.r.on_head = respond;
    raw_get(&r, 1, true);
    raw_drain(&r);
    raw_get(&r, 1, true);
    raw_expect_goaway(&r, VEGA_H2_STREAM_CLOSED);
    raw_fini(&r);
}

/* WINDOW_UPDATE and RST_STREAM on a closed stream: "Endpoints MUST ignore" them. */
VTEST(s5_1_closed_window_update_ignored)
{
    struct raw r;
    srv(&r);
    r.r.on_head = respond;
    raw_get(&r, 1, true);
    raw_drain(&r);
    window(&r, 1, 10);
    rst(&r, 1, VEGA_H2_CANCEL);
    raw_expect_ok(&r);
    raw_fini(&r);
}

/* After we reset a stream, frames in flight on it are ignored (§5.1 closed: "An endpoint MUST
 * ignore frames that it receives on closed streams after it has sent a RST_STREAM frame"),
 * and their DATA still counts for the connection's window. */
VTEST(s5_1_frames_after_our_reset_ignored)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    VCHECK_EQ(vega_h2_submit_rst_stream(r.c, 1, VEGA_H2_CANCEL), 0);
    raw_drain(&r);
    r.parsed = r.out_len; /* our RST_STREAM */
    static uint8_t d[16000];
    for (int i = 0; i < 40; i++)
        raw_frame(&r, DATA, 0, 1, d, sizeof d);
    raw_headers(&r, 1, END_STREAM, (const vega_hpack_field[]){FLD("x-trailer", "1")}, 1);
    raw_expect_ok(&r);
    vega_h2_conn_info ci;
    vega_h2_conn_get_info(r.c, &ci);
    VCHECK(ci.recv_window > 900000); /* given back, announced by a WINDOW_UPDATE */
    r.parsed = 0;
    struct rframe f;
    VCHECK(raw_find(&r, WINDOW, 0, &f));
    raw_fini(&r);
}

/* §5.1.1: "Streams initiated by a client MUST use odd-numbered stream identifiers" ... "An
 * endpoint that receives an unexpected stream identifier MUST respond with a connection error
 * of type PROTOCOL_ERROR." */
VTEST(s5_1_1_even_stream_id)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 2, true);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* §5.1.1: "The identifier of a newly established stream MUST be numerically greater than all
 * streams that the initiating endpoint has opened or reserved." A lower one is a closed
 * stream: STREAM_CLOSED (h2spec accepts it with PROTOCOL_ERROR). */
VTEST(s5_1_1_decreasing_stream_id)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 5, true);
    raw_get(&r, 3, true);
    raw_expect_goaway(&r, VEGA_H2_STREAM_CLOSED);
    raw_fini(&r);
}

/* §5.1.2: "An endpoint that receives a HEADERS frame that causes its advertised concurrent
 * stream limit to be exceeded MUST treat this as a stream error (Section 5.4.2) of type
 * PROTOCOL_ERROR or REFUSED_STREAM." */
VTEST(s5_1_2_concurrent_stream_limit)
{
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.max_concurrent_streams = 2;
    struct raw r;
    raw_init(&r, true, &o);
    raw_get(&r, 1, false);
    raw_get(&r, 3, false);
    raw_expect_ok(&r);
    raw_get(&r, 5, false);
    raw_expect_rst(&r, 5, VEGA_H2_REFUSED_STREAM);
    /* Its DATA in flight is ignored, and a slot freed takes the next stream. */
    raw_frame(&r, DATA, END_STREAM, 5, "x", 1);
    raw_expect_ok(&r);
    rst(&r, 1, VEGA_H2_CANCEL);
    raw_get(&r, 7, false);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "H7 req"));
    raw_fini(&r);
}

/* ---- §5.3.1 stream dependencies ---- */

/* §5.3.1: "A stream cannot depend on itself. An endpoint MUST treat this as a stream error
 * (Section 5.4.2) of type PROTOCOL_ERROR." */
VTEST(s5_3_1_headers_depends_on_itself)
{
    struct raw r;
    srv(&r);
    uint8_t p[512] = {0, 0, 0, 1, 15};
    size_t n = raw_block(&r, get_root, 4, p + 5, sizeof p - 5);
    raw_frame(&r, HEADERS, END_STREAM | END_HEADERS | PRIO, 1, p, n + 5);
    raw_expect_rst(&r, 1, VEGA_H2_PROTOCOL_ERROR);
    VCHECK(!rec_has(&r.r, "H1 req"));
    /* The block was decoded all the same: the next one, indexing into the table, works. */
    raw_get(&r, 3, true);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "H3 req"));
    raw_fini(&r);
}

VTEST(s5_3_1_priority_depends_on_itself)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    uint8_t pr[5] = {0, 0, 0, 1, 15};
    raw_frame(&r, PRIORITY, 0, 1, pr, 5);
    raw_expect_rst(&r, 1, VEGA_H2_PROTOCOL_ERROR);
    /* On an idle stream RST_STREAM may not go: the connection's error. */
    struct raw q;
    srv(&q);
    pr[3] = 9;
    raw_frame(&q, PRIORITY, 0, 9, pr, 5);
    raw_expect_goaway(&q, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&q);
    raw_fini(&r);
}

/* ---- §5.4.1 connection error handling ---- */

/* §5.4.1: "An endpoint that encounters a connection error SHOULD first send a GOAWAY frame
 * (Section 6.8) with the stream identifier of the last stream that it successfully received
 * from its peer." */
VTEST(s5_4_1_goaway_names_last_stream)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    raw_get(&r, 3, false);
    uint8_t ping[8] = {0};
    raw_frame(&r, PING, 0, 1, ping, 8); /* PING on a stream */
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    vega_h2_error e;
    VCHECK(vega_h2_conn_get_error(r.c, &e) && e.last_stream_id == 3);
    VCHECK(rec_has(&r.r, "C1 PROTOCOL_ERROR how4") && rec_has(&r.r, "C3 PROTOCOL_ERROR how4"));
    /* Nothing more is read. */
    VCHECK_EQ(raw_send(&r, "x", 1), VEGA_ERR_CLOSED);
    raw_fini(&r);
}

/* ---- §6.1 DATA ---- */

/* §6.1: "If a DATA frame is received whose Stream Identifier field is 0x00, the recipient MUST
 * respond with a connection error of type PROTOCOL_ERROR." */
VTEST(s6_1_data_stream_zero)
{
    struct raw r;
    srv(&r);
    raw_frame(&r, DATA, 0, 0, "x", 1);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* §6.1: "If a DATA frame is received whose stream is not in the "open" or "half-closed
 * (local)" state, the recipient MUST respond with a stream error (Section 5.4.2) of type
 * STREAM_CLOSED." */
VTEST(s6_1_data_not_open)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, true);
    raw_frame(&r, DATA, 0, 1, "x", 1);
    raw_expect_rst(&r, 1, VEGA_H2_STREAM_CLOSED);
    raw_fini(&r);
}

/* §6.1: "If the length of the padding is the length of the frame payload or greater, the
 * recipient MUST treat this as a connection error of type PROTOCOL_ERROR." */
VTEST(s6_1_data_padding_too_long)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    uint8_t p[6] = {6, 'a', 'b', 0, 0, 0};
    raw_frame(&r, DATA, PADDED, 1, p, 6);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* Padding is stripped, and given back to both windows at once: 40 frames of 16 KiB, mostly
 * padding, on a 256 KiB stream window pass only because it is. */
VTEST(s6_1_data_padding_valid)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    uint8_t p[6] = {0, 'a', 'b', 'c', 'd', 'e'};
    raw_frame(&r, DATA, PADDED, 1, p, 6);
    static uint8_t q[16384];
    q[0] = 255;
    for (int i = 0; i < 40; i++)
        raw_frame(&r, DATA, PADDED, 1, q, sizeof q);
    uint8_t e[6] = {5, 0, 0, 0, 0, 0};
    raw_frame(&r, DATA, PADDED | END_STREAM, 1, e, 6);
    VCHECK_EQ(r.rc, 0);
    VCHECK_EQ(r.r.data_bytes, 5 + 40 * (16384 - 256));
    VCHECK(memcmp(r.r.body, "abcde", 5) == 0 && r.r.ended);
    struct rframe f;
    VCHECK(raw_find(&r, WINDOW, 1, &f));
    r.parsed = 0;
    VCHECK(raw_find(&r, WINDOW, 0, &f));
    raw_expect_ok(&r);
    raw_fini(&r);
}

/* A PADDED DATA frame too short for its Pad Length field (§4.2: "too small to contain
 * mandatory frame data"). */
VTEST(s6_1_data_padded_empty)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    raw_frame(&r, DATA, PADDED, 1, NULL, 0);
    raw_expect_goaway(&r, VEGA_H2_FRAME_SIZE_ERROR);
    raw_fini(&r);
}

/* ---- §6.2 HEADERS ---- */

/* §6.2: "If a HEADERS frame is received whose Stream Identifier field is 0x00, the recipient
 * MUST respond with a connection error of type PROTOCOL_ERROR." */
VTEST(s6_2_headers_stream_zero)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 0, true);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* §6.2: "Padding that exceeds the size remaining for the header block fragment MUST be
 * treated as a PROTOCOL_ERROR." */
VTEST(s6_2_headers_padding_too_long)
{
    struct raw r;
    srv(&r);
    uint8_t p[512];
    size_t n = raw_block(&r, get_root, 4, p + 1, sizeof p - 1);
    p[0] = (uint8_t)(n + 1);
    raw_frame(&r, HEADERS, END_STREAM | END_HEADERS | PADDED, 1, p, n + 1);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* Padding and priority fields together, valid. */
VTEST(s6_2_headers_padded_with_priority)
{
    struct raw r;
    srv(&r);
    uint8_t p[512] = {3, 0, 0, 0, 0, 42};
    size_t n = raw_block(&r, get_root, 4, p + 6, sizeof p - 6);
    memset(p + 6 + n, 0, 3);
    raw_frame(&r, HEADERS, END_STREAM | END_HEADERS | PADDED | PRIO, 1, p, n + 9);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "H1 req GET / END"));
    raw_fini(&r);
}

/* ---- §6.3 PRIORITY ---- */

VTEST(s6_3_priority_stream_zero)
{
    struct raw r;
    srv(&r);
    uint8_t pr[5] = {0, 0, 0, 1, 15};
    raw_frame(&r, PRIORITY, 0, 0, pr, 5);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* §6.3: "A PRIORITY frame with a length other than 5 octets MUST be treated as a stream error
 * (Section 5.4.2) of type FRAME_SIZE_ERROR." */
VTEST(s6_3_priority_bad_length)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    uint8_t pr[6] = {0, 0, 0, 3, 15, 0};
    raw_frame(&r, PRIORITY, 0, 1, pr, 6);
    raw_expect_rst(&r, 1, VEGA_H2_FRAME_SIZE_ERROR);
    raw_fini(&r);
}

/* ---- §6.4 RST_STREAM ---- */

VTEST(s6_4_rst_stream_zero)
{
    struct raw r;
    srv(&r);
    rst(&r, 0, VEGA_H2_CANCEL);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* §6.4: "A RST_STREAM frame with a length other than 4 octets MUST be treated as a connection
 * error (Section 5.4.1) of type FRAME_SIZE_ERROR." */
VTEST(s6_4_rst_stream_bad_length)
{
    struct raw r;
    srv(&r);
    raw_get(&r, 1, false);
    uint8_t p[3] = {0, 0, 8};
    raw_frame(&r, RST, 0, 1, p, 3);
    raw_expect_goaway(&r, VEGA_H2_FRAME_SIZE_ERROR);
    raw_fini(&r);
}

/* ---- §6.5 SETTINGS ---- */

VTEST(s6_5_settings_ack_with_payload)
{
    struct raw r;
    srv(&r);
    uint8_t p[6] = {0, 3, 0, 0, 0, 1};
    raw_frame(&r, SETTINGS, ACK, 0, p, 6);
    raw_expect_goaway(&r, VEGA_H2_FRAME_SIZE_ERROR);
    raw_fini(&r);
}

VTEST(s6_5_settings_on_stream)
{
    struct raw r;
    srv(&r);
    uint8_t p[6] = {0, 3, 0, 0, 0, 1};
    raw_frame(&r, SETTINGS, 0, 1, p, 6);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s6_5_settings_length_not_multiple_of_6)
{
    struct raw r;
    srv(&r);
    uint8_t p[7] = {0, 3, 0, 0, 0, 1, 0};
    raw_frame(&r, SETTINGS, 0, 0, p, 7);
    raw_expect_goaway(&r, VEGA_H2_FRAME_SIZE_ERROR);
    raw_fini(&r);
}

/* §6.5.2: the range of each defined setting. */
VTEST(s6_5_2_enable_push_range)
{
    struct raw r;
    srv(&r);
    setting(&r, 2, 2);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s6_5_2_initial_window_size_range)
{
    struct raw r;
    srv(&r);
    setting(&r, 4, 0x80000000u);
    raw_expect_goaway(&r, VEGA_H2_FLOW_CONTROL_ERROR);
    raw_fini(&r);
}

VTEST(s6_5_2_max_frame_size_range)
{
    struct raw r;
    srv(&r);
    setting(&r, 5, 16383);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
    srv(&r);
    setting(&r, 5, 16777216);
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

VTEST(s6_5_2_extension_settings_ranges)
{
    struct raw r;
    srv(&r);
    setting(&r, 9, 2); /* RFC 9218 §2.1 */
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
    srv(&r);
    setting(&r, 8, 2); /* RFC 8441 §3 */
    raw_expect_goaway(&r, VEGA_H2_PROTOCOL_ERROR);
    raw_fini(&r);
}

/* §6.5.2: "An endpoint that receives a SETTINGS frame with any unknown or unsupported
 * identifier MUST ignore that setting." It is acknowledged like any SETTINGS (§6.5.3). */
VTEST(s6_5_3_unknown_setting_acknowledged)
{
    struct raw r;
    srv(&r);
    setting(&r, 0x4242, 7);
    struct rframe f;
    VCHECK(raw_find(&r, SETTINGS, 0, &f) && f.flags == ACK && f.len == 0);
    raw_expect_ok(&r);
    raw_fini(&r);
}

/* §6.5.3: "The values in the SETTINGS frame MUST be processed in the order they appear":
 * with SETTINGS_INITIAL_WINDOW_SIZE twice, the last one holds. */
VTEST(s6_5_3_settings_in_order)
{
    struct raw r;
    srv(&r);
    uint8_t p[12] = {0, 4, 0, 0, 0, 100, 0, 4, 0, 0, 0, 1};
    raw_frame(&r, SETTINGS, 0, 0, p, 12);
    raw_expect_ok(&r);
    r.r.on_head = respond;
    raw_get(&r, 1, true);
    struct rframe f;
    VCHECK(raw_find(&r, DATA, 1, &f) && f.len == 1);
    raw_fini(&r);
}
