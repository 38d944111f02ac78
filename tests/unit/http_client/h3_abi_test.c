/* SPDX-License-Identifier: MIT */
/* The fields appended to vega_http_client_opts (HTTP/3 in layout 2, the proxy in 3,
 * quic_qlog_dir in 4) and vega_http_client_request (layout 2), docs/ARCHITECTURE.md "API rules:
 * ABI": a program built against an older layout passes the shorter structs, and the library
 * reads only their prefix, keeps its defaults for the rest, and writes nothing past them; a
 * version it does not know is refused. */
#include <errno.h>
#include <stddef.h>

#include "abi_old.h"
#include "client_int.h"
#include "hc_util.h"

VTEST(v1_layouts_are_prefixes)
{
    VCHECK_EQ(VEGA_HTTP_CLIENT_OPTS_VERSION, 10);
    /* layout 8 appended dns_servers right after layout 7's last field, layout 9 local after
     * layout 8's (past happy_eyeballs_delay_ms and what aligns local) */
    VCHECK_EQ(offsetof(vega_http_client_opts, dns_servers),
              offsetof(vega_http_client_opts, quic_migrate_after_ns) + sizeof(uint64_t));
    VCHECK(offsetof(vega_http_client_opts, local) >=
           offsetof(vega_http_client_opts, happy_eyeballs_delay_ms) + sizeof(unsigned));
    VCHECK(offsetof(vega_http_client_opts, local) <
           offsetof(vega_http_client_opts, happy_eyeballs_delay_ms) + sizeof(unsigned) +
               _Alignof(vega_tcp_local));
    VCHECK_EQ(VEGA_HTTP_CLIENT_REQUEST_VERSION, 2);
    /* the v1 structs' shapes, and that no layout's _init writes past it: the layout table,
     * tests/unit/base/compat_test.c */
}

/* _init of layout 1 sets its defaults. */
VTEST(v1_init_sets_the_defaults)
{
    struct {
        struct http_client_opts_v1 o;
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_http_client_opts_init_versioned((vega_http_client_opts *)&a.o, 1);
    VCHECK_EQ(a.o.max_idle_per_origin, 8);
    VCHECK_EQ(a.o.max_body, 1ull << 30);
    struct {
        struct http_client_request_v1 r;
    } b;
    memset(&b, 0xa5, sizeof b);
    vega_http_client_request_init_versioned((vega_http_client_request *)&b.r, 1);
    VCHECK(b.r.url == NULL && b.r.deadline == VEGA_DEADLINE_NEVER);
}

/* A client and a request of layout 1 work against a server, whatever bytes follow them; the
 * garbage after a v1 request is never read as h3_fallback or wire_error. */
VTEST_CT(v1_client_and_request_work)
{
    struct hs *h = hs_new(NULL);
    hs_step(h, (struct hs_step){.resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nv1"});
    hs_start(h);
    struct {
        struct http_client_opts_v1 o;
        unsigned char junk[64];
    } a;
    memset(&a, 0xff, sizeof a);
    vega_http_client_opts_init_versioned((vega_http_client_opts *)&a.o, 1);
    a.o.user_agent = "old-program/1";
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new_versioned(&c, (vega_http_client_opts *)&a.o, 1), 0);
    struct {
        struct http_client_request_v1 r;
        unsigned char junk[64];
    } b;
    memset(&b, 0xff, sizeof b);
    vega_http_client_request_init_versioned((vega_http_client_request *)&b.r, 1);
    char url[128];
    hs_url(h, url, sizeof url, "/old");
    b.r.url = url;
    b.r.version = 11;
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send_versioned(c, (vega_http_client_request *)&b.r, &r, 1), 0);
    char body[16];
    VCHECK_EQ(vega_http_client_response_read(r, body, sizeof body, vega_deadline_in_ms(5000)), 2);
    VCHECK(memcmp(body, "v1", 2) == 0);
    VCHECK(strstr(h->last_req, "\r\nUser-Agent: old-program/1\r\n"));
    vega_http_client_response_free(r);
    /* layouts this library does not know */
    VCHECK_EQ(vega_http_client_send_versioned(c, (vega_http_client_request *)&b.r, &r, 3), -EINVAL);
    vega_http_client *c2 = NULL;
    VCHECK_EQ(vega_http_client_new_versioned(&c2, NULL, 11), -EINVAL);
    VCHECK_EQ(vega_http_client_new_versioned(&c2, NULL, 0), -EINVAL);
    VCHECK(c2 == NULL);
    vega_http_client_free(c);
    hs_free(h);
}

/* The new options are checked: an unknown QUIC version is refused. */
VTEST(v2_options_checked)
{
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    VCHECK_EQ(o.h3_head_start_ns, 200ull * 1000 * 1000);
    VCHECK(!o.alt_svc && !o.quic_early_data && !o.quic_insecure && o.quic_ca == NULL);
    o.quic_version = 0x1a2a3a4a;
    vega_http_client *c = NULL;
    VCHECK_EQ(vega_http_client_new(&c, &o), -EINVAL);
    o.quic_version = VEGA_QUIC_V2;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    vega_http_client_free(c);
}

/* Layout 3 (before quic_qlog_dir): a client made from it, whatever bytes follow, has no qlog
 * directory. */
VTEST(v3_layout_stops_before_qlog)
{
    enum {
        V3 = offsetof(vega_http_client_opts, quic_qlog_dir)
    };
    VCHECK_EQ(offsetof(vega_http_client_opts, proxy) + sizeof(void *), (size_t)V3);
    union {
        vega_http_client_opts o;
        unsigned char b[sizeof(vega_http_client_opts) + 64];
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_http_client_opts_init_versioned(&a.o, 3);
    VCHECK_EQ(a.o.max_idle_per_origin, 8);
    VCHECK(a.o.proxy == NULL);
    vega_http_client *c = NULL;
    VCHECK_EQ(vega_http_client_new_versioned(&c, &a.o, 3), 0);
    VCHECK(c != NULL && c->o.quic_qlog_dir == NULL);
    vega_http_client_free(c);
    /* layout 4 keeps what the caller set */
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    VCHECK(o.quic_qlog_dir == NULL);
    o.quic_qlog_dir = "/nonexistent/qlog";
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    VCHECK(!strcmp(c->o.quic_qlog_dir, "/nonexistent/qlog"));
    vega_http_client_free(c);
}

/* Layout 4 (before quic_key_update): the same, for the key-update switch. */
VTEST(v4_layout_stops_before_key_update)
{
    enum {
        V4 = offsetof(vega_http_client_opts, quic_key_update)
    };
    VCHECK_EQ(offsetof(vega_http_client_opts, quic_qlog_dir) + sizeof(void *), (size_t)V4);
    union {
        vega_http_client_opts o;
        unsigned char b[sizeof(vega_http_client_opts) + 64];
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_http_client_opts_init_versioned(&a.o, 4);
    VCHECK(a.o.quic_qlog_dir == NULL);
    vega_http_client *c = NULL;
    VCHECK_EQ(vega_http_client_new_versioned(&c, &a.o, 4), 0);
    VCHECK(c != NULL && !c->o.quic_key_update);
    vega_http_client_free(c);
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    VCHECK(!o.quic_key_update);
    o.quic_key_update = true;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    VCHECK(c->o.quic_key_update);
    vega_http_client_free(c);
}

/* Layout 5 (before ip_family): its _init and _new leave the TCP fields of layout 6 alone and at
 * their defaults (both families, TCP_NODELAY, no keep-alive probes). */
VTEST(v5_layout_stops_before_ip_family)
{
    enum {
        V5 = offsetof(vega_http_client_opts, ip_family)
    };
    VCHECK(offsetof(vega_http_client_opts, quic_key_update) < (size_t)V5);
    union {
        vega_http_client_opts o;
        unsigned char b[sizeof(vega_http_client_opts) + 64];
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_http_client_opts_init_versioned(&a.o, 5);
    VCHECK(!a.o.quic_key_update);
    vega_http_client *c = NULL;
    VCHECK_EQ(vega_http_client_new_versioned(&c, &a.o, 5), 0);
    VCHECK(c != NULL);
    VCHECK_EQ(c->o.ip_family, AF_UNSPEC);
    VCHECK(!c->o.tcp_nagle);
    VCHECK_EQ(c->o.tcp_keepalive_s, 0u);
    vega_http_client_free(c);
}

/* Layout 6 (before quic_migrate): its _init and _new leave layout 7's migration fields alone
 * and at their defaults (no migration). */
VTEST(v6_layout_stops_before_quic_migrate)
{
    enum {
        V6 = offsetof(vega_http_client_opts, quic_migrate)
    };
    VCHECK(offsetof(vega_http_client_opts, tcp_keepalive_s) < (size_t)V6);
    union {
        vega_http_client_opts o;
        unsigned char b[sizeof(vega_http_client_opts) + 64];
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_http_client_opts_init_versioned(&a.o, 6);
    VCHECK_EQ(a.o.tcp_keepalive_s, 0u);
    vega_http_client *c = NULL;
    VCHECK_EQ(vega_http_client_new_versioned(&c, &a.o, 6), 0);
    VCHECK(c != NULL);
    VCHECK(!c->o.quic_migrate);
    VCHECK_EQ(c->o.quic_migrate_after_ns, 0u);
    vega_http_client_free(c);
}

/* Layout 7 (before dns_servers): its _init and _new leave layout 8's DNS and Happy Eyeballs
 * fields alone and at their defaults (the system's name servers, 250 ms). */
VTEST(v7_layout_stops_before_dns_servers)
{
    enum {
        V7 = offsetof(vega_http_client_opts, dns_servers)
    };
    VCHECK(offsetof(vega_http_client_opts, quic_migrate_after_ns) < (size_t)V7);
    union {
        vega_http_client_opts o;
        unsigned char b[sizeof(vega_http_client_opts) + 64];
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_http_client_opts_init_versioned(&a.o, 7);
    VCHECK_EQ(a.o.quic_migrate_after_ns, 0u);
    vega_http_client *c = NULL;
    VCHECK_EQ(vega_http_client_new_versioned(&c, &a.o, 7), 0);
    VCHECK(c != NULL);
    VCHECK(c->o.dns_servers == NULL);
    VCHECK_EQ(c->o.dns_servers_len, 0u);
    VCHECK_EQ(c->o.happy_eyeballs_delay_ms, 0u);
    vega_http_client_free(c);
    /* layout 8: more servers than a resolver keeps, or a count without servers, are refused */
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    vega_addr many[VEGA_DNS_MAX_NAMESERVERS + 1];
    memset(many, 0, sizeof many);
    o.dns_servers = many;
    o.dns_servers_len = VEGA_DNS_MAX_NAMESERVERS + 1;
    VCHECK_EQ(vega_http_client_new(&c, &o), -EINVAL);
    o.dns_servers = NULL;
    o.dns_servers_len = 1;
    VCHECK_EQ(vega_http_client_new(&c, &o), -EINVAL);
}

/* Layout 8 (before local): its _init and _new leave layout 9's local side alone and unbound. */
VTEST(v8_layout_stops_before_local)
{
    union {
        vega_http_client_opts o;
        unsigned char b[sizeof(vega_http_client_opts) + 64];
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_http_client_opts_init_versioned(&a.o, 8);
    VCHECK_EQ(a.o.happy_eyeballs_delay_ms, 0u);
    vega_http_client *c = NULL;
    VCHECK_EQ(vega_http_client_new_versioned(&c, &a.o, 8), 0);
    VCHECK(c != NULL);
    vega_tcp_local zero;
    memset(&zero, 0, sizeof zero);
    VCHECK(memcmp(&c->o.local, &zero, sizeof zero) == 0);
    vega_http_client_free(c);
}

/* Layout 9 (before h2_frame): its _init and _new leave layout 10's frame hook alone, and the
 * client traces no frame (0xa5 bytes read as a hook would crash at the first one). */
VTEST(v9_layout_stops_before_h2_frame)
{
    union {
        vega_http_client_opts o;
        unsigned char b[sizeof(vega_http_client_opts) + 64];
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_http_client_opts_init_versioned(&a.o, 9);
    vega_http_client *c = NULL;
    VCHECK_EQ(vega_http_client_new_versioned(&c, &a.o, 9), 0);
    VCHECK(c != NULL);
    VCHECK(c->o.h2_frame == NULL && c->o.h2_frame_user == NULL);
    vega_http_client_free(c);
}

/* A name server on a loopback port: A queries get 127.0.0.1, others no answer (NODATA). Counts
 * the queries that name "vega-dns". */
struct dns_fake {
    vega_sock *udp;
    vega_addr addr;
    int asked;
};

static void *dns_fake_task(void *arg)
{
    struct dns_fake *f = arg;
    for (;;) {
        uint8_t q[512];
        vega_addr from;
        vega_ssize n = vega_udp_recv_from(f->udp, q, sizeof q, &from, VEGA_DEADLINE_NEVER);
        if (n < 0)
            break;
        size_t at = 12;
        while (at < (size_t)n && q[at] != 0 && at + 1 + q[at] < (size_t)n)
            at += 1 + q[at];
        if (n < 12 || at + 5 > (size_t)n || q[at] != 0)
            continue;
        size_t qend = at + 5; /* the root label, QTYPE, QCLASS */
        if (memmem(q + 12, at - 12, "\x08vega-dns", 9))
            f->asked++;
        uint8_t r[600];
        memcpy(r, q, qend);
        size_t rn = qend;
        r[2] = 0x81;                                   /* QR, RD */
        r[3] = 0x80;                                   /* RA, NOERROR */
        r[6] = r[7] = r[8] = r[9] = r[10] = r[11] = 0; /* no answers yet, no OPT */
        if (q[at + 1] == 0 && q[at + 2] == 1) {
            static const uint8_t rr_a[] = {0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1};
            memcpy(r + rn, rr_a, sizeof rr_a);
            rn += sizeof rr_a;
            r[7] = 1;
        }
        vega_udp_send_to(f->udp, r, rn, &from, vega_deadline_in_ms(1000));
    }
    return NULL;
}

/* dns_servers: the client's lookups go to those servers (a name only the fake server knows
 * reaches the HTTP server through its answer). */
VTEST_CT(dns_servers_are_asked)
{
    struct dns_fake f = {0};
    VCHECK_EQ(vega_addr_parse(&f.addr, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_udp_bind(&f.udp, &f.addr, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(f.udp, &f.addr), 0);
    vega_task *ft;
    VCHECK_EQ(vega_task_spawn(&ft, dns_fake_task, &f), 0);
    struct hs *h = hs_new(NULL);
    hs_step(h, (struct hs_step){.resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"});
    hs_start(h);
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.dns_servers = &f.addr;
    o.dns_servers_len = 1;
    o.happy_eyeballs_delay_ms = 100;
    o.ip_family = AF_INET;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    char url[128], body[16];
    snprintf(url, sizeof url, "http://vega-dns.example:%u/", h->port);
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.deadline = vega_deadline_in_ms(10000);
    vega_http_client_response *r = NULL;
    VCHECK_EQ(hc_fetch(c, &rq, &r, body, sizeof body), 2);
    VCHECK_STR(body, "ok");
    VCHECK(f.asked >= 1);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    /* a name server port where nobody listens: the host did not resolve (curl's 6, not a
     * refused connection to the host) */
    vega_sock *gone;
    vega_addr gone_addr;
    VCHECK_EQ(vega_addr_parse(&gone_addr, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_udp_bind(&gone, &gone_addr, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(gone, &gone_addr), 0);
    vega_sock_close(gone);
    o.dns_servers = &gone_addr;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    r = NULL;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_ERR_DNS_SERVER);
    VCHECK(r == NULL);
    vega_http_client_free(c);
    hs_free(h);
    vega_task_cancel(ft);
    VCHECK_EQ(vega_task_join(ft, NULL, VEGA_DEADLINE_NEVER), 0);
    vega_sock_close(f.udp);
}
