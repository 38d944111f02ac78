/* SPDX-License-Identifier: MIT */
/* Cryptographic primitives over libcrypto (OpenSSL 3.0 EVP) for the TLS 1.3 (RFC 8446) and QUIC
 * (RFC 9001) handshakes: hashes, HMAC, HKDF and HKDF-Expand-Label, PBKDF2, AEAD, QUIC header
 * protection, X25519/P-256 key exchange, signatures, certificate chains and random bytes. */
#ifndef VEGA_CRYPTO_H
#define VEGA_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Threading: every function may be called from any thread and never suspends. A context
 * (vega_crypto_hash, vega_crypto_aead, vega_crypto_hp, vega_crypto_kex) is used by one thread
 * at a time. A vega_crypto_key, a vega_crypto_cert_chain and a vega_crypto_cert_store are
 * read-only after they are built and may be used by several threads at once. No global state
 * besides libcrypto's own. On failure, the libcrypto error queue of the calling thread is
 * cleared, so it never leaks into an unrelated SSL_get_error().
 */

/* ---- error codes (-10300 .. -10399) ------------------------------------------------------- */

/* None of these leaves the object that returned it unusable: after VEGA_ERR_CRYPTO_AUTH, say,
 * the AEAD context opens the next packet as usual. (vega_err_is_fatal does not know them yet.) */

enum {
    VEGA_ERR_CRYPTO_BASE = -10300,
    VEGA_ERR_CRYPTO_LIBCRYPTO = -10301,          /* libcrypto failed unexpectedly */
    VEGA_ERR_CRYPTO_UNSUPPORTED = -10302,        /* algorithm or key type not supported */
    VEGA_ERR_CRYPTO_AUTH = -10303,               /* AEAD open: authentication failed */
    VEGA_ERR_CRYPTO_BAD_KEY = -10304,            /* key data could not be parsed */
    VEGA_ERR_CRYPTO_KEY_MISMATCH = -10305,       /* the key cannot be used for this operation */
    VEGA_ERR_CRYPTO_BAD_PUBLIC = -10306,         /* invalid peer key share (length, point, order) */
    VEGA_ERR_CRYPTO_BAD_SIGNATURE = -10307,      /* the signature does not verify */
    VEGA_ERR_CRYPTO_BAD_CERT = -10308,           /* certificate data could not be parsed */
    VEGA_ERR_CRYPTO_CA_LOAD = -10309,            /* CA file or directory could not be loaded */
    VEGA_ERR_CRYPTO_CERT_EXPIRED = -10310,       /* a certificate in the chain has expired */
    VEGA_ERR_CRYPTO_CERT_NOT_YET_VALID = -10311, /* a certificate is not valid yet */
    VEGA_ERR_CRYPTO_CERT_UNKNOWN_CA = -10312,    /* the chain does not lead to a trusted CA */
    VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH = -10313, /* the leaf does not match the host name/IP */
    VEGA_ERR_CRYPTO_CERT_BAD_SIGNATURE = -10314, /* a certificate signature is wrong */
    VEGA_ERR_CRYPTO_CERT_INVALID = -10315, /* other chain failure (usage, constraints, depth) */
    VEGA_ERR_CRYPTO_LAST = -10316,
};

/* Message for any code (the crypto ones above, else vega_strerror's); never NULL.
 * Context: any thread. Since 0.1. */
VEGA_API const char *vega_crypto_strerror(int err);

/* Symbolic name ("VEGA_ERR_CRYPTO_AUTH"), else vega_err_name's; never NULL.
 * Context: any thread. Since 0.1. */
VEGA_API const char *vega_crypto_err_name(int err);

/* ---- utilities ----------------------------------------------------------------------------- */

/*
 * Fills buf with len bytes from libcrypto's CSPRNG (RAND_bytes). buf: borrowed.
 * Returns 0 or VEGA_ERR_CRYPTO_LIBCRYPTO (the generator is not seeded or failed; buf is then
 * unspecified and must not be used). Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_random(void *buf, size_t len);

/* True when the len bytes at a and b are equal, in time that depends only on len (CRYPTO_memcmp).
 * a, b: borrowed. Context: any thread. Since 0.1. */
VEGA_API bool vega_crypto_ct_equal(const void *a, const void *b, size_t len);

/* Overwrites len bytes at p with zeros in a way the compiler keeps (OPENSSL_cleanse).
 * p: borrowed. Context: any thread. Since 0.1. */
VEGA_API void vega_crypto_cleanse(void *p, size_t len);

/* ---- hashes and HMAC ----------------------------------------------------------------------- */

typedef enum vega_crypto_hash_alg {
    VEGA_CRYPTO_SHA1 = 1, /* legacy: for verifying old data only */
    VEGA_CRYPTO_SHA256,
    VEGA_CRYPTO_SHA384,
    VEGA_CRYPTO_SHA512,
    VEGA_CRYPTO_MD5, /* legacy, broken: only where a protocol still names it (HTTP Digest
                        authentication's MD5, RFC 7616); never for new designs */
} vega_crypto_hash_alg;

#define VEGA_CRYPTO_HASH_MAX_LEN 64 /* the largest digest (SHA-512) */

/* Digest length of alg in bytes (20, 32, 48, 64; MD5 16); 0 for an unknown alg.
 * Context: any thread. Since 0.1. */
VEGA_API size_t vega_crypto_hash_len(vega_crypto_hash_alg alg);

/*
 * One-shot digest of len bytes at in. in: borrowed; out: borrowed, receives
 * vega_crypto_hash_len(alg) bytes.
 * Returns 0; -EINVAL (unknown alg); VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_hash_digest(vega_crypto_hash_alg alg, const void *in, size_t len,
                                     uint8_t *out);

/* Incremental hash context (opaque): new, update..., final (which resets it for reuse). */
typedef struct vega_crypto_hash vega_crypto_hash;

/*
 * Creates an incremental hash context. out: receives the context, owned by the caller
 * (vega_crypto_hash_free).
 * Returns 0; -EINVAL (unknown alg); -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_hash_new(vega_crypto_hash **out, vega_crypto_hash_alg alg);

/* Adds len bytes at data. data: borrowed. Returns 0 or VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: one thread at a time per h. Since 0.1. */
VEGA_API int vega_crypto_hash_update(vega_crypto_hash *h, const void *data, size_t len);

/* Writes the digest of everything added since the last reset to out (vega_crypto_hash_len
 * bytes; borrowed) and resets h to empty. Returns 0 or VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: one thread at a time per h. Since 0.1. */
VEGA_API int vega_crypto_hash_final(vega_crypto_hash *h, uint8_t *out);

/* Writes the digest of everything added so far to out without ending the hash: more data may
 * follow (a TLS transcript hash, RFC 8446 §4.4.1). out: borrowed.
 * Returns 0; -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO. Context: one thread at a time per h. Since 0.1. */
VEGA_API int vega_crypto_hash_peek(vega_crypto_hash *h, uint8_t *out);

/* Discards the data added so far. Returns 0 or VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: one thread at a time per h. Since 0.1. */
VEGA_API int vega_crypto_hash_reset(vega_crypto_hash *h);

/* The algorithm h was created with. Context: any thread. Since 0.1. */
VEGA_API vega_crypto_hash_alg vega_crypto_hash_get_alg(const vega_crypto_hash *h);

/* Frees h (NULL is fine). Context: any thread. Since 0.1. */
VEGA_API void vega_crypto_hash_free(vega_crypto_hash *h);

/*
 * One-shot HMAC (RFC 2104) of in under key. key (may be empty), in: borrowed; out: borrowed,
 * receives vega_crypto_hash_len(alg) bytes.
 * Returns 0; -EINVAL (unknown alg); VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_hmac_digest(vega_crypto_hash_alg alg, const void *key, size_t key_len,
                                     const void *in, size_t len, uint8_t *out);

/* ---- key derivation ------------------------------------------------------------------------ */

/*
 * HKDF-Extract (RFC 5869 §2.2): prk = HMAC-Hash(salt, ikm). An empty salt means HashLen zero
 * bytes. salt, ikm: borrowed (either may be empty); prk: borrowed, receives
 * vega_crypto_hash_len(alg) bytes.
 * Returns 0; -EINVAL (unknown alg); VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_hkdf_extract(vega_crypto_hash_alg alg, const uint8_t *salt,
                                      size_t salt_len, const uint8_t *ikm, size_t ikm_len,
                                      uint8_t *prk);

/*
 * HKDF-Expand (RFC 5869 §2.3): out_len bytes of output keying material. prk (at least
 * HashLen bytes), info (may be empty): borrowed; out: borrowed, must not overlap prk.
 * Returns 0; -EINVAL (unknown alg, prk shorter than HashLen, out_len 0 or above
 * 255 * HashLen); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_hkdf_expand(vega_crypto_hash_alg alg, const uint8_t *prk, size_t prk_len,
                                     const uint8_t *info, size_t info_len, uint8_t *out,
                                     size_t out_len);

/*
 * HKDF-Expand-Label (RFC 8446 §7.1; also QUIC's, RFC 9001 §5.1):
 * HKDF-Expand(secret, HkdfLabel, out_len) with HkdfLabel = uint16 out_len,
 * opaque label<7..255> = "tls13 " + label, opaque context<0..255>.
 * label: borrowed NUL-terminated string without the "tls13 " prefix ("key", "quic hp",
 * "c hs traffic"), 1 to 249 bytes. secret, context (may be empty): borrowed; out: borrowed,
 * must not overlap secret. Derive-Secret(S, L, M) is this with context = Transcript-Hash(M)
 * and out_len = HashLen.
 * Returns 0; -EINVAL (unknown alg, empty label, label or context too long,
 * out_len 0 or above 255 * HashLen, secret shorter than HashLen); VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_hkdf_expand_label(vega_crypto_hash_alg alg, const uint8_t *secret,
                                           size_t secret_len, const char *label,
                                           const uint8_t *context, size_t context_len, uint8_t *out,
                                           size_t out_len);

/*
 * PBKDF2 with HMAC-alg (RFC 8018 §5.2). pass, salt: borrowed (either may be empty); out:
 * borrowed, out_len bytes.
 * Returns 0; -EINVAL (unknown alg, iterations 0, out_len 0, a length above
 * INT_MAX); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any thread; CPU-bound for large iteration
 * counts (run it on a blocking thread). Since 0.1.
 */
VEGA_API int vega_crypto_pbkdf2(vega_crypto_hash_alg alg, const void *pass, size_t pass_len,
                                const uint8_t *salt, size_t salt_len, uint32_t iterations,
                                uint8_t *out, size_t out_len);

/* ---- AEAD (RFC 5116) ----------------------------------------------------------------------- */

typedef enum vega_crypto_aead_alg {
    VEGA_CRYPTO_AES_128_GCM = 1,
    VEGA_CRYPTO_AES_256_GCM,
    VEGA_CRYPTO_CHACHA20_POLY1305,
} vega_crypto_aead_alg;

#define VEGA_CRYPTO_AEAD_TAG_LEN     16
#define VEGA_CRYPTO_AEAD_NONCE_LEN   12
#define VEGA_CRYPTO_AEAD_MAX_KEY_LEN 32

/* Key length of alg in bytes (16 or 32); 0 for an unknown alg. The same length is used for the
 * QUIC header protection key. Context: any thread. Since 0.1. */
VEGA_API size_t vega_crypto_aead_key_len(vega_crypto_aead_alg alg);

/* A keyed AEAD context (opaque): created once per key, then one seal or open per packet. */
typedef struct vega_crypto_aead vega_crypto_aead;

/*
 * Creates an AEAD context keyed with key. key: borrowed (copied into libcrypto's key
 * schedule; wipe yours when done). out: receives the context, owned by the caller
 * (vega_crypto_aead_free, which wipes the key schedule).
 * Returns 0; -EINVAL (unknown alg, key_len not vega_crypto_aead_key_len(alg));
 * -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_aead_new(vega_crypto_aead **out, vega_crypto_aead_alg alg,
                                  const uint8_t *key, size_t key_len);

/*
 * Encrypts len bytes at buf in place and appends the 16-byte tag, so buf needs
 * cap >= len + VEGA_CRYPTO_AEAD_TAG_LEN. nonce: borrowed, VEGA_CRYPTO_AEAD_NONCE_LEN bytes,
 * never reused with the same key (see vega_crypto_aead_nonce); aad (may be empty): borrowed,
 * must not overlap buf; buf: borrowed.
 * Returns len + VEGA_CRYPTO_AEAD_TAG_LEN; VEGA_ERR_NOBUF (cap too small, buf untouched);
 * -EINVAL (len or aad_len above INT_MAX - 16); VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: one thread at a time per a. Since 0.1.
 */
VEGA_API vega_ssize vega_crypto_aead_seal(vega_crypto_aead *a, const uint8_t *nonce,
                                          const void *aad, size_t aad_len, uint8_t *buf, size_t len,
                                          size_t cap);

/* One piece of the plaintext vega_crypto_aead_seal_gather seals: len bytes at src, or, when src
 * is NULL, the len bytes already at that place in the output. Since 0.1. */
typedef struct vega_crypto_piece {
    const uint8_t *src;
    size_t len;
} vega_crypto_piece;

/*
 * vega_crypto_aead_seal with the plaintext gathered from n pieces: the ciphertext of the pieces
 * in order goes to out, followed by the 16-byte tag; a piece with a src is encrypted from there
 * (no copy into out first), one without is encrypted in place. The result is byte for byte
 * vega_crypto_aead_seal's on the pieces' concatenation. nonce, aad: as for vega_crypto_aead_seal;
 * pieces: borrowed; a src must not overlap out unless it is exactly its place there; out:
 * borrowed, cap bytes.
 * Returns the pieces' total length + VEGA_CRYPTO_AEAD_TAG_LEN; VEGA_ERR_NOBUF (cap too small,
 * out untouched); -EINVAL (the total or aad_len above INT_MAX - 16, or pieces NULL with n
 * above 0); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: one thread at a time per a. Since 0.1.
 */
VEGA_API vega_ssize vega_crypto_aead_seal_gather(vega_crypto_aead *a, const uint8_t *nonce,
                                                 const void *aad, size_t aad_len, uint8_t *out,
                                                 size_t cap, const vega_crypto_piece *pieces,
                                                 size_t n);

/*
 * Verifies and decrypts in place len bytes at buf (ciphertext followed by the 16-byte tag).
 * nonce, aad (may be empty): borrowed; buf: borrowed.
 * Returns the plaintext length (len - 16), the plaintext at the start of buf;
 * VEGA_ERR_CRYPTO_AUTH (len below 16, or the tag does not verify: the packet is forged or
 * damaged; the first len - 16 bytes of buf are then zeroed, never left holding unauthenticated
 * plaintext); -EINVAL (a length above INT_MAX - 16); VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: one thread at a time per a. Since 0.1.
 */
VEGA_API vega_ssize vega_crypto_aead_open(vega_crypto_aead *a, const uint8_t *nonce,
                                          const void *aad, size_t aad_len, uint8_t *buf,
                                          size_t len);

/* The algorithm a was created with. Context: any thread. Since 0.1. */
VEGA_API vega_crypto_aead_alg vega_crypto_aead_get_alg(const vega_crypto_aead *a);

/* Frees a (NULL is fine), wiping its key schedule. Context: any thread. Since 0.1. */
VEGA_API void vega_crypto_aead_free(vega_crypto_aead *a);

/* Per-record nonce (RFC 8446 §5.3, RFC 9001 §5.3): the 12-byte iv with the 64-bit sequence or
 * packet number, big-endian, XORed into its last 8 bytes. iv, nonce: borrowed, 12 bytes each
 * (may be the same buffer). Context: any thread. Since 0.1. */
VEGA_API void vega_crypto_aead_nonce(const uint8_t *iv, uint64_t seq, uint8_t *nonce);

/* ---- QUIC header protection (RFC 9001 §5.4) ------------------------------------------------ */

#define VEGA_CRYPTO_HP_SAMPLE_LEN 16
#define VEGA_CRYPTO_HP_MASK_LEN   5

/* A header protection key (opaque) for the AEAD alg: AES-ECB for the AES-GCM suites (§5.4.3),
 * the ChaCha20 block function for ChaCha20-Poly1305 (§5.4.4). */
typedef struct vega_crypto_hp vega_crypto_hp;

/*
 * Creates a header protection context. key: borrowed (the "quic hp" key,
 * vega_crypto_aead_key_len(alg) bytes). out: receives the context, owned by the caller
 * (vega_crypto_hp_free).
 * Returns 0; -EINVAL (unknown alg, wrong key_len); -ENOMEM;
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_hp_new(vega_crypto_hp **out, vega_crypto_aead_alg alg, const uint8_t *key,
                                size_t key_len);

/*
 * Computes the 5-byte mask from a 16-byte ciphertext sample. sample, mask: borrowed.
 * Returns 0 or VEGA_ERR_CRYPTO_LIBCRYPTO. Context: one thread at a time per hp. Since 0.1.
 */
VEGA_API int vega_crypto_hp_mask(vega_crypto_hp *hp, const uint8_t *sample, uint8_t *mask);

/* Frees hp (NULL is fine), wiping the key. Context: any thread. Since 0.1. */
VEGA_API void vega_crypto_hp_free(vega_crypto_hp *hp);

/* ---- key exchange (RFC 8446 §4.2.8.2, §7.4) ------------------------------------------------ */

/* The groups, by their TLS NamedGroup code points. */
typedef enum vega_crypto_group {
    VEGA_CRYPTO_GROUP_SECP256R1 = 0x0017,
    VEGA_CRYPTO_GROUP_X25519 = 0x001d,
} vega_crypto_group;

#define VEGA_CRYPTO_KEX_MAX_PUBLIC 65 /* an uncompressed P-256 point */
#define VEGA_CRYPTO_KEX_SECRET_LEN 32 /* the shared secret of either group */

/* Public key length in TLS wire form: 32 (X25519) or 65 (P-256); 0 for an unknown group.
 * Context: any thread. Since 0.1. */
VEGA_API size_t vega_crypto_kex_public_len(vega_crypto_group g);

/* An ephemeral key pair (opaque). */
typedef struct vega_crypto_kex vega_crypto_kex;

/*
 * Generates a fresh key pair for g. out: receives it, owned by the caller
 * (vega_crypto_kex_free).
 * Returns 0; -EINVAL (unknown group); -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_kex_new(vega_crypto_kex **out, vega_crypto_group g);

/*
 * Builds the key pair from a known private key, for test vectors and deterministic tests: 32
 * bytes, the X25519 scalar (RFC 7748 §5, clamped internally) or the big-endian P-256 scalar
 * (0 < d < n). priv: borrowed. out: as for vega_crypto_kex_new.
 * Returns 0; -EINVAL (unknown group, priv_len not 32); VEGA_ERR_CRYPTO_BAD_KEY
 * (P-256 scalar out of range); -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_kex_new_private(vega_crypto_kex **out, vega_crypto_group g,
                                         const uint8_t *priv, size_t priv_len);

/*
 * Copies the public key in TLS wire form (the KeyShareEntry key_exchange): 32 bytes for X25519,
 * a 65-byte uncompressed point (0x04 || X || Y) for P-256. out: borrowed.
 * Returns the length written; VEGA_ERR_NOBUF (cap too small).
 * Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_crypto_kex_get_public(const vega_crypto_kex *k, uint8_t *out, size_t cap);

/*
 * Computes the shared secret with the peer's public key in TLS wire form. peer, secret:
 * borrowed. The secret is the X25519 output or the P-256 x-coordinate, 32 bytes
 * (RFC 8446 §7.4.1, §7.4.2).
 * Returns VEGA_CRYPTO_KEX_SECRET_LEN; VEGA_ERR_NOBUF (cap below 32);
 * VEGA_ERR_CRYPTO_BAD_PUBLIC (wrong length, not an uncompressed point, not on the curve, or an
 * X25519 result of all zeros from a small-order point: RFC 8446 §7.4.2 "MUST check");
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: one thread at a time per k. Since 0.1.
 */
VEGA_API vega_ssize vega_crypto_kex_derive(vega_crypto_kex *k, const uint8_t *peer, size_t peer_len,
                                           uint8_t *secret, size_t cap);

/* The group of k. Context: any thread. Since 0.1. */
VEGA_API vega_crypto_group vega_crypto_kex_get_group(const vega_crypto_kex *k);

/* Frees k (NULL is fine), wiping the private key. Context: any thread. Since 0.1. */
VEGA_API void vega_crypto_kex_free(vega_crypto_kex *k);

/* ---- signature keys (RFC 8446 §4.2.3, §4.4.3) ---------------------------------------------- */

/* The signature schemes, by their TLS SignatureScheme code points. */
typedef enum vega_crypto_sig_alg {
    VEGA_CRYPTO_SIG_RSA_PKCS1_SHA256 = 0x0401, /* verify only (certificates, TLS 1.2 peers) */
    VEGA_CRYPTO_SIG_RSA_PKCS1_SHA384 = 0x0501, /* verify only */
    VEGA_CRYPTO_SIG_RSA_PKCS1_SHA512 = 0x0601, /* verify only */
    VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256 = 0x0403,
    VEGA_CRYPTO_SIG_ECDSA_SECP384R1_SHA384 = 0x0503,
    VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA256 = 0x0804,
    VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA384 = 0x0805,
    VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA512 = 0x0806,
    VEGA_CRYPTO_SIG_ED25519 = 0x0807,
} vega_crypto_sig_alg;

typedef enum vega_crypto_key_type {
    VEGA_CRYPTO_KEY_RSA = 1, /* rsaEncryption keys (not id-RSASSA-PSS ones) */
    VEGA_CRYPTO_KEY_P256,
    VEGA_CRYPTO_KEY_P384,
    VEGA_CRYPTO_KEY_ED25519,
} vega_crypto_key_type;

/* A private or public signature key (opaque, immutable once loaded). */
typedef struct vega_crypto_key vega_crypto_key;

/*
 * Loads a private key: PEM ("PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"; not encrypted)
 * or DER (PKCS#8, or PKCS#1 / SEC 1). data: borrowed. out: receives the key, owned by the
 * caller (vega_crypto_key_free).
 * Returns 0; VEGA_ERR_CRYPTO_BAD_KEY (not a key, or an encrypted one);
 * VEGA_ERR_CRYPTO_UNSUPPORTED (a key type not in vega_crypto_key_type); -ENOMEM.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_key_load_private(vega_crypto_key **out, const void *data, size_t len);

/*
 * Loads a public key: PEM "PUBLIC KEY" or DER SubjectPublicKeyInfo. data: borrowed. out: as
 * for vega_crypto_key_load_private.
 * Returns 0; VEGA_ERR_CRYPTO_BAD_KEY; VEGA_ERR_CRYPTO_UNSUPPORTED; -ENOMEM.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_key_load_public(vega_crypto_key **out, const void *data, size_t len);

/*
 * Loads the public key of an X.509 certificate, PEM or DER (the first one if several).
 * data: borrowed. out: as for vega_crypto_key_load_private.
 * Returns 0; VEGA_ERR_CRYPTO_BAD_CERT; VEGA_ERR_CRYPTO_UNSUPPORTED; -ENOMEM.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_key_from_cert(vega_crypto_key **out, const void *data, size_t len);

/* The type of k. Context: any thread. Since 0.1. */
VEGA_API vega_crypto_key_type vega_crypto_key_get_type(const vega_crypto_key *k);

/* True when k holds a private key (it can sign). Context: any thread. Since 0.1. */
VEGA_API bool vega_crypto_key_is_private(const vega_crypto_key *k);

/* True when k can verify (and, if private, sign) with alg: the key type matches the scheme,
 * including the curve for ECDSA (RFC 8446 §4.2.3). Context: any thread. Since 0.1. */
VEGA_API bool vega_crypto_key_supports(const vega_crypto_key *k, vega_crypto_sig_alg alg);

/*
 * The public half of k as a DER SubjectPublicKeyInfo (RFC 5280 §4.1.2.7: what public key pins
 * hash, curl's --pinnedpubkey) into out (cap bytes; borrowed). out NULL with cap 0 asks for the
 * length only.
 * Returns the length; VEGA_ERR_NOBUF (cap too small: nothing written); -EINVAL (k NULL);
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any thread; k may be shared. Since 0.1.
 */
VEGA_API vega_ssize vega_crypto_key_public_der(const vega_crypto_key *k, uint8_t *out, size_t cap);

/* The largest signature k makes, in bytes: a buffer of this size always fits.
 * Context: any thread. Since 0.1. */
VEGA_API size_t vega_crypto_key_sig_max(const vega_crypto_key *k);

/*
 * Signs len bytes at msg with alg (the message itself; it is hashed inside). ECDSA signatures
 * are DER-encoded (as TLS sends them); RSA-PSS uses MGF1 with the same hash and a salt as long
 * as the hash (RFC 8446 §4.2.3). msg, sig: borrowed.
 * Returns the signature length; VEGA_ERR_NOBUF (cap below vega_crypto_key_sig_max);
 * VEGA_ERR_CRYPTO_KEY_MISMATCH (public-only key, or alg does not fit the key);
 * VEGA_ERR_CRYPTO_UNSUPPORTED (an unknown alg, or RSA PKCS#1 v1.5, which is verify-only);
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any thread; k may be shared. Since 0.1.
 */
VEGA_API vega_ssize vega_crypto_key_sign(const vega_crypto_key *k, vega_crypto_sig_alg alg,
                                         const void *msg, size_t len, uint8_t *sig, size_t cap);

/*
 * Verifies sig over len bytes at msg with alg. msg, sig: borrowed.
 * Returns 0 (valid); VEGA_ERR_CRYPTO_BAD_SIGNATURE (invalid or malformed signature);
 * VEGA_ERR_CRYPTO_KEY_MISMATCH (alg does not fit the key); VEGA_ERR_CRYPTO_UNSUPPORTED
 * (unknown alg); VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any thread; k may be shared. Since 0.1.
 */
VEGA_API int vega_crypto_key_verify(const vega_crypto_key *k, vega_crypto_sig_alg alg,
                                    const void *msg, size_t len, const uint8_t *sig,
                                    size_t sig_len);

/* Frees k (NULL is fine). Context: any thread, once no other thread uses k. Since 0.1. */
VEGA_API void vega_crypto_key_free(vega_crypto_key *k);

/* The largest CertificateVerify content: 64 + 33 + 1 + VEGA_CRYPTO_HASH_MAX_LEN. */
#define VEGA_CRYPTO_TLS13_CV_MAX 162

/*
 * Builds the content a TLS 1.3 CertificateVerify signs (RFC 8446 §4.4.3): 64 bytes of 0x20,
 * the context string "TLS 1.3, server CertificateVerify" (is_server) or
 * "TLS 1.3, client CertificateVerify", a 0 byte, then the transcript hash. th: borrowed, at
 * most VEGA_CRYPTO_HASH_MAX_LEN bytes; out: borrowed.
 * Returns the length (98 + th_len); VEGA_ERR_NOBUF (cap too small);
 * -EINVAL (th_len 0 or above 64). Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_crypto_tls13_cv_content(bool is_server, const uint8_t *th, size_t th_len,
                                                 uint8_t *out, size_t cap);

/* ---- certificates -------------------------------------------------------------------------- */

/* An ordered certificate chain (opaque): the leaf first, then the certificates that certify
 * it, as a TLS Certificate message lists them (RFC 8446 §4.4.2). */
typedef struct vega_crypto_cert_chain vega_crypto_cert_chain;

#define VEGA_CRYPTO_CERT_CHAIN_MAX 32 /* certificates in one chain */

/* Creates an empty chain. out: receives it, owned by the caller (vega_crypto_cert_chain_free).
 * Returns 0 or -ENOMEM. Context: any thread. Since 0.1. */
VEGA_API int vega_crypto_cert_chain_new(vega_crypto_cert_chain **out);

/*
 * Appends one DER certificate (a TLS CertificateEntry's cert_data): exactly one Certificate,
 * no trailing bytes. der: borrowed (copied).
 * Returns 0; VEGA_ERR_CRYPTO_BAD_CERT (not exactly one well-formed certificate, or one with
 * malformed extensions; the chain is unchanged); VEGA_ERR_FULL (the chain already holds
 * VEGA_CRYPTO_CERT_CHAIN_MAX); -ENOMEM. Context: one thread at a time per chain. Since 0.1.
 */
VEGA_API int vega_crypto_cert_chain_add_der(vega_crypto_cert_chain *c, const uint8_t *der,
                                            size_t len);

/*
 * Appends every certificate in data: PEM (one or more "CERTIFICATE" blocks; other blocks are
 * skipped) or DER (one or more certificates back to back). data: borrowed.
 * Returns 0; VEGA_ERR_CRYPTO_BAD_CERT (no certificate, or a malformed one; the chain is then
 * unchanged); VEGA_ERR_FULL (more than VEGA_CRYPTO_CERT_CHAIN_MAX in all); -ENOMEM.
 * Context: one thread at a time per chain. Since 0.1.
 */
VEGA_API int vega_crypto_cert_chain_add(vega_crypto_cert_chain *c, const void *data, size_t len);

/* Number of certificates. Context: any thread. Since 0.1. */
VEGA_API size_t vega_crypto_cert_chain_count(const vega_crypto_cert_chain *c);

/*
 * The DER bytes of certificate i (0 = leaf), e.g. to send it. der, len: receive a pointer
 * borrowed until c is freed, and its length.
 * Returns 0 or -EINVAL (i out of range). Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_cert_chain_get_der(const vega_crypto_cert_chain *c, size_t i,
                                            const uint8_t **der, size_t *len);

/*
 * The public key of certificate i (0 = leaf), to verify a CertificateVerify with. out:
 * receives a key owned by the caller (vega_crypto_key_free).
 * Returns 0; -EINVAL (i out of range); VEGA_ERR_CRYPTO_UNSUPPORTED (key type);
 * VEGA_ERR_CRYPTO_BAD_KEY; -ENOMEM. Context: any thread. Since 0.1.
 */
VEGA_API int vega_crypto_cert_chain_get_key(const vega_crypto_cert_chain *c, size_t i,
                                            vega_crypto_key **out);

/* Frees c (NULL is fine). Context: any thread, once no other thread uses c. Since 0.1. */
VEGA_API void vega_crypto_cert_chain_free(vega_crypto_cert_chain *c);

/* A set of trusted CA certificates (opaque; an X509_STORE). */
typedef struct vega_crypto_cert_store vega_crypto_cert_store;

/*
 * Creates a trust store. With ca_file and ca_dir both NULL, the system default (OpenSSL's
 * default file and directory, which $SSL_CERT_FILE and $SSL_CERT_DIR override); otherwise
 * the PEM bundle ca_file and/or the hashed directory ca_dir (c_rehash layout). ca_file, ca_dir:
 * borrowed. out: receives the store, owned by the caller (vega_crypto_cert_store_free).
 * Returns 0; VEGA_ERR_CRYPTO_CA_LOAD (ca_file unreadable or holds no certificate, ca_dir not
 * a directory, or the system defaults could not be set); -ENOMEM.
 * Context: any thread; reads files. Since 0.1.
 */
VEGA_API int vega_crypto_cert_store_new(vega_crypto_cert_store **out, const char *ca_file,
                                        const char *ca_dir);

/*
 * Adds the CA certificates of a PEM buffer (one or more "CERTIFICATE" blocks) as trust
 * anchors. pem: borrowed.
 * Returns 0; VEGA_ERR_CRYPTO_BAD_CERT (no certificate or a malformed one; those before it
 * were added); -ENOMEM. Context: one thread, before the store is shared. Since 0.1.
 */
VEGA_API int vega_crypto_cert_store_add_pem(vega_crypto_cert_store *s, const void *pem, size_t len);

/* Frees s (NULL is fine). Context: any thread, once no other thread uses s. Since 0.1. */
VEGA_API void vega_crypto_cert_store_free(vega_crypto_cert_store *s);

typedef enum vega_crypto_cert_purpose {
    VEGA_CRYPTO_CERT_SERVER = 0, /* the chain of a server (TLS client side) */
    VEGA_CRYPTO_CERT_CLIENT,     /* the chain of a client (TLS server side) */
} vega_crypto_cert_purpose;

/* Plain data: what to check. Zero it, then set host. */
typedef struct vega_crypto_cert_verify_opts {
    const char *host; /* DNS name, or IPv4/IPv6 literal (no brackets), the leaf must match (its
                         subjectAltName; the subject CN is never used; no partial wildcards);
                         NULL = no name check (only for a client's chain) */
    int64_t time;     /* verification time, seconds since the Unix epoch; 0 = now */
    vega_crypto_cert_purpose purpose;
    int max_depth; /* most intermediates allowed; 0 = libcrypto's default (100) */
} vega_crypto_cert_verify_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_CRYPTO_CERT_VERIFY_OPTS_VERSION 1

/* Details of a failed verification. */
typedef struct vega_crypto_cert_verify_result {
    int x509_error;     /* libcrypto's X509_V_ERR_* code (0 = X509_V_OK) */
    int depth;          /* the certificate it concerns (0 = leaf), -1 when none */
    const char *reason; /* libcrypto's message for x509_error: static, never NULL */
} vega_crypto_cert_verify_result;

/*
 * Verifies chain c (leaf first, the rest untrusted intermediates, in any order) against the
 * trust anchors of s: signatures, validity periods at o->time, CA constraints, key usage and
 * extended key usage for o->purpose, and the leaf's name against o->host (RFC 6125 via
 * X509_VERIFY_PARAM_set1_host / set1_ip_asc). c, s, o: borrowed; res: borrowed, may be NULL,
 * filled on success and failure.
 * Returns 0 (trusted); VEGA_ERR_CRYPTO_CERT_EXPIRED; VEGA_ERR_CRYPTO_CERT_NOT_YET_VALID;
 * VEGA_ERR_CRYPTO_CERT_UNKNOWN_CA (no path to a trust anchor, self-signed leaf);
 * VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH; VEGA_ERR_CRYPTO_CERT_BAD_SIGNATURE;
 * VEGA_ERR_CRYPTO_CERT_INVALID (any other X509_V_ERR_*; see res); -EINVAL
 * (empty chain, empty host); -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any thread; c and s may be shared by concurrent verifications; with the system
 * store, may read certificate files. Since 0.1.
 */
VEGA_API int vega_crypto_cert_chain_verify_versioned(const vega_crypto_cert_chain *c,
                                                     const vega_crypto_cert_store *s,
                                                     const vega_crypto_cert_verify_opts *o,
                                                     vega_crypto_cert_verify_result *res,
                                                     int opts_version);
#define vega_crypto_cert_chain_verify(...)                                                         \
    vega_crypto_cert_chain_verify_versioned(__VA_ARGS__, VEGA_CRYPTO_CERT_VERIFY_OPTS_VERSION)

#ifdef __cplusplus
}
#endif
#endif
