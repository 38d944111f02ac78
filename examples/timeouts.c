/* SPDX-License-Identifier: MIT */
/* timeouts: deadlines and cancellation. A join with a short deadline gives up with -ETIMEDOUT,
 * a deadline scope caps a long sleep, and a cancelled task's sleep returns -ECANCELED.
 * Uses only the installed headers. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include <vega/vega.h>

static int failures;

#define EXPECT(what, got, want)                                                                    \
    do {                                                                                           \
        int got_ = (got);                                                                          \
        printf("%-40s %-12s (want %s)\n", what, vega_err_name(got_), vega_err_name(want));         \
        if (got_ != (want))                                                                        \
            failures++;                                                                            \
    } while (0)

/* Sleeps 10 s unless something stops it first; returns the sleep's result. */
static void *sleeper(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)vega_sleep_ms(10000);
}

static void *main_task(void *arg)
{
    (void)arg;
    vega_task *t;
    if (vega_task_spawn(&t, sleeper, NULL) < 0)
        return NULL;

    /* 1. Waiting 20 ms for a task that sleeps 10 s times out; the task keeps running. */
    EXPECT("join with a 20 ms deadline", vega_task_join(t, NULL, vega_deadline_in_ms(20)),
           -ETIMEDOUT);

    /* 2. Cancelling it wakes its sleep with -ECANCELED; the join now succeeds. */
    vega_task_cancel(t);
    void *res = NULL;
    EXPECT("join after cancel", vega_task_join(t, &res, vega_deadline_in_ms(5000)), 0);
    EXPECT("the cancelled task's sleep returned", (int)(intptr_t)res, -ECANCELED);

    /* 3. A deadline scope caps every suspension inside it: a 10 s sleep ends after 30 ms. */
    vega_tstamp t0 = vega_now();
    vega_deadline saved = vega_deadline_push(vega_deadline_in_ms(30));
    int rc = vega_sleep_ms(10000);
    vega_deadline_pop(saved);
    uint64_t ms = (vega_now() - t0) / VEGA_NS_PER_MS;
    EXPECT("10 s sleep in a 30 ms deadline scope", rc, -ETIMEDOUT);
    printf("%-40s %lu ms\n", "  ... it returned after", (unsigned long)ms);
    if (ms > 5000)
        failures++;

    /* 4. Deadline 0 means "do not wait". */
    vega_task *t2;
    if (vega_task_spawn(&t2, sleeper, NULL) < 0)
        return NULL;
    EXPECT("join with deadline 0", vega_task_join(t2, NULL, 0), -ETIMEDOUT);
    vega_task_cancel(t2);
    EXPECT("join after cancel", vega_task_join(t2, NULL, VEGA_DEADLINE_NEVER), 0);
    return NULL;
}

int main(void)
{
    vega_rt_opts opts;
    vega_rt_opts_init(&opts);
    opts.flavor = VEGA_RT_CURRENT_THREAD;

    vega_rt *rt;
    int rc = vega_rt_new(&rt, &opts);
    if (rc < 0) {
        fprintf(stderr, "vega_rt_new: %s\n", vega_strerror(rc));
        return 1;
    }
    rc = vega_rt_block_on(rt, main_task, NULL, NULL);
    printf("driver %s: %s\n", vega_rt_driver_name(rt), failures ? "FAILED" : "ok");
    vega_rt_free(rt);
    return rc == 0 && failures == 0 ? 0 : 1;
}
