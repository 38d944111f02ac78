/* SPDX-License-Identifier: MIT */
/* Fixtures of the HTTP/3 server attack tests (h3_attack_test.c): the server with a counting
 * allocator and a handler that counts its runs, a normal HTTP/3 client made of the QUIC
 * endpoint and the HTTP/3 core (h3_test.c's pattern) that keeps checking responses byte for
 * byte, and a raw attacker: a QUIC connection on which the test writes HTTP/3 and QPACK bytes
 * of its own (RFC 9114 §6.2, §7; RFC 9204 §4). */
#ifndef VEGA_TEST_H3_ATTACK_UTIL_H
#define VEGA_TEST_H3_ATTACK_UTIL_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vega/h3.h>
#include <vega/http_server.h>
#include <vega/qpack.h>
#include <vega/quic_ep.h>
#include <vega/sync.h>

#include "../quic/qtls_certs.h"
#include "../quic_ep/count_mem.h"
#include "h3_int.h"
#include "vtest.h"

#define DL(ms) vega_deadline_in_ms(ms)

/* ---- the server ----------------------------------------------------------------------------- */

static atomic_int h_entered, h_left; /* handler runs begun and ended */
static atomic_int h_root, h_body;    /* of them, for "/" (the raw attacker's) and "/body" */
static size_t big_len = 65536;       /* /big's length */

static inline uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 7 + i / 251);
}

/* /file: big_len bytes of pattern sent from a file (vega_http_response_sendfile: pieces the
 * QUIC stream references until acknowledged); big_file_make writes it. */
static int big_fd = -1;

static inline void big_file_make(void)
{
    if (big_fd >= 0)
        close(big_fd);
    char path[] = "/tmp/vega-h3-attack-XXXXXX";
    big_fd = mkstemp(path);
    VCHECK(big_fd >= 0);
    unlink(path);
    uint8_t *buf = malloc(big_len); /* not on a task's stack */
    VCHECK(buf != NULL);
    for (size_t i = 0; i < big_len; i++)
        buf[i] = pattern(i);
    VCHECK_EQ(write(big_fd, buf, big_len), (ssize_t)big_len);
    free(buf);
}

static inline void big_file_drop(void)
{
    if (big_fd >= 0)
        close(big_fd);
    big_fd = -1;
}

static inline int serve(vega_http_exchange *x)
{
    const vega_http_request *r = vega_http_exchange_request(x);
    if (vega_http_str_eq(r->path, "/file") && big_fd >= 0) {
        int rc = vega_http_response_start(x, 200, NULL, 0, big_len);
        if (rc == 0 && vega_http_response_sendfile(x, big_fd, 0, big_len, DL(20000)) < 0)
            rc = -EPIPE;
        return rc == 0 ? vega_http_response_finish(x, NULL, 0, DL(20000)) : rc;
    }
    if (vega_http_str_eq(r->path, "/hello"))
        return vega_http_respond(x, 200, NULL, 0, "hello h3", 8, DL(20000));
    if (vega_http_str_eq(r->path, "/big")) {
        int rc = vega_http_response_start(x, 200, NULL, 0, big_len);
        uint8_t buf[4096];
        for (size_t off = 0; rc == 0 && off < big_len; off += sizeof buf) {
            size_t n = big_len - off < sizeof buf ? big_len - off : sizeof buf;
            for (size_t i = 0; i < n; i++)
                buf[i] = pattern(off + i);
            if (vega_http_response_write(x, buf, n, DL(20000)) < 0)
                rc = -EPIPE;
        }
        return rc == 0 ? vega_http_response_finish(x, NULL, 0, DL(20000)) : rc;
    }
    if (vega_http_str_eq(r->path, "/body")) { /* reads the body to its end, then answers */
        uint8_t buf[4096];
        vega_ssize n;
        size_t got = 0;
        while ((n = vega_http_request_read(x, buf, sizeof buf, DL(20000))) > 0)
            got += (size_t)n;
        if (n < 0)
            return (int)n;
        char msg[32];
        int len = snprintf(msg, sizeof msg, "%zu", got);
        return vega_http_respond(x, 200, NULL, 0, msg, (size_t)len, DL(20000));
    }
    return vega_http_respond(x, 404, NULL, 0, NULL, 0, DL(20000));
}

static inline int handler(vega_http_exchange *x, void *user)
{
    (void)user;
    atomic_fetch_add(&h_entered, 1);
    const vega_http_request *r = vega_http_exchange_request(x);
    if (vega_http_str_eq(r->path, "/"))
        atomic_fetch_add(&h_root, 1);
    if (vega_http_str_eq(r->path, "/body"))
        atomic_fetch_add(&h_body, 1);
    int rc = serve(x);
    atomic_fetch_add(&h_left, 1);
    return rc;
}

struct hsrv {
    vega_http_server *s;
    vega_task *run;
    vega_addr addr;
    vega_crypto_cert_chain *chain;
    vega_crypto_key *key;
    vega_crypto_cert_store *ca;
    struct cmem mem;
    size_t base;
};

static inline void *run_task(void *arg)
{
    struct hsrv *v = arg;
    VCHECK_EQ(vega_http_server_run(v->s), 0);
    return NULL;
}

/* Starts a server; so and ho (may be NULL: defaults) are adjusted by the case first. */
static inline void hsrv_start(struct hsrv *v, vega_http_server_opts *so,
                              vega_http_server_h3_opts *ho)
{
    memset(v, 0, sizeof *v);
    cmem_init(&v->mem);
    atomic_store(&h_entered, 0);
    atomic_store(&h_left, 0);
    atomic_store(&h_root, 0);
    atomic_store(&h_body, 0);
    VCHECK_EQ(vega_crypto_cert_chain_new(&v->chain), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(v->chain, QT_SRV_P256_PEM, strlen(QT_SRV_P256_PEM)), 0);
    VCHECK_EQ(vega_crypto_key_load_private(&v->key, QT_SRV_P256_KEY, strlen(QT_SRV_P256_KEY)), 0);
    VCHECK_EQ(vega_crypto_cert_store_new(&v->ca, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(v->ca, QT_CA_PEM, strlen(QT_CA_PEM)), 0);
    vega_http_server_opts o;
    if (!so) {
        vega_http_server_opts_init(&o);
        so = &o;
    }
    so->handler = handler;
    so->mem = &v->mem.mem;
    VCHECK_EQ(vega_http_server_new(&v->s, so), 0);
    vega_http_server_h3_opts h;
    if (!ho) {
        vega_http_server_h3_opts_init(&h);
        ho = &h;
    }
    ho->chain = v->chain;
    ho->key = v->key;
    if (!ho->idle_timeout_ms)
        ho->idle_timeout_ms = 30000;
    vega_addr a;
    VCHECK_EQ(vega_addr_from_ip(&a, "127.0.0.1", 0), 0);
    VCHECK_EQ(vega_http_server_listen_h3(v->s, &a, 0, ho, &v->addr), 0);
    v->base = cmem_live(&v->mem);
    cmem_reset_peak(&v->mem);
    VCHECK_EQ(vega_task_spawn(&v->run, run_task, v), 0);
}

static inline struct h3s *hsrv_h3(struct hsrv *v)
{
    return v->s->h3;
}

static inline vega_quic_endpoint_stats hsrv_stats(struct hsrv *v)
{
    vega_quic_endpoint_stats st;
    vega_quic_endpoint_get_stats(hsrv_h3(v)->ep, &st);
    return st;
}

/* The bytes of the request blocks and file pieces the server keeps for reuse (at most
 * H3S_POOL_MAX and H3S_CHUNK_POOL_MAX: bounded caches, lib/http_server/h3_conn.c and
 * h3_exchange.c). Whether a download's pieces were pooled depends on how the connection's send
 * budget was shared out at the time (a piece is pooled only when it is over H3S_CHUNK / 2), so
 * a check of what the server holds after a run counts them. */
static inline size_t hsrv_pooled(struct hsrv *v)
{
    struct h3s *l = hsrv_h3(v);
    vega__spin_lock(&l->pool_lock);
    size_t n = l->npool;
    vega__spin_unlock(&l->pool_lock);
    vega__spin_lock(&l->chunk_lock);
    size_t nk = l->nchunks;
    vega__spin_unlock(&l->chunk_lock);
    VCHECK(n <= H3S_POOL_MAX);
    VCHECK(nk <= H3S_CHUNK_POOL_MAX);
    return n * (sizeof(struct h3s_req) + H3S_OUT_CAP) + nk * (sizeof(struct h3s_chunk) + H3S_CHUNK);
}

/* What the server holds beyond its memory once listening and its request block cache. */
static inline size_t hsrv_held(struct hsrv *v)
{
    size_t pooled = hsrv_pooled(v);
    return cmem_live(&v->mem) - v->base - pooled;
}

/* Waits until the server holds no connection, no request and no handler, and its memory is
 * back where it was once listening (plus the endpoint's timer heaps, ep_heap_bytes, and the
 * request block cache, hsrv_pooled). */
static inline void hsrv_check_clean(struct hsrv *v)
{
    struct h3s *l = hsrv_h3(v);
    vega_deadline dl = DL(20000);
    vega_quic_endpoint_stats st = hsrv_stats(v);
    while ((st.conns_open || st.handshakes || atomic_load(&l->nconns) || atomic_load(&l->nreqs) ||
            atomic_load(&h_entered) != atomic_load(&h_left)) &&
           vega_now() < dl) {
        vega_sleep_ms(5);
        st = hsrv_stats(v);
    }
    VCHECK_EQ(st.conns_open, 0);
    VCHECK_EQ(st.handshakes, 0);
    VCHECK_EQ(atomic_load(&l->nconns), 0);
    VCHECK_EQ(atomic_load(&l->nreqs), 0);
    VCHECK_EQ(atomic_load(&h_entered), atomic_load(&h_left));
    bool grown;
    size_t heaps = ep_heap_bytes(l->ep, &grown), pooled = hsrv_pooled(v);
    VCHECK_EQ(cmem_wait_live(&v->mem, v->base + heaps + pooled, 10000), v->base + heaps + pooled);
    VCHECK(!grown); /* a flood's high water given back (finding 1, fixed) */
}

/* Stops the server: every block it allocated must have been given back. */
static inline void hsrv_stop(struct hsrv *v)
{
    vega_http_server_shutdown(v->s, DL(2000));
    VCHECK_EQ(vega_task_join(v->run, NULL, DL(20000)), 0);
    vega_http_server_free(v->s);
    VCHECK_EQ(cmem_live(&v->mem), 0);
    VCHECK_EQ(atomic_load(&v->mem.blocks), 0);
    vega_crypto_cert_chain_free(v->chain);
    vega_crypto_key_free(v->key);
    vega_crypto_cert_store_free(v->ca);
}

/* ---- a small HTTP/3 client (h3_test.c's) ---------------------------------------------------- */

struct resp {
    uint64_t sid;
    int status;
    uint8_t *body;
    size_t len, cap;
    bool done, reset;
};

#define CLI_RESP 128

struct cli {
    vega_quic_endpoint *ep;
    vega_quic_ep_conn *c;
    vega_h3_conn *h3;
    struct resp resp[CLI_RESP];
    size_t nresp;
    vega_notify wake;
    bool closed;
    bool no_read; /* leave what arrives on request streams in QUIC's buffers */
};

static inline struct resp *resp_of(struct cli *t, uint64_t sid)
{
    for (size_t i = 0; i < t->nresp; i++)
        if (t->resp[i].sid == sid)
            return &t->resp[i];
    return NULL;
}

static inline int c_headers(void *ud, uint64_t sid, const vega_h3_head *h)
{
    struct resp *r = resp_of(ud, sid);
    if (r && h->kind == VEGA_H3_HEAD_INITIAL)
        r->status = h->status;
    return 0;
}

static inline int c_data(void *ud, uint64_t sid, const uint8_t *d, size_t len)
{
    struct resp *r = resp_of(ud, sid);
    if (!r)
        return 0;
    if (r->len + len > r->cap) {
        r->cap = (r->len + len) * 2;
        r->body = realloc(r->body, r->cap);
        VCHECK(r->body != NULL);
    }
    memcpy(r->body + r->len, d, len);
    r->len += len;
    return 0;
}

static inline int c_end(void *ud, uint64_t sid)
{
    struct resp *r = resp_of(ud, sid);
    if (r)
        r->done = true;
    return 0;
}

static const vega_h3_callbacks c_cb = {
    .on_headers = c_headers, .on_data = c_data, .on_end_stream = c_end};

static inline void c_flush(struct cli *t, vega_quic_conn *qc)
{
    for (;;) {
        uint8_t buf[4096];
        uint64_t sid;
        vega_ssize n = vega_h3_conn_write_uni(t->h3, &sid, buf, sizeof buf);
        if (n <= 0)
            break;
        VCHECK_EQ(vega_quic_stream_write(qc, sid, buf, (size_t)n, false), n);
    }
}

static inline void c_event(void *user, vega_quic_ep_conn *c, vega_quic_conn *qc,
                           const vega_quic_event *ev)
{
    (void)c;
    struct cli *t = user;
    if (!t || !t->h3)
        return;
    uint64_t sid = ev->stream_id;
    if ((ev->type == VEGA_QUIC_EV_STREAM_READABLE || ev->type == VEGA_QUIC_EV_STREAM_OPENED) &&
        !(t->no_read && !(sid & 2))) {
        for (;;) {
            const uint8_t *d;
            size_t len;
            bool fin;
            if (vega_quic_stream_peek(qc, sid, &d, &len, &fin) < 0 || (len == 0 && !fin))
                break;
            vega_ssize n = vega_h3_conn_read_stream(t->h3, sid, d, len, fin);
            if (n < 0)
                break;
            (void)vega_quic_stream_consume(qc, sid, (size_t)n);
            if ((size_t)n < len || fin)
                break;
        }
    } else if (ev->type == VEGA_QUIC_EV_STREAM_RESET) {
        struct resp *r = resp_of(t, sid);
        if (r)
            r->reset = true;
    } else if (ev->type == VEGA_QUIC_EV_CLOSED) {
        t->closed = true;
    }
    c_flush(t, qc);
    vega_notify_all(&t->wake);
}

static inline void cli_open(struct cli *t, struct hsrv *v)
{
    memset(t, 0, sizeof *t);
    vega_notify_init(&t->wake);
    vega_quic_endpoint_opts o;
    vega_quic_endpoint_opts_init(&o);
    o.quic.tls.ca = v->ca;
    o.quic.tls.alpn[0] = "h3";
    o.quic.tls.n_alpn = 1;
    o.cb.on_event = c_event;
    VCHECK_EQ(vega_quic_endpoint_new(&t->ep, &o), 0);
    VCHECK_EQ(vega_h3_conn_client_new(&t->h3, &c_cb, NULL, t), 0);
    vega_quic_connect_opts co = {.server_name = "localhost", .user = t};
    VCHECK_EQ(vega_quic_endpoint_connect(t->ep, &v->addr, &co, &t->c, DL(20000)), 0);
    vega_quic_conn *qc = vega_quic_ep_conn_lock(t->c);
    VCHECK(qc != NULL);
    uint64_t ids[3];
    for (int i = 0; i < 3; i++)
        VCHECK_EQ(vega_quic_stream_open(qc, false, &ids[i]), 0);
    VCHECK_EQ(vega_h3_conn_bind_streams(t->h3, ids[0], ids[1], ids[2]), 0);
    c_flush(t, qc);
    vega_quic_ep_conn_unlock(t->c);
}

static inline void cli_close(struct cli *t)
{
    vega_quic_ep_conn_close(t->c, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_NO_ERROR, NULL);
    vega_quic_ep_conn_wait_closed(t->c, DL(10000));
    vega_quic_ep_conn_release(t->c);
    vega_quic_endpoint_free(t->ep);
    vega_h3_conn_free(t->h3);
    for (size_t i = 0; i < t->nresp; i++)
        free(t->resp[i].body);
    vega_notify_fini(&t->wake);
}

/* Sends a request head (fin: no body follows) on a new stream, waiting for stream credit;
 * returns its response slot. */
static inline struct resp *cli_send(struct cli *t, const char *method, const char *path, bool fin)
{
    vega_deadline dl = DL(20000);
    for (;;) {
        vega_quic_conn *qc = vega_quic_ep_conn_lock(t->c);
        VCHECK(qc != NULL);
        uint64_t sid;
        int rc = vega_quic_stream_open(qc, true, &sid);
        if (rc == 0) {
            VCHECK(t->nresp < CLI_RESP);
            struct resp *r = &t->resp[t->nresp++];
            memset(r, 0, sizeof *r);
            r->sid = sid;
            vega_h3_request rq = {.method = {method, strlen(method)},
                                  .scheme = {"https", 5},
                                  .authority = {"localhost", 9},
                                  .path = {path, strlen(path)}};
            uint8_t head[512];
            vega_ssize h =
                vega_h3_conn_write_request_head(t->h3, sid, &rq, NULL, 0, head, sizeof head);
            VCHECK(h > 0);
            c_flush(t, qc);
            VCHECK_EQ(vega_quic_stream_write(qc, sid, head, (size_t)h, fin), h);
            vega_quic_ep_conn_unlock(t->c);
            return r;
        }
        VCHECK_EQ(rc, VEGA_ERR_FULL);
        vega_quic_ep_conn_unlock(t->c);
        VCHECK(vega_notify_wait(&t->wake, dl) == 0);
    }
}

static inline void cli_wait(struct cli *t, struct resp *r)
{
    vega_deadline dl = DL(20000);
    for (;;) {
        vega_quic_ep_conn_lock(t->c);
        bool done = r->done || r->reset || t->closed;
        vega_quic_ep_conn_unlock(t->c);
        if (done)
            return;
        VCHECK(vega_notify_wait(&t->wake, dl) != -ECANCELED);
        VCHECK(vega_now() < dl);
    }
}

/* Forgets the finished responses (slots are reused). */
static inline void cli_forget(struct cli *t)
{
    vega_quic_ep_conn_lock(t->c);
    for (size_t i = 0; i < t->nresp; i++)
        free(t->resp[i].body);
    t->nresp = 0;
    vega_quic_ep_conn_unlock(t->c);
}

/* ---- the normal client: GET /hello and /big, byte for byte, until stopped ------------------- */

struct victim {
    struct hsrv *v;
    vega_task *task;
    atomic_int rounds;
    atomic_bool stop;
    atomic_bool pause, paused; /* between two rounds, while pause is set */
};

static inline void *victim_task(void *arg)
{
    struct victim *m = arg;
    struct cli t;
    cli_open(&t, m->v);
    while (!atomic_load(&m->stop)) {
        while (atomic_load(&m->pause) && !atomic_load(&m->stop)) {
            atomic_store(&m->paused, true);
            vega_sleep_ms(2);
        }
        atomic_store(&m->paused, false);
        struct resp *a = cli_send(&t, "GET", "/hello", true);
        struct resp *b = cli_send(&t, "GET", "/big", true);
        cli_wait(&t, a);
        cli_wait(&t, b);
        VCHECK(a->done && b->done && !t.closed);
        VCHECK_EQ(a->status, 200);
        VCHECK_EQ(a->len, 8);
        VCHECK(memcmp(a->body, "hello h3", 8) == 0);
        VCHECK_EQ(b->status, 200);
        VCHECK_EQ(b->len, big_len);
        for (size_t i = 0; i < b->len; i++)
            if (b->body[i] != pattern(i))
                VCHECK_EQ(b->body[i], pattern(i));
        cli_forget(&t);
        atomic_fetch_add(&m->rounds, 1);
    }
    cli_close(&t);
    return NULL;
}

static inline void victim_start(struct victim *m, struct hsrv *v)
{
    memset(m, 0, sizeof *m);
    m->v = v;
    VCHECK_EQ(vega_task_spawn(&m->task, victim_task, m), 0);
}

/* Waits until the victim did n more rounds (from now). */
static inline void victim_more(struct victim *m, int n)
{
    int from = atomic_load(&m->rounds);
    vega_deadline dl = DL(30000);
    while (atomic_load(&m->rounds) < from + n && vega_now() < dl)
        vega_sleep_ms(2);
    VCHECK(atomic_load(&m->rounds) >= from + n);
}

/* Holds the victim between two rounds, or lets it go on. */
static inline void victim_pause(struct victim *m, bool pause)
{
    atomic_store(&m->pause, pause);
    vega_deadline dl = DL(30000);
    while (pause && !atomic_load(&m->paused) && vega_now() < dl)
        vega_sleep_ms(2);
    VCHECK(!pause || atomic_load(&m->paused));
}

static inline void victim_stop(struct victim *m)
{
    atomic_store(&m->stop, true);
    VCHECK_EQ(vega_task_join(m->task, NULL, DL(30000)), 0);
}

/* ---- the raw attacker ------------------------------------------------------------------------ */

/* A QUIC connection with ALPN h3 on which the test writes bytes of its own: a control stream
 * (SETTINGS, empty), a QPACK encoder stream and a decoder stream are opened; what the server
 * sends is read and dropped, and its resets, stops and close are noted. */
struct raw3 {
    vega_quic_endpoint *ep;
    vega_quic_ep_conn *c;
    vega_notify wake;
    uint64_t ctrl, enc, dec;
    /* under the connection's lock */
    bool closed, close_app;
    uint64_t close_code;
    size_t resets, stops;
    uint64_t last_reset_sid, last_reset_code;
    /* the server's QPACK decoder stream: Insert Count Increments summed (RFC 9204 §4.4.3) */
    uint64_t dec_sid;
    bool dec_known;
    uint8_t dec_part[16];
    size_t dec_part_len;
    uint64_t acked_inserts;
};

/* Reads the decoder instructions in d[0..n) (RFC 9204 §4.4): sums Insert Count Increments. */
static inline void raw3_decoder_bytes(struct raw3 *a, const uint8_t *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        a->dec_part[a->dec_part_len++] = d[i];
        uint8_t f = a->dec_part[0];
        int prefix = f & 0x80 ? 7 : 6; /* Section Acknowledgment : the other two */
        uint8_t max = (uint8_t)((1u << prefix) - 1);
        uint64_t v = f & max;
        bool whole = v < max;
        if (!whole && a->dec_part_len > 1) {
            uint64_t m = 0;
            int shift = 0;
            for (size_t j = 1; j < a->dec_part_len; j++, shift += 7) {
                m |= (uint64_t)(a->dec_part[j] & 0x7f) << shift;
                if (!(a->dec_part[j] & 0x80)) {
                    whole = true;
                    v = max + m;
                }
            }
        }
        VCHECK(a->dec_part_len < sizeof a->dec_part);
        if (!whole)
            continue;
        if ((f & 0xc0) == 0)
            a->acked_inserts += v;
        a->dec_part_len = 0;
    }
}

static inline void raw3_event(void *user, vega_quic_ep_conn *c, vega_quic_conn *qc,
                              const vega_quic_event *ev)
{
    (void)c;
    struct raw3 *a = user;
    if (!a)
        return;
    if (ev->type == VEGA_QUIC_EV_STREAM_READABLE || ev->type == VEGA_QUIC_EV_STREAM_OPENED) {
        uint8_t buf[4096];
        bool fin;
        vega_ssize n;
        uint64_t sid = ev->stream_id;
        while ((n = vega_quic_stream_read(qc, sid, buf, sizeof buf, &fin)) > 0) {
            size_t off = 0;
            if ((sid & 3) == 3 && !a->dec_known && buf[0] == 0x03) { /* its type byte */
                a->dec_known = true;
                a->dec_sid = sid;
                off = 1;
            }
            if (a->dec_known && sid == a->dec_sid)
                raw3_decoder_bytes(a, buf + off, (size_t)n - off);
        }
    } else if (ev->type == VEGA_QUIC_EV_STREAM_RESET) {
        a->resets++;
        a->last_reset_sid = ev->stream_id;
        a->last_reset_code = ev->error_code;
    } else if (ev->type == VEGA_QUIC_EV_STREAM_STOP) {
        a->stops++;
    } else if (ev->type == VEGA_QUIC_EV_CLOSED) {
        a->closed = true;
        a->close_app = ev->app;
        a->close_code = ev->error_code;
    }
    vega_notify_all(&a->wake);
}

static inline void raw3_open(struct raw3 *a, struct hsrv *v)
{
    memset(a, 0, sizeof *a);
    vega_notify_init(&a->wake);
    vega_quic_endpoint_opts o;
    vega_quic_endpoint_opts_init(&o);
    o.quic.tls.ca = v->ca;
    o.quic.tls.alpn[0] = "h3";
    o.quic.tls.n_alpn = 1;
    o.cb.on_event = raw3_event;
    VCHECK_EQ(vega_quic_endpoint_new(&a->ep, &o), 0);
    vega_quic_connect_opts co = {.server_name = "localhost", .user = a};
    VCHECK_EQ(vega_quic_endpoint_connect(a->ep, &v->addr, &co, &a->c, DL(20000)), 0);
    vega_quic_conn *qc = vega_quic_ep_conn_lock(a->c);
    VCHECK(qc != NULL);
    VCHECK_EQ(vega_quic_stream_open(qc, false, &a->ctrl), 0);
    VCHECK_EQ(vega_quic_stream_open(qc, false, &a->enc), 0);
    VCHECK_EQ(vega_quic_stream_open(qc, false, &a->dec), 0);
    static const uint8_t ctrl[] = {0x00, 0x04, 0x00}; /* control stream, empty SETTINGS */
    VCHECK_EQ(vega_quic_stream_write(qc, a->ctrl, ctrl, sizeof ctrl, false), 3);
    VCHECK_EQ(vega_quic_stream_write(qc, a->enc, "\x02", 1, false), 1);
    VCHECK_EQ(vega_quic_stream_write(qc, a->dec, "\x03", 1, false), 1);
    vega_quic_ep_conn_unlock(a->c);
}

/* Writes all of p[0..n) on stream sid (fin after it), waiting for flow control. */
static inline void raw3_write(struct raw3 *a, uint64_t sid, const uint8_t *p, size_t n, bool fin)
{
    size_t off = 0;
    vega_deadline dl = DL(20000);
    for (;;) {
        vega_quic_conn *qc = vega_quic_ep_conn_lock(a->c);
        VCHECK(qc != NULL);
        vega_ssize w = vega_quic_stream_write(qc, sid, p + off, n - off, fin);
        bool closed = a->closed;
        vega_quic_ep_conn_unlock(a->c);
        if (w < 0 || closed)
            return; /* the server closed the connection: the case checks how */
        off += (size_t)w;
        if (off == n)
            return;
        VCHECK(vega_notify_wait(&a->wake, DL(50)) != -ECANCELED);
        VCHECK(vega_now() < dl);
    }
}

/* Opens a request stream; returns its id. */
static inline uint64_t raw3_request_stream(struct raw3 *a)
{
    vega_quic_conn *qc = vega_quic_ep_conn_lock(a->c);
    VCHECK(qc != NULL);
    uint64_t sid;
    VCHECK_EQ(vega_quic_stream_open(qc, true, &sid), 0);
    vega_quic_ep_conn_unlock(a->c);
    return sid;
}

/* Waits until cond(a) holds (under the lock). */
static inline void raw3_wait(struct raw3 *a, bool (*cond)(const struct raw3 *))
{
    vega_deadline dl = DL(20000);
    for (;;) {
        vega_quic_ep_conn_lock(a->c);
        bool ok = cond(a);
        vega_quic_ep_conn_unlock(a->c);
        if (ok)
            return;
        VCHECK(vega_notify_wait(&a->wake, DL(50)) != -ECANCELED);
        VCHECK(vega_now() < dl);
    }
}

static inline void raw3_close(struct raw3 *a)
{
    vega_quic_ep_conn_close(a->c, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_NO_ERROR, NULL);
    vega_quic_ep_conn_wait_closed(a->c, DL(10000));
    vega_quic_ep_conn_release(a->c);
    vega_quic_endpoint_free(a->ep);
    vega_notify_fini(&a->wake);
}

/* QPACK's prefixed integer (RFC 9204 §4.1.1, RFC 7541 §5.1): flags in the bits above the
 * prefix. Returns the bytes written. */
static inline size_t qint(uint8_t *p, uint8_t flags, int prefix, uint64_t v)
{
    uint8_t max = (uint8_t)((1u << prefix) - 1);
    if (v < max) {
        p[0] = (uint8_t)(flags | v);
        return 1;
    }
    p[0] = (uint8_t)(flags | max);
    v -= max;
    size_t n = 1;
    while (v >= 128) {
        p[n++] = (uint8_t)(0x80 | (v & 0x7f));
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* An HTTP/3 frame header (type, length: QUIC varints, RFC 9000 §16). */
static inline size_t h3_frame_header(uint8_t *p, uint64_t type, uint64_t len)
{
    size_t n = 0;
    uint64_t v[2] = {type, len};
    for (int i = 0; i < 2; i++) {
        if (v[i] < 64) {
            p[n++] = (uint8_t)v[i];
        } else if (v[i] < 16384) {
            p[n++] = (uint8_t)(0x40 | v[i] >> 8);
            p[n++] = (uint8_t)v[i];
        } else {
            p[n++] = (uint8_t)(0x80 | v[i] >> 24);
            p[n++] = (uint8_t)(v[i] >> 16);
            p[n++] = (uint8_t)(v[i] >> 8);
            p[n++] = (uint8_t)v[i];
        }
    }
    return n;
}

/* The start of a request's field section after its prefix: :method GET, :scheme https,
 * :authority localhost, :path / (static table references, RFC 9204 Appendix A). */
static inline size_t qpack_request_lines(uint8_t *p)
{
    size_t n = 0;
    p[n++] = 0xc0 | 17;           /* :method GET */
    p[n++] = 0xc0 | 23;           /* :scheme https */
    n += qint(p + n, 0x50, 4, 0); /* :authority, literal value */
    n += qint(p + n, 0x00, 7, 9);
    memcpy(p + n, "localhost", 9);
    n += 9;
    p[n++] = 0xc0 | 1; /* :path / */
    return n;
}

#endif
