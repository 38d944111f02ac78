/* SPDX-License-Identifier: MIT */
/* SHA-1 and SHA-2 digests (FIPS 180-4), one-shot and incremental, and HMAC (RFC 2104). */
#include <string.h>

#include <openssl/core_names.h>

#include "crypto_int.h"

struct vega_crypto_hash {
    EVP_MD *md; /* fetched once per context: no per-message name lookup */
    EVP_MD_CTX *ctx;
    EVP_MD_CTX *scratch; /* for peek, allocated on first use */
    vega_crypto_hash_alg alg;
};

const char *vega__crypto_md_name(vega_crypto_hash_alg alg)
{
    switch (alg) {
    case VEGA_CRYPTO_SHA1:
        return "SHA1";
    case VEGA_CRYPTO_SHA256:
        return "SHA256";
    case VEGA_CRYPTO_SHA384:
        return "SHA384";
    case VEGA_CRYPTO_SHA512:
        return "SHA512";
    case VEGA_CRYPTO_MD5:
        return "MD5";
    }
    return NULL;
}

size_t vega_crypto_hash_len(vega_crypto_hash_alg alg)
{
    switch (alg) {
    case VEGA_CRYPTO_SHA1:
        return 20;
    case VEGA_CRYPTO_SHA256:
        return 32;
    case VEGA_CRYPTO_SHA384:
        return 48;
    case VEGA_CRYPTO_SHA512:
        return 64;
    case VEGA_CRYPTO_MD5:
        return 16;
    }
    return 0;
}

int vega_crypto_hash_digest(vega_crypto_hash_alg alg, const void *in, size_t len, uint8_t *out)
{
    const char *name = vega__crypto_md_name(alg);
    if (!name)
        return -EINVAL;
    size_t n = 0;
    if (!EVP_Q_digest(NULL, name, NULL, len ? in : "", len, out, &n))
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    return 0;
}

int vega_crypto_hash_new(vega_crypto_hash **out, vega_crypto_hash_alg alg)
{
    *out = NULL;
    const char *name = vega__crypto_md_name(alg);
    if (!name)
        return -EINVAL;
    vega_crypto_hash *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->alg = alg;
    h->md = EVP_MD_fetch(NULL, name, NULL);
    h->ctx = EVP_MD_CTX_new();
    if (!h->md || !h->ctx || !EVP_DigestInit_ex2(h->ctx, h->md, NULL)) {
        vega_crypto_hash_free(h);
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    }
    *out = h;
    return 0;
}

int vega_crypto_hash_update(vega_crypto_hash *h, const void *data, size_t len)
{
    if (len && !EVP_DigestUpdate(h->ctx, data, len))
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    return 0;
}

int vega_crypto_hash_final(vega_crypto_hash *h, uint8_t *out)
{
    if (!EVP_DigestFinal_ex(h->ctx, out, NULL) || !EVP_DigestInit_ex2(h->ctx, h->md, NULL))
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    return 0;
}

int vega_crypto_hash_peek(vega_crypto_hash *h, uint8_t *out)
{
    if (!h->scratch && !(h->scratch = EVP_MD_CTX_new()))
        return -ENOMEM;
    if (!EVP_MD_CTX_copy_ex(h->scratch, h->ctx) || !EVP_DigestFinal_ex(h->scratch, out, NULL))
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    return 0;
}

int vega_crypto_hash_reset(vega_crypto_hash *h)
{
    if (!EVP_DigestInit_ex2(h->ctx, h->md, NULL))
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    return 0;
}

vega_crypto_hash_alg vega_crypto_hash_get_alg(const vega_crypto_hash *h)
{
    return h->alg;
}

void vega_crypto_hash_free(vega_crypto_hash *h)
{
    if (!h)
        return;
    EVP_MD_CTX_free(h->scratch);
    EVP_MD_CTX_free(h->ctx);
    EVP_MD_free(h->md);
    free(h);
}

int vega_crypto_hmac_digest(vega_crypto_hash_alg alg, const void *key, size_t key_len,
                            const void *in, size_t len, uint8_t *out)
{
    const char *name = vega__crypto_md_name(alg);
    if (!name)
        return -EINVAL;
    /* An empty key is a valid HMAC key (zero-padded to the block size); libcrypto wants a
     * non-NULL pointer for it. */
    size_t n = 0;
    if (!EVP_Q_mac(NULL, "HMAC", NULL, name, NULL, key_len ? key : "", key_len,
                   len ? in : (const void *)"", len, out, vega_crypto_hash_len(alg), &n))
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    return 0;
}
