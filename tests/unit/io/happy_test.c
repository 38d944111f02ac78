/* SPDX-License-Identifier: MIT */
/* Happy Eyeballs v2 (RFC 8305) on loopback: IPv6 preferred, refused and black-holed addresses,
 * the connection attempt delay, the resolution delay, deadlines and cancellation. A black hole
 * is a listener whose backlog is full: the kernel drops further SYNs.
 * The cases whose point is a delay run on the paused clock (vtest_run_paused): time moves only
 * from timer to timer, so "IPv4 started after the 250 ms attempt delay" is exact, and "without
 * waiting" means "before the timer", not "fast enough on this machine". Calls that must succeed
 * get no deadline there: a deadline is a timer the clock could jump to. */
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vega/dns.h>
#include <vega/io.h>
#include <vega/rt.h>

#include "dns_wire.h"
#include "vtest.h"

/* ---- harness --------------------------------------------------------------------------------- */

static vega_tstamp ms_since(vega_tstamp t0)
{
    return (vega_now() - t0) / VEGA_NS_PER_MS;
}

#define NEVER VEGA_DEADLINE_NEVER

/* Listeners on 127.0.0.1:P and [::1]:P (either may be skipped), the same free port P. */
struct pair {
    vega_sock *l4, *l6;
    uint16_t port;
    int holes[8]; /* connections that fill a black-holed listener's backlog */
    int nholes;
};

static void pair_open(struct pair *p, bool v4, bool v6, int backlog6)
{
    memset(p, 0, sizeof(*p));
    for (int tries = 0; tries < 20; tries++) {
        vega_addr a;
        vega_sock *probe;
        VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", NULL), 0);
        VCHECK_EQ(vega_tcp_listen(&probe, &a, 0, 0), 0);
        VCHECK_EQ(vega_sock_local_addr(probe, &a), 0);
        p->port = vega_addr_port(&a);
        if (v4)
            p->l4 = probe;
        else
            vega_sock_close(probe);
        if (!v6)
            return;
        vega_addr a6;
        VCHECK_EQ(vega_addr_from_ip(&a6, "::1", p->port), 0);
        if (vega_tcp_listen(&p->l6, &a6, backlog6, VEGA_LISTEN_V6ONLY) == 0)
            return;
        if (p->l4)
            vega_sock_close(p->l4);
        p->l4 = NULL;
    }
    vtest_fail(__FILE__, __LINE__, "no common free port");
}

/* Fills the IPv6 listener's backlog (made with backlog 1) until a connect stays pending. A
 * loopback handshake the listener has room for completes in well under a second even on a
 * loaded machine; one it has no room for never completes (its SYN is dropped, and again at
 * each retransmission, as nobody accepts). The wait only has to tell the two apart. */
static void pair_blackhole6(struct pair *p)
{
    struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(p->port)};
    sin6.sin6_addr = in6addr_loopback;
    for (;;) {
        VCHECK(p->nholes < (int)(sizeof(p->holes) / sizeof(p->holes[0])));
        int fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        VCHECK(fd >= 0);
        p->holes[p->nholes++] = fd;
        int r = connect(fd, (struct sockaddr *)&sin6, sizeof(sin6));
        VCHECK(r == 0 || errno == EINPROGRESS);
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        if (poll(&pfd, 1, 1000) == 0)
            return; /* pending: from now on SYNs are dropped */
    }
}

static void pair_close(struct pair *p)
{
    vega_sock_close(p->l4);
    vega_sock_close(p->l6);
    for (int i = 0; i < p->nholes; i++)
        close(p->holes[i]);
}

/* True when the listener has a connection waiting. */
static bool pending(vega_sock *l)
{
    vega_sock *c;
    if (vega_tcp_accept(l, &c, NULL, 0) != 0)
        return false;
    vega_sock_close(c);
    return true;
}

static const char *hosts_path;

/* A resolver with a private hosts file, and a nameserver that refuses (nothing listens). */
static vega_dns_resolver *hosts_resolver(void)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/vega-happy-test-XXXXXX");
    int fd = mkstemp(path);
    VCHECK(fd >= 0);
    static const char text[] = "127.0.0.1 both.test v4.test\n"
                               "::1 both.test v6.test\n"
                               "::1 multi.test\n"
                               "127.0.0.2 multi.test\n"
                               "127.0.0.3 multi.test\n";
    VCHECK_EQ(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
    close(fd);
    hosts_path = path;
    vega_dns_opts o;
    vega_dns_opts_init(&o);
    o.resolv_conf = "";
    o.hosts = path;
    o.search_set = true;
    vega_addr ns;
    VCHECK_EQ(vega_addr_from_ip(&ns, "127.0.0.1", 1), 0);
    o.nameservers = &ns;
    o.nameservers_len = 1;
    o.timeout_ms = 200;
    o.attempts = 1;
    vega_dns_resolver *r;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), 0);
    return r;
}

static void resolver_done(vega_dns_resolver *r)
{
    vega_dns_resolver_free(r);
    unlink(hosts_path);
}

static int peer_family(vega_sock *s)
{
    vega_addr a;
    VCHECK_EQ(vega_sock_peer_addr(s, &a), 0);
    return vega_addr_family(&a);
}

/* ---- cases ----------------------------------------------------------------------------------- */

static void body_v6_preferred(void)
{
    vega_dns_resolver *r = hosts_resolver();
    struct pair p;
    pair_open(&p, true, true, 0);
    vega_sock *s;
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_tcp_connect_host(&s, r, "both.test", p.port, NULL, NEVER), 0);
    VCHECK(ms_since(t0) < 250); /* paused clock: the attempt delay never ran out */
    VCHECK_EQ(peer_family(s), AF_INET6);
    VCHECK(pending(p.l6));
    VCHECK(!pending(p.l4)); /* no IPv4 attempt was needed */
    vega_sock_close(s);

    /* family = AF_INET restricts the race to IPv4. */
    vega_tcp_connect_opts o;
    vega_tcp_connect_opts_init(&o);
    o.family = AF_INET;
    VCHECK_EQ(vega_tcp_connect_host(&s, r, "both.test", p.port, &o, NEVER), 0);
    VCHECK_EQ(peer_family(s), AF_INET);
    vega_sock_close(s);
    VCHECK(!pending(p.l6));

    /* Numeric hosts. */
    VCHECK_EQ(vega_tcp_connect_host(&s, r, "127.0.0.1", p.port, NULL, NEVER), 0);
    VCHECK_EQ(peer_family(s), AF_INET);
    vega_sock_close(s);
    VCHECK_EQ(vega_tcp_connect_host(&s, r, "[::1]", p.port, NULL, NEVER), 0);
    VCHECK_EQ(peer_family(s), AF_INET6);
    vega_sock_close(s);
    pair_close(&p);
    resolver_done(r);
}

VTEST(v6_preferred)
{
    vtest_run_paused(body_v6_preferred);
}

static void body_refused_falls_through(void)
{
    /* Nothing on [::1]:P: refused at once, so IPv4 starts at once (§5), no 250 ms wait. */
    vega_dns_resolver *r = hosts_resolver();
    struct pair p;
    pair_open(&p, true, false, 0);
    vega_sock *s;
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_tcp_connect_host(&s, r, "both.test", p.port, NULL, NEVER), 0);
    VCHECK(ms_since(t0) < 250); /* paused clock: before the 250 ms attempt delay ran out */
    VCHECK_EQ(peer_family(s), AF_INET);
    vega_sock_close(s);

    /* Several IPv4 addresses: ::1 and 127.0.0.2 refuse, 127.0.0.3 answers. */
    vega_sock *l3;
    vega_addr a3;
    VCHECK_EQ(vega_addr_from_ip(&a3, "127.0.0.3", p.port), 0);
    if (vega_tcp_listen(&l3, &a3, 0, 0) == 0) {
        t0 = vega_now();
        VCHECK_EQ(vega_tcp_connect_host(&s, r, "multi.test", p.port, NULL, NEVER), 0);
        VCHECK(ms_since(t0) < 250); /* two refusals, and no attempt delay waited */
        vega_addr peer, want;
        VCHECK_EQ(vega_sock_peer_addr(s, &peer), 0);
        VCHECK_EQ(vega_addr_from_ip(&want, "127.0.0.3", p.port), 0);
        VCHECK(vega_addr_equal(&peer, &want));
        vega_sock_close(s);
        vega_sock_close(l3);
    }
    pair_close(&p);

    /* Nobody anywhere: the error of the attempts. */
    VCHECK_EQ(vega_tcp_connect_host(&s, r, "both.test", p.port, NULL, NEVER), -ECONNREFUSED);
    VCHECK(s == NULL);
    resolver_done(r);
}

VTEST(refused_falls_through)
{
    vtest_run_paused(body_refused_falls_through);
}

static void body_blackhole_attempt_delay(void)
{
    vega_dns_resolver *r = hosts_resolver();
    struct pair p;
    pair_open(&p, true, true, 1);
    pair_blackhole6(&p);
    vega_sock *s;

    /* The IPv6 attempt hangs; IPv4 starts after the Connection Attempt Delay and wins. On the
     * paused clock the race took exactly that delay: nothing else has a timer. */
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_tcp_connect_host(&s, r, "both.test", p.port, NULL, NEVER), 0);
    VCHECK_EQ(ms_since(t0), 250);
    VCHECK_EQ(peer_family(s), AF_INET);
    vega_sock_close(s);

    /* A shorter delay, configured. */
    vega_tcp_connect_opts o;
    vega_tcp_connect_opts_init(&o);
    o.attempt_delay_ms = 60;
    t0 = vega_now();
    VCHECK_EQ(vega_tcp_connect_host(&s, r, "both.test", p.port, &o, NEVER), 0);
    VCHECK_EQ(ms_since(t0), 60);
    VCHECK_EQ(peer_family(s), AF_INET);
    vega_sock_close(s);
    pair_close(&p);
    resolver_done(r);
}

VTEST(blackhole_attempt_delay)
{
    vtest_run_paused(body_blackhole_attempt_delay);
}

static void body_deadline(void)
{
    /* IPv6 black-holed, IPv4 refused: the race waits for IPv6 until the deadline. */
    vega_dns_resolver *r = hosts_resolver();
    struct pair p;
    pair_open(&p, false, true, 1);
    pair_blackhole6(&p);
    vega_sock *s;
    vega_tcp_connect_opts o;
    vega_tcp_connect_opts_init(&o);
    o.attempt_delay_ms = 50;
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_tcp_connect_host(&s, r, "both.test", p.port, &o, vega_deadline_in_ms(300)),
              -ETIMEDOUT);
    VCHECK_WAITED(t0, 300); /* paused clock: exactly the deadline */
    pair_close(&p);
    resolver_done(r);
}

VTEST(deadline)
{
    vtest_run_paused(body_deadline);
}

struct he_arg {
    vega_dns_resolver *r;
    uint16_t port;
    int res;
};

static void *he_task(void *arg)
{
    struct he_arg *a = arg;
    vega_sock *s = NULL;
    a->res = vega_tcp_connect_host(&s, a->r, "v6.test", a->port, NULL, VEGA_DEADLINE_NEVER);
    vega_sock_close(s);
    return NULL;
}

static void body_cancel(void)
{
    vega_dns_resolver *r = hosts_resolver();
    struct pair p;
    pair_open(&p, false, true, 1);
    pair_blackhole6(&p);
    struct he_arg a = {r, p.port, 1};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, he_task, &a), 0);
    /* Paused clock: the sleep ends only once every task waits, so the race is under way (its
     * IPv6 attempt hangs in the black hole, with no deadline) when the cancel comes. */
    VCHECK_EQ(vega_sleep_ms(50), 0);
    VCHECK_EQ(a.res, 1);
    vega_tstamp t0 = vega_now();
    vega_task_cancel(t);
    VCHECK_EQ(vega_task_join(t, NULL, NEVER), 0);
    VCHECK_EQ(a.res, -ECANCELED);
    VCHECK_EQ(vega_now(), t0); /* the cancel ended it: no timer had to fire */
    pair_close(&p);
    resolver_done(r);
}

VTEST(cancel)
{
    vtest_run_paused(body_cancel);
}

/* ---- resolution through a fake server ------------------------------------------------------ */

/* Answers A with 127.0.0.1 at once and AAAA with ::1 after aaaa_delay_ms; "nx.test": NXDOMAIN. */
struct fake {
    vega_sock *udp;
    vega_addr addr;
    unsigned aaaa_delay_ms;
    vega_task *task;
};

struct delayed {
    vega_sock *udp;
    vega_addr to;
    unsigned ms;
    size_t n;
    uint8_t b[512];
};

static void *send_later(void *arg)
{
    struct delayed *d = arg;
    if (vega_sleep_ms(d->ms) == 0)
        vega_udp_send_to(d->udp, d->b, d->n, &d->to, vega_deadline_in_ms(1000));
    free(d);
    return NULL;
}

static void *fake_udp(void *arg)
{
    struct fake *f = arg;
    vega_group *g;
    VCHECK_EQ(vega_group_new(&g), 0);
    for (;;) {
        uint8_t q[512];
        vega_addr from;
        vega_ssize n = vega_udp_recv_from(f->udp, q, sizeof(q), &from, VEGA_DEADLINE_NEVER);
        if (n == -ECANCELED)
            break;
        struct vega__dns_question qq;
        if (n < VEGA__DNS_HDR_LEN || vega__dns_question_read(q, (size_t)n, &qq) < 0)
            continue;
        struct delayed *d = calloc(1, sizeof(*d));
        VCHECK(d != NULL);
        size_t qend = VEGA__DNS_HDR_LEN + qq.qname_len + 4;
        memcpy(d->b, q, qend);
        d->n = qend;
        d->b[2] = 0x81;
        d->b[3] = 0x80;
        d->b[10] = d->b[11] = 0; /* no OPT */
        bool nx = qq.qname_len > 3 && memcmp(qq.qname, "\2nx", 3) == 0;
        if (nx) {
            d->b[3] |= VEGA__DNS_RC_NXDOMAIN;
        } else {
            bool a = qq.qtype == VEGA__DNS_T_A;
            static const uint8_t rr_a[] = {0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1};
            static const uint8_t rr_aaaa[] = {0xC0, 12, 0, 28, 0, 1, 0, 0, 0, 60, 0, 16, 0, 0,
                                              0,    0,  0, 0,  0, 0, 0, 0, 0, 0,  0, 0,  0, 1};
            memcpy(d->b + d->n, a ? rr_a : rr_aaaa, a ? sizeof(rr_a) : sizeof(rr_aaaa));
            d->n += a ? sizeof(rr_a) : sizeof(rr_aaaa);
            d->b[7] = 1;
            d->ms = a ? 0 : f->aaaa_delay_ms;
        }
        d->udp = f->udp;
        d->to = from;
        VCHECK_EQ(vega_group_spawn(g, send_later, d), 0);
    }
    vega_group_free(g);
    return NULL;
}

static void fake_start(struct fake *f, unsigned aaaa_delay_ms)
{
    memset(f, 0, sizeof(*f));
    f->aaaa_delay_ms = aaaa_delay_ms;
    vega_addr any;
    VCHECK_EQ(vega_addr_parse(&any, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_udp_bind(&f->udp, &any, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(f->udp, &f->addr), 0);
    VCHECK_EQ(vega_task_spawn(&f->task, fake_udp, f), 0);
}

static void fake_stop(struct fake *f)
{
    vega_task_cancel(f->task);
    VCHECK_EQ(vega_task_join(f->task, NULL, NEVER), 0);
    vega_sock_close(f->udp);
}

static vega_dns_resolver *fake_resolver(struct fake *f)
{
    vega_dns_opts o;
    vega_dns_opts_init(&o);
    o.resolv_conf = o.hosts = "";
    o.search_set = true;
    o.nameservers = &f->addr;
    o.nameservers_len = 1;
    o.timeout_ms = 1000;
    o.no_cache = true;
    vega_dns_resolver *r;
    VCHECK_EQ(vega_dns_resolver_new(&r, &o), 0);
    return r;
}

static void body_resolution_delay(void)
{
    struct pair p;
    pair_open(&p, true, true, 0);
    vega_sock *s;

    /* AAAA 20 ms after A: inside the 50 ms Resolution Delay, so IPv6 still goes first. On the
     * paused clock the fake server's delays are exact: connected when the AAAA came. */
    struct fake f;
    fake_start(&f, 20);
    vega_dns_resolver *r = fake_resolver(&f);
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_tcp_connect_host(&s, r, "svc.test", p.port, NULL, NEVER), 0);
    vega_tstamp el = ms_since(t0);
    VCHECK(el >= 20 && el < 50);
    VCHECK_EQ(peer_family(s), AF_INET6);
    vega_sock_close(s);
    VCHECK(pending(p.l6));
    VCHECK(!pending(p.l4)); /* IPv4 was never tried */
    vega_dns_resolver_free(r);
    fake_stop(&f);

    /* AAAA 400 ms late: IPv4 starts when the Resolution Delay ends and wins. */
    fake_start(&f, 400);
    r = fake_resolver(&f);
    t0 = vega_now();
    VCHECK_EQ(vega_tcp_connect_host(&s, r, "svc.test", p.port, NULL, NEVER), 0);
    el = ms_since(t0);
    VCHECK(el >= 50 && el < 400); /* the Resolution Delay, then before the AAAA at 400 ms */
    VCHECK_EQ(peer_family(s), AF_INET);
    vega_sock_close(s);
    VCHECK(pending(p.l4));
    VCHECK(!pending(p.l6)); /* IPv6 was never tried */

    /* No such name: the resolver's answer. */
    VCHECK_EQ(vega_tcp_connect_host(&s, r, "nx.test", p.port, NULL, NEVER), VEGA_ERR_DNS_NOT_FOUND);
    vega_dns_resolver_free(r);
    fake_stop(&f);
    pair_close(&p);
}

VTEST(resolution_delay)
{
    vtest_run_paused(body_resolution_delay);
}

static void body_default_resolver(void)
{
    /* NULL: the process-wide resolver from the system's files; "localhost" never asks DNS. */
    struct pair p;
    pair_open(&p, true, true, 0);
    vega_sock *s;
    VCHECK_EQ(vega_tcp_connect_host(&s, NULL, "localhost", p.port, NULL, vega_deadline_in_ms(2000)),
              0);
    vega_sock_close(s);
    VCHECK_EQ(vega_tcp_connect_host(&s, NULL, "", p.port, NULL, vega_deadline_in_ms(2000)),
              -EINVAL);
    pair_close(&p);
}

VTEST(default_resolver)
{
    vtest_run(body_default_resolver, 0);
}
