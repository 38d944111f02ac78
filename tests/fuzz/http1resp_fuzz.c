/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the HTTP/1.1 response parser (lib/http1/parser.c): the request target's
 * driver and checks, with responses (1xx, HEAD, 204/304, close-delimited bodies, 101). */
#define HTTP1_FUZZ_KIND VEGA_HTTP1_RESPONSE
#include "http1req_fuzz.c"
