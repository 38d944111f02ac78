/* SPDX-License-Identifier: MIT */
/* Private to lib/h2: frame constants (RFC 9113 §4, §6), the connection and stream structs, and
 * the functions the files of the core share. */
#ifndef VEGA_H2_INT_H
#define VEGA_H2_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/h2.h>

#include "base.h"

/* ---- frames (§4.1, §6) ---- */

#define H2_HDR_LEN        9
#define H2_MAX_WINDOW     0x7fffffffu /* §6.9.1: 2^31 - 1 */
#define H2_DEFAULT_WINDOW 65535u
#define H2_MIN_FRAME_SIZE 16384u
#define H2_MAX_FRAME_SIZE 16777215u
#define H2_MAX_STREAM_ID  0x7fffffff
#define H2_GOAWAY_DEBUG   256  /* debug bytes kept or sent */
#define H2_PRIO_VALUE_MAX 1024 /* PRIORITY_UPDATE field value kept */
#define H2_CLOSED_RING    128  /* streams we reset, whose late frames are ignored */
#define H2_MAX_PINGS      8    /* our PINGs in flight timed for the RTT */
#define H2_SHUTDOWN_PING  0x766567612d736875ull /* "vega-shu": the shutdown's PING */

enum {
    H2_DATA = 0x0,
    H2_HEADERS = 0x1,
    H2_PRIORITY = 0x2,
    H2_RST_STREAM = 0x3,
    H2_SETTINGS = 0x4,
    H2_PUSH_PROMISE = 0x5,
    H2_PING = 0x6,
    H2_GOAWAY = 0x7,
    H2_WINDOW_UPDATE = 0x8,
    H2_CONTINUATION = 0x9,
    H2_PRIORITY_UPDATE = 0x10, /* RFC 9218 §7.1 */
};

enum {
    H2_F_END_STREAM = 0x1,
    H2_F_ACK = 0x1,
    H2_F_END_HEADERS = 0x4,
    H2_F_PADDED = 0x8,
    H2_F_PRIORITY = 0x20,
};

enum {
    H2_S_HEADER_TABLE_SIZE = 0x1,
    H2_S_ENABLE_PUSH = 0x2,
    H2_S_MAX_CONCURRENT_STREAMS = 0x3,
    H2_S_INITIAL_WINDOW_SIZE = 0x4,
    H2_S_MAX_FRAME_SIZE = 0x5,
    H2_S_MAX_HEADER_LIST_SIZE = 0x6,
    H2_S_ENABLE_CONNECT_PROTOCOL = 0x8, /* RFC 8441 §3 */
    H2_S_NO_RFC7540_PRIORITIES = 0x9,   /* RFC 9218 §2.1 */
};

struct h2_frame {
    uint32_t len;
    uint8_t type, flags;
    int32_t sid;
};

/* Frame header in and out (§4.1: the reserved bit is ignored on receipt, 0 when sent). */
void vega__h2_frame_parse(const uint8_t *in, struct h2_frame *f);
void vega__h2_frame_put(uint8_t *out, uint32_t len, uint8_t type, uint8_t flags, int32_t sid);
static inline uint32_t h2_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void h2_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* ---- the output queue: serialized frames waiting for room in the caller's buffer ---- */

/* Marks remember where each answer the peer's frames forced on us (ACKs, RST_STREAMs) ends, so
 * that their number in the queue is known and bounded (max_queued_control). */
struct h2_q {
    uint8_t *p;
    size_t off, len, cap; /* unsent bytes are p[off..len) */
    uint64_t in, out;     /* bytes ever appended and ever written */
    uint64_t *marks;      /* ring of end offsets (in `in` units) */
    size_t mfirst, mlen, mcap;
};

/* ---- flow control (§5.2, §6.9) ---- */

/* A receive window. The peer may send up to `limit` bytes in total; we grant more with
 * WINDOW_UPDATE as the application consumes. limit is signed: a smaller
 * SETTINGS_INITIAL_WINDOW_SIZE lowers it below what arrived (§6.9.2). */
struct h2_rwin {
    int64_t limit;
    uint64_t received, consumed;
    uint32_t window, max; /* the target window (auto-tuned) and its cap */
    vega_tstamp last_update;
};

/* ---- streams ---- */

/* One outgoing header section, copied at submit and encoded when written (HPACK's table must
 * change in the order blocks go out). */
struct h2_hblock {
    struct h2_hblock *next;
    bool end_stream;
    bool trailers; /* waits until the stream's data is out */
    size_t n;
    vega_hpack_field f[]; /* then the bytes of the names and values */
};

enum h2_rx {
    H2_RX_HEADERS,
    H2_RX_BODY,
    H2_RX_DONE
};

struct vega_h2_stream {
    int32_t id;
    vega_h2_stream_state state;
    void *user_data;
    bool hdr_sent; /* our first header block is out: the peer knows the stream */
    bool closing;  /* on_stream_close is running */
    /* receiving */
    enum h2_rx rx;
    bool rx_final;   /* client: the final response came */
    bool rx_no_body; /* DATA must be empty: the response to HEAD, 204, 304 */
    bool head_req;   /* client: the request was HEAD */
    bool connect;    /* CONNECT: a tunnel, content-length has no meaning */
    int64_t rx_cl;   /* content-length or -1 */
    uint64_t rx_body;
    struct h2_rwin rw;
    size_t unconsumed;
    /* sending */
    int64_t send_window;
    bool tx_final; /* a final response (server) or the request (client) is queued */
    bool tx_end;   /* END_STREAM is queued: nothing more may be submitted */
    struct h2_hblock *hq, *hq_tail;
    const uint8_t *span;
    size_t span_len, span_off;
    bool span_active, span_end;
    vega_tstamp stalled_since;
    /* the send queue (round robin) */
    struct vega_h2_stream *sq_prev, *sq_next;
    bool in_sq;
};

/* ---- the connection ---- */

struct h2_bucket {
    uint32_t tokens, burst, rate;
    vega_tstamp last;
};

enum h2_rstate {
    H2_R_PREFACE,
    H2_R_HEADER,
    H2_R_PAYLOAD,
    H2_R_DEAD
};

struct vega_h2_conn {
    vega_h2_opts o;
    const vega_h2_callbacks *cb;
    void *ud;
    bool server;
    vega_tstamp now;
    /* how it ended */
    int dead_rc; /* 0, or the error every later call returns */
    bool has_err;
    vega_h2_error err;
    /* settings */
    vega_h2_settings local, peer;
    bool local_acked, settings_out, peer_settings_seen;
    vega_tstamp settings_sent_at, settings_deadline;
    /* HPACK */
    vega_hpack_encoder *enc;
    vega_hpack_decoder *dec;
    /* streams, sorted by id (every stream is client-initiated: push is refused) */
    struct vega_h2_stream **streams;
    size_t nstreams, streams_cap;
    int32_t last_peer_id; /* server: the highest client stream id seen */
    int64_t next_id;      /* client: the next stream id to use (past 2^31 - 1: none left) */
    struct {
        int32_t id;
    } closed[H2_CLOSED_RING]; /* streams we reset recently */
    size_t closed_pos;
    /* flow control */
    int64_t send_window;
    struct h2_rwin rw;
    size_t unconsumed;
    vega_tstamp stalled_since;
    bool wu_retry; /* a WINDOW_UPDATE could not be queued: the next write tries again */
    uint64_t srtt;
    struct {
        uint64_t opaque;
        vega_tstamp at;
    } pings[H2_MAX_PINGS];
    size_t npings;
    /* reading */
    struct {
        enum h2_rstate st;
        size_t preface_got;
        uint8_t hdr[H2_HDR_LEN];
        size_t hdr_len;
        struct h2_frame f;
        size_t got;        /* payload bytes consumed */
        size_t body_start; /* payload offset where data / the fragment starts */
        size_t body_end;   /* ... and where padding starts */
        bool ignore;       /* the payload is skipped (after counting what it must count) */
        bool first_frame;  /* the peer's first frame must be SETTINGS (§3.4) */
        uint8_t small[H2_PRIO_VALUE_MAX + 8];
        size_t small_len;
        int32_t data_sid; /* DATA: the stream (0 = ignored) */
        bool end_done;    /* DATA: END_STREAM was handed out with the last bytes */
        size_t delivered; /* DATA: bytes handed to on_data (the rest is given back) */
    } rd;
    /* a header block being reassembled (HEADERS + CONTINUATION, §4.3) */
    struct {
        bool active;
        int32_t sid;
        bool end_stream;
        bool self_dep; /* the priority fields named the stream itself */
        uint32_t conts;
        uint8_t *buf;
        size_t len, cap;
    } hb;
    /* decoded fields of one block, copied (names and values in bytes, offsets in ents) */
    struct {
        uint8_t *bytes;
        size_t len, cap;
        struct h2_fent {
            uint32_t no, nl, vo, vl;
            vega_hpack_index idx;
        } * ents;
        size_t n, ecap;
        vega_hpack_field *out;
        size_t ocap;
        bool oom;
    } fs;
    /* writing */
    struct h2_q q;
    struct vega_h2_stream *sq_head, *sq_tail;
    bool goaway_sent, goaway_received;
    int32_t goaway_last_sent;  /* streams above it are ignored (after the final GOAWAY) */
    uint32_t goaway_last_recv; /* ours above it were not processed */
    int shutdown;              /* 0 none; 1 first GOAWAY and PING sent; 2 final GOAWAY sent */
    vega_tstamp shutdown_deadline;
    uint8_t fatal_goaway[H2_HDR_LEN + 8];
    size_t fatal_goaway_len, fatal_goaway_off;
    /* defenses */
    struct h2_bucket resets, glitches;
    uint64_t bytes_in, bytes_out;
};

/* ---- conn.c ---- */
/* Ends the connection for a connection error (§5.4.1): records code and reason, queues GOAWAY,
 * closes every stream. Returns VEGA_ERR_PROTO (or the first error if already dead). */
int vega__h2_conn_error(vega_h2_conn *c, uint32_t code, const char *reason);
/* The same for a failure of ours (-ENOMEM, VEGA_ERR_CALLBACK): GOAWAY INTERNAL_ERROR. */
int vega__h2_conn_fail(vega_h2_conn *c, int rc);
/* An invalid client preface: the connection ends without a GOAWAY (§3.4). */
int vega__h2_preface_error(vega_h2_conn *c);
/* The graceful shutdown's final GOAWAY (after its PING came back or timed out). */
int vega__h2_shutdown_final(vega_h2_conn *c);
/* Queues a GOAWAY with last_id and code (into the queue, or the reserved slot). */
int vega__h2_queue_goaway(vega_h2_conn *c, int32_t last_id, uint32_t code, const uint8_t *debug,
                          size_t len);

/* ---- queue.c ---- */
void vega__h2_q_free(struct h2_q *q, const vega_mem *mem);
/* Appends n bytes (uninitialised) and returns where they go, or NULL (-ENOMEM). */
uint8_t *vega__h2_q_push(struct h2_q *q, const vega_mem *mem, size_t n);
/* Marks the end of the queue as an answer forced by the peer. Returns 0 or -ENOMEM. */
int vega__h2_q_mark(struct h2_q *q, const vega_mem *mem);
/* Copies queued bytes into out[0..cap) and drops the marks they pass. Returns bytes copied. */
size_t vega__h2_q_drain(struct h2_q *q, uint8_t *out, size_t cap);
static inline size_t vega__h2_q_pending(const struct h2_q *q)
{
    return q->len - q->off;
}

/* ---- frame_write.c: frames into the queue ---- */
int vega__h2_put_settings(vega_h2_conn *c);
int vega__h2_put_settings_ack(vega_h2_conn *c);
int vega__h2_put_window_update(vega_h2_conn *c, int32_t sid, uint32_t inc);
/* forced: an answer to the peer's frame (counted against max_queued_control). */
int vega__h2_put_rst_stream(vega_h2_conn *c, int32_t sid, uint32_t code, bool forced);
int vega__h2_put_ping(vega_h2_conn *c, uint64_t opaque, bool ack);
int vega__h2_put_priority_update(vega_h2_conn *c, int32_t sid, const char *v, size_t len);
/* Encodes a header block as HEADERS + CONTINUATION frames on sid into the queue. */
int vega__h2_put_headers(vega_h2_conn *c, int32_t sid, const vega_hpack_field *f, size_t n,
                         bool end_stream);

/* ---- stream.c ---- */
struct vega_h2_stream *vega__h2_stream_find(const vega_h2_conn *c, int32_t id);
/* A new stream, inserted (ids only grow). Returns NULL for -ENOMEM. */
struct vega_h2_stream *vega__h2_stream_new(vega_h2_conn *c, int32_t id);
/* Closes s: on_stream_close, then it is gone. Returns 0 or VEGA_ERR_CALLBACK. */
int vega__h2_stream_close(vega_h2_conn *c, struct vega_h2_stream *s, uint32_t code,
                          vega_h2_close how);
/* Our side ended (END_STREAM sent) or the peer's did (received): moves along §5.1 and closes
 * the stream when both are. Returns 0 or VEGA_ERR_CALLBACK. */
int vega__h2_stream_local_end(vega_h2_conn *c, struct vega_h2_stream *s);
int vega__h2_stream_remote_end(vega_h2_conn *c, struct vega_h2_stream *s);
/* A stream error (§5.4.2): RST_STREAM code, the stream closed, counted against the reset
 * budget. s may be NULL (a closed stream: only the frame). Returns 0, VEGA_ERR_PROTO (the
 * budget ran out: the connection ended), VEGA_ERR_CALLBACK or -ENOMEM. */
int vega__h2_stream_error(vega_h2_conn *c, struct vega_h2_stream *s, int32_t sid, uint32_t code);
/* Remembers that we reset id, so its late frames are ignored (§5.1 "closed"). */
void vega__h2_closed_add(vega_h2_conn *c, int32_t id);
bool vega__h2_closed_has(const vega_h2_conn *c, int32_t id);
/* Where an id stands from our side: open (found), idle (never opened), or closed. */
enum h2_idstate {
    H2_ID_OPEN,
    H2_ID_IDLE,
    H2_ID_CLOSED
};
enum h2_idstate vega__h2_id_state(const vega_h2_conn *c, int32_t id, struct vega_h2_stream **s);
void vega__h2_hblocks_free(vega_h2_conn *c, struct vega_h2_stream *s);
/* The send queue. */
void vega__h2_sq_add(vega_h2_conn *c, struct vega_h2_stream *s);
void vega__h2_sq_remove(vega_h2_conn *c, struct vega_h2_stream *s);
/* Every stream, closed with how (the connection ended). */
int vega__h2_streams_close_all(vega_h2_conn *c, uint32_t code, vega_h2_close how);

/* ---- flow.c ---- */
void vega__h2_rwin_init(struct h2_rwin *w, uint32_t limit, uint32_t window, uint32_t max);
/* Counts n received bytes; false when they pass the window (FLOW_CONTROL_ERROR). */
bool vega__h2_rwin_take(struct h2_rwin *w, size_t n);
/* Gives n bytes back and queues a WINDOW_UPDATE for sid when one is due. */
int vega__h2_rwin_give(vega_h2_conn *c, struct h2_rwin *w, int32_t sid, size_t n);
/* Bytes received on a stream that nobody will read (padding, ignored or closed streams):
 * given back to the connection at once. */
int vega__h2_conn_give(vega_h2_conn *c, size_t n);
/* The peer's WINDOW_UPDATE or a new SETTINGS_INITIAL_WINDOW_SIZE unblocked s. */
void vega__h2_stream_unblocked(vega_h2_conn *c, struct vega_h2_stream *s);
void vega__h2_rtt_sample(vega_h2_conn *c, vega_tstamp sent_at);

/* ---- settings.c ---- */
/* Applies one entry of the peer's SETTINGS. Returns 0 or a connection error. */
int vega__h2_settings_apply(vega_h2_conn *c, uint16_t id, uint32_t v);
/* The peer acknowledged our SETTINGS: they are in force. */
int vega__h2_settings_acked(vega_h2_conn *c);
void vega__h2_settings_defaults(vega_h2_settings *s);

/* ---- read.c / recv.c / headers.c ---- */
int vega__h2_recv_data_start(vega_h2_conn *c);
int vega__h2_recv_data(vega_h2_conn *c, const uint8_t *p, size_t n, bool last);
int vega__h2_recv_data_end(vega_h2_conn *c);
int vega__h2_recv_small(vega_h2_conn *c);
int vega__h2_recv_settings_entry(vega_h2_conn *c, const uint8_t *e);
int vega__h2_recv_settings_end(vega_h2_conn *c);
int vega__h2_headers_start(vega_h2_conn *c);
int vega__h2_headers_fragment(vega_h2_conn *c, const uint8_t *p, size_t n);
/* HEADERS' priority fields are in rd.small: a dependency on itself is noted (§5.3.1). */
void vega__h2_headers_priority(vega_h2_conn *c);
int vega__h2_headers_end(vega_h2_conn *c);
void vega__h2_fs_free(vega_h2_conn *c);

/* ---- validate.c (§8.2, §8.3) ---- */
/* Checks a received section of kind and fills h (pseudo-headers out). Returns true when
 * well-formed. */
bool vega__h2_validate_in(vega_h2_conn *c, struct vega_h2_stream *s, vega_h2_head_kind kind,
                          vega_hpack_field *f, size_t n, vega_h2_head *h);
/* Checks fields we are asked to send as kind (the same rules, :protocol always allowed: the
 * caller checks the peer's setting). Returns 0 (h filled) or -EINVAL. */
int vega__h2_validate_out(const vega_h2_conn *c, vega_h2_head_kind kind, const vega_hpack_field *f,
                          size_t n, vega_h2_head *h);

/* ---- defense.c ---- */
void vega__h2_bucket_init(struct h2_bucket *b, uint32_t burst, uint32_t rate);
/* A stream reset the peer caused; VEGA_ERR_PROTO (ENHANCE_YOUR_CALM) when over budget. */
int vega__h2_count_reset(vega_h2_conn *c);
/* A frame that did nothing; VEGA_ERR_PROTO (ENHANCE_YOUR_CALM) when over budget. */
int vega__h2_count_glitch(vega_h2_conn *c, const char *what);

/* ---- write.c ---- */
/* Whether s has something it could send now (ignoring the connection window). */
bool vega__h2_stream_has_work(const struct vega_h2_stream *s);

#endif
