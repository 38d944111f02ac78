/* SPDX-License-Identifier: MIT */
/* The allocator hook every module that allocates takes (the ngtcp2_mem / nghttp2_mem shape):
 * one type, so that a program routes all of libvega's memory through its own allocator, and a
 * test fails each allocation in turn (a failing-allocator sweep). */
#ifndef VEGA_MEM_H
#define VEGA_MEM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An allocator: all four functions are required, each gets ud first. malloc, calloc and
 * realloc return NULL on failure (realloc leaving the block as it was); realloc and free are
 * never called with NULL. A block is always freed or reallocated through the allocator that
 * made it. Where a module takes a `const vega_mem *`, NULL means libc's malloc family; the
 * struct is retained (it must outlive what was made with it). What each module does after a
 * failure is in its header (in short: the call that needed the memory returns -ENOMEM and
 * the object stays consistent, or closes cleanly). Context: the functions are called from
 * whatever thread runs the module's code (any worker, for a server), so they must be
 * thread-safe when the module runs on a multi-thread runtime. Since 0.1.
 */
typedef struct vega_mem {
    void *(*malloc)(void *ud, size_t n);
    void *(*calloc)(void *ud, size_t n, size_t size);
    void *(*realloc)(void *ud, void *p, size_t n);
    void (*free)(void *ud, void *p);
    void *ud;
} vega_mem;

#ifdef __cplusplus
}
#endif

#endif
