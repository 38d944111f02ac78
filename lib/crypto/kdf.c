/* SPDX-License-Identifier: MIT */
/* HKDF (RFC 5869), HKDF-Expand-Label (RFC 8446 §7.1, RFC 9001 §5.1) and PBKDF2 (RFC 8018). */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/kdf.h>

#include "crypto_int.h"

/* Runs libcrypto's HKDF in mode (extract-only or expand-only) with key, and salt or info. */
static int hkdf_run(vega_crypto_hash_alg alg, int mode, const uint8_t *key, size_t key_len,
                    const char *extra_name, const uint8_t *extra, size_t extra_len, uint8_t *out,
                    size_t out_len)
{
    static const uint8_t empty[1];
    const char *md = vega__crypto_md_name(alg);
    OSSL_PARAM params[5], *p = params;
    *p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
    *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)md, 0);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)(key_len ? key : empty),
                                             key_len);
    if (extra_len)
        *p++ = OSSL_PARAM_construct_octet_string(extra_name, (void *)extra, extra_len);
    *p = OSSL_PARAM_construct_end();

    EVP_KDF *kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF, NULL);
    EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    int ok = kctx && EVP_KDF_derive(kctx, out, out_len, params) == 1;
    EVP_KDF_CTX_free(kctx);
    EVP_KDF_free(kdf);
    return ok ? 0 : vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
}

int vega_crypto_hkdf_extract(vega_crypto_hash_alg alg, const uint8_t *salt, size_t salt_len,
                             const uint8_t *ikm, size_t ikm_len, uint8_t *prk)
{
    size_t hl = vega_crypto_hash_len(alg);
    if (!hl)
        return -EINVAL;
    /* RFC 5869 §2.2: "if not provided, [salt] is set to a string of HashLen zeros". HMAC pads
     * its key with zeros, so an absent salt and HashLen zeros give the same PRK. */
    return hkdf_run(alg, EVP_KDF_HKDF_MODE_EXTRACT_ONLY, ikm, ikm_len, OSSL_KDF_PARAM_SALT, salt,
                    salt_len, prk, hl);
}

int vega_crypto_hkdf_expand(vega_crypto_hash_alg alg, const uint8_t *prk, size_t prk_len,
                            const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len)
{
    size_t hl = vega_crypto_hash_len(alg);
    /* RFC 5869 §2.3: PRK is "at least HashLen octets"; L <= 255*HashLen. */
    if (!hl || prk_len < hl || out_len == 0 || out_len > 255 * hl)
        return -EINVAL;
    return hkdf_run(alg, EVP_KDF_HKDF_MODE_EXPAND_ONLY, prk, prk_len, OSSL_KDF_PARAM_INFO, info,
                    info_len, out, out_len);
}

#define LABEL_PREFIX     "tls13 "
#define LABEL_PREFIX_LEN (sizeof(LABEL_PREFIX) - 1)

int vega_crypto_hkdf_expand_label(vega_crypto_hash_alg alg, const uint8_t *secret,
                                  size_t secret_len, const char *label, const uint8_t *context,
                                  size_t context_len, uint8_t *out, size_t out_len)
{
    /* RFC 8446 §7.1:
     *   struct {
     *       uint16 length = Length;
     *       opaque label<7..255> = "tls13 " + Label;
     *       opaque context<0..255> = Context;
     *   } HkdfLabel; */
    size_t label_len = strlen(label);
    if (label_len == 0 || label_len > 255 - LABEL_PREFIX_LEN || context_len > 255 ||
        out_len > 0xffff)
        return -EINVAL;
    uint8_t info[2 + 1 + 255 + 1 + 255];
    size_t n = 0;
    info[n++] = (uint8_t)(out_len >> 8);
    info[n++] = (uint8_t)out_len;
    info[n++] = (uint8_t)(LABEL_PREFIX_LEN + label_len);
    memcpy(info + n, LABEL_PREFIX, LABEL_PREFIX_LEN);
    n += LABEL_PREFIX_LEN;
    memcpy(info + n, label, label_len);
    n += label_len;
    info[n++] = (uint8_t)context_len;
    if (context_len)
        memcpy(info + n, context, context_len);
    n += context_len;
    return vega_crypto_hkdf_expand(alg, secret, secret_len, info, n, out, out_len);
}

int vega_crypto_pbkdf2(vega_crypto_hash_alg alg, const void *pass, size_t pass_len,
                       const uint8_t *salt, size_t salt_len, uint32_t iterations, uint8_t *out,
                       size_t out_len)
{
    const char *name = vega__crypto_md_name(alg);
    if (!name || iterations == 0 || iterations > INT_MAX || out_len == 0 || out_len > INT_MAX ||
        pass_len > INT_MAX || salt_len > INT_MAX)
        return -EINVAL;
    EVP_MD *md = EVP_MD_fetch(NULL, name, NULL);
    int ok = md && PKCS5_PBKDF2_HMAC(pass_len ? pass : "", (int)pass_len,
                                     salt_len ? salt : (const uint8_t *)"", (int)salt_len,
                                     (int)iterations, md, (int)out_len, out) == 1;
    EVP_MD_free(md);
    return ok ? 0 : vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
}
