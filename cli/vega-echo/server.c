/* SPDX-License-Identifier: MIT */
/* The echo server: TCP or Unix (one task per connection) and UDP (one datagram back per
 * datagram, any number of peers). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "echo.h"

/* How long accept backs off when the process is out of descriptors or memory. */
#define ACCEPT_BACKOFF_MS 100

struct server {
    const struct echo_opts *o;
    struct echo_stop *stop;
    vega_sock *sock;
    atomic_uint_fast64_t live;
    atomic_uint_fast64_t total;
};

struct conn {
    struct server *srv;
    vega_sock *sock;
    vega_stream *tls; /* --tls: over sock (borrowed), kept while the socket is parked */
    bool tls_ready;   /* its handshake completed */
    uint64_t echoed;
    char peer[VEGA_ADDR_STRLEN];
};

static vega_deadline idle_deadline(const struct echo_opts *o)
{
    return o->idle_ns ? vega_deadline_in_ns(o->idle_ns) : VEGA_DEADLINE_NEVER;
}

/* Reads on the handler's stack up to this size; a larger --buffer is allocated per wake-up. */
#define STACK_BUF (16 * 1024)

/* How long closing a TLS connection may take to say close_notify. */
#define TLS_CLOSE_MS 1000

static void conn_close(struct conn *c, const char *why, int err)
{
    char msg[400];
    snprintf(msg, sizeof(msg), "%s", why ? why : echo_tls_strerror(c->tls, err));
    if (c->tls) {
        /* close_notify, unless the runtime is stopping (then do not wait at all) */
        bool stopping = why && strcmp(why, "server stopping") == 0;
        vega_stream_close(c->tls, stopping ? 0 : vega_deadline_in_ms(TLS_CLOSE_MS));
    }
    vega_sock_close(c->sock);
    uint64_t left = atomic_fetch_sub(&c->srv->live, 1) - 1;
    cli_log(1, "%s: %s after %llu bytes echoed (%llu open)", c->peer, msg,
            (unsigned long long)c->echoed, (unsigned long long)left);
    free(c);
}

static void conn_ready(vega_sock *s, void *arg, int status);

/*
 * TLS: the connection keeps its TLS state (OpenSSL's, about 5 KiB, and no buffers) while the
 * socket is parked; the handshake runs in steps between parks. A read with deadline 0 that
 * finds nothing has processed every complete record, so waiting for the socket to become
 * readable again is enough; records queued for sending are flushed first.
 */
static void tls_park(struct conn *c, vega_sock *s, char *heap)
{
    const struct echo_opts *o = c->srv->o;
    int err = vega_tls_flush(c->tls, idle_deadline(o));
    if (err == 0)
        err = vega_sock_park(s, conn_ready, c, idle_deadline(o));
    free(heap);
    if (err == 0)
        return;
    conn_close(c,
               err == -ECANCELED   ? "server stopping"
               : err == -ETIMEDOUT ? "idle timeout"
                                   : NULL,
               err);
}

static void tls_conn_ready(struct conn *c, vega_sock *s)
{
    const struct echo_opts *o = c->srv->o;
    if (!c->tls_ready) {
        int r = vega_tls_handshake(c->tls, 0);
        if (r == -ETIMEDOUT) {
            tls_park(c, s, NULL);
            return;
        }
        if (r < 0) { /* the message says "TLS handshake failed: why" */
            conn_close(c, r == -ECANCELED ? "server stopping" : NULL, r);
            return;
        }
        c->tls_ready = true;
        echo_tls_describe(c->tls, c->peer, o);
    }
    char stackbuf[STACK_BUF];
    size_t cap = o->bufsize < STACK_BUF ? o->bufsize : STACK_BUF;
    char *buf = stackbuf, *heap = NULL;
    if (o->bufsize > STACK_BUF && (heap = malloc(o->bufsize)) != NULL) {
        buf = heap;
        cap = o->bufsize;
    }
    const char *why = "closed by the peer";
    int err = 0;
    for (;;) {
        vega_ssize n = vega_stream_read(c->tls, buf, cap, 0);
        if (n == -ETIMEDOUT) {
            tls_park(c, s, heap);
            return;
        }
        if (n == 0) {
            /* close_notify: everything was echoed; answer with ours. */
            vega_stream_shutdown(c->tls, SHUT_WR, idle_deadline(o));
            break;
        }
        if (n > 0)
            n = vega_stream_write(c->tls, buf, (size_t)n, NULL, idle_deadline(o));
        if (n < 0) {
            err = (int)n;
            why = n == -ETIMEDOUT ? "idle timeout" : n == -ECANCELED ? "server stopping" : NULL;
            break;
        }
        c->echoed += (uint64_t)n;
    }
    free(heap);
    conn_close(c, why, err);
}

/*
 * Runs in a fresh task whenever the connection has something to say: echoes everything that is
 * there, then parks the connection again with no task and no buffer (an idle connection costs
 * its socket and this small struct).
 */
static void conn_ready(vega_sock *s, void *arg, int status)
{
    struct conn *c = arg;
    const struct echo_opts *o = c->srv->o;
    if (status < 0) {
        conn_close(c, status == -ETIMEDOUT ? "idle timeout" : "server stopping", status);
        return;
    }
    if (c->tls) {
        tls_conn_ready(c, s);
        return;
    }
    char stackbuf[STACK_BUF];
    size_t cap = o->bufsize < STACK_BUF ? o->bufsize : STACK_BUF;
    char *buf = stackbuf;
    if (o->bufsize > STACK_BUF && (buf = malloc(o->bufsize)) != NULL)
        cap = o->bufsize;
    if (!buf)
        buf = stackbuf;
    const char *why = "closed by the peer";
    int err = 0;
    bool drained = false;
    for (;;) {
        /* A read that did not fill the buffer most likely drained the socket: park at once
         * rather than pay a read that says EAGAIN. Parking is level-triggered, so bytes that
         * did arrive meanwhile wake the connection straight away. */
        vega_ssize n = drained ? -ETIMEDOUT : vega_sock_read(s, buf, cap, 0);
        if (n == -ETIMEDOUT) {
            /* Nothing more for now: hand the connection to the runtime until it speaks. */
            err = vega_sock_park(s, conn_ready, c, idle_deadline(o));
            if (err == 0) {
                if (buf != stackbuf)
                    free(buf);
                return;
            }
            why = err == -ECANCELED ? "server stopping" : NULL;
            break;
        }
        if (n == 0) {
            /* The peer finished sending: finish our side too, everything was echoed. */
            vega_sock_shutdown(s, SHUT_WR);
            break;
        }
        if (n > 0) {
            drained = (size_t)n < cap;
            n = vega_sock_write(s, buf, (size_t)n, NULL, idle_deadline(o));
        }
        if (n < 0) {
            err = (int)n;
            why = n == -ETIMEDOUT ? "idle timeout" : n == -ECANCELED ? "server stopping" : NULL;
            break;
        }
        c->echoed += (uint64_t)n;
    }
    if (buf != stackbuf)
        free(buf);
    conn_close(c, why, err);
}

static void peer_name(const struct echo_opts *o, const vega_addr *peer, char *buf, size_t cap)
{
    if (vega_addr_format(peer, buf, cap) < 0 || strcmp(buf, "unix:") == 0) {
        static atomic_uint_fast64_t seq;
        snprintf(buf, cap, "%s#%llu", o->unix_path ? o->unix_path : "peer",
                 (unsigned long long)atomic_fetch_add(&seq, 1) + 1);
    }
}

/* Accepts until cancelled. Returns an exit code. */
static int accept_loop(struct server *srv)
{
    const struct echo_opts *o = srv->o;
    for (;;) {
        vega_sock *s;
        vega_addr peer;
        int r = vega_tcp_accept(srv->sock, &s, &peer, VEGA_DEADLINE_NEVER);
        if (r == -ECANCELED)
            return CLI_EXIT_OK;
        if (r == -EMFILE || r == -ENFILE || r == -ENOBUFS || r == -ENOMEM) {
            cli_err("accept", "%s (pausing %d ms)", vega_strerror(r), ACCEPT_BACKOFF_MS);
            if (vega_sleep_ms(ACCEPT_BACKOFF_MS) < 0)
                return CLI_EXIT_OK;
            continue;
        }
        if (r < 0) {
            cli_err_code("accept", r);
            return CLI_EXIT_NET;
        }
        char name[VEGA_ADDR_STRLEN];
        peer_name(o, &peer, name, sizeof(name));
        uint64_t live = atomic_load(&srv->live);
        if (o->max_conns && live >= o->max_conns) {
            cli_log(1, "%s: refused, %llu connections open (-m %llu)", name,
                    (unsigned long long)live, (unsigned long long)o->max_conns);
            vega_sock_abort(s); /* a reset tells the client at once, whatever it sent */
            continue;
        }
        struct conn *c = calloc(1, sizeof(*c));
        if (!c) {
            vega_sock_close(s);
            continue;
        }
        c->srv = srv;
        c->sock = s;
        memcpy(c->peer, name, sizeof(name));
        if (vega_addr_family(&peer) != AF_UNIX)
            vega_sock_set_nodelay(s, true);
        if (o->tlscfg) {
            r = vega_tls_stream_from_sock(&c->tls, s, VEGA_STREAM_BORROW, o->tlscfg, NULL);
            if (r < 0) {
                cli_err(name, "TLS: %s", vega_tls_strerror(r));
                vega_sock_close(s);
                free(c);
                continue;
            }
        }
        live = atomic_fetch_add(&srv->live, 1) + 1;
        atomic_fetch_add(&srv->total, 1);
        cli_log(1, "connection from %s (%llu open)", name, (unsigned long long)live);
        /* No task until the client sends something. */
        r = vega_sock_park(s, conn_ready, c, idle_deadline(o));
        if (r < 0) {
            atomic_fetch_sub(&srv->live, 1);
            if (r != -ECANCELED)
                cli_err("park", "%s; closing %s", vega_strerror(r), name);
            vega_stream_close(c->tls, 0);
            vega_sock_close(s);
            free(c);
            if (r == -ECANCELED)
                return CLI_EXIT_OK;
        }
    }
}

/* UDP: one task answers every peer. Returns an exit code. */
static int udp_loop(struct server *srv)
{
    const struct echo_opts *o = srv->o;
    char *buf = malloc(65536);
    if (!buf)
        return CLI_EXIT_NET;
    int code = CLI_EXIT_OK;
    for (;;) {
        vega_addr peer;
        vega_ssize n = vega_udp_recv_from(srv->sock, buf, 65536, &peer, VEGA_DEADLINE_NEVER);
        if (n == -ECANCELED)
            break;
        if (n == -ECONNREFUSED)
            continue; /* an ICMP error for an earlier reply */
        if (n < 0) {
            cli_err_code("recv", (int)n);
            code = CLI_EXIT_NET;
            break;
        }
        if (cli_verbose >= 2) {
            char name[VEGA_ADDR_STRLEN];
            peer_name(o, &peer, name, sizeof(name));
            cli_log(2, "%s: %zd bytes", name, n);
        }
        vega_ssize w = vega_udp_send_to(srv->sock, buf, (size_t)n, &peer, VEGA_DEADLINE_NEVER);
        if (w == -ECANCELED)
            break;
        if (w < 0 && cli_verbose >= 1) {
            char name[VEGA_ADDR_STRLEN];
            peer_name(o, &peer, name, sizeof(name));
            cli_log(1, "%s: send: %s", name, vega_strerror((int)w));
        }
    }
    free(buf);
    return code;
}

static void *serve_main(void *arg)
{
    struct server *srv = arg;
    int code = srv->o->udp ? udp_loop(srv) : accept_loop(srv);
    echo_stop_finished(srv->stop, 0);
    return (void *)(intptr_t)code;
}

static void print_listening(const struct echo_opts *o, const vega_addr *bound)
{
    char where[VEGA_ADDR_STRLEN], hint[VEGA_ADDR_STRLEN + 32];
    vega_rt *rt = vega_rt_current();
    vega_addr_format(bound, where, sizeof(where));
    if (o->unix_path) {
        snprintf(hint, sizeof(hint), "vega-echo -U %s", o->unix_path);
    } else {
        char ip[VEGA_ADDR_STRLEN];
        snprintf(ip, sizeof(ip), "%s", where);
        char *colon = strrchr(ip, ':');
        if (colon)
            *colon = '\0';
        const char *host = ip;
        if (ip[0] == '[') {
            host = ip + 1;
            ip[strlen(ip) - 1] = '\0';
        }
        if (strcmp(host, "0.0.0.0") == 0)
            host = "127.0.0.1";
        else if (strcmp(host, "::") == 0)
            host = "::1";
        snprintf(hint, sizeof(hint), "vega-echo %s%s%s %u", o->udp ? "-u " : "",
                 !o->tls   ? ""
                 : o->cert ? "--tls "
                           : "--tls -k ",
                 host, (unsigned)vega_addr_port(bound));
    }
    if (o->unix_path && o->tls)
        snprintf(hint, sizeof(hint), "vega-echo --tls%s -U %s", o->cert ? "" : " -k", o->unix_path);
    unsigned w = vega_rt_workers(rt);
    const char *tls = !o->tls ? "" : o->cert ? "TLS, " : "TLS with a self-signed certificate, ";
    fprintf(stderr, "vega-echo: listening on %s%s (%sdriver %s, %u worker%s); try: %s\n",
            o->udp ? "udp " : "", where, tls, vega_rt_driver_name(rt), w, w == 1 ? "" : "s", hint);
    fflush(stderr);
}

int echo_server_main(const struct echo_opts *o)
{
    /* Connection tasks may outlive this function until vega_rt_free cancels them: the
     * state they share is static, not on this task's stack. */
    static struct server srv;
    srv.o = o;
    vega_addr addr;
    char what[VEGA_ADDR_STRLEN + 16];
    if (echo_resolve(o, &addr, 1, what, sizeof(what)) < 0)
        return CLI_EXIT_NET;

    int r = o->udp ? vega_udp_bind(&srv.sock, &addr, 0)
                   : vega_tcp_listen(&srv.sock, &addr, 0, VEGA_LISTEN_UNLINK_STALE);
    if (r < 0) {
        cli_err(what, "%s: %s", o->udp ? "bind" : "listen", vega_strerror(r));
        return CLI_EXIT_NET;
    }
    vega_addr bound;
    if (vega_sock_local_addr(srv.sock, &bound) < 0)
        bound = addr;
    if (!o->quiet)
        print_listening(o, &bound);

    struct echo_stop st;
    echo_stop_init(&st, &o->stop_signals);
    srv.stop = &st;
    vega_task *worker, *stopper;
    r = vega_task_spawn(&stopper, echo_stop_main, &st);
    if (r < 0) {
        cli_err_code("spawn", r);
        vega_sock_close(srv.sock);
        return CLI_EXIT_NET;
    }
    void *res = (void *)(intptr_t)CLI_EXIT_NET;
    r = vega_task_spawn(&worker, serve_main, &srv);
    if (r < 0) {
        cli_err_code("spawn", r);
    } else {
        echo_stop_register(&st, 0, worker);
        r = vega_task_join(worker, &res, VEGA_DEADLINE_NEVER);
    }
    vega_task_cancel(stopper);
    vega_task_join(stopper, NULL, VEGA_DEADLINE_NEVER);
    if (r < 0) {
        /* Only if this task itself were cancelled; the worker may still use the socket. */
        if (r != -ENOMEM)
            cli_err_code("join", r);
        return CLI_EXIT_NET;
    }
    /* Connections still open are cancelled by vega_rt_free once this returns. */
    vega_sock_close(srv.sock);
    cli_log(1, "stopped after %llu connections", (unsigned long long)atomic_load(&srv.total));
    return (int)(intptr_t)res;
}
