/* SPDX-License-Identifier: MIT */
/* Certificate chains: parsing (PEM, DER), and verification verdicts against a test CA at a
 * fixed time (valid, expired, not yet valid, unknown CA, name mismatch, bad signature). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <openssl/x509_vfy.h>

#include <vega/crypto.h>

#include "crypto_int.h"
#include "vtest.h"

static size_t unhex(const char *h, uint8_t *out, size_t cap)
{
    size_t n = strlen(h) / 2;
    if (n > cap)
        vtest_fail(__FILE__, __LINE__, "hex too long");
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    return n;
}

/* A test PKI made with the openssl CLI (OpenSSL 3.0; `openssl req` + `openssl ca` with fixed
 * -startdate/-enddate), all P-256/ECDSA-SHA256:
 *   CA_PEM         "vega test CA", 2024-01-01 .. 2044-01-01, the trust anchor
 *   OTHER_CA_PEM   "vega other CA", same dates, not trusted
 *   INTER_PEM      "vega test intermediate" (pathlen 0), issued by CA, 2024 .. 2044
 *   LEAF_PEM       CN=localhost, SAN DNS:localhost IP:127.0.0.1, serverAuth, by CA, 2024 .. 2034
 *   LEAF2_PEM      the same names, issued by INTER, 2024 .. 2034
 *   EXPIRED_PEM    the same names, by CA, 2020-01-01 .. 2021-01-01
 *   WRONG_NAME_PEM CN=example.com, SAN DNS:example.com, by CA, 2024 .. 2034
 *   UNKNOWN_CA_LEAF_PEM  CN=localhost, issued by OTHER_CA
 *   CN_ONLY_PEM    CN=localhost and no subjectAltName, by CA, 2024 .. 2034
 * The leaf key is the P-256 key of key_test.c. */
static const char CA_PEM[] = "-----BEGIN CERTIFICATE-----\n"
                             "MIIBYDCCAQagAwIBAgICEAAwCgYIKoZIzj0EAwIwFzEVMBMGA1UEAwwMdmVnYSB0\n"
                             "ZXN0IENBMB4XDTI0MDEwMTAwMDAwMFoXDTQ0MDEwMTAwMDAwMFowFzEVMBMGA1UE\n"
                             "AwwMdmVnYSB0ZXN0IENBMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEhK6ksQHP\n"
                             "tJsOco+nhLhYVTzYs/XjLRx6T4boVnGa6q7ku1jEtvOUVyLHVueXcCeVoWDX7S07\n"
                             "V1Xl6nhwp/1EraNCMEAwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8EBAMCAQYw\n"
                             "HQYDVR0OBBYEFPn7FS/MZkKUATjdHYXcTLuStDFCMAoGCCqGSM49BAMCA0gAMEUC\n"
                             "IBOvztKKodq3QzysHm5dyWT4ADeM5MEjzWW+gALrOIPAAiEA+Fq2FLOGNUm0IyCd\n"
                             "p7U/xgHQkfgnVQfWCk7lmbQDSj0=\n"
                             "-----END CERTIFICATE-----\n";

static const char OTHER_CA_PEM[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBYzCCAQigAwIBAgICEAEwCgYIKoZIzj0EAwIwGDEWMBQGA1UEAwwNdmVnYSBv\n"
    "dGhlciBDQTAeFw0yNDAxMDEwMDAwMDBaFw00NDAxMDEwMDAwMDBaMBgxFjAUBgNV\n"
    "BAMMDXZlZ2Egb3RoZXIgQ0EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASIW2Hv\n"
    "nd6QXfjfnO4DX79xMTPCsXRs4Ac643ZlH77lD3/mo6RBG0SQAG/gBmV+RAlnSOWT\n"
    "hM1UtyqzeFd+SmMso0IwQDAPBgNVHRMBAf8EBTADAQH/MA4GA1UdDwEB/wQEAwIB\n"
    "BjAdBgNVHQ4EFgQU9ImoaMfqZ5EBV2iYe+FCHwQ0x30wCgYIKoZIzj0EAwIDSQAw\n"
    "RgIhANVBcIEnoL1sTChx+CLR8/s/744fBFYH5+P3LJxHcLx/AiEAx/cJnKHK+BKJ\n"
    "0ruhybK07QN6yqyiqn5g0EYLwpf+Xg0=\n"
    "-----END CERTIFICATE-----\n";

static const char INTER_PEM[] = "-----BEGIN CERTIFICATE-----\n"
                                "MIIBjjCCATSgAwIBAgICEAYwCgYIKoZIzj0EAwIwFzEVMBMGA1UEAwwMdmVnYSB0\n"
                                "ZXN0IENBMB4XDTI0MDEwMTAwMDAwMFoXDTQ0MDEwMTAwMDAwMFowITEfMB0GA1UE\n"
                                "AwwWdmVnYSB0ZXN0IGludGVybWVkaWF0ZTBZMBMGByqGSM49AgEGCCqGSM49AwEH\n"
                                "A0IABF/+R9FhLsJuMGrbXzK4oZFklVma5lAT5RzFt0aCyr3b3ZU5KZ9LyGQqxwHs\n"
                                "3sAsaAdLYL/WbOBUFCaZhzgEizCjZjBkMBIGA1UdEwEB/wQIMAYBAf8CAQAwDgYD\n"
                                "VR0PAQH/BAQDAgEGMB0GA1UdDgQWBBR7ZUyc5+EmPrvffm1WLYQ7x5q5ADAfBgNV\n"
                                "HSMEGDAWgBT5+xUvzGZClAE43R2F3Ey7krQxQjAKBggqhkjOPQQDAgNIADBFAiEA\n"
                                "1NqP24h9DW5JIPNGHLn+nBY4h8W60uSaVdAinJO4DhYCIGEYhJw/KSFq5SDHHLtK\n"
                                "Y0jk+ER/Dq13BT7af0mYYYVS\n"
                                "-----END CERTIFICATE-----\n";

static const char LEAF_PEM[] = "-----BEGIN CERTIFICATE-----\n"
                               "MIIBrzCCAVSgAwIBAgICEAIwCgYIKoZIzj0EAwIwFzEVMBMGA1UEAwwMdmVnYSB0\n"
                               "ZXN0IENBMB4XDTI0MDEwMTAwMDAwMFoXDTM0MDEwMTAwMDAwMFowFDESMBAGA1UE\n"
                               "AwwJbG9jYWxob3N0MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEhhvI5TE1tgIW\n"
                               "5g74qQ/mTgmbGEo+Y0Qw0faw1vfPv5tFzuw9VKXTERqBVDh9oNb3MAAS+1N16FNK\n"
                               "vGfRubPscaOBkjCBjzAMBgNVHRMBAf8EAjAAMA4GA1UdDwEB/wQEAwIHgDATBgNV\n"
                               "HSUEDDAKBggrBgEFBQcDATAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwHQYD\n"
                               "VR0OBBYEFHRFgQcn9GaWQZvsMYc4RQLldpoAMB8GA1UdIwQYMBaAFPn7FS/MZkKU\n"
                               "ATjdHYXcTLuStDFCMAoGCCqGSM49BAMCA0kAMEYCIQCx5aS0RM5IMYpqr5MeQjA6\n"
                               "sEDlQXZtN6r2wCVCBj9yjwIhAPnVEihNL3TZGv0FmajR+M2mfmpsbHAOwn6L1V4l\n"
                               "6fZ3\n"
                               "-----END CERTIFICATE-----\n";

static const char LEAF2_PEM[] = "-----BEGIN CERTIFICATE-----\n"
                                "MIIBtzCCAV6gAwIBAgICEAcwCgYIKoZIzj0EAwIwITEfMB0GA1UEAwwWdmVnYSB0\n"
                                "ZXN0IGludGVybWVkaWF0ZTAeFw0yNDAxMDEwMDAwMDBaFw0zNDAxMDEwMDAwMDBa\n"
                                "MBQxEjAQBgNVBAMMCWxvY2FsaG9zdDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IA\n"
                                "BIYbyOUxNbYCFuYO+KkP5k4JmxhKPmNEMNH2sNb3z7+bRc7sPVSl0xEagVQ4faDW\n"
                                "9zAAEvtTdehTSrxn0bmz7HGjgZIwgY8wDAYDVR0TAQH/BAIwADAOBgNVHQ8BAf8E\n"
                                "BAMCB4AwEwYDVR0lBAwwCgYIKwYBBQUHAwEwGgYDVR0RBBMwEYIJbG9jYWxob3N0\n"
                                "hwR/AAABMB0GA1UdDgQWBBR0RYEHJ/RmlkGb7DGHOEUC5XaaADAfBgNVHSMEGDAW\n"
                                "gBR7ZUyc5+EmPrvffm1WLYQ7x5q5ADAKBggqhkjOPQQDAgNHADBEAiAzEpOc/WcP\n"
                                "t6ImwcYsXIhaQHlhg/MnkJMOp+F2WJIY9gIgS5XHLGFGfWupEueIYHntnSd5arrc\n"
                                "iPXnY9HMjT1RRXU=\n"
                                "-----END CERTIFICATE-----\n";

static const char EXPIRED_PEM[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBrjCCAVSgAwIBAgICEAMwCgYIKoZIzj0EAwIwFzEVMBMGA1UEAwwMdmVnYSB0\n"
    "ZXN0IENBMB4XDTIwMDEwMTAwMDAwMFoXDTIxMDEwMTAwMDAwMFowFDESMBAGA1UE\n"
    "AwwJbG9jYWxob3N0MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEhhvI5TE1tgIW\n"
    "5g74qQ/mTgmbGEo+Y0Qw0faw1vfPv5tFzuw9VKXTERqBVDh9oNb3MAAS+1N16FNK\n"
    "vGfRubPscaOBkjCBjzAMBgNVHRMBAf8EAjAAMA4GA1UdDwEB/wQEAwIHgDATBgNV\n"
    "HSUEDDAKBggrBgEFBQcDATAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwHQYD\n"
    "VR0OBBYEFHRFgQcn9GaWQZvsMYc4RQLldpoAMB8GA1UdIwQYMBaAFPn7FS/MZkKU\n"
    "ATjdHYXcTLuStDFCMAoGCCqGSM49BAMCA0gAMEUCIEBh5MJUChmsvl7ZGE6W7lSv\n"
    "B8QeXPEx6ng9CZUTp3A3AiEAkOhHAN1aZNzrAn+VpWFJqkK1jtLS7edZzEud90m7\n"
    "x5E=\n"
    "-----END CERTIFICATE-----\n";

static const char WRONG_NAME_PEM[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBqzCCAVKgAwIBAgICEAQwCgYIKoZIzj0EAwIwFzEVMBMGA1UEAwwMdmVnYSB0\n"
    "ZXN0IENBMB4XDTI0MDEwMTAwMDAwMFoXDTM0MDEwMTAwMDAwMFowFjEUMBIGA1UE\n"
    "AwwLZXhhbXBsZS5jb20wWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASGG8jlMTW2\n"
    "AhbmDvipD+ZOCZsYSj5jRDDR9rDW98+/m0XO7D1UpdMRGoFUOH2g1vcwABL7U3Xo\n"
    "U0q8Z9G5s+xxo4GOMIGLMAwGA1UdEwEB/wQCMAAwDgYDVR0PAQH/BAQDAgeAMBMG\n"
    "A1UdJQQMMAoGCCsGAQUFBwMBMBYGA1UdEQQPMA2CC2V4YW1wbGUuY29tMB0GA1Ud\n"
    "DgQWBBR0RYEHJ/RmlkGb7DGHOEUC5XaaADAfBgNVHSMEGDAWgBT5+xUvzGZClAE4\n"
    "3R2F3Ey7krQxQjAKBggqhkjOPQQDAgNHADBEAiA+UJz1DVTLURVWRFx3fALxOxvA\n"
    "fxkudCs+n9d12nHqPQIgRVnakSbnAJtzOqKE/cOJjGxGHgDyLqbumtXJudi81tY=\n"
    "-----END CERTIFICATE-----\n";

static const char UNKNOWN_CA_LEAF_PEM[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBrzCCAVWgAwIBAgICEAUwCgYIKoZIzj0EAwIwGDEWMBQGA1UEAwwNdmVnYSBv\n"
    "dGhlciBDQTAeFw0yNDAxMDEwMDAwMDBaFw0zNDAxMDEwMDAwMDBaMBQxEjAQBgNV\n"
    "BAMMCWxvY2FsaG9zdDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABIYbyOUxNbYC\n"
    "FuYO+KkP5k4JmxhKPmNEMNH2sNb3z7+bRc7sPVSl0xEagVQ4faDW9zAAEvtTdehT\n"
    "Srxn0bmz7HGjgZIwgY8wDAYDVR0TAQH/BAIwADAOBgNVHQ8BAf8EBAMCB4AwEwYD\n"
    "VR0lBAwwCgYIKwYBBQUHAwEwGgYDVR0RBBMwEYIJbG9jYWxob3N0hwR/AAABMB0G\n"
    "A1UdDgQWBBR0RYEHJ/RmlkGb7DGHOEUC5XaaADAfBgNVHSMEGDAWgBT0iahox+pn\n"
    "kQFXaJh74UIfBDTHfTAKBggqhkjOPQQDAgNIADBFAiACVlh+f8vPHlXal2PnLGTj\n"
    "qy6U2kSMkp+lJeEGuJC16wIhAMlyuunIDjCfvb+St2yiYhpM9naqMQ1czLkB9S+l\n"
    "wmCv\n"
    "-----END CERTIFICATE-----\n";

static const char CN_ONLY_PEM[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBkDCCATagAwIBAgICEAgwCgYIKoZIzj0EAwIwFzEVMBMGA1UEAwwMdmVnYSB0\n"
    "ZXN0IENBMB4XDTI0MDEwMTAwMDAwMFoXDTM0MDEwMTAwMDAwMFowFDESMBAGA1UE\n"
    "AwwJbG9jYWxob3N0MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEhhvI5TE1tgIW\n"
    "5g74qQ/mTgmbGEo+Y0Qw0faw1vfPv5tFzuw9VKXTERqBVDh9oNb3MAAS+1N16FNK\n"
    "vGfRubPscaN1MHMwDAYDVR0TAQH/BAIwADAOBgNVHQ8BAf8EBAMCB4AwEwYDVR0l\n"
    "BAwwCgYIKwYBBQUHAwEwHQYDVR0OBBYEFHRFgQcn9GaWQZvsMYc4RQLldpoAMB8G\n"
    "A1UdIwQYMBaAFPn7FS/MZkKUATjdHYXcTLuStDFCMAoGCCqGSM49BAMCA0gAMEUC\n"
    "IAClf1UfqN7Mw/7kp9drNr7YdpnOvvn5s+5bRnbNQE2yAiEAkOjkYxTteUxIBEZu\n"
    "WO0a5dT++vIRTFEttaIN2G8WbXM=\n"
    "-----END CERTIFICATE-----\n";

/* 2025-06-01T00:00:00Z: inside every "valid" certificate's period, after the expired one's. */
#define NOW 1748736000
/* 2023-06-01T00:00:00Z: before all of them. */
#define BEFORE 1685577600

static vega_crypto_cert_chain *chain_of(const char *pem1, const char *pem2)
{
    vega_crypto_cert_chain *c;
    VCHECK_EQ(vega_crypto_cert_chain_new(&c), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(c, pem1, strlen(pem1)), 0);
    if (pem2)
        VCHECK_EQ(vega_crypto_cert_chain_add(c, pem2, strlen(pem2)), 0);
    return c;
}

static vega_crypto_cert_store *test_store(void)
{
    vega_crypto_cert_store *s;
    /* Created from an empty directory list: no system CAs, only the test CA. */
    char dir[] = "/tmp/vega-crypto-empty-XXXXXX";
    VCHECK(mkdtemp(dir) != NULL);
    VCHECK_EQ(vega_crypto_cert_store_new(&s, NULL, dir), 0);
    rmdir(dir);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(s, CA_PEM, strlen(CA_PEM)), 0);
    return s;
}

/* Verifies leaf (+ optional intermediate) for host at time t; returns the code and checks
 * that res is filled consistently. */
static int verify(const char *leaf, const char *inter, const char *host, int64_t t,
                  vega_crypto_cert_verify_result *res)
{
    vega_crypto_cert_chain *c = chain_of(leaf, inter);
    vega_crypto_cert_store *s = test_store();
    vega_crypto_cert_verify_opts o = {.host = host, .time = t};
    int r = vega_crypto_cert_chain_verify(c, s, &o, res);
    VCHECK(res->reason != NULL);
    VCHECK_EQ(r == 0, res->x509_error == 0);
    vega_crypto_cert_store_free(s);
    vega_crypto_cert_chain_free(c);
    return r;
}

VTEST(verify_ok_dns_and_ip)
{
    vega_crypto_cert_verify_result res;
    VCHECK_EQ(verify(LEAF_PEM, NULL, "localhost", NOW, &res), 0);
    VCHECK_EQ(res.depth, -1);
    VCHECK_EQ(verify(LEAF_PEM, NULL, "127.0.0.1", NOW, &res), 0);
    /* DNS names compare case-insensitively. */
    VCHECK_EQ(verify(LEAF_PEM, NULL, "LocalHost", NOW, &res), 0);
    /* Without a name to check (a client's chain, seen by a server). */
    VCHECK_EQ(verify(LEAF_PEM, NULL, NULL, NOW, &res), 0);
}

VTEST(verify_ok_with_intermediate)
{
    vega_crypto_cert_verify_result res;
    VCHECK_EQ(verify(LEAF2_PEM, INTER_PEM, "localhost", NOW, &res), 0);
    /* Without the intermediate there is no path to the CA. */
    VCHECK_EQ(verify(LEAF2_PEM, NULL, "localhost", NOW, &res), VEGA_ERR_CRYPTO_CERT_UNKNOWN_CA);
    VCHECK_EQ(res.x509_error, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
    VCHECK_EQ(res.depth, 0);
}

VTEST(verify_expired)
{
    vega_crypto_cert_verify_result res;
    VCHECK_EQ(verify(EXPIRED_PEM, NULL, "localhost", NOW, &res), VEGA_ERR_CRYPTO_CERT_EXPIRED);
    VCHECK_EQ(res.x509_error, X509_V_ERR_CERT_HAS_EXPIRED);
    VCHECK_EQ(res.depth, 0);
    VCHECK_STR(res.reason, "certificate has expired");
    /* In 2020 the leaf was valid but its CA (from 2024) was not: the whole path is checked. */
    VCHECK_EQ(verify(EXPIRED_PEM, NULL, "localhost", 1590969600, &res),
              VEGA_ERR_CRYPTO_CERT_NOT_YET_VALID);
    VCHECK_EQ(res.depth, 1);
}

VTEST(verify_not_yet_valid)
{
    vega_crypto_cert_verify_result res;
    VCHECK_EQ(verify(LEAF_PEM, NULL, "localhost", BEFORE, &res),
              VEGA_ERR_CRYPTO_CERT_NOT_YET_VALID);
    VCHECK_EQ(res.x509_error, X509_V_ERR_CERT_NOT_YET_VALID);
}

VTEST(verify_name_mismatch)
{
    vega_crypto_cert_verify_result res;
    VCHECK_EQ(verify(WRONG_NAME_PEM, NULL, "localhost", NOW, &res),
              VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH);
    VCHECK_EQ(res.x509_error, X509_V_ERR_HOSTNAME_MISMATCH);
    VCHECK_EQ(verify(WRONG_NAME_PEM, NULL, "example.com", NOW, &res), 0);
    /* Wildcards and suffixes do not match by accident. */
    VCHECK_EQ(verify(WRONG_NAME_PEM, NULL, "www.example.com", NOW, &res),
              VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH);
    VCHECK_EQ(verify(LEAF_PEM, NULL, "localhost.example", NOW, &res),
              VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH);
    /* IP addresses match only an iPAddress SAN, never a DNS name. */
    VCHECK_EQ(verify(LEAF_PEM, NULL, "127.0.0.2", NOW, &res), VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH);
    VCHECK_EQ(res.x509_error, X509_V_ERR_IP_ADDRESS_MISMATCH);
    VCHECK_EQ(verify(LEAF_PEM, NULL, "::1", NOW, &res), VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH);
    /* The subject CN is never used as a name (RFC 9525 §6.3), even without a SAN
     * (`openssl verify -verify_hostname localhost` accepts this one). */
    VCHECK_EQ(verify(CN_ONLY_PEM, NULL, "localhost", NOW, &res),
              VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH);
    VCHECK_EQ(verify(CN_ONLY_PEM, NULL, NULL, NOW, &res), 0);
}

VTEST(verify_unknown_ca)
{
    vega_crypto_cert_verify_result res;
    VCHECK_EQ(verify(UNKNOWN_CA_LEAF_PEM, NULL, "localhost", NOW, &res),
              VEGA_ERR_CRYPTO_CERT_UNKNOWN_CA);
    /* A self-signed certificate that is not a trust anchor. */
    VCHECK_EQ(verify(OTHER_CA_PEM, NULL, NULL, NOW, &res), VEGA_ERR_CRYPTO_CERT_UNKNOWN_CA);
    VCHECK_EQ(res.x509_error, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT);
    /* The right chain presented with a foreign root appended: still untrusted. */
    VCHECK_EQ(verify(UNKNOWN_CA_LEAF_PEM, OTHER_CA_PEM, "localhost", NOW, &res),
              VEGA_ERR_CRYPTO_CERT_UNKNOWN_CA);
    VCHECK_EQ(res.x509_error, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN);
}

/* A leaf whose signature bytes were altered after issuance. */
VTEST(verify_bad_signature)
{
    vega_crypto_cert_chain *good = chain_of(LEAF_PEM, NULL);
    const uint8_t *der;
    size_t len;
    VCHECK_EQ(vega_crypto_cert_chain_get_der(good, 0, &der, &len), 0);
    uint8_t bad[2048];
    VCHECK(len <= sizeof(bad));
    memcpy(bad, der, len);
    bad[len - 1] ^= 0x01; /* last byte of the ECDSA s value */
    vega_crypto_cert_chain *c;
    VCHECK_EQ(vega_crypto_cert_chain_new(&c), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add_der(c, bad, len), 0);
    vega_crypto_cert_store *s = test_store();
    vega_crypto_cert_verify_opts o = {.host = "localhost", .time = NOW};
    vega_crypto_cert_verify_result res;
    VCHECK_EQ(vega_crypto_cert_chain_verify(c, s, &o, &res), VEGA_ERR_CRYPTO_CERT_BAD_SIGNATURE);
    VCHECK_EQ(res.x509_error, X509_V_ERR_CERT_SIGNATURE_FAILURE);
    VCHECK_EQ(res.depth, 0);
    /* The untouched one passes with the same store. */
    VCHECK_EQ(vega_crypto_cert_chain_verify(good, s, &o, NULL), 0);
    vega_crypto_cert_store_free(s);
    vega_crypto_cert_chain_free(c);
    vega_crypto_cert_chain_free(good);
}

/* A serverAuth-only leaf is not a client certificate; a CA is not a leaf. */
VTEST(verify_purpose_and_depth)
{
    vega_crypto_cert_chain *c = chain_of(LEAF2_PEM, INTER_PEM);
    vega_crypto_cert_store *s = test_store();
    vega_crypto_cert_verify_opts o = {.time = NOW, .purpose = VEGA_CRYPTO_CERT_CLIENT};
    vega_crypto_cert_verify_result res;
    VCHECK_EQ(vega_crypto_cert_chain_verify(c, s, &o, &res), VEGA_ERR_CRYPTO_CERT_INVALID);
    VCHECK_EQ(res.x509_error, X509_V_ERR_INVALID_PURPOSE);
    o.purpose = VEGA_CRYPTO_CERT_SERVER;
    VCHECK_EQ(vega_crypto_cert_chain_verify(c, s, &o, &res), 0);
    /* One intermediate allowed: leaf -> intermediate -> root fits; 0 means the default. */
    o.max_depth = 1;
    VCHECK_EQ(vega_crypto_cert_chain_verify(c, s, &o, &res), 0);
    o.max_depth = 0;
    VCHECK_EQ(vega_crypto_cert_chain_verify(c, s, &o, &res), 0);
    vega_crypto_cert_store_free(s);
    vega_crypto_cert_chain_free(c);
}

VTEST(verify_args)
{
    vega_crypto_cert_chain *c;
    VCHECK_EQ(vega_crypto_cert_chain_new(&c), 0);
    vega_crypto_cert_store *s = test_store();
    vega_crypto_cert_verify_opts o = {.host = "localhost", .time = NOW};
    vega_crypto_cert_verify_result res;
    VCHECK_EQ(vega_crypto_cert_chain_verify(c, s, &o, &res), -EINVAL);
    VCHECK_EQ(vega_crypto_cert_chain_add(c, LEAF_PEM, strlen(LEAF_PEM)), 0);
    o.host = "";
    VCHECK_EQ(vega_crypto_cert_chain_verify(c, s, &o, &res), -EINVAL);
    vega_crypto_cert_store_free(s);
    vega_crypto_cert_chain_free(c);
}

/* PEM with several blocks, one DER certificate, DER certificates back to back. */
VTEST(chain_parse)
{
    vega_crypto_cert_chain *pem = chain_of(LEAF2_PEM, INTER_PEM);
    VCHECK_EQ(vega_crypto_cert_chain_count(pem), 2);
    const uint8_t *d0, *d1;
    size_t l0, l1;
    VCHECK_EQ(vega_crypto_cert_chain_get_der(pem, 0, &d0, &l0), 0);
    VCHECK_EQ(vega_crypto_cert_chain_get_der(pem, 1, &d1, &l1), 0);
    VCHECK_EQ(vega_crypto_cert_chain_get_der(pem, 2, &d1, &l1), -EINVAL);
    VCHECK(d0[0] == 0x30 && d1[0] == 0x30);
    /* One PEM buffer holding both (and a non-certificate block, skipped). */
    char both[4096];
    snprintf(both, sizeof(both), "%s%s%s", LEAF2_PEM,
             "-----BEGIN OTHER-----\nAAAA\n-----END OTHER-----\n", INTER_PEM);
    vega_crypto_cert_chain *c;
    VCHECK_EQ(vega_crypto_cert_chain_new(&c), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(c, both, strlen(both)), 0);
    VCHECK_EQ(vega_crypto_cert_chain_count(c), 2);
    vega_crypto_cert_chain_free(c);
    /* DER: one, then two back to back; the bytes read back unchanged. */
    uint8_t cat[4096];
    memcpy(cat, d0, l0);
    memcpy(cat + l0, d1, l1);
    VCHECK_EQ(vega_crypto_cert_chain_new(&c), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add_der(c, d0, l0), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(c, cat, l0 + l1), 0);
    VCHECK_EQ(vega_crypto_cert_chain_count(c), 3);
    const uint8_t *d;
    size_t l;
    VCHECK_EQ(vega_crypto_cert_chain_get_der(c, 2, &d, &l), 0);
    VCHECK(l == l1 && memcmp(d, d1, l1) == 0);
    /* The DER-loaded chain verifies like the PEM one. */
    vega_crypto_cert_store *s = test_store();
    vega_crypto_cert_verify_opts o = {.host = "localhost", .time = NOW};
    vega_crypto_cert_chain *dc;
    VCHECK_EQ(vega_crypto_cert_chain_new(&dc), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(dc, cat, l0 + l1), 0);
    VCHECK_EQ(vega_crypto_cert_chain_verify(dc, s, &o, NULL), 0);
    vega_crypto_cert_chain_free(dc);
    vega_crypto_cert_store_free(s);
    vega_crypto_cert_chain_free(c);
    vega_crypto_cert_chain_free(pem);
}

VTEST(chain_parse_errors)
{
    vega_crypto_cert_chain *pem = chain_of(LEAF_PEM, NULL);
    const uint8_t *d;
    size_t l;
    VCHECK_EQ(vega_crypto_cert_chain_get_der(pem, 0, &d, &l), 0);
    uint8_t buf[4096];
    memcpy(buf, d, l);
    vega_crypto_cert_chain *c;
    VCHECK_EQ(vega_crypto_cert_chain_new(&c), 0);
    /* Trailing bytes, truncation, garbage, empty input: rejected, chain unchanged. */
    buf[l] = 0;
    VCHECK_EQ(vega_crypto_cert_chain_add_der(c, buf, l + 1), VEGA_ERR_CRYPTO_BAD_CERT);
    VCHECK_EQ(vega_crypto_cert_chain_add_der(c, buf, l - 1), VEGA_ERR_CRYPTO_BAD_CERT);
    VCHECK_EQ(vega_crypto_cert_chain_add(c, buf, l + 1), VEGA_ERR_CRYPTO_BAD_CERT);
    VCHECK_EQ(vega_crypto_cert_chain_add(c, buf, l - 1), VEGA_ERR_CRYPTO_BAD_CERT);
    VCHECK_EQ(vega_crypto_cert_chain_add(c, "hello", 5), VEGA_ERR_CRYPTO_BAD_CERT);
    VCHECK_EQ(vega_crypto_cert_chain_add(c, "", 0), VEGA_ERR_CRYPTO_BAD_CERT);
    VCHECK_EQ(vega_crypto_cert_chain_add_der(c, buf, 0), VEGA_ERR_CRYPTO_BAD_CERT);
    /* A damaged byte inside the TBSCertificate's framing. */
    buf[5] ^= 0x80;
    VCHECK_EQ(vega_crypto_cert_chain_add_der(c, buf, l), VEGA_ERR_CRYPTO_BAD_CERT);
    /* A good certificate followed by a bad one: all or nothing. */
    memcpy(buf, d, l);
    memcpy(buf + l, d, l);
    buf[l + 5] ^= 0x80;
    VCHECK_EQ(vega_crypto_cert_chain_add(c, buf, 2 * l), VEGA_ERR_CRYPTO_BAD_CERT);
    /* PEM: a truncated block, a key instead of a certificate. */
    VCHECK_EQ(vega_crypto_cert_chain_add(c, LEAF_PEM, strlen(LEAF_PEM) - 30),
              VEGA_ERR_CRYPTO_BAD_CERT);
    static const char not_cert[] = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n";
    VCHECK_EQ(vega_crypto_cert_chain_add(c, not_cert, strlen(not_cert)), VEGA_ERR_CRYPTO_BAD_CERT);
    VCHECK_EQ(vega_crypto_cert_chain_count(c), 0);
    /* The limit. */
    for (int i = 0; i < VEGA_CRYPTO_CERT_CHAIN_MAX; i++)
        VCHECK_EQ(vega_crypto_cert_chain_add_der(c, d, l), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add_der(c, d, l), VEGA_ERR_FULL);
    VCHECK_EQ(vega_crypto_cert_chain_add(c, LEAF_PEM, strlen(LEAF_PEM)), VEGA_ERR_FULL);
    VCHECK_EQ(vega_crypto_cert_chain_count(c), VEGA_CRYPTO_CERT_CHAIN_MAX);
    vega_crypto_cert_chain_free(c);
    vega_crypto_cert_chain_free(pem);
    vega_crypto_cert_chain_free(NULL);
}

/* The leaf's public key, from the chain and from the certificate, verifies the leaf key's
 * signature (made with the openssl CLI over MSG). */
VTEST(chain_key)
{
    static const char MSG[] = "libvega signature test message";
    static const char SIG[] =
        "304402206ca3af1c23517fa86c38f07a0ce10a1180c51933d7ecb42f4c127928fb4a46a2022023b3f5c0b4d2"
        "1797bfc6ed42b28e9f09b89bf15033f80d24ac90bcb939bc8ecb";
    uint8_t sig[72];
    size_t n = unhex(SIG, sig, sizeof(sig));
    vega_crypto_cert_chain *c = chain_of(LEAF_PEM, NULL);
    vega_crypto_key *k1, *k2, *k3;
    VCHECK_EQ(vega_crypto_cert_chain_get_key(c, 0, &k1), 0);
    VCHECK_EQ(vega_crypto_cert_chain_get_key(c, 1, &k3), -EINVAL);
    VCHECK_EQ(vega_crypto_key_from_cert(&k2, LEAF_PEM, strlen(LEAF_PEM)), 0);
    const uint8_t *der;
    size_t len;
    VCHECK_EQ(vega_crypto_cert_chain_get_der(c, 0, &der, &len), 0);
    VCHECK_EQ(vega_crypto_key_from_cert(&k3, der, len), 0);
    vega_crypto_key *keys[3] = {k1, k2, k3};
    for (int i = 0; i < 3; i++) {
        VCHECK_EQ(vega_crypto_key_get_type(keys[i]), VEGA_CRYPTO_KEY_P256);
        VCHECK(!vega_crypto_key_is_private(keys[i]));
        VCHECK_EQ(vega_crypto_key_verify(keys[i], VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256, MSG,
                                         strlen(MSG), sig, n),
                  0);
        vega_crypto_key_free(keys[i]);
    }
    vega_crypto_cert_chain_free(c);
}

static void write_file(const char *path, const char *data)
{
    FILE *f = fopen(path, "w");
    VCHECK(f != NULL);
    VCHECK_EQ(fwrite(data, 1, strlen(data), f), strlen(data));
    VCHECK_EQ(fclose(f), 0);
}

/* CA from a PEM file and from a hashed directory (the CA's subject hash, 44faeec5, from
 * `openssl x509 -hash`); errors for missing ones; the system default store. */
VTEST(store_sources)
{
    char dir[] = "/tmp/vega-crypto-ca-XXXXXX";
    VCHECK(mkdtemp(dir) != NULL);
    char file[256], hashed[256], missing[256];
    snprintf(file, sizeof(file), "%s/ca.pem", dir);
    snprintf(hashed, sizeof(hashed), "%s/44faeec5.0", dir);
    snprintf(missing, sizeof(missing), "%s/nope", dir);
    write_file(file, CA_PEM);
    write_file(hashed, CA_PEM);
    vega_crypto_cert_chain *c = chain_of(LEAF_PEM, NULL);
    vega_crypto_cert_verify_opts o = {.host = "localhost", .time = NOW};
    vega_crypto_cert_store *s;
    VCHECK_EQ(vega_crypto_cert_store_new(&s, file, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_chain_verify(c, s, &o, NULL), 0);
    vega_crypto_cert_store_free(s);
    VCHECK_EQ(vega_crypto_cert_store_new(&s, NULL, dir), 0);
    VCHECK_EQ(vega_crypto_cert_chain_verify(c, s, &o, NULL), 0);
    vega_crypto_cert_store_free(s);
    s = (vega_crypto_cert_store *)1;
    VCHECK_EQ(vega_crypto_cert_store_new(&s, missing, NULL), VEGA_ERR_CRYPTO_CA_LOAD);
    VCHECK(s == NULL);
    VCHECK_EQ(vega_crypto_cert_store_new(&s, NULL, missing), VEGA_ERR_CRYPTO_CA_LOAD);
    VCHECK_EQ(vega_crypto_cert_store_new(&s, NULL, file), VEGA_ERR_CRYPTO_CA_LOAD);
    write_file(missing, "not a certificate\n");
    VCHECK_EQ(vega_crypto_cert_store_new(&s, missing, NULL), VEGA_ERR_CRYPTO_CA_LOAD);
    /* The system store knows nothing of the test CA. */
    VCHECK_EQ(vega_crypto_cert_store_new(&s, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_chain_verify(c, s, &o, NULL), VEGA_ERR_CRYPTO_CERT_UNKNOWN_CA);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(s, "junk", 4), VEGA_ERR_CRYPTO_BAD_CERT);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(s, CA_PEM, strlen(CA_PEM)), 0);
    VCHECK_EQ(vega_crypto_cert_chain_verify(c, s, &o, NULL), 0);
    vega_crypto_cert_store_free(s);
    vega_crypto_cert_store_free(NULL);
    unlink(file);
    unlink(hashed);
    unlink(missing);
    rmdir(dir);
    vega_crypto_cert_chain_free(c);
}

/* DER framing of one TLV (internal helper behind the back-to-back DER split). */
VTEST(der_tlv_len)
{
    static const struct {
        const char *hex;
        vega_ssize want;
    } v[] = {
        {"3000", 2},
        {"300100", 3},
        {"30020000ff", 4},
        {"30810100", 4},
        {"3082000100", 5},
        {"3083000001ff", 6},
        {"308400000001ff", 7},
        {"3085", VEGA_ERR_PROTO},       /* 5 length bytes */
        {"3080", VEGA_ERR_PROTO},       /* indefinite */
        {"30", VEGA_ERR_PROTO},         /* truncated header */
        {"3001", VEGA_ERR_PROTO},       /* truncated contents */
        {"3082ffff00", VEGA_ERR_PROTO}, /* length past the end */
        {"1f8101020000", 6},            /* high tag number */
        {"1f81", VEGA_ERR_PROTO},
        {"1f8181818181", VEGA_ERR_PROTO},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        uint8_t b[16];
        size_t n = unhex(v[i].hex, b, sizeof(b));
        vega_ssize r = vega__crypto_der_tlv_len(b, n);
        if (r != v[i].want)
            vtest_fail(__FILE__, __LINE__, "%s: %zd, want %zd", v[i].hex, r, v[i].want);
    }
}

struct shared {
    vega_crypto_cert_chain *chain;
    vega_crypto_cert_store *store;
    int failures;
};

static void *verify_many(void *arg)
{
    struct shared *sh = arg;
    vega_crypto_cert_verify_opts ok = {.host = "localhost", .time = NOW};
    vega_crypto_cert_verify_opts bad = {.host = "example.com", .time = NOW};
    for (int i = 0; i < 50; i++) {
        if (vega_crypto_cert_chain_verify(sh->chain, sh->store, &ok, NULL) != 0 ||
            vega_crypto_cert_chain_verify(sh->chain, sh->store, &bad, NULL) !=
                VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH)
            __atomic_add_fetch(&sh->failures, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* One chain and one store, verified from several threads at once (run it under TSan too). */
VTEST(verify_shared_across_threads)
{
    struct shared sh = {.chain = chain_of(LEAF2_PEM, INTER_PEM), .store = test_store()};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        VCHECK_EQ(pthread_create(&t[i], NULL, verify_many, &sh), 0);
    for (int i = 0; i < 4; i++)
        VCHECK_EQ(pthread_join(t[i], NULL), 0);
    VCHECK_EQ(sh.failures, 0);
    vega_crypto_cert_store_free(sh.store);
    vega_crypto_cert_chain_free(sh.chain);
}
