/* SPDX-License-Identifier: MIT */
/* The echo client: stdin to the server, what comes back to stdout. TCP and Unix use two tasks
 * (a writer from stdin, a reader to stdout); UDP goes datagram by datagram, in lockstep. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "echo.h"

/* UDP: the largest datagram the client sends, and how long it waits for each echo when no -w
 * or -i is given. */
#define UDP_CHUNK           16384
#define UDP_DEFAULT_WAIT_MS 2000

#define MAX_ADDRS 8

/* echo_stop slots */
enum {
    SLOT_SESSION,
    SLOT_READER,
    SLOT_WRITER
};

struct client {
    const struct echo_opts *o;
    struct echo_stop *stop;
    vega_sock *sock;
    vega_stream *tls; /* --tls: over sock (borrowed) */
    cli_stdio in, out;
    char what[VEGA_ADDR_STRLEN + 16];
    atomic_uint_fast64_t sent, recvd;
    atomic_bool wdone; /* the writer sent everything and half-closed */
    /* results, each written by its own task before it returns */
    int werr;          /* writer: 0 or a negative code */
    const char *wwhat; /* "stdin" or "write" */
    int rerr;          /* reader: 0 or a negative code */
    const char *rwhat; /* "read" or "stdout" */
    bool peer_closed;
};

static vega_deadline idle_deadline(const struct echo_opts *o)
{
    return o->idle_ns ? vega_deadline_in_ns(o->idle_ns) : VEGA_DEADLINE_NEVER;
}

/* The connection's I/O: TLS when there is a TLS stream, else the socket. */
static vega_ssize conn_read(struct client *c, void *buf, size_t n, vega_deadline dl)
{
    return c->tls ? vega_stream_read(c->tls, buf, n, dl) : vega_sock_read(c->sock, buf, n, dl);
}

static vega_ssize conn_write(struct client *c, const void *buf, size_t n, size_t *done,
                             vega_deadline dl)
{
    return c->tls ? vega_stream_write(c->tls, buf, n, done, dl)
                  : vega_sock_write(c->sock, buf, n, done, dl);
}

static int conn_shutdown_wr(struct client *c, vega_deadline dl)
{
    /* TLS: close_notify, then the socket's FIN */
    if (c->tls)
        return vega_stream_shutdown(c->tls, SHUT_WR, dl);
    return vega_sock_shutdown(c->sock, SHUT_WR);
}

static bool all_back(struct client *c)
{
    return atomic_load(&c->wdone) && atomic_load(&c->recvd) >= atomic_load(&c->sent);
}

static void *writer_main(void *arg)
{
    struct client *c = arg;
    const struct echo_opts *o = c->o;
    char *buf = malloc(o->bufsize);
    if (!buf) {
        c->werr = -ENOMEM;
        c->wwhat = "writer";
        echo_stop_finished(c->stop, SLOT_WRITER);
        return NULL;
    }
    for (;;) {
        vega_ssize n = cli_stdio_read(&c->in, buf, o->bufsize, VEGA_DEADLINE_NEVER);
        if (n == 0)
            break;
        if (n < 0) {
            c->werr = (int)n;
            c->wwhat = "stdin";
            goto out;
        }
        size_t done = 0;
        vega_ssize w = conn_write(c, buf, (size_t)n, &done, idle_deadline(o));
        atomic_fetch_add(&c->sent, done);
        if (w < 0) {
            c->werr = (int)w;
            c->wwhat = "write";
            goto out;
        }
    }
    int r = conn_shutdown_wr(c, idle_deadline(o));
    if (r < 0 && r != -ENOTCONN) {
        c->werr = r;
        c->wwhat = "shutdown";
        goto out;
    }
    atomic_store(&c->wdone, true);
    /* If the last echo already arrived, the reader may be waiting for bytes that will never
     * come (a server that keeps the connection open): wake it. */
    if (all_back(c))
        echo_stop_cancel(c->stop, SLOT_READER);
out:
    free(buf);
    echo_stop_finished(c->stop, SLOT_WRITER);
    return NULL;
}

static void *reader_main(void *arg)
{
    struct client *c = arg;
    const struct echo_opts *o = c->o;
    char *buf = malloc(o->bufsize);
    if (!buf) {
        c->rerr = -ENOMEM;
        c->rwhat = "reader";
        echo_stop_finished(c->stop, SLOT_READER);
        return NULL;
    }
    while (!all_back(c)) {
        vega_ssize n = conn_read(c, buf, o->bufsize, idle_deadline(o));
        if (n == 0) {
            c->peer_closed = true;
            break;
        }
        if (n < 0) {
            if (n == -ECANCELED && all_back(c))
                break; /* woken by the writer: done */
            c->rerr = (int)n;
            c->rwhat = "read";
            break;
        }
        vega_ssize w = cli_stdio_write(&c->out, buf, (size_t)n, VEGA_DEADLINE_NEVER);
        if (w < 0) {
            c->rerr = (int)w;
            c->rwhat = "stdout";
            break;
        }
        atomic_fetch_add(&c->recvd, (uint64_t)n);
    }
    free(buf);
    echo_stop_finished(c->stop, SLOT_READER);
    return NULL;
}

/* Connects to the first address that answers. Returns 0 or an exit code. */
static int connect_any(struct client *c)
{
    const struct echo_opts *o = c->o;
    vega_addr addrs[MAX_ADDRS];
    int n = echo_resolve(o, addrs, MAX_ADDRS, c->what, sizeof(c->what));
    if (n < 0)
        return CLI_EXIT_NET;
    int r = -ECONNREFUSED;
    vega_deadline dl = o->connect_ns ? vega_deadline_in_ns(o->connect_ns) : VEGA_DEADLINE_NEVER;
    for (int i = 0; i < n; i++) {
        if (o->udp)
            r = vega_udp_connect(&c->sock, &addrs[i]);
        else
            r = vega_tcp_connect(&c->sock, &addrs[i], dl);
        char a[VEGA_ADDR_STRLEN];
        vega_addr_format(&addrs[i], a, sizeof(a));
        if (r == 0) {
            cli_log(1, "connected to %s", a);
            return 0;
        }
        if (r == -ECANCELED)
            return CLI_EXIT_NET;
        if (n > 1)
            cli_log(1, "%s: %s", a, vega_strerror(r));
        if (r == -ETIMEDOUT)
            break;
    }
    if (r == -ETIMEDOUT)
        cli_err(c->what, "connect: timed out");
    else
        cli_err(c->what, "connect: %s", vega_strerror(r));
    return CLI_EXIT_NET;
}

static int stream_session(struct client *c)
{
    vega_task *reader, *writer;
    int r = vega_task_spawn(&reader, reader_main, c);
    if (r < 0) {
        cli_err_code("spawn", r);
        return CLI_EXIT_NET;
    }
    echo_stop_register(c->stop, SLOT_READER, reader);
    r = vega_task_spawn(&writer, writer_main, c);
    if (r < 0) {
        cli_err_code("spawn", r);
        echo_stop_cancel(c->stop, SLOT_READER);
        vega_task_join(reader, NULL, VEGA_DEADLINE_NEVER);
        return CLI_EXIT_NET;
    }
    echo_stop_register(c->stop, SLOT_WRITER, writer);
    vega_task_join(reader, NULL, VEGA_DEADLINE_NEVER);
    /* The reader is done: the server closed, the echo is complete, or something failed.
     * A writer still running (waiting on stdin) has nothing left to do. */
    echo_stop_cancel(c->stop, SLOT_WRITER);
    vega_task_join(writer, NULL, VEGA_DEADLINE_NEVER);
    if (c->stop->signo)
        return CLI_EXIT_NET; /* the caller reports the signal */

    uint64_t sent = atomic_load(&c->sent), recvd = atomic_load(&c->recvd);
    cli_log(1, "%llu bytes sent, %llu received", (unsigned long long)sent,
            (unsigned long long)recvd);
    if (c->rerr < 0) {
        if (c->rerr == -ETIMEDOUT)
            cli_err(c->what, "idle timeout: nothing received for %.3g s",
                    (double)c->o->idle_ns / 1e9);
        else
            cli_err(strcmp(c->rwhat, "read") == 0 ? c->what : c->rwhat, "%s",
                    echo_tls_strerror(c->tls, c->rerr));
        return CLI_EXIT_NET;
    }
    /* A writer stopped by the reader's end (ECANCELED), or one that hit the closed connection
     * after the server closed it, is not an error of its own. A reset before anything came
     * back is one, though the reader saw an end of stream: the server refused the connection
     * (vega-echo -m resets it), and when the writer's send takes the socket's ECONNRESET the
     * reader's next receive finds only the end of stream. */
    bool after_close =
        c->peer_closed && (c->werr == -EPIPE || (c->werr == -ECONNRESET && recvd > 0));
    if (c->werr < 0 && c->werr != -ECANCELED && !after_close) {
        cli_err(strcmp(c->wwhat, "write") == 0 ? c->what : c->wwhat, "%s",
                echo_tls_strerror(c->tls, c->werr));
        return CLI_EXIT_NET;
    }
    if (recvd < sent) {
        cli_err(c->what, "the server closed the connection after echoing %llu of %llu bytes",
                (unsigned long long)recvd, (unsigned long long)sent);
        return CLI_EXIT_NET;
    }
    return CLI_EXIT_OK;
}

/* UDP in lockstep: one datagram out, wait until as many bytes came back. */
static int udp_session(struct client *c)
{
    const struct echo_opts *o = c->o;
    uint64_t wait_ns = o->idle_ns      ? o->idle_ns
                       : o->connect_ns ? o->connect_ns
                                       : UDP_DEFAULT_WAIT_MS * VEGA_NS_PER_MS;
    char *out = malloc(UDP_CHUNK), *in = malloc(65536);
    int code = CLI_EXIT_OK;
    if (!out || !in) {
        cli_err_code(NULL, -ENOMEM);
        code = CLI_EXIT_NET;
        goto done;
    }
    size_t chunk = o->bufsize < UDP_CHUNK ? o->bufsize : UDP_CHUNK;
    for (;;) {
        vega_ssize n = cli_stdio_read(&c->in, out, chunk, VEGA_DEADLINE_NEVER);
        if (n == 0)
            break;
        if (n < 0) {
            if (n != -ECANCELED)
                cli_err_code("stdin", (int)n);
            code = CLI_EXIT_NET;
            break;
        }
        vega_ssize w = vega_udp_send_to(c->sock, out, (size_t)n, NULL, VEGA_DEADLINE_NEVER);
        if (w < 0) {
            if (w != -ECANCELED)
                cli_err(c->what, "send: %s", vega_strerror((int)w));
            code = CLI_EXIT_NET;
            break;
        }
        atomic_fetch_add(&c->sent, (uint64_t)n);
        vega_deadline dl = vega_deadline_in_ns(wait_ns);
        for (vega_ssize got = 0; got < n;) {
            vega_ssize r = vega_sock_read(c->sock, in, 65536, dl);
            if (r < 0) {
                if (r == -ETIMEDOUT)
                    cli_err(c->what, "no echo for a %zd-byte datagram within %.3g s", n,
                            (double)wait_ns / 1e9);
                else if (r != -ECANCELED)
                    cli_err(c->what, "recv: %s", vega_strerror((int)r));
                code = CLI_EXIT_NET;
                goto done;
            }
            r = cli_stdio_write(&c->out, in, (size_t)r, VEGA_DEADLINE_NEVER);
            if (r < 0) {
                if (r != -ECANCELED)
                    cli_err_code("stdout", (int)r);
                code = CLI_EXIT_NET;
                goto done;
            }
            got += r;
            atomic_fetch_add(&c->recvd, (uint64_t)r);
        }
    }
done:
    free(out);
    free(in);
    return code;
}

struct session_arg {
    struct client *c;
    int code;
};

/* TLS over the connected socket: the handshake, bounded by -w. Returns 0 or an exit code. */
static int tls_start(struct client *c)
{
    const struct echo_opts *o = c->o;
    vega_tls_opts to;
    vega_tls_opts_init(&to);
    to.server_name = o->sni ? o->sni : o->unix_path ? NULL : o->host;
    to.port = o->port ? (uint16_t)atoi(o->port) : 0;
    int r = vega_tls_stream_from_sock(&c->tls, c->sock, VEGA_STREAM_BORROW, o->tlscfg, &to);
    if (r < 0) {
        cli_err(c->what, "TLS: %s", vega_tls_strerror(r));
        return CLI_EXIT_NET;
    }
    vega_deadline dl = o->connect_ns ? vega_deadline_in_ns(o->connect_ns) : VEGA_DEADLINE_NEVER;
    r = vega_tls_handshake(c->tls, dl);
    if (r == -ECANCELED)
        return CLI_EXIT_NET;
    if (r < 0) {
        cli_err(c->what, "%s",
                r == -ETIMEDOUT ? "TLS handshake: timed out" : echo_tls_strerror(c->tls, r));
        return CLI_EXIT_NET;
    }
    echo_tls_describe(c->tls, c->what, o);
    return 0;
}

/* Connects, and for UDP runs the whole exchange: in a task a stop signal can cancel. */
static void *session_main(void *arg)
{
    struct session_arg *s = arg;
    s->code = connect_any(s->c);
    if (s->code == 0 && s->c->o->tls)
        s->code = tls_start(s->c);
    if (s->code == 0 && s->c->o->udp)
        s->code = udp_session(s->c);
    echo_stop_finished(s->c->stop, SLOT_SESSION);
    return NULL;
}

int echo_client_main(const struct echo_opts *o)
{
    struct client c;
    struct echo_stop st;
    memset(&c, 0, sizeof(c));
    c.o = o;
    c.stop = &st;
    echo_stop_init(&st, &o->stop_signals);
    int r = cli_stdio_init(&c.in, STDIN_FILENO);
    if (r < 0) {
        cli_err_code("stdin", r);
        return CLI_EXIT_NET;
    }
    r = cli_stdio_init(&c.out, STDOUT_FILENO);
    if (r < 0) {
        cli_stdio_fini(&c.in);
        cli_err_code("stdout", r);
        return CLI_EXIT_NET;
    }

    int code = CLI_EXIT_NET;
    vega_task *session, *stopper;
    r = vega_task_spawn(&stopper, echo_stop_main, &st);
    if (r < 0) {
        cli_err_code("spawn", r);
        goto out;
    }
    struct session_arg s = {.c = &c, .code = CLI_EXIT_NET};
    r = vega_task_spawn(&session, session_main, &s);
    if (r < 0) {
        cli_err_code("spawn", r);
    } else {
        echo_stop_register(&st, SLOT_SESSION, session);
        vega_task_join(session, NULL, VEGA_DEADLINE_NEVER);
        code = s.code;
        if (code == 0 && !o->udp && !st.signo)
            code = stream_session(&c);
    }
    vega_task_cancel(stopper);
    vega_task_join(stopper, NULL, VEGA_DEADLINE_NEVER);
    if (st.signo)
        code = 128 + st.signo;
out:
    if (c.tls)
        vega_stream_close(c.tls, st.signo ? 0 : vega_deadline_in_ms(1000));
    vega_sock_close(c.sock);
    cli_stdio_fini(&c.in);
    cli_stdio_fini(&c.out);
    return code;
}
