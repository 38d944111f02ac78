/* SPDX-License-Identifier: MIT */
/* UDP sockets: bind, connect, one datagram per send or receive, and the IPv4 / v4-mapped IPv6
 * conversion of destinations (RFC 4291 section 2.5.5.2). */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "io_int.h"

static int udp_open(int family)
{
    if (family != AF_INET && family != AF_INET6)
        return -EAFNOSUPPORT;
    return vega__sock_open(family, SOCK_DGRAM);
}

int vega_udp_bind(vega_sock **out, const vega_addr *addr, unsigned flags)
{
    if (!out || !addr)
        return -EINVAL;
    *out = NULL;
    int family = vega_addr_family(addr);
    int fd = udp_open(family);
    if (fd < 0)
        return fd;
    int one = 1, r;
    if ((flags & VEGA_LISTEN_REUSEPORT) &&
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
        goto fail;
    if (family == AF_INET6 && (flags & VEGA_LISTEN_V6ONLY) &&
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
        goto fail;
    if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0)
        goto fail;
    *out = vega__sock_wrap(fd, family, SOCK_DGRAM);
    return *out ? 0 : -ENOMEM;
fail:
    r = -errno;
    close(fd);
    return r;
}

int vega_udp_bind_fd(vega_sock **out, int fd)
{
    if (!out || fd < 0)
        return -EINVAL;
    *out = NULL;
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
        return errno == ENOTSOCK ? -EINVAL : -errno;
    if (type != SOCK_DGRAM)
        return -EINVAL;
    struct sockaddr_storage ss;
    len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return -errno;
    if ((ss.ss_family != AF_INET && ss.ss_family != AF_INET6) ||
        (ss.ss_family == AF_INET && ((struct sockaddr_in *)&ss)->sin_port == 0) ||
        (ss.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&ss)->sin6_port == 0))
        return -EINVAL; /* not bound */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        return -errno;
    *out = vega__sock_wrap(fd, ss.ss_family, SOCK_DGRAM);
    return *out ? 0 : -ENOMEM;
}

int vega_udp_connect(vega_sock **out, const vega_addr *addr)
{
    if (!out || !addr)
        return -EINVAL;
    *out = NULL;
    int family = vega_addr_family(addr);
    int fd = udp_open(family);
    if (fd < 0)
        return fd;
    if (connect(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0) {
        int r = -errno;
        close(fd);
        return r;
    }
    *out = vega__sock_wrap(fd, family, SOCK_DGRAM);
    return *out ? 0 : -ENOMEM;
}

const vega_addr *vega__udp_dest(const vega_sock *s, const vega_addr *to, vega_addr *tmp)
{
    if (!to || to->len == 0)
        return NULL;
    int fam = vega_addr_family(to);
    if (s->family == AF_INET6 && fam == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&to->ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&tmp->ss;
        memset(tmp, 0, sizeof(*tmp));
        in6->sin6_family = AF_INET6;
        in6->sin6_port = in->sin_port;
        in6->sin6_addr.s6_addr[10] = 0xff;
        in6->sin6_addr.s6_addr[11] = 0xff;
        memcpy(&in6->sin6_addr.s6_addr[12], &in->sin_addr, 4);
        tmp->len = sizeof(*in6);
        return tmp;
    }
    if (s->family == AF_INET && fam == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&to->ss;
        if (!IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
            return to; /* the kernel answers -EAFNOSUPPORT / -EINVAL */
        struct sockaddr_in *in = (struct sockaddr_in *)&tmp->ss;
        memset(tmp, 0, sizeof(*tmp));
        in->sin_family = AF_INET;
        in->sin_port = in6->sin6_port;
        memcpy(&in->sin_addr, &in6->sin6_addr.s6_addr[12], 4);
        tmp->len = sizeof(*in);
        return tmp;
    }
    return to;
}

vega_ssize vega_udp_send_to(vega_sock *s, const void *buf, size_t len, const vega_addr *to,
                            vega_deadline dl)
{
    int r = vega__io_check_cancel();
    if (r < 0)
        return r;
    if (vega__udp_relay(s)) {
        vega_udp_msg m;
        memset(&m, 0, sizeof m);
        m.buf = (void *)buf;
        m.len = len;
        if (to)
            m.addr = *to;
        r = vega__udp_socks_send(s, &m, 1, dl);
        return r == 1 ? (vega_ssize)len : r;
    }
    vega_addr tmp;
    to = vega__udp_dest(s, to, &tmp);
    const struct sockaddr *sa = to ? (const struct sockaddr *)&to->ss : NULL;
    socklen_t salen = to ? to->len : 0;
    for (bool waited = false;;) {
        ssize_t n = sendto(s->fd, buf, len, MSG_NOSIGNAL, sa, salen);
        if (n >= 0) {
            if (!waited)
                vega__io_done_ready();
            return n;
        }
        int e = errno;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return -e;
        r = vega__io_wait(s->fd, POLLOUT, dl);
        if (r < 0)
            return r;
        waited = true;
    }
}

vega_ssize vega_udp_recv_from(vega_sock *s, void *buf, size_t len, vega_addr *from,
                              vega_deadline dl)
{
    int r = vega__io_check_cancel();
    if (r < 0)
        return r;
    if (vega__udp_relay(s)) {
        vega_udp_msg m;
        memset(&m, 0, sizeof m);
        m.buf = buf;
        m.cap = len;
        r = vega__udp_socks_recv(s, &m, 1, dl);
        if (r < 0)
            return r;
        if (from)
            *from = m.addr;
        return (vega_ssize)m.len;
    }
    for (bool waited = false;;) {
        vega_addr a;
        a.len = sizeof(a.ss);
        ssize_t n = recvfrom(s->fd, buf, len, 0, (struct sockaddr *)&a.ss, &a.len);
        if (n >= 0) {
            if (from)
                *from = a;
            if (!waited)
                vega__io_done_ready();
            return n;
        }
        int e = errno;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return -e;
        r = vega__io_wait(s->fd, POLLIN, dl);
        if (r < 0)
            return r;
        waited = true;
    }
}
