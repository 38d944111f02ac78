/* SPDX-License-Identifier: MIT */
/* HTTP/2 sans-I/O core (RFC 9113), in the shape of nghttp2's session: a client or server
 * connection fed the bytes read from the peer and asked for the bytes to send, with the time
 * passed in. It frames (§4, §6), keeps stream states (§5.1), flow control with auto-tuned
 * windows (§5.2, §6.9), settings (§6.5), HPACK (<vega/hpack.h>), validates messages (§8),
 * refuses server push, and defends itself against the known floods and resets. No I/O, clock,
 * randomness or global state; allocation only through vega_mem. */
#ifndef VEGA_H2_H
#define VEGA_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/hpack.h>
#include <vega/http.h>
#include <vega/mem.h>
#include <vega/time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* HTTP/2 codes (-10900..-10999; vega_strerror knows them). A peer's violation of the protocol
 * is VEGA_ERR_PROTO, with the wire code from vega_h2_conn_get_error. */
enum {
    VEGA_ERR_H2_BASE = -10900,
    /* The peer's SETTINGS_MAX_CONCURRENT_STREAMS (or our max_local_streams) is reached: wait
     * for a stream to close (on_stream_close). Not fatal. */
    VEGA_ERR_H2_STREAM_LIMIT = -10901,
    /* No new stream: a GOAWAY was sent or received, or the stream IDs are used up. Not fatal:
     * the streams already open go on. */
    VEGA_ERR_H2_GOING_AWAY = -10902,
    /* No such stream, or it is closed for this operation (ended, reset, not yet answerable).
     * Not fatal. */
    VEGA_ERR_H2_STREAM_CLOSED = -10903,
    VEGA_ERR_H2_LAST = -10904,
};

/* Error codes on the wire (RFC 9113 §7), for RST_STREAM and GOAWAY. */
typedef enum vega_h2_error_code {
    VEGA_H2_NO_ERROR = 0x0,
    VEGA_H2_PROTOCOL_ERROR = 0x1,
    VEGA_H2_INTERNAL_ERROR = 0x2,
    VEGA_H2_FLOW_CONTROL_ERROR = 0x3,
    VEGA_H2_SETTINGS_TIMEOUT = 0x4,
    VEGA_H2_STREAM_CLOSED = 0x5,
    VEGA_H2_FRAME_SIZE_ERROR = 0x6,
    VEGA_H2_REFUSED_STREAM = 0x7,
    VEGA_H2_CANCEL = 0x8,
    VEGA_H2_COMPRESSION_ERROR = 0x9,
    VEGA_H2_CONNECT_ERROR = 0xa,
    VEGA_H2_ENHANCE_YOUR_CALM = 0xb,
    VEGA_H2_INADEQUATE_SECURITY = 0xc,
    VEGA_H2_HTTP_1_1_REQUIRED = 0xd,
} vega_h2_error_code;

/* Returns a static name for a wire code ("PROTOCOL_ERROR"); "UNKNOWN" for others. Since 0.1. */
VEGA_API const char *vega_h2_error_code_name(uint32_t code);

/* Flags of submit and data calls, and of on_data. */
enum {
    VEGA_H2_FLAG_NONE = 0,
    VEGA_H2_FLAG_END_STREAM = 1, /* this ends our (or, on_data, the peer's) side of the stream */
};

/* Plain data: SETTINGS values (RFC 9113 §6.5.2, RFC 8441 §3, RFC 9218 §2.1). "Unlimited" is
 * UINT32_MAX. */
typedef struct vega_h2_settings {
    uint32_t header_table_size;
    uint32_t enable_push;
    uint32_t max_concurrent_streams;
    uint32_t initial_window_size;
    uint32_t max_frame_size;
    uint32_t max_header_list_size;
    uint32_t enable_connect_protocol;
    uint32_t no_rfc7540_priorities;
} vega_h2_settings;

/* What a header section is (RFC 9113 §8.1). */
typedef enum vega_h2_head_kind {
    VEGA_H2_HEAD_REQUEST = 1,       /* server: a request's header section */
    VEGA_H2_HEAD_RESPONSE = 2,      /* client: the final response's */
    VEGA_H2_HEAD_INFORMATIONAL = 3, /* client: a 1xx response (several may come) */
    VEGA_H2_HEAD_TRAILERS = 4,      /* either side: the trailer section (ends the stream) */
} vega_h2_head_kind;

/* A validated header section (on_headers). Every pointer borrows the core's memory, valid only
 * during the callback. Pseudo-header fields (§8.3) are taken out of the list. */
typedef struct vega_h2_head {
    vega_h2_head_kind kind;
    bool end_stream; /* no DATA follows: the peer's side of the stream is done */
    /* Requests; ptr NULL when absent (CONNECT has only :authority; :protocol is extended
     * CONNECT's, RFC 8441). */
    vega_http_str method, scheme, authority, path, protocol;
    int status;                     /* responses: 100..599 */
    int64_t content_length;         /* the validated content-length, or -1 when absent */
    const vega_hpack_field *fields; /* the regular fields, in order (names are lowercase) */
    size_t nfields;
} vega_h2_head;

/* How a stream ended (on_stream_close). */
typedef enum vega_h2_close {
    VEGA_H2_CLOSE_DONE = 0,          /* both sides ended normally */
    VEGA_H2_CLOSE_RESET_BY_PEER = 1, /* the peer sent RST_STREAM (error_code: its code; a
                                        client may retry a REFUSED_STREAM) */
    VEGA_H2_CLOSE_RESET_LOCAL = 2,   /* we reset it: vega_h2_submit_rst_stream, or the core
                                        for a stream error of the peer's (a malformed message,
                                        flow control: error_code says which) */
    VEGA_H2_CLOSE_REFUSED = 3,       /* the peer's GOAWAY excluded it: never processed, safe
                                        to retry elsewhere (error_code REFUSED_STREAM) */
    VEGA_H2_CLOSE_CONNECTION = 4,    /* the connection ended with an error while it was open */
} vega_h2_close;

/*
 * Events. Each may be NULL. They return 0, or nonzero to fail the call that runs them with
 * VEGA_ERR_CALLBACK (which ends the connection: INTERNAL_ERROR). From inside a callback the
 * caller may use every vega_h2_submit_*, vega_h2_stream_* and vega_h2_conn_get_* function of
 * the same connection, never vega_h2_conn_read, _write, _handle_expiry or _free.
 */
typedef struct vega_h2_callbacks {
    /* A header section arrived on stream_id and passed validation. A server's first one per
     * stream is a request: the stream now exists (vega_h2_stream_set_user_data may tag it). */
    int (*on_headers)(void *ud, int32_t stream_id, const vega_h2_head *head);
    /* Body bytes of stream_id, as they arrive: data borrows the input of vega_h2_conn_read
     * (zero copy), valid only during the call. flags has VEGA_H2_FLAG_END_STREAM when the
     * peer's side ended here (len may be 0). Give the bytes back with vega_h2_stream_consume
     * once they are used: until then they count against the flow-control windows. */
    int (*on_data)(void *ud, int32_t stream_id, const uint8_t *data, size_t len, unsigned flags);
    /* stream_id is closed (how, and error_code: 0 for DONE, else the RST_STREAM or GOAWAY
     * code). Its user data is still readable during the call; afterwards the stream is gone,
     * and any span given to vega_h2_stream_write is released. */
    int (*on_stream_close)(void *ud, int32_t stream_id, uint32_t error_code, vega_h2_close how);
    /* The span last given to vega_h2_stream_write for stream_id was written out in full: its
     * buffer is the caller's again, and the stream takes the next span (unless that span
     * ended the stream). */
    int (*on_stream_writable)(void *ud, int32_t stream_id);
    /* The peer's SETTINGS frame was applied; peer: the values now in force. */
    int (*on_settings)(void *ud, const vega_h2_settings *peer);
    /* The PING sent by vega_h2_submit_ping(opaque) was acknowledged. */
    int (*on_ping_ack)(void *ud, uint64_t opaque);
    /* The peer sent GOAWAY: no new streams; ours above last_stream_id were closed
     * (VEGA_H2_CLOSE_REFUSED) before this call. debug: borrowed, at most 256 bytes kept. */
    int (*on_goaway)(void *ud, uint32_t last_stream_id, uint32_t error_code, const uint8_t *debug,
                     size_t debug_len);
    /* Server: an RFC 9218 PRIORITY_UPDATE for stream_id (which may not be open yet); value:
     * the Priority field value (e.g. "u=1, i"), borrowed, at most 1024 bytes. */
    int (*on_priority_update)(void *ud, int32_t stream_id, const char *value, size_t len);
} vega_h2_callbacks;

/* Connection options: plain data; a 0 field means its default. */
typedef struct vega_h2_opts {
    /* -- what our SETTINGS frame advertises (RFC 9113 §6.5.2) -- */
    /* Our HPACK decoder's table (SETTINGS_HEADER_TABLE_SIZE); default 4096;
     * VEGA_HPACK_TABLE_OFF for 0. */
    size_t header_table_size;
    /* Streams the peer may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS); default 100.
     * A HEADERS frame past it is refused (RST_STREAM REFUSED_STREAM, retryable). */
    uint32_t max_concurrent_streams;
    /* Each stream's receive window at the start (SETTINGS_INITIAL_WINDOW_SIZE); default
     * 256 KiB, at most 2^31 - 1. */
    uint32_t initial_window_size;
    /* Largest frame payload we take (SETTINGS_MAX_FRAME_SIZE); default 16384, up to
     * 16777215. */
    uint32_t max_frame_size;
    /* Largest header section we take, counted as names + values + 32 per field
     * (SETTINGS_MAX_HEADER_LIST_SIZE); default 65536. A larger request is answered 431 (a
     * server) or its stream cancelled (CANCEL); the block is still decoded. */
    uint32_t max_header_list_size;
    /* Server: RFC 8441 extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL, :protocol);
     * default off. */
    bool enable_connect_protocol;
    /* -- receive flow control (§6.9): windows grow from the initial ones, doubling when the
     * application drains them within 4 round trips, up to these caps -- */
    uint32_t conn_window;       /* the connection's receive window at the start; 1 MiB */
    uint32_t conn_window_max;   /* its cap; default 16 MiB, at most 2^31 - 1 */
    uint32_t stream_window_max; /* a stream's cap; default 8 MiB, at most 2^31 - 1 */
    /* -- sending -- */
    /* Our HPACK encoder's table, whatever the peer allows; default 4096; TABLE_OFF for 0. */
    size_t encoder_table_size;
    vega_hpack_huffman huffman;
    /* Client: streams we open at once, however many the peer allows; default 256. */
    uint32_t max_local_streams;
    /* -- limits and defenses -- */
    uint32_t max_fields;            /* fields of a header section; default 256 */
    uint32_t max_header_block_size; /* bytes of one HEADERS + CONTINUATION block; default
                                       max_header_list_size + 4096; past it: GOAWAY
                                       ENHANCE_YOUR_CALM (the block cannot be decoded) */
    uint32_t max_continuations;     /* CONTINUATION frames per block; default 32; past it:
                                       GOAWAY ENHANCE_YOUR_CALM */
    uint32_t max_queued_control;    /* our answers to the peer (SETTINGS and PING ACKs,
                                       RST_STREAMs) waiting to be written; default 1000; past
                                       it: GOAWAY ENHANCE_YOUR_CALM (the peer does not read) */
    /* Stream resets -- RST_STREAM from the peer on an open stream, and the resets its errors
     * force on us (malformed messages, refused streams, 431s: "MadeYouReset") -- allowed in a
     * burst and per second; past them: GOAWAY ENHANCE_YOUR_CALM (CVE-2023-44487). Defaults
     * 1000 and 33, as nghttp2. */
    uint32_t reset_burst, reset_rate;
    /* Frames that cost us work and do nothing -- empty DATA, PING, SETTINGS after the first,
     * PRIORITY, frames on closed streams, empty CONTINUATION -- allowed in a burst and per
     * second; past them: GOAWAY ENHANCE_YOUR_CALM (CVE-2019-9512..9518). Defaults 1000, 33. */
    uint32_t glitch_burst, glitch_rate;
    uint64_t settings_timeout_ms; /* wait for our SETTINGS' ACK; default 10000; past it: GOAWAY
                                     SETTINGS_TIMEOUT */
    uint64_t shutdown_timeout_ms; /* vega_h2_conn_shutdown waits this long at most for its PING
                                     to come back; default 1000 */
    /* Allocator for the connection, its streams and buffers, retained; NULL = libc. */
    const vega_mem *mem;
} vega_h2_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_H2_OPTS_VERSION 1

/* Fills o with the defaults. Context: any. Since 0.1. */
VEGA_API void vega_h2_opts_init_versioned(vega_h2_opts *o, int opts_version);
#define vega_h2_opts_init(...) vega_h2_opts_init_versioned(__VA_ARGS__, VEGA_H2_OPTS_VERSION)

typedef struct vega_h2_conn vega_h2_conn;

/*
 * Creates a client connection and queues its preface: the magic, our SETTINGS (with
 * SETTINGS_ENABLE_PUSH 0 and SETTINGS_NO_RFC7540_PRIORITIES 1) and the connection's
 * WINDOW_UPDATE (call vega_h2_conn_write). cb: retained (must outlive the connection);
 * o: borrowed (its mem retained), NULL = defaults; user_data: passed to callbacks.
 * *out: returns owned, free with vega_h2_conn_free.
 * Returns 0; -EINVAL (NULL out or cb, an option out of range, options of a layout version
 * this library does not know); -ENOMEM. Context: any. Since 0.1.
 */
VEGA_API int vega_h2_conn_client_new_versioned(vega_h2_conn **out, const vega_h2_callbacks *cb,
                                               const vega_h2_opts *o, void *user_data,
                                               int opts_version);
#define vega_h2_conn_client_new(...)                                                               \
    vega_h2_conn_client_new_versioned(__VA_ARGS__, VEGA_H2_OPTS_VERSION)

/*
 * Creates a server connection and queues our SETTINGS and WINDOW_UPDATE; it then expects the
 * client's preface (the magic and a SETTINGS frame, §3.4) first in the input. Arguments and
 * returns as vega_h2_conn_client_new. Context: any. Since 0.1.
 */
VEGA_API int vega_h2_conn_server_new_versioned(vega_h2_conn **out, const vega_h2_callbacks *cb,
                                               const vega_h2_opts *o, void *user_data,
                                               int opts_version);
#define vega_h2_conn_server_new(...)                                                               \
    vega_h2_conn_server_new_versioned(__VA_ARGS__, VEGA_H2_OPTS_VERSION)

/* Frees c with every stream and buffer (NULL is fine); no callback runs. Spans given to
 * vega_h2_stream_write are released. Context: not from a callback. Since 0.1. */
VEGA_API void vega_h2_conn_free(vega_h2_conn *c);

/*
 * Feeds bytes received from the peer, in any split; all of them are consumed or the call
 * fails. Events run as callbacks from inside. in: borrowed (DATA is handed to on_data in
 * place). now: the current monotonic time (rate limits, RTT, timers).
 * Returns 0; VEGA_ERR_PROTO (the peer broke the protocol, or a defense limit was hit: GOAWAY
 * with the code from vega_h2_conn_get_error is queued; write it out, then close);
 * VEGA_ERR_CALLBACK (a callback failed: GOAWAY INTERNAL_ERROR queued); -ENOMEM (fatal:
 * GOAWAY INTERNAL_ERROR queued); VEGA_ERR_CLOSED (the connection had already ended, by an
 * error or vega_h2_submit_goaway with one); -EINVAL (NULL c, or NULL in with len > 0).
 * Context: not from a callback. Since 0.1.
 */
VEGA_API int vega_h2_conn_read(vega_h2_conn *c, const uint8_t *in, size_t len, vega_tstamp now);

/*
 * Writes frames for the peer into out[0..cap): control frames and answers first, then header
 * blocks, then DATA, streams served round robin, a frame at a time, within the flow-control
 * windows. Body bytes are copied once, from the caller's spans (vega_h2_stream_write) into out.
 * Any cap works (a frame may be split over calls; DATA frames are sized to the room).
 * on_stream_writable and on_stream_close may run from inside.
 * Returns the bytes written, 0 when there is nothing to send now; VEGA_ERR_CALLBACK (fatal:
 * GOAWAY INTERNAL_ERROR queued); -ENOMEM (nothing written: the frame that needed memory waits
 * for a later call, the connection stays usable); -EINVAL (NULL c, or NULL out with cap > 0).
 * Context: not from a callback. Since 0.1.
 */
VEGA_API vega_ssize vega_h2_conn_write(vega_h2_conn *c, uint8_t *out, size_t cap, vega_tstamp now);

/* True while the connection has bytes to write now (vega_h2_conn_write would return > 0).
 * Context: any, including callbacks. Since 0.1. */
VEGA_API bool vega_h2_conn_want_write(const vega_h2_conn *c);

/*
 * Gives back the buffers c keeps between frames to reuse them -- the header block buffer when
 * no block is being reassembled, the decoded fields', the output queue's when nothing waits in
 * it -- so that what an idle connection holds is its state alone (streams, settings, the HPACK
 * tables): about 2.7 KiB less after a typical request. They are allocated again when next
 * needed. A driver calls it when the connection goes idle, not per frame. Context: not from a
 * callback. Since 0.1.
 */
VEGA_API void vega_h2_conn_shrink(vega_h2_conn *c);

/* True while the connection still wants the peer's bytes: false once it ended with an error,
 * or a GOAWAY went either way and no stream is left. A driver closes the transport when
 * neither want_read nor want_write holds. Context: any. Since 0.1. */
VEGA_API bool vega_h2_conn_want_read(const vega_h2_conn *c);

/* When vega_h2_conn_handle_expiry must run next (the SETTINGS ACK timeout, a graceful
 * shutdown's PING wait); VEGA_TSTAMP_MAX when no timer is set. Context: any. Since 0.1. */
VEGA_API vega_tstamp vega_h2_conn_get_expiry(const vega_h2_conn *c);

/*
 * Runs the timers due at now. Returns 0; VEGA_ERR_PROTO (no SETTINGS ACK in time: GOAWAY
 * SETTINGS_TIMEOUT queued); -ENOMEM (the shutdown's final GOAWAY could not be queued: fatal,
 * GOAWAY INTERNAL_ERROR from its reserved slot); VEGA_ERR_CLOSED (already ended); -EINVAL
 * (NULL c).
 * Context: not from a callback. Since 0.1.
 */
VEGA_API int vega_h2_conn_handle_expiry(vega_h2_conn *c, vega_tstamp now);

/* Plain data: why a connection ended. */
typedef struct vega_h2_error {
    uint32_t code;           /* the wire code (vega_h2_error_code) */
    bool remote;             /* true: the peer's GOAWAY carried it; false: we sent it */
    uint32_t last_stream_id; /* the GOAWAY's last stream id */
    const char *reason;      /* static text: which rule, for logs ("DATA on a closed stream") */
} vega_h2_error;

/* Fills *e when the connection ended with an error (a GOAWAY with a code other than
 * NO_ERROR, either way; or a local failure). Returns true then, false (e untouched) when it
 * has not. Context: any. Since 0.1. */
VEGA_API bool vega_h2_conn_get_error(const vega_h2_conn *c, vega_h2_error *e);

/* Plain data: the connection's state for a driver or a log. */
typedef struct vega_h2_conn_info {
    vega_h2_settings local;    /* what we advertised */
    vega_h2_settings peer;     /* what the peer's SETTINGS say (defaults until they come) */
    bool local_settings_acked; /* the peer acknowledged ours */
    bool goaway_sent, goaway_received;
    uint32_t streams_open;       /* streams not yet closed, both kinds */
    int64_t send_window;         /* the connection's window the peer gave us */
    int64_t recv_window;         /* what we allow the peer to send now, connection-wide */
    uint32_t recv_window_target; /* the auto-tuned receive window */
    uint64_t rtt_ns;             /* smoothed round trip (SETTINGS and PING), 0 before one */
    /* Since when data waits for the connection window the peer gives (a zero-window stall:
     * a driver times a stalled peer out with it); VEGA_TSTAMP_MAX when not stalled. */
    vega_tstamp send_stalled_since;
    uint64_t bytes_in, bytes_out; /* frame bytes read and written */
} vega_h2_conn_info;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI): fields are only ever
 * appended, and a caller built against an older layout gets that layout's prefix filled,
 * nothing past it. */
#define VEGA_H2_CONN_INFO_VERSION 1

/* Fills *info up to the end of layout info_version (the macro vega_h2_conn_get_info passes
 * VEGA_H2_CONN_INFO_VERSION). Returns 0; -EINVAL (c or info NULL, or a layout this library does
 * not know: info is left as it was). Context: any, including callbacks. Since 0.1 (versioned
 * since 0.2). */
VEGA_API int vega_h2_conn_get_info_versioned(const vega_h2_conn *c, vega_h2_conn_info *info,
                                             int info_version);
#define vega_h2_conn_get_info(...)                                                                 \
    vega_h2_conn_get_info_versioned(__VA_ARGS__, VEGA_H2_CONN_INFO_VERSION)

/* Stream states (RFC 9113 §5.1; reserved ones never occur: push is refused). */
typedef enum vega_h2_stream_state {
    VEGA_H2_STATE_IDLE = 0,
    VEGA_H2_STATE_OPEN = 1,
    VEGA_H2_STATE_HALF_CLOSED_LOCAL = 2,
    VEGA_H2_STATE_HALF_CLOSED_REMOTE = 3,
    VEGA_H2_STATE_CLOSED = 4,
} vega_h2_stream_state;

/* Plain data: one stream's state. */
typedef struct vega_h2_stream_info {
    vega_h2_stream_state state;
    int64_t send_window;            /* what the peer lets us send on it (the connection's too) */
    int64_t recv_window;            /* what we let the peer send on it now */
    size_t unconsumed;              /* bytes handed to on_data and not yet consumed */
    size_t pending;                 /* bytes of the current write span not yet written */
    vega_tstamp send_stalled_since; /* since when its data waits for the stream's window;
                                       VEGA_TSTAMP_MAX when not stalled */
} vega_h2_stream_info;
/* This struct's layout version (API rules: ABI): fields are only ever appended, and a caller
 * built against an older layout gets that layout's prefix filled, nothing past it. */
#define VEGA_H2_STREAM_INFO_VERSION 1

/*
 * Fills *info for stream_id, up to the end of layout info_version (the macro
 * vega_h2_stream_get_info passes VEGA_H2_STREAM_INFO_VERSION). Returns 0;
 * VEGA_ERR_H2_STREAM_CLOSED (no such stream: never opened, or closed and gone); -EINVAL (NULL c
 * or info, or a layout this library does not know). info is left as it was on an error.
 * Context: any. Since 0.1 (versioned since 0.2).
 */
VEGA_API int vega_h2_stream_get_info_versioned(const vega_h2_conn *c, int32_t stream_id,
                                               vega_h2_stream_info *info, int info_version);
#define vega_h2_stream_get_info(...)                                                               \
    vega_h2_stream_get_info_versioned(__VA_ARGS__, VEGA_H2_STREAM_INFO_VERSION)

/* Tags stream_id with the caller's pointer (retained, never touched). Returns 0;
 * VEGA_ERR_H2_STREAM_CLOSED. Context: any. Since 0.1. */
VEGA_API int vega_h2_stream_set_user_data(vega_h2_conn *c, int32_t stream_id, void *user_data);

/* The pointer set on stream_id, or NULL (none, or no such stream). Since 0.1. */
VEGA_API void *vega_h2_stream_get_user_data(const vega_h2_conn *c, int32_t stream_id);

/*
 * Client: opens a stream with a request's header section. fields: the pseudo-header fields
 * first (":method", ":scheme", ":authority", ":path", and ":protocol" for extended CONNECT),
 * then the regular ones with lowercase names, none connection-specific (§8.2.2, §8.3.1);
 * borrowed: copied, then encoded when the block is written (vega_hpack_field.index is
 * honoured). flags: VEGA_H2_FLAG_END_STREAM for a request without a body; otherwise send
 * it with vega_h2_stream_write. stream_user_data: as vega_h2_stream_set_user_data.
 * *stream_id: the new stream's id (odd, increasing).
 * Returns 0; VEGA_ERR_H2_STREAM_LIMIT; VEGA_ERR_H2_GOING_AWAY; VEGA_ERR_CLOSED (the
 * connection ended); -EINVAL (a server connection, a malformed request, a bad flag);
 * -EAGAIN (a :protocol request before the server's SETTINGS came); -EOPNOTSUPP (the server did
 * not enable extended CONNECT); -ENOMEM. Context: any, including callbacks. Since 0.1.
 */
VEGA_API int vega_h2_submit_request(vega_h2_conn *c, const vega_hpack_field *fields, size_t n,
                                    unsigned flags, void *stream_user_data, int32_t *stream_id);

/*
 * Server: sends a response's header section on stream_id: ":status" first, then regular
 * fields (rules and copying as submit_request). A 1xx status is informational (several may
 * go, never with END_STREAM; 101 is refused, §8.6); then exactly one final status.
 * Returns 0; VEGA_ERR_H2_STREAM_CLOSED (no such stream, a final response already sent, or
 * our side ended); VEGA_ERR_CLOSED; -EINVAL (a client connection, a malformed response, a bad
 * flag); -ENOMEM. Context: any, including callbacks. Since 0.1.
 */
VEGA_API int vega_h2_submit_response(vega_h2_conn *c, int32_t stream_id,
                                     const vega_hpack_field *fields, size_t n, unsigned flags);

/*
 * Ends our side of stream_id with a trailer section (regular fields only), sent after every
 * byte given to vega_h2_stream_write. Allowed once the request (client) or final response
 * (server) was submitted and while our side is open.
 * Returns 0; VEGA_ERR_H2_STREAM_CLOSED; VEGA_ERR_CLOSED; -EINVAL (a pseudo-header or invalid
 * field, or END_STREAM already asked for); -ENOMEM. Context: any, including callbacks.
 * Since 0.1.
 */
VEGA_API int vega_h2_submit_trailers(vega_h2_conn *c, int32_t stream_id,
                                     const vega_hpack_field *fields, size_t n);

/*
 * Offers len body bytes on stream_id (zero copy until the write: the core keeps the pointer
 * and copies from it into the output of vega_h2_conn_write, in DATA frames sized to the
 * flow-control windows and the peer's SETTINGS_MAX_FRAME_SIZE). data: retained until
 * on_stream_writable (or on_stream_close, or vega_h2_conn_free) for this stream; the caller
 * must not change it before. A stream holds one span at a time: while one is pending, nothing
 * is taken. flags: VEGA_H2_FLAG_END_STREAM ends our side after these bytes (len 0 sends an
 * empty DATA frame with END_STREAM, or marks the pending span as the last).
 * Returns the bytes taken: len, or 0 while an earlier span is pending (wait for
 * on_stream_writable); VEGA_ERR_H2_STREAM_CLOSED (no such stream, our side ended or a
 * trailer section is queued, or no header section was submitted yet); VEGA_ERR_CLOSED;
 * -EINVAL (NULL data with len > 0, a bad flag).
 * Context: any, including callbacks. Since 0.1.
 */
VEGA_API vega_ssize vega_h2_stream_write(vega_h2_conn *c, int32_t stream_id, const uint8_t *data,
                                         size_t len, unsigned flags);

/*
 * Gives back n bytes of body received on stream_id (on_data) that the application has used,
 * reopening flow control: WINDOW_UPDATE frames are queued for the stream and the connection
 * when half a window was used, and the windows double when they are drained within 4 round
 * trips (up to the caps). When a stream closes, what was not consumed by the end of its
 * on_stream_close goes back to the connection by itself; consuming for a stream that is gone
 * does nothing.
 * Returns 0; -EINVAL (NULL c, or n more than the stream had handed out and not consumed).
 * Context: any, including callbacks. Since 0.1.
 */
VEGA_API int vega_h2_stream_consume(vega_h2_conn *c, int32_t stream_id, size_t n);

/*
 * Resets stream_id with error_code (RST_STREAM, §6.4); on_stream_close runs from inside
 * (RESET_LOCAL). A stream whose header section was not written yet is dropped without a
 * frame (the peer never saw it).
 * Returns 0; VEGA_ERR_H2_STREAM_CLOSED (no such stream); VEGA_ERR_CALLBACK
 * (on_stream_close failed); -ENOMEM (the frame could not be queued: nothing changed);
 * -EINVAL (NULL c). Context: any, including callbacks. Since 0.1.
 */
VEGA_API int vega_h2_submit_rst_stream(vega_h2_conn *c, int32_t stream_id, uint32_t error_code);

/*
 * Sends a PING with these 8 bytes (§6.7); on_ping_ack reports the answer, and the round trip
 * feeds the RTT estimate. Returns 0; VEGA_ERR_CLOSED; -ENOMEM; -EINVAL (NULL c).
 * Context: any, including callbacks. Since 0.1.
 */
VEGA_API int vega_h2_submit_ping(vega_h2_conn *c, uint64_t opaque);

/*
 * Sends a GOAWAY now (§6.8) with the last peer stream we processed. NO_ERROR: no new
 * streams, the open ones finish (prefer vega_h2_conn_shutdown, which is graceful). Another
 * code: the connection ends (every stream closes: VEGA_H2_CLOSE_CONNECTION). debug: borrowed,
 * at most 256 bytes sent.
 * Returns 0; VEGA_ERR_CLOSED (already ended); VEGA_ERR_CALLBACK (on_stream_close failed);
 * -ENOMEM (a NO_ERROR GOAWAY could not be queued: nothing changed); -EINVAL (NULL c, NULL
 * debug with len > 0). Context: any, including callbacks. Since 0.1.
 */
VEGA_API int vega_h2_submit_goaway(vega_h2_conn *c, uint32_t error_code, const uint8_t *debug,
                                   size_t len);

/*
 * Graceful shutdown. A server sends GOAWAY with 2^31 - 1 and a PING, and once the PING comes
 * back (or shutdown_timeout_ms passed) the final GOAWAY with the last stream it took, so that
 * requests already in flight are not lost (§6.8); a client sends GOAWAY 0. Open streams finish;
 * want_read goes false when none is left.
 * Returns 0; VEGA_ERR_CLOSED (already ended); -ENOMEM (nothing queued: try again); -EINVAL
 * (NULL c). Context: any, including callbacks. Since 0.1.
 */
VEGA_API int vega_h2_conn_shutdown(vega_h2_conn *c, vega_tstamp now);

/*
 * Client: sends an RFC 9218 PRIORITY_UPDATE for stream_id (open or not yet opened) with a
 * Priority field value. value: borrowed, at most 1024 bytes. The server decides what it does
 * with it; this core schedules its own streams round robin.
 * Returns 0; VEGA_ERR_CLOSED; -EINVAL (a server connection, stream_id not a client stream id,
 * a value too long or not a field value); -ENOMEM. Context: any, including callbacks.
 * Since 0.1.
 */
VEGA_API int vega_h2_submit_priority_update(vega_h2_conn *c, int32_t stream_id, const char *value,
                                            size_t len);

#ifdef __cplusplus
}
#endif
#endif
