/* SPDX-License-Identifier: MIT */
/* WebSocket sans-I/O core (RFC 6455) with permessage-deflate (RFC 7692): framing for both
 * roles (client masking, §5.3), fragmentation with interleaved control frames (§5.4), ping and
 * pong (§5.5.2-3), the close handshake (§5.5.1, §7), strict UTF-8 of text messages (§8.1),
 * size limits; and the opening handshake's helpers (§4: Sec-WebSocket-Key/Accept, version,
 * subprotocols, the permessage-deflate parameters). No I/O, clock, randomness (the mask keys
 * come from a caller's callback) or global state; allocation only through vega_mem. */
#ifndef VEGA_WS_H
#define VEGA_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/mem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes of the WebSocket client's opening handshake (range -11500, err.h;
 * vega_websocket_connect in <vega/websocket.h>). */
enum {
    VEGA_ERR_WS_BASE = -11500,
    VEGA_ERR_WS_STATUS = -11501,    /* the server answered the handshake with a status other
                                       than 101 (the response: vega_websocket_connect_opts) */
    VEGA_ERR_WS_HANDSHAKE = -11502, /* a 101 that fails RFC 6455 §4.1: Upgrade or Connection
                                       missing, a wrong Sec-WebSocket-Accept, an extension or
                                       subprotocol we did not offer */
};

/* The protocol version of RFC 6455 (Sec-WebSocket-Version, §4.1). */
#define VEGA_WS_VERSION 13
/* The longest payload of a control frame (§5.5). */
#define VEGA_WS_MAX_CONTROL 125

typedef enum vega_ws_role {
    VEGA_WS_CLIENT = 1, /* masks what it sends, refuses masked frames (§5.1) */
    VEGA_WS_SERVER = 2, /* refuses unmasked frames, sends unmasked */
} vega_ws_role;

/* A data message's kind (the opcode of its first frame, §5.2). */
typedef enum vega_ws_msg_type {
    VEGA_WS_TEXT = 1,   /* UTF-8, checked on receipt (§8.1) */
    VEGA_WS_BINARY = 2, /* any bytes */
} vega_ws_msg_type;

/* Close status codes (§7.4.1) this library sends itself. */
enum {
    VEGA_WS_CLOSE_NORMAL = 1000,
    VEGA_WS_CLOSE_GOING_AWAY = 1001,
    VEGA_WS_CLOSE_PROTOCOL_ERROR = 1002,
    VEGA_WS_CLOSE_UNSUPPORTED = 1003,
    VEGA_WS_CLOSE_NO_STATUS = 1005, /* never on the wire: the peer's close had no code */
    VEGA_WS_CLOSE_ABNORMAL = 1006,  /* never on the wire: the connection ended without close */
    VEGA_WS_CLOSE_INVALID_DATA = 1007,
    VEGA_WS_CLOSE_POLICY = 1008,
    VEGA_WS_CLOSE_TOO_BIG = 1009,
    VEGA_WS_CLOSE_INTERNAL = 1011,
};

/* Whether code may be sent in (and is accepted from) a Close frame: 1000-1003, 1007-1014 and
 * 3000-4999 (§7.4.1-2; 1004-1006 and 1015 are reserved, the rest unassigned). Since 0.1. */
VEGA_API bool vega_ws_close_code_is_valid(unsigned code);

/* The negotiated permessage-deflate parameters (RFC 7692 §7.1), as the handshake helpers
 * below produce them, for vega_ws_conn_opts. Window bits are 8..15 (0 = 15). */
typedef struct vega_ws_deflate_params {
    bool enabled;
    bool server_no_context_takeover; /* the server resets its compressor after each message */
    bool client_no_context_takeover; /* the client does */
    uint8_t server_max_window_bits;  /* the largest window the server compresses with */
    uint8_t client_max_window_bits;  /* the largest window the client compresses with */
} vega_ws_deflate_params;

/* What one side wants of permessage-deflate, for the negotiation helpers. */
typedef struct vega_ws_deflate_opts {
    bool enabled;
    /* Client: offer these. Server: accept an offer with them, and ask for them when the
     * client did not (server_no_context_takeover always may be added; client_* only when the
     * client offered client_max_window_bits). */
    bool server_no_context_takeover;
    bool client_no_context_takeover;
    uint8_t server_max_window_bits; /* 0 = not asked (15) */
    uint8_t client_max_window_bits; /* 0 = not asked (15) */
} vega_ws_deflate_opts;

/*
 * Connection options. Zero fields take their defaults (listed); vega_ws_conn_opts_init fills
 * them in.
 */
typedef struct vega_ws_conn_opts {
    vega_ws_role role; /* required */
    /* Largest payload of one received frame; default 16 MiB. A longer one is refused with
     * close code 1009 before any of it is read. */
    uint64_t max_frame_size;
    /* Largest received message (after decompression); default 16 MiB. Past it: 1009. */
    uint64_t max_message_size;
    /* Most bytes queued to send (frames submitted but not yet taken by vega_ws_conn_write);
     * default 16 MiB + 1 KiB. A submit that would go past it: VEGA_ERR_FULL. */
    size_t max_send_queue;
    /* Largest frame payload this side sends: a longer message is split into fragments;
     * default 64 KiB, 1..2^31. */
    size_t send_fragment_size;
    /* The negotiated permessage-deflate (all zero: none). */
    vega_ws_deflate_params deflate;
    int deflate_level; /* zlib level 1..9; default 6 (0 = default) */
    /* Client: fills len (4) bytes with a fresh mask key for each frame (§5.3: "unpredictable",
     * from a strong source of entropy). Required for a client, unused by a server. */
    void (*random)(void *ud, uint8_t *out, size_t len);
    /* Allocator for the connection, its queue and the zlib states, retained; NULL = libc. */
    const vega_mem *mem;
    /* Layout 2. true: the peer's Close is the owner's to answer (§5.5.1). on_close and
     * vega_ws_conn_is_close_received tell it; data it submits afterwards still goes out
     * (§5.5.1: an endpoint "MAY delay sending a Close frame until its current message is
     * sent"), and its vega_ws_submit_close (typically echoing the peer's code) ends the
     * handshake. For an owner that hands messages on later than it reads them (a driver's
     * queue of whole messages), so that its answers to the messages before the Close go out
     * before its Close. false (the default, and layout 1): the core queues the echo as soon
     * as it reads the Close. */
    bool owner_answers_close;
} vega_ws_conn_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_WS_CONN_OPTS_VERSION 2

/* Fills o with the defaults (role 0: the caller sets it); o is of layout opts_version (1 or 2).
 * Context: any. Since 0.1. */
VEGA_API void vega_ws_conn_opts_init_versioned(vega_ws_conn_opts *o, int opts_version);
#define vega_ws_conn_opts_init(...)                                                                \
    vega_ws_conn_opts_init_versioned(__VA_ARGS__, VEGA_WS_CONN_OPTS_VERSION)

/*
 * Events. Each may be NULL and returns 0, or nonzero to fail vega_ws_conn_read with
 * VEGA_ERR_CALLBACK (the connection then closes with 1011). Inside a callback the caller may
 * use vega_ws_submit_* and vega_ws_conn_get_* / is_* of the same connection, never its read,
 * write or free. Spans are borrowed, valid only during the call.
 */
typedef struct vega_ws_callbacks {
    /* Bytes of a data message, in order, as they arrive (and are unmasked, inflated and,
     * for text, validated up to here): one message may come in many calls. fin: the message
     * ends with this call (len may be 0). */
    int (*on_data)(void *ud, vega_ws_msg_type type, const uint8_t *data, size_t len, bool fin);
    /* A ping arrived (at most 125 bytes); the core has already queued its pong. */
    int (*on_ping)(void *ud, const uint8_t *data, size_t len);
    /* A pong arrived (solicited or not, §5.5.3). */
    int (*on_pong)(void *ud, const uint8_t *data, size_t len);
    /* The peer's Close frame, after every event of the data before it: code
     * (VEGA_WS_CLOSE_NO_STATUS when it had none) and its UTF-8 reason. If we had not sent a
     * Close, the core has queued one echoing the code, unless owner_answers_close. */
    int (*on_close)(void *ud, unsigned code, const uint8_t *reason, size_t len);
} vega_ws_callbacks;

typedef struct vega_ws_conn vega_ws_conn;

/*
 * Creates a connection after a successful opening handshake. cb: copied; may be NULL.
 * o: borrowed (its mem retained). *out: returns owned (vega_ws_conn_free).
 * Returns 0; -EINVAL (NULL out or o, no role, a client without random, a limit out of range,
 * window bits out of 8..15, options of an unknown layout version); -ENOMEM;
 * VEGA_ERR_INTERNAL (zlib refused to start). Context: any. Since 0.1.
 */
VEGA_API int vega_ws_conn_new_versioned(vega_ws_conn **out, const vega_ws_callbacks *cb,
                                        const vega_ws_conn_opts *o, void *user_data,
                                        int opts_version);
#define vega_ws_conn_new(...) vega_ws_conn_new_versioned(__VA_ARGS__, VEGA_WS_CONN_OPTS_VERSION)

/* Frees c, its queue and its zlib states (NULL is fine). Since 0.1. */
VEGA_API void vega_ws_conn_free(vega_ws_conn *c);

/*
 * Feeds bytes received from the peer; all of them are consumed (a partial frame header is kept
 * inside, at most 14 bytes). Events run from inside. After the peer's Close, bytes are
 * ignored.
 * Returns 0; VEGA_ERR_PROTO (the peer broke RFC 6455/7692 or a limit: the close code is in
 * vega_ws_conn_get_error, a Close frame with it is queued; fatal, every later read returns
 * it); VEGA_ERR_CALLBACK (a callback failed: close 1011 queued; fatal); -ENOMEM (fatal, 1011);
 * -EINVAL (NULL in with a nonzero len). Context: not from a callback. Since 0.1.
 */
VEGA_API int vega_ws_conn_read(vega_ws_conn *c, const uint8_t *in, size_t len);

/*
 * Copies up to cap queued bytes to out. Returns the bytes written, 0 when nothing is queued;
 * -EINVAL (NULL out with a nonzero cap). Context: not from a callback. Since 0.1.
 */
VEGA_API vega_ssize vega_ws_conn_write(vega_ws_conn *c, uint8_t *out, size_t cap);

/* Bytes queued to send. Since 0.1. */
VEGA_API size_t vega_ws_conn_get_pending(const vega_ws_conn *c);

/*
 * Queues a fragment of a data message: type on the message's first fragment (ignored on the
 * others), fin on its last. Text is not checked here (the caller owns its UTF-8). With
 * permessage-deflate the message is compressed (RSV1 on its first frame, §6). A payload
 * longer than send_fragment_size goes out as several frames. data: borrowed (copied).
 * Returns 0; -EINVAL (bad type, NULL data with a nonzero len); VEGA_ERR_CLOSED (we sent a
 * Close, or the connection failed); VEGA_ERR_FULL (past max_send_queue: nothing queued);
 * -ENOMEM; VEGA_ERR_INTERNAL (zlib failed: fatal). Context: any, callbacks included.
 * Since 0.1.
 */
VEGA_API int vega_ws_submit_data(vega_ws_conn *c, vega_ws_msg_type type, const void *data,
                                 size_t len, bool fin);

/* A whole message: vega_ws_submit_data(c, type, data, len, true) when no message is open.
 * Returns as vega_ws_submit_data, and -EINVAL while a fragmented message is open. Since 0.1. */
VEGA_API int vega_ws_submit_message(vega_ws_conn *c, vega_ws_msg_type type, const void *data,
                                    size_t len);

/* Queues a ping or an unsolicited pong (§5.5.2-3), between fragments if a message is open.
 * Returns 0; -EINVAL (len > 125, NULL data with a nonzero len); VEGA_ERR_CLOSED; VEGA_ERR_FULL;
 * -ENOMEM. Context: any. Since 0.1. */
VEGA_API int vega_ws_submit_ping(vega_ws_conn *c, const void *data, size_t len);
VEGA_API int vega_ws_submit_pong(vega_ws_conn *c, const void *data, size_t len);

/*
 * Queues our Close (§5.5.1): code 0 sends none (an empty body), else a valid code with an
 * optional UTF-8 reason (code + reason at most 125 bytes). Nothing else can be submitted
 * after it. Returns 0; -EINVAL (invalid code, reason too long or not UTF-8, a reason without a
 * code); VEGA_ERR_CLOSED (a Close was already sent); -ENOMEM. Context: any. Since 0.1.
 */
VEGA_API int vega_ws_submit_close(vega_ws_conn *c, unsigned code, const char *reason, size_t len);

/* The wire-level cause of a failure: the close code we sent for it and a static reason. */
typedef struct vega_ws_error {
    unsigned code;      /* 0 when the connection has not failed */
    const char *reason; /* static, e.g. "invalid UTF-8 in a text message" */
} vega_ws_error;

/* Fills err with why the connection failed (code 0 if it has not). Since 0.1. */
VEGA_API void vega_ws_conn_get_error(const vega_ws_conn *c, vega_ws_error *err);

/* Whether we sent (queued) a Close; whether the peer's Close arrived (its code: peer_code,
 * 1005 for none; 0 before it). Done: both, and the queue is empty: the TCP connection may go
 * (the server closes it first, §7.1.1). Since 0.1. */
VEGA_API bool vega_ws_conn_is_close_sent(const vega_ws_conn *c);
VEGA_API bool vega_ws_conn_is_close_received(const vega_ws_conn *c, unsigned *peer_code);
VEGA_API bool vega_ws_conn_is_done(const vega_ws_conn *c);

/* ---- opening handshake (§4) --------------------------------------------------------------- */

/* Length of a Sec-WebSocket-Key (base64 of 16 bytes) and of a Sec-WebSocket-Accept (base64 of
 * a SHA-1), without the NUL. */
#define VEGA_WS_KEY_LEN    24
#define VEGA_WS_ACCEPT_LEN 28

/* Client: the Sec-WebSocket-Key for 16 random bytes: out gets 24 characters and a NUL.
 * Since 0.1. */
VEGA_API void vega_ws_handshake_key(const uint8_t nonce[16], char out[VEGA_WS_KEY_LEN + 1]);

/*
 * Sec-WebSocket-Accept for a key (§4.2.2: base64 of SHA-1 of the key and the GUID
 * 258EAFA5-E914-47DA-95CA-C5AB0DC85B11): out gets 28 characters and a NUL.
 * Returns 0; -EINVAL (key is not base64 of exactly 16 bytes, §4.2.1);
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_ws_handshake_accept(const char *key, size_t key_len,
                                      char out[VEGA_WS_ACCEPT_LEN + 1]);

/* Whether a comma-separated header value (Connection, Upgrade, Sec-WebSocket-Protocol) holds
 * token, compared without case (RFC 9110 §5.6.1). Since 0.1. */
VEGA_API bool vega_ws_header_has_token(const char *value, size_t len, const char *token);

/*
 * Server: the subprotocol to select (§4.2.2 /subprotocol/): the first of ours (in our order
 * of preference) that the client's Sec-WebSocket-Protocol value offers. ours: borrowed, n
 * NUL-terminated names. Returns its index, or -1 when none (then send no header). Since 0.1.
 */
VEGA_API int vega_ws_select_subprotocol(const char *offered, size_t len, const char *const *ours,
                                        size_t n);

/*
 * Client: formats the Sec-WebSocket-Extensions offer for want (e.g. "permessage-deflate;
 * client_max_window_bits"; client_max_window_bits is always offered). Returns its length (a
 * NUL follows); 0 when want is not enabled; VEGA_ERR_NOBUF (cap too small; 160 is enough);
 * -EINVAL (window bits out of 8..15). Since 0.1.
 */
VEGA_API vega_ssize vega_ws_deflate_offer(const vega_ws_deflate_opts *want, char *out, size_t cap);

/*
 * Server: reads a request's Sec-WebSocket-Extensions value (offers separated by commas, in
 * the client's order of preference) and accepts the first permessage-deflate offer that is
 * valid and compatible with policy (RFC 7692 §5, §7.1): *params gets the result and out the
 * response header value (NUL-terminated). Unknown extensions and invalid offers are skipped.
 * Returns the response length; 0 when nothing was accepted (params->enabled false: send no
 * header); VEGA_ERR_NOBUF (cap too small; 160 is enough); -EINVAL (policy's bits out of range).
 * Since 0.1.
 */
VEGA_API vega_ssize vega_ws_deflate_accept_offer(const char *offers, size_t len,
                                                 const vega_ws_deflate_opts *policy,
                                                 vega_ws_deflate_params *params, char *out,
                                                 size_t cap);

/*
 * Client: checks the server's Sec-WebSocket-Extensions response against what was offered
 * (RFC 7692 §7.1: unknown extensions, parameters not offered, duplicates and bad values fail
 * the connection) and fills *params. len 0: no extension (params->enabled false).
 * Returns 0; VEGA_ERR_PROTO (the response is invalid: fail the WebSocket connection). Since
 * 0.1.
 */
VEGA_API int vega_ws_deflate_check_response(const char *value, size_t len,
                                            const vega_ws_deflate_opts *offered,
                                            vega_ws_deflate_params *params);

#ifdef __cplusplus
}
#endif

#endif
