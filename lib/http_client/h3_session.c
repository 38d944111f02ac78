/* SPDX-License-Identifier: MIT */
/* The client's QUIC session cache: the latest TLS session ticket (RFC 8446 §4.6.1, for
 * resumption and 0-RTT, RFC 9001 §4.5-§4.6) and NEW_TOKEN token (RFC 9000 §8.1.3) per server,
 * offered by the next connection there, and their text form for a caller's file. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_int.h"

static const char magic[] = "vega-quic-session 1\n";

static int64_t wall_s(void)
{
    return (int64_t)time(NULL);
}

/* c->mu held */
static struct hc_sess *find(vega_http_client *c, const char *host, uint16_t port)
{
    for (struct hc_sess *s = c->sessions; s; s = s->next)
        if (s->port == port && strcmp(s->host, host) == 0)
            return s;
    return NULL;
}

static void drop(vega_http_client *c, struct hc_sess *s)
{
    struct hc_sess **pp = &c->sessions;
    while (*pp && *pp != s)
        pp = &(*pp)->next;
    if (!*pp)
        return;
    *pp = s->next;
    c->nsessions--;
    vega__mem_free(c->o.mem, s->sess);
    vega__mem_free(c->o.mem, s->tok);
    vega__mem_free(c->o.mem, s);
}

/* The entry for host:port, made (and moved to the front) if needed; NULL without memory. */
static struct hc_sess *entry(vega_http_client *c, const char *host, uint16_t port)
{
    struct hc_sess *s = find(c, host, port);
    if (s)
        return s;
    size_t hn = strlen(host);
    if (hn == 0 || hn > HC_MAX_HOST)
        return NULL;
    if (c->nsessions >= HC_SESS_MAX) {
        struct hc_sess *last = c->sessions;
        while (last && last->next)
            last = last->next;
        drop(c, last);
    }
    s = vega__mem_calloc(c->o.mem, 1, sizeof *s);
    if (!s)
        return NULL;
    memcpy(s->host, host, hn + 1);
    s->port = port;
    s->next = c->sessions;
    c->sessions = s;
    c->nsessions++;
    return s;
}

static int set_blob(vega_http_client *c, uint8_t **dst, size_t *dst_len, const uint8_t *p,
                    size_t len)
{
    uint8_t *b = len ? vega__mem_malloc(c->o.mem, len) : NULL;
    if (len && !b)
        return -ENOMEM;
    if (len)
        memcpy(b, p, len);
    vega__mem_free(c->o.mem, *dst);
    *dst = b;
    *dst_len = len;
    return 0;
}

void vega__hc_sess_put(vega_http_client *c, const char *host, uint16_t port, bool is_token,
                       const uint8_t *p, size_t len)
{
    if (len == 0 || len > HC_SESS_MAX_LEN)
        return;
    pthread_mutex_lock(&c->mu);
    struct hc_sess *s = entry(c, host, port);
    if (s) {
        if (is_token)
            (void)set_blob(c, &s->tok, &s->tok_len, p, len);
        else
            (void)set_blob(c, &s->sess, &s->sess_len, p, len);
        s->saved = wall_s();
    }
    pthread_mutex_unlock(&c->mu);
}

static uint8_t *dup_blob(vega_http_client *c, const uint8_t *p, size_t len)
{
    uint8_t *b = len ? vega__mem_malloc(c->o.mem, len) : NULL;
    if (b)
        memcpy(b, p, len);
    return b;
}

void vega__hc_sess_get(vega_http_client *c, const char *host, uint16_t port, uint8_t **sess,
                       size_t *sess_len, uint8_t **tok, size_t *tok_len)
{
    *sess = *tok = NULL;
    *sess_len = *tok_len = 0;
    pthread_mutex_lock(&c->mu);
    struct hc_sess *s = find(c, host, port);
    if (s && s->saved + HC_SESS_TTL_S > wall_s()) {
        if ((*sess = dup_blob(c, s->sess, s->sess_len)))
            *sess_len = s->sess_len;
        if ((*tok = dup_blob(c, s->tok, s->tok_len)))
            *tok_len = s->tok_len;
    }
    pthread_mutex_unlock(&c->mu);
}

void vega__hc_sess_free(vega_http_client *c)
{
    while (c->sessions)
        drop(c, c->sessions);
}

/* ---- text ------------------------------------------------------------------------------------ */

static size_t hex_len(size_t n)
{
    return n ? 2 * n : 1;
}

static void hex_put(char *out, const uint8_t *p, size_t n)
{
    static const char d[] = "0123456789abcdef";
    if (!n) {
        out[0] = '-';
        return;
    }
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[p[i] >> 4];
        out[2 * i + 1] = d[p[i] & 15];
    }
}

vega_ssize vega_http_client_sessions_save(vega_http_client *c, char *out, size_t cap)
{
    if (!c || (!out && cap))
        return -EINVAL;
    size_t used = 0;
    bool fits = true;
    char head[HC_MAX_HOST + 64];
    pthread_mutex_lock(&c->mu);
    int64_t now = wall_s();
#define ROOM(n) (out && fits && vega__fits(used, (n), cap))
    if (ROOM(sizeof magic - 1))
        memcpy(out, magic, sizeof magic - 1);
    else if (out)
        fits = false;
    used += sizeof magic - 1;
    for (struct hc_sess *s = c->sessions; s; s = s->next) {
        if (s->saved + HC_SESS_TTL_S <= now || (!s->sess_len && !s->tok_len))
            continue;
        int hn = snprintf(head, sizeof head, "%s %u %lld ", s->host, s->port, (long long)s->saved);
        size_t n = (size_t)hn + hex_len(s->sess_len) + 1 + hex_len(s->tok_len) + 1;
        if (ROOM(n)) {
            char *p = out + used;
            memcpy(p, head, (size_t)hn);
            p += hn;
            hex_put(p, s->sess, s->sess_len);
            p += hex_len(s->sess_len);
            *p++ = ' ';
            hex_put(p, s->tok, s->tok_len);
            p += hex_len(s->tok_len);
            *p = '\n';
        } else if (out) {
            fits = false;
        }
        used += n;
    }
#undef ROOM
    pthread_mutex_unlock(&c->mu);
    if (out && !fits)
        return VEGA_ERR_NOBUF;
    return (vega_ssize)used;
}

static int hexval(char ch)
{
    return ch >= '0' && ch <= '9'   ? ch - '0'
           : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
           : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                    : -1;
}

/* A hex field ("-" = none) into a new block; false when malformed. */
static bool hex_get(vega_http_client *c, const char *s, size_t n, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (n == 1 && s[0] == '-')
        return true;
    if (n == 0 || n % 2 || n / 2 > HC_SESS_MAX_LEN)
        return false;
    uint8_t *b = vega__mem_malloc(c->o.mem, n / 2);
    if (!b)
        return false;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            vega__mem_free(c->o.mem, b);
            return false;
        }
        b[i] = (uint8_t)(hi << 4 | lo);
    }
    *out = b;
    *len = n / 2;
    return true;
}

/* One line "host port saved session token": 1 loaded, 0 skipped, -ENOMEM. */
static int load_line(vega_http_client *c, const char *l, size_t n, int64_t now)
{
    const char *f[5];
    size_t fl[5];
    size_t k = 0, i = 0;
    while (i < n && k < 5) {
        size_t b = i;
        while (i < n && l[i] != ' ')
            i++;
        f[k] = l + b;
        fl[k++] = i - b;
        while (i < n && l[i] == ' ')
            i++;
    }
    if (k != 5 || i != n || fl[0] == 0 || fl[0] > HC_MAX_HOST || fl[1] > 5 || fl[2] > 19)
        return 0;
    char host[HC_MAX_HOST + 1], num[24];
    for (size_t j = 0; j < fl[0]; j++) {
        unsigned char ch = (unsigned char)f[0][j];
        if (ch <= 0x20 || ch >= 0x7f)
            return 0;
        host[j] = (char)tolower(ch);
    }
    host[fl[0]] = '\0';
    memcpy(num, f[1], fl[1]);
    num[fl[1]] = '\0';
    char *end;
    unsigned long port = strtoul(num, &end, 10);
    if (*end || port == 0 || port > 65535)
        return 0;
    memcpy(num, f[2], fl[2]);
    num[fl[2]] = '\0';
    long long saved = strtoll(num, &end, 10);
    if (*end || saved <= 0 || saved + HC_SESS_TTL_S <= now || saved > now + 86400)
        return 0;
    uint8_t *sess, *tok;
    size_t sl, tl;
    if (!hex_get(c, f[3], fl[3], &sess, &sl))
        return 0;
    if (!hex_get(c, f[4], fl[4], &tok, &tl)) {
        vega__mem_free(c->o.mem, sess);
        return 0;
    }
    int rc = -ENOMEM;
    pthread_mutex_lock(&c->mu);
    struct hc_sess *s = entry(c, host, (uint16_t)port);
    if (s) {
        vega__mem_free(c->o.mem, s->sess);
        vega__mem_free(c->o.mem, s->tok);
        s->sess = sess;
        s->sess_len = sl;
        s->tok = tok;
        s->tok_len = tl;
        s->saved = saved;
        sess = tok = NULL;
        rc = 1;
    }
    pthread_mutex_unlock(&c->mu);
    vega__mem_free(c->o.mem, sess);
    vega__mem_free(c->o.mem, tok);
    return rc;
}

int vega_http_client_sessions_load(vega_http_client *c, const char *text, size_t len)
{
    if (!c || !text || len < sizeof magic - 1 || memcmp(text, magic, sizeof magic - 1) != 0)
        return -EINVAL;
    int64_t now = wall_s();
    int loaded = 0;
    size_t pos = sizeof magic - 1;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        int rc = load_line(c, text + pos, n, now);
        if (rc < 0)
            return rc;
        loaded += rc;
        pos += n + (nl ? 1 : 0);
    }
    return loaded;
}
