/* SPDX-License-Identifier: MIT */
/* HTTP server: listeners, one task per active connection, idle keep-alive connections parked
 * with no task and no buffer, and a handler that sees one request at a time through an
 * exchange (read the request body, write the response). HTTP/1.1 (RFC 9112) over TCP and TLS,
 * HTTP/2 (RFC 9113) over TLS (ALPN h2) and, when asked, cleartext (h2c), and HTTP/3 (RFC 9114)
 * over QUIC: the same handler gets every version through the same exchange (an HTTP/2 or
 * HTTP/3 request runs in a task of its own; an idle connection holds no task). */
#ifndef VEGA_HTTP_SERVER_H
#define VEGA_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/http.h>
#include <vega/http1.h>
#include <vega/io.h>
#include <vega/mem.h>
#include <vega/quic_ep.h>
#include <vega/stream.h>
#include <vega/time.h>
#include <vega/tls.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A server: its listeners, its connections and their tasks. Its handler runs in one task per
 * request, on any worker of the runtime, so state the handler shares between requests needs
 * its own locking (or atomics). vega_http_server_* calls: see each one's Context line. */
typedef struct vega_http_server vega_http_server;

/* One request and its response. Valid from the handler's call until it returns. */
typedef struct vega_http_exchange vega_http_exchange;

/* A body length that is not known in advance: chunked in HTTP/1.1, until close in 1.0. */
#define VEGA_HTTP_LENGTH_UNKNOWN UINT64_MAX

/* Plain data, read-only: the request as received. Every span and pointer borrows the
 * exchange and is valid until the handler returns. */
typedef struct vega_http_request {
    int version;                    /* 10, 11, 20 (HTTP/2), 30 (HTTP/3) */
    int method;                     /* a vega_http_method; OTHER for other tokens */
    vega_http_str method_name;      /* the method token as sent */
    vega_http_str target;           /* the request target as sent ("/a%20b?x=1") */
    vega_http_str path;             /* the target's path, still percent-encoded */
    vega_http_str query;            /* without "?"; ptr NULL when there is no "?" */
    vega_http_str authority;        /* Host (or the absolute-form authority); ptr NULL if none */
    const vega_http_fields *fields; /* every header field, in order */
    uint64_t content_length;        /* body length; VEGA_HTTP_LENGTH_UNKNOWN when chunked */
    bool has_body;                  /* Content-Length > 0, or chunked */
    bool expect_continue;           /* "Expect: 100-continue" (sent on the first body read) */
    bool tls;                       /* the connection is TLS */
    const vega_addr *peer;          /* the client's address */
    const vega_addr *local;         /* the address the connection came in on */
    uint64_t conn_id;               /* the connection's number, from 1 in accept order */
    unsigned conn_seq;              /* requests before this one on the connection */
    vega_tstamp start;              /* vega_now() when the request head was complete */
    /* Extended CONNECT's ":protocol" (HTTP/2: RFC 8441 §4, HTTP/3: RFC 9220; "websocket"),
     * accepted only when vega_http_server_h2_opts.websocket (or the h3 opts' websocket) is on;
     * ptr NULL otherwise. Such a request keeps its
     * :path in target, path and query. Since 0.1. */
    vega_http_str protocol;
} vega_http_request;

/* What the server reports after each exchange (for access logs). */
typedef struct vega_http_log_entry {
    int status;           /* the status sent; 0 when no response could be sent */
    uint64_t body_bytes;  /* response body bytes written to the connection (0 for HEAD) */
    uint64_t duration_ns; /* from the complete request head to the end of the response */
    int error;            /* 0, or why the exchange failed (the connection then closes) */
} vega_http_log_entry;

/* The handler: called in the connection's task for each request, one at a time. It reads the
 * request body (optional: an unread body is drained or the connection closed), then answers.
 * Returns 0; a negative code when it could not answer (then: 500 if nothing was sent yet, else
 * the connection closes, as it does when the response was started but not finished). */
typedef int (*vega_http_handler_fn)(vega_http_exchange *x, void *user);

/* Called after each exchange, in the connection's task; req and e borrowed for the call. */
typedef void (*vega_http_log_fn)(void *user, const vega_http_request *req,
                                 const vega_http_log_entry *e);

/* Server settings. Initialise with vega_http_server_opts_init, then set what differs. */
typedef struct vega_http_server_opts {
    vega_http_handler_fn handler;   /* required */
    void *user;                     /* passed to handler and on_log */
    vega_http_log_fn on_log;        /* NULL: none */
    vega_tls_config *tls;           /* server config: every connection is TLS (when the config
                                       has no ALPN list, h2 and http/1.1 are set, or http/1.1
                                       alone when HTTP/2 is off: vega_http_server_set_h2);
                                       NULL: plain TCP. Retained by the server. */
    vega_http1_limits limits;       /* request line / field limits (defaults: see http1.h) */
    size_t max_conns;               /* open connections at most; beyond, new ones are closed at
                                       once; default 10000 */
    unsigned max_requests_per_conn; /* 0 = no limit (default) */
    size_t max_pipelined;           /* pipelined requests answered before their responses are
                                       written (they then leave in one write); default 32 */
    uint64_t header_timeout_ns;     /* whole request head, from its first byte: default 10 s */
    uint64_t body_timeout_ns;       /* each request body read: default 30 s */
    uint64_t idle_timeout_ns;       /* keep-alive idle between requests: default 60 s */
    uint64_t write_timeout_ns;      /* each response write: default 30 s */
    const char *server_header;      /* "Server" field value; NULL: none */
    const vega_mem *mem;            /* the server's own allocations: the server, its connections,
                                       their active blocks and read buffers (retained; NULL =
                                       libc; <vega/mem.h>). Sockets, TLS streams and the
                                       handler's memory are not covered. A failed allocation
                                       closes the connection that needed it (no response, or a
                                       response cut short when the head was already sent), or
                                       refuses a new one; other connections go on. */
} vega_http_server_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_HTTP_SERVER_OPTS_VERSION 1

/* Fills o with the defaults (all zero but the documented defaults). Since 0.1. */
VEGA_API void vega_http_server_opts_init_versioned(vega_http_server_opts *o, int opts_version);
#define vega_http_server_opts_init(...)                                                            \
    vega_http_server_opts_init_versioned(__VA_ARGS__, VEGA_HTTP_SERVER_OPTS_VERSION)

/*
 * Creates a server. opts: borrowed (copied); server_header is copied; tls is retained.
 * Returns 0; -ENOMEM; -EINVAL (no handler, a bad limit).
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_http_server_new_versioned(vega_http_server **out,
                                            const vega_http_server_opts *opts, int opts_version);
#define vega_http_server_new(...)                                                                  \
    vega_http_server_new_versioned(__VA_ARGS__, VEGA_HTTP_SERVER_OPTS_VERSION)

/*
 * Opens a listening socket on addr (vega_tcp_listen flags, e.g. VEGA_LISTEN_REUSEPORT) and adds
 * it to the server; may be called several times, before vega_http_server_run. bound (may be
 * NULL) receives the address actually bound (port 0 picks a free port).
 * Returns 0 or the codes of vega_tcp_listen; -EBUSY (the server is running); -EINVAL (a bad
 * argument); VEGA_ERR_FULL (the server has its most listeners already). Context: any thread. Since
 * 0.1.
 */
VEGA_API int vega_http_server_listen(vega_http_server *srv, const vega_addr *addr, unsigned flags,
                                     vega_addr *bound);

/*
 * Adds fd, a socket already listening (e.g. inherited by a shard of <vega/shard.h>), as a
 * listener, as vega_tcp_listen_fd does (flags: VEGA_LISTEN_SHARED when other processes accept
 * on it too). fd: taken on success and on the errors of vega_tcp_listen_fd other than -EINVAL.
 * bound (may be NULL) receives its address.
 * Returns 0 or the codes of vega_tcp_listen_fd; -EBUSY (the server is running); -EINVAL;
 * VEGA_ERR_FULL (the server has its most listeners already). Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_server_listen_fd(vega_http_server *srv, int fd, unsigned flags,
                                        vega_addr *bound);

/* HTTP/3 settings of a server (vega_http_server_listen_h3): plain data, borrowed for the call
 * (copied; pointers retained for the server's life). vega_http_server_h3_opts_init sets the
 * defaults. */
typedef struct vega_http_server_h3_opts {
    /* The certificate chain and key QUIC's TLS 1.3 presents (<vega/crypto.h>): required. */
    const vega_crypto_cert_chain *chain;
    const vega_crypto_key *key;
    /* 32 bytes that protect session tickets: resumption, and with early_data 0-RTT requests;
     * NULL = no tickets. */
    const uint8_t *ticket_key;
    /* Accept requests in 0-RTT. They may be replays (RFC 8470): only the safe methods (GET,
     * HEAD, OPTIONS, TRACE) reach the handler before the handshake is done; others wait for
     * it. */
    bool early_data;
    unsigned sockets;           /* UDP sockets sharing the port; 0 = one per worker */
    size_t max_conns;           /* QUIC connections at most; 0 = the server's max_conns */
    uint64_t max_streams;       /* concurrent requests per connection; 0 = 100 */
    uint64_t idle_timeout_ms;   /* QUIC idle timeout; 0 = the server's idle_timeout */
    vega_quic_retry_mode retry; /* address validation with Retry (default: above 100 handshakes
                                   in progress) */
    const uint8_t *static_key;  /* 32 secret bytes for Retry/NEW_TOKEN and stateless reset
                                   tokens (shared by a server's processes); NULL = random */
    uint16_t suites[3];         /* TLS 1.3 cipher suites QUIC accepts (VEGA_QUIC_TLS_*, in
                                   preference order); 0 entries = all three */
    size_t n_suites;
    bool no_alt_svc;            /* do not advertise HTTP/3 in Alt-Svc on TLS responses */
    uint32_t alt_svc_max_age_s; /* the Alt-Svc ma parameter; 0 = 86400 */
    /* QUIC's TLS secrets as NSS key log lines (vega_quic_opts.keylog; an SSLKEYLOGFILE for
     * Wireshark); NULL = none. It runs on the endpoint's tasks, on every worker at once:
     * make it thread-safe. */
    void (*keylog)(void *keylog_user, const char *line);
    void *keylog_user; /* passed to keylog (retained) */
    /* ---- layout version 2 ---- */
    const char *qlog_dir; /* a qlog trace per QUIC connection in this directory (retained;
                             vega_quic_endpoint_opts.qlog_dir: <ODCID>_server.sqlog, JSON-SEQ,
                             64 MiB at most each); NULL = none. For debugging */
    /* ---- layout version 3 ---- */
    /* Response bytes a connection holds until the client acknowledges them, all its streams
     * together (vega_quic_conn_set_send_budget): a handler writing beyond waits, with its write
     * deadline, for acknowledgements to give room back; each stream may still hold 16 KiB
     * (VEGA_QUIC_SEND_BUDGET_FLOOR), so one response never waits for the others. 0 = 4 MiB. */
    uint64_t conn_send_budget;
    /* ---- layout version 4 ---- */
    /* Serve these bound UDP sockets (borrowed: the server uses duplicates) instead of binding
     * the address given to vega_http_server_listen_h3, which may then be NULL
     * (vega_quic_endpoint_listen_fds; sockets is ignored). For processes that share one
     * SO_REUSEPORT group with a steering program, as vega-serve --shards does. */
    const int *fds;
    size_t n_fds;
    /* The first bytes of the server's connection IDs (vega_quic_opts.scid_prefix: at most
     * VEGA_QUIC_MAX_SCID_PREFIX); 0 = all random. */
    uint8_t cid_prefix[4];
    size_t cid_prefix_len;
    /* ---- layout version 5 ---- */
    /* WebSockets over HTTP/3 (RFC 9220): SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 is advertised
     * and an extended CONNECT with ":protocol" reaches the handler (vega_http_request.protocol),
     * for vega_http_exchange_accept_websocket to answer, as vega_http_server_h2_opts.websocket
     * does for HTTP/2. Off by default (a handler that knows nothing of it would see a CONNECT
     * it does not expect). */
    bool websocket;
} vega_http_server_h3_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). Version 2 appended
 * qlog_dir, version 3 conn_send_budget, version 4 fds and cid_prefix, version 5 websocket; a
 * program built with an older version still works (no qlog; the default budget; its own
 * sockets, random IDs; no WebSockets). */
#define VEGA_HTTP_SERVER_H3_OPTS_VERSION 5

/* Fills o with the defaults. Since 0.1. */
VEGA_API void vega_http_server_h3_opts_init_versioned(vega_http_server_h3_opts *o,
                                                      int opts_version);
#define vega_http_server_h3_opts_init(...)                                                         \
    vega_http_server_h3_opts_init_versioned(__VA_ARGS__, VEGA_HTTP_SERVER_H3_OPTS_VERSION)

/*
 * Serves HTTP/3 (ALPN h3) on UDP at addr (flags as vega_udp_bind: VEGA_LISTEN_V6ONLY), through
 * a QUIC endpoint (<vega/quic_ep.h>) that starts at once. Requests reach the server's handler
 * through the same exchange as HTTP/1.1, with vega_http_request.version 30 and tls true; each
 * runs in its own task. Responses over TLS on TCP then carry Alt-Svc: h3=":PORT" (unless
 * no_alt_svc). May be called once per server, before or while it runs. bound (may be NULL)
 * receives the address bound (port 0 picks a free one). o: borrowed (copied).
 * With o->fds (layout 4) addr may be NULL: the server serves those sockets.
 * Returns 0; -EBUSY (HTTP/3 is already served); -EINVAL (no chain or key, a bad setting);
 * the codes of vega_quic_endpoint_new and vega_quic_endpoint_listen (-EADDRINUSE ...);
 * -ENOMEM; VEGA_ERR_NOTASK. Context: inside a task. Since 0.1.
 */
VEGA_API int vega_http_server_listen_h3_versioned(vega_http_server *srv, const vega_addr *addr,
                                                  unsigned flags, const vega_http_server_h3_opts *o,
                                                  vega_addr *bound, int opts_version);
#define vega_http_server_listen_h3(srv, addr, flags, o, bound)                                     \
    vega_http_server_listen_h3_versioned(srv, addr, flags, o, bound,                               \
                                         VEGA_HTTP_SERVER_H3_OPTS_VERSION)

/* HTTP/2 settings of a server (vega_http_server_set_h2): plain data, borrowed for the call
 * (copied). Without the call a server speaks HTTP/2 over TLS (ALPN h2 preferred to http/1.1)
 * and no cleartext HTTP/2. vega_http_server_h2_opts_init sets the defaults; a 0 field means its
 * default. */
typedef struct vega_http_server_h2_opts {
    bool disable; /* no HTTP/2 at all: TLS offers http/1.1 alone, h2c is refused */
    /* Cleartext HTTP/2 on plain TCP listeners: a connection that starts with the HTTP/2
     * preface (prior knowledge, RFC 9113 §3.3), and an HTTP/1.1 request without a body that
     * asks "Upgrade: h2c" with one HTTP2-Settings field (RFC 7540 §3.2: answered 101, the
     * request then is stream 1). Off by default: a server behind a TLS-terminating proxy
     * turns it on. */
    bool h2c;
    uint32_t max_concurrent_streams; /* requests at once per connection; 0 = 100 */
    uint32_t initial_window_size;    /* each request body's window at first; 0 = 256 KiB */
    uint32_t stream_window_max;      /* a body's window grows up to this; 0 = 8 MiB */
    uint32_t conn_window_max;        /* all bodies of a connection together; 0 = 16 MiB: the
                                        most a connection buffers of bodies its handlers have
                                        not read yet */
    size_t header_table_size;        /* our HPACK decoder's table; 0 = 4096 */
    /* The defenses of <vega/h2.h> (vega_h2_opts): stream resets (Rapid Reset, MadeYouReset)
     * and frames that do nothing (floods), a burst and a rate per second each; past them the
     * connection ends with GOAWAY ENHANCE_YOUR_CALM. 0 = 1000 and 33. */
    uint32_t reset_burst, reset_rate;
    uint32_t glitch_burst, glitch_rate;
    /* ---- layout version 2 ---- */
    /* WebSockets over HTTP/2 (RFC 8441): SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 is advertised
     * and an extended CONNECT with ":protocol" reaches the handler (vega_http_request.protocol),
     * for vega_http_exchange_accept_websocket to answer. Off by default: a handler that knows
     * nothing of it would see a CONNECT it does not expect (and might answer it 200). */
    bool websocket;
} vega_http_server_h2_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). Version 2 appended
 * websocket. */
#define VEGA_HTTP_SERVER_H2_OPTS_VERSION 2

/* Fills o with the defaults (all zero). Since 0.1. */
VEGA_API void vega_http_server_h2_opts_init_versioned(vega_http_server_h2_opts *o,
                                                      int opts_version);
#define vega_http_server_h2_opts_init(...)                                                         \
    vega_http_server_h2_opts_init_versioned(__VA_ARGS__, VEGA_HTTP_SERVER_H2_OPTS_VERSION)

/*
 * Sets how srv speaks HTTP/2 (see vega_http_server_h2_opts), before vega_http_server_run.
 * HTTP/2 requests reach the handler through the same exchange, with
 * vega_http_request.version 20, each in a task of its own; a connection's streams run at
 * once and their responses share it round robin. An idle HTTP/2 connection parks like an
 * HTTP/1.1 one (no task, no buffer); shutdown sends GOAWAY twice (RFC 9113 §6.8) and lets the
 * streams in flight finish. Over TLS, when the server set the config's ALPN list itself, the
 * list follows disable. o: borrowed (copied).
 * Returns 0; -EBUSY (the server is running); -EINVAL (a bad argument or setting, options of a
 * layout version this library does not know); -ENOMEM (the ALPN list could not be changed).
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_http_server_set_h2_versioned(vega_http_server *srv,
                                               const vega_http_server_h2_opts *o, int opts_version);
#define vega_http_server_set_h2(srv, o)                                                            \
    vega_http_server_set_h2_versioned(srv, o, VEGA_HTTP_SERVER_H2_OPTS_VERSION)

/*
 * Serves every listener until vega_http_server_shutdown: an accept task per listener, a task
 * per active connection; idle keep-alive connections are parked (no task, no read buffer).
 * Returns 0 once shut down and every connection is closed; -EINVAL (no listener);
 * -EBUSY (already running); VEGA_ERR_NOTASK (not called from a task). Context: inside a task. Since
 * 0.1.
 */
VEGA_API int vega_http_server_run(vega_http_server *srv);

/*
 * Serves one already-connected stream in the calling task until the connection ends (used by
 * tests with in-memory streams, and by programs that accept by themselves). s: taken (closed
 * at the end). peer, local: borrowed (copied), may be NULL. TLS is not added: pass a TLS stream
 * for that. Counts toward max_conns.
 * Returns 0 (the connection ended normally) or the error that ended it; -EINVAL (a bad argument);
 * -ENOMEM (no memory); VEGA_ERR_FULL (max_conns connections already); VEGA_ERR_NOTASK (not called
 * from a task). Context: inside a task. Since 0.1.
 */
VEGA_API int vega_http_server_serve(vega_http_server *srv, vega_stream *s, const vega_addr *peer,
                                    const vega_addr *local);

/*
 * Graceful shutdown: stop accepting (listeners closed), let in-flight exchanges finish,
 * close idle connections at once and busy ones after their current response (with
 * "Connection: close"). When grace passes, what is still open is cancelled. Idempotent.
 * Context: any thread, also a signal-waiting task; never suspends. Since 0.1.
 */
VEGA_API void vega_http_server_shutdown(vega_http_server *srv, vega_deadline grace);

/* Plain data: counters since the server was created. */
typedef struct vega_http_server_stats {
    uint64_t conns_accepted;
    uint64_t conns_refused; /* closed at once because max_conns was reached */
    uint64_t conns_open;    /* now: active + parked */
    uint64_t conns_parked;  /* now: idle keep-alive connections parked */
    uint64_t requests;      /* exchanges handled */
    uint64_t bad_requests;  /* requests refused for malformed input or limits (4xx sent) */
    uint64_t timeouts;      /* connections closed by a header/body/idle/write timeout */
} vega_http_server_stats;

/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI, as for options): counters
 * are only ever appended, and a caller built against an older layout gets that layout's
 * prefix filled, nothing past it. */
#define VEGA_HTTP_SERVER_STATS_VERSION 1

/* Fills st (a consistent-enough snapshot) up to the end of layout stats_version (the macro
 * vega_http_server_get_stats passes VEGA_HTTP_SERVER_STATS_VERSION). Returns 0; -EINVAL (srv
 * or st NULL, or a layout this library does not know: st is left as it was). Context: any
 * thread. Since 0.1 (versioned since 0.2). */
VEGA_API int vega_http_server_get_stats_versioned(const vega_http_server *srv,
                                                  vega_http_server_stats *st, int stats_version);
#define vega_http_server_get_stats(...)                                                            \
    vega_http_server_get_stats_versioned(__VA_ARGS__, VEGA_HTTP_SERVER_STATS_VERSION)

/*
 * Writes the server's metrics to out in the Prometheus text exposition format 0.0.4 (serve it
 * with "Content-Type: text/plain; version=0.0.4; charset=utf-8"), each family with its # HELP
 * and # TYPE lines:
 *   vega_http_server_requests_total{proto,code}          counter: requests that reached the
 *       handler; proto "http1" (1.0 and 1.1), "h2" or "h3"; code "1xx".."5xx", or "none" when
 *       no response could be sent
 *   vega_http_server_response_body_bytes_total{proto}    counter
 *   vega_http_server_request_body_bytes_total{proto}     counter: what the handlers read
 *   vega_http_server_request_duration_seconds{proto}     histogram: from the complete request
 *       head to the end of the response; buckets 0.5 ms, 1, 2.5, 5, 10, 25, 50, 100, 250,
 *       500 ms, 1, 2.5, 5, 10 s, +Inf
 *   vega_http_server_connections_{accepted,refused}_total, _connections_{open,parked},
 *   vega_http_server_{bad_requests,timeouts}_total       as vega_http_server_stats (TCP)
 *   vega_http_server_tls_handshakes_total{result}        counter: "ok" or "failed" (TCP's TLS)
 * Requests are counted after their response ended, with relaxed atomics in stripes (no lock
 * on the request path): each value is exact, the whole is not one snapshot. QUIC's own
 * counters are vega_quic_endpoint_get_stats'. out: borrowed.
 * Returns 0; -EINVAL (srv or out NULL); -EIO (writing to out failed).
 * Context: any thread; never suspends itself (a FILE that blocks would: give it a memory
 * stream). Since 0.1.
 */
VEGA_API int vega_http_server_metrics_prometheus(const vega_http_server *srv, FILE *out);

/* Frees srv; it must not be running (shut down and vega_http_server_run returned). NULL: no-op. */
VEGA_API void vega_http_server_free(vega_http_server *srv);

/* ---- the exchange ------------------------------------------------------------------------- */

/* The request. Borrowed from x. Since 0.1. */
VEGA_API const vega_http_request *vega_http_exchange_request(const vega_http_exchange *x);

/*
 * Reads the request body (de-chunked). Sends "100 Continue" first when the client asked for
 * it and nothing was sent yet. Returns bytes read (> 0), 0 at the end of the body, -ETIMEDOUT
 * (body_timeout or dl, whichever is earlier), -ECANCELED, VEGA_ERR_PROTO (malformed body: the
 * connection will close), or a stream error; -EINVAL (a bad argument). Context: the handler's task.
 * Since 0.1.
 */
VEGA_API vega_ssize vega_http_request_read(vega_http_exchange *x, void *buf, size_t len,
                                           vega_deadline dl);

/*
 * Starts the response: the status line and fields. The server adds Date, Server (when set),
 * and the framing: Content-Length when length is known, else Transfer-Encoding: chunked
 * (HTTP/1.1) or close-delimited (HTTP/1.0), and Connection when it closes or for 1.0
 * keep-alive. fields must not carry Content-Length, Transfer-Encoding or Connection.
 * For a HEAD request, or a 204/304 status, no body goes out (later writes are counted and
 * dropped; Content-Length is still sent for HEAD when length is known). The head is held
 * back to share a packet with the first body bytes; a 1xx status (other than 101, refused)
 * is sent at once and the response stays open for the final status.
 * fields: borrowed for the call.
 * Returns 0; -EINVAL (bad status, a framing field, an invalid name or value);
 * VEGA_ERR_CLOSED (a final response already started); VEGA_ERR_NOBUF (head too large).
 * Context: the handler's task. Since 0.1.
 */
VEGA_API int vega_http_response_start(vega_http_exchange *x, int status,
                                      const vega_http_field *fields, size_t n, uint64_t length);

/* Writes body bytes (all or error). More than the announced length is -EINVAL.
 * Returns len or a negative code (-ETIMEDOUT after write_timeout, -EPIPE, ...). Since 0.1. */
VEGA_API vega_ssize vega_http_response_write(vega_http_exchange *x, const void *buf, size_t len,
                                             vega_deadline dl);

/* Writes len bytes of file fd from offset as body, with sendfile(2) on plain TCP (kernel TLS
 * when active) and a copy otherwise. fd: borrowed. Returns len or a negative code (-ENODATA:
 * the file ended first); -EINVAL (a bad argument). Since 0.1. */
VEGA_API vega_ssize vega_http_response_sendfile(vega_http_exchange *x, int fd, uint64_t offset,
                                                size_t len, vega_deadline dl);

/* Ends the response: flushes the held-back head, writes the last chunk with trailers (chunked
 * only; else trailers are dropped). A known length not fully written is -EINVAL
 * (and the connection closes, since the client cannot tell). trailers: borrowed, may be NULL.
 * Returns 0 or a negative code; VEGA_ERR_CLOSED (the response was already finished);
 * VEGA_ERR_NOBUF (the trailers do not fit the output buffer). Since 0.1. */
VEGA_API int vega_http_response_finish(vega_http_exchange *x, const vega_http_field *trailers,
                                       size_t n, vega_deadline dl);

/* The whole response at once: start + write + finish in as few writes as possible.
 * body: borrowed, may be NULL when len is 0. Since 0.1. */
VEGA_API int vega_http_respond(vega_http_exchange *x, int status, const vega_http_field *fields,
                               size_t n, const void *body, size_t len, vega_deadline dl);

/* Asks the connection to close after this response ("Connection: close"; HTTP/2: GOAWAY,
 * and the connection ends once its other streams did). Since 0.1. */
VEGA_API void vega_http_exchange_set_close(vega_http_exchange *x);

/* True once a final response was started. Since 0.1. */
VEGA_API bool vega_http_response_is_started(const vega_http_exchange *x);

/* The TLS stream of the connection (for ALPN, SNI, peer certificate), HTTP/2's included, or
 * NULL on plain TCP and over HTTP/3 (QUIC's own TLS: see vega_http_exchange_quic). Borrowed.
 * Since 0.1. */
VEGA_API vega_stream *vega_http_exchange_tls(const vega_http_exchange *x);

/* The QUIC connection of an HTTP/3 exchange (for its info: version, resumption, 0-RTT, RTT),
 * or NULL for HTTP/1.1. Borrowed until the handler returns. Since 0.1. */
VEGA_API vega_quic_ep_conn *vega_http_exchange_quic(const vega_http_exchange *x);

#ifdef __cplusplus
}
#endif
#endif
