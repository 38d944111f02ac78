/* SPDX-License-Identifier: MIT */
/* An asynchronous stub resolver (RFC 1035, RFC 3596 A/AAAA, EDNS0, TCP fallback, RFC 2308
 * negative caching) reading /etc/resolv.conf and /etc/hosts, and Happy Eyeballs v2 connects
 * (RFC 8305). Every call that can suspend takes a vega_deadline last. */
#ifndef VEGA_DNS_H
#define VEGA_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/io.h>
#include <vega/time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Codes of a name that did not resolve (range -10600, err.h). vega_strerror gives messages a
 * person understands ("Could not resolve host: no such name"); vega_addr_resolve (io.h)
 * returns them too. */
enum {
    VEGA_ERR_DNS_BASE = -10600,
    VEGA_ERR_DNS_NOT_FOUND = -10601,  /* no such name: NXDOMAIN for every candidate name (or
                                         getaddrinfo's EAI_NONAME) */
    VEGA_ERR_DNS_NO_ADDRESS = -10602, /* the name exists but has no address of the family
                                         asked (NODATA) */
    VEGA_ERR_DNS_SERVER = -10603,     /* the servers failed to answer (SERVFAIL, REFUSED, or
                                         getaddrinfo's EAI_AGAIN): may work later */
    VEGA_ERR_DNS_LAST = -10604,
};

/* A resolver: configuration, the hosts table and a TTL cache. Thread-safe: any number of tasks
 * on any workers (and runtimes) may look names up through one resolver at the same time. */
typedef struct vega_dns_resolver vega_dns_resolver;

/* Most nameservers a resolver uses. */
#define VEGA_DNS_MAX_NAMESERVERS 8

typedef struct vega_dns_opts {
    /* Servers to ask, in order, instead of resolv.conf's (borrowed during vega_dns_resolver_new;
     * copied). A port of 0 means 53. At most VEGA_DNS_MAX_NAMESERVERS. */
    const vega_addr *nameservers;
    size_t nameservers_len;
    /* Search domains instead of resolv.conf's (borrowed during new; copied). Only used when
     * search_set is true, so that an empty list can be asked for. */
    const char *const *search;
    size_t search_len;
    bool search_set;
    unsigned timeout_ms;         /* wait for one server's answer; 0 = resolv.conf's timeout (5 s) */
    unsigned attempts;           /* rounds over all servers; 0 = resolv.conf's attempts (2); <= 5 */
    int ndots;                   /* names with at least this many dots are tried as given first;
                                    < 0 = resolv.conf's ndots (1); at most 15 */
    const char *resolv_conf;     /* path; NULL = "/etc/resolv.conf"; "" = read none */
    const char *hosts;           /* path; NULL = "/etc/hosts"; "" = none */
    size_t cache_entries;        /* most cached (name, type) answers; 0 = 512 */
    bool no_cache;               /* no TTL cache at all */
    uint32_t max_ttl_s;          /* cap on how long an answer is cached; 0 = 86400 */
    uint32_t max_negative_ttl_s; /* cap for NXDOMAIN/NODATA answers; 0 = 300 */
    bool tcp_only;               /* every query over TCP (resolv.conf's "options use-vc") */
    bool no_edns;                /* plain 512-byte RFC 1035 queries, no OPT record */
} vega_dns_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_DNS_OPTS_VERSION 1

/* Fills o with defaults: everything from the system files (ndots = -1). Since 0.1. */
VEGA_API void vega_dns_opts_init_versioned(vega_dns_opts *o, int opts_version);
#define vega_dns_opts_init(...) vega_dns_opts_init_versioned(__VA_ARGS__, VEGA_DNS_OPTS_VERSION)
/* Deprecated (0.1), until 1.0: the names before the API rules (docs/ARCHITECTURE.md). */
typedef vega_dns_opts vega_dns_options;
#define vega_dns_options_init vega_dns_opts_init

/*
 * Creates a resolver. Reads resolv.conf (nameserver lines, IPv4 and IPv6, the first three;
 * search/domain; options ndots: timeout: attempts: rotate use-vc) and the hosts file once, now,
 * with blocking reads; fields of opts override them. Missing files are not an error: without
 * nameservers the resolver asks 127.0.0.1:53, without search domains it uses the domain part of
 * the host name, as glibc does. opts: borrowed; NULL means defaults.
 * Returns 0, -EINVAL (an option out of range, a nameserver that is not IPv4/IPv6, a bad search
 * domain), -ENOMEM, -EFBIG (a file over 64 MiB), -errno from reading a file that exists.
 * Context: any thread; call it at setup (it blocks on file reads). Since 0.1.
 */
VEGA_API int vega_dns_resolver_new_versioned(vega_dns_resolver **out, const vega_dns_opts *opts,
                                             int opts_version);
#define vega_dns_resolver_new(...)                                                                 \
    vega_dns_resolver_new_versioned(__VA_ARGS__, VEGA_DNS_OPTS_VERSION)

/* Frees r (NULL is a no-op). No lookup may be running on it. Since 0.1. */
VEGA_API void vega_dns_resolver_free(vega_dns_resolver *r);

/* Drops every cached answer. Context: any thread; never suspends. Since 0.1. */
VEGA_API void vega_dns_resolver_clear_cache(vega_dns_resolver *r);

/*
 * Resolves name into up to max addresses (port 0), IPv6 first, then IPv4, each in the
 * server's order. *n receives the number stored (0 on error).
 *  - A numeric address ("10.0.0.1", "::1", "[::1]") is returned at once.
 *  - The hosts file comes first (nsswitch "files dns"): when it lists the name with addresses
 *    of the wanted family, DNS is not asked. "localhost" and names under ".localhost" never go
 *    to DNS: without a hosts entry they are 127.0.0.1 and ::1 (RFC 6761 §6.3).
 *  - Otherwise the search list applies (a name with >= ndots dots is tried as given first, a
 *    name ending in '.' only as given), and for each candidate A and AAAA are asked in parallel
 *    (AF_UNSPEC) from one UDP socket per server with a fresh random source port and random IDs;
 *    a truncated answer is asked again over TCP. Each server gets timeout_ms, in order, for
 *    `attempts` rounds. Answers, NXDOMAIN and NODATA are cached by their TTLs (RFC 2308).
 * family: AF_UNSPEC, AF_INET or AF_INET6. name: borrowed.
 * Returns 0 (*n >= 1); -EINVAL (bad arguments or name); -EAFNOSUPPORT (a numeric address of
 * the other family); VEGA_ERR_DNS_NOT_FOUND (no such name: NXDOMAIN); VEGA_ERR_DNS_NO_ADDRESS
 * (the name exists without an address of that family); VEGA_ERR_DNS_SERVER (servers answered
 * SERVFAIL or REFUSED); -ECONNREFUSED (no server listens); VEGA_ERR_PROTO (servers sent malformed
 * answers); -ETIMEDOUT (no answer in the attempts, or dl passed); -ECANCELED; -ENOMEM; another
 * -errno from the sockets. Context: inside a task (any task: the resolver is shared); for numeric
 * names, hosts entries and cache hits it does not suspend. Since 0.1.
 */
VEGA_API int vega_dns_lookup(vega_dns_resolver *r, const char *name, int family, vega_addr *out,
                             size_t max, size_t *n, vega_deadline dl);

/* ---- Happy Eyeballs v2 (RFC 8305) ----------------------------------------------------------- */

typedef struct vega_tcp_connect_opts {
    int family;                   /* AF_UNSPEC (both), AF_INET or AF_INET6 */
    unsigned attempt_delay_ms;    /* §5 Connection Attempt Delay; 0 = 250; at least 10 */
    unsigned resolution_delay_ms; /* §3 Resolution Delay after A before AAAA; 0 = 50 */
    size_t max_per_family;        /* addresses tried per family; 0 = 8; at most 32 */
    /* ---- layout version 2 ---- */
    const vega_tcp_local *local; /* each attempt's local side (vega_tcp_connect_bound;
                                    borrowed for the call); NULL = not bound. An address of
                                    the other family than local->addr fails its attempt with
                                    -EAFNOSUPPORT */
} vega_tcp_connect_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). Version 2 appended
 * local; a program built with version 1 still works (nothing bound). */
#define VEGA_TCP_CONNECT_OPTS_VERSION 2

/* Fills o with the RFC's recommended values. Since 0.1. */
VEGA_API void vega_tcp_connect_opts_init_versioned(vega_tcp_connect_opts *o, int opts_version);
#define vega_tcp_connect_opts_init(...)                                                            \
    vega_tcp_connect_opts_init_versioned(__VA_ARGS__, VEGA_TCP_CONNECT_OPTS_VERSION)
/* Deprecated (0.1), until 1.0. */
typedef vega_tcp_connect_opts vega_tcp_connect_options;
#define vega_tcp_connect_options_init vega_tcp_connect_opts_init

/*
 * Connects to host:port with Happy Eyeballs v2. AAAA and A are looked up in parallel (two
 * tasks); connecting starts as soon as AAAA answered with addresses, or Resolution Delay after
 * A did. Addresses are interleaved IPv6 first (First Address Family Count 1); a new attempt
 * starts every Connection Attempt Delay, or at once when the previous one failed; addresses
 * that arrive late join the list. The first connection that succeeds wins: the other attempts
 * are cancelled and their sockets closed before the call returns.
 * r: the resolver (NULL = a process-wide one made from the system files on first use and kept
 * for the life of the process).
 * host: borrowed; a name or a numeric address. opts: borrowed; NULL = defaults.
 * Returns 0 (*out receives the connected socket); resolution errors as vega_dns_lookup when no
 * address was found (VEGA_ERR_DNS_NOT_FOUND, VEGA_ERR_DNS_NO_ADDRESS, VEGA_ERR_DNS_SERVER,
 * -ETIMEDOUT, ...); when every attempt failed,
 * the most telling error among them, in this order: -ECONNREFUSED, -ECONNRESET, -ETIMEDOUT,
 * -EHOSTUNREACH, -ENETUNREACH, others; -ETIMEDOUT when dl passed; -ECANCELED; -ENOMEM;
 * -EINVAL.
 * Context: inside a task. Since 0.1.
 */
VEGA_API int vega_tcp_connect_host_versioned(vega_sock **out, vega_dns_resolver *r,
                                             const char *host, uint16_t port,
                                             const vega_tcp_connect_opts *opts, vega_deadline dl,
                                             int opts_version);
#define vega_tcp_connect_host(...)                                                                 \
    vega_tcp_connect_host_versioned(__VA_ARGS__, VEGA_TCP_CONNECT_OPTS_VERSION)

#ifdef __cplusplus
}
#endif
#endif
