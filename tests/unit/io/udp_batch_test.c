/* SPDX-License-Identifier: MIT */
/* UDP batches on loopback: sendmmsg/recvmmsg both ways (IPv4, IPv6), GSO trains and GRO
 * buffers, ECN codepoints (RFC 3168 section 5), packet info, and dual-stack sockets. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/io.h>
#include <vega/rt.h>

#include "vtest.h"

#define DL() vega_deadline_in_ms(2000)

/* Binds a UDP socket on ip (port 0); skips the case when the family is missing here. */
static vega_sock *bind_on(const char *ip, vega_addr *bound)
{
    vega_addr a;
    vega_sock *s;
    VCHECK_EQ(vega_addr_from_ip(&a, ip, 0), 0);
    int r = vega_udp_bind(&s, &a, 0);
    if (r == -EAFNOSUPPORT || r == -EADDRNOTAVAIL) {
        char why[96];
        snprintf(why, sizeof(why), "cannot bind %s here (%d)", ip, r);
        vtest_skip(why);
    }
    VCHECK_EQ(r, 0);
    if (bound)
        VCHECK_EQ(vega_sock_local_addr(s, bound), 0);
    return s;
}

static vega_addr ip_port(const char *ip, uint16_t port)
{
    vega_addr a;
    VCHECK_EQ(vega_addr_from_ip(&a, ip, port), 0);
    return a;
}

static void check_ip(const vega_addr *a, const char *want)
{
    char got[VEGA_ADDR_STRLEN];
    VCHECK(vega_addr_format(a, got, sizeof(got)) > 0);
    VCHECK_STR(got, want);
}

/* Sends all n messages, calling again after a short count. */
static void send_all(vega_sock *s, const vega_udp_msg *m, size_t n)
{
    for (size_t done = 0; done < n;) {
        int r = vega_udp_send_batch(s, m + done, n - done, DL());
        if (r <= 0)
            vtest_fail(__FILE__, __LINE__, "send_batch: %d after %zu of %zu", r, done, n);
        done += (size_t)r;
    }
}

/* Receives exactly n messages into m (buffers and caps preset). */
static void recv_all(vega_sock *s, vega_udp_msg *m, size_t n)
{
    for (size_t done = 0; done < n;) {
        int r = vega_udp_recv_batch(s, m + done, n - done, DL());
        if (r <= 0)
            vtest_fail(__FILE__, __LINE__, "recv_batch: %d after %zu of %zu", r, done, n);
        done += (size_t)r;
    }
}

/* ---- 64 datagrams both ways -------------------------------------------------------------- */

enum {
    N64 = 64,
    DGRAM_MAX = 1500
};

struct echo {
    vega_sock *s;
    int msgs;
};

/* Echoes every datagram back to its sender, batch by batch, until `msgs` went back. */
static void *echo_batches(void *arg)
{
    struct echo *e = arg;
    /* On the heap: a task may resume on another thread, so no _Thread_local buffers. */
    char(*bufs)[DGRAM_MAX] = malloc(sizeof(char[N64][DGRAM_MAX]));
    vega_udp_msg *m = malloc(N64 * sizeof(*m)); /* 19 KiB: not on a 64 KiB task stack */
    VCHECK(bufs && m);
    for (int left = e->msgs; left > 0;) {
        memset(m, 0, N64 * sizeof(*m));
        for (int i = 0; i < N64; i++) {
            m[i].buf = bufs[i];
            m[i].cap = DGRAM_MAX;
        }
        int got = vega_udp_recv_batch(e->s, m, (size_t)(left < N64 ? left : N64), DL());
        VCHECK(got > 0);
        send_all(e->s, m, (size_t)got); /* addr = the sender, len = bytes received */
        left -= got;
    }
    free(bufs);
    free(m);
    return NULL;
}

static size_t payload(unsigned i, char *buf)
{
    size_t len = 1 + (i * 37u) % 1200;
    for (size_t k = 0; k < len; k++)
        buf[k] = (char)(i * 7 + k);
    return len;
}

static void batch_both_ways(const char *ip)
{
    vega_addr sa, ca;
    vega_sock *srv = bind_on(ip, &sa);
    vega_sock *cli = bind_on(ip, &ca);
    struct echo e = {.s = srv, .msgs = N64};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, echo_batches, &e), 0);

    static char out[N64][DGRAM_MAX], in[N64][DGRAM_MAX];
    static vega_udp_msg m[N64], r[N64]; /* one case at a time */
    memset(m, 0, sizeof(m));
    for (unsigned i = 0; i < N64; i++) {
        m[i].buf = out[i];
        m[i].len = payload(i, out[i]);
        m[i].addr = sa;
    }
    send_all(cli, m, N64);

    memset(r, 0, sizeof(r));
    for (unsigned i = 0; i < N64; i++) {
        r[i].buf = in[i];
        r[i].cap = DGRAM_MAX;
    }
    recv_all(cli, r, N64);
    for (unsigned i = 0; i < N64; i++) {
        /* Loopback keeps the order of one flow. */
        VCHECK_EQ(r[i].len, m[i].len);
        VCHECK(memcmp(r[i].buf, m[i].buf, r[i].len) == 0);
        VCHECK(vega_addr_equal(&r[i].addr, &sa));
        VCHECK_EQ(r[i].flags, 0);
        VCHECK_EQ(r[i].segment_size, 0);
        VCHECK_EQ(r[i].local.len, 0); /* packet info is off */
    }
    VCHECK_EQ(vega_task_join(t, NULL, DL()), 0);

    /* Nothing left: a zero deadline times out, and an empty batch is 0. */
    VCHECK_EQ(vega_udp_recv_batch(cli, r, 4, 0), -ETIMEDOUT);
    VCHECK_EQ(vega_udp_recv_batch(cli, r, 0, 0), 0);
    VCHECK_EQ(vega_udp_send_batch(cli, m, 0, 0), 0);

    /* A datagram longer than its buffer is cut and flagged. */
    m[0].len = 100;
    VCHECK_EQ(vega_udp_send_batch(cli, m, 1, DL()), 1);
    vega_udp_msg small = {.buf = in[0], .cap = 10};
    VCHECK_EQ(vega_udp_recv_batch(srv, &small, 1, DL()), 1);
    VCHECK_EQ(small.len, 10);
    VCHECK_EQ(small.flags, VEGA_UDP_MSG_TRUNC);

    /* A bad codepoint fails the first message. */
    m[0].ecn = 4;
    VCHECK_EQ(vega_udp_send_batch(cli, m, 2, DL()), -EINVAL);
    vega_sock_close(cli);
    vega_sock_close(srv);
}

static void body_batch_v4(void)
{
    batch_both_ways("127.0.0.1");
}

static void body_batch_v6(void)
{
    batch_both_ways("::1");
}

VTEST(batch64_v4)
{
    vtest_run(body_batch_v4, 2);
}

VTEST(batch64_v6)
{
    vtest_run(body_batch_v6, 2);
}

VTEST(batch64_current_thread)
{
    vtest_run(body_batch_v4, 0);
}

/* ---- GSO / GRO ----------------------------------------------------------------------------- */

enum {
    SEGS = 20,
    SEG = 1200
};

static void print_features(void)
{
    vega_addr a;
    vega_sock *s = bind_on("127.0.0.1", &a);
    unsigned f = vega_udp_features(s);
    fprintf(stderr, "udp features: GSO %s, GRO %s, ECN %s, PKTINFO %s\n",
            f & VEGA_UDP_GSO ? "yes" : "no", f & VEGA_UDP_GRO ? "yes" : "no",
            f & VEGA_UDP_ECN ? "yes" : "no", f & VEGA_UDP_PKTINFO ? "yes" : "no");
    vega_sock_close(s);
}

/* Sends one train of SEGS * SEG bytes (or `tail` fewer) and checks the receiver got the same
 * bytes as SEG-sized datagrams: one by one, or coalesced with segment_size SEG. */
static void train(bool gso, bool gro, size_t tail)
{
    vega_addr sa;
    vega_sock *srv = bind_on("127.0.0.1", &sa);
    vega_sock *cli = bind_on("127.0.0.1", NULL);
    if (gso) {
        if (!(vega_udp_features(cli) & VEGA_UDP_GSO))
            vtest_skip("the kernel has no UDP GSO (UDP_SEGMENT)");
    } else {
        VCHECK_EQ(vega_udp_set_features(cli, VEGA_UDP_GSO, false), 0);
        VCHECK_EQ(vega_udp_features(cli) & VEGA_UDP_GSO, 0);
    }
    if (gro) {
        int r = vega_udp_set_features(srv, VEGA_UDP_GRO, true);
        VCHECK(r >= 0);
        if (!(r & VEGA_UDP_GRO))
            vtest_skip("the kernel has no UDP GRO (UDP_GRO)");
    }

    size_t total = (size_t)SEGS * SEG - tail;
    static char data[SEGS * SEG];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (char)(i * 13 + i / 1000);
    vega_udp_msg m = {.buf = data, .len = total, .addr = sa, .segment_size = SEG};
    VCHECK_EQ(vega_udp_send_batch(cli, &m, 1, DL()), 1);

    /* Receive until every byte is in. */
    static char in[SEGS][65536];
    static vega_udp_msg r[SEGS];
    size_t got = 0, dgrams = 0;
    int coalesced = 0;
    while (got < total) {
        memset(r, 0, sizeof(r));
        for (int i = 0; i < SEGS; i++) {
            r[i].buf = in[i];
            r[i].cap = sizeof(in[i]);
        }
        int n = vega_udp_recv_batch(srv, r, SEGS, DL());
        VCHECK(n > 0);
        for (int i = 0; i < n; i++) {
            VCHECK(got + r[i].len <= total);
            VCHECK(memcmp(r[i].buf, data + got, r[i].len) == 0);
            VCHECK_EQ(r[i].flags, 0);
            if (r[i].segment_size) {
                VCHECK(gro);
                VCHECK_EQ(r[i].segment_size, SEG);
                coalesced++;
                dgrams += (r[i].len + SEG - 1) / SEG;
            } else {
                /* One datagram: a whole segment, or the short last one. */
                VCHECK(r[i].len == SEG || got + r[i].len == total);
                dgrams++;
            }
            got += r[i].len;
        }
    }
    VCHECK_EQ(got, total);
    VCHECK_EQ(dgrams, SEGS);
    if (gro)
        fprintf(stderr, "GRO: %d coalesced buffer(s) for %d segments\n", coalesced, SEGS);
    vega_sock_close(cli);
    vega_sock_close(srv);
}

static void body_gso(void)
{
    print_features();
    train(true, false, 0);
}

static void body_gso_gro(void)
{
    train(true, true, 0);
}

static void body_gso_fallback(void)
{
    train(false, false, 0);
    train(false, false, 500); /* the last datagram 700 bytes */
}

static void body_gso_bad(void)
{
    vega_addr sa;
    vega_sock *srv = bind_on("127.0.0.1", &sa);
    vega_sock *cli = bind_on("127.0.0.1", NULL);
    static char data[(VEGA_UDP_MAX_SEGMENTS + 1) * 10];
    vega_udp_msg m = {.buf = data, .len = sizeof(data), .addr = sa, .segment_size = 10};
    VCHECK_EQ(vega_udp_send_batch(cli, &m, 1, DL()), -EINVAL);
    m.len = VEGA_UDP_MAX_SEGMENTS * 10;
    VCHECK_EQ(vega_udp_send_batch(cli, &m, 1, DL()), 1);
    vega_sock_close(cli);
    vega_sock_close(srv);
}

VTEST(gso_20x1200)
{
    vtest_run(body_gso, 2);
}

VTEST(gso_gro_20x1200)
{
    vtest_run(body_gso_gro, 2);
}

VTEST(gso_fallback)
{
    vtest_run(body_gso_fallback, 2);
}

VTEST(gso_too_many_segments)
{
    vtest_run(body_gso_bad, 0);
}

/* ---- ECN ----------------------------------------------------------------------------------- */

static const uint8_t codepoints[] = {VEGA_ECN_ECT0, VEGA_ECN_ECT1, VEGA_ECN_CE, VEGA_ECN_NOT_ECT,
                                     VEGA_ECN_CE};
enum {
    NCP = sizeof(codepoints)
};

static void enable_or_skip(vega_sock *s, unsigned f, const char *why)
{
    int r = vega_udp_set_features(s, f, true);
    VCHECK(r >= 0);
    if ((unsigned)r != f)
        vtest_skip(why);
}

/* Sends every codepoint from cli (to `to`, or connected when to is NULL) and checks srv read
 * them back intact, in order. */
static void ecn_roundtrip(vega_sock *cli, const vega_addr *to, vega_sock *srv)
{
    char bufs[NCP][16], in[NCP][16];
    vega_udp_msg m[NCP], r[NCP];
    memset(m, 0, sizeof(m));
    memset(r, 0, sizeof(r));
    for (unsigned i = 0; i < NCP; i++) {
        m[i].buf = bufs[i];
        m[i].len = (size_t)snprintf(bufs[i], sizeof(bufs[i]), "ecn %u", i);
        if (to)
            m[i].addr = *to;
        m[i].ecn = codepoints[i];
        r[i].buf = in[i];
        r[i].cap = sizeof(in[i]);
    }
    send_all(cli, m, NCP);
    recv_all(srv, r, NCP);
    for (unsigned i = 0; i < NCP; i++) {
        VCHECK_EQ(r[i].len, m[i].len);
        VCHECK(memcmp(r[i].buf, m[i].buf, r[i].len) == 0);
        VCHECK_EQ(r[i].ecn, codepoints[i]);
    }
}

static void ecn_on(const char *ip)
{
    vega_addr sa;
    vega_sock *srv = bind_on(ip, &sa);
    vega_sock *cli = bind_on(ip, NULL);
    enable_or_skip(srv, VEGA_UDP_ECN, "the kernel reports no ECN bits (IP_RECVTOS)");
    ecn_roundtrip(cli, &sa, srv);
    /* The same from a connected socket (no destination in the messages). */
    vega_sock *con;
    VCHECK_EQ(vega_udp_connect(&con, &sa), 0);
    ecn_roundtrip(con, NULL, srv);
    vega_sock_close(con);
    vega_sock_close(cli);
    vega_sock_close(srv);
}

static void body_ecn_v4(void)
{
    ecn_on("127.0.0.1");
}

static void body_ecn_v6(void)
{
    ecn_on("::1");
}

VTEST(ecn_v4)
{
    vtest_run(body_ecn_v4, 2);
}

VTEST(ecn_v6)
{
    vtest_run(body_ecn_v6, 2);
}

/* ---- packet info --------------------------------------------------------------------------- */

static void body_pktinfo_v4(void)
{
    vega_addr sa;
    vega_sock *srv = bind_on("0.0.0.0", &sa);
    enable_or_skip(srv, VEGA_UDP_PKTINFO, "the kernel reports no IP_PKTINFO");
    uint16_t port = vega_addr_port(&sa);
    vega_addr ca;
    vega_sock *cli = bind_on("127.0.0.1", &ca);

    const char *dst[2] = {"127.0.0.1", "127.0.0.2"};
    vega_udp_msg m[2], r[2];
    char in[2][16];
    memset(m, 0, sizeof(m));
    memset(r, 0, sizeof(r));
    for (int i = 0; i < 2; i++) {
        m[i].buf = (void *)dst[i];
        m[i].len = strlen(dst[i]);
        m[i].addr = ip_port(dst[i], port);
        r[i].buf = in[i];
        r[i].cap = sizeof(in[i]);
    }
    send_all(cli, m, 2);
    recv_all(srv, r, 2);
    for (int i = 0; i < 2; i++) {
        VCHECK_EQ(r[i].len, strlen(dst[i]));
        VCHECK(memcmp(r[i].buf, dst[i], r[i].len) == 0);
        VCHECK_EQ(vega_addr_family(&r[i].local), AF_INET);
        VCHECK_EQ(vega_addr_port(&r[i].local), 0);
        char want[32];
        snprintf(want, sizeof(want), "%s:0", dst[i]);
        check_ip(&r[i].local, want);
        VCHECK(vega_addr_equal(&r[i].addr, &ca));
    }

    /* Answer each from the address it was sent to: the sender sees that source. */
    for (int i = 0; i < 2; i++) {
        m[i].addr = r[i].addr;
        m[i].local = r[i].local;
    }
    send_all(srv, m, 2);
    memset(r, 0, sizeof(r));
    for (int i = 0; i < 2; i++) {
        r[i].buf = in[i];
        r[i].cap = sizeof(in[i]);
    }
    recv_all(cli, r, 2);
    vega_addr want0 = ip_port("127.0.0.1", port), want1 = ip_port("127.0.0.2", port);
    VCHECK(vega_addr_equal(&r[0].addr, &want0));
    VCHECK(vega_addr_equal(&r[1].addr, &want1));

    /* A source address this host does not have is refused (this kernel: -ENETUNREACH). */
    m[0].local = ip_port("192.0.2.1", 0);
    int rr = vega_udp_send_batch(srv, m, 1, DL());
    VCHECK(rr == -EADDRNOTAVAIL || rr == -EINVAL || rr == -ENETUNREACH);
    vega_sock_close(cli);
    vega_sock_close(srv);
}

static void body_pktinfo_v6(void)
{
    vega_addr sa;
    vega_sock *srv = bind_on("::", &sa);
    enable_or_skip(srv, VEGA_UDP_PKTINFO, "the kernel reports no IPV6_RECVPKTINFO");
    vega_sock *cli = bind_on("::1", NULL);
    vega_addr to = ip_port("::1", vega_addr_port(&sa));
    vega_udp_msg m = {.buf = "six", .len = 3, .addr = to}, r;
    char in[8];
    send_all(cli, &m, 1);
    memset(&r, 0, sizeof(r));
    r.buf = in;
    r.cap = sizeof(in);
    recv_all(srv, &r, 1);
    check_ip(&r.local, "[::1]:0");
    /* Reply from ::1 explicitly. */
    m.addr = r.addr;
    m.local = r.local;
    send_all(srv, &m, 1);
    recv_all(cli, &r, 1);
    VCHECK(vega_addr_equal(&r.addr, &to));
    vega_sock_close(cli);
    vega_sock_close(srv);
}

VTEST(pktinfo_v4)
{
    vtest_run(body_pktinfo_v4, 2);
}

VTEST(pktinfo_v6)
{
    vtest_run(body_pktinfo_v6, 2);
}

/* ---- dual-stack ---------------------------------------------------------------------------- */

static void body_dual_stack(void)
{
    vega_addr sa, ca;
    vega_sock *srv = bind_on("::", &sa); /* not V6ONLY: IPv4 peers appear v4-mapped */
    enable_or_skip(srv, VEGA_UDP_ECN | VEGA_UDP_PKTINFO, "no ECN / packet info here");
    vega_sock *cli = bind_on("127.0.0.1", &ca);
    enable_or_skip(cli, VEGA_UDP_ECN | VEGA_UDP_PKTINFO, "no ECN / packet info here");
    uint16_t port = vega_addr_port(&sa);

    /* v4 client -> v6 server: a plain IPv4 destination. */
    vega_udp_msg m = {
        .buf = "v4", .len = 2, .addr = ip_port("127.0.0.1", port), .ecn = VEGA_ECN_ECT0};
    send_all(cli, &m, 1);
    vega_udp_msg r;
    char in[8];
    memset(&r, 0, sizeof(r));
    r.buf = in;
    r.cap = sizeof(in);
    recv_all(srv, &r, 1);
    VCHECK_EQ(r.len, 2);
    VCHECK_EQ(r.ecn, VEGA_ECN_ECT0);
    char want[64];
    snprintf(want, sizeof(want), "[::ffff:127.0.0.1]:%u", vega_addr_port(&ca));
    check_ip(&r.addr, want);
    check_ip(&r.local, "[::ffff:127.0.0.1]:0");

    /* Reply with plain IPv4 addresses on the v6 socket (converted), ECN CE, source chosen. */
    vega_udp_msg back = {
        .buf = "back", .len = 4, .addr = ca, .ecn = VEGA_ECN_CE, .local = ip_port("127.0.0.1", 0)};
    send_all(srv, &back, 1);
    memset(&r, 0, sizeof(r));
    r.buf = in;
    r.cap = sizeof(in);
    recv_all(cli, &r, 1);
    VCHECK_EQ(r.len, 4);
    VCHECK_EQ(r.ecn, VEGA_ECN_CE);
    vega_addr from4 = ip_port("127.0.0.1", port);
    VCHECK(vega_addr_equal(&r.addr, &from4));
    check_ip(&r.local, "127.0.0.1:0");

    /* The same reply with the mapped form, and a v4-mapped destination on the v4 socket. */
    vega_addr mapped;
    VCHECK_EQ(vega_addr_parse(&mapped, want, NULL), 0);
    back.addr = mapped;
    back.ecn = VEGA_ECN_ECT1;
    send_all(srv, &back, 1);
    recv_all(cli, &r, 1);
    VCHECK_EQ(r.ecn, VEGA_ECN_ECT1);
    snprintf(want, sizeof(want), "[::ffff:127.0.0.1]:%u", port);
    VCHECK_EQ(vega_addr_parse(&mapped, want, NULL), 0);
    m.addr = mapped;
    m.ecn = VEGA_ECN_CE;
    send_all(cli, &m, 1);
    recv_all(srv, &r, 1);
    VCHECK_EQ(r.ecn, VEGA_ECN_CE);

    /* vega_udp_send_to converts too. */
    VCHECK_EQ(vega_udp_send_to(srv, "to", 2, &ca, DL()), 2);
    VCHECK_EQ(vega_udp_recv_from(cli, in, sizeof(in), NULL, DL()), 2);

    /* A connected v6 socket to a v4-mapped peer sends ECN through the IPv4 stack. */
    vega_sock *con;
    snprintf(want, sizeof(want), "[::ffff:127.0.0.1]:%u", vega_addr_port(&ca));
    VCHECK_EQ(vega_addr_parse(&mapped, want, NULL), 0);
    VCHECK_EQ(vega_udp_connect(&con, &mapped), 0);
    ecn_roundtrip(con, NULL, cli);
    vega_sock_close(con);
    vega_sock_close(cli);
    vega_sock_close(srv);
}

VTEST(dual_stack)
{
    vtest_run(body_dual_stack, 2);
}

/* ---- features ------------------------------------------------------------------------------ */

static void body_features(void)
{
    print_features();
    vega_sock *u;
    VCHECK_EQ(vega_unix_dgram_bind(&u, "@vega-udp-batch-features", 0), 0);
    VCHECK_EQ(vega_udp_features(u), 0);
    VCHECK_EQ(vega_udp_set_features(u, VEGA_UDP_ECN, true), 0);
    vega_sock_close(u);

    vega_sock *s = bind_on("127.0.0.1", NULL);
    unsigned f = vega_udp_features(s);
    int on = vega_udp_set_features(s, VEGA_UDP_ECN | VEGA_UDP_PKTINFO | VEGA_UDP_GRO, true);
    VCHECK(on >= 0);
    VCHECK_EQ((unsigned)on, f & (VEGA_UDP_ECN | VEGA_UDP_PKTINFO | VEGA_UDP_GRO));
    VCHECK_EQ(vega_udp_set_features(s, VEGA_UDP_ECN | VEGA_UDP_PKTINFO | VEGA_UDP_GRO, false), 0);
    /* GSO off and on again. */
    VCHECK_EQ(vega_udp_set_features(s, VEGA_UDP_GSO, false), 0);
    VCHECK_EQ(vega_udp_features(s) & VEGA_UDP_GSO, 0);
    VCHECK_EQ(vega_udp_set_features(s, VEGA_UDP_GSO, true), (int)(f & VEGA_UDP_GSO));
    VCHECK_EQ(vega_udp_features(s), f);
    vega_sock_close(s);
}

VTEST(features)
{
    vtest_run(body_features, 0);
}
