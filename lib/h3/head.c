/* SPDX-License-Identifier: MIT */
/* A HEADERS frame's field section (RFC 9114 §4.1, §7.2.2): QPACK-decoded (RFC 9204; blocked
 * ones resumed when the encoder stream unblocks them, §2.2.1), validated (§4.1.2, §4.3), and
 * delivered as a request head, an interim or final response head, or trailers. */
#include "h3_core_int.h"

static int deliver(vega_h3_conn *c, struct vega__h3_stream *s, const vega_qpack_section *sec)
{
    vega__h3_role role = s->msg != VEGA__H3_MSG_HEAD ? VEGA__H3_ROLE_TRAILERS
                         : c->server                 ? VEGA__H3_ROLE_REQUEST
                                                     : VEGA__H3_ROLE_RESPONSE;
    vega_h3_head h;
    /* §4.1.2: "Malformed requests or responses that are detected MUST be treated as a stream
     * error of type H3_MESSAGE_ERROR." */
    if (vega__h3_check_head(c, role, sec, &h))
        return vega__h3_stream_error(c, s, VEGA_H3_MESSAGE_ERROR);
    switch (role) {
    case VEGA__H3_ROLE_REQUEST:
        h.kind = VEGA_H3_HEAD_INITIAL;
        s->msg = VEGA__H3_MSG_BODY;
        s->connect = vega_http_str_eq(h.method, "CONNECT");
        s->has_cl = h.has_content_length && !s->connect;
        s->cl = h.content_length;
        break;
    case VEGA__H3_ROLE_RESPONSE:
        if (h.status < 200) {
            h.kind = VEGA_H3_HEAD_INFORMATIONAL; /* a final head follows */
            break;
        }
        h.kind = VEGA_H3_HEAD_INITIAL;
        s->msg = VEGA__H3_MSG_BODY;
        /* A tunnel only when CONNECT succeeded; RFC 9110 §9.3.6: "A client MUST ignore any
         * Content-Length or Transfer-Encoding header fields received in a successful response to
         * CONNECT." */
        s->connect = s->connect && h.status < 300;
        s->no_content = s->head_request || h.status == 204 || h.status == 304;
        s->has_cl = h.has_content_length && !s->connect;
        s->cl = h.content_length;
        break;
    default:
        h.kind = VEGA_H3_HEAD_TRAILERS;
        s->msg = VEGA__H3_MSG_TRAILERS;
        break;
    }
    if (c->cb.on_headers)
        return vega__h3_cb(c, c->cb.on_headers(c->ud, s->id, &h));
    return 0;
}

/* What the QPACK decoder said about a section. */
static int decoded(vega_h3_conn *c, struct vega__h3_stream *s, int rc,
                   const vega_qpack_section *sec)
{
    if (rc == 0)
        return deliver(c, s, sec);
    if (rc == VEGA_QPACK_BLOCKED)
        return rc;
    if (rc == VEGA_ERR_QPACK_TOO_LARGE) {
        /* §4.2.2: larger than we are willing to handle. */
        return vega__h3_stream_error(c, s, VEGA_H3_EXCESSIVE_LOAD);
    }
    if (rc == VEGA_ERR_PROTO)
        return vega__h3_fail(c, vega_qpack_decoder_get_error(c->qdec, NULL),
                             "field section could not be decoded");
    if (!c->failed)
        c->failed = rc < 0 ? rc : -ENOMEM;
    return c->failed;
}

int vega__h3_head(vega_h3_conn *c, struct vega__h3_stream *s, const uint8_t *in, size_t len)
{
    vega_qpack_section sec;
    int rc = vega_qpack_decoder_decode(c->qdec, s->id, in, len, &sec);
    return decoded(c, s, rc, &sec);
}

int vega__h3_unblocked(vega_h3_conn *c)
{
    int rc = 0;
    for (size_t i = 0; i < c->nunblocked && rc >= 0; i++) {
        struct vega__h3_stream *s = vega__h3_stream_find(c, c->unblocked[i]);
        if (!s || !s->blocked)
            continue;
        vega_qpack_section sec;
        s->blocked = false;
        rc = decoded(c, s, vega_qpack_decoder_resume(c->qdec, s->id, &sec), &sec);
        if (rc < 0)
            continue;
        if (s->kind != VEGA__H3_REQUEST) {
            if (s->fin_pending) /* a stream error, and its end is in already */
                vega__h3_stream_free(c, s);
            continue;
        }
        if (s->fin_pending) {
            if (s->in_frame || s->hdr_len)
                rc = vega__h3_fail(c, VEGA_H3_FRAME_ERROR, "stream ended inside a frame");
            else
                rc = vega__h3_request_end(c, s);
        } else if (c->cb.on_stream_unblocked) {
            rc = vega__h3_cb(c, c->cb.on_stream_unblocked(c->ud, s->id));
        }
    }
    c->nunblocked = 0;
    return rc;
}
