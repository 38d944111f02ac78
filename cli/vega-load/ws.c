/* SPDX-License-Identifier: MIT */
/* The WebSocket session (ws:// and wss:// URLs): each connection does the HTTP/1.1 Upgrade
 * (RFC 6455 §4.1) on its own socket, then sends a message of -s bytes (text, or binary with
 * --binary), waits for the whole echo and compares it, and repeats (a closed loop, as echo
 * mode; -R paces the sends and measures from the intended send time). At the end of the run
 * each connection closes with the close handshake (§7). The handshake is done here rather
 * than with vega_websocket_connect: that one builds an HTTP client per connection, more than a
 * load generator wants to pay for each of -c connections; the framing is the library's
 * vega_websocket over the connection's stream. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <vega/crypto.h>
#include <vega/websocket.h>

#include "load.h"

#define HEAD_MAX      8192 /* the 101 response's head, at most */
#define CLOSE_WAIT_MS 1000 /* the close handshake at the end, at most */

struct wconn {
    struct load_run *r;
    const struct load_opts *o;
    vega_sock *sock;
    vega_stream *tls; /* wss: over sock (borrowed) */
    vega_stream *raw; /* ws: the stream over sock (borrowed) */
    vega_websocket *ws;
    struct load_retry rt;
    struct load_pacer pacer; /* -R */
};

static void conn_close(struct wconn *c, bool handshake)
{
    if (c->ws && handshake) {
        /* The close handshake (§7.1.2): our Close, then the peer's answer, bounded. */
        vega_deadline dl = vega_deadline_in_ms(CLOSE_WAIT_MS);
        if (vega_websocket_close(c->ws, 1000, NULL, 0, dl) == 0) {
            vega_websocket_msg m;
            while (vega_websocket_recv(c->ws, &m, dl) == 0)
                ;
        }
    }
    vega_websocket_free(c->ws);
    c->ws = NULL;
    if (c->tls)
        vega_stream_close(c->tls, 0);
    c->tls = NULL;
    if (c->raw)
        vega_stream_close(c->raw, 0);
    c->raw = NULL;
    vega_sock_close(c->sock);
    c->sock = NULL;
}

/* A failed call: STOP when the run is over, else count the error. */
static enum load_step failed(struct wconn *c, enum load_kind kind, int code, bool at_end,
                             const char *msg)
{
    if (code == -ECANCELED)
        return LOAD_STEP_STOP;
    if (code == -ETIMEDOUT) {
        if (at_end)
            return LOAD_STEP_STOP;
        if (kind != LOAD_ERR_CONNECT)
            kind = LOAD_ERR_TIMEOUT;
    }
    if (!msg && c->tls && code <= VEGA_ERR_TLS_BASE)
        msg = vega_tls_last_error(c->tls);
    load_error_msg(c->r, kind, code, msg);
    return LOAD_STEP_FAIL;
}

/* The value of field name in a response head (lines after the status line), or NULL. */
static const char *field(const char *head, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p && p[2] != '\r'; p = strstr(p + 2, "\r\n")) {
        const char *l = p + 2;
        if (strncasecmp(l, name, nl) == 0 && l[nl] == ':') {
            const char *v = l + nl + 1, *e = strstr(v, "\r\n");
            while (*v == ' ' || *v == '\t')
                v++;
            while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            *len = (size_t)(e - v);
            return v;
        }
    }
    return NULL;
}

/* The opening handshake over stream s: the Upgrade request, then the 101's head, checked.
 * Bytes read past the head start the WebSocket. */
static enum load_step upgrade(struct wconn *c, vega_stream *s, vega_deadline dl, bool at_end)
{
    const struct load_opts *o = c->o;
    uint8_t nonce[16];
    char key[VEGA_WS_KEY_LEN + 1], want[VEGA_WS_ACCEPT_LEN + 1];
    int e = vega_crypto_random(nonce, sizeof(nonce));
    if (e < 0)
        return failed(c, LOAD_ERR_CONNECT, e, at_end, NULL);
    vega_ws_handshake_key(nonce, key);
    e = vega_ws_handshake_accept(key, VEGA_WS_KEY_LEN, want);
    if (e < 0)
        return failed(c, LOAD_ERR_CONNECT, e, at_end, NULL);
    char *buf = malloc(HEAD_MAX + 1);
    if (!buf)
        return failed(c, LOAD_ERR_CONNECT, -ENOMEM, at_end, NULL);
    int n = snprintf(buf, HEAD_MAX,
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
                     "User-Agent: vega-load/" VEGA_VERSION_STRING "\r\n\r\n",
                     o->path, o->host_header, key);
    enum load_step st = LOAD_STEP_OK;
    vega_ssize k = n > 0 && n < HEAD_MAX ? vega_stream_write(s, buf, (size_t)n, NULL, dl) : -E2BIG;
    if (k < 0) {
        st = failed(c, LOAD_ERR_WRITE, (int)k, at_end, NULL);
        goto out;
    }
    size_t got = 0;
    char *end = NULL;
    while (!end) {
        if (got == HEAD_MAX) {
            st = failed(c, LOAD_ERR_PARSE, VEGA_ERR_WS_HANDSHAKE, at_end,
                        "handshake: the response head is larger than 8 KiB");
            goto out;
        }
        k = vega_stream_read(s, buf + got, HEAD_MAX - got, dl);
        if (k <= 0) {
            st = failed(c, LOAD_ERR_READ, (int)k, at_end, NULL);
            goto out;
        }
        got += (size_t)k;
        buf[got] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    char msg[160];
    const char *why = NULL;
    size_t alen = 0, ulen = 0;
    const char *acc = field(buf, "Sec-WebSocket-Accept", &alen);
    const char *up = field(buf, "Upgrade", &ulen);
    if (strncmp(buf, "HTTP/1.1 101", 12) != 0) {
        snprintf(msg, sizeof(msg), "handshake: the server answered '%.*s', not 101",
                 (int)strcspn(buf, "\r\n") > 80 ? 80 : (int)strcspn(buf, "\r\n"), buf);
        why = msg;
    } else if (!up || ulen != 9 || strncasecmp(up, "websocket", 9) != 0) {
        why = "handshake: the 101 has no 'Upgrade: websocket'";
    } else if (!acc || alen != VEGA_WS_ACCEPT_LEN || memcmp(acc, want, alen) != 0) {
        why = "handshake: wrong or missing Sec-WebSocket-Accept";
    }
    if (why) {
        st = failed(c, LOAD_ERR_PARSE, VEGA_ERR_WS_HANDSHAKE, at_end, why);
        goto out;
    }
    size_t head = (size_t)(end + 4 - buf);
    vega_websocket_opts wo;
    vega_websocket_opts_init(&wo);
    wo.max_message_size = o->size > wo.max_message_size ? o->size : wo.max_message_size;
    e = vega_websocket_new(&c->ws, s, false, VEGA_WS_CLIENT, NULL, &wo, (const uint8_t *)buf + head,
                           got - head);
    if (e < 0)
        st = failed(c, LOAD_ERR_CONNECT, e, at_end, NULL);
out:
    free(buf);
    return st;
}

static enum load_step conn_open(void *arg)
{
    struct wconn *c = arg;
    struct load_run *r = c->r;
    bool at_end;
    vega_deadline dl = load_step_deadline(r, vega_now(), &at_end);
    int e = load_connect(r, &c->sock, c->rt.ever, dl);
    if (e < 0)
        return failed(c, LOAD_ERR_CONNECT, e, at_end, NULL);
    if (!c->o->unix_path)
        vega_sock_set_nodelay(c->sock, true);
    vega_stream *s;
    if (r->tls) {
        vega_tls_opts to;
        vega_tls_opts_init(&to);
        to.server_name = c->o->sni ? c->o->sni : c->o->unix_path ? NULL : c->o->host;
        to.port = (uint16_t)atoi(c->o->port);
        e = vega_tls_stream_from_sock(&c->tls, c->sock, VEGA_STREAM_BORROW, r->tls, &to);
        if (e == 0)
            e = vega_tls_handshake(c->tls, dl);
        if (e == 0)
            load_tls_seen(r, c->tls);
        s = c->tls;
    } else {
        e = vega_stream_from_sock(&c->raw, c->sock, VEGA_STREAM_BORROW);
        s = c->raw;
    }
    enum load_step st =
        e < 0 ? failed(c, LOAD_ERR_CONNECT, e, at_end, NULL) : upgrade(c, s, dl, at_end);
    if (st != LOAD_STEP_OK) {
        conn_close(c, false);
        return st;
    }
    c->rt.ever = true;
    load_bump(&load_worker_self(r)->connects, 1);
    return LOAD_STEP_OK;
}

static enum load_step round_trip(struct wconn *c, vega_deadline dl, bool at_end)
{
    const struct load_opts *o = c->o;
    vega_ws_msg_type type = o->ws_binary ? VEGA_WS_BINARY : VEGA_WS_TEXT;
    int e = vega_websocket_send(c->ws, type, c->r->payload, o->size, dl);
    if (e < 0)
        return failed(c, LOAD_ERR_WRITE, e, at_end, NULL);
    vega_websocket_msg m;
    e = vega_websocket_recv(c->ws, &m, dl);
    if (e == VEGA_ERR_PROTO)
        return failed(c, LOAD_ERR_PARSE, e, at_end, NULL);
    if (e < 0)
        return failed(c, LOAD_ERR_READ, e, at_end, NULL);
    if (m.type != type || m.len != o->size || memcmp(m.data, c->r->payload, m.len) != 0)
        return failed(c, LOAD_ERR_MISMATCH, 0, at_end, NULL);
    return LOAD_STEP_OK;
}

static void conn_loop(struct wconn *c)
{
    struct load_run *r = c->r;
    const struct load_opts *o = c->o;
    for (;;) {
        if (!c->ws && !load_conn_open_retry(r, &c->rt, conn_open, c))
            return;
        vega_tstamp intended = 0;
        if (o->rate && !load_pacer_wait(&c->pacer, &intended))
            return;
        vega_tstamp t0 = vega_now();
        if (t0 >= r->end)
            return;
        vega_tstamp from = o->rate ? intended : t0;
        bool measured = from >= r->measure_start;
        bool ticket = measured && o->round_trips;
        if (ticket && !load_ticket_take(r))
            return;
        bool at_end;
        vega_deadline dl = load_step_deadline(r, t0, &at_end);
        enum load_step s = round_trip(c, dl, at_end);
        if (s == LOAD_STEP_OK) {
            vega_tstamp t1 = vega_now();
            c->rt.fails = 0;
            if (measured) {
                struct load_worker *w = load_worker_self(r);
                load_latency(w, (t1 - from + VEGA_NS_PER_US / 2) / VEGA_NS_PER_US);
                if (o->rate) /* -R: also from the actual send, as HTTP mode reports it */
                    cli_hist_record(&w->hist_unc, (t1 - t0 + VEGA_NS_PER_US / 2) / VEGA_NS_PER_US);
                load_bump(&w->round_trips, 1);
            }
            continue;
        }
        if (ticket)
            load_ticket_return(r);
        /* The end of the run (or a signal) in the middle of a round trip: the close handshake
         * still (the echo in flight is read and dropped; a message cut in the middle of its
         * write has failed the connection, which then just closes). A failed one just
         * closes. */
        conn_close(c, s == LOAD_STEP_STOP);
        if (s == LOAD_STEP_STOP)
            return;
        if (!load_conn_failed(r, &c->rt))
            return;
    }
}

void *load_ws_conn(void *arg)
{
    struct wconn c = {.r = arg, .o = ((struct load_run *)arg)->o};
    load_pacer_init(&c.pacer, c.r, atomic_fetch_add(&c.r->next_index, 1));
    conn_loop(&c);
    if (c.sock)
        conn_close(&c, true);
    load_pacer_fini(&c.pacer);
    return NULL;
}
