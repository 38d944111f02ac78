/* SPDX-License-Identifier: MIT */
/* Helpers of the WebSocket core tests and fuzzer: a recorder of events, a fixed mask source,
 * a frame builder for forged input, and a pump between two connections. */
#ifndef VEGA_TEST_WSREC_H
#define VEGA_TEST_WSREC_H

#include <stdlib.h>
#include <string.h>

#include <vega/ws.h>

#ifndef WSREC_CAP
#define WSREC_CAP (1u << 20)
#endif

struct wsrec {
    uint8_t *cur; /* the message being received (kept up to WSREC_CAP bytes) */
    size_t cur_len;
    uint8_t *last; /* the last complete message */
    size_t last_len;
    vega_ws_msg_type last_type;
    int nmsg, ndata, nping, npong, nclose;
    uint8_t ctl[VEGA_WS_MAX_CONTROL];
    size_t ctl_len;
    unsigned close_code;
    int fail_on_data; /* nonzero: on_data fails */
};

static uint8_t wsrec_mask[4] = {0x37, 0xfa, 0x21, 0x3d}; /* RFC 6455 §5.7's key */

static inline void wsrec_random(void *ud, uint8_t *out, size_t len)
{
    (void)ud;
    for (size_t i = 0; i < len; i++)
        out[i] = wsrec_mask[i & 3];
}

static inline int wsrec_on_data(void *ud, vega_ws_msg_type t, const uint8_t *p, size_t n, bool fin)
{
    struct wsrec *r = ud;
    r->ndata++;
    if (r->fail_on_data)
        return -1;
    if (n && r->cur_len + n <= WSREC_CAP)
        memcpy(r->cur + r->cur_len, p, n);
    r->cur_len += n;
    if (fin) {
        uint8_t *tmp = r->last;
        r->last = r->cur;
        r->cur = tmp;
        r->last_len = r->cur_len;
        r->last_type = t;
        r->cur_len = 0;
        r->nmsg++;
    }
    return 0;
}

static inline int wsrec_on_ping(void *ud, const uint8_t *p, size_t n)
{
    struct wsrec *r = ud;
    r->nping++;
    memcpy(r->ctl, p, n);
    r->ctl_len = n;
    return 0;
}

static inline int wsrec_on_pong(void *ud, const uint8_t *p, size_t n)
{
    struct wsrec *r = ud;
    r->npong++;
    memcpy(r->ctl, p, n);
    r->ctl_len = n;
    return 0;
}

static inline int wsrec_on_close(void *ud, unsigned code, const uint8_t *p, size_t n)
{
    struct wsrec *r = ud;
    r->nclose++;
    r->close_code = code;
    memcpy(r->ctl, p, n);
    r->ctl_len = n;
    return 0;
}

static const vega_ws_callbacks wsrec_cb = {wsrec_on_data, wsrec_on_ping, wsrec_on_pong,
                                           wsrec_on_close};

static inline void wsrec_init(struct wsrec *r)
{
    memset(r, 0, sizeof *r);
    r->cur = malloc(WSREC_CAP);
    r->last = malloc(WSREC_CAP);
}

static inline void wsrec_fini(struct wsrec *r)
{
    free(r->cur);
    free(r->last);
}

/* A connection of role with the recorder r and options from o (NULL: defaults). */
static inline vega_ws_conn *wsrec_conn(vega_ws_role role, struct wsrec *r, vega_ws_conn_opts *o)
{
    vega_ws_conn_opts d;
    vega_ws_conn_opts_init(&d);
    if (!o)
        o = &d;
    o->role = role;
    o->random = wsrec_random;
    vega_ws_conn *c = NULL;
    if (vega_ws_conn_new(&c, &wsrec_cb, o, r) != 0)
        abort();
    return c;
}

/* Builds a frame: b0 as given, masked with key when key is not NULL. Returns its length. */
static inline size_t ws_frame(uint8_t *out, uint8_t b0, const uint8_t *key, const void *payload,
                              uint64_t len)
{
    size_t at = 0;
    out[at++] = b0;
    uint8_t m = key ? 0x80 : 0;
    if (len < 126) {
        out[at++] = (uint8_t)(m | len);
    } else if (len < 65536) {
        out[at++] = m | 126;
        out[at++] = (uint8_t)(len >> 8);
        out[at++] = (uint8_t)len;
    } else {
        out[at++] = m | 127;
        for (int s = 56; s >= 0; s -= 8)
            out[at++] = (uint8_t)(len >> s);
    }
    if (key) {
        memcpy(out + at, key, 4);
        at += 4;
    }
    if (payload) {
        const uint8_t *p = payload;
        for (uint64_t i = 0; i < len; i++)
            out[at + i] = (uint8_t)(p[i] ^ (key ? key[i & 3] : 0));
        at += (size_t)len;
    }
    return at;
}

/* Moves everything a has queued into b's read; returns b's read result. */
static inline int ws_pump(vega_ws_conn *a, vega_ws_conn *b)
{
    uint8_t buf[4096];
    int rc = 0;
    for (;;) {
        vega_ssize n = vega_ws_conn_write(a, buf, sizeof buf);
        if (n <= 0)
            return rc;
        int r = vega_ws_conn_read(b, buf, (size_t)n);
        if (r < 0 && rc == 0)
            rc = r;
    }
}

#endif
