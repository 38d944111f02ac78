/* SPDX-License-Identifier: MIT */
/* vega-serve: the access log, one line per exchange in the combined log format (Apache's and
 * nginx's default) or as JSON. A request never writes the file: its line is copied into a
 * bounded buffer shared by the workers (a mutex held for the copy), and a task of its own
 * writes the buffer out (an io_uring write, or the blocking pool under epoll) every
 * LOG_FLUSH_MS, or sooner once half of it is full, swapping in a second buffer meanwhile.
 * When the file is slower than the requests and the buffer is full, lines are dropped, never
 * waited for: each dropped line is counted (vega_serve_access_log_dropped_total in --metrics)
 * and the flusher says how many on stderr. A clean stop writes every line kept. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vega/fs.h>
#include <vega/sync.h>

#include "serve.h"

/* Each of the two buffers; lines beyond what the one filling holds are dropped. */
#define LOG_BUF (256 * 1024)
/* The longest a line waits in the buffer (when the disk keeps up). */
#define LOG_FLUSH_MS 100
/* How often a write that is held up reports the lines dropped meanwhile. */
#define LOG_REPORT_MS 1000

static struct {
    pthread_mutex_t mu;
    char *fill, *spare; /* lines being added; the one being written (or idle) */
    size_t len;
    bool kicked;      /* the flusher was woken for a half-full buffer */
    uint64_t dropped; /* lines dropped, in all */
    uint64_t told;    /* dropped lines already reported on stderr */
    vega_notify wake;
    vega_task *task;
    vega_file *file;  /* a dup of serve_o.log_fd */
    const char *rest; /* what a cancelled write left of the spare buffer, for the stop */
    size_t rest_len;
    bool on;
} L = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Reports drops seen since the last report (stderr, one line). */
static void tell_dropped(void)
{
    pthread_mutex_lock(&L.mu);
    uint64_t d = L.dropped, n = d - L.told;
    L.told = d;
    pthread_mutex_unlock(&L.mu);
    if (n)
        cli_err("access log",
                "%" PRIu64 " lines dropped (%" PRIu64 " in all): the log file is written slower "
                "than requests arrive",
                n, d);
}

static void *flush_task(void *arg)
{
    (void)arg;
    for (;;) {
        int w = vega_notify_wait(&L.wake, vega_deadline_in_ms(LOG_FLUSH_MS));
        pthread_mutex_lock(&L.mu);
        char *buf = L.fill;
        size_t n = L.len;
        L.fill = L.spare;
        L.spare = buf;
        L.len = 0;
        L.kicked = false;
        pthread_mutex_unlock(&L.mu);
        /* A write that waits long (a full pipe, a stalled disk) says meanwhile what it made
         * drop; under epoll a write running on the blocking pool cannot be interrupted, so
         * the report comes once it is done. */
        size_t done = 0;
        vega_ssize r = 0;
        while (done < n) {
            size_t part = 0;
            r = vega_file_write(L.file, buf + done, n - done, -1, &part,
                                vega_deadline_in_ms(LOG_REPORT_MS));
            done += part;
            if (r != -ETIMEDOUT)
                break;
            tell_dropped();
        }
        if (r == -ECANCELED || w == -ECANCELED) {
            /* The stop: what is not written yet goes out there, in order. */
            L.rest = buf + done;
            L.rest_len = n - done;
            return NULL;
        }
        if (r < 0)
            cli_err_code("access log: write", (int)r);
        tell_dropped();
    }
}

int serve_log_start(void)
{
    if (serve_o.log_fd < 0)
        return 0;
    L.fill = malloc(LOG_BUF);
    L.spare = malloc(LOG_BUF);
    int fd = dup(serve_o.log_fd);
    int r = !L.fill || !L.spare ? -ENOMEM : fd < 0 ? -errno : vega_file_from_fd(&L.file, fd);
    if (r == 0) {
        vega_notify_init(&L.wake);
        r = vega_task_spawn(&L.task, flush_task, NULL);
        if (r < 0) {
            vega_notify_fini(&L.wake);
            vega_file_close(L.file);
            fd = -1;
        }
    }
    if (r < 0) {
        if (fd >= 0 && !L.file)
            close(fd);
        L.file = NULL;
        free(L.fill);
        free(L.spare);
        L.fill = L.spare = NULL;
        cli_err_code("access log", r);
        return r;
    }
    L.on = true;
    return 0;
}

/* Writes all of p with write(2) (the stop, after the flusher ended). */
static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            cli_err("access log", "write: %s", w < 0 ? strerror(errno) : "no progress");
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

void serve_log_stop(void)
{
    if (!L.on)
        return;
    vega_task_cancel(L.task);
    vega_task_join(L.task, NULL, VEGA_DEADLINE_NEVER);
    L.task = NULL;
    int fd = vega_file_fd(L.file);
    pthread_mutex_lock(&L.mu);
    L.on = false;
    size_t n = L.len;
    L.len = 0;
    pthread_mutex_unlock(&L.mu);
    write_all(fd, L.rest, L.rest_len);
    write_all(fd, L.fill, n);
    tell_dropped();
    vega_file_close(L.file);
    L.file = NULL;
    vega_notify_fini(&L.wake);
    free(L.fill);
    free(L.spare);
    L.fill = L.spare = NULL;
}

uint64_t serve_log_dropped(void)
{
    pthread_mutex_lock(&L.mu);
    uint64_t d = L.dropped;
    pthread_mutex_unlock(&L.mu);
    return d;
}

/* Copies one line into the buffer, or counts it dropped; never waits for the file. */
static void log_line(const char *p, size_t n)
{
    bool kick = false;
    pthread_mutex_lock(&L.mu);
    if (!L.on) {
        pthread_mutex_unlock(&L.mu);
        /* No flusher (it could not start, or the stop has begun): the line goes straight. */
        ssize_t w = write(serve_o.log_fd, p, n);
        (void)w;
        return;
    }
    if (L.len + n <= LOG_BUF) {
        memcpy(L.fill + L.len, p, n);
        L.len += n;
        if (!L.kicked && L.len >= LOG_BUF / 2)
            kick = L.kicked = true;
    } else {
        L.dropped++;
    }
    pthread_mutex_unlock(&L.mu);
    if (kick)
        vega_notify_one(&L.wake);
}

/* Writes s escaped for a quoted log field: '"', '\\' and bytes outside printable ASCII as \xHH
 * (nginx's escaping), so a request cannot forge a log line. */
static void esc(struct sbuf *b, const char *s, size_t n, bool json)
{
    if (json) {
        sbuf_json(b, s, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\')
            sbuf_addf(b, "\\x%02X", c);
        else
            sbuf_add(b, &s[i], 1);
    }
}

static void peer_ip(const vega_addr *a, char *out, size_t cap)
{
    char buf[VEGA_ADDR_STRLEN];
    if (!a || vega_addr_format(a, buf, sizeof(buf)) < 0) {
        snprintf(out, cap, "-");
        return;
    }
    char *colon = strrchr(buf, ':');
    if (colon && colon != buf && (buf[0] != '[' || colon[-1] == ']'))
        *colon = '\0';
    char *h = buf;
    if (h[0] == '[') {
        h++;
        size_t l = strlen(h);
        if (l && h[l - 1] == ']')
            h[l - 1] = '\0';
    }
    snprintf(out, cap, "%s", h);
}

static void field_or_dash(struct sbuf *b, const vega_http_request *req, const char *name, bool json)
{
    size_t len;
    const char *v = serve_req_field(req, name, &len);
    if (v)
        esc(b, v, len, json);
    else if (!json)
        sbuf_adds(b, "-");
}

void serve_on_log(void *user, const vega_http_request *req, const vega_http_log_entry *e)
{
    (void)user;
    if (serve_o.log_fd < 0)
        return;
    bool json = serve_o.log_format == SERVE_LOG_JSON;
    char ip[VEGA_ADDR_STRLEN], when[64];
    peer_ip(req->peer, ip, sizeof(ip));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), json ? "%Y-%m-%dT%H:%M:%SZ" : "%d/%b/%Y:%H:%M:%S +0000", &tm);
    const char *proto = req->version == 10   ? "HTTP/1.0"
                        : req->version == 30 ? "HTTP/3"
                        : req->version == 20 ? "HTTP/2.0"
                                             : "HTTP/1.1";

    /* The line lives on the stack: max is below cap, so sbuf never reallocs it. */
    char stack[2048];
    struct sbuf b = {stack, 0, sizeof(stack), sizeof(stack) - 1, false};
    if (json) {
        sbuf_addf(&b, "{\"time\":\"%s\",\"remote\":\"%s\",\"method\":\"", when, ip);
        esc(&b, req->method_name.ptr, req->method_name.len, true);
        sbuf_adds(&b, "\",\"target\":\"");
        esc(&b, req->target.ptr, req->target.len, true);
        sbuf_addf(&b,
                  "\",\"protocol\":\"%s\",\"status\":%d,\"bytes\":%" PRIu64
                  ",\"duration_ms\":%.3f,\"referer\":\"",
                  proto, e->status, e->body_bytes, (double)e->duration_ns / 1e6);
        field_or_dash(&b, req, "Referer", true);
        sbuf_adds(&b, "\",\"user_agent\":\"");
        field_or_dash(&b, req, "User-Agent", true);
        sbuf_adds(&b, "\"}");
    } else {
        sbuf_addf(&b, "%s - - [%s] \"", ip, when);
        esc(&b, req->method_name.ptr, req->method_name.len, false);
        sbuf_adds(&b, " ");
        esc(&b, req->target.ptr, req->target.len, false);
        sbuf_addf(&b, " %s\" %d %" PRIu64 " \"", proto, e->status, e->body_bytes);
        field_or_dash(&b, req, "Referer", false);
        sbuf_adds(&b, "\" \"");
        field_or_dash(&b, req, "User-Agent", false);
        sbuf_adds(&b, "\"");
    }
    if (b.failed) {
        /* Too long for one line (a huge target or User-Agent): the line without them. */
        b.len = 0;
        b.failed = false;
        if (json)
            sbuf_addf(&b,
                      "{\"time\":\"%s\",\"remote\":\"%s\",\"protocol\":\"%s\",\"status\":%d,"
                      "\"bytes\":%" PRIu64 ",\"truncated\":true}",
                      when, ip, proto, e->status, e->body_bytes);
        else
            sbuf_addf(&b, "%s - - [%s] \"-\" %d %" PRIu64 " \"-\" \"-\"", ip, when, e->status,
                      e->body_bytes);
    }
    b.p[b.len++] = '\n';
    log_line(b.p, b.len);
}
