/* SPDX-License-Identifier: MIT */
/* Framed codecs over streams: length-delimited frames (big-endian u8/u16/u32/u64 prefix), text
 * lines ("\n" or "\r\n") and raw byte chunks, with hard size limits on both sides. */
#ifndef VEGA_CODEC_H
#define VEGA_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/stream.h>
#include <vega/time.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vega_codec_kind {
    VEGA_CODEC_LENGTH = 1, /* a big-endian length prefix, then that many payload bytes */
    VEGA_CODEC_LINES,      /* lines ending in "\n" or "\r\n"; frames exclude the terminator */
    VEGA_CODEC_BYTES,      /* raw bytes: decode returns chunks as they arrive, encode writes */
} vega_codec_kind;

/* Defaults for vega_codec_opts.max_frame == 0. */
#define VEGA_CODEC_DEFAULT_MAX_FRAME (8u * 1024 * 1024) /* LENGTH */
#define VEGA_CODEC_DEFAULT_MAX_LINE  8192u              /* LINES */
#define VEGA_CODEC_DEFAULT_CHUNK     65536u             /* BYTES */

/* Plain data: the framing. Zero it, set kind, and adjust what differs from the defaults. */
typedef struct vega_codec_opts {
    vega_codec_kind kind;
    unsigned prefix_len; /* LENGTH: prefix size in bytes, 1, 2, 4 or 8 (0 = 4) */
    size_t max_frame;    /* LENGTH: largest payload, decode and encode (0 = 8 MiB), never more
                            than the prefix can express; LINES: longest line, terminator
                            excluded (0 = 8 KiB); BYTES: largest chunk decode returns
                            (0 = 64 KiB; encode has no limit) */
    bool crlf;           /* LINES, encode side: end lines with "\r\n" instead of "\n" */
    bool allow_partial_last_line; /* LINES, decode side: at end of stream, return bytes after
                                     the last terminator as a final line instead of
                                     VEGA_ERR_PROTO */
} vega_codec_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_CODEC_OPTS_VERSION 1

/*
 * Encodes one frame into out (sans I/O): the prefix and payload (LENGTH), the line and its
 * terminator (LINES) or the bytes as they are (BYTES). o, frame: borrowed; out: borrowed,
 * must not overlap frame.
 * Returns the bytes produced; VEGA_ERR_NOBUF (cap too small, nothing written);
 * -EMSGSIZE (len above the limit); -EINVAL (bad options, or a line containing '\n').
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API vega_ssize vega_codec_encode_versioned(const vega_codec_opts *o, const void *frame,
                                                size_t len, void *out, size_t cap,
                                                int opts_version);
#define vega_codec_encode(...) vega_codec_encode_versioned(__VA_ARGS__, VEGA_CODEC_OPTS_VERSION)

/* ---- decoder ------------------------------------------------------------------------------- */

/*
 * Reads frames from a buffered reader. Storage owned by the caller; fields private. The
 * decoder keeps its progress inside a frame, so a call that timed out or was cancelled can be
 * repeated and loses nothing. Frames are assembled in a buffer owned by the decoder, grown
 * only after the frame's size was checked against max_frame (so it never exceeds max_frame,
 * plus 1 for LINES). One task at a time.
 */
typedef struct vega_decoder {
    vega_bufreader *br_;
    vega_codec_opts o_;
    unsigned char *frame_;
    size_t frame_cap_, have_, need_;
    uint64_t skip_;
    unsigned char hdr_[8];
    unsigned hdr_have_;
    int state_;
} vega_decoder;

/*
 * Initialises d over br. br: retained (must outlive d). o: borrowed (copied).
 * Returns 0 or -EINVAL (bad kind or prefix_len). Allocates nothing.
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_decoder_init_versioned(vega_decoder *d, vega_bufreader *br,
                                         const vega_codec_opts *o, int opts_version);
#define vega_decoder_init(...) vega_decoder_init_versioned(__VA_ARGS__, VEGA_CODEC_OPTS_VERSION)

/* Frees the frame buffer. Since 0.1. */
VEGA_API void vega_decoder_fini(vega_decoder *d);

/*
 * Reads the next frame. *frame: returns borrowed (owned by d), valid until the next call on
 * d; never NULL on success, even for an empty frame. *len receives its length.
 * Returns 0 (a frame); VEGA_ERR_CLOSED (the stream ended cleanly between frames);
 * VEGA_ERR_PROTO (the stream ended inside a frame: truncated, what was read is dropped);
 * -EMSGSIZE (a frame above max_frame, or a line longer than max_frame: reported before
 * anything is allocated for it; d stays usable, and the next call skips the rest of that
 * frame or line and returns the one after it); -ENOMEM; -ETIMEDOUT, -ECANCELED (progress is
 * kept: call again); the stream's other codes (-ECONNRESET, ...); -EINVAL (a bad argument).
 * Context: may suspend. Since 0.1.
 */
VEGA_API int vega_decoder_read(vega_decoder *d, const void **frame, size_t *len, vega_deadline dl);

/* ---- encoder ------------------------------------------------------------------------------- */

/* Writes frames to a stream. Storage owned by the caller; fields private. */
typedef struct vega_encoder {
    vega_stream *s_;
    vega_codec_opts o_;
} vega_encoder;

/*
 * Initialises e over s. s: retained (must outlive e). o: borrowed (copied).
 * Returns 0 or -EINVAL (bad kind or prefix_len). Context: any thread. Since 0.1.
 */
VEGA_API int vega_encoder_init_versioned(vega_encoder *e, vega_stream *s, const vega_codec_opts *o,
                                         int opts_version);
#define vega_encoder_init(...) vega_encoder_init_versioned(__VA_ARGS__, VEGA_CODEC_OPTS_VERSION)

/*
 * Encodes one frame (borrowed) and writes it with one gather write, all-or-error. The limits
 * are checked before anything is written. written (may be NULL) receives the encoded bytes
 * accepted by the stream (prefix or terminator included), on success and on error: a value
 * between 0 and the encoded length means the peer saw part of a frame.
 * Returns the encoded length; -EMSGSIZE (len above max_frame, or above what prefix_len can
 * express); -EINVAL (a line containing '\n'); the stream's codes (-ETIMEDOUT, -ECANCELED,
 * -EPIPE, -ECONNRESET, ...).
 * Context: may suspend. Since 0.1.
 */
VEGA_API vega_ssize vega_encoder_write(vega_encoder *e, const void *frame, size_t len,
                                       size_t *written, vega_deadline dl);

#ifdef __cplusplus
}
#endif
#endif
