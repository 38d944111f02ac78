/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the SOCKS5 UDP header codec of lib/io's relay mode (udp_socks.c), checked
 * against lib/proxy's (vega_proxy_udp_header_parse/_write), which it must agree with: the same
 * bytes accepted (lib/io refuses fragments, FRAG != 0, which it never reassembles), the same
 * length, address and port; and an accepted address written back by lib/io gives the same
 * bytes (an IPv4-mapped IPv6 address: its IPv4 form). The input is a datagram as a relay would send
 * it. */
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include <vega/proxy.h>

#include "fuzz_target.h"
#include "io_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vega_addr a;
    bool is_name = false;
    uint16_t port = 0;
    int hl = vega__udp_socks_header_parse(data, size, &a, &is_name, &port);
    uint8_t frag = 0;
    vega_proxy_addr pa;
    vega_ssize pn = vega_proxy_udp_header_parse(data, size, &frag, &pa);
    if (hl >= 0) {
        if ((size_t)hl > size || pn != hl || frag != 0 || pa.port != port)
            abort();
        if (is_name != (pa.type == VEGA_PROXY_ATYP_NAME))
            abort();
        if (!is_name) {
            uint8_t back[32];
            int wl = vega__udp_socks_header_for(&a, back);
            if (vega_addr_port(&a) != port)
                abort();
            if (data[3] == 4 && IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)(data + 4))) {
                /* an IPv4-mapped IPv6 address is written back as the IPv4 address it is
                 * (ATYP 1): relays need not know the mapped form */
                if (wl != 10 || back[3] != 1 || memcmp(back + 4, data + 16, 4) != 0 ||
                    memcmp(back + 8, data + 20, 2) != 0)
                    abort();
            } else if (wl != hl || memcmp(back, data, (size_t)hl) != 0) {
                abort();
            }
        }
    } else if (pn > 0 && frag == 0 && pa.type != VEGA_PROXY_ATYP_NAME) {
        abort(); /* lib/proxy took an address header lib/io refused */
    }
    return 0;
}
