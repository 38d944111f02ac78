/* SPDX-License-Identifier: MIT */
/* Helpers the WebSocket client tests share over every HTTP version (ws_test.c: HTTP/1.1 and
 * HTTP/2, ws_h3_test.c: HTTP/3): one message echoed, our close answered, and the request head
 * the client sent (its trace hook). */
#ifndef VEGA_WS_TEST_UTIL_H
#define VEGA_WS_TEST_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <vega/websocket.h>

#include "vtest.h"

/* Sends one message of type t and checks the echo: the same type and bytes. */
static inline void echo_one(vega_websocket *ws, vega_ws_msg_type t, const void *p, size_t n)
{
    VCHECK_EQ(vega_websocket_send(ws, t, p, n, vega_deadline_in_ms(10000)), 0);
    vega_websocket_msg m;
    VCHECK_EQ(vega_websocket_recv(ws, &m, vega_deadline_in_ms(10000)), 0);
    VCHECK_EQ(m.type, t);
    VCHECK_EQ(m.len, n);
    VCHECK(n == 0 || memcmp(m.data, p, n) == 0);
}

/* Our close (1000): the server answers it, recv says closed with its code, and a second close
 * has nothing left to do. */
static inline void close_normally(vega_websocket *ws)
{
    VCHECK_EQ(vega_websocket_close(ws, 1000, NULL, 0, vega_deadline_in_ms(5000)), 0);
    vega_websocket_msg m;
    VCHECK_EQ(vega_websocket_recv(ws, &m, vega_deadline_in_ms(5000)), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_websocket_get_close_code(ws), 1000);
    VCHECK_EQ(vega_websocket_close(ws, 1000, NULL, 0, vega_deadline_in_ms(5000)), VEGA_ERR_CLOSED);
}

/* The last request head the client sent: set as vega_websocket_connect_opts.trace. */
static char last_head[4096];

static inline void trace_req(void *user, bool is_request, const void *head, size_t len)
{
    (void)user;
    if (is_request)
        snprintf(last_head, sizeof last_head, "%.*s", (int)len, (const char *)head);
}

#endif
