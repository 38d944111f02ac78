/* SPDX-License-Identifier: MIT */
/* QUIC RTT estimation (RFC 9002 §5): min, smoothed and variance from ACK samples, and the PTO
 * period (§6.2.1). */
#include "base.h"
#include "recovery.h"

void vega__quic_rtt_init(struct vega__quic_rtt *r, uint64_t initial)
{
    if (initial == 0)
        initial = VEGA__QUIC_INITIAL_RTT_NS;
    *r = (struct vega__quic_rtt){.smoothed = initial, .var = initial / 2};
}

void vega__quic_rtt_sample(struct vega__quic_rtt *r, uint64_t latest, uint64_t ack_delay,
                           uint64_t max_ack_delay, bool handshake_confirmed, uint64_t now)
{
    r->latest = latest;
    if (!r->has_sample) {
        /* §5.3: the first sample resets the estimate; its ack_delay is not used. */
        r->min = latest;
        r->smoothed = latest;
        r->var = latest / 2;
        r->has_sample = true;
        r->first_sample_time = now;
        return;
    }
    /* min_rtt ignores ack_delay: it is what the path showed, delay included. */
    if (latest < r->min)
        r->min = latest;
    /* "MUST use the lesser of the acknowledgment delay and the peer's max_ack_delay after the
     * handshake is confirmed" (§5.3). */
    if (handshake_confirmed && ack_delay > max_ack_delay)
        ack_delay = max_ack_delay;
    /* "SHOULD NOT subtract the acknowledgment delay from the RTT sample if the resulting value
     * is smaller than the min_rtt". */
    uint64_t adjusted = latest;
    if (latest >= vega__sat_add(r->min, ack_delay))
        adjusted = latest - ack_delay;
    uint64_t diff = r->smoothed > adjusted ? r->smoothed - adjusted : adjusted - r->smoothed;
    /* 128-bit intermediates: the weighted sums of two 64-bit times cannot overflow. */
    r->var = (uint64_t)((3 * (unsigned __int128)r->var + diff) / 4);
    r->smoothed = (uint64_t)((7 * (unsigned __int128)r->smoothed + adjusted) / 8);
}

uint64_t vega__quic_rtt_pto(const struct vega__quic_rtt *r, uint64_t max_ack_delay)
{
    uint64_t var4 = r->var > UINT64_MAX / 4 ? UINT64_MAX : 4 * r->var;
    uint64_t pto = vega__sat_add(r->smoothed, VEGA__MAX(var4, VEGA__QUIC_GRANULARITY_NS));
    return vega__sat_add(pto, max_ack_delay);
}
