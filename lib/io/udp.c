/* SPDX-License-Identifier: MIT */
/* UDP sockets: bind, connect, and one datagram per send or receive. */
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

vega_ssize vega_udp_send_to(vega_sock *s, const void *buf, size_t len, const vega_addr *to,
                            vega_deadline dl)
{
    int r = vega__io_check_cancel();
    if (r < 0)
        return r;
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
