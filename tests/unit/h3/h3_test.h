/* SPDX-License-Identifier: MIT */
/* What the HTTP/3 tests share: a recorder that turns callbacks into a text log (DATA merged per
 * stream, so any split of the input gives the same log), builders for frames and field
 * sections, and a script runner that feeds steps whole, byte by byte or cut at one point,
 * keeping what a blocked stream did not take until it is unblocked. */
#ifndef VEGA_H3_TEST_H
#define VEGA_H3_TEST_H

#include <stdarg.h>
#include <stdio.h>

#include "h3_core_int.h"
#include "hcodec.h"
#include "vtest.h"

/* ---- the recorder -------------------------------------------------------------------------- */

#define H3T_MAX_PENDING 64

typedef struct h3t_rec {
    char log[1 << 16];
    size_t len;
    bool in_data;
    uint64_t data_id;
    int fail_on; /* the event number whose callback returns nonzero (0: none) */
    int events;
    /* streams reported unblocked and not fed again yet */
    uint64_t unblocked[H3T_MAX_PENDING];
    size_t nunblocked, unblocked_total;
    /* stream errors seen (id, code) */
    uint64_t err_id, err_code;
    size_t nerrors;
    vega_h3_conn *conn;
} h3t_rec;

static inline void h3t_app(h3t_rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void h3t_app(h3t_rec *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(r->log + r->len, sizeof r->log - r->len, fmt, ap);
    va_end(ap);
    VCHECK(k >= 0 && (size_t)k < sizeof r->log - r->len);
    r->len += (size_t)k;
}

static inline int h3t_event(h3t_rec *r, bool data)
{
    if (r->in_data && !data)
        h3t_app(r, "\n");
    r->in_data = data;
    return ++r->events == r->fail_on;
}

static inline void h3t_str(h3t_rec *r, const char *tag, vega_http_str s)
{
    if (s.ptr)
        h3t_app(r, " %s=%.*s", tag, (int)s.len, s.ptr);
}

static inline int h3t_headers(void *ud, uint64_t id, const vega_h3_head *h)
{
    h3t_rec *r = ud;
    int x = h3t_event(r, false);
    static const char *const kinds[] = {"?", "head", "info", "trailers"};
    h3t_app(r, "H%llu %s", (unsigned long long)id, kinds[h->kind]);
    h3t_str(r, "m", h->method);
    h3t_str(r, "s", h->scheme);
    h3t_str(r, "a", h->authority);
    h3t_str(r, "p", h->path);
    h3t_str(r, "pr", h->protocol);
    if (h->status)
        h3t_app(r, " st=%d", h->status);
    if (h->has_content_length)
        h3t_app(r, " cl=%llu", (unsigned long long)h->content_length);
    if (h->priority.urgency != 3 || h->priority.incremental)
        h3t_app(r, " u=%u%s", h->priority.urgency, h->priority.incremental ? "i" : "");
    for (size_t i = 0; i < h->nfields; i++)
        h3t_app(r, " [%s%.*s: %.*s]", h->never_indexed[i] ? "!" : "", (int)h->fields[i].name.len,
                h->fields[i].name.ptr, (int)h->fields[i].value.len, h->fields[i].value.ptr);
    h3t_app(r, "\n");
    return x;
}

static inline int h3t_data(void *ud, uint64_t id, const uint8_t *d, size_t n)
{
    h3t_rec *r = ud;
    VCHECK(n > 0);
    bool cont = r->in_data && r->data_id == id;
    if (r->in_data && !cont)
        h3t_app(r, "\n");
    r->in_data = true;
    r->data_id = id;
    int x = ++r->events == r->fail_on;
    if (!cont)
        h3t_app(r, "D%llu ", (unsigned long long)id);
    h3t_app(r, "%.*s", (int)n, (const char *)d);
    return x;
}

static inline int h3t_end(void *ud, uint64_t id)
{
    h3t_rec *r = ud;
    int x = h3t_event(r, false);
    h3t_app(r, "E%llu\n", (unsigned long long)id);
    return x;
}

static inline int h3t_stream_error(void *ud, uint64_t id, uint64_t code)
{
    h3t_rec *r = ud;
    int x = h3t_event(r, false);
    h3t_app(r, "X%llu %s\n", (unsigned long long)id, vega_h3_error_name(code));
    r->err_id = id;
    r->err_code = code;
    r->nerrors++;
    return x;
}

static inline int h3t_unblocked(void *ud, uint64_t id)
{
    h3t_rec *r = ud;
    /* Not logged: whether a stream reports it depends on where its input was cut. */
    VCHECK(r->nunblocked < H3T_MAX_PENDING);
    r->unblocked[r->nunblocked++] = id;
    r->unblocked_total++;
    return ++r->events == r->fail_on;
}

static inline int h3t_settings(void *ud, const vega_h3_settings *s)
{
    h3t_rec *r = ud;
    int x = h3t_event(r, false);
    h3t_app(r, "S");
    if (s->max_field_section_size != UINT64_MAX)
        h3t_app(r, " mfs=%llu", (unsigned long long)s->max_field_section_size);
    h3t_app(r, " qcap=%llu qblk=%llu%s%s\n", (unsigned long long)s->qpack_max_table_capacity,
            (unsigned long long)s->qpack_blocked_streams, s->enable_connect_protocol ? " cp" : "",
            s->h3_datagram ? " dg" : "");
    return x;
}

static inline int h3t_goaway(void *ud, uint64_t id)
{
    h3t_rec *r = ud;
    int x = h3t_event(r, false);
    h3t_app(r, "G%llu\n", (unsigned long long)id);
    return x;
}

static inline int h3t_prio(void *ud, uint64_t id, const vega_h3_priority *p)
{
    h3t_rec *r = ud;
    int x = h3t_event(r, false);
    h3t_app(r, "P%llu u=%u%s\n", (unsigned long long)id, p->urgency, p->incremental ? "i" : "");
    return x;
}

static inline int h3t_stop(void *ud, uint64_t id, uint64_t code)
{
    h3t_rec *r = ud;
    int x = h3t_event(r, false);
    h3t_app(r, "T%llu %s\n", (unsigned long long)id, vega_h3_error_name(code));
    return x;
}

static const vega_h3_callbacks h3t_cbs = {h3t_headers,      h3t_data,      h3t_end,
                                          h3t_stream_error, h3t_unblocked, h3t_settings,
                                          h3t_goaway,       h3t_prio,      h3t_stop};

/* ---- builders ------------------------------------------------------------------------------ */

typedef struct h3t_buf {
    uint8_t b[1 << 16];
    size_t n;
} h3t_buf;

static inline void h3t_put(h3t_buf *b, const void *p, size_t n)
{
    VCHECK(b->n + n <= sizeof b->b);
    memcpy(b->b + b->n, p, n);
    b->n += n;
}

static inline void h3t_varint(h3t_buf *b, uint64_t v)
{
    uint8_t t[8];
    size_t k = vega__h3_varint_put(t, sizeof t, v);
    VCHECK(k > 0);
    h3t_put(b, t, k);
}

static inline void h3t_frame(h3t_buf *b, uint64_t type, const void *payload, size_t n)
{
    h3t_varint(b, type);
    h3t_varint(b, n);
    h3t_put(b, payload, n);
}

/* A field section without dynamic references: every line a literal with a literal name, raw,
 * so names and values go out exactly as given (uppercase, empty, anything). Lines are
 * "name: value" strings, NULL-terminated. */
static inline size_t h3t_section(uint8_t *out, size_t cap, const char *const *lines)
{
    size_t n = 0;
    out[n++] = 0;
    out[n++] = 0;
    for (size_t i = 0; lines[i]; i++) {
        const char *colon = strstr(lines[i] + 1, ": "); /* the first ": " ends the name */
        VCHECK(colon != NULL);
        size_t nl = (size_t)(colon - lines[i]);
        const char *v = colon + 2;
        size_t k =
            vega__hc_str_encode(out + n, cap - n, 0x20, 3, (const uint8_t *)lines[i], nl, false);
        VCHECK(k > 0);
        n += k;
        k = vega__hc_str_encode(out + n, cap - n, 0x00, 7, (const uint8_t *)v, strlen(v), false);
        VCHECK(k > 0);
        n += k;
    }
    return n;
}

/* A HEADERS frame with those lines. */
static inline void h3t_headers_frame(h3t_buf *b, const char *const *lines)
{
    uint8_t sec[8192];
    size_t n = h3t_section(sec, sizeof sec, lines);
    h3t_frame(b, VEGA__H3_FRAME_HEADERS, sec, n);
}

static inline void h3t_data_frame(h3t_buf *b, const char *s)
{
    h3t_frame(b, VEGA__H3_FRAME_DATA, s, strlen(s));
}

/* ---- scripts ------------------------------------------------------------------------------- */

typedef struct h3t_step {
    uint64_t id;
    const uint8_t *p;
    size_t n;
    bool fin;
} h3t_step;

enum h3t_mode {
    H3T_WHOLE,
    H3T_BYTES,
    H3T_CUT
};

typedef struct h3t_pending {
    uint64_t id;
    uint8_t b[8192];
    size_t n;
    bool fin, used;
} h3t_pending;

typedef struct h3t_run {
    h3t_rec *r;
    vega_h3_conn *c;
    h3t_pending pend[8];
    vega_ssize rc; /* the first negative result */
} h3t_run;

static inline h3t_pending *h3t_pend(h3t_run *u, uint64_t id)
{
    for (size_t i = 0; i < 8; i++)
        if (u->pend[i].used && u->pend[i].id == id)
            return &u->pend[i];
    return NULL;
}

static inline void h3t_feed_now(h3t_run *u, uint64_t id, const uint8_t *p, size_t n, bool fin);

static inline void h3t_feed_unblocked(h3t_run *u)
{
    while (u->r->nunblocked && u->rc >= 0) {
        uint64_t id = u->r->unblocked[--u->r->nunblocked];
        h3t_pending *q = h3t_pend(u, id);
        if (!q)
            continue;
        static uint8_t tmp[8192];
        size_t n = q->n;
        bool fin = q->fin;
        memcpy(tmp, q->b, n);
        q->used = false;
        h3t_feed_now(u, id, tmp, n, fin);
    }
}

static inline void h3t_feed_now(h3t_run *u, uint64_t id, const uint8_t *p, size_t n, bool fin)
{
    if (u->rc < 0)
        return;
    h3t_pending *q = h3t_pend(u, id);
    if (q) { /* the stream still waits: keep the order */
        VCHECK(q->n + n <= sizeof q->b);
        memcpy(q->b + q->n, p, n);
        q->n += n;
        q->fin = fin;
        return;
    }
    vega_ssize k = vega_h3_conn_read_stream(u->c, id, p, n, fin);
    if (k < 0) {
        u->rc = k;
        return;
    }
    VCHECK((size_t)k <= n);
    if ((size_t)k < n) {
        for (size_t i = 0; i < 8; i++)
            if (!u->pend[i].used) {
                q = &u->pend[i];
                break;
            }
        VCHECK(q != NULL);
        q->used = true;
        q->id = id;
        q->n = n - (size_t)k;
        VCHECK(q->n <= sizeof q->b);
        memcpy(q->b, p + k, q->n);
        q->fin = fin;
    }
    h3t_feed_unblocked(u);
}

/* Feeds the steps (mode BYTES: one byte at a time; CUT: step `cut_step` in two at `cut_at`),
 * then returns the log with a last line "R ok" or "R <error>". */
static inline const char *h3t_run_steps(h3t_rec *r, vega_h3_conn *c, const h3t_step *steps,
                                        size_t n, enum h3t_mode mode, size_t cut_step,
                                        size_t cut_at)
{
    h3t_run u = {.r = r, .c = c};
    r->conn = c;
    for (size_t i = 0; i < n; i++) {
        const h3t_step *s = &steps[i];
        if (mode == H3T_BYTES && s->n > 1) {
            for (size_t k = 0; k < s->n; k++)
                h3t_feed_now(&u, s->id, s->p + k, 1, s->fin && k + 1 == s->n);
        } else if (mode == H3T_CUT && i == cut_step && cut_at > 0 && cut_at < s->n) {
            h3t_feed_now(&u, s->id, s->p, cut_at, false);
            h3t_feed_now(&u, s->id, s->p + cut_at, s->n - cut_at, s->fin);
        } else {
            h3t_feed_now(&u, s->id, s->p, s->n, s->fin);
        }
    }
    if (r->in_data)
        h3t_app(r, "\n");
    r->in_data = false;
    if (u.rc < 0) {
        uint64_t code = vega_h3_conn_get_error(c, NULL);
        h3t_app(r, "R %s %s\n", vega_err_name((int)u.rc), code ? vega_h3_error_name(code) : "-");
    } else {
        h3t_app(r, "R ok\n");
    }
    return r->log;
}

/* A script: up to 8 steps with their bytes, and how to set the connection up. */
typedef struct h3t_script {
    h3t_buf bufs[8];
    h3t_step steps[8];
    size_t n;
} h3t_script;

static inline h3t_buf *h3t_step_add(h3t_script *s, uint64_t id, bool fin)
{
    VCHECK(s->n < 8);
    h3t_buf *b = &s->bufs[s->n];
    b->n = 0;
    s->steps[s->n] = (h3t_step){id, b->b, 0, fin};
    s->n++;
    return b;
}

static inline void h3t_script_done(h3t_script *s)
{
    for (size_t i = 0; i < s->n; i++)
        s->steps[i].n = s->bufs[i].n;
}

typedef vega_h3_conn *(*h3t_setup_fn)(h3t_rec *r);

static inline void h3t_check_one(const char *name, h3t_setup_fn setup, const h3t_script *s,
                                 const char *want, enum h3t_mode mode, size_t st, size_t at)
{
    static h3t_rec r;
    memset(&r, 0, sizeof r);
    vega_h3_conn *c = setup(&r);
    const char *got = h3t_run_steps(&r, c, s->steps, s->n, mode, st, at);
    if (strcmp(got, want) != 0)
        vtest_fail(__FILE__, __LINE__, "%s (mode %d, step %zu, cut %zu):\n%s\nwant:\n%s", name,
                   (int)mode, st, at, got, want);
    vega_h3_conn_free(c);
}

/* Runs the script whole, byte by byte and cut at every point of every step, each on a fresh
 * connection from setup; every log must equal want. */
static inline void h3t_check_script(const char *name, h3t_setup_fn setup, const h3t_script *s,
                                    const char *want)
{
    h3t_check_one(name, setup, s, want, H3T_WHOLE, 0, 0);
    h3t_check_one(name, setup, s, want, H3T_BYTES, 0, 0);
    for (size_t st = 0; st < s->n; st++)
        for (size_t at = 1; at < s->steps[st].n; at++)
            h3t_check_one(name, setup, s, want, H3T_CUT, st, at);
}

#endif
