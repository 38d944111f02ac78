/* SPDX-License-Identifier: MIT */
/* A counting vega_mem that fails on demand, for the allocation-failure sweeps: the fail_at-th
 * allocation (malloc, calloc and realloc count one each, from 1) is refused, alone or with every
 * later one; each block carries a mark that its realloc and free check (a block of this
 * allocator, freed once), and live counts the blocks not yet freed. The counters are atomic:
 * a runtime's workers may allocate at the same time. */
#ifndef VTEST_FAILMALLOC_H
#define VTEST_FAILMALLOC_H

#include <stdatomic.h>
#include <stdbool.h>

#include <vega/mem.h>

struct vtest_fa {
    atomic_long calls;    /* allocations asked for */
    atomic_long fail_at;  /* the allocation to refuse, from 1; 0 = none */
    atomic_long live;     /* blocks not yet freed */
    atomic_long failed;   /* allocations refused so far */
    bool and_after;       /* ... and every allocation after fail_at */
    bool realloc_null_ok; /* realloc(NULL, n) allocates, as libc's; otherwise a failed check */
    bool free_null_ok;    /* free(NULL) does nothing, as libc's; otherwise a failed check */
};

/* The allocator over f (retained: it must outlive every block made through it). Without the two
 * _null_ok flags it checks vega_mem's contract that realloc and free never see NULL. */
vega_mem vtest_fa_mem(struct vtest_fa *f);

#endif
