/* SPDX-License-Identifier: MIT */
/* Base64 (RFC 4648 §4) and base64url (§5), both ways, into caller buffers: pure functions, no
 * allocation. One implementation for every protocol that carries it (Basic auth, WebSocket
 * keys, HTTP2-Settings, PEM, HdrHistogram logs, password hashes). */
#ifndef VEGA_BASE64_H
#define VEGA_BASE64_H

#include <stddef.h>

#include <vega/err.h>
#include <vega/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of vega_base64_encode and vega_base64_decode (or-ed). */
enum vega_base64_flags {
    VEGA_BASE64_STD = 0,         /* "+/" and '=' padding (RFC 4648 §4) */
    VEGA_BASE64_URL = 1u << 0,   /* "-_" instead of "+/" (RFC 4648 §5) */
    VEGA_BASE64_NOPAD = 1u << 1, /* encode: no '='; decode: '=' padding optional (as RFC 7540's
                                    HTTP2-Settings and passlib's hashes write it) */
    VEGA_BASE64_SPACE = 1u << 2, /* decode: skip CR, LF, space and tab anywhere (PEM's lines) */
};

/* Bytes vega_base64_encode writes for len input bytes with these flags (no NUL counted);
 * SIZE_MAX when that does not fit a size_t. */
VEGA_API size_t vega_base64_encoded_len(size_t len, unsigned flags);

/*
 * Encodes len bytes of in into out (cap bytes; no NUL is written). Returns the length written;
 * VEGA_ERR_NOBUF (cap below vega_base64_encoded_len; nothing useful written); -EINVAL (in or
 * out NULL with a length, unknown flags). Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_base64_encode(const void *in, size_t len, char *out, size_t cap,
                                       unsigned flags);

/*
 * Decodes len characters of in into out (cap bytes). Strict: only the flags' alphabet (and
 * with VEGA_BASE64_SPACE the blanks), '=' only as the last one or two characters of the last
 * group of four, a group of one character refused; without VEGA_BASE64_NOPAD the length (blanks
 * left out) must be a multiple of 4. The bits left over after the last byte are ignored, as most
 * decoders do (RFC 4648 §3.5 allows either). Returns the decoded length; -EINVAL (not base64 in
 * that form, unknown flags); VEGA_ERR_NOBUF (more than cap bytes). Context: any thread.
 * Since 0.1.
 */
VEGA_API vega_ssize vega_base64_decode(const char *in, size_t len, void *out, size_t cap,
                                       unsigned flags);

#ifdef __cplusplus
}
#endif

#endif
