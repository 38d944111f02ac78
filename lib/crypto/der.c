/* SPDX-License-Identifier: MIT */
/* DER framing (ITU-T X.690 §8.1.2-8.1.3): the length of one TLV, to split certificates that are
 * stored back to back. The contents are left to libcrypto's parser. */
#include "crypto_int.h"

vega_ssize vega__crypto_der_tlv_len(const uint8_t *in, size_t len)
{
    size_t i = 0;
    if (len < 2)
        return VEGA_ERR_PROTO;
    /* Identifier octets: a high tag number form (low 5 bits all ones) continues in base-128
     * digits; certificates never use it, but it is framed correctly all the same. */
    if ((in[i++] & 0x1f) == 0x1f) {
        for (int n = 0;; n++) {
            if (i >= len || n == 4)
                return VEGA_ERR_PROTO;
            if (!(in[i++] & 0x80))
                break;
        }
    }
    if (i >= len)
        return VEGA_ERR_PROTO;
    uint8_t first = in[i++];
    uint64_t body;
    if (!(first & 0x80)) {
        body = first; /* short form */
    } else {
        unsigned nbytes = first & 0x7f;
        /* 0x80 is the indefinite form (BER only); more than 4 length bytes is more than a
         * certificate will ever need. */
        if (nbytes == 0 || nbytes > 4 || len - i < nbytes)
            return VEGA_ERR_PROTO;
        body = 0;
        for (unsigned j = 0; j < nbytes; j++)
            body = (body << 8) | in[i++];
    }
    if (body > len - i)
        return VEGA_ERR_PROTO;
    return (vega_ssize)(i + body);
}
