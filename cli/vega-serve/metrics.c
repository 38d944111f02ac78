/* SPDX-License-Identifier: MIT */
/* --metrics: the runtime's and the server's counters in the Prometheus text exposition format
 * 0.0.4, on the tools' scrape listener (cli/common/prom.c; loopback only unless
 * --metrics-public); with --shards, summed over the shards. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

/* --shards: how often a shard copies its counters to its shared slot for the other shards'
 * sums (a scrape that reaches this shard uses its own fresh counters). */
#define SERVE_METRICS_PUBLISH_MS 100

static int render_files(void *user, FILE *f)
{
    int r = vega_http_server_metrics_prometheus(user, f);
    if (r == 0 && serve_o.log_fd >= 0 &&
        fprintf(f,
                "# HELP vega_serve_access_log_dropped_total Access log lines dropped because "
                "the log file was written slower than requests arrived (its buffer was full).\n"
                "# TYPE vega_serve_access_log_dropped_total counter\n"
                "vega_serve_access_log_dropped_total %" PRIu64 "\n",
                serve_log_dropped()) < 0)
        r = -EIO;
    return r;
}

/* The runtime's and srv's metrics, as one text. Returns 0 or -errno. */
static int render(const vega_http_server *srv, char **buf, size_t *len)
{
    return cli_prom_render_with(render_files, (void *)srv, buf, len);
}

/* --shards: this shard's metrics published, then summed with every other shard's. */
static int render_sum(const vega_http_server *srv, char **buf, size_t *len)
{
    char *own;
    size_t olen;
    int r = render(srv, &own, &olen);
    if (r != 0)
        return r;
    serve_shard_metrics_publish(own, olen);
    FILE *f = open_memstream(buf, len);
    if (!f) {
        r = -errno;
    } else {
        r = serve_shard_metrics_sum(own, olen, f);
        if (fclose(f) != 0 && r == 0)
            r = -EIO;
        if (r != 0) {
            free(*buf);
            *buf = NULL;
        }
    }
    free(own);
    return r;
}

/* What a scrape shows: this process's counters, or with --shards the sum over the shards. */
static int render_scrape(void *user, char **buf, size_t *len)
{
    const vega_http_server *srv = user;
    return serve_shard_metrics_on() ? render_sum(srv, buf, len) : render(srv, buf, len);
}

/* --shards: copies this shard's counters to its slot every SERVE_METRICS_PUBLISH_MS. */
static void *publish_task(void *arg)
{
    const struct serve_metrics *m = arg;
    while (vega_sleep_ms(SERVE_METRICS_PUBLISH_MS) == 0) {
        char *buf;
        size_t len;
        if (render(m->files, &buf, &len) == 0) {
            serve_shard_metrics_publish(buf, len);
            free(buf);
        }
    }
    return NULL;
}

/* The counters of one worker (or their sum) as JSON members (also the shards' log lines). */
void serve_json_worker(FILE *f, const vega_worker_metrics *w)
{
    fprintf(f,
            "\"spawned\":%" PRIu64 ",\"polls\":%" PRIu64 ",\"steals\":%" PRIu64
            ",\"steal_ops\":%" PRIu64 ",\"parks\":%" PRIu64 ",\"unparks\":%" PRIu64
            ",\"injects\":%" PRIu64 ",\"budget_yields\":%" PRIu64 ",\"lifo_hits\":%" PRIu64
            ",\"overflows\":%" PRIu64 ",\"timers_fired\":%" PRIu64 ",\"io_ops\":%" PRIu64
            ",\"io_completions\":%" PRIu64 ",\"local_queue\":%" PRIu64,
            w->spawned, w->polls, w->steals, w->steal_ops, w->parks, w->unparks, w->injects,
            w->budget_yields, w->lifo_hits, w->overflows, w->timers_fired, w->io_ops,
            w->io_completions, w->local_queue);
}

/* The sum and the first workers' own counters ("per_worker") of d, as JSON members. */
void serve_json_counters(FILE *f, const vega_rt_counters *d)
{
    serve_json_worker(f, &d->sum);
    fputs(",\"per_worker\":[", f);
    unsigned n = d->workers < VEGA_RT_COUNTERS_WORKERS ? d->workers : VEGA_RT_COUNTERS_WORKERS;
    for (unsigned i = 0; i < n; i++) {
        fputs(i ? ",{" : "{", f);
        serve_json_worker(f, &d->worker[i]);
        fputc('}', f);
    }
    fputc(']', f);
}

/* --metrics-log: one line per interval, what the runtime did in it (the sampler's task). A
 * short buffered write to a regular file, once an interval: not worth the blocking pool. */
static void log_sample(void *user, const vega_rt_counters *d)
{
    struct serve_metrics *m = user;
    FILE *f = m->log;
    vega_http_server_stats st;
    vega_http_server_get_stats(m->srv, &st);
    uint64_t requests = st.requests - m->log_requests;
    m->log_requests = st.requests;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(f,
            "{\"time\":\"%s.%03ldZ\",\"interval_ms\":%" PRIu64 ".%03" PRIu64
            ",\"workers\":%u,\"live_tasks\":%" PRIu64 ",\"blocking_jobs\":%" PRIu64
            ",\"requests\":%" PRIu64 ",",
            when, ts.tv_nsec / 1000000, d->at_ns / 1000000, d->at_ns / 1000 % 1000, d->workers,
            d->live_tasks, d->blocking_jobs, requests);
    serve_json_counters(f, d);
    fputs("}\n", f);
    fflush(f);
}

static int metrics_log_start(struct serve_metrics *m)
{
    int fd = open(serve_o.metrics_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        cli_err(NULL, "--metrics-log: %s: %s", serve_o.metrics_log, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    m->log = fdopen(fd, "a");
    if (!m->log) {
        close(fd);
        cli_err_code("--metrics-log", -ENOMEM);
        return CLI_EXIT_USAGE;
    }
    unsigned every = serve_o.metrics_every_ms ? serve_o.metrics_every_ms : SERVE_METRICS_EVERY_MS;
    int r = vega_rt_metrics_sampler_spawn(&m->sampler, every, log_sample, m);
    if (r < 0) {
        m->sampler = NULL;
        cli_err_code("spawn", r);
        return CLI_EXIT_NET;
    }
    return 0;
}

/* Resolves --metrics and refuses an address that is not loopback without --metrics-public.
 * Returns the addresses (>= 1) or minus an exit code. */
static int metrics_addrs(vega_addr *addrs, size_t cap)
{
    return cli_prom_resolve(serve_o.metrics, serve_o.metrics_host, serve_o.metrics_port,
                            serve_o.metrics_public, addrs, cap);
}

int serve_metrics_listen_shared(void)
{
    vega_addr addrs[SERVE_SHARD_METRICS_MAX_FDS];
    int n = metrics_addrs(addrs, SERVE_SHARD_METRICS_MAX_FDS);
    if (n < 0)
        return -n;
    for (int k = 0; k < n; k++) {
        char where[VEGA_ADDR_STRLEN];
        vega_addr_format(&addrs[k], where, sizeof where);
        vega_sock *l;
        vega_addr bound;
        int r = vega_tcp_listen(&l, &addrs[k], 0, VEGA_LISTEN_SHARED);
        if (r == 0 && (r = vega_sock_local_addr(l, &bound)) < 0)
            vega_sock_close(l);
        int fd = -1;
        if (r == 0) {
            fd = fcntl(vega_sock_fd(l), F_DUPFD_CLOEXEC, 3);
            r = fd < 0 ? -errno : 0;
            vega_sock_close(l);
        }
        if (r < 0) {
            cli_err(NULL, "--metrics: cannot listen on %s: %s", where, vega_strerror(r));
            return CLI_EXIT_NET;
        }
        serve_shard_metrics_fds[serve_shard_metrics_nfds++] = fd;
        vega_addr_format(&bound, where, sizeof where);
        if (!serve_o.quiet)
            fprintf(stderr, "vega-serve: metrics on http://%s/metrics\n", where);
    }
    return 0;
}

/* --metrics-log with --shards: copies this shard's counters to its slot every
 * SERVE_METRICS_PUBLISH_MS (the supervisor makes the lines). */
static void *log_publish_task(void *arg)
{
    const struct serve_metrics *m = arg;
    vega_rt *rt = vega_rt_current();
    do {
        vega_http_server_stats st;
        vega_http_server_get_stats(m->srv, &st);
        serve_shard_log_publish(rt, st.requests, false);
    } while (vega_sleep_ms(SERVE_METRICS_PUBLISH_MS) == 0);
    return NULL;
}

int serve_metrics_start(vega_http_server *srv, struct serve_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->srv = srv;
    if (serve_o.metrics_log && serve_shard_log_on()) {
        serve_shard_log_attach();
        int r = vega_task_spawn(&m->log_publisher, log_publish_task, m);
        if (r < 0) {
            m->log_publisher = NULL;
            cli_err_code("spawn", r);
            return CLI_EXIT_NET;
        }
    } else if (serve_o.metrics_log) {
        int r = metrics_log_start(m);
        if (r != 0) {
            serve_metrics_stop(m);
            return r;
        }
    }
    if (!serve_o.metrics)
        return 0;
    m->files = srv;
    bool shard = serve_shard_metrics_on();
    vega_addr addrs[4];
    int n = shard ? 0 : metrics_addrs(addrs, 4);
    if (n < 0)
        return -n;
    if (shard)
        serve_shard_metrics_attach();
    m->prom.render = render_scrape;
    m->prom.user = srv;
    int r = cli_prom_start(&m->prom, "vega-serve", addrs, n, serve_shard_metrics_fds,
                           shard ? serve_shard_metrics_nfds : 0, serve_o.quiet);
    if (r == 0 && shard && (r = vega_task_spawn(&m->publisher, publish_task, m)) < 0) {
        m->publisher = NULL;
        cli_err_code("spawn", r);
        r = CLI_EXIT_NET;
    }
    if (r != 0)
        serve_metrics_stop(m);
    return r;
}

void serve_metrics_stop(struct serve_metrics *m)
{
    if (m->log_publisher) { /* the final copy: every exchange has ended */
        vega_task_cancel(m->log_publisher);
        vega_task_join(m->log_publisher, NULL, VEGA_DEADLINE_NEVER);
        m->log_publisher = NULL;
        vega_http_server_stats st;
        vega_http_server_get_stats(m->srv, &st);
        serve_shard_log_publish(vega_rt_current(), st.requests, true);
    }
    if (m->sampler) {
        vega_task_cancel(m->sampler);
        vega_task_join(m->sampler, NULL, VEGA_DEADLINE_NEVER);
        m->sampler = NULL;
    }
    if (m->log) {
        fclose(m->log);
        m->log = NULL;
    }
    if (m->publisher) {
        vega_task_cancel(m->publisher);
        vega_task_join(m->publisher, NULL, VEGA_DEADLINE_NEVER);
        m->publisher = NULL;
        char *buf;
        size_t len;
        if (render(m->files, &buf, &len) == 0) {
            serve_shard_metrics_detach(buf, len);
            free(buf);
        }
    }
    cli_prom_stop(&m->prom);
}
