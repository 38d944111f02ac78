/* SPDX-License-Identifier: MIT */
/* An LD_PRELOAD allocation counter for the bats tests: counts every malloc, calloc, realloc,
 * aligned_alloc, posix_memalign, memalign and valloc call of the process (all threads), and
 * says the count on request. The test names two FIFOs: MALLOC_COUNT_REQ (anything written
 * there is a request) and MALLOC_COUNT_RESP (the count is written there, one decimal line, per
 * request). A thread of its own serves them with open, read and write only, so that a request
 * allocates nothing and touches none of the program's threads (no signal).
 *
 * Build: cc -shared -fPIC -O2 -o malloc-count.so malloc-count.c -lpthread
 * Not for ASan builds (their allocator would be bypassed). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

/* glibc's own entry points, which the wrappers forward to (no dlsym: it allocates). */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t k, size_t n);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t a, size_t n);

static atomic_ulong allocs;

static void counted(void)
{
    atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
}

void *malloc(size_t n)
{
    counted();
    return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
    counted();
    return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
    counted();
    return __libc_realloc(p, n);
}

void *memalign(size_t a, size_t n)
{
    counted();
    return __libc_memalign(a, n);
}

void *aligned_alloc(size_t a, size_t n)
{
    counted();
    return __libc_memalign(a, n);
}

void *valloc(size_t n)
{
    counted();
    return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

int posix_memalign(void **out, size_t a, size_t n)
{
    counted();
    if (a < sizeof(void *) || (a & (a - 1)) != 0)
        return 22; /* EINVAL */
    void *p = __libc_memalign(a, n);
    if (!p && n)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

static void *serve(void *arg)
{
    (void)arg;
    const char *req = getenv("MALLOC_COUNT_REQ"), *resp = getenv("MALLOC_COUNT_RESP");
    for (;;) {
        int fd = open(req, O_RDONLY | O_CLOEXEC); /* waits for a writer */
        if (fd < 0)
            return NULL;
        char c[64];
        while (read(fd, c, sizeof c) > 0)
            ;
        close(fd);
        /* the count, read after the request ended */
        unsigned long v = atomic_load(&allocs);
        char line[32];
        size_t i = sizeof line;
        line[--i] = '\n';
        do {
            line[--i] = (char)('0' + v % 10);
            v /= 10;
        } while (v > 0);
        int o = open(resp, O_WRONLY | O_CLOEXEC); /* waits for the reader */
        if (o < 0)
            return NULL;
        ssize_t w = write(o, line + i, sizeof line - i);
        (void)w;
        close(o);
    }
}

__attribute__((constructor)) static void start(void)
{
    if (!getenv("MALLOC_COUNT_REQ") || !getenv("MALLOC_COUNT_RESP"))
        return;
    pthread_t t;
    if (pthread_create(&t, NULL, serve, NULL) == 0)
        pthread_detach(t);
}
