/* SPDX-License-Identifier: MIT */
/* ws:// and wss:// URLs (vega_websocket_connect): lines of stdin become text messages
 * (--binary: stdin in chunks of up to 64 KiB as binary messages), each received message goes to
 * stdout followed by a newline, --ws-ping SECS pings, --max-messages N closes after N received
 * messages, the end of stdin sends Close 1000 and waits for the server's. -v shows the
 * handshake like an HTTP request and the close code.
 * Exit codes: 0 when the server's Close arrived (any code: -v tells it); 22 when the server
 * refused the upgrade (curl's "Refused WebSocket upgrade"); 56 (recv error) when the connection
 * ended without a Close or the server broke the protocol; 23 when stdout fails; the connect,
 * TLS and proxy codes as for HTTP. */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <vega/websocket.h>

#include "curl.h"

#define WS_LINE_MAX (1024u * 1024) /* longest stdin line sent as one message */
#define WS_CHUNK    65536u         /* --binary: bytes per message at most */

bool curl_ws_url(const char *url)
{
    return strncasecmp(url, "ws://", 5) == 0 || strncasecmp(url, "wss://", 6) == 0;
}

struct wsx {
    const struct curl_opts *o;
    vega_websocket *ws;
    vega_notify done; /* the receiver ended */
    atomic_bool ended;
    int code;          /* the receiver's exit code */
    uint64_t received; /* messages */
    cli_stdio out;
};

static void vinfo(const struct curl_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void vinfo(const struct curl_opts *o, const char *fmt, ...)
{
    if (!o->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("* ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The trace's user: with h3, HTTP/3 was asked and the first head is yet to go. */
struct ws_trace {
    const struct curl_opts *o;
    bool h3;
};

static void trace(void *user, bool is_request, const void *head, size_t len)
{
    struct ws_trace *t = user;
    const struct curl_opts *o = t->o;
    if (!o->verbose)
        return;
    const char *p = head, *end = p + len;
    if (t->h3 && is_request) {
        /* the library went by TCP: say why before the head (our TCP side offers http/1.1
         * alone for a WebSocket, make_tls_alpn) */
        const char *nl = memchr(p, '\n', len);
        size_t n = nl ? (size_t)(nl - p) : len;
        if (n && p[n - 1] == '\r')
            n--;
        if (n < 7 || memcmp(p + n - 7, " HTTP/3", 7) != 0)
            vinfo(o, "no WebSocket over HTTP/3 there (QUIC did not connect, or the server does "
                     "not do RFC 9220): HTTP/1.1 Upgrade over TCP instead");
        t->h3 = false;
    }
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n && p[n - 1] == '\r')
            n--;
        fprintf(stderr, "%s%.*s\n", is_request ? "> " : "< ", (int)n, p);
        p = nl ? nl + 1 : end;
    }
}

/* Receives until the close or max_messages; each message and a newline to stdout. */
static void *recv_task(void *arg)
{
    struct wsx *x = arg;
    const struct curl_opts *o = x->o;
    x->code = CE_OK;
    for (;;) {
        vega_websocket_msg m;
        int rc = vega_websocket_recv(x->ws, &m, VEGA_DEADLINE_NEVER);
        if (rc == VEGA_ERR_CLOSED) {
            unsigned code = vega_websocket_get_close_code(x->ws);
            vinfo(o, "WebSocket closed by the server: code %u", code);
            if (code == VEGA_WS_CLOSE_ABNORMAL)
                x->code = curl_fail(o, CE_RECV_ERROR, "WebSocket connection ended without a Close");
            break;
        }
        if (rc < 0) {
            vega_ws_error e;
            vega_websocket_get_error(x->ws, &e);
            if (e.code)
                vinfo(o, "WebSocket failed: close code %u sent (%s)", e.code, e.reason);
            x->code = curl_fail(o, CE_RECV_ERROR, "WebSocket: %s", vega_strerror(rc));
            break;
        }
        if (cli_stdio_write(&x->out, m.data, m.len, VEGA_DEADLINE_NEVER) < 0 ||
            cli_stdio_write(&x->out, "\n", 1, VEGA_DEADLINE_NEVER) < 0) {
            x->code = curl_fail(o, CE_WRITE_ERROR, "failure writing output to destination");
            (void)vega_websocket_close(x->ws, VEGA_WS_CLOSE_GOING_AWAY, NULL, 0,
                                       vega_deadline_in_ms(2000));
            break;
        }
        if (o->ws_max_messages && ++x->received >= o->ws_max_messages) {
            vinfo(o, "%llu messages received: closing", (unsigned long long)x->received);
            if (vega_websocket_close(x->ws, VEGA_WS_CLOSE_NORMAL, NULL, 0,
                                     vega_deadline_in_ms(5000)) < 0)
                break;
            /* then receive on, for the server's answer (messages it sent meanwhile dropped) */
            vega_websocket_msg m2;
            while ((rc = vega_websocket_recv(x->ws, &m2, vega_deadline_in_ms(5000))) == 0) {
            }
            vinfo(o, "WebSocket closed: server code %u", vega_websocket_get_close_code(x->ws));
            break;
        }
    }
    atomic_store(&x->ended, true);
    vega_notify_all(&x->done);
    return NULL;
}

static void *ping_task(void *arg)
{
    struct wsx *x = arg;
    for (;;) {
        int rc = vega_notify_wait(&x->done, vega_deadline_in_ms(x->o->ws_ping_ms));
        if (rc == 0 || atomic_load(&x->ended))
            return NULL;
        if (vega_websocket_ping(x->ws, "vega-curl", 9, vega_deadline_in_ms(5000)) < 0)
            return NULL;
        vinfo(x->o, "ping sent");
    }
}

/* stdin: lines (or chunks) as messages until EOF, or until the receiver ended. */
static int send_stdin(struct wsx *x)
{
    cli_stdio in;
    if (cli_stdio_init(&in, STDIN_FILENO) < 0)
        return curl_fail(x->o, CE_READ_ERROR, "cannot read stdin");
    uint8_t *buf = malloc(WS_LINE_MAX);
    if (!buf) {
        cli_stdio_fini(&in);
        return curl_fail(x->o, CE_OUT_OF_MEMORY, "out of memory");
    }
    size_t have = 0;
    int code = CE_OK;
    bool eof = false;
    while (!eof && !atomic_load(&x->ended)) {
        size_t cap = x->o->ws_binary ? WS_CHUNK : WS_LINE_MAX;
        /* a short wait, so that a receiver that ended (the server closed) ends this too */
        vega_ssize n = cli_stdio_read(&in, buf + have, cap - have, vega_deadline_in_ms(100));
        if (n == -ETIMEDOUT)
            continue;
        if (n < 0) {
            code = curl_fail(x->o, CE_READ_ERROR, "reading stdin: %s", vega_strerror((int)n));
            break;
        }
        eof = n == 0;
        have += (size_t)n;
        int rc = 0;
        if (x->o->ws_binary) {
            if (have)
                rc = vega_websocket_send(x->ws, VEGA_WS_BINARY, buf, have, VEGA_DEADLINE_NEVER);
            have = 0;
        } else {
            size_t start = 0;
            for (size_t i = 0; i < have && rc == 0; i++) {
                if (buf[i] != '\n')
                    continue;
                size_t len = i - start;
                if (len && buf[start + len - 1] == '\r')
                    len--;
                rc =
                    vega_websocket_send(x->ws, VEGA_WS_TEXT, buf + start, len, VEGA_DEADLINE_NEVER);
                start = i + 1;
            }
            memmove(buf, buf + start, have - start);
            have -= start;
            if (rc == 0 && have && (eof || have == WS_LINE_MAX)) {
                rc = vega_websocket_send(x->ws, VEGA_WS_TEXT, buf, have, VEGA_DEADLINE_NEVER);
                have = 0;
            }
        }
        if (rc == VEGA_ERR_CLOSED)
            break; /* the receiver reports why */
        if (rc < 0) {
            code = curl_fail(x->o, CE_SEND_ERROR, "WebSocket send: %s", vega_strerror(rc));
            break;
        }
    }
    if (eof && !atomic_load(&x->ended) && code == CE_OK) {
        vinfo(x->o, "end of stdin: sending Close 1000");
        (void)vega_websocket_close(x->ws, VEGA_WS_CLOSE_NORMAL, NULL, 0, vega_deadline_in_ms(5000));
    }
    free(buf);
    cli_stdio_fini(&in);
    return code;
}

int curl_ws_transfer(struct curl_ctx *cx, size_t idx)
{
    const struct curl_opts *o = cx->o;
    const char *url = o->urls[idx];
    vega_websocket_connect_opts wo;
    vega_websocket_connect_opts_init(&wo);
    wo.ws.deflate.enabled = o->compressed;
    /* RFC 8441 (WebSocket over HTTP/2; curl itself has none): --http2 on wss:// by ALPN h2,
     * the HTTP/1.1 Upgrade when the server does not do it (as browsers); ws:// stays HTTP/1.1
     * (there is no h2c Upgrade for a CONNECT, and browsers speak no cleartext HTTP/2);
     * --http2-prior-knowledge insists: h2c on ws://, h2 on wss://, no fallback */
    bool is_wss = strncasecmp(url, "wss:", 4) == 0;
    if (o->http_version == 21 || (o->http_version == 20 && is_wss))
        wo.version = VEGA_HTTP_CLIENT_V2;
    /* RFC 9220 (WebSocket over HTTP/3): --http3 on wss:// over QUIC, the HTTP/1.1 Upgrade when
     * QUIC does not connect (first: after a head start TCP races it, as for a request) or the
     * server does not do RFC 9220 (the library's h1_fallback; -v says so, trace); ws:// stays
     * HTTP/1.1 (HTTP/3 is https only); --http3-only insists (no fallback; ws:// is refused) */
    if (o->http_version == 30 && (is_wss || !o->h3_fallback)) {
        wo.version = VEGA_HTTP_CLIENT_V3;
        wo.h1_fallback = o->h3_fallback;
    }
    /* -H, then -u or --oauth2-bearer as Authorization unless -H gave one (no redirects here),
     * then Cookie */
    vega_http_field fields[CURL_MAX_HEADERS + 2];
    size_t nf = 0;
    bool has_auth = false;
    for (size_t i = 0; i < o->nheaders; i++) {
        has_auth |= o->headers[i].name.len == 13 &&
                    strncasecmp(o->headers[i].name.ptr, "Authorization", 13) == 0;
        fields[nf++] = o->headers[i];
    }
    if (o->auth && !has_auth)
        fields[nf++] = (vega_http_field){{"Authorization", 13}, {o->auth, strlen(o->auth)}};
    /* cookies go with the upgrade as with an http(s) request to the same place (ws: is http:,
     * wss: https: for Secure); the 101's own Set-Cookie is not read */
    static char cookie[16384];
    char hurl[CURL_MAX_URL_LEN];
    bool wss = strncasecmp(url, "wss:", 4) == 0;
    int hn = snprintf(hurl, sizeof hurl, "%s%s", wss ? "https" : "http", url + (wss ? 3 : 2));
    bool capped = false;
    size_t cl =
        hn > 0 && (size_t)hn < sizeof hurl ? curl_cookie_header(hurl, cookie, 8191, &capped) : 0;
    bool has_cookie = false;
    for (size_t i = 0; i < o->nheaders; i++)
        has_cookie |=
            o->headers[i].name.len == 6 && strncasecmp(o->headers[i].name.ptr, "Cookie", 6) == 0;
    if (o->cookie_str && !has_cookie && !capped)
        snprintf(cookie + cl, sizeof cookie - cl, "%s%s", cl ? "; " : "", o->cookie_str);
    else
        cookie[cl] = '\0';
    if (cookie[0])
        fields[nf++] = (vega_http_field){{"Cookie", 6}, {cookie, strlen(cookie)}};
    wo.fields = fields;
    wo.nfields = nf;
    struct ws_trace tr = {.o = o, .h3 = wo.version == VEGA_HTTP_CLIENT_V3 && wo.h1_fallback};
    wo.trace = trace;
    wo.trace_user = &tr;
    vega_http_client_response *refused = NULL;
    wo.refused = &refused;
    struct wsx x = {.o = o};
    vega_deadline dl = o->max_time_ns ? vega_deadline_in_ns(o->max_time_ns) : VEGA_DEADLINE_NEVER;
    int rc = vega_websocket_connect(cx->client, url, &wo, &x.ws, dl);
    if (rc == -ENOTSUP && o->http_version == 20 && cx->h1_client) {
        /* the fall back (the library's h1_fallback would offer h2 again, through our TLS
         * config, to a server that chose it): a client of its own offering http/1.1 alone */
        vinfo(o, "no WebSocket over HTTP/2 there (RFC 8441): HTTP/1.1 Upgrade instead");
        vega_http_client *c1 = cx->h1_client(cx);
        wo.version = 0;
        rc = c1 ? vega_websocket_connect(c1, url, &wo, &x.ws, dl) : -ENOMEM;
    }
    if (rc == VEGA_ERR_WS_STATUS) {
        int st = vega_http_client_response_info(refused)->status;
        vega_http_client_response_free(refused);
        return curl_fail(o, CE_HTTP_RETURNED_ERROR, "Refused WebSocket upgrade: %d", st);
    }
    if (rc < 0) {
        char msg[512];
        int code = curl_proxy_failed(rc, msg, sizeof msg);
        if (code)
            return curl_fail(o, code, "%s", msg);
        code = rc == VEGA_ERR_WS_HANDSHAKE ? CE_WEIRD_SERVER_REPLY
               : rc == -ETIMEDOUT          ? CE_OPERATION_TIMEDOUT
               : rc == VEGA_ERR_HTTP_URL   ? CE_URL_MALFORMAT
               : rc == VEGA_ERR_DNS_NOT_FOUND || rc == VEGA_ERR_DNS_NO_ADDRESS
                   ? CE_COULDNT_RESOLVE_HOST
               : rc <= VEGA_ERR_TLS_BASE && rc > VEGA_ERR_TLS_BASE - 100 ? CE_SSL_CONNECT_ERROR
                                                                         : CE_COULDNT_CONNECT;
        if (rc == -ENOTSUP && wo.version == VEGA_HTTP_CLIENT_V3)
            return curl_fail(o, CE_UNSUPPORTED_PROTOCOL,
                             "WebSocket to %s: the server does not do WebSocket over HTTP/3 "
                             "(RFC 9220: no SETTINGS_ENABLE_CONNECT_PROTOCOL)",
                             url);
        if (rc == -ENOTSUP)
            return curl_fail(o, CE_UNSUPPORTED_PROTOCOL,
                             "WebSocket to %s: the server does not do WebSocket over HTTP/2 "
                             "(RFC 8441: no SETTINGS_ENABLE_CONNECT_PROTOCOL, or ALPN chose "
                             "http/1.1)",
                             url);
        if (rc == VEGA_ERR_HTTP_SCHEME && wo.version == VEGA_HTTP_CLIENT_V3)
            return curl_fail(o, CE_UNSUPPORTED_PROTOCOL,
                             "WebSocket to %s: HTTP/3 is for wss:// only (--http3-only)", url);
        return curl_fail(o, code, "WebSocket to %s: %s", url, vega_strerror(rc));
    }
    vinfo(o, "WebSocket open%s%s%s",
          vega_websocket_is_compressed(x.ws) ? " (permessage-deflate)" : "",
          *vega_websocket_get_subprotocol(x.ws) ? ", subprotocol " : "",
          vega_websocket_get_subprotocol(x.ws));
    if (cli_stdio_init(&x.out, STDOUT_FILENO) < 0) {
        vega_websocket_free(x.ws);
        return curl_fail(o, CE_WRITE_ERROR, "cannot write stdout");
    }
    vega_notify_init(&x.done);
    vega_task *rt = NULL, *pt = NULL;
    int code = CE_OK;
    if (vega_task_spawn(&rt, recv_task, &x) < 0) {
        code = curl_fail(o, CE_OUT_OF_MEMORY, "out of memory");
    } else {
        if (o->ws_ping_ms)
            (void)vega_task_spawn(&pt, ping_task, &x);
        int scode = send_stdin(&x);
        (void)vega_task_join(rt, NULL, VEGA_DEADLINE_NEVER);
        if (pt)
            (void)vega_task_join(pt, NULL, VEGA_DEADLINE_NEVER);
        code = scode ? scode : x.code;
    }
    cli_stdio_fini(&x.out);
    vega_notify_fini(&x.done);
    vega_websocket_free(x.ws);
    return code;
}
