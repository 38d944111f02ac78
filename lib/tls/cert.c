/* SPDX-License-Identifier: MIT */
/* Certificates with their keys (PEM in memory or files) and the generator of self-signed or
 * CA-signed ECDSA P-256 certificates (RFC 5280 profile: SANs, key usages). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "tls_int.h"

/* Files larger than this are not certificates or keys. */
#define MAX_PEM_FILE (4u << 20)

int vega__tls_read_file(const char *path, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > MAX_PEM_FILE) {
        close(fd);
        return S_ISDIR(st.st_mode) ? -EISDIR : -EFBIG;
    }
    size_t cap = (size_t)st.st_size, n = 0;
    char *p = malloc(cap + 1);
    if (!p) {
        close(fd);
        return -ENOMEM;
    }
    while (n < cap) {
        ssize_t k = read(fd, p + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = -errno;
            free(p);
            close(fd);
            return e;
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    close(fd);
    p[n] = '\0';
    *out = p;
    *len = n;
    return 0;
}

vega_tls_cert *vega__tls_cert_ref(vega_tls_cert *c)
{
    if (c)
        atomic_fetch_add(&c->refs, 1);
    return c;
}

void vega_tls_cert_free(vega_tls_cert *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    X509_free(c->leaf);
    sk_X509_pop_free(c->chain, X509_free);
    EVP_PKEY_free(c->key);
    free(c);
}

int vega__tls_cert_use(SSL *ssl, const vega_tls_cert *c)
{
    return SSL_use_cert_and_key(ssl, c->leaf, c->key, c->chain, 1);
}

int vega_tls_cert_new_pem(vega_tls_cert **out, const void *chain, size_t chain_len, const void *key,
                          size_t key_len)
{
    if (!out || !chain || !key || !chain_len || !key_len || chain_len > INT32_MAX ||
        key_len > INT32_MAX)
        return -EINVAL;
    struct vega_tls_cert *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    atomic_init(&c->refs, 1);
    int r = VEGA_ERR_TLS_CONFIG;
    BIO *b = BIO_new_mem_buf(chain, (int)chain_len);
    c->chain = sk_X509_new_null();
    if (!b || !c->chain) {
        r = -ENOMEM;
        goto fail;
    }
    c->leaf = PEM_read_bio_X509(b, NULL, NULL, NULL);
    if (!c->leaf)
        goto fail;
    for (X509 *x; (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL;) {
        if (!sk_X509_push(c->chain, x)) {
            X509_free(x);
            r = -ENOMEM;
            goto fail;
        }
    }
    BIO_free(b);
    ERR_clear_error(); /* the loop ends on "no start line" */
    b = BIO_new_mem_buf(key, (int)key_len);
    if (!b) {
        r = -ENOMEM;
        goto fail;
    }
    c->key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
    if (!c->key || X509_check_private_key(c->leaf, c->key) != 1)
        goto fail;
    BIO_free(b);
    ERR_clear_error();
    *out = c;
    return 0;
fail:
    BIO_free(b);
    ERR_clear_error();
    c->refs = 1;
    vega_tls_cert_free(c);
    return r;
}

int vega_tls_cert_new_files(vega_tls_cert **out, const char *chain_path, const char *key_path)
{
    if (!out || !chain_path)
        return -EINVAL;
    char *chain = NULL, *key = NULL;
    size_t clen = 0, klen = 0;
    int r = vega__tls_read_file(chain_path, &chain, &clen);
    if (r == 0 && key_path)
        r = vega__tls_read_file(key_path, &key, &klen);
    if (r == 0) {
        if (!clen || (key_path && !klen))
            r = VEGA_ERR_TLS_CONFIG;
        else
            r = vega_tls_cert_new_pem(out, chain, clen, key_path ? key : chain,
                                      key_path ? klen : clen);
    }
    if (key)
        OPENSSL_cleanse(key, klen);
    free(chain);
    free(key);
    return r;
}

/* ---- generator ------------------------------------------------------------------------------- */

static const char *const default_names[] = {"localhost", "127.0.0.1", "::1"};

void vega_tls_selfsigned_opts_init_versioned(vega_tls_selfsigned_opts *o, int opts_version)
{
    if (opts_version != VEGA_TLS_SELFSIGNED_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_tls_selfsigned_opts_init: options of another libvega (version %d)",
                    opts_version);
    memset(o, 0, sizeof(*o));
    o->not_before_s = -3600;
    o->not_after_s = 7 * 24 * 3600;
}

/* A DNS name: letters, digits, '-', '.', and a leading "*." for a wildcard. */
static bool is_dns_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    if (s[0] == '*' && s[1] == '.')
        s += 2;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '.'))
            return false;
    }
    return true;
}

/* Adds an extension given in OpenSSL's config syntax. */
static bool add_ext(X509 *cert, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    if (!ext)
        return false;
    bool ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

/* subjectAltName: "DNS:a,IP:b,...". */
static int san_value(const vega_tls_selfsigned_opts *o, char **out)
{
    const char *const *names = o->names ? o->names : default_names;
    size_t n = o->names ? o->nnames : VEGA__ARRAY_LEN(default_names), len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(names[i]) + 5;
    char *v = malloc(len);
    if (!v)
        return -ENOMEM;
    v[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        ASN1_OCTET_STRING *ip = a2i_IPADDRESS(names[i]);
        bool is_ip = ip != NULL;
        ASN1_OCTET_STRING_free(ip);
        if (!is_ip && !is_dns_name(names[i])) {
            free(v);
            ERR_clear_error();
            return -EINVAL;
        }
        strcat(v, i ? "," : "");
        strcat(v, is_ip ? "IP:" : "DNS:");
        strcat(v, names[i]);
    }
    ERR_clear_error();
    *out = v;
    return 0;
}

static int pem_out(BIO *b, char **out)
{
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *s = malloc((size_t)n + 1);
    if (!s)
        return -ENOMEM;
    memcpy(s, data, (size_t)n);
    s[n] = '\0';
    *out = s;
    return 0;
}

/* The issuer's certificate and key, when o names one. */
static int load_issuer(const vega_tls_selfsigned_opts *o, X509 **icert, EVP_PKEY **ikey)
{
    *icert = NULL;
    *ikey = NULL;
    if (!o->issuer_cert_pem && !o->issuer_key_pem)
        return 0;
    if (!o->issuer_cert_pem || !o->issuer_key_pem)
        return -EINVAL;
    BIO *b = BIO_new_mem_buf(o->issuer_cert_pem, -1);
    *icert = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    b = BIO_new_mem_buf(o->issuer_key_pem, -1);
    *ikey = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    ERR_clear_error();
    if (!*icert || !*ikey || X509_check_private_key(*icert, *ikey) != 1) {
        ERR_clear_error();
        X509_free(*icert);
        EVP_PKEY_free(*ikey);
        *icert = NULL;
        *ikey = NULL;
        return VEGA_ERR_TLS_CONFIG;
    }
    return 0;
}

/* Builds and signs the certificate for key. Returns 0 or a code. */
static int build_cert(const vega_tls_selfsigned_opts *o, EVP_PKEY *key, X509 *icert, EVP_PKEY *ikey,
                      X509 **out)
{
    const char *const *names = o->names ? o->names : default_names;
    size_t n = o->names ? o->nnames : VEGA__ARRAY_LEN(default_names);
    const char *cn = o->common_name ? o->common_name : n ? names[0] : "vega";
    char *san = NULL;
    int r = n ? san_value(o, &san) : 0;
    if (r < 0)
        return r;
    r = -ENOMEM;
    X509 *x = X509_new();
    X509_NAME *name = X509_NAME_new();
    ASN1_INTEGER *serial = ASN1_INTEGER_new();
    BIGNUM *bn = BN_new();
    if (!x || !name || !serial || !bn)
        goto out;
    X509_set_version(x, X509_VERSION_3);
    /* RFC 5280 section 4.1.2.2: a positive serial of at most 20 octets; 127 random bits. */
    if (!BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) || !BN_to_ASN1_INTEGER(bn, serial))
        goto out;
    X509_set_serialNumber(x, serial);
    X509_gmtime_adj(X509_getm_notBefore(x), (long)o->not_before_s);
    X509_gmtime_adj(X509_getm_notAfter(x), (long)o->not_after_s);
    if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                    0))
        goto out;
    X509_set_subject_name(x, name);
    X509_set_issuer_name(x, icert ? X509_get_subject_name(icert) : name);
    X509_set_pubkey(x, key);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, icert ? icert : x, x, NULL, NULL, 0);
    r = VEGA_ERR_TLS_CONFIG;
    if (!add_ext(x, &ctx, NID_basic_constraints, o->is_ca ? "critical,CA:TRUE" : "CA:FALSE") ||
        !add_ext(x, &ctx, NID_key_usage,
                 o->is_ca ? "critical,digitalSignature,keyCertSign,cRLSign"
                          : "critical,digitalSignature") ||
        !add_ext(x, &ctx, NID_subject_key_identifier, "hash") ||
        !add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always"))
        goto out;
    if (!o->is_ca && !add_ext(x, &ctx, NID_ext_key_usage, "serverAuth,clientAuth"))
        goto out;
    if (san && !add_ext(x, &ctx, NID_subject_alt_name, san))
        goto out;
    if (!X509_sign(x, ikey ? ikey : key, EVP_sha256()))
        goto out;
    *out = x;
    x = NULL;
    r = 0;
out:
    ERR_clear_error();
    X509_free(x);
    X509_NAME_free(name);
    ASN1_INTEGER_free(serial);
    BN_free(bn);
    free(san);
    return r;
}

int vega_tls_selfsigned_ex_versioned(char **cert_pem, char **key_pem,
                                     const vega_tls_selfsigned_opts *o, int opts_version)
{
    if (opts_version != VEGA_TLS_SELFSIGNED_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    vega_tls_selfsigned_opts def;
    if (!cert_pem || !key_pem)
        return -EINVAL;
    if (!o) {
        vega_tls_selfsigned_opts_init(&def);
        o = &def;
    }
    X509 *icert, *x = NULL;
    EVP_PKEY *ikey, *key = NULL;
    int r = load_issuer(o, &icert, &ikey);
    if (r < 0)
        return r;
    BIO *cb = NULL, *kb = NULL;
    key = EVP_EC_gen("P-256");
    if (!key) {
        r = -ENOMEM;
        goto out;
    }
    r = build_cert(o, key, icert, ikey, &x);
    if (r < 0)
        goto out;
    r = -ENOMEM;
    cb = BIO_new(BIO_s_mem());
    kb = BIO_new(BIO_s_mem());
    if (!cb || !kb || !PEM_write_bio_X509(cb, x) ||
        !PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL))
        goto out;
    char *c = NULL, *k = NULL;
    if (pem_out(cb, &c) < 0 || pem_out(kb, &k) < 0) {
        free(c);
        goto out;
    }
    *cert_pem = c;
    *key_pem = k;
    r = 0;
out:
    ERR_clear_error();
    BIO_free(cb);
    BIO_free_all(kb);
    X509_free(x);
    X509_free(icert);
    EVP_PKEY_free(key);
    EVP_PKEY_free(ikey);
    return r;
}

int vega_tls_selfsigned(char **cert_pem, char **key_pem)
{
    return vega_tls_selfsigned_ex(cert_pem, key_pem, NULL);
}
