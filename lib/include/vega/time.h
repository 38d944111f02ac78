/* SPDX-License-Identifier: MIT */
/* Monotonic timestamps and absolute deadlines, in nanoseconds. */
#ifndef VEGA_TIME_H
#define VEGA_TIME_H

#include <stdint.h>

#include <vega/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A point on the monotonic clock, in nanoseconds. */
typedef uint64_t vega_tstamp;

/*
 * An absolute point on the runtime's clock after which a suspending call gives up with
 * -ETIMEDOUT. Every libvega call that can suspend takes one as its last parameter.
 *   0                   do not wait: fail with -ETIMEDOUT at once if the call would suspend
 *   VEGA_DEADLINE_NEVER wait without limit
 * The same in every parameter and every struct field of this type (vega_spawn_opts.deadline,
 * vega_http_client_request.deadline): their _init functions set VEGA_DEADLINE_NEVER.
 * Resolution: the runtime's timers run on a wheel of 1 ms ticks. A wait gives up at the first
 * tick at or after its deadline (deadlines round up to the next millisecond of the runtime's
 * clock), never before it; how much later depends on the load, as with any timer.
 */
typedef uint64_t vega_deadline;

#define VEGA_DEADLINE_NEVER UINT64_MAX
#define VEGA_TSTAMP_MAX     UINT64_MAX

#define VEGA_NS_PER_US 1000ull
#define VEGA_NS_PER_MS 1000000ull
#define VEGA_NS_PER_S  1000000000ull

/*
 * The current time on the clock of the runtime this thread runs (the mock clock in a paused
 * test runtime), or CLOCK_MONOTONIC outside any runtime.
 * Context: any thread. Since 0.1.
 */
VEGA_API vega_tstamp vega_now(void);

/* vega_now() + ms milliseconds, saturating at VEGA_DEADLINE_NEVER. Since 0.1. */
VEGA_API vega_deadline vega_deadline_in_ms(uint64_t ms);

/* vega_now() + ns nanoseconds, saturating at VEGA_DEADLINE_NEVER. Since 0.1. */
VEGA_API vega_deadline vega_deadline_in_ns(uint64_t ns);

#ifdef __cplusplus
}
#endif
#endif
