/* SPDX-License-Identifier: MIT */
/* A counting, failing vega_mem for the HPACK, HTTP/2 and QUIC tests: every block carries its
 * size, so live and peak bytes are exact; fail_at makes the n-th call (and, with fail_after,
 * every later one) return NULL. (failmalloc.h is the one for sweeps that need no byte counts.) */
#ifndef VEGA_TEST_TMEM_H
#define VEGA_TEST_TMEM_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <vega/mem.h>

struct tmem_hdr {
    alignas(max_align_t) size_t size;
};

struct tmem {
    size_t calls, live_blocks, live_bytes, peak_bytes, failed;
    size_t blocks, frees; /* blocks made (malloc, calloc) and freed */
    size_t fail_at;
    bool fail_after;
    vega_mem mem;
};

static inline bool tmem_refuse(struct tmem *m)
{
    m->calls++;
    if (m->fail_at && (m->calls == m->fail_at || (m->fail_after && m->calls > m->fail_at))) {
        m->failed++;
        return true;
    }
    return false;
}

static inline void *tmem_wrap(struct tmem *m, struct tmem_hdr *h, size_t n)
{
    if (!h)
        return NULL;
    h->size = n;
    m->blocks++;
    m->live_blocks++;
    m->live_bytes += n;
    if (m->live_bytes > m->peak_bytes)
        m->peak_bytes = m->live_bytes;
    return h + 1;
}

static inline void *tmem_malloc(void *ud, size_t n)
{
    struct tmem *m = ud;
    if (tmem_refuse(m) || n > SIZE_MAX / 2)
        return NULL;
    return tmem_wrap(m, malloc(sizeof(struct tmem_hdr) + n), n);
}

static inline void *tmem_calloc(void *ud, size_t n, size_t size)
{
    struct tmem *m = ud;
    if (tmem_refuse(m) || (size && n > SIZE_MAX / 2 / size))
        return NULL;
    return tmem_wrap(m, calloc(1, sizeof(struct tmem_hdr) + n * size), n * size);
}

static inline void *tmem_realloc(void *ud, void *p, size_t n)
{
    struct tmem *m = ud;
    if (tmem_refuse(m) || n > SIZE_MAX / 2)
        return NULL;
    struct tmem_hdr *h = (struct tmem_hdr *)p - 1;
    size_t old = h->size;
    h = realloc(h, sizeof(struct tmem_hdr) + n);
    if (!h)
        return NULL;
    h->size = n;
    m->live_bytes = m->live_bytes - old + n;
    if (m->live_bytes > m->peak_bytes)
        m->peak_bytes = m->live_bytes;
    return h + 1;
}

static inline void tmem_free(void *ud, void *p)
{
    struct tmem *m = ud;
    if (!p)
        return;
    struct tmem_hdr *h = (struct tmem_hdr *)p - 1;
    m->frees++;
    m->live_blocks--;
    m->live_bytes -= h->size;
    free(h);
}

static inline void tmem_init(struct tmem *m)
{
    *m = (struct tmem){0};
    m->mem = (vega_mem){tmem_malloc, tmem_calloc, tmem_realloc, tmem_free, m};
}

#endif
