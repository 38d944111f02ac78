/* SPDX-License-Identifier: MIT */
/* The library's version string. */
#include <vega/version.h>

const char *vega_version(void)
{
    return VEGA_VERSION_STRING;
}
