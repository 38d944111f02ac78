/* SPDX-License-Identifier: MIT */
/* libvega-test: schedule hashes of the seeded runtime and control of the paused clock. */
#include <vega/test.h>

#include "sched_int.h"

uint64_t vega_test_schedule_hash(const vega_rt *rt)
{
    return rt->trace_hash;
}

int vega_test_advance(uint64_t ns)
{
    struct vega__worker *w = vega__worker_self();
    if (!w || !w->rt->paused)
        return -EINVAL;
    struct vega_rt *rt = w->rt;
    uint64_t now = atomic_load_explicit(&rt->mock_now, memory_order_acquire);
    atomic_store_explicit(&rt->mock_now, vega__sat_add(now, ns), memory_order_release);
    vega__wheel_advance(&w->wheel, vega__ms_floor(rt, vega__rt_now_ns(rt)));
    return vega_yield();
}
