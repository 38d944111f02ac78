/* SPDX-License-Identifier: MIT */
/* UDP features: what the kernel offers (GSO, GRO, ECN, packet info; probed once per process)
 * and the socket options that switch the receive side on (RFC 3168 section 5 for ECN). */
#include <netinet/udp.h>
#include <stdatomic.h>
#include <unistd.h>

#include "io_int.h"

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define PROBED (1u << 31)

static atomic_uint kernel_features;

static bool opt_ok(int fd, int level, int name, int v)
{
    return setsockopt(fd, level, name, &v, sizeof(v)) == 0;
}

/* Asks a scratch socket, so that no user socket is touched. UDP_SEGMENT answers getsockopt from
 * the kernel that added it (4.18); UDP_GRO only setsockopt before 5.x, and turning it off is
 * harmless. */
static unsigned probe(void)
{
    int family = AF_INET;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        family = AF_INET6;
        fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    }
    if (fd < 0)
        return 0; /* not cached: no IP at all now, perhaps later */
    unsigned f = 0;
    int v = 0;
    socklen_t vl = sizeof(v);
    if (getsockopt(fd, SOL_UDP, UDP_SEGMENT, &v, &vl) == 0)
        f |= VEGA_UDP_GSO;
    if (opt_ok(fd, SOL_UDP, UDP_GRO, 0))
        f |= VEGA_UDP_GRO;
    if (family == AF_INET) {
        if (opt_ok(fd, IPPROTO_IP, IP_RECVTOS, 1))
            f |= VEGA_UDP_ECN;
        if (opt_ok(fd, IPPROTO_IP, IP_PKTINFO, 1))
            f |= VEGA_UDP_PKTINFO;
    } else {
        if (opt_ok(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1))
            f |= VEGA_UDP_ECN;
        if (opt_ok(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1))
            f |= VEGA_UDP_PKTINFO;
    }
    close(fd);
    atomic_store_explicit(&kernel_features, f | PROBED, memory_order_relaxed);
    return f;
}

static bool is_ip_dgram(const vega_sock *s)
{
    return s->type == SOCK_DGRAM && (s->family == AF_INET || s->family == AF_INET6);
}

static unsigned kernel_has(void)
{
    unsigned f = atomic_load_explicit(&kernel_features, memory_order_relaxed);
    return (f & PROBED) ? f & ~PROBED : probe();
}

unsigned vega_udp_features(vega_sock *s)
{
    if (!s || !is_ip_dgram(s))
        return 0;
    return kernel_has() & ~s->udp_off;
}

/* Sets an int option; a kernel without it (ENOPROTOOPT, EOPNOTSUPP) is no error: returns 0
 * with *ok false. */
static int set_opt(vega_sock *s, int level, int name, bool on, bool *ok)
{
    int v = on;
    *ok = false;
    if (setsockopt(s->fd, level, name, &v, sizeof(v)) == 0) {
        *ok = true;
        return 0;
    }
    int e = errno;
    return e == ENOPROTOOPT || e == EOPNOTSUPP ? 0 : -e;
}

/* Switches an IP-level receive option: IPv4's on an AF_INET socket, IPv6's on an AF_INET6
 * socket, and there IPv4's too when v4_too (best effort: for the v4-mapped peers of a
 * dual-stack socket, whose datagrams the IPv6 option does not cover). */
static int set_ip_opt(vega_sock *s, int v4name, int v6name, bool v4_too, bool on, bool *ok)
{
    if (s->family == AF_INET)
        return set_opt(s, IPPROTO_IP, v4name, on, ok);
    int r = set_opt(s, IPPROTO_IPV6, v6name, on, ok);
    if (r == 0 && v4_too) {
        bool ok4;
        (void)set_opt(s, IPPROTO_IP, v4name, on, &ok4);
    }
    return r;
}

int vega_udp_set_features(vega_sock *s, unsigned features, bool on)
{
    if (!s || s->type != SOCK_DGRAM)
        return -EINVAL;
    if (!is_ip_dgram(s))
        return 0;
    if (vega__udp_relay(s))
        return 0; /* a relay socket: each datagram has a header of its own (udp_socks.c) */
    unsigned have = kernel_has();
    unsigned now = 0;
    bool ok;
    int r;
    if (features & VEGA_UDP_GSO) {
        if (on)
            s->udp_off &= ~(unsigned)VEGA_UDP_GSO;
        else
            s->udp_off |= VEGA_UDP_GSO;
        if (on && (have & VEGA_UDP_GSO))
            now |= VEGA_UDP_GSO;
    }
    if ((features & VEGA_UDP_GRO) && (have & VEGA_UDP_GRO)) {
        if ((r = set_opt(s, SOL_UDP, UDP_GRO, on, &ok)) < 0)
            return r;
        if (ok && on)
            now |= VEGA_UDP_GRO;
    }
    if ((features & VEGA_UDP_ECN) && (have & VEGA_UDP_ECN)) {
        if ((r = set_ip_opt(s, IP_RECVTOS, IPV6_RECVTCLASS, true, on, &ok)) < 0)
            return r;
        if (ok && on)
            now |= VEGA_UDP_ECN;
    }
    if ((features & VEGA_UDP_PKTINFO) && (have & VEGA_UDP_PKTINFO)) {
        /* IPV6_RECVPKTINFO already reports IPv4 destinations, v4-mapped. */
        if ((r = set_ip_opt(s, IP_PKTINFO, IPV6_RECVPKTINFO, false, on, &ok)) < 0)
            return r;
        if (ok && on)
            now |= VEGA_UDP_PKTINFO;
    }
    return (int)now;
}
