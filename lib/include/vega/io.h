/* SPDX-License-Identifier: MIT */
/* Networking on the runtime: addresses, TCP and Unix stream sockets, UDP, and readiness waits
 * on plain file descriptors. Every call that can suspend takes a vega_deadline last. */
#ifndef VEGA_IO_H
#define VEGA_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- addresses ----------------------------------------------------------------------------- */

/* A socket address of any family libvega speaks: AF_INET, AF_INET6 or AF_UNIX. Plain data:
 * copy it freely. A zeroed vega_addr (len 0) is "no address". */
typedef struct vega_addr {
    struct sockaddr_storage ss;
    socklen_t len;
} vega_addr;

/* Room vega_addr_format needs for any address ("unix:" + a 107-byte path + NUL fits). */
#define VEGA_ADDR_STRLEN 128

/*
 * Parses a numeric address, without suspending and without name lookups:
 *   "1.2.3.4:80", "[::1]:80", "[fe80::1%eth0]:80"  an IP address and a port
 *   "80"                                           a port alone: default_host supplies the IP
 *   "unix:/path/sock", "unix:@name"                a Unix socket (@ = abstract namespace)
 * default_host: borrowed, a numeric IPv4/IPv6 address (brackets optional) or NULL.
 * Returns 0; -EINVAL (syntax, a name instead of an IP, port out of 0..65535, a port alone
 * without default_host); -ENAMETOOLONG (Unix path longer than 107 bytes).
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_addr_parse(vega_addr *out, const char *s, const char *default_host);

/* Builds an address from a numeric IP ("127.0.0.1", "::1", "[::1]") and a port.
 * Returns 0 or -EINVAL. Context: any thread. Since 0.1. */
VEGA_API int vega_addr_from_ip(vega_addr *out, const char *ip, uint16_t port);

/* Builds a Unix socket address; a leading '@' selects the abstract namespace.
 * Returns 0, -EINVAL (empty), -ENAMETOOLONG. Context: any thread. Since 0.1. */
VEGA_API int vega_addr_from_unix(vega_addr *out, const char *path);

/*
 * Resolves host and a numeric port into up to `max` addresses, in the order the system
 * prefers. A numeric host ("10.0.0.1", "::1", "[::1]") is converted at once; a name goes
 * through getaddrinfo (AI_NUMERICSERV) on the blocking pool, so /etc/hosts and DNS both apply
 * (an asynchronous resolver replaces this later). family: AF_UNSPEC, AF_INET or AF_INET6.
 * Returns the number of addresses stored (>= 1); -EINVAL (bad port, bad arguments), -ENXIO
 * (the name is unknown or has no address of that family), -EAGAIN (temporary resolver
 * failure), -EAFNOSUPPORT (numeric host of the other family), -ENOMEM, -EIO (other resolver
 * failures), -ETIMEDOUT, -ECANCELED (the lookup in progress still runs to its end on its pool
 * thread, and its result is dropped), VEGA_ERR_FULL (blocking pool full).
 * Context: inside a task for names; any thread for numeric hosts. Since 0.1.
 */
VEGA_API int vega_addr_resolve(vega_addr *out, size_t max, const char *host, const char *port,
                               int family, vega_deadline dl);

/*
 * Writes a as text: "1.2.3.4:80", "[::1]:80", "unix:/path", "unix:@name", "unix:" for an
 * unnamed Unix socket. The result always parses back with vega_addr_parse.
 * Returns the length written (NUL excluded); VEGA_ERR_NOBUF (cap too small; buf holds a
 * truncated string when cap > 0), -EAFNOSUPPORT (empty or unknown family).
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_addr_format(const vega_addr *a, char *buf, size_t cap);

/* AF_INET, AF_INET6, AF_UNIX, or AF_UNSPEC for an empty address. Since 0.1. */
VEGA_API int vega_addr_family(const vega_addr *a);

/* The port of an IP address; 0 for other families. Since 0.1. */
VEGA_API uint16_t vega_addr_port(const vega_addr *a);

/* Sets the port of an IP address; no effect on other families. Since 0.1. */
VEGA_API void vega_addr_set_port(vega_addr *a, uint16_t port);

/* True when a and b name the same endpoint (family, address, port or path). Since 0.1. */
VEGA_API bool vega_addr_equal(const vega_addr *a, const vega_addr *b);

/* ---- sockets ------------------------------------------------------------------------------- */

/* An open socket: a TCP or Unix stream (listening or connected) or a UDP socket. Owned by
 * whoever created it; one task may read while another writes, but no two tasks may read (or
 * write, or accept) at the same time. */
typedef struct vega_sock vega_sock;

/* Flags for vega_tcp_listen and vega_udp_bind. */
enum {
    VEGA_LISTEN_REUSEPORT = 1u << 0,   /* SO_REUSEPORT: several sockets share one port */
    VEGA_LISTEN_V6ONLY = 1u << 1,      /* IPV6_V6ONLY on an AF_INET6 socket */
    VEGA_LISTEN_UNLINK_STALE = 1u << 2, /* Unix: remove a socket file nobody listens on before
                                           binding, and remove the path at close */
};

/*
 * Opens a listening stream socket on addr: TCP for AF_INET/AF_INET6 (with SO_REUSEADDR), a
 * Unix stream socket for AF_UNIX. Port 0 picks a free port: read it back with
 * vega_sock_local_addr. backlog <= 0 means SOMAXCONN.
 * Returns 0; -EINVAL, -EAFNOSUPPORT, or the -errno of socket/bind/listen (-EADDRINUSE,
 * -EACCES, -EADDRNOTAVAIL, -EMFILE, ...). Does not suspend. Context: any thread. Since 0.1.
 */
VEGA_API int vega_tcp_listen(vega_sock **out, const vega_addr *addr, int backlog,
                             unsigned flags);

/* vega_tcp_listen on a Unix path ('@' prefix = abstract namespace). Since 0.1. */
VEGA_API int vega_unix_listen(vega_sock **out, const char *path, int backlog, unsigned flags);

/*
 * Accepts one connection. conn: receives a new socket the caller owns. peer: receives the
 * peer's address (may be NULL). Transient accept errors (ECONNABORTED, EPROTO, EINTR) are
 * retried inside.
 * Returns 0, -ETIMEDOUT, -ECANCELED, -EMFILE/-ENFILE/-ENOBUFS/-ENOMEM (out of resources: the
 * listener stays usable), -EINVAL (not a listening stream socket), other -errno.
 * Context: inside a task. Since 0.1.
 */
VEGA_API int vega_tcp_accept(vega_sock *listener, vega_sock **conn, vega_addr *peer,
                             vega_deadline dl);

/*
 * Connects a stream socket to addr (TCP, or Unix for an AF_UNIX address). *out receives the
 * connected socket only on success.
 * Returns 0, -ECONNREFUSED, -ETIMEDOUT, -ECANCELED, -ENETUNREACH, -EHOSTUNREACH, -ENOENT (no
 * such Unix path), other -errno. Context: inside a task. Since 0.1.
 */
VEGA_API int vega_tcp_connect(vega_sock **out, const vega_addr *addr, vega_deadline dl);

/* vega_tcp_connect to a Unix path. Since 0.1. */
VEGA_API int vega_unix_connect(vega_sock **out, const char *path, vega_deadline dl);

/*
 * Reads up to len bytes (len > 0). Returns the count (> 0), 0 at end of stream (the peer shut
 * down its writing side; for UDP an empty datagram), -ETIMEDOUT, -ECANCELED, -ECONNRESET,
 * other -errno. A cancelled or timed-out read consumed nothing: the socket stays usable.
 * Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_sock_read(vega_sock *s, void *buf, size_t len, vega_deadline dl);

/*
 * Writes all len bytes: returns len only when every byte was accepted by the kernel, else a
 * negative code. written (may be NULL) receives the bytes accepted, on success and on error,
 * so a caller that retries knows where to resume.
 * Returns len, -ETIMEDOUT, -ECANCELED, -EPIPE or -ECONNRESET (the peer is gone), other -errno.
 * Never raises SIGPIPE. Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_sock_write(vega_sock *s, const void *buf, size_t len, size_t *written,
                                    vega_deadline dl);

/* vega_sock_write for a gather list; iov: borrowed, not modified. Returns the total length or a
 * negative code, with *written as for vega_sock_write. Since 0.1. */
VEGA_API vega_ssize vega_sock_writev(vega_sock *s, const struct iovec *iov, int iovcnt,
                                     size_t *written, vega_deadline dl);

/* shutdown(2): how is SHUT_RD, SHUT_WR or SHUT_RDWR. Returns 0 or -errno (-ENOTCONN when the
 * peer is already gone). Does not suspend. Since 0.1. */
VEGA_API int vega_sock_shutdown(vega_sock *s, int how);

/*
 * Closes s and frees it (NULL is a no-op). No task may be inside a call on s: cancel and join
 * them first. A Unix listener made with VEGA_LISTEN_UNLINK_STALE removes its path.
 * Returns 0 or -errno from close(2) (the socket is gone either way). Since 0.1.
 */
VEGA_API int vega_sock_close(vega_sock *s);

/* Closes and frees s like vega_sock_close, but a TCP connection ends with a reset (SO_LINGER
 * 0) instead of an orderly close: unsent data is dropped and the peer's next read or write
 * fails with -ECONNRESET. For refusing or killing a connection. Returns 0 or -errno. Since 0.1. */
VEGA_API int vega_sock_abort(vega_sock *s);

/* Called in a fresh task when a parked socket needs attention. status: > 0 the socket is
 * readable (data, EOF or an error to read), -ETIMEDOUT the idle deadline passed, -ECANCELED the
 * runtime is shutting down. The function owns s: it reads, writes, parks it again or closes it. */
typedef void (*vega_sock_ready_fn)(vega_sock *s, void *arg, int status);

/*
 * Parks s with no task and no buffer: the calling task hands s over and may return (an idle
 * connection then costs its socket and a few hundred bytes, not a task stack and a read
 * buffer). When s becomes readable, when idle_dl passes (VEGA_DEADLINE_NEVER: never) or when the
 * runtime shuts down, a new task runs fn(s, arg, status). s: taken on success (do not touch it
 * until fn runs); arg: retained.
 * Returns 0; -EBUSY (s already parked); -ECANCELED (the runtime is stopping: s stays the
 * caller's); -ENOMEM; VEGA_ERR_NOTASK.
 * Context: inside a task. Since 0.1.
 */
VEGA_API int vega_sock_park(vega_sock *s, vega_sock_ready_fn fn, void *arg, vega_deadline idle_dl);

/* TCP_NODELAY on or off. Returns 0 or -errno (-EOPNOTSUPP for non-TCP sockets). Since 0.1. */
VEGA_API int vega_sock_set_nodelay(vega_sock *s, bool on);

/* SO_KEEPALIVE on or off; idle_s, interval_s, count set TCP_KEEPIDLE, TCP_KEEPINTVL,
 * TCP_KEEPCNT when non-zero (0 = the system default). Returns 0 or -errno. Since 0.1. */
VEGA_API int vega_sock_set_keepalive(vega_sock *s, bool on, unsigned idle_s, unsigned interval_s,
                                     unsigned count);

/* SO_RCVBUF / SO_SNDBUF in bytes; 0 leaves one unchanged. Returns 0 or -errno. Since 0.1. */
VEGA_API int vega_sock_set_buffers(vega_sock *s, int rcvbuf, int sndbuf);

/* The file descriptor (still owned by s). Since 0.1. */
VEGA_API int vega_sock_fd(const vega_sock *s);

/* getsockname / getpeername into *out. Returns 0 or -errno (-ENOTCONN). Since 0.1. */
VEGA_API int vega_sock_local_addr(const vega_sock *s, vega_addr *out);
VEGA_API int vega_sock_peer_addr(const vega_sock *s, vega_addr *out);

/* ---- UDP ----------------------------------------------------------------------------------- */

/* Opens a UDP socket bound to addr (port 0 = any free port). flags: VEGA_LISTEN_REUSEPORT,
 * VEGA_LISTEN_V6ONLY. Returns 0 or -errno. Does not suspend. Since 0.1. */
VEGA_API int vega_udp_bind(vega_sock **out, const vega_addr *addr, unsigned flags);

/* Opens a UDP socket connected to addr: vega_sock_read/vega_udp_send_to(NULL) then talk to it
 * alone. Returns 0 or -errno. Does not suspend. Since 0.1. */
VEGA_API int vega_udp_connect(vega_sock **out, const vega_addr *addr);

/*
 * Sends one datagram to `to` (NULL on a connected socket). Returns len, -EMSGSIZE,
 * -ECONNREFUSED (an earlier datagram on a connected socket was refused), -ETIMEDOUT,
 * -ECANCELED, other -errno. Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_udp_send_to(vega_sock *s, const void *buf, size_t len,
                                     const vega_addr *to, vega_deadline dl);

/*
 * Receives one datagram (truncated to len bytes; the rest is dropped); from (may be NULL)
 * receives the sender. Returns the bytes stored, -ETIMEDOUT, -ECANCELED, -ECONNREFUSED,
 * other -errno. Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_udp_recv_from(vega_sock *s, void *buf, size_t len, vega_addr *from,
                                       vega_deadline dl);

/* ---- plain file descriptors ---------------------------------------------------------------- */

/*
 * Waits until fd (a pollable descriptor: socket, pipe, FIFO, tty, eventfd; not a regular
 * file) is ready for `events` (POLLIN, POLLOUT, ...). Returns the ready events (> 0),
 * -ETIMEDOUT or -ECANCELED. Context: inside a task. Since 0.1.
 */
VEGA_API int vega_fd_poll(int fd, unsigned events, vega_deadline dl);

/* read(2) on a pollable descriptor in O_NONBLOCK mode, waiting while it would block.
 * Returns the count, 0 at end of file, -ETIMEDOUT, -ECANCELED, -errno. Since 0.1. */
VEGA_API vega_ssize vega_fd_read(int fd, void *buf, size_t len, vega_deadline dl);

/* Writes all len bytes to a pollable descriptor in O_NONBLOCK mode, as vega_sock_write does.
 * Since 0.1. */
VEGA_API vega_ssize vega_fd_write(int fd, const void *buf, size_t len, size_t *written,
                                  vega_deadline dl);

#ifdef __cplusplus
}
#endif
#endif
