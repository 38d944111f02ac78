/* SPDX-License-Identifier: MIT */
/* What the tools do before and around their runtime: --driver's value, SIGINT and SIGTERM blocked
 * before any thread starts, and one runtime run to its end with its failures said. */
#include <signal.h>
#include <string.h>

#include "cli.h"

vega_driver_kind cli_driver_arg(const char *s)
{
    if (strcmp(s, "uring") == 0 || strcmp(s, "io_uring") == 0)
        return VEGA_DRIVER_URING;
    if (strcmp(s, "epoll") == 0)
        return VEGA_DRIVER_EPOLL;
    cli_usage_error("--driver: expected uring or epoll, got '%s'", s);
}

int cli_block_signals(sigset_t *stop, int extra)
{
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(stop);
    sigaddset(stop, SIGINT);
    sigaddset(stop, SIGTERM);
    sigset_t blocked = *stop;
    if (extra)
        sigaddset(&blocked, extra);
    int r = vega_signal_block(&blocked);
    if (r < 0) {
        cli_err_code("signals", r);
        return CLI_EXIT_NET;
    }
    return CLI_EXIT_OK;
}

int cli_rt_run(const vega_rt_opts *ro, vega_task_fn fn, void *arg)
{
    vega_rt *rt;
    int r = vega_rt_new(&rt, ro);
    if (r < 0) {
        cli_err("runtime", "%s%s", vega_strerror(r),
                ro->driver == VEGA_DRIVER_URING ? " (is io_uring allowed here? try --driver epoll)"
                                                : "");
        return CLI_EXIT_NET;
    }
    r = vega_rt_block_on(rt, fn, arg, NULL);
    if (r < 0)
        cli_err_code("runtime", r);
    vega_rt_free(rt);
    return r < 0 ? CLI_EXIT_NET : CLI_EXIT_OK;
}
