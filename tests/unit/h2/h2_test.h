/* SPDX-License-Identifier: MIT */
/* Helpers for the HTTP/2 tests: an event recorder, a client and a server wired in memory, and a
 * raw peer that sends hand-built frames to one core and reads back the frames it answers. */
#ifndef VEGA_TEST_H2_H
#define VEGA_TEST_H2_H

#include <stdarg.h>

#include <vega/h2.h>

#include "base.h"
#include "tmem.h"
#include "vtest.h"

/* ---- an event recorder ---- */

#define REC_BODY 65536

struct rec {
    char log[65536];
    size_t len;
    vega_h2_conn *conn;
    bool consume; /* consume body bytes at once (else the test does) */
    int fail_on;  /* the n-th event returns nonzero (0 = never) */
    int events;
    size_t data_bytes; /* body bytes received, all streams */
    uint8_t body[REC_BODY];
    size_t body_len; /* the last stream's body, kept (first REC_BODY bytes) */
    int32_t last_stream;
    const uint8_t *expect; /* when set, every stream's body must be a prefix of this */
    size_t off[256];       /* per stream (id / 2): body bytes checked */
    bool bad;              /* a body byte differed */
    int closes, headers, writable;
    uint32_t last_close_code;
    vega_h2_close last_close_how;
    vega_h2_head_kind last_kind;
    int last_status;
    bool ended; /* END_STREAM seen on the last stream */
    /* hooks run from the callbacks (a server answering, an uploader), NULL = none */
    int (*on_head)(struct rec *r, int32_t id, const vega_h2_head *h);
    int (*on_writable)(struct rec *r, int32_t id);
    int (*on_end)(struct rec *r, int32_t id);
    void *hook_ud;
};

static inline void rec_app(struct rec *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void rec_app(struct rec *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(r->log + r->len, sizeof r->log - r->len, fmt, ap);
    va_end(ap);
    if (k > 0 && (size_t)k < sizeof r->log - r->len)
        r->len += (size_t)k;
}

static inline int rec_ev(struct rec *r)
{
    return ++r->events == r->fail_on;
}

static inline int rec_headers(void *ud, int32_t id, const vega_h2_head *h)
{
    struct rec *r = ud;
    int x = rec_ev(r);
    r->headers++;
    r->last_stream = id;
    r->last_kind = h->kind;
    r->last_status = h->status;
    r->ended = h->end_stream;
    if (h->kind == VEGA_H2_HEAD_REQUEST) {
        r->body_len = 0;
        rec_app(r, "H%d req %.*s %.*s%s\n", id, (int)h->method.len,
                h->method.ptr ? h->method.ptr : "", (int)h->path.len,
                h->path.ptr ? h->path.ptr : "", h->end_stream ? " END" : "");
    } else {
        if (h->kind == VEGA_H2_HEAD_RESPONSE)
            r->body_len = 0;
        rec_app(r, "H%d k%d s%d n%zu%s\n", id, (int)h->kind, h->status, h->nfields,
                h->end_stream ? " END" : "");
    }
    if (!x && r->on_head)
        x = r->on_head(r, id, h);
    return x;
}

static inline int rec_data(void *ud, int32_t id, const uint8_t *d, size_t n, unsigned flags)
{
    struct rec *r = ud;
    int x = rec_ev(r);
    r->data_bytes += n;
    r->last_stream = id;
    size_t k = n < REC_BODY - r->body_len ? n : REC_BODY - r->body_len;
    if (k)
        memcpy(r->body + r->body_len, d, k);
    r->body_len += k;
    if (r->expect && id / 2 < 256) {
        if (n && memcmp(d, r->expect + r->off[id / 2], n) != 0)
            r->bad = true;
        r->off[id / 2] += n;
    }
    if (r->consume && n && vega_h2_stream_consume(r->conn, id, n) != 0)
        x = 1;
    if (flags & VEGA_H2_FLAG_END_STREAM) {
        r->ended = true;
        rec_app(r, "D%d END\n", id);
        if (!x && r->on_end)
            x = r->on_end(r, id);
    }
    return x;
}

static inline int rec_close(void *ud, int32_t id, uint32_t code, vega_h2_close how)
{
    struct rec *r = ud;
    int x = rec_ev(r);
    r->closes++;
    r->last_close_code = code;
    r->last_close_how = how;
    rec_app(r, "C%d %s how%d\n", id, vega_h2_error_code_name(code), (int)how);
    return x;
}

static inline int rec_writable(void *ud, int32_t id)
{
    struct rec *r = ud;
    r->writable++;
    int x = rec_ev(r);
    if (!x && r->on_writable)
        x = r->on_writable(r, id);
    return x;
}

static inline int rec_settings(void *ud, const vega_h2_settings *s)
{
    struct rec *r = ud;
    rec_app(r, "S win%u fs%u mcs%u\n", s->initial_window_size, s->max_frame_size,
            s->max_concurrent_streams);
    return rec_ev(r);
}

static inline int rec_ping(void *ud, uint64_t opaque)
{
    struct rec *r = ud;
    rec_app(r, "P %llx\n", (unsigned long long)opaque);
    return rec_ev(r);
}

static inline int rec_goaway(void *ud, uint32_t last, uint32_t code, const uint8_t *d, size_t n)
{
    struct rec *r = ud;
    rec_app(r, "G %u %s %.*s\n", last, vega_h2_error_code_name(code), (int)n, (const char *)d);
    return rec_ev(r);
}

static inline int rec_prio(void *ud, int32_t id, const char *v, size_t n)
{
    struct rec *r = ud;
    rec_app(r, "PU %d %.*s\n", id, (int)n, v);
    return rec_ev(r);
}

static const vega_h2_callbacks rec_cbs = {rec_headers,  rec_data, rec_close,  rec_writable,
                                          rec_settings, rec_ping, rec_goaway, rec_prio};

static inline bool rec_has(const struct rec *r, const char *s)
{
    return strstr(r->log, s) != NULL;
}

/* ---- a client and a server in memory ---- */

struct pair {
    vega_h2_conn *cli, *srv;
    struct rec rc, rs;
    vega_tstamp now;
    size_t chunk; /* bytes moved per write call (0 = 64 KiB) */
    uint64_t moved;
};

/* Moves bytes both ways until neither side has anything to write. Returns the first read
 * error (0 if none). */
static inline int pair_run(struct pair *p)
{
    static uint8_t buf[65536];
    size_t chunk = p->chunk ? p->chunk : sizeof buf;
    for (int rounds = 0; rounds < 1000000; rounds++) {
        bool moved = false;
        vega_h2_conn *from[2] = {p->cli, p->srv}, *to[2] = {p->srv, p->cli};
        for (int i = 0; i < 2; i++) {
            if (!from[i] || !to[i])
                continue;
            vega_ssize n = vega_h2_conn_write(from[i], buf, chunk, p->now);
            VCHECK(n >= 0);
            if (n > 0) {
                moved = true;
                p->moved += (uint64_t)n;
                int rc = vega_h2_conn_read(to[i], buf, (size_t)n, p->now);
                if (rc != 0)
                    return rc;
            }
        }
        if (!moved)
            return 0;
    }
    vtest_fail(__FILE__, __LINE__, "pair_run did not settle");
    return 0;
}

static inline void pair_init(struct pair *p, const vega_h2_opts *co, const vega_h2_opts *so)
{
    memset(p, 0, sizeof *p);
    VCHECK_EQ(vega_h2_conn_client_new(&p->cli, &rec_cbs, co, &p->rc), 0);
    VCHECK_EQ(vega_h2_conn_server_new(&p->srv, &rec_cbs, so, &p->rs), 0);
    p->rc.conn = p->cli;
    p->rs.conn = p->srv;
    p->rc.consume = p->rs.consume = true;
}

static inline void pair_fini(struct pair *p)
{
    vega_h2_conn_free(p->cli);
    vega_h2_conn_free(p->srv);
}

#define FLD(n, v)                                                                                  \
    {                                                                                              \
        {n, sizeof(n) - 1}, {v, sizeof(v) - 1}, VEGA_HPACK_INDEX_AUTO                              \
    }

static const vega_hpack_field get_root[] = {FLD(":method", "GET"), FLD(":scheme", "https"),
                                            FLD(":authority", "example.com"), FLD(":path", "/")};

/* ---- a raw peer: hand-built frames in, the core's frames out ---- */

struct raw {
    vega_h2_conn *c;
    struct rec r;
    bool server; /* the core under test is a server */
    vega_hpack_encoder *enc;
    vega_hpack_decoder *dec;
    uint8_t out[1 << 18];
    size_t out_len, parsed;
    int rc; /* the last read's result */
    vega_tstamp now;
};

static inline void raw_put_frame(uint8_t *b, size_t *n, uint8_t type, uint8_t flags, uint32_t sid,
                                 const void *payload, size_t len)
{
    b[(*n)++] = (uint8_t)(len >> 16);
    b[(*n)++] = (uint8_t)(len >> 8);
    b[(*n)++] = (uint8_t)len;
    b[(*n)++] = type;
    b[(*n)++] = flags;
    b[(*n)++] = (uint8_t)(sid >> 24);
    b[(*n)++] = (uint8_t)(sid >> 16);
    b[(*n)++] = (uint8_t)(sid >> 8);
    b[(*n)++] = (uint8_t)sid;
    if (len)
        memcpy(b + *n, payload, len);
    *n += len;
}

/* Feeds bytes to the core; keeps the result in r->rc. */
static inline int raw_send(struct raw *r, const void *b, size_t n)
{
    r->rc = vega_h2_conn_read(r->c, b, n, r->now);
    return r->rc;
}

static inline int raw_frame(struct raw *r, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
                            size_t len)
{
    static uint8_t b[1 << 17];
    size_t n = 0;
    VCHECK(len + 9 <= sizeof b);
    raw_put_frame(b, &n, type, flags, sid, p, len);
    return raw_send(r, b, n);
}

/* Collects everything the core writes. */
static inline void raw_drain(struct raw *r)
{
    for (;;) {
        VCHECK(r->out_len < sizeof r->out);
        vega_ssize k =
            vega_h2_conn_write(r->c, r->out + r->out_len, sizeof r->out - r->out_len, r->now);
        VCHECK(k >= 0);
        if (k == 0)
            break;
        r->out_len += (size_t)k;
    }
}

/* The next whole frame the core wrote, or false. */
struct rframe {
    uint32_t len;
    uint8_t type, flags;
    uint32_t sid;
    const uint8_t *p;
};

static inline uint32_t raw_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline bool raw_next(struct raw *r, struct rframe *f)
{
    raw_drain(r);
    if (r->out_len - r->parsed < 9)
        return false;
    const uint8_t *h = r->out + r->parsed;
    f->len = (uint32_t)h[0] << 16 | (uint32_t)h[1] << 8 | h[2];
    f->type = h[3];
    f->flags = h[4];
    f->sid = raw_get32(h + 5) & 0x7fffffffu;
    if (r->out_len - r->parsed < 9 + f->len)
        return false;
    f->p = h + 9;
    r->parsed += 9 + f->len;
    return true;
}

/* Skips frames until one of type (on sid, when sid >= 0) comes; false if none. */
static inline bool raw_find(struct raw *r, uint8_t type, int64_t sid, struct rframe *f)
{
    while (raw_next(r, f))
        if (f->type == type && (sid < 0 || f->sid == (uint32_t)sid))
            return true;
    return false;
}

/* A connection error: read failed with VEGA_ERR_PROTO, a GOAWAY with code went out, and
 * vega_h2_conn_get_error agrees. */
static inline void raw_expect_goaway_(struct raw *r, uint32_t code, const char *file, int line)
{
    if (r->rc != VEGA_ERR_PROTO)
        vtest_fail(file, line, "read returned %d, not VEGA_ERR_PROTO (log: %s)", r->rc, r->r.log);
    struct rframe f;
    if (!raw_find(r, 7 /* GOAWAY */, 0, &f))
        vtest_fail(file, line, "no GOAWAY");
    uint32_t got = raw_get32(f.p + 4);
    if (got != code)
        vtest_fail(file, line, "GOAWAY %s, not %s", vega_h2_error_code_name(got),
                   vega_h2_error_code_name(code));
    vega_h2_error e;
    if (!vega_h2_conn_get_error(r->c, &e) || e.code != code || e.remote)
        vtest_fail(file, line, "get_error disagrees");
    if (vega_h2_conn_want_read(r->c))
        vtest_fail(file, line, "still wants to read");
}
#define raw_expect_goaway(r, code) raw_expect_goaway_((r), (code), __FILE__, __LINE__)

/* A stream error: read succeeded, RST_STREAM on sid with code went out, no GOAWAY. */
static inline void raw_expect_rst_(struct raw *r, uint32_t sid, uint32_t code, const char *file,
                                   int line)
{
    if (r->rc != 0)
        vtest_fail(file, line, "read returned %d (log: %s)", r->rc, r->r.log);
    struct rframe f;
    bool found = false;
    while (raw_next(r, &f)) {
        if (f.type == 7)
            vtest_fail(file, line, "GOAWAY %s instead of RST_STREAM",
                       vega_h2_error_code_name(raw_get32(f.p + 4)));
        if (f.type == 3 && f.sid == sid) {
            found = true;
            if (raw_get32(f.p) != code)
                vtest_fail(file, line, "RST_STREAM %s, not %s",
                           vega_h2_error_code_name(raw_get32(f.p)), vega_h2_error_code_name(code));
        }
    }
    if (!found)
        vtest_fail(file, line, "no RST_STREAM on %u", sid);
}
#define raw_expect_rst(r, sid, code) raw_expect_rst_((r), (sid), (code), __FILE__, __LINE__)

/* Nothing wrong: read succeeded, neither GOAWAY nor RST_STREAM. */
static inline void raw_expect_ok_(struct raw *r, const char *file, int line)
{
    if (r->rc != 0)
        vtest_fail(file, line, "read returned %d (log: %s)", r->rc, r->r.log);
    struct rframe f;
    while (raw_next(r, &f))
        if (f.type == 7 || f.type == 3)
            vtest_fail(file, line, "unexpected %s", f.type == 7 ? "GOAWAY" : "RST_STREAM");
}
#define raw_expect_ok(r) raw_expect_ok_((r), __FILE__, __LINE__)

/* Starts a core (server: the client's preface comes first) and completes the preface both
 * ways: our SETTINGS (none) and the ACK of the core's. */
static inline void raw_init(struct raw *r, bool server, const vega_h2_opts *o)
{
    memset(r, 0, sizeof *r);
    r->server = server;
    int rc = server ? vega_h2_conn_server_new(&r->c, &rec_cbs, o, &r->r)
                    : vega_h2_conn_client_new(&r->c, &rec_cbs, o, &r->r);
    VCHECK_EQ(rc, 0);
    r->r.conn = r->c;
    r->r.consume = true;
    VCHECK_EQ(vega_hpack_encoder_new(&r->enc, NULL), 0);
    VCHECK_EQ(vega_hpack_decoder_new(&r->dec, NULL), 0);
    if (server)
        VCHECK_EQ(raw_send(r, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24), 0);
    VCHECK_EQ(raw_frame(r, 4, 0, 0, NULL, 0), 0);
    VCHECK_EQ(raw_frame(r, 4, 1, 0, NULL, 0), 0);
    raw_drain(r);
    if (!server) {
        VCHECK(r->out_len >= 24 && memcmp(r->out, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24) == 0);
        r->parsed = 24;
    }
    struct rframe f;
    VCHECK(raw_next(r, &f) && f.type == 4 && !(f.flags & 1)); /* its SETTINGS first */
    r->parsed = r->out_len; /* the rest of the preface is not under test */
}

static inline void raw_fini(struct raw *r)
{
    vega_h2_conn_free(r->c);
    vega_hpack_encoder_free(r->enc);
    vega_hpack_decoder_free(r->dec);
}

/* HPACK-encodes fields with the raw peer's encoder into out; returns the length. */
static inline size_t raw_block(struct raw *r, const vega_hpack_field *f, size_t n, uint8_t *out,
                               size_t cap)
{
    vega_ssize k = vega_hpack_encode(r->enc, out, cap, f, n);
    VCHECK(k >= 0);
    return (size_t)k;
}

/* Sends a HEADERS frame (END_HEADERS) with fields on sid. */
static inline int raw_headers(struct raw *r, uint32_t sid, uint8_t flags, const vega_hpack_field *f,
                              size_t n)
{
    uint8_t blk[16384];
    size_t k = raw_block(r, f, n, blk, sizeof blk);
    return raw_frame(r, 1, (uint8_t)(flags | 4), sid, blk, k);
}

static inline int raw_get(struct raw *r, uint32_t sid, bool end)
{
    return raw_headers(r, sid, end ? 1 : 0, get_root, 4);
}

#endif
