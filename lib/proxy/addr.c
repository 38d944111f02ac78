/* SPDX-License-Identifier: MIT */
/* Addresses around the proxy handshakes: IP literals, the SOCKS5 UDP request header (RFC 1928
 * §7), proxy URLs as curl's -x takes them, and curl's NO_PROXY matching. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy_int.h"

bool vega__proxy_parse_ip(const char *s, size_t len, vega_proxy_addr *a)
{
    char buf[64];
    if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
        s++;
        len -= 2;
    }
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (inet_pton(AF_INET, buf, a->ip) == 1) {
        a->type = VEGA_PROXY_ATYP_IPV4;
        return true;
    }
    if (inet_pton(AF_INET6, buf, a->ip) == 1) {
        a->type = VEGA_PROXY_ATYP_IPV6;
        return true;
    }
    return false;
}

/* ---- SOCKS5 UDP header ------------------------------------------------------------------------
 */

size_t vega__proxy_addr_len(const vega_proxy_addr *a)
{
    switch (a->type) {
    case VEGA_PROXY_ATYP_IPV4:
        return 1 + 4 + 2;
    case VEGA_PROXY_ATYP_IPV6:
        return 1 + 16 + 2;
    case VEGA_PROXY_ATYP_NAME: {
        size_t n = strnlen(a->name, sizeof a->name);
        return n == 0 || n > VEGA_PROXY_MAX_NAME ? 0 : 1 + 1 + n + 2;
    }
    default:
        return 0;
    }
}

size_t vega__proxy_addr_put(uint8_t *p, const vega_proxy_addr *a)
{
    size_t o = 0;
    p[o++] = (uint8_t)a->type;
    if (a->type == VEGA_PROXY_ATYP_IPV4) {
        memcpy(p + o, a->ip, 4);
        o += 4;
    } else if (a->type == VEGA_PROXY_ATYP_IPV6) {
        memcpy(p + o, a->ip, 16);
        o += 16;
    } else {
        size_t n = strlen(a->name);
        p[o++] = (uint8_t)n;
        memcpy(p + o, a->name, n);
        o += n;
    }
    p[o++] = (uint8_t)(a->port >> 8);
    p[o++] = (uint8_t)a->port;
    return o;
}

vega_ssize vega_proxy_udp_header_write(uint8_t *out, size_t cap, uint8_t frag,
                                       const vega_proxy_addr *dst)
{
    if (!dst || (!out && cap))
        return -EINVAL;
    size_t al = vega__proxy_addr_len(dst);
    if (!al)
        return -EINVAL;
    /* +----+------+------+----------+----------+----------+
     * |RSV | FRAG | ATYP | DST.ADDR | DST.PORT |   DATA   |
     * | 2  |  1   |  1   | Variable |    2     | Variable |  (RFC 1928 §7) */
    size_t n = 3 + al;
    if (n > cap)
        return VEGA_ERR_NOBUF;
    out[0] = out[1] = 0;
    out[2] = frag;
    vega__proxy_addr_put(out + 3, dst);
    return (vega_ssize)n;
}

vega_ssize vega_proxy_udp_header_parse(const uint8_t *in, size_t len, uint8_t *frag,
                                       vega_proxy_addr *addr)
{
    if ((!in && len) || !frag || !addr)
        return -EINVAL;
    memset(addr, 0, sizeof *addr);
    if (len < 4 || in[0] != 0 || in[1] != 0)
        return VEGA_ERR_PROXY_HANDSHAKE;
    size_t o = 4;
    switch (in[3]) {
    case VEGA_PROXY_ATYP_IPV4:
        if (o + 4 + 2 > len)
            return VEGA_ERR_PROXY_HANDSHAKE;
        memcpy(addr->ip, in + o, 4);
        o += 4;
        break;
    case VEGA_PROXY_ATYP_IPV6:
        if (o + 16 + 2 > len)
            return VEGA_ERR_PROXY_HANDSHAKE;
        memcpy(addr->ip, in + o, 16);
        o += 16;
        break;
    case VEGA_PROXY_ATYP_NAME: {
        if (o + 1 > len)
            return VEGA_ERR_PROXY_HANDSHAKE;
        size_t n = in[o++];
        if (n == 0 || o + n + 2 > len || memchr(in + o, 0, n))
            return VEGA_ERR_PROXY_HANDSHAKE; /* a NUL cannot be in a host name (nor a C string) */
        memcpy(addr->name, in + o, n);
        addr->name[n] = '\0';
        o += n;
        break;
    }
    default:
        return VEGA_ERR_PROXY_HANDSHAKE;
    }
    addr->type = (vega_proxy_atyp)in[3];
    addr->port = (uint16_t)(in[o] << 8 | in[o + 1]);
    *frag = in[2];
    return (vega_ssize)(o + 2);
}

/* ---- proxy URLs -------------------------------------------------------------------------------
 */

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Percent-decodes s[0..n) into out (cap bytes, NUL-terminated). */
static int pct_decode(char *out, size_t cap, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 3 > n)
                return -EINVAL;
            int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0)
                return -EINVAL;
            c = (char)(hi << 4 | lo);
            i += 2;
        }
        if (c == '\0' || c == '\r' || c == '\n' || o + 1 >= cap)
            return -EINVAL;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

int vega_proxy_url_parse(vega_proxy_url *out, const char *url)
{
    if (!out || !url)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    static const struct {
        const char *name;
        vega_proxy_kind kind;
        uint16_t port;
    } schemes[] = {
        {"http", VEGA_PROXY_HTTP, 1080},     {"https", VEGA_PROXY_HTTPS, 443},
        {"socks4", VEGA_PROXY_SOCKS4, 1080}, {"socks4a", VEGA_PROXY_SOCKS4A, 1080},
        {"socks5", VEGA_PROXY_SOCKS5, 1080}, {"socks5h", VEGA_PROXY_SOCKS5H, 1080},
    };
    const char *p = url;
    const char *sep = strstr(url, "://");
    out->kind = VEGA_PROXY_HTTP;
    out->port = 1080;
    if (sep) {
        size_t sl = (size_t)(sep - url);
        bool found = false;
        for (size_t i = 0; i < VEGA__ARRAY_LEN(schemes); i++)
            if (strlen(schemes[i].name) == sl && strncasecmp(url, schemes[i].name, sl) == 0) {
                out->kind = schemes[i].kind;
                out->port = schemes[i].port;
                found = true;
            }
        if (!found)
            return -EINVAL;
        p = sep + 3;
    }
    /* authority ends at '/', '?' or '#'; only an empty path or "/" may follow */
    size_t alen = strcspn(p, "/?#");
    if (p[alen] && strcmp(p + alen, "/") != 0)
        return -EINVAL;
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
        if (p[i] == '@')
            at = p + i; /* the last '@': a password may hold one unencoded */
    const char *h = p;
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        size_t ul = colon ? (size_t)(colon - p) : (size_t)(at - p);
        if (pct_decode(out->user, sizeof out->user, p, ul) < 0)
            return -EINVAL;
        if (colon && pct_decode(out->password, sizeof out->password, colon + 1,
                                (size_t)(at - colon - 1)) < 0)
            return -EINVAL;
        out->has_user = true;
        h = at + 1;
    }
    size_t hl = (size_t)(p + alen - h);
    const char *port = NULL;
    size_t host_len;
    if (hl > 0 && h[0] == '[') {
        const char *rb = memchr(h, ']', hl);
        if (!rb)
            return -EINVAL;
        host_len = (size_t)(rb - h - 1);
        if (rb + 1 < h + hl) {
            if (rb[1] != ':')
                return -EINVAL;
            port = rb + 2;
        }
        h++;
    } else {
        const char *colon = memchr(h, ':', hl);
        host_len = colon ? (size_t)(colon - h) : hl;
        if (colon)
            port = colon + 1;
    }
    if (host_len == 0 || host_len > VEGA_PROXY_MAX_NAME)
        return -EINVAL;
    memcpy(out->host, h, host_len);
    out->host[host_len] = '\0';
    for (size_t i = 0; i < host_len; i++)
        if ((unsigned char)out->host[i] <= ' ' || strchr("@/\\%", out->host[i]))
            return -EINVAL;
    if (port) {
        const char *pe = p + alen;
        if (port == pe)
            return 0; /* "host:" keeps the default, as curl */
        unsigned long v = 0;
        for (const char *c = port; c < pe; c++) {
            if (*c < '0' || *c > '9')
                return -EINVAL;
            v = v * 10 + (unsigned long)(*c - '0');
            if (v > 65535)
                return -EINVAL;
        }
        if (v == 0)
            return -EINVAL;
        out->port = (uint16_t)v;
    }
    return 0;
}

/* ---- NO_PROXY ---------------------------------------------------------------------------------
 */

/* host in [net/prefix]: both parsed addresses of one family. */
static bool cidr_match(const vega_proxy_addr *host, const vega_proxy_addr *net, unsigned prefix)
{
    if (host->type != net->type)
        return false;
    unsigned bits = host->type == VEGA_PROXY_ATYP_IPV4 ? 32 : 128;
    if (prefix > bits)
        return false;
    for (unsigned i = 0; i < prefix; i++) {
        unsigned byte = i / 8, bit = 7 - i % 8;
        if (((host->ip[byte] >> bit) & 1) != ((net->ip[byte] >> bit) & 1))
            return false;
    }
    return true;
}

bool vega_proxy_noproxy_match(const char *list, const char *host)
{
    if (!list || !host || !host[0])
        return false;
    size_t hl = strlen(host);
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        host++;
        hl -= 2;
    }
    while (hl > 0 && host[hl - 1] == '.') /* "example.com." is "example.com" */
        hl--;
    vega_proxy_addr ha = {0};
    bool host_ip = vega__proxy_parse_ip(host, hl, &ha);
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        size_t n = strcspn(p, ", \t");
        if (n == 0)
            break;
        const char *e = p;
        p += n;
        if (n == 1 && e[0] == '*')
            return true;
        if (host_ip) {
            /* an address, or an address with a /prefix */
            const char *slash = memchr(e, '/', n);
            size_t al = slash ? (size_t)(slash - e) : n;
            vega_proxy_addr na = {0};
            if (!vega__proxy_parse_ip(e, al, &na))
                continue;
            unsigned prefix = na.type == VEGA_PROXY_ATYP_IPV4 ? 32 : 128;
            if (slash) {
                char *endp;
                char num[8];
                size_t nl = n - al - 1;
                if (nl == 0 || nl >= sizeof num)
                    continue;
                memcpy(num, slash + 1, nl);
                num[nl] = '\0';
                unsigned long v = strtoul(num, &endp, 10);
                if (*endp || v > prefix)
                    continue;
                prefix = (unsigned)v;
            }
            if (cidr_match(&ha, &na, prefix))
                return true;
            continue;
        }
        if (e[0] == '.') {
            e++;
            n--;
        }
        while (n > 0 && e[n - 1] == '.')
            n--;
        if (n == 0 || n > hl)
            continue;
        /* the same name, or a subdomain of it */
        if (strncasecmp(host + hl - n, e, n) == 0 && (n == hl || host[hl - n - 1] == '.'))
            return true;
    }
    return false;
}
