/* SPDX-License-Identifier: MIT */
/* vega-curl's failures: libvega's codes turned into curl's exit codes and messages, for a
 * request that could not be sent (connect, TLS and QUIC handshakes, HTTP/3 resets) and for a
 * body that could not be read. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "curl.h"

static unsigned long long ms_since(vega_tstamp t)
{
    return (unsigned long long)((vega_now() - t) / VEGA_NS_PER_MS);
}

static bool is_tls_code(int e)
{
    return e <= VEGA_ERR_TLS_BASE && e > VEGA_ERR_TLS_LAST;
}

/* A handshake we ended with a TLS alert about the server's certificate (RFC 9001 §4.8:
 * CRYPTO_ERROR 0x100 + the alert): bad_certificate 42 .. certificate_unknown 46, unknown_ca
 * 48. curl calls that a peer that failed verification (60), the rest a handshake error (35). */
static bool cert_alert(const vega_http_client_wire_error *w)
{
    uint64_t a = w->code - 0x100;
    return w->kind == VEGA_HTTP_CLIENT_WIRE_QUIC && w->local && w->code >= 0x100 &&
           w->code <= 0x1ff && ((a >= 42 && a <= 46) || a == 48);
}

/* Whether a failure is one of the HTTP/3 layer (curl's 95): a stream reset, GOAWAY, an HTTP/3
 * or QPACK connection error, a malformed response on an HTTP/3 stream. */
static bool h3_code(int e, const vega_http_client_wire_error *w)
{
    return e == VEGA_ERR_QUIC_EP_RESET || e == VEGA_ERR_H3_GOAWAY ||
           ((e == VEGA_ERR_PROTO || e == VEGA_ERR_QUIC_EP_CLOSED) &&
            (w->kind == VEGA_HTTP_CLIENT_WIRE_STREAM || w->kind == VEGA_HTTP_CLIENT_WIRE_H3));
}

/* A failure of the HTTP/2 layer: a stream reset (curl's 92, CURLE_HTTP2_STREAM) or a
 * connection error or GOAWAY (16, CURLE_HTTP2). 0 when it is not one. */
static int h2_code(int e, const vega_http_client_wire_error *w)
{
    if (e == VEGA_ERR_H2_GOING_AWAY)
        return CE_HTTP2;
    if (e != -ECONNRESET && e != VEGA_ERR_PROTO)
        return 0;
    return w->kind == VEGA_HTTP_CLIENT_WIRE_H2_STREAM ? CE_HTTP2_STREAM
           : w->kind == VEGA_HTTP_CLIENT_WIRE_H2      ? CE_HTTP2
                                                      : 0;
}

static void h2_message(struct xfer *x, int e, char *out, size_t cap)
{
    const vega_http_client_wire_error *w = &x->werr;
    const char *who = w->local ? "we" : "the server";
    if (e == VEGA_ERR_H2_GOING_AWAY)
        snprintf(out, cap, "HTTP/2: the server sent GOAWAY before answering");
    else if (w->kind == VEGA_HTTP_CLIENT_WIRE_H2_STREAM)
        snprintf(out, cap, "HTTP/2 stream was not closed cleanly: %s (err %llu, %s sent it)",
                 vega_h2_error_code_name((uint32_t)w->code), (unsigned long long)w->code, who);
    else
        snprintf(out, cap, "HTTP/2 connection error (%s sent %s, 0x%llx%s%s)", who,
                 vega_h2_error_code_name((uint32_t)w->code), (unsigned long long)w->code,
                 w->reason[0] ? ": " : "", w->reason);
}

static void h3_message(struct xfer *x, int e, char *out, size_t cap)
{
    const vega_http_client_wire_error *w = &x->werr;
    const char *who = w->local ? "we" : "the server";
    if (e == VEGA_ERR_H3_GOAWAY)
        snprintf(out, cap, "HTTP/3: the server sent GOAWAY before answering");
    else if (w->kind == VEGA_HTTP_CLIENT_WIRE_STREAM)
        snprintf(out, cap, "HTTP/3 stream reset (%s sent %s, 0x%llx)", who,
                 vega_h3_error_name(w->code), (unsigned long long)w->code);
    else
        snprintf(out, cap, "HTTP/3 connection error (%s sent %s, 0x%llx%s%s)", who,
                 vega_h3_error_name(w->code), (unsigned long long)w->code, w->reason[0] ? ": " : "",
                 w->reason);
}

/* The exit code and message for a failed vega_http_client_send. */
int curl_send_failed(struct xfer *x, int e)
{
    struct curl_result *r = &x->res;
    const struct curl_opts *o = x->o;
    int code;
    if ((code = curl_proxy_failed(e, r->errmsg, sizeof(r->errmsg))) != 0) {
        /* a failure at the proxy: curl's 5, 7, 56 or 97 */
    } else if (x->has_upload && x->up.err) {
        code = CE_READ_ERROR;
        snprintf(r->errmsg, sizeof(r->errmsg), "Failed to read the upload data: %s",
                 vega_strerror(x->up.err));
    } else if (e == VEGA_ERR_HTTP_URL) {
        code = CE_URL_MALFORMAT;
        snprintf(r->errmsg, sizeof(r->errmsg), "URL using bad/illegal format or missing URL");
    } else if (e == VEGA_ERR_HTTP_SCHEME) {
        code = CE_UNSUPPORTED_PROTOCOL;
        snprintf(r->errmsg, sizeof(r->errmsg), "Protocol \"%s\" not supported", r->scheme);
    } else if (e == VEGA_ERR_DNS_NOT_FOUND || e == VEGA_ERR_DNS_NO_ADDRESS ||
               e == VEGA_ERR_DNS_SERVER) {
        code = CE_COULDNT_RESOLVE_HOST;
        snprintf(r->errmsg, sizeof(r->errmsg), "Could not resolve host: %s", x->host);
    } else if ((o->interface || o->local_port_min) &&
               (e == -EADDRNOTAVAIL || e == -EADDRINUSE || e == -ENODEV || e == -EPERM)) {
        /* the local side could not be bound (curl's wording) */
        code = CE_INTERFACE_FAILED;
        if (e == -ENODEV)
            snprintf(r->errmsg, sizeof(r->errmsg), "Couldn't bind to interface '%s'",
                     o->interface ? o->interface : "");
        else
            snprintf(r->errmsg, sizeof(r->errmsg), "bind failed with errno %d: %s", -e,
                     strerror(-e));
    } else if (e == -ECONNREFUSED || e == -EHOSTUNREACH || e == -ENETUNREACH ||
               e == -EADDRNOTAVAIL || e == -EAFNOSUPPORT || e == -ENETDOWN ||
               (x->o->unix_path[0] && (e == -ENOENT || e == -EACCES || e == -ENOTSOCK ||
                                       e == -ENOTDIR || e == -EPROTOTYPE))) {
        /* (--unix-socket: no such socket, or one that is not a stream socket's) */
        code = CE_COULDNT_CONNECT;
        snprintf(r->errmsg, sizeof(r->errmsg),
                 "Failed to connect to %s port %u after %llu ms: Couldn't connect to server (%s)",
                 x->host, x->port, ms_since(r->t_begin), vega_strerror(e));
    } else if (e == -ETIMEDOUT || e == -ECANCELED) {
        code = CE_OPERATION_TIMEDOUT;
        if (x->dl && vega_now() >= x->dl)
            snprintf(r->errmsg, sizeof(r->errmsg),
                     "Operation timed out after %llu milliseconds with 0 bytes received",
                     ms_since(r->t_begin));
        else
            snprintf(r->errmsg, sizeof(r->errmsg), "Connection timed out after %llu milliseconds",
                     ms_since(r->t_begin));
    } else if (e == VEGA_ERR_TLS_CERT_UNTRUSTED || e == VEGA_ERR_TLS_CERT_EXPIRED ||
               e == VEGA_ERR_TLS_CERT_NAME || e == VEGA_ERR_TLS_CERT) {
        code = CE_PEER_FAILED_VERIFICATION;
        snprintf(r->errmsg, sizeof(r->errmsg),
                 "SSL certificate problem: %s (use -k to skip verification, --cacert to trust "
                 "a CA)",
                 vega_tls_strerror(e));
    } else if (e == VEGA_ERR_TLS_PINNED) {
        code = CE_SSL_PINNEDPUBKEYNOTMATCH;
        snprintf(r->errmsg, sizeof(r->errmsg), "SSL: public key does not match pinned public key");
    } else if (e == VEGA_ERR_TLS_HANDSHAKE || e == VEGA_ERR_TLS_ALERT ||
               e == VEGA_ERR_TLS_NO_CERT || e == VEGA_ERR_TLS_CONFIG) {
        code = CE_SSL_CONNECT_ERROR;
        snprintf(r->errmsg, sizeof(r->errmsg), "TLS handshake with %s failed: %s", x->host,
                 vega_tls_strerror(e));
    } else if (e == VEGA_ERR_QUIC_EP_HANDSHAKE && cert_alert(&x->werr)) {
        code = CE_PEER_FAILED_VERIFICATION;
        snprintf(r->errmsg, sizeof(r->errmsg),
                 "SSL certificate problem: %s (QUIC; use -k to skip verification, --cacert to "
                 "trust a CA)",
                 x->werr.reason[0] ? x->werr.reason : "certificate verify failed");
    } else if (e == VEGA_ERR_QUIC_EP_HANDSHAKE) {
        code = CE_SSL_CONNECT_ERROR;
        snprintf(r->errmsg, sizeof(r->errmsg), "QUIC handshake with %s failed: %s (%s, 0x%llx)",
                 x->host, x->werr.reason[0] ? x->werr.reason : "no reason given",
                 x->werr.kind == VEGA_HTTP_CLIENT_WIRE_QUIC
                     ? vega_quic_transport_error_name(x->werr.code)
                     : vega_h3_error_name(x->werr.code),
                 (unsigned long long)x->werr.code);
    } else if (e == VEGA_ERR_QUIC_EP_REFUSED ||
               (e == VEGA_ERR_QUIC_EP_CLOSED && x->werr.kind == VEGA_HTTP_CLIENT_WIRE_NONE)) {
        code = CE_COULDNT_CONNECT;
        snprintf(r->errmsg, sizeof(r->errmsg),
                 "Failed to connect to %s port %u after %llu ms: Couldn't connect to server (%s)",
                 x->host, x->port, ms_since(r->t_begin),
                 e == VEGA_ERR_QUIC_EP_REFUSED ? "QUIC connection refused"
                                               : "QUIC connection closed");
    } else if (h3_code(e, &x->werr)) {
        code = CE_HTTP3;
        h3_message(x, e, r->errmsg, sizeof r->errmsg);
    } else if ((code = h2_code(e, &x->werr)) != 0) {
        h2_message(x, e, r->errmsg, sizeof r->errmsg);
    } else if (e == VEGA_ERR_HTTP_EMPTY_REPLY) {
        code = CE_GOT_NOTHING;
        snprintf(r->errmsg, sizeof(r->errmsg), "Empty reply from server");
    } else if (e == VEGA_ERR_PROTO || e == -EMSGSIZE || e == -E2BIG) {
        code = CE_WEIRD_SERVER_REPLY;
        snprintf(r->errmsg, sizeof(r->errmsg), "Weird server reply (%s)", vega_strerror(e));
    } else if (e == -EPIPE) {
        code = CE_SEND_ERROR;
        snprintf(r->errmsg, sizeof(r->errmsg), "Failed sending data to the peer: %s",
                 vega_strerror(e));
    } else if (e == -ENOMEM) {
        code = CE_OUT_OF_MEMORY;
        snprintf(r->errmsg, sizeof(r->errmsg), "Out of memory");
    } else {
        code = CE_RECV_ERROR;
        snprintf(r->errmsg, sizeof(r->errmsg), "Failure when receiving data from the peer: %s",
                 is_tls_code(e) ? vega_tls_strerror(e) : vega_strerror(e));
    }
    r->exit_code = code;
    return curl_fail(o, code, "%s", r->errmsg);
}

/* The exit code and message for a failed vega_http_client_response_read. */
int curl_read_failed(struct xfer *x, const vega_http_client_info *in, int e)
{
    struct curl_result *r = &x->res;
    int code;
    bool known = in->content_length != VEGA_HTTP_LENGTH_UNKNOWN;
    char got[128];
    if (known && in->coding == VEGA_HTTP_CODING_IDENTITY)
        snprintf(got, sizeof(got), "%llu out of %llu bytes", (unsigned long long)r->size_download,
                 (unsigned long long)in->content_length);
    else
        snprintf(got, sizeof(got), "%llu bytes", (unsigned long long)r->size_download);
    if (e == -ETIMEDOUT || e == -ECANCELED) {
        code = CE_OPERATION_TIMEDOUT;
        snprintf(r->errmsg, sizeof(r->errmsg),
                 "Operation timed out after %llu milliseconds with %s received",
                 ms_since(r->t_begin), got);
    } else if (e == VEGA_ERR_HTTP_BODY_TOO_LARGE || e == -EFBIG) {
        code = CE_FILESIZE_EXCEEDED;
        snprintf(r->errmsg, sizeof(r->errmsg), "Maximum file size exceeded");
    } else if (in->coding != VEGA_HTTP_CODING_IDENTITY && (e == VEGA_ERR_PROTO || e == -ENODATA)) {
        code = CE_BAD_CONTENT_ENCODING;
        snprintf(r->errmsg, sizeof(r->errmsg),
                 "Error while processing content unencoding: invalid %s data",
                 vega_http_coding_name(in->coding));
    } else if ((code = h2_code(e, &x->werr)) != 0) {
        h2_message(x, e, r->errmsg, sizeof r->errmsg);
    } else if (e == -ENODATA || e == VEGA_ERR_CLOSED || e == VEGA_ERR_TLS_TRUNCATED ||
               (e == VEGA_ERR_PROTO && known && r->size_download < in->content_length)) {
        code = CE_PARTIAL_FILE;
        snprintf(r->errmsg, sizeof(r->errmsg), "transfer closed with %s received", got);
    } else if (h3_code(e, &x->werr)) {
        code = CE_HTTP3;
        h3_message(x, e, r->errmsg, sizeof r->errmsg);
    } else if (e == -ENOMEM) {
        code = CE_OUT_OF_MEMORY;
        snprintf(r->errmsg, sizeof(r->errmsg), "Out of memory");
    } else if (e == VEGA_ERR_QUIC_EP_CLOSED && x->werr.kind == VEGA_HTTP_CLIENT_WIRE_QUIC &&
               x->werr.local && x->werr.reason[0]) {
        /* closed here for a reason of ours (a SOCKS5 relay's association ended ...) */
        code = CE_RECV_ERROR;
        snprintf(r->errmsg, sizeof(r->errmsg), "Failure when receiving data from the peer: %s (%s)",
                 vega_strerror(e), x->werr.reason);
    } else {
        code = CE_RECV_ERROR;
        snprintf(r->errmsg, sizeof(r->errmsg), "Failure when receiving data from the peer: %s",
                 is_tls_code(e) ? vega_tls_strerror(e) : vega_strerror(e));
    }
    r->exit_code = code;
    return curl_fail(x->o, code, "%s", r->errmsg);
}

int curl_fail_msg(struct xfer *x, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->res.errmsg, sizeof(x->res.errmsg), fmt, ap);
    va_end(ap);
    x->res.exit_code = code;
    return curl_fail(x->o, code, "%s", x->res.errmsg);
}
