/* SPDX-License-Identifier: MIT */
/* QUIC core, sans I/O: the connection and stream API of QUIC v1 (RFC 9000, RFC 9001, RFC 9002)
 * and v2 (RFC 9369) — configuration with its TLS 1.3 settings, connections, streams, events,
 * DATAGRAM (RFC 9221), closing, key update, migration, address validation tokens and
 * information — with what both layers share (versions, limits, transport error codes) and the
 * stateless reset helpers a UDP endpoint needs beside its connections. The wire layer (packet
 * headers, protection, frames, transport parameters, Retry, Version Negotiation) is
 * <vega/quic_wire.h>. No I/O, clock or global state: the caller owns the socket and the time. */
#ifndef VEGA_QUIC_H
#define VEGA_QUIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <vega/crypto.h>
#include <vega/err.h>
#include <vega/export.h>
#include <vega/mem.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Errors. Return values are 0 (or a byte count) on success and negative on failure; each
 * contract lists its codes (-EINVAL, VEGA_ERR_CLOSED, VEGA_ERR_FULL, -ENOMEM,
 * VEGA_ERR_CRYPTO_* from crypto.h ...). The QUIC error code a connection closes with
 * (RFC 9000 §20) is a wire value: it comes in the CLOSED event, never in a return value.
 *
 * Threading: a connection is used by one thread at a time; the other functions are reentrant.
 */

/* ---- versions and limits -------------------------------------------------------------------- */

#define VEGA_QUIC_V1 0x00000001u /* RFC 9000 */
#define VEGA_QUIC_V2 0x6b3343cfu /* RFC 9369 */

#define VEGA_QUIC_MAX_CID_LEN      20 /* v1/v2 connection IDs (RFC 9000 §17.2) */
#define VEGA_QUIC_MAX_VARINT       ((1ull << 62) - 1)
#define VEGA_QUIC_RESET_TOKEN_LEN  16
#define VEGA_QUIC_MIN_INITIAL_SIZE 1200 /* datagrams carrying a client Initial (§14.1) */

/* True for the versions this library implements (v1 and v2). Context: any. Since 0.1. */
VEGA_API bool vega_quic_version_is_supported(uint32_t version);

/* Transport error codes (RFC 9000 §20.1): wire values, never return values. */
typedef enum vega_quic_transport_error {
    VEGA_QUIC_NO_ERROR = 0x0,
    VEGA_QUIC_INTERNAL_ERROR = 0x1,
    VEGA_QUIC_CONNECTION_REFUSED = 0x2,
    VEGA_QUIC_FLOW_CONTROL_ERROR = 0x3,
    VEGA_QUIC_STREAM_LIMIT_ERROR = 0x4,
    VEGA_QUIC_STREAM_STATE_ERROR = 0x5,
    VEGA_QUIC_FINAL_SIZE_ERROR = 0x6,
    VEGA_QUIC_FRAME_ENCODING_ERROR = 0x7,
    VEGA_QUIC_TRANSPORT_PARAMETER_ERROR = 0x8,
    VEGA_QUIC_CONNECTION_ID_LIMIT_ERROR = 0x9,
    VEGA_QUIC_PROTOCOL_VIOLATION = 0xa,
    VEGA_QUIC_INVALID_TOKEN = 0xb,
    VEGA_QUIC_APPLICATION_ERROR = 0xc,
    VEGA_QUIC_CRYPTO_BUFFER_EXCEEDED = 0xd,
    VEGA_QUIC_KEY_UPDATE_ERROR = 0xe,
    VEGA_QUIC_AEAD_LIMIT_REACHED = 0xf,
    VEGA_QUIC_NO_VIABLE_PATH = 0x10,
    VEGA_QUIC_VERSION_NEGOTIATION_ERROR = 0x11, /* RFC 9368 §10.2 */
    VEGA_QUIC_CRYPTO_ERROR = 0x100,             /* ..0x1ff: 0x100 + the TLS alert */
} vega_quic_transport_error;

/* Name of a transport error code ("FRAME_ENCODING_ERROR", "CRYPTO_ERROR" for the whole
 * 0x100-0x1ff range); "unknown" otherwise; never NULL. Context: any. Since 0.1. */
VEGA_API const char *vega_quic_transport_error_name(uint64_t code);

/* ---- the QUIC TLS 1.3 handshake: configuration (RFC 9001 §4) -------------------------------- */

/* TLS cipher suites (RFC 8446 §B.4) the QUIC handshake offers or accepts. */
#define VEGA_QUIC_TLS_AES_128_GCM_SHA256       0x1301
#define VEGA_QUIC_TLS_AES_256_GCM_SHA384       0x1302
#define VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256 0x1303

#define VEGA_QUIC_TLS_MAX_ALPN 8 /* protocols offered or accepted */

/*
 * TLS settings of a QUIC endpoint: plain data, borrowed (every pointer must outlive the
 * connections made with it). Zero it, then set what applies; zeros mean the defaults.
 */
typedef struct vega_quic_tls_opts {
    /* Our certificate chain (leaf first) and its private key: required on a server; on a
     * client, sent when the server asks for one (mutual TLS). */
    const vega_crypto_cert_chain *chain;
    const vega_crypto_key *key;
    /* Trust anchors for the peer's chain. Client: required unless insecure; the server's chain
     * is checked against server_name. Server: with verify_peer, the client must present a
     * chain that verifies against ca (CertificateRequest; no certificate -> certificate_required
     * alert). */
    const vega_crypto_cert_store *ca;
    bool verify_peer; /* server only */
    bool insecure;    /* client only: skip chain and name verification (tests, curl -k) */
    /* Client: the server's name, sent as SNI (not for IP literals) and matched against the
     * leaf certificate. */
    const char *server_name;
    /* Application protocols (RFC 7301), in preference order. Client: offered. Server: the first
     * of its own list that the client offered is chosen; no overlap -> no_application_protocol
     * alert (RFC 9001 §8.1). At least one is required on both sides. */
    const char *alpn[VEGA_QUIC_TLS_MAX_ALPN];
    size_t n_alpn;
    /* Cipher suites in preference order (VEGA_QUIC_TLS_*); 0 entries = all three, AES-128-GCM
     * first. */
    uint16_t suites[3];
    size_t n_suites;
    /* Key exchange groups in preference order; 0 entries = X25519 then P-256. A client sends a
     * key share for the first only (a server wanting another answers HelloRetryRequest). */
    vega_crypto_group groups[2];
    size_t n_groups;
    /* Server: 32 bytes that encrypt and authenticate session tickets (AES-256-GCM). NULL = no
     * tickets, so no resumption and no 0-RTT. Rotate it to invalidate every ticket. */
    const uint8_t *ticket_key;
    uint32_t ticket_lifetime_s; /* server: 0 = 7 days (RFC 8446 §4.6.1 maximum) */
    /* 0-RTT (RFC 9001 §4.6). Server: accept early data from valid tickets (tickets then carry
     * max_early_data_size 0xffffffff). Anti-replay caveat: the server only checks the ticket's
     * age against a window (ticket_age_window_ms, 0 = 10 s); a 0-RTT flight captured and
     * replayed inside that window is accepted again, so applications must only act on
     * idempotent requests in 0-RTT (RFC 8446 §8, RFC 9001 §9.2). Client: send early data when
     * the resumed session allows it. */
    bool early_data;
    uint32_t ticket_age_window_ms;
    /* Client: a session saved from an earlier connection (the bytes the session event gave);
     * resumed with PSK (psk_dhe_ke) when still valid for server_name and ALPN; otherwise
     * ignored and a full handshake is done. */
    const uint8_t *session;
    size_t session_len;
} vega_quic_tls_opts;

/* ---- connections (RFC 9000, RFC 9001, RFC 9002) --------------------------------------------- */

/*
 * A QUIC connection, sans I/O, in the ngtcp2 shape: the caller owns the socket and the clock.
 * It feeds every received datagram with vega_quic_conn_read, sends what vega_quic_conn_write
 * produces until it returns 0, arms a timer for vega_quic_conn_expiry and calls
 * vega_quic_conn_handle_expiry when it fires, and drains vega_quic_conn_next_event after each
 * of those calls. Times are nanoseconds on any monotonic clock, the same for every call.
 * A connection is used by one thread at a time; distinct connections are independent.
 */
typedef struct vega_quic_conn vega_quic_conn;

/* The two ends of a datagram's path (plain data; zeroed lengths = unknown). */
typedef struct vega_quic_path {
    struct sockaddr_storage local, remote;
    socklen_t local_len, remote_len;
} vega_quic_path;

typedef enum vega_quic_cc {
    VEGA_QUIC_CC_CUBIC = 0, /* RFC 9438 (default) */
    VEGA_QUIC_CC_NEWRENO,   /* RFC 9002 §7 */
} vega_quic_cc;

/*
 * A connection's allocator: the library-wide vega_mem (<vega/mem.h>). After a failure the call
 * that needed the memory returns -ENOMEM and the connection stays consistent: call again later
 * (a datagram whose processing failed counts as lost, the peer sends it again), except that a
 * handshake cut off mid-message closes the connection (CLOSED event, INTERNAL_ERROR or the
 * internal_error alert).
 */
typedef vega_mem vega_quic_mem;

struct vega_quic_qlog_event; /* <vega/quic_qlog.h> */

/* Connection settings: plain data. vega_quic_opts_init sets the defaults, then set what
 * applies. Pointers are borrowed for the life of the connections made with it. */
#define VEGA_QUIC_MAX_STREAMS_CFG 65536 /* the largest max_streams_bidi/uni accepted */

typedef struct vega_quic_opts {
    uint32_t version;                 /* client: the version to start with (default v1) */
    vega_quic_tls_opts tls;           /* certificates, ALPN, tickets, 0-RTT */
    uint64_t wall_ms;                 /* wall-clock ms since the Unix epoch at creation (tickets,
                                         certificate validity); 0 = no tickets, certificates checked
                                         against the current time */
    uint64_t idle_timeout_ms;         /* max_idle_timeout we advertise (default 30000; 0 = none) */
    uint64_t max_data;                /* initial connection receive window (default 1 MiB) */
    uint64_t max_data_max;            /* auto-tuning cap of that window (default 16 MiB) */
    uint64_t max_stream_data;         /* initial per-stream receive window (default 256 KiB) */
    uint64_t max_stream_data_max;     /* auto-tuning cap (default 8 MiB) */
    uint64_t max_streams_bidi;        /* peer-initiated bidirectional streams allowed (default 100,
                                         at most VEGA_QUIC_MAX_STREAMS_CFG: a peer may open all at
                                         once, each a few hundred bytes until it carries data) */
    uint64_t max_streams_uni;         /* and unidirectional (default 100) */
    uint64_t stream_send_buffer;      /* bytes a stream holds until acknowledged (default 1 MiB) */
    uint64_t max_datagram_frame_size; /* RFC 9221: accept DATAGRAM frames up to this (0 = off,
                                         the default) */
    size_t max_datagram_queue;        /* received datagrams kept until read (default 64) */
    uint64_t ack_delay_exponent;      /* default 3 */
    uint64_t max_ack_delay_ms;        /* default 25 */
    uint64_t active_connection_id_limit; /* default 4 */
    size_t scid_len;                     /* our connection ID length, 1..20 (default 8) */
    size_t pmtu_max; /* DPLPMTUD (RFC 9000 §14.3) probes datagram sizes up to this
                        (default 1452, IPv6 over a 1500-byte MTU; 1200 = off); the
                        write cap and the peer's max_udp_payload_size bound it too */
    bool disable_active_migration;
    vega_quic_cc cc;
    uint64_t initial_rtt_ns; /* default 333 ms (RFC 9002 §6.2.2) */
    const uint8_t *token;    /* client: an address validation token (NEW_TOKEN) */
    size_t token_len;
    /* Randomness (connection IDs, packet number skips, TLS); NULL = vega_crypto_random. A
     * seeded one makes a connection's bytes reproducible in tests. Returns 0 or negative. */
    int (*rand)(void *ud, void *buf, size_t len);
    void *rand_ud;
    /* Allocator, borrowed for the connection's life; NULL = libc (one with a NULL function:
     * -EINVAL). It makes every allocation of the connection: the connection
     * itself, its streams and their buffers, recovery, the TLS handshake, queued events,
     * datagrams, tokens and sessions, and the packet protection key structs. Not covered: the
     * contexts libcrypto allocates inside those keys and for the handshake's cryptography
     * (OpenSSL's own allocator), and the wire-layer functions called directly
     * (vega_quic_keys_new and the like use libc). */
    const vega_quic_mem *mem;
    /* A static 32-byte key (VEGA_QUIC_RESET_KEY_LEN) the stateless reset tokens of our
     * connection IDs derive from (vega_quic_reset_token), so an endpoint that restarted can
     * still reset its old connections; NULL = random tokens. Share it among an endpoint's
     * connections and keep it secret. */
    const uint8_t *reset_key;
    /* ---- layout version 2 ---- */
    /* Key log (debugging only; NULL = none): called with each TLS traffic secret of the
     * connection as a line of the NSS key log format that SSLKEYLOGFILE files hold and
     * Wireshark reads ("<LABEL> <ClientHello random, hex> <secret, hex>", no newline; labels
     * CLIENT_EARLY_TRAFFIC_SECRET, CLIENT_HANDSHAKE_TRAFFIC_SECRET,
     * SERVER_HANDSHAKE_TRAFFIC_SECRET, CLIENT_TRAFFIC_SECRET_0, SERVER_TRAFFIC_SECRET_0), as the
     * handshake derives it and before packets are protected with it. Both sides log all of the
     * connection's secrets; 1-RTT key updates are not logged (they follow from
     * *_TRAFFIC_SECRET_0, RFC 9001 §6.1). line: NUL-terminated, borrowed for the call (wiped
     * after). It runs inside vega_quic_conn_client_new (the 0-RTT secret) and
     * vega_quic_conn_read, on the connection's thread, and must not call any function on the
     * connection. Whoever reads the lines can decrypt the connection: write them only where
     * asked to (curl's SSLKEYLOGFILE habit), to a private file. keylog_user: passed back. */
    void (*keylog)(void *keylog_user, const char *line);
    void *keylog_user;
    /* ---- layout version 3 ---- */
    /* qlog (debugging only; NULL = none, and then nothing of it costs anything): called with
     * each typed event of <vega/quic_qlog.h> (packets sent, received, dropped and lost with
     * their frames, recovery metrics, congestion state, key updates, connection state,
     * transport parameters, the close), which vega_quic_qlog_write turns into qlog JSON-SEQ
     * records. ev and what it points to are borrowed for the call. It runs inside the calls
     * on the connection (its creation included: the first event, CONNECTION_STARTED, names the
     * ODCID), on the connection's thread, and must not call any function on the connection.
     * qlog_user: passed back. */
    void (*qlog)(void *qlog_user, const struct vega_quic_qlog_event *ev);
    void *qlog_user;
    /* ---- layout version 4 ---- */
    /* Client: public key pinning (as vega_tls_config_set_pinned_keys for TCP, curl's
     * --pinnedpubkey). The SHA-256 of the server certificate's SubjectPublicKeyInfo must equal
     * one of the n_pinned_keys digests at pinned_keys (n * 32 bytes, borrowed like the other
     * pointers), checked when the Certificate arrives, with or without tls.insecure; a mismatch
     * fails the handshake with the bad_certificate alert (CRYPTO_ERROR 0x12a) and the reason
     * VEGA_QUIC_PIN_MISMATCH before anything else is sent. A pinned client resumes no session
     * (tls.session is ignored: a resumed handshake shows no certificate to check), so it sends
     * no 0-RTT. 0 entries (the default): no pinning. At most VEGA_QUIC_MAX_PINNED_KEYS. */
    const uint8_t *pinned_keys;
    size_t n_pinned_keys;
    /* ---- layout version 5 ---- */
    /* The first scid_prefix_len bytes (at most VEGA_QUIC_MAX_SCID_PREFIX, and fewer than
     * scid_len) of every connection ID this side issues (the first one and those of
     * NEW_CONNECTION_ID); the rest stays random. A server whose packets a load balancer or a
     * reuseport steering program routes by connection ID (vega-serve --shards: the byte names
     * the shard's UDP socket) marks its IDs this way; such IDs are linkable by an observer
     * (RFC 9000 §5.1: the prefix is the same on every path), as with any routable ID scheme.
     * 0 (the default): all random. */
    uint8_t scid_prefix[4];
    size_t scid_prefix_len;
} vega_quic_opts;
/* Bytes of vega_quic_opts.scid_prefix at most. */
#define VEGA_QUIC_MAX_SCID_PREFIX 4
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). Version 2 appended the
 * key log hook, version 3 the qlog hook, version 4 the pinned keys, version 5 the connection ID
 * prefix; a program built with an older one still works (without them). */
#define VEGA_QUIC_OPTS_VERSION 5

/* At most this many pinned keys (vega_quic_opts.n_pinned_keys). */
#define VEGA_QUIC_MAX_PINNED_KEYS 64
/* The reason phrase of the CONNECTION_CLOSE a pin mismatch sends (vega_quic_opts.pinned_keys):
 * how a caller tells it from another bad_certificate. */
#define VEGA_QUIC_PIN_MISMATCH "public key does not match the pinned public key"

/* Fills c with the defaults. Context: any. Since 0.1. */
VEGA_API void vega_quic_opts_init_versioned(vega_quic_opts *c, int opts_version);
#define vega_quic_opts_init(...) vega_quic_opts_init_versioned(__VA_ARGS__, VEGA_QUIC_OPTS_VERSION)
/* Deprecated (0.1), until 1.0: the names before the API rules (docs/ARCHITECTURE.md). */
typedef vega_quic_opts vega_quic_config;
typedef vega_quic_tls_opts vega_quic_tls_config;
#define vega_quic_config_init vega_quic_opts_init

/*
 * Creates a client connection to path->remote and queues its first flight (the ClientHello in
 * an Initial padded to 1200 bytes; call vega_quic_conn_write). cfg, path: borrowed (cfg's
 * pointers for the connection's life). now: the current time (ns).
 * Returns 0; -EINVAL (a bad setting, an unsupported version, TLS settings
 * refused); -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API int vega_quic_conn_client_new_versioned(vega_quic_conn **out, const vega_quic_opts *cfg,
                                                 const vega_quic_path *path, uint64_t now,
                                                 int opts_version);
#define vega_quic_conn_client_new(...)                                                             \
    vega_quic_conn_client_new_versioned(__VA_ARGS__, VEGA_QUIC_OPTS_VERSION)

/* What a server endpoint knows about a client's first Initial when it creates a connection. */
typedef struct vega_quic_server_params {
    uint32_t version;    /* the Initial's version (v1 or v2) */
    const uint8_t *dcid; /* the Destination CID the client chose for this Initial */
    size_t dcid_len;
    const uint8_t *scid; /* the client's Source CID */
    size_t scid_len;
    /* After a Retry: the client's original Destination CID (from the validated token) and
     * dcid above is the Retry's Source CID; NULL otherwise. */
    const uint8_t *original_dcid;
    size_t original_dcid_len;
    bool address_validated; /* a valid token was presented: no anti-amplification limit */
} vega_quic_server_params;

/*
 * Creates a server connection for a client's first Initial; then feed that datagram with
 * vega_quic_conn_read. cfg, path, sp: borrowed (cfg's pointers for the connection's life).
 * Returns as vega_quic_conn_client_new; -EINVAL (a bad argument, or options of a layout version
 * this library does not know). Context: any. Since 0.1.
 */
VEGA_API int vega_quic_conn_server_new_versioned(vega_quic_conn **out, const vega_quic_opts *cfg,
                                                 const vega_quic_path *path,
                                                 const vega_quic_server_params *sp, uint64_t now,
                                                 int opts_version);
#define vega_quic_conn_server_new(...)                                                             \
    vega_quic_conn_server_new_versioned(__VA_ARGS__, VEGA_QUIC_OPTS_VERSION)

/* Frees c (NULL is fine), with every buffer and key. Context: any. Since 0.1. */
VEGA_API void vega_quic_conn_free(vega_quic_conn *c);

/* ECN codepoints (RFC 3168) as the IP header carries them. */
#define VEGA_QUIC_ECN_NOT_ECT 0
#define VEGA_QUIC_ECN_ECT1    1
#define VEGA_QUIC_ECN_ECT0    2
#define VEGA_QUIC_ECN_CE      3

/*
 * Processes one received datagram. dgram is decrypted in place (so not const); path: the
 * addresses it came on; ecn: its ECN codepoint. Packets that fail to parse or authenticate are
 * dropped silently (RFC 9000 §12.2); a peer protocol violation closes the connection (the
 * CLOSED event and a CONNECTION_CLOSE to send follow).
 * Returns 0; VEGA_ERR_CLOSED (the connection is closed or draining: nothing to do);
 * -ENOMEM; VEGA_ERR_CRYPTO_LIBCRYPTO. Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_conn_read(vega_quic_conn *c, const vega_quic_path *path, uint8_t ecn,
                                 uint8_t *dgram, size_t len, uint64_t now);

/*
 * Writes the next datagram to send into out (cap: at least 1200; more lets it use a larger
 * path MTU once validated). path, ecn: receive where to send it and the ECN codepoint to mark
 * it with (either may be NULL). Call repeatedly until it returns 0: that means nothing more
 * may leave now (no data, congestion window full, or pacing: see vega_quic_conn_expiry).
 * Returns the datagram length; 0; -EINVAL (cap below 1200);
 * VEGA_ERR_CLOSED (closed: nothing will ever be sent again); -ENOMEM;
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: the connection's thread. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_conn_write(vega_quic_conn *c, vega_quic_path *path, uint8_t *ecn,
                                         uint8_t *out, size_t cap, uint64_t now);

/*
 * As vega_quic_conn_write, but fills out with up to max_dgrams datagrams back to back for one
 * UDP GSO send (UDP_SEGMENT): every datagram but the last is exactly *seg bytes, the last may
 * be shorter, and all go to the same path with the same ECN codepoint. seg: receives the
 * segment size. Returns the total bytes (0: nothing to send), or as vega_quic_conn_write.
 * Context: the connection's thread. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_conn_write_gso(vega_quic_conn *c, vega_quic_path *path, uint8_t *ecn,
                                             uint8_t *out, size_t cap, size_t max_dgrams,
                                             size_t *seg, uint64_t now);

/* The next time (ns) vega_quic_conn_handle_expiry must be called (loss detection, ACK delay,
 * pacing, idle and closing timers); UINT64_MAX for none. Context: the connection's thread.
 * Since 0.1. */
VEGA_API uint64_t vega_quic_conn_expiry(const vega_quic_conn *c);

/* Runs the timers due at now (then call vega_quic_conn_write). Returns 0, VEGA_ERR_CLOSED
 * (the connection ended: idle timeout or the closing period is over), -ENOMEM. Context: the
 * connection's thread. Since 0.1. */
VEGA_API int vega_quic_conn_handle_expiry(vega_quic_conn *c, uint64_t now);

typedef enum vega_quic_event_type {
    VEGA_QUIC_EV_NONE = 0,
    VEGA_QUIC_EV_HANDSHAKE_DONE,    /* 1-RTT keys both ways: streams carry 1-RTT data */
    VEGA_QUIC_EV_STREAM_OPENED,     /* the peer opened stream_id */
    VEGA_QUIC_EV_STREAM_READABLE,   /* stream_id has data or its end to read */
    VEGA_QUIC_EV_STREAM_WRITABLE,   /* stream_id has room again after a short write */
    VEGA_QUIC_EV_STREAM_RESET,      /* the peer reset stream_id (RESET_STREAM, error_code) */
    VEGA_QUIC_EV_STREAM_STOP,       /* the peer asked us to stop sending (STOP_SENDING) */
    VEGA_QUIC_EV_STREAM_DONE,       /* everything we sent on stream_id was acknowledged */
    VEGA_QUIC_EV_STREAMS_AVAILABLE, /* the peer raised its stream limit: open may succeed */
    VEGA_QUIC_EV_DATAGRAM,          /* data/len: a DATAGRAM (valid until the next call) */
    VEGA_QUIC_EV_SESSION,           /* client: data/len: a session to resume with later
                                       (vega_quic_tls_opts.session) */
    VEGA_QUIC_EV_NEW_TOKEN,         /* client: data/len: a token for the next connection */
    VEGA_QUIC_EV_EARLY_REJECTED,    /* client: the server refused 0-RTT; what was sent in it
                                       is sent again in 1-RTT */
    VEGA_QUIC_EV_PATH_CHANGED,      /* the peer's address changed (server: the client migrated
                                       or was rebound by a NAT) or our migration completed;
                                       error_code 1 when the new path is validated, 0 when
                                       validation failed and the previous path is back;
                                       vega_quic_conn_get_path tells the addresses */
    VEGA_QUIC_EV_CLOSED,            /* the connection closed: error_code, app, data/len = the
                                       reason phrase; local = we closed it */
} vega_quic_event_type;

typedef struct vega_quic_event {
    vega_quic_event_type type;
    uint64_t stream_id;
    uint64_t error_code;
    bool app;   /* CLOSED: an application error code (else a transport one) */
    bool local; /* CLOSED: we initiated it (a violation the peer made, a timeout, or a close) */
    const uint8_t *data;
    size_t len;
} vega_quic_event;

/* Takes the next pending event. Returns true with *ev set, false when none is pending.
 * Context: the connection's thread. Since 0.1. */
VEGA_API bool vega_quic_conn_next_event(vega_quic_conn *c, vega_quic_event *ev);

/*
 * Opens a stream of ours (bidirectional or unidirectional) and returns its id in *id. Before
 * the handshake is done (client with 0-RTT: while early data is possible) streams may still be
 * opened within the peer's limits; their data waits for keys.
 * Returns 0; VEGA_ERR_FULL (the peer's stream limit is reached: wait for
 * STREAMS_AVAILABLE); VEGA_ERR_CLOSED; -ENOMEM. Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_stream_open(vega_quic_conn *c, bool bidi, uint64_t *id);

/*
 * Queues len bytes on stream id (fin: then end it). Takes what fits in the stream's send
 * buffer; a short count means wait for STREAM_WRITABLE. fin applies only when every byte was
 * taken.
 * Returns the bytes taken; -EINVAL (no such stream, a receive-only stream, or
 * already finished/reset); VEGA_ERR_CLOSED; -ENOMEM. Context: the connection's thread.
 * Since 0.1.
 */
VEGA_API vega_ssize vega_quic_stream_write(vega_quic_conn *c, uint64_t id, const void *data,
                                           size_t len, bool fin);

/* Called when the connection no longer needs bytes it referenced (vega_quic_stream_write_ref):
 * data and len are exactly the pointer passed and the count that call took. */
typedef void (*vega_quic_release_fn)(void *user, const void *data, size_t len);

/*
 * Zero-copy vega_quic_stream_write: queues len bytes on stream id by reference (fin: then end
 * it). data is borrowed, not copied: it must stay valid and unchanged until release(user, data,
 * taken) is called, which happens exactly once for every call that took at least one byte,
 * when the connection no longer needs those bytes: all of them acknowledged, the stream reset
 * (vega_quic_stream_reset, or the peer's STOP_SENDING), or the connection freed. release runs
 * inside vega_quic_conn_read, vega_quic_stream_reset or vega_quic_conn_free and must not call
 * any function on c; it may be NULL (data then outlives the connection, or the caller waits for
 * STREAM_DONE). Packets are built straight from data (the encryption into the datagram is the
 * only copy). Referenced bytes count against stream_send_buffer like copied ones, and both
 * kinds of write may be mixed on a stream in any order. Takes what fits: a short count (0
 * included, also when 1024 referenced pieces are held) means wait for STREAM_WRITABLE; release
 * is called for the count taken only, never when nothing was. fin applies only when every byte
 * was taken.
 * Returns the bytes taken; -EINVAL (no such stream, a receive-only stream, or already
 * finished/reset); VEGA_ERR_CLOSED; -ENOMEM (nothing taken). Context: the connection's thread.
 * Since 0.1.
 */
VEGA_API vega_ssize vega_quic_stream_write_ref(vega_quic_conn *c, uint64_t id, const void *data,
                                               size_t len, bool fin, vega_quic_release_fn release,
                                               void *user);

/* What a stream may always hold under a connection's send budget, whatever the others hold. */
#define VEGA_QUIC_SEND_BUDGET_FLOOR (16u * 1024u)

/*
 * Bounds the bytes all of c's streams hold together in their send buffers (copied or
 * referenced, from written until acknowledged or the stream reset): a write then takes no more
 * than what the budget has left, except that a stream holding less than
 * VEGA_QUIC_SEND_BUDGET_FLOOR may always fill up to it (so one stream never waits for the
 * others to drain: c holds at most bytes + streams x floor). A write cut short by the budget is
 * answered with STREAM_WRITABLE when acknowledgements or resets give room back, like one cut
 * short by stream_send_buffer. bytes 0 = no budget (the default; each stream is still bounded
 * by stream_send_buffer). Bytes already held are kept; a lower budget only stops new writes.
 * Returns 0. Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_conn_set_send_budget(vega_quic_conn *c, uint64_t bytes);

/* Bytes the send buffers of c's streams hold together now (see vega_quic_conn_set_send_budget).
 * Context: the connection's thread. Since 0.1. */
VEGA_API uint64_t vega_quic_conn_get_send_held(const vega_quic_conn *c);

/* Bytes a write to stream id would take now (its stream_send_buffer and the connection's
 * budget); 0 also for no such stream or one that cannot be written. Context: the connection's
 * thread. Since 0.1. */
VEGA_API uint64_t vega_quic_stream_get_send_room(const vega_quic_conn *c, uint64_t id);

/*
 * Reads up to cap in-order bytes from stream id. *fin: set when the stream's end was reached
 * (the stream is then done on the receive side).
 * Returns the bytes read (0 with *fin false: nothing now; wait for STREAM_READABLE);
 * -EINVAL (no such stream, a send-only one); VEGA_ERR_PROTO (the peer reset it:
 * the STREAM_RESET event had the code). Context: the connection's thread. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_stream_read(vega_quic_conn *c, uint64_t id, void *buf, size_t cap,
                                          bool *fin);

/*
 * Zero-copy read, first half: points *data at the next in-order bytes of stream id inside its
 * receive buffer and sets *len to how many lie there in one piece (the rest, if any, comes
 * with the next peek after a consume). *fin: these bytes end the stream. Nothing is taken
 * until vega_quic_stream_consume; *data stays valid until the next call on c other than
 * vega_quic_stream_peek (write what is needed elsewhere before feeding the connection).
 * Returns 0 (*len 0 with *fin false: nothing now; wait for STREAM_READABLE);
 * -EINVAL (no such stream, a send-only one); VEGA_ERR_PROTO (the peer reset it).
 * Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_stream_peek(vega_quic_conn *c, uint64_t id, const uint8_t **data,
                                   size_t *len, bool *fin);

/*
 * Zero-copy read, second half: takes n in-order bytes of stream id (n at most what is
 * readable; usually the *len of the last peek, or less), exactly as vega_quic_stream_read
 * would have: flow-control credit returns to the peer, and reaching the stream's end (a peek
 * said *fin and n took all it gave; n may be 0 for a lone FIN) ends the receive side, which may
 * free the stream (the peeked pointer is then invalid).
 * Returns 0; -EINVAL (no such stream, a send-only one, n beyond what is readable);
 * VEGA_ERR_PROTO (the peer reset it). Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_stream_consume(vega_quic_conn *c, uint64_t id, size_t n);

/* Abandons sending on stream id with an application error code (RESET_STREAM). Returns 0 or
 * -EINVAL. Context: the connection's thread. Since 0.1. */
VEGA_API int vega_quic_stream_reset(vega_quic_conn *c, uint64_t id, uint64_t app_error);

/* Asks the peer to stop sending on stream id (STOP_SENDING); unread data is dropped. Returns 0
 * or -EINVAL. Context: the connection's thread. Since 0.1. */
VEGA_API int vega_quic_stream_stop(vega_quic_conn *c, uint64_t id, uint64_t app_error);

/*
 * Queues an unreliable DATAGRAM (RFC 9221) for the next packets; it is dropped, not
 * retransmitted, if lost. Returns 0; -EINVAL (the peer does not accept datagrams,
 * or len exceeds its max_datagram_frame_size or what fits in one packet); VEGA_ERR_FULL (64
 * queued already); VEGA_ERR_CLOSED; -ENOMEM. Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_datagram_send(vega_quic_conn *c, const void *data, size_t len);

/* Which error-code space a CONNECTION_CLOSE code belongs to (RFC 9000 §20). */
typedef enum vega_quic_close_kind {
    VEGA_QUIC_CLOSE_TRANSPORT = 0,   /* a transport error code (frame type 0x1c) */
    VEGA_QUIC_CLOSE_APPLICATION = 1, /* an application protocol's code (0x1d), e.g. HTTP/3's */
} vega_quic_close_kind;

/*
 * Closes the connection (RFC 9000 §10.2): CONNECTION_CLOSE with code, of the kind's space, and
 * reason (may be NULL; truncated to fit), sent on the next vega_quic_conn_write, then the closing
 * period (3 PTO) during which the connection answers peer packets with the close again. Returns 0;
 * VEGA_ERR_CLOSED (already closing); -EINVAL (a bad argument). Context: the connection's thread.
 * Since 0.1.
 */
VEGA_API int vega_quic_conn_close(vega_quic_conn *c, vega_quic_close_kind kind, uint64_t code,
                                  const char *reason);

/*
 * Starts a 1-RTT key update (RFC 9001 §6). Returns 0; -EAGAIN when an update is not
 * allowed yet (the handshake is not confirmed, the previous update is not acknowledged yet, or
 * it was less than 3 PTO ago: the peer may still hold the keys of two phases back, RFC 9001
 * §6.5); try again later. Context: the
 * connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_conn_key_update(vega_quic_conn *c);

/*
 * Client: moves the connection to a new path (its local address changed, or to probe a better
 * one), RFC 9000 §9: switches to an unused connection ID of the peer's (retiring the old one),
 * sends PATH_CHALLENGE on the new path and carries on there; the congestion window restarts.
 * If validation fails (no PATH_RESPONSE within 3 PTO), the previous path comes back
 * (PATH_CHANGED with error_code 0). path: borrowed.
 * Returns 0; -EINVAL (a server, the handshake is not confirmed, the peer sent
 * disable_active_migration, or a migration is still being validated); VEGA_ERR_FULL (no unused
 * connection ID from the peer yet); VEGA_ERR_CLOSED. Context: the connection's thread.
 * Since 0.1.
 */
VEGA_API int vega_quic_conn_migrate(vega_quic_conn *c, const vega_quic_path *path);

/* The path the connection sends on now. Context: the connection's thread. Since 0.1. */
VEGA_API void vega_quic_conn_get_path(const vega_quic_conn *c, vega_quic_path *out);

/*
 * Our connection IDs the peer may address us by now (for an endpoint's routing table: every
 * one must lead to c). ids: receives up to max pointers (valid until the next call on c),
 * lens their lengths. Returns how many there are (may exceed max). Context: the connection's
 * thread. Since 0.1.
 */
VEGA_API size_t vega_quic_conn_scids(const vega_quic_conn *c, const uint8_t **ids, size_t *lens,
                                     size_t max);

/*
 * Server: gives the client an address validation token for a future connection (NEW_TOKEN,
 * RFC 9000 §8.1.3), sent once the handshake is confirmed and resent until acknowledged. The
 * token's format and its checking are the endpoint's (typically the client's address and a time,
 * authenticated with a key); the client gets it as VEGA_QUIC_EV_NEW_TOKEN and passes it back in
 * vega_quic_opts.token. token: copied (1..512 bytes); a token given before the previous one
 * went out replaces it.
 * Returns 0; -EINVAL (a client, a bad length); VEGA_ERR_CLOSED; -ENOMEM.
 * Context: the connection's thread. Since 0.1.
 */
VEGA_API int vega_quic_conn_new_token(vega_quic_conn *c, const uint8_t *token, size_t len);

/* True once the connection has nothing left to do (drained, timed out, or the closing period
 * ended): free it. Context: the connection's thread. Since 0.1. */
VEGA_API bool vega_quic_conn_is_closed(const vega_quic_conn *c);

/* What became of 0-RTT on a connection. */
typedef enum vega_quic_early_data {
    VEGA_QUIC_EARLY_NONE = 0,    /* not offered (client) or not received (server) */
    VEGA_QUIC_EARLY_OFFERED = 1, /* client: sent, the server's answer not known yet */
    VEGA_QUIC_EARLY_ACCEPTED = 2,
    VEGA_QUIC_EARLY_REJECTED = 3, /* the client sends that data again in 1-RTT */
} vega_quic_early_data;

/* What a connection negotiated and measured (plain data). */
typedef struct vega_quic_conn_info {
    uint32_t version;
    bool handshake_done, handshake_confirmed, resumed;
    vega_quic_early_data early_data;
    char alpn[256];
    uint16_t suite;
    uint64_t smoothed_rtt_ns, min_rtt_ns, cwnd, bytes_in_flight;
    uint64_t pkts_sent, pkts_recv, pkts_lost, bytes_sent, bytes_recv;
    uint64_t key_updates;
    uint64_t migrations; /* peer address changes (server) or our migrations (client) */
    size_t pmtu;         /* the datagram size in use (1200 until DPLPMTUD raised it) */
    uint64_t ptos;       /* probe timeouts that expired (RFC 9002 §6.2), since the start */
} vega_quic_conn_info;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI): fields are only ever
 * appended, and a caller built against an older layout gets that layout's prefix filled,
 * nothing past it (vega_quic_ep_conn_get_info fills it too). */
#define VEGA_QUIC_CONN_INFO_VERSION 1

/* Fills *info up to the end of layout info_version (the macro vega_quic_conn_get_info passes
 * VEGA_QUIC_CONN_INFO_VERSION). Returns 0; -EINVAL (c or info NULL, or a layout this library
 * does not know: info is left as it was). Context: the connection's thread. Since 0.1
 * (versioned since 0.2). */
VEGA_API int vega_quic_conn_get_info_versioned(const vega_quic_conn *c, vega_quic_conn_info *info,
                                               int info_version);
#define vega_quic_conn_get_info(...)                                                               \
    vega_quic_conn_get_info_versioned(__VA_ARGS__, VEGA_QUIC_CONN_INFO_VERSION)

/* The connection ID the peer addresses us by now (for an endpoint's routing table): *len
 * receives its length; the pointer is valid until the next call on c. Context: the
 * connection's thread. Since 0.1. */
VEGA_API const uint8_t *vega_quic_conn_scid(const vega_quic_conn *c, size_t *len);

/* ---- endpoint helpers: stateless reset (RFC 9000 §10.3) ------------------------------------- */

#define VEGA_QUIC_RESET_KEY_LEN 32 /* an endpoint's static key for reset tokens */
#define VEGA_QUIC_RESET_MIN_LEN 21 /* a first byte, 4 unpredictable bytes, the 16-byte token */

/*
 * The stateless reset token of one of our connection IDs, derived from a static key
 * (HMAC-SHA256(key, cid), first 16 bytes; §10.3.2), so an endpoint that lost a connection's
 * state (a restart) can still end it for the peer. Connections made with the same
 * vega_quic_opts.reset_key advertise exactly these tokens. key: 32 bytes; cid: 0..20 bytes;
 * token: receives 16 bytes. All borrowed.
 * Returns 0; -EINVAL (cid above 20 bytes); VEGA_ERR_CRYPTO_LIBCRYPTO.
 * Context: any. Since 0.1.
 */
VEGA_API int vega_quic_reset_token(const uint8_t *key, const uint8_t *cid, size_t cid_len,
                                   uint8_t *token);

/*
 * Writes a Stateless Reset (§10.3) in answer to a datagram of trigger_len bytes that no
 * connection took: a short-header-looking first byte, unpredictable bytes (from
 * vega_crypto_random), then token. It is one byte shorter than the trigger (so two endpoints
 * cannot reset each other in a loop, §10.3.3), at most cap and at most 1200 bytes.
 * Returns the length; 0 when the trigger is too short to answer (the reset would be below
 * VEGA_QUIC_RESET_MIN_LEN bytes: send nothing, §10.3); VEGA_ERR_NOBUF (cap below 21);
 * VEGA_ERR_CRYPTO_LIBCRYPTO. Context: any. Since 0.1.
 */
VEGA_API vega_ssize vega_quic_reset_write(uint8_t *out, size_t cap, size_t trigger_len,
                                          const uint8_t *token);

#ifdef __cplusplus
}
#endif
#endif
