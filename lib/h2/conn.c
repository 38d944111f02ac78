/* SPDX-License-Identifier: MIT */
/* The HTTP/2 connection object: options, creation with the connection preface (RFC 9113
 * §3.4), connection errors and GOAWAY (§5.4.1, §6.8), timers (§6.5.3's SETTINGS timeout, the
 * graceful shutdown's PING wait), and the accessors. */
#include <string.h>

#include "h2_int.h"

static const uint8_t client_magic[24] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

void vega_h2_opts_init_versioned(vega_h2_opts *o, int opts_version)
{
    if (opts_version != VEGA_H2_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_h2_opts_init: options of another libvega (version %d)", opts_version);
    memset(o, 0, sizeof *o);
    o->header_table_size = VEGA_HPACK_DEFAULT_TABLE_SIZE;
    o->max_concurrent_streams = 100;
    o->initial_window_size = 256u << 10;
    o->max_frame_size = H2_MIN_FRAME_SIZE;
    o->max_header_list_size = 65536;
    o->conn_window = 1u << 20;
    o->conn_window_max = 16u << 20;
    o->stream_window_max = 8u << 20;
    o->encoder_table_size = VEGA_HPACK_DEFAULT_TABLE_SIZE;
    o->max_local_streams = 256;
    o->max_fields = 256;
    o->max_header_block_size = 65536 + 4096;
    o->max_continuations = 32;
    o->max_queued_control = 1000;
    o->reset_burst = o->glitch_burst = 1000;
    o->reset_rate = o->glitch_rate = 33;
    o->settings_timeout_ms = 10000;
    o->shutdown_timeout_ms = 1000;
}

#define DFLT(field)                                                                                \
    do {                                                                                           \
        if (o->field)                                                                              \
            v->field = o->field;                                                                   \
    } while (0)

/* The caller's options over the defaults, checked. */
static int resolve(vega_h2_opts *v, const vega_h2_opts *o)
{
    vega_h2_opts_init(v);
    if (o) {
        DFLT(header_table_size);
        DFLT(max_concurrent_streams);
        DFLT(initial_window_size);
        DFLT(max_frame_size);
        DFLT(max_header_list_size);
        DFLT(conn_window);
        DFLT(conn_window_max);
        DFLT(stream_window_max);
        DFLT(encoder_table_size);
        DFLT(max_local_streams);
        DFLT(max_fields);
        DFLT(max_continuations);
        DFLT(max_queued_control);
        DFLT(reset_burst);
        DFLT(reset_rate);
        DFLT(glitch_burst);
        DFLT(glitch_rate);
        DFLT(settings_timeout_ms);
        DFLT(shutdown_timeout_ms);
        v->enable_connect_protocol = o->enable_connect_protocol;
        v->huffman = o->huffman;
        v->mem = o->mem;
        v->max_header_block_size =
            o->max_header_block_size ? o->max_header_block_size
                                     : (uint32_t)VEGA__MIN((uint64_t)v->max_header_list_size + 4096,
                                                           (uint64_t)UINT32_MAX);
    }
    if (v->header_table_size == VEGA_HPACK_TABLE_OFF)
        v->header_table_size = 0;
    const vega_mem *m = v->mem;
    if (v->initial_window_size > H2_MAX_WINDOW || v->conn_window_max > H2_MAX_WINDOW ||
        v->stream_window_max > H2_MAX_WINDOW || v->conn_window > H2_MAX_WINDOW ||
        v->max_frame_size < H2_MIN_FRAME_SIZE || v->max_frame_size > H2_MAX_FRAME_SIZE ||
        v->header_table_size > UINT32_MAX || (unsigned)v->huffman > VEGA_HPACK_HUFFMAN_ALWAYS ||
        (m && (!m->malloc || !m->calloc || !m->realloc || !m->free)))
        return -EINVAL;
    return 0;
}

static int conn_new(vega_h2_conn **out, const vega_h2_callbacks *cb, const vega_h2_opts *o,
                    void *ud, int opts_version, bool server)
{
    if (opts_version != VEGA_H2_OPTS_VERSION || !out || !cb)
        return -EINVAL;
    vega_h2_opts v;
    int rc = resolve(&v, o);
    if (rc < 0)
        return rc;
    vega_h2_conn *c = vega__mem_calloc(v.mem, 1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->o = v;
    c->cb = cb;
    c->ud = ud;
    c->server = server;
    c->next_id = 1;
    c->rd.st = server ? H2_R_PREFACE : H2_R_HEADER;
    c->rd.first_frame = true;
    c->settings_sent_at = c->settings_deadline = c->shutdown_deadline = VEGA_TSTAMP_MAX;
    c->stalled_since = VEGA_TSTAMP_MAX;
    c->goaway_last_recv = H2_MAX_STREAM_ID;
    vega__h2_settings_defaults(&c->peer);
    vega__h2_settings_defaults(&c->local);
    c->local.header_table_size = (uint32_t)v.header_table_size;
    c->local.enable_push = 0;
    c->local.max_concurrent_streams = v.max_concurrent_streams;
    c->local.initial_window_size = v.initial_window_size;
    c->local.max_frame_size = v.max_frame_size;
    c->local.max_header_list_size = v.max_header_list_size;
    c->local.enable_connect_protocol = server && v.enable_connect_protocol;
    c->local.no_rfc7540_priorities = 1;
    c->send_window = H2_DEFAULT_WINDOW;
    vega__h2_rwin_init(&c->rw, H2_DEFAULT_WINDOW, VEGA__MAX(v.conn_window, H2_DEFAULT_WINDOW),
                       v.conn_window_max);
    vega__h2_bucket_init(&c->resets, v.reset_burst, v.reset_rate);
    vega__h2_bucket_init(&c->glitches, v.glitch_burst, v.glitch_rate);
    /* Our decoder takes the larger of HTTP/2's initial 4096 and what we advertise until the
     * peer acknowledges (it may use either meanwhile); the limit set at the ACK then binds. */
    vega_hpack_decoder_opts dopts = {
        .max_table_size = VEGA__MAX(v.header_table_size, VEGA_HPACK_DEFAULT_TABLE_SIZE),
        .max_list_size = v.max_header_list_size,
        .max_fields = v.max_fields,
        .max_string_len = VEGA__MIN(v.max_header_list_size, (uint32_t)(16u << 20)),
        .mem = v.mem};
    vega_hpack_encoder_opts eopts = {
        .max_table_size = v.encoder_table_size, .huffman = v.huffman, .mem = v.mem};
    rc = vega_hpack_decoder_new(&c->dec, &dopts);
    if (rc == 0)
        rc = vega_hpack_encoder_new(&c->enc, &eopts);
    /* The preface (§3.4): the client's magic, then each side's SETTINGS; our connection
     * window goes up from 65535 at once (§6.9.2: only WINDOW_UPDATE can change it). */
    if (rc == 0 && !server) {
        uint8_t *p = vega__h2_q_push(&c->q, v.mem, sizeof client_magic);
        rc = p ? 0 : -ENOMEM;
        if (p)
            memcpy(p, client_magic, sizeof client_magic);
    }
    if (rc == 0)
        rc = vega__h2_put_settings(c);
    if (rc == 0 && c->rw.window > H2_DEFAULT_WINDOW) {
        rc = vega__h2_put_window_update(c, 0, c->rw.window - H2_DEFAULT_WINDOW);
        c->rw.limit = c->rw.window;
    }
    if (rc < 0) {
        vega_h2_conn_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int vega_h2_conn_client_new_versioned(vega_h2_conn **out, const vega_h2_callbacks *cb,
                                      const vega_h2_opts *o, void *user_data, int opts_version)
{
    return conn_new(out, cb, o, user_data, opts_version, false);
}

int vega_h2_conn_server_new_versioned(vega_h2_conn **out, const vega_h2_callbacks *cb,
                                      const vega_h2_opts *o, void *user_data, int opts_version)
{
    return conn_new(out, cb, o, user_data, opts_version, true);
}

void vega_h2_conn_shrink(vega_h2_conn *c)
{
    if (!c)
        return;
    const vega_mem *m = c->o.mem;
    /* a block that is being reassembled keeps its bytes; an empty buffer grows from nothing
     * again (vega__h2_headers_fragment reallocates from NULL) */
    if (c->hb.len == 0) {
        vega__mem_free(m, c->hb.buf);
        c->hb.buf = NULL;
        c->hb.cap = 0;
    }
    vega__h2_fs_free(c); /* used only inside a read */
    /* the queue's counters stay: marks compare with them */
    if (!vega__h2_q_pending(&c->q) && !c->q.mlen) {
        vega__mem_free(m, c->q.p);
        vega__mem_free(m, c->q.marks);
        c->q.p = NULL;
        c->q.marks = NULL;
        c->q.off = c->q.len = c->q.cap = 0;
        c->q.mfirst = c->q.mcap = 0;
    }
}

void vega_h2_conn_free(vega_h2_conn *c)
{
    if (!c)
        return;
    const vega_mem *m = c->o.mem;
    for (size_t i = 0; i < c->nstreams; i++) {
        vega__h2_hblocks_free(c, c->streams[i]);
        vega__mem_free(m, c->streams[i]);
    }
    vega__mem_free(m, c->streams);
    vega__h2_q_free(&c->q, m);
    vega__mem_free(m, c->hb.buf);
    vega__h2_fs_free(c);
    vega_hpack_decoder_free(c->dec);
    vega_hpack_encoder_free(c->enc);
    vega__mem_free(m, c);
}

/* The GOAWAY that ends a dead connection lives in a slot of its own, so that it goes out
 * even when memory ran out. */
static void fatal_goaway(vega_h2_conn *c, uint32_t code)
{
    vega__h2_frame_put(c->fatal_goaway, 8, H2_GOAWAY, 0, 0);
    h2_put32(c->fatal_goaway + H2_HDR_LEN, (uint32_t)c->err.last_stream_id);
    h2_put32(c->fatal_goaway + H2_HDR_LEN + 4, code);
    c->fatal_goaway_len = sizeof c->fatal_goaway;
    c->fatal_goaway_off = 0;
}

static int end_conn(vega_h2_conn *c, uint32_t code, const char *reason, int rc, bool goaway)
{
    if (c->dead_rc)
        return c->dead_rc;
    c->dead_rc = rc;
    c->rd.st = H2_R_DEAD;
    if (!c->has_err || c->err.remote) {
        c->has_err = true;
        c->err = (vega_h2_error){.code = code,
                                 .remote = false,
                                 .last_stream_id = c->server ? (uint32_t)c->last_peer_id : 0,
                                 .reason = reason};
    }
    if (goaway) {
        fatal_goaway(c, code);
        c->goaway_sent = true;
    }
    /* Every stream ends with the connection; callbacks that fail change nothing now. */
    (void)vega__h2_streams_close_all(c, code, VEGA_H2_CLOSE_CONNECTION);
    return rc;
}

int vega__h2_conn_error(vega_h2_conn *c, uint32_t code, const char *reason)
{
    return end_conn(c, code, reason, VEGA_ERR_PROTO, true);
}

int vega__h2_conn_fail(vega_h2_conn *c, int rc)
{
    if (rc == VEGA_ERR_PROTO) /* already handled by conn_error */
        return c->dead_rc ? c->dead_rc : rc;
    return end_conn(c, VEGA_H2_INTERNAL_ERROR,
                    rc == -ENOMEM ? "out of memory" : "a callback failed", rc, true);
}

/* §3.4: "The GOAWAY frame MAY be omitted in this case, since an invalid preface indicates
 * that the peer is not using HTTP/2." */
int vega__h2_preface_error(vega_h2_conn *c)
{
    return end_conn(c, VEGA_H2_PROTOCOL_ERROR, "invalid connection preface", VEGA_ERR_PROTO, false);
}

int vega__h2_queue_goaway(vega_h2_conn *c, int32_t last_id, uint32_t code, const uint8_t *debug,
                          size_t len)
{
    len = VEGA__MIN(len, (size_t)H2_GOAWAY_DEBUG);
    uint8_t *p = vega__h2_q_push(&c->q, c->o.mem, H2_HDR_LEN + 8 + len);
    if (!p)
        return -ENOMEM;
    vega__h2_frame_put(p, (uint32_t)(8 + len), H2_GOAWAY, 0, 0);
    h2_put32(p + H2_HDR_LEN, (uint32_t)last_id);
    h2_put32(p + H2_HDR_LEN + 4, code);
    if (len)
        memcpy(p + H2_HDR_LEN + 8, debug, len);
    c->goaway_sent = true;
    c->goaway_last_sent = last_id;
    return 0;
}

/* ---- timers ---- */

vega_tstamp vega_h2_conn_get_expiry(const vega_h2_conn *c)
{
    if (!c || c->dead_rc)
        return VEGA_TSTAMP_MAX;
    return VEGA__MIN(c->settings_deadline, c->shutdown_deadline);
}

/* The graceful shutdown's second step: the final GOAWAY with the last stream we took. */
int vega__h2_shutdown_final(vega_h2_conn *c)
{
    if (c->shutdown != 1)
        return 0;
    c->shutdown = 2;
    c->shutdown_deadline = VEGA_TSTAMP_MAX;
    return vega__h2_queue_goaway(c, c->last_peer_id, VEGA_H2_NO_ERROR, NULL, 0);
}

int vega_h2_conn_handle_expiry(vega_h2_conn *c, vega_tstamp now)
{
    if (!c)
        return -EINVAL;
    if (c->dead_rc)
        return VEGA_ERR_CLOSED;
    c->now = now;
    /* §6.5.3: "If the sender of a SETTINGS frame does not receive an acknowledgment within a
     * reasonable amount of time, it MAY issue a connection error of type SETTINGS_TIMEOUT." */
    if (now >= c->settings_deadline)
        return vega__h2_conn_error(c, VEGA_H2_SETTINGS_TIMEOUT, "no SETTINGS ACK in time");
    if (now >= c->shutdown_deadline) {
        int rc = vega__h2_shutdown_final(c);
        if (rc < 0)
            return vega__h2_conn_fail(c, rc);
    }
    return 0;
}

/* ---- accessors ---- */

bool vega_h2_conn_want_read(const vega_h2_conn *c)
{
    if (!c || c->dead_rc)
        return false;
    return !((c->goaway_sent && c->shutdown != 1) || c->goaway_received) || c->nstreams > 0;
}

bool vega_h2_conn_get_error(const vega_h2_conn *c, vega_h2_error *e)
{
    if (!c || !c->has_err)
        return false;
    *e = c->err;
    return true;
}

/* Each vega_h2_conn_info layout's size (API rules: ABI): index = version. */
static const size_t conn_info_layout[VEGA_H2_CONN_INFO_VERSION + 1] = {
    [1] = sizeof(vega_h2_conn_info),
};

static void conn_info(const vega_h2_conn *c, vega_h2_conn_info *info)
{
    memset(info, 0, sizeof *info);
    info->local = c->local;
    info->peer = c->peer;
    info->local_settings_acked = c->local_acked;
    info->goaway_sent = c->goaway_sent;
    info->goaway_received = c->goaway_received;
    info->streams_open = (uint32_t)c->nstreams;
    info->send_window = c->send_window;
    info->recv_window = c->rw.limit - (int64_t)c->rw.received;
    info->recv_window_target = c->rw.window;
    info->rtt_ns = c->srtt;
    info->send_stalled_since = c->stalled_since;
    info->bytes_in = c->bytes_in;
    info->bytes_out = c->bytes_out;
}

int vega_h2_conn_get_info_versioned(const vega_h2_conn *c, vega_h2_conn_info *info,
                                    int info_version)
{
    if (!c || !info || info_version < 1 || info_version > VEGA_H2_CONN_INFO_VERSION)
        return -EINVAL;
    vega_h2_conn_info all;
    conn_info(c, &all);
    memcpy(info, &all, conn_info_layout[info_version]);
    return 0;
}

/* Each vega_h2_stream_info layout's size (API rules: ABI): index = version. */
static const size_t stream_info_layout[VEGA_H2_STREAM_INFO_VERSION + 1] = {
    [1] = sizeof(vega_h2_stream_info),
};

int vega_h2_stream_get_info_versioned(const vega_h2_conn *c, int32_t stream_id,
                                      vega_h2_stream_info *info, int info_version)
{
    if (!c || !info || info_version < 1 || info_version > VEGA_H2_STREAM_INFO_VERSION)
        return -EINVAL;
    struct vega_h2_stream *s = vega__h2_stream_find(c, stream_id);
    if (!s)
        return VEGA_ERR_H2_STREAM_CLOSED;
    vega_h2_stream_info all = {
        .state = s->state,
        .send_window = s->send_window,
        .recv_window = s->rw.limit - (int64_t)s->rw.received,
        .unconsumed = s->unconsumed,
        .pending = s->span_active ? s->span_len - s->span_off : 0,
        .send_stalled_since = s->stalled_since,
    };
    memcpy(info, &all, stream_info_layout[info_version]);
    return 0;
}

int vega_h2_stream_set_user_data(vega_h2_conn *c, int32_t stream_id, void *user_data)
{
    struct vega_h2_stream *s = c ? vega__h2_stream_find(c, stream_id) : NULL;
    if (!s)
        return VEGA_ERR_H2_STREAM_CLOSED;
    s->user_data = user_data;
    return 0;
}

void *vega_h2_stream_get_user_data(const vega_h2_conn *c, int32_t stream_id)
{
    struct vega_h2_stream *s = c ? vega__h2_stream_find(c, stream_id) : NULL;
    return s ? s->user_data : NULL;
}
