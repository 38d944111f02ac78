/* SPDX-License-Identifier: MIT */
/* The access rules: client address ranges for --allow, destinations refused by --deny-dest
 * (CIDR and ports), CIDR parsing and matching (IPv4-mapped IPv6 addresses match IPv4 ranges),
 * and address comparisons that treat IPv4-mapped addresses as IPv4. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

int cidr_parse(const char *s, struct cidr *out)
{
    char ip[INET6_ADDRSTRLEN + 1];
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof ip)
        return -EINVAL;
    memcpy(ip, s, n);
    ip[n] = '\0';
    memset(out, 0, sizeof *out);
    unsigned max;
    if (inet_pton(AF_INET, ip, out->ip) == 1) {
        out->family = AF_INET;
        max = 32;
    } else if (inet_pton(AF_INET6, ip, out->ip) == 1) {
        out->family = AF_INET6;
        max = 128;
    } else {
        return -EINVAL;
    }
    out->bits = max;
    if (slash) {
        char *end;
        unsigned long b = strtoul(slash + 1, &end, 10);
        if (!slash[1] || *end || b > max)
            return -EINVAL;
        out->bits = (unsigned)b;
    }
    return 0;
}

/* The address bytes of a (an IPv4-mapped IPv6 address as IPv4). */
static int addr_bytes(const vega_addr *a, uint8_t ip[16])
{
    if (a->ss.ss_family == AF_INET) {
        memcpy(ip, &((const struct sockaddr_in *)&a->ss)->sin_addr, 4);
        return AF_INET;
    }
    if (a->ss.ss_family == AF_INET6) {
        const uint8_t *b = ((const struct sockaddr_in6 *)&a->ss)->sin6_addr.s6_addr;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(b, mapped, 12) == 0) {
            memcpy(ip, b + 12, 4);
            return AF_INET;
        }
        memcpy(ip, b, 16);
        return AF_INET6;
    }
    return AF_UNSPEC;
}

bool cidr_match(const struct cidr *c, const vega_addr *a)
{
    uint8_t ip[16];
    if (addr_bytes(a, ip) != c->family)
        return false;
    unsigned full = c->bits / 8, rest = c->bits % 8;
    if (memcmp(ip, c->ip, full) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xFF << (8 - rest));
    return (ip[full] & mask) == (c->ip[full] & mask);
}

bool addr_is_loopback(const vega_addr *a)
{
    uint8_t ip[16];
    int f = addr_bytes(a, ip);
    if (f == AF_INET)
        return ip[0] == 127;
    static const uint8_t one[16] = {[15] = 1};
    return f == AF_INET6 && memcmp(ip, one, 16) == 0;
}

bool addr_same_ip(const vega_addr *a, const vega_addr *b)
{
    uint8_t x[16], y[16];
    int f = addr_bytes(a, x);
    if (f == AF_UNSPEC || f != addr_bytes(b, y))
        return false;
    return memcmp(x, y, f == AF_INET ? 4 : 16) == 0;
}

void proxy_addr_from(const vega_addr *a, vega_proxy_addr *out)
{
    memset(out, 0, sizeof *out);
    int f = addr_bytes(a, out->ip);
    out->type = f == AF_INET6 ? VEGA_PROXY_ATYP_IPV6 : VEGA_PROXY_ATYP_IPV4;
    out->port = vega_addr_port(a);
}

/* PORTS: N or N-M (1..65535), comma-separated. */
static int ports_parse(const char *s, struct deny_rule *out)
{
    while (*s) {
        if (out->nports == PROXY_MAX_PORTS)
            return -EINVAL;
        char *end;
        if (*s < '0' || *s > '9')
            return -EINVAL;
        unsigned long lo = strtoul(s, &end, 10), hi = lo;
        if (*end == '-') {
            if (end[1] < '0' || end[1] > '9')
                return -EINVAL;
            hi = strtoul(end + 1, &end, 10);
        }
        if (lo == 0 || hi > 65535 || lo > hi || (*end && *end != ','))
            return -EINVAL;
        out->lo[out->nports] = (uint16_t)lo;
        out->hi[out->nports] = (uint16_t)hi;
        out->nports++;
        s = *end ? end + 1 : end;
        if (*end && !*s)
            return -EINVAL; /* a trailing comma */
    }
    return out->nports ? 0 : -EINVAL;
}

int deny_parse(const char *s, struct deny_rule *out)
{
    char net[INET6_ADDRSTRLEN + 8];
    const char *ports = NULL;
    size_t n;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || (close[1] && close[1] != ':'))
            return -EINVAL;
        n = (size_t)(close - s - 1);
        s++;
        ports = close[1] ? close + 2 : NULL;
    } else {
        const char *colon = strchr(s, ':');
        /* more than one colon: an IPv6 range, which takes ports only in brackets */
        if (colon && !strchr(colon + 1, ':')) {
            n = (size_t)(colon - s);
            ports = colon + 1;
        } else {
            n = strlen(s);
        }
    }
    if (n == 0 || n >= sizeof net)
        return -EINVAL;
    memcpy(net, s, n);
    net[n] = '\0';
    memset(out, 0, sizeof *out);
    int r = cidr_parse(net, &out->net);
    if (r == 0 && ports)
        r = ports_parse(ports, out);
    return r;
}

bool deny_match(const struct deny_rule *d, const vega_addr *a)
{
    if (!cidr_match(&d->net, a))
        return false;
    uint16_t port = vega_addr_port(a);
    bool hit = d->nports == 0;
    for (size_t j = 0; j < d->nports && !hit; j++)
        hit = port >= d->lo[j] && port <= d->hi[j];
    return hit;
}
