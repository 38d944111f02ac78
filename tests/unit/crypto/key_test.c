/* SPDX-License-Identifier: MIT */
/* Signature keys: Ed25519 (RFC 8032 §7.1 TEST 1-3), ECDSA P-256/P-384, RSA-PSS and PKCS#1 v1.5
 * with keys and signatures made by the openssl CLI, key formats, and the TLS 1.3
 * CertificateVerify content (RFC 8446 §4.4.3). */
#include <string.h>

#include <vega/crypto.h>

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

/* Checks that out[0..n) equals the hex string want. */
static void check_hex(const uint8_t *out, size_t n, const char *want, int line)
{
    uint8_t w[512];
    size_t wn = unhex(want, w, sizeof(w));
    if (wn != n || memcmp(out, w, n) != 0) {
        char got[1025];
        for (size_t i = 0; i < n && i < 512; i++)
            sprintf(got + 2 * i, "%02x", out[i]);
        vtest_fail(__FILE__, line, "got %s, want %s", got, want);
    }
}
#define CHECK_HEX(out, n, want) check_hex(out, n, want, __LINE__)

/* Test keys and signatures over MSG, made with the openssl CLI (OpenSSL 3.0):
 *   openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 (P-384)
 *   openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048
 *   openssl dgst -sha256 -sign KEY [-sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:digest]
 * They protect nothing. */
static const char P256_KEY_PEM[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgcgz9xJ16yx3wlxP9\n"
    "gfv9VClkWI1xCE3C1WU4uKKWga6hRANCAASGG8jlMTW2AhbmDvipD+ZOCZsYSj5j\n"
    "RDDR9rDW98+/m0XO7D1UpdMRGoFUOH2g1vcwABL7U3XoU0q8Z9G5s+xx\n"
    "-----END PRIVATE KEY-----\n";

static const char P256_PUB_PEM[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEhhvI5TE1tgIW5g74qQ/mTgmbGEo+\n"
    "Y0Qw0faw1vfPv5tFzuw9VKXTERqBVDh9oNb3MAAS+1N16FNKvGfRubPscQ==\n"
    "-----END PUBLIC KEY-----\n";

static const char P256_SIG_HEX[] =
    "304402206ca3af1c23517fa86c38f07a0ce10a1180c51933d7ecb42f4c127928fb4a46a2022023b3f5c0b4d2"
    "1797bfc6ed42b28e9f09b89bf15033f80d24ac90bcb939bc8ecb";

static const char P384_KEY_PEM[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDDeCTfLJMQuTctEpE8+\n"
    "12Tcin8Yx3OluuC9DtpNExdKL8T2zOLnlTlzW1nUK1WG8PGhZANiAAQmpVL4SCt+\n"
    "StFjsONXb5qVwF/f0dVrAfJGBpwizfBS1wmkDZQuJhbylD+j7ZUgp+8KYZVXLoDe\n"
    "GtdQc4PxVyQ616C0eaylUXw8rhn7CKfctPQ6RhlRqSjbCpJHfuuy1JY=\n"
    "-----END PRIVATE KEY-----\n";

static const char P384_PUB_PEM[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEJqVS+EgrfkrRY7DjV2+alcBf39HVawHy\n"
    "RgacIs3wUtcJpA2ULiYW8pQ/o+2VIKfvCmGVVy6A3hrXUHOD8VckOtegtHmspVF8\n"
    "PK4Z+win3LT0OkYZUako2wqSR37rstSW\n"
    "-----END PUBLIC KEY-----\n";

static const char P384_SIG_HEX[] =
    "30650231009654e2e6b2625f57292333ece6573b47c4536a4004399b073fa719b28788cc069e5848ba86a727"
    "2d7e073df653a40cb80230587d3ffe8f4d331381fe29951c70fc83e1e1de27a260790dbbcee3b87a4e655351"
    "14a79c11fc51119a4d3848fd123209";

static const char RSA_KEY_PEM[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDEGOimJWFp5PxP\n"
    "ukznS1eP4ZGkqjRcnDgXZaDE1ddPP74Dc7vSRG4jWy8JFOAxFvg9F7j/M9WwyFZc\n"
    "ggTkecZRBtfwpi+fcCoWsY0pgkWQsI1Rk6zKQDMEQLVGRGlq8hJI7dvp3cVu9H84\n"
    "w8ZFTjWWK5qln41JyMrQsuVNg4Can7m/FIJeIE4VTU2XdJIdFR/dwumvWQxsOIXG\n"
    "Ivw19wl7Jfu3V3eGrp6JJVKyCLGabcO8qjoaYFW1Tw+wYBc7+xfGUCBf5/uixk69\n"
    "wfP0UICeIVHLaKy2oUsT/xqYvp8vTFWiH35YRkaYLNeFPizdN+m73nB+plOW9qNJ\n"
    "JLOP/c3fAgMBAAECggEADibEB1V0QbmaMcC+kwR/Za1AHvN/gt1tONcHMp1CBACU\n"
    "HFiqScLRdfC7JLsicLh5IqOHILejaLYUcWmao8hb9PX6+G1ty2JDT07x4nh5v7bW\n"
    "A/iVxCS86cYnrtH6D5M3mZa8w5RTDq5LThPmx5Kc0GEGMISipBv+8u+uF5lxWvci\n"
    "TCVz7HTBOoIMySFRskVlFSD2MYhCBEBny2B8XQGW7V4Yvmn6zO1qmGIGaeoLQVxh\n"
    "XHaX8JxHgmBDNI6HA/RWFtURbyq6pc9NDs078dVVoLw5MX8j2Pr8f8/jye3nU3xB\n"
    "8BNn8Kb+mLIDn+1d0qm/wBljRiOq69js/p0oxA59zQKBgQD+tD1gOWCK1lagAIJ+\n"
    "xMlDs0f1sWJByEETj1x7TPcYHqR/hgxtHCs0ADcUsLi+1DjYgd6EWMRLf0wuKzlg\n"
    "WwsZ2Qrpe2ZA00CDG0As0/rNRGHTjgdjfi+3fmR+vLU+Wg3s0y9zkhtR1mWaauhv\n"
    "HuEtnDfgomKdG9wggax7DEX9MwKBgQDFGFTzb4t29wMOvYGiIW6sJx83FZ7pW5no\n"
    "7eBdKKhCLWLC4jMTyQlo3iYx4jfFVrHqj8CsTML6jzokPjsCMwEKO156WdIzmI7e\n"
    "fjK1xkbz5RUZ2Mqg0hiQRDNvS2wfII8QlpJKeuD56noPuCx0bNFQLEFLcNKpmPav\n"
    "uwnw1j/0pQKBgQDGacgKJohTf2cZ22vMryWOLKIY/mbpkcNIJnzHvIwcaPqCMP2L\n"
    "Hc92AdjmsEgquA3Uc07RUIkRuwewS5G1wxahuxcqDSv5wddWiqrygOu2bde7Qr/0\n"
    "vH8VdUt6Ay05dlO0sksbv6yyks6xfSi2L5sAudo5jqY9d0+CryGa9VOsSwKBgCJF\n"
    "rN/30YSKR1nU0injLl95HhByDgP+DbFXS+BnJXr8cWP5+W/DUYOOvY2HDLOf86gZ\n"
    "/yL25iCzrySGPbSQMeoZkMAtxkN6j71YrHC3Xbcjapvn+rQkVGkhst/zeYWgH8B+\n"
    "rkmNPHm4sCjzmadVFMCgMWpw3/DlzF+aYowidVSRAoGAE8ns8hNmxYUbKCSiL1aA\n"
    "pRtyKWRCXrOHUQqDP+gm8wkkyJD902K2CimKoBMXBQfS8BMjWYRjaZDjZ34xSFtO\n"
    "L3h13u674vEekwYHKzDTcTuiA4ji4jBTkFqpbiTMIQGt2wMrPsC77h8T7wP0rEgX\n"
    "+LyzMIolUQb2sQxocdk40WE=\n"
    "-----END PRIVATE KEY-----\n";

static const char RSA_PUB_PEM[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAxBjopiVhaeT8T7pM50tX\n"
    "j+GRpKo0XJw4F2WgxNXXTz++A3O70kRuI1svCRTgMRb4PRe4/zPVsMhWXIIE5HnG\n"
    "UQbX8KYvn3AqFrGNKYJFkLCNUZOsykAzBEC1RkRpavISSO3b6d3FbvR/OMPGRU41\n"
    "liuapZ+NScjK0LLlTYOAmp+5vxSCXiBOFU1Nl3SSHRUf3cLpr1kMbDiFxiL8NfcJ\n"
    "eyX7t1d3hq6eiSVSsgixmm3DvKo6GmBVtU8PsGAXO/sXxlAgX+f7osZOvcHz9FCA\n"
    "niFRy2istqFLE/8amL6fL0xVoh9+WEZGmCzXhT4s3Tfpu95wfqZTlvajSSSzj/3N\n"
    "3wIDAQAB\n"
    "-----END PUBLIC KEY-----\n";

static const char RSA_PSS_SIG_HEX[] =
    "9173066924ca760986d7524c866abd106d9d770a73a6615526ae8d0e144db259cb31f70fedf353577e1d60e1"
    "a3833d3c4fd6be1131621df480aecf6ab0bf1951c95c4b9172967f84baafdff930c20027ec7d4848242fac89"
    "7082df24fa9e2fc6d592ab039925a8e7ccdb4a9e965253b74cbd07a581719ea0d4637aef2933b746ef3dfbd6"
    "d17069de689272df367043fed059fa5b39b89fbbc4d6a43bba0c84593001ebcf4104b909c4d0ff4a6636038d"
    "f040ccde44c0d0676b7c1c7651ccd941bd82b9cd1728fd73598e8aa4066b1b7dcd4691744661f1f4e517113f"
    "c92f447807dedd98284171847d6761b546d0e96eab8b244c6f02abe840c2f1df6380f424";

static const char RSA_PKCS1_SIG_HEX[] =
    "390635740a9883de54398900266dbf2cb3b1f3db81ba8fb63aa5a60e2c51287366e74c27abb865aa522d9ee9"
    "19669550438827480b109474d16dca9e21767cf258ff59e92bd90e99e04bc5c63dddccb570ef3fa2faf55cac"
    "e38123ed64a60a6a0de493ffaf36c2f378e3ec8248bbc2ef9db2b8db7782014b4abda8e0ce869a73a65236b1"
    "3e976c9592081bc5c470e0d30b50bd302df8b61049cd2258cc07c69d6e9dc6ce9f7164de082831da82c4d1ab"
    "7b5f2ac79b27640fdaefa75d7cc76ddbbbaae28018faf76ffb403d58ca0e2428ecc331e4360acfed9807e24b"
    "1618067da128eb8771b6c6e7254c9cb7f58545861a6ec5a368b5ab9aa6b1216a7996279e";

static const char P256_KEY_SEC1_PEM[] =
    "-----BEGIN EC PRIVATE KEY-----\n"
    "MHcCAQEEIHIM/cSdessd8JcT/YH7/VQpZFiNcQhNwtVlOLiiloGuoAoGCCqGSM49\n"
    "AwEHoUQDQgAEhhvI5TE1tgIW5g74qQ/mTgmbGEo+Y0Qw0faw1vfPv5tFzuw9VKXT\n"
    "ERqBVDh9oNb3MAAS+1N16FNKvGfRubPscQ==\n"
    "-----END EC PRIVATE KEY-----\n";

static const char P256_KEY_ENCRYPTED_PEM[] =
    "-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
    "MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAgFwLtNOdQEmgICCAAw\n"
    "DAYIKoZIhvcNAgkFADAdBglghkgBZQMEAQIEEBLGkAm/mCXf2XfWPO8c5PUEgZDd\n"
    "YgiXjB/zwyAXMPMEOznPik8CESE5WnGuyJx4HTB8ZTnGVATAkokjnqjNG34R3I8s\n"
    "zCIodf4viGUGi78enB+ADFMNBIDaaFrgnTRxouSOZ0365dNv7L1Cts2JfwX6jRWQ\n"
    "qmt15wfG4tQPwWerbLHuQZko0N2YjIq5c+LUJno2SlMddOW0IqcITYK12K7iOkc=\n"
    "-----END ENCRYPTED PRIVATE KEY-----\n";

static const char MSG[] = "libvega signature test message";

static vega_crypto_key *load_priv(const void *data, size_t len)
{
    vega_crypto_key *k = NULL;
    int r = vega_crypto_key_load_private(&k, data, len);
    if (r != 0)
        vtest_fail(__FILE__, __LINE__, "load_private: %s", vega_crypto_err_name(r));
    VCHECK(vega_crypto_key_is_private(k));
    return k;
}

static vega_crypto_key *load_pub(const void *data, size_t len)
{
    vega_crypto_key *k = NULL;
    int r = vega_crypto_key_load_public(&k, data, len);
    if (r != 0)
        vtest_fail(__FILE__, __LINE__, "load_public: %s", vega_crypto_err_name(r));
    VCHECK(!vega_crypto_key_is_private(k));
    return k;
}

/* Signs MSG with priv, verifies with pub, and checks tampering is caught. */
static void round_trip(vega_crypto_key *priv, vega_crypto_key *pub, vega_crypto_sig_alg alg)
{
    uint8_t sig[1024];
    size_t max = vega_crypto_key_sig_max(priv);
    VCHECK(max > 0 && max <= sizeof(sig));
    VCHECK_EQ(vega_crypto_key_sign(priv, alg, MSG, strlen(MSG), sig, max - 1), VEGA_ERR_NOBUF);
    vega_ssize n = vega_crypto_key_sign(priv, alg, MSG, strlen(MSG), sig, sizeof(sig));
    VCHECK(n > 0 && (size_t)n <= max);
    VCHECK_EQ(vega_crypto_key_verify(pub, alg, MSG, strlen(MSG), sig, (size_t)n), 0);
    VCHECK_EQ(vega_crypto_key_verify(priv, alg, MSG, strlen(MSG), sig, (size_t)n), 0);
    VCHECK_EQ(vega_crypto_key_verify(pub, alg, MSG, strlen(MSG) - 1, sig, (size_t)n),
              VEGA_ERR_CRYPTO_BAD_SIGNATURE);
    sig[n / 2] ^= 0x10;
    VCHECK_EQ(vega_crypto_key_verify(pub, alg, MSG, strlen(MSG), sig, (size_t)n),
              VEGA_ERR_CRYPTO_BAD_SIGNATURE);
    sig[n / 2] ^= 0x10;
    VCHECK_EQ(vega_crypto_key_verify(pub, alg, MSG, strlen(MSG), sig, (size_t)n - 1),
              VEGA_ERR_CRYPTO_BAD_SIGNATURE);
    VCHECK_EQ(vega_crypto_key_verify(pub, alg, MSG, strlen(MSG), sig, 0),
              VEGA_ERR_CRYPTO_BAD_SIGNATURE);
    /* A public key cannot sign. */
    VCHECK_EQ(vega_crypto_key_sign(pub, alg, MSG, strlen(MSG), sig, sizeof(sig)),
              VEGA_ERR_CRYPTO_KEY_MISMATCH);
}

/* Verifies a signature made by the openssl CLI when this test was written. */
static void verify_fixed(vega_crypto_key *pub, vega_crypto_sig_alg alg, const char *sig_hex)
{
    uint8_t sig[512];
    size_t n = unhex(sig_hex, sig, sizeof(sig));
    VCHECK_EQ(vega_crypto_key_verify(pub, alg, MSG, strlen(MSG), sig, n), 0);
    sig[n - 1] ^= 1;
    VCHECK_EQ(vega_crypto_key_verify(pub, alg, MSG, strlen(MSG), sig, n),
              VEGA_ERR_CRYPTO_BAD_SIGNATURE);
}

/* RFC 8032 §7.1, TEST 1-3: Ed25519 is deterministic, so signatures match byte for byte. */
VTEST(ed25519_rfc8032)
{
    static const struct {
        const char *sk, *pk, *msg, *sig;
    } v[] = {
        {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
         "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
         "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
         "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
        {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
         "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
         "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
         "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
        {"c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
         "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
         "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac"
         "18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        /* The raw keys wrapped as PKCS#8 and SubjectPublicKeyInfo (RFC 8410 §7, §4). */
        uint8_t der_priv[48], der_pub[44], msg[2], sig[64];
        unhex("302e020100300506032b657004220420", der_priv, 16);
        unhex(v[i].sk, der_priv + 16, 32);
        unhex("302a300506032b6570032100", der_pub, 12);
        unhex(v[i].pk, der_pub + 12, 32);
        size_t mlen = unhex(v[i].msg, msg, sizeof(msg));
        vega_crypto_key *priv = load_priv(der_priv, sizeof(der_priv));
        vega_crypto_key *pub = load_pub(der_pub, sizeof(der_pub));
        VCHECK_EQ(vega_crypto_key_get_type(priv), VEGA_CRYPTO_KEY_ED25519);
        VCHECK(vega_crypto_key_supports(pub, VEGA_CRYPTO_SIG_ED25519));
        VCHECK(!vega_crypto_key_supports(pub, VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256));
        VCHECK_EQ(vega_crypto_key_sig_max(priv), 64);
        VCHECK_EQ(vega_crypto_key_sign(priv, VEGA_CRYPTO_SIG_ED25519, msg, mlen, sig, 64), 64);
        CHECK_HEX(sig, 64, v[i].sig);
        VCHECK_EQ(vega_crypto_key_verify(pub, VEGA_CRYPTO_SIG_ED25519, msg, mlen, sig, 64), 0);
        sig[0] ^= 1;
        VCHECK_EQ(vega_crypto_key_verify(pub, VEGA_CRYPTO_SIG_ED25519, msg, mlen, sig, 64),
                  VEGA_ERR_CRYPTO_BAD_SIGNATURE);
        round_trip(priv, pub, VEGA_CRYPTO_SIG_ED25519);
        vega_crypto_key_free(priv);
        vega_crypto_key_free(pub);
    }
}

VTEST(ecdsa_p256)
{
    vega_crypto_key *priv = load_priv(P256_KEY_PEM, strlen(P256_KEY_PEM));
    vega_crypto_key *pub = load_pub(P256_PUB_PEM, strlen(P256_PUB_PEM));
    VCHECK_EQ(vega_crypto_key_get_type(pub), VEGA_CRYPTO_KEY_P256);
    VCHECK(vega_crypto_key_supports(pub, VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256));
    /* RFC 8446 §4.2.3: the curve is part of the scheme. */
    VCHECK(!vega_crypto_key_supports(pub, VEGA_CRYPTO_SIG_ECDSA_SECP384R1_SHA384));
    verify_fixed(pub, VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256, P256_SIG_HEX);
    round_trip(priv, pub, VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256);
    uint8_t sig[128] = {0};
    VCHECK_EQ(vega_crypto_key_sign(priv, VEGA_CRYPTO_SIG_ECDSA_SECP384R1_SHA384, MSG, 3, sig,
                                   sizeof(sig)),
              VEGA_ERR_CRYPTO_KEY_MISMATCH);
    VCHECK_EQ(vega_crypto_key_verify(pub, VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA256, MSG, 3, sig, 64),
              VEGA_ERR_CRYPTO_KEY_MISMATCH);
    VCHECK_EQ(vega_crypto_key_verify(pub, 0x0123, MSG, 3, sig, 64), VEGA_ERR_CRYPTO_UNSUPPORTED);
    vega_crypto_key_free(priv);
    vega_crypto_key_free(pub);
}

VTEST(ecdsa_p384)
{
    vega_crypto_key *priv = load_priv(P384_KEY_PEM, strlen(P384_KEY_PEM));
    vega_crypto_key *pub = load_pub(P384_PUB_PEM, strlen(P384_PUB_PEM));
    VCHECK_EQ(vega_crypto_key_get_type(priv), VEGA_CRYPTO_KEY_P384);
    verify_fixed(pub, VEGA_CRYPTO_SIG_ECDSA_SECP384R1_SHA384, P384_SIG_HEX);
    round_trip(priv, pub, VEGA_CRYPTO_SIG_ECDSA_SECP384R1_SHA384);
    vega_crypto_key_free(priv);
    vega_crypto_key_free(pub);
}

VTEST(rsa_pss)
{
    vega_crypto_key *priv = load_priv(RSA_KEY_PEM, strlen(RSA_KEY_PEM));
    vega_crypto_key *pub = load_pub(RSA_PUB_PEM, strlen(RSA_PUB_PEM));
    VCHECK_EQ(vega_crypto_key_get_type(pub), VEGA_CRYPTO_KEY_RSA);
    VCHECK_EQ(vega_crypto_key_sig_max(pub), 256);
    VCHECK(vega_crypto_key_supports(pub, VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA256));
    VCHECK(vega_crypto_key_supports(pub, VEGA_CRYPTO_SIG_RSA_PKCS1_SHA256));
    verify_fixed(pub, VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA256, RSA_PSS_SIG_HEX);
    round_trip(priv, pub, VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA256);
    round_trip(priv, pub, VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA384);
    round_trip(priv, pub, VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA512);
    /* PSS signatures are randomized: two signatures of the same message differ. */
    uint8_t s1[256], s2[256];
    VCHECK_EQ(vega_crypto_key_sign(priv, VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA256, MSG, 5, s1, 256),
              256);
    VCHECK_EQ(vega_crypto_key_sign(priv, VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA256, MSG, 5, s2, 256),
              256);
    VCHECK(memcmp(s1, s2, 256) != 0);
    /* A PSS signature is not a PKCS#1 v1.5 one, and SHA-384 PSS is not SHA-256 PSS. */
    VCHECK_EQ(vega_crypto_key_verify(pub, VEGA_CRYPTO_SIG_RSA_PKCS1_SHA256, MSG, 5, s1, 256),
              VEGA_ERR_CRYPTO_BAD_SIGNATURE);
    VCHECK_EQ(vega_crypto_key_verify(pub, VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA384, MSG, 5, s1, 256),
              VEGA_ERR_CRYPTO_BAD_SIGNATURE);
    vega_crypto_key_free(priv);
    vega_crypto_key_free(pub);
}

/* RSASSA-PKCS1-v1_5 verifies (certificates, older peers) but never signs (RFC 8446 §4.2.3). */
VTEST(rsa_pkcs1_verify_only)
{
    vega_crypto_key *priv = load_priv(RSA_KEY_PEM, strlen(RSA_KEY_PEM));
    vega_crypto_key *pub = load_pub(RSA_PUB_PEM, strlen(RSA_PUB_PEM));
    verify_fixed(pub, VEGA_CRYPTO_SIG_RSA_PKCS1_SHA256, RSA_PKCS1_SIG_HEX);
    uint8_t sig[256];
    VCHECK_EQ(vega_crypto_key_sign(priv, VEGA_CRYPTO_SIG_RSA_PKCS1_SHA256, MSG, 5, sig, 256),
              VEGA_ERR_CRYPTO_UNSUPPORTED);
    /* The PKCS#1 signature does not pass as PSS. */
    unhex(RSA_PKCS1_SIG_HEX, sig, sizeof(sig));
    VCHECK_EQ(vega_crypto_key_verify(pub, VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA256, MSG, strlen(MSG),
                                     sig, 256),
              VEGA_ERR_CRYPTO_BAD_SIGNATURE);
    vega_crypto_key_free(priv);
    vega_crypto_key_free(pub);
}

/* PEM (PKCS#8 and SEC 1) and DER (PKCS#8, SEC 1, SubjectPublicKeyInfo) load the same key. */
VTEST(key_formats)
{
    static const char pkcs8_der[] =
        "308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420720cfdc49d7acb"
        "1df09713fd81fbfd542964588d71084dc2d56538b8a29681aea14403420004861bc8e53135b60216e60ef8"
        "a90fe64e099b184a3e634430d1f6b0d6f7cfbf9b45ceec3d54a5d3111a8154387da0d6f7300012fb5375e8"
        "534abc67d1b9b3ec71";
    static const char sec1_der[] =
        "30770201010420720cfdc49d7acb1df09713fd81fbfd542964588d71084dc2d56538b8a29681aea00a0608"
        "2a8648ce3d030107a14403420004861bc8e53135b60216e60ef8a90fe64e099b184a3e634430d1f6b0d6f7"
        "cfbf9b45ceec3d54a5d3111a8154387da0d6f7300012fb5375e8534abc67d1b9b3ec71";
    static const char spki_der[] =
        "3059301306072a8648ce3d020106082a8648ce3d03010703420004861bc8e53135b60216e60ef8a90fe64e"
        "099b184a3e634430d1f6b0d6f7cfbf9b45ceec3d54a5d3111a8154387da0d6f7300012fb5375e8534abc67"
        "d1b9b3ec71";
    uint8_t der[160];
    vega_crypto_key *pub = load_pub(der, unhex(spki_der, der, sizeof(der)));
    VCHECK_EQ(vega_crypto_key_get_type(pub), VEGA_CRYPTO_KEY_P256);
    vega_crypto_key *keys[3];
    keys[0] = load_priv(der, unhex(pkcs8_der, der, sizeof(der)));
    keys[1] = load_priv(der, unhex(sec1_der, der, sizeof(der)));
    keys[2] = load_priv(P256_KEY_SEC1_PEM, strlen(P256_KEY_SEC1_PEM));
    /* the public half back as the SubjectPublicKeyInfo it was loaded from, from a public or
     * a private key alike (what a public key pin hashes) */
    uint8_t spki[160], back[160];
    size_t spki_len = unhex(spki_der, spki, sizeof spki);
    VCHECK_EQ(vega_crypto_key_public_der(pub, NULL, 0), (vega_ssize)spki_len);
    VCHECK_EQ(vega_crypto_key_public_der(pub, back, spki_len - 1), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_crypto_key_public_der(NULL, back, sizeof back), -EINVAL);
    VCHECK_EQ(vega_crypto_key_public_der(pub, NULL, 8), -EINVAL);
    for (int i = 0; i < 3; i++) {
        VCHECK_EQ(vega_crypto_key_get_type(keys[i]), VEGA_CRYPTO_KEY_P256);
        round_trip(keys[i], pub, VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256);
        memset(back, 0, sizeof back);
        VCHECK_EQ(vega_crypto_key_public_der(keys[i], back, sizeof back), (vega_ssize)spki_len);
        VCHECK(memcmp(back, spki, spki_len) == 0);
        vega_crypto_key_free(keys[i]);
    }
    vega_crypto_key_free(pub);
    vega_crypto_key_free(NULL);
}

VTEST(key_load_errors)
{
    vega_crypto_key *k = (vega_crypto_key *)1;
    /* Encrypted: fails without prompting for a passphrase. */
    VCHECK_EQ(
        vega_crypto_key_load_private(&k, P256_KEY_ENCRYPTED_PEM, strlen(P256_KEY_ENCRYPTED_PEM)),
        VEGA_ERR_CRYPTO_BAD_KEY);
    VCHECK(k == NULL);
    VCHECK_EQ(vega_crypto_key_load_private(&k, "garbage", 7), VEGA_ERR_CRYPTO_BAD_KEY);
    VCHECK_EQ(vega_crypto_key_load_private(&k, "", 0), VEGA_ERR_CRYPTO_BAD_KEY);
    /* A public key is not a private key, and the other way round. */
    VCHECK_EQ(vega_crypto_key_load_private(&k, P256_PUB_PEM, strlen(P256_PUB_PEM)),
              VEGA_ERR_CRYPTO_BAD_KEY);
    VCHECK_EQ(vega_crypto_key_load_public(&k, P256_KEY_PEM, strlen(P256_KEY_PEM)),
              VEGA_ERR_CRYPTO_BAD_KEY);
    /* Truncated PEM. */
    VCHECK_EQ(vega_crypto_key_load_private(&k, P256_KEY_PEM, strlen(P256_KEY_PEM) / 2),
              VEGA_ERR_CRYPTO_BAD_KEY);
    VCHECK_EQ(vega_crypto_key_from_cert(&k, P256_PUB_PEM, strlen(P256_PUB_PEM)),
              VEGA_ERR_CRYPTO_BAD_CERT);
    /* An X25519 key is a key, but not a signature key. */
    uint8_t x25519[48];
    unhex("302e020100300506032b656e04220420", x25519, 16);
    memset(x25519 + 16, 0x11, 32);
    VCHECK_EQ(vega_crypto_key_load_private(&k, x25519, sizeof(x25519)),
              VEGA_ERR_CRYPTO_UNSUPPORTED);
    VCHECK(k == NULL);
}

/* RFC 8446 §4.4.3: the content covered by a CertificateVerify signature. */
VTEST(tls13_cv_content)
{
    uint8_t th[64], out[VEGA_CRYPTO_TLS13_CV_MAX];
    memset(th, 0xab, sizeof(th));
    VCHECK_EQ(vega_crypto_tls13_cv_content(true, th, 32, out, sizeof(out)), 130);
    for (int i = 0; i < 64; i++)
        VCHECK_EQ(out[i], 0x20);
    VCHECK(memcmp(out + 64, "TLS 1.3, server CertificateVerify", 33) == 0);
    VCHECK_EQ(out[97], 0);
    VCHECK(memcmp(out + 98, th, 32) == 0);
    VCHECK_EQ(vega_crypto_tls13_cv_content(false, th, 48, out, sizeof(out)), 146);
    VCHECK(memcmp(out + 64, "TLS 1.3, client CertificateVerify", 33) == 0);
    VCHECK_EQ(vega_crypto_tls13_cv_content(false, th, 48, out, 145), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_crypto_tls13_cv_content(false, th, 0, out, sizeof(out)), -EINVAL);
    VCHECK_EQ(vega_crypto_tls13_cv_content(false, th, 65, out, sizeof(out)), -EINVAL);
    VCHECK_EQ(vega_crypto_tls13_cv_content(true, th, 64, out, sizeof(out)),
              VEGA_CRYPTO_TLS13_CV_MAX);
    /* Byte for byte, RFC 8446 §4.4.3's example layout:
     * 0x20 x 64 || "TLS 1.3, server CertificateVerify" (hex below) || 0x00 || hash. */
    uint8_t want[130];
    memset(want, 0x20, 64);
    unhex("544c5320312e332c20736572766572204365727469666963617465566572696679", want + 64, 33);
    want[97] = 0;
    memset(want + 98, 0xab, 32);
    VCHECK_EQ(vega_crypto_tls13_cv_content(true, th, 32, out, sizeof(out)), 130);
    VCHECK(memcmp(out, want, 130) == 0);
}

/* A whole CertificateVerify: sign the content with one key type, verify with the peer's. */
VTEST(tls13_cv_sign_verify)
{
    vega_crypto_key *priv = load_priv(P256_KEY_PEM, strlen(P256_KEY_PEM));
    vega_crypto_key *pub = load_pub(P256_PUB_PEM, strlen(P256_PUB_PEM));
    uint8_t th[32], content[VEGA_CRYPTO_TLS13_CV_MAX], sig[128];
    VCHECK_EQ(vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, "transcript", 10, th), 0);
    vega_ssize n = vega_crypto_tls13_cv_content(true, th, 32, content, sizeof(content));
    VCHECK_EQ(n, 130);
    vega_ssize s = vega_crypto_key_sign(priv, VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256, content,
                                        (size_t)n, sig, sizeof(sig));
    VCHECK(s > 0);
    VCHECK_EQ(vega_crypto_key_verify(pub, VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256, content,
                                     (size_t)n, sig, (size_t)s),
              0);
    /* The client context string gives a different content: the signature does not carry over. */
    n = vega_crypto_tls13_cv_content(false, th, 32, content, sizeof(content));
    VCHECK_EQ(vega_crypto_key_verify(pub, VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256, content,
                                     (size_t)n, sig, (size_t)s),
              VEGA_ERR_CRYPTO_BAD_SIGNATURE);
    vega_crypto_key_free(priv);
    vega_crypto_key_free(pub);
}
