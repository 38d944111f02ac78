/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the resolv.conf and hosts parsers (lib/io/dns_conf.c): any text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns_int.h"
#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vega__dns_conf c;
    vega__dns_conf_defaults(&c);
    vega__dns_conf_parse(&c, (const char *)data, size);
    struct vega__dns_hosts h;
    memset(&h, 0, sizeof h);
    (void)vega__dns_hosts_parse(&h, (const char *)data, size);
    vega_addr out[8];
    (void)vega__dns_hosts_find(&h, "localhost", 0, out, 8);
    vega__dns_hosts_fini(&h);
    return 0;
}
