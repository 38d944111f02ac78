/* SPDX-License-Identifier: MIT */
/* Range field parsing and resolution, Content-Range formatting (RFC 9110 §14.1-14.4). */
#include <stdio.h>
#include <strings.h>

#include <vega/http.h>

static void skip_ows(const char *s, size_t len, size_t *i)
{
    while (*i < len && (s[*i] == ' ' || s[*i] == '\t'))
        (*i)++;
}

/* 1*DIGIT, saturating at UINT64_MAX. */
static bool number(const char *s, size_t len, size_t *i, uint64_t *v)
{
    size_t start = *i;
    *v = 0;
    for (; *i < len && s[*i] >= '0' && s[*i] <= '9'; (*i)++) {
        unsigned d = (unsigned)(s[*i] - '0');
        *v = *v > (UINT64_MAX - d) / 10 ? UINT64_MAX : *v * 10 + d;
    }
    return *i > start;
}

int vega_http_range_parse(const char *s, size_t len, uint64_t length, vega_http_range *out,
                          size_t max, size_t *count)
{
    size_t i = 0, n = 0, specs = 0;
    while (i < len && s[i] != '=')
        i++;
    if (i == len || !vega_http_token_is_valid(s, i))
        return VEGA_ERR_PROTO;
    if (i != 5 || strncasecmp(s, "bytes", 5) != 0)
        return -ENOTSUP;
    i++;
    bool need_elem = true; /* 1#: at least one non-empty element */
    for (;;) {
        skip_ows(s, len, &i);
        if (i < len && s[i] == ',') { /* empty element */
            i++;
            continue;
        }
        if (i == len)
            break;
        uint64_t a = 0, b = 0;
        bool suffix = s[i] == '-', open = false;
        if (suffix) {
            i++;
            if (!number(s, len, &i, &b))
                return VEGA_ERR_PROTO;
        } else {
            if (!number(s, len, &i, &a) || i == len || s[i] != '-')
                return VEGA_ERR_PROTO;
            i++;
            open = !number(s, len, &i, &b);
            if (!open && b < a)
                return VEGA_ERR_PROTO;
        }
        skip_ows(s, len, &i);
        if (i < len && s[i] != ',')
            return VEGA_ERR_PROTO;
        need_elem = false;
        if (++specs > max)
            return -E2BIG;
        if (suffix) {
            if (b == 0 || length == 0)
                continue;
            a = b >= length ? 0 : length - b;
            b = length - 1;
        } else {
            if (a >= length)
                continue;
            if (open || b >= length)
                b = length - 1;
        }
        out[n++] = (vega_http_range){a, b};
    }
    if (need_elem)
        return VEGA_ERR_PROTO;
    *count = n;
    return n ? 0 : -ERANGE;
}

vega_ssize vega_http_content_range_format(const vega_http_range *r, uint64_t length, char *out,
                                          size_t cap)
{
    int n;
    if (r)
        n = snprintf(out, cap, "bytes %llu-%llu/%llu", (unsigned long long)r->first,
                     (unsigned long long)r->last, (unsigned long long)length);
    else
        n = snprintf(out, cap, "bytes */%llu", (unsigned long long)length);
    if (n < 0 || (size_t)n >= cap)
        return VEGA_ERR_NOBUF;
    return n;
}
