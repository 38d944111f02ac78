/* SPDX-License-Identifier: MIT */
/*
 * QUIC stream data structures (RFC 9000 §2-4), sans I/O: a set of disjoint ranges (received
 * packet numbers, acknowledged stream bytes), the receive buffer that reassembles STREAM and
 * CRYPTO data arriving out of order, the send buffer that keeps written bytes until they are
 * acknowledged and hands out new and lost ranges to (re)send, receive-side flow control with
 * window auto-tuning, and the stream table of a connection.
 */
#ifndef VEGA_QUIC_QSTREAM_H
#define VEGA_QUIC_QSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/quic_wire.h>

/* ---- range sets ------------------------------------------------------------------------------ */

/* Disjoint, non-adjacent [start, end) ranges kept sorted, in a growable array. */
struct vega__quic_range {
    uint64_t start, end; /* end exclusive */
};

struct vega__quic_ranges {
    struct vega__quic_range *r; /* r[0..n): the ranges, lowest first (read-only for callers) */
    size_t n, cap;
    size_t max; /* most ranges kept (0 = unlimited); see add */
    /* Implementation: r points `front` slots into an allocation of cap slots, so dropping or
     * inserting near the low end moves the short side only (dropping the lowest is O(1)). */
    size_t front;
    const vega_quic_mem *mem; /* the allocator (NULL = libc); fini keeps it */
};

void vega__quic_ranges_init(struct vega__quic_ranges *s, size_t max, const vega_quic_mem *mem);
void vega__quic_ranges_fini(struct vega__quic_ranges *s);
/* Empties the set (keeps the allocation). */
void vega__quic_ranges_clear(struct vega__quic_ranges *s);

/* Adds [start, end), merging with neighbours. When that would exceed max ranges, the lowest
 * range is dropped (ACK generation only needs recent ranges). Returns 0 or -ENOMEM. */
int vega__quic_ranges_add(struct vega__quic_ranges *s, uint64_t start, uint64_t end);

/* Removes [start, end) (splitting a range if needed). Returns 0 or -ENOMEM. */
int vega__quic_ranges_remove(struct vega__quic_ranges *s, uint64_t start, uint64_t end);

/* True when v is inside a range. */
bool vega__quic_ranges_contains(const struct vega__quic_ranges *s, uint64_t v);

/* The end of the range that starts at or contains `from`, i.e. how far [from, x) is covered
 * contiguously: returns from itself when from is not covered. */
uint64_t vega__quic_ranges_covered_to(const struct vega__quic_ranges *s, uint64_t from);

/* The index of the first range whose end is >= v (n when none): the range that contains v, is
 * adjacent to it from below, or is the next one above it. O(log n). */
size_t vega__quic_ranges_find(const struct vega__quic_ranges *s, uint64_t v);

/* ---- receive buffer -------------------------------------------------------------------------- */

/*
 * Bytes of one stream (or one level's CRYPTO stream) received at arbitrary offsets, read in
 * order. Data is copied in; duplicates and overlaps are stored once. Memory is bounded by the
 * flow control window the caller enforces (a frame beyond read_off + limit is refused).
 *
 * Layout: one ring of bytes covering [read_off, read_off + ring size), allocated on the first
 * data and grown by doubling up to limit (never above it), so a frame lands with one memcpy at
 * its offset whatever the order, and peek hands out everything contiguous up to the ring's
 * wrap point (the ring restarts at index 0 whenever it runs empty, so in-order traffic that is
 * read promptly comes out in one piece). In-order data at the contiguous end costs no search;
 * data beyond a gap is recorded in a range set of "islands". A peer that fragments its data
 * into more than VEGA__QUIC_RECVBUF_MAX_ISLANDS separate islands (tiny frames with holes
 * between them) is refused with FLOW_CONTROL_ERROR: islands cannot be merged without the
 * missing bytes, and that many holes is no legitimate loss pattern. The ring is sized by how
 * far ahead the peer sent (highest - read_off), up to limit, and kept until fini or reset: the
 * window the caller advertises is the memory it commits.
 */
#define VEGA__QUIC_RECVBUF_MAX_ISLANDS 4096

struct vega__quic_recvbuf {
    uint64_t read_off;   /* bytes the application consumed */
    uint64_t highest;    /* the largest offset + length received */
    uint64_t final_size; /* UINT64_MAX until a FIN (or RESET_STREAM) fixes it */
    uint64_t limit;      /* most bytes buffered beyond read_off (0 = unlimited); the caller may
                            raise it (e.g. with an auto-tuned window) between inserts */
    /* Implementation: the ring (ring[head] is the byte at read_off), the end of what is
     * contiguous from read_off, and the received ranges above that (all start > contig). */
    uint8_t *ring;
    size_t ring_cap, head;
    uint64_t contig;
    struct vega__quic_ranges islands;
    bool reset;               /* a RESET_STREAM arrived: data is dropped, nothing is readable */
    const vega_quic_mem *mem; /* the allocator of the ring and islands (NULL = libc) */
};

void vega__quic_recvbuf_init(struct vega__quic_recvbuf *b, uint64_t limit,
                             const vega_quic_mem *mem);
void vega__quic_recvbuf_fini(struct vega__quic_recvbuf *b);

/*
 * Stores data at off (fin: the stream ends at off + len). Bytes below read_off are ignored.
 * Returns 0; VEGA_ERR_PROTO with *wire_err FINAL_SIZE_ERROR (data beyond a known final size,
 * a FIN that moves it or lies below highest, RFC 9000 §4.5), FLOW_CONTROL_ERROR (beyond
 * read_off + limit when limit is set, or a new island past VEGA__QUIC_RECVBUF_MAX_ISLANDS; for
 * CRYPTO the caller maps it to CRYPTO_BUFFER_EXCEEDED), FRAME_ENCODING_ERROR (off + len above
 * 2^62 - 1); -ENOMEM. A refused frame changes nothing. Frames with len 0 are checked the same
 * way (their end is off).
 */
int vega__quic_recvbuf_insert(struct vega__quic_recvbuf *b, uint64_t off, const uint8_t *data,
                              size_t len, bool fin, uint64_t *wire_err);

/* Bytes readable in order now (from read_off). */
uint64_t vega__quic_recvbuf_readable(const struct vega__quic_recvbuf *b);

/* The first contiguous readable piece without copying: *p points inside the buffer (valid
 * until the next insert/consume), returns its length (0: nothing readable). */
size_t vega__quic_recvbuf_peek(const struct vega__quic_recvbuf *b, const uint8_t **p);

/* Consumes n readable bytes (n <= readable), freeing chunks as they empty. */
void vega__quic_recvbuf_consume(struct vega__quic_recvbuf *b, size_t n);

/* Copies up to cap in-order bytes out and consumes them. *fin: true when this read reached the
 * final size (everything read). Returns the bytes copied. */
size_t vega__quic_recvbuf_read(struct vega__quic_recvbuf *b, uint8_t *out, size_t cap, bool *fin);

/* A RESET_STREAM's final size: checked like a FIN (returns as insert), then buffered data is
 * dropped. */
int vega__quic_recvbuf_reset(struct vega__quic_recvbuf *b, uint64_t final_size, uint64_t *wire_err);

/* True when every byte up to a known final size has arrived (not necessarily read). */
bool vega__quic_recvbuf_is_complete(const struct vega__quic_recvbuf *b);

/* Frees the ring when nothing is buffered (e.g. for a stream gone idle after a bulk transfer);
 * the next insert allocates again. */
void vega__quic_recvbuf_trim(struct vega__quic_recvbuf *b);

/* ---- send buffer ----------------------------------------------------------------------------- */

/*
 * Bytes the application wrote, kept from the lowest unacknowledged offset until acknowledged.
 * Offsets: [acked_base, written) are held; fresh data starts at next_off; lost ranges wait in
 * `lost` and go out again before fresh data; acknowledged ranges above acked_base wait in
 * `acked` until the base can move.
 *
 * Storage: written bytes are either copied into a ring (vega__quic_sendbuf_write) or
 * referenced where the application keeps them (vega__quic_sendbuf_write_ref, zero-copy), in any
 * order. Referenced pieces are recorded as segments in stream order; every byte outside them is
 * in the ring, whose bytes run in stream order too, so a stream that only copies records no
 * segment at all. A referenced piece is released (its callback, once) when acked_base passes
 * its end, when the buffer is dropped (a reset stream) or at fini.
 */
#define VEGA__QUIC_SENDBUF_MAX_REFS 1024 /* referenced pieces held per stream */

/* The bytes a connection's stream send buffers hold together (vega_quic_conn_set_send_budget):
 * each buffer adds what it takes and subtracts what acknowledgements or a drop free, so held
 * is exact at every moment. With a budget, a buffer's room is also cut to what the pool has
 * left, except that one holding less than VEGA_QUIC_SEND_BUDGET_FLOOR may always fill up to
 * it: a stream never waits for others to drain, so the pool holds at most budget + streams x
 * floor. */
struct vega__quic_sendpool {
    uint64_t held;   /* written - acked_base over the pool's buffers (a dropped one: 0) */
    uint64_t budget; /* 0 = no limit */
    bool blocked;    /* a write was cut short while the budget was set: wake writers once */
    bool freed;      /* held went down since blocked was last looked at */
};

struct vega__quic_sendseg {
    uint64_t off, end;  /* the stream bytes [off, end) it holds */
    uint64_t rmark;     /* ring bytes written before off (ring positions, see below) */
    const uint8_t *ext; /* the application's bytes: ext[0] is offset off */
    vega_quic_release_fn release;
    void *user;
};

struct vega__quic_sendbuf {
    uint64_t acked_base; /* everything below is acknowledged and freed */
    uint64_t next_off;   /* the first byte never sent */
    uint64_t written;    /* the end of what the application wrote */
    bool fin;            /* the application closed the stream: final size = written */
    bool fin_sent, fin_acked, fin_lost;
    bool dropped;   /* vega__quic_sendbuf_drop ran: offsets count on, no byte is held */
    uint64_t limit; /* most bytes held (written - acked_base), copied or referenced; 0 = none */
    struct vega__quic_ranges lost, acked;
    /* Implementation. The ring: copied bytes at ring positions [rbase, rtail) (a ring position
     * counts every byte ever copied in), data[head] holding position rbase; its size a power of
     * two grown by doubling (never beyond the power of two covering limit), so steady-state
     * writes do not allocate. Copied bytes before the first segment sit at positions rbase +
     * (offset - acked_base); those after segment s at s.rmark + (offset - s.end). */
    uint8_t *data;
    size_t cap, head;
    uint64_t rbase, rtail;
    /* The referenced segments, a ring of scap (a power of two) slots from sfirst. */
    struct vega__quic_sendseg *segs;
    size_t sfirst, nsegs, scap;
    const vega_quic_mem *mem; /* the allocator of the ring, segments and range sets (NULL = libc) */
    struct vega__quic_sendpool *pool; /* the connection's, for stream buffers (NULL: none) */
    /* Bytes to send again that the range sets had no memory to record (a lost range, or an
     * acknowledged one whose record was dropped): one range, widened to cover every such
     * piece and what lies between (sending held bytes twice is harmless). Empty when
     * spill_start >= spill_end. */
    uint64_t spill_start, spill_end;
};

void vega__quic_sendbuf_init(struct vega__quic_sendbuf *b, uint64_t limit,
                             const vega_quic_mem *mem);
void vega__quic_sendbuf_fini(struct vega__quic_sendbuf *b);

/* Room left under limit and, with a pool that has a budget, under what the pool has left (at
 * least the floor's rest; UINT64_MAX when unlimited). */
uint64_t vega__quic_sendbuf_room(const struct vega__quic_sendbuf *b);

/* Appends up to len bytes (as many as fit under limit), copied. Returns the bytes taken (0 after
 * fin or when full); -ENOMEM. */
vega_ssize vega__quic_sendbuf_write(struct vega__quic_sendbuf *b, const uint8_t *data, size_t len);

/* Appends up to len bytes (as many as fit under limit) by reference: data must stay valid and
 * unchanged until release(user, data, taken) is called (release may be NULL). Returns the bytes
 * taken (0 after fin, when full, or when VEGA__QUIC_SENDBUF_MAX_REFS pieces are held: release is
 * then not called); -ENOMEM (nothing taken). */
vega_ssize vega__quic_sendbuf_write_ref(struct vega__quic_sendbuf *b, const uint8_t *data,
                                        size_t len, vega_quic_release_fn release, void *user);

/* Frees what lies below base, which becomes acked_base (on_acked's last step): referenced
 * pieces wholly below it are released, the ring's bytes below it freed. */
void vega__quic_sendbuf_free_below(struct vega__quic_sendbuf *b, uint64_t base);

/* Releases every byte held (referenced pieces through their callbacks, the ring freed): the
 * stream was reset and nothing will be sent again. Offsets, the FIN and the range sets stay;
 * copy and peek must not be called afterwards. */
void vega__quic_sendbuf_drop(struct vega__quic_sendbuf *b);

/* Marks the end of the stream (no more writes). */
void vega__quic_sendbuf_finish(struct vega__quic_sendbuf *b);

/*
 * What to send next: the lowest lost range first (retransmission), else fresh bytes from
 * next_off below max_off (the flow control limit; retransmissions ignore it). At most max_len
 * bytes. *fin: the chunk ends the stream (also for a lone FIN with len 0, when only the FIN is
 * left to (re)send). Returns true with *off, *len, *fin set, or false when there is nothing to
 * send (or only fresh data blocked by max_off: *blocked is then set, may be NULL).
 */
bool vega__quic_sendbuf_next(const struct vega__quic_sendbuf *b, uint64_t max_off, size_t max_len,
                             uint64_t *off, size_t *len, bool *fin, bool *blocked);

/* Copies bytes [off, off + len) (held: off >= acked_base, off + len <= written) out. */
void vega__quic_sendbuf_copy(const struct vega__quic_sendbuf *b, uint64_t off, size_t len,
                             uint8_t *out);

/* Zero-copy view of held bytes from off (same precondition as copy): *p points into the ring or
 * a referenced piece (valid until the next write or on_acked); returns how many of the len bytes
 * are contiguous there (the rest continues at off + the returned length). */
size_t vega__quic_sendbuf_peek(const struct vega__quic_sendbuf *b, uint64_t off, size_t len,
                               const uint8_t **p);

/* [off, off + len) (and the FIN if fin) went out in a packet: removes it from the lost set
 * and advances next_off. Returns 0 or -ENOMEM. */
int vega__quic_sendbuf_on_sent(struct vega__quic_sendbuf *b, uint64_t off, size_t len, bool fin);

/* That packet was acknowledged: frees what becomes contiguous from acked_base. Returns 0 or
 * -ENOMEM (nothing recorded: the bytes are still lost and go out again); an acknowledged range
 * the set has no memory for goes to the spill range, to be sent and acknowledged again. */
int vega__quic_sendbuf_on_acked(struct vega__quic_sendbuf *b, uint64_t off, size_t len, bool fin);

/* That packet was lost: the parts not acknowledged since go to the lost set (sent first next
 * time), or to the spill range when the set has no memory. Returns 0. */
int vega__quic_sendbuf_on_lost(struct vega__quic_sendbuf *b, uint64_t off, size_t len, bool fin);

/* True when there is something to send (lost ranges, a lost FIN, or fresh bytes/FIN). */
bool vega__quic_sendbuf_has_pending(const struct vega__quic_sendbuf *b);

/* True when every byte and the FIN are acknowledged (the stream's send side is done). */
bool vega__quic_sendbuf_is_acked(const struct vega__quic_sendbuf *b);

/* Frees the ring and the segment slots when nothing is held (everything written is
 * acknowledged); the next write allocates again. */
void vega__quic_sendbuf_trim(struct vega__quic_sendbuf *b);

/* ---- receive flow control (RFC 9000 §4.1, §4.2) --------------------------------------------- */

/*
 * The limit we advertise for one stream or the connection, and its auto-tuning: when the
 * application consumed half the window and the last update was less than 4 RTTs ago, the
 * window doubles (up to window_max) before the new limit is computed.
 */
struct vega__quic_fc {
    uint64_t limit;    /* the MAX_DATA / MAX_STREAM_DATA value the peer has (or will) */
    uint64_t highest;  /* the largest offset received (connection: sum over streams) */
    uint64_t consumed; /* bytes the application read */
    uint64_t window, window_max;
    uint64_t last_update; /* ns, time of the last limit raise (0 = never) */
};

void vega__quic_fc_init(struct vega__quic_fc *fc, uint64_t window, uint64_t window_max);

/* The peer sent up to new_highest (>= the current highest: the caller only passes increases).
 * Returns false when that exceeds limit (FLOW_CONTROL_ERROR). */
bool vega__quic_fc_on_recv(struct vega__quic_fc *fc, uint64_t new_highest);

/* The application read n more bytes. */
void vega__quic_fc_on_consumed(struct vega__quic_fc *fc, uint64_t n);

/* True when a raised limit should be sent now (consumed + window - limit >= window / 2). */
bool vega__quic_fc_should_update(const struct vega__quic_fc *fc);

/* Raises limit to consumed + window (auto-tuning first with rtt, ns, and now) and returns it. */
uint64_t vega__quic_fc_update(struct vega__quic_fc *fc, uint64_t rtt, uint64_t now);

/* ---- stream table ---------------------------------------------------------------------------- */

/* A connection's streams by id: an open-addressing hash of pointers to caller structs whose
 * first member is the uint64_t id. Linear probing over a power-of-two table of (id, pointer)
 * slots (the id sits in the slot, so a probe touches no stream struct), ids mixed by a 64-bit
 * finalizer (stream ids are 4 * n + type). Deletions leave tombstones, so a walk stays valid
 * while the stream just returned is deleted. The table grows past 5/8 full (live + tombstones)
 * and shrinks below 1/8 on the next put. */
struct vega__quic_stream_slot {
    uint64_t id;
    void *s; /* NULL: empty; the map's tombstone marker: deleted */
};

struct vega__quic_stream_map {
    struct vega__quic_stream_slot *slots;
    size_t cap, n, tombs;     /* n: streams in the map */
    const vega_quic_mem *mem; /* the allocator of the slots (NULL = libc) */
};

void vega__quic_stream_map_init(struct vega__quic_stream_map *m, const vega_quic_mem *mem);
void vega__quic_stream_map_fini(struct vega__quic_stream_map *m);
/* Inserts s (its id must be absent: -EINVAL otherwise). Returns 0 or -ENOMEM. */
int vega__quic_stream_map_put(struct vega__quic_stream_map *m, void *s);
void *vega__quic_stream_map_get(const struct vega__quic_stream_map *m, uint64_t id);
/* Removes and returns the stream with id (NULL when absent). */
void *vega__quic_stream_map_del(struct vega__quic_stream_map *m, uint64_t id);
/* Iteration: *pos starts at 0; returns the next stream or NULL at the end. The map must not
 * change during a walk (except deleting the stream just returned). */
void *vega__quic_stream_map_next(const struct vega__quic_stream_map *m, size_t *pos);

#endif
