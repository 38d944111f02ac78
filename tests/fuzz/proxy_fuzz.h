/* SPDX-License-Identifier: MIT */
/* Shared driver of the proxy reply fuzz targets: runs one client handshake of a kind against
 * the input as the proxy's bytes, fed in pieces no larger than the core wants (the first input
 * byte picks options and the split), and checks what the core guarantees: it never takes more
 * than it was given, never a byte past the reply, a tunnel is only up on a success code, and
 * errors are sticky. */
#ifndef VEGA_PROXY_FUZZ_H
#define VEGA_PROXY_FUZZ_H

#include <stdlib.h>
#include <string.h>

#include <vega/proxy.h>

#include "fuzz_target.h"

static int fuzz_on_field(void *u, const char *n, size_t nl, const char *v, size_t vl)
{
    (void)u;
    /* spans borrow the input: touch every byte so ASan sees a bad one */
    volatile char x = 0;
    for (size_t i = 0; i < nl; i++)
        x ^= n[i];
    for (size_t i = 0; i < vl; i++)
        x ^= v[i];
    (void)x;
    return 0;
}

static void proxy_fuzz_run(vega_proxy_kind kind, const uint8_t *data, size_t size)
{
    if (size == 0)
        return;
    uint8_t flags = data[0];
    data++;
    size--;
    vega_proxy_handshake_opts o;
    vega_proxy_handshake_opts_init(&o);
    o.kind = kind;
    o.host = kind == VEGA_PROXY_SOCKS4 ? "192.0.2.1" : (flags & 1) ? "example.com" : "::1";
    if (kind == VEGA_PROXY_SOCKS4A && !(flags & 1))
        o.host = "10.0.0.1";
    o.port = 443;
    if (flags & 2) {
        o.user = "user";
        o.password = "pass";
    }
    if ((flags & 4) && (kind == VEGA_PROXY_SOCKS5 || kind == VEGA_PROXY_SOCKS5H))
        o.command = VEGA_PROXY_CMD_UDP_ASSOCIATE;
    o.max_reply = (flags & 8) ? 64 : 0;
    vega_proxy_callbacks cb = {.on_field = fuzz_on_field};
    vega_proxy_handshake *h = NULL;
    if (vega_proxy_handshake_new(&h, &cb, &o, NULL, NULL) != 0)
        abort();
    size_t chunk = (size_t)(flags >> 4) + 1, off = 0;
    int rc = 0;
    uint8_t out[2048];
    while (rc == 0) {
        vega_ssize w = vega_proxy_handshake_write(h, out, sizeof out);
        if (w < 0)
            abort(); /* nothing failed yet, and the buffer is big enough */
        if (w > 0)
            continue;
        size_t want = vega_proxy_handshake_want(h);
        if (want == 0)
            abort(); /* neither done nor writing: it must be waiting */
        if (off == size)
            break;
        size_t take = want < chunk ? want : chunk;
        if (take > size - off)
            take = size - off;
        /* sometimes more than it wants: it must take no more than the reply */
        if (flags & 0x80)
            take = size - off;
        size_t used = 0;
        rc = vega_proxy_handshake_read(h, data + off, take, &used);
        if (used > take)
            abort();
        off += used;
        if (rc == 0 && used != take && vega_proxy_handshake_want(h) != 0)
            abort(); /* it stops short only where a message of ours must go first */
    }
    const vega_proxy_reply *r = vega_proxy_handshake_reply(h);
    if (rc == 1) {
        if (!vega_proxy_handshake_is_done(h))
            abort();
        bool http = kind == VEGA_PROXY_HTTP || kind == VEGA_PROXY_HTTPS;
        bool s4 = kind == VEGA_PROXY_SOCKS4 || kind == VEGA_PROXY_SOCKS4A;
        if (http ? (r->code < 200 || r->code > 299) : s4 ? r->code != 90 : r->code != 0)
            abort();
        size_t used = 9;
        if (vega_proxy_handshake_want(h) != 0 ||
            vega_proxy_handshake_read(h, (const uint8_t *)"x", 1, &used) != -EINVAL || used)
            abort();
    } else if (rc < 0) {
        size_t used;
        if (vega_proxy_handshake_read(h, (const uint8_t *)"x", 1, &used) != rc ||
            vega_proxy_handshake_write(h, out, sizeof out) != rc)
            abort(); /* sticky */
    }
    if (memchr(r->reason, '\0', sizeof r->reason) == NULL)
        abort();
    vega_proxy_handshake_free(h);
}

#endif
