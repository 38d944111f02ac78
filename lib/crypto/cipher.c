/* SPDX-License-Identifier: MIT */
/* A keyed cipher context for the AEAD and header-protection code: OpenSSL's default provider
 * called directly through its dispatch table when the cipher comes from it (no EVP layer per
 * packet), else the EVP API; see vega__crypto_cipher in crypto_int.h. */
#include <string.h>
#include <strings.h>

#include <openssl/core_names.h>
#include <openssl/provider.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_ZERO_UPPER 1
#endif

#include "crypto_int.h"

/* ---- keyed cipher: provider dispatch or EVP (see crypto_int.h) ---------------------------- */

/* True when name is one of the colon-separated names in list (case-insensitive, as fetching
 * matches them). */
static bool names_have(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (len == n && strncasecmp(p, name, n) == 0)
            return true;
        p = colon ? colon + 1 : NULL;
    }
    return false;
}

/* Fills c's dispatch pointers from the one implementation of name in prov. False when there
 * is not exactly one or it lacks a function we call; c is then left for the EVP path. */
static bool find_dispatch(vega__crypto_cipher *c, const OSSL_PROVIDER *prov, const char *name)
{
    int no_store = 0;
    const OSSL_ALGORITHM *algs = OSSL_PROVIDER_query_operation(prov, OSSL_OP_CIPHER, &no_store);
    const OSSL_ALGORITHM *hit = NULL;
    int hits = 0;
    for (const OSSL_ALGORITHM *a = algs; a && a->algorithm_names; a++)
        if (names_have(a->algorithm_names, name)) {
            hit = a;
            hits++;
        }
    OSSL_FUNC_cipher_newctx_fn *newctx = NULL;
    if (hits == 1)
        for (const OSSL_DISPATCH *d = hit->implementation; d->function_id != 0; d++) {
            switch (d->function_id) {
            case OSSL_FUNC_CIPHER_NEWCTX:
                newctx = OSSL_FUNC_cipher_newctx(d);
                break;
            case OSSL_FUNC_CIPHER_FREECTX:
                c->freectx = OSSL_FUNC_cipher_freectx(d);
                break;
            case OSSL_FUNC_CIPHER_ENCRYPT_INIT:
                c->einit = OSSL_FUNC_cipher_encrypt_init(d);
                break;
            case OSSL_FUNC_CIPHER_DECRYPT_INIT:
                c->dinit = OSSL_FUNC_cipher_decrypt_init(d);
                break;
            case OSSL_FUNC_CIPHER_UPDATE:
                c->update = OSSL_FUNC_cipher_update(d);
                break;
            case OSSL_FUNC_CIPHER_FINAL:
                c->final = OSSL_FUNC_cipher_final(d);
                break;
            case OSSL_FUNC_CIPHER_GET_CTX_PARAMS:
                c->get_params = OSSL_FUNC_cipher_get_ctx_params(d);
                break;
            case OSSL_FUNC_CIPHER_SET_CTX_PARAMS:
                c->set_params = OSSL_FUNC_cipher_set_ctx_params(d);
                break;
            default:
                break;
            }
        }
    bool ok = newctx && c->freectx && c->einit && c->dinit && c->update && c->final &&
              c->get_params && c->set_params;
    if (ok)
        c->pctx = newctx(OSSL_PROVIDER_get0_provider_ctx(prov));
    OSSL_PROVIDER_unquery_operation(prov, OSSL_OP_CIPHER, algs);
    return ok && c->pctx;
}

/* On an AVX-512 machine, libcrypto 3.0's ChaCha20 and Poly1305 code leaves the upper halves of
 * the vector registers dirty, and the SSE code that runs next (memcpy, strcmp, the caller's)
 * pays for it: measured, a zero-length ChaCha20-Poly1305 seal took ~450 ns, ~230 ns with a
 * VZEROUPPER after each call into the cipher, and a 1164-byte one ~1150 ns against ~860.
 * The instruction costs about a cycle; through the intrinsic the compiler knows what it
 * clobbers. */
#ifdef HAVE_ZERO_UPPER
__attribute__((target("avx"))) static void zero_upper_avx(void)
{
    _mm256_zeroupper();
}
#endif

static inline void zero_upper(const vega__crypto_cipher *c)
{
#ifdef HAVE_ZERO_UPPER
    if (c->zero_upper)
        zero_upper_avx();
#else
    (void)c;
#endif
}

int vega__crypto_cipher_init(vega__crypto_cipher *c, const char *name, const uint8_t *key,
                             size_t key_len, bool direct)
{
    memset(c, 0, sizeof(*c));
    c->alg = EVP_CIPHER_fetch(NULL, name, NULL);
    if (!c->alg)
        return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
    bool ecb = EVP_CIPHER_get_mode(c->alg) == EVP_CIPH_ECB_MODE;
#ifdef HAVE_ZERO_UPPER
    /* VZEROUPPER needs AVX (and the OS's support, which the check includes); only the
     * ChaCha20 code leaves the state dirty (the AES-NI paths measured the same without it). */
    c->zero_upper = strncasecmp(name, "ChaCha20", 8) == 0 && __builtin_cpu_supports("avx");
#endif
    const OSSL_PROVIDER *prov = EVP_CIPHER_get0_provider(c->alg);
    if (direct && prov && strcmp(OSSL_PROVIDER_get0_name(prov), "default") == 0 &&
        find_dispatch(c, prov, name)) {
        unsigned int pad = 0;
        OSSL_PARAM params[2] = {OSSL_PARAM_construct_uint(OSSL_CIPHER_PARAM_PADDING, &pad),
                                OSSL_PARAM_construct_end()};
        if (c->einit(c->pctx, key, key_len, NULL, 0, NULL) == 1 &&
            (!ecb || c->set_params(c->pctx, params) == 1))
            return 0;
    } else {
        c->pctx = NULL;
        c->evp = EVP_CIPHER_CTX_new();
        if (c->evp && EVP_CipherInit_ex2(c->evp, c->alg, key, NULL, 1, NULL) == 1 &&
            (size_t)EVP_CIPHER_CTX_get_key_length(c->evp) == key_len &&
            (!ecb || EVP_CIPHER_CTX_set_padding(c->evp, 0) == 1))
            return 0;
    }
    vega__crypto_cipher_fini(c);
    return vega__crypto_fail(VEGA_ERR_CRYPTO_LIBCRYPTO);
}

bool vega__crypto_cipher_start(vega__crypto_cipher *c, int enc, const uint8_t *iv, size_t iv_len)
{
    if (c->pctx)
        return (enc ? c->einit : c->dinit)(c->pctx, NULL, 0, iv, iv_len, NULL) == 1;
    /* EVP takes the IV length from the cipher; the callers pass exactly that. */
    return EVP_CipherInit_ex2(c->evp, NULL, NULL, iv, enc, NULL) == 1;
}

bool vega__crypto_cipher_update(vega__crypto_cipher *c, uint8_t *out, const uint8_t *in, size_t len)
{
    bool ok;
    if (c->pctx) {
        size_t n = 0;
        /* outsize: in place, or associated data (no output) of the same length. */
        ok = c->update(c->pctx, out, &n, len, in, len) == 1 && (n == len || !out);
    } else {
        int n = 0;
        ok = EVP_CipherUpdate(c->evp, out, &n, in, (int)len) == 1 && ((size_t)n == len || !out);
    }
    zero_upper(c);
    return ok;
}

bool vega__crypto_cipher_final(vega__crypto_cipher *c, uint8_t *out)
{
    bool ok;
    if (c->pctx) {
        size_t n = 0;
        ok = c->final(c->pctx, out, &n, 0) == 1 && n == 0;
    } else {
        int n = 0;
        ok = EVP_CipherFinal_ex(c->evp, out, &n) == 1 && n == 0;
    }
    zero_upper(c);
    return ok;
}

bool vega__crypto_cipher_tag(vega__crypto_cipher *c, uint8_t *tag, size_t len, bool get)
{
    OSSL_PARAM params[2] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, len),
        OSSL_PARAM_construct_end(),
    };
    if (c->pctx)
        return (get ? c->get_params(c->pctx, params) : c->set_params(c->pctx, params)) == 1;
    return (get ? EVP_CIPHER_CTX_get_params(c->evp, params)
                : EVP_CIPHER_CTX_set_params(c->evp, params)) == 1;
}

void vega__crypto_cipher_fini(vega__crypto_cipher *c)
{
    if (c->pctx)
        c->freectx(c->pctx); /* the provider cleanses its key schedule */
    EVP_CIPHER_CTX_free(c->evp);
    EVP_CIPHER_free(c->alg);
    memset(c, 0, sizeof(*c));
}
