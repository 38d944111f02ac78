/* SPDX-License-Identifier: MIT */
/* The server side of the QUIC TLS 1.3 handshake (RFC 8446 §4, RFC 9001 §4, §8): ClientHello
 * checks and negotiation, HelloRetryRequest, PSK resumption and 0-RTT from our own tickets, the
 * server flight, client authentication, and NewSessionTicket. */
#include <errno.h>
#include <stdlib.h>

#include "qtls_int.h"

#define FAIL(alert, why) vega__qtls_fail(t, VEGA__QTLS_ALERT_##alert, why)

static int internal(struct vega__qtls *t, int rc, const char *why)
{
    return vega__qtls_fail_rc(t, rc, VEGA_QUIC_CRYPTO_ERROR + VEGA__QTLS_ALERT_INTERNAL_ERROR, why);
}

static void put_ext(struct qt_buf *b, uint16_t type, const void *body, size_t len)
{
    vega__qt_put_int(b, type, 2);
    vega__qt_put_int(b, len, 2);
    vega__qt_put(b, body, len);
}

static int send_hrr(struct vega__qtls *t, const uint8_t *ch, size_t ch_len)
{
    int rc;
    if ((rc = vega__qtls_th_add(t, ch, ch_len)) < 0 || (rc = vega__qtls_th_hrr(t)) < 0)
        return rc;
    struct qt_buf b = {.mem = t->cbs.mem};
    size_t m = vega__qtls_msg_open(&b, QT_SERVER_HELLO);
    vega__qt_put_int(&b, 0x0303, 2);
    vega__qt_put(&b, vega__qtls_hrr_random, 32);
    vega__qt_put_int(&b, 0, 1); /* the (empty) legacy_session_id echo */
    vega__qt_put_int(&b, t->suite, 2);
    vega__qt_put_int(&b, 0, 1);
    size_t e = vega__qt_open(&b, 2);
    put_ext(&b, QT_EXT_SUPPORTED_VERSIONS, "\x03\x04", 2);
    uint8_t g[2] = {(uint8_t)(t->group >> 8), (uint8_t)t->group};
    put_ext(&b, QT_EXT_KEY_SHARE, g, 2);
    vega__qt_close(&b, e, 2);
    if ((rc = vega__qtls_msg_close(t, &b, m)) == 0)
        rc = vega__qtls_flush(t, VEGA_QUIC_LEVEL_INITIAL, &b);
    vega__qt_buf_free(&b);
    return rc;
}

/* Tries the first offered PSK: our ticket, still valid for this connection, with a binder that
 * verifies. Returns 1 when it is used, 0 for a full handshake, or a failure. */
static int try_psk(struct vega__qtls *t, const struct vega__qtls_hello *h, const uint8_t *ch,
                   struct qt_session *s, uint32_t *obf_age)
{
    if (!h->has_psk)
        return 0;
    if (!h->has_psk_modes)
        return FAIL(MISSING_EXTENSION, "pre_shared_key without psk_key_exchange_modes");
    if (!h->psk_dhe_ke || !t->cfg->ticket_key || !t->wall_ms)
        return 0;
    struct qt_rd r = {h->identities, h->identities + h->identities_len}, id;
    uint64_t age;
    if (!qt_vec(&r, 2, &id) || !qt_int(&r, 4, &age))
        return FAIL(DECODE_ERROR, "malformed pre_shared_key");
    *obf_age = (uint32_t)age;
    if (vega__qtls_ticket_open(t, id.p, qt_left(&id), s) != 0)
        return 0;
    vega_crypto_hash_alg psk_hash =
        s->suite == VEGA_QUIC_TLS_AES_256_GCM_SHA384 ? VEGA_CRYPTO_SHA384 : VEGA_CRYPTO_SHA256;
    if (psk_hash != t->hash || t->wall_ms < s->time_ms ||
        t->wall_ms - s->time_ms >= (uint64_t)s->lifetime_s * 1000 ||
        strcmp(s->name, t->sni_seen ? t->sni : "") != 0)
        return 0;
    /* The binder covers the transcript so far and the ClientHello up to the binders
     * (RFC 8446 §4.2.11.2). */
    struct qt_rd br = {h->binders, h->binders + h->binders_len}, binder;
    if (!qt_vec(&br, 1, &binder))
        return FAIL(DECODE_ERROR, "malformed pre_shared_key");
    uint8_t bk[VEGA__QUIC_TLS13_MAX_HASH_LEN], th[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    int rc = vega__quic_tls13_schedule_init(&t->ks, t->hash, s->psk, s->psk_len);
    if (rc == 0)
        rc = vega__quic_tls13_schedule_binder_key(&t->ks, false, bk);
    if (rc < 0)
        return internal(t, rc, "binder key");
    if ((rc = vega__qtls_th_hash(t, ch, h->binders_off, th)) < 0)
        return rc;
    rc = vega__quic_tls13_finished_check(t->hash, bk, t->hash_len, th, t->hash_len, binder.p,
                                         qt_left(&binder), NULL);
    vega_crypto_cleanse(bk, sizeof bk);
    if (rc == VEGA_ERR_PROTO)
        return FAIL(DECRYPT_ERROR, "PSK binder does not verify");
    if (rc < 0)
        return internal(t, rc, "binder check");
    return 1;
}

static bool early_ok(struct vega__qtls *t, const struct vega__qtls_hello *h,
                     const struct qt_session *s, uint32_t obf_age)
{
    if (!h->early_data || t->hrr || !t->cfg->early_data || s->max_early != 0xffffffffu ||
        s->alpn_len != t->alpn_len || memcmp(s->alpn, t->alpn, t->alpn_len) != 0)
        return false;
    /* The server's transport parameters must not have changed (RFC 9000 §7.4.1 lets the
     * client rely on the remembered ones). */
    uint8_t hash[32];
    if (vega__qtls_early_digest(t, hash) < 0 || !vega_crypto_ct_equal(hash, s->tp_hash, 32))
        return false;
    /* Anti-replay by ticket age only (RFC 8446 §8.3); see vega_quic_tls_opts. */
    uint64_t window = t->cfg->ticket_age_window_ms ? t->cfg->ticket_age_window_ms : 10000;
    uint64_t client_age = (uint32_t)(obf_age - s->age_add);
    uint64_t server_age = t->wall_ms - s->time_ms;
    uint64_t diff = client_age > server_age ? client_age - server_age : server_age - client_age;
    return diff <= window;
}

/* The first checks of a ClientHello, then what both sides must share: the cipher suite, the
 * ALPN (mandatory in QUIC, RFC 9001 §8.1: our first choice the client offers) and the name.
 * Returns 0 or the failure (an alert sent). */
static int ch_negotiate(struct vega__qtls *t, const struct vega__qtls_hello *h)
{
    const vega_quic_tls_opts *cfg = t->cfg;
    if (!h->has_versions || !h->tls13)
        return FAIL(PROTOCOL_VERSION, "client does not offer TLS 1.3");
    if (h->session_id_len) /* RFC 9001 §8.4 */
        return vega__qtls_fail_rc(t, VEGA_ERR_PROTO, VEGA_QUIC_PROTOCOL_VIOLATION,
                                  "ClientHello with a legacy_session_id");
    if (!h->has_tp)
        return FAIL(MISSING_EXTENSION, "no quic_transport_parameters from the client");
    if (t->hrr && h->early_data)
        return FAIL(ILLEGAL_PARAMETER, "early_data after HelloRetryRequest");

    uint16_t suite = 0;
    for (size_t i = 0; i < t->n_suites && !suite; i++)
        if (vega__qtls_has_u16(h->suites, h->suites_len, t->suites[i]))
            suite = t->suites[i];
    if (!suite)
        return FAIL(HANDSHAKE_FAILURE, "no common cipher suite");
    if (t->hrr && suite != t->suite)
        return FAIL(ILLEGAL_PARAMETER, "second ClientHello changed the suites");
    vega__qtls_set_suite(t, suite);

    size_t chosen = 0;
    for (size_t i = 0; i < cfg->n_alpn && !chosen && h->has_alpn; i++) {
        size_t n = strlen(cfg->alpn[i]);
        struct qt_rd r = {h->alpn, h->alpn + h->alpn_len}, name;
        while (qt_vec(&r, 1, &name))
            if (qt_left(&name) == n && memcmp(name.p, cfg->alpn[i], n) == 0) {
                memcpy(t->alpn, name.p, n);
                chosen = n;
                break;
            }
    }
    if (!chosen)
        return FAIL(NO_APPLICATION_PROTOCOL, "no common ALPN");
    t->alpn_len = chosen;

    if (h->has_sni) {
        if (!h->sni || h->sni_len > QT_MAX_NAME || memchr(h->sni, 0, h->sni_len))
            return FAIL(UNRECOGNIZED_NAME, "unusable server_name");
        memcpy(t->sni, h->sni, h->sni_len);
        t->sni[h->sni_len] = 0;
        t->sni_seen = true;
    }
    return 0;
}

/* Key exchange: the share the client sent for the first of our groups, in our order (§4.2.8),
 * which sets t->group. *share (NULL on entry) stays NULL when there is none: ask for one with
 * HelloRetryRequest (§4.1.4). Returns 0 or the failure. */
static int ch_key_share(struct vega__qtls *t, const struct vega__qtls_hello *h,
                        const uint8_t **share, size_t *share_len)
{
    if (!h->has_groups || !h->has_key_share)
        return FAIL(MISSING_EXTENSION, "ClientHello without supported_groups or key_share");
    uint16_t seen[16];
    size_t n_seen = 0;
    struct qt_rd r = {h->shares, h->shares + h->shares_len};
    uint16_t share_group = 0;
    while (qt_left(&r)) {
        uint64_t g = 0;
        struct qt_rd key = {r.p, r.p};
        if (!qt_int(&r, 2, &g) || !qt_vec(&r, 2, &key)) /* validated by the parser */
            return FAIL(DECODE_ERROR, "malformed key_share");
        for (size_t i = 0; i < n_seen; i++)
            if (seen[i] == g)
                return FAIL(ILLEGAL_PARAMETER, "two key shares for one group");
        if (n_seen == 16)
            return FAIL(ILLEGAL_PARAMETER, "too many key shares");
        seen[n_seen++] = (uint16_t)g;
        if (!vega__qtls_has_u16(h->groups, h->groups_len, (uint16_t)g))
            return FAIL(ILLEGAL_PARAMETER, "key share for a group not in supported_groups");
        for (size_t i = 0; i < t->n_groups; i++)
            if (t->groups[i] == g && (!*share || i < (size_t)share_group)) {
                *share = key.p;
                *share_len = qt_left(&key);
                share_group = (uint16_t)i;
            }
    }
    if (t->hrr && (!*share || t->groups[share_group] != t->group))
        return FAIL(ILLEGAL_PARAMETER, "second ClientHello without the requested key share");
    if (*share)
        t->group = t->groups[share_group];
    return 0;
}

/* No usable key share: a HelloRetryRequest for the first group both support (0-RTT is then
 * off), or the end of the handshake. */
static int ch_retry(struct vega__qtls *t, const struct vega__qtls_hello *h, const uint8_t *msg,
                    size_t len)
{
    for (size_t i = 0; i < t->n_groups && !t->hrr; i++)
        if (vega__qtls_has_u16(h->groups, h->groups_len, (uint16_t)t->groups[i])) {
            t->group = t->groups[i];
            t->hrr = true;
        }
    if (!t->hrr)
        return FAIL(HANDSHAKE_FAILURE, "no common group");
    if (h->early_data)
        t->early = VEGA__QTLS_EARLY_REJECTED;
    return send_hrr(t, msg, len);
}

/* Resumption or a full handshake, the client's transport parameters, 0-RTT accepted or not,
 * and (accepted) the early secret for its packets. s: receives the ticket's session (the
 * caller wipes it). Returns 0 or the failure. */
static int ch_accept(struct vega__qtls *t, const struct vega__qtls_hello *h, const uint8_t *msg,
                     size_t len, struct qt_session *s)
{
    uint32_t obf_age = 0;
    int rc = try_psk(t, h, msg, s, &obf_age);
    if (rc < 0)
        return rc;
    t->resumed = rc == 1;
    if (!t->resumed) {
        if (!h->has_sigalgs)
            return FAIL(MISSING_EXTENSION, "ClientHello without signature_algorithms");
        if (!(t->scheme = vega__qtls_pick_scheme(t, h->sigalgs, h->sigalgs_len)))
            return FAIL(HANDSHAKE_FAILURE, "no common signature scheme");
        if ((rc = vega__quic_tls13_schedule_init(&t->ks, t->hash, NULL, 0)) < 0)
            return internal(t, rc, "key schedule");
    }
    uint64_t wire = 0;
    if ((rc = t->cbs.peer_tp(t->cbs.ud, h->tp, h->tp_len, &wire)) < 0)
        return vega__qtls_fail_rc(t, rc, wire ? wire : VEGA_QUIC_INTERNAL_ERROR,
                                  "client transport parameters rejected");
    if (t->resumed && early_ok(t, h, s, obf_age))
        t->early = VEGA__QTLS_EARLY_ACCEPTED;
    else if (h->early_data)
        t->early = VEGA__QTLS_EARLY_REJECTED;
    if ((rc = vega__qtls_th_add(t, msg, len)) < 0)
        return rc;
    if (t->early != VEGA__QTLS_EARLY_ACCEPTED)
        return 0;
    uint8_t th[VEGA__QUIC_TLS13_MAX_HASH_LEN], secret[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    if ((rc = vega__qtls_th_hash(t, NULL, 0, th)) < 0)
        return rc;
    rc = vega__quic_tls13_schedule_early_traffic(&t->ks, th, t->hash_len, secret);
    rc = rc < 0 ? internal(t, rc, "early secret")
                : vega__qtls_secret(t, VEGA_QUIC_LEVEL_EARLY, false, secret);
    vega_crypto_cleanse(secret, sizeof secret);
    return rc < 0 ? rc : 0;
}

/* ServerHello (§4.1.3) with our key share, into b. Returns 0 or a library code. */
static int put_server_hello(struct vega__qtls *t, struct qt_buf *b)
{
    uint8_t pub[VEGA_CRYPTO_KEX_MAX_PUBLIC];
    vega_ssize pl = vega_crypto_kex_get_public(t->kex, pub, sizeof pub);
    uint8_t random[32];
    int rc = vega__qtls_rand(t, random, 32);
    if (rc < 0)
        return rc;
    size_t m = vega__qtls_msg_open(b, QT_SERVER_HELLO);
    vega__qt_put_int(b, 0x0303, 2);
    vega__qt_put(b, random, 32);
    vega__qt_put_int(b, 0, 1);
    vega__qt_put_int(b, t->suite, 2);
    vega__qt_put_int(b, 0, 1);
    size_t e = vega__qt_open(b, 2);
    put_ext(b, QT_EXT_SUPPORTED_VERSIONS, "\x03\x04", 2);
    vega__qt_put_int(b, QT_EXT_KEY_SHARE, 2);
    vega__qt_put_int(b, 4 + (uint64_t)pl, 2);
    vega__qt_put_int(b, t->group, 2);
    vega__qt_put_int(b, (uint64_t)pl, 2);
    vega__qt_put(b, pub, (size_t)(pl > 0 ? pl : 0));
    if (t->resumed)
        put_ext(b, QT_EXT_PRE_SHARED_KEY, "\x00\x00", 2);
    vega__qt_close(b, e, 2);
    return vega__qtls_msg_close(t, b, m);
}

/* EncryptedExtensions (ALPN, quic_transport_parameters, early_data, the SNI ack) and, with
 * verify_peer on a full handshake, CertificateRequest, into b. Returns 0 or a library code. */
static int put_encrypted_extensions(struct vega__qtls *t, struct qt_buf *b)
{
    size_t m = vega__qtls_msg_open(b, QT_ENCRYPTED_EXTENSIONS);
    size_t e = vega__qt_open(b, 2);
    vega__qt_put_int(b, QT_EXT_ALPN, 2);
    vega__qt_put_int(b, 3 + t->alpn_len, 2);
    vega__qt_put_int(b, 1 + t->alpn_len, 2);
    vega__qt_put_int(b, t->alpn_len, 1);
    vega__qt_put(b, t->alpn, t->alpn_len);
    put_ext(b, QT_EXT_QUIC_TP, t->tp, t->tp_len);
    if (t->early == VEGA__QTLS_EARLY_ACCEPTED)
        put_ext(b, QT_EXT_EARLY_DATA, NULL, 0);
    if (t->sni_seen)
        put_ext(b, QT_EXT_SERVER_NAME, NULL, 0);
    vega__qt_close(b, e, 2);
    int rc = vega__qtls_msg_close(t, b, m);
    if (rc < 0 || t->resumed || !t->cfg->verify_peer)
        return rc;
    t->cert_req = true;
    m = vega__qtls_msg_open(b, QT_CERTIFICATE_REQUEST);
    vega__qt_put_int(b, 0, 1);
    e = vega__qt_open(b, 2);
    vega__qt_put_int(b, QT_EXT_SIGNATURE_ALGORITHMS, 2);
    size_t v = vega__qt_open(b, 2);
    size_t l = vega__qt_open(b, 2);
    for (size_t i = 0; i < sizeof vega__qtls_sigalgs / sizeof vega__qtls_sigalgs[0]; i++)
        vega__qt_put_int(b, vega__qtls_sigalgs[i], 2);
    vega__qt_close(b, l, 2);
    vega__qt_close(b, v, 2);
    vega__qt_close(b, e, 2);
    return vega__qtls_msg_close(t, b, m);
}

/* After the server Finished: the application secrets (the client's handshake secret is kept to
 * check its Finished), our 1-RTT write keys, and the wait for the client's flight. Returns 0 or
 * a library code. */
static int to_application(struct vega__qtls *t, const uint8_t *th)
{
    uint8_t c_hs[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    memcpy(c_hs, t->ks.client_handshake_traffic, sizeof c_hs);
    int rc = vega__quic_tls13_schedule_application(&t->ks, th, t->hash_len);
    if (rc < 0) {
        vega_crypto_cleanse(c_hs, sizeof c_hs);
        return internal(t, rc, "key schedule");
    }
    memcpy(t->c_app, t->ks.client_application_traffic, sizeof t->c_app);
    memcpy(t->ks.client_handshake_traffic, c_hs, sizeof c_hs);
    vega_crypto_cleanse(c_hs, sizeof c_hs);
    rc = vega__qtls_secret(t, VEGA_QUIC_LEVEL_APP, true, t->ks.server_application_traffic);
    t->state = t->cert_req ? QS_S_WAIT_CERT : QS_S_WAIT_FIN;
    return rc;
}

/* The server's flight (§4.4): ServerHello at the Initial level, then the handshake secrets and,
 * at the Handshake level, EncryptedExtensions, [CertificateRequest, Certificate,
 * CertificateVerify], Finished; then the application secrets. share: the client's key share.
 * Returns 0 or the failure. */
static int send_server_flight(struct vega__qtls *t, const uint8_t *share, size_t share_len)
{
    uint8_t shared[VEGA_CRYPTO_KEX_SECRET_LEN];
    int rc = vega__qtls_kex(t, t->group);
    if (rc < 0)
        return rc;
    vega_ssize sl = vega_crypto_kex_derive(t->kex, share, share_len, shared, sizeof shared);
    if (sl == VEGA_ERR_CRYPTO_BAD_PUBLIC)
        return FAIL(ILLEGAL_PARAMETER, "invalid client key share");
    if (sl < 0)
        return internal(t, (int)sl, "key exchange");
    struct qt_buf b = {.mem = t->cbs.mem};
    uint8_t th[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    if ((rc = put_server_hello(t, &b)) < 0 ||
        (rc = vega__qtls_flush(t, VEGA_QUIC_LEVEL_INITIAL, &b)) < 0 ||
        (rc = vega__qtls_th_hash(t, NULL, 0, th)) < 0)
        goto out;
    rc = vega__quic_tls13_schedule_handshake(&t->ks, shared, (size_t)sl, th, t->hash_len);
    if (rc < 0) {
        rc = internal(t, rc, "key schedule");
        goto out;
    }
    vega_crypto_kex_free(t->kex);
    t->kex = NULL;
    if ((rc = vega__qtls_secret(t, VEGA_QUIC_LEVEL_HANDSHAKE, false,
                                t->ks.client_handshake_traffic)) < 0 ||
        (rc = vega__qtls_secret(t, VEGA_QUIC_LEVEL_HANDSHAKE, true,
                                t->ks.server_handshake_traffic)) < 0 ||
        (rc = put_encrypted_extensions(t, &b)) < 0)
        goto out;
    if (!t->resumed && ((rc = vega__qtls_put_cert(t, &b, true)) < 0 ||
                        (rc = vega__qtls_put_cv(t, &b, t->scheme)) < 0))
        goto out;
    if ((rc = vega__qtls_put_finished(t, &b, t->ks.server_handshake_traffic)) < 0 ||
        (rc = vega__qtls_flush(t, VEGA_QUIC_LEVEL_HANDSHAKE, &b)) < 0 ||
        (rc = vega__qtls_th_hash(t, NULL, 0, th)) < 0)
        goto out;
    rc = to_application(t, th);
out:
    vega_crypto_cleanse(shared, sizeof shared);
    vega__qt_buf_free(&b);
    return rc;
}

static int on_client_hello(struct vega__qtls *t, const uint8_t *msg, size_t len)
{
    struct vega__qtls_hello h;
    int alert = vega__qtls_parse_ch(msg, len, &h);
    if (alert)
        return vega__qtls_fail(t, alert, "malformed ClientHello");
    memcpy(t->random, h.random, 32); /* the key log names secrets by it */
    int rc = ch_negotiate(t, &h);
    if (rc < 0)
        return rc;
    const uint8_t *share = NULL;
    size_t share_len = 0;
    if ((rc = ch_key_share(t, &h, &share, &share_len)) < 0)
        return rc;
    if (!share)
        return ch_retry(t, &h, msg, len);
    struct qt_session s;
    memset(&s, 0, sizeof s);
    rc = ch_accept(t, &h, msg, len, &s);
    if (rc == 0)
        rc = send_server_flight(t, share, share_len);
    vega_crypto_cleanse(&s, sizeof s);
    return rc;
}

static int on_client_finished(struct vega__qtls *t, const uint8_t *msg, size_t len)
{
    int rc = vega__qtls_check_finished(t, msg, len, t->ks.client_handshake_traffic);
    if (rc < 0)
        return rc;
    rc = vega__qtls_secret(t, VEGA_QUIC_LEVEL_APP, false, t->c_app);
    vega_crypto_cleanse(t->c_app, sizeof t->c_app);
    if (rc < 0)
        return rc;
    uint8_t th[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    if ((rc = vega__qtls_th_hash(t, NULL, 0, th)) < 0)
        return rc;
    if ((rc = vega__quic_tls13_schedule_resumption(&t->ks, th, t->hash_len)) < 0)
        return internal(t, rc, "key schedule");
    /* The connection holds the traffic secrets now; keep only what tickets need. */
    vega_crypto_cleanse(t->ks.client_handshake_traffic, sizeof t->ks.client_handshake_traffic);
    vega_crypto_cleanse(t->ks.server_handshake_traffic, sizeof t->ks.server_handshake_traffic);
    vega_crypto_cleanse(t->ks.client_application_traffic, sizeof t->ks.client_application_traffic);
    vega_crypto_cleanse(t->ks.server_application_traffic, sizeof t->ks.server_application_traffic);
    vega__qt_buf_free(&t->th);
    t->state = QS_S_DONE;
    return 0;
}

int vega__qtls_server_msg(struct vega__qtls *t, vega_quic_level level, const uint8_t *msg,
                          size_t len)
{
    (void)level; /* recv only hands over bytes of the level the state expects */
    uint8_t type = msg[0];
    int rc;
    switch (t->state) {
    case QS_S_WAIT_CH:
        if (type == QT_CLIENT_HELLO)
            return on_client_hello(t, msg, len);
        break;
    case QS_S_WAIT_CERT:
        if (type == QT_CERTIFICATE) {
            if ((rc = vega__qtls_on_cert(t, msg, len)) == 0)
                t->state = QS_S_WAIT_CV;
            return rc;
        }
        break;
    case QS_S_WAIT_CV:
        if (type == QT_CERTIFICATE_VERIFY) {
            if ((rc = vega__qtls_on_cv(t, msg, len)) == 0)
                t->state = QS_S_WAIT_FIN;
            return rc;
        }
        break;
    case QS_S_WAIT_FIN:
        if (type == QT_FINISHED)
            return on_client_finished(t, msg, len);
        break;
    default:
        break;
    }
    return FAIL(UNEXPECTED_MESSAGE, "unexpected handshake message");
}

int vega__qtls_send_ticket(struct vega__qtls *t)
{
    if (!t->server || t->state != QS_S_DONE)
        return -EINVAL;
    if (!t->cfg->ticket_key || !t->wall_ms)
        return 0;
    struct qt_session s;
    memset(&s, 0, sizeof s);
    uint8_t nonce[8];
    uint64_t n = t->tickets_sent++;
    for (int i = 0; i < 8; i++)
        nonce[i] = (uint8_t)(n >> (56 - 8 * i));
    int rc = vega__quic_tls13_resumption_psk(t->hash, t->ks.resumption_master, t->hash_len, nonce,
                                             sizeof nonce, s.psk);
    uint8_t age_add[4];
    if (rc < 0 ||
        (rc = t->cbs.rand ? t->cbs.rand(t->cbs.ud, age_add, 4) : vega_crypto_random(age_add, 4)) <
            0 ||
        (rc = vega__qtls_early_digest(t, s.tp_hash)) < 0)
        goto out;
    s.suite = t->suite;
    s.psk_len = t->hash_len;
    s.time_ms = t->wall_ms;
    s.lifetime_s = t->cfg->ticket_lifetime_s && t->cfg->ticket_lifetime_s < 604800
                       ? t->cfg->ticket_lifetime_s
                       : 604800;
    s.age_add = qt_be(age_add, 4);
    s.max_early = t->cfg->early_data ? 0xffffffffu : 0;
    memcpy(s.alpn, t->alpn, t->alpn_len);
    s.alpn_len = t->alpn_len;
    if (t->sni_seen)
        memcpy(s.name, t->sni, sizeof s.name);
    struct qt_buf ticket = {.mem = t->cbs.mem}, b = {.mem = t->cbs.mem};
    if ((rc = vega__qtls_ticket_seal(t, &s, &ticket)) == 0) {
        size_t m = vega__qtls_msg_open(&b, QT_NEW_SESSION_TICKET);
        vega__qt_put_int(&b, s.lifetime_s, 4);
        vega__qt_put_int(&b, s.age_add, 4);
        vega__qt_put_int(&b, sizeof nonce, 1);
        vega__qt_put(&b, nonce, sizeof nonce);
        vega__qt_put_int(&b, ticket.len, 2);
        vega__qt_put(&b, ticket.p, ticket.len);
        size_t e = vega__qt_open(&b, 2);
        if (t->cfg->early_data) /* RFC 9001 §4.6.1: exactly 0xffffffff in QUIC */
            put_ext(&b, QT_EXT_EARLY_DATA, "\xff\xff\xff\xff", 4);
        vega__qt_close(&b, e, 2);
        vega__qt_close(&b, m + 1, 3); /* not part of any transcript */
        if (b.oom)
            rc = -ENOMEM;
        else if ((rc = t->cbs.send(t->cbs.ud, VEGA_QUIC_LEVEL_APP, b.p, b.len)) > 0)
            rc = 0;
    }
    vega__qt_buf_free(&ticket);
    vega__qt_buf_free(&b);
out:
    vega_crypto_cleanse(&s, sizeof s);
    return rc;
}

int vega__qtls_early_digest(const struct vega__qtls *t, uint8_t *out)
{
    if (t->has_early_ctx) {
        memcpy(out, t->early_ctx, 32);
        return 0;
    }
    return vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, t->tp, t->tp_len, out);
}

int vega__qtls_set_early_context(struct vega__qtls *t, const uint8_t *ctx, size_t len)
{
    int rc = vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, ctx, len, t->early_ctx);
    if (rc == 0)
        t->has_early_ctx = true;
    return rc;
}
