/* SPDX-License-Identifier: MIT */
/* UDP sockets in SOCKS5 relay mode (RFC 1928 section 7): the header each datagram gets (IPv4,
 * IPv6, v4-mapped, a name; a train split with a header per datagram), the header taken off what
 * the relay sends back, datagrams from strangers, fragments and malformed ones dropped, and the
 * control connection's close as -ECONNABORTED (also for a receiver already waiting). The test
 * plays the relay with a plain UDP socket, and the control connection is a socket pair. */
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>

#include <vega/io.h>
#include <vega/rt.h>

#include "vtest.h"

#define DL vega_deadline_in_ms(5000)

struct fix {
    vega_sock *relay;   /* the test's relay */
    vega_sock *cli;     /* the relay-mode socket */
    vega_sock *ctl_far; /* the relay's end of the control connection */
    vega_addr relay_addr, cli_addr;
};

/* relay_at, cli_at: where the relay and the client's socket are bound ("127.0.0.1:0" both by
 * fix_open). */
static void fix_open_at(struct fix *f, const char *relay_at, const char *cli_at, const char *name,
                        uint16_t port, const char *as)
{
    vega_addr lo;
    VCHECK_EQ(vega_addr_parse(&lo, relay_at, NULL), 0);
    VCHECK_EQ(vega_udp_bind(&f->relay, &lo, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(f->relay, &f->relay_addr), 0);
    VCHECK_EQ(vega_addr_parse(&lo, cli_at, NULL), 0);
    VCHECK_EQ(vega_udp_bind(&f->cli, &lo, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(f->cli, &f->cli_addr), 0);
    vega_sock *ctl;
    VCHECK_EQ(vega_sock_pair(SOCK_STREAM, &ctl, &f->ctl_far), 0);
    vega_udp_socks5_opts o;
    vega_udp_socks5_opts_init(&o);
    o.relay = f->relay_addr;
    o.control = ctl;
    o.dst_name = name;
    o.dst_port = port;
    if (as)
        VCHECK_EQ(vega_addr_parse(&o.dst_as, as, NULL), 0);
    VCHECK_EQ(vega_udp_set_socks5(f->cli, &o), 0);
}

static void fix_open(struct fix *f, const char *name, uint16_t port, const char *as)
{
    fix_open_at(f, "127.0.0.1:0", "127.0.0.1:0", name, port, as);
}

static void fix_close(struct fix *f)
{
    vega_sock_close(f->cli);
    vega_sock_close(f->relay);
    vega_sock_close(f->ctl_far);
}

/* What the relay received: the whole datagram, and it came from the client. */
static size_t relay_got(struct fix *f, uint8_t *buf, size_t cap)
{
    vega_addr from;
    vega_ssize n = vega_udp_recv_from(f->relay, buf, cap, &from, DL);
    VCHECK(n >= 0);
    VCHECK(vega_addr_equal(&from, &f->cli_addr));
    return (size_t)n;
}

static void body_header_out(void)
{
    struct fix f;
    fix_open(&f, NULL, 0, NULL);
    uint8_t b[512];
    vega_addr to;

    VCHECK_EQ(vega_addr_parse(&to, "1.2.3.4:5678", NULL), 0);
    VCHECK_EQ(vega_udp_send_to(f.cli, "abc", 3, &to, DL), 3);
    static const uint8_t v4[] = {0, 0, 0, 1, 1, 2, 3, 4, 0x16, 0x2e, 'a', 'b', 'c'};
    VCHECK_EQ(relay_got(&f, b, sizeof b), sizeof v4);
    VCHECK(memcmp(b, v4, sizeof v4) == 0);

    VCHECK_EQ(vega_addr_parse(&to, "[2001:db8::1]:443", NULL), 0);
    VCHECK_EQ(vega_udp_send_to(f.cli, "xy", 2, &to, DL), 2);
    static const uint8_t v6[] = {0, 0, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0,    0,    0,   0,
                                 0, 0, 0, 0, 0,    0,    0,    1,    0x01, 0xbb, 'x', 'y'};
    VCHECK_EQ(relay_got(&f, b, sizeof b), sizeof v6);
    VCHECK(memcmp(b, v6, sizeof v6) == 0);

    /* a v4-mapped destination goes as ATYP IPv4; an empty payload is a header alone */
    VCHECK_EQ(vega_addr_parse(&to, "[::ffff:10.0.0.9]:53", NULL), 0);
    VCHECK_EQ(vega_udp_send_to(f.cli, "", 0, &to, DL), 0);
    static const uint8_t m4[] = {0, 0, 0, 1, 10, 0, 0, 9, 0, 53};
    VCHECK_EQ(relay_got(&f, b, sizeof b), sizeof m4);
    VCHECK(memcmp(b, m4, sizeof m4) == 0);

    /* a train: one datagram per segment, each with its header (no GSO on a relay socket) */
    VCHECK_EQ(vega_addr_parse(&to, "1.2.3.4:5678", NULL), 0);
    vega_udp_msg m[2];
    memset(m, 0, sizeof m);
    m[0].buf = "hello";
    m[0].len = 5;
    m[0].segment_size = 2;
    m[0].addr = to;
    m[1].buf = "z";
    m[1].len = 1;
    m[1].addr = to;
    VCHECK_EQ(vega_udp_send_batch(f.cli, m, 2, DL), 2);
    const char *want[] = {"he", "ll", "o", "z"};
    for (int i = 0; i < 4; i++) {
        size_t n = relay_got(&f, b, sizeof b);
        VCHECK_EQ(n, 10 + strlen(want[i]));
        VCHECK(memcmp(b, v4, 10) == 0);
        VCHECK(memcmp(b + 10, want[i], strlen(want[i])) == 0);
    }
    /* no destination, a Unix one: refused */
    VCHECK_EQ(vega_udp_send_to(f.cli, "a", 1, NULL, DL), -EINVAL);
    VCHECK_EQ(vega_udp_features(f.cli), 0u);
    VCHECK_EQ(vega_udp_set_features(f.cli, VEGA_UDP_GRO | VEGA_UDP_GSO | VEGA_UDP_ECN, true), 0);
    VCHECK_EQ(vega_udp_socks5_dropped(f.cli), 0u);
    fix_close(&f);
}

VTEST(udp_socks_header_out)
{
    vtest_run(body_header_out, 0);
}

static void body_header_name(void)
{
    struct fix f;
    fix_open(&f, "example.com", 443, "0.0.0.0:443");
    uint8_t b[512];
    vega_addr to;
    VCHECK_EQ(vega_addr_parse(&to, "0.0.0.0:443", NULL), 0);
    VCHECK_EQ(vega_udp_send_to(f.cli, "q", 1, &to, DL), 1);
    static const uint8_t nm[] = {0,   0,   0,   3,   11,  'e', 'x', 'a',  'm', 'p',
                                 'l', 'e', '.', 'c', 'o', 'm', 1,   0xbb, 'q'};
    VCHECK_EQ(relay_got(&f, b, sizeof b), sizeof nm);
    VCHECK(memcmp(b, nm, sizeof nm) == 0);

    /* the relay answers with the address it resolved: reported as dst_as; another port is
     * another peer: dropped */
    static const uint8_t other[] = {0, 0, 0, 1, 93, 184, 216, 34, 1, 0xbc, 'n', 'o'};
    VCHECK_EQ(vega_udp_send_to(f.relay, other, sizeof other, &f.cli_addr, DL), sizeof other);
    static const uint8_t ans[] = {0, 0, 0, 1, 93, 184, 216, 34, 1, 0xbb, 'o', 'k'};
    VCHECK_EQ(vega_udp_send_to(f.relay, ans, sizeof ans, &f.cli_addr, DL), sizeof ans);
    char got[16];
    vega_addr from, as;
    VCHECK_EQ(vega_udp_recv_from(f.cli, got, sizeof got, &from, DL), 2);
    VCHECK(memcmp(got, "ok", 2) == 0);
    VCHECK_EQ(vega_addr_parse(&as, "0.0.0.0:443", NULL), 0);
    VCHECK(vega_addr_equal(&from, &as));
    VCHECK_EQ(vega_udp_socks5_dropped(f.cli), 1u);
    fix_close(&f);
}

VTEST(udp_socks_header_name)
{
    vtest_run(body_header_name, 0);
}

/* Receives on f.cli with deadline 0 until `dropped` datagrams were dropped: each call takes
 * what is queued (the drops) and finds nothing to deliver. */
static void drain_drops(struct fix *f, uint64_t dropped)
{
    char b[64];
    for (int i = 0; i < 100000 && vega_udp_socks5_dropped(f->cli) < dropped; i++) {
        VCHECK_EQ(vega_udp_recv_from(f->cli, b, sizeof b, NULL, 0), -ETIMEDOUT);
        vega_yield();
    }
    VCHECK_EQ(vega_udp_socks5_dropped(f->cli), dropped);
}

static void body_header_in(void)
{
    struct fix f;
    fix_open(&f, NULL, 0, NULL);
    char got[64];
    vega_addr from, want;

    static const uint8_t a4[] = {0, 0, 0, 1, 5, 6, 7, 8, 0, 53, 'x', 'y', 'z'};
    VCHECK_EQ(vega_udp_send_to(f.relay, a4, sizeof a4, &f.cli_addr, DL), sizeof a4);
    VCHECK_EQ(vega_udp_recv_from(f.cli, got, sizeof got, &from, DL), 3);
    VCHECK(memcmp(got, "xyz", 3) == 0);
    VCHECK_EQ(vega_addr_parse(&want, "5.6.7.8:53", NULL), 0);
    VCHECK(vega_addr_equal(&from, &want));

    static const uint8_t a6[] = {0, 0, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0,    0,    0,   0,
                                 0, 0, 0, 0, 0,    0,    0,    2,    0x1f, 0x90, 'v', '6'};
    VCHECK_EQ(vega_udp_send_to(f.relay, a6, sizeof a6, &f.cli_addr, DL), sizeof a6);
    vega_udp_msg m;
    memset(&m, 0, sizeof m);
    m.buf = got;
    m.cap = sizeof got;
    VCHECK_EQ(vega_udp_recv_batch(f.cli, &m, 1, DL), 1);
    VCHECK_EQ(m.len, 2u);
    VCHECK(memcmp(got, "v6", 2) == 0);
    VCHECK_EQ(vega_addr_parse(&want, "[2001:db8::2]:8080", NULL), 0);
    VCHECK(vega_addr_equal(&m.addr, &want));
    VCHECK_EQ(m.segment_size, 0);

    /* dropped: from a stranger (a well-formed header), FRAG 1, RSV not zero, a short IPv6
     * header, an unknown ATYP, a name (no dst_name: it cannot be reported as an address) */
    vega_addr lo;
    vega_sock *stranger;
    VCHECK_EQ(vega_addr_parse(&lo, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_udp_bind(&stranger, &lo, 0), 0);
    VCHECK_EQ(vega_udp_send_to(stranger, a4, sizeof a4, &f.cli_addr, DL), sizeof a4);
    static const uint8_t frag[] = {0, 0, 1, 1, 5, 6, 7, 8, 0, 53, 'f'};
    static const uint8_t rsv[] = {0, 1, 0, 1, 5, 6, 7, 8, 0, 53, 'r'};
    static const uint8_t short6[] = {0, 0, 0, 4, 1, 2, 3, 4, 5, 6, 7, 8};
    static const uint8_t atyp[] = {0, 0, 0, 9, 5, 6, 7, 8, 0, 53, 'a'};
    static const uint8_t name[] = {0, 0, 0, 3, 1, 'h', 0, 53, 'n'};
    const uint8_t *bad[] = {frag, rsv, short6, atyp, name};
    size_t bad_len[] = {sizeof frag, sizeof rsv, sizeof short6, sizeof atyp, sizeof name};
    for (size_t i = 0; i < 5; i++)
        VCHECK_EQ(vega_udp_send_to(f.relay, bad[i], bad_len[i], &f.cli_addr, DL),
                  (vega_ssize)bad_len[i]);
    drain_drops(&f, 6);
    VCHECK_EQ(vega_udp_send_to(f.relay, a4, sizeof a4, &f.cli_addr, DL), sizeof a4);
    VCHECK_EQ(vega_udp_recv_from(f.cli, got, sizeof got, &from, DL), 3);
    VCHECK(memcmp(got, "xyz", 3) == 0);
    VCHECK_EQ(vega_udp_socks5_dropped(f.cli), 6u);
    vega_sock_close(stranger);
    fix_close(&f);
}

VTEST(udp_socks_header_in)
{
    vtest_run(body_header_in, 0);
}

/* An IPv6 relay, and an IPv4 relay reached from a dual-stack AF_INET6 socket (the relay's
 * address and the sources compared v4-mapped): both ways, an IPv4 destination as ATYP 1 and
 * its answer reported as AF_INET. */
static void body_families(void)
{
    const char *at[2][2] = {{"[::1]:0", "[::1]:0"}, {"127.0.0.1:0", "[::]:0"}};
    for (int k = 0; k < 2; k++) {
        struct fix f;
        fix_open_at(&f, at[k][0], at[k][1], NULL, 0, NULL);
        vega_addr to, from;
        VCHECK_EQ(vega_addr_parse(&to, "1.2.3.4:5678", NULL), 0);
        VCHECK_EQ(vega_udp_send_to(f.cli, "abc", 3, &to, DL), 3);
        uint8_t b[64];
        static const uint8_t v4[] = {0, 0, 0, 1, 1, 2, 3, 4, 0x16, 0x2e, 'a', 'b', 'c'};
        vega_ssize n = vega_udp_recv_from(f.relay, b, sizeof b, &from, DL);
        VCHECK_EQ(n, (vega_ssize)sizeof v4);
        VCHECK(memcmp(b, v4, sizeof v4) == 0);
        VCHECK_EQ(vega_addr_port(&from), vega_addr_port(&f.cli_addr));
        VCHECK_EQ(vega_udp_send_to(f.relay, v4, sizeof v4, &from, DL), (vega_ssize)sizeof v4);
        char got[64]; /* room for the header too: it is read into the buffer first */
        VCHECK_EQ(vega_udp_recv_from(f.cli, got, sizeof got, &from, DL), 3);
        VCHECK(memcmp(got, "abc", 3) == 0);
        VCHECK_EQ(vega_addr_family(&from), AF_INET);
        VCHECK(vega_addr_equal(&from, &to));
        VCHECK_EQ(vega_udp_socks5_dropped(f.cli), 0u);
        fix_close(&f);
    }
}

VTEST(udp_socks_families)
{
    vtest_run(body_families, 0);
}

static atomic_int waiter_rc;

static void *waiter(void *arg)
{
    struct fix *f = arg;
    char b[16];
    atomic_store(&waiter_rc, (int)vega_udp_recv_from(f->cli, b, sizeof b, NULL, DL));
    return NULL;
}

static void body_control_closed(void)
{
    struct fix f;
    fix_open(&f, NULL, 0, NULL);
    /* bytes the relay sends on the control connection mean nothing: dropped, no error */
    VCHECK_EQ(vega_sock_write(f.ctl_far, "junk", 4, NULL, DL), 4);
    vega_addr to;
    VCHECK_EQ(vega_addr_parse(&to, "1.2.3.4:5", NULL), 0);
    VCHECK_EQ(vega_udp_send_to(f.cli, "a", 1, &to, DL), 1);
    uint8_t b[64];
    VCHECK_EQ(relay_got(&f, b, sizeof b), 11u);
    /* a receiver waits (or is about to); the relay closes the control connection: it wakes */
    atomic_store(&waiter_rc, 1);
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, waiter, &f), 0);
    vega_yield();
    vega_sock_close(f.ctl_far);
    f.ctl_far = NULL;
    VCHECK_EQ(vega_task_join(t, NULL, DL), 0);
    VCHECK_EQ(atomic_load(&waiter_rc), -ECONNABORTED);
    /* sticky, for sends and receives */
    VCHECK_EQ(vega_udp_send_to(f.cli, "a", 1, &to, DL), -ECONNABORTED);
    vega_udp_msg m;
    memset(&m, 0, sizeof m);
    m.buf = b;
    m.cap = sizeof b;
    VCHECK_EQ(vega_udp_recv_batch(f.cli, &m, 1, 0), -ECONNABORTED);
    fix_close(&f);
}

VTEST(udp_socks_control_closed)
{
    vtest_run(body_control_closed, 2);
}

/* A datagram that arrived before the control connection closed is still delivered; the next
 * receive, finding none, reads the control connection and fails. */
static void body_queued_then_closed(void)
{
    struct fix f;
    fix_open(&f, NULL, 0, NULL);
    static const uint8_t a4[] = {0, 0, 0, 1, 5, 6, 7, 8, 0, 53, 'q'};
    VCHECK_EQ(vega_udp_send_to(f.relay, a4, sizeof a4, &f.cli_addr, DL), sizeof a4);
    struct pollfd p = {.fd = vega_sock_fd(f.cli), .events = POLLIN};
    VCHECK_EQ(poll(&p, 1, 5000), 1); /* queued */
    vega_sock_close(f.ctl_far);
    f.ctl_far = NULL;
    char got[64];
    VCHECK_EQ(vega_udp_recv_from(f.cli, got, sizeof got, NULL, DL), 1);
    VCHECK_EQ(got[0], 'q');
    VCHECK_EQ(vega_udp_recv_from(f.cli, got, sizeof got, NULL, DL), -ECONNABORTED);
    fix_close(&f);
}

VTEST(udp_socks_queued_then_closed)
{
    vtest_run(body_queued_then_closed, 0);
}

/* A socket that only sends learns of the control connection's end too: a send looks at the
 * control connection itself at most every 100 ms (not a system call per send), so the sends go
 * on for a while, then fail with the sticky -ECONNABORTED. */
static void body_send_only_closed(void)
{
    struct fix f;
    fix_open(&f, NULL, 0, NULL);
    vega_addr to;
    VCHECK_EQ(vega_addr_parse(&to, "1.2.3.4:5", NULL), 0);
    VCHECK_EQ(vega_udp_send_to(f.cli, "a", 1, &to, DL), 1);
    vega_sock_close(f.ctl_far);
    f.ctl_far = NULL;
    vega_ssize r = 1;
    vega_deadline end = DL;
    while (r == 1 && vega_now() < end) {
        r = vega_udp_send_to(f.cli, "a", 1, &to, DL);
        if (r == 1)
            VCHECK_EQ(vega_sleep_ms(5), 0);
    }
    VCHECK_EQ(r, -ECONNABORTED);
    VCHECK_EQ(vega_udp_send_to(f.cli, "a", 1, &to, DL), -ECONNABORTED);
    fix_close(&f);
}

VTEST(udp_socks_send_only_closed)
{
    vtest_run(body_send_only_closed, 0);
}

static void body_bad_args(void)
{
    vega_addr lo, relay;
    VCHECK_EQ(vega_addr_parse(&lo, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_addr_parse(&relay, "127.0.0.1:1080", NULL), 0);
    vega_sock *u, *a, *b;
    vega_udp_socks5_opts o;
    /* a connected socket cannot be put in relay mode; the control is taken all the same */
    VCHECK_EQ(vega_udp_connect(&u, &relay), 0);
    VCHECK_EQ(vega_sock_pair(SOCK_STREAM, &a, &b), 0);
    vega_udp_socks5_opts_init(&o);
    o.relay = relay;
    o.control = a;
    VCHECK_EQ(vega_udp_set_socks5(u, &o), -EINVAL);
    char c;
    VCHECK_EQ(vega_sock_read(b, &c, 1, DL), 0); /* a was closed */
    vega_sock_close(b);
    vega_sock_close(u);
    /* a name over 255 bytes; a name without dst_as; an IPv6 relay for an AF_INET socket */
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    VCHECK_EQ(vega_udp_bind(&u, &lo, 0), 0);
    for (int i = 0; i < 3; i++) {
        VCHECK_EQ(vega_sock_pair(SOCK_STREAM, &a, &b), 0);
        vega_udp_socks5_opts_init(&o);
        o.relay = relay;
        o.control = a;
        o.dst_port = 443;
        if (i == 0) {
            o.dst_name = longname;
            VCHECK_EQ(vega_addr_parse(&o.dst_as, "0.0.0.0:443", NULL), 0);
        } else if (i == 1) {
            o.dst_name = "example.com";
        } else {
            VCHECK_EQ(vega_addr_parse(&o.relay, "[::1]:1080", NULL), 0);
        }
        VCHECK_EQ(vega_udp_set_socks5(u, &o), -EINVAL);
        vega_sock_close(b);
    }
    /* after the refusals u is a plain socket: no header on what it sends */
    vega_sock *rx;
    vega_addr ra;
    VCHECK_EQ(vega_udp_bind(&rx, &lo, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(rx, &ra), 0);
    VCHECK_EQ(vega_udp_send_to(u, "p", 1, &ra, DL), 1);
    char got[32];
    VCHECK_EQ(vega_udp_recv_from(rx, got, sizeof got, NULL, DL), 1);
    VCHECK_EQ(got[0], 'p');
    VCHECK_EQ(vega_udp_socks5_dropped(u), 0u);
    vega_sock_close(rx);
    vega_sock_close(u);
}

VTEST(udp_socks_bad_args)
{
    vtest_run(body_bad_args, 0);
}
