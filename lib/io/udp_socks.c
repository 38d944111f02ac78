/* SPDX-License-Identifier: MIT */
/* UDP through a SOCKS5 relay (RFC 1928 section 7): the request header put in front of each
 * datagram sent (a second iovec, no copy) and taken off each one received, datagrams from
 * anywhere but the relay dropped, and the association's TCP control connection watched: its
 * close is an error on the socket, and wakes a receiver (both sockets wait in one epoll set). */
#include <limits.h>
#include <netinet/udp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "base.h"
#include "io_int.h"

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

struct vega__udp_socks {
    vega_addr relay; /* in the socket's family (v4-mapped on an AF_INET6 socket) */
    vega_sock *control;
    int epfd;     /* the UDP socket and the control connection: a receiver waits here */
    bool by_name; /* every datagram to name_hdr's name (dst_name) */
    uint8_t name_hdr[VEGA_UDP_SOCKS5_HDR_MAX];
    size_t name_hdr_len;
    uint16_t dst_port;
    vega_addr dst_as;
    atomic_int err; /* 0, or -ECONNABORTED once the control connection ended (sticky) */
    _Atomic uint64_t dropped;
    _Atomic uint64_t sent_check; /* vega_now() of the last look at the control from a send */
};

/* How often a sender looks at the control connection itself (a system call): a receiver
 * waiting learns of its end at once; one that only sends learns within this. */
#define SOCKS_SEND_CHECK_NS (100 * VEGA_NS_PER_MS)

void vega_udp_socks5_opts_init_versioned(vega_udp_socks5_opts *o, int opts_version)
{
    if (opts_version != VEGA_UDP_SOCKS5_OPTS_VERSION)
        VEGA_PANIC("vega_udp_socks5_opts_init: unknown layout version %d", opts_version);
    memset(o, 0, sizeof *o);
}

/* An IPv4 address of a (AF_INET or v4-mapped) into out; false for a native IPv6 one. */
static bool as_v4(const vega_addr *a, uint8_t out[4])
{
    if (vega_addr_family(a) == AF_INET) {
        memcpy(out, &((const struct sockaddr_in *)&a->ss)->sin_addr, 4);
        return true;
    }
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a->ss;
    if (!IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
        return false;
    memcpy(out, &in6->sin6_addr.s6_addr[12], 4);
    return true;
}

/* The header for a datagram to dst (an address): its length, or -EINVAL. */
int vega__udp_socks_header_for(const vega_addr *dst, uint8_t *h)
{
    int fam = dst ? vega_addr_family(dst) : AF_UNSPEC;
    if (fam != AF_INET && fam != AF_INET6)
        return -EINVAL;
    h[0] = h[1] = h[2] = 0; /* RSV RSV FRAG */
    size_t n;
    if (as_v4(dst, h + 4)) {
        h[3] = 1;
        n = 8;
    } else {
        h[3] = 4;
        memcpy(h + 4, &((const struct sockaddr_in6 *)&dst->ss)->sin6_addr, 16);
        n = 20;
    }
    uint16_t port = vega_addr_port(dst);
    h[n] = (uint8_t)(port >> 8);
    h[n + 1] = (uint8_t)port;
    return (int)n + 2;
}

/* Parses the header of a received datagram: its length, the address (IPv4 as AF_INET) or
 * *is_name for a DOMAINNAME, and *port; -1 when malformed or a fragment (FRAG != 0). */
int vega__udp_socks_header_parse(const uint8_t *in, size_t len, vega_addr *a, bool *is_name,
                                 uint16_t *port)
{
    *is_name = false;
    if (len < 4 || in[0] != 0 || in[1] != 0 || in[2] != 0)
        return -1; /* RSV not zero, or FRAG: "drop any datagrams" it cannot reassemble */
    size_t n;
    memset(a, 0, sizeof *a);
    switch (in[3]) {
    case 1:
        if (len < 10)
            return -1;
        {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&a->ss;
            s4->sin_family = AF_INET;
            memcpy(&s4->sin_addr, in + 4, 4);
            memcpy(&s4->sin_port, in + 8, 2); /* network order as received */
            a->len = sizeof *s4;
        }
        n = 8;
        break;
    case 4:
        if (len < 22)
            return -1;
        {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a->ss;
            s6->sin6_family = AF_INET6;
            memcpy(&s6->sin6_addr, in + 4, 16);
            memcpy(&s6->sin6_port, in + 20, 2);
            a->len = sizeof *s6;
        }
        n = 20;
        break;
    case 3:
        /* as lib/proxy's parser: a NUL cannot be in a host name */
        if (len < 5 || in[4] == 0 || (size_t)5 + in[4] + 2 > len || memchr(in + 5, 0, in[4]))
            return -1;
        *is_name = true;
        n = (size_t)5 + in[4];
        break;
    default:
        return -1;
    }
    *port = (uint16_t)(in[n] << 8 | in[n + 1]);
    return (int)n + 2;
}

int vega_udp_set_socks5_versioned(vega_sock *s, const vega_udp_socks5_opts *o, int opts_version)
{
    vega_sock *control = o && opts_version == VEGA_UDP_SOCKS5_OPTS_VERSION ? o->control : NULL;
    int r = -EINVAL;
    struct vega__udp_socks *x = NULL;
    if (!s || !control || s->type != SOCK_DGRAM ||
        (s->family != AF_INET && s->family != AF_INET6) || s->socks)
        goto fail;
    struct sockaddr_storage peer;
    socklen_t pl = sizeof peer;
    if (getpeername(s->fd, (struct sockaddr *)&peer, &pl) == 0)
        goto fail; /* connected: datagrams could not go to the relay */
    int rf = vega_addr_family(&o->relay);
    if ((rf != AF_INET && rf != AF_INET6) || vega_addr_port(&o->relay) == 0)
        goto fail;
    if (!(x = calloc(1, sizeof *x))) {
        r = -ENOMEM;
        goto fail;
    }
    x->epfd = -1;
    vega_addr tmp;
    const vega_addr *rel = vega__udp_dest(s, &o->relay, &tmp);
    if (vega_addr_family(rel) != s->family)
        goto fail; /* an IPv6 relay for an AF_INET socket */
    x->relay = *rel;
    if (o->dst_name) {
        size_t nl = strlen(o->dst_name);
        int af = vega_addr_family(&o->dst_as);
        if (nl == 0 || nl > 255 || (af != AF_INET && af != AF_INET6))
            goto fail;
        uint8_t *h = x->name_hdr;
        h[0] = h[1] = h[2] = 0;
        h[3] = 3;
        h[4] = (uint8_t)nl;
        memcpy(h + 5, o->dst_name, nl);
        h[5 + nl] = (uint8_t)(o->dst_port >> 8);
        h[6 + nl] = (uint8_t)o->dst_port;
        x->name_hdr_len = 7 + nl;
        x->by_name = true;
        x->dst_port = o->dst_port;
        x->dst_as = o->dst_as;
    }
    x->epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    if (x->epfd < 0 || epoll_ctl(x->epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0) {
        r = -errno;
        goto fail;
    }
    ev.events = EPOLLIN | EPOLLRDHUP;
    if (epoll_ctl(x->epfd, EPOLL_CTL_ADD, control->fd, &ev) < 0) {
        r = -errno;
        goto fail;
    }
    /* each datagram needs a header of its own: no GSO trains, no GRO buffers */
    int off = 0;
    (void)setsockopt(s->fd, SOL_UDP, UDP_GRO, &off, sizeof off);
    s->udp_off |= VEGA_UDP_GSO | VEGA_UDP_GRO | VEGA_UDP_ECN | VEGA_UDP_PKTINFO;
    x->control = control;
    atomic_init(&x->err, 0);
    atomic_init(&x->dropped, 0);
    s->socks = x;
    return 0;
fail:
    if (x) {
        if (x->epfd >= 0)
            close(x->epfd);
        free(x);
    }
    vega_sock_close(control);
    return r;
}

void vega__udp_socks_free(vega_sock *s)
{
    struct vega__udp_socks *x = vega__udp_relay(s);
    if (!x)
        return;
    s->socks = NULL;
    close(x->epfd);
    vega_sock_close(x->control);
    free(x);
}

uint64_t vega_udp_socks5_dropped(const vega_sock *s)
{
    struct vega__udp_socks *x = s ? vega__udp_relay(s) : NULL;
    return x ? atomic_load_explicit(&x->dropped, memory_order_relaxed) : 0;
}

/* Checks the control connection without waiting: 0 while it is open (bytes the relay sent on
 * it are read and dropped: RFC 1928 gives them no meaning), else the sticky -ECONNABORTED. */
static int control_check(struct vega__udp_socks *x)
{
    int e = atomic_load_explicit(&x->err, memory_order_acquire);
    if (e)
        return e;
    for (int i = 0; i < 4; i++) {
        char junk[256];
        ssize_t n = recv(x->control->fd, junk, sizeof junk, MSG_DONTWAIT);
        if (n > 0)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        break; /* 0: the relay closed it; another error: it failed */
    }
    atomic_store_explicit(&x->err, -ECONNABORTED, memory_order_release);
    return -ECONNABORTED;
}

int vega__udp_socks_send(vega_sock *s, const vega_udp_msg *msgs, size_t n, vega_deadline dl)
{
    struct vega__udp_socks *x = s->socks;
    /* the sticky end, and the control connection itself at most every SOCKS_SEND_CHECK_NS (not
     * a recv per send while datagrams flow) */
    int r = atomic_load_explicit(&x->err, memory_order_acquire);
    uint64_t now = vega_now(), last = atomic_load_explicit(&x->sent_check, memory_order_relaxed);
    if (r == 0 && now - last >= SOCKS_SEND_CHECK_NS) {
        atomic_store_explicit(&x->sent_check, now, memory_order_relaxed);
        r = control_check(x);
    }
    if (r < 0)
        return r;
    if (n > INT_MAX)
        n = INT_MAX;
    size_t i = 0, off = 0;
    bool waited = false;
    while (i < n) {
        const vega_udp_msg *m = &msgs[i];
        if (m->ecn > VEGA_ECN_CE || (m->len && !m->buf) ||
            (m->segment_size && m->len > m->segment_size &&
             (m->len - 1) / m->segment_size >= VEGA_UDP_MAX_SEGMENTS)) {
            r = -EINVAL;
            break;
        }
        uint8_t own[32];
        const uint8_t *hdr = x->name_hdr;
        size_t hl = x->name_hdr_len;
        if (!x->by_name) {
            int h = vega__udp_socks_header_for(&m->addr, own);
            if (h < 0) {
                r = h;
                break;
            }
            hdr = own;
            hl = (size_t)h;
        }
        size_t bytes = m->len - off;
        if (m->segment_size && bytes > m->segment_size)
            bytes = m->segment_size;
        struct iovec iov[2] = {{(void *)hdr, hl}, {(char *)m->buf + off, bytes}};
        struct msghdr mh = {
            .msg_name = &x->relay.ss, .msg_namelen = x->relay.len, .msg_iov = iov, .msg_iovlen = 2};
        ssize_t k = sendmsg(s->fd, &mh, MSG_NOSIGNAL);
        if (k < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            if (e == EAGAIN || e == EWOULDBLOCK) {
                if (i > 0 && off == 0)
                    break; /* some went: return them, waiting is for when none could */
                r = vega__io_wait(s->fd, POLLOUT, dl);
                if (r < 0)
                    break;
                waited = true;
                continue;
            }
            r = -e;
            break;
        }
        off += bytes;
        if (off >= m->len) {
            i++;
            off = 0;
        }
    }
    if (off > 0)
        i++; /* a train cut short by a failure counts as sent: UDP may lose datagrams */
    if (i == 0)
        return r < 0 ? r : 0;
    if (!waited)
        vega__io_done_ready();
    return (int)i;
}

/* Whether a datagram's source is the relay (the socket's family on both sides). */
static bool from_relay(const struct vega__udp_socks *x, const vega_addr *from)
{
    return vega_addr_equal(from, &x->relay);
}

/* Takes the header off the datagram in m (len bytes in buf, from `from`): true when it is
 * to be delivered (m's len and addr set), false when it is dropped. */
static bool take_header(struct vega__udp_socks *x, vega_udp_msg *m, size_t len,
                        const vega_addr *from, bool trunc)
{
    if (!from_relay(x, from))
        return false;
    vega_addr a;
    bool is_name;
    uint16_t port;
    int hl = vega__udp_socks_header_parse(m->buf, len, &a, &is_name, &port);
    if (hl < 0)
        return false;
    if (x->by_name) {
        if (port != x->dst_port)
            return false;
        a = x->dst_as;
    } else if (is_name) {
        return false; /* a name we cannot report as an address */
    }
    memmove(m->buf, (uint8_t *)m->buf + hl, len - (size_t)hl);
    m->len = len - (size_t)hl;
    m->addr = a;
    memset(&m->local, 0, sizeof m->local);
    m->segment_size = 0;
    m->ecn = 0;
    m->flags = trunc ? VEGA_UDP_MSG_TRUNC : 0;
    return true;
}

int vega__udp_socks_recv(vega_sock *s, vega_udp_msg *msgs, size_t n, vega_deadline dl)
{
    struct vega__udp_socks *x = s->socks;
    /* the control connection is read only when no datagram is queued (below, before the wait
     * that its close wakes): a system call less per call while datagrams flow */
    int r = atomic_load_explicit(&x->err, memory_order_acquire);
    if (r < 0)
        return r;
    if (n > INT_MAX)
        n = INT_MAX;
    size_t done = 0;
    bool waited = false;
    while (done < n) {
        vega_udp_msg *m = &msgs[done];
        vega_addr from;
        struct iovec iov = {m->buf, m->cap};
        struct msghdr mh = {
            .msg_name = &from.ss, .msg_namelen = sizeof from.ss, .msg_iov = &iov, .msg_iovlen = 1};
        ssize_t k = recvmsg(s->fd, &mh, 0);
        if (k < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            if (done > 0)
                break;
            if (e != EAGAIN && e != EWOULDBLOCK)
                return -e;
            /* nothing queued: wait for a datagram or the control connection's end */
            if ((r = control_check(x)) < 0)
                return r;
            r = vega__io_wait(x->epfd, POLLIN, dl);
            if (r < 0)
                return r;
            if ((r = control_check(x)) < 0)
                return r;
            waited = true;
            continue;
        }
        from.len = mh.msg_namelen;
        if (take_header(x, m, (size_t)k, &from, (mh.msg_flags & MSG_TRUNC) != 0))
            done++;
        else
            atomic_fetch_add_explicit(&x->dropped, 1, memory_order_relaxed);
    }
    if (!waited)
        vega__io_done_ready();
    return (int)done;
}
