/* SPDX-License-Identifier: MIT */
/* Hashes (FIPS 180-4 examples) and HMAC (RFC 4231 test cases 1-7). */
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

static const char ABC[] = "abc";
static const char MSG448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

static const struct {
    vega_crypto_hash_alg alg;
    const char *abc, *m448;
} sha[] = {
    {VEGA_CRYPTO_SHA1, "a9993e364706816aba3e25717850c26c9cd0d89d",
     "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
    {VEGA_CRYPTO_SHA256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    {VEGA_CRYPTO_SHA384,
     "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded163"
     "1a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7",
     "3391fdddfc8dc7393707a65b1b4709397cf8b1d162af05ab"
     "fe8f450de5f36bc6b0455a8520bc4e6f5fe95b1fe3c8452b"},
    {VEGA_CRYPTO_SHA512,
     "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
     "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
     "204a8fc6dda82f0a0ced7beb8e08a41657c16ef468b228a8279be331a703c335"
     "96fd15c13b1b07f9aa1d3bea57789ca031ad85c7a71dd70354ec631238ca3445"},
    /* RFC 1321 A.5 ("abc"); the 448-bit message by coreutils' md5sum */
    {VEGA_CRYPTO_MD5, "900150983cd24fb0d6963f7d28e17f72", "8215ef0796a20bcaaae116d3876c664a"},
};

/* FIPS 180-4 examples ("abc", the 448-bit message), as published in the NIST example files. */
VTEST(sha_oneshot)
{
    for (size_t i = 0; i < sizeof(sha) / sizeof(sha[0]); i++) {
        uint8_t out[VEGA_CRYPTO_HASH_MAX_LEN];
        size_t n = vega_crypto_hash_len(sha[i].alg);
        VCHECK(n > 0 && n <= VEGA_CRYPTO_HASH_MAX_LEN);
        VCHECK_EQ(vega_crypto_hash_digest(sha[i].alg, ABC, 3, out), 0);
        CHECK_HEX(out, n, sha[i].abc);
        VCHECK_EQ(vega_crypto_hash_digest(sha[i].alg, MSG448, strlen(MSG448), out), 0);
        CHECK_HEX(out, n, sha[i].m448);
    }
    VCHECK_EQ(vega_crypto_hash_len(20), 0);
}

VTEST(sha_empty)
{
    uint8_t out[32];
    VCHECK_EQ(vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, NULL, 0, out), 0);
    CHECK_HEX(out, 32, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* The context is reused: final resets it; byte-at-a-time equals one-shot. */
VTEST(sha_incremental)
{
    for (size_t i = 0; i < sizeof(sha) / sizeof(sha[0]); i++) {
        vega_crypto_hash *h;
        uint8_t out[VEGA_CRYPTO_HASH_MAX_LEN];
        size_t n = vega_crypto_hash_len(sha[i].alg);
        VCHECK_EQ(vega_crypto_hash_new(&h, sha[i].alg), 0);
        VCHECK_EQ(vega_crypto_hash_get_alg(h), sha[i].alg);
        for (int round = 0; round < 2; round++) {
            for (size_t j = 0; j < strlen(MSG448); j++)
                VCHECK_EQ(vega_crypto_hash_update(h, MSG448 + j, 1), 0);
            VCHECK_EQ(vega_crypto_hash_final(h, out), 0);
            CHECK_HEX(out, n, sha[i].m448);
            VCHECK_EQ(vega_crypto_hash_update(h, "ab", 2), 0);
            VCHECK_EQ(vega_crypto_hash_update(h, NULL, 0), 0);
            VCHECK_EQ(vega_crypto_hash_update(h, "c", 1), 0);
            VCHECK_EQ(vega_crypto_hash_final(h, out), 0);
            CHECK_HEX(out, n, sha[i].abc);
        }
        vega_crypto_hash_free(h);
    }
}

/* RFC 8446 §4.4.1 transcript use: peek at the hash so far, keep adding. */
VTEST(sha_peek_and_reset)
{
    vega_crypto_hash *h;
    uint8_t out[32];
    VCHECK_EQ(vega_crypto_hash_new(&h, VEGA_CRYPTO_SHA256), 0);
    VCHECK_EQ(vega_crypto_hash_update(h, "ab", 2), 0);
    VCHECK_EQ(vega_crypto_hash_update(h, "c", 1), 0);
    VCHECK_EQ(vega_crypto_hash_peek(h, out), 0);
    CHECK_HEX(out, 32, sha[1].abc);
    VCHECK_EQ(vega_crypto_hash_peek(h, out), 0);
    CHECK_HEX(out, 32, sha[1].abc);
    VCHECK_EQ(vega_crypto_hash_update(h, MSG448 + 3, strlen(MSG448) - 3), 0);
    VCHECK_EQ(vega_crypto_hash_final(h, out), 0);
    /* "abc" + MSG448[3..] is MSG448 itself, which starts with "abc". */
    CHECK_HEX(out, 32, sha[1].m448);
    VCHECK_EQ(vega_crypto_hash_update(h, "zzz", 3), 0);
    VCHECK_EQ(vega_crypto_hash_reset(h), 0);
    VCHECK_EQ(vega_crypto_hash_update(h, ABC, 3), 0);
    VCHECK_EQ(vega_crypto_hash_final(h, out), 0);
    CHECK_HEX(out, 32, sha[1].abc);
    vega_crypto_hash_free(h);
    vega_crypto_hash_free(NULL);
}

/* FIPS 180-2 Appendix B.3: one million 'a'. */
VTEST(sha256_million_a)
{
    static char block[10000];
    memset(block, 'a', sizeof(block));
    vega_crypto_hash *h;
    uint8_t out[32];
    VCHECK_EQ(vega_crypto_hash_new(&h, VEGA_CRYPTO_SHA256), 0);
    for (int i = 0; i < 100; i++)
        VCHECK_EQ(vega_crypto_hash_update(h, block, sizeof(block)), 0);
    VCHECK_EQ(vega_crypto_hash_final(h, out), 0);
    CHECK_HEX(out, 32, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    vega_crypto_hash_free(h);
}

VTEST(hash_bad_alg)
{
    vega_crypto_hash *h = (vega_crypto_hash *)1;
    uint8_t out[64];
    VCHECK_EQ(vega_crypto_hash_new(&h, 0), -EINVAL);
    VCHECK(h == NULL);
    VCHECK_EQ(vega_crypto_hash_digest(99, "x", 1, out), -EINVAL);
    VCHECK_EQ(vega_crypto_hmac_digest(99, "k", 1, "x", 1, out), -EINVAL);
}

/* RFC 4231 §4.2-4.8: HMAC-SHA-256/384/512 test cases 1-7 (case 5 truncated to 128 bits). */
static const struct {
    const char *key, *data;
    const char *s256, *s384, *s512;
} rfc4231[] = {
    {"0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "4869205468657265",
     "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
     "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59c"
     "faea9ea9076ede7f4af152e8b2fa9cb6",
     "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde"
     "daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"},
    {"4a656665", "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
     "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
     "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e"
     "8e2240ca5e69e2c78b3239ecfab21649",
     "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
     "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
     "dddddddddddddddddddddddddddddddddddd",
     "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
     "88062608d3e6ad8a0aa2ace014c8a86f0aa635d947ac9febe83ef4e55966144b"
     "2a5ab39dc13814b94e3ab6e101a34f27",
     "fa73b0089d56a284efb0f0756c890be9b1b5dbdd8ee81a3655f83e33b2279d39"
     "bf3e848279a722c806b485a47e67c807b946a337bee8942674278859e13292fb"},
    {"0102030405060708090a0b0c0d0e0f10111213141516171819",
     "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
     "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
     "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
     "3e8a69b7783c25851933ab6290af6ca77a9981480850009cc5577c6e1f573b4e"
     "6801dd23c4a7d679ccf8a386c674cffb",
     "b0ba465637458c6990e5a8c5f61d4af7e576d97ff94b872de76f8050361ee3db"
     "a91ca5c11aa25eb4d679275cc5788063a5f19741120c4f2de2adebeb10a298dd"},
    {"0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c", "546573742057697468205472756e636174696f6e",
     "a3b6167473100ee06e0c796c2955552b", "3abf34c3503b2a23a46efc619baef897",
     "415fad6271580a531d4179bc891d87a6"},
    {NULL,
     "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a"
     "65204b6579202d2048617368204b6579204669727374",
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
     "4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c6"
     "0c2ef6ab4030fe8296248df163f44952",
     "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f352"
     "6b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"},
    {NULL,
     "5468697320697320612074657374207573696e672061206c6172676572207468"
     "616e20626c6f636b2d73697a65206b657920616e642061206c61726765722074"
     "68616e20626c6f636b2d73697a6520646174612e20546865206b6579206e6565"
     "647320746f20626520686173686564206265666f7265206265696e6720757365"
     "642062792074686520484d414320616c676f726974686d2e",
     "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
     "6617178e941f020d351e2f254e8fd32c602420feb0b8fb9adccebb82461e99c5"
     "a678cc31e799176d3860e6110c46523e",
     "e37b6a775dc87dbaa4dfa9f96e5e3ffddebd71f8867289865df5a32d20cdc944"
     "b6022cac3c4982b10d5eeb55c3e4de15134676fb6de0446065c97440fa8c6a58"},
};

VTEST(hmac_rfc4231)
{
    for (size_t i = 0; i < sizeof(rfc4231) / sizeof(rfc4231[0]); i++) {
        uint8_t key[131], data[256], out[64];
        size_t klen;
        if (rfc4231[i].key) {
            klen = unhex(rfc4231[i].key, key, sizeof(key));
        } else { /* cases 6 and 7: 131 bytes of 0xaa */
            memset(key, 0xaa, 131);
            klen = 131;
        }
        size_t dlen = unhex(rfc4231[i].data, data, sizeof(data));
        const struct {
            vega_crypto_hash_alg alg;
            const char *want;
        } v[3] = {{VEGA_CRYPTO_SHA256, rfc4231[i].s256},
                  {VEGA_CRYPTO_SHA384, rfc4231[i].s384},
                  {VEGA_CRYPTO_SHA512, rfc4231[i].s512}};
        for (int j = 0; j < 3; j++) {
            VCHECK_EQ(vega_crypto_hmac_digest(v[j].alg, key, klen, data, dlen, out), 0);
            /* Case 5 publishes only the first 128 bits. */
            CHECK_HEX(out, strlen(v[j].want) / 2, v[j].want);
        }
    }
}

/* An empty key and empty data are valid HMAC inputs. */
VTEST(hmac_empty)
{
    uint8_t a[32], b[32], zeros[64] = {0};
    VCHECK_EQ(vega_crypto_hmac_digest(VEGA_CRYPTO_SHA256, NULL, 0, NULL, 0, a), 0);
    /* HMAC pads the key with zeros to the block size: empty == 64 zero bytes. */
    VCHECK_EQ(vega_crypto_hmac_digest(VEGA_CRYPTO_SHA256, zeros, 64, "", 0, b), 0);
    VCHECK(memcmp(a, b, 32) == 0);
    CHECK_HEX(a, 32, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}
