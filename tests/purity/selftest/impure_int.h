/* SPDX-License-Identifier: MIT */
/* The purity checker's own test: a core header that includes the runtime's internal header
 * (only scanned by purity.selftest.includes, never compiled). */
#include "rt_int.h"
