/* SPDX-License-Identifier: MIT */
/* HPACK (RFC 7541): header compression for HTTP/2. A decoder and an encoder, each with its
 * dynamic table (§2.3, §4), the static table (Appendix A), the five representations (§6),
 * prefixed integers and string literals with the Huffman code (§5, Appendix B). Sans I/O: bytes
 * in caller buffers, no clock, allocation only through vega_mem. */
#ifndef VEGA_HPACK_H
#define VEGA_HPACK_H

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

/* HPACK codes (-10800..-10899; vega_strerror knows them). */
enum {
    VEGA_ERR_HPACK_BASE = -10800,
    /* The header block is malformed (RFC 7541 §6, §5.2; in HTTP/2 a COMPRESSION_ERROR): an
     * index out of range, a truncated representation, bad Huffman padding, a table size update
     * out of place or above the limit. The decoder is unusable after it. */
    VEGA_ERR_HPACK_DECODE = -10801,
    /* One decoded name or value is longer than max_string_len: the block cannot be processed
     * (in HTTP/2 a COMPRESSION_ERROR). The decoder is unusable after it. */
    VEGA_ERR_HPACK_STRING_TOO_LONG = -10802,
    /* The decoded header list passed max_list_size or max_fields. Not fatal: the block was
     * still processed to its end, so the dynamic table stays in step with the peer's (RFC 9113
     * §10.5.1), but the fields past the limit were not delivered. */
    VEGA_ERR_HPACK_TOO_LARGE = -10803,
    VEGA_ERR_HPACK_LAST = -10804,
};

/* The dynamic table size HTTP/2 starts with (SETTINGS_HEADER_TABLE_SIZE's initial value). */
#define VEGA_HPACK_DEFAULT_TABLE_SIZE 4096
/* A table size field set to this means 0 (no dynamic table): a 0 field means the default. */
#define VEGA_HPACK_TABLE_OFF SIZE_MAX
/* Bytes RFC 7541 §4.1 adds to each entry's name and value when sizing the table; RFC 9113
 * §6.5.2 counts header lists the same way. */
#define VEGA_HPACK_ENTRY_OVERHEAD 32

/* How a field is represented (RFC 7541 §6.2). On encoding, the caller's wish; on decoding, what
 * the peer sent (YES also for an indexed field, §6.1). */
typedef enum vega_hpack_index {
    VEGA_HPACK_INDEX_AUTO = 0,  /* encoder: its policy decides (see vega_hpack_encode) */
    VEGA_HPACK_INDEX_YES = 1,   /* literal with incremental indexing: added to the table */
    VEGA_HPACK_INDEX_NO = 2,    /* literal without indexing */
    VEGA_HPACK_INDEX_NEVER = 3, /* literal never indexed: sensitive (§7.1.3); a proxy that
                                   forwards it must keep it so */
} vega_hpack_index;

/* Plain data: one header field. name and value borrow memory whose life the function that
 * takes or gives the field states. */
typedef struct vega_hpack_field {
    vega_http_str name;
    vega_http_str value;
    vega_hpack_index index;
} vega_hpack_field;

/* When the encoder uses the Huffman code for a string literal (§5.2). */
typedef enum vega_hpack_huffman {
    VEGA_HPACK_HUFFMAN_AUTO = 0,   /* when it is strictly shorter (the default) */
    VEGA_HPACK_HUFFMAN_NEVER = 1,  /* never */
    VEGA_HPACK_HUFFMAN_ALWAYS = 2, /* always, even when longer */
} vega_hpack_huffman;

/* ---- decoder ---- */

typedef struct vega_hpack_decoder vega_hpack_decoder;

/* Decoder options: plain data; a 0 field means its default. */
typedef struct vega_hpack_decoder_opts {
    /* The dynamic table size limit the peer's encoder must respect (in HTTP/2, the
     * SETTINGS_HEADER_TABLE_SIZE we advertise); default 4096; VEGA_HPACK_TABLE_OFF for 0.
     * The table holds at most twice this many bytes. */
    size_t max_table_size;
    /* A block's decoded header list: the names and values plus 32 per field (RFC 7541 §4.1,
     * RFC 9113 §6.5.2); default 65536. Past it, VEGA_ERR_HPACK_TOO_LARGE. */
    size_t max_list_size;
    /* Fields in a block; default 256. Past it, VEGA_ERR_HPACK_TOO_LARGE. */
    size_t max_fields;
    /* One decoded name or value; default 65536 (at most 16 MiB). Past it,
     * VEGA_ERR_HPACK_STRING_TOO_LONG. The decoder's scratch grows up to twice this. */
    size_t max_string_len;
    /* Allocator for the table and the scratch, retained; NULL = libc. */
    const vega_mem *mem;
} vega_hpack_decoder_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_HPACK_DECODER_OPTS_VERSION 1

/* Fills o with the defaults. Context: any. Since 0.1. */
VEGA_API void vega_hpack_decoder_opts_init_versioned(vega_hpack_decoder_opts *o, int opts_version);
#define vega_hpack_decoder_opts_init(...)                                                          \
    vega_hpack_decoder_opts_init_versioned(__VA_ARGS__, VEGA_HPACK_DECODER_OPTS_VERSION)

/*
 * Creates a decoder. o: borrowed (its mem retained); NULL = all defaults. *out: returns owned,
 * free with vega_hpack_decoder_free. Nothing is allocated until a block needs it.
 * Returns 0; -EINVAL (NULL out, a limit out of range, options of a layout version this library
 * does not know); -ENOMEM. Context: any. Since 0.1.
 */
VEGA_API int vega_hpack_decoder_new_versioned(vega_hpack_decoder **out,
                                              const vega_hpack_decoder_opts *o, int opts_version);
#define vega_hpack_decoder_new(...)                                                                \
    vega_hpack_decoder_new_versioned(__VA_ARGS__, VEGA_HPACK_DECODER_OPTS_VERSION)

/* Frees d and its table (NULL is fine). Since 0.1. */
VEGA_API void vega_hpack_decoder_free(vega_hpack_decoder *d);

/* Receives each decoded field, in order. f and its spans are borrowed: valid only during the
 * call. Returns 0, or nonzero to stop decoding (VEGA_ERR_CALLBACK). */
typedef int (*vega_hpack_on_field)(void *ud, const vega_hpack_field *f);

/*
 * Decodes one complete header block (in HTTP/2: HEADERS or PUSH_PROMISE with its
 * CONTINUATION frames, reassembled) and calls on_field for each field. in: borrowed. on_field
 * may be NULL (the block is processed, the fields dropped).
 * The table changes as the block says (§4.3), so every block the peer sends must go through
 * here, in order, even one whose fields are not wanted. Huffman strings are decoded into the
 * decoder's scratch; raw ones are handed out in place.
 * Returns 0; VEGA_ERR_HPACK_TOO_LARGE (not fatal: see the code); VEGA_ERR_HPACK_DECODE;
 * VEGA_ERR_HPACK_STRING_TOO_LONG; VEGA_ERR_CALLBACK (on_field failed; the block was left
 * midway); -ENOMEM; -EINVAL (NULL d, or NULL in with len > 0; nothing changes). After any error but
 * TOO_LARGE the decoder is unusable: every later call returns that error again. Context: any; not
 * from on_field. Since 0.1.
 */
VEGA_API int vega_hpack_decode(vega_hpack_decoder *d, const uint8_t *in, size_t len,
                               vega_hpack_on_field on_field, void *ud);

/*
 * The protocol's table size limit changed (in HTTP/2: the peer acknowledged our new
 * SETTINGS_HEADER_TABLE_SIZE). When it drops below the table's current maximum, the next block
 * must start with a table size update within it (§4.2), or it is VEGA_ERR_HPACK_DECODE.
 * Returns 0; -EINVAL (above 16 MiB, or the decoder failed). Context: any. Since 0.1.
 */
VEGA_API int vega_hpack_decoder_set_max_table_size(vega_hpack_decoder *d, size_t max);

/* The dynamic table: its size in RFC 7541 §4.1 units, its entry count, and entry i (0 = the
 * newest, index 62 on the wire) into *f, whose spans are borrowed until the next call on d.
 * get returns 0 or -ENOENT (no such entry). Context: any. Since 0.1. */
VEGA_API size_t vega_hpack_decoder_table_size(const vega_hpack_decoder *d);
VEGA_API size_t vega_hpack_decoder_table_len(const vega_hpack_decoder *d);
VEGA_API int vega_hpack_decoder_table_get(const vega_hpack_decoder *d, size_t i,
                                          vega_hpack_field *f);

/* ---- encoder ---- */

typedef struct vega_hpack_encoder vega_hpack_encoder;

/* Encoder options: plain data; a 0 field means its default. */
typedef struct vega_hpack_encoder_opts {
    /* The most table the encoder uses, whatever the peer allows; default 4096;
     * VEGA_HPACK_TABLE_OFF for 0 (nothing is ever indexed). The encoder uses the smaller of
     * this and the peer's limit (vega_hpack_encoder_set_max_table_size; 4096 until then). */
    size_t max_table_size;
    vega_hpack_huffman huffman;
    /* Allocator for the table, retained; NULL = libc. */
    const vega_mem *mem;
} vega_hpack_encoder_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_HPACK_ENCODER_OPTS_VERSION 1

/* Fills o with the defaults. Context: any. Since 0.1. */
VEGA_API void vega_hpack_encoder_opts_init_versioned(vega_hpack_encoder_opts *o, int opts_version);
#define vega_hpack_encoder_opts_init(...)                                                          \
    vega_hpack_encoder_opts_init_versioned(__VA_ARGS__, VEGA_HPACK_ENCODER_OPTS_VERSION)

/*
 * Creates an encoder. o: borrowed (its mem retained); NULL = all defaults. *out: returns owned,
 * free with vega_hpack_encoder_free.
 * Returns 0; -EINVAL (NULL out, a bad huffman value or table size, options of a layout version
 * this library does not know); -ENOMEM. Context: any. Since 0.1.
 */
VEGA_API int vega_hpack_encoder_new_versioned(vega_hpack_encoder **out,
                                              const vega_hpack_encoder_opts *o, int opts_version);
#define vega_hpack_encoder_new(...)                                                                \
    vega_hpack_encoder_new_versioned(__VA_ARGS__, VEGA_HPACK_ENCODER_OPTS_VERSION)

/* Frees e and its table (NULL is fine). Since 0.1. */
VEGA_API void vega_hpack_encoder_free(vega_hpack_encoder *e);

/*
 * The peer's table size limit changed (in HTTP/2: its SETTINGS_HEADER_TABLE_SIZE). The
 * encoder evicts to fit at once, and the next block starts with the table size updates RFC
 * 7541 §4.2 asks for (the smallest size since the last block, then the final one) when the
 * peer's decoder needs them.
 * Returns 0; -EINVAL (above 2^32 - 1). Context: any. Since 0.1.
 */
VEGA_API int vega_hpack_encoder_set_max_table_size(vega_hpack_encoder *e, size_t peer_max);

/*
 * The most bytes vega_hpack_encode can write for these fields, size updates included; SIZE_MAX
 * when the sum overflows. fields: borrowed. Context: any. Since 0.1.
 */
VEGA_API size_t vega_hpack_encode_bound(const vega_hpack_encoder *e, const vega_hpack_field *fields,
                                        size_t n);

/*
 * Encodes the header list fields[0..n) as one header block into out[0..cap), in order, and
 * updates the dynamic table as the block tells the peer to. Names go as given (HTTP/2 wants
 * them lowercase: the caller's job). Per field: a whole match in a table is sent indexed
 * (never for INDEX_NEVER); else a literal with the lowest matching name index, or a literal
 * name. INDEX_AUTO picks NEVER for authorization, proxy-authorization, set-cookie and cookie
 * values under 20 bytes (secrets a compression oracle could guess, RFC 7541 §7.1); NO for
 * :path, content-length, age, etag, if-modified-since, if-none-match, last-modified and
 * location (values that rarely repeat) and for fields over three quarters of the table; YES
 * otherwise. A YES field that does not fit the table at all is sent without indexing.
 * fields: borrowed (their spans only during the call).
 * Returns the bytes written; VEGA_ERR_NOBUF when cap < vega_hpack_encode_bound (nothing is
 * written and the table is unchanged); -EINVAL (a NULL pointer with n > 0, a bad index value,
 * a name or value over 16 MiB); -ENOMEM (the table's room is made before anything is written:
 * nothing changed).
 * Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_hpack_encode(vega_hpack_encoder *e, uint8_t *out, size_t cap,
                                      const vega_hpack_field *fields, size_t n);

/* The encoder's dynamic table, as for the decoder's (entry i = 0 is the newest). get returns 0
 * or -ENOENT (no such entry). Context: any. Since 0.1. */
VEGA_API size_t vega_hpack_encoder_table_size(const vega_hpack_encoder *e);
VEGA_API size_t vega_hpack_encoder_table_len(const vega_hpack_encoder *e);
VEGA_API int vega_hpack_encoder_table_get(const vega_hpack_encoder *e, size_t i,
                                          vega_hpack_field *f);

#ifdef __cplusplus
}
#endif
#endif
