/* SPDX-License-Identifier: MIT */
/* --ws-echo PATH: a WebSocket echo endpoint (RFC 6455) for testing clients: every text or
 * binary message goes back as it came, permessage-deflate (RFC 7692) when offered. */
#include <string.h>

#include <vega/websocket.h>

#include "serve.h"

int serve_ws_echo(vega_http_exchange *x)
{
    vega_deadline hs = vega_deadline_in_ms(10000);
    if (!vega_http_exchange_is_websocket(x)) {
        /* RFC 6455 §4.4: a version we do not speak gets 426 with the one we do. */
        static const vega_http_field f[] = {{{"Sec-WebSocket-Version", 21}, {"13", 2}},
                                            {{"Content-Type", 12}, {"text/plain", 10}}};
        static const char body[] = "a WebSocket endpoint: connect with ws://\n";
        return vega_http_respond(x, 426, f, 2, body, sizeof body - 1, hs);
    }
    vega_websocket_opts o;
    vega_websocket_opts_init(&o);
    o.deflate.enabled = true;
    vega_websocket *ws;
    int rc = vega_http_exchange_accept_websocket(x, &o, &ws, hs);
    if (rc < 0)
        return rc;
    for (;;) {
        vega_websocket_msg m;
        /* An idle client may stay as long as it likes; a stalled write gives up. */
        rc = vega_websocket_recv(ws, &m, VEGA_DEADLINE_NEVER);
        if (rc < 0)
            break;
        rc = vega_websocket_send(ws, m.type, m.data, m.len, vega_deadline_in_ms(30000));
        if (rc < 0)
            break;
    }
    if (cli_verbose)
        fprintf(stderr, "ws: closed (peer code %u, %s)\n", vega_websocket_get_close_code(ws),
                vega_strerror(rc));
    vega_websocket_free(ws);
    return 0;
}
