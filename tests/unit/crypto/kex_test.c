/* SPDX-License-Identifier: MIT */
/* Key exchange: X25519 (RFC 7748 §5.2, §6.1) and P-256 ECDH (RFC 5903 §8.1), with peer key
 * validation (RFC 8446 §4.2.8.2, §7.4.2). */
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

static vega_crypto_kex *kex_priv(vega_crypto_group g, const char *priv_hex)
{
    uint8_t priv[32];
    VCHECK_EQ(unhex(priv_hex, priv, sizeof(priv)), 32);
    vega_crypto_kex *k;
    VCHECK_EQ(vega_crypto_kex_new_private(&k, g, priv, 32), 0);
    VCHECK_EQ(vega_crypto_kex_get_group(k), g);
    return k;
}

static void x25519(const char *scalar_hex, const char *u_hex, const char *want, int line)
{
    uint8_t u[32], out[32];
    unhex(u_hex, u, 32);
    vega_crypto_kex *k = kex_priv(VEGA_CRYPTO_GROUP_X25519, scalar_hex);
    VCHECK_EQ(vega_crypto_kex_derive(k, u, 32, out, sizeof(out)), 32);
    check_hex(out, 32, want, line);
    vega_crypto_kex_free(k);
}

/* RFC 7748 §5.2: the two X25519 test vectors. */
VTEST(x25519_rfc7748_vectors)
{
    x25519("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
           "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
           "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552", __LINE__);
    x25519("4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
           "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
           "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957", __LINE__);
}

/* RFC 7748 §5.2: the iterated test, after 1 and after 1,000 iterations (the 1,000,000 one
 * would take minutes). */
VTEST(x25519_rfc7748_iterated)
{
    uint8_t k[32] = {9}, u[32] = {9}, r[32];
    for (int i = 1; i <= 1000; i++) {
        vega_crypto_kex *kx;
        VCHECK_EQ(vega_crypto_kex_new_private(&kx, VEGA_CRYPTO_GROUP_X25519, k, 32), 0);
        VCHECK_EQ(vega_crypto_kex_derive(kx, u, 32, r, sizeof(r)), 32);
        vega_crypto_kex_free(kx);
        memcpy(u, k, 32);
        memcpy(k, r, 32);
        if (i == 1)
            CHECK_HEX(k, 32, "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079");
    }
    CHECK_HEX(k, 32, "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51");
}

/* RFC 7748 §6.1: Alice and Bob's public keys and their shared secret. */
VTEST(x25519_rfc7748_dh)
{
    vega_crypto_kex *a =
        kex_priv(VEGA_CRYPTO_GROUP_X25519,
                 "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
    vega_crypto_kex *b =
        kex_priv(VEGA_CRYPTO_GROUP_X25519,
                 "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
    uint8_t pa[32], pb[32], ka[32], kb[32];
    VCHECK_EQ(vega_crypto_kex_get_public(a, pa, sizeof(pa)), 32);
    CHECK_HEX(pa, 32, "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
    VCHECK_EQ(vega_crypto_kex_get_public(b, pb, sizeof(pb)), 32);
    CHECK_HEX(pb, 32, "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
    VCHECK_EQ(vega_crypto_kex_derive(a, pb, 32, ka, sizeof(ka)), 32);
    VCHECK_EQ(vega_crypto_kex_derive(b, pa, 32, kb, sizeof(kb)), 32);
    CHECK_HEX(ka, 32, "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
    VCHECK(memcmp(ka, kb, 32) == 0);
    vega_crypto_kex_free(a);
    vega_crypto_kex_free(b);
}

/* RFC 8446 §7.4.2: the all-zero X25519 output (a small-order peer point) is rejected. */
VTEST(x25519_rejects_small_order)
{
    vega_crypto_kex *k;
    VCHECK_EQ(vega_crypto_kex_new(&k, VEGA_CRYPTO_GROUP_X25519), 0);
    uint8_t out[32], zero[32] = {0}, one[32] = {1};
    VCHECK_EQ(vega_crypto_kex_derive(k, zero, 32, out, sizeof(out)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    VCHECK_EQ(vega_crypto_kex_derive(k, one, 32, out, sizeof(out)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    /* A point of order 8 (RFC 7748 §7 lists these as inputs to reject by the zero check). */
    uint8_t ord8[32];
    unhex("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800", ord8, 32);
    VCHECK_EQ(vega_crypto_kex_derive(k, ord8, 32, out, sizeof(out)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    VCHECK_EQ(vega_crypto_kex_derive(k, one, 31, out, sizeof(out)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    VCHECK_EQ(vega_crypto_kex_derive(k, one, 33, out, sizeof(out)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    vega_crypto_kex_free(k);
}

static const char P256_I[] = "c88f01f510d9ac3f70a292daa2316de544e9aab8afe84049c62a9c57862d1433";
static const char P256_GI[] = "04"
                              "dad0b65394221cf9b051e1feca5787d098dfe637fc90b9ef945d0c3772581180"
                              "5271a0461cdb8252d61f1c456fa3e59ab1f45b33accf5f58389e0577b8990bb3";
static const char P256_R[] = "c6ef9c5d78ae012a011164acb397ce2088685d8f06bf9be0b283ab46476bee53";
static const char P256_GR[] = "04"
                              "d12dfb5289c8d4f81208b70270398c342296970a0bccb74c736fc7554494bf63"
                              "56fbf3ca366cc23e8157854c13c58d6aac23f046ada30f8353e74f33039872ab";
static const char P256_GIRX[] = "d6840f6b42f6edafd13116e0e12565202fef8e9ece7dce03812464d04b9442de";

/* RFC 5903 §8.1: ECDH on the 256-bit random ECP group (P-256); the TLS shared secret is the
 * x-coordinate (RFC 8446 §7.4.2). */
VTEST(p256_rfc5903)
{
    vega_crypto_kex *i = kex_priv(VEGA_CRYPTO_GROUP_SECP256R1, P256_I);
    vega_crypto_kex *r = kex_priv(VEGA_CRYPTO_GROUP_SECP256R1, P256_R);
    uint8_t gi[65], gr[65], s[32];
    VCHECK_EQ(vega_crypto_kex_get_public(i, gi, sizeof(gi)), 65);
    CHECK_HEX(gi, 65, P256_GI);
    VCHECK_EQ(vega_crypto_kex_get_public(r, gr, sizeof(gr)), 65);
    CHECK_HEX(gr, 65, P256_GR);
    VCHECK_EQ(vega_crypto_kex_derive(i, gr, 65, s, sizeof(s)), 32);
    CHECK_HEX(s, 32, P256_GIRX);
    VCHECK_EQ(vega_crypto_kex_derive(r, gi, 65, s, sizeof(s)), 32);
    CHECK_HEX(s, 32, P256_GIRX);
    vega_crypto_kex_free(i);
    vega_crypto_kex_free(r);
}

/* RFC 8446 §4.2.8.2: "peers MUST validate each other's public key". */
VTEST(p256_rejects_invalid_points)
{
    vega_crypto_kex *k = kex_priv(VEGA_CRYPTO_GROUP_SECP256R1, P256_I);
    uint8_t p[65], s[32];
    unhex(P256_GR, p, sizeof(p));
    /* Off the curve: y changed. */
    p[64] ^= 1;
    VCHECK_EQ(vega_crypto_kex_derive(k, p, 65, s, sizeof(s)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    p[64] ^= 1;
    /* Compressed and hybrid forms are not allowed in TLS 1.3. */
    p[0] = 0x02;
    VCHECK_EQ(vega_crypto_kex_derive(k, p, 33, s, sizeof(s)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    VCHECK_EQ(vega_crypto_kex_derive(k, p, 65, s, sizeof(s)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    p[0] = 0x06;
    VCHECK_EQ(vega_crypto_kex_derive(k, p, 65, s, sizeof(s)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    p[0] = 0x04;
    /* Wrong lengths; the point at infinity (a single zero byte). */
    VCHECK_EQ(vega_crypto_kex_derive(k, p, 64, s, sizeof(s)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    uint8_t inf[65] = {0};
    VCHECK_EQ(vega_crypto_kex_derive(k, inf, 1, s, sizeof(s)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    VCHECK_EQ(vega_crypto_kex_derive(k, inf, 65, s, sizeof(s)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    /* (0, 0) and coordinates >= p. */
    inf[0] = 0x04;
    VCHECK_EQ(vega_crypto_kex_derive(k, inf, 65, s, sizeof(s)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    memset(inf + 1, 0xff, 64);
    VCHECK_EQ(vega_crypto_kex_derive(k, inf, 65, s, sizeof(s)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    /* An X25519 share offered to a P-256 key. */
    VCHECK_EQ(vega_crypto_kex_derive(k, p + 1, 32, s, sizeof(s)), VEGA_ERR_CRYPTO_BAD_PUBLIC);
    /* Still fine afterwards. */
    VCHECK_EQ(vega_crypto_kex_derive(k, p, 65, s, sizeof(s)), 32);
    CHECK_HEX(s, 32, P256_GIRX);
    vega_crypto_kex_free(k);
}

VTEST(p256_scalar_range)
{
    vega_crypto_kex *k = (vega_crypto_kex *)1;
    uint8_t d[32] = {0};
    VCHECK_EQ(vega_crypto_kex_new_private(&k, VEGA_CRYPTO_GROUP_SECP256R1, d, 32),
              VEGA_ERR_CRYPTO_BAD_KEY);
    VCHECK(k == NULL);
    /* n, the group order, is out of range; n - 1 is the largest valid scalar. */
    unhex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551", d, 32);
    VCHECK_EQ(vega_crypto_kex_new_private(&k, VEGA_CRYPTO_GROUP_SECP256R1, d, 32),
              VEGA_ERR_CRYPTO_BAD_KEY);
    d[31] = 0x50;
    VCHECK_EQ(vega_crypto_kex_new_private(&k, VEGA_CRYPTO_GROUP_SECP256R1, d, 32), 0);
    vega_crypto_kex_free(k);
    VCHECK_EQ(vega_crypto_kex_new_private(&k, VEGA_CRYPTO_GROUP_SECP256R1, d, 31), -EINVAL);
}

/* Fresh key pairs agree with each other, in both groups. */
VTEST(kex_round_trip)
{
    static const vega_crypto_group groups[] = {VEGA_CRYPTO_GROUP_X25519,
                                               VEGA_CRYPTO_GROUP_SECP256R1};
    for (int g = 0; g < 2; g++) {
        vega_crypto_kex *a, *b;
        uint8_t pa[65], pb[65], sa[32], sb[32];
        size_t plen = vega_crypto_kex_public_len(groups[g]);
        VCHECK_EQ(vega_crypto_kex_new(&a, groups[g]), 0);
        VCHECK_EQ(vega_crypto_kex_new(&b, groups[g]), 0);
        VCHECK_EQ(vega_crypto_kex_get_public(a, pa, sizeof(pa)), plen);
        VCHECK_EQ(vega_crypto_kex_get_public(b, pb, sizeof(pb)), plen);
        VCHECK(memcmp(pa, pb, plen) != 0);
        if (plen == 65)
            VCHECK_EQ(pa[0], 0x04);
        VCHECK_EQ(vega_crypto_kex_derive(a, pb, plen, sa, sizeof(sa)), 32);
        VCHECK_EQ(vega_crypto_kex_derive(b, pa, plen, sb, sizeof(sb)), 32);
        VCHECK(memcmp(sa, sb, 32) == 0);
        /* Output room is checked first. */
        VCHECK_EQ(vega_crypto_kex_get_public(a, pa, plen - 1), VEGA_ERR_NOBUF);
        VCHECK_EQ(vega_crypto_kex_derive(a, pb, plen, sa, 31), VEGA_ERR_NOBUF);
        vega_crypto_kex_free(a);
        vega_crypto_kex_free(b);
    }
    vega_crypto_kex *k = (vega_crypto_kex *)1;
    VCHECK_EQ(vega_crypto_kex_new(&k, 0x0018), -EINVAL);
    VCHECK(k == NULL);
    VCHECK_EQ(vega_crypto_kex_public_len(VEGA_CRYPTO_GROUP_X25519), 32);
    VCHECK_EQ(vega_crypto_kex_public_len(VEGA_CRYPTO_GROUP_SECP256R1), 65);
    VCHECK_EQ(vega_crypto_kex_public_len(0), 0);
    vega_crypto_kex_free(NULL);
}
