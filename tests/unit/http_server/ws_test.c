/* SPDX-License-Identifier: MIT */
/* The WebSocket session (vega_http_exchange_accept_websocket, vega_websocket_new) against raw
 * peers over an in-memory duplex: messages and a Close in one read are all handed over and
 * answered before the Close handshake completes (RFC 6455 §5.5.1, §7.1), on the server (the
 * bytes in the handshake's read and in a later one) and on the client; a misbehaving client
 * (reserved bits, reserved opcodes, an unmasked frame, an oversize control frame, a message
 * past the limit, UTF-8 broken across fragments) gets the close code §7.4.1 names and the
 * connection ends; a client that floods and never reads does not grow the server's memory
 * past its bound. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/http_server.h>
#include <vega/mem.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/test.h>
#include <vega/websocket.h>

#include "vtest.h"

#define DL(ms) vega_deadline_in_ms(ms)

/* ---- a counting allocator (bytes live and their peak) -----------------------------------------
 */

struct cnt {
    atomic_size_t live, peak;
};

static void cnt_add(struct cnt *c, size_t n)
{
    size_t now = atomic_fetch_add(&c->live, n) + n;
    size_t p = atomic_load(&c->peak);
    while (now > p && !atomic_compare_exchange_weak(&c->peak, &p, now)) {
    }
}

static void *cnt_malloc(void *ud, size_t n)
{
    size_t *h = malloc(sizeof(max_align_t) + n);
    VCHECK(h != NULL);
    *h = n;
    cnt_add(ud, n);
    return (char *)h + sizeof(max_align_t);
}

static void *cnt_calloc(void *ud, size_t n, size_t size)
{
    void *p = cnt_malloc(ud, n * size);
    memset(p, 0, n * size);
    return p;
}

static void cnt_free(void *ud, void *p)
{
    struct cnt *c = ud;
    size_t *h = (size_t *)((char *)p - sizeof(max_align_t));
    atomic_fetch_sub(&c->live, *h);
    free(h);
}

static void *cnt_realloc(void *ud, void *p, size_t n)
{
    void *q = cnt_malloc(ud, n);
    size_t old = *(size_t *)((char *)p - sizeof(max_align_t));
    memcpy(q, p, old < n ? old : n);
    cnt_free(ud, p);
    return q;
}

/* ---- frames ------------------------------------------------------------------------------------
 */

static const uint8_t key[4] = {0x12, 0x34, 0x56, 0x78};

/* Appends a frame (b0: FIN, RSV, opcode; masked with key when mask); returns the new length. */
static size_t frame(uint8_t *out, size_t at, uint8_t b0, bool mask, const void *p, size_t len)
{
    out[at++] = b0;
    uint8_t m = mask ? 0x80 : 0;
    if (len < 126) {
        out[at++] = (uint8_t)(m | len);
    } else if (len < 65536) {
        out[at++] = m | 126;
        out[at++] = (uint8_t)(len >> 8);
        out[at++] = (uint8_t)len;
    } else {
        out[at++] = m | 127;
        for (int s = 56; s >= 0; s -= 8)
            out[at++] = (uint8_t)((uint64_t)len >> s);
    }
    if (mask) {
        memcpy(out + at, key, 4);
        at += 4;
    }
    for (size_t i = 0; i < len; i++)
        out[at + i] = (uint8_t)(((const uint8_t *)p)[i] ^ (mask ? key[i & 3] : 0));
    return at + len;
}

struct parsed {
    uint8_t b0;
    uint8_t payload[256];
    size_t len;
};

/* Parses the frame at in[*at] (unmasking it); returns false when no whole frame is left. */
static bool parse(const uint8_t *in, size_t n, size_t *at, struct parsed *f)
{
    size_t i = *at;
    if (n < i + 2)
        return false;
    f->b0 = in[i];
    bool masked = in[i + 1] & 0x80;
    uint64_t len = in[i + 1] & 0x7f;
    i += 2;
    if (len == 126) {
        VCHECK(n >= i + 2);
        len = (uint64_t)in[i] << 8 | in[i + 1];
        i += 2;
    }
    VCHECK(len < 127 || len <= sizeof f->payload);
    uint8_t mk[4] = {0};
    if (masked) {
        memcpy(mk, in + i, 4);
        i += 4;
    }
    VCHECK(len <= sizeof f->payload && n >= i + len);
    for (size_t k = 0; k < len; k++)
        f->payload[k] = in[i + k] ^ mk[k & 3];
    f->len = (size_t)len;
    *at = i + (size_t)len;
    return true;
}

static unsigned close_code(const struct parsed *f)
{
    VCHECK_EQ(f->b0, 0x88);
    VCHECK(f->len >= 2);
    return (unsigned)f->payload[0] << 8 | f->payload[1];
}

/* Reads s until EOF into buf (at most cap); returns the length. */
static size_t read_all(vega_stream *s, uint8_t *buf, size_t cap)
{
    size_t have = 0;
    for (;;) {
        VCHECK(have < cap);
        vega_ssize n = vega_stream_read(s, buf + have, cap - have, DL(10000));
        VCHECK(n >= 0);
        if (n == 0)
            return have;
        have += (size_t)n;
    }
}

/* ---- the server: an echo handler ------------------------------------------------------------- */

static struct {
    uint64_t max_message_size;
    const vega_mem *mem;
    int echoed;        /* messages echoed */
    int send_rc;       /* the first failed send's code (0: none) */
    int end_rc;        /* what ended the loop */
    vega_ws_error err; /* the session's failure */
} hs;

static int echo_handler(vega_http_exchange *x, void *user)
{
    (void)user;
    vega_websocket_opts o;
    vega_websocket_opts_init(&o);
    if (hs.max_message_size)
        o.max_message_size = hs.max_message_size;
    o.mem = hs.mem;
    vega_websocket *ws;
    VCHECK_EQ(vega_http_exchange_accept_websocket(x, &o, &ws, DL(5000)), 0);
    for (;;) {
        vega_websocket_msg m;
        int rc = vega_websocket_recv(ws, &m, DL(10000));
        if (rc < 0) {
            hs.end_rc = rc;
            break;
        }
        rc = vega_websocket_send(ws, m.type, m.data, m.len, DL(10000));
        if (rc < 0) {
            hs.send_rc = rc;
            hs.end_rc = rc;
            break;
        }
        hs.echoed++;
    }
    vega_websocket_get_error(ws, &hs.err);
    vega_websocket_free(ws);
    return 0;
}

struct srv {
    vega_http_server *srv;
    vega_stream *peer; /* the raw client's end */
    vega_task *task;
    vega_stream *s;
};

static void *serve_task(void *arg)
{
    struct srv *v = arg;
    vega_http_server_serve(v->srv, v->s, NULL, NULL);
    return NULL;
}

static void srv_start(struct srv *v, size_t capacity, const vega_mem *mem)
{
    memset(&hs, 0, sizeof hs);
    hs.mem = mem;
    vega_http_server_opts so;
    vega_http_server_opts_init(&so);
    so.handler = echo_handler;
    so.mem = mem;
    VCHECK_EQ(vega_http_server_new(&v->srv, &so), 0);
    VCHECK_EQ(vega_duplex_new(&v->peer, &v->s, capacity), 0);
    VCHECK_EQ(vega_task_spawn(&v->task, serve_task, v), 0);
}

static void srv_stop(struct srv *v)
{
    vega_stream_close(v->peer, DL(1000));
    VCHECK_EQ(vega_task_join(v->task, NULL, DL(10000)), 0);
    vega_http_server_free(v->srv);
}

static const char req[] = "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                          "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";

/* Writes n bytes to the server whole. */
static void put(struct srv *v, const uint8_t *p, size_t n)
{
    VCHECK_EQ(vega_stream_write(v->peer, p, n, NULL, DL(5000)), (vega_ssize)n);
}

/* Reads the 101's head (and no more than it: the server writes nothing else before a frame
 * arrives). */
static void read_101(struct srv *v)
{
    char head[512];
    size_t have = 0;
    while (!(have >= 4 && memcmp(head + have - 4, "\r\n\r\n", 4) == 0)) {
        VCHECK(have < sizeof head);
        VCHECK_EQ(vega_stream_read(v->peer, head + have, 1, DL(5000)), 1);
        have++;
    }
    VCHECK(have > 12 && memcmp(head, "HTTP/1.1 101", 12) == 0);
}

/* "hello", "world", Close 1000: every message is echoed, then the answering Close. */
static void check_echoes_then_close(struct srv *v, uint8_t *out, size_t n, size_t at)
{
    (void)v;
    struct parsed f;
    VCHECK(parse(out, n, &at, &f));
    VCHECK(f.b0 == 0x81 && f.len == 5 && memcmp(f.payload, "hello", 5) == 0);
    VCHECK(parse(out, n, &at, &f));
    VCHECK(f.b0 == 0x81 && f.len == 5 && memcmp(f.payload, "world", 5) == 0);
    VCHECK(parse(out, n, &at, &f));
    VCHECK_EQ(close_code(&f), 1000);
    VCHECK_EQ(at, n); /* nothing after the Close */
    VCHECK_EQ(hs.echoed, 2);
    VCHECK_EQ(hs.send_rc, 0);
    VCHECK_EQ(hs.end_rc, VEGA_ERR_CLOSED);
}

static size_t two_and_close(uint8_t *buf, size_t at)
{
    at = frame(buf, at, 0x81, true, "hello", 5);
    at = frame(buf, at, 0x81, true, "world", 5);
    return frame(buf, at, 0x88, true, "\x03\xe8", 2);
}

/* The messages and the Close come in the handshake's own read (the bytes past the request). */
VTEST_CT(close_after_messages_in_handshake_read)
{
    struct srv v;
    srv_start(&v, 0, NULL);
    uint8_t in[512], out[4096];
    memcpy(in, req, sizeof req - 1);
    size_t n = two_and_close(in, sizeof req - 1);
    put(&v, in, n);
    read_101(&v);
    size_t got = read_all(v.peer, out, sizeof out);
    check_echoes_then_close(&v, out, got, 0);
    srv_stop(&v);
}

/* The messages and the Close come in one read after the handshake. */
VTEST_CT(close_after_messages_in_one_read)
{
    struct srv v;
    srv_start(&v, 0, NULL);
    put(&v, (const uint8_t *)req, sizeof req - 1);
    read_101(&v);
    uint8_t in[512], out[4096];
    size_t n = two_and_close(in, 0);
    put(&v, in, n);
    size_t got = read_all(v.peer, out, sizeof out);
    check_echoes_then_close(&v, out, got, 0);
    srv_stop(&v);
}

/* The client side: the server's messages and its Close in one read; the client answers each
 * message, and its Close follows them. */
VTEST_CT(client_close_after_messages)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_websocket *ws;
    VCHECK_EQ(vega_websocket_new(&ws, a, true, VEGA_WS_CLIENT, NULL, NULL, NULL, 0), 0);
    uint8_t in[256], out[4096];
    size_t n = frame(in, 0, 0x81, false, "one", 3);
    n = frame(in, n, 0x82, false, "two", 3);
    n = frame(in, n, 0x88, false, "\x03\xe9", 2);
    VCHECK_EQ(vega_stream_write(b, in, n, NULL, DL(5000)), (vega_ssize)n);
    vega_websocket_msg m;
    VCHECK_EQ(vega_websocket_recv(ws, &m, DL(5000)), 0);
    VCHECK(m.type == VEGA_WS_TEXT && m.len == 3 && memcmp(m.data, "one", 3) == 0);
    VCHECK_EQ(vega_websocket_send(ws, VEGA_WS_TEXT, "r1", 2, DL(5000)), 0);
    VCHECK_EQ(vega_websocket_recv(ws, &m, DL(5000)), 0);
    VCHECK(m.type == VEGA_WS_BINARY && m.len == 3 && memcmp(m.data, "two", 3) == 0);
    VCHECK_EQ(vega_websocket_send(ws, VEGA_WS_BINARY, "r2", 2, DL(5000)), 0);
    VCHECK_EQ(vega_websocket_recv(ws, &m, DL(5000)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_websocket_get_close_code(ws), 1001);
    VCHECK_EQ(vega_websocket_send(ws, VEGA_WS_TEXT, "late", 4, DL(5000)), VEGA_ERR_CLOSED);
    vega_websocket_free(ws); /* closes a */
    size_t got = read_all(b, out, sizeof out), at = 0;
    struct parsed f;
    VCHECK(parse(out, got, &at, &f));
    VCHECK(f.b0 == 0x81 && f.len == 2 && memcmp(f.payload, "r1", 2) == 0);
    VCHECK(parse(out, got, &at, &f));
    VCHECK(f.b0 == 0x82 && f.len == 2 && memcmp(f.payload, "r2", 2) == 0);
    VCHECK(parse(out, got, &at, &f));
    VCHECK_EQ(close_code(&f), 1001);
    VCHECK_EQ(at, got);
    vega_stream_close(b, DL(1000));
}

/* ---- a misbehaving client ------------------------------------------------------------------- */

/* Sends the handshake and in (n bytes); the server answers with one Close of code, its recv
 * fails with VEGA_ERR_PROTO and the connection ends. */
static void bad_input(const uint8_t *in, size_t n, unsigned code)
{
    struct srv v;
    srv_start(&v, 0, NULL);
    hs.max_message_size = 1000;
    put(&v, (const uint8_t *)req, sizeof req - 1);
    read_101(&v);
    put(&v, in, n);
    uint8_t out[4096];
    size_t got = read_all(v.peer, out, sizeof out), at = 0;
    struct parsed f;
    VCHECK(parse(out, got, &at, &f));
    VCHECK_EQ(close_code(&f), code);
    VCHECK_EQ(at, got);
    VCHECK_EQ(hs.end_rc, VEGA_ERR_PROTO);
    VCHECK_EQ(hs.err.code, code);
    VCHECK_EQ(hs.echoed, 0);
    srv_stop(&v);
}

VTEST_CT(malformed_frames)
{
    static uint8_t in[4096], big[2000];
    bad_input(in, frame(in, 0, 0xa1, true, "x", 1), 1002);  /* RSV2 */
    bad_input(in, frame(in, 0, 0xc1, true, "x", 1), 1002);  /* RSV1 without permessage-deflate */
    bad_input(in, frame(in, 0, 0x83, true, "x", 1), 1002);  /* reserved data opcode */
    bad_input(in, frame(in, 0, 0x8b, true, NULL, 0), 1002); /* reserved control opcode */
    bad_input(in, frame(in, 0, 0x81, false, "x", 1), 1002); /* unmasked from a client */
    memset(big, 'p', sizeof big);
    bad_input(in, frame(in, 0, 0x89, true, big, 126), 1002);  /* control frame over 125 */
    bad_input(in, frame(in, 0, 0x09, true, "x", 1), 1002);    /* fragmented control frame */
    bad_input(in, frame(in, 0, 0x82, true, big, 1001), 1009); /* past max_message_size */
    /* UTF-8 broken across fragments: E2 82 is a valid start, 28 cannot continue it */
    size_t n = frame(in, 0, 0x01, true, "\xe2\x82", 2);
    bad_input(in, frame(in, n, 0x80, true, "\x28", 1), 1007);
    n = frame(in, 0, 0x01, true, "ab\xe2", 3); /* a message ending inside a character */
    bad_input(in, frame(in, n, 0x80, true, "\x82", 1), 1007);
}

/* A client that sends messages without end and never reads: the server's echoes fill the
 * stream, its send waits, it reads no further, and its memory stays within a bound (one read's
 * messages, the assembly buffer, the connection's fixed buffers) whatever the client sends. */
VTEST_CT(flood_without_reading)
{
    static struct cnt c;
    atomic_store(&c.live, 0);
    atomic_store(&c.peak, 0);
    const vega_mem mem = {cnt_malloc, cnt_calloc, cnt_realloc, cnt_free, &c};
    struct srv v;
    srv_start(&v, 65536, &mem);
    put(&v, (const uint8_t *)req, sizeof req - 1);
    read_101(&v);
    static uint8_t msg[1000], batch[64 * 1100];
    memset(msg, 'f', sizeof msg);
    size_t n = 0;
    for (int i = 0; i < 64; i++)
        n = frame(batch, n, 0x82, true, msg, sizeof msg);
    uint64_t sent = 0;
    /* until the stream stops taking bytes (the server no longer reads), or 16 MiB */
    while (sent < ((uint64_t)16 << 20)) {
        vega_ssize w = vega_stream_write(v.peer, batch, n, NULL, DL(300));
        if (w > 0)
            sent += (uint64_t)w;
        if (w != (vega_ssize)n)
            break;
    }
    VCHECK(sent > 65536); /* more than the stream holds: the server read and echoed */
    size_t peak = atomic_load(&c.peak);
    printf("flood: %llu bytes sent, server peak %zu bytes\n", (unsigned long long)sent, peak);
    VCHECK(peak < 512 * 1024);
    srv_stop(&v);
    VCHECK_EQ(atomic_load(&c.live), 0);
}
