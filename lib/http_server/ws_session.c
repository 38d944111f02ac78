/* SPDX-License-Identifier: MIT */
/* The WebSocket driver: the sans-I/O core (lib/ws) over a vega_stream, with whole messages
 * handed to a receiving task and sends from any task. The core is guarded by a mutex (it is
 * touched by the receiver and by senders); a second mutex orders writes to the stream, so
 * frames never interleave. Memory: one message being assembled (at most max_message_size)
 * plus the whole messages that the last read completed, which the receiver takes before the
 * next read: at most one read buffer's worth of small messages. The peer's Close is answered
 * by the receiver (or by free) after the messages before it were taken, not by the core as it
 * reads it, so that replies to those messages still go out (RFC 6455 §5.5.1, §7.1.2). */
#include <string.h>

#include <vega/crypto.h>
#include <vega/sync.h>

#include "base.h"
#include "ws_drv.h"

#define WS_IO 16384

struct ws_msg {
    struct ws_msg *next;
    vega_ws_msg_type type;
    size_t len;
    uint8_t data[];
};

struct vega_websocket {
    vega_ws_conn *core;
    vega_stream *s;
    bool own;
    const vega_mem *mem;
    vega_mutex mu;  /* the core, the queue, the assembly buffer */
    vega_mutex wmu; /* writes to s and wbuf */
    uint8_t *asm_buf;
    size_t asm_len, asm_cap;
    uint64_t max_msg;
    struct ws_msg *head, *tail, *held;
    int err;  /* sticky: the core's failure, or the stream's */
    bool eof; /* the stream ended */
    bool compressed;
    char subproto[64];
    uint8_t rbuf[WS_IO];
    uint8_t wbuf[WS_IO];
};

static void rand_mask(void *ud, uint8_t *out, size_t len)
{
    (void)ud;
    /* §10.3: the masking key must be unpredictable to the application. */
    if (vega_crypto_random(out, len) < 0)
        VEGA_PANIC("no randomness for a WebSocket mask key");
}

static int on_data(void *ud, vega_ws_msg_type type, const uint8_t *p, size_t n, bool fin)
{
    vega_websocket *ws = ud;
    if (n) {
        if (!vega__fits(ws->asm_len, n, ws->asm_cap)) {
            size_t cap = ws->asm_cap ? ws->asm_cap : 4096;
            while (cap < ws->asm_len + n)
                cap *= 2;
            uint8_t *b = vega__mem_realloc(ws->mem, ws->asm_buf, cap);
            if (!b)
                return -1;
            ws->asm_buf = b;
            ws->asm_cap = cap;
        }
        memcpy(ws->asm_buf + ws->asm_len, p, n);
        ws->asm_len += n;
    }
    if (!fin)
        return 0;
    struct ws_msg *m = vega__mem_malloc(ws->mem, sizeof *m + ws->asm_len);
    if (!m)
        return -1;
    m->next = NULL;
    m->type = type;
    m->len = ws->asm_len;
    if (ws->asm_len)
        memcpy(m->data, ws->asm_buf, ws->asm_len);
    ws->asm_len = 0;
    if (ws->tail)
        ws->tail->next = m;
    else
        ws->head = m;
    ws->tail = m;
    return 0;
}

static const vega_ws_callbacks ws_cb = {.on_data = on_data};

void vega_websocket_opts_init_versioned(vega_websocket_opts *o, int opts_version)
{
    if (opts_version != VEGA_WEBSOCKET_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_websocket_opts_init: options of another libvega (version %d)",
                    opts_version);
    memset(o, 0, sizeof *o);
    o->max_message_size = 16u * 1024 * 1024;
}

int vega_websocket_new_versioned(vega_websocket **out, vega_stream *s, bool own, vega_ws_role role,
                                 const vega_ws_deflate_params *params, const vega_websocket_opts *o,
                                 const uint8_t *pre, size_t pre_len, int opts_version)
{
    if (opts_version != VEGA_WEBSOCKET_OPTS_VERSION || !out || !s || (!pre && pre_len))
        return -EINVAL;
    vega_websocket_opts d;
    vega_websocket_opts_init(&d);
    if (!o)
        o = &d;
    vega_websocket *ws = vega__mem_calloc(o->mem, 1, sizeof *ws);
    if (!ws)
        return -ENOMEM;
    ws->s = s;
    ws->mem = o->mem;
    ws->max_msg = o->max_message_size ? o->max_message_size : d.max_message_size;
    vega_mutex_init(&ws->mu);
    vega_mutex_init(&ws->wmu);
    vega_ws_conn_opts co;
    vega_ws_conn_opts_init(&co);
    co.role = role;
    co.max_message_size = ws->max_msg;
    co.max_frame_size = ws->max_msg;
    co.random = rand_mask;
    co.mem = o->mem;
    /* The receiver answers the peer's Close once it has taken the messages before it, so that
     * what it sends in reply to them goes out first (RFC 6455 §5.5.1, §7.1.2). */
    co.owner_answers_close = true;
    if (params && params->enabled) {
        co.deflate = *params;
        ws->compressed = true;
    }
    int rc = vega_ws_conn_new(&ws->core, &ws_cb, &co, ws);
    if (rc < 0) {
        vega__mem_free(o->mem, ws);
        return rc;
    }
    ws->own = own;
    if (pre_len)
        ws->err = vega_ws_conn_read(ws->core, pre, pre_len);
    *out = ws;
    return 0;
}

void vega__websocket_set_subprotocol(vega_websocket *ws, const char *p, size_t len)
{
    len = VEGA__MIN(len, sizeof ws->subproto - 1);
    memcpy(ws->subproto, p, len);
    ws->subproto[len] = '\0';
}

/* Writes out what the core has queued, in order, under the write lock. wait false (a
 * receiver's pongs): only when the lock is free -- the task holding it writes all that is
 * queued, ours too, before it lets go, and looks once more after. A receiver must not wait
 * behind a sender stalled on flow control: over HTTP/2 and HTTP/3 windows are small, and an
 * echoing peer stops reading while we do not read its echoes. */
static int flush_ex(vega_websocket *ws, bool wait, vega_deadline dl)
{
    for (;;) {
        int rc = 0;
        if (wait)
            rc = vega_mutex_lock(&ws->wmu, dl);
        else if (!vega_mutex_trylock(&ws->wmu))
            return 0;
        if (rc < 0)
            return rc;
        for (;;) {
            vega_mutex_lock(&ws->mu, VEGA_DEADLINE_NEVER);
            vega_ssize n = vega_ws_conn_write(ws->core, ws->wbuf, sizeof ws->wbuf);
            vega_mutex_unlock(&ws->mu);
            if (n <= 0)
                break;
            vega_ssize w = vega_stream_write(ws->s, ws->wbuf, (size_t)n, NULL, dl);
            if (w < 0) {
                rc = (int)w;
                break;
            }
        }
        vega_mutex_unlock(&ws->wmu);
        if (rc < 0)
            return rc;
        /* what a receiver queued after our last look, finding the lock held */
        vega_mutex_lock(&ws->mu, VEGA_DEADLINE_NEVER);
        bool more = vega_ws_conn_get_pending(ws->core) > 0;
        vega_mutex_unlock(&ws->mu);
        if (!more)
            return 0;
        wait = false;
    }
}

static int flush(vega_websocket *ws, vega_deadline dl)
{
    return flush_ex(ws, true, dl);
}

/* Queues our answer to the peer's Close (echoing its code, §5.5.1) unless ours went out. */
static void answer_close(vega_websocket *ws)
{
    vega_mutex_lock(&ws->mu, VEGA_DEADLINE_NEVER);
    unsigned code = 0;
    if (vega_ws_conn_is_close_received(ws->core, &code) && !vega_ws_conn_is_close_sent(ws->core))
        (void)vega_ws_submit_close(ws->core, code == VEGA_WS_CLOSE_NO_STATUS ? 0 : code, NULL, 0);
    vega_mutex_unlock(&ws->mu);
}

static void free_msg(vega_websocket *ws, struct ws_msg *m)
{
    vega__mem_free(ws->mem, m);
}

int vega_websocket_recv(vega_websocket *ws, vega_websocket_msg *msg, vega_deadline dl)
{
    if (!ws || !msg)
        return -EINVAL;
    free_msg(ws, ws->held);
    ws->held = NULL;
    vega_mutex_lock(&ws->mu, VEGA_DEADLINE_NEVER);
    bool early = vega_ws_conn_get_pending(ws->core) > 0; /* answers to bytes given at creation */
    vega_mutex_unlock(&ws->mu);
    if (early) {
        int rc = flush_ex(ws, false, dl);
        if (rc < 0)
            return rc;
    }
    for (;;) {
        vega_mutex_lock(&ws->mu, VEGA_DEADLINE_NEVER);
        struct ws_msg *m = ws->head;
        if (m) {
            ws->head = m->next;
            if (!ws->head)
                ws->tail = NULL;
        }
        bool closed = vega_ws_conn_is_close_received(ws->core, NULL);
        int err = ws->err;
        vega_mutex_unlock(&ws->mu);
        if (m) {
            ws->held = m;
            msg->type = m->type;
            msg->data = m->data;
            msg->len = m->len;
            return 0;
        }
        if (closed || err || ws->eof) {
            if (closed && !err)
                answer_close(ws);
            (void)flush(ws, dl); /* our answer to the Close, or our failure's Close */
            if (err == VEGA_ERR_CALLBACK)
                return -ENOMEM; /* on_data fails only for memory */
            return err && err != VEGA_ERR_CLOSED ? err : VEGA_ERR_CLOSED;
        }
        vega_ssize n = vega_stream_read(ws->s, ws->rbuf, sizeof ws->rbuf, dl);
        if (n == 0) {
            ws->eof = true;
            continue;
        }
        if (n < 0)
            return (int)n;
        vega_mutex_lock(&ws->mu, VEGA_DEADLINE_NEVER);
        size_t before = vega_ws_conn_get_pending(ws->core);
        int rc = vega_ws_conn_read(ws->core, ws->rbuf, (size_t)n);
        if (rc < 0)
            ws->err = rc;
        /* what this read queued (pongs, a Close): a sender's message is its own to write */
        bool pending = vega_ws_conn_get_pending(ws->core) > before;
        vega_mutex_unlock(&ws->mu);
        if (pending) {
            rc = flush_ex(ws, false, dl); /* pongs */
            if (rc < 0)
                return rc;
        }
    }
}

static int submit_and_flush(vega_websocket *ws,
                            int (*fn)(vega_websocket *, const void *, size_t, unsigned),
                            const void *p, size_t len, unsigned arg, vega_deadline dl)
{
    vega_mutex_lock(&ws->mu, VEGA_DEADLINE_NEVER);
    int rc = fn(ws, p, len, arg);
    vega_mutex_unlock(&ws->mu);
    if (rc == VEGA_ERR_FULL) {
        rc = flush(ws, dl);
        if (rc < 0)
            return rc;
        vega_mutex_lock(&ws->mu, VEGA_DEADLINE_NEVER);
        rc = fn(ws, p, len, arg);
        vega_mutex_unlock(&ws->mu);
    }
    if (rc < 0)
        return rc;
    return flush(ws, dl);
}

static int do_send(vega_websocket *ws, const void *p, size_t len, unsigned type)
{
    return vega_ws_submit_message(ws->core, (vega_ws_msg_type)type, p, len);
}

static int do_ping(vega_websocket *ws, const void *p, size_t len, unsigned unused)
{
    (void)unused;
    return vega_ws_submit_ping(ws->core, p, len);
}

static int do_close(vega_websocket *ws, const void *p, size_t len, unsigned code)
{
    return vega_ws_submit_close(ws->core, code, p, len);
}

int vega_websocket_send(vega_websocket *ws, vega_ws_msg_type type, const void *data, size_t len,
                        vega_deadline dl)
{
    if (!ws)
        return -EINVAL;
    return submit_and_flush(ws, do_send, data, len, (unsigned)type, dl);
}

int vega_websocket_ping(vega_websocket *ws, const void *data, size_t len, vega_deadline dl)
{
    if (!ws)
        return -EINVAL;
    return submit_and_flush(ws, do_ping, data, len, 0, dl);
}

int vega_websocket_close(vega_websocket *ws, unsigned code, const char *reason, size_t len,
                         vega_deadline dl)
{
    if (!ws)
        return -EINVAL;
    return submit_and_flush(ws, do_close, reason, len, code, dl);
}

unsigned vega_websocket_get_close_code(const vega_websocket *ws)
{
    unsigned code = 0;
    if (vega_ws_conn_is_close_received(ws->core, &code))
        return code;
    return ws->eof ? VEGA_WS_CLOSE_ABNORMAL : 0;
}

void vega_websocket_get_error(const vega_websocket *ws, vega_ws_error *err)
{
    vega_ws_conn_get_error(ws->core, err);
}

const char *vega_websocket_get_subprotocol(const vega_websocket *ws)
{
    return ws->subproto;
}

bool vega_websocket_is_compressed(const vega_websocket *ws)
{
    return ws->compressed;
}

void vega_websocket_free(vega_websocket *ws)
{
    if (!ws)
        return;
    /* A peer's Close that was read but not answered (the application stopped receiving before
     * recv returned VEGA_ERR_CLOSED): answered now, the write bounded by a second. */
    if (!ws->err && !ws->eof && vega_ws_conn_is_close_received(ws->core, NULL)) {
        answer_close(ws);
        (void)flush(ws, vega_deadline_in_ms(1000));
    }
    while (ws->head) {
        struct ws_msg *m = ws->head;
        ws->head = m->next;
        free_msg(ws, m);
    }
    free_msg(ws, ws->held);
    vega_ws_conn_free(ws->core);
    vega__mem_free(ws->mem, ws->asm_buf);
    if (ws->own)
        vega_stream_close(ws->s, vega_deadline_in_ms(1000));
    vega_mutex_fini(&ws->mu);
    vega_mutex_fini(&ws->wmu);
    vega__mem_free(ws->mem, ws);
}
