/* SPDX-License-Identifier: MIT */
/* Transport parameters (RFC 9000 §7.4, §18): encoding and strict decoding, with RFC 9221
 * max_datagram_frame_size and RFC 9368 version_information. */
#include "quic_int.h"

enum {
    TP_ORIGINAL_DCID = 0x00,
    TP_MAX_IDLE_TIMEOUT = 0x01,
    TP_STATELESS_RESET_TOKEN = 0x02,
    TP_MAX_UDP_PAYLOAD_SIZE = 0x03,
    TP_INITIAL_MAX_DATA = 0x04,
    TP_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL = 0x05,
    TP_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE = 0x06,
    TP_INITIAL_MAX_STREAM_DATA_UNI = 0x07,
    TP_INITIAL_MAX_STREAMS_BIDI = 0x08,
    TP_INITIAL_MAX_STREAMS_UNI = 0x09,
    TP_ACK_DELAY_EXPONENT = 0x0a,
    TP_MAX_ACK_DELAY = 0x0b,
    TP_DISABLE_ACTIVE_MIGRATION = 0x0c,
    TP_PREFERRED_ADDRESS = 0x0d,
    TP_ACTIVE_CONNECTION_ID_LIMIT = 0x0e,
    TP_INITIAL_SCID = 0x0f,
    TP_RETRY_SCID = 0x10,
    TP_VERSION_INFORMATION = 0x11,     /* RFC 9368 §5 */
    TP_MAX_DATAGRAM_FRAME_SIZE = 0x20, /* RFC 9221 §3 */
};

#define DEFAULT_MAX_UDP_PAYLOAD 65527
#define DEFAULT_ACK_DELAY_EXP   3
#define DEFAULT_MAX_ACK_DELAY   25
#define DEFAULT_ACTIVE_CID      2
#define MAX_STREAMS_LIMIT       (1ull << 60)
#define PREFERRED_ADDRESS_FIXED (4 + 2 + 16 + 2 + 1 + VEGA_QUIC_RESET_TOKEN_LEN)

void vega_quic_tp_init(vega_quic_tp *tp)
{
    memset(tp, 0, sizeof(*tp));
    tp->max_udp_payload_size = DEFAULT_MAX_UDP_PAYLOAD;
    tp->ack_delay_exponent = DEFAULT_ACK_DELAY_EXP;
    tp->max_ack_delay = DEFAULT_MAX_ACK_DELAY;
    tp->active_connection_id_limit = DEFAULT_ACTIVE_CID;
}

/* The integer parameters: id, field, and the check each value must pass. */
struct int_param {
    uint64_t id;
    size_t off;
    uint64_t def, min, max;
};

#define IP(id, field, def, min, max)                                                               \
    {                                                                                              \
        id, offsetof(vega_quic_tp, field), def, min, max                                           \
    }
static const struct int_param int_params[] = {
    IP(TP_MAX_IDLE_TIMEOUT, max_idle_timeout, 0, 0, VEGA_QUIC_MAX_VARINT),
    /* §18.2: "Values below 1200 are invalid." */
    IP(TP_MAX_UDP_PAYLOAD_SIZE, max_udp_payload_size, DEFAULT_MAX_UDP_PAYLOAD, 1200,
       VEGA_QUIC_MAX_VARINT),
    IP(TP_INITIAL_MAX_DATA, initial_max_data, 0, 0, VEGA_QUIC_MAX_VARINT),
    IP(TP_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL, initial_max_stream_data_bidi_local, 0, 0,
       VEGA_QUIC_MAX_VARINT),
    IP(TP_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE, initial_max_stream_data_bidi_remote, 0, 0,
       VEGA_QUIC_MAX_VARINT),
    IP(TP_INITIAL_MAX_STREAM_DATA_UNI, initial_max_stream_data_uni, 0, 0, VEGA_QUIC_MAX_VARINT),
    /* §4.6: a max_streams above 2^60 is a TRANSPORT_PARAMETER_ERROR. */
    IP(TP_INITIAL_MAX_STREAMS_BIDI, initial_max_streams_bidi, 0, 0, MAX_STREAMS_LIMIT),
    IP(TP_INITIAL_MAX_STREAMS_UNI, initial_max_streams_uni, 0, 0, MAX_STREAMS_LIMIT),
    /* §18.2: "Values above 20 are invalid." / "Values of 2^14 or greater are invalid." */
    IP(TP_ACK_DELAY_EXPONENT, ack_delay_exponent, DEFAULT_ACK_DELAY_EXP, 0, 20),
    IP(TP_MAX_ACK_DELAY, max_ack_delay, DEFAULT_MAX_ACK_DELAY, 0, (1u << 14) - 1),
    /* §18.2: "The value of the active_connection_id_limit parameter MUST be at least 2." */
    IP(TP_ACTIVE_CONNECTION_ID_LIMIT, active_connection_id_limit, DEFAULT_ACTIVE_CID, 2,
       VEGA_QUIC_MAX_VARINT),
    IP(TP_MAX_DATAGRAM_FRAME_SIZE, max_datagram_frame_size, 0, 0, VEGA_QUIC_MAX_VARINT),
};

static uint64_t *int_field(vega_quic_tp *tp, const struct int_param *p)
{
    return (uint64_t *)(void *)((char *)tp + p->off);
}

static uint64_t int_value(const vega_quic_tp *tp, const struct int_param *p)
{
    uint64_t v;
    memcpy(&v, (const char *)tp + p->off, sizeof(v));
    return v;
}

static const struct int_param *find_int(uint64_t id)
{
    for (size_t i = 0; i < sizeof(int_params) / sizeof(int_params[0]); i++)
        if (int_params[i].id == id)
            return &int_params[i];
    return NULL;
}

static bool server_only(uint64_t id)
{
    return id == TP_ORIGINAL_DCID || id == TP_PREFERRED_ADDRESS || id == TP_RETRY_SCID ||
           id == TP_STATELESS_RESET_TOKEN;
}

static bool decode_cid(const uint8_t *v, size_t len, bool *has, uint8_t *dst, uint8_t *dst_len)
{
    if (len > VEGA_QUIC_MAX_CID_LEN)
        return false;
    *has = true;
    *dst_len = (uint8_t)len;
    if (len)
        memcpy(dst, v, len);
    return true;
}

static bool decode_preferred(vega_quic_preferred_address *pa, const uint8_t *v, size_t len)
{
    /* §18.2: a server MUST NOT include a zero-length connection ID in this parameter. */
    if (len < PREFERRED_ADDRESS_FIXED + 1)
        return false;
    uint8_t cl = v[24];
    if (cl < 1 || cl > VEGA_QUIC_MAX_CID_LEN || len != (size_t)PREFERRED_ADDRESS_FIXED + cl)
        return false;
    memcpy(pa->ipv4, v, 4);
    pa->ipv4_port = (uint16_t)(v[4] << 8 | v[5]);
    memcpy(pa->ipv6, v + 6, 16);
    pa->ipv6_port = (uint16_t)(v[22] << 8 | v[23]);
    pa->cid_len = cl;
    memcpy(pa->cid, v + 25, cl);
    memcpy(pa->reset_token, v + 25 + cl, VEGA_QUIC_RESET_TOKEN_LEN);
    return true;
}

static bool decode_version_info(vega_quic_tp *tp, const uint8_t *v, size_t len)
{
    /* RFC 9368 §5: Chosen Version then Available Versions, 32 bits each, none of them 0. */
    if (len < 4 || len % 4 || (len - 4) / 4 > VEGA_QUIC_TP_MAX_VERSIONS)
        return false;
    tp->has_version_info = true;
    tp->chosen_version = vega__quic_be32(v);
    tp->n_available_versions = (len - 4) / 4;
    if (tp->chosen_version == 0)
        return false;
    for (size_t i = 0; i < tp->n_available_versions; i++) {
        tp->available_versions[i] = vega__quic_be32(v + 4 + 4 * i);
        if (tp->available_versions[i] == 0)
            return false;
    }
    return true;
}

/* One parameter's value; false when it is malformed or out of range. */
static bool decode_param(vega_quic_tp *tp, uint64_t id, const uint8_t *v, size_t len)
{
    const struct int_param *ip = find_int(id);
    if (ip) {
        uint64_t x;
        /* §18: the value is one varint filling the parameter exactly. */
        if (vega_quic_varint_read(v, len, &x) != (vega_ssize)len || x < ip->min || x > ip->max)
            return false;
        *int_field(tp, ip) = x;
        if (id == TP_MAX_DATAGRAM_FRAME_SIZE)
            tp->has_max_datagram_frame_size = true;
        return true;
    }
    switch (id) {
    case TP_ORIGINAL_DCID:
        return decode_cid(v, len, &tp->has_original_dcid, tp->original_dcid,
                          &tp->original_dcid_len);
    case TP_INITIAL_SCID:
        return decode_cid(v, len, &tp->has_initial_scid, tp->initial_scid, &tp->initial_scid_len);
    case TP_RETRY_SCID:
        return decode_cid(v, len, &tp->has_retry_scid, tp->retry_scid, &tp->retry_scid_len);
    case TP_STATELESS_RESET_TOKEN:
        if (len != VEGA_QUIC_RESET_TOKEN_LEN)
            return false;
        tp->has_stateless_reset_token = true;
        memcpy(tp->stateless_reset_token, v, len);
        return true;
    case TP_DISABLE_ACTIVE_MIGRATION:
        tp->disable_active_migration = true;
        return len == 0;
    case TP_PREFERRED_ADDRESS:
        tp->has_preferred_address = true;
        return decode_preferred(&tp->preferred_address, v, len);
    case TP_VERSION_INFORMATION:
        return decode_version_info(tp, v, len);
    }
    return true; /* unknown or GREASE (31 * N + 27): ignored (§18.1) */
}

/* Bit of a known parameter in the duplicate mask; -1 for unknown ones. */
static int seen_bit(uint64_t id)
{
    if (id <= TP_VERSION_INFORMATION)
        return (int)id;
    if (id == TP_MAX_DATAGRAM_FRAME_SIZE)
        return TP_VERSION_INFORMATION + 1;
    return -1;
}

int vega_quic_tp_decode(vega_quic_tp *tp, const uint8_t *in, size_t len, bool from_server,
                        uint64_t *wire_err)
{
    vega_quic_tp_init(tp);
    struct vega__quic_rd r = {in, in + len};
    uint32_t seen = 0;
    while (vega__quic_rd_left(&r)) {
        uint64_t id, plen;
        const uint8_t *v;
        if (!vega__quic_rd_varint(&r, &id) || !vega__quic_rd_varint(&r, &plen) ||
            plen > vega__quic_rd_left(&r) || !vega__quic_rd_bytes(&r, (size_t)plen, &v))
            goto bad;
        int bit = seen_bit(id);
        /* §7.4: "An endpoint MUST NOT send a parameter more than once"; §18.2: a client
         * sending a server-only parameter is a TRANSPORT_PARAMETER_ERROR. */
        if (bit >= 0 && (seen & (1u << bit)))
            goto bad;
        if (bit >= 0)
            seen |= 1u << bit;
        if (!from_server && server_only(id))
            goto bad;
        if (!decode_param(tp, id, v, (size_t)plen))
            goto bad;
    }
    /* §7.3: initial_source_connection_id from both; original_destination_connection_id from
     * the server: "An endpoint MUST treat the absence of [these] ... as a connection error of
     * type TRANSPORT_PARAMETER_ERROR." (retry_source_connection_id depends on the connection.) */
    if (!tp->has_initial_scid || (from_server && !tp->has_original_dcid))
        goto bad;
    return 0;
bad:
    if (wire_err)
        *wire_err = VEGA_QUIC_TRANSPORT_PARAMETER_ERROR;
    return VEGA_ERR_PROTO;
}

static void wr_param(struct vega__quic_wr *w, uint64_t id, const void *v, size_t len)
{
    vega__quic_wr_varint(w, id);
    vega__quic_wr_varint(w, len);
    vega__quic_wr_bytes(w, v, len);
}

static void wr_int(struct vega__quic_wr *w, uint64_t id, uint64_t v)
{
    vega__quic_wr_varint(w, id);
    vega__quic_wr_varint(w, vega_quic_varint_len(v));
    vega__quic_wr_varint(w, v);
}

vega_ssize vega_quic_tp_encode(const vega_quic_tp *tp, bool from_server, uint8_t *out, size_t cap)
{
    const vega_quic_preferred_address *pa = &tp->preferred_address;
    if (!tp->has_initial_scid || (from_server && !tp->has_original_dcid) ||
        tp->original_dcid_len > VEGA_QUIC_MAX_CID_LEN ||
        tp->initial_scid_len > VEGA_QUIC_MAX_CID_LEN ||
        tp->retry_scid_len > VEGA_QUIC_MAX_CID_LEN ||
        (tp->has_preferred_address && (pa->cid_len < 1 || pa->cid_len > VEGA_QUIC_MAX_CID_LEN)) ||
        (tp->has_version_info &&
         (tp->chosen_version == 0 || tp->n_available_versions > VEGA_QUIC_TP_MAX_VERSIONS)))
        return -EINVAL;
    if (!from_server && (tp->has_original_dcid || tp->has_retry_scid ||
                         tp->has_stateless_reset_token || tp->has_preferred_address))
        return -EINVAL;
    for (size_t i = 0; i < sizeof(int_params) / sizeof(int_params[0]); i++) {
        uint64_t v = int_value(tp, &int_params[i]);
        if (v < int_params[i].min || v > int_params[i].max)
            return -EINVAL;
    }
    for (size_t i = 0; tp->has_version_info && i < tp->n_available_versions; i++)
        if (tp->available_versions[i] == 0)
            return -EINVAL;

    struct vega__quic_wr w = {out, out + cap, false};
    if (tp->has_original_dcid)
        wr_param(&w, TP_ORIGINAL_DCID, tp->original_dcid, tp->original_dcid_len);
    wr_param(&w, TP_INITIAL_SCID, tp->initial_scid, tp->initial_scid_len);
    if (tp->has_retry_scid)
        wr_param(&w, TP_RETRY_SCID, tp->retry_scid, tp->retry_scid_len);
    if (tp->has_stateless_reset_token)
        wr_param(&w, TP_STATELESS_RESET_TOKEN, tp->stateless_reset_token,
                 VEGA_QUIC_RESET_TOKEN_LEN);
    for (size_t i = 0; i < sizeof(int_params) / sizeof(int_params[0]); i++) {
        const struct int_param *p = &int_params[i];
        uint64_t v = int_value(tp, p);
        bool present =
            p->id == TP_MAX_DATAGRAM_FRAME_SIZE ? tp->has_max_datagram_frame_size : v != p->def;
        if (present)
            wr_int(&w, p->id, v);
    }
    if (tp->disable_active_migration)
        wr_param(&w, TP_DISABLE_ACTIVE_MIGRATION, NULL, 0);
    if (tp->has_preferred_address) {
        uint8_t b[PREFERRED_ADDRESS_FIXED + VEGA_QUIC_MAX_CID_LEN];
        memcpy(b, pa->ipv4, 4);
        b[4] = (uint8_t)(pa->ipv4_port >> 8);
        b[5] = (uint8_t)pa->ipv4_port;
        memcpy(b + 6, pa->ipv6, 16);
        b[22] = (uint8_t)(pa->ipv6_port >> 8);
        b[23] = (uint8_t)pa->ipv6_port;
        b[24] = pa->cid_len;
        memcpy(b + 25, pa->cid, pa->cid_len);
        memcpy(b + 25 + pa->cid_len, pa->reset_token, VEGA_QUIC_RESET_TOKEN_LEN);
        wr_param(&w, TP_PREFERRED_ADDRESS, b, PREFERRED_ADDRESS_FIXED + pa->cid_len);
    }
    if (tp->has_version_info) {
        uint8_t b[4 * (1 + VEGA_QUIC_TP_MAX_VERSIONS)];
        vega__quic_put32(b, tp->chosen_version);
        for (size_t i = 0; i < tp->n_available_versions; i++)
            vega__quic_put32(b + 4 + 4 * i, tp->available_versions[i]);
        wr_param(&w, TP_VERSION_INFORMATION, b, 4 + 4 * tp->n_available_versions);
    }
    if (w.overflow)
        return VEGA_ERR_NOBUF;
    return (vega_ssize)(w.p - out);
}
