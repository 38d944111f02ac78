/* SPDX-License-Identifier: MIT */
/* The TLS 1.3 key schedule: RFC 8448 §3 (simple 1-RTT) and §4 (resumption PSK, binder key)
 * byte for byte, a SHA-384 run against values from an independent HKDF, and the error paths. */
#include <string.h>

#include <vega/quic_wire.h>

#include "tls13_keys.h"
#include "vtest.h"

static void check_hex(const uint8_t *got, size_t n, const char *want, int line)
{
    uint8_t w[128];
    size_t wn = vtest_unhex(want, w, sizeof w);
    if (wn != n || memcmp(got, w, n) != 0) {
        size_t i = 0;
        while (i < n && i < wn && got[i] == w[i])
            i++;
        vtest_fail(__FILE__, line, "mismatch at byte %zu (got %zu bytes, want %zu)", i, n, wn);
    }
}
#define CHECK_HEX(got, n, want) check_hex(got, n, want, __LINE__)

/* RFC 8448 §3: the inputs (the X25519 shared secret and the transcript hashes it prints). */
#define RFC_ECDHE   "8bd4054fb55b9d63fdfbacf9f04b9f0d35e6d63f537563efd46272900f89492d"
#define RFC_TH_SH   "860c06edc07858ee8e78f0e7428c58edd6b43f2ca3e6e95f02ed063cf0e1cad8"
#define RFC_TH_CV   "edb7725fa7a3473b031ec8ef65a2485493900138a2b91291407d7951a06110ed"
#define RFC_TH_SFIN "9608102a0f1ccc6db6250b7b7e417b1a000eaada3daae4777a7686c9ff83df13"
#define RFC_TH_CFIN "209145a96ee8e2a122ff810047cc952684658d6049e86429426db87c54ad143d"
/* RFC 8448 §3: the outputs. */
#define RFC_EARLY  "33ad0a1c607ec03b09e6cd9893680ce210adf300aa1f2660e1b22e10f170f92a"
#define RFC_HS     "1dc826e93606aa6fdc0aadc12f741b01046aa6b99f691ed221a9f0ca043fbeac"
#define RFC_C_HS   "b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21"
#define RFC_S_HS   "b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38"
#define RFC_MASTER "18df06843d13a08bf2a449844c5f8a478001bc4d4c627984d5a41da8d0402919"
#define RFC_C_AP   "9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5"
#define RFC_S_AP   "a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643"
#define RFC_EXP    "fe22f881176eda18eb8f44529e6792c50c9a3f89452f68d8ae311b4309d3cf50"
#define RFC_RES    "7df235f2031d2a051287d02b0241b0bfdaf86cc856231f2d5aba46c434ec196c"
#define RFC_S_FIN  "9b9b141d906337fbd2cbdce71df4deda4ab42c309572cb7fffee5454b78f0718"
#define RFC_C_FIN  "a8ec436d677634ae525ac1fcebe11a039ec17694fac6e98527b642f2edd5ce61"
/* RFC 8448 §4 (resumed 0-RTT handshake): the PSK of ticket nonce 0000 and what it keys. */
#define RFC_PSK        "4ecd0eb6ec3b4d87f5d6028f922ca4c5851a277fd41311c9e62d2c9492e1c4f3"
#define RFC_PSK_EARLY  "9b2188e9b2fc6d64d71dc329900e20bb41915000f678aa839cbb797cb7d8332c"
#define RFC_RES_BINDER "69fe131a3bbad5d63c64eebcc30e395b9d8107726a13d074e389dbc8a4e47256"

static void hex32(const char *h, uint8_t out[32])
{
    if (vtest_unhex(h, out, 32) != 32)
        vtest_fail(__FILE__, __LINE__, "short hex");
}

VTEST(rfc8448_simple_1rtt)
{
    uint8_t ecdhe[32], th_sh[32], th_cv[32], th_sfin[32], th_cfin[32], out[32];
    hex32(RFC_ECDHE, ecdhe);
    hex32(RFC_TH_SH, th_sh);
    hex32(RFC_TH_CV, th_cv);
    hex32(RFC_TH_SFIN, th_sfin);
    hex32(RFC_TH_CFIN, th_cfin);

    struct vega__quic_tls13_schedule s;
    VCHECK_EQ(vega__quic_tls13_schedule_init(&s, VEGA_CRYPTO_SHA256, NULL, 0), 0);
    VCHECK_EQ(s.hash_len, 32u);
    VCHECK_EQ(s.stage, VEGA__QUIC_TLS13_STAGE_EARLY);
    CHECK_HEX(s.early_secret, 32, RFC_EARLY);

    VCHECK_EQ(vega__quic_tls13_schedule_handshake(&s, ecdhe, 32, th_sh, 32), 0);
    VCHECK_EQ(s.stage, VEGA__QUIC_TLS13_STAGE_HANDSHAKE);
    CHECK_HEX(s.handshake_secret, 32, RFC_HS);
    CHECK_HEX(s.client_handshake_traffic, 32, RFC_C_HS);
    CHECK_HEX(s.server_handshake_traffic, 32, RFC_S_HS);

    /* The server's Finished covers ClientHello..CertificateVerify. */
    VCHECK_EQ(vega__quic_tls13_finished(VEGA_CRYPTO_SHA256, s.server_handshake_traffic, 32, th_cv,
                                        32, out),
              0);
    CHECK_HEX(out, 32, RFC_S_FIN);

    VCHECK_EQ(vega__quic_tls13_schedule_application(&s, th_sfin, 32), 0);
    VCHECK_EQ(s.stage, VEGA__QUIC_TLS13_STAGE_APPLICATION);
    CHECK_HEX(s.master_secret, 32, RFC_MASTER);
    CHECK_HEX(s.client_application_traffic, 32, RFC_C_AP);
    CHECK_HEX(s.server_application_traffic, 32, RFC_S_AP);
    CHECK_HEX(s.exporter_master, 32, RFC_EXP);

    /* The client's Finished covers ClientHello..server Finished. */
    VCHECK_EQ(vega__quic_tls13_finished(VEGA_CRYPTO_SHA256, s.client_handshake_traffic, 32, th_sfin,
                                        32, out),
              0);
    CHECK_HEX(out, 32, RFC_C_FIN);

    VCHECK_EQ(vega__quic_tls13_schedule_resumption(&s, th_cfin, 32), 0);
    VCHECK_EQ(s.stage, VEGA__QUIC_TLS13_STAGE_RESUMPTION);
    CHECK_HEX(s.resumption_master, 32, RFC_RES);

    /* The secrets nothing derives from any more are gone. */
    static const uint8_t zero[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    VCHECK(memcmp(s.early_secret, zero, sizeof zero) == 0);
    VCHECK(memcmp(s.handshake_secret, zero, sizeof zero) == 0);
    VCHECK(memcmp(s.master_secret, zero, sizeof zero) == 0);

    vega__quic_tls13_schedule_wipe(&s);
    VCHECK_EQ(s.stage, VEGA__QUIC_TLS13_STAGE_NONE);
    VCHECK(memcmp(s.resumption_master, zero, sizeof zero) == 0);
}

VTEST(rfc8448_finished_check)
{
    uint8_t s_hs[32], th_cv[32], fin[32];
    hex32(RFC_S_HS, s_hs);
    hex32(RFC_TH_CV, th_cv);
    hex32(RFC_S_FIN, fin);
    uint64_t wire = 0;
    VCHECK_EQ(
        vega__quic_tls13_finished_check(VEGA_CRYPTO_SHA256, s_hs, 32, th_cv, 32, fin, 32, &wire),
        0);
    VCHECK_EQ(wire, 0u);
    for (size_t i = 0; i < 32; i += 31) { /* the first and the last byte */
        fin[i] ^= 0x01;
        VCHECK_EQ(vega__quic_tls13_finished_check(VEGA_CRYPTO_SHA256, s_hs, 32, th_cv, 32, fin, 32,
                                                  &wire),
                  VEGA_ERR_PROTO);
        VCHECK_EQ(wire, (uint64_t)VEGA_QUIC_CRYPTO_ERROR + 51);
        fin[i] ^= 0x01;
    }
    /* A truncated, an empty or an overlong verify_data is the peer's fault, not the caller's. */
    uint8_t longer[33];
    memcpy(longer, fin, 32);
    longer[32] = 0;
    VCHECK_EQ(
        vega__quic_tls13_finished_check(VEGA_CRYPTO_SHA256, s_hs, 32, th_cv, 32, fin, 31, NULL),
        VEGA_ERR_PROTO);
    VCHECK_EQ(
        vega__quic_tls13_finished_check(VEGA_CRYPTO_SHA256, s_hs, 32, th_cv, 32, NULL, 0, NULL),
        VEGA_ERR_PROTO);
    VCHECK_EQ(
        vega__quic_tls13_finished_check(VEGA_CRYPTO_SHA256, s_hs, 32, th_cv, 32, longer, 33, NULL),
        VEGA_ERR_PROTO);
}

VTEST(rfc8448_resumption_psk_and_binder)
{
    uint8_t res[32], psk[32], nonce[2] = {0, 0}, out[32];
    hex32(RFC_RES, res);
    VCHECK_EQ(vega__quic_tls13_resumption_psk(VEGA_CRYPTO_SHA256, res, 32, nonce, 2, psk), 0);
    CHECK_HEX(psk, 32, RFC_PSK);

    struct vega__quic_tls13_schedule s;
    VCHECK_EQ(vega__quic_tls13_schedule_init(&s, VEGA_CRYPTO_SHA256, psk, 32), 0);
    CHECK_HEX(s.early_secret, 32, RFC_PSK_EARLY);
    VCHECK_EQ(vega__quic_tls13_schedule_binder_key(&s, false, out), 0);
    CHECK_HEX(out, 32, RFC_RES_BINDER);
    /* "ext binder" is a different label, so a different key. */
    uint8_t ext[32];
    VCHECK_EQ(vega__quic_tls13_schedule_binder_key(&s, true, ext), 0);
    VCHECK(memcmp(out, ext, 32) != 0);
    /* The 0-RTT secret derives from the same early secret (0-RTT keys, RFC 9001 §5.6). */
    uint8_t ch[32] = {0}, cet[32];
    VCHECK_EQ(vega__quic_tls13_schedule_early_traffic(&s, ch, 32, cet), 0);
    VCHECK(memcmp(cet, out, 32) != 0);
    vega__quic_tls13_schedule_wipe(&s);
}

/* SHA-384 (TLS_AES_256_GCM_SHA384): the expected values come from an independent HKDF
 * (Python's hmac/hashlib); the early secret of no PSK is the well-known 7ee8206f... */
VTEST(sha384_schedule)
{
    uint8_t shared[32], th[48], th2[48], out[48];
    memset(shared, 0x11, sizeof shared);
    vtest_unhex("cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
                "8086072ba1e7cc2358baeca134c825a7",
                th, sizeof th); /* SHA-384("abc") */
    vtest_unhex("1165b3406ff0b52a3d24721f785462ca2276c9f454a116c2b2ba20171a7905ea"
                "5a026682eb659c4d5f115c363aa3c79b",
                th2, sizeof th2); /* SHA-384("abcd") */
    struct vega__quic_tls13_schedule s;
    VCHECK_EQ(vega__quic_tls13_schedule_init(&s, VEGA_CRYPTO_SHA384, NULL, 0), 0);
    VCHECK_EQ(s.hash_len, 48u);
    CHECK_HEX(s.early_secret, 48,
              "7ee8206f5570023e6dc7519eb1073bc4e791ad37b5c382aa10ba18e2357e7169"
              "71f9362f2c2fe2a76bfd78dfec4ea9b5");
    /* A SHA-256-sized transcript hash is refused for a SHA-384 schedule. */
    VCHECK_EQ(vega__quic_tls13_schedule_handshake(&s, shared, 32, th, 32), -EINVAL);
    VCHECK_EQ(s.stage, VEGA__QUIC_TLS13_STAGE_EARLY);
    VCHECK_EQ(vega__quic_tls13_schedule_handshake(&s, shared, 32, th, 48), 0);
    CHECK_HEX(s.handshake_secret, 48,
              "32e0915f02d19589deae0b432931d3b57254ba9022b95b1f1d54446730889be8"
              "63a1d3a86165f68e02b2a06447734f81");
    CHECK_HEX(s.client_handshake_traffic, 48,
              "b0e8e86ea7ea5b0831aba4e30c04313b285d91b18b211a26944c4830e3b94622"
              "fd5d35598b07c453538ae0b6369c741c");
    VCHECK_EQ(vega__quic_tls13_schedule_application(&s, th2, 48), 0);
    CHECK_HEX(s.master_secret, 48,
              "44de65fc83862a80c2fa6fe3f6bba2a81117f9dc906bb716117215a009eeaa34"
              "a0876aaaa837f60e4508d16578848a88");
    CHECK_HEX(s.server_application_traffic, 48,
              "e2b4804d9c5106c3fecd186d854dd98a379aafce4480731f8011984bf87badb9"
              "90f6345eb10b2fc722d5738b8a63eaf6");
    /* Finished and the resumption PSK run at 48 bytes too (and the key update of QUIC). */
    VCHECK_EQ(
        vega__quic_tls13_finished(VEGA_CRYPTO_SHA384, s.server_handshake_traffic, 48, th2, 48, out),
        0);
    VCHECK_EQ(vega__quic_tls13_finished_check(VEGA_CRYPTO_SHA384, s.server_handshake_traffic, 48,
                                              th2, 48, out, 48, NULL),
              0);
    VCHECK_EQ(vega__quic_tls13_schedule_resumption(&s, th2, 48), 0);
    VCHECK_EQ(
        vega__quic_tls13_resumption_psk(VEGA_CRYPTO_SHA384, s.resumption_master, 48, NULL, 0, out),
        0);
    VCHECK_EQ(vega_quic_secret_update(VEGA_QUIC_V1, VEGA_CRYPTO_AES_256_GCM,
                                      s.server_application_traffic, 48, out),
              0);
    vega__quic_tls13_schedule_wipe(&s);
}

VTEST(errors)
{
    uint8_t buf[256] = {0}, out[48];
    struct vega__quic_tls13_schedule s;
    /* Only the TLS 1.3 suite hashes. */
    VCHECK_EQ(vega__quic_tls13_schedule_init(&s, VEGA_CRYPTO_SHA1, NULL, 0), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_init(&s, VEGA_CRYPTO_SHA512, NULL, 0), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_init(&s, (vega_crypto_hash_alg)99, NULL, 0), -EINVAL);
    VCHECK_EQ(s.stage, VEGA__QUIC_TLS13_STAGE_NONE);
    /* PSK lengths. */
    VCHECK_EQ(vega__quic_tls13_schedule_init(&s, VEGA_CRYPTO_SHA256, buf,
                                             VEGA__QUIC_TLS13_MAX_PSK_LEN + 1),
              -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_init(&s, VEGA_CRYPTO_SHA256, NULL, 32), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_init(&s, VEGA_CRYPTO_SHA256, buf, 0), -EINVAL);
    VCHECK_EQ(
        vega__quic_tls13_schedule_init(&s, VEGA_CRYPTO_SHA256, buf, VEGA__QUIC_TLS13_MAX_PSK_LEN),
        0);

    /* Out of order: nothing but the early stage's derivations before the handshake. */
    VCHECK_EQ(vega__quic_tls13_schedule_application(&s, buf, 32), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_resumption(&s, buf, 32), -EINVAL);
    /* Bad shared secret and transcript hash lengths leave s as it was. */
    VCHECK_EQ(vega__quic_tls13_schedule_handshake(&s, buf, 0, buf, 32), -EINVAL);
    VCHECK_EQ(
        vega__quic_tls13_schedule_handshake(&s, buf, VEGA__QUIC_TLS13_MAX_SHARED_LEN + 1, buf, 32),
        -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_handshake(&s, buf, 32, buf, 31), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_handshake(&s, buf, 32, buf, 48), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_early_traffic(&s, buf, 48, out), -EINVAL);
    VCHECK_EQ(s.stage, VEGA__QUIC_TLS13_STAGE_EARLY);
    VCHECK_EQ(
        vega__quic_tls13_schedule_handshake(&s, buf, VEGA__QUIC_TLS13_MAX_SHARED_LEN, buf, 32), 0);
    /* Once past the early stage, its derivations and the handshake step are refused. */
    VCHECK_EQ(vega__quic_tls13_schedule_binder_key(&s, false, out), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_early_traffic(&s, buf, 32, out), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_handshake(&s, buf, 32, buf, 32), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_resumption(&s, buf, 32), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_application(&s, buf, 0), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_application(&s, buf, 32), 0);
    VCHECK_EQ(vega__quic_tls13_schedule_application(&s, buf, 32), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_resumption(&s, buf, 48), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_resumption(&s, buf, 32), 0);
    VCHECK_EQ(vega__quic_tls13_schedule_resumption(&s, buf, 32), -EINVAL);
    /* A wiped (or never initialised) schedule derives nothing. */
    vega__quic_tls13_schedule_wipe(&s);
    VCHECK_EQ(vega__quic_tls13_schedule_binder_key(&s, true, out), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_schedule_handshake(&s, buf, 32, buf, 32), -EINVAL);

    /* Finished: key and transcript hash must be the hash's length. */
    VCHECK_EQ(vega__quic_tls13_finished(VEGA_CRYPTO_SHA256, buf, 31, buf, 32, out), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_finished(VEGA_CRYPTO_SHA256, buf, 32, buf, 48, out), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_finished(VEGA_CRYPTO_SHA384, buf, 32, buf, 32, out), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_finished(VEGA_CRYPTO_SHA512, buf, 64, buf, 64, out), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_finished_check(VEGA_CRYPTO_SHA256, buf, 31, buf, 32, buf, 32, NULL),
              -EINVAL);

    /* Resumption PSK: secret length, nonce length, a NULL non-empty nonce. */
    VCHECK_EQ(vega__quic_tls13_resumption_psk(VEGA_CRYPTO_SHA256, buf, 48, buf, 2, out), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_resumption_psk(VEGA_CRYPTO_SHA256, buf, 32, buf, 256, out), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_resumption_psk(VEGA_CRYPTO_SHA256, buf, 32, NULL, 2, out), -EINVAL);
    VCHECK_EQ(vega__quic_tls13_resumption_psk(VEGA_CRYPTO_SHA256, buf, 32, buf, 255, out), 0);
}
