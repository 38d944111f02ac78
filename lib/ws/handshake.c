/* SPDX-License-Identifier: MIT */
/* The opening handshake's helpers (RFC 6455 §4): Sec-WebSocket-Key and -Accept (§4.1, §4.2.2),
 * token lists of Connection/Upgrade/Sec-WebSocket-Protocol, subprotocol selection. */
#include <string.h>

#include <vega/base64.h>
#include <vega/crypto.h>

#include "ws_int.h"

void vega_ws_handshake_key(const uint8_t nonce[16], char out[VEGA_WS_KEY_LEN + 1])
{
    vega_ssize n = vega_base64_encode(nonce, 16, out, VEGA_WS_KEY_LEN, VEGA_BASE64_STD);
    out[n == VEGA_WS_KEY_LEN ? VEGA_WS_KEY_LEN : 0] = '\0';
}

/* §4.2.1: the key "when decoded, is 16 bytes in length": 22 base64 characters and "==", the
 * last character's unused bits zero. */
static bool key_ok(const char *k, size_t len)
{
    uint8_t raw[16];
    char again[VEGA_WS_KEY_LEN];
    /* canonical: decoded and encoded again, the same text (the spare bits zero) */
    return len == VEGA_WS_KEY_LEN &&
           vega_base64_decode(k, len, raw, sizeof raw, VEGA_BASE64_STD) == 16 &&
           vega_base64_encode(raw, 16, again, sizeof again, VEGA_BASE64_STD) == VEGA_WS_KEY_LEN &&
           memcmp(again, k, VEGA_WS_KEY_LEN) == 0;
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
    vega_ssize n = vega_base64_encode(d, 20, out, VEGA_WS_ACCEPT_LEN, VEGA_BASE64_STD);
    if (n != VEGA_WS_ACCEPT_LEN)
        return VEGA_ERR_INTERNAL;
    out[VEGA_WS_ACCEPT_LEN] = '\0';
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
