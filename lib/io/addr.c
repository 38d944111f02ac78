/* SPDX-License-Identifier: MIT */
/* Socket addresses: numeric parsing and formatting, Unix paths, and name resolution through
 * getaddrinfo on the blocking pool (until the asynchronous resolver exists). */
#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/dns.h>

#include "io_int.h"

#define UNIX_PREFIX "unix:"

/* Parses a decimal port, 0..65535, digits only. */
static int parse_port(const char *s, size_t n, uint16_t *out)
{
    if (n == 0 || n > 5)
        return -EINVAL;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > 65535)
        return -EINVAL;
    *out = (uint16_t)v;
    return 0;
}

/* Numeric IP of n bytes (brackets allowed around IPv6, "%scope" allowed after it). */
static int ip_from(vega_addr *out, const char *ip, size_t n, uint16_t port)
{
    char tmp[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
    if (n >= 2 && ip[0] == '[' && ip[n - 1] == ']') {
        ip++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof(tmp))
        return -EINVAL;
    memcpy(tmp, ip, n);
    tmp[n] = '\0';
    memset(out, 0, sizeof(*out));

    struct sockaddr_in *sin = (struct sockaddr_in *)&out->ss;
    if (inet_pton(AF_INET, tmp, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons(port);
        out->len = sizeof(*sin);
        return 0;
    }

    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out->ss;
    char *pct = strchr(tmp, '%');
    if (pct) {
        *pct++ = '\0';
        if (*pct == '\0')
            return -EINVAL;
        char *end;
        unsigned long id = strtoul(pct, &end, 10);
        if (*end != '\0') {
            id = if_nametoindex(pct);
            if (id == 0)
                return -EINVAL;
        }
        sin6->sin6_scope_id = (uint32_t)id;
    }
    if (inet_pton(AF_INET6, tmp, &sin6->sin6_addr) != 1) {
        memset(out, 0, sizeof(*out));
        return -EINVAL;
    }
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    out->len = sizeof(*sin6);
    return 0;
}

int vega_addr_from_ip(vega_addr *out, const char *ip, uint16_t port)
{
    if (!out || !ip)
        return -EINVAL;
    return ip_from(out, ip, strlen(ip), port);
}

int vega_addr_from_unix(vega_addr *out, const char *path)
{
    if (!out || !path || !*path)
        return -EINVAL;
    size_t n = strlen(path);
    struct sockaddr_un *sun = (struct sockaddr_un *)&out->ss;
    if (n >= sizeof(sun->sun_path))
        return -ENAMETOOLONG;
    memset(out, 0, sizeof(*out));
    sun->sun_family = AF_UNIX;
    if (path[0] == '@') {
        if (n == 1)
            return -EINVAL;
        /* Abstract namespace: a leading NUL, and the length (not a terminator) ends the name. */
        sun->sun_path[0] = '\0';
        memcpy(sun->sun_path + 1, path + 1, n - 1);
        out->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    } else {
        memcpy(sun->sun_path, path, n + 1);
        out->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    }
    return 0;
}

int vega_addr_parse(vega_addr *out, const char *s, const char *default_host)
{
    if (!out || !s)
        return -EINVAL;
    if (strncmp(s, UNIX_PREFIX, strlen(UNIX_PREFIX)) == 0)
        return vega_addr_from_unix(out, s + strlen(UNIX_PREFIX));

    size_t n = strlen(s);
    uint16_t port;
    if (parse_port(s, n, &port) == 0) {
        if (!default_host)
            return -EINVAL;
        return ip_from(out, default_host, strlen(default_host), port);
    }

    const char *colon;
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':')
            return -EINVAL;
        colon = rb + 1;
        /* Only IPv6 goes in brackets. */
        if (!memchr(s, ':', (size_t)(rb - s)))
            return -EINVAL;
    } else {
        colon = strchr(s, ':');
        /* Two colons without brackets: an IPv6 address whose port cannot be told apart. */
        if (!colon || strchr(colon + 1, ':'))
            return -EINVAL;
    }
    int r = parse_port(colon + 1, strlen(colon + 1), &port);
    if (r < 0)
        return r;
    return ip_from(out, s, (size_t)(colon - s), port);
}

int vega_addr_format(const vega_addr *a, char *buf, size_t cap)
{
    char tmp[VEGA_ADDR_STRLEN + 16];
    int n;
    if (!a || a->len == 0)
        return -EAFNOSUPPORT;
    switch (a->ss.ss_family) {
    case AF_INET: {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)&a->ss;
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
        n = snprintf(tmp, sizeof(tmp), "%s:%u", ip, (unsigned)ntohs(sin->sin_port));
        break;
    }
    case AF_INET6: {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&a->ss;
        char ip[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
        if (sin6->sin6_scope_id)
            n = snprintf(tmp, sizeof(tmp), "[%s%%%u]:%u", ip, (unsigned)sin6->sin6_scope_id,
                         (unsigned)ntohs(sin6->sin6_port));
        else
            n = snprintf(tmp, sizeof(tmp), "[%s]:%u", ip, (unsigned)ntohs(sin6->sin6_port));
        break;
    }
    case AF_UNIX: {
        const struct sockaddr_un *sun = (const struct sockaddr_un *)&a->ss;
        size_t off = offsetof(struct sockaddr_un, sun_path);
        size_t plen = a->len > off ? a->len - off : 0;
        if (plen > sizeof(sun->sun_path))
            plen = sizeof(sun->sun_path);
        if (plen == 0) {
            n = snprintf(tmp, sizeof(tmp), UNIX_PREFIX);
        } else if (sun->sun_path[0] == '\0') {
            n = snprintf(tmp, sizeof(tmp), UNIX_PREFIX "@%.*s", (int)(plen - 1), sun->sun_path + 1);
        } else {
            n = snprintf(tmp, sizeof(tmp), UNIX_PREFIX "%.*s", (int)strnlen(sun->sun_path, plen),
                         sun->sun_path);
        }
        break;
    }
    default:
        return -EAFNOSUPPORT;
    }
    if (n < 0)
        return -EINVAL;
    if (cap > 0) {
        size_t c = (size_t)n < cap ? (size_t)n : cap - 1;
        memcpy(buf, tmp, c);
        buf[c] = '\0';
    }
    if ((size_t)n >= cap)
        return VEGA_ERR_NOBUF;
    return n;
}

int vega_addr_family(const vega_addr *a)
{
    return a && a->len ? a->ss.ss_family : AF_UNSPEC;
}

uint16_t vega_addr_port(const vega_addr *a)
{
    switch (vega_addr_family(a)) {
    case AF_INET:
        return ntohs(((const struct sockaddr_in *)&a->ss)->sin_port);
    case AF_INET6:
        return ntohs(((const struct sockaddr_in6 *)&a->ss)->sin6_port);
    default:
        return 0;
    }
}

void vega_addr_set_port(vega_addr *a, uint16_t port)
{
    switch (vega_addr_family(a)) {
    case AF_INET:
        ((struct sockaddr_in *)&a->ss)->sin_port = htons(port);
        break;
    case AF_INET6:
        ((struct sockaddr_in6 *)&a->ss)->sin6_port = htons(port);
        break;
    default:
        break;
    }
}

bool vega_addr_equal(const vega_addr *a, const vega_addr *b)
{
    int fa = vega_addr_family(a);
    if (fa != vega_addr_family(b))
        return false;
    switch (fa) {
    case AF_INET: {
        const struct sockaddr_in *x = (const void *)&a->ss, *y = (const void *)&b->ss;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    case AF_INET6: {
        const struct sockaddr_in6 *x = (const void *)&a->ss, *y = (const void *)&b->ss;
        return x->sin6_port == y->sin6_port && x->sin6_scope_id == y->sin6_scope_id &&
               memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
    }
    case AF_UNIX: {
        /* The path is the bytes len covers past sun_path's offset: none for an unnamed (or a
         * hand-made short) address, never more than sun_path holds. */
        const struct sockaddr_un *x = (const void *)&a->ss, *y = (const void *)&b->ss;
        size_t off = offsetof(struct sockaddr_un, sun_path);
        size_t plen = VEGA__MIN(a->len > off ? a->len - off : 0, sizeof(x->sun_path));
        return a->len == b->len && (plen == 0 || memcmp(x->sun_path, y->sun_path, plen) == 0);
    }
    default:
        return true;
    }
}

/* ---- resolution ----------------------------------------------------------------------------- */

struct gai_job {
    char *host; /* owned by the job */
    char port[8];
    int family;
    int gai_err;
    struct addrinfo *res;
};

static void *gai_run(void *arg)
{
    struct gai_job *j = arg;
    struct addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = j->family;
    hints.ai_socktype = SOCK_STREAM; /* one entry per address, not one per socket type */
    hints.ai_flags = AI_NUMERICSERV;
    j->gai_err = getaddrinfo(j->host, j->port, &hints, &j->res);
    return NULL;
}

static int gai_code(int e)
{
    switch (e) {
    case EAI_NONAME:
        return VEGA_ERR_DNS_NOT_FOUND;
#ifdef EAI_NODATA
    case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
    case EAI_ADDRFAMILY:
#endif
        return VEGA_ERR_DNS_NO_ADDRESS;
    case EAI_AGAIN:
        return VEGA_ERR_DNS_SERVER;
    case EAI_MEMORY:
        return -ENOMEM;
    case EAI_FAMILY:
        return -EAFNOSUPPORT;
    default:
        return -EIO;
    }
}

int vega_addr_resolve(vega_addr *out, size_t max, const char *host, const char *port, int family,
                      vega_deadline dl)
{
    uint16_t p;
    if (!out || max == 0 || !host || !*host || !port)
        return -EINVAL;
    if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6)
        return -EINVAL;
    if (parse_port(port, strlen(port), &p) < 0)
        return -EINVAL;

    vega_addr a;
    if (ip_from(&a, host, strlen(host), p) == 0) {
        if (family != AF_UNSPEC && vega_addr_family(&a) != family)
            return -EAFNOSUPPORT;
        out[0] = a;
        return 1;
    }
    if (host[0] == '[')
        return -EINVAL; /* brackets hold numeric IPv6 only */

    /* The job lives on the heap: on timeout or cancel vega_blocking still waits for gai_run,
     * but keeping the job off the task stack costs nothing and stays safe if that changes. */
    struct gai_job *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    j->host = strdup(host);
    if (!j->host) {
        free(j);
        return -ENOMEM;
    }
    snprintf(j->port, sizeof(j->port), "%u", (unsigned)p);
    j->family = family;
    int r = vega_blocking(gai_run, j, NULL, dl);
    if (r == 0) {
        if (j->gai_err != 0) {
            r = gai_code(j->gai_err);
        } else {
            size_t n = 0;
            for (struct addrinfo *ai = j->res; ai && n < max; ai = ai->ai_next) {
                if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
                    continue;
                if (ai->ai_addrlen > sizeof(out[n].ss))
                    continue;
                memset(&out[n], 0, sizeof(out[n]));
                memcpy(&out[n].ss, ai->ai_addr, ai->ai_addrlen);
                out[n].len = ai->ai_addrlen;
                n++;
            }
            r = n ? (int)n : VEGA_ERR_DNS_NO_ADDRESS;
        }
    }
    if (j->res)
        freeaddrinfo(j->res);
    free(j->host);
    free(j);
    return r;
}
