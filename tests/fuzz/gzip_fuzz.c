/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the gzip decompressor (lib/compress); the body is compress_fuzz.h. */
#define KIND VEGA_COMPRESS_GZIP
#include "compress_fuzz.h"
