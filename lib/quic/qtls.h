/* SPDX-License-Identifier: MIT */
/*
 * The TLS 1.3 handshake QUIC carries itself (RFC 8446 + RFC 9001), both sides, sans I/O: the
 * connection feeds it the bytes of each level's CRYPTO stream in order and gets back, through
 * callbacks, handshake bytes to send at a level, traffic secrets as they become available, the
 * peer's quic_transport_parameters, and (client) sessions to resume later. No record layer:
 * QUIC carries handshake messages in CRYPTO frames and never sends TLS KeyUpdate (RFC 9001 §6).
 *
 * Supported: ClientHello/ServerHello, HelloRetryRequest, EncryptedExtensions (ALPN, SNI ack,
 * quic_transport_parameters 0x39, early_data), CertificateRequest, Certificate,
 * CertificateVerify (ECDSA P-256/P-384, Ed25519, RSA-PSS), Finished, NewSessionTicket;
 * X25519 and P-256; the three TLS 1.3 AEAD suites; PSK resumption (psk_dhe_ke) with binders;
 * 0-RTT. Peer violations end the handshake with an alert: the QUIC error is
 * VEGA_QUIC_CRYPTO_ERROR + alert (RFC 9001 §4.8), reported through wire_err.
 */
#ifndef VEGA_QUIC_QTLS_H
#define VEGA_QUIC_QTLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/crypto.h>
#include <vega/quic_wire.h>

/* TLS alerts the handshake sends (RFC 8446 §6): add to VEGA_QUIC_CRYPTO_ERROR for the wire. */
enum {
    VEGA__QTLS_ALERT_UNEXPECTED_MESSAGE = 10,
    VEGA__QTLS_ALERT_BAD_RECORD_MAC = 20,
    VEGA__QTLS_ALERT_HANDSHAKE_FAILURE = 40,
    VEGA__QTLS_ALERT_BAD_CERTIFICATE = 42,
    VEGA__QTLS_ALERT_UNSUPPORTED_CERTIFICATE = 43,
    VEGA__QTLS_ALERT_CERTIFICATE_EXPIRED = 45,
    VEGA__QTLS_ALERT_CERTIFICATE_UNKNOWN = 46,
    VEGA__QTLS_ALERT_ILLEGAL_PARAMETER = 47,
    VEGA__QTLS_ALERT_UNKNOWN_CA = 48,
    VEGA__QTLS_ALERT_DECODE_ERROR = 50,
    VEGA__QTLS_ALERT_DECRYPT_ERROR = 51,
    VEGA__QTLS_ALERT_PROTOCOL_VERSION = 70,
    VEGA__QTLS_ALERT_INTERNAL_ERROR = 80,
    VEGA__QTLS_ALERT_MISSING_EXTENSION = 109,
    VEGA__QTLS_ALERT_UNSUPPORTED_EXTENSION = 110,
    VEGA__QTLS_ALERT_UNRECOGNIZED_NAME = 112,
    VEGA__QTLS_ALERT_CERTIFICATE_REQUIRED = 116,
    VEGA__QTLS_ALERT_NO_APPLICATION_PROTOCOL = 120,
};

/* The largest handshake message accepted from a peer (a Certificate with a long chain is the
 * biggest); a larger length field ends the handshake with CRYPTO_BUFFER_EXCEEDED. */
#define VEGA__QTLS_MAX_MSG (64 * 1024)

/* What the connection supplies. Every callback returns 0, or a negative library code that
 * aborts the handshake (vega__qtls_recv/start return it as is, with *wire_err INTERNAL_ERROR
 * unless the callback set one). */
struct vega__qtls_cbs {
    void *ud;
    /* Handshake bytes to send at level (INITIAL, HANDSHAKE or APP for NewSessionTicket), in
     * order: append them to that level's CRYPTO stream. data is borrowed for the call. */
    int (*send)(void *ud, vega_quic_level level, const uint8_t *data, size_t len);
    /* A traffic secret for level in one direction (write: for packets we send). aead and hash
     * are the negotiated suite's; secret is hash_len bytes, borrowed for the call (wiped
     * after). Called, in this order: client: EARLY write (0-RTT offered), HANDSHAKE read and
     * write, APP write, APP read; server: EARLY read (0-RTT accepted), HANDSHAKE read and write,
     * APP write (right after its Finished), APP read (after the client's Finished). */
    int (*secret)(void *ud, vega_quic_level level, bool write, vega_crypto_aead_alg aead,
                  vega_crypto_hash_alg hash, const uint8_t *secret, size_t len);
    /* The peer's quic_transport_parameters body (server: from the ClientHello; client: from
     * the EncryptedExtensions), borrowed for the call. The connection decodes and checks it;
     * failing with VEGA_ERR_PROTO and *wire_err set (e.g. TRANSPORT_PARAMETER_ERROR) aborts
     * with that code. A missing extension is the missing_extension alert, before any call. */
    int (*peer_tp)(void *ud, const uint8_t *tp, size_t len, uint64_t *wire_err);
    /* Client, optional: a session to store for resumption (after each NewSessionTicket): an
     * opaque, versioned blob (ticket, PSK, suite, ALPN, server name, expiry, 0-RTT allowance,
     * and the server's transport parameters for 0-RTT, RFC 9000 §7.4.1), borrowed for the
     * call. */
    void (*session)(void *ud, const uint8_t *blob, size_t len);
    /* Optional randomness (client/server random, key shares, ticket nonces, age_add); NULL =
     * vega_crypto_random. A seeded one makes whole handshakes reproducible in tests. */
    int (*rand)(void *ud, void *buf, size_t len);
    /* The allocator of everything the handshake allocates (NULL = libc), borrowed for its
     * life; libcrypto's own contexts (key exchange, peer chain) use OpenSSL's. */
    const vega_quic_mem *mem;
    /* Optional: each traffic secret as a line of the NSS key log format (SSLKEYLOGFILE:
     * "CLIENT_HANDSHAKE_TRAFFIC_SECRET <client random hex> <secret hex>", no newline),
     * NUL-terminated and borrowed for the call, just before the secret callback gets it. */
    void (*keylog)(void *ud, const char *line);
    /* Client: npins SHA-256 digests of acceptable server SubjectPublicKeyInfos (borrowed for
     * the handshake's life; vega_quic_opts.pinned_keys). With any, no session is resumed. */
    const uint8_t *pins;
    size_t npins;
};

struct vega__qtls;

/*
 * Creates a handshake. cfg: borrowed for the handshake's life (see vega_quic_tls_opts).
 * tp: our quic_transport_parameters body (copied). wall_ms: wall-clock time in milliseconds
 * since the Unix epoch (ticket ages, expiry, certificate validity; 0 = certificates are checked
 * against the current time and tickets are neither issued nor resumed). cbs: copied.
 * Returns 0; -EINVAL (a server without chain/key or ALPN, a server with
 * verify_peer but no ca, a client without ALPN, an unknown suite or group, a client neither
 * insecure nor with ca, an empty or over-255-byte ALPN or server name, tp_len above 65535);
 * -ENOMEM.
 */
int vega__qtls_new(struct vega__qtls **out, bool server, const vega_quic_tls_opts *cfg,
                   const uint8_t *tp, size_t tp_len, uint64_t wall_ms,
                   const struct vega__qtls_cbs *cbs);

/* Frees t (NULL is fine), wiping every secret it holds. */
void vega__qtls_free(struct vega__qtls *t);

/* Client: sends the ClientHello (send at INITIAL; secret EARLY write when 0-RTT is offered).
 * Server: nothing to do (returns 0). Returns 0 or a negative code with *wire_err. */
int vega__qtls_start(struct vega__qtls *t, uint64_t *wire_err);

/*
 * Feeds the next in-order bytes of the peer's CRYPTO stream at level (INITIAL, HANDSHAKE or
 * APP). Partial messages are buffered (up to VEGA__QTLS_MAX_MSG); complete ones are processed
 * at once, calling the callbacks. Bytes at a level the handshake does not expect now, or a
 * message not allowed at that level, are unexpected_message.
 * Returns 0; VEGA_ERR_PROTO with *wire_err (CRYPTO_ERROR + alert, or CRYPTO_BUFFER_EXCEEDED,
 * or what peer_tp set); a callback's code; -ENOMEM. After a failure every call fails the same
 * way.
 */
int vega__qtls_recv(struct vega__qtls *t, vega_quic_level level, const uint8_t *data, size_t len,
                    uint64_t *wire_err);

/* True once the handshake is complete (RFC 9001 §4.1.1): client: it sent its Finished;
 * server: the client's Finished verified. */
bool vega__qtls_is_done(const struct vega__qtls *t);

/* The negotiated ALPN protocol (not NUL-terminated), NULL before it is known. */
const uint8_t *vega__qtls_alpn(const struct vega__qtls *t, size_t *len);

/* True when this handshake resumed a session (PSK accepted). */
bool vega__qtls_is_resumed(const struct vega__qtls *t);

typedef enum vega__qtls_early {
    VEGA__QTLS_EARLY_NONE = 0, /* not offered (client) / not received (server) */
    VEGA__QTLS_EARLY_OFFERED,  /* client: sent, answer unknown yet */
    VEGA__QTLS_EARLY_ACCEPTED,
    VEGA__QTLS_EARLY_REJECTED,
} vega__qtls_early;

/* 0-RTT status. */
vega__qtls_early vega__qtls_early_status(const struct vega__qtls *t);

/* Client with a session that allows 0-RTT: the server transport parameters remembered in it
 * (a quic_transport_parameters body), to bound what 0-RTT may send (RFC 9000 §7.4.1); NULL
 * otherwise. Valid from vega__qtls_new until free. */
const uint8_t *vega__qtls_session_tp(const struct vega__qtls *t, size_t *len);

/* The negotiated suite's AEAD and hash (valid once the ServerHello is sent/received). */
vega_crypto_aead_alg vega__qtls_aead(const struct vega__qtls *t);
vega_crypto_hash_alg vega__qtls_hash(const struct vega__qtls *t);

/* The peer's certificate chain (NULL when none was sent), borrowed until free. */
const vega_crypto_cert_chain *vega__qtls_peer_chain(const struct vega__qtls *t);

/* Server, after the handshake is done: sends one NewSessionTicket at APP (no-op without a
 * ticket_key or wall_ms). Returns 0; -EINVAL (a client, or not done yet); a
 * callback's or libcrypto's code (the handshake itself is unaffected). */
int vega__qtls_send_ticket(struct vega__qtls *t);

/* Server: the bytes 0-RTT compatibility is judged on (RFC 9000 §7.4.1), instead of the whole
 * TP body, which carries per-connection values (connection IDs, reset token): pass an encoding
 * of only the limits a client may remember. Tickets store its SHA-256; early data is accepted
 * only when the current one matches. Call before the ClientHello arrives. Returns 0 or
 * VEGA_ERR_CRYPTO_LIBCRYPTO. */
int vega__qtls_set_early_context(struct vega__qtls *t, const uint8_t *ctx, size_t len);

/* A short static description of the last failure ("certificate verify failed: unknown CA",
 * "no common ALPN"), "" when none. */
const char *vega__qtls_reason(const struct vega__qtls *t);

#endif
