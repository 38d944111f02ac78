/* SPDX-License-Identifier: MIT */
/* The server side of the SOCKS handshakes: SOCKS5 greeting, request and reply (RFC 1928 §3-§6),
 * the username/password subnegotiation (RFC 1929 §2), SOCKS4 and SOCKS4a requests and replies.
 * Stateless parsers over the caller's buffer, bounded by the messages' own length fields. */
#include <errno.h>
#include <string.h>

#include "proxy_int.h"

vega_ssize vega_proxy_socks5_greeting_parse(const uint8_t *in, size_t len, uint32_t *offered)
{
    if ((!in && len) || !offered)
        return -EINVAL;
    *offered = 0;
    if (len < 1)
        return 0;
    /* RFC 1928 §3: VER is X'05' */
    if (in[0] != 5)
        return VEGA_ERR_PROXY_HANDSHAKE;
    if (len < 2)
        return 0;
    size_t n = in[1];
    if (n == 0)
        return VEGA_ERR_PROXY_HANDSHAKE;
    if (len < 2 + n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (in[2 + i] < 32)
            *offered |= (uint32_t)1 << in[2 + i];
    return (vega_ssize)(2 + n);
}

/* A length-prefixed field of RFC 1929 into dst (NUL-terminated). Returns false on a NUL byte. */
static bool copy_field(char *dst, const uint8_t *src, size_t n)
{
    if (memchr(src, '\0', n))
        return false;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return true;
}

vega_ssize vega_proxy_socks5_auth_parse(const uint8_t *in, size_t len, vega_proxy_credentials *cred)
{
    if ((!in && len) || !cred)
        return -EINVAL;
    if (len < 1)
        return 0;
    /* RFC 1929 §2: "The VER field contains the current version of the subnegotiation, which is
     * X'01'" */
    if (in[0] != 1)
        return VEGA_ERR_PROXY_HANDSHAKE;
    if (len < 2)
        return 0;
    size_t ul = in[1];
    if (ul == 0)
        return VEGA_ERR_PROXY_HANDSHAKE;
    if (len < 2 + ul + 1)
        return 0;
    size_t pl = in[2 + ul];
    if (len < 3 + ul + pl)
        return 0;
    if (!copy_field(cred->user, in + 2, ul) || !copy_field(cred->password, in + 3 + ul, pl))
        return VEGA_ERR_PROXY_HANDSHAKE;
    return (vega_ssize)(3 + ul + pl);
}

vega_ssize vega_proxy_socks5_request_parse(const uint8_t *in, size_t len,
                                           vega_proxy_server_request *req)
{
    if ((!in && len) || !req)
        return -EINVAL;
    memset(req, 0, sizeof *req);
    req->version = 5;
    if (len < 1)
        return 0;
    if (in[0] != 5)
        return VEGA_ERR_PROXY_HANDSHAKE;
    if (len < 4)
        return 0;
    /* RFC 1928 §4: RSV is X'00' */
    if (in[2] != 0)
        return VEGA_ERR_PROXY_HANDSHAKE;
    req->command = in[1];
    size_t alen;
    switch (in[3]) {
    case VEGA_PROXY_ATYP_IPV4:
        alen = 4;
        break;
    case VEGA_PROXY_ATYP_IPV6:
        alen = 16;
        break;
    case VEGA_PROXY_ATYP_NAME:
        if (len < 5)
            return 0;
        alen = 1 + (size_t)in[4];
        if (alen == 1)
            return VEGA_ERR_PROXY_HANDSHAKE;
        break;
    default:
        return VEGA_ERR_PROXY_UNSUPPORTED; /* §6: X'08' Address type not supported */
    }
    if (len < 4 + alen + 2)
        return 0;
    req->dst.type = (vega_proxy_atyp)in[3];
    if (in[3] == VEGA_PROXY_ATYP_NAME) {
        if (!copy_field(req->dst.name, in + 5, alen - 1))
            return VEGA_ERR_PROXY_HANDSHAKE;
    } else {
        memcpy(req->dst.ip, in + 4, alen);
    }
    req->dst.port = (uint16_t)(in[4 + alen] << 8 | in[5 + alen]);
    return (vega_ssize)(4 + alen + 2);
}

/* A NUL-terminated string starting at in[off] of at most max bytes: its length, or -1 when
 * incomplete, -2 when longer than max. */
static long nul_string(const uint8_t *in, size_t len, size_t off, size_t max)
{
    size_t avail = len > off ? len - off : 0;
    size_t look = avail < max + 1 ? avail : max + 1;
    const uint8_t *z = look ? memchr(in + off, '\0', look) : NULL;
    if (z)
        return (long)(z - (in + off));
    return avail > max ? -2 : -1;
}

vega_ssize vega_proxy_socks4_request_parse(const uint8_t *in, size_t len,
                                           vega_proxy_server_request *req)
{
    if ((!in && len) || !req)
        return -EINVAL;
    memset(req, 0, sizeof *req);
    req->version = 4;
    if (len < 1)
        return 0;
    if (in[0] != 4)
        return VEGA_ERR_PROXY_HANDSHAKE;
    if (len < 8)
        return 0;
    req->command = in[1];
    req->dst.port = (uint16_t)(in[2] << 8 | in[3]);
    long ul = nul_string(in, len, 8, VEGA_PROXY_MAX_CRED);
    if (ul == -2)
        return VEGA_ERR_PROXY_HANDSHAKE;
    if (ul < 0)
        return 0;
    memcpy(req->userid, in + 8, (size_t)ul);
    req->userid[ul] = '\0';
    size_t end = 8 + (size_t)ul + 1;
    /* SOCKS 4A: "set the first three bytes of DSTIP to NULL and the last byte to a non-zero
     * value", then the domain name, terminated with NULL, after the USERID's NULL. */
    if (in[4] == 0 && in[5] == 0 && in[6] == 0 && in[7] != 0) {
        long hl = nul_string(in, len, end, VEGA_PROXY_MAX_NAME);
        if (hl == -2 || hl == 0)
            return VEGA_ERR_PROXY_HANDSHAKE;
        if (hl < 0)
            return 0;
        req->dst.type = VEGA_PROXY_ATYP_NAME;
        memcpy(req->dst.name, in + end, (size_t)hl);
        req->dst.name[hl] = '\0';
        end += (size_t)hl + 1;
    } else {
        req->dst.type = VEGA_PROXY_ATYP_IPV4;
        memcpy(req->dst.ip, in + 4, 4);
    }
    return (vega_ssize)end;
}

vega_ssize vega_proxy_socks5_method_write(uint8_t *out, size_t cap, uint8_t method)
{
    if (!out && cap)
        return -EINVAL;
    if (cap < 2)
        return VEGA_ERR_NOBUF;
    out[0] = 5;
    out[1] = method;
    return 2;
}

vega_ssize vega_proxy_socks5_auth_reply_write(uint8_t *out, size_t cap, uint8_t status)
{
    if (!out && cap)
        return -EINVAL;
    if (cap < 2)
        return VEGA_ERR_NOBUF;
    out[0] = 1;
    out[1] = status;
    return 2;
}

vega_ssize vega_proxy_socks5_reply_write(uint8_t *out, size_t cap, uint8_t rep,
                                         const vega_proxy_addr *bnd)
{
    static const vega_proxy_addr zero = {.type = VEGA_PROXY_ATYP_IPV4};
    if (!out && cap)
        return -EINVAL;
    if (!bnd)
        bnd = &zero;
    size_t al = vega__proxy_addr_len(bnd);
    if (!al)
        return -EINVAL;
    /* RFC 1928 §6: VER REP RSV ATYP BND.ADDR BND.PORT */
    size_t n = 3 + al;
    if (n > cap)
        return VEGA_ERR_NOBUF;
    out[0] = 5;
    out[1] = rep;
    out[2] = 0;
    vega__proxy_addr_put(out + 3, bnd);
    return (vega_ssize)n;
}

vega_ssize vega_proxy_socks4_reply_write(uint8_t *out, size_t cap, uint8_t cd,
                                         const vega_proxy_addr *bnd)
{
    if (!out && cap)
        return -EINVAL;
    if (cap < 8)
        return VEGA_ERR_NOBUF;
    memset(out, 0, 8);
    /* "VN is the version of the reply code and should be 0" */
    out[1] = cd;
    if (bnd && bnd->type == VEGA_PROXY_ATYP_IPV4) {
        out[2] = (uint8_t)(bnd->port >> 8);
        out[3] = (uint8_t)bnd->port;
        memcpy(out + 4, bnd->ip, 4);
    }
    return 8;
}
