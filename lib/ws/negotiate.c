/* SPDX-License-Identifier: MIT */
/* permessage-deflate negotiation (RFC 7692 §5, §7.1): the client's offer, the server's choice
 * among offers, and the client's check of the response. Sec-WebSocket-Extensions values are
 * lists of `name *(";" param["=" value])` (RFC 6455 §9.1), values tokens or quoted strings. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ws_int.h"

#define PMD "permessage-deflate"

/* Parsed parameters of one permessage-deflate element: -1 absent, 0 present without value. */
struct pmd {
    int snct, cnct, smwb, cmwb;
};

static bool is_ows(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* The next part of v up to sep (outside quotes), trimmed: false at the end. */
static bool next_part(const char *v, size_t len, size_t *at, char sep, const char **s, size_t *n)
{
    if (*at > len)
        return false;
    size_t i = *at;
    bool q = false;
    while (i < len && (q || v[i] != sep)) {
        if (v[i] == '"')
            q = !q;
        i++;
    }
    size_t b = *at, e = i;
    while (b < e && is_ows(v[b]))
        b++;
    while (e > b && is_ows(v[e - 1]))
        e--;
    *s = v + b;
    *n = e - b;
    *at = i + 1;
    return true;
}

static bool eq(const char *a, size_t n, const char *lit)
{
    return n == strlen(lit) && strncasecmp(a, lit, n) == 0;
}

/* RFC 7692 §7.1.2.1: the value "MUST conform to the ABNF below": 8..15 without leading
 * zeros; a quoted value is the same after unquoting. */
static int window_bits(const char *v, size_t n)
{
    if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
        v++;
        n -= 2;
    }
    if (n == 1 && (v[0] == '8' || v[0] == '9'))
        return v[0] - '0';
    if (n == 2 && v[0] == '1' && v[1] >= '0' && v[1] <= '5')
        return 10 + v[1] - '0';
    return -2;
}

/* One extension element. Returns 1 for a valid permessage-deflate element (*p filled), 0 for
 * another extension, -1 for an invalid permessage-deflate element (§7.1: unknown or repeated
 * parameters, bad values). */
static int parse_element(const char *e, size_t n, struct pmd *p)
{
    size_t at = 0;
    const char *s;
    size_t sl;
    next_part(e, n, &at, ';', &s, &sl);
    if (!eq(s, sl, PMD))
        return 0;
    *p = (struct pmd){-1, -1, -1, -1};
    while (next_part(e, n, &at, ';', &s, &sl)) {
        size_t k = 0;
        while (k < sl && s[k] != '=')
            k++;
        size_t nl = k;
        while (nl > 0 && is_ows(s[nl - 1]))
            nl--;
        const char *val = NULL;
        size_t vl = 0;
        if (k < sl) {
            val = s + k + 1;
            vl = sl - k - 1;
            while (vl > 0 && is_ows(*val)) {
                val++;
                vl--;
            }
        }
        int *slot;
        bool flag;
        if (eq(s, nl, "server_no_context_takeover"))
            slot = &p->snct, flag = true;
        else if (eq(s, nl, "client_no_context_takeover"))
            slot = &p->cnct, flag = true;
        else if (eq(s, nl, "server_max_window_bits"))
            slot = &p->smwb, flag = false;
        else if (eq(s, nl, "client_max_window_bits"))
            slot = &p->cmwb, flag = false;
        else
            return -1;
        if (*slot != -1)
            return -1;
        if (flag) {
            if (val)
                return -1;
            *slot = 0;
        } else if (!val) {
            /* server_max_window_bits needs a value; client_max_window_bits may go without. */
            if (slot == &p->smwb)
                return -1;
            *slot = 0;
        } else {
            *slot = window_bits(val, vl);
            if (*slot < 0)
                return -1;
        }
    }
    return 1;
}

static bool opts_ok(const vega_ws_deflate_opts *o)
{
    return (o->server_max_window_bits == 0 ||
            (o->server_max_window_bits >= 8 && o->server_max_window_bits <= 15)) &&
           (o->client_max_window_bits == 0 ||
            (o->client_max_window_bits >= 8 && o->client_max_window_bits <= 15));
}

__attribute__((format(printf, 4, 5))) static vega_ssize put(char *out, size_t cap, size_t *at,
                                                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *at, cap - *at, fmt, ap);
    va_end(ap);
    if (n < 0 || !vega__fits(*at, (size_t)n + 1, cap))
        return VEGA_ERR_NOBUF;
    *at += (size_t)n;
    return 0;
}

vega_ssize vega_ws_deflate_offer(const vega_ws_deflate_opts *want, char *out, size_t cap)
{
    if (!want || !want->enabled)
        return 0;
    if (!opts_ok(want))
        return -EINVAL;
    size_t at = 0;
    if (!out || cap == 0)
        return VEGA_ERR_NOBUF;
    out[0] = '\0';
    vega_ssize rc = put(out, cap, &at, PMD);
    if (rc == 0 && want->server_no_context_takeover)
        rc = put(out, cap, &at, "; server_no_context_takeover");
    if (rc == 0 && want->client_no_context_takeover)
        rc = put(out, cap, &at, "; client_no_context_takeover");
    if (rc == 0 && want->server_max_window_bits)
        rc = put(out, cap, &at, "; server_max_window_bits=%d", want->server_max_window_bits);
    if (rc == 0)
        rc = want->client_max_window_bits
                 ? put(out, cap, &at, "; client_max_window_bits=%d", want->client_max_window_bits)
                 : put(out, cap, &at, "; client_max_window_bits");
    return rc < 0 ? rc : (vega_ssize)at;
}

/* The server's answer to one valid offer under policy. */
static vega_ssize answer(const struct pmd *p, const vega_ws_deflate_opts *pol,
                         vega_ws_deflate_params *r, char *out, size_t cap)
{
    *r = (vega_ws_deflate_params){
        .enabled = true, .server_max_window_bits = 15, .client_max_window_bits = 15};
    size_t at = 0;
    vega_ssize rc = put(out, cap, &at, PMD);
    /* §7.1.1.1: a server accepting an offer with server_no_context_takeover "MUST include" it. */
    r->server_no_context_takeover = p->snct == 0 || pol->server_no_context_takeover;
    if (rc == 0 && r->server_no_context_takeover)
        rc = put(out, cap, &at, "; server_no_context_takeover");
    /* §7.1.1.2: the server "MAY include" client_no_context_takeover even if not offered. */
    r->client_no_context_takeover = pol->client_no_context_takeover;
    if (rc == 0 && r->client_no_context_takeover)
        rc = put(out, cap, &at, "; client_no_context_takeover");
    /* §7.1.2.1: with server_max_window_bits=N offered, the response "MUST" carry a value <= N;
     * without it, the server may still limit itself. */
    int sb = pol->server_max_window_bits ? pol->server_max_window_bits : 15;
    if (p->smwb > 0 && p->smwb < sb)
        sb = p->smwb;
    r->server_max_window_bits = (uint8_t)sb;
    if (rc == 0 && (p->smwb > 0 || sb < 15))
        rc = put(out, cap, &at, "; server_max_window_bits=%d", sb);
    /* §7.1.2.2: client_max_window_bits only when the client offered it, at most its value. */
    if (p->cmwb >= 0) {
        int cb = pol->client_max_window_bits ? pol->client_max_window_bits : 15;
        if (p->cmwb > 0 && p->cmwb < cb)
            cb = p->cmwb;
        r->client_max_window_bits = (uint8_t)cb;
        if (rc == 0 && (pol->client_max_window_bits || p->cmwb > 0))
            rc = put(out, cap, &at, "; client_max_window_bits=%d", cb);
    }
    if (rc < 0) {
        r->enabled = false;
        return rc;
    }
    return (vega_ssize)at;
}

vega_ssize vega_ws_deflate_accept_offer(const char *offers, size_t len,
                                        const vega_ws_deflate_opts *policy,
                                        vega_ws_deflate_params *params, char *out, size_t cap)
{
    memset(params, 0, sizeof *params);
    if (!policy || !opts_ok(policy))
        return -EINVAL;
    if (!out || cap == 0)
        return VEGA_ERR_NOBUF;
    out[0] = '\0';
    if (!policy->enabled || !offers)
        return 0;
    size_t at = 0;
    const char *e;
    size_t n;
    while (next_part(offers, len, &at, ',', &e, &n)) {
        struct pmd p;
        if (n == 0 || parse_element(e, n, &p) != 1)
            continue;
        return answer(&p, policy, params, out, cap);
    }
    return 0;
}

int vega_ws_deflate_check_response(const char *value, size_t len,
                                   const vega_ws_deflate_opts *offered,
                                   vega_ws_deflate_params *params)
{
    memset(params, 0, sizeof *params);
    if (!value || len == 0)
        return 0;
    if (!offered || !offered->enabled)
        return VEGA_ERR_PROTO; /* RFC 6455 §4.1: an extension not requested fails it */
    size_t at = 0;
    const char *e;
    size_t n;
    int seen = 0;
    struct pmd p = {-1, -1, -1, -1};
    while (next_part(value, len, &at, ',', &e, &n)) {
        if (n == 0)
            continue;
        if (seen++ || parse_element(e, n, &p) != 1)
            return VEGA_ERR_PROTO;
    }
    if (!seen)
        return 0;
    /* §7.1.1.1: we offered server_no_context_takeover: an acceptance must carry it. */
    if (offered->server_no_context_takeover && p.snct != 0)
        return VEGA_ERR_PROTO;
    /* §7.1.2.1: with server_max_window_bits=N offered, the response carries a value <= N. */
    if (offered->server_max_window_bits &&
        (p.smwb <= 0 || p.smwb > offered->server_max_window_bits))
        return VEGA_ERR_PROTO;
    /* §7.1.2.2: client_max_window_bits in a response needs a value, at most the offered one
     * (we always offer the parameter). */
    if (p.cmwb == 0 ||
        (p.cmwb > 0 && offered->client_max_window_bits && p.cmwb > offered->client_max_window_bits))
        return VEGA_ERR_PROTO;
    params->enabled = true;
    params->server_no_context_takeover = p.snct == 0;
    params->client_no_context_takeover = p.cnct == 0 || offered->client_no_context_takeover;
    params->server_max_window_bits = (uint8_t)(p.smwb > 0 ? p.smwb : 15);
    params->client_max_window_bits =
        (uint8_t)(p.cmwb > 0                        ? p.cmwb
                  : offered->client_max_window_bits ? offered->client_max_window_bits
                                                    : 15);
    return 0;
}
