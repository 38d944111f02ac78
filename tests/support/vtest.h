/* SPDX-License-Identifier: MIT */
/* A tiny unit-test harness: VTEST(name) cases, checks that abort with a message, exit 77 = skip.
 * Each case is its own CTest test (`ctest -R rt.task.spawn_join`). */
#ifndef VTEST_H
#define VTEST_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*vtest_fn)(void);
void vtest_register(const char *name, vtest_fn fn);
_Noreturn void vtest_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
_Noreturn void vtest_skip(const char *why);
/* Decodes hex digits (spaces between bytes allowed) into out; fails the test on a bad digit, an
 * odd count or more than cap bytes. Returns the bytes written. */
size_t vtest_unhex(const char *hex, uint8_t *out, size_t cap);
/* The driver the runtime tests use: $VEGA_DRIVER ("uring"/"epoll"), default = library default. */
int vtest_driver(void);

/* Runs body as the main task of a fresh runtime on vtest_driver(): workers == 0 means the
 * current-thread flavour. Skips (exit 77) when the driver is not available here. */
void vtest_run(void (*body)(void), unsigned workers);
/* The same on a current-thread runtime with the paused clock: time starts at 0 and jumps to
 * the next timer whenever every task waits, so timeouts are exact and cost no wall time. */
void vtest_run_paused(void (*body)(void));

#define VTEST(name)                                                                            \
    static void vtest_case_##name(void);                                                       \
    __attribute__((constructor)) static void vtest_reg_##name(void)                            \
    {                                                                                          \
        vtest_register(#name, vtest_case_##name);                                              \
    }                                                                                          \
    static void vtest_case_##name(void)

#define VCHECK(cond)                                                                           \
    do {                                                                                       \
        if (!(cond))                                                                           \
            vtest_fail(__FILE__, __LINE__, "check failed: %s", #cond);                         \
    } while (0)

#define VCHECK_EQ(a, b)                                                                        \
    do {                                                                                       \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                  \
        if (va_ != vb_)                                                                        \
            vtest_fail(__FILE__, __LINE__, "%s == %s failed: %lld != %lld", #a, #b, va_, vb_);  \
    } while (0)

#define VCHECK_STR(a, b)                                                                       \
    do {                                                                                       \
        const char *sa_ = (a), *sb_ = (b);                                                     \
        if (strcmp(sa_, sb_) != 0)                                                             \
            vtest_fail(__FILE__, __LINE__, "%s == %s failed: \"%s\" != \"%s\"", #a, #b, sa_,    \
                       sb_);                                                                   \
    } while (0)

#endif
