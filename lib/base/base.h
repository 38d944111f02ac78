/* SPDX-License-Identifier: MIT */
/* Small internal helpers every layer may use: branch hints, assertions, CPU relax, PRNG. */
#ifndef VEGA_BASE_H
#define VEGA_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <vega/err.h>
#include <vega/mem.h>
#include <vega/time.h>

#define vega__likely(x)                     __builtin_expect(!!(x), 1)
#define vega__unlikely(x)                   __builtin_expect(!!(x), 0)
#define VEGA__ARRAY_LEN(a)                  (sizeof(a) / sizeof((a)[0]))
#define VEGA__MIN(a, b)                     ((a) < (b) ? (a) : (b))
#define VEGA__MAX(a, b)                     ((a) > (b) ? (a) : (b))
#define VEGA__CONTAINER_OF(p, type, member) ((type *)((char *)(p)-offsetof(type, member)))

/* Reports a broken invariant and aborts. */
_Noreturn void vega__panic(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define VEGA_PANIC(...) vega__panic(__FILE__, __LINE__, __VA_ARGS__)

/* VEGA_ASSERT: debug-only invariant. VEGA_ALWAYS/VEGA_NEVER: defensive branches that assert in
 * debug builds and stay as plain conditions in release builds (SQLite's habit). */
#ifdef NDEBUG
#define VEGA_ASSERT(x) ((void)0)
#define VEGA_ALWAYS(x) (x)
#define VEGA_NEVER(x)  (x)
#else
#define VEGA_ASSERT(x) ((x) ? (void)0 : VEGA_PANIC("assertion failed: %s", #x))
#define VEGA_ALWAYS(x) ((x) ? 1 : (VEGA_PANIC("assertion failed: %s", #x), 0))
#define VEGA_NEVER(x)  ((x) ? (VEGA_PANIC("assertion failed: !(%s)", #x), 1) : 0)
#endif

/* Bound checks that cannot wrap. The rule of the house: room is checked by adding and
 * comparing (`used + n <= cap`), never as `cap - used - n` on unsigned sizes, which wraps to a
 * huge value once used passes cap - n. These helpers take the three numbers apart so that no
 * caller has to think about it:
 * - vega__fits(used, n, cap): n more bytes fit behind used in cap (false, never a wrap, when
 *   used > cap or used + n would overflow);
 * - vega__room(used, cap): bytes left, 0 when used >= cap. */
static inline bool vega__fits(size_t used, size_t n, size_t cap)
{
    VEGA_ASSERT(used <= cap);
    return used <= cap && n <= cap - used;
}

static inline size_t vega__room(size_t used, size_t cap)
{
    VEGA_ASSERT(used <= cap);
    return used < cap ? cap - used : 0;
}

/* Allocation through a module's vega_mem (m NULL = libc): everything an object owns goes
 * through these, so a block is freed by the allocator that made it. */
static inline void *vega__mem_malloc(const vega_mem *m, size_t n)
{
    return m ? m->malloc(m->ud, n) : malloc(n);
}

static inline void *vega__mem_calloc(const vega_mem *m, size_t n, size_t size)
{
    return m ? m->calloc(m->ud, n, size) : calloc(n, size);
}

/* p NULL behaves as malloc, whatever the hook does with it. */
static inline void *vega__mem_realloc(const vega_mem *m, void *p, size_t n)
{
    if (!m)
        return realloc(p, n);
    return p ? m->realloc(m->ud, p, n) : m->malloc(m->ud, n);
}

/* A zeroed block of size bytes aligned to align (a power of two) from m, which promises only
 * malloc's alignment: *base receives what to give back to vega__mem_free. */
static inline void *vega__mem_calloc_aligned(const vega_mem *m, size_t align, size_t size,
                                             void **base)
{
    void *p = vega__mem_calloc(m, 1, size + align - 1);
    *base = p;
    return p ? (void *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1)) : NULL;
}

static inline void vega__mem_free(const vega_mem *m, void *p)
{
    if (!p)
        return;
    if (m)
        m->free(m->ud, p);
    else
        free(p);
}

static inline void vega__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* xorshift64*: fast, seedable, never returns the same stream for different nonzero seeds. */
static inline uint64_t vega__rand_next(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, n) (n > 0), by Lemire's multiply-shift. */
static inline uint32_t vega__rand_below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(((vega__rand_next(s) >> 32) * (uint64_t)n) >> 32);
}

/* CLOCK_MONOTONIC in nanoseconds. */
vega_tstamp vega__clock_mono(void);

/* Saturating a + b. */
static inline uint64_t vega__sat_add(uint64_t a, uint64_t b)
{
    uint64_t r = a + b;
    return r < a ? UINT64_MAX : r;
}

#endif
