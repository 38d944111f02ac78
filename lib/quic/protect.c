/* SPDX-License-Identifier: MIT */
/* Packet protection (RFC 9001 §5, RFC 9369 §3.3): Initial secrets, key derivation with the
 * version's labels, AEAD sealing/opening and header protection, key update secrets (§6.1) and
 * the Retry integrity tag (§5.8). */
#include <stdio.h>
#include <stdlib.h>

#include "quic_int.h"

struct vega_quic_keys {
    vega_crypto_aead *aead;
    vega_crypto_hp *hp;
    uint8_t iv[VEGA_CRYPTO_AEAD_NONCE_LEN];
    /* Kept so a key update can reuse it: header protection keys never change (RFC 9001 §6). */
    vega_crypto_aead_alg alg;
    uint8_t hp_key[VEGA_CRYPTO_AEAD_MAX_KEY_LEN];
    size_t hp_len;
    const vega_quic_mem *mem; /* the allocator of this struct (NULL = libc) */
};

/* RFC 9001 §5.2 and RFC 9369 §3.3.1. */
static const uint8_t salt_v1[20] = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
                                    0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};
static const uint8_t salt_v2[20] = {0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93,
                                    0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9};
/* RFC 9001 §5.8 and RFC 9369 §3.3.3: fixed AES-128-GCM key and nonce for the Retry tag. */
static const uint8_t retry_key_v1[16] = {0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a,
                                         0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e};
static const uint8_t retry_nonce_v1[12] = {0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63,
                                           0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb};
static const uint8_t retry_key_v2[16] = {0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2,
                                         0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c, 0xcc, 0x92};
static const uint8_t retry_nonce_v2[12] = {0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c,
                                           0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a};

static vega_crypto_hash_alg hash_of(vega_crypto_aead_alg alg)
{
    switch (alg) {
    case VEGA_CRYPTO_AES_128_GCM:
    case VEGA_CRYPTO_CHACHA20_POLY1305:
        return VEGA_CRYPTO_SHA256;
    case VEGA_CRYPTO_AES_256_GCM:
        return VEGA_CRYPTO_SHA384;
    }
    return 0;
}

/* The version's label for what ("key", "iv", "hp", "ku"). */
static const char *label(uint32_t version, const char *what, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s %s", version == VEGA_QUIC_V2 ? "quicv2" : "quic", what);
    return buf;
}

static int check_secret(uint32_t version, vega_crypto_aead_alg alg, size_t secret_len)
{
    vega_crypto_hash_alg h = hash_of(alg);
    if (!vega_quic_version_is_supported(version) || h == 0 || secret_len != vega_crypto_hash_len(h))
        return -EINVAL;
    return 0;
}

int vega_quic_initial_secrets(uint32_t version, const uint8_t *dcid, size_t dcid_len,
                              uint8_t *client, uint8_t *server)
{
    if (!vega_quic_version_is_supported(version) || dcid_len > VEGA_QUIC_MAX_CID_LEN)
        return -EINVAL;
    uint8_t initial[32];
    const uint8_t *salt = version == VEGA_QUIC_V2 ? salt_v2 : salt_v1;
    int rc = vega_crypto_hkdf_extract(VEGA_CRYPTO_SHA256, salt, 20, dcid, dcid_len, initial);
    if (rc == 0 && client)
        rc = vega_crypto_hkdf_expand_label(VEGA_CRYPTO_SHA256, initial, 32, "client in", NULL, 0,
                                           client, 32);
    if (rc == 0 && server)
        rc = vega_crypto_hkdf_expand_label(VEGA_CRYPTO_SHA256, initial, 32, "server in", NULL, 0,
                                           server, 32);
    vega_crypto_cleanse(initial, sizeof(initial));
    return rc;
}

int vega_quic_key_material_derive(vega_quic_key_material *m, uint32_t version,
                                  vega_crypto_aead_alg alg, const uint8_t *secret,
                                  size_t secret_len)
{
    int rc = check_secret(version, alg, secret_len);
    if (rc < 0)
        return rc;
    memset(m, 0, sizeof(*m));
    vega_crypto_hash_alg h = hash_of(alg);
    m->key_len = vega_crypto_aead_key_len(alg);
    char lb[16];
    rc = vega_crypto_hkdf_expand_label(h, secret, secret_len, label(version, "key", lb, sizeof lb),
                                       NULL, 0, m->key, m->key_len);
    if (rc == 0)
        rc = vega_crypto_hkdf_expand_label(h, secret, secret_len,
                                           label(version, "iv", lb, sizeof lb), NULL, 0, m->iv,
                                           sizeof(m->iv));
    if (rc == 0)
        rc = vega_crypto_hkdf_expand_label(
            h, secret, secret_len, label(version, "hp", lb, sizeof lb), NULL, 0, m->hp, m->key_len);
    if (rc < 0)
        vega_crypto_cleanse(m, sizeof(*m));
    return rc;
}

int vega_quic_secret_update(uint32_t version, vega_crypto_aead_alg alg, const uint8_t *secret,
                            size_t secret_len, uint8_t *out)
{
    int rc = check_secret(version, alg, secret_len);
    if (rc < 0)
        return rc;
    uint8_t tmp[VEGA_CRYPTO_HASH_MAX_LEN];
    char lb[16];
    rc = vega_crypto_hkdf_expand_label(hash_of(alg), secret, secret_len,
                                       label(version, "ku", lb, sizeof lb), NULL, 0, tmp,
                                       secret_len);
    if (rc == 0)
        memcpy(out, tmp, secret_len); /* out may alias secret */
    vega_crypto_cleanse(tmp, sizeof(tmp));
    return rc;
}

int vega_quic_keys_new(vega_quic_keys **out, uint32_t version, vega_crypto_aead_alg alg,
                       const uint8_t *secret, size_t secret_len)
{
    return vega__quic_keys_new_mem(NULL, out, version, alg, secret, secret_len);
}

int vega__quic_keys_new_mem(const vega_quic_mem *mem, vega_quic_keys **out, uint32_t version,
                            vega_crypto_aead_alg alg, const uint8_t *secret, size_t secret_len)
{
    *out = NULL;
    vega_quic_key_material m;
    int rc = vega_quic_key_material_derive(&m, version, alg, secret, secret_len);
    if (rc < 0)
        return rc;
    vega_quic_keys *k = vega__quic_calloc(mem, 1, sizeof(*k));
    if (!k) {
        rc = -ENOMEM;
        goto done;
    }
    k->mem = mem;
    memcpy(k->iv, m.iv, sizeof(k->iv));
    k->alg = alg;
    memcpy(k->hp_key, m.hp, m.key_len);
    k->hp_len = m.key_len;
    rc = vega_crypto_aead_new(&k->aead, alg, m.key, m.key_len);
    if (rc == 0)
        rc = vega_crypto_hp_new(&k->hp, alg, m.hp, m.key_len);
    if (rc < 0)
        vega_quic_keys_free(k);
    else
        *out = k;
done:
    vega_crypto_cleanse(&m, sizeof(m));
    return rc;
}

int vega__quic_keys_next(const vega_quic_keys *cur, uint32_t version, const uint8_t *secret,
                         size_t secret_len, vega_quic_keys **out)
{
    *out = NULL;
    vega_quic_key_material m;
    int rc = vega_quic_key_material_derive(&m, version, cur->alg, secret, secret_len);
    if (rc < 0)
        return rc;
    vega_quic_keys *k = vega__quic_calloc(cur->mem, 1, sizeof(*k));
    if (!k) {
        rc = -ENOMEM;
        goto done;
    }
    k->mem = cur->mem;
    memcpy(k->iv, m.iv, sizeof(k->iv));
    k->alg = cur->alg;
    memcpy(k->hp_key, cur->hp_key, cur->hp_len);
    k->hp_len = cur->hp_len;
    rc = vega_crypto_aead_new(&k->aead, cur->alg, m.key, m.key_len);
    if (rc == 0)
        rc = vega_crypto_hp_new(&k->hp, cur->alg, cur->hp_key, cur->hp_len);
    if (rc < 0)
        vega_quic_keys_free(k);
    else
        *out = k;
done:
    vega_crypto_cleanse(&m, sizeof(m));
    return rc;
}

int vega__quic_hp_first(vega_quic_keys *k, const uint8_t *pkt, size_t pkt_len, size_t pn_offset,
                        uint8_t *first, uint8_t *mask)
{
    if (pn_offset == 0 || pkt_len < pn_offset ||
        pkt_len - pn_offset < 4 + VEGA_CRYPTO_HP_SAMPLE_LEN)
        return VEGA_ERR_PROTO;
    uint8_t m[VEGA_CRYPTO_HP_MASK_LEN];
    int rc = vega_crypto_hp_mask(k->hp, pkt + pn_offset + 4, m);
    if (rc < 0)
        return rc;
    *first = pkt[0] ^ (m[0] & ((pkt[0] & 0x80) ? 0x0f : 0x1f));
    if (mask)
        memcpy(mask, m, sizeof m);
    return 0;
}

int vega_quic_keys_new_initial(vega_quic_keys **out, uint32_t version, const uint8_t *dcid,
                               size_t dcid_len, bool server)
{
    return vega__quic_keys_new_initial_mem(NULL, out, version, dcid, dcid_len, server);
}

int vega__quic_keys_new_initial_mem(const vega_quic_mem *mem, vega_quic_keys **out,
                                    uint32_t version, const uint8_t *dcid, size_t dcid_len,
                                    bool server)
{
    *out = NULL;
    uint8_t secret[32];
    int rc = vega_quic_initial_secrets(version, dcid, dcid_len, server ? NULL : secret,
                                       server ? secret : NULL);
    if (rc == 0)
        rc = vega__quic_keys_new_mem(mem, out, version, VEGA_CRYPTO_AES_128_GCM, secret,
                                     sizeof(secret));
    vega_crypto_cleanse(secret, sizeof(secret));
    return rc;
}

void vega_quic_keys_free(vega_quic_keys *k)
{
    if (!k)
        return;
    vega_crypto_aead_free(k->aead);
    vega_crypto_hp_free(k->hp);
    const vega_quic_mem *mem = k->mem;
    vega_crypto_cleanse(k, sizeof(*k));
    vega__quic_free(mem, k);
}

/* RFC 9001 §5.3: the nonce is the IV XORed with the packet number, left-padded to 12 bytes and
 * big-endian: vega_crypto_aead_nonce's result, as one 64-bit XOR per packet. */
static inline void packet_nonce(const uint8_t *iv, uint64_t pn, uint8_t *nonce)
{
    uint8_t be[8];
    for (int i = 0; i < 8; i++)
        be[i] = (uint8_t)(pn >> (56 - 8 * i)); /* the compiler makes this one byte swap */
    uint64_t tail, x;
    memcpy(nonce, iv, 4);
    memcpy(&tail, iv + 4, 8);
    memcpy(&x, be, 8);
    tail ^= x;
    memcpy(nonce + 4, &tail, 8);
}

/* §5.4.1: 4 bits of a long header's first byte are protected, 5 of a short one's. */
static uint8_t first_mask(uint8_t first)
{
    return (first & 0x80) ? 0x0f : 0x1f;
}

/* Seals and protects the header; the payload is pieces[0..np) (NULL: the bytes in place), np
 * 0 for all of it in place. */
static vega_ssize protect(vega_quic_keys *k, uint8_t *pkt, size_t cap, size_t hdr_len, uint64_t pn,
                          size_t payload_len, const vega_crypto_piece *pieces, size_t np)
{
    if (hdr_len == 0 || hdr_len > cap)
        return -EINVAL;
    size_t pn_len = (size_t)(pkt[0] & 3) + 1;
    /* §5.4.2: the sample starts 4 bytes after the packet number's start, so pn and payload
     * together must give at least 4 bytes before the 16 sampled ones. */
    if (hdr_len < 1 + pn_len || pn_len + payload_len < 4 || pn > VEGA_QUIC_MAX_PN)
        return -EINVAL;
    if (cap - hdr_len < payload_len || cap - hdr_len - payload_len < VEGA_CRYPTO_AEAD_TAG_LEN)
        return VEGA_ERR_NOBUF;
    uint8_t nonce[VEGA_CRYPTO_AEAD_NONCE_LEN], mask[VEGA_CRYPTO_HP_MASK_LEN];
    packet_nonce(k->iv, pn, nonce);
    vega_ssize n = np ? vega_crypto_aead_seal_gather(k->aead, nonce, pkt, hdr_len, pkt + hdr_len,
                                                     cap - hdr_len, pieces, np)
                      : vega_crypto_aead_seal(k->aead, nonce, pkt, hdr_len, pkt + hdr_len,
                                              payload_len, cap - hdr_len);
    if (n < 0)
        return n;
    size_t pn_off = hdr_len - pn_len;
    int rc = vega_crypto_hp_mask(k->hp, pkt + pn_off + 4, mask);
    if (rc < 0)
        return rc;
    pkt[0] ^= mask[0] & first_mask(pkt[0]);
    for (size_t i = 0; i < pn_len; i++)
        pkt[pn_off + i] ^= mask[1 + i];
    return (vega_ssize)hdr_len + n;
}

vega_ssize vega_quic_packet_protect(vega_quic_keys *k, uint8_t *pkt, size_t cap, size_t hdr_len,
                                    uint64_t pn, size_t payload_len)
{
    return protect(k, pkt, cap, hdr_len, pn, payload_len, NULL, 0);
}

bool vega__quic_keys_seal_from_source(const vega_quic_keys *k)
{
    /* Measured in memory (bench/quic vega-quic-bulk, 256 MiB, paired runs): AES-128-GCM 0-7%
     * faster sealing stream bytes from their source, ChaCha20-Poly1305 1-11% slower: each extra
     * update call into libcrypto's ChaCha20/Poly1305 code (the frame header, then the bytes)
     * costs more than the copy it saves. */
    return k->alg != VEGA_CRYPTO_CHACHA20_POLY1305;
}

vega_ssize vega__quic_packet_protect_ext(vega_quic_keys *k, uint8_t *pkt, size_t cap,
                                         size_t hdr_len, uint64_t pn, size_t payload_len,
                                         const struct vega__quic_ext *ext, size_t n)
{
    if (n == 0)
        return protect(k, pkt, cap, hdr_len, pn, payload_len, NULL, 0);
    if (n > VEGA__QUIC_EXT_MAX)
        return -EINVAL;
    /* in place up to each span, the span from its source, and in place after the last */
    vega_crypto_piece pieces[2 * VEGA__QUIC_EXT_MAX + 1];
    size_t np = 0, pos = 0;
    for (size_t i = 0; i < n; i++) {
        if (ext[i].at < pos || (size_t)ext[i].at + ext[i].len > payload_len || !ext[i].src)
            return -EINVAL;
        if (ext[i].at > pos)
            pieces[np++] = (vega_crypto_piece){NULL, ext[i].at - pos};
        pieces[np++] = (vega_crypto_piece){ext[i].src, ext[i].len};
        pos = (size_t)ext[i].at + ext[i].len;
    }
    if (pos < payload_len)
        pieces[np++] = (vega_crypto_piece){NULL, payload_len - pos};
    return protect(k, pkt, cap, hdr_len, pn, payload_len, pieces, np);
}

int vega_quic_packet_unprotect(vega_quic_keys *k, uint8_t *pkt, size_t pkt_len, size_t pn_offset,
                               int64_t largest_pn, vega_quic_unprotected *out, uint64_t *wire_err)
{
    if (pn_offset == 0 || pkt_len < pn_offset ||
        pkt_len - pn_offset < 4 + VEGA_CRYPTO_HP_SAMPLE_LEN)
        return VEGA_ERR_PROTO;
    uint8_t mask[VEGA_CRYPTO_HP_MASK_LEN];
    int rc = vega_crypto_hp_mask(k->hp, pkt + pn_offset + 4, mask);
    if (rc < 0)
        return rc;
    return vega__quic_packet_unprotect_mask(k, pkt, pkt_len, pn_offset, largest_pn, mask, out,
                                            wire_err);
}

int vega__quic_packet_unprotect_mask(vega_quic_keys *k, uint8_t *pkt, size_t pkt_len,
                                     size_t pn_offset, int64_t largest_pn, const uint8_t *mask,
                                     vega_quic_unprotected *out, uint64_t *wire_err)
{
    if (pn_offset == 0 || pkt_len < pn_offset ||
        pkt_len - pn_offset < 4 + VEGA_CRYPTO_HP_SAMPLE_LEN)
        return VEGA_ERR_PROTO;
    uint8_t saved[5];
    uint8_t first = pkt[0] ^ (mask[0] & first_mask(pkt[0]));
    size_t pn_len = (size_t)(first & 3) + 1, hdr_len = pn_offset + pn_len;
    saved[0] = pkt[0];
    memcpy(saved + 1, pkt + pn_offset, pn_len);
    uint64_t truncated = 0;
    pkt[0] = first;
    for (size_t i = 0; i < pn_len; i++) {
        pkt[pn_offset + i] ^= mask[1 + i];
        truncated = truncated << 8 | pkt[pn_offset + i];
    }
    uint64_t pn = vega_quic_pn_decode(truncated, pn_len, largest_pn);
    uint8_t nonce[VEGA_CRYPTO_AEAD_NONCE_LEN];
    packet_nonce(k->iv, pn, nonce);
    vega_ssize n =
        vega_crypto_aead_open(k->aead, nonce, pkt, hdr_len, pkt + hdr_len, pkt_len - hdr_len);
    if (n < 0) {
        /* Leave the header as it came, so a caller trying other keys sees the same bytes. */
        pkt[0] = saved[0];
        memcpy(pkt + pn_offset, saved + 1, pn_len);
        return (int)n;
    }
    out->first = first;
    out->pn_len = pn_len;
    out->pn = pn;
    out->payload_off = hdr_len;
    out->payload_len = (size_t)n;
    /* §17.2, §17.3.1: "An endpoint MUST treat receipt of a packet that has a non-zero value for
     * these bits, after removing both packet and header protection, as a connection error of
     * type PROTOCOL_VIOLATION." */
    if (first & ((first & 0x80) ? 0x0c : 0x18)) {
        if (wire_err)
            *wire_err = VEGA_QUIC_PROTOCOL_VIOLATION;
        return VEGA_ERR_PROTO;
    }
    return 0;
}

int vega_quic_retry_tag(uint32_t version, const uint8_t *odcid, size_t odcid_len,
                        const uint8_t *retry, size_t retry_len, uint8_t *tag)
{
    if (!vega_quic_version_is_supported(version) || odcid_len > VEGA_QUIC_MAX_CID_LEN ||
        retry_len > VEGA_QUIC_RETRY_MAX_LEN - 1 - VEGA_QUIC_MAX_CID_LEN - VEGA_QUIC_RETRY_TAG_LEN)
        return -EINVAL;
    /* §5.8: the tag is AES-128-GCM over nothing, with the pseudo-packet (ODCID length, ODCID,
     * the Retry packet without its tag) as associated data. */
    uint8_t pseudo[VEGA_QUIC_RETRY_MAX_LEN];
    pseudo[0] = (uint8_t)odcid_len;
    if (odcid_len)
        memcpy(pseudo + 1, odcid, odcid_len);
    memcpy(pseudo + 1 + odcid_len, retry, retry_len);
    vega_crypto_aead *a;
    int rc = vega_crypto_aead_new(&a, VEGA_CRYPTO_AES_128_GCM,
                                  version == VEGA_QUIC_V2 ? retry_key_v2 : retry_key_v1, 16);
    if (rc < 0)
        return rc;
    vega_ssize n =
        vega_crypto_aead_seal(a, version == VEGA_QUIC_V2 ? retry_nonce_v2 : retry_nonce_v1, pseudo,
                              1 + odcid_len + retry_len, tag, 0, VEGA_QUIC_RETRY_TAG_LEN);
    vega_crypto_aead_free(a);
    return n < 0 ? (int)n : 0;
}

int vega_quic_retry_verify(const vega_quic_hdr *h, const uint8_t *pkt, const uint8_t *odcid,
                           size_t odcid_len)
{
    if (h->type != VEGA_QUIC_PKT_RETRY || h->pkt_len < VEGA_QUIC_RETRY_TAG_LEN)
        return -EINVAL;
    uint8_t tag[VEGA_QUIC_RETRY_TAG_LEN];
    size_t len = h->pkt_len - VEGA_QUIC_RETRY_TAG_LEN;
    int rc = vega_quic_retry_tag(h->version, odcid, odcid_len, pkt, len, tag);
    if (rc < 0)
        return rc;
    return vega_crypto_ct_equal(tag, pkt + len, VEGA_QUIC_RETRY_TAG_LEN) ? 0 : VEGA_ERR_CRYPTO_AUTH;
}

vega_ssize vega_quic_retry_write(uint8_t *out, size_t cap, const vega_quic_hdr *h, uint8_t unused,
                                 const uint8_t *odcid, size_t odcid_len)
{
    int bits = vega__quic_long_type_bits(h->version, VEGA_QUIC_PKT_RETRY);
    if (bits < 0 || h->token_len == 0 || h->dcid_len > VEGA_QUIC_MAX_CID_LEN ||
        h->scid_len > VEGA_QUIC_MAX_CID_LEN || odcid_len > VEGA_QUIC_MAX_CID_LEN ||
        h->token_len > VEGA_QUIC_RETRY_MAX_LEN)
        return -EINVAL;
    struct vega__quic_wr w = {out, out + cap, false};
    uint8_t v[4];
    vega__quic_put32(v, h->version);
    vega__quic_wr_u8(&w, (uint8_t)(0xc0 | bits << 4 | (unused & 0x0f)));
    vega__quic_wr_bytes(&w, v, 4);
    vega__quic_wr_u8(&w, (uint8_t)h->dcid_len);
    vega__quic_wr_bytes(&w, h->dcid, h->dcid_len);
    vega__quic_wr_u8(&w, (uint8_t)h->scid_len);
    vega__quic_wr_bytes(&w, h->scid, h->scid_len);
    vega__quic_wr_bytes(&w, h->token, h->token_len);
    if (w.overflow || (size_t)(w.end - w.p) < VEGA_QUIC_RETRY_TAG_LEN)
        return VEGA_ERR_NOBUF;
    size_t len = (size_t)(w.p - out);
    int rc = vega_quic_retry_tag(h->version, odcid, odcid_len, out, len, w.p);
    if (rc < 0)
        return rc;
    return (vega_ssize)(len + VEGA_QUIC_RETRY_TAG_LEN);
}
