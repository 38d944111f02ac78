/* SPDX-License-Identifier: MIT */
/* The TLS configuration: an SSL_CTX with certificates, CAs, verification, ALPN (RFC 7301), SNI
 * certificate selection (RFC 6066 section 3), versions, ciphers, groups, tickets, key log. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include "tls_int.h"

vega_tls_config *vega__tls_config_ref(vega_tls_config *cfg)
{
    atomic_fetch_add(&cfg->refs, 1);
    return cfg;
}

void vega_tls_config_free(vega_tls_config *cfg)
{
    if (!cfg || atomic_fetch_sub(&cfg->refs, 1) != 1)
        return;
    vega__tls_cache_clear(cfg);
    SSL_CTX_free(cfg->ctx);
    vega_tls_cert_free(cfg->cert);
    for (size_t i = 0; i < cfg->nsni; i++) {
        free(cfg->sni[i].name);
        vega_tls_cert_free(cfg->sni[i].cert);
    }
    free(cfg->sni);
    free(cfg->alpn);
    free(cfg->pins);
    if (cfg->keylog)
        fclose(cfg->keylog);
    pthread_mutex_destroy(&cfg->mu);
    free(cfg);
}

vega_tls_role vega_tls_config_role(const vega_tls_config *cfg)
{
    return cfg->role;
}

/* "*.example.com" matches "a.example.com" (one label), else a case-insensitive comparison. */
static bool sni_match(const char *pattern, const char *name)
{
    if (pattern[0] == '*' && pattern[1] == '.') {
        const char *dot = strchr(name, '.');
        return dot && dot != name && strcasecmp(dot + 1, pattern + 2) == 0;
    }
    return strcasecmp(pattern, name) == 0;
}

/* RFC 6066 section 3: the server picks the certificate for the name the client asked for. */
static int servername_cb(SSL *ssl, int *alert, void *arg)
{
    vega_tls_config *cfg = arg;
    struct vega_tls *t = vega__tls_from_ssl(ssl);
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (t && name && !t->server_name)
        t->server_name = strdup(name);
    const vega_tls_cert *c = cfg->sni_fn ? cfg->sni_fn(cfg->sni_user, name) : NULL;
    for (size_t i = 0; !c && name && i < cfg->nsni; i++)
        if (sni_match(cfg->sni[i].name, name))
            c = cfg->sni[i].cert;
    if (c && !vega__tls_cert_use(ssl, c)) {
        *alert = SSL_AD_INTERNAL_ERROR;
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    return SSL_TLSEXT_ERR_OK;
}

/* RFC 7301 section 3.2: the server picks from the client's list; with no overlap it "MUST
 * respond with a fatal no_application_protocol alert". Server preference wins. */
static int alpn_select_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                          const unsigned char *in, unsigned int inlen, void *arg)
{
    vega_tls_config *cfg = arg;
    if (!cfg->alpn)
        return SSL_TLSEXT_ERR_NOACK;
    unsigned char *sel;
    if (SSL_select_next_proto(&sel, outlen, cfg->alpn, (unsigned)cfg->alpn_len, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

int vega_tls_config_new(vega_tls_config **out, vega_tls_role role)
{
    if (!out || (role != VEGA_TLS_CLIENT && role != VEGA_TLS_SERVER))
        return -EINVAL;
    struct vega_tls_config *cfg = calloc(1, sizeof(*cfg));
    if (!cfg)
        return -ENOMEM;
    atomic_init(&cfg->refs, 1);
    cfg->role = role;
    cfg->cache_max = 256;
    pthread_mutex_init(&cfg->mu, NULL);
    cfg->ctx = SSL_CTX_new(role == VEGA_TLS_SERVER ? TLS_server_method() : TLS_client_method());
    if (!cfg->ctx) {
        ERR_clear_error();
        pthread_mutex_destroy(&cfg->mu);
        free(cfg);
        return -ENOMEM;
    }
    SSL_CTX *ctx = cfg->ctx;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    /* Records are read one at a time (no read-ahead): the record counters behind the kernel
     * TLS sequence numbers rely on it. Idle connections give their buffers back. */
    SSL_CTX_set_read_ahead(ctx, 0);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_keylog_callback(ctx, vega__tls_keylog_cb);
    SSL_CTX_set_info_callback(ctx, vega__tls_info_cb);
    if (role == VEGA_TLS_SERVER) {
        SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
        SSL_CTX_set_tlsext_servername_callback(ctx, servername_cb);
        SSL_CTX_set_tlsext_servername_arg(ctx, cfg);
        SSL_CTX_set_alpn_select_cb(ctx, alpn_select_cb, cfg);
        SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"vega", 4);
        /* OpenSSL's default holds 20,480 sessions: bound it like every other cache. */
        SSL_CTX_sess_set_cache_size(ctx, (long)cfg->cache_max);
    } else {
        SSL_CTX_set_session_cache_mode(ctx,
                                       SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(ctx, vega__tls_new_session_cb);
    }
    *out = cfg;
    return 0;
}

int vega__tls_config_prepare(vega_tls_config *cfg)
{
    bool need = cfg->role == VEGA_TLS_CLIENT
                    ? cfg->verify != VEGA_TLS_VERIFY_NONE
                    : cfg->verify == VEGA_TLS_VERIFY_PEER || cfg->verify == VEGA_TLS_VERIFY_REQUIRE;
    if (!need || cfg->ca_set)
        return 0;
    pthread_mutex_lock(&cfg->mu);
    if (!cfg->system_ca_loaded) {
        /* A missing system store is not an error here: verification then fails with
         * "unable to get local issuer certificate", which says what is wrong. */
        SSL_CTX_set_default_verify_paths(cfg->ctx);
        ERR_clear_error();
        cfg->system_ca_loaded = true;
    }
    pthread_mutex_unlock(&cfg->mu);
    return 0;
}

int vega_tls_config_set_cert(vega_tls_config *cfg, vega_tls_cert *cert)
{
    if (!cfg || !cert)
        return -EINVAL;
    vega_tls_cert_free(cfg->cert);
    cfg->cert = vega__tls_cert_ref(cert);
    return 0;
}

int vega_tls_config_set_cert_files(vega_tls_config *cfg, const char *chain_path,
                                   const char *key_path)
{
    if (!cfg)
        return -EINVAL;
    vega_tls_cert *c;
    int r = vega_tls_cert_new_files(&c, chain_path, key_path);
    if (r < 0)
        return r;
    r = vega_tls_config_set_cert(cfg, c);
    vega_tls_cert_free(c);
    return r;
}

int vega_tls_config_set_cert_pem(vega_tls_config *cfg, const void *chain, size_t chain_len,
                                 const void *key, size_t key_len)
{
    if (!cfg)
        return -EINVAL;
    vega_tls_cert *c;
    int r = vega_tls_cert_new_pem(&c, chain, chain_len, key, key_len);
    if (r < 0)
        return r;
    r = vega_tls_config_set_cert(cfg, c);
    vega_tls_cert_free(c);
    return r;
}

int vega_tls_config_use_selfsigned(vega_tls_config *cfg)
{
    if (!cfg)
        return -EINVAL;
    char *cert, *key;
    int r = vega_tls_selfsigned(&cert, &key);
    if (r < 0)
        return r;
    r = vega_tls_config_set_cert_pem(cfg, cert, strlen(cert), key, strlen(key));
    OPENSSL_cleanse(key, strlen(key));
    free(cert);
    free(key);
    return r;
}

int vega_tls_config_add_sni(vega_tls_config *cfg, const char *name, vega_tls_cert *cert)
{
    if (!cfg || !name || !*name || !cert || cfg->role != VEGA_TLS_SERVER)
        return -EINVAL;
    struct sni_entry *v = realloc(cfg->sni, (cfg->nsni + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    cfg->sni = v;
    char *n = strdup(name);
    if (!n)
        return -ENOMEM;
    v[cfg->nsni].name = n;
    v[cfg->nsni].cert = vega__tls_cert_ref(cert);
    cfg->nsni++;
    return 0;
}

int vega_tls_config_set_sni_callback(vega_tls_config *cfg, vega_tls_sni_fn fn, void *user)
{
    if (!cfg || cfg->role != VEGA_TLS_SERVER)
        return -EINVAL;
    cfg->sni_fn = fn;
    cfg->sni_user = fn ? user : NULL;
    return 0;
}

int vega_tls_config_set_verify(vega_tls_config *cfg, vega_tls_verify mode)
{
    if (!cfg || mode < VEGA_TLS_VERIFY_DEFAULT || mode > VEGA_TLS_VERIFY_REQUIRE)
        return -EINVAL;
    cfg->verify = mode;
    return 0;
}

/* Adds every certificate of PEM text to the trust store (and, on a server, to the CA names
 * sent in CertificateRequest). */
static int add_ca_pem(vega_tls_config *cfg, const void *pem, size_t len)
{
    if (len > INT32_MAX)
        return -EINVAL;
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    if (!b)
        return -ENOMEM;
    X509_STORE *store = SSL_CTX_get_cert_store(cfg->ctx);
    int n = 0, r = 0;
    for (X509 *x; (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL; X509_free(x)) {
        if (X509_STORE_add_cert(store, x) != 1) {
            r = -ENOMEM;
            X509_free(x);
            break;
        }
        if (cfg->role == VEGA_TLS_SERVER)
            SSL_CTX_add_client_CA(cfg->ctx, x);
        n++;
    }
    BIO_free(b);
    ERR_clear_error();
    if (r == 0 && n == 0)
        r = VEGA_ERR_TLS_CONFIG;
    if (r == 0)
        cfg->ca_set = true;
    return r;
}

int vega_tls_config_set_ca_pem(vega_tls_config *cfg, const void *pem, size_t len)
{
    if (!cfg || !pem || !len)
        return -EINVAL;
    return add_ca_pem(cfg, pem, len);
}

int vega_tls_config_set_ca_file(vega_tls_config *cfg, const char *path)
{
    if (!cfg || !path)
        return -EINVAL;
    char *p;
    size_t len;
    int r = vega__tls_read_file(path, &p, &len);
    if (r < 0)
        return r;
    r = len ? add_ca_pem(cfg, p, len) : VEGA_ERR_TLS_CONFIG;
    free(p);
    return r;
}

int vega_tls_config_set_alpn(vega_tls_config *cfg, const char *const *protos, size_t n)
{
    if (!cfg || (n && !protos))
        return -EINVAL;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = protos[i] ? strlen(protos[i]) : 0;
        if (k == 0 || k > 255)
            return -EINVAL;
        len += 1 + k;
    }
    if (len > 65535)
        return -EINVAL;
    unsigned char *w = NULL;
    if (n) {
        w = malloc(len);
        if (!w)
            return -ENOMEM;
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
            size_t k = strlen(protos[i]);
            w[o++] = (unsigned char)k;
            memcpy(w + o, protos[i], k);
            o += k;
        }
    }
    if (cfg->role == VEGA_TLS_CLIENT && SSL_CTX_set_alpn_protos(cfg->ctx, w, (unsigned)len) != 0) {
        free(w);
        ERR_clear_error();
        return -ENOMEM;
    }
    free(cfg->alpn);
    cfg->alpn = w;
    cfg->alpn_len = len;
    return 0;
}

static int ossl_version(int v, int def)
{
    return v == 0              ? def
           : v == VEGA_TLS_1_2 ? TLS1_2_VERSION
           : v == VEGA_TLS_1_3 ? TLS1_3_VERSION
                               : -1;
}

int vega_tls_config_set_versions(vega_tls_config *cfg, int min, int max)
{
    int lo = ossl_version(min, TLS1_2_VERSION), hi = ossl_version(max, TLS1_3_VERSION);
    if (!cfg || lo < 0 || hi < 0 || lo > hi)
        return -EINVAL;
    SSL_CTX_set_min_proto_version(cfg->ctx, lo);
    SSL_CTX_set_max_proto_version(cfg->ctx, hi);
    return 0;
}

int vega_tls_config_set_ciphers(vega_tls_config *cfg, const char *tls12, const char *tls13)
{
    if (!cfg)
        return -EINVAL;
    int ok = 1;
    if (tls12)
        ok = SSL_CTX_set_cipher_list(cfg->ctx, tls12);
    if (ok && tls13)
        ok = SSL_CTX_set_ciphersuites(cfg->ctx, tls13);
    ERR_clear_error();
    return ok ? 0 : VEGA_ERR_TLS_CONFIG;
}

int vega_tls_config_set_groups(vega_tls_config *cfg, const char *groups)
{
    if (!cfg || !groups)
        return -EINVAL;
    long ok = SSL_CTX_set1_groups_list(cfg->ctx, groups);
    ERR_clear_error();
    return ok ? 0 : VEGA_ERR_TLS_CONFIG;
}

int vega_tls_config_set_pinned_keys(vega_tls_config *cfg, const uint8_t *sha256, size_t n)
{
    if (!cfg || cfg->role != VEGA_TLS_CLIENT || (n && !sha256) || n > VEGA_TLS_MAX_PINNED_KEYS)
        return -EINVAL;
    uint8_t *p = NULL;
    if (n) {
        p = malloc(n * SHA256_DIGEST_LENGTH);
        if (!p)
            return -ENOMEM;
        memcpy(p, sha256, n * SHA256_DIGEST_LENGTH);
    }
    free(cfg->pins);
    cfg->pins = p;
    cfg->npins = n;
    return 0;
}

size_t vega_tls_config_get_pinned_keys(const vega_tls_config *cfg, uint8_t *sha256, size_t cap)
{
    if (!cfg)
        return 0;
    size_t n = cfg->npins < cap ? cfg->npins : cap;
    if (n && sha256)
        memcpy(sha256, cfg->pins, n * SHA256_DIGEST_LENGTH);
    return cfg->npins;
}

bool vega__tls_pin_ok(const vega_tls_config *cfg, X509 *peer)
{
    if (!cfg->npins)
        return true;
    if (!peer)
        return false;
    unsigned char *der = NULL;
    int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(peer), &der);
    if (len <= 0) {
        ERR_clear_error();
        return false;
    }
    unsigned char md[SHA256_DIGEST_LENGTH];
    bool ok = SHA256(der, (size_t)len, md) != NULL;
    OPENSSL_free(der);
    if (!ok)
        return false;
    for (size_t i = 0; i < cfg->npins; i++)
        if (CRYPTO_memcmp(md, cfg->pins + i * SHA256_DIGEST_LENGTH, SHA256_DIGEST_LENGTH) == 0)
            return true;
    return false;
}

int vega_tls_config_set_session_cache(vega_tls_config *cfg, size_t max)
{
    if (!cfg)
        return -EINVAL;
    if (cfg->role == VEGA_TLS_SERVER) {
        if (max == 0) {
            SSL_CTX_set_options(cfg->ctx, SSL_OP_NO_TICKET);
            SSL_CTX_set_session_cache_mode(cfg->ctx, SSL_SESS_CACHE_OFF);
            SSL_CTX_set_num_tickets(cfg->ctx, 0);
        } else {
            SSL_CTX_clear_options(cfg->ctx, SSL_OP_NO_TICKET);
            SSL_CTX_set_session_cache_mode(cfg->ctx, SSL_SESS_CACHE_SERVER);
            SSL_CTX_set_num_tickets(cfg->ctx, 2);
            SSL_CTX_sess_set_cache_size(cfg->ctx, max > LONG_MAX ? LONG_MAX : (long)max);
        }
        cfg->cache_max = max;
        return 0;
    }
    pthread_mutex_lock(&cfg->mu);
    cfg->cache_max = max;
    pthread_mutex_unlock(&cfg->mu);
    if (max == 0)
        vega__tls_cache_clear(cfg);
    return 0;
}

int vega_tls_config_set_keylog_file(vega_tls_config *cfg, const char *path)
{
    if (!cfg)
        return -EINVAL;
    FILE *f = NULL;
    if (path) {
        /* Secrets: readable by the owner only when the file is created here. */
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
            return -errno;
        f = fdopen(fd, "a");
        if (!f) {
            int e = -errno;
            close(fd);
            return e;
        }
    }
    pthread_mutex_lock(&cfg->mu);
    FILE *old = cfg->keylog;
    cfg->keylog = f;
    pthread_mutex_unlock(&cfg->mu);
    if (old)
        fclose(old);
    return 0;
}

/* OpenSSL's message callback, forwarded with its content types kept (OpenSSL's SSL3_RT_HEADER
 * and SSL3_RT_INNER_CONTENT_TYPE are the public 0x100 and 0x101). */
static void msg_cb(int write_p, int version, int content_type, const void *buf, size_t len,
                   SSL *ssl, void *arg)
{
    (void)ssl;
    const vega_tls_config *cfg = arg;
    if (cfg->msg_fn && (write_p == 0 || write_p == 1))
        cfg->msg_fn(cfg->msg_user, write_p ? VEGA_TLS_MSG_OUT : VEGA_TLS_MSG_IN, version,
                    content_type, buf, len);
}

_Static_assert(SSL3_RT_HEADER == VEGA_TLS_MSG_RECORD_HEADER, "OpenSSL's record header type");
_Static_assert(SSL3_RT_INNER_CONTENT_TYPE == VEGA_TLS_MSG_INNER_TYPE, "OpenSSL's inner type");

int vega_tls_config_set_msg_callback(vega_tls_config *cfg, vega_tls_msg_fn fn, void *user)
{
    if (!cfg)
        return -EINVAL;
    cfg->msg_fn = fn;
    cfg->msg_user = user;
    /* an SSL copies its context's callback when it is made: streams made before keep theirs */
    SSL_CTX_set_msg_callback(cfg->ctx, fn ? msg_cb : NULL);
    SSL_CTX_set_msg_callback_arg(cfg->ctx, cfg);
    return 0;
}

int vega_tls_config_set_ktls(vega_tls_config *cfg, vega_tls_ktls_mode mode)
{
    if (!cfg || mode < VEGA_TLS_KTLS_OFF || mode > VEGA_TLS_KTLS_TXRX)
        return -EINVAL;
    cfg->ktls = mode;
    return 0;
}
