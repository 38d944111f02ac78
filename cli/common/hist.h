/* SPDX-License-Identifier: MIT */
/* A log-linear histogram in the manner of HdrHistogram: fixed memory, values from 0 up to a
 * highest trackable value, each kept to a chosen number of significant decimal digits.
 * Not thread-safe: record from one thread per histogram and merge at the end. */
#ifndef VEGA_CLI_HIST_H
#define VEGA_CLI_HIST_H

#include <stddef.h>
#include <stdint.h>

struct cli_hist {
    uint64_t highest;  /* largest trackable value; larger values are recorded as this */
    unsigned sub_bits; /* log2 of the sub-buckets per bucket */
    unsigned digits;   /* significant decimal digits kept */
    size_t len;        /* slots in counts */
    uint64_t *counts;  /* owned */
    uint64_t total;    /* values recorded */
    uint64_t min, max; /* exact extremes of what was recorded (min is UINT64_MAX when empty) */
    uint64_t clamped;  /* values recorded as `highest` because they were above it */
};

/*
 * Sets up an empty histogram for values 0..highest kept to sig_digits significant digits
 * (1..5): the relative error of any reported value is below 10^-sig_digits. 1 us to 60 s at 3
 * digits takes 136 KiB. Returns 0, -EINVAL (bad arguments) or -ENOMEM.
 */
int cli_hist_init(struct cli_hist *h, uint64_t highest, unsigned sig_digits);

/* Frees the counts; h may be zeroed or initialised. */
void cli_hist_fini(struct cli_hist *h);

/* Records one value (clamped to highest). */
void cli_hist_record(struct cli_hist *h, uint64_t v);

/* The slot of counts that v (clamped to highest) falls in, and the lowest and highest value a
 * slot stands for. */
size_t cli_hist_index(const struct cli_hist *h, uint64_t v);
uint64_t cli_hist_slot_low(const struct cli_hist *h, size_t i);
uint64_t cli_hist_slot_high(const struct cli_hist *h, size_t i);

/* Records n values of v (clamped to highest) at once. */
void cli_hist_record_n(struct cli_hist *h, uint64_t v, uint64_t n);

/* Recomputes total, min and max from the counts (min and max then stand for their slots:
 * the lowest value of the lowest slot, the highest of the highest), after counts were
 * written directly. Returns -EOVERFLOW when the counts add up past UINT64_MAX. */
int cli_hist_recount(struct cli_hist *h);

/* Zeroes every count and the totals; the shape stays. */
void cli_hist_reset(struct cli_hist *h);

/* Adds every count of src to dst. Returns 0, or -EINVAL when their shapes differ. */
int cli_hist_merge(struct cli_hist *dst, const struct cli_hist *src);

/*
 * The value at percentile pct (0..100): the highest value equivalent to the recorded value
 * below which pct percent of the values fall (HdrHistogram's getValueAtPercentile), never more
 * than the exact max. 0 when the histogram is empty.
 */
uint64_t cli_hist_percentile(const struct cli_hist *h, double pct);

/* Mean and standard deviation over the bucket midpoints; 0 when empty. */
double cli_hist_mean(const struct cli_hist *h);
double cli_hist_stdev(const struct cli_hist *h);

/* Square root (Newton's method: the tools do not link libm); 0 for x <= 0. */
double cli_sqrt(double x);

#endif
