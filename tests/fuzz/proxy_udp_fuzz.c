/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the other parsers of lib/proxy: the SOCKS5 UDP request header (what
 * parses writes back to the same bytes), proxy URLs (what parses has a host and a port) and
 * NO_PROXY lists (the first byte splits the input into a list and a host). */
#include <stdlib.h>
#include <string.h>

#include <vega/proxy.h>

#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t frag;
    vega_proxy_addr a;
    vega_ssize n = vega_proxy_udp_header_parse(data, size, &frag, &a);
    if (n > 0) {
        uint8_t back[300];
        if ((size_t)n > size || vega_proxy_udp_header_write(back, sizeof back, frag, &a) != n ||
            memcmp(back, data, (size_t)n) != 0)
            abort();
    } else if (n != VEGA_ERR_PROXY_HANDSHAKE) {
        abort();
    }
    if (size == 0 || size > 2048)
        return 0;
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    vega_proxy_url u;
    if (vega_proxy_url_parse(&u, s) == 0 &&
        (u.host[0] == '\0' || u.port == 0 || u.kind == VEGA_PROXY_NONE))
        abort();
    size_t cut = data[0] % size;
    s[cut] = '\0';
    (void)vega_proxy_noproxy_match(s + 1 > s + cut ? s + cut : s + 1, s + cut + 1);
    free(s);
    return 0;
}
