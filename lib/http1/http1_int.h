/* SPDX-License-Identifier: MIT */
/* Character classes shared by the HTTP/1.1 parser and serializer (RFC 9110 §5.6.2, §5.5). */
#ifndef VEGA_HTTP1_INT_H
#define VEGA_HTTP1_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" /
 * "~" / DIGIT / ALPHA */
static inline bool vega__http1_is_tchar(uint8_t c)
{
    if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* field-vchar / SP / HTAB: no CTL other than HTAB, no DEL. obs-text (0x80-0xFF) allowed. */
static inline bool vega__http1_is_field_char(uint8_t c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static inline bool vega__http1_ieq(const char *a, size_t n, const char *lit)
{
    size_t i = 0;
    for (; i < n && lit[i]; i++)
        if ((a[i] | 0x20) != lit[i])
            return false;
    return i == n && lit[i] == '\0';
}

#endif
