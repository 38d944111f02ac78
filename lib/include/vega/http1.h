/* SPDX-License-Identifier: MIT */
/* HTTP/1.1 sans-I/O core (RFC 9112): a streaming, zero-copy, strict message parser for
 * requests and responses, and a serializer for heads and chunked framing. No I/O, clock,
 * allocation or global state: the caller owns every byte that goes in and comes out. */
#ifndef VEGA_HTTP1_H
#define VEGA_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Size of the parser's internal line buffer; every line limit must be at most this. */
#define VEGA_HTTP1_LINE_BUF 16384

/* A borrowed byte range: valid only for the duration of the callback that receives it. */
typedef struct vega_http1_span {
    const char *ptr;
    size_t len;
} vega_http1_span;

typedef enum vega_http1_kind {
    VEGA_HTTP1_REQUEST = 1,
    VEGA_HTTP1_RESPONSE = 2
} vega_http1_kind;

/* Parser limits. A field left 0 takes its default. Line limits count the line with its CRLF
 * and must be <= VEGA_HTTP1_LINE_BUF. Trailer sections obey the same field limits. */
typedef struct vega_http1_limits {
    size_t max_start_line;    /* request / status line; default 8192 */
    size_t max_field_line;    /* one field line, also one chunk-size line; default 8192 */
    size_t max_field_section; /* sum of field lines (with CRLF) in a section; default 65536 */
    size_t max_fields;        /* field lines per section; default 100 */
} vega_http1_limits;

/* How the body of the message is delimited (RFC 9112 §6.3). */
typedef enum vega_http1_framing {
    VEGA_HTTP1_BODY_NONE = 0,    /* no body: request without CL/TE, 1xx/204/304, HEAD */
    VEGA_HTTP1_BODY_LENGTH = 1,  /* Content-Length bytes (may be 0) */
    VEGA_HTTP1_BODY_CHUNKED = 2, /* chunked transfer coding, with optional trailers */
    VEGA_HTTP1_BODY_CLOSE = 3,   /* responses only: until the connection closes */
} vega_http1_framing;

/* What on_headers_complete reports about the message. */
typedef struct vega_http1_head {
    int version;                /* 10 for HTTP/1.0, 11 for HTTP/1.1 (1.x, x>1 reads as 11) */
    int status;                 /* responses: 100..999; requests: 0 */
    vega_http1_framing framing; /* decided framing */
    uint64_t content_length;    /* valid when framing == VEGA_HTTP1_BODY_LENGTH */
    bool keep_alive;            /* connection may carry another message after this one */
    bool upgrade;               /* 101 response or CONNECT request: the parser stops after it */
} vega_http1_head;

/* Events. Each returns 0 to continue or nonzero to fail the read with VEGA_ERR_CALLBACK. Any
 * may be NULL. Spans are borrowed: they point into the input given to read (zero copy) or,
 * when a line straddled two reads, into the parser's own buffer; either way they are valid
 * only during the call. Callbacks may call vega_http1_parser_set_head but must not re-enter
 * read or finish. */
typedef struct vega_http1_callbacks {
    int (*on_request_line)(void *ud, vega_http1_span method, vega_http1_span target, int version);
    int (*on_status)(void *ud, int version, int status, vega_http1_span reason);
    int (*on_header)(void *ud, vega_http1_span name, vega_http1_span value);
    int (*on_headers_complete)(void *ud, const vega_http1_head *head);
    int (*on_body)(void *ud, vega_http1_span data);
    int (*on_trailer)(void *ud, vega_http1_span name, vega_http1_span value);
    int (*on_message_complete)(void *ud);
} vega_http1_callbacks;

/* Detail of the last parse failure (vega_http1_parser_get_error). Distinct codes for every
 * limit so a server can answer 414 / 431 / 400 / 501 / 505 as it sees fit. */
typedef enum vega_http1_error {
    VEGA_HTTP1_E_NONE = 0,
    VEGA_HTTP1_E_START_LINE,          /* malformed request or status line */
    VEGA_HTTP1_E_VERSION,             /* HTTP major version other than 1 */
    VEGA_HTTP1_E_FIELD_NAME,          /* invalid token char, empty name, space before ':' */
    VEGA_HTTP1_E_FIELD_VALUE,         /* control character or DEL in a field value */
    VEGA_HTTP1_E_OBS_FOLD,            /* field line starting with SP / HTAB */
    VEGA_HTTP1_E_BARE_CR,             /* CR not followed by LF */
    VEGA_HTTP1_E_BARE_LF,             /* LF not preceded by CR (bare LF endings are rejected) */
    VEGA_HTTP1_E_CONTENT_LENGTH,      /* invalid, overflowing or conflicting Content-Length */
    VEGA_HTTP1_E_TRANSFER_ENCODING,   /* request TE not ending in one final "chunked", or 1.0 */
    VEGA_HTTP1_E_CL_AND_TE,           /* both Content-Length and Transfer-Encoding */
    VEGA_HTTP1_E_HOST,                /* HTTP/1.1 request without exactly one Host */
    VEGA_HTTP1_E_CHUNK_SIZE,          /* invalid or overflowing chunk size */
    VEGA_HTTP1_E_CHUNK_EXT,           /* invalid chunk extension */
    VEGA_HTTP1_E_CHUNK_DATA,          /* chunk data not followed by CRLF */
    VEGA_HTTP1_E_START_LINE_TOO_LONG, /* > max_start_line */
    VEGA_HTTP1_E_FIELD_LINE_TOO_LONG, /* > max_field_line */
    VEGA_HTTP1_E_CHUNK_LINE_TOO_LONG, /* chunk-size line > max_field_line */
    VEGA_HTTP1_E_SECTION_TOO_LARGE,   /* > max_field_section */
    VEGA_HTTP1_E_TOO_MANY_FIELDS,     /* > max_fields */
    VEGA_HTTP1_E_TRUNCATED,           /* finish() in the middle of a message */
    VEGA_HTTP1_E_CALLBACK,            /* a callback returned nonzero */
} vega_http1_error;

/* Plain struct on caller storage; fields are private. */
typedef struct vega_http1_parser {
    const vega_http1_callbacks *cb;
    void *user_data;
    vega_http1_limits lim;
    vega_http1_kind kind;
    int state;
    int ret;
    vega_http1_error error;
    bool head_response;
    struct {
        int version, status;
        bool is_connect, cl_seen, te_seen, te_chunked, te_bad, conn_close, conn_keep;
        unsigned host_count;
        uint64_t cl;
        size_t fields, section;
    } m;
    uint64_t remaining;
    size_t buf_len;
    uint8_t buf[VEGA_HTTP1_LINE_BUF];
} vega_http1_parser;

/* Prepares p to parse a stream of requests or responses.
 * p: borrows (caller storage); lim: borrows, copied, NULL = all defaults; cb: retains until p
 * is no longer used; user_data: passed to callbacks.
 * Returns 0, or -EINVAL for a bad kind, NULL p/cb, or a line limit above
 * VEGA_HTTP1_LINE_BUF.
 * Context: any thread, no suspension. Since 0.1. */
VEGA_API int vega_http1_parser_init(vega_http1_parser *p, vega_http1_kind kind,
                                    const vega_http1_limits *lim, const vega_http1_callbacks *cb,
                                    void *user_data);

/* Feeds bytes, any split of the stream; several (pipelined) messages may be in one buffer and
 * the parser resets between them. in: borrows for the duration of the call; partial lines are
 * copied into the parser's bounded buffer, bodies never are.
 * *consumed: bytes used; equals len unless the parser stopped after an upgrade (101 response,
 * CONNECT request: the rest is another protocol) or failed (then: where it failed).
 * Returns 0; VEGA_ERR_PROTO for malformed input or an exceeded limit (detail in
 * vega_http1_parser_get_error); VEGA_ERR_CALLBACK when a callback returned nonzero. After an
 * error, every later call returns the same error.
 * Context: no suspension; not from a callback of the same parser. Since 0.1. */
VEGA_API int vega_http1_parser_read(vega_http1_parser *p, const uint8_t *in, size_t len,
                                    size_t *consumed);

/* Signals end of stream. Completes a response delimited by close.
 * Returns 0 when between messages, upgraded, or a close-delimited body ended;
 * VEGA_ERR_PROTO (VEGA_HTTP1_E_TRUNCATED) in the middle of a message; VEGA_ERR_CALLBACK.
 * Context: as read. Since 0.1. */
VEGA_API int vega_http1_parser_finish(vega_http1_parser *p);

/* Responses: the request for the next final response was HEAD, so it has no body. Cleared when
 * a final (non-1xx) response completes; to pipeline, set it again from on_message_complete.
 * Context: any, including callbacks. Since 0.1. */
VEGA_API void vega_http1_parser_set_head(vega_http1_parser *p, bool head);

/* Returns the detail of the failure, VEGA_HTTP1_E_NONE when none. Since 0.1. */
VEGA_API vega_http1_error vega_http1_parser_get_error(const vega_http1_parser *p);

/* Returns true once the parser stopped after an upgrade (see read). Since 0.1. */
VEGA_API bool vega_http1_parser_is_upgraded(const vega_http1_parser *p);

/* Returns a static name for an error detail ("VEGA_HTTP1_E_OBS_FOLD"), never NULL. Since 0.1. */
VEGA_API const char *vega_http1_error_name(vega_http1_error e);

/* One field for the serializer. name/value: borrowed. */
typedef struct vega_http1_field {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} vega_http1_field;

/* Writes "METHOD SP target SP HTTP/1.x CRLF fields CRLF" into out[0..cap).
 * method, target: borrowed NUL-terminated; version: 10 or 11; fields: borrowed, n entries.
 * Names must be tokens; values field-vchar / SP / HTAB without leading or trailing whitespace
 * (so no CR/LF injection); target visible ASCII.
 * Returns bytes written; VEGA_ERR_NOBUF when cap is too small (nothing usable written);
 * -EINVAL for anything invalid. Context: any. Since 0.1. */
VEGA_API vega_ssize vega_http1_write_request_head(uint8_t *out, size_t cap, const char *method,
                                                  const char *target, int version,
                                                  const vega_http1_field *fields, size_t n);

/* Writes "HTTP/1.x SP status SP reason CRLF fields CRLF". status: 100..999; reason: borrowed,
 * may be NULL or "", HTAB / SP / VCHAR / obs-text. Returns as write_request_head; -EINVAL (a bad
 * argument). Since 0.1. */
VEGA_API vega_ssize vega_http1_write_response_head(uint8_t *out, size_t cap, int version,
                                                   int status, const char *reason,
                                                   const vega_http1_field *fields, size_t n);

/* Writes a chunk header "HEX CRLF" for size > 0 bytes of data; after the data the caller
 * writes CRLF (vega_http1_write_chunk_end). Returns bytes written; VEGA_ERR_NOBUF;
 * -EINVAL for size 0 (use write_last_chunk). Since 0.1. */
VEGA_API vega_ssize vega_http1_write_chunk_header(uint8_t *out, size_t cap, uint64_t size);

/* Writes the CRLF that ends chunk data. Returns 2 or VEGA_ERR_NOBUF. Since 0.1. */
VEGA_API vega_ssize vega_http1_write_chunk_end(uint8_t *out, size_t cap);

/* Writes "0 CRLF trailer-fields CRLF". trailers: borrowed, may be NULL when n == 0, validated as
 * header fields. Returns as write_request_head. Since 0.1. */
VEGA_API vega_ssize vega_http1_write_last_chunk(uint8_t *out, size_t cap,
                                                const vega_http1_field *trailers, size_t n);

#ifdef __cplusplus
}
#endif
#endif
