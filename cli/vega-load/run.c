/* SPDX-License-Identifier: MIT */
/* A run: resolve the target, start the connections in a task group, show progress, stop at
 * the end (or on SIGINT/SIGTERM), merge the per-worker counters and report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "load.h"

#define PROGRESS_MS      500
#define HTTP_PROGRESS_MS 1000
#define SAMPLE_MS        100  /* Req/Sec per worker, as wrk samples it */
#define CLOSERS_WAIT_MS  3000 /* WebSocket: the close handshakes after a signal, at most */

int load_connect(struct load_run *r, vega_sock **out, bool ever, vega_deadline dl)
{
    unsigned first = atomic_load_explicit(&r->good_addr, memory_order_relaxed);
    unsigned tries = ever ? 1 : r->naddrs;
    int e = 0;
    for (unsigned k = 0; k < tries; k++) {
        unsigned i = (first + k) % r->naddrs;
        e = vega_tcp_connect(out, &r->addrs[i], dl);
        if (e == 0) {
            if (i != first)
                atomic_store_explicit(&r->good_addr, i, memory_order_relaxed);
            break;
        }
        if (e == -ECANCELED || e == -ETIMEDOUT)
            break;
    }
    return e;
}

struct load_worker *load_worker_self(struct load_run *r)
{
    int i = vega_worker_index();
    /* Connection tasks always run on a worker of this runtime. */
    return &r->w[i >= 0 && (unsigned)i < r->nworkers ? (unsigned)i : 0];
}

void load_tls_seen(struct load_run *r, vega_stream *tls)
{
    if (atomic_flag_test_and_set(&r->tls_seen))
        return;
    const char *v = vega_tls_get_version(tls), *c = vega_tls_get_cipher(tls),
               *a = vega_tls_get_alpn(tls);
    snprintf(r->tls_info, sizeof(r->tls_info), "%s, %s%s%s", v ? v : "?", c ? c : "?",
             a ? ", ALPN " : "", a ? a : "");
}

/* Seconds from the start at which the rate has asked for n requests, with --stages: in a
 * stage that ramps from a to b requests/s over d seconds, the count after t seconds is
 * a t + (b - a) t^2 / 2d; solved for t in the form that stays exact when b is near a. */
static double stages_time_of(const struct load_opts *o, double n)
{
    double at = 0.0, a = 0.0;
    for (unsigned i = 0; i < o->nstages; i++) {
        double d = (double)o->stages[i].ns / 1e9, b = o->stages[i].rate;
        double in_stage = (a + b) / 2.0 * d;
        if (n < in_stage) {
            double disc = a * a + 2.0 * (b - a) * n / d;
            double root = disc > 0.0 ? cli_sqrt(disc) : 0.0;
            double t = a + root > 0.0 ? 2.0 * n / (a + root) : 0.0;
            return at + (t < d ? t : d);
        }
        n -= in_stage;
        at += d;
        a = b;
    }
    return -1.0; /* past the last stage */
}

vega_tstamp load_pace(const struct load_run *r, uint64_t k, unsigned index)
{
    const struct load_opts *o = r->o;
    double n = (double)k * (double)o->conns + (double)index;
    double s = o->nstages ? stages_time_of(o, n) : n / (double)o->rate;
    if (s < 0.0 || s * 1e9 >= (double)(VEGA_DEADLINE_NEVER - r->start))
        return VEGA_DEADLINE_NEVER;
    return r->start + (vega_tstamp)(s * 1e9);
}

vega_deadline load_step_deadline(const struct load_run *r, vega_tstamp now, bool *at_end)
{
    uint64_t t = r->o->timeout_ns;
    vega_deadline dl = now > VEGA_DEADLINE_NEVER - t ? VEGA_DEADLINE_NEVER : now + t;
    *at_end = r->end <= dl;
    return *at_end ? r->end : dl;
}

int load_timer_open(int64_t *mono_offset)
{
    struct timespec ts;
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd >= 0 && clock_gettime(CLOCK_MONOTONIC, &ts) == 0) {
        int64_t mono = (int64_t)ts.tv_sec * (int64_t)VEGA_NS_PER_S + ts.tv_nsec;
        *mono_offset = mono - (int64_t)vega_now();
        return fd;
    }
    if (fd >= 0)
        close(fd);
    return -1;
}

int load_timer_arm(int fd, int64_t mono_offset, vega_tstamp t)
{
    struct itimerspec its = {{0, 0}, {0, 0}}; /* NEVER: disarmed */
    if (t != VEGA_DEADLINE_NEVER) {
        int64_t at = (int64_t)t + mono_offset;
        if (at <= 0)
            return -EINVAL;
        its.it_value.tv_sec = at / (int64_t)VEGA_NS_PER_S;
        its.it_value.tv_nsec = at % (int64_t)VEGA_NS_PER_S;
    }
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) < 0 ? -errno : 0;
}

int load_timer_fire(int fd)
{
    struct itimerspec its = {{0, 0}, {0, 1}}; /* relative: in 1 ns */
    return timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
}

bool load_ticket_take(struct load_run *r)
{
    int_fast64_t left = atomic_load_explicit(&r->tickets, memory_order_relaxed);
    while (left > 0)
        if (atomic_compare_exchange_weak(&r->tickets, &left, left - 1))
            return true;
    return false;
}

void load_ticket_return(struct load_run *r)
{
    atomic_fetch_add(&r->tickets, 1);
}

static const char *target_name(const struct load_opts *o)
{
    return o->http ? o->url : o->unix_path ? o->unix_path : o->target;
}

void load_error(struct load_run *r, enum load_kind kind, int code)
{
    load_error_msg(r, kind, code, NULL);
}

void load_error_msg(struct load_run *r, enum load_kind kind, int code, const char *msg)
{
    load_bump(&load_worker_self(r)->errors[kind], 1);
    if (atomic_exchange(&r->reported[kind], true) && cli_verbose < 1)
        return;
    const char *t = target_name(r->o);
    char what[VEGA_ADDR_STRLEN + 16];
    char limit[32];
    switch (kind) {
    case LOAD_ERR_CONNECT:
        snprintf(what, sizeof(what), "connect %s", t);
        if (code == -ETIMEDOUT) {
            load_fmt_duration(limit, sizeof(limit), (double)r->o->timeout_ns / 1e3);
            cli_err(what, "no answer within %s (--timeout)", limit);
        } else {
            cli_err(what, "%s", msg && *msg ? msg : vega_tls_strerror(code));
        }
        break;
    case LOAD_ERR_READ:
    case LOAD_ERR_WRITE:
        snprintf(what, sizeof(what), "%s %s", kind == LOAD_ERR_READ ? "read" : "write", t);
        if (code == 0)
            cli_err(what, "connection closed by the server");
        else
            cli_err(what, "%s", msg && *msg ? msg : vega_tls_strerror(code));
        break;
    case LOAD_ERR_TIMEOUT:
        if (msg && *msg) {
            cli_err(t, "%s", msg);
            break;
        }
        load_fmt_duration(limit, sizeof(limit), (double)r->o->timeout_ns / 1e3);
        cli_err(t, "no complete %s within %s (--timeout)%s", r->o->http ? "response" : "echo",
                limit, r->o->udp ? "" : "; reconnecting");
        break;
    case LOAD_ERR_PARSE:
        /* HTTP/2, HTTP/3 and WebSocket messages say what follows (a stream reset, or a
         * reconnect). */
        cli_err(t, "%s%s", msg && *msg ? msg : "malformed response",
                r->o->h3 || r->o->h2 || r->o->ws ? "" : "; reconnecting");
        break;
    case LOAD_ERR_MISMATCH:
        cli_err(t, "the echo differs from what was sent%s", r->o->udp ? "" : "; reconnecting");
        break;
    default:
        break;
    }
}

/* ---- setup ---------------------------------------------------------------------------------- */

static int resolve(struct load_run *r)
{
    const struct load_opts *o = r->o;
    int n;
    if (o->unix_path) {
        n = vega_addr_from_unix(&r->addrs[0], o->unix_path);
        if (n == 0)
            n = 1;
    } else {
        n = vega_addr_resolve(r->addrs, LOAD_MAX_ADDRS, o->connect_host ? o->connect_host : o->host,
                              o->connect_port ? o->connect_port : o->port, o->family,
                              VEGA_DEADLINE_NEVER);
    }
    if (n == VEGA_ERR_DNS_NOT_FOUND || n == VEGA_ERR_DNS_NO_ADDRESS)
        cli_err(target_name(o), "cannot resolve host name%s",
                o->family == AF_INET    ? " to an IPv4 address"
                : o->family == AF_INET6 ? " to an IPv6 address"
                                        : "");
    else if (n == -EAFNOSUPPORT)
        cli_err(target_name(o), "address is not %s", o->family == AF_INET ? "IPv4" : "IPv6");
    else if (n < 0)
        cli_err_code(target_name(o), n);
    if (n < 0)
        return n;
    r->naddrs = (unsigned)n;
    return 0;
}

/* The message every connection sends: a repeating printable pattern, so that a capture reads
 * easily and a shifted echo never matches. */
static unsigned char *make_payload(size_t size)
{
    static const char pat[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    unsigned char *p = malloc(size);
    if (p)
        for (size_t i = 0; i < size; i++)
            p[i] = (unsigned char)pat[i % (sizeof(pat) - 1)];
    return p;
}

static int workers_init(struct load_run *r)
{
    r->nworkers = vega_rt_workers(vega_rt_current());
    r->w = aligned_alloc(_Alignof(struct load_worker), r->nworkers * sizeof(*r->w));
    if (!r->w)
        return -ENOMEM;
    memset(r->w, 0, r->nworkers * sizeof(*r->w));
    for (unsigned i = 0; i < r->nworkers; i++) {
        struct load_worker *w = &r->w[i];
        int e = cli_hist_init(&w->hist, LOAD_HIST_MAX_US, LOAD_HIST_DIGITS);
        if (e == 0 && (r->o->http || r->o->ws))
            e = cli_hist_init(&w->hist_unc, LOAD_HIST_MAX_US, LOAD_HIST_DIGITS);
        if (e == 0 && r->o->http) {
            e = cli_hist_init(&w->connect_hist, LOAD_HIST_MAX_US, LOAD_HIST_DIGITS);
            if (e == 0)
                e = cli_hist_init(&w->tls_hist, LOAD_HIST_MAX_US, LOAD_HIST_DIGITS);
            if (e == 0)
                e = cli_hist_init(&w->first_byte_hist, LOAD_HIST_MAX_US, LOAD_HIST_DIGITS);
        }
        if (e < 0)
            return e;
    }
    return 0;
}

static void workers_fini(struct load_run *r)
{
    if (!r->w)
        return;
    for (unsigned i = 0; i < r->nworkers; i++) {
        cli_hist_fini(&r->w[i].hist);
        cli_hist_fini(&r->w[i].hist_unc);
        cli_hist_fini(&r->w[i].connect_hist);
        cli_hist_fini(&r->w[i].tls_hist);
        cli_hist_fini(&r->w[i].first_byte_hist);
    }
    free(r->w);
    r->w = NULL;
}

/* ---- stop signals --------------------------------------------------------------------------- */

struct stopper {
    const sigset_t *set;
    vega_group *g;
    atomic_int signo;
};

static void *stopper_main(void *arg)
{
    struct stopper *st = arg;
    int signo = 0;
    if (vega_signal_wait(st->set, &signo, VEGA_DEADLINE_NEVER) == 0) {
        atomic_store(&st->signo, signo);
        vega_group_cancel(st->g);
    }
    return NULL;
}

/* ---- progress ------------------------------------------------------------------------------- */

static uint64_t sum_round_trips(const struct load_run *r)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < r->nworkers; i++)
        n += atomic_load_explicit(&r->w[i].round_trips, memory_order_relaxed);
    return n;
}

static uint64_t sum_errors(const struct load_run *r)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < r->nworkers; i++)
        for (int k = 0; k < LOAD_ERR_KINDS; k++)
            n += atomic_load_explicit(&r->w[i].errors[k], memory_order_relaxed);
    return n;
}

struct progress {
    vega_tstamp last_t;
    uint64_t last_n;
    unsigned below; /* dashboard lines drawn below the progress line */
};

/* The terminal's width in columns (80 when it cannot be read). */
static unsigned term_cols(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

/* Draws the progress line and, once a second has been measured, the dashboard below it; each
 * draw first moves back up over the lines the previous one drew, and erases what is left
 * below (lines are cut to the terminal's width, so none wraps and the count stays true). */
static void progress_line(const struct load_run *r, struct progress *p)
{
    vega_tstamp now = vega_now();
    uint64_t n = sum_round_trips(r), errs = sum_errors(r);
    char line[160], rate[32];
    size_t len = 0;
    unsigned cols = term_cols();
    bool ok; /* a line that does not fit whole is not shown */
    if (now < r->measure_start) {
        ok =
            cli_appendf(line, sizeof(line), &len, "\r\033[Kwarming up: %.1fs of %.1fs, %llu errors",
                        (double)(now - r->start) / 1e9, (double)(r->measure_start - r->start) / 1e9,
                        (unsigned long long)errs);
    } else {
        double dt = (double)(now - (p->last_t > r->measure_start ? p->last_t : r->measure_start));
        double per_s = dt > 0 ? (double)(n - p->last_n) * 1e9 / dt : 0.0;
        if (per_s >= 1e6)
            snprintf(rate, sizeof(rate), "%.2fM/s", per_s / 1e6);
        else if (per_s >= 1e3)
            snprintf(rate, sizeof(rate), "%.1fk/s", per_s / 1e3);
        else
            snprintf(rate, sizeof(rate), "%.0f/s", per_s);
        double t = (double)(now - r->measure_start) / 1e9;
        ok = cli_appendf(line, sizeof(line), &len, "\r\033[K%.1fs", t);
        if (ok && r->o->duration_ns)
            ok =
                cli_appendf(line, sizeof(line), &len, " of %.1fs", (double)r->o->duration_ns / 1e9);
        ok = ok && cli_appendf(line, sizeof(line), &len, ": %llu %s", (unsigned long long)n,
                               load_noun(r->o));
        if (ok && r->o->round_trips)
            ok = cli_appendf(line, sizeof(line), &len, " (%.0f%%)",
                             100.0 * (double)n / (double)r->o->round_trips);
        ok = ok && cli_appendf(line, sizeof(line), &len, ", %s, %llu errors", rate,
                               (unsigned long long)errs);
        p->last_t = now;
        p->last_n = n;
    }
    if (!ok || len == 0)
        return;
    static const size_t lead = 4; /* "\r\033[K" */
    if (len > lead + cols - 1)
        len = lead + cols - 1; /* the line is ASCII: a byte a column */
    char out[2048];
    size_t olen = 0;
    if (p->below)
        cli_appendf(out, sizeof(out), &olen, "\033[%uA", p->below);
    cli_appendf(out, sizeof(out), &olen, "%.*s", (int)len, line);
    p->below = load_dash_lines(r, out, sizeof(out), &olen, cols);
    cli_appendf(out, sizeof(out), &olen, "\033[J");
    ssize_t w = write(STDERR_FILENO, out, olen);
    (void)w;
}

static void progress_clear(const struct progress *p)
{
    char out[32];
    size_t olen = 0;
    if (p->below)
        cli_appendf(out, sizeof(out), &olen, "\033[%uA", p->below);
    cli_appendf(out, sizeof(out), &olen, "\r\033[J");
    ssize_t w = write(STDERR_FILENO, out, olen);
    (void)w;
}

/* ---- Req/Sec --------------------------------------------------------------------------------- */

/* Each worker's requests of the last SAMPLE_MS, per second, into r->thread_rps (measured
 * period only; the wake-ups are not exact, so the window is the time since the last sample). */
static void sample(struct load_run *r)
{
    vega_tstamp now = vega_now(), last = r->sample_at;
    bool measuring = now >= r->measure_start && now <= r->end;
    double dt = last ? (double)(now - last) / 1e9 : 0.0;
    for (unsigned i = 0; i < r->nworkers; i++) {
        struct load_worker *w = &r->w[i];
        uint64_t n = atomic_load_explicit(&w->round_trips, memory_order_relaxed);
        if (measuring && last >= r->measure_start && dt > 0.0) {
            double v = (double)(n - w->sample_last) / dt;
            struct load_series *s = &r->thread_rps;
            s->n++;
            s->sum += v;
            s->sumsq += v * v;
            if (v > s->max)
                s->max = v;
        }
        w->sample_last = n;
    }
    r->sample_at = now;
}

/* ---- the run -------------------------------------------------------------------------------- */

static void totals(struct load_run *r, struct load_totals *t, vega_tstamp finish)
{
    for (unsigned i = 0; i < r->nworkers; i++) {
        struct load_worker *w = &r->w[i];
        t->round_trips += atomic_load(&w->round_trips);
        t->connects += atomic_load(&w->connects);
        for (int k = 0; k < LOAD_ERR_KINDS; k++) {
            t->errors[k] += atomic_load(&w->errors[k]);
            t->error_sum += atomic_load(&w->errors[k]);
        }
        cli_hist_merge(&t->hist, &w->hist);
        if (r->o->ws) {
            cli_hist_merge(&t->hist_unc, &w->hist_unc);
            t->ws_wire_out += atomic_load(&w->ws_wire_out);
            t->ws_wire_in += atomic_load(&w->ws_wire_in);
            t->ws_msg_out += atomic_load(&w->ws_msg_out);
            t->ws_msg_in += atomic_load(&w->ws_msg_in);
        }
        if (r->o->http) {
            t->bytes += atomic_load(&w->bytes);
            t->reconnects += atomic_load(&w->reconnects);
            for (int s = 0; s < LOAD_STATUS_MAX; s++)
                t->status[s] += atomic_load(&w->status[s]);
            cli_hist_merge(&t->hist_unc, &w->hist_unc);
            cli_hist_merge(&t->connect_hist, &w->connect_hist);
            cli_hist_merge(&t->tls_hist, &w->tls_hist);
            cli_hist_merge(&t->first_byte_hist, &w->first_byte_hist);
            t->quic_sent += atomic_load(&w->quic_sent);
            t->quic_recv += atomic_load(&w->quic_recv);
            t->quic_lost += atomic_load(&w->quic_lost);
            t->h3_retried += atomic_load(&w->h3_retried);
            t->h3_goaway += atomic_load(&w->h3_goaway);
            t->h2_head_in += atomic_load(&w->h2_head_in);
            t->h2_head_in_decoded += atomic_load(&w->h2_head_in_decoded);
            t->h2_head_out += atomic_load(&w->h2_head_out);
            t->h2_head_out_decoded += atomic_load(&w->h2_head_out_decoded);
            t->h2_data_in += atomic_load(&w->h2_data_in);
            t->h2_refused += atomic_load(&w->h2_refused);
            t->h2_reset += atomic_load(&w->h2_reset);
            t->h2_goaway += atomic_load(&w->h2_goaway);
        }
    }
    t->thread_rps = r->thread_rps;
    t->tls_info = r->tls_info[0] ? r->tls_info : NULL;
    if (r->ws_negotiated) {
        t->ws_proto = r->ws_proto;
        t->ws_ext = r->ws_ext;
        t->ws_deflate = &r->ws_deflate;
    }
    t->gave_up = atomic_load(&r->gave_up);
    t->never_connected = atomic_load(&r->never_connected);
    /* A -d run ends at its deadline; the last operations return just after it. */
    vega_tstamp stop = finish < r->end ? finish : r->end;
    t->elapsed_s = stop > r->measure_start ? (double)(stop - r->measure_start) / 1e9 : 0.0;
    vega_rt *rt = vega_rt_current();
    t->driver = vega_rt_driver_name(rt);
    t->workers = vega_rt_workers(rt);
    /* A run shorter than one sample: the average is all there is. */
    if (r->o->http && t->thread_rps.n == 0 && t->elapsed_s > 0.0) {
        double v = (double)t->round_trips / t->elapsed_s / (double)t->workers;
        t->thread_rps = (struct load_series){.n = 1, .sum = v, .sumsq = v * v, .max = v};
    }
}

static int exit_code(const struct load_opts *o, const struct load_totals *t)
{
    if (t->signo)
        return 128 + t->signo;
    if (t->never_connected == o->conns) {
        cli_err(NULL, "all %llu connection%s failed", (unsigned long long)o->conns,
                o->conns == 1 ? "" : "s");
        return CLI_EXIT_NET;
    }
    if (t->never_connected)
        cli_err(NULL, "%llu of %llu connections could not connect",
                (unsigned long long)t->never_connected, (unsigned long long)o->conns);
    if (t->round_trips == 0) {
        cli_err(NULL, "no %s completed", o->http ? "request" : "round trip");
        return CLI_EXIT_NET;
    }
    if (t->gave_up == o->conns) {
        cli_err(NULL, "every connection gave up after errors");
        return CLI_EXIT_NET;
    }
    if (o->round_trips && t->round_trips < o->round_trips) {
        cli_err(NULL, "only %llu of %llu %s completed", (unsigned long long)t->round_trips,
                (unsigned long long)o->round_trips, load_noun(o));
        return CLI_EXIT_NET;
    }
    return CLI_EXIT_OK;
}

/* --tls: the client configuration all connections share. Returns 0 or a negative code
 * (reported). */
static int tls_setup(struct load_run *r)
{
    const struct load_opts *o = r->o;
    int e = vega_tls_config_new(&r->tls, VEGA_TLS_CLIENT);
    const char *what = "TLS";
    if (e == 0 && o->insecure)
        e = vega_tls_config_set_verify(r->tls, VEGA_TLS_VERIFY_NONE);
    if (e == 0 && (o->http || o->ws)) {
        /* HTTP/2: h2 alone (RFC 9113 §3.2); a server that cannot is told apart by its
         * answer. */
        static const char *const h1[] = {"http/1.1"}, *const h2[] = {"h2"};
        e = vega_tls_config_set_alpn(r->tls, o->h2 ? h2 : h1, 1);
    }
    if (e == 0 && o->cacert) {
        what = o->cacert;
        e = vega_tls_config_set_ca_file(r->tls, o->cacert);
    }
    if (e < 0)
        cli_err(what, "%s",
                e == VEGA_ERR_TLS_CONFIG ? "no PEM certificate in it" : vega_tls_strerror(e));
    return e;
}

/* Starts the connections, waits for them, and fills t. Returns 0 or a negative code. */
static int drive(struct load_run *r, struct load_totals *t)
{
    const struct load_opts *o = r->o;
    vega_group *g;
    int e = vega_group_new(&g);
    if (e < 0)
        return e;
    /* WebSocket: where connections a signal cancelled do their close handshake (ws.c). */
    if (o->ws && vega_group_new(&r->closers) < 0)
        r->closers = NULL; /* then they just close */
    struct stopper st = {.set = &o->stop_signals, .g = g};
    vega_task *stopper;
    e = vega_task_spawn(&stopper, stopper_main, &st);
    if (e < 0) {
        vega_group_free(g);
        if (r->closers)
            vega_group_free(r->closers);
        r->closers = NULL;
        return e;
    }
    r->start = vega_now();
    r->measure_start = r->start + o->warmup_ns;
    r->end = o->duration_ns ? r->measure_start + o->duration_ns : VEGA_DEADLINE_NEVER;
    atomic_store(&r->tickets, (int_fast64_t)o->round_trips);
    load_ivl_start(r);
    for (uint64_t i = 0; i < o->conns; i++) {
        e = vega_group_spawn(g,
                             o->h3     ? load_h3_conn
                             : o->h2   ? load_h2_conn
                             : o->http ? load_http_conn
                             : o->ws   ? load_ws_conn
                                       : load_echo_conn,
                             r);
        if (e < 0) {
            cli_err_code("spawn", e);
            vega_group_cancel(g);
            break;
        }
    }
    struct progress p = {0};
    uint64_t every_ms = o->http ? HTTP_PROGRESS_MS : PROGRESS_MS;
    vega_tstamp shown = r->start;
    for (;;) {
        vega_deadline dl = o->http || r->ivl.on ? vega_deadline_in_ms(SAMPLE_MS)
                           : o->progress        ? vega_deadline_in_ms(PROGRESS_MS)
                                                : VEGA_DEADLINE_NEVER;
        int w = vega_group_wait(g, dl);
        if (w != -ETIMEDOUT)
            break;
        if (o->http)
            sample(r);
        load_ivl_tick(r, vega_now(), false);
        if (o->progress && vega_now() - shown >= every_ms * VEGA_NS_PER_MS - VEGA_NS_PER_MS) {
            shown = vega_now();
            progress_line(r, &p);
        }
    }
    vega_tstamp finish = vega_now();
    if (r->closers) {
        /* Each close handshake is bounded (1 s); this bound is only a backstop. */
        vega_group_wait(r->closers, vega_deadline_in_ms(CLOSERS_WAIT_MS));
        vega_group_free(r->closers);
        r->closers = NULL;
    }
    if (o->progress)
        progress_clear(&p);
    vega_task_cancel(stopper);
    vega_task_join(stopper, NULL, VEGA_DEADLINE_NEVER);
    vega_group_free(g);
    t->signo = atomic_load(&st.signo);
    if (t->signo) /* stopped early: the measured time ends now */
        r->end = finish;
    load_ivl_tick(r, finish < r->end ? finish : r->end, true);
    totals(r, t, finish);
    return e < 0 && t->round_trips == 0 ? e : 0;
}

/* --json-lines: the report as one more line, {"type":"summary", then the --json keys}. */
static void summary_line(const struct load_opts *o, const struct load_totals *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) {
        cli_err_code("report", -ENOMEM);
        return;
    }
    if (o->http)
        load_report_http_json(m, o, t);
    else
        load_report_json(m, o, t);
    if (fclose(m) == 0 && len > 1 && buf[0] == '{')
        printf("{\"type\":\"summary\",%s", buf + 1);
    else
        cli_err_code("report", -ENOMEM);
    free(buf);
}

int load_run_main(const struct load_opts *o)
{
    /* Connection tasks reach this through their argument until they return; drive() waits for
     * all of them, so it can live on this task's stack. */
    struct load_run r;
    memset(&r, 0, sizeof(r));
    atomic_flag_clear(&r.tls_seen);
    atomic_flag_clear(&r.ws_seen);
    r.o = o;
    struct load_totals t;
    memset(&t, 0, sizeof(t));
    int code = CLI_EXIT_NET;
    unsigned char *payload = NULL;
    if (resolve(&r) < 0)
        goto out;
    if (o->h3 ? load_h3_setup(&r) < 0 : o->tls && tls_setup(&r) < 0)
        goto out;
    if (o->ws && o->body) { /* --body FILE: the message (o->size is its length) */
        r.payload = o->body;
    } else if (!o->http) {
        payload = make_payload(o->size);
        r.payload = payload;
    }
    int e = r.payload || o->http ? workers_init(&r) : -ENOMEM;
    if (e == 0)
        e = cli_hist_init(&t.hist, LOAD_HIST_MAX_US, LOAD_HIST_DIGITS);
    if (e == 0 && (o->http || o->ws))
        e = cli_hist_init(&t.hist_unc, LOAD_HIST_MAX_US, LOAD_HIST_DIGITS);
    if (e == 0 && o->http) {
        e = cli_hist_init(&t.connect_hist, LOAD_HIST_MAX_US, LOAD_HIST_DIGITS);
        if (e == 0)
            e = cli_hist_init(&t.tls_hist, LOAD_HIST_MAX_US, LOAD_HIST_DIGITS);
        if (e == 0)
            e = cli_hist_init(&t.first_byte_hist, LOAD_HIST_MAX_US, LOAD_HIST_DIGITS);
    }
    if (e < 0) {
        cli_err_code("setup", e);
        goto out;
    }
    if (load_ivl_setup(&r) < 0)
        goto out;
    if (!o->json && !o->json_lines)
        load_report_header(o);
    e = drive(&r, &t);
    if (e < 0) {
        cli_err_code("run", e);
        goto out;
    }
    if (o->json_lines)
        summary_line(o, &t);
    else if (o->http && o->json)
        load_report_http_json(stdout, o, &t);
    else if (o->http)
        load_report_http_text(o, &t);
    else if (o->json)
        load_report_json(stdout, o, &t);
    else
        load_report_text(o, &t);
    code = exit_code(o, &t);
    if (o->html && load_html_write(&r, &t) < 0 && code == CLI_EXIT_OK)
        code = CLI_EXIT_NET;
    if (o->nfail_if && load_fail_if_check(o, &t) > 0 && code == CLI_EXIT_OK)
        code = LOAD_EXIT_THRESHOLD;
out:
    fflush(stdout);
    load_ivl_fini(&r);
    load_h3_teardown(&r);
    cli_hist_fini(&t.hist);
    cli_hist_fini(&t.hist_unc);
    cli_hist_fini(&t.connect_hist);
    cli_hist_fini(&t.tls_hist);
    cli_hist_fini(&t.first_byte_hist);
    workers_fini(&r);
    vega_tls_config_free(r.tls);
    free(payload);
    return code;
}
