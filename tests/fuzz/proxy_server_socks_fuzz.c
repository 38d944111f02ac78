/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the SOCKS server parsers of lib/proxy: the input is what a client sends.
 * Runs the greeting, RFC 1929 and request parsers as a server would (the first byte picks
 * SOCKS4 or SOCKS5), and checks what they guarantee: a complete message is never longer than
 * the input nor its bound, every shorter prefix of it is incomplete, and the strings they fill
 * are NUL-terminated within their arrays. */
#include <stdlib.h>
#include <string.h>

#include <vega/proxy.h>

#include "fuzz_target.h"

/* A parser result for in[0..len): checks it against every prefix. */
typedef vega_ssize (*parse_fn)(const uint8_t *in, size_t len, void *out);

static vega_ssize greeting(const uint8_t *in, size_t len, void *out)
{
    return vega_proxy_socks5_greeting_parse(in, len, out);
}
static vega_ssize auth(const uint8_t *in, size_t len, void *out)
{
    return vega_proxy_socks5_auth_parse(in, len, out);
}
static vega_ssize req5(const uint8_t *in, size_t len, void *out)
{
    return vega_proxy_socks5_request_parse(in, len, out);
}
static vega_ssize req4(const uint8_t *in, size_t len, void *out)
{
    return vega_proxy_socks4_request_parse(in, len, out);
}

static vega_ssize step(parse_fn fn, const uint8_t *in, size_t len, size_t bound, void *out)
{
    vega_ssize n = fn(in, len, out);
    if (n > 0) {
        if ((size_t)n > len || (size_t)n > bound)
            abort();
        union {
            uint32_t m;
            vega_proxy_credentials c;
            vega_proxy_server_request r;
        } tmp;
        /* a prefix of a complete message is incomplete (few checks for long ones) */
        for (size_t k = 0; k < (size_t)n; k += 1 + k / 16)
            if (fn(in, k, &tmp) != 0)
                abort();
    } else if (n == 0 && len >= bound) {
        abort(); /* the bound reached without an answer */
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] == 4) {
        vega_proxy_server_request r;
        vega_ssize n = step(req4, data, size, VEGA_PROXY_SOCKS4_MAX_REQUEST, &r);
        if (n > 0 && (!memchr(r.userid, 0, sizeof r.userid) ||
                      (r.dst.type == VEGA_PROXY_ATYP_NAME && !r.dst.name[0])))
            abort();
        return 0;
    }
    uint32_t offered;
    vega_ssize n = step(greeting, data, size, VEGA_PROXY_SOCKS5_MAX_GREETING, &offered);
    if (n <= 0)
        return 0;
    data += n;
    size -= (size_t)n;
    if (offered & (1u << VEGA_PROXY_METHOD_USERPASS)) {
        vega_proxy_credentials c;
        n = step(auth, data, size, VEGA_PROXY_SOCKS5_MAX_AUTH, &c);
        if (n <= 0)
            return 0;
        if (!memchr(c.user, 0, sizeof c.user) || !memchr(c.password, 0, sizeof c.password) ||
            !c.user[0])
            abort();
        data += n;
        size -= (size_t)n;
    }
    vega_proxy_server_request r;
    n = step(req5, data, size, VEGA_PROXY_SOCKS5_MAX_REQUEST, &r);
    if (n > 0) {
        if (r.dst.type == VEGA_PROXY_ATYP_NAME && !r.dst.name[0])
            abort();
        uint8_t out[VEGA_PROXY_SOCKS5_MAX_REQUEST];
        /* the address goes back out as a reply of the same length */
        if (vega_proxy_socks5_reply_write(out, sizeof out, 0, &r.dst) != n)
            abort();
    }
    return 0;
}
