/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the QUIC packet layer (lib/quic/header.c, protect.c). Byte 0: bits 0-4
 * pick the short-header CID length (mod 21), bit 7 picks the mode.
 * Mode 0: the rest is a datagram: split it into coalesced packets, check every header lies in
 * it, try the Initial keys of both sides on each v1/v2 Initial (derived from its DCID, and from
 * the RFC 9001 example DCID the seeds use), check
 * any payload that authenticates, verify Retry tags, read VN lists. Nothing may crash.
 * Mode 1: the rest is an Initial payload: protect it with fixed keys, then parse and unprotect
 * the packet, which must give back the same header fields, packet number and payload. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/quic_wire.h>

#include "fuzz_target.h"

static uint8_t pkt[70000];

static void check_hdr(const vega_quic_hdr *h, const uint8_t *p, size_t left)
{
    if (h->pkt_len == 0 || h->pkt_len > left)
        abort();
    if (h->dcid_len && (h->dcid < p || h->dcid + h->dcid_len > p + h->pkt_len))
        abort();
    if (h->scid_len && (h->scid < p || h->scid + h->scid_len > p + h->pkt_len))
        abort();
    if (h->token_len && (h->token < p || h->token + h->token_len > p + h->pkt_len))
        abort();
    switch (h->type) {
    case VEGA_QUIC_PKT_INITIAL:
    case VEGA_QUIC_PKT_0RTT:
    case VEGA_QUIC_PKT_HANDSHAKE:
        if (h->dcid_len > 20 || h->scid_len > 20 || h->pn_offset + h->length != h->pkt_len)
            abort();
        break;
    case VEGA_QUIC_PKT_1RTT:
        if (h->pn_offset != 1 + h->dcid_len || h->pkt_len != left)
            abort();
        break;
    case VEGA_QUIC_PKT_RETRY:
        if (h->token_len == 0 || h->retry_tag + 16 != p + h->pkt_len)
            abort();
        break;
    case VEGA_QUIC_PKT_VN:
        if (h->nversions == 0 || h->versions + 4 * h->nversions != p + h->pkt_len)
            abort();
        break;
    case VEGA_QUIC_PKT_UNKNOWN:
        break;
    default:
        abort();
    }
}

/* RFC 9001 A.1's client DCID: the server Initials of the seeds are protected with it. */
static const uint8_t RFC_DCID[8] = {0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08};

static void try_initial(const vega_quic_hdr *h, const uint8_t *p)
{
    for (int i = 0; i < 4; i++) {
        /* Both sides' keys from the packet's own DCID (a client Initial), then from the RFC's. */
        bool server = i & 1;
        const uint8_t *dcid = i < 2 ? h->dcid : RFC_DCID;
        size_t dcid_len = i < 2 ? h->dcid_len : sizeof RFC_DCID;
        vega_quic_keys *k;
        if (vega_quic_keys_new_initial(&k, h->version, dcid, dcid_len, server) != 0)
            abort();
        memcpy(pkt, p, h->pkt_len);
        vega_quic_unprotected u;
        uint64_t err = 0;
        int rc = vega_quic_packet_unprotect(k, pkt, h->pkt_len, h->pn_offset, -1, &u, &err);
        if (rc != 0 && rc != VEGA_ERR_PROTO && rc != VEGA_ERR_CRYPTO_AUTH)
            abort();
        if (rc == VEGA_ERR_CRYPTO_AUTH && memcmp(pkt, p, h->pn_offset + 1) != 0)
            abort(); /* the header must be left as received */
        if (rc == 0) {
            if (u.payload_off + u.payload_len + 16 != h->pkt_len)
                abort();
            (void)vega_quic_payload_check(pkt + u.payload_off, u.payload_len, h->type, &err);
        }
        vega_quic_keys_free(k);
    }
}

static void datagram(const uint8_t *d, size_t len, size_t short_dcid)
{
    vega_quic_hdr hs[16];
    vega_ssize n = vega_quic_dgram_split(d, len, short_dcid, hs, 16);
    if (n == VEGA_ERR_PROTO)
        return;
    if (n < 1 || n > 16)
        abort();
    size_t off = 0;
    for (vega_ssize i = 0; i < n; i++) {
        const vega_quic_hdr *h = &hs[i];
        check_hdr(h, d + off, len - off);
        if (i > 0 && (h->dcid_len != hs[0].dcid_len || memcmp(h->dcid, hs[0].dcid, h->dcid_len)))
            abort();
        if (h->type == VEGA_QUIC_PKT_INITIAL)
            try_initial(h, d + off);
        if (h->type == VEGA_QUIC_PKT_RETRY) {
            int rc = vega_quic_retry_verify(h, d + off, h->dcid, h->dcid_len);
            if (rc != 0 && rc != VEGA_ERR_CRYPTO_AUTH && rc != -EINVAL)
                abort();
        }
        for (size_t v = 0; h->type == VEGA_QUIC_PKT_VN && v < h->nversions; v++)
            (void)vega_quic_hdr_vn_version(h, v);
        off += h->pkt_len;
    }
    if (off > len)
        abort();
}

static void roundtrip(const uint8_t *payload, size_t len, uint8_t sel)
{
    static const uint8_t dcid[8] = {0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08};
    uint32_t version = (sel & 0x20) ? VEGA_QUIC_V2 : VEGA_QUIC_V1;
    size_t pn_len = 1 + (sel & 3);
    uint64_t pn = (uint64_t)sel * 0x01010101u & ((1ull << (8 * pn_len)) - 1);
    if (len > 1400)
        len = 1400;
    if (pn_len + len < 4)
        return;
    vega_quic_hdr h = {.type = VEGA_QUIC_PKT_INITIAL,
                       .version = version,
                       .dcid = dcid,
                       .dcid_len = 8,
                       .token = payload,
                       .token_len = len % 7,
                       .length = pn_len + len + 16};
    vega_ssize hl = vega_quic_hdr_write(pkt, sizeof pkt, &h, pn_len, pn);
    if (hl <= 0)
        abort();
    memcpy(pkt + hl, payload, len);
    vega_quic_keys *k;
    if (vega_quic_keys_new_initial(&k, version, dcid, 8, true) != 0)
        abort();
    vega_ssize n = vega_quic_packet_protect(k, pkt, sizeof pkt, (size_t)hl, pn, len);
    if (n != hl + (vega_ssize)len + 16)
        abort();
    vega_quic_hdr p;
    if (vega_quic_hdr_parse(&p, pkt, (size_t)n, 0) != 0 || p.type != VEGA_QUIC_PKT_INITIAL ||
        p.version != version || p.pkt_len != (size_t)n || p.token_len != h.token_len ||
        p.pn_offset != (size_t)hl - pn_len)
        abort();
    vega_quic_unprotected u;
    if (vega_quic_packet_unprotect(k, pkt, p.pkt_len, p.pn_offset, (int64_t)pn - 1, &u, NULL) !=
            0 ||
        u.pn != pn || u.pn_len != pn_len || u.payload_len != len ||
        memcmp(pkt + u.payload_off, payload, len) != 0)
        abort();
    vega_quic_keys_free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 0x80)
        roundtrip(data + 1, size - 1, data[0]);
    else
        datagram(data + 1, size - 1, (size_t)(data[0] & 0x1f) % 21);
    return 0;
}
