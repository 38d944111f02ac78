/* SPDX-License-Identifier: MIT */
/* Streaming compression behind one sans-I/O interface: gzip (RFC 1952), deflate (zlib, RFC
 * 1950/1951), brotli (RFC 7932) and zstd (RFC 8878), with bounded output per call, a
 * decompression limit, and the HTTP content-coding names (RFC 9110 section 8.4.1). */
#ifndef VEGA_COMPRESS_H
#define VEGA_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/mem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A content coding. 0 is not a kind (a zeroed field is caught as -EINVAL). */
typedef enum vega_compress_kind {
    VEGA_COMPRESS_GZIP = 1, /* gzip (RFC 1952); the decoder reads concatenated members */
    VEGA_COMPRESS_DEFLATE,  /* HTTP "deflate": zlib-wrapped deflate (RFC 1950). The decoder
                               also reads raw deflate (RFC 1951), which servers send too: a
                               stream whose first two bytes are not a valid zlib header */
    VEGA_COMPRESS_BROTLI,   /* brotli (RFC 7932) */
    VEGA_COMPRESS_ZSTD,     /* zstd (RFC 8878); the decoder reads concatenated frames and
                               skippable frames, not the legacy pre-1.0 formats */
    VEGA_COMPRESS_IDENTITY, /* no coding: bytes are copied (the limit still applies) */
} vega_compress_kind;

/* The flush argument of vega_compressor_write and vega_decompressor_write. */
typedef enum vega_compress_flush {
    VEGA_COMPRESS_FLUSH_NONE = 0, /* more input follows; the codec may hold data back */
    VEGA_COMPRESS_FLUSH_SYNC,     /* compressor: emit everything so far, byte-aligned, so the
                                     peer can decode it all now; the stream continues.
                                     Decompressor: same as NONE */
    VEGA_COMPRESS_FLUSH_FINISH,   /* this call's input is the last: end the stream (compressor)
                                     or check that it ended (decompressor) */
} vega_compress_flush;

/* Level argument of vega_compressor_new: the codec's default (gzip/deflate 6, brotli 5,
 * zstd 3). Ranges: gzip/deflate 0..9, brotli 0..11, zstd -7..22 (0 is zstd's default).
 * Identity accepts any level. */
#define VEGA_COMPRESS_LEVEL_DEFAULT (-1000)

/* Default and "no limit" values of vega_decompressor_new's limit. */
#define VEGA_DECOMPRESS_DEFAULT_LIMIT (64ull * 1024 * 1024)
#define VEGA_DECOMPRESS_NO_LIMIT      UINT64_MAX

/* Default largest zstd window the decompressor accepts, log2 (8 MiB, RFC 9659 section 3). */
#define VEGA_DECOMPRESS_DEFAULT_ZSTD_WINDOW_LOG 23

/*
 * Plain data: options for vega_compressor_new and vega_decompressor_new. Zero it and set what
 * differs from the defaults; a NULL pointer means all defaults.
 */
typedef struct vega_compress_opts {
    /* Deprecated (0.1), until 1.0: use mem below. An allocator for the object and the
     * codec's state: both set or both NULL. alloc returns NULL on failure (seen as -ENOMEM);
     * free accepts any pointer alloc returned. */
    void *(*alloc)(void *user_data, size_t size);
    void (*free)(void *user_data, void *ptr);
    void *user_data; /* passed to alloc and free; retained */
    /* log2 of the window. Compressor (0 = the codec's default): gzip/deflate 9..15 (default
     * 15), brotli 10..24 (default 22), zstd 10..27 (default from the level, at most 23).
     * Decompressor: the largest zstd window accepted, 10..31 (0 = 23, i.e. 8 MiB); other
     * codecs ignore it (deflate's window is at most 32 KiB, brotli's at most 16 MiB). */
    unsigned window_log;
    /* The allocator of every other module (vega/mem.h), for the object and the codec's
     * state; NULL = alloc/free above, or libc when those are NULL too (setting both is
     * -EINVAL). Retained. Caveat: the brotli encoder library, as built by default, calls
     * exit() when an allocation fails inside vega_compressor_write; only
     * vega_compressor_new's are reported. */
    const vega_mem *mem;
} vega_compress_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_COMPRESS_OPTS_VERSION 1

/* ---- compressor ---------------------------------------------------------------------------- */

/* Opaque: one stream being compressed. One task at a time. */
typedef struct vega_compressor vega_compressor;

/*
 * Creates a compressor of one stream. out: receives the compressor, owned by the caller (free
 * with vega_compressor_free). level: VEGA_COMPRESS_LEVEL_DEFAULT or a value in the kind's
 * range (see VEGA_COMPRESS_LEVEL_DEFAULT). opts: borrowed (copied), may be NULL.
 * Returns 0; -EINVAL (unknown kind, level or window_log out of range, only one of
 * alloc/free); -ENOMEM. On error *out is NULL.
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_compressor_new_versioned(vega_compressor **out, vega_compress_kind kind,
                                           int level, const vega_compress_opts *opts,
                                           int opts_version);
#define vega_compressor_new(...)                                                                   \
    vega_compressor_new_versioned(__VA_ARGS__, VEGA_COMPRESS_OPTS_VERSION)

/* Frees c and its codec state. c may be NULL. Since 0.1. */
VEGA_API void vega_compressor_free(vega_compressor *c);

/*
 * Compresses (sans I/O): consumes input from in and writes at most out_cap bytes to out.
 * in: borrowed (may be NULL when in_len is 0). consumed: receives how many input bytes were
 * taken (always set, 0 on error). out: borrowed, must not overlap in.
 * Loop rule: a result equal to out_cap means more may be pending: call again with the rest of
 * the input (in + *consumed) and the same flush. A result below out_cap means all of in was
 * consumed and the flush asked for is complete (for FINISH, vega_compressor_is_done is then
 * true). A SYNC or FINISH that returned out_cap must be continued with the same flush and
 * exactly the unconsumed rest of the input. Once finished, calls with no input return 0.
 * Returns the bytes written to out (0 <= n <= out_cap); VEGA_ERR_NOBUF (out_cap is 0; nothing
 * done); -EINVAL (NULL buffer with a nonzero length, unknown flush, or a pending SYNC/FINISH
 * not continued as above; nothing done); VEGA_ERR_CLOSED (input after the stream was
 * finished; nothing done); -ENOMEM (fatal); VEGA_ERR_INTERNAL (the codec failed: a bug,
 * fatal). After a fatal error every call returns the same code.
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API vega_ssize vega_compressor_write(vega_compressor *c, const uint8_t *in, size_t in_len,
                                          size_t *consumed, uint8_t *out, size_t out_cap,
                                          vega_compress_flush flush);

/* True once a FINISH completed: every byte of the stream was returned. Since 0.1. */
VEGA_API bool vega_compressor_is_done(const vega_compressor *c);

/* ---- decompressor -------------------------------------------------------------------------- */

/* Opaque: one stream being decompressed. One task at a time. */
typedef struct vega_decompressor vega_decompressor;

/*
 * Creates a decompressor of one stream. out: receives it, owned by the caller (free with
 * vega_decompressor_free). limit: the most bytes the whole stream may decompress to, so that
 * no input (a "decompression bomb") makes the caller hold more; 0 means
 * VEGA_DECOMPRESS_DEFAULT_LIMIT (64 MiB), VEGA_DECOMPRESS_NO_LIMIT means none. The codec's own
 * memory is bounded by its window (32 KiB deflate, 16 MiB brotli, opts->window_log for zstd).
 * opts: borrowed (copied), may be NULL.
 * Returns 0; -EINVAL (unknown kind, window_log out of range, only one of alloc/free);
 * -ENOMEM. On error *out is NULL.
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_decompressor_new_versioned(vega_decompressor **out, vega_compress_kind kind,
                                             uint64_t limit, const vega_compress_opts *opts,
                                             int opts_version);
#define vega_decompressor_new(...)                                                                 \
    vega_decompressor_new_versioned(__VA_ARGS__, VEGA_COMPRESS_OPTS_VERSION)

/* Frees d and its codec state. d may be NULL. Since 0.1. */
VEGA_API void vega_decompressor_free(vega_decompressor *d);

/*
 * Decompresses (sans I/O): consumes input from in and writes at most out_cap bytes to out.
 * in: borrowed (may be NULL when in_len is 0). consumed: receives how many input bytes were
 * taken (always set). out: borrowed, must not overlap in. flush: NONE (or SYNC) while more
 * input may follow; FINISH when in ends the input, so that a stream cut short is reported.
 * Loop rule: a result equal to out_cap means more may be pending: call again with the rest of
 * the input. A result below out_cap means all of in was consumed (nothing is held back).
 * vega_decompressor_is_done says whether the input so far ends at the end of the stream.
 * After the end, more input is an error, except that gzip members and zstd frames may follow
 * each other (a new one then starts).
 * Returns the bytes written to out (0 <= n <= out_cap); VEGA_ERR_NOBUF (out_cap is 0; nothing
 * done); -EINVAL (NULL buffer with a nonzero length, unknown flush; nothing done); and, fatal,
 * with the bytes written by this call unspecified and not counted:
 *  - -EFBIG: the output would exceed the limit (reported by the call that would cross it, so
 *    the bytes returned before total at most the limit), or a zstd frame needs a window above
 *    the allowed one;
 *  - VEGA_ERR_PROTO: the input is not a valid stream: corrupt data, a failed checksum, an
 *    unsupported feature (a preset dictionary), or bytes after the end of the stream
 *    (trailing garbage, zeros included);
 *  - -ENODATA: flush is FINISH but the input ended inside the stream (truncated; also an
 *    empty input for every kind but identity);
 *  - -ENOMEM; VEGA_ERR_INTERNAL (a bug).
 * After a fatal error every call returns the same code.
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API vega_ssize vega_decompressor_write(vega_decompressor *d, const uint8_t *in, size_t in_len,
                                            size_t *consumed, uint8_t *out, size_t out_cap,
                                            vega_compress_flush flush);

/* True when the input so far ends exactly at the end of the stream (of a gzip member or a
 * zstd frame; for identity, after a FINISH). Since 0.1. */
VEGA_API bool vega_decompressor_is_done(const vega_decompressor *d);

/* Bytes produced so far (never above the limit). Since 0.1. */
VEGA_API uint64_t vega_decompressor_get_total_out(const vega_decompressor *d);

/* ---- one-shot ------------------------------------------------------------------------------ */

/*
 * Compresses in into a new buffer. in: borrowed. max_out: the largest output accepted (0 = no
 * limit). *out: returns owned (release with free()), never NULL on success, NULL on error;
 * *out_len receives its length.
 * Returns 0; -EINVAL (bad kind or level, NULL pointers); -EFBIG (the output would exceed
 * max_out); -ENOMEM; VEGA_ERR_INTERNAL.
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_compress_buffer(vega_compress_kind kind, int level, const void *in, size_t in_len,
                                  size_t max_out, uint8_t **out, size_t *out_len);

/*
 * Decompresses one whole stream from in into a new buffer. in: borrowed. max_out: the limit
 * (0 = VEGA_DECOMPRESS_DEFAULT_LIMIT). *out: returns owned (release with free()), never NULL
 * on success, NULL on error; *out_len receives its length.
 * Returns 0 or vega_decompressor_write's codes: -EFBIG, VEGA_ERR_PROTO, -ENODATA, -ENOMEM,
 * -EINVAL (bad kind, NULL pointers), VEGA_ERR_INTERNAL.
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_decompress_buffer(vega_compress_kind kind, const void *in, size_t in_len,
                                    size_t max_out, uint8_t **out, size_t *out_len);

/* ---- HTTP content-coding names ------------------------------------------------------------- */

/*
 * Parses one content-coding name (RFC 9110 section 8.4.1): "gzip", "x-gzip", "deflate", "br",
 * "zstd", "identity", case-insensitively, ignoring spaces and tabs around it. name: borrowed,
 * len bytes, need not be NUL-terminated. kind: receives the kind.
 * Returns 0; -ENOTSUP (not a coding libvega supports, e.g. "compress"); -EINVAL (NULL).
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_compress_kind_parse(const char *name, size_t len, vega_compress_kind *kind);

/* The canonical content-coding name of kind ("gzip", "deflate", "br", "zstd", "identity"), a
 * static string; NULL for an unknown kind. Since 0.1. */
VEGA_API const char *vega_compress_kind_name(vega_compress_kind kind);

#ifdef __cplusplus
}
#endif
#endif
