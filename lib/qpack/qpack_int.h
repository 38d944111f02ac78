/* SPDX-License-Identifier: MIT */
/* QPACK internals (RFC 9204): the static table, the dynamic table both sides keep, a byte queue
 * for instruction streams, and the decoder and encoder objects. Private to lib/qpack (tests and
 * lib/h3 may read it). */
#ifndef VEGA_QPACK_INT_H
#define VEGA_QPACK_INT_H

#include <vega/qpack.h>

#include "base.h"

/* ---- static table (static_table.c) -------------------------------------------------------- */

struct vega__qp_static {
    const char *name, *value;
    uint8_t name_len, value_len;
};
extern const struct vega__qp_static vega__qp_static[VEGA_QPACK_STATIC_COUNT];

/* Looks a field up: returns the index of an exact match, or -1 with *name_idx set to an entry
 * with the same name (-1 when none). */
int vega__qp_static_find(const uint8_t *name, size_t name_len, const uint8_t *value,
                         size_t value_len, int *name_idx);

/* ---- dynamic table (table.c, RFC 9204 §3.2) ----------------------------------------------- */

#define VEGA__QP_ENTRY_OVERHEAD 32

struct vega__qp_entry {
    size_t name_len, value_len;
    uint32_t refs;  /* encoder: unacknowledged sections that reference it */
    uint8_t data[]; /* name, then value */
};

static inline uint64_t vega__qp_entry_size(const struct vega__qp_entry *e)
{
    return (uint64_t)e->name_len + e->value_len + VEGA__QP_ENTRY_OVERHEAD;
}

/* Entries live in a ring of max_capacity / 32 slots (no table can hold more, §3.2.1: an entry
 * costs at least 32), indexed by absolute index modulo the ring size. */
struct vega__qp_table {
    const vega_mem *mem;
    struct vega__qp_entry **ring;
    size_t ring_cap;
    uint64_t inserted; /* Insert Count: absolute index of the next entry */
    uint64_t dropped;  /* entries evicted: the oldest live entry's absolute index */
    uint64_t size;     /* sum of the live entries' sizes */
    uint64_t capacity; /* current capacity */
    uint64_t max_capacity;
};

void vega__qp_table_init(struct vega__qp_table *t, const vega_mem *mem, uint64_t max_capacity);
void vega__qp_table_fini(struct vega__qp_table *t);

/* The live entry with absolute index abs, or NULL when it was evicted or not inserted yet. */
static inline struct vega__qp_entry *vega__qp_table_get(const struct vega__qp_table *t,
                                                        uint64_t abs)
{
    if (abs < t->dropped || abs >= t->inserted)
        return NULL;
    return t->ring[abs % t->ring_cap];
}

/* Makes an entry (not yet in the table). Returns NULL on no memory. */
struct vega__qp_entry *vega__qp_entry_new(const vega_mem *mem, const uint8_t *name, size_t name_len,
                                          const uint8_t *value, size_t value_len);

/* An evictable entry test (the encoder's §2.1.1 rule; NULL = every entry is). */
typedef bool (*vega__qp_evictable_fn)(const struct vega__qp_table *t, uint64_t abs, void *arg);

/* True when an entry of `size` fits after evicting only evictable entries (from the oldest). */
bool vega__qp_table_has_room(const struct vega__qp_table *t, uint64_t size,
                             vega__qp_evictable_fn evictable, void *arg);

/* Evicts from the oldest until size + need <= capacity (callers checked has_room), then adds e
 * (taken). Returns 0; -ENOMEM when the ring could not be allocated (e not taken). */
int vega__qp_table_insert(struct vega__qp_table *t, struct vega__qp_entry *e);

/* Sets the capacity, evicting from the oldest until the size fits. */
void vega__qp_table_set_capacity(struct vega__qp_table *t, uint64_t capacity);

/* Newest entry matching name and value (exact, returns true) or at least the name (false, with
 * *name_abs set; each is UINT64_MAX when there is none). */
bool vega__qp_table_find(const struct vega__qp_table *t, const uint8_t *name, size_t name_len,
                         const uint8_t *value, size_t value_len, uint64_t *abs, uint64_t *name_abs);

/* ---- byte queue (buf.c) -------------------------------------------------------------------- */

struct vega__qp_buf {
    const vega_mem *mem;
    uint8_t *p;
    size_t off, len, cap; /* unsent bytes are p[off..len) */
};

/* Makes room for n more bytes. Returns 0 or -ENOMEM. */
int vega__qp_buf_reserve(struct vega__qp_buf *b, size_t n);
/* Appends (after a reserve, or reserving itself). Returns 0 or -ENOMEM. */
int vega__qp_buf_append(struct vega__qp_buf *b, const uint8_t *p, size_t n);
/* Appends a prefixed integer. Returns 0 or -ENOMEM. */
int vega__qp_buf_int(struct vega__qp_buf *b, uint8_t first, unsigned prefix, uint64_t v);
/* Copies up to cap unsent bytes out and drops them. Returns the bytes copied. */
size_t vega__qp_buf_take(struct vega__qp_buf *b, uint8_t *out, size_t cap);
void vega__qp_buf_free(struct vega__qp_buf *b);
static inline size_t vega__qp_buf_pending(const struct vega__qp_buf *b)
{
    return b->len - b->off;
}

/* ---- decoder (decoder.c, decode_section.c) ------------------------------------------------- */

struct vega__qp_blocked {
    uint64_t stream_id;
    uint64_t ric; /* Required Insert Count it waits for */
    uint8_t *data;
    size_t len;
    bool reported; /* on_unblocked fired */
};

struct vega_qpack_decoder {
    const vega_mem *mem;
    vega_qpack_decoder_callbacks cb;
    void *ud;
    uint64_t max_capacity, max_entries, max_blocked, max_section;
    size_t max_fields;
    struct vega__qp_table t;
    /* encoder-stream input: an incomplete instruction */
    uint8_t *in;
    size_t in_len, in_cap;
    struct vega__qp_buf out; /* decoder-stream output */
    uint64_t known_received; /* what our acknowledgments and increments told the encoder */
    struct vega__qp_blocked *blocked;
    size_t nblocked, blocked_cap;
    uint8_t *resumed; /* the last resumed section's bytes, freed on the next call */
    /* decode scratch: field arrays and Huffman-decoded strings */
    vega_http_field *fields;
    bool *never;
    size_t fields_cap;
    uint8_t *scratch;
    size_t scratch_cap;
    int failed; /* sticky error code */
    uint64_t err;
    const char *reason;
};

int vega__qp_decoder_fail(vega_qpack_decoder *d, uint64_t code, const char *reason);
/* Decodes a whole section whose Required Insert Count is known to be reached. */
int vega__qp_decode_lines(vega_qpack_decoder *d, uint64_t stream_id, const uint8_t *in, size_t len,
                          vega_qpack_section *out);
/* Reads the section prefix: Required Insert Count and Base (RFC 9204 §4.5.1). Returns the prefix
 * length, 0 when incomplete, or VEGA_ERR_PROTO (d failed). */
vega_ssize vega__qp_decode_prefix(vega_qpack_decoder *d, const uint8_t *in, size_t len,
                                  uint64_t *ric, uint64_t *base);

/* ---- encoder (encoder.c, encode_section.c) ------------------------------------------------- */

/* A section with dynamic references, remembered until acknowledged or cancelled. */
struct vega__qp_section {
    uint64_t stream_id;
    uint64_t ric;
    uint64_t *refs; /* absolute indices referenced (each counted once in the entry's refs) */
    size_t nrefs;
};

struct vega_qpack_encoder {
    const vega_mem *mem;
    vega_qpack_encoder_opts o;
    bool peer_set;
    uint64_t peer_max_capacity, peer_blocked, max_entries;
    uint64_t use_capacity;  /* the capacity we set (min of ours and the peer's) */
    uint64_t blocked_limit; /* min of ours and the peer's */
    bool capacity_sent;
    struct vega__qp_table t;
    uint64_t known_received;
    struct vega__qp_buf out; /* encoder-stream output */
    struct vega__qp_section *secs;
    size_t nsecs, secs_cap;
    uint8_t in[16]; /* decoder-stream input: an incomplete instruction */
    size_t in_len;
    int failed;
    uint64_t err;
    const char *reason;
};

/* Evictable for the encoder (RFC 9204 §2.1.1): acknowledged and unreferenced. */
bool vega__qp_enc_evictable(const struct vega__qp_table *t, uint64_t abs, void *arg);
/* Queues the instruction that inserts name/value (name reference when it can) and inserts it.
 * Returns 0, VEGA_ERR_FULL (no room), -ENOMEM. */
int vega__qp_enc_insert(vega_qpack_encoder *e, const uint8_t *name, size_t name_len,
                        const uint8_t *value, size_t value_len);
/* Number of streams with an unacknowledged section that could block (RIC > Known Received). */
size_t vega__qp_enc_blocking_streams(const vega_qpack_encoder *e, uint64_t stream_id,
                                     bool *this_one);

/* Required Insert Count on the wire (RFC 9204 §4.5.1.1). */
static inline uint64_t vega__qp_ric_encode(uint64_t ric, uint64_t max_entries)
{
    return ric == 0 ? 0 : ric % (2 * max_entries) + 1;
}

#endif
