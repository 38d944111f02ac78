/* SPDX-License-Identifier: MIT */
/* vega-serve --shards: the supervisor makes the listening sockets before the first fork, so
 * every shard (and every later generation) accepts on the same sockets, then supervises. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vega/io.h>
#include <vega/rt.h>
#include <vega/shard.h>

#include "serve.h"

#define MAX_FDS (SERVE_MAX_LISTEN * 4)

vega_shard *serve_shard;
char **serve_argv;
int serve_shard_fds[MAX_FDS];
size_t serve_shard_nfds;

struct made {
    char urls[MAX_FDS][VEGA_ADDR_STRLEN + 16];
    int code;
};

/* One listener per resolved address, kept as a plain descriptor; prints where. */
/* Keeps a served listener (fd) and the URL it is reached at (where: its bound address). */
static void keep_listener(struct made *m, const char *where, int fd)
{
    const char *scheme = serve_o.tls ? "https" : "http";
    if (strncmp(where, "0.0.0.0:", 8) == 0)
        snprintf(m->urls[serve_shard_nfds], sizeof m->urls[0], "%s://127.0.0.1:%s/", scheme,
                 where + 8);
    else
        snprintf(m->urls[serve_shard_nfds], sizeof m->urls[0], "%s://%s/", scheme, where);
    serve_shard_fds[serve_shard_nfds++] = fd;
}

static int listen_one(const vega_addr *a, struct made *m)
{
    char where[VEGA_ADDR_STRLEN];
    vega_addr_format(a, where, sizeof where);
    if (serve_shard_nfds == MAX_FDS) {
        cli_err(NULL, "cannot listen on %s: at most %d sockets", where, MAX_FDS);
        return CLI_EXIT_NET;
    }
    vega_sock *l;
    int r = vega_tcp_listen(&l, a, 0, VEGA_LISTEN_SHARED);
    vega_addr bound;
    if (r == 0 && (r = vega_sock_local_addr(l, &bound)) < 0)
        vega_sock_close(l);
    if (r < 0) {
        cli_err(NULL, "cannot listen on %s: %s", where, vega_strerror(r));
        return CLI_EXIT_NET;
    }
    int fd = fcntl(vega_sock_fd(l), F_DUPFD_CLOEXEC, 3);
    vega_sock_close(l);
    if (fd < 0) {
        cli_err(NULL, "cannot listen on %s: %s", where, strerror(errno));
        return CLI_EXIT_NET;
    }
    vega_addr_format(&bound, where, sizeof where);
    if (!serve_o.quiet)
        fprintf(stderr, "vega-serve: listening on %s\n", where);
    keep_listener(m, where, fd);
    return 0;
}

static void *make_listeners(void *arg)
{
    struct made *m = arg;
    m->code = CLI_EXIT_NET;
    /* the metrics address first: a refused one stops us before anything listens */
    if (serve_o.metrics && (m->code = serve_metrics_listen_shared()) != 0)
        return NULL;
    m->code = CLI_EXIT_NET;
    if (serve_o.nlisten == 0 || serve_o.bind_host || serve_o.port) {
        struct serve_listen *d = &serve_o.listen[serve_o.nlisten];
        if (serve_o.nlisten == SERVE_MAX_LISTEN)
            d = &serve_o.listen[SERVE_MAX_LISTEN - 1];
        else
            serve_o.nlisten++;
        memset(d, 0, sizeof *d);
        snprintf(d->host, sizeof d->host, "%s",
                 serve_o.bind_host ? serve_o.bind_host : "127.0.0.1");
        snprintf(d->port, sizeof d->port, "%s", serve_o.port ? serve_o.port : "8080");
    }
    for (size_t i = 0; i < serve_o.nlisten; i++) {
        struct serve_listen *l = &serve_o.listen[i];
        vega_addr addrs[4];
        int n = vega_addr_resolve(addrs, 4, l->host, l->port, AF_UNSPEC, VEGA_DEADLINE_NEVER);
        if (n < 0) {
            cli_err(l->host, "cannot resolve: %s", vega_strerror(n));
            return NULL;
        }
        for (int k = 0; k < n; k++)
            if (listen_one(&addrs[k], m) != 0)
                return NULL;
    }
    m->code = 0;
    return NULL;
}

/* How many of the sockets handed over by a binary upgrade are served ones (the rest are
 * --metrics'), from the old vega-serve. */
#define ENV_SERVED "VEGA_SERVE_SERVED_FDS"

/* Prints an inherited socket as listen_one does a new one. */
static int adopt_one(int fd, bool metrics, struct made *m)
{
    vega_addr a = {.len = sizeof a.ss};
    if (getsockname(fd, (struct sockaddr *)&a.ss, &a.len) < 0) {
        cli_err(NULL, "upgrade: inherited socket %d: %s", fd, strerror(errno));
        return CLI_EXIT_NET;
    }
    char where[VEGA_ADDR_STRLEN];
    vega_addr_format(&a, where, sizeof where);
    if (metrics) {
        if (serve_shard_metrics_nfds == SERVE_SHARD_METRICS_MAX_FDS)
            return CLI_EXIT_NET;
        serve_shard_metrics_fds[serve_shard_metrics_nfds++] = fd;
        if (!serve_o.quiet)
            fprintf(stderr, "vega-serve: metrics on http://%s/metrics\n", where);
        return 0;
    }
    if (serve_shard_nfds == MAX_FDS)
        return CLI_EXIT_NET;
    if (!serve_o.quiet)
        fprintf(stderr, "vega-serve: listening on %s (inherited)\n", where);
    keep_listener(m, where, fd);
    return 0;
}

/* A binary upgrade's new vega-serve: the sockets come from the old one, in its order (served
 * ones, then --metrics'). Returns 1 (adopted), 0 (not an upgrade) or minus an exit code. */
static int adopt(struct made *m)
{
    int fds[MAX_FDS + SERVE_SHARD_METRICS_MAX_FDS];
    int n = vega_shard_inherited_fds(fds, sizeof fds / sizeof fds[0]);
    const char *sv = getenv(ENV_SERVED);
    long served = sv ? strtol(sv, NULL, 10) : -1;
    unsetenv(ENV_SERVED);
    if (n == 0)
        return 0;
    if (n < 0 || served < 1 || served > n) {
        cli_err(NULL, "upgrade: the inherited sockets are not usable (%s)",
                n < 0 ? vega_strerror(n) : "their layout is unknown");
        return -CLI_EXIT_NET;
    }
    for (int i = 0; i < n; i++)
        if (adopt_one(fds[i], i >= served, m) != 0)
            return -CLI_EXIT_NET;
    return 1;
}

static int shard_main(vega_shard *s, void *arg)
{
    (void)arg;
    serve_shard = s;
    return serve_run();
}

static void on_event(const vega_shard_event *ev, void *arg)
{
    (void)arg;
    if (serve_o.quiet && ev->kind != VEGA_SHARD_EV_EXITED && ev->kind != VEGA_SHARD_EV_HUNG &&
        ev->kind != VEGA_SHARD_EV_RELOAD_FAILED && ev->kind != VEGA_SHARD_EV_KILLED)
        return;
    char line[256];
    vega_shard_event_format(ev, line, sizeof line);
    fprintf(stderr, "vega-serve: %s\n", line);
    fflush(stderr);
}

int serve_shards_run(void)
{
    /* A short-lived runtime resolves the names and opens the sockets; it is gone (with its
     * threads) before the first fork. */
    vega_rt_opts ro;
    vega_rt_opts_init(&ro);
    ro.flavor = VEGA_RT_CURRENT_THREAD;
    ro.driver = serve_o.driver;
    vega_rt *rt;
    int r = vega_rt_new(&rt, &ro);
    if (r < 0) {
        cli_err_code("runtime", r);
        return CLI_EXIT_NET;
    }
    static struct made m;
    int up = adopt(&m);
    if (up < 0) {
        vega_rt_free(rt);
        return -up;
    }
    m.code = 0;
    if (!up)
        r = vega_rt_block_on(rt, make_listeners, &m, NULL);
    vega_rt_free(rt);
    if (r < 0 || m.code != 0)
        return m.code ? m.code : CLI_EXIT_NET;
    if (serve_o.metrics && !serve_shard_metrics_nfds) {
        cli_err(NULL, "upgrade: --metrics, but the old vega-serve handed over no metrics socket");
        return CLI_EXIT_NET;
    }
    if (serve_o.metrics && (r = serve_shard_metrics_init(serve_o.shards)) < 0) {
        cli_err_code("metrics", r);
        return CLI_EXIT_NET;
    }
    if (!serve_o.quiet) {
        char line[4096];
        size_t len = (size_t)snprintf(line, sizeof line, "vega-serve: serving %s on", serve_o.root);
        for (size_t i = 0; i < serve_shard_nfds && len < sizeof line; i++)
            len += (size_t)snprintf(line + len, sizeof line - len, " %s", m.urls[i]);
        if (len < sizeof line)
            snprintf(line + len, sizeof line - len,
                     " (%u shards, supervisor pid %d; SIGHUP reloads, SIGUSR2 upgrades%s)\n",
                     serve_o.shards, (int)getpid(),
                     serve_o.tls ? "; HTTP/3 not with --shards yet" : "");
        fputs(line, stderr);
        fflush(stderr);
    }
    int mig = vega_shard_tcp_migrate_req();
    cli_log(2, "net.ipv4.tcp_migrate_req: %s (not needed: the shards share one socket per address)",
            mig == 1   ? "on"
            : mig == 0 ? "off"
                       : "unreadable");
    vega_shard_opts so;
    vega_shard_opts_init(&so);
    so.shards = serve_o.shards;
    /* served sockets, then --metrics', all handed to a binary upgrade */
    static int all[MAX_FDS + SERVE_SHARD_METRICS_MAX_FDS];
    memcpy(all, serve_shard_fds, serve_shard_nfds * sizeof all[0]);
    memcpy(all + serve_shard_nfds, serve_shard_metrics_fds,
           serve_shard_metrics_nfds * sizeof all[0]);
    so.listen_fds = all;
    so.n_listen_fds = serve_shard_nfds + serve_shard_metrics_nfds;
    so.exec_argv = serve_argv;
    char served[16];
    snprintf(served, sizeof served, "%zu", serve_shard_nfds);
    setenv(ENV_SERVED, served, 1); /* read by the upgrade's vega-serve */
    so.shard_main = shard_main;
    so.on_event = on_event;
    so.heartbeat_timeout_ms = serve_o.shard_watchdog_ms;
    so.grace_ms = 7000; /* a shard's own grace for requests in progress is 5 s */
    r = vega_shard_run(&so);
    for (size_t i = 0; i < serve_shard_nfds; i++)
        close(serve_shard_fds[i]);
    for (size_t i = 0; i < serve_shard_metrics_nfds; i++)
        close(serve_shard_metrics_fds[i]);
    if (r < 0) {
        cli_err_code("shards", r);
        return CLI_EXIT_NET;
    }
    if (r == 0)
        cli_log(1, "stopped");
    return r == 0 ? CLI_EXIT_OK : CLI_EXIT_NET;
}
