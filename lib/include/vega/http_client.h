/* SPDX-License-Identifier: MIT */
/* HTTP client: requests to http:// and https:// URLs over a pool of keep-alive connections per
 * origin, bodies streamed both ways, chunked, decompression (gzip, deflate, br, zstd), timeouts,
 * TLS with ALPN. HTTP/1.1 (RFC 9112) over TCP, HTTP/2 (RFC 9113) over TLS (ALPN h2, offered on
 * https by default) or cleartext by prior knowledge, and HTTP/3 (RFC 9114) over QUIC, HTTP/2 and
 * HTTP/3 with many requests multiplexed on one connection per origin, chosen per request, with a
 * race against TCP (curl's --http3) and Alt-Svc (RFC 7838) to learn where HTTP/3 is offered.
 * Redirects are the caller's policy: vega_http_client_redirect computes the next request. */
#ifndef VEGA_HTTP_CLIENT_H
#define VEGA_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/crypto.h>
#include <vega/dns.h>
#include <vega/err.h>
#include <vega/export.h>
#include <vega/h3.h>
#include <vega/http.h>
#include <vega/http1.h>
#include <vega/http_server.h>
#include <vega/io.h>
#include <vega/mem.h>
#include <vega/proxy.h>
#include <vega/quic.h>
#include <vega/quic_ep.h>
#include <vega/stream.h>
#include <vega/time.h>
#include <vega/tls.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A client: options, a pool of idle keep-alive connections and --resolve entries. Shared:
 * any number of tasks, on any workers of one runtime, may send requests through one client at
 * the same time (the pool is locked, never across a suspension); each request gets its own
 * connection. Create and free it outside of any request in progress. */
typedef struct vega_http_client vega_http_client;

/* A response being received; owned by the caller until vega_http_client_response_free. Not
 * shared: one task at a time reads it (it may move between tasks, one after the other). */
typedef struct vega_http_client_response vega_http_client_response;

/*
 * A connect hook: opens the connection of a request in place of the client's own DNS lookup
 * and TCP connect (a tunnel through a proxy, an in-memory stream in tests). It is called for
 * each new connection, never for a pooled one.
 * user: the opts' connect_user (retained by the client). host: the URL's host, lowercased,
 * without the brackets of an IPv6 literal (borrowed for the call). port: the URL's port, or
 * the scheme's default. tls: the client will run TLS over the stream (SNI and certificate
 * checks for host, ALPN), so the hook returns the plain transport in every case. out: on 0
 * receives the stream, returned owned: the client takes it and closes it with the connection.
 * dl: the connect deadline (connect_timeout, or the request's deadline when earlier).
 * Returns 0 with *out set, or a negative code (-ECONNREFUSED, -ETIMEDOUT, ...), which
 * vega_http_client_send returns as its own; the hook then keeps nothing in *out. A positive
 * value, or 0 without a stream, fails the request with VEGA_ERR_CALLBACK.
 * Context: called inside the task of vega_http_client_send; may suspend. Since 0.1.
 */
typedef int (*vega_http_connect_fn)(void *user, const char *host, uint16_t port, bool tls,
                                    vega_stream **out, vega_deadline dl);

/* Which way a traced frame went. */
typedef enum vega_http_frame_dir {
    VEGA_HTTP_FRAME_IN = 0,  /* received from the server */
    VEGA_HTTP_FRAME_OUT = 1, /* sent by the client */
} vega_http_frame_dir;

/* An HTTP/2 frame as it went out or came in (vega_http_client_opts.h2_frame): its header
 * (RFC 9113 §4.1) and the first bytes of its payload, enough to read a WINDOW_UPDATE's
 * increment, a RST_STREAM's or GOAWAY's code, a padded frame's pad length. Borrowed for the
 * call. */
typedef struct vega_http_h2_frame {
    vega_http_frame_dir dir;
    uint8_t type; /* RFC 9113 §6: 0 DATA, 1 HEADERS, 2 PRIORITY, 3 RST_STREAM,
                     4 SETTINGS, 5 PUSH_PROMISE, 6 PING, 7 GOAWAY, 8 WINDOW_UPDATE,
                     9 CONTINUATION; others as they come */
    uint8_t flags;
    uint32_t stream_id;
    uint32_t length;        /* of the payload */
    const uint8_t *payload; /* its first payload_len bytes */
    size_t payload_len;     /* min(length, 8) */
} vega_http_h2_frame;

/* Client settings. Initialise with vega_http_client_opts_init. */
typedef struct vega_http_client_opts {
    vega_tls_config *tls;         /* client config for https (retained); NULL: the client makes
                                     its own: system CA store, verification on, ALPN h2 and
                                     http/1.1 (http/1.1 only for an HTTP/1.x request). A
                                     caller's config offers its own ALPN list: h2 or
                                     http/1.1, whichever the server picks, is spoken */
    vega_http1_limits limits;     /* response head limits */
    size_t max_idle_per_origin;   /* pooled idle connections per origin; default 8; 0 = keep
                                     none (every request on a fresh connection) */
    uint64_t idle_timeout_ns;     /* pooled connections older than this are closed; 60 s */
    uint64_t connect_timeout_ns;  /* DNS + TCP + TLS (or the connect hook + TLS); 30 s */
    uint64_t max_body;            /* decoded body bytes at most (decompression bombs);
                                     default 1 GiB; UINT64_MAX = no limit */
    const char *user_agent;       /* default "vega/<version>"; "" = no User-Agent field */
    vega_http_connect_fn connect; /* NULL: DNS and TCP (and the --resolve entries, which a
                                     hook replaces); else every new connection comes from it */
    void *connect_user;           /* passed to connect (retained) */
    const vega_mem *mem;          /* the client's own allocations: the client, pooled
                                     connections, requests' heads, responses and their fields
                                     (retained; NULL = libc; <vega/mem.h>). DNS, TLS and the
                                     decompressors allocate with libc. A failed allocation
                                     fails the call that needed it with -ENOMEM (a response
                                     read: the response becomes unusable, its connection is
                                     not pooled); nothing leaks. */
    /* ---- HTTP/3 over QUIC (layout version 2). QUIC runs its own TLS 1.3 handshake, so the
     * `tls` config above does not apply to it: these say what it trusts and shows. One thing
     * does: the `tls` config's pinned keys (vega_tls_config_set_pinned_keys, read when the
     * first HTTP/3 request makes the endpoint) pin the QUIC handshakes too, a mismatch failing
     * the request with VEGA_ERR_TLS_PINNED, and a pinned client resumes no QUIC session. */
    const vega_crypto_cert_store *quic_ca;    /* trust anchors (retained); NULL: the system
                                                 store (vega_crypto_cert_store_new(NULL,
                                                 NULL)), made on the first HTTP/3 request */
    bool quic_insecure;                       /* do not verify the server (curl's -k) */
    const vega_crypto_cert_chain *quic_chain; /* a client certificate, sent when the server
                                                 asks (retained; with quic_key) */
    const vega_crypto_key *quic_key;
    uint32_t quic_version;     /* the QUIC version connections start with: 0 = VEGA_QUIC_V1, or
                                  VEGA_QUIC_V2 (RFC 9369) */
    bool quic_early_data;      /* on a connection that resumes a session of this client (see
                                  vega_http_client_sessions_load), send a safe request (GET, HEAD,
                                  OPTIONS without a body) in 0-RTT, before the handshake ends. A
                                  0-RTT request can be replayed by an attacker (RFC 8470), which is
                                  why only safe methods go; off by default */
    bool alt_svc;              /* learn the Alt-Svc fields (RFC 7838) of https responses into the
                                  client's cache, and send https requests whose version is 0 over
                                  HTTP/3 to an "h3" alternative the cache holds for their origin,
                                  racing TCP as h3_fallback does; off: the cache is only what the
                                  caller loads and adds, and is not used */
    uint64_t h3_head_start_ns; /* how long an HTTP/3 attempt that may fall back runs alone
                                  before a TCP connection races it; 0 = 200 ms (curl's) */
    uint16_t quic_suites[3];   /* TLS 1.3 cipher suites QUIC offers (VEGA_QUIC_TLS_*, in order);
                                  0 entries = all three (curl's --tls13-ciphers) */
    size_t quic_n_suites;
    /* QUIC's TLS secrets as NSS key log lines (vega_quic_opts.keylog: what curl writes to
     * SSLKEYLOGFILE, for Wireshark); NULL = none. It runs on the client's QUIC tasks, several
     * at once when connections run on several threads: make it thread-safe. The TCP side's key
     * log is the `tls` config's (vega_tls_config_set_keylog_file). */
    void (*quic_keylog)(void *quic_keylog_user, const char *line);
    void *quic_keylog_user; /* passed to quic_keylog (retained) */
    /* ---- proxies (layout version 3) ---- */
    /* NULL: connect directly. Else every new connection goes through this proxy (retained:
     * it and its strings must outlive the client; <vega/proxy.h>): https:// URLs, and http://
     * ones through SOCKS or with proxy->tunnel, by a tunnel (vega_proxy_connect: SOCKS, or HTTP
     * CONNECT), TLS to the origin then running inside it (ALPN h2 too); http:// URLs through an
     * HTTP(S) proxy without tunnel are forwarded: sent to the proxy in absolute-form (RFC 9112
     * §3.2.2) with Proxy-Authorization (Basic) when the proxy has a user, over HTTP/1.1 (no
     * h2c). HTTP/3 cannot go through a proxy: a request for it alone fails with
     * VEGA_ERR_PROXY_UNSUPPORTED, one with h3_fallback goes over TCP, and Alt-Svc is not used.
     * Excluded with `connect` (both set: -EINVAL). */
    const vega_proxy_opts *proxy;
    /* ---- qlog (layout version 4) ---- */
    const char *quic_qlog_dir; /* a qlog trace of each QUIC connection in this directory
                                  (retained; vega_quic_endpoint_opts.qlog_dir:
                                  <ODCID>_client.sqlog, JSON-SEQ, 64 MiB at most each; a
                                  directory that cannot be written to gets no trace, and requests
                                  go on); NULL = none. For debugging: curl's QLOGDIR */
    /* ---- testing aid (layout version 5) ---- */
    bool quic_key_update; /* each HTTP/3 connection starts one 1-RTT key update (RFC 9001 §6) as
                             soon as its handshake is confirmed, to test a peer's handling of
                             it (the QUIC interop runner's keyupdate case); false = none, the
                             default: QUIC needs no update before 2^23 packets */
    /* ---- TCP and addresses (layout version 6) ---- */
    int ip_family;            /* AF_UNSPEC (the default): both; AF_INET or AF_INET6: the
                                 client's own lookups (TCP and QUIC) ask for that family only:
                                 a numeric host of the other fails the request with
                                 -EAFNOSUPPORT, a --resolve entry of the other with
                                 VEGA_ERR_DNS_NO_ADDRESS (curl's -4, -6). Neither a proxy's
                                 nor a connect hook's connections are affected */
    bool tcp_nagle;           /* leave Nagle's algorithm on (no TCP_NODELAY); false, the
                                 default: TCP_NODELAY, as curl (--no-tcp-nodelay) */
    unsigned tcp_keepalive_s; /* SO_KEEPALIVE with this idle time and probe interval on the
                                 client's TCP connections; 0 (the default): none */
    /* ---- testing aid (layout version 7) ---- */
    bool quic_migrate; /* each HTTP/3 connection migrates once to a new local port of the same
                          family (active migration, RFC 9000 §9; vega_quic_ep_conn_migrate):
                          at its first event quic_migrate_after_ns or more after the handshake,
                          once the handshake is confirmed and the server gave a spare
                          connection ID; to test a peer's handling of it (the QUIC interop
                          runner's connectionmigration case, ngtcp2's --change-local-addr).
                          The response's info says how it went (quic_migration). false = none,
                          the default */
    uint64_t quic_migrate_after_ns;
    /* ---- DNS and Happy Eyeballs (layout version 8) ---- */
    const vega_addr *dns_servers; /* the client's own lookups (TCP and QUIC) ask these name
                                     servers, in order (a port of 0 means 53), instead of
                                     resolv.conf's; the hosts file and "localhost" still come
                                     first (vega_dns_lookup). Borrowed during
                                     vega_http_client_new (copied); at most
                                     VEGA_DNS_MAX_NAMESERVERS; 0 entries (the default): the
                                     system's. curl's --dns-servers */
    size_t dns_servers_len;
    unsigned happy_eyeballs_delay_ms; /* the client's TCP connects (vega_tcp_connect_host): how
                                         long one attempt runs before the next address, of the
                                         other family first, is tried (RFC 8305 §5 Connection
                                         Attempt Delay); 0 = 250, below 10 = 10. curl's
                                         --happy-eyeballs-timeout-ms */
    /* ---- the local side (layout version 9) ---- */
    vega_tcp_local local; /* where the client's own TCP connections are bound before they
                             connect (vega_tcp_connect_bound: an interface, an address, a port
                             range; curl's --interface and --local-port; copied). All zero,
                             the default: not bound. A connection that cannot be bound fails
                             its request with that code (-ENODEV, -EADDRNOTAVAIL,
                             -EADDRINUSE, -EAFNOSUPPORT, -EPERM). Neither a proxy's, a
                             connect hook's nor HTTP/3's connections are bound */
    /* ---- debugging (layout version 10) ---- */
    /* Each HTTP/2 frame of the client's connections, as the client writes it to the transport
     * (after the connection preface) and as it reads it, in order per direction (curl's
     * --trace shows them); NULL (the default): none, and then tracing costs nothing. It runs on
     * the connection's reader and writer tasks, two at once per connection and several
     * connections at once: make it thread-safe. It must not call into the client. Frames of a
     * connection that a 101 (h2c Upgrade) made start after the request the 101 answered.
     * h2_frame_user: passed back (retained). */
    void (*h2_frame)(void *h2_frame_user, const vega_http_h2_frame *f);
    void *h2_frame_user;
} vega_http_client_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). Version 2 appended the
 * HTTP/3 fields, version 3 the proxy, version 4 quic_qlog_dir, version 5 quic_key_update,
 * version 6 ip_family, tcp_nagle and tcp_keepalive_s, version 7 quic_migrate and
 * quic_migrate_after_ns, version 8 dns_servers, dns_servers_len and
 * happy_eyeballs_delay_ms, version 9 local, version 10 h2_frame and h2_frame_user; a program
 * built with an older version still works (with their defaults). */
#define VEGA_HTTP_CLIENT_OPTS_VERSION 10

/* Fills o with the defaults. Since 0.1. */
VEGA_API void vega_http_client_opts_init_versioned(vega_http_client_opts *o, int opts_version);
#define vega_http_client_opts_init(...)                                                            \
    vega_http_client_opts_init_versioned(__VA_ARGS__, VEGA_HTTP_CLIENT_OPTS_VERSION)

/* Creates a client. opts: borrowed (copied, strings too), NULL = defaults. Returns 0, -ENOMEM,
 * or a TLS code when the default TLS config cannot be made; -EINVAL (a bad argument, or options of
 * a layout version this library does not know). Context: any thread. Since 0.1. */
VEGA_API int vega_http_client_new_versioned(vega_http_client **out,
                                            const vega_http_client_opts *opts, int opts_version);
#define vega_http_client_new(...)                                                                  \
    vega_http_client_new_versioned(__VA_ARGS__, VEGA_HTTP_CLIENT_OPTS_VERSION)

/* Closes pooled connections and frees c; no request may be in progress. NULL: no-op. After
 * an HTTP/2 or HTTP/3 request, call it inside a task of the runtime (HTTP/2 connections send
 * GOAWAY and their tasks are waited for; the QUIC endpoint closes its connections and waits
 * for its tasks). */
VEGA_API void vega_http_client_free(vega_http_client *c);

/* Connects to addr instead of resolving host for port (curl's --resolve HOST:PORT:ADDR);
 * host: borrowed (copied, case-insensitive). Returns 0, -ENOMEM; -EINVAL (a bad argument). Since
 * 0.1. */
VEGA_API int vega_http_client_add_resolve(vega_http_client *c, const char *host, uint16_t port,
                                          const vega_addr *addr);

/* Reads a request body from the caller: bytes written (> 0), 0 at the end, or a negative code
 * (which fails the request). */
typedef vega_ssize (*vega_http_body_fn)(void *user, void *buf, size_t len);

/* Debug hook: every head as it goes out (is_request) or comes in, raw bytes with CRLFs. An
 * HTTP/3 head, which has no text form on the wire, is shown the way HTTP/1.1 would write it
 * ("GET /x HTTP/3", "Host: <authority>", "HTTP/3 200", fields), with lowercase names. */
typedef void (*vega_http_trace_fn)(void *user, bool is_request, const void *head, size_t len);

/* The HTTP versions of vega_http_client_request.version and vega_http_client_info.version. */
#define VEGA_HTTP_CLIENT_V10 10 /* HTTP/1.0 */
#define VEGA_HTTP_CLIENT_V11 11 /* HTTP/1.1 */
/* HTTP/2: ALPN h2 on https (HTTP/1.1 if the server picks it); on http:// a request without a
 * body asks "Upgrade: h2c" (RFC 7540 §3.2, as curl's --http2) and its response comes on stream
 * 1 of what is then an HTTP/2 connection (HTTP/1.1 when the server does not switch); one with
 * a body goes over HTTP/1.1. */
#define VEGA_HTTP_CLIENT_V2 20
/* A request's version only: HTTP/2 without negotiation, h2c on http:// (RFC 9113 §3.3; curl's
 * --http2-prior-knowledge); on https as VEGA_HTTP_CLIENT_V2. The response's info.version is 20. */
#define VEGA_HTTP_CLIENT_V2_PRIOR 21
#define VEGA_HTTP_CLIENT_V3       30 /* HTTP/3 over QUIC (https only) */

/* Which layer a wire-level error came from. */
typedef enum vega_http_client_wire_kind {
    VEGA_HTTP_CLIENT_WIRE_NONE = 0,
    VEGA_HTTP_CLIENT_WIRE_STREAM,    /* the request's HTTP/3 stream was reset (RESET_STREAM) or
                                        refused: code is an HTTP/3 code (vega_h3_error_name) */
    VEGA_HTTP_CLIENT_WIRE_H3,        /* an HTTP/3 or QPACK connection error closed the connection:
                                        code is the HTTP/3 or QPACK code (vega_h3_error_name) */
    VEGA_HTTP_CLIENT_WIRE_QUIC,      /* the QUIC connection closed with a transport error, timed
                                        out or was reset: code is the QUIC transport code
                                        (vega_quic_transport_error_name) */
    VEGA_HTTP_CLIENT_WIRE_H2_STREAM, /* the request's HTTP/2 stream was reset (RST_STREAM, by
                                        the server, or by us for its malformed response): code
                                        is the HTTP/2 code (vega_h2_error_code_name) */
    VEGA_HTTP_CLIENT_WIRE_H2,        /* an HTTP/2 connection error (GOAWAY with an error, either
                                        way): code is the HTTP/2 code; reason the rule or the
                                        server's debug data */
} vega_http_client_wire_kind;

/* A wire-level error (plain data): the protocol code behind a failure, never packed into the
 * return value (docs/ARCHITECTURE.md, API rules: errors). */
typedef struct vega_http_client_wire_error {
    vega_http_client_wire_kind kind;
    bool local;       /* we found the fault and sent the code; false: the server sent it */
    uint64_t code;    /* as kind says */
    char reason[128]; /* the reason phrase of a close (printable, NUL-terminated; "" when none) */
} vega_http_client_wire_error;

/* Plain data: one request. Start from vega_http_client_request_init, then set fields (a
 * zeroed struct is the same except its deadline, which 0 makes already due). */
typedef struct vega_http_client_request {
    const char *method;            /* NULL = "GET" (or "POST" when a body is given) */
    const char *url;               /* absolute http:// or https:// URL (fragment ignored) */
    const vega_http_field *fields; /* extra fields, borrowed; a Host, User-Agent, Accept or
                                      Accept-Encoding given here replaces the client's, and
                                      one with value.ptr NULL removes it (nothing is sent) */
    size_t nfields;
    const void *body; /* an in-memory body (borrowed), or NULL */
    size_t body_len;
    vega_http_body_fn body_fn; /* or a streamed body (used when body is NULL) */
    void *body_user;
    uint64_t body_length;     /* body_fn's length; VEGA_HTTP_LENGTH_UNKNOWN: chunked */
    bool decompress;          /* ask for br, zstd, gzip, deflate and decode the body */
    bool expect_continue;     /* send "Expect: 100-continue" with a body and wait up to
                                 1 s for 100 before sending it (HTTP/1.1; over HTTP/3 the
                                 body goes at once: a server that does not want it stops
                                 the stream's sending side and answers) */
    bool fresh_connection;    /* do not take a pooled connection */
    int version;              /* VEGA_HTTP_CLIENT_V11 (11), VEGA_HTTP_CLIENT_V10 (10): HTTP/1.x
                                 only; VEGA_HTTP_CLIENT_V2 (20), VEGA_HTTP_CLIENT_V2_PRIOR (21):
                                 HTTP/2 (see those); VEGA_HTTP_CLIENT_V3 (30: HTTP/3 only,
                                 unless h3_fallback; an http:// URL is refused); 0: as 20 on
                                 https and HTTP/1.1 on http, or HTTP/3 where the client's
                                 alt_svc option and cache say so */
    vega_deadline deadline;   /* the whole exchange, to the end of the body; as every
                                 deadline: VEGA_DEADLINE_NEVER = none (the default),
                                 0 = already due */
    vega_http_trace_fn trace; /* NULL: none */
    void *trace_user;
    /* Or a body from a regular file (used when body and body_fn are NULL and body_file is
     * set): body_length bytes (known, not VEGA_HTTP_LENGTH_UNKNOWN) from body_offset of
     * body_fd (borrowed; its position is not moved). Over plain TCP they go by sendfile(2),
     * never through user memory; over TLS they are read, encrypted and written. A file that
     * ends before body_length fails the request with -ENODATA. Such a request may be sent
     * again (a retry on a fresh connection) since the file can be read again. */
    bool body_file;
    int body_fd;
    uint64_t body_offset;
    /* ---- layout version 2 ---- */
    /* With version VEGA_HTTP_CLIENT_V3: start QUIC and, if it has not connected after the
     * client's h3_head_start_ns (or failed sooner), race a TCP connection (HTTP/1.1); the first
     * connected carries the request and the other is dropped (curl's --http3). An http:// URL
     * then simply goes over TCP. A pooled HTTP/3 connection to the origin is used first, then a
     * pooled HTTP/1.1 one (from an earlier fallback). false: HTTP/3 only (--http3-only). */
    bool h3_fallback;
    /* NULL, or where vega_http_client_send writes the wire-level error behind its failure (a
     * stream reset, an HTTP/3 or QUIC connection error); kind NONE when there was none.
     * Written during the call only (later errors: vega_http_client_response_get_error). */
    vega_http_client_wire_error *wire_error;
} vega_http_client_request;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). Version 2 appended
 * h3_fallback and wire_error; a program built with version 1 still works. */
#define VEGA_HTTP_CLIENT_REQUEST_VERSION 2

/* Sets the defaults: every field 0 or NULL, deadline VEGA_DEADLINE_NEVER. Since 0.1. */
VEGA_API void vega_http_client_request_init_versioned(vega_http_client_request *r,
                                                      int opts_version);
#define vega_http_client_request_init(...)                                                         \
    vega_http_client_request_init_versioned(__VA_ARGS__, VEGA_HTTP_CLIENT_REQUEST_VERSION)

/*
 * Sends a request and waits for the response head (1xx responses are skipped; they reach the
 * trace hook). req: borrowed for the call (a body_fn is called inside it). out: receives the
 * response, whose body is read with vega_http_client_response_read.
 * Over HTTP/2, requests to one origin share one connection, each on a stream of its own (a
 * request waits for a slot while the server's SETTINGS_MAX_CONCURRENT_STREAMS are in use);
 * one the server did not process (REFUSED_STREAM, or above a GOAWAY's last stream id) goes once
 * more on a new connection, as does an idempotent one whose pooled connection ended before
 * any answer, unless a body_fn already gave bytes. A stream the server resets fails with
 * -ECONNRESET, a connection error with VEGA_ERR_PROTO (wire_error: the HTTP/2 code), a request
 * GOAWAY excluded that could not go again with VEGA_ERR_H2_GOING_AWAY.
 * Over HTTP/3, a request the server did not process (GOAWAY, or a stream refused with
 * H3_REQUEST_REJECTED) goes once more on a new connection, as does one on a pooled connection
 * that turns out closed, unless a body_fn already gave bytes; one on a connection the server
 * refused (CONNECTION_REFUSED after the handshake: a server that stops) up to 3 times in a row.
 * Returns 0 (any status, 4xx and 5xx included); VEGA_ERR_HTTP_URL (malformed URL);
 * VEGA_ERR_HTTP_SCHEME (not http/https, or http with HTTP/3 only); VEGA_ERR_DNS_NOT_FOUND,
 * VEGA_ERR_DNS_NO_ADDRESS, VEGA_ERR_DNS_SERVER (the host did not resolve, <vega/dns.h>:
 * vega_strerror says "Could not resolve host: ..."; over TCP also when no name server
 * listens);
 * -ECONNREFUSED and other connect codes; -ETIMEDOUT (connect timeout or deadline); a TLS
 * code (vega/tls.h); VEGA_ERR_HTTP_EMPTY_REPLY (the server closed without a response);
 * VEGA_ERR_PROTO (malformed response; over HTTP/3 also a connection error: wire_error says
 * which); over HTTP/3, VEGA_ERR_QUIC_EP_HANDSHAKE (the QUIC handshake failed: a certificate
 * not trusted, no common version or ALPN), VEGA_ERR_QUIC_EP_REFUSED, VEGA_ERR_QUIC_EP_CLOSED
 * (the connection closed or timed out before the response), VEGA_ERR_QUIC_EP_RESET (the server
 * reset the request's stream: wire_error has its code), VEGA_ERR_H3_GOAWAY (GOAWAY, and the
 * request could not be sent again); with a connect hook, the hook's codes, and
 * VEGA_ERR_CALLBACK when it returned 0 without a stream (or a positive value); -ENOMEM;
 * -EINVAL (a bad argument, or options of a layout version this library does not know).
 * Context: inside a task. Since 0.1.
 */
VEGA_API int vega_http_client_send_versioned(vega_http_client *c,
                                             const vega_http_client_request *req,
                                             vega_http_client_response **out, int opts_version);
#define vega_http_client_send(...)                                                                 \
    vega_http_client_send_versioned(__VA_ARGS__, VEGA_HTTP_CLIENT_REQUEST_VERSION)

/* Reads the response body (decoded when decompress was asked and a known coding came back).
 * Over HTTP/2 the bytes read are given back to the server's flow-control windows as they are
 * read (WINDOW_UPDATE), so a response not read stalls its stream, not the connection.
 * Two deadlines apply: dl bounds this call's wait (0 = do not wait), and the request's
 * `deadline` bounds the whole exchange: once it has passed, every read returns -ETIMEDOUT,
 * even when body bytes are already buffered. A wait ends at the earlier of the two.
 * Returns bytes (> 0), 0 at the end, or a negative code: -ETIMEDOUT (either deadline;
 * nothing consumed), -ECANCELED, VEGA_ERR_PROTO, a compress code, VEGA_ERR_HTTP_BODY_TOO_LARGE
 * (max_body); over HTTP/3 VEGA_ERR_QUIC_EP_RESET (the server reset the stream) and
 * VEGA_ERR_QUIC_EP_CLOSED (the connection ended), with vega_http_client_response_get_error
 * telling the code; -ENOMEM; -EINVAL (a bad argument). Context: inside a task. Since 0.1. */
VEGA_API vega_ssize vega_http_client_response_read(vega_http_client_response *r, void *buf,
                                                   size_t len, vega_deadline dl);

/*
 * Reads the whole rest of the body into memory (Go's io.ReadAll over a LimitReader). *out
 * receives a buffer of the returned length plus a NUL (so a text body is a C string), from
 * the client's allocator (opts.mem), owned by the caller: free it with
 * vega_http_client_body_free, it outlives r. max: the most body bytes accepted. dl bounds the
 * whole call, and the request's deadline still applies, as for vega_http_client_response_read.
 * Returns the body length (0 for an empty body, *out then ""); VEGA_ERR_HTTP_BODY_TOO_LARGE
 * (more than max bytes, or more than the client's max_body: nothing is returned and the
 * connection is not reused); -ENOMEM; -EINVAL (r or out NULL); and
 * vega_http_client_response_read's codes. On error *out is NULL and r may be freed (a timeout
 * or a cancellation leaves the bytes read so far consumed: read again only to discard).
 * Context: inside a task. Since 0.1.
 */
VEGA_API vega_ssize vega_http_client_response_read_all(vega_http_client_response *r, void **out,
                                                       size_t max, vega_deadline dl);

/* Frees a body from vega_http_client_response_read_all (c: the client it came from).
 * NULL body: no-op. Context: any thread. Since 0.1. */
VEGA_API void vega_http_client_body_free(vega_http_client *c, void *body);

/* Frees r. A connection whose response was read to the end (and may be kept alive) goes back
 * to the pool; otherwise it is closed. Over HTTP/2 a response not read to the end resets its
 * stream (RST_STREAM CANCEL) and the connection serves on. NULL: no-op. Since 0.1. */
VEGA_API void vega_http_client_response_free(vega_http_client_response *r);

/* Plain data about a response (all borrowed from r, valid until it is freed). */
typedef struct vega_http_client_info {
    int status;
    int version; /* 10, 11, 20, 30 (VEGA_HTTP_CLIENT_V10, _V11, _V2, _V3) */
    vega_http_str reason;
    const vega_http_fields *fields;   /* response header fields, in order */
    const vega_http_fields *trailers; /* after the body was read to the end; else empty */
    uint64_t content_length;          /* VEGA_HTTP_LENGTH_UNKNOWN when not given */
    vega_http_coding coding;          /* the coding being decoded, IDENTITY when none */
    bool reused;                      /* the connection came from the pool */
    const char *alpn;                 /* negotiated protocol on TLS ("h2", "http/1.1"; "h3" over
                                         QUIC), else NULL (h2c: NULL) */
    const char *tls_version;          /* "TLSv1.3", or NULL */
    vega_addr peer;                   /* the address connected to: through an http:// or
                                         SOCKS proxy the proxy's (as curl's %{remote_ip});
                                         empty, AF_UNSPEC, for a connection from a connect
                                         hook, through an https:// proxy, and for HTTP/3
                                         through a SOCKS5 relay */
    /* vega_now() stamps; 0 when the step did not happen (reused connection: no connect;
       connect hook: no DNS, t_connect when the hook returned; HTTP/3: t_connect and t_tls are
       both the end of the QUIC handshake, or when 0-RTT could start) */
    vega_tstamp t_start, t_dns, t_connect, t_tls, t_sent, t_first_byte, t_done;
    /* HTTP/3 only (0 otherwise); appended after 0.1's fields (the library owns this struct) */
    uint32_t quic_version;           /* VEGA_QUIC_V1 or VEGA_QUIC_V2 */
    uint16_t tls_suite;              /* VEGA_QUIC_TLS_AES_128_GCM_SHA256, ... */
    bool tls_resumed;                /* the QUIC handshake resumed a session */
    vega_quic_early_data early_data; /* what became of 0-RTT on the connection */
    uint64_t stream_id;              /* the request's QUIC stream (HTTP/2: its stream id) */
    /* appended in 0.1 after the HTTP/3 fields: the body bytes read so far as they came on the
     * wire, before decoding (the coded size when `coding` is not IDENTITY, else the bytes
     * vega_http_client_response_read returned); framing (chunk lines) not counted. curl's
     * %{size_download} */
    uint64_t body_wire_bytes;
    /* appended after body_wire_bytes: HTTP/3 with opts.quic_migrate, what became of the
     * connection's migration so far: 0 not started (yet); 1 started, the new path not
     * validated yet; 2 the new path validated (the connection moved there); -1 validation
     * failed (the connection went back to its first path); -2 it could not start
     * (quic_migration_err says why: the server sent disable_active_migration, -EINVAL, or
     * a socket error). quic_local: the local address of the connection's path now */
    int quic_migration;
    int quic_migration_err;
    vega_addr quic_local;
} vega_http_client_info;

/* Borrowed view of r. Since 0.1. */
VEGA_API const vega_http_client_info *
vega_http_client_response_info(const vega_http_client_response *r);

/* The wire-level error behind r's last failure (a stream reset, an HTTP/3 or QUIC connection
 * error) into *out; kind NONE when none. Context: any. Since 0.1. */
VEGA_API void vega_http_client_response_get_error(const vega_http_client_response *r,
                                                  vega_http_client_wire_error *out);

/* ---- Alt-Svc (RFC 7838) ----------------------------------------------------------------------
 * The client keeps a cache of alternative services per origin (an https host and port): what
 * the Alt-Svc fields of its responses said (with the alt_svc option) and what the caller loaded
 * or added. Only "h3" alternatives are used to send requests; the others are kept (and saved)
 * as they came. Entries expire (ma, default 24 h); "clear" drops an origin's entries. Bounds:
 * 8 alternatives per origin, 1024 origins; a field is parsed up to 8 KiB. */

/*
 * Adds what an Alt-Svc field value says for the origin host:port (an https origin): value:
 * borrowed, len bytes (RFC 7838 §3: "clear", or alternatives like `h3=":443"; ma=3600`).
 * host: borrowed, without the brackets of an IPv6 literal. Alternatives with a protocol-id
 * that is not a token, an authority without a port, or malformed parameters are skipped, as
 * §3 lets a client ignore them.
 * Returns the alternatives added (0 for "clear" or nothing usable); -EINVAL (a bad argument,
 * or the value is not an Alt-Svc field value); -ENOMEM. Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_client_altsvc_add(vega_http_client *c, const char *host, uint16_t port,
                                         const char *value, size_t len);

/*
 * Looks up the alternative for alpn ("h3") of the origin host:port that expires last. host_out
 * receives its host (the origin's own when the alternative named none), NUL-terminated, cap
 * bytes at most; port_out its port. Returns 0; -ENOENT (none, or all expired); VEGA_ERR_NOBUF;
 * -EINVAL (a bad argument). Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_client_altsvc_lookup(vega_http_client *c, const char *host, uint16_t port,
                                            const char *alpn, char *host_out, size_t cap,
                                            uint16_t *port_out);

/*
 * Loads curl's alt-svc cache file format: one entry per line, nine fields separated by spaces:
 * source ALPN, source host, source port, destination ALPN, destination host, destination port,
 * "YYYYMMDD HH:MM:SS" expiry (GMT, in double quotes), persist (0 or 1), priority; '#' starts a
 * comment line; an IPv6 host is in brackets. Expired and malformed lines are skipped. text:
 * borrowed. Returns the entries loaded; -ENOMEM; -EINVAL (a bad argument). Context: any thread.
 * Since 0.1.
 */
VEGA_API int vega_http_client_altsvc_load(vega_http_client *c, const char *text, size_t len);

/*
 * Writes the cache in curl's alt-svc file format (a comment line first, then the unexpired
 * entries) into out. out NULL with cap 0 asks for the length. Returns the bytes written (no
 * NUL); VEGA_ERR_NOBUF (cap too small: call again with the length the NULL call gives); -EINVAL
 * (a bad argument). Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_http_client_altsvc_save(vega_http_client *c, char *out, size_t cap);

/* ---- QUIC sessions: resumption and 0-RTT across runs ------------------------------------------
 * The client keeps, per server (name and port), the latest TLS session ticket and address
 * validation token (NEW_TOKEN) its QUIC connections received, and offers them when it connects
 * there again: a resumed handshake, no Retry round trip, and 0-RTT with quic_early_data. These
 * two functions move that cache to and from a caller's file. The text holds resumption secrets:
 * keep the file private (mode 0600). */

/*
 * Writes the cache as text lines ("vega-quic-session 1", then one line per server: host, port,
 * when it was saved (Unix seconds), the session and the token in hex, "-" for none) into out.
 * out NULL with cap 0 asks for the length. Returns the bytes written; VEGA_ERR_NOBUF; -EINVAL
 * (a bad argument). Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_http_client_sessions_save(vega_http_client *c, char *out, size_t cap);

/*
 * Loads what vega_http_client_sessions_save wrote; entries older than 7 days (the longest a
 * TLS 1.3 ticket lives, RFC 8446 §4.6.1) and malformed lines are skipped. text: borrowed.
 * Returns the entries loaded; -ENOMEM; -EINVAL (a bad argument, or not such a text).
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_client_sessions_load(vega_http_client *c, const char *text, size_t len);

/*
 * The next request of a redirect: when r's status is 301, 302, 303, 307 or 308 with a
 * Location, resolves it against url into out (NUL-terminated) and says whether the method
 * becomes GET without a body (303 for anything but HEAD; 301/302 for POST, as browsers and curl
 * do). url: the URL r answered (borrowed).
 * Returns the length of out; -ENOENT (not a redirect, or no Location); VEGA_ERR_HTTP_URL (a
 * Location that does not resolve); VEGA_ERR_NOBUF; -EINVAL (a bad argument). Since 0.1.
 */
VEGA_API vega_ssize vega_http_client_redirect(const vega_http_client_response *r, const char *url,
                                              char *out, size_t cap, bool *to_get);

#ifdef __cplusplus
}
#endif
#endif
