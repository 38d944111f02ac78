/* SPDX-License-Identifier: MIT */
/* QUIC core, sans I/O: the wire layer of QUIC v1 (RFC 9000, RFC 9001) and v2 (RFC 9369) —
 * variable-length integers, packet headers (RFC 8999 invariants), packet numbers, Initial
 * secrets, packet and header protection, Retry integrity, Version Negotiation, frames (with
 * RFC 9221 DATAGRAM) and transport parameters (with RFC 9368 version_information) — and the
 * TLS 1.3 key schedule (RFC 8446 §7.1) for QUIC's own handshake. Everything works on caller
 * buffers: no I/O, clock, randomness or global state, and no allocation except for libcrypto
 * contexts (inside vega_quic_keys, and a transient one per Retry tag). */
#ifndef VEGA_QUIC_H
#define VEGA_QUIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <vega/mem.h>
#include <vega/crypto.h>
#include <vega/err.h>
#include <vega/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Errors. Return values are 0 (or a byte count) on success and negative on failure:
 * VEGA_ERR_PROTO (the peer's bytes are malformed or forbidden), VEGA_ERR_NOBUF (the output does
 * not fit), VEGA_ERR_INVALID_ARG (a caller value out of range), VEGA_ERR_CRYPTO_* from crypto.h.
 * The QUIC transport error code a peer violation maps to (RFC 9000 §20.1) is a wire value: it is
 * reported through a `uint64_t *wire_err` out-parameter (may be NULL), set whenever
 * VEGA_ERR_PROTO is returned by a function that has one, never packed into the return value.
 *
 * Threading: every function is reentrant; a vega_quic_keys is used by one thread at a time.
 */

/* ---- versions and limits -------------------------------------------------------------------- */

#define VEGA_QUIC_V1 0x00000001u /* RFC 9000 */
#define VEGA_QUIC_V2 0x6b3343cfu /* RFC 9369 */

#define VEGA_QUIC_MAX_CID_LEN      20 /* v1/v2 connection IDs (RFC 9000 §17.2) */
#define VEGA_QUIC_MAX_VARINT       ((1ull << 62) - 1)
#define VEGA_QUIC_MAX_PN           ((1ull << 62) - 1)
#define VEGA_QUIC_RESET_TOKEN_LEN  16
#define VEGA_QUIC_RETRY_TAG_LEN    16
#define VEGA_QUIC_MIN_INITIAL_SIZE 1200 /* datagrams carrying a client Initial (§14.1) */
/* The longest Retry packet vega_quic_retry_verify/write handle (the pseudo-packet is built on
 * the stack); real ones are a few hundred bytes. */
#define VEGA_QUIC_RETRY_MAX_LEN 2048

/* True for the versions this library implements (v1 and v2). Context: any. Since 0.1. */
VEGA_API bool vega_quic_version_is_supported(uint32_t version);

/* Transport error codes (RFC 9000 §20.1): wire values, never return values. */
typedef enum vega_quic_transport_error {
    VEGA_QUIC_NO_ERROR = 0x0,
    VEGA_QUIC_INTERNAL_ERROR = 0x1,
    VEGA_QUIC_CONNECTION_REFUSED = 0x2,
    VEGA_QUIC_FLOW_CONTROL_ERROR = 0x3,
    VEGA_QUIC_STREAM_LIMIT_ERROR = 0x4,
    VEGA_QUIC_STREAM_STATE_ERROR = 0x5,
    VEGA_QUIC_FINAL_SIZE_ERROR = 0x6,
    VEGA_QUIC_FRAME_ENCODING_ERROR = 0x7,
    VEGA_QUIC_TRANSPORT_PARAMETER_ERROR = 0x8,
    VEGA_QUIC_CONNECTION_ID_LIMIT_ERROR = 0x9,
    VEGA_QUIC_PROTOCOL_VIOLATION = 0xa,
    VEGA_QUIC_INVALID_TOKEN = 0xb,
    VEGA_QUIC_APPLICATION_ERROR = 0xc,
    VEGA_QUIC_CRYPTO_BUFFER_EXCEEDED = 0xd,
    VEGA_QUIC_KEY_UPDATE_ERROR = 0xe,
    VEGA_QUIC_AEAD_LIMIT_REACHED = 0xf,
    VEGA_QUIC_NO_VIABLE_PATH = 0x10,
    VEGA_QUIC_VERSION_NEGOTIATION_ERROR = 0x11, /* RFC 9368 §10.2 */
    VEGA_QUIC_CRYPTO_ERROR = 0x100,             /* ..0x1ff: 0x100 + the TLS alert */
} vega_quic_transport_error;

/* Name of a transport error code ("FRAME_ENCODING_ERROR", "CRYPTO_ERROR" for the whole
 * 0x100-0x1ff range); "unknown" otherwise; never NULL. Context: any. Since 0.1. */
VEGA_API const char *vega_quic_transport_error_name(uint64_t code);

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
 * Returns the bytes written; VEGA_ERR_NOBUF; VEGA_ERR_INVALID_ARG (v > VEGA_QUIC_MAX_VARINT).
 * Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_varint_write(uint8_t *out, size_t cap, uint64_t v);

/*
 * Writes v in exactly n bytes (1, 2, 4 or 8), e.g. a Length field reserved before the payload
 * is known. Returns n; VEGA_ERR_NOBUF; VEGA_ERR_INVALID_ARG (n not one of those, or v does not
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
 * or the datagram is empty; VEGA_ERR_INVALID_ARG (max 0).
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
 * Returns the header length; VEGA_ERR_NOBUF; VEGA_ERR_INVALID_ARG (type Retry/VN/UNKNOWN, an
 * unsupported version, a CID above 20 bytes, pn_len not 1..4, length above the varint range).
 * Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_hdr_write(uint8_t *out, size_t cap, const vega_quic_hdr *h,
                                        size_t pn_len, uint64_t pn);

/*
 * Writes a Version Negotiation packet (RFC 9000 §17.2.1): the first byte is 0x80 | (unused &
 * 0x7f) (the rest is arbitrary; pass random bits), version 0, the connection IDs (dcid = the
 * client's SCID, scid = the client's DCID: up to 255 bytes each), then versions[0..n).
 * Returns the length; VEGA_ERR_NOBUF; VEGA_ERR_INVALID_ARG (n 0, a CID above 255 bytes).
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
 * Returns 0; VEGA_ERR_INVALID_ARG (unsupported version, dcid above 20 bytes);
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_initial_secrets(uint32_t version, const uint8_t *dcid, size_t dcid_len,
                                       uint8_t *client, uint8_t *server);

/*
 * Derives key, iv and hp from a traffic secret (RFC 9001 §5.1) with the version's labels
 * ("quic key"/"quic iv"/"quic hp", or "quicv2 ..."), hashing with SHA-256 (AES-128-GCM,
 * ChaCha20-Poly1305) or SHA-384 (AES-256-GCM). secret: borrowed, the hash length.
 * Returns 0; VEGA_ERR_INVALID_ARG (unsupported version or alg, wrong secret length);
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_key_material_derive(vega_quic_key_material *m, uint32_t version,
                                           vega_crypto_aead_alg alg, const uint8_t *secret,
                                           size_t secret_len);

/*
 * The next generation's secret for a key update (RFC 9001 §6.1, "quic ku" / "quicv2 ku").
 * secret, out: borrowed, the hash length each (may be the same buffer).
 * Returns 0; VEGA_ERR_INVALID_ARG; VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_secret_update(uint32_t version, vega_crypto_aead_alg alg,
                                     const uint8_t *secret, size_t secret_len, uint8_t *out);

/* Packet protection keys (opaque): an AEAD and a header protection context plus the iv. */
typedef struct vega_quic_keys vega_quic_keys;

/*
 * Creates keys from a traffic secret (vega_quic_key_material_derive, then the contexts).
 * secret: borrowed. out: receives the keys, owned by the caller (vega_quic_keys_free).
 * Returns 0; VEGA_ERR_INVALID_ARG; -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO.
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
 * Returns the packet length, hdr_len + payload_len + 16; VEGA_ERR_NOBUF; VEGA_ERR_INVALID_ARG
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
 * Returns 0; VEGA_ERR_INVALID_ARG (unsupported version, odcid above 20 bytes, retry_len above
 * VEGA_QUIC_RETRY_MAX_LEN - 37); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_retry_tag(uint32_t version, const uint8_t *odcid, size_t odcid_len,
                                 const uint8_t *retry, size_t retry_len, uint8_t *tag);

/*
 * Verifies a parsed Retry packet (h from vega_quic_hdr_parse, pkt its bytes) against odcid.
 * Returns 0; VEGA_ERR_CRYPTO_AUTH (wrong tag: discard it); VEGA_ERR_INVALID_ARG (not a Retry,
 * or too long); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_retry_verify(const vega_quic_hdr *h, const uint8_t *pkt,
                                    const uint8_t *odcid, size_t odcid_len);

/*
 * Writes a whole Retry packet with its tag: h->version, dcid (the client's SCID), scid (the
 * server's new CID), token (non-empty); unused: the 4 low bits of the first byte (arbitrary).
 * Returns the length; VEGA_ERR_NOBUF; VEGA_ERR_INVALID_ARG (empty token, CIDs above 20 bytes,
 * unsupported version, too long); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_retry_write(uint8_t *out, size_t cap, const vega_quic_hdr *h,
                                          uint8_t unused, const uint8_t *odcid, size_t odcid_len);

/* ---- stateless reset (RFC 9000 §10.3) -------------------------------------------------------- */

#define VEGA_QUIC_RESET_KEY_LEN   32 /* an endpoint's static key for reset tokens */
#define VEGA_QUIC_RESET_MIN_LEN   21 /* a first byte, 4 unpredictable bytes, the 16-byte token */

/*
 * The stateless reset token of one of our connection IDs, derived from a static key
 * (HMAC-SHA256(key, cid), first 16 bytes; §10.3.2), so an endpoint that lost a connection's
 * state (a restart) can still end it for the peer. Connections made with the same
 * vega_quic_config.reset_key advertise exactly these tokens. key: 32 bytes; cid: 0..20 bytes;
 * token: receives 16 bytes. All borrowed.
 * Returns 0; VEGA_ERR_INVALID_ARG (cid above 20 bytes); VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any. Since 0.1.
 */
VEGA_API int vega_quic_reset_token(const uint8_t *key, const uint8_t *cid, size_t cid_len,
                                   uint8_t *token);

/*
 * Writes a Stateless Reset (§10.3) in answer to a datagram of trigger_len bytes that no
 * connection took: a short-header-looking first byte, unpredictable bytes (from
 * vega_crypto_random), then token. It is one byte shorter than the trigger (so two endpoints
 * cannot reset each other in a loop, §10.3.3), at most cap and at most 1200 bytes.
 * Returns the length; 0 when the trigger is too short to answer (the reset would be below
 * VEGA_QUIC_RESET_MIN_LEN bytes: send nothing, §10.3); VEGA_ERR_NOBUF (cap below 21);
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_reset_write(uint8_t *out, size_t cap, size_t trigger_len,
                                          const uint8_t *token);

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
 * Returns the bytes written; VEGA_ERR_NOBUF; VEGA_ERR_INVALID_ARG (a value out of its range,
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
 * Returns the length; VEGA_ERR_NOBUF; VEGA_ERR_INVALID_ARG (a value decode would reject, a
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

/* ---- the QUIC TLS 1.3 handshake: levels and configuration (RFC 9001 §4) --------------------- */

/* Encryption levels (RFC 9001 §4.1.4): one packet number space each, except 0-RTT and 1-RTT,
 * which share the application space. */
typedef enum vega_quic_level {
    VEGA_QUIC_LEVEL_INITIAL = 0,
    VEGA_QUIC_LEVEL_EARLY,     /* 0-RTT */
    VEGA_QUIC_LEVEL_HANDSHAKE,
    VEGA_QUIC_LEVEL_APP,       /* 1-RTT */
} vega_quic_level;
#define VEGA_QUIC_NLEVELS 4

/* TLS cipher suites (RFC 8446 §B.4) the QUIC handshake offers or accepts. */
#define VEGA_QUIC_TLS_AES_128_GCM_SHA256       0x1301
#define VEGA_QUIC_TLS_AES_256_GCM_SHA384       0x1302
#define VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256 0x1303

#define VEGA_QUIC_TLS_MAX_ALPN 8 /* protocols offered or accepted */

/*
 * TLS settings of a QUIC endpoint: plain data, borrowed (every pointer must outlive the
 * connections made with it). Zero it, then set what applies; zeros mean the defaults.
 */
typedef struct vega_quic_tls_config {
    /* Our certificate chain (leaf first) and its private key: required on a server; on a
     * client, sent when the server asks for one (mutual TLS). */
    const vega_crypto_cert_chain *chain;
    const vega_crypto_key *key;
    /* Trust anchors for the peer's chain. Client: required unless insecure; the server's chain
     * is checked against server_name. Server: with verify_peer, the client must present a
     * chain that verifies against ca (CertificateRequest; no certificate -> certificate_required
     * alert). */
    const vega_crypto_cert_store *ca;
    bool verify_peer; /* server only */
    bool insecure;    /* client only: skip chain and name verification (tests, curl -k) */
    /* Client: the server's name, sent as SNI (not for IP literals) and matched against the
     * leaf certificate. */
    const char *server_name;
    /* Application protocols (RFC 7301), in preference order. Client: offered. Server: the first
     * of its own list that the client offered is chosen; no overlap -> no_application_protocol
     * alert (RFC 9001 §8.1). At least one is required on both sides. */
    const char *alpn[VEGA_QUIC_TLS_MAX_ALPN];
    size_t n_alpn;
    /* Cipher suites in preference order (VEGA_QUIC_TLS_*); 0 entries = all three, AES-128-GCM
     * first. */
    uint16_t suites[3];
    size_t n_suites;
    /* Key exchange groups in preference order; 0 entries = X25519 then P-256. A client sends a
     * key share for the first only (a server wanting another answers HelloRetryRequest). */
    vega_crypto_group groups[2];
    size_t n_groups;
    /* Server: 32 bytes that encrypt and authenticate session tickets (AES-256-GCM). NULL = no
     * tickets, so no resumption and no 0-RTT. Rotate it to invalidate every ticket. */
    const uint8_t *ticket_key;
    uint32_t ticket_lifetime_s; /* server: 0 = 7 days (RFC 8446 §4.6.1 maximum) */
    /* 0-RTT (RFC 9001 §4.6). Server: accept early data from valid tickets (tickets then carry
     * max_early_data_size 0xffffffff). Anti-replay caveat: the server only checks the ticket's
     * age against a window (ticket_age_window_ms, 0 = 10 s); a 0-RTT flight captured and
     * replayed inside that window is accepted again, so applications must only act on
     * idempotent requests in 0-RTT (RFC 8446 §8, RFC 9001 §9.2). Client: send early data when
     * the resumed session allows it. */
    bool early_data;
    uint32_t ticket_age_window_ms;
    /* Client: a session saved from an earlier connection (the bytes the session event gave);
     * resumed with PSK (psk_dhe_ke) when still valid for server_name and ALPN; otherwise
     * ignored and a full handshake is done. */
    const uint8_t *session;
    size_t session_len;
} vega_quic_tls_config;

/* ---- connections (RFC 9000, RFC 9001, RFC 9002) ---------------------------------------------- */

/*
 * A QUIC connection, sans I/O, in the ngtcp2 shape: the caller owns the socket and the clock.
 * It feeds every received datagram with vega_quic_conn_read, sends what vega_quic_conn_write
 * produces until it returns 0, arms a timer for vega_quic_conn_expiry and calls
 * vega_quic_conn_handle_expiry when it fires, and drains vega_quic_conn_next_event after each
 * of those calls. Times are nanoseconds on any monotonic clock, the same for every call.
 * A connection is used by one thread at a time; distinct connections are independent.
 */
typedef struct vega_quic_conn vega_quic_conn;

/* The two ends of a datagram's path (plain data; zeroed lengths = unknown). */
typedef struct vega_quic_path {
    struct sockaddr_storage local, remote;
    socklen_t local_len, remote_len;
} vega_quic_path;

typedef enum vega_quic_cc {
    VEGA_QUIC_CC_CUBIC = 0, /* RFC 9438 (default) */
    VEGA_QUIC_CC_NEWRENO,   /* RFC 9002 §7 */
} vega_quic_cc;

/*
 * A connection's allocator: the library-wide vega_mem (<vega/mem.h>). After a failure the call
 * that needed the memory returns -ENOMEM and the connection stays consistent: call again later
 * (a datagram whose processing failed counts as lost, the peer sends it again), except that a
 * handshake cut off mid-message closes the connection (CLOSED event, INTERNAL_ERROR or the
 * internal_error alert).
 */
typedef vega_mem vega_quic_mem;

/* Connection settings: plain data. vega_quic_config_init sets the defaults, then set what
 * applies. Pointers are borrowed for the life of the connections made with it. */
#define VEGA_QUIC_MAX_STREAMS_CFG 65536 /* the largest max_streams_bidi/uni accepted */

typedef struct vega_quic_config {
    uint32_t version;          /* client: the version to start with (default v1) */
    vega_quic_tls_config tls;  /* certificates, ALPN, tickets, 0-RTT */
    uint64_t wall_ms;          /* wall-clock ms since the Unix epoch at creation (tickets,
                                  certificate validity); 0 = no tickets, certificates checked
                                  against the current time */
    uint64_t idle_timeout_ms;  /* max_idle_timeout we advertise (default 30000; 0 = none) */
    uint64_t max_data;         /* initial connection receive window (default 1 MiB) */
    uint64_t max_data_max;     /* auto-tuning cap of that window (default 16 MiB) */
    uint64_t max_stream_data;  /* initial per-stream receive window (default 256 KiB) */
    uint64_t max_stream_data_max; /* auto-tuning cap (default 8 MiB) */
    uint64_t max_streams_bidi; /* peer-initiated bidirectional streams allowed (default 100,
                                  at most VEGA_QUIC_MAX_STREAMS_CFG: a peer may open all at
                                  once, each a few hundred bytes until it carries data) */
    uint64_t max_streams_uni;  /* and unidirectional (default 100) */
    uint64_t stream_send_buffer; /* bytes a stream holds until acknowledged (default 1 MiB) */
    uint64_t max_datagram_frame_size; /* RFC 9221: accept DATAGRAM frames up to this (0 = off,
                                         the default) */
    size_t max_datagram_queue;  /* received datagrams kept until read (default 64) */
    uint64_t ack_delay_exponent; /* default 3 */
    uint64_t max_ack_delay_ms;   /* default 25 */
    uint64_t active_connection_id_limit; /* default 4 */
    size_t scid_len;             /* our connection ID length, 1..20 (default 8) */
    size_t pmtu_max;             /* DPLPMTUD (RFC 9000 §14.3) probes datagram sizes up to this
                                    (default 1452, IPv6 over a 1500-byte MTU; 1200 = off); the
                                    write cap and the peer's max_udp_payload_size bound it too */
    bool disable_active_migration;
    vega_quic_cc cc;
    uint64_t initial_rtt_ns;     /* default 333 ms (RFC 9002 §6.2.2) */
    const uint8_t *token;        /* client: an address validation token (NEW_TOKEN) */
    size_t token_len;
    /* Randomness (connection IDs, packet number skips, TLS); NULL = vega_crypto_random. A
     * seeded one makes a connection's bytes reproducible in tests. Returns 0 or negative. */
    int (*rand)(void *ud, void *buf, size_t len);
    void *rand_ud;
    /* Allocator, borrowed for the connection's life; NULL = libc (one with a NULL function:
     * VEGA_ERR_INVALID_ARG). It makes every allocation of the connection: the connection
     * itself, its streams and their buffers, recovery, the TLS handshake, queued events,
     * datagrams, tokens and sessions, and the packet protection key structs. Not covered: the
     * contexts libcrypto allocates inside those keys and for the handshake's cryptography
     * (OpenSSL's own allocator), and the wire-layer functions called directly
     * (vega_quic_keys_new and the like use libc). */
    const vega_quic_mem *mem;
    /* A static 32-byte key (VEGA_QUIC_RESET_KEY_LEN) the stateless reset tokens of our
     * connection IDs derive from (vega_quic_reset_token), so an endpoint that restarted can
     * still reset its old connections; NULL = random tokens. Share it among an endpoint's
     * connections and keep it secret. */
    const uint8_t *reset_key;
} vega_quic_config;

/* Fills c with the defaults. Context: any. Since 0.1. */
VEGA_API void vega_quic_config_init(vega_quic_config *c);

/*
 * Creates a client connection to path->remote and queues its first flight (the ClientHello in
 * an Initial padded to 1200 bytes; call vega_quic_conn_write). cfg, path: borrowed (cfg's
 * pointers for the connection's life). now: the current time (ns).
 * Returns 0; VEGA_ERR_INVALID_ARG (a bad setting, an unsupported version, TLS settings
 * refused); -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_conn_client_new(vega_quic_conn **out, const vega_quic_config *cfg,
                                       const vega_quic_path *path, uint64_t now);

/* What a server endpoint knows about a client's first Initial when it creates a connection. */
typedef struct vega_quic_server_params {
    uint32_t version;        /* the Initial's version (v1 or v2) */
    const uint8_t *dcid;     /* the Destination CID the client chose for this Initial */
    size_t dcid_len;
    const uint8_t *scid;     /* the client's Source CID */
    size_t scid_len;
    /* After a Retry: the client's original Destination CID (from the validated token) and
     * dcid above is the Retry's Source CID; NULL otherwise. */
    const uint8_t *original_dcid;
    size_t original_dcid_len;
    bool address_validated;  /* a valid token was presented: no anti-amplification limit */
} vega_quic_server_params;

/*
 * Creates a server connection for a client's first Initial; then feed that datagram with
 * vega_quic_conn_read. cfg, path, sp: borrowed (cfg's pointers for the connection's life).
 * Returns as vega_quic_conn_client_new. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_conn_server_new(vega_quic_conn **out, const vega_quic_config *cfg,
                                       const vega_quic_path *path,
                                       const vega_quic_server_params *sp, uint64_t now);

/* Frees c (NULL is fine), with every buffer and key. Context: any. Since 0.1. */
VEGA_API void vega_quic_conn_free(vega_quic_conn *c);

/* ECN codepoints (RFC 3168) as the IP header carries them. */
#define VEGA_QUIC_ECN_NOT_ECT 0
#define VEGA_QUIC_ECN_ECT1    1
#define VEGA_QUIC_ECN_ECT0    2
#define VEGA_QUIC_ECN_CE      3

/*
 * Processes one received datagram. dgram is decrypted in place (so not const); path: the
 * addresses it came on; ecn: its ECN codepoint. Packets that fail to parse or authenticate are
 * dropped silently (RFC 9000 §12.2); a peer protocol violation closes the connection (the
 * CLOSED event and a CONNECTION_CLOSE to send follow).
 * Returns 0; VEGA_ERR_CLOSED (the connection is closed or draining: nothing to do);
 * -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO. Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_conn_read(vega_quic_conn *c, const vega_quic_path *path, uint8_t ecn,
                                 uint8_t *dgram, size_t len, uint64_t now);

/*
 * Writes the next datagram to send into out (cap: at least 1200; more lets it use a larger
 * path MTU once validated). path, ecn: receive where to send it and the ECN codepoint to mark
 * it with (either may be NULL). Call repeatedly until it returns 0: that means nothing more
 * may leave now (no data, congestion window full, or pacing: see vega_quic_conn_expiry).
 * Returns the datagram length; 0; VEGA_ERR_INVALID_ARG (cap below 1200);
 * VEGA_ERR_CLOSED (closed: nothing will ever be sent again); -ENOMEM;
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: the connection's thread. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_conn_write(vega_quic_conn *c, vega_quic_path *path, uint8_t *ecn,
                                         uint8_t *out, size_t cap, uint64_t now);

/*
 * As vega_quic_conn_write, but fills out with up to max_dgrams datagrams back to back for one
 * UDP GSO send (UDP_SEGMENT): every datagram but the last is exactly *seg bytes, the last may
 * be shorter, and all go to the same path with the same ECN codepoint. seg: receives the
 * segment size. Returns the total bytes (0: nothing to send), or as vega_quic_conn_write.
 * Context: the connection's thread. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_conn_write_gso(vega_quic_conn *c, vega_quic_path *path, uint8_t *ecn,
                                             uint8_t *out, size_t cap, size_t max_dgrams,
                                             size_t *seg, uint64_t now);

/* The next time (ns) vega_quic_conn_handle_expiry must be called (loss detection, ACK delay,
 * pacing, idle and closing timers); UINT64_MAX for none. Context: the connection's thread.
 * Since 0.1. */
VEGA_API uint64_t vega_quic_conn_expiry(const vega_quic_conn *c);

/* Runs the timers due at now (then call vega_quic_conn_write). Returns 0, VEGA_ERR_CLOSED
 * (the connection ended: idle timeout or the closing period is over), -ENOMEM. Context: the
 * connection's thread. Since 0.1. */
VEGA_API int vega_quic_conn_handle_expiry(vega_quic_conn *c, uint64_t now);

typedef enum vega_quic_event_type {
    VEGA_QUIC_EV_NONE = 0,
    VEGA_QUIC_EV_HANDSHAKE_DONE,    /* 1-RTT keys both ways: streams carry 1-RTT data */
    VEGA_QUIC_EV_STREAM_OPENED,     /* the peer opened stream_id */
    VEGA_QUIC_EV_STREAM_READABLE,   /* stream_id has data or its end to read */
    VEGA_QUIC_EV_STREAM_WRITABLE,   /* stream_id has room again after a short write */
    VEGA_QUIC_EV_STREAM_RESET,      /* the peer reset stream_id (RESET_STREAM, error_code) */
    VEGA_QUIC_EV_STREAM_STOP,       /* the peer asked us to stop sending (STOP_SENDING) */
    VEGA_QUIC_EV_STREAM_DONE,       /* everything we sent on stream_id was acknowledged */
    VEGA_QUIC_EV_STREAMS_AVAILABLE, /* the peer raised its stream limit: open may succeed */
    VEGA_QUIC_EV_DATAGRAM,          /* data/len: a DATAGRAM (valid until the next call) */
    VEGA_QUIC_EV_SESSION,           /* client: data/len: a session to resume with later
                                       (vega_quic_tls_config.session) */
    VEGA_QUIC_EV_NEW_TOKEN,         /* client: data/len: a token for the next connection */
    VEGA_QUIC_EV_EARLY_REJECTED,    /* client: the server refused 0-RTT; what was sent in it
                                       is sent again in 1-RTT */
    VEGA_QUIC_EV_PATH_CHANGED,      /* the peer's address changed (server: the client migrated
                                       or was rebound by a NAT) or our migration completed;
                                       error_code 1 when the new path is validated, 0 when
                                       validation failed and the previous path is back;
                                       vega_quic_conn_get_path tells the addresses */
    VEGA_QUIC_EV_CLOSED,            /* the connection closed: error_code, app, data/len = the
                                       reason phrase; local = we closed it */
} vega_quic_event_type;

typedef struct vega_quic_event {
    vega_quic_event_type type;
    uint64_t stream_id;
    uint64_t error_code;
    bool app;   /* CLOSED: an application error code (else a transport one) */
    bool local; /* CLOSED: we initiated it (a violation the peer made, a timeout, or a close) */
    const uint8_t *data;
    size_t len;
} vega_quic_event;

/* Takes the next pending event. Returns true with *ev set, false when none is pending.
 * Context: the connection's thread. Since 0.1. */
VEGA_API bool vega_quic_conn_next_event(vega_quic_conn *c, vega_quic_event *ev);

/*
 * Opens a stream of ours (bidirectional or unidirectional) and returns its id in *id. Before
 * the handshake is done (client with 0-RTT: while early data is possible) streams may still be
 * opened within the peer's limits; their data waits for keys.
 * Returns 0; VEGA_ERR_FULL (the peer's stream limit is reached: wait for
 * STREAMS_AVAILABLE); VEGA_ERR_CLOSED; -ENOMEM. Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_stream_open(vega_quic_conn *c, bool bidi, uint64_t *id);

/*
 * Queues len bytes on stream id (fin: then end it). Takes what fits in the stream's send
 * buffer; a short count means wait for STREAM_WRITABLE. fin applies only when every byte was
 * taken.
 * Returns the bytes taken; VEGA_ERR_INVALID_ARG (no such stream, a receive-only stream, or
 * already finished/reset); VEGA_ERR_CLOSED; -ENOMEM. Context: the connection's thread.
 * Since 0.1.
 */
VEGA_API vega_ssize vega_quic_stream_write(vega_quic_conn *c, uint64_t id, const void *data,
                                           size_t len, bool fin);

/*
 * Reads up to cap in-order bytes from stream id. *fin: set when the stream's end was reached
 * (the stream is then done on the receive side).
 * Returns the bytes read (0 with *fin false: nothing now; wait for STREAM_READABLE);
 * VEGA_ERR_INVALID_ARG (no such stream, a send-only one); VEGA_ERR_PROTO (the peer reset it:
 * the STREAM_RESET event had the code). Context: the connection's thread. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_stream_read(vega_quic_conn *c, uint64_t id, void *buf, size_t cap,
                                          bool *fin);

/*
 * Zero-copy read, first half: points *data at the next in-order bytes of stream id inside its
 * receive buffer and sets *len to how many lie there in one piece (the rest, if any, comes
 * with the next peek after a consume). *fin: these bytes end the stream. Nothing is taken
 * until vega_quic_stream_consume; *data stays valid until the next call on c other than
 * vega_quic_stream_peek (write what is needed elsewhere before feeding the connection).
 * Returns 0 (*len 0 with *fin false: nothing now; wait for STREAM_READABLE);
 * VEGA_ERR_INVALID_ARG (no such stream, a send-only one); VEGA_ERR_PROTO (the peer reset it).
 * Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_stream_peek(vega_quic_conn *c, uint64_t id, const uint8_t **data,
                                   size_t *len, bool *fin);

/*
 * Zero-copy read, second half: takes n in-order bytes of stream id (n at most what is
 * readable; usually the *len of the last peek, or less), exactly as vega_quic_stream_read
 * would have: flow-control credit returns to the peer, and reaching the stream's end (a peek
 * said *fin and n took all it gave; n may be 0 for a lone FIN) ends the receive side, which may
 * free the stream (the peeked pointer is then invalid).
 * Returns 0; VEGA_ERR_INVALID_ARG (no such stream, a send-only one, n beyond what is readable);
 * VEGA_ERR_PROTO (the peer reset it). Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_stream_consume(vega_quic_conn *c, uint64_t id, size_t n);

/* Abandons sending on stream id with an application error code (RESET_STREAM). Returns 0 or
 * VEGA_ERR_INVALID_ARG. Context: the connection's thread. Since 0.1. */
VEGA_API int vega_quic_stream_reset(vega_quic_conn *c, uint64_t id, uint64_t app_error);

/* Asks the peer to stop sending on stream id (STOP_SENDING); unread data is dropped. Returns 0
 * or VEGA_ERR_INVALID_ARG. Context: the connection's thread. Since 0.1. */
VEGA_API int vega_quic_stream_stop(vega_quic_conn *c, uint64_t id, uint64_t app_error);

/*
 * Queues an unreliable DATAGRAM (RFC 9221) for the next packets; it is dropped, not
 * retransmitted, if lost. Returns 0; VEGA_ERR_INVALID_ARG (the peer does not accept datagrams,
 * or len exceeds its max_datagram_frame_size or what fits in one packet); VEGA_ERR_FULL (64
 * queued already); VEGA_ERR_CLOSED; -ENOMEM. Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_datagram_send(vega_quic_conn *c, const void *data, size_t len);

/*
 * Closes the connection (RFC 9000 §10.2): CONNECTION_CLOSE with code (app: an application
 * code, else a transport one) and reason (may be NULL; truncated to fit), sent on the next
 * vega_quic_conn_write, then the closing period (3 PTO) during which the connection answers
 * peer packets with the close again. Returns 0; VEGA_ERR_CLOSED (already closing). Context:
 * the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_conn_close(vega_quic_conn *c, bool app, uint64_t code, const char *reason);

/*
 * Starts a 1-RTT key update (RFC 9001 §6). Returns 0; VEGA_ERR_INVALID_ARG (the handshake is
 * not confirmed, the previous update is not acknowledged yet, or it was less than 3 PTO ago:
 * the peer may still hold the keys of two phases back, RFC 9001 §6.5). Context: the
 * connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_conn_key_update(vega_quic_conn *c);

/*
 * Client: moves the connection to a new path (its local address changed, or to probe a better
 * one), RFC 9000 §9: switches to an unused connection ID of the peer's (retiring the old one),
 * sends PATH_CHALLENGE on the new path and carries on there; the congestion window restarts.
 * If validation fails (no PATH_RESPONSE within 3 PTO), the previous path comes back
 * (PATH_CHANGED with error_code 0). path: borrowed.
 * Returns 0; VEGA_ERR_INVALID_ARG (a server, the handshake is not confirmed, the peer sent
 * disable_active_migration, or a migration is still being validated); VEGA_ERR_FULL (no unused
 * connection ID from the peer yet); VEGA_ERR_CLOSED. Context: the connection's thread.
 * Since 0.1.
 */
VEGA_API int vega_quic_conn_migrate(vega_quic_conn *c, const vega_quic_path *path);

/* The path the connection sends on now. Context: the connection's thread. Since 0.1. */
VEGA_API void vega_quic_conn_get_path(const vega_quic_conn *c, vega_quic_path *out);

/*
 * Our connection IDs the peer may address us by now (for an endpoint's routing table: every
 * one must lead to c). ids: receives up to max pointers (valid until the next call on c),
 * lens their lengths. Returns how many there are (may exceed max). Context: the connection's
 * thread. Since 0.1.
 */
VEGA_API size_t vega_quic_conn_scids(const vega_quic_conn *c, const uint8_t **ids, size_t *lens,
                                     size_t max);

/*
 * Server: gives the client an address validation token for a future connection (NEW_TOKEN,
 * RFC 9000 §8.1.3), sent once the handshake is confirmed and resent until acknowledged. The
 * token's format and its checking are the endpoint's (typically the client's address and a time,
 * authenticated with a key); the client gets it as VEGA_QUIC_EV_NEW_TOKEN and passes it back in
 * vega_quic_config.token. token: copied (1..512 bytes); a token given before the previous one
 * went out replaces it.
 * Returns 0; VEGA_ERR_INVALID_ARG (a client, a bad length); VEGA_ERR_CLOSED; -ENOMEM.
 * Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_conn_new_token(vega_quic_conn *c, const uint8_t *token, size_t len);

/* True once the connection has nothing left to do (drained, timed out, or the closing period
 * ended): free it. Context: the connection's thread. Since 0.1. */
VEGA_API bool vega_quic_conn_is_closed(const vega_quic_conn *c);

/* What a connection negotiated and measured (plain data). */
typedef struct vega_quic_conn_info {
    uint32_t version;
    bool handshake_done, handshake_confirmed, resumed;
    int early_data; /* 0 none, 1 offered, 2 accepted, 3 rejected */
    char alpn[256];
    uint16_t suite;
    uint64_t smoothed_rtt_ns, min_rtt_ns, cwnd, bytes_in_flight;
    uint64_t pkts_sent, pkts_recv, pkts_lost, bytes_sent, bytes_recv;
    uint64_t key_updates;
    uint64_t migrations; /* peer address changes (server) or our migrations (client) */
    size_t pmtu;         /* the datagram size in use (1200 until DPLPMTUD raised it) */
} vega_quic_conn_info;

/* Fills *info. Context: the connection's thread. Since 0.1. */
VEGA_API void vega_quic_conn_get_info(const vega_quic_conn *c, vega_quic_conn_info *info);

/* The connection ID the peer addresses us by now (for an endpoint's routing table): *len
 * receives its length; the pointer is valid until the next call on c. Context: the
 * connection's thread. Since 0.1. */
VEGA_API const uint8_t *vega_quic_conn_scid(const vega_quic_conn *c, size_t *len);

/* ---- TLS 1.3 key schedule (RFC 8446 §7.1, §4.4.4) ------------------------------------------ */

/*
 * The secrets of one TLS 1.3 handshake, derived in order: the early secret (from a PSK or
 * zeros), then the handshake secrets (from the (EC)DHE shared secret and the transcript hash
 * through ServerHello), then the master and application secrets (transcript through the server
 * Finished), then the resumption master secret (transcript through the client Finished).
 * Plain data holding secrets: wipe it with vega_quic_tls13_schedule_wipe when done. Only the
 * first hash_len bytes of each secret are meaningful.
 *
 * There is no TLS "traffic upd" here on purpose: QUIC forbids the TLS KeyUpdate message
 * (RFC 9001 §6) and updates 1-RTT keys with vega_quic_secret_update ("quic ku").
 */
#define VEGA_QUIC_TLS13_MAX_HASH_LEN 48 /* SHA-384, the largest TLS 1.3 suite hash */
#define VEGA_QUIC_TLS13_MAX_PSK_LEN  64 /* a resumption PSK is hash_len; external ones vary */
/* The (EC)DHE shared secret: ECDHE groups need at most 66 bytes (P-521), the hybrid ML-KEM ones
 * 80; finite-field DHE (up to 1024) is not supported. */
#define VEGA_QUIC_TLS13_MAX_SHARED_LEN 128

typedef enum vega_quic_tls13_stage {
    VEGA_QUIC_TLS13_STAGE_NONE = 0,    /* not initialised */
    VEGA_QUIC_TLS13_STAGE_EARLY,       /* early_secret set */
    VEGA_QUIC_TLS13_STAGE_HANDSHAKE,   /* + handshake_secret, *_handshake_traffic */
    VEGA_QUIC_TLS13_STAGE_APPLICATION, /* + master_secret, *_application_traffic, exporter */
    VEGA_QUIC_TLS13_STAGE_RESUMPTION,  /* + resumption_master */
} vega_quic_tls13_stage;

typedef struct vega_quic_tls13_schedule {
    vega_crypto_hash_alg hash; /* VEGA_CRYPTO_SHA256 or VEGA_CRYPTO_SHA384 (by cipher suite) */
    size_t hash_len;           /* 32 or 48 */
    vega_quic_tls13_stage stage;
    uint8_t early_secret[VEGA_QUIC_TLS13_MAX_HASH_LEN];
    uint8_t handshake_secret[VEGA_QUIC_TLS13_MAX_HASH_LEN];
    uint8_t master_secret[VEGA_QUIC_TLS13_MAX_HASH_LEN];
    uint8_t client_handshake_traffic[VEGA_QUIC_TLS13_MAX_HASH_LEN];   /* "c hs traffic" */
    uint8_t server_handshake_traffic[VEGA_QUIC_TLS13_MAX_HASH_LEN];   /* "s hs traffic" */
    uint8_t client_application_traffic[VEGA_QUIC_TLS13_MAX_HASH_LEN]; /* "c ap traffic" */
    uint8_t server_application_traffic[VEGA_QUIC_TLS13_MAX_HASH_LEN]; /* "s ap traffic" */
    uint8_t exporter_master[VEGA_QUIC_TLS13_MAX_HASH_LEN];            /* "exp master" */
    uint8_t resumption_master[VEGA_QUIC_TLS13_MAX_HASH_LEN];          /* "res master" */
} vega_quic_tls13_schedule;

/*
 * Starts a schedule: early_secret = HKDF-Extract(0, psk), or of HashLen zeros without a PSK.
 * hash: SHA-256 or SHA-384. psk: borrowed, NULL with psk_len 0 for none, else 1 to
 * VEGA_QUIC_TLS13_MAX_PSK_LEN bytes.
 * Returns 0; VEGA_ERR_INVALID_ARG (other hash, bad psk length); VEGA_ERR_CRYPTO_LIBCRYPTO
 * (s is wiped on any failure). Context: any. Since 0.1.
 */
VEGA_API int vega_quic_tls13_schedule_init(vega_quic_tls13_schedule *s, vega_crypto_hash_alg hash,
                                           const uint8_t *psk, size_t psk_len);

/*
 * The PSK binder key (RFC 8446 §7.1): Derive-Secret(early_secret, "ext binder" for an external
 * PSK or "res binder" for a resumption one, ""). Its finished key signs the binder
 * (vega_quic_tls13_finished over the truncated ClientHello's hash). out: hash_len bytes.
 * Returns 0; VEGA_ERR_INVALID_ARG (s not at the early stage: the early secret is wiped once
 * the handshake secret exists); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_tls13_schedule_binder_key(const vega_quic_tls13_schedule *s, bool external,
                                                 uint8_t *out);

/*
 * The 0-RTT secret client_early_traffic_secret = Derive-Secret(early_secret, "c e traffic",
 * ClientHello). ch_hash: the transcript hash of the ClientHello, hash_len bytes. out: hash_len.
 * Returns 0; VEGA_ERR_INVALID_ARG (not at the early stage, hash length);
 * VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any. Since 0.1.
 */
VEGA_API int vega_quic_tls13_schedule_early_traffic(const vega_quic_tls13_schedule *s,
                                                    const uint8_t *ch_hash, size_t hash_len,
                                                    uint8_t *out);

/*
 * Moves from the early to the handshake stage: handshake_secret = HKDF-Extract(
 * Derive-Secret(early_secret, "derived", ""), shared), then the client and server handshake
 * traffic secrets over th, the transcript hash through ServerHello (hash_len bytes).
 * shared: the (EC)DHE secret, 1 to VEGA_QUIC_TLS13_MAX_SHARED_LEN bytes. Borrowed both.
 * Each stage wipes the secret nothing derives from any more (early_secret here,
 * handshake_secret at application, master_secret at resumption): read them before moving on.
 * Returns 0; VEGA_ERR_INVALID_ARG (not at the early stage, bad lengths; s is unchanged);
 * VEGA_ERR_CRYPTO_LIBCRYPTO (s is wiped). Context: any. Since 0.1.
 */
VEGA_API int vega_quic_tls13_schedule_handshake(vega_quic_tls13_schedule *s, const uint8_t *shared,
                                                size_t shared_len, const uint8_t *th,
                                                size_t th_len);

/*
 * Moves from the handshake to the application stage: master_secret = HKDF-Extract(
 * Derive-Secret(handshake_secret, "derived", ""), 0), then the client and server application
 * traffic secrets and the exporter master secret over th, the transcript hash through the
 * server Finished. Returns as vega_quic_tls13_schedule_handshake. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_tls13_schedule_application(vega_quic_tls13_schedule *s, const uint8_t *th,
                                                  size_t th_len);

/*
 * Moves from the application to the resumption stage: resumption_master =
 * Derive-Secret(master_secret, "res master", th), th the transcript hash through the client
 * Finished. Returns as vega_quic_tls13_schedule_handshake. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_tls13_schedule_resumption(vega_quic_tls13_schedule *s, const uint8_t *th,
                                                 size_t th_len);

/* Wipes every secret in s and returns it to the NONE stage. Context: any. Since 0.1. */
VEGA_API void vega_quic_tls13_schedule_wipe(vega_quic_tls13_schedule *s);

/*
 * Finished verify_data (RFC 8446 §4.4.4): HMAC(finished_key, th) with finished_key =
 * HKDF-Expand-Label(base_key, "finished", "", HashLen). base_key: the sender's handshake
 * traffic secret (or a binder key), th: the transcript hash up to the Finished (or the
 * truncated ClientHello), both hash_len bytes; out: hash_len bytes. All borrowed.
 * Returns 0; VEGA_ERR_INVALID_ARG (hash not SHA-256/384, bad lengths);
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_tls13_finished(vega_crypto_hash_alg hash, const uint8_t *base_key,
                                      size_t key_len, const uint8_t *th, size_t th_len,
                                      uint8_t *out);

/*
 * Checks a peer's Finished verify_data (or a PSK binder) in constant time against the
 * expected one (vega_quic_tls13_finished). got: borrowed, got_len bytes (a wrong length fails
 * like a wrong value: it is the peer's).
 * Returns 0; VEGA_ERR_PROTO with *wire_err (may be NULL) = CRYPTO_ERROR + decrypt_error (0x133);
 * VEGA_ERR_INVALID_ARG; VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_tls13_finished_check(vega_crypto_hash_alg hash, const uint8_t *base_key,
                                            size_t key_len, const uint8_t *th, size_t th_len,
                                            const uint8_t *got, size_t got_len, uint64_t *wire_err);

/*
 * The PSK a NewSessionTicket stands for (RFC 8446 §4.6.1): HKDF-Expand-Label(
 * resumption_master, "resumption", ticket_nonce, HashLen). res_master: hash_len bytes;
 * nonce: 0 to 255 bytes (may be NULL when empty); out: hash_len bytes. All borrowed.
 * Returns 0; VEGA_ERR_INVALID_ARG; VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_tls13_resumption_psk(vega_crypto_hash_alg hash, const uint8_t *res_master,
                                            size_t res_len, const uint8_t *nonce, size_t nonce_len,
                                            uint8_t *out);

#ifdef __cplusplus
}
#endif
#endif
