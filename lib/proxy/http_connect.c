/* SPDX-License-Identifier: MIT */
/* HTTP CONNECT (RFC 9110 §9.3.6): the request, with Basic credentials (RFC 7617) in
 * Proxy-Authorization (RFC 9110 §11.7.2), and the reply head, bounded by max_reply. */
#include <stdio.h>
#include <string.h>

#include <vega/base64.h>

#include "proxy_int.h"

vega_ssize vega_proxy_basic_auth(char *out, size_t cap, const char *user, const char *password)
{
    if (!out || !user)
        return -EINVAL;
    if (!password)
        password = "";
    size_t ul = strlen(user), pl = strlen(password);
    /* RFC 7617 §2: the user-id cannot contain a colon */
    if (memchr(user, ':', ul) || ul > VEGA_PROXY_MAX_CRED || pl > VEGA_PROXY_MAX_CRED)
        return -EINVAL;
    char joined[2 * VEGA_PROXY_MAX_CRED + 2];
    memcpy(joined, user, ul);
    joined[ul] = ':';
    memcpy(joined + ul + 1, password, pl);
    size_t elen = vega_base64_encoded_len(ul + 1 + pl, VEGA_BASE64_STD);
    if (6 + elen + 1 > cap) {
        explicit_bzero(joined, sizeof joined);
        return VEGA_ERR_NOBUF;
    }
    memcpy(out, "Basic ", 6);
    vega_ssize e = vega_base64_encode(joined, ul + 1 + pl, out + 6, elen, VEGA_BASE64_STD);
    explicit_bzero(joined, sizeof joined); /* the password's copy */
    if (e < 0)
        return e;
    out[6 + (size_t)e] = '\0';
    return 6 + e;
}

/* host:port as an authority: an IPv6 literal in brackets. */
static int authority(const vega_proxy_handshake *h, char *out, size_t cap)
{
    bool v6 = h->dst.type == VEGA_PROXY_ATYP_IPV6;
    return snprintf(out, cap, "%s%s%s:%u", v6 ? "[" : "", h->host, v6 ? "]" : "",
                    (unsigned)h->dst.port);
}

vega_ssize vega__proxy_http_write(vega_proxy_handshake *h, uint8_t *out, size_t cap)
{
    char auth[VEGA_PROXY_MAX_NAME + 8];
    int al = authority(h, auth, sizeof auth);
    if (al < 0 || (size_t)al >= sizeof auth)
        return vega__proxy_fail(h, VEGA_ERR_INTERNAL);
    char cred[8 + (2 * VEGA_PROXY_MAX_CRED + 3) / 3 * 4 + 4];
    cred[0] = '\0';
    if (h->has_user && strchr(h->user, ':'))
        return vega__proxy_fail(h, -EINVAL);
    if (h->has_user && vega_proxy_basic_auth(cred, sizeof cred, h->user, h->password) < 0)
        return vega__proxy_fail(h, VEGA_ERR_INTERNAL);
    /* RFC 9112 §3.2.3: authority-form target; Host is the same authority (RFC 9110 §7.2).
     * Proxy-Connection: Keep-Alive as curl sends it, for old proxies. */
    int n = snprintf((char *)out, cap,
                     "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s%s%s%s%s%sProxy-Connection: "
                     "Keep-Alive\r\n\r\n",
                     auth, auth, cred[0] ? "Proxy-Authorization: " : "", cred,
                     cred[0] ? "\r\n" : "", h->user_agent ? "User-Agent: " : "",
                     h->user_agent ? h->user_agent : "", h->user_agent ? "\r\n" : "");
    if (n < 0)
        return vega__proxy_fail(h, VEGA_ERR_INTERNAL);
    if ((size_t)n >= cap)
        return VEGA_ERR_NOBUF; /* snprintf wrote a truncated copy: the caller retries bigger */
    h->st = PH_HTTP_REPLY;
    h->head_len = 0;
    return n;
}

size_t vega__proxy_http_want(const vega_proxy_handshake *h)
{
    /* Up to the earliest place the head can end: "\r\n\r\n" ends it, so after a suffix that
     * matches k bytes of it, 4 - k more bytes may complete it. Never past the head. */
    static const char end[] = "\r\n\r\n";
    size_t k = 0;
    for (size_t m = 3; m > 0; m--)
        if (h->head_len >= m && memcmp(h->head + h->head_len - m, end, m) == 0) {
            k = m;
            break;
        }
    /* the start of a head: the status line is at least "HTTP/1.1 200\r\n\r\n" */
    if (h->head_len == 0)
        return 16;
    return 4 - k;
}

static bool is_tchar(unsigned char c)
{
    /* RFC 9110 §5.6.2 */
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A complete head is in h->head (ending in CRLF CRLF). Returns 1 (tunnel up), 0 (an interim
 * head: read the next), or an error. */
static int judge_head(vega_proxy_handshake *h)
{
    const char *p = h->head, *end = h->head + h->head_len;
    /* status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 §4); the
     * version must be HTTP/1.x. */
    const char *eol = memchr(p, '\r', (size_t)(end - p));
    if (!eol || eol - p < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[7] < '0' || p[7] > '9' ||
        p[8] != ' ' || p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' ||
        p[11] > '9' || (eol - p > 12 && p[12] != ' '))
        return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
    int status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    const char *r = eol - p > 12 ? p + 13 : eol;
    size_t rl = (size_t)(eol - r);
    for (size_t i = 0; i < rl; i++)
        if ((unsigned char)r[i] < 0x20 && r[i] != '\t')
            return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
    h->reply.code = status;
    snprintf(h->reply.reason, sizeof h->reply.reason, "%.*s", (int)VEGA__MIN(rl, 127), r);
    for (char *c = h->reply.reason; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
            *c = '?';
    /* field lines: name ":" OWS value OWS CRLF (RFC 9112 §5); obs-fold refused */
    p = eol + 2;
    while (p < end) {
        eol = memchr(p, '\r', (size_t)(end - p));
        if (!eol || eol + 1 >= end || eol[1] != '\n')
            return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        if (eol == p) {
            if (eol + 2 != end) /* the empty line ends the head */
                return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
            break;
        }
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (!colon || colon == p)
            return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        for (const char *c = p; c < colon; c++)
            if (!is_tchar((unsigned char)*c))
                return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        const char *v = colon + 1, *ve = eol;
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        for (const char *c = v; c < ve; c++)
            if (*c == '\0' || *c == '\n')
                return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        if (h->cb.on_field &&
            h->cb.on_field(h->cb_user, p, (size_t)(colon - p), v, (size_t)(ve - v)) != 0)
            return vega__proxy_fail(h, VEGA_ERR_CALLBACK);
        p = eol + 2;
    }
    if (status < 200) {
        /* RFC 9110 §15.2: a client must be able to take interim responses before the final
         * one; 101 makes no sense to a CONNECT. */
        if (status == 101)
            return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        h->head_len = 0;
        h->reply.code = -1;
        return 0;
    }
    if (h->cb.on_reply && h->cb.on_reply(h->cb_user, &h->reply) != 0)
        return vega__proxy_fail(h, VEGA_ERR_CALLBACK);
    /* RFC 9110 §9.3.6: "Any 2xx (Successful) response indicates that the sender (and all
     * inbound proxies) will switch to tunnel mode immediately after the response header
     * section". */
    if (status >= 200 && status <= 299) {
        h->st = PH_DONE;
        return 1;
    }
    return vega__proxy_fail(h, status == 407 ? VEGA_ERR_PROXY_AUTH : VEGA_ERR_PROXY_REFUSED);
}

int vega__proxy_http_read(vega_proxy_handshake *h, const uint8_t *in, size_t len, size_t *consumed)
{
    size_t used = 0;
    while (used < len) {
        /* byte by byte up to each possible end, so nothing past the head is taken */
        size_t want = vega__proxy_http_want(h);
        size_t take = VEGA__MIN(want, len - used);
        if (h->head_len + take > h->max_reply) {
            *consumed = used;
            return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        }
        memcpy(h->head + h->head_len, in + used, take);
        size_t from = h->head_len > 3 ? h->head_len - 3 : 0;
        h->head_len += take;
        used += take;
        /* The chunk never goes past the earliest end a well-formed head can have, so an end
         * found before the chunk's end means a status line too short to be one. */
        const char *e = memmem(h->head + from, h->head_len - from, "\r\n\r\n", 4);
        if (e && (size_t)(e - h->head) + 4 != h->head_len) {
            *consumed = used;
            return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        }
        if (e) {
            int rc = judge_head(h);
            if (rc != 0) {
                *consumed = used;
                return rc;
            }
        }
    }
    *consumed = used;
    return 0;
}
