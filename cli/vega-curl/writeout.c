/* SPDX-License-Identifier: MIT */
/* --write-out: curl's %{variable} template printed after each transfer. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "curl.h"

#define WO_MAX (64u * 1024)

struct wo {
    char buf[WO_MAX];
    size_t len;
    bool to_stderr;
};

static void wo_flush(struct wo *w)
{
    if (!w->len)
        return;
    if (w->to_stderr) {
        ssize_t n = write(STDERR_FILENO, w->buf, w->len);
        (void)n;
    } else if (curl_sink_flush(&curl_stdout, NULL) == 0) {
        /* after the body bytes still buffered */
        vega_ssize n = cli_stdio_write(&curl_stdout.io, w->buf, w->len, VEGA_DEADLINE_NEVER);
        if (n < 0)
            curl_stdout.err = (int)n;
    }
    w->len = 0;
}

static void wo_put(struct wo *w, const char *s, size_t n)
{
    while (n) {
        if (w->len == sizeof(w->buf))
            wo_flush(w);
        size_t k = sizeof(w->buf) - w->len < n ? sizeof(w->buf) - w->len : n;
        memcpy(w->buf + w->len, s, k);
        w->len += k;
        s += k;
        n -= k;
    }
}

static void wo_printf(struct wo *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void wo_printf(struct wo *w, const char *fmt, ...)
{
    char tmp[CURL_MAX_URL_LEN + 64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        wo_put(w, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Seconds since the transfer began, or 0 when the step did not happen. */
static double secs(const struct curl_result *r, vega_tstamp t)
{
    return t && t >= r->t_begin ? (double)(t - r->t_begin) / 1e9 : 0.0;
}

static bool variable(struct wo *w, const struct curl_result *r, const char *name, size_t len)
{
#define IS(s) (len == sizeof(s) - 1 && memcmp(name, s, len) == 0)
    double total = secs(r, r->t_end);
    if (IS("http_code") || IS("response_code"))
        wo_printf(w, "%03d", r->status);
    else if (IS("http_connect"))
        wo_printf(w, "%03d", curl_proxy_http_connect());
    else if (IS("http_version"))
        wo_printf(w, "%s",
                  r->http_version == 30   ? "3"
                  : r->http_version == 20 ? "2"
                  : r->http_version == 11 ? "1.1"
                  : r->http_version == 10 ? "1.0"
                                          : "0");
    else if (IS("time_total"))
        wo_printf(w, "%.6f", total);
    else if (IS("time_namelookup"))
        wo_printf(w, "%.6f", secs(r, r->t_namelookup));
    else if (IS("time_connect"))
        wo_printf(w, "%.6f", secs(r, r->t_connect));
    else if (IS("time_appconnect"))
        wo_printf(w, "%.6f", secs(r, r->t_appconnect));
    else if (IS("time_pretransfer"))
        wo_printf(w, "%.6f", secs(r, r->t_pretransfer));
    else if (IS("time_starttransfer"))
        wo_printf(w, "%.6f", secs(r, r->t_starttransfer));
    else if (IS("time_redirect"))
        wo_printf(w, "%.6f", secs(r, r->t_redirect));
    else if (IS("size_download"))
        wo_printf(w, "%llu", (unsigned long long)r->size_download);
    else if (IS("size_upload"))
        wo_printf(w, "%llu", (unsigned long long)r->size_upload);
    else if (IS("size_header"))
        wo_printf(w, "%llu", (unsigned long long)r->size_header);
    else if (IS("size_request"))
        wo_printf(w, "%llu", (unsigned long long)r->size_request);
    else if (IS("speed_download"))
        wo_printf(w, "%llu",
                  total > 0 ? (unsigned long long)((double)r->size_download / total) : 0ull);
    else if (IS("speed_upload"))
        wo_printf(w, "%llu",
                  total > 0 ? (unsigned long long)((double)r->size_upload / total) : 0ull);
    else if (IS("url_effective"))
        wo_printf(w, "%s", r->url);
    else if (IS("url"))
        wo_printf(w, "%s", r->url);
    else if (IS("redirect_url"))
        wo_printf(w, "%s", r->redirect_url);
    else if (IS("num_redirects"))
        wo_printf(w, "%ld", r->num_redirects);
    else if (IS("num_connects"))
        wo_printf(w, "%u", r->num_connects);
    else if (IS("num_headers"))
        wo_printf(w, "%u", r->num_headers);
    else if (IS("remote_ip"))
        wo_printf(w, "%s", r->remote_ip);
    else if (IS("remote_port"))
        wo_printf(w, "%u", r->remote_port);
    else if (IS("content_type"))
        wo_printf(w, "%s", r->content_type);
    else if (IS("method"))
        wo_printf(w, "%s", r->method ? r->method : "GET");
    else if (IS("scheme"))
        wo_printf(w, "%s", r->scheme);
    else if (IS("exitcode"))
        wo_printf(w, "%d", r->exit_code);
    else if (IS("errormsg"))
        wo_printf(w, "%s", r->errmsg);
    else if (IS("filename_effective"))
        wo_printf(w, "%s", r->filename);
    else if (IS("stderr")) {
        wo_flush(w);
        w->to_stderr = true;
    } else if (IS("stdout")) {
        wo_flush(w);
        w->to_stderr = false;
    } else
        return false;
    return true;
#undef IS
}

void curl_write_out(const struct curl_opts *o, const struct curl_result *r)
{
    static struct wo w; /* the transfers run one at a time, on one task */
    w.len = 0;
    w.to_stderr = false;
    const char *s = o->write_out;
    while (*s) {
        if (s[0] == '%' && s[1] == '%') {
            wo_put(&w, "%", 1);
            s += 2;
        } else if (s[0] == '%' && s[1] == '{') {
            const char *end = strchr(s + 2, '}');
            if (!end) {
                wo_put(&w, s, strlen(s));
                break;
            }
            if (!variable(&w, r, s + 2, (size_t)(end - s - 2)) && !o->silent)
                cli_err(NULL, "unknown --write-out variable: '%.*s'", (int)(end - s - 2), s + 2);
            s = end + 1;
        } else if (s[0] == '\\' && s[1]) {
            char c = s[1] == 'n' ? '\n' : s[1] == 'r' ? '\r' : s[1] == 't' ? '\t' : s[1];
            if (c == s[1] && c != '\\') {
                wo_put(&w, s, 2); /* not an escape curl knows: kept as written */
            } else {
                wo_put(&w, &c, 1);
            }
            s += 2;
        } else {
            size_t n = strcspn(s, "%\\");
            if (n == 0)
                n = 1;
            wo_put(&w, s, n);
            s += n;
        }
    }
    wo_flush(&w);
}
