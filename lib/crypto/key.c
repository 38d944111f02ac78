/* SPDX-License-Identifier: MIT */
/* Signature keys from PEM/DER and certificates; sign and verify with the TLS 1.3 signature
 * schemes (RFC 8446 §4.2.3) and the CertificateVerify content (RFC 8446 §4.4.3). */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include "crypto_int.h"

struct vega_crypto_key {
    EVP_PKEY *pkey;
    vega_crypto_key_type type;
    bool is_private;
};

/* Never prompt on a terminal for an encrypted PEM: fail instead. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
    return -1;
}

static int key_type(EVP_PKEY *pkey, vega_crypto_key_type *type)
{
    switch (EVP_PKEY_get_base_id(pkey)) {
    case EVP_PKEY_RSA:
        *type = VEGA_CRYPTO_KEY_RSA;
        return 0;
    case EVP_PKEY_ED25519:
        *type = VEGA_CRYPTO_KEY_ED25519;
        return 0;
    case EVP_PKEY_EC: {
        char name[64];
        size_t n = 0;
        if (EVP_PKEY_get_group_name(pkey, name, sizeof(name), &n) != 1)
            return VEGA_ERR_CRYPTO_UNSUPPORTED;
        int nid = OBJ_sn2nid(name);
        if (nid == NID_undef)
            nid = EC_curve_nist2nid(name);
        if (nid == NID_X9_62_prime256v1) {
            *type = VEGA_CRYPTO_KEY_P256;
            return 0;
        }
        if (nid == NID_secp384r1) {
            *type = VEGA_CRYPTO_KEY_P384;
            return 0;
        }
        return VEGA_ERR_CRYPTO_UNSUPPORTED;
    }
    default:
        return VEGA_ERR_CRYPTO_UNSUPPORTED;
    }
}

int vega__crypto_key_wrap(EVP_PKEY *pkey, bool is_private, vega_crypto_key **out)
{
    vega_crypto_key_type type;
    int r = key_type(pkey, &type);
    vega_crypto_key *k = r == 0 ? malloc(sizeof(*k)) : NULL;
    if (!k) {
        EVP_PKEY_free(pkey);
        return r < 0 ? vega__crypto_fail(r) : -ENOMEM;
    }
    k->pkey = pkey;
    k->type = type;
    k->is_private = is_private;
    *out = k;
    return 0;
}

/* True when data holds the text tag (a PEM label ending such as "PUBLIC KEY-----"). libcrypto
 * sets up its decoders before it looks at the input, about a millisecond in OpenSSL 3.0: PEM
 * input without a matching block is turned away first. */
static bool has_tag(const void *data, size_t len, const char *tag)
{
    return memmem(data, len, tag, strlen(tag)) != NULL;
}

static BIO *mem_bio(const void *data, size_t len)
{
    return len > INT_MAX ? NULL : BIO_new_mem_buf(data, (int)len);
}

int vega_crypto_key_load_private(vega_crypto_key **out, const void *data, size_t len)
{
    *out = NULL;
    EVP_PKEY *pkey = NULL;
    if (vega__crypto_is_pem(data, len)) {
        if (!has_tag(data, len, "PRIVATE KEY-----"))
            return VEGA_ERR_CRYPTO_BAD_KEY;
        BIO *b = mem_bio(data, len);
        if (!b)
            return vega__crypto_fail(-ENOMEM);
        pkey = PEM_read_bio_PrivateKey_ex(b, NULL, no_password, NULL, NULL, NULL);
        BIO_free(b);
    } else if (len <= LONG_MAX) {
        const unsigned char *p = data;
        pkey = d2i_AutoPrivateKey_ex(NULL, &p, (long)len, NULL, NULL);
    }
    if (!pkey)
        return vega__crypto_fail(VEGA_ERR_CRYPTO_BAD_KEY);
    return vega__crypto_key_wrap(pkey, true, out);
}

int vega_crypto_key_load_public(vega_crypto_key **out, const void *data, size_t len)
{
    *out = NULL;
    EVP_PKEY *pkey = NULL;
    if (vega__crypto_is_pem(data, len)) {
        if (!has_tag(data, len, "-----BEGIN PUBLIC KEY-----"))
            return VEGA_ERR_CRYPTO_BAD_KEY;
        BIO *b = mem_bio(data, len);
        if (!b)
            return vega__crypto_fail(-ENOMEM);
        pkey = PEM_read_bio_PUBKEY_ex(b, NULL, no_password, NULL, NULL, NULL);
        BIO_free(b);
    } else if (len <= LONG_MAX) {
        const unsigned char *p = data;
        pkey = d2i_PUBKEY_ex(NULL, &p, (long)len, NULL, NULL);
    }
    if (!pkey)
        return vega__crypto_fail(VEGA_ERR_CRYPTO_BAD_KEY);
    return vega__crypto_key_wrap(pkey, false, out);
}

int vega_crypto_key_from_cert(vega_crypto_key **out, const void *data, size_t len)
{
    *out = NULL;
    X509 *x = NULL;
    if (vega__crypto_is_pem(data, len)) {
        BIO *b = mem_bio(data, len);
        if (!b)
            return vega__crypto_fail(-ENOMEM);
        x = PEM_read_bio_X509(b, NULL, no_password, NULL);
        BIO_free(b);
    } else if (len <= LONG_MAX) {
        const unsigned char *p = data;
        x = d2i_X509(NULL, &p, (long)len);
    }
    if (!x)
        return vega__crypto_fail(VEGA_ERR_CRYPTO_BAD_CERT);
    EVP_PKEY *pkey = X509_get_pubkey(x); /* a new reference */
    X509_free(x);
    if (!pkey)
        return vega__crypto_fail(VEGA_ERR_CRYPTO_UNSUPPORTED);
    return vega__crypto_key_wrap(pkey, false, out);
}

vega_ssize vega_crypto_key_public_der(const vega_crypto_key *k, uint8_t *out, size_t cap)
{
    if (!k || (!out && cap))
        return -EINVAL;
    int n = i2d_PUBKEY(k->pkey, NULL);
    if (n <= 0) {
        ERR_clear_error();
        return VEGA_ERR_CRYPTO_LIBCRYPTO;
    }
    if (!out)
        return n;
    if ((size_t)n > cap)
        return VEGA_ERR_NOBUF;
    unsigned char *p = out;
    if (i2d_PUBKEY(k->pkey, &p) != n) {
        ERR_clear_error();
        return VEGA_ERR_CRYPTO_LIBCRYPTO;
    }
    return n;
}

vega_crypto_key_type vega_crypto_key_get_type(const vega_crypto_key *k)
{
    return k->type;
}

bool vega_crypto_key_is_private(const vega_crypto_key *k)
{
    return k->is_private;
}

size_t vega_crypto_key_sig_max(const vega_crypto_key *k)
{
    int n = EVP_PKEY_get_size(k->pkey);
    return n > 0 ? (size_t)n : 0;
}

void vega_crypto_key_free(vega_crypto_key *k)
{
    if (!k)
        return;
    EVP_PKEY_free(k->pkey);
    free(k);
}

/* What a signature scheme needs: the key type, the digest, and the RSA padding. */
struct scheme {
    vega_crypto_key_type type;
    const char *md; /* NULL for Ed25519 (PureEdDSA hashes inside) */
    int padding;    /* RSA only */
};

static bool scheme_of(vega_crypto_sig_alg alg, struct scheme *s)
{
    switch (alg) {
    case VEGA_CRYPTO_SIG_RSA_PKCS1_SHA256:
        *s = (struct scheme){VEGA_CRYPTO_KEY_RSA, "SHA256", RSA_PKCS1_PADDING};
        return true;
    case VEGA_CRYPTO_SIG_RSA_PKCS1_SHA384:
        *s = (struct scheme){VEGA_CRYPTO_KEY_RSA, "SHA384", RSA_PKCS1_PADDING};
        return true;
    case VEGA_CRYPTO_SIG_RSA_PKCS1_SHA512:
        *s = (struct scheme){VEGA_CRYPTO_KEY_RSA, "SHA512", RSA_PKCS1_PADDING};
        return true;
    case VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256:
        *s = (struct scheme){VEGA_CRYPTO_KEY_P256, "SHA256", 0};
        return true;
    case VEGA_CRYPTO_SIG_ECDSA_SECP384R1_SHA384:
        *s = (struct scheme){VEGA_CRYPTO_KEY_P384, "SHA384", 0};
        return true;
    case VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA256:
        *s = (struct scheme){VEGA_CRYPTO_KEY_RSA, "SHA256", RSA_PKCS1_PSS_PADDING};
        return true;
    case VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA384:
        *s = (struct scheme){VEGA_CRYPTO_KEY_RSA, "SHA384", RSA_PKCS1_PSS_PADDING};
        return true;
    case VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA512:
        *s = (struct scheme){VEGA_CRYPTO_KEY_RSA, "SHA512", RSA_PKCS1_PSS_PADDING};
        return true;
    case VEGA_CRYPTO_SIG_ED25519:
        *s = (struct scheme){VEGA_CRYPTO_KEY_ED25519, NULL, 0};
        return true;
    }
    return false;
}

bool vega_crypto_key_supports(const vega_crypto_key *k, vega_crypto_sig_alg alg)
{
    struct scheme s;
    return scheme_of(alg, &s) && s.type == k->type;
}

/* Sets up md_ctx for signing or verifying with scheme s. */
static bool init_ctx(EVP_MD_CTX *md_ctx, const vega_crypto_key *k, const struct scheme *s,
                     bool sign)
{
    EVP_PKEY_CTX *pctx = NULL;
    int ok = sign ? EVP_DigestSignInit_ex(md_ctx, &pctx, s->md, NULL, NULL, k->pkey, NULL)
                  : EVP_DigestVerifyInit_ex(md_ctx, &pctx, s->md, NULL, NULL, k->pkey, NULL);
    if (ok != 1)
        return false;
    if (k->type != VEGA_CRYPTO_KEY_RSA)
        return true;
    if (EVP_PKEY_CTX_set_rsa_padding(pctx, s->padding) != 1)
        return false;
    if (s->padding != RSA_PKCS1_PSS_PADDING)
        return true;
    /* RFC 8446 §4.2.3: RSASSA-PSS with "the same hash algorithm" for MGF1, and "the length of
     * the Salt MUST be equal to the length of the output of the digest algorithm". On verify
     * this also rejects any other salt length. */
    return EVP_PKEY_CTX_set_rsa_mgf1_md_name(pctx, s->md, NULL) == 1 &&
           EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1;
}

vega_ssize vega_crypto_key_sign(const vega_crypto_key *k, vega_crypto_sig_alg alg, const void *msg,
                                size_t len, uint8_t *sig, size_t cap)
{
    struct scheme s;
    if (!scheme_of(alg, &s))
        return VEGA_ERR_CRYPTO_UNSUPPORTED;
    /* RFC 8446 §4.2.3: RSASSA-PKCS1-v1_5 "MUST NOT be used in signed TLS handshake
     * messages"; it is here only to verify what others signed. */
    if (s.type == VEGA_CRYPTO_KEY_RSA && s.padding == RSA_PKCS1_PADDING)
        return VEGA_ERR_CRYPTO_UNSUPPORTED;
    if (!k->is_private || s.type != k->type)
        return VEGA_ERR_CRYPTO_KEY_MISMATCH;
    size_t max = vega_crypto_key_sig_max(k);
    if (cap < max)
        return VEGA_ERR_NOBUF;
    EVP_MD_CTX *md_ctx = EVP_MD_CTX_new();
    size_t n = max;
    int ok = md_ctx && init_ctx(md_ctx, k, &s, true) &&
             EVP_DigestSign(md_ctx, sig, &n, len ? msg : (const void *)"", len) == 1;
    EVP_MD_CTX_free(md_ctx);
    if (!ok)
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    return (vega_ssize)n;
}

int vega_crypto_key_verify(const vega_crypto_key *k, vega_crypto_sig_alg alg, const void *msg,
                           size_t len, const uint8_t *sig, size_t sig_len)
{
    struct scheme s;
    if (!scheme_of(alg, &s))
        return VEGA_ERR_CRYPTO_UNSUPPORTED;
    if (s.type != k->type)
        return VEGA_ERR_CRYPTO_KEY_MISMATCH;
    EVP_MD_CTX *md_ctx = EVP_MD_CTX_new();
    if (!md_ctx || !init_ctx(md_ctx, k, &s, false)) {
        EVP_MD_CTX_free(md_ctx);
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    }
    /* 1 = valid; 0 = does not verify; < 0 = malformed (bad DER, wrong length): all are a bad
     * signature from the caller's point of view. */
    int ok = EVP_DigestVerify(md_ctx, sig_len ? sig : (const uint8_t *)"", sig_len,
                              len ? msg : (const void *)"", len);
    EVP_MD_CTX_free(md_ctx);
    return ok == 1 ? 0 : vega__crypto_fail(VEGA_ERR_CRYPTO_BAD_SIGNATURE);
}

vega_ssize vega_crypto_tls13_cv_content(bool is_server, const uint8_t *th, size_t th_len,
                                        uint8_t *out, size_t cap)
{
    /* RFC 8446 §4.4.3: "The digital signature is then computed over the concatenation of:
     * A string that consists of octet 32 (0x20) repeated 64 times; The context string; A
     * single 0 byte which serves as the separator; The content to be signed." */
    static const char server_ctx[] = "TLS 1.3, server CertificateVerify";
    static const char client_ctx[] = "TLS 1.3, client CertificateVerify";
    const size_t ctx_len = sizeof(server_ctx) - 1; /* both are 33 bytes */
    if (th_len == 0 || th_len > VEGA_CRYPTO_HASH_MAX_LEN)
        return -EINVAL;
    size_t total = 64 + ctx_len + 1 + th_len;
    if (cap < total)
        return VEGA_ERR_NOBUF;
    memset(out, 0x20, 64);
    memcpy(out + 64, is_server ? server_ctx : client_ctx, ctx_len);
    out[64 + ctx_len] = 0;
    memcpy(out + 64 + ctx_len + 1, th, th_len);
    return (vega_ssize)total;
}
