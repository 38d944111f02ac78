/* SPDX-License-Identifier: MIT */
/* The purity checker's own test: a "core" that does everything a core must not, so that
 * purity.selftest.* can prove tests/purity/check.py reports each of them. Never linked. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <vega/rt.h>
#include <vega/time.h>

#include "base.h"

int vega__purity_impure(pthread_mutex_t *mu, int *fds);

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

int vega__purity_impure(pthread_mutex_t *mu, int *fds)
{
    int r = 0;
    if (getenv("VEGA_PURITY_SELFTEST")) /* the environment */
        r++;
    pthread_mutex_lock(mu); /* threads */
    pthread_mutex_unlock(mu);
    r += socket(AF_INET, SOCK_STREAM, 0) >= 0; /* sockets */
    r += vega__clock_mono() > 0;               /* the clock, through lib/base/clock.c */
    r += vega_now() > 0;                       /* a higher layer (lib/rt) */
    r += vega_sleep_ms(1) == 0;
    qsort(fds, 2, sizeof(int), cmp_int); /* not in the allow-list */
    return r;
}
