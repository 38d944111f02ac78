/* SPDX-License-Identifier: MIT */
/* Stateless reset (RFC 9000 §10.3): tokens derived from an endpoint's static key, and the reset
 * packet an endpoint sends for a datagram no connection takes. */
#include "quic_int.h"

int vega_quic_reset_token(const uint8_t *key, const uint8_t *cid, size_t cid_len, uint8_t *token)
{
    if (cid_len > VEGA_QUIC_MAX_CID_LEN)
        return -EINVAL;
    uint8_t mac[32];
    uint8_t empty = 0;
    int rc = vega_crypto_hmac_digest(VEGA_CRYPTO_SHA256, key, VEGA_QUIC_RESET_KEY_LEN,
                                     cid_len ? cid : &empty, cid_len, mac);
    if (rc == 0)
        memcpy(token, mac, VEGA_QUIC_RESET_TOKEN_LEN);
    vega_crypto_cleanse(mac, sizeof mac);
    return rc;
}

vega_ssize vega_quic_reset_write(uint8_t *out, size_t cap, size_t trigger_len, const uint8_t *token)
{
    if (cap < VEGA_QUIC_RESET_MIN_LEN)
        return VEGA_ERR_NOBUF;
    if (trigger_len <= VEGA_QUIC_RESET_MIN_LEN)
        return 0;
    size_t len = trigger_len - 1;
    if (len > cap)
        len = cap;
    if (len > 1200)
        len = 1200;
    size_t rnd = len - VEGA_QUIC_RESET_TOKEN_LEN;
    int rc = vega_crypto_random(out, rnd);
    if (rc < 0)
        return rc;
    /* Looks like a 1-RTT packet: long-header bit 0, fixed bit 1, the rest unpredictable. */
    out[0] = (uint8_t)((out[0] & 0x3f) | 0x40);
    memcpy(out + rnd, token, VEGA_QUIC_RESET_TOKEN_LEN);
    return (vega_ssize)len;
}
