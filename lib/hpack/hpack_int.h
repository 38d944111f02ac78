/* SPDX-License-Identifier: MIT */
/* Private to lib/hpack: the dynamic table (RFC 7541 §2.3.2, §4) shared by the decoder and the
 * encoder, the static table (Appendix A), and the two objects. */
#ifndef VEGA_HPACK_INT_H
#define VEGA_HPACK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/hpack.h>

#include "base.h"

/* The largest table size or string length accepted anywhere (16 MiB): far above any real use,
 * low enough that sizes never come near an overflow. */
#define VEGA__HPACK_MAX_SIZE (16u << 20)
/* Entries in the static table (Appendix A); dynamic indices start after it (§2.3.3). */
#define VEGA__HPACK_STATIC_LEN 61

/* One dynamic table entry: name and value lie one after the other in the byte buffer, at a
 * virtual offset (what was ever appended before them), so they never wrap. */
struct vega__hpack_entry {
    uint64_t off;
    uint32_t name_len, value_len;
    uint32_t name_hash, value_hash;
};

/*
 * The dynamic table. Bytes are appended at `end` and leave from the oldest entry; when the
 * buffer's tail has no room, the live bytes move to its front (and the buffer grows when they
 * still do not fit). Live bytes are at most max_size, an entry at most max_size too, so the
 * buffer never holds more than twice max_size and each byte moves O(1) times on average.
 * Entries sit in a power-of-two ring, the oldest at `first`.
 */
struct vega__hpack_table {
    const vega_mem *mem;
    uint8_t *buf;
    size_t buf_cap;
    uint64_t base; /* virtual offset of buf[0] */
    uint64_t end;  /* virtual offset just past the newest entry */
    struct vega__hpack_entry *ents;
    size_t ents_cap; /* a power of two (or 0) */
    size_t first, len;
    size_t size;     /* sum of name + value + 32 (§4.1) */
    size_t max_size; /* the current maximum (§4.2) */
};

void vega__hpack_table_init(struct vega__hpack_table *t, const vega_mem *mem, size_t max_size);
void vega__hpack_table_fini(struct vega__hpack_table *t);
/* Evicts until size <= max, then makes max the maximum (§4.3). */
void vega__hpack_table_set_max(struct vega__hpack_table *t, size_t max);
/* Adds name: value as the newest entry, evicting first (§4.4). name and value must not point
 * into the table. An entry larger than the maximum empties the table and is not added.
 * Returns 0 or -ENOMEM (the evictions done, the entry not added: the decoder treats it as
 * fatal; the encoder reserves first, so it never sees it). */
int vega__hpack_table_add(struct vega__hpack_table *t, const uint8_t *name, size_t name_len,
                          const uint8_t *value, size_t value_len);
/* Makes room for up to `entries` more entries of `bytes` names and values in all, so that
 * adding them allocates nothing. Returns 0 or -ENOMEM (nothing changed). */
int vega__hpack_table_reserve(struct vega__hpack_table *t, size_t bytes, size_t entries);
/* Entry i, 0 = the newest (wire index 62 + i). i < t->len. */
const struct vega__hpack_entry *vega__hpack_table_at(const struct vega__hpack_table *t, size_t i);
static inline const uint8_t *vega__hpack_entry_name(const struct vega__hpack_table *t,
                                                    const struct vega__hpack_entry *e)
{
    return t->buf + (size_t)(e->off - t->base);
}
static inline const uint8_t *vega__hpack_entry_value(const struct vega__hpack_table *t,
                                                     const struct vega__hpack_entry *e)
{
    return vega__hpack_entry_name(t, e) + e->name_len;
}
/* The field of entry i into *f (index YES). Returns 0 or -ENOENT. */
int vega__hpack_table_get(const struct vega__hpack_table *t, size_t i, vega_hpack_field *f);

/* A 32-bit FNV-1a hash of s (the encoder compares hashes before bytes). */
uint32_t vega__hpack_hash(const uint8_t *s, size_t len);

/* ---- the static table (Appendix A) ---- */

struct vega__hpack_static {
    const char *name, *value;
    uint8_t name_len, value_len;
};
/* Entries 1..61 at [0..60]. */
extern const struct vega__hpack_static vega__hpack_static_table[VEGA__HPACK_STATIC_LEN];
/* Looks name (and value) up: returns the index (1..61) of an entry with both equal, setting
 * *name_idx to the lowest index with the name (0 = none); 0 when no entry has both. */
unsigned vega__hpack_static_find(const uint8_t *name, size_t name_len, const uint8_t *value,
                                 size_t value_len, unsigned *name_idx);

/* ---- the objects ---- */

struct vega_hpack_decoder {
    vega_hpack_decoder_opts o;
    struct vega__hpack_table t;
    size_t protocol_max; /* the limit an update may not exceed (§6.3) */
    bool need_update;    /* the limit dropped below the table's maximum: the next block must
                            start with an update (§4.2) */
    int failed;          /* a sticky fatal error, or 0 */
    uint8_t *scratch;    /* Huffman-decoded strings and names copied out of the table */
    size_t scratch_cap;
};

struct vega_hpack_encoder {
    vega_hpack_encoder_opts o;
    struct vega__hpack_table t;
    size_t cap;          /* o.max_table_size, resolved (0 for TABLE_OFF) */
    size_t peer_max;     /* the peer's limit (4096 until told) */
    size_t decoder_max;  /* the maximum the peer's decoder believes the table has */
    size_t pending_min;  /* smallest size since the last block, when an update is due */
    bool update_pending; /* a size update must start the next block */
};

#endif
