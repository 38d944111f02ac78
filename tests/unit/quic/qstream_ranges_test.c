/* SPDX-License-Identifier: MIT */
/* Range sets (lib/quic/ranges.c): merging, splitting, lookups, the max cap, speed of the
 * sequential case, and a bitmap model under random operations. */
#include <time.h>

#include "base.h"
#include "qstream.h"
#include "vtest.h"

/* The set holds exactly the given ranges (pairs of start, end). */
static void expect(const struct vega__quic_ranges *s, const uint64_t *want, size_t n)
{
    VCHECK_EQ(s->n, n);
    for (size_t i = 0; i < n; i++) {
        VCHECK_EQ(s->r[i].start, want[2 * i]);
        VCHECK_EQ(s->r[i].end, want[2 * i + 1]);
    }
}
#define EXPECT(s, ...)                                                                             \
    do {                                                                                           \
        const uint64_t w_[] = {__VA_ARGS__};                                                       \
        expect(s, w_, sizeof w_ / sizeof w_[0] / 2);                                               \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

VTEST(add_merges_adjacent_and_overlapping)
{
    struct vega__quic_ranges s;
    vega__quic_ranges_init(&s, 0, NULL);
    VCHECK_EQ(vega__quic_ranges_add(&s, 5, 5), 0); /* empty: nothing */
    VCHECK_EQ(s.n, 0);
    VCHECK_EQ(vega__quic_ranges_add(&s, 0, 5), 0);
    VCHECK_EQ(vega__quic_ranges_add(&s, 10, 15), 0);
    EXPECT(&s, 0, 5, 10, 15);
    VCHECK_EQ(vega__quic_ranges_add(&s, 5, 10), 0); /* adjacent on both sides: one range */
    EXPECT(&s, 0, 15);
    VCHECK_EQ(vega__quic_ranges_add(&s, 20, 25), 0);
    VCHECK_EQ(vega__quic_ranges_add(&s, 15, 16), 0); /* adjacent to the lower one only */
    EXPECT(&s, 0, 16, 20, 25);
    VCHECK_EQ(vega__quic_ranges_add(&s, 3, 8), 0); /* inside */
    EXPECT(&s, 0, 16, 20, 25);
    VCHECK_EQ(vega__quic_ranges_add(&s, 18, 19), 0); /* a new one in the middle */
    EXPECT(&s, 0, 16, 18, 19, 20, 25);
    VCHECK_EQ(vega__quic_ranges_add(&s, 17, 30), 0); /* swallows two, extends the last */
    EXPECT(&s, 0, 16, 17, 30);
    VCHECK_EQ(vega__quic_ranges_add(&s, 100, 110), 0);
    VCHECK_EQ(vega__quic_ranges_add(&s, 90, 95), 0); /* before the last */
    EXPECT(&s, 0, 16, 17, 30, 90, 95, 100, 110);
    VCHECK_EQ(vega__quic_ranges_add(&s, 95, 100), 0);
    EXPECT(&s, 0, 16, 17, 30, 90, 110);
    vega__quic_ranges_fini(&s);

    /* In front of everything, and one range covering many. */
    vega__quic_ranges_init(&s, 0, NULL);
    for (uint64_t i = 1; i <= 100; i++)
        VCHECK_EQ(vega__quic_ranges_add(&s, i * 10, i * 10 + 5), 0);
    VCHECK_EQ(s.n, 100);
    VCHECK_EQ(vega__quic_ranges_add(&s, 0, 2), 0);
    VCHECK_EQ(s.n, 101);
    VCHECK_EQ(s.r[0].start, 0);
    VCHECK_EQ(vega__quic_ranges_add(&s, 13, 1000), 0); /* adjacent to the last */
    EXPECT(&s, 0, 2, 10, 1005);
    VCHECK_EQ(vega__quic_ranges_add(&s, 0, UINT64_MAX), 0);
    EXPECT(&s, 0, UINT64_MAX);
    vega__quic_ranges_fini(&s);
}

VTEST(remove_splits_and_trims)
{
    struct vega__quic_ranges s;
    vega__quic_ranges_init(&s, 0, NULL);
    VCHECK_EQ(vega__quic_ranges_add(&s, 0, 100), 0);
    VCHECK_EQ(vega__quic_ranges_remove(&s, 10, 20), 0); /* split */
    EXPECT(&s, 0, 10, 20, 100);
    VCHECK_EQ(vega__quic_ranges_remove(&s, 10, 20), 0); /* nothing there */
    EXPECT(&s, 0, 10, 20, 100);
    VCHECK_EQ(vega__quic_ranges_remove(&s, 5, 25), 0); /* tail of one, head of the next */
    EXPECT(&s, 0, 5, 25, 100);
    VCHECK_EQ(vega__quic_ranges_remove(&s, 0, 5), 0); /* exactly one */
    EXPECT(&s, 25, 100);
    VCHECK_EQ(vega__quic_ranges_remove(&s, 90, 200), 0);
    EXPECT(&s, 25, 90);
    VCHECK_EQ(vega__quic_ranges_remove(&s, 0, 26), 0);
    EXPECT(&s, 26, 90);
    VCHECK_EQ(vega__quic_ranges_remove(&s, 30, 30), 0);
    EXPECT(&s, 26, 90);
    for (uint64_t i = 0; i < 10; i++) /* holes every 6 */
        VCHECK_EQ(vega__quic_ranges_remove(&s, 30 + i * 6, 32 + i * 6), 0);
    VCHECK_EQ(s.n, 11);
    VCHECK_EQ(vega__quic_ranges_remove(&s, 31, 81), 0); /* many at once */
    EXPECT(&s, 26, 30, 81, 84, 86, 90);
    VCHECK_EQ(vega__quic_ranges_remove(&s, 0, UINT64_MAX), 0);
    VCHECK_EQ(s.n, 0);
    VCHECK_EQ(vega__quic_ranges_remove(&s, 0, 10), 0);
    vega__quic_ranges_fini(&s);
}

VTEST(contains_covered_to_find)
{
    struct vega__quic_ranges s;
    vega__quic_ranges_init(&s, 0, NULL);
    VCHECK(!vega__quic_ranges_contains(&s, 0));
    VCHECK_EQ(vega__quic_ranges_covered_to(&s, 7), 7);
    VCHECK_EQ(vega__quic_ranges_find(&s, 7), 0);
    VCHECK_EQ(vega__quic_ranges_add(&s, 10, 20), 0);
    VCHECK_EQ(vega__quic_ranges_add(&s, 30, 40), 0);
    VCHECK(!vega__quic_ranges_contains(&s, 9));
    VCHECK(vega__quic_ranges_contains(&s, 10));
    VCHECK(vega__quic_ranges_contains(&s, 19));
    VCHECK(!vega__quic_ranges_contains(&s, 20));
    VCHECK(vega__quic_ranges_contains(&s, 39));
    VCHECK(!vega__quic_ranges_contains(&s, 40));
    VCHECK(!vega__quic_ranges_contains(&s, UINT64_MAX));
    VCHECK_EQ(vega__quic_ranges_covered_to(&s, 10), 20);
    VCHECK_EQ(vega__quic_ranges_covered_to(&s, 15), 20);
    VCHECK_EQ(vega__quic_ranges_covered_to(&s, 20), 20);
    VCHECK_EQ(vega__quic_ranges_covered_to(&s, 25), 25);
    VCHECK_EQ(vega__quic_ranges_covered_to(&s, 30), 40);
    VCHECK_EQ(vega__quic_ranges_find(&s, 0), 0);
    VCHECK_EQ(vega__quic_ranges_find(&s, 20), 0); /* adjacent from below */
    VCHECK_EQ(vega__quic_ranges_find(&s, 21), 1);
    VCHECK_EQ(vega__quic_ranges_find(&s, 41), 2);
    vega__quic_ranges_fini(&s);
}

/* ACK generation keeps the most recent ranges: over max, the lowest goes. */
VTEST(max_drops_lowest)
{
    struct vega__quic_ranges s;
    vega__quic_ranges_init(&s, 3, NULL);
    for (uint64_t pn = 0; pn < 10; pn += 2)
        VCHECK_EQ(vega__quic_ranges_add(&s, pn, pn + 1), 0);
    EXPECT(&s, 4, 5, 6, 7, 8, 9);
    VCHECK_EQ(vega__quic_ranges_add(&s, 9, 10), 0); /* extends: nothing dropped */
    EXPECT(&s, 4, 5, 6, 7, 8, 10);
    VCHECK_EQ(vega__quic_ranges_add(&s, 5, 6), 0); /* merges two */
    EXPECT(&s, 4, 7, 8, 10);
    VCHECK_EQ(vega__quic_ranges_add(&s, 0, 1), 0); /* a new lowest: fits (3 now) */
    EXPECT(&s, 0, 1, 4, 7, 8, 10);
    VCHECK_EQ(vega__quic_ranges_add(&s, 2, 3), 0); /* in the middle: the lowest goes */
    EXPECT(&s, 2, 3, 4, 7, 8, 10);
    VCHECK_EQ(vega__quic_ranges_remove(&s, 5, 6), 0); /* a split over max drops the lowest */
    EXPECT(&s, 4, 5, 6, 7, 8, 10);
    /* Many more: the front slides, the allocation stays small. */
    for (uint64_t pn = 100; pn < 100000; pn += 2)
        VCHECK_EQ(vega__quic_ranges_add(&s, pn, pn + 1), 0);
    EXPECT(&s, 99994, 99995, 99996, 99997, 99998, 99999);
    VCHECK(s.cap <= 16);
    vega__quic_ranges_fini(&s);
}

VTEST(sequential_million_fast)
{
    struct vega__quic_ranges s;
    vega__quic_ranges_init(&s, 0, NULL);
    double t0 = now_s();
    for (uint64_t pn = 0; pn < 1000000; pn++)
        VCHECK_EQ(vega__quic_ranges_add(&s, pn, pn + 1), 0);
    EXPECT(&s, 0, 1000000);
    /* A million separate ranges (every other number), then removed from the low end. */
    vega__quic_ranges_clear(&s);
    for (uint64_t pn = 0; pn < 2000000; pn += 2)
        VCHECK_EQ(vega__quic_ranges_add(&s, pn, pn + 1), 0);
    VCHECK_EQ(s.n, 1000000);
    VCHECK(vega__quic_ranges_contains(&s, 1234568));
    VCHECK(!vega__quic_ranges_contains(&s, 1234567));
    for (uint64_t pn = 0; pn < 2000000; pn += 2)
        VCHECK_EQ(vega__quic_ranges_remove(&s, 0, pn + 1), 0);
    VCHECK_EQ(s.n, 0);
    /* About 20 ms in a release build; O(n) per operation would take minutes, which the test's
     * CTest timeout catches. The time itself is not asserted: machines are noisy (under TSan
     * on a loaded machine it took 2.5 s). */
    printf("%.3f s\n", now_s() - t0);
    vega__quic_ranges_fini(&s);
}

/* Random adds and removes against a bitmap: the set stays canonical and agrees on every
 * lookup. */
VTEST(random_model)
{
    enum {
        N = 512
    };
    uint64_t rng = 12345;
    for (int round = 0; round < 200; round++) {
        struct vega__quic_ranges s;
        vega__quic_ranges_init(&s, 0, NULL);
        bool bits[N] = {0};
        for (int op = 0; op < 60; op++) {
            uint64_t a = vega__rand_below(&rng, N), b = a + vega__rand_below(&rng, 64);
            if (b > N)
                b = N;
            bool add = vega__rand_below(&rng, 3) != 0;
            if (add)
                VCHECK_EQ(vega__quic_ranges_add(&s, a, b), 0);
            else
                VCHECK_EQ(vega__quic_ranges_remove(&s, a, b), 0);
            for (uint64_t i = a; i < b; i++)
                bits[i] = add;
            for (size_t i = 0; i < s.n; i++) {
                VCHECK(s.r[i].start < s.r[i].end);
                if (i > 0)
                    VCHECK(s.r[i - 1].end < s.r[i].start);
            }
            for (uint64_t v = 0; v < N; v++) {
                VCHECK_EQ(vega__quic_ranges_contains(&s, v), bits[v]);
                uint64_t c = v;
                while (c < N && bits[c])
                    c++;
                VCHECK_EQ(vega__quic_ranges_covered_to(&s, v), c);
            }
        }
        vega__quic_ranges_fini(&s);
    }
}
