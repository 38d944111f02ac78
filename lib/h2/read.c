/* SPDX-License-Identifier: MIT */
/* The HTTP/2 read path: the client preface (RFC 9113 §3.4), frame headers with the checks
 * every frame type needs before its payload (§4.2, §6), and the payload's split into padding,
 * priority fields and body (§6.1, §6.2) as it arrives in any pieces. */
#include <string.h>

#include "h2_int.h"

static const uint8_t magic[24] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static int conn_err(vega_h2_conn *c, uint32_t code, const char *why)
{
    return vega__h2_conn_error(c, code, why);
}

/* A frame whose error is the stream's when the stream exists, the connection's when it is
 * idle: RST_STREAM may not name an idle stream (§6.4, §5.1 "idle"). */
static int stream_or_conn_err(vega_h2_conn *c, int32_t sid, uint32_t code, const char *why)
{
    struct vega_h2_stream *s;
    enum h2_idstate st = vega__h2_id_state(c, sid, &s);
    if (st == H2_ID_IDLE)
        return conn_err(c, code, why);
    c->rd.ignore = true;
    if (st == H2_ID_CLOSED && vega__h2_closed_has(c, sid))
        return 0;
    return vega__h2_stream_error(c, s, sid, code);
}

/* Checks that do not depend on the frame type, then the type's own. */
static int frame_header(vega_h2_conn *c)
{
    struct h2_frame *f = &c->rd.f;
    c->rd.ignore = false;
    c->rd.small_len = 0;
    c->rd.body_start = 0;
    c->rd.body_end = f->len;
    c->rd.data_sid = 0;
    c->rd.end_done = false;
    c->rd.delivered = 0;
    /* §3.4: "The server connection preface consists of a potentially empty SETTINGS frame
     * (Section 6.5) that MUST be the first frame the server sends"; the client's likewise
     * follows its magic. "Clients and servers MUST treat an invalid connection preface as a
     * connection error of type PROTOCOL_ERROR." */
    if (c->rd.first_frame) {
        if (f->type != H2_SETTINGS || (f->flags & H2_F_ACK))
            return conn_err(c, VEGA_H2_PROTOCOL_ERROR, "the preface does not start with SETTINGS");
        c->rd.first_frame = false;
    }
    /* §4.2: "An endpoint MUST send an error code of FRAME_SIZE_ERROR if a frame exceeds the
     * size defined in SETTINGS_MAX_FRAME_SIZE". The frame cannot be read: a connection
     * error. */
    if (f->len > c->local.max_frame_size)
        return conn_err(c, VEGA_H2_FRAME_SIZE_ERROR, "frame larger than SETTINGS_MAX_FRAME_SIZE");
    /* §6.10: "A HEADERS frame without the END_HEADERS flag set MUST be followed by a
     * CONTINUATION frame for the same stream. A receiver MUST treat the receipt of any other
     * type of frame or a frame on a different stream as a connection error of type
     * PROTOCOL_ERROR." */
    if (c->hb.active && (f->type != H2_CONTINUATION || f->sid != c->hb.sid))
        return conn_err(c, VEGA_H2_PROTOCOL_ERROR, "frame inside a header block");
    bool stream0 = f->sid == 0;
    switch (f->type) {
    case H2_DATA:
        return vega__h2_recv_data_start(c);
    case H2_HEADERS:
        return vega__h2_headers_start(c);
    case H2_CONTINUATION:
        /* §6.10: "If the stream identifier field specifies the value 0x00, a recipient MUST
         * respond with a connection error of type PROTOCOL_ERROR." ... a CONTINUATION not
         * preceded by HEADERS, PUSH_PROMISE or CONTINUATION without END_HEADERS "MUST be
         * treated as a connection error of type PROTOCOL_ERROR". */
        if (!c->hb.active || stream0)
            return conn_err(c, VEGA_H2_PROTOCOL_ERROR, "CONTINUATION without a header block");
        /* CONTINUATION flood (2024): the number of frames per block is bounded, even when
         * they carry nothing. */
        if (++c->hb.conts > c->o.max_continuations)
            return conn_err(c, VEGA_H2_ENHANCE_YOUR_CALM, "too many CONTINUATION frames");
        if (f->len == 0 && !(f->flags & H2_F_END_HEADERS))
            return vega__h2_count_glitch(c, "empty CONTINUATION frames");
        return 0;
    case H2_PRIORITY:
        /* §6.3: "If a PRIORITY frame is received with a stream identifier of 0x00, the
         * recipient MUST respond with a connection error of type PROTOCOL_ERROR." ... "A
         * PRIORITY frame with a length other than 5 octets MUST be treated as a stream error
         * (Section 5.4.2) of type FRAME_SIZE_ERROR." */
        if (stream0)
            return conn_err(c, VEGA_H2_PROTOCOL_ERROR, "PRIORITY on stream 0");
        if (f->len != 5)
            return stream_or_conn_err(c, f->sid, VEGA_H2_FRAME_SIZE_ERROR, "PRIORITY length");
        return 0;
    case H2_RST_STREAM:
        /* §6.4: stream 0 is a PROTOCOL_ERROR; "A RST_STREAM frame with a length other than 4
         * octets MUST be treated as a connection error of type FRAME_SIZE_ERROR." */
        if (stream0)
            return conn_err(c, VEGA_H2_PROTOCOL_ERROR, "RST_STREAM on stream 0");
        if (f->len != 4)
            return conn_err(c, VEGA_H2_FRAME_SIZE_ERROR, "RST_STREAM length");
        return 0;
    case H2_SETTINGS:
        /* §6.5: "If an endpoint receives a SETTINGS frame whose Stream Identifier field is
         * anything other than 0x00, the endpoint MUST respond with a connection error of type
         * PROTOCOL_ERROR." "Receipt of a SETTINGS frame with the ACK flag set and a length
         * field value other than 0 MUST be treated as a connection error of type
         * FRAME_SIZE_ERROR." "A SETTINGS frame with a length other than a multiple of 6
         * octets MUST be treated as a connection error of type FRAME_SIZE_ERROR." */
        if (!stream0)
            return conn_err(c, VEGA_H2_PROTOCOL_ERROR, "SETTINGS on a stream");
        if (((f->flags & H2_F_ACK) && f->len) || f->len % 6)
            return conn_err(c, VEGA_H2_FRAME_SIZE_ERROR, "SETTINGS length");
        return 0;
    case H2_PUSH_PROMISE:
        /* §8.4: "A client cannot push. Thus, servers MUST treat the receipt of a PUSH_PROMISE
         * frame as a connection error of type PROTOCOL_ERROR." §6.6: a client that disabled
         * push (we send SETTINGS_ENABLE_PUSH 0 in the preface) treats it the same way. */
        return conn_err(c, VEGA_H2_PROTOCOL_ERROR, "PUSH_PROMISE (push is disabled)");
    case H2_PING:
        /* §6.7: "If a PING frame is received with a Stream Identifier field value other than
         * 0x00, the recipient MUST respond with a connection error of type PROTOCOL_ERROR.
         * Receipt of a PING frame with a length field value other than 8 MUST be treated as a
         * connection error of type FRAME_SIZE_ERROR." */
        if (!stream0)
            return conn_err(c, VEGA_H2_PROTOCOL_ERROR, "PING on a stream");
        if (f->len != 8)
            return conn_err(c, VEGA_H2_FRAME_SIZE_ERROR, "PING length");
        return 0;
    case H2_GOAWAY:
        /* §6.8: "An endpoint MUST treat a GOAWAY frame with a stream identifier other than
         * 0x00 as a connection error of type PROTOCOL_ERROR." Less than 8 bytes cannot hold
         * its fields (§4.2). */
        if (!stream0)
            return conn_err(c, VEGA_H2_PROTOCOL_ERROR, "GOAWAY on a stream");
        if (f->len < 8)
            return conn_err(c, VEGA_H2_FRAME_SIZE_ERROR, "GOAWAY length");
        return 0;
    case H2_WINDOW_UPDATE:
        /* §6.9: "A WINDOW_UPDATE frame with a length other than 4 octets MUST be treated as a
         * connection error of type FRAME_SIZE_ERROR." */
        if (f->len != 4)
            return conn_err(c, VEGA_H2_FRAME_SIZE_ERROR, "WINDOW_UPDATE length");
        return 0;
    case H2_PRIORITY_UPDATE:
        /* RFC 9218 §7.1: "If a client receives a PRIORITY_UPDATE frame, it MUST respond with
         * a connection error of type PROTOCOL_ERROR." ... "If a PRIORITY_UPDATE frame is
         * received with a Stream Identifier other than 0x0, the recipient MUST respond with a
         * connection error of type PROTOCOL_ERROR." */
        if (!c->server || !stream0)
            return conn_err(c, VEGA_H2_PROTOCOL_ERROR, "misplaced PRIORITY_UPDATE");
        if (f->len < 4)
            return conn_err(c, VEGA_H2_FRAME_SIZE_ERROR, "PRIORITY_UPDATE length");
        return 0;
    default:
        /* §4.1: "Implementations MUST ignore and discard frames of unknown types." */
        c->rd.ignore = true;
        return 0;
    }
}

/* DATA and HEADERS: the Pad Length byte (§6.1, §6.2), HEADERS' priority fields, the body, and
 * the padding, wherever the pieces of input fall. */
static int padded_payload(vega_h2_conn *c, const uint8_t *p, size_t n)
{
    struct h2_frame *f = &c->rd.f;
    size_t pos = c->rd.got;
    bool padded = f->flags & H2_F_PADDED;
    while (n && !c->rd.ignore && !c->dead_rc) {
        if (padded && pos == 0) {
            size_t pad = p[0];
            /* §6.1: "If the length of the padding is the length of the frame payload or
             * greater, the recipient MUST treat this as a connection error of type
             * PROTOCOL_ERROR." §6.2: "Padding that exceeds the size remaining for the header
             * block fragment MUST be treated as a PROTOCOL_ERROR." */
            if (pad > f->len - c->rd.body_start)
                return conn_err(c, VEGA_H2_PROTOCOL_ERROR, "padding longer than the frame");
            c->rd.body_end = f->len - pad;
            pos++, p++, n--;
            continue;
        }
        if (pos < c->rd.body_start) { /* HEADERS' Exclusive, Stream Dependency and Weight */
            size_t k = VEGA__MIN(n, c->rd.body_start - pos);
            memcpy(c->rd.small + c->rd.small_len, p, k);
            c->rd.small_len += k;
            pos += k, p += k, n -= k;
            if (pos == c->rd.body_start)
                vega__h2_headers_priority(c);
            continue;
        }
        if (pos < c->rd.body_end) {
            size_t k = VEGA__MIN(n, c->rd.body_end - pos);
            bool last = pos + k == c->rd.body_end;
            int rc = f->type == H2_DATA ? vega__h2_recv_data(c, p, k, last)
                                        : vega__h2_headers_fragment(c, p, k);
            if (rc < 0)
                return rc;
            pos += k, p += k, n -= k;
            continue;
        }
        break; /* padding: not checked (§6.1: the receiver "is not obligated to verify") */
    }
    return 0;
}

static int payload(vega_h2_conn *c, const uint8_t *p, size_t n)
{
    struct h2_frame *f = &c->rd.f;
    if (c->rd.ignore)
        return 0;
    switch (f->type) {
    case H2_DATA:
    case H2_HEADERS:
        return padded_payload(c, p, n);
    case H2_CONTINUATION:
        return vega__h2_headers_fragment(c, p, n);
    case H2_SETTINGS:
        /* Entries are applied as they complete, in order (§6.5.3). */
        while (n && !c->dead_rc) {
            size_t k = VEGA__MIN(n, 6 - c->rd.small_len);
            memcpy(c->rd.small + c->rd.small_len, p, k);
            c->rd.small_len += k;
            p += k, n -= k;
            if (c->rd.small_len == 6) {
                c->rd.small_len = 0;
                int rc = vega__h2_recv_settings_entry(c, c->rd.small);
                if (rc < 0)
                    return rc;
            }
        }
        return 0;
    default: {
        /* Small frames are kept whole; GOAWAY keeps 8 + 256 bytes, PRIORITY_UPDATE 4 + 1024
         * (a longer one is dropped at its end). */
        size_t room = vega__room(c->rd.small_len, sizeof c->rd.small);
        if (f->type == H2_GOAWAY)
            room = vega__room(c->rd.small_len, 8 + H2_GOAWAY_DEBUG);
        size_t k = VEGA__MIN(n, room);
        memcpy(c->rd.small + c->rd.small_len, p, k);
        c->rd.small_len += k;
        return 0;
    }
    }
}

static int frame_end(vega_h2_conn *c)
{
    struct h2_frame *f = &c->rd.f;
    switch (f->type) {
    case H2_DATA:
        return vega__h2_recv_data_end(c);
    case H2_HEADERS:
    case H2_CONTINUATION:
        if (c->rd.ignore || !(f->flags & H2_F_END_HEADERS))
            return 0;
        return vega__h2_headers_end(c);
    case H2_SETTINGS:
        return vega__h2_recv_settings_end(c);
    default:
        return c->rd.ignore ? 0 : vega__h2_recv_small(c);
    }
}

/* Runs one step and maps a failure of ours to the end of the connection. */
static int step(vega_h2_conn *c, int rc)
{
    if (rc < 0 && !c->dead_rc)
        rc = vega__h2_conn_fail(c, rc);
    return rc;
}

int vega_h2_conn_read(vega_h2_conn *c, const uint8_t *in, size_t len, vega_tstamp now)
{
    if (!c || (!in && len))
        return -EINVAL;
    if (c->dead_rc)
        return VEGA_ERR_CLOSED;
    c->now = now;
    c->bytes_in += len;
    size_t i = 0;
    while (i < len) {
        int rc = 0;
        switch (c->rd.st) {
        case H2_R_PREFACE: {
            size_t k = VEGA__MIN(len - i, sizeof magic - c->rd.preface_got);
            if (memcmp(in + i, magic + c->rd.preface_got, k) != 0)
                return vega__h2_preface_error(c);
            c->rd.preface_got += k;
            i += k;
            if (c->rd.preface_got == sizeof magic)
                c->rd.st = H2_R_HEADER;
            break;
        }
        case H2_R_HEADER: {
            size_t k = VEGA__MIN(len - i, H2_HDR_LEN - c->rd.hdr_len);
            memcpy(c->rd.hdr + c->rd.hdr_len, in + i, k);
            c->rd.hdr_len += k;
            i += k;
            if (c->rd.hdr_len < H2_HDR_LEN)
                break;
            c->rd.hdr_len = 0;
            vega__h2_frame_parse(c->rd.hdr, &c->rd.f);
            c->rd.got = 0;
            rc = step(c, frame_header(c));
            if (rc == 0 && !c->dead_rc) {
                if (c->rd.f.len == 0)
                    rc = step(c, frame_end(c));
                else
                    c->rd.st = H2_R_PAYLOAD;
            }
            break;
        }
        case H2_R_PAYLOAD: {
            size_t k = VEGA__MIN(len - i, (size_t)c->rd.f.len - c->rd.got);
            rc = step(c, payload(c, in + i, k));
            c->rd.got += k;
            i += k;
            if (rc == 0 && !c->dead_rc && c->rd.got == c->rd.f.len) {
                c->rd.st = H2_R_HEADER;
                rc = step(c, frame_end(c));
            }
            break;
        }
        case H2_R_DEAD:
            return c->dead_rc;
        }
        if (rc < 0)
            return rc;
        if (c->dead_rc)
            return c->dead_rc;
    }
    return 0;
}
