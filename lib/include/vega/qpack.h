/* SPDX-License-Identifier: MIT */
/* QPACK field compression for HTTP/3 (RFC 9204), sans I/O: a decoder (encoder-stream input,
 * field sections per request stream, blocked sections kept and resumed, decoder-stream output)
 * and an encoder (field sections, encoder-stream output, decoder-stream input). No I/O, clock or
 * global state; memory only through vega_mem. <vega/h3.h> drives both for HTTP/3; this header
 * is public for tests, tools and other HTTP/3 stacks. */
#ifndef VEGA_QPACK_H
#define VEGA_QPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/http.h>
#include <vega/mem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* QPACK codes (-11000..-11099; vega_strerror knows them). */
enum {
    VEGA_ERR_QPACK_BASE = -11000,
    /* A field section over the decoder's limits (max_field_section_size decoded bytes or
     * max_fields lines): that one message is refused (HTTP/3 resets its stream), the decoder
     * and the connection go on. */
    VEGA_ERR_QPACK_TOO_LARGE = -11001,
    VEGA_ERR_QPACK_LAST = -11002,
};

/* Wire error codes (RFC 9204 §6): what vega_qpack_decoder_get_error and
 * vega_qpack_encoder_get_error report after VEGA_ERR_PROTO, for the HTTP/3 CONNECTION_CLOSE. */
#define VEGA_QPACK_DECOMPRESSION_FAILED 0x200 /* a field section could not be decoded */
#define VEGA_QPACK_ENCODER_STREAM_ERROR 0x201 /* an encoder instruction was invalid */
#define VEGA_QPACK_DECODER_STREAM_ERROR 0x202 /* a decoder instruction was invalid */

/* In a limit field where 0 selects the default, this value asks for an actual zero (no dynamic
 * table, no blocked streams). */
#define VEGA_QPACK_ZERO UINT64_MAX

/* The largest dynamic table capacity and blocked-stream count either side accepts in options. */
#define VEGA_QPACK_MAX_TABLE_CAPACITY (1u << 20)
#define VEGA_QPACK_MAX_BLOCKED        1024

/* Static table size (RFC 9204 Appendix A). */
#define VEGA_QPACK_STATIC_COUNT 99

/* ---- decoder ------------------------------------------------------------------------------- */

typedef struct vega_qpack_decoder vega_qpack_decoder;

/* Decoder options: plain data, vega_qpack_decoder_opts_init sets the defaults (a zero field
 * also means its default). */
typedef struct vega_qpack_decoder_opts {
    /* SETTINGS_QPACK_MAX_TABLE_CAPACITY we advertise: the most dynamic table the peer's encoder
     * may use (default 4096; VEGA_QPACK_ZERO: none; at most VEGA_QPACK_MAX_TABLE_CAPACITY). The
     * table's memory is bounded by it (plus a pointer per possible entry). */
    uint64_t max_table_capacity;
    /* SETTINGS_QPACK_BLOCKED_STREAMS we advertise: streams whose section may wait for the
     * encoder stream (default 16; VEGA_QPACK_ZERO: none; at most VEGA_QPACK_MAX_BLOCKED). One
     * more is a QPACK_DECOMPRESSION_FAILED connection error (RFC 9204 §2.1.2). */
    uint64_t max_blocked_streams;
    /* The largest field section accepted, as RFC 9114 §4.2.2 counts it (name + value + 32 per
     * line, decoded): a larger one is VEGA_ERR_QPACK_TOO_LARGE, found before its bytes are
     * produced, so a "QPACK bomb" (few bytes referencing a large entry many times) costs no
     * memory. It also bounds the encoded bytes kept for one blocked section. Default 65536. */
    uint64_t max_field_section_size;
    /* The most field lines in one section (default 256): more is VEGA_ERR_QPACK_TOO_LARGE. */
    size_t max_fields;
    /* Allocator, retained for the decoder's life; NULL = libc. */
    const vega_mem *mem;
} vega_qpack_decoder_opts;
#define VEGA_QPACK_DECODER_OPTS_VERSION 1

/* Fills o with the defaults. Context: any. Since 0.1. */
VEGA_API void vega_qpack_decoder_opts_init_versioned(vega_qpack_decoder_opts *o, int opts_version);
#define vega_qpack_decoder_opts_init(...)                                                          \
    vega_qpack_decoder_opts_init_versioned(__VA_ARGS__, VEGA_QPACK_DECODER_OPTS_VERSION)

/* Decoder events. Each returns 0, or nonzero to fail the call that fired it with
 * VEGA_ERR_CALLBACK. A callback may call vega_qpack_decoder_get_error and the other getters,
 * never read_encoder, decode, resume, write or free. */
typedef struct vega_qpack_decoder_callbacks {
    /* The kept section of stream_id can now be decoded (the encoder stream brought the entries
     * it needs): call vega_qpack_decoder_resume for it once the current call returned. Fired
     * from vega_qpack_decoder_read_encoder, once per section. May be NULL (then poll with
     * vega_qpack_decoder_is_unblocked). */
    int (*on_unblocked)(void *user_data, uint64_t stream_id);
} vega_qpack_decoder_callbacks;

/* A decoded field section: every pointer is borrowed and valid until the next call on the
 * decoder (names and values point into the input, the dynamic table, the static table or the
 * decoder's scratch space). */
typedef struct vega_qpack_section {
    const vega_http_field *fields; /* count lines, in order */
    const bool *never_indexed;     /* count flags: the line came with the N bit (RFC 9204 §4.5.4):
                                      an intermediary must not index it when it re-encodes */
    size_t count;
    uint64_t size; /* RFC 9114 §4.2.2 size: name + value + 32 per line */
} vega_qpack_section;

/*
 * Creates a decoder. out: receives it; cb: retained, may be NULL (no callbacks); opts: borrowed
 * (NULL = defaults); user_data: passed to callbacks.
 * Returns 0; -EINVAL (a limit above its maximum, an allocator with a NULL function, or options
 * of a layout version this library does not know); -ENOMEM.
 * Context: any. Since 0.1.
 */
VEGA_API int vega_qpack_decoder_new_versioned(vega_qpack_decoder **out,
                                              const vega_qpack_decoder_callbacks *cb,
                                              const vega_qpack_decoder_opts *opts, void *user_data,
                                              int opts_version);
#define vega_qpack_decoder_new(...)                                                                \
    vega_qpack_decoder_new_versioned(__VA_ARGS__, VEGA_QPACK_DECODER_OPTS_VERSION)

/* Frees d (NULL is fine) with its table and kept sections. Context: not from a callback of d.
 * Since 0.1. */
VEGA_API void vega_qpack_decoder_free(vega_qpack_decoder *d);

/*
 * Feeds bytes of the peer's encoder stream (after its stream type byte), split anywhere:
 * Set Dynamic Table Capacity, Insert With Name Reference, Insert With Literal Name, Duplicate
 * (RFC 9204 §4.3). An incomplete instruction is kept (bounded by the table capacity). Sections
 * that the new entries unblock are reported through on_unblocked. in: borrowed.
 * Returns 0; VEGA_ERR_PROTO (a bad instruction: the connection fails with
 * vega_qpack_decoder_get_error, QPACK_ENCODER_STREAM_ERROR); VEGA_ERR_CALLBACK; -ENOMEM (the
 * instruction was not applied; the decoder is unusable); -EINVAL (NULL in with len > 0). After
 * an error every later call fails.
 * Context: not from a callback of d. Since 0.1.
 */
VEGA_API int vega_qpack_decoder_read_encoder(vega_qpack_decoder *d, const uint8_t *in, size_t len);

/* vega_qpack_decoder_decode's result when the section must wait for the encoder stream. */
#define VEGA_QPACK_BLOCKED 1

/*
 * Decodes one whole encoded field section received on stream_id (a HEADERS frame's payload).
 * When its Required Insert Count is above the entries received so far, the section is kept (a
 * copy, at most max_field_section_size bytes) and VEGA_QPACK_BLOCKED returned; on_unblocked
 * reports it later. A decoded section with dynamic references queues a Section Acknowledgment
 * (vega_qpack_decoder_write). in: borrowed; out: receives the fields (see vega_qpack_section).
 * Returns 0 (out filled); VEGA_QPACK_BLOCKED; VEGA_ERR_QPACK_TOO_LARGE (over a limit: refuse
 * the message and call vega_qpack_decoder_cancel_stream); VEGA_ERR_PROTO (the connection fails:
 * QPACK_DECOMPRESSION_FAILED, e.g. a bad index, a Required Insert Count no encoder makes, more
 * blocked streams than we allow); -EINVAL (stream_id already has a kept section, or is above
 * 2^62 - 1); -ENOMEM (the section was neither decoded nor kept: the connection should close).
 * Context: not from a callback of d. Since 0.1.
 */
VEGA_API int vega_qpack_decoder_decode(vega_qpack_decoder *d, uint64_t stream_id, const uint8_t *in,
                                       size_t len, vega_qpack_section *out);

/* True when stream_id has a kept section that can now be decoded. Context: any. Since 0.1. */
VEGA_API bool vega_qpack_decoder_is_unblocked(const vega_qpack_decoder *d, uint64_t stream_id);

/*
 * Decodes the kept section of stream_id once it is unblocked, and forgets it.
 * Returns as vega_qpack_decoder_decode, but never VEGA_QPACK_BLOCKED; -EINVAL when stream_id has
 * no kept section or it is still blocked. Context: not from a callback of d. Since 0.1.
 */
VEGA_API int vega_qpack_decoder_resume(vega_qpack_decoder *d, uint64_t stream_id,
                                       vega_qpack_section *out);

/*
 * The stream was reset or its reading abandoned before all its sections were decoded: drops its
 * kept section, if any, and queues a Stream Cancellation (RFC 9204 §4.4.2; not when we advertise
 * no dynamic table, as §2.2.2.2 allows).
 * Returns 0; -ENOMEM (nothing queued); -EINVAL (stream_id above 2^62 - 1).
 * Context: not from a callback of d. Since 0.1.
 */
VEGA_API int vega_qpack_decoder_cancel_stream(vega_qpack_decoder *d, uint64_t stream_id);

/*
 * Takes the bytes to send on our decoder stream (after its stream type byte): Section
 * Acknowledgments, Stream Cancellations, and an Insert Count Increment for entries no
 * acknowledgment covered. out: borrowed.
 * Returns the bytes written (0: nothing to send); what did not fit stays for the next call;
 * -EINVAL (NULL out with cap > 0). Context: not from a callback of d. Since 0.1.
 */
VEGA_API vega_ssize vega_qpack_decoder_write(vega_qpack_decoder *d, uint8_t *out, size_t cap);

/* True when vega_qpack_decoder_write has bytes to give. Since 0.1. */
VEGA_API bool vega_qpack_decoder_want_write(const vega_qpack_decoder *d);

/* The wire code (VEGA_QPACK_*) behind the last VEGA_ERR_PROTO, 0 when none; *reason (may be
 * NULL) receives a static description. Context: any. Since 0.1. */
VEGA_API uint64_t vega_qpack_decoder_get_error(const vega_qpack_decoder *d, const char **reason);

/* Entries the peer's encoder inserted so far (the Insert Count). Since 0.1. */
VEGA_API uint64_t vega_qpack_decoder_insert_count(const vega_qpack_decoder *d);

/* Sections kept and waiting for the encoder stream. Since 0.1. */
VEGA_API size_t vega_qpack_decoder_blocked_count(const vega_qpack_decoder *d);

/* ---- encoder ------------------------------------------------------------------------------- */

typedef struct vega_qpack_encoder vega_qpack_encoder;

/* Encoder options: plain data, vega_qpack_encoder_opts_init sets the defaults (a zero field
 * also means its default). */
typedef struct vega_qpack_encoder_opts {
    /* The most dynamic table we use, below the peer's SETTINGS_QPACK_MAX_TABLE_CAPACITY
     * (default 4096; VEGA_QPACK_ZERO: only the static table and literals; at most
     * VEGA_QPACK_MAX_TABLE_CAPACITY). */
    uint64_t max_table_capacity;
    /* The most streams we let risk blocking at the peer, below its
     * SETTINGS_QPACK_BLOCKED_STREAMS (default 16; VEGA_QPACK_ZERO: reference only entries the
     * peer acknowledged). */
    uint64_t max_blocked_streams;
    /* Field sections with dynamic references remembered until the peer acknowledges them
     * (default 256): past it, sections use the static table and literals only, so a peer that
     * never acknowledges costs bounded memory. */
    size_t max_unacked_sections;
    /* Unsent encoder-stream bytes beyond which no more entries are inserted (default 16384). */
    size_t max_encoder_buffer;
    /* Write every string raw, never Huffman-coded (default false: Huffman when shorter). */
    bool no_huffman;
    /* Allocator, retained for the encoder's life; NULL = libc. */
    const vega_mem *mem;
} vega_qpack_encoder_opts;
#define VEGA_QPACK_ENCODER_OPTS_VERSION 1

/* Fills o with the defaults. Context: any. Since 0.1. */
VEGA_API void vega_qpack_encoder_opts_init_versioned(vega_qpack_encoder_opts *o, int opts_version);
#define vega_qpack_encoder_opts_init(...)                                                          \
    vega_qpack_encoder_opts_init_versioned(__VA_ARGS__, VEGA_QPACK_ENCODER_OPTS_VERSION)

/*
 * Creates an encoder. Until vega_qpack_encoder_set_peer_settings it uses the static table and
 * literals only (the peer's settings start at zero, RFC 9204 §3.2.3). opts: borrowed, NULL =
 * defaults. Returns 0; -EINVAL (a limit above its maximum, an allocator with a NULL function,
 * options of a layout version this library does not know); -ENOMEM. Context: any. Since 0.1.
 */
VEGA_API int vega_qpack_encoder_new_versioned(vega_qpack_encoder **out,
                                              const vega_qpack_encoder_opts *opts,
                                              int opts_version);
#define vega_qpack_encoder_new(...)                                                                \
    vega_qpack_encoder_new_versioned(__VA_ARGS__, VEGA_QPACK_ENCODER_OPTS_VERSION)

/* Frees e (NULL is fine). Since 0.1. */
VEGA_API void vega_qpack_encoder_free(vega_qpack_encoder *e);

/*
 * The peer's SETTINGS_QPACK_MAX_TABLE_CAPACITY and SETTINGS_QPACK_BLOCKED_STREAMS (0 when its
 * SETTINGS omitted them). From then on the encoder may use a dynamic table of up to the smaller
 * of that capacity and its own max_table_capacity (a Set Dynamic Table Capacity is queued when it
 * first inserts). Returns 0; -EINVAL (called twice, or a value above 2^62 - 1). Since 0.1.
 */
VEGA_API int vega_qpack_encoder_set_peer_settings(vega_qpack_encoder *e,
                                                  uint64_t max_table_capacity,
                                                  uint64_t blocked_streams);

/* The most bytes vega_qpack_encoder_encode can write for these fields (whatever the table holds).
 * fields: borrowed. Returns the bound, or SIZE_MAX when it would overflow. Since 0.1. */
VEGA_API size_t vega_qpack_encode_bound(const vega_http_field *fields, size_t n);

/*
 * Encodes a field section for stream_id into out (the payload of a HEADERS frame). Names must
 * already be lowercase (HTTP/3 asks it; not checked here). Entries it decides to insert are
 * queued as encoder instructions (vega_qpack_encoder_write), and the section may reference them
 * when the blocked-stream budget allows; a section with dynamic references is remembered until
 * the peer's Section Acknowledgment or Stream Cancellation. Fields that are sensitive
 * (authorization, proxy-authorization, cookie and set-cookie values under 20 bytes) are written
 * as literals with the N bit and never inserted. fields: borrowed; out: borrowed.
 * Returns the bytes written; VEGA_ERR_NOBUF when cap < vega_qpack_encode_bound(fields, n)
 * (nothing changed); -EINVAL (stream_id above 2^62 - 1, a NULL pointer with a nonzero length);
 * -ENOMEM (nothing changed). Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_qpack_encoder_encode(vega_qpack_encoder *e, uint64_t stream_id,
                                              const vega_http_field *fields, size_t n, uint8_t *out,
                                              size_t cap);

/*
 * Inserts one entry ahead of use (a speculative insert, RFC 9204 Appendix B.3): with a name
 * reference when the static or dynamic table has the name, else with a literal name.
 * Returns 0; VEGA_ERR_FULL (no dynamic table yet, or no room without evicting entries still in
 * use); -ENOMEM; -EINVAL (a NULL pointer with a nonzero length). Since 0.1.
 */
VEGA_API int vega_qpack_encoder_insert(vega_qpack_encoder *e, vega_http_str name,
                                       vega_http_str value);

/*
 * Takes the bytes to send on our encoder stream (after its stream type byte). Returns the bytes
 * written (0: nothing to send); what did not fit stays for the next call; -EINVAL (NULL out with
 * cap > 0). Since 0.1.
 */
VEGA_API vega_ssize vega_qpack_encoder_write(vega_qpack_encoder *e, uint8_t *out, size_t cap);

/* True when vega_qpack_encoder_write has bytes to give. Since 0.1. */
VEGA_API bool vega_qpack_encoder_want_write(const vega_qpack_encoder *e);

/*
 * Feeds bytes of the peer's decoder stream (after its stream type byte), split anywhere:
 * Section Acknowledgment, Stream Cancellation, Insert Count Increment (RFC 9204 §4.4).
 * Returns 0; VEGA_ERR_PROTO (QPACK_DECODER_STREAM_ERROR from vega_qpack_encoder_get_error: an
 * acknowledgment of a stream with nothing to acknowledge, an increment of zero or past what was
 * sent); -ENOMEM; -EINVAL (NULL in with len > 0). After an error every later call fails.
 * Since 0.1.
 */
VEGA_API int vega_qpack_encoder_read_decoder(vega_qpack_encoder *e, const uint8_t *in, size_t len);

/* The wire code behind the last VEGA_ERR_PROTO, 0 when none; *reason (may be NULL) receives a
 * static description. Since 0.1. */
VEGA_API uint64_t vega_qpack_encoder_get_error(const vega_qpack_encoder *e, const char **reason);

/* Static table entry index (0..98): name and value, borrowed from static storage. Returns 0 or
 * -EINVAL (index out of range). Since 0.1. */
VEGA_API int vega_qpack_static_entry(size_t index, vega_http_str *name, vega_http_str *value);

#ifdef __cplusplus
}
#endif
#endif
