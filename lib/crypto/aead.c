/* SPDX-License-Identifier: MIT */
/* AEAD seal/open in place (RFC 5116) with AES-GCM and ChaCha20-Poly1305 (RFC 8439), as TLS 1.3
 * records (RFC 8446 §5.2) and QUIC packets (RFC 9001 §5.3) use them. */
#include <string.h>

#include "crypto_int.h"

/* ---- AEAD ---------------------------------------------------------------------------------- */

struct vega_crypto_aead {
    vega__crypto_cipher c; /* keyed once; each seal/open sets only the nonce and direction */
    vega_crypto_aead_alg alg;
};

static const char *cipher_name(vega_crypto_aead_alg alg)
{
    switch (alg) {
    case VEGA_CRYPTO_AES_128_GCM:
        return "AES-128-GCM";
    case VEGA_CRYPTO_AES_256_GCM:
        return "AES-256-GCM";
    case VEGA_CRYPTO_CHACHA20_POLY1305:
        return "ChaCha20-Poly1305";
    }
    return NULL;
}

size_t vega_crypto_aead_key_len(vega_crypto_aead_alg alg)
{
    switch (alg) {
    case VEGA_CRYPTO_AES_128_GCM:
        return 16;
    case VEGA_CRYPTO_AES_256_GCM:
    case VEGA_CRYPTO_CHACHA20_POLY1305:
        return 32;
    }
    return 0;
}

int vega__crypto_aead_new_ex(vega_crypto_aead **out, vega_crypto_aead_alg alg, const uint8_t *key,
                             size_t key_len, bool direct)
{
    *out = NULL;
    const char *name = cipher_name(alg);
    if (!name || key_len != vega_crypto_aead_key_len(alg))
        return -EINVAL;
    vega_crypto_aead *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->alg = alg;
    int rc = vega__crypto_cipher_init(&a->c, name, key, key_len, direct);
    /* All three take a 12-byte nonce by default (RFC 5116 §5.1, RFC 8439 §2.8); each seal and
     * open passes exactly that many bytes. */
    if (rc == 0 && EVP_CIPHER_get_iv_length(a->c.alg) != VEGA_CRYPTO_AEAD_NONCE_LEN)
        rc = vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    if (rc < 0) {
        vega_crypto_aead_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

int vega_crypto_aead_new(vega_crypto_aead **out, vega_crypto_aead_alg alg, const uint8_t *key,
                         size_t key_len)
{
    return vega__crypto_aead_new_ex(out, alg, key, key_len, true);
}

bool vega__crypto_aead_is_direct(const vega_crypto_aead *a)
{
    return vega__crypto_cipher_is_direct(&a->c);
}

/* Sets the nonce and direction, then feeds the AAD. */
static bool start(vega_crypto_aead *a, const uint8_t *nonce, int enc, const void *aad,
                  size_t aad_len)
{
    return vega__crypto_cipher_start(&a->c, enc, nonce, VEGA_CRYPTO_AEAD_NONCE_LEN) &&
           (aad_len == 0 || vega__crypto_cipher_update(&a->c, NULL, aad, aad_len));
}

vega_ssize vega_crypto_aead_seal(vega_crypto_aead *a, const uint8_t *nonce, const void *aad,
                                 size_t aad_len, uint8_t *buf, size_t len, size_t cap)
{
    if (len > INT_MAX - VEGA_CRYPTO_AEAD_TAG_LEN || aad_len > INT_MAX - VEGA_CRYPTO_AEAD_TAG_LEN)
        return -EINVAL;
    if (cap < len + VEGA_CRYPTO_AEAD_TAG_LEN)
        return VEGA_ERR_NOBUF;
    if (!start(a, nonce, 1, aad, aad_len) ||
        (len && !vega__crypto_cipher_update(&a->c, buf, buf, len)) ||
        !vega__crypto_cipher_final(&a->c, buf + len) ||
        !vega__crypto_cipher_tag(&a->c, buf + len, VEGA_CRYPTO_AEAD_TAG_LEN, true))
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    return (vega_ssize)(len + VEGA_CRYPTO_AEAD_TAG_LEN);
}

vega_ssize vega_crypto_aead_seal_gather(vega_crypto_aead *a, const uint8_t *nonce, const void *aad,
                                        size_t aad_len, uint8_t *out, size_t cap,
                                        const vega_crypto_piece *pieces, size_t n)
{
    if (n > 0 && !pieces)
        return -EINVAL;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (pieces[i].len > INT_MAX || total + pieces[i].len > INT_MAX - VEGA_CRYPTO_AEAD_TAG_LEN)
            return -EINVAL;
        total += pieces[i].len;
    }
    if (aad_len > INT_MAX - VEGA_CRYPTO_AEAD_TAG_LEN)
        return -EINVAL;
    if (cap < total + VEGA_CRYPTO_AEAD_TAG_LEN)
        return VEGA_ERR_NOBUF;
    if (!start(a, nonce, 1, aad, aad_len))
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        const vega_crypto_piece *p = &pieces[i];
        if (p->len &&
            !vega__crypto_cipher_update(&a->c, out + pos, p->src ? p->src : out + pos, p->len))
            return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
        pos += p->len;
    }
    if (!vega__crypto_cipher_final(&a->c, out + total) ||
        !vega__crypto_cipher_tag(&a->c, out + total, VEGA_CRYPTO_AEAD_TAG_LEN, true))
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    return (vega_ssize)(total + VEGA_CRYPTO_AEAD_TAG_LEN);
}

vega_ssize vega_crypto_aead_open(vega_crypto_aead *a, const uint8_t *nonce, const void *aad,
                                 size_t aad_len, uint8_t *buf, size_t len)
{
    if (len > INT_MAX || aad_len > INT_MAX - VEGA_CRYPTO_AEAD_TAG_LEN)
        return -EINVAL;
    if (len < VEGA_CRYPTO_AEAD_TAG_LEN)
        return VEGA_ERR_CRYPTO_AUTH;
    size_t ct_len = len - VEGA_CRYPTO_AEAD_TAG_LEN;
    uint8_t tag[VEGA_CRYPTO_AEAD_TAG_LEN];
    memcpy(tag, buf + ct_len, sizeof(tag));
    if (!start(a, nonce, 0, aad, aad_len) ||
        !vega__crypto_cipher_tag(&a->c, tag, sizeof(tag), false) ||
        (ct_len && !vega__crypto_cipher_update(&a->c, buf, buf, ct_len))) {
        vega_crypto_cleanse(buf, ct_len);
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    }
    if (!vega__crypto_cipher_final(&a->c, buf + ct_len)) {
        /* RFC 5116 §2.2: on failure "the decrypted plaintext ... MUST NOT be returned". The
         * in-place decryption already wrote it, so wipe it. */
        vega_crypto_cleanse(buf, ct_len);
        return vega__crypto_fail(VEGA_ERR_CRYPTO_AUTH);
    }
    return (vega_ssize)ct_len;
}

vega_crypto_aead_alg vega_crypto_aead_get_alg(const vega_crypto_aead *a)
{
    return a->alg;
}

void vega_crypto_aead_free(vega_crypto_aead *a)
{
    if (!a)
        return;
    vega__crypto_cipher_fini(&a->c); /* cleanses the key schedule */
    free(a);
}

void vega_crypto_aead_nonce(const uint8_t *iv, uint64_t seq, uint8_t *nonce)
{
    /* RFC 8446 §5.3: the 64-bit sequence number, big-endian, left-padded with zeros to
     * iv_length, XORed with the IV. */
    if (nonce != iv)
        memcpy(nonce, iv, VEGA_CRYPTO_AEAD_NONCE_LEN);
    for (int i = 0; i < 8; i++)
        nonce[VEGA_CRYPTO_AEAD_NONCE_LEN - 1 - i] ^= (uint8_t)(seq >> (8 * i));
}
