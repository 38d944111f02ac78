/* SPDX-License-Identifier: MIT */
/* Option values with units: durations (ms/s/m/h), byte sizes (K/M/G), counts (k/M/G). */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

/* Parses "123" or "1.25" into a value scaled by 10^9 (fixed point), and points *end past it. */
static int parse_fixed(const char *s, const char **end, unsigned __int128 *out)
{
    unsigned __int128 ip = 0, frac = 0, scale = 1000000000;
    const char *p = s;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        ip = ip * 10 + (unsigned)(*p++ - '0');
        if (ip > UINT64_MAX)
            return -EINVAL;
        digits++;
    }
    if (*p == '.') {
        p++;
        unsigned __int128 div = 1000000000;
        while (*p >= '0' && *p <= '9') {
            div /= 10;
            frac += (unsigned)(*p++ - '0') * div;
            digits++;
        }
    }
    if (digits == 0)
        return -EINVAL;
    *end = p;
    *out = ip * scale + frac;
    return 0;
}

static int scale_out(unsigned __int128 fixed, uint64_t mult, uint64_t *out)
{
    unsigned __int128 v = fixed * mult / 1000000000u;
    if (v > UINT64_MAX)
        return -EINVAL;
    *out = (uint64_t)v;
    return 0;
}

int cli_parse_duration(const char *s, uint64_t default_unit_ns, uint64_t *out_ns)
{
    static const struct {
        const char *unit;
        uint64_t ns;
    } units[] = {
        {"ns", 1},
        {"us", VEGA_NS_PER_US},
        {"ms", VEGA_NS_PER_MS},
        {"s", VEGA_NS_PER_S},
        {"m", 60 * VEGA_NS_PER_S},
        {"h", 3600 * VEGA_NS_PER_S},
    };
    const char *end;
    unsigned __int128 v;
    if (!s || parse_fixed(s, &end, &v) < 0)
        return -EINVAL;
    if (*end == '\0')
        return scale_out(v, default_unit_ns, out_ns);
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(end, units[i].unit) == 0)
            return scale_out(v, units[i].ns, out_ns);
    return -EINVAL;
}

int cli_parse_size(const char *s, uint64_t *out)
{
    const char *end;
    unsigned __int128 v;
    if (!s || parse_fixed(s, &end, &v) < 0)
        return -EINVAL;
    uint64_t mult = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mult = 1ull << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1ull << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1ull << 30;
        end++;
        break;
    case 't':
    case 'T':
        mult = 1ull << 40;
        end++;
        break;
    default:
        break;
    }
    if (*end && strcasecmp(end, "b") != 0 && (mult == 1 || strcasecmp(end, "ib") != 0))
        return -EINVAL;
    return scale_out(v, mult, out);
}

int cli_parse_count(const char *s, uint64_t *out)
{
    const char *end;
    unsigned __int128 v;
    if (!s || parse_fixed(s, &end, &v) < 0)
        return -EINVAL;
    uint64_t mult = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mult = 1000;
        end++;
        break;
    case 'M':
        mult = 1000000;
        end++;
        break;
    case 'G':
        mult = 1000000000;
        end++;
        break;
    default:
        break;
    }
    if (*end)
        return -EINVAL;
    return scale_out(v, mult, out);
}

int cli_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!s || !*s)
        return -EINVAL;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    if (v < min || v > max)
        return -ERANGE;
    *out = v;
    return 0;
}
