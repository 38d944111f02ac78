/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the HTTP/1.1 client (lib/http_client: the request, the pool, the
 * response parser and body reader, decompression, redirects) whose server is the fuzzer. The
 * client's connect hook hands it in-memory duplexes; behind each, a "server" waits for each
 * request head and answers with the next response of its segment of the input (responses
 * are found by parsing the segment, so a keep-alive connection can be reused), in pieces.
 *
 * Input: byte 0 and byte 1 are option bits (see struct opts), byte 2 seeds the split points
 * and picks the URL; then the server's bytes: with n connections, n-1 segments each after a
 * 2-byte big-endian length, and the last one (the rest). A connection beyond them is refused.
 * The client sends 1..4 requests in turn (following redirects when asked) and reads each body
 * in pieces. Checks: no crash or leak; every call returns a code its contract lists; the body
 * never exceeds max_body, a Content-Length body without a coding is exactly that long, an end
 * or an error is sticky; what the client writes always parses as requests (RFC 9112 §3).
 * The runtime runs on the paused clock (current thread), so deadlines cost no wall time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/http1.h>
#include <vega/http_client.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/sync.h>
#include <vega/test.h>
#include <vega/tls.h>

#include "fuzz_target.h"

#define MAX_SEGS       4
#define MAX_BOUNDS     64      /* responses looked for in one segment */
#define SILENCE_MS     3600000 /* the client writes or closes within this (virtual: free) */
#define SMALL_MAX_BODY 300

_Noreturn static void fail(const char *why, long code)
{
    fprintf(stderr, "http_client_fuzz: %s (%ld)\n", why, code);
    abort();
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* ---- options -------------------------------------------------------------------------------- */

struct opts {
    bool decompress, head, body, expect, v10, follow, small_body, small_limits;
    unsigned nconns, nreqs;
    bool body_fn, small_reads, trace, pauses;
    uint64_t seed;
    unsigned url;
};

static struct opts parse_opts(const uint8_t *d)
{
    struct opts o = {
        .decompress = d[0] & 1,
        .head = d[0] & 2,
        .body = d[0] & 4,
        .expect = d[0] & 8,
        .v10 = d[0] & 16,
        .follow = d[0] & 32,
        .small_body = d[0] & 64,
        .small_limits = d[0] & 128,
        .nconns = 1 + (d[1] & 3),
        .nreqs = 1 + ((d[1] >> 2) & 3),
        .body_fn = d[1] & 16,
        .small_reads = d[1] & 32,
        .trace = d[1] & 64,
        .pauses = d[1] & 128,
        .seed = (uint64_t)d[2] * 0x9E3779B97F4A7C15ull + 1,
        .url = d[2] & 15,
    };
    return o;
}

/* The first URL: a name, an explicit port with a query and a fragment, an IPv6 literal, and
 * rarely https (TLS over the fuzzer's bytes is OpenSSL's parser more than ours). */
static const char *start_url(unsigned k)
{
    static const char *const u[] = {"http://fuzz.example/start",
                                    "http://FUZZ.example:8080/a/b?q=1#frag", "http://[::1]:81/x",
                                    "http://fuzz.example"};
    return k == 15 ? "https://fuzz.example/secure" : u[k % 4];
}

/* ---- the server side of one connection ------------------------------------------------------ */

struct seg {
    const uint8_t *data;
    size_t len;
    size_t bounds[MAX_BOUNDS]; /* offsets where a final response ends */
    size_t nbounds;
    bool head;
    bool tls;          /* the client runs TLS over it: bytes are not HTTP */
    vega_stream *end;  /* the server's end of the duplex */
    vega_sem requests; /* a permit per request head the client sent */
    vega_http1_parser reqp;
    vega_task *writer, *drain;
    uint64_t seed;
    const struct opts *o;
};

/* Finds where each final response of the segment ends (a HEAD's responses have no body), so
 * that the server answers one request at a time, as a keep-alive server does. */
static int bs_status(void *ud, int version, int status, vega_http1_span reason)
{
    bool *interim = ud;
    (void)version, (void)reason;
    *interim = status < 200;
    return 0;
}

static int bs_complete(void *ud)
{
    bool *interim = ud;
    return *interim ? 0 : 1; /* a final one: stop there (the offset is the bound) */
}

static void find_bounds(struct seg *s)
{
    static const vega_http1_callbacks cb = {.on_status = bs_status,
                                            .on_message_complete = bs_complete};
    static vega_http1_parser p;
    bool interim = false;
    if (vega_http1_parser_init(&p, VEGA_HTTP1_RESPONSE, NULL, &cb, &interim) < 0)
        abort();
    size_t at = 0;
    while (at < s->len && s->nbounds < MAX_BOUNDS) {
        vega_http1_parser_set_head(&p, s->head);
        size_t used = 0;
        int rc = vega_http1_parser_read(&p, s->data + at, s->len - at, &used);
        if (rc != VEGA_ERR_CALLBACK)
            return; /* the rest is one piece: malformed, close-delimited or unfinished */
        /* the parser stopped inside on_message_complete: start a fresh one after it */
        at += used;
        s->bounds[s->nbounds++] = at;
        if (vega_http1_parser_init(&p, VEGA_HTTP1_RESPONSE, NULL, &cb, &interim) < 0)
            abort();
    }
}

static int req_on_headers(void *ud, const vega_http1_head *h)
{
    struct seg *s = ud;
    (void)h;
    vega_sem_release(&s->requests, 1);
    return 0;
}

static const vega_http1_callbacks req_cb = {.on_headers_complete = req_on_headers};

/* Reads what the client writes, which must always parse as requests. */
static void *drain_main(void *arg)
{
    struct seg *s = arg;
    uint8_t buf[4096];
    for (;;) {
        vega_ssize n = vega_stream_read(s->end, buf, sizeof buf, vega_deadline_in_ms(SILENCE_MS));
        if (n == -ETIMEDOUT)
            fail("the client neither wrote nor closed", 0);
        if (n <= 0)
            break;
        size_t used = 0;
        int rc = s->tls ? 0 : vega_http1_parser_read(&s->reqp, buf, (size_t)n, &used);
        if (rc < 0)
            fail(vega_http1_error_name(vega_http1_parser_get_error(&s->reqp)), rc);
    }
    vega_sem_close(&s->requests);
    return NULL;
}

static void write_pieces(struct seg *s, size_t from, size_t to, unsigned *pauses)
{
    while (from < to) {
        uint64_t r = rnd(&s->seed);
        size_t k = r & 1 ? to - from : 1 + (size_t)(r >> 8) % (r & 2 ? 8 : 600);
        k = k < to - from ? k : to - from;
        if (vega_stream_write(s->end, s->data + from, k, NULL, vega_deadline_in_ms(SILENCE_MS)) < 0)
            return;
        from += k;
        if (s->o->pauses && (r >> 40) % 4 == 0 && (*pauses)++ < 6)
            vega_sleep_ms((r >> 44) % 2 ? 1500 : 200); /* around the 1 s wait for 100 */
        else if ((r >> 50) & 1)
            vega_yield();
    }
}

/* Answers each request with its response, then the next request with what is left (nothing
 * when the segment ended with a response: the end of the stream then comes under a request
 * on a pooled connection, which the client retries on a fresh one). */
static void *writer_main(void *arg)
{
    struct seg *s = arg;
    size_t at = 0;
    unsigned pauses = 0;
    for (size_t i = 0; i <= s->nbounds; i++) {
        size_t to = i < s->nbounds ? s->bounds[i] : s->len;
        if (!s->tls && vega_sem_acquire(&s->requests, 1, vega_deadline_in_ms(SILENCE_MS)) < 0)
            break; /* the client went away (or never asked again) */
        write_pieces(s, at, to, &pauses);
        at = to;
    }
    vega_stream_shutdown(s->end, SHUT_WR, 0);
    return NULL;
}

/* ---- the client's hook ---------------------------------------------------------------------- */

struct state {
    struct opts o;
    struct seg segs[MAX_SEGS];
    unsigned nsegs, next;
};

static int hook(void *user, const char *host, uint16_t port, bool tls, vega_stream **out,
                vega_deadline dl)
{
    struct state *st = user;
    (void)dl;
    if (!host || !host[0] || port == 0)
        fail("the hook got no host or port", port);
    for (const char *p = host; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            fail("the hook got a host not lowercased", 0);
    if (st->next == st->nsegs)
        return -ECONNREFUSED;
    struct seg *s = &st->segs[st->next++];
    s->tls = tls;
    vega_stream *cli;
    size_t cap = st->o.small_reads ? 1 + (size_t)(s->seed % 2000) : 0;
    if (vega_duplex_new(&cli, &s->end, cap) < 0 ||
        vega_http1_parser_init(&s->reqp, VEGA_HTTP1_REQUEST, NULL, &req_cb, s) < 0 ||
        vega_task_spawn(&s->writer, writer_main, s) < 0 ||
        vega_task_spawn(&s->drain, drain_main, s) < 0)
        abort();
    *out = cli;
    return 0;
}

static void split_segs(struct state *st, const uint8_t *d, size_t n)
{
    st->nsegs = 0;
    /* The first connection always exists, empty or not (an empty one: no reply at all). */
    for (unsigned i = 0; i < st->o.nconns && (i == 0 || n > 0); i++) {
        size_t len = n;
        if (i + 1 < st->o.nconns && n >= 2) {
            len = (size_t)d[0] << 8 | d[1];
            d += 2, n -= 2;
            len = len < n ? len : n;
        }
        struct seg *s = &st->segs[st->nsegs++];
        memset(s, 0, sizeof *s);
        s->data = d;
        s->len = len;
        s->head = st->o.head;
        s->seed = st->o.seed + i;
        s->o = &st->o;
        vega_sem_init(&s->requests, 0);
        find_bounds(s);
        d += len, n -= len;
    }
}

/* ---- the client ----------------------------------------------------------------------------- */

static bool tls_code(long rc)
{
    return rc <= VEGA_TLS_ERR_HANDSHAKE && rc > VEGA_TLS_ERR_LAST;
}

/* vega_http_client_send's Returns, as the hook and the duplex can cause them. */
static void check_send_rc(int rc)
{
    if (rc == 0 || rc == VEGA_HTTP_ERR_URL || rc == VEGA_HTTP_ERR_SCHEME ||
        rc == VEGA_HTTP_ERR_EMPTY_REPLY || rc == VEGA_ERR_PROTO || rc == -ETIMEDOUT ||
        rc == -ECONNREFUSED || rc == -EPIPE || rc == -ECONNRESET || tls_code(rc))
        return;
    fail("vega_http_client_send returned an undocumented code", rc);
}

static void check_read_rc(vega_ssize n)
{
    if (n >= 0 || n == -ETIMEDOUT || n == VEGA_ERR_PROTO || n == VEGA_HTTP_ERR_BODY_TOO_LARGE ||
        n == -ENODATA || tls_code(n))
        return;
    fail("vega_http_client_response_read returned an undocumented code", (long)n);
}

static void on_trace(void *user, bool is_request, const void *head, size_t len)
{
    (void)user;
    const char *h = head;
    if (!h || len < 4 || memcmp(h + len - 4, "\r\n\r\n", 4) != 0)
        fail("a traced head that does not end with its blank line", (long)len);
    if (!is_request && memcmp(h, "HTTP/1.", 7) != 0)
        fail("a traced response head that does not start with its status line", 0);
}

/* A request body the client pulls in pieces of unknown total length (chunked). */
static vega_ssize body_fn(void *user, void *buf, size_t len)
{
    unsigned *left = user;
    if (*left == 0)
        return 0;
    (*left)--;
    size_t n = len < 7 ? len : 7;
    memcpy(buf, "chunk..", n);
    return (vega_ssize)n;
}

static size_t max_fields_of(const vega_http_client_opts *co)
{
    return co->limits.max_fields ? co->limits.max_fields : 100;
}

static void check_info(const vega_http_client_info *in, const vega_http_client_opts *co)
{
    if (in->status < 200 || in->status > 999 || (in->version != 10 && in->version != 11))
        fail("a final status or version the parser cannot give", in->status);
    if (in->fields->count > max_fields_of(co))
        fail("more fields than the limit", (long)in->fields->count);
}

/* Reads the whole body in pieces; checks the length rules and that the end (or an error) is
 * sticky. */
static long read_body(vega_http_client_response *r, const struct opts *o, uint64_t max_body,
                      size_t max_fields, bool is_head, vega_deadline dl)
{
    static uint8_t buf[16384];
    uint64_t s = o->seed ^ 0x77, total = 0;
    vega_ssize n;
    do {
        size_t want = o->small_reads ? 1 + (size_t)(rnd(&s) % 64) : sizeof buf;
        n = vega_http_client_response_read(r, buf, want, vega_deadline_in_ms(SILENCE_MS));
        check_read_rc(n);
        if (n > (vega_ssize)want)
            fail("read more than asked", (long)n);
        if (n > 0)
            total += (uint64_t)n;
        if (total > max_body)
            fail("a body larger than max_body", (long)total);
    } while (n > 0);
    const vega_http_client_info *in = vega_http_client_response_info(r);
    if (n == 0 && (!in->trailers || in->trailers->count > max_fields))
        fail("trailers missing at the end of the body, or beyond the limit", 0);
    if (n == 0 && in->coding == VEGA_HTTP_CODING_IDENTITY &&
        in->content_length != VEGA_HTTP_LENGTH_UNKNOWN) {
        bool none = is_head || in->status == 204 || in->status == 304;
        if (total != (none ? 0 : in->content_length))
            fail("a body that is not its Content-Length", (long)total);
    }
    if (n == -ETIMEDOUT)
        return n; /* nothing consumed: a later read may go on */
    vega_ssize again = vega_http_client_response_read(r, buf, sizeof buf, 0);
    if (again != n && !(again == -ETIMEDOUT && vega_now() >= dl))
        fail("the end of the body (or its error) is not sticky", (long)again);
    return n < 0 ? (long)n : (long)total;
}

/* What one input runs with. */
struct run {
    struct state *st;
    vega_tls_config *tls;
};

/* With HTTP_CLIENT_FUZZ_TRACE set: one line per request, to see what an input does. */
static void trace_line(const char *url, int rc, const vega_http_client_response *r, long body)
{
    static int on = -1;
    if (on < 0)
        on = getenv("HTTP_CLIENT_FUZZ_TRACE") != NULL;
    if (!on)
        return;
    const vega_http_client_info *in = r ? vega_http_client_response_info(r) : NULL;
    fprintf(stderr, "%s: send %d (%s), status %d, reused %d, coding %d, body %ld\n", url, rc,
            rc ? vega_err_name(rc) : "ok", in ? in->status : 0, in ? in->reused : 0,
            in ? (int)in->coding : 0, body);
}

/* One request (and, when asked, the redirect it leads to): returns whether to go on. */
static bool one_request(vega_http_client *c, const vega_http_client_opts *co, const struct opts *o,
                        char *url, size_t url_cap, bool *to_get)
{
    vega_http_field f[] = {{{"X-Fuzz", 6}, {"1", 1}}, {{"Accept", 6}, {NULL, 0}}};
    unsigned chunks = 3;
    vega_http_client_request rq;
    vega_http_client_request_init(&rq);
    rq.url = url;
    rq.method = o->head ? "HEAD" : NULL;
    rq.fields = f;
    rq.nfields = 2;
    if (!*to_get && o->body && !o->head) {
        rq.body = "name=value";
        rq.body_len = 10;
    } else if (!*to_get && o->body_fn && !o->head && !o->v10) {
        rq.body_fn = body_fn;
        rq.body_user = &chunks;
        rq.body_length = VEGA_HTTP_LENGTH_UNKNOWN;
    }
    rq.decompress = o->decompress;
    rq.expect_continue = o->expect;
    rq.version = o->v10 ? 10 : 11;
    rq.deadline = vega_deadline_in_ms(o->pauses ? 2500 : 20000);
    rq.trace = o->trace ? on_trace : NULL;
    vega_http_client_response *r = NULL;
    int rc = vega_http_client_send(c, &rq, &r);
    check_send_rc(rc);
    if (rc < 0)
        trace_line(url, rc, NULL, 0);
    if (rc < 0) {
        if (r)
            fail("a response with an error", rc);
        return rc == -ETIMEDOUT || rc == VEGA_ERR_PROTO || rc == VEGA_HTTP_ERR_EMPTY_REPLY;
    }
    check_info(vega_http_client_response_info(r), co);
    trace_line(url, 0, r, read_body(r, o, co->max_body, max_fields_of(co), o->head, rq.deadline));
    char next[2048];
    bool get = false;
    vega_ssize k = vega_http_client_redirect(r, url, next, sizeof next, &get);
    if (k != -ENOENT && k != VEGA_HTTP_ERR_URL && k != VEGA_ERR_NOBUF && k < 0)
        fail("vega_http_client_redirect returned an undocumented code", (long)k);
    if (k >= 0 && (size_t)k != strlen(next))
        fail("a redirect whose length is not its string's", (long)k);
    vega_http_client_response_free(r);
    if (k > 0 && o->follow && (size_t)k < url_cap) {
        memcpy(url, next, (size_t)k + 1);
        *to_get = *to_get || get;
    }
    return true;
}

static void *input_main(void *arg)
{
    struct run *ru = arg;
    struct state *st = ru->st;
    const struct opts *o = &st->o;
    vega_http_client_opts co;
    vega_http_client_opts_init(&co);
    co.tls = ru->tls;
    co.connect = hook;
    co.connect_user = st;
    co.connect_timeout_ns = 5 * VEGA_NS_PER_S;
    if (o->small_body)
        co.max_body = SMALL_MAX_BODY;
    if (o->small_limits)
        co.limits = (vega_http1_limits){
            .max_start_line = 64, .max_field_line = 128, .max_field_section = 512, .max_fields = 6};
    vega_http_client *c;
    if (vega_http_client_new(&c, &co) < 0)
        abort();
    char url[2048];
    snprintf(url, sizeof url, "%s", start_url(o->url));
    bool to_get = false;
    for (unsigned i = 0; i < o->nreqs + (o->follow ? 3 : 0); i++)
        if (!one_request(c, &co, o, url, sizeof url, &to_get))
            break;
    vega_http_client_free(c);
    for (unsigned i = 0; i < st->next; i++) {
        struct seg *s = &st->segs[i];
        if (vega_task_join(s->writer, NULL, vega_deadline_in_ms(SILENCE_MS)) < 0 ||
            vega_task_join(s->drain, NULL, vega_deadline_in_ms(SILENCE_MS)) < 0)
            fail("a server task did not end", i);
        vega_stream_close(s->end, 0);
    }
    for (unsigned i = 0; i < st->nsegs; i++)
        vega_sem_fini(&st->segs[i].requests);
    return NULL;
}

/* Once per process: the runtime, and a TLS config (making one per client would load the
 * system CA store every time). */
static vega_rt *setup(vega_tls_config **tls)
{
    vega_rt_opts ro;
    vega_rt_opts_init(&ro);
    ro.flavor = VEGA_RT_CURRENT_THREAD;
    ro.paused_clock = true;
    ro.stack_guard = true;
#ifdef VEGA_ASAN
    ro.stack_size = 256 * 1024;
#endif
    static const char *const alpn[] = {"http/1.1"};
    vega_rt *rt;
    if (vega_rt_new(&rt, &ro) < 0 || vega_tls_config_new(tls, VEGA_TLS_CLIENT) < 0 ||
        vega_tls_config_set_verify(*tls, VEGA_TLS_VERIFY_NONE) < 0 ||
        vega_tls_config_set_alpn(*tls, alpn, 1) < 0)
        abort();
    return rt;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vega_rt *rt;
    static vega_tls_config *tls;
    if (!rt)
        rt = setup(&tls);
    if (size < 3)
        return 0;
    static struct state st;
    memset(&st, 0, sizeof st);
    st.o = parse_opts(data);
    split_segs(&st, data + 3, size - 3);
    struct run ru = {&st, tls};
    if (vega_rt_block_on(rt, input_main, &ru, NULL) < 0)
        abort();
    return 0;
}
