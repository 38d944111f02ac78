/* SPDX-License-Identifier: MIT */
/* A client's HTTP/2 stream as a byte stream both ways (RFC 8441 §5, the WebSocket's transport):
 * after a 2xx answer to an extended CONNECT, reads take the stream's DATA as the application
 * reads it (flow control gives back only what was read, RFC 9113 §6.9: a reader that stops
 * holds its stream's window, never the other streams'), writes hand DATA to the core a span at
 * a time, END_STREAM is the end of the byte stream each way and RST_STREAM its abort. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "client_int.h"

static vega_ssize t_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    vega_http_client_response *r = user;
    return vega__hc_h2_read(r, buf, len, dl);
}

/* Why our side cannot write (mu held): 0 when it may. */
static int tx_blocked(const struct hc_h2 *h, const vega_http_client_response *r)
{
    if (r->h2_tx_end)
        return -EPIPE;
    if (r->h2_closed)
        return r->h2_err && r->h2_err != VEGA_ERR_H2_GOING_AWAY ? r->h2_err : -ECONNRESET;
    if (h->dead)
        return h->err ? h->err : -ECONNRESET;
    return 0;
}

/* A span the core still holds when a write gives up (its deadline, a failure) must not outlive
 * the caller's buffer: the stream is reset (CANCEL), which releases it. The tunnel is then
 * over, as a TCP connection whose send timed out part way. */
static void drop_span(vega_http_client_response *r)
{
    struct hc_h2 *h = r->h2;
    bool kick = false;
    pthread_mutex_lock(&h->mu);
    if (r->h2_span && !r->h2_closed && !h->dead) {
        (void)vega_h2_submit_rst_stream(h->core, r->h2_id, VEGA_H2_CANCEL);
        kick = true;
    }
    r->h2_span = false;
    if (!r->h2_err)
        r->h2_err = -ECONNRESET;
    pthread_mutex_unlock(&h->mu);
    if (kick)
        vega_notify_one(&h->wake);
}

/* Gives p[0..len) to the core (fin: END_STREAM after it) and waits until it went out. */
static int span(vega_http_client_response *r, const void *p, size_t len, bool fin, vega_deadline dl)
{
    struct hc_h2 *h = r->h2;
    bool given = false;
    for (;;) {
        pthread_mutex_lock(&h->mu);
        int rc = given ? 0 : tx_blocked(h, r);
        if (rc == 0 && given && (r->h2_closed || h->dead) && r->h2_span)
            rc = tx_blocked(h, r); /* it ended before our bytes went */
        if (rc == 0 && !given) {
            vega_ssize w =
                vega_h2_stream_write(h->core, r->h2_id, p, len, fin ? VEGA_H2_FLAG_END_STREAM : 0);
            if (w < 0)
                rc = w == VEGA_ERR_H2_STREAM_CLOSED || w == VEGA_ERR_CLOSED ? -EPIPE : (int)w;
            else if ((size_t)w == len) {
                given = true;
                r->h2_span = len > 0;
                r->h2_tx_end = fin;
            }
        }
        bool done = given && !r->h2_span;
        pthread_mutex_unlock(&h->mu);
        if (given)
            vega_notify_one(&h->wake);
        if (rc < 0 && given) {
            drop_span(r);
            return rc;
        }
        if (rc < 0 || done)
            return rc;
        rc = vega_notify_wait(&r->h2_wwake, dl);
        if (rc < 0) {
            if (given)
                drop_span(r);
            return rc;
        }
    }
}

static vega_ssize t_write(void *user, const void *buf, size_t len, size_t *written,
                          vega_deadline dl)
{
    vega_http_client_response *r = user;
    int rc = span(r, buf, len, false, dl);
    *written = rc == 0 ? len : 0;
    return rc < 0 ? rc : (vega_ssize)len;
}

/* SHUT_WR: END_STREAM (an empty DATA frame); the server's side goes on. */
static int t_shutdown(void *user, int how, vega_deadline dl)
{
    vega_http_client_response *r = user;
    if (how != SHUT_WR && how != SHUT_RDWR)
        return how == SHUT_RD ? 0 : -EINVAL;
    pthread_mutex_lock(&r->h2->mu);
    bool ended = r->h2_tx_end;
    pthread_mutex_unlock(&r->h2->mu);
    return ended ? 0 : span(r, "", 0, true, dl);
}

/* Our END_STREAM, then the server's (or a reset) within dl; a stream still open is reset with
 * CANCEL by the response's free. */
static int t_close(void *user, vega_deadline dl)
{
    vega_http_client_response *r = user;
    struct hc_h2 *h = r->h2;
    int rc = t_shutdown(r, SHUT_WR, dl);
    for (; rc == 0;) {
        pthread_mutex_lock(&h->mu);
        bool over = r->h2_closed || h->dead;
        if (!over && r->h2_len) {
            /* bytes nobody reads any more: given back, so the server's END_STREAM can come */
            if (r->h2_id)
                (void)vega_h2_stream_consume(h->core, r->h2_id, r->h2_len);
            r->h2_off = r->h2_len = 0;
        }
        pthread_mutex_unlock(&h->mu);
        vega_notify_one(&h->wake);
        if (over)
            break;
        rc = vega_notify_wait(&r->h3_wake, dl);
    }
    vega_http_client_response_free(r);
    return 0;
}

static const vega_stream_ops tunnel_ops = {
    .name = "h2-tunnel",
    .read = t_read,
    .write = t_write,
    .shutdown = t_shutdown,
    .close = t_close,
};

/* The stream's user is the response itself: closing the stream frees it. */
int vega__hc_tunnel_stream(vega_http_client_response *r, const vega_stream_ops *ops,
                           vega_stream **out)
{
    int rc = vega_stream_new(out, ops, r);
    if (rc < 0)
        return rc;
    /* the handshake's deadline bounded the exchange; the tunnel's reads and writes carry
     * their own, and its bytes are the WebSocket's, not a body with a size limit */
    r->dl = VEGA_DEADLINE_NEVER;
    r->max_body = UINT64_MAX;
    return 0;
}

int vega__hc_h2_tunnel_new(vega_http_client_response *r, vega_stream **out)
{
    int rc = vega__hc_tunnel_stream(r, &tunnel_ops, out);
    return rc;
}
