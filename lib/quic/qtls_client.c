/* SPDX-License-Identifier: MIT */
/* The client side of the QUIC TLS 1.3 handshake (RFC 8446 §4, RFC 9001 §4): ClientHello (with
 * PSK binder and 0-RTT when resuming), HelloRetryRequest, the server's flight, mutual TLS, and
 * NewSessionTicket into a session blob. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>

#include "qtls_int.h"

#define FAIL(alert, why) vega__qtls_fail(t, VEGA__QTLS_ALERT_##alert, why)

static int internal(struct vega__qtls *t, int rc, const char *why)
{
    return vega__qtls_fail_rc(t, rc, VEGA_QUIC_CRYPTO_ERROR + VEGA__QTLS_ALERT_INTERNAL_ERROR, why);
}

/* SNI carries host names only (RFC 6066 §3): never an IP literal. */
static bool is_ip_literal(const char *name)
{
    uint8_t buf[16];
    return inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

static void put_ext_start(struct qt_buf *b, uint16_t type, size_t *mark)
{
    vega__qt_put_int(b, type, 2);
    *mark = vega__qt_open(b, 2);
}

/* Builds, binds and sends a ClientHello (the second one after a HelloRetryRequest echoes its
 * cookie). */
static int send_client_hello(struct vega__qtls *t, const uint8_t *cookie, size_t cookie_len)
{
    const vega_quic_tls_opts *cfg = t->cfg;
    struct qt_buf b = {.mem = t->cbs.mem};
    size_t e, v;
    uint8_t pub[VEGA_CRYPTO_KEX_MAX_PUBLIC];
    vega_ssize pub_len = vega_crypto_kex_get_public(t->kex, pub, sizeof pub);
    if (pub_len < 0)
        return internal(t, (int)pub_len, "key share");

    size_t m = vega__qtls_msg_open(&b, QT_CLIENT_HELLO);
    vega__qt_put_int(&b, 0x0303, 2);
    vega__qt_put(&b, t->random, 32);
    vega__qt_put_int(&b, 0, 1); /* legacy_session_id: empty in QUIC (RFC 9001 §8.4) */
    v = vega__qt_open(&b, 2);
    for (size_t i = 0; i < t->n_suites; i++)
        vega__qt_put_int(&b, t->suites[i], 2);
    vega__qt_close(&b, v, 2);
    vega__qt_put_int(&b, 0x0100, 2); /* legacy_compression_methods: null */
    size_t exts = vega__qt_open(&b, 2);

    put_ext_start(&b, QT_EXT_SUPPORTED_VERSIONS, &e);
    vega__qt_put_int(&b, 2, 1);
    vega__qt_put_int(&b, QT_TLS13, 2);
    vega__qt_close(&b, e, 2);

    put_ext_start(&b, QT_EXT_SUPPORTED_GROUPS, &e);
    v = vega__qt_open(&b, 2);
    for (size_t i = 0; i < t->n_groups; i++)
        vega__qt_put_int(&b, t->groups[i], 2);
    vega__qt_close(&b, v, 2);
    vega__qt_close(&b, e, 2);

    put_ext_start(&b, QT_EXT_KEY_SHARE, &e);
    v = vega__qt_open(&b, 2);
    vega__qt_put_int(&b, t->group, 2);
    vega__qt_put_int(&b, (uint64_t)pub_len, 2);
    vega__qt_put(&b, pub, (size_t)pub_len);
    vega__qt_close(&b, v, 2);
    vega__qt_close(&b, e, 2);

    put_ext_start(&b, QT_EXT_SIGNATURE_ALGORITHMS, &e);
    v = vega__qt_open(&b, 2);
    for (size_t i = 0; i < sizeof vega__qtls_sigalgs / sizeof vega__qtls_sigalgs[0]; i++)
        vega__qt_put_int(&b, vega__qtls_sigalgs[i], 2);
    vega__qt_close(&b, v, 2);
    vega__qt_close(&b, e, 2);

    if (t->sni_sent) {
        size_t n = strlen(cfg->server_name);
        put_ext_start(&b, QT_EXT_SERVER_NAME, &e);
        v = vega__qt_open(&b, 2);
        vega__qt_put_int(&b, 0, 1); /* host_name */
        vega__qt_put_int(&b, n, 2);
        vega__qt_put(&b, cfg->server_name, n);
        vega__qt_close(&b, v, 2);
        vega__qt_close(&b, e, 2);
    }

    put_ext_start(&b, QT_EXT_ALPN, &e);
    v = vega__qt_open(&b, 2);
    for (size_t i = 0; i < cfg->n_alpn; i++) {
        size_t n = strlen(cfg->alpn[i]);
        vega__qt_put_int(&b, n, 1);
        vega__qt_put(&b, cfg->alpn[i], n);
    }
    vega__qt_close(&b, v, 2);
    vega__qt_close(&b, e, 2);

    put_ext_start(&b, QT_EXT_QUIC_TP, &e);
    vega__qt_put(&b, t->tp, t->tp_len);
    vega__qt_close(&b, e, 2);

    if (cookie_len) {
        put_ext_start(&b, QT_EXT_COOKIE, &e);
        vega__qt_put_int(&b, cookie_len, 2);
        vega__qt_put(&b, cookie, cookie_len);
        vega__qt_close(&b, e, 2);
    }

    /* psk_dhe_ke in every ClientHello, not only with a PSK: it is how a server learns that
     * tickets are welcome (RFC 8446 §4.2.9); Go's TLS (quic-go, Caddy) otherwise issues a
     * ticket with no resumption secret, which it then refuses to resume. */
    put_ext_start(&b, QT_EXT_PSK_KEY_EXCHANGE_MODES, &e);
    vega__qt_put_int(&b, 0x0101, 2); /* psk_dhe_ke only */
    vega__qt_close(&b, e, 2);

    size_t binder_at = 0;
    if (t->psk_offered) {
        if (t->early == VEGA__QTLS_EARLY_OFFERED) {
            put_ext_start(&b, QT_EXT_EARLY_DATA, &e);
            vega__qt_close(&b, e, 2);
        }
        /* pre_shared_key: last (RFC 8446 §4.2.11). */
        put_ext_start(&b, QT_EXT_PRE_SHARED_KEY, &e);
        v = vega__qt_open(&b, 2);
        vega__qt_put_int(&b, t->sess.ticket_len, 2);
        vega__qt_put(&b, t->sess.ticket, t->sess.ticket_len);
        uint32_t age = (uint32_t)(t->wall_ms - t->sess.time_ms) + t->sess.age_add;
        vega__qt_put_int(&b, age, 4);
        vega__qt_close(&b, v, 2);
        binder_at = b.len;
        vega__qt_put_int(&b, 1 + t->hash_len, 2);
        vega__qt_put_int(&b, t->hash_len, 1);
        uint8_t zero[VEGA__QUIC_TLS13_MAX_HASH_LEN] = {0};
        vega__qt_put(&b, zero, t->hash_len);
        vega__qt_close(&b, e, 2);
    }
    vega__qt_close(&b, exts, 2);
    vega__qt_close(&b, m + 1, 3);
    int rc = 0;
    if (b.oom) {
        rc = internal(t, -ENOMEM, "ClientHello too large or out of memory");
        goto out;
    }
    if (t->psk_offered) {
        /* The binder covers the transcript so far and the ClientHello up to the binders
         * (RFC 8446 §4.2.11.2). */
        uint8_t bk[VEGA__QUIC_TLS13_MAX_HASH_LEN], th[VEGA__QUIC_TLS13_MAX_HASH_LEN];
        rc = vega__quic_tls13_schedule_init(&t->ks, t->hash, t->sess.psk, t->sess.psk_len);
        if (rc == 0)
            rc = vega__quic_tls13_schedule_binder_key(&t->ks, false, bk);
        if (rc < 0) {
            rc = internal(t, rc, "binder key");
            goto out;
        }
        if ((rc = vega__qtls_th_hash(t, b.p + m, binder_at - m, th)) < 0)
            goto out;
        rc = vega__quic_tls13_finished(t->hash, bk, t->hash_len, th, t->hash_len,
                                       b.p + binder_at + 3);
        vega_crypto_cleanse(bk, sizeof bk);
        if (rc < 0) {
            rc = internal(t, rc, "binder");
            goto out;
        }
    }
    if ((rc = vega__qtls_th_add(t, b.p + m, b.len - m)) < 0 ||
        (rc = vega__qtls_flush(t, VEGA_QUIC_LEVEL_INITIAL, &b)) < 0)
        goto out;
    if (t->early == VEGA__QTLS_EARLY_OFFERED && !t->hrr) {
        uint8_t th[VEGA__QUIC_TLS13_MAX_HASH_LEN], secret[VEGA__QUIC_TLS13_MAX_HASH_LEN];
        if ((rc = vega__qtls_th_hash(t, NULL, 0, th)) < 0)
            goto out;
        rc = vega__quic_tls13_schedule_early_traffic(&t->ks, th, t->hash_len, secret);
        if (rc < 0)
            rc = internal(t, rc, "early secret");
        else
            rc = vega__qtls_secret(t, VEGA_QUIC_LEVEL_EARLY, true, secret);
        vega_crypto_cleanse(secret, sizeof secret);
    }
out:
    vega__qt_buf_free(&b);
    return rc;
}

int vega__qtls_client_start(struct vega__qtls *t)
{
    t->state = QS_C_WAIT_SH;
    t->sni_sent = t->cfg->server_name && !is_ip_literal(t->cfg->server_name);
    if (t->have_sess) {
        t->psk_offered = true;
        vega__qtls_set_suite(t, t->sess.suite); /* the binder's hash; ServerHello decides */
        /* RFC 9001 §4.6.1: QUIC servers allow 0-RTT with max_early_data_size 0xffffffff. */
        if (t->cfg->early_data && t->sess.max_early == 0xffffffffu)
            t->early = VEGA__QTLS_EARLY_OFFERED;
    }
    int rc = vega__qtls_rand(t, t->random, 32);
    if (rc < 0)
        return rc;
    t->group = t->groups[0];
    if ((rc = vega__qtls_kex(t, t->group)) < 0)
        return rc;
    return send_client_hello(t, NULL, 0);
}

static bool offered_suite(const struct vega__qtls *t, uint16_t s)
{
    for (size_t i = 0; i < t->n_suites; i++)
        if (t->suites[i] == s)
            return true;
    return false;
}

static int on_hrr(struct vega__qtls *t, const struct vega__qtls_hello *h, const uint8_t *msg,
                  size_t len)
{
    if (t->hrr)
        return FAIL(UNEXPECTED_MESSAGE, "second HelloRetryRequest");
    bool offered = false;
    for (size_t i = 0; i < t->n_groups; i++)
        offered |= h->has_key_share && t->groups[i] == h->share_group;
    if (h->has_key_share && (!offered || h->share_group == t->group))
        return FAIL(ILLEGAL_PARAMETER, "HelloRetryRequest for a group not offered or shared");
    if (!h->has_key_share && !h->has_cookie)
        return FAIL(ILLEGAL_PARAMETER, "HelloRetryRequest that changes nothing");
    t->hrr = true;
    vega_crypto_hash_alg psk_hash = t->hash;
    vega__qtls_set_suite(t, h->suite);
    if (t->psk_offered && psk_hash != t->hash) {
        t->psk_offered = false; /* the PSK cannot serve this suite's hash */
        vega__quic_tls13_schedule_wipe(&t->ks);
    }
    if (t->early == VEGA__QTLS_EARLY_OFFERED) /* RFC 8446 §4.2.10: no 0-RTT after HRR */
        t->early = VEGA__QTLS_EARLY_REJECTED;
    int rc;
    if ((rc = vega__qtls_th_hrr(t)) < 0 || (rc = vega__qtls_th_add(t, msg, len)) < 0)
        return rc;
    if (h->has_key_share) {
        t->group = (vega_crypto_group)h->share_group;
        if ((rc = vega__qtls_kex(t, t->group)) < 0)
            return rc;
    }
    return send_client_hello(t, h->cookie, h->cookie_len);
}

static int on_server_hello(struct vega__qtls *t, const uint8_t *msg, size_t len)
{
    struct vega__qtls_hello h;
    int alert = vega__qtls_parse_sh(msg, len, &h);
    if (alert)
        return vega__qtls_fail(t, alert, "malformed ServerHello");
    if (!h.has_versions || !h.tls13 || h.legacy_version != 0x0303)
        return FAIL(PROTOCOL_VERSION, "server does not speak TLS 1.3");
    if (h.session_id_len)
        return FAIL(ILLEGAL_PARAMETER, "ServerHello echoes a session ID never sent");
    if (!offered_suite(t, h.suite))
        return FAIL(ILLEGAL_PARAMETER, "ServerHello with a suite not offered");
    if (h.is_hrr)
        return on_hrr(t, &h, msg, len);
    if (t->hrr && h.suite != t->suite)
        return FAIL(ILLEGAL_PARAMETER, "ServerHello suite differs from HelloRetryRequest's");
    vega_crypto_hash_alg psk_hash = t->hash;
    vega__qtls_set_suite(t, h.suite);
    if (!h.has_key_share)
        return FAIL(MISSING_EXTENSION, "ServerHello without key_share");
    if (h.share_group != t->group)
        return FAIL(ILLEGAL_PARAMETER, "ServerHello key_share for a group not shared");
    int rc;
    if (h.has_psk) {
        if (!t->psk_offered || h.psk_selected != 0 || psk_hash != t->hash)
            return FAIL(ILLEGAL_PARAMETER, "ServerHello selects a PSK not offered");
        t->resumed = true;
    } else {
        if (t->early == VEGA__QTLS_EARLY_OFFERED)
            t->early = VEGA__QTLS_EARLY_REJECTED;
        if ((rc = vega__quic_tls13_schedule_init(&t->ks, t->hash, NULL, 0)) < 0)
            return internal(t, rc, "key schedule");
    }
    if ((rc = vega__qtls_th_add(t, msg, len)) < 0)
        return rc;
    uint8_t shared[VEGA_CRYPTO_KEX_SECRET_LEN], th[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    vega_ssize sl = vega_crypto_kex_derive(t->kex, h.share, h.share_len, shared, sizeof shared);
    vega_crypto_kex_free(t->kex);
    t->kex = NULL;
    if (sl == VEGA_ERR_CRYPTO_BAD_PUBLIC)
        return FAIL(ILLEGAL_PARAMETER, "invalid server key share");
    if (sl < 0)
        return internal(t, (int)sl, "key exchange");
    if ((rc = vega__qtls_th_hash(t, NULL, 0, th)) == 0)
        rc = vega__quic_tls13_schedule_handshake(&t->ks, shared, (size_t)sl, th, t->hash_len);
    vega_crypto_cleanse(shared, sizeof shared);
    if (rc < 0)
        return t->state == QS_FAILED ? rc : internal(t, rc, "key schedule");
    if ((rc = vega__qtls_secret(t, VEGA_QUIC_LEVEL_HANDSHAKE, false,
                                t->ks.server_handshake_traffic)) < 0 ||
        (rc = vega__qtls_secret(t, VEGA_QUIC_LEVEL_HANDSHAKE, true,
                                t->ks.client_handshake_traffic)) < 0)
        return rc;
    t->state = QS_C_WAIT_EE;
    return 0;
}

static int on_ee(struct vega__qtls *t, const uint8_t *msg, size_t len)
{
    struct vega__qtls_ee ee;
    int alert = vega__qtls_parse_ee(msg, len, &ee);
    if (alert)
        return vega__qtls_fail(t, alert, "malformed EncryptedExtensions");
    if (ee.has_unknown)
        return FAIL(UNSUPPORTED_EXTENSION, "EncryptedExtensions with an extension not offered");
    if (ee.has_sni && !t->sni_sent)
        return FAIL(UNSUPPORTED_EXTENSION, "server_name acknowledged but not sent");
    if (ee.early_data && t->early != VEGA__QTLS_EARLY_OFFERED)
        return FAIL(ILLEGAL_PARAMETER, "early_data accepted but not offered");
    if (!ee.has_alpn)
        return FAIL(NO_APPLICATION_PROTOCOL, "server chose no ALPN");
    bool offered = false;
    for (size_t i = 0; i < t->cfg->n_alpn; i++)
        offered |= strlen(t->cfg->alpn[i]) == ee.alpn_len &&
                   memcmp(t->cfg->alpn[i], ee.alpn, ee.alpn_len) == 0;
    if (!offered)
        return FAIL(ILLEGAL_PARAMETER, "server chose an ALPN not offered");
    if (!ee.has_tp)
        return FAIL(MISSING_EXTENSION, "no quic_transport_parameters from the server");
    memcpy(t->alpn, ee.alpn, ee.alpn_len);
    t->alpn_len = ee.alpn_len;
    if (t->early == VEGA__QTLS_EARLY_OFFERED)
        t->early = ee.early_data ? VEGA__QTLS_EARLY_ACCEPTED : VEGA__QTLS_EARLY_REJECTED;
    vega__quic_free(t->cbs.mem, t->peer_tp);
    t->peer_tp = vega__quic_malloc(t->cbs.mem, ee.tp_len ? ee.tp_len : 1);
    if (!t->peer_tp)
        return internal(t, -ENOMEM, "out of memory");
    if (ee.tp_len)
        memcpy(t->peer_tp, ee.tp, ee.tp_len);
    t->peer_tp_len = ee.tp_len;
    uint64_t wire = 0;
    int rc = t->cbs.peer_tp(t->cbs.ud, ee.tp, ee.tp_len, &wire);
    if (rc < 0)
        return vega__qtls_fail_rc(t, rc, wire ? wire : VEGA_QUIC_INTERNAL_ERROR,
                                  "server transport parameters rejected");
    if ((rc = vega__qtls_th_add(t, msg, len)) < 0)
        return rc;
    t->state = t->resumed ? QS_C_WAIT_FIN : QS_C_WAIT_CERT_CR;
    return 0;
}

static int on_cert_request(struct vega__qtls *t, const uint8_t *msg, size_t len)
{
    struct qt_rd r = {msg + 4, msg + len}, ctx, exts;
    uint64_t x;
    uint16_t types[QT_MAX_EXTS];
    size_t n = 0;
    bool have_sigalgs = false;
    if (!qt_vec(&r, 1, &ctx) || !qt_vec(&r, 2, &exts) || qt_left(&r))
        return FAIL(DECODE_ERROR, "malformed CertificateRequest");
    if (qt_left(&ctx))
        return FAIL(ILLEGAL_PARAMETER, "CertificateRequest with a context");
    while (qt_left(&exts)) {
        struct qt_rd e, v;
        if (!qt_int(&exts, 2, &x) || !qt_vec(&exts, 2, &e))
            return FAIL(DECODE_ERROR, "malformed CertificateRequest");
        for (size_t i = 0; i < n; i++)
            if (types[i] == x)
                return FAIL(ILLEGAL_PARAMETER, "duplicate extension");
        if (n == QT_MAX_EXTS)
            return FAIL(DECODE_ERROR, "too many extensions");
        types[n++] = (uint16_t)x;
        if (x == QT_EXT_SIGNATURE_ALGORITHMS) {
            if (!qt_vec(&e, 2, &v) || qt_left(&v) < 2 || qt_left(&v) % 2 || qt_left(&e))
                return FAIL(DECODE_ERROR, "malformed signature_algorithms");
            have_sigalgs = true;
            if (t->cfg->chain && t->cfg->key)
                t->scheme = vega__qtls_pick_scheme(t, v.p, qt_left(&v));
        }
    }
    if (!have_sigalgs)
        return FAIL(MISSING_EXTENSION, "CertificateRequest without signature_algorithms");
    t->cert_req = true;
    t->state = QS_C_WAIT_CERT;
    return vega__qtls_th_add(t, msg, len);
}

static int on_finished(struct vega__qtls *t, const uint8_t *msg, size_t len)
{
    int rc = vega__qtls_check_finished(t, msg, len, t->ks.server_handshake_traffic);
    if (rc < 0)
        return rc;
    uint8_t th[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    if ((rc = vega__qtls_th_hash(t, NULL, 0, th)) < 0)
        return rc;
    /* Our handshake traffic secret is needed for our Finished after the move. */
    uint8_t c_hs[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    memcpy(c_hs, t->ks.client_handshake_traffic, sizeof c_hs);
    if ((rc = vega__quic_tls13_schedule_application(&t->ks, th, t->hash_len)) < 0) {
        vega_crypto_cleanse(c_hs, sizeof c_hs);
        return internal(t, rc, "key schedule");
    }
    struct qt_buf b = {.mem = t->cbs.mem};
    if ((rc = vega__qtls_secret(t, VEGA_QUIC_LEVEL_APP, true, t->ks.client_application_traffic)) <
            0 ||
        (rc = vega__qtls_secret(t, VEGA_QUIC_LEVEL_APP, false, t->ks.server_application_traffic)) <
            0)
        goto out;
    if (t->cert_req) {
        bool mine = t->cfg->chain && t->cfg->key && t->scheme;
        if ((rc = vega__qtls_put_cert(t, &b, mine)) < 0 ||
            (mine && (rc = vega__qtls_put_cv(t, &b, t->scheme)) < 0))
            goto out;
    }
    if ((rc = vega__qtls_put_finished(t, &b, c_hs)) < 0 ||
        (rc = vega__qtls_flush(t, VEGA_QUIC_LEVEL_HANDSHAKE, &b)) < 0 ||
        (rc = vega__qtls_th_hash(t, NULL, 0, th)) < 0)
        goto out;
    if ((rc = vega__quic_tls13_schedule_resumption(&t->ks, th, t->hash_len)) < 0) {
        rc = internal(t, rc, "key schedule");
        goto out;
    }
    vega__qt_buf_free(&t->th);
    /* The connection holds the traffic secrets now; keep only what tickets need. */
    vega_crypto_cleanse(t->ks.client_handshake_traffic, sizeof t->ks.client_handshake_traffic);
    vega_crypto_cleanse(t->ks.server_handshake_traffic, sizeof t->ks.server_handshake_traffic);
    vega_crypto_cleanse(t->ks.client_application_traffic, sizeof t->ks.client_application_traffic);
    vega_crypto_cleanse(t->ks.server_application_traffic, sizeof t->ks.server_application_traffic);
    t->state = QS_C_DONE;
out:
    vega_crypto_cleanse(c_hs, sizeof c_hs);
    vega__qt_buf_free(&b);
    return rc;
}

static int on_ticket(struct vega__qtls *t, const uint8_t *msg, size_t len)
{
    struct qt_rd r = {msg + 4, msg + len}, nonce, ticket, exts;
    uint64_t lifetime, age_add, x;
    uint32_t max_early = 0;
    bool seen_early = false;
    if (!qt_int(&r, 4, &lifetime) || !qt_int(&r, 4, &age_add) || !qt_vec(&r, 1, &nonce) ||
        !qt_vec(&r, 2, &ticket) || qt_left(&ticket) == 0 || !qt_vec(&r, 2, &exts) || qt_left(&r))
        return FAIL(DECODE_ERROR, "malformed NewSessionTicket");
    while (qt_left(&exts)) {
        struct qt_rd e;
        if (!qt_int(&exts, 2, &x) || !qt_vec(&exts, 2, &e))
            return FAIL(DECODE_ERROR, "malformed NewSessionTicket");
        if (x == QT_EXT_EARLY_DATA) {
            uint64_t me;
            if (seen_early)
                return FAIL(ILLEGAL_PARAMETER, "duplicate extension");
            if (!qt_int(&e, 4, &me) || qt_left(&e))
                return FAIL(DECODE_ERROR, "malformed early_data");
            seen_early = true;
            max_early = (uint32_t)me;
        }
    }
    if (lifetime > 604800)
        return FAIL(ILLEGAL_PARAMETER, "ticket lifetime above 7 days");
    if (max_early != 0 && max_early != 0xffffffffu) /* RFC 9001 §4.6.1 */
        return vega__qtls_fail_rc(t, VEGA_ERR_PROTO, VEGA_QUIC_PROTOCOL_VIOLATION,
                                  "max_early_data_size other than 0xffffffff");
    if (!t->cbs.session || !t->wall_ms || lifetime == 0 || qt_left(&ticket) > QT_MAX_TICKET)
        return 0; /* nothing to keep it in, or nothing worth keeping */
    struct qt_session s;
    memset(&s, 0, sizeof s);
    s.suite = t->suite;
    s.psk_len = t->hash_len;
    int rc = vega__quic_tls13_resumption_psk(t->hash, t->ks.resumption_master, t->hash_len, nonce.p,
                                             qt_left(&nonce), s.psk);
    if (rc < 0)
        return internal(t, rc, "resumption PSK");
    s.time_ms = t->wall_ms;
    s.lifetime_s = (uint32_t)lifetime;
    s.age_add = (uint32_t)age_add;
    s.max_early = max_early;
    memcpy(s.alpn, t->alpn, t->alpn_len);
    s.alpn_len = t->alpn_len;
    if (t->cfg->server_name)
        memcpy(s.name, t->cfg->server_name, strlen(t->cfg->server_name) + 1);
    s.ticket = ticket.p;
    s.ticket_len = qt_left(&ticket);
    s.tp = t->peer_tp;
    s.tp_len = t->peer_tp_len;
    struct qt_buf blob = {.mem = t->cbs.mem};
    rc = vega__qtls_session_encode(&s, &blob);
    vega_crypto_cleanse(&s, sizeof s);
    if (rc == 0)
        t->cbs.session(t->cbs.ud, blob.p, blob.len);
    vega__qt_buf_free(&blob);
    return rc < 0 ? internal(t, rc, "out of memory") : 0;
}

int vega__qtls_client_msg(struct vega__qtls *t, vega_quic_level level, const uint8_t *msg,
                          size_t len)
{
    (void)level; /* recv only hands over bytes of the level the state expects */
    uint8_t type = msg[0];
    switch (t->state) {
    case QS_C_WAIT_SH:
        if (type == QT_SERVER_HELLO)
            return on_server_hello(t, msg, len);
        break;
    case QS_C_WAIT_EE:
        if (type == QT_ENCRYPTED_EXTENSIONS)
            return on_ee(t, msg, len);
        break;
    case QS_C_WAIT_CERT_CR:
        if (type == QT_CERTIFICATE_REQUEST)
            return on_cert_request(t, msg, len);
        /* fall through */
    case QS_C_WAIT_CERT:
        if (type == QT_CERTIFICATE) {
            int rc = vega__qtls_on_cert(t, msg, len);
            if (rc == 0)
                t->state = QS_C_WAIT_CV;
            return rc;
        }
        break;
    case QS_C_WAIT_CV:
        if (type == QT_CERTIFICATE_VERIFY) {
            int rc = vega__qtls_on_cv(t, msg, len);
            if (rc == 0)
                t->state = QS_C_WAIT_FIN;
            return rc;
        }
        break;
    case QS_C_WAIT_FIN:
        if (type == QT_FINISHED)
            return on_finished(t, msg, len);
        break;
    case QS_C_DONE:
        if (type == QT_NEW_SESSION_TICKET)
            return on_ticket(t, msg, len);
        break;
    default:
        break;
    }
    return FAIL(UNEXPECTED_MESSAGE, "unexpected handshake message");
}
