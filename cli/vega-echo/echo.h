/* SPDX-License-Identifier: MIT */
/* vega-echo: an echo server and client over TCP, Unix sockets and UDP (ncat's habits). */
#ifndef VEGA_ECHO_H
#define VEGA_ECHO_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vega/vega.h>

#include "cli.h"

struct echo_opts {
    bool listen;
    bool udp;
    bool quiet;
    int family;            /* AF_UNSPEC, or AF_INET / AF_INET6 for -4 / -6 */
    const char *unix_path; /* -U */
    const char *host;      /* NULL: 127.0.0.1 (::1 with -6) when listening */
    const char *port;
    uint64_t connect_ns; /* -w: connect timeout (client); 0 = none */
    uint64_t idle_ns;    /* -i, or -w for the server: idle timeout per connection; 0 = none */
    uint64_t max_conns;  /* -m: 0 = no limit */
    size_t bufsize;      /* --buffer */
    unsigned workers;    /* 0 = the default of the mode */
    vega_driver_kind driver;
    sigset_t stop_signals; /* SIGINT, SIGTERM */
    /* TLS (--tls) */
    bool tls;
    const char *cert, *key; /* --cert/--key: server certificate, or client certificate (mTLS) */
    const char *cacert;     /* --cacert: CAs to verify the server (client) or clients (server) */
    bool insecure;          /* client -k: no verification */
    bool verify_client;     /* server --verify-client: a client certificate is required */
    const char *alpn;       /* --alpn: comma-separated */
    const char *sni;        /* --sni */
    vega_tls_ktls_mode ktls;
    vega_tls_config *tlscfg; /* made by main before the server or client starts */
};

/* Both run as the runtime's main task; they return the process exit code. */
int echo_server_main(const struct echo_opts *o);
int echo_client_main(const struct echo_opts *o);

/*
 * Stop signals: a task waits on the signalfd and cancels the registered tasks. A task handle is
 * only valid until it is joined, so a registered task calls echo_stop_finished as its last
 * action, and cancels happen under the same lock only for tasks that have not finished.
 */
#define ECHO_STOP_MAX 3
struct echo_stop {
    const sigset_t *set;
    pthread_mutex_t mu;
    vega_task *tasks[ECHO_STOP_MAX];
    bool finished[ECHO_STOP_MAX];
    atomic_int signo; /* the signal that arrived, 0 if none */
};
void echo_stop_init(struct echo_stop *st, const sigset_t *set);
/* Registers t in slot (right after spawning it); cancels it at once if a stop signal already
 * arrived. */
void echo_stop_register(struct echo_stop *st, int slot, vega_task *t);
/* Called by the task in `slot` as the last thing it does. */
void echo_stop_finished(struct echo_stop *st, int slot);
/* Cancels the task in slot unless it finished. */
void echo_stop_cancel(struct echo_stop *st, int slot);
/* The signal-waiting task: arg is the struct echo_stop. */
void *echo_stop_main(void *arg);

/* TLS (tls.c): the configuration from the options (reports errors; returns 0 or an exit code);
 * the message for a code (the stream's own when it is a TLS failure); a -v line about a TLS
 * connection. */
int echo_tls_config(const struct echo_opts *o, vega_tls_config **out);
const char *echo_tls_strerror(vega_stream *tls, int err);
void echo_tls_describe(vega_stream *tls, const char *who, const struct echo_opts *o);

/* Resolves the address the options name into out[0..max) (TCP/UDP: host and port; Unix: the
 * path); what receives a printable name for messages. Returns the number of addresses, or a
 * negative code (already reported on stderr). */
int echo_resolve(const struct echo_opts *o, vega_addr *out, size_t max, char *what, size_t whatcap);

#endif
