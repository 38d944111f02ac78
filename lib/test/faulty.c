/* SPDX-License-Identifier: MIT */
/* The faulty stream: wraps another stream and, driven by a seed, cuts reads short, splits
 * writes into pieces, stalls, and fails at a byte offset or with a probability. */
#include <stdlib.h>
#include <string.h>

#include <vega/test.h>

#include "base.h"

#define WINDOW 16 /* gather entries per inner write */

/* The state of one direction; only the task using that direction touches it. */
struct fdir {
    uint64_t rng;
    uint64_t off; /* bytes through so far */
    int err;      /* sticky injected error, 0 = none */
    uint64_t calls, shorts, delays, yields, errors;
};

struct faulty {
    vega_stream *inner;
    vega_fault_opts o;
    struct fdir rd, wr;
};

void vega_fault_opts_init_versioned(vega_fault_opts *o, int opts_version)
{
    if (opts_version != VEGA_FAULT_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_fault_opts_init: options of another libvega (version %d)", opts_version);
    memset(o, 0, sizeof(*o));
    o->seed = 1;
    o->read_fail_at = VEGA_FAULT_NEVER;
    o->write_fail_at = VEGA_FAULT_NEVER;
}

static bool chance(struct fdir *d, unsigned pct)
{
    return pct && vega__rand_below(&d->rng, 100) < pct;
}

/* Yields with probability yield_pct, then sleeps 1..delay_max_ms with probability delay_pct,
 * never past dl (then -ETIMEDOUT, as a would-block with dl == 0 is). Outside a task neither
 * happens. Returns 0, -ETIMEDOUT or -ECANCELED. */
static int maybe_delay(struct faulty *f, struct fdir *d, vega_deadline dl)
{
    if (!vega_task_current())
        return 0;
    if (chance(d, f->o.yield_pct)) {
        d->yields++;
        int r = vega_yield();
        if (r < 0)
            return r;
    }
    if (!chance(d, f->o.delay_pct))
        return 0;
    d->delays++;
    if (dl == 0)
        return -ETIMEDOUT;
    vega_deadline until = vega_deadline_in_ms(1 + vega__rand_below(&d->rng, f->o.delay_max_ms));
    bool capped = until >= dl;
    int r = vega_sleep_until(capped ? dl : until);
    if (r < 0)
        return r;
    return capped ? -ETIMEDOUT : 0;
}

/* With probability fail_ppm: true, and the caller injects fail_err. */
static bool random_failure(struct faulty *f, struct fdir *d)
{
    return f->o.fail_ppm && vega__rand_below(&d->rng, 1000000) < f->o.fail_ppm;
}

static int inject(struct fdir *d, int err)
{
    d->err = err;
    d->errors++;
    return err;
}

static vega_ssize faulty_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    struct faulty *f = user;
    struct fdir *d = &f->rd;
    d->calls++;
    if (d->err)
        return d->err;
    int r = maybe_delay(f, d, dl);
    if (r < 0)
        return r;
    if (random_failure(f, d))
        return inject(d, f->o.fail_err);
    if (f->o.read_fail_at != VEGA_FAULT_NEVER) {
        if (d->off >= f->o.read_fail_at)
            return inject(d, f->o.read_err);
        if (len > f->o.read_fail_at - d->off)
            len = (size_t)(f->o.read_fail_at - d->off);
    }
    if (chance(d, f->o.short_read_pct)) {
        size_t cut = len < f->o.short_max ? len : f->o.short_max;
        size_t n = 1 + vega__rand_below(&d->rng, (uint32_t)cut);
        if (n < len) {
            d->shorts++;
            len = n;
        }
    }
    vega_ssize n = vega_stream_read(f->inner, buf, len, dl);
    if (n > 0)
        d->off += (uint64_t)n;
    return n;
}

/* Fills win with the bytes [off, off + max) of iov; returns the entries used, *bytes the
 * bytes they cover (<= max; less when WINDOW entries run out). */
static int window(const struct iovec *iov, int iovcnt, size_t off, size_t max, struct iovec *win,
                  size_t *bytes)
{
    int i = 0, n = 0;
    while (i < iovcnt && off >= iov[i].iov_len)
        off -= iov[i++].iov_len;
    *bytes = 0;
    for (; i < iovcnt && n < WINDOW && *bytes < max; i++) {
        size_t take = iov[i].iov_len - off;
        if (take > max - *bytes)
            take = max - *bytes;
        if (take == 0)
            continue;
        win[n].iov_base = (char *)iov[i].iov_base + off;
        win[n].iov_len = take;
        *bytes += take;
        n++;
        off = 0;
    }
    return n;
}

static vega_ssize faulty_writev(void *user, const struct iovec *iov, int iovcnt, size_t *written,
                                vega_deadline dl)
{
    struct faulty *f = user;
    struct fdir *d = &f->wr;
    size_t total = 0, done = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    *written = 0;
    d->calls++;
    if (d->err)
        return d->err;

    /* How far this write goes before an injected error, if any. */
    size_t limit = total;
    int err = 0;
    if (random_failure(f, d)) {
        limit = total ? vega__rand_below(&d->rng,
                                         (uint32_t)(total < UINT32_MAX ? total + 1 : UINT32_MAX))
                      : 0;
        err = f->o.fail_err;
    }
    if (f->o.write_fail_at != VEGA_FAULT_NEVER && d->off + total > f->o.write_fail_at) {
        uint64_t left = d->off >= f->o.write_fail_at ? 0 : f->o.write_fail_at - d->off;
        if (left < limit || !err) {
            limit = left < limit ? (size_t)left : limit;
            err = f->o.write_err;
        }
    }
    bool cut = chance(d, f->o.short_write_pct) && limit > 1;
    if (cut)
        d->shorts++;

    int r = maybe_delay(f, d, dl);
    while (r == 0 && done < limit) {
        size_t piece = limit - done;
        if (cut) {
            size_t m = 1 + vega__rand_below(&d->rng, (uint32_t)f->o.short_max);
            piece = m < piece ? m : piece;
        }
        struct iovec win[WINDOW];
        size_t bytes;
        int n = window(iov, iovcnt, done, piece, win, &bytes);
        size_t w = 0;
        vega_ssize wr = vega_stream_writev(f->inner, win, n, &w, dl);
        done += w;
        d->off += w;
        if (wr < 0) {
            r = (int)wr;
            break;
        }
        if (cut && done < limit)
            r = maybe_delay(f, d, dl);
    }
    *written = done;
    if (r < 0)
        return r;
    if (err)
        return inject(d, err);
    return (vega_ssize)total;
}

static int faulty_shutdown(void *user, int how, vega_deadline dl)
{
    struct faulty *f = user;
    return vega_stream_shutdown(f->inner, how, dl);
}

static int faulty_close(void *user, vega_deadline dl)
{
    struct faulty *f = user;
    int r = vega_stream_close(f->inner, dl);
    free(f);
    return r;
}

static const vega_stream_ops faulty_ops = {
    .name = "faulty",
    .read = faulty_read,
    .writev = faulty_writev,
    .shutdown = faulty_shutdown,
    .close = faulty_close,
};

int vega_faulty_new_versioned(vega_stream **out, vega_stream *inner, const vega_fault_opts *opts,
                              int opts_version)
{
    if (opts_version != VEGA_FAULT_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    if (!out || !inner || !opts || opts->short_read_pct > 100 || opts->short_write_pct > 100 ||
        opts->delay_pct > 100 || opts->yield_pct > 100 || opts->fail_ppm > 1000000 ||
        opts->read_err > 0 || opts->write_err > 0 || opts->fail_err > 0)
        return -EINVAL;
    struct faulty *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->inner = inner;
    f->o = *opts;
    if (!f->o.short_max)
        f->o.short_max = 16;
    if (f->o.short_max > UINT32_MAX)
        f->o.short_max = UINT32_MAX;
    if (!f->o.delay_max_ms)
        f->o.delay_max_ms = 3;
    if (!f->o.read_err)
        f->o.read_err = -ECONNRESET;
    if (!f->o.write_err)
        f->o.write_err = -ECONNRESET;
    if (!f->o.fail_err)
        f->o.fail_err = -ECONNRESET;
    /* Two independent generators, so each direction's faults depend only on its own calls. */
    uint64_t s = opts->seed;
    f->rd.rng = vega__rand_next(&s) | 1;
    f->wr.rng = vega__rand_next(&s) | 1;
    int r = vega_stream_new(out, &faulty_ops, f);
    if (r < 0)
        free(f);
    return r;
}

/* Each vega_fault_stats layout's size (API rules: ABI): index = version. */
static const size_t stats_layout[VEGA_FAULT_STATS_VERSION + 1] = {
    [1] = sizeof(vega_fault_stats),
};

int vega_faulty_get_stats_versioned(vega_stream *s, vega_fault_stats *out, int stats_version)
{
    if (!s || !out || vega_stream_get_ops(s) != &faulty_ops || stats_version < 1 ||
        stats_version > VEGA_FAULT_STATS_VERSION)
        return -EINVAL;
    struct faulty *f = vega_stream_user(s);
    vega_fault_stats all = {
        .reads = f->rd.calls,
        .writes = f->wr.calls,
        .short_reads = f->rd.shorts,
        .short_writes = f->wr.shorts,
        .delays = f->rd.delays + f->wr.delays,
        .yields = f->rd.yields + f->wr.yields,
        .errors = f->rd.errors + f->wr.errors,
        .bytes_read = f->rd.off,
        .bytes_written = f->wr.off,
    };
    memcpy(out, &all, stats_layout[stats_version]);
    return 0;
}
