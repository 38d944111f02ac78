/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the zstd decompressor (lib/compress); the body is compress_fuzz.h. */
#define KIND VEGA_COMPRESS_ZSTD
#include "compress_fuzz.h"
