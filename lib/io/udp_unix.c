/* SPDX-License-Identifier: MIT */
/* Unix datagram sockets: bound to a path (or an abstract name), or connected to one; they send
 * and receive through the UDP calls. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_int.h"

static const char *file_path(const vega_addr *a)
{
    const struct sockaddr_un *sun = (const struct sockaddr_un *)&a->ss;
    if (a->len <= offsetof(struct sockaddr_un, sun_path) || sun->sun_path[0] == '\0')
        return NULL; /* abstract: no file */
    return sun->sun_path;
}

/* Removes path when it is a socket file nobody is bound to (sending to it is refused). */
static void unlink_stale(const vega_addr *a, const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
        return;
    int fd = vega__sock_open(AF_UNIX, SOCK_DGRAM);
    if (fd < 0)
        return;
    if (connect(fd, (const struct sockaddr *)&a->ss, a->len) < 0 && errno == ECONNREFUSED)
        unlink(path);
    close(fd);
}

int vega_unix_dgram_bind(vega_sock **out, const char *path, unsigned flags)
{
    if (!out || !path)
        return -EINVAL;
    *out = NULL;
    vega_addr a;
    int r = vega_addr_from_unix(&a, path);
    if (r < 0)
        return r;
    const char *file = file_path(&a);
    if (file && (flags & VEGA_LISTEN_UNLINK_STALE))
        unlink_stale(&a, file);
    int fd = vega__sock_open(AF_UNIX, SOCK_DGRAM);
    if (fd < 0)
        return fd;
    if (bind(fd, (const struct sockaddr *)&a.ss, a.len) < 0) {
        r = -errno;
        close(fd);
        return r;
    }
    vega_sock *s = vega__sock_wrap_unlink(fd, AF_UNIX, SOCK_DGRAM,
                                          (flags & VEGA_LISTEN_UNLINK_STALE) ? file : NULL);
    if (!s) {
        if (file)
            unlink(file);
        return -ENOMEM;
    }
    *out = s;
    return 0;
}

int vega_unix_dgram_connect(vega_sock **out, const char *path)
{
    if (!out || !path)
        return -EINVAL;
    *out = NULL;
    vega_addr a;
    int r = vega_addr_from_unix(&a, path);
    if (r < 0)
        return r;
    int fd = vega__sock_open(AF_UNIX, SOCK_DGRAM);
    if (fd < 0)
        return fd;
    /* Autobind: a family-only address gets a unique abstract name, so the peer can reply. */
    struct sockaddr_un self = {.sun_family = AF_UNIX};
    if (bind(fd, (const struct sockaddr *)&self, sizeof(sa_family_t)) < 0 ||
        connect(fd, (const struct sockaddr *)&a.ss, a.len) < 0) {
        r = -errno;
        close(fd);
        return r;
    }
    *out = vega__sock_wrap(fd, AF_UNIX, SOCK_DGRAM);
    return *out ? 0 : -ENOMEM;
}
