/* SPDX-License-Identifier: MIT */
/* The HTTP server's HTTP/3 side under attack, on loopback (RFC 9114 §4.2.2, §10.5; RFC 9204
 * §2.1, §7.3): QPACK bombs (a field section that expands past the limits, too many field lines,
 * a table capacity over ours, an entry larger than the table, a flood of inserts, more blocked
 * streams than we allow), a client that never reads its responses, Rapid-Reset-style request
 * resets, and a close storm with handlers in the middle of requests. Through each a normal
 * client keeps getting byte-exact responses; after each, no connection, request or handler is
 * left and the server's allocator is back to where it was once listening. */
#include <inttypes.h>

#include "h3_attack_util.h"

/* ---- QPACK ------------------------------------------------------------------------------- */

static bool got_reset(const struct raw3 *a)
{
    return a->resets > 0 || a->closed;
}

static bool got_close(const struct raw3 *a)
{
    return a->closed;
}

/* Sends a HEADERS frame with payload fs[0..n) on a new request stream, then FIN. */
static uint64_t send_headers(struct raw3 *a, const uint8_t *fs, size_t n)
{
    uint64_t sid = raw3_request_stream(a);
    uint8_t fh[16];
    size_t hl = h3_frame_header(fh, 0x01, n);
    raw3_write(a, sid, fh, hl, false);
    raw3_write(a, sid, fs, n, true);
    return sid;
}

/* §4.2.2 (RFC 9114), §7.3 (RFC 9204): one 3,000-byte dynamic table entry referenced 2,000 times
 * is a 6 MB field section in 2 KB: the decoder stops at max_field_section_size (64 KiB) and the
 * request stream is reset with H3_EXCESSIVE_LOAD, the connection lives on; so with more field
 * lines than max_fields (100). Neither reaches the handler. */
VTEST_MT(qpack_bomb_field_section, 2)
{
    struct hsrv v;
    hsrv_start(&v, NULL, NULL);
    struct victim m;
    victim_start(&m, &v);
    victim_more(&m, 1);
    struct raw3 a;
    raw3_open(&a, &v);
    static uint8_t buf[8192];
    size_t n = qint(buf, 0x20, 5, 4096); /* Set Dynamic Table Capacity */
    n += qint(buf + n, 0x40, 5, 6);      /* Insert With Literal Name "x-bomb" */
    memcpy(buf + n, "x-bomb", 6);
    n += 6;
    n += qint(buf + n, 0x00, 7, 3000);
    memset(buf + n, 'A', 3000);
    n += 3000;
    n += qint(buf + n, 0x40, 5, 1); /* and "x: y", for the field-count bomb */
    buf[n++] = 'x';
    n += qint(buf + n, 0x00, 7, 1);
    buf[n++] = 'y';
    raw3_write(&a, a.enc, buf, n, false);
    /* Required Insert Count 1 (encoded 1 % (2 * 4096 / 32) + 1 = 2), Base 1: relative index 0
     * is the first entry */
    n = qint(buf, 0x00, 8, 2);
    n += qint(buf + n, 0x00, 7, 0);
    n += qpack_request_lines(buf + n);
    for (int i = 0; i < 2000; i++)
        buf[n++] = 0x80; /* Indexed Field Line, dynamic, relative 0 */
    uint64_t s1 = send_headers(&a, buf, n);
    raw3_wait(&a, got_reset);
    vega_quic_ep_conn_lock(a.c);
    VCHECK(!a.closed);
    VCHECK_EQ(a.last_reset_sid, s1);
    VCHECK_EQ(a.last_reset_code, VEGA_H3_EXCESSIVE_LOAD);
    vega_quic_ep_conn_unlock(a.c);
    /* 150 lines of the small entry (Required Insert Count 2, encoded 3; Base 2: relative 0 is
     * the second entry) */
    n = qint(buf, 0x00, 8, 3);
    n += qint(buf + n, 0x00, 7, 0);
    n += qpack_request_lines(buf + n);
    for (int i = 0; i < 150; i++)
        buf[n++] = 0x80;
    uint64_t s2 = send_headers(&a, buf, n);
    vega_deadline dl = DL(20000);
    for (;;) {
        vega_quic_ep_conn_lock(a.c);
        bool done = a.resets >= 2 || a.closed;
        vega_quic_ep_conn_unlock(a.c);
        if (done || vega_now() >= dl)
            break;
        vega_notify_wait(&a.wake, DL(50));
    }
    vega_quic_ep_conn_lock(a.c);
    VCHECK(!a.closed);
    VCHECK_EQ(a.resets, 2);
    VCHECK_EQ(a.last_reset_sid, s2);
    VCHECK_EQ(a.last_reset_code, VEGA_H3_EXCESSIVE_LOAD);
    vega_quic_ep_conn_unlock(a.c);
    victim_more(&m, 2);
    size_t peak = atomic_load(&v.mem.peak) - v.base;
    fprintf(stderr, "qpack bomb: 2 streams reset, peak %zu bytes held\n", peak);
    VCHECK(peak <= 1024 * 1024);
    vega_http_server_stats st;
    vega_http_server_get_stats(v.s, &st);
    VCHECK(st.bad_requests >= 2);
    raw3_close(&a);
    victim_stop(&m);
    VCHECK_EQ(atomic_load(&h_root), 0); /* neither bomb reached the handler */
    hsrv_check_clean(&v);
    hsrv_stop(&v);
}

/* RFC 9204 §4.3.1: a capacity over the SETTINGS_QPACK_MAX_TABLE_CAPACITY we sent, and §3.2.2 an
 * entry larger than the capacity, are connection errors QPACK_ENCODER_STREAM_ERROR. */
VTEST_MT(qpack_encoder_stream_abuse, 2)
{
    struct hsrv v;
    hsrv_start(&v, NULL, NULL);
    struct victim m;
    victim_start(&m, &v);
    victim_more(&m, 1);
    uint8_t buf[8192];
    struct raw3 a;
    raw3_open(&a, &v);
    size_t n = qint(buf, 0x20, 5, 8192);
    raw3_write(&a, a.enc, buf, n, false);
    raw3_wait(&a, got_close);
    VCHECK(a.close_app);
    VCHECK_EQ(a.close_code, VEGA_QPACK_ENCODER_STREAM_ERROR);
    raw3_close(&a);
    raw3_open(&a, &v);
    n = qint(buf, 0x20, 5, 4096);
    n += qint(buf + n, 0x40, 5, 4);
    memcpy(buf + n, "x-xl", 4);
    n += 4;
    n += qint(buf + n, 0x00, 7, 5000);
    memset(buf + n, 'B', 5000);
    n += 5000;
    raw3_write(&a, a.enc, buf, n, false);
    raw3_wait(&a, got_close);
    VCHECK(a.close_app);
    VCHECK_EQ(a.close_code, VEGA_QPACK_ENCODER_STREAM_ERROR);
    raw3_close(&a);
    victim_more(&m, 2);
    victim_stop(&m);
    hsrv_check_clean(&v);
    hsrv_stop(&v);
}

/* 20,000 inserts (2 MB of encoder instructions) into a 4 KiB table, sent without waiting for
 * acknowledgments: entries are evicted as they come, the memory stays the table's, and once
 * the server acknowledged every insert a request that uses the last entry is served. */
VTEST_MT(qpack_insert_flood, 2)
{
    struct hsrv v;
    hsrv_start(&v, NULL, NULL);
    struct victim m;
    victim_start(&m, &v);
    victim_more(&m, 1);
    struct raw3 a;
    raw3_open(&a, &v);
    long inserts = test_scaled(20000, 2000);
    static uint8_t buf[64 * 1024];
    size_t n = qint(buf, 0x20, 5, 4096);
    for (long i = 0; i < inserts; i++) {
        if (n + 128 > sizeof buf) {
            raw3_write(&a, a.enc, buf, n, false);
            n = 0;
        }
        n += qint(buf + n, 0x40, 5, 8);
        snprintf((char *)buf + n, 9, "x-%06ld", i % 1000000);
        n += 8;
        n += qint(buf + n, 0x00, 7, 90);
        memset(buf + n, 'a' + (int)(i % 26), 90);
        n += 90;
    }
    raw3_write(&a, a.enc, buf, n, false);
    /* §2.1.1: an entry may be referenced (and the table wrapped) once the decoder acknowledged
     * it: the server's Insert Count Increments say it took every insert */
    vega_deadline dl = DL(20000);
    for (;;) {
        vega_quic_ep_conn_lock(a.c);
        bool done = a.acked_inserts >= (uint64_t)inserts || a.closed;
        vega_quic_ep_conn_unlock(a.c);
        if (done || vega_now() >= dl)
            break;
        vega_notify_wait(&a.wake, DL(50));
    }
    VCHECK_EQ(a.acked_inserts, (uint64_t)inserts);
    /* a request that uses the last entry: Required Insert Count = inserts (encoded modulo
     * 2 * 128, plus one), Base = inserts, relative index 0 */
    uint8_t fs[64];
    size_t k = qint(fs, 0x00, 8, (uint64_t)(inserts % 256) + 1);
    k += qint(fs + k, 0x00, 7, 0);
    k += qpack_request_lines(fs + k);
    fs[k++] = 0x80;
    send_headers(&a, fs, k);
    /* the handler answers it (404: "/" is not a path of this server) */
    dl = DL(20000);
    while (atomic_load(&h_root) == 0 && vega_now() < dl)
        vega_sleep_ms(2);
    VCHECK_EQ(atomic_load(&h_root), 1);
    vega_quic_ep_conn_lock(a.c);
    VCHECK(!a.closed);
    VCHECK_EQ(a.resets, 0);
    vega_quic_ep_conn_unlock(a.c);
    victim_more(&m, 2);
    size_t peak = atomic_load(&v.mem.peak) - v.base;
    fprintf(stderr, "qpack insert flood: %ld inserts, peak %zu bytes held\n", inserts, peak);
    VCHECK(peak <= 2 * 1024 * 1024);
    raw3_close(&a);
    victim_stop(&m);
    hsrv_check_clean(&v);
    hsrv_stop(&v);
}

/* RFC 9204 §2.1.2: sections waiting for inserts that never come are held for at most
 * SETTINGS_QPACK_BLOCKED_STREAMS (16) streams; the next one is a connection error
 * QPACK_DECOMPRESSION_FAILED, and what the blocked ones held goes with the connection. */
VTEST_MT(qpack_blocked_streams, 2)
{
    struct hsrv v;
    hsrv_start(&v, NULL, NULL);
    struct victim m;
    victim_start(&m, &v);
    victim_more(&m, 1);
    struct raw3 a;
    raw3_open(&a, &v);
    uint8_t cap[8];
    raw3_write(&a, a.enc, cap, qint(cap, 0x20, 5, 4096), false);
    /* Required Insert Count 1 with no insert: blocked. 55 KB of literal lines after it. */
    static uint8_t fs[56 * 1024]; /* 17 of them stay within the connection's 1 MiB window */
    size_t n = qint(fs, 0x00, 8, 2);
    n += qint(fs + n, 0x00, 7, 0);
    n += qpack_request_lines(fs + n);
    while (n + 1100 < sizeof fs) {
        n += qint(fs + n, 0x20, 3, 4); /* Literal Field Line with Literal Name */
        memcpy(fs + n, "x-pd", 4);
        n += 4;
        n += qint(fs + n, 0x00, 7, 1000);
        memset(fs + n, 'p', 1000);
        n += 1000;
    }
    for (int i = 0; i < 16; i++)
        send_headers(&a, fs, n);
    size_t held = 0;
    vega_deadline dl = DL(20000);
    while ((held = cmem_live(&v.mem) - v.base) < 16 * 45 * 1024 && vega_now() < dl)
        vega_sleep_ms(2);
    VCHECK(held >= 16 * 45 * 1024);
    vega_quic_ep_conn_lock(a.c);
    VCHECK(!a.closed);
    vega_quic_ep_conn_unlock(a.c);
    send_headers(&a, fs, n);
    raw3_wait(&a, got_close);
    VCHECK(a.close_app);
    VCHECK_EQ(a.close_code, VEGA_QPACK_DECOMPRESSION_FAILED);
    size_t peak = atomic_load(&v.mem.peak) - v.base;
    fprintf(stderr, "qpack blocked: %zu held by 16 blocked sections, peak %zu\n", held, peak);
    VCHECK(peak <= 16 * 64 * 1024 + 2 * 1024 * 1024);
    raw3_close(&a);
    victim_more(&m, 2);
    victim_stop(&m);
    hsrv_check_clean(&v);
    hsrv_stop(&v);
}

/* ---- streams ------------------------------------------------------------------------------ */

/* The response bytes the server's HTTP/3 connections hold until acknowledged, together. */
static uint64_t send_held(struct hsrv *v)
{
    struct h3s *l = hsrv_h3(v);
    uint64_t held = 0;
    pthread_mutex_lock(&l->lock);
    for (struct h3s_conn *hc = l->conns; hc; hc = hc->next) {
        vega_quic_conn *qc = vega_quic_ep_conn_lock(hc->qc);
        if (qc) {
            held += vega_quic_conn_get_send_held(qc);
            vega_quic_ep_conn_unlock(hc->qc);
        }
    }
    pthread_mutex_unlock(&l->lock);
    return held;
}

/* A client opens 100 requests for /big and /file (half each: copied writes, file pieces by
 * reference), larger than a stream's send buffer, and never reads a byte (QUIC still acknowledges,
 * but grants no flow control): without a bound each stream would hold its 1 MiB send buffer, 100
 * MiB for one connection. The connection's send budget (conn_send_budget, here 2 MiB) stops its
 * handlers instead: they wait in their writes, the server holds the budget plus 16 KiB per stream
 * (VEGA_QUIC_SEND_BUDGET_FLOOR) and the requests' blocks, a normal client on another connection
 * still gets every byte, and it all goes when the client leaves. */
VTEST_MT(client_never_reads, 2)
{
    enum {
        N = 100,
        BUDGET = 2 * 1024 * 1024
    };
    big_len = (size_t)test_scaled(2 * 1024 * 1024, 256 * 1024);
    big_file_make();
    struct hsrv v;
    vega_http_server_h3_opts ho;
    vega_http_server_h3_opts_init(&ho);
    ho.conn_send_budget = BUDGET;
    hsrv_start(&v, NULL, &ho);
    struct victim m;
    victim_start(&m, &v);
    victim_more(&m, 1);
    victim_pause(&m, true);
    cmem_reset_peak(&v.mem);
    size_t from = cmem_live(&v.mem);
    struct cli t;
    cli_open(&t, &v);
    t.no_read = true;
    int entered = atomic_load(&h_entered);
    for (int i = 0; i < N; i++)
        cli_send(&t, "GET", i % 2 ? "/file" : "/big", true);
    /* every handler runs, and together they fill the budget (the victim holds nothing now) */
    vega_deadline dl = DL(30000);
    while ((atomic_load(&h_entered) - entered < N || send_held(&v) < BUDGET) && vega_now() < dl)
        vega_sleep_ms(5);
    VCHECK(atomic_load(&h_entered) - entered >= N);
    uint64_t sheld = send_held(&v);
    VCHECK(sheld >= BUDGET);
    /* the core's bound: the budget, plus what each stream (and our 3 own) may always hold */
    VCHECK(sheld <= BUDGET + (N + 3) * (uint64_t)VEGA_QUIC_SEND_BUDGET_FLOOR);
    VCHECK(atomic_load(&h_left) - entered < N / 2); /* the budget stops them: most wait */
    /* another connection is served in full meanwhile (byte for byte, victim_task) */
    victim_pause(&m, false);
    victim_more(&m, 2);
    victim_pause(&m, true);
    size_t held = cmem_live(&v.mem) - from, peak = atomic_load(&v.mem.peak) - from;
    fprintf(stderr,
            "h3 never reads: %d x %zu bytes asked for, %" PRIu64 " queued (budget %d), %zu held, "
            "peak %zu\n",
            N, big_len, sheld, BUDGET, held, peak);
    /* memory: a send ring is a power of two at most twice what it holds, or 32 KiB once it
     * shrank (lib/quic/sendstore.c); each request has its block (8.5 KiB) and the QUIC core's
     * stream state; 2 MiB for the rest (the connection, the victim's round) */
    size_t bound = 2 * (BUDGET + (size_t)N * VEGA_QUIC_SEND_BUDGET_FLOOR) +
                   (size_t)N * (32 * 1024 + sizeof(struct h3s_req) + H3S_OUT_CAP) + 2 * 1024 * 1024;
    VCHECK(peak <= bound);
    VCHECK(peak < (size_t)N * 1024 * 1024 / 4); /* far from a send buffer per stream */
    cli_close(&t);
    victim_pause(&m, false);
    victim_stop(&m);
    hsrv_check_clean(&v);
    hsrv_stop(&v);
    big_file_drop();
    big_len = 65536;
}

/* A normal client downloads eight large bodies at once (half from a file) on one connection whose
 * send budget (64 KiB) is far below what they add up to: every response arrives whole and byte for
 * byte (a stream always has VEGA_QUIC_SEND_BUDGET_FLOOR of its own, and acknowledgements wake the
 * writers the budget stopped: no stream waits for another for good). */
VTEST_MT(budget_many_downloads, 2)
{
    enum {
        N = 8
    };
    big_len = (size_t)test_scaled(1024 * 1024, 128 * 1024);
    big_file_make();
    struct hsrv v;
    vega_http_server_h3_opts ho;
    vega_http_server_h3_opts_init(&ho);
    ho.conn_send_budget = 64 * 1024;
    hsrv_start(&v, NULL, &ho);
    struct cli t;
    cli_open(&t, &v);
    struct resp *r[N];
    for (int i = 0; i < N; i++)
        r[i] = cli_send(&t, "GET", i % 2 ? "/file" : "/big", true);
    for (int i = 0; i < N; i++) {
        cli_wait(&t, r[i]);
        VCHECK(r[i]->done && !r[i]->reset && !t.closed);
        VCHECK_EQ(r[i]->status, 200);
        VCHECK_EQ(r[i]->len, big_len);
        for (size_t k = 0; k < r[i]->len; k++)
            if (r[i]->body[k] != pattern(k))
                VCHECK_EQ(r[i]->body[k], pattern(k));
    }
    cli_close(&t);
    hsrv_check_clean(&v);
    hsrv_stop(&v);
    big_file_drop();
    big_len = 65536;
}

/* Rapid Reset over HTTP/3 (the HTTP/2 attack of CVE-2023-44487): HEADERS, then at once
 * RESET_STREAM and STOP_SENDING, stream after stream. Each handler that started ends (its
 * body read fails), they never number more than the stream limit, and nothing is kept per
 * stream while the connection stays open. */
/* What the server holds once no request is left (the victim between two rounds, then on). */
static size_t quiet_held(struct hsrv *v, struct victim *m)
{
    struct h3s *l = hsrv_h3(v);
    victim_pause(m, true);
    vega_deadline dl = DL(20000);
    while ((atomic_load(&h_entered) != atomic_load(&h_left) || atomic_load(&l->nreqs) > 0) &&
           vega_now() < dl)
        vega_sleep_ms(5);
    VCHECK_EQ(atomic_load(&h_entered), atomic_load(&h_left));
    VCHECK_EQ(atomic_load(&l->nreqs), 0);
    size_t held = hsrv_held(v);
    victim_pause(m, false);
    return held;
}

VTEST_MT(rapid_reset, 2)
{
    struct hsrv v;
    vega_http_server_h3_opts ho;
    vega_http_server_h3_opts_init(&ho);
    ho.max_streams = 32;
    hsrv_start(&v, NULL, &ho);
    struct victim m;
    victim_start(&m, &v);
    victim_more(&m, 1);
    struct h3s *l = hsrv_h3(&v);
    struct cli t;
    cli_open(&t, &v);
    long n = test_scaled(2000, 200);
    size_t peak_reqs = 0, held_early = 0;
    for (long i = 0; i < n; i++) {
        struct resp *r = cli_send(&t, "POST", "/body", false);
        uint64_t sid = r->sid;
        if (i % 2)
            vega_yield(); /* half of the heads leave on their own first */
        vega_quic_conn *qc = vega_quic_ep_conn_lock(t.c);
        VCHECK(qc != NULL);
        VCHECK_EQ(vega_quic_stream_reset(qc, sid, VEGA_H3_REQUEST_CANCELLED), 0);
        VCHECK_EQ(vega_quic_stream_stop(qc, sid, VEGA_H3_REQUEST_CANCELLED), 0);
        (void)vega_h3_conn_close_stream(t.h3, sid);
        vega_quic_ep_conn_unlock(t.c);
        if (t.nresp == CLI_RESP)
            cli_forget(&t);
        size_t reqs = atomic_load(&l->nreqs);
        peak_reqs = reqs > peak_reqs ? reqs : peak_reqs;
        if (i == n / 4)
            held_early = quiet_held(&v, &m);
    }
    victim_more(&m, 2);
    /* the handlers that started end, with the connection still open */
    size_t held = quiet_held(&v, &m);
    int ran = atomic_load(&h_body);
    VCHECK(peak_reqs <= 32 + 2); /* the attacker's limit and the victim's two */
    /* nothing kept per stream: what the last streams still hold (until acknowledged) goes */
    victim_pause(&m, true);
    size_t pooled = hsrv_pooled(&v);
    held =
        cmem_wait_below(&v.mem, v.base + pooled + held_early + 16 * 1024, 10000) - v.base - pooled;
    victim_pause(&m, false);
    fprintf(stderr,
            "rapid reset: %ld streams, %d handlers ran, at most %zu requests at once, "
            "held %zu after a quarter, %zu at the end\n",
            n, ran, peak_reqs, held_early, held);
    VCHECK(held <= held_early + 16 * 1024);
    vega_quic_ep_conn_lock(t.c);
    VCHECK(!t.closed);
    vega_quic_ep_conn_unlock(t.c);
    cli_close(&t);
    victim_stop(&m);
    hsrv_check_clean(&v);
    hsrv_stop(&v);
}

/* Many clients connect at once, each with a request answered and one whose handler is in the
 * middle of reading its body, and all leave at once (half closing, half just going): every
 * handler ends and the server forgets them all. */
struct storm {
    struct hsrv *v;
    vega_barrier *all;
    int idx;
};

static void *storm_client(void *arg)
{
    struct storm *s = arg;
    struct cli t;
    cli_open(&t, s->v);
    struct resp *r = cli_send(&t, "GET", "/hello", true);
    cli_wait(&t, r);
    VCHECK_EQ(r->status, 200);
    VCHECK_EQ(r->len, 8);
    VCHECK(memcmp(r->body, "hello h3", 8) == 0);
    cli_send(&t, "POST", "/body", false); /* the handler waits for the body */
    VCHECK(vega_barrier_wait(s->all, DL(60000)) >= 0);
    if (s->idx % 2) {
        cli_close(&t);
    } else {
        vega_quic_ep_conn_release(t.c);
        vega_quic_endpoint_free(t.ep); /* closes with NO_ERROR */
        vega_h3_conn_free(t.h3);
        for (size_t i = 0; i < t.nresp; i++)
            free(t.resp[i].body);
        vega_notify_fini(&t.wake);
    }
    return NULL;
}

VTEST_MT(close_storm, 2)
{
    struct hsrv v;
    hsrv_start(&v, NULL, NULL);
    struct victim m;
    victim_start(&m, &v);
    victim_more(&m, 1);
    int n = (int)test_scaled(32, 6);
    vega_barrier all;
    vega_barrier_init(&all, (unsigned)n);
    struct storm *s = calloc((size_t)n, sizeof *s);
    vega_task **t = calloc((size_t)n, sizeof *t);
    VCHECK(s && t);
    for (int i = 0; i < n; i++) {
        s[i] = (struct storm){&v, &all, i};
        VCHECK_EQ(vega_task_spawn(&t[i], storm_client, &s[i]), 0);
    }
    for (int i = 0; i < n; i++)
        VCHECK_EQ(vega_task_join(t[i], NULL, DL(60000)), 0);
    victim_more(&m, 2);
    victim_stop(&m);
    fprintf(stderr, "h3 close storm: %d clients, peak %zu bytes held\n", n,
            atomic_load(&v.mem.peak) - v.base);
    vega_barrier_fini(&all);
    free(s);
    free(t);
    hsrv_check_clean(&v);
    hsrv_stop(&v);
}
