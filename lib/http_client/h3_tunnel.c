/* SPDX-License-Identifier: MIT */
/* A client's HTTP/3 request stream as a byte stream both ways (RFC 9220, the WebSocket's
 * transport): after a 2xx answer to an extended CONNECT, reads take the payload of the
 * stream's DATA frames as the application reads them (QUIC gives back stream credit only for
 * what was read, RFC 9000 §4.1: a reader that stops holds its stream's window, and the
 * connection's for no more than that), writes are DATA frames under flow control, the
 * stream's FIN is the end of the byte stream each way and RESET_STREAM or STOP_SENDING its
 * abort (H3_REQUEST_CANCELLED from us, RFC 9220 §3). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "client_int.h"

static vega_ssize t_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    vega_http_client_response *r = user;
    vega_ssize n = vega__hc_h3_read(r, buf, len, dl);
    return n == VEGA_ERR_QUIC_EP_RESET ? -ECONNRESET : n;
}

static vega_ssize t_write(void *user, const void *buf, size_t len, size_t *written,
                          vega_deadline dl)
{
    vega_http_client_response *r = user;
    *written = 0;
    if (r->h3_sent_fin)
        return -EPIPE;
    int rc = vega__hc_h3_send_data(r, buf, len, false, dl);
    if (rc < 0)
        return rc;
    *written = len;
    return (vega_ssize)len;
}

/* SHUT_WR: our FIN; the server's side goes on. */
static int t_shutdown(void *user, int how, vega_deadline dl)
{
    vega_http_client_response *r = user;
    if (how != SHUT_WR && how != SHUT_RDWR)
        return how == SHUT_RD ? 0 : -EINVAL;
    if (r->h3_sent_fin)
        return 0;
    return vega__hc_h3_send_data(r, NULL, 0, true, dl);
}

/* Our FIN, then the server's (or a reset) within dl, what still comes read and dropped; a
 * stream still open is cancelled (H3_REQUEST_CANCELLED both ways) by the response's free. */
static int t_close(void *user, vega_deadline dl)
{
    vega_http_client_response *r = user;
    int rc = t_shutdown(r, SHUT_WR, dl);
    uint8_t sink[4096];
    while (rc == 0 && !r->msg_done) {
        vega_ssize n = vega__hc_h3_read(r, sink, sizeof sink, dl);
        if (n <= 0)
            break;
    }
    vega_http_client_response_free(r);
    return 0;
}

static const vega_stream_ops tunnel_ops = {
    .name = "h3-tunnel",
    .read = t_read,
    .write = t_write,
    .shutdown = t_shutdown,
    .close = t_close,
};

int vega__hc_h3_tunnel_new(vega_http_client_response *r, vega_stream **out)
{
    int rc = vega__hc_tunnel_stream(r, &tunnel_ops, out);
    if (rc == 0)
        r->h3_tunnel = true; /* a reader and a writer may wait at once */
    return rc;
}
