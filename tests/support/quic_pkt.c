/* SPDX-License-Identifier: MIT */
/* The typed QUIC packet builder of quic_pkt.h: frames encoded with the wire API, then the header
 * and packet protection (RFC 9000 §17, RFC 9001 §5); a packet opened back into its frames. */
#include <string.h>

#include "conn_int.h"
#include "quic_pkt.h"

#define TAG_LEN VEGA_CRYPTO_AEAD_TAG_LEN

vega_ssize qpkt_build_raw(const struct qpkt *p, const uint8_t *payload, size_t len, uint8_t *out,
                          size_t cap)
{
    size_t pn_len = p->pn_len ? p->pn_len : 4;
    if (pn_len > 4)
        return -EINVAL;
    size_t plen = len > p->min_payload ? len : p->min_payload;
    if (plen + pn_len < 4)
        plen = 4 - pn_len; /* header protection samples 4 bytes past the packet number */
    vega_quic_hdr h = {.type = p->type,
                       .version = p->version ? p->version : VEGA_QUIC_V1,
                       .dcid = p->dcid,
                       .dcid_len = p->dcid_len,
                       .scid = p->scid,
                       .scid_len = p->scid_len,
                       .token = p->token,
                       .token_len = p->token_len,
                       .length = pn_len + plen + TAG_LEN,
                       .key_phase = p->key_phase};
    vega_ssize hl = vega_quic_hdr_write(out, cap, &h, pn_len, p->pn);
    if (hl < 0)
        return hl;
    if ((size_t)hl + plen + TAG_LEN > cap)
        return VEGA_ERR_NOBUF;
    if (len)
        memcpy(out + hl, payload, len);
    memset(out + hl + len, 0, plen - len);
    return vega_quic_packet_protect(p->keys, out, cap, (size_t)hl, p->pn, plen);
}

vega_ssize qpkt_build(const struct qpkt *p, const vega_quic_frame *frames, size_t n, uint8_t *out,
                      size_t cap)
{
    uint8_t payload[QPKT_MAX_PAYLOAD];
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        vega_ssize w = vega_quic_frame_encode(&frames[i], payload + len, sizeof payload - len);
        if (w < 0)
            return w;
        len += (size_t)w;
    }
    return qpkt_build_raw(p, payload, len, out, cap);
}

void qpkt_from_conn(struct qpkt *p, vega_quic_conn *c)
{
    struct vega__quic_space *sp = &c->sp[VEGA__QUIC_SPACE_APP];
    const struct vega__quic_cid *d = &c->cids.peer[c->cids.dcid_idx];
    memset(p, 0, sizeof *p);
    p->type = VEGA_QUIC_PKT_1RTT;
    p->version = c->version;
    p->dcid = d->id;
    p->dcid_len = d->len;
    p->key_phase = c->keys.key_phase;
    p->pn = sp->next_pn++;
    p->keys = sp->tx;
}

vega_quic_keys *qpkt_conn_rx_keys(vega_quic_conn *c, int64_t *largest_pn)
{
    struct vega__quic_space *sp = &c->sp[VEGA__QUIC_SPACE_APP];
    *largest_pn = sp->largest_recvd;
    return sp->rx;
}

vega_ssize qpkt_open(vega_quic_keys *keys, uint8_t *pkt, size_t len, size_t short_dcid_len,
                     int64_t largest_pn, vega_quic_frame *frames, size_t max, uint64_t *pn)
{
    vega_quic_hdr h;
    int rc = vega_quic_hdr_parse(&h, pkt, len, short_dcid_len);
    if (rc < 0)
        return rc;
    vega_quic_unprotected u;
    rc = vega_quic_packet_unprotect(keys, pkt, h.pkt_len, h.pn_offset, largest_pn, &u, NULL);
    if (rc < 0)
        return rc;
    if (pn)
        *pn = u.pn;
    const uint8_t *q = pkt + u.payload_off, *end = q + u.payload_len;
    size_t n = 0;
    while (q < end) {
        if (n == max)
            return VEGA_ERR_PROTO;
        vega_ssize r = vega_quic_frame_decode(&frames[n++], q, (size_t)(end - q), NULL);
        if (r < 0)
            return r;
        q += r;
    }
    return (vega_ssize)n;
}

const vega_quic_frame *qpkt_find(const vega_quic_frame *frames, size_t n, vega_quic_frame_type t)
{
    for (size_t i = 0; i < n; i++)
        if (frames[i].type == t)
            return &frames[i];
    return NULL;
}

/* ---- frames --------------------------------------------------------------------------------- */

vega_quic_frame qf_padding(size_t len)
{
    return (vega_quic_frame){.type = VEGA_QUIC_FT_PADDING, .u.padding.len = len};
}

vega_quic_frame qf_ping(void)
{
    return (vega_quic_frame){.type = VEGA_QUIC_FT_PING};
}

vega_quic_frame qf_ack(uint64_t largest, uint64_t first_range)
{
    return (vega_quic_frame){.type = VEGA_QUIC_FT_ACK,
                             .u.ack = {.largest = largest, .first_range = first_range}};
}

vega_quic_frame qf_stream(uint64_t id, uint64_t off, const void *data, size_t len, bool fin)
{
    vega_quic_frame f = {.type = VEGA_QUIC_FT_STREAM};
    f.u.stream.stream_id = id;
    f.u.stream.offset = off;
    f.u.stream.data = data;
    f.u.stream.len = len;
    f.u.stream.has_offset = off != 0;
    f.u.stream.has_len = true;
    f.u.stream.fin = fin;
    return f;
}

vega_quic_frame qf_crypto(uint64_t off, const void *data, size_t len)
{
    return (vega_quic_frame){.type = VEGA_QUIC_FT_CRYPTO,
                             .u.crypto = {.offset = off, .data = data, .len = len}};
}

vega_quic_frame qf_reset_stream(uint64_t id, uint64_t error_code, uint64_t final_size)
{
    return (vega_quic_frame){
        .type = VEGA_QUIC_FT_RESET_STREAM,
        .u.reset_stream = {.stream_id = id, .error_code = error_code, .final_size = final_size}};
}

vega_quic_frame qf_stop_sending(uint64_t id, uint64_t error_code)
{
    return (vega_quic_frame){.type = VEGA_QUIC_FT_STOP_SENDING,
                             .u.stop_sending = {.stream_id = id, .error_code = error_code}};
}

vega_quic_frame qf_max_data(uint64_t max)
{
    return (vega_quic_frame){.type = VEGA_QUIC_FT_MAX_DATA, .u.limit.max = max};
}

vega_quic_frame qf_max_stream_data(uint64_t id, uint64_t max)
{
    return (vega_quic_frame){.type = VEGA_QUIC_FT_MAX_STREAM_DATA,
                             .u.stream_limit = {.stream_id = id, .max = max}};
}

vega_quic_frame qf_max_streams(bool bidi, uint64_t max)
{
    return (vega_quic_frame){.type = bidi ? VEGA_QUIC_FT_MAX_STREAMS_BIDI
                                          : VEGA_QUIC_FT_MAX_STREAMS_UNI,
                             .u.limit.max = max};
}

vega_quic_frame qf_new_cid(uint64_t seq, uint64_t retire_prior_to, const uint8_t *cid,
                           size_t cid_len, const uint8_t *reset_token)
{
    vega_quic_frame f = {.type = VEGA_QUIC_FT_NEW_CONNECTION_ID};
    f.u.new_cid.seq = seq;
    f.u.new_cid.retire_prior_to = retire_prior_to;
    f.u.new_cid.cid_len = (uint8_t)(cid_len <= VEGA_QUIC_MAX_CID_LEN ? cid_len : 0);
    memcpy(f.u.new_cid.cid, cid, f.u.new_cid.cid_len);
    memcpy(f.u.new_cid.reset_token, reset_token, VEGA_QUIC_RESET_TOKEN_LEN);
    return f;
}

vega_quic_frame qf_retire_cid(uint64_t seq)
{
    return (vega_quic_frame){.type = VEGA_QUIC_FT_RETIRE_CONNECTION_ID, .u.retire_cid.seq = seq};
}

vega_quic_frame qf_path_challenge(const uint8_t data[8])
{
    vega_quic_frame f = {.type = VEGA_QUIC_FT_PATH_CHALLENGE};
    memcpy(f.u.path.data, data, 8);
    return f;
}

vega_quic_frame qf_path_response(const uint8_t data[8])
{
    vega_quic_frame f = {.type = VEGA_QUIC_FT_PATH_RESPONSE};
    memcpy(f.u.path.data, data, 8);
    return f;
}

vega_quic_frame qf_close(bool app, uint64_t error_code, const char *reason)
{
    vega_quic_frame f = {.type = app ? VEGA_QUIC_FT_CONNECTION_CLOSE_APP
                                     : VEGA_QUIC_FT_CONNECTION_CLOSE};
    f.u.close.error_code = error_code;
    f.u.close.reason = (const uint8_t *)reason;
    f.u.close.reason_len = reason ? strlen(reason) : 0;
    return f;
}

vega_quic_frame qf_handshake_done(void)
{
    return (vega_quic_frame){.type = VEGA_QUIC_FT_HANDSHAKE_DONE};
}

vega_quic_frame qf_new_token(const uint8_t *token, size_t len)
{
    return (vega_quic_frame){.type = VEGA_QUIC_FT_NEW_TOKEN,
                             .u.new_token = {.token = token, .len = len}};
}

vega_quic_frame qf_datagram(const void *data, size_t len)
{
    return (vega_quic_frame){.type = VEGA_QUIC_FT_DATAGRAM_LEN,
                             .u.datagram = {.data = data, .len = len}};
}
