/* SPDX-License-Identifier: MIT */
/* The stream table (lib/quic/stream_map.c): put/get/del, 100k ids of all four types, walks
 * with deletion, growing and shrinking. */
#include <stdlib.h>

#include "qstream.h"
#include "vtest.h"

struct st {
    uint64_t id;
    int seen;
};

VTEST(put_get_del)
{
    struct vega__quic_stream_map m;
    vega__quic_stream_map_init(&m, NULL);
    VCHECK(vega__quic_stream_map_get(&m, 0) == NULL);
    VCHECK(vega__quic_stream_map_del(&m, 0) == NULL);
    size_t pos = 0;
    VCHECK(vega__quic_stream_map_next(&m, &pos) == NULL);
    struct st a = {0, 0}, b = {4, 0}, c = {VEGA_QUIC_MAX_VARINT, 0}, dup = {4, 0};
    VCHECK_EQ(vega__quic_stream_map_put(&m, &a), 0);
    VCHECK_EQ(vega__quic_stream_map_put(&m, &b), 0);
    VCHECK_EQ(vega__quic_stream_map_put(&m, &c), 0);
    VCHECK_EQ(vega__quic_stream_map_put(&m, &dup), -EINVAL);
    VCHECK_EQ(m.n, 3);
    VCHECK(vega__quic_stream_map_get(&m, 0) == &a);
    VCHECK(vega__quic_stream_map_get(&m, 4) == &b);
    VCHECK(vega__quic_stream_map_get(&m, VEGA_QUIC_MAX_VARINT) == &c);
    VCHECK(vega__quic_stream_map_get(&m, 8) == NULL);
    VCHECK(vega__quic_stream_map_del(&m, 4) == &b);
    VCHECK(vega__quic_stream_map_get(&m, 4) == NULL);
    VCHECK(vega__quic_stream_map_del(&m, 4) == NULL);
    VCHECK_EQ(vega__quic_stream_map_put(&m, &dup), 0); /* the id is free again */
    VCHECK(vega__quic_stream_map_get(&m, 4) == &dup);
    VCHECK_EQ(m.n, 3);
    vega__quic_stream_map_fini(&m);
}

VTEST(hundred_thousand_ids)
{
    enum {
        N = 100000
    };
    struct st *s = calloc(N, sizeof *s);
    VCHECK(s != NULL);
    struct vega__quic_stream_map m;
    vega__quic_stream_map_init(&m, NULL);
    for (size_t i = 0; i < N; i++) { /* all four types: 4 * n + type */
        s[i].id = 4 * (uint64_t)(i / 4) + i % 4;
        VCHECK_EQ(vega__quic_stream_map_put(&m, &s[i]), 0);
    }
    VCHECK_EQ(m.n, N);
    for (size_t i = 0; i < N; i++)
        VCHECK(vega__quic_stream_map_get(&m, s[i].id) == &s[i]);
    VCHECK(vega__quic_stream_map_get(&m, 4 * (uint64_t)N) == NULL);
    /* A walk sees each exactly once. */
    size_t pos = 0, count = 0;
    struct st *p;
    while ((p = vega__quic_stream_map_next(&m, &pos))) {
        VCHECK_EQ(p->seen, 0);
        p->seen = 1;
        count++;
    }
    VCHECK_EQ(count, N);
    /* Delete every other one, look everything up. */
    for (size_t i = 0; i < N; i += 2)
        VCHECK(vega__quic_stream_map_del(&m, s[i].id) == &s[i]);
    VCHECK_EQ(m.n, N / 2);
    for (size_t i = 0; i < N; i++)
        VCHECK(vega__quic_stream_map_get(&m, s[i].id) == (i % 2 ? &s[i] : NULL));
    /* Delete while walking: every stream is returned once, the map ends empty. */
    pos = 0;
    count = 0;
    while ((p = vega__quic_stream_map_next(&m, &pos))) {
        VCHECK_EQ(p->seen, 1);
        p->seen = 2;
        VCHECK(vega__quic_stream_map_del(&m, p->id) == p);
        count++;
    }
    VCHECK_EQ(count, N / 2);
    VCHECK_EQ(m.n, 0);
    /* Reuse after emptying: the table shrinks back on put. */
    size_t big = m.cap;
    for (size_t i = 0; i < 10; i++)
        VCHECK_EQ(vega__quic_stream_map_put(&m, &s[i]), 0);
    VCHECK(m.cap < big);
    VCHECK(m.cap <= 64);
    for (size_t i = 0; i < 10; i++)
        VCHECK(vega__quic_stream_map_get(&m, s[i].id) == &s[i]);
    vega__quic_stream_map_fini(&m);
    free(s);
}

/* Churn: streams open and close forever while a few stay; tombstones must not fill the table
 * (every lookup would then scan it) and the table must not grow without bound. */
VTEST(churn_keeps_table_small)
{
    enum {
        LIVE = 100
    };
    struct st s[LIVE];
    struct vega__quic_stream_map m;
    vega__quic_stream_map_init(&m, NULL);
    for (uint64_t i = 0; i < LIVE; i++) {
        s[i].id = i * 4;
        VCHECK_EQ(vega__quic_stream_map_put(&m, &s[i]), 0);
    }
    uint64_t next = LIVE;
    for (int round = 0; round < 200000; round++) {
        size_t k = (size_t)(round % LIVE);
        VCHECK(vega__quic_stream_map_del(&m, s[k].id) == &s[k]);
        s[k].id = next++ * 4 + 1;
        VCHECK_EQ(vega__quic_stream_map_put(&m, &s[k]), 0);
        VCHECK(m.cap <= 512);
    }
    for (size_t i = 0; i < LIVE; i++)
        VCHECK(vega__quic_stream_map_get(&m, s[i].id) == &s[i]);
    VCHECK(vega__quic_stream_map_get(&m, 0) == NULL);
    vega__quic_stream_map_fini(&m);
}
