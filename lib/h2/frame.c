/* SPDX-License-Identifier: MIT */
/* HTTP/2 frame headers (RFC 9113 §4.1) and the names of the error codes (§7). */
#include "h2_int.h"

void vega__h2_frame_parse(const uint8_t *in, struct h2_frame *f)
{
    f->len = (uint32_t)in[0] << 16 | (uint32_t)in[1] << 8 | in[2];
    f->type = in[3];
    f->flags = in[4];
    /* §4.1: "The semantics of this bit are undefined, and the bit MUST remain unset (0x0) when
     * sending and MUST be ignored when receiving." */
    f->sid = (int32_t)(h2_get32(in + 5) & 0x7fffffffu);
}

void vega__h2_frame_put(uint8_t *out, uint32_t len, uint8_t type, uint8_t flags, int32_t sid)
{
    out[0] = (uint8_t)(len >> 16);
    out[1] = (uint8_t)(len >> 8);
    out[2] = (uint8_t)len;
    out[3] = type;
    out[4] = flags;
    h2_put32(out + 5, (uint32_t)sid & 0x7fffffffu);
}

const char *vega_h2_error_code_name(uint32_t code)
{
    static const char *const names[] = {
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    };
    return code < VEGA__ARRAY_LEN(names) ? names[code] : "UNKNOWN";
}
