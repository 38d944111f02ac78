/* SPDX-License-Identifier: MIT */
/* The client's Alt-Svc cache: the field's grammar (RFC 7838 §3, §3.1), the replacement and
 * expiry rules (§3.1, §4), and curl's alt-svc cache file format for load and save. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "client_int.h"

static int64_t wall_s(void)
{
    return (int64_t)time(NULL);
}

/* ---- small lexers ---------------------------------------------------------------------------- */

struct cur {
    const char *p, *end;
};

static bool is_tchar(unsigned char ch)
{
    return isalnum(ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static void skip_ows(struct cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static bool token(struct cur *c, const char **s, size_t *n)
{
    const char *b = c->p;
    while (c->p < c->end && is_tchar((unsigned char)*c->p))
        c->p++;
    *s = b;
    *n = (size_t)(c->p - b);
    return *n > 0;
}

/* A quoted-string (RFC 9110 §5.6.4) unescaped into out (cap bytes with the NUL). */
static bool quoted(struct cur *c, char *out, size_t cap)
{
    if (c->p >= c->end || *c->p != '"')
        return false;
    c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != '"') {
        char ch = *c->p++;
        if (ch == '\\') {
            if (c->p >= c->end)
                return false;
            ch = *c->p++;
        }
        if ((unsigned char)ch < 0x20 || ch == 0x7f || n + 1 >= cap)
            return false;
        out[n++] = ch;
    }
    if (c->p >= c->end)
        return false;
    c->p++;
    out[n] = '\0';
    return true;
}

/* The protocol-id, percent-decoded (§3), mapped to the names curl's file uses; NULL for one we
 * do not keep. */
static const char *alpn_id(const char *s, size_t n)
{
    char d[32];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '%' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) &&
            isxdigit((unsigned char)s[i + 2])) {
            char hex[3] = {s[i + 1], s[i + 2], 0};
            ch = (char)strtol(hex, NULL, 16);
            i += 2;
        }
        if (k + 1 >= sizeof d)
            return NULL;
        d[k++] = ch; /* ALPN ids are bytes (RFC 7301 §3.1): compared exactly */
    }
    d[k] = '\0';
    if (!strcmp(d, "h3"))
        return "h3";
    if (!strcmp(d, "h2"))
        return "h2";
    if (!strcmp(d, "h1") || !strcmp(d, "http/1.1"))
        return "h1";
    return NULL;
}

/* A host as the cache keeps it: lowercased, without brackets, printable, no space or quote. */
static bool host_copy(char *dst, const char *s, size_t n)
{
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
        s++;
        n -= 2;
    }
    if (n == 0 || n > HC_MAX_HOST)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch <= 0x20 || ch >= 0x7f || ch == '"' || ch == '[' || ch == ']' || ch == '/')
            return false;
        dst[i] = (char)tolower(ch);
    }
    dst[n] = '\0';
    return true;
}

static bool port_parse(const char *s, size_t n, uint16_t *out)
{
    unsigned v = 0;
    if (n == 0 || n > 5)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v == 0 || v > 65535)
        return false;
    *out = (uint16_t)v;
    return true;
}

/* alt-authority = [ uri-host ] ":" port (§3); an empty host is the origin's. */
static bool authority(const char *a, const char *origin_host, struct hc_alt *alt)
{
    const char *colon = strrchr(a, ':');
    if (!colon || !port_parse(colon + 1, strlen(colon + 1), &alt->port))
        return false;
    size_t hn = (size_t)(colon - a);
    if (hn == 0) {
        memcpy(alt->host, origin_host, strlen(origin_host) + 1);
        return true;
    }
    /* An IPv6 literal is bracketed; any other colon means a malformed authority. */
    if (a[0] != '[' && memchr(a, ':', hn))
        return false;
    return host_copy(alt->host, a, hn);
}

/* ---- the cache (c->mu held) ------------------------------------------------------------------ */

static struct hc_altsvc *origin_find(vega_http_client *c, const char *host, uint16_t port)
{
    for (struct hc_altsvc *o = c->alts; o; o = o->next)
        if (o->port == port && strcmp(o->host, host) == 0)
            return o;
    return NULL;
}

static void origin_drop(vega_http_client *c, struct hc_altsvc *o)
{
    struct hc_altsvc **pp = &c->alts;
    while (*pp && *pp != o)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = o->next;
        c->nalts--;
        vega__mem_free(c->o.mem, o);
    }
}

/* Replaces the origin's alternatives with alts (n of them, 0: clears them). */
static int origin_set(vega_http_client *c, const char *host, uint16_t port, const char *src_alpn,
                      const struct hc_alt *alts, size_t n)
{
    struct hc_altsvc *o = origin_find(c, host, port);
    if (n == 0) {
        if (o)
            origin_drop(c, o);
        return 0;
    }
    if (!o) {
        if (c->nalts >= HC_ALTSVC_MAX_ORIGINS) {
            /* Full: the last (oldest added) origin goes. */
            struct hc_altsvc *last = c->alts;
            while (last && last->next)
                last = last->next;
            origin_drop(c, last);
        }
        o = vega__mem_calloc(c->o.mem, 1, sizeof *o);
        if (!o)
            return -ENOMEM;
        memcpy(o->host, host, strlen(host) + 1);
        o->port = port;
        o->next = c->alts;
        c->alts = o;
        c->nalts++;
    }
    snprintf(o->src_alpn, sizeof o->src_alpn, "%s", src_alpn);
    memcpy(o->alts, alts, n * sizeof *alts);
    o->n = n;
    return 0;
}

/* Adds one alternative to an origin (a loaded line), unless an equal one is there. */
static int origin_add(vega_http_client *c, const char *host, uint16_t port, const char *src_alpn,
                      const struct hc_alt *alt)
{
    struct hc_altsvc *o = origin_find(c, host, port);
    if (!o) {
        int rc = origin_set(c, host, port, src_alpn, alt, 1);
        return rc < 0 ? rc : 1;
    }
    for (size_t i = 0; i < o->n; i++) {
        struct hc_alt *x = &o->alts[i];
        if (!strcmp(x->alpn, alt->alpn) && !strcmp(x->host, alt->host) && x->port == alt->port) {
            if (alt->expires > x->expires)
                *x = *alt;
            return 1;
        }
    }
    if (o->n == HC_ALTSVC_MAX)
        return 0;
    o->alts[o->n++] = *alt;
    return 1;
}

/* ---- the field --------------------------------------------------------------------------- */

/* One parameter (§3: token "=" ( token / quoted-string )); ma and persist are known (§3.1),
 * others ignored. */
static bool parameter(struct cur *cu, struct hc_alt *alt, int64_t now)
{
    const char *name, *v;
    size_t nn, vn;
    char q[64];
    if (!token(cu, &name, &nn) || cu->p >= cu->end || *cu->p != '=')
        return false;
    cu->p++;
    if (cu->p < cu->end && *cu->p == '"') {
        if (!quoted(cu, q, sizeof q))
            return false;
        v = q;
        vn = strlen(q);
    } else if (!token(cu, &v, &vn)) {
        return false;
    }
    if (nn == 2 && strncasecmp(name, "ma", 2) == 0) {
        /* delta-seconds (RFC 9111 §1.2.2): digits; a huge value is as good as 2^31. */
        uint64_t ma = 0;
        for (size_t i = 0; i < vn; i++) {
            if (!isdigit((unsigned char)v[i]))
                return false;
            if (ma < (1ull << 31))
                ma = ma * 10 + (uint64_t)(v[i] - '0');
        }
        if (vn == 0)
            return false;
        alt->expires = now + (int64_t)(ma < (1ull << 31) ? ma : (1ull << 31));
    } else if (nn == 7 && strncasecmp(name, "persist", 7) == 0) {
        alt->persist = vn == 1 && v[0] == '1';
    }
    return true;
}

/* One alt-value; false when it is malformed (the caller skips to the next comma). */
static bool alt_value(struct cur *cu, const char *origin_host, int64_t now, struct hc_alt *alt,
                      bool *keep)
{
    const char *id;
    size_t idn;
    char auth[HC_MAX_HOST + 16];
    memset(alt, 0, sizeof *alt);
    alt->expires = now + HC_ALTSVC_DEFAULT_MA;
    if (!token(cu, &id, &idn) || cu->p >= cu->end || *cu->p != '=')
        return false;
    cu->p++;
    if (!quoted(cu, auth, sizeof auth) || !authority(auth, origin_host, alt))
        return false;
    for (;;) {
        skip_ows(cu);
        if (cu->p >= cu->end || *cu->p != ';')
            break;
        cu->p++;
        skip_ows(cu);
        if (!parameter(cu, alt, now))
            return false;
    }
    skip_ows(cu);
    if (cu->p < cu->end && *cu->p != ',')
        return false;
    const char *a = alpn_id(id, idn);
    *keep = a != NULL;
    if (a)
        snprintf(alt->alpn, sizeof alt->alpn, "%s", a);
    return true;
}

/* Skips to the comma ending a malformed element (outside quoted strings). */
static void skip_element(struct cur *cu)
{
    bool inq = false;
    while (cu->p < cu->end && (inq || *cu->p != ',')) {
        if (*cu->p == '\\' && inq && cu->p + 1 < cu->end)
            cu->p++;
        else if (*cu->p == '"')
            inq = !inq;
        cu->p++;
    }
}

/* Parses value for the origin host into alts (n of them). Returns the count, or -EINVAL when
 * nothing in it is an alternative and it is not "clear". */
static int parse_field(const char *value, size_t len, const char *host, int64_t now,
                       struct hc_alt *alts, bool *clear)
{
    struct cur cu = {value, value + len};
    skip_ows(&cu);
    const char *e = cu.end;
    while (e > cu.p && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    /* §3: "clear" (case-sensitive) drops every alternative of the origin. */
    *clear = (size_t)(e - cu.p) == 5 && memcmp(cu.p, "clear", 5) == 0;
    if (*clear)
        return 0;
    int n = 0, good = 0;
    while (cu.p < cu.end) {
        skip_ows(&cu);
        if (cu.p < cu.end && *cu.p == ',') { /* an empty list element */
            cu.p++;
            continue;
        }
        if (cu.p >= cu.end)
            break;
        struct hc_alt a;
        bool keep = false;
        if (!alt_value(&cu, host, now, &a, &keep)) {
            skip_element(&cu);
            continue;
        }
        good++;
        /* The same alternative twice in one field is one entry (the later expiry wins). */
        int dup = -1;
        for (int i = 0; keep && i < n && dup < 0; i++)
            if (!strcmp(alts[i].alpn, a.alpn) && !strcmp(alts[i].host, a.host) &&
                alts[i].port == a.port)
                dup = i;
        if (dup >= 0 && a.expires > alts[dup].expires)
            alts[dup] = a;
        else if (dup < 0 && keep && n < HC_ALTSVC_MAX)
            alts[n++] = a;
    }
    return good ? n : -EINVAL;
}

static int add_locked_field(vega_http_client *c, const char *host, uint16_t port,
                            const char *src_alpn, const char *value, size_t len)
{
    struct hc_alt alts[HC_ALTSVC_MAX];
    bool clear;
    int n = parse_field(value, len, host, wall_s(), alts, &clear);
    if (n < 0)
        return n;
    /* §3.1: a received field replaces every alternative cached for the origin. */
    pthread_mutex_lock(&c->mu);
    int rc = origin_set(c, host, port, src_alpn, alts, (size_t)n);
    pthread_mutex_unlock(&c->mu);
    return rc < 0 ? rc : n;
}

int vega_http_client_altsvc_add(vega_http_client *c, const char *host, uint16_t port,
                                const char *value, size_t len)
{
    char h[HC_MAX_HOST + 1];
    if (!c || !host || (!value && len) || port == 0 || !host_copy(h, host, strlen(host)))
        return -EINVAL;
    if (len > HC_ALTSVC_MAX_FIELD)
        return -EINVAL;
    return add_locked_field(c, h, port, "h1", value ? value : "", len);
}

void vega__hc_altsvc_learn(vega_http_client *c, const struct hc_key *k, const char *src_alpn,
                           const vega_http_fields *fields)
{
    char v[HC_ALTSVC_MAX_FIELD];
    vega_ssize n = vega_http_fields_get_combined(fields, "alt-svc", 7, v, sizeof v);
    if (n < 0)
        return; /* none, or longer than we parse */
    (void)add_locked_field(c, k->host, k->port, src_alpn, v, (size_t)n);
}

int vega_http_client_altsvc_lookup(vega_http_client *c, const char *host, uint16_t port,
                                   const char *alpn, char *host_out, size_t cap, uint16_t *port_out)
{
    char h[HC_MAX_HOST + 1];
    if (!c || !host || !alpn || !host_out || !port_out || !host_copy(h, host, strlen(host)))
        return -EINVAL;
    int64_t now = wall_s();
    int rc = -ENOENT;
    pthread_mutex_lock(&c->mu);
    struct hc_altsvc *o = origin_find(c, h, port);
    const struct hc_alt *best = NULL;
    for (size_t i = 0; o && i < o->n; i++)
        if (!strcmp(o->alts[i].alpn, alpn) && o->alts[i].expires > now &&
            (!best || o->alts[i].expires > best->expires))
            best = &o->alts[i];
    if (best) {
        size_t n = strlen(best->host);
        if (n + 1 > cap) {
            rc = VEGA_ERR_NOBUF;
        } else {
            memcpy(host_out, best->host, n + 1);
            *port_out = best->port;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* ---- curl's file ----------------------------------------------------------------------------- */

/* "YYYYMMDD HH:MM:SS" (GMT) to Unix seconds. */
static bool date_parse(const char *s, int64_t *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int y, mo, d, h, mi, se;
    char tail;
    if (strlen(s) != 17 ||
        sscanf(s, "%4d%2d%2d %2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &se, &tail) != 6)
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 || y < 1970)
        return false;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    *out = (int64_t)timegm(&tm);
    return true;
}

/* Splits a line into its nine fields (the seventh quoted). */
static int split_line(char *line, char **f)
{
    int n = 0;
    char *p = line;
    while (*p && n < 10) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        if (*p == '"') {
            char *q = strchr(p + 1, '"');
            if (!q)
                return -1;
            *q = '\0';
            f[n++] = p + 1;
            p = q + 1;
            continue;
        }
        f[n++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        if (*p)
            *p++ = '\0';
    }
    return n;
}

static int load_line(vega_http_client *c, char *line, int64_t now)
{
    char *f[10];
    if (line[0] == '#' || split_line(line, f) != 9)
        return 0;
    char src_host[HC_MAX_HOST + 1];
    struct hc_alt alt;
    memset(&alt, 0, sizeof alt);
    uint16_t src_port;
    const char *src_alpn = alpn_id(f[0], strlen(f[0])), *dst_alpn = alpn_id(f[3], strlen(f[3]));
    if (!src_alpn || !dst_alpn || !host_copy(src_host, f[1], strlen(f[1])) ||
        !port_parse(f[2], strlen(f[2]), &src_port) || !host_copy(alt.host, f[4], strlen(f[4])) ||
        !port_parse(f[5], strlen(f[5]), &alt.port) || !date_parse(f[6], &alt.expires) ||
        (strcmp(f[7], "0") && strcmp(f[7], "1")))
        return 0;
    if (alt.expires <= now)
        return 0;
    snprintf(alt.alpn, sizeof alt.alpn, "%s", dst_alpn);
    alt.persist = f[7][0] == '1';
    pthread_mutex_lock(&c->mu);
    int rc = origin_add(c, src_host, src_port, src_alpn, &alt);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int vega_http_client_altsvc_load(vega_http_client *c, const char *text, size_t len)
{
    if (!c || (!text && len))
        return -EINVAL;
    int64_t now = wall_s();
    int loaded = 0;
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        char line[1024];
        /* A line longer than any entry can be is not one. */
        if (n < sizeof line) {
            memcpy(line, text + pos, n);
            line[n] = '\0';
            if (n && line[n - 1] == '\r')
                line[n - 1] = '\0';
            int rc = load_line(c, line, now);
            if (rc < 0)
                return rc;
            loaded += rc;
        }
        pos += n + (nl ? 1 : 0);
    }
    return loaded;
}

static int host_out(char *out, size_t cap, const char *h)
{
    bool v6 = strchr(h, ':') != NULL;
    return snprintf(out, cap, "%s%s%s", v6 ? "[" : "", h, v6 ? "]" : "");
}

vega_ssize vega_http_client_altsvc_save(vega_http_client *c, char *out, size_t cap)
{
    if (!c || (!out && cap))
        return -EINVAL;
    static const char head[] = "# Alt-Svc cache, curl's format (https://curl.se/docs/alt-svc.html)"
                               ", written by libvega\n";
    size_t used = 0;
    bool fits = true;
    int64_t now = wall_s();
    char line[1024], sh[HC_MAX_HOST + 3], dh[HC_MAX_HOST + 3];
#define PUT(s, n)                                                                                  \
    do {                                                                                           \
        if (out && fits && vega__fits(used, (n), cap))                                             \
            memcpy(out + used, (s), (n));                                                          \
        else if (out)                                                                              \
            fits = false;                                                                          \
        used += (n);                                                                               \
    } while (0)
    PUT(head, sizeof head - 1);
    pthread_mutex_lock(&c->mu);
    for (struct hc_altsvc *o = c->alts; o; o = o->next) {
        host_out(sh, sizeof sh, o->host);
        for (size_t i = 0; i < o->n; i++) {
            const struct hc_alt *a = &o->alts[i];
            if (a->expires <= now)
                continue;
            time_t t = (time_t)a->expires;
            struct tm tm;
            gmtime_r(&t, &tm);
            host_out(dh, sizeof dh, a->host);
            int n = snprintf(
                line, sizeof line, "%s %s %u %s %s %u \"%04d%02d%02d %02d:%02d:%02d\" %d 0\n",
                o->src_alpn, sh, o->port, a->alpn, dh, a->port, tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, a->persist ? 1 : 0);
            if (n > 0 && (size_t)n < sizeof line)
                PUT(line, (size_t)n);
        }
    }
    pthread_mutex_unlock(&c->mu);
#undef PUT
    if (out && !fits)
        return VEGA_ERR_NOBUF;
    return (vega_ssize)used;
}

void vega__hc_altsvc_free(vega_http_client *c)
{
    while (c->alts) {
        struct hc_altsvc *o = c->alts;
        c->alts = o->next;
        vega__mem_free(c->o.mem, o);
    }
    c->nalts = 0;
}
