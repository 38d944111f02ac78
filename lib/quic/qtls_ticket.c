/* SPDX-License-Identifier: MIT */
/* Session tickets (RFC 8446 §4.6.1) for the QUIC handshake: the server's self-contained tickets,
 * sealed with AES-256-GCM under the configured ticket key, and the client's versioned session
 * blob. Both parsers are strict: a ticket or blob that does not decode is simply not used. */
#include <errno.h>

#include "qtls_int.h"

/* Associated data of every ticket: a format tag, so a future layout never decodes as this one. */
static const char TICKET_AAD[] = "vega-quic-ticket-v1";
static const uint8_t SESSION_MAGIC[4] = {'V', 'Q', 'S', 1};

static size_t suite_hash_len(uint16_t suite)
{
    switch (suite) {
    case VEGA_QUIC_TLS_AES_128_GCM_SHA256:
    case VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256:
        return 32;
    case VEGA_QUIC_TLS_AES_256_GCM_SHA384:
        return 48;
    default:
        return 0;
    }
}

/* The fields both formats share, in this order: suite, psk, time, lifetime, age_add, max_early,
 * alpn, name. */
static void put_common(struct qt_buf *b, const struct qt_session *s)
{
    vega__qt_put_int(b, s->suite, 2);
    vega__qt_put_int(b, s->psk_len, 1);
    vega__qt_put(b, s->psk, s->psk_len);
    vega__qt_put_int(b, s->time_ms, 8);
    vega__qt_put_int(b, s->lifetime_s, 4);
    vega__qt_put_int(b, s->age_add, 4);
    vega__qt_put_int(b, s->max_early, 4);
    vega__qt_put_int(b, s->alpn_len, 1);
    vega__qt_put(b, s->alpn, s->alpn_len);
    size_t n = strlen(s->name);
    vega__qt_put_int(b, n, 1);
    vega__qt_put(b, s->name, n);
}

static bool get_common(struct qt_rd *r, struct qt_session *s)
{
    uint64_t x, y, z, w;
    struct qt_rd v;
    memset(s, 0, sizeof(*s));
    if (!qt_int(r, 2, &x) || !qt_vec(r, 1, &v))
        return false;
    s->suite = (uint16_t)x;
    s->psk_len = qt_left(&v);
    if (s->psk_len == 0 || s->psk_len != suite_hash_len(s->suite))
        return false;
    memcpy(s->psk, v.p, s->psk_len);
    if (!qt_int(r, 8, &s->time_ms) || !qt_int(r, 4, &x) || !qt_int(r, 4, &y) || !qt_int(r, 4, &z) ||
        !qt_vec(r, 1, &v) || qt_left(&v) == 0)
        return false;
    s->lifetime_s = (uint32_t)x;
    s->age_add = (uint32_t)y;
    s->max_early = (uint32_t)z;
    s->alpn_len = qt_left(&v);
    memcpy(s->alpn, v.p, s->alpn_len);
    if (!qt_vec(r, 1, &v) || memchr(v.p, 0, qt_left(&v)))
        return false;
    memcpy(s->name, v.p, qt_left(&v));
    s->name[qt_left(&v)] = 0;
    (void)w;
    return true;
}

int vega__qtls_ticket_seal(struct vega__qtls *t, const struct qt_session *s, struct qt_buf *out)
{
    uint8_t nonce[VEGA_CRYPTO_AEAD_NONCE_LEN];
    int rc = t->cbs.rand ? t->cbs.rand(t->cbs.ud, nonce, sizeof nonce)
                         : vega_crypto_random(nonce, sizeof nonce);
    if (rc < 0)
        return rc;
    vega__qt_put(out, nonce, sizeof nonce);
    size_t start = out->len;
    put_common(out, s);
    vega__qt_put(out, s->tp_hash, 32);
    uint8_t tag[VEGA_CRYPTO_AEAD_TAG_LEN] = {0};
    vega__qt_put(out, tag, sizeof tag); /* room for the tag */
    if (out->oom)
        return -ENOMEM;
    vega_crypto_aead *a = NULL;
    rc = vega_crypto_aead_new(&a, VEGA_CRYPTO_AES_256_GCM, t->cfg->ticket_key, 32);
    if (rc < 0)
        return rc;
    size_t plain = out->len - start - sizeof tag;
    vega_ssize n = vega_crypto_aead_seal(a, nonce, TICKET_AAD, sizeof TICKET_AAD - 1,
                                         out->p + start, plain, plain + sizeof tag);
    vega_crypto_aead_free(a);
    return n < 0 ? (int)n : 0;
}

int vega__qtls_ticket_open(struct vega__qtls *t, const uint8_t *ticket, size_t len,
                           struct qt_session *s)
{
    if (len < VEGA_CRYPTO_AEAD_NONCE_LEN + VEGA_CRYPTO_AEAD_TAG_LEN || len > QT_MAX_TICKET)
        return 1;
    uint8_t buf[QT_MAX_TICKET];
    size_t clen = len - VEGA_CRYPTO_AEAD_NONCE_LEN;
    memcpy(buf, ticket + VEGA_CRYPTO_AEAD_NONCE_LEN, clen);
    vega_crypto_aead *a = NULL;
    if (vega_crypto_aead_new(&a, VEGA_CRYPTO_AES_256_GCM, t->cfg->ticket_key, 32) < 0)
        return 1;
    vega_ssize n = vega_crypto_aead_open(a, ticket, TICKET_AAD, sizeof TICKET_AAD - 1, buf, clen);
    vega_crypto_aead_free(a);
    int rc = 1;
    const uint8_t *h;
    struct qt_rd r = {buf, buf + (n > 0 ? n : 0)};
    if (n > 0 && get_common(&r, s) && qt_bytes(&r, 32, &h) && qt_left(&r) == 0) {
        memcpy(s->tp_hash, h, 32);
        rc = 0;
    }
    vega_crypto_cleanse(buf, sizeof buf);
    return rc;
}

int vega__qtls_session_encode(const struct qt_session *s, struct qt_buf *out)
{
    vega__qt_put(out, SESSION_MAGIC, sizeof SESSION_MAGIC);
    put_common(out, s);
    vega__qt_put_int(out, s->tp_len, 2);
    vega__qt_put(out, s->tp, s->tp_len);
    vega__qt_put_int(out, s->ticket_len, 2);
    vega__qt_put(out, s->ticket, s->ticket_len);
    return out->oom ? -ENOMEM : 0;
}

int vega__qtls_session_decode(const uint8_t *blob, size_t len, struct qt_session *s)
{
    struct qt_rd r = {blob, blob + len}, tp, ticket;
    const uint8_t *magic;
    if (len > QT_MAX_SESSION || !qt_bytes(&r, 4, &magic) || memcmp(magic, SESSION_MAGIC, 4) != 0 ||
        !get_common(&r, s) || !qt_vec(&r, 2, &tp) || !qt_vec(&r, 2, &ticket) ||
        qt_left(&ticket) == 0 || qt_left(&ticket) > QT_MAX_TICKET || qt_left(&r)) {
        vega_crypto_cleanse(s, sizeof(*s));
        return -1;
    }
    s->tp = tp.p;
    s->tp_len = qt_left(&tp);
    s->ticket = ticket.p;
    s->ticket_len = qt_left(&ticket);
    return 0;
}
