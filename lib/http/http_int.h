/* SPDX-License-Identifier: MIT */
/* Internal helpers shared by the files of the http module. */
#ifndef VEGA_HTTP_INT_H
#define VEGA_HTTP_INT_H

/* The value of a hex digit, or -1. */
int vega__http_hexval(unsigned char c);

#endif
