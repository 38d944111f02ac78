/* SPDX-License-Identifier: MIT */
/* TLS 1.2 and 1.3 (RFC 5246, RFC 8446) streams over any vega_stream, on OpenSSL 3's libssl driven
 * by the calling task; their configuration (certificates, verification, ALPN RFC 7301, SNI
 * RFC 6066, mutual TLS, resumption, key log), a self-signed certificate generator, and kernel
 * TLS offload. */
#ifndef VEGA_TLS_H
#define VEGA_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/io.h>
#include <vega/stream.h>
#include <vega/time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * TLS codes (-10200 and below; reserved for this module). Every failure also leaves a message
 * on the stream: vega_tls_last_error / vega_tls_get_error. vega_tls_strerror knows these codes
 * and falls back to vega_strerror for the others.
 */
enum {
    VEGA_ERR_TLS_BASE = -10200,
    VEGA_ERR_TLS_HANDSHAKE = -10201,      /* the handshake failed on this side: no common
                                             version, cipher, group or ALPN protocol, a bad
                                             message, the peer closed during the handshake */
    VEGA_ERR_TLS_ALERT = -10202,          /* the peer sent a fatal alert (its name is in the
                                             message and in vega_tls_error.alert) */
    VEGA_ERR_TLS_CERT_UNTRUSTED = -10203, /* the peer's certificate does not chain to a trusted
                                             CA (unknown CA, self-signed, missing issuer) */
    VEGA_ERR_TLS_CERT_EXPIRED = -10204,   /* the peer's certificate (or one in its chain) has
                                             expired or is not valid yet */
    VEGA_ERR_TLS_CERT_NAME = -10205,      /* the peer's certificate does not name the host (DNS
                                             name or IP address) that was asked for */
    VEGA_ERR_TLS_CERT = -10206,           /* another certificate failure (signature, purpose,
                                             path length, ...) */
    VEGA_ERR_TLS_NO_CERT = -10207,        /* mutual TLS: the client sent no certificate and the
                                             server requires one (server side), or the server
                                             said so with a certificate_required alert */
    VEGA_ERR_TLS_TRUNCATED = -10208,      /* the stream ended without close_notify: the data
                                             may have been cut short by an attacker or a crash
                                             (RFC 8446 section 6.1); never reported as EOF */
    VEGA_ERR_TLS_PROTOCOL = -10209,       /* after the handshake: a record that does not
                                             decrypt or parse, an unexpected message, a
                                             KeyUpdate while the kernel holds the keys */
    VEGA_ERR_TLS_CONFIG = -10210,         /* a certificate, key or CA that does not parse, a key
                                             that does not match its certificate, a cipher or
                                             group list OpenSSL rejects */
    VEGA_ERR_TLS_PINNED = -10211,         /* the peer's public key matches none of the keys
                                             pinned with vega_tls_config_set_pinned_keys */
    VEGA_ERR_TLS_LAST = -10212,
};

/* Deprecated (0.1) spellings of the codes above, until 1.0: module codes are
 * VEGA_ERR_<MODULE>_<WHAT> in every header. */
#define VEGA_TLS_ERR_BASE           VEGA_ERR_TLS_BASE
#define VEGA_TLS_ERR_HANDSHAKE      VEGA_ERR_TLS_HANDSHAKE
#define VEGA_TLS_ERR_ALERT          VEGA_ERR_TLS_ALERT
#define VEGA_TLS_ERR_CERT_UNTRUSTED VEGA_ERR_TLS_CERT_UNTRUSTED
#define VEGA_TLS_ERR_CERT_EXPIRED   VEGA_ERR_TLS_CERT_EXPIRED
#define VEGA_TLS_ERR_CERT_NAME      VEGA_ERR_TLS_CERT_NAME
#define VEGA_TLS_ERR_CERT           VEGA_ERR_TLS_CERT
#define VEGA_TLS_ERR_NO_CERT        VEGA_ERR_TLS_NO_CERT
#define VEGA_TLS_ERR_TRUNCATED      VEGA_ERR_TLS_TRUNCATED
#define VEGA_TLS_ERR_PROTOCOL       VEGA_ERR_TLS_PROTOCOL
#define VEGA_TLS_ERR_CONFIG         VEGA_ERR_TLS_CONFIG
#define VEGA_TLS_ERR_LAST           VEGA_ERR_TLS_LAST

/* Message for any code: the TLS codes above, then vega_strerror. Never NULL. Since 0.1. */
VEGA_API const char *vega_tls_strerror(int err);

/* Symbolic name ("VEGA_ERR_TLS_TRUNCATED"), then vega_err_name. Since 0.1. */
VEGA_API const char *vega_tls_err_name(int err);

/* ---- certificates ---------------------------------------------------------------------------- */

/* A certificate chain (leaf first) with its private key. Immutable once made; reference
 * counted, so configurations that use it keep it alive. Any thread. */
typedef struct vega_tls_cert vega_tls_cert;

/*
 * Loads a chain and key from PEM text. chain, key: borrowed (copied); chain holds the leaf
 * certificate first, then any intermediates; key holds one private key (PKCS#8, traditional
 * RSA/EC; unencrypted).
 * Returns 0, -ENOMEM, -EINVAL (NULL or empty), VEGA_ERR_TLS_CONFIG (no certificate, no key, the
 * key does not match the leaf).
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_tls_cert_new_pem(vega_tls_cert **out, const void *chain, size_t chain_len,
                                   const void *key, size_t key_len);

/* vega_tls_cert_new_pem from files (chain_path, key_path: borrowed; key_path NULL = the key is
 * in chain_path). Returns its codes and -errno of open/read (-ENOENT, -EACCES); -EINVAL (a bad
 * argument). Reads the files with blocking I/O: call it at start-up, not on a busy worker. Since
 * 0.1. */
VEGA_API int vega_tls_cert_new_files(vega_tls_cert **out, const char *chain_path,
                                     const char *key_path);

/* Drops the caller's reference (NULL is a no-op). Since 0.1. */
VEGA_API void vega_tls_cert_free(vega_tls_cert *c);

/* ---- self-signed certificates ---------------------------------------------------------------- */

/* What vega_tls_selfsigned_ex makes. Initialise with vega_tls_selfsigned_opts_init. */
typedef struct vega_tls_selfsigned_opts {
    const char *const *names; /* borrowed: subjectAltNames, each a DNS name or an IP address
                                 literal; NULL = localhost, 127.0.0.1, ::1 */
    size_t nnames;
    const char *common_name;     /* subject CN; NULL = the first name */
    int64_t not_before_s;        /* validity start, seconds from now (default -3600) */
    int64_t not_after_s;         /* validity end, seconds from now (default 7 days); negative makes
                                    an expired certificate, for tests */
    bool is_ca;                  /* basicConstraints CA:TRUE, keyCertSign (to sign others) */
    const char *issuer_cert_pem; /* borrowed: sign with this CA (and its key) instead of
                                    self-signing; both or neither */
    const char *issuer_key_pem;
} vega_tls_selfsigned_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_TLS_SELFSIGNED_OPTS_VERSION 1

/* Fills o with the defaults above. Since 0.1. */
VEGA_API void vega_tls_selfsigned_opts_init_versioned(vega_tls_selfsigned_opts *o,
                                                      int opts_version);
#define vega_tls_selfsigned_opts_init(...)                                                         \
    vega_tls_selfsigned_opts_init_versioned(__VA_ARGS__, VEGA_TLS_SELFSIGNED_OPTS_VERSION)

/*
 * Makes a fresh ECDSA P-256 key and an X.509 v3 certificate for it (SHA-256 signature, random
 * 127-bit serial, extendedKeyUsage serverAuth and clientAuth), as PEM text.
 * cert_pem, key_pem: receive owned NUL-terminated strings (release with free()), only on success.
 * vega_tls_selfsigned uses the defaults: SANs localhost, 127.0.0.1 and ::1, valid from an hour
 * ago for 7 days.
 * Returns 0, -ENOMEM, -EINVAL (a name that is neither a DNS name nor an IP address, only one
 * of the issuer fields), VEGA_ERR_TLS_CONFIG (the issuer does not parse).
 * Context: any thread; never suspends (about a millisecond of CPU). Since 0.1.
 */
VEGA_API int vega_tls_selfsigned(char **cert_pem, char **key_pem);
VEGA_API int vega_tls_selfsigned_ex_versioned(char **cert_pem, char **key_pem,
                                              const vega_tls_selfsigned_opts *o, int opts_version);
#define vega_tls_selfsigned_ex(...)                                                                \
    vega_tls_selfsigned_ex_versioned(__VA_ARGS__, VEGA_TLS_SELFSIGNED_OPTS_VERSION)

/* ---- configuration --------------------------------------------------------------------------- */

/* Shared settings for many streams (an SSL_CTX underneath). Reference counted: streams keep
 * their configuration alive. Change settings before the first stream is made; afterwards only
 * the session cache and key log change (internally locked). Every vega_tls_config_* call:
 * Context: any thread; never suspends (the *_file ones read files with blocking I/O). */
typedef struct vega_tls_config vega_tls_config;

typedef enum vega_tls_role {
    VEGA_TLS_CLIENT = 0,
    VEGA_TLS_SERVER = 1,
} vega_tls_role;

/* Peer verification. */
typedef enum vega_tls_verify {
    VEGA_TLS_VERIFY_DEFAULT = 0, /* client: PEER; server: NONE */
    VEGA_TLS_VERIFY_NONE,        /* client: accept any server certificate (testing only);
                                    server: do not ask for a client certificate */
    VEGA_TLS_VERIFY_PEER,        /* client: the server's chain must verify against the CAs and
                                    name the host; server: ask for a client certificate and
                                    verify it when one is sent (mutual TLS, optional) */
    VEGA_TLS_VERIFY_REQUIRE,     /* server: a client certificate must be sent and verify
                                    (mutual TLS, required); client: same as PEER */
} vega_tls_verify;

/* Protocol versions for vega_tls_config_set_versions. */
#define VEGA_TLS_1_2 0x0303
#define VEGA_TLS_1_3 0x0304

/* Kernel TLS offload (Linux TCP_ULP "tls") after the handshake. */
typedef enum vega_tls_ktls_mode {
    VEGA_TLS_KTLS_OFF = 0, /* records are made and opened in user space (default) */
    VEGA_TLS_KTLS_TX,      /* the kernel encrypts what is sent: sendfile goes without a copy */
    VEGA_TLS_KTLS_TXRX,    /* ... and decrypts what is received */
} vega_tls_ktls_mode;

/*
 * Creates a configuration with defaults: TLS 1.2 to 1.3, OpenSSL's default ciphers and groups,
 * verification as VEGA_TLS_VERIFY_DEFAULT against the system CA store (clients), session
 * tickets on (servers), a session cache of 256 host:port entries (clients), no kTLS, no key log.
 * Returns 0, -ENOMEM, -EINVAL (bad role). Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_tls_config_new(vega_tls_config **out, vega_tls_role role);

/* Drops the caller's reference (NULL is a no-op); streams still using cfg keep it alive.
 * Since 0.1. */
VEGA_API void vega_tls_config_free(vega_tls_config *cfg);

/* The role given at creation. Since 0.1. */
VEGA_API vega_tls_role vega_tls_config_role(const vega_tls_config *cfg);

/*
 * The certificate this side presents: a server's default certificate (SNI may choose another),
 * a client's certificate for mutual TLS. cert: retained (a reference is taken).
 * Returns 0, -EINVAL. Since 0.1.
 */
VEGA_API int vega_tls_config_set_cert(vega_tls_config *cfg, vega_tls_cert *cert);

/* vega_tls_cert_new_files + vega_tls_config_set_cert. Returns their codes; -EINVAL (a bad
 * argument). Since 0.1. */
VEGA_API int vega_tls_config_set_cert_files(vega_tls_config *cfg, const char *chain_path,
                                            const char *key_path);

/* vega_tls_cert_new_pem + vega_tls_config_set_cert. Returns their codes; -EINVAL (a bad argument).
 * Since 0.1. */
VEGA_API int vega_tls_config_set_cert_pem(vega_tls_config *cfg, const void *chain, size_t chain_len,
                                          const void *key, size_t key_len);

/* Generates a self-signed certificate (vega_tls_selfsigned) and sets it. Returns 0, -ENOMEM,
 * VEGA_ERR_TLS_CONFIG; -EINVAL (a bad argument). Since 0.1. */
VEGA_API int vega_tls_config_use_selfsigned(vega_tls_config *cfg);

/*
 * Server: presents cert to clients whose SNI is `name` (case-insensitive; "*.example.com"
 * matches exactly one label in front of example.com). Entries are tried in the order added;
 * without a match the default certificate is used. name: borrowed (copied); cert: retained.
 * Returns 0, -ENOMEM, -EINVAL (not a server, empty name). Since 0.1.
 */
VEGA_API int vega_tls_config_add_sni(vega_tls_config *cfg, const char *name, vega_tls_cert *cert);

/*
 * Server: chooses the certificate for a client's SNI. server_name is the name the client sent
 * (borrowed for the call; NULL when it sent none). Returns a certificate (borrowed: it must
 * stay alive until the handshake ends, e.g. owned by user) or NULL for the list of
 * vega_tls_config_add_sni and then the default. Called during a handshake, on the task running
 * it, with the stream locked: it must not suspend or call into the stream.
 */
typedef const vega_tls_cert *(*vega_tls_sni_fn)(void *user, const char *server_name);

/* Installs (fn non-NULL) or removes the SNI callback; user: retained. Returns 0, -EINVAL (not a
 * server). Since 0.1. */
VEGA_API int vega_tls_config_set_sni_callback(vega_tls_config *cfg, vega_tls_sni_fn fn, void *user);

/* Peer verification (see vega_tls_verify). Returns 0, -EINVAL. Since 0.1. */
VEGA_API int vega_tls_config_set_verify(vega_tls_config *cfg, vega_tls_verify mode);

/*
 * The CAs that verify the peer, instead of the system store (clients: the server's chain;
 * servers: client certificates, and their names are sent in the CertificateRequest). Each call
 * adds to the set. path, pem: borrowed.
 * Returns 0, -ENOMEM, -EINVAL, -errno of open (file), VEGA_ERR_TLS_CONFIG (no certificate in it).
 * Since 0.1.
 */
VEGA_API int vega_tls_config_set_ca_file(vega_tls_config *cfg, const char *path);
VEGA_API int vega_tls_config_set_ca_pem(vega_tls_config *cfg, const void *pem, size_t len);

/*
 * ALPN protocols (RFC 7301), most preferred first: a client offers them; a server picks the
 * first of its own list that the client offers, and fails the handshake with a
 * no_application_protocol alert when the client offers only others (a client that offers none
 * gets none). protos: borrowed (copied), n entries of 1..255 bytes; n == 0 clears the list.
 * Returns 0, -ENOMEM, -EINVAL. Since 0.1.
 */
VEGA_API int vega_tls_config_set_alpn(vega_tls_config *cfg, const char *const *protos, size_t n);

/* Lowest and highest protocol version (VEGA_TLS_1_2, VEGA_TLS_1_3; 0 = default: 1.2 / 1.3).
 * Returns 0, -EINVAL. Since 0.1. */
VEGA_API int vega_tls_config_set_versions(vega_tls_config *cfg, int min, int max);

/*
 * Cipher preferences in OpenSSL syntax: tls12 for TLS 1.2 ("ECDHE+AESGCM:ECDHE+CHACHA20"),
 * tls13 for TLS 1.3 suites ("TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256"); NULL leaves
 * one unchanged. A server prefers its own order.
 * Returns 0, -EINVAL, VEGA_ERR_TLS_CONFIG (OpenSSL rejects a list). Since 0.1.
 */
VEGA_API int vega_tls_config_set_ciphers(vega_tls_config *cfg, const char *tls12,
                                         const char *tls13);

/* Key-exchange groups, most preferred first ("X25519:P-256"). Returns 0, -EINVAL,
 * VEGA_ERR_TLS_CONFIG. Since 0.1. */
VEGA_API int vega_tls_config_set_groups(vega_tls_config *cfg, const char *groups);

/* At most this many keys for vega_tls_config_set_pinned_keys. */
#define VEGA_TLS_MAX_PINNED_KEYS 64

/*
 * Client: public key pinning (curl's --pinnedpubkey). Once the handshake has ended, the SHA-256
 * of the server certificate's SubjectPublicKeyInfo (DER; what vega_tls_peer_pubkey_der gives)
 * must equal one of the n digests in sha256 (n * 32 bytes, borrowed: copied), or the handshake
 * fails with VEGA_ERR_TLS_PINNED before any application data goes either way. This is checked
 * in addition to verification, and also with VEGA_TLS_VERIFY_NONE. n == 0 turns pinning off
 * (the default).
 * Returns 0, -ENOMEM, -EINVAL (not a client, sha256 NULL with n > 0, n above
 * VEGA_TLS_MAX_PINNED_KEYS). Since 0.1.
 */
VEGA_API int vega_tls_config_set_pinned_keys(vega_tls_config *cfg, const uint8_t *sha256, size_t n);

/* Client: copies the pinned digests (vega_tls_config_set_pinned_keys) into sha256, cap of them
 * at most (cap * 32 bytes; sha256 may be NULL with cap 0). Returns how many are pinned (0: none;
 * cfg NULL: 0). vega_http_client pins its HTTP/3 connections with them too. Since 0.1. */
VEGA_API size_t vega_tls_config_get_pinned_keys(const vega_tls_config *cfg, uint8_t *sha256,
                                                size_t cap);

/*
 * Client: keep up to max host:port entries of resumable sessions (least recently used
 * dropped first; a TLS 1.3 ticket is used once); 0 turns resumption off. Server: TLS 1.3
 * tickets are stateless (nothing kept per session); TLS 1.2 sessions resumed by ID are kept in
 * a cache of at most max entries (the oldest dropped first); max == 0 turns tickets and the
 * cache off. Default for both: 256 (a server's cache is bounded like every cache here).
 * Returns 0, -EINVAL. Since 0.1.
 */
VEGA_API int vega_tls_config_set_session_cache(vega_tls_config *cfg, size_t max);

/* Appends every secret to path in the NSS key log format that Wireshark reads (what
 * SSLKEYLOGFILE names). path: borrowed; NULL stops logging. For debugging only: whoever reads
 * the file can decrypt the traffic. Returns 0, -errno of open; -EINVAL (a bad argument). Since 0.1.
 */
VEGA_API int vega_tls_config_set_keylog_file(vega_tls_config *cfg, const char *path);

/* Which way a TLS message went (vega_tls_msg_fn). */
typedef enum vega_tls_msg_dir {
    VEGA_TLS_MSG_IN = 0,  /* received from the peer */
    VEGA_TLS_MSG_OUT = 1, /* sent by this side */
} vega_tls_msg_dir;

/* content_type values of vega_tls_msg_fn besides the TLS ContentTypes (20 change_cipher_spec,
 * 21 alert, 22 handshake, 23 application_data; RFC 8446 §5.1). */
#define VEGA_TLS_MSG_RECORD_HEADER 0x100 /* the 5 bytes of a record's header */
#define VEGA_TLS_MSG_INNER_TYPE    0x101 /* TLS 1.3: a protected record's inner content type */

/*
 * A message of the TLS protocol as OpenSSL's message callback reports it: each record header,
 * each handshake message (buf[0] is its HandshakeType), each alert (buf: level, description),
 * each ChangeCipherSpec, and TLS 1.3's inner content type byte; application data itself is not
 * reported. version: the protocol version of the message (0x0304 for TLS 1.3, 0x0303 for
 * TLS 1.2), 0 where it has none (a record header). buf: borrowed for the call, len bytes
 * (plaintext: the handshake in clear, as the peer sees it after decryption).
 * Context: runs inside the stream's OpenSSL calls, under the stream's lock, on whichever thread
 * drives the stream: it must not call into that stream nor suspend; streams of one configuration
 * may call it from several threads at once.
 */
typedef void (*vega_tls_msg_fn)(void *user, vega_tls_msg_dir dir, int version, int content_type,
                                const void *buf, size_t len);

/* Reports the TLS messages of every stream created with cfg from now on to fn (a debugging
 * trace: curl's --trace "SSL data"). fn NULL turns it off (the default, with no cost).
 * user: borrowed, handed to fn. Context: before streams use cfg. Returns 0, -EINVAL (cfg NULL).
 * Since 0.1. */
VEGA_API int vega_tls_config_set_msg_callback(vega_tls_config *cfg, vega_tls_msg_fn fn, void *user);

/* Kernel TLS offload mode (see vega_tls_ktls_mode and vega_tls_ktls_status). Returns 0, -EINVAL.
 * Since 0.1. */
VEGA_API int vega_tls_config_set_ktls(vega_tls_config *cfg, vega_tls_ktls_mode mode);

/* ---- streams --------------------------------------------------------------------------------- */

/* Per-stream settings. Initialise with vega_tls_opts_init. */
typedef struct vega_tls_opts {
    const char *server_name; /* client: the host to verify, a DNS name or an IP address
                                literal; NULL = the chain is verified but no name is checked.
                                Also the SNI (DNS names only: RFC 6066 section 3) and, with
                                port, the session cache key */
    const char *sni;         /* client: SNI to send instead ("" = none); NULL = server_name */
    uint16_t port;           /* client: the server's port, for the session cache key */
} vega_tls_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_TLS_OPTS_VERSION 1

/* Fills o with zeros (no name). Since 0.1. */
VEGA_API void vega_tls_opts_init_versioned(vega_tls_opts *o, int opts_version);
#define vega_tls_opts_init(...) vega_tls_opts_init_versioned(__VA_ARGS__, VEGA_TLS_OPTS_VERSION)

/*
 * A TLS stream over inner: a vega_stream itself (read, write, writev, shutdown, close,
 * sendfile) that encrypts what is written to it and decrypts what it reads from inner. The
 * handshake runs on the first read or write, or with vega_tls_handshake.
 * inner: taken on success (closing the TLS stream closes it). cfg: retained (a reference is
 * taken). opts: borrowed (copied); NULL = vega_tls_opts_init.
 * Stream rules (vega/stream.h) with these TLS specifics:
 *  - read returns 0 only after the peer's close_notify; an end of inner without it is
 *    VEGA_ERR_TLS_TRUNCATED (sticky).
 *  - write is all-or-error; on -ETIMEDOUT or -ECANCELED *written counts the bytes encrypted,
 *    whose records may still be queued: they go out first on the next write, flush, shutdown or
 *    close.
 *  - shutdown(SHUT_WR) sends close_notify, then shuts down inner's writing side; the peer may
 *    keep sending (half-close). SHUT_RD makes later reads return 0.
 *  - close sends close_notify (when the handshake completed and none was sent), flushes, and
 *    closes inner; it does not wait for the peer's close_notify.
 *  - One task may read while another writes (their OpenSSL calls are serialised by a lock that
 *    is never held across a suspension, so tasks may move between workers).
 * Memory: OpenSSL's per-connection state (a few KiB; its record buffers are released when
 * idle, SSL_MODE_RELEASE_BUFFERS) plus a 17 KiB buffer for reading and an output queue, both
 * allocated on use and released when a read with deadline 0 finds nothing to do (the pattern of
 * a connection about to be parked).
 * Returns 0, -ENOMEM, -EINVAL (inner or cfg NULL; a client server_name that is empty),
 * VEGA_ERR_TLS_CONFIG (a server without a certificate or SNI source).
 * Context: any thread; never suspends. Since 0.1.
 */
VEGA_API int vega_tls_stream_new_versioned(vega_stream **out, vega_stream *inner,
                                           vega_tls_config *cfg, const vega_tls_opts *opts,
                                           int opts_version);
#define vega_tls_stream_new(...) vega_tls_stream_new_versioned(__VA_ARGS__, VEGA_TLS_OPTS_VERSION)

/*
 * vega_tls_stream_new over a connected stream socket (TCP or Unix), made with
 * vega_stream_from_sock(sock, flags): the only kind of stream kernel TLS can offload. sock:
 * taken on success unless flags has VEGA_STREAM_BORROW (then retained: it must outlive the
 * stream, which never closes it; the owner may vega_sock_park it between reads, see
 * vega_tls_has_buffered).
 * Returns the codes of vega_tls_stream_new and vega_stream_from_sock; -EINVAL (a bad argument, or
 * options of a layout version this library does not know). Since 0.1.
 */
VEGA_API int vega_tls_stream_from_sock_versioned(vega_stream **out, vega_sock *sock, unsigned flags,
                                                 vega_tls_config *cfg, const vega_tls_opts *opts,
                                                 int opts_version);
#define vega_tls_stream_from_sock(...)                                                             \
    vega_tls_stream_from_sock_versioned(__VA_ARGS__, VEGA_TLS_OPTS_VERSION)

/* True when s was made by vega_tls_stream_new / vega_tls_stream_from_sock. Since 0.1. */
VEGA_API bool vega_tls_is_tls(const vega_stream *s);

/*
 * Runs the handshake to its end (a no-op once it completed). Safe to call again after
 * -ETIMEDOUT or -ECANCELED: the handshake resumes where it stopped. With dl == 0 it does what it
 * can without waiting (a server may park the socket and call it again when readable).
 * Returns 0; -ETIMEDOUT, -ECANCELED (retryable); VEGA_ERR_TLS_HANDSHAKE, VEGA_ERR_TLS_ALERT,
 * VEGA_TLS_ERR_CERT_* , VEGA_ERR_TLS_NO_CERT (fatal and sticky: see vega_tls_last_error);
 * inner's codes (-ECONNRESET, -EPIPE); -ENOMEM; -EINVAL (not a TLS stream).
 * Context: may suspend; inside a task. Since 0.1.
 */
VEGA_API int vega_tls_handshake(vega_stream *s, vega_deadline dl);

/* Writes the records queued by earlier calls (see write and the note on -ETIMEDOUT). Returns 0,
 * -ETIMEDOUT, -ECANCELED, inner's codes, -EINVAL. Context: may suspend. Since 0.1. */
VEGA_API int vega_tls_flush(vega_stream *s, vega_deadline dl);

/* True while s holds something that a read or a flush could process without new input from
 * the peer: decrypted bytes, complete records, queued output. A server may park the socket of a
 * TLS stream when this is false. Context: never suspends. Since 0.1. */
VEGA_API bool vega_tls_has_buffered(vega_stream *s);

/* ---- what the handshake agreed on (valid once vega_tls_handshake returned 0) ----------------- */

/* The negotiated ALPN protocol (borrowed until s is closed), NULL when none. Since 0.1. */
VEGA_API const char *vega_tls_get_alpn(vega_stream *s);

/* "TLSv1.2" or "TLSv1.3" (static), NULL before the handshake. Since 0.1. */
VEGA_API const char *vega_tls_get_version(vega_stream *s);

/* The cipher suite, in IANA style ("TLS_AES_128_GCM_SHA256"; static), NULL before the
 * handshake. Since 0.1. */
VEGA_API const char *vega_tls_get_cipher(vega_stream *s);

/* The SNI: what a server received or a client sent (borrowed until close), NULL when none.
 * Since 0.1. */
VEGA_API const char *vega_tls_get_server_name(vega_stream *s);

/* True when the handshake resumed an earlier session (ticket or session ID). Since 0.1. */
VEGA_API bool vega_tls_session_reused(vega_stream *s);

/*
 * The peer certificate's subject, in RFC 2253 form ("CN=client,O=Example"), into buf (cap bytes,
 * NUL-terminated). Returns the length (NUL excluded), 0 when the peer sent no certificate,
 * VEGA_ERR_NOBUF (cap too small; buf holds a truncated string when cap > 0), -EINVAL.
 * Since 0.1.
 */
VEGA_API vega_ssize vega_tls_peer_subject(vega_stream *s, char *buf, size_t cap);

/* The peer certificate in DER into buf (NULL with cap 0 asks for the length). Returns the
 * length, 0 when there is none, VEGA_ERR_NOBUF, -EINVAL. Since 0.1. */
VEGA_API vega_ssize vega_tls_peer_cert_der(vega_stream *s, void *buf, size_t cap);

/* The peer certificate's public key, its SubjectPublicKeyInfo in DER, into buf (NULL with cap
 * 0 asks for the length). Returns the length, 0 when there is no peer certificate,
 * VEGA_ERR_NOBUF, -ENOMEM, -EINVAL. Since 0.1. */
VEGA_API vega_ssize vega_tls_peer_pubkey_der(vega_stream *s, void *buf, size_t cap);

/* ---- errors ---------------------------------------------------------------------------------- */

/* The last failure of a TLS stream, with what OpenSSL and the peer said. */
typedef struct vega_tls_error {
    int code;            /* the code the failing call returned (0 = no failure yet) */
    int alert;           /* the TLS alert involved (RFC 8446 section 6), -1 if none */
    bool alert_received; /* the peer sent it (else this side sent it) */
    long verify_result;  /* OpenSSL's X509_V_ERR_* of the peer's certificate, 0 = none */
    char message[320];   /* e.g. "certificate verify failed: certificate has expired
                            (notAfter Jan  1 00:00:00 2020 GMT; subject CN=localhost)" */
} vega_tls_error;

/* Copies the last failure of s into *out. Returns 0 or -EINVAL. Context: never suspends; do not
 * call while another task uses s. Since 0.1. */
VEGA_API int vega_tls_get_error(vega_stream *s, vega_tls_error *out);

/* The message of the last failure (borrowed until the next call on s), "" when none.
 * Since 0.1. */
VEGA_API const char *vega_tls_last_error(vega_stream *s);

/* ---- kernel TLS ------------------------------------------------------------------------------ */

/* Where a stream's records are made and opened. */
typedef struct vega_tls_ktls_info {
    bool tx;          /* the kernel encrypts what this side sends */
    bool rx;          /* the kernel decrypts what this side receives */
    bool rx_pending;  /* RX offload asked for, waiting for a record boundary */
    char reason[200]; /* why a direction asked for is not offloaded ("" when all are), e.g.
                         "kernel TLS unavailable: setsockopt(TCP_ULP, \"tls\"): No such file
                         or directory (tcp_available_ulp: mptcp)" */
} vega_tls_ktls_info;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI): fields are only ever
 * appended, and a caller built against an older layout gets that layout's prefix filled,
 * nothing past it. */
#define VEGA_TLS_KTLS_INFO_VERSION 1

/*
 * Reports kernel TLS offload for s. After the handshake, with vega_tls_config_set_ktls on and s
 * made by vega_tls_stream_from_sock over TCP, the keys of AES-128-GCM, AES-256-GCM and
 * ChaCha20-Poly1305 (TLS 1.2 and 1.3) go to the kernel (setsockopt SOL_TLS TLS_TX / TLS_RX).
 * Where that fails (no tls module, another cipher, a Unix socket) the stream stays in user
 * space and works the same; reason says why. TX switches when the handshake ends; RX at the
 * first record boundary with nothing buffered (a TLS 1.3 client waits for the first
 * application data, so that OpenSSL takes the session tickets sent before it). Once offloaded:
 * sendfile goes through the kernel without a copy; close_notify goes out as a control record;
 * tickets that arrive later are skipped; a KeyUpdate (or renegotiation) from the peer fails with
 * VEGA_ERR_TLS_PROTOCOL, as the kernel cannot follow it.
 * Fills *out up to the end of layout info_version (the macro vega_tls_ktls_status passes
 * VEGA_TLS_KTLS_INFO_VERSION). Returns 0, -EINVAL (not a TLS stream, out NULL, or a layout this
 * library does not know: out is left as it was). Context: never suspends. Since 0.1 (versioned
 * since 0.2).
 */
VEGA_API int vega_tls_ktls_status_versioned(vega_stream *s, vega_tls_ktls_info *out,
                                            int info_version);
#define vega_tls_ktls_status(...)                                                                  \
    vega_tls_ktls_status_versioned(__VA_ARGS__, VEGA_TLS_KTLS_INFO_VERSION)

#ifdef __cplusplus
}
#endif
#endif
