/* SPDX-License-Identifier: MIT */
/* HTTP/3 internals (RFC 9114): the connection, its streams (request streams, the peer's
 * unidirectional streams), frame parsing and the helpers the files of lib/h3 share. Private to
 * lib/h3 (tests may read it). */
#ifndef VEGA_H3_CORE_INT_H
#define VEGA_H3_CORE_INT_H

#include <vega/h3.h>

#include "base.h"
#include "qpack_int.h"

/* ---- wire constants (RFC 9114 §6.2, §7.2, §11.2; RFC 9204 §4.2; RFC 9218 §7) -------------- */

#define VEGA__H3_STREAM_CONTROL 0x00
#define VEGA__H3_STREAM_PUSH    0x01
#define VEGA__H3_STREAM_QENC    0x02
#define VEGA__H3_STREAM_QDEC    0x03

#define VEGA__H3_FRAME_DATA            0x00
#define VEGA__H3_FRAME_HEADERS         0x01
#define VEGA__H3_FRAME_CANCEL_PUSH     0x03
#define VEGA__H3_FRAME_SETTINGS        0x04
#define VEGA__H3_FRAME_PUSH_PROMISE    0x05
#define VEGA__H3_FRAME_GOAWAY          0x07
#define VEGA__H3_FRAME_MAX_PUSH_ID     0x0d
#define VEGA__H3_FRAME_PRIORITY_UPDATE 0xf0700 /* request stream */
#define VEGA__H3_FRAME_PRIORITY_PUSH   0xf0701 /* push stream */

#define VEGA__H3_SETTINGS_QPACK_MAX_TABLE_CAPACITY 0x01
#define VEGA__H3_SETTINGS_MAX_FIELD_SECTION_SIZE   0x06
#define VEGA__H3_SETTINGS_QPACK_BLOCKED_STREAMS    0x07
#define VEGA__H3_SETTINGS_ENABLE_CONNECT_PROTOCOL  0x08 /* RFC 9220 */
#define VEGA__H3_SETTINGS_H3_DATAGRAM              0x33 /* RFC 9297 */

#define VEGA__H3_VARINT_MAX ((1ull << 62) - 1)

/* Stream ids (RFC 9000 §2.1): the low bits say who opened it and which way it goes. */
static inline bool vega__h3_id_client_bidi(uint64_t id)
{
    return (id & 3) == 0;
}
static inline bool vega__h3_id_uni(uint64_t id)
{
    return (id & 2) != 0;
}
static inline bool vega__h3_id_server_initiated(uint64_t id)
{
    return (id & 1) != 0;
}

/* ---- frame.c: QUIC varints (RFC 9000 §16) and frame headers ------------------------------- */

size_t vega__h3_varint_len(uint64_t v);
/* Writes v (<= 2^62 - 1); returns the bytes, 0 when cap is too small. */
size_t vega__h3_varint_put(uint8_t *out, size_t cap, uint64_t v);
/* Reads a varint: returns its length, 0 when in ends first. */
size_t vega__h3_varint_get(const uint8_t *in, size_t len, uint64_t *v);
/* A reserved ("GREASE") type or setting: 0x1f * N + 0x21 (RFC 9114 §7.2.8, §7.2.4.1). */
static inline bool vega__h3_is_reserved(uint64_t t)
{
    return t >= 0x21 && (t - 0x21) % 0x1f == 0;
}

/* ---- streams ------------------------------------------------------------------------------- */

enum vega__h3_kind {
    VEGA__H3_REQUEST, /* a client-initiated bidirectional stream */
    VEGA__H3_UNI_NEW, /* a peer's unidirectional stream before its type is known */
    VEGA__H3_CONTROL, /* the peer's control stream */
    VEGA__H3_QENC,    /* the peer's QPACK encoder stream */
    VEGA__H3_QDEC,    /* the peer's QPACK decoder stream */
    VEGA__H3_IGNORED, /* input dropped (unknown stream type, or after a stream error) */
};

/* Where a request stream's message is (RFC 9114 §4.1). */
enum vega__h3_msg {
    VEGA__H3_MSG_HEAD,     /* waiting for the (final) head */
    VEGA__H3_MSG_BODY,     /* after it: DATA, trailers, or the end */
    VEGA__H3_MSG_TRAILERS, /* after the trailers: only the end (and unknown frames) */
};

struct vega__h3_stream {
    struct vega__h3_stream *next; /* hash chain */
    uint64_t id;
    uint8_t kind, msg;
    /* the frame being read */
    uint8_t hdr[16]; /* a frame header (or stream type) cut by the end of an input */
    uint8_t hdr_len;
    bool in_frame;
    bool first_frame_done; /* control stream: SETTINGS came first */
    uint64_t ftype, flen, fleft;
    uint8_t *buf; /* payload of a HEADERS or control frame arriving in pieces */
    size_t buf_len;
    /* the message */
    bool head_request; /* client: the request was HEAD (its response has no content) */
    bool connect;      /* a CONNECT request (a tunnel: DATA only once established) */
    bool no_content;   /* client: the final response has none (204, 304, HEAD) */
    bool has_cl;       /* a content-length was received */
    bool blocked;      /* a HEADERS frame waits for the QPACK encoder stream */
    bool fin_pending;  /* the stream's end came while blocked */
    bool head_started; /* a HEADERS frame began: QPACK may hold state for the stream */
    uint64_t cl, data_total;
};

/* ---- the connection ------------------------------------------------------------------------ */

struct vega_h3_conn {
    const vega_mem *mem;
    vega_h3_callbacks cb;
    void *ud;
    bool server;
    uint64_t max_section;
    size_t max_fields, max_control;
    bool connect_protocol, datagram, grease;
    uint64_t grease_seed;
    vega_qpack_decoder *qdec;
    vega_qpack_encoder *qenc;
    /* our unidirectional streams */
    bool bound;
    uint64_t ctrl_id, qenc_id, qdec_id;
    struct vega__qp_buf ctrl_out;
    bool qenc_type_sent, qdec_type_sent;
    /* the peer */
    bool peer_ctrl, peer_qenc, peer_qdec;
    bool settings_received;
    vega_h3_settings peer;
    bool goaway_received, max_push_received;
    uint64_t goaway_in, max_push_id;
    bool goaway_sent;
    uint64_t goaway_out;
    uint64_t next_bidi; /* server: lowest client request stream id not seen yet */
    /* streams by id */
    struct vega__h3_stream **buckets;
    size_t nbuckets, nstreams;
    /* streams QPACK unblocked during the current call */
    uint64_t *unblocked;
    size_t nunblocked, unblocked_cap;
    /* outgoing fields with their pseudo-header fields in front */
    vega_http_field *wfields;
    size_t wfields_cap;
    char wfields_status[4]; /* the :status value being written */
    int failed;             /* sticky: VEGA_ERR_PROTO, VEGA_ERR_CALLBACK, -ENOMEM */
    uint64_t err;
    const char *reason;
};

/* A connection error (RFC 9114 §8): records the code, returns VEGA_ERR_PROTO. */
int vega__h3_fail(vega_h3_conn *c, uint64_t code, const char *reason);
/* A callback's result: nonzero fails the connection with VEGA_ERR_CALLBACK. */
int vega__h3_cb(vega_h3_conn *c, int rc);

/* streams.c */
struct vega__h3_stream *vega__h3_stream_find(const vega_h3_conn *c, uint64_t id);
struct vega__h3_stream *vega__h3_stream_new(vega_h3_conn *c, uint64_t id, uint8_t kind);
void vega__h3_stream_free(vega_h3_conn *c, struct vega__h3_stream *s);
/* Reads a frame header (RFC 9114 §7.1) from what s kept and in; returns the bytes of in it
 * used, with s->in_frame set (and ftype, flen, fleft) once the header is whole. */
size_t vega__h3_frame_header(struct vega__h3_stream *s, const uint8_t *in, size_t len);
/* A stream error (RFC 9114 §8): the stream's input is dropped from now on, QPACK forgets it,
 * on_stream_error tells the caller to reset it. Returns 0 or a connection-fatal code. */
int vega__h3_stream_error(vega_h3_conn *c, struct vega__h3_stream *s, uint64_t code);

/* control.c: the peer's control stream. Returns bytes used or a negative code. */
vega_ssize vega__h3_control_read(vega_h3_conn *c, struct vega__h3_stream *s, const uint8_t *in,
                                 size_t len, bool fin);
/* Our SETTINGS frame, queued on the control stream (after its type byte). */
int vega__h3_settings_queue(vega_h3_conn *c);

/* request.c: a request stream's frames. Returns bytes used (fewer when blocked) or negative. */
vega_ssize vega__h3_request_read(vega_h3_conn *c, struct vega__h3_stream *s, const uint8_t *in,
                                 size_t len, bool fin);
/* The end of a request stream after a complete message (or the error when incomplete). */
int vega__h3_request_end(vega_h3_conn *c, struct vega__h3_stream *s);

/* head.c: decoding a HEADERS payload, then validating and delivering it. Returns 0, the
 * positive VEGA_QPACK_BLOCKED, or a negative connection-fatal code (stream errors are reported
 * and return 0). */
int vega__h3_head(vega_h3_conn *c, struct vega__h3_stream *s, const uint8_t *in, size_t len);
/* Streams the QPACK encoder stream unblocked: decode and deliver their heads. */
int vega__h3_unblocked(vega_h3_conn *c);

/* validate.c: what RFC 9114 §4.1.2, §4.2, §4.3 make malformed. */
typedef enum vega__h3_role {
    VEGA__H3_ROLE_REQUEST,
    VEGA__H3_ROLE_RESPONSE,
    VEGA__H3_ROLE_TRAILERS,
} vega__h3_role;
/* Validates a received section into *h (fields, pseudo-header fields, content-length,
 * priority). Returns 0, or a reason string when malformed. */
const char *vega__h3_check_head(const vega_h3_conn *c, vega__h3_role role,
                                const vega_qpack_section *sec, vega_h3_head *h);
/* Checks an outgoing regular field: returns true when it may be sent. */
bool vega__h3_field_ok(const vega_http_field *f, bool request);
/* A token name in lowercase (RFC 9110 §5.1, RFC 9114 §4.2). */
bool vega__h3_name_ok(const char *p, size_t n);
/* A field value (RFC 9110 §5.5): no CTL but HTAB, no leading or trailing whitespace. */
bool vega__h3_value_ok(const char *p, size_t n);

/* priority.c: merges a Priority field value (RFC 9218 §4) into *p (members it carries
 * override). Returns 0, or VEGA_ERR_PROTO when it is not an RFC 8941 dictionary. */
int vega__h3_priority_merge(const char *s, size_t len, vega_h3_priority *p);

#endif
