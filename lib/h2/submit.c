/* SPDX-License-Identifier: MIT */
/* What the application asks of an HTTP/2 connection: requests (RFC 9113 §8.3.1), responses
 * and informational responses (§8.3.2), trailers (§8.1), body spans, consumption, RST_STREAM
 * (§6.4), PING (§6.7), GOAWAY and the graceful shutdown (§6.8), and RFC 9218's
 * PRIORITY_UPDATE. */
#include <string.h>

#include "h2_int.h"

/* Copies a header section for the write path (encoded only when it goes out). */
static struct h2_hblock *hblock_new(vega_h2_conn *c, const vega_hpack_field *f, size_t n)
{
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        bytes = vega__sat_add(bytes, f[i].name.len);
        bytes = vega__sat_add(bytes, f[i].value.len);
    }
    if (n > (SIZE_MAX / 2) / sizeof(vega_hpack_field) || bytes > SIZE_MAX / 2)
        return NULL;
    size_t size = sizeof(struct h2_hblock) + n * sizeof(vega_hpack_field) + bytes;
    struct h2_hblock *b = vega__mem_malloc(c->o.mem, size);
    if (!b)
        return NULL;
    memset(b, 0, sizeof *b);
    b->n = n;
    char *p = (char *)(b->f + n);
    for (size_t i = 0; i < n; i++) {
        b->f[i] = f[i];
        b->f[i].name.ptr = p;
        if (f[i].name.len)
            memcpy(p, f[i].name.ptr, f[i].name.len);
        p += f[i].name.len;
        b->f[i].value.ptr = p;
        if (f[i].value.len)
            memcpy(p, f[i].value.ptr, f[i].value.len);
        p += f[i].value.len;
    }
    return b;
}

static void hblock_push(vega_h2_conn *c, struct vega_h2_stream *s, struct h2_hblock *b)
{
    if (s->hq_tail)
        s->hq_tail->next = b;
    else
        s->hq = b;
    s->hq_tail = b;
    vega__h2_sq_add(c, s);
}

/* A stream we may still send on. */
static struct vega_h2_stream *sendable(vega_h2_conn *c, int32_t id)
{
    struct vega_h2_stream *s = vega__h2_stream_find(c, id);
    return s && !s->closing && !s->tx_end ? s : NULL;
}

int vega_h2_submit_request(vega_h2_conn *c, const vega_hpack_field *fields, size_t n,
                           unsigned flags, void *stream_user_data, int32_t *stream_id)
{
    if (!c || c->server || (flags & ~(unsigned)VEGA_H2_FLAG_END_STREAM) || (!fields && n))
        return -EINVAL;
    if (c->dead_rc)
        return VEGA_ERR_CLOSED;
    vega_h2_head h;
    if (vega__h2_validate_out(c, VEGA_H2_HEAD_REQUEST, fields, n, &h) < 0)
        return -EINVAL;
    /* RFC 8441 §4: "A client MUST NOT send a CONNECT request with the :protocol pseudo-header
     * unless the server has sent SETTINGS_ENABLE_CONNECT_PROTOCOL with a value of 1" -- and
     * the server's SETTINGS must have come to know. */
    if (h.protocol.ptr && !c->peer_settings_seen)
        return -EAGAIN;
    if (h.protocol.ptr && !c->peer.enable_connect_protocol)
        return -EOPNOTSUPP;
    /* §6.8: after a GOAWAY either way no new stream starts; §5.1.1: "Stream identifiers
     * cannot be reused." */
    if (c->goaway_sent || c->goaway_received || c->next_id > H2_MAX_STREAM_ID)
        return VEGA_ERR_H2_GOING_AWAY;
    /* §5.1.2: "Endpoints MUST NOT exceed the limit set by their peer." */
    if (c->nstreams >= VEGA__MIN(c->peer.max_concurrent_streams, c->o.max_local_streams))
        return VEGA_ERR_H2_STREAM_LIMIT;
    struct h2_hblock *b = hblock_new(c, fields, n);
    if (!b)
        return -ENOMEM;
    struct vega_h2_stream *s = vega__h2_stream_new(c, (int32_t)c->next_id);
    if (!s) {
        vega__mem_free(c->o.mem, b);
        return -ENOMEM;
    }
    c->next_id += 2;
    s->user_data = stream_user_data;
    s->head_req = vega_http_str_eq(h.method, "HEAD");
    s->connect = vega_http_str_eq(h.method, "CONNECT");
    s->tx_final = true;
    s->rx = H2_RX_HEADERS;
    b->end_stream = flags & VEGA_H2_FLAG_END_STREAM;
    s->tx_end = b->end_stream;
    hblock_push(c, s, b);
    if (stream_id)
        *stream_id = s->id;
    return 0;
}

int vega_h2_submit_response(vega_h2_conn *c, int32_t stream_id, const vega_hpack_field *fields,
                            size_t n, unsigned flags)
{
    if (!c || !c->server || (flags & ~(unsigned)VEGA_H2_FLAG_END_STREAM) || (!fields && n))
        return -EINVAL;
    if (c->dead_rc)
        return VEGA_ERR_CLOSED;
    struct vega_h2_stream *s = sendable(c, stream_id);
    if (!s || s->tx_final)
        return VEGA_ERR_H2_STREAM_CLOSED;
    vega_h2_head h;
    if (vega__h2_validate_out(c, VEGA_H2_HEAD_RESPONSE, fields, n, &h) < 0)
        return -EINVAL;
    bool info = h.kind == VEGA_H2_HEAD_INFORMATIONAL;
    if (info && (flags & VEGA_H2_FLAG_END_STREAM))
        return -EINVAL; /* §8.1: an informational response never ends the stream */
    struct h2_hblock *b = hblock_new(c, fields, n);
    if (!b)
        return -ENOMEM;
    b->end_stream = flags & VEGA_H2_FLAG_END_STREAM;
    s->tx_final = !info;
    s->tx_end = b->end_stream;
    hblock_push(c, s, b);
    return 0;
}

int vega_h2_submit_trailers(vega_h2_conn *c, int32_t stream_id, const vega_hpack_field *fields,
                            size_t n)
{
    if (!c || (!fields && n))
        return -EINVAL;
    if (c->dead_rc)
        return VEGA_ERR_CLOSED;
    struct vega_h2_stream *s = sendable(c, stream_id);
    if (!s || !s->tx_final)
        return VEGA_ERR_H2_STREAM_CLOSED;
    vega_h2_head h;
    if (vega__h2_validate_out(c, VEGA_H2_HEAD_TRAILERS, fields, n, &h) < 0)
        return -EINVAL;
    struct h2_hblock *b = hblock_new(c, fields, n);
    if (!b)
        return -ENOMEM;
    b->end_stream = true;
    b->trailers = true;
    s->tx_end = true;
    hblock_push(c, s, b);
    return 0;
}

vega_ssize vega_h2_stream_write(vega_h2_conn *c, int32_t stream_id, const uint8_t *data, size_t len,
                                unsigned flags)
{
    if (!c || (flags & ~(unsigned)VEGA_H2_FLAG_END_STREAM) || (!data && len))
        return -EINVAL;
    if (c->dead_rc)
        return VEGA_ERR_CLOSED;
    bool end = flags & VEGA_H2_FLAG_END_STREAM;
    struct vega_h2_stream *s = sendable(c, stream_id);
    if (!s || !s->tx_final)
        return VEGA_ERR_H2_STREAM_CLOSED;
    if (s->span_active) {
        /* The pending span becomes the last one; more bytes wait. */
        if (end && len == 0) {
            s->span_end = s->tx_end = true;
            vega__h2_sq_add(c, s);
        }
        return 0;
    }
    if (len == 0 && !end)
        return 0;
    s->span = data;
    s->span_len = len;
    s->span_off = 0;
    s->span_active = true;
    s->span_end = end;
    s->tx_end = end;
    vega__h2_stream_unblocked(c, s);
    return (vega_ssize)len;
}

int vega_h2_submit_rst_stream(vega_h2_conn *c, int32_t stream_id, uint32_t error_code)
{
    if (!c)
        return -EINVAL;
    struct vega_h2_stream *s = vega__h2_stream_find(c, stream_id);
    if (!s || s->closing)
        return VEGA_ERR_H2_STREAM_CLOSED;
    /* §5.1: "RST_STREAM frames MUST NOT be sent for a stream in the "idle" state": a request
     * whose HEADERS never left is dropped without a frame (its id is skipped). */
    if (c->server || s->hdr_sent) {
        int rc = vega__h2_put_rst_stream(c, stream_id, error_code, false);
        if (rc < 0)
            return rc;
        vega__h2_closed_add(c, stream_id);
    }
    return vega__h2_stream_close(c, s, error_code, VEGA_H2_CLOSE_RESET_LOCAL);
}

int vega_h2_submit_ping(vega_h2_conn *c, uint64_t opaque)
{
    if (!c)
        return -EINVAL;
    if (c->dead_rc)
        return VEGA_ERR_CLOSED;
    int rc = vega__h2_put_ping(c, opaque, false);
    if (rc < 0)
        return rc;
    /* The newest H2_MAX_PINGS are timed for the RTT. */
    if (c->npings == H2_MAX_PINGS)
        memmove(c->pings, c->pings + 1, (H2_MAX_PINGS - 1) * sizeof c->pings[0]), c->npings--;
    c->pings[c->npings].opaque = opaque;
    c->pings[c->npings].at = c->now;
    c->npings++;
    return 0;
}

int vega_h2_submit_goaway(vega_h2_conn *c, uint32_t error_code, const uint8_t *debug, size_t len)
{
    if (!c || (!debug && len))
        return -EINVAL;
    if (c->dead_rc)
        return VEGA_ERR_CLOSED;
    int32_t last = c->server ? c->last_peer_id : 0;
    if (error_code == VEGA_H2_NO_ERROR) {
        int rc = vega__h2_queue_goaway(c, last, VEGA_H2_NO_ERROR, debug, len);
        if (rc == 0) {
            c->shutdown = 2;
            c->shutdown_deadline = VEGA_TSTAMP_MAX;
        }
        return rc;
    }
    /* An error: the connection ends (its GOAWAY from the reserved slot). */
    int rc = vega__h2_conn_error(c, error_code, "GOAWAY from the application");
    c->dead_rc = VEGA_ERR_CLOSED;
    return rc == VEGA_ERR_PROTO ? 0 : rc;
}

int vega_h2_conn_shutdown(vega_h2_conn *c, vega_tstamp now)
{
    if (!c)
        return -EINVAL;
    if (c->dead_rc)
        return VEGA_ERR_CLOSED;
    c->now = now;
    if (c->shutdown || (c->goaway_sent && !c->server))
        return 0;
    if (!c->server) {
        int rc = vega__h2_queue_goaway(c, 0, VEGA_H2_NO_ERROR, NULL, 0);
        if (rc == 0)
            c->shutdown = 2;
        return rc;
    }
    /* §6.8: "A server that is attempting to gracefully shut down a connection SHOULD send an
     * initial GOAWAY frame with the last stream identifier set to 2^31-1 and a NO_ERROR code.
     * This signals to the client that a shutdown is imminent and that initiating further
     * requests is prohibited. After allowing time for any in-flight stream creation (at least
     * one round-trip time), the server MAY send another GOAWAY frame with an updated last
     * stream identifier." The PING measures that round trip. */
    int rc = vega__h2_queue_goaway(c, H2_MAX_STREAM_ID, VEGA_H2_NO_ERROR, NULL, 0);
    if (rc == 0)
        rc = vega__h2_put_ping(c, H2_SHUTDOWN_PING, false);
    if (rc < 0)
        return rc;
    c->shutdown = 1;
    c->shutdown_deadline = vega__sat_add(now, c->o.shutdown_timeout_ms * VEGA_NS_PER_MS);
    return 0;
}

int vega_h2_submit_priority_update(vega_h2_conn *c, int32_t stream_id, const char *value,
                                   size_t len)
{
    if (!c || c->server || stream_id <= 0 || !(stream_id & 1) || len > H2_PRIO_VALUE_MAX ||
        (!value && len))
        return -EINVAL;
    for (size_t i = 0; i < len; i++)
        if (value[i] == 0 || value[i] == '\r' || value[i] == '\n')
            return -EINVAL;
    if (c->dead_rc)
        return VEGA_ERR_CLOSED;
    return vega__h2_put_priority_update(c, stream_id, value, len);
}
