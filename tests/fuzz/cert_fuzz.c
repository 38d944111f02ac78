/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the certificate and key parsers of lib/crypto: DER framing
 * (lib/crypto/der.c), certificate chains from PEM or back-to-back DER (lib/crypto/cert.c) and
 * public key loading (lib/crypto/key.c), with round-trip invariants on what parses. Private
 * key loading is left out: it is libcrypto's decoder alone, and at about 1 ms a call (decoder
 * set-up in OpenSSL 3.0) it would make the replay test take half a minute. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/crypto.h>

#include "crypto_int.h"
#include "fuzz_target.h"

static void check_chain(const uint8_t *data, size_t size)
{
    vega_crypto_cert_chain *c, *again;
    if (vega_crypto_cert_chain_new(&c) != 0 || vega_crypto_cert_chain_new(&again) != 0)
        abort();
    int r = vega_crypto_cert_chain_add(c, data, size);
    size_t n = vega_crypto_cert_chain_count(c);
    if (r != 0 && r != VEGA_ERR_CRYPTO_BAD_CERT && r != VEGA_ERR_FULL && r != -ENOMEM)
        abort();
    if ((r == 0) != (n > 0) || n > VEGA_CRYPTO_CERT_CHAIN_MAX)
        abort();
    for (size_t i = 0; i < n; i++) {
        const uint8_t *der;
        size_t len;
        if (vega_crypto_cert_chain_get_der(c, i, &der, &len) != 0 || len == 0)
            abort();
        /* What parsed frames as exactly one TLV; the leaf also parses again alone (only the
         * leaf: each parse sets up libcrypto's key decoders, the bulk of the time here). */
        if (vega__crypto_der_tlv_len(der, len) != (vega_ssize)len)
            abort();
        if (i == 0 && vega_crypto_cert_chain_add_der(again, der, len) != 0)
            abort();
        vega_crypto_key *k;
        if (i == 0 && vega_crypto_cert_chain_get_key(c, i, &k) == 0) {
            if (vega_crypto_key_is_private(k))
                abort();
            vega_crypto_key_free(k);
        }
    }
    vega_crypto_cert_chain_free(again);
    vega_crypto_cert_chain_free(c);
}

static void check_keys(const uint8_t *data, size_t size)
{
    vega_crypto_key *k;
    if (vega_crypto_key_load_public(&k, data, size) == 0) {
        uint8_t sig[8] = {0};
        /* A garbage signature never verifies. */
        if (vega_crypto_key_verify(k, VEGA_CRYPTO_SIG_ECDSA_SECP256R1_SHA256, data, size, sig,
                                   sizeof(sig)) == 0)
            abort();
        vega_crypto_key_free(k);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vega_ssize t = vega__crypto_der_tlv_len(data, size);
    if (t != VEGA_ERR_PROTO && (t < 2 || (size_t)t > size))
        abort();
    check_chain(data, size);
    check_keys(data, size);
    return 0;
}
