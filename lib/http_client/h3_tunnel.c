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

struct hc_h3_tunnel {
    vega_http_client_response *r;
};

static vega_ssize t_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    struct hc_h3_tunnel *t = user;
    vega_ssize n = vega__hc_h3_read(t->r, buf, len, dl);
    return n == VEGA_ERR_QUIC_EP_RESET ? -ECONNRESET : n;
}

static vega_ssize t_write(void *user, const void *buf, size_t len, size_t *written,
                          vega_deadline dl)
{
    struct hc_h3_tunnel *t = user;
    *written = 0;
    if (t->r->h3_sent_fin)
        return -EPIPE;
    int rc = vega__hc_h3_send_data(t->r, buf, len, false, dl);
    if (rc < 0)
        return rc;
    *written = len;
    return (vega_ssize)len;
}

/* SHUT_WR: our FIN; the server's side goes on. */
static int t_shutdown(void *user, int how, vega_deadline dl)
{
    struct hc_h3_tunnel *t = user;
    if (how != SHUT_WR && how != SHUT_RDWR)
        return how == SHUT_RD ? 0 : -EINVAL;
    if (t->r->h3_sent_fin)
        return 0;
    return vega__hc_h3_send_data(t->r, NULL, 0, true, dl);
}

/* Our FIN, then the server's (or a reset) within dl, what still comes read and dropped; a
 * stream still open is cancelled (H3_REQUEST_CANCELLED both ways) by the response's free. */
static int t_close(void *user, vega_deadline dl)
{
    struct hc_h3_tunnel *t = user;
    vega_http_client_response *r = t->r;
    int rc = t_shutdown(t, SHUT_WR, dl);
    uint8_t sink[4096];
    while (rc == 0 && !r->msg_done) {
        vega_ssize n = vega__hc_h3_read(r, sink, sizeof sink, dl);
        if (n <= 0)
            break;
    }
    const vega_mem *m = r->c->o.mem;
    vega_http_client_response_free(r);
    vega__mem_free(m, t);
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
    struct hc_h3_tunnel *t = vega__mem_calloc(r->c->o.mem, 1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->r = r;
    int rc = vega_stream_new(out, &tunnel_ops, t);
    if (rc < 0) {
        vega__mem_free(r->c->o.mem, t);
        return rc;
    }
    /* the handshake's deadline bounded the exchange; the tunnel's reads and writes carry
     * their own, and its bytes are the WebSocket's, not a body with a size limit */
    r->dl = VEGA_DEADLINE_NEVER;
    r->max_body = UINT64_MAX;
    r->h3_tunnel = true; /* a reader and a writer may wait at once */
    return 0;
}
