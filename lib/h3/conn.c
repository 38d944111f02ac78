/* SPDX-License-Identifier: MIT */
/* The HTTP/3 connection's life (RFC 9114 §3, §6.2): options and limits, creation with its QPACK
 * encoder and decoder, our three unidirectional streams and what goes out on them (stream types,
 * SETTINGS, GOAWAY §5.2, PRIORITY_UPDATE RFC 9218 §7.2), errors, the peer's settings. */
#include <string.h>

#include "h3_core_int.h"

void vega_h3_opts_init_versioned(vega_h3_opts *o, int opts_version)
{
    if (opts_version != VEGA_H3_OPTS_VERSION)
        VEGA_PANIC("vega_h3_opts_init: options of another libvega (version %d)", opts_version);
    memset(o, 0, sizeof *o);
    o->max_field_section_size = 65536;
    o->max_fields = 256;
    o->qpack_max_table_capacity = 4096;
    o->qpack_blocked_streams = 16;
    o->qpack_encoder_max_table_capacity = 4096;
    o->qpack_encoder_blocked_streams = 16;
    o->max_control_frame = 16384;
}

int vega__h3_fail(vega_h3_conn *c, uint64_t code, const char *reason)
{
    if (!c->failed) {
        c->failed = VEGA_ERR_PROTO;
        c->err = code;
        c->reason = reason;
    }
    return VEGA_ERR_PROTO;
}

int vega__h3_cb(vega_h3_conn *c, int rc)
{
    if (rc == 0)
        return 0;
    if (!c->failed)
        c->failed = VEGA_ERR_CALLBACK;
    return VEGA_ERR_CALLBACK;
}

/* The list has room for every stream the decoder may keep blocked (each is reported once and
 * the list is emptied after every encoder-stream input), so this never fails. */
static int on_unblocked(void *ud, uint64_t stream_id)
{
    vega_h3_conn *c = ud;
    if (VEGA_NEVER(c->nunblocked >= c->unblocked_cap))
        return -1;
    c->unblocked[c->nunblocked++] = stream_id;
    return 0;
}

static const vega_qpack_decoder_callbacks qpack_cbs = {on_unblocked};

static int make_qpack(vega_h3_conn *c, const vega_h3_opts *o)
{
    vega_qpack_decoder_opts d;
    vega_qpack_decoder_opts_init(&d);
    d.max_table_capacity = o->qpack_max_table_capacity;
    d.max_blocked_streams = o->qpack_blocked_streams;
    d.max_field_section_size = c->max_section;
    d.max_fields = c->max_fields;
    d.mem = c->mem;
    int rc = vega_qpack_decoder_new(&c->qdec, &qpack_cbs, &d, c);
    if (rc < 0)
        return rc;
    uint64_t blocked = o->qpack_blocked_streams == 0              ? 16
                       : o->qpack_blocked_streams == VEGA_H3_ZERO ? 0
                                                                  : o->qpack_blocked_streams;
    if (blocked) {
        c->unblocked = vega__mem_malloc(c->mem, (size_t)blocked * sizeof *c->unblocked);
        if (!c->unblocked)
            return -ENOMEM;
        c->unblocked_cap = (size_t)blocked;
    }
    vega_qpack_encoder_opts e;
    vega_qpack_encoder_opts_init(&e);
    e.max_table_capacity = o->qpack_encoder_max_table_capacity;
    e.max_blocked_streams = o->qpack_encoder_blocked_streams;
    e.mem = c->mem;
    return vega_qpack_encoder_new(&c->qenc, &e);
}

static int conn_new(vega_h3_conn **out, const vega_h3_callbacks *cb, const vega_h3_opts *opts,
                    void *user_data, int opts_version, bool server)
{
    if (opts_version != VEGA_H3_OPTS_VERSION || !out || !cb)
        return -EINVAL;
    vega_h3_opts o;
    vega_h3_opts_init(&o);
    if (opts)
        o = *opts;
    uint64_t section = o.max_field_section_size ? o.max_field_section_size : 65536;
    if (section == VEGA_H3_ZERO || section > VEGA__H3_VARINT_MAX)
        return -EINVAL;
    const vega_mem *m = o.mem;
    if (m && (!m->malloc || !m->calloc || !m->realloc || !m->free))
        return -EINVAL;
    vega_h3_conn *c = vega__mem_calloc(m, 1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->mem = m;
    c->cb = *cb;
    c->ud = user_data;
    c->server = server;
    c->max_section = section;
    c->max_fields = o.max_fields ? o.max_fields : 256;
    c->max_control = o.max_control_frame ? o.max_control_frame : 16384;
    c->connect_protocol = o.enable_connect_protocol;
    c->datagram = o.enable_datagram;
    c->grease = !o.no_grease;
    c->grease_seed = o.grease_seed;
    c->ctrl_out.mem = m;
    c->peer.max_field_section_size = UINT64_MAX;
    int rc = make_qpack(c, &o);
    if (rc < 0) {
        vega_h3_conn_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int vega_h3_conn_client_new_versioned(vega_h3_conn **out, const vega_h3_callbacks *cb,
                                      const vega_h3_opts *opts, void *user_data, int opts_version)
{
    return conn_new(out, cb, opts, user_data, opts_version, false);
}

int vega_h3_conn_server_new_versioned(vega_h3_conn **out, const vega_h3_callbacks *cb,
                                      const vega_h3_opts *opts, void *user_data, int opts_version)
{
    return conn_new(out, cb, opts, user_data, opts_version, true);
}

void vega_h3_conn_free(vega_h3_conn *c)
{
    if (!c)
        return;
    for (size_t b = 0; b < c->nbuckets; b++)
        while (c->buckets[b])
            vega__h3_stream_free(c, c->buckets[b]);
    vega__mem_free(c->mem, c->buckets);
    vega_qpack_decoder_free(c->qdec);
    vega_qpack_encoder_free(c->qenc);
    vega__qp_buf_free(&c->ctrl_out);
    vega__mem_free(c->mem, c->unblocked);
    vega__mem_free(c->mem, c->wfields);
    vega__mem_free(c->mem, c);
}

/* ---- our unidirectional streams ------------------------------------------------------------ */

int vega_h3_conn_bind_streams(vega_h3_conn *c, uint64_t control, uint64_t qpack_encoder,
                              uint64_t qpack_decoder)
{
    /* Ours: unidirectional (bit 1) and initiated by our side (bit 0 = server). */
    uint64_t want = 2 | (c->server ? 1 : 0);
    if (c->bound || (control & 3) != want || (qpack_encoder & 3) != want ||
        (qpack_decoder & 3) != want || control == qpack_encoder || control == qpack_decoder ||
        qpack_encoder == qpack_decoder || control > VEGA__H3_VARINT_MAX ||
        qpack_encoder > VEGA__H3_VARINT_MAX || qpack_decoder > VEGA__H3_VARINT_MAX)
        return -EINVAL;
    /* RFC 9114 §6.2.1: "Each side MUST initiate a single control stream at the beginning of the
     * connection and send its SETTINGS frame as the first frame on this stream." */
    uint8_t type = VEGA__H3_STREAM_CONTROL;
    int rc = vega__qp_buf_append(&c->ctrl_out, &type, 1);
    if (rc == 0)
        rc = vega__h3_settings_queue(c);
    if (rc < 0) {
        c->ctrl_out.off = c->ctrl_out.len = 0;
        return rc;
    }
    c->bound = true;
    c->ctrl_id = control;
    c->qenc_id = qpack_encoder;
    c->qdec_id = qpack_decoder;
    return 0;
}

vega_ssize vega_h3_conn_write_uni(vega_h3_conn *c, uint64_t *stream_id, uint8_t *out, size_t cap)
{
    if (!stream_id || (!out && cap))
        return -EINVAL;
    if (!c->bound || cap == 0)
        return 0;
    if (vega__qp_buf_pending(&c->ctrl_out)) {
        *stream_id = c->ctrl_id;
        return (vega_ssize)vega__qp_buf_take(&c->ctrl_out, out, cap);
    }
    /* The QPACK streams start with their type byte (RFC 9204 §4.2), sent at once so the peer
     * knows them even while they carry nothing else. */
    if (!c->qenc_type_sent || vega_qpack_encoder_want_write(c->qenc)) {
        size_t n = 0;
        if (!c->qenc_type_sent) {
            out[n++] = VEGA__H3_STREAM_QENC;
            c->qenc_type_sent = true;
        }
        vega_ssize k = vega_qpack_encoder_write(c->qenc, out + n, cap - n);
        *stream_id = c->qenc_id;
        return k < 0 ? k : (vega_ssize)n + k;
    }
    if (!c->qdec_type_sent || vega_qpack_decoder_want_write(c->qdec)) {
        size_t n = 0;
        if (!c->qdec_type_sent) {
            out[n++] = VEGA__H3_STREAM_QDEC;
            c->qdec_type_sent = true;
        }
        vega_ssize k = vega_qpack_decoder_write(c->qdec, out + n, cap - n);
        if (k < 0)
            return k;
        if (n + (size_t)k == 0)
            return 0; /* an increment that could not be queued (no memory): later */
        *stream_id = c->qdec_id;
        return (vega_ssize)n + k;
    }
    return 0;
}

/* A frame of type t with one varint (or a varint and a string) as payload, on our control
 * stream. */
static int queue_frame(vega_h3_conn *c, uint64_t type, uint64_t v, const char *tail, size_t tl)
{
    size_t plen = vega__h3_varint_len(v) + tl;
    size_t n = vega__h3_varint_len(type) + vega__h3_varint_len(plen) + plen;
    struct vega__qp_buf *b = &c->ctrl_out;
    int rc = vega__qp_buf_reserve(b, n);
    if (rc < 0)
        return rc;
    b->len += vega__h3_varint_put(b->p + b->len, vega__room(b->len, b->cap), type);
    b->len += vega__h3_varint_put(b->p + b->len, vega__room(b->len, b->cap), plen);
    b->len += vega__h3_varint_put(b->p + b->len, vega__room(b->len, b->cap), v);
    if (tl)
        memcpy(b->p + b->len, tail, tl);
    b->len += tl;
    return 0;
}

int vega_h3_conn_submit_goaway(vega_h3_conn *c, uint64_t id)
{
    /* RFC 9114 §5.2: "The server sends a client-initiated bidirectional stream ID"; "the
     * identifier in each frame MUST NOT be greater than the identifier in any previous frame". */
    if (id > VEGA__H3_VARINT_MAX || (c->server && !vega__h3_id_client_bidi(id)) ||
        (c->goaway_sent && id > c->goaway_out))
        return -EINVAL;
    int rc = queue_frame(c, VEGA__H3_FRAME_GOAWAY, id, NULL, 0);
    if (rc < 0)
        return rc;
    c->goaway_sent = true;
    c->goaway_out = id;
    return 0;
}

int vega_h3_conn_submit_priority_update(vega_h3_conn *c, uint64_t stream_id,
                                        const vega_h3_priority *prio)
{
    if (c->server || !prio || !vega__h3_id_client_bidi(stream_id) ||
        stream_id > VEGA__H3_VARINT_MAX || prio->urgency > 7)
        return -EINVAL;
    char v[16];
    vega_ssize n = vega_h3_priority_write(v, sizeof v, prio);
    if (n < 0)
        return (int)n;
    return queue_frame(c, VEGA__H3_FRAME_PRIORITY_UPDATE, stream_id, v, (size_t)n);
}

uint64_t vega_h3_conn_get_next_request_id(const vega_h3_conn *c)
{
    return c->next_bidi;
}

bool vega_h3_conn_get_peer_settings(const vega_h3_conn *c, vega_h3_settings *out)
{
    if (c->settings_received) {
        *out = c->peer;
    } else {
        memset(out, 0, sizeof *out);
        out->max_field_section_size = UINT64_MAX;
    }
    return c->settings_received;
}

uint64_t vega_h3_conn_get_error(const vega_h3_conn *c, const char **reason)
{
    if (reason)
        *reason = c->err ? c->reason : NULL;
    return c->err;
}
