/* SPDX-License-Identifier: MIT */
/* vega-load merge LOG...: one report from HdrHistogram interval logs (--latency-log) written by
 * several runs or machines. Latencies add up into one histogram; requests per second add up
 * by wall-clock second, so loads that ran at the same time on different machines show as one
 * load. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

#define MERGE_MAX_LOGS    1024
#define MERGE_MAX_SECONDS (7u * 24 * 3600) /* the span the per-second rate covers */

static const char merge_usage[] =
    "Usage: vega-load merge [--json] LOG...\n"
    "\n"
    "Combines HdrHistogram interval logs (vega-load --latency-log, or any log whose\n"
    "histograms have a lowest discernible value of 1) into one report: the latency\n"
    "distribution of every interval of every log, and requests per second added up by\n"
    "wall-clock second (logs of loads that ran at the same time on several machines add up\n"
    "to the load the server saw). Values are taken as microseconds.\n"
    "\n"
    "  --json      one JSON object on stdout instead of the summary\n"
    "  -h, --help  this help\n"
    "\n"
    "Exit codes: 0 success; 1 a log cannot be read or holds a malformed line; 2 usage error.\n";

struct merged {
    struct cli_hist h;
    bool have_h;
    unsigned logs;
    uint64_t intervals, clamped;
    double first_s, last_s; /* earliest interval start, latest interval end (epoch seconds) */
    uint64_t *per_sec;      /* requests by second since first_s's second ... */
    uint64_t nsec;          /* ... this many seconds */
    uint64_t first_sec;
    bool span_cut; /* intervals beyond MERGE_MAX_SECONDS were left out of per_sec */
};

/* Adds src to m->h: slot by slot when both have the same shape, else value by value (each
 * slot's lowest value; precision is then the coarser of the two). */
static int add_hist(struct merged *m, const struct cli_hist *src)
{
    if (!m->have_h) {
        int e = cli_hist_init(&m->h, src->highest, src->digits);
        if (e < 0)
            return e;
        m->have_h = true;
    }
    if (cli_hist_merge(&m->h, src) == 0)
        return 0;
    uint64_t before = m->h.clamped;
    for (size_t i = 0; i < src->len; i++)
        if (src->counts[i])
            cli_hist_record_n(&m->h, cli_hist_slot_low(src, i), src->counts[i]);
    m->clamped += m->h.clamped - before;
    return 0;
}

/* Collects the intervals' start times first (pass 1) so that the per-second array is sized
 * once; pass 2 adds everything. */
static int read_log(struct merged *m, const char *path, bool pass2, char *err, size_t ecap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, ecap, "%s: %s", path, strerror(errno));
        return -EINVAL;
    }
    struct hdrlog_reader r = {.f = f, .name = path};
    int e;
    double start, len;
    struct cli_hist h;
    while ((e = hdrlog_read_interval(&r, &start, &len, &h, err, ecap)) == 1) {
        if (!pass2) {
            if (m->intervals == 0 || start < m->first_s)
                m->first_s = start;
            if (m->intervals == 0 || start + len > m->last_s)
                m->last_s = start + len;
            m->intervals++;
        } else {
            e = add_hist(m, &h);
            if (e < 0) {
                snprintf(err, ecap, "%s: out of memory", path);
                cli_hist_fini(&h);
                e = -EINVAL;
                break;
            }
            uint64_t sec = (uint64_t)start; /* start >= 0: the floor */
            if (sec >= m->first_sec && sec - m->first_sec < m->nsec)
                m->per_sec[sec - m->first_sec] += h.total;
            else
                m->span_cut = true;
        }
        cli_hist_fini(&h);
    }
    hdrlog_reader_fini(&r);
    fclose(f);
    return e < 0 ? e : 0;
}

static void text_report(const struct merged *m)
{
    const struct cli_hist *h = &m->h;
    double span = m->last_s - m->first_s;
    char a[32], b[32], c[32];
    printf("Merged %u log%s: %llu intervals, %llu requests in %.2fs (%.2f requests/s)\n", m->logs,
           m->logs == 1 ? "" : "s", (unsigned long long)m->intervals, (unsigned long long)h->total,
           span, span > 0.0 ? (double)h->total / span : 0.0);
    if (h->total == 0)
        return;
    load_fmt_duration(a, sizeof(a), cli_hist_mean(h));
    load_fmt_duration(b, sizeof(b), cli_hist_stdev(h));
    load_fmt_duration(c, sizeof(c), (double)h->max);
    printf("  Latency    avg %s, stdev %s, max %s\n", a, b, c);
    printf("  Latency Distribution (HdrHistogram)\n");
    static const double pcts[] = {50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0};
    for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
        load_fmt_duration(a, sizeof(a),
                          (double)(pcts[i] < 100.0 ? cli_hist_percentile(h, pcts[i]) : h->max));
        printf("  %6g%% %10s\n", pcts[i], a);
    }
    uint64_t lo = UINT64_MAX, hi = 0, sum = 0, n = 0;
    for (uint64_t s = 0; s < m->nsec; s++) {
        uint64_t v = m->per_sec[s];
        /* the first and last seconds are partial: only whole seconds in the range */
        if (s == 0 || s + 1 == m->nsec)
            continue;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
        n++;
    }
    if (n)
        printf("  Requests/sec by wall-clock second (all logs added, %llu whole seconds): min "
               "%llu, mean %.2f, max %llu\n",
               (unsigned long long)n, (unsigned long long)lo, (double)sum / (double)n,
               (unsigned long long)hi);
    if (m->clamped)
        printf("  %llu values were above the merged histogram's range and count as its highest\n",
               (unsigned long long)m->clamped);
}

static void json_report(const struct merged *m)
{
    const struct cli_hist *h = &m->h;
    double span = m->last_s - m->first_s;
    printf("{\"logs\":%u,\"intervals\":%llu,\"requests\":%llu,\"start\":%.3f,\"duration_s\":%.3f,"
           "\"rps\":%.2f",
           m->logs, (unsigned long long)m->intervals, (unsigned long long)h->total, m->first_s,
           span, span > 0.0 ? (double)h->total / span : 0.0);
    printf(",\"latency_us\":{\"p50\":%llu,\"p75\":%llu,\"p90\":%llu,\"p99\":%llu,\"p999\":%llu,"
           "\"p9999\":%llu,\"max\":%llu,\"min\":%llu,\"mean\":%.2f,\"stdev\":%.2f,\"count\":%llu}",
           (unsigned long long)cli_hist_percentile(h, 50.0),
           (unsigned long long)cli_hist_percentile(h, 75.0),
           (unsigned long long)cli_hist_percentile(h, 90.0),
           (unsigned long long)cli_hist_percentile(h, 99.0),
           (unsigned long long)cli_hist_percentile(h, 99.9),
           (unsigned long long)cli_hist_percentile(h, 99.99),
           (unsigned long long)(h->total ? h->max : 0), (unsigned long long)(h->total ? h->min : 0),
           cli_hist_mean(h), cli_hist_stdev(h), (unsigned long long)h->total);
    printf(",\"per_second\":[");
    for (uint64_t s = 0; s < m->nsec; s++)
        printf("%s{\"t\":%llu,\"requests\":%llu}", s ? "," : "",
               (unsigned long long)(m->first_sec + s), (unsigned long long)m->per_sec[s]);
    printf("],\"clamped\":%llu}\n", (unsigned long long)m->clamped);
}

int load_merge_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case 'h':
            fputs(merge_usage, stdout);
            return CLI_EXIT_OK;
        default:
            cli_usage_error("merge: unknown option '%s' (see vega-load merge --help)",
                            argv[optind - 1]);
        }
    }
    int nlogs = argc - optind;
    if (nlogs < 1)
        cli_usage_error("merge: no log given (vega-load merge LOG...; write logs with "
                        "--latency-log)");
    if (nlogs > MERGE_MAX_LOGS)
        cli_usage_error("merge: at most %d logs", MERGE_MAX_LOGS);
    struct merged m;
    memset(&m, 0, sizeof(m));
    m.logs = (unsigned)nlogs;
    char err[512];
    int code = CLI_EXIT_NET;
    for (int i = optind; i < argc; i++)
        if (read_log(&m, argv[i], false, err, sizeof(err)) < 0)
            goto fail;
    if (m.intervals == 0) {
        snprintf(err, sizeof(err), "no interval in %s", nlogs == 1 ? argv[optind] : "the logs");
        goto fail;
    }
    m.first_sec = (uint64_t)m.first_s; /* >= 0: floor and ceiling without libm */
    uint64_t last_sec = (uint64_t)m.last_s;
    if ((double)last_sec < m.last_s)
        last_sec++;
    m.nsec = last_sec > m.first_sec ? last_sec - m.first_sec : 1;
    if (m.nsec > MERGE_MAX_SECONDS)
        m.nsec = MERGE_MAX_SECONDS;
    m.per_sec = calloc(m.nsec, sizeof(*m.per_sec));
    if (!m.per_sec) {
        snprintf(err, sizeof(err), "out of memory");
        goto fail;
    }
    for (int i = optind; i < argc; i++)
        if (read_log(&m, argv[i], true, err, sizeof(err)) < 0)
            goto fail;
    if (json)
        json_report(&m);
    else
        text_report(&m);
    if (m.span_cut)
        cli_err("merge", "the logs span more than %u days: requests/sec covers the first %u",
                MERGE_MAX_SECONDS / 86400, MERGE_MAX_SECONDS / 86400);
    code = CLI_EXIT_OK;
    goto out;
fail:
    cli_err("merge", "%s", err);
out:
    free(m.per_sec);
    if (m.have_h)
        cli_hist_fini(&m.h);
    return code;
}
