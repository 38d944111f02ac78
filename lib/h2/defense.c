/* SPDX-License-Identifier: MIT */
/* HTTP/2 defenses (RFC 9113 §10.5): token buckets for stream resets (Rapid Reset,
 * CVE-2023-44487, and MadeYouReset, where the peer's errors make us reset) and for frames
 * that cost work and do nothing (the floods of CVE-2019-9512..9518); past either, the
 * connection ends with ENHANCE_YOUR_CALM. */
#include "h2_int.h"

void vega__h2_bucket_init(struct h2_bucket *b, uint32_t burst, uint32_t rate)
{
    b->tokens = b->burst = burst;
    b->rate = rate;
    b->last = VEGA_TSTAMP_MAX;
}

/* Takes a token, refilling rate per second since the last refill, up to burst. */
static bool take(struct h2_bucket *b, vega_tstamp now)
{
    if (b->last == VEGA_TSTAMP_MAX || now < b->last) {
        b->last = now;
    } else if (b->rate) {
        uint64_t el = now - b->last;
        uint64_t full = (uint64_t)(b->burst - b->tokens) * VEGA_NS_PER_S / b->rate + 1;
        if (el >= full) {
            b->tokens = b->burst;
            b->last = now;
        } else {
            uint64_t add = el * b->rate / VEGA_NS_PER_S; /* el < full: no overflow */
            if (add) {
                b->tokens += (uint32_t)add;
                b->last += add * VEGA_NS_PER_S / b->rate;
            }
        }
    }
    if (b->tokens == 0)
        return false;
    b->tokens--;
    return true;
}

int vega__h2_count_reset(vega_h2_conn *c)
{
    if (take(&c->resets, c->now))
        return 0;
    return vega__h2_conn_error(c, VEGA_H2_ENHANCE_YOUR_CALM, "too many stream resets");
}

int vega__h2_count_glitch(vega_h2_conn *c, const char *what)
{
    if (take(&c->glitches, c->now))
        return 0;
    return vega__h2_conn_error(c, VEGA_H2_ENHANCE_YOUR_CALM, what);
}
