/* SPDX-License-Identifier: MIT */
/* Outgoing HEADERS frames (RFC 9114 §4.1, §7.2.2): a request head with its pseudo-header
 * fields (§4.3.1, CONNECT §4.4, extended CONNECT RFC 9220 §4), a response head with :status
 * (§4.3.2), trailers; every field checked as the receiving side would (§4.2), the section
 * QPACK-encoded (RFC 9204) into the caller's buffer. */
#include <string.h>

#include "h3_core_int.h"

/* The frame header takes at most 1 (type 0x01) + 8 (length) bytes. */
#define HEADERS_HDR_MAX 9

static int reserve_fields(vega_h3_conn *c, size_t n)
{
    if (n <= c->wfields_cap)
        return 0;
    if (n > SIZE_MAX / sizeof *c->wfields)
        return -ENOMEM;
    vega_http_field *f = vega__mem_realloc(c->mem, c->wfields, n * sizeof *f);
    if (!f)
        return -ENOMEM;
    c->wfields = f;
    c->wfields_cap = n;
    return 0;
}

/* Checks the regular fields, then puts them behind the np pseudo-header fields already in
 * c->wfields. Returns the total, or -EINVAL. */
static vega_ssize gather(vega_h3_conn *c, size_t np, const vega_http_field *fields, size_t n,
                         bool request)
{
    if (!fields && n)
        return -EINVAL;
    uint64_t size = 0;
    for (size_t i = 0; i < n; i++) {
        if (!vega__h3_field_ok(&fields[i], request))
            return -EINVAL;
        c->wfields[np + i] = fields[i];
    }
    for (size_t i = 0; i < np + n; i++)
        size += (uint64_t)c->wfields[i].name.len + c->wfields[i].value.len + 32;
    /* RFC 9114 §4.2.2: "An implementation that has received this parameter SHOULD NOT send an
     * HTTP message header that exceeds the indicated size". */
    if (size > c->peer.max_field_section_size)
        return -EINVAL;
    return (vega_ssize)(np + n);
}

static vega_ssize headers_frame(vega_h3_conn *c, uint64_t stream_id, size_t n, uint8_t *out,
                                size_t cap)
{
    size_t bound = vega_qpack_encode_bound(c->wfields, n);
    if (!out || bound == SIZE_MAX || !vega__fits(HEADERS_HDR_MAX, bound, cap))
        return VEGA_ERR_NOBUF;
    vega_ssize k = vega_qpack_encoder_encode(c->qenc, stream_id, c->wfields, n,
                                             out + HEADERS_HDR_MAX, cap - HEADERS_HDR_MAX);
    if (k < 0)
        return k;
    size_t h = 1 + vega__h3_varint_len((uint64_t)k);
    out[0] = VEGA__H3_FRAME_HEADERS;
    vega__h3_varint_put(out + 1, HEADERS_HDR_MAX - 1, (uint64_t)k);
    memmove(out + h, out + HEADERS_HDR_MAX, (size_t)k);
    return (vega_ssize)h + k;
}

static bool value_ok(vega_http_str v)
{
    return v.ptr && vega__h3_value_ok(v.ptr, v.len);
}

static bool pseudo_ok(const vega_h3_conn *c, const vega_h3_request *r, int *err)
{
    *err = -EINVAL;
    if (!r->method.ptr || !vega_http_token_is_valid(r->method.ptr, r->method.len))
        return false;
    bool connect = vega_http_str_eq(r->method, "CONNECT");
    if ((r->authority.ptr && !value_ok(r->authority)) || (r->scheme.ptr && !value_ok(r->scheme)) ||
        (r->path.ptr && !value_ok(r->path)) || (r->protocol.ptr && !value_ok(r->protocol)))
        return false;
    if (r->protocol.ptr) {
        /* RFC 9220 §3: "A client MUST NOT send a CONNECT request with the :protocol
         * pseudo-header unless the server has sent SETTINGS_ENABLE_CONNECT_PROTOCOL = 1." */
        if (!c->settings_received) {
            *err = -EAGAIN;
            return false;
        }
        return connect && c->peer.enable_connect_protocol && r->protocol.len && r->scheme.ptr &&
               r->scheme.len && r->path.ptr && r->path.len && r->authority.ptr && r->authority.len;
    }
    if (connect) /* RFC 9114 §4.4 */
        return !r->scheme.ptr && !r->path.ptr && r->authority.ptr && r->authority.len;
    return r->scheme.ptr && r->scheme.len && r->path.ptr && r->path.len;
}

vega_ssize vega_h3_conn_write_request_head(vega_h3_conn *c, uint64_t stream_id,
                                           const vega_h3_request *req,
                                           const vega_http_field *fields, size_t n, uint8_t *out,
                                           size_t cap)
{
    if (c->server || !req || !vega__h3_id_client_bidi(stream_id) ||
        stream_id > VEGA__H3_VARINT_MAX || vega__h3_stream_find(c, stream_id))
        return -EINVAL;
    /* RFC 9114 §5.2: "Endpoints MUST NOT initiate new requests ... after receipt of a GOAWAY
     * frame from the peer." */
    if (c->goaway_received)
        return VEGA_ERR_H3_GOAWAY;
    int err;
    if (!pseudo_ok(c, req, &err))
        return err;
    if (n > SIZE_MAX - 5 || reserve_fields(c, n + 5) < 0)
        return -ENOMEM;
    size_t np = 0;
    c->wfields[np++] = (vega_http_field){VEGA_HTTP_LIT(":method"), req->method};
    if (req->scheme.ptr)
        c->wfields[np++] = (vega_http_field){VEGA_HTTP_LIT(":scheme"), req->scheme};
    if (req->authority.ptr)
        c->wfields[np++] = (vega_http_field){VEGA_HTTP_LIT(":authority"), req->authority};
    if (req->path.ptr)
        c->wfields[np++] = (vega_http_field){VEGA_HTTP_LIT(":path"), req->path};
    if (req->protocol.ptr)
        c->wfields[np++] = (vega_http_field){VEGA_HTTP_LIT(":protocol"), req->protocol};
    vega_ssize total = gather(c, np, fields, n, true);
    if (total < 0)
        return total;
    /* The response is read on this stream: its state exists before anything is encoded. */
    struct vega__h3_stream *s = vega__h3_stream_new(c, stream_id, VEGA__H3_REQUEST);
    if (!s)
        return -ENOMEM;
    s->head_request = vega_http_str_eq(req->method, "HEAD");
    s->connect = vega_http_str_eq(req->method, "CONNECT");
    vega_ssize k = headers_frame(c, stream_id, (size_t)total, out, cap);
    if (k < 0)
        vega__h3_stream_free(c, s);
    return k;
}

vega_ssize vega_h3_conn_write_response_head(vega_h3_conn *c, uint64_t stream_id, int status,
                                            const vega_http_field *fields, size_t n, uint8_t *out,
                                            size_t cap)
{
    /* RFC 9114 §4.5: "HTTP/3 does not support ... the 101 (Switching Protocols) informational
     * status code". */
    if (!c->server || !vega__h3_id_client_bidi(stream_id) || stream_id > VEGA__H3_VARINT_MAX ||
        status < 100 || status > 599 || status == 101)
        return -EINVAL;
    if (n > SIZE_MAX - 1 || reserve_fields(c, n + 1) < 0)
        return -ENOMEM;
    char *st = c->wfields_status;
    st[0] = (char)('0' + status / 100);
    st[1] = (char)('0' + status / 10 % 10);
    st[2] = (char)('0' + status % 10);
    c->wfields[0] = (vega_http_field){VEGA_HTTP_LIT(":status"), {st, 3}};
    vega_ssize total = gather(c, 1, fields, n, false);
    if (total < 0)
        return total;
    return headers_frame(c, stream_id, (size_t)total, out, cap);
}

vega_ssize vega_h3_conn_write_trailers(vega_h3_conn *c, uint64_t stream_id,
                                       const vega_http_field *fields, size_t n, uint8_t *out,
                                       size_t cap)
{
    if (!vega__h3_id_client_bidi(stream_id) || stream_id > VEGA__H3_VARINT_MAX)
        return -EINVAL;
    if (reserve_fields(c, n ? n : 1) < 0)
        return -ENOMEM;
    /* RFC 9114 §4.3: "Pseudo-header fields MUST NOT appear in trailer sections." (gather refuses
     * any name with a colon); TE belongs in request headers only. */
    vega_ssize total = gather(c, 0, fields, n, false);
    if (total < 0)
        return total;
    return headers_frame(c, stream_id, (size_t)total, out, cap);
}
