/* SPDX-License-Identifier: MIT */
/* Receive-side flow control (RFC 9000 §4.1, §4.2): the limit advertised in MAX_DATA or
 * MAX_STREAM_DATA, when to raise it, and window auto-tuning. */
#include "base.h"
#include "qstream.h"

void vega__quic_fc_init(struct vega__quic_fc *fc, uint64_t window, uint64_t window_max)
{
    if (window > VEGA_QUIC_MAX_VARINT)
        window = VEGA_QUIC_MAX_VARINT;
    fc->limit = window;
    fc->highest = 0;
    fc->consumed = 0;
    fc->window = window;
    fc->window_max = VEGA__MAX(window, window_max);
    fc->last_update = 0;
}

bool vega__quic_fc_on_recv(struct vega__quic_fc *fc, uint64_t new_highest)
{
    if (new_highest > fc->limit)
        return false;
    if (new_highest > fc->highest)
        fc->highest = new_highest;
    return true;
}

void vega__quic_fc_on_consumed(struct vega__quic_fc *fc, uint64_t n)
{
    fc->consumed += n;
}

bool vega__quic_fc_should_update(const struct vega__quic_fc *fc)
{
    /* consumed + window - limit >= window / 2, without wrapping below zero. */
    return fc->consumed + fc->window >= fc->limit + fc->window / 2;
}

uint64_t vega__quic_fc_update(struct vega__quic_fc *fc, uint64_t rtt, uint64_t now)
{
    /* The peer used half the window in under 4 RTTs: the window, not the application, is what
     * limits it, so double the window (the bandwidth-delay product needs more room). */
    uint64_t rtt2 = vega__sat_add(rtt, rtt);
    if (fc->last_update != 0 && rtt > 0 && now >= fc->last_update &&
        now - fc->last_update < vega__sat_add(rtt2, rtt2) && fc->window < fc->window_max)
        fc->window = VEGA__MIN(vega__sat_add(fc->window, fc->window), fc->window_max);
    uint64_t limit = VEGA__MIN(vega__sat_add(fc->consumed, fc->window), VEGA_QUIC_MAX_VARINT);
    if (limit > fc->limit)
        fc->limit = limit;
    fc->last_update = now;
    return fc->limit;
}
