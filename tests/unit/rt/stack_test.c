/* SPDX-License-Identifier: MIT */
/* Task stacks: overflow is caught (guard page or canary) rather than corrupting memory;
 * many live tasks stay within vm.max_map_count; stack size is an option. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vega/rt.h>

#include "vtest.h"

static vega_rt *make_rt(size_t stack_size, bool guard)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.flavor = VEGA_RT_CURRENT_THREAD;
    o.driver = vtest_driver();
    o.stack_size = stack_size;
    o.stack_guard = guard;
    vega_rt *rt;
    int r = vega_rt_new(&rt, &o);
    if (r < 0)
        vtest_fail(__FILE__, __LINE__, "vega_rt_new: %s", vega_strerror(r));
    return rt;
}

static __attribute__((noinline)) unsigned recurse(unsigned n)
{
    volatile char buf[512];
    memset((char *)buf, (int)n, sizeof buf);
    if (n == 0)
        return (unsigned char)buf[7];
    return recurse(n - 1) + (unsigned char)buf[n % 512];
}

static void *deep(void *arg)
{
    return (void *)(uintptr_t)recurse((unsigned)(uintptr_t)arg);
}

VTEST(overflow_is_caught)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    vtest_skip("sanitizers report stack overflow their own way");
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    vtest_skip("sanitizers report stack overflow their own way");
#endif
#endif
    pid_t pid = fork();
    VCHECK(pid >= 0);
    if (pid == 0) {
        /* Child: 64 KiB stacks, recursion that needs ~1 MiB. */
        int devnull = open("/dev/null", 1);
        dup2(devnull, 2);
        vega_rt *rt = make_rt(64 * 1024, true);
        vega_rt_block_on(rt, deep, (void *)(uintptr_t)2000, NULL);
        _exit(0); /* not reached: the overflow must be caught */
    }
    int status;
    VCHECK_EQ(waitpid(pid, &status, 0), pid);
    VCHECK(WIFSIGNALED(status));
    VCHECK(WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGABRT ||
           WTERMSIG(status) == SIGBUS);
}

VTEST(deep_but_fits)
{
    /* 1 MiB stacks take the same recursion fine. */
    vega_rt *rt = make_rt(1024 * 1024, true);
    void *res;
    VCHECK_EQ(vega_rt_block_on(rt, deep, (void *)(uintptr_t)1000, &res), 0);
    vega_rt_free(rt);
}

static void *parked(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)vega_sleep_until(VEGA_DEADLINE_NEVER);
}

static unsigned map_count(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    unsigned n = 0;
    int c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static void *root_many(void *arg)
{
    unsigned n = (unsigned)(uintptr_t)arg;
    unsigned before = map_count();
    vega_task **t = malloc(n * sizeof *t);
    for (unsigned i = 0; i < n; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], parked, NULL), 0);
    VCHECK_EQ(vega_sleep_ms(1), 0); /* let them all start (and take stacks) */
    unsigned after = map_count();
    /* Guards must not cost a VMA per stack (vm.max_map_count defaults to 65530). */
    printf("%u live tasks: %u -> %u mappings\n", n, before, after);
    VCHECK(after < before + n / 2 + 8); /* (mappings may also merge: after < before) */
    for (unsigned i = 0; i < n; i++) {
        vega_task_cancel(t[i]);
        void *res;
        VCHECK_EQ(vega_task_join(t[i], &res, VEGA_DEADLINE_NEVER), 0);
        VCHECK_EQ((intptr_t)res, -ECANCELED);
    }
    free(t);
    return NULL;
}

VTEST(many_guarded_stacks)
{
    vega_rt *rt = make_rt(0, true);
    vega_rt_opts o;
    (void)o;
    /* 40,000 live tasks (fewer under sanitizers, whose per-thread state does not scale). */
    const char *sc = getenv("VEGA_TEST_SCALE");
    unsigned scale = sc && atoi(sc) > 0 ? (unsigned)atoi(sc) : 1;
    VCHECK_EQ(vega_rt_block_on(rt, root_many, (void *)(uintptr_t)(40000 / scale), NULL), 0);
    vega_rt_free(rt);
}
