/* SPDX-License-Identifier: MIT */
/* WebSocket connections on the runtime: the core of <vega/ws.h> driven over a vega_stream, with
 * a small message API (receive whole messages, send, ping, close). A server handler accepts an
 * HTTP/1.1 Upgrade request (RFC 6455 §4.2) with vega_http_exchange_accept_websocket; a client
 * opens one with vega_websocket_connect (§4.1), over an HTTP client's connection code. Both
 * sides then use the same vega_websocket functions. */
#ifndef VEGA_WEBSOCKET_H
#define VEGA_WEBSOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/http_client.h>
#include <vega/http_server.h>
#include <vega/mem.h>
#include <vega/stream.h>
#include <vega/time.h>
#include <vega/ws.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A WebSocket connection (opaque). One task may receive while others send, ping or close. */
typedef struct vega_websocket vega_websocket;

typedef struct vega_websocket_opts {
    /* Largest message received (after decompression); default 16 MiB. Past it the connection
     * fails with close code 1009. */
    uint64_t max_message_size;
    /* permessage-deflate: what a server accepts (its policy) or a client offers. Off when
     * zero. */
    vega_ws_deflate_opts deflate;
    /* Server: the subprotocols it speaks, in its order of preference (borrowed for the call);
     * the first the client offers is selected (vega_websocket_get_subprotocol). Client: the
     * ones it offers (Sec-WebSocket-Protocol), tokens; the server may pick one or none. */
    const char *const *subprotocols;
    size_t nsubprotocols;
    /* Allocator for the connection and its messages, retained; NULL = libc. */
    const vega_mem *mem;
} vega_websocket_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_WEBSOCKET_OPTS_VERSION 1

/* Fills o with the defaults. Context: any. Since 0.1. */
VEGA_API void vega_websocket_opts_init_versioned(vega_websocket_opts *o, int opts_version);
#define vega_websocket_opts_init(...)                                                              \
    vega_websocket_opts_init_versioned(__VA_ARGS__, VEGA_WEBSOCKET_OPTS_VERSION)

/* Whether x is a valid WebSocket opening handshake: over HTTP/1.1 (RFC 6455 §4.2.1) a GET
 * with "Upgrade: websocket", "Connection: Upgrade", Sec-WebSocket-Version 13 and a valid
 * Sec-WebSocket-Key; over HTTP/2 (RFC 8441 §4, §5) and HTTP/3 (RFC 9220 §3) an extended
 * CONNECT with ":protocol websocket", :scheme and :path, and Sec-WebSocket-Version 13 (no key:
 * there is no Accept).
 * Context: the handler. Since 0.1. */
VEGA_API bool vega_http_exchange_is_websocket(const vega_http_exchange *x);

/*
 * Server: accepts the WebSocket of x, subprotocol and permessage-deflate negotiated from o
 * exactly alike over both versions, and makes *out. HTTP/1.1: answers 101 Switching Protocols
 * (RFC 6455 §4.2.2) and the WebSocket is x's connection; the server closes the connection when
 * the handler returns (no HTTP request follows on it). HTTP/2 (RFC 8441, the server's
 * vega_http_server_h2_opts.websocket on): answers 200 without Sec-WebSocket-Accept (§5) and
 * the WebSocket is x's stream -- its DATA both ways under the stream's flow control, the
 * peer's END_STREAM read as end of stream, a reset as -ECONNRESET; when the handler returns
 * our side ends (END_STREAM) and the connection's other streams go on. HTTP/3 (RFC 9220, the
 * h3 opts' websocket on) alike: 200, the payload of the request stream's DATA frames both ways
 * under QUIC's per-stream flow control, the client's FIN read as end of stream, RESET_STREAM
 * or STOP_SENDING as -ECONNRESET, our FIN when the handler frees it. Use *out until done,
 * free it, then return from the handler. o: borrowed; NULL = defaults. *out: returns owned.
 * Returns 0; -EINVAL (x is not a WebSocket handshake: answer it, e.g. 400 or 426 with
 * "Sec-WebSocket-Version: 13"); VEGA_ERR_CLOSED (a
 * response was already started); -ENOMEM; a write error (-EPIPE, -ECONNRESET, -ETIMEDOUT, ...).
 * Context: the handler's task. Suspends. Since 0.1.
 */
VEGA_API int vega_http_exchange_accept_websocket_versioned(vega_http_exchange *x,
                                                           const vega_websocket_opts *o,
                                                           vega_websocket **out, vega_deadline dl,
                                                           int opts_version);
#define vega_http_exchange_accept_websocket(...)                                                   \
    vega_http_exchange_accept_websocket_versioned(__VA_ARGS__, VEGA_WEBSOCKET_OPTS_VERSION)

/*
 * Makes a WebSocket over s after a completed opening handshake (the drivers use it; a program
 * with its own handshake may too). role: which side we are; params: the negotiated
 * permessage-deflate (NULL: none); pre: bytes already read past the handshake (copied), fed to
 * the core first. own: free closes s. Returns 0; -EINVAL; -ENOMEM. Since 0.1.
 */
VEGA_API int vega_websocket_new_versioned(vega_websocket **out, vega_stream *s, bool own,
                                          vega_ws_role role, const vega_ws_deflate_params *params,
                                          const vega_websocket_opts *o, const uint8_t *pre,
                                          size_t pre_len, int opts_version);
#define vega_websocket_new(...)                                                                    \
    vega_websocket_new_versioned(__VA_ARGS__, VEGA_WEBSOCKET_OPTS_VERSION)

/* Client: the opening handshake's settings. Initialise with vega_websocket_connect_opts_init. */
typedef struct vega_websocket_connect_opts {
    /* The connection's settings: message limit, the permessage-deflate offer (all four
     * parameters as set; client_max_window_bits is always offered), the subprotocols offered,
     * the allocator. */
    vega_websocket_opts ws;
    /* Extra request fields (Origin, Authorization, Cookie, ...), borrowed for the call. Host,
     * User-Agent and Accept replace the client's; the handshake's own fields (Upgrade,
     * Connection, Sec-WebSocket-Key, -Version, -Extensions, -Protocol) may not be given. */
    const vega_http_field *fields;
    size_t nfields;
    /* Every head as it goes out and comes in (vega_http_trace_fn); NULL: none. */
    vega_http_trace_fn trace;
    void *trace_user;
    /* NULL, or where a refusal (VEGA_ERR_WS_STATUS) leaves the server's response, returned
     * owned: its status, fields and body (vega_http_client_response_free). */
    vega_http_client_response **refused;
    /* ---- layout version 2 ---- */
    /* Which HTTP carries the handshake. 0 or VEGA_HTTP_CLIENT_V11: an HTTP/1.1 Upgrade (RFC
     * 6455 §4.1) on a fresh connection (ALPN http/1.1; a caller's TLS config that lets ALPN
     * choose h2 gets RFC 8441 on it). VEGA_HTTP_CLIENT_V2: RFC 8441, an extended CONNECT
     * (":protocol websocket") on the client's HTTP/2 connection to the origin, pooled and shared
     * with its other requests -- wss:// by ALPN h2, ws:// by prior knowledge (h2c, RFC 9113
     * §3.3; VEGA_HTTP_CLIENT_V2_PRIOR says the same) -- sent once the server's SETTINGS said
     * SETTINGS_ENABLE_CONNECT_PROTOCOL = 1. VEGA_HTTP_CLIENT_V3: RFC 9220, the same extended
     * CONNECT on the client's pooled HTTP/3 connection to a wss:// origin (QUIC, no TCP race;
     * ws:// is VEGA_ERR_HTTP_SCHEME, RFC 9114 §3.1), sent once the server's HTTP/3 SETTINGS
     * said ENABLE_CONNECT_PROTOCOL = 1. */
    int version;
    /* With VEGA_HTTP_CLIENT_V2 or V3: when the server does not do RFC 8441 / RFC 9220 (ALPN
     * chose http/1.1, or its SETTINGS lack ENABLE_CONNECT_PROTOCOL), the HTTP/1.1 Upgrade on a
     * fresh TCP connection instead, as browsers do. Off: -ENOTSUP. With V3 also when QUIC
     * cannot connect (UDP blocked, no HTTP/3 server, a connect hook or a proxy): QUIC gets
     * opts.h3_head_start_ns, then races TCP as a request with h3_fallback does, and TCP
     * connected first means the Upgrade (on a connection of its own). (A ws:// server that
     * does not speak h2c fails as any prior-knowledge request does; and a caller's TLS config that
     * offers h2 to a server speaking HTTP/2 without RFC 8441 gets h2 again: -ENOTSUP.) */
    bool h1_fallback;
} vega_websocket_connect_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). Version 2 appended
 * version and h1_fallback. */
#define VEGA_WEBSOCKET_CONNECT_OPTS_VERSION 2

/* Fills o with the defaults (vega_websocket_opts_init's for o->ws). Context: any. Since 0.1. */
VEGA_API void vega_websocket_connect_opts_init_versioned(vega_websocket_connect_opts *o,
                                                         int opts_version);
#define vega_websocket_connect_opts_init(...)                                                      \
    vega_websocket_connect_opts_init_versioned(__VA_ARGS__, VEGA_WEBSOCKET_CONNECT_OPTS_VERSION)

/*
 * Client: opens a WebSocket to url (ws:// or wss://; http:// and https:// mean the same) with
 * an HTTP/1.1 Upgrade request (RFC 6455 §4.1) on a fresh connection of c, or over HTTP/2 or
 * HTTP/3 as o->version asks (RFC 8441, RFC 9220: below). HTTP/1.1: c's DNS, --resolve
 * entries, connect hook, TLS config (ALPN http/1.1) and proxy (an HTTP proxy is passed by a
 * CONNECT tunnel, ws:// too). The Sec-WebSocket-Key is 16 bytes of vega_crypto_random. The 101
 * must say "Upgrade: websocket" and "Connection: Upgrade", carry the right
 * Sec-WebSocket-Accept, and choose only an extension and a subprotocol that were offered;
 * otherwise the connection is failed (closed). HTTP/2 (RFC 8441 §4, §5): the CONNECT carries
 * ":scheme", ":path", ":authority" and Sec-WebSocket-Version 13 (no Key, no Accept); any 2xx
 * accepts, with the same extension and subprotocol checks; the WebSocket is then that stream's
 * DATA both ways under its flow control (the connection's other streams go on; a reset reads
 * as -ECONNRESET), and vega_websocket_free ends our side with END_STREAM, waits a moment for
 * the server's, else resets it (CANCEL); it is a request of c in progress: free it before c.
 * HTTP/3 (RFC 9220 §3) the same on a request stream: the payload of its DATA frames, QUIC's
 * per-stream flow control, our FIN at the end, H3_REQUEST_CANCELLED (RESET_STREAM and
 * STOP_SENDING) for a stream still open at the free or a write cut short by its deadline; the
 * server's RESET_STREAM or STOP_SENDING reads as -ECONNRESET.
 * o: borrowed; NULL = defaults. *out: returns owned, the connection's vega_websocket (masking,
 * role client; vega_websocket_free closes it). dl bounds the handshake (connect included; c's
 * connect_timeout too).
 * Returns 0; VEGA_ERR_WS_STATUS (another status: o->refused has the response);
 * VEGA_ERR_WS_HANDSHAKE (an invalid 101 or 2xx); -ENOTSUP (HTTP/2 or HTTP/3 and the server
 * does not do RFC 8441 / RFC 9220: ALPN chose http/1.1 or SETTINGS_ENABLE_CONNECT_PROTOCOL is
 * not 1, without h1_fallback); -EINVAL (NULL c, url or out, a handshake field in o->fields, a
 * subprotocol that is not a token, window bits out of 8..15, an unknown o->version, options of an
 * unknown layout version); VEGA_ERR_HTTP_URL, VEGA_ERR_HTTP_SCHEME (not ws, wss, http or https);
 * -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO (no randomness); and vega_http_client_send's connect, TLS,
 * proxy and response codes (VEGA_ERR_DNS_NOT_FOUND, -ECONNREFUSED, -ETIMEDOUT, VEGA_ERR_PROTO,
 * ...). Context: inside a task. Suspends. Since 0.1.
 */
VEGA_API int vega_websocket_connect_versioned(vega_http_client *c, const char *url,
                                              const vega_websocket_connect_opts *o,
                                              vega_websocket **out, vega_deadline dl,
                                              int opts_version);
#define vega_websocket_connect(...)                                                                \
    vega_websocket_connect_versioned(__VA_ARGS__, VEGA_WEBSOCKET_CONNECT_OPTS_VERSION)

/* A received message. data is borrowed until the next vega_websocket_recv or free. */
typedef struct vega_websocket_msg {
    vega_ws_msg_type type;
    const uint8_t *data;
    size_t len;
} vega_websocket_msg;

/*
 * Receives the next whole message (pings are answered inside). One receiver at a time. The
 * messages before the peer's Close are all returned first, and may still be answered: our
 * answering Close (echoing its code, RFC 6455 §5.5.1) goes out when recv returns
 * VEGA_ERR_CLOSED, after them (or from vega_websocket_free, if the application stops before).
 * Returns 0 (msg filled); -EINVAL (NULL ws or msg); VEGA_ERR_CLOSED (the peer's Close arrived, and
 * our answer went out, or the connection ended without one: vega_websocket_get_close_code tells
 * which); VEGA_ERR_PROTO (the peer broke the protocol or a limit: our Close went out with the code
 * of vega_websocket_get_error); -ETIMEDOUT; -ECANCELED; -ENOMEM; a stream error. Context: a task.
 * Suspends. Since 0.1.
 */
VEGA_API int vega_websocket_recv(vega_websocket *ws, vega_websocket_msg *msg, vega_deadline dl);

/* Sends one message, split into frames as needed, and waits until it is written. Returns 0;
 * -EINVAL; VEGA_ERR_CLOSED (we sent a Close or the connection failed); -ENOMEM; a stream
 * error; -ETIMEDOUT. Context: a task. Suspends. Since 0.1. */
VEGA_API int vega_websocket_send(vega_websocket *ws, vega_ws_msg_type type, const void *data,
                                 size_t len, vega_deadline dl);

/* Sends a ping (at most 125 bytes). Returns 0; -EINVAL (NULL ws, len > 125); VEGA_ERR_CLOSED;
 * -ENOMEM; a stream error; -ETIMEDOUT. Context: a task. Suspends. Since 0.1. */
VEGA_API int vega_websocket_ping(vega_websocket *ws, const void *data, size_t len,
                                 vega_deadline dl);

/* Sends our Close (code 0: none; else a valid code and a UTF-8 reason of at most 123 bytes);
 * keep receiving until VEGA_ERR_CLOSED for the peer's answer (§7.1.2). Returns 0; -EINVAL;
 * VEGA_ERR_CLOSED (already sent); a stream error. Context: a task. Suspends. Since 0.1. */
VEGA_API int vega_websocket_close(vega_websocket *ws, unsigned code, const char *reason, size_t len,
                                  vega_deadline dl);

/* The peer's close code (1005: its Close had none; 1006: the connection ended without a
 * Close; 0: not closed yet). Since 0.1. */
VEGA_API unsigned vega_websocket_get_close_code(const vega_websocket *ws);

/* Why the connection failed (code 0 if it did not). Since 0.1. */
VEGA_API void vega_websocket_get_error(const vega_websocket *ws, vega_ws_error *err);

/* The selected subprotocol ("" when none). Borrowed from ws. Since 0.1. */
VEGA_API const char *vega_websocket_get_subprotocol(const vega_websocket *ws);

/* Whether permessage-deflate is in use. Since 0.1. */
VEGA_API bool vega_websocket_is_compressed(const vega_websocket *ws);

/* Frees ws (NULL is fine); closes its stream when it owns it. A peer's Close that was read but
 * not yet answered is answered first (the write bounded by a second). Context: a task.
 * Since 0.1. */
VEGA_API void vega_websocket_free(vega_websocket *ws);

#ifdef __cplusplus
}
#endif

#endif
