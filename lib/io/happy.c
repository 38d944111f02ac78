/* SPDX-License-Identifier: MIT */
/* Happy Eyeballs v2 (RFC 8305): parallel AAAA/A resolution (§3), interleaved addresses (§4),
 * staggered connection attempts (§5); the first connection wins, the rest are cancelled. */
#include <stddef.h>
#include <string.h>

#include <vega/sync.h>

#include "dns_int.h"

#define DEFAULT_ATTEMPT_DELAY_MS    250 /* §8 */
#define MIN_ATTEMPT_DELAY_MS        10  /* §5: "MUST NOT be started within 10 milliseconds" */
#define DEFAULT_RESOLUTION_DELAY_MS 50
#define DEFAULT_PER_FAMILY          8
#define MAX_PER_FAMILY              32

/* Version 1's layout ends where local starts (after a size_t: no tail padding differs). */
#define OPTS_V1_SIZE offsetof(vega_tcp_connect_opts, local)

void vega_tcp_connect_opts_init_versioned(vega_tcp_connect_opts *o, int opts_version)
{
    if (opts_version != 1 && opts_version != VEGA_TCP_CONNECT_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_tcp_connect_opts_init: options of another libvega (version %d)",
                    opts_version);
    /* A caller built with layout 1 has storage for that layout only. */
    memset(o, 0, opts_version == 1 ? OPTS_V1_SIZE : sizeof(*o));
    o->family = AF_UNSPEC;
    o->attempt_delay_ms = DEFAULT_ATTEMPT_DELAY_MS;
    o->resolution_delay_ms = DEFAULT_RESOLUTION_DELAY_MS;
    o->max_per_family = DEFAULT_PER_FAMILY;
}

/* ---- the process-wide resolver -------------------------------------------------------------- */

static _Atomic(vega_dns_resolver *) default_resolver;

int vega__dns_default_resolver(vega_dns_resolver **out)
{
    vega_dns_resolver *r = atomic_load_explicit(&default_resolver, memory_order_acquire);
    if (!r) {
        int e = vega_dns_resolver_new(&r, NULL);
        if (e < 0)
            return e;
        vega_dns_resolver *expected = NULL;
        if (!atomic_compare_exchange_strong_explicit(&default_resolver, &expected, r,
                                                     memory_order_acq_rel, memory_order_acquire)) {
            vega_dns_resolver_free(r);
            r = expected;
        }
    }
    *out = r;
    return 0;
}

/* ---- shared state --------------------------------------------------------------------------- */

struct he;

/* One family's resolution, run by its own task. */
struct he_res {
    struct he *he;
    int family;
    bool wanted, done; /* done: guarded by he->lock */
    int err;
    size_t n, next; /* addresses found; the next one to try (main task only) */
    vega_addr addrs[MAX_PER_FAMILY];
};

/* One connection attempt, run by its own task. */
struct he_attempt {
    struct he *he;
    vega_addr addr;
    bool done; /* guarded by he->lock */
    int err;
    vega_sock *sock;
};

struct he {
    vega__spin lock;
    vega_notify wake; /* a child finished */
    vega_dns_resolver *r;
    const char *host;
    uint16_t port;
    size_t per_family;
    const vega_tcp_local *local; /* borrowed from the caller's options for the call */
    vega_deadline dl;
    struct he_res res[2]; /* [0] IPv6, [1] IPv4 */
    struct he_attempt att[2 * MAX_PER_FAMILY];
    size_t natt;
};

static void *resolve_task(void *arg)
{
    struct he_res *res = arg;
    struct he *he = res->he;
    vega_addr tmp[MAX_PER_FAMILY];
    size_t n = 0;
    int e = vega_dns_lookup(he->r, he->host, res->family, tmp, he->per_family, &n, he->dl);
    vega__spin_lock(&he->lock);
    memcpy(res->addrs, tmp, n * sizeof(tmp[0]));
    res->n = e == 0 ? n : 0;
    res->err = e;
    res->done = true;
    vega__spin_unlock(&he->lock);
    vega_notify_one(&he->wake);
    return NULL;
}

static void *attempt_task(void *arg)
{
    struct he_attempt *a = arg;
    struct he *he = a->he;
    vega_sock *s = NULL;
    int e = vega_tcp_connect_bound(&s, &a->addr, he->local, he->dl);
    vega__spin_lock(&he->lock);
    a->sock = e == 0 ? s : NULL;
    a->err = e;
    a->done = true;
    vega__spin_unlock(&he->lock);
    vega_notify_one(&he->wake);
    return NULL;
}

/* ---- errors --------------------------------------------------------------------------------- */

/* How telling a failed attempt's error is: the host answered > it did not > no route. */
static int conn_rank(int e)
{
    switch (e) {
    case -ECONNREFUSED:
        return 7;
    case -ECONNRESET:
        return 6;
    case -ETIMEDOUT:
        return 5;
    case -EHOSTUNREACH:
        return 4;
    case -ENETUNREACH:
        return 3;
    case -EADDRNOTAVAIL:
    case -EAFNOSUPPORT:
        return 1;
    default:
        return 2;
    }
}

/* How telling a failed resolution is: NXDOMAIN > a failure > NODATA > wrong numeric family. */
static int res_rank(int e)
{
    switch (e) {
    case VEGA_ERR_DNS_NOT_FOUND:
        return 4;
    case VEGA_ERR_DNS_NO_ADDRESS:
        return 2;
    case -EAFNOSUPPORT:
        return 1;
    default:
        return 3;
    }
}

static int he_error(const struct he *he)
{
    int best = 0;
    if (he->natt) {
        for (size_t i = 0; i < he->natt; i++)
            if (!best || conn_rank(he->att[i].err) > conn_rank(best))
                best = he->att[i].err;
        return best;
    }
    for (int k = 0; k < 2; k++)
        if (he->res[k].wanted && (!best || res_rank(he->res[k].err) > res_rank(best)))
            best = he->res[k].err;
    return best ? best : VEGA_ERR_DNS_NOT_FOUND;
}

/* ---- the main loop -------------------------------------------------------------------------- */

/* A snapshot of the children, taken under the lock. */
struct view {
    bool res_done[2];
    size_t in_flight;
    size_t failed; /* attempts that ended in an error */
    int winner;    /* index of a connected attempt, or -1 */
};

static void he_view(struct he *he, struct view *v)
{
    vega__spin_lock(&he->lock);
    for (int k = 0; k < 2; k++)
        v->res_done[k] = he->res[k].done;
    v->in_flight = v->failed = 0;
    v->winner = -1;
    for (size_t i = 0; i < he->natt; i++) {
        if (!he->att[i].done)
            v->in_flight++;
        else if (he->att[i].err != 0)
            v->failed++;
        else if (v->winner < 0)
            v->winner = (int)i;
    }
    vega__spin_unlock(&he->lock);
}

/* §4: the next address, alternating families from IPv6 (First Address Family Count 1); a
 * family whose answer arrived late simply joins the alternation. Returns 0/1, or -1. */
static int next_family(const struct he *he, const struct view *v, int last)
{
    int first = last == 0 ? 1 : 0;
    for (int k = 0; k < 2; k++) {
        int f = (first + k) % 2;
        if (v->res_done[f] && he->res[f].next < he->res[f].n)
            return f;
    }
    return -1;
}

static int start_attempt(struct he *he, vega_group *g, int f)
{
    struct he_res *res = &he->res[f];
    struct he_attempt *a = &he->att[he->natt];
    a->he = he;
    a->addr = res->addrs[res->next++];
    vega_addr_set_port(&a->addr, he->port);
    int e = vega_group_spawn(g, attempt_task, a);
    if (e < 0)
        return e;
    he->natt++;
    return 0;
}

/* Runs the race until a winner (returns its index), a failure, the deadline or a cancel. */
static int he_run(struct he *he, vega_group *g, const vega_tcp_connect_opts *o)
{
    vega_tstamp attempt_delay = (vega_tstamp)o->attempt_delay_ms * VEGA_NS_PER_MS;
    vega_tstamp res_delay = (vega_tstamp)o->resolution_delay_ms * VEGA_NS_PER_MS;
    bool connecting = false, v4_seen_set = false;
    vega_tstamp v4_seen = 0, last_start = 0;
    size_t failed_seen = 0;
    int last_family = -1;
    for (;;) {
        struct view v;
        he_view(he, &v);
        if (v.winner >= 0)
            return v.winner;
        vega_tstamp now = vega_now();
        if (now >= he->dl)
            return -ETIMEDOUT; /* whatever the children saw at the same moment */
        vega_deadline wake_at = he->dl;
        bool have6 = v.res_done[0] && he->res[0].n > 0;
        bool have4 = v.res_done[1] && he->res[1].n > 0;
        if (have4 && !v4_seen_set) {
            v4_seen = now;
            v4_seen_set = true;
        }
        if (!connecting) {
            /* §3: start on AAAA; on A alone, wait Resolution Delay for AAAA. */
            if (have6 || (have4 && (v.res_done[0] || now >= v4_seen + res_delay)))
                connecting = true;
            else if (have4)
                wake_at = VEGA__MIN(wake_at, v4_seen + res_delay);
        }
        if (connecting) {
            /* §5: the next attempt starts after Connection Attempt Delay, or as soon as an
             * earlier one failed. */
            int f = next_family(he, &v, last_family);
            bool failed_now = v.failed > failed_seen;
            failed_seen = v.failed;
            if (f >= 0 && (v.in_flight == 0 || failed_now || now >= last_start + attempt_delay)) {
                int e = start_attempt(he, g, f);
                if (e < 0)
                    return e;
                last_family = f;
                last_start = now;
                continue;
            }
            if (f >= 0)
                wake_at = VEGA__MIN(wake_at, last_start + attempt_delay);
        }
        if (v.in_flight == 0 && v.res_done[0] && v.res_done[1] &&
            next_family(he, &v, last_family) < 0)
            return he_error(he); /* nothing left to try or to wait for */
        int e = vega_notify_wait(&he->wake, wake_at);
        if (e == -ECANCELED)
            return e;
        if (e == -ETIMEDOUT && vega_now() >= he->dl)
            return -ETIMEDOUT;
    }
}

int vega_tcp_connect_host_versioned(vega_sock **out, vega_dns_resolver *r, const char *host,
                                    uint16_t port, const vega_tcp_connect_opts *opts,
                                    vega_deadline dl, int opts_version)
{
    if (opts_version != 1 && opts_version != VEGA_TCP_CONNECT_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    if (!out)
        return -EINVAL;
    *out = NULL;
    vega_tcp_connect_opts o;
    vega_tcp_connect_opts_init(&o);
    if (opts) /* a layout 1 caller gives its prefix; local stays NULL */
        memcpy(&o, opts, opts_version == 1 ? OPTS_V1_SIZE : sizeof o);
    if (!host || !*host || (o.family != AF_UNSPEC && o.family != AF_INET && o.family != AF_INET6))
        return -EINVAL;
    if (o.attempt_delay_ms == 0)
        o.attempt_delay_ms = DEFAULT_ATTEMPT_DELAY_MS;
    if (o.attempt_delay_ms < MIN_ATTEMPT_DELAY_MS)
        o.attempt_delay_ms = MIN_ATTEMPT_DELAY_MS;
    if (o.resolution_delay_ms == 0)
        o.resolution_delay_ms = DEFAULT_RESOLUTION_DELAY_MS;
    if (o.max_per_family == 0)
        o.max_per_family = DEFAULT_PER_FAMILY;
    if (o.max_per_family > MAX_PER_FAMILY)
        o.max_per_family = MAX_PER_FAMILY;
    int e = r ? 0 : vega__dns_default_resolver(&r);
    if (e < 0)
        return e;

    struct he *he = calloc(1, sizeof(*he));
    if (!he)
        return -ENOMEM;
    vega__spin_init(&he->lock);
    vega_notify_init(&he->wake);
    he->r = r;
    he->host = host;
    he->port = port;
    he->per_family = o.max_per_family;
    he->local = o.local;
    he->dl = vega__deadline_eff(dl);
    vega_group *g = NULL;
    if ((e = vega_group_new(&g)) < 0)
        goto out;

    static const int fams[2] = {AF_INET6, AF_INET};
    for (int k = 0; k < 2; k++) {
        struct he_res *res = &he->res[k];
        res->he = he;
        res->family = fams[k];
        res->wanted = o.family == AF_UNSPEC || o.family == fams[k];
        if (!res->wanted) {
            res->done = true;
            continue;
        }
        if ((e = vega_group_spawn(g, resolve_task, res)) < 0) {
            vega__spin_lock(&he->lock);
            res->done = true;
            res->err = e;
            vega__spin_unlock(&he->lock);
            goto out;
        }
    }
    e = he_run(he, g, &o);

out:
    /* Cancel whatever still runs (losers, a lookup still going) and wait for all of it; the
     * wait cannot be cancelled, so no child outlives `he`. */
    vega_group_free(g);
    for (size_t i = 0; i < he->natt; i++) {
        if (!he->att[i].sock)
            continue;
        if (e >= 0 && (size_t)e == i)
            *out = he->att[i].sock;
        else
            vega_sock_close(he->att[i].sock);
    }
    vega_notify_fini(&he->wake);
    free(he);
    return e < 0 ? e : 0;
}
