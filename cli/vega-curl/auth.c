/* SPDX-License-Identifier: MIT */
/* --digest and --anyauth: the answer to a 401's WWW-Authenticate challenges. HTTP Digest
 * (RFC 7616: MD5, MD5-sess, SHA-256, SHA-256-sess; qop=auth, auth-int or none, RFC 2069 style;
 * userhash) and, for
 * --anyauth, Basic when the server offers no Digest. One try, as curl: a second 401 is the
 * answer. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <vega/crypto.h>

#include "curl.h"

#define PARAM_MAX                                                                                  \
    512 /* a challenge's parameter value, at most (longer: the challenge is not used) */
#define FIELD_MAX 8192 /* the WWW-Authenticate fields joined, at most */

struct challenge {
    bool digest, basic;
    char realm[PARAM_MAX], nonce[PARAM_MAX], opaque[PARAM_MAX], algorithm[64], qop[128];
    char userhash[16];
    bool has_opaque, has_algorithm;
};

static bool is_tchar(char c)
{
    /* (c != 0: strchr finds the string's own terminator) */
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* A token or a quoted-string (backslash escapes undone) at *pp into out. False when it does
 * not fit or does not parse. */
static bool read_value(const char **pp, char *out, size_t cap)
{
    const char *p = *pp;
    size_t used = 0;
    if (*p == '"') {
        p++;
        while (*p && *p != '"') {
            if (*p == '\\' && p[1])
                p++;
            if (used + 2 > cap)
                return false;
            out[used++] = *p++;
        }
        if (*p != '"')
            return false;
        p++;
    } else {
        while (is_tchar(*p) || *p == '/' || *p == '=') {
            if (used + 2 > cap)
                return false;
            out[used++] = *p++;
        }
    }
    out[used] = 0;
    *pp = p;
    return true;
}

/* Parses the challenges of value (RFC 9110 §11.6.1), keeping the first Digest with an
 * algorithm we know (SHA-256 preferred over MD5, as curl) and noting Basic. */
static void parse_challenges(const char *value, struct challenge *best)
{
    const char *p = value;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            return;
        const char *scheme = p;
        while (is_tchar(*p))
            p++;
        size_t slen = (size_t)(p - scheme);
        if (!slen)
            return; /* not a challenge list we can read */
        struct challenge c = {0};
        bool digest = slen == 6 && !strncasecmp(scheme, "Digest", 6);
        bool bad = false;
        c.basic = slen == 5 && !strncasecmp(scheme, "Basic", 5);
        /* its auth-params: name = value, comma-separated, until the next scheme */
        for (;;) {
            p = skip_ows(p);
            while (*p == ',')
                p = skip_ows(p + 1);
            const char *name = p;
            while (is_tchar(*p))
                p++;
            size_t nlen = (size_t)(p - name);
            const char *eq = skip_ows(p);
            if (!nlen || *eq != '=') {
                p = name; /* the next scheme (or the end) */
                break;
            }
            p = skip_ows(eq + 1);
            char v[PARAM_MAX];
            if (!read_value(&p, v, sizeof v)) {
                bad = true;
                /* skip to the next comma: the rest of this challenge is unusable */
                while (*p && *p != ',')
                    p++;
                continue;
            }
#define TAKE(field, key)                                                                           \
    if (nlen == sizeof(key) - 1 && !strncasecmp(name, key, nlen))                                  \
    snprintf(c.field, sizeof c.field, "%s", v)
            TAKE(realm, "realm");
            TAKE(nonce, "nonce");
            TAKE(qop, "qop");
            TAKE(userhash, "userhash");
            if (nlen == 6 && !strncasecmp(name, "opaque", 6)) {
                snprintf(c.opaque, sizeof c.opaque, "%s", v);
                c.has_opaque = true;
            }
            if (nlen == 9 && !strncasecmp(name, "algorithm", 9)) {
                if (strlen(v) + 1 > sizeof c.algorithm)
                    bad = true;
                else
                    snprintf(c.algorithm, sizeof c.algorithm, "%s", v);
                c.has_algorithm = true;
            }
#undef TAKE
        }
        if (c.basic)
            best->basic = true;
        if (!digest || bad || !c.nonce[0])
            continue;
        const char *alg = c.has_algorithm ? c.algorithm : "MD5";
        bool known = !strcasecmp(alg, "MD5") || !strcasecmp(alg, "MD5-sess") ||
                     !strcasecmp(alg, "SHA-256") || !strcasecmp(alg, "SHA-256-sess");
        bool sha = !strncasecmp(alg, "SHA-256", 7);
        bool best_sha =
            best->digest && best->has_algorithm && !strncasecmp(best->algorithm, "SHA-256", 7);
        if (known && (!best->digest || (sha && !best_sha))) {
            bool b = best->basic;
            *best = c;
            best->digest = true;
            best->basic = b;
        }
    }
}

/* H(s) in lowercase hex into out (65 bytes). */
static void hex_hash(vega_crypto_hash_alg alg, const char *s, size_t n, char *out)
{
    uint8_t md[VEGA_CRYPTO_HASH_MAX_LEN];
    size_t len = vega_crypto_hash_len(alg);
    if (vega_crypto_hash_digest(alg, s, n, md) < 0)
        len = 0;
    for (size_t i = 0; i < len; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    out[2 * len] = 0;
}

/* H(entity-body) in hex into out (RFC 7616 §3.4.3's auth-int): b's bytes in memory, or its
 * file read from b->off for b->flen bytes. False when it cannot be hashed (stdin, a pipe, a
 * read error). */
static bool hex_body_hash(vega_crypto_hash_alg alg, const struct curl_auth_body *b, char *out)
{
    if (b->unhashable)
        return false;
    if (b->fd < 0) {
        hex_hash(alg, b->data ? b->data : "", b->data ? b->len : 0, out);
        return true;
    }
    vega_crypto_hash *h;
    if (vega_crypto_hash_new(&h, alg) < 0)
        return false;
    char buf[16384];
    uint64_t done = 0;
    bool ok = true;
    while (ok && done < b->flen) {
        size_t want = done + sizeof buf > b->flen ? (size_t)(b->flen - done) : sizeof buf;
        ssize_t n = pread(b->fd, buf, want, (off_t)(b->off + done));
        if (n < 0 && errno == EINTR)
            continue;
        ok = n > 0 && vega_crypto_hash_update(h, buf, (size_t)n) == 0;
        done += n > 0 ? (uint64_t)n : 0;
    }
    uint8_t md[VEGA_CRYPTO_HASH_MAX_LEN];
    ok = vega_crypto_hash_final(h, md) == 0 && ok;
    vega_crypto_hash_free(h);
    if (!ok)
        return false;
    size_t len = vega_crypto_hash_len(alg);
    for (size_t i = 0; i < len; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    out[2 * len] = 0;
    return true;
}

/* H of "a:b:c..." (parts joined with ':'). */
static void hash_join(vega_crypto_hash_alg alg, char *out, const char *const *parts, size_t n)
{
    char buf[4 * PARAM_MAX + 2 * CURL_MAX_URL_LEN];
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(parts[i]);
        if (used + k + 2 > sizeof buf)
            break;
        if (i)
            buf[used++] = ':';
        memcpy(buf + used, parts[i], k);
        used += k;
    }
    hex_hash(alg, buf, used, out);
}

/* Whether s may go inside a quoted-string as is (no '"', '\\', CTLs). */
static bool quotable(const char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

int curl_auth_answer(const struct curl_opts *o, const vega_http_fields *f, const char *method,
                     const char *target, const struct curl_auth_body *body, char *out, size_t cap)
{
    char all[FIELD_MAX];
    if (vega_http_fields_get_combined(f, "WWW-Authenticate", 16, all, sizeof all) < 0)
        return -1;
    struct challenge c = {0};
    parse_challenges(all, &c);
    const char *user = o->auth_user, *pass = o->auth_pass;
    if (!c.digest) {
        if (!(o->authmode == CURL_AUTH_ANY && c.basic))
            return -1;
        int n = (int)vega_proxy_basic_auth(out, cap, user, pass);
        return n < 0 ? -1 : 0;
    }
    if (!quotable(user) || !quotable(target) || !quotable(c.realm) || !quotable(c.nonce) ||
        !quotable(c.opaque))
        return -1;
    const char *alg = c.has_algorithm ? c.algorithm : "MD5";
    vega_crypto_hash_alg h = !strncasecmp(alg, "SHA-256", 7) ? VEGA_CRYPTO_SHA256 : VEGA_CRYPTO_MD5;
    bool sess = strlen(alg) > 5 && !strcasecmp(alg + strlen(alg) - 5, "-sess");
    /* qop: "auth" when offered (curl's choice too), else "auth-int", else RFC 2069's form */
    bool qop_auth = false, qop_int = false;
    for (const char *q = c.qop; *q;) {
        while (*q == ' ' || *q == ',')
            q++;
        size_t k = strcspn(q, ", ");
        if (k == 4 && !strncasecmp(q, "auth", 4))
            qop_auth = true;
        if (k == 8 && !strncasecmp(q, "auth-int", 8))
            qop_int = true;
        q += k;
    }
    const char *qop = qop_auth ? "auth" : qop_int ? "auth-int" : NULL;
    char cnonce[33];
    uint8_t rnd[16];
    if (vega_crypto_random(rnd, sizeof rnd) < 0)
        return -1;
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(cnonce + 2 * i, 3, "%02x", rnd[i]);
    char ha1[129], ha2[129], resp[129], body_hash[129], uhash[129];
    const char *p1[] = {user, c.realm, pass};
    hash_join(h, ha1, p1, 3);
    if (sess) {
        const char *ps[] = {ha1, c.nonce, cnonce};
        char tmp[129];
        hash_join(h, tmp, ps, 3);
        memcpy(ha1, tmp, sizeof tmp);
    }
    if (qop && !qop_auth) {
        /* RFC 7616 §3.4.3: A2 = Method ":" request-uri ":" H(entity-body) */
        if (!hex_body_hash(h, body, body_hash))
            return -2;
        const char *p2[] = {method, target, body_hash};
        hash_join(h, ha2, p2, 3);
    } else {
        const char *p2[] = {method, target};
        hash_join(h, ha2, p2, 2);
    }
    if (qop) {
        const char *pr[] = {ha1, c.nonce, "00000001", cnonce, qop, ha2};
        hash_join(h, resp, pr, 6);
    } else {
        const char *pr[] = {ha1, c.nonce, ha2};
        hash_join(h, resp, pr, 3);
    }
    /* RFC 7616 §3.4.4: userhash=true asks for H(username ":" realm) in place of the name */
    bool userhash = !strcasecmp(c.userhash, "true");
    if (userhash) {
        const char *pu[] = {user, c.realm};
        hash_join(h, uhash, pu, 2);
        user = uhash;
    }
    int n;
    if (qop)
        n = snprintf(out, cap,
                     "Digest username=\"%s\", realm=\"%s\", nonce=\"%s\", uri=\"%s\", "
                     "cnonce=\"%s\", nc=00000001, qop=%s, response=\"%s\"",
                     user, c.realm, c.nonce, target, cnonce, qop, resp);
    else
        n = snprintf(out, cap,
                     "Digest username=\"%s\", realm=\"%s\", nonce=\"%s\", uri=\"%s\", "
                     "response=\"%s\"",
                     user, c.realm, c.nonce, target, resp);
    if (n < 0 || (size_t)n + 1 > cap)
        return -1;
    size_t used = (size_t)n;
    if (c.has_opaque) {
        n = snprintf(out + used, cap - used, ", opaque=\"%s\"", c.opaque);
        if (n < 0 || used + (size_t)n + 1 > cap)
            return -1;
        used += (size_t)n;
    }
    if (c.has_algorithm) {
        n = snprintf(out + used, cap - used, ", algorithm=%s", c.algorithm);
        if (n < 0 || used + (size_t)n + 1 > cap)
            return -1;
        used += (size_t)n;
    }
    if (userhash) {
        n = snprintf(out + used, cap - used, ", userhash=true");
        if (n < 0 || used + (size_t)n + 1 > cap)
            return -1;
    }
    return 0;
}
