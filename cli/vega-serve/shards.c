/* SPDX-License-Identifier: MIT */
/* vega-serve --shards: the supervisor makes the listening sockets before the first fork, so
 * every shard (and every later generation) accepts on the same sockets, then supervises. */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vega/crypto.h>
#include <vega/io.h>
#include <vega/rt.h>
#include <vega/shard.h>

#include "serve.h"

#define MAX_FDS (SERVE_MAX_LISTEN * 4)

char **serve_argv;
int serve_shard_fds[MAX_FDS];
size_t serve_shard_nfds;
int serve_shard_udp_fds[SERVE_SHARD_UDP_SETS * SERVE_SHARD_UDP_MAX];
size_t serve_shard_nudp;
uint8_t serve_shard_h3_keys[64];

/* ---- HTTP/3: one UDP socket per shard and generation, steered by connection ID ------------- */

/*
 * The supervisor makes, before the first fork, SERVE_SHARD_UDP_SETS sets of one UDP socket per
 * shard, all in one SO_REUSEPORT group (kernel index = creation order, stable while the
 * supervisor holds them all). Shard i of generation g serves socket (g % 3) * n + i, and its
 * QUIC connection IDs start with that index. Three sets because at most three consecutive
 * generations live at once (the supervisor's 3 process slots per shard: serving, starting,
 * draining; a reload also waits until the generation three back is gone, so g and g+3 never
 * share a set: the older one, draining, would read and refuse new Initials). A
 * classic BPF program (SO_ATTACH_REUSEPORT_CBPF; it sees the UDP payload at offset 0) picks
 * the socket per datagram:
 *   - a short header: DCID byte 1 (ours: names its socket);
 *   - a long Handshake packet (v1 type 2, v2 type 3): DCID byte 6 (the server's ID by then);
 *   - other long headers (Initial, 0-RTT: the DCID may be the client's random one): byte 6
 *     when it names a socket of the serving generation, else the DCID's first 4 bytes mod n
 *     into the serving generation's set;
 *   - anything the program cannot read returns 0 (garbage: socket 0).
 * An index the program returns at or above the group's size makes the kernel fall back to
 * its 4-tuple hash over the whole group (net/core/sock_reuseport.c, run_bpf_filter then
 * reuseport_select_sock_by_hash), which could pick a socket nobody reads: so the program
 * never returns one. On a reload, once the new generation is ready, the program is replaced
 * (serving set = the new one): new connections go there, old ones keep their IDs' sockets.
 */
static unsigned udp_n; /* shards */

static int udp_steer(unsigned gen)
{
    unsigned n = udp_n, total = SERVE_SHARD_UDP_SETS * n, base = (gen % SERVE_SHARD_UDP_SETS) * n;
    struct sock_filter code[] = {
        /* 0 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
        /* 1 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x80, 0, 13), /* long: 2, short: 15 */
        /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 1),             /* the version */
        /* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x6b3343cf, 0, 3),
        /* 4 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0), /* QUIC v2: Handshake is type 3 */
        /* 5 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x30),
        /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x30, 3, 5),
        /* 7 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0), /* v1 (and others): type 2 */
        /* 8 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x20 | 0x10),
        /* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x20, 0, 2),
        /* 10: Handshake */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 6),
        /* 11 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, total, 5, 9),
        /* 12: Initial, 0-RTT */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 6),
        /* 13 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, base, 0, 3),
        /* 14 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, base + n, 2, 6),
        /* 15: short */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 1),
        /* 16 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, total, 0, 4),
        /* 17: hash */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 6),
        /* 18 */ BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, n),
        /* 19 */ BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, base),
        /* 20 */ BPF_STMT(BPF_RET | BPF_A, 0),
        /* 21 */ BPF_STMT(BPF_RET | BPF_A, 0),
    };
    struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
    if (setsockopt(serve_shard_udp_fds[0], SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog,
                   sizeof prog) < 0)
        return -errno;
    return 0;
}

/* The shared keys go to a binary upgrade's vega-serve in a memfd (not close-on-exec, named in
 * the environment; never in the environment itself, which /proc shows), so that tickets and
 * Retry tokens of the old shards stay good with the new ones. */
#define ENV_H3_KEYS "VEGA_SERVE_H3_KEYS_FD"

static int keys_hand_on(void)
{
    int fd = memfd_create("vega-serve-h3-keys", 0);
    if (fd < 0)
        return -errno;
    char name[16];
    snprintf(name, sizeof name, "%d", fd);
    if (pwrite(fd, serve_shard_h3_keys, sizeof serve_shard_h3_keys, 0) !=
            (ssize_t)sizeof serve_shard_h3_keys ||
        setenv(ENV_H3_KEYS, name, 1) < 0) {
        int e = errno ? errno : EIO;
        close(fd);
        return -e;
    }
    return 0;
}

/* A binary upgrade's new vega-serve: the old one's keys (the memfd stays open and named, for
 * the next upgrade). Returns 0 or -1. */
static int keys_adopt(void)
{
    const char *v = getenv(ENV_H3_KEYS);
    char *end;
    long fd = v ? strtol(v, &end, 10) : -1;
    if (!v || *end || end == v || fd < 3 || fd > INT32_MAX ||
        pread((int)fd, serve_shard_h3_keys, sizeof serve_shard_h3_keys, 0) !=
            (ssize_t)sizeof serve_shard_h3_keys)
        return -1;
    return 0;
}

/* Supervisor, before the first fork: the UDP group on a (the first served address, or
 * --http3-port's). Returns 0 or an exit code (after saying why). */
static int udp_open_group(const vega_addr *a, unsigned n)
{
    char where[VEGA_ADDR_STRLEN];
    vega_addr_format(a, where, sizeof where);
    if (n > SERVE_SHARD_UDP_MAX) {
        cli_err(NULL,
                "HTTP/3 with --shards %u: at most %d shards (their connection IDs name "
                "one of 3 UDP sockets per shard in one byte); --no-http3 serves HTTPS alone",
                n, SERVE_SHARD_UDP_MAX);
        return CLI_EXIT_USAGE;
    }
    udp_n = n;
    for (unsigned i = 0; i < SERVE_SHARD_UDP_SETS * n; i++) {
        int fd = socket(a->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;
        /* as one process's vega_http_server_listen_h3 (flags 0): the system's v6only default */
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0 ||
            bind(fd, (const struct sockaddr *)&a->ss, a->len) < 0) {
            cli_err(NULL, "cannot serve HTTP/3 on udp %s: %s (--no-http3 serves HTTPS alone)",
                    where, strerror(errno));
            if (fd >= 0)
                close(fd);
            return CLI_EXIT_NET;
        }
        serve_shard_udp_fds[serve_shard_nudp++] = fd;
    }
    int r = udp_steer(1);
    if (r < 0) {
        cli_err(NULL, "HTTP/3 with --shards: cannot attach the reuseport steering program: %s",
                strerror(-r));
        return CLI_EXIT_NET;
    }
    if (vega_crypto_random(serve_shard_h3_keys, sizeof serve_shard_h3_keys) < 0) {
        cli_err(NULL, "HTTP/3 with --shards: no randomness for the shared keys");
        return CLI_EXIT_NET;
    }
    if ((r = keys_hand_on()) < 0) {
        cli_err(NULL, "HTTP/3 with --shards: cannot keep the shared keys: %s", strerror(-r));
        return CLI_EXIT_NET;
    }
    if (!serve_o.quiet)
        fprintf(stderr, "vega-serve: HTTP/3 on udp %s (%u sockets, steered by connection ID)\n",
                where, SERVE_SHARD_UDP_SETS * n);
    return 0;
}

/* A binary upgrade's new vega-serve with HTTP/3: the old one's group (its sockets were handed
 * over in creation order, so the kernel's indices and the steering program are unchanged).
 * The program goes on steering to the old generation until the old supervisor hears that we
 * are ready (on_event, VEGA_SHARD_EV_UPGRADED). Returns 0 or an exit code. */
static int udp_adopt_group(unsigned n)
{
    if (serve_shard_nudp != SERVE_SHARD_UDP_SETS * (size_t)n || n > SERVE_SHARD_UDP_MAX) {
        cli_err(NULL,
                "upgrade: the old vega-serve handed over %zu UDP sockets, %u shards need %u "
                "(the shard count must stay the same across an upgrade with HTTP/3)",
                serve_shard_nudp, n, SERVE_SHARD_UDP_SETS * n);
        return CLI_EXIT_NET;
    }
    if (keys_adopt() < 0) {
        cli_err(NULL, "upgrade: the old vega-serve handed over no HTTP/3 keys");
        return CLI_EXIT_NET;
    }
    udp_n = n;
    vega_addr a = {.len = sizeof a.ss};
    if (getsockname(serve_shard_udp_fds[0], (struct sockaddr *)&a.ss, &a.len) < 0) {
        cli_err(NULL, "upgrade: inherited UDP socket: %s", strerror(errno));
        return CLI_EXIT_NET;
    }
    char where[VEGA_ADDR_STRLEN];
    vega_addr_format(&a, where, sizeof where);
    if (!serve_o.quiet)
        fprintf(stderr, "vega-serve: HTTP/3 on udp %s (%zu sockets, inherited)\n", where,
                serve_shard_nudp);
    return 0;
}

int serve_shard_udp_slot(void)
{
    if (!serve_shard || !serve_shard_nudp || !udp_n)
        return -1;
    unsigned gen = vega_shard_generation(serve_shard), i = vega_shard_index(serve_shard);
    return (int)((gen % SERVE_SHARD_UDP_SETS) * udp_n + i);
}

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
 * --metrics', then HTTP/3's UDP group), from the old vega-serve. */
#define ENV_SERVED "VEGA_SERVE_SERVED_FDS"

/* Prints an inherited socket as listen_one does a new one. */
static int adopt_one(int fd, bool metrics, struct made *m)
{
    int type = 0;
    socklen_t tlen = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) == 0 && type == SOCK_DGRAM) {
        if (serve_shard_nudp == SERVE_SHARD_UDP_SETS * SERVE_SHARD_UDP_MAX)
            return CLI_EXIT_NET;
        serve_shard_udp_fds[serve_shard_nudp++] = fd; /* said by udp_adopt_group */
        return 0;
    }
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
 * ones, then --metrics', then the UDP group). Returns 1 (adopted), 0 (not an upgrade) or minus
 * an exit code. */
static int adopt(struct made *m)
{
    int fds[MAX_FDS + SERVE_SHARD_METRICS_MAX_FDS + SERVE_SHARD_UDP_SETS * SERVE_SHARD_UDP_MAX];
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
    /* new HTTP/3 connections: to the new generation once it is ready (after an upgrade, the
     * new supervisor's first one, numbered on from ours) */
    unsigned to = ev->kind == VEGA_SHARD_EV_RELOADED   ? ev->generation
                  : ev->kind == VEGA_SHARD_EV_UPGRADED ? ev->generation + 1
                                                       : 0;
    if (to && serve_shard_nudp) {
        int r = udp_steer(to);
        if (r < 0)
            cli_err(NULL, "HTTP/3: cannot steer new connections to generation %u: %s", to,
                    strerror(-r));
    }
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
    if (serve_o.http3 && serve_shard_nfds) {
        vega_addr a = {.len = sizeof a.ss};
        if (getsockname(serve_shard_fds[0], (struct sockaddr *)&a.ss, &a.len) < 0) {
            cli_err(NULL, "HTTP/3: %s", strerror(errno));
            return CLI_EXIT_NET;
        }
        if (serve_o.http3_port)
            vega_addr_set_port(&a, (uint16_t)atoi(serve_o.http3_port));
        int rc = up ? udp_adopt_group(serve_o.shards) : udp_open_group(&a, serve_o.shards);
        if (rc != 0)
            return rc;
    } else if (serve_shard_nudp) {
        cli_err(NULL, "upgrade: the old vega-serve served HTTP/3, this one would not");
        return CLI_EXIT_NET;
    }
    if (serve_o.metrics && !serve_shard_metrics_nfds) {
        cli_err(NULL, "upgrade: --metrics, but the old vega-serve handed over no metrics socket");
        return CLI_EXIT_NET;
    }
    if (serve_o.metrics && (r = serve_shard_metrics_init(serve_o.shards)) < 0) {
        cli_err_code("metrics", r);
        return CLI_EXIT_NET;
    }
    unsigned every = serve_o.metrics_every_ms ? serve_o.metrics_every_ms : SERVE_METRICS_EVERY_MS;
    if (serve_o.metrics_log && (r = serve_shard_log_init(serve_o.shards, every)) != 0)
        return r;
    if (!serve_o.quiet) {
        char line[4096];
        size_t len = (size_t)snprintf(line, sizeof line, "vega-serve: serving %s on", serve_o.root);
        for (size_t i = 0; i < serve_shard_nfds && len < sizeof line; i++)
            len += (size_t)snprintf(line + len, sizeof line - len, " %s", m.urls[i]);
        if (len < sizeof line)
            snprintf(line + len, sizeof line - len,
                     " (%u shards, supervisor pid %d; SIGHUP reloads, SIGUSR2 upgrades)\n",
                     serve_o.shards, (int)getpid());
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
    static int
        all[MAX_FDS + SERVE_SHARD_METRICS_MAX_FDS + SERVE_SHARD_UDP_SETS * SERVE_SHARD_UDP_MAX];
    memcpy(all, serve_shard_fds, serve_shard_nfds * sizeof all[0]);
    memcpy(all + serve_shard_nfds, serve_shard_metrics_fds,
           serve_shard_metrics_nfds * sizeof all[0]);
    /* the UDP group last, in creation order: the new vega-serve must use the same sockets (a
     * new group on the port would join this one and shift the indices the program steers by) */
    memcpy(all + serve_shard_nfds + serve_shard_metrics_nfds, serve_shard_udp_fds,
           serve_shard_nudp * sizeof all[0]);
    so.listen_fds = all;
    so.n_listen_fds = serve_shard_nfds + serve_shard_metrics_nfds + serve_shard_nudp;
    so.exec_argv = serve_argv;
    char served[16];
    snprintf(served, sizeof served, "%zu", serve_shard_nfds);
    setenv(ENV_SERVED, served, 1); /* read by the upgrade's vega-serve */
    so.shard_main = shard_main;
    so.on_event = on_event;
    so.heartbeat_timeout_ms = serve_o.shard_watchdog_ms;
    so.grace_ms = 7000;        /* a shard's own grace for requests in progress is 5 s */
    if (serve_o.metrics_log) { /* the supervisor writes the lines: it looks every 100 ms */
        so.on_tick = serve_shard_log_tick;
        so.tick_ms = every < 100 ? every : 100;
    }
    r = vega_shard_run(&so);
    if (serve_o.metrics_log)
        serve_shard_log_finish();
    for (size_t i = 0; i < serve_shard_nfds; i++)
        close(serve_shard_fds[i]);
    for (size_t i = 0; i < serve_shard_metrics_nfds; i++)
        close(serve_shard_metrics_fds[i]);
    for (size_t i = 0; i < serve_shard_nudp; i++)
        close(serve_shard_udp_fds[i]);
    if (r < 0) {
        cli_err_code("shards", r);
        return CLI_EXIT_NET;
    }
    if (r == 0)
        cli_log(1, "stopped");
    return r == 0 ? CLI_EXIT_OK : CLI_EXIT_NET;
}
