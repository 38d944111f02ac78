/* SPDX-License-Identifier: MIT */
/* The control streams (RFC 9114 §6.2.1): our SETTINGS (§7.2.4, with a reserved setting,
 * §7.2.4.1), and the peer's control frames: SETTINGS exactly once and first, GOAWAY (§7.2.6,
 * §5.2), MAX_PUSH_ID (§7.2.7), CANCEL_PUSH (§7.2.3), PRIORITY_UPDATE (RFC 9218 §7.2), reserved
 * and unknown frames skipped, HTTP/2-only and request-stream frames refused. */
#include <stdlib.h>
#include <string.h>

#include "h3_core_int.h"

/* ---- our SETTINGS -------------------------------------------------------------------------- */

static size_t put_setting(uint8_t *p, uint64_t id, uint64_t v)
{
    size_t n = vega__h3_varint_put(p, 16, id);
    return n + vega__h3_varint_put(p + n, 16, v);
}

int vega__h3_settings_queue(vega_h3_conn *c)
{
    uint8_t pl[128];
    size_t n = 0;
    vega_qpack_decoder *d = c->qdec;
    if (d->max_capacity)
        n += put_setting(pl + n, VEGA__H3_SETTINGS_QPACK_MAX_TABLE_CAPACITY, d->max_capacity);
    n += put_setting(pl + n, VEGA__H3_SETTINGS_MAX_FIELD_SECTION_SIZE, c->max_section);
    if (d->max_blocked)
        n += put_setting(pl + n, VEGA__H3_SETTINGS_QPACK_BLOCKED_STREAMS, d->max_blocked);
    /* RFC 9220 §3: the server advertises extended CONNECT; the setting means nothing from a
     * client. */
    if (c->server && c->connect_protocol)
        n += put_setting(pl + n, VEGA__H3_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1);
    if (c->datagram)
        n += put_setting(pl + n, VEGA__H3_SETTINGS_H3_DATAGRAM, 1);
    /* RFC 9114 §7.2.4.1: "Endpoints SHOULD include at least one such setting in their SETTINGS
     * frame." The caller's seed picks N and the value. */
    if (c->grease) {
        uint64_t seed = c->grease_seed ? c->grease_seed : 0x2a5f3c19e4d7b68bull;
        uint64_t id = 0x1f * (seed % 0x7ffff) + 0x21;
        n += put_setting(pl + n, id, (seed >> 20) & 0x3fffffff);
    }
    uint8_t hdr[16];
    size_t h = vega__h3_varint_put(hdr, sizeof hdr, VEGA__H3_FRAME_SETTINGS);
    h += vega__h3_varint_put(hdr + h, sizeof hdr - h, n);
    int rc = vega__qp_buf_append(&c->ctrl_out, hdr, h);
    return rc < 0 ? rc : vega__qp_buf_append(&c->ctrl_out, pl, n);
}

/* ---- the peer's SETTINGS ------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* RFC 9114 §7.2.4: "The same setting identifier MUST NOT occur more than once in the SETTINGS
 * frame. A receiver MAY treat the presence of duplicate setting identifiers as a connection
 * error of type H3_SETTINGS_ERROR." We do, for every identifier. */
static int check_duplicates(vega_h3_conn *c, const uint8_t *p, size_t n)
{
    size_t count = 0;
    for (size_t at = 0; at < n;) {
        uint64_t id, v;
        size_t a = vega__h3_varint_get(p + at, n - at, &id);
        size_t b = a ? vega__h3_varint_get(p + at + a, n - at - a, &v) : 0;
        if (!a || !b)
            return vega__h3_fail(c, VEGA_H3_FRAME_ERROR, "SETTINGS frame truncated");
        at += a + b;
        count++;
    }
    if (count < 2)
        return 0;
    uint64_t *ids = vega__mem_malloc(c->mem, count * sizeof *ids);
    if (!ids)
        return -ENOMEM;
    size_t i = 0;
    for (size_t at = 0; at < n; i++) {
        uint64_t v;
        at += vega__h3_varint_get(p + at, n - at, &ids[i]);
        at += vega__h3_varint_get(p + at, n - at, &v);
    }
    qsort(ids, count, sizeof *ids, cmp_u64);
    bool dup = false;
    for (i = 1; i < count && !dup; i++)
        dup = ids[i] == ids[i - 1];
    vega__mem_free(c->mem, ids);
    return dup ? vega__h3_fail(c, VEGA_H3_SETTINGS_ERROR, "duplicate setting") : 0;
}

static int one_setting(vega_h3_conn *c, vega_h3_settings *s, uint64_t id, uint64_t v)
{
    switch (id) {
    case VEGA__H3_SETTINGS_QPACK_MAX_TABLE_CAPACITY:
        s->qpack_max_table_capacity = v;
        return 0;
    case VEGA__H3_SETTINGS_MAX_FIELD_SECTION_SIZE:
        s->max_field_section_size = v;
        return 0;
    case VEGA__H3_SETTINGS_QPACK_BLOCKED_STREAMS:
        s->qpack_blocked_streams = v;
        return 0;
    case VEGA__H3_SETTINGS_ENABLE_CONNECT_PROTOCOL:
    case VEGA__H3_SETTINGS_H3_DATAGRAM:
        /* RFC 9220 §3 and RFC 9297 §2.1.1: values other than 0 and 1 are H3_SETTINGS_ERROR. */
        if (v > 1)
            return vega__h3_fail(c, VEGA_H3_SETTINGS_ERROR, "boolean setting above 1");
        if (id == VEGA__H3_SETTINGS_H3_DATAGRAM)
            s->h3_datagram = v;
        else
            s->enable_connect_protocol = v;
        return 0;
    case 0x02:
    case 0x03:
    case 0x04:
    case 0x05:
        /* §7.2.4.1: "Setting identifiers that were defined in [HTTP/2] where there is no
         * corresponding HTTP/3 setting have also been reserved ... their receipt MUST be treated
         * as a connection error of type H3_SETTINGS_ERROR." */
        return vega__h3_fail(c, VEGA_H3_SETTINGS_ERROR, "HTTP/2 setting in HTTP/3 SETTINGS");
    default:
        return 0; /* "An implementation MUST ignore any parameter with an identifier it does not
                     understand." */
    }
}

static int settings(vega_h3_conn *c, const uint8_t *p, size_t n)
{
    int rc = check_duplicates(c, p, n);
    if (rc < 0)
        return rc;
    vega_h3_settings s = {.max_field_section_size = UINT64_MAX};
    for (size_t at = 0; at < n;) {
        uint64_t id, v;
        at += vega__h3_varint_get(p + at, n - at, &id);
        at += vega__h3_varint_get(p + at, n - at, &v);
        rc = one_setting(c, &s, id, v);
        if (rc < 0)
            return rc;
    }
    c->peer = s;
    c->settings_received = true;
    rc = vega_qpack_encoder_set_peer_settings(c->qenc, s.qpack_max_table_capacity,
                                              s.qpack_blocked_streams);
    if (VEGA_NEVER(rc < 0))
        return vega__h3_fail(c, VEGA_H3_INTERNAL_ERROR, "QPACK encoder refused the settings");
    if (c->cb.on_settings)
        return vega__h3_cb(c, c->cb.on_settings(c->ud, &c->peer));
    return 0;
}

/* ---- other control frames ------------------------------------------------------------------ */

/* §7.1: "Each frame's payload MUST contain exactly the fields identified in its description."
 * These carry one varint. */
static int one_varint(vega_h3_conn *c, const uint8_t *p, size_t n, uint64_t *v)
{
    size_t k = vega__h3_varint_get(p, n, v);
    if (k == 0 || k != n)
        return vega__h3_fail(c, VEGA_H3_FRAME_ERROR, "control frame payload is not one varint");
    return 0;
}

static int goaway(vega_h3_conn *c, const uint8_t *p, size_t n)
{
    uint64_t id;
    int rc = one_varint(c, p, n, &id);
    if (rc < 0)
        return rc;
    /* §7.2.6: "A client MUST treat receipt of a GOAWAY frame containing a stream ID of any other
     * type as a connection error of type H3_ID_ERROR." */
    if (!c->server && !vega__h3_id_client_bidi(id))
        return vega__h3_fail(c, VEGA_H3_ID_ERROR,
                             "GOAWAY with a stream id that is not a request's");
    /* §5.2: "Receiving a GOAWAY containing a larger identifier than previously received MUST be
     * treated as a connection error of type H3_ID_ERROR." */
    if (c->goaway_received && id > c->goaway_in)
        return vega__h3_fail(c, VEGA_H3_ID_ERROR, "GOAWAY identifier increased");
    c->goaway_received = true;
    c->goaway_in = id;
    return c->cb.on_goaway ? vega__h3_cb(c, c->cb.on_goaway(c->ud, id)) : 0;
}

static int max_push_id(vega_h3_conn *c, const uint8_t *p, size_t n)
{
    uint64_t id;
    int rc = one_varint(c, p, n, &id);
    if (rc < 0)
        return rc;
    /* §7.2.7: "receipt of a MAX_PUSH_ID frame that contains a smaller value than previously
     * received MUST be treated as a connection error of type H3_ID_ERROR." (We never push.) */
    if (c->max_push_received && id < c->max_push_id)
        return vega__h3_fail(c, VEGA_H3_ID_ERROR, "MAX_PUSH_ID decreased");
    c->max_push_received = true;
    c->max_push_id = id;
    return 0;
}

static int cancel_push(vega_h3_conn *c, const uint8_t *p, size_t n)
{
    uint64_t id;
    int rc = one_varint(c, p, n, &id);
    if (rc < 0)
        return rc;
    /* §7.2.3: a client never allowed a push (we send no MAX_PUSH_ID), so any push id is "greater
     * than currently allowed"; a server never promised one, so it was "not yet mentioned by a
     * PUSH_PROMISE frame": H3_ID_ERROR either way. */
    return vega__h3_fail(c, VEGA_H3_ID_ERROR, "CANCEL_PUSH for a push that cannot exist");
}

static int priority_update(vega_h3_conn *c, uint64_t type, const uint8_t *p, size_t n)
{
    uint64_t id;
    size_t k = vega__h3_varint_get(p, n, &id);
    if (k == 0)
        return vega__h3_fail(c, VEGA_H3_FRAME_ERROR, "PRIORITY_UPDATE truncated");
    /* RFC 9218 §7.2: the request variant "MUST reference a request stream" (H3_ID_ERROR
     * otherwise); the push variant needs a promised push, and we never promise one. */
    if (type == VEGA__H3_FRAME_PRIORITY_PUSH || !vega__h3_id_client_bidi(id))
        return vega__h3_fail(c, VEGA_H3_ID_ERROR, "PRIORITY_UPDATE for no request stream");
    vega_h3_priority prio;
    /* An unparsable Priority Field Value leaves the defaults (RFC 8941 §4.2: a field that fails
     * to parse is ignored). */
    (void)vega_h3_priority_parse((const char *)p + k, n - k, &prio);
    if (c->cb.on_priority_update)
        return vega__h3_cb(c, c->cb.on_priority_update(c->ud, id, &prio));
    return 0;
}

static int control_frame(vega_h3_conn *c, uint64_t type, const uint8_t *p, size_t n)
{
    switch (type) {
    case VEGA__H3_FRAME_SETTINGS:
        return settings(c, p, n);
    case VEGA__H3_FRAME_GOAWAY:
        return goaway(c, p, n);
    case VEGA__H3_FRAME_MAX_PUSH_ID:
        return max_push_id(c, p, n);
    case VEGA__H3_FRAME_CANCEL_PUSH:
        return cancel_push(c, p, n);
    default:
        return priority_update(c, type, p, n);
    }
}

/* Checks a control frame's type when its header is in; true when its payload is kept. */
static int frame_start(vega_h3_conn *c, struct vega__h3_stream *s, bool *keep)
{
    uint64_t t = s->ftype;
    *keep = false;
    if (!s->first_frame_done) {
        /* §6.2.1: "If the first frame of the control stream is any other frame type, this MUST
         * be treated as a connection error of type H3_MISSING_SETTINGS." */
        if (t != VEGA__H3_FRAME_SETTINGS)
            return vega__h3_fail(c, VEGA_H3_MISSING_SETTINGS, "control stream without SETTINGS");
        s->first_frame_done = true;
    } else if (t == VEGA__H3_FRAME_SETTINGS) {
        /* §7.2.4: "If an endpoint receives a second SETTINGS frame on the control stream, the
         * endpoint MUST respond with a connection error of type H3_FRAME_UNEXPECTED." */
        return vega__h3_fail(c, VEGA_H3_FRAME_UNEXPECTED, "second SETTINGS frame");
    }
    switch (t) {
    case VEGA__H3_FRAME_DATA:         /* §7.2.1 */
    case VEGA__H3_FRAME_HEADERS:      /* §7.2.2 */
    case VEGA__H3_FRAME_PUSH_PROMISE: /* §7.2.5 */
    case 0x02:                        /* HTTP/2 PRIORITY, PING, WINDOW_UPDATE, CONTINUATION: */
    case 0x06:                        /* §7.2.8 "their receipt MUST be treated as a connection */
    case 0x08:                        /* error of type H3_FRAME_UNEXPECTED" */
    case 0x09:
        return vega__h3_fail(c, VEGA_H3_FRAME_UNEXPECTED, "frame not allowed on a control stream");
    case VEGA__H3_FRAME_MAX_PUSH_ID:
        /* §7.2.7: "A client MUST treat the receipt of a MAX_PUSH_ID frame as a connection error
         * of type H3_FRAME_UNEXPECTED." */
        if (!c->server)
            return vega__h3_fail(c, VEGA_H3_FRAME_UNEXPECTED, "MAX_PUSH_ID from a server");
        break;
    case VEGA__H3_FRAME_PRIORITY_UPDATE:
    case VEGA__H3_FRAME_PRIORITY_PUSH:
        /* RFC 9218 §7.2: "If a client receives a PRIORITY_UPDATE frame, it MUST respond with a
         * connection error of type H3_FRAME_UNEXPECTED." */
        if (!c->server)
            return vega__h3_fail(c, VEGA_H3_FRAME_UNEXPECTED, "PRIORITY_UPDATE from a server");
        break;
    case VEGA__H3_FRAME_SETTINGS:
    case VEGA__H3_FRAME_GOAWAY:
    case VEGA__H3_FRAME_CANCEL_PUSH:
        break;
    default:
        return 0; /* reserved or unknown: skipped unbuffered (§7.2.8, §9) */
    }
    if (s->flen > c->max_control)
        return vega__h3_fail(c, VEGA_H3_EXCESSIVE_LOAD, "control frame over max_control_frame");
    *keep = true;
    return 0;
}

static bool is_kept(const vega_h3_conn *c, const struct vega__h3_stream *s)
{
    (void)c;
    switch (s->ftype) {
    case VEGA__H3_FRAME_SETTINGS:
    case VEGA__H3_FRAME_GOAWAY:
    case VEGA__H3_FRAME_MAX_PUSH_ID:
    case VEGA__H3_FRAME_CANCEL_PUSH:
    case VEGA__H3_FRAME_PRIORITY_UPDATE:
    case VEGA__H3_FRAME_PRIORITY_PUSH:
        return true;
    default:
        return false;
    }
}

/* The payload bytes of a kept frame; processes it once whole. */
static int payload(vega_h3_conn *c, struct vega__h3_stream *s, const uint8_t *p, size_t n)
{
    if (s->buf_len == 0 && n == s->flen)
        return control_frame(c, s->ftype, p, n); /* whole in this input: read in place */
    if (!s->buf) {
        s->buf = vega__mem_malloc(c->mem, (size_t)s->flen);
        if (!s->buf)
            return -ENOMEM;
    }
    memcpy(s->buf + s->buf_len, p, n);
    s->buf_len += n;
    if (s->buf_len < s->flen)
        return 0;
    int rc = control_frame(c, s->ftype, s->buf, s->buf_len);
    vega__mem_free(c->mem, s->buf);
    s->buf = NULL;
    s->buf_len = 0;
    return rc;
}

vega_ssize vega__h3_control_read(vega_h3_conn *c, struct vega__h3_stream *s, const uint8_t *in,
                                 size_t len, bool fin)
{
    size_t at = 0;
    while (at < len || (s->in_frame && s->fleft == 0)) {
        if (!s->in_frame) {
            at += vega__h3_frame_header(s, in + at, len - at);
            if (!s->in_frame)
                break;
            bool keep;
            int rc = frame_start(c, s, &keep);
            if (rc < 0)
                return rc;
            if (!keep)
                s->ftype = UINT64_MAX; /* skip: never a kept type */
            continue;
        }
        size_t n = (size_t)VEGA__MIN((uint64_t)(len - at), s->fleft);
        s->fleft -= n;
        if (is_kept(c, s)) {
            int rc = payload(c, s, in + at, n);
            if (rc < 0)
                return rc;
        }
        at += n;
        if (s->fleft == 0)
            s->in_frame = false;
    }
    /* §6.2.1: "If either control stream is closed at any point, this MUST be treated as a
     * connection error of type H3_CLOSED_CRITICAL_STREAM." */
    if (fin)
        return vega__h3_fail(c, VEGA_H3_CLOSED_CRITICAL_STREAM,
                             "the peer closed its control stream");
    return (vega_ssize)at;
}
