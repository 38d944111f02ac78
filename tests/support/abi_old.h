/* SPDX-License-Identifier: MIT */
/* Option structs as older layouts had them: what a program built against those headers passes
 * (docs/ARCHITECTURE.md, API rules: ABI). Shared by the layout table (tests/unit/base/
 * compat_test.c) and the tests that run connections with them. */
#ifndef VTEST_ABI_OLD_H
#define VTEST_ABI_OLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/http_client.h>
#include <vega/quic.h>
#include <vega/quic_ep.h>

/* vega_quic_opts layout 1 as 0.1 shipped it (layout 2 appended the key log hook). */
struct quic_opts_v1 {
    uint32_t version;
    vega_quic_tls_opts tls;
    uint64_t wall_ms;
    uint64_t idle_timeout_ms;
    uint64_t max_data;
    uint64_t max_data_max;
    uint64_t max_stream_data;
    uint64_t max_stream_data_max;
    uint64_t max_streams_bidi;
    uint64_t max_streams_uni;
    uint64_t stream_send_buffer;
    uint64_t max_datagram_frame_size;
    size_t max_datagram_queue;
    uint64_t ack_delay_exponent;
    uint64_t max_ack_delay_ms;
    uint64_t active_connection_id_limit;
    size_t scid_len;
    size_t pmtu_max;
    bool disable_active_migration;
    vega_quic_cc cc;
    uint64_t initial_rtt_ns;
    const uint8_t *token;
    size_t token_len;
    int (*rand)(void *ud, void *buf, size_t len);
    void *rand_ud;
    const vega_quic_mem *mem;
    const uint8_t *reset_key;
};

/* Where each older vega_quic_opts layout ends: the first field it lacks. */
#define QUIC_OPTS_V1_SIZE offsetof(vega_quic_opts, keylog)
#define QUIC_OPTS_V2_SIZE offsetof(vega_quic_opts, qlog)
#define QUIC_OPTS_V3_SIZE offsetof(vega_quic_opts, pinned_keys)
#define QUIC_OPTS_V4_SIZE offsetof(vega_quic_opts, scid_prefix)

/* vega_quic_endpoint_opts layouts 1..4: a vega_quic_opts template of layout 1..4 (each moved
 * every field after it), the same fields, and from layout 3 the qlog fields. */
#define EP_OPTS_V1_FIELDS                                                                          \
    vega_quic_ep_callbacks cb;                                                                     \
    void *user;                                                                                    \
    unsigned sockets;                                                                              \
    size_t max_conns;                                                                              \
    size_t max_handshakes;                                                                         \
    vega_quic_retry_mode retry;                                                                    \
    size_t retry_threshold;                                                                        \
    uint32_t token_lifetime_s;                                                                     \
    bool no_new_tokens;                                                                            \
    const uint8_t *static_key;                                                                     \
    size_t max_resets_per_s;                                                                       \
    const vega_mem *mem;
struct ep_opts_v1 {
    _Alignas(vega_quic_opts) unsigned char quic[QUIC_OPTS_V1_SIZE];
    EP_OPTS_V1_FIELDS
};
struct ep_opts_v2 {
    _Alignas(vega_quic_opts) unsigned char quic[QUIC_OPTS_V2_SIZE];
    EP_OPTS_V1_FIELDS
};
struct ep_opts_v3 {
    _Alignas(vega_quic_opts) unsigned char quic[QUIC_OPTS_V3_SIZE];
    EP_OPTS_V1_FIELDS
    const char *qlog_dir;
    uint64_t qlog_max_bytes;
};
struct ep_opts_v4 {
    _Alignas(vega_quic_opts) unsigned char quic[QUIC_OPTS_V4_SIZE];
    EP_OPTS_V1_FIELDS
    const char *qlog_dir;
    uint64_t qlog_max_bytes;
};

/* vega_http_client_opts and vega_http_client_request layout 1 as 0.1 shipped them. */
struct http_client_opts_v1 {
    vega_tls_config *tls;
    vega_http1_limits limits;
    size_t max_idle_per_origin;
    uint64_t idle_timeout_ns;
    uint64_t connect_timeout_ns;
    uint64_t max_body;
    const char *user_agent;
    vega_http_connect_fn connect;
    void *connect_user;
    const vega_mem *mem;
};

struct http_client_request_v1 {
    const char *method;
    const char *url;
    const vega_http_field *fields;
    size_t nfields;
    const void *body;
    size_t body_len;
    vega_http_body_fn body_fn;
    void *body_user;
    uint64_t body_length;
    bool decompress;
    bool expect_continue;
    bool fresh_connection;
    int version;
    vega_deadline deadline;
    vega_http_trace_fn trace;
    void *trace_user;
    bool body_file;
    int body_fd;
    uint64_t body_offset;
};

#endif
