/* SPDX-License-Identifier: MIT */
/* HTTP client internals shared by its files: the client, pooled connections, the response
 * being received (parser state, buffers, decoder), and the functions between them. */
#ifndef VEGA_HTTP_CLIENT_INT_H
#define VEGA_HTTP_CLIENT_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/compress.h>
#include <vega/dns.h>
#include <vega/http_client.h>

#include "base.h"

/* Bytes read from the connection at a time, and the most decoded-body bytes one parse may
 * produce (a parse never yields more body than it was given). */
#define HC_RBUF 16384
/* A streamed request body (body_fn) is asked for in pieces of up to this, so that a caller
 * reading a file hands over large pieces (one read, one write each) instead of 16 KiB ones. */
#define HC_WBUF (256 * 1024)
/* Most interim (1xx) responses before the final one. */
#define HC_MAX_INTERIM 10
/* Most idle connections over all origins, whatever max_idle_per_origin says. */
#define HC_MAX_IDLE_TOTAL 1024
/* Longest host name kept in a pool key or a --resolve entry. */
#define HC_MAX_HOST 255
/* How long expect_continue waits for 100 before sending the body anyway. */
#define HC_EXPECT_WAIT_NS (1000ull * 1000 * 1000)

/* Where a connection goes: scheme (TLS or not), host (lowercased), port. */
struct hc_key {
    bool tls;
    uint16_t port;
    char host[HC_MAX_HOST + 1];
};

/* One connection, owned by the pool while idle or by a response while in use. */
struct hc_conn {
    struct hc_key key;
    vega_stream *s; /* the socket stream, or the TLS stream over it */
    vega_addr peer;
    char alpn[32];           /* "" when none */
    const char *tls_version; /* static, NULL without TLS */
    vega_tstamp idle_since;
    unsigned uses;               /* responses completed on it */
    struct hc_conn *prev, *next; /* the pool's list, newest first */
    const vega_mem *mem;         /* the client's allocator, which made this struct */
};

struct hc_resolve {
    char host[HC_MAX_HOST + 1];
    uint16_t port;
    vega_addr addr;
    struct hc_resolve *next;
};

struct vega_http_client {
    vega_http_client_opts o;
    char *user_agent;       /* owned copy; "" = none */
    vega_tls_config *tls;   /* a reference of our own */
    vega_dns_resolver *dns; /* for the DNS timing and the connects; created with the client */
    pthread_mutex_t mu;     /* guards idle, nidle and resolves; never held across a suspension */
    struct hc_conn *idle;   /* newest first */
    size_t nidle;
    struct hc_resolve *resolves;
};

/* A bump allocator in blocks, for the copied field names and values of one response. */
struct hc_arena_block {
    struct hc_arena_block *next;
    size_t used, cap;
    char data[];
};

struct vega_http_client_response {
    vega_http_client *c;
    struct hc_conn *conn;
    vega_http_client_info info;
    vega_deadline dl; /* the exchange's deadline (NEVER when the request had none) */
    bool is_head;
    bool conn_close_asked; /* the request said Connection: close */
    char method[24];       /* for vega_http_client_redirect's to_get */

    /* parsing */
    vega_http1_parser parser;
    vega_http1_callbacks cb;
    bool in_interim;  /* the head being parsed is a 1xx */
    bool got_100;     /* a 100 (Continue) arrived */
    unsigned interim; /* 1xx responses seen */
    bool head_done;   /* the final head was parsed */
    bool msg_done;    /* the final response ended */
    bool keep_alive;  /* the final head allows another request on the connection */
    bool unusable;    /* something makes the connection unfit for reuse */
    bool eof;         /* the connection ended */
    bool any_byte;    /* a response byte arrived */
    bool body_unsent; /* the request body was not (fully) sent */
    int err;          /* sticky error of the body reader, 0 when none */
    vega_http1_framing framing;
    int cb_err; /* a callback's failure (-ENOMEM, VEGA_ERR_PROTO) */

    /* head storage */
    vega_http_fields fields, trailers, no_trailers; /* no_trailers: shown until the end */
    vega_http_field *field_items, *trailer_items;
    struct hc_arena_block *arena;
    char *trace_buf; /* the incoming head rebuilt for the trace hook */
    size_t trace_len, trace_cap;
    vega_http_trace_fn trace;
    void *trace_user;

    /* body */
    vega_decompressor *dec;
    uint64_t delivered; /* decoded body bytes given to the caller */
    uint64_t max_body;
    size_t rpos, rend; /* unparsed bytes in rbuf */
    size_t bpos, blen; /* body bytes in bq not yet delivered */
    uint8_t *direct;   /* during a direct read: the caller's buffer the body is in */
    size_t direct_len; /* body bytes the parser counted there */
    uint8_t rbuf[HC_RBUF];
    uint8_t bq[HC_RBUF];
};

/* pool.c */
int vega__hc_pool_take(vega_http_client *c, const struct hc_key *k, struct hc_conn **out);
void vega__hc_pool_put(vega_http_client *c, struct hc_conn *conn);
void vega__hc_conn_close(struct hc_conn *conn);
int vega__hc_connect(vega_http_client *c, const struct hc_key *k, const char *host_for_tls,
                     vega_http_client_info *info, vega_deadline dl, struct hc_conn **out);

/* response.c */
int vega__hc_response_new(vega_http_client *c, vega_http_client_response **out,
                          const vega_http_client_request *req);
/* Reads until the final head (or, with stop_at_100, a 100) arrived; dl bounds it. */
int vega__hc_read_head(vega_http_client_response *r, bool stop_at_100, vega_deadline dl);
void vega__hc_trace_request(vega_http_client_response *r, const void *head, size_t len);

/* Deadlines: the earlier of two. */
static inline vega_deadline hc_dl_min(vega_deadline a, vega_deadline b)
{
    return a < b ? a : b;
}

#endif
