/* SPDX-License-Identifier: MIT */
/* Log-linear histogram: bucket b holds values in [2^(b+s-1), 2^(b+s)) in 2^(s-1) sub-buckets of
 * width 2^b (bucket 0 also holds 0..2^(s-1)), the layout HdrHistogram uses with a unit of 1. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"

int cli_hist_init(struct cli_hist *h, uint64_t highest, unsigned sig_digits)
{
    memset(h, 0, sizeof(*h));
    if (sig_digits < 1 || sig_digits > 5 || highest < 2)
        return -EINVAL;
    uint64_t single = 2;
    for (unsigned i = 0; i < sig_digits; i++)
        single *= 10; /* largest value that must keep a resolution of 1 */
    unsigned sub_bits = 0;
    while ((1ull << sub_bits) < single)
        sub_bits++;
    unsigned buckets = 1;
    uint64_t untrackable = 1ull << sub_bits;
    while (untrackable <= highest) {
        if (untrackable > UINT64_MAX / 2) {
            buckets++;
            break;
        }
        untrackable <<= 1;
        buckets++;
    }
    h->highest = highest;
    h->sub_bits = sub_bits;
    h->digits = sig_digits;
    h->len = (size_t)(buckets + 1) << (sub_bits - 1);
    h->counts = calloc(h->len, sizeof(*h->counts));
    if (!h->counts)
        return -ENOMEM;
    h->min = UINT64_MAX;
    return 0;
}

void cli_hist_fini(struct cli_hist *h)
{
    free(h->counts);
    h->counts = NULL;
}

static size_t index_of(const struct cli_hist *h, uint64_t v)
{
    if (v > h->highest)
        v = h->highest;
    uint64_t mask = (1ull << h->sub_bits) - 1;
    unsigned bucket = (unsigned)(64 - __builtin_clzll(v | mask)) - h->sub_bits;
    return ((size_t)bucket << (h->sub_bits - 1)) + (size_t)(v >> bucket);
}

static unsigned bucket_of(const struct cli_hist *h, size_t i)
{
    size_t b = i >> (h->sub_bits - 1);
    return b ? (unsigned)(b - 1) : 0;
}

/* The lowest value slot i holds. */
static uint64_t value_at(const struct cli_hist *h, size_t i)
{
    unsigned half_bits = h->sub_bits - 1;
    size_t b = i >> half_bits;
    if (b == 0)
        return i;
    uint64_t sub = (i & ((1ull << half_bits) - 1)) + (1ull << half_bits);
    return sub << (b - 1);
}

static uint64_t highest_equivalent(const struct cli_hist *h, size_t i)
{
    return value_at(h, i) + (1ull << bucket_of(h, i)) - 1;
}

size_t cli_hist_index(const struct cli_hist *h, uint64_t v)
{
    return index_of(h, v);
}

uint64_t cli_hist_slot_low(const struct cli_hist *h, size_t i)
{
    return value_at(h, i);
}

uint64_t cli_hist_slot_high(const struct cli_hist *h, size_t i)
{
    return highest_equivalent(h, i);
}

void cli_hist_record_n(struct cli_hist *h, uint64_t v, uint64_t n)
{
    if (n == 0)
        return;
    if (v > h->highest) {
        v = h->highest;
        h->clamped += n;
    }
    h->counts[index_of(h, v)] += n;
    h->total += n;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

int cli_hist_recount(struct cli_hist *h)
{
    h->total = 0;
    h->min = UINT64_MAX;
    h->max = 0;
    for (size_t i = 0; i < h->len; i++) {
        uint64_t c = h->counts[i];
        if (c == 0)
            continue;
        if (c > UINT64_MAX - h->total)
            return -EOVERFLOW;
        h->total += c;
        if (h->min == UINT64_MAX)
            h->min = value_at(h, i);
        h->max = highest_equivalent(h, i);
    }
    if (h->max > h->highest)
        h->max = h->highest;
    return 0;
}

void cli_hist_reset(struct cli_hist *h)
{
    memset(h->counts, 0, h->len * sizeof(*h->counts));
    h->total = h->clamped = 0;
    h->min = UINT64_MAX;
    h->max = 0;
}

void cli_hist_record(struct cli_hist *h, uint64_t v)
{
    if (v > h->highest) {
        v = h->highest;
        h->clamped++;
    }
    h->counts[index_of(h, v)]++;
    h->total++;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

int cli_hist_merge(struct cli_hist *dst, const struct cli_hist *src)
{
    if (dst->len != src->len || dst->sub_bits != src->sub_bits || dst->highest != src->highest)
        return -EINVAL;
    for (size_t i = 0; i < src->len; i++)
        dst->counts[i] += src->counts[i];
    dst->total += src->total;
    dst->clamped += src->clamped;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
    return 0;
}

uint64_t cli_hist_percentile(const struct cli_hist *h, double pct)
{
    if (h->total == 0)
        return 0;
    if (pct > 100.0)
        pct = 100.0;
    if (pct < 0.0)
        pct = 0.0;
    uint64_t want = (uint64_t)(pct / 100.0 * (double)h->total + 0.5);
    if (want < 1)
        want = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < h->len; i++) {
        seen += h->counts[i];
        if (seen >= want) {
            uint64_t v = highest_equivalent(h, i);
            return v < h->max ? v : h->max;
        }
    }
    return h->max;
}

/* Square root by Newton's method: the tools do not link libm. */
double cli_sqrt(double x)
{
    if (!(x > 0.0))
        return 0.0;
    double r = x > 1.0 ? x : 1.0; /* at or above the root: the iterates fall to it */
    for (int i = 0; i < 200; i++) {
        double next = (r + x / r) / 2.0;
        if (next >= r)
            break;
        r = next;
    }
    return r;
}

static double midpoint(const struct cli_hist *h, size_t i)
{
    return (double)value_at(h, i) + (double)((1ull << bucket_of(h, i)) - 1) / 2.0;
}

double cli_hist_mean(const struct cli_hist *h)
{
    if (h->total == 0)
        return 0.0;
    double sum = 0.0;
    for (size_t i = 0; i < h->len; i++)
        if (h->counts[i])
            sum += midpoint(h, i) * (double)h->counts[i];
    return sum / (double)h->total;
}

double cli_hist_stdev(const struct cli_hist *h)
{
    if (h->total == 0)
        return 0.0;
    double mean = cli_hist_mean(h), sq = 0.0;
    for (size_t i = 0; i < h->len; i++) {
        if (h->counts[i]) {
            double d = midpoint(h, i) - mean;
            sq += d * d * (double)h->counts[i];
        }
    }
    return cli_sqrt(sq / (double)h->total);
}
