/* SPDX-License-Identifier: MIT */
/* Internal helpers shared by the lib/crypto files: algorithm names, error exits, DER framing,
 * the per-packet cipher. */
#ifndef VEGA_CRYPTO_INT_H
#define VEGA_CRYPTO_INT_H

#include <limits.h>

#include <openssl/core_dispatch.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include <vega/crypto.h>

#include "base.h"

/* libcrypto's name for alg ("SHA256"), or NULL for an unknown alg. */
const char *vega__crypto_md_name(vega_crypto_hash_alg alg);

/* Failure exit: clears this thread's libcrypto error queue, so a later SSL_get_error() in an
 * unrelated TLS object is not confused by our leftovers, and returns err. */
static inline int vega__crypto_fail(int err)
{
    ERR_clear_error();
    return err;
}

/* Wraps pkey (taken on success) as a vega_crypto_key, checking its type.
 * Returns 0, VEGA_ERR_CRYPTO_UNSUPPORTED or -ENOMEM (pkey is freed on failure too). */
int vega__crypto_key_wrap(EVP_PKEY *pkey, bool is_private, vega_crypto_key **out);

/* True when data is PEM rather than DER: it does not start like DER (0x30, a SEQUENCE) and has
 * a "-----BEGIN " line somewhere. */
bool vega__crypto_is_pem(const void *data, size_t len);

/* DER framing (X.690 §8.1): the total length (header + contents) of the TLV at in[0..len),
 * definite form only, at most 4 length bytes, minimal encoding not required. Returns that
 * length (<= len) or VEGA_ERR_PROTO (truncated, indefinite, or too long). */
vega_ssize vega__crypto_der_tlv_len(const uint8_t *in, size_t len);

/*
 * A keyed cipher for the per-packet paths (AEAD seal/open, QUIC header protection). OpenSSL 3's
 * EVP layer costs more than the cipher on a 1200-byte packet: every EVP_CipherInit_ex2 drops
 * the context's cached IV length and asks the provider again through a string-keyed
 * OSSL_PARAM lookup. So, when the cipher comes from the built-in "default" provider, these
 * call that provider's dispatch table (provider-base(7), OSSL_PROVIDER_query_operation)
 * directly: the same implementation EVP would run, without the glue. Any other provider
 * (FIPS, an engine-backed or configured one) keeps the plain EVP path.
 */
typedef struct vega__crypto_cipher {
    EVP_CIPHER *alg;     /* keeps the provider loaded while the dispatch pointers are in use */
    EVP_CIPHER_CTX *evp; /* the EVP path; NULL on the direct one */
    void *pctx;          /* the provider's own context on the direct path */
    OSSL_FUNC_cipher_freectx_fn *freectx;
    OSSL_FUNC_cipher_encrypt_init_fn *einit;
    OSSL_FUNC_cipher_decrypt_init_fn *dinit;
    OSSL_FUNC_cipher_update_fn *update;
    OSSL_FUNC_cipher_final_fn *final;
    OSSL_FUNC_cipher_get_ctx_params_fn *get_params;
    OSSL_FUNC_cipher_set_ctx_params_fn *set_params;
    bool zero_upper; /* clear the vector registers' upper halves after each call (aead.c) */
} vega__crypto_cipher;

/* Fetches the libcrypto cipher name, keys c with key (encrypting; ECB without padding) and
 * picks the direct path when allowed and available (direct = false forces EVP, for tests).
 * Returns 0 or VEGA_ERR_CRYPTO_LIBCRYPTO (c is then empty and safe to fini). */
int vega__crypto_cipher_init(vega__crypto_cipher *c, const char *name, const uint8_t *key,
                             size_t key_len, bool direct);

/* True when c runs through the provider's dispatch table rather than EVP. */
static inline bool vega__crypto_cipher_is_direct(const vega__crypto_cipher *c)
{
    return c->pctx != NULL;
}

/* Sets the IV (iv_len must be the cipher's IV length) and the direction (enc 1 or 0); the key
 * stays. */
bool vega__crypto_cipher_start(vega__crypto_cipher *c, int enc, const uint8_t *iv, size_t iv_len);

/* Processes len bytes (len <= INT_MAX), which must all come out at once (stream, AEAD, whole
 * ECB blocks); out NULL feeds AEAD associated data. */
bool vega__crypto_cipher_update(vega__crypto_cipher *c, uint8_t *out, const uint8_t *in,
                                size_t len);

/* Ends an AEAD operation: computes the tag, or checks the one set for decryption. */
bool vega__crypto_cipher_final(vega__crypto_cipher *c, uint8_t *out);

/* Reads (get) or sets the AEAD tag of len bytes. */
bool vega__crypto_cipher_tag(vega__crypto_cipher *c, uint8_t *tag, size_t len, bool get);

/* Frees the contexts (libcrypto wipes the key schedule); c may be empty. */
void vega__crypto_cipher_fini(vega__crypto_cipher *c);

/* vega_crypto_aead_new and vega_crypto_hp_new with the path choice of vega__crypto_cipher_init
 * (the public ones pass direct = true), and which path an object got; for tests and benches. */
int vega__crypto_aead_new_ex(vega_crypto_aead **out, vega_crypto_aead_alg alg, const uint8_t *key,
                             size_t key_len, bool direct);
bool vega__crypto_aead_is_direct(const vega_crypto_aead *a);
int vega__crypto_hp_new_ex(vega_crypto_hp **out, vega_crypto_aead_alg alg, const uint8_t *key,
                           size_t key_len, bool direct);
bool vega__crypto_hp_is_direct(const vega_crypto_hp *hp);

#endif
