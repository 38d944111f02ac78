/* SPDX-License-Identifier: MIT */
/* Error vocabulary: negative errno values pass through; library codes are -10000 and below. */
#ifndef VEGA_ERR_H
#define VEGA_ERR_H

#include <errno.h>
#include <stdbool.h>
#include <sys/types.h>

#include <vega/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Byte counts or negative error codes. */
typedef ssize_t vega_ssize;

/* Library codes. A POSIX meaning is returned as -errno, spelled the same in every header: a bad
 * argument is -EINVAL, no memory -ENOMEM, a passed deadline -ETIMEDOUT, a cancelled task
 * -ECANCELED. Library codes are -10000 and below, named VEGA_ERR_<WHAT> here and
 * VEGA_ERR_<MODULE>_<WHAT> in a module's header, in its range: -10000..-10199 general (below),
 * -10200 TLS (tls.h), -10300 crypto (crypto.h), -10400 compression (compress.h), -10500 HTTP
 * (http.h), -10600 DNS (dns.h), -10700 QUIC (quic.h), -10800 HPACK (hpack.h), -10900 HTTP/2
 * (h2.h), -11000 QPACK (qpack.h), -11100 HTTP/3 (h3.h), -11200 QUIC endpoint (quic_ep.h),
 * -11400 proxy clients (proxy.h), -11500 WebSocket (ws.h).
 * vega_strerror and friends know them all. */
enum {
    VEGA_ERR_BASE = -10000,
    VEGA_ERR_NOBUF = -10001,    /* output buffer too small; retry with more room */
    VEGA_ERR_PROTO = -10002,    /* the peer violated the protocol */
    VEGA_ERR_CLOSED = -10003,   /* the object (channel, stream, runtime) was closed */
    VEGA_ERR_CALLBACK = -10004, /* a user callback failed */
    /* -10005 was VEGA_ERR_INVALID_ARG: a bad argument is -EINVAL now (see below). */
    VEGA_ERR_INTERNAL = -10006, /* a broken invariant inside libvega: a bug */
    VEGA_ERR_FULL = -10007,     /* a bounded queue or pool is full (try-variants) */
    VEGA_ERR_EMPTY = -10008,    /* nothing to receive now (try-variants) */
    VEGA_ERR_LAGGED = -10009,   /* a broadcast receiver fell behind; see vega_broadcast_recv */
    VEGA_ERR_NOTASK = -10010,   /* called outside a task where a task is required */
    VEGA_ERR_LAST = -10011,
};

/* Deprecated (0.1), until 1.0: a bad argument is -EINVAL in every header, as for the system
 * calls; this old name is the same value. */
#define VEGA_ERR_INVALID_ARG (-EINVAL)

/* Human-readable message for any code returned by libvega (never NULL). */
VEGA_API const char *vega_strerror(int err);

/* Symbolic name ("ETIMEDOUT", "VEGA_ERR_PROTO"); "unknown" for codes it does not know. */
VEGA_API const char *vega_err_name(int err);

/* True when the object that returned err can no longer be used. */
VEGA_API bool vega_err_is_fatal(int err);

#ifdef __cplusplus
}
#endif
#endif
