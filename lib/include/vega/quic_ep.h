/* SPDX-License-Identifier: MIT */
/* QUIC endpoint: runs QUIC connections (the sans-I/O core of <vega/quic.h>) over UDP on the
 * runtime. Servers and clients: UDP sockets (one per worker with SO_REUSEPORT on a server),
 * datagrams routed to their connection by connection ID, GRO and GSO batches, ECN and packet
 * info, each connection's timers (loss detection, pacing, idle), Version Negotiation, Retry,
 * address validation tokens, stateless resets, and bounds on connections and handshakes
 * (RFC 9000 §5.2, §6, §8, §10.3, §21). A connection with nothing to do holds no task. */
#ifndef VEGA_QUIC_EP_H
#define VEGA_QUIC_EP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/io.h>
#include <vega/mem.h>
#include <vega/quic.h>
#include <vega/stream.h>
#include <vega/time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Endpoint codes (-11200 range, err.h). */
enum {
    VEGA_ERR_QUIC_EP_CLOSED = -11201,    /* the connection closed: the peer's or our close, an
                                            idle timeout, a stateless reset; vega_quic_ep_conn_
                                            get_close says how */
    VEGA_ERR_QUIC_EP_HANDSHAKE = -11202, /* the handshake failed (a TLS alert, a version or
                                            transport parameter problem): get_close says which */
    VEGA_ERR_QUIC_EP_REFUSED = -11203,   /* the server refused the connection
                                            (CONNECTION_REFUSED, too many connections) */
    VEGA_ERR_QUIC_EP_RESET = -11204,     /* the peer reset the stream (RESET_STREAM) or asked us to
                                            stop sending (STOP_SENDING): the stream's
                                            vega_quic_ep_stream_error says with which code */
};

/*
 * An endpoint: its UDP sockets, its connections and the tasks that serve them. Shared: any task
 * of the runtime may use it. Created and freed outside of its connections' use.
 */
typedef struct vega_quic_endpoint vega_quic_endpoint;

/*
 * One connection of an endpoint. The endpoint keeps it while it is open; a handle (from accept,
 * connect or the on_conn callback) keeps its memory until vega_quic_ep_conn_release. Shared:
 * any task may use it; the core connection behind it is used under its lock.
 */
typedef struct vega_quic_ep_conn vega_quic_ep_conn;

/*
 * Callbacks of an endpoint's connections. Each runs with the connection locked (see
 * vega_quic_ep_conn_lock): it may use the core connection for stream calls
 * (vega_quic_stream_read/peek/consume/write/open/reset/stop, vega_quic_datagram_send,
 * vega_quic_conn_close, get_info) and vega_quic_ep_conn_migrate, never vega_quic_conn_read, _write,
 * _handle_expiry or _free, and never suspends (wake tasks instead). Any may be NULL.
 */
typedef struct vega_quic_ep_callbacks {
    /* Server: a new connection, once its handshake is done, or earlier when the client's 0-RTT
     * data opens a stream first (qc: its core, locked, as in on_event). ep_user: the endpoint's
     * user. Return 0 to take it (set its user
     * pointer with vega_quic_ep_conn_set_user; the endpoint's reference is the one the callback
     * may keep: retain it to hold it past on_closed), nonzero to refuse it (it is closed with
     * CONNECTION_REFUSED). Without on_conn, connections queue for vega_quic_endpoint_accept. */
    int (*on_conn)(void *ep_user, vega_quic_ep_conn *c, vega_quic_conn *qc);
    /* An event of the core (vega_quic_conn_next_event) for the connection's user. Events of
     * streams the endpoint runs as vega_streams (vega_quic_ep_stream_*) are not passed. */
    void (*on_event)(void *conn_user, vega_quic_ep_conn *c, vega_quic_conn *qc,
                     const vega_quic_event *ev);
    /* The connection ended (closed, drained, timed out, reset, or the endpoint shut down): the
     * last callback it makes. The CLOSED event came before it through on_event. */
    void (*on_closed)(void *conn_user, vega_quic_ep_conn *c);
} vega_quic_ep_callbacks;

/* When a server answers a client's first Initial with a Retry (RFC 9000 §8.1.2). */
typedef enum vega_quic_retry_mode {
    VEGA_QUIC_RETRY_AUTO = 0, /* when more than retry_threshold handshakes are in progress */
    VEGA_QUIC_RETRY_ALWAYS,   /* every Initial without a valid token */
    VEGA_QUIC_RETRY_NEVER,
} vega_quic_retry_mode;

/* Endpoint settings: plain data. vega_quic_endpoint_opts_init sets the defaults. */
typedef struct vega_quic_endpoint_opts {
    /* The connections' settings (a template, copied; its pointers are borrowed for the
     * endpoint's life): TLS (certificate, ALPN, tickets, 0-RTT), limits, congestion control.
     * Server: quic.tls.chain and quic.tls.key are required. quic.keylog, when set, logs the
     * secrets of every connection (it runs with the connection locked, from any of the
     * endpoint's tasks and threads at once: make it thread-safe). */
    vega_quic_opts quic;
    vega_quic_ep_callbacks cb;
    void *user;            /* the endpoint's user, passed to on_conn (retained) */
    unsigned sockets;      /* server: UDP sockets sharing the port (SO_REUSEPORT); 0 = one per
                              worker of the runtime */
    size_t max_conns;      /* open connections at most; 0 = 10000. Beyond, new ones are refused
                              (CONNECTION_REFUSED in the server's Initial) */
    size_t max_handshakes; /* connections still in their handshake at most; 0 = 1000.
                              Beyond, Initials without a valid token are dropped */
    vega_quic_retry_mode retry;
    size_t retry_threshold;    /* AUTO: handshakes in progress above which Retry is sent; 0 = 100 */
    uint32_t token_lifetime_s; /* address validation tokens handed out with NEW_TOKEN (RFC 9000
                                  §8.1.3): how long a client may use one; 0 = 1 day */
    bool no_new_tokens;        /* server: do not hand out NEW_TOKEN tokens */
    /* 32 secret bytes the endpoint's Retry and NEW_TOKEN tokens and stateless reset tokens are
     * derived from, so they stay valid across restarts and among the processes of one server;
     * NULL = random at creation. Borrowed (copied). */
    const uint8_t *static_key;
    size_t max_resets_per_s; /* answers without a connection (stateless resets and Version
                                Negotiation) sent per second at most, together; 0 = 1000 */
    const vega_mem *mem;     /* the endpoint's and its connections' memory (retained; NULL =
                                libc; <vega/mem.h>); quic.mem, when set, wins for the cores */
    /* ---- layout version 3 ---- */
    /* qlog (debugging): a directory (retained) where each connection writes its trace,
     * <ODCID in hex>_<client|server>.sqlog, qlog JSON-SEQ (<vega/quic_qlog.h>), as ngtcp2's
     * examples and curl (QLOGDIR) name theirs; the file is created when the connection starts
     * (mode 0600; an existing one is replaced) and written as it goes. NULL = none (then
     * quic.qlog, when set, gets the events). Files are written with plain write(2) on the
     * connection's task: for debugging, not for production loads. */
    const char *qlog_dir;
    uint64_t qlog_max_bytes; /* a trace stops at this size, its last record saying so (a
                                "loglevel:warning"); 0 = 64 MiB */
} vega_quic_endpoint_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). Version 2: the quic
 * template grew (vega_quic_opts layout 2, the key log hook), which moved every field after it;
 * version 3: it grew again (the qlog hook) and qlog_dir was appended; version 4: it grew again
 * (vega_quic_opts layout 4, the pinned keys); version 5: it grew again (vega_quic_opts layout 5,
 * the connection ID prefix). A program built with an older version still works (its layout is
 * converted; no key log, qlog, pins or prefix). */
#define VEGA_QUIC_ENDPOINT_OPTS_VERSION 5

/* Fills o with the defaults (vega_quic_opts_init for o->quic). Context: any. Since 0.1. */
VEGA_API void vega_quic_endpoint_opts_init_versioned(vega_quic_endpoint_opts *o, int opts_version);
#define vega_quic_endpoint_opts_init(...)                                                          \
    vega_quic_endpoint_opts_init_versioned(__VA_ARGS__, VEGA_QUIC_ENDPOINT_OPTS_VERSION)

/*
 * Creates an endpoint. opts: borrowed (copied; the pointers inside as its fields say).
 * Returns 0; -EINVAL (a bad setting, or options of a layout version this library does not
 * know); -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO (no randomness for the keys). Context: any thread.
 * Since 0.1.
 */
VEGA_API int vega_quic_endpoint_new_versioned(vega_quic_endpoint **out,
                                              const vega_quic_endpoint_opts *opts,
                                              int opts_version);
#define vega_quic_endpoint_new(...)                                                                \
    vega_quic_endpoint_new_versioned(__VA_ARGS__, VEGA_QUIC_ENDPOINT_OPTS_VERSION)

/*
 * Server: opens the endpoint's UDP sockets on addr (opts.sockets of them, sharing the port with
 * SO_REUSEPORT; flags as vega_udp_bind, e.g. VEGA_LISTEN_V6ONLY) and starts serving them: one
 * receive task and one send task per socket. bound (may be NULL) receives the address bound
 * (port 0 picks a free port, then shared by every socket). May be called once.
 * Returns 0; the codes of vega_udp_bind (-EADDRINUSE, ...); -EBUSY (already listening or
 * connecting); -EINVAL (a bad argument, no certificate); -ENOMEM; VEGA_ERR_NOTASK.
 * Context: inside a task. Since 0.1.
 */
VEGA_API int vega_quic_endpoint_listen(vega_quic_endpoint *ep, const vega_addr *addr,
                                       unsigned flags, vega_addr *bound);

/* Sockets vega_quic_endpoint_listen_fds serves at most. */
#define VEGA_QUIC_EP_MAX_FDS 1024

/*
 * Server: as vega_quic_endpoint_listen, on n UDP sockets bound elsewhere (fds: borrowed; the
 * endpoint serves duplicates of them, made close-on-exec, so the caller keeps and closes its
 * own). Each must be a bound datagram socket; one endpoint of several processes that share a
 * SO_REUSEPORT group uses the socket(s) a steering program sends its connections' packets to
 * (with vega_quic_opts.scid_prefix naming them: see docs/ARCHITECTURE.md, "Sharded HTTP/3").
 * bound (may be NULL) receives the first socket's address. May be called once, instead of
 * vega_quic_endpoint_listen.
 * Returns 0; -EBUSY (already listening or connecting); -EINVAL (a bad argument, n is 0 or above
 * VEGA_QUIC_EP_MAX_FDS, a descriptor that is not a bound UDP socket, no certificate); -errno
 * of fcntl; -ENOMEM; VEGA_ERR_NOTASK. Context: inside a task. Since 0.2.
 */
VEGA_API int vega_quic_endpoint_listen_fds(vega_quic_endpoint *ep, const int *fds, size_t n,
                                           vega_addr *bound);

/*
 * Server without on_conn: waits for the next new connection. out: receives a handle, owned by
 * the caller (vega_quic_ep_conn_release).
 * Returns 0; -ETIMEDOUT; -ECANCELED; VEGA_ERR_CLOSED (the endpoint is shutting down);
 * -EINVAL (not listening, or on_conn is set); VEGA_ERR_NOTASK. Context: inside a task.
 * Since 0.1.
 */
VEGA_API int vega_quic_endpoint_accept(vega_quic_endpoint *ep, vega_quic_ep_conn **out,
                                       vega_deadline dl);

/* How a connection ended (plain data): valid once it closed. */
typedef struct vega_quic_ep_close_info {
    bool closed;       /* the connection closed (false: still open) */
    bool local;        /* we closed it (or a timeout did) */
    bool app;          /* an application error code (else a transport one) */
    bool idle_timeout; /* it timed out */
    bool reset;        /* the peer sent a stateless reset */
    uint64_t code;
    char reason[128]; /* the reason phrase, NUL-terminated (printable, truncated) */
} vega_quic_ep_close_info;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI): fields are only ever
 * appended, and a caller built against an older layout gets that layout's prefix filled,
 * nothing past it. */
#define VEGA_QUIC_EP_CLOSE_INFO_VERSION 1

/* Client settings of one connection: plain data, borrowed for the call (copied). */
typedef struct vega_quic_connect_opts {
    const char *server_name; /* SNI and the name the certificate must match; NULL = the host
                                given to connect_host (none for an address) */
    const uint8_t *session;  /* a session from an earlier connection (VEGA_QUIC_EV_SESSION):
                                resumption, and 0-RTT when the template allows early data */
    size_t session_len;
    const uint8_t *token; /* a NEW_TOKEN token from an earlier connection to this server */
    size_t token_len;
    uint32_t version;       /* 0 = the template's (v1 unless set) */
    bool early;             /* return as soon as 0-RTT streams may be opened (a resumed session
                               with early data), not after the handshake */
    const vega_addr *local; /* bind the connection's own UDP socket to this address; NULL = an
                               ephemeral port of the right family */
    void *user;             /* the connection's user pointer from the start (on_event gets it
                               for the very first events; vega_quic_ep_conn_set_user later).
                               A connect that fails sets it to NULL before returning: the
                               abandoned connection never calls back with it again */
    vega_quic_ep_close_info *close; /* receives how the connection ended when the connect fails
                               after it existed (a TLS alert, a refusal, ICMP); may be NULL */
    vega_sock *sock; /* since 0.3: NULL, or the connection's UDP socket, made elsewhere: taken
                        by vega_quic_endpoint_connect (closed on failure too; connect_host
                        refuses it with -EINVAL). A SOCKS5 relay socket from
                        vega_proxy_udp_associate carries QUIC through the proxy; the socket is
                        not connected, local is ignored, and the connection cannot migrate
                        (vega_quic_ep_conn_migrate: -EOPNOTSUPP) */
} vega_quic_connect_opts;

/*
 * Client: connects to addr, each connection on a UDP socket of its own (so a migration or a
 * NAT rebinding is its alone), and waits until the handshake is done (or 0-RTT is possible with
 * o->early). o: borrowed, may be NULL (defaults). out: receives a handle owned by the caller.
 * Returns 0; -ETIMEDOUT (dl: no answer; the connection is abandoned); -ECANCELED;
 * VEGA_ERR_QUIC_EP_HANDSHAKE (TLS alert, no common version or ALPN, bad certificate: o->close
 * says which); VEGA_ERR_QUIC_EP_REFUSED; VEGA_ERR_QUIC_EP_CLOSED (closed during the handshake);
 * -ECONNREFUSED, -EHOSTUNREACH, -ENETUNREACH (ICMP said so before the peer sent anything:
 * nothing listens there); the codes of
 * vega_udp_bind; -EINVAL (a bad argument or setting); -ENOMEM; VEGA_ERR_CLOSED (the endpoint is
 * shutting down); VEGA_ERR_NOTASK. Context: inside a task. Since 0.1.
 */
VEGA_API int vega_quic_endpoint_connect(vega_quic_endpoint *ep, const vega_addr *addr,
                                        const vega_quic_connect_opts *o, vega_quic_ep_conn **out,
                                        vega_deadline dl);

/*
 * Client: resolves host (the library's resolver, <vega/dns.h>; numeric addresses too) and
 * connects as vega_quic_endpoint_connect, trying the addresses in the resolver's order (IPv6
 * and IPv4 interleaved) with a new attempt every 250 ms while none has answered (Happy
 * Eyeballs, RFC 8305 §5); the first handshake to finish wins and the others are closed.
 * server_name defaults to host (unless it is an IP literal).
 * Returns as vega_quic_endpoint_connect (the error of the last attempt when all fail), and
 * VEGA_ERR_DNS_NOT_FOUND, VEGA_ERR_DNS_NO_ADDRESS, VEGA_ERR_DNS_SERVER; -EINVAL (a bad argument,
 * port 0); VEGA_ERR_NOTASK. Context: inside a task. Since 0.1.
 */
VEGA_API int vega_quic_endpoint_connect_host(vega_quic_endpoint *ep, const char *host,
                                             uint16_t port, const vega_quic_connect_opts *o,
                                             vega_quic_ep_conn **out, vega_deadline dl);

/*
 * Closes every connection (CONNECTION_CLOSE with NO_ERROR, or H3_NO_ERROR-style codes the
 * application sent itself before) and stops accepting; connections still open when grace
 * passes are dropped. Idempotent. Context: any thread; never suspends. Since 0.1.
 */
VEGA_API void vega_quic_endpoint_shutdown(vega_quic_endpoint *ep, vega_deadline grace);

/*
 * Waits until every connection has ended and the endpoint's tasks have stopped (after
 * vega_quic_endpoint_shutdown). Returns 0, -ETIMEDOUT, -ECANCELED, VEGA_ERR_NOTASK; -EINVAL (ep
 * NULL). Context: inside a task. Since 0.1.
 */
VEGA_API int vega_quic_endpoint_wait(vega_quic_endpoint *ep, vega_deadline dl);

/* Frees ep: shuts it down if needed and waits for its tasks (inside a task) — it must not be
 * used after. Handles still held stay valid until released. NULL: no-op. Context: inside a
 * task of its runtime, or after the runtime was freed. Since 0.1. */
VEGA_API void vega_quic_endpoint_free(vega_quic_endpoint *ep);

/* The handshake-duration buckets' upper bounds in microseconds (inclusive), 1 ms to 5 s; a
 * last bucket takes the rest. */
#define VEGA_QUIC_EP_HS_BOUNDS_US                                                                  \
    {                                                                                              \
        1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000   \
    }
#define VEGA_QUIC_EP_HS_BUCKETS 13

/* Counters since creation (plain data). */
typedef struct vega_quic_endpoint_stats {
    uint64_t conns_open;     /* now */
    uint64_t handshakes;     /* now: connections still in their handshake */
    uint64_t conns_accepted; /* server connections created */
    uint64_t conns_refused;  /* over max_conns or refused by on_conn */
    uint64_t retries_sent;   /* Retry packets */
    uint64_t vn_sent;        /* Version Negotiation packets */
    uint64_t resets_sent;    /* stateless resets */
    uint64_t tokens_invalid; /* Initials with a token that did not validate */
    uint64_t dgrams_in, dgrams_out, bytes_in, bytes_out;
    uint64_t dgrams_dropped; /* routed nowhere and not answered (malformed, limits) */
    /* Outcomes, each connection counted once: the handshake when it completes, the rest when
     * the connection is torn down (after its closing or draining period). */
    uint64_t handshakes_ok;     /* handshakes that completed */
    uint64_t handshakes_failed; /* connections that ended before their handshake completed */
    /* connections that ended after their handshake, by how */
    uint64_t closed_idle;  /* the idle timeout */
    uint64_t closed_peer;  /* the peer's CONNECTION_CLOSE, or its stateless reset */
    uint64_t closed_local; /* we closed it: the application, an error, a refusal, the shutdown */
    uint64_t early_accepted, early_rejected; /* 0-RTT, as the handshake settled it */
    /* the connections' own counts (vega_quic_conn_info), added when each ends */
    uint64_t pkts_sent, pkts_recv, pkts_lost, ptos;
    /* completed handshakes by duration (from the connection's creation: the server's first
     * Initial it kept, the client's connect), not cumulative: bucket i counts those above
     * bound i-1 and up to bound i, the bounds being VEGA_QUIC_EP_HS_BOUNDS_US (the last bucket
     * has no upper bound) */
    uint64_t hs_duration[VEGA_QUIC_EP_HS_BUCKETS];
    uint64_t hs_duration_sum_ns;
} vega_quic_endpoint_stats;

/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI, as for options): counters
 * are only ever appended, and a caller built against an older layout gets that layout's
 * prefix filled, nothing past it. */
#define VEGA_QUIC_ENDPOINT_STATS_VERSION 1

/* Fills st up to the end of layout stats_version (the macro vega_quic_endpoint_get_stats
 * passes VEGA_QUIC_ENDPOINT_STATS_VERSION). Returns 0; -EINVAL (ep or st NULL, or a layout
 * this library does not know: st is left as it was). Context: any thread. Since 0.1
 * (versioned since 0.2). */
VEGA_API int vega_quic_endpoint_get_stats_versioned(const vega_quic_endpoint *ep,
                                                    vega_quic_endpoint_stats *st,
                                                    int stats_version);
#define vega_quic_endpoint_get_stats(...)                                                          \
    vega_quic_endpoint_get_stats_versioned(__VA_ARGS__, VEGA_QUIC_ENDPOINT_STATS_VERSION)

/*
 * What a server that stops taking new connections must still serve before it can tell none
 * is on its way (a reloading shard whose new connections go elsewhere since `since`, a
 * vega_now() time): datagrams that wait in the endpoint's queues for new connections (they
 * are read ahead, behind those of connections it has; see docs/ARCHITECTURE.md), plus one for
 * each listening socket whose kernel queue was not seen empty since `since` and is not empty
 * now (what waits there may be Initials sent before). 0: every datagram that reached ep before
 * `since` was read and handled (connections in their handshake are counted by
 * vega_quic_endpoint_stats.handshakes). NULL: 0. Context: any thread, between listen and free.
 * Since 0.3.
 */
VEGA_API size_t vega_quic_endpoint_new_pending(const vega_quic_endpoint *ep, uint64_t since);

/* The endpoint's first socket's local address (after listen). Returns 0, -ENOTCONN (no socket
 * yet); -EINVAL (a NULL argument). Context: any thread. Since 0.1. */
VEGA_API int vega_quic_endpoint_local_addr(const vega_quic_endpoint *ep, vega_addr *out);

/* ---- connections --------------------------------------------------------------------------- */

/*
 * Locks c and returns its core connection for stream calls (see vega_quic_ep_callbacks for
 * what is allowed), or NULL when the connection is gone (its core freed; c stays valid as a
 * handle). Pair with vega_quic_ep_conn_unlock, which hands the events that became pending to
 * the callbacks and schedules what is to be sent. Not recursive; not inside a callback (the
 * callbacks already hold the lock).
 * The lock is held only for core calls, never across a wait, so taking it is not cancellable:
 * a cancelled task gets it too, to finish cleanly.
 * Returns the core connection, or NULL when the connection is gone: it ended and its callbacks
 * have all run (nothing to unlock then). Context: inside a task; may suspend while another
 * task holds the lock. Since 0.1.
 */
VEGA_API vega_quic_conn *vega_quic_ep_conn_lock(vega_quic_ep_conn *c);

/* Unlocks c (after vega_quic_ep_conn_lock returned non-NULL). Context: the locking task; never
 * suspends. Since 0.1. */
VEGA_API void vega_quic_ep_conn_unlock(vega_quic_ep_conn *c);

/* The connection's user pointer (set by vega_quic_ep_conn_set_user; NULL at first). Context:
 * any thread. Since 0.1. */
VEGA_API void *vega_quic_ep_conn_get_user(const vega_quic_ep_conn *c);
VEGA_API void vega_quic_ep_conn_set_user(vega_quic_ep_conn *c, void *user);

/* Takes another reference to c (each is dropped with vega_quic_ep_conn_release). Since 0.1. */
VEGA_API void vega_quic_ep_conn_retain(vega_quic_ep_conn *c);

/* Drops a reference: the last one frees the handle. Releasing does not close the connection:
 * the endpoint runs it until it closes (vega_quic_ep_conn_close) or times out. NULL: no-op.
 * Context: any thread; never suspends. Since 0.1. */
VEGA_API void vega_quic_ep_conn_release(vega_quic_ep_conn *c);

/*
 * Closes c (CONNECTION_CLOSE of kind with code and reason, then the closing period); streams
 * waiting in vega_stream calls fail with VEGA_ERR_QUIC_EP_CLOSED. Returns 0; VEGA_ERR_CLOSED
 * (already closing or gone); -EINVAL (a bad argument). Context: inside a task (takes the lock);
 * not from a callback (use vega_quic_conn_close there). Since 0.1.
 */
VEGA_API int vega_quic_ep_conn_close(vega_quic_ep_conn *c, vega_quic_close_kind kind, uint64_t code,
                                     const char *reason);

/* Waits until c has ended (closed and drained, timed out, or reset). Returns 0, -ETIMEDOUT,
 * -ECANCELED; -EINVAL (c NULL). Context: inside a task. Since 0.1. */
VEGA_API int vega_quic_ep_conn_wait_closed(vega_quic_ep_conn *c, vega_deadline dl);

/* Fills *out up to the end of layout info_version (the macro vega_quic_ep_conn_get_close passes
 * VEGA_QUIC_EP_CLOSE_INFO_VERSION). Returns 0; -EINVAL (c or out NULL, or a layout this library
 * does not know: out is left as it was). Context: any thread. Since 0.1 (versioned since
 * 0.2). */
VEGA_API int vega_quic_ep_conn_get_close_versioned(const vega_quic_ep_conn *c,
                                                   vega_quic_ep_close_info *out, int info_version);
#define vega_quic_ep_conn_get_close(...)                                                           \
    vega_quic_ep_conn_get_close_versioned(__VA_ARGS__, VEGA_QUIC_EP_CLOSE_INFO_VERSION)

/* Fills *info from the core (locks c; after the end, the last values), up to the end of layout
 * info_version (the macro vega_quic_ep_conn_get_info passes VEGA_QUIC_CONN_INFO_VERSION).
 * Returns 0; -EINVAL (c or info NULL, or a layout this library does not know: info is left as
 * it was). Context: inside a task. Since 0.1 (versioned since 0.2). */
VEGA_API int vega_quic_ep_conn_get_info_versioned(vega_quic_ep_conn *c, vega_quic_conn_info *info,
                                                  int info_version);
#define vega_quic_ep_conn_get_info(...)                                                            \
    vega_quic_ep_conn_get_info_versioned(__VA_ARGS__, VEGA_QUIC_CONN_INFO_VERSION)

/* The peer's address now (it changes with migration). Context: any thread. Since 0.1. */
VEGA_API void vega_quic_ep_conn_peer(const vega_quic_ep_conn *c, vega_addr *out);

/*
 * Client: migrates c to a new local address (active migration, RFC 9000 §9): opens a new UDP
 * socket on local (NULL = a new ephemeral port of the peer's family), whose datagrams reach c
 * as the first socket's do, and moves the core there (vega_quic_conn_migrate: a spare
 * connection ID of the peer's, PATH_CHALLENGE on the new path, data carried on there). The old
 * socket stays open, and keeps receiving, until the new path is validated; then it is closed.
 * When validation fails (no PATH_RESPONSE within 3 PTO) the core goes back to the old path and
 * the new socket is closed. The outcome comes as VEGA_QUIC_EV_PATH_CHANGED through on_event
 * (error_code 1: validated, 0: failed); vega_quic_conn_get_path tells the addresses. local:
 * borrowed.
 * Returns 0 (started); -EINVAL (a server connection, local of another family than the peer,
 * or what vega_quic_conn_migrate refuses: the handshake is not confirmed, the peer sent
 * disable_active_migration); -EBUSY (a migration of c is still being validated);
 * -EOPNOTSUPP (c runs through a SOCKS5 relay: vega_quic_connect_opts.sock; since 0.3);
 * VEGA_ERR_FULL (the peer has given no spare connection ID yet: try again later);
 * VEGA_ERR_QUIC_EP_CLOSED (c is closing or gone); VEGA_ERR_CLOSED (the endpoint is shutting
 * down); the codes of vega_udp_bind (-EADDRINUSE, -EADDRNOTAVAIL ...) and of connect(2);
 * -ENOMEM. Context: with c locked: inside one of its callbacks, or between
 * vega_quic_ep_conn_lock and _unlock; never suspends. Since 0.1.
 */
VEGA_API int vega_quic_ep_conn_migrate(vega_quic_ep_conn *c, const vega_addr *local);

/*
 * Client: the latest session ticket (for vega_quic_connect_opts.session: resumption and 0-RTT
 * next time) and address validation token (vega_quic_connect_opts.token) the server gave on c.
 * buf: receives up to cap bytes (NULL with cap 0 asks for the length).
 * Returns the length (0: none yet); VEGA_ERR_NOBUF (cap too small); -EINVAL (a bad argument).
 * Context: inside a task (locks c). Since 0.1.
 */
VEGA_API vega_ssize vega_quic_ep_conn_get_session(vega_quic_ep_conn *c, uint8_t *buf, size_t cap);
VEGA_API vega_ssize vega_quic_ep_conn_get_token(vega_quic_ep_conn *c, uint8_t *buf, size_t cap);

/* ---- streams as vega_streams ------------------------------------------------------------- */

/*
 * Opens a stream of ours on c as a vega_stream (bidirectional, or unidirectional: then send
 * only); waits for the peer's stream credit. The vega_stream reads and writes the stream's
 * bytes with the usual rules (write is all-or-error, read returns 0 at the peer's FIN);
 * shutdown(SHUT_WR) sends FIN, shutdown(SHUT_RD) sends STOP_SENDING; close finishes the
 * sending side (FIN) when it was not, and stops reading. id (may be NULL) receives the stream
 * id. Returns 0; -ETIMEDOUT; -ECANCELED; VEGA_ERR_QUIC_EP_CLOSED; -ENOMEM; -EINVAL;
 * VEGA_ERR_NOTASK. Stream errors later: VEGA_ERR_QUIC_EP_RESET (reset or stop by the peer),
 * VEGA_ERR_QUIC_EP_CLOSED (the connection ended). Context: inside a task. Since 0.1.
 */
VEGA_API int vega_quic_ep_stream_open(vega_quic_ep_conn *c, bool bidi, vega_stream **out,
                                      uint64_t *id, vega_deadline dl);

/*
 * Waits for the next stream the peer opens on c (a connection without on_event, or one whose
 * on_event passed the STREAM_OPENED event on) and returns it as a vega_stream (receive only
 * when unidirectional). Returns as vega_quic_ep_stream_open: 0; -ETIMEDOUT; -ECANCELED;
 * VEGA_ERR_QUIC_EP_CLOSED; -ENOMEM; -EINVAL; VEGA_ERR_NOTASK. Context: inside a task. Since 0.1.
 */
VEGA_API int vega_quic_ep_stream_accept(vega_quic_ep_conn *c, vega_stream **out, uint64_t *id,
                                        vega_deadline dl);

/* The application error code the peer reset or stopped stream s with (after a
 * VEGA_ERR_QUIC_EP_RESET), else 0. s: a stream from this module. Since 0.1. */
VEGA_API uint64_t vega_quic_ep_stream_error(vega_stream *s);

#ifdef __cplusplus
}
#endif
#endif
