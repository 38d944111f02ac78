/* SPDX-License-Identifier: MIT */
/* vega-load's reports over time: --latency-log (HdrHistogram's interval log, one interval a
 * second), --json-lines (a JSON object a second on stdout), the terminal dashboard's seconds
 * (dash.c) and --fail-if (thresholds checked after the run). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "load.h"

#define IVL_NS VEGA_NS_PER_S

int load_ivl_setup(struct load_run *r)
{
    const struct load_opts *o = r->o;
    struct load_ivl *v = &r->ivl;
    if (!o->latency_log && !o->json_lines && !o->html && !o->progress)
        return 0;
    v->on = true;
    int e = cli_hist_init(&v->h, LOAD_HIST_MAX_US, LOAD_HIST_DIGITS);
    if (e < 0) {
        cli_err_code("intervals", e);
        return e;
    }
    for (unsigned i = 0; i < r->nworkers; i++) {
        r->w[i].ivl = calloc(v->h.len, sizeof(*r->w[i].ivl));
        if (!r->w[i].ivl) {
            cli_err_code("intervals", -ENOMEM);
            return -ENOMEM;
        }
    }
    if (o->latency_log) {
        v->log = fopen(o->latency_log, "w");
        if (!v->log) {
            e = -errno;
            cli_err(o->latency_log, "%s", strerror(-e));
            return e;
        }
    }
    return 0;
}

void load_ivl_start(struct load_run *r)
{
    struct load_ivl *v = &r->ivl;
    if (!v->on)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    vega_tstamp now = vega_now();
    v->wall_offset_ns = (int64_t)ts.tv_sec * (int64_t)VEGA_NS_PER_S + ts.tv_nsec - (int64_t)now;
    v->at = r->measure_start;
    v->wall_at = (double)((int64_t)v->at + v->wall_offset_ns) / 1e9;
    if (v->log) {
        v->w = (struct hdrlog_writer){.f = v->log, .start_s = v->wall_at, .unit_ratio = 1000.0};
        char comment[200];
        snprintf(comment, sizeof(comment),
                 "vega-load %s: latencies in microseconds (corrected with -R), Interval_Max in "
                 "milliseconds",
                 r->o->url ? r->o->url : r->o->target);
        v->error = hdrlog_write_header(&v->w, comment);
    }
}

/* Adds up what the workers counted in the interval and zeroes it for the next. */
static void take(struct load_run *r)
{
    struct load_ivl *v = &r->ivl;
    cli_hist_reset(&v->h);
    for (unsigned i = 0; i < r->nworkers; i++) {
        _Atomic uint64_t *c = r->w[i].ivl;
        for (size_t s = 0; s < v->h.len; s++) {
            if (atomic_load_explicit(&c[s], memory_order_relaxed) == 0)
                continue;
            uint64_t n = atomic_exchange_explicit(&c[s], 0, memory_order_relaxed);
            v->h.counts[s] += n;
        }
    }
    cli_hist_recount(&v->h);
}

/* What the workers counted in the interval: requests, errors and responses by status class. */
struct counts {
    uint64_t rt, errors, status[6];
};

static void counted(struct load_run *r, struct counts *d)
{
    struct load_ivl *v = &r->ivl;
    struct counts now = {0};
    for (unsigned i = 0; i < r->nworkers; i++) {
        struct load_worker *w = &r->w[i];
        now.rt += atomic_load_explicit(&w->round_trips, memory_order_relaxed);
        for (int k = 0; k < LOAD_ERR_KINDS; k++)
            now.errors += atomic_load_explicit(&w->errors[k], memory_order_relaxed);
        if (r->o->http)
            for (int s = 100; s < 600; s++)
                now.status[s / 100] += atomic_load_explicit(&w->status[s], memory_order_relaxed);
    }
    d->rt = now.rt - v->rt;
    d->errors = now.errors - v->errors;
    for (int c = 0; c < 6; c++)
        d->status[c] = now.status[c] - v->status[c];
    v->rt = now.rt;
    v->errors = now.errors;
    memcpy(v->status, now.status, sizeof(now.status));
}

static void json_line(struct load_run *r, const struct counts *d, double start_s, double len_s)
{
    struct load_ivl *v = &r->ivl;
    const struct cli_hist *h = &v->h;
    printf("{\"type\":\"interval\",\"second\":%llu,\"start\":%.3f,\"length_s\":%.3f,"
           "\"requests\":%llu,\"rps\":%.2f,\"errors\":%llu",
           (unsigned long long)v->n, start_s, len_s, (unsigned long long)d->rt,
           len_s > 0.0 ? (double)d->rt / len_s : 0.0, (unsigned long long)d->errors);
    if (r->o->http)
        printf(",\"status_classes\":{\"1xx\":%llu,\"2xx\":%llu,\"3xx\":%llu,\"4xx\":%llu,"
               "\"5xx\":%llu}",
               (unsigned long long)d->status[1], (unsigned long long)d->status[2],
               (unsigned long long)d->status[3], (unsigned long long)d->status[4],
               (unsigned long long)d->status[5]);
    printf(",\"latency_us\":{\"count\":%llu,\"min\":%llu,\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,"
           "\"p999\":%llu,\"max\":%llu,\"mean\":%.2f}}\n",
           (unsigned long long)h->total, (unsigned long long)(h->total ? h->min : 0),
           (unsigned long long)cli_hist_percentile(h, 50.0),
           (unsigned long long)cli_hist_percentile(h, 90.0),
           (unsigned long long)cli_hist_percentile(h, 99.0),
           (unsigned long long)cli_hist_percentile(h, 99.9),
           (unsigned long long)(h->total ? h->max : 0), cli_hist_mean(h));
    fflush(stdout);
}

/* --html: keeps the interval. */
static void keep_second(struct load_run *r, const struct counts *d, double start_s, double len_s)
{
    struct load_ivl *v = &r->ivl;
    if (v->nsecs == v->secs_cap) {
        size_t cap = v->secs_cap ? v->secs_cap * 2 : 64;
        if (cap > LOAD_HTML_MAX_SECONDS)
            cap = LOAD_HTML_MAX_SECONDS;
        struct load_sec *s = cap > v->secs_cap ? realloc(v->secs, cap * sizeof(*s)) : NULL;
        if (!s) {
            v->secs_cut = true;
            return;
        }
        v->secs = s;
        v->secs_cap = cap;
    }
    const struct cli_hist *h = &v->h;
    v->secs[v->nsecs++] = (struct load_sec){
        .t = start_s,
        .len = len_s,
        .requests = d->rt,
        .errors = d->errors,
        .p50 = cli_hist_percentile(h, 50.0),
        .p99 = cli_hist_percentile(h, 99.0),
        .max = h->total ? h->max : 0,
        .count = h->total,
    };
}

void load_ivl_tick(struct load_run *r, vega_tstamp now, bool last)
{
    struct load_ivl *v = &r->ivl;
    if (!v->on || now < r->measure_start)
        return;
    while (now >= v->at + IVL_NS || last) {
        vega_tstamp end = last && now < v->at + IVL_NS ? now : v->at + IVL_NS;
        if (last && end <= v->at)
            break; /* nothing of a new interval */
        take(r);
        double start_s = v->wall_at, len_s = (double)(end - v->at) / 1e9;
        if (v->log && v->error == 0) {
            v->error = hdrlog_write_interval(&v->w, start_s, len_s, &v->h);
            if (v->error < 0)
                cli_err(r->o->latency_log, "cannot write: %s", vega_strerror(v->error));
        }
        struct counts d;
        counted(r, &d);
        double rel_s = (double)(v->at - r->measure_start) / 1e9;
        if (r->o->json_lines)
            json_line(r, &d, rel_s, len_s);
        if (r->o->html)
            keep_second(r, &d, rel_s, len_s);
        if (r->o->progress)
            load_dash_keep(&v->dash, len_s > 0.0 ? (double)d.rt / len_s : 0.0, &v->h, d.errors,
                           d.status);
        v->n++;
        /* Late wake-ups: the next interval starts where this one ended, so the intervals tile
         * the measured time (a wake-up seconds late makes one interval hold them, the rest
         * empty). */
        v->at = end;
        v->wall_at = (double)((int64_t)v->at + v->wall_offset_ns) / 1e9;
        if (last)
            break;
    }
}

void load_ivl_fini(struct load_run *r)
{
    struct load_ivl *v = &r->ivl;
    if (v->log && fclose(v->log) != 0 && v->error == 0)
        cli_err(r->o->latency_log, "cannot write: %s", strerror(errno));
    v->log = NULL;
    cli_hist_fini(&v->h);
    free(v->secs);
    v->secs = NULL;
    for (unsigned i = 0; r->w && i < r->nworkers; i++) {
        free(r->w[i].ivl);
        r->w[i].ivl = NULL;
    }
}

/* ---- --fail-if ------------------------------------------------------------------------------ */

/* A latency: a number with us, ms or s (a bare number is milliseconds, as k6's thresholds).
 * Returns microseconds, or -1. */
static double latency_arg(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0.0))
        return -1.0;
    if (*end == '\0' || strcmp(end, "ms") == 0)
        return v * 1000.0;
    if (strcmp(end, "us") == 0)
        return v;
    if (strcmp(end, "s") == 0)
        return v * 1e6;
    return -1.0;
}

/* A count or rate with k or M (decimal), or a percentage for error% ("1%" or "1"). */
static double count_arg(const char *s, bool pct)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0.0))
        return -1.0;
    if (*end == '\0')
        return v;
    if (pct)
        return strcmp(end, "%") == 0 ? v : -1.0;
    if (strcmp(end, "k") == 0 || strcmp(end, "K") == 0)
        return v * 1e3;
    if (strcmp(end, "M") == 0)
        return v * 1e6;
    return -1.0;
}

static const char *const metric_help =
    "p50, p90, p99, p99.9 (any pNN), min, mean, max (latency: us, ms or s; a bare number is "
    "ms), rps, requests (k and M suffixes), errors, non2xx, error% (errors and non-2xx "
    "responses in percent of the requests)";

static void parse_one(struct load_opts *o, char *c)
{
    if (o->nfail_if == LOAD_MAX_FAIL_IF)
        cli_usage_error("--fail-if: at most %d conditions", LOAD_MAX_FAIL_IF);
    struct load_cond *k = &o->fail_if[o->nfail_if];
    snprintf(k->text, sizeof(k->text), "%s", c);
    size_t n = strcspn(c, "<>=!");
    if (n == 0 || c[n] == '\0')
        cli_usage_error("--fail-if: '%s': expected METRIC OP VALUE, e.g. p99<5ms,errors=0,"
                        "rps>10k",
                        c);
    char name[32];
    if (n >= sizeof(name))
        cli_usage_error("--fail-if: '%s': unknown metric (the metrics: %s)", c, metric_help);
    memcpy(name, c, n);
    name[n] = '\0';
    const char *op = c + n, *val;
    if (strncmp(op, "<=", 2) == 0)
        k->cmp = LOAD_LE, val = op + 2;
    else if (strncmp(op, ">=", 2) == 0)
        k->cmp = LOAD_GE, val = op + 2;
    else if (strncmp(op, "==", 2) == 0)
        k->cmp = LOAD_EQ, val = op + 2;
    else if (strncmp(op, "!=", 2) == 0)
        k->cmp = LOAD_NE, val = op + 2;
    else if (*op == '<')
        k->cmp = LOAD_LT, val = op + 1;
    else if (*op == '>')
        k->cmp = LOAD_GT, val = op + 1;
    else if (*op == '=')
        k->cmp = LOAD_EQ, val = op + 1;
    else
        cli_usage_error("--fail-if: '%s': expected <, <=, >, >=, = or != after the metric", c);
    bool latency = false, pct = false;
    if (name[0] == 'p' && name[1] >= '0' && name[1] <= '9') {
        char *end;
        k->metric = LOAD_M_PCT;
        k->arg = strtod(name + 1, &end);
        if (*end != '\0' || !(k->arg > 0.0 && k->arg <= 100.0))
            cli_usage_error("--fail-if: '%s': a percentile is p followed by 0..100, e.g. p99 "
                            "or p99.9",
                            c);
        latency = true;
    } else if (strcmp(name, "min") == 0) {
        k->metric = LOAD_M_MIN, latency = true;
    } else if (strcmp(name, "mean") == 0) {
        k->metric = LOAD_M_MEAN, latency = true;
    } else if (strcmp(name, "max") == 0) {
        k->metric = LOAD_M_MAX, latency = true;
    } else if (strcmp(name, "rps") == 0) {
        k->metric = LOAD_M_RPS;
    } else if (strcmp(name, "requests") == 0) {
        k->metric = LOAD_M_REQUESTS;
    } else if (strcmp(name, "errors") == 0) {
        k->metric = LOAD_M_ERRORS;
    } else if (strcmp(name, "non2xx") == 0) {
        k->metric = LOAD_M_NON2XX;
    } else if (strcmp(name, "error%") == 0) {
        k->metric = LOAD_M_ERROR_PCT, pct = true;
    } else {
        cli_usage_error("--fail-if: '%s': unknown metric '%s' (the metrics: %s)", c, name,
                        metric_help);
    }
    k->value = latency ? latency_arg(val) : count_arg(val, pct);
    if (k->value < 0.0)
        cli_usage_error("--fail-if: '%s': '%s' is not a %s", c, val,
                        latency ? "duration (e.g. 5ms, 800us, 1.5s)"
                        : pct   ? "percentage (e.g. 1%)"
                                : "number (k and M suffixes)");
    o->nfail_if++;
}

void load_fail_if_parse(struct load_opts *o, const char *arg)
{
    size_t len = strlen(arg);
    if (len == 0)
        cli_usage_error("--fail-if: empty (e.g. --fail-if 'p99<5ms,errors=0')");
    char *t = malloc(len + 1);
    if (!t)
        cli_usage_error("--fail-if: out of memory");
    memcpy(t, arg, len + 1);
    char *save = NULL;
    for (char *c = strtok_r(t, ",", &save); c; c = strtok_r(NULL, ",", &save))
        parse_one(o, c);
    free(t);
}

static double measure(const struct load_cond *k, const struct load_totals *t, bool *latency)
{
    *latency = false;
    uint64_t non2xx = 0;
    for (int s = 1; s < LOAD_STATUS_MAX; s++)
        if (s / 100 != 2)
            non2xx += t->status[s];
    switch (k->metric) {
    case LOAD_M_PCT:
        *latency = true;
        return (double)cli_hist_percentile(&t->hist, k->arg);
    case LOAD_M_MIN:
        *latency = true;
        return t->hist.total ? (double)t->hist.min : 0.0;
    case LOAD_M_MEAN:
        *latency = true;
        return cli_hist_mean(&t->hist);
    case LOAD_M_MAX:
        *latency = true;
        return t->hist.total ? (double)t->hist.max : 0.0;
    case LOAD_M_RPS:
        return t->elapsed_s > 0.0 ? (double)t->round_trips / t->elapsed_s : 0.0;
    case LOAD_M_REQUESTS:
        return (double)t->round_trips;
    case LOAD_M_ERRORS:
        return (double)t->error_sum;
    case LOAD_M_NON2XX:
        return (double)non2xx;
    case LOAD_M_ERROR_PCT: {
        double all = (double)t->round_trips + (double)t->error_sum;
        return all > 0.0 ? 100.0 * ((double)t->error_sum + (double)non2xx) / all : 0.0;
    }
    }
    return 0.0;
}

static bool holds(enum load_cmp c, double a, double b)
{
    switch (c) {
    case LOAD_LT:
        return a < b;
    case LOAD_LE:
        return a <= b;
    case LOAD_GT:
        return a > b;
    case LOAD_GE:
        return a >= b;
    case LOAD_EQ:
        return a == b;
    case LOAD_NE:
        return a != b;
    }
    return false;
}

unsigned load_fail_if_check(const struct load_opts *o, const struct load_totals *t)
{
    unsigned failed = 0;
    for (unsigned i = 0; i < o->nfail_if; i++) {
        const struct load_cond *k = &o->fail_if[i];
        bool latency;
        double v = measure(k, t, &latency);
        if (holds(k->cmp, v, k->value))
            continue;
        failed++;
        char buf[32];
        if (latency)
            load_fmt_duration(buf, sizeof(buf), v);
        else if (k->metric == LOAD_M_ERROR_PCT)
            snprintf(buf, sizeof(buf), "%.3f%%", v);
        else if (k->metric == LOAD_M_RPS)
            snprintf(buf, sizeof(buf), "%.2f", v);
        else
            snprintf(buf, sizeof(buf), "%.0f", v);
        cli_err("--fail-if", "'%s' failed: it was %s", k->text, buf);
    }
    return failed;
}
