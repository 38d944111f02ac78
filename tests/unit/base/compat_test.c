/* SPDX-License-Identifier: MIT */
/* The names replaced by the API rules (docs/ARCHITECTURE.md, "API migration") still compile
 * and still mean what they meant, until 1.0; and every layout of every versioned options
 * struct, in one table (API rules: ABI). */
#include <string.h>

#include <vega/compress.h>
#include <vega/dns.h>
#include <vega/err.h>
#include <vega/h2.h>
#include <vega/h3.h>
#include <vega/hpack.h>
#include <vega/http.h>
#include <vega/http_client.h>
#include <vega/http_server.h>
#include <vega/process.h>
#include <vega/proxy.h>
#include <vega/qpack.h>
#include <vega/quic.h>
#include <vega/quic_ep.h>
#include <vega/rt.h>
#include <vega/shard.h>
#include <vega/test.h>
#include <vega/tls.h>
#include <vega/websocket.h>
#include <vega/ws.h>

#include "abi_layout.h"
#include "abi_old.h"
#include "vtest.h"

VTEST(old_error_names_are_the_new_values)
{
    VCHECK_EQ(VEGA_ERR_INVALID_ARG, -EINVAL);
    VCHECK_EQ(VEGA_TLS_ERR_HANDSHAKE, VEGA_ERR_TLS_HANDSHAKE);
    VCHECK_EQ(VEGA_HTTP_ERR_URL, VEGA_ERR_HTTP_URL);
    VCHECK(strcmp(vega_err_name(-EINVAL), "EINVAL") == 0);
}

VTEST(old_option_names_are_the_new_types)
{
    vega_rt_options r;
    vega_rt_options_init(&r);
    vega_rt_opts r2;
    vega_rt_opts_init(&r2);
    VCHECK(memcmp(&r, &r2, sizeof r) == 0);

    vega_dns_options d;
    vega_dns_options_init(&d);
    vega_tcp_connect_options t;
    vega_tcp_connect_options_init(&t);

    vega_quic_config q;
    vega_quic_config_init(&q);
    vega_quic_opts q2;
    vega_quic_opts_init(&q2);
    VCHECK_EQ(q.idle_timeout_ms, q2.idle_timeout_ms);
    vega_quic_tls_config *tls = &q.tls;
    (void)tls;

    vega_spawn_options s = {.name = "old"};
    vega_spawn_opts s2;
    vega_spawn_opts_init(&s2);
    VCHECK(s2.name == NULL && s2.deadline == VEGA_DEADLINE_NEVER);
    (void)s;
}

/* Versioned options (docs/ARCHITECTURE.md, API rules: ABI): the macros pass the layout the
 * caller was built with; a layout this library does not know is refused, never misread. */
VTEST(options_of_an_unknown_layout_are_refused)
{
    VCHECK_EQ(VEGA_RT_OPTS_VERSION, 1);
    /* 2 appended the key log, 3 qlog, 4 the pinned keys, 5 the ID prefix
     * (tests/unit/quic/abi_test.c) */
    VCHECK_EQ(VEGA_QUIC_OPTS_VERSION, 5);
    vega_rt *rt = NULL;
    VCHECK_EQ(vega_rt_new_versioned(&rt, NULL, VEGA_RT_OPTS_VERSION + 1), -EINVAL);
    VCHECK(rt == NULL);
    vega_compressor *z = NULL;
    VCHECK_EQ(vega_compressor_new_versioned(&z, VEGA_COMPRESS_GZIP, 1, NULL, 0), -EINVAL);
    vega_dns_resolver *r = NULL;
    VCHECK_EQ(vega_dns_resolver_new_versioned(&r, NULL, 7), -EINVAL);
    /* The current layout through the macro works as before. */
    VCHECK_EQ(vega_compressor_new(&z, VEGA_COMPRESS_GZIP, 1, NULL), 0);
    vega_compressor_free(z);
}

/* ---- every layout of every versioned options struct ------------------------------------------ */

ABI_INIT_FN(vega_dns_opts)
ABI_INIT_FN(vega_tcp_connect_opts)
ABI_INIT_FN(vega_h2_opts)
ABI_INIT_FN(vega_h3_opts)
ABI_INIT_FN(vega_hpack_decoder_opts)
ABI_INIT_FN(vega_hpack_encoder_opts)
ABI_INIT_FN(vega_http_client_opts)
ABI_INIT_FN(vega_http_client_request)
ABI_INIT_FN(vega_http_server_opts)
ABI_INIT_FN(vega_http_server_h2_opts)
ABI_INIT_FN(vega_http_server_h3_opts)
ABI_INIT_FN(vega_process_opts)
ABI_INIT_FN(vega_proxy_handshake_opts)
ABI_INIT_FN(vega_proxy_opts)
ABI_INIT_FN(vega_qpack_decoder_opts)
ABI_INIT_FN(vega_qpack_encoder_opts)
ABI_INIT_FN(vega_quic_opts)
ABI_INIT_FN(vega_quic_endpoint_opts)
ABI_INIT_FN(vega_rt_opts)
ABI_INIT_FN(vega_spawn_opts)
ABI_INIT_FN(vega_shard_opts)
ABI_INIT_FN(vega_fault_opts)
ABI_INIT_FN(vega_tls_selfsigned_opts)
ABI_INIT_FN(vega_tls_opts)
ABI_INIT_FN(vega_websocket_opts)
ABI_INIT_FN(vega_websocket_connect_opts)
ABI_INIT_FN(vega_ws_conn_opts)

/* A struct that grows gets one line here (its old layout's size: where its first new field
 * starts, or sizeof of an abi_old.h struct where fields moved), and its VERSION macro goes up. */
static const struct abi_layout layouts[] = {
    ABI_NOW(vega_dns_opts, VEGA_DNS_OPTS_VERSION),
    ABI_ROW(vega_tcp_connect_opts, VEGA_TCP_CONNECT_OPTS_VERSION, 1,
            offsetof(vega_tcp_connect_opts, local)),
    ABI_NOW(vega_tcp_connect_opts, VEGA_TCP_CONNECT_OPTS_VERSION),
    ABI_NOW(vega_h2_opts, VEGA_H2_OPTS_VERSION),
    ABI_NOW(vega_h3_opts, VEGA_H3_OPTS_VERSION),
    ABI_NOW(vega_hpack_decoder_opts, VEGA_HPACK_DECODER_OPTS_VERSION),
    ABI_NOW(vega_hpack_encoder_opts, VEGA_HPACK_ENCODER_OPTS_VERSION),
    ABI_ROW(vega_http_client_opts, VEGA_HTTP_CLIENT_OPTS_VERSION, 1,
            sizeof(struct http_client_opts_v1)),
    ABI_ROW(vega_http_client_opts, VEGA_HTTP_CLIENT_OPTS_VERSION, 2,
            offsetof(vega_http_client_opts, proxy)),
    ABI_ROW(vega_http_client_opts, VEGA_HTTP_CLIENT_OPTS_VERSION, 3,
            offsetof(vega_http_client_opts, quic_qlog_dir)),
    ABI_ROW(vega_http_client_opts, VEGA_HTTP_CLIENT_OPTS_VERSION, 4,
            offsetof(vega_http_client_opts, quic_key_update)),
    ABI_ROW(vega_http_client_opts, VEGA_HTTP_CLIENT_OPTS_VERSION, 5,
            offsetof(vega_http_client_opts, ip_family)),
    ABI_ROW(vega_http_client_opts, VEGA_HTTP_CLIENT_OPTS_VERSION, 6,
            offsetof(vega_http_client_opts, quic_migrate)),
    ABI_ROW(vega_http_client_opts, VEGA_HTTP_CLIENT_OPTS_VERSION, 7,
            offsetof(vega_http_client_opts, dns_servers)),
    ABI_ROW(vega_http_client_opts, VEGA_HTTP_CLIENT_OPTS_VERSION, 8,
            offsetof(vega_http_client_opts, local)),
    ABI_ROW(vega_http_client_opts, VEGA_HTTP_CLIENT_OPTS_VERSION, 9,
            offsetof(vega_http_client_opts, h2_frame)),
    ABI_NOW(vega_http_client_opts, VEGA_HTTP_CLIENT_OPTS_VERSION),
    ABI_ROW(vega_http_client_request, VEGA_HTTP_CLIENT_REQUEST_VERSION, 1,
            sizeof(struct http_client_request_v1)),
    ABI_NOW(vega_http_client_request, VEGA_HTTP_CLIENT_REQUEST_VERSION),
    ABI_NOW(vega_http_server_opts, VEGA_HTTP_SERVER_OPTS_VERSION),
    ABI_ROW(vega_http_server_h2_opts, VEGA_HTTP_SERVER_H2_OPTS_VERSION, 1,
            offsetof(vega_http_server_h2_opts, websocket)),
    ABI_NOW(vega_http_server_h2_opts, VEGA_HTTP_SERVER_H2_OPTS_VERSION),
    ABI_ROW(vega_http_server_h3_opts, VEGA_HTTP_SERVER_H3_OPTS_VERSION, 1,
            offsetof(vega_http_server_h3_opts, qlog_dir)),
    ABI_ROW(vega_http_server_h3_opts, VEGA_HTTP_SERVER_H3_OPTS_VERSION, 2,
            offsetof(vega_http_server_h3_opts, conn_send_budget)),
    ABI_ROW(vega_http_server_h3_opts, VEGA_HTTP_SERVER_H3_OPTS_VERSION, 3,
            offsetof(vega_http_server_h3_opts, fds)),
    ABI_ROW(vega_http_server_h3_opts, VEGA_HTTP_SERVER_H3_OPTS_VERSION, 4,
            offsetof(vega_http_server_h3_opts, websocket)),
    ABI_NOW(vega_http_server_h3_opts, VEGA_HTTP_SERVER_H3_OPTS_VERSION),
    ABI_NOW(vega_process_opts, VEGA_PROCESS_OPTS_VERSION),
    ABI_NOW(vega_proxy_handshake_opts, VEGA_PROXY_HANDSHAKE_OPTS_VERSION),
    ABI_NOW(vega_proxy_opts, VEGA_PROXY_OPTS_VERSION),
    ABI_NOW(vega_qpack_decoder_opts, VEGA_QPACK_DECODER_OPTS_VERSION),
    ABI_NOW(vega_qpack_encoder_opts, VEGA_QPACK_ENCODER_OPTS_VERSION),
    ABI_ROW(vega_quic_opts, VEGA_QUIC_OPTS_VERSION, 1, QUIC_OPTS_V1_SIZE),
    ABI_ROW(vega_quic_opts, VEGA_QUIC_OPTS_VERSION, 2, QUIC_OPTS_V2_SIZE),
    ABI_ROW(vega_quic_opts, VEGA_QUIC_OPTS_VERSION, 3, QUIC_OPTS_V3_SIZE),
    ABI_ROW(vega_quic_opts, VEGA_QUIC_OPTS_VERSION, 4, QUIC_OPTS_V4_SIZE),
    ABI_NOW(vega_quic_opts, VEGA_QUIC_OPTS_VERSION),
    ABI_ROW(vega_quic_endpoint_opts, VEGA_QUIC_ENDPOINT_OPTS_VERSION, 1, sizeof(struct ep_opts_v1)),
    ABI_ROW(vega_quic_endpoint_opts, VEGA_QUIC_ENDPOINT_OPTS_VERSION, 2, sizeof(struct ep_opts_v2)),
    ABI_ROW(vega_quic_endpoint_opts, VEGA_QUIC_ENDPOINT_OPTS_VERSION, 3, sizeof(struct ep_opts_v3)),
    ABI_ROW(vega_quic_endpoint_opts, VEGA_QUIC_ENDPOINT_OPTS_VERSION, 4, sizeof(struct ep_opts_v4)),
    ABI_NOW(vega_quic_endpoint_opts, VEGA_QUIC_ENDPOINT_OPTS_VERSION),
    ABI_NOW(vega_rt_opts, VEGA_RT_OPTS_VERSION),
    ABI_NOW(vega_spawn_opts, VEGA_SPAWN_OPTS_VERSION),
    ABI_ROW(vega_shard_opts, VEGA_SHARD_OPTS_VERSION, 1, offsetof(vega_shard_opts, exec_argv)),
    ABI_ROW(vega_shard_opts, VEGA_SHARD_OPTS_VERSION, 2, offsetof(vega_shard_opts, on_tick)),
    ABI_ROW(vega_shard_opts, VEGA_SHARD_OPTS_VERSION, 3, offsetof(vega_shard_opts, shared_size)),
    ABI_NOW(vega_shard_opts, VEGA_SHARD_OPTS_VERSION),
    ABI_NOW(vega_fault_opts, VEGA_FAULT_OPTS_VERSION),
    ABI_NOW(vega_tls_selfsigned_opts, VEGA_TLS_SELFSIGNED_OPTS_VERSION),
    ABI_NOW(vega_tls_opts, VEGA_TLS_OPTS_VERSION),
    ABI_NOW(vega_websocket_opts, VEGA_WEBSOCKET_OPTS_VERSION),
    ABI_ROW(vega_websocket_connect_opts, VEGA_WEBSOCKET_CONNECT_OPTS_VERSION, 1,
            offsetof(vega_websocket_connect_opts, version)),
    ABI_NOW(vega_websocket_connect_opts, VEGA_WEBSOCKET_CONNECT_OPTS_VERSION),
    ABI_ROW(vega_ws_conn_opts, VEGA_WS_CONN_OPTS_VERSION, 1,
            offsetof(vega_ws_conn_opts, owner_answers_close)),
    ABI_NOW(vega_ws_conn_opts, VEGA_WS_CONN_OPTS_VERSION),
};

/* Each layout's init writes within that layout only; the rows follow the VERSION macros. */
VTEST(option_layouts)
{
    abi_check_layouts(layouts, sizeof layouts / sizeof layouts[0]);
}

/* The old layouts' shapes where fields kept their places: a prefix of today's struct. */
VTEST(old_layouts_are_prefixes)
{
    VCHECK_EQ(sizeof(struct quic_opts_v1), QUIC_OPTS_V1_SIZE);
    VCHECK_EQ(offsetof(struct quic_opts_v1, reset_key), offsetof(vega_quic_opts, reset_key));
    VCHECK_EQ(offsetof(struct quic_opts_v1, cc), offsetof(vega_quic_opts, cc));
    VCHECK_EQ(sizeof(struct http_client_opts_v1), offsetof(vega_http_client_opts, quic_ca));
    VCHECK_EQ(offsetof(struct http_client_opts_v1, mem), offsetof(vega_http_client_opts, mem));
    VCHECK_EQ(sizeof(struct http_client_request_v1),
              offsetof(vega_http_client_request, h3_fallback));
    VCHECK_EQ(offsetof(struct http_client_request_v1, body_offset),
              offsetof(vega_http_client_request, body_offset));
}
