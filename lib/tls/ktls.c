/* SPDX-License-Identifier: MIT */
/* Kernel TLS offload (Linux TCP_ULP "tls", linux/tls.h): traffic keys derived from the key log
 * secrets (TLS 1.3, RFC 8446 section 7.3) or the master secret (TLS 1.2, RFC 5246 section
 * 6.3), sequence numbers from the record counters, and the I/O once the kernel has the keys. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/tls.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include "io_int.h"
#include "tls_int.h"

#ifndef SOL_TLS
#define SOL_TLS 282
#endif
#ifndef TCP_ULP
#define TCP_ULP 31
#endif

/* TLS record content types (RFC 8446 section 5.1). */
enum {
    CT_ALERT = 21,
    CT_HANDSHAKE = 22,
    CT_APPDATA = 23
};

union crypto_info {
    struct tls_crypto_info info;
    struct tls12_crypto_info_aes_gcm_128 gcm128;
    struct tls12_crypto_info_aes_gcm_256 gcm256;
    struct tls12_crypto_info_chacha20_poly1305 chacha;
};

/* ---- the key log ----------------------------------------------------------------------------- */

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* "LABEL <client_random hex> <secret hex>": the secret into out. Returns its length or 0. */
static size_t parse_secret(const char *line, const char *label, unsigned char *out, size_t cap)
{
    size_t ll = strlen(label);
    if (strncmp(line, label, ll) != 0 || line[ll] != ' ')
        return 0;
    const char *p = strchr(line + ll + 1, ' ');
    if (!p)
        return 0;
    p++;
    size_t n = 0;
    while (p[0] && p[1] && n < cap) {
        int hi = hexval(p[0]), lo = hexval(p[1]);
        if (hi < 0 || lo < 0)
            return 0;
        out[n++] = (unsigned char)(hi << 4 | lo);
        p += 2;
    }
    return *p ? 0 : n;
}

void vega__tls_keylog_cb(const SSL *ssl, const char *line)
{
    struct vega_tls *t = vega__tls_from_ssl(ssl);
    if (!t)
        return;
    vega_tls_config *cfg = t->cfg;
    pthread_mutex_lock(&cfg->mu);
    if (cfg->keylog) {
        fputs(line, cfg->keylog);
        fputc('\n', cfg->keylog);
        fflush(cfg->keylog);
    }
    pthread_mutex_unlock(&cfg->mu);
    if (cfg->ktls == VEGA_TLS_KTLS_OFF)
        return; /* keep no secret nobody needs */
    if (!t->secrets && !(t->secrets = calloc(1, sizeof(*t->secrets))))
        return; /* kernel TLS then says it has no secret */
    struct vega__tls_secrets *s = t->secrets;
    size_t n = parse_secret(line, "CLIENT_TRAFFIC_SECRET_0", s->client, sizeof(s->client));
    if (n)
        s->client_len = n;
    n = parse_secret(line, "SERVER_TRAFFIC_SECRET_0", s->server, sizeof(s->server));
    if (n)
        s->server_len = n;
}

/* ---- key derivation -------------------------------------------------------------------------- */

/* RFC 8446 section 7.1: HKDF-Expand-Label(Secret, Label, "", Length). */
static int hkdf_expand_label(const EVP_MD *md, const unsigned char *secret, size_t slen,
                             const char *label, unsigned char *out, size_t olen)
{
    unsigned char info[2 + 1 + 6 + 32 + 1];
    size_t ll = strlen(label);
    if (ll > 32)
        return -EINVAL;
    info[0] = (unsigned char)(olen >> 8);
    info[1] = (unsigned char)olen;
    info[2] = (unsigned char)(6 + ll);
    memcpy(info + 3, "tls13 ", 6);
    memcpy(info + 9, label, ll);
    info[9 + ll] = 0; /* empty context */
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)EVP_MD_get0_name(md), 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, slen),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, 10 + ll),
        OSSL_PARAM_construct_end(),
    };
    int ok = ctx && EVP_KDF_derive(ctx, out, olen, params) == 1;
    EVP_KDF_CTX_free(ctx);
    EVP_KDF_free(kdf);
    ERR_clear_error();
    return ok ? 0 : -ENOMEM;
}

/* RFC 5246 section 6.3: key_block = PRF(master_secret, "key expansion", server_random +
 * client_random). */
static int tls12_key_block(SSL *ssl, const EVP_MD *md, unsigned char *out, size_t olen)
{
    unsigned char master[SSL_MAX_MASTER_KEY_LENGTH], seed[13 + 2 * SSL3_RANDOM_SIZE];
    size_t mlen = SSL_SESSION_get_master_key(SSL_get_session(ssl), master, sizeof(master));
    memcpy(seed, "key expansion", 13);
    if (!mlen || SSL_get_server_random(ssl, seed + 13, SSL3_RANDOM_SIZE) != SSL3_RANDOM_SIZE ||
        SSL_get_client_random(ssl, seed + 13 + SSL3_RANDOM_SIZE, SSL3_RANDOM_SIZE) !=
            SSL3_RANDOM_SIZE)
        return -EINVAL;
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "TLS1-PRF", NULL);
    EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)EVP_MD_get0_name(md), 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET, master, mlen),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, seed, sizeof(seed)),
        OSSL_PARAM_construct_end(),
    };
    int ok = ctx && EVP_KDF_derive(ctx, out, olen, params) == 1;
    EVP_KDF_CTX_free(ctx);
    EVP_KDF_free(kdf);
    OPENSSL_cleanse(master, sizeof(master));
    ERR_clear_error();
    return ok ? 0 : -ENOMEM;
}

static void be64(unsigned char *out, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (unsigned char)v;
}

int vega__tls_ktls_crypto_info(struct vega_tls *t, bool tx, void *buf, size_t *len, char *why,
                               size_t whycap)
{
    if (!t->hs_done)
        return -EINVAL;
    SSL *ssl = t->ssl;
    int version = SSL_version(ssl);
    const SSL_CIPHER *c = SSL_get_current_cipher(ssl);
    int nid = c ? SSL_CIPHER_get_cipher_nid(c) : NID_undef;
    const EVP_MD *md = c ? SSL_CIPHER_get_handshake_digest(c) : NULL;
    size_t keylen;
    int type;
    switch (nid) {
    case NID_aes_128_gcm:
        keylen = 16, type = TLS_CIPHER_AES_GCM_128;
        break;
    case NID_aes_256_gcm:
        keylen = 32, type = TLS_CIPHER_AES_GCM_256;
        break;
    case NID_chacha20_poly1305:
        keylen = 32, type = TLS_CIPHER_CHACHA20_POLY1305;
        break;
    default:
        snprintf(why, whycap, "cipher %s is not one kernel TLS takes (AES-GCM, ChaCha20-Poly1305)",
                 c ? SSL_CIPHER_get_name(c) : "?");
        return -EOPNOTSUPP;
    }
    if ((version != TLS1_2_VERSION && version != TLS1_3_VERSION) || !md) {
        snprintf(why, whycap, "%s is not a version kernel TLS takes", SSL_get_version(ssl));
        return -EOPNOTSUPP;
    }
    /* The keys of this direction are the client's when the client sends them. */
    bool client_keys = tx != t->server;
    bool chacha = type == TLS_CIPHER_CHACHA20_POLY1305;
    unsigned char key[32], iv[12];
    uint64_t seq;
    if (version == TLS1_3_VERSION) {
        const struct vega__tls_secrets *s = t->secrets;
        const unsigned char *sec = s ? (client_keys ? s->client : s->server) : NULL;
        size_t slen = s ? (client_keys ? s->client_len : s->server_len) : 0;
        if (!slen) {
            snprintf(why, whycap, "no TLS 1.3 traffic secret was captured");
            return -EOPNOTSUPP;
        }
        if (hkdf_expand_label(md, sec, slen, "key", key, keylen) < 0 ||
            hkdf_expand_label(md, sec, slen, "iv", iv, 12) < 0)
            return -ENOMEM;
        /* Application traffic keys start at sequence 0 (RFC 8446 section 5.3). A server sent
         * its tickets with them after its last read of the handshake; a client sent nothing. */
        seq = tx ? t->wr.records - (t->server ? t->wr_at_last_read : t->wr_at_done)
                 : t->rd.records - t->rd_at_done;
    } else {
        size_t fixed = chacha ? 12 : 4; /* RFC 7905 / RFC 5288: the implicit IV's length */
        unsigned char kb[2 * 32 + 2 * 12];
        if (tls12_key_block(ssl, md, kb, 2 * keylen + 2 * fixed) < 0)
            return -ENOMEM;
        memcpy(key, kb + (client_keys ? 0 : keylen), keylen);
        memcpy(iv, kb + 2 * keylen + (client_keys ? 0 : fixed), fixed);
        OPENSSL_cleanse(kb, sizeof(kb));
        /* Finished was the first record under these keys (sequence 0), in both directions. */
        seq = 1 + (tx ? t->wr.records - t->wr_at_done : t->rd.records - t->rd_at_done);
    }
    union crypto_info *ci = buf;
    memset(ci, 0, sizeof(*ci));
    ci->info.version = version == TLS1_3_VERSION ? TLS_1_3_VERSION : TLS_1_2_VERSION;
    ci->info.cipher_type = (unsigned short)type;
    unsigned char *k, *civ, *salt, *rec;
    if (chacha) {
        k = ci->chacha.key, civ = NULL, salt = NULL, rec = ci->chacha.rec_seq;
        *len = sizeof(ci->chacha);
    } else if (keylen == 16) {
        k = ci->gcm128.key, civ = ci->gcm128.iv, salt = ci->gcm128.salt, rec = ci->gcm128.rec_seq;
        *len = sizeof(ci->gcm128);
    } else {
        k = ci->gcm256.key, civ = ci->gcm256.iv, salt = ci->gcm256.salt, rec = ci->gcm256.rec_seq;
        *len = sizeof(ci->gcm256);
    }
    memcpy(k, key, keylen);
    be64(rec, seq);
    if (chacha) {
        /* the nonce is iv XOR the sequence number, in both versions */
        memcpy(ci->chacha.iv, iv, TLS_CIPHER_CHACHA20_POLY1305_IV_SIZE);
    } else if (version == TLS1_3_VERSION) {
        memcpy(salt, iv, 4); /* the kernel rebuilds the 12-byte nonce as salt || iv */
        memcpy(civ, iv + 4, 8);
    } else {
        memcpy(salt, iv, 4);
        memcpy(civ, rec, 8); /* explicit nonce: the sequence number, as OpenSSL uses it */
    }
    OPENSSL_cleanse(key, sizeof(key));
    OPENSSL_cleanse(iv, sizeof(iv));
    return 0;
}

/* ---- switching ------------------------------------------------------------------------------- */

/* Appends "; what" to the reason. */
static void add_reason(struct vega_tls *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_reason(struct vega_tls *t, const char *fmt, ...)
{
    if (!t->ktls.reason && !(t->ktls.reason = calloc(1, VEGA__TLS_REASON_CAP)))
        return;
    char *r = t->ktls.reason;
    size_t n = strlen(r);
    if (n + 3 >= VEGA__TLS_REASON_CAP)
        return;
    if (n) {
        memcpy(r + n, "; ", 3);
        n += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r + n, VEGA__TLS_REASON_CAP - n, fmt, ap);
    va_end(ap);
}

/* The ULPs this kernel offers, for messages. */
static void available_ulps(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    int fd = open("/proc/sys/net/ipv4/tcp_available_ulp", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0) {
        snprintf(buf, cap, "none");
        return;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    if (n == 0)
        snprintf(buf, cap, "none");
}

/* Attaches the "tls" upper layer protocol. Call with mu held. */
static bool attach_ulp(struct vega_tls *t)
{
    if (t->ktls.ulp)
        return true;
    if (setsockopt(vega_sock_fd(t->sock), SOL_TCP, TCP_ULP, "tls", sizeof("tls")) < 0) {
        int e = errno;
        char ulps[64];
        available_ulps(ulps, sizeof(ulps));
        add_reason(t,
                   "kernel TLS unavailable: setsockopt(TCP_ULP, \"tls\"): %s "
                   "(tcp_available_ulp: %s)",
                   strerror(e), ulps);
        return false;
    }
    t->ktls.ulp = true;
    return true;
}

/* Hands one direction's keys to the kernel. Call with mu held. */
static bool install(struct vega_tls *t, bool tx)
{
    union crypto_info ci;
    size_t len = 0;
    char why[120] = "";
    int r = vega__tls_ktls_crypto_info(t, tx, &ci, &len, why, sizeof(why));
    if (r < 0) {
        add_reason(t, "%s", why[0] ? why : vega_strerror(r));
        return false;
    }
    r = setsockopt(vega_sock_fd(t->sock), SOL_TLS, tx ? TLS_TX : TLS_RX, &ci, (socklen_t)len);
    int e = errno;
    OPENSSL_cleanse(&ci, sizeof(ci));
    if (r < 0) {
        add_reason(t, "setsockopt(SOL_TLS, %s): %s", tx ? "TLS_TX" : "TLS_RX", strerror(e));
        return false;
    }
    return true;
}

int vega__tls_ktls_setup(struct vega_tls *t, vega_deadline dl)
{
    pthread_mutex_lock(&t->mu);
    vega_tls_ktls_mode mode = t->cfg->ktls;
    if (mode == VEGA_TLS_KTLS_OFF || t->ktls.checked) {
        pthread_mutex_unlock(&t->mu);
        return 0;
    }
    vega_addr a;
    if (!t->sock) {
        add_reason(t, "the inner stream is not a socket (kernel TLS needs "
                      "vega_tls_stream_from_sock over TCP)");
    } else if (vega_sock_local_addr(t->sock, &a) < 0 ||
               (vega_addr_family(&a) != AF_INET && vega_addr_family(&a) != AF_INET6)) {
        add_reason(t, "kernel TLS needs a TCP socket");
    } else if (SSL_get_rbio(t->ssl) != t->bio) {
        add_reason(t, "internal: unexpected BIO");
    } else {
        /* Every record OpenSSL made is on its way (the handshake flushed): what the kernel
         * encrypts from now on follows them in the byte stream. */
        VEGA_ASSERT(t->outq.off == t->outq.len && t->outfl.off == t->outfl.len);
        union crypto_info probe;
        size_t len;
        char why[120] = "";
        if (vega__tls_ktls_crypto_info(t, true, &probe, &len, why, sizeof(why)) < 0) {
            add_reason(t, "%s", why);
        } else if (attach_ulp(t)) {
            t->ktls.tx = install(t, true);
            if (mode == VEGA_TLS_KTLS_TXRX)
                t->ktls.rx_pending = true;
        }
        OPENSSL_cleanse(&probe, sizeof(probe));
    }
    t->ktls.checked = true;
    vega__tls_ktls_try_rx(t);
    pthread_mutex_unlock(&t->mu);
    return 0;
}

void vega__tls_ktls_try_rx(struct vega_tls *t)
{
    if (!t->ktls.rx_pending)
        return;
    /* The kernel must find the next record whole in the socket, and OpenSSL must hold nothing
     * unread. */
    if (t->in_pos != t->in_end || (t->sock && vega__sock_park_holds(t->sock)) ||
        !vega__tls_recparse_at_boundary(&t->fill) || !vega__tls_recparse_at_boundary(&t->rd) ||
        SSL_pending(t->ssl) > 0 || SSL_has_pending(t->ssl))
        return;
    /* A TLS 1.3 server sends its tickets right after the handshake: let OpenSSL take them
     * before the kernel would (it can only skip them), i.e. until application data came. */
    if (!t->server && SSL_version(t->ssl) == TLS1_3_VERSION && !t->got_app_data)
        return;
    t->ktls.rx_pending = false;
    t->ktls.rx = install(t, false);
    t->in_pos = t->in_end = 0;
}

void vega__tls_secrets_drop(struct vega_tls *t)
{
    if (t->secrets) {
        OPENSSL_clear_free(t->secrets, sizeof(*t->secrets));
        t->secrets = NULL;
    }
}

/* ---- I/O through the kernel ------------------------------------------------------------------ */

__attribute__((format(printf, 3, 4))) static int rx_fail(struct vega_tls *t, int code,
                                                         const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&t->mu);
    if (!t->rerr)
        t->rerr = vega__tls_set_error(t, code, "%s", msg);
    code = t->rerr;
    pthread_mutex_unlock(&t->mu);
    return code;
}

/* One record from the kernel into t->in: returns its content type, or a negative code. */
static int recv_record(struct vega_tls *t, size_t *n, vega_deadline dl)
{
    int fd = vega_sock_fd(t->sock);
    int r = vega__io_check_cancel();
    if (r < 0)
        return r;
    for (;;) {
        char cbuf[CMSG_SPACE(sizeof(unsigned char))];
        struct iovec iov = {.iov_base = t->in, .iov_len = t->in_cap};
        struct msghdr msg = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
        ssize_t k = recvmsg(fd, &msg, MSG_DONTWAIT);
        if (k >= 0) {
            int type = CT_APPDATA;
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
                if (c->cmsg_level == SOL_TLS && c->cmsg_type == TLS_GET_RECORD_TYPE)
                    type = *(unsigned char *)CMSG_DATA(c);
            *n = (size_t)k;
            return k == 0 ? 0 : type;
        }
        int e = errno;
        if (e == EINTR)
            continue;
        if (e == EAGAIN || e == EWOULDBLOCK) {
            r = vega__io_wait(fd, POLLIN, dl);
            if (r < 0)
                return r;
            continue;
        }
        if (e == EBADMSG || e == EMSGSIZE || e == EINVAL || e == EIO)
            return rx_fail(t, VEGA_ERR_TLS_PROTOCOL, "kernel TLS: bad record from the peer (%s)",
                           strerror(e));
        return -e;
    }
}

vega_ssize vega__tls_ktls_read(struct vega_tls *t, void *buf, size_t len, vega_deadline dl)
{
    for (;;) {
        pthread_mutex_lock(&t->mu);
        if (t->in_pos < t->in_end) {
            size_t n = VEGA__MIN(len, t->in_end - t->in_pos);
            memcpy(buf, t->in + t->in_pos, n);
            t->in_pos += n;
            pthread_mutex_unlock(&t->mu);
            return (vega_ssize)n;
        }
        if (!t->in) {
            t->in = malloc(17 * 1024);
            if (!t->in) {
                pthread_mutex_unlock(&t->mu);
                return -ENOMEM;
            }
            t->in_cap = 17 * 1024;
        }
        t->in_pos = t->in_end = 0;
        pthread_mutex_unlock(&t->mu);
        size_t n = 0;
        int type = recv_record(t, &n, dl);
        if (type < 0)
            return type;
        if (type == 0) /* the socket ended without close_notify */
            return rx_fail(t, VEGA_ERR_TLS_TRUNCATED,
                           "TLS stream truncated: the peer closed the connection without "
                           "close_notify%s",
                           "");
        if (type == CT_APPDATA) {
            pthread_mutex_lock(&t->mu);
            t->in_end = n;
            pthread_mutex_unlock(&t->mu);
            continue;
        }
        if (type == CT_ALERT && n >= 2) {
            if (t->in[1] == 0) { /* close_notify */
                pthread_mutex_lock(&t->mu);
                t->got_close_notify = true;
                pthread_mutex_unlock(&t->mu);
                return 0;
            }
            pthread_mutex_lock(&t->mu);
            t->alert_recv = t->in[1];
            struct vega__tls_diag *d = vega__tls_diag(t);
            if (d) {
                d->err.alert = t->in[1];
                d->err.alert_received = true;
            }
            pthread_mutex_unlock(&t->mu);
            return rx_fail(t, VEGA_ERR_TLS_ALERT, "TLS: the peer sent alert %s",
                           vega__tls_alert_name(t->in[1]));
        }
        if (type == CT_HANDSHAKE && SSL_version(t->ssl) == TLS1_3_VERSION && n >= 1 &&
            t->in[0] == 4)
            continue; /* NewSessionTicket: the kernel cannot hand it to OpenSSL; skipped */
        if (type == CT_HANDSHAKE && n >= 1 && t->in[0] == 24)
            return rx_fail(t, VEGA_ERR_TLS_PROTOCOL,
                           "TLS: the peer sent a KeyUpdate, which kernel TLS RX cannot "
                           "follow%s",
                           "");
        return rx_fail(t, VEGA_ERR_TLS_PROTOCOL,
                       "TLS: unexpected record from the peer under kernel TLS%s", "");
    }
}

vega_ssize vega__tls_ktls_write(struct vega_tls *t, const void *buf, size_t len, size_t *written,
                                vega_deadline dl)
{
    vega_ssize r = vega_sock_write(t->sock, buf, len, written, dl);
    if (r < 0 && r != -ETIMEDOUT && r != -ECANCELED) {
        pthread_mutex_lock(&t->mu);
        if (!t->werr)
            t->werr = vega__tls_set_error(t, (int)r, "write: %s", vega_strerror((int)r));
        pthread_mutex_unlock(&t->mu);
    }
    return r;
}

int vega__tls_ktls_close_notify(struct vega_tls *t, vega_deadline dl)
{
    int fd = vega_sock_fd(t->sock);
    unsigned char alert[2] = {1, 0}; /* warning, close_notify */
    for (;;) {
        char cbuf[CMSG_SPACE(sizeof(unsigned char))];
        memset(cbuf, 0, sizeof(cbuf));
        struct iovec iov = {.iov_base = alert, .iov_len = sizeof(alert)};
        struct msghdr msg = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_TLS;
        c->cmsg_type = TLS_SET_RECORD_TYPE;
        c->cmsg_len = CMSG_LEN(sizeof(unsigned char));
        *CMSG_DATA(c) = CT_ALERT;
        ssize_t k = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k == (ssize_t)sizeof(alert))
            return 0;
        int e = k < 0 ? errno : EIO;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return -e;
        int r = vega__io_wait(fd, POLLOUT, dl);
        if (r < 0)
            return r;
    }
}
