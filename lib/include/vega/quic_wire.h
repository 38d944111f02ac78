/* SPDX-License-Identifier: MIT */
/* QUIC wire layer, sans I/O: v1 (RFC 9000, RFC 9001) and v2 (RFC 9369) variable-length
 * integers, packet numbers, packet headers (RFC 8999 invariants), Version Negotiation, Initial
 * secrets, packet and header protection, Retry integrity, frames (with RFC 9221 DATAGRAM) and
 * transport parameters (with RFC 9368 version_information). Pure functions over caller buffers:
 * no I/O, clock, randomness or global state, and no allocation except for libcrypto contexts
 * (inside vega_quic_keys, and a transient one per Retry tag). The connection API, and the
 * versions, limits and transport error codes both layers share, are <vega/quic.h>. */
#ifndef VEGA_QUIC_WIRE_H
#define VEGA_QUIC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/crypto.h>
#include <vega/err.h>
#include <vega/export.h>
#include <vega/quic.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Errors. Return values are 0 (or a byte count) on success and negative on failure:
 * VEGA_ERR_PROTO (the peer's bytes are malformed or forbidden), VEGA_ERR_NOBUF (the output does
 * not fit), -EINVAL (a caller value out of range), VEGA_ERR_CRYPTO_* from crypto.h.
 * The QUIC transport error code a peer violation maps to (RFC 9000 §20.1) is a wire value: it is
 * reported through a `uint64_t *wire_err` out-parameter (may be NULL), set whenever
 * VEGA_ERR_PROTO is returned by a function that has one, never packed into the return value.
 *
 * Threading: every function is reentrant; a vega_quic_keys is used by one thread at a time.
 */

/* ---- limits of the wire format -------------------------------------------------------------- */

#define VEGA_QUIC_MAX_PN        ((1ull << 62) - 1)
#define VEGA_QUIC_RETRY_TAG_LEN 16
/* The longest Retry packet vega_quic_retry_verify/write handle (the pseudo-packet is built on
 * the stack); real ones are a few hundred bytes. */
#define VEGA_QUIC_RETRY_MAX_LEN 2048

/* ---- variable-length integers (RFC 9000 §16) ------------------------------------------------ */

/* Bytes the shortest encoding of v takes (1, 2, 4 or 8); 0 when v > VEGA_QUIC_MAX_VARINT.
 * Context: any. Since 0.1. */
VEGA_API size_t vega_quic_varint_len(uint64_t v);

/*
 * Reads one varint from in (any of the four lengths; a longer than necessary encoding is
 * valid, RFC 9000 §16). in: borrowed; v: receives the value.
 * Returns the bytes consumed (1..8); VEGA_ERR_PROTO (len is shorter than the encoding).
 * Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_varint_read(const uint8_t *in, size_t len, uint64_t *v);

/*
 * Writes v in its shortest encoding. out: borrowed.
 * Returns the bytes written; VEGA_ERR_NOBUF; -EINVAL (v > VEGA_QUIC_MAX_VARINT).
 * Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_varint_write(uint8_t *out, size_t cap, uint64_t v);

/*
 * Writes v in exactly n bytes (1, 2, 4 or 8), e.g. a Length field reserved before the payload
 * is known. Returns n; VEGA_ERR_NOBUF; -EINVAL (n not one of those, or v does not
 * fit in n bytes). Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_varint_write_n(uint8_t *out, size_t cap, uint64_t v, size_t n);

/* ---- packet numbers (RFC 9000 §17.1, Appendix A.2, A.3) ------------------------------------- */

/*
 * Bytes (1..4) to send packet number pn in, given the largest packet number the peer has
 * acknowledged (-1: none yet): enough for twice the unacknowledged range (Appendix A.2).
 * Returns 1..4, or 0 when pn cannot be encoded (more than 2^31 packets unacknowledged, or
 * pn <= largest_acked, or pn > VEGA_QUIC_MAX_PN). Context: any. Since 0.1.
 */
VEGA_API size_t vega_quic_pn_len(uint64_t pn, int64_t largest_acked);

/*
 * Recovers a full packet number from its pn_len-byte (1..4) truncation, given the largest
 * packet number received so far in this space (-1: none) (Appendix A.3).
 * Returns the packet number (never above VEGA_QUIC_MAX_PN). Context: any. Since 0.1.
 */
VEGA_API uint64_t vega_quic_pn_decode(uint64_t truncated, size_t pn_len, int64_t largest);

/* ---- packet headers (RFC 9000 §17, RFC 8999, RFC 9369 §3.2) --------------------------------- */

typedef enum vega_quic_pkt_type {
    VEGA_QUIC_PKT_INITIAL = 1,
    VEGA_QUIC_PKT_0RTT,
    VEGA_QUIC_PKT_HANDSHAKE,
    VEGA_QUIC_PKT_RETRY,
    VEGA_QUIC_PKT_VN,      /* Version Negotiation (version 0) */
    VEGA_QUIC_PKT_1RTT,    /* short header */
    VEGA_QUIC_PKT_UNKNOWN, /* long header of a version this library does not speak: only the
                              RFC 8999 invariants (version, DCID, SCID) are parsed */
} vega_quic_pkt_type;

/*
 * A parsed (or to-be-written) packet header: plain data. Parsed pointers borrow from the
 * datagram given to vega_quic_hdr_parse. The bits under header protection (the packet number
 * length, reserved bits, key phase) and the packet number itself are not in it: they come out
 * of vega_quic_packet_unprotect.
 */
typedef struct vega_quic_hdr {
    vega_quic_pkt_type type;
    uint8_t first;       /* parse: the first byte as received (still protected) */
    uint32_t version;    /* long headers; 0 for short headers (and VN) */
    const uint8_t *dcid; /* destination connection ID */
    size_t dcid_len;     /* 0..20; up to 255 for VN and UNKNOWN (RFC 8999) */
    const uint8_t *scid; /* source connection ID (long headers) */
    size_t scid_len;
    const uint8_t *token; /* Initial: the token (may be empty); Retry: the Retry token */
    size_t token_len;
    uint64_t length;         /* Initial, 0-RTT, Handshake: the Length field (packet number and
                                protected payload) */
    size_t pn_offset;        /* parse: offset of the packet number from the packet start */
    size_t pkt_len;          /* parse: bytes this packet takes in the datagram */
    const uint8_t *versions; /* VN: the Supported Version list, 4 bytes each, big-endian */
    size_t nversions;
    const uint8_t *retry_tag; /* Retry: the 16-byte integrity tag (last bytes of the packet) */
    bool spin;                /* write, 1-RTT: the spin bit (§17.4) */
    bool key_phase;           /* write, 1-RTT: the key phase bit (§17.4) */
} vega_quic_hdr;

/*
 * Parses the packet at the start of in (a datagram, or what is left of it after earlier
 * coalesced packets). short_dcid_len: the length of this endpoint's connection IDs, which a
 * short header does not carry. in: borrowed (h points into it).
 * Checks: the fixed bit is 1 (except VN), v1/v2 connection IDs are at most 20 bytes, the Length
 * field fits in what is left of the datagram, a Retry has room for its tag, a VN list is a whole
 * number of versions. A long header packet ends after Length bytes (h->pkt_len); short headers,
 * Retry, VN and UNKNOWN take the rest of the datagram.
 * Returns 0; VEGA_ERR_PROTO (malformed: drop the rest of the datagram, §12.2).
 * Context: any. Since 0.1.
 */
VEGA_API int vega_quic_hdr_parse(vega_quic_hdr *h, const uint8_t *in, size_t len,
                                 size_t short_dcid_len);

/*
 * Splits a datagram into its coalesced packets (RFC 9000 §12.2) with vega_quic_hdr_parse.
 * out: receives up to max headers. Parsing stops at a malformed packet (what came before is
 * still returned), at a packet whose Destination CID differs from the first one's (§12.2:
 * receivers SHOULD ignore those), or when max is reached.
 * Returns the number of packets parsed (>= 1); VEGA_ERR_PROTO when the first one is malformed
 * or the datagram is empty; -EINVAL (max 0).
 * Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_dgram_split(const uint8_t *dgram, size_t len, size_t short_dcid_len,
                                          vega_quic_hdr *out, size_t max);

/* The header length vega_quic_hdr_write would produce, packet number included (pn_len 1..4);
 * 0 for bad arguments. Context: any. Since 0.1. */
VEGA_API size_t vega_quic_hdr_len(const vega_quic_hdr *h, size_t pn_len);

/*
 * Writes an Initial, 0-RTT, Handshake or 1-RTT header up to and including the packet number,
 * unprotected, for h->version (v1 or v2 long-header type bits; 1-RTT ignores version). Uses
 * type, version, dcid, scid, token (Initial), length (long: the Length field, always written in
 * 2 bytes below 16384, else 4 or 8, so it can be computed before the payload is written), spin
 * and key_phase (1-RTT). pn is written truncated to pn_len (1..4) bytes; reserved bits are 0.
 * Returns the header length; VEGA_ERR_NOBUF; -EINVAL (type Retry/VN/UNKNOWN, an
 * unsupported version, a CID above 20 bytes, pn_len not 1..4, length above the varint range).
 * Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_hdr_write(uint8_t *out, size_t cap, const vega_quic_hdr *h,
                                        size_t pn_len, uint64_t pn);

/*
 * Writes a Version Negotiation packet (RFC 9000 §17.2.1): the first byte is 0x80 | (unused &
 * 0x7f) (the rest is arbitrary; pass random bits), version 0, the connection IDs (dcid = the
 * client's SCID, scid = the client's DCID: up to 255 bytes each), then versions[0..n).
 * Returns the length; VEGA_ERR_NOBUF; -EINVAL (n 0, a CID above 255 bytes).
 * Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_vn_write(uint8_t *out, size_t cap, uint8_t unused,
                                       const uint8_t *dcid, size_t dcid_len, const uint8_t *scid,
                                       size_t scid_len, const uint32_t *versions, size_t n);

/* Version i (0 <= i < h->nversions) of a parsed VN packet. Context: any. Since 0.1. */
VEGA_API uint32_t vega_quic_hdr_vn_version(const vega_quic_hdr *h, size_t i);

/* ---- packet protection (RFC 9001 §5, RFC 9369 §3.3) ----------------------------------------- */

/* Key material for one direction of one encryption level: plain data (wipe it when done). */
typedef struct vega_quic_key_material {
    uint8_t key[VEGA_CRYPTO_AEAD_MAX_KEY_LEN];
    uint8_t iv[VEGA_CRYPTO_AEAD_NONCE_LEN];
    uint8_t hp[VEGA_CRYPTO_AEAD_MAX_KEY_LEN];
    size_t key_len; /* also the hp key length */
} vega_quic_key_material;

/*
 * Initial secrets (RFC 9001 §5.2): HKDF-Extract with the version's salt over the client's
 * first Destination Connection ID, then "client in" / "server in". dcid: borrowed (0..20
 * bytes); client, server: receive 32 bytes each (either may be NULL).
 * Returns 0; -EINVAL (unsupported version, dcid above 20 bytes);
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_initial_secrets(uint32_t version, const uint8_t *dcid, size_t dcid_len,
                                       uint8_t *client, uint8_t *server);

/*
 * Derives key, iv and hp from a traffic secret (RFC 9001 §5.1) with the version's labels
 * ("quic key"/"quic iv"/"quic hp", or "quicv2 ..."), hashing with SHA-256 (AES-128-GCM,
 * ChaCha20-Poly1305) or SHA-384 (AES-256-GCM). secret: borrowed, the hash length.
 * Returns 0; -EINVAL (unsupported version or alg, wrong secret length);
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_key_material_derive(vega_quic_key_material *m, uint32_t version,
                                           vega_crypto_aead_alg alg, const uint8_t *secret,
                                           size_t secret_len);

/*
 * The next generation's secret for a key update (RFC 9001 §6.1, "quic ku" / "quicv2 ku").
 * secret, out: borrowed, the hash length each (may be the same buffer).
 * Returns 0; -EINVAL; VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_secret_update(uint32_t version, vega_crypto_aead_alg alg,
                                     const uint8_t *secret, size_t secret_len, uint8_t *out);

/* Packet protection keys (opaque): an AEAD and a header protection context plus the iv. */
typedef struct vega_quic_keys vega_quic_keys;

/*
 * Creates keys from a traffic secret (vega_quic_key_material_derive, then the contexts).
 * secret: borrowed. out: receives the keys, owned by the caller (vega_quic_keys_free).
 * Returns 0; -EINVAL; -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any. Since 0.1.
 */
VEGA_API int vega_quic_keys_new(vega_quic_keys **out, uint32_t version, vega_crypto_aead_alg alg,
                                const uint8_t *secret, size_t secret_len);

/*
 * Creates the Initial keys (AES-128-GCM) for the packets one side sends: the server's when
 * server is true, else the client's. dcid: borrowed, the client's first Destination CID.
 * Returns as vega_quic_keys_new. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_keys_new_initial(vega_quic_keys **out, uint32_t version, const uint8_t *dcid,
                                        size_t dcid_len, bool server);

/* Frees k (NULL is fine), wiping the key material. Context: any. Since 0.1. */
VEGA_API void vega_quic_keys_free(vega_quic_keys *k);

/*
 * Protects one packet in place (RFC 9001 §5.3, §5.4). pkt holds the unprotected header as
 * vega_quic_hdr_write made it (the packet number of pn_len bytes ends at hdr_len; the first
 * byte's low two bits are pn_len - 1) followed by payload_len bytes of plaintext; cap is the
 * room in pkt. The payload is sealed with nonce iv ^ pn and the header as AAD, then the header
 * protection mask (sampled 4 bytes after the packet number starts) is applied.
 * Returns the packet length, hdr_len + payload_len + 16; VEGA_ERR_NOBUF; -EINVAL
 * (pn_len + payload_len below 4, so there is no sample: pad with PADDING frames; a bad
 * hdr_len); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: one thread at a time per k. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_packet_protect(vega_quic_keys *k, uint8_t *pkt, size_t cap,
                                             size_t hdr_len, uint64_t pn, size_t payload_len);

/* What vega_quic_packet_unprotect recovers. */
typedef struct vega_quic_unprotected {
    uint8_t first;      /* the unprotected first byte (key phase bit 0x04 for 1-RTT) */
    size_t pn_len;      /* 1..4 */
    uint64_t pn;        /* the full packet number */
    size_t payload_off; /* the plaintext payload, inside pkt */
    size_t payload_len;
} vega_quic_unprotected;

/*
 * Removes header and packet protection in place from one packet: pkt[0..pkt_len) with the
 * packet number at pn_offset (vega_quic_hdr's pkt_len and pn_offset). largest_pn: the largest
 * packet number received in this space (-1: none), to recover the full number.
 * Returns 0; VEGA_ERR_PROTO (too short to sample: drop it); VEGA_ERR_CRYPTO_AUTH (does not
 * authenticate: drop it; the header bytes are then restored and the payload zeroed);
 * VEGA_ERR_PROTO with *wire_err = PROTOCOL_VIOLATION (reserved bits non-zero after successful
 * decryption, RFC 9000 §17.2, §17.3.1); VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: one thread at a time per k. Since 0.1.
 */
VEGA_API int vega_quic_packet_unprotect(vega_quic_keys *k, uint8_t *pkt, size_t pkt_len,
                                        size_t pn_offset, int64_t largest_pn,
                                        vega_quic_unprotected *out, uint64_t *wire_err);

/* ---- Retry (RFC 9000 §17.2.5, RFC 9001 §5.8) ------------------------------------------------ */

/*
 * Computes the Retry Integrity Tag of a Retry packet (without its tag: retry_len bytes) for the
 * client's original Destination CID odcid (AES-128-GCM over the Retry pseudo-packet with the
 * version's fixed key and nonce). retry, odcid: borrowed; tag: receives 16 bytes.
 * Returns 0; -EINVAL (unsupported version, odcid above 20 bytes, retry_len above
 * VEGA_QUIC_RETRY_MAX_LEN - 37); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_retry_tag(uint32_t version, const uint8_t *odcid, size_t odcid_len,
                                 const uint8_t *retry, size_t retry_len, uint8_t *tag);

/*
 * Verifies a parsed Retry packet (h from vega_quic_hdr_parse, pkt its bytes) against odcid.
 * Returns 0; VEGA_ERR_CRYPTO_AUTH (wrong tag: discard it); -EINVAL (not a Retry,
 * or too long); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_retry_verify(const vega_quic_hdr *h, const uint8_t *pkt,
                                    const uint8_t *odcid, size_t odcid_len);

/*
 * Writes a whole Retry packet with its tag: h->version, dcid (the client's SCID), scid (the
 * server's new CID), token (non-empty); unused: the 4 low bits of the first byte (arbitrary).
 * Returns the length; VEGA_ERR_NOBUF; -EINVAL (empty token, CIDs above 20 bytes,
 * unsupported version, too long); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_retry_write(uint8_t *out, size_t cap, const vega_quic_hdr *h,
                                          uint8_t unused, const uint8_t *odcid, size_t odcid_len);

/* ---- frames (RFC 9000 §19, RFC 9221 §4) ----------------------------------------------------- */

typedef enum vega_quic_frame_type {
    VEGA_QUIC_FT_PADDING = 0x00,
    VEGA_QUIC_FT_PING = 0x01,
    VEGA_QUIC_FT_ACK = 0x02,
    VEGA_QUIC_FT_ACK_ECN = 0x03,
    VEGA_QUIC_FT_RESET_STREAM = 0x04,
    VEGA_QUIC_FT_STOP_SENDING = 0x05,
    VEGA_QUIC_FT_CRYPTO = 0x06,
    VEGA_QUIC_FT_NEW_TOKEN = 0x07,
    VEGA_QUIC_FT_STREAM = 0x08, /* 0x08..0x0f: the OFF/LEN/FIN bits are in vega_quic_frame */
    VEGA_QUIC_FT_MAX_DATA = 0x10,
    VEGA_QUIC_FT_MAX_STREAM_DATA = 0x11,
    VEGA_QUIC_FT_MAX_STREAMS_BIDI = 0x12,
    VEGA_QUIC_FT_MAX_STREAMS_UNI = 0x13,
    VEGA_QUIC_FT_DATA_BLOCKED = 0x14,
    VEGA_QUIC_FT_STREAM_DATA_BLOCKED = 0x15,
    VEGA_QUIC_FT_STREAMS_BLOCKED_BIDI = 0x16,
    VEGA_QUIC_FT_STREAMS_BLOCKED_UNI = 0x17,
    VEGA_QUIC_FT_NEW_CONNECTION_ID = 0x18,
    VEGA_QUIC_FT_RETIRE_CONNECTION_ID = 0x19,
    VEGA_QUIC_FT_PATH_CHALLENGE = 0x1a,
    VEGA_QUIC_FT_PATH_RESPONSE = 0x1b,
    VEGA_QUIC_FT_CONNECTION_CLOSE = 0x1c,     /* transport close */
    VEGA_QUIC_FT_CONNECTION_CLOSE_APP = 0x1d, /* application close */
    VEGA_QUIC_FT_HANDSHAKE_DONE = 0x1e,
    VEGA_QUIC_FT_DATAGRAM = 0x30,     /* no Length: runs to the end of the packet */
    VEGA_QUIC_FT_DATAGRAM_LEN = 0x31, /* with Length */
} vega_quic_frame_type;

/* One ACK range: packets smallest..largest, inclusive. */
typedef struct vega_quic_ack_range {
    uint64_t smallest, largest;
} vega_quic_ack_range;

typedef struct vega_quic_frame_ack {
    uint64_t largest;     /* Largest Acknowledged */
    uint64_t ack_delay;   /* encoded: scaled by the peer's ack_delay_exponent */
    uint64_t first_range; /* First ACK Range */
    uint64_t range_count; /* ACK Range Count: (Gap, ACK Range Length) pairs after the first */
    const uint8_t *gaps;  /* decode: those pairs as on the wire (validated); walk them with
                             vega_quic_ack_iter */
    size_t gaps_len;
    /* Encode: when ranges is set, it replaces largest, first_range, range_count and gaps:
     * nranges ranges in descending order, disjoint and not adjacent. */
    const vega_quic_ack_range *ranges;
    size_t nranges;
    uint64_t ect0, ect1, ce; /* ACK_ECN only */
} vega_quic_frame_ack;

/* A decoded frame: plain data; pointers borrow from the payload given to decode. */
typedef struct vega_quic_frame {
    vega_quic_frame_type type;
    union {
        struct {
            size_t len; /* bytes of consecutive PADDING, decoded as one frame */
        } padding;
        vega_quic_frame_ack ack; /* ACK and ACK_ECN */
        struct {
            uint64_t stream_id, error_code, final_size;
        } reset_stream;
        struct {
            uint64_t stream_id, error_code;
        } stop_sending;
        struct {
            uint64_t offset;
            const uint8_t *data;
            size_t len;
        } crypto;
        struct {
            const uint8_t *token;
            size_t len;
        } new_token;
        struct {
            uint64_t stream_id, offset;
            const uint8_t *data;
            size_t len;
            bool has_offset; /* OFF bit (encode: also set when offset != 0) */
            bool has_len;    /* LEN bit: false means the data runs to the end of the packet */
            bool fin;        /* FIN bit */
        } stream;
        struct {
            uint64_t max; /* MAX_DATA, MAX_STREAMS_*, DATA_BLOCKED, STREAMS_BLOCKED_* */
        } limit;
        struct {
            uint64_t stream_id, max; /* MAX_STREAM_DATA, STREAM_DATA_BLOCKED */
        } stream_limit;
        struct {
            uint64_t seq, retire_prior_to;
            uint8_t cid_len; /* 1..20 */
            uint8_t cid[VEGA_QUIC_MAX_CID_LEN];
            uint8_t reset_token[VEGA_QUIC_RESET_TOKEN_LEN];
        } new_cid;
        struct {
            uint64_t seq;
        } retire_cid;
        struct {
            uint8_t data[8];
        } path; /* PATH_CHALLENGE, PATH_RESPONSE */
        struct {
            uint64_t error_code;
            uint64_t frame_type; /* transport close only */
            const uint8_t *reason;
            size_t reason_len;
        } close;
        struct {
            const uint8_t *data;
            size_t len;
        } datagram;
    } u;
} vega_quic_frame;

/*
 * Decodes the frame at the start of in (a decrypted packet payload, or what is left of it).
 * Strict (RFC 9000 §12.4, §19): the frame type must be known and minimally encoded; every
 * field must be present; stream offsets plus lengths (CRYPTO too) at most 2^62 - 1; MAX_STREAMS
 * and STREAMS_BLOCKED at most 2^60; ACK ranges must not go below 0; NEW_CONNECTION_ID: CID 1..20
 * bytes, Retire Prior To <= Sequence Number; NEW_TOKEN non-empty. A run of PADDING decodes as one
 * frame. f: receives the frame, borrowing from in.
 * Returns the bytes consumed (> 0); VEGA_ERR_PROTO with *wire_err = FRAME_ENCODING_ERROR (unknown
 * type, truncated or malformed frame, out-of-range value) or PROTOCOL_VIOLATION (non-minimal
 * frame type).
 * Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_frame_decode(vega_quic_frame *f, const uint8_t *in, size_t len,
                                           uint64_t *wire_err);

/*
 * Encodes f, minimally (a STREAM or DATAGRAM frame without the length flag must be the last
 * frame of its packet: the caller's job). f: borrowed.
 * Returns the bytes written; VEGA_ERR_NOBUF; -EINVAL (a value out of its range,
 * a malformed gaps blob or ranges list, a CID length outside 1..20, a PADDING len of 0).
 * Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_frame_encode(const vega_quic_frame *f, uint8_t *out, size_t cap);

/* True when a frame of type t may be carried in a packet of type p (RFC 9000 §12.4 Table 3,
 * RFC 9221 §4). Context: any. Since 0.1. */
VEGA_API bool vega_quic_frame_allowed(vega_quic_frame_type t, vega_quic_pkt_type p);

/* True when a frame of type t is ack-eliciting (anything but PADDING, ACK, CONNECTION_CLOSE;
 * RFC 9002 §2). Context: any. Since 0.1. */
VEGA_API bool vega_quic_frame_is_ack_eliciting(vega_quic_frame_type t);

/*
 * Checks a whole decrypted payload of packet type p: at least one frame (§12.4), every frame
 * well formed and allowed in p. It does not act on any frame.
 * Returns 0; VEGA_ERR_PROTO with *wire_err (FRAME_ENCODING_ERROR or PROTOCOL_VIOLATION).
 * Context: any. Since 0.1.
 */
VEGA_API int vega_quic_payload_check(const uint8_t *payload, size_t len, vega_quic_pkt_type p,
                                     uint64_t *wire_err);

/* Walks the ranges of a decoded ACK frame, largest first. */
typedef struct vega_quic_ack_iter {
    const uint8_t *p, *end;
    uint64_t prev_smallest; /* smallest packet of the range yielded last */
    uint64_t left;          /* ranges still to yield */
    bool first;
    const vega_quic_frame_ack *ack;
} vega_quic_ack_iter;

/* Starts walking ack (decoded, so already validated). Context: any. Since 0.1. */
VEGA_API void vega_quic_ack_iter_init(vega_quic_ack_iter *it, const vega_quic_frame_ack *ack);

/* Yields the next range into r. Returns true, or false when there are no more.
 * Context: any. Since 0.1. */
VEGA_API bool vega_quic_ack_iter_next(vega_quic_ack_iter *it, vega_quic_ack_range *r);

/* ---- transport parameters (RFC 9000 §18, RFC 9221 §3, RFC 9368 §5) -------------------------- */

#define VEGA_QUIC_TP_MAX_VERSIONS 32 /* Available Versions kept from version_information */

typedef struct vega_quic_preferred_address {
    uint8_t ipv4[4];
    uint16_t ipv4_port;
    uint8_t ipv6[16];
    uint16_t ipv6_port;
    uint8_t cid_len; /* 1..20 */
    uint8_t cid[VEGA_QUIC_MAX_CID_LEN];
    uint8_t reset_token[VEGA_QUIC_RESET_TOKEN_LEN];
} vega_quic_preferred_address;

/* Transport parameters: plain data. vega_quic_tp_init sets the RFC defaults; has_* flags say
 * which optional ones are present. */
typedef struct vega_quic_tp {
    bool has_original_dcid, has_initial_scid, has_retry_scid;
    uint8_t original_dcid_len, initial_scid_len, retry_scid_len;
    uint8_t original_dcid[VEGA_QUIC_MAX_CID_LEN];
    uint8_t initial_scid[VEGA_QUIC_MAX_CID_LEN];
    uint8_t retry_scid[VEGA_QUIC_MAX_CID_LEN];
    uint64_t max_idle_timeout; /* ms; 0 = none */
    bool has_stateless_reset_token;
    uint8_t stateless_reset_token[VEGA_QUIC_RESET_TOKEN_LEN];
    uint64_t max_udp_payload_size; /* default 65527, at least 1200 */
    uint64_t initial_max_data;
    uint64_t initial_max_stream_data_bidi_local;
    uint64_t initial_max_stream_data_bidi_remote;
    uint64_t initial_max_stream_data_uni;
    uint64_t initial_max_streams_bidi; /* at most 2^60 */
    uint64_t initial_max_streams_uni;  /* at most 2^60 */
    uint64_t ack_delay_exponent;       /* default 3, at most 20 */
    uint64_t max_ack_delay;            /* ms; default 25, below 2^14 */
    bool disable_active_migration;
    bool has_preferred_address;
    vega_quic_preferred_address preferred_address;
    uint64_t active_connection_id_limit; /* default 2, at least 2 */
    uint64_t max_datagram_frame_size;    /* RFC 9221; 0 = DATAGRAM not supported */
    bool has_max_datagram_frame_size;
    bool has_version_info; /* RFC 9368 */
    uint32_t chosen_version;
    size_t n_available_versions;
    uint32_t available_versions[VEGA_QUIC_TP_MAX_VERSIONS];
} vega_quic_tp;

/* Sets every field to its default (RFC 9000 §18.2): absent optional ones, limits 0,
 * max_udp_payload_size 65527, ack_delay_exponent 3, max_ack_delay 25,
 * active_connection_id_limit 2. Context: any. Since 0.1. */
VEGA_API void vega_quic_tp_init(vega_quic_tp *tp);

/*
 * Encodes tp as the quic_transport_parameters extension body, leaving out values equal to
 * their defaults. from_server: who sends it (the server-only parameters are refused from a
 * client). tp: borrowed.
 * Returns the length; VEGA_ERR_NOBUF; -EINVAL (a value decode would reject, a
 * server-only parameter from a client). Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_tp_encode(const vega_quic_tp *tp, bool from_server, uint8_t *out,
                                        size_t cap);

/*
 * Decodes the peer's transport parameters into tp (initialised with the defaults first).
 * from_server: the peer is the server. Unknown (and GREASE) parameters are skipped.
 * Checks (RFC 9000 §7.4, §18.2): each parameter's value fills its length exactly, no known
 * parameter twice, no server-only parameter (original_destination_connection_id,
 * preferred_address, retry_source_connection_id, stateless_reset_token) from a client,
 * initial_source_connection_id present (and original_destination_connection_id from a server),
 * CIDs at most 20 bytes, max_udp_payload_size >= 1200, ack_delay_exponent <= 20,
 * max_ack_delay < 2^14, active_connection_id_limit >= 2, initial_max_streams_* <= 2^60,
 * preferred_address 41..60 bytes with a 1..20-byte CID, version_information a non-empty list of
 * non-zero versions (at most VEGA_QUIC_TP_MAX_VERSIONS available ones).
 * in: borrowed.
 * Returns 0; VEGA_ERR_PROTO with *wire_err = TRANSPORT_PARAMETER_ERROR.
 * Context: any. Since 0.1.
 */
VEGA_API int vega_quic_tp_decode(vega_quic_tp *tp, const uint8_t *in, size_t len, bool from_server,
                                 uint64_t *wire_err);

/* ---- encryption levels (RFC 9001 §4.1.4) ---------------------------------------------------- */

/* Encryption levels (RFC 9001 §4.1.4): one packet number space each, except 0-RTT and 1-RTT,
 * which share the application space. */
typedef enum vega_quic_level {
    VEGA_QUIC_LEVEL_INITIAL = 0,
    VEGA_QUIC_LEVEL_EARLY, /* 0-RTT */
    VEGA_QUIC_LEVEL_HANDSHAKE,
    VEGA_QUIC_LEVEL_APP, /* 1-RTT */
} vega_quic_level;
#define VEGA_QUIC_NLEVELS 4

#ifdef __cplusplus
}
#endif
#endif
