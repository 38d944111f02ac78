/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the HTTP server's HTTP/2 side (lib/http_server/h2_*.c) over an in-memory
 * connection: the driver around the HTTP/2 core -- h2c by prior knowledge or by "Upgrade: h2c"
 * (stream 1 fed to the core between the client's SETTINGS and the rest), the reader and
 * connection tasks, a task per request, bodies both ways, trailers, resets, timeouts, GOAWAY.
 *
 * Input: byte 0 picks the mode (bit 0: Upgrade instead of prior knowledge; bit 1: one byte
 * writes; bit 2: WebSockets over HTTP/2 on, RFC 8441, so that an extended CONNECT to /ws reaches
 * vega_http_exchange_accept_websocket and an echo loop over the stream), byte 1 seeds the split
 * points, the rest is what the client sends after the connection preface's magic (its SETTINGS
 * frame first, then any frames). The input is written in pieces and the client's side is then
 * half-closed. A reader parses everything the server sends and aborts on a violation: every frame
 * is whole, on stream 0 or an odd (client) stream, never longer than the largest
 * SETTINGS_MAX_FRAME_SIZE the client sent (16384 before one); every header block decodes (HPACK,
 * RFC 7541) in order; DATA and trailers only on a stream whose response head came first; after the
 * 101 of an Upgrade the server's SETTINGS come first. The server must end the connection within
 * bounded (virtual) time, and every byte it took from its allocator must be back when it is freed.
 * The runtime runs on the paused clock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vega/hpack.h>
#include <vega/http_server.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/test.h>
#include <vega/websocket.h>

#include "fuzz_target.h"

#define MAX_INPUT (64 * 1024)

_Noreturn static void fail(const char *why)
{
    fprintf(stderr, "h2_server_fuzz: %s\n", why);
    abort();
}

/* ---- a counting allocator: every byte back at the end ------------------------------------- */

static atomic_size_t live;

static void *m_malloc(void *ud, size_t n)
{
    (void)ud;
    size_t *h = malloc(sizeof(size_t) * 2 + n);
    if (!h)
        return NULL;
    h[0] = n;
    atomic_fetch_add(&live, n);
    return h + 2;
}

static void *m_calloc(void *ud, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = m_malloc(ud, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

static void m_free(void *ud, void *p)
{
    (void)ud;
    if (!p)
        return;
    size_t *h = (size_t *)p - 2;
    atomic_fetch_sub(&live, h[0]);
    free(h);
}

static void *m_realloc(void *ud, void *p, size_t n)
{
    if (!p)
        return m_malloc(ud, n);
    size_t old = ((size_t *)p)[-2];
    void *q = m_malloc(ud, n);
    if (!q)
        return NULL;
    memcpy(q, p, old < n ? old : n);
    m_free(ud, p);
    return q;
}

static const vega_mem cmem = {m_malloc, m_calloc, m_realloc, m_free, NULL};

/* ---- the handler ---------------------------------------------------------------------------- */

static int file_fd = -1;

static int handler(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *r = vega_http_exchange_request(x);
    vega_deadline dl = vega_deadline_in_ms(20000);
    if (r->version != 20)
        fail("a request that is not HTTP/2");
    if (vega_http_str_eq(r->path, "/echo") || vega_http_str_eq(r->path, "/trailers")) {
        uint8_t buf[3000];
        uint64_t total = 0;
        int rc = 0;
        for (;;) {
            vega_ssize k = vega_http_request_read(x, buf, sizeof buf, dl);
            if (k <= 0) {
                rc = (int)k;
                break;
            }
            if (!total && vega_http_response_start(x, 200, NULL, 0, VEGA_HTTP_LENGTH_UNKNOWN) < 0)
                return -1;
            total += (uint64_t)k;
            if (vega_http_response_write(x, buf, (size_t)k, dl) < 0)
                return -1;
        }
        if (rc < 0)
            return rc;
        if (!total && vega_http_response_start(x, 200, NULL, 0, VEGA_HTTP_LENGTH_UNKNOWN) < 0)
            return -1;
        char sum[32];
        int n = snprintf(sum, sizeof sum, "%llu", (unsigned long long)total);
        vega_http_field t[] = {{{"X-Total", 7}, {sum, (size_t)n}}};
        return vega_http_response_finish(x, t, vega_http_str_eq(r->path, "/trailers"), dl);
    }
    if (vega_http_str_eq(r->path, "/big")) {
        static uint8_t b[70000];
        int rc = vega_http_response_start(x, 200, NULL, 0, 3 * sizeof b);
        for (int i = 0; rc == 0 && i < 3; i++)
            rc = vega_http_response_write(x, b, sizeof b, dl) < 0 ? -1 : 0;
        return rc == 0 ? vega_http_response_finish(x, NULL, 0, dl) : rc;
    }
    if (vega_http_str_eq(r->path, "/file")) {
        int rc = vega_http_response_start(x, 200, NULL, 0, 100000);
        if (rc == 0 && vega_http_response_sendfile(x, file_fd, 0, 100000, dl) < 0)
            rc = -1;
        return rc == 0 ? vega_http_response_finish(x, NULL, 0, dl) : rc;
    }
    if (vega_http_str_eq(r->path, "/ws") && vega_http_exchange_is_websocket(x)) {
        vega_websocket_opts wo;
        vega_websocket_opts_init(&wo);
        wo.deflate.enabled = true;
        wo.max_message_size = 65536;
        wo.mem = &cmem;
        vega_websocket *ws;
        int rc = vega_http_exchange_accept_websocket(x, &wo, &ws, dl);
        if (rc < 0)
            return rc;
        for (;;) {
            vega_websocket_msg m;
            if (vega_websocket_recv(ws, &m, dl) < 0 ||
                vega_websocket_send(ws, m.type, m.data, m.len, dl) < 0)
                break;
        }
        vega_websocket_free(ws);
        return 0;
    }
    if (vega_http_str_eq(r->path, "/hang"))
        return vega_sleep_ms(100000) < 0 ? -ECANCELED : -EIO;
    if (vega_http_str_eq(r->path, "/fail"))
        return -EIO;
    if (vega_http_str_eq(r->path, "/close"))
        vega_http_exchange_set_close(x);
    return vega_http_respond(x, r->method == VEGA_HTTP_METHOD_HEAD ? 204 : 200, NULL, 0, "hello", 5,
                             dl);
}

/* ---- the reader: everything the server sends --------------------------------------------------
 */

struct rd {
    vega_stream *s;
    bool upgrade;
    uint32_t max_frame; /* the largest SETTINGS_MAX_FRAME_SIZE the client asked for */
    uint8_t *buf;
    size_t have;
    vega_hpack_decoder *dec;
    uint8_t headed[4096]; /* a bit per stream id / 2 below 32768: its response head came */
    uint8_t *block;
    size_t block_len;
    bool in_block, saw_frame;
    uint32_t block_sid;
};

static int on_field(void *ud, const vega_hpack_field *f)
{
    (void)ud;
    (void)f;
    return 0;
}

/* One whole frame at p (9 + len bytes). */
static void check_frame(struct rd *r, const uint8_t *p, size_t len)
{
    uint8_t type = p[3], flags = p[4];
    uint32_t sid =
        ((uint32_t)p[5] << 24 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 8 | p[8]) & 0x7fffffffu;
    if (!r->saw_frame && type != 0x4)
        fail("the server's first frame is not SETTINGS");
    r->saw_frame = true;
    if (len > r->max_frame)
        fail("a frame over the client's SETTINGS_MAX_FRAME_SIZE");
    if (sid && !(sid & 1))
        fail("a frame on a stream the client did not open");
    if (r->in_block && (type != 0x9 || sid != r->block_sid))
        fail("a header block interrupted");
    /* (streams past 65535 are not tracked) */
    bool headed = sid >= 65536 || (r->headed[sid / 16] >> (sid / 2 % 8) & 1);
    if (type == 0x0 && !headed)
        fail("DATA before the response's head");
    if (type == 0x1 || type == 0x9) {
        if (type == 0x1 && (flags & 0x28))
            fail("padding or priority in our HEADERS");
        r->block = realloc(r->block, r->block_len + len + 1);
        memcpy(r->block + r->block_len, p + 9, len);
        r->block_len += len;
        r->in_block = !(flags & 0x4);
        r->block_sid = sid;
        if (!r->in_block) {
            int rc = vega_hpack_decode(r->dec, r->block, r->block_len, on_field, NULL);
            if (rc < 0 && rc != VEGA_ERR_HPACK_TOO_LARGE)
                fail("a header block that does not decode");
            r->block_len = 0;
            if (sid < 65536)
                r->headed[sid / 16] |= (uint8_t)(1u << (sid / 2 % 8));
        }
    }
}

static void *reader_main(void *arg)
{
    struct rd *r = arg;
    size_t cap = 1 << 20;
    r->buf = malloc(cap);
    bool h1 = r->upgrade;
    for (;;) {
        vega_ssize k = vega_stream_read(r->s, r->buf + r->have, cap - r->have, VEGA_DEADLINE_NEVER);
        if (k <= 0)
            break;
        r->have += (size_t)k;
        size_t off = 0;
        if (h1) {
            uint8_t *e = memmem(r->buf, r->have, "\r\n\r\n", 4);
            if (!e)
                continue;
            if (memcmp(r->buf, "HTTP/1.1 101 ", 13) != 0)
                fail("the Upgrade was not answered 101");
            off = (size_t)(e + 4 - r->buf);
            h1 = false;
        }
        while (r->have - off >= 9) {
            const uint8_t *p = r->buf + off;
            size_t len = (size_t)p[0] << 16 | (size_t)p[1] << 8 | p[2];
            if (r->have - off < 9 + len)
                break;
            check_frame(r, p, len);
            off += 9 + len;
        }
        memmove(r->buf, r->buf + off, r->have - off);
        r->have -= off;
        if (r->have == cap)
            fail("a frame larger than 1 MiB");
    }
    return NULL; /* a frame cut short by a close after an error is allowed */
}

/* ---- one input ---------------------------------------------------------------------------------
 */

struct run {
    const uint8_t *data;
    size_t size;
};

struct serve_arg {
    vega_http_server *srv;
    vega_stream *s;
};

static void *serve_main(void *arg)
{
    struct serve_arg *a = arg;
    (void)vega_http_server_serve(a->srv, a->s, NULL, NULL);
    return NULL;
}

/* The largest SETTINGS_MAX_FRAME_SIZE in the client's SETTINGS frames (whatever they are). */
static uint32_t max_frame_of(const uint8_t *p, size_t n)
{
    uint32_t m = 16384;
    size_t off = 0;
    while (n - off >= 9) {
        size_t len = (size_t)p[off] << 16 | (size_t)p[off + 1] << 8 | p[off + 2];
        if (p[off + 3] == 0x4 && !(p[off + 4] & 1))
            for (size_t i = 0; i + 6 <= len && off + 9 + i + 6 <= n; i += 6) {
                const uint8_t *s = p + off + 9 + i;
                uint32_t v =
                    (uint32_t)s[2] << 24 | (uint32_t)s[3] << 16 | (uint32_t)s[4] << 8 | s[5];
                if ((s[0] << 8 | s[1]) == 5 && v > m && v <= 16777215)
                    m = v;
            }
        if (n - off - 9 < len)
            break;
        off += 9 + len;
    }
    return m;
}

static void *main_task(void *arg)
{
    struct run *in = arg;
    uint8_t mode = in->data[0], seed = in->data[1];
    const uint8_t *body = in->data + 2;
    size_t n = in->size - 2;
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = handler;
    o.mem = &cmem;
    vega_http_server *srv;
    if (vega_http_server_new(&srv, &o) < 0)
        fail("server");
    vega_http_server_h2_opts h;
    vega_http_server_h2_opts_init(&h);
    h.h2c = true;
    h.max_concurrent_streams = 16;
    h.websocket = mode & 4;
    if (vega_http_server_set_h2(srv, &h) < 0)
        fail("set_h2");
    vega_stream *a, *b;
    if (vega_duplex_new(&a, &b, 4096) < 0)
        fail("duplex");
    struct serve_arg sa = {srv, b};
    vega_task *st, *rt;
    struct rd r = {.s = a, .upgrade = mode & 1, .max_frame = max_frame_of(body, n)};
    if (vega_hpack_decoder_new(&r.dec, NULL) < 0)
        fail("decoder");
    if (vega_task_spawn(&st, serve_main, &sa) < 0 || vega_task_spawn(&rt, reader_main, &r) < 0)
        fail("spawn");
    vega_deadline dl = vega_deadline_in_ms(600000);
    if (mode & 1) {
        static const char up[] = "GET /echo HTTP/1.1\r\nHost: f\r\n"
                                 "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                                 "HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n";
        (void)vega_stream_write(a, up, sizeof up - 1, NULL, dl);
    }
    (void)vega_stream_write(a, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24, NULL, dl);
    size_t off = 0;
    unsigned x = seed | 1u;
    while (off < n) {
        x = x * 1103515245u + 12345u;
        size_t k = (mode & 2) ? 1 : 1 + (x >> 16) % 4096;
        if (k > n - off)
            k = n - off;
        if (vega_stream_write(a, body + off, k, NULL, dl) < 0)
            break;
        off += k;
        if ((x >> 8) % 4 == 0)
            (void)vega_sleep_ms((x >> 12) % 50);
    }
    (void)vega_stream_shutdown(a, SHUT_WR, dl);
    if (vega_task_join(st, NULL, dl) < 0)
        fail("the connection did not end within ten (virtual) minutes");
    (void)vega_stream_shutdown(a, SHUT_RD, dl);
    if (vega_task_join(rt, NULL, dl) < 0)
        fail("the reader did not end");
    vega_stream_close(a, dl);
    vega_hpack_decoder_free(r.dec);
    free(r.buf);
    free(r.block);
    vega_http_server_stats s;
    vega_http_server_get_stats(srv, &s);
    if (s.conns_open != 0)
        fail("a connection left open");
    vega_http_server_free(srv);
    if (atomic_load(&live) != 0)
        fail("memory taken from the server's allocator and not given back");
    return NULL;
}

static vega_rt *rt;

static void free_rt(void)
{
    vega_rt_free(rt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > MAX_INPUT)
        return 0;
    if (file_fd < 0) {
        char path[] = "/tmp/vega-h2fuzz-XXXXXX";
        file_fd = mkstemp(path);
        if (file_fd < 0)
            fail("mkstemp");
        unlink(path);
        static uint8_t b[100000];
        for (size_t i = 0; i < sizeof b; i++)
            b[i] = (uint8_t)(i * 7);
        if (write(file_fd, b, sizeof b) != (ssize_t)sizeof b)
            fail("write");
    }
    if (!rt) {
        /* one runtime for every input (paused clock: virtual time goes on across them) */
        vega_rt_opts ro;
        vega_rt_opts_init(&ro);
        ro.flavor = VEGA_RT_CURRENT_THREAD;
        ro.paused_clock = true;
        if (vega_rt_new(&rt, &ro) < 0)
            fail("runtime");
        atexit(free_rt);
    }
    struct run in = {data, size};
    if (vega_rt_block_on(rt, main_task, &in, NULL) < 0)
        fail("block_on");
    return 0;
}
