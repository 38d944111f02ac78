/* SPDX-License-Identifier: MIT */
/* -b, -c, -j: curl's cookie engine. Set-Cookie parsed and matched by RFC 6265 (§5.2 attributes,
 * §5.1.3 domain-match, §5.1.4 path-match, §5.3 storage, §5.4 the Cookie header), and the
 * Netscape cookie file that curl reads and writes. One jar for the whole run, as curl's. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "curl.h"

#define COOKIE_MAX_NAMEVALUE  4096u       /* name and value together (curl's MAX_NAME) */
#define COOKIE_MAX_LINE       5000u       /* a Set-Cookie value or a file line (MAX_COOKIE_LINE) */
#define COOKIE_MAX_PER_DOMAIN 150u        /* RFC 6265 §6.1 asks for at least 50 */
#define COOKIE_MAX_TOTAL      3000u       /* RFC 6265 §6.1 asks for at least 3000 */
#define COOKIE_MAX_SET        50u         /* Set-Cookie fields taken from one response (curl's) */
#define COOKIE_MAX_SEND       150u        /* cookies in one Cookie field (curl's) */
#define COOKIE_MAX_FILE       (16u << 20) /* a cookie file read with -b */

struct cookie {
    char *name, *value, *domain, *path;
    bool tailmatch; /* a Domain attribute: the domain and its subdomains */
    bool secure, httponly;
    int64_t expires; /* seconds since the epoch; 0 = a session cookie */
    uint64_t order;  /* creation order: the tie-break when sending and writing */
};

static struct {
    struct cookie *c;
    size_t n, cap;
    uint64_t next_order;
} jar;

static bool engine;  /* -c, or -b with a file: Set-Cookie is taken and the jar sent */
static bool verbose; /* -v: curl's "Added cookie" lines for the cookies responses set */

static void cookie_free(struct cookie *c)
{
    free(c->name);
    free(c->value);
    free(c->domain);
    free(c->path);
}

static void jar_remove(size_t i)
{
    cookie_free(&jar.c[i]);
    memmove(&jar.c[i], &jar.c[i + 1], (jar.n - i - 1) * sizeof jar.c[0]);
    jar.n--;
}

static char *dupn(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static bool is_ip(const char *h)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, h, buf) == 1 || inet_pton(AF_INET6, h, buf) == 1 || h[0] == '[';
}

/* RFC 6265 §5.1.3: host equals domain, or ends with "." + domain and is not an IP address. */
static bool domain_match(const char *host, const char *domain)
{
    size_t hl = strlen(host), dl = strlen(domain);
    if (hl == dl)
        return strcasecmp(host, domain) == 0;
    if (hl < dl + 1 || is_ip(host))
        return false;
    return host[hl - dl - 1] == '.' && strcasecmp(host + (hl - dl), domain) == 0;
}

/* RFC 6265 §5.1.4, with curl's reading of the cookie's path: a trailing '/' is not part of it
 * ("/a/" matches "/a" as "/a" does), and one not starting with '/' is "/". */
static bool path_match(const char *req, const char *cpath)
{
    if (cpath[0] != '/')
        return true; /* a file's path without its '/' is "/" to curl */
    size_t cl = strlen(cpath);
    if (cl > 1 && cpath[cl - 1] == '/')
        cl--;
    if (strncmp(req, cpath, cl) != 0)
        return false;
    return req[cl] == '\0' || cpath[cl - 1] == '/' || req[cl] == '/';
}

/* RFC 6265 §5.1.1: the cookie-date algorithm (tokens in any order). Returns -1 when it fails. */
static int64_t cookie_date(const char *s, size_t len)
{
    static const char months[] = "janfebmaraprmayjunjulaugsepoctnovdec";
    int hour = -1, min = 0, sec = 0, day = -1, mon = -1, year = -1;
    size_t i = 0;
    while (i < len) {
        /* delimiters: everything but digits, letters and ':' */
        while (i < len && !(s[i] == ':' || (s[i] >= '0' && s[i] <= '9') ||
                            ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z')))
            i++;
        size_t t = i;
        while (i < len && (s[i] == ':' || (s[i] >= '0' && s[i] <= '9') ||
                           ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z')))
            i++;
        size_t tl = i - t;
        if (tl == 0)
            break;
        const char *tok = s + t;
        int a, b, c, used = 0;
        char tb[32];
        if (tl >= sizeof tb)
            continue;
        memcpy(tb, tok, tl);
        tb[tl] = '\0';
        if (hour < 0 && sscanf(tb, "%2d:%2d:%2d%n", &a, &b, &c, &used) == 3 && used > 0) {
            hour = a, min = b, sec = c;
        } else if (day < 0 && tb[0] >= '0' && tb[0] <= '9' && tl <= 2 &&
                   sscanf(tb, "%d", &a) == 1) {
            day = a;
        } else if (mon < 0 && tl >= 3) {
            for (int m = 0; m < 12; m++)
                if (strncasecmp(tb, months + 3 * m, 3) == 0)
                    mon = m;
            if (mon < 0 && year < 0 && tb[0] >= '0' && tb[0] <= '9' && tl <= 4 &&
                sscanf(tb, "%d", &a) == 1)
                year = a;
        } else if (year < 0 && tb[0] >= '0' && tb[0] <= '9' && tl <= 4 &&
                   sscanf(tb, "%d", &a) == 1) {
            year = a;
        }
    }
    if (year >= 70 && year <= 99)
        year += 1900;
    else if (year >= 0 && year <= 69)
        year += 2000;
    if (day < 1 || day > 31 || mon < 0 || year < 1601 || hour < 0 || hour > 23 || min > 59 ||
        sec > 59)
        return -1;
    struct tm tm = {.tm_year = year - 1900,
                    .tm_mon = mon,
                    .tm_mday = day,
                    .tm_hour = hour,
                    .tm_min = min,
                    .tm_sec = sec};
    return (int64_t)timegm(&tm);
}

/* RFC 6265 §5.1.4: the directory of the request's path, with its '/' as curl writes it. */
static char *default_path(const char *path, size_t len)
{
    if (len == 0 || path[0] != '/')
        return dupn("/", 1);
    size_t last = 0;
    for (size_t i = 0; i < len; i++)
        if (path[i] == '/')
            last = i;
    return dupn(path, last + 1);
}

static size_t domain_count(const char *domain)
{
    size_t n = 0;
    for (size_t i = 0; i < jar.n; i++)
        if (strcasecmp(jar.c[i].domain, domain) == 0)
            n++;
    return n;
}

/* Stores c (taking its strings), replacing the cookie of the same name, domain and path
 * (RFC 6265 §5.3 step 11). An expired c only removes. Returns 0 when it was dropped, 1 when
 * added, 2 when it replaced one. */
static int jar_store(struct cookie *c, int64_t now)
{
    for (size_t i = 0; i < jar.n; i++) {
        struct cookie *o = &jar.c[i];
        if (strcmp(o->name, c->name) == 0 && strcasecmp(o->domain, c->domain) == 0 &&
            strcmp(o->path, c->path) == 0) {
            if (c->expires && c->expires <= now) {
                jar_remove(i);
                cookie_free(c);
                return 0;
            }
            c->order = o->order; /* kept: the creation time of the old cookie (§5.3 11.3) */
            cookie_free(o);
            *o = *c;
            return 2;
        }
    }
    if ((c->expires && c->expires <= now) || jar.n >= COOKIE_MAX_TOTAL ||
        domain_count(c->domain) >= COOKIE_MAX_PER_DOMAIN) {
        cookie_free(c);
        return 0;
    }
    if (jar.n == jar.cap) {
        size_t cap = jar.cap ? jar.cap * 2 : 16;
        struct cookie *p = realloc(jar.c, cap * sizeof *p);
        if (!p) {
            cookie_free(c);
            return 0;
        }
        jar.c = p;
        jar.cap = cap;
    }
    c->order = jar.next_order++;
    jar.c[jar.n++] = *c;
    return 1;
}

/* RFC 6265bis §5.7 step 16 as curl 7.88 applies it: from an insecure origin, a cookie may not
 * shadow a Secure one of the same name and domain whose path's first segment starts its path
 * (an old "/login" refuses "/login/en" and "/loginx" alike). */
static bool overlays_secure(const struct cookie *c)
{
    for (size_t i = 0; i < jar.n; i++) {
        const struct cookie *o = &jar.c[i];
        if (!o->secure || strcmp(o->name, c->name) != 0 || strcasecmp(o->domain, c->domain) != 0)
            continue;
        const char *sep = strchr(o->path + 1, '/');
        size_t n = sep ? (size_t)(sep - o->path) : strlen(o->path);
        if (strncasecmp(o->path, c->path, n) == 0)
            return true;
    }
    return false;
}

static void trim(const char **s, const char **e)
{
    while (*s < *e && (**s == ' ' || **s == '\t'))
        (*s)++;
    while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
        (*e)--;
}

/* A name or value curl would store: no control characters (and no ';' or '=' in a name). */
static bool clean(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

/* One Set-Cookie value from host for request path; secure = a secure context (https, or
 * localhost as curl counts it). host NULL: a line of a cookie file. */
static void take_one(const char *v, size_t len, const char *host, const char *rpath, size_t rplen,
                     bool secure, int64_t now)
{
    if (len > COOKIE_MAX_LINE)
        return;
    const char *end = v + len, *semi = memchr(v, ';', len);
    const char *pe = semi ? semi : end, *eq = memchr(v, '=', (size_t)(pe - v));
    if (!eq)
        return; /* RFC 6265 §5.2 step 2: no '=' ignores the whole line */
    const char *ns = v, *ne = eq, *vs = eq + 1, *ve = pe;
    trim(&ns, &ne);
    trim(&vs, &ve);
    size_t nl = (size_t)(ne - ns), vl = (size_t)(ve - vs);
    /* curl's bounds: each under 4095 bytes, both together at most 4096 */
    if (nl == 0 || nl >= COOKIE_MAX_NAMEVALUE - 1 || vl >= COOKIE_MAX_NAMEVALUE - 1 ||
        nl + vl > COOKIE_MAX_NAMEVALUE || !clean(ns, nl) || !clean(vs, vl))
        return;
    struct cookie c = {0};
    int64_t max_age = 0;
    bool has_max_age = false, has_domain = false;
    const char *dom = NULL, *path = NULL;
    size_t doml = 0, pathl = 0;
    for (const char *a = semi; a && a < end;) {
        const char *as = a + 1, *ae = memchr(as, ';', (size_t)(end - as));
        a = ae;
        if (!ae)
            ae = end;
        const char *aeq = memchr(as, '=', (size_t)(ae - as));
        const char *ks = as, *ke = aeq ? aeq : ae, *avs = aeq ? aeq + 1 : ae, *ave = ae;
        trim(&ks, &ke);
        trim(&avs, &ave);
        size_t kl = (size_t)(ke - ks), avl = (size_t)(ave - avs);
        if (kl == 6 && strncasecmp(ks, "secure", 6) == 0) {
            c.secure = true;
        } else if (kl == 8 && strncasecmp(ks, "httponly", 8) == 0) {
            c.httponly = true;
        } else if (kl == 6 && strncasecmp(ks, "domain", 6) == 0 && avl) {
            if (avs[0] == '.')
                avs++, avl--; /* §5.2.3: a leading dot is ignored */
            dom = avs;
            doml = avl;
            has_domain = true;
        } else if (kl == 4 && strncasecmp(ks, "path", 4) == 0) {
            path = avs;
            pathl = avl;
        } else if (kl == 7 && strncasecmp(ks, "max-age", 7) == 0 && avl) {
            /* curl's reading of §5.2.2: a number; anything else expires the cookie */
            char tmp[32];
            has_max_age = true;
            max_age = -1;
            if (avl < sizeof tmp) {
                memcpy(tmp, avs, avl);
                tmp[avl] = '\0';
                char *x;
                errno = 0;
                long long n = strtoll(tmp, &x, 10);
                if (*x == '\0' && (tmp[0] == '-' || (tmp[0] >= '0' && tmp[0] <= '9')) && n > 0)
                    max_age = (errno == ERANGE || n > INT64_MAX - now) ? INT64_MAX : now + n;
            } else if (avs[0] >= '0' && avs[0] <= '9') {
                max_age = INT64_MAX; /* too many digits: curl's "forever" */
            }
        } else if (kl == 7 && strncasecmp(ks, "expires", 7) == 0 && avl && !has_max_age) {
            int64_t t = cookie_date(avs, avl);
            if (t >= 0)
                c.expires = t == 0 ? 1 : t;
        }
    }
    if (has_max_age)
        c.expires = max_age < 0 ? 1 : max_age; /* Max-Age wins over Expires (§5.3 step 3) */
    if (c.secure && !secure)
        return; /* RFC 6265bis §5.7 step 8, and curl: no secure cookie from an insecure origin */
    char fh[256];
    bool from_response = host != NULL;
    if (!host) {
        /* a Set-Cookie line of a cookie file: its Domain is its host (no Domain: no host to
         * bind it to, refused) */
        if (!has_domain || doml >= sizeof fh)
            return;
        memcpy(fh, dom, doml);
        fh[doml] = '\0';
        host = fh;
    }
    if (has_domain) {
        char d[256];
        if (doml >= sizeof d)
            return;
        memcpy(d, dom, doml);
        d[doml] = '\0';
        /* no public suffix: a bare top-level name is refused (curl without a suffix list does
         * the same; "localhost" is the one name it allows) */
        if (!strchr(d, '.') && strcasecmp(d, "localhost") != 0)
            return;
        if (!domain_match(host, d))
            return; /* §5.3 step 6: the host is not in that domain */
        if (is_ip(host))
            has_domain = false; /* an IP's Domain is exactly its host: host-only */
        else
            c.tailmatch = true;
    }
    /* prefixes (RFC 6265bis §4.1.3): __Secure- needs Secure, __Host- also host-only at "/" */
    if (nl >= 9 && strncmp(ns, "__Secure-", 9) == 0 && !c.secure)
        return;
    if (nl >= 7 && strncmp(ns, "__Host-", 7) == 0 &&
        (!c.secure || has_domain || !path || pathl != 1 || path[0] != '/'))
        return;
    c.name = dupn(ns, nl);
    c.value = dupn(vs, vl);
    c.domain = has_domain ? dupn(dom, doml) : dupn(host, strlen(host));
    c.path = path && pathl && path[0] == '/' ? dupn(path, pathl) : default_path(rpath, rplen);
    if (!c.name || !c.value || !c.domain || !c.path || !clean(c.path, strlen(c.path))) {
        cookie_free(&c);
        return;
    }
    if (!secure && overlays_secure(&c)) {
        cookie_free(&c);
        return;
    }
    /* the domain as given: curl writes it so, and compares ignoring case */
    char line[300];
    if (verbose)
        snprintf(line, sizeof line, "for domain %s, path %s, expire %lld", c.domain, c.path,
                 (long long)c.expires);
    int r = jar_store(&c, now);
    if (verbose && r && from_response)
        fprintf(stderr, "* %s cookie %.*s=\"%.*s\" %s\n", r == 2 ? "Replaced" : "Added", (int)nl,
                ns, (int)vl, vs, line);
}

/* "localhost", 127.0.0.1 and ::1 count as secure, as curl counts them. */
static bool secure_context(const char *scheme, const char *host)
{
    return strcmp(scheme, "https") == 0 || strcasecmp(host, "localhost") == 0 ||
           strcmp(host, "127.0.0.1") == 0 || strcmp(host, "::1") == 0 || strcmp(host, "[::1]") == 0;
}

static void split_url(const char *url, char *scheme, size_t scap, char *host, size_t hcap,
                      const char **path, size_t *plen)
{
    vega_http_url u;
    scheme[0] = host[0] = '\0';
    *path = "/";
    *plen = 1;
    if (vega_http_url_parse(&u, url, strlen(url)) < 0)
        return;
    snprintf(scheme, scap, "%.*s", (int)u.scheme.len, u.scheme.ptr);
    for (char *p = scheme; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    snprintf(host, hcap, "%.*s", (int)u.host.len, u.host.ptr);
    for (char *p = host; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    if (host[0] == '[') {
        size_t hl = strlen(host);
        if (hl >= 2 && host[hl - 1] == ']') {
            memmove(host, host + 1, hl - 2);
            host[hl - 2] = '\0';
        }
    }
    if (u.path.len) {
        *path = u.path.ptr;
        *plen = strcspn(u.path.ptr, "?#");
        if (*plen > u.path.len)
            *plen = u.path.len;
    }
}

void curl_cookie_take(const char *url, const vega_http_fields *f)
{
    if (!engine || !f)
        return;
    char scheme[16], host[256];
    const char *path;
    size_t plen;
    split_url(url, scheme, sizeof scheme, host, sizeof host, &path, &plen);
    if (!host[0])
        return;
    bool secure = secure_context(scheme, host);
    int64_t now = (int64_t)time(NULL);
    size_t taken = 0;
    for (size_t i = 0; i < f->count && taken < COOKIE_MAX_SET; i++) {
        const vega_http_field *h = &f->items[i];
        if (h->name.len != 10 || strncasecmp(h->name.ptr, "set-cookie", 10) != 0)
            continue;
        taken++;
        take_one(h->value.ptr, h->value.len, host, path, plen, secure, now);
    }
}

static int send_order(const void *a, const void *b)
{
    const struct cookie *x = *(const struct cookie *const *)a,
                        *y = *(const struct cookie *const *)b;
    /* curl's: the longer path first, then the longer domain, the longer name, then the newer
     * (curl 7.88 measured; RFC 6265 §5.4 would send the older first) */
    size_t lx = strlen(x->path), ly = strlen(y->path);
    if (lx != ly)
        return lx < ly ? 1 : -1;
    lx = strlen(x->domain), ly = strlen(y->domain);
    if (lx != ly)
        return lx < ly ? 1 : -1;
    lx = strlen(x->name), ly = strlen(y->name);
    if (lx != ly)
        return lx < ly ? 1 : -1;
    return x->order < y->order ? 1 : -1;
}

size_t curl_cookie_header(const char *url, char *out, size_t cap, bool *capped)
{
    out[0] = '\0';
    *capped = false;
    if (!engine || jar.n == 0 || cap == 0)
        return 0;
    char scheme[16], host[256], path[CURL_MAX_URL_LEN];
    const char *p;
    size_t plen;
    split_url(url, scheme, sizeof scheme, host, sizeof host, &p, &plen);
    if (plen >= sizeof path)
        plen = sizeof path - 1;
    memcpy(path, p, plen);
    path[plen] = '\0';
    bool secure = secure_context(scheme, host);
    int64_t now = (int64_t)time(NULL);
    const struct cookie **m = malloc(jar.n * sizeof *m);
    if (!m)
        return 0;
    size_t nm = 0;
    for (size_t i = 0; i < jar.n; i++) {
        const struct cookie *c = &jar.c[i];
        if (c->expires && c->expires <= now)
            continue;
        if (c->secure && !secure)
            continue;
        if (c->tailmatch ? !domain_match(host, c->domain) : strcasecmp(host, c->domain) != 0)
            continue;
        if (!path_match(path, c->path))
            continue;
        m[nm++] = c;
    }
    qsort(m, nm, sizeof *m, send_order);
    size_t len = 0;
    for (size_t i = 0; i < nm && i < COOKIE_MAX_SEND; i++) {
        size_t nl = strlen(m[i]->name), vl = strlen(m[i]->value), sep = len ? 2 : 0;
        if (len + sep + nl + 1 + vl + 1 > cap) {
            *capped = true; /* the field's cap: the rest are not sent (curl stops at 8190) */
            break;
        }
        len += (size_t)snprintf(out + len, cap - len, "%s%s=%s", sep ? "; " : "", m[i]->name,
                                m[i]->value);
    }
    free(m);
    return len;
}

/* One line of a Netscape cookie file (curl's fields, tab-separated). */
static void load_line(char *line, int64_t now, bool junk_session)
{
    bool httponly = false;
    if (strncmp(line, "#HttpOnly_", 10) == 0) {
        httponly = true;
        line += 10;
    }
    if (line[0] == '#' || line[0] == '\0')
        return;
    if (strncasecmp(line, "Set-Cookie:", 11) == 0) { /* curl reads header lines too */
        take_one(line + 11, strlen(line + 11), NULL, "/", 1, true, now);
        return;
    }
    char *f[7];
    int n = 0;
    for (char *s = line; n < 7; n++) {
        f[n] = s;
        char *t = strchr(s, '\t');
        if (!t) {
            n++;
            break;
        }
        *t = '\0';
        s = t + 1;
    }
    if (n == 6 && (strcmp(f[2], "TRUE") == 0 || strcmp(f[2], "FALSE") == 0)) {
        /* an old file without the path field: curl makes it "/" */
        for (int i = 6; i > 2; i--)
            f[i] = f[i - 1];
        f[2] = "/";
        n = 7;
    }
    if (n == 6) { /* curl accepts a line without a value */
        f[6] = "";
        n = 7;
    }
    if (n != 7)
        return;
    char *x;
    long long exp = strtoll(f[4], &x, 10);
    if (*x || exp < 0)
        return;
    if (exp == 0 && junk_session)
        return; /* -j: a new session, the session cookies of the file are dropped */
    size_t nl = strlen(f[5]), vl = strlen(f[6]);
    if (nl == 0 || nl >= COOKIE_MAX_NAMEVALUE - 1 || vl >= COOKIE_MAX_NAMEVALUE - 1 ||
        nl + vl > COOKIE_MAX_NAMEVALUE)
        return;
    const char *dom = f[0][0] == '.' ? f[0] + 1 : f[0];
    if (!dom[0] || !f[2][0])
        return;
    struct cookie c = {
        .name = dupn(f[5], nl),
        .value = dupn(f[6], vl),
        .domain = dupn(dom, strlen(dom)),
        .path = dupn(f[2], strlen(f[2])),
        .tailmatch = strcasecmp(f[1], "TRUE") == 0,
        .secure = strcasecmp(f[3], "TRUE") == 0,
        .httponly = httponly,
        .expires = (int64_t)exp,
    };
    if (!c.name || !c.value || !c.domain || !c.path) {
        cookie_free(&c);
        return;
    }
    jar_store(&c, now);
}

/* -b FILE: curl turns the engine on even when the file cannot be read (the "-b none" idiom). */
static void load_file(const struct curl_opts *o, const char *path)
{
    FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!fp) {
        if (o->verbose)
            fprintf(stderr, "* WARNING: failed to open cookie file \"%s\"\n", path);
        return;
    }
    int64_t now = (int64_t)time(NULL);
    char line[COOKIE_MAX_LINE + 2];
    size_t total = 0;
    bool skipping = false;
    while (fgets(line, sizeof line, fp)) {
        size_t l = strlen(line);
        total += l;
        if (total > COOKIE_MAX_FILE) {
            fprintf(stderr,
                    "vega-curl: warning: cookie file \"%s\" is over %u bytes; the rest "
                    "is ignored\n",
                    path, COOKIE_MAX_FILE);
            break;
        }
        bool whole = l && line[l - 1] == '\n';
        if (skipping) { /* the rest of a line too long to be a cookie */
            skipping = !whole;
            continue;
        }
        if (!whole && !feof(fp)) {
            skipping = true;
            continue;
        }
        while (l && (line[l - 1] == '\n' || line[l - 1] == '\r'))
            line[--l] = '\0';
        load_line(line, now, o->junk_session);
    }
    if (fp != stdin)
        fclose(fp);
}

void curl_cookie_init(const struct curl_opts *o)
{
    engine = o->cookie_jar != NULL || o->ncookie_files > 0;
    verbose = o->verbose;
    for (size_t i = 0; i < o->ncookie_files; i++)
        load_file(o, o->cookie_files[i]);
}

static int write_order(const void *a, const void *b)
{
    const struct cookie *x = *(const struct cookie *const *)a,
                        *y = *(const struct cookie *const *)b;
    return x->order < y->order ? 1 : -1; /* curl writes the newest first */
}

static mode_t current_umask(void)
{
    mode_t m = umask(0);
    umask(m);
    return m;
}

int curl_cookie_save(const struct curl_opts *o)
{
    if (!o->cookie_jar) {
        for (size_t i = 0; i < jar.n; i++)
            cookie_free(&jar.c[i]);
        free(jar.c);
        return 0;
    }
    /* a temporary file next to it, renamed over it: a jar is never left half written */
    bool out = strcmp(o->cookie_jar, "-") == 0;
    char tmp[4096 + 16];
    FILE *fp = stdout;
    int code = 0;
    if (!out) {
        int n = snprintf(tmp, sizeof tmp, "%s.XXXXXX", o->cookie_jar);
        int fd = n > 0 && (size_t)n < sizeof tmp ? mkstemp(tmp) : -1;
        fp = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (fd >= 0 && !fp) {
            close(fd);
            unlink(tmp);
        }
        if (fp)
            (void)fchmod(fd, 0644 & ~current_umask());
    }
    if (!fp) {
        fprintf(stderr, "vega-curl: warning: failed to save cookies in %s: %s\n", o->cookie_jar,
                strerror(errno));
        code = -1;
    }
    int64_t now = (int64_t)time(NULL);
    const struct cookie **m = jar.n ? malloc(jar.n * sizeof *m) : NULL;
    size_t nm = 0;
    for (size_t i = 0; i < jar.n && m; i++)
        if (!jar.c[i].expires || jar.c[i].expires > now)
            m[nm++] = &jar.c[i];
    if (nm)
        qsort(m, nm, sizeof *m, write_order);
    if (fp) {
        fputs("# Netscape HTTP Cookie File\n"
              "# https://curl.se/docs/http-cookies.html\n"
              "# This file was generated by libcurl! Edit at your own risk.\n\n",
              fp);
        for (size_t i = 0; i < nm; i++) {
            const struct cookie *c = m[i];
            fprintf(fp, "%s%s%s\t%s\t%s\t%s\t%lld\t%s\t%s\n", c->httponly ? "#HttpOnly_" : "",
                    c->tailmatch ? "." : "", c->domain, c->tailmatch ? "TRUE" : "FALSE", c->path,
                    c->secure ? "TRUE" : "FALSE", (long long)c->expires, c->name, c->value);
        }
        if ((out ? fflush(fp) : fclose(fp)) != 0 || (!out && rename(tmp, o->cookie_jar) < 0)) {
            fprintf(stderr, "vega-curl: warning: failed to save cookies in %s: %s\n", o->cookie_jar,
                    strerror(errno));
            if (!out)
                unlink(tmp);
            code = -1;
        }
    }
    free(m);
    for (size_t i = 0; i < jar.n; i++)
        cookie_free(&jar.c[i]);
    free(jar.c);
    return code;
}
