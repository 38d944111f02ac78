/* SPDX-License-Identifier: MIT */
/* QUIC endpoint internals shared by lib/quic_ep's files: sockets and their two tasks, the
 * connection table, connections, tokens. */
#ifndef VEGA_QUIC_EP_INT_H
#define VEGA_QUIC_EP_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/quic.h>
#include <vega/quic_ep.h>
#include <vega/quic_wire.h>
#include <vega/rt.h>
#include <vega/sync.h>

#include "base.h"
#include "rt_int.h"

/* Datagrams one receive call takes, and the room of each (a GRO train). */
#define EP_RX_BATCH 16
#define EP_RX_CAP   65536
/* Send buffers of the send task: GSO trains of up to EP_TX_SEGS datagrams each. */
#define EP_TX_BATCH 8
#define EP_TX_CAP   65000
#define EP_TX_SEGS  VEGA_UDP_MAX_SEGMENTS
/* What one flush of a connection may send before the next connection's turn. */
#define EP_FLUSH_BUDGET (256u * 1024u)
/* Our connection IDs are this long (routing of short headers). */
#define EP_CID_LEN 8
/* Connection IDs a connection is reachable by at most (its own, plus the client's first
 * Destination CID until the handshake ends). */
#define EP_MAX_CIDS 10
/* Streams the peer opened that wait for vega_quic_ep_stream_accept at most. */
#define EP_STREAM_ACCEPT_MAX 64
/* New connections that wait for vega_quic_endpoint_accept at most. */
#define EP_ACCEPT_MAX 256
/* New connections' first datagrams (long headers for no connection yet) wait in a socket's
 * queue while datagrams of the connections it has are served first: at most EP_DEFER_MAX of
 * them, EP_DEFER_BYTES in all (the rest are dropped, counted). Each turn of the receive task
 * (one batch read) tries to open at most EP_OPEN_PER_TURN of them, or EP_OPEN_PER_BUSY_TURN
 * when the batch came back full (more is waiting in the kernel: its datagrams for existing
 * connections go first, and reading on is cheap next to a handshake). */
#define EP_DEFER_MAX          1024
#define EP_DEFER_BYTES        (2u * 1024u * 1024u)
#define EP_OPEN_PER_TURN      4
#define EP_OPEN_PER_BUSY_TURN 1
/* Retry tokens are good for this long (RFC 9000 §8.1.2: short, the client uses it at once). */
#define EP_RETRY_TOKEN_TTL_MS 10000u

struct vega_quic_ep_conn;

/* A UDP socket and the two tasks that serve it: the receive task reads batches and feeds each
 * datagram to its connection; the send task is the only writer of the socket: it flushes the
 * connections queued as dirty and runs the timers of the connections homed here (a heap by
 * expiry). A server's sockets share its port; a client connection has a socket of its own. */
struct ep_sock {
    struct vega_quic_endpoint *ep;
    vega_sock *sock;
    vega_addr local;
    bool wildcard; /* bound to 0.0.0.0 / ::: the local address of each datagram matters */
    bool relayed;  /* a SOCKS5 relay socket (vega_quic_connect_opts.sock): no migration */
    struct vega_quic_ep_conn *owner; /* client socket: its one connection */
    vega_task *rx_task, *tx_task;    /* rx: a handle (the send task cancels it); tx: a handle for
                                        server sockets, detached for a client's */
    atomic_int live_tasks; /* client socket: its tasks still running (the last frees it) */
    vega_notify tx_wake;
    int timer_fd; /* a timerfd for waits shorter than the runtime's 1 ms timer tick (pacing) */
    atomic_bool stop;
    /* connections with something to send (pushed by any task, taken by the send task) */
    vega__spin dirty_lock;
    struct vega_quic_ep_conn *dirty_head, *dirty_tail;
    /* timers: a binary min-heap of connections by expiry, owned by the send task */
    struct vega_quic_ep_conn **heap;
    size_t heap_len, heap_cap;
    /* buffers */
    size_t rx_n, tx_n; /* messages per receive / send call */
    uint8_t *rx_buf, *tx_buf;
    vega_udp_msg *rx_msgs, *tx_msgs;
    vega_sock **tx_via; /* the socket each queued message leaves by: this one, or the new
                           socket of the owner's migration while its path is validated */
    /* server socket: datagrams for no connection yet, waiting for their turn (recv.c); a ring
     * of EP_DEFER_MAX (allocated at the first, freed when empty), the receive task's alone */
    struct ep_deferred **defer;
    size_t defer_head, defer_len, defer_bytes;
    /* for vega_quic_endpoint_new_pending (any thread): datagrams queued, plus one while a turn
     * runs; and when (vega_now()) a receive call last began that found the kernel's queue
     * empty (took less than a batch): everything queued before then has been read */
    atomic_size_t pending;
    atomic_uint_fast64_t drained_at;
};

/* A stream of a connection that the endpoint runs as a vega_stream (quic_ep/stream.c). */
struct ep_stream {
    struct vega_quic_ep_conn *c;
    uint64_t id;
    vega_notify rd, wr;
    uint64_t err_code;
    bool bidi, local;
    bool fin_recv, fin_sent, reset_recv, stop_recv, closed_conn;
    struct ep_stream *next;
};

struct vega_quic_ep_conn {
    struct vega_quic_endpoint *ep; /* valid while the endpoint lives (handles may outlive it) */
    const vega_mem *mem;           /* the endpoint's allocator: a handle released after the
                                      endpoint was freed still frees itself with it */
    struct ep_sock *home;
    vega_mutex mu;
    vega_quic_conn *qc; /* NULL once ended and freed (by the home's send task) */
    atomic_uint refs;
    void *user;
    bool server;
    bool counted_hs; /* counted in the endpoint's handshakes */
    bool handshake_done;
    uint64_t born; /* vega_now() at creation: the handshake's duration */
    bool taken;    /* server: given to on_conn or queued for accept */
    bool app;      /* events go to on_event (taken by on_conn, or a client with on_event) */
    bool ended;    /* closed for good: teardown pending or done */
    atomic_bool close_flushed; /* closing, and a flush since sent the CONNECTION_CLOSE */
    int sock_err; /* client: the ICMP error that ended a connection that never heard from
                     its peer (-ECONNREFUSED ...) */
    bool freed;   /* the send task removed it everywhere */
    bool token_sent;
    bool in_list;
    atomic_bool abandon; /* close it at the next flush (a failed connect, the shutdown) */
    char sni[256];       /* client: the settings the core borrows for the connection's life */
    uint8_t *cfg_session, *cfg_token;
    /* the send task's state */
    atomic_bool dirty;
    struct vega_quic_ep_conn *dirty_next;
    size_t heap_idx; /* SIZE_MAX: not in the heap */
    uint64_t expiry;
    /* connection IDs registered in the endpoint's table */
    uint8_t cids[EP_MAX_CIDS][VEGA_QUIC_MAX_CID_LEN];
    uint8_t cid_lens[EP_MAX_CIDS];
    size_t ncids;
    uint8_t odcid[VEGA_QUIC_MAX_CID_LEN]; /* the client's first DCID (server) */
    size_t odcid_len;
    bool odcid_registered;
    /* streams run as vega_streams, and peer streams waiting for stream_accept */
    struct ep_stream *streams;
    uint64_t accept_q[EP_STREAM_ACCEPT_MAX];
    size_t accept_head, accept_len;
    vega_notify accept_wake;
    vega_notify credit_wake; /* STREAMS_AVAILABLE: vega_quic_ep_stream_open may go on */
    /* waiters: handshake (connect), end */
    vega_notify hs_wake, end_wake;
    /* results */
    vega_quic_ep_close_info close;
    vega_quic_conn_info last_info;
    vega__spin peer_lock;
    vega_addr peer;
    uint8_t *session; /* client: the latest session and token (copies) */
    size_t session_len;
    uint8_t *token;
    size_t token_len;
    struct ep_qlog *qlog; /* the qlog file's state (qlog.c); NULL without qlog_dir */
    /* client migration (migrate.c): the new socket while its path is validated; its outcome
     * (1 validated, -1 failed), noted by the PATH_CHANGED event and settled by the home's
     * send task, which moves c to the new socket or closes it. Guarded by the lock. */
    struct ep_sock *mig;
    int mig_outcome;
    /* the endpoint's list of connections */
    struct vega_quic_ep_conn *next, *prev;
};

/* The connection table: connection ID -> connection, open addressing per shard. */
struct ep_table_entry {
    uint8_t len;
    uint8_t cid[VEGA_QUIC_MAX_CID_LEN];
    struct vega_quic_ep_conn *c;
};
#define EP_TABLE_SHARDS 16
struct ep_table_shard {
    vega__spin lock;
    struct ep_table_entry *slots;
    size_t cap, used, tombs;
};

struct vega_quic_endpoint {
    vega_quic_endpoint_opts o;
    const vega_mem *mem;
    vega_quic_mem qmem;
    uint8_t key[32];       /* the static key (opts.static_key or random) */
    uint8_t reset_key[32]; /* derived: stateless reset tokens */
    uint8_t token_key[32]; /* derived: Retry and NEW_TOKEN tokens */
    struct ep_table_shard table[EP_TABLE_SHARDS];
    struct ep_sock **socks; /* server sockets */
    size_t nsocks;
    bool listening;
    atomic_bool shutting_down;
    vega_deadline grace;
    /* connections: a list (teardown, shutdown), counts */
    vega__spin conns_lock;
    struct vega_quic_ep_conn *conns;
    size_t nconns;
    atomic_size_t handshakes;
    atomic_size_t client_socks; /* client sockets with tasks still running */
    vega_notify idle_wake;      /* a connection or a client socket ended */
    /* new connections for vega_quic_endpoint_accept */
    vega__spin accept_lock;
    struct vega_quic_ep_conn *accept_q[EP_ACCEPT_MAX];
    size_t accept_head, accept_len;
    vega_notify accept_wake;
    /* stateless reset rate: a token bucket refilled per second */
    vega__spin reset_lock;
    uint64_t reset_window_ns;
    size_t resets_in_window;
    /* stats (relaxed atomics) */
    atomic_uint_fast64_t st_accepted, st_refused, st_retries, st_vn, st_resets, st_tokens_bad,
        st_dgrams_in, st_dgrams_out, st_bytes_in, st_bytes_out, st_dropped;
    atomic_uint_fast64_t st_hs_ok, st_hs_failed, st_closed_idle, st_closed_peer, st_closed_local,
        st_early_acc, st_early_rej, st_pkts_sent, st_pkts_recv, st_pkts_lost, st_ptos, st_hs_sum_ns;
    atomic_uint_fast64_t st_hs_hist[VEGA_QUIC_EP_HS_BUCKETS];
};

/* Joins t even when the calling task was cancelled (then join would return at once): t is
 * known to end soon (it was cancelled too). */
static inline void vega__ep_join(vega_task *t)
{
    if (vega_task_join(t, NULL, VEGA_DEADLINE_NEVER) == 0)
        return;
    while (!vega_task_is_finished(t))
        (void)vega_yield();
    (void)vega_task_join(t, NULL, VEGA_DEADLINE_NEVER);
}

/* table.c */
int vega__ep_table_init(struct vega_quic_endpoint *ep);
void vega__ep_table_fini(struct vega_quic_endpoint *ep);
/* The connection a CID leads to, retained (the caller releases it), or NULL. */
struct vega_quic_ep_conn *vega__ep_table_get(struct vega_quic_endpoint *ep, const uint8_t *cid,
                                             size_t len);
/* Adds cid -> c. Returns 0, -EEXIST (taken by another connection), -ENOMEM. */
int vega__ep_table_add(struct vega_quic_endpoint *ep, const uint8_t *cid, size_t len,
                       struct vega_quic_ep_conn *c);
void vega__ep_table_del(struct vega_quic_endpoint *ep, const uint8_t *cid, size_t len,
                        const struct vega_quic_ep_conn *c);

/* conn.c */
struct vega_quic_ep_conn *vega__ep_conn_new(struct vega_quic_endpoint *ep, struct ep_sock *home,
                                            bool server);
/* Locks c's mutex (waits without deadline, ignoring nothing: -ECANCELED when the task is
 * cancelled). */
int vega__ep_conn_lock(struct vega_quic_ep_conn *c);
/* The lock holder's duty before unlocking: hands pending events to their takers, keeps the
 * connection ID table in step, notices the end. Then unlock (schedule: queue for a flush). */
void vega__ep_conn_after(struct vega_quic_ep_conn *c);
void vega__ep_conn_unlock(struct vega_quic_ep_conn *c, bool schedule);
/* Queues c on its home's dirty list and wakes the home's send task. */
void vega__ep_conn_schedule(struct vega_quic_ep_conn *c);
/* Removes c from everything once ended (the home's send task, c locked): frees the core. */
void vega__ep_conn_teardown(struct vega_quic_ep_conn *c);
void vega__ep_conn_list_add(struct vega_quic_endpoint *ep, struct vega_quic_ep_conn *c);
uint64_t vega__ep_wall_ms(void);
/* The settings of a new connection: the endpoint's template with what the endpoint fixes, and
 * c's qlog file when the endpoint has a qlog_dir (c NULL: a connection made only to refuse,
 * never logged). Returns 0 or -ENOMEM. */
int vega__ep_conn_opts(const struct vega_quic_endpoint *ep, struct vega_quic_ep_conn *c,
                       vega_quic_opts *q);

/* qlog.c: qlog_new sets q's hook to c's trace (nothing without a qlog_dir; 0 or -ENOMEM);
 * qlog_open creates the file once the connection is real (records wait until then); close
 * writes what is left and closes it (teardown); free releases the state (the last release). */
int vega__ep_qlog_new(struct vega_quic_ep_conn *c, vega_quic_opts *q);
void vega__ep_qlog_open(struct vega_quic_ep_conn *c);
void vega__ep_qlog_close(struct vega_quic_ep_conn *c);
void vega__ep_qlog_free(struct vega_quic_ep_conn *c);

/* sock.c */
int vega__ep_sock_open(struct vega_quic_endpoint *ep, const vega_addr *addr, unsigned flags,
                       bool server, int fd, struct ep_sock **out);
/* A client's socket on a UDP socket made elsewhere (vega_quic_connect_opts.sock): taken, also
 * on failure. */
int vega__ep_sock_adopt(struct vega_quic_endpoint *ep, vega_sock *sock, struct ep_sock **out);
int vega__ep_sock_start(struct ep_sock *s);
void vega__ep_sock_free(struct ep_sock *s);
/* Called by each of a socket's tasks as it returns: the last one of a client socket frees it. */
void vega__ep_sock_task_exit(struct ep_sock *s);
/* Sends one datagram now from the receive task (Retry, VN, reset, refusal). */
void vega__ep_sock_send_one(struct ep_sock *s, const uint8_t *buf, size_t len, const vega_addr *to,
                            const vega_addr *local);

/* recv.c: the receive task's body. */
void *vega__ep_rx_task(void *arg);
/* recv.c: one turn of the receive task over msgs[0..n) (n 0: nothing was waiting): each
 * datagram for a connection is fed to it at once, the rest queued; then queued ones are
 * opened, EP_OPEN_PER_TURN at most (EP_OPEN_PER_BUSY_TURN when n is the socket's batch).
 * Returns the connections opened (tried: a datagram that reached the handshake). Exposed for
 * the unit test of that order (inside a task, no other turn on s at the same time). */
size_t vega__ep_rx_turn(struct ep_sock *s, vega_udp_msg *msgs, int n, uint64_t now);
/* recv.c: frees what waits in s's queue (the socket is freed). */
void vega__ep_defer_free(struct ep_sock *s);
/* recv.c: feeds one datagram from `from` to server socket s as its receive task would (the
 * endpoint fuzz target's entry; inside a task). */
void vega__ep_fuzz_input(struct ep_sock *s, uint8_t *dgram, size_t len, const vega_addr *from,
                         uint64_t now);
/* send.c: the send task's body and its heap. */
void *vega__ep_tx_task(void *arg);

/* migrate.c: the send task's part of a client migration (c locked, from flush_conn): when the
 * new path's outcome is known, moves c to the new socket (validated; returns true: the home's
 * tasks then end, and c must be scheduled on its new home once unlocked) or closes the new
 * socket (failed). The caller has sent what it queued for c's paths before. */
bool vega__ep_migrate_settle(struct ep_sock *home, struct vega_quic_ep_conn *c);
/* The socket a datagram of c from local address `local` leaves by (NULL: no socket of c has
 * that address: the datagram is dropped). */
vega_sock *vega__ep_migrate_via(struct ep_sock *home, struct vega_quic_ep_conn *c,
                                const vega_quic_path *p);
/* c ended during a migration: its new socket is closed. */
void vega__ep_migrate_abort(struct vega_quic_ep_conn *c);

/* token.c */
size_t vega__ep_retry_token(const struct vega_quic_endpoint *ep, const vega_addr *peer,
                            const uint8_t *odcid, size_t odcid_len, const uint8_t *rscid,
                            size_t rscid_len, uint8_t *out, size_t cap);
/* 1: a valid Retry token (odcid filled), 2: a valid NEW_TOKEN token, 0: no valid token,
 * -1: a Retry token that is not valid (close with INVALID_TOKEN, RFC 9000 §8.1.2). */
int vega__ep_token_check(const struct vega_quic_endpoint *ep, const vega_addr *peer,
                         const uint8_t *tok, size_t tok_len, const uint8_t *dcid, size_t dcid_len,
                         uint8_t *odcid, size_t *odcid_len);
size_t vega__ep_new_token(const struct vega_quic_endpoint *ep, const vega_addr *peer, uint8_t *out,
                          size_t cap);

/* stream.c: event hand-off for streams run as vega_streams. Returns true when ev was one. */
bool vega__ep_stream_event(struct vega_quic_ep_conn *c, const vega_quic_event *ev);
void vega__ep_stream_conn_ended(struct vega_quic_ep_conn *c);

#endif
