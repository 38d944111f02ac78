/* SPDX-License-Identifier: MIT */
/* QUIC header protection masks (RFC 9001 §5.4): AES-ECB (§5.4.3) and ChaCha20 (§5.4.4). */
#include <string.h>

#include "crypto_int.h"

struct vega_crypto_hp {
    vega__crypto_cipher c;
    bool chacha;
};

int vega__crypto_hp_new_ex(vega_crypto_hp **out, vega_crypto_aead_alg alg, const uint8_t *key,
                           size_t key_len, bool direct)
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
        return -EINVAL;
    }
    if (key_len != vega_crypto_aead_key_len(alg))
        return -EINVAL;
    vega_crypto_hp *hp = calloc(1, sizeof(*hp));
    if (!hp)
        return -ENOMEM;
    hp->chacha = alg == VEGA_CRYPTO_CHACHA20_POLY1305;
    int rc = vega__crypto_cipher_init(&hp->c, name, key, key_len, direct);
    /* The ChaCha20 "IV" must be the whole 16-byte sample (see vega_crypto_hp_mask). */
    if (rc == 0 && hp->chacha && EVP_CIPHER_get_iv_length(hp->c.alg) != VEGA_CRYPTO_HP_SAMPLE_LEN)
        rc = vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    if (rc < 0) {
        vega_crypto_hp_free(hp);
        return rc;
    }
    *out = hp;
    return 0;
}

int vega_crypto_hp_new(vega_crypto_hp **out, vega_crypto_aead_alg alg, const uint8_t *key,
                       size_t key_len)
{
    return vega__crypto_hp_new_ex(out, alg, key, key_len, true);
}

bool vega__crypto_hp_is_direct(const vega_crypto_hp *hp)
{
    return vega__crypto_cipher_is_direct(&hp->c);
}

int vega_crypto_hp_mask(vega_crypto_hp *hp, const uint8_t *sample, uint8_t *mask)
{
    if (hp->chacha) {
        /* §5.4.4: counter = sample[0..3] (little-endian), nonce = sample[4..15];
         * mask = ChaCha20(hp_key, counter, nonce, {0,0,0,0,0}). libcrypto's ChaCha20 "IV" is
         * exactly that: a 4-byte little-endian counter, then the 12-byte nonce. */
        static const uint8_t zeros[VEGA_CRYPTO_HP_MASK_LEN];
        if (!vega__crypto_cipher_start(&hp->c, 1, sample, VEGA_CRYPTO_HP_SAMPLE_LEN) ||
            !vega__crypto_cipher_update(&hp->c, mask, zeros, sizeof(zeros)))
            return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
        return 0;
    }
    /* §5.4.3: mask = AES-ECB(hp_key, sample), of which the first 5 bytes are used. ECB keeps
     * no state between blocks, so the context is reused as it is. */
    uint8_t block[16];
    if (!vega__crypto_cipher_update(&hp->c, block, sample, VEGA_CRYPTO_HP_SAMPLE_LEN))
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    memcpy(mask, block, VEGA_CRYPTO_HP_MASK_LEN);
    return 0;
}

void vega_crypto_hp_free(vega_crypto_hp *hp)
{
    if (!hp)
        return;
    vega__crypto_cipher_fini(&hp->c);
    free(hp);
}
