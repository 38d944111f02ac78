/* SPDX-License-Identifier: MIT */
/* hello_tasks: a multi-thread runtime, ten tasks that sleep a few milliseconds and return a
 * value, joined by the main task. Uses only the installed headers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <vega/vega.h>

#define NTASKS 10

static void *work(void *arg)
{
    uintptr_t i = (uintptr_t)arg;
    int rc = vega_sleep_ms(1 + i % 5);
    if (rc < 0)
        return (void *)(intptr_t)rc;
    return (void *)(i * i); /* each task returns i squared */
}

static void *main_task(void *arg)
{
    (void)arg;
    vega_task *tasks[NTASKS];
    for (uintptr_t i = 0; i < NTASKS; i++) {
        int rc = vega_task_spawn(&tasks[i], work, (void *)i);
        if (rc < 0) {
            fprintf(stderr, "vega_task_spawn: %s\n", vega_strerror(rc));
            exit(1);
        }
    }
    uintptr_t sum = 0;
    for (int i = 0; i < NTASKS; i++) {
        void *res = NULL;
        int rc = vega_task_join(tasks[i], &res, vega_deadline_in_ms(5000));
        if (rc < 0) {
            fprintf(stderr, "vega_task_join: %s\n", vega_strerror(rc));
            exit(1);
        }
        sum += (uintptr_t)res;
    }
    return (void *)sum;
}

int main(void)
{
    vega_rt_opts opts;
    vega_rt_opts_init(&opts);
    opts.flavor = VEGA_RT_MULTI_THREAD;
    opts.workers = 2;

    vega_rt *rt;
    int rc = vega_rt_new(&rt, &opts);
    if (rc < 0) {
        fprintf(stderr, "vega_rt_new: %s (%s)\n", vega_strerror(rc), vega_err_name(rc));
        return 1;
    }
    void *sum = NULL;
    rc = vega_rt_block_on(rt, main_task, NULL, &sum);
    if (rc < 0) {
        fprintf(stderr, "vega_rt_block_on: %s\n", vega_strerror(rc));
        vega_rt_free(rt);
        return 1;
    }
    printf("libvega %s: %d tasks on %u workers (driver %s), sum of squares = %lu\n", vega_version(),
           NTASKS, vega_rt_workers(rt), vega_rt_driver_name(rt), (unsigned long)(uintptr_t)sum);
    vega_rt_free(rt);
    return (uintptr_t)sum == 285 ? 0 : 1; /* 0^2 + 1^2 + ... + 9^2 */
}
