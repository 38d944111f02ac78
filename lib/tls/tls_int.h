/* SPDX-License-Identifier: MIT */
/* Internals shared by lib/tls's files: the configuration, the certificate, the stream object,
 * the record counters behind kernel TLS sequence numbers, and the error helpers. */
#ifndef VEGA_TLS_INT_H
#define VEGA_TLS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <vega/sync.h>
#include <vega/tls.h>

#include "base.h"

/* ---- certificates (cert.c) ------------------------------------------------------------------- */

struct vega_tls_cert {
    atomic_uint refs;
    X509 *leaf;
    STACK_OF(X509) * chain; /* intermediates (may be empty) */
    EVP_PKEY *key;
};

vega_tls_cert *vega__tls_cert_ref(vega_tls_cert *c);
/* Installs c on ssl (SSL_use_cert_and_key). Returns 1 or 0. */
int vega__tls_cert_use(SSL *ssl, const vega_tls_cert *c);
/* Reads a whole file into a NUL-terminated heap buffer. Returns 0 or -errno. */
int vega__tls_read_file(const char *path, char **out, size_t *len);

/* ---- configuration (config.c, session.c) ----------------------------------------------------- */

struct sni_entry {
    char *name;
    vega_tls_cert *cert;
};

struct vega__tls_sess;

struct vega_tls_config {
    atomic_uint refs;
    vega_tls_role role;
    SSL_CTX *ctx;
    vega_tls_verify verify;
    bool ca_set; /* a CA was given: no system store */
    bool system_ca_loaded;
    vega_tls_cert *cert; /* default certificate, or NULL */
    struct sni_entry *sni;
    size_t nsni;
    vega_tls_sni_fn sni_fn;
    void *sni_user;
    unsigned char *alpn; /* wire format: length-prefixed names */
    size_t alpn_len;
    uint8_t *pins; /* client: npins SHA-256 digests of acceptable SubjectPublicKeyInfos */
    size_t npins;
    vega_tls_ktls_mode ktls;
    pthread_mutex_t mu; /* guards system_ca_loaded, the key log and the session cache */
    FILE *keylog;
    vega_tls_msg_fn msg_fn; /* vega_tls_config_set_msg_callback: NULL = off */
    void *msg_user;
    /* client session cache: up to cache_max keys, most recently used first */
    size_t cache_max;
    size_t cache_len;
    struct vega__tls_sess *cache_head, *cache_tail;
};

vega_tls_config *vega__tls_config_ref(vega_tls_config *cfg);
/* Whether the SHA-256 of peer's SubjectPublicKeyInfo is one of cfg's pins (true without pins). */
bool vega__tls_pin_ok(const vega_tls_config *cfg, X509 *peer);
/* Loads the system CA store once, for clients that set no CA. Returns 0 or an error code. */
int vega__tls_config_prepare(vega_tls_config *cfg);

/* Session cache (session.c). get returns a referenced session or NULL. */
SSL_SESSION *vega__tls_cache_get(vega_tls_config *cfg, const char *key);
void vega__tls_cache_put(vega_tls_config *cfg, const char *key, SSL_SESSION *sess);
void vega__tls_cache_clear(vega_tls_config *cfg);
size_t vega__tls_cache_len(vega_tls_config *cfg);
/* Sessions in a server's OpenSSL cache (tests). */
size_t vega__tls_server_cache_len(vega_tls_config *cfg);
/* The SSL_CTX new-session callback: files the session under the stream's key. */
int vega__tls_new_session_cb(SSL *ssl, SSL_SESSION *sess);

/* ---- record counting (stream.c) -------------------------------------------------------------- */

/* Follows TLS record boundaries in one direction of the byte stream. */
struct vega__tls_recparse {
    unsigned char hdr[5];
    unsigned hdr_have;
    size_t body_left;
    uint64_t records; /* records completed */
};

/* Feeds n bytes. */
void vega__tls_recparse_feed(struct vega__tls_recparse *p, const unsigned char *b, size_t n);
/* True at a record boundary. */
static inline bool vega__tls_recparse_at_boundary(const struct vega__tls_recparse *p)
{
    return p->hdr_have == 0 && p->body_left == 0;
}
/* Bytes up to the end of the current record header or body (5 at a boundary). */
size_t vega__tls_recparse_to_boundary(const struct vega__tls_recparse *p);

/* ---- the stream (stream.c) ------------------------------------------------------------------- */

/* A growable byte queue: bytes [off, len) of p are pending. */
struct vega__tls_buf {
    unsigned char *p;
    size_t off, len, cap;
};

/* Kernel TLS state of one stream (ktls.c). */
struct vega__tls_ktls {
    bool tx, rx;     /* offloaded */
    bool rx_pending; /* RX wanted: switch at the next record boundary */
    bool ulp;        /* TCP_ULP "tls" attached */
    bool checked;    /* setup ran */
    char *reason;    /* why something was not offloaded: NULL (none) or a
                        VEGA__TLS_REASON_CAP-byte buffer made at the first reason */
};

#define VEGA__TLS_REASON_CAP 200

/* Traffic secrets captured from the key log callback (TLS 1.3), made at the first one when
 * kernel TLS is configured (never with VEGA_TLS_KTLS_OFF), cleansed and freed with the stream
 * (kept after the setup: vega__tls_ktls_crypto_info, which tests call, reads them). */
struct vega__tls_secrets {
    unsigned char client[64], server[64];
    size_t client_len, server_len;
};

/* What a failure leaves for vega_tls_get_error, made at the first failure (a connection that
 * never failed, e.g. an idle keep-alive one, holds none of it) and kept until the stream is
 * freed, so that the message vega_tls_last_error lends stays valid. */
struct vega__tls_diag {
    vega_tls_error err; /* err.code: see vega_tls.err_code */
    char verify_detail[200];
};

struct vega_tls {
    vega_tls_config *cfg; /* retained */
    vega_stream *inner;   /* owned */
    vega_sock *sock;      /* the socket under inner (vega_tls_stream_from_sock), else NULL */
    SSL *ssl;
    BIO *bio;

    pthread_mutex_t mu; /* guards ssl, the buffers' bookkeeping and the state below; never
                           held across a suspension */
    vega_mutex hs_mu;   /* held by the task running the handshake */
    vega_mutex wr_mu;   /* held by the task writing queued records to inner */

    /* input: ciphertext read from inner that OpenSSL has not consumed yet (with RX offload:
     * plaintext read from the kernel that the caller has not taken yet) */
    unsigned char *in;
    size_t in_cap, in_pos, in_end;

    /* output: records OpenSSL made. Producers append to outq under mu; the holder of wr_mu
     * swaps it with outfl and writes outfl to inner without mu. */
    struct vega__tls_buf outq, outfl;

    /* record counters: what OpenSSL consumed, what was read from inner, what OpenSSL wrote */
    struct vega__tls_recparse rd, fill, wr;
    uint64_t rd_at_done, wr_at_done; /* counters when the handshake completed */
    uint64_t wr_at_last_read;        /* wr.records at the last read during the handshake */

    /* state (the bools sit in the holes beside the ints: an idle connection keeps this struct) */
    bool own_sock; /* close sock after inner */
    bool server;
    bool hs_done;   /* OpenSSL finished the handshake (under mu) */
    bool ready;     /* ... its last flight went out, kTLS is set up (atomic) */
    int hs_err;     /* fatal handshake failure (sticky) */
    int rerr, werr; /* sticky read / write failures */
    bool got_close_notify, read_shut;
    bool sent_close_notify, write_shut;
    bool got_app_data;  /* SSL_read returned data at least once */
    bool tx_bypass_err; /* OpenSSL produced a record while the kernel held the write keys */
    bool in_eof;        /* inner reached its end */

    char *server_name; /* client: name to verify / SNI; server: SNI received */
    char *sni;
    char *cache_key;
    char *alpn;                        /* negotiated ALPN protocol, NUL-terminated */
    int alert_sent, alert_recv;        /* last fatal alerts, -1 none */
    long verify_err;                   /* from the verify callback */
    int err_code;                      /* the last failure's code (0 none), kept without diag too */
    struct vega__tls_diag *diag;       /* NULL until the first failure */
    struct vega__tls_secrets *secrets; /* NULL unless kernel TLS is configured */
    struct vega__tls_ktls ktls;
};

/* t's failure record, made on first use (alert -1); NULL when out of memory. Call with t->mu
 * held (or before the stream is shared). */
struct vega__tls_diag *vega__tls_diag(struct vega_tls *t);
/* Cleanses and frees the captured traffic secrets. */
void vega__tls_secrets_drop(struct vega_tls *t);

/* The stream's struct from the SSL (ex_data). */
struct vega_tls *vega__tls_from_ssl(const SSL *ssl);
/* The TLS struct of a vega_stream, or NULL when it is not a TLS stream. */
struct vega_tls *vega__tls_of(const vega_stream *s);
/* Queues ciphertext made by OpenSSL (the BIO's write). Returns 0 or -ENOMEM. */
int vega__tls_buf_append(struct vega__tls_buf *b, const void *p, size_t n);
/* Writes every queued record to inner. Returns 0 or a negative code. */
int vega__tls_flush(struct vega_tls *t, vega_deadline dl);

/* ---- errors (error.c) ------------------------------------------------------------------------ */

/* Records a failure of an SSL call (ssl_err from SSL_get_error) and returns the code; drains
 * the OpenSSL error queue. Call with t->mu held, right after the call. */
int vega__tls_fail(struct vega_tls *t, int ssl_err);
/* Records a failure with a formatted message. Returns code. */
int vega__tls_set_error(struct vega_tls *t, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The RFC name of an alert ("handshake_failure"), "unknown" for others. */
const char *vega__tls_alert_name(int alert);
/* SSL info callback: records alerts sent and received. */
void vega__tls_info_cb(const SSL *ssl, int where, int ret);
/* Verify callback: records details of the first failure. */
int vega__tls_verify_cb(int ok, X509_STORE_CTX *ctx);

/* ---- kernel TLS (ktls.c) --------------------------------------------------------------------- */

/* Key log callback (SSL_CTX): writes the key log file, keeps the TLS 1.3 traffic secrets. */
void vega__tls_keylog_cb(const SSL *ssl, const char *line);

/* Kernel crypto_info of one direction (tx: what this side sends), as struct
 * tls12_crypto_info_* of linux/tls.h, into buf (at least 64 bytes); *len receives its size.
 * Returns 0, -EOPNOTSUPP (cipher or version kTLS cannot take; why filled), -EINVAL (no
 * handshake yet). Call with t->mu held. Testable. */
int vega__tls_ktls_crypto_info(struct vega_tls *t, bool tx, void *buf, size_t *len, char *why,
                               size_t whycap);
/* After the handshake (mu not held, hs_mu held): flushes and moves keys to the kernel as the
 * configuration asks. Returns 0 or a flush error; offload failures only fill ktls.reason. */
int vega__tls_ktls_setup(struct vega_tls *t, vega_deadline dl);
/* Switches RX when rx_pending and the stream is at a record boundary with nothing buffered.
 * Call with mu held. */
void vega__tls_ktls_try_rx(struct vega_tls *t);
/* I/O once offloaded. */
vega_ssize vega__tls_ktls_read(struct vega_tls *t, void *buf, size_t len, vega_deadline dl);
vega_ssize vega__tls_ktls_write(struct vega_tls *t, const void *buf, size_t len, size_t *written,
                                vega_deadline dl);
/* Sends a close_notify alert record through the kernel. Returns 0 or a code. */
int vega__tls_ktls_close_notify(struct vega_tls *t, vega_deadline dl);

#endif
