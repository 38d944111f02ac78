/* SPDX-License-Identifier: MIT */
/* Runs one named case (argv[1]) or every case of this test program. */
#include <signal.h>
#include <stdarg.h>

#include <vega/rt.h>

#include "vtest.h"

#define VTEST_MAX 512

static struct {
    const char *name;
    vtest_fn fn;
} cases[VTEST_MAX];
static int ncases;
static const char *current;

void vtest_register(const char *name, vtest_fn fn)
{
    if (ncases == VTEST_MAX) {
        fprintf(stderr, "vtest: too many cases\n");
        abort();
    }
    cases[ncases].name = name;
    cases[ncases].fn = fn;
    ncases++;
}

void vtest_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "FAIL %s (%s:%d): ", current ? current : "?", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

void vtest_skip(const char *why)
{
    fprintf(stderr, "SKIP %s: %s\n", current ? current : "?", why);
    exit(77);
}

vega_driver_kind vtest_driver(void)
{
    const char *d = getenv("VEGA_DRIVER");
    if (d && strcmp(d, "epoll") == 0)
        return VEGA_DRIVER_EPOLL;
    if (d && strcmp(d, "uring") == 0)
        return VEGA_DRIVER_URING;
    return VEGA_DRIVER_DEFAULT;
}

static void (*run_body)(void);
static bool run_paused; /* written before the runtime's threads start */

bool vtest_paused(void)
{
    return run_paused;
}

void vtest_check_waited(const char *file, int line, uint64_t t0, uint64_t ms)
{
    uint64_t el = vega_now() - t0, want = ms * VEGA_NS_PER_MS;
    if (el + VEGA_NS_PER_MS < want)
        vtest_fail(file, line, "waited %.3f ms: less than the %" PRIu64 " ms deadline",
                   (double)el / VEGA_NS_PER_MS, ms);
    if (run_paused && el > want + VEGA_NS_PER_MS)
        vtest_fail(file, line,
                   "waited %.3f ms of paused clock: more than the %" PRIu64 " ms deadline",
                   (double)el / VEGA_NS_PER_MS, ms);
}

static void *run_task(void *arg)
{
    (void)arg;
    run_body();
    return NULL;
}

static void run_with(void (*body)(void), unsigned workers, bool paused);

void vtest_run(void (*body)(void), unsigned workers)
{
    run_with(body, workers, false);
}

void vtest_run_paused(void (*body)(void))
{
    run_with(body, 0, true);
}

static void run_with(void (*body)(void), unsigned workers, bool paused)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.flavor = workers ? VEGA_RT_MULTI_THREAD : VEGA_RT_CURRENT_THREAD;
    o.workers = workers;
    o.paused_clock = paused;
    o.driver = vtest_driver();
    vega_rt *rt;
    int r = vega_rt_new(&rt, &o);
    if (r == -ENOSYS || r == -EPERM)
        vtest_skip("driver not available here");
    if (r != 0)
        vtest_fail(__FILE__, __LINE__, "vega_rt_new: %s", vega_strerror(r));
    run_body = body;
    run_paused = paused;
    r = vega_rt_block_on(rt, run_task, NULL, NULL);
    run_paused = false;
    if (r != 0)
        vtest_fail(__FILE__, __LINE__, "vega_rt_block_on: %s", vega_strerror(r));
    vega_rt_free(rt);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < ncases; i++)
            printf("%s\n", cases[i].name);
        return 0;
    }
    int ran = 0;
    for (int i = 0; i < ncases; i++) {
        if (argc > 1 && strcmp(argv[1], cases[i].name) != 0)
            continue;
        current = cases[i].name;
        cases[i].fn();
        printf("ok %s\n", cases[i].name);
        ran++;
    }
    if (argc > 1 && ran == 0) {
        fprintf(stderr, "vtest: no case named %s\n", argv[1]);
        return 2;
    }
    return 0;
}

size_t vtest_unhex(const char *h, uint8_t *out, size_t cap)
{
    size_t n = 0;
    while (*h) {
        if (*h == ' ') {
            h++;
            continue;
        }
        unsigned v;
        if (n == cap || !h[1] || sscanf(h, "%2x", &v) != 1)
            vtest_fail(__FILE__, __LINE__, "bad hex at \"%.8s\"", h);
        out[n++] = (uint8_t)v;
        h += 2;
    }
    return n;
}
