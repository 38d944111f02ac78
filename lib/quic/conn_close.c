/* SPDX-License-Identifier: MIT */
/* Closing a QUIC connection (RFC 9000 §10.2): the closing state after an error or a local close
 * with its CONNECTION_CLOSE datagram, and the draining state after the peer's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

static void enter_closing(vega_quic_conn *c, uint64_t code, bool app, uint64_t frame_type,
                          const char *reason)
{
    c->closing.code = code;
    c->closing.app = app;
    c->closing.frame_type = frame_type;
    snprintf(c->closing.reason, sizeof c->closing.reason, "%s", reason ? reason : "");
    c->state = VEGA__QUIC_ST_CLOSING;
    c->closing.send = true;
    c->closing.deadline = c->now + 3 * vega__quic_pto(c);
    vega__quic_ev_closed(c, code, app, true, c->closing.reason);
}

void vega__quic_close_err(vega_quic_conn *c, uint64_t code, uint64_t frame_type, const char *reason)
{
    if (c->state >= VEGA__QUIC_ST_CLOSING)
        return;
    if (!reason || !*reason)
        reason = vega_quic_transport_error_name(code);
    enter_closing(c, code, false, frame_type, reason);
}

void vega__quic_enter_draining(vega_quic_conn *c)
{
    if (c->state == VEGA__QUIC_ST_CLOSING) {
        c->state = VEGA__QUIC_ST_DRAINING;
        c->closing.send = false;
        return;
    }
    c->state = VEGA__QUIC_ST_DRAINING;
    c->closing.send = false;
    c->closing.deadline = c->now + 3 * vega__quic_pto(c);
}

int vega_quic_conn_close(vega_quic_conn *c, vega_quic_close_kind kind, uint64_t code,
                         const char *reason)
{
    if (kind != VEGA_QUIC_CLOSE_TRANSPORT && kind != VEGA_QUIC_CLOSE_APPLICATION)
        return -EINVAL;
    if (c->state >= VEGA__QUIC_ST_CLOSING)
        return VEGA_ERR_CLOSED;
    enter_closing(c, code, kind == VEGA_QUIC_CLOSE_APPLICATION, 0, reason);
    return 0;
}

bool vega_quic_conn_is_closed(const vega_quic_conn *c)
{
    return c->state == VEGA__QUIC_ST_CLOSED;
}

int vega__quic_on_close(vega_quic_conn *c, const vega_quic_frame *f)
{
    bool app = f->type == VEGA_QUIC_FT_CONNECTION_CLOSE_APP;
    if (c->state < VEGA__QUIC_ST_CLOSING) {
        size_t n = f->u.close.reason_len;
        uint8_t *copy = vega__quic_malloc(c->cfg.mem, n + 1);
        vega_quic_event ev = {
            .type = VEGA_QUIC_EV_CLOSED, .error_code = f->u.close.error_code, .app = app};
        if (copy) {
            if (n)
                memcpy(copy, f->u.close.reason, n);
            copy[n] = 0;
            ev.data = copy;
            ev.len = n;
        }
        if (vega__quic_ev_push(c, &ev) < 0)
            vega__quic_free(c->cfg.mem, copy);
    }
    vega__quic_enter_draining(c);
    return 0;
}

/* The CONNECTION_CLOSE datagram of the closing state (RFC 9000 §10.2.1). */
vega_ssize vega__quic_write_close(vega_quic_conn *c, uint8_t *out, size_t limit)
{
    struct vega__quic_pkt ks[3];
    size_t nk = 0, pos = 0;
    bool initial = false;
    for (int level = VEGA_QUIC_LEVEL_INITIAL; level <= VEGA_QUIC_LEVEL_APP; level++) {
        if (level == VEGA_QUIC_LEVEL_EARLY)
            continue;
        struct vega__quic_space *sp = &c->sp[vega__quic_level_space(level)];
        if (!sp->tx || sp->discarded)
            continue;
        /* Once 1-RTT is confirmed the peer has every key: only 1-RTT. */
        if (c->hs.confirmed && level != VEGA_QUIC_LEVEL_APP)
            continue;
        struct vega__quic_pkt *k = &ks[nk];
        if (!vega__quic_pkt_begin(c, k, level, pos, limit))
            break;
        struct vega__quic_pktrec dummy;
        k->rec = &dummy;
        dummy.n = 0;
        bool app = c->closing.app && level == VEGA_QUIC_LEVEL_APP;
        vega_quic_frame f = {.type = app ? VEGA_QUIC_FT_CONNECTION_CLOSE_APP
                                         : VEGA_QUIC_FT_CONNECTION_CLOSE};
        /* An application close before 1-RTT becomes APPLICATION_ERROR without a reason, which
         * could otherwise leak to an unauthenticated peer (RFC 9000 §10.2.3). */
        bool masked = c->closing.app && level != VEGA_QUIC_LEVEL_APP;
        f.u.close.error_code = masked ? VEGA_QUIC_APPLICATION_ERROR : c->closing.code;
        f.u.close.frame_type = c->closing.frame_type;
        if (!masked) {
            f.u.close.reason = (const uint8_t *)c->closing.reason;
            f.u.close.reason_len = strlen(c->closing.reason);
        }
        if (!vega__quic_put_frame(out, k, &f)) {
            f.u.close.reason_len = 0;
            if (!vega__quic_put_frame(out, k, &f))
                break;
        }
        initial |= level == VEGA_QUIC_LEVEL_INITIAL;
        pos += vega__quic_pkt_finish(out, k, 0);
        k->rec = NULL;
        nk++;
    }
    if (!nk)
        return 0;
    if (initial && !c->server && pos < VEGA_QUIC_MIN_INITIAL_SIZE) {
        struct vega__quic_pkt *k = &ks[nk - 1];
        pos = k->start + vega__quic_pkt_finish(out, k, k->len + (VEGA_QUIC_MIN_INITIAL_SIZE - pos));
    }
    for (size_t i = 0; i < nk; i++) {
        if (VEGA__QLOG(c))
            vega__quic_qlog_sent(c, &ks[i], out + ks[i].start);
        vega_ssize n = vega_quic_packet_protect(ks[i].keys, out + ks[i].start, limit - ks[i].start,
                                                ks[i].hdr_len, ks[i].pn, ks[i].len);
        if (n < 0)
            return n;
        c->sp[ks[i].space].next_pn++;
    }
    return (vega_ssize)pos;
}
