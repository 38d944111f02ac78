/* SPDX-License-Identifier: MIT */
/* Helpers shared by the TLS tests: a runtime per case, certificates made at test time, client
 * and server configurations, a handshake of both ends over the in-memory duplex or a socket. */
#ifndef VEGA_TLS_TEST_UTIL_H
#define VEGA_TLS_TEST_UTIL_H

#include <stdlib.h>
#include <string.h>

#include <vega/io.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/test.h>
#include <vega/tls.h>

#include "vtest.h"

#define DL(ms) vega_deadline_in_ms(ms)

static void (*tu_body)(void);

static void *tu_case_task(void *arg)
{
    (void)arg;
    tu_body();
    return NULL;
}

/* Runs body as the main task of a fresh runtime; workers == 0 means current-thread. */
static inline void tu_run(void (*body)(void), unsigned workers)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.flavor = workers ? VEGA_RT_MULTI_THREAD : VEGA_RT_CURRENT_THREAD;
    o.workers = workers;
    o.driver = vtest_driver();
    vega_rt *rt;
    int r = vega_rt_new(&rt, &o);
    if (r == -ENOSYS || r == -EPERM)
        vtest_skip("driver not available here");
    VCHECK_EQ(r, 0);
    tu_body = body;
    VCHECK_EQ(vega_rt_block_on(rt, tu_case_task, NULL, NULL), 0);
    vega_rt_free(rt);
}

/* ---- certificates ---------------------------------------------------------------------------- */

struct tu_pem {
    char *cert, *key;
};

static inline void tu_pem_free(struct tu_pem *p)
{
    free(p->cert);
    free(p->key);
    p->cert = p->key = NULL;
}

/* A self-signed certificate for names (NULL: localhost, 127.0.0.1, ::1), valid from
 * not_before_s to not_after_s seconds from now. */
static inline struct tu_pem tu_selfsigned(const char *const *names, size_t n, int64_t not_before_s,
                                          int64_t not_after_s)
{
    vega_tls_selfsigned_opts o;
    vega_tls_selfsigned_opts_init(&o);
    o.names = names;
    o.nnames = n;
    o.not_before_s = not_before_s;
    o.not_after_s = not_after_s;
    struct tu_pem p;
    VCHECK_EQ(vega_tls_selfsigned_ex(&p.cert, &p.key, &o), 0);
    return p;
}

static inline struct tu_pem tu_default_cert(void)
{
    return tu_selfsigned(NULL, 0, -3600, 24 * 3600);
}

/* A CA, and certificates it signs. */
static inline struct tu_pem tu_ca(const char *cn)
{
    vega_tls_selfsigned_opts o;
    vega_tls_selfsigned_opts_init(&o);
    o.is_ca = true;
    o.common_name = cn;
    o.names = NULL;
    o.nnames = 0;
    static const char *const none[] = {"ca.invalid"};
    o.names = none;
    o.nnames = 1;
    struct tu_pem p;
    VCHECK_EQ(vega_tls_selfsigned_ex(&p.cert, &p.key, &o), 0);
    return p;
}

static inline struct tu_pem tu_signed(const struct tu_pem *ca, const char *cn,
                                      const char *const *names, size_t n)
{
    vega_tls_selfsigned_opts o;
    vega_tls_selfsigned_opts_init(&o);
    o.common_name = cn;
    o.names = names;
    o.nnames = n;
    o.issuer_cert_pem = ca->cert;
    o.issuer_key_pem = ca->key;
    struct tu_pem p;
    VCHECK_EQ(vega_tls_selfsigned_ex(&p.cert, &p.key, &o), 0);
    return p;
}

/* ---- configurations -------------------------------------------------------------------------- */

static inline vega_tls_config *tu_server_cfg(const struct tu_pem *p)
{
    vega_tls_config *cfg;
    VCHECK_EQ(vega_tls_config_new(&cfg, VEGA_TLS_SERVER), 0);
    VCHECK_EQ(vega_tls_config_set_cert_pem(cfg, p->cert, strlen(p->cert), p->key, strlen(p->key)),
              0);
    return cfg;
}

/* A client that trusts ca_pem (NULL: verification off). */
static inline vega_tls_config *tu_client_cfg(const char *ca_pem)
{
    vega_tls_config *cfg;
    VCHECK_EQ(vega_tls_config_new(&cfg, VEGA_TLS_CLIENT), 0);
    if (ca_pem)
        VCHECK_EQ(vega_tls_config_set_ca_pem(cfg, ca_pem, strlen(ca_pem)), 0);
    else
        VCHECK_EQ(vega_tls_config_set_verify(cfg, VEGA_TLS_VERIFY_NONE), 0);
    return cfg;
}

/* ---- a client and a server over the duplex --------------------------------------------------- */

struct tu_pair {
    vega_stream *c, *s;
};

static inline struct tu_pair tu_pair_new(vega_tls_config *ccfg, vega_tls_config *scfg,
                                         const char *server_name, uint16_t port)
{
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_tls_opts o;
    vega_tls_opts_init(&o);
    o.server_name = server_name;
    o.port = port;
    struct tu_pair p;
    VCHECK_EQ(vega_tls_stream_new(&p.c, a, ccfg, &o), 0);
    VCHECK_EQ(vega_tls_stream_new(&p.s, b, scfg, NULL), 0);
    return p;
}

static inline void tu_pair_close(struct tu_pair *p)
{
    if (p->c)
        vega_stream_close(p->c, DL(1000));
    if (p->s)
        vega_stream_close(p->s, DL(1000));
    p->c = p->s = NULL;
}

struct tu_hs {
    vega_stream *s;
    vega_deadline dl;
    int r;
};

static inline void *tu_hs_task(void *arg)
{
    struct tu_hs *h = arg;
    h->r = vega_tls_handshake(h->s, h->dl);
    return NULL;
}

/* Runs both handshakes at once: the server's in a task. *rc, *rs: their results. */
static inline void tu_handshake(vega_stream *c, vega_stream *s, int *rc, int *rs)
{
    struct tu_hs h = {.s = s, .dl = DL(1500)};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, tu_hs_task, &h), 0);
    *rc = vega_tls_handshake(c, DL(1500));
    VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
    *rs = h.r;
}

static inline void tu_handshake_ok(struct tu_pair *p)
{
    int rc, rs;
    tu_handshake(p->c, p->s, &rc, &rs);
    if (rc != 0 || rs != 0)
        vtest_fail(__FILE__, __LINE__, "handshake: client %d (%s), server %d (%s)", rc,
                   vega_tls_last_error(p->c), rs, vega_tls_last_error(p->s));
}

/* Reads exactly n bytes (or fails the test). */
static inline void tu_read_all(vega_stream *s, void *buf, size_t n, vega_deadline dl)
{
    size_t got = 0;
    while (got < n) {
        vega_ssize r = vega_stream_read(s, (char *)buf + got, n - got, dl);
        if (r <= 0)
            vtest_fail(__FILE__, __LINE__, "read: %zd (%s) after %zu of %zu", r,
                       vega_tls_is_tls(s) ? vega_tls_last_error(s) : "", got, n);
        got += (size_t)r;
    }
}

static inline unsigned char tu_pat(size_t i)
{
    return (unsigned char)(i * 131u + (i >> 11));
}

/* Echoes everything until EOF (or an error), then shuts down: a task body; arg is the stream.
 * Returns the byte count as (void *)(intptr_t), negative codes for errors. */
static inline void *tu_echo_task(void *arg)
{
    vega_stream *s = arg;
    char *buf = malloc(32768);
    intptr_t total = 0;
    for (;;) {
        vega_ssize n = vega_stream_read(s, buf, 32768, DL(5000));
        if (n <= 0) {
            if (n < 0)
                total = n;
            else
                vega_stream_shutdown(s, SHUT_WR, DL(1000));
            break;
        }
        vega_ssize w = vega_stream_write(s, buf, (size_t)n, NULL, DL(5000));
        if (w < 0) {
            total = w;
            break;
        }
        total += n;
    }
    free(buf);
    return (void *)total;
}

#endif
