/* SPDX-License-Identifier: MIT */
/* Request streams (RFC 9114 §4.1, §6.1): the frames a request or response may carry and in
 * which order (HEADERS, DATA, trailing HEADERS; unknown frames skipped; the rest refused, §7.2),
 * DATA handed over in place, HEADERS buffered up to the field section limit, content-length
 * against the DATA received (§4.1.2), and the stream's end (§4.1, §7.1). */
#include <string.h>

#include "h3_core_int.h"

/* Checks a frame's type and the message's state when the frame header is in. Returns 0 (go on;
 * s->kind may have become IGNORED after a stream error) or a connection-fatal code. */
static int frame_start(vega_h3_conn *c, struct vega__h3_stream *s)
{
    switch (s->ftype) {
    case VEGA__H3_FRAME_DATA:
        /* §4.1: "a DATA frame before any HEADERS frame, or a HEADERS or DATA frame after the
         * trailing HEADERS frame, is considered invalid" (H3_FRAME_UNEXPECTED). */
        if (s->msg == VEGA__H3_MSG_TRAILERS || (s->msg == VEGA__H3_MSG_HEAD && !s->head_started))
            return vega__h3_fail(c, VEGA_H3_FRAME_UNEXPECTED, "DATA frame out of order");
        /* Content after interim responses only (§4.1: an invalid sequence of HTTP messages),
         * or on a response that can have none (§4.1.2, RFC 9110 §6.4.1): malformed. */
        if (s->msg == VEGA__H3_MSG_HEAD || (s->no_content && s->flen > 0))
            return vega__h3_stream_error(c, s, VEGA_H3_MESSAGE_ERROR);
        /* §4.1.2: content-length must equal the sum of the DATA frame lengths: a frame that
         * announces more than is left is refused before any of it is handed over. */
        if (s->has_cl && !s->no_content && s->flen > s->cl - s->data_total)
            return vega__h3_stream_error(c, s, VEGA_H3_MESSAGE_ERROR);
        return 0;
    case VEGA__H3_FRAME_HEADERS:
        if (s->msg == VEGA__H3_MSG_TRAILERS)
            return vega__h3_fail(c, VEGA_H3_FRAME_UNEXPECTED, "HEADERS frame after trailers");
        /* §4.4: "Once the CONNECT method has completed, only DATA frames are permitted to be
         * sent on the stream. ... Receipt of any other known frame type MUST be treated as a
         * connection error of type H3_FRAME_UNEXPECTED." */
        if (s->msg == VEGA__H3_MSG_BODY && s->connect)
            return vega__h3_fail(c, VEGA_H3_FRAME_UNEXPECTED, "HEADERS frame in a CONNECT tunnel");
        s->head_started = true;
        /* §4.2.2: a header section larger than we handle; the frame is not buffered. */
        if (s->flen > c->max_section)
            return vega__h3_stream_error(c, s, VEGA_H3_EXCESSIVE_LOAD);
        return 0;
    case VEGA__H3_FRAME_PUSH_PROMISE:
        /* §7.2.5: "A client MUST treat receipt of a PUSH_PROMISE frame that contains a larger push
         * ID than the client has advertised as a connection error of H3_ID_ERROR" (we advertise
         * none); "A server MUST treat the receipt of a PUSH_PROMISE frame as a connection error of
         * type H3_FRAME_UNEXPECTED." */
        if (!c->server)
            return vega__h3_fail(c, VEGA_H3_ID_ERROR, "PUSH_PROMISE without MAX_PUSH_ID");
        return vega__h3_fail(c, VEGA_H3_FRAME_UNEXPECTED, "PUSH_PROMISE from a client");
    case VEGA__H3_FRAME_CANCEL_PUSH:     /* §7.2.3 */
    case VEGA__H3_FRAME_SETTINGS:        /* §7.2.4 */
    case VEGA__H3_FRAME_GOAWAY:          /* §7.2.6 */
    case VEGA__H3_FRAME_MAX_PUSH_ID:     /* §7.2.7 */
    case VEGA__H3_FRAME_PRIORITY_UPDATE: /* RFC 9218 §7.2 */
    case VEGA__H3_FRAME_PRIORITY_PUSH:
    case 0x02: /* HTTP/2-only frame types (§7.2.8, §11.2.1) */
    case 0x06:
    case 0x08:
    case 0x09:
        return vega__h3_fail(c, VEGA_H3_FRAME_UNEXPECTED, "frame not allowed on a request stream");
    default:
        return 0; /* reserved and unknown: skipped (§7.2.8, §9) */
    }
}

/* DATA payload: handed over in place. */
static int data(vega_h3_conn *c, struct vega__h3_stream *s, const uint8_t *p, size_t n)
{
    s->data_total += n; /* frame_start made sure it stays within a content-length */
    if (n && c->cb.on_data)
        return vega__h3_cb(c, c->cb.on_data(c->ud, s->id, p, n));
    return 0;
}

/* HEADERS payload: decoded in place when whole in this input, else gathered first. */
static int headers(vega_h3_conn *c, struct vega__h3_stream *s, const uint8_t *p, size_t n)
{
    if (s->buf_len == 0 && n == s->flen)
        return vega__h3_head(c, s, p, n);
    if (!s->buf) {
        s->buf = vega__mem_malloc(c->mem, (size_t)s->flen);
        if (!s->buf)
            return c->failed = -ENOMEM;
    }
    memcpy(s->buf + s->buf_len, p, n);
    s->buf_len += n;
    if (s->buf_len < s->flen)
        return 0;
    int rc = vega__h3_head(c, s, s->buf, s->buf_len);
    vega__mem_free(c->mem, s->buf);
    s->buf = NULL;
    s->buf_len = 0;
    return rc;
}

int vega__h3_request_end(vega_h3_conn *c, struct vega__h3_stream *s)
{
    int rc;
    if (s->msg == VEGA__H3_MSG_HEAD) {
        /* §4.1: "If a client-initiated stream terminates without enough of the HTTP message to
         * provide a complete response, the server SHOULD abort its response stream with the error
         * code H3_REQUEST_INCOMPLETE." A response stream without a final response is
         * malformed. */
        rc = vega__h3_stream_error(c, s,
                                   c->server ? VEGA_H3_REQUEST_INCOMPLETE : VEGA_H3_MESSAGE_ERROR);
    } else if (s->has_cl && !s->no_content && s->data_total != s->cl) {
        rc = vega__h3_stream_error(c, s, VEGA_H3_MESSAGE_ERROR);
    } else {
        rc = c->cb.on_end_stream ? vega__h3_cb(c, c->cb.on_end_stream(c->ud, s->id)) : 0;
    }
    vega__h3_stream_free(c, s);
    return rc;
}

vega_ssize vega__h3_request_read(vega_h3_conn *c, struct vega__h3_stream *s, const uint8_t *in,
                                 size_t len, bool fin)
{
    if (s->blocked) {
        /* Nothing goes in until QPACK unblocks the stream, but a bare end is remembered. */
        if (len == 0 && fin)
            s->fin_pending = true;
        return 0;
    }
    size_t at = 0;
    while (at < len || (s->in_frame && s->fleft == 0)) {
        if (!s->in_frame) {
            at += vega__h3_frame_header(s, in + at, len - at);
            if (!s->in_frame)
                break;
            int rc = frame_start(c, s);
            if (rc < 0)
                return rc;
            if (s->kind != VEGA__H3_REQUEST)
                break; /* a stream error: the rest is dropped */
            continue;
        }
        size_t n = (size_t)VEGA__MIN((uint64_t)(len - at), s->fleft);
        s->fleft -= n;
        int rc = 0;
        if (s->ftype == VEGA__H3_FRAME_DATA)
            rc = data(c, s, in + at, n);
        else if (s->ftype == VEGA__H3_FRAME_HEADERS)
            rc = headers(c, s, in + at, n);
        at += n;
        if (s->fleft == 0)
            s->in_frame = false;
        if (rc < 0)
            return rc;
        if (s->kind != VEGA__H3_REQUEST)
            break;
        if (rc == VEGA_QPACK_BLOCKED) {
            /* The rest waits in the caller's buffer; an end that came with this input is
             * remembered when nothing else did. */
            s->blocked = true;
            if (at == len && fin)
                s->fin_pending = true;
            return (vega_ssize)at;
        }
    }
    if (s->kind != VEGA__H3_REQUEST) {
        if (fin)
            vega__h3_stream_free(c, s);
        return (vega_ssize)len;
    }
    if (!fin)
        return (vega_ssize)at;
    /* §7.1: "When a stream terminates cleanly, if the last frame on the stream was truncated,
     * this MUST be treated as a connection error of type H3_FRAME_ERROR." */
    if (s->in_frame || s->hdr_len)
        return vega__h3_fail(c, VEGA_H3_FRAME_ERROR, "stream ended inside a frame");
    int rc = vega__h3_request_end(c, s);
    return rc < 0 ? rc : (vega_ssize)len;
}
