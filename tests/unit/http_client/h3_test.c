/* SPDX-License-Identifier: MIT */
/* The HTTP client over HTTP/3 (RFC 9114) against an in-process server on the QUIC endpoint and
 * the HTTP/3 core (h3_util.h): heads and bodies, one connection per origin carrying many
 * requests at once, request bodies as DATA frames, interim responses, trailers, content-length
 * checks, decompression, stream resets and GOAWAY with their retries, the end of a connection,
 * timeouts, certificates, resumption and 0-RTT. */
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "h3_util.h"

#define DL(ms) vega_deadline_in_ms(ms)

/* Reads r's whole body into a malloc'd buffer (with a NUL), in reads of step bytes. */
static vega_ssize read_body(vega_http_client_response *r, uint8_t **out, size_t step)
{
    size_t cap = 1 << 16, len = 0;
    uint8_t *b = malloc(cap + 1);
    VCHECK(b != NULL);
    for (;;) {
        if (cap - len < step) {
            cap = cap * 2 + step;
            b = realloc(b, cap + 1);
            VCHECK(b != NULL);
        }
        vega_ssize n = vega_http_client_response_read(r, b + len, step, DL(20000));
        if (n < 0) {
            free(b);
            *out = NULL;
            return n;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    b[len] = 0;
    *out = b;
    return (vega_ssize)len;
}

static bool is_pattern(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != h3t_byte(i))
            return false;
    return true;
}

static vega_ssize fetch(vega_http_client *c, const char *url, vega_http_client_response **r,
                        uint8_t **body)
{
    vega_http_client_request rq;
    h3t_req(&rq, url);
    int rc = vega_http_client_send(c, &rq, r);
    if (rc < 0)
        return rc;
    return read_body(*r, body, 16384);
}

/* ---- heads and bodies --------------------------------------------------------------------- */

VTEST_MT(get_hello, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/hello");
    vega_http_client_response *r;
    uint8_t *body;
    VCHECK_EQ(fetch(c, url, &r, &body), 5);
    VCHECK_STR((char *)body, "hello");
    const vega_http_client_info *in = vega_http_client_response_info(r);
    VCHECK_EQ(in->status, 200);
    VCHECK_EQ(in->version, VEGA_HTTP_CLIENT_V3);
    VCHECK_STR(in->alpn, "h3");
    VCHECK_STR(in->tls_version, "TLSv1.3");
    VCHECK_EQ(in->quic_version, VEGA_QUIC_V1);
    VCHECK(in->tls_suite != 0);
    VCHECK(!in->reused && !in->tls_resumed);
    VCHECK_EQ(in->content_length, 5);
    VCHECK_EQ(in->stream_id, 0);
    VCHECK_EQ(vega_addr_port(&in->peer), s->port);
    /* t_start <= t_dns <= t_connect = t_tls <= t_sent <= t_first_byte <= t_done */
    VCHECK(in->t_start && in->t_dns >= in->t_start && in->t_connect >= in->t_dns);
    VCHECK_EQ(in->t_tls, in->t_connect);
    VCHECK(in->t_sent >= in->t_connect && in->t_first_byte >= in->t_sent);
    VCHECK(in->t_done >= in->t_first_byte);
    const vega_http_field *xp = vega_http_fields_get(in->fields, "x-path", 6);
    VCHECK(xp && xp->value.len == 6 && !memcmp(xp->value.ptr, "/hello", 6));
    vega_http_client_wire_error we;
    vega_http_client_response_get_error(r, &we);
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_NONE);
    free(body);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* A body several times the flow-control windows, read in large and in tiny pieces and with
 * read_all; bodies without content-length in small DATA frames. */
VTEST_MT(large_bodies, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/big/6000000");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    static const size_t steps[] = {1 << 20, 777};
    for (size_t k = 0; k < 2; k++) {
        vega_http_client_response *r;
        VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
        uint8_t *body;
        VCHECK_EQ(read_body(r, &body, steps[k]), 6000000);
        VCHECK(is_pattern(body, 6000000));
        VCHECK_EQ(vega_http_client_response_info(r)->reused, k > 0);
        free(body);
        vega_http_client_response_free(r);
    }
    h3t_url(s, url, sizeof url, "/chunky/300001");
    h3t_req(&rq, url);
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->content_length, VEGA_HTTP_LENGTH_UNKNOWN);
    void *all;
    VCHECK_EQ(vega_http_client_response_read_all(r, &all, 1 << 20, DL(20000)), 300001);
    VCHECK(is_pattern(all, 300001));
    vega_http_client_body_free(c, all);
    vega_http_client_response_free(r);
    VCHECK_EQ(atomic_load(&s->conns), 1);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* RFC 9114 §3.3: one connection per origin, many requests at once on it. */
struct par {
    vega_http_client *c;
    const char *url;
    int ok;
};

static void *par_task(void *arg)
{
    struct par *p = arg;
    vega_http_client_response *r;
    uint8_t *body;
    vega_ssize n = fetch(p->c, p->url, &r, &body);
    if (n == 200000 && is_pattern(body, 200000))
        p->ok = 1;
    free(body);
    if (n >= 0 || r)
        vega_http_client_response_free(r);
    return NULL;
}

VTEST_MT(many_requests_one_connection, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/big/200000");
    struct par p[24];
    vega_task *t[24];
    for (int i = 0; i < 24; i++) {
        p[i] = (struct par){c, url, 0};
        VCHECK_EQ(vega_task_spawn(&t[i], par_task, &p[i]), 0);
    }
    for (int i = 0; i < 24; i++) {
        VCHECK_EQ(vega_task_join(t[i], NULL, DL(60000)), 0);
        VCHECK_EQ(p[i].ok, 1);
    }
    VCHECK_EQ(atomic_load(&s->conns), 1);
    VCHECK_EQ(atomic_load(&s->requests), 24);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* ---- request bodies ------------------------------------------------------------------------ */

struct gen {
    uint64_t left, off;
};

static vega_ssize gen_fn(void *user, void *buf, size_t len)
{
    struct gen *g = user;
    size_t n = g->left < len ? (size_t)g->left : len;
    if (n > 50000)
        n = 50000;
    for (size_t i = 0; i < n; i++)
        ((uint8_t *)buf)[i] = h3t_byte(g->off + i);
    g->off += n;
    g->left -= n;
    return (vega_ssize)n;
}

static void post_and_check(vega_http_client *c, vega_http_client_request *rq, size_t n)
{
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, rq, &r), 0);
    uint8_t *body;
    VCHECK_EQ(read_body(r, &body, 65536), (vega_ssize)n);
    VCHECK(is_pattern(body, n));
    free(body);
    vega_http_client_response_free(r);
}

VTEST_MT(request_bodies, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/echo");
    size_t n = 1500000;
    uint8_t *mem = malloc(n);
    for (size_t i = 0; i < n; i++)
        mem[i] = h3t_byte(i);
    vega_http_client_request rq;
    /* in memory */
    h3t_req(&rq, url);
    rq.body = mem;
    rq.body_len = n;
    post_and_check(c, &rq, n);
    /* body_fn, known length and unknown length */
    struct gen g = {n, 0};
    h3t_req(&rq, url);
    rq.body_fn = gen_fn;
    rq.body_user = &g;
    rq.body_length = n;
    post_and_check(c, &rq, n);
    g = (struct gen){n, 0};
    rq.body_length = VEGA_HTTP_LENGTH_UNKNOWN;
    post_and_check(c, &rq, n);
    /* a file, from an offset */
    char path[] = "/tmp/vega-h3-body-XXXXXX";
    int fd = mkstemp(path);
    VCHECK(fd >= 0);
    VCHECK_EQ(write(fd, "xyz", 3), 3);
    VCHECK_EQ(write(fd, mem, n), (ssize_t)n);
    unlink(path);
    h3t_req(&rq, url);
    rq.body_file = true;
    rq.body_fd = fd;
    rq.body_offset = 3;
    rq.body_length = n;
    post_and_check(c, &rq, n);
    /* a file that is shorter than announced */
    rq.body_length = n + 10;
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), -ENODATA);
    close(fd);
    /* an empty body: content-length 0 */
    h3t_req(&rq, url);
    rq.body = "";
    rq.body_len = 0;
    post_and_check(c, &rq, 0);
    free(mem);
    VCHECK_EQ(atomic_load(&s->conns), 1);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* ---- the response ------------------------------------------------------------------------ */

struct trace {
    char buf[4096];
    size_t len;
};

static void on_trace(void *user, bool is_request, const void *head, size_t len)
{
    struct trace *t = user;
    const char *tag = is_request ? ">" : "<";
    if (t->len + len + 1 < sizeof t->buf) {
        memcpy(t->buf + t->len, tag, 1);
        memcpy(t->buf + t->len + 1, head, len);
        t->len += len + 1;
        t->buf[t->len] = 0;
    }
}

/* RFC 9114 §4.1: interim responses are skipped (the trace hook sees them), trailers come at
 * the end; HEAD has the length without content. */
VTEST_MT(interim_trailers_head, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/info");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    struct trace t = {.len = 0};
    rq.trace = on_trace;
    rq.trace_user = &t;
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->status, 200);
    uint8_t *body;
    VCHECK_EQ(read_body(r, &body, 100), 13);
    VCHECK_STR((char *)body, "after interim");
    free(body);
    vega_http_client_response_free(r);
    VCHECK(strstr(t.buf, ">GET /info HTTP/3\r\nhost: localhost:"));
    VCHECK(strstr(t.buf, "<HTTP/3 103\r\nlink: </a>\r\n\r\n<HTTP/3 100\r\n\r\n<HTTP/3 200\r\n"));

    h3t_url(s, url, sizeof url, "/trailers");
    h3t_req(&rq, url);
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    const vega_http_client_info *in = vega_http_client_response_info(r);
    VCHECK_EQ(in->trailers->count, 0);
    VCHECK_EQ(read_body(r, &body, 100), 4);
    free(body);
    const vega_http_field *tf = vega_http_fields_get(in->trailers, "x-checksum", 10);
    VCHECK(tf && tf->value.len == 2 && !memcmp(tf->value.ptr, "42", 2));
    vega_http_client_response_free(r);

    h3t_url(s, url, sizeof url, "/big/1000");
    h3t_req(&rq, url);
    rq.method = "HEAD";
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->content_length, 1000);
    VCHECK_EQ(read_body(r, &body, 100), 0);
    free(body);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* Decompression as for HTTP/1.1: Accept-Encoding goes, a gzip body comes back decoded. */
VTEST_MT(decompress, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/gzip");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    rq.decompress = true;
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->coding, VEGA_HTTP_CODING_GZIP);
    uint8_t *body;
    VCHECK_EQ(read_body(r, &body, 7), 54);
    VCHECK_STR((char *)body, "hello compressed world, hello compressed world, hello!");
    free(body);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* RFC 9114 §4.1.2: a body shorter than its content-length is malformed: a stream error of
 * ours (H3_MESSAGE_ERROR), and the connection serves on. */
VTEST_MT(content_length_mismatch, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/badlen");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    uint8_t *body;
    VCHECK_EQ(read_body(r, &body, 100), VEGA_ERR_PROTO);
    vega_http_client_wire_error we;
    vega_http_client_response_get_error(r, &we);
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_STREAM);
    VCHECK(we.local);
    VCHECK_EQ(we.code, VEGA_H3_MESSAGE_ERROR);
    vega_http_client_response_free(r);
    h3t_url(s, url, sizeof url, "/hello");
    VCHECK_EQ(fetch(c, url, &r, &body), 5);
    VCHECK(vega_http_client_response_info(r)->reused);
    free(body);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* ---- errors and retries --------------------------------------------------------------------- */

/* A stream the server resets fails with its code; H3_REQUEST_REJECTED (not processed, RFC 9114
 * §4.1.1) goes once more on a new connection. */
VTEST_MT(resets_and_rejects, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/reset");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    vega_http_client_wire_error we;
    rq.wire_error = &we;
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_ERR_QUIC_EP_RESET);
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_STREAM);
    VCHECK(!we.local);
    VCHECK_EQ(we.code, VEGA_H3_INTERNAL_ERROR);
    h3t_url(s, url, sizeof url, "/reject");
    h3t_req(&rq, url);
    rq.wire_error = &we;
    uint8_t *body;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_NONE);
    VCHECK_EQ(read_body(r, &body, 100), 8);
    VCHECK_STR((char *)body, "accepted");
    free(body);
    vega_http_client_response_free(r);
    VCHECK_EQ(atomic_load(&s->conns), 2);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* RFC 9114 §5.2: after GOAWAY no new request goes on the connection: the next one opens a new
 * connection. */
VTEST_MT(goaway_moves_to_new_connection, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/goaway");
    vega_http_client_response *r;
    uint8_t *body;
    VCHECK_EQ(fetch(c, url, &r, &body), 3);
    free(body);
    vega_http_client_response_free(r);
    vega_sleep_ms(100); /* the GOAWAY arrives */
    h3t_url(s, url, sizeof url, "/conn");
    VCHECK_EQ(fetch(c, url, &r, &body), 6);
    VCHECK_STR((char *)body, "conn 2");
    free(body);
    vega_http_client_response_free(r);
    VCHECK_EQ(atomic_load(&s->conns), 2);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* Requests the server provably did not process go once more on a new connection: one at or
 * above a GOAWAY's id (GOAWAY 0, RFC 9114 §5.2), one on a connection the server closed with
 * CONNECTION_REFUSED (RFC 9000 §20.1, a server that stops after the handshake). Exactly two
 * connections and one answered request each time: one retry, not more. */
VTEST_MT(unprocessed_requests_retried, 2)
{
    static const char *const paths[] = {"/unseen", "/refuse"};
    for (size_t i = 0; i < 2; i++) {
        struct h3t_srv *s = h3t_start(0);
        vega_http_client *c = h3t_client(s, NULL);
        char url[128];
        h3t_url(s, url, sizeof url, paths[i]);
        vega_http_client_request rq;
        h3t_req(&rq, url);
        vega_http_client_wire_error we;
        rq.wire_error = &we;
        vega_http_client_response *r;
        uint8_t *body;
        VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
        VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_NONE);
        VCHECK_EQ(read_body(r, &body, 100), 8);
        VCHECK_STR((char *)body, "accepted");
        free(body);
        vega_http_client_response_free(r);
        VCHECK_EQ(atomic_load(&s->conns), 2);
        VCHECK_EQ(atomic_load(&s->requests), 2); /* the refused one, the answered one */
        vega_http_client_free(c);
        h3t_stop(s);
    }
}

/* Refusals in a row (a server reloaded back to back): three are retried, each on a new
 * connection, and the fourth is the error (CONNECTION_REFUSED in wire_error). */
VTEST_MT(refusals_in_a_row, 2)
{
    for (int n = 3; n <= 4; n++) {
        struct h3t_srv *s = h3t_start(0);
        atomic_store(&s->refuse_left, n);
        vega_http_client *c = h3t_client(s, NULL);
        char url[128];
        h3t_url(s, url, sizeof url, "/refusals");
        vega_http_client_request rq;
        h3t_req(&rq, url);
        vega_http_client_wire_error we;
        rq.wire_error = &we;
        vega_http_client_response *r = NULL;
        int rc = vega_http_client_send(c, &rq, &r);
        VCHECK_EQ(atomic_load(&s->conns), 4);
        if (n == 3) {
            VCHECK_EQ(rc, 0);
            uint8_t *body;
            VCHECK_EQ(read_body(r, &body, 100), 8);
            VCHECK_STR((char *)body, "accepted");
            free(body);
            vega_http_client_response_free(r);
        } else {
            VCHECK_EQ(rc, VEGA_ERR_QUIC_EP_CLOSED);
            VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_QUIC);
            VCHECK_EQ(we.code, VEGA_QUIC_CONNECTION_REFUSED);
        }
        vega_http_client_free(c);
        h3t_stop(s);
    }
}

/* A connection the server closed before any answer, with no GOAWAY and no refusal, may have
 * processed the request: a fresh connection's request is not sent again. */
VTEST_MT(closed_without_goaway_not_retried, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/drop");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    vega_http_client_wire_error we;
    rq.wire_error = &we;
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_ERR_QUIC_EP_CLOSED);
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_H3);
    VCHECK_EQ(we.code, VEGA_H3_NO_ERROR);
    VCHECK_EQ(atomic_load(&s->conns), 1);
    VCHECK_EQ(atomic_load(&s->requests), 1);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* The server closes the connection in the middle of a body. */
VTEST_MT(connection_closed_mid_body, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/close/4000000");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    uint8_t *body;
    VCHECK_EQ(read_body(r, &body, 65536), VEGA_ERR_QUIC_EP_CLOSED);
    vega_http_client_wire_error we;
    vega_http_client_response_get_error(r, &we);
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_H3);
    VCHECK(!we.local);
    VCHECK_EQ(we.code, VEGA_H3_INTERNAL_ERROR);
    VCHECK_STR(we.reason, "test close");
    vega_http_client_response_free(r);
    /* the client opens a new connection for what comes next */
    h3t_url(s, url, sizeof url, "/hello");
    VCHECK_EQ(fetch(c, url, &r, &body), 5);
    VCHECK(!vega_http_client_response_info(r)->reused);
    free(body);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* The request's deadline bounds the wait for a server that never answers; a response dropped
 * early cancels its stream and the connection serves on. */
VTEST_MT(deadline_and_cancel, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    uint8_t *body;
    vega_http_client_response *r;
    /* the connection first: the deadline below is a request's on a connection that is up (a
     * handshake on a busy machine may outlast it, and then the connection is not kept) */
    h3t_url(s, url, sizeof url, "/hello");
    VCHECK_EQ(fetch(c, url, &r, &body), 5);
    free(body);
    vega_http_client_response_free(r);
    h3t_url(s, url, sizeof url, "/hang");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    rq.deadline = DL(300);
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), -ETIMEDOUT);
    VCHECK_WAITED(t0, 300);
    h3t_url(s, url, sizeof url, "/big/8000000");
    h3t_req(&rq, url);
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), 0);
    uint8_t buf[1000];
    VCHECK(vega_http_client_response_read(r, buf, sizeof buf, DL(5000)) > 0);
    vega_http_client_response_free(r); /* most of 8 MB never read */
    h3t_url(s, url, sizeof url, "/hello");
    VCHECK_EQ(fetch(c, url, &r, &body), 5);
    VCHECK(vega_http_client_response_info(r)->reused);
    free(body);
    vega_http_client_response_free(r);
    VCHECK_EQ(atomic_load(&s->conns), 1);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* A certificate the client does not trust fails the handshake; -k (quic_insecure) passes. */
VTEST_MT(untrusted_certificate, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_crypto_cert_store *other;
    VCHECK_EQ(vega_crypto_cert_store_new(&other, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(other, QT_OTHER_CA_PEM, strlen(QT_OTHER_CA_PEM)), 0);
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.quic_ca = other;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    char url[128];
    h3t_url(s, url, sizeof url, "/hello");
    vega_http_client_request rq;
    h3t_req(&rq, url);
    vega_http_client_wire_error we;
    rq.wire_error = &we;
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_ERR_QUIC_EP_HANDSHAKE);
    /* we sent the alert: CRYPTO_ERROR + unknown_ca (RFC 9001 §4.8, RFC 8446 §6.2) */
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_QUIC);
    VCHECK(we.local);
    VCHECK_EQ(we.code, 0x100 + 48);
    VCHECK(we.reason[0] != 0);
    vega_http_client_free(c);
    o.quic_insecure = true;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    uint8_t *body;
    VCHECK_EQ(fetch(c, url, &r, &body), 5);
    free(body);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    vega_crypto_cert_store_free(other);
    h3t_stop(s);
}

/* Nothing listens on the UDP port: ICMP says so and the connect fails at once. */
VTEST_MT(nothing_listening, 2)
{
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, NULL), 0);
    vega_sock *u;
    vega_addr a;
    VCHECK_EQ(vega_addr_from_ip(&a, "127.0.0.1", 0), 0);
    VCHECK_EQ(vega_udp_bind(&u, &a, 0), 0); /* a port that was free a moment ago */
    VCHECK_EQ(vega_sock_local_addr(u, &a), 0);
    vega_sock_close(u);
    char url[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%u/", vega_addr_port(&a));
    vega_http_client_request rq;
    h3t_req(&rq, url);
    vega_http_client_response *r;
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), -ECONNREFUSED);
    VCHECK(vega_now() - t0 < 5 * VEGA_NS_PER_S);
    vega_http_client_free(c);
}

/* HTTP/3 is for https (RFC 9114 §3.1); a version the client does not know is refused. */
VTEST_CT(versions_refused)
{
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, NULL), 0);
    vega_http_client_request rq;
    h3t_req(&rq, "http://127.0.0.1:1/");
    vega_http_client_response *r;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_ERR_HTTP_SCHEME);
    rq.version = 40; /* 20 and 21 are HTTP/2's now */
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), -EINVAL);
    vega_http_client_free(c);
}

/* ---- sessions ---------------------------------------------------------------------------- */

/* A second client that loads the first one's sessions resumes (RFC 8446 §2.2) and, with
 * quic_early_data, sends its GET in 0-RTT, which the server accepts. */
VTEST_MT(sessions_resume_and_0rtt, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    h3t_url(s, url, sizeof url, "/hello");
    vega_http_client_response *r;
    uint8_t *body;
    VCHECK_EQ(fetch(c, url, &r, &body), 5);
    free(body);
    vega_http_client_response_free(r);
    /* the ticket and the token come after the handshake */
    char *text = NULL;
    vega_ssize n = 0;
    for (int i = 0; i < 200; i++) {
        n = vega_http_client_sessions_save(c, NULL, 0);
        VCHECK(n > 0);
        free(text);
        text = malloc((size_t)n);
        VCHECK_EQ(vega_http_client_sessions_save(c, text, (size_t)n), n);
        if (memchr(text, '\n', (size_t)n) != text + n - 1 && !memmem(text, (size_t)n, " -", 2))
            break; /* a line with both a session and a token */
        vega_sleep_ms(10);
    }
    VCHECK(!memmem(text, (size_t)n, " -", 2));
    VCHECK_EQ(vega_http_client_sessions_save(c, text, (size_t)n - 1), VEGA_ERR_NOBUF);
    vega_http_client_free(c);

    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.quic_ca = s->ca;
    o.quic_early_data = true;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    VCHECK_EQ(vega_http_client_sessions_load(c, text, (size_t)n), 1);
    VCHECK_EQ(fetch(c, url, &r, &body), 5);
    const vega_http_client_info *in = vega_http_client_response_info(r);
    VCHECK(in->tls_resumed);
    VCHECK_EQ(in->early_data, VEGA_QUIC_EARLY_ACCEPTED);
    free(body);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    VCHECK_EQ(vega_http_client_sessions_load(c = h3t_client(s, NULL), "junk\n", 5), -EINVAL);
    vega_http_client_free(c);
    free(text);
    h3t_stop(s);
}

/* RFC 9369: a client set to QUIC v2 connects with it (the endpoint speaks both). */
VTEST_MT(quic_v2, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.quic_ca = s->ca;
    o.quic_version = VEGA_QUIC_V2;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    char url[128];
    h3t_url(s, url, sizeof url, "/big/100000");
    vega_http_client_response *r;
    uint8_t *body;
    VCHECK_EQ(fetch(c, url, &r, &body), 100000);
    VCHECK(is_pattern(body, 100000));
    VCHECK_EQ(vega_http_client_response_info(r)->quic_version, VEGA_QUIC_V2);
    free(body);
    vega_http_client_response_free(r);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* Limits on what the server sends: interim heads (10 at most, as for HTTP/1.1) and fields per
 * section (the client's max_fields, 100 by default): beyond, a stream error of ours. */
VTEST_MT(response_limits, 2)
{
    struct h3t_srv *s = h3t_start(0);
    vega_http_client *c = h3t_client(s, NULL);
    char url[128];
    vega_http_client_response *r;
    uint8_t *body;
    h3t_url(s, url, sizeof url, "/interim/10");
    VCHECK_EQ(fetch(c, url, &r, &body), 2);
    free(body);
    vega_http_client_response_free(r);
    vega_http_client_request rq;
    h3t_url(s, url, sizeof url, "/interim/11");
    h3t_req(&rq, url);
    vega_http_client_wire_error we;
    rq.wire_error = &we;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_ERR_PROTO);
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_STREAM);
    VCHECK(we.local);
    VCHECK_EQ(we.code, VEGA_H3_EXCESSIVE_LOAD);
    h3t_url(s, url, sizeof url, "/fields/100");
    VCHECK_EQ(fetch(c, url, &r, &body), 0);
    VCHECK_EQ(vega_http_client_response_info(r)->fields->count, 100);
    free(body);
    vega_http_client_response_free(r);
    h3t_url(s, url, sizeof url, "/fields/101");
    h3t_req(&rq, url);
    rq.wire_error = &we;
    VCHECK_EQ(vega_http_client_send(c, &rq, &r), VEGA_ERR_PROTO);
    VCHECK_EQ(we.kind, VEGA_HTTP_CLIENT_WIRE_STREAM);
    VCHECK_EQ(we.code, VEGA_H3_EXCESSIVE_LOAD);
    /* the connection served all of it */
    VCHECK_EQ(atomic_load(&s->conns), 1);
    vega_http_client_free(c);
    h3t_stop(s);
}

/* The session cache's bounds: 256 servers (the oldest go), blobs of 8 KiB at most. */
VTEST(session_cache_bounds)
{
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, NULL), 0);
    size_t cap = 400 * 64 + 20000;
    char *t = malloc(cap);
    size_t n = (size_t)snprintf(t, cap, "vega-quic-session 1\n");
    long now = (long)time(NULL);
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(t + n, cap - n, "h%d.example 443 %ld 0a0b -\n", i, now);
    VCHECK_EQ(vega_http_client_sessions_load(c, t, n), 300);
    vega_ssize k = vega_http_client_sessions_save(c, t, cap);
    VCHECK(k > 0);
    size_t lines = 0;
    for (vega_ssize i = 0; i < k; i++)
        lines += t[i] == '\n';
    VCHECK_EQ(lines, 1 + 256);
    /* a blob of 8 KiB loads, one byte more does not; a stale line does not either */
    n = (size_t)snprintf(t, cap, "vega-quic-session 1\nbig.example 1 %ld ", now);
    for (int i = 0; i < 8192; i++)
        n += (size_t)snprintf(t + n, cap - n, "ab");
    n += (size_t)snprintf(t + n, cap - n, " -\nbigger.example 1 %ld ", now);
    for (int i = 0; i < 8193; i++)
        n += (size_t)snprintf(t + n, cap - n, "ab");
    n += (size_t)snprintf(t + n, cap - n, " -\nold.example 1 %ld 0a -\n", now - 8 * 86400);
    VCHECK_EQ(vega_http_client_sessions_load(c, t, n), 1);
    free(t);
    vega_http_client_free(c);
}
