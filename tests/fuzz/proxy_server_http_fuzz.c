/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the HTTP proxy request head parser of lib/proxy: the input is what a
 * client sends (its first byte picks the bound on the head). Checks what the parser
 * guarantees: a head is never longer than the input or the bound, the fields it fills are
 * terminated and within the head, and a forwarded head fits its buffer or says NOBUF. */
#include <stdlib.h>
#include <string.h>

#include <vega/proxy.h>

#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t max_head = (data[0] & 1) ? 64 + data[0] : 0;
    size_t bound = max_head ? max_head : VEGA_PROXY_HTTP_DEFAULT_MAX_HEAD;
    const char *in = (const char *)data + 1;
    size_t len = size - 1;
    vega_proxy_http_request r;
    vega_ssize n = vega_proxy_http_request_parse(in, len, max_head, &r);
    if (n == 0 && len >= bound)
        abort();
    if (n <= 0)
        return 0;
    if ((size_t)n > len || (size_t)n > bound || (size_t)n != r.head_len)
        abort();
    if (memcmp(in + n - 4, "\r\n\r\n", 4) != 0 || !r.host[0] || r.port == 0 ||
        !memchr(r.method, 0, sizeof r.method) || !memchr(r.host, 0, sizeof r.host))
        abort();
    if (r.auth_basic && (!memchr(r.cred.user, 0, sizeof r.cred.user) ||
                         !memchr(r.cred.password, 0, sizeof r.cred.password)))
        abort();
    if (!r.connect) {
        if (r.path_off + r.path_len > (size_t)n)
            abort();
        size_t cap = (size_t)n + 600;
        char *out = malloc(cap);
        vega_ssize w = vega_proxy_http_forward_head_write(out, cap, in, &r);
        if (w < 0 && w != VEGA_ERR_NOBUF)
            abort();
        if (w > 0) {
            if ((size_t)w > cap || memcmp(out + w - 4, "\r\n\r\n", 4) != 0)
                abort();
            /* what we send an origin parses as a head again (origin-form: not a proxy request) */
            vega_proxy_http_request again;
            if (vega_proxy_http_request_parse(out, (size_t)w, (size_t)w, &again) !=
                VEGA_ERR_PROXY_HANDSHAKE)
                abort();
        }
        free(out);
    }
    return 0;
}
