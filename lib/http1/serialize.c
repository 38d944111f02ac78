/* SPDX-License-Identifier: MIT */
/* HTTP/1.1 serializer (RFC 9112 §3, §4, §5, §7.1): message heads and chunked framing into
 * caller buffers, refusing anything that could inject a line break or a bad token. */
#include <vega/http1.h>

#include <stdio.h>

#include "base.h"
#include "http1_int.h"

typedef struct out {
    uint8_t *p;
    size_t cap, len;
    bool full;
} out;

static void put(out *o, const void *s, size_t n)
{
    if (o->full || !vega__fits(o->len, n, o->cap)) {
        o->full = true;
        return;
    }
    if (n)
        memcpy(o->p + o->len, s, n);
    o->len += n;
    VEGA_ASSERT(o->len <= o->cap);
}

static bool is_token(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!vega__http1_is_tchar((uint8_t)s[i]))
            return false;
    return true;
}

/* field-value without leading / trailing whitespace and without CR, LF, NUL or other CTLs. */
static bool is_value(const char *s, size_t n)
{
    if (n && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!vega__http1_is_field_char((uint8_t)s[i]))
            return false;
    return true;
}

static int put_fields(out *o, const vega_http1_field *f, size_t n)
{
    if (n && !f)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!f[i].name || !is_token(f[i].name, f[i].name_len) || (f[i].value_len && !f[i].value) ||
            !is_value(f[i].value, f[i].value_len))
            return -EINVAL;
        put(o, f[i].name, f[i].name_len);
        put(o, ": ", 2);
        put(o, f[i].value, f[i].value_len);
        put(o, "\r\n", 2);
    }
    put(o, "\r\n", 2);
    return 0;
}

static vega_ssize finish(out *o, int rc)
{
    if (rc)
        return rc;
    return o->full ? VEGA_ERR_NOBUF : (vega_ssize)o->len;
}

vega_ssize vega_http1_write_request_head(uint8_t *buf, size_t cap, const char *method,
                                         const char *target, int version,
                                         const vega_http1_field *fields, size_t n)
{
    if (!method || !target || (version != 10 && version != 11) ||
        !is_token(method, strlen(method)) || !*target)
        return -EINVAL;
    for (const char *t = target; *t; t++)
        if ((uint8_t)*t <= 0x20 || (uint8_t)*t >= 0x7f)
            return -EINVAL;
    out o = {buf, cap, 0, false};
    put(&o, method, strlen(method));
    put(&o, " ", 1);
    put(&o, target, strlen(target));
    put(&o, version == 10 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n", 11);
    return finish(&o, put_fields(&o, fields, n));
}

vega_ssize vega_http1_write_response_head(uint8_t *buf, size_t cap, int version, int status,
                                          const char *reason, const vega_http1_field *fields,
                                          size_t n)
{
    if ((version != 10 && version != 11) || status < 100 || status > 999)
        return -EINVAL;
    size_t rl = reason ? strlen(reason) : 0;
    for (size_t i = 0; i < rl; i++)
        if (!vega__http1_is_field_char((uint8_t)reason[i]))
            return -EINVAL;
    char code[6];
    snprintf(code, sizeof code, " %03d ", status);
    out o = {buf, cap, 0, false};
    put(&o, version == 10 ? "HTTP/1.0" : "HTTP/1.1", 8);
    put(&o, code, 5);
    put(&o, reason, rl);
    put(&o, "\r\n", 2);
    return finish(&o, put_fields(&o, fields, n));
}

vega_ssize vega_http1_write_chunk_header(uint8_t *buf, size_t cap, uint64_t size)
{
    if (size == 0)
        return -EINVAL;
    char tmp[20];
    int k = snprintf(tmp, sizeof tmp, "%llx\r\n", (unsigned long long)size);
    out o = {buf, cap, 0, false};
    put(&o, tmp, (size_t)k);
    return finish(&o, 0);
}

vega_ssize vega_http1_write_chunk_end(uint8_t *buf, size_t cap)
{
    out o = {buf, cap, 0, false};
    put(&o, "\r\n", 2);
    return finish(&o, 0);
}

vega_ssize vega_http1_write_last_chunk(uint8_t *buf, size_t cap, const vega_http1_field *trailers,
                                       size_t n)
{
    out o = {buf, cap, 0, false};
    put(&o, "0\r\n", 3);
    return finish(&o, put_fields(&o, trailers, n));
}
