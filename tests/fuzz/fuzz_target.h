/* SPDX-License-Identifier: MIT */
/* The entry point every fuzz target defines (libFuzzer's, or tests/fuzz/replay_main.c's). */
#ifndef VEGA_FUZZ_TARGET_H
#define VEGA_FUZZ_TARGET_H

#include "fuzz_target.h"
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
