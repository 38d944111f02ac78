/* SPDX-License-Identifier: MIT */
/* The HTTP server's HTTP/2 side (RFC 9113): a connection's state around the sans-I/O core (its
 * lock, its two tasks while active, its requests) and a request's state (the head copied for the
 * handler, the body queue, the response's spans). Named apart from lib/h2's h2_int.h. */
#ifndef VEGA_HTTP_SERVER_H2_INT_H
#define VEGA_HTTP_SERVER_H2_INT_H

#include <vega/h2.h>
#include <vega/websocket.h>

#include "server_int.h"

/* The connection preface a client sends first (RFC 9113 §3.4). */
#define H2S_PREFACE     "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2S_PREFACE_LEN 24
/* Read buffer of an active connection (input fed to the core as it comes). */
#define H2S_IN_CAP 16384
/* Output buffer of an active connection: frames written by the core, then to the socket in one
 * write. */
#define H2S_OUT_CAP 65536
/* A response's small writes are gathered here (and sent as one DATA frame with the head). */
#define H2S_SMALL_CAP 16384
/* Bytes of a file read at once for vega_http_response_sendfile; H2S_FILE_MIN while the
 * peer's windows let less go (a stalled stream then holds a frame's worth, not a chunk). */
#define H2S_FILE_CHUNK 65536
#define H2S_FILE_MIN   16384
/* An active connection with nothing to do parks after this long (a busy client's next requests
 * usually come sooner, so it keeps its task and buffers meanwhile). */
#define H2S_PARK_DELAY_NS (20ull * VEGA_NS_PER_MS)
/* How often stalled sends are checked against write_timeout while some wait. */
#define H2S_STALL_TICK_NS (250ull * VEGA_NS_PER_MS)
/* Writes in a row (1 ms apart) that may find no memory before the connection is given up. */
#define H2S_NOMEM_TRIES 100
/* Request tasks alive on a connection at most, counting those whose stream the peer already
 * reset: beyond, new streams are refused (REFUSED_STREAM). A multiple of the stream limit. */
#define H2S_TASKS_PER_STREAM 2

struct h2s_req;

/* A connection. Everything under "mu" is used with mu held; mu is held only for calls into the
 * core and the bookkeeping around them, never across a wait. */
struct h2s_conn {
    struct srv_conn *c;
    vega_http_server *srv;
    /* srv->o.mem, kept here: the free runs after the connection left the server's count, when
     * vega_http_server_free may already have released srv */
    const vega_mem *mem;
    vega_mutex mu;
    vega_notify wake; /* the connection task waits on it: output, a request's end, news from
                         the reader, shutdown */
    /* the tasks that have not returned yet: request tasks and the reader; decremented as each
     * one's very last touch of this struct, so the close waits for zero before freeing */
    atomic_uint tasks_live;
    atomic_bool kicked; /* a shutdown asked us to look (server's stopping flag) */
    /* -- mu -- */
    vega_h2_conn *core;
    struct h2s_req *reqs;  /* requests whose task runs or whose stream is open */
    struct h2s_req *spawn; /* heads that came in the last feed, waiting for their task */
    size_t ntasks;         /* request tasks running (limit: H2S_TASKS_PER_STREAM x streams) */
    size_t nrst_after;     /* requests waiting for their response's end to be written */
    size_t nbusy;          /* requests with a span in the core */
    unsigned nseq;         /* requests started on this connection */
    bool rd_done;          /* the reader stopped: rd_rc says why */
    int rd_rc;
    bool rd_waiting; /* the reader waits for the socket (the last read left it empty) */
    bool dead;       /* the connection is over: the core accepts nothing more */
    bool shut;       /* the graceful shutdown started */
    bool broken;     /* a write failed: nothing more goes out */
    unsigned nomem;  /* writes in a row that found no memory for a frame */
    /* h2c Upgrade: the request as a HEADERS frame for stream 1, fed to the core right after
     * the client's preface and SETTINGS (RFC 7540 §3.2) */
    uint8_t *up_frame;
    size_t up_len;
    /* -- the reader's (and, while it does not run, the connection task's) -- */
    uint8_t *in;
    size_t in_len; /* bytes held back before the upgrade's frame could be fed */
    vega_task *reader;
    /* -- the connection task's -- */
    uint8_t *out;
    vega_tstamp idle_since; /* when the last request ended (0: busy) */
    vega_deadline idle_dl;  /* the parked connection's idle deadline */
};

/* A request stream. refs: its task's and its stream's (under mu). */
struct h2s_req {
    struct h2s_conn *h;
    int32_t sid;
    int refs;
    vega_task *task;
    struct h2s_req *next, *prev; /* h->reqs */
    struct h2s_req *spawn_next;
    /* -- mu -- */
    bool has_task;  /* a task was (or is being) started */
    bool task_done; /* the handler's task is past the handler */
    bool fin_recv;  /* the peer's side ended */
    bool closed;    /* on_stream_close ran: the stream is gone */
    uint32_t close_code;
    vega_h2_close close_how;
    bool busy;       /* a span is with the core (until on_stream_writable or the close) */
    bool end_given;  /* END_STREAM was given to the core */
    bool rst_after;  /* reset NO_ERROR once our END_STREAM is out (the body is not wanted) */
    bool self_reset; /* the task reset its own stream (it knows: no cancel) */
    /* the body: what the task asked for goes straight to dst; the rest waits in rx */
    uint8_t *dst;
    size_t dst_len, dst_got;
    uint8_t *rx;
    size_t rx_off, rx_len, rx_cap;
    vega_notify rd, wr;
    /* the request as the handler sees it (copied from the core's head) */
    char *store;
    vega_http_field *fields;
    size_t nfields;
    struct vega_http_exchange x;
    vega_addr peer, local;
    /* the response: small writes gathered, a file's bytes */
    uint8_t *small;
    size_t small_len, small_cap;
    bool small_sent; /* small holds a span the core has */
    uint8_t *chunk;
    size_t chunk_cap;
};

/* Locks h->mu even in a cancelled task (it is never held across a wait). */
void vega__h2s_lock(struct h2s_conn *h);
static inline void vega__h2s_unlock(struct h2s_conn *h)
{
    vega_mutex_unlock(&h->mu);
}

/* h2_conn.c */
/* Takes c over as HTTP/2: its active block's unread bytes become the connection's first input
 * (c->a is freed). up_frame: the h2c Upgrade's stream 1 (taken), or NULL. Runs the connection
 * until it parks or ends. Returns as vega__srv_conn_run. Context: c's task. */
int vega__h2s_start(struct srv_conn *c, uint8_t *up_frame, size_t up_len);
/* A parked HTTP/2 connection woke (status as vega_sock_ready_fn). Context: a fresh task. */
void vega__h2s_ready(struct srv_conn *c, int status);
/* Shutdown asks an active connection to look (any thread; c registered, under its shard's
 * lock). */
void vega__h2s_kick(struct srv_conn *c);
/* Frees the HTTP/2 state of c (nothing runs any more). */
void vega__h2s_free(struct srv_conn *c);
/* The core's callbacks (h2_stream.c) */
extern const vega_h2_callbacks vega__h2s_cb;

/* h2_stream.c */
/* Starts the tasks of the requests whose head came in the last feed (h locked). */
void vega__h2s_spawn(struct h2s_conn *h);
/* Wakes every request (h locked): the connection ended. */
void vega__h2s_wake_all(struct h2s_conn *h);
/* Resets streams whose END_STREAM is out but whose body is not wanted (h locked). */
void vega__h2s_rst_after(struct h2s_conn *h);
/* Resets streams whose send stalled longer than write_timeout (h locked). Returns true when
 * some request still waits for the peer's window. */
bool vega__h2s_check_stalls(struct h2s_conn *h, vega_tstamp now);
/* True when the connection or a stream with a span waits for the peer's window (h locked). */
bool vega__h2s_blocked(struct h2s_conn *h);
void vega__h2s_req_unref(struct h2s_req *r);

/* h2_exchange.c */
extern const struct srv_xops vega__h2s_xops;
void *vega__h2s_req_task(void *arg);
/* Reads request body bytes (DATA) of r: what waits in its queue, else what arrives before dl.
 * Returns the count, 0 at the peer's END_STREAM, -ECONNRESET (reset), -EPIPE (the connection
 * ended), VEGA_ERR_PROTO (a malformed body), -ETIMEDOUT, -ECANCELED. No body timeout of its
 * own (the exchange's read adds it). Context: r's task. */
vega_ssize vega__h2s_read(struct h2s_req *r, void *buf, size_t len, vega_deadline dl);
/* Sends p[0..n) as DATA of r at once (not gathered), end: with END_STREAM; returns once the
 * core copied it (0) or with the error that stopped it. dl is capped by write_timeout. */
int vega__h2s_send(struct h2s_req *r, const void *p, size_t n, bool end, vega_deadline dl);

/* h2_ws.c: WebSockets over HTTP/2 (RFC 8441) */
/* Whether x (an HTTP/2 exchange) is an extended CONNECT for a WebSocket. */
bool vega__h2s_is_websocket(const vega_http_exchange *x);
/* Answers x 200 with the negotiated proto (plen bytes) and extension response ext ("" for
 * none), and makes *out over the stream. Returns as vega_http_exchange_accept_websocket. */
int vega__h2s_accept_websocket(vega_http_exchange *x, const vega_websocket_opts *o,
                               const char *proto, size_t plen, const char *ext,
                               const vega_ws_deflate_params *params, vega_websocket **out,
                               vega_deadline dl);

/* h2_detect.c */
/* What the first bytes of a connection say. */
enum h2s_detect {
    H2S_NOT_H2 = 0,   /* HTTP/1.1 */
    H2S_IS_H2 = 1,    /* HTTP/2: ALPN h2, or the preface over cleartext */
    H2S_NEED_MORE = 2 /* a proper prefix of the preface: read more first */
};
enum h2s_detect vega__h2s_detect(const struct srv_conn *c, const uint8_t *p, size_t len);
/* An HTTP/1.1 request that asks for h2c and may have it (RFC 7540 §3.2): answers 101 and
 * builds stream 1's frame. Returns 1 (switched: *frame, *len set), 0 (serve it as HTTP/1.1),
 * or a negative code (the 101 could not be written: close). */
int vega__h2s_upgrade(struct srv_conn *c, uint8_t **frame, size_t *len);
/* The core's options for a connection of srv. */
void vega__h2s_core_opts(const vega_http_server *srv, vega_h2_opts *o);
/* ALPN of a TLS server: h2 first unless HTTP/2 is off (srv->o.tls set). Returns 0 or a code. */
int vega__h2s_alpn(vega_http_server *srv);

#endif
