/* SPDX-License-Identifier: MIT */
/* VEGA_API marks the symbols the shared library exports; everything else is hidden. */
#ifndef VEGA_EXPORT_H
#define VEGA_EXPORT_H

#if defined(VEGA_BUILDING) && defined(__GNUC__)
#define VEGA_API __attribute__((visibility("default")))
#else
#define VEGA_API
#endif

#endif
