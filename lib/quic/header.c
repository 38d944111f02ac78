/* SPDX-License-Identifier: MIT */
/* Packet headers (RFC 9000 §17, RFC 8999 invariants, RFC 9369 §3.2 v2 type bits): parsing,
 * coalesced packets (§12.2), writing long and short headers and Version Negotiation. */
#include "quic_int.h"

int vega__quic_long_type_bits(uint32_t version, vega_quic_pkt_type t)
{
    /* v1: Initial 0, 0-RTT 1, Handshake 2, Retry 3; v2 rotates them: Retry 0, Initial 1, ... */
    int bits;
    switch (t) {
    case VEGA_QUIC_PKT_INITIAL:
        bits = 0;
        break;
    case VEGA_QUIC_PKT_0RTT:
        bits = 1;
        break;
    case VEGA_QUIC_PKT_HANDSHAKE:
        bits = 2;
        break;
    case VEGA_QUIC_PKT_RETRY:
        bits = 3;
        break;
    default:
        return -1;
    }
    if (version == VEGA_QUIC_V2)
        return (bits + 1) & 3;
    return version == VEGA_QUIC_V1 ? bits : -1;
}

static vega_quic_pkt_type type_from_bits(uint32_t version, unsigned bits)
{
    static const vega_quic_pkt_type v1[4] = {VEGA_QUIC_PKT_INITIAL, VEGA_QUIC_PKT_0RTT,
                                             VEGA_QUIC_PKT_HANDSHAKE, VEGA_QUIC_PKT_RETRY};
    return version == VEGA_QUIC_V2 ? v1[(bits + 3) & 3] : v1[bits & 3];
}

static int parse_long(vega_quic_hdr *h, const uint8_t *in, size_t len)
{
    struct vega__quic_rd r = {in + 5, in + len};
    uint8_t n;
    h->version = vega__quic_be32(in + 1);
    bool known = vega_quic_version_is_supported(h->version);
    /* RFC 8999 §5.1: any version carries the two CIDs (up to 255 bytes each); v1 and v2 limit
     * them to 20 (RFC 9000 §17.2: "MUST drop packets with a value larger than 20"). */
    if (!vega__quic_rd_u8(&r, &n) || (known && n > VEGA_QUIC_MAX_CID_LEN) ||
        !vega__quic_rd_bytes(&r, n, &h->dcid))
        return VEGA_ERR_PROTO;
    h->dcid_len = n;
    if (!vega__quic_rd_u8(&r, &n) || (known && n > VEGA_QUIC_MAX_CID_LEN) ||
        !vega__quic_rd_bytes(&r, n, &h->scid))
        return VEGA_ERR_PROTO;
    h->scid_len = n;
    size_t rest = vega__quic_rd_left(&r);
    if (h->version == 0) {
        /* §17.2.1: a list of 32-bit versions; an empty or ragged one is malformed. */
        if (rest == 0 || rest % 4)
            return VEGA_ERR_PROTO;
        h->type = VEGA_QUIC_PKT_VN;
        h->versions = r.p;
        h->nversions = rest / 4;
        h->pkt_len = len;
        return 0;
    }
    if (!known) {
        h->type = VEGA_QUIC_PKT_UNKNOWN;
        h->pkt_len = len;
        return 0;
    }
    /* §17.2: "Packets containing a zero value for this bit are not valid packets in this
     * version and MUST be discarded." */
    if (!(in[0] & 0x40))
        return VEGA_ERR_PROTO;
    h->type = type_from_bits(h->version, (in[0] >> 4) & 3);
    if (h->type == VEGA_QUIC_PKT_RETRY) {
        /* §17.2.5.2: a client MUST discard a Retry packet with a zero-length token. */
        if (rest <= VEGA_QUIC_RETRY_TAG_LEN)
            return VEGA_ERR_PROTO;
        h->token = r.p;
        h->token_len = rest - VEGA_QUIC_RETRY_TAG_LEN;
        h->retry_tag = r.p + h->token_len;
        h->pkt_len = len;
        return 0;
    }
    uint64_t v;
    if (h->type == VEGA_QUIC_PKT_INITIAL) {
        if (!vega__quic_rd_varint(&r, &v) || v > vega__quic_rd_left(&r) ||
            !vega__quic_rd_bytes(&r, (size_t)v, &h->token))
            return VEGA_ERR_PROTO;
        h->token_len = (size_t)v;
    }
    if (!vega__quic_rd_varint(&r, &v) || v > vega__quic_rd_left(&r))
        return VEGA_ERR_PROTO;
    h->length = v;
    h->pn_offset = (size_t)(r.p - in);
    h->pkt_len = h->pn_offset + (size_t)v;
    return 0;
}

int vega_quic_hdr_parse(vega_quic_hdr *h, const uint8_t *in, size_t len, size_t short_dcid_len)
{
    memset(h, 0, sizeof(*h));
    if (len == 0)
        return VEGA_ERR_PROTO;
    h->first = in[0];
    if (in[0] & 0x80) {
        if (len < 7)
            return VEGA_ERR_PROTO;
        int rc = parse_long(h, in, len);
        if (rc < 0)
            memset(h, 0, sizeof(*h));
        return rc;
    }
    if (!(in[0] & 0x40) || short_dcid_len > VEGA_QUIC_MAX_CID_LEN || len < 1 + short_dcid_len)
        return VEGA_ERR_PROTO;
    h->type = VEGA_QUIC_PKT_1RTT;
    h->dcid = in + 1;
    h->dcid_len = short_dcid_len;
    h->pn_offset = 1 + short_dcid_len;
    h->pkt_len = len;
    return 0;
}

vega_ssize vega_quic_dgram_split(const uint8_t *dgram, size_t len, size_t short_dcid_len,
                                 vega_quic_hdr *out, size_t max)
{
    if (max == 0)
        return -EINVAL;
    if (len == 0)
        return VEGA_ERR_PROTO;
    size_t off = 0, n = 0;
    while (off < len && n < max) {
        if (vega_quic_hdr_parse(&out[n], dgram + off, len - off, short_dcid_len) < 0) {
            if (n == 0)
                return VEGA_ERR_PROTO;
            break;
        }
        /* §12.2: "Receivers SHOULD ignore any subsequent packets with a different Destination
         * Connection ID than the first packet in the datagram." */
        if (n > 0 && (out[n].dcid_len != out[0].dcid_len ||
                      memcmp(out[n].dcid, out[0].dcid, out[0].dcid_len) != 0))
            break;
        off += out[n].pkt_len;
        n++;
    }
    return (vega_ssize)n;
}

static size_t length_field_len(uint64_t length)
{
    return length < 16384 ? 2 : vega_quic_varint_len(length);
}

size_t vega_quic_hdr_len(const vega_quic_hdr *h, size_t pn_len)
{
    if (pn_len < 1 || pn_len > 4 || h->dcid_len > VEGA_QUIC_MAX_CID_LEN)
        return 0;
    if (h->type == VEGA_QUIC_PKT_1RTT)
        return 1 + h->dcid_len + pn_len;
    if (vega__quic_long_type_bits(h->version, h->type) < 0 || h->type == VEGA_QUIC_PKT_RETRY ||
        h->scid_len > VEGA_QUIC_MAX_CID_LEN || vega_quic_varint_len(h->length) == 0)
        return 0;
    size_t n = 7 + h->dcid_len + h->scid_len + length_field_len(h->length) + pn_len;
    if (h->type == VEGA_QUIC_PKT_INITIAL) {
        size_t tl = vega_quic_varint_len(h->token_len);
        if (tl == 0)
            return 0;
        n += tl + h->token_len;
    }
    return n;
}

vega_ssize vega_quic_hdr_write(uint8_t *out, size_t cap, const vega_quic_hdr *h, size_t pn_len,
                               uint64_t pn)
{
    size_t n = vega_quic_hdr_len(h, pn_len);
    if (n == 0)
        return -EINVAL;
    if (cap < n)
        return VEGA_ERR_NOBUF;
    struct vega__quic_wr w = {out, out + cap, false};
    if (h->type == VEGA_QUIC_PKT_1RTT) {
        /* §17.3.1: 0 1 S R R K P P */
        vega__quic_wr_u8(
            &w, (uint8_t)(0x40 | (h->spin ? 0x20 : 0) | (h->key_phase ? 0x04 : 0) | (pn_len - 1)));
        vega__quic_wr_bytes(&w, h->dcid, h->dcid_len);
    } else {
        int bits = vega__quic_long_type_bits(h->version, h->type);
        uint8_t v[4];
        vega__quic_put32(v, h->version);
        vega__quic_wr_u8(&w, (uint8_t)(0xc0 | bits << 4 | (int)(pn_len - 1)));
        vega__quic_wr_bytes(&w, v, 4);
        vega__quic_wr_u8(&w, (uint8_t)h->dcid_len);
        vega__quic_wr_bytes(&w, h->dcid, h->dcid_len);
        vega__quic_wr_u8(&w, (uint8_t)h->scid_len);
        vega__quic_wr_bytes(&w, h->scid, h->scid_len);
        if (h->type == VEGA_QUIC_PKT_INITIAL) {
            vega__quic_wr_varint(&w, h->token_len);
            vega__quic_wr_bytes(&w, h->token, h->token_len);
        }
        size_t ll = length_field_len(h->length);
        if (vega_quic_varint_write_n(w.p, (size_t)(w.end - w.p), h->length, ll) < 0)
            return VEGA_ERR_INTERNAL;
        w.p += ll;
    }
    for (size_t i = pn_len; i-- > 0;)
        vega__quic_wr_u8(&w, (uint8_t)(pn >> (8 * i)));
    if (w.overflow || (size_t)(w.p - out) != n)
        return VEGA_ERR_INTERNAL;
    return (vega_ssize)n;
}

vega_ssize vega_quic_vn_write(uint8_t *out, size_t cap, uint8_t unused, const uint8_t *dcid,
                              size_t dcid_len, const uint8_t *scid, size_t scid_len,
                              const uint32_t *versions, size_t n)
{
    if (n == 0 || dcid_len > 255 || scid_len > 255 || n > (SIZE_MAX - 600) / 4)
        return -EINVAL;
    struct vega__quic_wr w = {out, out + cap, false};
    uint8_t zero[4] = {0, 0, 0, 0};
    vega__quic_wr_u8(&w, (uint8_t)(0x80 | (unused & 0x7f)));
    vega__quic_wr_bytes(&w, zero, 4);
    vega__quic_wr_u8(&w, (uint8_t)dcid_len);
    vega__quic_wr_bytes(&w, dcid, dcid_len);
    vega__quic_wr_u8(&w, (uint8_t)scid_len);
    vega__quic_wr_bytes(&w, scid, scid_len);
    for (size_t i = 0; i < n; i++) {
        uint8_t v[4];
        vega__quic_put32(v, versions[i]);
        vega__quic_wr_bytes(&w, v, 4);
    }
    if (w.overflow)
        return VEGA_ERR_NOBUF;
    return (vega_ssize)(w.p - out);
}

uint32_t vega_quic_hdr_vn_version(const vega_quic_hdr *h, size_t i)
{
    if (h->type != VEGA_QUIC_PKT_VN || i >= h->nversions)
        return 0;
    return vega__quic_be32(h->versions + 4 * i);
}
