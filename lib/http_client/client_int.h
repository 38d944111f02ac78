/* SPDX-License-Identifier: MIT */
/* HTTP client internals shared by its files: the client, pooled connections (HTTP/1.1 over
 * TCP, HTTP/3 over QUIC), the response being received (parser state, buffers, decoder), the
 * Alt-Svc and QUIC session caches, and the functions between them. */
#ifndef VEGA_HTTP_CLIENT_INT_H
#define VEGA_HTTP_CLIENT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/compress.h>
#include <vega/dns.h>
#include <vega/h2.h>
#include <vega/h3.h>
#include <vega/http_client.h>
#include <vega/quic_ep.h>
#include <vega/rt.h>
#include <vega/sync.h>

#include "base.h"

/* Bytes read from the connection at a time, and the most decoded-body bytes one parse may
 * produce (a parse never yields more body than it was given). */
#define HC_RBUF 16384
/* A streamed request body (body_fn) is asked for in pieces of up to this, so that a caller
 * reading a file hands over large pieces (one read, one write each) instead of 16 KiB ones. */
#define HC_WBUF (256 * 1024)
/* Most interim (1xx) responses before the final one. */
#define HC_MAX_INTERIM 10
/* Most idle connections over all origins, whatever max_idle_per_origin says. */
#define HC_MAX_IDLE_TOTAL 1024
/* Longest host name kept in a pool key or a --resolve entry. */
#define HC_MAX_HOST 255
/* How long expect_continue waits for 100 before sending the body anyway. */
#define HC_EXPECT_WAIT_NS (1000ull * 1000 * 1000)

/* Where a connection goes: scheme (TLS or not), host (lowercased), port. */
struct hc_key {
    bool tls;
    bool tunnel; /* never forwarded: through an HTTP proxy by CONNECT even for http:// (a
                    WebSocket, which an HTTP forward proxy cannot carry) */
    uint16_t port;
    char host[HC_MAX_HOST + 1];
};

/* One connection, owned by the pool while idle or by a response while in use. */
struct hc_conn {
    struct hc_key key;
    vega_stream *s; /* the socket stream, or the TLS stream over it */
    vega_addr peer;
    char alpn[32];           /* "" when none */
    const char *tls_version; /* static, NULL without TLS */
    vega_tstamp idle_since;
    unsigned uses;               /* responses completed on it */
    struct hc_conn *prev, *next; /* the pool's list, newest first */
    const vega_mem *mem;         /* the client's allocator, which made this struct */
};

struct hc_resolve {
    char host[HC_MAX_HOST + 1];
    uint16_t port;
    vega_addr addr;
    struct hc_resolve *next;
};

/* ---- the multiplexed connections' pool (mux_pool.c) --------------------------------------------
 * An HTTP/2 or HTTP/3 connection serves every request to its origin at once (RFC 9113 §9.1.1,
 * RFC 9114 §3.3); both kinds embed a struct hc_mux, which the pool's list, its lookup by origin,
 * the wait for a connection being made and the idle ones' end work on. */

enum hc_mux_state {
    HC_MUX_CONNECTING, /* a task is connecting: requests to the origin wait for it (waiters) */
    HC_MUX_READY,      /* connected: requests may open streams while usable */
    HC_MUX_FAILED,     /* the connect failed (conn_err), or (HTTP/2) ALPN chose HTTP/1.1
                          (conn_err 0): waiters go on their own */
};

/* A task waiting for a connecting connection (its node lives on its stack). */
struct hc_mux_waiter {
    vega_notify wake;
    struct hc_mux_waiter *next;
};

struct hc_mux;
/* What differs between the two kinds of connection, for the pool. */
struct hc_mux_ops {
    size_t max_conns; /* idle ones beyond this many (over all origins) are closed */
    /* The pool dropped m (out of its list): HTTP/2 says GOAWAY, HTTP/3 closes; the pool's
     * reference is released after. */
    void (*close)(struct hc_mux *m);
    void (*free)(struct hc_mux *m); /* the last reference went */
    /* After waiting for a connection being made that then could not be joined, make one's own
     * at once (HTTP/2: the origin spoke HTTP/1.1 there) instead of looking for another to join
     * first (HTTP/3). */
    bool fresh_after_wait;
};

struct hc_mux {
    const struct hc_mux_ops *ops;
    struct hc_key key;  /* the origin: the pool key (tls, host, port) */
    atomic_uint refs;   /* the pool's, each request's, and the kind's own (writer, connecting) */
    atomic_bool usable; /* new requests may go: false after GOAWAY, an error or the end */
    /* guarded by the client's mutex */
    struct hc_mux *prev, *next; /* the pool's list, newest first */
    enum hc_mux_state state;
    int conn_err;
    struct hc_mux_waiter *waiters;
    unsigned active; /* requests on it now */
    vega_tstamp idle_since;
};

/* One kind's connections (the client's h2s, h3s). */
struct hc_mux_pool {
    const struct hc_mux_ops *ops;
    struct hc_mux *head; /* newest first */
    size_t n;
};

/* m's pool part, CONNECTING, with refs references (the struct around it was zeroed). */
void vega__hc_mux_init(struct hc_mux *m, const struct hc_mux_ops *ops, const struct hc_key *k,
                       unsigned refs);
/* Drops a reference (m may be NULL); the last one frees m (ops->free). */
void vega__hc_mux_release(struct hc_mux *m);
/* A usable pooled connection to k's origin, waiting (bounded by dl) for one being made: 1 with
 * *out retained and counted in active, 0 when none (or the one waited for spoke HTTP/1.1), or
 * the wait's code. Idle connections past their use are closed on the way. */
int vega__hc_mux_take(vega_http_client *c, struct hc_mux_pool *p, const struct hc_key *k,
                      vega_deadline dl, struct hc_mux **out);
/* m (CONNECTING, not listed) goes into p for its origin, so that requests wait for it: 0 (then
 * vega__hc_mux_connect_done ends its CONNECTING), unless fresh is false and a connection to the
 * origin that is usable or being made is joined instead: 1 with *other as vega__hc_mux_take
 * gives it, or the wait's code; m is left as it was (the caller frees it) when not 0. */
int vega__hc_mux_join(vega_http_client *c, struct hc_mux_pool *p, struct hc_mux *m, bool fresh,
                      vega_deadline dl, struct hc_mux **other);
/* Ends m's CONNECTING: READY (counted in active for the request that made it) or FAILED with
 * err (0: HTTP/2's ALPN chose HTTP/1.1), out of the list with the pool's reference released;
 * wakes the waiters. */
void vega__hc_mux_connect_done(vega_http_client *c, struct hc_mux_pool *p, struct hc_mux *m,
                               bool ready, int err);
/* A connection made without CONNECTING (handed over ready) goes into p: READY, active 1. */
void vega__hc_mux_push_ready(vega_http_client *c, struct hc_mux_pool *p, struct hc_mux *m);
/* A request on m ended: one fewer active, idle from now. */
void vega__hc_mux_done(vega_http_client *c, struct hc_mux *m);
/* Empties p, closing each connection and dropping the pool's reference (vega_http_client_free). */
void vega__hc_mux_shutdown(vega_http_client *c, struct hc_mux_pool *p);

/* ---- HTTP/3 ---------------------------------------------------------------------------------- */

/* QUIC's head start before TCP races it (curl's), and the pacing of QUIC attempts across a
 * name's addresses (RFC 8305 §5's Connection Attempt Delay). */
#define HC_H3_HEAD_START_NS    (200ull * 1000 * 1000)
#define HC_H3_ATTEMPT_DELAY_MS 250
#define HC_H3_MAX_ADDRS        8
/* Bytes taken from the HTTP/3 core for our unidirectional streams at a time. */
#define HC_H3_UNI_CHUNK 4096
/* Most HTTP/3 connections the client keeps (idle or busy); beyond, the oldest idle one goes. */
#define HC_H3_MAX_CONNS 256
/* Connections a request may find refused (CONNECTION_REFUSED after the handshake: a server
 * that stops) in a row, each retried on a new one: a server reloaded again and again
 * (vega-serve --shards, SIGHUP back to back) may refuse a few, one per generation stopping
 * (three live at once at most); other retries stay at one. */
#define HC_H3_MAX_REFUSED 3

/* A buffer of bytes for one of our unidirectional streams that QUIC did not take yet. */
struct hc_buf {
    uint8_t *p;
    size_t len, cap;
};

/* One QUIC connection carrying HTTP/3: shared by every request to its origin. No task of its
 * own: the endpoint's receive task runs on_event with the QUIC connection locked, which feeds
 * the control and QPACK streams to the HTTP/3 core and wakes the requests whose streams moved;
 * each request's task reads and writes its own stream under the same lock. */
struct hc_h3 {
    struct hc_mux mux; /* the pool's part: origin, references, usable, state (c->mu) */
    vega_http_client *c;
    char sni[HC_MAX_HOST + 1]; /* the name the certificate must match: the origin's host */
    char dst_host[HC_MAX_HOST + 1];
    uint16_t dst_port;     /* where QUIC goes: the origin, or its Alt-Svc alternative */
    vega_quic_ep_conn *qe; /* our handle (NULL until connected) */
    vega_h3_conn *h3;
    /* guarded by the QUIC connection's lock */
    vega_quic_conn *qc;                        /* set while the lock is held */
    struct vega_http_client_response *reqs;    /* requests with a stream (r->h3_next) */
    struct vega_http_client_response *feeding; /* the one whose stream is being fed now */
    uint64_t uni[3];                           /* our control, QPACK encoder, decoder streams */
    struct hc_buf pend[3];
    bool goaway;
    uint64_t goaway_id;
    bool key_updated;  /* opts.quic_key_update: the one key update was started */
    int migration;     /* opts.quic_migrate: vega_http_client_info.quic_migration's values */
    int migration_err; /* when it could not start */
    vega_tstamp t_hs;  /* when the handshake was done (HANDSHAKE_DONE), for quic_migrate */
    /* the HTTP/3 core while responses read what they kept at the end (h3_read.c pump_kept):
     * taken inside the QUIC connection's lock while it is not torn down, alone after */
    pthread_mutex_t kept_mu;
    bool dead; /* the connection ended or failed: err and werr say how */
    int err;
    vega_http_client_wire_error werr;
    /* facts of the handshake, for the responses' info */
    vega_addr peer;
    uint32_t quic_version;
    uint16_t suite;
    bool resumed;
    vega_quic_early_data early;
    vega_tstamp t_dns, t_connect;
};

/* ---- HTTP/2 ---------------------------------------------------------------------------------- */

/* The connection's read and write buffers. */
#define HC_H2_IN  16384
#define HC_H2_OUT 32768
/* A stream's received and not yet read body is bounded by its receive window, whose cap is
 * this (the core's stream_window_max); the buffer never grows past it plus a frame. */
#define HC_H2_STREAM_WINDOW_MAX (8u * 1024 * 1024)
#define HC_H2_BUF_MAX           (HC_H2_STREAM_WINDOW_MAX + 65536u)
/* Most HTTP/2 connections the client keeps (idle or busy). */
#define HC_H2_MAX_CONNS 256
/* Streams we open at once on one connection, whatever the server allows. */
#define HC_H2_MAX_STREAMS 256
/* After our GOAWAY, how long streams still open may take (then the connection closes), and
 * how many writes in a row may find no memory before the connection is given up. */
#define HC_H2_CLOSE_WAIT_NS (2000ull * 1000 * 1000)
#define HC_H2_NOMEM_TRIES   100

/* One HTTP/2 connection (RFC 9113), shared by every request to its origin. A writer task
 * writes what the core produces and keeps its timers; a reader task feeds the core what the
 * socket brings; the core's callbacks (under mu) fill the responses and wake their tasks. */
/* The frame tracer's scan of one direction of a connection (vega_http_client_opts.h2_frame):
 * the preface still to skip, the frame header and first payload bytes gathered, the rest of
 * the payload to skip. */
struct hc_h2_tap {
    uint8_t preface; /* bytes of the client preface left to skip (24 at the start, out) */
    uint8_t have;    /* bytes of buf filled */
    uint8_t buf[9 + 8];
    uint32_t skip; /* payload bytes past buf still to come */
};

struct hc_h2 {
    struct hc_mux mux; /* the pool's part: origin, references, usable, state (c->mu) */
    vega_http_client *c;
    vega_stream *s; /* the transport (TLS or plain), owned */
    vega_addr peer;
    char alpn[16];
    const char *tls_version;
    vega_h2_conn *core;
    pthread_mutex_t mu; /* guards core and the fields below it; never held across a wait */
    vega_notify wake;   /* the writer: bytes to write, a timer, the end */
    vega_task *reader, *writer;
    atomic_bool closing; /* the pool dropped it: GOAWAY, then the tasks end */
    /* guarded by the client's mutex */
    struct hc_conn *h1; /* FAILED by ALPN http/1.1: the connection, for its maker */
    /* guarded by mu */
    struct vega_http_client_response *reqs; /* requests with a stream (r->h2_next) */
    bool dead;                              /* the connection ended: err and werr say how */
    bool rd_done;                           /* the reader ended */
    bool core_err; /* the core ended the connection (its GOAWAY still goes out) */
    int err;
    vega_http_client_wire_error werr;
    bool goaway;
    uint32_t goaway_last;
    uint8_t *out; /* HC_H2_OUT bytes for the writer */
    uint8_t in[HC_H2_IN];
    vega_tstamp t_dns, t_connect, t_tls;
    struct hc_h2_tap tap_in, tap_out; /* the reader's and the writer's (h2_frame only) */
};

/* The Alt-Svc cache (h3_altsvc.c): per origin, up to HC_ALTSVC_MAX alternatives. */
#define HC_ALTSVC_MAX         8
#define HC_ALTSVC_MAX_ORIGINS 1024
#define HC_ALTSVC_MAX_FIELD   8192
#define HC_ALTSVC_DEFAULT_MA  86400 /* RFC 7838 §3.1: 24 hours */
struct hc_alt {
    char alpn[8]; /* "h1", "h2", "h3" (curl's file knows no other) */
    char host[HC_MAX_HOST + 1];
    uint16_t port;
    int64_t expires; /* Unix seconds */
    bool persist;
};
struct hc_altsvc {
    char host[HC_MAX_HOST + 1];
    uint16_t port;
    char src_alpn[8];
    size_t n;
    struct hc_alt alts[HC_ALTSVC_MAX];
    struct hc_altsvc *next;
};

/* The QUIC session cache (h3_session.c): the latest ticket and token per server. */
#define HC_SESS_MAX     256
#define HC_SESS_MAX_LEN 8192 /* a session or a token longer than this is not kept */
#define HC_SESS_TTL_S   (7 * 86400)
struct hc_sess {
    char host[HC_MAX_HOST + 1];
    uint16_t port;
    int64_t saved; /* Unix seconds */
    uint8_t *sess, *tok;
    size_t sess_len, tok_len;
    struct hc_sess *next; /* newest first */
};

struct vega_http_client {
    vega_http_client_opts o;
    char *user_agent;       /* owned copy; "" = none */
    vega_tls_config *tls;   /* a reference of our own */
    vega_dns_resolver *dns; /* for the DNS timing and the connects; created with the client */
    pthread_mutex_t mu;     /* guards idle, nidle, resolves, the HTTP/3 list and the caches;
                               never held across a suspension */
    struct hc_conn *idle;   /* newest first */
    size_t nidle;
    struct hc_resolve *resolves;
    /* HTTP/3 */
    vega_quic_endpoint *ep;         /* made on the first HTTP/3 request */
    vega_crypto_cert_store *own_ca; /* the system store, when opts.quic_ca is NULL */
    /* opts.tls's pinned keys (vega_tls_config_get_pinned_keys), which pin HTTP/3 too */
    uint8_t quic_pins[VEGA_QUIC_MAX_PINNED_KEYS][32];
    size_t n_quic_pins;
    struct hc_mux_pool h3s;  /* HTTP/3 connections (vega__hc_h3_ops) */
    struct hc_mux_pool h2s;  /* HTTP/2 connections (vega__hc_h2_ops) */
    atomic_uint h2_live;     /* HTTP/2 writer tasks still running */
    vega_tls_config *tls_h1; /* our own config offering http/1.1 only (HTTP/1.x asked) */
    struct hc_altsvc *alts;
    size_t nalts;
    struct hc_sess *sessions;
    size_t nsessions;
};

/* A bump allocator in blocks, for the copied field names and values of one response. */
struct hc_arena_block {
    struct hc_arena_block *next;
    size_t used, cap;
    char data[];
};

struct vega_http_client_response {
    vega_http_client *c;
    struct hc_conn *conn;
    vega_http_client_info info;
    vega_deadline dl; /* the exchange's deadline (NEVER when the request had none) */
    bool is_head;
    bool conn_close_asked; /* the request said Connection: close */
    char method[24];       /* for vega_http_client_redirect's to_get */

    /* parsing */
    vega_http1_parser parser;
    vega_http1_callbacks cb;
    bool in_interim;    /* the head being parsed is a 1xx */
    bool got_100;       /* a 100 (Continue) arrived */
    unsigned interim;   /* 1xx responses seen */
    bool head_done;     /* the final head was parsed */
    bool msg_done;      /* the final response ended */
    bool keep_alive;    /* the final head allows another request on the connection */
    bool unusable;      /* something makes the connection unfit for reuse */
    bool eof;           /* the connection ended */
    bool any_byte;      /* a response byte arrived */
    bool body_unsent;   /* the request body was not (fully) sent */
    bool upgrade_asked; /* the request said "Upgrade: h2c" */
    bool upgraded;      /* ... and a 101 came: the parser stopped after its head */
    bool ws_asked;      /* the request asked for a WebSocket: its 101 is the final head, whose
                           fields are kept (and what follows it is the WebSocket's) */
    int err;            /* sticky error of the body reader, 0 when none */
    vega_http1_framing framing;
    int cb_err; /* a callback's failure (-ENOMEM, VEGA_ERR_PROTO) */

    /* head storage */
    vega_http_fields fields, trailers, no_trailers; /* no_trailers: shown until the end */
    vega_http_field *field_items, *trailer_items;
    struct hc_arena_block *arena;
    char *trace_buf; /* the incoming head rebuilt for the trace hook */
    size_t trace_len, trace_cap;
    vega_http_trace_fn trace;
    void *trace_user;

    /* body */
    vega_decompressor *dec;
    uint64_t delivered; /* decoded body bytes given to the caller */
    uint64_t max_body;
    size_t rpos, rend; /* unparsed bytes in rbuf */
    size_t bpos, blen; /* body bytes in bq not yet delivered */
    uint8_t *direct;   /* during a direct read: the caller's buffer the body is in */
    size_t direct_len; /* body bytes the parser counted there */

    /* HTTP/3 (h3 NULL over HTTP/1.x); the h3_ fields below h3_wake are guarded by the QUIC
     * connection's lock */
    struct hc_h3 *h3;
    vega_notify h3_wake; /* on_event: the stream moved (data, credit, room, reset, the end) */
    vega_http_client_wire_error werr;
    struct vega_http_client_response *h3_next; /* h3->reqs or credit list */
    uint64_t h3_id;
    bool h3_listed;   /* in h3->reqs */
    bool h3_blocked;  /* the head waits for QPACK */
    bool h3_reset;    /* the server reset the response's stream */
    bool h3_stopped;  /* the server asked us to stop sending (STOP_SENDING) */
    bool h3_fin;      /* the stream's end was fed to the core */
    bool h3_sent_fin; /* our side ended */
    bool h3_tunnel;   /* a WebSocket's stream (h3_tunnel.c): writes wait on h2_wwake */
    uint64_t h3_reset_code, h3_stop_code;
    uint64_t h3_stream_err; /* on_stream_error's code, acted on after the read (0: none) */
    uint8_t *h3_dst;        /* where on_data puts body bytes during a feed */
    size_t h3_dst_len, h3_dst_cap;
    uint64_t h3_raw; /* DATA payload bytes received */
    bool h3_has_cl;
    bool h3_err_acted; /* the stream error was answered (RESET_STREAM, STOP_SENDING) */
    /* The connection ended (h3_read.c vega__hc_h3_keep_tails): the bytes its stream held then,
     * not fed yet, are read from here on (the endpoint frees QUIC's buffers at its teardown),
     * with h3_tail_fin when the stream's end had come. Written by the lock holder that saw the
     * end; then fed by r's reader under h3->kept_mu. */
    bool h3_kept, h3_tail_fin;
    uint8_t *h3_tail;
    size_t h3_tail_pos, h3_tail_len, h3_tail_cap;

    /* HTTP/2 (h2 NULL otherwise); the h2_ fields are guarded by h2->mu. h3_wake is the
     * request's notify for HTTP/2 too (head, data, room, the end). */
    struct hc_h2 *h2;
    struct vega_http_client_response *h2_next; /* h2->reqs */
    int32_t h2_id;                             /* 0: no stream */
    bool h2_listed;                            /* in h2->reqs */
    bool h2_end;                               /* the server's side ended (END_STREAM) */
    bool h2_closed;                            /* the stream is closed */
    bool h2_span;    /* a body span is with the core (until on_stream_writable) */
    bool h2_slot;    /* waiting for a stream slot (SETTINGS_MAX_CONCURRENT_STREAMS) */
    bool h2_refused; /* not processed by the server: REFUSED_STREAM or past GOAWAY */
    int h2_err;      /* the stream failed: a code for the reader */
    uint8_t *h2_buf; /* DATA received and not yet read: [h2_off, h2_off + h2_len) */
    size_t h2_off, h2_len, h2_cap;
    /* A tunnel's writer (RFC 8441, RFC 9220: one task reads while another writes) waits on
     * this one, so that a wake meant for the reader is never taken by the writer;
     * vega__hc_h2_wake (and h3_event.c's wake) wakes both. HTTP/3 too, when h3_tunnel. */
    vega_notify h2_wwake;
    bool h2_tx_end; /* a tunnel: our side ended (END_STREAM given to the core) */

    uint8_t rbuf[HC_RBUF];
    uint8_t bq[HC_RBUF];
};

/* pool.c */
int vega__hc_pool_take(vega_http_client *c, const struct hc_key *k, struct hc_conn **out);
void vega__hc_pool_put(vega_http_client *c, struct hc_conn *conn);
void vega__hc_conn_close(struct hc_conn *conn);
/* h1_only: offer ALPN http/1.1 only (our own TLS config; a caller's offers what it says). */
int vega__hc_connect(vega_http_client *c, const struct hc_key *k, const char *host_for_tls,
                     bool h1_only, vega_http_client_info *info, vega_deadline dl,
                     struct hc_conn **out);
/* A --resolve entry for k's host and port into *out (its port k's when it has none): 1, or 0
 * when there is none. */
int vega__hc_resolve_override(vega_http_client *c, const struct hc_key *k, vega_addr *out);

/* response.c */
int vega__hc_response_new(vega_http_client *c, vega_http_client_response **out,
                          const vega_http_client_request *req);
/* Reads until the final head (or, with stop_at_100, a 100) arrived; dl bounds it. */
int vega__hc_read_head(vega_http_client_response *r, bool stop_at_100, vega_deadline dl);
void vega__hc_trace_request(vega_http_client_response *r, const void *head, size_t len);
/* Copies n bytes of s (plus a NUL) into the response's arena; NULL without memory. */
char *vega__hc_arena_copy(vega_http_client_response *r, const char *s, size_t n);
/* The incoming head rebuilt for the trace hook: a line "a<sep>b", then the flush. */
int vega__hc_trace_add(vega_http_client_response *r, const char *a, size_t an, const char *b,
                       size_t bn, const char *sep);
void vega__hc_trace_flush(vega_http_client_response *r);
/* Sets up decoding from the head's content-encoding (decompress was asked). */
int vega__hc_set_decoder(vega_http_client_response *r);
/* Body bytes counted against max_body. */
vega_ssize vega__hc_deliver(vega_http_client_response *r, vega_ssize n);
/* Copies up to len of the bytes queued in r->bq (bpos < blen) into buf and delivers them. */
vega_ssize vega__hc_take_queued(vega_http_client_response *r, uint8_t *buf, size_t len);

/* client.c: what a prepared request carries between the files. */
/* True when a request of an http:// (tls false) origin is forwarded to an HTTP proxy in
 * absolute-form rather than tunnelled (vega_http_client_opts.proxy). */
static inline bool vega__hc_forwarded(const vega_http_client *c, const struct hc_key *k)
{
    const vega_proxy_opts *p = c->o.proxy;
    return p && !k->tls && !k->tunnel && !p->tunnel &&
           (p->kind == VEGA_PROXY_HTTP || p->kind == VEGA_PROXY_HTTPS);
}

struct hc_req {
    const vega_http_client_request *req;
    const char *method;
    int version;
    bool has_body;
    bool chunked;
    bool idempotent;
    bool safe;
    bool h3;         /* go over HTTP/3 (version 30, or an Alt-Svc alternative) */
    bool fallback;   /* and race TCP */
    bool h2;         /* may go over HTTP/2: ALPN h2 offered on https, or h2c prior knowledge */
    bool h2_prior;   /* HTTP/2 without negotiation (h2c on http://) */
    bool h2_upgrade; /* http:// with version 20 and no body: "Upgrade: h2c" (RFC 7540 §3.2) */
    bool ws;         /* a WebSocket opening handshake (vega__hc_send_ws) */
    bool ws_h2;      /* ... over HTTP/2: an extended CONNECT (RFC 8441 §4) whose stream stays
                        open both ways (vega__hc_h2_tunnel_new) */
    bool ws_h3;      /* ... over HTTP/3: the same (RFC 9220), vega__hc_h3_tunnel_new */
    struct hc_key key;
    char host_for_tls[HC_MAX_HOST + 1];
    char alt_host[HC_MAX_HOST + 1]; /* where QUIC goes (the origin's host when no Alt-Svc) */
    uint16_t alt_port;
    const vega_http_url *url;
    char *target; /* the request target (path and query), owned */
    char authority[HC_MAX_HOST + 16];
    uint8_t *head; /* the HTTP/1.x head, owned */
    size_t head_len;
};
/* mux_req.c: the request's header section and body pieces for HTTP/2 and HTTP/3 */
/* Whether f's name is lname (lowercase), in any case. */
bool vega__hc_field_is(const vega_http_field *f, const char *lname);
/* The caller's field named lname (lowercase), or NULL. */
const vega_http_field *vega__hc_user_field(const vega_http_client_request *req, const char *lname);
/* The pseudo-header fields (ptr NULL: left out), borrowing rq's strings. */
struct hc_mux_pseudo {
    vega_http_str method, scheme, authority, path, protocol;
};
/* ws: an extended CONNECT for a WebSocket (RFC 8441 §4, RFC 9220 §3). */
void vega__hc_mux_pseudo(const struct hc_req *rq, bool ws, struct hc_mux_pseudo *p);
/* Room for the lowercased copies of req's field names (vega__hc_mux_fields'), from the client's
 * allocator; NULL without memory. */
char *vega__hc_mux_names_new(vega_http_client *c, const vega_http_client_request *req);
/* content-length's value, written into the caller's storage. */
#define HC_MUX_CL 24
typedef void hc_mux_add_fn(void *u, const char *name, size_t name_len, const char *value,
                           size_t value_len);
/* The regular fields, each given to add in order (3 + req->nfields + 1 at most): user-agent,
 * accept (not for ws) and accept-encoding (decompress) unless the caller gave them, the
 * caller's own with names lowercased into names and the connection-specific ones (and, for ws,
 * Sec-WebSocket-Key) dropped, then content-length when the body's length is known or a POST,
 * PUT or PATCH has none. The strings borrow rq's, names and cl. */
void vega__hc_mux_fields(vega_http_client *c, const struct hc_req *rq, bool ws, char *names,
                         char cl[HC_MUX_CL], hc_mux_add_fn *add, void *u);
/* The body's next piece (body_fn's, or the file's at *off, which moves on) into buf[0..want):
 * the bytes (up to want), 0 at body_fn's end of a body of unknown length (chunked), or
 * VEGA_ERR_CALLBACK (body_fn gave more than asked, or ended before body_length), -ENODATA (the
 * file ended before body_length), -errno or body_fn's code. *used: body_fn was called. */
vega_ssize vega__hc_body_piece(const struct hc_req *rq, uint8_t *buf, size_t want, uint64_t *off,
                               bool *used);

/* One HTTP/1.x attempt on a pooled (unless fresh) or new connection. */
int vega__hc_attempt_h1(vega_http_client *c, const struct hc_req *rq, vega_tstamp start,
                        vega_deadline dl, bool fresh, bool *reused, bool *used, bool *got_bytes,
                        vega_http_client_response **out);
/* The same on a connection already opened (the winner of a race). */
int vega__hc_exchange_h1(vega_http_client *c, const struct hc_req *rq, vega_http_client_response *r,
                         struct hc_conn *conn, bool *used, bool *got_bytes);
bool vega__hc_retryable(int rc);
/* ws_connect.c: req (version 11, WebSocket fields given) on a fresh HTTP/1.1 connection,
 * tunnelled through an HTTP proxy; a 101 ends the exchange with r->upgraded and the bytes
 * after its head in r->rbuf[rpos..rend). -ENOTSUP when a caller's TLS config let ALPN pick h2. */
int vega__hc_send_ws(vega_http_client *c, const vega_http_client_request *req,
                     vega_http_client_response **out);

/* h3_conn.c: connections */
extern const struct hc_mux_ops vega__hc_h3_ops;
static inline struct hc_h3 *vega__hc_h3_of(struct hc_mux *m)
{
    return m ? VEGA__CONTAINER_OF(m, struct hc_h3, mux) : NULL;
}
/* A usable pooled connection to rq's origin (or one being made, waited for): 1 with *out
 * retained, 0 when none. */
int vega__hc_h3_pool_take(vega_http_client *c, const struct hc_req *rq, vega_deadline dl,
                          struct hc_h3 **out);
/* Connects to rq's QUIC destination and sets HTTP/3 up; *out retained (and pooled, counted in
 * active). Unless fresh, a connection to the origin that another request is making or made in
 * the meantime is joined instead. On failure *werr (may be NULL) receives why the connection
 * closed, when it got that far. */
int vega__hc_h3_connect(vega_http_client *c, const struct hc_req *rq, bool fresh, vega_deadline dl,
                        struct hc_h3 **out, vega_http_client_wire_error *werr);
void vega__hc_h3_release(struct hc_h3 *h);
/* Closes and forgets every HTTP/3 connection and the endpoint (vega_http_client_free). */
void vega__hc_h3_shutdown(vega_http_client *c);
/* A connection error found by us: closes the QUIC connection with code (lock held). */
void vega__hc_h3_conn_error(struct hc_h3 *h, uint64_t code, const char *reason);
/* Marks h dead with err (lock held) and wakes every request on it. */
void vega__hc_h3_kill(struct hc_h3 *h, int err);
/* The core failed a call with rc: a connection error (VEGA_ERR_PROTO, its code from the core)
 * or -ENOMEM / VEGA_ERR_CALLBACK (H3_INTERNAL_ERROR); closes the connection (lock held). */
void vega__hc_h3_core_failed(struct hc_h3 *h, vega_ssize rc);

/* h3_event.c: the QUIC events and the HTTP/3 core's callbacks (lock held) */
extern const vega_h3_callbacks vega__hc_h3_callbacks;
void vega__hc_h3_on_event(void *user, vega_quic_ep_conn *qe, vega_quic_conn *qc,
                          const vega_quic_event *ev);
void vega__hc_h3_on_closed(void *user, vega_quic_ep_conn *qe);
/* Sends what the core has for our unidirectional streams. */
void vega__hc_h3_flush_uni(struct hc_h3 *h);
/* Feeds a peer unidirectional stream's bytes to the core. */
void vega__hc_h3_drain_uni(struct hc_h3 *h, uint64_t id);
struct vega_http_client_response *vega__hc_h3_find(struct hc_h3 *h, uint64_t id);

/* h3_req.c: one request over HTTP/3 */
/* h: retained, with its count in h->active (both go with the response, or on failure). */
int vega__hc_attempt_h3(vega_http_client *c, const struct hc_req *rq, struct hc_h3 *h, bool reused,
                        vega_tstamp start, vega_deadline dl, bool *used, bool *retry,
                        vega_http_client_wire_error *werr, vega_http_client_response **out);
/* h3_read.c: the response side */
int vega__hc_h3_read_head(vega_http_client_response *r, vega_deadline dl);
vega_ssize vega__hc_h3_read(vega_http_client_response *r, uint8_t *buf, size_t len,
                            vega_deadline dl);
/* The next undecoded body bytes into bq (as next_body): 1, 0 at the end, or a code. */
int vega__hc_h3_next_body(vega_http_client_response *r, vega_deadline dl);
/* Detaches r from its connection (resetting an unfinished stream) and drops the reference. */
void vega__hc_h3_response_done(vega_http_client_response *r);
/* The connection ended (its CLOSED event, lock held, h->qc set): each response's unread stream
 * bytes are copied out of QUIC's buffers (which the endpoint frees at its teardown), so that what
 * arrived is delivered (a response whose end arrived completes). Bounded by the receive windows
 * the client advertised (max_data_max, 16 MiB by default, for all streams together). */
void vega__hc_h3_keep_tails(struct hc_h3 *h);

/* h3_race.c: HTTP/3 or, failing it or too slow, HTTP/1.1 over TCP */
int vega__hc_send_h3(vega_http_client *c, const struct hc_req *rq, vega_tstamp start,
                     vega_deadline dl, vega_http_client_response **out);

/* h2_conn.c: connections; h2_req.c: requests; h2_read.c: responses */
extern const struct hc_mux_ops vega__hc_h2_ops;
static inline struct hc_h2 *vega__hc_h2_of(struct hc_mux *m)
{
    return m ? VEGA__CONTAINER_OF(m, struct hc_h2, mux) : NULL;
}
/* A request over HTTP/2 (or over HTTP/1.1 when ALPN says so): pooled or new connection. */
int vega__hc_send_h2(vega_http_client *c, const struct hc_req *rq, vega_tstamp start,
                     vega_deadline dl, vega_http_client_response **out);
int vega__hc_h2_pool_take(vega_http_client *c, const struct hc_key *k, vega_deadline dl,
                          struct hc_h2 **out);
/* Connects to rq's origin: 1 with *h (HTTP/2, retained, counted in active), 0 with *h1 (ALPN
 * chose HTTP/1.1), or a code. Unless fresh, a connection being made is joined instead. */
int vega__hc_h2_connect(vega_http_client *c, const struct hc_req *rq, bool fresh,
                        vega_http_client_info *info, vega_deadline dl, struct hc_h2 **h,
                        struct hc_conn **h1);
void vega__hc_h2_release(struct hc_h2 *h);
/* A connection whose ALPN said h2 (from a race's TCP side, a caller's config) becomes a pooled
 * HTTP/2 one: *out retained, counted in active. conn: taken. */
int vega__hc_h2_from_conn(vega_http_client *c, struct hc_conn *conn,
                          const vega_http_client_info *info, struct hc_h2 **out);
/* h2c Upgrade: conn (taken) answered 101 to r's request; f: the request's HTTP/2 header section
 * (for the core's stream 1); rest: the bytes read after the 101. r then reads stream 1; the
 * connection is pooled (*out: r's reference, counted in active). */
int vega__hc_h2_adopt(vega_http_client *c, const struct hc_req *rq, struct hc_conn *conn,
                      const vega_hpack_field *f, size_t nf, vega_http_client_response *r,
                      const uint8_t *rest, size_t rest_len, struct hc_h2 **out);
void vega__hc_h2_shutdown(vega_http_client *c);
/* Marks h dead with err (mu held) and wakes every request on it. */
void vega__hc_h2_kill(struct hc_h2 *h, int err);
extern const vega_h2_callbacks vega__hc_h2_callbacks;
int vega__hc_attempt_h2(vega_http_client *c, const struct hc_req *rq, struct hc_h2 *h, bool reused,
                        vega_tstamp start, vega_deadline dl, bool *used, bool *retry,
                        vega_http_client_wire_error *werr, vega_http_client_response **out);
vega_ssize vega__hc_h2_read(vega_http_client_response *r, uint8_t *buf, size_t len,
                            vega_deadline dl);
int vega__hc_h2_next_body(vega_http_client_response *r, vega_deadline dl);
/* Waits (mu not held) until the head came or the stream failed. */
int vega__hc_h2_read_head(vega_http_client_response *r, vega_deadline dl);
void vega__hc_h2_response_done(vega_http_client_response *r);
/* Wakes r's task and, for a tunnel, its writer (h2->mu held or not). */
static inline void vega__hc_h2_wake(vega_http_client_response *r)
{
    vega_notify_one(&r->h3_wake);
    vega_notify_one(&r->h2_wwake);
}
/* h2_tunnel.c: r (a 2xx answer to an extended CONNECT, taken) as a byte stream both ways
 * (RFC 8441 §5): reads take the stream's DATA (END_STREAM: the end; a reset: -ECONNRESET),
 * writes give DATA under flow control, SHUT_WR sends END_STREAM, close ends our side and
 * waits (bounded by its deadline) for the server's, then frees r (CANCEL if still open). */
int vega__hc_h2_tunnel_new(vega_http_client_response *r, vega_stream **out);
/* Makes *out a stream over r's exchange with ops (h2_tunnel.c); r is the stream's user, freed
 * by its close. Returns 0 or vega_stream_new's code. */
int vega__hc_tunnel_stream(vega_http_client_response *r, const vega_stream_ops *ops,
                           vega_stream **out);
/* h3_tunnel.c: the same over an HTTP/3 request stream (RFC 9220): r (2xx to an extended
 * CONNECT) taken on success. */
int vega__hc_h3_tunnel_new(vega_http_client_response *r, vega_stream **out);
/* h3_req.c: p[0..n) as one DATA frame on r's stream (fin: then our FIN; n 0 and fin: the FIN
 * alone). Returns 0, -ECONNRESET (the server stopped or reset the stream) or a code; a frame
 * that went out in part (a deadline) resets the stream (H3_REQUEST_CANCELLED). */
int vega__hc_h3_send_data(vega_http_client_response *r, const void *p, size_t n, bool fin,
                          vega_deadline dl);

/* h3_altsvc.c */
/* Learns the Alt-Svc fields of a response to an https origin (the alt_svc option). */
void vega__hc_altsvc_learn(vega_http_client *c, const struct hc_key *k, const char *src_alpn,
                           const vega_http_fields *fields);
void vega__hc_altsvc_free(vega_http_client *c);

/* h3_session.c */
/* Copies the cached session and token for host:port into *sess / *tok (owned, vega_mem of
 * the client; NULL when none). */
void vega__hc_sess_get(vega_http_client *c, const char *host, uint16_t port, uint8_t **sess,
                       size_t *sess_len, uint8_t **tok, size_t *tok_len);
void vega__hc_sess_put(vega_http_client *c, const char *host, uint16_t port, bool is_token,
                       const uint8_t *p, size_t len);
void vega__hc_sess_free(vega_http_client *c);

/* Deadlines: the earlier of two. */
static inline vega_deadline hc_dl_min(vega_deadline a, vega_deadline b)
{
    return a < b ? a : b;
}

#endif
