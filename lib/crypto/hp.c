/* SPDX-License-Identifier: MIT */
/* QUIC header protection masks (RFC 9001 §5.4): AES-ECB (§5.4.3) and ChaCha20 (§5.4.4). */
#include <string.h>

#include "crypto_int.h"

struct vega_crypto_hp {
    EVP_CIPHER_CTX *ctx;
    bool chacha;
};

int vega_crypto_hp_new(vega_crypto_hp **out, vega_crypto_aead_alg alg, const uint8_t *key,
                       size_t key_len)
{
    *out = NULL;
    const char *name;
    switch (alg) {
    case VEGA_CRYPTO_AES_128_GCM:
        name = "AES-128-ECB";
        break;
    case VEGA_CRYPTO_AES_256_GCM:
        name = "AES-256-ECB";
        break;
    case VEGA_CRYPTO_CHACHA20_POLY1305:
        name = "ChaCha20";
        break;
    default:
        return VEGA_ERR_INVALID_ARG;
    }
    if (key_len != vega_crypto_aead_key_len(alg))
        return VEGA_ERR_INVALID_ARG;
    vega_crypto_hp *hp = calloc(1, sizeof(*hp));
    if (!hp)
        return -ENOMEM;
    hp->chacha = alg == VEGA_CRYPTO_CHACHA20_POLY1305;
    EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, name, NULL);
    hp->ctx = EVP_CIPHER_CTX_new();
    int ok = c && hp->ctx && EVP_CipherInit_ex2(hp->ctx, c, key, NULL, 1, NULL) == 1 &&
             EVP_CIPHER_CTX_set_padding(hp->ctx, 0) == 1;
    EVP_CIPHER_free(c);
    if (!ok) {
        vega_crypto_hp_free(hp);
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    }
    *out = hp;
    return 0;
}

int vega_crypto_hp_mask(vega_crypto_hp *hp, const uint8_t *sample, uint8_t *mask)
{
    int n = 0;
    if (hp->chacha) {
        /* §5.4.4: counter = sample[0..3] (little-endian), nonce = sample[4..15];
         * mask = ChaCha20(hp_key, counter, nonce, {0,0,0,0,0}). libcrypto's ChaCha20 "IV" is
         * exactly that: a 4-byte little-endian counter, then the 12-byte nonce. */
        static const uint8_t zeros[VEGA_CRYPTO_HP_MASK_LEN];
        if (EVP_CipherInit_ex2(hp->ctx, NULL, NULL, sample, 1, NULL) != 1 ||
            EVP_CipherUpdate(hp->ctx, mask, &n, zeros, sizeof(zeros)) != 1 ||
            n != VEGA_CRYPTO_HP_MASK_LEN)
            return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
        return 0;
    }
    /* §5.4.3: mask = AES-ECB(hp_key, sample), of which the first 5 bytes are used. ECB keeps
     * no state between blocks, so the context is reused as it is. */
    uint8_t block[16];
    if (EVP_CipherUpdate(hp->ctx, block, &n, sample, VEGA_CRYPTO_HP_SAMPLE_LEN) != 1 ||
        n != (int)sizeof(block))
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    memcpy(mask, block, VEGA_CRYPTO_HP_MASK_LEN);
    return 0;
}

void vega_crypto_hp_free(vega_crypto_hp *hp)
{
    if (!hp)
        return;
    EVP_CIPHER_CTX_free(hp->ctx);
    free(hp);
}
