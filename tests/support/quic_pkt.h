/* SPDX-License-Identifier: MIT */
/* A typed QUIC packet builder for tests: frames in (the wire API's vega_quic_frame, made with the
 * qf_* constructors), one protected packet out, as a peer would send it (RFC 9000 §17, §19;
 * RFC 9001 §5); and the way back, a packet opened into its frames. Tests say which frames they
 * send instead of writing their bytes. */
#ifndef VEGA_TEST_QUIC_PKT_H
#define VEGA_TEST_QUIC_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/quic.h>
#include <vega/quic_wire.h>

/* The packet to build: plain data; pointers are borrowed for the call. */
struct qpkt {
    vega_quic_pkt_type type; /* INITIAL, 0RTT, HANDSHAKE or 1RTT */
    uint32_t version;        /* long headers (0 = v1) */
    const uint8_t *dcid;
    size_t dcid_len;
    const uint8_t *scid; /* long headers */
    size_t scid_len;
    const uint8_t *token; /* Initial */
    size_t token_len;
    bool key_phase; /* 1-RTT */
    uint64_t pn;
    size_t pn_len;        /* 1..4 bytes on the wire; 0 = 4 */
    vega_quic_keys *keys; /* the sender's keys for this level */
    /* The payload is padded with PADDING (zeros) to at least this many bytes, and always to
     * what header protection needs to sample (4 - pn_len). */
    size_t min_payload;
};

/* The largest payload the builder takes (a 1500-byte datagram's worth). */
#define QPKT_MAX_PAYLOAD 1500

/*
 * Encodes frames[0..n) in order (vega_quic_frame_encode) as the payload, pads it, writes the
 * header and protects the packet into out. A STREAM or DATAGRAM frame without a length must be
 * the last one (as on the wire). Returns the packet length; VEGA_ERR_NOBUF (out or the payload
 * limit too small); -EINVAL (a frame the encoder refuses, a bad header).
 */
vega_ssize qpkt_build(const struct qpkt *p, const vega_quic_frame *frames, size_t n, uint8_t *out,
                      size_t cap);

/* As qpkt_build with the payload given as bytes: for frames the encoder would refuse (malformed
 * on purpose) and for a fuzzer's input. */
vega_ssize qpkt_build_raw(const struct qpkt *p, const uint8_t *payload, size_t len, uint8_t *out,
                          size_t cap);

/* Sets p up as connection c's next 1-RTT packet: its keys, the peer's connection ID it sends to,
 * its key phase and its next packet number, which this takes (so c's own next packet does not
 * reuse it). The result is a packet c could have sent, for c's peer to read. */
void qpkt_from_conn(struct qpkt *p, vega_quic_conn *c);

/* The keys c reads 1-RTT packets with and the largest packet number it received there: what
 * qpkt_open needs to read what c's peer sent. */
vega_quic_keys *qpkt_conn_rx_keys(vega_quic_conn *c, int64_t *largest_pn);

/*
 * Opens the first packet of a datagram (decrypted in place, so frames borrow from it): parses
 * the header (short_dcid_len: the receiver's connection ID length), removes protection with
 * keys (largest_pn: the largest packet number received in that space, -1 none) and decodes up
 * to max frames, PADDING included. pn: receives the packet number (may be NULL).
 * Returns the number of frames; VEGA_ERR_PROTO (malformed, or more than max frames);
 * VEGA_ERR_CRYPTO_AUTH (not these keys').
 */
vega_ssize qpkt_open(vega_quic_keys *keys, uint8_t *pkt, size_t len, size_t short_dcid_len,
                     int64_t largest_pn, vega_quic_frame *frames, size_t max, uint64_t *pn);

/* The first frame of type t in frames[0..n), or NULL. */
const vega_quic_frame *qpkt_find(const vega_quic_frame *frames, size_t n, vega_quic_frame_type t);

/* ---- frames (RFC 9000 §19, RFC 9221 §4): pointers are borrowed until the packet is built --- */

vega_quic_frame qf_padding(size_t len);
vega_quic_frame qf_ping(void);
/* ACK of the one range largest - first_range .. largest, no delay. */
vega_quic_frame qf_ack(uint64_t largest, uint64_t first_range);
/* STREAM with its length (and offset when off is not 0). */
vega_quic_frame qf_stream(uint64_t id, uint64_t off, const void *data, size_t len, bool fin);
vega_quic_frame qf_crypto(uint64_t off, const void *data, size_t len);
vega_quic_frame qf_reset_stream(uint64_t id, uint64_t error_code, uint64_t final_size);
vega_quic_frame qf_stop_sending(uint64_t id, uint64_t error_code);
vega_quic_frame qf_max_data(uint64_t max);
vega_quic_frame qf_max_stream_data(uint64_t id, uint64_t max);
vega_quic_frame qf_max_streams(bool bidi, uint64_t max);
/* NEW_CONNECTION_ID with cid (1..20 bytes) and a 16-byte reset token. */
vega_quic_frame qf_new_cid(uint64_t seq, uint64_t retire_prior_to, const uint8_t *cid,
                           size_t cid_len, const uint8_t *reset_token);
vega_quic_frame qf_retire_cid(uint64_t seq);
vega_quic_frame qf_path_challenge(const uint8_t data[8]);
vega_quic_frame qf_path_response(const uint8_t data[8]);
/* CONNECTION_CLOSE (app: the application variant); reason may be NULL. */
vega_quic_frame qf_close(bool app, uint64_t error_code, const char *reason);
vega_quic_frame qf_handshake_done(void);
vega_quic_frame qf_new_token(const uint8_t *token, size_t len);
/* DATAGRAM with its length. */
vega_quic_frame qf_datagram(const void *data, size_t len);

#endif
