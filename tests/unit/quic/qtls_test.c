/* SPDX-License-Identifier: MIT */
/* The QUIC TLS 1.3 handshake (lib/quic/qtls*.c): client and server engines linked in memory
 * through every suite, group and key type, HelloRetryRequest, mutual TLS, the failure alerts,
 * resumption and 0-RTT, determinism, and the codecs against RFC 8448 §3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/quic_wire.h>

#include "qtls.h"
#include "qtls_certs.h"
#include "qtls_int.h"
#include "vtest.h"

#define WALL_2030 1893456000000ull /* 2030-01-01, inside every test certificate's validity */
#define WALL_2200 7258118400000ull /* after every test certificate expired */

/* ---- test PKI -------------------------------------------------------------------------------- */

struct pki {
    vega_crypto_cert_store *ca, *other_ca;
    vega_crypto_cert_chain *p256, *rsa, *ed, *client;
    vega_crypto_key *p256_key, *rsa_key, *ed_key, *client_key;
};
static struct pki P;

static void load_chain(vega_crypto_cert_chain **c, const char *pem)
{
    VCHECK_EQ(vega_crypto_cert_chain_new(c), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(*c, pem, strlen(pem)), 0);
}

static void pki_load(void)
{
    if (P.ca)
        return;
    VCHECK_EQ(vega_crypto_cert_store_new(&P.ca, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(P.ca, QT_CA_PEM, strlen(QT_CA_PEM)), 0);
    VCHECK_EQ(vega_crypto_cert_store_new(&P.other_ca, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(P.other_ca, QT_OTHER_CA_PEM, strlen(QT_OTHER_CA_PEM)),
              0);
    load_chain(&P.p256, QT_SRV_P256_PEM);
    load_chain(&P.rsa, QT_SRV_RSA_PEM);
    load_chain(&P.ed, QT_SRV_ED_PEM);
    load_chain(&P.client, QT_CLIENT_PEM);
    VCHECK_EQ(vega_crypto_key_load_private(&P.p256_key, QT_SRV_P256_KEY, strlen(QT_SRV_P256_KEY)),
              0);
    VCHECK_EQ(vega_crypto_key_load_private(&P.rsa_key, QT_SRV_RSA_KEY, strlen(QT_SRV_RSA_KEY)), 0);
    VCHECK_EQ(vega_crypto_key_load_private(&P.ed_key, QT_SRV_ED_KEY, strlen(QT_SRV_ED_KEY)), 0);
    VCHECK_EQ(vega_crypto_key_load_private(&P.client_key, QT_CLIENT_KEY, strlen(QT_CLIENT_KEY)), 0);
}

static void pki_free(void)
{
    vega_crypto_cert_store_free(P.ca);
    vega_crypto_cert_store_free(P.other_ca);
    vega_crypto_cert_chain_free(P.p256);
    vega_crypto_cert_chain_free(P.rsa);
    vega_crypto_cert_chain_free(P.ed);
    vega_crypto_cert_chain_free(P.client);
    vega_crypto_key_free(P.p256_key);
    vega_crypto_key_free(P.rsa_key);
    vega_crypto_key_free(P.ed_key);
    vega_crypto_key_free(P.client_key);
    memset(&P, 0, sizeof P);
}

static void client_cfg(vega_quic_tls_opts *c)
{
    pki_load();
    memset(c, 0, sizeof(*c));
    c->ca = P.ca;
    c->server_name = "localhost";
    c->alpn[0] = "h3";
    c->n_alpn = 1;
}

static const uint8_t TICKET_KEY[32] = "0123456789abcdef0123456789abcdef";

static void server_cfg(vega_quic_tls_opts *c)
{
    pki_load();
    memset(c, 0, sizeof(*c));
    c->chain = P.p256;
    c->key = P.p256_key;
    c->alpn[0] = "h3";
    c->n_alpn = 1;
}

/* ---- the pump: two engines, bytes moved per level ------------------------------------------- */

#define LOG_MAX 65536

struct side {
    struct vega__qtls *t;
    bool server;
    uint8_t *out[VEGA_QUIC_NLEVELS]; /* bytes waiting for the peer */
    size_t out_len[VEGA_QUIC_NLEVELS];
    uint8_t secret[VEGA_QUIC_NLEVELS][2][48];
    size_t secret_len[VEGA_QUIC_NLEVELS][2];
    char order[64]; /* the secret calls: "Ew Hr Hw Aw Ar " */
    uint8_t peer_tp[256];
    size_t peer_tp_len;
    int tp_calls;
    uint8_t session[QT_MAX_SESSION];
    size_t session_len;
    uint64_t rng;
    bool seeded;
    uint8_t *log; /* everything sent, for the determinism check */
    size_t log_len;
    bool saw_cert; /* a Certificate went out at HANDSHAKE */
    int rc;
    uint64_t wire;
};

static int cb_send(void *ud, vega_quic_level level, const uint8_t *data, size_t len)
{
    struct side *s = ud;
    uint8_t *p = realloc(s->out[level], s->out_len[level] + len);
    if (!p)
        return -12;
    memcpy(p + s->out_len[level], data, len);
    s->out[level] = p;
    s->out_len[level] += len;
    if (s->log_len + len <= LOG_MAX) {
        memcpy(s->log + s->log_len, data, len);
        s->log_len += len;
    }
    /* Walk the messages: note a Certificate (resumed handshakes must send none). */
    for (size_t off = 0; level == VEGA_QUIC_LEVEL_HANDSHAKE && off + 4 <= len;
         off += 4 + qt_be(data + off + 1, 3))
        if (data[off] == QT_CERTIFICATE)
            s->saw_cert = true;
    return 0;
}

static int cb_secret(void *ud, vega_quic_level level, bool write, vega_crypto_aead_alg aead,
                     vega_crypto_hash_alg hash, const uint8_t *secret, size_t len)
{
    struct side *s = ud;
    (void)aead;
    VCHECK_EQ(len, vega_crypto_hash_len(hash));
    memcpy(s->secret[level][write], secret, len);
    s->secret_len[level][write] = len;
    char tag[4] = {"IEHA"[level], write ? 'w' : 'r', ' ', 0};
    strncat(s->order, tag, sizeof s->order - strlen(s->order) - 1);
    return 0;
}

static int cb_peer_tp(void *ud, const uint8_t *tp, size_t len, uint64_t *wire_err)
{
    struct side *s = ud;
    (void)wire_err;
    VCHECK(len <= sizeof s->peer_tp);
    memcpy(s->peer_tp, tp, len);
    s->peer_tp_len = len;
    s->tp_calls++;
    return 0;
}

static void cb_session(void *ud, const uint8_t *blob, size_t len)
{
    struct side *s = ud;
    VCHECK(len <= sizeof s->session);
    memcpy(s->session, blob, len);
    s->session_len = len;
}

static int cb_rand(void *ud, void *buf, size_t len)
{
    struct side *s = ud;
    uint8_t *p = buf;
    for (size_t i = 0; i < len; i++) {
        s->rng ^= s->rng << 13;
        s->rng ^= s->rng >> 7;
        s->rng ^= s->rng << 17;
        p[i] = (uint8_t)(s->rng >> 32);
    }
    return 0;
}

static const uint8_t CLIENT_TP[] = "client transport parameters";
static const uint8_t SERVER_TP[] = "server transport parameters";

static void side_init(struct side *s, bool server, const vega_quic_tls_opts *cfg, const uint8_t *tp,
                      size_t tp_len, uint64_t wall_ms, uint64_t seed)
{
    memset(s, 0, sizeof(*s));
    s->server = server;
    s->log = malloc(LOG_MAX);
    VCHECK(s->log != NULL);
    s->rng = seed;
    struct vega__qtls_cbs cbs = {.ud = s,
                                 .send = cb_send,
                                 .secret = cb_secret,
                                 .peer_tp = cb_peer_tp,
                                 .session = cb_session,
                                 .rand = seed ? cb_rand : NULL};
    VCHECK_EQ(vega__qtls_new(&s->t, server, cfg, tp, tp_len, wall_ms, &cbs), 0);
}

static void side_fini(struct side *s)
{
    vega__qtls_free(s->t);
    for (int l = 0; l < VEGA_QUIC_NLEVELS; l++)
        free(s->out[l]);
    free(s->log);
    memset(s, 0, sizeof(*s));
}

/* Moves bytes both ways until nothing moves or one side fails. Returns false on a failure. */
static bool pump(struct side *c, struct side *s)
{
    for (bool moved = true; moved;) {
        moved = false;
        for (int dir = 0; dir < 2; dir++) {
            struct side *from = dir ? s : c, *to = dir ? c : s;
            for (int l = 0; l < VEGA_QUIC_NLEVELS; l++) {
                if (!from->out_len[l])
                    continue;
                uint8_t *data = from->out[l];
                size_t len = from->out_len[l];
                from->out[l] = NULL;
                from->out_len[l] = 0;
                /* Deliver in two pieces to exercise reassembly. */
                size_t half = len / 2;
                to->rc = vega__qtls_recv(to->t, (vega_quic_level)l, data, half, &to->wire);
                if (to->rc == 0)
                    to->rc = vega__qtls_recv(to->t, (vega_quic_level)l, data + half, len - half,
                                             &to->wire);
                free(data);
                if (to->rc != 0)
                    return false;
                moved = true;
            }
        }
    }
    return true;
}

struct hs {
    struct side c, s;
};

/* A handshake from start to the end of the flights. */
static bool handshake(struct hs *h, const vega_quic_tls_opts *cc, const vega_quic_tls_opts *sc,
                      uint64_t wall_ms, uint64_t seed)
{
    side_init(&h->c, false, cc, CLIENT_TP, sizeof CLIENT_TP, wall_ms, seed);
    side_init(&h->s, true, sc, SERVER_TP, sizeof SERVER_TP, wall_ms, seed ? seed + 1 : 0);
    h->c.rc = vega__qtls_start(h->c.t, &h->c.wire);
    VCHECK_EQ(h->c.rc, 0);
    return pump(&h->c, &h->s);
}

static void hs_fini(struct hs *h)
{
    side_fini(&h->c);
    side_fini(&h->s);
}

/* Both sides done, with matching secrets, ALPN and transport parameters. */
static void check_success(struct hs *h, int line)
{
    struct side *c = &h->c, *s = &h->s;
    if (!vega__qtls_is_done(c->t) || !vega__qtls_is_done(s->t))
        vtest_fail(__FILE__, line, "not done (client %s / server %s)", vega__qtls_reason(c->t),
                   vega__qtls_reason(s->t));
    /* 0-RTT keys only have to match when the server took them. */
    int first = vega__qtls_early_status(s->t) == VEGA__QTLS_EARLY_ACCEPTED
                    ? VEGA_QUIC_LEVEL_EARLY
                    : VEGA_QUIC_LEVEL_HANDSHAKE;
    for (int l = first; l < VEGA_QUIC_NLEVELS; l++)
        for (int w = 0; w < 2; w++) {
            if (c->secret_len[l][w] != s->secret_len[l][!w] ||
                memcmp(c->secret[l][w], s->secret[l][!w], c->secret_len[l][w]) != 0)
                vtest_fail(__FILE__, line, "secret mismatch at level %d write %d", l, w);
        }
    if (!c->secret_len[VEGA_QUIC_LEVEL_APP][1] || !c->secret_len[VEGA_QUIC_LEVEL_HANDSHAKE][1])
        vtest_fail(__FILE__, line, "missing secrets");
    size_t al, bl;
    const uint8_t *a = vega__qtls_alpn(c->t, &al), *b = vega__qtls_alpn(s->t, &bl);
    if (!a || !b || al != bl || memcmp(a, b, al) != 0)
        vtest_fail(__FILE__, line, "ALPN differs");
    if (c->peer_tp_len != sizeof SERVER_TP || memcmp(c->peer_tp, SERVER_TP, sizeof SERVER_TP) ||
        s->peer_tp_len != sizeof CLIENT_TP || memcmp(s->peer_tp, CLIENT_TP, sizeof CLIENT_TP) ||
        c->tp_calls != 1 || s->tp_calls != 1)
        vtest_fail(__FILE__, line, "transport parameters not delivered intact");
    if (vega__qtls_aead(c->t) != vega__qtls_aead(s->t) ||
        vega__qtls_hash(c->t) != vega__qtls_hash(s->t))
        vtest_fail(__FILE__, line, "suite differs");
}
#define CHECK_SUCCESS(h) check_success(h, __LINE__)

/* RFC 8448 §3 (Simple 1-RTT Handshake): the handshake messages, as the trace prints them. */
static const char RFC_CH[] =
    "01 00 00 c0 03 03 cb 34 ec b1 e7 81 63 ba 1c 38 c6 da cb 19 6a 6d ff a2 1a 8d 99 12"
    "ec 18 a2 ef 62 83 02 4d ec e7 00 00 06 13 01 13 03 13 02 01 00 00 91 00 00 00 0b 00"
    "09 00 00 06 73 65 72 76 65 72 ff 01 00 01 00 00 0a 00 14 00 12 00 1d 00 17 00 18 00"
    "19 01 00 01 01 01 02 01 03 01 04 00 23 00 00 00 33 00 26 00 24 00 1d 00 20 99 38 1d"
    "e5 60 e4 bd 43 d2 3d 8e 43 5a 7d ba fe b3 c0 6e 51 c1 3c ae 4d 54 13 69 1e 52 9a af"
    "2c 00 2b 00 03 02 03 04 00 0d 00 20 00 1e 04 03 05 03 06 03 02 03 08 04 08 05 08 06"
    "04 01 05 01 06 01 02 01 04 02 05 02 06 02 02 02 00 2d 00 02 01 01 00 1c 00 02 40 01";
static const char RFC_SH[] =
    "02 00 00 56 03 03 a6 af 06 a4 12 18 60 dc 5e 6e 60 24 9c d3 4c 95 93 0c 8a c5 cb 14"
    "34 da c1 55 77 2e d3 e2 69 28 00 13 01 00 00 2e 00 33 00 24 00 1d 00 20 c9 82 88 76"
    "11 20 95 fe 66 76 2b db f7 c6 72 e1 56 d6 cc 25 3b 83 3d f1 dd 69 b1 b0 4e 75 1f 0f"
    "00 2b 00 02 03 04";
/* EncryptedExtensions, Certificate, CertificateVerify, Finished (657 bytes). */
static const char RFC_FLIGHT[] =
    "08 00 00 24 00 22 00 0a 00 14 00 12 00 1d 00 17 00 18 00 19 01 00 01 01 01 02 01 03"
    "01 04 00 1c 00 02 40 01 00 00 00 00 0b 00 01 b9 00 00 01 b5 00 01 b0 30 82 01 ac 30"
    "82 01 15 a0 03 02 01 02 02 01 02 30 0d 06 09 2a 86 48 86 f7 0d 01 01 0b 05 00 30 0e"
    "31 0c 30 0a 06 03 55 04 03 13 03 72 73 61 30 1e 17 0d 31 36 30 37 33 30 30 31 32 33"
    "35 39 5a 17 0d 32 36 30 37 33 30 30 31 32 33 35 39 5a 30 0e 31 0c 30 0a 06 03 55 04"
    "03 13 03 72 73 61 30 81 9f 30 0d 06 09 2a 86 48 86 f7 0d 01 01 01 05 00 03 81 8d 00"
    "30 81 89 02 81 81 00 b4 bb 49 8f 82 79 30 3d 98 08 36 39 9b 36 c6 98 8c 0c 68 de 55"
    "e1 bd b8 26 d3 90 1a 24 61 ea fd 2d e4 9a 91 d0 15 ab bc 9a 95 13 7a ce 6c 1a f1 9e"
    "aa 6a f9 8c 7c ed 43 12 09 98 e1 87 a8 0e e0 cc b0 52 4b 1b 01 8c 3e 0b 63 26 4d 44"
    "9a 6d 38 e2 2a 5f da 43 08 46 74 80 30 53 0e f0 46 1c 8c a9 d9 ef bf ae 8e a6 d1 d0"
    "3e 2b d1 93 ef f0 ab 9a 80 02 c4 74 28 a6 d3 5a 8d 88 d7 9f 7f 1e 3f 02 03 01 00 01"
    "a3 1a 30 18 30 09 06 03 55 1d 13 04 02 30 00 30 0b 06 03 55 1d 0f 04 04 03 02 05 a0"
    "30 0d 06 09 2a 86 48 86 f7 0d 01 01 0b 05 00 03 81 81 00 85 aa d2 a0 e5 b9 27 6b 90"
    "8c 65 f7 3a 72 67 17 06 18 a5 4c 5f 8a 7b 33 7d 2d f7 a5 94 36 54 17 f2 ea e8 f8 a5"
    "8c 8f 81 72 f9 31 9c f3 6b 7f d6 c5 5b 80 f2 1a 03 01 51 56 72 60 96 fd 33 5e 5e 67"
    "f2 db f1 02 70 2e 60 8c ca e6 be c1 fc 63 a4 2a 99 be 5c 3e b7 10 7c 3c 54 e9 b9 eb"
    "2b d5 20 3b 1c 3b 84 e0 a8 b2 f7 59 40 9b a3 ea c9 d9 1d 40 2d cc 0c c8 f8 96 12 29"
    "ac 91 87 b4 2b 4d e1 00 00 0f 00 00 84 08 04 00 80 5a 74 7c 5d 88 fa 9b d2 e5 5a b0"
    "85 a6 10 15 b7 21 1f 82 4c d4 84 14 5a b3 ff 52 f1 fd a8 47 7b 0b 7a bc 90 db 78 e2"
    "d3 3a 5c 14 1a 07 86 53 fa 6b ef 78 0c 5e a2 48 ee aa a7 85 c4 f3 94 ca b6 d3 0b be"
    "8d 48 59 ee 51 1f 60 29 57 b1 54 11 ac 02 76 71 45 9e 46 44 5c 9e a5 8c 18 1e 81 8e"
    "95 b8 c3 fb 0b f3 27 84 09 d3 be 15 2a 3d a5 04 3e 06 3d da 65 cd f5 ae a2 0d 53 df"
    "ac d4 2f 74 f3 14 00 00 20 9b 9b 14 1d 90 63 37 fb d2 cb dc e7 1d f4 de da 4a b4 2c"
    "30 95 72 cb 7f ff ee 54 54 b7 8f 07 18";
/* The client's Finished: its verify_data is RFC_C_FIN. */
static const char RFC_CFIN[] = "14 00 00 20 a8 ec 43 6d 67 76 34 ae 52 5a c1 fc eb e1 1a 03"
                               "9e c1 76 94 fa c6 e9 85 27 b6 42 f2 ed d5 ce 61";
static const char RFC_CLIENT_PRIV[] = "49 af 42 ba 7f 79 94 85 2d 71 3e f2 78 4b cb ca a7 91 1d e2 "
                                      "6a dc 56 42 cb 63 45 40 e7 ea 50 05";

#define RFC_ECDHE   "8bd4054fb55b9d63fdfbacf9f04b9f0d35e6d63f537563efd46272900f89492d"
#define RFC_TH_SH   "860c06edc07858ee8e78f0e7428c58edd6b43f2ca3e6e95f02ed063cf0e1cad8"
#define RFC_TH_CV   "edb7725fa7a3473b031ec8ef65a2485493900138a2b91291407d7951a06110ed"
#define RFC_TH_SFIN "9608102a0f1ccc6db6250b7b7e417b1a000eaada3daae4777a7686c9ff83df13"
#define RFC_TH_CFIN "209145a96ee8e2a122ff810047cc952684658d6049e86429426db87c54ad143d"

/* ---- full handshakes ------------------------------------------------------------------------- */

VTEST(full_matrix)
{
    static const uint16_t suites[] = {VEGA_QUIC_TLS_AES_128_GCM_SHA256,
                                      VEGA_QUIC_TLS_AES_256_GCM_SHA384,
                                      VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256};
    static const vega_crypto_group groups[] = {VEGA_CRYPTO_GROUP_X25519,
                                               VEGA_CRYPTO_GROUP_SECP256R1};
    pki_load();
    const vega_crypto_cert_chain *chains[] = {P.p256, P.rsa, P.ed};
    const vega_crypto_key *keys[] = {P.p256_key, P.rsa_key, P.ed_key};
    for (int si = 0; si < 3; si++)
        for (int gi = 0; gi < 2; gi++)
            for (int ki = 0; ki < 3; ki++) {
                vega_quic_tls_opts cc, sc;
                client_cfg(&cc);
                server_cfg(&sc);
                cc.suites[0] = suites[si];
                cc.n_suites = 1;
                cc.groups[0] = groups[gi];
                cc.n_groups = 1;
                sc.chain = chains[ki];
                sc.key = keys[ki];
                struct hs h;
                VCHECK(handshake(&h, &cc, &sc, 0, 0));
                CHECK_SUCCESS(&h);
                VCHECK_STR(h.c.order, "Hr Hw Aw Ar ");
                VCHECK_STR(h.s.order, "Hr Hw Aw Ar ");
                VCHECK_EQ(vega__qtls_hash(h.c.t),
                          si == 1 ? VEGA_CRYPTO_SHA384 : VEGA_CRYPTO_SHA256);
                VCHECK(!vega__qtls_is_resumed(h.c.t) && !vega__qtls_is_resumed(h.s.t));
                VCHECK(vega__qtls_peer_chain(h.c.t) != NULL);
                VCHECK(vega__qtls_peer_chain(h.s.t) == NULL);
                VCHECK(!h.c.t->hrr);
                VCHECK_STR(vega__qtls_reason(h.c.t), "");
                hs_fini(&h);
            }
    pki_free();
}

VTEST(alpn_preference_and_ip_literal)
{
    vega_quic_tls_opts cc, sc;
    client_cfg(&cc);
    server_cfg(&sc);
    cc.server_name = "127.0.0.1"; /* verified against the IP SAN; no SNI sent */
    cc.alpn[0] = "hq-interop";
    cc.alpn[1] = "h3";
    cc.n_alpn = 2;
    sc.alpn[0] = "h3";
    sc.alpn[1] = "hq-interop";
    sc.n_alpn = 2;
    struct hs h;
    VCHECK(handshake(&h, &cc, &sc, WALL_2030, 0));
    CHECK_SUCCESS(&h);
    size_t n;
    const uint8_t *a = vega__qtls_alpn(h.s.t, &n);
    VCHECK(n == 2 && memcmp(a, "h3", 2) == 0);
    VCHECK(!h.s.t->sni_seen);
    hs_fini(&h);
    pki_free();
}

VTEST(hello_retry_request)
{
    vega_quic_tls_opts cc, sc;
    client_cfg(&cc);
    server_cfg(&sc);
    sc.groups[0] = VEGA_CRYPTO_GROUP_SECP256R1;
    sc.n_groups = 1;
    struct hs h;
    VCHECK(handshake(&h, &cc, &sc, 0, 0));
    CHECK_SUCCESS(&h);
    VCHECK(h.c.t->hrr && h.s.t->hrr);
    VCHECK_EQ(h.c.t->group, VEGA_CRYPTO_GROUP_SECP256R1);
    hs_fini(&h);

    /* No common group at all: handshake_failure. */
    client_cfg(&cc);
    cc.groups[0] = VEGA_CRYPTO_GROUP_X25519;
    cc.n_groups = 1;
    VCHECK(!handshake(&h, &cc, &sc, 0, 0));
    VCHECK_EQ(h.s.wire, 0x100u + VEGA__QTLS_ALERT_HANDSHAKE_FAILURE);
    hs_fini(&h);
    pki_free();
}

VTEST(mutual_tls)
{
    vega_quic_tls_opts cc, sc;
    client_cfg(&cc);
    server_cfg(&sc);
    sc.verify_peer = true;
    sc.ca = P.ca;
    cc.chain = P.client;
    cc.key = P.client_key;
    struct hs h;
    VCHECK(handshake(&h, &cc, &sc, 0, 0));
    CHECK_SUCCESS(&h);
    VCHECK(vega__qtls_peer_chain(h.s.t) != NULL);
    VCHECK_EQ(vega_crypto_cert_chain_count(vega__qtls_peer_chain(h.s.t)), 1u);
    hs_fini(&h);

    /* Without a client certificate: certificate_required from the server. */
    cc.chain = NULL;
    cc.key = NULL;
    VCHECK(!handshake(&h, &cc, &sc, 0, 0));
    VCHECK_EQ(h.s.wire, 0x100u + VEGA__QTLS_ALERT_CERTIFICATE_REQUIRED);
    VCHECK(!vega__qtls_is_done(h.s.t));
    hs_fini(&h);

    /* A client certificate from a CA the server does not trust: unknown_ca. */
    sc.ca = P.other_ca;
    cc.chain = P.client;
    cc.key = P.client_key;
    VCHECK(!handshake(&h, &cc, &sc, 0, 0));
    VCHECK_EQ(h.s.wire, 0x100u + VEGA__QTLS_ALERT_UNKNOWN_CA);
    hs_fini(&h);
    pki_free();
}

/* ---- verification failures ------------------------------------------------------------------ */

static void expect_client_alert(vega_quic_tls_opts *cc, uint64_t wall, int alert, int line)
{
    vega_quic_tls_opts sc;
    server_cfg(&sc);
    struct hs h;
    bool ok = handshake(&h, cc, &sc, wall, 0);
    if (ok || h.c.rc != VEGA_ERR_PROTO || h.c.wire != 0x100u + (uint64_t)alert)
        vtest_fail(__FILE__, line, "want client alert %d, got rc %d wire 0x%llx (%s)", alert,
                   h.c.rc, (unsigned long long)h.c.wire, vega__qtls_reason(h.c.t));
    VCHECK(strlen(vega__qtls_reason(h.c.t)) > 0);
    /* Every later call fails the same way. */
    uint64_t w = 0;
    VCHECK_EQ(vega__qtls_recv(h.c.t, VEGA_QUIC_LEVEL_HANDSHAKE, (const uint8_t *)"x", 1, &w),
              VEGA_ERR_PROTO);
    VCHECK_EQ(w, h.c.wire);
    hs_fini(&h);
}

VTEST(verify_failures)
{
    vega_quic_tls_opts cc;
    client_cfg(&cc);
    cc.ca = NULL;
    cc.insecure = false;
    vega_quic_tls_opts sc;
    server_cfg(&sc);
    struct vega__qtls *t = NULL;
    struct side dummy;
    struct vega__qtls_cbs cbs = {
        .ud = &dummy, .send = cb_send, .secret = cb_secret, .peer_tp = cb_peer_tp};
    VCHECK_EQ(vega__qtls_new(&t, false, &cc, NULL, 0, 0, &cbs), -EINVAL);
    sc.n_alpn = 0;
    VCHECK_EQ(vega__qtls_new(&t, true, &sc, NULL, 0, 0, &cbs), -EINVAL);
    server_cfg(&sc);
    sc.suites[0] = 0x1304;
    sc.n_suites = 1;
    VCHECK_EQ(vega__qtls_new(&t, true, &sc, NULL, 0, 0, &cbs), -EINVAL);

    client_cfg(&cc);
    cc.ca = P.other_ca;
    expect_client_alert(&cc, 0, VEGA__QTLS_ALERT_UNKNOWN_CA, __LINE__);
    client_cfg(&cc);
    cc.server_name = "example.com";
    expect_client_alert(&cc, 0, VEGA__QTLS_ALERT_BAD_CERTIFICATE, __LINE__);
    client_cfg(&cc);
    expect_client_alert(&cc, WALL_2200, VEGA__QTLS_ALERT_CERTIFICATE_EXPIRED, __LINE__);
    /* insecure skips both. */
    client_cfg(&cc);
    cc.ca = NULL;
    cc.insecure = true;
    cc.server_name = "example.com";
    server_cfg(&sc);
    struct hs h;
    VCHECK(handshake(&h, &cc, &sc, 0, 0));
    CHECK_SUCCESS(&h);
    hs_fini(&h);
    pki_free();
}

VTEST(no_common_alpn)
{
    vega_quic_tls_opts cc, sc;
    client_cfg(&cc);
    server_cfg(&sc);
    cc.alpn[0] = "h2";
    struct hs h;
    VCHECK(!handshake(&h, &cc, &sc, 0, 0));
    VCHECK_EQ(h.s.wire, 0x178u);
    VCHECK_STR(vega__qtls_reason(h.s.t), "no common ALPN");
    hs_fini(&h);
    pki_free();
}

/* The first ClientHello a client would send (seeded, so stable). */
static size_t client_hello(uint8_t *out, size_t cap, const vega_quic_tls_opts *cc)
{
    struct side c;
    side_init(&c, false, cc, CLIENT_TP, sizeof CLIENT_TP, 0, 42);
    VCHECK_EQ(vega__qtls_start(c.t, &c.wire), 0);
    size_t n = c.out_len[VEGA_QUIC_LEVEL_INITIAL];
    VCHECK(n <= cap);
    memcpy(out, c.out[VEGA_QUIC_LEVEL_INITIAL], n);
    side_fini(&c);
    return n;
}

/* Renames extension `type` of a ClientHello to an unknown code point. */
static void rename_ext(uint8_t *ch, size_t len, uint16_t type)
{
    struct vega__qtls_hello h;
    VCHECK_EQ(vega__qtls_parse_ch(ch, len, &h), 0);
    size_t off = 4 + 2 + 32 + 1 + 2 + h.suites_len + 2 + 2;
    while (off + 4 <= len) {
        if (qt_be(ch + off, 2) == type) {
            ch[off] = 0xfa;
            ch[off + 1] = 0xfa;
            return;
        }
        off += 4 + qt_be(ch + off + 2, 2);
    }
    vtest_fail(__FILE__, __LINE__, "extension %u not found", type);
}

/* Feeds bytes to a fresh server at level; returns its wire error (0 = accepted). */
static uint64_t server_feed(vega_quic_level level, const uint8_t *b, size_t n)
{
    vega_quic_tls_opts sc;
    server_cfg(&sc);
    struct side s;
    side_init(&s, true, &sc, SERVER_TP, sizeof SERVER_TP, 0, 0);
    s.rc = vega__qtls_recv(s.t, level, b, n, &s.wire);
    uint64_t w = s.rc ? s.wire : 0;
    VCHECK(s.rc == 0 || strlen(vega__qtls_reason(s.t)) > 0);
    side_fini(&s);
    return w;
}

VTEST(client_hello_checks)
{
    vega_quic_tls_opts cc;
    client_cfg(&cc);
    uint8_t ch[2048], tmp[2048];
    size_t n = client_hello(ch, sizeof ch, &cc);
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, ch, n), 0u);

    /* What a ClientHello must carry. */
    memcpy(tmp, ch, n);
    rename_ext(tmp, n, QT_EXT_QUIC_TP);
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, tmp, n), 0x16du);
    memcpy(tmp, ch, n);
    rename_ext(tmp, n, QT_EXT_SUPPORTED_VERSIONS);
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, tmp, n), 0x146u);
    memcpy(tmp, ch, n);
    rename_ext(tmp, n, QT_EXT_ALPN);
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, tmp, n), 0x178u);
    memcpy(tmp, ch, n);
    rename_ext(tmp, n, QT_EXT_KEY_SHARE);
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, tmp, n), 0x16du);
    memcpy(tmp, ch, n);
    rename_ext(tmp, n, QT_EXT_SIGNATURE_ALGORITHMS);
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, tmp, n), 0x16du);

    /* A duplicate extension: rename ALPN to supported_versions' code point. */
    memcpy(tmp, ch, n);
    rename_ext(tmp, n, QT_EXT_ALPN);
    rename_ext(tmp, n, QT_EXT_QUIC_TP);
    {
        /* both renamed to 0xfafa: a duplicate */
        VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, tmp, n), 0x12fu);
    }

    /* Wrong level, truncation, garbage, oversize. */
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_HANDSHAKE, ch, n), 0x10au);
    memcpy(tmp, ch, n);
    tmp[3] = (uint8_t)(tmp[3] - 1); /* the body one byte shorter than what it holds */
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, tmp, n - 1), 0x132u);
    static const uint8_t junk[] = {1, 0, 0, 5, 3, 3, 0, 0, 0};
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, junk, sizeof junk), 0x132u);
    static const uint8_t big[] = {1, 1, 0, 1};
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, big, sizeof big), 0x0du);
    static const uint8_t fin[] = {20, 0, 0, 0};
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, fin, sizeof fin), 0x10au);
    /* A partial message then nothing is fine; bytes after the ClientHello are not. */
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, ch, n - 10), 0u);
    memcpy(tmp, ch, n);
    tmp[n] = 1;
    VCHECK_EQ(server_feed(VEGA_QUIC_LEVEL_INITIAL, tmp, n + 1), 0x10au);
    /* Every truncation of the body fails cleanly with decode_error. */
    for (size_t cut = 4; cut < n; cut += 7) {
        memcpy(tmp, ch, cut);
        size_t body = cut - 4;
        tmp[1] = (uint8_t)(body >> 16);
        tmp[2] = (uint8_t)(body >> 8);
        tmp[3] = (uint8_t)body;
        uint64_t w = server_feed(VEGA_QUIC_LEVEL_INITIAL, tmp, cut);
        VCHECK(w == 0x132u || w == 0x12fu);
    }
    pki_free();
}

VTEST(tampered_finished_and_wrong_level)
{
    vega_quic_tls_opts cc, sc;
    client_cfg(&cc);
    server_cfg(&sc);
    struct hs h;
    side_init(&h.c, false, &cc, CLIENT_TP, sizeof CLIENT_TP, 0, 0);
    side_init(&h.s, true, &sc, SERVER_TP, sizeof SERVER_TP, 0, 0);
    VCHECK_EQ(vega__qtls_start(h.c.t, &h.c.wire), 0);
    VCHECK_EQ(vega__qtls_recv(h.s.t, 0, h.c.out[0], h.c.out_len[0], &h.s.wire), 0);
    VCHECK_EQ(vega__qtls_recv(h.c.t, 0, h.s.out[0], h.s.out_len[0], &h.c.wire), 0);
    uint8_t *fl = h.s.out[VEGA_QUIC_LEVEL_HANDSHAKE];
    size_t fn = h.s.out_len[VEGA_QUIC_LEVEL_HANDSHAKE];
    fl[fn - 1] ^= 1; /* the last byte of the server Finished */
    VCHECK_EQ(vega__qtls_recv(h.c.t, VEGA_QUIC_LEVEL_HANDSHAKE, fl, fn, &h.c.wire), VEGA_ERR_PROTO);
    VCHECK_EQ(h.c.wire, 0x133u);
    hs_fini(&h);

    /* Done client: a KeyUpdate at APP, and anything at HANDSHAKE, are unexpected_message. */
    VCHECK(handshake(&h, &cc, &sc, 0, 0));
    CHECK_SUCCESS(&h);
    static const uint8_t ku[] = {QT_KEY_UPDATE, 0, 0, 1, 0};
    VCHECK_EQ(vega__qtls_recv(h.c.t, VEGA_QUIC_LEVEL_APP, ku, sizeof ku, &h.c.wire),
              VEGA_ERR_PROTO);
    VCHECK_EQ(h.c.wire, 0x10au);
    uint64_t w = 0;
    static const uint8_t eoed[] = {QT_END_OF_EARLY_DATA, 0, 0, 0};
    VCHECK_EQ(vega__qtls_recv(h.s.t, VEGA_QUIC_LEVEL_HANDSHAKE, eoed, sizeof eoed, &w),
              VEGA_ERR_PROTO);
    VCHECK_EQ(w, 0x10au);
    hs_fini(&h);
    pki_free();
}

/* ---- resumption and 0-RTT -------------------------------------------------------------------- */

/* A full handshake that leaves a session in *blob. */
static size_t get_session(const vega_quic_tls_opts *cc, const vega_quic_tls_opts *sc, uint64_t wall,
                          uint8_t *blob)
{
    struct hs h;
    VCHECK(handshake(&h, cc, sc, wall, 0));
    CHECK_SUCCESS(&h);
    VCHECK_EQ(vega__qtls_send_ticket(h.s.t), 0);
    VCHECK(h.s.out_len[VEGA_QUIC_LEVEL_APP] > 0);
    VCHECK(pump(&h.c, &h.s));
    size_t n = h.c.session_len;
    VCHECK(n > 0);
    memcpy(blob, h.c.session, n);
    hs_fini(&h);
    return n;
}

VTEST(resumption)
{
    vega_quic_tls_opts cc, sc;
    client_cfg(&cc);
    server_cfg(&sc);
    sc.ticket_key = TICKET_KEY;
    static uint8_t blob[QT_MAX_SESSION];
    size_t n = get_session(&cc, &sc, WALL_2030, blob);
    cc.session = blob;
    cc.session_len = n;
    struct hs h;
    VCHECK(handshake(&h, &cc, &sc, WALL_2030 + 60000, 0));
    CHECK_SUCCESS(&h);
    VCHECK(vega__qtls_is_resumed(h.c.t) && vega__qtls_is_resumed(h.s.t));
    VCHECK(!h.s.saw_cert);
    VCHECK(vega__qtls_peer_chain(h.c.t) == NULL);
    VCHECK_EQ(vega__qtls_early_status(h.c.t), VEGA__QTLS_EARLY_NONE);
    size_t tpl;
    VCHECK(vega__qtls_session_tp(h.c.t, &tpl) == NULL);
    hs_fini(&h);

    /* After HelloRetryRequest: still resumed (the binder covers the HRR transcript). */
    sc.groups[0] = VEGA_CRYPTO_GROUP_SECP256R1;
    sc.n_groups = 1;
    VCHECK(handshake(&h, &cc, &sc, WALL_2030 + 60000, 0));
    CHECK_SUCCESS(&h);
    VCHECK(h.c.t->hrr && vega__qtls_is_resumed(h.s.t));
    hs_fini(&h);
    sc.n_groups = 0;

    /* Expired (7 days default lifetime), another ticket key, another server name, no wall
     * clock: full handshakes. */
    VCHECK(handshake(&h, &cc, &sc, WALL_2030 + 8ull * 86400 * 1000, 0));
    CHECK_SUCCESS(&h);
    VCHECK(!vega__qtls_is_resumed(h.c.t) && h.s.saw_cert);
    hs_fini(&h);
    static const uint8_t other_key[32] = "another ticket key, 32 bytes...";
    sc.ticket_key = other_key;
    VCHECK(handshake(&h, &cc, &sc, WALL_2030 + 1000, 0));
    CHECK_SUCCESS(&h);
    VCHECK(!vega__qtls_is_resumed(h.s.t) && h.s.saw_cert);
    VCHECK(h.c.t->psk_offered);
    hs_fini(&h);
    sc.ticket_key = TICKET_KEY;
    cc.server_name = "127.0.0.1";
    VCHECK(handshake(&h, &cc, &sc, WALL_2030 + 1000, 0));
    CHECK_SUCCESS(&h);
    VCHECK(!h.c.t->psk_offered && !vega__qtls_is_resumed(h.s.t));
    hs_fini(&h);

    /* A damaged binder: decrypt_error. */
    client_cfg(&cc);
    cc.session = blob;
    cc.session_len = n;
    uint8_t ch[2048];
    struct side c;
    side_init(&c, false, &cc, CLIENT_TP, sizeof CLIENT_TP, WALL_2030 + 1000, 0);
    VCHECK_EQ(vega__qtls_start(c.t, &c.wire), 0);
    size_t chn = c.out_len[0];
    memcpy(ch, c.out[0], chn);
    side_fini(&c);
    ch[chn - 1] ^= 0x80;
    struct side s;
    side_init(&s, true, &sc, SERVER_TP, sizeof SERVER_TP, WALL_2030 + 1000, 0);
    VCHECK_EQ(vega__qtls_recv(s.t, 0, ch, chn, &s.wire), VEGA_ERR_PROTO);
    VCHECK_EQ(s.wire, 0x133u);
    side_fini(&s);

    /* A malformed session blob is ignored. */
    blob[0] ^= 1;
    VCHECK(handshake(&h, &cc, &sc, WALL_2030 + 1000, 0));
    CHECK_SUCCESS(&h);
    VCHECK(!h.c.t->psk_offered);
    hs_fini(&h);
    pki_free();
}

VTEST(zero_rtt)
{
    vega_quic_tls_opts cc, sc;
    client_cfg(&cc);
    server_cfg(&sc);
    sc.ticket_key = TICKET_KEY;
    sc.early_data = true;
    cc.early_data = true;
    static uint8_t blob[QT_MAX_SESSION];
    size_t n = get_session(&cc, &sc, WALL_2030, blob);
    cc.session = blob;
    cc.session_len = n;
    struct hs h;
    VCHECK(handshake(&h, &cc, &sc, WALL_2030 + 5000, 0));
    CHECK_SUCCESS(&h);
    VCHECK_EQ(vega__qtls_early_status(h.c.t), VEGA__QTLS_EARLY_ACCEPTED);
    VCHECK_EQ(vega__qtls_early_status(h.s.t), VEGA__QTLS_EARLY_ACCEPTED);
    VCHECK_STR(h.c.order, "Ew Hr Hw Aw Ar ");
    VCHECK_STR(h.s.order, "Er Hr Hw Aw Ar ");
    VCHECK(h.c.secret_len[VEGA_QUIC_LEVEL_EARLY][1] > 0);
    size_t tpl;
    const uint8_t *tp = vega__qtls_session_tp(h.c.t, &tpl);
    VCHECK(tp && tpl == sizeof SERVER_TP && memcmp(tp, SERVER_TP, tpl) == 0);
    hs_fini(&h);

    /* The server no longer does 0-RTT: resumed, early data rejected. */
    sc.early_data = false;
    VCHECK(handshake(&h, &cc, &sc, WALL_2030 + 5000, 0));
    CHECK_SUCCESS(&h);
    VCHECK(vega__qtls_is_resumed(h.s.t));
    VCHECK_EQ(vega__qtls_early_status(h.c.t), VEGA__QTLS_EARLY_REJECTED);
    VCHECK_EQ(vega__qtls_early_status(h.s.t), VEGA__QTLS_EARLY_REJECTED);
    VCHECK_STR(h.s.order, "Hr Hw Aw Ar ");
    hs_fini(&h);
    sc.early_data = true;

    /* The server's transport parameters changed: rejected. */
    side_init(&h.c, false, &cc, CLIENT_TP, sizeof CLIENT_TP, WALL_2030 + 5000, 0);
    side_init(&h.s, true, &sc, (const uint8_t *)"other tp", 8, WALL_2030 + 5000, 0);
    VCHECK_EQ(vega__qtls_start(h.c.t, &h.c.wire), 0);
    VCHECK(pump(&h.c, &h.s));
    VCHECK(vega__qtls_is_done(h.c.t) && vega__qtls_is_resumed(h.c.t));
    VCHECK_EQ(vega__qtls_early_status(h.c.t), VEGA__QTLS_EARLY_REJECTED);
    hs_fini(&h);

    /* Outside the ticket age window (the client clock says 5 s, the server's 60 s). */
    struct side c, s;
    side_init(&c, false, &cc, CLIENT_TP, sizeof CLIENT_TP, WALL_2030 + 5000, 0);
    side_init(&s, true, &sc, SERVER_TP, sizeof SERVER_TP, WALL_2030 + 60000, 0);
    VCHECK_EQ(vega__qtls_start(c.t, &c.wire), 0);
    VCHECK(pump(&c, &s));
    VCHECK(vega__qtls_is_done(s.t) && vega__qtls_is_resumed(s.t));
    VCHECK_EQ(vega__qtls_early_status(s.t), VEGA__QTLS_EARLY_REJECTED);
    side_fini(&c);
    side_fini(&s);

    /* A client without early_data does not offer it. */
    cc.early_data = false;
    VCHECK(handshake(&h, &cc, &sc, WALL_2030 + 5000, 0));
    CHECK_SUCCESS(&h);
    VCHECK_EQ(vega__qtls_early_status(h.c.t), VEGA__QTLS_EARLY_NONE);
    VCHECK_EQ(vega__qtls_early_status(h.s.t), VEGA__QTLS_EARLY_NONE);
    hs_fini(&h);
    pki_free();
}

VTEST(determinism)
{
    vega_quic_tls_opts cc, sc;
    client_cfg(&cc);
    server_cfg(&sc);
    /* Ed25519 signatures are deterministic (ECDSA and RSA-PSS draw from libcrypto). */
    sc.chain = P.ed;
    sc.key = P.ed_key;
    struct hs a, b;
    VCHECK(handshake(&a, &cc, &sc, WALL_2030, 7));
    VCHECK(handshake(&b, &cc, &sc, WALL_2030, 7));
    CHECK_SUCCESS(&a);
    VCHECK(a.c.log_len > 0 && a.c.log_len == b.c.log_len);
    VCHECK(memcmp(a.c.log, b.c.log, a.c.log_len) == 0);
    VCHECK(a.s.log_len == b.s.log_len && memcmp(a.s.log, b.s.log, a.s.log_len) == 0);
    VCHECK(memcmp(a.c.secret, b.c.secret, sizeof a.c.secret) == 0);
    hs_fini(&a);
    hs_fini(&b);
    pki_free();
}

/* ---- RFC 8448 §3 through the codecs ---------------------------------------------------------- */

static void th_check(const uint8_t *msgs, size_t n, const char *want)
{
    uint8_t got[32], w[32];
    VCHECK_EQ(vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, msgs, n, got), 0);
    VCHECK_EQ(vtest_unhex(want, w, 32), 32u);
    VCHECK(memcmp(got, w, 32) == 0);
}

VTEST(rfc8448_codecs)
{
    static uint8_t all[2048];
    size_t n = 0, ch_len, sh_len, fl_len, cf_len;
    ch_len = vtest_unhex(RFC_CH, all, sizeof all);
    n += ch_len;
    sh_len = vtest_unhex(RFC_SH, all + n, sizeof all - n);
    n += sh_len;
    fl_len = vtest_unhex(RFC_FLIGHT, all + n, sizeof all - n);
    n += fl_len;
    cf_len = vtest_unhex(RFC_CFIN, all + n, sizeof all - n);
    VCHECK_EQ(ch_len, 196u);
    VCHECK_EQ(sh_len, 90u);
    VCHECK_EQ(fl_len, 657u);

    struct vega__qtls_hello h;
    VCHECK_EQ(vega__qtls_parse_ch(all, ch_len, &h), 0);
    VCHECK(h.tls13 && h.has_groups && h.has_key_share && h.has_sigalgs && h.has_sni);
    VCHECK(h.sni_len == 6 && memcmp(h.sni, "server", 6) == 0);
    VCHECK(h.has_psk_modes && h.psk_dhe_ke && !h.has_tp && !h.has_psk && !h.has_alpn);
    VCHECK_EQ(h.suites_len, 6u);
    VCHECK(vega__qtls_has_u16(h.groups, h.groups_len, VEGA_CRYPTO_GROUP_X25519));
    const uint8_t *ch_share = h.shares + 4; /* x25519, 32 bytes */
    VCHECK_EQ(qt_be(h.shares, 2), 0x1du);

    VCHECK_EQ(vega__qtls_parse_sh(all + ch_len, sh_len, &h), 0);
    VCHECK(!h.is_hrr && h.tls13 && h.suite == 0x1301 && h.share_group == 0x1d);
    VCHECK_EQ(h.share_len, 32u);
    th_check(all, ch_len + sh_len, RFC_TH_SH);

    /* The (EC)DHE secret from the client's private key and the server's share. */
    uint8_t priv[32], shared[32], want[32], pub[32];
    VCHECK_EQ(vtest_unhex(RFC_CLIENT_PRIV, priv, 32), 32u);
    vega_crypto_kex *k = NULL;
    VCHECK_EQ(vega_crypto_kex_new_private(&k, VEGA_CRYPTO_GROUP_X25519, priv, 32), 0);
    VCHECK_EQ(vega_crypto_kex_get_public(k, pub, sizeof pub), 32);
    VCHECK(memcmp(pub, ch_share, 32) == 0);
    VCHECK_EQ(vega_crypto_kex_derive(k, h.share, h.share_len, shared, sizeof shared), 32);
    vega_crypto_kex_free(k);
    VCHECK_EQ(vtest_unhex(RFC_ECDHE, want, 32), 32u);
    VCHECK(memcmp(shared, want, 32) == 0);

    const uint8_t *p = all + ch_len + sh_len;
    size_t ee_len = 4 + qt_be(p + 1, 3);
    struct vega__qtls_ee ee;
    VCHECK_EQ(vega__qtls_parse_ee(p, ee_len, &ee), 0);
    VCHECK(ee.has_sni && !ee.has_alpn && !ee.has_tp && ee.has_unknown && ee.unknown == 0x1c);
    p += ee_len;
    size_t cert_len = 4 + qt_be(p + 1, 3);
    struct vega__qtls_cert cert;
    VCHECK_EQ(vega__qtls_parse_cert(p, cert_len, &cert), 0);
    VCHECK(cert.count == 1 && cert.context_len == 0);
    vega_crypto_cert_chain *chain = NULL;
    VCHECK_EQ(vega_crypto_cert_chain_new(&chain), 0);
    struct qt_rd r = {cert.list, cert.list + cert.list_len};
    const uint8_t *der;
    size_t der_len;
    VCHECK(vega__qtls_cert_next(&r, &der, &der_len));
    VCHECK_EQ(der_len, 432u);
    VCHECK_EQ(vega_crypto_cert_chain_add_der(chain, der, der_len), 0);
    p += cert_len;
    size_t cv_len = 4 + qt_be(p + 1, 3);
    uint16_t scheme;
    const uint8_t *sig;
    size_t sig_len;
    VCHECK_EQ(vega__qtls_parse_cv(p, cv_len, &scheme, &sig, &sig_len), 0);
    VCHECK(scheme == VEGA_CRYPTO_SIG_RSA_PSS_RSAE_SHA256 && sig_len == 128);
    /* The signature verifies with the certificate's key over the transcript through
     * Certificate. */
    uint8_t th[32], content[VEGA_CRYPTO_TLS13_CV_MAX];
    VCHECK_EQ(vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, all, (size_t)(p - all), th), 0);
    vega_ssize cl = vega_crypto_tls13_cv_content(true, th, 32, content, sizeof content);
    vega_crypto_key *key = NULL;
    VCHECK_EQ(vega_crypto_cert_chain_get_key(chain, 0, &key), 0);
    VCHECK_EQ(vega_crypto_key_verify(key, scheme, content, (size_t)cl, sig, sig_len), 0);
    vega_crypto_key_free(key);
    vega_crypto_cert_chain_free(chain);
    p += cv_len;
    th_check(all, (size_t)(p - all), RFC_TH_CV);
    VCHECK_EQ(p[0], QT_FINISHED);
    p += 36;
    th_check(all, (size_t)(p - all), RFC_TH_SFIN);
    p += cf_len;
    th_check(all, (size_t)(p - all), RFC_TH_CFIN);
}

/* ---- the client against hand-made server messages ------------------------------------------ */

/* A ServerHello-shaped message: random (NULL = HelloRetryRequest), suite and extensions. */
static size_t make_sh(uint8_t *out, const uint8_t *random, uint16_t suite, const uint8_t *ext,
                      size_t ext_len)
{
    size_t n = 0;
    out[n++] = QT_SERVER_HELLO;
    n += 3;
    out[n++] = 3;
    out[n++] = 3;
    memcpy(out + n, random ? random : vega__qtls_hrr_random, 32);
    n += 32;
    out[n++] = 0;
    out[n++] = (uint8_t)(suite >> 8);
    out[n++] = (uint8_t)suite;
    out[n++] = 0;
    out[n++] = (uint8_t)(ext_len >> 8);
    out[n++] = (uint8_t)ext_len;
    memcpy(out + n, ext, ext_len);
    n += ext_len;
    out[1] = 0;
    out[2] = (uint8_t)((n - 4) >> 8);
    out[3] = (uint8_t)(n - 4);
    return n;
}

/* Starts a client (X25519 then P-256) and feeds it msg at INITIAL; returns its wire error. */
static uint64_t client_feed(const uint8_t *msg, size_t len, const uint8_t *msg2, size_t len2)
{
    vega_quic_tls_opts cc;
    client_cfg(&cc);
    struct side c;
    side_init(&c, false, &cc, CLIENT_TP, sizeof CLIENT_TP, 0, 0);
    VCHECK_EQ(vega__qtls_start(c.t, &c.wire), 0);
    c.rc = vega__qtls_recv(c.t, VEGA_QUIC_LEVEL_INITIAL, msg, len, &c.wire);
    if (c.rc == 0 && msg2)
        c.rc = vega__qtls_recv(c.t, VEGA_QUIC_LEVEL_INITIAL, msg2, len2, &c.wire);
    uint64_t w = c.rc ? c.wire : 0;
    side_fini(&c);
    return w;
}

VTEST(client_server_hello_checks)
{
    static const uint8_t v13[] = {0, 0x2b, 0, 2, 3, 4};
    uint8_t m[256], m2[256], ext[128];
    size_t n, n2;
    /* HRR for P-256 (offered, not shared): accepted, a second ClientHello goes out. */
    memcpy(ext, v13, 6);
    memcpy(ext + 6, "\x00\x33\x00\x02\x00\x17", 6);
    n = make_sh(m, NULL, 0x1301, ext, 12);
    VCHECK_EQ(client_feed(m, n, NULL, 0), 0u);
    /* ... and a second HRR is unexpected_message. */
    VCHECK_EQ(client_feed(m, n, m, n), 0x10au);
    /* HRR for the group already shared (X25519), or one never offered (P-384). */
    memcpy(ext + 6, "\x00\x33\x00\x02\x00\x1d", 6);
    n = make_sh(m, NULL, 0x1301, ext, 12);
    VCHECK_EQ(client_feed(m, n, NULL, 0), 0x12fu);
    memcpy(ext + 6, "\x00\x33\x00\x02\x00\x18", 6);
    n = make_sh(m, NULL, 0x1301, ext, 12);
    VCHECK_EQ(client_feed(m, n, NULL, 0), 0x12fu);
    /* HRR with a suite not offered. */
    memcpy(ext + 6, "\x00\x33\x00\x02\x00\x17", 6);
    n = make_sh(m, NULL, 0x1304, ext, 12);
    VCHECK_EQ(client_feed(m, n, NULL, 0), 0x12fu);
    /* ServerHello without supported_versions: protocol_version. */
    static const uint8_t rnd[32] = {1};
    memcpy(ext, "\x00\x33\x00\x24\x00\x1d\x00\x20", 8);
    memset(ext + 8, 9, 32);
    n = make_sh(m, rnd, 0x1301, ext, 40);
    VCHECK_EQ(client_feed(m, n, NULL, 0), 0x146u);
    /* A share for another group than the one sent. */
    memcpy(ext, v13, 6);
    memcpy(ext + 6, "\x00\x33\x00\x24\x00\x17\x00\x20", 8);
    memset(ext + 14, 9, 32);
    n = make_sh(m, rnd, 0x1301, ext, 46);
    VCHECK_EQ(client_feed(m, n, NULL, 0), 0x12fu);
    /* An extension the client never offered (ALPN) in a ServerHello. */
    memcpy(ext + 6, "\x00\x10\x00\x00", 4);
    n = make_sh(m, rnd, 0x1301, ext, 10);
    VCHECK_EQ(client_feed(m, n, NULL, 0), 0x16eu);
    /* After an HRR for P-256, a ServerHello with another suite. */
    memcpy(ext + 6, "\x00\x33\x00\x02\x00\x17", 6);
    n = make_sh(m, NULL, 0x1301, ext, 12);
    memcpy(ext + 6, "\x00\x33\x00\x45\x00\x17\x00\x41\x04", 9);
    memset(ext + 15, 9, 64);
    n2 = make_sh(m2, rnd, 0x1302, ext, 79);
    VCHECK_EQ(client_feed(m, n, m2, n2), 0x12fu);
    /* ... or an invalid P-256 point. */
    n2 = make_sh(m2, rnd, 0x1301, ext, 79);
    VCHECK_EQ(client_feed(m, n, m2, n2), 0x12fu);
    /* Messages that do not belong at INITIAL. */
    static const uint8_t ee[] = {QT_ENCRYPTED_EXTENSIONS, 0, 0, 2, 0, 0};
    VCHECK_EQ(client_feed(ee, sizeof ee, NULL, 0), 0x10au);
    pki_free();
}

VTEST(new_session_ticket_checks)
{
    vega_quic_tls_opts cc, sc;
    client_cfg(&cc);
    server_cfg(&sc);
    /* lifetime 60, age_add 1, nonce "n", ticket "t", early_data max (patched below). */
    static const uint8_t nst[] = "\x04\x00\x00\x17"         /* NewSessionTicket, 23 bytes */
                                 "\x00\x00\x00\x3c"         /* lifetime 60 */
                                 "\x00\x00\x00\x01"         /* age_add */
                                 "\x01n\x00\x01t"           /* nonce, ticket */
                                 "\x00\x08\x00\x2a\x00\x04" /* early_data */
                                 "\xff\xff\xff\xff";
    struct {
        uint8_t patch_at, value;
        uint64_t wire;
    } cases[] = {
        {26, 0xff, 0},    /* 0xffffffff: stored */
        {26, 0xfe, 0x0a}, /* any other nonzero max_early_data_size: PROTOCOL_VIOLATION */
        {4, 0x7f, 0x12f}, /* lifetime above 7 days */
        {3, 22, 0x132},   /* length mismatch */
        {18, 9, 0x132},   /* extensions overrun */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct hs h;
        VCHECK(handshake(&h, &cc, &sc, WALL_2030, 0));
        CHECK_SUCCESS(&h);
        uint8_t m[sizeof nst - 1];
        memcpy(m, nst, sizeof m);
        m[cases[i].patch_at] = cases[i].value;
        uint64_t w = 0;
        int rc = vega__qtls_recv(h.c.t, VEGA_QUIC_LEVEL_APP, m, sizeof m, &w);
        VCHECK_EQ(rc ? w : 0, cases[i].wire);
        if (i == 0)
            VCHECK(h.c.session_len > 0);
        hs_fini(&h);
    }
    /* A ticket at HANDSHAKE before the handshake is done is unexpected. */
    struct side c;
    side_init(&c, false, &cc, CLIENT_TP, sizeof CLIENT_TP, WALL_2030, 0);
    VCHECK_EQ(vega__qtls_start(c.t, &c.wire), 0);
    VCHECK_EQ(vega__qtls_recv(c.t, VEGA_QUIC_LEVEL_APP, nst, sizeof nst - 1, &c.wire),
              VEGA_ERR_PROTO);
    VCHECK_EQ(c.wire, 0x10au);
    side_fini(&c);
    pki_free();
}

static int fail_tp(void *ud, const uint8_t *tp, size_t len, uint64_t *wire_err)
{
    (void)ud, (void)tp, (void)len;
    *wire_err = VEGA_QUIC_TRANSPORT_PARAMETER_ERROR;
    return VEGA_ERR_PROTO;
}

static int fail_send(void *ud, vega_quic_level level, const uint8_t *data, size_t len)
{
    (void)ud, (void)level, (void)data, (void)len;
    return -5; /* -EIO */
}

VTEST(callbacks_and_second_client_hello)
{
    vega_quic_tls_opts cc, sc;
    client_cfg(&cc);
    server_cfg(&sc);
    uint8_t ch[2048];
    size_t n = client_hello(ch, sizeof ch, &cc);

    /* peer_tp refusing: that wire code, that return value. */
    struct side s;
    side_init(&s, true, &sc, SERVER_TP, sizeof SERVER_TP, 0, 0);
    struct vega__qtls *t = NULL;
    struct vega__qtls_cbs cbs = {
        .ud = &s, .send = cb_send, .secret = cb_secret, .peer_tp = fail_tp};
    VCHECK_EQ(vega__qtls_new(&t, true, &sc, SERVER_TP, sizeof SERVER_TP, 0, &cbs), 0);
    uint64_t w = 0;
    VCHECK_EQ(vega__qtls_recv(t, VEGA_QUIC_LEVEL_INITIAL, ch, n, &w), VEGA_ERR_PROTO);
    VCHECK_EQ(w, (uint64_t)VEGA_QUIC_TRANSPORT_PARAMETER_ERROR);
    vega__qtls_free(t);

    /* send failing: its code, INTERNAL_ERROR on the wire. */
    cbs.peer_tp = cb_peer_tp;
    cbs.send = fail_send;
    VCHECK_EQ(vega__qtls_new(&t, false, &cc, CLIENT_TP, sizeof CLIENT_TP, 0, &cbs), 0);
    VCHECK_EQ(vega__qtls_start(t, &w), -5);
    VCHECK_EQ(w, (uint64_t)VEGA_QUIC_INTERNAL_ERROR);
    vega__qtls_free(t);
    side_fini(&s);

    /* A P-256-only server answers HelloRetryRequest; the same ClientHello again (still no P-256
     * share) is illegal_parameter. */
    sc.groups[0] = VEGA_CRYPTO_GROUP_SECP256R1;
    sc.n_groups = 1;
    side_init(&s, true, &sc, SERVER_TP, sizeof SERVER_TP, 0, 0);
    VCHECK_EQ(vega__qtls_recv(s.t, VEGA_QUIC_LEVEL_INITIAL, ch, n, &s.wire), 0);
    VCHECK(s.out_len[VEGA_QUIC_LEVEL_INITIAL] > 38);
    VCHECK(memcmp(s.out[VEGA_QUIC_LEVEL_INITIAL] + 6, vega__qtls_hrr_random, 32) == 0);
    VCHECK_EQ(vega__qtls_recv(s.t, VEGA_QUIC_LEVEL_INITIAL, ch, n, &s.wire), VEGA_ERR_PROTO);
    VCHECK_EQ(s.wire, 0x12fu);
    side_fini(&s);

    /* send_ticket: only on a finished server. */
    side_init(&s, true, &sc, SERVER_TP, sizeof SERVER_TP, 0, 0);
    VCHECK_EQ(vega__qtls_send_ticket(s.t), -EINVAL);
    side_fini(&s);
    pki_free();
}
