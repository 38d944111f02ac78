/* SPDX-License-Identifier: MIT */
/* Certificate chains (RFC 8446 §4.4.2) and their verification against trust anchors
 * (RFC 5280 §6 path validation, RFC 6125 host names) with libcrypto's X509 verifier. */
#include <string.h>
#include <sys/stat.h>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "crypto_int.h"

struct entry {
    X509 *x;
    uint8_t *der;
    size_t len;
};

struct vega_crypto_cert_chain {
    size_t n;
    struct entry e[VEGA_CRYPTO_CERT_CHAIN_MAX];
};

struct vega_crypto_cert_store {
    X509_STORE *st;
};

int vega_crypto_cert_chain_new(vega_crypto_cert_chain **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : -ENOMEM;
}

size_t vega_crypto_cert_chain_count(const vega_crypto_cert_chain *c)
{
    return c->n;
}

void vega_crypto_cert_chain_free(vega_crypto_cert_chain *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        X509_free(c->e[i].x);
        free(c->e[i].der);
    }
    free(c);
}

static void entry_free(struct entry *e)
{
    X509_free(e->x);
    free(e->der);
}

/* libcrypto decodes a certificate's extensions lazily, on first use, under a lock that its
 * readers do not all take (ThreadSanitizer sees ASN1_STRING_cmp race the cache fill when two
 * threads verify the same fresh chain). Filling the cache once here, while the object is still
 * private to one thread, makes later verifications read-only. Returns false when an extension
 * is malformed (libcrypto then marks the certificate invalid). */
static bool warm_cache(X509 *x)
{
    return X509_check_purpose(x, -1, 0) == 1;
}

/* Parses exactly one DER certificate into e (its own copy of the bytes). */
static int parse_der(const uint8_t *der, size_t len, struct entry *e)
{
    if (len == 0 || len > LONG_MAX)
        return VEGA_ERR_CRYPTO_BAD_CERT;
    const unsigned char *p = der;
    X509 *x = d2i_X509(NULL, &p, (long)len);
    if (!x)
        return vega__crypto_fail(VEGA_ERR_CRYPTO_BAD_CERT);
    if ((size_t)(p - der) != len || !warm_cache(x)) { /* trailing bytes; bad extensions */
        X509_free(x);
        return vega__crypto_fail(VEGA_ERR_CRYPTO_BAD_CERT);
    }
    e->der = malloc(len);
    if (!e->der) {
        X509_free(x);
        return -ENOMEM;
    }
    memcpy(e->der, der, len);
    e->x = x;
    e->len = len;
    return 0;
}

/* Wraps an already parsed certificate (taken) with its DER encoding. */
static int wrap_x509(X509 *x, struct entry *e)
{
    unsigned char *der = NULL;
    int n = warm_cache(x) ? i2d_X509(x, &der) : 0;
    if (n <= 0) {
        X509_free(x);
        return vega__crypto_fail(VEGA_ERR_CRYPTO_BAD_CERT);
    }
    /* libcrypto allocated der with OPENSSL_malloc; keep our own malloc'd copy. */
    e->der = malloc((size_t)n);
    if (e->der)
        memcpy(e->der, der, (size_t)n);
    OPENSSL_free(der);
    if (!e->der) {
        X509_free(x);
        return -ENOMEM;
    }
    e->x = x;
    e->len = (size_t)n;
    return 0;
}

int vega_crypto_cert_chain_add_der(vega_crypto_cert_chain *c, const uint8_t *der, size_t len)
{
    if (c->n == VEGA_CRYPTO_CERT_CHAIN_MAX)
        return VEGA_ERR_FULL;
    struct entry e;
    int r = parse_der(der, len, &e);
    if (r < 0)
        return r;
    c->e[c->n++] = e;
    return 0;
}

/* True when the last libcrypto error says "no more PEM blocks": the normal end of input. */
static bool pem_at_end(void)
{
    unsigned long e = ERR_peek_last_error();
    return ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
}

/* Reads every CERTIFICATE block of pem into tmp (up to cap). Returns the count or an error. */
static int read_pem(const void *pem, size_t len, struct entry *tmp, size_t cap)
{
    if (len > INT_MAX)
        return VEGA_ERR_CRYPTO_BAD_CERT;
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    if (!b)
        return vega__crypto_fail(-ENOMEM);
    int n = 0, r = 0;
    for (;;) {
        X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
        if (!x) {
            r = pem_at_end() && n > 0 ? 0 : VEGA_ERR_CRYPTO_BAD_CERT;
            ERR_clear_error();
            break;
        }
        if ((size_t)n == cap) {
            X509_free(x);
            r = VEGA_ERR_FULL;
            break;
        }
        if ((r = wrap_x509(x, &tmp[n])) < 0)
            break;
        n++;
    }
    BIO_free(b);
    if (r < 0) {
        while (n > 0)
            entry_free(&tmp[--n]);
        return r;
    }
    return n;
}

/* Reads DER certificates stored back to back into tmp (up to cap). */
static int read_der(const uint8_t *p, size_t len, struct entry *tmp, size_t cap)
{
    int n = 0, r = 0;
    while (len > 0) {
        vega_ssize tlv = vega__crypto_der_tlv_len(p, len);
        if (tlv < 0 || p[0] != 0x30) { /* a Certificate is a SEQUENCE */
            r = VEGA_ERR_CRYPTO_BAD_CERT;
            break;
        }
        if ((size_t)n == cap) {
            r = VEGA_ERR_FULL;
            break;
        }
        if ((r = parse_der(p, (size_t)tlv, &tmp[n])) < 0)
            break;
        n++;
        p += tlv;
        len -= (size_t)tlv;
    }
    if (r == 0 && n == 0)
        r = VEGA_ERR_CRYPTO_BAD_CERT;
    if (r < 0) {
        while (n > 0)
            entry_free(&tmp[--n]);
        return r;
    }
    return n;
}

int vega_crypto_cert_chain_add(vega_crypto_cert_chain *c, const void *data, size_t len)
{
    struct entry tmp[VEGA_CRYPTO_CERT_CHAIN_MAX];
    size_t room = vega__room(c->n, VEGA_CRYPTO_CERT_CHAIN_MAX);
    int n = vega__crypto_is_pem(data, len) ? read_pem(data, len, tmp, room)
                                           : read_der(data, len, tmp, room);
    if (n < 0)
        return n;
    memcpy(&c->e[c->n], tmp, (size_t)n * sizeof(tmp[0]));
    c->n += (size_t)n;
    VEGA_ASSERT(c->n <= VEGA_CRYPTO_CERT_CHAIN_MAX);
    return 0;
}

int vega_crypto_cert_chain_get_der(const vega_crypto_cert_chain *c, size_t i, const uint8_t **der,
                                   size_t *len)
{
    if (i >= c->n)
        return -EINVAL;
    *der = c->e[i].der;
    *len = c->e[i].len;
    return 0;
}

int vega_crypto_cert_chain_get_key(const vega_crypto_cert_chain *c, size_t i, vega_crypto_key **out)
{
    *out = NULL;
    if (i >= c->n)
        return -EINVAL;
    EVP_PKEY *pkey = X509_get_pubkey(c->e[i].x); /* a new reference */
    if (!pkey)
        return vega__crypto_fail(VEGA_ERR_CRYPTO_BAD_KEY);
    return vega__crypto_key_wrap(pkey, false, out);
}

/* ---- trust store -------------------------------------------------------------------------- */

int vega_crypto_cert_store_new(vega_crypto_cert_store **out, const char *ca_file,
                               const char *ca_dir)
{
    *out = NULL;
    vega_crypto_cert_store *s = calloc(1, sizeof(*s));
    if (!s || !(s->st = X509_STORE_new())) {
        free(s);
        return vega__crypto_fail(-ENOMEM);
    }
    int r = 0;
    if (!ca_file && !ca_dir) {
        if (X509_STORE_set_default_paths(s->st) != 1)
            r = VEGA_ERR_CRYPTO_CA_LOAD;
    } else {
        if (ca_file && X509_STORE_load_file(s->st, ca_file) != 1)
            r = VEGA_ERR_CRYPTO_CA_LOAD;
        /* The hashed directory is read lazily, during verification; check that it exists now
         * so a typo fails here rather than as "unknown CA" later. */
        struct stat st;
        if (r == 0 && ca_dir &&
            (stat(ca_dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
             X509_STORE_load_path(s->st, ca_dir) != 1))
            r = VEGA_ERR_CRYPTO_CA_LOAD;
    }
    if (r < 0) {
        vega_crypto_cert_store_free(s);
        return vega__crypto_fail(r);
    }
    ERR_clear_error(); /* the default paths leave "file not found" errors when absent */
    *out = s;
    return 0;
}

int vega_crypto_cert_store_add_pem(vega_crypto_cert_store *s, const void *pem, size_t len)
{
    if (len > INT_MAX)
        return VEGA_ERR_CRYPTO_BAD_CERT;
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    if (!b)
        return vega__crypto_fail(-ENOMEM);
    int r, added = 0;
    for (;;) {
        X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
        if (!x) {
            r = pem_at_end() && added > 0 ? 0 : VEGA_ERR_CRYPTO_BAD_CERT;
            break;
        }
        int ok = warm_cache(x) ? X509_STORE_add_cert(s->st, x) : -1;
        X509_free(x); /* the store keeps its own reference */
        if (ok != 1) {
            r = ok < 0 ? VEGA_ERR_CRYPTO_BAD_CERT : VEGA_ERR_CRYPTO_LIBCRYPTO;
            break;
        }
        added++;
    }
    BIO_free(b);
    ERR_clear_error();
    return r;
}

void vega_crypto_cert_store_free(vega_crypto_cert_store *s)
{
    if (!s)
        return;
    X509_STORE_free(s->st);
    free(s);
}

/* ---- verification ------------------------------------------------------------------------- */

static int map_x509_error(int e)
{
    switch (e) {
    case X509_V_OK:
        return 0;
    case X509_V_ERR_CERT_HAS_EXPIRED:
        return VEGA_ERR_CRYPTO_CERT_EXPIRED;
    case X509_V_ERR_CERT_NOT_YET_VALID:
        return VEGA_ERR_CRYPTO_CERT_NOT_YET_VALID;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_UNTRUSTED:
    case X509_V_ERR_CERT_REJECTED:
        return VEGA_ERR_CRYPTO_CERT_UNKNOWN_CA;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
    case X509_V_ERR_EMAIL_MISMATCH:
        return VEGA_ERR_CRYPTO_CERT_NAME_MISMATCH;
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
    case X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE:
        return VEGA_ERR_CRYPTO_CERT_BAD_SIGNATURE;
    default:
        return VEGA_ERR_CRYPTO_CERT_INVALID;
    }
}

/* Puts the name check on param: an IP literal (v4 or v6) or else a DNS name. */
static bool set_host(X509_VERIFY_PARAM *param, const char *host)
{
    if (X509_VERIFY_PARAM_set1_ip_asc(param, host) == 1)
        return true;
    ERR_clear_error();
    /* RFC 6125 §6.4.4 lets a client ignore the CN when DNS-IDs are present; never use it at
     * all (modern practice, RFC 9525 §6.3), and never match partial wildcards ("w*.example"). */
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT |
                                               X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return X509_VERIFY_PARAM_set1_host(param, host, 0) == 1;
}

static void set_result(vega_crypto_cert_verify_result *res, int err, int depth)
{
    if (!res)
        return;
    res->x509_error = err;
    res->depth = depth;
    res->reason = X509_verify_cert_error_string(err);
}

int vega_crypto_cert_chain_verify_versioned(const vega_crypto_cert_chain *c,
                                            const vega_crypto_cert_store *s,
                                            const vega_crypto_cert_verify_opts *o,
                                            vega_crypto_cert_verify_result *res, int opts_version)
{
    if (opts_version != VEGA_CRYPTO_CERT_VERIFY_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    set_result(res, X509_V_ERR_UNSPECIFIED, -1);
    if (c->n == 0 || (o->host && !o->host[0]))
        return -EINVAL;
    int r = VEGA_ERR_CRYPTO_LIBCRYPTO;
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    STACK_OF(X509) *untrusted = sk_X509_new_null();
    if (!ctx || !untrusted) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t i = 1; i < c->n; i++)
        if (!sk_X509_push(untrusted, c->e[i].x)) /* borrowed: the stack is freed shallowly */
            goto out;
    if (X509_STORE_CTX_init(ctx, s->st, c->e[0].x, untrusted) != 1)
        goto out;
    X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(ctx);
    if (o->time)
        X509_VERIFY_PARAM_set_time(param, (time_t)o->time);
    if (o->max_depth > 0)
        X509_VERIFY_PARAM_set_depth(param, o->max_depth);
    int purpose =
        o->purpose == VEGA_CRYPTO_CERT_CLIENT ? X509_PURPOSE_SSL_CLIENT : X509_PURPOSE_SSL_SERVER;
    if (X509_STORE_CTX_set_purpose(ctx, purpose) != 1)
        goto out;
    if (o->host && !set_host(param, o->host))
        goto out;
    int ok = X509_verify_cert(ctx);
    int err = X509_STORE_CTX_get_error(ctx);
    if (ok == 1) {
        set_result(res, X509_V_OK, -1);
        r = 0;
    } else {
        if (err == X509_V_OK) /* failed without saying why */
            err = X509_V_ERR_UNSPECIFIED;
        set_result(res, err, X509_STORE_CTX_get_error_depth(ctx));
        r = map_x509_error(err);
    }
out:
    sk_X509_free(untrusted);
    X509_STORE_CTX_free(ctx);
    return r < 0 ? vega__crypto_fail(r) : 0;
}
