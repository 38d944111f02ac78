/* SPDX-License-Identifier: MIT */
/* Internals shared by lib/io's files: the socket object and the wait helpers. */
#ifndef VEGA_IO_INT_H
#define VEGA_IO_INT_H

#include <stdbool.h>

#include <vega/io.h>
#include <vega/rt.h>

#include "rt_int.h"

enum {
    VEGA__SOCK_LISTENER = 1u << 0,
    VEGA__SOCK_NO_RING = 1u << 1, /* parks wait for readiness, never receive (see below) */
    VEGA__SOCK_SHARED = 1u << 2,  /* listener shared with other processes: no multishot accept */
    VEGA__SOCK_WATCHED = 1u << 3, /* parked at least once: park.watch may be registered */
    VEGA__SOCK_PARKED = 1u << 4,  /* parked now (the socket's owner and its park's task only) */
    VEGA__SOCK_UNLINK = 1u << 5,  /* made with VEGA_LISTEN_UNLINK_STALE: the path after the
                                     struct (vega__sock_wrap_unlink) is removed at close */
};

/* What a socket keeps for vega_sock_park (sock_park.c): inside the socket, so that a parked
 * connection costs one allocation. */
struct vega__sock_park {
    struct vega__watch watch;
    vega_sock_ready_fn fn;
    void *arg;
};

/* A socket. A server holds one per idle connection, so every byte counts (the idle-memory
 * benchmark counts it; tests/unit/io/sock_size_test.c pins its size). */
struct vega_sock {
    int fd;
    unsigned flags;   /* VEGA__SOCK_* */
    unsigned udp_off; /* VEGA_UDP_* features switched off or found broken on this socket */
    uint8_t family;   /* AF_INET, AF_INET6, AF_UNIX */
    uint8_t type;     /* SOCK_STREAM, SOCK_DGRAM */
    /* The peer hung up (or the socket failed) while we watched (POLLRDHUP, POLLHUP, POLLERR):
     * no new readiness event will ever say so again, so every later park fires at once. */
    uint16_t hup;
    /* One pointer for two kinds of socket (every byte counts): read socks through
     * vega__udp_relay, which checks the type. */
    union {
        struct vega__accept_ms *ams;   /* SOCK_STREAM listener: multishot accept state (io_uring),
                                          or NULL */
        struct vega__udp_socks *socks; /* SOCK_DGRAM: SOCKS5 relay mode (udp_socks.c), or NULL */
    };
    struct vega__sock_park park; /* used from the first vega_sock_park on (VEGA__SOCK_WATCHED) */
};

/* SOCKS5 relay mode of a UDP socket (udp_socks.c): the batch calls go there when
 * vega__udp_relay(s) is set; vega__udp_socks_free runs at close, before the listener's ams
 * (the same pointer) is looked at. */
static inline struct vega__udp_socks *vega__udp_relay(const struct vega_sock *s)
{
    return s->type == SOCK_DGRAM ? s->socks : NULL;
}
int vega__udp_socks_send(struct vega_sock *s, const vega_udp_msg *msgs, size_t n, vega_deadline dl);
int vega__udp_socks_recv(struct vega_sock *s, vega_udp_msg *msgs, size_t n, vega_deadline dl);
void vega__udp_socks_free(struct vega_sock *s);
/* The RFC 1928 §7 header codec of relay mode (lib/io may not call lib/proxy's): the header for
 * a datagram to dst (its length, at most 22; -EINVAL for no IP address), and the parse of a
 * received one (its length; the address, IPv4 as AF_INET, or *is_name; *port; -1 when malformed,
 * a fragment or truncated). tests/fuzz/udp_socks_fuzz.c checks them against lib/proxy's. */
int vega__udp_socks_header_for(const vega_addr *dst, uint8_t *h);
int vega__udp_socks_header_parse(const uint8_t *in, size_t len, vega_addr *a, bool *is_name,
                                 uint16_t *port);

/* Wraps fd in a new vega_sock; closes fd and returns NULL when out of memory. */
struct vega_sock *vega__sock_wrap(int fd, int family, int type);
/* The same, for a Unix socket bound to path (not NULL): the file is removed when it closes. */
struct vega_sock *vega__sock_wrap_unlink(int fd, int family, int type, const char *path);

/* Waits for `events` on fd. Returns > 0 (ready), -ETIMEDOUT or -ECANCELED. */
int vega__io_wait(int fd, uint32_t events, vega_deadline dl);

/* -ECANCELED when the calling task was cancelled, else 0. Operations check it first, so a
 * cancelled task stops even on a socket that is always ready. */
static inline int vega__io_check_cancel(void)
{
    return vega_task_is_cancelled() ? -ECANCELED : 0;
}

/* Called after an operation that completed without waiting: spends one unit of the
 * cooperative budget (and yields when it is empty). The operation's result stands. */
static inline void vega__io_done_ready(void)
{
    (void)vega_coop();
}

/* Closes the fd and frees s now. */
int vega__sock_free(struct vega_sock *s);

/* If s was ever parked, hands it to its watch's home worker to unregister, close and free;
 * returns false when s was never parked (the caller frees it). */
bool vega__sock_park_close(struct vega_sock *s);

/* Reads the bytes a parked socket's receive watch holds (see vega__watch_read): -EAGAIN when
 * there are none and the socket itself is to be read. s must have been parked. */
vega_ssize vega__sock_park_read(struct vega_sock *s, void *buf, size_t len, vega_deadline dl);

/* True when bytes of s may sit in the runtime (a provided buffer, or a receive in flight) rather
 * than in the kernel's socket: whoever reads the fd directly (kTLS receive) must wait. Called
 * by the socket's reader. */
bool vega__sock_park_holds(const struct vega_sock *s);

/* For sockets whose fd is read directly (kTLS receive): their parks wait for readiness rather
 * than receive into the ring, so no byte is ever held by the runtime. Call before the first
 * vega_sock_park of s. */
static inline void vega__sock_park_no_ring(struct vega_sock *s)
{
    s->flags |= VEGA__SOCK_NO_RING;
}

/* Multishot accept (accept_ms.c): takes a connection the listener's multishot accept queued,
 * starting the multishot where it is not running. Returns the fd, -EAGAIN when the caller is to
 * accept by itself (no multishot here or now), -ETIMEDOUT or -ECANCELED. */
int vega__accept_ms_take(struct vega_sock *l, vega_deadline dl);
/* Closing a listener: ends its multishot (the home finishes the close) and returns true, or
 * returns false when none runs (the caller frees l). */
bool vega__accept_ms_close(struct vega_sock *l);

/* What a listener's multishot accept did (for tests and dumps). */
struct vega__accept_ms_info {
    uint64_t starts;   /* multishot accepts started */
    uint64_t stops;    /* stopped at the queue's high mark */
    uint64_t accepted; /* connections it took */
    unsigned queued;   /* waiting in the queue now */
    bool active;
};
void vega__accept_ms_get_info(struct vega_sock *l, struct vega__accept_ms_info *out);

/* Opens a non-blocking, close-on-exec socket. Returns the fd or -errno. */
int vega__sock_open(int family, int type);

/* The destination to hand the kernel for a datagram to `to` on s: `to` itself, or its copy in
 * *tmp converted to s's family (IPv4 <-> v4-mapped IPv6). NULL when to is NULL or empty. */
const vega_addr *vega__udp_dest(const vega_sock *s, const vega_addr *to, vega_addr *tmp);

#endif
