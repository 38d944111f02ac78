/* SPDX-License-Identifier: MIT */
/* Error names and messages for -errno values and every library code (all modules' ranges, see
 * err.h: one table, so that vega_strerror knows a code whatever the program links). */
#include <stdarg.h>
#include <string.h>

#include <vega/crypto.h>
#include <vega/dns.h>
#include <vega/h2.h>
#include <vega/h3.h>
#include <vega/hpack.h>
#include <vega/http.h>
#include <vega/proxy.h>
#include <vega/qpack.h>
#include <vega/quic_ep.h>
#include <vega/tls.h>
#include <vega/ws.h>
/* (each new module adds its header here, one line, alphabetical) */

#include "base.h"

struct code {
    int code;
    const char *name;
    const char *msg;
};

static const struct code lib_codes[] = {
    {VEGA_ERR_NOBUF, "VEGA_ERR_NOBUF", "output buffer too small"},
    {VEGA_ERR_PROTO, "VEGA_ERR_PROTO", "protocol error by the peer"},
    {VEGA_ERR_CLOSED, "VEGA_ERR_CLOSED", "closed"},
    {VEGA_ERR_CALLBACK, "VEGA_ERR_CALLBACK", "a callback failed"},
    {VEGA_ERR_INTERNAL, "VEGA_ERR_INTERNAL", "internal error (a bug in libvega)"},
    {VEGA_ERR_FULL, "VEGA_ERR_FULL", "queue or pool is full"},
    {VEGA_ERR_EMPTY, "VEGA_ERR_EMPTY", "nothing to receive"},
    {VEGA_ERR_LAGGED, "VEGA_ERR_LAGGED", "receiver lagged behind and missed messages"},
    {VEGA_ERR_NOTASK, "VEGA_ERR_NOTASK", "not called from inside a task"},
    /* http.h */
    {VEGA_ERR_HTTP_URL, "VEGA_ERR_HTTP_URL", "malformed URL"},
    {VEGA_ERR_HTTP_SCHEME, "VEGA_ERR_HTTP_SCHEME", "URL scheme not supported"},
    {VEGA_ERR_HTTP_EMPTY_REPLY, "VEGA_ERR_HTTP_EMPTY_REPLY",
     "empty reply: the server closed the connection without a response"},
    {VEGA_ERR_HTTP_BODY_TOO_LARGE, "VEGA_ERR_HTTP_BODY_TOO_LARGE", "body too large"},
    /* dns.h */
    {VEGA_ERR_DNS_NOT_FOUND, "VEGA_ERR_DNS_NOT_FOUND", "Could not resolve host: no such name"},
    {VEGA_ERR_DNS_NO_ADDRESS, "VEGA_ERR_DNS_NO_ADDRESS",
     "Could not resolve host: the name has no address of the family asked"},
    {VEGA_ERR_DNS_SERVER, "VEGA_ERR_DNS_SERVER",
     "Could not resolve host: the name servers failed (try again later)"},
    /* tls.h */
    {VEGA_ERR_TLS_HANDSHAKE, "VEGA_ERR_TLS_HANDSHAKE", "TLS handshake failed"},
    {VEGA_ERR_TLS_ALERT, "VEGA_ERR_TLS_ALERT", "the TLS peer sent a fatal alert"},
    {VEGA_ERR_TLS_CERT_UNTRUSTED, "VEGA_ERR_TLS_CERT_UNTRUSTED",
     "certificate verify failed: unknown or untrusted CA"},
    {VEGA_ERR_TLS_CERT_EXPIRED, "VEGA_ERR_TLS_CERT_EXPIRED",
     "certificate verify failed: expired or not yet valid"},
    {VEGA_ERR_TLS_CERT_NAME, "VEGA_ERR_TLS_CERT_NAME",
     "certificate verify failed: the certificate does not match the host name"},
    {VEGA_ERR_TLS_CERT, "VEGA_ERR_TLS_CERT", "certificate verify failed"},
    {VEGA_ERR_TLS_NO_CERT, "VEGA_ERR_TLS_NO_CERT", "a required client certificate is missing"},
    {VEGA_ERR_TLS_TRUNCATED, "VEGA_ERR_TLS_TRUNCATED",
     "TLS stream truncated: the peer closed without close_notify"},
    {VEGA_ERR_TLS_PROTOCOL, "VEGA_ERR_TLS_PROTOCOL", "TLS protocol error"},
    {VEGA_ERR_TLS_CONFIG, "VEGA_ERR_TLS_CONFIG",
     "bad TLS configuration (certificate, key, CA or list)"},
    {VEGA_ERR_TLS_PINNED, "VEGA_ERR_TLS_PINNED",
     "the peer's public key does not match the pinned public key"},
    /* crypto.h */
    {VEGA_ERR_CRYPTO_LIBCRYPTO, "VEGA_ERR_CRYPTO_LIBCRYPTO", "libcrypto failed unexpectedly"},
    {VEGA_ERR_CRYPTO_UNSUPPORTED, "VEGA_ERR_CRYPTO_UNSUPPORTED",
     "algorithm or key type not supported"},
    {VEGA_ERR_CRYPTO_AUTH, "VEGA_ERR_CRYPTO_AUTH", "authentication failed (forged or damaged)"},
    {VEGA_ERR_CRYPTO_BAD_KEY, "VEGA_ERR_CRYPTO_BAD_KEY", "key data could not be parsed"},
    {VEGA_ERR_CRYPTO_KEY_MISMATCH, "VEGA_ERR_CRYPTO_KEY_MISMATCH",
     "key cannot be used for this operation"},
    {VEGA_ERR_CRYPTO_BAD_PUBLIC, "VEGA_ERR_CRYPTO_BAD_PUBLIC", "invalid peer public key"},
    {VEGA_ERR_CRYPTO_BAD_SIGNATURE, "VEGA_ERR_CRYPTO_BAD_SIGNATURE", "signature does not verify"},
    {VEGA_ERR_CRYPTO_BAD_CERT, "VEGA_ERR_CRYPTO_BAD_CERT", "certificate could not be parsed"},
    {VEGA_ERR_CRYPTO_CA_LOAD, "VEGA_ERR_CRYPTO_CA_LOAD", "CA certificates could not be loaded"},
    {VEGA_ERR_CRYPTO_CERT_EXPIRED, "VEGA_ERR_CRYPTO_CERT_EXPIRED", "certificate has expired"},
    {VEGA_ERR_CRYPTO_CERT_NOT_YET_VALID, "VEGA_ERR_CRYPTO_CERT_NOT_YET_VALID",
     "certificate is not yet valid"},
    {VEGA_ERR_CRYPTO_CERT_UNKNOWN_CA, "VEGA_ERR_CRYPTO_CERT_UNKNOWN_CA",
     "certificate chain does not lead to a trusted CA"},
    {VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH, "VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH",
     "certificate does not match the host name"},
    {VEGA_ERR_CRYPTO_CERT_BAD_SIGNATURE, "VEGA_ERR_CRYPTO_CERT_BAD_SIGNATURE",
     "certificate signature is invalid"},
    {VEGA_ERR_CRYPTO_CERT_INVALID, "VEGA_ERR_CRYPTO_CERT_INVALID", "certificate chain is invalid"},
    /* HPACK (hpack.h, -10800) */
    {VEGA_ERR_HPACK_DECODE, "VEGA_ERR_HPACK_DECODE", "malformed HPACK header block"},
    {VEGA_ERR_HPACK_STRING_TOO_LONG, "VEGA_ERR_HPACK_STRING_TOO_LONG",
     "HPACK string longer than the decoder's limit"},
    {VEGA_ERR_HPACK_TOO_LARGE, "VEGA_ERR_HPACK_TOO_LARGE",
     "header list larger than the decoder's limit"},
    /* HTTP/2 (h2.h, -10900) */
    {VEGA_ERR_H2_STREAM_LIMIT, "VEGA_ERR_H2_STREAM_LIMIT",
     "HTTP/2 concurrent stream limit reached"},
    {VEGA_ERR_H2_GOING_AWAY, "VEGA_ERR_H2_GOING_AWAY", "HTTP/2 connection takes no new streams"},
    {VEGA_ERR_H2_STREAM_CLOSED, "VEGA_ERR_H2_STREAM_CLOSED", "HTTP/2 stream is closed"},
    /* QPACK (qpack.h, -11000) */
    {VEGA_ERR_QPACK_TOO_LARGE, "VEGA_ERR_QPACK_TOO_LARGE",
     "field section larger than the QPACK decoder's limits"},
    /* HTTP/3 (h3.h, -11100) */
    {VEGA_ERR_H3_GOAWAY, "VEGA_ERR_H3_GOAWAY",
     "the HTTP/3 peer is going away: no new requests on this connection"},
    /* QUIC endpoint (quic_ep.h, -11200) */
    {VEGA_ERR_QUIC_EP_CLOSED, "VEGA_ERR_QUIC_EP_CLOSED", "the QUIC connection closed"},
    {VEGA_ERR_QUIC_EP_HANDSHAKE, "VEGA_ERR_QUIC_EP_HANDSHAKE", "the QUIC handshake failed"},
    {VEGA_ERR_QUIC_EP_REFUSED, "VEGA_ERR_QUIC_EP_REFUSED",
     "the server refused the QUIC connection"},
    {VEGA_ERR_QUIC_EP_RESET, "VEGA_ERR_QUIC_EP_RESET", "the peer reset the QUIC stream"},
    /* proxy clients (proxy.h, -11400) */
    {VEGA_ERR_PROXY_RESOLVE, "VEGA_ERR_PROXY_RESOLVE", "Could not resolve proxy"},
    {VEGA_ERR_PROXY_HANDSHAKE, "VEGA_ERR_PROXY_HANDSHAKE",
     "proxy handshake failed: malformed or oversized reply"},
    {VEGA_ERR_PROXY_AUTH, "VEGA_ERR_PROXY_AUTH", "the proxy refused our credentials or wants some"},
    {VEGA_ERR_PROXY_REFUSED, "VEGA_ERR_PROXY_REFUSED", "the proxy refused to connect"},
    {VEGA_ERR_PROXY_UNSUPPORTED, "VEGA_ERR_PROXY_UNSUPPORTED",
     "the destination cannot be expressed in this proxy protocol"},
    /* WebSocket (ws.h, -11500) */
    {VEGA_ERR_WS_STATUS, "VEGA_ERR_WS_STATUS", "the server refused the WebSocket upgrade"},
    {VEGA_ERR_WS_HANDSHAKE, "VEGA_ERR_WS_HANDSHAKE",
     "the server's WebSocket handshake response is invalid"},
};

static const struct code *lib_code(int err)
{
    for (size_t i = 0; i < VEGA__ARRAY_LEN(lib_codes); i++)
        if (lib_codes[i].code == err)
            return &lib_codes[i];
    return NULL;
}

const char *vega_strerror(int err)
{
    if (err >= 0)
        return "success";
    const struct code *c = lib_code(err);
    if (c)
        return c->msg;
    if (err > VEGA_ERR_BASE) {
        /* strerror's buffer is shared between threads only for unknown codes; glibc returns
         * static strings for every errno it knows. */
        return strerror(-err);
    }
    return "unknown error";
}

const char *vega_err_name(int err)
{
    if (err >= 0)
        return "OK";
    const struct code *c = lib_code(err);
    if (c)
        return c->name;
    if (err > VEGA_ERR_BASE) {
        const char *n = strerrorname_np(-err);
        return n ? n : "unknown";
    }
    return "unknown";
}

bool vega_err_is_fatal(int err)
{
    switch (err) {
    case -EAGAIN:
    case -EINTR:
    case -ETIMEDOUT:
    case -ECANCELED:
    case VEGA_ERR_NOBUF:
    case VEGA_ERR_FULL:
    case VEGA_ERR_EMPTY:
    case VEGA_ERR_LAGGED:
    case VEGA_ERR_CRYPTO_AUTH:   /* one forged packet; the key context stays usable */
    case VEGA_ERR_DNS_NOT_FOUND: /* an answer about a name; the resolver stays usable */
    case VEGA_ERR_DNS_NO_ADDRESS:
    case VEGA_ERR_DNS_SERVER:
    case VEGA_ERR_HPACK_TOO_LARGE: /* the block was processed; the decoder stays usable */
    case VEGA_ERR_H2_STREAM_LIMIT: /* about one stream; the connection goes on */
    case VEGA_ERR_H2_GOING_AWAY:
    case VEGA_ERR_H2_STREAM_CLOSED:
    case VEGA_ERR_QPACK_TOO_LARGE: /* one section refused; the decoder stays usable */
    case VEGA_ERR_H3_GOAWAY:       /* no new requests; those under way go on */
        return false;
    default:
        return err < 0;
    }
}

void vega__panic(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "libvega panic at %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}
