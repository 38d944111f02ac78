/* SPDX-License-Identifier: MIT */
/* The failing allocator of failmalloc.h: a header before each block holds its mark. */
#include "failmalloc.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vtest.h"

struct hdr {
    alignas(max_align_t) uint64_t magic; /* the block after it keeps malloc's alignment */
};
#define MAGIC 0xc11e47a110c8ull

static bool should_fail(struct vtest_fa *f)
{
    long k = atomic_fetch_add(&f->calls, 1) + 1, at = atomic_load(&f->fail_at);
    bool fail = at && (k == at || (f->and_after && k > at));
    if (fail)
        atomic_fetch_add(&f->failed, 1);
    return fail;
}

static void *fa_malloc(void *ud, size_t n)
{
    struct vtest_fa *f = ud;
    if (should_fail(f))
        return NULL;
    struct hdr *h = malloc(sizeof *h + n);
    VCHECK(h != NULL);
    h->magic = MAGIC;
    atomic_fetch_add(&f->live, 1);
    return h + 1;
}

static void *fa_calloc(void *ud, size_t n, size_t size)
{
    void *p = fa_malloc(ud, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

static void fa_free(void *ud, void *p)
{
    struct vtest_fa *f = ud;
    if (!p && f->free_null_ok)
        return;
    VCHECK(p != NULL);
    struct hdr *h = (struct hdr *)p - 1;
    VCHECK(h->magic == MAGIC);
    h->magic = 0;
    atomic_fetch_sub(&f->live, 1);
    free(h);
}

static void *fa_realloc(void *ud, void *p, size_t n)
{
    struct vtest_fa *f = ud;
    if (!p && f->realloc_null_ok)
        return fa_malloc(ud, n);
    VCHECK(p != NULL);
    if (should_fail(f))
        return NULL;
    struct hdr *h = (struct hdr *)p - 1;
    VCHECK(h->magic == MAGIC);
    struct hdr *g = realloc(h, sizeof *g + n);
    VCHECK(g != NULL);
    return g + 1;
}

vega_mem vtest_fa_mem(struct vtest_fa *f)
{
    return (vega_mem){fa_malloc, fa_calloc, fa_realloc, fa_free, f};
}
