/* SPDX-License-Identifier: MIT */
/* The primitives HPACK (RFC 7541) and QPACK (RFC 9204) share: prefixed integers (RFC 7541
 * §5.1, RFC 9204 §4.1.1), the canonical Huffman code of RFC 7541 Appendix B, and string
 * literals (§5.2). Internal to libvega: lib/hpack and lib/qpack build on it. Pure functions over
 * caller buffers: no allocation, no state. */
#ifndef VEGA_HTTP_HCODEC_H
#define VEGA_HTTP_HCODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>

/* Prefixed integers: the largest value accepted (2^62 - 1, as QUIC varints) and the longest
 * encoding decoded (a longer one is malformed even with leading zero continuation bytes). */
#define VEGA__HC_INT_MAX     ((1ull << 62) - 1)
#define VEGA__HC_INT_MAX_LEN 10

/* Bytes vega__hc_int_encode needs for v with an N-bit prefix (1 <= prefix_bits <= 8). */
size_t vega__hc_int_len(uint64_t v, unsigned prefix_bits);

/* Encodes v (<= VEGA__HC_INT_MAX) with an N-bit prefix into out[0..cap). The first byte keeps
 * the bits of `first` above the prefix (the representation's flags). Returns the bytes written,
 * or 0 when cap is too small (nothing usable written). */
size_t vega__hc_int_encode(uint8_t *out, size_t cap, uint8_t first, unsigned prefix_bits,
                           uint64_t v);

/* Decodes a prefixed integer from in[0..len) (the prefix in the low bits of in[0]). Returns the
 * bytes consumed (> 0) with *v set; 0 when the input ends first (incomplete: feed more);
 * VEGA_ERR_PROTO when the value exceeds VEGA__HC_INT_MAX or the encoding is longer than
 * VEGA__HC_INT_MAX_LEN bytes. */
vega_ssize vega__hc_int_decode(const uint8_t *in, size_t len, unsigned prefix_bits, uint64_t *v);

/* Length of the Huffman encoding of s[0..len), padding included (RFC 7541 §5.2). */
size_t vega__hc_huff_len(const uint8_t *s, size_t len);

/* Huffman-encodes s[0..len) into out, which has room for vega__hc_huff_len(s, len) bytes;
 * the last byte is padded with the most significant bits of EOS (ones). Returns the bytes
 * written. */
size_t vega__hc_huff_encode(uint8_t *out, const uint8_t *s, size_t len);

/* Upper bound of the decoded length of a Huffman string of len bytes (the shortest code is 5
 * bits): len * 8 / 5. */
#define VEGA__HC_HUFF_DECODED_MAX(len) ((len) / 5 * 8 + ((len) % 5) * 8 / 5)

/* Decodes the Huffman string in[0..len) into out[0..cap). Returns the decoded length;
 * VEGA_ERR_PROTO when the string is malformed (it contains EOS, its padding is longer than 7
 * bits or not the most significant bits of EOS: RFC 7541 §5.2); VEGA_ERR_NOBUF when cap is too
 * small (cap >= VEGA__HC_HUFF_DECODED_MAX(len) always suffices). */
vega_ssize vega__hc_huff_decode(uint8_t *out, size_t cap, const uint8_t *in, size_t len);

/* String literals (RFC 7541 §5.2, RFC 9204 §4.1.2): an H flag (Huffman) in the bit just above
 * an N-bit length prefix, then that many bytes. HPACK uses N = 7; QPACK also N = 5 (Insert With
 * Literal Name) and N = 3 (Literal Field Line With Literal Name). */
typedef struct vega__hc_str {
    const uint8_t *ptr; /* the string's bytes as they lie in the input (NULL until complete) */
    size_t len;         /* their number, as the length prefix declares */
    bool huffman;       /* H: the bytes are Huffman-coded (vega__hc_huff_decode them) */
} vega__hc_str;

/* Reads a string literal from in[0..len), the length prefix in the low prefix_bits (1..7) bits
 * of in[0] and H in the bit above. Returns the bytes consumed (> 0: prefix and string) with *s
 * set; 0 when the input ends first (then, when the length prefix itself was complete, s->len
 * holds the declared length and s->ptr is NULL, so a caller can refuse an oversized string
 * before it arrives); VEGA_ERR_PROTO for a malformed length (vega__hc_int_decode). */
vega_ssize vega__hc_str_decode(const uint8_t *in, size_t len, unsigned prefix_bits,
                               vega__hc_str *s);

/* Bytes vega__hc_str_encode writes for s[0..len) (huffman: as there). */
size_t vega__hc_str_len(const uint8_t *s, size_t len, unsigned prefix_bits, bool huffman);

/* Writes s[0..len) as a string literal: the bits of `first` above H are kept, H set when the
 * Huffman form is used; huffman true picks it when it is strictly shorter, false never does.
 * Returns the bytes written, or 0 when cap is too small (nothing usable written). */
size_t vega__hc_str_encode(uint8_t *out, size_t cap, uint8_t first, unsigned prefix_bits,
                           const uint8_t *s, size_t len, bool huffman);

#endif
