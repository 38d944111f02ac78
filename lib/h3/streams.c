/* SPDX-License-Identifier: MIT */
/* HTTP/3 streams by QUIC stream id (RFC 9114 §6): the map of their state, input dispatch to
 * request streams (§6.1) and the peer's unidirectional streams by their type (§6.2: control,
 * push refused, QPACK encoder and decoder of RFC 9204 §4.2, unknown types ignored), stream
 * errors (§8) and closing (critical streams never close, §6.2.1). */
#include <string.h>

#include "h3_core_int.h"

/* ---- the map ------------------------------------------------------------------------------- */

static size_t bucket_of(size_t nbuckets, uint64_t id)
{
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (nbuckets - 1);
}

struct vega__h3_stream *vega__h3_stream_find(const vega_h3_conn *c, uint64_t id)
{
    if (!c->nbuckets)
        return NULL;
    for (struct vega__h3_stream *s = c->buckets[bucket_of(c->nbuckets, id)]; s; s = s->next)
        if (s->id == id)
            return s;
    return NULL;
}

static int grow(vega_h3_conn *c)
{
    size_t n = c->nbuckets ? c->nbuckets * 2 : 16;
    struct vega__h3_stream **b = vega__mem_calloc(c->mem, n, sizeof *b);
    if (!b)
        return -ENOMEM;
    for (size_t i = 0; i < c->nbuckets; i++)
        for (struct vega__h3_stream *s = c->buckets[i], *next; s; s = next) {
            next = s->next;
            size_t k = bucket_of(n, s->id);
            s->next = b[k];
            b[k] = s;
        }
    vega__mem_free(c->mem, c->buckets);
    c->buckets = b;
    c->nbuckets = n;
    return 0;
}

struct vega__h3_stream *vega__h3_stream_new(vega_h3_conn *c, uint64_t id, uint8_t kind)
{
    if (c->nstreams >= c->nbuckets && grow(c) < 0)
        return NULL;
    struct vega__h3_stream *s = vega__mem_calloc(c->mem, 1, sizeof *s);
    if (!s)
        return NULL;
    s->id = id;
    s->kind = kind;
    size_t k = bucket_of(c->nbuckets, id);
    s->next = c->buckets[k];
    c->buckets[k] = s;
    c->nstreams++;
    return s;
}

void vega__h3_stream_free(vega_h3_conn *c, struct vega__h3_stream *s)
{
    struct vega__h3_stream **p = &c->buckets[bucket_of(c->nbuckets, s->id)];
    while (*p != s)
        p = &(*p)->next;
    *p = s->next;
    c->nstreams--;
    vega__mem_free(c->mem, s->buf);
    vega__mem_free(c->mem, s);
}

size_t vega__h3_frame_header(struct vega__h3_stream *s, const uint8_t *in, size_t len)
{
    size_t old = s->hdr_len, add = VEGA__MIN(len, sizeof s->hdr - old);
    memcpy(s->hdr + old, in, add);
    size_t a = vega__h3_varint_get(s->hdr, old + add, &s->ftype);
    size_t b = a ? vega__h3_varint_get(s->hdr + a, old + add - a, &s->flen) : 0;
    if (!b) {
        s->hdr_len = (uint8_t)(old + add); /* all of it belongs to the header (at most 16) */
        return add;
    }
    s->hdr_len = 0;
    s->in_frame = true;
    s->fleft = s->flen;
    s->buf_len = 0;
    return a + b - old;
}

/* QPACK may keep state for a request stream whose head began: cancel it (RFC 9204 §4.4.2). */
static int forget_qpack(vega_h3_conn *c, struct vega__h3_stream *s)
{
    if (s->kind != VEGA__H3_REQUEST || !s->head_started)
        return 0;
    s->head_started = false;
    return vega_qpack_decoder_cancel_stream(c->qdec, s->id);
}

int vega__h3_stream_error(vega_h3_conn *c, struct vega__h3_stream *s, uint64_t code)
{
    int rc = forget_qpack(c, s);
    if (rc < 0) {
        c->failed = rc;
        return rc;
    }
    s->kind = VEGA__H3_IGNORED;
    s->blocked = false;
    vega__mem_free(c->mem, s->buf);
    s->buf = NULL;
    if (c->cb.on_stream_error)
        return vega__h3_cb(c, c->cb.on_stream_error(c->ud, s->id, code));
    return 0;
}

/* ---- the peer's unidirectional streams ----------------------------------------------------- */

static int uni_type(vega_h3_conn *c, struct vega__h3_stream *s, uint64_t type)
{
    bool *seen = type == VEGA__H3_STREAM_CONTROL ? &c->peer_ctrl
                 : type == VEGA__H3_STREAM_QENC  ? &c->peer_qenc
                 : type == VEGA__H3_STREAM_QDEC  ? &c->peer_qdec
                                                 : NULL;
    if (seen) {
        /* RFC 9114 §6.2.1: "receipt of a second stream claiming to be a control stream MUST be
         * treated as a connection error of type H3_STREAM_CREATION_ERROR"; RFC 9204 §4.2: the
         * same for "a second instance of either stream type". */
        if (*seen)
            return vega__h3_fail(c, VEGA_H3_STREAM_CREATION_ERROR, "second critical stream");
        *seen = true;
        s->kind = type == VEGA__H3_STREAM_CONTROL ? VEGA__H3_CONTROL
                  : type == VEGA__H3_STREAM_QENC  ? VEGA__H3_QENC
                                                  : VEGA__H3_QDEC;
        return 0;
    }
    if (type == VEGA__H3_STREAM_PUSH) {
        /* §6.2.2: "if a server receives a client-initiated push stream, this MUST be treated as
         * a connection error of type H3_STREAM_CREATION_ERROR"; §4.6: "A client MUST treat
         * receipt of a push stream as a connection error of type H3_ID_ERROR when no MAX_PUSH_ID
         * frame has been sent" (we never send one). */
        if (c->server)
            return vega__h3_fail(c, VEGA_H3_STREAM_CREATION_ERROR, "push stream from a client");
        return vega__h3_fail(c, VEGA_H3_ID_ERROR, "push stream without MAX_PUSH_ID");
    }
    /* §6.2: "Recipients of unknown stream types MUST either abort reading of the stream or
     * discard incoming data without further processing. If reading is aborted, the recipient
     * SHOULD use the H3_STREAM_CREATION_ERROR error code". Reserved types (§6.2.3) too. */
    s->kind = VEGA__H3_IGNORED;
    if (c->cb.on_stop_sending)
        return vega__h3_cb(c, c->cb.on_stop_sending(c->ud, s->id, VEGA_H3_STREAM_CREATION_ERROR));
    return 0;
}

static vega_ssize read_uni_new(vega_h3_conn *c, struct vega__h3_stream *s, const uint8_t *in,
                               size_t len)
{
    size_t old = s->hdr_len, add = VEGA__MIN(len, (size_t)8 - old);
    memcpy(s->hdr + old, in, add);
    uint64_t type;
    size_t k = vega__h3_varint_get(s->hdr, old + add, &type);
    if (!k) {
        s->hdr_len = (uint8_t)(old + add);
        return (vega_ssize)add;
    }
    s->hdr_len = 0;
    int rc = uni_type(c, s, type);
    return rc < 0 ? rc : (vega_ssize)(k - old);
}

static vega_ssize qpack_stream(vega_h3_conn *c, struct vega__h3_stream *s, const uint8_t *in,
                               size_t len, bool fin)
{
    int rc;
    if (s->kind == VEGA__H3_QENC) {
        rc = vega_qpack_decoder_read_encoder(c->qdec, in, len);
        if (rc == VEGA_ERR_PROTO)
            return vega__h3_fail(c, vega_qpack_decoder_get_error(c->qdec, NULL),
                                 "bad QPACK encoder stream");
        if (rc == VEGA_ERR_CALLBACK)
            rc = -ENOMEM; /* our on_unblocked never fails but for a broken invariant */
        if (rc == 0)
            rc = vega__h3_unblocked(c);
    } else {
        rc = vega_qpack_encoder_read_decoder(c->qenc, in, len);
        if (rc == VEGA_ERR_PROTO)
            return vega__h3_fail(c, vega_qpack_encoder_get_error(c->qenc, NULL),
                                 "bad QPACK decoder stream");
    }
    if (rc < 0) {
        if (!c->failed)
            c->failed = rc;
        return rc;
    }
    /* RFC 9204 §4.2: "Closure of either unidirectional stream type MUST be treated as a
     * connection error of type H3_CLOSED_CRITICAL_STREAM." */
    if (fin)
        return vega__h3_fail(c, VEGA_H3_CLOSED_CRITICAL_STREAM, "the peer closed a QPACK stream");
    return (vega_ssize)len;
}

/* ---- input --------------------------------------------------------------------------------- */

/* The state for a stream the core does not know yet; NULL with *skip set when its input is to
 * be dropped, NULL with c->failed set on an error. */
static struct vega__h3_stream *open_stream(vega_h3_conn *c, uint64_t id, bool *skip, int *err)
{
    *skip = false;
    *err = 0;
    bool ours = vega__h3_id_server_initiated(id) == c->server;
    if (vega__h3_id_uni(id) ? ours : ours && c->server) {
        *err = -EINVAL; /* we never receive on these */
        return NULL;
    }
    if (vega__h3_id_uni(id)) {
        struct vega__h3_stream *s = vega__h3_stream_new(c, id, VEGA__H3_UNI_NEW);
        if (!s)
            *err = -ENOMEM;
        return s;
    }
    if (!c->server) {
        if (vega__h3_id_server_initiated(id)) {
            /* §6.1: "Clients MUST treat receipt of a server-initiated bidirectional stream as a
             * connection error of type H3_STREAM_CREATION_ERROR". */
            *err = vega__h3_fail(c, VEGA_H3_STREAM_CREATION_ERROR, "server-initiated bidi stream");
            return NULL;
        }
        *skip = true; /* a request of ours that is over: its late input is dropped */
        return NULL;
    }
    struct vega__h3_stream *s = vega__h3_stream_new(c, id, VEGA__H3_REQUEST);
    if (!s) {
        *err = -ENOMEM;
        return NULL;
    }
    if (id >= c->next_bidi)
        c->next_bidi = id + 4;
    /* §5.2: "Requests ... with the indicated identifier or greater are rejected (Section 4.1.1)
     * by the sender of the GOAWAY." */
    if (c->goaway_sent && id >= c->goaway_out) {
        *err = vega__h3_stream_error(c, s, VEGA_H3_REQUEST_REJECTED);
        if (*err < 0)
            return NULL;
    }
    return s;
}

static vega_ssize dispatch(vega_h3_conn *c, struct vega__h3_stream *s, const uint8_t *in,
                           size_t len, bool fin)
{
    switch (s->kind) {
    case VEGA__H3_REQUEST:
        return vega__h3_request_read(c, s, in, len, fin);
    case VEGA__H3_CONTROL:
        return vega__h3_control_read(c, s, in, len, fin);
    case VEGA__H3_QENC:
    case VEGA__H3_QDEC:
        return qpack_stream(c, s, in, len, fin);
    case VEGA__H3_UNI_NEW: {
        vega_ssize k = read_uni_new(c, s, in, len);
        if (k < 0)
            return k;
        if (s->kind == VEGA__H3_UNI_NEW) {
            /* §6.2: "A receiver MUST tolerate unidirectional streams being closed or reset prior
             * to the reception of the unidirectional stream header." */
            if (fin)
                vega__h3_stream_free(c, s);
            return k;
        }
        vega_ssize r = dispatch(c, s, in + k, len - (size_t)k, fin);
        return r < 0 ? r : k + r;
    }
    default: /* VEGA__H3_IGNORED */
        if (fin)
            vega__h3_stream_free(c, s);
        return (vega_ssize)len;
    }
}

vega_ssize vega_h3_conn_read_stream(vega_h3_conn *c, uint64_t stream_id, const uint8_t *data,
                                    size_t len, bool fin)
{
    if (c->failed)
        return c->failed;
    if ((!data && len) || stream_id > VEGA__H3_VARINT_MAX)
        return -EINVAL;
    static const uint8_t none[1];
    if (!data)
        data = none; /* a bare end: no pointer arithmetic on NULL below */
    struct vega__h3_stream *s = vega__h3_stream_find(c, stream_id);
    if (!s) {
        bool skip;
        int err;
        s = open_stream(c, stream_id, &skip, &err);
        if (err < 0) {
            if (err == -ENOMEM)
                c->failed = err;
            return err;
        }
        if (skip)
            return (vega_ssize)len;
    }
    return dispatch(c, s, data, len, fin);
}

int vega_h3_conn_close_stream(vega_h3_conn *c, uint64_t stream_id)
{
    struct vega__h3_stream *s = vega__h3_stream_find(c, stream_id);
    bool critical =
        (c->bound &&
         (stream_id == c->ctrl_id || stream_id == c->qenc_id || stream_id == c->qdec_id)) ||
        (s &&
         (s->kind == VEGA__H3_CONTROL || s->kind == VEGA__H3_QENC || s->kind == VEGA__H3_QDEC));
    /* RFC 9114 §6.2.1 and RFC 9204 §4.2: critical streams are never closed, and "the receiver
     * MUST NOT request that the sender close" them. */
    if (critical)
        return vega__h3_fail(c, VEGA_H3_CLOSED_CRITICAL_STREAM, "a critical stream was closed");
    if (!s)
        return 0;
    int rc = forget_qpack(c, s);
    vega__h3_stream_free(c, s);
    return rc;
}
