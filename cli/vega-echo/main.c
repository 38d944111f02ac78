/* SPDX-License-Identifier: MIT */
/* vega-echo: command line, runtime setup, and the choice between server and client. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "echo.h"

static const char usage_text[] =
    "Usage: vega-echo [options] -l [ADDR] PORT     serve a TCP echo (also ADDR:PORT)\n"
    "       vega-echo [options] -l -U PATH         serve on a Unix socket\n"
    "       vega-echo [options] HOST PORT          send stdin to an echo server, print what\n"
    "                                              comes back (also HOST:PORT, -U PATH)\n"
    "       vega-echo --tls [options] -l PORT      serve echo over TLS\n"
    "       vega-echo --tls [-k] HOST:PORT         a TLS client\n"
    "\n"
    "Modes:\n"
    "  -l, --listen            listen for connections (default address 127.0.0.1; port 0 picks a\n"
    "                          free port and the listening line shows it)\n"
    "  -p, --port PORT         the port to listen on (ncat's -l -p PORT)\n"
    "  -k, --keep-open         accepted for ncat compatibility: the server always keeps open\n"
    "  -u, --udp               UDP instead of TCP\n"
    "  -U, --unixsock PATH     a Unix stream socket (@NAME = abstract namespace)\n"
    "  -4 / -6                 IPv4 / IPv6 only\n"
    "\n"
    "Limits and timeouts (durations take ms, s, m, h; a bare number is seconds):\n"
    "  -w, --wait TIME         client: connect timeout; server: idle timeout per connection\n"
    "  -i, --idle-timeout TIME close a connection idle for TIME (client and server)\n"
    "  -m, --max-conns N       server: most connections at once; more are closed at accept\n"
    "      --buffer SIZE       bytes per read (default 64K; K, M suffixes)\n"
    "\n"
    "TLS (TLS 1.2 and 1.3):\n"
    "      --tls, --ssl        speak TLS (not with -u)\n"
    "      --cert FILE         PEM certificate chain: the server's (default: a fresh self-signed\n"
    "                          one for localhost, 127.0.0.1 and ::1), or the client's for mutual\n"
    "                          TLS (also --ssl-cert)\n"
    "      --key FILE          its PEM private key (default: in the --cert file; also --ssl-key)\n"
    "      --cacert FILE       client: CAs to verify the server with, instead of the system's;\n"
    "                          server: CAs for client certificates (also --ssl-trustfile)\n"
    "  -k, --insecure          client: do not verify the server's certificate (with -l, -k keeps\n"
    "                          its ncat meaning)\n"
    "      --verify-client     server: require a client certificate signed by a --cacert CA\n"
    "      --alpn LIST         ALPN protocols, comma-separated, preferred first (also\n"
    "                          --ssl-alpn); -v shows the one agreed on\n"
    "      --sni NAME          client: the server name to send and verify (default: HOST;\n"
    "                          also --ssl-servername)\n"
    "      --ktls MODE         kernel TLS offload after the handshake: off (default), tx, txrx\n"
    "  SSLKEYLOGFILE=FILE      append the session secrets to FILE (for Wireshark)\n"
    "\n"
    "Runtime:\n"
    "      --workers N         worker threads (server default: the CPUs; client default: 1)\n"
    "      --driver NAME       I/O driver: uring or epoll (default: $VEGA_DRIVER, else uring\n"
    "                          where the kernel allows it)\n"
    "\n"
    "Output:\n"
    "  -v, --verbose           log connections to stderr (-vv: more)\n"
    "  -q, --quiet             no listening line\n"
    "  -h, --help              this help\n"
    "      --version           the version\n"
    "\n"
    "The client half-closes the connection at the end of stdin and exits once everything it\n"
    "sent came back (or the server closed). SIGINT and SIGTERM stop the server cleanly (exit\n"
    "0); a client they stop exits with 128 + the signal number.\n"
    "\n"
    "Exit codes: 0 success, 1 network error (refused, reset, timeout, bytes not echoed back),\n"
    "2 usage error.\n"
    "\n"
    "Examples:\n"
    "  vega-echo -l 7000                      echo on 127.0.0.1:7000\n"
    "  vega-echo -l 0.0.0.0:7000 -v           on every interface, logging connections\n"
    "  vega-echo -l 0 --driver epoll          a free port, with the epoll driver\n"
    "  echo hello | vega-echo 127.0.0.1 7000  prints hello\n"
    "  vega-echo -l -U /tmp/echo.sock         Unix socket server\n"
    "  vega-echo -U /tmp/echo.sock < file     Unix socket client\n"
    "  vega-echo -l -u 7000                   UDP echo (one datagram back per datagram)\n"
    "  vega-echo -l -i 30s -m 100 7000        close idle connections, at most 100 at once\n"
    "  vega-echo -l --tls 7443                TLS echo with a self-signed certificate\n"
    "  echo hi | vega-echo --tls -k 127.0.0.1:7443        TLS client, no verification\n"
    "  vega-echo --tls --cacert ca.pem --alpn h2 example.test:443\n";

enum {
    OPT_VERSION = 256,
    OPT_WORKERS,
    OPT_DRIVER,
    OPT_BUFFER,
    OPT_TLS,
    OPT_CERT,
    OPT_KEY,
    OPT_CACERT,
    OPT_INSECURE,
    OPT_VERIFY_CLIENT,
    OPT_ALPN,
    OPT_SNI,
    OPT_KTLS,
};

static const struct option long_opts[] = {
    {"listen", no_argument, NULL, 'l'},
    {"port", required_argument, NULL, 'p'},
    {"keep-open", no_argument, NULL, 'k'},
    {"udp", no_argument, NULL, 'u'},
    {"unixsock", required_argument, NULL, 'U'},
    {"wait", required_argument, NULL, 'w'},
    {"idle-timeout", required_argument, NULL, 'i'},
    {"max-conns", required_argument, NULL, 'm'},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"driver", required_argument, NULL, OPT_DRIVER},
    {"buffer", required_argument, NULL, OPT_BUFFER},
    {"tls", no_argument, NULL, OPT_TLS},
    {"ssl", no_argument, NULL, OPT_TLS},
    {"cert", required_argument, NULL, OPT_CERT},
    {"ssl-cert", required_argument, NULL, OPT_CERT},
    {"key", required_argument, NULL, OPT_KEY},
    {"ssl-key", required_argument, NULL, OPT_KEY},
    {"cacert", required_argument, NULL, OPT_CACERT},
    {"ssl-trustfile", required_argument, NULL, OPT_CACERT},
    {"insecure", no_argument, NULL, OPT_INSECURE},
    {"verify-client", no_argument, NULL, OPT_VERIFY_CLIENT},
    {"alpn", required_argument, NULL, OPT_ALPN},
    {"ssl-alpn", required_argument, NULL, OPT_ALPN},
    {"sni", required_argument, NULL, OPT_SNI},
    {"ssl-servername", required_argument, NULL, OPT_SNI},
    {"ktls", required_argument, NULL, OPT_KTLS},
    {NULL, 0, NULL, 0},
};

static uint64_t duration_arg(const char *opt, const char *v)
{
    uint64_t ns;
    if (cli_parse_duration(v, VEGA_NS_PER_S, &ns) < 0)
        cli_usage_error("%s: invalid duration '%s' (try 5, 1.5s, 500ms)", opt, v);
    return ns;
}

/* Host and port from the positional arguments: [HOST] PORT, or HOST:PORT. */
static void positional(struct echo_opts *o, int argc, char **argv, char *hbuf, size_t hcap,
                       char *pbuf, size_t pcap)
{
    int n = argc - optind;
    char **a = argv + optind;
    if (o->unix_path) {
        if (n > 0)
            cli_usage_error("unexpected argument '%s' with -U", a[0]);
        if (o->port)
            cli_usage_error("-p cannot be used with -U");
        return;
    }
    if (n > 2)
        cli_usage_error("too many arguments");
    if (n == 2) {
        if (o->port)
            cli_usage_error("the port is given twice (-p and '%s')", a[1]);
        o->host = a[0];
        o->port = a[1];
    } else if (n == 1) {
        if (o->port || (o->listen && cli_is_port(a[0]))) {
            if (o->port)
                o->host = a[0];
            else
                o->port = a[0];
        } else if (cli_split_hostport(a[0], hbuf, hcap, pbuf, pcap) == 0) {
            o->host = hbuf;
            o->port = pbuf;
        } else {
            cli_usage_error("'%s': expected %s", a[0],
                            o->listen ? "PORT or ADDR:PORT" : "HOST PORT or HOST:PORT");
        }
    }
    if (!o->port)
        cli_usage_error(o->listen ? "no port to listen on" : "no host and port to connect to");
    if (!cli_is_port(o->port))
        cli_usage_error("invalid port '%s'", o->port);
    if (!o->listen && strcmp(o->port, "0") == 0)
        cli_usage_error("cannot connect to port 0");
    if (o->host && !*o->host)
        cli_usage_error("empty host");
}

static void parse_args(struct echo_opts *o, int argc, char **argv, char *hbuf, size_t hcap,
                       char *pbuf, size_t pcap)
{
    bool wait_set = false, idle_set = false, k_flag = false;
    uint64_t wait_ns = 0, v;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":lp:kuU:46w:i:m:vqh", long_opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            o->listen = true;
            break;
        case 'p':
            o->port = optarg;
            break;
        case 'k':
            k_flag = true;
            break;
        case 'u':
            o->udp = true;
            break;
        case 'U':
            o->unix_path = optarg;
            break;
        case '4':
            o->family = AF_INET;
            break;
        case '6':
            o->family = AF_INET6;
            break;
        case 'w':
            wait_ns = duration_arg("-w", optarg);
            wait_set = true;
            break;
        case 'i':
            o->idle_ns = duration_arg("-i", optarg);
            idle_set = true;
            break;
        case 'm':
            if (cli_parse_uint(optarg, 1, UINT32_MAX, &v) < 0)
                cli_usage_error("-m: invalid count '%s'", optarg);
            o->max_conns = v;
            break;
        case 'v':
            cli_verbose++;
            break;
        case 'q':
            o->quiet = true;
            break;
        case 'h':
            fputs(usage_text, stdout);
            exit(CLI_EXIT_OK);
        case OPT_VERSION:
            printf("vega-echo %s (libvega %s)\n", VEGA_VERSION_STRING, vega_version());
            exit(CLI_EXIT_OK);
        case OPT_WORKERS:
            if (cli_parse_uint(optarg, 1, 1024, &v) < 0)
                cli_usage_error("--workers: expected 1..1024, got '%s'", optarg);
            o->workers = (unsigned)v;
            break;
        case OPT_DRIVER:
            o->driver = cli_driver_arg(optarg);
            break;
        case OPT_BUFFER:
            if (cli_parse_size(optarg, &v) < 0 || v < 1 || v > (64u << 20))
                cli_usage_error("--buffer: expected a size from 1 to 64M, got '%s'", optarg);
            o->bufsize = (size_t)v;
            break;
        case OPT_TLS:
            o->tls = true;
            break;
        case OPT_CERT:
            o->cert = optarg;
            break;
        case OPT_KEY:
            o->key = optarg;
            break;
        case OPT_CACERT:
            o->cacert = optarg;
            break;
        case OPT_INSECURE:
            o->insecure = true;
            break;
        case OPT_VERIFY_CLIENT:
            o->verify_client = true;
            break;
        case OPT_ALPN:
            if (!*optarg || strstr(optarg, ",,") || optarg[0] == ',' ||
                optarg[strlen(optarg) - 1] == ',')
                cli_usage_error("--alpn: expected a comma-separated list, got '%s'", optarg);
            o->alpn = optarg;
            break;
        case OPT_SNI:
            if (!*optarg)
                cli_usage_error("--sni: empty name");
            o->sni = optarg;
            break;
        case OPT_KTLS:
            if (strcmp(optarg, "off") == 0)
                o->ktls = VEGA_TLS_KTLS_OFF;
            else if (strcmp(optarg, "tx") == 0)
                o->ktls = VEGA_TLS_KTLS_TX;
            else if (strcmp(optarg, "txrx") == 0 || strcmp(optarg, "tx+rx") == 0)
                o->ktls = VEGA_TLS_KTLS_TXRX;
            else
                cli_usage_error("--ktls: expected off, tx or txrx, got '%s'", optarg);
            break;
        case ':':
            cli_usage_error("option '%s' needs a value", argv[optind - 1]);
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
    if (o->port && !o->listen)
        cli_usage_error("-p sets the listening port and needs -l");
    if (o->max_conns && !o->listen)
        cli_usage_error("-m needs -l");
    /* -k: ncat's keep-open for a server (always so here), no verification for a TLS client. */
    if (k_flag && !o->listen && o->tls)
        o->insecure = true;
    if (o->tls && o->udp)
        cli_usage_error("--tls cannot be used with -u (DTLS is not supported)");
    if (!o->tls && (o->cert || o->key || o->cacert || o->insecure || o->verify_client || o->alpn ||
                    o->sni || o->ktls != VEGA_TLS_KTLS_OFF))
        cli_usage_error("TLS options need --tls");
    if (o->key && !o->cert)
        cli_usage_error("--key needs --cert");
    if (o->verify_client && (!o->listen || !o->cacert))
        cli_usage_error("--verify-client needs -l and --cacert");
    if (o->listen && (o->insecure || o->sni))
        cli_usage_error("%s is for clients", o->sni ? "--sni" : "--insecure");
    if (o->listen) {
        if (!idle_set && wait_set)
            o->idle_ns = wait_ns;
    } else {
        o->connect_ns = wait_ns;
    }
    positional(o, argc, argv, hbuf, hcap, pbuf, pcap);
}

struct main_arg {
    const struct echo_opts *o;
    int code;
};

static void *main_task(void *arg)
{
    struct main_arg *m = arg;
    struct echo_opts *o = (struct echo_opts *)m->o;
    if (o->tls && (m->code = echo_tls_config(o, &o->tlscfg)) != 0)
        return NULL;
    m->code = o->listen ? echo_server_main(o) : echo_client_main(o);
    vega_tls_config_free(o->tlscfg);
    return NULL;
}

int main(int argc, char **argv)
{
    char hbuf[256], pbuf[8];
    struct echo_opts o;
    memset(&o, 0, sizeof(o));
    o.family = AF_UNSPEC;
    o.bufsize = 64 * 1024;
    o.driver = VEGA_DRIVER_DEFAULT;
    cli_set_prog("vega-echo");
    parse_args(&o, argc, argv, hbuf, sizeof(hbuf), pbuf, sizeof(pbuf));

    if (cli_block_signals(&o.stop_signals, 0) != CLI_EXIT_OK)
        return CLI_EXIT_NET;

    vega_rt_opts ro;
    vega_rt_opts_init(&ro);
    ro.flavor = VEGA_RT_MULTI_THREAD;
    ro.workers = o.workers ? o.workers : (o.listen ? 0 : 1);
    ro.driver = o.driver;
    struct main_arg m = {.o = &o, .code = CLI_EXIT_NET};
    if (cli_rt_run(&ro, main_task, &m) != CLI_EXIT_OK)
        m.code = CLI_EXIT_NET;
    return m.code;
}
