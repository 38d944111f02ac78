/* SPDX-License-Identifier: MIT */
/* The access rules: client address ranges for --allow, destinations refused by --deny-dest
 * (CIDR, host names, ports), the SSRF guard's ranges, CIDR parsing and matching (IPv4-mapped
 * IPv6 addresses match IPv4 ranges), and address comparisons that treat IPv4-mapped addresses
 * as IPv4. */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* A deny-dest host: labels of letters, digits, '-' (not first or last) and '_' joined by dots,
 * at least one letter (so that a mistyped address is not taken for a name); "*." or "." in
 * front and a dot at the end are dropped. The name lowercase, malloc'd; NULL when not a host (*err
 * -EINVAL) or out of memory (*err -ENOMEM). */
static char *host_parse(const char *s, size_t n, int *err)
{
    *err = -EINVAL;
    if (n >= 2 && s[0] == '*' && s[1] == '.')
        s += 2, n -= 2;
    else if (n >= 1 && s[0] == '.')
        s++, n--;
    if (n > 0 && s[n - 1] == '.')
        n--;
    if (n == 0 || n > VEGA_PROXY_MAX_NAME)
        return NULL;
    bool letter = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool edge = i == 0 || s[i - 1] == '.' || i + 1 == n || s[i + 1] == '.';
        if (c == '.' ? i == 0 || s[i - 1] == '.' : !isalnum(c) && (c != '-' || edge) && c != '_')
            return NULL; /* an empty label, a hyphen at a label's edge, another byte */
        letter |= isalpha(c) != 0;
    }
    if (!letter)
        return NULL;
    char *h = malloc(n + 1);
    if (!h) {
        *err = -ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        h[i] = (char)tolower((unsigned char)s[i]);
    h[n] = '\0';
    return h;
}

void deny_free(struct deny_rule *d)
{
    free(d->host);
    d->host = NULL;
}

int deny_parse(const char *s, struct deny_rule *out)
{
    char net[VEGA_PROXY_MAX_NAME + 8];
    const char *ports = NULL;
    size_t n;
    memset(out, 0, sizeof *out);
    if (s[0] == ':' || (s[0] && strspn(s, "0123456789,-") == strlen(s))) {
        out->any_addr = true; /* PORTS alone */
        return ports_parse(s[0] == ':' ? s + 1 : s, out);
    }
    bool bracketed = s[0] == '[';
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
    int r = cidr_parse(net, &out->net);
    if (r < 0 && !bracketed && (out->host = host_parse(net, n, &r)) != NULL)
        r = 0;
    if (r == 0 && ports)
        r = ports_parse(ports, out);
    if (r < 0)
        deny_free(out);
    return r;
}

static bool ports_match(const struct deny_rule *d, uint16_t port)
{
    bool hit = d->nports == 0;
    for (size_t j = 0; j < d->nports && !hit; j++)
        hit = port >= d->lo[j] && port <= d->hi[j];
    return hit;
}

bool deny_match(const struct deny_rule *d, const vega_addr *a)
{
    if (d->host || (!d->any_addr && !cidr_match(&d->net, a)))
        return false;
    return ports_match(d, vega_addr_port(a));
}

bool deny_match_name(const struct deny_rule *d, const char *name, uint16_t port)
{
    if (!d->host)
        return d->any_addr && ports_match(d, port);
    size_t n = strlen(name), h = strlen(d->host);
    if (n > 0 && name[n - 1] == '.')
        n--;
    /* the name itself, or one below it: "a.corp.example" for "corp.example" */
    if (n < h || (n > h && name[n - h - 1] != '.'))
        return false;
    return strncasecmp(name + n - h, d->host, h) == 0 && ports_match(d, port);
}

bool addr_is_private(const vega_addr *a)
{
    static const struct cidr ranges[] = {
        {AF_INET, {0}, 8},                           /* "this network" */
        {AF_INET, {10}, 8},                          /* RFC 1918 */
        {AF_INET, {100, 64}, 10},                    /* shared address space (CGNAT) */
        {AF_INET, {127}, 8},                         /* loopback */
        {AF_INET, {169, 254}, 16},                   /* link-local, cloud metadata services */
        {AF_INET, {172, 16}, 12},                    /* RFC 1918 */
        {AF_INET, {192, 0, 0}, 24},                  /* IETF protocol assignments */
        {AF_INET, {192, 168}, 16},                   /* RFC 1918 */
        {AF_INET, {198, 18}, 15},                    /* benchmarking */
        {AF_INET, {224}, 3},                         /* multicast, reserved, broadcast */
        {AF_INET6, {0}, 127},                        /* unspecified and loopback */
        {AF_INET6, {0xfc}, 7},                       /* unique local */
        {AF_INET6, {0xfe, 0x80}, 10},                /* link-local */
        {AF_INET6, {0xff}, 8},                       /* multicast */
        {AF_INET6, {0, 0x64, 0xff, 0x9b, 0, 1}, 48}, /* local-use NAT64 (RFC 8215) */
    };
    for (size_t i = 0; i < sizeof ranges / sizeof *ranges; i++)
        if (cidr_match(&ranges[i], a))
            return true;
    return false;
}
