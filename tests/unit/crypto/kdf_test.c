/* SPDX-License-Identifier: MIT */
/* HKDF (RFC 5869), HKDF-Expand-Label (RFC 8448 and RFC 9001 Appendix A vectors), PBKDF2 (RFC 6070,
 * RFC 7914). */
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

/* Expand-Label with an empty context, HashLen = 32 (SHA-256). */
static void label32(const char *secret_hex, const char *label, uint8_t *out, size_t n)
{
    uint8_t secret[32];
    VCHECK_EQ(unhex(secret_hex, secret, sizeof(secret)), 32);
    VCHECK_EQ(vega_crypto_hkdf_expand_label(VEGA_CRYPTO_SHA256, secret, 32, label, NULL, 0, out, n),
              0);
}

/* RFC 5869 Appendix A, test cases 1-3 (SHA-256) and 4 (SHA-1). */
static const struct {
    vega_crypto_hash_alg alg;
    const char *ikm, *salt, *info, *prk, *okm;
} rfc5869[] = {
    {VEGA_CRYPTO_SHA256, "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b",
     "000102030405060708090a0b0c", "f0f1f2f3f4f5f6f7f8f9",
     "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
     "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"},
    {VEGA_CRYPTO_SHA256,
     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
     "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
     "404142434445464748494a4b4c4d4e4f",
     "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
     "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
     "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf",
     "b0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecf"
     "d0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeef"
     "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
     "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244",
     "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c"
     "59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71"
     "cc30c58179ec3e87c14c01d5c1f3434f1d87"},
    {VEGA_CRYPTO_SHA256, "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "", "",
     "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
     "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"},
    {VEGA_CRYPTO_SHA1, "0b0b0b0b0b0b0b0b0b0b0b", "000102030405060708090a0b0c",
     "f0f1f2f3f4f5f6f7f8f9", "9b6c18c432a7bf8f0e71c8eb88f4b30baa2ba243",
     "085a01ea1b10f36933068b56efa5ad81a4f14b822f5b091568a9cdd4f155fda2c22e422478d305f3f896"},
};

VTEST(hkdf_rfc5869)
{
    for (size_t i = 0; i < sizeof(rfc5869) / sizeof(rfc5869[0]); i++) {
        uint8_t ikm[80], salt[80], info[80], prk[64], okm[82];
        size_t ikm_len = unhex(rfc5869[i].ikm, ikm, sizeof(ikm));
        size_t salt_len = unhex(rfc5869[i].salt, salt, sizeof(salt));
        size_t info_len = unhex(rfc5869[i].info, info, sizeof(info));
        size_t okm_len = strlen(rfc5869[i].okm) / 2;
        size_t hl = vega_crypto_hash_len(rfc5869[i].alg);
        VCHECK_EQ(vega_crypto_hkdf_extract(rfc5869[i].alg, salt_len ? salt : NULL, salt_len, ikm,
                                           ikm_len, prk),
                  0);
        CHECK_HEX(prk, hl, rfc5869[i].prk);
        VCHECK_EQ(vega_crypto_hkdf_expand(rfc5869[i].alg, prk, hl, info_len ? info : NULL, info_len,
                                          okm, okm_len),
                  0);
        CHECK_HEX(okm, okm_len, rfc5869[i].okm);
    }
}

VTEST(hkdf_limits)
{
    uint8_t prk[32] = {1}, out[255 * 32 + 1];
    VCHECK_EQ(vega_crypto_hkdf_expand(VEGA_CRYPTO_SHA256, prk, 32, NULL, 0, out, 255 * 32), 0);
    VCHECK_EQ(vega_crypto_hkdf_expand(VEGA_CRYPTO_SHA256, prk, 32, NULL, 0, out, 255 * 32 + 1),
              -EINVAL);
    VCHECK_EQ(vega_crypto_hkdf_expand(VEGA_CRYPTO_SHA256, prk, 32, NULL, 0, out, 0), -EINVAL);
    VCHECK_EQ(vega_crypto_hkdf_expand(VEGA_CRYPTO_SHA256, prk, 31, NULL, 0, out, 16), -EINVAL);
    VCHECK_EQ(vega_crypto_hkdf_expand(0, prk, 32, NULL, 0, out, 16), -EINVAL);
    VCHECK_EQ(vega_crypto_hkdf_extract(0, NULL, 0, prk, 32, out), -EINVAL);
    /* An empty IKM is accepted (HMAC of the empty string under the salt). */
    VCHECK_EQ(vega_crypto_hkdf_extract(VEGA_CRYPTO_SHA256, prk, 32, NULL, 0, out), 0);
    uint8_t want[32];
    VCHECK_EQ(vega_crypto_hmac_digest(VEGA_CRYPTO_SHA256, prk, 32, NULL, 0, want), 0);
    VCHECK(memcmp(out, want, 32) == 0);
}

/* RFC 8448 §3 (simple 1-RTT handshake): the key schedule from the early secret down to the
 * handshake traffic keys and the master secret. Exercises Extract, Derive-Secret and
 * HKDF-Expand-Label with and without a context. */
VTEST(expand_label_rfc8448)
{
    uint8_t zeros[32] = {0}, early[32], empty_hash[32], derived[32], hs[32], ecdhe[32], th[32];
    uint8_t c_hs[32], s_hs[32], out[32], master[32];
    const vega_crypto_hash_alg H = VEGA_CRYPTO_SHA256;
    /* early_secret = HKDF-Extract(salt: 0, IKM: 32 zero bytes) */
    VCHECK_EQ(vega_crypto_hkdf_extract(H, NULL, 0, zeros, 32, early), 0);
    CHECK_HEX(early, 32, "33ad0a1c607ec03b09e6cd9893680ce210adf300aa1f2660e1b22e10f170f92a");
    /* An explicit salt of 32 zero bytes is the same thing. */
    VCHECK_EQ(vega_crypto_hkdf_extract(H, zeros, 32, zeros, 32, out), 0);
    VCHECK(memcmp(out, early, 32) == 0);
    VCHECK_EQ(vega_crypto_hash_digest(H, NULL, 0, empty_hash), 0);
    VCHECK_EQ(vega_crypto_hkdf_expand_label(H, early, 32, "derived", empty_hash, 32, derived, 32),
              0);
    CHECK_HEX(derived, 32, "6f2615a108c702c5678f54fc9dbab69716c076189c48250cebeac3576c3611ba");
    unhex("8bd4054fb55b9d63fdfbacf9f04b9f0d35e6d63f537563efd46272900f89492d", ecdhe, 32);
    VCHECK_EQ(vega_crypto_hkdf_extract(H, derived, 32, ecdhe, 32, hs), 0);
    CHECK_HEX(hs, 32, "1dc826e93606aa6fdc0aadc12f741b01046aa6b99f691ed221a9f0ca043fbeac");
    /* Transcript-Hash(ClientHello, ServerHello) */
    unhex("860c06edc07858ee8e78f0e7428c58edd6b43f2ca3e6e95f02ed063cf0e1cad8", th, 32);
    VCHECK_EQ(vega_crypto_hkdf_expand_label(H, hs, 32, "c hs traffic", th, 32, c_hs, 32), 0);
    CHECK_HEX(c_hs, 32, "b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21");
    VCHECK_EQ(vega_crypto_hkdf_expand_label(H, hs, 32, "s hs traffic", th, 32, s_hs, 32), 0);
    CHECK_HEX(s_hs, 32, "b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38");
    VCHECK_EQ(vega_crypto_hkdf_expand_label(H, hs, 32, "derived", empty_hash, 32, derived, 32), 0);
    CHECK_HEX(derived, 32, "43de77e0c77713859a944db9db2590b53190a65b3ee2e4f12dd7a0bb7ce254b4");
    VCHECK_EQ(vega_crypto_hkdf_extract(H, derived, 32, zeros, 32, master), 0);
    CHECK_HEX(master, 32, "18df06843d13a08bf2a449844c5f8a478001bc4d4c627984d5a41da8d0402919");
    /* Traffic keys (RFC 8446 §7.3) and the finished key (§4.4.4). */
    label32("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38", "key", out, 16);
    CHECK_HEX(out, 16, "3fce516009c21727d0f2e4e86ee403bc");
    label32("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38", "iv", out, 12);
    CHECK_HEX(out, 12, "5d313eb2671276ee13000b30");
    label32("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38", "finished", out,
            32);
    CHECK_HEX(out, 32, "008d3b66f816ea559f96b537e885c31fc068bf492c652f01f288a1d8cdc19fc8");
    label32("b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21", "key", out, 16);
    CHECK_HEX(out, 16, "dbfaa693d1762c5b666af5d950258d01");
    label32("b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21", "iv", out, 12);
    CHECK_HEX(out, 12, "5bd3c71b836e0b76bb73265f");
}

/* RFC 9001 Appendix A.1: Initial secrets and keys for DCID 0x8394c8f03e515708 (QUIC v1). */
VTEST(expand_label_rfc9001_initial)
{
    uint8_t salt[20], dcid[8], initial[32], client[32], server[32], out[32];
    unhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a", salt, sizeof(salt));
    unhex("8394c8f03e515708", dcid, sizeof(dcid));
    VCHECK_EQ(vega_crypto_hkdf_extract(VEGA_CRYPTO_SHA256, salt, 20, dcid, 8, initial), 0);
    CHECK_HEX(initial, 32, "7db5df06e7a69e432496adedb00851923595221596ae2ae9fb8115c1e9ed0a44");
    VCHECK_EQ(vega_crypto_hkdf_expand_label(VEGA_CRYPTO_SHA256, initial, 32, "client in", NULL, 0,
                                            client, 32),
              0);
    CHECK_HEX(client, 32, "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea");
    VCHECK_EQ(vega_crypto_hkdf_expand_label(VEGA_CRYPTO_SHA256, initial, 32, "server in", NULL, 0,
                                            server, 32),
              0);
    CHECK_HEX(server, 32, "3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b");
    label32("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea", "quic key", out,
            16);
    CHECK_HEX(out, 16, "1f369613dd76d5467730efcbe3b1a22d");
    label32("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea", "quic iv", out, 12);
    CHECK_HEX(out, 12, "fa044b2f42a3fd3b46fb255c");
    label32("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea", "quic hp", out, 16);
    CHECK_HEX(out, 16, "9f50449e04a0e810283a1e9933adedd2");
    label32("3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b", "quic key", out,
            16);
    CHECK_HEX(out, 16, "cf3a5331653c364c88f0f379b6067e37");
    label32("3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b", "quic iv", out, 12);
    CHECK_HEX(out, 12, "0ac1493ca1905853b0bba03e");
    label32("3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b", "quic hp", out, 16);
    CHECK_HEX(out, 16, "c206b8d9b9f0f37644430b490eeaa314");
}

/* RFC 9001 Appendix A.5: ChaCha20-Poly1305 short header packet keys, and the key update
 * secret (§6.1, "quic ku"). */
VTEST(expand_label_rfc9001_chacha)
{
    static const char secret[] = "9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b";
    uint8_t out[32];
    label32(secret, "quic key", out, 32);
    CHECK_HEX(out, 32, "c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8");
    label32(secret, "quic iv", out, 12);
    CHECK_HEX(out, 12, "e0459b3474bdd0e44a41c144");
    label32(secret, "quic hp", out, 32);
    CHECK_HEX(out, 32, "25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4");
    label32(secret, "quic ku", out, 32);
    CHECK_HEX(out, 32, "1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9");
}

VTEST(expand_label_limits)
{
    uint8_t secret[48] = {0}, ctx[256] = {0}, out[48];
    char label[251];
    memset(label, 'x', 249);
    label[249] = 0;
    VCHECK_EQ(
        vega_crypto_hkdf_expand_label(VEGA_CRYPTO_SHA384, secret, 48, label, ctx, 255, out, 48), 0);
    label[249] = 'x';
    label[250] = 0;
    VCHECK_EQ(
        vega_crypto_hkdf_expand_label(VEGA_CRYPTO_SHA384, secret, 48, label, NULL, 0, out, 48),
        -EINVAL);
    VCHECK_EQ(vega_crypto_hkdf_expand_label(VEGA_CRYPTO_SHA384, secret, 48, "", NULL, 0, out, 48),
              -EINVAL);
    VCHECK_EQ(
        vega_crypto_hkdf_expand_label(VEGA_CRYPTO_SHA384, secret, 48, "key", ctx, 256, out, 48),
        -EINVAL);
    /* A SHA-384 secret must be 48 bytes (TLS_AES_256_GCM_SHA384). */
    VCHECK_EQ(
        vega_crypto_hkdf_expand_label(VEGA_CRYPTO_SHA384, secret, 32, "key", NULL, 0, out, 32),
        -EINVAL);
}

/* RFC 6070 §2: PBKDF2-HMAC-SHA1 (the cases with small iteration counts). */
VTEST(pbkdf2_rfc6070)
{
    static const struct {
        const char *p;
        size_t plen;
        const char *s;
        size_t slen;
        uint32_t c;
        const char *dk;
    } v[] = {
        {"password", 8, "salt", 4, 1, "0c60c80f961f0e71f3a9b524af6012062fe037a6"},
        {"password", 8, "salt", 4, 2, "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957"},
        {"password", 8, "salt", 4, 4096, "4b007901b765489abead49d926f721d065a429c1"},
        {"passwordPASSWORDpassword", 24, "saltSALTsaltSALTsaltSALTsaltSALTsalt", 36, 4096,
         "3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038"},
        {"pass\0word", 9, "sa\0lt", 5, 4096, "56fa6aa75548099dcc37d7f03425e0c3"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        uint8_t out[25];
        size_t n = strlen(v[i].dk) / 2;
        VCHECK_EQ(vega_crypto_pbkdf2(VEGA_CRYPTO_SHA1, v[i].p, v[i].plen, (const uint8_t *)v[i].s,
                                     v[i].slen, v[i].c, out, n),
                  0);
        CHECK_HEX(out, n, v[i].dk);
    }
}

/* RFC 7914 §11: PBKDF2-HMAC-SHA256, c = 1 and c = 80000 (tens of milliseconds). */
VTEST(pbkdf2_rfc7914)
{
    uint8_t out[64];
    VCHECK_EQ(
        vega_crypto_pbkdf2(VEGA_CRYPTO_SHA256, "passwd", 6, (const uint8_t *)"salt", 4, 1, out, 64),
        0);
    CHECK_HEX(out, 64,
              "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
              "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783");
    VCHECK_EQ(vega_crypto_pbkdf2(VEGA_CRYPTO_SHA256, "Password", 8, (const uint8_t *)"NaCl", 4,
                                 80000, out, 64),
              0);
    CHECK_HEX(out, 64,
              "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"
              "a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d");
    VCHECK_EQ(vega_crypto_pbkdf2(VEGA_CRYPTO_SHA256, "p", 1, NULL, 0, 0, out, 64), -EINVAL);
    VCHECK_EQ(vega_crypto_pbkdf2(VEGA_CRYPTO_SHA256, "p", 1, NULL, 0, 1, out, 0), -EINVAL);
    VCHECK_EQ(vega_crypto_pbkdf2(7, "p", 1, NULL, 0, 1, out, 16), -EINVAL);
    VCHECK_EQ(vega_crypto_pbkdf2(VEGA_CRYPTO_SHA512, NULL, 0, NULL, 0, 1, out, 64), 0);
}
