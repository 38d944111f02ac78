/* SPDX-License-Identifier: MIT */
/* TLS failures as codes and messages: OpenSSL's error queue, the certificate verification
 * result and the alerts sent and received (RFC 8446 section 6), turned into one record per
 * stream. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "tls_int.h"

/* The messages live with every other library code in lib/base/err.c. */
const char *vega_tls_strerror(int err)
{
    return vega_strerror(err);
}

const char *vega_tls_err_name(int err)
{
    return vega_err_name(err);
}

/* RFC 8446 section 6 and RFC 5246 section 7.2: AlertDescription. */
const char *vega__tls_alert_name(int alert)
{
    /* clang-format off */
    switch (alert) {
    case 0: return "close_notify";
    case 10: return "unexpected_message";
    case 20: return "bad_record_mac";
    case 21: return "decryption_failed";
    case 22: return "record_overflow";
    case 30: return "decompression_failure";
    case 40: return "handshake_failure";
    case 41: return "no_certificate";
    case 42: return "bad_certificate";
    case 43: return "unsupported_certificate";
    case 44: return "certificate_revoked";
    case 45: return "certificate_expired";
    case 46: return "certificate_unknown";
    case 47: return "illegal_parameter";
    case 48: return "unknown_ca";
    case 49: return "access_denied";
    case 50: return "decode_error";
    case 51: return "decrypt_error";
    case 60: return "export_restriction";
    case 70: return "protocol_version";
    case 71: return "insufficient_security";
    case 80: return "internal_error";
    case 86: return "inappropriate_fallback";
    case 90: return "user_canceled";
    case 100: return "no_renegotiation";
    case 109: return "missing_extension";
    case 110: return "unsupported_extension";
    case 111: return "certificate_unobtainable";
    case 112: return "unrecognized_name";
    case 113: return "bad_certificate_status_response";
    case 114: return "bad_certificate_hash_value";
    case 115: return "unknown_psk_identity";
    case 116: return "certificate_required";
    case 120: return "no_application_protocol";
    default: return "unknown";
    }
    /* clang-format on */
}

/* What a fatal alert from the peer usually means. */
static const char *alert_hint(int alert)
{
    /* clang-format off */
    switch (alert) {
    case 40: return " (no common cipher, group or signature algorithm, or the peer refused)";
    case 42:
    case 43:
    case 44:
    case 45:
    case 46:
    case 48: return " (the peer rejected our certificate)";
    case 70: return " (no TLS version in common)";
    case 112: return " (the server has no certificate for that name)";
    case 116: return " (the server requires a client certificate)";
    case 120: return " (no ALPN protocol in common)";
    default: return "";
    }
    /* clang-format on */
}

void vega__tls_info_cb(const SSL *ssl, int where, int ret)
{
    if (!(where & SSL_CB_ALERT))
        return;
    struct vega_tls *t = vega__tls_from_ssl(ssl);
    int level = (ret >> 8) & 0xff, desc = ret & 0xff;
    if (!t || level != SSL3_AL_FATAL)
        return;
    if (where & SSL_CB_READ)
        t->alert_recv = desc;
    else
        t->alert_sent = desc;
}

/* ---- verification details -------------------------------------------------------------------- */

static void name_of(X509 *x, char *buf, size_t cap)
{
    buf[0] = '\0';
    BIO *b = BIO_new(BIO_s_mem());
    if (!b)
        return;
    X509_NAME_print_ex(b, X509_get_subject_name(x), 0, XN_FLAG_RFC2253);
    char *p;
    long n = BIO_get_mem_data(b, &p);
    snprintf(buf, cap, "%.*s", (int)n, p);
    BIO_free(b);
}

static void time_of(const ASN1_TIME *tm, char *buf, size_t cap)
{
    buf[0] = '\0';
    BIO *b = BIO_new(BIO_s_mem());
    if (!b)
        return;
    ASN1_TIME_print(b, tm);
    char *p;
    long n = BIO_get_mem_data(b, &p);
    snprintf(buf, cap, "%.*s", (int)n, p);
    BIO_free(b);
}

/* "DNS:localhost, IP:127.0.0.1" */
static void sans_of(X509 *x, char *buf, size_t cap)
{
    buf[0] = '\0';
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    size_t o = 0;
    for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens) && o + 1 < cap; i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type == GEN_DNS) {
            const ASN1_IA5STRING *s = g->d.dNSName;
            o += (size_t)snprintf(buf + o, cap - o, "%sDNS:%.*s", o ? ", " : "",
                                  ASN1_STRING_length(s), (const char *)ASN1_STRING_get0_data(s));
        } else if (g->type == GEN_IPADD) {
            char ip[INET6_ADDRSTRLEN] = "?";
            int n = ASN1_STRING_length(g->d.iPAddress);
            const unsigned char *d = ASN1_STRING_get0_data(g->d.iPAddress);
            if (n == 4 || n == 16)
                inet_ntop(n == 4 ? AF_INET : AF_INET6, d, ip, sizeof(ip));
            o += (size_t)snprintf(buf + o, cap - o, "%sIP:%s", o ? ", " : "", ip);
        }
    }
    GENERAL_NAMES_free(gens);
    if (o >= cap)
        buf[cap - 1] = '\0';
}

int vega__tls_verify_cb(int ok, X509_STORE_CTX *ctx)
{
    if (ok)
        return 1;
    SSL *ssl = X509_STORE_CTX_get_ex_data(ctx, SSL_get_ex_data_X509_STORE_CTX_idx());
    struct vega_tls *t = ssl ? vega__tls_from_ssl(ssl) : NULL;
    if (!t || t->verify_err)
        return 0;
    int err = X509_STORE_CTX_get_error(ctx);
    X509 *x = X509_STORE_CTX_get_current_cert(ctx);
    t->verify_err = err;
    struct vega__tls_diag *d = vega__tls_diag(t);
    if (!d)
        return 0; /* the code is kept; its detail cannot be */
    char subj[128] = "", extra[160] = "";
    if (x)
        name_of(x, subj, sizeof(subj));
    switch (err) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
        if (x)
            time_of(X509_get0_notAfter(x), extra, sizeof(extra));
        /* Truncating a long subject is fine: the detail is for people. */
        if (snprintf(d->verify_detail, sizeof(d->verify_detail), " (notAfter %s; subject %s)",
                     extra, subj) < 0)
            d->verify_detail[0] = 0;
        break;
    case X509_V_ERR_CERT_NOT_YET_VALID:
        if (x)
            time_of(X509_get0_notBefore(x), extra, sizeof(extra));
        if (snprintf(d->verify_detail, sizeof(d->verify_detail), " (notBefore %s; subject %s)",
                     extra, subj) < 0)
            d->verify_detail[0] = 0;
        break;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        if (x)
            sans_of(x, extra, sizeof(extra));
        snprintf(d->verify_detail, sizeof(d->verify_detail),
                 ": wanted %s, the certificate is for %s", t->server_name ? t->server_name : "?",
                 extra[0] ? extra : subj);
        break;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_UNTRUSTED:
        snprintf(d->verify_detail, sizeof(d->verify_detail),
                 " (unknown CA: subject %s; add its CA to the trusted ones)", subj);
        break;
    default:
        snprintf(d->verify_detail, sizeof(d->verify_detail), " (subject %s)", subj);
        break;
    }
    return 0;
}

static int verify_code(long v)
{
    switch (v) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
        return VEGA_ERR_TLS_CERT_EXPIRED;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
    case X509_V_ERR_EMAIL_MISMATCH:
        return VEGA_ERR_TLS_CERT_NAME;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_UNTRUSTED:
        return VEGA_ERR_TLS_CERT_UNTRUSTED;
    default:
        return VEGA_ERR_TLS_CERT;
    }
}

/* ---- the record ------------------------------------------------------------------------------ */

struct vega__tls_diag *vega__tls_diag(struct vega_tls *t)
{
    if (!t->diag) {
        struct vega__tls_diag *d = calloc(1, sizeof(*d));
        if (!d)
            return NULL;
        d->err.alert = -1;
        /* vega_tls_last_error reads the pointer without mu */
        __atomic_store_n(&t->diag, d, __ATOMIC_RELEASE);
    }
    return t->diag;
}

int vega__tls_set_error(struct vega_tls *t, int code, const char *fmt, ...)
{
    t->err_code = code;
    struct vega__tls_diag *d = vega__tls_diag(t);
    if (!d)
        return code;
    d->err.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err.message, sizeof(d->err.message), fmt, ap);
    va_end(ap);
    return code;
}

static void set_alert(struct vega_tls *t, int alert, bool received)
{
    struct vega__tls_diag *d = vega__tls_diag(t);
    if (d) {
        d->err.alert = alert;
        d->err.alert_received = received;
    }
}

int vega__tls_fail(struct vega_tls *t, int ssl_err)
{
    unsigned long first = ERR_get_error();
    ERR_clear_error();
    int reason = first ? ERR_GET_REASON(first) : 0;
    const char *rs = first ? ERR_reason_error_string(first) : NULL;
    bool done = t->hs_done;
    const char *stage = done ? "TLS" : "TLS handshake failed";
    set_alert(t, -1, false);
    if (t->diag)
        t->diag->err.verify_result = t->verify_err;
    if (t->tx_bypass_err) {
        return vega__tls_set_error(t, VEGA_ERR_TLS_PROTOCOL,
                                   "TLS: the peer asked for a KeyUpdate or renegotiation while "
                                   "the kernel holds the keys (kTLS): not supported");
    }
    if (t->verify_err && (reason == SSL_R_CERTIFICATE_VERIFY_FAILED || !done)) {
        return vega__tls_set_error(t, verify_code(t->verify_err), "certificate verify failed: %s%s",
                                   X509_verify_cert_error_string(t->verify_err),
                                   t->diag ? t->diag->verify_detail : "");
    }
    if (t->alert_recv >= 0) {
        set_alert(t, t->alert_recv, true);
        int code = t->alert_recv == 116 ? VEGA_ERR_TLS_NO_CERT : VEGA_ERR_TLS_ALERT;
        return vega__tls_set_error(t, code, "%s: the peer sent alert %s (%d)%s", stage,
                                   vega__tls_alert_name(t->alert_recv), t->alert_recv,
                                   alert_hint(t->alert_recv));
    }
    if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING ||
        (t->in_eof && (ssl_err == SSL_ERROR_SYSCALL || !first))) {
        if (done)
            return vega__tls_set_error(t, VEGA_ERR_TLS_TRUNCATED,
                                       "TLS stream truncated: the peer closed the connection "
                                       "without close_notify");
        return vega__tls_set_error(t, VEGA_ERR_TLS_HANDSHAKE,
                                   "TLS handshake failed: the peer closed the connection");
    }
    if (reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
        if (t->alert_sent >= 0)
            set_alert(t, t->alert_sent, false);
        return vega__tls_set_error(t, VEGA_ERR_TLS_NO_CERT,
                                   "TLS handshake failed: the client sent no certificate, and "
                                   "one is required");
    }
    if (ssl_err == SSL_ERROR_SYSCALL && !first)
        return vega__tls_set_error(t, -ENOMEM, "%s: out of memory", stage);
    int code = done ? VEGA_ERR_TLS_PROTOCOL : VEGA_ERR_TLS_HANDSHAKE;
    if (reason == SSL_R_NO_APPLICATION_PROTOCOL)
        return vega__tls_set_error(t, code,
                                   "%s: no ALPN protocol in common with the client (sent alert "
                                   "no_application_protocol)",
                                   stage);
    if (t->alert_sent >= 0) {
        set_alert(t, t->alert_sent, false);
        return vega__tls_set_error(t, code, "%s: %s (sent alert %s)", stage, rs ? rs : "error",
                                   vega__tls_alert_name(t->alert_sent));
    }
    return vega__tls_set_error(t, code, "%s: %s", stage, rs ? rs : "error");
}
