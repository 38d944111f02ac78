/* SPDX-License-Identifier: MIT */
/* qlog for the QUIC core: the typed events a connection reports through vega_quic_opts.qlog
 * (layout 3) and a writer that turns them into qlog records, JSON-SEQ (RFC 7464: each record is
 * 0x1E, one JSON text, "\n") in the field names of draft-ietf-quic-qlog-main-schema and
 * draft-ietf-quic-qlog-quic-events ("qlog_version":"0.3", as ngtcp2 and quiche write it), for
 * debugging with tools such as qvis. No I/O: the UDP endpoint (<vega/quic_ep.h>, qlog_dir)
 * writes a file per connection. */
#ifndef VEGA_QUIC_QLOG_H
#define VEGA_QUIC_QLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/quic.h>
#include <vega/quic_wire.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vega_quic_qlog_type {
    VEGA_QUIC_QLOG_NONE = 0,
    VEGA_QUIC_QLOG_CONNECTION_STARTED, /* the first event: server, version, cids, path */
    VEGA_QUIC_QLOG_PARAMETERS_SET,     /* tp, remote: the transport parameters of one side */
    VEGA_QUIC_QLOG_PACKET_SENT,        /* pkt */
    VEGA_QUIC_QLOG_PACKET_RECEIVED,    /* pkt (Retry and Version Negotiation included) */
    VEGA_QUIC_QLOG_PACKET_DROPPED,     /* pkt (header only), trigger */
    VEGA_QUIC_QLOG_PACKET_LOST,        /* pkt (type and number only), trigger */
    VEGA_QUIC_QLOG_METRICS_UPDATED,    /* metrics: after a change (ACKs, losses, timers) */
    VEGA_QUIC_QLOG_CONGESTION_STATE,   /* cc_state (congestion_state_updated) */
    VEGA_QUIC_QLOG_KEY_UPDATED,        /* key_generation, remote (a 1-RTT key update) */
    VEGA_QUIC_QLOG_CONNECTION_STATE,   /* state (connection_state_updated) */
    VEGA_QUIC_QLOG_CONNECTION_CLOSED,  /* close_code, close_app, remote, reason */
} vega_quic_qlog_type;

/* A packet as sent or received. Pointers are borrowed for the call. */
typedef struct vega_quic_qlog_packet {
    vega_quic_pkt_type type;
    uint64_t pn; /* not for Retry and Version Negotiation */
    uint32_t version;
    const uint8_t *dcid, *scid; /* scid: long headers */
    size_t dcid_len, scid_len;
    bool key_phase;        /* 1-RTT */
    size_t length;         /* bytes of the packet on the wire */
    const uint8_t *frames; /* the plaintext payload (sent: before protection; received: after
                              decryption), which the writer decodes; NULL for none */
    size_t frames_len;
    const uint8_t *token; /* Initial, Retry */
    size_t token_len;
    const uint8_t *versions; /* Version Negotiation: 4 bytes each, big-endian */
    size_t nversions;
} vega_quic_qlog_packet;

/* Recovery's numbers (metrics_updated). Times in ns. */
typedef struct vega_quic_qlog_metrics {
    uint64_t min_rtt, smoothed_rtt, latest_rtt, rtt_variance;
    uint64_t cwnd, bytes_in_flight, ssthresh; /* ssthresh UINT64_MAX: not set yet */
    unsigned pto_count;
} vega_quic_qlog_metrics;

typedef enum vega_quic_qlog_cc_state {
    VEGA_QUIC_QLOG_CC_SLOW_START = 0,
    VEGA_QUIC_QLOG_CC_AVOIDANCE,
    VEGA_QUIC_QLOG_CC_RECOVERY,
    VEGA_QUIC_QLOG_CC_APP_LIMITED,
} vega_quic_qlog_cc_state;

typedef enum vega_quic_qlog_conn_state {
    VEGA_QUIC_QLOG_ST_HANDSHAKE_COMPLETE = 0, /* 1-RTT keys both ways */
    VEGA_QUIC_QLOG_ST_HANDSHAKE_CONFIRMED,
    VEGA_QUIC_QLOG_ST_CLOSING,
    VEGA_QUIC_QLOG_ST_DRAINING,
    VEGA_QUIC_QLOG_ST_CLOSED,
} vega_quic_qlog_conn_state;

/* One event: type says which fields are set; the others are zero. */
typedef struct vega_quic_qlog_event {
    vega_quic_qlog_type type;
    uint64_t time; /* the core's now (ns) */
    bool server;   /* which side logs */
    /* CONNECTION_STARTED */
    uint32_t version;
    const uint8_t *odcid, *scid, *dcid; /* odcid: the client's first Destination CID */
    size_t odcid_len, scid_len, dcid_len;
    const vega_quic_path *path;
    /* PARAMETERS_SET, KEY_UPDATED, CONNECTION_CLOSED: the peer's (else ours) */
    bool remote;
    const vega_quic_tp *tp;
    /* PACKET_* */
    const vega_quic_qlog_packet *pkt;
    const char *trigger; /* PACKET_DROPPED, PACKET_LOST, CONGESTION_STATE: why (static) */
    /* METRICS_UPDATED */
    const vega_quic_qlog_metrics *metrics;
    vega_quic_qlog_cc_state cc_state; /* CONGESTION_STATE */
    uint64_t key_generation;          /* KEY_UPDATED: the new key phase count */
    vega_quic_qlog_conn_state state;  /* CONNECTION_STATE */
    uint64_t close_code;              /* CONNECTION_CLOSED */
    bool close_app;                   /* an application error code */
    const char *reason;
    size_t reason_len; /* CONNECTION_CLOSED: borrowed, not NUL-terminated */
} vega_quic_qlog_event;

/* Room a record may need: vega_quic_qlog_write never writes more than this, whatever the event
 * (a packet's frames beyond it are summarised by a "frames_truncated" count). */
#define VEGA_QUIC_QLOG_RECORD_MAX 8192

/*
 * Writes the first record of a trace: the qlog header ("qlog_format":"JSON-SEQ", the vantage
 * point, the ODCID as group_id, "time_format":"relative" from reference_ms, wall-clock ms since
 * the Unix epoch). odcid: borrowed, up to 20 bytes. title: may be NULL.
 * Returns the record's length; VEGA_ERR_NOBUF (cap below what it needs; at most
 * VEGA_QUIC_QLOG_RECORD_MAX); -EINVAL (odcid above 20 bytes). Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_qlog_write_header(char *out, size_t cap, bool server,
                                                const uint8_t *odcid, size_t odcid_len,
                                                uint64_t reference_ms, const char *title);

/*
 * Writes one event as a record: 0x1E, {"time":ms,"name":"<category>:<event>","data":{...}},
 * "\n". time is relative to start (the core's now of the trace's first event, ns); strings are
 * escaped (RFC 8259), connection IDs and tokens in hex; a packet's frames are decoded from its
 * payload (what does not decode is reported as "unknown" and ends the list).
 * Returns the record's length; 0 for an event with no qlog counterpart (VEGA_QUIC_QLOG_NONE);
 * VEGA_ERR_NOBUF (cap below VEGA_QUIC_QLOG_RECORD_MAX and the record did not fit); -EINVAL
 * (ev NULL). Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_qlog_write(char *out, size_t cap, const vega_quic_qlog_event *ev,
                                         uint64_t start);

/*
 * Writes the record that ends a trace cut at its size limit: a "loglevel:warning" event whose
 * message says that the file stopped at limit bytes. Returns the length or VEGA_ERR_NOBUF
 * (cap below 256). Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_qlog_write_truncated(char *out, size_t cap, uint64_t time_ns,
                                                   uint64_t start, uint64_t limit);

#ifdef __cplusplus
}
#endif
#endif
