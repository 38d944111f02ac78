/* SPDX-License-Identifier: MIT */
/* The HTTP server's HTTP/3 side (RFC 9114): its QUIC endpoint, a connection's HTTP/3 state
 * (driven from the endpoint's events under the connection's lock: no task while idle), and a
 * request's state (its head read by the connection, then a task that runs the handler). */
#ifndef VEGA_HTTP_SERVER_H3_INT_H
#define VEGA_HTTP_SERVER_H3_INT_H

#include <vega/h3.h>
#include <vega/quic_ep.h>
#include <vega/websocket.h>

#include "rt_int.h"
#include "server_int.h"

/* Bytes a connection keeps for its unidirectional streams that QUIC did not take yet (SETTINGS,
 * GOAWAY, QPACK instructions): beyond, the connection closes (H3_EXCESSIVE_LOAD). */
#define H3S_UNI_PENDING_MAX (64u * 1024u)
/* Response head and DATA frame headers are built here before they go to the QUIC stream. */
#define H3S_OUT_CAP 8192
/* Actions the h3 core's callbacks ask for (they run while a peeked span is in use, so they
 * queue; the feeder carries them out after). */
#define H3S_ACTIONS_MAX 64
/* Request blocks (the request's state and its output buffer, one allocation) kept for reuse by
 * a server: a block per request made and freed is most of the allocator's work on small
 * responses. Beyond, blocks go back to the allocator. */
#define H3S_POOL_MAX 512
/* The file pieces a server keeps for reuse (H3S_CHUNK bytes each, 2 MiB in all): a 256 KiB
 * piece freed to the allocator and allocated again is a fresh mapping whose pages fault in
 * during the next pread (measured: page faults, madvise and TLB flushes were about 5 % of a
 * download's server CPU). Beyond, pieces go back to the allocator. */
#define H3S_CHUNK_POOL_MAX 8
/* A piece of a file read for the response (h3_exchange.c): referenced by the QUIC stream (no
 * copy into its send buffer) until acknowledged. refs: one per write that took some of it, one
 * for the writer; every change is made under the connection's lock (the release runs inside
 * core calls, which hold it). */
#define H3S_CHUNK (256u * 1024u)
struct h3s_chunk {
    struct h3s *l;
    struct h3s_chunk *next; /* in l's pool */
    size_t cap;             /* data's size: H3S_CHUNK for the pieces the pool keeps */
    unsigned refs;
    uint8_t data[];
};
/* Response bytes a connection holds until acknowledged (vega_http_server_h3_opts
 * .conn_send_budget's default): without it each of 100 streams could hold its 1 MiB send
 * buffer for a client that never reads. 4 MiB keeps four responses at full speed at once. */
#define H3S_SEND_BUDGET (4u * 1024u * 1024u)

struct h3s;
struct h3s_req;

struct h3s_pending {
    uint64_t sid;
    uint8_t *buf;
    size_t len, cap;
};

enum h3s_action_kind {
    H3S_ACT_RESET = 1, /* RESET_STREAM + STOP_SENDING with code */
    H3S_ACT_STOP = 2,  /* STOP_SENDING with code */
    H3S_ACT_FEED = 3,  /* feed the stream again (it was blocked on QPACK) */
};

struct h3s_action {
    uint64_t sid, code;
    enum h3s_action_kind kind;
};

/* One HTTP/3 connection. Its fields are used under its QUIC connection's lock; refs counts
 * the endpoint's connection (until on_closed) and each request. */
struct h3s_conn {
    struct h3s *l;
    vega_quic_ep_conn *qc;
    vega_h3_conn *h3;
    atomic_uint refs;
    uint64_t id; /* the server's connection number */
    bool bound, closed, goaway;
    bool goaway_seen;           /* nothing in flight once after the first GOAWAY (vega__h3s_stop) */
    struct h3s_pending pend[3]; /* control, QPACK encoder, QPACK decoder */
    struct h3s_action act[H3S_ACTIONS_MAX];
    size_t nact;
    bool act_overflow;
    struct h3s_req *reqs; /* open requests (a list: at most max_streams) */
    size_t nreqs;
    unsigned nseq;                /* requests started on this connection */
    size_t unacked;               /* responses ended (FIN sent) whose stream is not all
                                     acknowledged yet: a graceful close waits for them */
    vega_quic_conn *cur;          /* the core while a feeder runs (for callbacks) */
    struct h3s_conn *next, *prev; /* the listener's list */
};

enum h3s_phase {
    H3S_HEAD = 0, /* the connection feeds the stream up to the end of the HEADERS frame */
    H3S_RUN = 1,  /* a task runs the handler; it feeds the body itself */
};

struct h3s_req {
    struct h3s_conn *hc;
    uint64_t sid;
    enum h3s_phase phase;
    /* the frame the HEAD phase is in: its header bytes so far, then the bytes left of it */
    uint8_t fh[16];
    size_t fh_len;
    uint64_t fleft;
    bool fknown;
    bool head_done, fin_recv, reset, stop, failed, early;
    uint64_t err_code;
    vega_task *task;
    vega_notify rd, wr;
    /* the body read in progress: DATA payload goes straight here */
    uint8_t *dst;
    size_t dst_len, dst_got;
    /* the request as the handler sees it: the head copied into store */
    char *store;
    vega_http_field *fields;
    size_t nfields;
    struct vega_http_exchange x;
    vega_addr peer, local;
    /* the response */
    uint8_t *out; /* H3S_OUT_CAP, just after the struct: the held head, DATA frame headers,
                     trailers, small bodies and files */
    size_t out_len;
    bool fin_sent;
    struct h3s_req *next;
};

struct h3s {
    vega_http_server *srv;
    vega_quic_endpoint *ep;
    vega_http_server_h3_opts o;
    vega_h3_opts h3o;
    uint64_t send_budget; /* each connection's (o.conn_send_budget or H3S_SEND_BUDGET) */
    vega_addr local;
    pthread_mutex_t lock; /* guards conns */
    struct h3s_conn *conns;
    atomic_size_t nconns, nreqs;
    atomic_uint refs; /* the server's, one per connection and one per request task: each drops
                         it as the very last thing it does, and vega__h3s_stop frees l when only
                         its own is left */
    atomic_bool stopping;
    vega_notify idle;     /* a request or a connection ended */
    size_t scan_count;    /* each_conn's callbacks count here (the run task alone) */
    uint64_t scan_rtt;    /* and find the largest smoothed RTT here (ns) */
    vega__spin pool_lock; /* the free request blocks, at most H3S_POOL_MAX */
    struct h3s_req *pool;
    size_t npool;
    vega__spin chunk_lock; /* the free file pieces (h3_exchange.c), at most H3S_CHUNK_POOL_MAX */
    struct h3s_chunk *chunks;
    size_t nchunks;
};

/* h3_conn.c */
int vega__h3s_listen(vega_http_server *srv, const vega_addr *addr, unsigned flags,
                     const vega_http_server_h3_opts *o, vega_addr *bound);
/* Shutdown: GOAWAY to every connection, wait for their requests until grace, close them, stop
 * and free the endpoint. Context: the server's run task. */
void vega__h3s_stop(struct h3s *l, bool cancelled);
/* Feeds the request stream of r with what its task asked for (c locked). */
void vega__h3s_actions(struct h3s_conn *hc, vega_quic_conn *qc);
int vega__h3s_flush_uni(struct h3s_conn *hc, vega_quic_conn *qc);
void vega__h3s_conn_unref(struct h3s_conn *hc);
void vega__h3s_req_unlink(struct h3s_req *r);

/* A request block: taken from the server's pool or allocated (NULL when out of memory);
 * zeroed but for its buffer. */
struct h3s_req *vega__h3s_req_alloc(struct h3s *l);
void vega__h3s_pool_free(struct h3s *l);
/* Frees the pooled file pieces (the server's teardown, once nothing references one). */
void vega__h3s_chunks_free(struct h3s *l);

/* h3_exchange.c */
extern const struct srv_xops vega__h3s_xops;
/* The head of r arrived (c locked): copy it, start the handler's task. Returns 0 or -ENOMEM. */
int vega__h3s_req_start(struct h3s_req *r, const vega_h3_head *head);
void vega__h3s_req_free(struct h3s_req *r);
/* Reads request body bytes (DATA payload) into buf: what is there, at least 1 byte; 0 at the
 * stream's end; -ECONNRESET (reset), VEGA_ERR_PROTO, a deadline's code. No body timeout: the
 * caller's dl alone. */
vega_ssize vega__h3s_read(struct h3s_req *r, void *buf, size_t len, vega_deadline dl);
/* Sends what the response holds back (the head, small writes) now. Returns 0 or an error (the
 * exchange is then broken). */
int vega__h3s_flush(struct h3s_req *r, vega_deadline dl);

/* h3_ws.c: WebSockets over HTTP/3 (RFC 9220) */
/* Whether x (an HTTP/3 exchange) is an extended CONNECT for a WebSocket. */
bool vega__h3s_is_websocket(const vega_http_exchange *x);
/* Answers it 200 with the selected subprotocol (proto, plen) and extension (ext, "" for none),
 * and makes *out over the stream. Returns as vega_http_exchange_accept_websocket. */
int vega__h3s_accept_websocket(vega_http_exchange *x, const vega_websocket_opts *o,
                               const char *proto, size_t plen, const char *ext,
                               const vega_ws_deflate_params *params, vega_websocket **out,
                               vega_deadline dl);

#endif
