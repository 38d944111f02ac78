/* SPDX-License-Identifier: MIT */
/* Internal state of the HTTP server: the server and its registry of connections, a connection
 * (small while parked), its active block (buffers and parser, only while it has a task), and
 * the exchange handed to the handler. */
#ifndef VEGA_HTTP_SERVER_INT_H
#define VEGA_HTTP_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <vega/http_server.h>
#include <vega/quic_ep.h>
#include <vega/rt.h>
#include <vega/sync.h>

#include "base.h"

/* Output buffer of a connection: response heads, small bodies, coalesced pipelined responses. */
#define SRV_OUT_CAP 16384
/* First size of the read buffer; it grows (up to the head limits) only for a head that does
 * not fit. */
#define SRV_IN_CAP          16384
#define SRV_MAX_BLANK_BYTES 16 /* CR and LF bytes ignored before a request line: 8 CRLFs */
/* Room kept after a complete head for reading its body through the buffer. */
#define SRV_IN_RESERVE 4096
/* An unread request body is drained after the response up to this many bytes, else the
 * connection closes. */
#define SRV_DRAIN_MAX (256u * 1024u)
/* Lingering close after an error response: how long and how much we read before closing, so
 * that the client's unread request does not turn our response into a reset. */
#define SRV_LINGER_NS  (500ull * VEGA_NS_PER_MS)
#define SRV_LINGER_MAX (64u * 1024u)
/* Listeners per server. */
#define SRV_MAX_LISTENERS 64
/* The cache of active blocks (pool.c): one slot per worker (by worker index, modulo), each
 * keeping at most SRV_POOL_MAX blocks; what a slot kept unused for a whole window of
 * SRV_POOL_DECAY_NS is given back at the window's end. */
#define SRV_POOL_SLOTS    16
#define SRV_POOL_MAX      8
#define SRV_POOL_DECAY_NS (2ull * VEGA_NS_PER_S)
/* Plain-TCP stream wrappers each slot keeps (two small allocations each; no decay). */
#define SRV_POOL_STREAMS 16

enum srv_conn_state {
    SRV_ACTIVE = 0, /* a task runs the connection; task is set */
    SRV_PARKED = 1, /* vega_sock_park holds it: no task, no active block */
};

struct srv_listener {
    vega_http_server *srv;
    vega_sock *sock;
    vega_task *task;
};

/* Connections are registered in shards, each under its own lock, so that parking and waking
 * (a lock each) do not contend across workers. */
#define SRV_SHARDS 32

struct srv_shard {
    pthread_mutex_t lock; /* guards conns, and each of their state and task */
    struct srv_conn *conns;
} __attribute__((aligned(64)));

/* Per-request counters and the latency histogram (metrics.c), in stripes picked by the
 * connection's id: workers finishing requests at once mostly touch different cache lines, with
 * no lock. Each cell is a relaxed atomic; a scrape sums the stripes. */
#define SRV_METRIC_STRIPES 16
enum {
    SRV_PROTO_H1,
    SRV_PROTO_H2,
    SRV_PROTO_H3,
    SRV_NPROTO
};
#define SRV_NCLASS      6  /* status classes: none (no response sent), 1xx .. 5xx */
#define SRV_LAT_BOUNDS  14 /* the histogram's finite bucket bounds; one more bucket is +Inf */
#define SRV_LAT_BUCKETS (SRV_LAT_BOUNDS + 1)

struct srv_stripe {
    atomic_uint_fast64_t requests[SRV_NPROTO][SRV_NCLASS];
    atomic_uint_fast64_t tx_body[SRV_NPROTO]; /* response body bytes */
    atomic_uint_fast64_t rx_body[SRV_NPROTO]; /* request body bytes the handlers read */
    atomic_uint_fast64_t lat[SRV_NPROTO][SRV_LAT_BUCKETS]; /* per bucket, not cumulative */
    atomic_uint_fast64_t lat_sum_ns[SRV_NPROTO];
} __attribute__((aligned(64)));

/* One worker's cache of active blocks. The lock is taken by that worker (and by the decay,
 * once a window): uncontended, it stays in the worker's cache. */
struct srv_pool {
    pthread_mutex_t lock;
    struct srv_active *free; /* newest first */
    unsigned n;              /* blocks held */
    unsigned low;            /* fewest held since the window began */
    unsigned nstreams;
    vega_stream *streams[SRV_POOL_STREAMS]; /* borrowing sock streams, pointed at no socket */
} __attribute__((aligned(64)));

struct vega_http_server {
    vega_http_server_opts o;
    void *alloc_base; /* what o.mem gave: the struct is aligned to 64 bytes inside it */
    char *server_header;
    size_t server_header_len;
    size_t max_head; /* bytes a complete head may take: start line + field section + CRLF */

    pthread_mutex_t lock; /* guards the listener table */
    struct srv_shard shards[SRV_SHARDS];
    struct srv_listener listeners[SRV_MAX_LISTENERS];
    size_t nlisteners;

    atomic_bool stopping;
    atomic_bool running;
    _Atomic vega_deadline grace;
    vega_notify wake; /* run waits on it: shutdown asked, or the last connection closed */

    struct h3s *h3; /* HTTP/3 (vega_http_server_listen_h3), or NULL */
    /* HTTP/3's endpoint for the metrics, under lock: NULL before HTTP/3 starts and once its
     * endpoint is freed, when quic_last holds its final counters (quic_on says they exist) */
    vega_quic_endpoint *quic_ep;
    vega_quic_endpoint_stats quic_last;
    bool quic_on;
    /* "Alt-Svc: h3=\":PORT\"; ma=N\r\n" for HTTP/1.1 responses over TLS, once HTTP/3 is served
     * (alt_svc_len is stored last, with release order) */
    char alt_svc[64];
    _Atomic size_t alt_svc_len;

    vega_http_server_h2_opts h2o; /* HTTP/2 (vega_http_server_set_h2) */
    bool alpn_own;                /* the server set the TLS config's ALPN list */

    atomic_uint_fast64_t next_id;
    atomic_uint_fast64_t conns_accepted, conns_refused, conns_open, conns_parked;
    atomic_uint_fast64_t requests, bad_requests, timeouts;
    atomic_uint_fast64_t tls_ok, tls_failed; /* TLS handshakes on TCP (not QUIC's) */
    struct srv_stripe stripes[SRV_METRIC_STRIPES];
    size_t active_size;             /* bytes of one active block */
    atomic_uint_fast64_t pool_held; /* blocks the pools hold, all slots */
    struct srv_pool pools[SRV_POOL_SLOTS];
};

struct srv_active;
struct h3s;
struct h2s_conn;

/* An address kept with every connection, parked ones included, so in 24 bytes: an IPv4 or IPv6
 * address and port inline (vega_addr's sockaddr_storage would add 200 bytes to each idle
 * connection, a sockaddr_in6 and its length 8 more), anything else (a Unix path, an IPv6 flow
 * label) in a vega_addr on the heap, its pointer stored in `a` (conn.c). 4-byte aligned. */
struct srv_addr {
    uint8_t kind;   /* SRV_ADDR_*: none, AF_INET or AF_INET6 inline, or on the heap */
    uint16_t port;  /* network order, as in the sockaddr */
    uint32_t scope; /* IPv6 scope id */
    uint8_t a[16];  /* the address (4 or 16 bytes), or the heap vega_addr's pointer */
};

/* A connection: what every connection keeps, parked ones included, so it is kept small
 * (sizeof: 136 bytes on LP64; the idle-memory benchmark counts it). Its shard is found from
 * its id. */
struct srv_conn {
    vega_http_server *srv;
    struct srv_conn *next, *prev; /* the shard's conns, under its lock */
    vega_task *task;              /* while ACTIVE and run by a task, under the shard's lock */
    vega_sock *sock;              /* NULL when served over a caller's stream */
    vega_stream *stream;          /* over sock (borrowed) or the caller's; TLS when tls */
    struct srv_active *a;
    struct h2s_conn *h2; /* HTTP/2 (h2_conn.c): set once the connection speaks it */
    uint64_t id;
    vega_deadline idle_dl; /* the next head's deadline: idle (or first request) before
                              its first byte, header_timeout from it; 0: not set */
    unsigned nreq;
    uint8_t state;       /* srv_conn_state, under the shard's lock */
    bool tls;            /* set once, before the connection is registered */
    uint8_t blank_lines; /* CR and LF bytes skipped before the next request line */
    /* written by the connection's task only (one byte, apart from state and tls) */
    bool tls_counted : 1;  /* the handshake's outcome went into the metrics */
    bool head_started : 1; /* a byte of the next head came (blank lines count) */
    bool drained : 1;      /* the last read left nothing in the socket (it came back
                              short or empty): parking now cannot miss a wake */
    struct srv_addr peer, local;
};

static inline struct srv_shard *vega__srv_shard(const struct srv_conn *c)
{
    return &c->srv->shards[c->id % SRV_SHARDS];
}

/* Stores a into sa (replacing what it held). Returns 0 or -ENOMEM. */
int vega__srv_addr_set(const vega_mem *m, struct srv_addr *sa, const vega_addr *a);
/* Fills out from sa (an empty address when none). */
void vega__srv_addr_get(const struct srv_addr *sa, vega_addr *out);
void vega__srv_addr_fini(const vega_mem *m, struct srv_addr *sa);

/* Request body reading state. */
struct srv_body {
    vega_http1_framing framing;
    uint64_t remaining; /* LENGTH: bytes still to read */
    bool done;          /* every body byte was read (or there is none) */
    bool failed;        /* malformed or broken: the connection closes */
    bool chunked_init;  /* the parser was set up for the chunked body */
    /* on_body target while decoding chunks */
    uint8_t *dst;
    size_t dst_len;
};

/* What an exchange of a version other than HTTP/1.1 does for the public exchange calls. */
struct srv_xops {
    vega_ssize (*read)(struct vega_http_exchange *x, void *buf, size_t len, vega_deadline dl);
    int (*start)(struct vega_http_exchange *x, int status, const vega_http_field *fields, size_t n,
                 uint64_t length);
    vega_ssize (*write)(struct vega_http_exchange *x, const void *buf, size_t len,
                        vega_deadline dl);
    vega_ssize (*sendfile)(struct vega_http_exchange *x, int fd, uint64_t offset, size_t len,
                           vega_deadline dl);
    int (*finish)(struct vega_http_exchange *x, const vega_http_field *trailers, size_t n,
                  vega_deadline dl);
};

struct vega_http_exchange {
    const struct srv_xops *ops; /* NULL: HTTP/1.1 on c */
    void *impl;                 /* the version's own state (HTTP/3: the request) */
    struct srv_conn *c;
    vega_http_request req;
    vega_http_fields fields;
    struct srv_body body;
    bool keep_alive;    /* the request allows another one after it */
    bool want_close;    /* set_close, or the server decided */
    bool continue_sent; /* 100 Continue went out */
    bool started;       /* a final response head is built */
    bool finished;
    bool no_body;         /* HEAD, 204, 304: body bytes are counted and dropped */
    bool chunked;         /* response framing */
    bool close_delimited; /* HTTP/1.0 with an unknown length */
    bool broken;          /* a write failed: the connection closes */
    bool te_unknown;      /* Transfer-Encoding named a coding other than chunked */
    bool head_stop;       /* the head parser reached the end of the head */
    int status;
    uint64_t length;     /* announced response length or VEGA_HTTP_LENGTH_UNKNOWN */
    uint64_t written;    /* response body bytes accepted from the handler */
    uint64_t body_bytes; /* for the log */
    uint64_t rx_bytes;   /* request body bytes the handler read (metrics) */
    int error;
};

struct srv_active {
    struct srv_active *pool_next; /* in a pool's free list */
    vega_http1_parser parser;
    struct vega_http_exchange x;
    uint8_t *in;     /* inline after field_store, or in_own */
    uint8_t *in_own; /* a larger read buffer, or NULL */
    size_t in_cap;
    size_t in_start; /* start of the current request's head */
    size_t in_pos;   /* next unconsumed byte */
    size_t in_end;   /* end of the bytes read */
    size_t scan;     /* where the search for the head's end resumes */
    size_t head_end; /* end of the current request's head */
    size_t out_len;
    unsigned out_count;    /* responses coalesced in out */
    vega_addr peer, local; /* the connection's addresses in full, for vega_http_request */
    uint8_t out[SRV_OUT_CAP];
    vega_http_field field_store[]; /* max_fields */
};

/* exchange.c: v in decimal into out (20 bytes at most, no NUL); returns the length. */
size_t vega__srv_fmt_u64(char *out, uint64_t v);
/* Whether n names a field whose framing is the server's, not a handler's: Content-Length,
 * Transfer-Encoding, Connection (any case). */
bool vega__srv_is_framing(const vega_http_str *n);

/* metrics.c: counts the TLS handshake of c as done or failed once a read tells (n: what the
 * read returned). */
void vega__srv_count_tls(struct srv_conn *c, vega_ssize n);

/* Reads from the connection, noting whether the socket was left empty. A park's wake is an
 * edge: bytes that were already there when it armed would never wake it. */
static inline vega_ssize vega__srv_read(struct srv_conn *c, void *buf, size_t len, vega_deadline dl)
{
    vega_ssize n = vega_stream_read(c->stream, buf, len, dl);
    c->drained = (n > 0 && (size_t)n < len) || n == -ETIMEDOUT;
    if (c->tls && !c->tls_counted)
        vega__srv_count_tls(c, n);
    return n;
}

/* conn.c */
int vega__srv_conn_run(struct srv_conn *c, bool parked_wake);
void vega__srv_conn_free(struct srv_conn *c);
/* Registers c (counts toward max_conns). Returns 0 or VEGA_ERR_FULL. */
int vega__srv_register(vega_http_server *srv, struct srv_conn *c);
void vega__srv_unregister(struct srv_conn *c);
/* Parks c (its active block already freed) until it is readable or idle_dl passes. Returns
 * true when parked (c belongs to the park callback now); false when it must close instead
 * (stopping, or the park failed). */
bool vega__srv_park(struct srv_conn *c, vega_deadline idle_dl);

/* pool.c: the active blocks (SRV_IN_CAP read buffer inline; never a grown one) */
void vega__srv_pool_init(vega_http_server *srv);
void vega__srv_pool_fini(vega_http_server *srv);
/* A block from the calling worker's slot, or a new one. NULL when out of memory. */
struct srv_active *vega__srv_active_get(vega_http_server *srv);
/* Gives a back (NULL: nothing): a grown read buffer is freed, the block kept in the calling
 * worker's slot when it has room, else freed. */
void vega__srv_active_put(vega_http_server *srv, struct srv_active *a);
/* A borrowing stream over sock, from the calling worker's slot (rebound) or new. Returns 0 or
 * -ENOMEM. */
int vega__srv_stream_get(vega_http_server *srv, vega_sock *sock, vega_stream **out);
/* Gives back a stream that vega__srv_stream_get made (kept when the slot has room). */
void vega__srv_stream_put(vega_http_server *srv, vega_stream *s);
/* Ends a window: every slot gives back the blocks it kept unused through all of it. Returns
 * the blocks still held. */
size_t vega__srv_pool_decay(vega_http_server *srv);
/* Blocks the pools hold now. */
size_t vega__srv_pool_held(const vega_http_server *srv);

/* exchange.c */
int vega__srv_flush(struct srv_conn *c, vega_deadline dl);
int vega__srv_write_error(struct srv_conn *c, int status);
vega_ssize vega__srv_body_read(struct vega_http_exchange *x, void *buf, size_t len,
                               vega_deadline dl);
bool vega__srv_head_complete(const uint8_t *p, size_t len);

/* metrics.c: counts the finished exchange x (status class, bytes, latency) and hands it to
 * on_log. Called once per exchange that reached the handler, after its response ended. */
void vega__srv_exchange_done(vega_http_server *srv, struct vega_http_exchange *x);

/* date.c: "Date: <IMF-fixdate>\r\n" for this second, formatted once per second per thread. */
const char *vega__srv_date_line(void);
#define SRV_DATE_LINE_LEN (6 + VEGA_HTTP_DATE_LEN + 2)

#endif
