/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the deflate decompressor (lib/compress); the body is compress_fuzz.h. */
#define KIND VEGA_COMPRESS_DEFLATE
#include "compress_fuzz.h"
