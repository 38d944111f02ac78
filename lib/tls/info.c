/* SPDX-License-Identifier: MIT */
/* What a TLS stream negotiated (version, cipher, ALPN, SNI, resumption, peer certificate), its
 * last error and its kernel TLS status. */
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "tls_int.h"

/* Each accessor takes the stream lock: a reader and a writer may be running. */
#define LOCKED(t, expr)                                                                            \
    ({                                                                                             \
        pthread_mutex_lock(&(t)->mu);                                                              \
        __typeof__(expr) v_ = (expr);                                                              \
        pthread_mutex_unlock(&(t)->mu);                                                            \
        v_;                                                                                        \
    })

const char *vega_tls_get_alpn(vega_stream *s)
{
    struct vega_tls *t = vega__tls_of(s);
    return t ? LOCKED(t, (const char *)t->alpn) : NULL;
}

const char *vega_tls_get_version(vega_stream *s)
{
    struct vega_tls *t = vega__tls_of(s);
    return t && LOCKED(t, t->hs_done) ? LOCKED(t, SSL_get_version(t->ssl)) : NULL;
}

const char *vega_tls_get_cipher(vega_stream *s)
{
    struct vega_tls *t = vega__tls_of(s);
    if (!t || !LOCKED(t, t->hs_done))
        return NULL;
    const SSL_CIPHER *c = LOCKED(t, SSL_get_current_cipher(t->ssl));
    return c ? SSL_CIPHER_standard_name(c) : NULL;
}

const char *vega_tls_get_server_name(vega_stream *s)
{
    struct vega_tls *t = vega__tls_of(s);
    if (!t)
        return NULL;
    return LOCKED(t, (const char *)(t->server ? t->server_name : t->sni));
}

bool vega_tls_session_reused(vega_stream *s)
{
    struct vega_tls *t = vega__tls_of(s);
    return t && LOCKED(t, t->hs_done && SSL_session_reused(t->ssl) == 1);
}

vega_ssize vega_tls_peer_subject(vega_stream *s, char *buf, size_t cap)
{
    struct vega_tls *t = vega__tls_of(s);
    if (!t || (!buf && cap))
        return -EINVAL;
    pthread_mutex_lock(&t->mu);
    X509 *x = SSL_get0_peer_certificate(t->ssl);
    vega_ssize r = 0;
    if (x) {
        BIO *b = BIO_new(BIO_s_mem());
        if (!b) {
            r = -ENOMEM;
        } else {
            X509_NAME_print_ex(b, X509_get_subject_name(x), 0, XN_FLAG_RFC2253);
            char *p;
            long n = BIO_get_mem_data(b, &p);
            r = n;
            if (cap)
                snprintf(buf, cap, "%.*s", (int)n, p);
            if ((size_t)n >= cap)
                r = VEGA_ERR_NOBUF;
            BIO_free(b);
        }
    } else if (cap) {
        buf[0] = '\0';
    }
    pthread_mutex_unlock(&t->mu);
    return r;
}

vega_ssize vega_tls_peer_cert_der(vega_stream *s, void *buf, size_t cap)
{
    struct vega_tls *t = vega__tls_of(s);
    if (!t || (!buf && cap))
        return -EINVAL;
    pthread_mutex_lock(&t->mu);
    X509 *x = SSL_get0_peer_certificate(t->ssl);
    vega_ssize r = x ? i2d_X509(x, NULL) : 0;
    if (r > 0 && buf) {
        if ((size_t)r > cap) {
            r = VEGA_ERR_NOBUF;
        } else {
            unsigned char *p = buf;
            i2d_X509(x, &p);
        }
    } else if (r < 0) {
        r = -ENOMEM;
    }
    pthread_mutex_unlock(&t->mu);
    return r;
}

vega_ssize vega_tls_peer_pubkey_der(vega_stream *s, void *buf, size_t cap)
{
    struct vega_tls *t = vega__tls_of(s);
    if (!t || (!buf && cap))
        return -EINVAL;
    pthread_mutex_lock(&t->mu);
    X509 *x = SSL_get0_peer_certificate(t->ssl);
    X509_PUBKEY *k = x ? X509_get_X509_PUBKEY(x) : NULL;
    vega_ssize r = k ? i2d_X509_PUBKEY(k, NULL) : 0;
    if (r > 0 && buf) {
        if ((size_t)r > cap) {
            r = VEGA_ERR_NOBUF;
        } else {
            unsigned char *p = buf;
            i2d_X509_PUBKEY(k, &p);
        }
    } else if (r < 0) {
        ERR_clear_error();
        r = -ENOMEM;
    }
    pthread_mutex_unlock(&t->mu);
    return r;
}

bool vega_tls_has_buffered(vega_stream *s)
{
    struct vega_tls *t = vega__tls_of(s);
    if (!t)
        return false;
    pthread_mutex_lock(&t->mu);
    bool b = t->in_pos < t->in_end || t->outq.off < t->outq.len || t->outfl.off < t->outfl.len ||
             SSL_pending(t->ssl) > 0 || SSL_has_pending(t->ssl);
    pthread_mutex_unlock(&t->mu);
    return b;
}

int vega_tls_get_error(vega_stream *s, vega_tls_error *out)
{
    struct vega_tls *t = vega__tls_of(s);
    if (!t || !out)
        return -EINVAL;
    pthread_mutex_lock(&t->mu);
    if (t->diag) {
        *out = t->diag->err;
    } else {
        memset(out, 0, sizeof(*out));
        out->alert = -1;
        out->verify_result = t->verify_err;
        if (t->err_code) /* its record could not be made */
            snprintf(out->message, sizeof(out->message), "%s (out of memory for its message)",
                     vega_strerror(t->err_code));
    }
    out->code = t->err_code;
    pthread_mutex_unlock(&t->mu);
    return 0;
}

const char *vega_tls_last_error(vega_stream *s)
{
    struct vega_tls *t = vega__tls_of(s);
    /* diag, once made, lives as long as the stream: the message stays valid. */
    struct vega__tls_diag *d = t ? __atomic_load_n(&t->diag, __ATOMIC_ACQUIRE) : NULL;
    return d ? d->err.message : "";
}

/* Each vega_tls_ktls_info layout's size (API rules: ABI): index = version. */
static const size_t ktls_info_layout[VEGA_TLS_KTLS_INFO_VERSION + 1] = {
    [1] = sizeof(vega_tls_ktls_info),
};

int vega_tls_ktls_status_versioned(vega_stream *s, vega_tls_ktls_info *out, int info_version)
{
    struct vega_tls *t = vega__tls_of(s);
    if (!t || !out || info_version < 1 || info_version > VEGA_TLS_KTLS_INFO_VERSION)
        return -EINVAL;
    vega_tls_ktls_info all = {0};
    pthread_mutex_lock(&t->mu);
    all.tx = t->ktls.tx;
    all.rx = t->ktls.rx;
    all.rx_pending = t->ktls.rx_pending;
    snprintf(all.reason, sizeof(all.reason), "%s", t->ktls.reason ? t->ktls.reason : "");
    pthread_mutex_unlock(&t->mu);
    memcpy(out, &all, ktls_info_layout[info_version]);
    return 0;
}
