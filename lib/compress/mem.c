/* SPDX-License-Identifier: MIT */
/* The compression module's allocator: the caller's alloc/free (vega_compress_opts) or malloc,
 * with adapters to the allocator signatures of zlib, brotli and zstd. */
#include <stdlib.h>

#include "compress_int.h"

static void *std_alloc(void *user_data, size_t size)
{
    (void)user_data;
    return malloc(size);
}

static void std_free(void *user_data, void *p)
{
    (void)user_data;
    free(p);
}

int vega__cz_mem_init(struct vega__cz_mem *m, const vega_compress_opts *o)
{
    if (o && (!o->alloc != !o->free))
        return -EINVAL;
    if (o && o->mem && o->alloc)
        return -EINVAL;
    m->vm = o ? o->mem : NULL;
    if (o && o->alloc) {
        m->alloc = o->alloc;
        m->free = o->free;
        m->user_data = o->user_data;
    } else {
        m->alloc = std_alloc;
        m->free = std_free;
        m->user_data = NULL;
    }
    return 0;
}

void *vega__cz_alloc(const struct vega__cz_mem *m, size_t size)
{
    if (m->vm)
        return m->vm->malloc(m->vm->ud, size ? size : 1);
    return m->alloc(m->user_data, size ? size : 1);
}

void vega__cz_free(const struct vega__cz_mem *m, void *p)
{
    if (!p)
        return;
    if (m->vm)
        m->vm->free(m->vm->ud, p);
    else
        m->free(m->user_data, p);
}

void *vega__cz_zalloc(void *opaque, unsigned items, unsigned size)
{
    size_t n;
    if (__builtin_mul_overflow((size_t)items, (size_t)size, &n))
        return NULL;
    return vega__cz_alloc(opaque, n);
}

void vega__cz_zfree(void *opaque, void *p)
{
    vega__cz_free(opaque, p);
}

void *vega__cz_lalloc(void *opaque, size_t size)
{
    return vega__cz_alloc(opaque, size);
}

void vega__cz_lfree(void *opaque, void *p)
{
    vega__cz_free(opaque, p);
}
