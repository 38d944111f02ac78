/* SPDX-License-Identifier: MIT */
/* The HTTP/1.1 session: each keep-alive connection writes a pre-serialized request (--pipeline
 * copies at once) and parses the responses with the zero-copy HTTP/1 parser, skipping bodies
 * and only counting bytes, as wrk does. With -R each connection sends on a schedule and
 * latency is measured from the intended send time (no coordinated omission). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "load.h"

/* ---- URL and request ------------------------------------------------------------------------ */

int load_url_parse(struct load_opts *o, const char *url, char *hbuf, size_t hcap, char *pbuf,
                   size_t pcap, char *err, size_t ecap)
{
    const char *p;
    bool tls;
    if (strncasecmp(url, "http://", 7) == 0) {
        p = url + 7;
        tls = false;
    } else if (strncasecmp(url, "https://", 8) == 0) {
        p = url + 8;
        tls = true;
    } else if (strncasecmp(url, "ws://", 5) == 0) {
        p = url + 5;
        tls = false;
        o->ws = true;
    } else if (strncasecmp(url, "wss://", 6) == 0) {
        p = url + 6;
        tls = true;
        o->ws = true;
    } else {
        snprintf(err, ecap, "'%s': expected an http://, https://, ws:// or wss:// URL", url);
        return -EINVAL;
    }
    size_t alen = strcspn(p, "/?#");
    const char *auth = p, *rest = p + alen;
    if (memchr(auth, '@', alen)) {
        snprintf(err, ecap, "'%s': user names in URLs are not supported (use -H Authorization)",
                 url);
        return -EINVAL;
    }
    const char *host = auth, *hend, *port = NULL;
    bool v6 = false;
    if (alen && auth[0] == '[') {
        const char *rb = memchr(auth, ']', alen);
        if (!rb) {
            snprintf(err, ecap, "'%s': missing ']' after an IPv6 address", url);
            return -EINVAL;
        }
        host = auth + 1;
        hend = rb;
        v6 = true;
        if (rb + 1 < auth + alen) {
            if (rb[1] != ':') {
                snprintf(err, ecap, "'%s': unexpected characters after ']'", url);
                return -EINVAL;
            }
            port = rb + 2;
        }
    } else {
        const char *colon = memchr(auth, ':', alen);
        hend = colon ? colon : auth + alen;
        port = colon ? colon + 1 : NULL;
    }
    size_t hlen = (size_t)(hend - host);
    size_t plen = port ? (size_t)(auth + alen - port) : 0;
    if (hlen == 0) {
        snprintf(err, ecap, "'%s': no host", url);
        return -EINVAL;
    }
    if (hlen >= hcap) {
        snprintf(err, ecap, "'%s': the host name is too long", url);
        return -EINVAL;
    }
    for (size_t i = 0; i < hlen; i++) {
        unsigned char ch = (unsigned char)host[i];
        if (ch <= 0x20 || ch >= 0x7f || strchr("<>\"{}|\\^`%", ch)) {
            snprintf(err, ecap, "'%s': invalid character in the host", url);
            return -EINVAL;
        }
    }
    memcpy(hbuf, host, hlen);
    hbuf[hlen] = '\0';
    const char *dflt = tls ? "443" : "80";
    if (plen == 0) {
        snprintf(pbuf, pcap, "%s", dflt);
    } else {
        if (plen >= pcap) {
            snprintf(err, ecap, "'%s': invalid port", url);
            return -EINVAL;
        }
        memcpy(pbuf, port, plen);
        pbuf[plen] = '\0';
        if (!cli_is_port(pbuf) || strcmp(pbuf, "0") == 0) {
            snprintf(err, ecap, "'%s': invalid port '%s'", url, pbuf);
            return -EINVAL;
        }
    }
    /* The request-target: path and query, without the fragment (RFC 9110 section 7.1). */
    size_t rlen = strcspn(rest, "#");
    char *path = malloc(rlen + 2);
    char *hh = malloc(hlen + plen + 4);
    if (!path || !hh) {
        free(path);
        free(hh);
        snprintf(err, ecap, "out of memory");
        return -ENOMEM;
    }
    if (rlen == 0 || rest[0] == '?')
        snprintf(path, rlen + 2, "/%.*s", (int)rlen, rest);
    else
        snprintf(path, rlen + 2, "%.*s", (int)rlen, rest);
    /* Host: the authority without a default or empty port (RFC 9110 section 7.2). */
    bool show_port = plen && strcmp(pbuf, dflt) != 0;
    snprintf(hh, hlen + plen + 4, "%s%s%s%s%s", v6 ? "[" : "", hbuf, v6 ? "]" : "",
             show_port ? ":" : "", show_port ? pbuf : "");
    o->url = url;
    o->path = path;
    o->host_header = hh;
    o->host = hbuf;
    o->port = pbuf;
    o->tls = tls;
    return 0;
}

static bool has_header(const struct load_opts *o, const char *name)
{
    for (unsigned i = 0; i < o->nheaders; i++)
        if (o->headers[i].name_len == strlen(name) &&
            strncasecmp(o->headers[i].name, name, o->headers[i].name_len) == 0)
            return true;
    return false;
}

/* -i, --random-query: a request per path, each with its head and body, none batched (a
 * connection writes them in turn); all of them together at most LOAD_MAX_REQ_BATCH. */
static int build_variants(struct load_opts *o, const char *method, const vega_http1_field *f,
                          size_t n, uint8_t *head, char *err, size_t ecap)
{
    o->variants = calloc(o->npaths, sizeof(*o->variants));
    if (!o->variants) {
        snprintf(err, ecap, "out of memory");
        return -ENOMEM;
    }
    size_t total = 0;
    for (unsigned i = 0; i < o->npaths; i++) {
        vega_ssize hl =
            vega_http1_write_request_head(head, LOAD_MAX_HEAD, method, o->paths[i], 11, f, n);
        if (hl < 0) {
            snprintf(err, ecap, "%s (path '%s')",
                     hl == VEGA_ERR_NOBUF ? "the request head is over the limit"
                                          : "invalid request: check --method and -H",
                     o->paths[i]);
            return -EINVAL;
        }
        size_t one = (size_t)hl + o->body_len;
        if (one > LOAD_MAX_REQ_BATCH / o->pipeline || total + one > LOAD_MAX_REQ_BATCH) {
            snprintf(err, ecap,
                     "the requests of %u paths (with their bodies, and one of them times "
                     "--pipeline %u) are over %u MiB",
                     o->npaths, o->pipeline, LOAD_MAX_REQ_BATCH >> 20);
            return -EINVAL;
        }
        total += one;
        struct load_variant *v = &o->variants[i];
        v->req = malloc(one);
        if (!v->req) {
            snprintf(err, ecap, "out of memory");
            return -ENOMEM;
        }
        memcpy(v->req, head, (size_t)hl);
        if (o->body_len)
            memcpy(v->req + hl, o->body, o->body_len);
        v->len = one;
        /* "METHOD SP target": the digits end the target */
        v->rand_at = strlen(method) + 1 + strlen(o->paths[i]) - LOAD_RANDOM_DIGITS;
        if (o->variant_max < one)
            o->variant_max = one;
    }
    o->req_len = o->variants[0].len;
    return 0;
}

int load_http_build(struct load_opts *o, char *err, size_t ecap)
{
    const char *method = o->method ? o->method : o->body ? "POST" : "GET";
    o->head_method = strcmp(method, "HEAD") == 0;
    if (has_header(o, "content-length") || has_header(o, "transfer-encoding")) {
        snprintf(err, ecap,
                 "-H: Content-Length and Transfer-Encoding are set by vega-load "
                 "(from --body)");
        return -EINVAL;
    }
    vega_http1_field f[LOAD_MAX_HEADERS + 2];
    size_t n = 0;
    if (!has_header(o, "host"))
        f[n++] = (vega_http1_field){"Host", 4, o->host_header, strlen(o->host_header)};
    for (unsigned i = 0; i < o->nheaders; i++)
        f[n++] = (vega_http1_field){o->headers[i].name, o->headers[i].name_len, o->headers[i].value,
                                    o->headers[i].value_len};
    char cl[24];
    if (o->body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
        snprintf(cl, sizeof(cl), "%zu", o->body_len);
        f[n++] = (vega_http1_field){"Content-Length", 14, cl, strlen(cl)};
    }
    uint8_t *head = malloc(LOAD_MAX_HEAD);
    if (!head) {
        snprintf(err, ecap, "out of memory");
        return -ENOMEM;
    }
    if (o->paths_vary) {
        int e = build_variants(o, method, f, n, head, err, ecap);
        free(head);
        return e;
    }
    vega_ssize hl = vega_http1_write_request_head(head, LOAD_MAX_HEAD, method, o->path, 11, f, n);
    if (hl < 0) {
        free(head);
        if (hl == VEGA_ERR_NOBUF)
            snprintf(err, ecap, "the request head is over %u KiB", LOAD_MAX_HEAD >> 10);
        else
            snprintf(err, ecap,
                     "invalid request: check --method (a token such as GET), the "
                     "URL's path (visible ASCII) and -H (Name: value, no control "
                     "characters)");
        return -EINVAL;
    }
    size_t one = (size_t)hl + o->body_len;
    if (one > LOAD_MAX_REQ_BATCH / o->pipeline) {
        free(head);
        snprintf(err, ecap, "the request (%zu bytes) times --pipeline %u is over %u MiB", one,
                 o->pipeline, LOAD_MAX_REQ_BATCH >> 20);
        return -EINVAL;
    }
    o->req = malloc(one * o->pipeline);
    if (!o->req) {
        free(head);
        snprintf(err, ecap, "out of memory");
        return -ENOMEM;
    }
    for (unsigned i = 0; i < o->pipeline; i++) {
        memcpy(o->req + i * one, head, (size_t)hl);
        if (o->body_len)
            memcpy(o->req + i * one + hl, o->body, o->body_len);
    }
    o->req_len = one;
    free(head);
    return 0;
}

/* ---- a connection ---------------------------------------------------------------------------- */

struct hconn {
    struct load_run *r;
    const struct load_opts *o;
    struct load_worker *w;
    vega_sock *sock;
    vega_stream *tls;
    unsigned char *buf;
    size_t cap;
    vega_http1_parser parser;
    /* the batch in flight */
    unsigned sent, done;
    vega_tstamp t_sent, t_intended, now;
    bool measured;
    unsigned tickets; /* -n tickets the batch holds (one per request) */
    int status;       /* the final status of the response being parsed, 0 before it */
    bool keep_alive;  /* of that response */
    bool must_close;  /* a response said the connection ends after it */
    bool extra;       /* a response that nobody asked for */
    /* the connection */
    vega_tstamp t_connect; /* when its connect started: first byte is measured from there */
    bool first_byte;       /* its first response byte is still to come */
    uint64_t served;       /* responses on it */
    struct load_retry rt;
    /* -i, --random-query: the batch being written, and the walk over the paths */
    unsigned char *out;
    struct load_pathgen pg;
    struct load_pacer pacer; /* -R */
};

static int on_headers_complete(void *ud, const vega_http1_head *h)
{
    struct hconn *c = ud;
    if (h->status >= 200 || h->status == 101) {
        c->status = h->status;
        c->keep_alive = h->keep_alive;
    }
    return 0;
}

static int on_message_complete(void *ud)
{
    struct hconn *c = ud;
    if (c->status == 0) /* an interim 1xx: the final response follows */
        return 0;
    if (c->done >= c->sent) {
        c->extra = true;
        return 1;
    }
    c->done++;
    c->served++;
    if (c->measured) {
        struct load_worker *w = c->w;
        vega_tstamp from = c->o->rate ? c->t_intended : c->t_sent;
        uint64_t us = (c->now - from + VEGA_NS_PER_US / 2) / VEGA_NS_PER_US;
        load_latency(w, us);
        if (c->o->rate)
            cli_hist_record(&w->hist_unc,
                            (c->now - c->t_sent + VEGA_NS_PER_US / 2) / VEGA_NS_PER_US);
        load_bump(&w->round_trips, 1);
        load_bump(&w->status[c->status < LOAD_STATUS_MAX ? c->status : 0], 1);
    }
    if (!c->keep_alive || c->status == 101)
        c->must_close = true;
    c->status = 0;
    if (c->o->head_method)
        vega_http1_parser_set_head(&c->parser, true);
    return 0;
}

static const vega_http1_callbacks callbacks = {
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

static vega_ssize conn_read(struct hconn *c, void *buf, size_t n, vega_deadline dl)
{
    return c->tls ? vega_stream_read(c->tls, buf, n, dl) : vega_sock_read(c->sock, buf, n, dl);
}

static vega_ssize conn_write(struct hconn *c, const void *buf, size_t n, vega_deadline dl)
{
    return c->tls ? vega_stream_write(c->tls, buf, n, NULL, dl)
                  : vega_sock_write(c->sock, buf, n, NULL, dl);
}

static void conn_close(struct hconn *c)
{
    if (c->tls) /* close_notify if it goes out at once: a load generator does not wait */
        vega_stream_close(c->tls, 0);
    c->tls = NULL;
    vega_sock_close(c->sock);
    c->sock = NULL;
}

/* A failed call: STOP when the run is over, else count the error. */
static enum load_step failed(struct hconn *c, enum load_kind kind, int code, bool at_end)
{
    if (load_step_failed(code, at_end, &kind) == LOAD_STEP_STOP)
        return LOAD_STEP_STOP;
    load_error_msg(c->r, kind, code,
                   c->tls && code <= VEGA_ERR_TLS_BASE ? vega_tls_last_error(c->tls) : NULL);
    return LOAD_STEP_FAIL;
}

static uint64_t us_since(vega_tstamp t0, vega_tstamp t1)
{
    return (t1 - t0 + VEGA_NS_PER_US / 2) / VEGA_NS_PER_US;
}

static enum load_step tls_open(struct hconn *c, vega_deadline dl, bool at_end)
{
    const struct load_opts *o = c->o;
    vega_tstamp t0 = vega_now();
    int e = load_tls_handshake(c->r, c->sock, o->sni ? o->sni : o->host, &c->tls, dl);
    if (e == 0) {
        c->w = load_worker_self(c->r);
        cli_hist_record(&c->w->tls_hist, us_since(t0, vega_now()));
        load_tls_seen(c->r, c->tls);
        return LOAD_STEP_OK;
    }
    enum load_step s = load_tls_failed(c->r, e, c->tls, at_end);
    conn_close(c);
    return s;
}

static enum load_step conn_open(void *arg)
{
    struct hconn *c = arg;
    struct load_run *r = c->r;
    bool at_end;
    vega_tstamp t0 = vega_now();
    vega_deadline dl = load_step_deadline(r, t0, &at_end);
    int e = load_connect(r, &c->sock, c->rt.ever, dl);
    if (e < 0)
        return failed(c, LOAD_ERR_CONNECT, e, at_end);
    c->w = load_worker_self(r);
    cli_hist_record(&c->w->connect_hist, us_since(t0, vega_now()));
    if (!c->o->unix_path)
        vega_sock_set_nodelay(c->sock, true);
    if (r->tls) {
        enum load_step s = tls_open(c, dl, at_end);
        if (s != LOAD_STEP_OK)
            return s;
    }
    vega_http1_parser_init(&c->parser, VEGA_HTTP1_RESPONSE, NULL, &callbacks, c);
    if (c->o->head_method)
        vega_http1_parser_set_head(&c->parser, true);
    c->t_connect = t0;
    c->first_byte = true;
    c->must_close = false;
    c->status = 0;
    c->served = 0;
    c->w = load_worker_self(r);
    load_bump(&c->w->connects, 1);
    if (c->rt.ever)
        load_bump(&c->w->reconnects, 1);
    c->rt.ever = true;
    return LOAD_STEP_OK;
}

/* Feeds n bytes to the parser. */
static enum load_step parse(struct hconn *c, size_t n, bool at_end)
{
    size_t used;
    int e = vega_http1_parser_read(&c->parser, c->buf, n, &used);
    if (e == 0 && (used == n || c->must_close))
        return LOAD_STEP_OK;
    char msg[96];
    if (c->extra)
        snprintf(msg, sizeof(msg), "a response that was not asked for");
    else if (e == 0)
        snprintf(msg, sizeof(msg), "data after a protocol upgrade");
    else
        snprintf(msg, sizeof(msg), "malformed response (%s)",
                 vega_http1_error_name(vega_http1_parser_get_error(&c->parser)));
    (void)at_end;
    load_error_msg(c->r, LOAD_ERR_PARSE, VEGA_ERR_PROTO, msg);
    return LOAD_STEP_FAIL;
}

/* The end of the stream: completes a response delimited by close, else the server closed
 * the connection with requests in flight. */
static enum load_step end_of_stream(struct hconn *c, bool got_bytes, bool at_end)
{
    unsigned before = c->done;
    int e = vega_http1_parser_finish(&c->parser);
    if (e < 0 && !c->extra) {
        load_error_msg(c->r, LOAD_ERR_READ, 0, NULL);
        return LOAD_STEP_FAIL;
    }
    if (e < 0)
        return parse(c, 0, at_end);
    if (c->done > before || c->done == c->sent)
        return LOAD_STEP_CLOSE;
    /* A keep-alive connection the server closed before it read the next request (its idle
     * timeout or request limit): reconnect and send again, as browsers do. */
    if (!got_bytes && c->served > 0)
        return LOAD_STEP_CLOSE;
    load_error_msg(c->r, LOAD_ERR_READ, 0, NULL);
    return LOAD_STEP_FAIL;
}

/* Writes k requests and reads until all k responses completed. */
static enum load_step batch(struct hconn *c, unsigned k)
{
    struct load_run *r = c->r;
    bool at_end;
    vega_deadline dl = load_step_deadline(r, c->t_sent, &at_end);
    c->sent = k;
    c->done = 0;
    c->extra = false;
    vega_ssize n;
    if (c->out) {
        const struct load_opts *o = c->o;
        size_t len = 0;
        for (unsigned i = 0; i < k; i++) {
            const struct load_variant *v = &o->variants[load_paths_pick(&c->pg, o)];
            memcpy(c->out + len, v->req, v->len);
            if (o->random_query)
                load_random_digits(&c->pg, (char *)c->out + len + v->rand_at);
            len += v->len;
        }
        n = conn_write(c, c->out, len, dl);
    } else {
        n = conn_write(c, c->o->req, c->o->req_len * k, dl);
    }
    if (n < 0)
        return failed(c, LOAD_ERR_WRITE, (int)n, at_end);
    bool got_bytes = false;
    while (c->done < c->sent) {
        n = conn_read(c, c->buf, c->cap, dl);
        if (n == 0 || n == VEGA_ERR_TLS_TRUNCATED) /* many servers skip close_notify */
            return end_of_stream(c, got_bytes, at_end);
        if (n < 0)
            return failed(c, LOAD_ERR_READ, (int)n, at_end);
        c->now = vega_now();
        c->w = load_worker_self(r); /* the task may have moved while it waited */
        got_bytes = true;
        if (c->first_byte) {
            c->first_byte = false;
            cli_hist_record(&c->w->first_byte_hist, us_since(c->t_connect, c->now));
        }
        if (c->now >= r->measure_start)
            load_bump(&c->w->bytes, (uint64_t)n);
        enum load_step s = parse(c, (size_t)n, at_end);
        if (s != LOAD_STEP_OK)
            return s;
        if (c->must_close)
            return LOAD_STEP_CLOSE;
    }
    return LOAD_STEP_OK;
}

static void conn_loop(struct hconn *c)
{
    struct load_run *r = c->r;
    const struct load_opts *o = c->o;
    for (;;) {
        if (o->rate && !load_pacer_wait(&c->pacer, &c->t_intended))
            return;
        vega_tstamp t0 = vega_now();
        if (t0 >= r->end)
            return;
        c->measured = (o->rate ? c->t_intended : t0) >= r->measure_start;
        /* -n: the tickets first, so that no connection opens for requests nobody will send. */
        unsigned k = o->pipeline;
        c->tickets = 0;
        if (c->measured && o->round_trips) {
            while (c->tickets < k && load_ticket_take(r))
                c->tickets++;
            if (c->tickets == 0)
                return;
            k = c->tickets;
        }
        c->done = 0;
        enum load_step s = LOAD_STEP_STOP; /* also when the connection gave up */
        if (c->sock || load_conn_open_retry(r, &c->rt, conn_open, c)) {
            c->t_sent = vega_now();
            c->w = load_worker_self(r);
            s = c->t_sent < r->end ? batch(c, k) : LOAD_STEP_STOP;
        }
        for (unsigned i = c->done; i < c->tickets; i++)
            load_ticket_return(r);
        if (s == LOAD_STEP_OK) {
            c->rt.fails = 0;
            continue;
        }
        if (c->sock)
            conn_close(c);
        if (s == LOAD_STEP_STOP)
            return;
        if (s == LOAD_STEP_CLOSE) {
            c->rt.fails = 0;
            continue;
        }
        if (!load_conn_failed(r, &c->rt))
            return;
    }
}

void *load_http_conn(void *arg)
{
    struct load_run *r = arg;
    unsigned index = atomic_fetch_add(&r->next_index, 1);
    /* The parser keeps a 16 KiB line buffer: the connection lives on the heap, not on the
     * task's stack. */
    struct hconn *c = calloc(1, sizeof(*c));
    unsigned char *buf = malloc(r->o->http_buf);
    if (!c || !buf) {
        load_conn_no_memory(r);
        free(c);
        free(buf);
        return NULL;
    }
    if (r->o->paths_vary) {
        c->out = malloc(r->o->variant_max * r->o->pipeline);
        if (!c->out) {
            load_conn_no_memory(r);
            free(c);
            free(buf);
            return NULL;
        }
        load_paths_start(&c->pg, r->o, index);
    }
    c->r = r;
    c->o = r->o;
    c->buf = buf;
    c->cap = r->o->http_buf;
    c->w = load_worker_self(r);
    load_pacer_init(&c->pacer, r, index);
    conn_loop(c);
    if (c->sock)
        conn_close(c);
    load_pacer_fini(&c->pacer);
    free(c->out);
    free(c->buf);
    free(c);
    return NULL;
}
