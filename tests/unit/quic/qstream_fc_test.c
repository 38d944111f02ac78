/* SPDX-License-Identifier: MIT */
/* Receive flow control (lib/quic/fc.c): limits, the update threshold, window auto-tuning. */
#include "qstream.h"
#include "vtest.h"

#define MS 1000000ull

VTEST(limit_and_on_recv)
{
    struct vega__quic_fc fc;
    vega__quic_fc_init(&fc, 1000, 8000);
    VCHECK_EQ(fc.limit, 1000);
    VCHECK(vega__quic_fc_on_recv(&fc, 500));
    VCHECK_EQ(fc.highest, 500);
    VCHECK(vega__quic_fc_on_recv(&fc, 1000)); /* exactly the limit is fine */
    VCHECK(!vega__quic_fc_on_recv(&fc, 1001));
    VCHECK_EQ(fc.highest, 1000); /* a refused value is not recorded */
}

VTEST(update_threshold)
{
    struct vega__quic_fc fc;
    vega__quic_fc_init(&fc, 1000, 1000);
    VCHECK(!vega__quic_fc_should_update(&fc));
    vega__quic_fc_on_consumed(&fc, 499);
    VCHECK(!vega__quic_fc_should_update(&fc));
    vega__quic_fc_on_consumed(&fc, 1);
    VCHECK(vega__quic_fc_should_update(&fc)); /* half the window consumed */
    VCHECK_EQ(vega__quic_fc_update(&fc, 10 * MS, 1000 * MS), 1500);
    VCHECK_EQ(fc.last_update, 1000 * MS);
    VCHECK(!vega__quic_fc_should_update(&fc));
    vega__quic_fc_on_consumed(&fc, 500);
    VCHECK(vega__quic_fc_should_update(&fc));
    /* window_max == window: no growth however fast. */
    VCHECK_EQ(vega__quic_fc_update(&fc, 10 * MS, 1001 * MS), 2000);
    VCHECK_EQ(fc.window, 1000);
}

VTEST(auto_tune_doubles_up_to_max)
{
    struct vega__quic_fc fc;
    vega__quic_fc_init(&fc, 1000, 5000);
    const uint64_t rtt = 10 * MS;
    uint64_t now = 1000 * MS;
    vega__quic_fc_on_consumed(&fc, 500);
    VCHECK_EQ(vega__quic_fc_update(&fc, rtt, now), 1500); /* the first update: no history */
    VCHECK_EQ(fc.window, 1000);
    vega__quic_fc_on_consumed(&fc, 500);
    now += 4 * rtt; /* exactly 4 RTTs: not "less than" */
    VCHECK_EQ(vega__quic_fc_update(&fc, rtt, now), 2000);
    VCHECK_EQ(fc.window, 1000);
    vega__quic_fc_on_consumed(&fc, 500);
    now += 4 * rtt - 1;
    VCHECK_EQ(vega__quic_fc_update(&fc, rtt, now), 1500 + 2000);
    VCHECK_EQ(fc.window, 2000);
    vega__quic_fc_on_consumed(&fc, 1000);
    now += rtt;
    VCHECK_EQ(vega__quic_fc_update(&fc, rtt, now), 2500 + 4000);
    VCHECK_EQ(fc.window, 4000);
    vega__quic_fc_on_consumed(&fc, 2000);
    now += rtt;
    VCHECK_EQ(vega__quic_fc_update(&fc, rtt, now), 4500 + 5000); /* capped */
    VCHECK_EQ(fc.window, 5000);
    vega__quic_fc_on_consumed(&fc, 2500);
    now += rtt;
    VCHECK_EQ(vega__quic_fc_update(&fc, rtt, now), 7000 + 5000);
    VCHECK_EQ(fc.window, 5000);
    /* A slow reader: no doubling, and an update never lowers the limit. */
    vega__quic_fc_init(&fc, 1000, 5000);
    vega__quic_fc_on_consumed(&fc, 600);
    VCHECK_EQ(vega__quic_fc_update(&fc, rtt, 1 * MS), 1600);
    VCHECK_EQ(vega__quic_fc_update(&fc, rtt, 1000 * MS), 1600);
    VCHECK_EQ(fc.window, 1000);
    /* rtt 0 (no sample yet): no doubling. */
    vega__quic_fc_on_consumed(&fc, 500);
    VCHECK_EQ(vega__quic_fc_update(&fc, 0, 1000 * MS + 1), 2100);
    VCHECK_EQ(fc.window, 1000);
}

VTEST(limits_saturate)
{
    struct vega__quic_fc fc;
    vega__quic_fc_init(&fc, UINT64_MAX, UINT64_MAX);
    VCHECK_EQ(fc.limit, VEGA_QUIC_MAX_VARINT);
    vega__quic_fc_on_consumed(&fc, 1000);
    VCHECK_EQ(vega__quic_fc_update(&fc, 1, 1), VEGA_QUIC_MAX_VARINT);
    VCHECK_EQ(vega__quic_fc_update(&fc, 1, 2), VEGA_QUIC_MAX_VARINT);
}
