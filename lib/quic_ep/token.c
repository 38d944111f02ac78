/* SPDX-License-Identifier: MIT */
/* Address validation tokens (RFC 9000 §8.1): Retry tokens, bound to the client's address and
 * port, the original Destination CID and the Retry's Source CID, good for seconds; NEW_TOKEN
 * tokens (§8.1.3), bound to the client's IP address only (a NAT may change its port), good for
 * token_lifetime_s. Both carry their issue time (wall clock, so they survive a restart and are
 * shared by the processes of one server with the same static key) and an HMAC-SHA256 tag. */
#include <string.h>

#include <netinet/in.h>

#include <vega/crypto.h>

#include "ep_int.h"

#define TAG_LEN     16
#define TYPE_RETRY  0x52 /* 'R' */
#define TYPE_NEW    0x4e /* 'N' */
#define HEAD_LEN    9    /* type + 8-byte time */
#define MAX_SKEW_MS 5000 /* a token "from the future" by more than this is refused */

/* The address bytes a token is bound to: the IP, and the port when with_port. */
static size_t addr_bytes(const vega_addr *a, bool with_port, uint8_t *out)
{
    if (a->ss.ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)&a->ss;
        memcpy(out, &s->sin_addr, 4);
        if (!with_port)
            return 4;
        memcpy(out + 4, &s->sin_port, 2);
        return 6;
    }
    if (a->ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&a->ss;
        memcpy(out, &s->sin6_addr, 16);
        if (!with_port)
            return 16;
        memcpy(out + 16, &s->sin6_port, 2);
        return 18;
    }
    return 0;
}

/* tag = HMAC-SHA256(token_key, body || address || extra)[0..16) */
static bool tag(const struct vega_quic_endpoint *ep, const uint8_t *body, size_t body_len,
                const vega_addr *peer, bool with_port, const uint8_t *extra, size_t extra_len,
                uint8_t *out)
{
    uint8_t in[HEAD_LEN + 1 + VEGA_QUIC_MAX_CID_LEN + 18 + 1 + VEGA_QUIC_MAX_CID_LEN];
    if (!vega__fits(body_len, 18 + 1 + extra_len, sizeof in))
        return false;
    size_t n = body_len;
    memcpy(in, body, body_len);
    n += addr_bytes(peer, with_port, in + n);
    in[n++] = (uint8_t)extra_len;
    if (extra_len)
        memcpy(in + n, extra, extra_len);
    n += extra_len;
    uint8_t full[64];
    if (vega_crypto_hmac_digest(VEGA_CRYPTO_SHA256, ep->token_key, sizeof ep->token_key, in, n,
                                full) < 0)
        return false;
    memcpy(out, full, TAG_LEN);
    return true;
}

static void put_time(uint8_t *p, uint64_t t)
{
    for (int i = 7; i >= 0; i--)
        *p++ = (uint8_t)(t >> (i * 8));
}

static uint64_t get_time(const uint8_t *p)
{
    uint64_t t = 0;
    for (int i = 0; i < 8; i++)
        t = (t << 8) | p[i];
    return t;
}

size_t vega__ep_retry_token(const struct vega_quic_endpoint *ep, const vega_addr *peer,
                            const uint8_t *odcid, size_t odcid_len, const uint8_t *rscid,
                            size_t rscid_len, uint8_t *out, size_t cap)
{
    size_t n = HEAD_LEN + 1 + odcid_len;
    if (odcid_len > VEGA_QUIC_MAX_CID_LEN || !vega__fits(n, TAG_LEN, cap))
        return 0;
    out[0] = TYPE_RETRY;
    put_time(out + 1, vega__ep_wall_ms());
    out[HEAD_LEN] = (uint8_t)odcid_len;
    memcpy(out + HEAD_LEN + 1, odcid, odcid_len);
    if (!tag(ep, out, n, peer, true, rscid, rscid_len, out + n))
        return 0;
    return n + TAG_LEN;
}

size_t vega__ep_new_token(const struct vega_quic_endpoint *ep, const vega_addr *peer, uint8_t *out,
                          size_t cap)
{
    if (cap < HEAD_LEN + TAG_LEN)
        return 0;
    out[0] = TYPE_NEW;
    put_time(out + 1, vega__ep_wall_ms());
    if (!tag(ep, out, HEAD_LEN, peer, false, NULL, 0, out + HEAD_LEN))
        return 0;
    return HEAD_LEN + TAG_LEN;
}

static bool fresh(uint64_t t, uint64_t now, uint64_t ttl_ms)
{
    if (t > now + MAX_SKEW_MS)
        return false;
    return now <= t || now - t <= ttl_ms;
}

int vega__ep_token_check(const struct vega_quic_endpoint *ep, const vega_addr *peer,
                         const uint8_t *tok, size_t tok_len, const uint8_t *dcid, size_t dcid_len,
                         uint8_t *odcid, size_t *odcid_len)
{
    uint8_t t[TAG_LEN];
    uint64_t now = vega__ep_wall_ms();
    if (tok_len >= HEAD_LEN + 1 + TAG_LEN && tok[0] == TYPE_RETRY) {
        size_t cl = tok[HEAD_LEN];
        /* RFC 9000 §8.1.2: a Retry token the server cannot validate: close with INVALID_TOKEN */
        if (cl > VEGA_QUIC_MAX_CID_LEN || tok_len != HEAD_LEN + 1 + cl + TAG_LEN)
            return -1;
        if (!tag(ep, tok, HEAD_LEN + 1 + cl, peer, true, dcid, dcid_len, t) ||
            !vega_crypto_ct_equal(t, tok + HEAD_LEN + 1 + cl, TAG_LEN) ||
            !fresh(get_time(tok + 1), now, EP_RETRY_TOKEN_TTL_MS))
            return -1;
        memcpy(odcid, tok + HEAD_LEN + 1, cl);
        *odcid_len = cl;
        return 1;
    }
    if (tok_len == HEAD_LEN + TAG_LEN && tok[0] == TYPE_NEW) {
        uint64_t ttl = (uint64_t)ep->o.token_lifetime_s * 1000u;
        if (tag(ep, tok, HEAD_LEN, peer, false, NULL, 0, t) &&
            vega_crypto_ct_equal(t, tok + HEAD_LEN, TAG_LEN) && fresh(get_time(tok + 1), now, ttl))
            return 2;
    }
    /* Anything else (an expired NEW_TOKEN token, another server's): the client simply has no
     * validated address (§8.1.3). */
    return 0;
}
