/* SPDX-License-Identifier: MIT */
/* The end of an HTTP/3 connection while responses are still unread: the endpoint frees the
 * QUIC connection and its stream buffers at its teardown, and every byte that arrived before
 * the close is still the reader's. A server that closes gracefully (H3_NO_ERROR) after its whole
 * answer arrived did nothing wrong: the response completes. One cut short gives what came, then
 * the close's error. The reads here start only once the client's connection was torn down. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "client_int.h"
#include "h3_util.h"

#define DL(ms) vega_deadline_in_ms(ms)

/* Reads r until its end or an error: the bytes in *got (they must be the pattern), the last
 * result returned (0 at the end). */
static vega_ssize read_all(vega_http_client_response *r, size_t step, size_t *got)
{
    uint8_t *b = malloc(step);
    VCHECK(b != NULL);
    *got = 0;
    vega_ssize n;
    while ((n = vega_http_client_response_read(r, b, step, DL(20000))) > 0) {
        for (vega_ssize i = 0; i < n; i++)
            VCHECK_EQ(b[i], h3t_byte(*got + (size_t)i));
        *got += (size_t)n;
    }
    free(b);
    return n;
}

/* Until the client's QUIC connection of r is torn down (its buffers freed). */
static void wait_torn_down(vega_http_client_response *r)
{
    VCHECK(r->h3 != NULL && r->h3->qe != NULL);
    VCHECK_EQ(vega_quic_ep_conn_wait_closed(r->h3->qe, DL(20000)), 0);
}

/* The server sends a whole answer and, once all of it was acknowledged, closes the connection
 * with H3_NO_ERROR (a vega-serve stop or reload). The client read only the head so far: the
 * rest, read after the teardown, is all there and the response ends without an error. */
VTEST_MT(graceful_close_after_whole_response, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/done/100000");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->status, 200);
    wait_torn_down(r);
    size_t got;
    VCHECK_EQ(read_all(r, 1000, &got), 0);
    VCHECK_EQ(got, 100000);
    vega_http_client_wire_error we;
    vega_http_client_response_get_error(r, &we);
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_NONE);
    vega_http_client_response_free(r);
    /* the client opens a new connection for what comes next */
    h3t_url(s, url, sizeof url, "/hello");
    h3t_req(&rq, url);
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    VCHECK(!vega_http_client_response_info(r)->reused);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* An allocator that refuses, while armed, a new block of a power of two from 4 KiB up: the
 * kept tail's first allocation (4 KiB doubled until the bytes fit). */
static atomic_bool tail_refuse;
static atomic_int tail_refused;

static void *ta_malloc(void *ud, size_t n)
{
    (void)ud;
    if (n >= 4096 && (n & (n - 1)) == 0 && atomic_load(&tail_refuse)) {
        atomic_fetch_add(&tail_refused, 1);
        return NULL;
    }
    return malloc(n);
}

static void *ta_calloc(void *ud, size_t n, size_t size)
{
    (void)ud;
    return calloc(n, size);
}

static void *ta_realloc(void *ud, void *p, size_t n)
{
    (void)ud;
    return realloc(p, n);
}

static void ta_free(void *ud, void *p)
{
    (void)ud;
    free(p);
}

/* No memory to keep the unread tail when the connection ends: what was not kept is lost, and
 * the read says so with the close's error, never a short body that looks whole. The allocator
 * is armed once the head is in: the server closes only after all of the body was acknowledged,
 * which a starved client may have seen already by then (nothing refused: that round proves
 * nothing and is run again, at most ten times). */
VTEST_MT(graceful_close_no_memory_for_the_tail, 2)
{
    static const vega_mem ta = {ta_malloc, ta_calloc, ta_realloc, ta_free, NULL};
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, &ta);
    char url[128];
    h3t_url(s, url, sizeof url, "/done/100000");
    int rounds = 0;
    do {
        atomic_store(&tail_refused, 0);
        vega_http_client_request rq;
        h3t_req(&rq, url);
        vega_http_client_response *r;
        VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
        VCHECK_EQ(vega_http_client_response_info(r)->status, 200);
        atomic_store(&tail_refuse, true);
        wait_torn_down(r);
        atomic_store(&tail_refuse, false);
        size_t got;
        vega_ssize end = read_all(r, 1000, &got);
        if (atomic_load(&tail_refused) > 0) {
            VCHECK(end < 0);
            VCHECK(got < 100000);
        }
        vega_http_client_response_free(r);
    } while (atomic_load(&tail_refused) == 0 && ++rounds < 10);
    VCHECK(atomic_load(&tail_refused) > 0);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* The close comes in the middle of a response: the bytes that arrived before it are delivered,
 * then the read fails with the close's error (the server's H3_NO_ERROR, "shutdown"). */
VTEST_MT(graceful_close_mid_response, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/cut/1000");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0); /* its 1000 bytes came with the head */
    VCHECK_EQ(vega_http_client_response_info(r)->content_length, 2000);
    /* a second request on the connection makes the server close it, unanswered */
    char url2[128];
    h3t_url(s, url2, sizeof url2, "/drop");
    vega_http_client_request rq2;
    h3t_req(&rq2, url2);
    vega_http_client_response *r2;
    VCHECK_EQ(vega_http_client_send(c, &rq2, &r2), VEGA_ERR_QUIC_EP_CLOSED);
    wait_torn_down(r);
    size_t got;
    VCHECK_EQ(read_all(r, 300, &got), VEGA_ERR_QUIC_EP_CLOSED);
    VCHECK_EQ(got, 1000);
    vega_http_client_wire_error we;
    vega_http_client_response_get_error(r, &we);
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_H3);
    VCHECK(!we.local);
    VCHECK_EQ(we.code, VEGA_H3_NO_ERROR);
    VCHECK_STR(we.reason, "shutdown");
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* Many responses unread on one connection when it closes: each keeps what it got (bounded by
 * the windows the client advertised), and each completes. */
VTEST_MT(graceful_close_many_unread, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    enum {
        N = 8
    };
    vega_http_client_response *r[N];
    h3t_url(s, url, sizeof url, "/big/30000");
    for (int i = 0; i < N; i++) {
        vega_http_client_request rq;
        h3t_req(&rq, url);
        VCHECK_EQ(vega_http_client_send(c, &rq, &r[i]), 0);
    }
    /* the last one closes the connection once all of it was acknowledged; the earlier ones
     * went first on the same connection and may or may not have come whole */
    h3t_url(s, url, sizeof url, "/done/30000");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    vega_http_client_response *last;
    VCHECK_EQ(vega_http_client_send(c, &rq, &last), 0);
    wait_torn_down(last);
    size_t got;
    VCHECK_EQ(read_all(last, 4096, &got), 0);
    VCHECK_EQ(got, 30000);
    for (int i = 0; i < N; i++) {
        vega_ssize rc = read_all(r[i], 4096, &got);
        VCHECK(rc == 0 || rc == VEGA_ERR_QUIC_EP_CLOSED);
        VCHECK(rc != 0 || got == 30000);
        vega_http_client_response_free(r[i]);
    }
    vega_http_client_response_free(last);
    vega_http_client_free(c);
    h3t_stop(s);
}
