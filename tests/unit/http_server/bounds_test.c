/* SPDX-License-Identifier: MIT */
/* Regressions from the hostile review of the server (issue 11): the output buffer never
 * overflows when a small file piece follows a buffer filled to the last byte, and a request
 * head's timeout runs from its first byte, blank lines before the request line included, so
 * a trickle of CRLFs cannot hold a connection open for ever. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vega/http_server.h>
#include <vega/io.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/test.h>

#include "vtest.h"

#define DL(ms)  vega_deadline_in_ms(ms)
#define OUT_CAP 16384 /* the server's output buffer (SRV_OUT_CAP) */
#define PIECE   100   /* bytes per sendfile call after the filler */
#define PIECES                                                                                     \
    300 /* 30,000 bytes: a run of room checks that wrap would write far past the                   \
           whole connection block, where ASan sees it */
#define FILE_LEN (PIECE * PIECES)

static _Atomic int file_fd = -1;
static uint8_t file_bytes[FILE_LEN];

/* GET /fill/K: a body of K filler bytes written one at a time (so that the output buffer
 * fills to exactly its last byte for some K), then the file in small sendfile pieces, each
 * small enough for the copy-next-to-the-head path. */
static int fill_handler(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *r = vega_http_exchange_request(x);
    unsigned k = (unsigned)strtoul(r->path.ptr + 6, NULL, 10);
    int rc = vega_http_response_start(x, 200, NULL, 0, (uint64_t)k + FILE_LEN);
    if (rc < 0)
        return rc;
    for (unsigned i = 0; i < k; i++)
        VCHECK_EQ(vega_http_response_write(x, "f", 1, DL(5000)), 1);
    for (unsigned i = 0; i < PIECES; i++)
        VCHECK_EQ(vega_http_response_sendfile(x, file_fd, (uint64_t)i * PIECE, PIECE, DL(5000)),
                  PIECE);
    return vega_http_response_finish(x, NULL, 0, DL(5000));
}

struct serve_arg {
    vega_http_server *srv;
    vega_stream *s;
    int rc;
};

static void *serve_task(void *arg)
{
    struct serve_arg *a = arg;
    a->rc = vega_http_server_serve(a->srv, a->s, NULL, NULL);
    return NULL;
}

/* Reads one response with a Content-Length body into body (cap bytes); returns its length. */
static size_t read_response(vega_stream *s, char *body, size_t cap)
{
    static char buf[65536];
    static size_t have;
    char *end;
    while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
        vega_ssize n = vega_stream_read(s, buf + have, sizeof buf - have, DL(5000));
        VCHECK(n > 0);
        have += (size_t)n;
    }
    VCHECK(memcmp(buf, "HTTP/1.1 200 ", 13) == 0);
    char *cl = memmem(buf, (size_t)(end - buf), "Content-Length: ", 16);
    VCHECK(cl != NULL);
    size_t len = strtoul(cl + 16, NULL, 10), head = (size_t)(end + 4 - buf);
    VCHECK(len <= cap);
    while (have < head + len) {
        vega_ssize n = vega_stream_read(s, buf + have, sizeof buf - have, DL(5000));
        VCHECK(n > 0);
        have += (size_t)n;
    }
    memcpy(body, buf + head, len);
    memmove(buf, buf + head + len, have - head - len);
    have -= head + len;
    return len;
}

static void body_sendfile_after_full_buffer(void)
{
    char path[] = "/tmp/vega-bounds-XXXXXX";
    int fd = mkstemp(path);
    VCHECK(fd >= 0);
    unlink(path);
    for (size_t i = 0; i < FILE_LEN; i++)
        file_bytes[i] = (uint8_t)('a' + i % 26);
    VCHECK_EQ(write(fd, file_bytes, FILE_LEN), FILE_LEN);
    file_fd = fd;

    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = fill_handler;
    o.server_header = "vega-test";
    vega_http_server *srv;
    VCHECK_EQ(vega_http_server_new(&srv, &o), 0);
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    struct serve_arg sa = {srv, b, -1};
    vega_task *st;
    VCHECK_EQ(vega_task_spawn(&st, serve_task, &sa), 0);

    /* Every filler length for which head + filler ends within the last 400 bytes of the
     * buffer: one of them leaves it exactly full, another one byte short of full. */
    static char body[OUT_CAP + FILE_LEN];
    for (unsigned k = OUT_CAP - 400; k <= OUT_CAP; k++) {
        char req[64];
        int n = snprintf(req, sizeof req, "GET /fill/%u HTTP/1.1\r\nHost: a\r\n\r\n", k);
        VCHECK_EQ(vega_stream_write(a, req, (size_t)n, NULL, DL(5000)), n);
        size_t len = read_response(a, body, sizeof body);
        VCHECK_EQ(len, k + FILE_LEN);
        for (unsigned i = 0; i < k; i++)
            VCHECK(body[i] == 'f');
        VCHECK(memcmp(body + k, file_bytes, FILE_LEN) == 0);
    }
    VCHECK_EQ(vega_stream_shutdown(a, SHUT_WR, DL(1000)), 0);
    VCHECK_EQ(vega_task_join(st, NULL, DL(5000)), 0);
    VCHECK_EQ(sa.rc, 0);
    vega_stream_close(a, DL(1000));
    vega_http_server_free(srv);
    close(fd);
}
VTEST(sendfile_after_full_buffer)
{
    vtest_run(body_sendfile_after_full_buffer, 2);
}

/* ---- the head timeout and blank lines, on the paused clock ----------------------------------- */

static int hello(vega_http_exchange *x, void *user)
{
    (void)user;
    return vega_http_respond(x, 200, NULL, 0, "hello", 5, DL(5000));
}

static void *run_srv(void *arg)
{
    return (void *)(intptr_t)vega_http_server_run(arg);
}

struct blank_srv {
    vega_http_server *srv;
    vega_addr addr;
    vega_task *run;
};

static void blank_srv_start(struct blank_srv *t)
{
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = hello;
    o.header_timeout_ns = 1000 * VEGA_NS_PER_MS;
    o.idle_timeout_ns = 60000 * VEGA_NS_PER_MS;
    VCHECK_EQ(vega_http_server_new(&t->srv, &o), 0);
    vega_addr a;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_http_server_listen(t->srv, &a, 0, &t->addr), 0);
    VCHECK_EQ(vega_task_spawn(&t->run, run_srv, t->srv), 0);
}

static void blank_srv_stop(struct blank_srv *t)
{
    vega_http_server_shutdown(t->srv, DL(1000));
    VCHECK_EQ(vega_task_join(t->run, NULL, DL(10000)), 0);
    vega_http_server_free(t->srv);
}

/* Sends "\r\n" `lines` times, `gap_ms` apart (paused clock), then waits up to 5 s for the
 * server to end the connection. Returns how many lines went out before it did, or -1 when it
 * never did; *took: from the first line to the end. *answer receives what the server sent
 * (NUL-terminated). The clock is read only once connected: the paused clock may jump while
 * the connect is with the kernel. */
static int trickle(const vega_addr *addr, int lines, unsigned gap_ms, char *answer, size_t cap,
                   vega_tstamp *took)
{
    vega_sock *s;
    VCHECK_EQ(vega_tcp_connect(&s, addr, DL(5000)), 0);
    vega_stream *st;
    VCHECK_EQ(vega_stream_from_sock(&st, s, 0), 0);
    int sent = 0;
    size_t got = 0;
    bool closed = false;
    answer[0] = 0;
    vega_tstamp t0 = vega_now();
    for (; sent < lines && !closed; sent++) {
        if (vega_stream_write(st, "\r\n", 2, NULL, DL(1000)) != 2) {
            closed = true;
            break;
        }
        VCHECK_EQ(vega_sleep_ms(gap_ms), 0);
        /* what the server said or did meanwhile, without waiting */
        vega_ssize n = vega_stream_read(st, answer + got, cap - 1 - got, 0);
        if (n > 0) {
            got += (size_t)n;
            answer[got] = 0;
        } else if (n == 0 || n == -ECONNRESET) {
            closed = true;
        }
    }
    vega_deadline dl = DL(5000);
    while (!closed) {
        vega_ssize n = vega_stream_read(st, answer + got, cap - 1 - got, dl);
        if (n > 0) {
            got += (size_t)n;
            answer[got] = 0;
            continue;
        }
        if (n == 0 || n == -ECONNRESET)
            closed = true;
        break;
    }
    *took = vega_now() - t0;
    vega_stream_close(st, DL(1000));
    return closed ? sent : -1;
}

static void body_blank_lines_timeout(void)
{
    struct blank_srv t;
    blank_srv_start(&t);
    char answer[512];
    /* Six blank lines 300 ms apart: each gap is shorter than the 1 s header timeout, the
     * whole head is not. The server closes about 1 s after the first, without an answer. */
    vega_tstamp took;
    int sent = trickle(&t.addr, 6, 300, answer, sizeof answer, &took);
    VCHECK(sent >= 0);
    printf("closed after %d blank lines, %llu ms (paused clock)\n", sent,
           (unsigned long long)(took / VEGA_NS_PER_MS));
    VCHECK(took < 2000 * VEGA_NS_PER_MS);
    VCHECK_STR(answer, "");
    vega_http_server_stats st;
    vega_http_server_get_stats(t.srv, &st);
    VCHECK_EQ(st.timeouts, 1);
    blank_srv_stop(&t);
}
VTEST(blank_lines_do_not_restart_the_head_timeout)
{
    vtest_run_paused(body_blank_lines_timeout);
}

static void body_blank_lines_cap(void)
{
    struct blank_srv t;
    blank_srv_start(&t);
    char answer[512];
    /* Twenty blank lines 20 ms apart (within the header timeout): the first eight are ignored,
     * across however many parks, and the ninth is a malformed request line: 400, close. */
    vega_tstamp took;
    int sent = trickle(&t.addr, 20, 20, answer, sizeof answer, &took);
    VCHECK(sent >= 0);
    printf("closed after %d blank lines: %.12s\n", sent, answer);
    VCHECK(strncmp(answer, "HTTP/1.1 400 ", 13) == 0);
    VCHECK(sent <= 12); /* the ninth, plus the reads that notice it */
    blank_srv_stop(&t);
}
VTEST(blank_lines_are_capped_across_parks)
{
    vtest_run_paused(body_blank_lines_cap);
}

static void body_blank_lines_then_request(void)
{
    struct blank_srv t;
    blank_srv_start(&t);
    /* A few blank lines before a request are still fine (RFC 9112 §2.2). */
    vega_sock *s;
    VCHECK_EQ(vega_tcp_connect(&s, &t.addr, DL(5000)), 0);
    vega_stream *st;
    VCHECK_EQ(vega_stream_from_sock(&st, s, 0), 0);
    for (int i = 0; i < 3; i++) {
        VCHECK_EQ(vega_stream_write(st, "\r\n", 2, NULL, DL(1000)), 2);
        VCHECK_EQ(vega_sleep_ms(100), 0);
    }
    const char *req = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    VCHECK_EQ(vega_stream_write(st, req, strlen(req), NULL, DL(1000)), (vega_ssize)strlen(req));
    char buf[512];
    size_t got = 0;
    while (!memmem(buf, got, "hello", 5)) {
        vega_ssize n = vega_stream_read(st, buf + got, sizeof buf - got, DL(5000));
        VCHECK(n > 0);
        got += (size_t)n;
    }
    VCHECK(memcmp(buf, "HTTP/1.1 200 ", 13) == 0);
    vega_stream_close(st, DL(1000));
    blank_srv_stop(&t);
}
VTEST(blank_lines_before_a_request)
{
    vtest_run_paused(body_blank_lines_then_request);
}
