/* SPDX-License-Identifier: MIT */
/* TLS configuration features over the duplex: ALPN (RFC 7301), SNI certificate selection
 * (RFC 6066), mutual TLS, session resumption (tickets, TLS 1.2 and 1.3), the bounded client
 * session cache, cipher and group preferences, the key log, certificate loading. */
#include <stdio.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>

#include "tls_int.h"
#include "tls_util.h"

static void free_all(struct tu_pair *p, vega_tls_config *a, vega_tls_config *b)
{
    tu_pair_close(p);
    vega_tls_config_free(a);
    vega_tls_config_free(b);
}

/* ---- ALPN ------------------------------------------------------------------------------------ */

static void body_alpn(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    static const char *const srv[] = {"h2", "http/1.1"}, *const cli[] = {"http/1.1", "h2"};
    VCHECK_EQ(vega_tls_config_set_alpn(scfg, srv, 2), 0);
    VCHECK_EQ(vega_tls_config_set_alpn(ccfg, cli, 2), 0);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    /* RFC 7301 section 3.2: the server selects; here by its own preference. */
    VCHECK_STR(vega_tls_get_alpn(p.c), "h2");
    VCHECK_STR(vega_tls_get_alpn(p.s), "h2");
    tu_pair_close(&p);

    /* A client that offers nothing gets nothing. */
    vega_tls_config *plain = tu_client_cfg(pem.cert);
    p = tu_pair_new(plain, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    VCHECK(vega_tls_get_alpn(p.c) == NULL && vega_tls_get_alpn(p.s) == NULL);
    tu_pair_close(&p);

    /* No overlap: "MUST respond with a fatal no_application_protocol alert". */
    static const char *const other[] = {"spdy/3"};
    VCHECK_EQ(vega_tls_config_set_alpn(plain, other, 1), 0);
    p = tu_pair_new(plain, scfg, "localhost", 0);
    int rc, rs;
    tu_handshake(p.c, p.s, &rc, &rs);
    VCHECK_EQ(rs, VEGA_ERR_TLS_HANDSHAKE);
    VCHECK(strstr(vega_tls_last_error(p.s), "no ALPN protocol in common") != NULL);
    VCHECK_EQ(rc, VEGA_ERR_TLS_ALERT);
    VCHECK(strstr(vega_tls_last_error(p.c), "no_application_protocol") != NULL);
    vega_tls_error e;
    VCHECK_EQ(vega_tls_get_error(p.c, &e), 0);
    VCHECK_EQ(e.alert, 120);
    VCHECK(e.alert_received);
    tu_pair_close(&p);

    static const char *const bad[] = {""};
    VCHECK_EQ(vega_tls_config_set_alpn(plain, bad, 1), -EINVAL);
    VCHECK_EQ(vega_tls_config_set_alpn(plain, NULL, 0), 0);
    vega_tls_config_free(plain);
    free_all(&p, scfg, ccfg);
    tu_pem_free(&pem);
}

VTEST(alpn_server_picks_and_no_overlap_alert)
{
    tu_run(body_alpn, 0);
}

/* ---- SNI ------------------------------------------------------------------------------------- */

static vega_tls_cert *cert_of(const struct tu_pem *p)
{
    vega_tls_cert *c;
    VCHECK_EQ(vega_tls_cert_new_pem(&c, p->cert, strlen(p->cert), p->key, strlen(p->key)), 0);
    return c;
}

static void expect_subject(vega_tls_config *ccfg, vega_tls_config *scfg, const char *name,
                           const char *want)
{
    struct tu_pair p = tu_pair_new(ccfg, scfg, name, 0);
    tu_handshake_ok(&p);
    char subj[128];
    VCHECK(vega_tls_peer_subject(p.c, subj, sizeof(subj)) > 0);
    if (strcmp(subj, want) != 0)
        vtest_fail(__FILE__, __LINE__, "SNI %s: got %s, want %s", name, subj, want);
    if (name)
        VCHECK_STR(vega_tls_get_server_name(p.s), name);
    tu_pair_close(&p);
}

static struct tu_pem sni_a, sni_b;
static vega_tls_cert *sni_cb_cert;

static const vega_tls_cert *pick(void *user, const char *name)
{
    VCHECK(user == &sni_cb_cert);
    return name && strcmp(name, "cb.example") == 0 ? sni_cb_cert : NULL;
}

static void body_sni(void)
{
    static const char *const na[] = {"a.example"}, *const nb[] = {"x.b.example"},
                             *const nc[] = {"cb.example"};
    struct tu_pem def = tu_default_cert();
    sni_a = tu_selfsigned(na, 1, -60, 3600);
    sni_b = tu_selfsigned(nb, 1, -60, 3600);
    struct tu_pem pc = tu_selfsigned(nc, 1, -60, 3600);
    vega_tls_config *scfg = tu_server_cfg(&def), *ccfg;
    VCHECK_EQ(vega_tls_config_new(&ccfg, VEGA_TLS_CLIENT), 0);
    VCHECK_EQ(vega_tls_config_set_ca_pem(ccfg, def.cert, strlen(def.cert)), 0);
    VCHECK_EQ(vega_tls_config_set_ca_pem(ccfg, sni_a.cert, strlen(sni_a.cert)), 0);
    VCHECK_EQ(vega_tls_config_set_ca_pem(ccfg, sni_b.cert, strlen(sni_b.cert)), 0);
    VCHECK_EQ(vega_tls_config_set_ca_pem(ccfg, pc.cert, strlen(pc.cert)), 0);
    vega_tls_cert *ca = cert_of(&sni_a), *cb = cert_of(&sni_b);
    VCHECK_EQ(vega_tls_config_add_sni(scfg, "A.example", ca), 0);
    VCHECK_EQ(vega_tls_config_add_sni(scfg, "*.b.example", cb), 0);
    vega_tls_cert_free(ca); /* the configuration keeps its own reference */
    vega_tls_cert_free(cb);
    expect_subject(ccfg, scfg, "a.example", "CN=a.example");     /* case-insensitive */
    expect_subject(ccfg, scfg, "x.b.example", "CN=x.b.example"); /* wildcard, one label */
    expect_subject(ccfg, scfg, "localhost", "CN=localhost");     /* no entry: the default */
    /* The callback comes first. */
    sni_cb_cert = cert_of(&pc);
    VCHECK_EQ(vega_tls_config_set_sni_callback(scfg, pick, &sni_cb_cert), 0);
    expect_subject(ccfg, scfg, "cb.example", "CN=cb.example");
    expect_subject(ccfg, scfg, "a.example", "CN=a.example");
    VCHECK_EQ(vega_tls_config_set_sni_callback(scfg, NULL, NULL), 0);
    vega_tls_cert_free(sni_cb_cert);
    VCHECK_EQ(vega_tls_config_add_sni(ccfg, "x", NULL), -EINVAL); /* client, no cert */
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&def);
    tu_pem_free(&sni_a);
    tu_pem_free(&sni_b);
    tu_pem_free(&pc);
}

VTEST(sni_selects_certificate_list_and_callback)
{
    tu_run(body_sni, 0);
}

/* ---- mutual TLS ------------------------------------------------------------------------------ */

static void body_mtls(void)
{
    static const char *const srvnames[] = {"localhost"}, *const clinames[] = {"client.example"};
    struct tu_pem ca = tu_ca("Test CA");
    struct tu_pem srv = tu_signed(&ca, "localhost", srvnames, 1);
    struct tu_pem cli = tu_signed(&ca, "alice", clinames, 1);
    vega_tls_config *scfg = tu_server_cfg(&srv);
    VCHECK_EQ(vega_tls_config_set_ca_pem(scfg, ca.cert, strlen(ca.cert)), 0);
    VCHECK_EQ(vega_tls_config_set_verify(scfg, VEGA_TLS_VERIFY_REQUIRE), 0);
    vega_tls_config *with = tu_client_cfg(ca.cert), *without = tu_client_cfg(ca.cert);
    VCHECK_EQ(
        vega_tls_config_set_cert_pem(with, cli.cert, strlen(cli.cert), cli.key, strlen(cli.key)),
        0);
    /* Required and sent. */
    struct tu_pair p = tu_pair_new(with, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    char subj[128];
    VCHECK(vega_tls_peer_subject(p.s, subj, sizeof(subj)) > 0);
    VCHECK_STR(subj, "CN=alice");
    VCHECK_EQ(vega_tls_peer_subject(p.s, subj, 4), VEGA_ERR_NOBUF);
    vega_ssize n = vega_tls_peer_cert_der(p.s, NULL, 0);
    VCHECK(n > 100);
    unsigned char *der = malloc((size_t)n);
    VCHECK_EQ(vega_tls_peer_cert_der(p.s, der, (size_t)n), n);
    VCHECK_EQ(der[0], 0x30); /* a DER SEQUENCE */
    VCHECK_EQ(vega_tls_peer_cert_der(p.s, der, 10), VEGA_ERR_NOBUF);
    free(der);
    VCHECK_EQ(vega_stream_write(p.c, "ok", 2, NULL, DL(1000)), 2);
    tu_read_all(p.s, subj, 2, DL(1000));
    tu_pair_close(&p);

    /* Required and missing: the server says which, the client hears certificate_required
     * (TLS 1.3) when it reads. */
    p = tu_pair_new(without, scfg, "localhost", 0);
    int rc, rs;
    tu_handshake(p.c, p.s, &rc, &rs);
    VCHECK_EQ(rs, VEGA_ERR_TLS_NO_CERT);
    VCHECK(strstr(vega_tls_last_error(p.s), "sent no certificate") != NULL);
    if (rc == 0) { /* TLS 1.3: the client finished first and learns it on its next read */
        char b[4];
        rc = (int)vega_stream_read(p.c, b, sizeof(b), DL(1000));
    }
    VCHECK_EQ(rc, VEGA_ERR_TLS_NO_CERT);
    VCHECK(strstr(vega_tls_last_error(p.c), "certificate_required") != NULL);
    tu_pair_close(&p);

    /* Requested but optional: works without, and with. */
    VCHECK_EQ(vega_tls_config_set_verify(scfg, VEGA_TLS_VERIFY_PEER), 0);
    p = tu_pair_new(without, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    VCHECK_EQ(vega_tls_peer_subject(p.s, subj, sizeof(subj)), 0);
    VCHECK_EQ(vega_tls_peer_cert_der(p.s, NULL, 0), 0);
    tu_pair_close(&p);
    p = tu_pair_new(with, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    VCHECK(vega_tls_peer_subject(p.s, subj, sizeof(subj)) > 0);
    tu_pair_close(&p);

    /* A client certificate from another CA is refused. */
    struct tu_pem rogue_ca = tu_ca("Rogue CA");
    struct tu_pem rogue = tu_signed(&rogue_ca, "mallory", clinames, 1);
    vega_tls_config *bad = tu_client_cfg(ca.cert);
    VCHECK_EQ(vega_tls_config_set_cert_pem(bad, rogue.cert, strlen(rogue.cert), rogue.key,
                                           strlen(rogue.key)),
              0);
    p = tu_pair_new(bad, scfg, "localhost", 0);
    tu_handshake(p.c, p.s, &rc, &rs);
    VCHECK_EQ(rs, VEGA_ERR_TLS_CERT_UNTRUSTED);
    if (rc == 0) {
        char b[4];
        rc = (int)vega_stream_read(p.c, b, sizeof(b), DL(1000));
    }
    VCHECK_EQ(rc, VEGA_ERR_TLS_ALERT);
    VCHECK(strstr(vega_tls_last_error(p.c), "unknown_ca") != NULL);
    VCHECK(strstr(vega_tls_last_error(p.c), "rejected our certificate") != NULL);
    tu_pair_close(&p);

    vega_tls_config_free(bad);
    vega_tls_config_free(scfg);
    vega_tls_config_free(with);
    vega_tls_config_free(without);
    tu_pem_free(&ca);
    tu_pem_free(&srv);
    tu_pem_free(&cli);
    tu_pem_free(&rogue_ca);
    tu_pem_free(&rogue);
}

VTEST(mtls_required_missing_optional_and_rogue)
{
    tu_run(body_mtls, 0);
}

/* ---- resumption ------------------------------------------------------------------------------ */

/* One connection: handshake, a byte each way (TLS 1.3 tickets arrive after the handshake and
 * are taken by the client's read), close. Returns whether it resumed. */
static bool connect_once(vega_tls_config *ccfg, vega_tls_config *scfg, uint16_t port)
{
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", port);
    tu_handshake_ok(&p);
    bool reused = vega_tls_session_reused(p.c);
    VCHECK_EQ(reused, vega_tls_session_reused(p.s));
    char b;
    VCHECK_EQ(vega_stream_write(p.s, "s", 1, NULL, DL(1000)), 1);
    tu_read_all(p.c, &b, 1, DL(1000));
    VCHECK_EQ(vega_stream_write(p.c, "c", 1, NULL, DL(1000)), 1);
    tu_read_all(p.s, &b, 1, DL(1000));
    tu_pair_close(&p);
    return reused;
}

static void resumption(int version)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    VCHECK_EQ(vega_tls_config_set_versions(ccfg, version, version), 0);
    VCHECK(!connect_once(ccfg, scfg, 443));
    VCHECK(connect_once(ccfg, scfg, 443)); /* SSL_session_reused */
    VCHECK(connect_once(ccfg, scfg, 443));
    VCHECK(!connect_once(ccfg, scfg, 8443)); /* another host:port key */
    /* Off on the client: no resumption. */
    VCHECK_EQ(vega_tls_config_set_session_cache(ccfg, 0), 0);
    VCHECK(!connect_once(ccfg, scfg, 443));
    VCHECK(!connect_once(ccfg, scfg, 443));
    /* Off on the server: no tickets, no cache. */
    VCHECK_EQ(vega_tls_config_set_session_cache(ccfg, 16), 0);
    vega_tls_config *scfg2 = tu_server_cfg(&pem);
    VCHECK_EQ(vega_tls_config_set_session_cache(scfg2, 0), 0);
    VCHECK(!connect_once(ccfg, scfg2, 9443));
    VCHECK(!connect_once(ccfg, scfg2, 9443));
    vega_tls_config_free(scfg2);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

static void body_resume13(void)
{
    resumption(VEGA_TLS_1_3);
}

static void body_resume12(void)
{
    resumption(VEGA_TLS_1_2);
}

VTEST(resumption_tls13_tickets)
{
    tu_run(body_resume13, 0);
}

VTEST(resumption_tls12)
{
    tu_run(body_resume12, 0);
}

/* The client cache holds at most N host:port keys, least recently used dropped first. */
size_t vega__tls_cache_len(vega_tls_config *cfg);

static void body_cache_bound(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    VCHECK_EQ(vega_tls_config_set_session_cache(ccfg, 3), 0);
    for (uint16_t port = 1; port <= 5; port++)
        VCHECK(!connect_once(ccfg, scfg, port));
    VCHECK_EQ(vega__tls_cache_len(ccfg), 3);
    VCHECK(connect_once(ccfg, scfg, 5)); /* recent: kept */
    VCHECK(connect_once(ccfg, scfg, 3));
    VCHECK(!connect_once(ccfg, scfg, 1)); /* dropped */
    VCHECK_EQ(vega__tls_cache_len(ccfg), 3);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(session_cache_is_bounded_lru)
{
    tu_run(body_cache_bound, 0);
}

/* A server's TLS 1.2 session cache has a bound too (OpenSSL's own default is 20,480). The
 * clients ask for no tickets, so the server keeps their sessions by ID. */
size_t vega__tls_server_cache_len(vega_tls_config *cfg);

static void body_server_cache_bound(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem);
    VCHECK_EQ(vega_tls_config_set_session_cache(scfg, 4), 0);
    for (int i = 0; i < 10; i++) {
        vega_tls_config *ccfg = tu_client_cfg(pem.cert);
        VCHECK_EQ(vega_tls_config_set_versions(ccfg, VEGA_TLS_1_2, VEGA_TLS_1_2), 0);
        SSL_CTX_set_options(((struct vega_tls_config *)ccfg)->ctx, SSL_OP_NO_TICKET);
        VCHECK(!connect_once(ccfg, scfg, 443));
        vega_tls_config_free(ccfg);
        VCHECK(vega__tls_server_cache_len(scfg) <= 4);
    }
    VCHECK(vega__tls_server_cache_len(scfg) > 0); /* it does cache, within its bound */
    vega_tls_config_free(scfg);
    tu_pem_free(&pem);
}

VTEST(server_session_cache_is_bounded)
{
    tu_run(body_server_cache_bound, 0);
}

/* ---- ciphers, groups, versions --------------------------------------------------------------- */

static void body_ciphers(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    VCHECK_EQ(vega_tls_config_set_ciphers(ccfg, NULL, "TLS_CHACHA20_POLY1305_SHA256"), 0);
    VCHECK_EQ(vega_tls_config_set_groups(ccfg, "P-256"), 0);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    VCHECK_STR(vega_tls_get_cipher(p.c), "TLS_CHACHA20_POLY1305_SHA256");
    tu_pair_close(&p);
    VCHECK_EQ(vega_tls_config_set_versions(ccfg, VEGA_TLS_1_2, VEGA_TLS_1_2), 0);
    VCHECK_EQ(vega_tls_config_set_ciphers(ccfg, "ECDHE-ECDSA-AES256-GCM-SHA384", NULL), 0);
    p = tu_pair_new(ccfg, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    VCHECK_STR(vega_tls_get_cipher(p.c), "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384");
    tu_pair_close(&p);
    VCHECK_EQ(vega_tls_config_set_ciphers(ccfg, "NOT-A-CIPHER", NULL), VEGA_ERR_TLS_CONFIG);
    VCHECK_EQ(vega_tls_config_set_groups(ccfg, "P-999"), VEGA_ERR_TLS_CONFIG);
    VCHECK_EQ(vega_tls_config_set_versions(ccfg, VEGA_TLS_1_3, VEGA_TLS_1_2), -EINVAL);
    VCHECK_EQ(vega_tls_config_set_versions(ccfg, 0x0301, 0), -EINVAL);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(cipher_group_and_version_preferences)
{
    tu_run(body_ciphers, 0);
}

/* ---- public key pinning -------------------------------------------------------------------- */

/* The SHA-256 of the SubjectPublicKeyInfo of a PEM certificate, by OpenSSL directly. */
static void spki_sha256(const char *cert_pem, uint8_t out[32])
{
    BIO *b = BIO_new_mem_buf(cert_pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    VCHECK(x != NULL);
    unsigned char *der = NULL;
    int len = i2d_PUBKEY(X509_get0_pubkey(x), &der);
    VCHECK(len > 0);
    SHA256(der, (size_t)len, out);
    OPENSSL_free(der);
    X509_free(x);
    BIO_free(b);
}

static void body_pinned(void)
{
    struct tu_pem pem = tu_default_cert(), other = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    uint8_t pins[2][32];
    spki_sha256(other.cert, pins[0]); /* another key first: any one of the list may match */
    spki_sha256(pem.cert, pins[1]);
    VCHECK_EQ(vega_tls_config_set_pinned_keys(ccfg, pins[0], 2), 0);
    uint8_t got[3][32];
    memset(got, 0, sizeof got);
    VCHECK_EQ(vega_tls_config_get_pinned_keys(ccfg, got[0], 3), 2);
    VCHECK(memcmp(got, pins, 2 * 32) == 0);
    VCHECK_EQ(vega_tls_config_get_pinned_keys(ccfg, got[2], 1), 2); /* copies 1 */
    VCHECK(memcmp(got[2], pins[0], 32) == 0);
    VCHECK_EQ(vega_tls_config_get_pinned_keys(ccfg, NULL, 0), 2);
    VCHECK_EQ(vega_tls_config_get_pinned_keys(NULL, NULL, 0), 0);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    /* the key the pin is taken over, as the client sees it */
    uint8_t der[512], md[32];
    vega_ssize n = vega_tls_peer_pubkey_der(p.c, NULL, 0);
    VCHECK(n > 50 && (size_t)n <= sizeof(der));
    VCHECK_EQ(vega_tls_peer_pubkey_der(p.c, der, sizeof(der)), n);
    VCHECK_EQ(vega_tls_peer_pubkey_der(p.c, der, 8), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_tls_peer_pubkey_der(p.c, NULL, 8), -EINVAL);
    VCHECK_EQ(vega_tls_peer_pubkey_der(p.s, NULL, 0), 0); /* the client sent no certificate */
    SHA256(der, (size_t)n, md);
    VCHECK(memcmp(md, pins[1], 32) == 0);
    tu_pair_close(&p);

    /* Only a key the server does not have: the handshake fails on the client, and so does
     * every later call; nothing is sent. */
    VCHECK_EQ(vega_tls_config_set_pinned_keys(ccfg, pins[0], 1), 0);
    p = tu_pair_new(ccfg, scfg, "localhost", 0);
    int rc, rs;
    tu_handshake(p.c, p.s, &rc, &rs);
    VCHECK_EQ(rc, VEGA_ERR_TLS_PINNED);
    VCHECK(strstr(vega_tls_last_error(p.c), "pinned public key") != NULL);
    vega_tls_error e;
    VCHECK_EQ(vega_tls_get_error(p.c, &e), 0);
    VCHECK_EQ(e.code, VEGA_ERR_TLS_PINNED);
    VCHECK_EQ(vega_stream_write(p.c, "x", 1, NULL, DL(1000)), VEGA_ERR_TLS_PINNED);
    VCHECK_STR(vega_tls_strerror(VEGA_ERR_TLS_PINNED),
               "the peer's public key does not match the pinned public key");
    tu_pair_close(&p);

    /* Pinning holds without verification too (curl's -k --pinnedpubkey). */
    vega_tls_config *insecure = tu_client_cfg(other.cert);
    VCHECK_EQ(vega_tls_config_set_verify(insecure, VEGA_TLS_VERIFY_NONE), 0);
    VCHECK_EQ(vega_tls_config_set_pinned_keys(insecure, pins[0], 1), 0);
    p = tu_pair_new(insecure, scfg, "localhost", 0);
    tu_handshake(p.c, p.s, &rc, &rs);
    VCHECK_EQ(rc, VEGA_ERR_TLS_PINNED);
    tu_pair_close(&p);

    /* n == 0 turns it off. */
    VCHECK_EQ(vega_tls_config_set_pinned_keys(ccfg, NULL, 0), 0);
    p = tu_pair_new(ccfg, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    tu_pair_close(&p);

    VCHECK_EQ(vega_tls_config_set_pinned_keys(scfg, pins[0], 1), -EINVAL); /* clients only */
    VCHECK_EQ(vega_tls_config_set_pinned_keys(ccfg, NULL, 1), -EINVAL);
    static uint8_t many[VEGA_TLS_MAX_PINNED_KEYS + 1][32];
    VCHECK_EQ(vega_tls_config_set_pinned_keys(ccfg, many[0], VEGA_TLS_MAX_PINNED_KEYS + 1),
              -EINVAL);
    VCHECK_EQ(vega_tls_config_set_pinned_keys(ccfg, many[0], VEGA_TLS_MAX_PINNED_KEYS), 0);
    vega_tls_config_free(insecure);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
    tu_pem_free(&other);
}

VTEST(pinned_public_keys)
{
    tu_run(body_pinned, 0);
}

/* ---- key log --------------------------------------------------------------------------------- */

static void body_keylog(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    char path[] = "/tmp/vega-keylog-XXXXXX";
    int fd = mkstemp(path);
    VCHECK(fd >= 0);
    close(fd);
    VCHECK_EQ(vega_tls_config_set_keylog_file(ccfg, path), 0);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    tu_pair_close(&p);
    VCHECK_EQ(vega_tls_config_set_keylog_file(ccfg, NULL), 0);
    FILE *f = fopen(path, "r");
    VCHECK(f != NULL);
    char line[512];
    int labels = 0, lines = 0;
    while (fgets(line, sizeof(line), f)) {
        lines++;
        /* NSS key log format: LABEL <64 hex client_random> <hex secret> */
        char label[64], cr[80], secret[200];
        VCHECK_EQ(sscanf(line, "%63s %79s %199s", label, cr, secret), 3);
        VCHECK_EQ(strlen(cr), 64);
        if (strcmp(label, "CLIENT_HANDSHAKE_TRAFFIC_SECRET") == 0 ||
            strcmp(label, "SERVER_HANDSHAKE_TRAFFIC_SECRET") == 0 ||
            strcmp(label, "CLIENT_TRAFFIC_SECRET_0") == 0 ||
            strcmp(label, "SERVER_TRAFFIC_SECRET_0") == 0 || strcmp(label, "EXPORTER_SECRET") == 0)
            labels++;
    }
    fclose(f);
    unlink(path);
    VCHECK_EQ(labels, 5);
    VCHECK_EQ(lines, 5);
    VCHECK_EQ(vega_tls_config_set_keylog_file(ccfg, "/nonexistent/dir/keys"), -ENOENT);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(keylog_file_nss_format)
{
    tu_run(body_keylog, 0);
}

/* ---- certificates from files ----------------------------------------------------------------- */

static void write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    VCHECK(f != NULL);
    fputs(s, f);
    fclose(f);
}

static void body_files(void)
{
    struct tu_pem pem = tu_default_cert(), other = tu_default_cert();
    char dir[] = "/tmp/vega-tls-files-XXXXXX";
    VCHECK(mkdtemp(dir) != NULL);
    char cert[64], key[64], both[64], junk[64];
    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    snprintf(key, sizeof(key), "%s/key.pem", dir);
    snprintf(both, sizeof(both), "%s/both.pem", dir);
    snprintf(junk, sizeof(junk), "%s/junk.pem", dir);
    write_file(cert, pem.cert);
    write_file(key, pem.key);
    FILE *f = fopen(both, "w");
    fputs(pem.cert, f);
    fputs(pem.key, f);
    fclose(f);
    write_file(junk, "not a certificate\n");
    vega_tls_config *scfg, *ccfg;
    VCHECK_EQ(vega_tls_config_new(&scfg, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_new(&ccfg, VEGA_TLS_CLIENT), 0);
    VCHECK_EQ(vega_tls_config_set_cert_files(scfg, cert, key), 0);
    VCHECK_EQ(vega_tls_config_set_cert_files(scfg, both, NULL), 0);
    VCHECK_EQ(vega_tls_config_set_cert_files(scfg, "/nonexistent.pem", key), -ENOENT);
    VCHECK_EQ(vega_tls_config_set_cert_files(scfg, junk, key), VEGA_ERR_TLS_CONFIG);
    VCHECK_EQ(vega_tls_config_set_cert_files(scfg, cert, junk), VEGA_ERR_TLS_CONFIG);
    /* A key that belongs to another certificate. */
    VCHECK_EQ(vega_tls_config_set_cert_pem(scfg, pem.cert, strlen(pem.cert), other.key,
                                           strlen(other.key)),
              VEGA_ERR_TLS_CONFIG);
    VCHECK_EQ(vega_tls_config_set_ca_file(ccfg, junk), VEGA_ERR_TLS_CONFIG);
    VCHECK_EQ(vega_tls_config_set_ca_file(ccfg, "/nonexistent.pem"), -ENOENT);
    VCHECK_EQ(vega_tls_config_set_ca_file(ccfg, cert), 0);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    tu_pair_close(&p);
    unlink(cert);
    unlink(key);
    unlink(both);
    unlink(junk);
    rmdir(dir);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
    tu_pem_free(&other);
}

VTEST(certificates_and_cas_from_files)
{
    tu_run(body_files, 0);
}

/* A self-signed certificate straight into a configuration. */
static void body_use_selfsigned(void)
{
    vega_tls_config *scfg, *ccfg = tu_client_cfg(NULL);
    VCHECK_EQ(vega_tls_config_new(&scfg, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_use_selfsigned(scfg), 0);
    VCHECK_EQ(vega_tls_config_role(scfg), VEGA_TLS_SERVER);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
}

VTEST(config_use_selfsigned)
{
    tu_run(body_use_selfsigned, 0);
}
