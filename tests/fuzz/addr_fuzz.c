/* SPDX-License-Identifier: MIT */
/* libFuzzer target for address parsing (lib/io/addr.c): any text as "host:port", "[v6]:port",
 * a port alone, or a unix: path; whatever parses must format and parse back to an equal
 * address. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/io.h>

#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[512];
    if (size >= sizeof text)
        size = sizeof text - 1;
    memcpy(text, data, size);
    text[size] = '\0';
    vega_addr a, b;
    if (vega_addr_parse(&a, text, size & 1 ? "127.0.0.1" : NULL) != 0)
        return 0;
    char out[VEGA_ADDR_STRLEN];
    if (vega_addr_format(&a, out, sizeof out) < 0)
        abort();
    if (vega_addr_parse(&b, out, NULL) != 0)
        abort(); /* what we print must parse */
    if (!vega_addr_equal(&a, &b))
        abort();
    return 0;
}
