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
 * Returns the number of addresses stored (>= 1); -EINVAL (bad port, bad arguments),
 * VEGA_ERR_DNS_NOT_FOUND (the name is unknown), VEGA_ERR_DNS_NO_ADDRESS (no address of that
 * family), VEGA_ERR_DNS_SERVER (temporary resolver failure) (the three in <vega/dns.h>),
 * -EAFNOSUPPORT (numeric host of the other family), -ENOMEM, -EIO (other resolver
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
 * truncated string when cap > 0), -EAFNOSUPPORT (empty or unknown family); -EINVAL (a bad
 * argument). Context: any thread. Since 0.1.
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
    VEGA_LISTEN_REUSEPORT = 1u << 0,    /* SO_REUSEPORT: several sockets share one port */
    VEGA_LISTEN_V6ONLY = 1u << 1,       /* IPV6_V6ONLY on an AF_INET6 socket */
    VEGA_LISTEN_UNLINK_STALE = 1u << 2, /* Unix: remove a socket file nobody listens on before
                                           binding, and remove the path at close */
    VEGA_LISTEN_SHARED = 1u << 3,       /* other processes accept on the same socket: take one
                                           connection per accept, never hold any ahead (no
                                           io_uring multishot accept), so closing the listener
                                           drops nothing the others could have served */
};

/*
 * Opens a listening stream socket on addr: TCP for AF_INET/AF_INET6 (with SO_REUSEADDR), a
 * Unix stream socket for AF_UNIX. Port 0 picks a free port: read it back with
 * vega_sock_local_addr. backlog <= 0 means SOMAXCONN.
 * Returns 0; -EINVAL, -EAFNOSUPPORT, or the -errno of socket/bind/listen (-EADDRINUSE,
 * -EACCES, -EADDRNOTAVAIL, -EMFILE, ...); -ENOMEM (no memory). Does not suspend. Context: any
 * thread. Since 0.1.
 */
VEGA_API int vega_tcp_listen(vega_sock **out, const vega_addr *addr, int backlog, unsigned flags);

/*
 * Wraps fd, a stream socket already listening (inherited from a parent, e.g. a shard of
 * <vega/shard.h>), as a listener; it is made non-blocking and close-on-exec. flags: only
 * VEGA_LISTEN_SHARED counts. fd: taken on success and on -ENOMEM (closed; other copies of
 * it in other processes keep the socket open).
 * Returns 0; -EINVAL (fd < 0, or not a listening stream socket); -ENOMEM; -errno of fcntl or
 * getsockopt. Does not suspend. Context: any thread. Since 0.1.
 */
VEGA_API int vega_tcp_listen_fd(vega_sock **out, int fd, unsigned flags);

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
 * such Unix path), other -errno; -EAFNOSUPPORT (an address that is not IPv4 or IPv6); -EINVAL (a
 * bad argument); -ENOMEM (no memory). Context: inside a task. Since 0.1.
 */
VEGA_API int vega_tcp_connect(vega_sock **out, const vega_addr *addr, vega_deadline dl);

/* Where a connection's local side is bound before it connects (curl's --interface and
 * --local-port). Zero-initialised: nothing is bound, the kernel picks as for vega_tcp_connect. */
typedef struct vega_tcp_local {
    vega_addr addr;    /* the local address (its port is ignored); len 0 = any */
    char device[16];   /* an interface name for SO_BINDTODEVICE (IFNAMSIZ, with the NUL);
                          "" = none */
    uint16_t port_min; /* the local port: the first free one of [port_min, port_max], tried in
                          order; 0 = any (the kernel's pick) */
    uint16_t port_max; /* 0 = port_min alone */
} vega_tcp_local;

/*
 * vega_tcp_connect with the local side bound first: to local->device (SO_BINDTODEVICE), then
 * to local->addr and the first free port of local's range. local: borrowed; NULL or all zero =
 * vega_tcp_connect. Returns what vega_tcp_connect returns (-ENOMEM among them), and -ENODEV (no
 * interface of that name), -EPERM (binding to the device is not allowed), -EADDRNOTAVAIL
 * (local->addr is not an address of this host), -EAFNOSUPPORT (local->addr is of another family
 * than addr), -EADDRINUSE (no port of the range is free), -EINVAL (port_max below port_min, a
 * device name of 16 bytes or more, a local address of a family other than IPv4 or IPv6, or addr a
 * Unix address). Context: inside a task. Since 0.2.
 */
VEGA_API int vega_tcp_connect_bound(vega_sock **out, const vega_addr *addr,
                                    const vega_tcp_local *local, vega_deadline dl);

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
 * negative code, with *written as for vega_sock_write; -EINVAL (a bad argument). Since 0.1. */
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
 * Readiness is edge-like: park after a read that found the socket empty or came back short of
 * the buffer (bytes that were already waiting before such a read raise no new event). A
 * hang-up or error once reported is remembered: every later park of s fires at once. On
 * io_uring the bytes that wake a parked stream socket may already have been received into the
 * runtime's buffer ring: read s with vega_sock_read (or a stream over it), never through
 * vega_sock_fd() directly.
 * Returns 0; -EBUSY (s already parked); -ECANCELED (the runtime is stopping: s stays the
 * caller's); -ENOMEM; VEGA_ERR_NOTASK.
 * Context: inside a task. Since 0.1.
 */
VEGA_API int vega_sock_park(vega_sock *s, vega_sock_ready_fn fn, void *arg, vega_deadline idle_dl);

/*
 * Marks s as read through its descriptor by the owner (splice(2), recv(2), a foreign library):
 * its parks then wait for readiness and never receive into the runtime's buffer ring, so no
 * byte of s is ever held by the runtime and vega_sock_fd() may be read directly after a park
 * fires. vega_sock_read keeps working. Call before the first vega_sock_park of s. Does not
 * suspend. Since 0.1.
 */
VEGA_API void vega_sock_set_direct_read(vega_sock *s);

/*
 * Sends count bytes of the file file_fd, starting at byte offset, to the stream socket s with
 * sendfile(2) (no copy through user memory); all-or-error like vega_sock_write. The file's own
 * position is not used or moved. file_fd: borrowed, a descriptor sendfile can read (a regular
 * file). sent (may be NULL) receives the bytes sent, on success and on error, so a retry
 * resumes at offset + *sent. Reading the file may block the worker on a cold page cache.
 * Returns count, -ENODATA (the file ended first), -ETIMEDOUT, -ECANCELED, -EPIPE or
 * -ECONNRESET (the peer is gone), -EINVAL (offset beyond INT64_MAX, a file sendfile cannot
 * read), -EBADF, other -errno. Never raises SIGPIPE. Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_sock_sendfile(vega_sock *s, int file_fd, uint64_t offset, size_t count,
                                       size_t *sent, vega_deadline dl);

/*
 * Moves up to count bytes from any descriptor splice(2) can read (a pipe, a socket, a file) to
 * the stream socket s through a pipe, without copying through user memory; stops early only
 * at fd's end of file (count SIZE_MAX: until end of file). offset < 0 reads fd at (and moves)
 * its own position, as pipes and sockets require; offset >= 0 reads a file from that byte and
 * leaves its position alone. A non-blocking fd is waited for with POLLIN. sent (may be NULL)
 * receives the bytes written to s, on success and on error. On error, up to a pipe's worth of
 * bytes already read from a non-seekable fd (up to 64 KiB) may be lost.
 * Returns the bytes moved (< count only at end of file), -ETIMEDOUT, -ECANCELED, -EPIPE,
 * -ECONNRESET, -EINVAL (fd cannot be spliced), -ESPIPE (offset >= 0 on a pipe or socket),
 * -EMFILE, other -errno. Never raises SIGPIPE. Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_sock_splice_from(vega_sock *s, int fd, int64_t offset, size_t count,
                                          size_t *sent, vega_deadline dl);

/* TCP_NODELAY on or off. Returns 0 or -errno (-EOPNOTSUPP for non-TCP sockets). Since 0.1. */
VEGA_API int vega_sock_set_nodelay(vega_sock *s, bool on);

/* SO_KEEPALIVE on or off; idle_s, interval_s, count set TCP_KEEPIDLE, TCP_KEEPINTVL,
 * TCP_KEEPCNT when non-zero (0 = the system default). Returns 0 or -errno; -EOPNOTSUPP (not a TCP
 * socket). Since 0.1. */
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
 * VEGA_LISTEN_V6ONLY. Returns 0 or -errno; -EINVAL (a bad argument). Does not suspend. Since 0.1.
 */
VEGA_API int vega_udp_bind(vega_sock **out, const vega_addr *addr, unsigned flags);

/*
 * Wraps fd, a bound UDP socket made elsewhere (inherited from a parent, e.g. a shard's socket
 * of a SO_REUSEPORT group that vega-serve --shards makes before forking); it is made
 * non-blocking and close-on-exec. fd: taken on success and on -ENOMEM (closed; other copies of
 * it in other processes keep the socket open).
 * Returns 0; -EINVAL (fd < 0, not a datagram socket, not bound to an IPv4 or IPv6 address);
 * -ENOMEM; -errno of fcntl, getsockopt or getsockname. Does not suspend. Context: any thread.
 * Since 0.2.
 */
VEGA_API int vega_udp_bind_fd(vega_sock **out, int fd);

/* Opens a UDP socket connected to addr: vega_sock_read/vega_udp_send_to(NULL) then talk to it
 * alone. Returns 0 or -errno; -EINVAL (a bad argument). Does not suspend. Since 0.1. */
VEGA_API int vega_udp_connect(vega_sock **out, const vega_addr *addr);

/*
 * Sends one datagram to `to` (NULL on a connected socket). Returns len, -EMSGSIZE,
 * -ECONNREFUSED (an earlier datagram on a connected socket was refused), -ETIMEDOUT,
 * -ECANCELED, other -errno. Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_udp_send_to(vega_sock *s, const void *buf, size_t len, const vega_addr *to,
                                     vega_deadline dl);

/*
 * Receives one datagram (truncated to len bytes; the rest is dropped); from (may be NULL)
 * receives the sender. Returns the bytes stored, -ETIMEDOUT, -ECANCELED, -ECONNREFUSED,
 * other -errno. Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_udp_recv_from(vega_sock *s, void *buf, size_t len, vega_addr *from,
                                       vega_deadline dl);

/* ---- UDP: batches, segmentation offload, ECN, packet info ------------------------------------ */

/* ECN codepoints (RFC 3168 section 5): the low two bits of the IPv4 TOS byte or the IPv6 traffic
 * class. */
enum {
    VEGA_ECN_NOT_ECT = 0, /* Not-ECT: the sender does not do ECN */
    VEGA_ECN_ECT1 = 1,    /* ECT(1) */
    VEGA_ECN_ECT0 = 2,    /* ECT(0) */
    VEGA_ECN_CE = 3,      /* CE: congestion experienced */
};

/* UDP features: reported by vega_udp_features, switched by vega_udp_set_features. */
enum {
    VEGA_UDP_GSO = 1u << 0,     /* send: the kernel splits one buffer into segment_size datagrams
                                   (UDP_SEGMENT); without it libvega sends them one by one */
    VEGA_UDP_GRO = 1u << 1,     /* recv: the kernel may coalesce consecutive datagrams of a flow
                                   into one buffer, reported with its segment size (UDP_GRO) */
    VEGA_UDP_ECN = 1u << 2,     /* recv: the ECN codepoint of each datagram (IP_RECVTOS /
                                   IPV6_RECVTCLASS); setting it on send needs nothing turned on */
    VEGA_UDP_PKTINFO = 1u << 3, /* recv: the destination (local) address of each datagram
                                   (IP_PKTINFO / IPV6_RECVPKTINFO); choosing the source on send
                                   needs nothing turned on */
};

/* Most segments one GSO message may carry: UDP_MAX_SEGMENTS of older kernels (newer ones take
 * 128; libvega keeps to the lower limit everywhere). The whole train must also fit one IP
 * packet's payload (65507 bytes over IPv4): a longer one fails with -EMSGSIZE. */
#define VEGA_UDP_MAX_SEGMENTS 64

/* vega_udp_msg.flags, set by vega_udp_recv_batch. */
enum {
    VEGA_UDP_MSG_TRUNC = 1u << 0, /* the datagram was longer than cap: the rest was dropped */
};

/*
 * One message of a vega_udp_send_batch / vega_udp_recv_batch: a datagram, or a train of
 * equal-sized datagrams (the last may be shorter) when segment_size is set. Plain data.
 * Addresses may be IPv4 or IPv6 on either kind of socket: an AF_INET address given to an
 * AF_INET6 socket is sent as its v4-mapped form (::ffff:a.b.c.d), and a v4-mapped address
 * given to an AF_INET socket as plain IPv4. Received addresses come in the socket's family
 * (v4 peers of a dual-stack AF_INET6 socket appear v4-mapped, as with vega_udp_recv_from).
 * About 300 bytes each: keep a large array off a small task stack (64 of them are 19 KiB).
 */
typedef struct vega_udp_msg {
    void *buf;       /* borrowed: the payload (send) or the room for it (recv) */
    size_t len;      /* send: payload bytes; recv (out): bytes stored */
    size_t cap;      /* recv: room in buf (a GRO buffer wants 64 KiB); unused by send */
    vega_addr addr;  /* send: destination, len 0 on a connected socket; recv (out): the sender */
    vega_addr local; /* send: source address (port ignored), len 0 = the kernel chooses;
                        recv (out): the address the datagram was sent to, port 0 (the socket's
                        own: vega_sock_local_addr), len 0 unless VEGA_UDP_PKTINFO is on */
    uint16_t segment_size; /* send: split len into datagrams of this size (GSO), 0 = one
                              datagram; recv (out): size of the coalesced datagrams in buf
                              (the last may be shorter), 0 = buf holds one datagram */
    uint8_t ecn;           /* send: VEGA_ECN_* for the IP header (0 = the socket's TOS/traffic class
                              unchanged; otherwise the DSCP bits are sent as 0); recv (out): the
                              codepoint received, 0 unless VEGA_UDP_ECN is on */
    uint8_t flags;         /* recv (out): VEGA_UDP_MSG_* */
} vega_udp_msg;

/*
 * The features this kernel offers on s (VEGA_UDP_*): probed once per process at the first call
 * (without touching s), less VEGA_UDP_GSO on a socket where GSO was switched off or found not
 * to work (a send that failed with EIO: the route's device cannot offload checksums). 0 for
 * Unix datagram sockets. Does not say what is switched on. Context: any thread. Since 0.1.
 */
VEGA_API unsigned vega_udp_features(vega_sock *s);

/*
 * Switches features on or off for s: VEGA_UDP_GRO, VEGA_UDP_ECN and VEGA_UDP_PKTINFO set the
 * socket options behind the receive side (on a dual-stack AF_INET6 socket, for IPv4 peers
 * too); VEGA_UDP_GSO off makes vega_udp_send_batch split trains itself, on undoes that. With
 * GRO on, read s only with vega_udp_recv_batch (vega_udp_recv_from and vega_sock_read cannot
 * report the segment size of a coalesced buffer).
 * Returns the features among `features` that are now on (a feature the kernel lacks is left
 * out: not an error; 0 when on is false or s is a Unix socket); -EINVAL (s NULL, not a
 * datagram socket); other -errno from setsockopt. Does not suspend. Context: any thread, but
 * not while another thread sends on s. Since 0.1.
 */
VEGA_API int vega_udp_set_features(vega_sock *s, unsigned features, bool on);

/*
 * Sends msgs[0..n) in order with as few system calls as it can (sendmmsg, GSO trains).
 * msgs: borrowed, not modified (buffers too). A message with segment_size > 0 and len >
 * segment_size goes out as ceil(len / segment_size) datagrams: one GSO send where the kernel
 * has it, else one datagram each (a train the kernel took in part is finished before the call
 * returns, waiting if it must; should that fail, the train counts as sent and its remaining
 * datagrams are lost, as UDP may lose any). Each message counts once. ecn and local go out as
 * IP_TOS / IPV6_TCLASS and IP_PKTINFO / IPV6_PKTINFO control messages; Unix sockets ignore
 * them. Waits only while not one message could be sent.
 * Returns the number of messages sent (1..n; 0 when n is 0): fewer than n when the socket's
 * buffer filled or a later message failed (the next call reports that failure). Errors, when
 * the first message could not be sent: -EINVAL (ecn > 3, more than VEGA_UDP_MAX_SEGMENTS
 * segments, bad address), -EMSGSIZE, -ECONNREFUSED (an earlier datagram on a connected socket
 * was refused), -EADDRNOTAVAIL, -ENETUNREACH or -EINVAL (the kernel cannot send from local),
 * -ETIMEDOUT, -ECANCELED, other -errno. Context: inside a task. Since 0.1.
 */
VEGA_API int vega_udp_send_batch(vega_sock *s, const vega_udp_msg *msgs, size_t n,
                                 vega_deadline dl);

/*
 * Receives up to n datagrams (recvmmsg) into msgs[i].buf (cap bytes each), filling len, addr,
 * local, segment_size, ecn and flags of each message received. Waits only while none is
 * queued. With GRO on, one message may hold several datagrams (segment_size > 0).
 * msgs: borrowed; buf and cap are read, the rest written.
 * Returns the number of messages filled (1..n; 0 when n is 0), -ETIMEDOUT, -ECANCELED,
 * -ECONNREFUSED, other -errno; -EINVAL (a bad argument). Context: inside a task. Since 0.1.
 */
VEGA_API int vega_udp_recv_batch(vega_sock *s, vega_udp_msg *msgs, size_t n, vega_deadline dl);

/* ---- UDP through a SOCKS5 relay (RFC 1928 section 7) ----------------------------------------- */

/* Bytes of the RFC 1928 UDP request header: RSV RSV FRAG ATYP, the address, DST.PORT (IPv4:
 * 10, IPv6: 22, a name: 7 + its length). */
#define VEGA_UDP_SOCKS5_HDR_MAX 262

/* How a UDP socket talks through a SOCKS5 UDP relay (vega_proxy_udp_associate in
 * <vega/proxy.h> makes such sockets). Initialise with vega_udp_socks5_opts_init. */
typedef struct vega_udp_socks5_opts {
    vega_addr relay;      /* the relay: the UDP ASSOCIATE reply's BND.ADDR and BND.PORT */
    vega_sock *control;   /* the association's TCP control connection: taken by
                             vega_udp_set_socks5 (also when it fails), closed with the socket */
    const char *dst_name; /* NULL: each datagram's header names its destination's address.
                             Else every datagram goes to this name and dst_port (ATYP
                             DOMAINNAME, 1..255 bytes, copied: the relay resolves it), and
                             every datagram received from dst_port reports dst_as as its
                             sender, whatever address the relay's header names */
    uint16_t dst_port;
    vega_addr dst_as; /* with dst_name: the sender address reported (IPv4 or IPv6) */
} vega_udp_socks5_opts;
#define VEGA_UDP_SOCKS5_OPTS_VERSION 1

/* Fills o with the defaults (no relay). Since 0.3. */
VEGA_API void vega_udp_socks5_opts_init_versioned(vega_udp_socks5_opts *o, int opts_version);
#define vega_udp_socks5_opts_init(...)                                                             \
    vega_udp_socks5_opts_init_versioned(__VA_ARGS__, VEGA_UDP_SOCKS5_OPTS_VERSION)

/*
 * Puts s, an unconnected UDP socket of the relay's family (or AF_INET6 for an IPv4 relay),
 * in SOCKS5 relay mode for good. From then on vega_udp_send_to, vega_udp_send_batch,
 * vega_udp_recv_from and vega_udp_recv_batch go through the relay: each datagram sent goes to
 * the relay with the header in front (a second iovec: the payload is not copied; a train with
 * segment_size goes out datagram by datagram, each with its header; ecn and local are not
 * sent: the relay would not carry them), and each datagram received has the header taken off
 * (the payload moved to the start of buf) and the header's address as its sender (an IPv4 one
 * as AF_INET, whatever the socket's family; segment_size, ecn and local are 0). The header is
 * read into buf too: give room for it (VEGA_UDP_SOCKS5_HDR_MAX more than the largest payload;
 * a payload cut short is flagged VEGA_UDP_MSG_TRUNC, a header cut short dropped). Datagrams from
 * any address but the relay's (RFC 1928: "MUST drop any datagrams arriving from any source IP
 * address other than the one recorded for the particular association"), with FRAG other than
 * 0 (fragments are not reassembled), a malformed header or a DOMAINNAME (without dst_name) are
 * dropped and counted (vega_udp_socks5_dropped). GSO, GRO, ECN and packet info are switched
 * off and vega_udp_set_features turns none of them on. vega_sock_read and vega_sock_write do
 * not know the relay: do not use them on s.
 * The association lives as long as the control connection (RFC 1928 section 7): each send
 * first checks it (a non-blocking read that drops any bytes the relay sends), each receive
 * when no datagram is queued (datagrams that arrived before its close are still delivered),
 * and a receive waiting for a datagram is woken when it closes. Once it closed or failed, each
 * of the calls above returns -ECONNABORTED.
 * Returns 0; -EINVAL (s NULL, not an unconnected IPv4/IPv6 UDP socket, already in relay mode,
 * no relay, no control, a relay whose family s cannot reach, a name of 0 or over 255 bytes,
 * dst_as not IPv4/IPv6, an unknown layout version); -ENOMEM; -errno of epoll. Does not
 * suspend. Context: before s is used by more than one task. Since 0.3.
 */
VEGA_API int vega_udp_set_socks5_versioned(vega_sock *s, const vega_udp_socks5_opts *o,
                                           int opts_version);
#define vega_udp_set_socks5(...)                                                                   \
    vega_udp_set_socks5_versioned(__VA_ARGS__, VEGA_UDP_SOCKS5_OPTS_VERSION)

/* Datagrams a relay-mode socket dropped on receipt (see vega_udp_set_socks5); 0 for any other
 * socket. Context: any thread. Since 0.3. */
VEGA_API uint64_t vega_udp_socks5_dropped(const vega_sock *s);

/* ---- Unix datagram sockets, socket pairs, pipes ---------------------------------------------- */

/*
 * Opens a Unix datagram socket bound to path ('@' prefix = abstract namespace). It sends and
 * receives with vega_udp_send_to / vega_udp_recv_from / vega_udp_send_batch /
 * vega_udp_recv_batch and vega_sock_read. flags: VEGA_LISTEN_UNLINK_STALE (remove a socket file
 * nobody has bound before binding, and remove the path at close).
 * Returns 0, -EINVAL, -ENAMETOOLONG, -EADDRINUSE, -EACCES, other -errno; -ENOMEM (no memory). Does
 * not suspend. Context: any thread. Since 0.1.
 */
VEGA_API int vega_unix_dgram_bind(vega_sock **out, const char *path, unsigned flags);

/*
 * Opens a Unix datagram socket connected to path. The socket is bound to an autobound
 * abstract name first, so the peer can answer it. Returns 0, -ENOENT (no such path),
 * -ECONNREFUSED (nobody bound to it), -EINVAL, -ENAMETOOLONG, other -errno. Does not suspend.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_unix_dgram_connect(vega_sock **out, const char *path);

/*
 * Opens a connected pair of Unix sockets (socketpair(2), non-blocking, close-on-exec). type:
 * SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET. *a and *b receive sockets the caller owns, only on
 * success. Stream pairs work with vega_sock_read/write; datagram pairs with the UDP calls too.
 * Returns 0, -EINVAL (bad type or NULL), -EMFILE, -ENFILE, other -errno; -ENOMEM (no memory). Does
 * not suspend. Context: any thread. Since 0.1.
 */
VEGA_API int vega_sock_pair(int type, vega_sock **a, vega_sock **b);

/*
 * Opens a pipe (pipe2(2), O_NONBLOCK | O_CLOEXEC) for vega_fd_read / vega_fd_write /
 * vega_fd_poll. *rfd and *wfd receive descriptors the caller owns and closes, only on success.
 * Returns 0, -EINVAL (NULL), -EMFILE, -ENFILE. Does not suspend. Context: any thread. Since 0.1.
 */
VEGA_API int vega_pipe(int *rfd, int *wfd);

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
 * Unlike a socket write, a write to a pipe whose reader is gone raises SIGPIPE (write(2) has no
 * MSG_NOSIGNAL): programs that write to pipes should ignore SIGPIPE, as the tools do; the call
 * then returns -EPIPE. Since 0.1. */
VEGA_API vega_ssize vega_fd_write(int fd, const void *buf, size_t len, size_t *written,
                                  vega_deadline dl);

#ifdef __cplusplus
}
#endif
#endif
