/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the HTTP/3 core (lib/h3): random bytes to random stream ids of a server
 * core or a client core (byte 0 picks which and the limits). The rest is records
 * [selector][len][bytes]: the selector picks a stream id (request streams, the peer's
 * unidirectional streams, ids that are ours), the end of stream bit, or a close. Arbitrary input
 * must never crash; read_stream never takes more than it was given; a stream that took less is
 * fed again after on_stream_unblocked; DATA spans lie in the input; a connection error is sticky
 * and names a wire code. A client core has written requests on streams 0, 4 and 8 first. */
#include <stdlib.h>
#include <string.h>

#include <vega/h3.h>

#include "fuzz_target.h"

struct st {
    const uint8_t *in;
    size_t in_len;
    uint64_t unblocked[64];
    size_t nunblocked;
};

static int on_headers(void *ud, uint64_t id, const vega_h3_head *h)
{
    (void)ud;
    (void)id;
    for (size_t i = 0; i < h->nfields; i++)
        if (!h->fields[i].name.len || h->fields[i].name.ptr[0] == ':')
            abort(); /* pseudo-header fields never reach the regular list */
    if (h->kind == VEGA_H3_HEAD_INITIAL && !h->method.ptr && !h->status)
        abort();
    return 0;
}

static int on_data(void *ud, uint64_t id, const uint8_t *d, size_t n)
{
    struct st *s = ud;
    (void)id;
    if (!n || d < s->in || d + n > s->in + s->in_len)
        abort(); /* zero copy: always inside the input */
    return 0;
}

static int on_end(void *ud, uint64_t id)
{
    (void)ud;
    (void)id;
    return 0;
}

static int on_error(void *ud, uint64_t id, uint64_t code)
{
    (void)ud;
    (void)id;
    if (code < 0x100 || code > 0x110)
        abort();
    return 0;
}

static int on_unblocked(void *ud, uint64_t id)
{
    struct st *s = ud;
    if (s->nunblocked < 64)
        s->unblocked[s->nunblocked++] = id;
    return 0;
}

static int on_settings(void *ud, const vega_h3_settings *p)
{
    (void)ud;
    (void)p;
    return 0;
}

static int on_goaway(void *ud, uint64_t id)
{
    (void)ud;
    (void)id;
    return 0;
}

static int on_prio(void *ud, uint64_t id, const vega_h3_priority *p)
{
    (void)ud;
    (void)id;
    if (p->urgency > 7)
        abort();
    return 0;
}

static int on_stop(void *ud, uint64_t id, uint64_t code)
{
    (void)ud;
    (void)id;
    (void)code;
    return 0;
}

static const vega_h3_callbacks cbs = {on_headers,  on_data,   on_end,  on_error, on_unblocked,
                                      on_settings, on_goaway, on_prio, on_stop};

/* Stream ids a selector names: request streams, client and server unidirectional ones. */
static const uint64_t ids[16] = {0, 4, 8, 12, 2, 6, 10, 14, 18, 3, 7, 11, 15, 1, 5, 400};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    struct st s = {.in = data, .in_len = size};
    vega_h3_opts o;
    vega_h3_opts_init(&o);
    o.max_field_section_size = flags & 2 ? 200 : 65536;
    o.max_control_frame = flags & 4 ? 32 : 16384;
    o.qpack_blocked_streams = flags & 8 ? VEGA_H3_ZERO : 2;
    o.enable_connect_protocol = flags & 16;
    vega_h3_conn *c;
    bool server = flags & 1;
    int rc = server ? vega_h3_conn_server_new(&c, &cbs, &o, &s)
                    : vega_h3_conn_client_new(&c, &cbs, &o, &s);
    if (rc != 0)
        abort();
    if (vega_h3_conn_bind_streams(c, server ? 3 : 2, server ? 7 : 6, server ? 11 : 10) != 0)
        abort();
    if (!server) {
        static uint8_t out[512];
        vega_h3_request req = {.method = VEGA_HTTP_LIT("GET"),
                               .scheme = VEGA_HTTP_LIT("https"),
                               .authority = VEGA_HTTP_LIT("a.example"),
                               .path = VEGA_HTTP_LIT("/")};
        for (uint64_t id = 0; id <= 8; id += 4)
            if (vega_h3_conn_write_request_head(c, id, &req, NULL, 0, out, sizeof out) <= 0)
                abort();
    }
    /* What a blocked stream did not take, per selector. */
    static const uint8_t *rest_p[16];
    static size_t rest_n[16];
    static bool rest_fin[16];
    memset(rest_n, 0, sizeof rest_n);
    vega_ssize failed = 0;
    size_t at = 1;
    while (at + 2 <= size) {
        uint8_t sel = data[at], len = data[at + 1];
        at += 2;
        size_t n = len < size - at ? len : size - at;
        const uint8_t *p = data + at;
        at += n;
        unsigned k = sel & 15;
        bool fin = sel & 0x10;
        if (sel & 0x20) {
            rc = vega_h3_conn_close_stream(c, ids[k]);
            if (rc != 0 && rc != VEGA_ERR_PROTO)
                abort();
            if (rc == VEGA_ERR_PROTO && !failed)
                failed = rc;
            rest_n[k] = 0;
            continue;
        }
        if (rest_n[k]) /* the stream still waits: feed it what it left first */
            p = rest_p[k], n = rest_n[k], fin = rest_fin[k];
        vega_ssize r = vega_h3_conn_read_stream(c, ids[k], p, n, fin);
        if (r == -EINVAL) {
            /* Only a stream we never receive on: one of our unidirectional streams, or a
             * server-initiated bidirectional one on a server (the caller's mistake). */
            bool ours = (ids[k] & 1) == (server ? 1u : 0u);
            if (failed || !ours || (!(ids[k] & 2) && !server))
                abort();
            continue;
        }
        if (r < 0) {
            if (r != VEGA_ERR_PROTO || (failed && r != failed))
                abort();
            if (!vega_h3_conn_get_error(c, NULL))
                abort();
            failed = r;
            continue;
        }
        if (failed)
            abort(); /* after a connection error every call fails */
        if ((size_t)r > n)
            abort();
        rest_p[k] = p + r;
        rest_n[k] = n - (size_t)r;
        rest_fin[k] = fin;
        /* Streams reported unblocked take what they left. */
        while (s.nunblocked) {
            uint64_t id = s.unblocked[--s.nunblocked];
            for (unsigned j = 0; j < 16; j++)
                if (ids[j] == id && rest_n[j]) {
                    vega_ssize r2 =
                        vega_h3_conn_read_stream(c, id, rest_p[j], rest_n[j], rest_fin[j]);
                    if (r2 < 0 && r2 != VEGA_ERR_PROTO)
                        abort();
                    if (r2 < 0) {
                        failed = r2;
                        break;
                    }
                    rest_p[j] += r2;
                    rest_n[j] -= (size_t)r2;
                }
        }
        uint8_t out[128];
        uint64_t sid;
        while (vega_h3_conn_write_uni(c, &sid, out, sizeof out) > 0)
            ;
    }
    vega_h3_conn_free(c);
    return 0;
}
