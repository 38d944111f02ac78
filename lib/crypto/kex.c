/* SPDX-License-Identifier: MIT */
/* Ephemeral key exchange for TLS 1.3 key shares: X25519 (RFC 7748) and P-256 ECDH
 * (RFC 8446 §4.2.8.2, §7.4). */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>

#include "crypto_int.h"

struct vega_crypto_kex {
    EVP_PKEY *pkey;
    vega_crypto_group group;
    size_t pub_len;
    uint8_t pub[VEGA_CRYPTO_KEX_MAX_PUBLIC]; /* TLS wire form, computed once */
};

size_t vega_crypto_kex_public_len(vega_crypto_group g)
{
    switch (g) {
    case VEGA_CRYPTO_GROUP_X25519:
        return 32;
    case VEGA_CRYPTO_GROUP_SECP256R1:
        return 65;
    }
    return 0;
}

/* Fills k->pub from k->pkey and takes ownership of it. */
static int finish(vega_crypto_kex *k)
{
    size_t n = 0;
    int ok;
    if (k->group == VEGA_CRYPTO_GROUP_X25519) {
        n = sizeof(k->pub);
        ok = EVP_PKEY_get_raw_public_key(k->pkey, k->pub, &n) == 1;
    } else {
        /* RFC 8446 §4.2.8.2: UncompressedPointRepresentation, 0x04 || X || Y. libcrypto's
         * default point format for EC keys is uncompressed; the checks below make sure. */
        ok = EVP_PKEY_get_octet_string_param(k->pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, k->pub,
                                             sizeof(k->pub), &n) == 1 &&
             k->pub[0] == 0x04;
    }
    if (!ok || n != vega_crypto_kex_public_len(k->group))
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    k->pub_len = n;
    return 0;
}

static int alloc_kex(vega_crypto_kex **out, vega_crypto_group g)
{
    if (!vega_crypto_kex_public_len(g))
        return -EINVAL;
    vega_crypto_kex *k = calloc(1, sizeof(*k));
    if (!k)
        return -ENOMEM;
    k->group = g;
    *out = k;
    return 0;
}

static int done(vega_crypto_kex **out, vega_crypto_kex *k, int r)
{
    if (r == 0 && !k->pkey)
        r = vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    if (r == 0)
        r = finish(k);
    if (r < 0) {
        vega_crypto_kex_free(k);
        *out = NULL;
        return r;
    }
    *out = k;
    return 0;
}

int vega_crypto_kex_new(vega_crypto_kex **out, vega_crypto_group g)
{
    *out = NULL;
    vega_crypto_kex *k;
    int r = alloc_kex(&k, g);
    if (r < 0)
        return r;
    if (g == VEGA_CRYPTO_GROUP_X25519)
        k->pkey = EVP_PKEY_Q_keygen(NULL, NULL, "X25519");
    else
        k->pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    return done(out, k, 0);
}

/* A P-256 key pair from the big-endian scalar d: the public point is d*G. */
static int p256_from_scalar(const uint8_t *priv, EVP_PKEY **pkey)
{
    int r = VEGA_ERR_CRYPTO_LIBCRYPTO;
    uint8_t pub[65];
    EC_GROUP *grp = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    BIGNUM *d = BN_secure_new();
    EC_POINT *pt = grp ? EC_POINT_new(grp) : NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    if (!grp || !d || !pt || !bld || !BN_bin2bn(priv, 32, d))
        goto out;
    if (BN_is_zero(d) || BN_cmp(d, EC_GROUP_get0_order(grp)) >= 0) {
        r = VEGA_ERR_CRYPTO_BAD_KEY;
        goto out;
    }
    if (!EC_POINT_mul(grp, pt, d, NULL, NULL, NULL) ||
        EC_POINT_point2oct(grp, pt, POINT_CONVERSION_UNCOMPRESSED, pub, sizeof(pub), NULL) !=
            sizeof(pub))
        goto out;
    if (!OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "P-256", 0) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, d) ||
        !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub)) ||
        !(params = OSSL_PARAM_BLD_to_param(bld)))
        goto out;
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (ctx && EVP_PKEY_fromdata_init(ctx) == 1 &&
        EVP_PKEY_fromdata(ctx, pkey, EVP_PKEY_KEYPAIR, params) == 1)
        r = 0;
out:
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    EC_POINT_free(pt);
    BN_clear_free(d);
    EC_GROUP_free(grp);
    return r < 0 ? vega__crypto_fail(r) : 0;
}

int vega_crypto_kex_new_private(vega_crypto_kex **out, vega_crypto_group g, const uint8_t *priv,
                                size_t priv_len)
{
    *out = NULL;
    if (priv_len != 32)
        return -EINVAL;
    vega_crypto_kex *k;
    int r = alloc_kex(&k, g);
    if (r < 0)
        return r;
    if (g == VEGA_CRYPTO_GROUP_X25519)
        k->pkey = EVP_PKEY_new_raw_private_key_ex(NULL, "X25519", NULL, priv, priv_len);
    else
        r = p256_from_scalar(priv, &k->pkey);
    return done(out, k, r);
}

vega_ssize vega_crypto_kex_get_public(const vega_crypto_kex *k, uint8_t *out, size_t cap)
{
    if (cap < k->pub_len)
        return VEGA_ERR_NOBUF;
    memcpy(out, k->pub, k->pub_len);
    return (vega_ssize)k->pub_len;
}

/* The peer's key share as an EVP_PKEY, or NULL when it is not a valid public key. */
static EVP_PKEY *peer_key(vega_crypto_group g, const uint8_t *peer, size_t len)
{
    if (len != vega_crypto_kex_public_len(g))
        return NULL;
    if (g == VEGA_CRYPTO_GROUP_X25519)
        return EVP_PKEY_new_raw_public_key_ex(NULL, "X25519", NULL, peer, len);
    /* RFC 8446 §4.2.8.2: "peers MUST validate each other's public key Y by ensuring that the
     * point is a valid point on the elliptic curve". Only the uncompressed form is allowed;
     * decoding it checks that the point lies on the curve (and is not the point at
     * infinity, which has no uncompressed encoding). */
    if (peer[0] != 0x04)
        return NULL;
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM params[3] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, "P-256", 0),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)peer, len),
        OSSL_PARAM_construct_end(),
    };
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (!ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
        pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}

vega_ssize vega_crypto_kex_derive(vega_crypto_kex *k, const uint8_t *peer, size_t peer_len,
                                  uint8_t *secret, size_t cap)
{
    if (cap < VEGA_CRYPTO_KEX_SECRET_LEN)
        return VEGA_ERR_NOBUF;
    EVP_PKEY *pk = peer_key(k->group, peer, peer_len);
    if (!pk)
        return vega__crypto_fail(VEGA_ERR_CRYPTO_BAD_PUBLIC);
    int r = VEGA_ERR_CRYPTO_LIBCRYPTO;
    size_t n = cap;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, k->pkey, NULL);
    if (!ctx || EVP_PKEY_derive_init(ctx) != 1)
        goto out;
    /* validate_peer = 1: a full public key check (on the curve, in the right subgroup). */
    if (EVP_PKEY_derive_set_peer_ex(ctx, pk, 1) != 1) {
        r = VEGA_ERR_CRYPTO_BAD_PUBLIC;
        goto out;
    }
    if (EVP_PKEY_derive(ctx, secret, &n) != 1) {
        /* RFC 7748 §6.1 / RFC 8446 §7.4.2: for X25519 "implementations MUST check whether the
         * computed Diffie-Hellman shared secret is the all-zero value and abort if so";
         * libcrypto's X25519 derive fails exactly then. */
        r = k->group == VEGA_CRYPTO_GROUP_X25519 ? VEGA_ERR_CRYPTO_BAD_PUBLIC
                                                 : VEGA_ERR_CRYPTO_LIBCRYPTO;
        goto out;
    }
    r = n == VEGA_CRYPTO_KEX_SECRET_LEN ? 0 : VEGA_ERR_CRYPTO_LIBCRYPTO;
out:
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pk);
    if (r < 0) {
        vega_crypto_cleanse(secret, VEGA_CRYPTO_KEX_SECRET_LEN);
        return vega__crypto_fail(r);
    }
    return VEGA_CRYPTO_KEX_SECRET_LEN;
}

vega_crypto_group vega_crypto_kex_get_group(const vega_crypto_kex *k)
{
    return k->group;
}

void vega_crypto_kex_free(vega_crypto_kex *k)
{
    if (!k)
        return;
    EVP_PKEY_free(k->pkey); /* libcrypto clears private key material on free */
    free(k);
}
