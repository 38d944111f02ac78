/* SPDX-License-Identifier: MIT */
/* Stream sockets: TCP and Unix listen, accept and connect. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_int.h"

/* Backoff while a Unix listener's backlog is full (its connect fails with EAGAIN, and there is
 * nothing to poll for). */
#define UNIX_CONNECT_RETRY_MS 1

static bool family_ok(int family)
{
    return family == AF_INET || family == AF_INET6 || family == AF_UNIX;
}

static const char *unix_path(const vega_addr *a)
{
    const struct sockaddr_un *sun = (const struct sockaddr_un *)&a->ss;
    if (a->len <= offsetof(struct sockaddr_un, sun_path) || sun->sun_path[0] == '\0')
        return NULL; /* unnamed or abstract: no file */
    return sun->sun_path;
}

/* Removes path when it is a socket file whose listener is gone (connect is refused). */
static void unlink_stale(const vega_addr *a, const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
        return;
    int fd = vega__sock_open(AF_UNIX, SOCK_STREAM);
    if (fd < 0)
        return;
    if (connect(fd, (const struct sockaddr *)&a->ss, a->len) < 0 && errno == ECONNREFUSED)
        unlink(path);
    close(fd);
}

int vega_tcp_listen(vega_sock **out, const vega_addr *addr, int backlog, unsigned flags)
{
    if (!out || !addr)
        return -EINVAL;
    *out = NULL;
    int family = vega_addr_family(addr);
    if (!family_ok(family))
        return -EAFNOSUPPORT;
    const char *path = family == AF_UNIX ? unix_path(addr) : NULL;
    if (path && (flags & VEGA_LISTEN_UNLINK_STALE))
        unlink_stale(addr, path);

    int fd = vega__sock_open(family, SOCK_STREAM);
    if (fd < 0)
        return fd;
    int one = 1, r = 0;
    if (family != AF_UNIX && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
        goto fail;
    if ((flags & VEGA_LISTEN_REUSEPORT) &&
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
        goto fail;
    if (family == AF_INET6 && (flags & VEGA_LISTEN_V6ONLY) &&
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
        goto fail;
    if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0)
        goto fail;
    if (listen(fd, backlog > 0 ? backlog : SOMAXCONN) < 0) {
        r = -errno;
        if (path)
            unlink(path);
        close(fd);
        return r;
    }

    vega_sock *s = vega__sock_wrap_unlink(fd, family, SOCK_STREAM,
                                          (flags & VEGA_LISTEN_UNLINK_STALE) ? path : NULL);
    if (!s) {
        if (path)
            unlink(path);
        return -ENOMEM;
    }
    s->flags |= VEGA__SOCK_LISTENER | ((flags & VEGA_LISTEN_SHARED) ? VEGA__SOCK_SHARED : 0);
    *out = s;
    return 0;

fail:
    r = -errno;
    close(fd);
    return r;
}

int vega_tcp_listen_fd(vega_sock **out, int fd, unsigned flags)
{
    if (!out || fd < 0)
        return -EINVAL;
    *out = NULL;
    int on = 0, type = 0;
    socklen_t len = sizeof on;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) < 0)
        return errno == ENOTSOCK ? -EINVAL : -errno;
    len = sizeof type;
    if (!on || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM)
        return -EINVAL;
    struct sockaddr_storage ss;
    len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return -errno;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        return -errno;
    vega_sock *s = vega__sock_wrap(fd, ss.ss_family, SOCK_STREAM);
    if (!s)
        return -ENOMEM; /* fd was closed: taken */
    s->flags |= VEGA__SOCK_LISTENER | ((flags & VEGA_LISTEN_SHARED) ? VEGA__SOCK_SHARED : 0);
    *out = s;
    return 0;
}

int vega_unix_listen(vega_sock **out, const char *path, int backlog, unsigned flags)
{
    vega_addr a;
    int r = vega_addr_from_unix(&a, path);
    if (r < 0)
        return r;
    return vega_tcp_listen(out, &a, backlog, flags);
}

int vega_tcp_accept(vega_sock *listener, vega_sock **conn, vega_addr *peer, vega_deadline dl)
{
    if (!listener || !conn)
        return -EINVAL;
    *conn = NULL;
    if (!(listener->flags & VEGA__SOCK_LISTENER))
        return -EINVAL;
    int r = vega__io_check_cancel();
    if (r < 0)
        return r;
    for (bool waited = false;;) {
        vega_addr a;
        memset(&a, 0, sizeof(a));
        a.len = sizeof(a.ss);
        /* io_uring: the listener's multishot accept may hold connections already. */
        int fd = vega__accept_ms_take(listener, dl);
        if (fd >= 0) {
            if (peer && getpeername(fd, (struct sockaddr *)&a.ss, &a.len) < 0) {
                memset(&a, 0, sizeof(a)); /* reset already: the reads will say so */
                a.ss.ss_family = (sa_family_t)listener->family;
                a.len = sizeof(sa_family_t);
            }
            vega_sock *s = vega__sock_wrap(fd, listener->family, SOCK_STREAM);
            if (!s)
                return -ENOMEM;
            if (peer)
                *peer = a;
            *conn = s;
            vega__io_done_ready();
            return 0;
        }
        if (fd != -EAGAIN)
            return fd;
        fd = accept4(listener->fd, (struct sockaddr *)&a.ss, &a.len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            vega_sock *s = vega__sock_wrap(fd, listener->family, SOCK_STREAM);
            if (!s)
                return -ENOMEM;
            if (peer)
                *peer = a;
            *conn = s;
            if (!waited)
                vega__io_done_ready();
            return 0;
        }
        int e = errno;
        switch (e) {
        case EINTR:
        case ECONNABORTED:
        case EPROTO:
            continue;
        case EAGAIN:
#if EAGAIN != EWOULDBLOCK
        case EWOULDBLOCK:
#endif
            break;
        default:
            return -e;
        }
        r = vega__io_wait(listener->fd, POLLIN, dl);
        if (r < 0)
            return r;
        waited = true;
    }
}

/* Finishes a connect that returned EINPROGRESS: waits for writability, then reads SO_ERROR. */
static int connect_wait(int fd, vega_deadline dl)
{
    int r = vega__io_wait(fd, POLLOUT, dl);
    if (r < 0)
        return r;
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        return -errno;
    return -err;
}

static bool local_is_set(const vega_tcp_local *l)
{
    return l && (l->addr.len || l->device[0] || l->port_min || l->port_max);
}

/* Binds fd's local side as l asks (vega_tcp_connect_bound). 0 or -errno. */
static int bind_local(int fd, int family, const vega_tcp_local *l)
{
    if (l->device[0] &&
        setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, l->device, (socklen_t)strlen(l->device)) < 0)
        return errno == ENODEV || errno == EPERM ? -errno : -ENODEV;
    if (!l->addr.len && !l->port_min)
        return 0;
    vega_addr a;
    memset(&a, 0, sizeof a);
    if (l->addr.len) {
        a = l->addr;
    } else {
        a.ss.ss_family = (sa_family_t)family;
        a.len = family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    }
    /* The range is walked upwards in a 32-bit counter: port_max 65535 ends the loop too. */
    uint32_t first = l->port_min, last = l->port_max ? l->port_max : l->port_min;
    for (uint32_t p = first; p <= last; p++) {
        if (family == AF_INET6)
            ((struct sockaddr_in6 *)&a.ss)->sin6_port = htons((uint16_t)p);
        else
            ((struct sockaddr_in *)&a.ss)->sin_port = htons((uint16_t)p);
        if (bind(fd, (const struct sockaddr *)&a.ss, a.len) == 0)
            return 0;
        if (errno != EADDRINUSE || p == last)
            return -errno;
    }
    return -EADDRINUSE;
}

int vega_tcp_connect(vega_sock **out, const vega_addr *addr, vega_deadline dl)
{
    return vega_tcp_connect_bound(out, addr, NULL, dl);
}

int vega_tcp_connect_bound(vega_sock **out, const vega_addr *addr, const vega_tcp_local *local,
                           vega_deadline dl)
{
    if (!out || !addr)
        return -EINVAL;
    *out = NULL;
    int family = vega_addr_family(addr);
    if (!family_ok(family))
        return -EAFNOSUPPORT;
    bool bound = local_is_set(local);
    if (bound) {
        int lf = local->addr.len ? vega_addr_family(&local->addr) : family;
        if (family == AF_UNIX || (lf != AF_INET && lf != AF_INET6) ||
            memchr(local->device, '\0', sizeof local->device) == NULL ||
            (local->port_max && local->port_max < local->port_min))
            return -EINVAL;
        if (lf != family)
            return -EAFNOSUPPORT;
    }
    int r = vega__io_check_cancel();
    if (r < 0)
        return r;
    int fd = vega__sock_open(family, SOCK_STREAM);
    if (fd < 0)
        return fd;
    if (bound && (r = bind_local(fd, family, local)) < 0) {
        close(fd);
        return r;
    }

    bool waited = false;
    for (;;) {
        if (connect(fd, (const struct sockaddr *)&addr->ss, addr->len) == 0) {
            r = 0;
            break;
        }
        int e = errno;
        if (e == EINPROGRESS || e == EINTR) {
            /* EINTR: the connection still goes on in the background, as with EINPROGRESS. */
            r = connect_wait(fd, dl);
            waited = true;
            break;
        }
        if (e == EAGAIN && family == AF_UNIX) {
            /* The listener's backlog is full; nothing to poll on an unconnected socket. */
            if (dl != VEGA_DEADLINE_NEVER && vega_now() >= dl) {
                r = -ETIMEDOUT;
                break;
            }
            vega_deadline next = vega_deadline_in_ms(UNIX_CONNECT_RETRY_MS);
            r = vega_sleep_until(next < dl ? next : dl);
            if (r < 0)
                break;
            waited = true;
            continue;
        }
        r = -e;
        break;
    }
    if (r < 0) {
        close(fd);
        return r;
    }
    vega_sock *s = vega__sock_wrap(fd, family, SOCK_STREAM);
    if (!s)
        return -ENOMEM;
    *out = s;
    if (!waited)
        vega__io_done_ready();
    return 0;
}

int vega_unix_connect(vega_sock **out, const char *path, vega_deadline dl)
{
    vega_addr a;
    int r = vega_addr_from_unix(&a, path);
    if (r < 0)
        return r;
    return vega_tcp_connect(out, &a, dl);
}
