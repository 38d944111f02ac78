/* SPDX-License-Identifier: MIT */
/* vega-load: command line, limits, runtime setup. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "load.h"

static const char usage_text[] =
    "Usage: vega-load echo [options] HOST:PORT     load an echo server (also HOST PORT)\n"
    "       vega-load echo [options] -U PATH       ... over a Unix socket\n"
    "\n"
    "Each connection sends a message, waits until all of it came back, checks it, and repeats\n"
    "(a closed loop). The result: round trips per second, bytes per second, latency\n"
    "percentiles (HdrHistogram, 1 us to 60 s, 3 significant digits) and errors.\n"
    "HTTP modes (vega-load http://...) are not implemented yet.\n"
    "\n"
    "Load:\n"
    "  -c, --connections N     connections to keep busy (default 10; k suffix: 1k = 1000)\n"
    "  -d, --duration TIME     how long to measure (default 10s unless -n is given; also -z)\n"
    "  -n, --round-trips N     stop after exactly N measured round trips (also --requests);\n"
    "                          with -d too, whichever comes first\n"
    "  -s, --size SIZE         bytes per message (default 64; K, M suffixes; at most 16M, and\n"
    "                          65507 with -u)\n"
    "      --warm-up TIME      run this long first without counting (also --warm-up-time)\n"
    "      --timeout TIME      per connect and per round trip (default 2s); a round trip that\n"
    "                          takes longer counts as a timeout error and its connection\n"
    "                          reconnects\n"
    "\n"
    "Transport:\n"
    "  -u, --udp               UDP: one datagram per round trip, no reconnects\n"
    "  -U, --unix-socket PATH  a Unix stream socket (@NAME = abstract namespace)\n"
    "  -4 / -6                 resolve HOST to IPv4 / IPv6 only\n"
    "      --tls               TLS over the stream (each connection's handshake counts as its\n"
    "                          connect; reconnects resume the session); also --ssl\n"
    "  -k, --insecure          with --tls: do not verify the server's certificate\n"
    "      --cacert FILE       with --tls: CAs to verify the server with (default: the system's)\n"
    "      --sni NAME          with --tls: the name to send and verify (default: HOST)\n"
    "\n"
    "Runtime:\n"
    "  -t, --threads N         worker threads the connections are spread over (default 1, as\n"
    "                          h2load; also --workers)\n"
    "      --driver NAME       I/O driver: uring or epoll (default: $VEGA_DRIVER, else uring\n"
    "                          where the kernel allows it)\n"
    "\n"
    "Output:\n"
    "      --json              one JSON object on stdout instead of the summary (keys: rps,\n"
    "                          latency_us{p50,p90,p99,p999,max,min,mean,stdev}, errors, ...)\n"
    "      --no-progress       no live line on stderr (shown only when stderr is a terminal)\n"
    "  -v, --verbose           report every error, not only the first of each kind\n"
    "  -h, --help              this help\n"
    "      --version           the version\n"
    "\n"
    "Durations take ns, us, ms, s, m, h (a bare number is seconds). The run stops at the end\n"
    "of -d: round trips still in flight then are dropped, not counted as errors. A connection\n"
    "that cannot connect at the start gives up; one that fails later reconnects (backing off\n"
    "after failed connects); without -d it gives up after 20 failures in a row. Errors are\n"
    "counted over the whole run, warm-up included. SIGINT or SIGTERM stops the run early and\n"
    "prints what was measured so far.\n"
    "\n"
    "Exit codes: 0 success; 1 no round trip completed, every connection failed, or fewer than\n"
    "-n round trips completed; 2 usage error; 128+N stopped by signal N (after the report).\n"
    "\n"
    "Examples:\n"
    "  vega-echo -l 7000 &   then:\n"
    "  vega-load echo -c 64 -d 5s 127.0.0.1:7000\n"
    "  vega-load echo -c 100 -t 2 -s 1K --warm-up 1s -d 10s --json 127.0.0.1:7000\n"
    "  vega-load echo -c 4 -n 100k --driver epoll localhost:7000\n"
    "  vega-load echo -u -c 8 -d 5s 127.0.0.1:7000\n"
    "  vega-load echo -U /tmp/echo.sock -c 16 -d 3s\n"
    "  vega-echo -l --tls 7443 &   then:  vega-load echo --tls -k -n 1000 127.0.0.1:7443\n";

enum {
    OPT_VERSION = 256,
    OPT_WORKERS,
    OPT_DRIVER,
    OPT_WARMUP,
    OPT_TIMEOUT,
    OPT_JSON,
    OPT_NO_PROGRESS,
    OPT_TLS,
    OPT_CACERT,
    OPT_SNI,
};

static const struct option long_opts[] = {
    {"connections", required_argument, NULL, 'c'},
    {"duration", required_argument, NULL, 'd'},
    {"round-trips", required_argument, NULL, 'n'},
    {"requests", required_argument, NULL, 'n'},
    {"size", required_argument, NULL, 's'},
    {"threads", required_argument, NULL, 't'},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"warm-up", required_argument, NULL, OPT_WARMUP},
    {"warm-up-time", required_argument, NULL, OPT_WARMUP},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"udp", no_argument, NULL, 'u'},
    {"unix-socket", required_argument, NULL, 'U'},
    {"unixsock", required_argument, NULL, 'U'},
    {"driver", required_argument, NULL, OPT_DRIVER},
    {"json", no_argument, NULL, OPT_JSON},
    {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
    {"no-tui", no_argument, NULL, OPT_NO_PROGRESS},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"tls", no_argument, NULL, OPT_TLS},
    {"ssl", no_argument, NULL, OPT_TLS},
    {"insecure", no_argument, NULL, 'k'},
    {"cacert", required_argument, NULL, OPT_CACERT},
    {"sni", required_argument, NULL, OPT_SNI},
    {NULL, 0, NULL, 0},
};

static uint64_t duration_arg(const char *opt, const char *v, bool zero_ok)
{
    uint64_t ns;
    if (cli_parse_duration(v, VEGA_NS_PER_S, &ns) < 0 || (!zero_ok && ns == 0))
        cli_usage_error("%s: invalid duration '%s' (try 5s, 1.5s, 500ms, 2m)", opt, v);
    if (ns > 365 * 24 * 3600 * VEGA_NS_PER_S)
        cli_usage_error("%s: '%s' is longer than a year", opt, v);
    return ns;
}

static unsigned workers_arg(const char *opt, const char *v)
{
    uint64_t n;
    if (cli_parse_uint(v, 1, 1024, &n) < 0)
        cli_usage_error("%s: expected 1..1024, got '%s'", opt, v);
    return (unsigned)n;
}

/* True for what looks like a URL or an HTTP mode name. */
static bool is_http(const char *a)
{
    return strstr(a, "://") || strcmp(a, "http") == 0 || strcmp(a, "https") == 0 ||
           strcmp(a, "h1") == 0 || strcmp(a, "h2") == 0 || strcmp(a, "h3") == 0;
}

/* Mode and target from the positional arguments. */
static void positional(struct load_opts *o, int argc, char **argv, char *hbuf, size_t hcap,
                       char *pbuf, size_t pcap, char *tbuf, size_t tcap)
{
    int n = argc - optind;
    char **a = argv + optind;
    if (n == 0)
        cli_usage_error("no mode: try 'vega-load echo -c 10 -d 5s HOST:PORT'");
    if (is_http(a[0])) {
        cli_err(NULL, "HTTP mode is not implemented yet ('%s'); the only mode is 'echo'", a[0]);
        exit(CLI_EXIT_USAGE);
    }
    if (strcmp(a[0], "echo") != 0) {
        char h[8], p[8];
        if (cli_split_hostport(a[0], h, sizeof(h), p, sizeof(p)) != -EINVAL)
            cli_usage_error("no mode before '%s': try 'vega-load echo %s'", a[0], a[0]);
        cli_usage_error("unknown mode '%s' (the modes: echo)", a[0]);
    }
    o->mode = a[0];
    a++;
    n--;
    if (o->unix_path) {
        if (n > 0)
            cli_usage_error("unexpected argument '%s' with -U", a[0]);
        o->target = o->unix_path;
        return;
    }
    if (n == 0)
        cli_usage_error("no target: expected HOST:PORT (or -U PATH)");
    if (n > 2)
        cli_usage_error("too many arguments");
    if (n == 2) {
        o->host = a[0];
        o->port = a[1];
        if (strchr(a[0], ':'))
            snprintf(tbuf, tcap, "[%s]:%s", a[0], a[1]);
        else
            snprintf(tbuf, tcap, "%s:%s", a[0], a[1]);
        o->target = tbuf;
    } else {
        if (is_http(a[0])) {
            cli_err(NULL, "HTTP mode is not implemented yet ('%s'); 'echo' takes HOST:PORT",
                    a[0]);
            exit(CLI_EXIT_USAGE);
        }
        if (cli_split_hostport(a[0], hbuf, hcap, pbuf, pcap) < 0)
            cli_usage_error("'%s': expected HOST:PORT", a[0]);
        o->host = hbuf;
        o->port = pbuf;
        o->target = a[0];
    }
    if (!*o->host)
        cli_usage_error("empty host in '%s'", o->target);
    if (!cli_is_port(o->port) || strcmp(o->port, "0") == 0)
        cli_usage_error("invalid port '%s'", o->port);
}

static void parse_args(struct load_opts *o, int argc, char **argv, char *hbuf, size_t hcap,
                       char *pbuf, size_t pcap, char *tbuf, size_t tcap)
{
    bool no_progress = false;
    uint64_t v;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:d:z:n:s:t:uU:46kvh", long_opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            if (cli_parse_count(optarg, &v) < 0 || v < 1 || v > LOAD_MAX_CONNS)
                cli_usage_error("-c: expected 1..%u connections, got '%s'", LOAD_MAX_CONNS,
                                optarg);
            o->conns = v;
            break;
        case 'd':
        case 'z': o->duration_ns = duration_arg("-d", optarg, false); break;
        case 'n':
            if (cli_parse_count(optarg, &v) < 0 || v < 1 || v > INT64_MAX)
                cli_usage_error("-n: expected a count of round trips (100, 10k, 1M), got '%s'",
                                optarg);
            o->round_trips = v;
            break;
        case 's':
            if (cli_parse_size(optarg, &v) < 0 || v < 1)
                cli_usage_error("-s: expected a size in bytes (64, 1K, 4M), got '%s'", optarg);
            if (v > LOAD_MAX_SIZE)
                cli_usage_error("-s: %s is too large: messages are at most 16M", optarg);
            o->size = (size_t)v;
            break;
        case 't': o->workers = workers_arg("-t", optarg); break;
        case OPT_WORKERS: o->workers = workers_arg("--workers", optarg); break;
        case OPT_WARMUP: o->warmup_ns = duration_arg("--warm-up", optarg, true); break;
        case OPT_TIMEOUT: o->timeout_ns = duration_arg("--timeout", optarg, false); break;
        case 'u': o->udp = true; break;
        case 'U': o->unix_path = optarg; break;
        case '4': o->family = AF_INET; break;
        case '6': o->family = AF_INET6; break;
        case OPT_DRIVER:
            if (strcmp(optarg, "uring") == 0 || strcmp(optarg, "io_uring") == 0)
                o->driver = VEGA_DRIVER_URING;
            else if (strcmp(optarg, "epoll") == 0)
                o->driver = VEGA_DRIVER_EPOLL;
            else
                cli_usage_error("--driver: expected uring or epoll, got '%s'", optarg);
            break;
        case OPT_JSON: o->json = true; break;
        case OPT_TLS: o->tls = true; break;
        case 'k': o->insecure = true; break;
        case OPT_CACERT: o->cacert = optarg; break;
        case OPT_SNI:
            if (!*optarg)
                cli_usage_error("--sni: empty name");
            o->sni = optarg;
            break;
        case OPT_NO_PROGRESS: no_progress = true; break;
        case 'v': cli_verbose++; break;
        case 'h': fputs(usage_text, stdout); exit(CLI_EXIT_OK);
        case OPT_VERSION:
            printf("vega-load %s (libvega %s)\n", VEGA_VERSION_STRING, vega_version());
            exit(CLI_EXIT_OK);
        case ':': cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt)
                cli_usage_error("unknown option '-%c'", optopt);
            cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (o->unix_path && o->udp)
        cli_usage_error("-U and -u cannot be combined (Unix datagram sockets are not supported)");
    if (o->unix_path && o->family != AF_UNSPEC)
        cli_usage_error("-4/-6 cannot be used with -U");
    if (o->unix_path && !*o->unix_path)
        cli_usage_error("-U: empty path");
    if (o->tls && o->udp)
        cli_usage_error("--tls cannot be used with -u (DTLS is not supported)");
    if (!o->tls && (o->insecure || o->cacert || o->sni))
        cli_usage_error("%s needs --tls", o->insecure ? "-k" : o->cacert ? "--cacert" : "--sni");
    if (o->udp && o->size > LOAD_MAX_UDP_SIZE)
        cli_usage_error("-s: %zu bytes do not fit in one UDP datagram (at most %u with -u)",
                        o->size, LOAD_MAX_UDP_SIZE);
    if (!o->duration_ns && !o->round_trips)
        o->duration_ns = 10 * VEGA_NS_PER_S;
    uint64_t cap = o->udp ? o->size + 1 : (o->size < LOAD_CHUNK ? o->size : LOAD_CHUNK);
    if (o->conns * cap > LOAD_MAX_BUFFERS)
        cli_usage_error("-c %llu with -s %zu needs %llu MiB of receive buffers; the limit is "
                        "%llu MiB", (unsigned long long)o->conns, o->size,
                        (unsigned long long)(o->conns * cap >> 20), LOAD_MAX_BUFFERS >> 20);
    o->progress = !no_progress && isatty(STDERR_FILENO);
    positional(o, argc, argv, hbuf, hcap, pbuf, pcap, tbuf, tcap);
}

/* Each connection needs a descriptor: raise the soft limit to what -c needs if the hard limit
 * allows it. */
static void fd_limit(const struct load_opts *o)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)o->conns + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
        return;
    rlim_t cur = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        rl.rlim_cur = cur;
    if (rl.rlim_cur < need)
        cli_usage_error("-c %llu needs about %llu file descriptors; the limit is %llu "
                        "(raise it with ulimit -n)", (unsigned long long)o->conns,
                        (unsigned long long)need, (unsigned long long)rl.rlim_cur);
}

struct main_arg {
    const struct load_opts *o;
    int code;
};

static void *main_task(void *arg)
{
    struct main_arg *m = arg;
    m->code = load_run_main(m->o);
    return NULL;
}

int main(int argc, char **argv)
{
    char hbuf[256], pbuf[8], tbuf[300];
    struct load_opts o;
    memset(&o, 0, sizeof(o));
    o.family = AF_UNSPEC;
    o.conns = 10;
    o.size = 64;
    o.workers = 1;
    o.timeout_ns = 2 * VEGA_NS_PER_S;
    o.driver = VEGA_DRIVER_DEFAULT;
    cli_set_prog("vega-load");
    parse_args(&o, argc, argv, hbuf, sizeof(hbuf), pbuf, sizeof(pbuf), tbuf, sizeof(tbuf));
    fd_limit(&o);

    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&o.stop_signals);
    sigaddset(&o.stop_signals, SIGINT);
    sigaddset(&o.stop_signals, SIGTERM);
    int r = vega_signal_block(&o.stop_signals);
    if (r < 0) {
        cli_err_code("signals", r);
        return CLI_EXIT_NET;
    }

    vega_rt_options ro;
    vega_rt_options_init(&ro);
    ro.flavor = VEGA_RT_MULTI_THREAD;
    ro.workers = o.workers;
    ro.driver = o.driver;
    vega_rt *rt;
    r = vega_rt_new(&rt, &ro);
    if (r < 0) {
        cli_err("runtime", "%s%s", vega_strerror(r),
                o.driver == VEGA_DRIVER_URING ? " (is io_uring allowed here? try --driver epoll)"
                                              : "");
        return CLI_EXIT_NET;
    }
    struct main_arg m = {.o = &o, .code = CLI_EXIT_NET};
    r = vega_rt_block_on(rt, main_task, &m, NULL);
    if (r < 0) {
        cli_err_code("runtime", r);
        m.code = CLI_EXIT_NET;
    }
    vega_rt_free(rt);
    return m.code;
}
