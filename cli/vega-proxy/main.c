/* SPDX-License-Identifier: MIT */
/* vega-proxy: command line, listeners, the accept loops, and SIGTERM's drain. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/tls.h>

#include "proxy.h"

static const char usage_text[] =
    "Usage: vega-proxy [options]\n"
    "\n"
    "A SOCKS5, SOCKS4/4a and HTTP proxy on one port: the first byte a client sends tells them\n"
    "apart (0x05 SOCKS5, 0x04 SOCKS4, anything else HTTP). HTTP clients get CONNECT tunnels and\n"
    "forwarding of http:// requests in absolute-form (one request per connection).\n"
    "SOCKS5 UDP ASSOCIATE (RFC 1928 section 7) relays datagrams through a UDP port on the\n"
    "address the client connected to: only from the client's IP (and the port it declared),\n"
    "fragments dropped (FRAG != 0: no reassembly, as RFC 1928 allows; counted in --metrics),\n"
    "replies only from destinations the client sent to; the association ends with its TCP\n"
    "connection or the idle timeout.\n"
    "BIND (SOCKS5 and SOCKS4) listens on the address the proxy uses towards DST, answers that\n"
    "address first, accepts one connection from DST's IP (any with 0.0.0.0; others are closed)\n"
    "within --idle-timeout, answers the peer's address second, then relays (FTP active mode).\n"
    "\n"
    "Listening:\n"
    "  -l, --listen ADDR:PORT  listen here (repeatable; default 127.0.0.1:1080; PORT alone is on\n"
    "                          127.0.0.1; port 0 picks a free one and the listening line shows "
    "it)\n"
    "                          tls://ADDR:PORT: clients speak TLS first (an HTTPS proxy: curl\n"
    "                          --proxy https://HOST:PORT, vega-curl -x https://); SOCKS5,\n"
    "                          SOCKS4a, CONNECT and forwarding run inside it as outside\n"
    "      --tls-cert FILE     the tls:// listeners' certificate chain (PEM)\n"
    "      --tls-key FILE      its private key (PEM; default: in --tls-cert's file)\n"
    "      --allow CIDR        clients allowed (repeatable, e.g. 10.0.0.0/8, ::1); default: all.\n"
    "                          No open proxy: listening beyond loopback needs --allow, -u or "
    "--users\n"
    "      --deny-dest CIDR[:PORTS] | HOST[:PORTS] | PORTS\n"
    "                          refuse destinations in this range, this host name and the names\n"
    "                          below it (as the client gives it: internal.example also refuses\n"
    "                          a.internal.example), or on these ports anywhere (repeatable;\n"
    "                          PORTS: N or N-M, comma-separated; IPv6 with ports in brackets:\n"
    "                          [fd00::/8]:53). A name is refused when any of its addresses is;\n"
    "                          refused: SOCKS5 REP 2, SOCKS4 91, HTTP 403, a datagram dropped\n"
    "      --allow-private-dest\n"
    "                          listening beyond loopback, private and local destinations\n"
    "                          (127/8, 10/8, 172.16/12, 192.168/16, 169.254/16, 100.64/10,\n"
    "                          ::1, fc00::/7, fe80::/10, multicast, ...) are refused as\n"
    "                          --deny-dest refuses (an SSRF guard); this lets clients reach them\n"
    "      --deny CIDR         clients refused (repeatable); a deny beats an allow\n"
    "      --rules FILE        more rules, one a line: allow CIDR, deny CIDR, deny-dest\n"
    "                          CIDR[:PORTS] (as the options; '#' comments; at most 4096 rules,\n"
    "                          512 bytes a line). They add to the options' rules, and SIGHUP\n"
    "                          replaces them as a whole; a bad file stops the start (exit 2)\n"
    "                          or, on SIGHUP, keeps the old rules and says why with the line\n"
    "                          number. Beyond loopback with no --allow nor users, the file's\n"
    "                          allow rules are what keeps it closed: a reload must keep one\n"
    "\n"
    "Authentication:\n"
    "  -u, --user USER         require this user name: SOCKS5 username/password (RFC 1929),\n"
    "                          HTTP Proxy-Authorization Basic (407 otherwise); SOCKS4 has no\n"
    "                          password and is refused\n"
    "  -P, --password PASS     its password (also $VEGA_PROXY_PASSWORD)\n"
    "      --users FILE        require one of these users instead: user:password lines (1 to\n"
    "                          255 bytes each, the first ':' splits), '#' comments, blank\n"
    "                          lines; a malformed line stops the start with its number. A\n"
    "                          password may be stored hashed: bcrypt (htpasswd -B),\n"
    "                          sha512-crypt or yescrypt (mkpasswd), $pbkdf2-sha256$, $scrypt$,\n"
    "                          sha256:HEX; a file with passwords in clear that others may\n"
    "                          read gets a warning. -P takes the same forms\n"
    "      --hash-password USER\n"
    "                          read a password on stdin, print USER:HASH for --users, exit\n"
    "      --hash-scheme S     its scheme: bcrypt (default, cost 10), pbkdf2 (600000 rounds),\n"
    "                          yescrypt or sha512-crypt\n"
    "\n"
    "Chaining:\n"
    "      --upstream URL      every outgoing TCP connection goes through this proxy:\n"
    "                          socks5://[USER:PASS@]HOST:PORT (destinations resolved here),\n"
    "                          socks5h:// (the upstream resolves names), socks4:// (resolved\n"
    "                          here, IPv4 only), socks4a:// (the upstream resolves names),\n"
    "                          http:// (CONNECT), https:// (CONNECT over TLS to the upstream,\n"
    "                          verified against the system CAs or --upstream-cacert).\n"
    "                          --deny-dest still applies: IP destinations exactly, names by the\n"
    "                          addresses they resolve to here; with socks5h:// and http:// a\n"
    "                          name that does not resolve here goes to the upstream, and the\n"
    "                          address rules cannot see what the upstream resolves. The\n"
    "                          upstream's refusal reaches the client as REP 2-6 / 403 / 504\n"
    "                          when it says why, else REP 1 / 502 (bad credentials, upstream\n"
    "                          down: result upstream-auth, upstream-unreachable). UDP ASSOCIATE\n"
    "                          goes through a socks5:// or socks5h:// upstream's own (its relay\n"
    "                          carries the datagrams; its control connection's close ends the\n"
    "                          association: result upstream-closed); with other upstreams it is\n"
    "                          refused with REP 7 (datagrams would bypass the upstream). BIND\n"
    "                          goes through a SOCKS upstream (it listens, its two replies are\n"
    "                          passed on); through http(s):// it is refused (REP 7, SOCKS4 91)\n"
    "      --upstream-cacert FILE  CA certificates for an https:// upstream\n"
    "      --upstream-insecure do not verify an https:// upstream's certificate\n"
    "\n"
    "Limits and timeouts (durations take ms, s, m, h; a bare number is seconds):\n"
    "      --connect-timeout T connecting to a destination (default 10s)\n"
    "  -i, --idle-timeout T    close a tunnel idle both ways for T, and a handshake slower\n"
    "                          than T (default 5m; 0 = none)\n"
    "  -m, --max-conns N       tunnels at once (default 1024); more are reset at accept. A UDP\n"
    "                          association is one tunnel while its TCP connection lives\n"
    "      --max-conns-per-user N\n"
    "                          tunnels one user holds at once (default: no limit; needs\n"
    "                          users); more are refused: SOCKS5 REP 2, HTTP 429\n"
    "      --max-head SIZE     an HTTP request head (default 16K, at most 64K)\n"
    "      --grace T           SIGTERM: how long open tunnels may finish (default 10s)\n"
    "\n"
    "Runtime and output:\n"
    "      --workers N         worker threads (default: the CPUs)\n"
    "      --driver NAME       I/O driver: uring or epoll\n"
    "  -v, --verbose           log connect failures and more (-vv)\n"
    "  -q, --quiet             no listening line\n"
    "      --metrics ADDR:PORT Prometheus metrics at http://ADDR:PORT/metrics (plain HTTP, a\n"
    "                          listener of its own; :PORT alone is 127.0.0.1): tunnels active\n"
    "                          and total by kind (socks5, socks4, connect, forward, udp), bytes\n"
    "                          each way, auth failures, rule denials, connect failures by\n"
    "                          reason, handshake durations, UDP datagrams dropped by reason,\n"
    "                          relay pipes grown to 1 MiB against their budget (half of\n"
    "                          fs.pipe-user-pages-soft; for tests only, the environment\n"
    "                          variable VEGA_PROXY_PIPE_PAGES=N lowers it to N pages), and the\n"
    "                          runtime's counters\n"
    "      --metrics-public    allow a --metrics address that is not loopback\n"
    "  -h, --help              this help\n"
    "      --version           the version\n"
    "\n"
    "Each tunnel logs one line on stderr when it ends: client, user, protocol, method,\n"
    "destination (UDP: the relay; BIND: the peer that connected), bytes up (client to\n"
    "destination) and down, duration and result (ok, refused, unreachable, unknown-host,\n"
    "denied, timeout, auth-failed, bad-request, unsupported, idle-timeout, reset, stopped,\n"
    "upstream-auth, upstream-error, upstream-unreachable, upstream-closed, tls-error, closed).\n"
    "The protocol of a tls:// listener's client has +tls (http+tls, socks5+tls; tls alone when "
    "the\n"
    "TLS handshake failed). Connect failures get the matching reply:\n"
    "SOCKS5 REP 5 refused, 4 host unreachable or unknown, 3 network unreachable, 2 denied;\n"
    "SOCKS4 91; HTTP 502, 504 for a timeout, 403 denied.\n"
    "SIGINT and SIGTERM stop accepting, let tunnels finish within --grace, and exit 0.\n"
    "SIGHUP reads the --users and --rules files again: established tunnels stay, new\n"
    "connections see the new users and rules; a bad file keeps the old ones (and the reason\n"
    "goes to stderr).\n"
    "\n"
    "Exit codes: 0 stopped by a signal, 1 cannot listen, 2 usage error (a bad --users file or\n"
    "--tls-cert too).\n"
    "\n"
    "Examples:\n"
    "  vega-proxy                                  SOCKS5 and HTTP on 127.0.0.1:1080\n"
    "  curl --socks5-hostname 127.0.0.1:1080 http://example.com/\n"
    "  curl -x http://127.0.0.1:1080 http://example.com/\n"
    "  vega-proxy -l 0.0.0.0:1080 --allow 192.168.0.0/16\n"
    "  vega-proxy -l [::]:3128 -u alice -P secret  needs credentials from everyone\n"
    "  vega-proxy -l 0.0.0.0:1080 --users /etc/vega-proxy.users\n"
    "  vega-proxy --rules /etc/vega-proxy.rules   kill -HUP to apply an edited file\n"
    "  vega-proxy --upstream socks5h://u:p@gw.example:1080  chain through another proxy\n"
    "  vega-proxy -l tls://[::]:3129 --tls-cert proxy.pem --tls-key proxy.key -u alice -P secret\n"
    "  curl --proxy https://alice:secret@proxy.example:3129 https://example.com/\n";

enum {
    OPT_VERSION = 256,
    OPT_ALLOW,
    OPT_DENY_DEST,
    OPT_DENY,
    OPT_RULES,
    OPT_UPSTREAM,
    OPT_UPSTREAM_CACERT,
    OPT_UPSTREAM_INSECURE,
    OPT_USERS,
    OPT_MAX_PER_USER,
    OPT_ALLOW_PRIVATE,
    OPT_HASH_PASSWORD,
    OPT_HASH_SCHEME,
    OPT_CONNECT_TIMEOUT,
    OPT_MAX_HEAD,
    OPT_GRACE,
    OPT_WORKERS,
    OPT_DRIVER,
    OPT_NO_SPLICE,
    OPT_LOG_FORMAT,
    OPT_METRICS,
    OPT_METRICS_PUBLIC,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
};

static const struct option long_opts[] = {
    {"listen", required_argument, NULL, 'l'},
    {"allow", required_argument, NULL, OPT_ALLOW},
    {"deny-dest", required_argument, NULL, OPT_DENY_DEST},
    {"deny", required_argument, NULL, OPT_DENY},
    {"rules", required_argument, NULL, OPT_RULES},
    {"upstream", required_argument, NULL, OPT_UPSTREAM},
    {"upstream-cacert", required_argument, NULL, OPT_UPSTREAM_CACERT},
    {"upstream-insecure", no_argument, NULL, OPT_UPSTREAM_INSECURE},
    {"user", required_argument, NULL, 'u'},
    {"password", required_argument, NULL, 'P'},
    {"users", required_argument, NULL, OPT_USERS},
    {"max-conns-per-user", required_argument, NULL, OPT_MAX_PER_USER},
    {"allow-private-dest", no_argument, NULL, OPT_ALLOW_PRIVATE},
    {"hash-password", required_argument, NULL, OPT_HASH_PASSWORD},
    {"hash-scheme", required_argument, NULL, OPT_HASH_SCHEME},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"idle-timeout", required_argument, NULL, 'i'},
    {"max-conns", required_argument, NULL, 'm'},
    {"max-head", required_argument, NULL, OPT_MAX_HEAD},
    {"grace", required_argument, NULL, OPT_GRACE},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"driver", required_argument, NULL, OPT_DRIVER},
    {"no-splice", no_argument, NULL, OPT_NO_SPLICE},
    {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
    {"metrics", required_argument, NULL, OPT_METRICS},
    {"metrics-public", no_argument, NULL, OPT_METRICS_PUBLIC},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static uint64_t duration_arg(const char *opt, const char *v)
{
    uint64_t ns;
    if (cli_parse_duration(v, VEGA_NS_PER_S, &ns) < 0)
        cli_usage_error("%s: invalid duration '%s' (try 5, 1.5s, 500ms)", opt, v);
    return ns;
}

/* --upstream URL: socks5://, socks5h://, socks4://, socks4a://, http:// or https://, with
 * user:password@ if the upstream wants them. */
static void upstream_parse(struct proxy_opts *o)
{
    static const char kinds[] = "socks5://, socks5h://, socks4://, socks4a://, http://, https://";
    if (vega_proxy_url_parse(&o->up_url, o->upstream) < 0)
        cli_usage_error("--upstream: not a proxy URL (%s): '%s'", kinds, o->upstream);
    vega_proxy_kind k = o->up_url.kind;
    if (k == VEGA_PROXY_NONE)
        cli_usage_error("--upstream: %s only, not '%s'", kinds, o->upstream);
    if (!strstr(o->upstream, "://"))
        cli_usage_error("--upstream: say the scheme (%s): '%s'", kinds, o->upstream);
    if ((o->up_cacert || o->up_insecure) && k != VEGA_PROXY_HTTPS)
        cli_usage_error("--upstream-cacert and --upstream-insecure are for an https:// upstream");
    vega_proxy_opts_init(&o->up);
    o->up.kind = k;
    o->up.host = o->up_url.host;
    o->up.port = o->up_url.port;
    if (o->up_url.has_user) {
        o->up.user = o->up_url.user;
        o->up.password = o->up_url.password;
    }
    if (k == VEGA_PROXY_HTTPS) {
        static const char *const h1[] = {"http/1.1"};
        int r = vega_tls_config_new(&o->up.tls, VEGA_TLS_CLIENT);
        if (r == 0)
            r = vega_tls_config_set_alpn(o->up.tls, h1, 1);
        if (r == 0 && o->up_insecure)
            r = vega_tls_config_set_verify(o->up.tls, VEGA_TLS_VERIFY_NONE);
        if (r == 0 && o->up_cacert && (r = vega_tls_config_set_ca_file(o->up.tls, o->up_cacert))) {
            cli_err("--upstream-cacert", "%s: %s", o->up_cacert, vega_strerror(r));
            exit(CLI_EXIT_USAGE);
        }
        if (r < 0) {
            cli_err_code("--upstream TLS", r);
            exit(CLI_EXIT_USAGE);
        }
    }
}

/* --metrics ADDR:PORT, where ":PORT" alone is loopback (the safe default). */
static void set_metrics(struct proxy_opts *o, const char *spec)
{
    if (cli_split_listen(spec, o->metrics_host, sizeof o->metrics_host, o->metrics_port,
                         sizeof o->metrics_port) < 0)
        cli_usage_error("--metrics: expected ADDR:PORT, got '%s'", spec);
    o->metrics = spec;
}

/* The tls:// listeners' server configuration from --tls-cert and --tls-key. */
static void tls_setup(struct proxy_opts *o)
{
    bool any = false;
    for (size_t i = 0; i < o->nlisten; i++)
        any |= o->listen_tls[i];
    if (!any) {
        if (o->tls_cert || o->tls_key)
            cli_usage_error("--tls-cert and --tls-key are for a tls:// listener (-l "
                            "tls://ADDR:PORT)");
        return;
    }
    if (!o->tls_cert)
        cli_usage_error("a tls:// listener needs --tls-cert FILE (and --tls-key FILE)");
    int r = vega_tls_config_new(&o->tls, VEGA_TLS_SERVER);
    if (r == 0)
        r = vega_tls_config_set_cert_files(o->tls, o->tls_cert, o->tls_key);
    if (r < 0) {
        cli_err(o->tls_cert,
                "not a usable PEM certificate and key (or the key does not match "
                "the certificate): %s",
                vega_tls_strerror(r));
        exit(CLI_EXIT_USAGE);
    }
}

static void parse_args(struct proxy_opts *o, int argc, char **argv)
{
    const char *hash_user = NULL, *hash_scheme = "bcrypt";
    int c;
    while ((c = getopt_long(argc, argv, "l:u:P:i:m:vqh", long_opts, NULL)) != -1) {
        uint64_t v;
        switch (c) {
        case 'l':
            if (o->nlisten == PROXY_MAX_LISTEN)
                cli_usage_error("-l: at most %d addresses", PROXY_MAX_LISTEN);
            o->listen_tls[o->nlisten] = strncmp(optarg, "tls://", 6) == 0;
            o->listen[o->nlisten] = o->listen_tls[o->nlisten] ? optarg + 6 : optarg;
            o->nlisten++;
            break;
        case OPT_TLS_CERT:
            o->tls_cert = optarg;
            break;
        case OPT_TLS_KEY:
            o->tls_key = optarg;
            break;
        case OPT_ALLOW:
            if (o->nallow == PROXY_MAX_ALLOW)
                cli_usage_error("--allow: at most %d ranges", PROXY_MAX_ALLOW);
            if (cidr_parse(optarg, &o->allow[o->nallow]) < 0)
                cli_usage_error("--allow: not an address or CIDR range: '%s'", optarg);
            o->nallow++;
            break;
        case OPT_DENY:
            if (o->ndeny_clients == PROXY_MAX_ALLOW)
                cli_usage_error("--deny: at most %d ranges", PROXY_MAX_ALLOW);
            if (cidr_parse(optarg, &o->deny_clients[o->ndeny_clients]) < 0)
                cli_usage_error("--deny: not an address or CIDR range: '%s'", optarg);
            o->ndeny_clients++;
            break;
        case OPT_RULES:
            o->rules_file = optarg;
            break;
        case OPT_UPSTREAM_CACERT:
            o->up_cacert = optarg;
            break;
        case OPT_UPSTREAM_INSECURE:
            o->up_insecure = true;
            break;
        case OPT_UPSTREAM:
            o->upstream = optarg;
            break;
        case OPT_DENY_DEST:
            if (o->ndeny == PROXY_MAX_DENY)
                cli_usage_error("--deny-dest: at most %d rules", PROXY_MAX_DENY);
            if (deny_parse(optarg, &o->deny[o->ndeny]) < 0)
                cli_usage_error("--deny-dest: not CIDR[:PORTS], HOST[:PORTS] or PORTS (e.g. "
                                "10.0.0.0/8, 127.0.0.1:22,8000-8999, [fd00::/8]:53, "
                                "internal.example, 25): '%s'",
                                optarg);
            o->ndeny++;
            break;
        case 'u':
            o->user = optarg;
            break;
        case 'P':
            o->password = optarg;
            break;
        case OPT_USERS:
            o->users_file = optarg;
            break;
        case OPT_CONNECT_TIMEOUT:
            o->connect_ns = duration_arg("--connect-timeout", optarg);
            break;
        case 'i':
            o->idle_ns = duration_arg("--idle-timeout", optarg);
            break;
        case OPT_GRACE:
            o->grace_ns = duration_arg("--grace", optarg);
            break;
        case OPT_NO_SPLICE:
            o->no_splice = true;
            break;
        case OPT_LOG_FORMAT:
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0)
                cli_usage_error("--log-format: text or json, not '%s'", optarg);
            o->log_json = strcmp(optarg, "json") == 0;
            break;
        case OPT_MAX_PER_USER:
            if (cli_parse_uint(optarg, 1, 1000000, &v) < 0)
                cli_usage_error("--max-conns-per-user: a number from 1 to 1000000, not '%s'",
                                optarg);
            o->max_per_user = v;
            break;
        case OPT_ALLOW_PRIVATE:
            o->allow_private = true;
            break;
        case OPT_HASH_PASSWORD:
            hash_user = optarg;
            break;
        case OPT_HASH_SCHEME:
            if (!cli_pw_scheme_known(optarg))
                cli_usage_error("--hash-scheme: expected " CLI_PW_SCHEMES ", got '%s'", optarg);
            hash_scheme = optarg;
            break;
        case 'm':
            if (cli_parse_uint(optarg, 1, 1000000, &v) < 0)
                cli_usage_error("--max-conns: a number from 1 to 1000000, not '%s'", optarg);
            o->max_conns = v;
            break;
        case OPT_MAX_HEAD:
            if (cli_parse_size(optarg, &v) < 0 || v < 256 || v > 65536)
                cli_usage_error("--max-head: a size from 256 to 64K, not '%s'", optarg);
            o->max_head = (size_t)v;
            break;
        case OPT_WORKERS:
            if (cli_parse_uint(optarg, 1, 1024, &v) < 0)
                cli_usage_error("--workers: a number from 1 to 1024, not '%s'", optarg);
            o->workers = (unsigned)v;
            break;
        case OPT_DRIVER:
            if (strcmp(optarg, "uring") == 0)
                o->driver = VEGA_DRIVER_URING;
            else if (strcmp(optarg, "epoll") == 0)
                o->driver = VEGA_DRIVER_EPOLL;
            else
                cli_usage_error("--driver: uring or epoll, not '%s'", optarg);
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
        case OPT_METRICS:
            set_metrics(o, optarg);
            break;
        case OPT_METRICS_PUBLIC:
            o->metrics_public = true;
            break;
        case OPT_VERSION:
            printf("vega-proxy %s (libvega %s)\n", VEGA_VERSION_STRING, vega_version());
            exit(CLI_EXIT_OK);
        default:
            cli_usage_error("try --help");
        }
    }
    if (hash_user)
        exit(cli_hash_password("--hash-password", hash_user, VEGA_PROXY_MAX_CRED, hash_scheme));
    if (o->metrics_public && !o->metrics)
        cli_usage_error("--metrics-public needs --metrics");
    if (optind < argc)
        cli_usage_error("unexpected argument '%s' (listen with -l ADDR:PORT)", argv[optind]);
    if (!o->password)
        o->password = getenv("VEGA_PROXY_PASSWORD");
    if (o->password && !o->user)
        cli_usage_error("-P needs -u");
    if (o->user && !o->password)
        o->password = "";
    if (o->user && (!o->user[0] || strlen(o->user) > VEGA_PROXY_MAX_CRED ||
                    strlen(o->password) > VEGA_PROXY_MAX_CRED || strchr(o->user, ':')))
        cli_usage_error("-u/-P: 1 to 255 bytes each, no ':' in the user name");
    if (o->user && o->users_file)
        cli_usage_error("-u and --users: one or the other");
    if (o->user && users_single(o, o->user, o->password) < 0)
        exit(CLI_EXIT_USAGE);
    if (o->users_file && users_load(o, o->users_file) < 0)
        exit(CLI_EXIT_USAGE);
    if (o->max_per_user && !o->users)
        cli_usage_error("--max-conns-per-user needs users (-u or --users)");
    if (o->rules_file && rules_load(o) < 0)
        exit(CLI_EXIT_USAGE);
    if (o->upstream)
        upstream_parse(o);
    else if (o->up_cacert || o->up_insecure)
        cli_usage_error("--upstream-cacert and --upstream-insecure need an https:// --upstream");
    if (o->nlisten == 0)
        o->listen[o->nlisten++] = "127.0.0.1:1080";
    tls_setup(o);
}

struct listener {
    struct proxy_server *srv;
    vega_sock *sock;
    vega_tls_config *tls; /* tls://: the clients' TLS (NULL: plain) */
};

static void *accept_main(void *arg)
{
    struct listener *l = arg;
    struct proxy_server *srv = l->srv;
    const struct proxy_opts *o = srv->o;
    for (;;) {
        struct tunnel_arg *a = malloc(sizeof *a);
        if (!a)
            return NULL;
        int r = vega_tcp_accept(l->sock, &a->sock, &a->peer, VEGA_DEADLINE_NEVER);
        if (r == -EMFILE || r == -ENFILE || r == -ENOBUFS || r == -ENOMEM) {
            free(a);
            cli_err("accept", "%s (pausing 100 ms)", vega_strerror(r));
            if (vega_sleep_ms(100) < 0)
                return NULL;
            continue;
        }
        if (r < 0) {
            free(a);
            if (r != -ECANCELED)
                cli_err_code("accept", r);
            return NULL;
        }
        char name[VEGA_ADDR_STRLEN];
        bool allowed = client_allowed(o, &a->peer);
        if (!allowed || atomic_load(&srv->live) >= o->max_conns) {
            vega_addr_format(&a->peer, name, sizeof name);
            metric_add(allowed ? &proxy_metrics.too_many : &proxy_metrics.denied_client, 1);
            fprintf(stderr, "vega-proxy: %s user=- - - - up=0 down=0 time=0.000s result=%s\n", name,
                    allowed ? "too-many" : "denied");
            vega_sock_abort(a->sock);
            free(a);
            continue;
        }
        vega_sock_set_nodelay(a->sock, true);
        a->srv = srv;
        a->tls = l->tls;
        atomic_fetch_add(&srv->live, 1);
        atomic_fetch_add(&srv->total, 1);
        r = vega_group_spawn(srv->tunnels, tunnel_main, a);
        if (r < 0) {
            atomic_fetch_sub(&srv->live, 1);
            vega_sock_abort(a->sock);
            free(a);
        }
    }
}

struct main_arg {
    struct proxy_opts *o;
    int code;
};

static void *main_task(void *arg)
{
    struct main_arg *m = arg;
    struct proxy_opts *o = m->o;
    static struct proxy_server srv;
    static struct listener ls[PROXY_MAX_LISTEN];
    srv.o = o;
    size_t n = 0;
    /* names in UDP datagrams: one resolver, so its cache serves every association */
    int rr = vega_dns_resolver_new(&srv.dns, NULL);
    if (rr < 0) {
        cli_err("resolver", "%s", vega_strerror(rr));
        return NULL;
    }
    o->up.dns = srv.dns; /* --upstream's name, and destinations it wants resolved here */
    /* the metrics address first: a refused one stops us before anything listens */
    int mr = metrics_start(&srv);
    if (mr != 0) {
        m->code = mr;
        goto fail;
    }
    for (; n < o->nlisten; n++) {
        vega_addr addr;
        int r = vega_addr_parse(&addr, o->listen[n], "127.0.0.1");
        if (r < 0) {
            cli_err(o->listen[n], "not ADDR:PORT: %s", vega_strerror(r));
            goto fail;
        }
        /* no open proxy: beyond loopback, somebody must have said who may use it */
        if (!addr_is_loopback(&addr) && o->nallow == 0 && !users_count(o)) {
            if (rules_file_allows(o) == 0) {
                cli_err(o->listen[n],
                        "refusing to listen beyond loopback as an open proxy: add --allow CIDR "
                        "or -u USER -P PASS or --users FILE (or allow rules in --rules FILE)");
                m->code = CLI_EXIT_USAGE;
                goto fail;
            }
            o->rules_need_allow = true; /* a reload must keep some allow rule */
        }
        /* the SSRF guard: a proxy others reach must not reach this host's and its network's
         * private services for them (set before any tunnel exists) */
        if (!addr_is_loopback(&addr) && !o->allow_private)
            o->deny_private = true;
        r = vega_tcp_listen(&ls[n].sock, &addr, 0, 0);
        if (r < 0) {
            cli_err(o->listen[n], "listen: %s", vega_strerror(r));
            goto fail;
        }
        ls[n].srv = &srv;
        ls[n].tls = o->listen_tls[n] ? o->tls : NULL;
        vega_addr bound;
        char where[VEGA_ADDR_STRLEN];
        if (vega_sock_local_addr(ls[n].sock, &bound) < 0)
            bound = addr;
        vega_addr_format(&bound, where, sizeof where);
        if (!o->quiet)
            fprintf(stderr, "vega-proxy: listening on %s (%sSOCKS5, SOCKS4a, HTTP%s%s)\n", where,
                    o->listen_tls[n] ? "TLS: " : "", users_count(o) ? "; credentials required" : "",
                    !addr_is_loopback(&addr) && o->deny_private
                        ? "; private destinations refused (--allow-private-dest)"
                        : "");
    }
    fflush(stderr);
    int r = vega_group_new(&srv.tunnels);
    vega_group *acceptors = NULL;
    if (r == 0)
        r = vega_group_new(&acceptors);
    for (size_t i = 0; r == 0 && i < n; i++)
        r = vega_group_spawn(acceptors, accept_main, &ls[i]);
    if (r < 0) {
        cli_err_code("spawn", r);
        if (acceptors)
            vega_group_free(acceptors);
        if (srv.tunnels)
            vega_group_free(srv.tunnels);
        goto fail;
    }
    int signo = 0;
    /* SIGHUP reloads --users (tunnels stay); SIGINT and SIGTERM stop */
    sigset_t waited = o->stop_signals;
    sigaddset(&waited, SIGHUP);
    while ((r = vega_signal_wait(&waited, &signo, VEGA_DEADLINE_NEVER)) == 0 && signo == SIGHUP) {
        if (o->users_file)
            users_reload(o);
        if (o->rules_file)
            rules_reload(o);
        if (!o->users_file && !o->rules_file)
            cli_log(1, "SIGHUP: nothing to reload (no --users or --rules file)");
    }
    cli_log(1, "SIG%s: stopping, %llu tunnels open",
            sigabbrev_np(signo) ? sigabbrev_np(signo) : "?",
            (unsigned long long)atomic_load(&srv.live));
    /* stop accepting, then let the tunnels finish within the grace period */
    vega_group_free(acceptors);
    for (size_t i = 0; i < n; i++)
        vega_sock_close(ls[i].sock);
    vega_deadline grace = vega_deadline_in_ns(o->grace_ns);
    if (vega_group_wait(srv.tunnels, grace) < 0)
        vega_group_cancel(srv.tunnels);
    /* relaying tunnels belong to no group (an idle one has no task): wait for the count.
     * Those still open when the grace ends close as the runtime stops (their parks fire). */
    while (atomic_load(&srv.live) > 0 && vega_sleep_ms(10) == 0 && vega_now() < grace)
        ;
    vega_group_free(srv.tunnels);
    metrics_stop();
    cli_log(1, "stopped after %llu tunnels", (unsigned long long)atomic_load(&srv.total));
    vega_dns_resolver_free(srv.dns);
    m->code = r == 0 ? CLI_EXIT_OK : CLI_EXIT_NET;
    return NULL;
fail:
    metrics_stop();
    for (size_t i = 0; i < n; i++)
        vega_sock_close(ls[i].sock);
    vega_dns_resolver_free(srv.dns);
    return NULL;
}

int main(int argc, char **argv)
{
    struct proxy_opts o;
    memset(&o, 0, sizeof o);
    o.connect_ns = 10 * VEGA_NS_PER_S;
    o.idle_ns = 300 * VEGA_NS_PER_S;
    o.grace_ns = 10 * VEGA_NS_PER_S;
    o.max_conns = 1024;
    o.max_head = VEGA_PROXY_HTTP_DEFAULT_MAX_HEAD;
    o.driver = VEGA_DRIVER_DEFAULT;
    cli_set_prog("vega-proxy");
    parse_args(&o, argc, argv);

    if (cli_block_signals(&o.stop_signals, SIGHUP) != CLI_EXIT_OK) /* SIGHUP: the reload */
        return CLI_EXIT_NET;
    vega_rt_opts ro;
    vega_rt_opts_init(&ro);
    ro.flavor = VEGA_RT_MULTI_THREAD;
    ro.workers = o.workers;
    ro.driver = o.driver;
    struct main_arg m = {.o = &o, .code = CLI_EXIT_NET};
    if (cli_rt_run(&ro, main_task, &m) != CLI_EXIT_OK)
        m.code = CLI_EXIT_NET;
    vega_tls_config_free(o.up.tls);
    vega_tls_config_free(o.tls);
    users_free(&o);
    rules_free(&o);
    return m.code;
}
