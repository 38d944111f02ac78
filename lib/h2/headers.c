/* SPDX-License-Identifier: MIT */
/* Receiving header blocks (RFC 9113 §4.3, §6.2, §6.10): HEADERS and CONTINUATION reassembled
 * within their limits, every block HPACK-decoded (even one that is then dropped: the table
 * must stay in step), and the section delivered where §5.1 and §8.1 say it may go: a new
 * request, a response, trailers, or a stream error. */
#include <string.h>

#include "h2_int.h"

int vega__h2_headers_start(vega_h2_conn *c)
{
    struct h2_frame *f = &c->rd.f;
    /* §6.2: "If a HEADERS frame is received whose Stream Identifier field is 0x00, the
     * recipient MUST respond with a connection error of type PROTOCOL_ERROR." */
    if (f->sid == 0)
        return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR, "HEADERS on stream 0");
    c->rd.body_start =
        (size_t)((f->flags & H2_F_PADDED) ? 1 : 0) + ((f->flags & H2_F_PRIORITY) ? 5u : 0u);
    /* §4.2: a frame "too small to contain mandatory frame data"; a frame size error in a frame
     * carrying a field block is a connection error. */
    if (f->len < c->rd.body_start)
        return vega__h2_conn_error(c, VEGA_H2_FRAME_SIZE_ERROR, "HEADERS too short");
    c->hb.active = true;
    c->hb.sid = f->sid;
    c->hb.end_stream = f->flags & H2_F_END_STREAM;
    c->hb.self_dep = false;
    c->hb.conts = 0;
    c->hb.len = 0;
    return 0;
}

void vega__h2_headers_priority(vega_h2_conn *c)
{
    uint32_t dep = h2_get32(c->rd.small) & 0x7fffffffu;
    if (dep == (uint32_t)c->hb.sid)
        c->hb.self_dep = true;
}

int vega__h2_headers_fragment(vega_h2_conn *c, const uint8_t *p, size_t n)
{
    /* CONTINUATION flood (2024): the block is reassembled before decoding, so its size is
     * bounded whatever the frames carry; past it the block cannot be decoded and the
     * connection ends. */
    if (!vega__fits(c->hb.len, n, c->o.max_header_block_size))
        return vega__h2_conn_error(c, VEGA_H2_ENHANCE_YOUR_CALM, "header block too large");
    if (!vega__fits(c->hb.len, n, c->hb.cap)) {
        size_t cap = VEGA__MAX(VEGA__MAX(c->hb.cap * 2, c->hb.len + n), (size_t)1024);
        cap = VEGA__MIN(cap, (size_t)c->o.max_header_block_size);
        uint8_t *b = vega__mem_realloc(c->o.mem, c->hb.buf, cap);
        if (!b)
            return -ENOMEM;
        c->hb.buf = b;
        c->hb.cap = cap;
    }
    memcpy(c->hb.buf + c->hb.len, p, n);
    c->hb.len += n;
    return 0;
}

/* ---- the decoded fields, copied (the decoder's spans live only in its callback) ---- */

void vega__h2_fs_free(vega_h2_conn *c)
{
    vega__mem_free(c->o.mem, c->fs.bytes);
    vega__mem_free(c->o.mem, c->fs.ents);
    vega__mem_free(c->o.mem, c->fs.out);
    memset(&c->fs, 0, sizeof c->fs);
}

static bool grow(vega_h2_conn *c, void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t n = VEGA__MAX(VEGA__MAX(*cap * 2, need), (size_t)16);
    void *q = vega__mem_realloc(c->o.mem, *p, n * elem);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

static int collect(void *ud, const vega_hpack_field *f)
{
    vega_h2_conn *c = ud;
    size_t need = c->fs.len + f->name.len + f->value.len;
    if (!grow(c, (void **)&c->fs.bytes, &c->fs.cap, need, 1) ||
        !grow(c, (void **)&c->fs.ents, &c->fs.ecap, c->fs.n + 1, sizeof *c->fs.ents)) {
        c->fs.oom = true;
        return 1;
    }
    struct h2_fent *e = &c->fs.ents[c->fs.n++];
    e->no = (uint32_t)c->fs.len;
    e->nl = (uint32_t)f->name.len;
    if (f->name.len)
        memcpy(c->fs.bytes + c->fs.len, f->name.ptr, f->name.len);
    c->fs.len += f->name.len;
    e->vo = (uint32_t)c->fs.len;
    e->vl = (uint32_t)f->value.len;
    if (f->value.len)
        memcpy(c->fs.bytes + c->fs.len, f->value.ptr, f->value.len);
    c->fs.len += f->value.len;
    e->idx = f->index;
    return 0;
}

/* Decodes the block into c->fs.out. Returns 0, 1 (too large: decoded, fields dropped), or a
 * connection error. */
static int decode(vega_h2_conn *c)
{
    c->fs.len = c->fs.n = 0;
    c->fs.oom = false;
    int rc = vega_hpack_decode(c->dec, c->hb.buf, c->hb.len, collect, c);
    /* A large block's buffer is not kept past its use (an idle connection stays small). */
    if (c->hb.cap > 16384) {
        vega__mem_free(c->o.mem, c->hb.buf);
        c->hb.buf = NULL;
        c->hb.cap = 0;
    }
    c->hb.len = 0;
    if (rc == VEGA_ERR_CALLBACK || rc == -ENOMEM)
        return -ENOMEM; /* the table is half updated: fatal */
    /* §4.3: "A decoding error in a field block MUST be treated as a connection error
     * (Section 5.4.1) of type COMPRESSION_ERROR." */
    if (rc < 0 && rc != VEGA_ERR_HPACK_TOO_LARGE)
        return vega__h2_conn_error(c, VEGA_H2_COMPRESSION_ERROR, "HPACK decoding failed");
    if (!grow(c, (void **)&c->fs.out, &c->fs.ocap, c->fs.n, sizeof *c->fs.out))
        return -ENOMEM;
    /* Fields may all be empty: then no byte was ever stored. */
    const char *base = c->fs.bytes ? (const char *)c->fs.bytes : "";
    for (size_t i = 0; i < c->fs.n; i++) {
        const struct h2_fent *e = &c->fs.ents[i];
        c->fs.out[i] = (vega_hpack_field){{base + e->no, e->nl}, {base + e->vo, e->vl}, e->idx};
    }
    return rc == VEGA_ERR_HPACK_TOO_LARGE ? 1 : 0;
}

/* A request header section too large to take (§10.5.1): answered 431 (and, when the request
 * goes on, RST_STREAM NO_ERROR as §8.1 allows), without a stream. */
static int refuse_large(vega_h2_conn *c, int32_t sid, bool end)
{
    int rc = vega__h2_count_reset(c);
    if (rc < 0)
        return rc;
    static const vega_hpack_field status[] = {
        {VEGA_HTTP_LIT(":status"), VEGA_HTTP_LIT("431"), VEGA_HPACK_INDEX_NO}};
    rc = vega__h2_put_headers(c, sid, status, 1, true);
    if (rc == 0 && !end)
        rc = vega__h2_put_rst_stream(c, sid, VEGA_H2_NO_ERROR, true);
    vega__h2_closed_add(c, sid);
    return rc;
}

/* Delivers a validated section and moves the stream along. */
static int deliver(vega_h2_conn *c, struct vega_h2_stream *s, vega_h2_head *h)
{
    int32_t sid = s->id;
    if (c->cb->on_headers && c->cb->on_headers(c->ud, sid, h))
        return VEGA_ERR_CALLBACK;
    s = vega__h2_stream_find(c, sid); /* the callback may have reset it */
    if (s && h->end_stream)
        return vega__h2_stream_remote_end(c, s);
    return 0;
}

/* A server's new stream: a request. */
static int new_request(vega_h2_conn *c, int32_t sid, int large)
{
    /* §5.1.1: "Streams initiated by a client MUST use odd-numbered stream identifiers" and
     * "An endpoint that receives an unexpected stream identifier MUST respond with a
     * connection error of type PROTOCOL_ERROR." (An id at or below the last one is a closed
     * stream, handled by the caller.) */
    if (!(sid & 1))
        return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR, "HEADERS with an even stream id");
    c->last_peer_id = sid; /* every idle stream below is now closed (§5.1.1) */
    /* §6.8: after our final GOAWAY, streams above its last id are ignored. */
    if (c->goaway_sent && sid > c->goaway_last_sent)
        return 0;
    bool end = c->hb.end_stream;
    if (large)
        return refuse_large(c, sid, end);
    /* §5.1.2: "An endpoint that receives a HEADERS frame that causes its advertised concurrent
     * stream limit to be exceeded MUST treat this as a stream error (Section 5.4.2) of type
     * PROTOCOL_ERROR or REFUSED_STREAM." REFUSED_STREAM: the client may retry (§8.7). */
    if (c->nstreams >= c->local.max_concurrent_streams)
        return vega__h2_stream_error(c, NULL, sid, VEGA_H2_REFUSED_STREAM);
    vega_h2_head h;
    if (c->hb.self_dep ||
        !vega__h2_validate_in(c, NULL, VEGA_H2_HEAD_REQUEST, c->fs.out, c->fs.n, &h))
        return vega__h2_stream_error(c, NULL, sid, VEGA_H2_PROTOCOL_ERROR);
    /* A request that ends here cannot carry the content its content-length announces. */
    if (end && h.content_length > 0 && !vega_http_str_eq(h.method, "CONNECT"))
        return vega__h2_stream_error(c, NULL, sid, VEGA_H2_PROTOCOL_ERROR);
    struct vega_h2_stream *s = vega__h2_stream_new(c, sid);
    if (!s)
        return -ENOMEM;
    s->rx = H2_RX_BODY;
    s->rx_cl = h.content_length;
    s->connect = vega_http_str_eq(h.method, "CONNECT");
    h.end_stream = end;
    return deliver(c, s, &h);
}

/* A section on a stream that exists: a response (client) or trailers (either side). */
static int on_open_stream(vega_h2_conn *c, struct vega_h2_stream *s, int large)
{
    int32_t sid = s->id;
    bool end = c->hb.end_stream;
    /* §5.1 half-closed (remote): frames other than WINDOW_UPDATE, PRIORITY and RST_STREAM
     * are a stream error of type STREAM_CLOSED. */
    if (s->rx == H2_RX_DONE || s->closing)
        return vega__h2_stream_error(c, s, sid, VEGA_H2_STREAM_CLOSED);
    if (c->hb.self_dep)
        return vega__h2_stream_error(c, s, sid, VEGA_H2_PROTOCOL_ERROR);
    /* A section we will not take: the stream is cancelled (a client drops a response it
     * cannot process, §10.5.1). */
    if (large)
        return vega__h2_stream_error(c, s, sid, VEGA_H2_CANCEL);
    bool response = !c->server && !s->rx_final;
    vega_h2_head h;
    if (!vega__h2_validate_in(c, s, response ? VEGA_H2_HEAD_RESPONSE : VEGA_H2_HEAD_TRAILERS,
                              c->fs.out, c->fs.n, &h))
        return vega__h2_stream_error(c, s, sid, VEGA_H2_PROTOCOL_ERROR);
    h.end_stream = end;
    if (h.kind == VEGA_H2_HEAD_INFORMATIONAL) {
        /* §8.1: "An endpoint that receives a HEADERS frame ... with END_STREAM that carries an
         * informational status code" -- it "MUST treat the corresponding request or response
         * as malformed". */
        if (end)
            return vega__h2_stream_error(c, s, sid, VEGA_H2_PROTOCOL_ERROR);
    } else if (h.kind == VEGA_H2_HEAD_RESPONSE) {
        s->rx_final = true;
        s->rx = H2_RX_BODY;
        s->rx_cl = h.content_length;
        s->rx_no_body = s->head_req || h.status == 204 || h.status == 304;
        if (end && !s->rx_no_body && !s->connect && h.content_length > 0)
            return vega__h2_stream_error(c, s, sid, VEGA_H2_PROTOCOL_ERROR);
    } else {
        /* §8.1: "An endpoint that receives a HEADERS frame without the END_STREAM flag set
         * after receiving the HEADERS frame that opens a request or after receiving a final
         * (non-informational) status code MUST treat the corresponding request or response as
         * malformed". Trailers end the content: its length must be whole (§8.1.1). */
        if (!end ||
            (!s->connect && !s->rx_no_body && s->rx_cl >= 0 && s->rx_body != (uint64_t)s->rx_cl))
            return vega__h2_stream_error(c, s, sid, VEGA_H2_PROTOCOL_ERROR);
    }
    return deliver(c, s, &h);
}

/* An idle connection keeps small buffers: the field store of a large section goes. */
static void fs_trim(vega_h2_conn *c)
{
    if (c->fs.cap > 4096 || c->fs.ecap > 64)
        vega__h2_fs_free(c);
}

static int headers_end(vega_h2_conn *c);

int vega__h2_headers_end(vega_h2_conn *c)
{
    int rc = headers_end(c);
    fs_trim(c);
    return rc;
}

static int headers_end(vega_h2_conn *c)
{
    int32_t sid = c->hb.sid;
    c->hb.active = false;
    int large = decode(c);
    if (large < 0)
        return large;
    struct vega_h2_stream *s;
    switch (vega__h2_id_state(c, sid, &s)) {
    case H2_ID_IDLE:
        if (c->server)
            return new_request(c, sid, large);
        /* A client's streams are its own: a server cannot open one (push is refused). */
        return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR, "HEADERS on an idle stream");
    case H2_ID_CLOSED:
        /* §5.1 closed: after our RST_STREAM (or above our final GOAWAY's last id) frames are
         * ignored; otherwise "an endpoint that receives any frames after receiving a frame with
         * the END_STREAM flag set MUST treat that as a connection error (Section 5.4.1) of type
         * STREAM_CLOSED". */
        if (vega__h2_closed_has(c, sid) || (c->goaway_sent && sid > c->goaway_last_sent))
            return 0;
        return vega__h2_conn_error(c, VEGA_H2_STREAM_CLOSED, "HEADERS on a closed stream");
    case H2_ID_OPEN:
        if (!c->server && !s->hdr_sent) /* the peer cannot know this stream yet */
            return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR, "HEADERS on an idle stream");
        return on_open_stream(c, s, large);
    }
    return 0;
}
