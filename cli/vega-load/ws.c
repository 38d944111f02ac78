/* SPDX-License-Identifier: MIT */
/* The WebSocket session (ws:// and wss:// URLs): each connection does the HTTP/1.1 Upgrade
 * (RFC 6455 §4.1) on its own socket, then sends a message of -s bytes (text, or binary with
 * --binary), waits for the whole echo and compares it, and repeats (a closed loop, as echo
 * mode; -R paces the sends and measures from the intended send time). At the end of the run
 * each connection closes with the close handshake (§7): 1000, or 1001 (going away) when SIGINT
 * or SIGTERM stopped the run. The handshake is done here rather than with
 * vega_websocket_connect: that one builds an HTTP client per connection, more than a load
 * generator wants to pay for each of -c connections; the request is built once with -H, the
 * subprotocols of --ws-protocol and the permessage-deflate offer of --ws-compress (RFC 7692),
 * and the framing is the library's vega_websocket over the connection's stream, through a
 * wrapper that counts the bytes on the wire. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <vega/crypto.h>
#include <vega/websocket.h>

#include "load.h"

#define HEAD_MAX      8192 /* the 101 response's head, at most */
#define CLOSE_WAIT_MS 1000 /* the close handshake at the end, at most */
#define KEY_FIELD     "Sec-WebSocket-Key"

/* ---- the Upgrade request, built once --------------------------------------------------------- */

/* Fields the handshake sets itself: -H may not give them (Host and User-Agent it may). */
static const char *const own_fields[] = {
    "Upgrade",
    "Connection",
    KEY_FIELD,
    "Sec-WebSocket-Version",
    "Sec-WebSocket-Extensions",
    "Sec-WebSocket-Protocol",
    "Content-Length",
    "Transfer-Encoding",
};

static bool has_header(const struct load_opts *o, const char *name)
{
    for (unsigned i = 0; i < o->nheaders; i++)
        if (o->headers[i].name_len == strlen(name) &&
            strncasecmp(o->headers[i].name, name, o->headers[i].name_len) == 0)
            return true;
    return false;
}

/* The permessage-deflate offer of --ws-compress: the defaults, client_max_window_bits offered
 * (the server may then ask for a smaller client window). */
static const vega_ws_deflate_opts deflate_offer = {.enabled = true};

int load_ws_build(struct load_opts *o, char *err, size_t ecap)
{
    for (size_t i = 0; i < sizeof(own_fields) / sizeof(own_fields[0]); i++) {
        if (has_header(o, own_fields[i])) {
            snprintf(err, ecap, "-H: %s is set by vega-load%s", own_fields[i],
                     i == 4   ? " (--ws-compress offers permessage-deflate)"
                     : i == 5 ? " (use --ws-protocol)"
                              : "");
            return -EINVAL;
        }
    }
    char *protos = NULL, ext[160];
    vega_http1_field f[LOAD_MAX_HEADERS + 8];
    size_t n = 0;
    if (!has_header(o, "host"))
        f[n++] = (vega_http1_field){"Host", 4, o->host_header, strlen(o->host_header)};
    f[n++] = (vega_http1_field){"Upgrade", 7, "websocket", 9};
    f[n++] = (vega_http1_field){"Connection", 10, "Upgrade", 7};
    /* A placeholder of the key's length: each connection writes its own key over it. */
    f[n++] = (vega_http1_field){KEY_FIELD, strlen(KEY_FIELD),
                                "AAAAAAAAAAAAAAAAAAAAAA==", VEGA_WS_KEY_LEN};
    f[n++] = (vega_http1_field){"Sec-WebSocket-Version", 21, "13", 2};
    if (o->nws_protocols) {
        /* "a, b, c": each name is at most LOAD_MAX_WS_PROTO bytes */
        protos = malloc(o->nws_protocols * (LOAD_MAX_WS_PROTO + 2) + 1);
        if (!protos) {
            snprintf(err, ecap, "out of memory");
            return -ENOMEM;
        }
        size_t len = 0;
        for (unsigned i = 0; i < o->nws_protocols; i++) {
            size_t l = strlen(o->ws_protocols[i]);
            if (i) {
                memcpy(protos + len, ", ", 2);
                len += 2;
            }
            memcpy(protos + len, o->ws_protocols[i], l);
            len += l;
        }
        protos[len] = '\0';
        f[n++] = (vega_http1_field){"Sec-WebSocket-Protocol", 22, protos, len};
    }
    if (o->ws_compress) {
        vega_ssize el = vega_ws_deflate_offer(&deflate_offer, ext, sizeof(ext));
        if (el <= 0) {
            free(protos);
            snprintf(err, ecap, "--ws-compress: cannot format the offer");
            return -EINVAL;
        }
        f[n++] = (vega_http1_field){"Sec-WebSocket-Extensions", 24, ext, (size_t)el};
    }
    if (!has_header(o, "user-agent"))
        f[n++] = (vega_http1_field){"User-Agent", 10, "vega-load/" VEGA_VERSION_STRING,
                                    strlen("vega-load/" VEGA_VERSION_STRING)};
    for (unsigned i = 0; i < o->nheaders; i++)
        f[n++] = (vega_http1_field){o->headers[i].name, o->headers[i].name_len, o->headers[i].value,
                                    o->headers[i].value_len};
    uint8_t *head = malloc(LOAD_MAX_HEAD);
    if (!head) {
        free(protos);
        snprintf(err, ecap, "out of memory");
        return -ENOMEM;
    }
    vega_ssize hl = vega_http1_write_request_head(head, LOAD_MAX_HEAD, "GET", o->path, 11, f, n);
    free(protos);
    if (hl < 0) {
        free(head);
        if (hl == VEGA_ERR_NOBUF)
            snprintf(err, ecap, "the Upgrade request's head is over %u KiB", LOAD_MAX_HEAD >> 10);
        else
            snprintf(err, ecap,
                     "invalid Upgrade request: check the URL's path (visible ASCII) and -H "
                     "(Name: value, no control characters)");
        return -EINVAL;
    }
    static const char key_line[] = "\r\n" KEY_FIELD ": ";
    const uint8_t *at = memmem(head, (size_t)hl, key_line, sizeof(key_line) - 1);
    if (!at) { /* cannot happen: the field was written above */
        free(head);
        snprintf(err, ecap, "the Upgrade request has no %s", KEY_FIELD);
        return -EINVAL;
    }
    o->req = head;
    o->req_len = (size_t)hl;
    o->ws_key_at = (size_t)(at - head) + sizeof(key_line) - 1;
    return 0;
}

/* ---- a connection ---------------------------------------------------------------------------- */

struct wconn {
    struct load_run *r;
    const struct load_opts *o;
    vega_sock *sock;
    vega_stream *tls;     /* wss: over sock (borrowed) */
    vega_stream *raw;     /* ws: the stream over sock (borrowed) */
    vega_stream *inner;   /* tls or raw */
    vega_stream *counted; /* over inner: counts the bytes on the wire; the WebSocket's stream */
    vega_websocket *ws;
    struct load_retry rt;
    struct load_pacer pacer; /* -R */
};

/* The wire counter: inner's bytes, after the handshake (frame headers, masks, control frames
 * and permessage-deflate included; TLS records not). */
static vega_ssize count_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    struct wconn *c = user;
    vega_ssize n = vega_stream_read(c->inner, buf, len, dl);
    if (n > 0)
        load_bump(&load_worker_self(c->r)->ws_wire_in, (uint64_t)n);
    return n;
}

static vega_ssize count_write(void *user, const void *buf, size_t len, size_t *written,
                              vega_deadline dl)
{
    struct wconn *c = user;
    vega_ssize n = vega_stream_write(c->inner, buf, len, written, dl);
    load_bump(&load_worker_self(c->r)->ws_wire_out, *written);
    return n;
}

static vega_ssize count_writev(void *user, const struct iovec *iov, int iovcnt, size_t *written,
                               vega_deadline dl)
{
    struct wconn *c = user;
    vega_ssize n = vega_stream_writev(c->inner, iov, iovcnt, written, dl);
    load_bump(&load_worker_self(c->r)->ws_wire_out, *written);
    return n;
}

static int count_shutdown(void *user, int how, vega_deadline dl)
{
    struct wconn *c = user;
    return vega_stream_shutdown(c->inner, how, dl);
}

static const vega_stream_ops count_ops = {
    .name = "ws-wire-count",
    .read = count_read,
    .write = count_write,
    .writev = count_writev,
    .shutdown = count_shutdown,
};

/* Closes the connection; code != 0: with the close handshake (§7.1.2), our Close with code,
 * then the peer's answer, within CLOSE_WAIT_MS (a message still coming is read and dropped). */
static void conn_close(struct wconn *c, unsigned code)
{
    if (c->ws && code) {
        vega_deadline dl = vega_deadline_in_ms(CLOSE_WAIT_MS);
        if (vega_websocket_close(c->ws, code, NULL, 0, dl) == 0) {
            vega_websocket_msg m;
            while (vega_websocket_recv(c->ws, &m, dl) == 0)
                ;
        }
    }
    vega_websocket_free(c->ws);
    c->ws = NULL;
    if (c->counted)
        vega_stream_close(c->counted, 0);
    c->counted = NULL;
    if (c->tls)
        vega_stream_close(c->tls, 0);
    c->tls = NULL;
    if (c->raw)
        vega_stream_close(c->raw, 0);
    c->raw = NULL;
    c->inner = NULL;
    vega_sock_close(c->sock);
    c->sock = NULL;
}
/* A failed call: STOP when the run is over, else count the error. */
static enum load_step failed(struct wconn *c, enum load_kind kind, int code, bool at_end,
                             const char *msg)
{
    if (load_step_failed(code, at_end, &kind) == LOAD_STEP_STOP)
        return LOAD_STEP_STOP;
    if (!msg && c->tls && code <= VEGA_ERR_TLS_BASE)
        msg = vega_tls_last_error(c->tls);
    char buf[256];
    if (kind == LOAD_ERR_PARSE) {
        /* A handshake that failed, or the server broke the protocol (our Close went out with
         * the code); what follows depends on whether this connection ever got through. */
        vega_ws_error we = {0};
        if (!msg && c->ws)
            vega_websocket_get_error(c->ws, &we);
        if (!msg && we.code)
            snprintf(buf, sizeof(buf), "WebSocket protocol error: %s (we closed with %u)",
                     we.reason ? we.reason : "?", we.code);
        else
            snprintf(buf, sizeof(buf), "%s", msg ? msg : "WebSocket protocol error");
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s",
                 c->rt.ever ? "; reconnecting" : "");
        msg = buf;
    }
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

/* Whether v[0..len) is one of the subprotocols offered (§4.1: the server picks one of them,
 * spelled as offered). */
static bool offered(const struct load_opts *o, const char *v, size_t len)
{
    for (unsigned i = 0; i < o->nws_protocols; i++)
        if (strlen(o->ws_protocols[i]) == len && memcmp(o->ws_protocols[i], v, len) == 0)
            return true;
    return false;
}

/* Keeps what the first handshake negotiated for the report: the subprotocol and the
 * Sec-WebSocket-Extensions answer ("" when none), and permessage-deflate's parameters. */
static void ws_seen(struct load_run *r, const char *proto, size_t plen, const char *ext,
                    size_t xlen, const vega_ws_deflate_params *p)
{
    if (atomic_flag_test_and_set(&r->ws_seen))
        return;
    snprintf(r->ws_proto, sizeof(r->ws_proto), "%.*s", proto ? (int)plen : 0, proto ? proto : "");
    snprintf(r->ws_ext, sizeof(r->ws_ext), "%.*s", ext ? (int)xlen : 0, ext ? ext : "");
    r->ws_deflate = *p;
    r->ws_negotiated = true;
}

/* The opening handshake over stream s: the Upgrade request (o->req with a fresh key), then the
 * 101's head, checked (§4.1: status, Upgrade, Sec-WebSocket-Accept; a subprotocol or an
 * extension that was not offered fails the connection). Bytes read past the head start the
 * WebSocket, over the wire counter. */
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
    size_t cap = o->req_len > HEAD_MAX ? o->req_len : HEAD_MAX;
    char *buf = malloc(cap + 1);
    if (!buf)
        return failed(c, LOAD_ERR_CONNECT, -ENOMEM, at_end, NULL);
    memcpy(buf, o->req, o->req_len);
    memcpy(buf + o->ws_key_at, key, VEGA_WS_KEY_LEN);
    enum load_step st = LOAD_STEP_OK;
    vega_ssize k = vega_stream_write(s, buf, o->req_len, NULL, dl);
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
    char msg[200];
    const char *why = NULL;
    size_t alen = 0, ulen = 0, plen = 0, xlen = 0;
    const char *acc = field(buf, "Sec-WebSocket-Accept", &alen);
    const char *up = field(buf, "Upgrade", &ulen);
    const char *proto = field(buf, "Sec-WebSocket-Protocol", &plen);
    const char *ext = field(buf, "Sec-WebSocket-Extensions", &xlen);
    vega_ws_deflate_params params = {0};
    if (strncmp(buf, "HTTP/1.1 101", 12) != 0) {
        snprintf(msg, sizeof(msg), "handshake: the server answered '%.*s', not 101",
                 (int)strcspn(buf, "\r\n") > 80 ? 80 : (int)strcspn(buf, "\r\n"), buf);
        why = msg;
    } else if (!up || ulen != 9 || strncasecmp(up, "websocket", 9) != 0) {
        why = "handshake: the 101 has no 'Upgrade: websocket'";
    } else if (!acc || alen != VEGA_WS_ACCEPT_LEN || memcmp(acc, want, alen) != 0) {
        why = "handshake: wrong or missing Sec-WebSocket-Accept";
    } else if (proto && !offered(o, proto, plen)) {
        /* §4.1: "a subprotocol that was not present in the client's handshake": fail */
        snprintf(msg, sizeof(msg),
                 "handshake: the server chose subprotocol '%.*s', which was not offered",
                 plen > 64 ? 64 : (int)plen, proto);
        why = msg;
    } else if (ext && !o->ws_compress) {
        /* §4.1: "an extension not present in the client's handshake": fail */
        snprintf(msg, sizeof(msg),
                 "handshake: the server answered with extensions that were not offered ('%.*s')",
                 xlen > 64 ? 64 : (int)xlen, ext);
        why = msg;
    } else if (ext && vega_ws_deflate_check_response(ext, xlen, &deflate_offer, &params) < 0) {
        /* RFC 7692 §7.1: parameters not offered, duplicates, bad values: fail */
        snprintf(msg, sizeof(msg), "handshake: invalid permessage-deflate answer '%.*s'",
                 xlen > 64 ? 64 : (int)xlen, ext);
        why = msg;
    }
    if (why) {
        st = failed(c, LOAD_ERR_PARSE, VEGA_ERR_WS_HANDSHAKE, at_end, why);
        goto out;
    }
    if (o->nws_protocols || o->ws_compress)
        ws_seen(c->r, proto, plen, ext, xlen, &params);
    e = vega_stream_new(&c->counted, &count_ops, c);
    if (e < 0) {
        st = failed(c, LOAD_ERR_CONNECT, e, at_end, NULL);
        goto out;
    }
    size_t head = (size_t)(end + 4 - buf);
    vega_websocket_opts wo;
    vega_websocket_opts_init(&wo);
    wo.max_message_size = o->size > wo.max_message_size ? o->size : wo.max_message_size;
    e = vega_websocket_new(&c->ws, c->counted, false, VEGA_WS_CLIENT,
                           params.enabled ? &params : NULL, &wo, (const uint8_t *)buf + head,
                           got - head);
    if (e < 0) {
        st = failed(c, LOAD_ERR_CONNECT, e, at_end, NULL);
        goto out;
    }
    /* The bytes read past the head were on the wire too. */
    load_bump(&load_worker_self(c->r)->ws_wire_in, got - head);
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
    if (r->tls) {
        const struct load_opts *o = c->o;
        const char *name = o->sni ? o->sni : o->unix_path ? NULL : o->host;
        e = load_tls_handshake(r, c->sock, name, &c->tls, dl);
        if (e == 0)
            load_tls_seen(r, c->tls);
        c->inner = c->tls;
    } else {
        e = vega_stream_from_sock(&c->raw, c->sock, VEGA_STREAM_BORROW);
        c->inner = c->raw;
    }
    enum load_step st =
        e < 0 ? failed(c, LOAD_ERR_CONNECT, e, at_end, NULL) : upgrade(c, c->inner, dl, at_end);
    if (st != LOAD_STEP_OK) {
        conn_close(c, 0);
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
    load_bump(&load_worker_self(c->r)->ws_msg_out, o->size);
    vega_websocket_msg m;
    e = vega_websocket_recv(c->ws, &m, dl);
    if (e == VEGA_ERR_PROTO)
        return failed(c, LOAD_ERR_PARSE, e, at_end, NULL);
    if (e < 0)
        return failed(c, LOAD_ERR_READ, e, at_end, NULL);
    load_bump(&load_worker_self(c->r)->ws_msg_in, m.len);
    if (m.type != type || m.len != o->size || memcmp(m.data, c->r->payload, m.len) != 0)
        return failed(c, LOAD_ERR_MISMATCH, 0, at_end, NULL);
    return LOAD_STEP_OK;
}

/* Runs until the end of the run; the connection may be left open (the caller closes it). */
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
        /* The end of the run (or a signal) in the middle of a round trip: the caller closes
         * with the close handshake (the echo in flight is read and dropped; a message cut in
         * the middle of its write has failed the connection, which then just closes). */
        if (s == LOAD_STEP_STOP)
            return;
        conn_close(c, 0);
        if (!load_conn_failed(r, &c->rt))
            return;
    }
}

/* SIGINT or SIGTERM cancelled the connection's task, whose every wait now returns at once: a
 * task of r->closers does its close handshake (1001, going away) instead, and frees c. */
static void *closer_main(void *arg)
{
    struct wconn *c = arg;
    conn_close(c, VEGA_WS_CLOSE_GOING_AWAY);
    free(c);
    return NULL;
}

void *load_ws_conn(void *arg)
{
    struct load_run *r = arg;
    struct wconn *c = calloc(1, sizeof(*c));
    if (!c) {
        load_conn_no_memory(r);
        return NULL;
    }
    c->r = r;
    c->o = r->o;
    load_pacer_init(&c->pacer, r, atomic_fetch_add(&r->next_index, 1));
    conn_loop(c);
    load_pacer_fini(&c->pacer);
    if (c->ws && vega_task_is_cancelled() && r->closers &&
        vega_group_spawn(r->closers, closer_main, c) == 0)
        return NULL;
    /* The end of -d or -n: the close handshake, 1000 (normal closure). */
    if (c->sock)
        conn_close(c, VEGA_WS_CLOSE_NORMAL);
    free(c);
    return NULL;
}
