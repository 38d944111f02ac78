/* SPDX-License-Identifier: MIT */
/* --html FILE: one self-contained page (no network, no script from elsewhere): the run's
 * numbers, then three plots drawn as inline SVG by the page's own script from the data
 * embedded in it: the latency percentile spectrum (HdrHistogram's plot: the x axis is
 * 1/(1-percentile) on a log scale; corrected and uncorrected with -R), requests per second,
 * and errors per second. Every plotted point is an SVG circle of class "pt" with its value in
 * data-v, so a test can count them in the DOM a browser built. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "load.h"

/* A JSON string that is also safe inside <script>: no "</script>", no HTML specials. */
static void js_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* The spectrum: percentiles 0, 50, 75, 87.5, ... (each step halves what is left, in 5 ticks
 * per halving as HdrHistogram's percentile output does) up to the last value, then 100. */
static void spectrum(FILE *f, const struct cli_hist *h)
{
    fputc('[', f);
    if (h->total) {
        double left = 100.0;
        for (unsigned i = 0; i < 200; i++) {
            double p = 100.0 - left;
            fprintf(f, "[%.10g,%llu],", p, (unsigned long long)cli_hist_percentile(h, p));
            /* stop where one value is less than a tick: the rest is the maximum */
            if (left / 100.0 * (double)h->total < 1.0)
                break;
            left *= 0.8705505632961241; /* 2^(-1/5) */
        }
        fprintf(f, "[100,%llu]", (unsigned long long)h->max);
    }
    fputc(']', f);
}

static const char page_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>vega-load report</title>\n<style>\n"
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}\n"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 6px}\n"
    "table{border-collapse:collapse}td,th{padding:2px 12px 2px 0;text-align:left}\n"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    "svg{background:#fafafa;border:1px solid #ddd}\n"
    ".axis{stroke:#888;stroke-width:1}.grid{stroke:#e4e4e4;stroke-width:1}\n"
    ".lbl{font-size:11px;fill:#555}.note{color:#666}\n"
    "polyline.s0{stroke:#1f6fb5}polyline.s1{stroke:#d9731a}polyline.s2{stroke:#2a9d4b}\n"
    ".f0{fill:#1f6fb5}.f1{fill:#d9731a}.f2{fill:#2a9d4b}\n"
    "polyline{fill:none;stroke-width:1.5}\n"
    "</style></head><body>\n";

static const char page_script[] =
    "<script>\n"
    "(function () {\n"
    "  const D = JSON.parse(document.getElementById('data').textContent);\n"
    "  const NS = 'http://www.w3.org/2000/svg';\n"
    "  function el(name, attrs, parent) {\n"
    "    const e = document.createElementNS(NS, name);\n"
    "    for (const k in attrs) e.setAttribute(k, attrs[k]);\n"
    "    if (parent) parent.appendChild(e);\n"
    "    return e;\n"
    "  }\n"
    "  function fmtUs(v) {\n"
    "    if (v < 1e3) return v.toFixed(0) + 'us';\n"
    "    if (v < 1e6) return (v / 1e3).toPrecision(3) + 'ms';\n"
    "    return (v / 1e6).toPrecision(3) + 's';\n"
    "  }\n"
    "  /* plot(id, series [{name, pts: [[x, y]...]}], opts {xlog, xfmt, yfmt}) */\n"
    "  function plot(id, series, o) {\n"
    "    const W = 760, H = 300, L = 64, R = 16, T = 16, B = 40;\n"
    "    const svg = el('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H,\n"
    "                           id: id + '-svg'});\n"
    "    document.getElementById(id).appendChild(svg);\n"
    "    const all = [].concat(...series.map(s => s.pts));\n"
    "    let n = 0;\n"
    "    if (!all.length) {\n"
    "      el('text', {x: L, y: H / 2, class: 'lbl'}, svg).textContent = 'no data';\n"
    "      svg.setAttribute('data-points', '0');\n"
    "      return;\n"
    "    }\n"
    "    const xs = all.map(p => p[0]), ys = all.map(p => p[1]);\n"
    "    const x0 = Math.min(...xs), x1 = Math.max(...xs) > x0 ? Math.max(...xs) : x0 + 1;\n"
    "    const y1 = Math.max(...ys) > 0 ? Math.max(...ys) * 1.08 : 1;\n"
    "    const X = x => L + (x - x0) / (x1 - x0) * (W - L - R);\n"
    "    const Y = y => H - B - y / y1 * (H - T - B);\n"
    "    for (let i = 0; i <= 4; i++) {\n"
    "      const y = y1 * i / 4;\n"
    "      el('line', {x1: L, x2: W - R, y1: Y(y), y2: Y(y), class: 'grid'}, svg);\n"
    "      el('text', {x: L - 6, y: Y(y) + 4, 'text-anchor': 'end', class: 'lbl'}, svg)\n"
    "        .textContent = o.yfmt(y);\n"
    "    }\n"
    "    for (const t of o.xticks(x0, x1)) {\n"
    "      el('line', {x1: X(t[0]), x2: X(t[0]), y1: T, y2: H - B, class: 'grid'}, svg);\n"
    "      el('text', {x: X(t[0]), y: H - B + 16, 'text-anchor': 'middle', class: 'lbl'}, svg)\n"
    "        .textContent = t[1];\n"
    "    }\n"
    "    el('line', {x1: L, x2: L, y1: T, y2: H - B, class: 'axis'}, svg);\n"
    "    el('line', {x1: L, x2: W - R, y1: H - B, y2: H - B, class: 'axis'}, svg);\n"
    "    series.forEach((s, k) => {\n"
    "      el('polyline', {class: 's' + k, points: s.pts.map(p => X(p[0]) + ',' + Y(p[1]))\n"
    "        .join(' ')}, svg);\n"
    "      for (const p of s.pts) {\n"
    "        const c = el('circle', {cx: X(p[0]), cy: Y(p[1]), r: 2.5, class: 'pt f' + k,\n"
    "                                'data-series': s.name, 'data-v': p[1]}, svg);\n"
    "        el('title', {}, c).textContent = s.name + ': ' + o.yfmt(p[1]);\n"
    "        n++;\n"
    "      }\n"
    "      el('text', {x: L + 10 + 150 * k, y: T + 12, class: 'lbl f' + k}, svg)\n"
    "        .textContent = s.name;\n"
    "    });\n"
    "    svg.setAttribute('data-points', String(n));\n"
    "  }\n"
    "  /* the spectrum's x: log10(1/(1-p)), p = 100 drawn one decade past the last tick */\n"
    "  function specPts(sp) {\n"
    "    const pts = [];\n"
    "    let last = 0;\n"
    "    for (const [p, v] of sp) {\n"
    "      const x = p < 100 ? Math.log10(100 / (100 - p)) : last + 1;\n"
    "      pts.push([x, v]);\n"
    "      last = x;\n"
    "    }\n"
    "    return pts;\n"
    "  }\n"
    "  const spec = [{name: D.rate ? 'corrected' : 'latency', pts: specPts(D.spectrum)}];\n"
    "  if (D.spectrum_uncorrected)\n"
    "    spec.push({name: 'uncorrected', pts: specPts(D.spectrum_uncorrected)});\n"
    "  plot('spectrum', spec, {yfmt: fmtUs, xticks: (a, b) => {\n"
    "    const t = [];\n"
    "    const names = ['0%', '90%', '99%', '99.9%', '99.99%', '99.999%', '99.9999%'];\n"
    "    for (let d = 0; d <= Math.ceil(b) && d < names.length; d++) t.push([d, names[d]]);\n"
    "    return t; }});\n"
    "  const secTicks = (a, b) => {\n"
    "    const t = [], step = Math.max(1, Math.ceil((b - a) / 10));\n"
    "    for (let s = Math.ceil(a); s <= b; s += step) t.push([s, s + 's']);\n"
    "    return t; };\n"
    "  const per = (k) => D.seconds.map(s => [s[0], s[1] > 0 ? s[k] / s[1] : 0]);\n"
    "  plot('rps', [{name: 'requests/s', pts: per(2)}],\n"
    "       {yfmt: v => v >= 1e4 ? (v / 1e3).toFixed(0) + 'k' : v.toFixed(0), xticks: secTicks});\n"
    "  plot('errors', [{name: 'errors/s', pts: per(3)}],\n"
    "       {yfmt: v => v.toFixed(v < 10 ? 1 : 0), xticks: secTicks});\n"
    "  plot('lat', [{name: 'p50', pts: D.seconds.map(s => [s[0], s[4]])},\n"
    "               {name: 'p99', pts: D.seconds.map(s => [s[0], s[5]])},\n"
    "               {name: 'max', pts: D.seconds.map(s => [s[0], s[6]])}],\n"
    "       {yfmt: fmtUs, xticks: secTicks});\n"
    "})();\n"
    "</script>\n";

static void row(FILE *f, const char *name, const char *value)
{
    fprintf(f, "<tr><th>%s</th><td class=\"n\">%s</td></tr>\n", name, value);
}

int load_html_write(const struct load_run *r, const struct load_totals *t)
{
    const struct load_opts *o = r->o;
    const struct load_ivl *v = &r->ivl;
    FILE *f = fopen(o->html, "w");
    if (!f) {
        int e = -errno;
        cli_err(o->html, "%s", strerror(-e));
        return e;
    }
    const struct cli_hist *h = &t->hist;
    char a[64];
    fputs(page_head, f);
    fputs("<h1>vega-load report</h1>\n<p class=\"note\" id=\"target\"></p>\n<table>\n", f);
    snprintf(a, sizeof(a), "%llu", (unsigned long long)t->round_trips);
    row(f, o->http ? "requests" : "round trips", a);
    snprintf(a, sizeof(a), "%.2f",
             t->elapsed_s > 0.0 ? (double)t->round_trips / t->elapsed_s : 0.0);
    row(f, "per second", a);
    snprintf(a, sizeof(a), "%.2f s", t->elapsed_s);
    row(f, "measured for", a);
    snprintf(a, sizeof(a), "%llu", (unsigned long long)t->error_sum);
    row(f, "errors", a);
    static const double pcts[] = {50.0, 90.0, 99.0, 99.9};
    static const char *const names[] = {"p50", "p90", "p99", "p99.9"};
    for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
        load_fmt_duration(a, sizeof(a), (double)cli_hist_percentile(h, pcts[i]));
        row(f, names[i], a);
    }
    load_fmt_duration(a, sizeof(a), h->total ? (double)h->max : 0.0);
    row(f, "max", a);
    fputs("</table>\n", f);
    fprintf(f, "<h2>Latency by percentile%s</h2>\n<div id=\"spectrum\"></div>\n",
            o->rate ? " (corrected: from when each request was due; uncorrected: from when it "
                      "was sent)"
                    : "");
    fputs("<h2>Requests per second</h2>\n<div id=\"rps\"></div>\n", f);
    fputs("<h2>Errors per second</h2>\n<div id=\"errors\"></div>\n", f);
    fputs("<h2>Latency per second (p50, p99, max)</h2>\n<div id=\"lat\"></div>\n", f);
    if (v->secs_cut)
        fprintf(f, "<p class=\"note\">Only the first %zu seconds are plotted.</p>\n", v->nsecs);
    /* The data: JSON in a script element that is not run (type application/json). */
    fputs("<script type=\"application/json\" id=\"data\">{\"target\":", f);
    js_str(f, o->url ? o->url : o->target);
    fprintf(f, ",\"rate\":%llu,\"spectrum\":", (unsigned long long)o->rate);
    spectrum(f, h);
    if (o->rate) {
        fputs(",\"spectrum_uncorrected\":", f);
        spectrum(f, &t->hist_unc);
    }
    /* seconds: [start, length, requests, errors, p50, p99, max] */
    fputs(",\"seconds\":[", f);
    for (size_t i = 0; i < v->nsecs; i++) {
        const struct load_sec *s = &v->secs[i];
        fprintf(f, "%s[%.3f,%.3f,%llu,%llu,%llu,%llu,%llu]", i ? "," : "", s->t, s->len,
                (unsigned long long)s->requests, (unsigned long long)s->errors,
                (unsigned long long)s->p50, (unsigned long long)s->p99, (unsigned long long)s->max);
    }
    fputs("]}</script>\n", f);
    fputs(page_script, f);
    fputs("<script>document.getElementById('target').textContent = 'Target: ' + "
          "JSON.parse(document.getElementById('data').textContent).target;</script>\n",
          f);
    fputs("</body></html>\n", f);
    if (fclose(f) != 0) {
        int e = -errno;
        cli_err(o->html, "cannot write: %s", strerror(-e));
        return e;
    }
    return 0;
}
