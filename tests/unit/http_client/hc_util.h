/* SPDX-License-Identifier: MIT */
/* Helpers for the HTTP client tests: a raw scripted server on loopback (plain or TLS) that
 * reads requests and answers hand-written bytes, and a fetch helper for the client side. */
#ifndef VEGA_HC_TEST_UTIL_H
#define VEGA_HC_TEST_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <vega/http_client.h>
#include <vega/io.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/tls.h>

#include "vtest.h"

#define DL(ms)       vega_deadline_in_ms(ms)
#define HS_MAX_STEPS 128
#define HS_REQ_CAP   65536

/* One request-response turn of the scripted server. */
struct hs_step {
    const char *resp;  /* bytes to answer; NULL = none */
    size_t len;        /* 0 = strlen(resp) */
    bool close_after;  /* close the connection after answering */
    bool send_100;     /* answer 100 Continue once the head arrived, before reading a body */
    bool no_body_read; /* do not read the request body (answer right after the head) */
    unsigned hang_ms;  /* wait this long before answering (then close) */
};

struct hs {
    vega_sock *l;
    vega_addr addr;
    uint16_t port;
    vega_tls_config *tls; /* server config, NULL = plain */
    struct hs_step steps[HS_MAX_STEPS];
    size_t nsteps;
    vega_task *task;
    vega_group *conns;
    atomic_uint accepts;
    pthread_mutex_t mu; /* served, last_req, reqs: connection tasks may run on several workers */
    size_t served;
    char last_req[HS_REQ_CAP + 1]; /* head and body of the last request, NUL-terminated */
    size_t last_req_len;
    char reqs[HS_REQ_CAP + 1]; /* every request head, concatenated */
    size_t reqs_len;
};

/* Adds a step to the script; a connection task of an earlier request may be reading the
 * script at the same time (a kept-alive connection waiting for its next request). */
static inline void hs_step(struct hs *h, struct hs_step st)
{
    if (st.resp && !st.len)
        st.len = strlen(st.resp);
    pthread_mutex_lock(&h->mu);
    size_t n = h->nsteps;
    if (n < HS_MAX_STEPS)
        h->steps[h->nsteps++] = st;
    pthread_mutex_unlock(&h->mu);
    VCHECK(n < HS_MAX_STEPS);
}

/* Reads one request (head, then a Content-Length or chunked body) from s. buf holds leftovers
 * between calls (*have bytes). Returns the request length, 0 at EOF, < 0 on error. */
static inline vega_ssize hs_read_req(struct hs *h, vega_stream *s, char *buf, size_t *have,
                                     const struct hs_step *st)
{
    size_t head_end = 0;
    for (;;) {
        char *e = *have >= 4 ? memmem(buf, *have, "\r\n\r\n", 4) : NULL;
        if (e) {
            head_end = (size_t)(e - buf) + 4;
            break;
        }
        if (*have == HS_REQ_CAP)
            return -E2BIG;
        vega_ssize n = vega_stream_read(s, buf + *have, HS_REQ_CAP - *have, DL(5000));
        if (n <= 0)
            return n;
        *have += (size_t)n;
    }
    pthread_mutex_lock(&h->mu);
    if (h->reqs_len + head_end < HS_REQ_CAP) {
        memcpy(h->reqs + h->reqs_len, buf, head_end);
        h->reqs_len += head_end;
        h->reqs[h->reqs_len] = 0;
    }
    pthread_mutex_unlock(&h->mu);
    if (st && st->send_100)
        vega_stream_write(s, "HTTP/1.1 100 Continue\r\n\r\n", 25, NULL, DL(2000));
    size_t total = head_end;
    char save = buf[head_end - 1];
    buf[head_end - 1] = 0;
    const char *cl = strcasestr(buf, "\r\ncontent-length:");
    bool chunked = strcasestr(buf, "\r\ntransfer-encoding: chunked") != NULL;
    buf[head_end - 1] = save;
    if (st && st->no_body_read) {
        cl = NULL;
        chunked = false;
    }
    if (cl) {
        total += strtoull(cl + 17, NULL, 10);
        VCHECK(total <= HS_REQ_CAP);
        while (*have < total) {
            vega_ssize n = vega_stream_read(s, buf + *have, HS_REQ_CAP - *have, DL(5000));
            if (n <= 0)
                return n < 0 ? n : -EPIPE;
            *have += (size_t)n;
        }
    } else if (chunked) {
        for (;;) {
            char *e = memmem(buf + head_end, *have - head_end, "0\r\n\r\n", 5);
            if (e && (e == buf + head_end || e[-1] == '\n')) {
                total = (size_t)(e - buf) + 5;
                break;
            }
            VCHECK(*have < HS_REQ_CAP);
            vega_ssize n = vega_stream_read(s, buf + *have, HS_REQ_CAP - *have, DL(5000));
            if (n <= 0)
                return n < 0 ? n : -EPIPE;
            *have += (size_t)n;
        }
    }
    pthread_mutex_lock(&h->mu);
    memcpy(h->last_req, buf, total);
    h->last_req[total] = 0;
    h->last_req_len = total;
    pthread_mutex_unlock(&h->mu);
    memmove(buf, buf + total, *have - total);
    *have -= total;
    return (vega_ssize)total;
}

struct hs_conn {
    struct hs *h;
    vega_sock *cs;
};

static inline void *hs_conn_task(void *arg)
{
    struct hs_conn *hc = arg;
    struct hs *h = hc->h;
    vega_stream *s;
    if (h->tls)
        VCHECK_EQ(vega_tls_stream_from_sock(&s, hc->cs, 0, h->tls, NULL), 0);
    else
        VCHECK_EQ(vega_stream_from_sock(&s, hc->cs, 0), 0);
    free(hc);
    char *buf = malloc(HS_REQ_CAP + 1);
    size_t have = 0;
    for (;;) {
        pthread_mutex_lock(&h->mu);
        const struct hs_step *st = h->served < h->nsteps ? &h->steps[h->served] : NULL;
        pthread_mutex_unlock(&h->mu);
        vega_ssize n = hs_read_req(h, s, buf, &have, st);
        if (n <= 0 || !st)
            break; /* the client closed, or a request beyond the script */
        pthread_mutex_lock(&h->mu);
        st = h->served < h->nsteps ? &h->steps[h->served++] : NULL;
        pthread_mutex_unlock(&h->mu);
        if (!st)
            break;
        if (st->hang_ms) {
            vega_sleep_ms(st->hang_ms);
            break;
        }
        if (st->resp && vega_stream_write(s, st->resp, st->len, NULL, DL(5000)) < 0)
            break;
        if (st->close_after)
            break;
    }
    vega_stream_close(s, DL(1000));
    free(buf);
    return NULL;
}

/* Accepts connections and serves each in its own task; the script's steps are taken in the
 * order requests arrive, whatever the connection. */
static inline void *hs_task(void *arg)
{
    struct hs *h = arg;
    for (;;) {
        vega_sock *cs;
        if (vega_tcp_accept(h->l, &cs, NULL, VEGA_DEADLINE_NEVER) < 0)
            break;
        h->accepts++;
        struct hs_conn *hc = malloc(sizeof *hc);
        VCHECK(hc);
        hc->h = h;
        hc->cs = cs;
        VCHECK_EQ(vega_group_spawn(h->conns, hs_conn_task, hc), 0);
    }
    return NULL;
}

static inline struct hs *hs_new(vega_tls_config *tls)
{
    struct hs *h = calloc(1, sizeof *h);
    VCHECK(h);
    VCHECK_EQ(vega_addr_parse(&h->addr, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_tcp_listen(&h->l, &h->addr, 0, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(h->l, &h->addr), 0);
    h->port = vega_addr_port(&h->addr);
    h->tls = tls;
    pthread_mutex_init(&h->mu, NULL);
    return h;
}

static inline void hs_start(struct hs *h)
{
    VCHECK_EQ(vega_group_new(&h->conns), 0);
    VCHECK_EQ(vega_task_spawn(&h->task, hs_task, h), 0);
}

static inline void hs_free(struct hs *h)
{
    vega_task_cancel(h->task);
    vega_task_join(h->task, NULL, VEGA_DEADLINE_NEVER);
    vega_group_cancel(h->conns);
    vega_group_wait(h->conns, VEGA_DEADLINE_NEVER);
    vega_group_free(h->conns);
    pthread_mutex_destroy(&h->mu);
    vega_sock_close(h->l);
    free(h);
}

static inline void hs_url(const struct hs *h, char *out, size_t cap, const char *path)
{
    snprintf(out, cap, "%s://127.0.0.1:%u%s", h->tls ? "https" : "http", h->port, path);
}

/* Sends rq and reads the whole body into body (cap bytes, NUL-terminated). Returns the body
 * length or the first error; *out receives the response (NULL on a send error). */
static inline vega_ssize hc_fetch(vega_http_client *c, const vega_http_client_request *rq,
                                  vega_http_client_response **out, char *body, size_t cap)
{
    *out = NULL;
    int rc = vega_http_client_send(c, rq, out);
    if (rc < 0)
        return rc;
    size_t got = 0;
    for (;;) {
        if (got + 1 >= cap)
            return -E2BIG;
        vega_ssize n = vega_http_client_response_read(*out, body + got, cap - 1 - got, DL(5000));
        if (n < 0)
            return n;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    body[got] = 0;
    return (vega_ssize)got;
}

static inline vega_http_client *hc_client(void)
{
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, NULL), 0);
    return c;
}

static inline const char *hc_field(const vega_http_client_response *r, const char *name)
{
    const vega_http_field *f =
        vega_http_fields_get(vega_http_client_response_info(r)->fields, name, strlen(name));
    return f ? f->value.ptr : NULL;
}

#endif
