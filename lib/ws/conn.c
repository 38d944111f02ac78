/* SPDX-License-Identifier: MIT */
/* The WebSocket connection object (RFC 6455): options, life, the send queue and what goes into
 * it (data fragments, ping, pong, close: §5.2, §5.4, §5.5), and the accessors. */
#include <stddef.h>
#include <string.h>

#include "ws_int.h"

#define DEFAULT_MAX (16u * 1024 * 1024)

static bool mem_ok(const vega_mem *m)
{
    return !m || (m->malloc && m->calloc && m->realloc && m->free);
}

/* The size of a caller's options of layout v (0: a layout this library does not know). Layout
 * 1 ends where owner_answers_close starts. */
static size_t opts_size(int v)
{
    return v == 1                           ? offsetof(vega_ws_conn_opts, owner_answers_close)
           : v == VEGA_WS_CONN_OPTS_VERSION ? sizeof(vega_ws_conn_opts)
                                            : 0;
}

void vega_ws_conn_opts_init_versioned(vega_ws_conn_opts *o, int opts_version)
{
    size_t size = opts_size(opts_version);
    if (!size)
        vega__panic(__FILE__, __LINE__,
                    "vega_ws_conn_opts_init: options of another libvega (version %d)",
                    opts_version);
    memset(o, 0, size);
    o->max_frame_size = DEFAULT_MAX;
    o->max_message_size = DEFAULT_MAX;
    o->max_send_queue = DEFAULT_MAX + 1024;
    o->send_fragment_size = 65536;
    o->deflate_level = 6;
}

static bool bits_ok(uint8_t *b)
{
    if (*b == 0)
        *b = 15;
    return *b >= 8 && *b <= 15;
}

int vega_ws_conn_new_versioned(vega_ws_conn **out, const vega_ws_callbacks *cb,
                               const vega_ws_conn_opts *o, void *user_data, int opts_version)
{
    if (!opts_size(opts_version) || !out || !o)
        return -EINVAL;
    /* The caller's layout copied over the defaults: nothing past it is read. */
    vega_ws_conn_opts in;
    memset(&in, 0, sizeof in);
    memcpy(&in, o, opts_size(opts_version));
    o = &in;
    vega_ws_conn_opts v;
    vega_ws_conn_opts_init(&v);
    v.role = o->role;
    v.max_frame_size = o->max_frame_size ? o->max_frame_size : v.max_frame_size;
    v.max_message_size = o->max_message_size ? o->max_message_size : v.max_message_size;
    v.max_send_queue = o->max_send_queue ? o->max_send_queue : v.max_send_queue;
    v.send_fragment_size = o->send_fragment_size ? o->send_fragment_size : v.send_fragment_size;
    v.deflate = o->deflate;
    v.deflate_level = o->deflate_level ? o->deflate_level : v.deflate_level;
    v.random = o->random;
    v.mem = o->mem;
    v.owner_answers_close = o->owner_answers_close;
    if ((v.role != VEGA_WS_CLIENT && v.role != VEGA_WS_SERVER) ||
        (v.role == VEGA_WS_CLIENT && !v.random) || !mem_ok(v.mem) ||
        v.send_fragment_size > ((size_t)1 << 31) || v.deflate_level < 1 || v.deflate_level > 9 ||
        v.max_send_queue < 256)
        return -EINVAL;
    if (v.deflate.enabled && (!bits_ok(&v.deflate.server_max_window_bits) ||
                              !bits_ok(&v.deflate.client_max_window_bits)))
        return -EINVAL;
    vega_ws_conn *c = vega__mem_calloc(v.mem, 1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->o = v;
    if (cb)
        c->cb = *cb;
    c->ud = user_data;
    c->rstate = VEGA__WS_R_HEAD;
    if (v.deflate.enabled) {
        int rc = vega__ws_deflate_init(c);
        if (rc < 0) {
            vega_ws_conn_free(c);
            return rc;
        }
    }
    *out = c;
    return 0;
}

void vega_ws_conn_free(vega_ws_conn *c)
{
    if (!c)
        return;
    vega__ws_deflate_fini(c);
    vega__mem_free(c->o.mem, c->q);
    vega__mem_free(c->o.mem, c->zbuf);
    vega__mem_free(c->o.mem, c);
}

/* ---- the send queue ------------------------------------------------------------------------ */

static int queue_reserve(vega_ws_conn *c, size_t n, bool force)
{
    size_t live = c->q_len - c->q_off;
    if (!force && !vega__fits(live, n, c->o.max_send_queue))
        return VEGA_ERR_FULL;
    if (c->q_off > 0 && (c->q_off == c->q_len || !vega__fits(c->q_len, n, c->q_cap))) {
        memmove(c->q, c->q + c->q_off, live);
        c->q_off = 0;
        c->q_len = live;
    }
    if (vega__fits(c->q_len, n, c->q_cap))
        return 0;
    if (n > SIZE_MAX / 2 - c->q_len)
        return -ENOMEM;
    size_t cap = c->q_cap ? c->q_cap : 1024;
    while (cap < c->q_len + n)
        cap *= 2;
    uint8_t *q = vega__mem_realloc(c->o.mem, c->q, cap);
    if (!q)
        return -ENOMEM;
    c->q = q;
    c->q_cap = cap;
    return 0;
}

int vega__ws_queue_frame(vega_ws_conn *c, uint8_t b0, const uint8_t *payload, size_t len,
                         bool force)
{
    bool mask = c->o.role == VEGA_WS_CLIENT;
    size_t hl = (size_t)2 + (len < 126 ? 0u : len < 65536 ? 2u : 8u) + (mask ? 4u : 0u);
    if (len > SIZE_MAX - hl)
        return VEGA_ERR_FULL;
    int rc = queue_reserve(c, hl + len, force);
    if (rc < 0)
        return rc;
    uint8_t *h = c->q + c->q_len;
    size_t at = 0;
    h[at++] = b0;
    uint8_t mbit = mask ? 0x80 : 0;
    if (len < 126) {
        h[at++] = (uint8_t)(mbit | len);
    } else if (len < 65536) {
        h[at++] = (uint8_t)(mbit | 126);
        h[at++] = (uint8_t)(len >> 8);
        h[at++] = (uint8_t)len;
    } else {
        h[at++] = (uint8_t)(mbit | 127);
        for (int s = 56; s >= 0; s -= 8)
            h[at++] = (uint8_t)((uint64_t)len >> s);
    }
    uint8_t key[4] = {0};
    if (mask) {
        /* §5.3: "The masking key is a 32-bit value chosen at random by the client ... MUST pick
         * a fresh masking key from the set of allowed 32-bit values." */
        c->o.random(c->ud, key, 4);
        memcpy(h + at, key, 4);
        at += 4;
    }
    if (len)
        memcpy(h + at, payload, len);
    if (mask)
        vega__ws_mask(h + at, len, key, 0);
    c->q_len += at + len;
    return 0;
}

int vega__ws_queue_close(vega_ws_conn *c, unsigned code, const uint8_t *reason, size_t len)
{
    uint8_t body[VEGA_WS_MAX_CONTROL];
    size_t n = 0;
    if (code) {
        body[0] = (uint8_t)(code >> 8);
        body[1] = (uint8_t)code;
        n = 2;
        if (len > VEGA_WS_MAX_CONTROL - 2)
            len = VEGA_WS_MAX_CONTROL - 2;
        if (len)
            memcpy(body + 2, reason, len);
        n += len;
    }
    int rc = vega__ws_queue_frame(c, 0x88, body, n, true);
    if (rc == 0)
        c->close_sent = true;
    return rc;
}

vega_ssize vega_ws_conn_write(vega_ws_conn *c, uint8_t *out, size_t cap)
{
    if (!out && cap)
        return -EINVAL;
    size_t n = VEGA__MIN(cap, c->q_len - c->q_off);
    if (n) {
        memcpy(out, c->q + c->q_off, n);
        c->q_off += n;
    }
    if (c->q_off == c->q_len)
        c->q_off = c->q_len = 0;
    return (vega_ssize)n;
}

size_t vega_ws_conn_get_pending(const vega_ws_conn *c)
{
    return c->q_len - c->q_off;
}

/* ---- submits ------------------------------------------------------------------------------- */

static int can_send(const vega_ws_conn *c)
{
    return c->close_sent || c->fail_rc ? VEGA_ERR_CLOSED : 0;
}

/* Frames one fragment's payload (already compressed if it is), split at send_fragment_size.
 * The first frame carries opcode (and rsv1); the others are continuations; FIN on the last
 * when fin. Room for all of it was checked by the caller, so only -ENOMEM can stop it midway,
 * which is fatal. */
static int frame_out(vega_ws_conn *c, uint8_t opcode, bool rsv1, const uint8_t *p, size_t len,
                     bool fin)
{
    size_t at = 0;
    do {
        size_t n = VEGA__MIN(len - at, c->o.send_fragment_size);
        bool last = at + n == len;
        uint8_t b0 = (uint8_t)((last && fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode);
        int rc = vega__ws_queue_frame(c, b0, p + at, n, true);
        if (rc < 0)
            return rc;
        opcode = 0;
        rsv1 = false;
        at += n;
    } while (at < len);
    return 0;
}

/* Upper bound of the queue bytes len payload bytes take as frames. */
static size_t framed_size(const vega_ws_conn *c, size_t len)
{
    size_t frames = len / c->o.send_fragment_size + 1;
    return len + frames * 14;
}

int vega_ws_submit_data(vega_ws_conn *c, vega_ws_msg_type type, const void *data, size_t len,
                        bool fin)
{
    if ((!data && len) || (!c->send_open && type != VEGA_WS_TEXT && type != VEGA_WS_BINARY))
        return -EINVAL;
    int rc = can_send(c);
    if (rc < 0)
        return rc;
    uint8_t opcode = c->send_open ? 0 : (uint8_t)type;
    bool rsv1 = !c->send_open && c->o.deflate.enabled;
    const uint8_t *p = data;
    /* Room is checked before anything changes (the compressor's window included), with a
     * bound of what deflate can produce: stored blocks when compressing does not pay. */
    size_t bound = c->o.deflate.enabled ? len + len / 8 + 64 : len;
    if (len > SIZE_MAX / 4 ||
        !vega__fits(c->q_len - c->q_off, framed_size(c, bound), c->o.max_send_queue))
        return VEGA_ERR_FULL;
    if (c->o.deflate.enabled) {
        rc = vega__ws_deflate_fragment(c, p, len, fin, &len);
        if (rc < 0)
            return rc;
        p = c->zbuf;
    }
    rc = frame_out(c, opcode, rsv1, p, len, fin);
    if (rc < 0) {
        c->fail_rc = rc; /* a message cut in half cannot be continued */
        c->err.code = VEGA_WS_CLOSE_INTERNAL;
        c->err.reason = "out of memory while queueing a message";
        return rc;
    }
    c->send_open = !fin;
    return 0;
}

int vega_ws_submit_message(vega_ws_conn *c, vega_ws_msg_type type, const void *data, size_t len)
{
    if (c->send_open)
        return -EINVAL;
    return vega_ws_submit_data(c, type, data, len, true);
}

static int submit_control(vega_ws_conn *c, uint8_t op, const void *data, size_t len)
{
    if ((!data && len) || len > VEGA_WS_MAX_CONTROL)
        return -EINVAL;
    int rc = can_send(c);
    if (rc < 0)
        return rc;
    return vega__ws_queue_frame(c, (uint8_t)(0x80 | op), data, len, false);
}

int vega_ws_submit_ping(vega_ws_conn *c, const void *data, size_t len)
{
    return submit_control(c, 0x9, data, len);
}

int vega_ws_submit_pong(vega_ws_conn *c, const void *data, size_t len)
{
    return submit_control(c, 0xa, data, len);
}

int vega_ws_submit_close(vega_ws_conn *c, unsigned code, const char *reason, size_t len)
{
    if ((!reason && len) || (code == 0 && len) || (code && !vega_ws_close_code_is_valid(code)) ||
        len > VEGA_WS_MAX_CONTROL - 2)
        return -EINVAL;
    uint32_t st = 0;
    if (len && (!vega__ws_utf8_check(&st, (const uint8_t *)reason, len) || st != 0))
        return -EINVAL;
    if (c->close_sent)
        return VEGA_ERR_CLOSED;
    return vega__ws_queue_close(c, code, (const uint8_t *)reason, len);
}

bool vega_ws_close_code_is_valid(unsigned code)
{
    /* §7.4.1: 1004 reserved, 1005 and 1006 "MUST NOT be set as a status code in a Close control
     * frame by an endpoint", 1015 likewise; 1012-1014 registered since (IANA); 0-999 unused;
     * 3000-4999 libraries, frameworks and applications. */
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}

void vega_ws_conn_get_error(const vega_ws_conn *c, vega_ws_error *err)
{
    *err = c->err;
}

bool vega_ws_conn_is_close_sent(const vega_ws_conn *c)
{
    return c->close_sent;
}

bool vega_ws_conn_is_close_received(const vega_ws_conn *c, unsigned *peer_code)
{
    if (peer_code)
        *peer_code = c->peer_code;
    return c->close_received;
}

bool vega_ws_conn_is_done(const vega_ws_conn *c)
{
    return c->close_sent && (c->close_received || c->fail_rc) && c->q_off == c->q_len;
}
