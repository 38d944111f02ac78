/* SPDX-License-Identifier: MIT */
/* AEAD: AES-GCM (McGrew-Viega test cases 3, 4, 15, 16), ChaCha20-Poly1305 (RFC 8439 §2.8.2),
 * forgery handling, context reuse, nonces, and the RFC 9001 A.5 packet. */
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

struct vec {
    vega_crypto_aead_alg alg;
    const char *key, *nonce, *aad, *pt, *ct_tag;
};

/* McGrew & Viega, "The Galois/Counter Mode of Operation", test cases 3, 4 (AES-128) and 15,
 * 16 (AES-256); RFC 8439 §2.8.2 (ChaCha20-Poly1305). */
static const char GCM_P[] = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                            "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255";
static const char GCM_P60[] = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                              "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39";
static const char SUNSCREEN[] = "4c616469657320616e642047656e746c656d656e206f662074686520636c6173"
                                "73206f66202739393a204966204920636f756c64206f6666657220796f75206f"
                                "6e6c79206f6e652074697020666f7220746865206675747572652c2073756e73"
                                "637265656e20776f756c642062652069742e";
static const struct vec vecs[] = {
    {VEGA_CRYPTO_AES_128_GCM, "feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", "",
     GCM_P,
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
     "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985"
     "4d5c2af327cd64a62cf35abd2ba6fab4"},
    {VEGA_CRYPTO_AES_128_GCM, "feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
     "feedfacedeadbeeffeedfacedeadbeefabaddad2", GCM_P60,
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
     "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091"
     "5bc94fbc3221a5db94fae95ae7121a47"},
    {VEGA_CRYPTO_AES_256_GCM, "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
     "cafebabefacedbaddecaf888", "", GCM_P,
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad"
     "b094dac5d93471bdec1a502270e3cc6c"},
    {VEGA_CRYPTO_AES_256_GCM, "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
     "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2", GCM_P60,
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
     "76fc6ece0f4e1768cddf8853bb2d551b"},
    {VEGA_CRYPTO_CHACHA20_POLY1305,
     "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f", "070000004041424344454647",
     "50515253c0c1c2c3c4c5c6c7", SUNSCREEN,
     "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6"
     "3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36"
     "92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
     "3ff4def08e4b7a9de576d26586cec64b6116"
     "1ae10b594f09e26a7e902ecbd0600691"},
};

VTEST(aead_vectors)
{
    for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
        const struct vec *v = &vecs[i];
        uint8_t key[32], nonce[12], aad[32], buf[256], pt[256];
        size_t klen = unhex(v->key, key, sizeof(key));
        VCHECK_EQ(klen, vega_crypto_aead_key_len(v->alg));
        VCHECK_EQ(unhex(v->nonce, nonce, sizeof(nonce)), 12);
        size_t alen = unhex(v->aad, aad, sizeof(aad));
        size_t plen = unhex(v->pt, pt, sizeof(pt));
        vega_crypto_aead *a;
        VCHECK_EQ(vega_crypto_aead_new(&a, v->alg, key, klen), 0);
        VCHECK_EQ(vega_crypto_aead_get_alg(a), v->alg);
        memcpy(buf, pt, plen);
        VCHECK_EQ(vega_crypto_aead_seal(a, nonce, aad, alen, buf, plen, sizeof(buf)), plen + 16);
        CHECK_HEX(buf, plen + 16, v->ct_tag);
        VCHECK_EQ(vega_crypto_aead_open(a, nonce, aad, alen, buf, plen + 16), plen);
        VCHECK(memcmp(buf, pt, plen) == 0);
        vega_crypto_aead_free(a);
    }
}

/* RFC 5116 §2.2: a forged or damaged packet fails with a clear code, and the unauthenticated
 * plaintext is not left in the buffer. */
VTEST(aead_open_rejects_forgery)
{
    for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
        const struct vec *v = &vecs[i];
        uint8_t key[32], nonce[12], aad[32], ct[256], buf[256];
        size_t klen = unhex(v->key, key, sizeof(key));
        unhex(v->nonce, nonce, sizeof(nonce));
        size_t alen = unhex(v->aad, aad, sizeof(aad));
        size_t n = unhex(v->ct_tag, ct, sizeof(ct));
        vega_crypto_aead *a;
        VCHECK_EQ(vega_crypto_aead_new(&a, v->alg, key, klen), 0);
        /* A flipped bit anywhere in the ciphertext or the tag. */
        for (size_t pos = 0; pos < n; pos += 7) {
            memcpy(buf, ct, n);
            buf[pos] ^= 0x04;
            VCHECK_EQ(vega_crypto_aead_open(a, nonce, aad, alen, buf, n), VEGA_ERR_CRYPTO_AUTH);
            for (size_t j = 0; j < n - 16; j++)
                VCHECK_EQ(buf[j], 0);
        }
        /* Another AAD, another nonce. */
        uint8_t other_aad[1] = {0x42};
        memcpy(buf, ct, n);
        VCHECK_EQ(vega_crypto_aead_open(a, nonce, other_aad, 1, buf, n), VEGA_ERR_CRYPTO_AUTH);
        nonce[11] ^= 1;
        memcpy(buf, ct, n);
        VCHECK_EQ(vega_crypto_aead_open(a, nonce, aad, alen, buf, n), VEGA_ERR_CRYPTO_AUTH);
        nonce[11] ^= 1;
        /* Too short to hold a tag. */
        VCHECK_EQ(vega_crypto_aead_open(a, nonce, aad, alen, buf, 15), VEGA_ERR_CRYPTO_AUTH);
        /* The context still works after failures. */
        memcpy(buf, ct, n);
        VCHECK_EQ(vega_crypto_aead_open(a, nonce, aad, alen, buf, n), n - 16);
        vega_crypto_aead_free(a);
    }
}

/* One context per key, many packets: seals and opens interleave, each with its own nonce. */
VTEST(aead_context_reuse)
{
    static const vega_crypto_aead_alg algs[] = {VEGA_CRYPTO_AES_128_GCM, VEGA_CRYPTO_AES_256_GCM,
                                                VEGA_CRYPTO_CHACHA20_POLY1305};
    for (size_t i = 0; i < 3; i++) {
        uint8_t key[32], iv[12], nonce[12], hdr[8], buf[1400 + 16], pt[1400];
        VCHECK_EQ(vega_crypto_random(key, sizeof(key)), 0);
        VCHECK_EQ(vega_crypto_random(iv, sizeof(iv)), 0);
        size_t klen = vega_crypto_aead_key_len(algs[i]);
        vega_crypto_aead *tx, *rx;
        VCHECK_EQ(vega_crypto_aead_new(&tx, algs[i], key, klen), 0);
        VCHECK_EQ(vega_crypto_aead_new(&rx, algs[i], key, klen), 0);
        for (uint64_t pn = 0; pn < 200; pn++) {
            size_t len = (size_t)((pn * 97) % sizeof(pt));
            for (size_t j = 0; j < len; j++)
                pt[j] = (uint8_t)(pn + j);
            memcpy(hdr, &pn, sizeof(hdr));
            vega_crypto_aead_nonce(iv, pn, nonce);
            memcpy(buf, pt, len);
            VCHECK_EQ(vega_crypto_aead_seal(tx, nonce, hdr, sizeof(hdr), buf, len, sizeof(buf)),
                      len + 16);
            /* The same context opens what it sealed, and so does a second one. */
            uint8_t copy[sizeof(buf)];
            memcpy(copy, buf, len + 16);
            VCHECK_EQ(vega_crypto_aead_open(tx, nonce, hdr, sizeof(hdr), copy, len + 16), len);
            VCHECK_EQ(vega_crypto_aead_open(rx, nonce, hdr, sizeof(hdr), buf, len + 16), len);
            VCHECK(memcmp(buf, pt, len) == 0);
            VCHECK(memcmp(copy, pt, len) == 0);
        }
        vega_crypto_aead_free(tx);
        vega_crypto_aead_free(rx);
    }
}

VTEST(aead_args)
{
    uint8_t key[32] = {0}, nonce[12] = {0}, buf[64] = {0};
    vega_crypto_aead *a = (vega_crypto_aead *)1;
    VCHECK_EQ(vega_crypto_aead_new(&a, VEGA_CRYPTO_AES_128_GCM, key, 32), -EINVAL);
    VCHECK(a == NULL);
    VCHECK_EQ(vega_crypto_aead_new(&a, 0, key, 16), -EINVAL);
    VCHECK_EQ(vega_crypto_aead_new(&a, VEGA_CRYPTO_CHACHA20_POLY1305, key, 16), -EINVAL);
    VCHECK_EQ(vega_crypto_aead_key_len(VEGA_CRYPTO_AES_128_GCM), 16);
    VCHECK_EQ(vega_crypto_aead_key_len(VEGA_CRYPTO_AES_256_GCM), 32);
    VCHECK_EQ(vega_crypto_aead_key_len(VEGA_CRYPTO_CHACHA20_POLY1305), 32);
    VCHECK_EQ(vega_crypto_aead_key_len(0), 0);
    VCHECK_EQ(vega_crypto_aead_new(&a, VEGA_CRYPTO_AES_128_GCM, key, 16), 0);
    /* No room for the tag: nothing is written. */
    memset(buf, 0x77, sizeof(buf));
    VCHECK_EQ(vega_crypto_aead_seal(a, nonce, NULL, 0, buf, 20, 35), VEGA_ERR_NOBUF);
    for (size_t i = 0; i < sizeof(buf); i++)
        VCHECK_EQ(buf[i], 0x77);
    /* An empty plaintext gives a bare tag, which opens to nothing. */
    VCHECK_EQ(vega_crypto_aead_seal(a, nonce, "hdr", 3, buf, 0, 16), 16);
    VCHECK_EQ(vega_crypto_aead_open(a, nonce, "hdr", 3, buf, 16), 0);
    buf[0] ^= 1;
    VCHECK_EQ(vega_crypto_aead_open(a, nonce, "hdr", 3, buf, 16), VEGA_ERR_CRYPTO_AUTH);
    vega_crypto_aead_free(a);
    vega_crypto_aead_free(NULL);
}

/* RFC 8446 §5.3 / RFC 9001 §5.3: nonce = iv XOR the packet number (RFC 9001 A.5). */
VTEST(aead_nonce)
{
    uint8_t iv[12], nonce[12];
    unhex("e0459b3474bdd0e44a41c144", iv, 12);
    vega_crypto_aead_nonce(iv, 654360564, nonce);
    CHECK_HEX(nonce, 12, "e0459b3474bdd0e46d417eb0");
    vega_crypto_aead_nonce(iv, 0, nonce);
    CHECK_HEX(nonce, 12, "e0459b3474bdd0e44a41c144");
    vega_crypto_aead_nonce(iv, UINT64_MAX, nonce);
    CHECK_HEX(nonce, 12, "e0459b348b422f1bb5be3ebb");
    vega_crypto_aead_nonce(iv, 1, iv); /* in place */
    CHECK_HEX(iv, 12, "e0459b3474bdd0e44a41c145");
}

/* RFC 9001 Appendix A.5: the whole ChaCha20-Poly1305 short header packet, protected with
 * vega_crypto_aead and vega_crypto_hp from the keys of the A.5 secret. */
VTEST(aead_rfc9001_chacha_packet)
{
    uint8_t key[32], iv[12], hpkey[32], nonce[12], pkt[64], mask[5];
    unhex("c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8", key, 32);
    unhex("e0459b3474bdd0e44a41c144", iv, 12);
    unhex("25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4", hpkey, 32);
    /* Unprotected header 4200bff4 (packet number 654360564, encoded in 3 bytes), payload 01. */
    size_t hlen = unhex("4200bff4", pkt, sizeof(pkt));
    pkt[hlen] = 0x01;
    vega_crypto_aead *a;
    vega_crypto_hp *hp;
    VCHECK_EQ(vega_crypto_aead_new(&a, VEGA_CRYPTO_CHACHA20_POLY1305, key, 32), 0);
    VCHECK_EQ(vega_crypto_hp_new(&hp, VEGA_CRYPTO_CHACHA20_POLY1305, hpkey, 32), 0);
    vega_crypto_aead_nonce(iv, 654360564, nonce);
    VCHECK_EQ(vega_crypto_aead_seal(a, nonce, pkt, hlen, pkt + hlen, 1, sizeof(pkt) - hlen), 17);
    /* §5.4.2: the sample starts 4 bytes after the packet number's first byte. */
    VCHECK_EQ(vega_crypto_hp_mask(hp, pkt + 1 + 4, mask), 0);
    CHECK_HEX(mask, 5, "aefefe7d03");
    pkt[0] ^= mask[0] & 0x1f; /* short header: 5 bits */
    for (int i = 0; i < 3; i++)
        pkt[1 + i] ^= mask[1 + i];
    CHECK_HEX(pkt, hlen + 17, "4cfe4189655e5cd55c41f69080575d7999c25a5bfb");
    /* And back: remove header protection, then open. */
    VCHECK_EQ(vega_crypto_hp_mask(hp, pkt + 1 + 4, mask), 0);
    pkt[0] ^= mask[0] & 0x1f;
    for (int i = 0; i < 3; i++)
        pkt[1 + i] ^= mask[1 + i];
    VCHECK_EQ(vega_crypto_aead_open(a, nonce, pkt, hlen, pkt + hlen, 17), 1);
    VCHECK_EQ(pkt[hlen], 0x01);
    vega_crypto_hp_free(hp);
    vega_crypto_aead_free(a);
}

/* The provider dispatch path (the default with libcrypto's default provider) and the plain
 * EVP path produce the same bytes, open each other's packets and both reject forgeries. */
VTEST(aead_direct_matches_evp)
{
    static const vega_crypto_aead_alg algs[] = {VEGA_CRYPTO_AES_128_GCM, VEGA_CRYPTO_AES_256_GCM,
                                                VEGA_CRYPTO_CHACHA20_POLY1305};
    for (size_t i = 0; i < 3; i++) {
        uint8_t key[32], iv[12], nonce[12], hdr[21], a[1300 + 16], b[1300 + 16];
        VCHECK_EQ(vega_crypto_random(key, sizeof(key)), 0);
        VCHECK_EQ(vega_crypto_random(iv, sizeof(iv)), 0);
        VCHECK_EQ(vega_crypto_random(hdr, sizeof(hdr)), 0);
        size_t klen = vega_crypto_aead_key_len(algs[i]);
        vega_crypto_aead *d, *e;
        VCHECK_EQ(vega__crypto_aead_new_ex(&d, algs[i], key, klen, true), 0);
        VCHECK_EQ(vega__crypto_aead_new_ex(&e, algs[i], key, klen, false), 0);
        VCHECK(vega__crypto_aead_is_direct(d));
        VCHECK(!vega__crypto_aead_is_direct(e));
        for (uint64_t pn = 0; pn < 64; pn++) {
            size_t len = (size_t)((pn * 61) % 1300), alen = (size_t)(pn % sizeof(hdr));
            VCHECK_EQ(vega_crypto_random(a, len), 0);
            memcpy(b, a, len);
            vega_crypto_aead_nonce(iv, pn, nonce);
            VCHECK_EQ(vega_crypto_aead_seal(d, nonce, hdr, alen, a, len, sizeof(a)), len + 16);
            VCHECK_EQ(vega_crypto_aead_seal(e, nonce, hdr, alen, b, len, sizeof(b)), len + 16);
            VCHECK(memcmp(a, b, len + 16) == 0);
            if (pn % 4 == 3) { /* a damaged tag, then the good packet through the other path */
                a[len + pn % 16] ^= 0x80;
                VCHECK_EQ(vega_crypto_aead_open(e, nonce, hdr, alen, a, len + 16),
                          VEGA_ERR_CRYPTO_AUTH);
                VCHECK_EQ(vega_crypto_aead_open(d, nonce, hdr, alen, b, len + 16), len);
                continue;
            }
            if (pn % 4 == 2 && len > 0) { /* damaged ciphertext on the direct path */
                a[pn % len] ^= 0x01;
                VCHECK_EQ(vega_crypto_aead_open(d, nonce, hdr, alen, a, len + 16),
                          VEGA_ERR_CRYPTO_AUTH);
                for (size_t j = 0; j < len; j++)
                    VCHECK_EQ(a[j], 0);
                continue;
            }
            VCHECK_EQ(vega_crypto_aead_open(e, nonce, hdr, alen, a, len + 16), len);
            VCHECK_EQ(vega_crypto_aead_open(d, nonce, hdr, alen, b, len + 16), len);
            VCHECK(memcmp(a, b, len) == 0);
        }
        vega_crypto_aead_free(d);
        vega_crypto_aead_free(e);
    }
}

/* A gathered seal is the in-place seal of the pieces' concatenation, byte for byte, on both
 * the provider dispatch and the EVP paths: pieces sealed from elsewhere and in place, mixed,
 * of every length from empty to past a block, split at unaligned places. */
VTEST(aead_seal_gather_matches_seal)
{
    static const vega_crypto_aead_alg algs[] = {VEGA_CRYPTO_AES_128_GCM, VEGA_CRYPTO_AES_256_GCM,
                                                VEGA_CRYPTO_CHACHA20_POLY1305};
    for (size_t i = 0; i < 3; i++) {
        for (int direct = 0; direct < 2; direct++) {
            uint8_t key[32], iv[12], nonce[12], hdr[21], plain[1400], want[1400 + 16],
                got[1400 + 16];
            VCHECK_EQ(vega_crypto_random(key, sizeof(key)), 0);
            VCHECK_EQ(vega_crypto_random(iv, sizeof(iv)), 0);
            VCHECK_EQ(vega_crypto_random(hdr, sizeof(hdr)), 0);
            VCHECK_EQ(vega_crypto_random(plain, sizeof(plain)), 0);
            vega_crypto_aead *a;
            VCHECK_EQ(vega__crypto_aead_new_ex(&a, algs[i], key, vega_crypto_aead_key_len(algs[i]),
                                               direct != 0),
                      0);
            for (uint64_t pn = 0; pn < 48; pn++) {
                /* up to five pieces; odd ones come from plain, even ones are already in got */
                vega_crypto_piece pc[5];
                size_t np = 1 + (size_t)(pn % 5), total = 0;
                for (size_t j = 0; j < np; j++) {
                    size_t len = (size_t)((pn * 37 + j * 101) % 280);
                    pc[j].src = (j % 2) ? plain + total : NULL;
                    pc[j].len = len;
                    total += len;
                }
                memcpy(want, plain, total);
                memset(got, 0xa5, sizeof(got));
                for (size_t j = 0, pos = 0; j < np; pos += pc[j].len, j++)
                    if (!pc[j].src)
                        memcpy(got + pos, plain + pos, pc[j].len);
                vega_crypto_aead_nonce(iv, pn, nonce);
                size_t alen = (size_t)(pn % sizeof(hdr));
                VCHECK_EQ(vega_crypto_aead_seal(a, nonce, hdr, alen, want, total, sizeof(want)),
                          total + 16);
                VCHECK_EQ(
                    vega_crypto_aead_seal_gather(a, nonce, hdr, alen, got, sizeof(got), pc, np),
                    total + 16);
                VCHECK(memcmp(want, got, total + 16) == 0);
                VCHECK_EQ(got[total + 16], 0xa5); /* nothing written past the tag */
                VCHECK_EQ(vega_crypto_aead_open(a, nonce, hdr, alen, got, total + 16), total);
                VCHECK(memcmp(got, plain, total) == 0);
            }
            /* too small: out untouched; bad arguments */
            vega_crypto_piece one = {plain, 100};
            memset(got, 0x5a, sizeof(got));
            VCHECK_EQ(vega_crypto_aead_seal_gather(a, nonce, NULL, 0, got, 115, &one, 1),
                      VEGA_ERR_NOBUF);
            VCHECK_EQ(got[0], 0x5a);
            VCHECK_EQ(vega_crypto_aead_seal_gather(a, nonce, NULL, 0, got, sizeof(got), NULL, 1),
                      -EINVAL);
            vega_crypto_piece huge[2] = {{plain, (size_t)INT_MAX - 20}, {plain, 8}};
            VCHECK_EQ(vega_crypto_aead_seal_gather(a, nonce, NULL, 0, got, SIZE_MAX, huge, 2),
                      -EINVAL);
            /* no pieces: the tag of the AAD alone, as an empty in-place seal */
            VCHECK_EQ(vega_crypto_aead_seal(a, nonce, hdr, 5, want, 0, sizeof(want)), 16);
            VCHECK_EQ(vega_crypto_aead_seal_gather(a, nonce, hdr, 5, got, 16, NULL, 0), 16);
            VCHECK(memcmp(want, got, 16) == 0);
            vega_crypto_aead_free(a);
        }
    }
}
