/* SPDX-License-Identifier: MIT */
/* SIGINT/SIGTERM: a task waits on the signalfd and cancels the task doing the work. */
#include <stdio.h>
#include <string.h>

#include "echo.h"

void echo_stop_init(struct echo_stop *st, const sigset_t *set)
{
    memset(st, 0, sizeof(*st));
    st->set = set;
    pthread_mutex_init(&st->mu, NULL);
}

void echo_stop_register(struct echo_stop *st, int slot, vega_task *t)
{
    pthread_mutex_lock(&st->mu);
    st->tasks[slot] = t;
    if (st->signo)
        vega_task_cancel(t);
    pthread_mutex_unlock(&st->mu);
}

void echo_stop_finished(struct echo_stop *st, int slot)
{
    pthread_mutex_lock(&st->mu);
    st->finished[slot] = true;
    pthread_mutex_unlock(&st->mu);
}

static void cancel_locked(struct echo_stop *st, int slot)
{
    if (st->tasks[slot] && !st->finished[slot])
        vega_task_cancel(st->tasks[slot]);
}

void echo_stop_cancel(struct echo_stop *st, int slot)
{
    pthread_mutex_lock(&st->mu);
    cancel_locked(st, slot);
    pthread_mutex_unlock(&st->mu);
}

void *echo_stop_main(void *arg)
{
    struct echo_stop *st = arg;
    int signo = 0;
    if (vega_signal_wait(st->set, &signo, VEGA_DEADLINE_NEVER) == 0) {
        cli_log(1, "SIG%s, stopping", sigabbrev_np(signo) ? sigabbrev_np(signo) : "?");
        pthread_mutex_lock(&st->mu);
        st->signo = signo;
        for (int i = 0; i < ECHO_STOP_MAX; i++)
            cancel_locked(st, i);
        pthread_mutex_unlock(&st->mu);
    }
    return NULL;
}

int echo_resolve(const struct echo_opts *o, vega_addr *out, size_t max, char *what, size_t whatcap)
{
    int r;
    if (o->unix_path) {
        snprintf(what, whatcap, "%s", o->unix_path);
        r = vega_addr_from_unix(out, o->unix_path);
        if (r < 0)
            cli_err_code(what, r);
        return r < 0 ? r : 1;
    }
    const char *host = o->host;
    if (!host)
        host = o->family == AF_INET6 ? "::1" : "127.0.0.1";
    if (strchr(host, ':') && host[0] != '[')
        snprintf(what, whatcap, "[%s]:%s", host, o->port);
    else
        snprintf(what, whatcap, "%s:%s", host, o->port);
    r = vega_addr_resolve(out, max, host, o->port, o->family, VEGA_DEADLINE_NEVER);
    if (r == VEGA_ERR_DNS_NOT_FOUND || r == VEGA_ERR_DNS_NO_ADDRESS)
        cli_err(what, "cannot resolve host name%s",
                o->family == AF_INET    ? " to an IPv4 address"
                : o->family == AF_INET6 ? " to an IPv6 address"
                                        : "");
    else if (r == -EAFNOSUPPORT)
        cli_err(what, "address is not %s", o->family == AF_INET ? "IPv4" : "IPv6");
    else if (r < 0)
        cli_err_code(what, r);
    return r;
}
