/* SPDX-License-Identifier: MIT */
/* An ordered header-field list in caller storage, with token and field-value validation
 * (RFC 9110 §5.1, §5.3, §5.5, §5.6.2). */
#include <string.h>
#include <strings.h>

#include <vega/http.h>

#include "base.h"

bool vega_http_str_eq(vega_http_str s, const char *c)
{
    size_t n = strlen(c);
    return s.len == n && (n == 0 || memcmp(s.ptr, c, n) == 0);
}

bool vega_http_str_eq_nocase(vega_http_str s, const char *c)
{
    size_t n = strlen(c);
    return s.len == n && (n == 0 || strncasecmp(s.ptr, c, n) == 0);
}

bool vega_http_str_has_prefix(vega_http_str s, const char *prefix)
{
    size_t n = strlen(prefix);
    return s.len >= n && (n == 0 || memcmp(s.ptr, prefix, n) == 0);
}

static bool is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

bool vega_http_token_is_valid(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_tchar((unsigned char)s[i]))
            return false;
    return true;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t';
}

bool vega_http_field_value_is_valid(const char *s, size_t len)
{
    if (len > 0 && (is_ws(s[0]) || is_ws(s[len - 1])))
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return false;
    }
    return true;
}

void vega_http_fields_init(vega_http_fields *f, vega_http_field *storage, size_t cap,
                           size_t max_size)
{
    f->items = storage;
    f->count = 0;
    f->cap = cap;
    f->size = 0;
    f->max_size = max_size;
}

int vega_http_fields_add(vega_http_fields *f, const char *name, size_t name_len, const char *value,
                         size_t value_len)
{
    while (value_len > 0 && is_ws(value[0])) {
        value++;
        value_len--;
    }
    while (value_len > 0 && is_ws(value[value_len - 1]))
        value_len--;
    if (!vega_http_token_is_valid(name, name_len) ||
        !vega_http_field_value_is_valid(value, value_len))
        return VEGA_ERR_PROTO;
    if (f->count >= f->cap)
        return -E2BIG;
    size_t add = name_len + value_len;
    if (f->max_size && (add > f->max_size || f->size > f->max_size - add))
        return -EMSGSIZE;
    f->items[f->count++] = (vega_http_field){{name, name_len}, {value_len ? value : "", value_len}};
    f->size += add;
    return 0;
}

static bool name_eq(const vega_http_field *x, const char *name, size_t len)
{
    return x->name.len == len && strncasecmp(x->name.ptr, name, len) == 0;
}

vega_ssize vega_http_fields_find(const vega_http_fields *f, const char *name, size_t name_len,
                                 size_t start)
{
    for (size_t i = start; i < f->count; i++)
        if (name_eq(&f->items[i], name, name_len))
            return (vega_ssize)i;
    return -ENOENT;
}

const vega_http_field *vega_http_fields_get(const vega_http_fields *f, const char *name,
                                            size_t name_len)
{
    vega_ssize i = vega_http_fields_find(f, name, name_len, 0);
    return i < 0 ? NULL : &f->items[i];
}

vega_ssize vega_http_fields_get_combined(const vega_http_fields *f, const char *name,
                                         size_t name_len, char *out, size_t cap)
{
    size_t n = 0;
    bool found = false;
    for (size_t i = 0; i < f->count; i++) {
        const vega_http_field *x = &f->items[i];
        if (!name_eq(x, name, name_len))
            continue;
        size_t need = x->value.len + (found ? 2 : 0);
        if (need >= vega__room(n, cap)) /* keep room for the NUL */
            return VEGA_ERR_NOBUF;
        if (found) {
            out[n++] = ',';
            out[n++] = ' ';
        }
        memcpy(out + n, x->value.ptr, x->value.len);
        n += x->value.len;
        VEGA_ASSERT(n < cap);
        found = true;
    }
    if (!found)
        return -ENOENT;
    out[n] = '\0';
    return (vega_ssize)n;
}

size_t vega_http_fields_remove(vega_http_fields *f, const char *name, size_t name_len)
{
    size_t w = 0, removed = 0;
    for (size_t r = 0; r < f->count; r++) {
        if (name_eq(&f->items[r], name, name_len)) {
            f->size -= f->items[r].name.len + f->items[r].value.len;
            removed++;
        } else {
            f->items[w++] = f->items[r];
        }
    }
    f->count = w;
    return removed;
}
