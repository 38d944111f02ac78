/* SPDX-License-Identifier: MIT */
/* Internal helpers shared by the lib/crypto files: algorithm names, error exits, DER framing. */
#ifndef VEGA_CRYPTO_INT_H
#define VEGA_CRYPTO_INT_H

#include <limits.h>

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

#endif
