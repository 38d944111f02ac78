/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the QUIC TLS 1.3 handshake (lib/quic/qtls*.c). Byte 0 bit 0 picks the
 * role (1 = server, 0 = client, started first); the rest is records of (level byte, 2-byte
 * length, bytes) fed to vega__qtls_recv at level & 3. Randomness is seeded, so a recorded peer
 * flight (see the corpus) reaches the deep states. A failure must carry a wire error and a
 * reason, and stay failed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/quic/qtls_certs.h"
#include "fuzz_target.h"
#include "qtls.h"

#define FUZZ_WALL_MS 1893456000000ull

static vega_crypto_cert_chain *fz_chain;
static vega_crypto_key *fz_key;
static vega_crypto_cert_store *fz_ca;
static const uint8_t fz_ticket_key[32] = "fuzz ticket key, thirty-two byte";

static void fz_init(void)
{
    if (fz_chain)
        return;
    if (vega_crypto_cert_chain_new(&fz_chain) < 0 ||
        vega_crypto_cert_chain_add(fz_chain, QT_SRV_P256_PEM, strlen(QT_SRV_P256_PEM)) < 0 ||
        vega_crypto_key_load_private(&fz_key, QT_SRV_P256_KEY, strlen(QT_SRV_P256_KEY)) < 0 ||
        vega_crypto_cert_store_new(&fz_ca, NULL, NULL) < 0 ||
        vega_crypto_cert_store_add_pem(fz_ca, QT_CA_PEM, strlen(QT_CA_PEM)) < 0)
        abort();
}

static void fz_config(vega_quic_tls_opts *c, bool server)
{
    memset(c, 0, sizeof(*c));
    c->alpn[0] = "h3";
    c->n_alpn = 1;
    c->early_data = true;
    if (server) {
        c->chain = fz_chain;
        c->key = fz_key;
        c->ticket_key = fz_ticket_key;
    } else {
        c->ca = fz_ca;
        c->server_name = "localhost";
    }
}

static int fz_send(void *ud, vega_quic_level level, const uint8_t *data, size_t len)
{
    (void)ud;
    if (level > VEGA_QUIC_LEVEL_APP || (len && !data))
        abort();
    return 0;
}

static int fz_secret(void *ud, vega_quic_level level, bool write, vega_crypto_aead_alg aead,
                     vega_crypto_hash_alg hash, const uint8_t *secret, size_t len)
{
    (void)ud, (void)level, (void)write, (void)aead, (void)secret;
    if (len != vega_crypto_hash_len(hash))
        abort();
    return 0;
}

static int fz_peer_tp(void *ud, const uint8_t *tp, size_t len, uint64_t *wire_err)
{
    (void)ud, (void)tp, (void)len, (void)wire_err;
    return 0;
}

static void fz_session(void *ud, const uint8_t *blob, size_t len)
{
    (void)ud, (void)blob, (void)len;
}

static int fz_rand(void *ud, void *buf, size_t len)
{
    uint64_t *s = ud;
    uint8_t *p = buf;
    for (size_t i = 0; i < len; i++) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        p[i] = (uint8_t)(*s >> 32);
    }
    return 0;
}

static const uint8_t fz_tp[] = {0x0f, 0x04, 1, 2, 3, 4}; /* initial_source_connection_id */

static struct vega__qtls *fz_new(bool server, vega_quic_tls_opts *cfg, uint64_t *rng)
{
    fz_init();
    fz_config(cfg, server);
    *rng = server ? 0x5eed5eedull : 0xc1e17ull;
    struct vega__qtls_cbs cbs = {.ud = rng,
                                 .send = fz_send,
                                 .secret = fz_secret,
                                 .peer_tp = fz_peer_tp,
                                 .session = fz_session,
                                 .rand = fz_rand};
    struct vega__qtls *t = NULL;
    if (vega__qtls_new(&t, server, cfg, fz_tp, sizeof fz_tp, FUZZ_WALL_MS, &cbs) < 0)
        abort();
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool server = data[0] & 1;
    vega_quic_tls_opts cfg;
    uint64_t rng;
    struct vega__qtls *t = fz_new(server, &cfg, &rng);
    uint64_t wire = 0;
    int rc = vega__qtls_start(t, &wire);
    size_t off = 1;
    while (rc == 0 && off + 3 <= size) {
        vega_quic_level level = (vega_quic_level)(data[off] & 3);
        size_t len = (size_t)data[off + 1] << 8 | data[off + 2];
        off += 3;
        if (len > size - off)
            len = size - off;
        rc = vega__qtls_recv(t, level, data + off, len, &wire);
        off += len;
    }
    if (rc < 0) {
        uint64_t again = 0;
        const char *why = vega__qtls_reason(t);
        if (wire == 0 || !why[0] ||
            vega__qtls_recv(t, VEGA_QUIC_LEVEL_INITIAL, data, 1, &again) != rc || again != wire)
            abort();
    }
    if (vega__qtls_is_done(t) && server)
        (void)vega__qtls_send_ticket(t);
    size_t n;
    (void)vega__qtls_alpn(t, &n);
    vega__qtls_free(t);
    return 0;
}
