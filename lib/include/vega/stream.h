/* SPDX-License-Identifier: MIT */
/* Byte streams behind one interface (TCP, Unix, pipes, and later TLS and QUIC streams, the test
 * duplex and faulty streams), and a fixed-capacity buffered reader over any of them. */
#ifndef VEGA_STREAM_H
#define VEGA_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/io.h>
#include <vega/time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Rules every stream follows (and every vega_stream_ops implementation must keep):
 *  - read returns the bytes stored (> 0), 0 at end of stream, or a negative code. A read that
 *    timed out or was cancelled consumed nothing.
 *  - write and writev are all-or-error: they return the full length only when every byte was
 *    accepted, else a negative code; *written then says how many bytes were accepted, so a
 *    caller that retries knows where to resume. Writes never lose data silently.
 *  - close releases the stream; where the stream buffers (TLS later), it flushes first and
 *    reports a failure to flush. The stream is gone either way.
 *  - One task may read while another writes; two tasks must not read (or write) at once.
 *  - Every call that can suspend takes a deadline last (see vega/time.h): -ETIMEDOUT when it
 *    passes, -ECANCELED when the task is cancelled.
 */
typedef struct vega_stream vega_stream;

/*
 * The vtable of a stream implementation. `user` is the pointer given to vega_stream_new.
 * The generic vega_stream_* wrappers check arguments first (len > 0 for read, iovcnt >= 0),
 * always pass a non-NULL `written`, and fill in the optional entries:
 *  - read: required.
 *  - write / writev: at least one is required; the missing one is built from the other.
 *  - shutdown: optional (NULL: -EOPNOTSUPP). how is SHUT_RD, SHUT_WR or SHUT_RDWR.
 *  - close: optional; releases `user` (and what it owns). Called exactly once.
 *  - sendfile: optional; NULL makes vega_stream_sendfile copy through a buffer.
 * Since 0.1.
 */
typedef struct vega_stream_ops {
    const char *name; /* for debugging: "sock", "fd", "duplex", "faulty", ... */
    vega_ssize (*read)(void *user, void *buf, size_t len, vega_deadline dl);
    vega_ssize (*write)(void *user, const void *buf, size_t len, size_t *written, vega_deadline dl);
    vega_ssize (*writev)(void *user, const struct iovec *iov, int iovcnt, size_t *written,
                         vega_deadline dl);
    int (*shutdown)(void *user, int how, vega_deadline dl);
    int (*close)(void *user, vega_deadline dl);
    vega_ssize (*sendfile)(void *user, int in_fd, off_t offset, size_t len, size_t *written,
                           vega_deadline dl);
} vega_stream_ops;

/* Flags for vega_stream_from_sock and vega_stream_from_fd. */
enum {
    VEGA_STREAM_BORROW = 1u << 0, /* the stream retains the socket / descriptors instead of
                                     taking them: closing the stream leaves them open */
};

/*
 * Creates a stream from an implementation. ops: retained (must outlive the stream; usually a
 * static const). user: retained; released by ops->close when the stream is closed.
 * Returns 0, -ENOMEM, -EINVAL (no read, or neither write nor writev).
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_stream_new(vega_stream **out, const vega_stream_ops *ops, void *user);

/*
 * A stream over a connected TCP or Unix stream socket. sock: taken on success (closing the
 * stream closes it) unless flags has VEGA_STREAM_BORROW, in which case it is retained (must
 * outlive the stream, which never closes it). On failure the caller still owns sock.
 * shutdown is shutdown(2); sendfile is sendfile(2).
 * Returns 0, -ENOMEM, -EINVAL (sock is NULL or unknown flags).
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_stream_from_sock(vega_stream **out, vega_sock *sock, unsigned flags);

/*
 * The socket under s when s was made by vega_stream_from_sock, else NULL (a TLS stream, a
 * descriptor stream, any other implementation). Borrowed: the stream keeps owning (or
 * retaining) it. Lets a caller that needs the socket itself (splice, parking) use it; reading or
 * writing it directly bypasses nothing, as the sock stream holds no buffer.
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API vega_sock *vega_stream_sock(const vega_stream *s);

/*
 * Points a borrowing socket stream (made by vega_stream_from_sock with VEGA_STREAM_BORROW) at
 * another socket, so that a server can keep one wrapper per worker instead of making one per
 * wake-up. sock: retained from now on, as by vega_stream_from_sock; the previous one is no
 * longer touched. The stream holds no buffer or state of its socket, so nothing carries over.
 * Returns 0, or -EINVAL (s or sock is NULL, s is another kind of stream, or s owns its socket).
 * Context: any thread; never suspends; not while another task uses s. Since 0.2.
 */
VEGA_API int vega_stream_sock_rebind(vega_stream *s, vega_sock *sock);

/*
 * A stream over pollable descriptors (pipes, FIFOs, ttys, socketpairs): reads go to rfd and
 * writes to wfd through vega_fd_read/vega_fd_write; either may be -1 (that direction then
 * fails with -EBADF), and both may be the same descriptor. The descriptors are put in
 * O_NONBLOCK mode (this changes the open file description, shared with its duplicates).
 * rfd, wfd: taken on success (closing the stream closes them) unless flags has
 * VEGA_STREAM_BORROW (retained). shutdown(SHUT_WR) closes an owned wfd so that the reader of a
 * pipe sees end of stream; on a borrowed wfd it only makes later writes fail with -EPIPE.
 * shutdown(SHUT_RD) likewise closes an owned rfd; later reads return 0. When rfd == wfd is a
 * socket, shutdown is shutdown(2).
 * Returns 0, -ENOMEM, -EINVAL (both -1, unknown flags), -errno from fcntl (-EBADF).
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_stream_from_fd(vega_stream **out, int rfd, int wfd, unsigned flags);

/*
 * Reads up to len bytes (len > 0) into buf (borrowed).
 * Returns the count (> 0), 0 at end of stream, -EINVAL (len == 0), -ETIMEDOUT, -ECANCELED,
 * or the implementation's codes (-ECONNRESET, -EBADF, other -errno).
 * Context: may suspend; inside a task (the in-memory duplex also works from plain threads).
 * Since 0.1.
 */
VEGA_API vega_ssize vega_stream_read(vega_stream *s, void *buf, size_t len, vega_deadline dl);

/*
 * Writes all len bytes of buf (borrowed). written (may be NULL) receives the bytes accepted,
 * on success and on error.
 * Returns len; -ETIMEDOUT, -ECANCELED, -EPIPE or -ECONNRESET (the peer is gone), other codes
 * of the implementation, each with *written telling how many bytes went out.
 * Context: may suspend; inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_stream_write(vega_stream *s, const void *buf, size_t len, size_t *written,
                                      vega_deadline dl);

/* vega_stream_write for a gather list. iov: borrowed, not modified. Returns the total length or
 * a negative code (-EINVAL for iovcnt < 0 or a total past SSIZE_MAX), with *written as for
 * vega_stream_write. Since 0.1. */
VEGA_API vega_ssize vega_stream_writev(vega_stream *s, const struct iovec *iov, int iovcnt,
                                       size_t *written, vega_deadline dl);

/*
 * Sends len bytes of the regular file in_fd (borrowed) from offset (the file's own position
 * is neither used nor moved); all-or-error like vega_stream_write. Uses sendfile(2) where the
 * stream supports it, else reads the file through a buffer and writes it. written (may be
 * NULL) receives the bytes sent, on success and on error.
 * Returns len; -ENODATA (the file ended first: *written bytes were sent), -EINVAL (offset < 0,
 * len past SSIZE_MAX), -ETIMEDOUT, -ECANCELED, -EPIPE, -ECONNRESET, -ENOMEM, other -errno
 * (pread, sendfile).
 * Context: may suspend; inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_stream_sendfile(vega_stream *s, int in_fd, off_t offset, size_t len,
                                         size_t *written, vega_deadline dl);

/*
 * Shuts down one or both directions: how is SHUT_RD, SHUT_WR or SHUT_RDWR. After SHUT_WR the
 * peer reads end of stream once it drained what was sent.
 * Returns 0, -EINVAL (bad how), -EOPNOTSUPP (the stream cannot), -ENOTCONN, other codes of
 * the implementation; may return -ETIMEDOUT/-ECANCELED for streams that send on shutdown.
 * Context: may suspend (TLS will); inside a task. Since 0.1.
 */
VEGA_API int vega_stream_shutdown(vega_stream *s, int how, vega_deadline dl);

/*
 * Closes s and frees it (NULL is a no-op): flushes what the implementation buffers, then
 * releases it. No task may be inside another call on s.
 * Returns 0, or the first error from flushing or closing (s is gone either way).
 * Context: may suspend (buffering streams flush); inside a task. Since 0.1.
 */
VEGA_API int vega_stream_close(vega_stream *s, vega_deadline dl);

/* The user pointer given to vega_stream_new (borrowed). Since 0.1. */
VEGA_API void *vega_stream_user(const vega_stream *s);

/* The implementation's vtable (borrowed): lets a wrapper recognise its own streams. Since 0.1. */
VEGA_API const vega_stream_ops *vega_stream_get_ops(const vega_stream *s);

/* ---- buffered reader ----------------------------------------------------------------------- */

/*
 * A buffered reader over a stream. Storage owned by the caller; the fields are private. The
 * buffer has a fixed capacity chosen at init and never grows. One task at a time.
 */
typedef struct vega_bufreader {
    vega_stream *s_;
    unsigned char *buf_;
    size_t cap_, pos_, end_;
    bool owned_, eof_;
} vega_bufreader;

/* Buffer capacity used when vega_bufreader_init is given cap == 0. */
#define VEGA_BUFREADER_DEFAULT_CAP 8192

/*
 * Initialises br over s. s: retained (must outlive br; br never closes it). buf: retained
 * caller storage of cap bytes, or NULL to have br allocate cap bytes (0 = the default
 * VEGA_BUFREADER_DEFAULT_CAP), freed by vega_bufreader_fini.
 * Returns 0, -ENOMEM, -EINVAL (s NULL, or buf given with cap 0).
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_bufreader_init(vega_bufreader *br, vega_stream *s, void *buf, size_t cap);

/* Frees the buffer if br allocated it. Bytes still buffered are dropped. Since 0.1. */
VEGA_API void vega_bufreader_fini(vega_bufreader *br);

/* Bytes buffered now (readable without suspending). Since 0.1. */
VEGA_API size_t vega_bufreader_buffered(const vega_bufreader *br);

/* The buffer's capacity. Since 0.1. */
VEGA_API size_t vega_bufreader_capacity(const vega_bufreader *br);

/*
 * Reads up to n bytes (n > 0) into buf (borrowed): buffered bytes first; with nothing
 * buffered, a read of n >= capacity goes to the stream directly.
 * Returns the count (> 0), 0 at end of stream, -EINVAL (n == 0), or the stream's codes
 * (-ETIMEDOUT, -ECANCELED: nothing consumed).
 * Context: may suspend. Since 0.1.
 */
VEGA_API vega_ssize vega_bufreader_read(vega_bufreader *br, void *buf, size_t n, vega_deadline dl);

/*
 * Reads exactly n bytes into buf (borrowed).
 * Returns n; VEGA_ERR_CLOSED (the stream ended before the first byte: a clean end);
 * VEGA_ERR_PROTO (the stream ended after some but not all of the n bytes: truncated; those
 * bytes are consumed); -EINVAL (n == 0); the stream's codes.
 * A timeout or cancellation with n <= capacity consumes nothing (the bytes stay buffered, so
 * the call can be repeated); with n > capacity the bytes already copied are consumed.
 * Context: may suspend. Since 0.1.
 */
VEGA_API vega_ssize vega_bufreader_read_exact(vega_bufreader *br, void *buf, size_t n,
                                              vega_deadline dl);

/*
 * Reads up to and including the first byte equal to delim (0..255), at most max bytes, into
 * out (borrowed, max bytes of room). max must not exceed the capacity: the search runs in the
 * buffer and consumes only on success, so a timeout, a cancellation or a limit error leaves
 * every byte buffered.
 * Returns the length (> 0; the last byte is delim unless the stream ended first), 0 at end of
 * stream with nothing buffered, -EMSGSIZE (max bytes arrived without delim: nothing consumed;
 * the caller may read them with vega_bufreader_read, or give up), -EINVAL (max == 0 or
 * max > capacity, delim out of range), the stream's codes.
 * Context: may suspend. Since 0.1.
 */
VEGA_API vega_ssize vega_bufreader_read_until(vega_bufreader *br, int delim, void *out, size_t max,
                                              vega_deadline dl);

/*
 * Waits until at least want bytes (1..capacity) are buffered, or the stream ended, and points
 * *data at the buffered bytes without consuming them. *data: returns borrowed, valid until the
 * next call on br.
 * Returns the bytes available (>= want; fewer only at end of stream; 0 at end of stream with
 * nothing buffered), -EINVAL (want == 0 or want > capacity), the stream's codes (nothing
 * consumed).
 * Context: may suspend. Since 0.1.
 */
VEGA_API vega_ssize vega_bufreader_peek(vega_bufreader *br, const void **data, size_t want,
                                        vega_deadline dl);

/* Consumes n bytes of what peek showed (n <= vega_bufreader_buffered). Returns 0 or -EINVAL.
 * Context: never suspends. Since 0.1. */
VEGA_API int vega_bufreader_consume(vega_bufreader *br, size_t n);

#ifdef __cplusplus
}
#endif
#endif
