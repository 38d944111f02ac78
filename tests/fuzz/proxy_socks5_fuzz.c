/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the socks5 reply parser of lib/proxy (see proxy_fuzz.h for what is
 * checked): the input is what the proxy sends. */
#include "proxy_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    proxy_fuzz_run(VEGA_PROXY_SOCKS5H, data, size);
    if (size > 0 && (data[0] & 0x40))
        proxy_fuzz_run(VEGA_PROXY_SOCKS5, data, size);
    return 0;
}
