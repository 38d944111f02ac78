/* SPDX-License-Identifier: MIT */
/* The monotonic clock. */
#include <time.h>

#include "base.h"

vega_tstamp vega__clock_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (vega_tstamp)ts.tv_sec * VEGA_NS_PER_S + (vega_tstamp)ts.tv_nsec;
}
