/* SPDX-License-Identifier: MIT */
/* The TLS stream over the in-memory duplex, TCP loopback and a Unix socket pair: handshake, data
 * both ways (also concurrently), close_notify, half-close, truncation, deadlines and
 * cancellation during the handshake, sendfile, idle buffers. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "tls_util.h"

static void check_roundtrip(struct tu_pair *p)
{
    VCHECK_EQ(vega_stream_write(p->c, "hello, server", 13, NULL, DL(1000)), 13);
    char buf[64];
    tu_read_all(p->s, buf, 13, DL(1000));
    VCHECK(memcmp(buf, "hello, server", 13) == 0);
    VCHECK_EQ(vega_stream_write(p->s, "hello, client", 13, NULL, DL(1000)), 13);
    tu_read_all(p->c, buf, 13, DL(1000));
    VCHECK(memcmp(buf, "hello, client", 13) == 0);
}

/* ---- handshake and data ---------------------------------------------------------------------- */

static void body_handshake_tls13(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 443);
    VCHECK(vega_tls_is_tls(p.c) && vega_tls_is_tls(p.s));
    VCHECK(vega_tls_get_version(p.c) == NULL);
    tu_handshake_ok(&p);
    VCHECK_STR(vega_tls_get_version(p.c), "TLSv1.3");
    VCHECK_STR(vega_tls_get_version(p.s), "TLSv1.3");
    VCHECK(strncmp(vega_tls_get_cipher(p.c), "TLS_", 4) == 0);
    VCHECK_STR(vega_tls_get_server_name(p.s), "localhost"); /* SNI came from server_name */
    VCHECK_STR(vega_tls_get_server_name(p.c), "localhost");
    VCHECK(!vega_tls_session_reused(p.c));
    VCHECK(vega_tls_get_alpn(p.c) == NULL);
    char subj[128];
    VCHECK(vega_tls_peer_subject(p.c, subj, sizeof(subj)) > 0);
    VCHECK_STR(subj, "CN=localhost");
    VCHECK_EQ(vega_tls_peer_subject(p.s, subj, sizeof(subj)), 0); /* no client certificate */
    check_roundtrip(&p);
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(handshake_tls13_and_data_both_ways)
{
    tu_run(body_handshake_tls13, 0);
}

static void body_handshake_tls12(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    VCHECK_EQ(vega_tls_config_set_versions(ccfg, VEGA_TLS_1_2, VEGA_TLS_1_2), 0);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "127.0.0.1", 443);
    tu_handshake_ok(&p);
    VCHECK_STR(vega_tls_get_version(p.c), "TLSv1.2");
    VCHECK_STR(vega_tls_get_version(p.s), "TLSv1.2");
    VCHECK(vega_tls_get_server_name(p.s) == NULL); /* RFC 6066: no SNI for an IP address */
    check_roundtrip(&p);
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(handshake_tls12_and_data_both_ways)
{
    tu_run(body_handshake_tls12, 0);
}

/* The handshake runs on the first read or write when nobody calls vega_tls_handshake. */
static void *lazy_server(void *arg)
{
    vega_stream *s = arg;
    char buf[5];
    tu_read_all(s, buf, 5, DL(1500));
    VCHECK(memcmp(buf, "lazy!", 5) == 0);
    VCHECK_EQ(vega_stream_write(s, "yes", 3, NULL, DL(1500)), 3);
    return NULL;
}

static void body_lazy_handshake(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, lazy_server, p.s), 0);
    VCHECK_EQ(vega_stream_write(p.c, "lazy!", 5, NULL, DL(1500)), 5);
    char buf[3];
    tu_read_all(p.c, buf, 3, DL(1500));
    VCHECK(memcmp(buf, "yes", 3) == 0);
    VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(handshake_on_first_read_or_write)
{
    tu_run(body_lazy_handshake, 0);
}

/* ---- full duplex: a reader and a writer task on each end, on several workers ----------------- */

#define BIG (3u << 20)

struct pump {
    vega_stream *s;
    size_t n;
    vega_ssize res;
};

static void *pump_write(void *arg)
{
    struct pump *p = arg;
    unsigned char *b = malloc(100000);
    size_t off = 0;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    p->res = 0;
    while (off < p->n) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t k = 1 + (size_t)(x % 100000);
        if (k > p->n - off)
            k = p->n - off;
        for (size_t i = 0; i < k; i++)
            b[i] = tu_pat(off + i);
        size_t w = 0;
        vega_ssize r = vega_stream_write(p->s, b, k, &w, DL(10000));
        if (r < 0) {
            p->res = r;
            break;
        }
        off += k;
    }
    free(b);
    if (p->res == 0)
        p->res = vega_stream_shutdown(p->s, SHUT_WR, DL(2000)) == 0 ? (vega_ssize)off : -EIO;
    return NULL;
}

static void *pump_read(void *arg)
{
    struct pump *p = arg;
    unsigned char *b = malloc(40000);
    size_t off = 0;
    for (;;) {
        vega_ssize r = vega_stream_read(p->s, b, 1 + off % 40000, DL(10000));
        if (r <= 0) {
            p->res = r < 0 ? r : (vega_ssize)off;
            break;
        }
        for (vega_ssize i = 0; i < r; i++)
            if (b[i] != tu_pat(off + (size_t)i)) {
                p->res = -EBADMSG;
                free(b);
                return NULL;
            }
        off += (size_t)r;
    }
    free(b);
    return NULL;
}

static void body_full_duplex(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    /* No explicit handshake: all four tasks race into it. */
    struct pump cw = {p.c, BIG, 0}, sw = {p.s, BIG, 0}, cr = {p.c, 0, 0}, sr = {p.s, 0, 0};
    vega_task *t[4];
    VCHECK_EQ(vega_task_spawn(&t[0], pump_write, &cw), 0);
    VCHECK_EQ(vega_task_spawn(&t[1], pump_read, &sr), 0);
    VCHECK_EQ(vega_task_spawn(&t[2], pump_write, &sw), 0);
    VCHECK_EQ(vega_task_spawn(&t[3], pump_read, &cr), 0);
    for (int i = 0; i < 4; i++)
        VCHECK_EQ(vega_task_join(t[i], NULL, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(cw.res, BIG);
    VCHECK_EQ(sw.res, BIG);
    VCHECK_EQ(sr.res, BIG); /* everything, in order, then close_notify */
    VCHECK_EQ(cr.res, BIG);
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(full_duplex_concurrent_tasks_multi_worker)
{
    tu_run(body_full_duplex, 3);
}

/* ---- ends of streams ------------------------------------------------------------------------- */

static void body_close_notify(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    VCHECK_EQ(vega_stream_write(p.s, "bye", 3, NULL, DL(1000)), 3);
    VCHECK_EQ(vega_stream_close(p.s, DL(1000)), 0); /* sends close_notify */
    p.s = NULL;
    char buf[8];
    tu_read_all(p.c, buf, 3, DL(1000));
    VCHECK_EQ(vega_stream_read(p.c, buf, sizeof(buf), DL(1000)), 0); /* a clean end */
    VCHECK_EQ(vega_stream_read(p.c, buf, sizeof(buf), DL(1000)), 0); /* and it stays so */
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(close_sends_close_notify_peer_reads_eof)
{
    tu_run(body_close_notify, 0);
}

/* RFC 8446 section 6.1: truncation is an error, never a clean end. */
static void body_truncation(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    vega_tls_opts o;
    vega_tls_opts_init(&o);
    o.server_name = "localhost";
    vega_stream *c, *s;
    VCHECK_EQ(vega_tls_stream_new(&c, a, ccfg, &o), 0);
    /* The server's inner end b stays reachable, to cut it without close_notify. */
    struct tu_pair p = {c, NULL};
    VCHECK_EQ(vega_tls_stream_new(&s, b, scfg, NULL), 0);
    p.s = s;
    tu_handshake_ok(&p);
    VCHECK_EQ(vega_stream_write(s, "partial", 7, NULL, DL(1000)), 7);
    VCHECK_EQ(vega_stream_shutdown(b, SHUT_WR, DL(1000)), 0); /* a TCP FIN, no close_notify */
    char buf[16];
    tu_read_all(c, buf, 7, DL(1000));
    vega_ssize r = vega_stream_read(c, buf, sizeof(buf), DL(1000));
    VCHECK_EQ(r, VEGA_ERR_TLS_TRUNCATED);
    VCHECK(strstr(vega_tls_last_error(c), "without close_notify") != NULL);
    VCHECK_EQ(vega_stream_read(c, buf, sizeof(buf), DL(1000)), VEGA_ERR_TLS_TRUNCATED);
    vega_tls_error e;
    VCHECK_EQ(vega_tls_get_error(c, &e), 0);
    VCHECK_EQ(e.code, VEGA_ERR_TLS_TRUNCATED);
    VCHECK_STR(vega_tls_err_name((int)r), "VEGA_ERR_TLS_TRUNCATED");
    VCHECK(strstr(vega_tls_strerror((int)r), "close_notify") != NULL);
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(truncation_is_an_error_not_eof)
{
    tu_run(body_truncation, 0);
}

/* shutdown(SHUT_WR) sends close_notify; the other side may still send (half-close). */
static int half_close_version;

static void body_half_close(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    VCHECK_EQ(vega_tls_config_set_versions(ccfg, half_close_version, half_close_version), 0);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    VCHECK_EQ(vega_stream_write(p.c, "ping", 4, NULL, DL(1000)), 4);
    VCHECK_EQ(vega_stream_shutdown(p.c, SHUT_WR, DL(1000)), 0);
    VCHECK_EQ(vega_stream_write(p.c, "x", 1, NULL, DL(1000)), -EPIPE);
    char buf[16];
    tu_read_all(p.s, buf, 4, DL(1000));
    VCHECK_EQ(vega_stream_read(p.s, buf, sizeof(buf), DL(1000)), 0);
    VCHECK_EQ(vega_stream_write(p.s, "pong", 4, NULL, DL(1000)), 4);
    VCHECK_EQ(vega_stream_shutdown(p.s, SHUT_WR, DL(1000)), 0);
    tu_read_all(p.c, buf, 4, DL(1000));
    VCHECK(memcmp(buf, "pong", 4) == 0);
    VCHECK_EQ(vega_stream_read(p.c, buf, sizeof(buf), DL(1000)), 0);
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(shutdown_wr_half_close_tls13)
{
    half_close_version = VEGA_TLS_1_3;
    tu_run(body_half_close, 0);
}

VTEST(shutdown_wr_half_close_tls12)
{
    half_close_version = VEGA_TLS_1_2;
    tu_run(body_half_close, 0);
}

/* ---- deadlines and cancellation during the handshake ----------------------------------------- */

static void body_handshake_deadline(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    /* Nobody answers yet: the client's handshake times out, keeping its state. */
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_tls_handshake(p.c, DL(50)), -ETIMEDOUT);
    VCHECK(vega_now() - t0 >= 40 * VEGA_NS_PER_MS);
    VCHECK_EQ(vega_tls_handshake(p.c, 0), -ETIMEDOUT); /* deadline 0: no wait */
    /* The server answers now; the client resumes where it stopped. */
    tu_handshake_ok(&p);
    check_roundtrip(&p);
    /* A read that times out consumes nothing and the stream stays usable. */
    char buf[8];
    VCHECK_EQ(vega_stream_read(p.c, buf, sizeof(buf), DL(20)), -ETIMEDOUT);
    VCHECK_EQ(vega_stream_read(p.c, buf, sizeof(buf), 0), -ETIMEDOUT);
    check_roundtrip(&p);
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(handshake_deadline_then_resume)
{
    tu_run(body_handshake_deadline, 0);
}

static void *cancel_me(void *arg)
{
    struct tu_hs *h = arg;
    h->r = vega_tls_handshake(h->s, VEGA_DEADLINE_NEVER);
    return NULL;
}

static void body_handshake_cancel(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    struct tu_hs h = {.s = p.c, .r = 1};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, cancel_me, &h), 0);
    VCHECK_EQ(vega_sleep_ms(20), 0);
    vega_task_cancel(t);
    VCHECK_EQ(vega_task_join(t, NULL, DL(1000)), 0);
    VCHECK_EQ(h.r, -ECANCELED);
    /* The stream is intact: another task finishes the handshake. */
    tu_handshake_ok(&p);
    check_roundtrip(&p);
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(handshake_cancellation)
{
    tu_run(body_handshake_cancel, 0);
}

/* A peer that is not TLS at all. */
static void body_not_tls(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *ccfg = tu_client_cfg(pem.cert);
    vega_stream *a, *b, *c;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    VCHECK_EQ(vega_tls_stream_new(&c, a, ccfg, NULL), 0);
    VCHECK_EQ(vega_stream_write(b, "HTTP/1.1 400 Bad Request\r\n\r\n", 28, NULL, DL(100)), 28);
    VCHECK_EQ(vega_tls_handshake(c, DL(1000)), VEGA_ERR_TLS_HANDSHAKE);
    VCHECK(strstr(vega_tls_last_error(c), "TLS handshake failed") != NULL);
    /* Sticky. */
    VCHECK_EQ(vega_tls_handshake(c, DL(1000)), VEGA_ERR_TLS_HANDSHAKE);
    char buf[4];
    VCHECK_EQ(vega_stream_read(c, buf, 4, DL(100)), VEGA_ERR_TLS_HANDSHAKE);
    vega_stream_close(c, DL(100));
    vega_stream_close(b, DL(100));
    /* The peer closes during the handshake, after the ClientHello. */
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    VCHECK_EQ(vega_tls_stream_new(&c, a, ccfg, NULL), 0);
    VCHECK_EQ(vega_tls_handshake(c, DL(20)), -ETIMEDOUT);
    vega_stream_close(b, DL(100));
    VCHECK_EQ(vega_tls_handshake(c, DL(1000)), VEGA_ERR_TLS_HANDSHAKE);
    if (!strstr(vega_tls_last_error(c), "closed the connection"))
        vtest_fail(__FILE__, __LINE__, "message: %s", vega_tls_last_error(c));
    vega_stream_close(c, DL(100));
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(peer_not_tls_or_gone)
{
    tu_run(body_not_tls, 0);
}

/* ---- real sockets ---------------------------------------------------------------------------- */

struct accept_arg {
    vega_sock *l;
    vega_tls_config *cfg;
    intptr_t echoed;
};

static void *accept_echo(void *arg)
{
    struct accept_arg *a = arg;
    vega_sock *s;
    VCHECK_EQ(vega_tcp_accept(a->l, &s, NULL, DL(2000)), 0);
    vega_stream *t;
    VCHECK_EQ(vega_tls_stream_from_sock(&t, s, 0, a->cfg, NULL), 0);
    a->echoed = (intptr_t)tu_echo_task(t);
    VCHECK_EQ(vega_stream_close(t, DL(1000)), 0);
    return NULL;
}

static void socket_roundtrip(vega_sock *l, vega_sock *cs, vega_tls_config *scfg,
                             vega_tls_config *ccfg, const char *name)
{
    struct accept_arg a = {.l = l, .cfg = scfg};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, accept_echo, &a), 0);
    if (!cs) {
        vega_addr addr;
        VCHECK_EQ(vega_sock_local_addr(l, &addr), 0);
        VCHECK_EQ(vega_tcp_connect(&cs, &addr, DL(1000)), 0);
    }
    vega_tls_opts o;
    vega_tls_opts_init(&o);
    o.server_name = name;
    vega_stream *c;
    VCHECK_EQ(vega_tls_stream_from_sock(&c, cs, 0, ccfg, &o), 0);
    size_t n = 200000;
    unsigned char *out = malloc(n), *in = malloc(n);
    for (size_t i = 0; i < n; i++)
        out[i] = tu_pat(i);
    VCHECK_EQ(vega_stream_write(c, out, 1000, NULL, DL(2000)), 1000);
    tu_read_all(c, in, 1000, DL(2000));
    VCHECK(memcmp(in, out, 1000) == 0);
    vega_tls_ktls_info k;
    VCHECK_EQ(vega_tls_ktls_status(c, &k), 0);
    VCHECK(!k.tx && !k.rx && k.reason[0] == '\0'); /* not asked for */
    VCHECK_EQ(vega_stream_shutdown(c, SHUT_WR, DL(1000)), 0);
    char b[4];
    VCHECK_EQ(vega_stream_read(c, b, sizeof(b), DL(2000)), 0);
    VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(a.echoed, 1000);
    VCHECK_EQ(vega_stream_close(c, DL(1000)), 0);
    free(out);
    free(in);
}

static void body_tcp(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    vega_addr addr;
    VCHECK_EQ(vega_addr_parse(&addr, "127.0.0.1:0", NULL), 0);
    vega_sock *l;
    VCHECK_EQ(vega_tcp_listen(&l, &addr, 16, 0), 0);
    socket_roundtrip(l, NULL, scfg, ccfg, "127.0.0.1");
    vega_sock_close(l);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(tcp_loopback_roundtrip)
{
    tu_run(body_tcp, 2);
}

static void body_unix(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    char path[64];
    snprintf(path, sizeof(path), "@vega-tls-test-%d", (int)getpid());
    vega_sock *l;
    VCHECK_EQ(vega_unix_listen(&l, path, 16, 0), 0);
    vega_sock *cs;
    VCHECK_EQ(vega_unix_connect(&cs, path, DL(1000)), 0);
    socket_roundtrip(l, cs, scfg, ccfg, "localhost");
    vega_sock_close(l);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(unix_socket_roundtrip)
{
    tu_run(body_unix, 0);
}

/* ---- sendfile, writev, idle buffers ---------------------------------------------------------- */

struct reader {
    vega_stream *s;
    void *buf;
    size_t n;
};

static void *read_task(void *arg)
{
    struct reader *r = arg;
    tu_read_all(r->s, r->buf, r->n, DL(2000));
    return NULL;
}

static void body_sendfile(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    tu_handshake_ok(&p);
    char path[] = "/tmp/vega-tls-sendfile-XXXXXX";
    int fd = mkstemp(path);
    VCHECK(fd >= 0);
    unlink(path);
    size_t n = 300000;
    unsigned char *data = malloc(n), *got = malloc(n);
    for (size_t i = 0; i < n; i++)
        data[i] = tu_pat(i);
    VCHECK_EQ(write(fd, data, n), (ssize_t)n);
    vega_task *t, *r;
    VCHECK_EQ(vega_task_spawn(&t, tu_echo_task, p.s), 0);
    struct reader rd = {p.c, got, n - 1000};
    VCHECK_EQ(vega_task_spawn(&r, read_task, &rd), 0);
    size_t w = 0;
    VCHECK_EQ(vega_stream_sendfile(p.c, fd, 1000, n - 1000, &w, DL(2000)), (vega_ssize)(n - 1000));
    VCHECK_EQ(w, n - 1000);
    VCHECK_EQ(vega_task_join(r, NULL, VEGA_DEADLINE_NEVER), 0);
    VCHECK(memcmp(got, data + 1000, n - 1000) == 0);
    /* writev through the generic fallback */
    struct iovec iov[3] = {{"ab", 2}, {"cde", 3}, {"f", 1}};
    VCHECK_EQ(vega_stream_writev(p.c, iov, 3, NULL, DL(1000)), 6);
    char buf[6];
    tu_read_all(p.c, buf, 6, DL(1000));
    VCHECK(memcmp(buf, "abcdef", 6) == 0);
    /* An idle read gives the buffers back; the stream works on. */
    VCHECK_EQ(vega_stream_read(p.c, buf, sizeof(buf), 0), -ETIMEDOUT);
    VCHECK(!vega_tls_has_buffered(p.c));
    VCHECK_EQ(vega_stream_write(p.c, "again", 5, NULL, DL(1000)), 5);
    tu_read_all(p.c, buf, 5, DL(1000));
    VCHECK(memcmp(buf, "again", 5) == 0);
    VCHECK_EQ(vega_stream_shutdown(p.c, SHUT_WR, DL(1000)), 0);
    VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
    close(fd);
    free(data);
    free(got);
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(sendfile_writev_and_idle_buffers)
{
    tu_run(body_sendfile, 0);
}

/* Accessors refuse streams that are not TLS; creation checks its arguments. */
static void body_args(void)
{
    vega_stream *a, *b, *s;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    VCHECK(!vega_tls_is_tls(a));
    VCHECK_EQ(vega_tls_handshake(a, 0), -EINVAL);
    VCHECK(vega_tls_get_alpn(a) == NULL);
    VCHECK_EQ(vega_tls_peer_subject(a, NULL, 0), -EINVAL);
    vega_tls_ktls_info k;
    VCHECK_EQ(vega_tls_ktls_status(a, &k), -EINVAL);
    VCHECK_STR(vega_tls_last_error(a), "");
    vega_tls_config *scfg;
    VCHECK_EQ(vega_tls_config_new(&scfg, VEGA_TLS_SERVER), 0);
    /* A server needs a certificate. */
    VCHECK_EQ(vega_tls_stream_new(&s, a, scfg, NULL), VEGA_ERR_TLS_CONFIG);
    VCHECK_EQ(vega_tls_stream_new(&s, NULL, scfg, NULL), -EINVAL);
    vega_tls_config *bad;
    VCHECK_EQ(vega_tls_config_new(&bad, (vega_tls_role)7), -EINVAL);
    vega_tls_opts o;
    vega_tls_opts_init(&o);
    o.server_name = "";
    vega_tls_config *ccfg = tu_client_cfg(NULL);
    VCHECK_EQ(vega_tls_stream_new(&s, a, ccfg, &o), -EINVAL);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    vega_stream_close(a, 0);
    vega_stream_close(b, 0);
}

VTEST(arguments_and_non_tls_streams)
{
    tu_run(body_args, 0);
}

/* API rules, ABI: vega_tls_ktls_info is versioned as options are. A layout this library does not
 * know is refused and the struct left as it was; the current one is filled to its end and not
 * past it. */
static void body_ktls_info_layouts(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 0);
    struct {
        vega_tls_ktls_info k;
        unsigned char canary[64];
    } a;
    memset(&a, 0xa5, sizeof a);
    VCHECK_EQ(vega_tls_ktls_status_versioned(p.c, &a.k, VEGA_TLS_KTLS_INFO_VERSION + 1), -EINVAL);
    VCHECK_EQ(vega_tls_ktls_status_versioned(p.c, &a.k, 0), -EINVAL);
    VCHECK_EQ(vega_tls_ktls_status_versioned(NULL, &a.k, 1), -EINVAL);
    VCHECK_EQ(vega_tls_ktls_status_versioned(p.c, NULL, 1), -EINVAL);
    for (size_t i = 0; i < sizeof a; i++)
        VCHECK_EQ(((unsigned char *)&a)[i], 0xa5);
    VCHECK_EQ(vega_tls_ktls_status(p.c, &a.k), 0);
    VCHECK(!a.k.tx && !a.k.rx && !a.k.rx_pending && a.k.reason[0] == '\0'); /* not asked for */
    for (size_t i = 0; i < sizeof a.canary; i++)
        VCHECK_EQ(a.canary[i], 0xa5);
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(ktls_info_layouts)
{
    tu_run(body_ktls_info_layouts, 0);
}

/* ---- the message callback (vega_tls_config_set_msg_callback) --------------------------------- */

struct msg_log {
    int hs_out[32], hs_in[32]; /* HandshakeTypes in the order they went */
    size_t nout, nin;
    size_t headers; /* record headers seen (5 bytes each) */
    size_t bad;     /* reports that broke the contract */
    bool ccs_out, alert_in;
};

static void on_msg(void *user, vega_tls_msg_dir dir, int version, int type, const void *buf,
                   size_t len)
{
    struct msg_log *l = user;
    const uint8_t *b = buf;
    if (type == VEGA_TLS_MSG_RECORD_HEADER) {
        l->headers++;
        if (len != 5 || (b[0] < 20 || b[0] > 23))
            l->bad++;
        return;
    }
    if (type == VEGA_TLS_MSG_INNER_TYPE)
        return;
    if (len == 0 || (version != 0x0304 && version != 0x0303))
        l->bad++;
    else if (type == 22 && dir == VEGA_TLS_MSG_OUT && l->nout < 32)
        l->hs_out[l->nout++] = b[0];
    else if (type == 22 && dir == VEGA_TLS_MSG_IN && l->nin < 32)
        l->hs_in[l->nin++] = b[0];
    else if (type == 20 && dir == VEGA_TLS_MSG_OUT)
        l->ccs_out = true;
    else if (type == 21 && dir == VEGA_TLS_MSG_IN && len == 2 && b[1] == 0)
        l->alert_in = true; /* close_notify */
}

static void body_msg_callback(void)
{
    struct tu_pem pem = tu_default_cert();
    vega_tls_config *scfg = tu_server_cfg(&pem), *ccfg = tu_client_cfg(pem.cert);
    struct msg_log log = {0};
    VCHECK_EQ(vega_tls_config_set_msg_callback(NULL, on_msg, &log), -EINVAL);
    VCHECK_EQ(vega_tls_config_set_msg_callback(ccfg, on_msg, &log), 0);
    struct tu_pair p = tu_pair_new(ccfg, scfg, "localhost", 443);
    tu_handshake_ok(&p);
    check_roundtrip(&p);
    VCHECK_EQ(log.bad, 0);
    VCHECK(log.headers >= 4);
    VCHECK(log.ccs_out); /* OpenSSL's middlebox compatibility (RFC 8446 §D.4) */
    /* TLS 1.3 (RFC 8446 §2): ClientHello out; ServerHello, EncryptedExtensions, Certificate,
     * CertificateVerify, Finished in; Finished out */
    VCHECK(log.nout >= 2);
    VCHECK_EQ(log.hs_out[0], 1);
    VCHECK_EQ(log.hs_out[1], 20);
    VCHECK(log.nin >= 5);
    static const int in[] = {2, 8, 11, 15, 20};
    for (size_t i = 0; i < 5; i++)
        VCHECK_EQ(log.hs_in[i], in[i]);
    vega_stream_close(p.s, DL(1000)); /* its close_notify reaches the client's next read */
    p.s = NULL;
    char b;
    VCHECK_EQ(vega_stream_read(p.c, &b, 1, DL(1000)), 0);
    VCHECK(log.alert_in);
    /* off again: a new stream reports nothing */
    VCHECK_EQ(vega_tls_config_set_msg_callback(ccfg, NULL, NULL), 0);
    struct msg_log before = log;
    struct tu_pair q = tu_pair_new(ccfg, scfg, "localhost", 443);
    tu_handshake_ok(&q);
    VCHECK_EQ(log.headers, before.headers);
    VCHECK_EQ(log.nout, before.nout);
    tu_pair_close(&q);
    tu_pair_close(&p);
    vega_tls_config_free(scfg);
    vega_tls_config_free(ccfg);
    tu_pem_free(&pem);
}

VTEST(msg_callback_reports_the_handshake_in_order)
{
    tu_run(body_msg_callback, 0);
}
