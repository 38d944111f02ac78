/* SPDX-License-Identifier: MIT */
/* Table-driven layout checks of the versioned option structs (docs/ARCHITECTURE.md, API rules:
 * ABI): one row per layout a program may have been built against, one loop. */
#ifndef VTEST_ABI_LAYOUT_H
#define VTEST_ABI_LAYOUT_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "vtest.h"

typedef void (*abi_init_fn)(void *o, int version);

struct abi_layout {
    const char *name; /* the struct */
    abi_init_fn init; /* its _init_versioned */
    int version;      /* the layout */
    size_t size;      /* that layout's bytes: where the first field it lacks starts (sizeof for
                         the current one) */
    int current;      /* the struct's VERSION macro */
    size_t sizeof_;   /* sizeof the struct in these headers */
};

/* The init of T through one signature (a call through a cast function pointer is undefined). */
#define ABI_INIT_FN(T)                                                                             \
    static void abi_init_##T(void *o, int v)                                                       \
    {                                                                                              \
        T##_init_versioned((T *)o, v);                                                             \
    }
/* A row: T at layout v, size bytes long; CUR is T's VERSION macro. */
#define ABI_ROW(T, CUR, v, size)                                                                   \
    {                                                                                              \
#T, abi_init_##T, (v), (size), (CUR), sizeof(T)                                            \
    }
/* The current layout of T: all of it. */
#define ABI_NOW(T, CUR) ABI_ROW(T, CUR, CUR, sizeof(T))

#define ABI_CANARY 64

/*
 * For every row: the init of that layout on a buffer of its size (0xa5 after it) writes
 * something and nothing past it. For every struct: its rows go 1, 2, ... up to its VERSION
 * macro, each layout longer than the one before (fields are only appended), and the last is
 * the whole struct (a VERSION bumped without a row, or a row missing, fails here).
 */
static inline void abi_check_layouts(const struct abi_layout *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct abi_layout *r = &t[i];
        bool first = i == 0 || strcmp(t[i - 1].name, r->name) != 0;
        bool last = i + 1 == n || strcmp(t[i + 1].name, r->name) != 0;
        if (first && r->version != 1)
            vtest_fail(__FILE__, __LINE__, "%s: the first row is layout %d, not 1", r->name,
                       r->version);
        if (!first && (r->version != t[i - 1].version + 1 || r->size <= t[i - 1].size))
            vtest_fail(__FILE__, __LINE__, "%s layout %d: not the next layout, or not longer",
                       r->name, r->version);
        if (last && (r->version != r->current || r->size != r->sizeof_))
            vtest_fail(__FILE__, __LINE__,
                       "%s: the last row (layout %d, %zu bytes) is not the "
                       "current one (%d, %zu bytes)",
                       r->name, r->version, r->size, r->current, r->sizeof_);
        unsigned char *buf = malloc(r->size + ABI_CANARY);
        VCHECK(buf != NULL);
        memset(buf, 0xa5, r->size + ABI_CANARY);
        r->init(buf, r->version);
        size_t wrote = 0;
        for (size_t k = 0; k < r->size; k++)
            wrote += buf[k] != 0xa5;
        if (wrote == 0)
            vtest_fail(__FILE__, __LINE__, "%s layout %d: init wrote nothing", r->name, r->version);
        for (size_t k = r->size; k < r->size + ABI_CANARY; k++)
            if (buf[k] != 0xa5)
                vtest_fail(__FILE__, __LINE__, "%s layout %d: init wrote byte %zu, past its %zu",
                           r->name, r->version, k, r->size);
        free(buf);
    }
}

#endif
