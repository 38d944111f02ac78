/* SPDX-License-Identifier: MIT */
/* Internal helpers of the QUIC wire layer: a bounds-checked reader and big-endian writers. */
#ifndef VEGA_QUIC_INT_H
#define VEGA_QUIC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/quic_wire.h>

#include "base.h"

/* The connection's allocator (vega_quic_opts.mem); m NULL = libc (lib/base's helpers).
 * Everything the connection owns goes through these, so a block is freed by the allocator
 * that made it. */
#define vega__quic_malloc  vega__mem_malloc
#define vega__quic_calloc  vega__mem_calloc
#define vega__quic_realloc vega__mem_realloc
#define vega__quic_free    vega__mem_free

/* A cursor over borrowed bytes: every get fails (false) rather than read past end. */
struct vega__quic_rd {
    const uint8_t *p, *end;
};

static inline size_t vega__quic_rd_left(const struct vega__quic_rd *r)
{
    return (size_t)(r->end - r->p);
}

static inline bool vega__quic_rd_varint(struct vega__quic_rd *r, uint64_t *v)
{
    vega_ssize n = vega_quic_varint_read(r->p, vega__quic_rd_left(r), v);
    if (n < 0)
        return false;
    r->p += n;
    return true;
}

static inline bool vega__quic_rd_u8(struct vega__quic_rd *r, uint8_t *v)
{
    if (r->p == r->end)
        return false;
    *v = *r->p++;
    return true;
}

static inline bool vega__quic_rd_bytes(struct vega__quic_rd *r, size_t n, const uint8_t **out)
{
    if (vega__quic_rd_left(r) < n)
        return false;
    *out = r->p;
    r->p += n;
    return true;
}

static inline uint32_t vega__quic_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void vega__quic_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* A writer over a caller buffer: the first overflow latches, so a run of puts is checked once. */
struct vega__quic_wr {
    uint8_t *p, *end;
    bool overflow;
};

static inline void vega__quic_wr_varint(struct vega__quic_wr *w, uint64_t v)
{
    vega_ssize n = vega_quic_varint_write(w->p, (size_t)(w->end - w->p), v);
    if (n < 0)
        w->overflow = true;
    else
        w->p += n;
}

static inline void vega__quic_wr_bytes(struct vega__quic_wr *w, const void *d, size_t n)
{
    if ((size_t)(w->end - w->p) < n) {
        w->overflow = true;
        return;
    }
    if (n)
        memcpy(w->p, d, n);
    w->p += n;
}

static inline void vega__quic_wr_u8(struct vega__quic_wr *w, uint8_t v)
{
    vega__quic_wr_bytes(w, &v, 1);
}

/* Long header type bits of version for packet type t (RFC 9000 §17.2, RFC 9369 §3.2);
 * -1 for a type without long-header bits. */
int vega__quic_long_type_bits(uint32_t version, vega_quic_pkt_type t);

/* Walks range_count (Gap, ACK Range Length) pairs below smallest (RFC 9000 §19.3.1), failing on
 * a truncated pair or a packet number below 0. Returns the bytes they take, or -1. */
vega_ssize vega__quic_ack_gaps_check(const uint8_t *p, size_t len, uint64_t smallest,
                                     uint64_t range_count);

/* Keys of the next 1-RTT generation (RFC 9001 §6): packet key and iv from secret (already
 * updated with vega_quic_secret_update), header protection key kept from cur. */
int vega__quic_keys_next(const vega_quic_keys *cur, uint32_t version, const uint8_t *secret,
                         size_t secret_len, vega_quic_keys **out);

/* vega_quic_keys_new and vega_quic_keys_new_initial with the struct from mem (NULL = libc);
 * vega_quic_keys_free and vega__quic_keys_next use the allocator the keys were made with. */
int vega__quic_keys_new_mem(const vega_quic_mem *mem, vega_quic_keys **out, uint32_t version,
                            vega_crypto_aead_alg alg, const uint8_t *secret, size_t secret_len);
int vega__quic_keys_new_initial_mem(const vega_quic_mem *mem, vega_quic_keys **out,
                                    uint32_t version, const uint8_t *dcid, size_t dcid_len,
                                    bool server);

/* The first byte of a packet with header protection removed, without touching the packet (to
 * read the key phase before choosing which keys decrypt it), and the mask it took (mask may be
 * NULL; VEGA_CRYPTO_HP_MASK_LEN bytes), which vega__quic_packet_unprotect_mask reuses: every
 * 1-RTT generation shares one header protection key. Returns 0 or VEGA_ERR_PROTO (too short
 * to sample) or VEGA_ERR_CRYPTO_LIBCRYPTO. */
int vega__quic_hp_first(vega_quic_keys *k, const uint8_t *pkt, size_t pkt_len, size_t pn_offset,
                        uint8_t *first, uint8_t *mask);

/* vega_quic_packet_unprotect with the header protection mask already computed (by
 * vega__quic_hp_first with keys of the same header protection key), so it is not computed
 * twice. */
int vega__quic_packet_unprotect_mask(vega_quic_keys *k, uint8_t *pkt, size_t pkt_len,
                                     size_t pn_offset, int64_t largest_pn, const uint8_t *mask,
                                     vega_quic_unprotected *out, uint64_t *wire_err);

/* Payload bytes of a packet that are not in the packet yet: len bytes of the payload at offset
 * at come from src (a stream's send buffer), sealed from there straight into the packet. */
struct vega__quic_ext {
    const uint8_t *src;
    uint32_t at, len;
};
#define VEGA__QUIC_EXT_MAX 4 /* per packet; more pieces are copied into it */

/* vega_quic_packet_protect for a payload whose ext[0..n) spans (in increasing order, apart and
 * within payload_len) are still at their src: the same bytes as copying them in, then
 * protecting in place, without the copy. Returns what vega_quic_packet_protect does (-EINVAL
 * too for spans out of order or out of the payload, or n above VEGA__QUIC_EXT_MAX). */
/* Whether sealing stream bytes from their source (vega__quic_packet_protect_ext) is cheaper
 * than copying them into the packet with k's suite. */
bool vega__quic_keys_seal_from_source(const vega_quic_keys *k);
vega_ssize vega__quic_packet_protect_ext(vega_quic_keys *k, uint8_t *pkt, size_t cap,
                                         size_t hdr_len, uint64_t pn, size_t payload_len,
                                         const struct vega__quic_ext *ext, size_t n);

#endif
