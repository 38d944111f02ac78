/* SPDX-License-Identifier: MIT */
/* vega-proxy: a SOCKS5, SOCKS4a and HTTP proxy on one port (microsocks', dante's and
 * tinyproxy's habits), on libvega's public API. */
#ifndef VEGA_PROXY_TOOL_H
#define VEGA_PROXY_TOOL_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <vega/proxy.h>
#include <vega/tls.h>
#include <vega/vega.h>

#include "cli.h"
#include "pwstore.h"

#define PROXY_MAX_LISTEN   16                    /* -l given at most this often */
#define PROXY_MAX_ALLOW    64                    /* --allow given at most this often */
#define PROXY_MAX_DENY     64                    /* --deny-dest given at most this often */
#define PROXY_MAX_PORTS    16                    /* port ranges in one --deny-dest */
#define PROXY_MAX_USERS    CLI_PWSTORE_USERS_MAX /* lines of a --users file */
#define PROXY_MAX_USERS_S  "10000"
#define PROXY_MAX_RULES    4096 /* lines of a --rules file that are rules */
#define PROXY_MAX_RULES_S  "4096"
#define PROXY_RULES_LINE_S "512"

/* An address range (CIDR). */
struct cidr {
    int family; /* AF_INET or AF_INET6 */
    uint8_t ip[16];
    unsigned bits;
};

/* A --deny-dest rule: an address range, a host name (with its subdomains) or any destination,
 * and ports (none listed: all). */
struct deny_rule {
    struct cidr net;
    char *host;    /* HOST[:PORTS]: the name, lowercase, no trailing dot (owned); else NULL */
    bool any_addr; /* PORTS alone: every destination on these ports */
    uint16_t lo[PROXY_MAX_PORTS], hi[PROXY_MAX_PORTS];
    size_t nports;
};

struct proxy_opts {
    const char *listen[PROXY_MAX_LISTEN]; /* as given, "tls://" stripped */
    bool listen_tls[PROXY_MAX_LISTEN];    /* -l tls://ADDR:PORT: clients speak TLS first */
    size_t nlisten;
    const char *tls_cert, *tls_key; /* --tls-cert, --tls-key: the tls:// listeners' */
    vega_tls_config *tls;           /* their server configuration (NULL: no tls:// listener) */
    struct cidr allow[PROXY_MAX_ALLOW];
    size_t nallow;
    struct cidr deny_clients[PROXY_MAX_ALLOW]; /* --deny: clients refused */
    size_t ndeny_clients;
    struct deny_rule deny[PROXY_MAX_DENY]; /* --deny-dest: destinations refused */
    size_t ndeny;
    const char *rules_file;      /* --rules */
    struct rule_set *rules;      /* its rules (NULL: none); SIGHUP swaps them (rules.c) */
    bool rules_need_allow;       /* beyond loopback with no --allow nor users: the file's allow
                                    rules are what keeps this from being an open proxy */
    const char *upstream;        /* --upstream URL, as given */
    vega_proxy_opts up;          /* --upstream: every outgoing TCP connection goes through it */
    vega_proxy_url up_url;       /* its parts (up borrows host, user, password from here) */
    const char *up_cacert;       /* --upstream-cacert: CAs for an https:// upstream */
    bool up_insecure;            /* --upstream-insecure: its certificate is not verified */
    const char *user, *password; /* -u/-P: one user */
    const char *users_file;      /* --users */
    struct cli_pwstore *users;   /* -u/-P or --users: credentials required when not NULL */
    uint64_t max_per_user;       /* --max-conns-per-user: a user's tunnels at once (0: any) */
    bool allow_private;          /* --allow-private-dest: no SSRF guard beyond loopback */
    bool deny_private;           /* a listener beyond loopback and no --allow-private-dest:
                                    private and local destinations are refused */
    uint64_t connect_ns;         /* --connect-timeout */
    uint64_t idle_ns;            /* --idle-timeout (also bounds a handshake) */
    uint64_t grace_ns;           /* --grace: how long SIGTERM lets tunnels finish */
    uint64_t max_conns;          /* --max-conns */
    size_t max_head;             /* --max-head: an HTTP request head */
    unsigned workers;
    vega_driver_kind driver;
    bool quiet;
    bool no_splice;         /* --no-splice: relay by copy */
    bool log_json;          /* --log-format json */
    const char *metrics;    /* --metrics ADDR:PORT (NULL: none) */
    char metrics_host[256]; /* its parts */
    char metrics_port[8];
    bool metrics_public; /* --metrics-public: an address beyond loopback allowed */
    sigset_t stop_signals;
};

/* Shared by the acceptors and the tunnels. */
struct proxy_server {
    const struct proxy_opts *o;
    vega_dns_resolver *dns; /* names in UDP datagrams (one cache for all associations) */
    vega_group *tunnels;
    atomic_uint_fast64_t live, total;
};

/* The kinds of tunnel the metrics count apart. */
enum proxy_kind {
    PROXY_KIND_SOCKS5,  /* SOCKS5 CONNECT and BIND */
    PROXY_KIND_SOCKS4,  /* SOCKS4 and SOCKS4a */
    PROXY_KIND_CONNECT, /* HTTP CONNECT */
    PROXY_KIND_FORWARD, /* HTTP request forwarded in absolute-form */
    PROXY_KIND_UDP,     /* SOCKS5 UDP ASSOCIATE */
    PROXY_KIND_N,
};

/* Why a connect to a destination failed (the access log's result words). */
enum proxy_fail {
    PROXY_FAIL_REFUSED,
    PROXY_FAIL_TIMEOUT,
    PROXY_FAIL_UNREACHABLE,
    PROXY_FAIL_UNKNOWN_HOST,
    PROXY_FAIL_UPSTREAM_AUTH,
    PROXY_FAIL_UPSTREAM_ERROR,
    PROXY_FAIL_UPSTREAM_UNREACHABLE,
    PROXY_FAIL_OTHER,
    PROXY_FAIL_N,
};

/* Upper bounds of the handshake duration histogram's buckets (seconds; +Inf follows). */
#define PROXY_HS_BUCKETS 12

/* Why a UDP datagram was dropped (udp.c), as --metrics counts them. */
enum udp_drop {
    UDP_DROP_SOURCE,   /* not from the association's client, or (back) from a stranger */
    UDP_DROP_HEADER,   /* a request header that does not parse */
    UDP_DROP_FRAGMENT, /* FRAG != 0: no reassembly (RFC 1928 §7 allows dropping them) */
    UDP_DROP_DEST,     /* the destination: a rule, a name that does not resolve, no socket */
    UDP_DROP_SEND,     /* the send failed (too large with the header, a full buffer) */
    UDP_DROP_N
};

/* The relay's grown pipes (tunnel.c), for --metrics: extra pages (beyond a pipe's first 16)
 * that pipes grown to 1 MiB hold now, the most they may hold and the most they ever held;
 * growths done and growths refused because the budget was full. */
struct pipe_stats {
    size_t budget_pages, grown_pages, peak_pages;
    uint64_t grown, refused;
};
void relay_pipe_stats(struct pipe_stats *st);

/* The counters --metrics shows (metrics.c); every field is updated with relaxed atomics. */
struct proxy_metrics {
    atomic_uint_fast64_t active[PROXY_KIND_N], total[PROXY_KIND_N];
    atomic_uint_fast64_t bytes_up, bytes_down; /* client -> destination, and back */
    atomic_uint_fast64_t auth_failures;
    atomic_uint_fast64_t denied_client, denied_dest; /* --allow/--deny, --deny-dest (+ rules) */
    atomic_uint_fast64_t user_limit;                 /* refused by --max-conns-per-user */
    atomic_uint_fast64_t too_many;                   /* reset at accept: --max-conns */
    atomic_uint_fast64_t connect_failures[PROXY_FAIL_N];
    atomic_uint_fast64_t hs_buckets[PROXY_HS_BUCKETS + 1]; /* counts per bucket, not cumulative */
    atomic_uint_fast64_t hs_count, hs_sum_ns;
    atomic_uint_fast64_t udp_dropped[UDP_DROP_N];
};
extern struct proxy_metrics proxy_metrics;

static inline void metric_add(atomic_uint_fast64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* A connect failure counted by its result word (connect_result's, or upstream-unreachable). */
void metrics_connect_failed(const char *result);
/* A handshake that ended in a working tunnel, ns after the client connected. */
void metrics_handshake(uint64_t ns);
/* --metrics: starts the listener and its task (nothing without --metrics). srv is read by the
 * scrapes. Returns 0 or an exit code (the error said on stderr). Context: a task. */
int metrics_start(struct proxy_server *srv);
/* Stops what metrics_start started. */
void metrics_stop(void);

/* The task of one accepted client (tunnel.c): arg is a struct tunnel_arg (taken). */
struct tunnel_arg {
    struct proxy_server *srv;
    vega_sock *sock;
    vega_addr peer;
    vega_tls_config *tls; /* a tls:// listener's configuration (NULL: plain) */
};
void *tunnel_main(void *arg);

/* What a UDP association did, for the log line. */
struct udp_report {
    char relay[VEGA_ADDR_STRLEN]; /* the relay's address given to the client */
    uint64_t up, down;            /* payload bytes client -> destinations, and back */
    uint64_t dropped;             /* datagrams dropped (wrong source, fragments, denied, ...) */
    const char *result;           /* ok, idle-timeout, stopped, reset, error */
};

/* Serves a SOCKS5 UDP ASSOCIATE (udp.c) whose request arrived on control (borrowed): sends the
 * reply (X'00' with the relay's address, or X'01'), relays datagrams until control closes,
 * fails or idles out, and fills *rep. declared: the request's DST (the client's source port, if
 * not 0). dl bounds the reply. Returns 0 or an error (no relay could be opened, the reply could
 * not be sent). Context: the client's task. */
int udp_associate(struct udp_report *rep, struct proxy_server *srv, vega_sock *control,
                  const vega_proxy_addr *declared, vega_deadline dl);

/* Reads a --users file (users.c) into o->users; errors go to stderr with the line number, a
 * file others may read gets a warning. Returns 0 or an error. */
/* Reads f into line (cap bytes) a line at a time, each handed to parse without its CR/LF,
 * and stops at the first that is too long (too_long says why), holds a NUL byte or is refused,
 * naming path and the line number on stderr. Returns 0, -EINVAL or -EIO (users.c; --users and
 * --rules files). */
int proxy_read_lines(FILE *f, const char *path, char *line, size_t cap, const char *too_long,
                     int (*parse)(void *ctx, char *line, const char **why), void *ctx);

int users_load(struct proxy_opts *o, const char *path);
/* Makes -u/-P the only user (-P may be a stored hash). Returns 0 or an error, said on stderr. */
int users_single(struct proxy_opts *o, const char *user, const char *password);
/* SIGHUP: reads o->users_file anew and swaps it in; a bad file keeps the old users and says
 * why on stderr. Returns 0 or an error. */
int users_reload(struct proxy_opts *o);
/* True when credentials are required (safe against a concurrent reload). */
bool users_required(const struct proxy_opts *o);
/* The number of users (0: none required). */
size_t users_count(const struct proxy_opts *o);
/* At exit: drops o->users. */
void users_free(struct proxy_opts *o);
/* Whether user and pass (NUL-terminated) are one of o->users: 1 yes, 0 no, a negative errno when
 * a slow hash could not be checked (the blocking pool busy past its wait). May suspend the task. */
int creds_check(const struct proxy_opts *o, const char *user, const char *pass);
/* --max-conns-per-user: counts one more tunnel of user. Returns 0, -EUSERS (the user holds
 * o->max_per_user already) or -ENOMEM; 0 without counting when there is no limit. A 0 return
 * is matched by one users_unhold. */
int users_hold(const struct proxy_opts *o, const char *user);
void users_unhold(const struct proxy_opts *o, const char *user);

/* CIDR parsing and matching (acl.c). */
int cidr_parse(const char *s, struct cidr *out);
bool cidr_match(const struct cidr *c, const vega_addr *a);
bool addr_is_loopback(const vega_addr *a);
/* Parses CIDR[:PORTS] ("10.0.0.0/8", "127.0.0.1:22,8000-8999", "[fd00::/8]:53", "::1"),
 * HOST[:PORTS] ("internal.example", "*.corp.example:443"; a name with at least one letter, which
 * also covers its subdomains) or PORTS alone ("25", ":25,465"). Returns 0 (free out->host with
 * deny_free), -EINVAL or -ENOMEM. */
int deny_parse(const char *s, struct deny_rule *out);
void deny_free(struct deny_rule *d);
/* True when d matches a (address and port); a HOST rule matches no address. */
bool deny_match(const struct deny_rule *d, const vega_addr *a);
/* True when d matches the destination name (as the client gave it) and port: a HOST rule for
 * the name or a domain above it, or a PORTS-alone rule. */
bool deny_match_name(const struct deny_rule *d, const char *name, uint16_t port);
/* True for addresses no proxy open beyond loopback should reach for a client (the SSRF guard):
 * loopback, private (RFC 1918, fc00::/7), link-local, CGNAT (100.64/10), "this network",
 * benchmarking (198.18/15), multicast and reserved ranges, unspecified. */
bool addr_is_private(const vega_addr *a);

/* The rules of the command line and the --rules file together (rules.c). */
struct rule_set;
/* Reads o->rules_file at the start. Errors go to stderr with the line number. Returns 0 or an
 * error. */
int rules_load(struct proxy_opts *o);
/* SIGHUP: reads o->rules_file anew and swaps it in as a whole; a bad file keeps the old rules
 * and says why on stderr (also a file without allow rules when o->rules_need_allow). */
int rules_reload(struct proxy_opts *o);
void rules_free(struct proxy_opts *o);
/* How many allow rules the file has now. */
size_t rules_file_allows(const struct proxy_opts *o);
/* True when client a may use the proxy: no allow rule at all, or one matches; and no deny rule
 * matches (deny wins). Safe against a concurrent reload, as are the two below. */
bool client_allowed(const struct proxy_opts *o, const vega_addr *a);
/* True when any destination rule exists (else nothing need be resolved to check). */
bool dest_rules_any(const struct proxy_opts *o);
/* False when a --deny-dest rule or a deny-dest rule of the file matches a (address and port),
 * or the SSRF guard refuses it (o->deny_private). */
bool dest_allowed(const struct proxy_opts *o, const vega_addr *a);
/* False when a HOST or PORTS-alone rule matches the destination name and port (before it is
 * resolved; the addresses it resolves to are then checked by dest_allowed). */
bool dest_name_allowed(const struct proxy_opts *o, const char *name, uint16_t port);
/* True when a and b have the same IP (an IPv4-mapped IPv6 address as IPv4); ports aside. */
bool addr_same_ip(const vega_addr *a, const vega_addr *b);
/* a as a SOCKS address (an IPv4-mapped IPv6 address as IPv4). */
void proxy_addr_from(const vega_addr *a, vega_proxy_addr *out);

#endif
