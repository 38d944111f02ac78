/* SPDX-License-Identifier: MIT */
/* The opening handshake's helpers (RFC 6455 §4): Sec-WebSocket-Key and -Accept (§4.1, §4.2.2),
 * token lists of Connection/Upgrade/Sec-WebSocket-Protocol, subprotocol selection. */
#include <string.h>

#include <vega/crypto.h>

#include "ws_int.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t vega__ws_base64(const uint8_t *in, size_t len, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
        out[o++] = b64[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}

void vega_ws_handshake_key(const uint8_t nonce[16], char out[VEGA_WS_KEY_LEN + 1])
{
    vega__ws_base64(nonce, 16, out);
}

/* §4.2.1: the key "when decoded, is 16 bytes in length": 22 base64 characters and "==", the
 * last character's unused bits zero. */
static bool key_ok(const char *k, size_t len)
{
    if (len != VEGA_WS_KEY_LEN || k[22] != '=' || k[23] != '=')
        return false;
    for (size_t i = 0; i < 22; i++) {
        const char *p = k[i] ? strchr(b64, k[i]) : NULL;
        if (!p)
            return false;
        if (i == 21 && ((p - b64) & 15) != 0)
            return false;
    }
    return true;
}

int vega_ws_handshake_accept(const char *key, size_t key_len, char out[VEGA_WS_ACCEPT_LEN + 1])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    if (!key || !key_ok(key, key_len))
        return -EINVAL;
    char buf[VEGA_WS_KEY_LEN + sizeof guid];
    memcpy(buf, key, VEGA_WS_KEY_LEN);
    memcpy(buf + VEGA_WS_KEY_LEN, guid, sizeof guid - 1);
    uint8_t d[20];
    int rc = vega_crypto_hash_digest(VEGA_CRYPTO_SHA1, buf, VEGA_WS_KEY_LEN + sizeof guid - 1, d);
    if (rc < 0)
        return rc;
    vega__ws_base64(d, 20, out);
    return 0;
}

static bool is_ows(char ch)
{
    return ch == ' ' || ch == '\t';
}

static char lower(char ch)
{
    return ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
}

static bool eq_nocase(const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++)
        if (lower(a[i]) != lower(b[i]))
            return false;
    return true;
}

/* Calls fn on each trimmed, non-empty element of a comma-separated list until it says stop. */
static bool each_element(const char *v, size_t len, bool (*fn)(const char *, size_t, void *),
                         void *arg)
{
    size_t i = 0;
    while (i <= len) {
        size_t s = i;
        while (i < len && v[i] != ',')
            i++;
        size_t e = i;
        while (s < e && is_ows(v[s]))
            s++;
        while (e > s && is_ows(v[e - 1]))
            e--;
        if (e > s && fn(v + s, e - s, arg))
            return true;
        i++;
    }
    return false;
}

struct tok_find {
    const char *tok;
    size_t len;
};

static bool tok_match(const char *e, size_t n, void *arg)
{
    struct tok_find *f = arg;
    return eq_nocase(e, n, f->tok, f->len);
}

bool vega_ws_header_has_token(const char *value, size_t len, const char *token)
{
    if (!value || !token)
        return false;
    struct tok_find f = {token, strlen(token)};
    return each_element(value, len, tok_match, &f);
}

int vega_ws_select_subprotocol(const char *offered, size_t len, const char *const *ours, size_t n)
{
    /* §4.2.2: "the server MUST ... select one of the values the client offered" (or none);
     * subprotocol names are compared as the tokens they are, with case (§11.3.4 registers
     * them case-sensitively). */
    for (size_t i = 0; i < n && offered; i++) {
        size_t ol = strlen(ours[i]);
        size_t at = 0;
        while (at <= len) {
            size_t s = at;
            while (at < len && offered[at] != ',')
                at++;
            size_t e = at;
            while (s < e && is_ows(offered[s]))
                s++;
            while (e > s && is_ows(offered[e - 1]))
                e--;
            if (e - s == ol && memcmp(offered + s, ours[i], ol) == 0)
                return (int)i;
            at++;
        }
    }
    return -1;
}
