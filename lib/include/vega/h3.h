/* SPDX-License-Identifier: MIT */
/* HTTP/3 sans-I/O core (RFC 9114), the role nghttp3 plays: frames, the control and QPACK
 * streams, SETTINGS, GOAWAY, request and response validation (§4.1.2, §4.2, §4.3), QPACK
 * (RFC 9204) underneath, extended CONNECT (RFC 9220), HTTP datagram prefixes (RFC 9297) and
 * priorities (RFC 9218). The QUIC layer is the caller's: the core knows streams only by their
 * QUIC stream id and their bytes. No I/O, clock or global state; memory only through vega_mem. */
#ifndef VEGA_H3_H
#define VEGA_H3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/http.h>
#include <vega/mem.h>
#include <vega/qpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* HTTP/3 codes (-11100..-11199; vega_strerror knows them). */
enum {
    VEGA_ERR_H3_BASE = -11100,
    /* The peer sent GOAWAY: no new request may start on this connection (RFC 9114 §5.2); a
     * client retries on a new one. */
    VEGA_ERR_H3_GOAWAY = -11101,
    VEGA_ERR_H3_LAST = -11102,
};

/* HTTP/3 error codes (RFC 9114 §8.1), the wire codes of stream and connection errors; the
 * QPACK ones are VEGA_QPACK_* (<vega/qpack.h>). */
typedef enum vega_h3_error_code {
    VEGA_H3_DATAGRAM_ERROR = 0x33, /* RFC 9297 §2.1 */
    VEGA_H3_NO_ERROR = 0x100,
    VEGA_H3_GENERAL_PROTOCOL_ERROR = 0x101,
    VEGA_H3_INTERNAL_ERROR = 0x102,
    VEGA_H3_STREAM_CREATION_ERROR = 0x103,
    VEGA_H3_CLOSED_CRITICAL_STREAM = 0x104,
    VEGA_H3_FRAME_UNEXPECTED = 0x105,
    VEGA_H3_FRAME_ERROR = 0x106,
    VEGA_H3_EXCESSIVE_LOAD = 0x107,
    VEGA_H3_ID_ERROR = 0x108,
    VEGA_H3_SETTINGS_ERROR = 0x109,
    VEGA_H3_MISSING_SETTINGS = 0x10a,
    VEGA_H3_REQUEST_REJECTED = 0x10b,
    VEGA_H3_REQUEST_CANCELLED = 0x10c,
    VEGA_H3_REQUEST_INCOMPLETE = 0x10d,
    VEGA_H3_MESSAGE_ERROR = 0x10e,
    VEGA_H3_CONNECT_ERROR = 0x10f,
    VEGA_H3_VERSION_FALLBACK = 0x110,
} vega_h3_error_code;

/* Returns the static name of an HTTP/3 or QPACK wire code ("H3_FRAME_UNEXPECTED"); "unknown"
 * for others (a reserved 0x1f * N + 0x21 code reads "H3_GREASE"). Since 0.1. */
VEGA_API const char *vega_h3_error_name(uint64_t code);

/* In a limit field where 0 selects the default, this value asks for an actual zero. */
#define VEGA_H3_ZERO UINT64_MAX

/* Connection options: plain data, vega_h3_opts_init sets the defaults (a zero field also means
 * its default). Every limit on what the peer sends has a default and a test. */
typedef struct vega_h3_opts {
    /* SETTINGS_MAX_FIELD_SECTION_SIZE we send, and the largest field section we accept (RFC 9114
     * §4.2.2 size, decoded) and the largest HEADERS frame we buffer (default 65536). A larger
     * message is a stream error H3_EXCESSIVE_LOAD (a server may answer 431 before resetting). */
    uint64_t max_field_section_size;
    /* The most field lines in one section (default 256); more: as above. */
    size_t max_fields;
    /* Our QPACK decoder: SETTINGS_QPACK_MAX_TABLE_CAPACITY (default 4096; VEGA_H3_ZERO: no
     * dynamic table) and SETTINGS_QPACK_BLOCKED_STREAMS (default 16; VEGA_H3_ZERO: none). */
    uint64_t qpack_max_table_capacity;
    uint64_t qpack_blocked_streams;
    /* Our QPACK encoder: the most of the peer's dynamic table we use (default 4096; VEGA_H3_ZERO:
     * static table and literals only) and the most streams we risk blocking (default 16). */
    uint64_t qpack_encoder_max_table_capacity;
    uint64_t qpack_encoder_blocked_streams;
    /* The largest control-stream frame buffered whole: SETTINGS, GOAWAY, MAX_PUSH_ID,
     * CANCEL_PUSH, PRIORITY_UPDATE (default 16384); a larger one is a connection error
     * H3_EXCESSIVE_LOAD. Unknown and reserved frames are skipped unbuffered on every stream. */
    size_t max_control_frame;
    /* Server: send SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 and accept extended CONNECT requests
     * (:protocol, RFC 9220). Without it a :protocol is a malformed request. */
    bool enable_connect_protocol;
    /* Send SETTINGS_H3_DATAGRAM = 1 (RFC 9297): only when the QUIC layer offers the DATAGRAM
     * transport parameter. */
    bool enable_datagram;
    /* Leave out the reserved ("GREASE", RFC 9114 §7.2.4.1) setting we send by default. */
    bool no_grease;
    /* Picks the reserved setting's identifier (0x1f * N + 0x21) and value: pass a random number
     * (the core has no randomness of its own); 0 uses a fixed one. */
    uint64_t grease_seed;
    /* Allocator, retained for the connection's life; NULL = libc. */
    const vega_mem *mem;
} vega_h3_opts;
#define VEGA_H3_OPTS_VERSION 1

/* Fills o with the defaults. Context: any. Since 0.1. */
VEGA_API void vega_h3_opts_init_versioned(vega_h3_opts *o, int opts_version);
#define vega_h3_opts_init(...) vega_h3_opts_init_versioned(__VA_ARGS__, VEGA_H3_OPTS_VERSION)

/* The peer's SETTINGS (RFC 9114 §7.2.4, RFC 9204 §5, RFC 9220 §3, RFC 9297 §2.1.1); a setting it
 * omitted has its default. */
typedef struct vega_h3_settings {
    uint64_t max_field_section_size;   /* UINT64_MAX when omitted: unlimited */
    uint64_t qpack_max_table_capacity; /* 0 when omitted */
    uint64_t qpack_blocked_streams;    /* 0 when omitted */
    bool enable_connect_protocol;      /* the server accepts extended CONNECT */
    bool h3_datagram; /* the peer accepts HTTP datagrams (the caller must then check that QUIC
                         negotiated DATAGRAM frames, else close with H3_SETTINGS_ERROR) */
} vega_h3_settings;

/* A priority (RFC 9218 §4): urgency 0 (highest) .. 7, default 3; incremental, default false. */
typedef struct vega_h3_priority {
    uint8_t urgency;
    bool incremental;
} vega_h3_priority;

/* What a received HEADERS frame is. */
typedef enum vega_h3_head_kind {
    VEGA_H3_HEAD_INITIAL = 1,       /* a request head (server), a final response head (client) */
    VEGA_H3_HEAD_INFORMATIONAL = 2, /* client: an interim 1xx response head (more follow) */
    VEGA_H3_HEAD_TRAILERS = 3,      /* a trailer section (no pseudo-header fields) */
} vega_h3_head_kind;

/* A received, validated head. Everything is borrowed for the duration of on_headers. */
typedef struct vega_h3_head {
    vega_h3_head_kind kind;
    /* Request pseudo-header fields (server side); ptr NULL when absent. For CONNECT without
     * :protocol only method and authority are present. */
    vega_http_str method, scheme, authority, path, protocol;
    int status; /* response :status, 100..599 (client side); 0 for requests and trailers */
    /* The regular fields in order, pseudo-header fields excluded; never_indexed[i] tells a line
     * sent with QPACK's N bit (an intermediary must not index it). */
    const vega_http_field *fields;
    const bool *never_indexed;
    size_t nfields;
    bool has_content_length; /* a content-length field (checked: digits, all copies equal) */
    uint64_t content_length;
    vega_h3_priority priority; /* from a Priority field (RFC 9218 §5), else the defaults */
} vega_h3_head;

/* Events. Each returns 0, or nonzero to fail the call that fired it with VEGA_ERR_CALLBACK
 * (fatal for the connection). Any may be NULL. A callback may call the submit_, get_ and
 * write_ functions that take no input (vega_h3_conn_submit_goaway, _get_error,
 * vega_h3_conn_write_response_head ...), never vega_h3_conn_read_stream, _write_uni or _free. */
typedef struct vega_h3_callbacks {
    /* A validated head (request, interim or final response, trailers) on stream_id. */
    int (*on_headers)(void *user_data, uint64_t stream_id, const vega_h3_head *head);
    /* Content bytes of a DATA frame: data borrows the input given to vega_h3_conn_read_stream
     * (zero copy), valid for the call. Never empty. */
    int (*on_data)(void *user_data, uint64_t stream_id, const uint8_t *data, size_t len);
    /* The stream ended (FIN) after a complete message; its state is gone. */
    int (*on_end_stream)(void *user_data, uint64_t stream_id);
    /* A malformed message on one request stream (RFC 9114 §4.1.2), or one over the limits: reset
     * the stream (RESET_STREAM and STOP_SENDING) with code (H3_MESSAGE_ERROR,
     * H3_EXCESSIVE_LOAD, H3_REQUEST_INCOMPLETE, H3_REQUEST_REJECTED after our GOAWAY ...). The
     * connection goes on; further input on the stream is ignored until its end or
     * vega_h3_conn_close_stream. */
    int (*on_stream_error)(void *user_data, uint64_t stream_id, uint64_t code);
    /* stream_id was blocked on QPACK (vega_h3_conn_read_stream consumed less than it was given)
     * and can now take the rest of its data: feed it again. Fired from the call that fed the
     * peer's encoder stream, after the stream's head was delivered. */
    int (*on_stream_unblocked)(void *user_data, uint64_t stream_id);
    /* The peer's SETTINGS arrived. */
    int (*on_settings)(void *user_data, const vega_h3_settings *peer);
    /* The peer sent GOAWAY: id is the first request stream id (from a server) or push id (from
     * a client) it will not process; requests at or above it were not processed and may be
     * retried elsewhere. */
    int (*on_goaway)(void *user_data, uint64_t id);
    /* Server: a PRIORITY_UPDATE (RFC 9218 §7.2) for request stream_id (possibly not open yet). */
    int (*on_priority_update)(void *user_data, uint64_t stream_id, const vega_h3_priority *prio);
    /* A peer's unidirectional stream we do not read (unknown or reserved type, RFC 9114 §6.2):
     * abort reading it with STOP_SENDING and code (H3_STREAM_CREATION_ERROR). Its further input
     * is ignored. */
    int (*on_stop_sending)(void *user_data, uint64_t stream_id, uint64_t code);
} vega_h3_callbacks;

typedef struct vega_h3_conn vega_h3_conn;

/*
 * Creates the HTTP/3 side of a client or a server connection. Nothing is sent before
 * vega_h3_conn_bind_streams. cb: retained; opts: borrowed (NULL = defaults; its mem retained);
 * user_data: passed to callbacks.
 * Returns 0; -EINVAL (NULL out or cb, a limit above its maximum, an allocator with a NULL
 * function, options of a layout version this library does not know); -ENOMEM.
 * Context: any. Since 0.1.
 */
VEGA_API int vega_h3_conn_client_new_versioned(vega_h3_conn **out, const vega_h3_callbacks *cb,
                                               const vega_h3_opts *opts, void *user_data,
                                               int opts_version);
#define vega_h3_conn_client_new(...)                                                               \
    vega_h3_conn_client_new_versioned(__VA_ARGS__, VEGA_H3_OPTS_VERSION)
/* As vega_h3_conn_client_new, for a server. Returns 0; -EINVAL; -ENOMEM. Since 0.1. */
VEGA_API int vega_h3_conn_server_new_versioned(vega_h3_conn **out, const vega_h3_callbacks *cb,
                                               const vega_h3_opts *opts, void *user_data,
                                               int opts_version);
#define vega_h3_conn_server_new(...)                                                               \
    vega_h3_conn_server_new_versioned(__VA_ARGS__, VEGA_H3_OPTS_VERSION)

/* Frees c (NULL is fine) with every stream's state. Context: not from a callback. Since 0.1. */
VEGA_API void vega_h3_conn_free(vega_h3_conn *c);

/*
 * Tells the core the ids of the three unidirectional streams the caller opened on QUIC for us:
 * control, QPACK encoder, QPACK decoder (RFC 9114 §6.2.1, RFC 9204 §4.2). Their stream type
 * bytes and our SETTINGS are then ready for vega_h3_conn_write_uni.
 * Returns 0; -EINVAL (ids not locally initiated unidirectional ids of our role, equal ids, or
 * called twice). Context: not from a callback. Since 0.1.
 */
VEGA_API int vega_h3_conn_bind_streams(vega_h3_conn *c, uint64_t control, uint64_t qpack_encoder,
                                       uint64_t qpack_decoder);

/*
 * Takes bytes for one of our unidirectional streams: the stream type byte first, SETTINGS first
 * on the control stream, then GOAWAY and PRIORITY_UPDATE frames; encoder and decoder
 * instructions on the QPACK streams. Call until it returns 0; the bytes must go out on
 * *stream_id in order (what did not fit in cap stays for the next call). stream_id, out:
 * borrowed.
 * Returns the bytes written (0: nothing to send, or not bound yet); -EINVAL (NULL stream_id or
 * out with cap > 0). Context: not from a callback. Since 0.1.
 */
VEGA_API vega_ssize vega_h3_conn_write_uni(vega_h3_conn *c, uint64_t *stream_id, uint8_t *out,
                                           size_t cap);

/*
 * Feeds bytes received on any stream, in order, and fin when they end it. The peer's
 * unidirectional streams are recognised by their type byte (control, QPACK encoder and
 * decoder; push refused; unknown and reserved types reported through on_stop_sending and
 * ignored). Request streams: frames are parsed, partial frames buffered (a HEADERS frame up to
 * max_field_section_size, control frames up to max_control_frame; unknown frames skipped
 * unbuffered), heads decoded and validated, DATA handed over zero-copy through on_data.
 * data: borrowed.
 * Returns the bytes consumed: len, or fewer when the stream is blocked on QPACK (a HEADERS frame
 * waits for the encoder stream): keep the rest (and the fin) in QUIC's receive buffer and feed
 * it again after on_stream_unblocked (fed earlier, it is refused again: 0). Negative:
 * VEGA_ERR_PROTO (a connection error: close with vega_h3_conn_get_error's code);
 * VEGA_ERR_CALLBACK; -ENOMEM (fatal); -EINVAL (a NULL data with len > 0, an id above 2^62 - 1).
 * After a connection error every later call returns it again.
 * Context: not from a callback. Since 0.1.
 */
VEGA_API vega_ssize vega_h3_conn_read_stream(vega_h3_conn *c, uint64_t stream_id,
                                             const uint8_t *data, size_t len, bool fin);

/*
 * Forgets a stream the caller no longer reads: the peer reset it (RESET_STREAM) or asked us to
 * stop sending on it (STOP_SENDING), or the caller reset it (after on_stream_error, or to cancel
 * a request). Any QPACK state for it goes (a Stream Cancellation is queued when a head was not
 * decoded). A critical stream (a control or QPACK stream, ours or the peer's) may never close.
 * Returns 0 (also for a stream the core does not know); VEGA_ERR_PROTO for a critical stream
 * (H3_CLOSED_CRITICAL_STREAM); -ENOMEM. Context: not from a callback. Since 0.1.
 */
VEGA_API int vega_h3_conn_close_stream(vega_h3_conn *c, uint64_t stream_id);

/* Request pseudo-header fields to send (RFC 9114 §4.3.1, RFC 9220 §4); a ptr NULL leaves the
 * field out. */
typedef struct vega_h3_request {
    vega_http_str method;    /* required: a token */
    vega_http_str scheme;    /* required, except for CONNECT without protocol */
    vega_http_str authority; /* required for CONNECT; else optional (then send a host field) */
    vega_http_str path;      /* required, except for CONNECT without protocol; not empty */
    vega_http_str protocol;  /* extended CONNECT only (method CONNECT; the server's SETTINGS must
                                have enabled it) */
} vega_h3_request;

/*
 * Client: writes a whole HEADERS frame for a request on stream_id (a client-initiated
 * bidirectional stream the caller opened) into out, QPACK-encoded (encoder instructions it needs
 * are queued for vega_h3_conn_write_uni), and starts reading the response on that stream.
 * Regular fields are checked: lowercase token names, valid values (RFC 9110 §5.5), no
 * pseudo-header fields, no connection-specific fields (connection, keep-alive,
 * proxy-connection, transfer-encoding, upgrade), te only "trailers". req, fields, out: borrowed.
 * Returns the bytes written; VEGA_ERR_NOBUF (cap too small: nothing changed); -EINVAL (a field
 * or pseudo-header field refused, a head over the peer's SETTINGS_MAX_FIELD_SECTION_SIZE, a
 * stream id that is not ours or already used, a :protocol the server did not enable); -EAGAIN
 * (a :protocol before the server's SETTINGS arrived);
 * VEGA_ERR_H3_GOAWAY (the server sent GOAWAY); -ENOMEM. Context: any, callbacks included.
 * Since 0.1.
 */
VEGA_API vega_ssize vega_h3_conn_write_request_head(vega_h3_conn *c, uint64_t stream_id,
                                                    const vega_h3_request *req,
                                                    const vega_http_field *fields, size_t n,
                                                    uint8_t *out, size_t cap);

/*
 * Server: writes a HEADERS frame for a response on stream_id: status 100..599 (1xx as interim
 * heads before the final one; 101 is refused, RFC 9114 §4.5), then fields checked as for
 * requests. Returns as vega_h3_conn_write_request_head: the bytes written; VEGA_ERR_NOBUF;
 * -EINVAL; -ENOMEM. Context: any, callbacks included. Since 0.1.
 */
VEGA_API vega_ssize vega_h3_conn_write_response_head(vega_h3_conn *c, uint64_t stream_id,
                                                     int status, const vega_http_field *fields,
                                                     size_t n, uint8_t *out, size_t cap);

/*
 * Writes a HEADERS frame carrying a trailer section (after the content, then end the stream).
 * Fields checked as above; pseudo-header fields refused. Returns the bytes written;
 * VEGA_ERR_NOBUF; -EINVAL; -ENOMEM. Context: any, callbacks included. Since 0.1.
 */
VEGA_API vega_ssize vega_h3_conn_write_trailers(vega_h3_conn *c, uint64_t stream_id,
                                                const vega_http_field *fields, size_t n,
                                                uint8_t *out, size_t cap);

/* The most bytes a DATA frame header takes. */
#define VEGA_H3_DATA_HEADER_MAX 9

/*
 * Writes the header of a DATA frame (type and length, RFC 9114 §7.2.1) announcing payload_len
 * bytes, which the caller then sends from its own buffer. Returns the bytes written (2..9);
 * VEGA_ERR_NOBUF; -EINVAL (payload_len above 2^62 - 1). Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_h3_write_data_header(uint8_t *out, size_t cap, uint64_t payload_len);

/*
 * Queues a GOAWAY on our control stream (RFC 9114 §5.2): id is, from a server, the first client
 * request stream id it will not process (2^62 - 4 for "stop starting new ones" first, then
 * vega_h3_conn_get_next_request_id); from a client, a push id. A server then refuses requests at
 * or above id (on_stream_error with H3_REQUEST_REJECTED).
 * Returns 0; -EINVAL (a server id that is not a client-initiated bidirectional stream id, an id
 * above the one sent before, or above 2^62 - 1); -ENOMEM. Context: any, callbacks included.
 * Since 0.1.
 */
VEGA_API int vega_h3_conn_submit_goaway(vega_h3_conn *c, uint64_t id);

/*
 * Client: queues a PRIORITY_UPDATE for request stream_id on our control stream (RFC 9218 §7.2).
 * Returns 0; -EINVAL (a server connection, a stream id that is not a client-initiated
 * bidirectional one, urgency above 7); -ENOMEM. Context: any, callbacks included. Since 0.1.
 */
VEGA_API int vega_h3_conn_submit_priority_update(vega_h3_conn *c, uint64_t stream_id,
                                                 const vega_h3_priority *prio);

/* Server: the lowest client request stream id not seen yet (for a final GOAWAY). Since 0.1. */
VEGA_API uint64_t vega_h3_conn_get_next_request_id(const vega_h3_conn *c);

/* The peer's SETTINGS into *out; returns false (and the defaults) until they arrived.
 * Since 0.1. */
VEGA_API bool vega_h3_conn_get_peer_settings(const vega_h3_conn *c, vega_h3_settings *out);

/* The wire code (VEGA_H3_* or VEGA_QPACK_*) of the connection error behind VEGA_ERR_PROTO, 0 when
 * none; *reason (may be NULL) receives a static description. Context: any. Since 0.1. */
VEGA_API uint64_t vega_h3_conn_get_error(const vega_h3_conn *c, const char **reason);

/*
 * Parses a Priority field value (RFC 9218 §4, an RFC 8941 dictionary: u=0..7, i as a boolean;
 * unknown keys and out-of-range values ignored). s: borrowed.
 * Returns 0 with *out set; VEGA_ERR_PROTO when the value is not a dictionary (then *out holds the
 * defaults, u=3 and not incremental, which is what the receiver then uses). Since 0.1.
 */
VEGA_API int vega_h3_priority_parse(const char *s, size_t len, vega_h3_priority *out);

/*
 * Writes a Priority field value for p ("u=5, i", "" for the defaults) into out. Returns the
 * bytes written (no NUL); VEGA_ERR_NOBUF; -EINVAL (urgency above 7). Since 0.1.
 */
VEGA_API vega_ssize vega_h3_priority_write(char *out, size_t cap, const vega_h3_priority *p);

/*
 * HTTP datagrams (RFC 9297 §2.1): writes the Quarter Stream ID that starts a QUIC DATAGRAM
 * payload for request stream_id. Returns the bytes written (1..8); VEGA_ERR_NOBUF; -EINVAL (not a
 * client-initiated bidirectional stream id). Since 0.1.
 */
VEGA_API vega_ssize vega_h3_datagram_write_prefix(uint8_t *out, size_t cap, uint64_t stream_id);

/*
 * Reads the Quarter Stream ID of a received QUIC DATAGRAM payload: *stream_id receives the
 * request stream id; the HTTP datagram payload follows the returned length. in: borrowed.
 * Returns the prefix length; VEGA_ERR_PROTO (empty or truncated: close the connection with
 * H3_DATAGRAM_ERROR, RFC 9297 §2.1). Since 0.1.
 */
VEGA_API vega_ssize vega_h3_datagram_parse(const uint8_t *in, size_t len, uint64_t *stream_id);

#ifdef __cplusplus
}
#endif
#endif
