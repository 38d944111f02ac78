/* SPDX-License-Identifier: MIT */
/* libFuzzer target for QUIC transport parameters (lib/quic/tp.c). Byte 0 bit 0 says whether
 * the server sent them; the rest is the extension body. A failure must be a
 * TRANSPORT_PARAMETER_ERROR; what decodes must re-encode and decode back identical, and the
 * encoding is never longer than the input (it is minimal), and the
 * decoded values must respect every RFC 9000 §18.2 limit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/quic_wire.h>

#include "fuzz_target.h"

static void check_limits(const vega_quic_tp *tp)
{
    if (tp->max_udp_payload_size < 1200 || tp->ack_delay_exponent > 20 ||
        tp->max_ack_delay >= (1u << 14) || tp->active_connection_id_limit < 2 ||
        tp->initial_max_streams_bidi > (1ull << 60) || tp->initial_max_streams_uni > (1ull << 60) ||
        tp->original_dcid_len > 20 || tp->initial_scid_len > 20 || tp->retry_scid_len > 20 ||
        !tp->has_initial_scid || tp->n_available_versions > VEGA_QUIC_TP_MAX_VERSIONS ||
        (tp->has_preferred_address &&
         (tp->preferred_address.cid_len < 1 || tp->preferred_address.cid_len > 20)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool from_server = data[0] & 1;
    vega_quic_tp tp, back;
    uint64_t err = 0;
    int rc = vega_quic_tp_decode(&tp, data + 1, size - 1, from_server, &err);
    if (rc < 0) {
        if (rc != VEGA_ERR_PROTO || err != VEGA_QUIC_TRANSPORT_PARAMETER_ERROR)
            abort();
        return 0;
    }
    if (rc != 0)
        abort();
    check_limits(&tp);
    if (!from_server && (tp.has_original_dcid || tp.has_retry_scid ||
                         tp.has_stateless_reset_token || tp.has_preferred_address))
        abort();
    uint8_t buf[2048];
    vega_ssize n = vega_quic_tp_encode(&tp, from_server, buf, sizeof buf);
    if (n <= 0 || (size_t)n > size - 1)
        abort();
    if (vega_quic_tp_decode(&back, buf, (size_t)n, from_server, NULL) != 0 ||
        memcmp(&tp, &back, sizeof tp) != 0)
        abort();
    return 0;
}
