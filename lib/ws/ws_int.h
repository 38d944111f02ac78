/* SPDX-License-Identifier: MIT */
/* Internals of the WebSocket core (lib/ws): the connection object shared by its files. */
#ifndef VEGA_WS_INT_H
#define VEGA_WS_INT_H

#include <zlib.h>

#include <vega/ws.h>

#include "base.h"

/* Bytes unmasked or inflated at a time before they are handed to on_data. */
#define VEGA__WS_SCRATCH 16384

/* Where the reader is (read.c). */
enum vega__ws_rstate {
    VEGA__WS_R_HEAD,    /* collecting a frame header (2..14 bytes) */
    VEGA__WS_R_PAYLOAD, /* inside a frame's payload */
    VEGA__WS_R_DONE,    /* the peer's Close arrived, or the connection failed: input ignored */
};

struct vega_ws_conn {
    vega_ws_callbacks cb;
    void *ud;
    vega_ws_conn_opts o;

    /* Receive: the frame being read. */
    enum vega__ws_rstate rstate;
    uint8_t hdr[14];
    size_t hdr_len;
    uint8_t opcode;
    bool fin, masked;
    uint8_t mask[4];
    uint64_t plen, pgot;
    /* Receive: the data message being read. */
    bool msg_open, msg_compressed;
    vega_ws_msg_type msg_type;
    uint64_t msg_size;
    uint32_t utf8; /* vega__ws_utf8 state: 0 = at a character boundary */
    /* Receive: a control frame's payload, gathered. */
    uint8_t ctl[VEGA_WS_MAX_CONTROL];
    size_t ctl_len;
    /* Receive: the peer's Close. */
    bool close_received;
    unsigned peer_code;

    /* Failure (sticky). */
    int fail_rc;
    vega_ws_error err;

    /* Send: the queue of encoded frames, q[q_off..q_len). */
    uint8_t *q;
    size_t q_off, q_len, q_cap;
    bool close_sent;
    bool send_open; /* a fragmented message of ours is open */

    /* permessage-deflate (deflate.c). */
    z_stream tx, rx;
    bool tx_init, rx_init;
    uint8_t *zout; /* inflated output, VEGA__WS_SCRATCH bytes (never the scratch, which may
                      hold the masked input being inflated) */
    uint8_t *zbuf; /* compressed output of one submit */
    size_t zbuf_cap;

    uint8_t scratch[VEGA__WS_SCRATCH];
};

/* UTF-8 (utf8.c): checks len bytes continuing from *state (0 at a character boundary).
 * Returns false at the first byte that cannot be part of valid UTF-8 (RFC 3629); *state then
 * is unspecified. A message ends valid only with *state 0. */
bool vega__ws_utf8_check(uint32_t *state, const uint8_t *p, size_t len);

/* XORs len bytes with the mask, starting at mask offset off (0..3). */
void vega__ws_mask(uint8_t *p, size_t len, const uint8_t mask[4], size_t off);

/* Queueing (conn.c): one whole frame. b0: FIN, RSV1 and opcode. force: past max_send_queue
 * (a Close the core sends on failure). Returns 0, VEGA_ERR_FULL, -ENOMEM. */
int vega__ws_queue_frame(vega_ws_conn *c, uint8_t b0, const uint8_t *payload, size_t len,
                         bool force);
/* Queues our Close (code 0: none) whatever the queue holds; marks close_sent. */
int vega__ws_queue_close(vega_ws_conn *c, unsigned code, const uint8_t *reason, size_t len);

/* permessage-deflate (deflate.c). */
int vega__ws_deflate_init(vega_ws_conn *c);
void vega__ws_deflate_fini(vega_ws_conn *c);
/* Compresses one fragment's data into c->zbuf; *out_len gets the payload length (the
 * 00 00 ff ff tail stripped at the end of a message, RFC 7692 §7.2.1). Returns 0, -ENOMEM,
 * VEGA_ERR_FULL (the bound passes max_send_queue), VEGA_ERR_INTERNAL. */
int vega__ws_deflate_fragment(vega_ws_conn *c, const uint8_t *in, size_t len, bool fin,
                              size_t *out_len);
/* Inflates a piece of a compressed message (end: append the tail and finish the message) and
 * hands what comes out to emit. Returns 0 or emit's / the failure's code. */
int vega__ws_inflate(vega_ws_conn *c, const uint8_t *in, size_t len, bool end,
                     int (*emit)(vega_ws_conn *c, const uint8_t *p, size_t n));

#endif
