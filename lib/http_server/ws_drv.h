/* SPDX-License-Identifier: MIT */
/* Internals of the WebSocket driver (ws_session.c) for the handshake code (ws_accept.c). */
#ifndef VEGA_WS_DRV_H
#define VEGA_WS_DRV_H

#include <vega/websocket.h>

/* Records the selected subprotocol (truncated to 63 bytes; the handshake refuses longer). */
void vega__websocket_set_subprotocol(vega_websocket *ws, const char *p, size_t len);

#endif
