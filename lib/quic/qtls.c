/* SPDX-License-Identifier: MIT */
/* The QUIC TLS 1.3 handshake engine (RFC 8446, RFC 9001 §4): creation, message reassembly per
 * encryption level, the transcript, and the steps both sides share (certificates,
 * CertificateVerify, Finished, secrets). */
#include <errno.h>
#include <stdlib.h>

#include "qtls_int.h"

const uint16_t vega__qtls_sigalgs[6] = {
    VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256,
    VEGA_CRYPTO_SIG_ECDSA_SECP384R1_SHA384,
    VEGA_CRYPTO_SIG_ED25519,
    VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA256,
    VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA384,
    VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA512,
};

/* ---- failures, randomness, callbacks --------------------------------------------------------- */

int vega__qtls_fail_rc(struct vega__qtls *t, int rc, uint64_t wire, const char *reason)
{
    if (t->state != QS_FAILED) {
        t->state = QS_FAILED;
        t->err = rc;
        t->err_wire = wire;
        t->reason = reason;
    }
    return t->err;
}

int vega__qtls_fail(struct vega__qtls *t, int alert, const char *reason)
{
    return vega__qtls_fail_rc(t, VEGA_ERR_PROTO, VEGA_QUIC_CRYPTO_ERROR + (uint64_t)alert, reason);
}

static int internal(struct vega__qtls *t, int rc, const char *reason)
{
    return vega__qtls_fail_rc(t, rc, VEGA_QUIC_CRYPTO_ERROR + VEGA__QTLS_ALERT_INTERNAL_ERROR,
                              reason);
}

int vega__qtls_rand(struct vega__qtls *t, void *buf, size_t len)
{
    int rc = t->cbs.rand ? t->cbs.rand(t->cbs.ud, buf, len) : vega_crypto_random(buf, len);
    return rc < 0 ? internal(t, rc, "random generator failed") : 0;
}

/* The NSS key log label of a secret (the format of SSLKEYLOGFILE, as OpenSSL and NSS write
 * it): the client's secrets are ours to write on a client and the peer's on a server. */
static const char *keylog_label(vega_quic_level level, bool client)
{
    switch (level) {
    case VEGA_QUIC_LEVEL_EARLY:
        return "CLIENT_EARLY_TRAFFIC_SECRET";
    case VEGA_QUIC_LEVEL_HANDSHAKE:
        return client ? "CLIENT_HANDSHAKE_TRAFFIC_SECRET" : "SERVER_HANDSHAKE_TRAFFIC_SECRET";
    case VEGA_QUIC_LEVEL_APP:
        return client ? "CLIENT_TRAFFIC_SECRET_0" : "SERVER_TRAFFIC_SECRET_0";
    default:
        return NULL;
    }
}

static char *put_hex(char *o, const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        *o++ = digits[p[i] >> 4];
        *o++ = digits[p[i] & 15];
    }
    return o;
}

static void keylog(struct vega__qtls *t, vega_quic_level level, bool write, const uint8_t *secret)
{
    const char *label = keylog_label(level, write != t->server);
    if (!t->cbs.keylog || !label)
        return;
    /* the longest label (31) + the random (64) + a SHA-384 secret (96) + 2 spaces + NUL */
    char line[32 + 64 + 2 * VEGA__QUIC_TLS13_MAX_HASH_LEN + 3];
    size_t ll = strlen(label);
    memcpy(line, label, ll);
    char *o = line + ll;
    *o++ = ' ';
    o = put_hex(o, t->random, 32);
    *o++ = ' ';
    o = put_hex(o, secret, t->hash_len);
    *o = 0;
    t->cbs.keylog(t->cbs.ud, line);
    vega_crypto_cleanse(line, sizeof line);
}

int vega__qtls_secret(struct vega__qtls *t, vega_quic_level level, bool write,
                      const uint8_t *secret)
{
    keylog(t, level, write, secret);
    int rc = t->cbs.secret(t->cbs.ud, level, write, t->aead, t->hash, secret, t->hash_len);
    if (rc < 0)
        return vega__qtls_fail_rc(t, rc, VEGA_QUIC_INTERNAL_ERROR, "secret callback failed");
    return 0;
}

size_t vega__qtls_msg_open(struct qt_buf *b, uint8_t type)
{
    size_t mark = b->len;
    vega__qt_put_int(b, type, 1);
    vega__qt_open(b, 3);
    return mark;
}

int vega__qtls_msg_close(struct vega__qtls *t, struct qt_buf *b, size_t mark)
{
    vega__qt_close(b, mark + 1, 3);
    if (b->oom)
        return internal(t, -ENOMEM, "out of memory");
    return vega__qtls_th_add(t, b->p + mark, b->len - mark);
}

int vega__qtls_flush(struct vega__qtls *t, vega_quic_level level, struct qt_buf *b)
{
    if (b->oom)
        return internal(t, -ENOMEM, "out of memory");
    int rc = b->len ? t->cbs.send(t->cbs.ud, level, b->p, b->len) : 0;
    b->len = 0;
    if (rc < 0)
        return vega__qtls_fail_rc(t, rc, VEGA_QUIC_INTERNAL_ERROR, "send callback failed");
    return 0;
}

/* ---- transcript (§4.4.1) --------------------------------------------------------------------- */

int vega__qtls_th_add(struct vega__qtls *t, const uint8_t *msg, size_t len)
{
    vega__qt_put(&t->th, msg, len);
    return t->th.oom ? internal(t, -ENOMEM, "out of memory") : 0;
}

int vega__qtls_th_hash(struct vega__qtls *t, const uint8_t *extra, size_t extra_len, uint8_t *out)
{
    vega_crypto_hash *h = NULL;
    int rc = vega_crypto_hash_new(&h, t->hash);
    if (rc == 0 && t->th.len)
        rc = vega_crypto_hash_update(h, t->th.p, t->th.len);
    if (rc == 0 && extra_len)
        rc = vega_crypto_hash_update(h, extra, extra_len);
    if (rc == 0)
        rc = vega_crypto_hash_final(h, out);
    vega_crypto_hash_free(h);
    return rc < 0 ? internal(t, rc, "transcript hash failed") : 0;
}

int vega__qtls_th_hrr(struct vega__qtls *t)
{
    uint8_t mh[4 + VEGA__QUIC_TLS13_MAX_HASH_LEN] = {QT_MESSAGE_HASH, 0, 0, (uint8_t)t->hash_len};
    int rc = vega__qtls_th_hash(t, NULL, 0, mh + 4);
    if (rc < 0)
        return rc;
    t->th.len = 0;
    return vega__qtls_th_add(t, mh, 4 + t->hash_len);
}

bool vega__qtls_set_suite(struct vega__qtls *t, uint16_t suite)
{
    switch (suite) {
    case VEGA_QUIC_TLS_AES_128_GCM_SHA256:
        t->aead = VEGA_CRYPTO_AES_128_GCM;
        t->hash = VEGA_CRYPTO_SHA256;
        break;
    case VEGA_QUIC_TLS_AES_256_GCM_SHA384:
        t->aead = VEGA_CRYPTO_AES_256_GCM;
        t->hash = VEGA_CRYPTO_SHA384;
        break;
    case VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256:
        t->aead = VEGA_CRYPTO_CHACHA20_POLY1305;
        t->hash = VEGA_CRYPTO_SHA256;
        break;
    default:
        return false;
    }
    t->suite = suite;
    t->hash_len = vega_crypto_hash_len(t->hash);
    return true;
}

int vega__qtls_kex(struct vega__qtls *t, vega_crypto_group g)
{
    vega_crypto_kex_free(t->kex);
    t->kex = NULL;
    uint8_t priv[32];
    int rc = VEGA_ERR_CRYPTO_BAD_KEY;
    /* A random P-256 scalar is out of range with probability ~2^-32: draw again. */
    for (int i = 0; i < 8 && rc == VEGA_ERR_CRYPTO_BAD_KEY; i++) {
        if ((rc = vega__qtls_rand(t, priv, sizeof priv)) < 0)
            break;
        rc = vega_crypto_kex_new_private(&t->kex, g, priv, sizeof priv);
    }
    vega_crypto_cleanse(priv, sizeof priv);
    if (rc < 0 && t->state != QS_FAILED)
        return internal(t, rc, "key share generation failed");
    return rc;
}

bool vega__qtls_has_u16(const uint8_t *list, size_t len, uint16_t v)
{
    for (size_t i = 0; i + 1 < len; i += 2)
        if (qt_be(list + i, 2) == v)
            return true;
    return false;
}

/* ---- certificates, CertificateVerify, Finished ----------------------------------------------- */

uint16_t vega__qtls_pick_scheme(const struct vega__qtls *t, const uint8_t *list, size_t len)
{
    for (size_t i = 0; i + 1 < len; i += 2) {
        uint16_t s = (uint16_t)qt_be(list + i, 2);
        for (size_t j = 0; j < sizeof vega__qtls_sigalgs / sizeof vega__qtls_sigalgs[0]; j++)
            if (vega__qtls_sigalgs[j] == s &&
                vega_crypto_key_supports(t->cfg->key, (vega_crypto_sig_alg)s))
                return s;
    }
    return 0;
}

int vega__qtls_put_cert(struct vega__qtls *t, struct qt_buf *b, bool with_chain)
{
    size_t m = vega__qtls_msg_open(b, QT_CERTIFICATE);
    vega__qt_put_int(b, 0, 1); /* certificate_request_context: empty in the main handshake */
    size_t list = vega__qt_open(b, 3);
    size_t n = with_chain ? vega_crypto_cert_chain_count(t->cfg->chain) : 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *der;
        size_t len;
        if (vega_crypto_cert_chain_get_der(t->cfg->chain, i, &der, &len) < 0)
            return internal(t, -EINVAL, "certificate chain unreadable");
        size_t c = vega__qt_open(b, 3);
        vega__qt_put(b, der, len);
        vega__qt_close(b, c, 3);
        vega__qt_put_int(b, 0, 2); /* no entry extensions */
    }
    vega__qt_close(b, list, 3);
    return vega__qtls_msg_close(t, b, m);
}

int vega__qtls_put_cv(struct vega__qtls *t, struct qt_buf *b, uint16_t scheme)
{
    uint8_t th[VEGA__QUIC_TLS13_MAX_HASH_LEN], content[VEGA_CRYPTO_TLS13_CV_MAX];
    int rc = vega__qtls_th_hash(t, NULL, 0, th);
    if (rc < 0)
        return rc;
    vega_ssize cl =
        vega_crypto_tls13_cv_content(t->server, th, t->hash_len, content, sizeof content);
    size_t cap = vega_crypto_key_sig_max(t->cfg->key);
    uint8_t *sig = cap && cl > 0 ? vega__quic_malloc(t->cbs.mem, cap) : NULL;
    if (!sig)
        return internal(t, cl < 0 ? (int)cl : -ENOMEM, "out of memory");
    vega_ssize sl = vega_crypto_key_sign(t->cfg->key, (vega_crypto_sig_alg)scheme, content,
                                         (size_t)cl, sig, cap);
    if (sl < 0) {
        vega__quic_free(t->cbs.mem, sig);
        return internal(t, (int)sl, "signing CertificateVerify failed");
    }
    size_t m = vega__qtls_msg_open(b, QT_CERTIFICATE_VERIFY);
    vega__qt_put_int(b, scheme, 2);
    size_t v = vega__qt_open(b, 2);
    vega__qt_put(b, sig, (size_t)sl);
    vega__qt_close(b, v, 2);
    vega__quic_free(t->cbs.mem, sig);
    return vega__qtls_msg_close(t, b, m);
}

int vega__qtls_put_finished(struct vega__qtls *t, struct qt_buf *b, const uint8_t *base)
{
    uint8_t th[VEGA__QUIC_TLS13_MAX_HASH_LEN], fin[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    int rc = vega__qtls_th_hash(t, NULL, 0, th);
    if (rc < 0)
        return rc;
    rc = vega__quic_tls13_finished(t->hash, base, t->hash_len, th, t->hash_len, fin);
    if (rc < 0)
        return internal(t, rc, "Finished computation failed");
    size_t m = vega__qtls_msg_open(b, QT_FINISHED);
    vega__qt_put(b, fin, t->hash_len);
    vega_crypto_cleanse(fin, sizeof fin);
    return vega__qtls_msg_close(t, b, m);
}

/* The alert for a failed chain verification (RFC 8446 §6.2). */
static int verify_fail(struct vega__qtls *t, int rc)
{
    switch (rc) {
    case VEGA_ERR_CRYPTO_CERT_EXPIRED:
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_CERTIFICATE_EXPIRED,
                               "certificate verify failed: expired");
    case VEGA_ERR_CRYPTO_CERT_NOT_YET_VALID:
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_BAD_CERTIFICATE,
                               "certificate verify failed: not yet valid");
    case VEGA_ERR_CRYPTO_CERT_UNKNOWN_CA:
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_UNKNOWN_CA,
                               "certificate verify failed: unknown CA");
    case VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH:
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_BAD_CERTIFICATE,
                               "certificate verify failed: name mismatch");
    case VEGA_ERR_CRYPTO_CERT_BAD_SIGNATURE:
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_BAD_CERTIFICATE,
                               "certificate verify failed: bad signature");
    case VEGA_ERR_CRYPTO_CERT_INVALID:
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_UNSUPPORTED_CERTIFICATE,
                               "certificate verify failed: not valid for this use");
    default:
        return internal(t, rc, "certificate verification failed");
    }
}

/* Client with pins: the SHA-256 of the leaf's SubjectPublicKeyInfo must be one of them. */
static int pin_check(struct vega__qtls *t)
{
    uint8_t spki[4096], md[32];
    vega_ssize n = vega_crypto_key_public_der(t->peer_key, spki, sizeof spki);
    if (n == VEGA_ERR_NOBUF) /* larger than any key we can verify with: no pin matches it */
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_BAD_CERTIFICATE, VEGA_QUIC_PIN_MISMATCH);
    if (n < 0)
        return internal(t, (int)n, "public key encoding failed");
    int rc = vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, spki, (size_t)n, md);
    if (rc < 0)
        return internal(t, rc, "public key hash failed");
    for (size_t i = 0; i < t->cbs.npins; i++)
        if (memcmp(t->cbs.pins + 32 * i, md, 32) == 0)
            return 0;
    return vega__qtls_fail(t, VEGA__QTLS_ALERT_BAD_CERTIFICATE, VEGA_QUIC_PIN_MISMATCH);
}

int vega__qtls_on_cert(struct vega__qtls *t, const uint8_t *msg, size_t len)
{
    struct vega__qtls_cert c;
    int alert = vega__qtls_parse_cert(msg, len, &c);
    if (alert)
        return vega__qtls_fail(t, alert, "malformed Certificate");
    if (c.context_len)
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_ILLEGAL_PARAMETER,
                               "Certificate with a request context");
    if (c.count == 0) {
        if (!t->server) /* §4.4.2.4 */
            return vega__qtls_fail(t, VEGA__QTLS_ALERT_DECODE_ERROR, "empty server Certificate");
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_CERTIFICATE_REQUIRED,
                               "client sent no certificate");
    }
    if (c.count > VEGA_CRYPTO_CERT_CHAIN_MAX)
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_BAD_CERTIFICATE, "certificate chain too long");
    int rc = vega_crypto_cert_chain_new(&t->peer_chain);
    if (rc < 0)
        return internal(t, rc, "out of memory");
    struct qt_rd r = {c.list, c.list + c.list_len};
    const uint8_t *der;
    size_t der_len;
    while (vega__qtls_cert_next(&r, &der, &der_len)) {
        rc = vega_crypto_cert_chain_add_der(t->peer_chain, der, der_len);
        if (rc == -ENOMEM)
            return internal(t, rc, "out of memory");
        if (rc < 0)
            return vega__qtls_fail(t, VEGA__QTLS_ALERT_BAD_CERTIFICATE, "unparsable certificate");
    }
    if (t->server || !t->cfg->insecure) {
        vega_crypto_cert_verify_opts o = {0};
        o.host = t->server ? NULL : t->cfg->server_name;
        o.time = (int64_t)(t->wall_ms / 1000);
        o.purpose = t->server ? VEGA_CRYPTO_CERT_CLIENT : VEGA_CRYPTO_CERT_SERVER;
        rc = vega_crypto_cert_chain_verify(t->peer_chain, t->cfg->ca, &o, NULL);
        if (rc < 0)
            return verify_fail(t, rc);
    }
    rc = vega_crypto_cert_chain_get_key(t->peer_chain, 0, &t->peer_key);
    if (rc == -ENOMEM)
        return internal(t, rc, "out of memory");
    if (rc < 0)
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_UNSUPPORTED_CERTIFICATE,
                               "unsupported certificate key");
    if (!t->server && t->cbs.npins && (rc = pin_check(t)) < 0)
        return rc;
    return vega__qtls_th_add(t, msg, len);
}

int vega__qtls_on_cv(struct vega__qtls *t, const uint8_t *msg, size_t len)
{
    uint16_t scheme;
    const uint8_t *sig;
    size_t sig_len;
    int alert = vega__qtls_parse_cv(msg, len, &scheme, &sig, &sig_len);
    if (alert)
        return vega__qtls_fail(t, alert, "malformed CertificateVerify");
    bool offered = false;
    for (size_t j = 0; j < sizeof vega__qtls_sigalgs / sizeof vega__qtls_sigalgs[0]; j++)
        offered |= vega__qtls_sigalgs[j] == scheme;
    if (!offered || !vega_crypto_key_supports(t->peer_key, (vega_crypto_sig_alg)scheme))
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_ILLEGAL_PARAMETER,
                               "CertificateVerify with a scheme not offered or not the key's");
    uint8_t th[VEGA__QUIC_TLS13_MAX_HASH_LEN], content[VEGA_CRYPTO_TLS13_CV_MAX];
    int rc = vega__qtls_th_hash(t, NULL, 0, th);
    if (rc < 0)
        return rc;
    vega_ssize cl =
        vega_crypto_tls13_cv_content(!t->server, th, t->hash_len, content, sizeof content);
    if (cl < 0)
        return internal(t, (int)cl, "CertificateVerify content");
    rc = vega_crypto_key_verify(t->peer_key, (vega_crypto_sig_alg)scheme, content, (size_t)cl, sig,
                                sig_len);
    if (rc == VEGA_ERR_CRYPTO_BAD_SIGNATURE)
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_DECRYPT_ERROR,
                               "CertificateVerify signature does not verify");
    if (rc < 0)
        return internal(t, rc, "CertificateVerify check failed");
    return vega__qtls_th_add(t, msg, len);
}

int vega__qtls_check_finished(struct vega__qtls *t, const uint8_t *msg, size_t len,
                              const uint8_t *base)
{
    if (len != 4 + t->hash_len || qt_be(msg + 1, 3) != t->hash_len)
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_DECODE_ERROR, "malformed Finished");
    uint8_t th[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    int rc = vega__qtls_th_hash(t, NULL, 0, th);
    if (rc < 0)
        return rc;
    rc = vega__quic_tls13_finished_check(t->hash, base, t->hash_len, th, t->hash_len, msg + 4,
                                         t->hash_len, NULL);
    if (rc == VEGA_ERR_PROTO)
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_DECRYPT_ERROR, "Finished does not verify");
    if (rc < 0)
        return internal(t, rc, "Finished check failed");
    return vega__qtls_th_add(t, msg, len);
}

/* ---- lifecycle ------------------------------------------------------------------------------- */

static bool valid_suite(uint16_t s)
{
    return s == VEGA_QUIC_TLS_AES_128_GCM_SHA256 || s == VEGA_QUIC_TLS_AES_256_GCM_SHA384 ||
           s == VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256;
}

static bool config_ok(bool server, const vega_quic_tls_opts *cfg)
{
    if (cfg->n_alpn == 0 || cfg->n_alpn > VEGA_QUIC_TLS_MAX_ALPN || cfg->n_suites > 3 ||
        cfg->n_groups > 2)
        return false;
    for (size_t i = 0; i < cfg->n_alpn; i++)
        if (!cfg->alpn[i] || strlen(cfg->alpn[i]) == 0 || strlen(cfg->alpn[i]) > QT_MAX_NAME)
            return false;
    for (size_t i = 0; i < cfg->n_suites; i++)
        if (!valid_suite(cfg->suites[i]))
            return false;
    for (size_t i = 0; i < cfg->n_groups; i++)
        if (cfg->groups[i] != VEGA_CRYPTO_GROUP_X25519 &&
            cfg->groups[i] != VEGA_CRYPTO_GROUP_SECP256R1)
            return false;
    if (server)
        return cfg->chain && cfg->key && vega_crypto_cert_chain_count(cfg->chain) > 0 &&
               (!cfg->verify_peer || cfg->ca);
    if (cfg->server_name &&
        (strlen(cfg->server_name) == 0 || strlen(cfg->server_name) > QT_MAX_NAME))
        return false;
    return cfg->insecure || cfg->ca;
}

int vega__qtls_new(struct vega__qtls **out, bool server, const vega_quic_tls_opts *cfg,
                   const uint8_t *tp, size_t tp_len, uint64_t wall_ms,
                   const struct vega__qtls_cbs *cbs)
{
    *out = NULL;
    if (!cfg || !cbs || !cbs->send || !cbs->secret || !cbs->peer_tp || (tp_len && !tp) ||
        tp_len > 0xffff || !config_ok(server, cfg))
        return -EINVAL;
    struct vega__qtls *t = vega__quic_calloc(cbs->mem, 1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->server = server;
    t->cfg = cfg;
    t->cbs = *cbs;
    t->th.mem = cbs->mem;
    t->wall_ms = wall_ms;
    t->state = server ? QS_S_WAIT_CH : QS_C_START;
    t->tp = vega__quic_malloc(t->cbs.mem, tp_len ? tp_len : 1);
    if (!t->tp) {
        vega__quic_free(t->cbs.mem, t);
        return -ENOMEM;
    }
    if (tp_len)
        memcpy(t->tp, tp, tp_len);
    t->tp_len = tp_len;
    if (cfg->n_suites) {
        memcpy(t->suites, cfg->suites, cfg->n_suites * sizeof(uint16_t));
        t->n_suites = cfg->n_suites;
    } else {
        t->suites[0] = VEGA_QUIC_TLS_AES_128_GCM_SHA256;
        t->suites[1] = VEGA_QUIC_TLS_AES_256_GCM_SHA384;
        t->suites[2] = VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256;
        t->n_suites = 3;
    }
    if (cfg->n_groups) {
        memcpy(t->groups, cfg->groups, cfg->n_groups * sizeof(vega_crypto_group));
        t->n_groups = cfg->n_groups;
    } else {
        t->groups[0] = VEGA_CRYPTO_GROUP_X25519;
        t->groups[1] = VEGA_CRYPTO_GROUP_SECP256R1;
        t->n_groups = 2;
    }
    /* a pinned client does not resume: a resumed handshake carries no certificate to check */
    if (!server && !cbs->npins && cfg->session && wall_ms &&
        vega__qtls_session_decode(cfg->session, cfg->session_len, &t->sess) == 0) {
        /* Usable only for the same server name, an ALPN still offered, a suite still
         * configured, and before it expires (RFC 8446 §4.6.1). */
        const char *sn = cfg->server_name ? cfg->server_name : "";
        bool alpn_ok = false, suite_ok = false;
        for (size_t i = 0; i < cfg->n_alpn; i++)
            alpn_ok |= strlen(cfg->alpn[i]) == t->sess.alpn_len &&
                       memcmp(cfg->alpn[i], t->sess.alpn, t->sess.alpn_len) == 0;
        for (size_t i = 0; i < t->n_suites; i++)
            suite_ok |= t->suites[i] == t->sess.suite;
        t->have_sess = alpn_ok && suite_ok && strcmp(sn, t->sess.name) == 0 &&
                       wall_ms >= t->sess.time_ms &&
                       wall_ms - t->sess.time_ms < (uint64_t)t->sess.lifetime_s * 1000;
    }
    *out = t;
    return 0;
}

void vega__qtls_free(struct vega__qtls *t)
{
    if (!t)
        return;
    vega_crypto_kex_free(t->kex);
    vega_crypto_cert_chain_free(t->peer_chain);
    vega_crypto_key_free(t->peer_key);
    vega__quic_tls13_schedule_wipe(&t->ks);
    vega__qt_buf_free(&t->th);
    if (t->in) {
        vega_crypto_cleanse(t->in, t->in_cap);
        vega__quic_free(t->cbs.mem, t->in);
    }
    const vega_quic_mem *mem = t->cbs.mem;
    vega__quic_free(mem, t->tp);
    vega__quic_free(mem, t->peer_tp);
    vega_crypto_cleanse(t, sizeof(*t));
    vega__quic_free(mem, t);
}

int vega__qtls_start(struct vega__qtls *t, uint64_t *wire_err)
{
    int rc = 0;
    if (t->state == QS_FAILED)
        rc = t->err;
    else if (!t->server && t->state == QS_C_START)
        rc = vega__qtls_client_start(t);
    if (rc < 0 && wire_err)
        *wire_err = t->err_wire;
    return rc;
}

/* The level the peer's next bytes belong to, or -1 when none is expected. */
static int expected_level(const struct vega__qtls *t)
{
    switch (t->state) {
    case QS_C_WAIT_SH:
    case QS_S_WAIT_CH:
        return VEGA_QUIC_LEVEL_INITIAL;
    case QS_C_WAIT_EE:
    case QS_C_WAIT_CERT_CR:
    case QS_C_WAIT_CERT:
    case QS_C_WAIT_CV:
    case QS_C_WAIT_FIN:
    case QS_S_WAIT_CERT:
    case QS_S_WAIT_CV:
    case QS_S_WAIT_FIN:
        return VEGA_QUIC_LEVEL_HANDSHAKE;
    case QS_C_DONE:
        return VEGA_QUIC_LEVEL_APP;
    default:
        return -1;
    }
}

static int recv_bytes(struct vega__qtls *t, vega_quic_level level, const uint8_t *data, size_t len)
{
    if (len == 0)
        return 0;
    if ((int)level != expected_level(t))
        return vega__qtls_fail(t, VEGA__QTLS_ALERT_UNEXPECTED_MESSAGE,
                               "handshake data at an unexpected level");
    while (len > 0) {
        size_t need = t->in_len < 4 ? 4 - t->in_len : 4 + qt_be(t->in + 1, 3) - t->in_len;
        if (t->in_cap < t->in_len + need) {
            size_t cap = t->in_len + need < 256 ? 256 : t->in_len + need;
            uint8_t *p = vega__quic_malloc(t->cbs.mem, cap);
            if (!p)
                return internal(t, -ENOMEM, "out of memory");
            if (t->in) {
                memcpy(p, t->in, t->in_len);
                vega_crypto_cleanse(t->in, t->in_cap);
                vega__quic_free(t->cbs.mem, t->in);
            }
            t->in = p;
            t->in_cap = cap;
        }
        size_t n = need < len ? need : len;
        memcpy(t->in + t->in_len, data, n);
        t->in_len += n;
        data += n;
        len -= n;
        if (t->in_len < 4)
            break;
        size_t body = qt_be(t->in + 1, 3);
        if (body > VEGA__QTLS_MAX_MSG)
            return vega__qtls_fail_rc(t, VEGA_ERR_PROTO, VEGA_QUIC_CRYPTO_BUFFER_EXCEEDED,
                                      "handshake message too large");
        if (t->in_len < 4 + body)
            continue;
        size_t mlen = t->in_len;
        t->in_len = 0;
        int rc = t->server ? vega__qtls_server_msg(t, level, t->in, mlen)
                           : vega__qtls_client_msg(t, level, t->in, mlen);
        if (rc < 0)
            return vega__qtls_fail_rc(t, rc, VEGA_QUIC_INTERNAL_ERROR, "handshake failed");
        /* What follows a level's last message belongs to no message (RFC 9001 §4.1.3). */
        if (len > 0 && (int)level != expected_level(t))
            return vega__qtls_fail(t, VEGA__QTLS_ALERT_UNEXPECTED_MESSAGE,
                                   "handshake data after the level's last message");
    }
    return 0;
}

int vega__qtls_recv(struct vega__qtls *t, vega_quic_level level, const uint8_t *data, size_t len,
                    uint64_t *wire_err)
{
    int rc = t->state == QS_FAILED ? t->err : recv_bytes(t, level, data, len);
    if (rc < 0 && wire_err)
        *wire_err = t->err_wire;
    return rc;
}

/* ---- accessors ------------------------------------------------------------------------------- */

bool vega__qtls_is_done(const struct vega__qtls *t)
{
    return t->state == QS_C_DONE || t->state == QS_S_DONE;
}

const uint8_t *vega__qtls_alpn(const struct vega__qtls *t, size_t *len)
{
    *len = t->alpn_len;
    return t->alpn_len ? t->alpn : NULL;
}

bool vega__qtls_is_resumed(const struct vega__qtls *t)
{
    return t->resumed;
}

vega__qtls_early vega__qtls_early_status(const struct vega__qtls *t)
{
    return t->early;
}

const uint8_t *vega__qtls_session_tp(const struct vega__qtls *t, size_t *len)
{
    if (t->server || !t->have_sess || t->sess.max_early != 0xffffffffu || !t->cfg->early_data) {
        *len = 0;
        return NULL;
    }
    *len = t->sess.tp_len;
    return t->sess.tp;
}

vega_crypto_aead_alg vega__qtls_aead(const struct vega__qtls *t)
{
    return t->aead;
}

vega_crypto_hash_alg vega__qtls_hash(const struct vega__qtls *t)
{
    return t->hash;
}

const vega_crypto_cert_chain *vega__qtls_peer_chain(const struct vega__qtls *t)
{
    return t->peer_chain;
}

const char *vega__qtls_reason(const struct vega__qtls *t)
{
    return t->reason ? t->reason : "";
}
