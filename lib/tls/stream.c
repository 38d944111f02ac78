/* SPDX-License-Identifier: MIT */
/* The TLS stream: OpenSSL behind a BIO over two in-memory queues, driven by the calling task.
 * OpenSSL never suspends (its calls run under a plain lock and only touch memory); the task
 * moves bytes between the queues and the inner stream, so a task that migrates between workers
 * never leaves OpenSSL state (error queue, DRBG) on the wrong thread. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "io_int.h"
#include "tls_int.h"

/* Ciphertext read from inner at a time (a record is at most 16 KiB + 2 KiB + 5). */
#define IN_CAP (17 * 1024)
/* Plaintext encrypted per SSL_write before the records are written out. */
#define WRITE_CHUNK (64 * 1024)
/* Room kept at the end of the input buffer before it is compacted. */
#define IN_MIN_ROOM 2048

static int ex_index = -1;
static BIO_METHOD *bio_method;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const vega_stream_ops tls_ops;

/* ---- record boundaries ----------------------------------------------------------------------- */

void vega__tls_recparse_feed(struct vega__tls_recparse *p, const unsigned char *b, size_t n)
{
    while (n > 0) {
        if (p->body_left == 0) {
            size_t k = VEGA__MIN(n, 5 - p->hdr_have);
            memcpy(p->hdr + p->hdr_have, b, k);
            p->hdr_have += (unsigned)k;
            b += k;
            n -= k;
            if (p->hdr_have < 5)
                return;
            p->body_left = (size_t)p->hdr[3] << 8 | p->hdr[4];
            if (p->body_left == 0) { /* an empty record: legal in TLS 1.2 */
                p->hdr_have = 0;
                p->records++;
            }
            continue;
        }
        size_t k = VEGA__MIN(n, p->body_left);
        p->body_left -= k;
        b += k;
        n -= k;
        if (p->body_left == 0) {
            p->hdr_have = 0;
            p->records++;
        }
    }
}

size_t vega__tls_recparse_to_boundary(const struct vega__tls_recparse *p)
{
    return p->body_left ? p->body_left : 5 - p->hdr_have;
}

/* ---- queues ---------------------------------------------------------------------------------- */

int vega__tls_buf_append(struct vega__tls_buf *b, const void *p, size_t n)
{
    if (b->off == b->len)
        b->off = b->len = 0;
    if (!vega__fits(b->len, n, b->cap)) {
        size_t cap = b->cap ? b->cap : 4096;
        while (!vega__fits(b->len, n, cap)) /* n is one BIO write: an int */
            cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q)
            return -ENOMEM;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    VEGA_ASSERT(b->len <= b->cap);
    return 0;
}

static void buf_free(struct vega__tls_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

static bool buf_pending(const struct vega__tls_buf *b)
{
    return b->off < b->len;
}

/* ---- the BIO between OpenSSL and the queues -------------------------------------------------- */

static int bio_write(BIO *b, const char *data, int len)
{
    struct vega_tls *t = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (len <= 0)
        return 0;
    if (t->ktls.tx) {
        /* The kernel has the write keys: a record made by OpenSSL now (a KeyUpdate answer, an
         * alert) would go out with stale keys. */
        t->tx_bypass_err = true;
        return -1;
    }
    if (vega__tls_buf_append(&t->outq, data, (size_t)len) < 0)
        return -1;
    vega__tls_recparse_feed(&t->wr, (const unsigned char *)data, (size_t)len);
    return len;
}

static int bio_read(BIO *b, char *out, int len)
{
    struct vega_tls *t = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (len <= 0)
        return 0;
    size_t avail = t->in_end - t->in_pos;
    if (avail == 0) {
        if (t->in_eof)
            return 0;
        BIO_set_retry_read(b);
        return -1;
    }
    size_t n = VEGA__MIN(avail, (size_t)len);
    memcpy(out, t->in + t->in_pos, n);
    vega__tls_recparse_feed(&t->rd, t->in + t->in_pos, n);
    t->in_pos += n;
    if (!t->hs_done)
        t->wr_at_last_read = t->wr.records;
    return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    struct vega_tls *t = BIO_get_data(b);
    switch (cmd) {
    case BIO_CTRL_FLUSH:
    case BIO_CTRL_DUP:
        return 1;
    case BIO_CTRL_PENDING:
        return t ? (long)(t->in_end - t->in_pos) : 0;
    case BIO_CTRL_EOF:
        return t && t->in_eof && t->in_pos == t->in_end;
    default:
        return 0;
    }
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static int bio_destroy(BIO *b)
{
    BIO_set_data(b, NULL);
    return 1;
}

static void init_once(void)
{
    ex_index = SSL_get_ex_new_index(0, (void *)"vega_tls", NULL, NULL, NULL);
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "vega_tls");
    if (m && BIO_meth_set_write(m, bio_write) && BIO_meth_set_read(m, bio_read) &&
        BIO_meth_set_ctrl(m, bio_ctrl) && BIO_meth_set_create(m, bio_create) &&
        BIO_meth_set_destroy(m, bio_destroy))
        bio_method = m;
    else
        BIO_meth_free(m);
}

struct vega_tls *vega__tls_from_ssl(const SSL *ssl)
{
    return ex_index >= 0 ? SSL_get_ex_data(ssl, ex_index) : NULL;
}

struct vega_tls *vega__tls_of(const vega_stream *s)
{
    return s && vega_stream_get_ops(s) == &tls_ops ? vega_stream_user(s) : NULL;
}

bool vega_tls_is_tls(const vega_stream *s)
{
    return vega__tls_of(s) != NULL;
}

/* The handshake completed, its last flight went out and kernel TLS is set up. */
static bool ready(struct vega_tls *t)
{
    return __atomic_load_n(&t->ready, __ATOMIC_ACQUIRE);
}

/* ---- moving bytes ---------------------------------------------------------------------------- */

/* Writes what outfl and outq hold to inner; the caller holds wr_mu. */
static int drain(struct vega_tls *t, vega_deadline dl)
{
    for (;;) {
        pthread_mutex_lock(&t->mu);
        if (t->werr) {
            int e = t->werr;
            pthread_mutex_unlock(&t->mu);
            return e;
        }
        if (!buf_pending(&t->outfl)) {
            t->outfl.off = t->outfl.len = 0;
            if (!buf_pending(&t->outq)) {
                pthread_mutex_unlock(&t->mu);
                return 0;
            }
            struct vega__tls_buf tmp = t->outfl;
            t->outfl = t->outq;
            t->outq = tmp;
        }
        const unsigned char *p = t->outfl.p + t->outfl.off;
        size_t n = t->outfl.len - t->outfl.off;
        pthread_mutex_unlock(&t->mu);
        size_t w = 0;
        vega_ssize r = vega_stream_write(t->inner, p, n, &w, dl);
        pthread_mutex_lock(&t->mu);
        t->outfl.off += w;
        if (r < 0 && r != -ETIMEDOUT && r != -ECANCELED && !t->werr) {
            /* Part of a record went out: nothing can follow it. */
            t->werr = (int)r;
            if (!t->hs_err) /* keep the handshake's reason: this is only its alert */
                vega__tls_set_error(t, (int)r, "write: %s", vega_strerror((int)r));
        }
        pthread_mutex_unlock(&t->mu);
        if (r < 0)
            return (int)r;
    }
}

static bool out_pending(struct vega_tls *t)
{
    pthread_mutex_lock(&t->mu);
    bool p = buf_pending(&t->outq) || buf_pending(&t->outfl);
    pthread_mutex_unlock(&t->mu);
    return p;
}

int vega__tls_flush(struct vega_tls *t, vega_deadline dl)
{
    while (out_pending(t)) {
        int r = vega_mutex_lock(&t->wr_mu, dl);
        if (r < 0)
            return r;
        r = drain(t, dl);
        vega_mutex_unlock(&t->wr_mu);
        if (r < 0)
            return r;
        /* Loop: a producer may have queued records after drain saw the queue empty and before
         * the unlock, and given up on the lock. */
    }
    return 0;
}

/* Flushes unless another task holds the write side (it flushes what was queued: every holder
 * checks again after unlocking). */
static void flush_try(struct vega_tls *t, vega_deadline dl)
{
    while (out_pending(t)) {
        if (!vega_mutex_trylock(&t->wr_mu))
            return;
        int r = drain(t, dl);
        vega_mutex_unlock(&t->wr_mu);
        if (r < 0)
            return;
    }
}

/* Reads more ciphertext from inner. The caller is the only reader. Returns 0 or a code. */
static int fill(struct vega_tls *t, vega_deadline dl)
{
    pthread_mutex_lock(&t->mu);
    if (!t->in) {
        t->in = malloc(IN_CAP);
        if (!t->in) {
            pthread_mutex_unlock(&t->mu);
            return -ENOMEM;
        }
        t->in_cap = IN_CAP;
    }
    if (t->in_pos == t->in_end) {
        t->in_pos = t->in_end = 0;
    } else if (t->in_cap - t->in_end < IN_MIN_ROOM) {
        memmove(t->in, t->in + t->in_pos, t->in_end - t->in_pos);
        t->in_end -= t->in_pos;
        t->in_pos = 0;
    }
    size_t room = vega__room(t->in_end, t->in_cap);
    /* Before RX offload, read no further than the current record: the kernel must find the
     * next one whole in the socket. */
    if (t->ktls.rx_pending)
        room = VEGA__MIN(room, vega__tls_recparse_to_boundary(&t->fill));
    unsigned char *dst = t->in + t->in_end;
    pthread_mutex_unlock(&t->mu);
    vega_ssize n = vega_stream_read(t->inner, dst, room, dl);
    pthread_mutex_lock(&t->mu);
    if (n > 0) {
        vega__tls_recparse_feed(&t->fill, dst, (size_t)n);
        t->in_end += (size_t)n;
        VEGA_ASSERT(t->in_end <= t->in_cap);
    } else if (n == 0) {
        t->in_eof = true;
    }
    pthread_mutex_unlock(&t->mu);
    return n < 0 ? (int)n : 0;
}

/* A read with deadline 0 found nothing: the connection is about to idle, so give the buffers
 * back (they come back on the next use). */
static void release_idle(struct vega_tls *t)
{
    pthread_mutex_lock(&t->mu);
    if (t->in && t->in_pos == t->in_end && !t->ktls.rx) {
        free(t->in);
        t->in = NULL;
        t->in_cap = t->in_pos = t->in_end = 0;
    }
    pthread_mutex_unlock(&t->mu);
    if (vega_mutex_trylock(&t->wr_mu)) {
        pthread_mutex_lock(&t->mu);
        if (!buf_pending(&t->outq))
            buf_free(&t->outq);
        if (!buf_pending(&t->outfl))
            buf_free(&t->outfl);
        pthread_mutex_unlock(&t->mu);
        vega_mutex_unlock(&t->wr_mu);
    }
}

/* ---- handshake ------------------------------------------------------------------------------- */

static void handshake_done_locked(struct vega_tls *t)
{
    t->rd_at_done = t->rd.records;
    t->wr_at_done = t->wr.records;
    t->hs_done = true;
    const unsigned char *p;
    unsigned len;
    SSL_get0_alpn_selected(t->ssl, &p, &len);
    if (len && !t->alpn)
        t->alpn = strndup((const char *)p, len);
}

/* The caller holds hs_mu. */
static int handshake_locked(struct vega_tls *t, vega_deadline dl)
{
    for (;;) {
        if (ready(t))
            return 0;
        int r = vega__tls_flush(t, dl);
        if (r < 0)
            return r;
        pthread_mutex_lock(&t->mu);
        if (t->hs_err) {
            r = t->hs_err;
            pthread_mutex_unlock(&t->mu);
            return r;
        }
        if (t->hs_done) {
            /* OpenSSL is done and its last flight went out: hand the keys to the kernel if
             * asked, before any other task may read or write. */
            pthread_mutex_unlock(&t->mu);
            r = vega__tls_ktls_setup(t, dl);
            if (r < 0)
                return r;
            __atomic_store_n(&t->ready, true, __ATOMIC_RELEASE);
            return 0;
        }
        ERR_clear_error();
        int ret = SSL_do_handshake(t->ssl);
        int e = ret == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, ret);
        if (ret == 1) {
            handshake_done_locked(t);
            if (!vega__tls_pin_ok(t->cfg, SSL_get0_peer_certificate(t->ssl))) {
                t->hs_err = vega__tls_set_error(t, VEGA_ERR_TLS_PINNED,
                                                "TLS: the server's public key does not match "
                                                "the pinned public key");
            }
        } else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            t->hs_err = vega__tls_fail(t, e);
        ERR_clear_error();
        int err = t->hs_err;
        pthread_mutex_unlock(&t->mu);
        if (err) {
            /* Let the peer hear the alert OpenSSL queued, if it can take it at once. */
            flush_try(t, VEGA__MIN(dl, vega_deadline_in_ms(100)));
            return err;
        }
        if (e == SSL_ERROR_WANT_READ) {
            r = vega__tls_flush(t, dl); /* our flight first */
            if (r < 0)
                return r;
            r = fill(t, dl);
            if (r < 0)
                return r;
        }
    }
}

static int handshake(struct vega_tls *t, vega_deadline dl)
{
    if (ready(t))
        return 0;
    int r = vega_mutex_lock(&t->hs_mu, dl);
    if (r < 0)
        return r;
    r = handshake_locked(t, dl);
    vega_mutex_unlock(&t->hs_mu);
    return r;
}

int vega_tls_handshake(vega_stream *s, vega_deadline dl)
{
    struct vega_tls *t = vega__tls_of(s);
    return t ? handshake(t, dl) : -EINVAL;
}

int vega_tls_flush(vega_stream *s, vega_deadline dl)
{
    struct vega_tls *t = vega__tls_of(s);
    return t ? vega__tls_flush(t, dl) : -EINVAL;
}

/* ---- the stream's operations ----------------------------------------------------------------- */

static vega_ssize tls_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    struct vega_tls *t = user;
    int r = handshake(t, dl);
    if (r < 0)
        return r;
    for (;;) {
        pthread_mutex_lock(&t->mu);
        if (t->rerr) {
            r = t->rerr;
            pthread_mutex_unlock(&t->mu);
            return r;
        }
        if (t->read_shut || t->got_close_notify) {
            pthread_mutex_unlock(&t->mu);
            return 0;
        }
        if (t->ktls.rx) {
            pthread_mutex_unlock(&t->mu);
            return vega__tls_ktls_read(t, buf, len, dl);
        }
        ERR_clear_error();
        size_t n = 0;
        int ret = SSL_read_ex(t->ssl, buf, len, &n);
        int e = ret ? SSL_ERROR_NONE : SSL_get_error(t->ssl, 0);
        vega_ssize res = 0;
        if (ret) {
            res = (vega_ssize)n;
            t->got_app_data = true;
        } else if (e == SSL_ERROR_ZERO_RETURN) {
            t->got_close_notify = true; /* a clean end: close_notify */
        } else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            res = t->rerr = vega__tls_fail(t, e);
        }
        ERR_clear_error();
        vega__tls_ktls_try_rx(t);
        bool more = buf_pending(&t->outq), krx = t->ktls.rx;
        pthread_mutex_unlock(&t->mu);
        if (more)
            flush_try(t, dl); /* what reading made: a KeyUpdate answer, an alert */
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            return res;
        if (krx)
            continue; /* the kernel decrypts from here on */
        if (e == SSL_ERROR_WANT_READ) {
            r = fill(t, dl);
            if (r < 0) {
                if (r == -ETIMEDOUT && dl == 0)
                    release_idle(t);
                return r;
            }
        }
    }
}

static vega_ssize tls_write(void *user, const void *buf, size_t len, size_t *written,
                            vega_deadline dl)
{
    struct vega_tls *t = user;
    *written = 0;
    int r = handshake(t, dl);
    if (r < 0)
        return r;
    pthread_mutex_lock(&t->mu);
    r = t->werr ? t->werr : t->write_shut ? -EPIPE : 0;
    bool ktx = t->ktls.tx;
    pthread_mutex_unlock(&t->mu);
    if (r < 0)
        return r;
    if (len == 0)
        return 0;
    if (ktx)
        return vega__tls_ktls_write(t, buf, len, written, dl);
    r = vega__tls_flush(t, dl);
    if (r < 0)
        return r;
    size_t off = 0;
    while (off < len) {
        size_t chunk = VEGA__MIN(len - off, (size_t)WRITE_CHUNK), n = 0;
        pthread_mutex_lock(&t->mu);
        ERR_clear_error();
        int ret = SSL_write_ex(t->ssl, (const char *)buf + off, chunk, &n);
        if (!ret) {
            int e = SSL_get_error(t->ssl, 0);
            r = e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE
                    ? vega__tls_set_error(t, VEGA_ERR_TLS_PROTOCOL,
                                          "write: OpenSSL wants to read (renegotiation?)")
                    : vega__tls_fail(t, e);
            t->werr = r;
        }
        ERR_clear_error();
        pthread_mutex_unlock(&t->mu);
        if (!ret) {
            *written = off;
            return r;
        }
        off += n;
        r = vega__tls_flush(t, dl);
        if (r < 0) {
            *written = off; /* encrypted and queued: see the contract */
            return r;
        }
    }
    *written = len;
    return (vega_ssize)len;
}

/* Sends close_notify once (RFC 8446 section 6.1: "Each party MUST send a close_notify alert
 * before closing its write side of the connection"), then flushes. */
static int send_close_notify(struct vega_tls *t, vega_deadline dl)
{
    pthread_mutex_lock(&t->mu);
    bool send = t->hs_done && !t->sent_close_notify && !t->werr && !t->hs_err && !t->rerr;
    bool ktx = t->ktls.tx;
    t->write_shut = true;
    if (send) {
        t->sent_close_notify = true;
        if (!ktx) {
            ERR_clear_error();
            SSL_shutdown(t->ssl);
            ERR_clear_error();
        }
    }
    pthread_mutex_unlock(&t->mu);
    if (send && ktx)
        return vega__tls_ktls_close_notify(t, dl);
    return vega__tls_flush(t, dl);
}

static int tls_shutdown(void *user, int how, vega_deadline dl)
{
    struct vega_tls *t = user;
    int r = 0;
    if (how == SHUT_RD || how == SHUT_RDWR) {
        pthread_mutex_lock(&t->mu);
        t->read_shut = true;
        pthread_mutex_unlock(&t->mu);
    }
    if (how == SHUT_WR || how == SHUT_RDWR) {
        r = send_close_notify(t, dl);
        int r2 = vega_stream_shutdown(t->inner, SHUT_WR, dl);
        if (r == 0 && r2 < 0 && r2 != -EOPNOTSUPP && r2 != -ENOTCONN)
            r = r2;
    }
    return r;
}

static int tls_close(void *user, vega_deadline dl)
{
    struct vega_tls *t = user;
    int r = send_close_notify(t, dl);
    int r2 = vega_stream_close(t->inner, dl);
    if (r == 0)
        r = r2;
    if (t->own_sock) {
        r2 = vega_sock_close(t->sock);
        if (r == 0)
            r = r2;
    }
    SSL_free(t->ssl); /* frees the BIO */
    vega_tls_config_free(t->cfg);
    free(t->in);
    buf_free(&t->outq);
    buf_free(&t->outfl);
    free(t->server_name);
    free(t->sni);
    free(t->cache_key);
    free(t->alpn);
    vega__tls_secrets_drop(t);
    free(t->diag);
    free(t->ktls.reason);
    vega_mutex_fini(&t->hs_mu);
    vega_mutex_fini(&t->wr_mu);
    pthread_mutex_destroy(&t->mu);
    free(t);
    return r;
}

/* Without kernel TLS the file goes through user memory: read, encrypt, write. */
static vega_ssize tls_sendfile(void *user, int in_fd, off_t offset, size_t len, size_t *written,
                               vega_deadline dl)
{
    struct vega_tls *t = user;
    *written = 0;
    int r = handshake(t, dl);
    if (r < 0)
        return r;
    pthread_mutex_lock(&t->mu);
    bool ktx = t->ktls.tx && t->sock;
    pthread_mutex_unlock(&t->mu);
    if (ktx) {
        r = vega__tls_flush(t, dl);
        if (r < 0)
            return r;
        return vega_sock_sendfile(t->sock, in_fd, (uint64_t)offset, len, written, dl);
    }
    size_t chunk = VEGA__MIN(len, (size_t)WRITE_CHUNK), done = 0;
    unsigned char *b = chunk ? malloc(chunk) : NULL;
    if (chunk && !b)
        return -ENOMEM;
    vega_ssize res = 0;
    while (done < len) {
        ssize_t n = pread(in_fd, b, VEGA__MIN(chunk, len - done), offset + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            res = n < 0 ? -errno : -ENODATA;
            break;
        }
        size_t w = 0;
        res = tls_write(t, b, (size_t)n, &w, dl);
        done += w;
        if (res < 0)
            break;
    }
    free(b);
    *written = done;
    return res < 0 ? res : (vega_ssize)len;
}

static const vega_stream_ops tls_ops = {
    .name = "tls",
    .read = tls_read,
    .write = tls_write,
    .shutdown = tls_shutdown,
    .close = tls_close,
    .sendfile = tls_sendfile,
};

/* ---- creation -------------------------------------------------------------------------------- */

static bool is_ip_literal(const char *s)
{
    ASN1_OCTET_STRING *ip = a2i_IPADDRESS(s);
    ERR_clear_error();
    ASN1_OCTET_STRING_free(ip);
    return ip != NULL;
}

/* "[::1]" -> "::1" (a copy). */
static char *strip_brackets(const char *s)
{
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
        return strndup(s + 1, n - 2);
    return strdup(s);
}

static int setup_client(struct vega_tls *t, const vega_tls_opts *o)
{
    vega_tls_config *cfg = t->cfg;
    SSL *ssl = t->ssl;
    SSL_set_connect_state(ssl);
    if (cfg->cert && !vega__tls_cert_use(ssl, cfg->cert))
        return VEGA_ERR_TLS_CONFIG;
    bool ip = false;
    if (o->server_name) {
        if (!(t->server_name = strip_brackets(o->server_name)))
            return -ENOMEM;
        ip = is_ip_literal(t->server_name);
    }
    if (cfg->verify != VEGA_TLS_VERIFY_NONE) {
        SSL_set_verify(ssl, SSL_VERIFY_PEER, vega__tls_verify_cb);
        if (t->server_name) {
            X509_VERIFY_PARAM *p = SSL_get0_param(ssl);
            X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(p, t->server_name)
                        : SSL_set1_host(ssl, t->server_name);
            if (!ok)
                return -ENOMEM;
        }
    } else {
        SSL_set_verify(ssl, SSL_VERIFY_NONE, NULL);
    }
    /* RFC 6066 section 3: "Literal IPv4 and IPv6 addresses are not permitted in HostName". */
    const char *sni =
        o->sni ? (*o->sni ? o->sni : NULL) : (t->server_name && !ip ? t->server_name : NULL);
    if (sni) {
        if (!(t->sni = strdup(sni)) || !SSL_set_tlsext_host_name(ssl, sni))
            return -ENOMEM;
    }
    if (t->server_name && cfg->cache_max) {
        size_t n = strlen(t->server_name) + 8;
        if (!(t->cache_key = malloc(n)))
            return -ENOMEM;
        snprintf(t->cache_key, n, "%s:%u", t->server_name, (unsigned)o->port);
        SSL_SESSION *sess = vega__tls_cache_get(cfg, t->cache_key);
        if (sess) {
            SSL_set_session(ssl, sess);
            SSL_SESSION_free(sess);
        }
    }
    return 0;
}

static int setup_server(struct vega_tls *t)
{
    vega_tls_config *cfg = t->cfg;
    SSL *ssl = t->ssl;
    SSL_set_accept_state(ssl);
    if (!cfg->cert && !cfg->nsni && !cfg->sni_fn)
        return VEGA_ERR_TLS_CONFIG;
    if (cfg->cert && !vega__tls_cert_use(ssl, cfg->cert))
        return VEGA_ERR_TLS_CONFIG;
    int mode = SSL_VERIFY_NONE;
    if (cfg->verify == VEGA_TLS_VERIFY_PEER)
        mode = SSL_VERIFY_PEER;
    else if (cfg->verify == VEGA_TLS_VERIFY_REQUIRE)
        mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_set_verify(ssl, mode, mode == SSL_VERIFY_NONE ? NULL : vega__tls_verify_cb);
    return 0;
}

static void tls_free_partial(struct vega_tls *t)
{
    SSL_free(t->ssl);
    free(t->server_name);
    free(t->sni);
    free(t->cache_key);
    vega_tls_config_free(t->cfg);
    vega_mutex_fini(&t->hs_mu);
    vega_mutex_fini(&t->wr_mu);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

void vega_tls_opts_init_versioned(vega_tls_opts *o, int opts_version)
{
    if (opts_version != VEGA_TLS_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_tls_opts_init: options of another libvega (version %d)", opts_version);
    memset(o, 0, sizeof(*o));
}

static int stream_new(vega_stream **out, vega_stream *inner, vega_sock *sock, vega_tls_config *cfg,
                      const vega_tls_opts *opts)
{
    vega_tls_opts def;
    if (!out || !inner || !cfg)
        return -EINVAL;
    if (!opts) {
        vega_tls_opts_init(&def);
        opts = &def;
    }
    if (opts->server_name && !*opts->server_name)
        return -EINVAL;
    pthread_once(&once, init_once);
    if (ex_index < 0 || !bio_method)
        return -ENOMEM;
    int r = vega__tls_config_prepare(cfg);
    if (r < 0)
        return r;
    struct vega_tls *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    pthread_mutex_init(&t->mu, NULL);
    vega_mutex_init(&t->hs_mu);
    vega_mutex_init(&t->wr_mu);
    t->cfg = vega__tls_config_ref(cfg);
    t->server = cfg->role == VEGA_TLS_SERVER;
    t->alert_sent = t->alert_recv = -1;
    t->sock = sock;
    /* Kernel TLS receive reads the fd itself: the runtime must never hold this socket's bytes
     * in its receive ring (ciphertext there would never reach the kernel's TLS layer). */
    if (sock && cfg->ktls == VEGA_TLS_KTLS_TXRX)
        vega__sock_park_no_ring(sock);
    t->ssl = SSL_new(cfg->ctx);
    BIO *bio = t->ssl ? BIO_new(bio_method) : NULL;
    if (!bio) {
        ERR_clear_error();
        tls_free_partial(t);
        return -ENOMEM;
    }
    BIO_set_data(bio, t);
    SSL_set_bio(t->ssl, bio, bio); /* one reference for both directions */
    t->bio = bio;
    SSL_set_ex_data(t->ssl, ex_index, t);
    r = t->server ? setup_server(t) : setup_client(t, opts);
    if (r == 0)
        r = vega_stream_new(out, &tls_ops, t);
    ERR_clear_error();
    if (r < 0) {
        tls_free_partial(t);
        return r;
    }
    t->inner = inner;
    return 0;
}

int vega_tls_stream_new_versioned(vega_stream **out, vega_stream *inner, vega_tls_config *cfg,
                                  const vega_tls_opts *opts, int opts_version)
{
    if (opts_version != VEGA_TLS_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    return stream_new(out, inner, NULL, cfg, opts);
}

int vega_tls_stream_from_sock_versioned(vega_stream **out, vega_sock *sock, unsigned flags,
                                        vega_tls_config *cfg, const vega_tls_opts *opts,
                                        int opts_version)
{
    if (opts_version != VEGA_TLS_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    if (!out || !sock || !cfg || (flags & ~(unsigned)VEGA_STREAM_BORROW))
        return -EINVAL;
    /* inner always borrows: the TLS stream closes an owned socket itself, after inner, and a
     * failure here leaves the socket with the caller. */
    vega_stream *inner;
    int r = vega_stream_from_sock(&inner, sock, VEGA_STREAM_BORROW);
    if (r < 0)
        return r;
    r = stream_new(out, inner, sock, cfg, opts);
    if (r < 0) {
        vega_stream_close(inner, 0);
        return r;
    }
    vega__tls_of(*out)->own_sock = !(flags & VEGA_STREAM_BORROW);
    return 0;
}
