/* SPDX-License-Identifier: MIT */
/* The HTTP server's HTTP/2 side under attack, on loopback (RFC 9113 §10.5): Rapid Reset
 * (CVE-2023-44487), MadeYouReset (CVE-2025-8671), stream-count abuse with handlers that do not
 * end, CONTINUATION floods, an HPACK bomb, SETTINGS/PING/PRIORITY/empty-DATA/WINDOW_UPDATE
 * floods, a zero connection window and a client that never reads. Frames are written by hand.
 * Through each a normal client on its own connection keeps getting byte-exact answers; the work
 * the server does is bounded (handlers started, frames taken before it says GOAWAY
 * ENHANCE_YOUR_CALM and closes), and so is what it holds through its allocator, which is back
 * where it was once the attacker is gone. */
#include <stddef.h>

#include "h2_test_util.h"
#include "server_int.h"

/* ---- a counting allocator ---------------------------------------------------------------------
 */

struct cmem {
    atomic_size_t live, peak;
    vega_mem mem;
};

struct cmem_hdr {
    size_t n;
    size_t pad;
};

static void cmem_grow(struct cmem *m, size_t n)
{
    size_t now = atomic_fetch_add(&m->live, n) + n, p = atomic_load(&m->peak);
    while (now > p && !atomic_compare_exchange_weak(&m->peak, &p, now))
        ;
}

static void *cm_malloc(void *ud, size_t n)
{
    struct cmem_hdr *h = malloc(sizeof *h + n);
    if (!h)
        return NULL;
    h->n = n;
    cmem_grow(ud, n);
    return h + 1;
}

static void *cm_calloc(void *ud, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = cm_malloc(ud, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

static void cm_free(void *ud, void *p)
{
    if (!p)
        return;
    struct cmem *m = ud;
    struct cmem_hdr *h = (struct cmem_hdr *)p - 1;
    atomic_fetch_sub(&m->live, h->n);
    free(h);
}

static void *cm_realloc(void *ud, void *p, size_t n)
{
    if (!p)
        return cm_malloc(ud, n);
    struct cmem_hdr *h = (struct cmem_hdr *)p - 1;
    void *q = cm_malloc(ud, n);
    if (!q)
        return NULL;
    memcpy(q, p, h->n < n ? h->n : n);
    cm_free(ud, p);
    return q;
}

static struct cmem cm;

static void cmem_init(void)
{
    atomic_store(&cm.live, 0);
    atomic_store(&cm.peak, 0);
    cm.mem = (vega_mem){.malloc = cm_malloc,
                        .calloc = cm_calloc,
                        .realloc = cm_realloc,
                        .free = cm_free,
                        .ud = &cm};
}

/* ---- a raw client: hand-made frames out, frames read back ----------------------------------- */

#define RAW_IN 65536
struct raw {
    vega_stream *s;
    uint8_t *in; /* RAW_IN bytes (a test task's stack is small) */
    size_t have;
    bool eof;
    int goaways;
    uint32_t goaway_code;
    int rsts, rst_refused, rst_protocol, responses, s431;
    uint8_t *out;
    size_t out_len, out_cap;
};

static void put(struct raw *r, const void *p, size_t n)
{
    if (r->out_len + n > r->out_cap) {
        size_t cap = r->out_cap ? r->out_cap * 2 : 65536;
        while (cap < r->out_len + n)
            cap *= 2;
        r->out = realloc(r->out, cap);
        VCHECK(r->out != NULL);
        r->out_cap = cap;
    }
    memcpy(r->out + r->out_len, p, n);
    r->out_len += n;
}

static void frame(struct raw *r, uint8_t type, uint8_t flags, uint32_t sid, const void *p, size_t n)
{
    uint8_t h[9] = {
        (uint8_t)(n >> 16),   (uint8_t)(n >> 8),    (uint8_t)n,          type,        flags,
        (uint8_t)(sid >> 24), (uint8_t)(sid >> 16), (uint8_t)(sid >> 8), (uint8_t)sid};
    put(r, h, 9);
    if (n)
        put(r, p, n);
}

/* HPACK literal without indexing, new name (RFC 7541 §6.2.2), lengths below 127. */
static size_t lit(uint8_t *w, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value), k = 0;
    w[k++] = 0x00;
    w[k++] = (uint8_t)nl;
    memcpy(w + k, name, nl);
    k += nl;
    w[k++] = (uint8_t)vl;
    memcpy(w + k, value, vl);
    return k + vl;
}

/* A GET (or method) request's block for path. */
static size_t req_block(uint8_t *w, const char *method, const char *path)
{
    size_t k = lit(w, ":method", method);
    k += lit(w + k, ":scheme", "http");
    k += lit(w + k, ":authority", "a");
    k += lit(w + k, ":path", path);
    return k;
}

static void headers(struct raw *r, uint32_t sid, const char *method, const char *path, bool end)
{
    uint8_t b[256];
    size_t n = req_block(b, method, path);
    frame(r, 0x1, (uint8_t)(0x4 | (end ? 0x1 : 0)), sid, b, n);
}

static void rst(struct raw *r, uint32_t sid, uint32_t code)
{
    uint8_t p[4] = {(uint8_t)(code >> 24), (uint8_t)(code >> 16), (uint8_t)(code >> 8),
                    (uint8_t)code};
    frame(r, 0x3, 0, sid, p, 4);
}

static int flush_raw(struct raw *r)
{
    vega_ssize w = r->out_len ? vega_stream_write(r->s, r->out, r->out_len, NULL, DL(5000)) : 0;
    r->out_len = 0;
    return w < 0 ? (int)w : 0;
}

static void raw_open(struct raw *r, const vega_addr *a)
{
    memset(r, 0, sizeof *r);
    r->in = malloc(RAW_IN);
    VCHECK(r->in != NULL);
    vega_sock *sk;
    VCHECK_EQ(vega_tcp_connect(&sk, a, DL(5000)), 0);
    VCHECK_EQ(vega_stream_from_sock(&r->s, sk, 0), 0);
    put(r, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
    frame(r, 0x4, 0, 0, NULL, 0);   /* SETTINGS, empty */
    frame(r, 0x4, 0x1, 0, NULL, 0); /* and the ACK of the server's, ahead */
    VCHECK_EQ(flush_raw(r), 0);
}

static void raw_close(struct raw *r)
{
    vega_stream_close(r->s, DL(1000));
    free(r->out);
    free(r->in);
}

/* Reads what comes for up to ms (or until EOF), counting frames. Returns true at EOF. */
static bool raw_poll(struct raw *r, uint64_t ms)
{
    vega_deadline dl = DL(ms);
    while (!r->eof) {
        vega_ssize k = vega_stream_read(r->s, r->in + r->have, RAW_IN - r->have, dl);
        if (k == -ETIMEDOUT)
            break;
        if (k <= 0) {
            r->eof = true;
            break;
        }
        r->have += (size_t)k;
        size_t off = 0;
        while (r->have - off >= 9) {
            const uint8_t *f = r->in + off;
            size_t len = (size_t)f[0] << 16 | (size_t)f[1] << 8 | f[2];
            if (r->have - off < 9 + len)
                break;
            uint32_t code = len >= 4 ? (uint32_t)f[9] << 24 | (uint32_t)f[10] << 16 |
                                           (uint32_t)f[11] << 8 | f[12]
                                     : 0;
            if (f[3] == 0x7 && len >= 8) {
                r->goaways++;
                r->goaway_code =
                    (uint32_t)f[13] << 24 | (uint32_t)f[14] << 16 | (uint32_t)f[15] << 8 | f[16];
            } else if (f[3] == 0x3) {
                r->rsts++;
                r->rst_refused += code == VEGA_H2_REFUSED_STREAM;
                r->rst_protocol += code == VEGA_H2_PROTOCOL_ERROR;
            } else if (f[3] == 0x1) {
                r->responses++;
                /* ":status: 431" is static index 13? no: 431 is a literal; look for it */
                if (memmem(f + 9, len, "431", 3))
                    r->s431++;
            }
            off += 9 + len;
        }
        memmove(r->in, r->in + off, r->have - off);
        r->have -= off;
    }
    return r->eof;
}

/* ---- a victim: a normal client that keeps asking on its own connection ----------------------- */

struct victim {
    struct ts *t;
    atomic_bool stop, done;
    atomic_int ok, bad;
    vega_task *task;
};

static void *victim_main(void *arg)
{
    struct victim *v = arg;
    struct tc *c = tc_connect(&v->t->addr, NULL);
    while (!atomic_load(&v->stop) && c->n < TC_STREAMS - 2) {
        struct tc_stream *s = tc_request(c, "GET", "/hello", NULL, NULL, 0);
        if (tc_run(c, tc_closed, s, 5000) && s->status == 200 && s->body_len == 8 &&
            memcmp(s->body, "hello h2", 8) == 0)
            atomic_fetch_add(&v->ok, 1);
        else
            atomic_fetch_add(&v->bad, 1);
        vega_sleep_ms(5);
    }
    tc_free(c);
    atomic_store(&v->done, true);
    return NULL;
}

static void victim_start(struct victim *v, struct ts *t)
{
    v->t = t;
    atomic_store(&v->stop, false);
    atomic_store(&v->done, false);
    atomic_store(&v->ok, 0);
    atomic_store(&v->bad, 0);
    VCHECK_EQ(vega_task_spawn(&v->task, victim_main, v), 0);
}

/* Stops the victim once the attack is over: it must have been served all along (no request
 * failed) and still be served now, so it is told to stop only after at_least more answers (or
 * once it used all its streams), within 10 s. Told at once, it could end before its first
 * answer: an attack over in 40 ms under ASan left it with none. */
static void victim_stop(struct victim *v, int at_least)
{
    int want = atomic_load(&v->ok) + at_least;
    for (int i = 0; i < 5000 && atomic_load(&v->ok) < want && !atomic_load(&v->done); i++)
        vega_sleep_ms(2);
    bool used_up = atomic_load(&v->done);
    atomic_store(&v->stop, true);
    VCHECK_EQ(vega_task_join(v->task, NULL, DL(10000)), 0);
    VCHECK_EQ(atomic_load(&v->bad), 0);
    VCHECK(atomic_load(&v->ok) >= (used_up ? at_least : want));
}

/* A server with the counting allocator; returns what it holds when it only listens. */
static size_t start(struct ts *t, vega_http_server_opts *o)
{
    cmem_init();
    *o = ts_opts();
    o->on_log = NULL;
    o->mem = &cm.mem;
    vega_http_server_h2_opts h = ts_h2c();
    ts_start(t, o, &h);
    vega_sleep_ms(10);
    return atomic_load(&cm.live);
}

/* What the server holds, less the active blocks its pool keeps for the next connections
 * (pool.c: bounded, given back after a window unused; tests/unit/http_server/pool_test.c). */
static size_t held_apart_from_pool(const struct ts *t)
{
    size_t pooled = vega__srv_pool_held(t->srv);
    VCHECK(pooled <= SRV_POOL_SLOTS * SRV_POOL_MAX);
    return atomic_load(&cm.live) - pooled * t->srv->active_size;
}

/* After the attacker left: nothing of it is held (the victim's parked connection aside). The
 * two counts are read one after the other while connections still close and blocks move in and
 * out of the pool, so one reading may be off either way: wait for the exact figure. */
static void check_back(const struct ts *t, size_t base)
{
    vega_deadline dl = DL(3000);
    while (held_apart_from_pool(t) != base && vega_now() < dl)
        vega_sleep_ms(5);
    VCHECK_EQ(held_apart_from_pool(t), base);
}

/* ---- resets ---------------------------------------------------------------------------------- */

/* CVE-2023-44487: HEADERS then RST_STREAM, over and over, in one burst. The server answers
 * GOAWAY ENHANCE_YOUR_CALM past its reset budget (1000 at once, 33/s), having started few
 * handlers: a stream reset in the same read as its head gets no task at all. */
static void body_rapid_reset(void)
{
    struct ts t;
    vega_http_server_opts o;
    size_t base = start(&t, &o);
    struct victim v;
    victim_start(&v, &t);
    uint64_t req0 = ts_stats(&t).requests;
    struct raw a;
    raw_open(&a, &t.addr);
    for (uint32_t i = 0; i < 3000; i++) {
        headers(&a, 1 + 2 * i, "GET", "/hang", true);
        rst(&a, 1 + 2 * i, VEGA_H2_CANCEL);
    }
    (void)flush_raw(&a);
    VCHECK(raw_poll(&a, 5000));
    VCHECK_EQ(a.goaways, 1);
    VCHECK_EQ(a.goaway_code, VEGA_H2_ENHANCE_YOUR_CALM);
    /* handlers started: at most the burst the budget allows, far fewer in practice */
    uint64_t started = ts_stats(&t).requests - req0;
    VCHECK(started <= 1001 + 200);
    VCHECK(atomic_load(&cm.peak) < base + (16u << 20));
    raw_close(&a);
    victim_stop(&v, 1);
    check_back(&t, base);
    VCHECK_EQ(atomic_load(&ts_hang_live), 0);
    ts_stop(&t, 1000);
}
VTEST(rapid_reset)
{
    vtest_run(body_rapid_reset, 2);
}

/* CVE-2025-8671: the client makes the server reset its streams (DATA past the content-length
 * it announced: §8.1.1 malformed, a stream error) -- those resets count as its own. */
static void body_made_you_reset(void)
{
    struct ts t;
    vega_http_server_opts o;
    size_t base = start(&t, &o);
    struct victim v;
    victim_start(&v, &t);
    struct raw a;
    raw_open(&a, &t.addr);
    for (uint32_t i = 0; i < 3000; i++) {
        uint8_t b[256];
        size_t n = req_block(b, "POST", "/echo");
        n += lit(b + n, "content-length", "1");
        frame(&a, 0x1, 0x4, 1 + 2 * i, b, n);
        frame(&a, 0x0, 0x1, 1 + 2 * i, "xy", 2);
    }
    (void)flush_raw(&a);
    VCHECK(raw_poll(&a, 5000));
    VCHECK_EQ(a.goaway_code, VEGA_H2_ENHANCE_YOUR_CALM);
    VCHECK(a.rst_protocol >= 100);
    VCHECK(atomic_load(&cm.peak) < base + (16u << 20));
    raw_close(&a);
    victim_stop(&v, 1);
    check_back(&t, base);
    ts_stop(&t, 1000);
}
VTEST(made_you_reset)
{
    vtest_run(body_made_you_reset, 2);
}

/* Handlers that never end, on streams the client resets and opens again. A reset cancels the
 * handler (/hang ends at once); one that ignores cancellation (/stubborn) keeps running, but a
 * connection has at most twice its stream limit of handlers alive: beyond, REFUSED_STREAM. */
static void body_stream_abuse(void)
{
    struct ts t;
    vega_http_server_opts o;
    size_t base = start(&t, &o);
    struct victim v;
    victim_start(&v, &t);
    struct raw a;
    raw_open(&a, &t.addr);
    atomic_store(&ts_hang_live, 0);
    /* 101 at once: the 101st is over SETTINGS_MAX_CONCURRENT_STREAMS (100) */
    for (uint32_t i = 0; i < 101; i++)
        headers(&a, 1 + 2 * i, "GET", "/hang", true);
    (void)flush_raw(&a);
    vega_deadline dl = DL(5000);
    while (atomic_load(&ts_hang_live) < 100 && vega_now() < dl)
        raw_poll(&a, 10);
    VCHECK_EQ(atomic_load(&ts_hang_live), 100);
    raw_poll(&a, 50);
    VCHECK_EQ(a.rst_refused, 1);
    /* reset them all: their handlers are cancelled and end */
    for (uint32_t i = 0; i < 100; i++)
        rst(&a, 1 + 2 * i, VEGA_H2_CANCEL);
    (void)flush_raw(&a);
    dl = DL(5000);
    while (atomic_load(&ts_hang_live) > 0 && vega_now() < dl)
        raw_poll(&a, 10);
    VCHECK_EQ(atomic_load(&ts_hang_live), 0);
    /* handlers that ignore it: 100, reset; 100 more, reset; then every new stream is refused */
    atomic_store(&ts_stubborn_live, 0);
    atomic_store(&ts_stubborn_release, false);
    uint32_t sid = 203;
    for (int round = 0; round < 3; round++) {
        int refused0 = a.rst_refused;
        for (uint32_t i = 0; i < 100; i++)
            headers(&a, sid + 2 * i, "GET", "/stubborn", true);
        (void)flush_raw(&a);
        dl = DL(5000);
        int want_live = round < 2 ? 100 * (round + 1) : 200, want_refused = round < 2 ? 0 : 100;
        while ((atomic_load(&ts_stubborn_live) < want_live ||
                a.rst_refused - refused0 < want_refused) &&
               vega_now() < dl)
            raw_poll(&a, 10);
        raw_poll(&a, 50);
        VCHECK_EQ(atomic_load(&ts_stubborn_live), want_live);
        VCHECK_EQ(a.rst_refused - refused0, want_refused);
        for (uint32_t i = 0; i < 100; i++)
            rst(&a, sid + 2 * i, VEGA_H2_CANCEL);
        (void)flush_raw(&a);
        sid += 200;
    }
    VCHECK(!a.eof);
    VCHECK(atomic_load(&cm.peak) < base + (8u << 20));
    atomic_store(&ts_stubborn_release, true);
    dl = DL(5000);
    while (atomic_load(&ts_stubborn_live) > 0 && vega_now() < dl)
        raw_poll(&a, 10);
    VCHECK_EQ(atomic_load(&ts_stubborn_live), 0);
    raw_close(&a);
    victim_stop(&v, 1);
    check_back(&t, base);
    ts_stop(&t, 1000);
}
VTEST(stream_count_abuse)
{
    vtest_run(body_stream_abuse, 2);
}

/* ---- header blocks -----------------------------------------------------------------------------
 */

/* A header block in endless CONTINUATION frames (CVE-2024-27316 and kin): at most 32 per block
 * and max_header_list_size + 4 KiB of block bytes, then GOAWAY ENHANCE_YOUR_CALM; nothing of it
 * reaches a handler. */
static void body_continuation(void)
{
    struct ts t;
    vega_http_server_opts o;
    size_t base = start(&t, &o);
    struct victim v;
    victim_start(&v, &t);
    for (int kind = 0; kind < 2; kind++) {
        struct raw a;
        raw_open(&a, &t.addr);
        uint8_t b[256];
        size_t n = req_block(b, "GET", "/hello");
        frame(&a, 0x1, 0x1, 1, b, n); /* no END_HEADERS */
        static uint8_t junk[16384];
        memset(junk, 0x40, sizeof junk); /* bytes never decoded: the block is too long first */
        for (int i = 0; i < 1000; i++)
            frame(&a, 0x9, 0, 1, junk, kind == 0 ? 10 : sizeof junk);
        (void)flush_raw(&a);
        VCHECK(raw_poll(&a, 5000));
        VCHECK_EQ(a.goaway_code, VEGA_H2_ENHANCE_YOUR_CALM);
        raw_close(&a);
    }
    VCHECK(atomic_load(&cm.peak) < base + (4u << 20));
    victim_stop(&v, 1);
    check_back(&t, base);
    ts_stop(&t, 1000);
}
VTEST(continuation_flood)
{
    vtest_run(body_continuation, 2);
}

/* HPACK bomb (RFC 9113 §10.5.1): one 4,000-byte table entry referenced 1,000 times is a 4 MB
 * header list in 1 KB; past max_header_list_size (64 KiB) the request is answered 431 without
 * the list ever being held, and the connection goes on. */
static void body_hpack_bomb(void)
{
    struct ts t;
    vega_http_server_opts o;
    size_t base = start(&t, &o);
    struct victim v;
    victim_start(&v, &t);
    struct raw a;
    raw_open(&a, &t.addr);
    static uint8_t b[8192];
    size_t n = req_block(b, "GET", "/hello");
    b[n++] = 0x40; /* literal with incremental indexing, new name */
    b[n++] = 6;
    memcpy(b + n, "x-bomb", 6);
    n += 6;
    b[n++] = 0x7f; /* value length 4000: 127 + 3873 in a prefixed integer */
    b[n++] = (uint8_t)((4000 - 127) % 128 + 128);
    b[n++] = (uint8_t)((4000 - 127) / 128);
    memset(b + n, 'A', 4000);
    n += 4000;
    for (int i = 0; i < 1000; i++)
        b[n++] = 0x80 | 62; /* indexed: the entry just added */
    frame(&a, 0x1, 0x5, 1, b, n);
    headers(&a, 3, "GET", "/hello", true); /* and a normal request after it */
    (void)flush_raw(&a);
    vega_deadline dl = DL(5000);
    while (a.responses < 2 && !a.eof && vega_now() < dl)
        raw_poll(&a, 50);
    VCHECK(!a.eof);
    VCHECK_EQ(a.s431, 1);
    VCHECK_EQ(a.responses, 2);
    VCHECK(atomic_load(&cm.peak) < base + (2u << 20));
    raw_close(&a);
    victim_stop(&v, 1);
    check_back(&t, base);
    ts_stop(&t, 1000);
}
VTEST(hpack_bomb)
{
    vtest_run(body_hpack_bomb, 2);
}

/* ---- floods ---------------------------------------------------------------------------------- */

enum flood {
    F_SETTINGS,
    F_PING,
    F_PRIORITY,
    F_EMPTY_DATA,
};

/* Frames that cost work and do nothing (CVE-2019-9512..9518): past the budget (1000 at once,
 * 33/s), GOAWAY ENHANCE_YOUR_CALM. The attacker never reads, so the answers queued for it are
 * bounded as well. */
static void body_floods(void)
{
    struct ts t;
    vega_http_server_opts o;
    size_t base = start(&t, &o);
    struct victim v;
    victim_start(&v, &t);
    for (int kind = F_SETTINGS; kind <= F_EMPTY_DATA; kind++) {
        struct raw a;
        raw_open(&a, &t.addr);
        if (kind == F_EMPTY_DATA)
            headers(&a, 1, "POST", "/echo", false);
        for (int i = 0; i < 5000; i++) {
            static const uint8_t ping[8], prio[5] = {0, 0, 0, 1, 16};
            if (kind == F_SETTINGS)
                frame(&a, 0x4, 0, 0, NULL, 0);
            else if (kind == F_PING)
                frame(&a, 0x6, 0, 0, ping, 8);
            else if (kind == F_PRIORITY)
                frame(&a, 0x2, 0, 3, prio, 5);
            else
                frame(&a, 0x0, 0, 1, NULL, 0);
        }
        (void)flush_raw(&a);
        VCHECK(raw_poll(&a, 5000));
        VCHECK_EQ(a.goaway_code, VEGA_H2_ENHANCE_YOUR_CALM);
        raw_close(&a);
        VCHECK(atomic_load(&cm.peak) < base + (4u << 20));
    }
    victim_stop(&v, 1);
    check_back(&t, base);
    ts_stop(&t, 1000);
}
VTEST(floods)
{
    vtest_run(body_floods, 2);
}

/* WINDOW_UPDATE is never useless work by itself: 50,000 of them (+1 each, on the connection and
 * on a stream) are taken at the cost of their bytes, the connection goes on and answers. */
static void body_window_update_flood(void)
{
    struct ts t;
    vega_http_server_opts o;
    size_t base = start(&t, &o);
    struct victim v;
    victim_start(&v, &t);
    struct raw a;
    raw_open(&a, &t.addr);
    headers(&a, 1, "GET", "/file", true);
    static const uint8_t one[4] = {0, 0, 0, 1};
    for (int i = 0; i < 50000; i++)
        frame(&a, 0x8, 0, (uint32_t)(i % 2), one, 4);
    headers(&a, 3, "GET", "/hello", true);
    vega_tstamp t0 = vega_now();
    (void)flush_raw(&a);
    while (a.responses < 2 && !raw_poll(&a, 200) && vega_now() - t0 < 5000 * VEGA_NS_PER_MS)
        ;
    VCHECK_EQ(a.responses, 2);
    VCHECK(!a.eof);
    VCHECK(atomic_load(&cm.peak) < base + (4u << 20));
    raw_close(&a);
    victim_stop(&v, 1);
    check_back(&t, base);
    ts_stop(&t, 1000);
}
VTEST(window_update_flood)
{
    ts_make_file();
    vtest_run(body_window_update_flood, 2);
    close(ts_file_fd);
}

/* ---- clients that do not take what they asked for -------------------------------------------- */

/* The connection's window never opens (the client sends no WINDOW_UPDATE) while responses wait
 * for it: each is reset after write_timeout (by its writer, or the connection's stall check);
 * a client that opens every window and then does not read its socket is closed after
 * write_timeout. What the server held for them comes back. */
static void body_stalls(void)
{
    struct ts t;
    vega_http_server_opts o;
    cmem_init();
    o = ts_opts();
    o.on_log = NULL;
    o.mem = &cm.mem;
    o.write_timeout_ns = 300 * VEGA_NS_PER_MS;
    vega_http_server_h2_opts h = ts_h2c();
    ts_start(&t, &o, &h);
    vega_sleep_ms(10);
    size_t base = atomic_load(&cm.live);
    struct victim v;
    victim_start(&v, &t);
    for (int kind = 0; kind < 2; kind++) {
        struct raw a;
        raw_open(&a, &t.addr);
        if (kind == 1) {
            /* SETTINGS_INITIAL_WINDOW_SIZE 2^31 - 1, and the connection's window as large */
            static const uint8_t st[6] = {0, 4, 0x7f, 0xff, 0xff, 0xff};
            static const uint8_t wu[4] = {0x7f, 0xff, 0, 0};
            frame(&a, 0x4, 0, 0, st, 6);
            frame(&a, 0x8, 0, 0, wu, 4);
        }
        for (uint32_t i = 0; i < 20; i++)
            headers(&a, 1 + 2 * i, "GET", "/big", true);
        (void)flush_raw(&a);
        vega_tstamp t0 = vega_now();
        if (kind == 0) {
            /* reads, but 65,535 bytes of connection window are all it ever gives */
            vega_deadline dl = DL(5000);
            while (a.rsts < 20 && !a.eof && vega_now() < dl)
                raw_poll(&a, 50);
            VCHECK(a.rsts == 20 || a.goaway_code == VEGA_H2_ENHANCE_YOUR_CALM);
        } else {
            /* does not read at all: the server's write times out, it closes */
            vega_sleep_ms(1500);
            VCHECK(raw_poll(&a, 5000));
        }
        VCHECK(vega_now() - t0 >= 250 * VEGA_NS_PER_MS);
        raw_close(&a);
        VCHECK(atomic_load(&cm.peak) < base + (24u << 20));
    }
    victim_stop(&v, 1);
    check_back(&t, base);
    ts_stop(&t, 1000);
}
VTEST(zero_window_and_no_reader)
{
    vtest_run(body_stalls, 2);
}
