/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for QUIC connections (lib/quic/conn*.c with the TLS handshake, recovery and
 * streams behind them). Byte 0 picks the scenario:
 *   0: a fresh server connection; 1: a fresh client connection (after its ClientHello);
 *   2: a client and a server that completed a real handshake in memory.
 * The rest is records [kind][len hi][len lo][bytes]. kind & 3 = 0: the bytes are a raw datagram;
 * otherwise they are frames, which the target protects as a packet the peer could have sent
 * (scenario 0: a client Initial; 1: a server Initial; 2: a 1-RTT packet, to the server when
 * kind & 4, else to the client) so the fuzzer reaches frame handling, not only decryption.
 * After each record the connections write what they have, drain events and read streams, and
 * the clock moves; nothing may crash, leak or hang.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"
#include "fuzz_target.h"
#include "qtls_certs.h"
#include "quic_pair.h"
#include "quic_pkt.h"

static uint8_t pkt[4096];

/* Protects frames (the fuzzer's bytes, as they are) as a packet of type t with the sending
 * side's keys k: an Initial padded to fill its datagram, anything else as short as it comes. */
static size_t build(vega_quic_pkt_type t, uint32_t version, const uint8_t *dcid, size_t dcid_len,
                    const uint8_t *scid, size_t scid_len, bool key_phase, vega_quic_keys *k,
                    uint64_t pn, const uint8_t *frames, size_t len)
{
    if (len > 1100)
        len = 1100;
    struct qpkt p = {.type = t,
                     .version = version,
                     .dcid = dcid,
                     .dcid_len = dcid_len,
                     .scid = scid,
                     .scid_len = scid_len,
                     .key_phase = key_phase,
                     .pn = pn,
                     .pn_len = 4,
                     .keys = k,
                     .min_payload = t == VEGA_QUIC_PKT_INITIAL ? 1200 - 60 : 4};
    vega_ssize n = qpkt_build_raw(&p, frames, len, pkt, sizeof pkt);
    return n < 0 ? 0 : (size_t)n;
}

static void pump(struct qp *q)
{
    uint8_t out[2048];
    for (int i = 0; i < 2; i++) {
        vega_quic_conn *c = q->side[i].c;
        if (!c)
            continue;
        for (int g = 0; g < 64; g++)
            if (vega_quic_conn_write(c, NULL, NULL, out, sizeof out, q->now) <= 0)
                break;
        qp_events(q, &q->side[i]);
        if (vega_quic_conn_expiry(c) <= q->now)
            vega_quic_conn_handle_expiry(c, q->now);
    }
    q->now += 3000000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int scenario = data[0] % 3;
    data++;
    size--;
    /* Parsing certificates costs more than a whole input: once per process. */
    static vega_crypto_cert_chain *chain;
    static vega_crypto_key *key;
    static vega_crypto_cert_store *ca;
    if (!chain && (vega_crypto_cert_chain_new(&chain) < 0 ||
                   vega_crypto_cert_chain_add(chain, QT_SRV_ED_PEM, strlen(QT_SRV_ED_PEM)) < 0 ||
                   vega_crypto_key_load_private(&key, QT_SRV_ED_KEY, strlen(QT_SRV_ED_KEY)) < 0 ||
                   vega_crypto_cert_store_new(&ca, NULL, NULL) < 0 ||
                   vega_crypto_cert_store_add_pem(ca, QT_CA_PEM, strlen(QT_CA_PEM)) < 0))
        abort();
    struct qp q;
    vega_test_net_opts o = {.seed = 1, .delay_ns = 1000000};
    if (qp_init_with(&q, chain, key, ca, &o, 1) < 0)
        abort();
    q.ccfg.wall_ms = q.scfg.wall_ms = 0;
    q.ccfg.max_datagram_frame_size = q.scfg.max_datagram_frame_size = 1200;
    q.scfg.max_streams_bidi = q.scfg.max_streams_uni = 8;
    q.ccfg.max_streams_bidi = q.ccfg.max_streams_uni = 8;
    q.side[0].echo = q.side[1].echo = true;
    static const uint8_t cli_dcid[8] = {1, 2, 3, 4, 5, 6, 7, 8}, cli_scid[8] = {9, 9, 9, 9};
    vega_quic_keys *ik = NULL;
    uint64_t pn = 0;
    if (scenario == 0) {
        vega_quic_server_params sp = {.version = VEGA_QUIC_V1,
                                      .dcid = cli_dcid,
                                      .dcid_len = 8,
                                      .scid = cli_scid,
                                      .scid_len = 8};
        if (vega_quic_conn_server_new(&q.side[1].c, &q.scfg, &q.path, &sp, q.now) < 0 ||
            vega_quic_keys_new_initial(&ik, VEGA_QUIC_V1, cli_dcid, 8, false) < 0)
            abort();
    } else {
        if (qp_client_start(&q) < 0)
            abort();
        if (scenario == 1) {
            vega_quic_conn *c = q.side[0].c;
            if (vega_quic_keys_new_initial(&ik, VEGA_QUIC_V1, c->cids.odcid, c->cids.odcid_len,
                                           true) < 0)
                abort();
            pump(&q); /* the ClientHello leaves */
        } else if (!qp_run(&q, qp_handshaken, 5000000000ull)) {
            abort(); /* the in-memory handshake must always work */
        }
    }
    while (size >= 3) {
        uint8_t kind = data[0];
        size_t len = (size_t)data[1] << 8 | data[2];
        data += 3;
        size -= 3;
        if (len > size)
            len = size;
        const uint8_t *rec = data;
        data += len;
        size -= len;
        int to = scenario == 0 ? 1 : scenario == 1 ? 0 : (kind & 4) ? 1 : 0;
        vega_quic_conn *dst = q.side[to].c;
        if (!dst)
            break;
        size_t n = 0;
        if ((kind & 3) == 0) {
            n = len < sizeof pkt ? len : sizeof pkt;
            memcpy(pkt, rec, n);
        } else if (scenario == 0) {
            n = build(VEGA_QUIC_PKT_INITIAL, VEGA_QUIC_V1, cli_dcid, 8, cli_scid, 8, false, ik,
                      pn++, rec, len);
        } else if (scenario == 1) {
            vega_quic_conn *c = q.side[0].c;
            n = build(VEGA_QUIC_PKT_INITIAL, VEGA_QUIC_V1, c->cids.local[0].id,
                      c->cids.local[0].len, cli_scid, 8, false, ik, pn++, rec, len);
        } else {
            vega_quic_conn *src = q.side[!to].c;
            struct vega__quic_space *sp = &src->sp[VEGA__QUIC_SPACE_APP];
            if (!sp->tx || src->state >= VEGA__QUIC_ST_CLOSING)
                break;
            const struct vega__quic_cid *d = &src->cids.peer[src->cids.dcid_idx];
            n = build(VEGA_QUIC_PKT_1RTT, src->version, d->id, d->len, NULL, 0, src->keys.key_phase,
                      sp->tx, sp->next_pn++, rec, len);
        }
        if (n)
            vega_quic_conn_read(dst, &q.path, kind >> 6, pkt, n, q.now);
        pump(&q);
    }
    for (int i = 0; i < 8; i++)
        pump(&q);
    vega_quic_keys_free(ik);
    qp_fini(&q);
    return 0;
}
