/* SPDX-License-Identifier: MIT */
/* Variable-length integers (RFC 9000 §16), packet number encoding and recovery (§17.1,
 * Appendix A.2, A.3), versions and transport error names (§20.1). */
#include "quic_int.h"

bool vega_quic_version_is_supported(uint32_t version)
{
    return version == VEGA_QUIC_V1 || version == VEGA_QUIC_V2;
}

const char *vega_quic_transport_error_name(uint64_t code)
{
    static const char *const names[] = {
        "NO_ERROR",
        "INTERNAL_ERROR",
        "CONNECTION_REFUSED",
        "FLOW_CONTROL_ERROR",
        "STREAM_LIMIT_ERROR",
        "STREAM_STATE_ERROR",
        "FINAL_SIZE_ERROR",
        "FRAME_ENCODING_ERROR",
        "TRANSPORT_PARAMETER_ERROR",
        "CONNECTION_ID_LIMIT_ERROR",
        "PROTOCOL_VIOLATION",
        "INVALID_TOKEN",
        "APPLICATION_ERROR",
        "CRYPTO_BUFFER_EXCEEDED",
        "KEY_UPDATE_ERROR",
        "AEAD_LIMIT_REACHED",
        "NO_VIABLE_PATH",
        "VERSION_NEGOTIATION_ERROR",
    };
    if (code < sizeof(names) / sizeof(names[0]))
        return names[code];
    if (code >= 0x100 && code <= 0x1ff)
        return "CRYPTO_ERROR";
    return "unknown";
}

size_t vega_quic_varint_len(uint64_t v)
{
    if (v < (1u << 6))
        return 1;
    if (v < (1u << 14))
        return 2;
    if (v < (1ull << 30))
        return 4;
    if (v <= VEGA_QUIC_MAX_VARINT)
        return 8;
    return 0;
}

vega_ssize vega_quic_varint_read(const uint8_t *in, size_t len, uint64_t *v)
{
    if (len == 0)
        return VEGA_ERR_PROTO;
    size_t n = (size_t)1 << (in[0] >> 6);
    if (len < n)
        return VEGA_ERR_PROTO;
    uint64_t x = in[0] & 0x3f;
    for (size_t i = 1; i < n; i++)
        x = x << 8 | in[i];
    *v = x;
    return (vega_ssize)n;
}

vega_ssize vega_quic_varint_write_n(uint8_t *out, size_t cap, uint64_t v, size_t n)
{
    static const uint8_t prefix[9] = {0, 0x00, 0x40, 0, 0x80, 0, 0, 0, 0xc0};
    if ((n != 1 && n != 2 && n != 4 && n != 8) || vega_quic_varint_len(v) == 0 ||
        vega_quic_varint_len(v) > n)
        return -EINVAL;
    if (cap < n)
        return VEGA_ERR_NOBUF;
    for (size_t i = n; i-- > 0; v >>= 8)
        out[i] = (uint8_t)v;
    out[0] |= prefix[n];
    return (vega_ssize)n;
}

vega_ssize vega_quic_varint_write(uint8_t *out, size_t cap, uint64_t v)
{
    size_t n = vega_quic_varint_len(v);
    if (n == 0)
        return -EINVAL;
    return vega_quic_varint_write_n(out, cap, v, n);
}

size_t vega_quic_pn_len(uint64_t pn, int64_t largest_acked)
{
    if (pn > VEGA_QUIC_MAX_PN || (largest_acked >= 0 && pn <= (uint64_t)largest_acked))
        return 0;
    /* A.2: min_bits = log2(unacked) + 1, so 2^(8n) spans at least twice the unacknowledged range
     * and the receiver's window (centred on its expected number) still holds pn. */
    uint64_t unacked = largest_acked < 0 ? pn + 1 : pn - (uint64_t)largest_acked;
    for (size_t n = 1; n <= 4; n++)
        if (unacked <= (1ull << (8 * n - 1)))
            return n;
    return 0;
}

uint64_t vega_quic_pn_decode(uint64_t truncated, size_t pn_len, int64_t largest)
{
    if (pn_len < 1 || pn_len > 4)
        return truncated;
    uint64_t expected = largest < 0 ? 0 : (uint64_t)largest + 1;
    uint64_t win = 1ull << (8 * pn_len), hwin = win / 2, mask = win - 1;
    uint64_t candidate = (expected & ~mask) | (truncated & mask);
    /* A.3, with the comparisons arranged so nothing underflows or passes 2^62. */
    if (candidate + hwin <= expected && candidate < (1ull << 62) - win)
        return candidate + win;
    if (candidate > expected + hwin && candidate >= win)
        return candidate - win;
    return candidate;
}
