/* SPDX-License-Identifier: MIT */
/* The QUIC connection's internal state, shared by conn*.c: packet number spaces, streams, the
 * frames each sent packet carried, and the connection itself as one sub-struct per concern,
 * each named for the file that owns it (conn_tls.c, conn_cid.c, conn_path.c ...). */
#ifndef VEGA_QUIC_CONN_INT_H
#define VEGA_QUIC_CONN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/quic_qlog.h>
#include <vega/quic_wire.h>

#include "qstream.h"
#include "qtls.h"
#include "quic_int.h"
#include "recovery.h"
#include "tls13_keys.h"

/* Limits of one connection. */
#define VEGA__QUIC_CRYPTO_RX_LIMIT   (128 * 1024) /* CRYPTO bytes buffered per level */
#define VEGA__QUIC_MAX_PEER_CIDS     8            /* connection IDs the peer may give us */
#define VEGA__QUIC_MAX_LOCAL_CIDS    8            /* connection IDs we keep issued */
#define VEGA__QUIC_ACK_RANGES        64           /* ranges kept per space for ACK frames */
#define VEGA__QUIC_MAX_PENDING_PKTS  8            /* packets kept until their keys arrive */
#define VEGA__QUIC_PKT_FRAMES        16           /* retransmittable frames per packet */
#define VEGA__QUIC_DGRAM_SEND_QUEUE  64
#define VEGA__QUIC_MAX_PACKET        1200 /* datagram size until PMTU discovery */
#define VEGA__QUIC_ACK_ELICIT_THRESH 2    /* ack immediately after this many */

/* A frame whose loss matters, as recorded in a sent packet. */
enum vega__quic_sf_type {
    VEGA__QUIC_SF_STREAM = 1, /* id, off, len, fin */
    VEGA__QUIC_SF_CRYPTO,     /* off, len (the packet's level) */
    VEGA__QUIC_SF_ACK,        /* off = the largest packet number it acknowledged */
    VEGA__QUIC_SF_MAX_DATA,
    VEGA__QUIC_SF_MAX_STREAM_DATA, /* id */
    VEGA__QUIC_SF_MAX_STREAMS_BIDI,
    VEGA__QUIC_SF_MAX_STREAMS_UNI,
    VEGA__QUIC_SF_RESET_STREAM, /* id */
    VEGA__QUIC_SF_STOP_SENDING, /* id */
    VEGA__QUIC_SF_NEW_CID,      /* off = sequence number */
    VEGA__QUIC_SF_RETIRE_CID,   /* off = sequence number */
    VEGA__QUIC_SF_HANDSHAKE_DONE,
    VEGA__QUIC_SF_DATA_BLOCKED,
    VEGA__QUIC_SF_STREAM_DATA_BLOCKED, /* id */
    VEGA__QUIC_SF_NEW_TOKEN,           /* off = the token's generation */
};

struct vega__quic_sf {
    uint8_t type;
    bool fin;
    uint32_t len;
    uint64_t id, off;
};

/* What one sent packet carried (the recovery record's `frames`). */
struct vega__quic_pktrec {
    struct vega__quic_pktrec *next_free;
    uint8_t level; /* vega_quic_level */
    uint8_t key_phase;
    bool pmtu; /* a DPLPMTUD probe of pmtu.probe bytes */
    uint16_t n;
    struct vega__quic_sf f[VEGA__QUIC_PKT_FRAMES];
};

struct vega__quic_stream {
    uint64_t id; /* first: the stream map keys on it */
    struct vega__quic_sendbuf sb;
    struct vega__quic_recvbuf rb;
    struct vega__quic_fc fc; /* receive window */
    uint64_t max_send;       /* the peer's MAX_STREAM_DATA for us */
    uint64_t reset_code, stop_code, peer_reset_code;
    bool can_send, can_recv;                    /* by stream type and initiator */
    bool reset_queued, reset_sent, reset_acked; /* our RESET_STREAM */
    bool stop_queued, stop_sent;                /* our STOP_SENDING */
    bool peer_reset;                            /* the peer's RESET_STREAM arrived */
    bool fin_read;                              /* the application read the end */
    bool max_data_queued;                       /* a MAX_STREAM_DATA to send */
    uint64_t blocked_at;                        /* the limit we last sent STREAM_DATA_BLOCKED for */
    bool want_writable;                         /* a short write happened: tell when room returns */
    bool readable_ev; /* a READABLE event is queued and not yet read from */
    bool done_ev;     /* STREAM_DONE was reported */
    bool in_sendq;
    struct vega__quic_stream *sendq_next;
};

/* One packet number space. */
struct vega__quic_space {
    struct vega__quic_ranges recvd; /* packet numbers received, for ACK frames */
    uint64_t floor;                 /* packet numbers below this count as duplicates */
    int64_t largest_recvd;
    uint64_t largest_recvd_time;
    bool ack_pending; /* an ACK should go out (ack-eliciting or out of order) */
    unsigned unacked_eliciting;
    uint64_t ack_deadline; /* VEGA__QUIC_TIME_INF when none */
    uint64_t next_pn;
    uint64_t ecn[3]; /* ECT(0), ECT(1), CE counts received */
    bool ecn_seen;
    vega_quic_keys *rx, *tx;
    struct vega__quic_sendbuf crypto_tx;
    struct vega__quic_recvbuf crypto_rx;
    bool discarded;
    bool probe; /* the PTO asked for probes here */
    unsigned probes;
};

struct vega__quic_cid {
    uint64_t seq;
    uint8_t len;
    uint8_t id[VEGA_QUIC_MAX_CID_LEN];
    uint8_t token[VEGA_QUIC_RESET_TOKEN_LEN];
    bool has_token, retired, queued; /* queued: a NEW_CONNECTION_ID / RETIRE to send */
    bool retire_acked;               /* peer CIDs: the RETIRE arrived, the slot may go */
    bool used;
};

/* A packet that arrived before its keys. */
struct vega__quic_pending {
    uint8_t *data;
    size_t len;
    uint8_t ecn;
};

struct vega__quic_dgram {
    uint8_t *data;
    size_t len;
};

enum vega__quic_state {
    VEGA__QUIC_ST_HANDSHAKE = 0,
    VEGA__QUIC_ST_ESTABLISHED,
    VEGA__QUIC_ST_CLOSING,  /* we sent CONNECTION_CLOSE */
    VEGA__QUIC_ST_DRAINING, /* the peer did */
    VEGA__QUIC_ST_CLOSED,
};

/* The handshake's progress (conn_tls.c). */
struct vega__quic_conn_hs {
    struct vega__qtls *tls;
    vega_quic_tp local_tp, peer_tp;
    bool peer_tp_ok;
    bool done, confirmed;
    bool ev_owed;           /* HANDSHAKE_DONE could not be queued (no memory): next_event
                               queues it again */
    bool got_server_packet; /* client: a server Initial arrived (its SCID is our DCID) */
    bool retried;           /* client: a Retry was processed */
    bool ticket_sent;
    bool done_queued; /* server: a HANDSHAKE_DONE frame to send */
};

/* Connection IDs (conn_cid.c). odcid: the client's first Destination CID (Initial keys, TP
 * checks). */
struct vega__quic_conn_cids {
    uint8_t odcid[VEGA_QUIC_MAX_CID_LEN], odcid_len;
    uint8_t retry_scid[VEGA_QUIC_MAX_CID_LEN], retry_scid_len;
    uint8_t peer_scid[VEGA_QUIC_MAX_CID_LEN], peer_scid_len; /* the peer's initial SCID */
    struct vega__quic_cid local[VEGA__QUIC_MAX_LOCAL_CIDS];
    size_t nlocal;
    uint64_t next_local_seq;
    struct vega__quic_cid peer[VEGA__QUIC_MAX_PEER_CIDS];
    size_t npeer;
    size_t dcid_idx; /* peer[] entry we address the peer by */
    uint64_t peer_retire_prior_to;
    uint8_t rx_dcid[VEGA_QUIC_MAX_CID_LEN], rx_dcid_len; /* our CID the peer used last */
};

/* Address validation (RFC 9000 §8.1; conn_path.c): the anti-amplification budget and the
 * tokens that spare the next connection a Retry. */
struct vega__quic_conn_addr {
    bool validated;                  /* server: the client's address is validated */
    uint64_t bytes_recv, bytes_sent; /* server: until it is */
    bool send_blocked;               /* anti-amplification left no room: no deadline is due
                                        until the peer sends more */
    uint8_t *token;                  /* client: Retry or NEW_TOKEN token for Initials */
    size_t token_len;
    uint8_t *new_token; /* server: a NEW_TOKEN to send until acknowledged */
    size_t new_token_len;
    uint64_t new_token_gen; /* bumped per token, so an old copy's ACK does not count */
    bool new_token_queued;
};

/* Path validation and migration (RFC 9000 §8.2, §9; conn_path.c). cur is where we send now. */
struct vega__quic_conn_paths {
    vega_quic_path cur;
    bool validated;      /* cur answered our PATH_CHALLENGE (or is the handshake's path) */
    bool migrating;      /* cur changed and is not validated yet */
    vega_quic_path prev; /* to go back to if validation fails */
    bool challenge_queued, challenge_outstanding;
    uint8_t challenge[8];
    unsigned challenge_tries;
    uint64_t challenge_retry;        /* when to send a fresh challenge */
    uint64_t challenge_deadline;     /* validation fails after this */
    uint64_t bytes_recv, bytes_sent; /* on the unvalidated new path (3x limit) */
    uint64_t migrations;
    /* Our PATH_RESPONSE to the peer's challenge. */
    bool response_queued;
    uint8_t response[8];
    bool response_elsewhere; /* the challenge came on another path: answer there alone */
    vega_quic_path response_path;
    size_t response_budget; /* 3x the datagram that carried the challenge */
};

/* DPLPMTUD (RFC 9000 §14.3, RFC 8899; conn_probe.c): mtu is confirmed; a probe of probe bytes
 * searches between mtu and hi. */
struct vega__quic_conn_pmtu {
    size_t mtu, hi, probe;
    bool in_flight, done;
    unsigned fails;
    size_t last_cap; /* the write cap seen last: probes never exceed it */
};

/* 0-RTT keys and the 1-RTT key update (RFC 9001 §6; conn_keys.c). */
struct vega__quic_conn_keys {
    vega_quic_keys *early_tx, *early_rx;
    vega_crypto_aead_alg app_aead;
    uint8_t app_rx_secret[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    uint8_t app_tx_secret[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    size_t app_secret_len;
    vega_quic_keys *rx_next, *rx_prev;
    uint64_t rx_prev_until; /* drop rx_prev after this time */
    bool key_phase;         /* the phase we send with */
    bool rx_phase;          /* the phase of the current receive keys */
    bool ku_pending;        /* we updated; not yet acknowledged in the new phase */
    uint64_t ku_first_pn;   /* first packet number sent in the current phase */
    uint64_t ku_allowed_at; /* no new update before: the peer keeps old keys for 3 PTO after
                               the last one (RFC 9001 §6.5), so a quick second one reuses the
                               phase bit of keys it still tries first */
    uint64_t key_updates;
};

/* The records of what sent packets carried (conn_ack.c): a free list sized to the window. */
struct vega__quic_conn_ack {
    struct vega__quic_pktrec *free;
    size_t nfree;
    size_t live; /* records handed out by vega__quic_rec_get, not yet back */
};

/* Connection-level flow control (RFC 9000 §4.1). */
struct vega__quic_conn_flow {
    struct vega__quic_fc fc; /* our receive window */
    uint64_t max_send_data;  /* the peer's MAX_DATA */
    uint64_t data_sent;      /* fresh stream bytes sent (against max_send_data) */
    bool max_data_queued, data_blocked_queued;
    uint64_t data_blocked_at;
};

/* Streams (conn_stream.c); [0] bidirectional, [1] unidirectional. */
struct vega__quic_conn_streams {
    struct vega__quic_stream_map map;
    struct vega__quic_stream *last; /* vega__quic_stream_get's last hit (or NULL) */
    uint64_t next[2];               /* our next id */
    uint64_t peer_max[2];           /* the peer's MAX_STREAMS for us */
    uint64_t peer_opened[2];        /* streams the peer opened (count) */
    uint64_t local_max[2];          /* what we allowed the peer */
    uint64_t peer_closed[2];        /* peer streams fully closed (to raise the limit) */
    bool max_streams_queued[2];
    bool blocked_ev; /* an open hit the limit: STREAMS_AVAILABLE when it rises */
    struct vega__quic_stream *sendq_head, *sendq_tail;
    struct vega__quic_sendpool pool; /* what the streams' send buffers hold together */
};

/* DATAGRAM frames (RFC 9221) waiting to be sent, and received ones waiting to be read. */
struct vega__quic_conn_dgrams {
    struct vega__quic_dgram send[VEGA__QUIC_DGRAM_SEND_QUEUE];
    size_t send_head, send_n;
    struct vega__quic_dgram *recv; /* cfg.max_datagram_queue entries */
    size_t recv_head, recv_n;
};

/* The datagram being read (conn_recv.c) and packets waiting for their keys. */
struct vega__quic_conn_rx {
    const vega_quic_path *path; /* the path of the datagram being read (during read) */
    size_t dgram_len;
    struct vega__quic_pending pending[VEGA__QUIC_MAX_PENDING_PKTS];
    size_t npending;
};

/* Events for vega_quic_conn_next_event (conn_event.c): a ring that grows. */
struct vega__quic_conn_events {
    vega_quic_event *q;
    size_t head, n, cap;
    uint8_t *data; /* owned data of the event returned last */
};

/* Closing and draining (RFC 9000 §10.2; conn_close.c). */
struct vega__quic_conn_closing {
    uint64_t code;
    bool app;
    uint64_t frame_type;
    char reason[128];
    bool send;         /* a CONNECTION_CLOSE should go out */
    uint64_t deadline; /* the closing or draining period ends */
};

/* Timers other than recovery's and the paths' (conn_timer.c). */
struct vega__quic_conn_timers {
    uint64_t idle_timeout; /* ns, negotiated; 0 = none */
    uint64_t idle_deadline;
    bool eliciting_since_rx; /* an ack-eliciting packet left since the last one processed: the
                                idle timer restarts only on the first (RFC 9000 §10.1) */
    uint64_t pace_deadline;
};

/* What qlog reported last (conn_qlog.c), to report changes only. */
struct vega__quic_conn_qlog {
    bool peer_tp, complete, confirmed, state_logged, closed_logged, metrics_logged, cc_logged;
    vega_quic_qlog_conn_state state;
    vega_quic_qlog_cc_state cc;
    uint64_t key_updates;
    vega_quic_qlog_metrics metrics;
};

struct vega_quic_conn {
    bool server;
    uint32_t version;
    enum vega__quic_state state;
    vega_quic_opts cfg;
    uint64_t now;
    struct vega__quic_recovery *rec; /* RFC 9002: sent packets, RTT, congestion control */
    struct vega__quic_space sp[VEGA__QUIC_NSPACES];

    struct vega__quic_conn_hs hs;
    struct vega__quic_conn_cids cids;
    struct vega__quic_conn_addr addr;
    struct vega__quic_conn_paths paths;
    struct vega__quic_conn_pmtu pmtu;
    struct vega__quic_conn_keys keys;
    struct vega__quic_conn_ack ack;
    struct vega__quic_conn_flow flow;
    struct vega__quic_conn_streams streams;
    struct vega__quic_conn_dgrams dgram;
    struct vega__quic_conn_rx rx;
    struct vega__quic_conn_events ev;
    struct vega__quic_conn_closing closing;
    struct vega__quic_conn_timers timers;
    struct vega__quic_conn_qlog qlog;

    vega_quic_conn_info stats;
};

/* One packet being built inside a datagram (conn_build.c): header, keys and payload so far. */
struct vega__quic_pkt {
    int space, level;
    vega_quic_hdr h;
    vega_quic_keys *keys;
    size_t start, hdr_len, pn_len, len; /* len: payload bytes so far */
    size_t cap;                         /* payload room (tag excluded) */
    uint64_t pn;
    bool eliciting, has_ack;
    bool path_probe; /* carries PATH_CHALLENGE/RESPONSE: the datagram is padded (§8.2) */
    struct vega__quic_pktrec *rec;
    /* stream bytes left in their send buffers until the seal (seal_dgram) reads them there: the
     * buffers do not change between building and sealing a datagram */
    struct vega__quic_ext ext[VEGA__QUIC_EXT_MAX];
    size_t next;
};

static inline bool vega__quic_cid_eq(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* conn.c */
int vega__quic_rand(vega_quic_conn *c, void *buf, size_t len);
int vega__quic_level_space(int level); /* a vega_quic_level (levels travel as int inside) */

/* conn_tls.c */
int vega__quic_tls_start(vega_quic_conn *c);
int vega__quic_tls_progress(vega_quic_conn *c);
void vega__quic_confirm(vega_quic_conn *c);

/* conn_keys.c */
void vega__quic_discard_space(vega_quic_conn *c, int space);
int vega__quic_next_keys(vega_quic_conn *c, const vega_quic_keys *cur, uint8_t *secret,
                         vega_quic_keys **out);
vega_quic_keys *vega__quic_app_rx_keys(vega_quic_conn *c, bool phase, int *which);
int vega__quic_rx_key_update(vega_quic_conn *c, bool phase, uint64_t pn);

/* conn_cid.c */
int vega__quic_cid_new(vega_quic_conn *c, struct vega__quic_cid *id);
int vega__quic_issue_cids(vega_quic_conn *c);
struct vega__quic_cid *vega__quic_cid_find(struct vega__quic_cid *v, size_t n, uint64_t seq);
int vega__quic_on_new_cid(vega_quic_conn *c, const vega_quic_frame *f, uint64_t *wire_err);
int vega__quic_on_retire_cid(vega_quic_conn *c, const vega_quic_frame *f, uint64_t *wire_err);
bool vega__quic_is_stateless_reset(const vega_quic_conn *c, const uint8_t *dgram, size_t len);

/* conn_event.c: each returns 0 or -ENOMEM (the event is then not queued). */
int vega__quic_ev_push(vega_quic_conn *c, const vega_quic_event *ev);
/* After acknowledgements or resets gave the send pool room back: STREAM_WRITABLE for the
 * streams whose writes the budget cut short (conn_stream.c). */
void vega__quic_sendpool_wake(vega_quic_conn *c);
int vega__quic_ev_push_latest(vega_quic_conn *c, const vega_quic_event *ev);
int vega__quic_ev_simple(vega_quic_conn *c, vega_quic_event_type t, uint64_t id, uint64_t code);
/* A SESSION or NEW_TOKEN event owning a copy of d (replacing a queued one of the same type). */
int vega__quic_ev_copy(vega_quic_conn *c, vega_quic_event_type t, const uint8_t *d, size_t len);
/* The CLOSED event, with a copy of why as its data (without it when that copy fails). */
void vega__quic_ev_closed(vega_quic_conn *c, uint64_t code, bool app, bool local, const char *why);
void vega__quic_ev_fini(vega_quic_conn *c);

/* conn_close.c */
void vega__quic_close_err(vega_quic_conn *c, uint64_t code, uint64_t frame_type,
                          const char *reason);
void vega__quic_enter_draining(vega_quic_conn *c);
int vega__quic_on_close(vega_quic_conn *c, const vega_quic_frame *f);
vega_ssize vega__quic_write_close(vega_quic_conn *c, uint8_t *out, size_t limit);

/* conn_timer.c */
uint64_t vega__quic_pto(const vega_quic_conn *c);
void vega__quic_idle_restart(vega_quic_conn *c);

/* conn_path.c */
/* 0 same address, 1 only the port differs, 2 a different address; unknown (len 0) = same. */
int vega__quic_addr_cmp(const struct sockaddr_storage *a, socklen_t alen,
                        const struct sockaddr_storage *b, socklen_t blen);
void vega__quic_challenge(vega_quic_conn *c);
void vega__quic_path_validated(vega_quic_conn *c);
void vega__quic_path_failed(vega_quic_conn *c);
void vega__quic_peer_moved(vega_quic_conn *c, const vega_quic_path *path, bool new_dcid);
void vega__quic_on_path_challenge(vega_quic_conn *c, const vega_quic_frame *f);
void vega__quic_on_path_response(vega_quic_conn *c, const vega_quic_frame *f);
vega_ssize vega__quic_write_path_response(vega_quic_conn *c, vega_quic_path *path, uint8_t *out,
                                          size_t limit);

/* conn_stream.c */
struct vega__quic_stream *vega__quic_stream_get(vega_quic_conn *c, uint64_t id);
int vega__quic_stream_peer(vega_quic_conn *c, uint64_t id, bool for_send,
                           struct vega__quic_stream **out, uint64_t *wire_err);
void vega__quic_sendq_push(vega_quic_conn *c, struct vega__quic_stream *s);
void vega__quic_stream_maybe_free(vega_quic_conn *c, struct vega__quic_stream *s);
void vega__quic_streams_free(vega_quic_conn *c);
void vega__quic_stream_apply_tp(vega_quic_conn *c);

/* conn_recv.c */
/* Acts on the frames of a decrypted payload of a packet of type ptype at level, each checked
 * first (well formed, allowed in ptype; at least one frame). Returns 0, VEGA_ERR_PROTO with
 * *wire_err (and closing.frame_type when a frame caused it), or a local failure. */
int vega__quic_recv_frames(vega_quic_conn *c, int level, vega_quic_pkt_type ptype, const uint8_t *p,
                           size_t len, bool *ack_eliciting, bool *probing, uint64_t *wire_err);
void vega__quic_retry_pending(vega_quic_conn *c);

/* conn_ack.c */
/* Records a received packet number and schedules the ACK (RFC 9000 §13.2): 0 or -ENOMEM. */
int vega__quic_note_received(vega_quic_conn *c, int space, uint64_t pn, bool eliciting,
                             uint8_t ecn);
/* A packet's record from the free list (NULL: no memory), and back. */
struct vega__quic_pktrec *vega__quic_rec_get(vega_quic_conn *c);
void vega__quic_rec_put(vega_quic_conn *c, struct vega__quic_pktrec *r);
/* Recovery's callbacks: what an acknowledged or lost packet carried is done with or requeued. */
void vega__quic_on_acked(void *ud, int space, struct vega__quic_sent *p);
void vega__quic_on_lost(void *ud, int space, struct vega__quic_sent *p, bool discarded);

/* conn_build.c: one packet in the datagram at out. pkt_begin starts it at pos (false: it does
 * not fit in limit); the put_* add frames while they fit, each recorded in k->rec for loss
 * recovery; pkt_finish pads the payload to pad_to and writes the header for the final length,
 * returning the packet's length once sealed. */
bool vega__quic_pkt_begin(vega_quic_conn *c, struct vega__quic_pkt *k, int level, size_t pos,
                          size_t limit);
size_t vega__quic_pkt_finish(uint8_t *out, struct vega__quic_pkt *k, size_t pad_to);
bool vega__quic_put_frame(uint8_t *out, struct vega__quic_pkt *k, const vega_quic_frame *f);
void vega__quic_put_ack(vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k);
void vega__quic_put_crypto(vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k);
void vega__quic_put_control(vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k);
void vega__quic_put_streams(vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k, bool early);
void vega__quic_put_datagrams(vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k);
/* True when a 1-RTT packet would carry something besides an ACK. */
bool vega__quic_app_has_data(const vega_quic_conn *c);

/* conn_qlog.c: the qlog events; call only when c->cfg.qlog is set (VEGA__QLOG). pkt: the
 * packet's first byte, header written and payload not yet protected. poll: what changed since
 * the last call (metrics: recovery's numbers too). */
#define VEGA__QLOG(c) vega__unlikely((c)->cfg.qlog != NULL)
void vega__quic_qlog_started(vega_quic_conn *c);
void vega__quic_qlog_sent(vega_quic_conn *c, const struct vega__quic_pkt *k, const uint8_t *pkt);
void vega__quic_qlog_recv(vega_quic_conn *c, const vega_quic_hdr *h, uint64_t pn, bool key_phase,
                          const uint8_t *payload, size_t payload_len);
void vega__quic_qlog_dropped(vega_quic_conn *c, const vega_quic_hdr *h, const char *trigger);
void vega__quic_qlog_lost(vega_quic_conn *c, int level, uint64_t pn, const char *trigger);
void vega__quic_qlog_poll(vega_quic_conn *c, bool metrics);

/* conn_probe.c: PTO probes (RFC 9002 §6.2.4) and DPLPMTUD (RFC 9000 §14.3). */
bool vega__quic_probing(const vega_quic_conn *c);
void vega__quic_probe_on_timeout(vega_quic_conn *c, uint64_t now);
void vega__quic_probe_resend_crypto(struct vega__quic_space *sp, int level);
void vega__quic_probe_sent(struct vega__quic_space *sp, bool eliciting);
void vega__quic_pmtu_result(vega_quic_conn *c, bool acked);
bool vega__quic_pmtu_due(const vega_quic_conn *c);
vega_ssize vega__quic_pmtu_write_probe(vega_quic_conn *c, uint8_t *out, size_t cap);

#endif
