/* SPDX-License-Identifier: MIT */
/* The TLS 1.3 key schedule (RFC 8446 §7.1, §4.4.4, §4.6.1) the QUIC core's own handshake runs
 * (qtls*.c): internal to lib/quic, implemented in tls13_keys.c. */
#ifndef VEGA_QUIC_TLS13_KEYS_H
#define VEGA_QUIC_TLS13_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/crypto.h>

/*
 * The secrets of one TLS 1.3 handshake, derived in order: the early secret (from a PSK or
 * zeros), then the handshake secrets (from the (EC)DHE shared secret and the transcript hash
 * through ServerHello), then the master and application secrets (transcript through the server
 * Finished), then the resumption master secret (transcript through the client Finished).
 * Plain data holding secrets: wipe it with vega__quic_tls13_schedule_wipe when done. Only the
 * first hash_len bytes of each secret are meaningful.
 *
 * There is no TLS "traffic upd" here on purpose: QUIC forbids the TLS KeyUpdate message
 * (RFC 9001 §6) and updates 1-RTT keys with vega_quic_secret_update ("quic ku").
 */
#define VEGA__QUIC_TLS13_MAX_HASH_LEN 48 /* SHA-384, the largest TLS 1.3 suite hash */
#define VEGA__QUIC_TLS13_MAX_PSK_LEN  64 /* a resumption PSK is hash_len; external ones vary */
/* The (EC)DHE shared secret: ECDHE groups need at most 66 bytes (P-521), the hybrid ML-KEM ones
 * 80; finite-field DHE (up to 1024) is not supported. */
#define VEGA__QUIC_TLS13_MAX_SHARED_LEN 128

enum vega__quic_tls13_stage {
    VEGA__QUIC_TLS13_STAGE_NONE = 0,    /* not initialised */
    VEGA__QUIC_TLS13_STAGE_EARLY,       /* early_secret set */
    VEGA__QUIC_TLS13_STAGE_HANDSHAKE,   /* + handshake_secret, *_handshake_traffic */
    VEGA__QUIC_TLS13_STAGE_APPLICATION, /* + master_secret, *_application_traffic, exporter */
    VEGA__QUIC_TLS13_STAGE_RESUMPTION,  /* + resumption_master */
};

struct vega__quic_tls13_schedule {
    vega_crypto_hash_alg hash; /* VEGA_CRYPTO_SHA256 or VEGA_CRYPTO_SHA384 (by cipher suite) */
    size_t hash_len;           /* 32 or 48 */
    enum vega__quic_tls13_stage stage;
    uint8_t early_secret[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    uint8_t handshake_secret[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    uint8_t master_secret[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    uint8_t client_handshake_traffic[VEGA__QUIC_TLS13_MAX_HASH_LEN];   /* "c hs traffic" */
    uint8_t server_handshake_traffic[VEGA__QUIC_TLS13_MAX_HASH_LEN];   /* "s hs traffic" */
    uint8_t client_application_traffic[VEGA__QUIC_TLS13_MAX_HASH_LEN]; /* "c ap traffic" */
    uint8_t server_application_traffic[VEGA__QUIC_TLS13_MAX_HASH_LEN]; /* "s ap traffic" */
    uint8_t exporter_master[VEGA__QUIC_TLS13_MAX_HASH_LEN];            /* "exp master" */
    uint8_t resumption_master[VEGA__QUIC_TLS13_MAX_HASH_LEN];          /* "res master" */
};

/*
 * Starts a schedule: early_secret = HKDF-Extract(0, psk), or of HashLen zeros without a PSK.
 * hash: SHA-256 or SHA-384. psk: borrowed, NULL with psk_len 0 for none, else 1 to
 * VEGA__QUIC_TLS13_MAX_PSK_LEN bytes.
 * Returns 0; -EINVAL (other hash, bad psk length); VEGA_ERR_CRYPTO_LIBCRYPTO
 * (s is wiped on any failure). Context: any.
 */
int vega__quic_tls13_schedule_init(struct vega__quic_tls13_schedule *s, vega_crypto_hash_alg hash,
                                   const uint8_t *psk, size_t psk_len);

/*
 * The PSK binder key (RFC 8446 §7.1): Derive-Secret(early_secret, "ext binder" for an external
 * PSK or "res binder" for a resumption one, ""). Its finished key signs the binder
 * (vega__quic_tls13_finished over the truncated ClientHello's hash). out: hash_len bytes.
 * Returns 0; -EINVAL (s not at the early stage: the early secret is wiped once
 * the handshake secret exists); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any.
 */
int vega__quic_tls13_schedule_binder_key(const struct vega__quic_tls13_schedule *s, bool external,
                                         uint8_t *out);

/*
 * The 0-RTT secret client_early_traffic_secret = Derive-Secret(early_secret, "c e traffic",
 * ClientHello). ch_hash: the transcript hash of the ClientHello, hash_len bytes. out: hash_len.
 * Returns 0; -EINVAL (not at the early stage, hash length);
 * VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any.
 */
int vega__quic_tls13_schedule_early_traffic(const struct vega__quic_tls13_schedule *s,
                                            const uint8_t *ch_hash, size_t hash_len, uint8_t *out);

/*
 * Moves from the early to the handshake stage: handshake_secret = HKDF-Extract(
 * Derive-Secret(early_secret, "derived", ""), shared), then the client and server handshake
 * traffic secrets over th, the transcript hash through ServerHello (hash_len bytes).
 * shared: the (EC)DHE secret, 1 to VEGA__QUIC_TLS13_MAX_SHARED_LEN bytes. Borrowed both.
 * Each stage wipes the secret nothing derives from any more (early_secret here,
 * handshake_secret at application, master_secret at resumption): read them before moving on.
 * Returns 0; -EINVAL (not at the early stage, bad lengths; s is unchanged);
 * VEGA_ERR_CRYPTO_LIBCRYPTO (s is wiped). Context: any.
 */
int vega__quic_tls13_schedule_handshake(struct vega__quic_tls13_schedule *s, const uint8_t *shared,
                                        size_t shared_len, const uint8_t *th, size_t th_len);

/*
 * Moves from the handshake to the application stage: master_secret = HKDF-Extract(
 * Derive-Secret(handshake_secret, "derived", ""), 0), then the client and server application
 * traffic secrets and the exporter master secret over th, the transcript hash through the
 * server Finished. Returns as vega__quic_tls13_schedule_handshake. Context: any.
 */
int vega__quic_tls13_schedule_application(struct vega__quic_tls13_schedule *s, const uint8_t *th,
                                          size_t th_len);

/*
 * Moves from the application to the resumption stage: resumption_master =
 * Derive-Secret(master_secret, "res master", th), th the transcript hash through the client
 * Finished. Returns as vega__quic_tls13_schedule_handshake. Context: any.
 */
int vega__quic_tls13_schedule_resumption(struct vega__quic_tls13_schedule *s, const uint8_t *th,
                                         size_t th_len);

/* Wipes every secret in s and returns it to the NONE stage. Context: any. */
void vega__quic_tls13_schedule_wipe(struct vega__quic_tls13_schedule *s);

/*
 * Finished verify_data (RFC 8446 §4.4.4): HMAC(finished_key, th) with finished_key =
 * HKDF-Expand-Label(base_key, "finished", "", HashLen). base_key: the sender's handshake
 * traffic secret (or a binder key), th: the transcript hash up to the Finished (or the
 * truncated ClientHello), both hash_len bytes; out: hash_len bytes. All borrowed.
 * Returns 0; -EINVAL (hash not SHA-256/384, bad lengths);
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any.
 */
int vega__quic_tls13_finished(vega_crypto_hash_alg hash, const uint8_t *base_key, size_t key_len,
                              const uint8_t *th, size_t th_len, uint8_t *out);

/*
 * Checks a peer's Finished verify_data (or a PSK binder) in constant time against the
 * expected one (vega__quic_tls13_finished). got: borrowed, got_len bytes (a wrong length fails
 * like a wrong value: it is the peer's).
 * Returns 0; VEGA_ERR_PROTO with *wire_err (may be NULL) = CRYPTO_ERROR + decrypt_error (0x133);
 * -EINVAL; VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any.
 */
int vega__quic_tls13_finished_check(vega_crypto_hash_alg hash, const uint8_t *base_key,
                                    size_t key_len, const uint8_t *th, size_t th_len,
                                    const uint8_t *got, size_t got_len, uint64_t *wire_err);

/*
 * The PSK a NewSessionTicket stands for (RFC 8446 §4.6.1): HKDF-Expand-Label(
 * resumption_master, "resumption", ticket_nonce, HashLen). res_master: hash_len bytes;
 * nonce: 0 to 255 bytes (may be NULL when empty); out: hash_len bytes. All borrowed.
 * Returns 0; -EINVAL; VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any.
 */
int vega__quic_tls13_resumption_psk(vega_crypto_hash_alg hash, const uint8_t *res_master,
                                    size_t res_len, const uint8_t *nonce, size_t nonce_len,
                                    uint8_t *out);

#endif
