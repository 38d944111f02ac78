/* SPDX-License-Identifier: MIT */
/* TLS failures as codes and clear messages: host name and IP address mismatch, expired and
 * not-yet-valid certificates, unknown CAs, alerts by name, verification turned off. */
#include "tls_util.h"

struct outcome {
    int rc, rs;
    char cmsg[320], smsg[320];
    vega_tls_error ce;
};

/* A handshake between ccfg (verifying server_name) and scfg; when the client finished first
 * (TLS 1.3), its read reports what the server said. */
static struct outcome attempt(vega_tls_config *ccfg, vega_tls_config *scfg, const char *name)
{
    struct tu_pair p = tu_pair_new(ccfg, scfg, name, 0);
    struct outcome o;
    tu_handshake(p.c, p.s, &o.rc, &o.rs);
    if (o.rc == 0 && o.rs < 0) {
        char b[4];
        o.rc = (int)vega_stream_read(p.c, b, sizeof(b), DL(1000));
    }
    snprintf(o.cmsg, sizeof(o.cmsg), "%s", vega_tls_last_error(p.c));
    snprintf(o.smsg, sizeof(o.smsg), "%s", vega_tls_last_error(p.s));
    VCHECK_EQ(vega_tls_get_error(p.c, &o.ce), 0);
    tu_pair_close(&p);
    return o;
}

static void want(const char *msg, const char *part)
{
    if (!strstr(msg, part))
        vtest_fail(__FILE__, __LINE__, "message \"%s\" lacks \"%s\"", msg, part);
}

static void body_name_mismatch(void)
{
    struct tu_pem pem = tu_default_cert(); /* localhost, 127.0.0.1, ::1 */
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    struct outcome o = attempt(ccfg, scfg, "example.com");
    VCHECK_EQ(o.rc, VEGA_ERR_TLS_CERT_NAME);
    want(o.cmsg, "certificate verify failed: hostname mismatch");
    want(o.cmsg, "wanted example.com");
    want(o.cmsg, "DNS:localhost, IP:127.0.0.1, IP:::1");
    VCHECK_EQ(o.ce.verify_result, 62);   /* X509_V_ERR_HOSTNAME_MISMATCH */
    VCHECK_EQ(o.rs, VEGA_ERR_TLS_ALERT); /* the client told the server why */
    want(o.smsg, "bad_certificate");
    /* IP addresses are checked against IP SANs. */
    o = attempt(ccfg, scfg, "127.0.0.2");
    VCHECK_EQ(o.rc, VEGA_ERR_TLS_CERT_NAME);
    want(o.cmsg, "IP address mismatch");
    want(o.cmsg, "wanted 127.0.0.2");
    VCHECK_EQ(attempt(ccfg, scfg, "::1").rc, 0);
    VCHECK_EQ(attempt(ccfg, scfg, "[::1]").rc, 0);
    VCHECK_EQ(attempt(ccfg, scfg, "127.0.0.1").rc, 0);
    VCHECK_EQ(attempt(ccfg, scfg, "LOCALHOST").rc, 0);
    /* No name: the chain is verified, the name is not. */
    VCHECK_EQ(attempt(ccfg, scfg, NULL).rc, 0);
    /* Wildcards match one label only. */
    static const char *const wild[] = {"*.example.org"};
    struct tu_pem w = tu_selfsigned(wild, 1, -60, 3600);
    vega_tls_config *wscfg = tu_server_cfg(&w), *wccfg = tu_client_cfg(w.cert);
    VCHECK_EQ(attempt(wccfg, wscfg, "a.example.org").rc, 0);
    VCHECK_EQ(attempt(wccfg, wscfg, "a.b.example.org").rc, VEGA_ERR_TLS_CERT_NAME);
    VCHECK_EQ(attempt(wccfg, wscfg, "example.org").rc, VEGA_ERR_TLS_CERT_NAME);
    vega_tls_config_free(wscfg);
    vega_tls_config_free(wccfg);
    tu_pem_free(&w);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(hostname_and_ip_mismatch_messages)
{
    tu_run(body_name_mismatch, 0);
}

static void body_expired(void)
{
    /* Valid from 10 days ago until yesterday. */
    struct tu_pem old = tu_selfsigned(NULL, 0, -10 * 86400, -86400);
    vega_tls_config *scfg = tu_server_cfg(&old), *ccfg = tu_client_cfg(old.cert);
    struct outcome o = attempt(ccfg, scfg, "localhost");
    VCHECK_EQ(o.rc, VEGA_ERR_TLS_CERT_EXPIRED);
    want(o.cmsg, "certificate verify failed: certificate has expired");
    want(o.cmsg, "notAfter");
    want(o.cmsg, "GMT");
    want(o.cmsg, "subject CN=localhost");
    VCHECK_EQ(o.ce.verify_result, 10); /* X509_V_ERR_CERT_HAS_EXPIRED */
    VCHECK_EQ(o.rs, VEGA_ERR_TLS_ALERT);
    want(o.smsg, "certificate_expired (45)");
    want(o.smsg, "rejected our certificate");
    VCHECK_STR(vega_tls_err_name(o.rc), "VEGA_ERR_TLS_CERT_EXPIRED");
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&old);
    /* Not valid yet. */
    struct tu_pem young = tu_selfsigned(NULL, 0, 86400, 2 * 86400);
    scfg = tu_server_cfg(&young);
    ccfg = tu_client_cfg(young.cert);
    o = attempt(ccfg, scfg, "localhost");
    VCHECK_EQ(o.rc, VEGA_ERR_TLS_CERT_EXPIRED);
    want(o.cmsg, "certificate is not yet valid");
    want(o.cmsg, "notBefore");
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&young);
}

VTEST(expired_and_not_yet_valid_certificates)
{
    tu_run(body_expired, 0);
}

static void body_unknown_ca(void)
{
    struct tu_pem pem = tu_default_cert(), other = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(other.cert);
    struct outcome o = attempt(ccfg, scfg, "localhost");
    VCHECK_EQ(o.rc, VEGA_ERR_TLS_CERT_UNTRUSTED);
    want(o.cmsg, "certificate verify failed: self-signed certificate");
    want(o.cmsg, "unknown CA");
    want(o.smsg, "unknown_ca");
    vega_tls_config_free(ccfg);
    /* A chain to a CA nobody trusts. */
    static const char *const names[] = {"localhost"};
    struct tu_pem ca = tu_ca("Nobody's CA");
    struct tu_pem leaf = tu_signed(&ca, "localhost", names, 1);
    vega_tls_config *s2 = tu_server_cfg(&leaf);
    ccfg = tu_client_cfg(pem.cert);
    o = attempt(ccfg, s2, "localhost");
    VCHECK_EQ(o.rc, VEGA_ERR_TLS_CERT_UNTRUSTED);
    want(o.cmsg, "unable to get local issuer certificate");
    vega_tls_config_free(ccfg);
    /* Trusting the CA fixes it. */
    ccfg = tu_client_cfg(ca.cert);
    VCHECK_EQ(attempt(ccfg, s2, "localhost").rc, 0);
    vega_tls_config_free(ccfg);
    /* Verification off accepts anything (and names nothing). */
    ccfg = tu_client_cfg(NULL);
    VCHECK_EQ(attempt(ccfg, s2, "wrong.example").rc, 0);
    vega_tls_config_free(ccfg);
    vega_tls_config_free(s2);
    vega_tls_config_free(scfg);
    tu_pem_free(&pem);
    tu_pem_free(&other);
    tu_pem_free(&ca);
    tu_pem_free(&leaf);
}

VTEST(unknown_ca_and_verification_off)
{
    tu_run(body_unknown_ca, 0);
}

/* Handshake failures name the alert: no common version, no common cipher. */
static void body_alerts(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    VCHECK_EQ(vega_tls_config_set_versions(scfg, VEGA_TLS_1_3, VEGA_TLS_1_3), 0);
    VCHECK_EQ(vega_tls_config_set_versions(ccfg, VEGA_TLS_1_2, VEGA_TLS_1_2), 0);
    struct outcome o = attempt(ccfg, scfg, "localhost");
    VCHECK_EQ(o.rc, VEGA_ERR_TLS_ALERT);
    want(o.cmsg, "TLS handshake failed: the peer sent alert protocol_version (70)");
    want(o.cmsg, "no TLS version in common");
    VCHECK_EQ(o.ce.alert, 70);
    VCHECK(o.ce.alert_received);
    VCHECK_EQ(o.rs, VEGA_ERR_TLS_HANDSHAKE);
    want(o.smsg, "unsupported protocol");
    want(o.smsg, "sent alert protocol_version");
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);

    scfg = tu_server_cfg(&pem);
    ccfg = tu_client_cfg(pem.cert);
    VCHECK_EQ(vega_tls_config_set_versions(scfg, VEGA_TLS_1_2, VEGA_TLS_1_2), 0);
    VCHECK_EQ(vega_tls_config_set_ciphers(scfg, "ECDHE-ECDSA-AES128-GCM-SHA256", NULL), 0);
    VCHECK_EQ(vega_tls_config_set_ciphers(ccfg, "ECDHE-ECDSA-CHACHA20-POLY1305", NULL), 0);
    o = attempt(ccfg, scfg, "localhost");
    VCHECK_EQ(o.rc, VEGA_ERR_TLS_ALERT);
    want(o.cmsg, "handshake_failure (40)");
    want(o.smsg, "no shared cipher");
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
    /* Codes without a stream. */
    VCHECK_STR(vega_tls_strerror(-ETIMEDOUT), vega_strerror(-ETIMEDOUT));
    VCHECK_STR(vega_tls_err_name(VEGA_ERR_TLS_ALERT), "VEGA_ERR_TLS_ALERT");
    VCHECK_STR(vega_tls_err_name(-EPIPE), "EPIPE");
    for (int c = VEGA_ERR_TLS_HANDSHAKE; c > VEGA_ERR_TLS_LAST; c--)
        VCHECK(strncmp(vega_tls_err_name(c), "VEGA_ERR_TLS_", 13) == 0);
}

VTEST(handshake_failures_name_the_alert)
{
    tu_run(body_alerts, 0);
}
