/* SPDX-License-Identifier: MIT */
/* The WebSocket reader (RFC 6455 §5, RFC 7692 §6.2): frame headers checked as soon as they are
 * complete, payloads unmasked and (for compressed messages) inflated in chunks, text checked as
 * UTF-8 chunk by chunk, control frames gathered and acted on (§5.5), failures turned into a
 * Close with the code the RFC names (§7.4.1). */
#include <string.h>

#include "ws_int.h"

/* Fails the connection (§7.1.7): a Close with code goes out, the reader stops. Sticky. */
static int fail(vega_ws_conn *c, unsigned code, const char *reason, int rc)
{
    if (c->fail_rc)
        return c->fail_rc;
    c->fail_rc = rc;
    c->err.code = code;
    c->err.reason = reason;
    c->rstate = VEGA__WS_R_DONE;
    if (!c->close_sent)
        (void)vega__ws_queue_close(c, code, (const uint8_t *)reason, strlen(reason));
    return rc;
}

static int proto(vega_ws_conn *c, const char *reason)
{
    return fail(c, VEGA_WS_CLOSE_PROTOCOL_ERROR, reason, VEGA_ERR_PROTO);
}

static int cb_rc(vega_ws_conn *c, int r)
{
    return r ? fail(c, VEGA_WS_CLOSE_INTERNAL, "application callback failed", VEGA_ERR_CALLBACK)
             : 0;
}

/* ---- data ---------------------------------------------------------------------------------- */

/* Hands message bytes (already unmasked and inflated) to on_data, after the size limit and,
 * for text, UTF-8. */
static int emit(vega_ws_conn *c, const uint8_t *p, size_t n, bool fin)
{
    if (n > c->o.max_message_size || c->msg_size > c->o.max_message_size - n)
        return fail(c, VEGA_WS_CLOSE_TOO_BIG, "message too big", VEGA_ERR_PROTO);
    c->msg_size += n;
    if (c->msg_type == VEGA_WS_TEXT) {
        /* §8.1: "When an endpoint is to interpret a byte stream as UTF-8 but finds that the
         * byte stream is not, in fact, a valid UTF-8 stream, that endpoint MUST _Fail the
         * WebSocket Connection_." Checked before the bytes are handed out. */
        if (!vega__ws_utf8_check(&c->utf8, p, n) || (fin && c->utf8 != 0))
            return fail(c, VEGA_WS_CLOSE_INVALID_DATA, "invalid UTF-8 in a text message",
                        VEGA_ERR_PROTO);
    }
    if (c->cb.on_data)
        return cb_rc(c, c->cb.on_data(c->ud, c->msg_type, p, n, fin));
    return 0;
}

static int emit_inflated(vega_ws_conn *c, const uint8_t *p, size_t n)
{
    return emit(c, p, n, false);
}

/* n payload bytes of a data frame (unmasked); frame_end: they end the frame. */
static int data_chunk(vega_ws_conn *c, const uint8_t *p, size_t n, bool frame_end)
{
    bool msg_end = frame_end && c->fin;
    int rc;
    if (c->msg_compressed) {
        rc = vega__ws_inflate(c, p, n, msg_end, emit_inflated);
        if (rc < 0 && !c->fail_rc)
            rc = rc == -EPROTO ? fail(c, VEGA_WS_CLOSE_INVALID_DATA, "invalid compressed data",
                                      VEGA_ERR_PROTO)
                               : fail(c, VEGA_WS_CLOSE_INTERNAL, "decompression failed", rc);
        if (rc == 0 && msg_end)
            rc = emit(c, NULL, 0, true);
    } else {
        rc = emit(c, p, n, msg_end);
    }
    if (rc == 0 && msg_end)
        c->msg_open = false;
    return rc;
}

/* ---- control frames (§5.5) ----------------------------------------------------------------- */

static int on_close_frame(vega_ws_conn *c)
{
    unsigned code = VEGA_WS_CLOSE_NO_STATUS;
    const uint8_t *reason = c->ctl + 2;
    size_t rlen = 0;
    if (c->ctl_len == 1)
        return proto(c, "close frame with a 1-byte body");
    if (c->ctl_len >= 2) {
        code = (unsigned)c->ctl[0] << 8 | c->ctl[1];
        rlen = c->ctl_len - 2;
        if (!vega_ws_close_code_is_valid(code))
            return proto(c, "invalid close code");
        uint32_t st = 0;
        /* §5.5.1: the reason's data "is not guaranteed to be human readable" but is UTF-8. */
        if (!vega__ws_utf8_check(&st, reason, rlen) || st != 0)
            return fail(c, VEGA_WS_CLOSE_INVALID_DATA, "invalid UTF-8 in a close reason",
                        VEGA_ERR_PROTO);
    }
    c->close_received = true;
    c->peer_code = code;
    c->rstate = VEGA__WS_R_DONE;
    /* §5.5.1: "If an endpoint receives a Close frame and did not previously send a Close
     * frame, the endpoint MUST send a Close frame in response. ... typically echos the status
     * code it received." With owner_answers_close the owner sends it, after the answers to
     * the data before this Close (§7.1.2: until our Close, data may still go out). */
    if (!c->close_sent && !c->o.owner_answers_close) {
        int rc = vega__ws_queue_close(c, code == VEGA_WS_CLOSE_NO_STATUS ? 0 : code, NULL, 0);
        if (rc < 0)
            return fail(c, VEGA_WS_CLOSE_INTERNAL, "out of memory", rc);
    }
    if (c->cb.on_close)
        return cb_rc(c, c->cb.on_close(c->ud, code, reason, rlen));
    return 0;
}

static int control_end(vega_ws_conn *c)
{
    switch (c->opcode) {
    case 0x8:
        return on_close_frame(c);
    case 0x9:
        /* §5.5.2: "Upon receipt of a Ping frame, an endpoint MUST send a Pong frame in response,
         * unless it already received a Close frame." A full queue drops the pong: a later
         * ping's pong answers for it (§5.5.3 allows answering only the most recent). */
        if (!c->close_sent)
            (void)vega__ws_queue_frame(c, 0x8a, c->ctl, c->ctl_len, false);
        if (c->cb.on_ping)
            return cb_rc(c, c->cb.on_ping(c->ud, c->ctl, c->ctl_len));
        return 0;
    default:
        if (c->cb.on_pong)
            return cb_rc(c, c->cb.on_pong(c->ud, c->ctl, c->ctl_len));
        return 0;
    }
}

/* ---- headers (§5.2) ------------------------------------------------------------------------ */

static size_t header_len(const uint8_t *h)
{
    uint8_t l = h[1] & 0x7f;
    return (size_t)2 + (l == 126 ? 2u : l == 127 ? 8u : 0u) + (h[1] & 0x80 ? 4u : 0u);
}

static int check_data_header(vega_ws_conn *c, bool rsv1)
{
    if (c->opcode == 0) {
        if (!c->msg_open)
            return proto(c, "continuation frame without a message");
        /* RFC 7692 §6.1: RSV1 is set on the first frame of a message only. */
        if (rsv1)
            return proto(c, "RSV1 set on a continuation frame");
    } else {
        /* §5.4: fragments of one message are not interleaved with another message. */
        if (c->msg_open)
            return proto(c, "new data message inside a fragmented one");
        c->msg_open = true;
        c->msg_type = (vega_ws_msg_type)c->opcode;
        c->msg_compressed = rsv1;
        c->msg_size = 0;
        c->utf8 = 0;
    }
    /* An uncompressed message's size is known from its headers: refuse it before reading. */
    if (!c->msg_compressed && (c->msg_size > c->o.max_message_size ||
                               c->plen > c->o.max_message_size - c->msg_size)) /* no wrap */
        return fail(c, VEGA_WS_CLOSE_TOO_BIG, "message too big", VEGA_ERR_PROTO);
    return 0;
}

static int header_done(vega_ws_conn *c)
{
    const uint8_t *h = c->hdr;
    c->fin = h[0] & 0x80;
    bool rsv1 = h[0] & 0x40;
    c->opcode = h[0] & 0x0f;
    c->masked = h[1] & 0x80;
    uint64_t len = h[1] & 0x7f;
    size_t at = 2;
    if (len == 126) {
        len = (uint64_t)h[2] << 8 | h[3];
        at = 4;
    } else if (len == 127) {
        len = 0;
        for (int i = 0; i < 8; i++)
            len = len << 8 | h[2 + i];
        at = 10;
        /* §5.2: "the most significant bit MUST be 0". */
        if (len >> 63)
            return proto(c, "64-bit payload length with the top bit set");
    }
    if (c->masked)
        memcpy(c->mask, h + at, 4);
    c->plen = len;
    c->pgot = 0;
    /* §5.2: "RSV1, RSV2, RSV3: ... MUST be 0 unless an extension is negotiated that defines
     * meanings for non-zero values." permessage-deflate defines RSV1 only. */
    if (h[0] & 0x30)
        return proto(c, "reserved bit set");
    if (rsv1 && !c->o.deflate.enabled)
        return proto(c, "RSV1 set without permessage-deflate");
    /* §5.1: "a server MUST close the connection upon receiving a frame that is not masked",
     * "A client MUST close a connection if it detects a masked frame." */
    if (c->o.role == VEGA_WS_SERVER && !c->masked)
        return proto(c, "unmasked frame from a client");
    if (c->o.role == VEGA_WS_CLIENT && c->masked)
        return proto(c, "masked frame from a server");
    bool control = c->opcode & 0x8;
    if (control) {
        if (c->opcode > 0xa)
            return proto(c, "reserved opcode");
        /* §5.5: "All control frames MUST have a payload length of 125 bytes or less and MUST
         * NOT be fragmented." */
        if (!c->fin)
            return proto(c, "fragmented control frame");
        if (len > VEGA_WS_MAX_CONTROL)
            return proto(c, "control frame longer than 125 bytes");
        if (rsv1)
            return proto(c, "RSV1 set on a control frame");
        c->ctl_len = 0;
        return 0;
    }
    if (c->opcode > 0x2)
        return proto(c, "reserved opcode");
    if (len > c->o.max_frame_size)
        return fail(c, VEGA_WS_CLOSE_TOO_BIG, "frame too big", VEGA_ERR_PROTO);
    return check_data_header(c, rsv1);
}

/* The frame's payload is complete. */
static int frame_end(vega_ws_conn *c)
{
    c->rstate = VEGA__WS_R_HEAD;
    c->hdr_len = 0;
    if (c->opcode & 0x8)
        return control_end(c);
    return 0;
}

/* Payload bytes from in; returns how many were used (all of them or up to the frame's end), or
 * a negative code. */
static vega_ssize payload(vega_ws_conn *c, const uint8_t *in, size_t len)
{
    uint64_t left = c->plen - c->pgot;
    size_t n = left < len ? (size_t)left : len;
    if (c->opcode & 0x8) {
        memcpy(c->ctl + c->ctl_len, in, n);
        if (c->masked)
            vega__ws_mask(c->ctl + c->ctl_len, n, c->mask, (size_t)(c->pgot & 3));
        c->ctl_len += n;
        c->pgot += n;
    } else {
        size_t used = 0;
        while (used < n) {
            size_t k = n - used;
            const uint8_t *p = in + used;
            if (c->masked) {
                k = VEGA__MIN(k, sizeof c->scratch);
                memcpy(c->scratch, p, k);
                vega__ws_mask(c->scratch, k, c->mask, (size_t)(c->pgot & 3));
                p = c->scratch;
            }
            c->pgot += k;
            used += k;
            int rc = data_chunk(c, p, k, c->pgot == c->plen);
            if (rc < 0)
                return rc;
        }
    }
    if (c->pgot == c->plen) {
        int rc = frame_end(c);
        if (rc < 0)
            return rc;
    }
    return (vega_ssize)n;
}

int vega_ws_conn_read(vega_ws_conn *c, const uint8_t *in, size_t len)
{
    if (!in && len)
        return -EINVAL;
    if (c->fail_rc)
        return c->fail_rc;
    size_t at = 0;
    while (at < len && c->rstate != VEGA__WS_R_DONE) {
        if (c->rstate == VEGA__WS_R_HEAD) {
            c->hdr[c->hdr_len++] = in[at++];
            if (c->hdr_len < 2 || c->hdr_len < header_len(c->hdr))
                continue;
            int rc = header_done(c);
            if (rc < 0)
                return rc;
            c->rstate = VEGA__WS_R_PAYLOAD;
            if (c->plen == 0) {
                /* An empty frame: the data path still sees its end (an empty message, a
                 * compressed message's last fragment). */
                if (!(c->opcode & 0x8))
                    rc = data_chunk(c, NULL, 0, true);
                if (rc == 0)
                    rc = frame_end(c);
                if (rc < 0)
                    return rc;
            }
            continue;
        }
        vega_ssize n = payload(c, in + at, len - at);
        if (n < 0)
            return (int)n;
        at += (size_t)n;
    }
    return c->fail_rc;
}
