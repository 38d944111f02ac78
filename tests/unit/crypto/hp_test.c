/* SPDX-License-Identifier: MIT */
/* QUIC header protection masks (RFC 9001 §5.4, Appendix A.2, A.3, A.5). */
#include <string.h>

#include <vega/crypto.h>

#include "vtest.h"

static size_t unhex(const char *h, uint8_t *out, size_t cap)
{
    size_t n = strlen(h) / 2;
    if (n > cap)
        vtest_fail(__FILE__, __LINE__, "hex too long");
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    return n;
}

/* Checks that out[0..n) equals the hex string want. */
static void check_hex(const uint8_t *out, size_t n, const char *want, int line)
{
    uint8_t w[512];
    size_t wn = unhex(want, w, sizeof(w));
    if (wn != n || memcmp(out, w, n) != 0) {
        char got[1025];
        for (size_t i = 0; i < n && i < 512; i++)
            sprintf(got + 2 * i, "%02x", out[i]);
        vtest_fail(__FILE__, line, "got %s, want %s", got, want);
    }
}
#define CHECK_HEX(out, n, want) check_hex(out, n, want, __LINE__)

static void check_mask(vega_crypto_aead_alg alg, const char *key_hex, const char *sample_hex,
                       const char *want, int line)
{
    uint8_t key[32], sample[16], mask[5];
    size_t klen = unhex(key_hex, key, sizeof(key));
    VCHECK_EQ(unhex(sample_hex, sample, sizeof(sample)), 16);
    vega_crypto_hp *hp;
    VCHECK_EQ(vega_crypto_hp_new(&hp, alg, key, klen), 0);
    /* Twice: the context is reusable. */
    for (int i = 0; i < 2; i++) {
        VCHECK_EQ(vega_crypto_hp_mask(hp, sample, mask), 0);
        check_hex(mask, 5, want, line);
    }
    vega_crypto_hp_free(hp);
}

/* RFC 9001 A.2 (client Initial) and A.3 (server Initial): AES-128 header protection. */
VTEST(hp_aes128_rfc9001)
{
    check_mask(VEGA_CRYPTO_AES_128_GCM, "9f50449e04a0e810283a1e9933adedd2",
               "d1b1c98dd7689fb8ec11d242b123dc9b", "437b9aec36", __LINE__);
    check_mask(VEGA_CRYPTO_AES_128_GCM, "c206b8d9b9f0f37644430b490eeaa314",
               "2cd0991cd25b0aac406a5816b6394100", "2ec0d8356a", __LINE__);
}

/* AES-256: the mask is the first 5 bytes of AES-256(key, sample); FIPS-197 Appendix C.3. */
VTEST(hp_aes256_fips197)
{
    check_mask(VEGA_CRYPTO_AES_256_GCM,
               "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
               "00112233445566778899aabbccddeeff", "8ea2b7ca51", __LINE__);
}

/* RFC 9001 A.5: ChaCha20 header protection. */
VTEST(hp_chacha20_rfc9001)
{
    check_mask(VEGA_CRYPTO_CHACHA20_POLY1305,
               "25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4",
               "5e5cd55c41f69080575d7999c25a5bfb", "aefefe7d03", __LINE__);
}

VTEST(hp_args)
{
    uint8_t key[32] = {0};
    vega_crypto_hp *hp = (vega_crypto_hp *)1;
    VCHECK_EQ(vega_crypto_hp_new(&hp, VEGA_CRYPTO_AES_128_GCM, key, 32), VEGA_ERR_INVALID_ARG);
    VCHECK(hp == NULL);
    VCHECK_EQ(vega_crypto_hp_new(&hp, VEGA_CRYPTO_AES_256_GCM, key, 16), VEGA_ERR_INVALID_ARG);
    VCHECK_EQ(vega_crypto_hp_new(&hp, 42, key, 16), VEGA_ERR_INVALID_ARG);
    vega_crypto_hp_free(NULL);
}
