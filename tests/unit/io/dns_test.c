/* SPDX-License-Identifier: MIT */
/* The stub resolver: resolv.conf and hosts parsing, the TTL cache, lookups against a fake
 * server written here (TCP fallback, negative caching, search lists, EDNS fallback, spoofed
 * answers, failover) and against a real dnsmasq on loopback (skipped without dnsmasq).
 * The fake server is a task of the test's own runtime, so those cases run on the paused clock
 * (vtest_run_paused): a per-server timeout is then exact, and a busy machine cannot make the
 * fake late. dnsmasq is another process: its cases keep the real clock, prove what they prove
 * with the resolver's counters, and give dnsmasq timeouts no loaded machine runs past. The
 * TTL cache reads the real clock, so the expiry case keeps it too. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vega/dns.h>
#include <vega/io.h>
#include <vega/rt.h>

#include "dns_int.h"
#include "vtest.h"

/* ---- harness --------------------------------------------------------------------------------- */

static vega_tstamp ms_since(vega_tstamp t0)
{
    return (vega_now() - t0) / VEGA_NS_PER_MS;
}

static void addr_check(const vega_addr *a, const char *ip)
{
    char buf[VEGA_ADDR_STRLEN], want[VEGA_ADDR_STRLEN];
    VCHECK(vega_addr_format(a, buf, sizeof(buf)) > 0);
    snprintf(want, sizeof(want), strchr(ip, ':') ? "[%s]:0" : "%s:0", ip);
    VCHECK_STR(buf, want);
}

/* Writes text to a fresh temporary file; returns its path (static storage per slot). */
static const char *temp_file(int slot, const char *text)
{
    static char paths[4][64];
    snprintf(paths[slot], sizeof(paths[slot]), "/tmp/vega-dns-test-XXXXXX");
    int fd = mkstemp(paths[slot]);
    VCHECK(fd >= 0);
    VCHECK_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return paths[slot];
}

static struct vega__dns_stats stats(vega_dns_resolver *r)
{
    struct vega__dns_stats s;
    vega__dns_resolver_stats(r, &s);
    return s;
}

/* ---- resolv.conf, hosts, cache (no network) -------------------------------------------------- */

VTEST(conf_parse)
{
    static const char text[] = "# comment\n"
                               "domain ignored.test\n"
                               "nameserver 10.0.0.53\r\n"
                               "nameserver   2001:db8::53  # v6\n"
                               "nameserver not-an-ip\n"
                               "nameserver 10.0.0.54\n"
                               "nameserver 10.0.0.55\n" /* a fourth: ignored, as glibc */
                               "search Corp.Test. lab.test\n"
                               "; another comment\n"
                               "options ndots:3 timeout:2 attempts:9 rotate use-vc edns0\n"
                               "options timeout:0\n"
                               "bogus line here\n"
                               "nameserver";
    struct vega__dns_conf c;
    vega__dns_conf_defaults(&c);
    VCHECK_EQ(c.ndots, 1);
    VCHECK_EQ(c.timeout_s, 5);
    VCHECK_EQ(c.attempts, 2);
    vega__dns_conf_parse(&c, text, sizeof(text) - 1);
    VCHECK_EQ(c.nns, 3);
    char buf[VEGA_ADDR_STRLEN];
    vega_addr_format(&c.ns[0], buf, sizeof(buf));
    VCHECK_STR(buf, "10.0.0.53:53");
    vega_addr_format(&c.ns[1], buf, sizeof(buf));
    VCHECK_STR(buf, "[2001:db8::53]:53");
    vega_addr_format(&c.ns[2], buf, sizeof(buf));
    VCHECK_STR(buf, "10.0.0.54:53");
    VCHECK_EQ(c.nsearch, 2);
    VCHECK_STR(c.search[0], "corp.test");
    VCHECK_STR(c.search[1], "lab.test");
    VCHECK_EQ(c.ndots, 3);
    VCHECK_EQ(c.timeout_s, 1); /* timeout:0 is raised to 1 */
    VCHECK_EQ(c.attempts, 5);  /* capped */
    VCHECK(c.rotate);
    VCHECK(c.use_vc);

    /* The last of domain/search wins. */
    static const char text2[] = "search a.test b.test\ndomain c.test\n";
    vega__dns_conf_defaults(&c);
    vega__dns_conf_parse(&c, text2, sizeof(text2) - 1);
    VCHECK_EQ(c.nsearch, 1);
    VCHECK_STR(c.search[0], "c.test");
}

VTEST(hosts_parse)
{
    static const char text[] = "127.0.0.1\tlocalhost\n"
                               "::1 localhost ip6-localhost\n"
                               "# 10.9.9.9 commented.test\n"
                               "10.0.0.1 Foo.Test alias  # trailing comment\n"
                               "10.0.0.2 foo.test\n"
                               "2001:db8::1 foo.test\n"
                               "10.0.0.1 foo.test\n" /* a duplicate */
                               "bogus foo.test\n"
                               "[::2] foo.test\n"
                               "10.0.0.3\n";
    struct vega__dns_hosts h = {0};
    VCHECK_EQ(vega__dns_hosts_parse(&h, text, sizeof(text) - 1), 0);
    vega_addr out[8];
    VCHECK_EQ(vega__dns_hosts_find(&h, "FOO.test.", AF_UNSPEC, out, 8), 3);
    addr_check(&out[0], "2001:db8::1"); /* IPv6 first */
    addr_check(&out[1], "10.0.0.1");
    addr_check(&out[2], "10.0.0.2");
    VCHECK_EQ(vega__dns_hosts_find(&h, "foo.test", AF_INET, out, 1), 2);
    addr_check(&out[0], "10.0.0.1");
    VCHECK_EQ(vega__dns_hosts_find(&h, "alias", AF_INET6, out, 8), 0);
    VCHECK_EQ(vega__dns_hosts_find(&h, "alias", AF_INET, out, 8), 1);
    VCHECK_EQ(vega__dns_hosts_find(&h, "localhost", AF_INET6, out, 8), 1);
    addr_check(&out[0], "::1");
    VCHECK_EQ(vega__dns_hosts_find(&h, "commented.test", AF_UNSPEC, out, 8), 0);
    vega__dns_hosts_fini(&h);
}

static struct vega__dns_cached cached_a(uint8_t last)
{
    struct vega__dns_cached c;
    memset(&c, 0, sizeof(c));
    c.naddr = 1;
    c.addr[0][0] = 10;
    c.addr[0][3] = last;
    return c;
}

VTEST(cache_ttl_lru)
{
    struct vega__dns_cache c;
    VCHECK_EQ(vega__dns_cache_init(&c, 3, 1234), 0);
    const vega_tstamp S = VEGA_NS_PER_S;
    struct vega__dns_cached in = cached_a(1), out;

    VCHECK_EQ(vega__dns_cache_put(&c, "a.test", VEGA__DNS_T_A, &in, 10, 100 * S), 0);
    VCHECK(vega__dns_cache_get(&c, "a.test", VEGA__DNS_T_A, 109 * S, &out));
    VCHECK_EQ(out.naddr, 1);
    VCHECK_EQ(out.addr[0][3], 1);
    VCHECK(!vega__dns_cache_get(&c, "a.test", VEGA__DNS_T_AAAA, 109 * S, &out));
    VCHECK(!vega__dns_cache_get(&c, "b.test", VEGA__DNS_T_A, 109 * S, &out));
    /* Expired at exactly TTL seconds, and dropped. */
    VCHECK(!vega__dns_cache_get(&c, "a.test", VEGA__DNS_T_A, 110 * S, &out));
    VCHECK_EQ(vega__dns_cache_size(&c), 0);

    /* TTL 0: not stored. */
    VCHECK_EQ(vega__dns_cache_put(&c, "z.test", VEGA__DNS_T_A, &in, 0, 0), 0);
    VCHECK_EQ(vega__dns_cache_size(&c), 0);

    /* Negative entries. */
    struct vega__dns_cached nx = {.rcode = VEGA__DNS_RC_NXDOMAIN};
    VCHECK_EQ(vega__dns_cache_put(&c, "nx.test", VEGA__DNS_T_A, &nx, 5, 0), 0);
    VCHECK(vega__dns_cache_get(&c, "nx.test", VEGA__DNS_T_A, 1, &out));
    VCHECK_EQ(out.rcode, VEGA__DNS_RC_NXDOMAIN);
    VCHECK_EQ(out.naddr, 0);

    /* LRU: touch nx, add b and c, then d evicts the least recently used (b). */
    in = cached_a(2);
    VCHECK_EQ(vega__dns_cache_put(&c, "b.test", VEGA__DNS_T_A, &in, 100, 0), 0);
    in = cached_a(3);
    VCHECK_EQ(vega__dns_cache_put(&c, "c.test", VEGA__DNS_T_A, &in, 100, 0), 0);
    VCHECK(vega__dns_cache_get(&c, "nx.test", VEGA__DNS_T_A, 1, &out));
    VCHECK_EQ(vega__dns_cache_size(&c), 3);
    in = cached_a(4);
    VCHECK_EQ(vega__dns_cache_put(&c, "d.test", VEGA__DNS_T_A, &in, 100, 0), 0);
    VCHECK_EQ(vega__dns_cache_size(&c), 3);
    VCHECK(!vega__dns_cache_get(&c, "b.test", VEGA__DNS_T_A, 1, &out));
    VCHECK(vega__dns_cache_get(&c, "c.test", VEGA__DNS_T_A, 1, &out));
    VCHECK(vega__dns_cache_get(&c, "d.test", VEGA__DNS_T_A, 1, &out));

    /* Replacing a key keeps one entry. */
    in = cached_a(5);
    VCHECK_EQ(vega__dns_cache_put(&c, "d.test", VEGA__DNS_T_A, &in, 100, 0), 0);
    VCHECK_EQ(vega__dns_cache_size(&c), 3);
    VCHECK(vega__dns_cache_get(&c, "d.test", VEGA__DNS_T_A, 1, &out));
    VCHECK_EQ(out.addr[0][3], 5);
    vega__dns_cache_clear(&c);
    VCHECK_EQ(vega__dns_cache_size(&c), 0);
    vega__dns_cache_fini(&c);
}

/* A resolver that reads no system file and asks only `ns` (NULL: a port nobody uses). */
static vega_dns_resolver *resolver_for(const vega_addr *ns, const char *hosts, unsigned timeout_ms,
                                       unsigned attempts)
{
    vega_dns_opts o;
    vega_dns_opts_init(&o);
    o.resolv_conf = "";
    o.hosts = hosts ? hosts : "";
    o.nameservers = ns;
    o.nameservers_len = ns ? 1 : 0;
    o.timeout_ms = timeout_ms;
    o.attempts = attempts;
    o.search_set = true; /* no search list: the host's domain must not leak in */
    vega_dns_resolver *r;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), 0);
    return r;
}

static void body_local_names(void)
{
    const char *hosts = temp_file(0, "10.1.2.3 Printer.lan printer\n"
                                     "127.0.0.1 localhost\n"
                                     "fe80::1%1 linklocal.lan\n");
    vega_dns_resolver *r = resolver_for(NULL, hosts, 100, 1);
    vega_addr out[4];
    size_t n = 99;

    /* Numeric names, without suspending (deadline 0). */
    VCHECK_EQ(vega_dns_lookup(r, "192.0.2.1", AF_UNSPEC, out, 4, &n, 0), 0);
    VCHECK_EQ(n, 1);
    addr_check(&out[0], "192.0.2.1");
    VCHECK_EQ(vega_dns_lookup(r, "[2001:db8::5]", AF_INET6, out, 4, &n, 0), 0);
    addr_check(&out[0], "2001:db8::5");
    VCHECK_EQ(vega_dns_lookup(r, "192.0.2.1", AF_INET6, out, 4, &n, 0), -EAFNOSUPPORT);
    VCHECK_EQ(n, 0);

    /* Hosts, case-insensitive, with a trailing dot. */
    VCHECK_EQ(vega_dns_lookup(r, "PRINTER.lan.", AF_UNSPEC, out, 4, &n, 0), 0);
    VCHECK_EQ(n, 1);
    addr_check(&out[0], "10.1.2.3");
    VCHECK_EQ(vega_dns_lookup(r, "linklocal.lan", AF_UNSPEC, out, 4, &n, 0), 0);
    VCHECK_EQ(vega_addr_family(&out[0]), AF_INET6);

    /* localhost: the hosts file's entry; ::1 for IPv6 (RFC 6761), never DNS. */
    VCHECK_EQ(vega_dns_lookup(r, "localhost", AF_UNSPEC, out, 4, &n, 0), 0);
    VCHECK_EQ(n, 1);
    addr_check(&out[0], "127.0.0.1");
    VCHECK_EQ(vega_dns_lookup(r, "localhost", AF_INET6, out, 4, &n, 0), 0);
    addr_check(&out[0], "::1");
    VCHECK_EQ(vega_dns_lookup(r, "db.localhost", AF_UNSPEC, out, 4, &n, 0), 0);
    VCHECK_EQ(n, 2);
    addr_check(&out[0], "::1");
    addr_check(&out[1], "127.0.0.1");
    VCHECK_EQ(stats(r).udp_queries, 0);

    /* "invalid" names (RFC 6761 §6.4) never exist: an answer at once, its own code and a
     * message a person reads, and no server asked. */
    VCHECK_EQ(vega_dns_lookup(r, "no-such-host.invalid", AF_UNSPEC, out, 4, &n, 0),
              VEGA_ERR_DNS_NOT_FOUND);
    VCHECK_EQ(vega_dns_lookup(r, "INVALID.", AF_INET, out, 4, &n, 0), VEGA_ERR_DNS_NOT_FOUND);
    VCHECK_EQ(n, 0);
    VCHECK_EQ(stats(r).udp_queries, 0);
    VCHECK_STR(vega_err_name(VEGA_ERR_DNS_NOT_FOUND), "VEGA_ERR_DNS_NOT_FOUND");
    VCHECK(strncmp(vega_strerror(VEGA_ERR_DNS_NOT_FOUND), "Could not resolve host", 22) == 0);
    VCHECK(strncmp(vega_strerror(VEGA_ERR_DNS_NO_ADDRESS), "Could not resolve host", 22) == 0);
    VCHECK(strncmp(vega_strerror(VEGA_ERR_DNS_SERVER), "Could not resolve host", 22) == 0);
    VCHECK(!vega_err_is_fatal(VEGA_ERR_DNS_NOT_FOUND));

    /* A name that needs the network, with deadline 0: would wait. */
    VCHECK_EQ(vega_dns_lookup(r, "elsewhere.test", AF_INET, out, 4, &n, 0), -ETIMEDOUT);
    VCHECK_EQ(stats(r).udp_queries, 0);

    /* Bad arguments and names. */
    VCHECK_EQ(vega_dns_lookup(r, "", AF_UNSPEC, out, 4, &n, 0), -EINVAL);
    VCHECK_EQ(vega_dns_lookup(r, ".", AF_UNSPEC, out, 4, &n, 0), -EINVAL);
    VCHECK_EQ(vega_dns_lookup(r, "a..b", AF_UNSPEC, out, 4, &n, 0), -EINVAL);
    VCHECK_EQ(vega_dns_lookup(r, "has space", AF_UNSPEC, out, 4, &n, 0), -EINVAL);
    VCHECK_EQ(vega_dns_lookup(r, "x.test", AF_UNIX, out, 4, &n, 0), -EINVAL);
    VCHECK_EQ(vega_dns_lookup(r, "x.test", AF_INET, out, 0, &n, 0), -EINVAL);
    vega_dns_resolver_free(r);
    unlink(hosts);
}

VTEST(local_names)
{
    vtest_run(body_local_names, 0);
}

VTEST(resolver_options)
{
    vega_dns_resolver *r;
    vega_dns_opts o;
    vega_dns_opts_init(&o);
    o.resolv_conf = temp_file(0, "nameserver 10.0.0.53\nsearch one.test\noptions ndots:2\n");
    o.hosts = "/nonexistent/hosts";
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), 0);
    VCHECK_EQ(r->nns, 1);
    VCHECK_EQ(vega_addr_port(&r->ns[0]), 53);
    VCHECK_EQ(r->nsearch, 1);
    VCHECK_EQ(r->ndots, 2);
    VCHECK_EQ(r->timeout_ns, 5 * VEGA_NS_PER_S);
    VCHECK_EQ(r->attempts, 2);
    VCHECK_EQ(r->edns_payload, VEGA__DNS_EDNS_PAYLOAD);
    vega_dns_resolver_free(r);

    /* Options win over the file; port 0 means 53. */
    vega_addr ns[2];
    VCHECK_EQ(vega_addr_parse(&ns[0], "[::1]:5353", NULL), 0);
    VCHECK_EQ(vega_addr_parse(&ns[1], "127.0.0.1:0", NULL), 0);
    const char *search[] = {"X.test."};
    o.nameservers = ns;
    o.nameservers_len = 2;
    o.search = search;
    o.search_len = 1;
    o.search_set = true;
    o.ndots = 0;
    o.timeout_ms = 300;
    o.attempts = 3;
    o.no_edns = true;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), 0);
    VCHECK_EQ(r->nns, 2);
    VCHECK_EQ(vega_addr_port(&r->ns[0]), 5353);
    VCHECK_EQ(vega_addr_port(&r->ns[1]), 53);
    VCHECK_STR(r->search[0], "x.test");
    VCHECK_EQ(r->ndots, 0);
    VCHECK_EQ(r->timeout_ns, 300 * VEGA_NS_PER_MS);
    VCHECK_EQ(r->attempts, 3);
    VCHECK_EQ(r->edns_payload, 0);
    vega_dns_resolver_free(r);
    unlink(o.resolv_conf);

    /* No file at all: 127.0.0.1:53. */
    vega_dns_opts_init(&o);
    o.resolv_conf = "/nonexistent/resolv.conf";
    o.hosts = "";
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), 0);
    char buf[VEGA_ADDR_STRLEN];
    vega_addr_format(&r->ns[0], buf, sizeof(buf));
    VCHECK_STR(buf, "127.0.0.1:53");
    vega_dns_resolver_free(r);

    /* Out of range. */
    o.ndots = 16;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), -EINVAL);
    o.ndots = -1;
    vega_addr unix_addr;
    VCHECK_EQ(vega_addr_from_unix(&unix_addr, "/tmp/x"), 0);
    o.nameservers = &unix_addr;
    o.nameservers_len = 1;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), -EINVAL);
    o.nameservers_len = VEGA_DNS_MAX_NAMESERVERS + 1;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), -EINVAL);
    o.nameservers_len = 0;
    const char *bad[] = {"a..b"};
    o.search = bad;
    o.search_len = 1;
    o.search_set = true;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), -EINVAL);
    /* The defaults read the system's files. */
    VCHECK_EQ(vega_dns_resolver_new(&r, NULL), 0);
    VCHECK(r->nns >= 1);
    vega_dns_resolver_free(r);
}

/* ---- a fake server --------------------------------------------------------------------------- */

/* Answers over UDP and TCP on one port of 127.0.0.1, by name:
 *   a.fake       A 10.0.0.1 (TTL 60); AAAA: NODATA with an SOA (MINIMUM 60)
 *   both.fake    A 10.0.0.1, AAAA 2001:db8::1
 *   tc.fake      UDP: TC=1 and no records; TCP: A 10.0.0.1..3
 *   short.fake   A 10.0.0.2, TTL 1
 *   mute6.fake   A 10.0.0.2; AAAA is never answered
 *   spoof.fake   first a reply with another ID, then one for another question, then the truth
 *   noedns.fake  FORMERR (no OPT) to a query with EDNS; A 10.0.0.3 to one without
 *   bad.fake     an A record with 5 octets of rdata
 *   host.b.test  A 10.0.0.4
 *   anything else: NXDOMAIN with an SOA (TTL and MINIMUM 3600)
 * In SERVFAIL mode every answer is SERVFAIL. Query names are logged in arrival order. */
struct fake {
    vega_sock *udp, *tcp;
    vega_addr addr;
    bool servfail;
    atomic_int udp_n, tcp_n;
    char log[64][64];
    atomic_int nlog;
    vega_task *t_udp, *t_tcp;
};

struct reply {
    uint8_t b[2048];
    size_t n;
};

static void r16(struct reply *r, unsigned v)
{
    r->b[r->n++] = (uint8_t)(v >> 8);
    r->b[r->n++] = (uint8_t)v;
}
static void r32(struct reply *r, uint32_t v)
{
    r16(r, v >> 16);
    r16(r, v & 0xFFFF);
}
static void rrec(struct reply *r, unsigned type, uint32_t ttl, const void *rd, unsigned len)
{
    r16(r, 0xC00C);
    r16(r, type);
    r16(r, 1);
    r32(r, ttl);
    r16(r, len);
    memcpy(r->b + r->n, rd, len);
    r->n += len;
}
static void rsoa(struct reply *r, uint32_t ttl, uint32_t minimum)
{
    r16(r, 0xC00C);
    r16(r, VEGA__DNS_T_SOA);
    r16(r, 1);
    r32(r, ttl);
    r16(r, 2 + 20);
    r->b[r->n++] = 0; /* MNAME, RNAME: the root */
    r->b[r->n++] = 0;
    for (int i = 0; i < 4; i++)
        r32(r, 1);
    r32(r, minimum);
}

/* Lowercase dotted text of a wire name. */
static void wire_text(const uint8_t *w, char *out, size_t cap)
{
    size_t n = 0;
    while (*w && n + 1 < cap) {
        unsigned l = *w++;
        if (n)
            out[n++] = '.';
        for (unsigned i = 0; i < l && n + 1 < cap; i++) {
            char c = (char)w[i];
            out[n++] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
        }
        w += l;
    }
    out[n] = '\0';
}

static void fake_log(struct fake *f, const char *name, uint16_t qtype)
{
    int i = atomic_fetch_add(&f->nlog, 1);
    if (i < 64 && snprintf(f->log[i], sizeof(f->log[i]), "%s/%s", name,
                           qtype == VEGA__DNS_T_A ? "A" : "AAAA") < 0)
        f->log[i][0] = 0;
}

/* Builds the answer to query (len bytes) into r, by name; logs UDP queries. */
static void fake_answer(struct fake *f, const uint8_t *query, size_t len, bool tcp, struct reply *r,
                        char *name, size_t cap, int *extra_ptr)
{
    struct vega__dns_question q;
    r->n = 0;
    *extra_ptr = 0;
    if (vega__dns_question_read(query, len, &q) < 0)
        return;
    wire_text(q.qname, name, cap);
    if (!tcp)
        fake_log(f, name, q.qtype);
    bool has_opt = query[10] || query[11];
    size_t qend = VEGA__DNS_HDR_LEN + q.qname_len + 4;
    memcpy(r->b, query, qend);
    r->n = qend;
    unsigned flags = 0x8180, an = 0, ns = 0;
    static const uint8_t a1[4] = {10, 0, 0, 1}, a2[4] = {10, 0, 0, 2}, a3[4] = {10, 0, 0, 3},
                         a4[4] = {10, 0, 0, 4};
    static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
    bool is_a = q.qtype == VEGA__DNS_T_A;
    if (f->servfail) {
        flags |= VEGA__DNS_RC_SERVFAIL;
    } else if (strcmp(name, "a.fake") == 0 || strcmp(name, "spoof.fake") == 0) {
        if (is_a) {
            rrec(r, VEGA__DNS_T_A, 60, a1, 4);
            an = 1;
        } else {
            rsoa(r, 600, 60);
            ns = 1;
        }
        if (strcmp(name, "spoof.fake") == 0)
            *extra_ptr = 1;
    } else if (strcmp(name, "mute6.fake") == 0) {
        if (!is_a) {
            r->n = 0; /* never answered */
            return;
        }
        rrec(r, VEGA__DNS_T_A, 60, a2, 4);
        an = 1;
    } else if (strcmp(name, "both.fake") == 0) {
        if (is_a)
            rrec(r, VEGA__DNS_T_A, 60, a1, 4);
        else
            rrec(r, VEGA__DNS_T_AAAA, 60, v6, 16);
        an = 1;
    } else if (strcmp(name, "tc.fake") == 0 && is_a) {
        if (!tcp) {
            flags |= 0x0200;
        } else {
            rrec(r, VEGA__DNS_T_A, 60, a1, 4);
            rrec(r, VEGA__DNS_T_A, 60, a2, 4);
            rrec(r, VEGA__DNS_T_A, 60, a3, 4);
            an = 3;
        }
    } else if (strcmp(name, "short.fake") == 0 && is_a) {
        rrec(r, VEGA__DNS_T_A, 1, a2, 4);
        an = 1;
    } else if (strcmp(name, "noedns.fake") == 0 && is_a) {
        if (has_opt) {
            flags |= VEGA__DNS_RC_FORMERR;
        } else {
            rrec(r, VEGA__DNS_T_A, 60, a3, 4);
            an = 1;
        }
    } else if (strcmp(name, "bad.fake") == 0 && is_a) {
        rrec(r, VEGA__DNS_T_A, 60, "\1\2\3\4\5", 5);
        an = 1;
    } else if (strcmp(name, "host.b.test") == 0 && is_a) {
        rrec(r, VEGA__DNS_T_A, 60, a4, 4);
        an = 1;
    } else {
        flags |= VEGA__DNS_RC_NXDOMAIN;
        rsoa(r, 3600, 3600);
        ns = 1;
    }
    r->b[2] = (uint8_t)(flags >> 8);
    r->b[3] = (uint8_t)flags;
    r->b[6] = 0;
    r->b[7] = (uint8_t)an;
    r->b[8] = 0;
    r->b[9] = (uint8_t)ns;
    r->b[10] = r->b[11] = 0;
}

static void *fake_udp(void *arg)
{
    struct fake *f = arg;
    uint8_t q[1500];
    for (;;) {
        vega_addr from;
        vega_ssize n = vega_udp_recv_from(f->udp, q, sizeof(q), &from, VEGA_DEADLINE_NEVER);
        if (n == -ECANCELED)
            return NULL;
        if (n < VEGA__DNS_HDR_LEN)
            continue;
        atomic_fetch_add(&f->udp_n, 1);
        struct reply r;
        char name[256];
        int spoof;
        fake_answer(f, q, (size_t)n, false, &r, name, sizeof(name), &spoof);
        if (!r.n)
            continue;
        if (spoof) {
            /* Wrong ID, then right ID with another question: both must be ignored. */
            struct reply s = r;
            s.b[0] ^= 0x55;
            vega_udp_send_to(f->udp, s.b, s.n, &from, VEGA_DEADLINE_NEVER);
            s = r;
            s.b[VEGA__DNS_HDR_LEN + 1] = 'x';
            vega_udp_send_to(f->udp, s.b, s.n, &from, VEGA_DEADLINE_NEVER);
        }
        vega_udp_send_to(f->udp, r.b, r.n, &from, VEGA_DEADLINE_NEVER);
    }
}

static bool read_n(vega_sock *s, uint8_t *b, size_t n)
{
    for (size_t got = 0; got < n;) {
        vega_ssize k = vega_sock_read(s, b + got, n - got, vega_deadline_in_ms(2000));
        if (k <= 0)
            return false;
        got += (size_t)k;
    }
    return true;
}

static void *fake_tcp(void *arg)
{
    struct fake *f = arg;
    for (;;) {
        vega_sock *c;
        if (vega_tcp_accept(f->tcp, &c, NULL, VEGA_DEADLINE_NEVER) < 0)
            return NULL;
        uint8_t len[2], q[1500];
        while (read_n(c, len, 2)) {
            size_t n = (size_t)len[0] << 8 | len[1];
            if (n > sizeof(q) || !read_n(c, q, n))
                break;
            atomic_fetch_add(&f->tcp_n, 1);
            struct reply r;
            char name[256];
            int spoof;
            fake_answer(f, q, n, true, &r, name, sizeof(name), &spoof);
            uint8_t out[2 + sizeof(r.b)];
            out[0] = (uint8_t)(r.n >> 8);
            out[1] = (uint8_t)r.n;
            memcpy(out + 2, r.b, r.n);
            if (vega_sock_write(c, out, 2 + r.n, NULL, vega_deadline_in_ms(2000)) < 0)
                break;
        }
        vega_sock_close(c);
        if (vega_task_is_cancelled())
            return NULL;
    }
}

static void fake_start(struct fake *f, bool servfail)
{
    memset(f, 0, sizeof(*f));
    f->servfail = servfail;
    for (int tries = 0;; tries++) {
        vega_addr any;
        VCHECK_EQ(vega_addr_parse(&any, "127.0.0.1:0", NULL), 0);
        VCHECK_EQ(vega_udp_bind(&f->udp, &any, 0), 0);
        VCHECK_EQ(vega_sock_local_addr(f->udp, &f->addr), 0);
        if (vega_tcp_listen(&f->tcp, &f->addr, 0, 0) == 0)
            break;
        vega_sock_close(f->udp);
        VCHECK(tries < 20);
    }
    VCHECK_EQ(vega_task_spawn(&f->t_udp, fake_udp, f), 0);
    VCHECK_EQ(vega_task_spawn(&f->t_tcp, fake_tcp, f), 0);
}

static void fake_stop(struct fake *f)
{
    vega_task_cancel(f->t_udp);
    vega_task_cancel(f->t_tcp);
    VCHECK_EQ(vega_task_join(f->t_udp, NULL, vega_deadline_in_ms(2000)), 0);
    VCHECK_EQ(vega_task_join(f->t_tcp, NULL, vega_deadline_in_ms(2000)), 0);
    vega_sock_close(f->udp);
    vega_sock_close(f->tcp);
}

static struct fake F, F2;

/* ---- lookups against the fake server ------------------------------------------------------ */

static void body_fake_basic(void)
{
    fake_start(&F, false);
    vega_dns_resolver *r = resolver_for(&F.addr, NULL, 500, 2);
    vega_addr out[8];
    size_t n;
    VCHECK_EQ(vega_dns_lookup(r, "both.fake", AF_UNSPEC, out, 8, &n, vega_deadline_in_ms(2000)), 0);
    VCHECK_EQ(n, 2);
    addr_check(&out[0], "2001:db8::1"); /* IPv6 first */
    addr_check(&out[1], "10.0.0.1");
    VCHECK_EQ(stats(r).udp_queries, 2); /* A and AAAA in parallel from one socket */
    VCHECK_EQ(atomic_load(&F.udp_n), 2);

    /* max 1: the IPv6 one. */
    VCHECK_EQ(vega_dns_lookup(r, "both.fake", AF_UNSPEC, out, 1, &n, vega_deadline_in_ms(2000)), 0);
    VCHECK_EQ(n, 1);
    VCHECK_EQ(vega_addr_family(&out[0]), AF_INET6);

    /* A only, and NODATA for AAAA. */
    VCHECK_EQ(vega_dns_lookup(r, "a.fake", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)), 0);
    VCHECK_EQ(n, 1);
    addr_check(&out[0], "10.0.0.1");
    VCHECK_EQ(vega_dns_lookup(r, "a.fake", AF_INET6, out, 8, &n, vega_deadline_in_ms(2000)),
              VEGA_ERR_DNS_NO_ADDRESS);
    VCHECK_EQ(n, 0);
    VCHECK_EQ(vega_dns_lookup(r, "a.fake", AF_UNSPEC, out, 8, &n, vega_deadline_in_ms(2000)), 0);
    VCHECK_EQ(n, 1);

    /* NXDOMAIN. */
    VCHECK_EQ(vega_dns_lookup(r, "nope.fake", AF_UNSPEC, out, 8, &n, vega_deadline_in_ms(2000)),
              VEGA_ERR_DNS_NOT_FOUND);

    /* Malformed answers: VEGA_ERR_PROTO once the attempts are spent. */
    VCHECK_EQ(vega_dns_lookup(r, "bad.fake", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)),
              VEGA_ERR_PROTO);
    vega_dns_resolver_free(r);
    fake_stop(&F);
}

VTEST(fake_basic)
{
    vtest_run_paused(body_fake_basic);
}

static void body_fake_tcp_fallback(void)
{
    fake_start(&F, false);
    vega_dns_resolver *r = resolver_for(&F.addr, NULL, 500, 1);
    vega_addr out[8];
    size_t n;
    VCHECK_EQ(vega_dns_lookup(r, "tc.fake", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)), 0);
    VCHECK_EQ(n, 3);
    addr_check(&out[2], "10.0.0.3");
    VCHECK_EQ(stats(r).udp_queries, 1);
    VCHECK_EQ(stats(r).tcp_queries, 1);
    VCHECK_EQ(atomic_load(&F.tcp_n), 1);
    vega_dns_resolver_free(r);

    /* tcp_only: straight to TCP. */
    vega_dns_opts o;
    vega_dns_opts_init(&o);
    o.resolv_conf = o.hosts = "";
    o.nameservers = &F.addr;
    o.nameservers_len = 1;
    o.tcp_only = true;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), 0);
    VCHECK_EQ(vega_dns_lookup(r, "both.fake", AF_UNSPEC, out, 8, &n, vega_deadline_in_ms(2000)), 0);
    VCHECK_EQ(n, 2);
    VCHECK_EQ(stats(r).udp_queries, 0);
    VCHECK_EQ(stats(r).tcp_queries, 2);
    vega_dns_resolver_free(r);
    fake_stop(&F);
}

VTEST(fake_tcp_fallback)
{
    vtest_run_paused(body_fake_tcp_fallback);
}

static void body_fake_negative_cache(void)
{
    fake_start(&F, false);
    vega_dns_resolver *r = resolver_for(&F.addr, NULL, 500, 1);
    vega_addr out[8];
    size_t n;
    VCHECK_EQ(vega_dns_lookup(r, "nope.fake", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)),
              VEGA_ERR_DNS_NOT_FOUND);
    VCHECK_EQ(vega_dns_lookup(r, "a.fake", AF_INET6, out, 8, &n, vega_deadline_in_ms(2000)),
              VEGA_ERR_DNS_NO_ADDRESS);
    VCHECK_EQ(vega_dns_lookup(r, "a.fake", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)), 0);
    VCHECK_EQ(stats(r).udp_queries, 3);
    /* RFC 2308: NXDOMAIN and NODATA with an SOA are cached, like the answer. */
    VCHECK_EQ(vega_dns_lookup(r, "nope.fake", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)),
              VEGA_ERR_DNS_NOT_FOUND);
    VCHECK_EQ(vega_dns_lookup(r, "a.fake", AF_INET6, out, 8, &n, vega_deadline_in_ms(2000)),
              VEGA_ERR_DNS_NO_ADDRESS);
    VCHECK_EQ(vega_dns_lookup(r, "a.fake", AF_UNSPEC, out, 8, &n, vega_deadline_in_ms(2000)), 0);
    VCHECK_EQ(n, 1);
    VCHECK_EQ(stats(r).udp_queries, 3);
    VCHECK_EQ(stats(r).cache_hits, 4);
    VCHECK_EQ(atomic_load(&F.udp_n), 3);
    /* Cache hits do not wait: deadline 0 works. */
    VCHECK_EQ(vega_dns_lookup(r, "a.fake", AF_INET, out, 8, &n, 0), 0);
    vega_dns_resolver_clear_cache(r);
    VCHECK_EQ(vega_dns_lookup(r, "a.fake", AF_INET, out, 8, &n, 0), -ETIMEDOUT);
    vega_dns_resolver_free(r);
    fake_stop(&F);
}

VTEST(fake_negative_cache)
{
    vtest_run_paused(body_fake_negative_cache);
}

static void body_fake_ttl_expiry(void)
{
    fake_start(&F, false);
    vega_dns_opts o;
    vega_dns_opts_init(&o);
    o.resolv_conf = o.hosts = "";
    o.nameservers = &F.addr;
    o.nameservers_len = 1;
    o.max_negative_ttl_s = 1; /* caps the SOA's 3600 */
    vega_dns_resolver *r;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), 0);
    vega_addr out[8];
    size_t n;
    /* The cache's clock is the real one (so this case is not on the paused clock). An answer
     * cached at put >= t0 is still there at get <= t1 when t1 - t0 < its 1 s TTL: only then
     * are the second lookups sure to be hits. A machine slow enough to take a second for four
     * loopback lookups sees misses, and the case checks only the expiry below. */
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_dns_lookup(r, "short.fake", AF_INET, out, 8, &n, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(vega_dns_lookup(r, "gone.fake", AF_INET, out, 8, &n, VEGA_DEADLINE_NEVER),
              VEGA_ERR_DNS_NOT_FOUND);
    VCHECK_EQ(vega_dns_lookup(r, "short.fake", AF_INET, out, 8, &n, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(vega_dns_lookup(r, "gone.fake", AF_INET, out, 8, &n, VEGA_DEADLINE_NEVER),
              VEGA_ERR_DNS_NOT_FOUND);
    int asked = atomic_load(&F.udp_n);
    if (vega_now() - t0 < VEGA_NS_PER_S)
        VCHECK_EQ(asked, 2);
    else
        printf("slow machine: %d queries for 4 lookups, caching not checked\n", asked);
    /* Every entry was stored before the sleep: 1.1 s later both have expired. */
    VCHECK_EQ(vega_sleep_ms(1100), 0);
    VCHECK_EQ(vega_dns_lookup(r, "short.fake", AF_INET, out, 8, &n, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(vega_dns_lookup(r, "gone.fake", AF_INET, out, 8, &n, VEGA_DEADLINE_NEVER),
              VEGA_ERR_DNS_NOT_FOUND);
    VCHECK_EQ(atomic_load(&F.udp_n), asked + 2);
    vega_dns_resolver_free(r);
    fake_stop(&F);
}

VTEST(fake_ttl_expiry)
{
    vtest_run(body_fake_ttl_expiry, 0);
}

static void body_fake_search(void)
{
    fake_start(&F, false);
    vega_dns_opts o;
    vega_dns_opts_init(&o);
    o.resolv_conf = o.hosts = "";
    o.nameservers = &F.addr;
    o.nameservers_len = 1;
    const char *search[] = {"a.test", "b.test"};
    o.search = search;
    o.search_len = 2;
    o.search_set = true;
    o.ndots = 2;
    vega_dns_resolver *r;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), 0);
    vega_addr out[8];
    size_t n;

    /* Fewer dots than ndots: the search list first, then the name as given. */
    VCHECK_EQ(vega_dns_lookup(r, "host", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)), 0);
    addr_check(&out[0], "10.0.0.4");
    VCHECK_EQ(atomic_load(&F.nlog), 2);
    VCHECK_STR(F.log[0], "host.a.test/A");
    VCHECK_STR(F.log[1], "host.b.test/A");

    atomic_store(&F.nlog, 0);
    VCHECK_EQ(vega_dns_lookup(r, "x.y", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)),
              VEGA_ERR_DNS_NOT_FOUND);
    VCHECK_EQ(atomic_load(&F.nlog), 3);
    VCHECK_STR(F.log[0], "x.y.a.test/A");
    VCHECK_STR(F.log[1], "x.y.b.test/A");
    VCHECK_STR(F.log[2], "x.y/A");

    /* At least ndots dots: as given first. */
    atomic_store(&F.nlog, 0);
    VCHECK_EQ(vega_dns_lookup(r, "p.q.r", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)),
              VEGA_ERR_DNS_NOT_FOUND);
    VCHECK_EQ(atomic_load(&F.nlog), 3);
    VCHECK_STR(F.log[0], "p.q.r/A");
    VCHECK_STR(F.log[1], "p.q.r.a.test/A");

    /* A trailing dot: only as given. */
    atomic_store(&F.nlog, 0);
    VCHECK_EQ(vega_dns_lookup(r, "abs.", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)),
              VEGA_ERR_DNS_NOT_FOUND);
    VCHECK_EQ(atomic_load(&F.nlog), 1);
    VCHECK_STR(F.log[0], "abs/A");

    /* NODATA on the way is reported when nothing has an address. */
    atomic_store(&F.nlog, 0);
    VCHECK_EQ(vega_dns_lookup(r, "a.fake.", AF_INET6, out, 8, &n, vega_deadline_in_ms(2000)),
              VEGA_ERR_DNS_NO_ADDRESS);
    vega_dns_resolver_free(r);
    fake_stop(&F);
}

VTEST(fake_search)
{
    vtest_run_paused(body_fake_search);
}

static void body_fake_spoof_edns(void)
{
    fake_start(&F, false);
    vega_dns_resolver *r = resolver_for(&F.addr, NULL, 500, 1);
    vega_addr out[8];
    size_t n;
    /* Answers with another ID or question are dropped (RFC 5452 §9.1). */
    VCHECK_EQ(vega_dns_lookup(r, "spoof.fake", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)), 0);
    addr_check(&out[0], "10.0.0.1");
    /* FORMERR without OPT: asked again without EDNS (RFC 6891 §7). */
    VCHECK_EQ(vega_dns_lookup(r, "noedns.fake", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)), 0);
    addr_check(&out[0], "10.0.0.3");
    VCHECK_EQ(stats(r).udp_queries, 3);
    vega_dns_resolver_free(r);
    fake_stop(&F);
}

static void body_fake_partial(void)
{
    /* AAAA is never answered: the A answer is returned when the attempts or dl run out. */
    fake_start(&F, false);
    vega_dns_resolver *r = resolver_for(&F.addr, NULL, 100, 1);
    vega_addr out[8];
    size_t n;
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_dns_lookup(r, "mute6.fake", AF_UNSPEC, out, 8, &n, vega_deadline_in_ms(2000)),
              0);
    VCHECK_EQ(n, 1);
    addr_check(&out[0], "10.0.0.2");
    VCHECK_WAITED(t0, 100); /* the one attempt's timeout, not the deadline */
    VCHECK_EQ(vega_dns_lookup(r, "mute6.fake", AF_INET6, out, 8, &n, vega_deadline_in_ms(2000)),
              -ETIMEDOUT);
    VCHECK_EQ(stats(r).udp_queries, 3);
    vega_dns_resolver_free(r);

    /* Long timeouts: the deadline ends the wait, during the first attempt. */
    r = resolver_for(&F.addr, NULL, 5000, 2);
    t0 = vega_now();
    VCHECK_EQ(vega_dns_lookup(r, "mute6.fake", AF_UNSPEC, out, 8, &n, vega_deadline_in_ms(150)), 0);
    VCHECK_EQ(n, 1);
    VCHECK_WAITED(t0, 150);
    VCHECK_EQ(stats(r).udp_queries, 2);
    vega_dns_resolver_free(r);
    fake_stop(&F);
}

VTEST(fake_partial)
{
    vtest_run_paused(body_fake_partial);
}

VTEST(fake_spoof_edns)
{
    vtest_run_paused(body_fake_spoof_edns);
}

static void body_fake_failover(void)
{
    fake_start(&F, true); /* SERVFAIL for everything */
    fake_start(&F2, false);
    vega_addr dead;
    {
        vega_sock *tmp;
        vega_addr any;
        VCHECK_EQ(vega_addr_parse(&any, "127.0.0.1:0", NULL), 0);
        VCHECK_EQ(vega_udp_bind(&tmp, &any, 0), 0);
        VCHECK_EQ(vega_sock_local_addr(tmp, &dead), 0);
        vega_sock_close(tmp);
    }
    vega_dns_opts o;
    vega_dns_opts_init(&o);
    o.resolv_conf = o.hosts = "";
    vega_addr ns[3] = {dead, F.addr, F2.addr};
    o.nameservers = ns;
    o.nameservers_len = 3;
    o.timeout_ms = 1000;
    o.attempts = 1;
    vega_dns_resolver *r;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), 0);
    vega_addr out[8];
    size_t n;
    /* The dead server refuses, the second fails: the third answers, without waiting (paused
     * clock: no per-server timeout ran out). */
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_dns_lookup(r, "both.fake", AF_UNSPEC, out, 8, &n, vega_deadline_in_ms(2000)), 0);
    VCHECK_EQ(n, 2);
    VCHECK(ms_since(t0) < 1000);
    VCHECK_EQ(atomic_load(&F.udp_n), 2);
    VCHECK_EQ(atomic_load(&F2.udp_n), 2);
    vega_dns_resolver_free(r);

    /* Only failing servers: SERVFAIL is the most telling error. */
    ns[2] = F.addr;
    o.nameservers_len = 3;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), 0);
    VCHECK_EQ(vega_dns_lookup(r, "both.fake", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)),
              VEGA_ERR_DNS_SERVER);
    vega_dns_resolver_free(r);

    /* Only the dead one: refused. */
    o.nameservers_len = 1;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), 0);
    VCHECK_EQ(vega_dns_lookup(r, "both.fake", AF_INET, out, 8, &n, vega_deadline_in_ms(2000)),
              -ECONNREFUSED);
    vega_dns_resolver_free(r);
    fake_stop(&F);
    fake_stop(&F2);
}

VTEST(fake_failover)
{
    vtest_run_paused(body_fake_failover);
}

/* A server that never answers: per-attempt timeouts, then the caller's deadline. */
static void body_timeout(void)
{
    vega_sock *mute;
    vega_addr any, addr;
    VCHECK_EQ(vega_addr_parse(&any, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_udp_bind(&mute, &any, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(mute, &addr), 0);
    vega_dns_resolver *r = resolver_for(&addr, NULL, 100, 2);
    vega_addr out[4];
    size_t n;
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_dns_lookup(r, "x.test", AF_UNSPEC, out, 4, &n, vega_deadline_in_ms(2000)),
              -ETIMEDOUT);
    VCHECK_WAITED(t0, 200); /* two attempts of 100 ms (paused clock: exactly) */
    VCHECK_EQ(stats(r).udp_queries, 4);

    /* The deadline cuts the attempts short: the first one never ends, no second one. */
    vega_dns_resolver_free(r);
    r = resolver_for(&addr, NULL, 1000, 2);
    t0 = vega_now();
    VCHECK_EQ(vega_dns_lookup(r, "x.test", AF_INET, out, 4, &n, vega_deadline_in_ms(150)),
              -ETIMEDOUT);
    VCHECK_WAITED(t0, 150);
    VCHECK_EQ(stats(r).udp_queries, 1);
    vega_dns_resolver_free(r);
    vega_sock_close(mute);
}

VTEST(timeout)
{
    vtest_run_paused(body_timeout);
}

struct cancel_arg {
    vega_dns_resolver *r;
    int res;
};

static void *lookup_task(void *arg)
{
    struct cancel_arg *a = arg;
    vega_addr out[4];
    size_t n;
    a->res = vega_dns_lookup(a->r, "x.test", AF_UNSPEC, out, 4, &n, VEGA_DEADLINE_NEVER);
    return NULL;
}

static void body_cancel(void)
{
    vega_sock *mute;
    vega_addr any, addr;
    VCHECK_EQ(vega_addr_parse(&any, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_udp_bind(&mute, &any, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(mute, &addr), 0);
    struct cancel_arg a = {resolver_for(&addr, NULL, 5000, 2), 1};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, lookup_task, &a), 0);
    /* Paused clock: the sleep ends only once every task waits, so the lookup has sent its
     * queries and waits for the mute server when the cancel comes. */
    VCHECK_EQ(vega_sleep_ms(30), 0);
    VCHECK_EQ(a.res, 1);
    VCHECK_EQ(stats(a.r).udp_queries, 2);
    vega_tstamp t0 = vega_now();
    vega_task_cancel(t);
    VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(a.res, -ECANCELED);
    VCHECK_EQ(vega_now(), t0); /* the cancel ended it: no timeout had to run out */
    VCHECK_EQ(stats(a.r).udp_queries, 2);
    vega_dns_resolver_free(a.r);
    vega_sock_close(mute);
}

VTEST(cancel)
{
    vtest_run_paused(body_cancel);
}

/* ---- dnsmasq ----------------------------------------------------------------------------- */

static pid_t dm_pid;
static vega_addr dm_addr;

static const char *find_dnsmasq(void)
{
    static char path[512];
    const char *env = getenv("PATH");
    char dirs[1024];
    snprintf(dirs, sizeof(dirs), "%s:/usr/sbin:/sbin:/usr/local/sbin", env ? env : "/usr/bin");
    for (char *save, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(path, sizeof(path), "%s/dnsmasq", d);
        if (access(path, X_OK) == 0)
            return path;
    }
    return NULL;
}

/* Asks 127.0.0.1:port for example.test A with a plain blocking socket (outside any runtime). */
static bool dm_ready(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {0, 50000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const uint8_t q[] = {0x12, 0x34, 1,   0,   0,   1, 0,   0,   0,   0,   0, 0, 7, 'e', 'x',
                                'a',  'm',  'p', 'l', 'e', 4, 't', 'e', 's', 't', 0, 0, 1, 0,   1};
    uint8_t buf[512];
    bool ok = sendto(fd, q, sizeof(q), 0, (struct sockaddr *)&sin, sizeof(sin)) > 0 &&
              recv(fd, buf, sizeof(buf), 0) > 12;
    close(fd);
    return ok;
}

/* Starts dnsmasq on a free port of 127.0.0.1 (from the main thread, before the runtime: the
 * child dies with this thread through PR_SET_PDEATHSIG). Skips the case without dnsmasq. */
static void dm_start(void)
{
    const char *bin = find_dnsmasq();
    if (!bin)
        vtest_skip("dnsmasq not installed (Debian package dnsmasq-base)");
    struct passwd *pw = getpwuid(getuid());
    struct group *gr = getgrgid(getgid());
    char user[128], group[128];
    snprintf(user, sizeof(user), "--user=%s", pw ? pw->pw_name : "root");
    snprintf(group, sizeof(group), "--group=%s", gr ? gr->gr_name : "root");
    for (int tries = 0; tries < 10; tries++) {
        /* dnsmasq binds UDP and TCP on one port: take it below the ephemeral range (where
         * other tests' connections do not land), free for both. */
        uint16_t port = (uint16_t)(20000 + ((unsigned)getpid() * 7919u + (unsigned)tries * 613u +
                                            (unsigned)vega_now()) %
                                               10000u);
        bool free_both = true;
        static const int types[2] = {SOCK_DGRAM, SOCK_STREAM};
        for (int k = 0; k < 2 && free_both; k++) {
            int fd = socket(AF_INET, types[k], 0);
            struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
            sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            free_both = bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
            close(fd);
        }
        if (!free_both)
            continue;
        char portarg[32];
        snprintf(portarg, sizeof(portarg), "--port=%u", port);
        /* big.test: 120 A records, more than 1232 bytes: truncated over UDP. */
        static char big[120][40];
        const char *argv[160];
        int ac = 0;
        argv[ac++] = bin;
        argv[ac++] = "--no-daemon";
        argv[ac++] = "--no-resolv";
        argv[ac++] = "--no-hosts";
        argv[ac++] = "--keep-in-foreground";
        argv[ac++] = portarg;
        argv[ac++] = "--listen-address=127.0.0.1";
        argv[ac++] = "--bind-interfaces";
        argv[ac++] = "--pid-file=";
        argv[ac++] = user;
        argv[ac++] = group;
        argv[ac++] = "--local-ttl=60";
        argv[ac++] = "--local=/test/";
        argv[ac++] = "--address=/example.test/127.0.0.5";
        argv[ac++] = "--host-record=v6.test,::1";
        argv[ac++] = "--host-record=both.test,127.0.0.7,::7";
        for (int i = 0; i < 120; i++) {
            snprintf(big[i], sizeof(big[i]), "--host-record=big.test,10.9.%d.%d", i / 200,
                     i % 200 + 1);
            argv[ac++] = big[i];
        }
        argv[ac] = NULL;
        char dm_log[64];
        snprintf(dm_log, sizeof(dm_log), "/tmp/vega-dnsmasq-%d.log", (int)getpid());
        pid_t parent = getpid();
        pid_t pid = fork();
        VCHECK(pid >= 0);
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(127);
            int devnull = open("/dev/null", O_RDWR);
            int log = open(dm_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(log >= 0 ? log : devnull, 2);
            execv(bin, (char *const *)argv);
            _exit(127);
        }
        /* A refused probe returns at once, so count time, not tries; and be patient: a loaded
         * machine may start it slowly (a dnsmasq that exits is noticed at once below). */
        for (vega_tstamp t0 = vega_now(); vega_now() - t0 < 60 * VEGA_NS_PER_S; usleep(10000)) {
            if (dm_ready(port)) {
                unlink(dm_log);
                dm_pid = pid;
                VCHECK_EQ(vega_addr_from_ip(&dm_addr, "127.0.0.1", port), 0);
                return;
            }
            int st;
            if (waitpid(pid, &st, WNOHANG) == pid)
                break; /* port taken meanwhile, say: try another */
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        char msg[512] = "";
        int lfd = open(dm_log, O_RDONLY | O_CLOEXEC);
        if (lfd >= 0) {
            ssize_t k = read(lfd, msg, sizeof(msg) - 1);
            msg[k > 0 ? k : 0] = '\0';
            close(lfd);
        }
        unlink(dm_log);
        fprintf(stderr, "dnsmasq on port %u did not start: %s\n", port, msg);
    }
    vtest_fail(__FILE__, __LINE__, "dnsmasq did not start");
}

static void dm_stop(void)
{
    if (dm_pid > 0) {
        kill(dm_pid, SIGCONT);
        kill(dm_pid, SIGKILL);
        waitpid(dm_pid, NULL, 0);
        dm_pid = 0;
    }
}

/* dnsmasq runs on a CPU the test does not control: a resolver that waits for it as long as a
 * loaded machine may need (a lost datagram is asked again), and no overall deadline. */
#define DM_TIMEOUT_MS 3000
#define DM_ATTEMPTS   3

static void body_dnsmasq_lookups(void)
{
    vega_dns_resolver *r = resolver_for(&dm_addr, NULL, DM_TIMEOUT_MS, DM_ATTEMPTS);
    vega_addr out[4];
    size_t n;
    vega_deadline dl = VEGA_DEADLINE_NEVER;
    VCHECK_EQ(vega_dns_lookup(r, "example.test", AF_INET, out, 4, &n, dl), 0);
    VCHECK_EQ(n, 1);
    addr_check(&out[0], "127.0.0.5");
    VCHECK_EQ(vega_dns_lookup(r, "www.Example.Test", AF_UNSPEC, out, 4, &n, dl), 0);
    VCHECK_EQ(n, 1);
    addr_check(&out[0], "127.0.0.5");
    VCHECK_EQ(vega_dns_lookup(r, "v6.test", AF_INET6, out, 4, &n, dl), 0);
    VCHECK_EQ(n, 1);
    addr_check(&out[0], "::1");
    VCHECK_EQ(vega_dns_lookup(r, "v6.test", AF_INET, out, 4, &n, dl), VEGA_ERR_DNS_NO_ADDRESS);
    VCHECK_EQ(vega_dns_lookup(r, "both.test", AF_UNSPEC, out, 4, &n, dl), 0);
    VCHECK_EQ(n, 2);
    addr_check(&out[0], "::7");
    addr_check(&out[1], "127.0.0.7");
    VCHECK_EQ(vega_dns_lookup(r, "nope.test", AF_UNSPEC, out, 4, &n, dl), VEGA_ERR_DNS_NOT_FOUND);
    /* No upstream for other zones: dnsmasq answers REFUSED. */
    VCHECK_EQ(vega_dns_lookup(r, "nowhere.zzz", AF_INET, out, 4, &n, dl), VEGA_ERR_DNS_SERVER);
    vega_dns_resolver_free(r);
}

VTEST(dnsmasq_lookups)
{
    dm_start();
    vtest_run(body_dnsmasq_lookups, 0);
    dm_stop();
}

static void body_dnsmasq_tcp(void)
{
    vega_dns_resolver *r = resolver_for(&dm_addr, NULL, DM_TIMEOUT_MS, DM_ATTEMPTS);
    vega_addr out[64];
    size_t n;
    VCHECK_EQ(vega_dns_lookup(r, "big.test", AF_INET, out, 64, &n, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(n, VEGA__DNS_MAX_ADDRS);
    VCHECK_EQ(stats(r).udp_queries, 1);
    VCHECK_EQ(stats(r).tcp_queries, 1);
    vega_dns_resolver_free(r);
}

VTEST(dnsmasq_tcp_fallback)
{
    dm_start();
    vtest_run(body_dnsmasq_tcp, 0);
    dm_stop();
}

static void body_dnsmasq_cache(void)
{
    vega_dns_resolver *r = resolver_for(&dm_addr, NULL, DM_TIMEOUT_MS, 1);
    vega_addr out[4];
    size_t n;
    VCHECK_EQ(vega_dns_lookup(r, "example.test", AF_INET, out, 4, &n, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(vega_dns_lookup(r, "both.test", AF_UNSPEC, out, 4, &n, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(stats(r).udp_queries, 3);
    dm_stop(); /* the server is gone: only the cache can answer now */
    /* Deadline 0: a lookup that would have to ask (or wait) fails at once with -ETIMEDOUT,
     * and the counters show that nothing was asked. */
    VCHECK_EQ(vega_dns_lookup(r, "EXAMPLE.test.", AF_INET, out, 4, &n, 0), 0);
    addr_check(&out[0], "127.0.0.5");
    VCHECK_EQ(vega_dns_lookup(r, "both.test", AF_UNSPEC, out, 4, &n, 0), 0);
    VCHECK_EQ(n, 2);
    VCHECK_EQ(stats(r).udp_queries, 3);
    VCHECK_EQ(stats(r).cache_hits, 3);
    /* A name not cached: the dead server refuses (at once: no timeout could end it). */
    VCHECK_EQ(vega_dns_lookup(r, "v6.test", AF_INET6, out, 4, &n, VEGA_DEADLINE_NEVER),
              -ECONNREFUSED);
    vega_dns_resolver_free(r);
}

VTEST(dnsmasq_cache)
{
    dm_start();
    vtest_run(body_dnsmasq_cache, 0);
}

static void body_dnsmasq_stopped(void)
{
    /* First, with patience, that the server answers at all. */
    vega_dns_resolver *r = resolver_for(&dm_addr, NULL, DM_TIMEOUT_MS, DM_ATTEMPTS);
    vega_addr out[4];
    size_t n;
    VCHECK_EQ(vega_dns_lookup(r, "example.test", AF_INET, out, 4, &n, VEGA_DEADLINE_NEVER), 0);
    vega_dns_resolver_free(r);
    kill(dm_pid, SIGSTOP); /* alive but mute: queries wait in its socket */

    /* Each attempt gets its 150 ms and no more: two attempts, two queries, and an overall
     * deadline far away (were the per-attempt timeout ignored, the one query would wait for
     * it). How late a loaded machine runs the task after 300 ms is not checked. */
    r = resolver_for(&dm_addr, NULL, 150, 2);
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_dns_lookup(r, "v6.test", AF_INET6, out, 4, &n, vega_deadline_in_ms(60000)),
              -ETIMEDOUT);
    VCHECK_WAITED(t0, 300);
    VCHECK_EQ(stats(r).udp_queries, 2);

    /* The deadline cuts the attempts short: A and AAAA once, never the second attempt. */
    t0 = vega_now();
    VCHECK_EQ(vega_dns_lookup(r, "both.test", AF_UNSPEC, out, 4, &n, vega_deadline_in_ms(100)),
              -ETIMEDOUT);
    VCHECK_WAITED(t0, 100);
    VCHECK_EQ(stats(r).udp_queries, 4);
    vega_dns_resolver_free(r);
}

VTEST(dnsmasq_stopped_timeout)
{
    dm_start();
    vtest_run(body_dnsmasq_stopped, 0);
    dm_stop();
}

/* Many tasks on four workers share one resolver and its cache. */
static vega_dns_resolver *shared_r;
static atomic_int shared_ok;

static void *parallel_task(void *arg)
{
    static const char *names[] = {"example.test", "v6.test", "both.test", "a%d.example.test"};
    unsigned i = (unsigned)(uintptr_t)arg;
    char name[64];
    if (i % 4 == 3)
        snprintf(name, sizeof(name), "a%d.example.test", (int)i);
    else
        snprintf(name, sizeof(name), "%s", names[i % 4]);
    vega_addr out[4];
    size_t n;
    for (int k = 0; k < 3; k++) {
        int r = vega_dns_lookup(shared_r, name, AF_UNSPEC, out, 4, &n, VEGA_DEADLINE_NEVER);
        if (r != 0 || n == 0)
            return NULL;
    }
    atomic_fetch_add(&shared_ok, 1);
    return NULL;
}

static void body_dnsmasq_parallel(void)
{
    vega_dns_opts o;
    vega_dns_opts_init(&o);
    o.resolv_conf = o.hosts = "";
    o.nameservers = &dm_addr;
    o.nameservers_len = 1;
    o.timeout_ms = DM_TIMEOUT_MS;
    o.attempts = DM_ATTEMPTS;
    o.cache_entries = 16; /* small: eviction runs too */
    VCHECK_EQ(vega_dns_resolver_new(&shared_r, &o), 0);
    enum {
        N = 64
    };
    vega_task *t[N];
    for (unsigned i = 0; i < N; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], parallel_task, (void *)(uintptr_t)i), 0);
    for (unsigned i = 0; i < N; i++)
        VCHECK_EQ(vega_task_join(t[i], NULL, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(atomic_load(&shared_ok), N);
    VCHECK(stats(shared_r).cache_hits > 0);
    vega_dns_resolver_free(shared_r);
}

VTEST(dnsmasq_parallel)
{
    dm_start();
    vtest_run(body_dnsmasq_parallel, 4);
    dm_stop();
}
