/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the HTTP/1.1 request parser (lib/http1/parser.c); http1resp_fuzz.c
 * reuses it for responses. Byte 0 picks limits and HEAD, bytes 1-2 seed the split points, the
 * rest is the stream. Arbitrary bytes must never crash, every span must lie in the input or the
 * parser's buffer and respect the limits, and feeding the stream in random pieces must give the
 * same events (hashed, body bytes as one stream), result and error as feeding it at once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/http1.h>

#include "fuzz_target.h"

#ifndef HTTP1_FUZZ_KIND
#define HTTP1_FUZZ_KIND VEGA_HTTP1_REQUEST
#endif

typedef struct st {
    uint64_t h;
    const uint8_t *in;
    size_t in_len;
    const vega_http1_parser *p;
    size_t fields, body;
} st;

static void mix(st *s, const void *d, size_t n)
{
    const uint8_t *b = d;
    for (size_t i = 0; i < n; i++)
        s->h = (s->h ^ b[i]) * 0x100000001b3ull;
}

static void tag(st *s, char t)
{
    mix(s, &t, 1);
}

static void sp(st *s, vega_http1_span x, size_t max)
{
    const uint8_t *q = (const uint8_t *)x.ptr;
    bool in_input = q >= s->in && q + x.len <= s->in + s->in_len;
    bool in_buf = q >= s->p->buf && q + x.len <= s->p->buf + sizeof s->p->buf;
    if ((x.len && !in_input && !in_buf) || x.len > max)
        abort();
    mix(s, &x.len, sizeof x.len);
    mix(s, x.ptr, x.len);
}

static int rl(void *ud, vega_http1_span m, vega_http1_span t, int v)
{
    st *s = ud;
    tag(s, 'R');
    sp(s, m, s->p->lim.max_start_line);
    sp(s, t, s->p->lim.max_start_line - m.len);
    mix(s, &v, sizeof v);
    s->fields = 0;
    return 0;
}
static int stl(void *ud, int v, int code, vega_http1_span r)
{
    st *s = ud;
    tag(s, 'S');
    if (code < 100 || code > 999 || (v != 10 && v != 11))
        abort();
    mix(s, &v, sizeof v);
    mix(s, &code, sizeof code);
    sp(s, r, s->p->lim.max_start_line);
    s->fields = 0;
    return 0;
}
static int field(st *s, char t, vega_http1_span n, vega_http1_span v)
{
    tag(s, t);
    if (++s->fields > s->p->lim.max_fields || n.len + v.len + 3 > s->p->lim.max_field_line)
        abort();
    sp(s, n, s->p->lim.max_field_line);
    sp(s, v, s->p->lim.max_field_line);
    for (size_t i = 0; i < v.len; i++)
        if (v.ptr[i] == '\r' || v.ptr[i] == '\n' || v.ptr[i] == 0)
            abort();
    return 0;
}
static int hd(void *ud, vega_http1_span n, vega_http1_span v)
{
    return field(ud, 'H', n, v);
}
static int tr(void *ud, vega_http1_span n, vega_http1_span v)
{
    return field(ud, 'T', n, v);
}
static int hc(void *ud, const vega_http1_head *h)
{
    st *s = ud;
    tag(s, 'C');
    mix(s, h, sizeof *h);
    s->fields = 0;
    return 0;
}
static int mc(void *ud)
{
    st *s = ud;
    tag(s, 'M');
    s->body = 0;
    return 0;
}

static int bd_bytes(void *ud, vega_http1_span d)
{
    st *s = ud;
    const uint8_t *q = (const uint8_t *)d.ptr;
    if (d.len == 0 || q < s->in || q + d.len > s->in + s->in_len)
        abort(); /* bodies are always zero-copy */
    s->body += d.len;
    mix(s, d.ptr, d.len);
    return 0;
}

static const vega_http1_callbacks cbs = {rl, stl, hd, hc, bd_bytes, tr, mc};

typedef struct result {
    uint64_t h;
    int rc;
    vega_http1_error err;
    size_t stop; /* absolute offset where an upgrade stopped the parser, or SIZE_MAX */
} result;

static result run(const uint8_t *d, size_t n, const vega_http1_limits *lim, bool head,
                  uint64_t seed, bool split)
{
    static vega_http1_parser p;
    st s = {.h = 0xcbf29ce484222325ull, .in = d, .in_len = n, .p = &p};
    if (vega_http1_parser_init(&p, HTTP1_FUZZ_KIND, lim, &cbs, &s) != 0)
        abort();
    vega_http1_parser_set_head(&p, head);
    result r = {.stop = SIZE_MAX};
    size_t at = 0;
    while (at < n) {
        size_t k = n - at;
        if (split) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            k = 1 + (size_t)(seed % (seed & 64 ? 4 : 64));
            k = k < n - at ? k : n - at;
        }
        size_t used = 0;
        r.rc = vega_http1_parser_read(&p, d + at, k, &used);
        if (used > k)
            abort();
        if (r.rc)
            break;
        if (used < k) {
            if (!vega_http1_parser_is_upgraded(&p))
                abort();
            r.stop = at + used;
            break;
        }
        at += k;
    }
    if (r.rc == 0 && r.stop == SIZE_MAX)
        r.rc = vega_http1_parser_finish(&p);
    if (r.rc != 0 && r.rc != VEGA_ERR_PROTO)
        abort();
    r.err = vega_http1_parser_get_error(&p);
    if ((r.rc != 0) != (r.err != VEGA_HTTP1_E_NONE))
        abort();
    r.h = s.h;
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    uint8_t flags = data[0];
    uint64_t seed = (uint64_t)data[1] << 8 | data[2] | 1;
    vega_http1_limits small = {
        .max_start_line = 40, .max_field_line = 32, .max_field_section = 96, .max_fields = 4};
    const vega_http1_limits *lim = flags & 1 ? &small : NULL;
    bool head = flags & 2;
    data += 3;
    size -= 3;
    result a = run(data, size, lim, head, seed, false);
    result b = run(data, size, lim, head, seed, true);
    if (a.h != b.h || a.rc != b.rc || a.err != b.err || a.stop != b.stop)
        abort();
    return 0;
}
