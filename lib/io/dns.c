/* SPDX-License-Identifier: MIT */
/* The stub resolver: hosts first, then the search list, A and AAAA in parallel over UDP with
 * a TCP fallback on truncation (RFC 1035 §4.2, RFC 7766 §5), retries across servers, and the
 * TTL cache (RFC 2308 for negative answers). */
#include <ctype.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "dns_int.h"

#define DEFAULT_CACHE_ENTRIES 512
#define DEFAULT_MAX_TTL       86400
#define DEFAULT_MAX_NEG_TTL   300
#define UDP_BUF               4096 /* above the 1232 we advertise: a server that ignores it still parses */

void vega_dns_opts_init_versioned(vega_dns_opts *o, int opts_version)
{
    if (opts_version != VEGA_DNS_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_dns_opts_init: options of another libvega (version %d)", opts_version);
    memset(o, 0, sizeof(*o));
    o->ndots = -1;
}

/* ---- randomness ----------------------------------------------------------------------------- */

/* Unpredictable bytes for query IDs (RFC 5452 §4.3); the source port is the kernel's random
 * ephemeral port of a fresh socket. Falls back to a clock-seeded PRNG without getrandom. */
static void rand_fill(void *p, size_t n)
{
    static __thread uint64_t fallback;
    uint8_t *b = p;
    while (n > 0) {
        ssize_t k = getrandom(b, n, GRND_NONBLOCK);
        if (k > 0) {
            b += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (!fallback)
            fallback = vega__clock_mono() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)&fallback;
        for (; n > 0; n--)
            *b++ = (uint8_t)(vega__rand_next(&fallback) >> 56);
    }
}

static uint16_t rand16(void)
{
    uint16_t v;
    rand_fill(&v, sizeof(v));
    return v;
}

/* ---- resolver ------------------------------------------------------------------------------- */

/* Lowercases name into out without a trailing dot; *absolute tells whether it had one.
 * Returns false for "", ".", or a name longer than 253. */
static bool name_lower(char out[VEGA__DNS_TEXT_MAX + 1], const char *name, bool *absolute)
{
    size_t n = strlen(name);
    *absolute = n > 0 && name[n - 1] == '.';
    if (*absolute)
        n--;
    if (n == 0 || n > VEGA__DNS_TEXT_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)name[i]);
    out[n] = '\0';
    return true;
}

static bool name_valid(const char *name)
{
    uint8_t wire[VEGA__DNS_NAME_MAX];
    return vega__dns_name_to_wire(wire, name) > 1;
}

static int load_conf(struct vega__dns_conf *conf, const char *path)
{
    vega__dns_conf_defaults(conf);
    if (!*path)
        return 0;
    char *text;
    size_t len;
    int r = vega__dns_file_read(path, &text, &len);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    vega__dns_conf_parse(conf, text, len);
    free(text);
    return 0;
}

static int load_hosts(struct vega__dns_hosts *h, const char *path)
{
    if (!*path)
        return 0;
    char *text;
    size_t len;
    int r = vega__dns_file_read(path, &text, &len);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    r = vega__dns_hosts_parse(h, text, len);
    free(text);
    return r;
}

static int set_nameservers(vega_dns_resolver *r, const vega_dns_opts *o,
                           const struct vega__dns_conf *conf)
{
    if (o->nameservers_len) {
        for (size_t i = 0; i < o->nameservers_len; i++) {
            vega_addr a = o->nameservers[i];
            int f = vega_addr_family(&a);
            if (f != AF_INET && f != AF_INET6)
                return -EINVAL;
            if (vega_addr_port(&a) == 0)
                vega_addr_set_port(&a, 53);
            r->ns[r->nns++] = a;
        }
    } else if (conf->nns) {
        memcpy(r->ns, conf->ns, conf->nns * sizeof(r->ns[0]));
        r->nns = conf->nns;
    } else {
        /* resolv.conf(5): without nameserver lines, the server on the local machine. */
        (void)vega_addr_from_ip(&r->ns[0], "127.0.0.1", 53);
        r->nns = 1;
    }
    return 0;
}

static int set_search(vega_dns_resolver *r, const vega_dns_opts *o,
                      const struct vega__dns_conf *conf)
{
    if (o->search_set) {
        for (size_t i = 0; i < o->search_len; i++) {
            bool abs;
            if (!o->search[i] || !name_lower(r->search[r->nsearch], o->search[i], &abs) ||
                !name_valid(r->search[r->nsearch]))
                return -EINVAL;
            r->nsearch++;
        }
    } else if (conf->search_set) {
        memcpy(r->search, conf->search, conf->nsearch * sizeof(r->search[0]));
        r->nsearch = conf->nsearch;
    } else {
        /* resolv.conf(5): the domain is the host name's part after the first dot. */
        char host[256];
        bool abs;
        if (gethostname(host, sizeof(host)) < 0)
            return 0;
        host[sizeof(host) - 1] = '\0';
        const char *dot = strchr(host, '.');
        if (dot && name_lower(r->search[0], dot + 1, &abs) && name_valid(r->search[0]))
            r->nsearch = 1;
    }
    return 0;
}

static int check_options(const vega_dns_opts *o)
{
    if ((o->nameservers_len && !o->nameservers) || o->nameservers_len > VEGA_DNS_MAX_NAMESERVERS ||
        (o->search_set && o->search_len && !o->search) || o->search_len > VEGA__DNS_MAXSEARCH ||
        o->ndots > VEGA__DNS_MAX_NDOTS || o->attempts > VEGA__DNS_MAX_ATTEMPTS)
        return -EINVAL;
    return 0;
}

int vega_dns_resolver_new_versioned(vega_dns_resolver **out, const vega_dns_opts *opts,
                                    int opts_version)
{
    if (opts_version != VEGA_DNS_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    if (!out)
        return -EINVAL;
    *out = NULL;
    vega_dns_opts def;
    if (!opts) {
        vega_dns_opts_init(&def);
        opts = &def;
    }
    int e = check_options(opts);
    if (e < 0)
        return e;
    struct vega__dns_conf conf;
    e = load_conf(&conf, opts->resolv_conf ? opts->resolv_conf : "/etc/resolv.conf");
    if (e < 0)
        return e;

    vega_dns_resolver *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    if ((e = set_nameservers(r, opts, &conf)) < 0 || (e = set_search(r, opts, &conf)) < 0)
        goto fail;
    r->ndots = opts->ndots >= 0 ? (unsigned)opts->ndots : conf.ndots;
    r->attempts = opts->attempts ? opts->attempts : conf.attempts;
    r->timeout_ns = opts->timeout_ms ? (uint64_t)opts->timeout_ms * VEGA_NS_PER_MS
                                     : (uint64_t)conf.timeout_s * VEGA_NS_PER_S;
    r->rotate = conf.rotate;
    r->tcp_only = opts->tcp_only || conf.use_vc;
    r->edns_payload = opts->no_edns ? 0 : VEGA__DNS_EDNS_PAYLOAD;
    r->max_ttl = opts->max_ttl_s ? opts->max_ttl_s : DEFAULT_MAX_TTL;
    r->max_neg_ttl = opts->max_negative_ttl_s ? opts->max_negative_ttl_s : DEFAULT_MAX_NEG_TTL;
    r->cache_on = !opts->no_cache;
    if (r->cache_on) {
        uint64_t seed;
        rand_fill(&seed, sizeof(seed));
        size_t cap = opts->cache_entries ? opts->cache_entries : DEFAULT_CACHE_ENTRIES;
        if ((e = vega__dns_cache_init(&r->cache, cap, seed)) < 0)
            goto fail;
    }
    if ((e = load_hosts(&r->hosts, opts->hosts ? opts->hosts : "/etc/hosts")) < 0)
        goto fail;
    *out = r;
    return 0;
fail:
    vega_dns_resolver_free(r);
    return e;
}

void vega_dns_resolver_free(vega_dns_resolver *r)
{
    if (!r)
        return;
    if (r->cache_on)
        vega__dns_cache_fini(&r->cache);
    vega__dns_hosts_fini(&r->hosts);
    free(r);
}

void vega_dns_resolver_clear_cache(vega_dns_resolver *r)
{
    if (r && r->cache_on)
        vega__dns_cache_clear(&r->cache);
}

void vega__dns_resolver_stats(const vega_dns_resolver *r, struct vega__dns_stats *s)
{
    s->udp_queries = atomic_load_explicit(&r->udp_queries, memory_order_relaxed);
    s->tcp_queries = atomic_load_explicit(&r->tcp_queries, memory_order_relaxed);
    s->cache_hits = atomic_load_explicit(&r->cache_hits, memory_order_relaxed);
    s->hosts_hits = atomic_load_explicit(&r->hosts_hits, memory_order_relaxed);
}

static void count(atomic_uint_fast64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* ---- one lookup ----------------------------------------------------------------------------- */

enum qstate {
    Q_IDLE, /* to send to the current server */
    Q_SENT, /* waiting for its UDP answer */
    Q_TCP,  /* truncated: ask the current server over TCP */
    Q_FAIL, /* the current server failed it: next server */
    Q_DONE, /* answered (NOERROR or NXDOMAIN) */
};

struct dq {
    struct vega__dns_question q;
    enum qstate state;
    bool edns;
    bool cached; /* answer came from the cache */
    int err;     /* most telling failure so far */
    size_t pkt_len;
    uint8_t pkt[VEGA__DNS_QUERY_MAX];
    struct vega__dns_answer ans;
};

struct job {
    vega_dns_resolver *r;
    vega_deadline dl;
    size_t nq;
    struct dq q[2]; /* AAAA before A */
    uint8_t buf[UDP_BUF];
};

/* Higher is more telling, for the error reported when no server answered. */
static int err_rank(int e)
{
    switch (e) {
    case 0:
        return 0;
    case VEGA_ERR_DNS_SERVER:
        return 6; /* a server answered SERVFAIL/REFUSED */
    case VEGA_ERR_PROTO:
        return 5;
    case -ETIMEDOUT:
        return 4;
    case -ECONNREFUSED:
        return 2;
    default:
        return 3;
    }
}

static void note_err(struct dq *q, int e)
{
    if (err_rank(e) > err_rank(q->err))
        q->err = e;
}

static bool all_done(const struct job *j)
{
    for (size_t i = 0; i < j->nq; i++)
        if (j->q[i].state != Q_DONE)
            return false;
    return true;
}

static int dq_build(struct job *j, struct dq *q)
{
    vega_ssize n =
        vega__dns_query_write(q->pkt, sizeof(q->pkt), &q->q, q->edns ? j->r->edns_payload : 0);
    if (n < 0)
        return (int)n;
    q->pkt_len = (size_t)n;
    return 0;
}

/* A fresh random ID for each transmission: a late answer to an earlier one is dropped. */
static void dq_new_id(struct dq *q)
{
    q->q.id = rand16();
    q->pkt[0] = (uint8_t)(q->q.id >> 8);
    q->pkt[1] = (uint8_t)q->q.id;
}

/* Acts on a parsed answer for q; returns true when q must be sent again (EDNS dropped). */
static bool dq_answer(struct job *j, struct dq *q, int pr, bool tcp)
{
    if (pr < 0 || (pr == 1 && tcp) || (tcp && q->ans.tc)) {
        note_err(q, VEGA_ERR_PROTO);
        q->state = Q_FAIL;
        return false;
    }
    if (q->ans.tc) {
        q->state = Q_TCP;
        return false;
    }
    switch (q->ans.rcode) {
    case VEGA__DNS_RC_NOERROR:
    case VEGA__DNS_RC_NXDOMAIN:
        q->state = Q_DONE;
        return false;
    case VEGA__DNS_RC_FORMERR:
        /* RFC 6891 §7: a server that answers FORMERR without an OPT does not know EDNS. */
        if (q->edns && !q->ans.has_opt) {
            q->edns = false;
            if (dq_build(j, q) == 0)
                return true;
        }
        note_err(q, VEGA_ERR_PROTO);
        break;
    case VEGA__DNS_RC_SERVFAIL:
    case VEGA__DNS_RC_REFUSED:
        note_err(q, VEGA_ERR_DNS_SERVER);
        break;
    default:
        note_err(q, VEGA_ERR_PROTO);
        break;
    }
    q->state = Q_FAIL;
    return false;
}

/* Marks every query in state `from` failed with e. */
static void fail_state(struct job *j, enum qstate from, int e)
{
    for (size_t i = 0; i < j->nq; i++) {
        if (j->q[i].state == from) {
            note_err(&j->q[i], e);
            j->q[i].state = Q_FAIL;
        }
    }
}

/* Sends q with a fresh ID. Returns 0, or the send's error (q is then failed). */
static int udp_send(struct job *j, vega_sock *s, struct dq *q, vega_deadline end)
{
    dq_new_id(q);
    vega_ssize n = vega_udp_send_to(s, q->pkt, q->pkt_len, NULL, end);
    if (n < 0) {
        note_err(q, (int)n);
        q->state = Q_FAIL;
        return (int)n;
    }
    count(&j->r->udp_queries);
    q->state = Q_SENT;
    return 0;
}

static bool any_state(const struct job *j, enum qstate st)
{
    for (size_t i = 0; i < j->nq; i++)
        if (j->q[i].state == st)
            return true;
    return false;
}

/* One UDP exchange with server ns for the queries in Q_IDLE: a connected socket (a fresh random
 * port, and the kernel drops datagrams from other sources), every query sent, answers matched
 * by ID and question until each is settled or `end`. Returns 0 or -ECANCELED. */
static int exchange_udp(struct job *j, const vega_addr *ns, vega_deadline end)
{
    vega_sock *s;
    int r = vega_udp_connect(&s, ns);
    if (r < 0) {
        fail_state(j, Q_IDLE, r);
        return 0;
    }
    for (size_t i = 0; i < j->nq && r != -ECANCELED; i++) {
        if (j->q[i].state == Q_IDLE)
            r = udp_send(j, s, &j->q[i], end);
        if (r == -ECONNREFUSED) {
            /* The error a connected socket got from an ICMP for an earlier datagram: it is
             * reported once, so it speaks for every query to this server. */
            fail_state(j, Q_IDLE, r);
            fail_state(j, Q_SENT, r);
        }
    }
    while (r != -ECANCELED && any_state(j, Q_SENT)) {
        vega_ssize n = vega_sock_read(s, j->buf, sizeof(j->buf), end);
        if (n < 0) {
            r = (int)n;
            fail_state(j, Q_SENT, r);
            continue;
        }
        int id = vega__dns_msg_id(j->buf, (size_t)n);
        for (size_t i = 0; i < j->nq; i++) {
            struct dq *q = &j->q[i];
            if (q->state != Q_SENT || q->q.id != id)
                continue;
            int pr = vega__dns_response_read(j->buf, (size_t)n, &q->q, &q->ans);
            if (pr == 1)
                continue; /* not this question's (RFC 5452 §9.1): maybe the other's, or noise */
            if (dq_answer(j, q, pr, false))
                r = udp_send(j, s, q, end);
            break;
        }
    }
    vega_sock_close(s);
    return r == -ECANCELED ? r : 0;
}

static vega_ssize read_full(vega_sock *s, uint8_t *buf, size_t len, vega_deadline end)
{
    size_t got = 0;
    while (got < len) {
        vega_ssize n = vega_sock_read(s, buf + got, len - got, end);
        if (n < 0)
            return n;
        if (n == 0)
            return VEGA_ERR_PROTO; /* the server closed mid-message */
        got += (size_t)n;
    }
    return (vega_ssize)got;
}

/* Asks q over TCP (RFC 1035 §4.2.2: a two-octet length before each message, RFC 7766).
 * Returns 0 (q settled or failed) or -ECANCELED. */
static int exchange_tcp(struct job *j, const vega_addr *ns, struct dq *q, vega_deadline end)
{
    for (;;) {
        vega_sock *s;
        int r = vega_tcp_connect(&s, ns, end);
        if (r == -ECANCELED)
            return r;
        if (r < 0) {
            note_err(q, r);
            q->state = Q_FAIL;
            return 0;
        }
        dq_new_id(q);
        uint8_t frame[2 + VEGA__DNS_QUERY_MAX], hdr[2];
        frame[0] = (uint8_t)(q->pkt_len >> 8);
        frame[1] = (uint8_t)q->pkt_len;
        memcpy(frame + 2, q->pkt, q->pkt_len);
        count(&j->r->tcp_queries);
        uint8_t *msg = NULL;
        vega_ssize n = vega_sock_write(s, frame, 2 + q->pkt_len, NULL, end);
        if (n >= 0)
            n = read_full(s, hdr, 2, end);
        if (n >= 0) {
            size_t len = (size_t)hdr[0] << 8 | hdr[1];
            msg = malloc(len ? len : 1);
            n = msg ? read_full(s, msg, len, end) : -ENOMEM;
        }
        vega_sock_close(s);
        bool again = false;
        if (n == -ECANCELED || n == -ENOMEM) {
            free(msg);
            return (int)n;
        }
        if (n < 0) {
            note_err(q, (int)n);
            q->state = Q_FAIL;
        } else {
            int pr = vega__dns_response_read(msg, (size_t)n, &q->q, &q->ans);
            again = dq_answer(j, q, pr, true);
        }
        free(msg);
        if (!again)
            return 0;
    }
}

/* Asks the servers until every query is answered, the attempts run out, or the deadline.
 * Returns 0 (inspect the queries), -ETIMEDOUT (dl passed), -ECANCELED, -ENOMEM. */
static int ask_servers(struct job *j)
{
    vega_dns_resolver *r = j->r;
    unsigned start = 0;
    if (r->rotate)
        start = atomic_fetch_add_explicit(&r->next_ns, 1, memory_order_relaxed);
    for (unsigned a = 0; a < r->attempts; a++) {
        for (size_t k = 0; k < r->nns; k++) {
            if (all_done(j))
                return 0;
            const vega_addr *ns = &r->ns[(start + k) % r->nns];
            for (size_t i = 0; i < j->nq; i++)
                if (j->q[i].state != Q_DONE)
                    j->q[i].state = r->tcp_only ? Q_TCP : Q_IDLE;
            int e;
            if (!r->tcp_only &&
                (e = exchange_udp(j, ns, VEGA__MIN(vega_deadline_in_ns(r->timeout_ns), j->dl))) < 0)
                return e;
            for (size_t i = 0; i < j->nq; i++) {
                if (j->q[i].state != Q_TCP)
                    continue;
                vega_deadline end = VEGA__MIN(vega_deadline_in_ns(r->timeout_ns), j->dl);
                if ((e = exchange_tcp(j, ns, &j->q[i], end)) < 0)
                    return e;
            }
            if (!all_done(j) && vega_now() >= j->dl)
                return -ETIMEDOUT;
        }
    }
    return 0;
}

static uint32_t cache_ttl(const vega_dns_resolver *r, const struct vega__dns_answer *a)
{
    if (a->naddr)
        return VEGA__MIN(a->ttl, r->max_ttl);
    /* RFC 2308 §5: negative answers without an SOA are not cached. */
    return VEGA__MIN(a->neg_ttl, r->max_neg_ttl);
}

/* Resolves one fully qualified name (lowercase, no trailing dot). Returns the number of
 * addresses stored (>= 1), VEGA_ERR_DNS_NOT_FOUND, VEGA_ERR_DNS_NO_ADDRESS, or an error. */
static int resolve_name(struct job *j, const char *name, int family, vega_addr *out, size_t max)
{
    vega_dns_resolver *r = j->r;
    uint8_t wire[VEGA__DNS_NAME_MAX];
    int wl = vega__dns_name_to_wire(wire, name);
    if (wl < 0)
        return wl;
    j->nq = 0;
    static const uint16_t types[2] = {VEGA__DNS_T_AAAA, VEGA__DNS_T_A};
    static const int fams[2] = {AF_INET6, AF_INET};
    vega_tstamp now = vega__clock_mono();
    for (int k = 0; k < 2; k++) {
        if (family != AF_UNSPEC && family != fams[k])
            continue;
        struct dq *q = &j->q[j->nq++];
        memset(q, 0, offsetof(struct dq, pkt));
        q->q.qtype = types[k];
        q->q.qname_len = (size_t)wl;
        memcpy(q->q.qname, wire, (size_t)wl);
        q->edns = r->edns_payload != 0;
        struct vega__dns_cached c;
        if (r->cache_on && vega__dns_cache_get(&r->cache, name, types[k], now, &c)) {
            count(&r->cache_hits);
            memset(&q->ans, 0, sizeof(q->ans));
            q->ans.rcode = c.rcode;
            q->ans.naddr = c.naddr;
            memcpy(q->ans.addr, c.addr, c.naddr * sizeof(c.addr[0]));
            q->state = Q_DONE;
            q->cached = true;
            continue;
        }
        int e = dq_build(j, q);
        if (e < 0)
            return e;
    }
    if (!all_done(j)) {
        if (j->dl == 0)
            return -ETIMEDOUT; /* would have to wait */
        int e = ask_servers(j);
        if (e < 0 && e != -ETIMEDOUT)
            return e;
        /* Past the deadline, an answer already in for the other type still counts. */
        for (size_t i = 0; i < j->nq; i++)
            if (e == -ETIMEDOUT && j->q[i].state != Q_DONE)
                j->q[i].err = -ETIMEDOUT;
    }

    now = vega__clock_mono();
    size_t stored = 0;
    bool done = true, nx = false;
    int err = 0;
    for (size_t i = 0; i < j->nq; i++) {
        struct dq *q = &j->q[i];
        if (q->state != Q_DONE) {
            done = false;
            if (err_rank(q->err ? q->err : -ETIMEDOUT) > err_rank(err))
                err = q->err ? q->err : -ETIMEDOUT;
            continue;
        }
        if (r->cache_on && !q->cached) {
            struct vega__dns_cached c;
            c.rcode = q->ans.rcode;
            c.naddr = q->ans.naddr;
            memcpy(c.addr, q->ans.addr, q->ans.naddr * sizeof(c.addr[0]));
            (void)vega__dns_cache_put(&r->cache, name, q->q.qtype, &c, cache_ttl(r, &q->ans), now);
        }
        nx = nx || q->ans.rcode == VEGA__DNS_RC_NXDOMAIN;
        int f = q->q.qtype == VEGA__DNS_T_A ? AF_INET : AF_INET6;
        for (size_t k = 0; k < q->ans.naddr && stored < max; k++) {
            vega_addr *a = &out[stored++];
            memset(a, 0, sizeof(*a));
            if (f == AF_INET) {
                struct sockaddr_in *sin = (struct sockaddr_in *)&a->ss;
                sin->sin_family = AF_INET;
                memcpy(&sin->sin_addr, q->ans.addr[k], 4);
                a->len = sizeof(*sin);
            } else {
                struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a->ss;
                sin6->sin6_family = AF_INET6;
                memcpy(&sin6->sin6_addr, q->ans.addr[k], 16);
                a->len = sizeof(*sin6);
            }
        }
    }
    if (stored)
        return (int)stored;
    if (nx)
        return VEGA_ERR_DNS_NOT_FOUND; /* NXDOMAIN holds for every type of the name */
    return done ? VEGA_ERR_DNS_NO_ADDRESS : err;
}

/* ---- names ---------------------------------------------------------------------------------- */

static bool is_localhost(const char *lname)
{
    size_t n = strlen(lname);
    return strcmp(lname, "localhost") == 0 || (n > 10 && strcmp(lname + n - 10, ".localhost") == 0);
}

/* RFC 6761 §6.4: "invalid" and the names under it never exist; no server is asked. */
static bool is_invalid(const char *lname)
{
    size_t n = strlen(lname);
    return strcmp(lname, "invalid") == 0 || (n > 8 && strcmp(lname + n - 8, ".invalid") == 0);
}

/* RFC 6761 §6.3: localhost names are loopback, without asking DNS. */
static size_t localhost_addrs(int family, vega_addr *out, size_t max)
{
    size_t n = 0;
    if ((family == AF_UNSPEC || family == AF_INET6) && n < max)
        (void)vega_addr_from_ip(&out[n++], "::1", 0);
    if ((family == AF_UNSPEC || family == AF_INET) && n < max)
        (void)vega_addr_from_ip(&out[n++], "127.0.0.1", 0);
    return n;
}

/* Builds the names to try, in order (resolv.conf(5) "search" and "ndots"). */
static size_t candidates(const vega_dns_resolver *r, const char *lname, bool absolute,
                         char (*out)[VEGA__DNS_TEXT_MAX + 1])
{
    size_t n = 0, dots = 0;
    for (const char *p = lname; *p; p++)
        dots += *p == '.';
    bool as_is_first = absolute || dots >= r->ndots || r->nsearch == 0;
    if (as_is_first)
        strcpy(out[n++], lname);
    if (absolute)
        return n;
    for (size_t i = 0; i < r->nsearch; i++) {
        size_t l = strlen(lname), s = strlen(r->search[i]);
        if (l + 1 + s > VEGA__DNS_TEXT_MAX)
            continue;
        memcpy(out[n], lname, l);
        out[n][l] = '.';
        memcpy(out[n] + l + 1, r->search[i], s + 1);
        n++;
    }
    if (!as_is_first)
        strcpy(out[n++], lname);
    return n;
}

int vega_dns_lookup(vega_dns_resolver *r, const char *name, int family, vega_addr *out, size_t max,
                    size_t *n, vega_deadline dl)
{
    if (n)
        *n = 0;
    if (!r || !name || !out || max == 0 || !n)
        return -EINVAL;
    if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6)
        return -EINVAL;

    vega_addr a;
    if (vega_addr_from_ip(&a, name, 0) == 0) {
        if (family != AF_UNSPEC && vega_addr_family(&a) != family)
            return -EAFNOSUPPORT;
        out[0] = a;
        *n = 1;
        return 0;
    }
    char lname[VEGA__DNS_TEXT_MAX + 1];
    bool absolute;
    if (!name_lower(lname, name, &absolute) || !name_valid(lname))
        return -EINVAL;

    size_t found = vega__dns_hosts_find(&r->hosts, lname, family, out, max);
    if (found == 0 && is_localhost(lname))
        found = localhost_addrs(family, out, max);
    if (found == 0 && is_invalid(lname))
        return VEGA_ERR_DNS_NOT_FOUND;
    if (found) {
        count(&r->hosts_hits);
        *n = VEGA__MIN(found, max);
        return 0;
    }

    struct job *j = malloc(sizeof(*j));
    char(*cand)[VEGA__DNS_TEXT_MAX + 1] = malloc((VEGA__DNS_MAXSEARCH + 1) * sizeof(*cand));
    int res = -ENOMEM;
    if (!j || !cand)
        goto out;
    j->r = r;
    j->dl = vega__deadline_eff(dl);
    size_t nc = candidates(r, lname, absolute, cand);
    bool nodata = false;
    res = VEGA_ERR_DNS_NOT_FOUND;
    for (size_t i = 0; i < nc; i++) {
        int e = resolve_name(j, cand[i], family, out, max);
        if (e > 0) {
            *n = (size_t)e;
            res = 0;
            goto out;
        }
        nodata = nodata || e == VEGA_ERR_DNS_NO_ADDRESS;
        if (e != VEGA_ERR_DNS_NOT_FOUND && e != VEGA_ERR_DNS_NO_ADDRESS) {
            res = e; /* a failure, not an answer: trying further names would mislead */
            goto out;
        }
    }
    res = nodata ? VEGA_ERR_DNS_NO_ADDRESS : VEGA_ERR_DNS_NOT_FOUND;
out:
    free(cand);
    free(j);
    return res;
}
