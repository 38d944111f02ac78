/* SPDX-License-Identifier: MIT */
/* The QUIC connection's timers: the PTO period, the idle timeout (RFC 9000 §10.1), and the one
 * deadline vega_quic_conn_expiry reports for loss detection, ACK delay, pacing, old keys, path
 * validation and the closing period. */
#include <stdlib.h>

#include "conn_int.h"

uint64_t vega__quic_pto(const vega_quic_conn *c)
{
    const struct vega__quic_rtt *r = vega__quic_recovery_rtt(c->rec);
    return vega__quic_rtt_pto(r, c->hs.peer_tp.max_ack_delay * VEGA__QUIC_NS_PER_MS);
}

/* The idle timer restarts on a processed packet and on the first ack-eliciting packet sent
 * after one (RFC 9000 §10.1), never shorter than 3 PTO. */
void vega__quic_idle_restart(vega_quic_conn *c)
{
    if (!c->timers.idle_timeout)
        return;
    uint64_t pto3 = 3 * vega__quic_pto(c);
    c->timers.idle_deadline =
        c->now + (c->timers.idle_timeout > pto3 ? c->timers.idle_timeout : pto3);
}

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

uint64_t vega_quic_conn_expiry(const vega_quic_conn *c)
{
    if (c->state == VEGA__QUIC_ST_CLOSED)
        return VEGA__QUIC_TIME_INF;
    if (c->state >= VEGA__QUIC_ST_CLOSING)
        return c->closing.deadline;
    uint64_t t = min64(c->timers.idle_deadline, vega__quic_recovery_timer(c->rec));
    if (!c->addr.send_blocked) {
        for (int i = 0; i < VEGA__QUIC_NSPACES; i++)
            if (c->sp[i].ack_pending)
                t = min64(t, c->sp[i].ack_deadline);
        t = min64(t, c->timers.pace_deadline);
    }
    if (c->keys.rx_prev)
        t = min64(t, c->keys.rx_prev_until);
    if (c->paths.challenge_outstanding)
        t = min64(t, min64(c->paths.challenge_retry, c->paths.challenge_deadline));
    return t;
}

static int handle_expiry(vega_quic_conn *c, uint64_t now)
{
    if (now > c->now)
        c->now = now;
    now = c->now;
    if (c->state == VEGA__QUIC_ST_CLOSED)
        return VEGA_ERR_CLOSED;
    if (c->state >= VEGA__QUIC_ST_CLOSING) {
        if (now >= c->closing.deadline) {
            c->state = VEGA__QUIC_ST_CLOSED;
            return VEGA_ERR_CLOSED;
        }
        return 0;
    }
    if (now >= c->timers.idle_deadline) {
        c->state = VEGA__QUIC_ST_CLOSED;
        vega__quic_ev_closed(c, VEGA_QUIC_NO_ERROR, false, true, "idle timeout");
        return VEGA_ERR_CLOSED;
    }
    if (c->keys.rx_prev && now >= c->keys.rx_prev_until) {
        vega_quic_keys_free(c->keys.rx_prev);
        c->keys.rx_prev = NULL;
        c->keys.rx_prev_until = VEGA__QUIC_TIME_INF;
    }
    if (now >= c->timers.pace_deadline)
        c->timers.pace_deadline = VEGA__QUIC_TIME_INF;
    if (c->paths.challenge_outstanding) {
        if (now >= c->paths.challenge_deadline)
            vega__quic_path_failed(c);
        else if (now >= c->paths.challenge_retry)
            vega__quic_challenge(c); /* a fresh one: PATH_CHALLENGE is never retransmitted */
    }
    if (now >= vega__quic_recovery_timer(c->rec))
        vega__quic_probe_on_timeout(c, now);
    /* ACK deadlines need no action here: the next write sees them due. */
    return 0;
}

int vega_quic_conn_handle_expiry(vega_quic_conn *c, uint64_t now)
{
    int rc = handle_expiry(c, now);
    if (VEGA__QLOG(c))
        vega__quic_qlog_poll(c, true);
    return rc;
}
