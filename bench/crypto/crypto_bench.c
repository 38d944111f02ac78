/* SPDX-License-Identifier: MIT */
/* ns per AEAD seal, AEAD open and header protection mask on 1200-byte QUIC packets, through
 * vega_crypto_* and through the straightforward EVP call sequence (the "peer") in the same run,
 * with vega's own EVP fallback path alongside. Usage: vega-crypto-bench [ITERS]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include <vega/crypto.h>

#include "crypto_int.h"

/* A 1200-byte packet: 20-byte short header (the AAD), payload, 16-byte tag. */
#define AAD_LEN 20
#define PT_LEN  (1200 - AAD_LEN - VEGA_CRYPTO_AEAD_TAG_LEN)

static uint8_t key[32] = {1}, hp_key[32] = {2}, nonce[12] = {3}, aad[AAD_LEN] = {4};
static uint8_t buf[1200], ct[1200], sample[16] = {5}, mask[16];
static volatile int sink;

static double thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One operation under test; the context pointers are set before each run. */
typedef int (*op_fn)(void);

static vega_crypto_aead *va;
static vega_crypto_hp *vh;
static EVP_CIPHER_CTX *pe, *pd, *ph;
static bool ph_chacha;

static int v_seal(void)
{
    return (int)vega_crypto_aead_seal(va, nonce, aad, AAD_LEN, buf, PT_LEN, sizeof(buf));
}

static int v_open(void)
{
    memcpy(buf, ct, sizeof(buf));
    return (int)vega_crypto_aead_open(va, nonce, aad, AAD_LEN, buf, PT_LEN + 16);
}

static int v_mask(void)
{
    return vega_crypto_hp_mask(vh, sample, mask);
}

static int p_seal(void)
{
    int n, f;
    return EVP_EncryptInit_ex(pe, NULL, NULL, NULL, nonce) == 1 &&
           EVP_EncryptUpdate(pe, NULL, &n, aad, AAD_LEN) == 1 &&
           EVP_EncryptUpdate(pe, buf, &n, buf, PT_LEN) == 1 &&
           EVP_EncryptFinal_ex(pe, buf + n, &f) == 1 &&
           EVP_CIPHER_CTX_ctrl(pe, EVP_CTRL_AEAD_GET_TAG, 16, buf + PT_LEN) == 1;
}

static int p_open(void)
{
    int n, f;
    memcpy(buf, ct, sizeof(buf));
    return EVP_DecryptInit_ex(pd, NULL, NULL, NULL, nonce) == 1 &&
           EVP_DecryptUpdate(pd, NULL, &n, aad, AAD_LEN) == 1 &&
           EVP_DecryptUpdate(pd, buf, &n, buf, PT_LEN) == 1 &&
           EVP_CIPHER_CTX_ctrl(pd, EVP_CTRL_AEAD_SET_TAG, 16, buf + PT_LEN) == 1 &&
           EVP_DecryptFinal_ex(pd, buf + n, &f) == 1;
}

static int p_mask(void)
{
    static const uint8_t zeros[5];
    int n;
    if (ph_chacha)
        return EVP_EncryptInit_ex(ph, NULL, NULL, NULL, sample) == 1 &&
               EVP_EncryptUpdate(ph, mask, &n, zeros, 5) == 1;
    return EVP_EncryptUpdate(ph, mask, &n, sample, 16) == 1;
}

/* Best of 5 rounds, ns per call. */
static double bench(op_fn f, long iters)
{
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = thread_ns();
        int acc = 0;
        for (long i = 0; i < iters; i++)
            acc += f();
        double ns = (thread_ns() - t0) / (double)iters;
        sink += acc;
        if (ns < best)
            best = ns;
    }
    return best;
}

static void row(const char *alg, const char *op, double vega, double evp_path, double peer)
{
    printf("%-18s %-5s vega_ns=%7.1f vega_evp_ns=%7.1f peer_evp_ns=%7.1f vega/peer=%.2f\n", alg, op,
           vega, evp_path, peer, vega / peer);
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 20000;
    if (iters <= 0 || iters > 10000000) {
        fprintf(stderr, "usage: vega-crypto-bench [ITERS (1..10000000)]\n");
        return 2;
    }
    static const struct {
        vega_crypto_aead_alg alg;
        const char *name, *evp, *hp_evp;
    } algs[] = {
        {VEGA_CRYPTO_AES_128_GCM, "AES-128-GCM", "AES-128-GCM", "AES-128-ECB"},
        {VEGA_CRYPTO_AES_256_GCM, "AES-256-GCM", "AES-256-GCM", "AES-256-ECB"},
        {VEGA_CRYPTO_CHACHA20_POLY1305, "ChaCha20-Poly1305", "ChaCha20-Poly1305", "ChaCha20"},
    };
    printf("# %d-byte packets (%d AAD + %d payload + 16 tag); open includes a 1200-byte memcpy\n",
           1200, AAD_LEN, PT_LEN);
    for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++) {
        size_t klen = vega_crypto_aead_key_len(algs[i].alg);
        vega_crypto_aead *direct, *evp;
        vega_crypto_hp *hdirect, *hevp;
        if (vega__crypto_aead_new_ex(&direct, algs[i].alg, key, klen, true) < 0 ||
            vega__crypto_aead_new_ex(&evp, algs[i].alg, key, klen, false) < 0 ||
            vega__crypto_hp_new_ex(&hdirect, algs[i].alg, hp_key, klen, true) < 0 ||
            vega__crypto_hp_new_ex(&hevp, algs[i].alg, hp_key, klen, false) < 0)
            return 1;
        EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, algs[i].evp, NULL);
        EVP_CIPHER *hc = EVP_CIPHER_fetch(NULL, algs[i].hp_evp, NULL);
        pe = EVP_CIPHER_CTX_new();
        pd = EVP_CIPHER_CTX_new();
        ph = EVP_CIPHER_CTX_new();
        ph_chacha = algs[i].alg == VEGA_CRYPTO_CHACHA20_POLY1305;
        if (!c || !hc || !pe || !pd || !ph || EVP_EncryptInit_ex(pe, c, NULL, key, NULL) != 1 ||
            EVP_DecryptInit_ex(pd, c, NULL, key, NULL) != 1 ||
            EVP_EncryptInit_ex(ph, hc, NULL, hp_key, NULL) != 1 ||
            EVP_CIPHER_CTX_set_padding(ph, 0) != 1)
            return 1;
        /* The peer, vega direct and vega EVP must agree byte for byte. */
        uint8_t m1[16], m2[16], m3[16];
        memset(buf, 0x5a, sizeof(buf));
        va = direct;
        if (v_seal() != PT_LEN + 16)
            return 1;
        memcpy(ct, buf, sizeof(buf));
        memset(buf, 0x5a, sizeof(buf));
        if (!p_seal() || memcmp(ct, buf, sizeof(buf)) != 0)
            return 1;
        va = evp;
        memset(buf, 0x5a, sizeof(buf));
        if (v_seal() != PT_LEN + 16 || memcmp(ct, buf, sizeof(buf)) != 0)
            return 1;
        vh = hdirect;
        v_mask();
        memcpy(m1, mask, 5);
        vh = hevp;
        v_mask();
        memcpy(m2, mask, 5);
        p_mask();
        memcpy(m3, mask, 5);
        if (memcmp(m1, m2, 5) != 0 || memcmp(m1, m3, 5) != 0 || v_open() != PT_LEN || !p_open()) {
            fprintf(stderr, "%s: results differ\n", algs[i].name);
            return 1;
        }
        if (!vega__crypto_aead_is_direct(direct) || !vega__crypto_hp_is_direct(hdirect))
            printf("# %s: no direct provider path here, vega uses EVP\n", algs[i].name);
        double r[3][3];
        for (int k = 0; k < 2; k++) { /* two passes; the second is reported */
            va = direct;
            r[0][0] = bench(v_seal, iters);
            va = evp;
            r[0][1] = bench(v_seal, iters);
            r[0][2] = bench(p_seal, iters);
            va = direct;
            r[1][0] = bench(v_open, iters);
            va = evp;
            r[1][1] = bench(v_open, iters);
            r[1][2] = bench(p_open, iters);
            vh = hdirect;
            r[2][0] = bench(v_mask, iters * 5);
            vh = hevp;
            r[2][1] = bench(v_mask, iters * 5);
            r[2][2] = bench(p_mask, iters * 5);
        }
        row(algs[i].name, "seal", r[0][0], r[0][1], r[0][2]);
        row(algs[i].name, "open", r[1][0], r[1][1], r[1][2]);
        row(algs[i].name, "hp", r[2][0], r[2][1], r[2][2]);
        vega_crypto_aead_free(direct);
        vega_crypto_aead_free(evp);
        vega_crypto_hp_free(hdirect);
        vega_crypto_hp_free(hevp);
        EVP_CIPHER_CTX_free(pe);
        EVP_CIPHER_CTX_free(pd);
        EVP_CIPHER_CTX_free(ph);
        EVP_CIPHER_free(c);
        EVP_CIPHER_free(hc);
    }
    return 0;
}
