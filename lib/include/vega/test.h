/* SPDX-License-Identifier: MIT */
/* libvega-test: support for testing programs built on libvega (link -lvega-test). */
#ifndef VEGA_TEST_H
#define VEGA_TEST_H

#include <stdint.h>

#include <vega/rt.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A hash of the order in which tasks ran so far (task ids, in poll order). Two runs of the same
 * program on a seeded current-thread runtime with the same seed give the same hash. */
VEGA_API uint64_t vega_test_schedule_hash(const vega_rt *rt);

/* Moves a paused clock forward by ns, firing the timers that fall due. Context: inside a task of
 * a paused-clock runtime; returns -EINVAL elsewhere. */
VEGA_API int vega_test_advance(uint64_t ns);

#ifdef __cplusplus
}
#endif
#endif
