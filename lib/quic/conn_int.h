/* SPDX-License-Identifier: MIT */
/* The QUIC connection's internal state, shared by conn*.c: spaces, keys, streams, CIDs, the
 * frames each sent packet carried, and the event queue. */
#ifndef VEGA_QUIC_CONN_INT_H
#define VEGA_QUIC_CONN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/quic.h>

#include "qstream.h"
#include "quic_int.h"
#include "qtls.h"
#include "recovery.h"

/* Limits of one connection. */
#define VEGA__QUIC_CRYPTO_RX_LIMIT   (128 * 1024) /* CRYPTO bytes buffered per level */
#define VEGA__QUIC_MAX_PEER_CIDS     8            /* connection IDs the peer may give us */
#define VEGA__QUIC_MAX_LOCAL_CIDS    8            /* connection IDs we keep issued */
#define VEGA__QUIC_ACK_RANGES        64           /* ranges kept per space for ACK frames */
#define VEGA__QUIC_MAX_PENDING_PKTS  8            /* packets kept until their keys arrive */
#define VEGA__QUIC_PKT_FRAMES        16           /* retransmittable frames per packet */
#define VEGA__QUIC_DGRAM_SEND_QUEUE  64
#define VEGA__QUIC_MAX_PACKET        1200         /* datagram size until PMTU discovery */
#define VEGA__QUIC_ACK_ELICIT_THRESH 2            /* ack immediately after this many */

/* A frame whose loss matters, as recorded in a sent packet. */
enum vega__quic_sf_type {
    VEGA__QUIC_SF_STREAM = 1,   /* id, off, len, fin */
    VEGA__QUIC_SF_CRYPTO,       /* off, len (the packet's level) */
    VEGA__QUIC_SF_ACK,          /* off = the largest packet number it acknowledged */
    VEGA__QUIC_SF_MAX_DATA,
    VEGA__QUIC_SF_MAX_STREAM_DATA, /* id */
    VEGA__QUIC_SF_MAX_STREAMS_BIDI,
    VEGA__QUIC_SF_MAX_STREAMS_UNI,
    VEGA__QUIC_SF_RESET_STREAM,    /* id */
    VEGA__QUIC_SF_STOP_SENDING,    /* id */
    VEGA__QUIC_SF_NEW_CID,         /* off = sequence number */
    VEGA__QUIC_SF_RETIRE_CID,      /* off = sequence number */
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
    bool pmtu;     /* a DPLPMTUD probe of pmtu_probe bytes */
    uint16_t n;
    struct vega__quic_sf f[VEGA__QUIC_PKT_FRAMES];
};

struct vega__quic_stream {
    uint64_t id; /* first: the stream map keys on it */
    struct vega__quic_sendbuf sb;
    struct vega__quic_recvbuf rb;
    struct vega__quic_fc fc;   /* receive window */
    uint64_t max_send;         /* the peer's MAX_STREAM_DATA for us */
    uint64_t reset_code, stop_code, peer_reset_code;
    bool can_send, can_recv;   /* by stream type and initiator */
    bool reset_queued, reset_sent, reset_acked; /* our RESET_STREAM */
    bool stop_queued, stop_sent; /* our STOP_SENDING */
    bool peer_reset;           /* the peer's RESET_STREAM arrived */
    bool fin_read;             /* the application read the end */
    bool max_data_queued;      /* a MAX_STREAM_DATA to send */
    uint64_t blocked_at;       /* the limit we last sent STREAM_DATA_BLOCKED for */
    bool want_writable;        /* a short write happened: tell when room returns */
    bool readable_ev;          /* a READABLE event is queued and not yet read from */
    bool done_ev;              /* STREAM_DONE was reported */
    bool in_sendq;
    struct vega__quic_stream *sendq_next;
};

/* One packet number space. */
struct vega__quic_space {
    struct vega__quic_ranges recvd; /* packet numbers received, for ACK frames */
    uint64_t floor;         /* packet numbers below this count as duplicates */
    int64_t largest_recvd;
    uint64_t largest_recvd_time;
    bool ack_pending;       /* an ACK should go out (ack-eliciting or out of order) */
    unsigned unacked_eliciting;
    uint64_t ack_deadline;  /* VEGA__QUIC_TIME_INF when none */
    uint64_t next_pn;
    uint64_t ecn[3];        /* ECT(0), ECT(1), CE counts received */
    bool ecn_seen;
    vega_quic_keys *rx, *tx;
    struct vega__quic_sendbuf crypto_tx;
    struct vega__quic_recvbuf crypto_rx;
    bool discarded;
    bool probe;             /* the PTO asked for probes here */
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

struct vega_quic_conn {
    bool server;
    uint32_t version;
    enum vega__quic_state state;
    vega_quic_config cfg;
    vega_quic_path path;
    uint64_t now;

    struct vega__qtls *tls;
    vega_quic_tp local_tp, peer_tp;
    bool peer_tp_ok;
    bool handshake_done, handshake_confirmed;
    bool handshake_ev_owed; /* HANDSHAKE_DONE could not be queued (no memory): next_event
                               queues it again */
    bool done_ev_sent;
    bool addr_validated;       /* server: the client's address is validated */
    bool got_server_packet;    /* client: a server Initial arrived (its SCID is our DCID) */
    bool retried;              /* client: a Retry was processed */
    bool handshake_sent;       /* client: a Handshake packet went out (Initial keys dropped) */
    bool ticket_sent;
    uint64_t bytes_recv_unvalidated, bytes_sent_unvalidated;

    /* Connection IDs. odcid: the client's first Destination CID (Initial keys, TP checks). */
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
    uint8_t *token; /* client: Retry or NEW_TOKEN token for Initials */
    size_t token_len;

    struct vega__quic_space sp[VEGA__QUIC_NSPACES];
    vega_quic_keys *early_tx, *early_rx;
    /* 1-RTT key update (RFC 9001 §6). */
    vega_crypto_aead_alg app_aead;
    uint8_t app_rx_secret[VEGA_QUIC_TLS13_MAX_HASH_LEN], app_tx_secret[VEGA_QUIC_TLS13_MAX_HASH_LEN];
    size_t app_secret_len;
    vega_quic_keys *rx_next, *rx_prev;
    uint64_t rx_prev_until;  /* drop rx_prev after this time */
    bool key_phase;          /* the phase we send with */
    bool rx_phase;           /* the phase of the current receive keys */
    bool ku_pending;         /* we updated; not yet acknowledged in the new phase */
    uint64_t ku_first_pn;    /* first packet number sent in the current phase */
    uint64_t ku_allowed_at;  /* no new update before: the peer keeps old keys for 3 PTO after
                                the last one (RFC 9001 §6.5), so a quick second one reuses the
                                phase bit of keys it still tries first */
    uint64_t key_updates;

    struct vega__quic_recovery *rec;
    struct vega__quic_pktrec *rec_free;
    size_t rec_free_n;
    size_t rec_live; /* records handed out by rec_get, not yet back */
    struct vega__quic_stream *last_stream; /* vega__quic_stream_get's last hit (or NULL) */

    /* Flow control. */
    struct vega__quic_fc fc; /* connection receive window */
    uint64_t max_send_data;  /* the peer's MAX_DATA */
    uint64_t data_sent;      /* fresh stream bytes sent (against max_send_data) */
    bool max_data_queued, data_blocked_queued;
    uint64_t data_blocked_at;

    /* Streams. */
    struct vega__quic_stream_map streams;
    uint64_t next_stream[2];         /* our next id: [0] bidi, [1] uni */
    uint64_t peer_max_streams[2];    /* the peer's MAX_STREAMS for us */
    uint64_t peer_opened[2];         /* streams the peer opened (count) */
    uint64_t local_max_streams[2];   /* what we allowed the peer */
    uint64_t peer_closed[2];         /* peer streams fully closed (to raise the limit) */
    bool max_streams_queued[2];
    bool streams_blocked_ev;
    struct vega__quic_stream *sendq_head, *sendq_tail;

    /* Datagrams. */
    struct vega__quic_dgram dsend[VEGA__QUIC_DGRAM_SEND_QUEUE];
    size_t dsend_head, dsend_n;
    struct vega__quic_dgram *drecv;
    size_t drecv_head, drecv_n;

    /* Packets waiting for keys. */
    struct vega__quic_pending pending[VEGA__QUIC_MAX_PENDING_PKTS];
    size_t npending;

    /* Control frames. */
    bool handshake_done_queued;
    uint8_t *new_token;         /* server: a NEW_TOKEN to send until acknowledged */
    size_t new_token_len;
    uint64_t new_token_gen;     /* bumped per token, so an old copy's ACK does not count */
    bool new_token_queued;
    bool path_response_queued;
    uint8_t path_response[8];
    bool path_response_elsewhere;  /* the challenge came on another path: answer there alone */
    vega_quic_path path_response_path;
    bool ping_queued;

    /* Path validation and migration (RFC 9000 §8.2, §9). path is where we send now. */
    bool path_validated;           /* the current path answered our PATH_CHALLENGE (or is the
                                      handshake's path) */
    bool migrating;                /* path changed and is not validated yet */
    vega_quic_path prev_path;      /* to go back to if validation fails */
    bool challenge_queued, challenge_outstanding;
    uint8_t challenge[8];
    unsigned challenge_tries;
    uint64_t challenge_retry;      /* when to send a fresh challenge */
    uint64_t challenge_deadline;   /* validation fails after this */
    uint64_t path_bytes_recv, path_bytes_sent; /* on the unvalidated new path (3x limit) */
    uint64_t migrations;
    bool send_blocked;             /* anti-amplification left no room: no deadline is due until
                                      the peer sends more */
    size_t path_response_budget;   /* 3x the datagram that carried the challenge */
    /* DPLPMTUD (RFC 9000 §14.3, RFC 8899): mtu is confirmed; a probe of probe bytes searches
     * between mtu and hi. */
    size_t mtu, pmtu_hi, pmtu_probe;
    bool pmtu_in_flight, pmtu_done;
    unsigned pmtu_fails;
    size_t last_cap;               /* the write cap seen last: probes never exceed it */
    const vega_quic_path *rx_path; /* the path of the datagram being read (during read) */
    size_t rx_dgram_len;
    uint8_t rx_dcid[VEGA_QUIC_MAX_CID_LEN], rx_dcid_len; /* our CID the peer used last */

    /* Events. */
    vega_quic_event *ev;
    size_t ev_head, ev_n, ev_cap;
    uint8_t *ev_data; /* owned data of the event returned last */
    uint8_t *session;  /* the latest session blob */
    size_t session_len;

    /* Close. */
    uint64_t close_code;
    bool close_app;
    uint64_t close_frame_type;
    char close_reason[128];
    bool close_send;        /* a CONNECTION_CLOSE should go out */
    uint64_t close_deadline;
    uint64_t idle_timeout;  /* ns, negotiated; 0 = none */
    uint64_t idle_deadline;
    bool eliciting_since_rx; /* an ack-eliciting packet left since the last one processed: the
                                idle timer restarts only on the first (RFC 9000 §10.1) */
    uint64_t pace_deadline;

    vega_quic_conn_info stats;
};

/* conn.c */
int vega__quic_rand(vega_quic_conn *c, void *buf, size_t len);
int vega__quic_ev_push(vega_quic_conn *c, const vega_quic_event *ev);
int vega__quic_ev_push_latest(vega_quic_conn *c, const vega_quic_event *ev);
void vega__quic_close_err(vega_quic_conn *c, uint64_t code, uint64_t frame_type,
                          const char *reason);
void vega__quic_enter_draining(vega_quic_conn *c);
void vega__quic_discard_space(vega_quic_conn *c, int space);
int vega__quic_issue_cids(vega_quic_conn *c);
uint64_t vega__quic_pto(const vega_quic_conn *c);
void vega__quic_confirm(vega_quic_conn *c);
void vega__quic_idle_restart(vega_quic_conn *c);
int vega__quic_level_space(vega_quic_level l);
/* 0 same address, 1 only the port differs, 2 a different address; unknown (len 0) = same. */
int vega__quic_addr_cmp(const struct sockaddr_storage *a, socklen_t alen,
                        const struct sockaddr_storage *b, socklen_t blen);
void vega__quic_challenge(vega_quic_conn *c);
void vega__quic_path_validated(vega_quic_conn *c);
void vega__quic_path_failed(vega_quic_conn *c);
void vega__quic_peer_moved(vega_quic_conn *c, const vega_quic_path *path, bool new_dcid);
int vega__quic_tls_progress(vega_quic_conn *c);
int vega__quic_next_keys(vega_quic_conn *c, const vega_quic_keys *cur, uint8_t *secret,
                         vega_quic_keys **out);

/* conn_stream.c */
struct vega__quic_stream *vega__quic_stream_get(vega_quic_conn *c, uint64_t id);
int vega__quic_stream_peer(vega_quic_conn *c, uint64_t id, bool for_send,
                           struct vega__quic_stream **out, uint64_t *wire_err);
void vega__quic_sendq_push(vega_quic_conn *c, struct vega__quic_stream *s);
void vega__quic_stream_maybe_free(vega_quic_conn *c, struct vega__quic_stream *s);
void vega__quic_streams_free(vega_quic_conn *c);
void vega__quic_stream_apply_tp(vega_quic_conn *c);

/* conn_recv.c */
int vega__quic_recv_frames(vega_quic_conn *c, int level, const uint8_t *p, size_t len,
                           bool *ack_eliciting, bool *probing, uint64_t *wire_err);
void vega__quic_retry_pending(vega_quic_conn *c);

/* conn_send.c */
void vega__quic_pmtu_result(vega_quic_conn *c, bool acked);
void vega__quic_on_acked(void *ud, int space, struct vega__quic_sent *p);
void vega__quic_on_lost(void *ud, int space, struct vega__quic_sent *p, bool discarded);

#endif
