/* SPDX-License-Identifier: MIT */
/* The library's version. */
#ifndef VEGA_VERSION_H
#define VEGA_VERSION_H

#include <vega/export.h>

#define VEGA_VERSION_MAJOR  0
#define VEGA_VERSION_MINOR  1
#define VEGA_VERSION_PATCH  0
#define VEGA_VERSION_STRING "0.1.0"

/* The version of the library linked at run time. Since 0.1. */
VEGA_API const char *vega_version(void);

#endif
