/* SPDX-License-Identifier: MIT */
/* The peer's unidirectional streams (lib/h3/streams.c, lib/h3/control.c; RFC 9114 §6.2, §7.2;
 * RFC 9204 §4.2; RFC 9218 §7.2): table-driven, each case fed whole, byte by byte and cut at
 * every point of every step. Client streams 2, 6, 10 ... are the client's unidirectional ones. */
#include "h3_test.h"

static vega_h3_conn *server(h3t_rec *r)
{
    vega_h3_opts o;
    vega_h3_opts_init(&o);
    o.max_control_frame = 64;
    vega_h3_conn *c;
    VCHECK_EQ(vega_h3_conn_server_new(&c, &h3t_cbs, &o, r), 0);
    return c;
}

static vega_h3_conn *client(h3t_rec *r)
{
    vega_h3_conn *c;
    VCHECK_EQ(vega_h3_conn_client_new(&c, &h3t_cbs, NULL, r), 0);
    return c;
}

/* A control stream: its type byte, then a SETTINGS frame with these (id, value) pairs. */
static h3t_buf *control(h3t_script *s, uint64_t id, bool fin, const uint64_t *kv, size_t n)
{
    h3t_buf *b = h3t_step_add(s, id, fin);
    h3t_varint(b, VEGA__H3_STREAM_CONTROL);
    h3t_buf p = {0};
    for (size_t i = 0; i < n; i++)
        h3t_varint(&p, kv[i]);
    h3t_frame(b, VEGA__H3_FRAME_SETTINGS, p.b, p.n);
    return b;
}

static void varint_frame(h3t_buf *b, uint64_t type, uint64_t v)
{
    h3t_buf p = {0};
    h3t_varint(&p, v);
    h3t_frame(b, type, p.b, p.n);
}

/* ---- SETTINGS (§7.2.4) -------------------------------------------------------------------- */

static void b_settings(h3t_script *s)
{
    static const uint64_t kv[] = {0x01, 100, 0x07, 5, 0x06, 1000, 0x21 + 0x1f * 7, 42, 0x3f, 1};
    control(s, 2, false, kv, 10);
}
static void b_settings_empty(h3t_script *s)
{
    control(s, 2, false, NULL, 0);
}
static void b_settings_bools(h3t_script *s)
{
    static const uint64_t kv[] = {0x08, 1, 0x33, 1};
    control(s, 2, false, kv, 4);
}
static void b_settings_bool_2(h3t_script *s)
{
    static const uint64_t kv[] = {0x08, 2};
    control(s, 2, false, kv, 2);
}
static void b_settings_datagram_2(h3t_script *s)
{
    static const uint64_t kv[] = {0x33, 2};
    control(s, 2, false, kv, 2);
}
static void h2_setting(h3t_script *s, uint64_t id)
{
    uint64_t kv[] = {id, 1};
    control(s, 2, false, kv, 2);
}
static void b_h2_setting_2(h3t_script *s)
{
    h2_setting(s, 2);
}
static void b_h2_setting_3(h3t_script *s)
{
    h2_setting(s, 3);
}
static void b_h2_setting_4(h3t_script *s)
{
    h2_setting(s, 4);
}
static void b_h2_setting_5(h3t_script *s)
{
    h2_setting(s, 5);
}
static void b_dup_known(h3t_script *s)
{
    static const uint64_t kv[] = {0x06, 1, 0x01, 0, 0x06, 2};
    control(s, 2, false, kv, 6);
}
static void b_dup_unknown(h3t_script *s)
{
    static const uint64_t kv[] = {0x40, 1, 0x41, 0, 0x40, 1};
    control(s, 2, false, kv, 6);
}
static void b_settings_truncated(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 2, false);
    h3t_varint(b, 0);
    uint8_t p[] = {0x06, 0x44}; /* id, then a two-byte varint value cut short */
    h3t_frame(b, VEGA__H3_FRAME_SETTINGS, p, sizeof p);
}
static void b_missing_settings(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 2, false);
    h3t_varint(b, 0);
    varint_frame(b, VEGA__H3_FRAME_GOAWAY, 0);
}
static void b_grease_first(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 2, false);
    h3t_varint(b, 0);
    h3t_frame(b, 0x21, "", 0);
}
static void b_second_settings(h3t_script *s)
{
    h3t_buf *b = control(s, 2, false, NULL, 0);
    h3t_frame(b, VEGA__H3_FRAME_SETTINGS, "", 0);
}
static void b_settings_too_large(h3t_script *s)
{
    uint64_t kv[40];
    for (size_t i = 0; i < 40; i++)
        kv[i] = 0x40 + i; /* 40 two-byte varints: 80 bytes > max_control_frame 64 */
    control(s, 2, false, kv, 40);
}

/* ---- other control frames ------------------------------------------------------------------ */

static void after_settings(h3t_script *s, uint64_t type, const void *p, size_t n)
{
    h3t_buf *b = control(s, 2, false, NULL, 0);
    h3t_frame(b, type, p, n);
}
static void b_data_on_control(h3t_script *s)
{
    after_settings(s, VEGA__H3_FRAME_DATA, "x", 1);
}
static void b_headers_on_control(h3t_script *s)
{
    after_settings(s, VEGA__H3_FRAME_HEADERS, "\0\0", 2);
}
static void b_push_promise_on_control(h3t_script *s)
{
    after_settings(s, VEGA__H3_FRAME_PUSH_PROMISE, "\0\0\0", 3);
}
static void b_h2_ping_on_control(h3t_script *s)
{
    after_settings(s, 0x06, "12345678", 8);
}
static void b_h2_window_update_on_control(h3t_script *s)
{
    after_settings(s, 0x08, "1234", 4);
}
static void b_unknown_skipped(h3t_script *s)
{
    h3t_buf *b = control(s, 2, false, NULL, 0);
    static uint8_t big[3000];
    h3t_frame(b, 0x21 + 0x1f * 3, big, sizeof big); /* larger than max_control_frame: skipped */
    h3t_frame(b, 0x1234, "x", 1);
    varint_frame(h3t_step_add(s, 2, false), VEGA__H3_FRAME_GOAWAY, 8);
}
static void b_goaway(h3t_script *s)
{
    h3t_buf *b = control(s, 2, false, NULL, 0);
    varint_frame(b, VEGA__H3_FRAME_GOAWAY, 9);
    varint_frame(b, VEGA__H3_FRAME_GOAWAY, 9);
    varint_frame(b, VEGA__H3_FRAME_GOAWAY, 3);
    varint_frame(b, VEGA__H3_FRAME_GOAWAY, 4);
}
static void b_goaway_extra(h3t_script *s)
{
    after_settings(s, VEGA__H3_FRAME_GOAWAY, "\x01\x02", 2);
}
static void b_goaway_empty(h3t_script *s)
{
    after_settings(s, VEGA__H3_FRAME_GOAWAY, "", 0);
}
static void b_goaway_bad_id(h3t_script *s)
{
    h3t_buf *b = control(s, 3, false, NULL, 0);
    varint_frame(b, VEGA__H3_FRAME_GOAWAY, 5); /* not a client-initiated bidi stream id */
}
static void b_goaway_to_client(h3t_script *s)
{
    h3t_buf *b = control(s, 3, false, NULL, 0);
    varint_frame(b, VEGA__H3_FRAME_GOAWAY, 8);
    varint_frame(b, VEGA__H3_FRAME_GOAWAY, 4);
}
static void b_max_push_id(h3t_script *s)
{
    h3t_buf *b = control(s, 2, false, NULL, 0);
    varint_frame(b, VEGA__H3_FRAME_MAX_PUSH_ID, 5);
    varint_frame(b, VEGA__H3_FRAME_MAX_PUSH_ID, 5);
    varint_frame(b, VEGA__H3_FRAME_MAX_PUSH_ID, 4);
}
static void b_max_push_id_to_client(h3t_script *s)
{
    h3t_buf *b = control(s, 3, false, NULL, 0);
    varint_frame(b, VEGA__H3_FRAME_MAX_PUSH_ID, 5);
}
static void b_cancel_push(h3t_script *s)
{
    h3t_buf *b = control(s, 2, false, NULL, 0);
    varint_frame(b, VEGA__H3_FRAME_CANCEL_PUSH, 0);
}
static void b_cancel_push_to_client(h3t_script *s)
{
    h3t_buf *b = control(s, 3, false, NULL, 0);
    varint_frame(b, VEGA__H3_FRAME_CANCEL_PUSH, 0);
}
static void b_priority_update(h3t_script *s)
{
    h3t_buf *b = control(s, 2, false, NULL, 0);
    h3t_frame(b, VEGA__H3_FRAME_PRIORITY_UPDATE, "\x04u=1, i", 7);
    h3t_frame(b, VEGA__H3_FRAME_PRIORITY_UPDATE, "\x08", 1);         /* empty value */
    h3t_frame(b, VEGA__H3_FRAME_PRIORITY_UPDATE, "\x0c(garbage", 9); /* unparsable */
    h3t_frame(b, VEGA__H3_FRAME_PRIORITY_UPDATE, "\x01u=0", 4);      /* not a request */
}
static void b_priority_update_push(h3t_script *s)
{
    after_settings(s, VEGA__H3_FRAME_PRIORITY_PUSH, "\x00u=1", 4);
}
static void b_priority_update_to_client(h3t_script *s)
{
    h3t_buf *b = control(s, 3, false, NULL, 0);
    h3t_frame(b, VEGA__H3_FRAME_PRIORITY_UPDATE, "\x00u=1", 4);
}
static void b_control_fin(h3t_script *s)
{
    control(s, 2, true, NULL, 0);
}

/* ---- stream types (§6.2) ------------------------------------------------------------------- */

static void b_second_control(h3t_script *s)
{
    control(s, 2, false, NULL, 0);
    h3t_varint(h3t_step_add(s, 6, false), VEGA__H3_STREAM_CONTROL);
}
static void b_second_qpack_encoder(h3t_script *s)
{
    h3t_varint(h3t_step_add(s, 6, false), VEGA__H3_STREAM_QENC);
    h3t_varint(h3t_step_add(s, 10, false), VEGA__H3_STREAM_QENC);
}
static void b_second_qpack_decoder(h3t_script *s)
{
    h3t_varint(h3t_step_add(s, 6, false), VEGA__H3_STREAM_QDEC);
    h3t_varint(h3t_step_add(s, 10, false), VEGA__H3_STREAM_QDEC);
}
static void b_qpack_encoder_fin(h3t_script *s)
{
    h3t_varint(h3t_step_add(s, 6, true), VEGA__H3_STREAM_QENC);
}
static void b_qpack_decoder_fin(h3t_script *s)
{
    h3t_varint(h3t_step_add(s, 6, true), VEGA__H3_STREAM_QDEC);
}
static void b_push_to_server(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 6, false);
    h3t_varint(b, VEGA__H3_STREAM_PUSH);
    h3t_varint(b, 0);
}
static void b_push_to_client(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 7, false);
    h3t_varint(b, VEGA__H3_STREAM_PUSH);
    h3t_varint(b, 0);
}
static void b_unknown_types(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 6, false);
    h3t_varint(b, 0x21 + 0x1f * 11); /* reserved */
    h3t_put(b, "anything at all", 15);
    h3t_put(h3t_step_add(s, 6, true), "more", 4);
    b = h3t_step_add(s, 10, true);
    h3t_varint(b, 0x54); /* unknown */
    h3t_put(b, "x", 1);
    h3t_put(h3t_step_add(s, 14, true), "\x40", 1); /* closed inside its type: tolerated */
    control(s, 2, false, NULL, 0);
}
static void b_bad_encoder_stream(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 6, false);
    h3t_varint(b, VEGA__H3_STREAM_QENC);
    uint8_t cap[] = {0x3f, 0xe1, 0x3f}; /* Set Dynamic Table Capacity 8192 > 4096 */
    h3t_put(b, cap, sizeof cap);
}
static void b_bad_decoder_stream(h3t_script *s)
{
    h3t_buf *b = h3t_step_add(s, 6, false);
    h3t_varint(b, VEGA__H3_STREAM_QDEC);
    h3t_put(b, "\x84", 1); /* Section Acknowledgment for a stream with nothing to acknowledge */
}
static void b_server_bidi_to_client(h3t_script *s)
{
    h3t_put(h3t_step_add(s, 1, false), "\x01\x00", 2);
}
static void b_late_response_data(h3t_script *s)
{
    h3t_put(h3t_step_add(s, 8, true), "\x00\x01x", 3); /* a request of ours that is over */
}

typedef void (*build_fn)(h3t_script *s);

static const struct {
    const char *name;
    h3t_setup_fn setup;
    build_fn build;
    const char *want;
} cases[] = {
    /* §7.2.4, RFC 9204 §5; a reserved setting ignored (§7.2.4.1). */
    {"settings", server, b_settings, "S mfs=1000 qcap=100 qblk=5\nR ok\n"},
    {"settings_empty", server, b_settings_empty, "S qcap=0 qblk=0\nR ok\n"},
    /* RFC 9220 §3, RFC 9297 §2.1.1: booleans, and anything above 1 is H3_SETTINGS_ERROR. */
    {"settings_booleans", server, b_settings_bools, "S qcap=0 qblk=0 cp dg\nR ok\n"},
    {"settings_connect_protocol_2", server, b_settings_bool_2,
     "R VEGA_ERR_PROTO H3_SETTINGS_ERROR\n"},
    {"settings_datagram_2", server, b_settings_datagram_2, "R VEGA_ERR_PROTO H3_SETTINGS_ERROR\n"},
    /* §7.2.4.1: HTTP/2 setting identifiers -> H3_SETTINGS_ERROR. */
    {"h2_setting_enable_push", server, b_h2_setting_2, "R VEGA_ERR_PROTO H3_SETTINGS_ERROR\n"},
    {"h2_setting_max_concurrent", server, b_h2_setting_3, "R VEGA_ERR_PROTO H3_SETTINGS_ERROR\n"},
    {"h2_setting_window", server, b_h2_setting_4, "R VEGA_ERR_PROTO H3_SETTINGS_ERROR\n"},
    {"h2_setting_frame_size", server, b_h2_setting_5, "R VEGA_ERR_PROTO H3_SETTINGS_ERROR\n"},
    /* §7.2.4: duplicate identifiers -> H3_SETTINGS_ERROR (known or not). */
    {"settings_duplicate", server, b_dup_known, "R VEGA_ERR_PROTO H3_SETTINGS_ERROR\n"},
    {"settings_duplicate_unknown", server, b_dup_unknown, "R VEGA_ERR_PROTO H3_SETTINGS_ERROR\n"},
    /* §7.1: a payload that ends inside its fields -> H3_FRAME_ERROR. */
    {"settings_truncated", server, b_settings_truncated, "R VEGA_ERR_PROTO H3_FRAME_ERROR\n"},
    /* §6.2.1: the first frame must be SETTINGS, even before a reserved one. */
    {"missing_settings", server, b_missing_settings, "R VEGA_ERR_PROTO H3_MISSING_SETTINGS\n"},
    {"reserved_before_settings", server, b_grease_first, "R VEGA_ERR_PROTO H3_MISSING_SETTINGS\n"},
    {"second_settings", server, b_second_settings,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"settings_over_limit", server, b_settings_too_large, "R VEGA_ERR_PROTO H3_EXCESSIVE_LOAD\n"},
    /* §7.2.1, §7.2.2, §7.2.5, §7.2.8: frames of request streams and HTTP/2 on the control
     * stream -> H3_FRAME_UNEXPECTED. */
    {"data_on_control", server, b_data_on_control,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"headers_on_control", server, b_headers_on_control,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"push_promise_on_control", server, b_push_promise_on_control,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"h2_ping_on_control", server, b_h2_ping_on_control,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    {"h2_window_update_on_control", server, b_h2_window_update_on_control,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    /* §7.2.8, §9: unknown and reserved frames skipped, however large (not buffered). */
    {"unknown_frames_skipped", server, b_unknown_skipped, "S qcap=0 qblk=0\nG8\nR ok\n"},
    /* §5.2: GOAWAY ids never increase (H3_ID_ERROR); §7.1 exactly one varint. */
    {"goaway", server, b_goaway, "S qcap=0 qblk=0\nG9\nG9\nG3\nR VEGA_ERR_PROTO H3_ID_ERROR\n"},
    {"goaway_extra_bytes", server, b_goaway_extra,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_FRAME_ERROR\n"},
    {"goaway_empty", server, b_goaway_empty, "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_FRAME_ERROR\n"},
    /* §7.2.6: from a server, a client-initiated bidirectional stream id. */
    {"goaway_bad_stream_id", client, b_goaway_bad_id,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_ID_ERROR\n"},
    {"goaway_to_client", client, b_goaway_to_client, "S qcap=0 qblk=0\nG8\nG4\nR ok\n"},
    /* §7.2.7: MAX_PUSH_ID never decreases; a client never receives one. */
    {"max_push_id", server, b_max_push_id, "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_ID_ERROR\n"},
    {"max_push_id_to_client", client, b_max_push_id_to_client,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    /* §7.2.3: no push was ever allowed or promised -> H3_ID_ERROR. */
    {"cancel_push", server, b_cancel_push, "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_ID_ERROR\n"},
    {"cancel_push_to_client", client, b_cancel_push_to_client,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_ID_ERROR\n"},
    /* RFC 9218 §7.2. */
    {"priority_update", server, b_priority_update,
     "S qcap=0 qblk=0\nP4 u=1i\nP8 u=3\nP12 u=3\nR VEGA_ERR_PROTO H3_ID_ERROR\n"},
    {"priority_update_push", server, b_priority_update_push,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_ID_ERROR\n"},
    {"priority_update_to_client", client, b_priority_update_to_client,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_FRAME_UNEXPECTED\n"},
    /* §6.2.1: "If either control stream is closed at any point" -> H3_CLOSED_CRITICAL_STREAM. */
    {"control_closed", server, b_control_fin,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_CLOSED_CRITICAL_STREAM\n"},
    /* §6.2.1, RFC 9204 §4.2: one of each critical stream. */
    {"second_control", server, b_second_control,
     "S qcap=0 qblk=0\nR VEGA_ERR_PROTO H3_STREAM_CREATION_ERROR\n"},
    {"second_qpack_encoder", server, b_second_qpack_encoder,
     "R VEGA_ERR_PROTO H3_STREAM_CREATION_ERROR\n"},
    {"second_qpack_decoder", server, b_second_qpack_decoder,
     "R VEGA_ERR_PROTO H3_STREAM_CREATION_ERROR\n"},
    {"qpack_encoder_closed", server, b_qpack_encoder_fin,
     "R VEGA_ERR_PROTO H3_CLOSED_CRITICAL_STREAM\n"},
    {"qpack_decoder_closed", server, b_qpack_decoder_fin,
     "R VEGA_ERR_PROTO H3_CLOSED_CRITICAL_STREAM\n"},
    /* §6.2.2 and §4.6: push streams. */
    {"push_to_server", server, b_push_to_server, "R VEGA_ERR_PROTO H3_STREAM_CREATION_ERROR\n"},
    {"push_to_client", client, b_push_to_client, "R VEGA_ERR_PROTO H3_ID_ERROR\n"},
    /* §6.2, §6.2.3: unknown and reserved types are ignored, with STOP_SENDING asked. */
    {"unknown_stream_types", server, b_unknown_types,
     "T6 H3_STREAM_CREATION_ERROR\nT10 H3_STREAM_CREATION_ERROR\nS qcap=0 qblk=0\nR ok\n"},
    /* RFC 9204 §4.3.1 and §4.4.1 through HTTP/3. */
    {"bad_qpack_encoder_stream", server, b_bad_encoder_stream,
     "R VEGA_ERR_PROTO QPACK_ENCODER_STREAM_ERROR\n"},
    {"bad_qpack_decoder_stream", server, b_bad_decoder_stream,
     "R VEGA_ERR_PROTO QPACK_DECODER_STREAM_ERROR\n"},
    /* §6.1: "Clients MUST treat receipt of a server-initiated bidirectional stream as a
     * connection error of type H3_STREAM_CREATION_ERROR". */
    {"server_bidi_to_client", client, b_server_bidi_to_client,
     "R VEGA_ERR_PROTO H3_STREAM_CREATION_ERROR\n"},
    {"late_data_of_finished_request", client, b_late_response_data, "R ok\n"},
};

VTEST(table)
{
    static h3t_script s;
    for (size_t i = 0; i < VEGA__ARRAY_LEN(cases); i++) {
        memset(&s, 0, sizeof s);
        cases[i].build(&s);
        h3t_script_done(&s);
        h3t_check_script(cases[i].name, cases[i].setup, &s, cases[i].want);
    }
}

/* §6.2.1, RFC 9204 §4.2: closing (reset, STOP_SENDING) a critical stream, ours or the peer's. */
VTEST(critical_streams_never_close)
{
    h3t_rec r = {0};
    vega_h3_conn *c = server(&r);
    VCHECK_EQ(vega_h3_conn_bind_streams(c, 3, 7, 11), 0);
    VCHECK_EQ(vega_h3_conn_close_stream(c, 7), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_h3_conn_get_error(c, NULL), VEGA_H3_CLOSED_CRITICAL_STREAM);
    vega_h3_conn_free(c);

    memset(&r, 0, sizeof r);
    c = server(&r);
    uint8_t t = VEGA__H3_STREAM_QDEC;
    VCHECK_EQ(vega_h3_conn_read_stream(c, 6, &t, 1, false), 1);
    VCHECK_EQ(vega_h3_conn_close_stream(c, 6), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_h3_conn_get_error(c, NULL), VEGA_H3_CLOSED_CRITICAL_STREAM);
    /* Sticky: every later call says so. */
    VCHECK_EQ(vega_h3_conn_read_stream(c, 0, &t, 1, false), VEGA_ERR_PROTO);
    vega_h3_conn_free(c);

    /* A unidirectional stream reset before its type: tolerated (§6.2). */
    memset(&r, 0, sizeof r);
    c = server(&r);
    VCHECK_EQ(vega_h3_conn_read_stream(c, 6, (const uint8_t *)"\x40", 1, false), 1);
    VCHECK_EQ(vega_h3_conn_close_stream(c, 6), 0);
    vega_h3_conn_free(c);
}

/* Streams we never receive on are the caller's mistake, not the peer's. */
VTEST(our_streams_refused_as_input)
{
    h3t_rec r = {0};
    vega_h3_conn *c = server(&r);
    VCHECK_EQ(vega_h3_conn_read_stream(c, 3, (const uint8_t *)"x", 1, false), -EINVAL);
    VCHECK_EQ(vega_h3_conn_read_stream(c, 1, (const uint8_t *)"x", 1, false), -EINVAL);
    VCHECK_EQ(vega_h3_conn_read_stream(c, 0, NULL, 1, false), -EINVAL);
    VCHECK_EQ(vega_h3_conn_read_stream(c, 1ull << 62, (const uint8_t *)"x", 1, false), -EINVAL);
    VCHECK_EQ(vega_h3_conn_get_error(c, NULL), 0);
    vega_h3_conn_free(c);
}
