/* SPDX-License-Identifier: MIT */
/* A small HTTP/3 server for the client's tests, in process: the QUIC endpoint (lib/quic_ep) and
 * the HTTP/3 core (lib/h3) driven from on_event, with no task per connection, answering by path:
 *   /hello            200 "hello"
 *   /big/N            N pattern bytes (h3t_byte), content-length
 *   /chunky/N         the same without content-length, in many small DATA frames
 *   /echo             the request body back, after the request ends
 *   /info             103, 100, then 200 "after interim"
 *   /trailers         200 "body" then trailers x-checksum: 42
 *   /badlen           content-length 10, 5 bytes
 *   /reset            RESET_STREAM H3_INTERNAL_ERROR at once
 *   /reject           RESET_STREAM H3_REQUEST_REJECTED on a connection's first such request
 *   /goaway           200 "bye", then GOAWAY: later requests must go to a new connection
 *   /unseen           GOAWAY 0 and no answer the first time (nothing processed), then 200
 *                     "accepted"
 *   /refuse           CONNECTION_CLOSE CONNECTION_REFUSED the first time (a server that stops),
 *                     then 200 "accepted"
 *   /refusals         the same while refuse_left (set by the test) is above 0, counting it down
 *   /drop             CONNECTION_CLOSE H3_NO_ERROR with no GOAWAY and no answer
 *   /gzip             gzip'd text, content-encoding gzip
 *   /hang             never answers
 *   /close/N          N/2 of N bytes, then CONNECTION_CLOSE H3_INTERNAL_ERROR
 *   /done/N           N bytes, then CONNECTION_CLOSE H3_NO_ERROR "shutdown" once all of it
 *                     was acknowledged (a server stopping gracefully after its answer)
 *   /cut/N            content-length 2N, N bytes and no end (the stream stays open); a small N
 *                     leaves with the head, in the same packet
 *   /conn             200 with the connection's number ("conn 1")
 *   /interim/N        N interim 103 heads, then 200 "ok"
 *   /fields/N         200 with N fields x-f-I
 *   anything else     404
 * HEAD answers the GET head without content. Every response carries "x-path". */
#ifndef VEGA_HC_H3_UTIL_H
#define VEGA_HC_H3_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/compress.h>
#include <vega/crypto.h>
#include <vega/h3.h>
#include <vega/http_client.h>
#include <vega/quic_ep.h>
#include <vega/rt.h>

#include "../quic/qtls_certs.h"
#include "vtest.h"

#define H3T_MAX_STREAMS 512
#define H3T_ECHO_MAX    (4u << 20)
#define H3T_CHUNK       65536

static inline uint8_t h3t_byte(uint64_t i)
{
    return (uint8_t)((i * 2654435761u) >> 13);
}

struct h3t_stream {
    uint64_t id;
    bool used, responded, done, got_head, req_ended, fin_read;
    char method[16], path[256];
    uint8_t *echo;
    size_t echo_len, echo_cap;
    /* what goes out: pending bytes, then the body from a generator */
    uint8_t *out;
    size_t out_len, out_off, out_cap;
    uint64_t body_left, body_off;
    bool pattern;      /* body from h3t_byte */
    size_t frame_size; /* DATA frame payload size */
    bool trailers, close_conn, goaway, writable_seen;
    uint64_t close_after; /* close the connection once this much body went (0: no) */
    bool cut;             /* /cut/N: no FIN after the body */
    bool close_when_done; /* /done/N: close gracefully once all of it was acknowledged */
};

struct h3t_srv;

struct h3t_conn {
    struct h3t_srv *s;
    struct h3t_conn *next; /* the server's list */
    vega_quic_ep_conn *qe;
    vega_quic_conn *qc;
    vega_h3_conn *h3;
    int number;
    bool close_pending; /* /done/N acknowledged: close at the end of this event */
    uint64_t uni[3];
    struct h3t_stream st[H3T_MAX_STREAMS];
};

struct h3t_srv {
    vega_quic_endpoint *ep;
    vega_addr addr;
    uint16_t port;
    vega_crypto_cert_chain *chain;
    vega_crypto_key *key;
    vega_crypto_cert_store *ca; /* for clients: the CA of the server's certificate */
    uint8_t ticket_key[32];
    atomic_int conns, requests;
    atomic_bool rejected_once;             /* /reject refused once (whatever the connection) */
    atomic_bool unseen_once, refused_once; /* /unseen, /refuse: the same */
    atomic_int refuse_left;                /* /refusals */
    pthread_mutex_t mu;                    /* guards all */
    struct h3t_conn *all;
};

static inline struct h3t_stream *h3t_stream(struct h3t_conn *tc, uint64_t id, bool make)
{
    for (size_t i = 0; i < H3T_MAX_STREAMS; i++)
        if (tc->st[i].used && tc->st[i].id == id)
            return &tc->st[i];
    if (!make)
        return NULL;
    for (size_t i = 0; i < H3T_MAX_STREAMS; i++)
        if (!tc->st[i].used) {
            memset(&tc->st[i], 0, sizeof tc->st[i]);
            tc->st[i].used = true;
            tc->st[i].id = id;
            return &tc->st[i];
        }
    return NULL;
}

static inline void h3t_put(struct h3t_stream *st, const void *p, size_t n)
{
    if (st->out_len + n > st->out_cap) {
        size_t cap = st->out_cap ? st->out_cap : 4096;
        while (cap < st->out_len + n)
            cap *= 2;
        st->out = realloc(st->out, cap);
        VCHECK(st->out != NULL);
        st->out_cap = cap;
    }
    memcpy(st->out + st->out_len, p, n);
    st->out_len += n;
}

static inline void h3t_head(struct h3t_conn *tc, struct h3t_stream *st, int status,
                            const vega_http_field *f, size_t n)
{
    uint8_t buf[4096];
    vega_ssize w = vega_h3_conn_write_response_head(tc->h3, st->id, status, f, n, buf, sizeof buf);
    VCHECK(w > 0);
    h3t_put(st, buf, (size_t)w);
}

static inline void h3t_data(struct h3t_stream *st, const void *p, size_t n)
{
    uint8_t hdr[VEGA_H3_DATA_HEADER_MAX];
    vega_ssize hl = vega_h3_write_data_header(hdr, sizeof hdr, n);
    VCHECK(hl > 0);
    h3t_put(st, hdr, (size_t)hl);
    h3t_put(st, p, n);
}

static inline void h3t_flush_uni(struct h3t_conn *tc)
{
    for (;;) {
        uint8_t buf[4096];
        uint64_t sid;
        vega_ssize n = vega_h3_conn_write_uni(tc->h3, &sid, buf, sizeof buf);
        if (n <= 0)
            break;
        /* small: the send buffer always takes it (unless the connection is closing) */
        if (vega_quic_stream_write(tc->qc, sid, buf, (size_t)n, false) != n)
            break;
    }
}

/* Plans the answer of a request whose head (and, for /echo, body) arrived. */
static inline void h3t_plan(struct h3t_conn *tc, struct h3t_stream *st)
{
    char cl[32], px[300];
    const char *p = st->path;
    bool head = !strcmp(st->method, "HEAD");
    snprintf(px, sizeof px, "%s", p);
    vega_http_field f[4] = {{{"x-path", 6}, {px, strlen(px)}}};
    size_t nf = 1;
    st->responded = true;
    atomic_fetch_add(&tc->s->requests, 1);
#define CL(n)                                                                                      \
    (snprintf(cl, sizeof cl, "%llu", (unsigned long long)(n)), (vega_http_str){cl, strlen(cl)})
    if (!strcmp(p, "/hello")) {
        f[nf++] = (vega_http_field){{"content-length", 14}, CL(5)};
        h3t_head(tc, st, 200, f, nf);
        if (!head)
            h3t_data(st, "hello", 5);
    } else if (!strncmp(p, "/big/", 5) || !strncmp(p, "/chunky/", 8) || !strncmp(p, "/close/", 7)) {
        uint64_t n = strtoull(strchr(p + 1, '/') + 1, NULL, 10);
        bool chunky = p[1] == 'c' && p[2] == 'h';
        if (!chunky)
            f[nf++] = (vega_http_field){{"content-length", 14}, CL(n)};
        h3t_head(tc, st, 200, f, nf);
        st->pattern = true;
        st->body_left = head ? 0 : n;
        st->frame_size = chunky ? 1000 : H3T_CHUNK;
        if (p[1] == 'c' && p[2] == 'l')
            st->close_after = n / 2;
    } else if (!strncmp(p, "/done/", 6) || !strncmp(p, "/cut/", 5)) {
        st->cut = p[1] == 'c';
        uint64_t n = strtoull(p + (st->cut ? 5 : 6), NULL, 10);
        f[nf++] = (vega_http_field){{"content-length", 14}, CL(st->cut ? 2 * n : n)};
        h3t_head(tc, st, 200, f, nf);
        st->pattern = true;
        st->body_left = head ? 0 : n;
        st->frame_size = H3T_CHUNK;
        st->close_when_done = !st->cut;
    } else if (!strcmp(p, "/echo")) {
        f[nf++] = (vega_http_field){{"content-length", 14}, CL(st->echo_len)};
        h3t_head(tc, st, 200, f, nf);
        if (st->echo_len)
            h3t_data(st, st->echo, st->echo_len);
    } else if (!strcmp(p, "/info")) {
        h3t_head(tc, st, 103, (vega_http_field[]){{{"link", 4}, {"</a>", 4}}}, 1);
        h3t_head(tc, st, 100, NULL, 0);
        h3t_head(tc, st, 200, f, nf);
        h3t_data(st, "after interim", 13);
    } else if (!strcmp(p, "/trailers")) {
        h3t_head(tc, st, 200, f, nf);
        h3t_data(st, "body", 4);
        uint8_t buf[512];
        vega_http_field t = {{"x-checksum", 10}, {"42", 2}};
        vega_ssize w = vega_h3_conn_write_trailers(tc->h3, st->id, &t, 1, buf, sizeof buf);
        VCHECK(w > 0);
        h3t_put(st, buf, (size_t)w);
    } else if (!strcmp(p, "/badlen")) {
        f[nf++] = (vega_http_field){{"content-length", 14}, {"10", 2}};
        h3t_head(tc, st, 200, f, nf);
        h3t_data(st, "short", 5);
    } else if (!strcmp(p, "/reset") ||
               (!strcmp(p, "/reject") && !atomic_exchange(&tc->s->rejected_once, true))) {
        uint64_t code = p[3] == 'j' ? VEGA_H3_REQUEST_REJECTED : VEGA_H3_INTERNAL_ERROR;
        vega_quic_stream_reset(tc->qc, st->id, code);
        vega_quic_stream_stop(tc->qc, st->id, code);
        vega_h3_conn_close_stream(tc->h3, st->id);
        st->done = true;
        return;
    } else if (!strcmp(p, "/unseen") && !atomic_exchange(&tc->s->unseen_once, true)) {
        /* RFC 9114 §5.2: GOAWAY 0 says no request of this connection was processed */
        VCHECK_EQ(vega_h3_conn_submit_goaway(tc->h3, 0), 0);
        st->done = true;
        return;
    } else if ((!strcmp(p, "/refuse") && !atomic_exchange(&tc->s->refused_once, true)) ||
               (!strcmp(p, "/refusals") && atomic_fetch_sub(&tc->s->refuse_left, 1) > 0)) {
        VCHECK_EQ(vega_quic_conn_close(tc->qc, VEGA_QUIC_CLOSE_TRANSPORT,
                                       VEGA_QUIC_CONNECTION_REFUSED, "refused"),
                  0);
        st->done = true;
        return;
    } else if (!strcmp(p, "/drop")) {
        VCHECK_EQ(
            vega_quic_conn_close(tc->qc, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_NO_ERROR, "shutdown"),
            0);
        st->done = true;
        return;
    } else if (!strcmp(p, "/reject") || !strcmp(p, "/unseen") || !strcmp(p, "/refuse") ||
               !strcmp(p, "/refusals")) {
        f[nf++] = (vega_http_field){{"content-length", 14}, CL(8)};
        h3t_head(tc, st, 200, f, nf);
        h3t_data(st, "accepted", 8);
    } else if (!strcmp(p, "/goaway")) {
        f[nf++] = (vega_http_field){{"content-length", 14}, CL(3)};
        h3t_head(tc, st, 200, f, nf);
        h3t_data(st, "bye", 3);
        st->goaway = true;
    } else if (!strcmp(p, "/gzip")) {
        static const char text[] = "hello compressed world, hello compressed world, hello!";
        uint8_t *z;
        size_t zn;
        VCHECK_EQ(vega_compress_buffer(VEGA_COMPRESS_GZIP, 6, text, sizeof text - 1, 0, &z, &zn),
                  0);
        f[nf++] = (vega_http_field){{"content-encoding", 16}, {"gzip", 4}};
        f[nf++] = (vega_http_field){{"content-length", 14}, CL(zn)};
        h3t_head(tc, st, 200, f, nf);
        h3t_data(st, z, zn);
        free(z);
    } else if (!strcmp(p, "/hang")) {
        st->done = true; /* no answer, no end */
        return;
    } else if (!strncmp(p, "/interim/", 9)) {
        for (long i = strtol(p + 9, NULL, 10); i > 0; i--)
            h3t_head(tc, st, 103, NULL, 0);
        f[nf++] = (vega_http_field){{"content-length", 14}, CL(2)};
        h3t_head(tc, st, 200, f, nf);
        h3t_data(st, "ok", 2);
    } else if (!strncmp(p, "/fields/", 8)) {
        long n = strtol(p + 8, NULL, 10);
        vega_http_field *many = calloc((size_t)n + 1, sizeof *many);
        char(*names)[16] = calloc((size_t)n + 1, 16);
        VCHECK(many && names);
        for (long i = 0; i < n; i++) {
            int k = snprintf(names[i], 16, "x-f-%ld", i);
            many[i] = (vega_http_field){{names[i], (size_t)k}, {"v", 1}};
        }
        uint8_t *buf = malloc(65536);
        vega_ssize w =
            vega_h3_conn_write_response_head(tc->h3, st->id, 200, many, (size_t)n, buf, 65536);
        VCHECK(w > 0);
        h3t_put(st, buf, (size_t)w);
        free(buf);
        free(many);
        free(names);
    } else if (!strcmp(p, "/conn")) {
        char b[32];
        int n = snprintf(b, sizeof b, "conn %d", tc->number);
        f[nf++] = (vega_http_field){{"content-length", 14}, CL(n)};
        h3t_head(tc, st, 200, f, nf);
        h3t_data(st, b, (size_t)n);
    } else {
        f[nf++] = (vega_http_field){{"content-length", 14}, {"0", 1}};
        h3t_head(tc, st, 404, f, nf);
    }
#undef CL
}

/* Sends what the stream has, as QUIC takes it; FIN at the end. */
static inline void h3t_pump(struct h3t_conn *tc, struct h3t_stream *st)
{
    while (st->responded && !st->done) {
        if (st->out_off == st->out_len && st->body_left) {
            st->out_len = st->out_off = 0;
            size_t n = st->body_left < st->frame_size ? (size_t)st->body_left : st->frame_size;
            /* the frame's header, then its payload made in place (task stacks are small) */
            uint8_t hdr[VEGA_H3_DATA_HEADER_MAX];
            vega_ssize hl = vega_h3_write_data_header(hdr, sizeof hdr, n);
            VCHECK(hl > 0);
            h3t_put(st, hdr, (size_t)hl);
            h3t_put(st, hdr, 0);
            if (st->out_len + n > st->out_cap) {
                st->out_cap = st->out_len + n;
                st->out = realloc(st->out, st->out_cap);
                VCHECK(st->out != NULL);
            }
            for (size_t i = 0; i < n; i++)
                st->out[st->out_len + i] = h3t_byte(st->body_off + i);
            st->out_len += n;
            st->body_off += n;
            st->body_left -= n;
        }
        /* after the send buffer drained once: the client has the head and a good part */
        if (st->close_after && st->body_off >= st->close_after && st->writable_seen) {
            vega_quic_conn_close(tc->qc, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_INTERNAL_ERROR,
                                 "test close");
            st->done = true;
            return;
        }
        size_t len = st->out_len - st->out_off;
        if (st->cut && st->body_left == 0 && len == 0) {
            st->done = true; /* all sent, and no end */
            return;
        }
        bool fin = st->body_left == 0 && !st->cut;
        vega_ssize w = vega_quic_stream_write(tc->qc, st->id, st->out + st->out_off, len, fin);
        if (w < 0) {
            st->done = true; /* stopped or reset by the client */
            return;
        }
        st->out_off += (size_t)w;
        if ((size_t)w < len)
            return; /* STREAM_WRITABLE brings us back */
        if (fin) {
            st->done = true;
            if (st->goaway) {
                uint64_t next = vega_h3_conn_get_next_request_id(tc->h3);
                VCHECK_EQ(vega_h3_conn_submit_goaway(tc->h3, next), 0);
            }
        }
    }
}

static inline int h3t_on_headers(void *ud, uint64_t sid, const vega_h3_head *h)
{
    struct h3t_conn *tc = ud;
    struct h3t_stream *st = h3t_stream(tc, sid, true);
    if (!st || h->kind != VEGA_H3_HEAD_INITIAL)
        return 0;
    snprintf(st->method, sizeof st->method, "%.*s", (int)h->method.len, h->method.ptr);
    snprintf(st->path, sizeof st->path, "%.*s", (int)h->path.len, h->path.ptr);
    st->got_head = true;
    return 0;
}

static inline int h3t_on_data(void *ud, uint64_t sid, const uint8_t *d, size_t n)
{
    struct h3t_stream *st = h3t_stream(ud, sid, false);
    if (st && st->echo_len + n <= H3T_ECHO_MAX) {
        if (st->echo_len + n > st->echo_cap) {
            st->echo_cap = (st->echo_len + n) * 2;
            st->echo = realloc(st->echo, st->echo_cap);
            VCHECK(st->echo != NULL);
        }
        memcpy(st->echo + st->echo_len, d, n);
        st->echo_len += n;
    }
    return 0;
}

static inline int h3t_on_end(void *ud, uint64_t sid)
{
    struct h3t_stream *st = h3t_stream(ud, sid, false);
    if (st)
        st->req_ended = true;
    return 0;
}

static inline int h3t_on_stream_error(void *ud, uint64_t sid, uint64_t code)
{
    struct h3t_conn *tc = ud;
    vega_quic_stream_reset(tc->qc, sid, code);
    vega_quic_stream_stop(tc->qc, sid, code);
    struct h3t_stream *st = h3t_stream(tc, sid, false);
    if (st)
        st->done = true;
    return 0;
}

static const vega_h3_callbacks h3t_cb = {
    .on_headers = h3t_on_headers,
    .on_data = h3t_on_data,
    .on_end_stream = h3t_on_end,
    .on_stream_error = h3t_on_stream_error,
};

static inline void h3t_read(struct h3t_conn *tc, uint64_t id)
{
    struct h3t_stream *st = (id & 3) == 0 ? h3t_stream(tc, id, true) : NULL;
    while (!st || !st->fin_read) {
        const uint8_t *d;
        size_t len;
        bool fin;
        if (vega_quic_stream_peek(tc->qc, id, &d, &len, &fin) < 0 || (len == 0 && !fin))
            break;
        vega_ssize used = vega_h3_conn_read_stream(tc->h3, id, d, len, fin);
        if (used < 0) {
            const char *why = NULL;
            uint64_t code = vega_h3_conn_get_error(tc->h3, &why);
            vega_quic_conn_close(tc->qc, VEGA_QUIC_CLOSE_APPLICATION, code, why);
            return;
        }
        vega_quic_stream_consume(tc->qc, id, (size_t)used);
        if (st && fin && (size_t)used == len)
            st->fin_read = true;
        if ((size_t)used < len || fin)
            break;
    }
    if (st && st->got_head && !st->responded &&
        (st->req_ended || (strcmp(st->method, "POST") && strcmp(st->method, "PUT"))))
        h3t_plan(tc, st);
    if (st)
        h3t_pump(tc, st);
}

static inline void h3t_on_event(void *user, vega_quic_ep_conn *qe, vega_quic_conn *qc,
                                const vega_quic_event *ev)
{
    struct h3t_conn *tc = user;
    if (!tc)
        return;
    tc->qc = qc;
    if (!tc->h3) {
        VCHECK_EQ(vega_h3_conn_server_new(&tc->h3, &h3t_cb, NULL, tc), 0);
        for (int i = 0; i < 3; i++)
            VCHECK_EQ(vega_quic_stream_open(qc, false, &tc->uni[i]), 0);
        VCHECK_EQ(vega_h3_conn_bind_streams(tc->h3, tc->uni[0], tc->uni[1], tc->uni[2]), 0);
    }
    (void)qe;
    switch (ev->type) {
    case VEGA_QUIC_EV_STREAM_OPENED:
    case VEGA_QUIC_EV_STREAM_READABLE:
        h3t_read(tc, ev->stream_id);
        break;
    case VEGA_QUIC_EV_STREAM_WRITABLE: {
        struct h3t_stream *st = h3t_stream(tc, ev->stream_id, false);
        if (st) {
            st->writable_seen = true;
            h3t_pump(tc, st);
        }
        break;
    }
    case VEGA_QUIC_EV_STREAM_DONE: {
        struct h3t_stream *st = h3t_stream(tc, ev->stream_id, false);
        if (st && st->close_when_done)
            tc->close_pending = true;
        break;
    }
    case VEGA_QUIC_EV_STREAM_RESET:
    case VEGA_QUIC_EV_STREAM_STOP: {
        struct h3t_stream *st = h3t_stream(tc, ev->stream_id, false);
        if (st)
            st->done = true;
        vega_h3_conn_close_stream(tc->h3, ev->stream_id);
        break;
    }
    default:
        break;
    }
    /* a request stream whose answer can go now */
    for (size_t i = 0; i < H3T_MAX_STREAMS; i++) {
        struct h3t_stream *st = &tc->st[i];
        if (st->used && st->got_head && !st->responded && !st->done &&
            (st->req_ended || (strcmp(st->method, "POST") && strcmp(st->method, "PUT")))) {
            h3t_plan(tc, st);
            h3t_pump(tc, st);
        }
    }
    h3t_flush_uni(tc);
    if (tc->close_pending) {
        tc->close_pending = false;
        (void)vega_quic_conn_close(qc, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_NO_ERROR, "shutdown");
    }
}

static inline int h3t_on_conn(void *ep_user, vega_quic_ep_conn *c, vega_quic_conn *qc)
{
    (void)qc;
    struct h3t_srv *s = ep_user;
    struct h3t_conn *tc = calloc(1, sizeof *tc);
    VCHECK(tc != NULL);
    tc->s = s;
    tc->qe = c;
    tc->number = atomic_fetch_add(&s->conns, 1) + 1;
    pthread_mutex_lock(&s->mu);
    tc->next = s->all;
    s->all = tc;
    pthread_mutex_unlock(&s->mu);
    vega_quic_ep_conn_set_user(c, tc);
    return 0;
}

static inline void h3t_conn_free(struct h3t_conn *tc)
{
    for (size_t i = 0; i < H3T_MAX_STREAMS; i++) {
        free(tc->st[i].out);
        free(tc->st[i].echo);
    }
    vega_h3_conn_free(tc->h3);
    free(tc);
}

/* Starts a server on 127.0.0.1 (port 0: any), with resumption and 0-RTT on. */
static inline struct h3t_srv *h3t_start(uint16_t port)
{
    struct h3t_srv *s = calloc(1, sizeof *s);
    VCHECK(s != NULL);
    pthread_mutex_init(&s->mu, NULL);
    VCHECK_EQ(vega_crypto_cert_chain_new(&s->chain), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(s->chain, QT_SRV_P256_PEM, strlen(QT_SRV_P256_PEM)), 0);
    VCHECK_EQ(vega_crypto_key_load_private(&s->key, QT_SRV_P256_KEY, strlen(QT_SRV_P256_KEY)), 0);
    VCHECK_EQ(vega_crypto_cert_store_new(&s->ca, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(s->ca, QT_CA_PEM, strlen(QT_CA_PEM)), 0);
    for (int i = 0; i < 32; i++)
        s->ticket_key[i] = (uint8_t)(i * 7 + 1);
    vega_quic_endpoint_opts o;
    vega_quic_endpoint_opts_init(&o);
    o.quic.tls.chain = s->chain;
    o.quic.tls.key = s->key;
    o.quic.tls.alpn[0] = "h3";
    o.quic.tls.n_alpn = 1;
    o.quic.tls.ticket_key = s->ticket_key;
    o.quic.tls.early_data = true;
    o.quic.max_streams_bidi = 100;
    o.retry = VEGA_QUIC_RETRY_NEVER;
    o.cb.on_conn = h3t_on_conn;
    o.cb.on_event = h3t_on_event;
    o.user = s;
    VCHECK_EQ(vega_quic_endpoint_new(&s->ep, &o), 0);
    vega_addr a;
    VCHECK_EQ(vega_addr_from_ip(&a, "127.0.0.1", port), 0);
    VCHECK_EQ(vega_quic_endpoint_listen(s->ep, &a, 0, &s->addr), 0);
    s->port = vega_addr_port(&s->addr);
    return s;
}

static inline void h3t_stop(struct h3t_srv *s)
{
    vega_quic_endpoint_shutdown(s->ep, vega_deadline_in_ms(500));
    vega_quic_endpoint_free(s->ep);
    while (s->all) {
        struct h3t_conn *tc = s->all;
        s->all = tc->next;
        h3t_conn_free(tc);
    }
    pthread_mutex_destroy(&s->mu);
    vega_crypto_cert_chain_free(s->chain);
    vega_crypto_key_free(s->key);
    vega_crypto_cert_store_free(s->ca);
    free(s);
}

/* A client that trusts the test CA; early: 0-RTT for safe requests on resumed connections. */
static inline vega_http_client *h3t_client(struct h3t_srv *s, const vega_mem *mem)
{
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.quic_ca = s->ca;
    o.mem = mem;
    vega_http_client *c;
    VCHECK_EQ(vega_http_client_new(&c, &o), 0);
    return c;
}

static inline void h3t_url(const struct h3t_srv *s, char *out, size_t cap, const char *path)
{
    snprintf(out, cap, "https://localhost:%u%s", s->port, path);
}

static inline void h3t_req(vega_http_client_request *rq, const char *url)
{
    vega_http_client_request_init(rq);
    rq->url = url;
    rq->version = VEGA_HTTP_CLIENT_V3;
    rq->deadline = vega_deadline_in_ms(20000);
}

#endif
