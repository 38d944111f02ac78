/* SPDX-License-Identifier: MIT */
/* The certificate generator (ECDSA P-256, SANs, validity, CA signing) and certificate objects,
 * checked with OpenSSL's own parsers and X509_verify_cert. */
#include <time.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "tls_util.h"

static X509 *parse(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    VCHECK(x != NULL);
    return x;
}

static void sans(X509 *x, char *out, size_t cap)
{
    GENERAL_NAMES *g = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    VCHECK(g != NULL);
    out[0] = '\0';
    for (int i = 0; i < sk_GENERAL_NAME_num(g); i++) {
        GENERAL_NAME *n = sk_GENERAL_NAME_value(g, i);
        char one[64];
        if (n->type == GEN_DNS)
            snprintf(one, sizeof(one), "DNS:%s", (const char *)ASN1_STRING_get0_data(n->d.dNSName));
        else if (n->type == GEN_IPADD)
            snprintf(one, sizeof(one), "IP:%d", ASN1_STRING_length(n->d.iPAddress));
        else
            snprintf(one, sizeof(one), "?");
        strncat(out, one, cap - strlen(out) - 2);
        strncat(out, ",", cap - strlen(out) - 1);
    }
    GENERAL_NAMES_free(g);
}

VTEST(selfsigned_defaults)
{
    char *cert, *key;
    VCHECK_EQ(vega_tls_selfsigned(&cert, &key), 0);
    VCHECK(strstr(cert, "-----BEGIN CERTIFICATE-----") != NULL);
    VCHECK(strstr(key, "-----BEGIN PRIVATE KEY-----") != NULL);
    X509 *x = parse(cert);
    /* ECDSA P-256 */
    EVP_PKEY *pk = X509_get0_pubkey(x);
    VCHECK(EVP_PKEY_is_a(pk, "EC"));
    char group[32];
    size_t gl;
    VCHECK(EVP_PKEY_get_group_name(pk, group, sizeof(group), &gl));
    VCHECK_STR(group, "prime256v1");
    VCHECK_EQ(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
    /* localhost, 127.0.0.1 (4 bytes), ::1 (16 bytes) */
    char s[256];
    sans(x, s, sizeof(s));
    VCHECK_STR(s, "DNS:localhost,IP:4,IP:16,");
    VCHECK_EQ(X509_check_host(x, "localhost", 0, 0, NULL), 1);
    VCHECK_EQ(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
    VCHECK_EQ(X509_check_ip_asc(x, "::1", 0), 1);
    /* Short validity: about an hour ago until 7 days from now. */
    time_t now = time(NULL);
    int days, secs;
    VCHECK(ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notBefore(x)));
    long before = days * 86400L + secs;
    VCHECK(before <= -3500 && before >= -3700);
    VCHECK(ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(x)));
    long after = days * 86400L + secs;
    VCHECK(after >= 7 * 86400L - 100 && after <= 7 * 86400L + 100);
    (void)now;
    /* A leaf for both ends. */
    VCHECK(X509_check_purpose(x, X509_PURPOSE_SSL_SERVER, 0) == 1);
    VCHECK(X509_check_purpose(x, X509_PURPOSE_SSL_CLIENT, 0) == 1);
    VCHECK_EQ(X509_check_ca(x), 0);
    VCHECK_EQ(X509_get_version(x), X509_VERSION_3);
    /* Self-signed: it verifies against itself. */
    VCHECK_EQ(X509_verify(x, pk), 1);
    /* Fresh keys and serials every time. */
    char *cert2, *key2;
    VCHECK_EQ(vega_tls_selfsigned(&cert2, &key2), 0);
    X509 *y = parse(cert2);
    VCHECK(ASN1_INTEGER_cmp(X509_get0_serialNumber(x), X509_get0_serialNumber(y)) != 0);
    VCHECK(strcmp(key, key2) != 0);
    vega_tls_cert *c;
    VCHECK_EQ(vega_tls_cert_new_pem(&c, cert, strlen(cert), key, strlen(key)), 0);
    vega_tls_cert_free(c);
    VCHECK_EQ(vega_tls_cert_new_pem(&c, cert, strlen(cert), key2, strlen(key2)),
              VEGA_ERR_TLS_CONFIG);
    X509_free(x);
    X509_free(y);
    free(cert);
    free(key);
    free(cert2);
    free(key2);
}

VTEST(selfsigned_options_and_ca_chain)
{
    static const char *const names[] = {"api.example", "*.svc.example", "10.1.2.3"};
    vega_tls_selfsigned_opts o;
    vega_tls_selfsigned_opts_init(&o);
    o.is_ca = true;
    o.common_name = "Vega Test CA";
    static const char *const ca_names[] = {"ca.example"};
    o.names = ca_names;
    o.nnames = 1;
    char *ca, *cakey;
    VCHECK_EQ(vega_tls_selfsigned_ex(&ca, &cakey, &o), 0);
    vega_tls_selfsigned_opts_init(&o);
    o.names = names;
    o.nnames = 3;
    o.issuer_cert_pem = ca;
    o.issuer_key_pem = cakey;
    o.not_after_s = 3600;
    char *leaf, *leafkey;
    VCHECK_EQ(vega_tls_selfsigned_ex(&leaf, &leafkey, &o), 0);
    X509 *xc = parse(ca), *xl = parse(leaf);
    VCHECK_EQ(X509_check_ca(xc), 1);
    VCHECK_EQ(X509_check_ca(xl), 0);
    char cn[64];
    X509_NAME_get_text_by_NID(X509_get_subject_name(xl), NID_commonName, cn, sizeof(cn));
    VCHECK_STR(cn, "api.example"); /* the first name */
    X509_NAME_get_text_by_NID(X509_get_issuer_name(xl), NID_commonName, cn, sizeof(cn));
    VCHECK_STR(cn, "Vega Test CA");
    VCHECK_EQ(X509_check_host(xl, "x.svc.example", 0, 0, NULL), 1);
    VCHECK_EQ(X509_check_ip_asc(xl, "10.1.2.3", 0), 1);
    /* The chain verifies with the CA as the trust anchor. */
    X509_STORE *st = X509_STORE_new();
    X509_STORE_add_cert(st, xc);
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, st, xl, NULL);
    VCHECK_EQ(X509_verify_cert(ctx), 1);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(st);
    X509_free(xc);
    X509_free(xl);
    /* Bad names and half an issuer are refused. */
    static const char *const bad[] = {"not a name!"};
    vega_tls_selfsigned_opts_init(&o);
    o.names = bad;
    o.nnames = 1;
    char *c2, *k2;
    VCHECK_EQ(vega_tls_selfsigned_ex(&c2, &k2, &o), -EINVAL);
    vega_tls_selfsigned_opts_init(&o);
    o.issuer_cert_pem = ca;
    VCHECK_EQ(vega_tls_selfsigned_ex(&c2, &k2, &o), -EINVAL);
    o.issuer_key_pem = "garbage";
    VCHECK_EQ(vega_tls_selfsigned_ex(&c2, &k2, &o), VEGA_ERR_TLS_CONFIG);
    VCHECK_EQ(vega_tls_selfsigned_ex(NULL, &k2, NULL), -EINVAL);
    free(ca);
    free(cakey);
    free(leaf);
    free(leafkey);
}

VTEST(cert_objects_are_reference_counted)
{
    char *cert, *key;
    VCHECK_EQ(vega_tls_selfsigned(&cert, &key), 0);
    vega_tls_cert *c;
    VCHECK_EQ(vega_tls_cert_new_pem(&c, cert, strlen(cert), key, strlen(key)), 0);
    vega_tls_config *a, *b;
    VCHECK_EQ(vega_tls_config_new(&a, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_new(&b, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_set_cert(a, c), 0);
    VCHECK_EQ(vega_tls_config_add_sni(b, "x.example", c), 0);
    vega_tls_cert_free(c); /* both configurations keep it */
    vega_tls_config_free(a);
    vega_tls_config_free(b);
    VCHECK_EQ(vega_tls_cert_new_pem(&c, "x", 1, key, strlen(key)), VEGA_ERR_TLS_CONFIG);
    VCHECK_EQ(vega_tls_cert_new_pem(&c, cert, 0, key, strlen(key)), -EINVAL);
    vega_tls_cert_free(NULL);
    vega_tls_config_free(NULL);
    free(cert);
    free(key);
}
