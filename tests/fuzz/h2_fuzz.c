/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the HTTP/2 core (lib/h2). Byte 0 picks the role (a server fed a valid
 * client preface, or a client with two requests out fed a valid server SETTINGS), small limits
 * or the defaults, and whether the application answers; bytes 1-2 seed the split points; the
 * rest is what the peer sends after its preface. Never a crash or a leak; every return code is
 * one the contract names; after a failure the connection stays ended; the memory held stays
 * under a bound; and feeding the input at once or in random pieces gives the same events and
 * result (nothing in between but the callbacks' own submits). A third run interleaves writes
 * and answers, checking the invariants only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/h2.h>

#include "fuzz_target.h"
#include "tmem.h"

struct st {
    uint64_t h;
    vega_h2_conn *c;
    bool answer;
    uint8_t flags;
};

static void mix(struct st *s, const void *d, size_t n)
{
    const uint8_t *b = d;
    for (size_t i = 0; i < n; i++)
        s->h = (s->h ^ b[i]) * 0x100000001b3ull;
}

static void tag(struct st *s, char t, int32_t id)
{
    mix(s, &t, 1);
    mix(s, &id, sizeof id);
}

static const uint8_t body[100] = {1, 2, 3};

static int on_headers(void *ud, int32_t id, const vega_h2_head *h)
{
    struct st *s = ud;
    tag(s, 'H', id);
    mix(s, &h->kind, sizeof h->kind);
    mix(s, &h->status, sizeof h->status);
    mix(s, &h->content_length, sizeof h->content_length);
    for (size_t i = 0; i < h->nfields; i++) {
        const vega_hpack_field *f = &h->fields[i];
        if (!f->name.len || f->name.ptr[0] == ':')
            abort(); /* validated: never empty, never a pseudo-header */
        for (size_t k = 0; k < f->name.len; k++)
            if (f->name.ptr[k] >= 'A' && f->name.ptr[k] <= 'Z')
                abort();
        mix(s, f->name.ptr, f->name.len);
        mix(s, f->value.ptr, f->value.len);
    }
    if (s->answer && h->kind == VEGA_H2_HEAD_REQUEST) {
        vega_hpack_field f[] = {{{":status", 7}, {"200", 3}, VEGA_HPACK_INDEX_AUTO}};
        int rc = vega_h2_submit_response(s->c, id, f, 1, 0);
        if (rc != 0 && rc != -ENOMEM)
            abort();
        if (rc == 0 && vega_h2_stream_write(s->c, id, body, sizeof body, VEGA_H2_FLAG_END_STREAM) !=
                           sizeof body)
            abort();
    }
    return 0;
}

static int on_data(void *ud, int32_t id, const uint8_t *d, size_t n, unsigned flags)
{
    struct st *s = ud;
    /* Pieces of one frame hash as one: bytes alone, then the end. */
    mix(s, d, n);
    if (flags)
        tag(s, 'E', id);
    if (n && vega_h2_stream_consume(s->c, id, n) != 0)
        abort();
    return 0;
}

static int on_close(void *ud, int32_t id, uint32_t code, vega_h2_close how)
{
    struct st *s = ud;
    tag(s, 'C', id);
    mix(s, &code, sizeof code);
    mix(s, &how, sizeof how);
    return 0;
}

static int on_goaway(void *ud, uint32_t last, uint32_t code, const uint8_t *d, size_t n)
{
    struct st *s = ud;
    tag(s, 'G', (int32_t)last);
    mix(s, &code, sizeof code);
    if (n > 256)
        abort();
    mix(s, d, n);
    return 0;
}

static int on_prio(void *ud, int32_t id, const char *v, size_t n)
{
    struct st *s = ud;
    tag(s, 'P', id);
    if (n > 1024)
        abort();
    mix(s, v, n);
    return 0;
}

static const vega_h2_callbacks cbs = {
    .on_headers = on_headers,
    .on_data = on_data,
    .on_stream_close = on_close,
    .on_goaway = on_goaway,
    .on_priority_update = on_prio,
};

static bool read_rc_ok(int rc)
{
    return rc == 0 || rc == VEGA_ERR_PROTO || rc == VEGA_ERR_CLOSED || rc == -ENOMEM;
}

struct result {
    uint64_t h;
    int rc;
};

/* mode 0: all at once; 1: random pieces; 2: random pieces with writes in between. */
static struct result run(const uint8_t *d, size_t n, uint8_t flags, uint64_t seed, int mode)
{
    struct tmem m;
    tmem_init(&m);
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.mem = &m.mem;
    if (flags & 2) {
        o.max_concurrent_streams = 4;
        o.initial_window_size = 100;
        o.max_header_list_size = 512;
        o.max_continuations = 4;
        o.reset_burst = o.glitch_burst = 20;
        o.max_queued_control = 20;
        o.header_table_size = 64;
    }
    bool server = !(flags & 1);
    struct st s = {.h = 0xcbf29ce484222325ull, .answer = flags & 4, .flags = flags};
    int rc = server ? vega_h2_conn_server_new(&s.c, &cbs, &o, &s)
                    : vega_h2_conn_client_new(&s.c, &cbs, &o, &s);
    if (rc != 0)
        abort();
    static uint8_t out[1 << 16];
    if (server) {
        if (vega_h2_conn_read(s.c, (const uint8_t *)"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24, 0))
            abort();
    } else {
        vega_hpack_field req[] = {{{":method", 7}, {"POST", 4}, VEGA_HPACK_INDEX_AUTO},
                                  {{":scheme", 7}, {"https", 5}, VEGA_HPACK_INDEX_AUTO},
                                  {{":authority", 10}, {"a", 1}, VEGA_HPACK_INDEX_AUTO},
                                  {{":path", 5}, {"/", 1}, VEGA_HPACK_INDEX_AUTO}};
        for (int i = 0; i < 2; i++) {
            int32_t id;
            if (vega_h2_submit_request(s.c, req, 4, i ? VEGA_H2_FLAG_END_STREAM : 0, NULL, &id))
                abort();
            if (!i && vega_h2_stream_write(s.c, id, body, sizeof body, VEGA_H2_FLAG_END_STREAM) !=
                          sizeof body)
                abort();
        }
        /* Our HEADERS must be out before the peer may answer them. */
        if (vega_h2_conn_write(s.c, out, sizeof out, 0) <= 0)
            abort();
    }
    static const uint8_t settings[9] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
    if (vega_h2_conn_read(s.c, settings, sizeof settings, 0))
        abort();
    struct result r = {0, 0};
    size_t at = 0;
    while (at < n && r.rc == 0) {
        size_t k = n - at;
        if (mode) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            k = 1 + (size_t)(seed % (seed & 64 ? 8 : 200));
            k = k < n - at ? k : n - at;
        }
        r.rc = vega_h2_conn_read(s.c, d + at, k, 0);
        if (!read_rc_ok(r.rc))
            abort();
        at += k;
        if (mode == 2) {
            vega_ssize w = vega_h2_conn_write(s.c, out, (size_t)(seed % sizeof out) + 1, 0);
            if (w < 0 && w != -ENOMEM)
                abort();
        }
    }
    if (r.rc != 0 && vega_h2_conn_read(s.c, d, n ? 1 : 0, 0) != (n ? VEGA_ERR_CLOSED : 0))
        abort(); /* ended stays ended */
    vega_ssize w;
    int guard = 0;
    while ((w = vega_h2_conn_write(s.c, out, sizeof out, 0)) > 0 && guard++ < 10000)
        ;
    if (w < 0 || guard >= 10000)
        abort();
    vega_h2_error e;
    if (r.rc == VEGA_ERR_PROTO && !vega_h2_conn_get_error(s.c, &e))
        abort();
    /* The connection's own memory: a few header blocks and decoded fields at their limits,
     * the HPACK tables, at most max_concurrent_streams streams, a bounded output queue. */
    if (m.peak_bytes > (flags & 2 ? 256u << 10 : 2u << 20))
        abort();
    vega_h2_conn_free(s.c);
    if (m.live_blocks)
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
    data += 3;
    size -= 3;
    struct result a = run(data, size, flags, seed, 0);
    struct result b = run(data, size, flags, seed, 1);
    if (a.h != b.h || a.rc != b.rc)
        abort();
    run(data, size, flags, seed, 2);
    return 0;
}
