/* SPDX-License-Identifier: MIT */
/* Internals of the stub resolver shared by lib/io/dns*.c, happy.c and their tests:
 * resolv.conf and hosts parsing, the TTL cache, and the resolver object. */
#ifndef VEGA_DNS_INT_H
#define VEGA_DNS_INT_H

#include <stdatomic.h>

#include <vega/dns.h>

#include "dns_wire.h"
#include "io_int.h"

#define VEGA__DNS_CONF_MAXNS    3           /* nameserver lines honoured, as glibc's MAXNS */
#define VEGA__DNS_MAXSEARCH     8           /* search domains kept */
#define VEGA__DNS_MAX_NDOTS     15          /* glibc's RES_MAXNDOTS */
#define VEGA__DNS_MAX_TIMEOUT_S 30          /* glibc's RES_MAXRETRANS */
#define VEGA__DNS_MAX_ATTEMPTS  5           /* glibc's RES_MAXRETRY */
#define VEGA__DNS_FILE_MAX      (64u << 20) /* larger hosts/resolv.conf files are refused */

/* ---- resolv.conf ---------------------------------------------------------------------------- */

struct vega__dns_conf {
    vega_addr ns[VEGA_DNS_MAX_NAMESERVERS];
    size_t nns;
    char search[VEGA__DNS_MAXSEARCH][VEGA__DNS_TEXT_MAX + 1]; /* lowercase, no trailing dot */
    size_t nsearch;
    bool search_set;    /* a search or domain line was seen */
    unsigned ndots;     /* default 1 */
    unsigned timeout_s; /* default 5 */
    unsigned attempts;  /* default 2 */
    bool rotate;        /* options rotate */
    bool use_vc;        /* options use-vc: TCP only */
};

/* Fills c with resolv.conf(5)'s defaults (no servers, no search list). */
void vega__dns_conf_defaults(struct vega__dns_conf *c);

/* Applies the lines of a resolv.conf text (len bytes, need not end in NUL) on top of c:
 * nameserver (IPv4/IPv6, first three kept, port 53), domain, search (the last of the two wins),
 * options ndots:n timeout:n attempts:n rotate use-vc. Unknown lines and bad values are
 * ignored, as glibc does. Never fails. */
void vega__dns_conf_parse(struct vega__dns_conf *c, const char *text, size_t len);

/* ---- hosts ---------------------------------------------------------------------------------- */

struct vega__dns_host {
    char *name; /* owned, lowercase, no trailing dot */
    vega_addr addr;
};

struct vega__dns_hosts {
    struct vega__dns_host *v;
    size_t n, cap;
};

/* Adds the entries of an /etc/hosts text ("IP name alias... # comment"); malformed lines are
 * skipped. Returns 0 or -ENOMEM (h keeps what was added). */
int vega__dns_hosts_parse(struct vega__dns_hosts *h, const char *text, size_t len);

/* Copies up to max addresses of `family` (AF_UNSPEC: both; IPv6 first) listed for name (case
 * and a trailing dot ignored), in file order. Returns how many matched in all (may be > max). */
size_t vega__dns_hosts_find(const struct vega__dns_hosts *h, const char *name, int family,
                            vega_addr *out, size_t max);

void vega__dns_hosts_fini(struct vega__dns_hosts *h);

/* Reads a whole file into *buf (NUL-terminated, owned by the caller). Returns 0, -ENOENT,
 * -EFBIG (over VEGA__DNS_FILE_MAX), -ENOMEM, -errno. Blocks: setup only. */
int vega__dns_file_read(const char *path, char **buf, size_t *len);

/* ---- TTL cache ------------------------------------------------------------------------------ */

struct vega__dns_centry;

struct vega__dns_cache {
    vega__spin lock;
    struct vega__dns_centry **buckets;
    size_t nbuckets;                              /* a power of two */
    struct vega__dns_centry *lru_head, *lru_tail; /* head = most recently used */
    size_t n, cap;
    uint64_t seed;
};

/* A cached answer, in the shape the resolver consumes. */
struct vega__dns_cached {
    unsigned rcode; /* NOERROR or NXDOMAIN */
    size_t naddr;   /* 0 with NOERROR: NODATA */
    uint8_t addr[VEGA__DNS_MAX_ADDRS][16];
};

/* Sets up an empty cache of at most cap entries. Returns 0 or -ENOMEM. */
int vega__dns_cache_init(struct vega__dns_cache *c, size_t cap, uint64_t seed);
void vega__dns_cache_fini(struct vega__dns_cache *c);

/* Looks (name, qtype) up at time now (ns); an expired entry is dropped. name: lowercase, no
 * trailing dot. Returns true on a hit (*out filled). Thread-safe; never suspends. */
bool vega__dns_cache_get(struct vega__dns_cache *c, const char *name, uint16_t qtype,
                         vega_tstamp now, struct vega__dns_cached *out);

/* Stores an answer valid for ttl_s seconds from now, replacing any entry for the key and
 * evicting the least recently used one when full. ttl_s == 0 stores nothing. Returns 0 or
 * -ENOMEM (nothing stored). Thread-safe; never suspends. */
int vega__dns_cache_put(struct vega__dns_cache *c, const char *name, uint16_t qtype,
                        const struct vega__dns_cached *ans, uint32_t ttl_s, vega_tstamp now);

void vega__dns_cache_clear(struct vega__dns_cache *c);
size_t vega__dns_cache_size(struct vega__dns_cache *c);

/* ---- resolver ------------------------------------------------------------------------------- */

struct vega__dns_stats {
    uint64_t udp_queries; /* datagrams sent */
    uint64_t tcp_queries; /* queries sent over TCP */
    uint64_t cache_hits;  /* (name, type) answers taken from the cache */
    uint64_t hosts_hits;  /* lookups answered from the hosts file */
};

struct vega_dns_resolver {
    vega_addr ns[VEGA_DNS_MAX_NAMESERVERS];
    size_t nns;
    char search[VEGA__DNS_MAXSEARCH][VEGA__DNS_TEXT_MAX + 1];
    size_t nsearch;
    unsigned ndots, attempts;
    uint64_t timeout_ns;
    bool rotate, tcp_only;
    uint16_t edns_payload; /* 0: plain RFC 1035 queries */
    uint32_t max_ttl, max_neg_ttl;
    bool cache_on;
    struct vega__dns_cache cache;
    struct vega__dns_hosts hosts;
    atomic_uint next_ns; /* rotate */
    atomic_uint_fast64_t udp_queries, tcp_queries, cache_hits, hosts_hits;
};

/* Reads the resolver's counters (tests). */
void vega__dns_resolver_stats(const vega_dns_resolver *r, struct vega__dns_stats *s);

/* The process-wide resolver (made from the system files on first use, kept for the life of the
 * process): Happy Eyeballs and the QUIC endpoint use it when given none. */
int vega__dns_default_resolver(vega_dns_resolver **out);

#endif
