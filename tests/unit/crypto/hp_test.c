/* SPDX-License-Identifier: MIT */
/* QUIC header protection masks (RFC 9001 §5.4, Appendix A.2, A.3, A.5). */
#include <string.h>

#include <vega/crypto.h>

#include "crypto_int.h"
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
    VCHECK_EQ(vega_crypto_hp_new(&hp, VEGA_CRYPTO_AES_128_GCM, key, 32), -EINVAL);
    VCHECK(hp == NULL);
    VCHECK_EQ(vega_crypto_hp_new(&hp, VEGA_CRYPTO_AES_256_GCM, key, 16), -EINVAL);
    VCHECK_EQ(vega_crypto_hp_new(&hp, 42, key, 16), -EINVAL);
    vega_crypto_hp_free(NULL);
}

/* The provider dispatch path and the plain EVP path give the same masks, and the RFC 9001
 * vectors hold on the EVP path too. */
VTEST(hp_direct_matches_evp)
{
    static const vega_crypto_aead_alg algs[] = {VEGA_CRYPTO_AES_128_GCM, VEGA_CRYPTO_AES_256_GCM,
                                                VEGA_CRYPTO_CHACHA20_POLY1305};
    for (size_t i = 0; i < 3; i++) {
        uint8_t key[32], sample[16], m1[5], m2[5];
        VCHECK_EQ(vega_crypto_random(key, sizeof(key)), 0);
        size_t klen = vega_crypto_aead_key_len(algs[i]);
        vega_crypto_hp *d, *e;
        VCHECK_EQ(vega__crypto_hp_new_ex(&d, algs[i], key, klen, true), 0);
        VCHECK_EQ(vega__crypto_hp_new_ex(&e, algs[i], key, klen, false), 0);
        VCHECK(vega__crypto_hp_is_direct(d));
        VCHECK(!vega__crypto_hp_is_direct(e));
        for (int n = 0; n < 100; n++) {
            VCHECK_EQ(vega_crypto_random(sample, sizeof(sample)), 0);
            VCHECK_EQ(vega_crypto_hp_mask(d, sample, m1), 0);
            VCHECK_EQ(vega_crypto_hp_mask(e, sample, m2), 0);
            VCHECK(memcmp(m1, m2, sizeof(m1)) == 0);
        }
        vega_crypto_hp_free(d);
        vega_crypto_hp_free(e);
    }
    uint8_t key[32], sample[16], mask[5];
    vega_crypto_hp *e;
    unhex("9f50449e04a0e810283a1e9933adedd2", key, sizeof(key));
    unhex("d1b1c98dd7689fb8ec11d242b123dc9b", sample, sizeof(sample));
    VCHECK_EQ(vega__crypto_hp_new_ex(&e, VEGA_CRYPTO_AES_128_GCM, key, 16, false), 0);
    VCHECK_EQ(vega_crypto_hp_mask(e, sample, mask), 0);
    CHECK_HEX(mask, 5, "437b9aec36");
    vega_crypto_hp_free(e);
    unhex("25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4", key, sizeof(key));
    unhex("5e5cd55c41f69080575d7999c25a5bfb", sample, sizeof(sample));
    VCHECK_EQ(vega__crypto_hp_new_ex(&e, VEGA_CRYPTO_CHACHA20_POLY1305, key, 32, false), 0);
    VCHECK_EQ(vega_crypto_hp_mask(e, sample, mask), 0);
    CHECK_HEX(mask, 5, "aefefe7d03");
    vega_crypto_hp_free(e);
}
