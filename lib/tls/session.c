/* SPDX-License-Identifier: MIT */
/* The client session cache: resumable sessions per host:port, least recently used keys dropped
 * first; TLS 1.3 tickets are used once (RFC 8446 appendix C.4). */
#include <string.h>

#include "tls_int.h"

/* Sessions kept per key: a TLS 1.3 server sends two tickets by default. */
#define PER_KEY 4

struct vega__tls_sess {
    struct vega__tls_sess *prev, *next;
    char *key;
    SSL_SESSION *s[PER_KEY]; /* oldest first */
    int n;
};

static void entry_free(struct vega__tls_sess *e)
{
    for (int i = 0; i < e->n; i++)
        SSL_SESSION_free(e->s[i]);
    free(e->key);
    free(e);
}

static void unlink_entry(vega_tls_config *cfg, struct vega__tls_sess *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        cfg->cache_head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        cfg->cache_tail = e->prev;
    e->prev = e->next = NULL;
    cfg->cache_len--;
}

static void push_front(vega_tls_config *cfg, struct vega__tls_sess *e)
{
    e->prev = NULL;
    e->next = cfg->cache_head;
    if (cfg->cache_head)
        cfg->cache_head->prev = e;
    cfg->cache_head = e;
    if (!cfg->cache_tail)
        cfg->cache_tail = e;
    cfg->cache_len++;
}

static struct vega__tls_sess *find(vega_tls_config *cfg, const char *key)
{
    for (struct vega__tls_sess *e = cfg->cache_head; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

SSL_SESSION *vega__tls_cache_get(vega_tls_config *cfg, const char *key)
{
    SSL_SESSION *s = NULL;
    pthread_mutex_lock(&cfg->mu);
    struct vega__tls_sess *e = cfg->cache_max ? find(cfg, key) : NULL;
    while (e && e->n > 0 && !s) {
        SSL_SESSION *c = e->s[--e->n]; /* newest */
        if (!SSL_SESSION_is_resumable(c)) {
            SSL_SESSION_free(c);
            continue;
        }
        if (SSL_SESSION_get_protocol_version(c) >= TLS1_3_VERSION) {
            s = c; /* single use: our reference moves to the caller */
        } else {
            SSL_SESSION_up_ref(c);
            e->n++; /* a TLS 1.2 session may be resumed again */
            s = c;
        }
    }
    if (e) {
        unlink_entry(cfg, e);
        if (e->n == 0)
            entry_free(e);
        else
            push_front(cfg, e);
    }
    pthread_mutex_unlock(&cfg->mu);
    return s;
}

void vega__tls_cache_put(vega_tls_config *cfg, const char *key, SSL_SESSION *sess)
{
    struct vega__tls_sess *drop = NULL;
    pthread_mutex_lock(&cfg->mu);
    if (cfg->cache_max == 0) {
        pthread_mutex_unlock(&cfg->mu);
        SSL_SESSION_free(sess);
        return;
    }
    struct vega__tls_sess *e = find(cfg, key);
    if (e) {
        unlink_entry(cfg, e);
    } else {
        e = calloc(1, sizeof(*e));
        if (e && !(e->key = strdup(key))) {
            free(e);
            e = NULL;
        }
        if (!e) {
            pthread_mutex_unlock(&cfg->mu);
            SSL_SESSION_free(sess);
            return;
        }
    }
    if (e->n == PER_KEY) {
        SSL_SESSION_free(e->s[0]);
        memmove(e->s, e->s + 1, (PER_KEY - 1) * sizeof(e->s[0]));
        e->n--;
    }
    e->s[e->n++] = sess;
    push_front(cfg, e);
    if (cfg->cache_len > cfg->cache_max) {
        drop = cfg->cache_tail;
        unlink_entry(cfg, drop);
    }
    pthread_mutex_unlock(&cfg->mu);
    if (drop)
        entry_free(drop);
}

void vega__tls_cache_clear(vega_tls_config *cfg)
{
    pthread_mutex_lock(&cfg->mu);
    struct vega__tls_sess *e = cfg->cache_head;
    cfg->cache_head = cfg->cache_tail = NULL;
    cfg->cache_len = 0;
    pthread_mutex_unlock(&cfg->mu);
    while (e) {
        struct vega__tls_sess *next = e->next;
        entry_free(e);
        e = next;
    }
}

size_t vega__tls_cache_len(vega_tls_config *cfg)
{
    pthread_mutex_lock(&cfg->mu);
    size_t n = cfg->cache_len;
    pthread_mutex_unlock(&cfg->mu);
    return n;
}

int vega__tls_new_session_cb(SSL *ssl, SSL_SESSION *sess)
{
    struct vega_tls *t = vega__tls_from_ssl(ssl);
    if (!t || !t->cache_key || !SSL_SESSION_is_resumable(sess))
        return 0;
    vega__tls_cache_put(t->cfg, t->cache_key, sess);
    return 1; /* we keep the reference OpenSSL gave us */
}

size_t vega__tls_server_cache_len(vega_tls_config *cfg)
{
    return (size_t)SSL_CTX_sess_number(cfg->ctx);
}
