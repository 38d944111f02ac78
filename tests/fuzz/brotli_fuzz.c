/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the brotli decompressor (lib/compress); the body is compress_fuzz.h. */
#define KIND VEGA_COMPRESS_BROTLI
#include "compress_fuzz.h"
