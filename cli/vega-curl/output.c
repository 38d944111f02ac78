/* SPDX-License-Identifier: MIT */
/* Where bodies go (stdout, or files created on the first byte as curl does) and the progress
 * meter on stderr: curl's table by default, a bar with -#. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "curl.h"

struct curl_sink curl_stdout;

static bool stdout_shared;
static vega_mutex stdout_mu;

void curl_stdout_set_shared(bool on)
{
    if (on && !stdout_shared)
        vega_mutex_init(&stdout_mu);
    stdout_shared = on;
}

/* Holds stdout for the writes of one call when transfers share it (-Z). */
static bool stdout_lock(const struct curl_sink *s)
{
    if (!stdout_shared || !s->is_stdout)
        return false;
    while (vega_mutex_lock(&stdout_mu, VEGA_DEADLINE_NEVER) < 0)
        (void)vega_yield(); /* cancelled: still take it, the write is short */
    return true;
}

static void stdout_unlock(bool held)
{
    if (held)
        vega_mutex_unlock(&stdout_mu);
}

void curl_stdout_init(void)
{
    memset(&curl_stdout, 0, sizeof(curl_stdout));
    curl_stdout.is_stdout = true;
    curl_stdout.opened = true;
    curl_stdout.tty = isatty(STDOUT_FILENO) == 1;
    int r = cli_stdio_init(&curl_stdout.io, STDOUT_FILENO);
    if (r < 0) {
        /* A broken stdout fails only the transfers that write to it. */
        curl_stdout.err = r;
        return;
    }
    /* A terminal is usually stderr's file too: O_NONBLOCK on it would make messages fail
     * with EAGAIN. Terminal output is small; the blocking pool writes it. */
    if (curl_stdout.tty)
        cli_stdio_use_pool(&curl_stdout.io);
}

void curl_stdout_fini(void)
{
    curl_sink_flush(&curl_stdout, NULL);
    free(curl_stdout.buf);
    curl_stdout.buf = NULL;
    cli_stdio_fini(&curl_stdout.io);
}

void curl_sink_init(struct curl_sink *s, const char *path)
{
    memset(s, 0, sizeof(*s));
    s->io.fd = -1;
    if (!path || strcmp(path, "-") == 0) {
        s->is_stdout = true;
        s->checked = path != NULL; /* "-o -": binary to a terminal was asked for */
        return;
    }
    snprintf(s->path, sizeof(s->path), "%s", path);
}

static struct curl_sink *target(struct curl_sink *s)
{
    return s->is_stdout ? &curl_stdout : s;
}

static const char *sink_name(const struct curl_sink *t)
{
    return t->is_stdout ? "stdout" : t->path;
}

/* --create-dirs: each missing directory above path, as curl makes them (mode 0750). */
static void make_dirs(const char *path)
{
    char dir[sizeof(((struct curl_sink *)0)->path)];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        (void)mkdir(dir, 0750); /* an existing one is fine; a real failure shows at open */
        *p = '/';
    }
}

static int sink_open(struct curl_sink *s, const struct curl_opts *o)
{
    /* -C appends to what is there (curl opens the file for appending); a retry first cuts it
     * back to the size it had when the transfer began */
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (s->append ? 0 : O_TRUNC);
    if (s->exclusive)
        flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
    if (s->create_dirs)
        make_dirs(s->path);
    int fd = open(s->path, flags, 0666);
    if (fd >= 0 && s->append &&
        ((s->trim && ftruncate(fd, (off_t)s->append_at) < 0) || lseek(fd, 0, SEEK_END) < 0)) {
        int e = errno;
        close(fd);
        fd = -1;
        errno = e;
    }
    if (fd < 0 && s->exclusive && errno == EEXIST) {
        s->err = -errno;
        return curl_fail(o, CE_WRITE_ERROR, "Refusing to overwrite %s: %s", s->path,
                         strerror(errno));
    }
    if (fd < 0) {
        s->err = -errno;
        return curl_fail(o, CE_WRITE_ERROR, "Failed to open the file %s: %s", s->path,
                         strerror(errno));
    }
    int r = cli_stdio_adopt(&s->io, fd);
    if (r < 0) {
        close(fd);
        s->err = r;
        return curl_fail(o, CE_WRITE_ERROR, "%s: %s", s->path, vega_strerror(r));
    }
    s->opened = true;
    return 0;
}

static int write_failed(struct curl_sink *t, const struct curl_opts *o, int err)
{
    if (!t->err)
        t->err = err;
    if (!o)
        return CE_WRITE_ERROR;
    return curl_fail(o, CE_WRITE_ERROR, "Failure writing output to destination (%s: %s)",
                     sink_name(t), vega_strerror(t->err));
}

/* Writes len bytes straight to the destination (nothing may be buffered). */
static int sink_put(struct curl_sink *t, const struct curl_opts *o, const void *buf, size_t len)
{
    if (len == 0 || t->io.kind == CLI_STDIO_NULL)
        return 0;
    vega_ssize n = cli_stdio_write(&t->io, buf, len, VEGA_DEADLINE_NEVER);
    return n < 0 ? write_failed(t, o, (int)n) : 0;
}

static int flush_locked(struct curl_sink *s, const struct curl_opts *o)
{
    struct curl_sink *t = target(s);
    size_t len = t->len;
    t->len = 0;
    if (t->err)
        return CE_WRITE_ERROR; /* said when it happened */
    return sink_put(t, o, t->buf, len);
}

int curl_sink_flush(struct curl_sink *s, const struct curl_opts *o)
{
    bool held = stdout_lock(s);
    int code = flush_locked(s, o);
    stdout_unlock(held);
    return code;
}

bool curl_sink_pending(const struct curl_sink *s)
{
    const struct curl_sink *t = s->is_stdout ? &curl_stdout : s;
    return t->len > 0;
}

/* The checks before the first bytes of a body or head: an earlier failure, the file created
 * on the first byte, no binary body on a terminal. 0 or 23. */
static int sink_ready(struct curl_sink *s, const struct curl_opts *o, const void *buf, size_t len,
                      bool body)
{
    struct curl_sink *t = target(s);
    if (t->err)
        return write_failed(t, o, t->err);
    if (!t->opened && sink_open(t, o) != 0)
        return CE_WRITE_ERROR;
    if (len && body && t->tty && !s->checked) {
        s->checked = true;
        if (memchr(buf, '\0', len < 2000 ? len : 2000)) {
            if (!o->silent || o->show_error)
                cli_err(NULL, "Warning: Binary output can mess up your terminal. Use \"--output "
                              "-\" to tell vega-curl to output it to your terminal anyway, or "
                              "consider \"--output <FILE>\" to save to a file.");
            return CE_WRITE_ERROR;
        }
    }
    return 0;
}

uint8_t *curl_sink_space(struct curl_sink *s, size_t *room)
{
    struct curl_sink *t = target(s);
    if (!t->buf && !(t->buf = malloc(CURL_SINK_BUF)))
        return NULL;
    *room = CURL_SINK_BUF - t->len;
    return t->buf + t->len;
}

int curl_sink_commit(struct curl_sink *s, const struct curl_opts *o, size_t n)
{
    struct curl_sink *t = target(s);
    int code = sink_ready(s, o, t->buf + t->len, n, true);
    if (code)
        return code;
    if (t->io.kind == CLI_STDIO_NULL)
        return 0; /* nothing is written to /dev/null, so nothing is kept */
    t->len += n;
    return CURL_SINK_BUF - t->len < CURL_SINK_MIN ? curl_sink_flush(s, o) : 0;
}

static int write_locked(struct curl_sink *s, const struct curl_opts *o, const void *buf, size_t len,
                        bool body)
{
    struct curl_sink *t = target(s);
    int code = sink_ready(s, o, buf, len, body);
    if (code || len == 0)
        return code;
    if (t->buf && len <= CURL_SINK_BUF - t->len) {
        memcpy(t->buf + t->len, buf, len);
        t->len += len;
        return 0;
    }
    if ((code = flush_locked(s, o)) != 0)
        return code;
    return sink_put(t, o, buf, len);
}

int curl_sink_write(struct curl_sink *s, const struct curl_opts *o, const void *buf, size_t len,
                    bool body)
{
    bool held = stdout_lock(s);
    int code = write_locked(s, o, buf, len, body);
    stdout_unlock(held);
    return code;
}

/* Closes a file sink and frees its buffer. 0 or the -errno of close. */
static int sink_close(struct curl_sink *s)
{
    int r = s->opened ? cli_stdio_close(&s->io) : 0;
    s->opened = false;
    free(s->buf);
    s->buf = NULL;
    s->len = 0;
    return r;
}

int curl_sink_finish(struct curl_sink *s, const struct curl_opts *o)
{
    if (s->is_stdout) {
        int code = curl_sink_flush(s, o);
        return code ? code : curl_stdout.err ? CE_WRITE_ERROR : 0;
    }
    int code = 0;
    if (!s->opened && !s->err)
        code = sink_open(s, o); /* an empty body still makes an (empty) file */
    if (s->opened && code == 0)
        code = curl_sink_flush(s, o);
    int r = sink_close(s);
    if (r < 0 && code == 0 && !s->err) {
        s->err = r;
        code = curl_fail(o, CE_WRITE_ERROR, "Failure writing output to %s: %s", s->path,
                         vega_strerror(r));
    }
    return code ? code : s->err ? CE_WRITE_ERROR : 0;
}

void curl_sink_abort(struct curl_sink *s)
{
    /* What arrived before the failure is written, as curl writes each piece as it comes. */
    curl_sink_flush(s, NULL);
    if (!s->is_stdout)
        sink_close(s);
}

/* ---- progress meter -------------------------------------------------------------------------- */

static void err_puts(const char *s, size_t len)
{
    while (len) {
        ssize_t n = write(STDERR_FILENO, s, len);
        if (n <= 0)
            return;
        s += n;
        len -= (size_t)n;
    }
}

/* curl's max5data: a size in at most 5 characters. */
static void size5(char *out, size_t cap, uint64_t b)
{
    const uint64_t k = 1024, m = k * 1024, g = m * 1024;
    if (b < 100000)
        snprintf(out, cap, "%5llu", (unsigned long long)b);
    else if (b < 10000 * k)
        snprintf(out, cap, "%4lluk", (unsigned long long)(b / k));
    else if (b < 100 * m)
        snprintf(out, cap, "%2llu.%01lluM", (unsigned long long)(b / m),
                 (unsigned long long)((b % m) * 10 / m));
    else if (b < 10000 * m)
        snprintf(out, cap, "%4lluM", (unsigned long long)(b / m));
    else if (b < 100 * g)
        snprintf(out, cap, "%2llu.%01lluG", (unsigned long long)(b / g),
                 (unsigned long long)((b % g) * 10 / g));
    else
        snprintf(out, cap, "%4lluG", (unsigned long long)(b / g));
}

/* curl's time2str: 8 characters, "--:--:--" when unknown. */
static void time8(char *out, size_t cap, int64_t secs)
{
    if (secs < 0) {
        snprintf(out, cap, "--:--:--");
        return;
    }
    long long h = secs / 3600, mnt = (secs / 60) % 60, s = secs % 60;
    if (h < 100)
        snprintf(out, cap, "%2lld:%02lld:%02lld", h, mnt, s);
    else if (secs / 86400 < 1000)
        snprintf(out, cap, "%3lldd %02lldh", (long long)(secs / 86400), h % 24);
    else
        snprintf(out, cap, "%7lldd", (long long)(secs / 86400));
}

void curl_progress_start(struct curl_progress *p, const struct curl_opts *o, bool to_file)
{
    memset(p, 0, sizeof(*p));
    p->on = !o->silent && !o->no_progress && !o->parallel && to_file && isatty(STDERR_FILENO) == 1;
    p->bar = o->progress_bar;
    p->start = p->last = p->last_speed_at = vega_now();
}

static void draw_bar(struct curl_progress *p)
{
    int cols = 80;
    const char *c = getenv("COLUMNS");
    if (c && atoi(c) > 20 && atoi(c) < 1000)
        cols = atoi(c);
    char line[1100];
    int width = cols - 8;
    if (p->total) {
        double frac = (double)p->now / (double)p->total;
        if (frac > 1)
            frac = 1;
        int n = (int)(frac * width);
        memset(line, ' ', (size_t)width + 1);
        line[0] = '\r';
        memset(line + 1, '#', (size_t)n);
        size_t len = 1 + (size_t)width;
        cli_appendf(line, sizeof(line), &len, " %5.1f%%", frac * 100);
        err_puts(line, len);
    } else {
        char sz[16];
        size5(sz, sizeof(sz), p->now);
        size_t len = 0;
        cli_appendf(line, sizeof(line), &len, "\r%-*s", width, "");
        int pos = (int)((p->now / 65536) % (uint64_t)(width - 4));
        memcpy(line + 1 + pos, "<=>", 3);
        cli_appendf(line, sizeof(line), &len, " %s", sz);
        err_puts(line, len);
    }
}

static void draw_table(struct curl_progress *p, vega_tstamp now)
{
    static const char head[] =
        "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
        "                                 Dload  Upload   Total   Spent    Left  Speed\n";
    if (!p->drawn)
        err_puts(head, sizeof(head) - 1);
    double spent = (double)(now - p->start) / 1e9;
    uint64_t avg = spent > 0 ? (uint64_t)((double)p->now / spent) : 0;
    int pct = p->total ? (int)(p->now * 100 / p->total) : 0;
    int64_t total_s = -1, left_s = -1;
    if (p->total && avg) {
        total_s = (int64_t)(p->total / avg);
        left_s = p->now >= p->total ? 0 : (int64_t)((p->total - p->now) / avg);
    }
    char tot[32], rcv[32], up[32], dl[32], ul[32], cur[32], tt[32], ts[32], tl[32];
    size5(tot, sizeof(tot), p->total ? p->total : p->now);
    size5(rcv, sizeof(rcv), p->now);
    size5(up, sizeof(up), 0);
    size5(dl, sizeof(dl), avg);
    size5(ul, sizeof(ul), 0);
    size5(cur, sizeof(cur), (uint64_t)p->speed);
    time8(tt, sizeof(tt), total_s);
    time8(ts, sizeof(ts), (int64_t)spent);
    time8(tl, sizeof(tl), left_s);
    char line[256];
    int len = snprintf(line, sizeof(line), "\r%3d %s  %3d %s  %3d %s  %s  %s %s %s %s %s",
                       p->total ? pct : 0, tot, pct, rcv, 0, up, dl, ul, tt, ts, tl, cur);
    if (len > 0)
        err_puts(line, (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1);
}

void curl_progress_update(struct curl_progress *p, bool final)
{
    if (!p->on)
        return;
    vega_tstamp now = vega_now();
    /* curl redraws at most once a second. */
    if (!final && p->drawn && now - p->last < VEGA_NS_PER_S)
        return;
    if (now - p->last_speed_at >= VEGA_NS_PER_S / 2 || final) {
        double dt = (double)(now - p->last_speed_at) / 1e9;
        if (dt > 0)
            p->speed = (double)(p->now - p->last_bytes) / dt;
        if (final && p->now && now > p->start)
            p->speed = p->speed > 0 ? p->speed : (double)p->now / ((double)(now - p->start) / 1e9);
        p->last_bytes = p->now;
        p->last_speed_at = now;
    }
    if (p->bar)
        draw_bar(p);
    else
        draw_table(p, now);
    p->drawn = true;
    p->last = now;
}

void curl_progress_end(struct curl_progress *p)
{
    if (!p->on)
        return;
    curl_progress_update(p, true);
    err_puts("\n", 1);
    p->on = false;
}
