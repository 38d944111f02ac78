/* SPDX-License-Identifier: MIT */
/* Umbrella header: everything libvega installs. */
#ifndef VEGA_H
#define VEGA_H

#include <vega/base64.h>
#include <vega/codec.h>
#include <vega/compress.h>
#include <vega/crypto.h>
#include <vega/dns.h>
#include <vega/err.h>
#include <vega/fs.h>
#include <vega/h2.h>
#include <vega/h3.h>
#include <vega/hpack.h>
#include <vega/http.h>
#include <vega/http1.h>
#include <vega/http_client.h>
#include <vega/http_server.h>
#include <vega/io.h>
#include <vega/mem.h>
#include <vega/process.h>
#include <vega/qpack.h>
#include <vega/quic.h>
#include <vega/quic_wire.h>
#include <vega/rt.h>
#include <vega/shard.h>
#include <vega/stream.h>
#include <vega/sync.h>
#include <vega/time.h>
#include <vega/tls.h>
#include <vega/version.h>
#include <vega/websocket.h>
#include <vega/ws.h>

#endif
