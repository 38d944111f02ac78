/* SPDX-License-Identifier: MIT */
/* Crypto utilities: random bytes, constant-time compare, wiping, error names and messages. */
#include <string.h>

#include <vega/crypto.h>

#include "vtest.h"

VTEST(random_fills)
{
    uint8_t a[64], b[64], zero[64] = {0};
    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    VCHECK_EQ(vega_crypto_random(a, sizeof(a)), 0);
    VCHECK_EQ(vega_crypto_random(b, sizeof(b)), 0);
    /* 2^-512 chance of a false failure. */
    VCHECK(memcmp(a, zero, sizeof(a)) != 0);
    VCHECK(memcmp(a, b, sizeof(a)) != 0);
    VCHECK_EQ(vega_crypto_random(NULL, 0), 0);
}

VTEST(ct_equal)
{
    uint8_t a[32], b[32];
    memset(a, 0x5a, sizeof(a));
    memcpy(b, a, sizeof(b));
    VCHECK(vega_crypto_ct_equal(a, b, sizeof(a)));
    VCHECK(vega_crypto_ct_equal(a, b, 0));
    for (size_t i = 0; i < sizeof(b); i++) {
        b[i] ^= 0x01;
        VCHECK(!vega_crypto_ct_equal(a, b, sizeof(a)));
        b[i] ^= 0x01;
    }
    b[31] ^= 0x80;
    VCHECK(vega_crypto_ct_equal(a, b, 31)); /* only the first 31 bytes compared */
}

VTEST(cleanse)
{
    uint8_t k[16];
    memset(k, 0xab, sizeof(k));
    vega_crypto_cleanse(k, sizeof(k));
    for (size_t i = 0; i < sizeof(k); i++)
        VCHECK_EQ(k[i], 0);
    vega_crypto_cleanse(NULL, 0);
}

VTEST(error_names)
{
    /* Every code in the range has its own name and message. */
    for (int e = VEGA_ERR_CRYPTO_BASE - 1; e > VEGA_ERR_CRYPTO_LAST; e--) {
        const char *n = vega_crypto_err_name(e);
        VCHECK(strncmp(n, "VEGA_ERR_CRYPTO_", 16) == 0);
        VCHECK(strcmp(vega_crypto_strerror(e), "unknown error") != 0);
        for (int f = e - 1; f > VEGA_ERR_CRYPTO_LAST; f--)
            VCHECK(strcmp(n, vega_crypto_err_name(f)) != 0);
    }
    VCHECK_STR(vega_crypto_err_name(VEGA_ERR_CRYPTO_AUTH), "VEGA_ERR_CRYPTO_AUTH");
    VCHECK_STR(vega_crypto_err_name(VEGA_ERR_CRYPTO_CERT_EXPIRED), "VEGA_ERR_CRYPTO_CERT_EXPIRED");
    /* Other codes fall through to the base vocabulary. */
    VCHECK_STR(vega_crypto_err_name(VEGA_ERR_NOBUF), "VEGA_ERR_NOBUF");
    VCHECK_STR(vega_crypto_err_name(-ENOMEM), "ENOMEM");
    VCHECK_STR(vega_crypto_strerror(0), "success");
    /* The range sits below the base library codes. */
    VCHECK((int)VEGA_ERR_CRYPTO_BASE < (int)VEGA_ERR_LAST);
}
