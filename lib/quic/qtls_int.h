/* SPDX-License-Identifier: MIT */
/* Internals of the QUIC TLS 1.3 handshake: the engine state, byte builders and readers, and
 * the message codecs (RFC 8446 §4) shared by the client, server and ticket code. */
#ifndef VEGA_QUIC_QTLS_INT_H
#define VEGA_QUIC_QTLS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qtls.h"
#include "quic_int.h"
#include "tls13_keys.h"

/* Handshake message types (RFC 8446 §4). */
enum {
    QT_CLIENT_HELLO = 1,
    QT_SERVER_HELLO = 2,
    QT_NEW_SESSION_TICKET = 4,
    QT_END_OF_EARLY_DATA = 5,
    QT_ENCRYPTED_EXTENSIONS = 8,
    QT_CERTIFICATE = 11,
    QT_CERTIFICATE_REQUEST = 13,
    QT_CERTIFICATE_VERIFY = 15,
    QT_FINISHED = 20,
    QT_KEY_UPDATE = 24,
    QT_MESSAGE_HASH = 254,
};

/* Extension code points (RFC 8446 §4.2, RFC 6066, RFC 7301, RFC 9001 §8.2). */
enum {
    QT_EXT_SERVER_NAME = 0,
    QT_EXT_SUPPORTED_GROUPS = 10,
    QT_EXT_SIGNATURE_ALGORITHMS = 13,
    QT_EXT_ALPN = 16,
    QT_EXT_PRE_SHARED_KEY = 41,
    QT_EXT_EARLY_DATA = 42,
    QT_EXT_SUPPORTED_VERSIONS = 43,
    QT_EXT_COOKIE = 44,
    QT_EXT_PSK_KEY_EXCHANGE_MODES = 45,
    QT_EXT_KEY_SHARE = 51,
    QT_EXT_QUIC_TP = 57,
};

#define QT_TLS13       0x0304
#define QT_MAX_EXTS    64  /* extensions in one message: more is a decode_error */
#define QT_MAX_NAME    255 /* server name and ALPN protocol lengths */
#define QT_MAX_TICKET  1024
#define QT_MAX_SESSION 8192 /* a session blob we accept (tickets + server TP) */

/* ---- byte builder: a growable buffer whose first failure latches --------------------------- */

/* A growing output buffer; mem: its allocator (NULL = libc), kept by vega__qt_buf_free. */
struct qt_buf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
    const vega_quic_mem *mem;
};

void vega__qt_put(struct qt_buf *b, const void *d, size_t n);
void vega__qt_put_int(struct qt_buf *b, uint64_t v, size_t n); /* big-endian, n bytes */
/* Opens an n-byte length prefix; vega__qt_close fills it with what was put since. */
size_t vega__qt_open(struct qt_buf *b, size_t n);
void vega__qt_close(struct qt_buf *b, size_t mark, size_t n);
void vega__qt_buf_free(struct qt_buf *b); /* wipes */

/* ---- reader: every get fails (false) rather than read past the end ------------------------- */

struct qt_rd {
    const uint8_t *p, *end;
};

static inline size_t qt_left(const struct qt_rd *r)
{
    return (size_t)(r->end - r->p);
}

static inline bool qt_int(struct qt_rd *r, size_t n, uint64_t *v)
{
    if (qt_left(r) < n)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++)
        x = x << 8 | r->p[i];
    r->p += n;
    *v = x;
    return true;
}

static inline bool qt_bytes(struct qt_rd *r, size_t n, const uint8_t **out)
{
    if (qt_left(r) < n)
        return false;
    *out = r->p;
    r->p += n;
    return true;
}

/* A vector with an n-byte length prefix, as a sub-reader. */
static inline bool qt_vec(struct qt_rd *r, size_t n, struct qt_rd *sub)
{
    uint64_t l;
    const uint8_t *p;
    if (!qt_int(r, n, &l) || !qt_bytes(r, (size_t)l, &p))
        return false;
    sub->p = p;
    sub->end = p + l;
    return true;
}

static inline uint32_t qt_be(const uint8_t *p, size_t n)
{
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* ---- codecs ---------------------------------------------------------------------------------- */

/* The fields of a ClientHello or ServerHello (HelloRetryRequest included), borrowing from the
 * message. Lists are the raw vector bodies (without their length prefix). */
struct vega__qtls_hello {
    uint16_t legacy_version;
    const uint8_t *random;
    const uint8_t *session_id;
    size_t session_id_len;
    const uint8_t *suites; /* ClientHello: the cipher suite list */
    size_t suites_len;
    uint16_t suite; /* ServerHello */
    bool is_hrr;
    uint16_t ext_types[QT_MAX_EXTS];
    size_t n_ext;
    /* supported_versions: ClientHello, the list contains 0x0304; ServerHello, it selects it. */
    bool has_versions, tls13;
    bool has_groups;
    const uint8_t *groups;
    size_t groups_len;
    bool has_key_share;
    const uint8_t *shares; /* ClientHello: the KeyShareEntry list */
    size_t shares_len;
    uint16_t share_group; /* ServerHello: the entry; HelloRetryRequest: selected_group */
    const uint8_t *share;
    size_t share_len;
    bool has_sigalgs;
    const uint8_t *sigalgs;
    size_t sigalgs_len;
    bool has_sni;
    const uint8_t *sni;
    size_t sni_len;
    bool has_alpn;
    const uint8_t *alpn; /* the ProtocolNameList body */
    size_t alpn_len;
    bool has_tp;
    const uint8_t *tp;
    size_t tp_len;
    bool has_psk_modes, psk_dhe_ke;
    bool early_data;
    bool has_cookie;
    const uint8_t *cookie;
    size_t cookie_len;
    bool has_psk;
    const uint8_t *identities; /* ClientHello: the PskIdentity list body */
    size_t identities_len;
    const uint8_t *binders; /* ClientHello: the PskBinderEntry list body */
    size_t binders_len;
    size_t binders_off;    /* ClientHello: offset in the message of the binders vector */
    uint16_t psk_selected; /* ServerHello */
};

/* Parses a whole ClientHello (msg starts at its 4-byte header). Returns 0 or a TLS alert. */
int vega__qtls_parse_ch(const uint8_t *msg, size_t len, struct vega__qtls_hello *h);
/* Parses a whole ServerHello or HelloRetryRequest. Returns 0 or a TLS alert. */
int vega__qtls_parse_sh(const uint8_t *msg, size_t len, struct vega__qtls_hello *h);

/* EncryptedExtensions fields. */
struct vega__qtls_ee {
    bool has_alpn;
    const uint8_t *alpn; /* the one protocol chosen */
    size_t alpn_len;
    bool has_sni, early_data, has_tp;
    const uint8_t *tp;
    size_t tp_len;
    uint16_t unknown; /* the first extension type EE may not carry, 0 = none */
    bool has_unknown;
};
int vega__qtls_parse_ee(const uint8_t *msg, size_t len, struct vega__qtls_ee *e);

/* Certificate: the request context and the entries, in a walkable form. */
struct vega__qtls_cert {
    const uint8_t *context;
    size_t context_len;
    const uint8_t *list; /* the CertificateEntry list body (validated) */
    size_t list_len;
    size_t count;
};
int vega__qtls_parse_cert(const uint8_t *msg, size_t len, struct vega__qtls_cert *c);
/* The next cert_data of a validated list (r walks c->list). */
bool vega__qtls_cert_next(struct qt_rd *r, const uint8_t **der, size_t *der_len);

/* CertificateVerify. */
int vega__qtls_parse_cv(const uint8_t *msg, size_t len, uint16_t *scheme, const uint8_t **sig,
                        size_t *sig_len);

/* RFC 8446 §4.1.3: the random that marks a ServerHello as a HelloRetryRequest. */
extern const uint8_t vega__qtls_hrr_random[32];

/* ---- the engine ------------------------------------------------------------------------------ */

enum qt_state {
    QS_C_START = 0,
    QS_C_WAIT_SH,
    QS_C_WAIT_EE,
    QS_C_WAIT_CERT_CR,
    QS_C_WAIT_CERT,
    QS_C_WAIT_CV,
    QS_C_WAIT_FIN,
    QS_C_DONE,
    QS_S_WAIT_CH,
    QS_S_WAIT_CERT,
    QS_S_WAIT_CV,
    QS_S_WAIT_FIN,
    QS_S_DONE,
    QS_FAILED,
};

#define QT_MAX_SIGALGS 32

/* A client session (decoded blob) or a server ticket (decrypted): what resumption needs. */
struct qt_session {
    uint16_t suite;
    uint8_t psk[VEGA__QUIC_TLS13_MAX_HASH_LEN];
    size_t psk_len;
    uint64_t time_ms; /* client: received; server: issued */
    uint32_t lifetime_s, age_add, max_early;
    uint8_t alpn[QT_MAX_NAME];
    size_t alpn_len;
    char name[QT_MAX_NAME + 1]; /* server name ("" = none) */
    uint8_t tp_hash[32];        /* server ticket: SHA-256 of the server's TP body */
    const uint8_t *ticket;      /* client: borrowed from cfg->session */
    size_t ticket_len;
    const uint8_t *tp; /* client: the server's TP, borrowed from cfg->session */
    size_t tp_len;
};

struct vega__qtls {
    bool server;
    const vega_quic_tls_opts *cfg;
    struct vega__qtls_cbs cbs;
    uint64_t wall_ms;
    uint8_t *tp;
    size_t tp_len;
    bool has_early_ctx; /* server: early_ctx replaces SHA-256(tp) for the 0-RTT check */
    uint8_t early_ctx[32];
    uint16_t suites[3];
    size_t n_suites;
    vega_crypto_group groups[2];
    size_t n_groups;
    enum qt_state state;
    /* failure */
    int err;
    uint64_t err_wire;
    const char *reason;
    /* the message being reassembled (one level at a time: see vega__qtls_recv) */
    uint8_t *in;
    size_t in_len, in_cap;
    /* the transcript: the messages themselves, hashed on demand (the hash is only known once
     * the suite is) */
    struct qt_buf th;
    /* negotiated */
    uint16_t suite;
    vega_crypto_aead_alg aead;
    vega_crypto_hash_alg hash;
    size_t hash_len;
    struct vega__quic_tls13_schedule ks;
    vega_crypto_kex *kex;
    bool hrr;                /* a HelloRetryRequest was sent / received */
    vega_crypto_group group; /* the key exchange group (after HelloRetryRequest: its) */
    uint8_t random[32];      /* the ClientHello's (client: kept for a second one; both: key log) */
    uint16_t scheme;         /* our CertificateVerify scheme (0 = none fits) */
    bool sni_sent;
    uint8_t alpn[QT_MAX_NAME];
    size_t alpn_len;
    bool resumed;
    vega__qtls_early early;
    vega_crypto_cert_chain *peer_chain;
    vega_crypto_key *peer_key;
    bool cert_req; /* client: the server asked; server: we asked */
    uint16_t peer_sigalgs[QT_MAX_SIGALGS];
    size_t n_peer_sigalgs;
    uint8_t c_app[VEGA__QUIC_TLS13_MAX_HASH_LEN]; /* server: until the client Finished */
    /* client resumption */
    bool have_sess, psk_offered;
    struct qt_session sess;
    uint8_t *peer_tp; /* client: the server's TP, for the next session */
    size_t peer_tp_len;
    /* server */
    bool sni_seen;
    char sni[QT_MAX_NAME + 1];
    uint64_t tickets_sent;
};

/* Records a failure (wire CRYPTO_ERROR + alert) and returns VEGA_ERR_PROTO. */
int vega__qtls_fail(struct vega__qtls *t, int alert, const char *reason);
/* Records a failure with a given code and wire error; returns rc. */
int vega__qtls_fail_rc(struct vega__qtls *t, int rc, uint64_t wire, const char *reason);
int vega__qtls_rand(struct vega__qtls *t, void *buf, size_t len);
/* Appends a message to the transcript. */
int vega__qtls_th_add(struct vega__qtls *t, const uint8_t *msg, size_t len);
/* The transcript hash so far (hash_len bytes), with extra bytes appended (may be NULL). */
int vega__qtls_th_hash(struct vega__qtls *t, const uint8_t *extra, size_t extra_len, uint8_t *out);
/* Replaces the transcript so far (ClientHello1) by its message_hash (§4.4.1). */
int vega__qtls_th_hrr(struct vega__qtls *t);
/* Sets the suite (aead/hash); false for one we do not know. */
bool vega__qtls_set_suite(struct vega__qtls *t, uint16_t suite);
/* Starts a handshake message of type in b; returns its mark for vega__qtls_msg_close. */
size_t vega__qtls_msg_open(struct qt_buf *b, uint8_t type);
/* Ends the message started at mark and adds it to the transcript. */
int vega__qtls_msg_close(struct vega__qtls *t, struct qt_buf *b, size_t mark);
/* Sends what b holds at level and empties b. */
int vega__qtls_flush(struct vega__qtls *t, vega_quic_level level, struct qt_buf *b);
int vega__qtls_secret(struct vega__qtls *t, vega_quic_level level, bool write,
                      const uint8_t *secret);
/* A fresh key pair for g from 32 random bytes (so a seeded rand reproduces it). */
int vega__qtls_kex(struct vega__qtls *t, vega_crypto_group g);
/* Our Certificate (empty when !with_chain), CertificateVerify and Finished, into b. */
int vega__qtls_put_cert(struct vega__qtls *t, struct qt_buf *b, bool with_chain);
int vega__qtls_put_cv(struct vega__qtls *t, struct qt_buf *b, uint16_t scheme);
int vega__qtls_put_finished(struct vega__qtls *t, struct qt_buf *b, const uint8_t *base);
/* The peer's Certificate / CertificateVerify / Finished, common to both sides. */
int vega__qtls_on_cert(struct vega__qtls *t, const uint8_t *msg, size_t len);
int vega__qtls_on_cv(struct vega__qtls *t, const uint8_t *msg, size_t len);
int vega__qtls_check_finished(struct vega__qtls *t, const uint8_t *msg, size_t len,
                              const uint8_t *base);
/* Our signature scheme for the peer's list (a sigalgs body), 0 when none fits our key. */
uint16_t vega__qtls_pick_scheme(const struct vega__qtls *t, const uint8_t *list, size_t len);
extern const uint16_t vega__qtls_sigalgs[6];
bool vega__qtls_has_u16(const uint8_t *list, size_t len, uint16_t v);

int vega__qtls_client_start(struct vega__qtls *t);
int vega__qtls_client_msg(struct vega__qtls *t, vega_quic_level level, const uint8_t *msg,
                          size_t len);
int vega__qtls_server_msg(struct vega__qtls *t, vega_quic_level level, const uint8_t *msg,
                          size_t len);

/* Tickets and sessions (qtls_ticket.c). */
int vega__qtls_ticket_seal(struct vega__qtls *t, const struct qt_session *s, struct qt_buf *out);
/* 0 and *s filled, or 1 when the ticket is not ours or damaged (a full handshake follows). */
int vega__qtls_ticket_open(struct vega__qtls *t, const uint8_t *ticket, size_t len,
                           struct qt_session *s);
int vega__qtls_session_encode(const struct qt_session *s, struct qt_buf *out);
/* 0 and *s (borrowing blob), or -1 when malformed. */
int vega__qtls_session_decode(const uint8_t *blob, size_t len, struct qt_session *s);

/* The digest 0-RTT acceptance compares (tickets carry it): the early context, else the TP. */
int vega__qtls_early_digest(const struct vega__qtls *t, uint8_t *out);

#endif
