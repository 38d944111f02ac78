/* SPDX-License-Identifier: MIT */
/* A connection checks each frame of a packet as it decodes it (RFC 9000 §12.4, Table 3): an
 * empty payload, a frame not allowed in its packet type and a malformed frame after valid ones
 * all close the connection with the code RFC 9000 gives, naming the frame where there is one. */
#include <string.h>

#include "conn_int.h"
#include "qtls_certs.h"
#include "quic_pair.h"
#include "quic_pkt.h"
#include "vtest.h"

#define MS 1000000ull
#define S  1000000000ull

static void setup(struct qp *q, uint64_t seed)
{
    vega_test_net_opts o = {.seed = seed, .delay_ns = 2 * MS};
    VCHECK_EQ(qp_init(q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, &o, seed), 0);
}

static bool confirmed(struct qp *q)
{
    vega_quic_conn_info a, b;
    if (!q->side[0].c || !q->side[1].c)
        return false;
    vega_quic_conn_get_info(q->side[0].c, &a);
    vega_quic_conn_get_info(q->side[1].c, &b);
    return a.handshake_confirmed && b.handshake_confirmed;
}

/* The server's CLOSED event: its code, and the frame type its CONNECTION_CLOSE names. */
static void expect_close(struct qp *q, uint64_t code, uint64_t frame_type)
{
    qp_events(q, &q->side[1]);
    VCHECK(q->side[1].closed);
    VCHECK(q->side[1].closed_local);
    VCHECK_EQ(q->side[1].close_code, code);
    VCHECK_EQ(q->side[1].c->closing.frame_type, frame_type);
}

/* A 1-RTT packet from the client, as its next one, with the payload given as bytes. */
static void client_sends_raw(struct qp *q, const uint8_t *payload, size_t len)
{
    struct qpkt p;
    qpkt_from_conn(&p, q->side[0].c);
    p.pn_len = 4; /* header protection samples the tag: an empty payload is possible */
    uint8_t pkt[1500];
    vega_ssize n = qpkt_build_raw(&p, payload, len, pkt, sizeof pkt);
    VCHECK(n > 0);
    qp_server_recv(q, pkt, (size_t)n, 0, 40001);
}

VTEST(empty_payload_is_a_protocol_violation)
{
    struct qp q;
    setup(&q, 71);
    VCHECK_EQ(qp_client_start(&q), 0);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    client_sends_raw(&q, NULL, 0);
    expect_close(&q, VEGA_QUIC_PROTOCOL_VIOLATION, 0);
    qp_fini(&q);
}

VTEST(malformed_frame_after_valid_ones)
{
    struct qp q;
    setup(&q, 72);
    VCHECK_EQ(qp_client_start(&q), 0);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    /* PING, then a STREAM frame (type 0x0a: length present) whose length runs past the end. */
    const uint8_t payload[] = {0x01, 0x0a, 0x00, 0x40, 0x40, 'a', 'b'};
    client_sends_raw(&q, payload, sizeof payload);
    expect_close(&q, VEGA_QUIC_FRAME_ENCODING_ERROR, 0);
    qp_fini(&q);
}

/* A client's first Initial carrying a STREAM frame: Initial packets carry only PADDING, PING,
 * ACK, CRYPTO and CONNECTION_CLOSE (Table 3). */
VTEST(frame_not_allowed_in_its_packet_type)
{
    struct qp q;
    setup(&q, 73);
    static const uint8_t dcid[8] = {1, 2, 3, 4, 5, 6, 7, 8}, scid[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    vega_quic_keys *k;
    VCHECK_EQ(vega_quic_keys_new_initial(&k, VEGA_QUIC_V1, dcid, sizeof dcid, false), 0);
    struct qpkt p = {.type = VEGA_QUIC_PKT_INITIAL,
                     .version = VEGA_QUIC_V1,
                     .dcid = dcid,
                     .dcid_len = sizeof dcid,
                     .scid = scid,
                     .scid_len = sizeof scid,
                     .pn_len = 4,
                     .keys = k,
                     .min_payload = 1200};
    vega_quic_frame fs[] = {qf_ping(), qf_stream(0, 0, "x", 1, false)};
    uint8_t pkt[1500];
    vega_ssize n = qpkt_build(&p, fs, 2, pkt, sizeof pkt);
    VCHECK(n >= VEGA_QUIC_MIN_INITIAL_SIZE);
    qp_server_recv(&q, pkt, (size_t)n, 0, 40001);
    VCHECK(q.side[1].c != NULL);
    expect_close(&q, VEGA_QUIC_PROTOCOL_VIOLATION, fs[1].type);
    vega_quic_keys_free(k);
    qp_fini(&q);
}
