/* SPDX-License-Identifier: MIT */
/* qlog: the writer (<vega/quic_qlog.h>) makes one JSON-SEQ record per event (0x1E ... "\n"),
 * escapes what it copies from the wire, and never exceeds VEGA_QUIC_QLOG_RECORD_MAX whatever
 * the packet; the core (vega_quic_opts.qlog) reports every packet it sends and receives,
 * exactly as many as its counters say, both sides' transport parameters, the connection's
 * states, recovery's metrics, key updates and the close. */
#include <stdio.h>
#include <string.h>

#include <vega/quic_qlog.h>

#include "qtls_certs.h"
#include "quic_pair.h"
#include "vtest.h"

static bool has(const char *rec, vega_ssize n, const char *s)
{
    size_t l = strlen(s);
    for (vega_ssize i = 0; i + (vega_ssize)l <= n; i++)
        if (memcmp(rec + i, s, l) == 0)
            return true;
    return false;
}

/* One record: RS first, LF last, neither inside. */
static void check_record(const char *rec, vega_ssize n)
{
    VCHECK(n > 2);
    VCHECK(n <= VEGA_QUIC_QLOG_RECORD_MAX);
    VCHECK_EQ(rec[0], 0x1e);
    VCHECK_EQ(rec[n - 1], '\n');
    for (vega_ssize i = 1; i < n - 1; i++)
        VCHECK(rec[i] != 0x1e && rec[i] != '\n' && (unsigned char)rec[i] >= 0x20);
}

VTEST(header_names_the_format_and_odcid)
{
    static char out[VEGA_QUIC_QLOG_RECORD_MAX];
    const uint8_t odcid[] = {0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04};
    vega_ssize n = vega_quic_qlog_write_header(out, sizeof out, false, odcid, sizeof odcid,
                                               1700000000123, NULL);
    check_record(out, n);
    VCHECK(has(out, n, "\"qlog_format\":\"JSON-SEQ\""));
    VCHECK(has(out, n, "\"qlog_version\":\"0.3\""));
    VCHECK(has(out, n, "\"type\":\"client\""));
    VCHECK(has(out, n, "\"ODCID\":\"deadbeef01020304\""));
    VCHECK(has(out, n, "\"reference_time\":1700000000123"));
    VCHECK_EQ(vega_quic_qlog_write_header(out, 40, false, odcid, 8, 0, NULL), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_quic_qlog_write_header(out, sizeof out, false, odcid, 21, 0, NULL), -EINVAL);
}

VTEST(close_reason_is_escaped)
{
    static char out[VEGA_QUIC_QLOG_RECORD_MAX];
    const char reason[] = "a\"b\\c\n\x01\xff";
    vega_quic_qlog_event ev = {.type = VEGA_QUIC_QLOG_CONNECTION_CLOSED,
                               .time = 2500000,
                               .remote = true,
                               .close_code = 0x10c,
                               .close_app = true,
                               .reason = reason,
                               .reason_len = sizeof reason - 1};
    vega_ssize n = vega_quic_qlog_write(out, sizeof out, &ev, 1000000);
    check_record(out, n);
    VCHECK(has(out, n, "\"time\":1.500,"));
    VCHECK(has(out, n, "\"name\":\"connectivity:connection_closed\""));
    VCHECK(has(out, n, "\"owner\":\"remote\""));
    VCHECK(has(out, n, "\"application_code\":268"));
    VCHECK(has(out, n, "\"reason\":\"a\\\"b\\\\c\\u000a\\u0001\\u00ff\""));
    /* a reason longer than the shown maximum is cut, the record stays whole */
    static char big[4000];
    memset(big, '"', sizeof big);
    ev.reason = big;
    ev.reason_len = sizeof big;
    n = vega_quic_qlog_write(out, sizeof out, &ev, 0);
    check_record(out, n);
    VCHECK(n < 1000);
    /* too small a buffer: refused, not cut */
    VCHECK_EQ(vega_quic_qlog_write(out, 30, &ev, 0), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_quic_qlog_write(out, sizeof out, NULL, 0), -EINVAL);
    vega_quic_qlog_event none = {.type = VEGA_QUIC_QLOG_NONE};
    VCHECK_EQ(vega_quic_qlog_write(out, sizeof out, &none, 0), 0);
}

/* The largest packets' frames stay within the record bound: 1400 PINGs (one byte each) list
 * what fits and count the rest. */
VTEST(many_frames_are_bounded)
{
    static char out[VEGA_QUIC_QLOG_RECORD_MAX * 2];
    uint8_t payload[1400];
    memset(payload, VEGA_QUIC_FT_PING, sizeof payload);
    const uint8_t dcid[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    vega_quic_qlog_packet p = {.type = VEGA_QUIC_PKT_1RTT,
                               .pn = 77,
                               .dcid = dcid,
                               .dcid_len = 8,
                               .length = 1430,
                               .frames = payload,
                               .frames_len = sizeof payload};
    vega_quic_qlog_event ev = {.type = VEGA_QUIC_QLOG_PACKET_SENT, .pkt = &p};
    vega_ssize n = vega_quic_qlog_write(out, sizeof out, &ev, 0);
    check_record(out, n);
    VCHECK(has(out, n, "\"name\":\"transport:packet_sent\""));
    VCHECK(has(out, n, "\"header\":{\"packet_type\":\"1RTT\",\"packet_number\":77"));
    VCHECK(has(out, n, "\"frames_truncated\":"));
    VCHECK(has(out, n, "{\"frame_type\":\"ping\"}"));
    /* a payload that stops decoding ends with an unknown frame */
    const uint8_t bad[] = {VEGA_QUIC_FT_PING, 0x40}; /* a truncated varint frame type */
    p.frames = bad;
    p.frames_len = sizeof bad;
    n = vega_quic_qlog_write(out, sizeof out, &ev, 0);
    check_record(out, n);
    VCHECK(has(out, n, "\"frames\":[{\"frame_type\":\"ping\"},{\"frame_type\":\"unknown\""));
    n = vega_quic_qlog_write_truncated(out, sizeof out, 5000000, 0, 1 << 20);
    check_record(out, n);
    VCHECK(has(out, n, "\"name\":\"loglevel:warning\""));
    VCHECK(has(out, n, "1048576 bytes"));
}

/* ---- the core's events ---------------------------------------------------------------------- */

struct qlog_sink {
    size_t count[VEGA_QUIC_QLOG_CONNECTION_CLOSED + 1];
    size_t first_type;
    uint8_t odcid[20];
    size_t odcid_len;
    bool local_tp, remote_tp, complete, confirmed, closing, remote_close;
    size_t stream_frames, bytes;
    bool write_failed;
};

static void sink_cb(void *user, const struct vega_quic_qlog_event *ev)
{
    struct qlog_sink *s = user;
    size_t total = 0;
    for (size_t i = 0; i < sizeof s->count / sizeof s->count[0]; i++)
        total += s->count[i];
    if (total == 0) {
        s->first_type = ev->type;
        memcpy(s->odcid, ev->odcid, ev->odcid_len);
        s->odcid_len = ev->odcid_len;
    }
    if ((size_t)ev->type < sizeof s->count / sizeof s->count[0])
        s->count[ev->type]++;
    if (ev->type == VEGA_QUIC_QLOG_PARAMETERS_SET)
        *(ev->remote ? &s->remote_tp : &s->local_tp) = true;
    if (ev->type == VEGA_QUIC_QLOG_CONNECTION_STATE) {
        s->complete |= ev->state == VEGA_QUIC_QLOG_ST_HANDSHAKE_COMPLETE;
        s->confirmed |= ev->state == VEGA_QUIC_QLOG_ST_HANDSHAKE_CONFIRMED;
        s->closing |= ev->state >= VEGA_QUIC_QLOG_ST_CLOSING;
    }
    if (ev->type == VEGA_QUIC_QLOG_CONNECTION_CLOSED)
        s->remote_close = ev->remote;
    static char out[VEGA_QUIC_QLOG_RECORD_MAX];
    vega_ssize n = vega_quic_qlog_write(out, sizeof out, ev, 0);
    if (n <= 0)
        s->write_failed = true;
    else
        s->bytes += (size_t)n;
    if (n > 0 && ev->type == VEGA_QUIC_QLOG_PACKET_RECEIVED)
        for (vega_ssize i = 0; i + 21 < n; i++)
            s->stream_frames += memcmp(out + i, "\"frame_type\":\"stream\"", 21) == 0;
}

static bool echoed(struct qp *q)
{
    return q->side[0].nst > 0 && q->side[0].st[q->side[0].nst - 1].fin;
}

static bool both_closed(struct qp *q)
{
    return q->side[0].closed && q->side[1].closed;
}

static bool confirmed(struct qp *q)
{
    if (!q->side[0].c || !q->side[1].c)
        return false;
    vega_quic_conn_info a, b;
    vega_quic_conn_get_info(q->side[0].c, &a);
    vega_quic_conn_get_info(q->side[1].c, &b);
    return a.handshake_confirmed && b.handshake_confirmed;
}

static bool key_updated(struct qp *q)
{
    vega_quic_conn_info a, b;
    vega_quic_conn_get_info(q->side[0].c, &a);
    vega_quic_conn_get_info(q->side[1].c, &b);
    return a.key_updates == 1 && b.key_updates == 1 && echoed(q);
}

VTEST(core_reports_every_packet_and_state)
{
    struct qp q;
    static struct qlog_sink sc, ss;
    memset(&sc, 0, sizeof sc);
    memset(&ss, 0, sizeof ss);
    VCHECK_EQ(qp_init(&q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, NULL, 21), 0);
    q.ccfg.qlog = sink_cb;
    q.ccfg.qlog_user = &sc;
    q.scfg.qlog = sink_cb;
    q.scfg.qlog_user = &ss;
    q.side[1].echo = true;
    VCHECK_EQ(qp_client_start(&q), 0);
    VCHECK_EQ(sc.first_type, VEGA_QUIC_QLOG_CONNECTION_STARTED);
    VCHECK(sc.local_tp);
    VCHECK(qp_run(&q, confirmed, 5000000000ull));
    static const uint8_t msg[3000] = {1};
    VCHECK(qp_upload(&q.side[0], true, msg, sizeof msg) >= 0);
    VCHECK(qp_run(&q, echoed, 5000000000ull));
    /* a key update, then another echo in the new phase */
    VCHECK_EQ(vega_quic_conn_key_update(q.side[0].c), 0);
    VCHECK(qp_upload(&q.side[0], true, msg, 100) >= 0);
    VCHECK(qp_run(&q, key_updated, 5000000000ull));
    vega_quic_conn_info ci, si;
    vega_quic_conn_get_info(q.side[0].c, &ci);
    vega_quic_conn_get_info(q.side[1].c, &si);
    VCHECK_EQ(vega_quic_conn_close(q.side[0].c, VEGA_QUIC_CLOSE_APPLICATION, 0x100, "bye"), 0);
    VCHECK(qp_run(&q, both_closed, 5000000000ull));

    /* the server's trace names the same ODCID as the client's */
    VCHECK_EQ(ss.first_type, VEGA_QUIC_QLOG_CONNECTION_STARTED);
    VCHECK_EQ(sc.odcid_len, 8);
    VCHECK_EQ(ss.odcid_len, sc.odcid_len);
    VCHECK(memcmp(sc.odcid, ss.odcid, sc.odcid_len) == 0);
    /* every packet counted by the connection was reported (up to the info taken before the
     * close, and then the close's own packets) */
    VCHECK(sc.count[VEGA_QUIC_QLOG_PACKET_SENT] >= ci.pkts_sent);
    VCHECK(ss.count[VEGA_QUIC_QLOG_PACKET_RECEIVED] >= si.pkts_recv);
    VCHECK(sc.count[VEGA_QUIC_QLOG_PACKET_RECEIVED] >= ci.pkts_recv);
    VCHECK(ci.pkts_recv > 3 && si.pkts_recv > 3);
    VCHECK(ss.stream_frames >= 3); /* 3000 + 100 bytes upload: several STREAM frames */
    VCHECK(sc.stream_frames >= 3); /* and their echo */
    for (int i = 0; i < 2; i++) {
        struct qlog_sink *s = i ? &ss : &sc;
        VCHECK(s->local_tp && s->remote_tp);
        VCHECK(s->complete && s->confirmed && s->closing);
        VCHECK(s->count[VEGA_QUIC_QLOG_METRICS_UPDATED] > 0);
        VCHECK(s->count[VEGA_QUIC_QLOG_CONGESTION_STATE] > 0);
        VCHECK_EQ(s->count[VEGA_QUIC_QLOG_KEY_UPDATED], 1);
        VCHECK_EQ(s->count[VEGA_QUIC_QLOG_CONNECTION_CLOSED], 1);
        VCHECK_EQ(s->count[VEGA_QUIC_QLOG_CONNECTION_STARTED], 1);
        VCHECK(!s->write_failed);
    }
    VCHECK(!sc.remote_close && ss.remote_close);
    qp_fini(&q);
}

/* The exact count: a connection's PACKET_SENT events are its pkts_sent, its PACKET_RECEIVED
 * its pkts_recv, at any moment. */
VTEST(packet_events_match_the_counters)
{
    struct qp q;
    static struct qlog_sink sc, ss;
    memset(&sc, 0, sizeof sc);
    memset(&ss, 0, sizeof ss);
    VCHECK_EQ(qp_init(&q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, NULL, 22), 0);
    q.ccfg.qlog = sink_cb;
    q.ccfg.qlog_user = &sc;
    q.scfg.qlog = sink_cb;
    q.scfg.qlog_user = &ss;
    q.side[1].echo = true;
    VCHECK_EQ(qp_client_start(&q), 0);
    VCHECK(qp_run(&q, confirmed, 5000000000ull));
    static const uint8_t msg[20000] = {2};
    VCHECK(qp_upload(&q.side[0], true, msg, sizeof msg) >= 0);
    VCHECK(qp_run(&q, echoed, 5000000000ull));
    vega_quic_conn_info ci, si;
    vega_quic_conn_get_info(q.side[0].c, &ci);
    vega_quic_conn_get_info(q.side[1].c, &si);
    VCHECK_EQ(sc.count[VEGA_QUIC_QLOG_PACKET_SENT], ci.pkts_sent);
    VCHECK_EQ(ss.count[VEGA_QUIC_QLOG_PACKET_SENT], si.pkts_sent);
    VCHECK_EQ(sc.count[VEGA_QUIC_QLOG_PACKET_RECEIVED], ci.pkts_recv);
    VCHECK_EQ(ss.count[VEGA_QUIC_QLOG_PACKET_RECEIVED], si.pkts_recv);
    VCHECK_EQ(sc.count[VEGA_QUIC_QLOG_PACKET_LOST], ci.pkts_lost);
    qp_fini(&q);
}
