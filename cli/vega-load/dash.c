/* SPDX-License-Identifier: MIT */
/* vega-load's terminal dashboard: below the progress line, while stderr is a terminal, the last
 * second's requests/s and latency percentiles, the responses by status class and the errors so
 * far, and requests/s over the last minute as a sparkline (as oha shows). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "load.h"

void load_dash_keep(struct load_dash *d, double rps, const struct cli_hist *h, uint64_t errors,
                    const uint64_t status[6])
{
    d->have = true;
    d->rps = rps;
    d->count = h->total;
    d->p50 = cli_hist_percentile(h, 50.0);
    d->p99 = cli_hist_percentile(h, 99.0);
    d->max = h->total ? h->max : 0;
    d->errors = errors;
    memcpy(d->status, status, sizeof(d->status));
    if (d->nrates < LOAD_DASH_SECONDS) {
        d->rates[(d->head + d->nrates) % LOAD_DASH_SECONDS] = rps;
        d->nrates++;
    } else {
        d->rates[d->head] = rps;
        d->head = (d->head + 1) % LOAD_DASH_SECONDS;
    }
}

static void fmt_rate(char *buf, size_t cap, double per_s)
{
    if (per_s >= 1e6)
        snprintf(buf, cap, "%.2fM/s", per_s / 1e6);
    else if (per_s >= 1e3)
        snprintf(buf, cap, "%.1fk/s", per_s / 1e3);
    else
        snprintf(buf, cap, "%.0f/s", per_s);
}

/* Whether the locale's characters are UTF-8 (as setlocale would find them from the
 * environment): the sparkline's blocks need it; otherwise it is drawn in ASCII. */
static bool utf8_terminal(void)
{
    static const char *const vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return strcasestr(v, "utf-8") || strcasestr(v, "utf8");
    }
    return false;
}

/* Each line starts on the next terminal line, erased. */
#define LINE_START "\n\033[K"

static const char *const err_names[LOAD_ERR_KINDS] = {
    [LOAD_ERR_CONNECT] = "connect", [LOAD_ERR_READ] = "read",         [LOAD_ERR_WRITE] = "write",
    [LOAD_ERR_TIMEOUT] = "timeout", [LOAD_ERR_MISMATCH] = "mismatch", [LOAD_ERR_PARSE] = "parse",
};

/* Appends one ASCII line of at most cols - 1 columns; a line that does not fit is cut. */
static bool put_line(char *buf, size_t cap, size_t *len, const char *text, unsigned cols)
{
    size_t n = strlen(text);
    if (n + 1 > cols)
        n = cols - 1;
    return cli_appendf(buf, cap, len, LINE_START "%.*s", (int)n, text);
}

unsigned load_dash_lines(const struct load_run *r, char *buf, size_t cap, size_t *len,
                         unsigned cols)
{
    const struct load_dash *d = &r->ivl.dash;
    if (!d->have || cols < 40)
        return 0;
    unsigned lines = 0;
    char text[256], rate[32], p50[32], p99[32], max[32];
    size_t tl = 0;

    fmt_rate(rate, sizeof(rate), d->rps);
    cli_appendf(text, sizeof(text), &tl, "  last second: %s", rate);
    if (d->count) {
        load_fmt_duration(p50, sizeof(p50), (double)d->p50);
        load_fmt_duration(p99, sizeof(p99), (double)d->p99);
        load_fmt_duration(max, sizeof(max), (double)d->max);
        cli_appendf(text, sizeof(text), &tl, ", latency p50 %s, p99 %s, max %s", p50, p99, max);
    }
    cli_appendf(text, sizeof(text), &tl, ", %llu errors", (unsigned long long)d->errors);
    if (!put_line(buf, cap, len, text, cols))
        return lines;
    lines++;

    /* The run so far: responses by status class (HTTP) and errors by kind. */
    tl = 0;
    text[0] = '\0';
    cli_appendf(text, sizeof(text), &tl, "  so far:");
    if (r->o->http) {
        uint64_t cls[6] = {0};
        for (unsigned i = 0; i < r->nworkers; i++)
            for (int s = 100; s < 600; s++)
                cls[s / 100] += atomic_load_explicit(&r->w[i].status[s], memory_order_relaxed);
        for (int c = 1; c < 6; c++)
            if (cls[c] || c == 2)
                cli_appendf(text, sizeof(text), &tl, " %dxx %llu", c, (unsigned long long)cls[c]);
        cli_appendf(text, sizeof(text), &tl, ";");
    }
    bool any = false;
    for (int k = 0; k < LOAD_ERR_KINDS; k++) {
        uint64_t n = 0;
        for (unsigned i = 0; i < r->nworkers; i++)
            n += atomic_load_explicit(&r->w[i].errors[k], memory_order_relaxed);
        if (n) {
            cli_appendf(text, sizeof(text), &tl, " %s errors %llu", err_names[k],
                        (unsigned long long)n);
            any = true;
        }
    }
    if (!any)
        cli_appendf(text, sizeof(text), &tl, " no errors");
    if (!put_line(buf, cap, len, text, cols))
        return lines;
    lines++;

    /* Requests/s of the latest seconds, newest on the right, scaled to their maximum. */
    static const char *const blocks[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                          "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char ascii[8] = {'_', '.', ',', '-', '=', '+', '*', '#'};
    static const char label[] = "  requests/s: ";
    unsigned width = cols - 1 - (unsigned)(sizeof(label) - 1) - 16; /* 16: " max 999.99M/s" */
    unsigned n = d->nrates < width ? d->nrates : width;
    double top = 0.0;
    for (unsigned i = d->nrates - n; i < d->nrates; i++) {
        double v = d->rates[(d->head + i) % LOAD_DASH_SECONDS];
        if (v > top)
            top = v;
    }
    bool utf8 = utf8_terminal();
    if (!cli_appendf(buf, cap, len, LINE_START "%s", label))
        return lines;
    for (unsigned i = d->nrates - n; i < d->nrates; i++) {
        double v = d->rates[(d->head + i) % LOAD_DASH_SECONDS];
        int b = top > 0.0 ? (int)(v / top * 7.0 + 0.5) : 0;
        if (b > 7)
            b = 7;
        bool ok = utf8 ? cli_appendf(buf, cap, len, "%s", blocks[b])
                       : cli_appendf(buf, cap, len, "%c", ascii[b]);
        if (!ok)
            return lines + 1;
    }
    fmt_rate(rate, sizeof(rate), top);
    cli_appendf(buf, cap, len, " max %s", rate);
    return lines + 1;
}
