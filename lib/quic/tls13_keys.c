/* SPDX-License-Identifier: MIT */
/* The TLS 1.3 key schedule (RFC 8446 §7.1, §4.4.4, §4.6.1) for the QUIC core's own handshake. */
#include "tls13_keys.h"
#include "quic_int.h"

/* TLS alert decrypt_error (RFC 8446 §6.2), carried as a QUIC CRYPTO_ERROR (RFC 9001 §4.8). */
#define TLS_ALERT_DECRYPT_ERROR 51

static size_t tls13_hash_len(vega_crypto_hash_alg hash)
{
    return hash == VEGA_CRYPTO_SHA256 || hash == VEGA_CRYPTO_SHA384 ? vega_crypto_hash_len(hash)
                                                                    : 0;
}

/* Derive-Secret(secret, label, messages) with the messages' transcript hash th (§7.1). */
static int derive_secret(vega_crypto_hash_alg hash, const uint8_t *secret, const char *label,
                         const uint8_t *th, uint8_t *out)
{
    size_t n = vega_crypto_hash_len(hash);
    return vega_crypto_hkdf_expand_label(hash, secret, n, label, th, n, out, n);
}

/* The salt of the next extract: Derive-Secret(secret, "derived", "") (§7.1). The empty
 * transcript's hash is the hash of no bytes, not an empty context. */
static int derived_salt(vega_crypto_hash_alg hash, const uint8_t *secret, uint8_t *out)
{
    uint8_t empty[VEGA_CRYPTO_HASH_MAX_LEN];
    int rc = vega_crypto_hash_digest(hash, "", 0, empty);
    if (rc == 0)
        rc = derive_secret(hash, secret, "derived", empty, out);
    return rc;
}

int vega__quic_tls13_schedule_init(struct vega__quic_tls13_schedule *s, vega_crypto_hash_alg hash,
                                   const uint8_t *psk, size_t psk_len)
{
    vega__quic_tls13_schedule_wipe(s);
    size_t n = tls13_hash_len(hash);
    if (n == 0 || psk_len > VEGA__QUIC_TLS13_MAX_PSK_LEN || (psk_len > 0 && !psk) ||
        (psk_len == 0 && psk))
        return -EINVAL;
    uint8_t zeros[VEGA__QUIC_TLS13_MAX_HASH_LEN] = {0};
    if (psk_len == 0) {
        psk = zeros;
        psk_len = n;
    }
    /* An empty salt is HashLen zero bytes (RFC 5869), which is what §7.1 asks for. */
    int rc = vega_crypto_hkdf_extract(hash, NULL, 0, psk, psk_len, s->early_secret);
    if (rc < 0) {
        vega__quic_tls13_schedule_wipe(s);
        return rc;
    }
    s->hash = hash;
    s->hash_len = n;
    s->stage = VEGA__QUIC_TLS13_STAGE_EARLY;
    return 0;
}

int vega__quic_tls13_schedule_binder_key(const struct vega__quic_tls13_schedule *s, bool external,
                                         uint8_t *out)
{
    if (s->stage != VEGA__QUIC_TLS13_STAGE_EARLY || tls13_hash_len(s->hash) != s->hash_len)
        return -EINVAL;
    uint8_t empty[VEGA_CRYPTO_HASH_MAX_LEN];
    int rc = vega_crypto_hash_digest(s->hash, "", 0, empty);
    if (rc == 0)
        rc = derive_secret(s->hash, s->early_secret, external ? "ext binder" : "res binder", empty,
                           out);
    return rc;
}

int vega__quic_tls13_schedule_early_traffic(const struct vega__quic_tls13_schedule *s,
                                            const uint8_t *ch_hash, size_t hash_len, uint8_t *out)
{
    if (s->stage != VEGA__QUIC_TLS13_STAGE_EARLY || tls13_hash_len(s->hash) != s->hash_len ||
        hash_len != s->hash_len)
        return -EINVAL;
    return derive_secret(s->hash, s->early_secret, "c e traffic", ch_hash, out);
}

int vega__quic_tls13_schedule_handshake(struct vega__quic_tls13_schedule *s, const uint8_t *shared,
                                        size_t shared_len, const uint8_t *th, size_t th_len)
{
    if (s->stage != VEGA__QUIC_TLS13_STAGE_EARLY || tls13_hash_len(s->hash) != s->hash_len ||
        th_len != s->hash_len || shared_len == 0 || shared_len > VEGA__QUIC_TLS13_MAX_SHARED_LEN)
        return -EINVAL;
    uint8_t salt[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    int rc = derived_salt(s->hash, s->early_secret, salt);
    if (rc == 0)
        rc = vega_crypto_hkdf_extract(s->hash, salt, s->hash_len, shared, shared_len,
                                      s->handshake_secret);
    if (rc == 0)
        rc = derive_secret(s->hash, s->handshake_secret, "c hs traffic", th,
                           s->client_handshake_traffic);
    if (rc == 0)
        rc = derive_secret(s->hash, s->handshake_secret, "s hs traffic", th,
                           s->server_handshake_traffic);
    vega_crypto_cleanse(salt, sizeof(salt));
    if (rc < 0) {
        vega__quic_tls13_schedule_wipe(s);
        return rc;
    }
    /* The early secret has no use past this point (binders and 0-RTT keys come before). */
    vega_crypto_cleanse(s->early_secret, sizeof(s->early_secret));
    s->stage = VEGA__QUIC_TLS13_STAGE_HANDSHAKE;
    return 0;
}

int vega__quic_tls13_schedule_application(struct vega__quic_tls13_schedule *s, const uint8_t *th,
                                          size_t th_len)
{
    if (s->stage != VEGA__QUIC_TLS13_STAGE_HANDSHAKE || tls13_hash_len(s->hash) != s->hash_len ||
        th_len != s->hash_len)
        return -EINVAL;
    uint8_t salt[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    uint8_t zeros[VEGA__QUIC_TLS13_MAX_HASH_LEN] = {0};
    int rc = derived_salt(s->hash, s->handshake_secret, salt);
    if (rc == 0)
        rc = vega_crypto_hkdf_extract(s->hash, salt, s->hash_len, zeros, s->hash_len,
                                      s->master_secret);
    if (rc == 0)
        rc = derive_secret(s->hash, s->master_secret, "c ap traffic", th,
                           s->client_application_traffic);
    if (rc == 0)
        rc = derive_secret(s->hash, s->master_secret, "s ap traffic", th,
                           s->server_application_traffic);
    if (rc == 0)
        rc = derive_secret(s->hash, s->master_secret, "exp master", th, s->exporter_master);
    vega_crypto_cleanse(salt, sizeof(salt));
    if (rc < 0) {
        vega__quic_tls13_schedule_wipe(s);
        return rc;
    }
    /* Nothing derives from the handshake secret any more; the caller keeps the handshake
     * traffic secrets (in s) for as long as it still needs the Handshake keys. */
    vega_crypto_cleanse(s->handshake_secret, sizeof(s->handshake_secret));
    s->stage = VEGA__QUIC_TLS13_STAGE_APPLICATION;
    return 0;
}

int vega__quic_tls13_schedule_resumption(struct vega__quic_tls13_schedule *s, const uint8_t *th,
                                         size_t th_len)
{
    if (s->stage != VEGA__QUIC_TLS13_STAGE_APPLICATION || tls13_hash_len(s->hash) != s->hash_len ||
        th_len != s->hash_len)
        return -EINVAL;
    int rc = derive_secret(s->hash, s->master_secret, "res master", th, s->resumption_master);
    if (rc < 0) {
        vega__quic_tls13_schedule_wipe(s);
        return rc;
    }
    vega_crypto_cleanse(s->master_secret, sizeof(s->master_secret));
    s->stage = VEGA__QUIC_TLS13_STAGE_RESUMPTION;
    return 0;
}

void vega__quic_tls13_schedule_wipe(struct vega__quic_tls13_schedule *s)
{
    vega_crypto_cleanse(s, sizeof(*s));
    s->stage = VEGA__QUIC_TLS13_STAGE_NONE;
}

int vega__quic_tls13_finished(vega_crypto_hash_alg hash, const uint8_t *base_key, size_t key_len,
                              const uint8_t *th, size_t th_len, uint8_t *out)
{
    size_t n = tls13_hash_len(hash);
    if (n == 0 || key_len != n || th_len != n)
        return -EINVAL;
    uint8_t fk[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    int rc = vega_crypto_hkdf_expand_label(hash, base_key, n, "finished", NULL, 0, fk, n);
    if (rc == 0)
        rc = vega_crypto_hmac_digest(hash, fk, n, th, n, out);
    vega_crypto_cleanse(fk, sizeof(fk));
    return rc;
}

int vega__quic_tls13_finished_check(vega_crypto_hash_alg hash, const uint8_t *base_key,
                                    size_t key_len, const uint8_t *th, size_t th_len,
                                    const uint8_t *got, size_t got_len, uint64_t *wire_err)
{
    uint8_t want[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    int rc = vega__quic_tls13_finished(hash, base_key, key_len, th, th_len, want);
    if (rc < 0)
        return rc;
    size_t n = key_len;
    /* Constant time over the expected length: the peer must not learn how much matched. */
    unsigned diff = got_len != n;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned)(want[i] ^ (i < got_len ? got[i] : 0));
    vega_crypto_cleanse(want, sizeof(want));
    if (diff) {
        if (wire_err)
            *wire_err = VEGA_QUIC_CRYPTO_ERROR + TLS_ALERT_DECRYPT_ERROR;
        return VEGA_ERR_PROTO;
    }
    return 0;
}

int vega__quic_tls13_resumption_psk(vega_crypto_hash_alg hash, const uint8_t *res_master,
                                    size_t res_len, const uint8_t *nonce, size_t nonce_len,
                                    uint8_t *out)
{
    size_t n = tls13_hash_len(hash);
    if (n == 0 || res_len != n || nonce_len > 255 || (nonce_len > 0 && !nonce))
        return -EINVAL;
    return vega_crypto_hkdf_expand_label(hash, res_master, n, "resumption", nonce, nonce_len, out,
                                         n);
}
