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

#include <vega/rt.h>

typedef void (*vtest_fn)(void);
void vtest_register(const char *name, vtest_fn fn);
_Noreturn void vtest_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
_Noreturn void vtest_skip(const char *why);
/* Decodes hex digits (spaces between bytes allowed) into out; fails the test on a bad digit, an
 * odd count or more than cap bytes. Returns the bytes written. */
size_t vtest_unhex(const char *hex, uint8_t *out, size_t cap);
/* The driver the runtime tests use: $VEGA_DRIVER ("uring"/"epoll"), default = library default. */
vega_driver_kind vtest_driver(void);

/* Runs body as the main task of a fresh runtime on vtest_driver(): workers == 0 means the
 * current-thread flavour. Skips (exit 77) when the driver is not available here. */
void vtest_run(void (*body)(void), unsigned workers);
/* The same on a current-thread runtime with the paused clock: time starts at 0 and jumps to
 * the next timer whenever every task waits, so timeouts are exact and cost no wall time. */
void vtest_run_paused(void (*body)(void));
/* True while a body runs under vtest_run_paused. */
bool vtest_paused(void);

/* Checks the time a wait took, on the runtime clock, from t0 (a vega_now() stamp taken before
 * the wait's deadline was computed) to now, for a deadline of ms milliseconds:
 *  - never less than ms (a deadline never fires early; 1 ms of slack for the timer wheel);
 *  - on the paused clock, never more than ms (+ 1 ms): time moves only from timer to timer,
 *    so the wait took exactly its deadline, however slow the machine.
 * On the real clock there is no upper bound: how late a loaded machine runs a task is not
 * something the code guarantees (latency goals belong in bench/). */
#define VCHECK_WAITED(t0, ms) vtest_check_waited(__FILE__, __LINE__, (t0), (ms))
void vtest_check_waited(const char *file, int line, uint64_t t0, uint64_t ms);

#define VTEST(name)                                                                                \
    static void vtest_case_##name(void);                                                           \
    __attribute__((constructor)) static void vtest_reg_##name(void)                                \
    {                                                                                              \
        vtest_register(#name, vtest_case_##name);                                                  \
    }                                                                                              \
    static void vtest_case_##name(void)

/*
 * One line per runtime test: the block that follows is the body of the main task of a fresh
 * runtime of that flavour on vtest_driver() (the CMake glob registers these names too):
 *   VTEST_CT(name) { ... }             current-thread runtime
 *   VTEST_MT(name, workers) { ... }    multi-thread runtime with `workers` (>= 1) workers
 *   VTEST_PAUSED(name) { ... }         current-thread runtime on the paused clock
 */
#define VTEST_RT_(name, how)                                                                       \
    static void vtest_body_##name(void);                                                           \
    VTEST(name)                                                                                    \
    {                                                                                              \
        how;                                                                                       \
    }                                                                                              \
    static void vtest_body_##name(void)
#define VTEST_CT(name)          VTEST_RT_(name, vtest_run(vtest_body_##name, 0))
#define VTEST_MT(name, workers) VTEST_RT_(name, vtest_run(vtest_body_##name, (workers)))
#define VTEST_PAUSED(name)      VTEST_RT_(name, vtest_run_paused(vtest_body_##name))

#define VCHECK(cond)                                                                               \
    do {                                                                                           \
        if (!(cond))                                                                               \
            vtest_fail(__FILE__, __LINE__, "check failed: %s", #cond);                             \
    } while (0)

#define VCHECK_EQ(a, b)                                                                            \
    do {                                                                                           \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                      \
        if (va_ != vb_)                                                                            \
            vtest_fail(__FILE__, __LINE__, "%s == %s failed: %lld != %lld", #a, #b, va_, vb_);     \
    } while (0)

#define VCHECK_STR(a, b)                                                                           \
    do {                                                                                           \
        const char *sa_ = (a), *sb_ = (b);                                                         \
        if (strcmp(sa_, sb_) != 0)                                                                 \
            vtest_fail(__FILE__, __LINE__, "%s == %s failed: \"%s\" != \"%s\"", #a, #b, sa_, sb_); \
    } while (0)

#endif
