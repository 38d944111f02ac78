/* SPDX-License-Identifier: MIT */
/* Random bytes, constant-time comparison, wiping, and the crypto code names (kept in base). */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "crypto_int.h"

/* The messages live with every other library code in lib/base/err.c. */
const char *vega_crypto_strerror(int err)
{
    return vega_strerror(err);
}

const char *vega_crypto_err_name(int err)
{
    return vega_err_name(err);
}

int vega_crypto_random(void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len) {
        int n = len > INT_MAX ? INT_MAX : (int)len;
        if (RAND_bytes(p, n) != 1)
            return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

bool vega_crypto_ct_equal(const void *a, const void *b, size_t len)
{
    return CRYPTO_memcmp(a, b, len) == 0;
}

void vega_crypto_cleanse(void *p, size_t len)
{
    if (p && len)
        OPENSSL_cleanse(p, len);
}

bool vega__crypto_is_pem(const void *data, size_t len)
{
    /* DER keys and certificates are SEQUENCEs, so they start with 0x30; PEM may start with
     * any text before its first block. Testing the first byte keeps a DER certificate that
     * happens to contain the tag in some string from being read as PEM. */
    static const char tag[] = "-----BEGIN ";
    const uint8_t *p = data;
    return len > 0 && p[0] != 0x30 && memmem(data, len, tag, sizeof(tag) - 1) != NULL;
}
