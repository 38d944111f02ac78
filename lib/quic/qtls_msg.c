/* SPDX-License-Identifier: MIT */
/* TLS 1.3 handshake message codecs for the QUIC handshake (RFC 8446 §4): a growable builder and
 * strict parsers for ClientHello, ServerHello, EncryptedExtensions, Certificate and
 * CertificateVerify. Every length must fit exactly: anything else is decode_error. */
#include <stdlib.h>

#include <vega/crypto.h>

#include "base.h"
#include "qtls_int.h"

const uint8_t vega__qtls_hrr_random[32] = {
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
};

#define DECODE  VEGA__QTLS_ALERT_DECODE_ERROR
#define ILLEGAL VEGA__QTLS_ALERT_ILLEGAL_PARAMETER

/* ---- builder --------------------------------------------------------------------------------- */

static bool reserve(struct qt_buf *b, size_t n)
{
    if (b->oom)
        return false;
    if (vega__fits(b->len, n, b->cap))
        return true;
    if (n > SIZE_MAX / 4 - b->len) {
        b->oom = true;
        return false;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (!vega__fits(b->len, n, cap)) /* b->len + n < SIZE_MAX / 4: no wrap */
        cap *= 2;
    uint8_t *p = vega__quic_malloc(b->mem, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    if (b->len)
        memcpy(p, b->p, b->len);
    if (b->p) {
        vega_crypto_cleanse(b->p, b->cap);
        vega__quic_free(b->mem, b->p);
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void vega__qt_put(struct qt_buf *b, const void *d, size_t n)
{
    if (n == 0 || !reserve(b, n))
        return;
    memcpy(b->p + b->len, d, n);
    b->len += n;
    VEGA_ASSERT(b->len <= b->cap);
}

void vega__qt_put_int(struct qt_buf *b, uint64_t v, size_t n)
{
    uint8_t tmp[8];
    for (size_t i = 0; i < n; i++)
        tmp[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    vega__qt_put(b, tmp, n);
}

size_t vega__qt_open(struct qt_buf *b, size_t n)
{
    size_t mark = b->len;
    vega__qt_put_int(b, 0, n);
    return mark;
}

void vega__qt_close(struct qt_buf *b, size_t mark, size_t n)
{
    if (b->oom)
        return;
    VEGA_ASSERT(mark + n <= b->len); /* vega__qt_open put the n-byte prefix at mark */
    size_t body = b->len - mark - n;
    if (n < 8 && body >> (8 * n)) {
        b->oom = true; /* a length that does not fit its prefix: never sent */
        return;
    }
    for (size_t i = 0; i < n; i++)
        b->p[mark + i] = (uint8_t)(body >> (8 * (n - 1 - i)));
}

void vega__qt_buf_free(struct qt_buf *b)
{
    const vega_quic_mem *mem = b->mem;
    if (b->p) {
        vega_crypto_cleanse(b->p, b->cap);
        vega__quic_free(mem, b->p);
    }
    memset(b, 0, sizeof(*b));
    b->mem = mem; /* the transcript buffer is emptied and reused after a HelloRetryRequest */
}

/* ---- shared helpers -------------------------------------------------------------------------- */

/* Opens a handshake message of type want: the body as a reader. */
static int msg_body(const uint8_t *msg, size_t len, uint8_t want, struct qt_rd *body)
{
    if (len < 4 || msg[0] != want || qt_be(msg + 1, 3) != len - 4)
        return DECODE;
    body->p = msg + 4;
    body->end = msg + len;
    return 0;
}

/* Records an extension type; a second one of the same type is illegal_parameter (§4.2). */
static int ext_seen(uint16_t *types, size_t *n, uint16_t type)
{
    for (size_t i = 0; i < *n; i++)
        if (types[i] == type)
            return ILLEGAL;
    if (*n == QT_MAX_EXTS)
        return DECODE;
    types[(*n)++] = type;
    return 0;
}

/* A non-empty vector of 2-byte values. */
static bool u16_list(struct qt_rd *r, size_t prefix, const uint8_t **p, size_t *len)
{
    struct qt_rd v;
    if (!qt_vec(r, prefix, &v) || qt_left(&v) < 2 || qt_left(&v) % 2)
        return false;
    *p = v.p;
    *len = qt_left(&v);
    return true;
}

/* An ALPN ProtocolNameList: non-empty, of non-empty names. */
static bool alpn_list(struct qt_rd *r, const uint8_t **p, size_t *len)
{
    struct qt_rd v, name;
    if (!qt_vec(r, 2, &v) || qt_left(&v) == 0)
        return false;
    *p = v.p;
    *len = qt_left(&v);
    while (qt_left(&v))
        if (!qt_vec(&v, 1, &name) || qt_left(&name) == 0)
            return false;
    return true;
}

/* ---- ClientHello (§4.1.2) -------------------------------------------------------------------- */

static int ch_ext(struct vega__qtls_hello *h, uint16_t type, struct qt_rd *e, const uint8_t *msg)
{
    struct qt_rd v, item;
    uint64_t x;
    switch (type) {
    case QT_EXT_SUPPORTED_VERSIONS:
        if (!qt_vec(e, 1, &v) || qt_left(&v) < 2 || qt_left(&v) % 2)
            return DECODE;
        h->has_versions = true;
        while (qt_int(&v, 2, &x))
            if (x == QT_TLS13)
                h->tls13 = true;
        break;
    case QT_EXT_SUPPORTED_GROUPS:
        if (!u16_list(e, 2, &h->groups, &h->groups_len))
            return DECODE;
        h->has_groups = true;
        break;
    case QT_EXT_KEY_SHARE:
        if (!qt_vec(e, 2, &v))
            return DECODE;
        h->has_key_share = true;
        h->shares = v.p;
        h->shares_len = qt_left(&v);
        while (qt_left(&v))
            if (!qt_int(&v, 2, &x) || !qt_vec(&v, 2, &item) || qt_left(&item) == 0)
                return DECODE;
        break;
    case QT_EXT_SIGNATURE_ALGORITHMS:
        if (!u16_list(e, 2, &h->sigalgs, &h->sigalgs_len))
            return DECODE;
        h->has_sigalgs = true;
        break;
    case QT_EXT_SERVER_NAME:
        if (!qt_vec(e, 2, &v) || qt_left(&v) == 0)
            return DECODE;
        h->has_sni = true;
        while (qt_left(&v)) {
            uint64_t nt;
            if (!qt_int(&v, 1, &nt) || !qt_vec(&v, 2, &item) || qt_left(&item) == 0)
                return DECODE;
            if (nt == 0) {
                if (h->sni) /* RFC 6066 §3: one name per type */
                    return ILLEGAL;
                h->sni = item.p;
                h->sni_len = qt_left(&item);
            }
        }
        break;
    case QT_EXT_ALPN:
        if (!alpn_list(e, &h->alpn, &h->alpn_len))
            return DECODE;
        h->has_alpn = true;
        break;
    case QT_EXT_QUIC_TP:
        h->has_tp = true;
        h->tp = e->p;
        h->tp_len = qt_left(e);
        e->p = e->end;
        break;
    case QT_EXT_PSK_KEY_EXCHANGE_MODES:
        if (!qt_vec(e, 1, &v) || qt_left(&v) == 0)
            return DECODE;
        h->has_psk_modes = true;
        while (qt_int(&v, 1, &x))
            if (x == 1)
                h->psk_dhe_ke = true;
        break;
    case QT_EXT_EARLY_DATA:
        h->early_data = true;
        break;
    case QT_EXT_COOKIE:
        if (!qt_vec(e, 2, &v) || qt_left(&v) == 0)
            return DECODE;
        h->has_cookie = true;
        h->cookie = v.p;
        h->cookie_len = qt_left(&v);
        break;
    case QT_EXT_PRE_SHARED_KEY: {
        if (!qt_vec(e, 2, &v) || qt_left(&v) == 0)
            return DECODE;
        h->identities = v.p;
        h->identities_len = qt_left(&v);
        size_t nid = 0, nb = 0;
        while (qt_left(&v)) {
            if (!qt_vec(&v, 2, &item) || qt_left(&item) == 0 || !qt_int(&v, 4, &x))
                return DECODE;
            nid++;
        }
        h->binders_off = (size_t)(e->p - msg);
        if (!qt_vec(e, 2, &v) || qt_left(&v) == 0)
            return DECODE;
        h->binders = v.p;
        h->binders_len = qt_left(&v);
        while (qt_left(&v)) {
            if (!qt_vec(&v, 1, &item) || qt_left(&item) < 32)
                return DECODE;
            nb++;
        }
        if (nb != nid)
            return ILLEGAL;
        h->has_psk = true;
        break;
    }
    default: /* unknown ones are ignored (§4.2) */
        e->p = e->end;
        break;
    }
    return qt_left(e) ? DECODE : 0;
}

int vega__qtls_parse_ch(const uint8_t *msg, size_t len, struct vega__qtls_hello *h)
{
    memset(h, 0, sizeof(*h));
    struct qt_rd r, v, exts;
    uint64_t x;
    int rc = msg_body(msg, len, QT_CLIENT_HELLO, &r);
    if (rc)
        return rc;
    if (!qt_int(&r, 2, &x) || !qt_bytes(&r, 32, &h->random))
        return DECODE;
    h->legacy_version = (uint16_t)x;
    if (!qt_vec(&r, 1, &v) || qt_left(&v) > 32)
        return DECODE;
    h->session_id = v.p;
    h->session_id_len = qt_left(&v);
    if (!u16_list(&r, 2, &h->suites, &h->suites_len))
        return DECODE;
    if (!qt_vec(&r, 1, &v) || qt_left(&v) == 0)
        return DECODE;
    /* TLS 1.3 allows only the null compression method (§4.1.2). */
    if (qt_left(&v) != 1 || v.p[0] != 0)
        return ILLEGAL;
    if (!qt_vec(&r, 2, &exts) || qt_left(&r))
        return DECODE;
    while (qt_left(&exts)) {
        struct qt_rd e;
        if (!qt_int(&exts, 2, &x) || !qt_vec(&exts, 2, &e))
            return DECODE;
        if (h->has_psk) /* pre_shared_key must be the last extension (§4.2.11) */
            return ILLEGAL;
        if ((rc = ext_seen(h->ext_types, &h->n_ext, (uint16_t)x)) ||
            (rc = ch_ext(h, (uint16_t)x, &e, msg)))
            return rc;
    }
    return 0;
}

/* ---- ServerHello / HelloRetryRequest (§4.1.3, §4.1.4) ---------------------------------------- */

int vega__qtls_parse_sh(const uint8_t *msg, size_t len, struct vega__qtls_hello *h)
{
    memset(h, 0, sizeof(*h));
    struct qt_rd r, v, exts;
    uint64_t x;
    int rc = msg_body(msg, len, QT_SERVER_HELLO, &r);
    if (rc)
        return rc;
    if (!qt_int(&r, 2, &x) || !qt_bytes(&r, 32, &h->random))
        return DECODE;
    h->legacy_version = (uint16_t)x;
    h->is_hrr = memcmp(h->random, vega__qtls_hrr_random, 32) == 0;
    if (!qt_vec(&r, 1, &v) || qt_left(&v) > 32)
        return DECODE;
    h->session_id = v.p;
    h->session_id_len = qt_left(&v);
    if (!qt_int(&r, 2, &x))
        return DECODE;
    h->suite = (uint16_t)x;
    if (!qt_int(&r, 1, &x))
        return DECODE;
    if (x != 0)
        return ILLEGAL;
    if (!qt_vec(&r, 2, &exts) || qt_left(&r))
        return DECODE;
    while (qt_left(&exts)) {
        struct qt_rd e;
        if (!qt_int(&exts, 2, &x) || !qt_vec(&exts, 2, &e))
            return DECODE;
        uint16_t type = (uint16_t)x;
        if ((rc = ext_seen(h->ext_types, &h->n_ext, type)))
            return rc;
        if (type == QT_EXT_SUPPORTED_VERSIONS) {
            if (!qt_int(&e, 2, &x))
                return DECODE;
            h->has_versions = true;
            h->tls13 = x == QT_TLS13;
        } else if (type == QT_EXT_KEY_SHARE) {
            if (!qt_int(&e, 2, &x))
                return DECODE;
            h->has_key_share = true;
            h->share_group = (uint16_t)x;
            if (!h->is_hrr) {
                if (!qt_vec(&e, 2, &v) || qt_left(&v) == 0)
                    return DECODE;
                h->share = v.p;
                h->share_len = qt_left(&v);
            }
        } else if (type == QT_EXT_PRE_SHARED_KEY && !h->is_hrr) {
            if (!qt_int(&e, 2, &x))
                return DECODE;
            h->has_psk = true;
            h->psk_selected = (uint16_t)x;
        } else if (type == QT_EXT_COOKIE && h->is_hrr) {
            if (!qt_vec(&e, 2, &v) || qt_left(&v) == 0)
                return DECODE;
            h->has_cookie = true;
            h->cookie = v.p;
            h->cookie_len = qt_left(&v);
        } else {
            /* A server may only answer what was offered, and this client offers nothing else
             * that belongs here (§4.2). */
            return VEGA__QTLS_ALERT_UNSUPPORTED_EXTENSION;
        }
        if (qt_left(&e))
            return DECODE;
    }
    return 0;
}

/* ---- EncryptedExtensions (§4.3.1) ------------------------------------------------------------ */

int vega__qtls_parse_ee(const uint8_t *msg, size_t len, struct vega__qtls_ee *ee)
{
    memset(ee, 0, sizeof(*ee));
    struct qt_rd r, exts, v, name;
    uint64_t x;
    uint16_t types[QT_MAX_EXTS];
    size_t n = 0;
    int rc = msg_body(msg, len, QT_ENCRYPTED_EXTENSIONS, &r);
    if (rc)
        return rc;
    if (!qt_vec(&r, 2, &exts) || qt_left(&r))
        return DECODE;
    while (qt_left(&exts)) {
        struct qt_rd e;
        if (!qt_int(&exts, 2, &x) || !qt_vec(&exts, 2, &e))
            return DECODE;
        uint16_t type = (uint16_t)x;
        if ((rc = ext_seen(types, &n, type)))
            return rc;
        switch (type) {
        case QT_EXT_ALPN:
            /* RFC 7301 §3.1: the server answers with exactly one protocol. */
            if (!qt_vec(&e, 2, &v) || !qt_vec(&v, 1, &name) || qt_left(&name) == 0 || qt_left(&v))
                return DECODE;
            ee->has_alpn = true;
            ee->alpn = name.p;
            ee->alpn_len = qt_left(&name);
            break;
        case QT_EXT_SERVER_NAME:
            ee->has_sni = true;
            break;
        case QT_EXT_EARLY_DATA:
            ee->early_data = true;
            break;
        case QT_EXT_QUIC_TP:
            ee->has_tp = true;
            ee->tp = e.p;
            ee->tp_len = qt_left(&e);
            e.p = e.end;
            break;
        case QT_EXT_SUPPORTED_GROUPS: /* the server's preference: informational (§4.2.7) */
            e.p = e.end;
            break;
        default:
            if (!ee->has_unknown) {
                ee->has_unknown = true;
                ee->unknown = type;
            }
            e.p = e.end;
            break;
        }
        if (qt_left(&e))
            return DECODE;
    }
    return 0;
}

/* ---- Certificate (§4.4.2) and CertificateVerify (§4.4.3) ------------------------------------- */

bool vega__qtls_cert_next(struct qt_rd *r, const uint8_t **der, size_t *der_len)
{
    struct qt_rd cd, ext;
    if (!qt_vec(r, 3, &cd) || !qt_vec(r, 2, &ext))
        return false;
    *der = cd.p;
    *der_len = qt_left(&cd);
    return true;
}

int vega__qtls_parse_cert(const uint8_t *msg, size_t len, struct vega__qtls_cert *c)
{
    memset(c, 0, sizeof(*c));
    struct qt_rd r, v, list;
    int rc = msg_body(msg, len, QT_CERTIFICATE, &r);
    if (rc)
        return rc;
    if (!qt_vec(&r, 1, &v) || !qt_vec(&r, 3, &list) || qt_left(&r))
        return DECODE;
    c->context = v.p;
    c->context_len = qt_left(&v);
    c->list = list.p;
    c->list_len = qt_left(&list);
    while (qt_left(&list)) {
        struct qt_rd cd, ext;
        if (!qt_vec(&list, 3, &cd) || qt_left(&cd) == 0 || !qt_vec(&list, 2, &ext))
            return DECODE;
        /* Entry extensions (status_request, SCT) are not requested, so none may appear; still,
         * each must be well formed. */
        while (qt_left(&ext)) {
            uint64_t t;
            struct qt_rd eb;
            if (!qt_int(&ext, 2, &t) || !qt_vec(&ext, 2, &eb))
                return DECODE;
        }
        c->count++;
    }
    return 0;
}

int vega__qtls_parse_cv(const uint8_t *msg, size_t len, uint16_t *scheme, const uint8_t **sig,
                        size_t *sig_len)
{
    struct qt_rd r, v;
    uint64_t x;
    int rc = msg_body(msg, len, QT_CERTIFICATE_VERIFY, &r);
    if (rc)
        return rc;
    if (!qt_int(&r, 2, &x) || !qt_vec(&r, 2, &v) || qt_left(&v) == 0 || qt_left(&r))
        return DECODE;
    *scheme = (uint16_t)x;
    *sig = v.p;
    *sig_len = qt_left(&v);
    return 0;
}
