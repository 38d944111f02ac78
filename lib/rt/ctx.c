/* SPDX-License-Identifier: MIT */
/* Lays out a fresh task stack so that the first vega__ctx_switch into it enters the task. */
#include <string.h>

#include "rt_int.h"

void vega__ctx_trampoline(void);

void *vega__ctx_make(void *stack_top, void (*entry)(void *), void *arg)
{
    uintptr_t top = (uintptr_t)stack_top & ~(uintptr_t)15;
#if defined(__x86_64__)
    /* After the switch pops 6 registers and returns into the trampoline, rsp == top, so the
     * trampoline's call leaves rsp % 16 == 8 at entry, as the ABI wants. */
    uint64_t *sp = (uint64_t *)top;
    *--sp = (uint64_t)(uintptr_t)vega__ctx_trampoline; /* return address */
    *--sp = 0;                                         /* rbp */
    *--sp = 0;                                         /* rbx */
    *--sp = (uint64_t)(uintptr_t)arg;                  /* r12 */
    *--sp = (uint64_t)(uintptr_t)entry;                /* r13 */
    *--sp = 0;                                         /* r14 */
    *--sp = 0;                                         /* r15 */
    *--sp = 0x037F00001F80ull;                         /* MXCSR (low), x87 CW (high) */
    return sp;
#elif defined(__aarch64__)
    uint64_t *sp = (uint64_t *)(top - 160);
    memset(sp, 0, 160);
    sp[0] = (uint64_t)(uintptr_t)arg;                   /* x19 */
    sp[1] = (uint64_t)(uintptr_t)entry;                 /* x20 */
    sp[11] = (uint64_t)(uintptr_t)vega__ctx_trampoline; /* x30 (lr) */
    return sp;
#else
#error "libvega has context switches for x86-64 and AArch64 only"
#endif
}
