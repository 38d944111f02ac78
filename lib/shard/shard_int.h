/* SPDX-License-Identifier: MIT */
/* Private to lib/shard: the page shared between the supervisor and its shards. */
#ifndef VEGA_SHARD_INT_H
#define VEGA_SHARD_INT_H

#include <stdatomic.h>
#include <stdint.h>

#include <vega/shard.h>

/* One per shard process slot, in a MAP_SHARED anonymous mapping made before the first fork.
 * The shard writes, the supervisor reads (and zeroes before it forks into the slot). */
struct vega__shard_slot {
    _Atomic uint64_t beats;
    _Atomic uint32_t ready;
};

struct vega_shard {
    unsigned index, generation;
    struct vega__shard_slot *slot;
    void *shared; /* vega_shard_opts.shared_size bytes, or NULL */
    size_t shared_len;
};

#endif
